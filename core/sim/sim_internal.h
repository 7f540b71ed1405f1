/* Internal declarations of core/sim shared between its files (not for other modules). */
#ifndef THPEMU_SIM_INTERNAL_H
#define THPEMU_SIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <ucontext.h>

#include "addrspace/as.h"
#include "io/devmodel.h"
#include "io/iosched.h"
#include "io/rqlist.h"
#include "io/wbmodel.h"
#include "io/wbqueue.h"
#include "io/wbthrottle.h"
#include "mm/mm.h"
#include "policy/plugin.h"
#include "obs/coverage.h"
#include "obs/faults.h"
#include "obs/mthp.h"
#include "obs/stall.h"
#include "sim/sim.h"
#include "util/rng.h"

/* ---- fiber.c: stacks and context switches ------------------------------------------------ */

struct fiber {
#if defined(__x86_64__)
	void *sp; /* saved stack pointer while switched away */
#else
	ucontext_t ctx;
#endif
	void *stack;	    /* usable stack (above the guard page); NULL for the host thread */
	size_t stack_size;  /* usable bytes */
	size_t map_size;    /* bytes mapped including the guard page */
	const void *bottom; /* stack bounds announced to ASan; for the host learnt on first use */
	size_t size;
	struct fiber *from;    /* the fiber that last switched to this one */
	void *asan_fake;       /* ASan fake-stack handle saved while switched away */
	void *tsan;	       /* TSan fiber context */
	void (*entry)(void *); /* first function run on the stack; must end with fiber_exit_to */
	void *entry_arg;
};

/* Describe the calling thread's own stack (the scheduler's). */
int fiber_host_init(struct fiber *host);
/* Map a stack of stack_size bytes plus a guard page and prepare entry(arg) to run on it. */
int fiber_create(struct fiber *f, size_t stack_size, void (*entry)(void *), void *arg);
/* Unmap the stack of a fiber that is not running (finished or abandoned). */
void fiber_destroy(struct fiber *f);
/* Save the running context in from and continue in to; returns when someone switches back. */
void fiber_switch(struct fiber *from, struct fiber *to);
/* Leave a finished fiber for good. */
__attribute__((noreturn)) void fiber_exit_to(struct fiber *from, struct fiber *to);
void fiber_finish_switch(struct fiber *to);

/* ---- the simulated machine (world.c, env.c, device.c, proc.c, writer.c, reader.c) ---------- */

struct sim_world;

struct sim_wait_stat {
	uint64_t count, total_ns, max_ns;
	uint64_t over; /* single waits at least the stall threshold long (what watch-dstate, the
			* 2011 monitor, counted as events: one per wait_on_page_bit) */
};

/* What an actor is to the hooks: mm passes it back as the `call` argument. */
struct sim_task {
	struct sim_world *w;
	struct sim_actor *a;		  /* NULL until spawned */
	char comm[16];			  /* process name in stall reports ("usemem", "postmark") */
	int in_compaction;		  /* between mm_compaction_begin and _end tracepoints */
	uint64_t fault_t0;		  /* start of the fault in service, 0 if none */
	struct sim_wait_stat fault_wb[2]; /* waits of the fault in service: compaction, reclaim */
	struct sim_task *next;		  /* the world's list of tasks */
	bool writing; /* in a write() to the stick: 3.1's may_write_to_queue lets a task write to
		       * its own congested device (current->backing_dev_info) */
	struct rql_ioc ioc; /* its io_context's request batching (3.x block layer) */
};

/* A process with one anonymous mapping, faulted extent by extent (usemem, thpcompact): one
 * core/addrspace region at PROC_MAP_BASE. */
#define PROC_MAP_BASE 0x7f0000000000ULL
struct sim_proc {
	uint32_t pid; /* owner cookie = pid << 32 | page index; also its khugepaged as_id */
	uint32_t npages;
	struct as_region as; /* page and extent states, frames */
	unsigned migrating;  /* migrate_anon calls in flight */
	unsigned scanning;   /* khugepaged visits (khugepaged_scan, split_underused) in flight */
	bool exiting;	     /* exit began: khugepaged leaves it alone (hpage_collapse_test_exit) */
	bool exited;	     /* pages freed; the struct lives until both drop to 0 */
	enum mm_vma_advice advice;
	uint8_t *written;	      /* per page, a bit: written since its frame was zeroed */
	struct sim_waitq collapse_wq; /* the program's touches waiting for a collapse to end */
};

