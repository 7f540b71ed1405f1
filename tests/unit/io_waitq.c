/* core/io/waitq: the hashed futex wait queues writeback waits sleep on (wait_on_page_writeback).
 * Many waiters on many keys that share buckets, wake-all of one key, waiters of other keys in a
 * woken bucket going back to sleep, timeouts, and a lost-wake-up stress (run under TSan too);
 * a shared queue waking a waiter in another process. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "harness.h"
#include "io/waitq.h"
#include "util/clock.h"

#define NKEYS 512

static struct waitq q;
static atomic_bool busy[NKEYS * 8];
static uint64_t cleared_at[NKEYS * 8];

static bool is_busy(void *arg, uint64_t key)
{
	return atomic_load(&busy[key]);
}

struct waiter {
	pthread_t th;
	uint64_t key, timeout_ns;
	int rc;
	bool busy_after; /* the flag as the waiter saw it right after returning */
	uint64_t returned_at;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = waitq_wait(&q, w->key, is_busy, NULL, w->timeout_ns);
	__atomic_store_n(&w->returned_at, clock_now_ns(), __ATOMIC_RELEASE);
	w->busy_after = atomic_load(&busy[w->key]);
	return NULL;
}

static void clear_and_wake(uint64_t key)
{
	cleared_at[key] = clock_now_ns();
	atomic_store(&busy[key], false);
	waitq_wake(&q, key);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Wait until `n` threads sleep in key's bucket (or give up after ~2 s). */
static void await_sleepers(uint64_t key, uint32_t n)
{
	for (int i = 0; i < 2000 && waitq_waiters(&q, key) < n; i++)
		sleep_ms(1);
}

TEST(many_waiters_on_many_keys_all_return_after_their_own_wake)
{
	static struct waiter w[NKEYS];

	waitq_init(&q);
	for (unsigned i = 0; i < NKEYS; i++) {
		atomic_store(&busy[i], true);
		w[i].key = i;
		ASSERT_EQ(pthread_create(&w[i].th, NULL, wait_main, &w[i]), 0);
	}
	sleep_ms(100);
	/* wake in a scrambled order: buckets are shared (512 keys, 256 buckets) */
	for (unsigned i = 0; i < NKEYS; i++)
		clear_and_wake((i * 197) % NKEYS);
	for (unsigned i = 0; i < NKEYS; i++) {
		pthread_join(w[i].th, NULL);
		EXPECT_EQ(w[i].rc, 0);
		EXPECT(!w[i].busy_after);
		EXPECT_GE(w[i].returned_at, cleared_at[i]);
	}
	for (unsigned i = 0; i < NKEYS; i++)
		EXPECT_EQ(waitq_waiters(&q, i), 0);
}

TEST(one_wake_releases_every_waiter_of_a_key)
{
	static struct waiter w[32];

	waitq_init(&q);
	atomic_store(&busy[7], true);
	for (unsigned i = 0; i < 32; i++) {
		w[i].key = 7;
		ASSERT_EQ(pthread_create(&w[i].th, NULL, wait_main, &w[i]), 0);
	}
	await_sleepers(7, 32);
	EXPECT_EQ(waitq_waiters(&q, 7), 32);
	clear_and_wake(7);
	for (unsigned i = 0; i < 32; i++) {
		pthread_join(w[i].th, NULL);
		EXPECT_EQ(w[i].rc, 0);
	}
}

TEST(waiters_of_another_key_in_the_bucket_sleep_on)
{
	struct waiter a = {.key = 1}, b = {.key = 0};
	uint64_t k;

	waitq_init(&q);
	atomic_store(&busy[1], true);
	ASSERT_EQ(pthread_create(&a.th, NULL, wait_main, &a), 0);
	await_sleepers(1, 1);
	for (k = 2; k < NKEYS * 8 && waitq_waiters(&q, k) == 0; k++) /* a bucket-mate of key 1 */
		;
	ASSERT_LT(k, NKEYS * 8);
	b.key = k;
	atomic_store(&busy[k], true);
	ASSERT_EQ(pthread_create(&b.th, NULL, wait_main, &b), 0);
	await_sleepers(1, 2);
	clear_and_wake(1); /* wakes both sleepers; key k's waiter must go back to sleep */
	pthread_join(a.th, NULL);
	EXPECT_EQ(a.rc, 0);
	sleep_ms(100);
	EXPECT_EQ(__atomic_load_n(&b.returned_at, __ATOMIC_ACQUIRE), 0);
	EXPECT_EQ(waitq_waiters(&q, k), 1);
	clear_and_wake(k);
	pthread_join(b.th, NULL);
	EXPECT_EQ(b.rc, 0);
	EXPECT(!b.busy_after);
}

TEST(timeouts_return_etimedout_and_not_much_later)
{
	struct waiter w = {.key = 3, .timeout_ns = 50000000ULL};
	uint64_t t0;

	waitq_init(&q);
	atomic_store(&busy[3], true);
	t0 = clock_now_ns();
	ASSERT_EQ(pthread_create(&w.th, NULL, wait_main, &w), 0);
	pthread_join(w.th, NULL);
	EXPECT_EQ(w.rc, -ETIMEDOUT);
	EXPECT_GE(w.returned_at - t0, 50000000ULL);
	EXPECT_LT(w.returned_at - t0, 2000000000ULL);
	EXPECT(w.busy_after);
	EXPECT_EQ(waitq_waiters(&q, 3), 0);
	/* a condition already false returns at once, timeout or not */
	atomic_store(&busy[3], false);
	EXPECT_EQ(waitq_wait(&q, 3, is_busy, NULL, 1), 0);
	EXPECT_EQ(waitq_wait(&q, 3, is_busy, NULL, 0), 0);
}

/* A waker that clears the flag between the waiter's check and its sleep must still wake it. */
static atomic_uint round_no;

static void *flip_main(void *arg)
{
	unsigned n = *(unsigned *)arg;

	for (unsigned r = 1; r <= n; r++) {
		while (atomic_load(&round_no) != r)
			;
		clear_and_wake(5 + (r & 3));
	}
	return NULL;
}

TEST(no_lost_wakeups_under_races)
{
	unsigned n = 20000;
	pthread_t th;

	waitq_init(&q);
	ASSERT_EQ(pthread_create(&th, NULL, flip_main, &n), 0);
	for (unsigned r = 1; r <= n; r++) {
		atomic_store(&busy[5 + (r & 3)], true);
		atomic_store(&round_no, r);
		ASSERT_EQ(waitq_wait(&q, 5 + (r & 3), is_busy, NULL, 5000000000ULL), 0);
	}
	pthread_join(th, NULL);
}

/* ---- A queue shared by processes ------------------------------------------------------------- */

struct shared_page {
	struct waitq q;
	uint32_t busy;
};

static bool shared_busy(void *arg, uint64_t key)
{
	return __atomic_load_n(&((struct shared_page *)arg)->busy, __ATOMIC_ACQUIRE);
}

/* A waiter in a fork child sleeps on a queue in a MAP_SHARED mapping; the parent clears the
 * condition and wakes it: with shared futexes the wake crosses processes (a private futex is
 * keyed by (mm, address): the child would sleep until its timeout). */
TEST(shared_queue_wakes_a_waiter_in_another_process)
{
	const uint64_t timeout = 10000000000ULL, key = 42;
	struct shared_page *sp =
	    mmap(NULL, sizeof(*sp), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t t0;
	int status;
	pid_t pid;

	ASSERT(sp != MAP_FAILED);
	waitq_init_shared(&sp->q);
	sp->busy = 1;
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		int rc = waitq_wait(&sp->q, key, shared_busy, sp, timeout);

		_exit(rc == 0 && !shared_busy(sp, key) ? 0 : 1);
	}
	for (int i = 0; i < 2000 && waitq_waiters(&sp->q, key) < 1; i++)
		sleep_ms(1);
	EXPECT_EQ(waitq_waiters(&sp->q, key), 1);
	sleep_ms(50); /* let it reach its futex sleep */
	t0 = clock_now_ns();
	__atomic_store_n(&sp->busy, 0, __ATOMIC_RELEASE);
	waitq_wake(&sp->q, key);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_LT(clock_now_ns() - t0, timeout / 2); /* woken, not timed out */
	EXPECT_EQ(waitq_waiters(&sp->q, key), 0);
	munmap(sp, sizeof(*sp));
}

TEST_MAIN()
