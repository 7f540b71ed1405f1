/* core/mm's policy plugin hook (thpemu_policy.h, fault.c): a plugin table defined here (no
 * dlopen) - its order list honoured, also orders the settings do not allow; "no opinion" keeps
 * the built-in decision; nonsense answers fall back to it, are counted and reported once; the
 * slowpath veto keeps a fault out of compaction; what the plugin sees. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mm/internal.h"
#include "mm_fakeenv.h"
#include "thpemu_policy.h"

#define MIB (1ULL << 20)

/* The fake plugin: answers what the test puts in `answer`, remembers what it saw. */
static uint8_t answer[16];
static int answer_n;
static int slow_verdict;
static struct thpemu_fault_info seen;
static unsigned slow_calls;

static int fake_select(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max)
{
	seen = *in;
	for (int i = 0; i < answer_n && i < (int)sizeof(answer) && (unsigned)i < max; i++)
		orders[i] = answer[i];
	return answer_n;
}

static int fake_slowpath(const struct thpemu_fault_info *in, unsigned order)
{
	(void)in;
	(void)order;
	slow_calls++;
	return slow_verdict;
}

static const struct thpemu_policy_v1 fake = {
    .abi_version = THPEMU_POLICY_ABI_VERSION,
    .name = "fake",
    .select_orders = fake_select,
    .slowpath = fake_slowpath,
};

static unsigned notes;
static char last_note[256];

static void note(void *cookie, const char *msg)
{
	(void)cookie;
	notes++;
	snprintf(last_note, sizeof(last_note), "%s", msg);
}

static void setup(struct fakeenv *fe, const char *spec)
{
	char err[256];
	struct mm_policy_hook h = {.pl = &fake, .note = note};

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_set_policy_hook(fe->mm, &h), 0);
	notes = 0;
	slow_calls = 0;
	slow_verdict = THPEMU_SLOWPATH_DEFAULT;
	memset(&seen, 0, sizeof(seen));
}

static void say(int n, const uint8_t *orders)
{
	answer_n = n;
	for (int i = 0; i < n && i < (int)sizeof(answer); i++)
		answer[i] = orders[i];
}

/* A write fault at page `page` of extent `ext`. */
static struct mm_fault_res fault(struct fakeenv *fe, uint32_t ext, uint32_t page, bool huge_ok,
				 uint16_t orders_ok)
{
	struct mm_fault_req req = {
	    .owner = ((uint64_t)ext << 9) + page,
	    .extent_owner = (uint64_t)ext << 9,
	    .advice = MM_VMA_DEFAULT,
	    .huge_ok = huge_ok,
	    .write = true,
	    .orders_ok = orders_ok,
	    .addr = 0x40000000ULL + ((uint64_t)ext << 21) + page * 4096ULL,
	    .region_start = 0x40000000ULL,
	    .region_len = 64 * MIB,
	};
	struct mm_fault_res res;

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	return res;
}

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

static void check(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
}

#define ALL_MTHP ((uint16_t)0x1fc)

