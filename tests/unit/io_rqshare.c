/* core/io/rqshare: the 3.x request list with real sleepers (block/blk-core.c get_request_wait,
 * freed_request, 3.2): a task that finds the list full sleeps until a request is freed below
 * nr_requests, one sleeper per request freed, first come first woken; the flusher's non-blocking
 * turn; a sleeper in another process woken through shared memory; giving up when told. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "io/rqshare.h"
#include "util/clock.h"

#define MS 1000000ULL

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static unsigned used_slots(struct rqs *s)
{
	unsigned n = 0;

	for (int i = 0; i < RQS_WAITERS; i++)
		n += __atomic_load_n(&s->slot[i].used, __ATOMIC_ACQUIRE) != 0;
	return n;
}

static void await_sleepers(struct rqs *s, unsigned n)
{
	for (int i = 0; i < 2000 && used_slots(s) < n; i++)
		sleep_ms(1);
}

/* Fill the list with one task's requests: nr_requests, then its batch up to 3/2 of them (the
 * refused try queues the task: it leaves the queue). */
static unsigned fill(struct rqs *s, struct rql_ioc *ioc)
{
	unsigned n = 0;
	int slot = -1;

	while (rqs_try(s, RQL_ASYNC, ioc, &slot))
		n++;
	rqs_cancel(s, RQL_ASYNC, &slot);
	return n;
}

struct getter {
	struct rqs *s;
	pthread_t th;
	struct rql_ioc ioc;
	int rc;
	uint64_t waited, done_at;
	unsigned order; /* position in which it got its request */
};

static unsigned got_order;

static void *get_main(void *arg)
{
	struct getter *g = arg;

	g->rc = rqs_get(g->s, RQL_ASYNC, &g->ioc, RQS_WRITEOUT, 10 * MS, NULL, NULL, &g->waited);
	g->order = __atomic_add_fetch(&got_order, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g->done_at, clock_now_ns(), __ATOMIC_RELEASE);
	return NULL;
}

TEST(a_full_list_puts_a_writer_to_sleep_until_a_request_is_freed_below_the_limit)
{
	static struct rqs s;
	struct rql_ioc a = {0};
	struct getter g = {.s = &s};
	struct rql_stats st;
	struct rqs_wait_stat ws[RQS_WHO_NR];
	bool unc;

	rqs_init(&s, 8);
	/* the task that fills the list becomes a batcher: up to 3/2 * 8 */
	EXPECT_EQ(fill(&s, &a), 12);
	EXPECT(rqs_congested(&s, RQL_ASYNC));
	ASSERT_EQ(pthread_create(&g.th, NULL, get_main, &g), 0);
	await_sleepers(&s, 1);
	EXPECT_EQ(used_slots(&s), 1);
	/* freed requests while 8 or more remain wake nobody (freed_request: count < nr_requests) */
	for (int i = 0; i < 4; i++)
		EXPECT(!rqs_put(&s, RQL_ASYNC, -1, &unc));
	sleep_ms(50);
	EXPECT_EQ(__atomic_load_n(&g.done_at, __ATOMIC_ACQUIRE), 0);
	rqs_put(&s, RQL_ASYNC, -1, &unc); /* 7 left: below the limit */
	pthread_join(g.th, NULL);
	EXPECT_EQ(g.rc, 0);
	EXPECT_GE(g.waited, 40 * MS);
	rqs_stats(&s, &st, ws);
	EXPECT_EQ(st.count_max[RQL_ASYNC], 12);
	EXPECT_EQ(st.batched[RQL_ASYNC], 4);
	EXPECT_EQ(ws[RQS_WRITEOUT].count, 1);
	EXPECT_EQ(ws[RQS_WRITEOUT].max_ns, g.waited);
	EXPECT_EQ(s.l.count[RQL_ASYNC], 8);
	EXPECT_EQ(used_slots(&s), 0);
}

TEST(sleepers_get_their_requests_in_the_order_they_slept)
{
	static struct rqs s;
	static struct getter g[5];
	struct rql_ioc a = {0};
	bool unc;

	rqs_init(&s, 4);
	got_order = 0;
	EXPECT_EQ(fill(&s, &a), 6);
	for (unsigned i = 0; i < 5; i++) {
		g[i] = (struct getter){.s = &s};
		ASSERT_EQ(pthread_create(&g[i].th, NULL, get_main, &g[i]), 0);
		await_sleepers(&s, i + 1); /* one at a time: the queue's order is known */
	}
	EXPECT_EQ(used_slots(&s), 5);
	rqs_put(&s, RQL_ASYNC, -1, &unc);
	rqs_put(&s, RQL_ASYNC, -1, &unc);
	rqs_put(&s, RQL_ASYNC, -1, &unc); /* 3 left: wakes the first */
	for (unsigned i = 0; i < 5; i++) {
		/* each woken sleeper becomes a batcher and takes the freed one; free the next */
		for (int t = 0; t < 2000 && !__atomic_load_n(&g[i].done_at, __ATOMIC_ACQUIRE); t++)
			sleep_ms(1);
		EXPECT_NE(__atomic_load_n(&g[i].done_at, __ATOMIC_ACQUIRE), 0);
		EXPECT_EQ(g[i].order, i + 1);
		if (i + 1 < 5)
			rqs_put(&s, RQL_ASYNC, -1, &unc);
	}
	for (unsigned i = 0; i < 5; i++) {
		pthread_join(g[i].th, NULL);
		EXPECT_EQ(g[i].rc, 0);
	}
}