/* A page-cache file written or read by an actor. */
struct sim_file {
	uint64_t dev_off; /* where its bytes live on the device (log-structured) */
	uint32_t npages;
	bool live;
	bool bdev;	    /* a block device read raw: its page cache is GFP_USER (unmovable) */
	bool on_dirty_list; /* queued for writeback (the kernel's b_dirty) */
	uint32_t ndirty;    /* pages dirtied and not yet submitted for writeback */
	uint32_t wb_index;  /* where writeback of this file goes on (writeback_index) */
	uint32_t *dpfn;	    /* frame of each such page, MM_NO_PFN otherwise; NULL if none.
			     * Dirty page-cache pages never migrate (no ->migratepage: only
			     * writeout cleans them), so these frames are stable. */
};

/* A device request and the pages it carries. */
enum sim_io_kind { SIO_WRITEBACK, SIO_WRITEOUT, SIO_READ };
#define SIM_IO_MAX_PAGES 64
struct sim_io {
	struct devm_req req;
	enum sim_io_kind kind;
	unsigned npages;
	uint32_t pfn[SIM_IO_MAX_PAGES];
	bool done;
	unsigned nwb; /* flusher requests merged into this one */
	bool has_rq;  /* holds one of the request list's requests (3.x), freed at completion */
	enum rql_dir dir;
	struct ios_rq srq;		/* in the I/O scheduler (core/io/iosched) */
	struct sim_io *q_prev, *q_next; /* queued requests, in arrival order (merge lookups) */
	struct sim_waitq done_wq;	/* a reader waiting for SIO_READ */
	struct sim_io *next_free;
	struct sim_io *next_all; /* the world's list of all requests */
};

/* An actor waiting for a frame's writeback to end (the kernel's wait_on_page_writeback). */
struct sim_wb_waiter {
	uint32_t pfn;
	struct sim_waitq wq;
	struct sim_wb_waiter *next;
};

/* What the slow path did, over all faults: each step with its results (compaction: enum
 * mm_compact_result; other steps: 0 failure, 1 success), and which step produced each huge
 * page (the last step of a huge fault's record). */
#define SIM_STEP_RESULTS 16
struct sim_steps {
	uint64_t count[MM_STEP_NR];
	uint64_t result[MM_STEP_NR][SIM_STEP_RESULTS];
	uint64_t huge_from[MM_STEP_NR];
	/* direct compactions run before direct reclaim (first) and after it (second) */
	uint64_t first_runs, first_success, second_runs, second_success;
};

#define SIM_FLUSHER_QUEUE (4 * SIM_IO_MAX_PAGES)
struct sim_flusher {
	struct wbm_params p;
	struct wbm_age age; /* when pages were dirtied (kupdate expiry) */
	struct wbm_bw bw;   /* device write bandwidth estimate */
	/* pages under writeback waiting for a request, requests at the device (nr_requests,
	 * max_sectors_kb): core/io/wbqueue, as the live flusher's */
	struct wbq q;
	uint32_t q_pfn[SIM_FLUSHER_QUEUE];
	uint64_t q_owner[SIM_FLUSHER_QUEUE];
	uint64_t pages_submitted, pages_done, reqs, errors;
	uint64_t bytes_done;	 /* written by completed writeback and writeout requests */
	uint64_t writeout_pages; /* single pages written out by sync migration */
	/* actors in a throttle nap (congestion_wait): woken when a writeback request completes
	 * and the queue is not congested (mm/backing-dev.c clear_bdi_congested, called from
	 * block/blk-core.c __freed_request below the congestion-off threshold) */
	struct sim_waitq congest_wq;
	uint64_t throttles, throttle_ns; /* naps taken, their summed length */
	/* 3.x: the flusher thread asleep in get_request_wait, its pages left in q */
	struct rql_ioc ioc;
	struct rql_waiter rqw;
	bool rq_sleeping, rq_retry; /* asleep; woken (its next try does not merge) */
	uint64_t rq_t0;
	struct sim_wait_stat rq_wait; /* its get_request_wait sleeps */
};