TEST(orders_honoured_even_where_settings_forbid)
{
	struct fakeenv fe;
	struct mm_fault_res r;

	setup(&fe, "modern-never"); /* built-in: never a THP */
	say(1, (const uint8_t[]){9});
	r = fault(&fe, 1, 3, true, ALL_MTHP);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(r.order, 9);
	say(2, (const uint8_t[]){4, 2});
	r = fault(&fe, 2, 17, false, ALL_MTHP);
	EXPECT_EQ(r.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(r.order, 4);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_CALLS), 2);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_ERRORS), 0);
	EXPECT_EQ(notes, 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(zero_orders_is_a_base_page_and_negative_is_no_opinion)
{
	struct fakeenv fe;
	struct mm_fault_res r;

	setup(&fe, "modern-always"); /* built-in: huge */
	say(0, NULL);
	r = fault(&fe, 1, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	say(1, (const uint8_t[]){0});
	r = fault(&fe, 2, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	say(-1, NULL);
	r = fault(&fe, 3, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_ERRORS), 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(the_plugin_sees_the_fault)
{
	struct fakeenv fe;
	struct mm_counts c;

	setup(&fe, "modern-always:hugepages-64kB=always");
	say(-1, NULL);
	fault(&fe, 5, 7, true, 1U << 4 | 1U << 2);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(seen.size, sizeof(struct thpemu_fault_info));
	EXPECT_EQ(seen.possible_orders, 1U | 1U << 2 | 1U << 4 | 1U << 9);
	EXPECT_EQ(seen.allowed_orders, 1U << 4 | 1U << 9);
	EXPECT_EQ(seen.addr, 0x40000000ULL + (5ULL << 21) + 7 * 4096);
	EXPECT_EQ(seen.region_len, 64 * MIB);
	EXPECT_EQ(seen.frag_index_9, -1000); /* a fresh pool has free 2 MiB blocks */
	EXPECT_GT(seen.nr_free[10], 0);
	ASSERT_STREQ(seen.era, "modern");
	ASSERT_STREQ(seen.policy, "thp-always/always"); /* canonical, given the alias */
	/* a read fault and a 3.x era offer no mTHP order */
	fakeenv_destroy(&fe);
	setup(&fe, "linux-3.1");
	say(-1, NULL);
	fault(&fe, 5, 7, false, ALL_MTHP);
	EXPECT_EQ(seen.possible_orders, 1U);
	EXPECT_EQ(seen.allowed_orders, 1U << 9);
	ASSERT_STREQ(seen.era, "linux-3.1");
	fakeenv_destroy(&fe);
}

TEST(nonsense_takes_the_builtin_decision_counted_and_reported_once)
{
	struct fakeenv fe;
	struct mm_fault_res r;

	setup(&fe, "modern-always");
	say(1, (const uint8_t[]){1}); /* order 1: never an anon size */
	r = fault(&fe, 1, 0, true, ALL_MTHP);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE); /* built-in */
	EXPECT_EQ(notes, 1);
	EXPECT(strstr(last_note, "order 1") != NULL);
	say(1, (const uint8_t[]){9}); /* 9 where the extent cannot be huge */
	r = fault(&fe, 2, 3, false, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	say(2, (const uint8_t[]){4, 4}); /* twice */
	r = fault(&fe, 3, 0, true, ALL_MTHP);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	say(12, (const uint8_t[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); /* count above max */
	r = fault(&fe, 4, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	say(1, (const uint8_t[]){12}); /* above 9 */
	r = fault(&fe, 5, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_ERRORS), 5);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_CALLS), 5);
	EXPECT_EQ(notes, 1); /* the first one only */
	check(&fe);
	fakeenv_destroy(&fe);
}

/* Every 2 MiB block holds one unmovable frame: no order-9 block, compaction cannot make one. */
static void fragment(struct fakeenv *fe)
{
	uint32_t n = 0, pfn, *all = malloc(sizeof(uint32_t) * fe->nr_frames);

	ASSERT(all != NULL);
	while (mm_alloc_pages(fe->mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | n, &pfn, NULL) == 0)
		all[n++] = pfn;
	for (uint32_t i = 0; i < n; i++)
		if (all[i] % MM_HPAGE_NR != 0)
			mm_free_pages(fe->mm, all[i], 0, NULL);
	free(all);
}

TEST(slowpath_veto_keeps_the_fault_out_of_compaction)
{
	struct fakeenv fe;
	struct mm_fault_res r;

	/* defrag=always: the built-in slow path compacts (and succeeds: the frames move) */
	setup(&fe, "modern-always:defrag=always");
	fragment(&fe);
	say(-1, NULL);
	slow_verdict = THPEMU_SLOWPATH_NONE;
	r = fault(&fe, 1, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE); /* freelists only: no order-9 block */
	EXPECT_EQ(stat(&fe, MM_STAT_COMPACT_STALL), 0);
	EXPECT_EQ(slow_calls, 1);
	slow_verdict = THPEMU_SLOWPATH_DEFAULT;
	r = fault(&fe, 2, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_GE(stat(&fe, MM_STAT_COMPACT_STALL), 1);
	slow_verdict = 7; /* nonsense: counted, default used */
	fault(&fe, 3, 0, true, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_PLUGIN_ERRORS), 1);
	check(&fe);
	fakeenv_destroy(&fe);
	/* defrag=never: DIRECT lets the fault compact where the built-in would not */
	setup(&fe, "modern-always:defrag=never");
	fragment(&fe);
	say(-1, NULL);
	r = fault(&fe, 1, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	EXPECT_EQ(stat(&fe, MM_STAT_COMPACT_STALL), 0);
	slow_verdict = THPEMU_SLOWPATH_DIRECT;
	r = fault(&fe, 2, 0, true, 0);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_GE(stat(&fe, MM_STAT_COMPACT_STALL), 1);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(hook_refuses_wrong_abi_and_shared_pools)
{
	struct fakeenv fe;
	char err[256];
	struct thpemu_policy_v1 bad = fake;
	struct mm_policy_hook h = {.pl = &bad};

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	bad.abi_version = 2;
	EXPECT_EQ(mm_set_policy_hook(fe.mm, &h), -EINVAL);
	bad.abi_version = THPEMU_POLICY_ABI_VERSION;
	bad.select_orders = NULL;
	EXPECT_EQ(mm_set_policy_hook(fe.mm, &h), -EINVAL);
	EXPECT_EQ(mm_set_policy_hook(fe.mm, NULL), 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()
