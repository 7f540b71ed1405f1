/* Region table: lookup by address and by cookie, overlap rules, trimming past unmapped ends,
 * extent states at creation and after recomputation, cookie ids kept across a transfer. */
#include "harness.h"

#include <errno.h>
#include <sys/mman.h>

#include "live/uffd_internal.h"

#define MB   (1UL << 20)
#define BASE 0x7f0000000000UL /* addresses are only numbers here: nothing is mapped */

TEST(region_lookup_by_address_and_cookie)
{
	struct uffd_table t;
	struct uffd_region *a, *b, *g;

	ASSERT_EQ(uffd_table_init(&t), 0);
	ASSERT_EQ(uffd_region_create(&t, BASE, BASE + 4 * MB, PROT_READ | PROT_WRITE, 0, true, &a),
		  0);
	ASSERT_EQ(uffd_region_create(&t, BASE + 8 * MB, BASE + 9 * MB, PROT_READ | PROT_WRITE, 0,
				     true, &b),
		  0);
	g = uffd_region_get(&t, BASE + 4 * MB - 1);
	ASSERT(g == a);
	uffd_region_put(&t, g);
	EXPECT(uffd_region_get(&t, BASE + 4 * MB) == NULL);
	EXPECT(uffd_region_get(&t, BASE - 1) == NULL);
	g = uffd_region_get(&t, BASE + 8 * MB);
	ASSERT(g == b);
	uffd_region_put(&t, g);
	/* cookies name (region, page) and survive only as long as the region */
	g = uffd_region_by_cookie(&t, uffd_cookie(b, 7));
	ASSERT(g == b);
	uffd_region_put(&t, g);
	EXPECT(uffd_region_by_cookie(&t, uffd_cookie(b, 7) | MM_OWNER_FOREIGN) == NULL);
	EXPECT(uffd_cookie(a, 0) >> 32 != uffd_cookie(b, 0) >> 32);
	EXPECT((uffd_cookie(a, 0) & (MM_OWNER_FOREIGN | MM_OWNER_FILE_BIT)) == 0);
	uffd_region_remove(&t, b);
	EXPECT(uffd_region_get(&t, BASE + 8 * MB) == NULL);
	uffd_table_destroy(&t);
}

TEST(region_overlap_is_refused)
{
	struct uffd_table t;
	struct uffd_region *a, *b;

	ASSERT_EQ(uffd_table_init(&t), 0);
	ASSERT_EQ(uffd_region_create(&t, BASE + 2 * MB, BASE + 6 * MB, 3, 0, true, &a), 0);
	EXPECT_EQ(uffd_region_create(&t, BASE + 5 * MB, BASE + 7 * MB, 3, 0, true, &b), -EEXIST);
	EXPECT_EQ(uffd_region_create(&t, BASE, BASE + 2 * MB + 4096, 3, 0, true, &b), -EEXIST);
	EXPECT(uffd_table_overlaps(&t, BASE + 6 * MB - 4096, BASE + 7 * MB));
	EXPECT(!uffd_table_overlaps(&t, BASE + 6 * MB, BASE + 7 * MB));
	EXPECT(!uffd_table_overlaps(&t, BASE, BASE + 2 * MB));
	ASSERT_EQ(uffd_region_create(&t, BASE, BASE + 2 * MB, 3, 0, true, &b), 0);
	uffd_table_destroy(&t);
}

