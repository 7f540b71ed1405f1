/* thpemu-fusedev internals: a slow-device FUSE filesystem (libfuse3 low-level API).
 *
 * Data path: a WRITE is stored in the back-end at once and handed to the device model
 * (core/io/devmodel); its reply is held until the model says the device completed it and is
 * then sent by the completion thread. Workers never sleep; nothing sleeps under a lock. The
 * kernel's view: the writer (write-through or O_DIRECT) or the flusher (writeback cache) waits
 * on a request the way it would wait for a slow block device, which is what pins pages under
 * writeback in thpemu's emulated kernel.
 *
 * Modules (prefix fdev_): ns.c namespace (inodes, directories), store.c back-ends
 * (memory/discard/dir), ioq.c device queue + completion thread, ctl.c control and stats
 * files, fs.c the FUSE operations, main.c the command line and mount life cycle.
 */
#ifndef THPEMU_FUSEDEV_H
#define THPEMU_FUSEDEV_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "io/devmodel.h"
#include "obs/hist.h"

#define FDEV_CTL_NAME	".thpemu-control"
#define FDEV_STATS_NAME ".thpemu-stats"
#define FDEV_CHUNK	(64 * 1024) /* memory store allocation granule */

enum fdev_kind { FDEV_DIR, FDEV_REG, FDEV_CTL, FDEV_STATS };
enum fdev_store_kind { FDEV_STORE_MEMORY, FDEV_STORE_DISCARD, FDEV_STORE_DIR, FDEV_STORE_WRITERS };
enum fdev_cache { FDEV_CACHE_AUTO, FDEV_CACHE_DIRECT, FDEV_CACHE_WRITEBACK };

struct fdev_inode;

struct fdev_dirent {
	char *name;
	struct fdev_inode *ino;
};

/* One file or directory. The FUSE node id is the address of this struct (root: 1). */
struct fdev_inode {
	uint64_t ino; /* st_ino */
	enum fdev_kind kind;
	uint64_t nlookup;	   /* kernel references; ns lock */
	struct fdev_inode *parent; /* ns lock; NULL once unlinked (and for the root) */
	char *name;		   /* ns lock; name in parent */
	struct fdev_dirent *ents;  /* ns lock; directory entries (directories only) */
	size_t nents, cap;

	pthread_mutex_t lock; /* attributes and data below */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	nlink_t nlink;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	uint64_t dev_base; /* device address of offset 0: files are far apart on the device */
	uint8_t **chunks;  /* memory store: FDEV_CHUNK-sized, NULL = hole */
	size_t nchunks;
	int fd;		    /* dir store: backing file, -1 until opened */
	uint64_t allocated; /* bytes charged to the capacity */
	/* On a machine (machine.c): */
	bool engine;	     /* the machine's writeback engine's file: device traffic only */
	uint64_t pc_pages;   /* lock: pages this file may have in the machine's page cache */
	uint64_t pc_dirtied; /* lock: pages dirtied since the last balance_dirty_pages */
	int32_t noted_pid;   /* lock: the writer last noted in the machine's file table */
};

struct fdev_opts {
	const char *mountpoint;
	struct devm_params dev;
	uint64_t seed;
	uint64_t capacity; /* 0 = unbounded */
	bool capacity_set;
	enum fdev_store_kind store;
	const char *store_dir;
	enum fdev_cache cache;
	bool model_reads;
	bool foreground;
	bool debug;
	bool auto_unmount;
	int ready_fd; /* -1 = none */
	const char *pidfile;
	unsigned threads;
	unsigned max_background;
};

/* Stats the completion thread keeps besides the model's. */
struct fdev_iostats {
	struct obs_hist service; /* t_done - t_start: device service time */
	struct obs_hist latency; /* t_done - t_arrive: how long the reply was held */
	struct obs_hist lag;	 /* real reply time - t_done: timer precision */
	atomic_uint_fast64_t replies_eio, replies_enospc, fs_enospc;
	atomic_uint_fast64_t replies_abandoned; /* answered EINTR early: the sender gave up */
};

struct fdev_io; /* ioq.c */

struct fdev_ioq {
	pthread_mutex_t lock; /* model, wake_at, stop */
	pthread_cond_t cond;  /* CLOCK_MONOTONIC; deadline moved earlier, or stop */
	struct devm *dev;
	uint64_t t0;		   /* CLOCK_MONOTONIC at device power-on */
	uint64_t wake_at;	   /* model time the completion thread sleeps until */
	struct fdev_io *abandoned; /* held requests whose sender gave up, to answer at once */
	bool stop;
	bool started;
	pthread_t thread;
	struct fdev_iostats st;
};

struct fdev {
	struct fdev_opts o;
	struct fuse_session *se;
	pthread_mutex_t ns_lock; /* namespace structure, nlookup; taken before inode locks */
	struct fdev_inode *root, *ctl, *stats;
	uint64_t next_ino;
	uint64_t nfiles;
	atomic_uint_fast64_t used;     /* bytes charged to the capacity */
	atomic_uint_fast64_t capacity; /* 0 = unbounded; settable at run time */
	int store_root;		       /* dir store: directory fd */
	struct fdev_ioq q;
	uint64_t started_ns;
	int launcher_fd; /* daemonized: pipe to the launcher waiting for "mounted", or -1 */
	bool ready_sent;
	struct fdev_mach *mach; /* the thpemu machine joined (machine=), or NULL; atomic */
};

