/* core/io: the emulated page cache's data, the dirtier that streams files through it, and the
 * writeback engine that drains it to a (slow) device with liburing.
 *
 * Method. File pages are frames of the emulated pool (core/mm's page cache: movable, on the LRU,
 * dirty / under writeback / clean). Their bytes live in an arena indexed by pfn, private
 * (MAP_NORESERVE | MADV_DONTFORK) or given by the caller (io_env.arena: a shared machine's
 * segment), 4 KiB aligned: the slots are the O_DIRECT I/O buffers; so a
 * page-cache migration is a memcpy between two slots (migrate_page_copy) and a write of a dirty
 * page is an O_DIRECT write straight from its slot.
 *
 *  dirtier   a thread writing files through the page cache as cp or rsync to a USB stick does
 *            (generic_perform_write: find or create the page, copy the data in, mark it dirty),
 *            throttled by balance_dirty_pages() on the dirty thresholds of core/io/wbmodel; or
 *            a reader filling clean page cache (a fragmentation source).
 *  writeback the flusher (wb_writeback / wb_do_writeback): background writeback above
 *            dirty_background_ratio, kupdate for pages older than dirty_expire, and on demand
 *            for fsync and sync compaction's writeout(); it takes the oldest dirty frames
 *            (mm_writeback_begin), merges file-contiguous runs into vectored O_DIRECT writes
 *            of at most max-request bytes and keeps at most nr-requests in flight. A frame is
 *            under writeback from submission to its completion (end_page_writeback), which
 *            wakes every waiter of its hashed wait queue (io/waitq.h).
 *  backends  liburing on files pre-sized with ftruncate in a directory of the device mount
 *            (thpemu-fusedev, or any directory); or, with no device, the device model of
 *            core/io/devmodel completing requests in real time on the flusher thread.
 *
 * Failure model. A request that completes with an error ends writeback of its pages with that
 * error (the page is marked and becomes clean, as end_page_writeback after an I/O error) and
 * wakes their waiters; errors are counted by kind (EIO, ENOSPC, disconnected: ENOTCONN or
 * ECONNABORTED from a dead FUSE daemon, timeout). A request that does not complete within the
 * device's timeout (30 s by default, the SCSI command timeout of a USB stick) is cancelled
 * (IORING_OP_ASYNC_CANCEL); if it still has not completed one second later its pages are ended
 * with -ETIMEDOUT and the request is abandoned: no frame stays pinned forever, whatever the
 * device does. The bytes of an abandoned write on the device are undefined.
 *
 * Threads: the flusher (owns the ring or the model) and the dirtier; both block every signal and
 * call env->thread_init first; env->thread_gone is called for each once it is gone (joined: the
 * dirtier by the flusher within a tick of its end, the flusher by io_stop). io_writeout() and
 * io_copy_file_page() are mm hooks called from fault handler threads: they take only io's own locks
 * (never one an application thread can hold), never allocate and never block on the device.
 *
 * Errors: negative errno. Nothing here exits or aborts the host program.
 */
#ifndef THPEMU_IO_IO_H
#define THPEMU_IO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/devmodel.h"
#include "io/waitq.h"
#include "io/wbmodel.h"
#include "mm/mm.h"
#include "obs/hist.h"

#define IO_PAGE_SIZE MM_PAGE_SIZE

/* ---- the dirtier's workload: one spec string (--dirty, THPEMU_DIRTY) ------------------------- */

enum io_dirty_mode {
	IO_DIRTY_WRITE, /* write files through the page cache (dirty pages, writeback) */
	IO_DIRTY_READ,	/* read files through the page cache (clean pages) */
};

enum io_fsync {
	IO_FSYNC_NONE, /* never: writeback decides (cp) */
	IO_FSYNC_EACH, /* after every file (rsync --fsync, a careful copier) */
	IO_FSYNC_END,  /* once, after the last file (cp && sync) */
};

struct io_dirty_spec {
	enum io_dirty_mode mode;
	bool stream;	    /* endless: write (or read) until the program exits */
	uint64_t total;	    /* bytes in all (unless stream) */
	uint64_t file_size; /* bytes per file (a multiple of 4 KiB) */
	uint64_t rate;	    /* bytes/s the workload moves at most; 0 = as fast as allowed */
	enum io_fsync fsync;
	bool delete_after;	   /* delete each file once it is complete on the device */
	unsigned dirty_ratio;	   /* vm.dirty_ratio, % of dirtyable pool memory */
	unsigned background_ratio; /* vm.dirty_background_ratio, % */
	uint64_t start_ns;	   /* wait this long after program start */
};

