/* core/io writeback engine: pages written through the page cache reach the device with their
 * data (tmpfs directory, a real thpemu-fusedev mount), stay under writeback from submission to
 * completion and wake their waiters, writeout() starts one page, errors end writeback with the
 * error and are counted, a dead device is timed out instead of pinning pages forever, and the
 * in-process model paces completions in real time; an arena given by the caller holds the
 * pages' bytes and is left alone; each io thread calls the thread_init hook first, and the
 * thread_gone hook is called with its id once it is gone, its C library teardown done (the
 * dirtier's soon after its total is done). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/io.h"
#include "io/rqshare.h"
#include "util/clock.h"

struct tenv {
	struct mm *mm;
	struct io *io;
	struct waitq wq;
	pthread_mutex_t lock;
	struct io_stats st;
	uint64_t wait_calls, wait_ns;
	uint32_t inits, gones; /* io_env thread_init / thread_gone calls (atomic) */
	/* per io thread, by thread_init: its id, its name, its teardown done (a thread-specific
	 * value's destructor ran: glibc's start_thread, after the start routine); gone_early:
	 * thread_gone calls made before that (atomic) */
	int tid[4];
	char name[4][16];
	uint32_t torn[4];
	uint32_t gone_early, gone_unknown;
};

static uint64_t t_now(void *priv, void *call)
{
	return clock_now_ns();
}

static void t_lock(void *priv)
{
	pthread_mutex_lock(&((struct tenv *)priv)->lock);
}

static void t_unlock(void *priv)
{
	pthread_mutex_unlock(&((struct tenv *)priv)->lock);
}

static bool t_busy(void *arg, uint64_t pfn)
{
	return mm_frame_under_writeback(arg, (uint32_t)pfn);
}

static int t_wait(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	struct tenv *te = priv;
	uint64_t t0 = clock_now_ns();
	int rc = waitq_wait(&te->wq, pfn, t_busy, te->mm, timeout_ns);

	__atomic_fetch_add(&te->wait_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&te->wait_ns, clock_now_ns() - t0, __ATOMIC_RELAXED);
	return rc;
}

static int t_copy(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	return io_copy_file_page(((struct tenv *)priv)->io, owner, from, to);
}

static int t_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	return io_writeout(((struct tenv *)priv)->io, owner, pfn);
}

static uint64_t t_clear(void *priv, void *call, uint32_t head, uint64_t owner)
{
	return 0;
}

static void t_cost(void *priv, void *call, enum mm_cost what, uint64_t n)
{
}

static pthread_key_t teardown_key;
static pthread_once_t teardown_once = PTHREAD_ONCE_INIT;

static void t_torn(void *slot)
{
	__atomic_store_n((uint32_t *)slot, 1, __ATOMIC_RELEASE);
}

static void teardown_key_make(void)
{
	pthread_key_create(&teardown_key, t_torn);
}

