/* Internals of core/io shared by its files: the engine, its requests, files and backends. */
#ifndef THPEMU_IO_INTERNAL_H
#define THPEMU_IO_INTERNAL_H

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "inprocess/guard.h"
#include "io/io.h"
#include "io/rqshare.h"
#include "io/wbqueue.h"
#include "util/sys.h"

#define IO_MAX_FILES	    4096 /* files with state at once (open, pending pages, in flight) */
#define IO_INDEX_SIZE	    (2 * IO_MAX_FILES)
#define IO_EXTRA_REQS	    64		  /* request slots beyond nr-requests: reads, fsyncs */
#define IO_CARRY_MAX	    1024	  /* pages taken for writeback but not yet in a request */
#define IO_WRITEOUT_MAX	    1024	  /* writeout() pages queued for the flusher */
#define IO_CANCEL_GRACE_NS  1000000000ULL /* after a cancel, wait this long before giving up */
#define IO_TICK_NS	    50000000ULL	  /* flusher wakes at least this often */
#define IO_RELEASE_NS	    2000000000ULL /* at exit, how long the device gets to give back */
#define IO_RELEASE_TICK_NS  20000000ULL	  /* ... asked again this often */
#define IO_RELEASE_STILL_NS 200000000ULL  /* ... and no answer for this long ends it */
#define IO_FILE_RESERVE	    (64ULL << 20) /* device space reserved for a file of unknown size */

enum io_req_kind {
	IOR_WRITE, /* writeback of page-cache pages */
	IOR_READ,  /* a page-cache miss */
	IOR_FSYNC,
	IOR_META, /* a manifest line: asynchronous, so no thread waits behind the device */
};
#define IO_META_LEN 120

enum io_req_state {
	IORS_FREE,
	IORS_QUEUED,	 /* waiting for the flusher to submit it */
	IORS_INFLIGHT,	 /* at the backend */
	IORS_CANCELLING, /* timed out, cancel requested */
	IORS_ABANDONED,	 /* pages already ended; the slot waits for the late completion */
};

struct io_file;

/* One I/O request (a bio). Slots live in a pool allocated at creation. */
struct io_req {
	uint8_t kind;  /* enum io_req_kind */
	uint8_t state; /* enum io_req_state (flusher-owned once queued) */
	uint16_t npages;
	struct io_file *file; /* holds a reference (file->refs) */
	uint64_t off;	      /* byte offset in the file */
	uint64_t t_submit, t_cancel;
	uint32_t *pfns;		/* npages frames (writes: under writeback; reads: locked) */
	struct iovec *iov;	/* one per page, pointing into the arena */
	struct devm_req dreq;	/* the in-process model's view of it */
	int res;		/* synchronous requests: the result */
	int open_res;		/* the backend's open of the file for it failed with this */
	bool has_rq;		/* IOR_WRITE: holds a request of io->rqs (freed at completion) */
	uint16_t meta_len;	/* IOR_META: bytes in meta */
	char meta[IO_META_LEN]; /* IOR_META: the line */
	uint32_t done;		/* synchronous requests: futex word, 1 once res is set */
	struct io_req *next;	/* free list / submission queue link */
};

/* A file on the device with page-cache state. Protected by io->files_lock.
 *
 * The engine holds no descriptor for it: the backend opens it straight into a slot of its
 * io_uring's registered-file table when a request needs it (a "direct" descriptor the program
 * can never be given, close or reuse), and creates, sizes and unlinks it by path. */
struct io_file {
	uint64_t id;	   /* 0 = free slot */
	int err;	   /* creating the device file failed with this (-errno), or 0 */
	int slot;	   /* the backend's registered-file slot holding it open, or -1 */
	bool opened;	   /* the open into the slot has completed (until then every request
			    * carries an open of its own linked ahead) */
	unsigned busy;	   /* requests at the backend using the slot (flusher only) */
	uint64_t used;	   /* when a request last used the slot (flusher only; LRU) */
	uint64_t npages;   /* size the file was pre-sized to, in pages */
	uint64_t dev_base; /* device-model address of offset 0 */
	uint64_t pending;  /* pages the writer dirtied that are not written back yet */
	uint64_t written;  /* pages written back successfully */
	uint64_t failed;   /* pages whose writeback failed */
	int first_err;	   /* first writeback error (negative errno) */
	unsigned refs;	   /* requests holding it */
	bool counted;	   /* a writer file: its pages are counted in pending */
	bool writer_done;  /* the writer wrote every page */
	bool finished;	   /* complete or failed: accounted, manifest written */
	bool delete_after; /* delete once finished */
	bool deleted;
	unsigned sync_waiters; /* threads in io_file_sync for it */
	int next_free;	       /* free list link (index into io->files, -1 = end) */
};

