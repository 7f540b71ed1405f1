/* io_bench: what core/io costs against floors measured in the same run.
 *
 *   io_bench wake                 wake-up round trip through the hashed futex waitqueue (a
 *                                 writeback wait woken by its completion) against a bare futex
 *                                 round trip between the same two threads
 *   io_bench writeback DIR        writeback throughput of the engine (pages dirtied through the
 *                                 page cache, written back by the flusher with vectored O_DIRECT
 *                                 io_uring writes) against direct O_DIRECT io_uring writes of the
 *                                 same request size and depth to the same filesystem
 *
 * THPEMU_PERF_QUICK=1: short runs. Best of several interleaved repetitions; ratios are what to
 * compare across machines. Nothing is asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"
#include "util/clock.h"

static bool quick;

/* ---- wake-up latency ------------------------------------------------------------------------- */

static uint32_t word[2];    /* bare futex: whose turn it is */
static atomic_bool busy[2]; /* waitq: "frame under writeback" of each side */
static struct waitq wq;
static unsigned rounds;

static void fwait(uint32_t *w, uint32_t val)
{
	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == val)
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void fwake(uint32_t *w)
{
	__atomic_fetch_add(w, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *futex_peer(void *arg)
{
	for (unsigned i = 0; i < rounds; i++) {
		fwait(&word[1], i);
		fwake(&word[0]);
	}
	return NULL;
}

static bool is_busy(void *arg, uint64_t key)
{
	return atomic_load(&busy[key & 1]);
}

static void *waitq_peer(void *arg)
{
	for (unsigned i = 0; i < rounds; i++) {
		waitq_wait(&wq, 1, is_busy, NULL, 0); /* until side 1's "writeback" completes */
		atomic_store(&busy[1], true);
		atomic_store(&busy[0], false); /* complete side 0's */
		waitq_wake(&wq, 0);
	}
	return NULL;
}

static double futex_rt_ns(void)
{
	pthread_t th;
	uint64_t t0;

	word[0] = word[1] = 0;
	pthread_create(&th, NULL, futex_peer, NULL);
	t0 = clock_now_ns();
	for (unsigned i = 0; i < rounds; i++) {
		fwake(&word[1]);
		fwait(&word[0], i);
	}
	t0 = clock_now_ns() - t0;
	pthread_join(th, NULL);
	return (double)t0 / rounds;
}

static double waitq_rt_ns(void)
{
	pthread_t th;
	uint64_t t0;

	waitq_init(&wq);
	atomic_store(&busy[0], true);
	atomic_store(&busy[1], true);
	pthread_create(&th, NULL, waitq_peer, NULL);
	t0 = clock_now_ns();
	for (unsigned i = 0; i < rounds; i++) {
		atomic_store(&busy[0], true);
		atomic_store(&busy[1], false);
		waitq_wake(&wq, 1);
		waitq_wait(&wq, 0, is_busy, NULL, 0);
	}
	t0 = clock_now_ns() - t0;
	pthread_join(th, NULL);
	return (double)t0 / rounds;
}

static int bench_wake(void)
{
	double bf = 1e18, bw = 1e18;
	int reps = quick ? 3 : 7;

	rounds = quick ? 20000 : 200000;
	for (int r = 0; r < reps; r++) { /* interleaved: host load hits both */
		double f = futex_rt_ns(), w = waitq_rt_ns();

		bf = f < bf ? f : bf;
		bw = w < bw ? w : bw;
	}
	printf("wake round trip: waitq %.2f us, bare futex %.2f us, ratio %.2f (best of %d x %u)\n",
	       bw / 1000, bf / 1000, bw / bf, reps, rounds);
	return 0;
}

/* ---- writeback throughput -------------------------------------------------------------------- */

#define REQ   (120ULL << 10) /* the engine's default max-request */
#define DEPTH 32

/* Floor: O_DIRECT io_uring writes of REQ bytes, DEPTH in flight, to a pre-sized file. */
static double direct_mbps(const char *dir, uint64_t bytes)
{
	char path[600];
	struct io_uring ring;
	void *buf;
	uint64_t off = 0, done = 0, t0;
	unsigned inflight = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/direct.bench", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0 || posix_memalign(&buf, 4096, REQ) ||
	    io_uring_queue_init(64, &ring, 0) < 0) {
		perror("direct");
		exit(1);
	}
	memset(buf, 0x5a, REQ);
	t0 = clock_now_ns();
	while (done < bytes) {
		struct io_uring_cqe *cqe;

		while (inflight < DEPTH && off < bytes) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint64_t n = bytes - off < REQ ? bytes - off : REQ;

			io_uring_prep_write(sqe, fd, buf, (unsigned)n, off);
			off += n;
			inflight++;
		}
		io_uring_submit_and_wait(&ring, 1);
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			if (cqe->res < 0) {
				fprintf(stderr, "direct: %s\n", strerror(-cqe->res));
				exit(1);
			}
			done += (uint64_t)cqe->res;
			inflight--;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	t0 = clock_now_ns() - t0;
	io_uring_queue_exit(&ring);
	close(fd);
	unlink(path);
	free(buf);
	return (double)bytes / 1048576.0 / ((double)t0 / 1e9);
}

/* A live-like environment: real clock, a mutex, waits on the waitqueue. */
static pthread_mutex_t mm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mm *bmm;
static struct io *bio;

static uint64_t e_now(void *priv, void *call)
{
	return clock_now_ns();
}

static void e_lock(void *priv)
{
	pthread_mutex_lock(&mm_lock);
}

static void e_unlock(void *priv)
{
	pthread_mutex_unlock(&mm_lock);
}

static bool frame_busy(void *arg, uint64_t pfn)
{
	return mm_frame_under_writeback(bmm, (uint32_t)pfn);
}

static int e_wait(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	return waitq_wait(&wq, pfn, frame_busy, NULL, timeout_ns);
}

static int e_copy(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	return io_copy_file_page(bio, owner, from, to);
}

static int e_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	return io_writeout(bio, owner, pfn);
}

