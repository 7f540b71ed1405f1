/* core/mm fragmentation recipes: each item's effect, determinism for a seed, errors. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)

static void apply(struct fakeenv *fe, const char *spec, const char *recipe, uint64_t seed)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 64 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fragment(fe->mm, recipe, seed, err, sizeof(err), NULL), 0);
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
}

static bool same_frames(struct fakeenv *a, struct fakeenv *b)
{
	for (uint32_t p = 0; p < a->nr_frames; p++) {
		const struct mm_frame *x = pfn_frame(a->mm, p), *y = pfn_frame(b->mm, p);

		if (x->state != y->state || x->owner != y->owner || x->flags != y->flags)
			return false;
	}
	return true;
}

TEST(deterministic_for_a_seed)
{
	static const char *const recipe = "pagecache:30%,dirty:5%,anon:10%,unmovable:0.5%";
	struct fakeenv a, b, c;

	apply(&a, "linux-3.1", recipe, 42);
	apply(&b, "linux-3.1", recipe, 42);
	apply(&c, "linux-3.1", recipe, 43);
	EXPECT(same_frames(&a, &b));
	EXPECT(!same_frames(&a, &c));
	fakeenv_destroy(&a);
	fakeenv_destroy(&b);
	fakeenv_destroy(&c);
	apply(&a, "modern-always", "thpcompact", 1);
	apply(&b, "modern-always", "thpcompact", 1);
	EXPECT(same_frames(&a, &b));
	fakeenv_destroy(&a);
	fakeenv_destroy(&b);
}

TEST(items_do_what_they_say)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t n = 16384, blocks = 0;

	apply(&fe, "linux-3.3", "unmovable:0.5%,pagecache:50%,dirty:10%,anon:10%", 7);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file, n / 2 + 1638); /* each item rounds: 1638.4 -> 1638 */
	EXPECT_EQ(c.file_dirty, 1638);
	EXPECT_EQ(c.foreign, 1638);
	EXPECT_EQ(c.unmovable, 82); /* 81.92 -> 82 */
	for (uint32_t b = 0; b < fe.mm->nr_blocks; b++)
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
			if (pfn_frame(fe.mm, b * MM_HPAGE_NR + i)->state == FS_UNMOVABLE) {
				blocks++;
				break;
			}
	EXPECT_GT(blocks, 20); /* one per random pageblock (repeats possible) */
	fakeenv_destroy(&fe);
}

/* thpcompact: no free 2 MiB block, half of every block is program-like anon, and the holes
 * are page cache: the pool is fragmented but compactable. */
TEST(thpcompact_fragments_but_is_compactable)
{
	struct fakeenv fe;
	struct mm_counts c;

	apply(&fe, "linux-3.1", "thpcompact", 1);
	mm_get_counts(fe.mm, &c);
	/* filled down to HIGH: free 2 MiB blocks only within the (3.x THP-raised) watermarks */
	EXPECT_LE(c.free_blocks_order9, c.wmark_high / MM_HPAGE_NR + 1);
	EXPECT_GT(c.foreign, c.nr_frames / 3);
	EXPECT_GT(c.file, c.nr_frames / 3);
	EXPECT_GE(c.free, c.wmark_high);
	{
		uint32_t half_anon = 0;

		for (uint32_t b = 0; b < fe.mm->nr_blocks; b++)
			half_anon += pfn_frame(fe.mm, b * MM_HPAGE_NR + 300)->state == FS_ANON &&
				     pfn_frame(fe.mm, b * MM_HPAGE_NR + 100)->state != FS_ANON;
		/* HIGH's worth stayed free at the top */
		EXPECT_GE(half_anon, fe.mm->nr_blocks - 2 - c.wmark_high / MM_HPAGE_NR);
	}
	fakeenv_destroy(&fe);
}

TEST(errors_name_the_item)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(mm_fragment(fe.mm, "pagecache:60%,bogus:1%", 1, err, sizeof(err), NULL), -EINVAL);
	EXPECT(strstr(err, "'bogus:1%'") != NULL);
	EXPECT(strstr(err, "thpcompact, pagecache:F") != NULL);
	EXPECT_EQ(mm_fragment(fe.mm, "dirty:lots", 1, err, sizeof(err), NULL), -EINVAL);
	EXPECT(strstr(err, "'dirty:lots'") != NULL);
	EXPECT_EQ(mm_fragment(fe.mm, "anon:150%", 1, err, sizeof(err), NULL), -EINVAL);
	EXPECT_EQ(mm_fragment(fe.mm, "thpcompact,", 1, err, sizeof(err), NULL), -EINVAL);
	{
		struct mm_counts c;

		mm_get_counts(fe.mm, &c); /* a bad recipe changes nothing */
		EXPECT_EQ(c.free, c.nr_frames);
	}
	EXPECT_EQ(mm_fragment(fe.mm, "", 1, err, sizeof(err), NULL), 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()
