/* Hashed futex wait queues (io/waitq.h): a waiter sleeps until its condition clears and the
 * waker bumps the bucket; timeouts; no lost wake-up under concurrent waiters and wakers. */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "io/waitq.h"

static int flags[64]; /* atomic: 1 = "frame under writeback" */

static bool busy(void *arg, uint64_t key)
{
	return __atomic_load_n(&flags[key % 64], __ATOMIC_ACQUIRE);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct waiter {
	struct waitq *q;
	uint64_t key;
	int rc;
	int done; /* atomic */
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = waitq_wait(w->q, w->key, busy, NULL, 0);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST(waitq_returns_at_once_when_not_busy)
{
	static struct waitq q;

	waitq_init(&q);
	EXPECT_EQ(waitq_wait(&q, 5, busy, NULL, 0), 0);
}

TEST(waitq_sleeps_until_woken)
{
	static struct waitq q;
	struct waiter w = {.q = &q, .key = 7};
	pthread_t th;

	waitq_init(&q);
	__atomic_store_n(&flags[7], 1, __ATOMIC_RELEASE);
	pthread_create(&th, NULL, wait_main, &w);
	while (!waitq_waiters(&q, 7))
		sched_yield();
	usleep(20000);
	EXPECT_EQ(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), 0); /* still asleep */
	__atomic_store_n(&flags[7], 0, __ATOMIC_RELEASE);	  /* writeback ends ... */
	waitq_wake(&q, 7);					  /* ... and wakes */
	pthread_join(th, NULL);
	EXPECT_EQ(w.rc, 0);
	EXPECT_EQ(waitq_waiters(&q, 7), 0);
}

TEST(waitq_times_out)
{
	static struct waitq q;
	uint64_t t0 = now_ms();

	waitq_init(&q);
	__atomic_store_n(&flags[9], 1, __ATOMIC_RELEASE);
	EXPECT_EQ(waitq_wait(&q, 9, busy, NULL, 30000000ULL), -ETIMEDOUT);
	EXPECT_GE(now_ms() - t0, 30);
	EXPECT_LT(now_ms() - t0, 2000);
}

/* Many waiters on many keys (sharing buckets), wakers clearing them in random order: every
 * waiter returns. */
TEST(waitq_no_lost_wakeups)
{
	static struct waitq q;
	struct waiter w[64];
	pthread_t th[64];

	waitq_init(&q);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 64; i++) {
			__atomic_store_n(&flags[i], 1, __ATOMIC_RELEASE);
			w[i] = (struct waiter){.q = &q, .key = (uint64_t)i};
			pthread_create(&th[i], NULL, wait_main, &w[i]);
		}
		for (int i = 0; i < 64; i++) {
			int k = (i * 37 + round) % 64;

			__atomic_store_n(&flags[k], 0, __ATOMIC_RELEASE);
			waitq_wake(&q, (uint64_t)k);
		}
		for (int i = 0; i < 64; i++) {
			pthread_join(th[i], NULL);
			ASSERT_EQ(w[i].rc, 0);
		}
	}
}

TEST_MAIN()