TEST(region_extents_start_empty_only_when_whole)
{
	struct uffd_table t;
	struct uffd_region *r;

	ASSERT_EQ(uffd_table_init(&t), 0);
	/* starts 1 MiB into an extent, ends 1 MiB into another: 4 extents, 2 whole */
	ASSERT_EQ(uffd_region_create(&t, BASE + 1 * MB, BASE + 7 * MB, 3, 0, true, &r), 0);
	ASSERT_EQ(r->nexts, 4);
	EXPECT_EQ(r->xstate[0], AS_X_SMALL);
	EXPECT_EQ(r->xstate[1], AS_X_EMPTY);
	EXPECT_EQ(r->xstate[2], AS_X_EMPTY);
	EXPECT_EQ(r->xstate[3], AS_X_SMALL);
	EXPECT_EQ(as_ext_of(&r->as, BASE + 2 * MB), 1);
	EXPECT_EQ(as_page_of(&r->as, BASE + 2 * MB), 256);
	EXPECT_EQ(as_pfn(&r->as, 5), MM_NO_PFN); /* zeroed metadata means "no frame" */
	as_pfn_set(&r->as, 5, 1234);
	EXPECT_EQ(as_pfn(&r->as, 5), 1234);
	/* a page in use makes a whole extent SMALL on recomputation */
	r->pstate[300] = AS_P_PRESENT;
	as_recompute_extents(&r->as, 0, 3);
	EXPECT_EQ(r->xstate[1], AS_X_SMALL);
	EXPECT_EQ(r->xstate[2], AS_X_EMPTY);
	uffd_table_destroy(&t);
}

TEST(region_trim_drops_unmapped_ends)
{
	struct uffd_table t;
	struct uffd_region *r, *g;

	ASSERT_EQ(uffd_table_init(&t), 0);
	ASSERT_EQ(uffd_region_create(&t, BASE, BASE + 4 * MB, 3, 0, true, &r), 0);
	for (uint32_t p = 0; p < 256; p++)
		r->pstate[p] = AS_P_GONE; /* first MiB unmapped */
	for (uint32_t p = 512; p < 600; p++)
		r->pstate[p] = AS_P_GONE; /* a hole in the middle stays */
	uffd_region_trim(&t, r);
	EXPECT_EQ(r->lo, BASE + 1 * MB);
	EXPECT_EQ(r->hi, BASE + 4 * MB);
	EXPECT(uffd_region_get(&t, BASE) == NULL);
	g = uffd_region_get(&t, BASE + 2 * MB + 4096);
	EXPECT(g == r);
	if (g)
		uffd_region_put(&t, g);
	g = uffd_region_get(&t, BASE + 3 * MB); /* callers always hold a reference */
	ASSERT(g == r);
	for (uint32_t p = 0; p < r->npages; p++)
		r->pstate[p] = AS_P_GONE;
	uffd_region_trim(&t, r);
	EXPECT(r->dead);
	EXPECT(uffd_region_get(&t, BASE + 3 * MB) == NULL);
	uffd_region_put(&t, g);
	uffd_table_destroy(&t);
}

TEST(region_transfer_keeps_cookie_id)
{
	struct uffd_table t;
	struct uffd_region *r, *s, *g;
	uint64_t cookie;

	ASSERT_EQ(uffd_table_init(&t), 0);
	ASSERT_EQ(uffd_region_create(&t, BASE, BASE + 2 * MB, 3, 0, true, &r), 0);
	cookie = uffd_cookie(r, 9);
	ASSERT_EQ(uffd_region_create(&t, BASE + 64 * MB, BASE + 68 * MB, 3, r->cid, false, &s), 0);
	EXPECT(uffd_region_get(&t, BASE + 64 * MB) == NULL); /* not inserted yet */
	uffd_region_remove(&t, r);
	ASSERT_EQ(uffd_region_insert(&t, s), 0);
	g = uffd_region_by_cookie(&t, cookie);
	EXPECT(g == s);
	if (g)
		uffd_region_put(&t, g);
	uffd_table_destroy(&t);
}

TEST(region_slots_are_reused)
{
	struct uffd_table t;
	struct uffd_region *r;
	uint32_t first_cid = 0;

	ASSERT_EQ(uffd_table_init(&t), 0);
	for (unsigned i = 0; i < 3 * UFFD_REGION_SLOTS; i++) {
		ASSERT_EQ(uffd_region_create(&t, BASE, BASE + 1 * MB, 3, 0, true, &r), 0);
		if (i == 0)
			first_cid = r->cid;
		else if ((r->cid & 0xffff) == (first_cid & 0xffff))
			EXPECT_NE(r->cid, first_cid); /* a stale cookie never names a new region */
		uffd_region_remove(&t, r);
	}
	uffd_table_destroy(&t);
}

TEST_MAIN()
