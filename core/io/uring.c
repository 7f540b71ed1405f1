/* The liburing backend: the flusher's requests become IORING_OP_WRITEV / READV / FSYNC / WRITE on
 * files of the device mount (submit_bio and its completion interrupt, end_bio_bh_io_sync).
 *
 * One ring, owned by the flusher thread. Other threads wake it through an eventfd that the ring
 * itself reads (an IORING_OP_READ kept armed), so the flusher sleeps in one place,
 * io_uring_submit_and_wait_timeout(), for completions, kicks and its tick alike. A timed-out
 * request is cancelled with IORING_OP_ASYNC_CANCEL (the engine abandons it if that does not
 * work: a FUSE request already sent to a daemon that never answers cannot be cancelled).
 *
 * Files are never open in the process's descriptor table: the ring has a table of registered
 * files (sparse, one slot per request the engine can have at the device, plus the manifest in
 * slot 0), a request's file is opened straight into a slot by an IORING_OP_OPENAT linked ahead
 * of it when it holds none (a "direct" descriptor), and a slot not used by any request in flight
 * is taken over by the next file that needs one (least recently used first). So the program can
 * never close, reuse or receive a descriptor the engine writes through, and the engine holds two
 * descriptors whatever the workload: the ring's and the eventfd's, both in core/inprocess's zone.
 */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "inprocess/guard.h"

#define TAG_KICK      1ULL
#define TAG_CANCEL    2ULL
#define TAG_OPEN      4ULL /* | request pointer (8-byte aligned): the open linked ahead of it */
#define SLOT_MANIFEST 0

struct uring_be {
	struct io_uring ring;
	int efd;       /* kicks */
	uint64_t ebuf; /* the eventfd's counter, read by the ring */
	bool armed;    /* a read of efd is in the ring */
	unsigned nslots;
	struct io_file **slot_file; /* which file holds each slot (files_lock); [0] = manifest */
	char (*slot_path)[IO_PATH_MAX]; /* the path an open into the slot reads at submission */
	uint64_t tick;			/* LRU clock (flusher) */
};

static struct uring_be *UB(struct io *io)
{
	return io->be_priv;
}

/* Room for n linked SQEs in one submission (a link must not straddle two). */
static bool reserve_sqes(struct uring_be *b, unsigned n)
{
	if (io_uring_sq_space_left(&b->ring) < n)
		io_uring_submit(&b->ring);
	return io_uring_sq_space_left(&b->ring) >= n;
}

static void arm_kick(struct uring_be *b)
{
	struct io_uring_sqe *sqe;

	if (b->armed || !reserve_sqes(b, 1))
		return;
	sqe = io_uring_get_sqe(&b->ring);
	io_uring_prep_read(sqe, b->efd, &b->ebuf, sizeof(b->ebuf), 0);
	io_uring_sqe_set_data64(sqe, TAG_KICK);
	b->armed = true;
}

/* The slot for r's file: the one it holds, else a free one or the least recently used one no
 * request in flight uses (there are more slots than requests). *open says the file must be
 * opened into it first. Flusher only. */
static int take_slot(struct io *io, struct uring_be *b, struct io_file *f, bool *open)
{
	int best = -1;

	pthread_mutex_lock(&io->files_lock);
	*open = f->slot < 0 || !f->opened; /* an open still in flight does not order this one */
	if (f->slot >= 0) {
		best = f->slot;
		goto out;
	}
	for (unsigned s = SLOT_MANIFEST + 1; s < b->nslots; s++) {
		struct io_file *g = b->slot_file[s];

		if (!g) {
			best = (int)s;
			break;
		}
		if (!g->busy && (best < 0 || g->used < b->slot_file[best]->used))
			best = (int)s;
	}
	if (best < 0)
		goto out;
	if (b->slot_file[best]) { /* the open replaces its file in the slot */
		b->slot_file[best]->slot = -1;
		b->slot_file[best]->opened = false;
	}
	b->slot_file[best] = f;
	f->slot = best;
	io_file_path(io, f->id, b->slot_path[best], sizeof(b->slot_path[best]));
out:
	if (best >= 0) {
		f->busy++;
		f->used = ++b->tick;
	}
	pthread_mutex_unlock(&io->files_lock);
	return best;
}

