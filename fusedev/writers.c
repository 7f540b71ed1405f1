/* fusedev as a process of a thpemu machine: real writers' page cache.
 *
 * `thpemu run --device PRESET` mounts fusedev, then makes the machine (core/machine) and writes
 * `machine=HOSTPID:FD` to .thpemu-control. fusedev maps the segment, binds its own mm
 * environment to the machine's mm (mm_attach) and takes a slot. From then on a WRITE from a
 * program (write-through: every byte, with the writer waiting) is what generic_perform_write
 * does: the bytes are stored (as without a machine), every 4 KiB page it touched becomes a
 * dirty page-cache frame of the pool (MM_OWNER_FILE(IO_FS_ID_BASE + inode, index), its bytes
 * copied into the machine's arena), the writer is paused as balance_dirty_pages() would on the
 * machine's counts, and the WRITE is answered: the device's pace reaches the writer through
 * the machine's writeback engine (the host), which writes those frames to files of its own on
 * this device ("thpemu-io.PID/f<id>.dat", made on demand) and keeps them under writeback until
 * the device answers. Those engine files, and O_DIRECT opens, are device traffic as before.
 *
 * fsync/fdatasync waits until none of the file's pages is dirty or under writeback, asking the
 * host (slot 0's mailbox, MACHINE_REQ_WRITEOUT) to start writeback of each dirty one. Pauses
 * and fsync waits run on a thread of their own per request (workers never sleep: a sleeping
 * worker could leave the engine's own WRITEs, which end writeback, unserved).
 *
 * The emulation never fails a write: a page the pool cannot take (-ENOMEM at the min
 * watermark, a page locked too long) is counted and skipped.
 */
#include "fusedev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env/env.h"
#include "io/io.h"
#include "io/rqshare.h"
#include "io/waitq.h"
#include "io/wbthrottle.h"
#include "machine/machine.h"
#include "mm/mm.h"
#include "util/clock.h"

#define PAGE		  4096ULL
#define GET_RETRIES	  20
#define WRITEOUT_TIMEOUT  (1000 * 1000000ULL)
#define FSYNC_TIMEOUT	  (60 * 1000000000ULL)
#define FSYNC_POLL_NS	  (20 * 1000000ULL)
#define ENGINE_DIR_PREFIX "thpemu-io."

struct fdev_mach {
	struct machine m;
	struct mm *mm;
	struct waitq *wq;
	struct mm_env env;	  /* env/device.c, on member */
	struct env_member member; /* fusedev as a process of the machine */
	uint8_t *arena;
	int slot;
	struct wbm_params wbp;
	struct machine_writers *w;
};

static int repair(void *arg)
{
	return mm_repair(arg);
}

/* ---- joining ------------------------------------------------------------------------------ */

int fdev_machine_join(struct fdev *fs, const char *rendezvous)
{
	struct fdev_mach *x;
	char err[256] = "";
	int rc;

	if (__atomic_load_n(&fs->mach, __ATOMIC_ACQUIRE))
		return -EALREADY;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	rc = machine_attach(rendezvous, &x->m, err, sizeof(err));
	if (rc < 0)
		goto fail;
	x->mm = machine_at(&x->m, __atomic_load_n(&x->m.hdr->mm_off, __ATOMIC_ACQUIRE));
	x->wq = machine_at(&x->m, x->m.hdr->waitq_off);
	x->arena = machine_arena(&x->m);
	if (!x->mm || !x->wq || !x->arena || machine_tainted(&x->m)) {
		snprintf(err, sizeof(err), "the machine is not ready");
		rc = -EAGAIN;
		goto detach;
	}
	x->member = (struct env_member){.m = &x->m, .mm = x->mm, .wq = x->wq, .arena = x->arena};
	x->env.ops = &env_device_ops;
	x->env.priv = &x->member;
	rc = mm_attach(x->mm, &x->env);
	if (rc < 0) {
		snprintf(err, sizeof(err), "cannot bind the model");
		goto detach;
	}
	x->m.repair = repair;
	x->m.repair_arg = x->mm;
	rc = machine_slot_take(&x->m);
	if (rc < 0) {
		snprintf(err, sizeof(err), "no free process slot");
		mm_detach(x->mm);
		goto detach;
	}
	x->slot = rc;
	x->member.slot = rc;
	x->w = &x->m.hdr->writers;
	wbm_params_default(&x->wbp);
	__atomic_store_n(&fs->mach, x, __ATOMIC_RELEASE);
	if (fs->o.debug) /* the program's stderr is shared with the daemon's: quiet otherwise */
		fprintf(stderr,
			"thpemu-fusedev: joined machine %s (slot %d): writers' pages go through "
			"its page cache\n",
			rendezvous, x->slot);
	return 0;

detach:
	machine_detach(&x->m);
fail:
	fprintf(stderr, "thpemu-fusedev: cannot join machine %s: %s (%s)\n", rendezvous,
		err[0] ? err : "attach failed", strerror(-rc));
	free(x);
	return rc;
}

