/* core/io request allocation of the 3.x block layer (block/blk-core.c, 3.2): the nr_requests
 * limit, a batcher's 3/2 allowance and its time bound, the congestion thresholds, FIFO wakes. */
#include "harness.h"
#include "io/rqlist.h"

#define MS 1000000ULL

/* Allocate n requests for ioc at now; returns how many were given. */
static unsigned get_n(struct rql *l, enum rql_dir d, struct rql_ioc *ioc, uint64_t now, unsigned n)
{
	unsigned got = 0;

	while (got < n && rql_get(l, d, ioc, now))
		got++;
	return got;
}

static struct rql_waiter *put(struct rql *l, enum rql_dir d)
{
	bool unc;

	return rql_put(l, d, &unc);
}

TEST(thresholds_are_the_kernels_for_128_and_small_queues)
{
	struct rql l;

	rql_init(&l, 0);
	EXPECT_EQ(l.nr_requests, 128);
	EXPECT_EQ(l.nr_batching, 32);
	EXPECT_EQ(l.congestion_on, 113);  /* 128 - 16 + 1 */
	EXPECT_EQ(l.congestion_off, 103); /* 128 - 16 - 8 - 1 */
	rql_init(&l, 4);
	EXPECT_EQ(l.congestion_on, 4); /* 4 - 0 + 1, capped at nr_requests */
	EXPECT_EQ(l.congestion_off, 3);
	rql_init(&l, 1);
	EXPECT_EQ(l.congestion_on, 1);
	EXPECT_EQ(l.congestion_off, 1); /* at least 1 */
}

TEST(limit_then_the_filler_batches_to_three_halves_others_wait)
{
	struct rql l;
	struct rql_ioc a = {0}, b = {0};

	rql_init(&l, 128);
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 127), 127);
	EXPECT(!l.full[RQL_ASYNC]);
	EXPECT_EQ(a.nr_batch, 0); /* below the limit nothing counts against a batch */
	/* the 128th fills the queue: its task becomes a batcher, and spends one of its batch */
	EXPECT(rql_get(&l, RQL_ASYNC, &a, 0));
	EXPECT(l.full[RQL_ASYNC]);
	EXPECT_EQ(a.nr_batch, 31);
	/* another task is refused; the batcher goes on, 31 more within 20 ms */
	EXPECT(!rql_get(&l, RQL_ASYNC, &b, 1 * MS));
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 2 * MS, 100), 31);
	EXPECT_EQ(l.count[RQL_ASYNC], 159);
	EXPECT_EQ(l.st.batched[RQL_ASYNC], 31);
	/* reads are the other direction: not full, not congested */
	EXPECT(rql_get(&l, RQL_SYNC, &b, 2 * MS));
	EXPECT(!rql_congested(&l, RQL_SYNC));
}

TEST(no_batcher_goes_beyond_three_halves)
{
	struct rql l;
	struct rql_ioc a = {0};

	rql_init(&l, 8);			      /* 3/2: 12 */
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 8), 8); /* a filled it: batch of 32 */
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 100), 4);
	EXPECT_EQ(l.count[RQL_ASYNC], 12);
	EXPECT_GT(a.nr_batch, 0); /* batch left, refused by the 3/2 bound */
}

TEST(a_batch_expires_after_batch_time_but_a_fresh_one_always_gives_one)
{
	struct rql l;
	struct rql_ioc a = {0}, b = {0};

	rql_init(&l, 4);
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 4), 4); /* a filled it at t=0 */
	EXPECT(rql_get(&l, RQL_ASYNC, &a, 19 * MS));  /* within 20 ms */
	EXPECT(!rql_get(&l, RQL_ASYNC, &a, 20 * MS)); /* time_before: no longer */
	EXPECT(!rql_batching(&l, &a, 20 * MS));
	/* b slept: woken, it gets a fresh batch, good for one request whatever the time */
	b.nr_batch = 0;
	{
		struct rql_waiter w;

		rql_wait(&l, RQL_ASYNC, &w);
		rql_woken(&l, RQL_ASYNC, &w, &b, 100 * MS);
		EXPECT(!w.queued);
	}
	EXPECT_EQ(b.nr_batch, 32);
	EXPECT(rql_batching(&l, &b, 10000 * MS)); /* untouched batch: batching forever */
	EXPECT(rql_get(&l, RQL_ASYNC, &b, 10000 * MS));
	EXPECT_EQ(b.nr_batch, 31);
	EXPECT(!rql_batching(&l, &b, 10000 * MS)); /* started 9.9 s ago */
	EXPECT(!rql_get(&l, RQL_ASYNC, &b, 10000 * MS));
}