static int ub_submit(struct io *io, struct io_req *r)
{
	struct uring_be *b = UB(io);
	struct io_uring_sqe *sqe;
	bool open = false;
	int slot = SLOT_MANIFEST;

	r->open_res = 0;
	if (!reserve_sqes(b, 2))
		return -EBUSY;
	if (r->kind != IOR_META) {
		slot = r->file ? take_slot(io, b, r->file, &open) : -EBADF;
		if (slot < 0)
			return slot < -1 ? slot : -EBUSY;
	}
	if (open) {
		int flags = O_RDWR | (io->odirect ? O_DIRECT : 0); /* no O_CLOEXEC: direct */

		sqe = io_uring_get_sqe(&b->ring);
		io_uring_prep_openat_direct(sqe, AT_FDCWD, b->slot_path[slot], flags, 0,
					    (unsigned)slot);
		sqe->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(sqe, TAG_OPEN | (uint64_t)(uintptr_t)r);
	}
	sqe = io_uring_get_sqe(&b->ring);
	switch (r->kind) {
	case IOR_WRITE:
		io_uring_prep_writev(sqe, slot, r->iov, r->npages, r->off);
		break;
	case IOR_READ:
		io_uring_prep_readv(sqe, slot, r->iov, r->npages, r->off);
		break;
	case IOR_META:
		io_uring_prep_write(sqe, slot, r->meta, r->meta_len, r->off);
		break;
	default:
		io_uring_prep_fsync(sqe, slot, 0);
		break;
	}
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, r);
	return 0;
}

/* Queues an IORING_OP_ASYNC_CANCEL of the request tagged user_data (flags 0), or of whatever
 * flags say. */
static void queue_cancel(struct uring_be *b, uint64_t user_data, int flags)
{
	struct io_uring_sqe *sqe;

	if (!reserve_sqes(b, 1))
		return;
	sqe = io_uring_get_sqe(&b->ring);
	io_uring_prep_cancel64(sqe, user_data, flags);
	io_uring_sqe_set_data64(sqe, TAG_CANCEL);
}

static void ub_cancel(struct io *io, struct io_req *r)
{
	queue_cancel(UB(io), (uint64_t)(uintptr_t)r, 0);
}

/* At the flusher's exit, which waits for the ring's workers: a worker waiting on a request the
 * device still holds is told to give up (io-wq's signal, FUSE_INTERRUPT to the daemon), else
 * the exit waits for everything the device holds. thpemu-fusedev answers such an interrupt
 * at once (fusedev/ioq.c); another filesystem may ignore it, and the exit waits as before. */
static void ub_cancel_all(struct io *io)
{
	struct uring_be *b = UB(io);

	queue_cancel(b, 0, IORING_ASYNC_CANCEL_ANY);
	io_uring_submit(&b->ring);
}

/* The open linked ahead of r completed: later requests need no open of their own. */
static void open_done(struct io *io, struct uring_be *b, struct io_req *r)
{
	struct io_file *f = r->file;

	pthread_mutex_lock(&io->files_lock);
	if (f && f->slot >= 0 && b->slot_file[f->slot] == f)
		f->opened = true;
	pthread_mutex_unlock(&io->files_lock);
}

/* The open linked ahead of r failed: the file holds no slot, and r (cancelled by the kernel
 * as the rest of the link) fails with the open's error. */
static void open_failed(struct io *io, struct uring_be *b, struct io_req *r, int res)
{
	struct io_file *f = r->file;

	r->open_res = res;
	pthread_mutex_lock(&io->files_lock);
	if (f && f->slot >= 0 && b->slot_file[f->slot] == f) {
		b->slot_file[f->slot] = NULL;
		f->slot = -1;
		f->opened = false;
	}
	pthread_mutex_unlock(&io->files_lock);
}

static void request_done(struct io *io, struct io_req *r, int res)
{
	if (r->kind != IOR_META && r->file) {
		pthread_mutex_lock(&io->files_lock);
		r->file->busy--;
		pthread_mutex_unlock(&io->files_lock);
	}
	if (res == -ECANCELED && r->open_res)
		res = r->open_res;
	io_complete(io, r, res);
}

static void reap(struct io *io, struct uring_be *b)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
		uint64_t tag = cqe->user_data;
		int res = cqe->res;

		io_uring_cqe_seen(&b->ring, cqe);
		if (tag == TAG_KICK)
			b->armed = false;
		else if (tag == TAG_CANCEL)
			continue;
		else if (tag & TAG_OPEN) {
			struct io_req *r = (struct io_req *)(uintptr_t)(tag & ~TAG_OPEN);

			if (res < 0)
				open_failed(io, b, r, res);
			else
				open_done(io, b, r);
		} else {
			request_done(io, (struct io_req *)(uintptr_t)tag, res);
		}
	}
}