TEST(the_flusher_waits_its_turn_without_sleeping)
{
	static struct rqs s;
	struct rql_ioc a = {0}, fl = {0};
	int slot = -1;
	bool unc;

	rqs_init(&s, 4);
	EXPECT_EQ(fill(&s, &a), 6);
	EXPECT(!rqs_try(&s, RQL_ASYNC, &fl, &slot));
	EXPECT_GE(slot, 0);
	EXPECT(!rqs_try(&s, RQL_ASYNC, &fl, &slot)); /* not woken: no retry */
	EXPECT(!rqs_put(&s, RQL_ASYNC, slot, &unc)); /* 5 left: nobody woken */
	EXPECT(!rqs_put(&s, RQL_ASYNC, slot, &unc)); /* 4 */
	EXPECT(rqs_put(&s, RQL_ASYNC, slot, &unc));  /* 3: the flusher's turn */
	EXPECT(rqs_try(&s, RQL_ASYNC, &fl, &slot));
	EXPECT_EQ(slot, -1);
	EXPECT_EQ(s.waited[RQS_FLUSHER].count, 1);
	/* cancelled while queued: the slot is free again */
	EXPECT(rqs_try(&s, RQL_ASYNC, &fl, &slot)); /* a batcher now: the 5th */
	EXPECT(rqs_try(&s, RQL_ASYNC, &fl, &slot)); /* 6th: 3/2 of 4 */
	EXPECT(!rqs_try(&s, RQL_ASYNC, &fl, &slot));
	EXPECT_GE(slot, 0);
	rqs_cancel(&s, RQL_ASYNC, &slot);
	EXPECT_EQ(slot, -1);
	EXPECT_EQ(used_slots(&s), 0);
	EXPECT(s.l.head[RQL_ASYNC] == NULL);
}

static bool give_up(void *arg)
{
	return __atomic_load_n((int *)arg, __ATOMIC_ACQUIRE) != 0;
}

struct quitter {
	struct rqs *s;
	int gone, rc;
};

static void *quit_main(void *arg)
{
	struct quitter *q = arg;
	struct rql_ioc ioc = {0};

	q->rc = rqs_get(q->s, RQL_ASYNC, &ioc, RQS_WRITER, 10 * MS, give_up, &q->gone, NULL);
	return NULL;
}

TEST(a_sleeper_gives_up_when_told_and_leaves_the_queue)
{
	static struct rqs s;
	struct rql_ioc a = {0};
	struct quitter q = {.s = &s};
	pthread_t th;

	rqs_init(&s, 4);
	fill(&s, &a);
	ASSERT_EQ(pthread_create(&th, NULL, quit_main, &q), 0);
	await_sleepers(&s, 1);
	__atomic_store_n(&q.gone, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	EXPECT_EQ(q.rc, -ETIMEDOUT);
	EXPECT_EQ(used_slots(&s), 0);
	EXPECT(s.l.head[RQL_ASYNC] == NULL);
	EXPECT_EQ(s.l.count[RQL_ASYNC], 6);
}

TEST(a_sleeper_in_another_process_is_woken_through_the_shared_list)
{
	struct rqs *s =
	    mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rql_ioc a = {0};
	int status;
	bool unc;
	pid_t pid;

	ASSERT(s != MAP_FAILED);
	rqs_init(s, 4);
	fill(s, &a);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rql_ioc c = {0};
		uint64_t waited = 0;
		int rc = rqs_get(s, RQL_ASYNC, &c, RQS_WRITER, 0, NULL, NULL, &waited);

		_exit(rc == 0 && waited > 0 ? 0 : 1);
	}
	await_sleepers(s, 1);
	EXPECT_EQ(used_slots(s), 1);
	for (int i = 0; i < 3; i++)
		rqs_put(s, RQL_ASYNC, -1, &unc); /* 3 left: the child's turn */
	alarm(10);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	alarm(0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(s->waited[RQS_WRITER].count, 1);
	munmap(s, sizeof(*s));
}

/* A process killed while it holds the list's lock does not leave the machine's other processes
 * asleep on it: the lock is robust. */
TEST(a_process_dying_with_the_lock_held_does_not_stop_the_others)
{
	struct rqs *s =
	    mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rql_ioc a = {0};
	int status;
	pid_t pid;

	ASSERT(s != MAP_FAILED);
	rqs_init(s, 4);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		pthread_mutex_lock(&s->lock);
		_exit(0); /* as a SIGKILL between lock and unlock */
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	alarm(10);
	EXPECT(!rqs_congested(s, RQL_ASYNC)); /* takes the lock: returns */
	EXPECT(fill(s, &a) >= 4);	      /* and every later step */
	alarm(0);
	munmap(s, sizeof(*s));
}

TEST_MAIN()
