/* core/io/iosched: the 3.x I/O schedulers (block/cfq-iosched.c, block/deadline-iosched.c,
 * 3.2) and the policy key that chooses one. A toy driver takes one request at a time and
 * completes it after a fixed service time. */
#include "harness.h"
#include "io/iosched.h"
#include "mm/mm_policy.h"

#include <string.h>

#define MS  1000000ULL
#define KIB 1024ULL
#define MIB (1024ULL * KIB)

#define NRQ 256
struct toy {
	struct ios s;
	struct ios_rq rq[NRQ];
	uint64_t t_disp[NRQ];
	unsigned n, order[NRQ], ndisp;
	uint64_t now;
};

static struct ios_rq *add(struct toy *t, uint64_t pos, uint64_t len, bool sync)
{
	struct ios_rq *r = &t->rq[t->n++];

	memset(r, 0, sizeof(*r));
	r->pos = pos;
	r->len = len;
	r->write = !sync;
	r->sync = sync;
	ios_add(&t->s, r, t->now);
	return r;
}

static unsigned idx(const struct toy *t, const struct ios_rq *r)
{
	return (unsigned)(r - t->rq);
}

/* Dispatch and complete one request taking svc; false if nothing was dispatched. */
static bool serve(struct toy *t, uint64_t svc)
{
	struct ios_rq *r = ios_dispatch(&t->s, t->now);

	if (!r)
		return false;
	t->t_disp[idx(t, r)] = t->now;
	t->order[t->ndisp++] = idx(t, r);
	t->now += svc;
	ios_completed(&t->s, r, t->now);
	return true;
}

TEST(defaults_are_the_3x_sources)
{
	struct ios s;

	ios_init(&s, IOS_CFQ, 0);
	EXPECT_EQ(s.p.fifo_expire[0], 250 * MS); /* async: HZ / 4 */
	EXPECT_EQ(s.p.fifo_expire[1], 125 * MS); /* sync: HZ / 8 */
	EXPECT_EQ(s.p.slice[0], 40 * MS);
	EXPECT_EQ(s.p.slice[1], 100 * MS);
	EXPECT_EQ(s.p.quantum, 8);
	EXPECT_EQ(s.p.slice_async_rq, 2);
	ios_init(&s, IOS_DEADLINE, 0);
	EXPECT_EQ(s.p.fifo_expire[0], 500 * MS);
	EXPECT_EQ(s.p.fifo_expire[1], 5000 * MS);
	EXPECT_EQ(s.p.fifo_batch, 16);
	EXPECT_EQ(s.p.writes_starved, 2);
	EXPECT_EQ(ios_kind_parse("cfq"), IOS_CFQ);
	EXPECT_EQ(ios_kind_parse("deadline"), IOS_DEADLINE);
	EXPECT_EQ(ios_kind_parse("noop"), -1);
}

/* A stream of 120 KiB writes at 1 GiB on (one every 25 ms, as fast as the device takes them)
 * and one page written out at sector 0 at 10 ms: with the head past it by more than
 * cfq_back_max, CFQ takes it when it heads the async FIFO and has expired (250 ms), at a slice
 * start; deadline only when its 5 s write_expire passes. */
static uint64_t scattered_page_wait(enum ios_kind kind)
{
	static struct toy t;
	struct ios_rq *page = NULL;
	uint64_t pos = 1024 * MIB;

	memset(&t, 0, sizeof(t));
	ios_init(&t.s, kind, 0);
	for (int i = 0; i < 8; i++, pos += 120 * KIB)
		add(&t, pos, 120 * KIB, false);
	ASSERT(serve(&t, 10 * MS)); /* the head moves to the stream */
	page = add(&t, 0, 4 * KIB, false);
	while (t.now < 10 * 1000 * MS && t.n < NRQ) {
		add(&t, pos, 120 * KIB, false);
		pos += 120 * KIB;
		ASSERT(serve(&t, 25 * MS));
		if (t.t_disp[idx(&t, page)])
			return t.t_disp[idx(&t, page)] - 10 * MS;
	}
	return UINT64_MAX;
}