/* ns.c */
int fdev_ns_init(struct fdev *fs);
void fdev_ns_destroy(struct fdev *fs);
struct fdev_inode *fdev_inode_new(struct fdev *fs, enum fdev_kind kind, mode_t mode);
void fdev_inode_free(struct fdev *fs, struct fdev_inode *ino);
struct fdev_inode *fdev_ino(struct fdev *fs, fuse_ino_t n);
fuse_ino_t fdev_nodeid(struct fdev *fs, struct fdev_inode *ino);
/* Under ns_lock: */
struct fdev_inode *fdev_dir_lookup(struct fdev_inode *dir, const char *name);
int fdev_dir_add(struct fdev_inode *dir, const char *name, struct fdev_inode *ino);
int fdev_dir_remove(struct fdev_inode *dir, const char *name);
/* Path of ino relative to the store root (dir store); returns length or -ENAMETOOLONG. */
int fdev_path(struct fdev_inode *ino, char *buf, size_t len);
int fdev_path_child(struct fdev_inode *dir, const char *name, char *buf, size_t len);
void fdev_fill_stat(struct fdev_inode *ino, struct stat *st);
void fdev_touch(struct timespec *t);

/* store.c: data of regular files. The data calls take ino->lock themselves (callers must not
 * hold it), update size and times, and charge the capacity (-ENOSPC when exceeded). */
int fdev_store_open(struct fdev *fs);
void fdev_store_close(struct fdev *fs);
int fdev_store_scan(struct fdev *fs);
int fdev_store_write(struct fdev *fs, struct fdev_inode *ino, const char *buf, size_t len,
		     uint64_t off);
ssize_t fdev_store_read(struct fdev *fs, struct fdev_inode *ino, char *buf, size_t len,
			uint64_t off);
int fdev_store_truncate(struct fdev *fs, struct fdev_inode *ino, uint64_t size);
int fdev_store_fallocate(struct fdev *fs, struct fdev_inode *ino, int mode, uint64_t off,
			 uint64_t len);
void fdev_store_drop(struct fdev *fs, struct fdev_inode *ino);
/* Dir store: opens the backing file if needed (takes ns_lock, then ino->lock). */
int fdev_store_prepare(struct fdev *fs, struct fdev_inode *ino);
/* Namespace mirroring for the dir store (no-ops otherwise); under ns_lock. */
int fdev_store_mknode(struct fdev *fs, struct fdev_inode *dir, const char *name,
		      struct fdev_inode *ino);
int fdev_store_unlink(struct fdev *fs, struct fdev_inode *dir, const char *name, bool is_dir);
int fdev_store_rename(struct fdev *fs, struct fdev_inode *od, const char *on, struct fdev_inode *nd,
		      const char *nn);
const char *fdev_store_name(const struct fdev *fs);

/* ioq.c */
int fdev_ioq_start(struct fdev *fs);
/* Completes everything still held (data is already stored) and stops the thread. */
void fdev_ioq_stop(struct fdev *fs);
void fdev_ioq_write(struct fdev *fs, fuse_req_t req, uint64_t dev_off, size_t len);
void fdev_ioq_read(struct fdev *fs, fuse_req_t req, uint64_t dev_off, char *buf, size_t len);
void fdev_ioq_fsync(struct fdev *fs, fuse_req_t req, uint64_t dev_off);
void fdev_ioq_pause(struct fdev *fs);
void fdev_ioq_resume(struct fdev *fs);
int fdev_ioq_set(struct fdev *fs, const char *key, const char *value);
void fdev_ioq_snapshot(struct fdev *fs, struct devm_params *p, struct devm_stats *s);
uint64_t fdev_ioq_now(const struct fdev *fs);

/* ctl.c */
/* Applies control text (key=value lines); 0 or -EINVAL (stops at the first bad line). */
int fdev_ctl_apply(struct fdev *fs, const char *text, size_t len);
/* Renders the control (settings) or stats (JSON) file; malloc'ed, *len set. */
char *fdev_ctl_render(struct fdev *fs, enum fdev_kind kind, size_t *len);

/* machine.c: joined to a thpemu machine, writers' WRITEs go through its page cache. Nothing
 * here is called without one (fs->mach NULL): fusedev is then exactly the device alone. */
struct fdev_mach;
int fdev_machine_join(struct fdev *fs, const char *rendezvous);
void fdev_machine_leave(struct fdev *fs);
/* Sets i->engine for a new name in dir (the engine's directories are device traffic). */
void fdev_machine_mark(struct fdev *fs, struct fdev_inode *dir, const char *name,
		       struct fdev_inode *i);
/* Does a WRITE to i through an open with open_flags go through the page cache? */
bool fdev_machine_caches(struct fdev *fs, const struct fdev_inode *i, int open_flags);
/* The bytes are stored: dirty the pages, throttle, answer req. */
void fdev_machine_write(struct fdev *fs, fuse_req_t req, struct fdev_inode *i, size_t size,
			uint64_t off);
/* Answer req once none of i's pages is dirty or under writeback. */
void fdev_machine_fsync(struct fdev *fs, fuse_req_t req, struct fdev_inode *i);
/* i was cut to size: its pages beyond leave the page cache (also at free: size 0). */
void fdev_machine_truncate(struct fdev *fs, struct fdev_inode *i, uint64_t size);

/* fs.c */
extern const struct fuse_lowlevel_ops fdev_ops;

/* main.c: the mount is live (INIT answered): tell --ready-fd and a waiting launcher. */
void fdev_ready(struct fdev *fs);

#endif