/* Parse "stream,file=64K,rate=20M,fsync=each,delete-after", "total=512M,file=1G", "512M" (a bare
 * size is the total) or "read,total=256M". Returns 0, or -EINVAL with one line in err naming the
 * bad item and what is accepted. */
int io_dirty_parse(const char *spec, struct io_dirty_spec *out, char *err, size_t errlen);
/* Canonical form (every field), accepted back by io_dirty_parse. */
void io_dirty_format(const struct io_dirty_spec *s, char *buf, size_t len);
void io_dirty_help(FILE *f);

/* ---- the device: one spec string (--device, THPEMU_DEVICE) ----------------------------------- */

enum io_dev_kind {
	IO_DEV_NONE,   /* no device: the in-process model stands in */
	IO_DEV_PRESET, /* a thpemu-fusedev mount with this preset (thpemu run mounts it) */
	IO_DEV_PATH,   /* a directory on a mounted filesystem */
};

#define IO_DEV_OVERRIDES 384

struct io_device_spec {
	enum io_dev_kind kind;
	char path[256];		  /* IO_DEV_PATH: the directory */
	struct devm_params model; /* preset + overrides: fusedev's model and the fallback's */
	char overrides[IO_DEV_OVERRIDES]; /* the device-model KEY=VALUE items, comma-separated */
	uint64_t timeout_ns;  /* a request not completed by then is cancelled (timeout=) */
	unsigned nr_requests; /* writeback requests in flight at most (nr-requests=) */
	uint64_t max_request; /* bytes per request at most (max-request=) */
};

/* Parse "none[:KEY=VALUE,...]", "PRESET[:KEY=VALUE,...]" or a path (starting with '/' or '.').
 * Keys: the device model's (devm_params_set: bandwidth=, latency=, error-rate=, ...) plus
 * timeout=DUR, nr-requests=N, max-request=SIZE. Returns 0 or -EINVAL with one line in err. */
int io_device_parse(const char *spec, struct io_device_spec *out, char *err, size_t errlen);
void io_device_help(FILE *f);

/* ---- the data pattern the dirtier writes and the tests verify -------------------------------- */

/* Fill len bytes (a multiple of 8) for file_id at byte offset off (a multiple of 8). */
void io_pattern_fill(void *buf, uint64_t seed, uint64_t file_id, uint64_t off, size_t len);
/* Bytes at the start of buf that match the pattern (len if all do). */
size_t io_pattern_check(const void *buf, uint64_t seed, uint64_t file_id, uint64_t off, size_t len);
/* File names on the device: "w00000001.dat" (writer), "r00000001.dat" (reader), others
 * "f<id>.dat" (page cache of a fragmentation recipe). Returns 0, or -EINVAL for a name that is
 * none of those (io_file_id_of). */
void io_file_name(uint64_t file_id, char *buf, size_t len);
int io_file_id_of(const char *name, uint64_t *file_id);
#define IO_WRITER_ID_BASE 1ULL	       /* writer files: 1, 2, ... */
#define IO_READER_ID_BASE (1ULL << 24) /* reader files */
/* Real writers' files on the device (thpemu-fusedev: IO_FS_ID_BASE + inode % 2^24). The
 * engine meets them as files it did not create: "f<id>.dat", made and extended on demand. */
#define IO_FS_ID_BASE	 (1ULL << 25)
#define IO_MANIFEST_NAME "MANIFEST" /* one line per file complete on the device */

/* ---- statistics (plain data: it lives in the process's shared statistics file) --------------- */