void fdev_machine_leave(struct fdev *fs)
{
	struct fdev_mach *x = __atomic_exchange_n(&fs->mach, NULL, __ATOMIC_ACQ_REL);

	if (!x)
		return;
	machine_slot_leave(&x->m, x->slot);
	mm_detach(x->mm);
	machine_detach(&x->m);
	free(x);
}

/* Files in the engine's own directories on this device are device traffic, never page-cached
 * again (the engine's writeback would otherwise dirty pages of its own). */
void fdev_machine_mark(struct fdev *fs, struct fdev_inode *dir, const char *name,
		       struct fdev_inode *i)
{
	i->engine = dir->engine || (dir == fs->root &&
				    !strncmp(name, ENGINE_DIR_PREFIX, strlen(ENGINE_DIR_PREFIX)));
}

static uint64_t file_id(const struct fdev_inode *i)
{
	return IO_FS_ID_BASE + (i->ino % IO_READER_ID_BASE);
}

static void stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static void stat_max(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > old &&
	       !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

bool fdev_machine_caches(struct fdev *fs, const struct fdev_inode *i, int open_flags)
{
	return __atomic_load_n(&fs->mach, __ATOMIC_ACQUIRE) && i->kind == FDEV_REG && !i->engine &&
	       !(open_flags & O_DIRECT);
}

static void nap(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

	nanosleep(&ts, NULL);
}

/* generic_perform_write's page-cache half for the pages [off, off + len) touched. */
static unsigned dirty_pages(struct fdev *fs, struct fdev_mach *x, struct fdev_inode *i,
			    uint64_t off, size_t len)
{
	uint64_t id = file_id(i), first = off / PAGE, end = (off + len + PAGE - 1) / PAGE;
	unsigned done = 0;

	for (uint64_t p = first; p < end; p++) {
		uint32_t pfn = 0;
		bool created;
		int rc = -EAGAIN;

		for (int t = 0; t < GET_RETRIES && rc < 0; t++) {
			rc = mm_pagecache_get(x->mm, MM_OWNER_FILE(id, p), true, &pfn, &created,
					      NULL);
			if (rc == -EAGAIN || rc == -ENOMEM)
				nap(1000000ULL);
			else if (rc < 0)
				break;
		}
		if (rc < 0) {
			stat_add(&x->w->skipped, 1);
			continue;
		}
		/* the page's whole current contents (a partial write keeps the rest) */
		{
			uint8_t *slot = x->arena + (uint64_t)pfn * PAGE;
			ssize_t n = fdev_store_read(fs, i, (char *)slot, PAGE, p * PAGE);

			if (n < (ssize_t)PAGE)
				memset(slot + (n > 0 ? n : 0), 0, PAGE - (size_t)(n > 0 ? n : 0));
		}
		mm_pagecache_put(x->mm, pfn, true);
		done++;
	}
	pthread_mutex_lock(&i->lock);
	if (end > i->pc_pages)
		i->pc_pages = end;
	pthread_mutex_unlock(&i->lock);
	return done;
}

/* balance_dirty_pages() for a writer that dirtied `dirtied` pages (core/io/wbthrottle). */
static void balance_dirty_pages(struct fdev *fs, struct fdev_mach *x, uint64_t dirtied)
{
	struct wbt_stats st = {0};
	uint64_t bw = fs->o.dev.write_bw ? fs->o.dev.write_bw : 1000ULL * 1000 * 1000;
	struct wbt_bdp b;
	struct wbt_step s;

	wbt_bdp_start(&b, dirtied);
	do {
		struct mm_counts c;

		mm_get_counts(x->mm, &c);
		stat_max(&x->w->dirty_max, c.file_dirty);
		stat_max(&x->w->writeback_max, c.file_writeback);
		s = wbt_bdp_step(&x->wbp, &b, (uint64_t)c.free + c.file, c.file_dirty,
				 c.file_writeback, bw);
		if (!s.pause_ns)
			break;
		nap(s.pause_ns);
	} while (wbt_bdp_paused(&b, s.pause_ns, &st));
	stat_add(&x->w->throttles, st.throttles);
	stat_add(&x->w->throttle_ns, st.throttle_ns);
}

struct deferred {
	struct fdev *fs;
	struct fdev_inode *i;
	fuse_req_t req;
	size_t count;	  /* WRITE: bytes to answer */
	uint64_t dirtied; /* WRITE: pages to throttle for */
	bool fsync;
};

static int file_sync(struct fdev_mach *x, struct fdev_inode *i);

static void *deferred_main(void *arg)
{
	struct deferred *d = arg;
	struct fdev_mach *x = __atomic_load_n(&d->fs->mach, __ATOMIC_ACQUIRE);

	if (d->fsync) {
		int rc = x ? file_sync(x, d->i) : 0;

		fuse_reply_err(d->req, rc == -ETIMEDOUT ? EIO : 0);
	} else {
		if (x)
			balance_dirty_pages(d->fs, x, d->dirtied);
		fuse_reply_write(d->req, d->count);
	}
	free(d);
	return NULL;
}

/* Run d on a thread of its own (detached); inline if none can be made. */
static void defer(struct deferred *d)
{
	pthread_attr_t a;
	pthread_t t;
	int rc;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	rc = pthread_create(&t, &a, deferred_main, d);
	pthread_attr_destroy(&a);
	if (rc)
		deferred_main(d);
}

/* Note who writes i (the machine's file table), once per writer: a process waiting on one of
 * its pages under writeback is told whose page it was. */
static void note_writer(struct fdev *fs, struct fdev_mach *x, fuse_req_t req, struct fdev_inode *i)
{
	int pid = (int)fuse_req_ctx(req)->pid;
	char comm[16] = "?", path[68] = "", proc[48];
	bool fresh;
	FILE *f;

	pthread_mutex_lock(&i->lock);
	fresh = i->noted_pid != pid;
	i->noted_pid = pid;
	pthread_mutex_unlock(&i->lock);
	if (!fresh)
		return;
	snprintf(proc, sizeof(proc), "/proc/%d/comm", pid);
	f = fopen(proc, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	pthread_mutex_lock(&fs->ns_lock);
	if (i->parent && i->parent != fs->root && i->parent->name)
		snprintf(path, sizeof(path), "%.30s/%.36s", i->parent->name,
			 i->name ? i->name : "");
	else if (i->name)
		snprintf(path, sizeof(path), "%.67s", i->name);
	pthread_mutex_unlock(&fs->ns_lock);
	machine_file_note(&x->m, file_id(i), pid, comm, path);
}

void fdev_machine_write(struct fdev *fs, fuse_req_t req, struct fdev_inode *i, size_t size,
			uint64_t off)
{
	struct fdev_mach *x = __atomic_load_n(&fs->mach, __ATOMIC_ACQUIRE);
	unsigned n = dirty_pages(fs, x, i, off, size);
	struct deferred *d;
	struct mm_counts c;
	struct wbm_thresh th;
	uint64_t due;

	if (n)
		note_writer(fs, x, req, i);
	stat_add(&x->w->pages_dirtied, n);
	stat_add(&x->w->bytes, size);
	/* balance_dirty_pages_ratelimited(): look every WBT_RATELIMIT_PAGES pages */
	pthread_mutex_lock(&i->lock);
	i->pc_dirtied += n;
	due = i->pc_dirtied >= WBT_RATELIMIT_PAGES ? i->pc_dirtied : 0;
	if (due)
		i->pc_dirtied = 0;
	pthread_mutex_unlock(&i->lock);
	if (!due) {
		fuse_reply_write(req, size);
		return;
	}
	mm_get_counts(x->mm, &c);
	stat_max(&x->w->dirty_max, c.file_dirty);
	stat_max(&x->w->writeback_max, c.file_writeback);
	wbm_thresholds(&x->wbp, (uint64_t)c.free + c.file, &th);
	if ((uint64_t)c.file_dirty + c.file_writeback <= th.freerun) {
		fuse_reply_write(req, size); /* below the freerun ceiling: no pause */
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_write(req, size);
		return;
	}
	*d = (struct deferred){.fs = fs, .i = i, .req = req, .count = size, .dirtied = due};
	defer(d);
}

static bool host_gone(void *arg)
{
	return machine_host_gone(arg);
}

/* fsync's writeback of one page in the writer's own name (filemap_fdatawrite -> do_writepages
 * -> submit_bio, in the fsync caller's context): with the machine's 3.x request list the
 * writer first takes a request, asleep in get_request_wait while the list is full
 * (block/blk-core.c, 3.2). This runs on the FSYNC's own thread, so only that request's reply
 * waits (the program's fsync(2) blocks in its FUSE request, as in the kernel's); the workers
 * that serve the engine's WRITEs, whose completions free requests, never sleep here. */
static void writeout_page(struct fdev_mach *x, uint64_t owner, uint32_t pfn)
{
	static __thread struct rql_ioc ioc; /* the writer's io_context: its batch */
	uint64_t off = __atomic_load_n(&x->m.hdr->rqs_off, __ATOMIC_ACQUIRE);
	struct rqs *rqs = off ? machine_at(&x->m, off) : NULL;
	int rc;

	if (!rqs) {
		machine_request(&x->m, 0, MACHINE_REQ_WRITEOUT, owner, pfn, 0, WRITEOUT_TIMEOUT);
		return;
	}
	if (rqs_get(rqs, RQL_ASYNC, &ioc, RQS_WRITER, FSYNC_POLL_NS * 5, host_gone, &x->m, NULL) <
	    0)
		return; /* the host is gone */
	rc = machine_request(&x->m, 0, MACHINE_REQ_WRITEOUT, owner, pfn, MACHINE_WRITEOUT_HELD,
			     WRITEOUT_TIMEOUT);
	if (rc == -EBUSY) /* withdrawn before the host took it: the request is still ours */
		rqs_put(rqs, RQL_ASYNC, -1, NULL);
}

/* Every page of i that is dirty gets its writeback started (by the host's engine); then wait
 * until none is dirty or under writeback. 0 or -ETIMEDOUT. */
static int file_sync(struct fdev_mach *x, struct fdev_inode *i)
{
	uint64_t id = file_id(i), npages, deadline = clock_now_ns() + FSYNC_TIMEOUT;

	pthread_mutex_lock(&i->lock);
	npages = i->pc_pages;
	pthread_mutex_unlock(&i->lock);
	stat_add(&x->w->fsyncs, 1);
	for (;;) {
		bool pending = false;

		for (uint64_t p = 0; p < npages; p++) {
			uint64_t owner = MM_OWNER_FILE(id, p);
			uint32_t pfn;
			int st = mm_pagecache_peek(x->mm, owner, &pfn);

			if (st <= 0)
				continue;
			pending = true;
			if (st & MM_PC_DIRTY && !(st & MM_PC_WRITEBACK))
				writeout_page(x, owner, pfn);
		}
		{
			struct mm_counts c;

			mm_get_counts(x->mm, &c);
			stat_max(&x->w->writeback_max, c.file_writeback);
		}
		if (!pending)
			return 0;
		if (clock_now_ns() >= deadline) {
			stat_add(&x->w->fsync_timeouts, 1);
			return -ETIMEDOUT;
		}
		nap(FSYNC_POLL_NS);
	}
}

void fdev_machine_fsync(struct fdev *fs, fuse_req_t req, struct fdev_inode *i)
{
	struct deferred *d = calloc(1, sizeof(*d));

	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*d = (struct deferred){.fs = fs, .i = i, .req = req, .fsync = true};
	defer(d);
}

/* truncate_inode_pages_range(): pages at and beyond size leave the page cache. */
void fdev_machine_truncate(struct fdev *fs, struct fdev_inode *i, uint64_t size)
{
	struct fdev_mach *x = __atomic_load_n(&fs->mach, __ATOMIC_ACQUIRE);
	uint64_t from = (size + PAGE - 1) / PAGE, to;

	if (!x || i->kind != FDEV_REG || i->engine)
		return;
	pthread_mutex_lock(&i->lock);
	to = i->pc_pages;
	if (from < to)
		i->pc_pages = from;
	pthread_mutex_unlock(&i->lock);
	for (uint64_t p = from; p < to; p++)
		mm_pagecache_remove(x->mm, MM_OWNER_FILE(file_id(i), p));
}
