/* The liburing backend: the flusher's requests become IORING_OP_WRITEV / READV / FSYNC on files
 * of the device mount (submit_bio and its completion interrupt, end_bio_bh_io_sync).
 *
 * One ring, owned by the flusher thread. Other threads wake it through an eventfd that the ring
 * itself reads (an IORING_OP_READ kept armed), so the flusher sleeps in one place,
 * io_uring_submit_and_wait_timeout(), for completions, kicks and its tick alike. A timed-out
 * request is cancelled with IORING_OP_ASYNC_CANCEL (the engine abandons it if that does not
 * work: a FUSE request already sent to a daemon that never answers cannot be cancelled).
 */
#include "io/io_internal.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#define TAG_KICK   1ULL
#define TAG_CANCEL 2ULL

struct uring_be {
	struct io_uring ring;
	int efd;       /* kicks */
	uint64_t ebuf; /* the eventfd's counter, read by the ring */
	bool armed;    /* a read of efd is in the ring */
};

static struct uring_be *UB(struct io *io)
{
	return io->be_priv;
}

static struct io_uring_sqe *get_sqe(struct uring_be *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

	if (!sqe) { /* the SQ is full: push it to the kernel and try again */
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	return sqe;
}

static void arm_kick(struct uring_be *b)
{
	struct io_uring_sqe *sqe;

	if (b->armed)
		return;
	sqe = get_sqe(b);
	if (!sqe)
		return;
	io_uring_prep_read(sqe, b->efd, &b->ebuf, sizeof(b->ebuf), 0);
	io_uring_sqe_set_data64(sqe, TAG_KICK);
	b->armed = true;
}

static int ub_submit(struct io *io, struct io_req *r)
{
	struct uring_be *b = UB(io);
	struct io_uring_sqe *sqe = get_sqe(b);
	int fd = r->file ? r->file->fd : -1;

	if (!sqe)
		return -EBUSY;
	switch (r->kind) {
	case IOR_WRITE:
		io_uring_prep_writev(sqe, fd, r->iov, r->npages, r->off);
		break;
	case IOR_READ:
		io_uring_prep_readv(sqe, fd, r->iov, r->npages, r->off);
		break;
	case IOR_META:
		io_uring_prep_write(sqe, io->manifest_fd, r->meta, r->meta_len, r->off);
		break;
	default:
		io_uring_prep_fsync(sqe, fd, 0);
		break;
	}
	io_uring_sqe_set_data(sqe, r);
	return 0;
}

static void ub_cancel(struct io *io, struct io_req *r)
{
	struct io_uring_sqe *sqe = get_sqe(UB(io));

	if (!sqe)
		return;
	io_uring_prep_cancel(sqe, r, 0);
	io_uring_sqe_set_data64(sqe, TAG_CANCEL);
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
		else if (tag != TAG_CANCEL)
			io_complete(io, (struct io_req *)(uintptr_t)tag, res);
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
	ssize_t n = write(UB(io)->efd, &one, sizeof(one));

	(void)n; /* only fails if the counter would overflow: a wake-up is pending anyway */
}

static void ub_destroy(struct io *io)
{
	struct uring_be *b = UB(io);

	if (!b)
		return;
	io_uring_queue_exit(&b->ring);
	close(b->efd);
	io_unmap(b, sizeof(*b));
	io->be_priv = NULL;
}

static const struct io_backend_ops uring_ops = {
    .name = "io_uring",
    .submit = ub_submit,
    .cancel = ub_cancel,
    .wait = ub_wait,
    .kick = ub_kick,
    .destroy = ub_destroy,
};

int io_uring_backend_init(struct io *io, char *err, size_t errlen)
{
	struct uring_be *b = io_map(sizeof(*b)); /* handlers kick through it */
	unsigned entries = 8;
	int rc;

	if (!b)
		return -ENOMEM;
	while (entries < io->nreqs * 2 + 8)
		entries *= 2;
	b->efd = eventfd(0, EFD_CLOEXEC); /* blocking: the ring polls it */
	rc = b->efd < 0 ? -errno : io_uring_queue_init(entries, &b->ring, 0);
	if (rc < 0) {
		snprintf(err, errlen, "io_uring: cannot set up a ring of %u entries: %s", entries,
			 strerror(-rc));
		if (b->efd >= 0)
			close(b->efd);
		io_unmap(b, sizeof(*b));
		return rc;
	}
	io->be = &uring_ops;
	io->be_priv = b;
	return 0;
}