struct sim_writer_stats {
	uint64_t pages, files_created, files_deleted;
	struct wbt_stats throttle; /* balance_dirty_pages() pauses */
	uint64_t nomem, eagain;
};

struct sim_reader_stats {
	uint64_t reads, misses, nomem, eagain, read_ns;
};

/* One iteration of a scenario that measures whole iterations (writeback-cp: alloc's run). */
struct sim_iter {
	uint64_t start_ns, elapsed_ns;
	uint64_t thp_fault_alloc, thp_fault_fallback; /* vmstat deltas over the iteration */
};
#define SIM_MAX_ITERS 64

#define SIM_MAX_PROCS	 256
#define SIM_FILE_ID_BASE (1u << 20) /* our file ids, clear of mm_fragment's recipe files */

struct sim_world {
	const struct sim_config *cfg;
	struct sim_engine *e;
	struct mm *mm;
	struct mm_env env;
	struct mm_config mmcfg;
	struct policy_plugin plugin; /* policy plugin of mmcfg.policy.plugin, loaded or not */
	struct devm *dev;
	struct rng rng;	 /* the scenario's randomness */
	uint64_t end_ns; /* virtual end of the run */
	bool finished;	 /* the scenario ended early (all work done) */
	/* observation */
	struct obs_faults faults;
	uint64_t extents, extents_huge; /* first touches of THP-eligible extents, served huge */
	struct sim_zero_stats zero;	/* zero pages mapped and written (proc.c, replay.c) */
	struct sim_steps steps;		/* slow-path steps of every fault */
	struct sim_task *tasks;		/* every spawned task */
	struct sim_wait_stat wb_compact, wb_reclaim; /* writeback waits by path */
	struct sim_wait_stat fault_wb[2]; /* waits inside completed faults: compaction, reclaim */
	struct obs_stalls *stalls; /* cause-only stall events (obs/stall.h, modelled stacks) */
	uint64_t nstalls, stall_max_ns;
	struct obs_stalls *waits;	 /* per-wait events (mm's ops->waited, modelled stacks) */
	uint64_t stats_done[MM_STAT_NR]; /* counters of pools already destroyed (iterations) */
	struct obs_mthp mthp_done;	 /* per-size mTHP statistics of those pools */
	uint64_t iterations;
	struct sim_iter iter[SIM_MAX_ITERS]; /* per-iteration results, if the scenario keeps them */
	unsigned niter;
	struct obs_coverage cov; /* AnonHugePages over virtual time (world_start_coverage) */
	/* anonymous memory */
	struct sim_proc *procs[SIM_MAX_PROCS];
	uint32_t next_pid;
	/* page cache */
	struct sim_file *files; /* indexed by file id - SIM_FILE_ID_BASE */
	uint32_t nfiles, files_cap;
	uint64_t dev_alloc;    /* next free device offset (log-structured) */
	uint32_t *dirty_files; /* FIFO ring of file ids in dirtied_when order (b_dirty) */
	uint32_t df_head, df_len, df_cap;
	/* block layer: the I/O scheduler in front of the device model */
	struct sim_io *elv_head, *elv_tail; /* queued requests, arrival order */
	unsigned elv_len;
	struct ios sched;	/* the I/O scheduler: the policy's iosched (core/io/iosched) */
	unsigned dev_inflight;	/* requests handed to the device model */
	unsigned elv_max_pages; /* merge limit (max_sectors) */
	struct sim_elv_stats {
		uint64_t requests, merged, dispatched, expired, queue_max;
		uint64_t slices, preempted; /* CFQ: slices given, async slices cut by sync */
		enum ios_kind kind;
	} elv;
	/* 3.x request allocation (core/io/rqlist, block/blk-core.c get_request_wait): every
	 * request is allocated from it before it joins the scheduler, and a writer that gets none
	 * sleeps; off (rq_model false) for the modern era, whose blk-mq tags are not modelled */
	bool rq_model;
	struct rql rl;
	struct sim_wait_stat rq_wait; /* actors' get_request_wait sleeps (writeout, pageout) */
	/* device */
	struct sim_io *io_free;
	uint64_t dev_event_at; /* earliest pending completion event, UINT64_MAX if none */
	struct sim_wb_waiter *wb_waiters;
	struct sim_flusher fl;
	struct sim_writer_stats writer;
	struct sim_reader_stats reader;
	void *writer_state;	 /* writer.c's working set */
	uint64_t writer_stop_ns; /* the writer's last transaction starts before (0: never) */
	void *reader_state;	 /* reader.c's actors */
	void *scen_state;	 /* the scenario's own (freed at the end) */
	struct sim_io *io_all;	 /* every request ever allocated, for freeing */
	struct sim_replay *replay_state; /* scenario "replay" (replay.c) */
	/* background (kswapd, kcompactd) */
	struct sim_task bg;
	struct sim_waitq bg_wq;
	bool bg_running;
	/* khugepaged (khugepaged.c) */
	struct sim_task khd;
	struct sim_waitq khd_wq;
	bool khd_running;
	bool khd_idle; /* parked until a registration (mm_khugepaged said UINT64_MAX) */
};