TEST(congested_on_at_threshold_off_below_the_lower_one)
{
	struct rql l;
	struct rql_ioc a = {0};
	bool unc;

	rql_init(&l, 128);
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 112), 112);
	EXPECT(!rql_congested(&l, RQL_ASYNC));
	EXPECT(rql_get(&l, RQL_ASYNC, &a, 0)); /* the 113th: count+1 >= on */
	EXPECT(rql_congested(&l, RQL_ASYNC));
	EXPECT_EQ(l.st.congested_on[RQL_ASYNC], 1);
	/* stays congested down to 103 */
	for (unsigned c = 113; c > 103; c--) {
		EXPECT(rql_put(&l, RQL_ASYNC, &unc) == NULL);
		EXPECT(!unc);
		EXPECT(rql_congested(&l, RQL_ASYNC));
	}
	EXPECT_EQ(l.count[RQL_ASYNC], 103);
	rql_put(&l, RQL_ASYNC, &unc); /* 102 < 103 */
	EXPECT(unc);
	EXPECT(!rql_congested(&l, RQL_ASYNC));
	/* a free further down still reports it (every free below off wakes congestion_wait) */
	rql_put(&l, RQL_ASYNC, &unc);
	EXPECT(unc);
	EXPECT(!rql_congested(&l, RQL_SYNC));
}

TEST(waiters_wake_one_per_free_in_fifo_order_only_below_the_limit)
{
	struct rql l;
	struct rql_ioc a = {0}, iw[3] = {{0}};
	struct rql_waiter w[3];

	rql_init(&l, 128);
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 200), 159); /* a filled it, batched 31 more */
	for (int i = 0; i < 3; i++) {
		w[i].cookie = &iw[i];
		EXPECT(!rql_get(&l, RQL_ASYNC, &iw[i], 1 * MS));
		rql_wait(&l, RQL_ASYNC, &w[i]);
	}
	/* frees above the limit wake nobody: 159 -> 128 */
	for (int i = 0; i < 31; i++)
		EXPECT(put(&l, RQL_ASYNC) == NULL);
	EXPECT(l.full[RQL_ASYNC]);
	/* 128 -> 127: below the limit, the first waiter wakes, and only it */
	EXPECT(put(&l, RQL_ASYNC) == &w[0]);
	EXPECT(!l.full[RQL_ASYNC]);
	EXPECT(!w[0].queued);
	EXPECT(w[1].queued);
	/* the next free wakes the next one, even if the first has not run yet */
	EXPECT(put(&l, RQL_ASYNC) == &w[1]);
	/* w[0] runs first (126 allocated): a batcher now, it takes two and fills the queue */
	rql_woken(&l, RQL_ASYNC, &w[0], &iw[0], 2 * MS);
	EXPECT_EQ(iw[0].nr_batch, 32);
	EXPECT(rql_get(&l, RQL_ASYNC, &iw[0], 2 * MS));
	EXPECT(rql_get(&l, RQL_ASYNC, &iw[0], 2 * MS));
	EXPECT(l.full[RQL_ASYNC]);
	EXPECT_EQ(iw[0].nr_batch, 31); /* only the one at the limit counted */
	/* the next free (128 -> 127) wakes the last waiter; then nobody is left */
	EXPECT(put(&l, RQL_ASYNC) == &w[2]);
	EXPECT(put(&l, RQL_ASYNC) == NULL);
}

TEST(a_waiter_that_gives_up_leaves_the_queue)
{
	struct rql l;
	struct rql_ioc a = {0}, b = {0}, c = {0};
	struct rql_waiter wb, wc;

	rql_init(&l, 2);
	EXPECT_EQ(get_n(&l, RQL_ASYNC, &a, 0, 2), 2);
	EXPECT(!rql_get(&l, RQL_ASYNC, &b, 100 * MS));
	rql_wait(&l, RQL_ASYNC, &wb);
	EXPECT(!rql_get(&l, RQL_ASYNC, &c, 100 * MS));
	rql_wait(&l, RQL_ASYNC, &wc);
	rql_woken(&l, RQL_ASYNC, &wb, &b, 200 * MS); /* finish_wait without a wake */
	EXPECT(!wb.queued);
	EXPECT(put(&l, RQL_ASYNC) == &wc);
	EXPECT(l.head[RQL_ASYNC] == NULL);
	EXPECT(l.tail[RQL_ASYNC] == NULL);
}

TEST_MAIN()