static void t_thread_init(void *arg)
{
	struct tenv *t = arg;
	uint32_t i = __atomic_fetch_add(&t->inits, 1, __ATOMIC_ACQ_REL);

	if (i >= 4)
		return;
	prctl(PR_GET_NAME, t->name[i]);
	__atomic_store_n(&t->tid[i], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	pthread_once(&teardown_once, teardown_key_make);
	pthread_setspecific(teardown_key, &t->torn[i]);
}

static void t_thread_gone(void *arg, int tid)
{
	struct tenv *t = arg;
	int i = 0;

	while (i < 4 && __atomic_load_n(&t->tid[i], __ATOMIC_ACQUIRE) != tid)
		i++;
	if (i == 4 || tid <= 0)
		__atomic_fetch_add(&t->gone_unknown, 1, __ATOMIC_ACQ_REL);
	else if (!__atomic_load_n(&t->torn[i], __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&t->gone_early, 1, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&t->gones, 1, __ATOMIC_ACQ_REL);
}

static const struct mm_env_ops t_ops = {
    .now = t_now,
    .lock = t_lock,
    .unlock = t_unlock,
    .wait_writeback = t_wait,
    .copy_file_page = t_copy,
    .clear_huge = t_clear,
    .alloc_cost = t_cost,
    .writeout = t_writeout,
};

static struct tenv te;
static void *given_arena; /* io_env.arena for the next setup() */
static bool rq_3x;	  /* io_config.rq_3x for the next setup() */

/* The io thread named name in te (its index), or -1. */
static int t_thread_named(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(te.name[i], name))
			return i;
	return -1;
}

/* An mm of pool bytes and an engine on dir ("" = the model of device spec dev). */
static void setup(const char *dev, const char *dir, const char *dirty, uint64_t pool)
{
	struct mm_config mc = {.pool_bytes = pool};
	struct mm_env env = {.ops = &t_ops, .priv = &te};
	struct io_config cfg = {.seed = 42, .rq_3x = rq_3x};
	struct io_env ienv = {.stats = &te.st,
			      .wq = &te.wq,
			      .arena = given_arena,
			      .thread_init = t_thread_init,
			      .thread_gone = t_thread_gone,
			      .arg = &te};
	char err[256];

	memset(&te, 0, sizeof(te));
	pthread_mutex_init(&te.lock, NULL);
	waitq_init(&te.wq);
	ASSERT_EQ(mm_policy_parse("linux-3.1", &mc.policy, err, sizeof(err)), 0);
	ASSERT_EQ(mm_create(&mc, &env, &te.mm, err, sizeof(err)), 0);
	ASSERT_EQ(io_device_parse(dev, &cfg.dev, err, sizeof(err)), 0);
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	if (dirty) {
		cfg.dirty = true;
		ASSERT_EQ(io_dirty_parse(dirty, &cfg.dspec, err, sizeof(err)), 0);
	}
	ienv.mm = te.mm;
	if (io_create(&cfg, &ienv, &te.io, err, sizeof(err)) < 0) {
		fprintf(stderr, "io_create: %s\n", err);
		ASSERT(0);
	}
	ASSERT_EQ(io_start(te.io), 0);
}

static void teardown(void)
{
	io_destroy(te.io);
	mm_destroy(te.mm);
}

static uint32_t pfn_of(uint64_t file, uint64_t index)
{
	uint32_t pfn;
	bool created;

	for (;;) {
		int rc = mm_pagecache_get(te.mm, MM_OWNER_FILE(file, index), false, &pfn, &created,
					  NULL);

		if (rc == 0)
			break;
		ASSERT_EQ(rc, -EAGAIN);
		usleep(100);
	}
	mm_pagecache_put(te.mm, pfn, false);
	return pfn;
}

static void write_file(uint64_t id, uint64_t npages)
{
	ASSERT_EQ(io_file_create(te.io, id, npages), 0);
	for (uint64_t i = 0; i < npages; i++)
		ASSERT_EQ(io_write_page(te.io, id, i), 0);
	io_file_written(te.io, id);
}

static void dump_stats(void)
{
	fprintf(stderr,
		"  stats: written %llu failed %llu eio %llu enospc %llu disc %llu tmo %llu "
		"other %llu ops %llu note '%s'\n",
		(unsigned long long)te.st.bytes_written, (unsigned long long)te.st.pages_failed,
		(unsigned long long)te.st.err_eio, (unsigned long long)te.st.err_enospc,
		(unsigned long long)te.st.err_disconnected, (unsigned long long)te.st.err_timeout,
		(unsigned long long)te.st.err_other, (unsigned long long)te.st.writeback_ops,
		te.st.note);
}

static void expect_nothing_pinned(void)
{
	if (harness_failed_here)
		dump_stats();
	struct mm_counts c;

	mm_get_counts(te.mm, &c);
	EXPECT_EQ(c.file_writeback, 0);
	EXPECT_EQ(c.file_dirty, 0);
}

/* Check every page of a file on disk against the pattern. */
static void verify_file(const char *dir, uint64_t id, uint64_t npages)
{
	char name[64], path[800];
	static char buf[4096];
	int fd;

	io_file_name(id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	ASSERT(fd >= 0);
	for (uint64_t i = 0; i < npages; i++) {
		ASSERT_EQ(pread(fd, buf, sizeof(buf), (off_t)(i * 4096)), 4096);
		EXPECT_EQ(io_pattern_check(buf, 42, id, i * 4096, 4096), 4096);
	}
	close(fd);
}

static unsigned manifest_complete(const char *dir)
{
	char path[800], line[200];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" IO_MANIFEST_NAME, dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " complete ") != NULL;
	fclose(f);
	return n;
}

TEST(model_paces_writeback_in_real_time)
{
	uint64_t t0;

	setup("none:preset=usb2-stick-2011,bandwidth=8M,latency=1ms,jitter=0,stall-every=0,"
	      "gc-au=0",
	      "", NULL, 64 << 20);
	EXPECT_EQ(te.st.in_process, 1);
	write_file(1, 256);
	write_file(2, 256);
	t0 = clock_now_ns();
	ASSERT_EQ(io_sync_all(te.io, 20000000000ULL), 0);
	/* 2 MiB at 8 MiB/s: at least ~250 ms (a little less if writeback began meanwhile) */
	EXPECT_GE(clock_now_ns() - t0, 150000000ULL);
	EXPECT_EQ(te.st.bytes_written, 2 << 20);
	EXPECT_EQ(te.st.bytes_dirtied, 2 << 20);
	EXPECT_EQ(te.st.pages_submitted, 512);
	EXPECT_EQ(te.st.files_complete, 2);
	EXPECT_EQ(te.st.err_eio + te.st.err_other + te.st.err_timeout, 0);
	EXPECT_GE(te.st.writeback_ops, 512 / 30);
	EXPECT_EQ(te.st.wb_lat.count, te.st.writeback_ops);
	expect_nothing_pinned();
	teardown();
}

TEST(tmpfs_files_hold_the_pattern_and_the_manifest_lists_them)
{
	char dir[] = "/dev/shm/thpemu-io-test.XXXXXX", sub[700];

	ASSERT(mkdtemp(dir));
	setup("/dev/shm", dir, NULL, 64 << 20);
	snprintf(sub, sizeof(sub), "%s", io_dir(te.io));
	EXPECT(strstr(sub, dir) == sub);
	write_file(1, 30);  /* one request */
	write_file(2, 100); /* several, the last one short */
	write_file(3, 1);
	ASSERT_EQ(io_sync_all(te.io, 20000000000ULL), 0);
	io_stop(te.io, 1000000000ULL);
	verify_file(sub, 1, 30);
	verify_file(sub, 2, 100);
	verify_file(sub, 3, 1);
	EXPECT_EQ(manifest_complete(sub), 3);
	EXPECT_EQ(te.st.bytes_written, 131 * 4096);
	EXPECT_EQ(te.st.odirect, 1);
	expect_nothing_pinned();
	teardown();
	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	ASSERT_EQ(system(sub), 0);
}

struct waiter_arg {
	uint32_t pfn;
	int rc;
	uint64_t waited;
};

static void *waiter_main(void *arg)
{
	struct waiter_arg *w = arg;
	uint64_t t0 = clock_now_ns();

	w->rc = t_wait(&te, NULL, w->pfn, 0);
	w->waited = clock_now_ns() - t0;
	return NULL;
}

TEST(writeout_pins_a_page_until_its_write_completes_and_wakes_waiters)
{
	struct waiter_arg w[4];
	pthread_t th[4];
	uint32_t pfn;

	/* 4 KiB at 40 KiB/s + 100 ms setup: the write takes ~200 ms */
	setup("none:preset=usb2-stick-2011,bandwidth=40K,latency=100ms,jitter=0,stall-every=0,"
	      "gc-au=0",
	      "", NULL, 64 << 20);
	write_file(1, 4); /* far below the background threshold: stays dirty */
	pfn = pfn_of(1, 2);
	usleep(100000);
	EXPECT(!mm_frame_under_writeback(te.mm, pfn));
	ASSERT_EQ(io_writeout(te.io, MM_OWNER_FILE(1, 2), pfn), 0);
	EXPECT(mm_frame_under_writeback(te.mm, pfn));
	EXPECT_EQ(io_writeout(te.io, MM_OWNER_FILE(1, 2), pfn), -EBUSY); /* not dirty now */
	for (int i = 0; i < 4; i++) {
		w[i].pfn = pfn;
		ASSERT_EQ(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(w[i].rc, 0);
		EXPECT_GE(w[i].waited, 50000000ULL);
		EXPECT_LT(w[i].waited, 5000000000ULL);
	}
	EXPECT(!mm_frame_under_writeback(te.mm, pfn));
	EXPECT_EQ(te.st.writeout_pages, 1);
	EXPECT_EQ(te.st.bytes_written, 4096);
	teardown();
}

/* The 3.x request list (rq_3x): writeout callers take a request each before their page is
 * queued; with nr_requests 2 the caller that fills the list becomes a batcher and may take a
 * third (3/2), then sleeps in get_request_wait until completions bring the count below 2. */
TEST(writeouts_sleep_for_a_request_when_the_3x_list_is_full)
{
	uint32_t pfn[8];
	uint64_t waited, slept = 0;

	rq_3x = true;
	/* 16 KiB at 160 KiB/s + 50 ms: each single-page write takes ~75 ms */
	setup("none:preset=usb2-stick-2011,bandwidth=160K,latency=50ms,jitter=0,stall-every=0,"
	      "gc-au=0,slots=1,nr-requests=2",
	      "", NULL, 64 << 20);
	rq_3x = false;
	ASSERT(io_rqs(te.io) != NULL);
	for (uint64_t f = 0; f < 8; f++) { /* one page in each of 8 files: 8 requests */
		write_file(10 + f, 1);
		pfn[f] = pfn_of(10 + f, 0);
	}
	for (uint64_t f = 0; f < 8; f++) {
		ASSERT_EQ(io_writeout_wait(te.io, MM_OWNER_FILE(10 + f, 0), pfn[f], RQS_WRITEOUT,
					   &waited),
			  0);
		slept += waited > 0;
	}
	ASSERT_EQ(io_sync_all(te.io, 20000000000ULL), 0);
	teardown();
	EXPECT_GE(slept, 1);
	EXPECT_EQ(te.st.rq_active, 1);
	EXPECT_EQ(te.st.rq_allocated, 8);
	EXPECT_EQ(te.st.rq_allocated_max, 3); /* nr_requests, then the batcher's 3/2 */
	EXPECT_GE(te.st.rq_waits[RQS_WRITEOUT], slept);
	EXPECT_GT(te.st.rq_wait_ns[RQS_WRITEOUT], 0);
	EXPECT_LE(te.st.inflight_max, 3);
	EXPECT_EQ(te.st.writeout_pages, 8);
	EXPECT_EQ(te.st.bytes_written, 8 * 4096);
}

/* congestion_wait (io_wait_uncongested): nothing completes, so it sleeps to its timeout; a
 * write completing with the queue uncongested wakes it (clear_bdi_congested); wait_iff_congested
 * does not sleep on an uncongested queue. */
struct napper_arg {
	int rc;
};

static void *napper_main(void *arg)
{
	struct napper_arg *a = arg;

	a->rc = io_wait_uncongested(te.io, 10000000000ULL, false);
	return NULL;
}

TEST(congestion_wait_sleeps_until_a_write_completes_or_the_timeout)
{
	struct napper_arg a = {.rc = 1};
	pthread_t th;
	uint32_t pfn;

	setup("none:preset=usb2-stick-2011,bandwidth=40K,latency=100ms,jitter=0,stall-every=0,"
	      "gc-au=0",
	      "", NULL, 64 << 20);
	EXPECT(!io_congested(te.io));
	EXPECT_EQ(io_wait_uncongested(te.io, 20000000ULL, false), -ETIMEDOUT); /* no I/O at all */
	EXPECT_EQ(io_wait_uncongested(te.io, 10000000000ULL, true), 0);	       /* not congested */
	write_file(1, 4);
	pfn = pfn_of(1, 2);
	ASSERT_EQ(pthread_create(&th, NULL, napper_main, &a), 0);
	usleep(20000);
	ASSERT_EQ(io_writeout(te.io, MM_OWNER_FILE(1, 2), pfn), 0);
	pthread_join(th, NULL);
	EXPECT_EQ(a.rc, 0); /* woken by the completion, 10 s before its timeout */
	/* the engine wakes the sleepers as the request completes and ends the page's writeback
	 * right after: give it a moment (a slow TSan run saw the page still under writeback) */
	for (int i = 0; i < 500 && mm_frame_under_writeback(te.mm, pfn); i++)
		usleep(10000);
	EXPECT(!mm_frame_under_writeback(te.mm, pfn));
	teardown();
}

TEST(copy_file_page_moves_the_data)
{
	uint32_t from, to;

	setup("none", "", NULL, 64 << 20);
	write_file(7, 2);
	from = pfn_of(7, 0);
	to = pfn_of(7, 1);
	EXPECT_EQ(io_pattern_check(io_page(te.io, from), 42, 7, 0, 4096), 4096);
	ASSERT_EQ(io_copy_file_page(te.io, MM_OWNER_FILE(7, 0), from, to), 0);
	EXPECT_EQ(memcmp(io_page(te.io, from), io_page(te.io, to), 4096), 0);
	EXPECT_EQ(io_copy_file_page(te.io, 0, from, UINT32_MAX), -EINVAL);
	teardown();
}

/* A given arena (a shared machine's segment): the pages' bytes are in it, a fork child sees
 * them (no MADV_DONTFORK), and io leaves it mapped when it goes. */
TEST(a_given_arena_holds_the_pages_and_outlives_the_engine)
{
	const size_t len = 64 << 20;
	uint8_t *arena = mmap(NULL, len, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *page;
	int status;
	pid_t pid;

	ASSERT(arena != MAP_FAILED);
	given_arena = arena;
	setup("none", "", NULL, len);
	given_arena = NULL;
	write_file(7, 2);
	page = arena + (size_t)pfn_of(7, 1) * 4096;
	EXPECT(io_page(te.io, pfn_of(7, 1)) == page);
	EXPECT_EQ(io_pattern_check(page, 42, 7, 4096, 4096), 4096);
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0)
		_exit(io_pattern_check(page, 42, 7, 4096, 4096) == 4096 ? 0 : 1);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(io_sync_all(te.io, 20000000000ULL), 0);
	teardown();
	EXPECT_EQ(io_pattern_check(page, 42, 7, 4096, 4096), 4096); /* still mapped, intact */
	munmap(arena, len);
}

TEST(a_misaligned_arena_is_refused)
{
	struct mm_config mc = {.pool_bytes = 16 << 20};
	struct mm_env env = {.ops = &t_ops, .priv = &te};
	struct io_config cfg = {.seed = 42};
	struct io_env ienv = {.stats = &te.st, .wq = &te.wq};
	static uint8_t buf[2 * 4096];
	char err[256];

	memset(&te, 0, sizeof(te));
	pthread_mutex_init(&te.lock, NULL);
	waitq_init(&te.wq);
	ASSERT_EQ(mm_policy_parse("linux-3.1", &mc.policy, err, sizeof(err)), 0);
	ASSERT_EQ(mm_create(&mc, &env, &te.mm, err, sizeof(err)), 0);
	ASSERT_EQ(io_device_parse("none", &cfg.dev, err, sizeof(err)), 0);
	ienv.mm = te.mm;
	ienv.arena = (void *)(((uintptr_t)buf + 4095) / 4096 * 4096 + 8);
	EXPECT_EQ(io_create(&cfg, &ienv, &te.io, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "aligned") != NULL);
	mm_destroy(te.mm);
}

TEST(errors_end_writeback_with_the_error_and_are_counted)
{
	setup("none:error-rate=1,latency=1ms", "", NULL, 64 << 20);
	write_file(1, 64);
	write_file(2, 64);
	ASSERT_EQ(io_sync_all(te.io, 20000000000ULL), 0);
	EXPECT_GT(te.st.err_eio, 0);
	EXPECT_EQ(te.st.pages_failed, 128);
	EXPECT_EQ(te.st.bytes_written, 0);
	EXPECT_EQ(te.st.files_failed, 2);
	EXPECT_EQ(te.st.files_complete, 0);
	EXPECT_EQ(io_file_sync(te.io, 1), 0); /* gone already: nothing left to fail */
	{
		uint64_t st[MM_STAT_NR];

		mm_get_stats(te.mm, st);
		EXPECT_EQ(st[MM_STAT_PGWB_ERROR], 128);
	}
	expect_nothing_pinned();
	teardown();
}

TEST(a_dead_device_is_timed_out_instead_of_pinning_pages)
{
	uint64_t t0;

	setup("none:dead=1,timeout=200ms", "", NULL, 64 << 20);
	write_file(1, 100);
	t0 = clock_now_ns();
	ASSERT_EQ(io_sync_all(te.io, 30000000000ULL), 0);
	EXPECT_GE(clock_now_ns() - t0, 200000000ULL);
	EXPECT_LT(clock_now_ns() - t0, 10000000000ULL);
	EXPECT_GT(te.st.cancels, 0);
	EXPECT_GT(te.st.abandoned, 0);
	EXPECT_GT(te.st.err_timeout, 0);
	EXPECT_EQ(te.st.pages_failed, 100);
	expect_nothing_pinned();
	teardown();
}

TEST(fsync_waits_for_the_file_and_reports_success)
{
	setup("none:latency=1ms", "", NULL, 64 << 20);
	ASSERT_EQ(io_file_create(te.io, 3, 8), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(io_write_page(te.io, 3, (uint64_t)i), 0);
	io_file_written(te.io, 3);
	ASSERT_EQ(io_file_sync(te.io, 3), 0);
	EXPECT_EQ(te.st.fsyncs, 1);
	EXPECT_EQ(te.st.fsync_errors, 0);
	EXPECT_EQ(te.st.bytes_written, 8 * 4096);
	teardown();
}

TEST(the_dirtier_streams_and_throttles)
{
	uint64_t t0 = clock_now_ns();

	/* 24 MiB through a 32 MiB pool at 8 MiB/s: the dirty limit (20 %) forces pauses */
	setup("none:bandwidth=8M,latency=1ms,jitter=0,stall-every=0,gc-au=0", "",
	      "total=24M,file=1M,fsync=end", 32 << 20);
	while (__atomic_load_n(&te.st.fsyncs, __ATOMIC_RELAXED) == 0 &&
	       clock_now_ns() - t0 < 60000000000ULL)
		usleep(20000);
	io_stop(te.io, 1000000000ULL); /* quiesce the threads before reading their counters */
	EXPECT_EQ(te.st.fsyncs, 1);
	EXPECT_EQ(te.st.bytes_dirtied, 24 << 20);
	EXPECT_EQ(te.st.bytes_written, 24 << 20);
	EXPECT_EQ(te.st.files_complete, 24);
	EXPECT_GT(te.st.throttles, 0);
	/* the dirty limit held: dirty + writeback never far above 20 % of the pool */
	EXPECT_LT(te.st.dirty_max_pages, (32 << 20) / 4096 / 4);
	EXPECT_GE(clock_now_ns() - t0, 2000000000ULL); /* 24 MiB at 8 MiB/s */
	expect_nothing_pinned();
	teardown();
}

TEST(the_reader_fills_clean_page_cache)
{
	uint64_t t0 = clock_now_ns();
	struct mm_counts c;

	setup("none:latency=1ms", "", "read,total=4M,file=1M", 64 << 20);
	while (__atomic_load_n(&te.st.bytes_read, __ATOMIC_RELAXED) < (4 << 20) &&
	       clock_now_ns() - t0 < 30000000000ULL)
		usleep(20000);
	io_stop(te.io, 1000000000ULL);
	EXPECT_EQ(te.st.bytes_read, 4 << 20);
	EXPECT_EQ(te.st.read_errors, 0);
	mm_get_counts(te.mm, &c);
	EXPECT_EQ(c.file, 1024);
	EXPECT_EQ(c.file_dirty, 0);
	teardown();
}

/* The io_env hooks bracket each io thread's life: thread_init first on it; thread_gone with its id
 * once it is gone - after its C library teardown (here a thread-specific value's destructor),
 * which runs code the program may own (its allocator's free) and must still be thpemu's -, the
 * dirtier's soon after its finite total is done, with the flusher still running; the flusher's
 * when io stops. */
TEST(io_threads_are_gone_before_thread_gone)
{
	uint64_t t0 = clock_now_ns();
	int d, f;

	setup("none:latency=1ms", "", "read,total=1M,file=1M", 64 << 20);
	while (__atomic_load_n(&te.gones, __ATOMIC_ACQUIRE) == 0 &&
	       clock_now_ns() - t0 < 30000000000ULL)
		usleep(10000);
	EXPECT_EQ(__atomic_load_n(&te.inits, __ATOMIC_ACQUIRE), 2);
	EXPECT_EQ(__atomic_load_n(&te.gones, __ATOMIC_ACQUIRE), 1); /* the dirtier only */
	d = t_thread_named("thpemu-dirty");
	f = t_thread_named("thpemu-flush");
	ASSERT(d >= 0 && f >= 0);
	EXPECT_EQ(__atomic_load_n(&te.torn[d], __ATOMIC_ACQUIRE), 1);
	EXPECT_EQ(__atomic_load_n(&te.torn[f], __ATOMIC_ACQUIRE), 0);
	EXPECT_EQ(te.st.bytes_read, 1 << 20);
	io_stop(te.io, 1000000000ULL);
	EXPECT_EQ(__atomic_load_n(&te.gones, __ATOMIC_ACQUIRE), 2);
	EXPECT_EQ(__atomic_load_n(&te.torn[f], __ATOMIC_ACQUIRE), 1);
	EXPECT_EQ(__atomic_load_n(&te.gone_early, __ATOMIC_ACQUIRE), 0);
	EXPECT_EQ(__atomic_load_n(&te.gone_unknown, __ATOMIC_ACQUIRE), 0);
	teardown();
}

/* A dirtier still running when io stops (an endless one) is joined there, its hook called once,
 * after its teardown, like the flusher's. */
TEST(io_stop_joins_a_running_dirtier)
{
	setup("none:latency=1ms", "", "read,stream,file=1M", 64 << 20);
	usleep(100000);
	EXPECT_EQ(__atomic_load_n(&te.gones, __ATOMIC_ACQUIRE), 0);
	io_stop(te.io, 1000000000ULL);
	EXPECT_EQ(__atomic_load_n(&te.inits, __ATOMIC_ACQUIRE), 2);
	EXPECT_EQ(__atomic_load_n(&te.gones, __ATOMIC_ACQUIRE), 2);
	EXPECT_EQ(__atomic_load_n(&te.gone_early, __ATOMIC_ACQUIRE), 0);
	EXPECT_EQ(__atomic_load_n(&te.gone_unknown, __ATOMIC_ACQUIRE), 0);
	teardown();
}

/* ---- a real thpemu-fusedev mount ------------------------------------------------------------- */

static pid_t fd_pid = -1;
static char fd_mnt[64];

static void fusedev_umount(void)
{
	if (fd_pid > 0) {
		kill(fd_pid, SIGTERM);
		waitpid(fd_pid, NULL, 0);
		fd_pid = -1;
	}
	umount2(fd_mnt, MNT_DETACH);
	rmdir(fd_mnt);
}

/* Mount thpemu-fusedev ARGS on a temporary directory; SKIP if that is impossible here. */
static void fusedev_mount(const char *const *args)
{
	const char *b = getenv("THPEMU_BUILD_DIR");
	char exe[600], line[16] = "";
	const char *argv[24];
	int pfd[2], n = 0;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0)
		SKIP("needs root and /dev/fuse for a thpemu-fusedev mount");
	snprintf(exe, sizeof(exe), "%s/thpemu-fusedev", b ? b : ".");
	if (access(exe, X_OK) < 0)
		SKIP("%s not built (set THPEMU_BUILD_DIR)", exe);
	snprintf(fd_mnt, sizeof(fd_mnt), "/tmp/thpemu-iomnt.XXXXXX");
	ASSERT(mkdtemp(fd_mnt));
	ASSERT_EQ(pipe(pfd), 0);
	argv[n++] = exe;
	argv[n++] = fd_mnt;
	argv[n++] = "--foreground";
	argv[n++] = "--ready-fd";
	argv[n++] = "3";
	while (*args && n < 22)
		argv[n++] = *args++;
	argv[n] = NULL;
	fd_pid = fork();
	ASSERT(fd_pid >= 0);
	if (fd_pid == 0) {
		dup2(pfd[1], 3);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	ASSERT_GT(read(pfd[0], line, sizeof(line) - 1), 0);
	close(pfd[0]);
	ASSERT(strncmp(line, "ready", 5) == 0);
}

TEST(fusedev_mount_gets_the_data_with_odirect)
{
	static const char *const args[] = {"--preset", "fast", "--store", "memory", NULL};
	char sub[700];

	fusedev_mount(args);
	setup("fast", fd_mnt, NULL, 64 << 20);
	snprintf(sub, sizeof(sub), "%s", io_dir(te.io));
	for (uint64_t id = 1; id <= 4; id++)
		write_file(id, 64);
	ASSERT_EQ(io_sync_all(te.io, 30000000000ULL), 0);
	ASSERT_EQ(io_file_sync(te.io, 4), 0);
	io_stop(te.io, 1000000000ULL);
	EXPECT_EQ(te.st.odirect, 1);
	EXPECT_EQ(te.st.in_process, 0);
	for (uint64_t id = 1; id <= 4; id++)
		verify_file(sub, id, 64);
	EXPECT_EQ(manifest_complete(sub), 4);
	EXPECT_EQ(te.st.bytes_written, 4 * 64 * 4096);
	teardown();
	fusedev_umount();
}

TEST(fusedev_killed_mid_run_fails_writeback_without_hanging)
{
	static const char *const args[] = {"--preset", "usb2-stick-2011", "--bandwidth", "256K",
					   "--store",  "discard",	  NULL};
	uint64_t t0;

	fusedev_mount(args);
	setup("usb2-stick-2011", fd_mnt, NULL, 64 << 20);
	write_file(1, 1024); /* 4 MiB at 256 KiB/s: 16 s of writeback */
	io_kick(te.io);
	ASSERT_EQ(io_file_sync(te.io, 99), 0); /* unknown file: nothing to do */
	usleep(800000);
	kill(fd_pid, SIGKILL);
	waitpid(fd_pid, NULL, 0);
	fd_pid = -1;
	t0 = clock_now_ns();
	ASSERT_EQ(io_sync_all(te.io, 60000000000ULL), 0);
	EXPECT_LT(clock_now_ns() - t0, 30000000000ULL);
	EXPECT_GT(te.st.err_disconnected, 0);
	EXPECT_GT(te.st.pages_failed, 0);
	EXPECT(strstr(te.st.note, "gone") != NULL);
	expect_nothing_pinned();
	teardown();
	fusedev_umount();
}

TEST_MAIN()