struct io_backend_ops {
	const char *name;
	/* Hand r to the device. 0, or -errno (the caller completes r with it). Flusher only. */
	int (*submit)(struct io *io, struct io_req *r);
	/* Ask the device to cancel r. Flusher only. */
	void (*cancel)(struct io *io, struct io_req *r);
	/* Ask the device to cancel everything in flight, at the flusher's exit (optional).
	 * Flusher only. */
	void (*cancel_all)(struct io *io);
	/* Wait up to timeout_ns for completions or a kick, completing what arrived
	 * (io_complete). Flusher only. */
	void (*wait)(struct io *io, uint64_t timeout_ns);
	/* Wake the flusher. Any thread, fault path included. */
	void (*kick)(struct io *io);
	/* The file's entry goes away: close its slot if it holds one (files_lock held). */
	void (*forget)(struct io *io, struct io_file *f);
	void (*destroy)(struct io *io);
};

struct io {
	struct io_config cfg;
	struct io_env env;
	struct mm *mm;
	struct io_stats *st;
	uint8_t *arena; /* nr_frames * 4 KiB, indexed by pfn */
	size_t arena_len;
	bool arena_given; /* io_env.arena: the caller's (shared) memory, never unmapped here */
	uint32_t nr_frames;
	unsigned max_pages;    /* pages per request */
	bool odirect;	       /* files opened with O_DIRECT */
	char dir[600];	       /* this process's directory on the device ("" = model) */
	uint64_t manifest_off; /* where the next manifest line goes (files_lock) */
	uint32_t meta_pending; /* atomic: manifest lines queued or in flight */

	/* requests */
	struct io_req *reqs; /* pool: nr_requests + IO_EXTRA_REQS */
	unsigned nreqs;
	void *req_mem; /* pfns + iovecs of every request */
	size_t req_mem_len;
	pthread_mutex_t q_lock; /* free list, submission queue, writeout queue */
	struct io_req *free_list;
	unsigned nfree;			      /* atomic: free slots */
	struct io_req *subq_head, *subq_tail; /* queued by other threads, flusher submits */
	uint32_t writeout_pfn[IO_WRITEOUT_MAX];
	uint64_t writeout_owner[IO_WRITEOUT_MAX];
	unsigned nwriteout;
	/* flusher only: pages under writeback not yet in a request, write requests in flight */
	struct wbq carry;
	uint32_t carry_pfn[IO_CARRY_MAX];
	uint64_t carry_owner[IO_CARRY_MAX];
	/* write congestion, for the reclaim/compaction throttles (io_wait_uncongested): the
	 * flusher publishes whether carry is congested, and bumps uncongest_seq (a futex word) at
	 * every write completion that leaves it uncongested */
	uint32_t congested;	    /* atomic */
	uint32_t uncongest_seq;	    /* atomic, futex word */
	uint32_t uncongest_waiters; /* atomic: sleepers on uncongest_seq */
	/* the 3.x request list (cfg.rq_3x): env.rqs or rqs_own; writes take a request from it
	 * (the flusher without sleeping: fl_slot is its place among the sleepers, -1 when it is
	 * not queued); rq_credits are requests writeout callers took whose pages wait for the
	 * flusher (atomic) */
	struct rqs *rqs;
	bool rqs_own;
	struct rql_ioc fl_ioc;
	int fl_slot; /* atomic */
	uint32_t rq_credits;

	/* files */
	pthread_mutex_t files_lock;
	struct io_file files[IO_MAX_FILES]; /* entries never move */
	uint16_t index[IO_INDEX_SIZE];	    /* file id -> entry + 1 (0 = empty) */
	int free_file;			    /* free entry list head, -1 = none */
	unsigned nfiles;
	uint64_t dev_next; /* device-model address allocator */
	uint32_t progress; /* futex word: bumped whenever pages finish writeback */
	unsigned sync_all; /* threads waiting for everything to be written back */

	/* flusher policy state (flusher only) */
	struct wbm_params wbp;
	struct wbm_age age; /* when the dirty pages were dirtied (kupdate) */
	struct wbm_bw bw;   /* write bandwidth estimate */
	uint64_t completed_bytes;
	uint64_t bw_bps;      /* atomic copy of bw.bw for the dirtier */
	uint64_t dirtied_new; /* atomic: pages dirtied since the flusher last looked */
	uint64_t next_kupdate;
	uint64_t t0; /* engine creation (model time origin) */