TEST(cfq_sends_a_scattered_async_page_once_it_heads_the_expired_fifo)
{
	uint64_t cfq = scattered_page_wait(IOS_CFQ), dl = scattered_page_wait(IOS_DEADLINE);

	/* 7 older stream requests (175 ms) go first in sector order; the page expires at 250 ms
	 * and goes at the next slice start (a slice lasts 40 ms from its first completion: three
	 * requests of 25 ms) */
	EXPECT_GE(cfq, 250 * MS);
	EXPECT_LE(cfq, 250 * MS + 4 * 25 * MS);
	/* deadline: the sweep goes on up the stream; the page goes at the first batch start after
	 * 5 s (batches of 16 requests: 400 ms) */
	EXPECT_GE(dl, 5000 * MS);
	EXPECT_LE(dl, 5000 * MS + 16 * 25 * MS);
}

TEST(cfq_checks_the_fifo_once_per_slice)
{
	static struct toy t;
	struct ios_rq *a, *b;

	memset(&t, 0, sizeof(t));
	ios_init(&t.s, IOS_CFQ, 0);
	a = add(&t, 500 * MIB, 4 * KIB, false); /* oldest, far apart */
	b = add(&t, 900 * MIB, 4 * KIB, false);
	for (int i = 0; i < 20; i++)
		add(&t, 100 * MIB + (uint64_t)i * 4 * KIB, 4 * KIB, false);
	t.now = 300 * MS; /* all expired */
	ASSERT(serve(&t, 5 * MS));
	EXPECT_EQ(t.order[0], idx(&t, a)); /* the FIFO head, at the slice start */
	ASSERT(serve(&t, 5 * MS));
	/* then the sort order from a (b is the next request above it), not the FIFO (b is its
	 * head too, so look at the one after): the slice goes on in sector order */
	EXPECT_EQ(t.order[1], idx(&t, b));
	ASSERT(serve(&t, 5 * MS));
	/* b was the highest: next_rq wraps to the first, 100 MiB */
	EXPECT_EQ(t.rq[t.order[2]].pos, 100 * MIB);
	EXPECT_EQ(t.s.st.fifo_expired, 1);
	/* a slice lasts 40 ms from its first completion (8 requests of 5 ms); each new slice
	 * checks the FIFO again, whose head has expired: one FIFO pick per slice, the rest of
	 * the slice in sector order */
	while (t.now < 400 * MS)
		ASSERT(serve(&t, 5 * MS));
	EXPECT_GE(t.s.st.slices, 2);
	EXPECT_EQ(t.s.st.fifo_expired, t.s.st.slices);
	EXPECT_GE(t.ndisp, 4 * t.s.st.slices);
}

TEST(cfq_sync_reads_preempt_and_async_waits_for_them)
{
	static struct toy t;
	struct ios_rq *rd, *w2, *r;

	memset(&t, 0, sizeof(t));
	ios_init(&t.s, IOS_CFQ, 0);
	add(&t, 10 * MIB, 120 * KIB, false);
	w2 = add(&t, 10 * MIB + 120 * KIB, 120 * KIB, false);
	r = ios_dispatch(&t.s, t.now); /* async slice starts */
	ASSERT(r != NULL);
	EXPECT(!r->sync);
	rd = add(&t, 700 * MIB, 4 * KIB, true); /* a read: preempts the async slice */
	EXPECT_EQ(t.s.st.preempted, 1);
	EXPECT(ios_dispatch(&t.s, t.now) == rd); /* before w2, though far from the head */
	ios_completed(&t.s, r, t.now + 10 * MS);
	/* the read is in the driver: the async queue may not dispatch (cfq_may_dispatch) */
	t.now += 10 * MS;
	EXPECT(ios_dispatch(&t.s, t.now) == NULL);
	EXPECT_GE(t.s.st.refused, 1);
	ios_completed(&t.s, rd, t.now + 1 * MS);
	t.now += 1 * MS;
	EXPECT(ios_dispatch(&t.s, t.now) == w2);
}

