/* fusedev_io: the writer/reader the fusedev integration tests and benchmark drive.
 *
 * Writes or verifies a file with a deterministic pattern, the way thpemu's writeback does:
 * O_DIRECT from page-aligned buffers, the file pre-sized with ftruncate or fallocate so writes
 * never extend it, several writes in flight through io_uring (or one at a time with pwrite).
 *
 *   fusedev_io write FILE SIZE [--bs SIZE] [--qd N] [--direct] [--presize none|truncate|fallocate]
 *                              [--seed N] [--fsync] [--cancel-after DUR] [--signal-after DUR]
 *   fusedev_io verify FILE SIZE [--bs SIZE] [--seed N] [--direct]
 *
 * Prints one line "key=value ..." (elapsed_s, bytes, mb_per_s, error) and exits 0 on success,
 * 1 on an I/O error (error=EIO etc., the errno name of the first failure), 2 on bad usage.
 *
 * --cancel-after DUR (with --qd > 1): DUR after the start, cancel everything in flight with an
 * IORING_OP_ASYNC_CANCEL (IORING_ASYNC_CANCEL_ANY), and again every 100 ms until nothing is
 * left, as thpemu's flusher does at its exit.
 * --signal-after DUR: DUR after the start, a SIGALRM (handler installed with SA_RESTART) reaches
 * the writing thread, as a program's timer would.
 */
#include "util/clock.h"
#include "util/units.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

struct args {
	const char *mode, *file;
	uint64_t size, bs, seed;
	uint64_t cancel_after_ns, signal_after_ns; /* 0: none */
	unsigned qd;
	bool direct, fsync;
	const char *presize;
};

/* The pattern: 8-byte words derived from their file offset and the seed (offsets are
 * multiples of 8, so any block can be regenerated independently). */
static void fill(char *buf, uint64_t off, uint64_t len, uint64_t seed)
{
	uint64_t n = len / 8, w = off / 8, tail;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = (w + i) * 0x9e3779b97f4a7c15ULL ^ seed;

		memcpy(buf + i * 8, &v, 8);
	}
	if (len % 8) {
		tail = (w + n) * 0x9e3779b97f4a7c15ULL ^ seed;
		memcpy(buf + n * 8, &tail, len % 8);
	}
}

static const char *errname(int e)
{
	switch (e) {
	case EIO:
		return "EIO";
	case ENOSPC:
		return "ENOSPC";
	case ENOTCONN:
		return "ENOTCONN";
	case ECONNABORTED:
		return "ECONNABORTED";
	case EINTR:
		return "EINTR";
	case EINVAL:
		return "EINVAL";
	default:
		return strerrorname_np(e) ? strerrorname_np(e) : "E?";
	}
}

static int report(const struct args *a, uint64_t t0, uint64_t bytes, int err, uint64_t at)
{
	double s = (clock_now_ns() - t0) / 1e9;

	printf("elapsed_s=%.6f bytes=%llu mb_per_s=%.3f error=%s", s, (unsigned long long)bytes,
	       s > 0 ? bytes / s / 1e6 : 0, err ? errname(err) : "none");
	if (err)
		printf(" at=%llu", (unsigned long long)at);
	printf("\n");
	fflush(stdout);
	return err ? 1 : 0;
}

static int presize(const struct args *a, int fd)
{
	if (!strcmp(a->presize, "truncate"))
		return ftruncate(fd, (off_t)a->size) ? -errno : 0;
	if (!strcmp(a->presize, "fallocate"))
		return fallocate(fd, 0, 0, (off_t)a->size) ? -errno : 0;
	return 0;
}

#define CANCEL_TAG	UINT64_MAX
#define CANCEL_AGAIN_NS 100000000ULL

static void on_alarm(int sig)
{
	(void)sig;
}

/* A SIGALRM after ns, to a handler that returns (SA_RESTART): what a program's timer does. */
static void arm_alarm(uint64_t ns)
{
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	struct itimerval it = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ULL),
					    .tv_usec = (suseconds_t)(ns % 1000000000ULL / 1000)}};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/* Writes with up to qd requests in flight through io_uring; buffer slots are recycled as their
 * requests complete (in whatever order that is). */
static int write_uring(const struct args *a, int fd, char *bufs, uint64_t *done, uint64_t *at)
{
	uint64_t *slot_off = calloc(a->qd, sizeof(*slot_off));
	unsigned *free_slots = calloc(a->qd, sizeof(*free_slots)), nfree = a->qd;
	uint64_t next = 0, inflight = 0;
	uint64_t cancel_at = a->cancel_after_ns ? clock_now_ns() + a->cancel_after_ns : 0;
	struct io_uring ring;
	int err = -ENOMEM, werr;

	if (!slot_off || !free_slots)
		goto out_free;
	for (unsigned i = 0; i < a->qd; i++)
		free_slots[i] = i;
	err = io_uring_queue_init(a->qd + 1, &ring, 0); /* + the cancel */
	if (err)
		goto out_free;
	while (next < a->size || inflight) {
		struct io_uring_cqe *cqe;
		unsigned slot;

		while (next < a->size && nfree) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint64_t len = a->size - next < a->bs ? a->size - next : a->bs;

			slot = free_slots[--nfree];
			fill(bufs + slot * a->bs, next, len, a->seed);
			io_uring_prep_write(sqe, fd, bufs + slot * a->bs, (unsigned)len, next);
			io_uring_sqe_set_data64(sqe, slot);
			slot_off[slot] = next;
			next += len;
			inflight++;
		}
		io_uring_submit(&ring);
		if (cancel_at && clock_now_ns() >= cancel_at) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
			io_uring_sqe_set_data64(sqe, CANCEL_TAG);
			io_uring_submit(&ring);
			/* again later: a write the kernel splits into several FUSE requests goes on
			 * with the next one after its current one is interrupted */
			cancel_at = clock_now_ns() + CANCEL_AGAIN_NS;
			next = a->size; /* submit nothing more */
		}
		if (cancel_at) {
			uint64_t now = clock_now_ns(), left = cancel_at > now ? cancel_at - now : 0;
			struct __kernel_timespec ts = {.tv_sec = (long long)(left / 1000000000ULL),
						       .tv_nsec =
							   (long long)(left % 1000000000ULL)};

			werr = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
			if (werr == -ETIME)
				continue;
		} else {
			werr = io_uring_wait_cqe(&ring, &cqe);
		}
		if (werr) {
			err = werr;
			break;
		}
		if (io_uring_cqe_get_data64(cqe) == CANCEL_TAG) {
			io_uring_cqe_seen(&ring, cqe);
			continue;
		}
		slot = (unsigned)io_uring_cqe_get_data64(cqe);
		if (cqe->res < 0) {
			if (!err) {
				err = cqe->res;
				*at = slot_off[slot];
			}
			next = a->size; /* drain what is in flight, submit nothing more */
		} else {
			*done += (uint64_t)cqe->res;
		}
		io_uring_cqe_seen(&ring, cqe);
		free_slots[nfree++] = slot;
		inflight--;
	}
	io_uring_queue_exit(&ring);