	/* threads */
	pthread_t flusher, dirtier;
	bool flusher_started;
	/* the dirtier is joined by whoever holds join_lock: the flusher once the dirtier has
	 * returned (dirtier_returned), without waiting, or io_stop */
	pthread_mutex_t join_lock;
	bool dirtier_started;	      /* join_lock */
	atomic_bool dirtier_returned; /* its start routine is done; its teardown may still run */
	struct guard_thread flusher_gt, dirtier_gt; /* credential replication (core/inprocess) */
	atomic_bool stopping;			    /* dirtier and new submissions stop */
	atomic_bool flusher_stop;
	uint64_t drain_deadline;
	uint32_t dirtier_wake; /* futex word: io_stop wakes a sleeping dirtier */

	/* backend */
	const struct io_backend_ops *be;
	void *be_priv;
};

/* backends */
int io_uring_backend_init(struct io *io, char *err, size_t errlen);
int io_model_backend_init(struct io *io, char *err, size_t errlen);

/* engine internals used by the backends and the dirtier */
void io_complete(struct io *io, struct io_req *r, int res);
/* The report's error classes (io.errors) of a failed operation's -errno. */
enum io_err_class { IO_ERR_EIO, IO_ERR_ENOSPC, IO_ERR_DISCONNECTED, IO_ERR_TIMEOUT, IO_ERR_OTHER };
enum io_err_class io_err_class(int err);
/* Count a failed operation against the device in its error class (err < 0); npages of writeback
 * failed with it (0: the operation wrote nothing, e.g. a file the device refused to create). */
void io_count_error(struct io *io, int err, unsigned npages);
struct io_req *io_req_get(struct io *io);
void io_req_put(struct io *io, struct io_req *r);
/* Queue r for the flusher and kick it (any thread). */
void io_req_queue(struct io *io, struct io_req *r);
/* Submit synchronously-waited request r (read, fsync) and wait for it; returns r->res. */
int io_req_run(struct io *io, struct io_req *r);

/* files (files.c) */
void io_files_init(struct io *io);
struct io_file *io_file_get(struct io *io, uint64_t file_id, bool create_unknown);
/* The entry of file_id without a reference (files_lock held), or NULL. */
struct io_file *io_file_get_locked(struct io *io, uint64_t file_id);
/* Grow a file of unknown size so that pages below end_page exist (no extending writes). */
int io_file_cover(struct io *io, struct io_file *f, uint64_t end_page);
void io_file_put(struct io *io, struct io_file *f);
void io_file_pages_done(struct io *io, struct io_file *f, unsigned npages, unsigned nfailed,
			int err);
/* The device file's path: <dir>/<name>. */
void io_file_path(const struct io *io, uint64_t file_id, char *buf, size_t len);
#define IO_PATH_MAX 700

/* Zeroed private memory straight from the kernel (never the allocator's, never through an
 * interposed mmap): everything fault handlers touch in io must be unmanaged memory, or a handler
 * could fault on it with no one left to serve the fault. NULL on failure. */
void *io_map(size_t len);
void io_unmap(void *p, size_t len);
/* The first problem, for the report. io threads call it: no strerror() there (its message
 * catalogue lookup allocates, and the allocator may be the program's): strerrordesc_np(). */
void io_note(struct io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void io_block_signals_and_init(struct io *io);
/* The dirtier's last store before it returns (the flusher joins it from then on). */
void io_dirtier_returns(struct io *io);
void *io_dirtier_main(void *arg);

static inline void io_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static inline void io_stat_max(uint64_t *c, uint64_t v)
{
	uint64_t cur = __atomic_load_n(c, __ATOMIC_RELAXED);

	while (v > cur &&
	       !__atomic_compare_exchange_n(c, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void io_futex_wait(uint32_t *word, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = {(time_t)(timeout_ns / 1000000000ULL),
			      (long)(timeout_ns % 1000000000ULL)};

	guard_sync_self(); /* an io thread about to sleep takes a pending credential change */
	sys_futex_wait(word, val, timeout_ns ? &ts : NULL);
}

static inline void io_futex_wake_all(uint32_t *word)
{
	sys_futex_wake(word, INT_MAX);
}

static inline uint8_t req_state(const struct io_req *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

static inline void req_set_state(struct io_req *r, uint8_t s)
{
	__atomic_store_n(&r->state, s, __ATOMIC_RELEASE);
}

static inline bool io_stopping(struct io *io)
{
	return atomic_load_explicit(&io->stopping, memory_order_acquire);
}

#endif