/* What a finished run keeps for its report (run.c fills it, report.c writes it). */
struct sim_result {
	struct sim_config cfg;
	char policy[512];     /* canonical spec (mm_policy_format) */
	uint64_t pool_bytes;  /* what the pool really has (whole pageblocks) */
	uint64_t duration_ns; /* virtual time simulated */
	uint64_t iterations;
	struct sim_iter iter[SIM_MAX_ITERS];
	unsigned niter;
	bool finished;
	struct obs_faults faults;
	uint64_t extents, extents_huge;
	struct sim_zero_stats zero;
	struct sim_steps steps;
	uint64_t unfinished, unfinished_max_ns; /* faults still in service at the end */
	struct obs_stalls *stalls;
	uint64_t nstalls, stall_max_ns;
	struct obs_stalls *waits; /* per-wait events */
	uint64_t vmstat[MM_STAT_NR];
	struct obs_mthp mthp; /* per-size mTHP settings and statistics (obs/mthp.h) */
	struct sim_wait_stat wb_compact, wb_reclaim;
	struct sim_wait_stat fault_wb[2]; /* waits inside completed faults: compaction, reclaim */
	struct devm_stats dev;
	struct sim_elv_stats elv;
	bool rq_model;		      /* the 3.x request list was used */
	struct rql_stats rq;	      /* its counts */
	struct sim_wait_stat rq_wait; /* actors' get_request_wait sleeps */
	struct sim_flusher fl;
	struct sim_writer_stats writer;
	struct sim_reader_stats reader;
	struct mm_counts end;
	struct obs_coverage cov;
	struct sim_engine_stats eng;
	bool has_replay;
	struct sim_replay_stats replay;
	struct sim_replay_info replay_info;
	char replay_path[512];
};

/* run.c: build the machine for a configuration (no actors yet), and tear it down */
int world_init(struct sim_world *w, const struct sim_config *c, char *err, size_t errlen);
void world_fini(struct sim_world *w);

/* world.c */
int world_mm_create(struct sim_world *w, char *err, size_t errlen);
void world_mm_destroy(struct sim_world *w);
int world_spawn(struct sim_world *w, struct sim_task *t, const char *comm, uint64_t start,
		sim_actor_fn fn, void *arg);
void world_record_fault(struct sim_world *w, struct sim_task *t, const struct mm_fault_res *res,
			uint64_t latency_ns, uint32_t pid, uint64_t addr);
int world_apply_recipe(struct sim_world *w, const char *recipe, char *err, size_t errlen);
void world_wake_background(struct sim_world *w);
void world_start_background(struct sim_world *w);
/* Sample coverage (w->cov) on a virtual-time timer from now on; world_finish_coverage takes the
 * last sample at the end. */
int world_start_coverage(struct sim_world *w);
void world_finish_coverage(struct sim_world *w);

/* khugepaged.c: the khugepaged thread */
void world_start_khugepaged(struct sim_world *w);
/* A THP-eligible fault may have registered its process (khugepaged_enter): wake khugepaged
 * if it is parked for lack of work. */
void world_wake_khugepaged(struct sim_world *w);

/* env.c */
extern const struct mm_env_ops sim_env_ops;

/* device.c */
/* blk_queue_bio: merge a write into a queued one, or get a request and queue it. t is the
 * submitting actor: with the 3.x request list it sleeps in get_request_wait while none is free;
 * without an actor (the flusher, t NULL) the call returns -EAGAIN with nothing queued and the
 * flusher's waiter on the request list instead. merge false: a retry after that sleep (the
 * kernel does not try to merge again). */