struct io_stats {
	uint64_t active;	/* 1 once the engine runs in this process */
	uint64_t in_process;	/* 1: the in-process device model stands in (no device) */
	uint64_t odirect;	/* 1: files are written with O_DIRECT */
	uint64_t bytes_dirtied; /* written into the page cache by the dirtier */
	uint64_t files_created, files_complete, files_deleted, files_failed;
	uint64_t bytes_written;	  /* completed writeback bytes (successful) */
	uint64_t pages_submitted; /* pages put under writeback */
	uint64_t writeback_ops;	  /* write requests completed (any result) */
	uint64_t writeout_pages;  /* pages written out for sync compaction (writeout hook) */
	uint64_t err_eio, err_enospc, err_disconnected, err_timeout, err_other;
	uint64_t pages_failed; /* pages whose writeback ended with an error */
	uint64_t cancels;      /* requests cancelled after the timeout */
	uint64_t abandoned;    /* ... and given up on (pages ended with -ETIMEDOUT) */
	uint64_t fsyncs, fsync_errors;
	uint64_t throttles; /* balance_dirty_pages pauses */
	uint64_t throttle_ns, throttle_max_ns;
	uint64_t pagecache_retries; /* page-cache lookups retried (locked page, pool exhausted) */
	uint64_t bytes_read, read_ops, read_errors;
	uint64_t inflight_max;	  /* most write requests in flight at once */
	uint64_t dirty_max_pages; /* most dirty + writeback pages seen by the dirtier */
	uint64_t copies;	  /* page-cache copies for migration */
	/* the 3.x request list (rq_3x; io/rqshare.h), copied from it by the flusher */
	uint64_t rq_active;			      /* 1: writes were allocated from it */
	uint64_t rq_allocated, rq_refused, rq_beyond; /* given, refused, given beyond the limit */
	uint64_t rq_allocated_max, rq_congested_on;   /* most at once, times congested */
	uint64_t rq_waits[3], rq_wait_ns[3], rq_wait_max_ns[3], rq_waits_1s[3]; /* enum rqs_who */
	uint64_t dropped_dirty;	     /* dirty pages still unwritten when the process ended */
	uint64_t unfinished_at_exit; /* write requests in flight when io stopped (their pages end
				      * with -ESHUTDOWN; not counted as device errors) */
	struct obs_hist wb_lat;	     /* write request latency: submission to completion */
	char device[128];	     /* what stands for the device: the directory, or "model" */
	char model[64];		     /* the device model's preset name */
	char note[160];		     /* the first problem (device gone, O_DIRECT refused, ...) */
};
void io_stats_merge(struct io_stats *dst, const struct io_stats *src);
/* A consistent copy of stats that io threads are updating. */
void io_stats_copy(struct io_stats *dst, const struct io_stats *src);

/* ---- the engine ------------------------------------------------------------------------------ */

struct rqs;

struct io_env {
	struct mm *mm;
	struct waitq *wq; /* the writeback wait queues the mm wait hook sleeps on */
	struct io_stats *stats;
	/* thread_init is called first on every io thread (e.g. to mark it as an emulator thread);
	 * thread_gone, on another thread, once that thread is gone - its C library teardown after
	 * its start routine, which may still run code of the program's (its allocator), done - with
	 * the id it had (to unmark it: the dirtier ends when its work is done, long before the
	 * process, and its id may be given to another thread later). Either may be NULL. */
	void (*thread_init)(void *arg);
	void (*thread_gone)(void *arg, int tid);
	void *arg;
	void *call; /* the `call` argument io passes to mm (its hooks get it back) */
	/* The page-cache data arena (mm_nr_frames * 4 KiB, 4 KiB aligned), or NULL: io maps its
	 * own (MAP_NORESERVE, MADV_DONTFORK). Given, it is the caller's memory (a shared
	 * machine's segment, where every process's handlers copy pages): io neither maps nor
	 * unmaps it, and leaves it inherited by fork children (no MADV_DONTFORK). */
	void *arena;
	/* The 3.x request list (io/rqshare.h) when io_config.rq_3x: a shared machine's, in its
	 * segment, so every process's writeout takes its request from the same list; NULL: io
	 * maps its own. */
	struct rqs *rqs;
};

struct io_config {
	struct io_device_spec dev;
	char dir[512]; /* mounted device directory ("" = the in-process model) */
	bool dirty;    /* run the dirtier */
	struct io_dirty_spec dspec;
	uint64_t seed; /* data pattern and model seed */
	/* The 3.x block layer's request list (io/rqlist.h, block/blk-core.c get_request_wait,
	 * 3.1-3.3) allocates every write request: the flusher's and the writeout callers', who
	 * sleep when it is full. false: the modern bound (nr-requests in flight, io/wbqueue.h) */
	bool rq_3x;
};

struct io;

/* Create the engine (arena, request pool, backend, the per-process directory on the device).
 * Does not start threads. Returns 0 or -errno with one line in err. */
int io_create(const struct io_config *cfg, const struct io_env *env, struct io **out, char *err,
	      size_t errlen);