TEST(deadline_batches_16_in_sector_order_then_checks_the_fifo)
{
	static struct toy t;
	struct ios_rq *old;

	memset(&t, 0, sizeof(t));
	ios_init(&t.s, IOS_DEADLINE, 0);
	old = add(&t, 0, 4 * KIB, false); /* the oldest write, lowest */
	t.now = 1 * MS;
	for (int i = 0; i < 40; i++)
		add(&t, 100 * MIB + (uint64_t)i * 120 * KIB, 120 * KIB, false);
	/* first batch: the FIFO head (nothing dispatched yet: no next_rq) */
	ASSERT(serve(&t, 1 * MS));
	EXPECT_EQ(t.order[0], idx(&t, old));
	/* at 5.1 s everything has expired; a batch of 16 goes on in sector order regardless */
	t.now = 5100 * MS;
	for (int i = 0; i < 15; i++)
		ASSERT(serve(&t, 1 * MS));
	for (unsigned i = 1; i < 16; i++)
		EXPECT_EQ(t.rq[t.order[i]].pos, 100 * MIB + (uint64_t)(i - 1) * 120 * KIB);
	EXPECT_EQ(t.s.st.fifo_expired, 0);
	/* the next batch starts at the FIFO head: the oldest left (the 16th stream request) */
	ASSERT(serve(&t, 1 * MS));
	EXPECT_EQ(t.s.st.fifo_expired, 1);
}

TEST(deadline_reads_first_until_writes_starved_twice_and_wraps_to_the_fifo_head)
{
	static struct toy t;
	unsigned reads_before_write = 0;

	memset(&t, 0, sizeof(t));
	ios_init(&t.s, IOS_DEADLINE, 0);
	t.s.p.fifo_batch = 1; /* one request per batch, to see the direction choice */
	for (int i = 0; i < 6; i++)
		add(&t, 200 * MIB + (uint64_t)i * MIB, 4 * KIB, true);
	add(&t, 50 * MIB, 4 * KIB, false);
	for (int i = 0; i < 4; i++) {
		ASSERT(serve(&t, 1 * MS));
		if (t.rq[t.order[i]].write)
			break;
		reads_before_write++;
	}
	EXPECT_EQ(reads_before_write, 2); /* starved++ >= writes_starved on the third choice */

	/* wrap: past the last request in sort order the batch restarts at the FIFO head, not at
	 * the lowest sector */
	memset(&t, 0, sizeof(t));
	ios_init(&t.s, IOS_DEADLINE, 0);
	add(&t, 300 * MIB, 4 * KIB, false); /* oldest */
	add(&t, 100 * MIB, 4 * KIB, false);
	add(&t, 400 * MIB, 4 * KIB, false);
	ASSERT(serve(&t, 1 * MS)); /* FIFO head: 300 */
	ASSERT(serve(&t, 1 * MS)); /* next in sort order: 400 */
	EXPECT_EQ(t.rq[t.order[1]].pos, 400 * MIB);
	ASSERT(serve(&t, 1 * MS)); /* no next: FIFO head, 100 */
	EXPECT_EQ(t.rq[t.order[2]].pos, 100 * MIB);
}

TEST(the_policy_chooses_the_scheduler_by_era)
{
	struct mm_policy p;
	char err[256];

	ASSERT_EQ(mm_policy_parse("linux-3.2", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.iosched, MM_IOSCHED_CFQ);
	ASSERT_EQ(mm_policy_parse("linux-3.1", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.iosched, MM_IOSCHED_CFQ);
	ASSERT_EQ(mm_policy_parse("linux-3.3", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.iosched, MM_IOSCHED_CFQ);
	ASSERT_EQ(mm_policy_parse("thp-always/always", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.iosched, MM_IOSCHED_DEADLINE);
	ASSERT_EQ(mm_policy_parse("linux-3.2:iosched=deadline", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.iosched, MM_IOSCHED_DEADLINE);
	EXPECT_NE(mm_policy_parse("linux-3.2:iosched=noop", &p, err, sizeof(err)), 0);
}

TEST_MAIN()