int dev_submit(struct sim_world *w, struct sim_task *t, enum sim_io_kind kind, uint64_t off,
	       const uint32_t *pfns, unsigned npages, bool merge, struct sim_io **out);
void dev_io_release(struct sim_world *w, struct sim_io *io);
void dev_free_all(struct sim_world *w);
void wait_stat_add(struct sim_wait_stat *s, uint64_t ns, uint64_t threshold_ns);
int dev_wait_writeback(struct sim_world *w, struct sim_task *t, uint32_t pfn, uint64_t timeout);
/* The throttle hook (mm.h): park t until a writeback request completes with the queue not
 * congested, or the timeout; with iff_congested, return at once when it is not congested. */
int dev_throttle(struct sim_world *w, struct sim_task *t, uint64_t timeout, bool iff_congested);
uint64_t dev_offset_of(struct sim_world *w, uint64_t owner);

/* writer.c: the writer (postmark-like), the flusher and dirty throttling */
void flusher_init(struct sim_world *w, unsigned max_inflight, unsigned req_pages);
void flusher_kick(struct sim_world *w);
void flusher_start_kupdate(struct sim_world *w);
void flusher_io_done(struct sim_world *w, struct sim_io *io);
void balance_dirty_pages(struct sim_world *w, struct sim_task *t, uint64_t dirtied);
uint32_t file_new(struct sim_world *w, uint32_t npages);
void file_delete(struct sim_world *w, uint32_t id);
struct sim_file *file_get(struct sim_world *w, uint32_t id);
/* Sync migration wrote this page out itself: forget it for the flusher. */
void file_written_out(struct sim_world *w, uint64_t owner);
void files_free(struct sim_world *w);
int file_get_page(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t *pfn,
		  bool *created, uint64_t *eagain, uint64_t *nomem);
int file_write_page(struct sim_world *w, struct sim_task *t, uint32_t id, uint32_t index);
int writer_spawn(struct sim_world *w);
void writer_free(struct sim_world *w);

/* reader.c */
int file_read_page(struct sim_world *w, struct sim_task *t, uint32_t id, uint32_t index,
		   bool from_device);
int readers_spawn(struct sim_world *w, unsigned n, uint32_t first_id, uint32_t nfiles,
		  uint64_t start);
void readers_free(struct sim_world *w);

/* proc.c */
struct sim_proc *proc_create(struct sim_world *w, uint64_t bytes, enum mm_vma_advice advice);
struct sim_proc *proc_lookup(struct sim_world *w, uint32_t pid);
/* Fault page `page`: a first touch (huge_ok when its extent is still empty), or the first
 * write to a zero page it maps. A read (!write) with zero pages on may map one. */
void proc_fault(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t page,
		bool write);
/* Write every page of [first, first + n) pages in order, extent by extent, faulting first
 * touches and the first writes to zero pages, charging the program's writes. */
void proc_touch_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n);
/* Read every page of [first, first + n) in order (touch-4k each): a first touch is a read fault
 * (zero pages: sim_config.zero_page); pages already mapped, a zero page included, take none. */
void proc_read_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		     uint32_t n);
/* munmap of [first, first + n): split huge extents cut in part, free frames. */
void proc_unmap_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n);
void proc_exit(struct sim_world *w, struct sim_task *t, struct sim_proc *p);
int proc_migrate(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t from,
		 uint32_t to);
/* The khugepaged_scan hook for process pid (mm.h): walk its region with mm_khugepaged_scan_mm. */
int proc_khugepaged_scan(struct sim_world *w, struct sim_task *t, uint32_t pid, uint64_t *addr,
			 unsigned budget, bool *done);
/* The split_underused hook (mm.h) for the THP at head whose page 0 is extent_owner. */
int proc_split_underused(struct sim_world *w, struct sim_task *t, uint64_t extent_owner,
			 uint32_t head);
void proc_free_all(struct sim_world *w);

/* replay.c */
int replay_migrate(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t from,
		   uint32_t to);
void replay_collect(struct sim_world *w, struct sim_result *r);

/* Time helpers for actors. */
static inline uint64_t task_now(const struct sim_task *t)
{
	return sim_actor_now(t->a);
}

#endif