static uint64_t e_clear(void *priv, void *call, uint32_t head, uint64_t owner)
{
	return 0;
}

static void e_cost(void *priv, void *call, enum mm_cost what, uint64_t n)
{
}

static const struct mm_env_ops e_ops = {
    .now = e_now,
    .lock = e_lock,
    .unlock = e_unlock,
    .wait_writeback = e_wait,
    .copy_file_page = e_copy,
    .clear_huge = e_clear,
    .alloc_cost = e_cost,
    .writeout = e_writeout,
};

static uint64_t bench_file_id = IO_WRITER_ID_BASE;

/* The engine: dirty `bytes` through the page cache in 8 MiB files, then wait until written.
 * *dirty_s: how long dirtying took (writeback runs meanwhile, above the background ratio). */
static double engine_mbps(const char *dir, uint64_t bytes, double *dirty_s)
{
	struct mm_config mc = {.pool_bytes = bytes * 2};
	struct mm_env env = {.ops = &e_ops};
	struct io_config cfg = {.seed = 1};
	static struct io_stats st;
	struct io_env ienv = {.stats = &st, .wq = &wq};
	uint64_t per = (8ULL << 20) / IO_PAGE_SIZE, pages = bytes / IO_PAGE_SIZE, t0;
	char err[256];

	waitq_init(&wq);
	memset(&st, 0, sizeof(st));
	if (mm_policy_parse("modern-always", &mc.policy, err, sizeof(err)) ||
	    mm_create(&mc, &env, &bmm, err, sizeof(err)) ||
	    io_device_parse("fast", &cfg.dev, err, sizeof(err))) {
		fprintf(stderr, "engine: %s\n", err);
		exit(1);
	}
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	ienv.mm = bmm;
	if (io_create(&cfg, &ienv, &bio, err, sizeof(err)) || io_start(bio)) {
		fprintf(stderr, "engine: %s\n", err);
		exit(1);
	}
	t0 = clock_now_ns();
	for (uint64_t p = 0; p < pages; p += per) {
		uint64_t id = bench_file_id++, n = pages - p < per ? pages - p : per;

		if (io_file_create(bio, id, n))
			exit(1);
		for (uint64_t i = 0; i < n; i++)
			io_write_page(bio, id, i);
		io_file_written(bio, id);
	}
	*dirty_s = (double)(clock_now_ns() - t0) / 1e9;
	if (io_sync_all(bio, 600000000000ULL) < 0 || st.bytes_written != bytes) {
		fprintf(stderr, "engine: wrote %llu of %llu bytes\n",
			(unsigned long long)st.bytes_written, (unsigned long long)bytes);
		exit(1);
	}
	t0 = clock_now_ns() - t0;
	io_destroy(bio);
	mm_destroy(bmm);
	return (double)bytes / 1048576.0 / ((double)t0 / 1e9);
}

static int bench_writeback(const char *dir)
{
	uint64_t bytes = (quick ? 32ULL : 256ULL) << 20;
	int reps = quick ? 1 : 3;
	double bd = 0, be = 0, bdirty = 1e9;

	for (int r = 0; r < reps; r++) {
		double ds, d = direct_mbps(dir, bytes), e = engine_mbps(dir, bytes, &ds);

		bd = d > bd ? d : bd;
		be = e > be ? e : be;
		bdirty = ds < bdirty ? ds : bdirty;
	}
	printf("writeback of %llu MiB: engine %.1f MB/s (of which dirtying the page cache took "
	       "%.0f ms, %.2f us/page), direct O_DIRECT %.1f MB/s, ratio %.2f (best of %d)\n",
	       (unsigned long long)(bytes >> 20), be, bdirty * 1e3,
	       bdirty * 1e6 / (double)(bytes / IO_PAGE_SIZE), bd, be / bd, reps);
	return 0;
}

int main(int argc, char **argv)
{
	const char *q = getenv("THPEMU_PERF_QUICK");

	quick = q && !strcmp(q, "1");
	if (argc == 2 && !strcmp(argv[1], "wake"))
		return bench_wake();
	if (argc == 3 && !strcmp(argv[1], "writeback"))
		return bench_writeback(argv[2]);
	fprintf(stderr, "usage: io_bench wake | io_bench writeback DIR\n");
	return 2;
}