out_free:
	free(slot_off);
	free(free_slots);
	return err;
}

static int write_sync(const struct args *a, int fd, char *buf, uint64_t *done, uint64_t *at)
{
	for (uint64_t off = 0; off < a->size; off += a->bs) {
		uint64_t len = a->size - off < a->bs ? a->size - off : a->bs;
		ssize_t w;

		fill(buf, off, len, a->seed);
		w = pwrite(fd, buf, len, (off_t)off);
		if (w < 0) {
			*at = off;
			return -errno;
		}
		*done += (uint64_t)w;
	}
	return 0;
}

static int do_write(const struct args *a)
{
	uint64_t t0, done = 0, at = 0;
	int fd, err;
	char *bufs;

	fd = open(a->file, O_WRONLY | O_CREAT | (a->direct ? O_DIRECT : 0), 0644);
	if (fd < 0)
		return report(a, clock_now_ns(), 0, errno, 0);
	if (posix_memalign((void **)&bufs, 4096, a->bs * a->qd))
		return 2;
	err = presize(a, fd);
	t0 = clock_now_ns();
	if (a->signal_after_ns)
		arm_alarm(a->signal_after_ns);
	if (!err)
		err = a->qd > 1 ? write_uring(a, fd, bufs, &done, &at)
				: write_sync(a, fd, bufs, &done, &at);
	if (!err && a->fsync && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	free(bufs);
	return report(a, t0, done, -err, at);
}

static int do_verify(const struct args *a)
{
	uint64_t t0 = clock_now_ns(), off;
	char *buf = NULL, *want = malloc(a->bs);
	int fd = open(a->file, O_RDONLY | (a->direct ? O_DIRECT : 0)), err = 0;

	if (fd < 0)
		return report(a, t0, 0, errno, 0);
	if (!want || posix_memalign((void **)&buf, 4096, a->bs))
		return 2;
	for (off = 0; off < a->size && !err; off += a->bs) {
		uint64_t len = a->size - off < a->bs ? a->size - off : a->bs;
		ssize_t r = pread(fd, buf, len, (off_t)off);

		if (r < 0) {
			err = errno;
			break;
		}
		fill(want, off, len, a->seed);
		if ((uint64_t)r != len || memcmp(buf, want, len)) {
			printf("mismatch_at=%llu ", (unsigned long long)off);
			err = EILSEQ;
			break;
		}
	}
	close(fd);
	free(buf);
	free(want);
	return report(a, t0, off, err, off);
}

static int usage(void)
{
	fprintf(stderr, "usage: fusedev_io write|verify FILE SIZE [--bs SIZE] [--qd N] [--direct] "
			"[--presize none|truncate|fallocate] [--seed N] [--fsync] "
			"[--cancel-after DUR] [--signal-after DUR]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct args a = {.bs = 1 << 20, .qd = 1, .seed = 1, .presize = "truncate"};
	uint64_t v;

	if (argc < 4 || units_parse_size(argv[3], &a.size))
		return usage();
	a.mode = argv[1];
	a.file = argv[2];
	for (int i = 4; i < argc; i++) {
		const char *o = argv[i], *v1 = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--direct"))
			a.direct = true;
		else if (!strcmp(o, "--fsync"))
			a.fsync = true;
		else if (!strcmp(o, "--bs") && v1 && !units_parse_size(v1, &a.bs) && a.bs && ++i)
			;
		else if (!strcmp(o, "--qd") && v1 && !units_parse_uint(v1, 256, &v) && v && ++i)
			a.qd = (unsigned)v;
		else if (!strcmp(o, "--seed") && v1 && !units_parse_uint(v1, UINT64_MAX, &a.seed) &&
			 ++i)
			;
		else if (!strcmp(o, "--cancel-after") && v1 &&
			 !units_parse_duration(v1, &a.cancel_after_ns) && a.cancel_after_ns && ++i)
			;
		else if (!strcmp(o, "--signal-after") && v1 &&
			 !units_parse_duration(v1, &a.signal_after_ns) && a.signal_after_ns && ++i)
			;
		else if (!strcmp(o, "--presize") && v1 && ++i)
			a.presize = v1;
		else
			return usage();
	}
	if (a.cancel_after_ns && a.qd < 2)
		return usage(); /* a cancel needs the ring */
	if (!strcmp(a.mode, "write"))
		return do_write(&a);
	if (!strcmp(a.mode, "verify"))
		return do_verify(&a);
	return usage();
}