static void ub_wait(struct io *io, uint64_t timeout_ns)
{
	struct uring_be *b = UB(io);
	struct __kernel_timespec ts = {.tv_sec = (long long)(timeout_ns / 1000000000ULL),
				       .tv_nsec = (long long)(timeout_ns % 1000000000ULL)};
	struct io_uring_cqe *cqe;

	arm_kick(b);
	io_uring_submit_and_wait_timeout(&b->ring, &cqe, 1, &ts, NULL);
	reap(io, b);
}

static void ub_kick(struct io *io)
{
	uint64_t one = 1;

	/* fails only if the counter would overflow: a wake-up is pending anyway */
	sys_write(UB(io)->efd, &one, sizeof(one));
}

/* files_lock held. Closing the slot now frees the space of an unlinked file at once. */
static void ub_forget(struct io *io, struct io_file *f)
{
	struct uring_be *b = UB(io);
	int none = -1;

	if (f->slot < 0 || b->slot_file[f->slot] != f)
		return;
	b->slot_file[f->slot] = NULL;
	io_uring_register_files_update(&b->ring, (unsigned)f->slot, &none, 1);
	f->slot = -1;
	f->opened = false;
}

static void ub_destroy(struct io *io)
{
	struct uring_be *b = UB(io);

	if (!b)
		return;
	if (b->ring.ring_fd >= 0) {
		guard_fd_close(b->ring.ring_fd); /* the ring, its registered files and workers */
		b->ring.ring_fd = b->ring.enter_ring_fd = -1;
		io_uring_queue_exit(&b->ring); /* unmaps the rings */
	}
	guard_fd_close(b->efd);
	io_unmap(b->slot_file, b->nslots * sizeof(*b->slot_file));
	io_unmap(b->slot_path, b->nslots * sizeof(*b->slot_path));
	io_unmap(b, sizeof(*b));
	io->be_priv = NULL;
}

static const struct io_backend_ops uring_ops = {
    .name = "io_uring",
    .submit = ub_submit,
    .cancel = ub_cancel,
    .cancel_all = ub_cancel_all,
    .wait = ub_wait,
    .kick = ub_kick,
    .forget = ub_forget,
    .destroy = ub_destroy,
};

/* The ring's table of registered files, with the manifest in slot 0. */
static int slots_init(struct io *io, struct uring_be *b)
{
	char path[IO_PATH_MAX];
	int rc, fd;

	b->nslots = io->nreqs + 1;
	b->slot_file = io_map(b->nslots * sizeof(*b->slot_file));
	b->slot_path = io_map(b->nslots * sizeof(*b->slot_path));
	if (!b->slot_file || !b->slot_path)
		return -ENOMEM;
	rc = io_uring_register_files_sparse(&b->ring, b->nslots);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", io->dir, IO_MANIFEST_NAME);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = io_uring_register_files_update(&b->ring, SLOT_MANIFEST, &fd, 1);
	sys_close(fd); /* the ring holds the file now */
	return rc < 0 ? rc : 0;
}

/* The ring and the eventfd go to core/inprocess's zone, out of the program's reach. */
static int ring_init(struct io *io, struct uring_be *b, unsigned entries)
{
	int rc, fd;

	b->ring.ring_fd = -1;
	b->efd = guard_fd_own(eventfd(0, EFD_CLOEXEC)); /* blocking: the ring polls it */
	if (b->efd < 0)
		return b->efd == -1 ? -errno : b->efd;
	rc = io_uring_queue_init(entries, &b->ring, 0);
	if (rc < 0) {
		b->ring.ring_fd = -1;
		return rc;
	}
	fd = guard_fd_own(b->ring.ring_fd);
	b->ring.ring_fd = b->ring.enter_ring_fd = fd;
	if (fd < 0) {
		io_uring_queue_exit(&b->ring);
		b->ring.ring_fd = -1;
		return fd;
	}
	return slots_init(io, b);
}

int io_uring_backend_init(struct io *io, char *err, size_t errlen)
{
	struct uring_be *b = io_map(sizeof(*b)); /* handlers kick through it */
	unsigned entries = 8;
	int rc;

	if (!b)
		return -ENOMEM;
	while (entries < io->nreqs * 3 + 8) /* a write, the open linked ahead, a cancel */
		entries *= 2;
	io->be = &uring_ops;
	io->be_priv = b;
	rc = ring_init(io, b, entries);
	if (rc < 0) {
		snprintf(err, errlen, "io_uring: cannot set up a ring of %u entries: %s", entries,
			 strerror(-rc));
		ub_destroy(io);
		io->be = NULL;
	}
	return rc;
}