/* Start the flusher (and the dirtier if configured). */
int io_start(struct io *io);
/* Stop the dirtier, then the flusher after waiting up to drain_ns for requests in flight. */
void io_stop(struct io *io, uint64_t drain_ns);
void io_destroy(struct io *io);

/* The page's bytes (4 KiB, page aligned). */
void *io_page(struct io *io, uint32_t pfn);

/* mm hooks (fault-path safe: no allocation, no blocking on the device) */
/* writeout(): start writeback of the dirty frame pfn. 0, or -EBUSY (not dirty any more, or the
 * engine cannot take it: then the page is left dirty). */
int io_writeout(struct io *io, uint64_t owner, uint32_t pfn);
/* The 3.x request list the engine's writes are allocated from, or NULL (modern eras). */
struct rqs *io_rqs(struct io *io);
/* writeout() by a caller that already took a request from io_rqs() (rqs_get, possibly asleep
 * in get_request_wait): the page's write uses it. Whatever the result, the request is the
 * engine's: freed at the write's completion, or at once when the page is not written. */
int io_writeout_held(struct io *io, uint64_t owner, uint32_t pfn);
/* writeout() in the caller's name (a thread of the engine's process: the host's kswapd or
 * dirtier, a process's fault handler): with the 3.x list, get_request_wait first (the caller
 * may sleep until a completion frees a request: counted as `who`'s sleep, its length in
 * *waited_ns if not NULL), then io_writeout_held; else io_writeout. */
int io_writeout_wait(struct io *io, uint64_t owner, uint32_t pfn, int who, uint64_t *waited_ns);
/* copy_file_page(): the data of a migrated page-cache page. */
int io_copy_file_page(struct io *io, uint64_t owner, uint32_t from, uint32_t to);
/* wait_on_page_writeback() of frame pfn of mm on the writeback wait queues q (every mm
 * environment's wait_writeback hook): 0, or -ETIMEDOUT after timeout_ns (0 = no bound). */
int io_wait_writeback(struct waitq *q, struct mm *mm, uint32_t pfn, uint64_t timeout_ns);
/* A reclaim/compaction throttle (3.x mm/backing-dev.c congestion_wait(BLK_RW_ASYNC, timeout)):
 * sleep until a write request completes leaving the queue uncongested (clear_bdi_congested,
 * which block/blk-core.c __freed_request calls for every request freed below the congestion-off
 * threshold), or timeout_ns passed. With iff_congested (wait_iff_congested), return at once when
 * the queue is not congested. "Congested" is the writeback engine's nr_requests requests in
 * flight (io/wbqueue.h wbq_congested). 0 (woken) or -ETIMEDOUT. A futex wait: lock-free,
 * allocation-free, handler-thread safe. */
int io_wait_uncongested(struct io *io, uint64_t timeout_ns, bool iff_congested);
/* Whether the writeback queue is congested now. */
bool io_congested(struct io *io);

/* Dirtier-side operations, also for tests. */
/* Write one page of file_id at index through the page cache (create, fill, dirty). Returns 0,
 * -ENOMEM (pool exhausted for good) or -ESHUTDOWN (engine stopping). */
int io_write_page(struct io *io, uint64_t file_id, uint64_t index);
/* Create (and pre-size) file_id on the device for npages pages. */
int io_file_create(struct io *io, uint64_t file_id, uint64_t npages);
/* The writer finished writing the file: it becomes complete once written back. */
void io_file_written(struct io *io, uint64_t file_id);
/* Write back every dirty page of file_id and fsync it. 0 or the first error. */
int io_file_sync(struct io *io, uint64_t file_id);
/* Delete the file (device and page cache). */
void io_file_delete(struct io *io, uint64_t file_id);
/* Read one page of file_id through the page cache (a miss reads the device). 0 or -errno. */
int io_read_page(struct io *io, uint64_t file_id, uint64_t index);
/* Kick the flusher (background thresholds changed). */
void io_kick(struct io *io);
/* Wait until nothing is dirty or under writeback, or timeout_ns passed (-ETIMEDOUT). */
int io_sync_all(struct io *io, uint64_t timeout_ns);
/* The in-process model's statistics (-ENODEV when a real device is used). */
int io_model_stats(struct io *io, struct devm_stats *s);
/* The device directory used for this process's files ("" for the model). */
const char *io_dir(const struct io *io);

#endif
