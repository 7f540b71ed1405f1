/* core/io writeback request building: file-contiguous runs of at most max_pages, the
 * nr_requests bound, writeouts ahead of the flusher's pages, and the queue's storage. */
#include "harness.h"
#include "io/wbqueue.h"
#include "mm/mm.h"

#define CAP 16

struct fixture {
	struct wbq q;
	uint32_t pfn[CAP];
	uint64_t owner[CAP];
};

static void init(struct fixture *f, unsigned nr_requests, unsigned max_pages)
{
	wbq_init(&f->q, nr_requests, max_pages, f->pfn, f->owner, CAP);
}

/* Queue pages (file, index) with pfn = 100 * file + index. */
static unsigned push(struct fixture *f, bool front, const unsigned (*pages)[2], unsigned n)
{
	uint32_t pfn[2 * CAP];
	uint64_t owner[2 * CAP];

	for (unsigned i = 0; i < n; i++) {
		pfn[i] = 100 * pages[i][0] + pages[i][1];
		owner[i] = MM_OWNER_FILE(pages[i][0], pages[i][1]);
	}
	return front ? wbq_push_front(&f->q, pfn, owner, n) : wbq_push(&f->q, pfn, owner, n);
}

static uint32_t head_pfn(const struct fixture *f)
{
	return f->q.pfn[f->q.head];
}

TEST(runs_are_file_contiguous_and_bounded_by_max_pages)
{
	static const unsigned pages[][2] = {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4},
					    {1, 6}, {2, 7}, {2, 8}, {3, 9}, {1, 7}};
	struct fixture f;

	init(&f, 128, 4);
	ASSERT_EQ(push(&f, false, pages, 10), 10);
	EXPECT_EQ(wbq_next(&f.q), 4); /* 1:0-3, cut at max_pages */
	wbq_take(&f.q, 4);
	EXPECT_EQ(head_pfn(&f), 104);
	EXPECT_EQ(wbq_next(&f.q), 1); /* 1:4, then a hole */
	wbq_take(&f.q, 1);
	EXPECT_EQ(wbq_next(&f.q), 1); /* 1:6, then another file */
	wbq_take(&f.q, 1);
	EXPECT_EQ(wbq_next(&f.q), 2); /* 2:7-8 */
	wbq_take(&f.q, 2);
	EXPECT_EQ(wbq_next(&f.q), 1); /* 3:9: same index sequence, other file */
	wbq_take(&f.q, 1);
	EXPECT_EQ(wbq_next(&f.q), 1); /* 1:7 does not join 1:6, taken long ago */
	wbq_take(&f.q, 1);
	EXPECT_EQ(wbq_next(&f.q), 0);
	EXPECT_EQ(f.q.n, 0);
	EXPECT_EQ(f.q.inflight, 6);
}

TEST(nr_requests_bounds_the_requests_in_flight)
{
	static const unsigned pages[][2] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
	struct fixture f;

	init(&f, 2, 30);
	push(&f, false, pages, 4);
	wbq_take(&f.q, wbq_next(&f.q));
	wbq_take(&f.q, wbq_next(&f.q));
	EXPECT(wbq_congested(&f.q));
	EXPECT_EQ(wbq_next(&f.q), 0); /* get_request would wait: the pages stay queued */
	EXPECT_EQ(f.q.n, 2);
	wbq_done(&f.q, 1);
	EXPECT(!wbq_congested(&f.q));
	EXPECT_EQ(wbq_next(&f.q), 1);
	EXPECT_EQ(head_pfn(&f), 300);
	wbq_done(&f.q, 5); /* a scheduler merge completes several; never below zero */
	EXPECT_EQ(f.q.inflight, 0);
	init(&f, 0, 0); /* degenerate bounds still make progress, one page at a time */
	push(&f, false, pages, 2);
	EXPECT_EQ(wbq_next(&f.q), 1);
}

TEST(writeouts_go_ahead_of_the_flushers_pages)
{
	static const unsigned flusher[][2] = {{1, 0}, {1, 1}, {1, 2}};
	static const unsigned writeout[][2] = {{7, 5}, {8, 1}};
	struct fixture f;

	init(&f, 128, 30);
	push(&f, false, flusher, 3);
	wbq_take(&f.q, 1); /* head moved on: room in front */
	push(&f, true, writeout, 2);
	EXPECT_EQ(f.q.n, 4);
	EXPECT_EQ(head_pfn(&f), 705);
	EXPECT_EQ(wbq_next(&f.q), 1);
	wbq_take(&f.q, 1);
	EXPECT_EQ(head_pfn(&f), 801);
	wbq_take(&f.q, wbq_next(&f.q));
	EXPECT_EQ(wbq_next(&f.q), 2); /* 1:1-2 */
	EXPECT_EQ(head_pfn(&f), 101);
}

TEST(storage_is_bounded_and_keeps_order)
{
	static const unsigned pages[CAP + 4][2] = {{1, 0},  {1, 1},  {1, 2},  {1, 3},  {1, 4},
						   {1, 5},  {1, 6},  {1, 7},  {1, 8},  {1, 9},
						   {1, 10}, {1, 11}, {1, 12}, {1, 13}, {1, 14},
						   {1, 15}, {1, 16}, {1, 17}, {1, 18}, {1, 19}};
	static const unsigned wo[][2] = {{9, 0}, {9, 1}, {9, 2}};
	struct fixture f;

	init(&f, 128, 4);
	EXPECT_EQ(push(&f, false, pages, CAP + 4), CAP); /* only what fits */
	EXPECT_EQ(wbq_room(&f.q), 0);
	EXPECT_EQ(push(&f, true, wo, 1), 0);
	wbq_take(&f.q, wbq_next(&f.q)); /* 1:0-3 */
	wbq_take(&f.q, wbq_next(&f.q)); /* 1:4-7 */
	EXPECT_EQ(wbq_room(&f.q), 8);
	/* the tail is at the end of the storage: the pages move down, order kept */
	EXPECT_EQ(push(&f, false, pages + CAP, 4), 4);
	EXPECT_EQ(head_pfn(&f), 108);
	/* no room in front of the head: the pages move up, order kept */
	f.q.head = 0;
	for (unsigned i = 0; i < f.q.n; i++) {
		f.q.pfn[i] = 108 + i;
		f.q.owner[i] = MM_OWNER_FILE(1, 8 + i);
	}
	EXPECT_EQ(push(&f, true, wo, 3), 3);
	EXPECT_EQ(f.q.n, 15);
	EXPECT_EQ(head_pfn(&f), 900);
	EXPECT_EQ(f.q.pfn[f.q.head + 3], 108);
	EXPECT_EQ(f.q.pfn[f.q.head + 14], 119);
	EXPECT_EQ(wbq_next(&f.q), 3); /* 9:0-2 */
	wbq_take(&f.q, 3);
	for (unsigned k = 0; k < 3; k++) {
		EXPECT_EQ(wbq_next(&f.q), 4);
		wbq_take(&f.q, 4);
	}
	EXPECT_EQ(f.q.n, 0);
	EXPECT_EQ(f.q.head, 0);
}

TEST_MAIN()
