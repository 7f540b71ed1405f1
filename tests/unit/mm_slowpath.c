/* core/mm slow path: each profile's step sequence on a fragmented pool, the 3.3 deferred-skip,
 * the 3.1 sync-compaction stall on writeback (with cause attribution) and the 3.1 reclaim
 * stall, as a fault record shows them. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)
#define MS  1000000ULL

enum {
	L = MM_STEP_FREELIST_LOW,
	M = MM_STEP_FREELIST_MIN,
	W = MM_STEP_WAKE_KSWAPD,
	A = MM_STEP_COMPACT_ASYNC,
	SL = MM_STEP_COMPACT_SYNC_LIGHT,
	S = MM_STEP_COMPACT_SYNC,
	D = MM_STEP_COMPACT_DEFERRED,
	R = MM_STEP_RECLAIM,
	F = MM_STEP_FALLBACK,
	END = -1
};

/* A 32 MiB pool where compaction cannot help: one unmovable frame in every pageblock, nothing
 * reclaimable. */
static void unmovable_everywhere(struct fakeenv *fe, const char *spec)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 32 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t b = 0; b < 16; b++)
		ASSERT_EQ(mm_debug_place(fe->mm, b * 512 + 7, DBG_UNMOVABLE, 0), 0);
}

static struct mm_fault_res fault(struct fakeenv *fe, enum mm_vma_advice advice, uint64_t extent)
{
	struct mm_fault_req req = {.owner = extent << 9,
				   .extent_owner = extent << 9,
				   .advice = advice,
				   .huge_ok = true,
				   .write = true};
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
	return res;
}

static void print_steps(const struct mm_fault_rec *rec)
{
	fprintf(stderr, "  steps:");
	for (unsigned i = 0; i < rec->nsteps; i++)
		fprintf(stderr, " %s(%u)", mm_step_name(rec->steps[i].step), rec->steps[i].result);
	fprintf(stderr, "\n");
}

static void expect_steps(const struct mm_fault_rec *rec, const int *want)
{
	unsigned n = 0;

	while (want[n] != END)
		n++;
	EXPECT_EQ(rec->nsteps, n);
	for (unsigned i = 0; i < n && i < rec->nsteps; i++)
		EXPECT_EQ(rec->steps[i].step, want[i]);
	if (rec->nsteps != n)
		print_steps(rec);
}

struct profile_case {
	const char *spec;
	enum mm_vma_advice advice;
	enum mm_fault_outcome outcome;
	int steps[24];
};

/* The first THP fault of each profile on the unmovable-fragmented pool (__alloc_pages_slowpath:
 * 3.x async, reclaim, second compaction; 6.12 with mm/mempolicy.c's NUMA two-pass wrapper). */
static const struct profile_case cases[] = {
    /* 3.1: the failed async compaction defers the zone, so the sync one is skipped */
    {"linux-3.1", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, R, D, F, END}},
    {"linux-3.1+nostall", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, R, D, F, END}},
    /* 3.2: as 3.1 (reclaim skips the zone: compaction_suitable() says go) */
    {"linux-3.2", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, R, D, F, END}},
    {"linux-3.2+nostall", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, R, D, F, END}},
    {"linux-3.3", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, R, SL, F, END}},
    {"linux-3.1:defrag=madvise", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, F, END}},
    {"linux-3.1:defrag=madvise", MM_VMA_HUGEPAGE, MM_FAULT_BASE, {L, M, A, R, D, F, END}},
    {"modern-always", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, A, M, R, A, L, M, A, M, R, A, F, END}},
    {"modern-always",
     MM_VMA_HUGEPAGE,
     MM_FAULT_BASE,
     {L, M, A, M, R, A, L, M, A, M, R, SL, F, END}},
    {"modern-defer", MM_VMA_HUGEPAGE, MM_FAULT_BASE, {L, W, M, W, M, F, END}},
    {"modern-defer+madvise", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, W, M, W, M, F, END}},
    {"modern-defer+madvise",
     MM_VMA_HUGEPAGE,
     MM_FAULT_BASE,
     {L, M, A, M, R, A, L, M, A, M, R, SL, F, END}},
    {"modern-madvise", MM_VMA_DEFAULT, MM_FAULT_BASE, {L, M, M, F, END}},
    {"modern-madvise",
     MM_VMA_HUGEPAGE,
     MM_FAULT_BASE,
     {L, M, A, M, R, A, L, M, A, M, R, SL, F, END}},
    {"modern-madvise:numa-two-pass=no",
     MM_VMA_HUGEPAGE,
     MM_FAULT_BASE,
     {L, M, A, M, R, SL, F, END}},
    {"modern-never", MM_VMA_HUGEPAGE, MM_FAULT_BASE, {END}},
    {"modern-always", MM_VMA_NOHUGEPAGE, MM_FAULT_BASE, {END}},
};

TEST(profile_step_sequences)
{
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fakeenv fe;
		struct mm_fault_res res;

		unmovable_everywhere(&fe, cases[i].spec);
		res = fault(&fe, cases[i].advice, 1);
		if (res.outcome != cases[i].outcome)
			fprintf(stderr, "  case %u: %s advice %d\n", i, cases[i].spec,
				cases[i].advice);
		EXPECT_EQ(res.outcome, cases[i].outcome);
		expect_steps(&res.rec, cases[i].steps);
		fakeenv_destroy(&fe);
	}
}

/* Counters of the 3.1 sequence: one stall per compaction that ran, deferral counted. */
TEST(counters_of_a_failing_31_fault)
{
	struct fakeenv fe;
	uint64_t st[MM_STAT_NR];

	unmovable_everywhere(&fe, "linux-3.1");
	fault(&fe, MM_VMA_DEFAULT, 1);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_COMPACT_STALL], 1);
	EXPECT_EQ(st[MM_STAT_COMPACT_FAIL], 1);
	EXPECT_EQ(st[MM_STAT_COMPACT_DEFERRED], 1);
	EXPECT_EQ(st[MM_STAT_ALLOCSTALL], 1);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 1);
	EXPECT_EQ(fe.mm->compact_defer_shift, 1);
	fakeenv_destroy(&fe);
}

/* 3.3: only the sync-light failure defers; the next THP fault finds the zone deferred and goes
 * straight to the fallback, skipping reclaim. */
TEST(deferred_33_fault_skips_reclaim)
{
	static const int second[] = {L, M, D, F, END};
	struct fakeenv fe;
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];

	unmovable_everywhere(&fe, "linux-3.3");
	fault(&fe, MM_VMA_DEFAULT, 1);
	EXPECT_EQ(fe.mm->compact_defer_shift, 1);
	res = fault(&fe, MM_VMA_DEFAULT, 2);
	expect_steps(&res.rec, second);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_ALLOCSTALL], 1);
	fakeenv_destroy(&fe);
}

/* 6.12 async failures never defer; the madvised fault's sync-light failure does, and then
 * both attempts of the next fault's first pass are deferred (and fail early: NORETRY). */
TEST(modern_deferral_in_two_passes)
{
	struct fakeenv fe;
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];

	unmovable_everywhere(&fe, "modern-always");
	fault(&fe, MM_VMA_DEFAULT, 1);
	EXPECT_EQ(fe.mm->compact_defer_shift, 0);
	fault(&fe, MM_VMA_HUGEPAGE, 2);
	EXPECT_EQ(fe.mm->compact_defer_shift, 1);
	res = fault(&fe, MM_VMA_HUGEPAGE, 3);
	{
		static const int want[] = {L, M, D, L, M, A, M, R, SL, F, END};

		expect_steps(&res.rec, want);
	}
	mm_get_stats(fe.mm, st);
	EXPECT_GE(st[MM_STAT_COMPACT_DEFERRED], 1);
	fakeenv_destroy(&fe);
}

/* The 2011 stall: page cache fills memory so async compaction is skipped, reclaim frees clean
 * pages, then 3.1's sync compaction writes the dirty page out and waits on writeback. */
static void stall_pool(struct fakeenv *fe, const char *spec)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, 10, DBG_FILE_DIRTY, MM_OWNER_FILE(1, 10)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, 11, DBG_FILE_WRITEBACK, MM_OWNER_FILE(1, 11)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, 13, DBG_ANON, 0x1000), 0);
	for (uint32_t pfn = 512; pfn < 2048; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	/* an unmovable page opens every block of clean page cache, so 3.x order-9 reclaim's
	 * neighbour isolation (mm_vmscan.c tests it) takes nothing from them */
	for (uint32_t pfn = 2048; pfn < 4096; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn,
					 pfn % 512 == 0 ? DBG_UNMOVABLE : DBG_FILE_CLEAN,
					 MM_OWNER_FILE(2, pfn)),
			  0);
	fe->wb_done_at[11] = 1000 * MS;
	fe->writeout_latency_ns = 10 * MS;
	fe->clear_ns = 100000;
}

TEST(stall_31_sync_compaction_waits_on_writeback)
{
	static const int want[] = {L, M, A, R, S, END};
	struct fakeenv fe;
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];

	stall_pool(&fe, "linux-3.1:reclaim-waits-writeback=no,reclaim-writeout=no");
	res = fault(&fe, MM_VMA_DEFAULT, 1);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	expect_steps(&res.rec, want);
	EXPECT_EQ(res.rec.steps[2].result, MM_COMPACT_SKIPPED);
	EXPECT_EQ(res.rec.wb_waits, 2);
	EXPECT_EQ(res.rec.wb_wait_ns, 1000 * MS);
	EXPECT_EQ(res.rec.cause, MM_CAUSE_COMPACT_WB_WAIT);
	EXPECT_GE(res.rec.compact_ns, res.rec.wb_wait_ns);
	EXPECT_EQ(res.rec.total_ns, res.rec.compact_ns + res.rec.reclaim_ns + res.rec.zero_ns);
	EXPECT_GE(res.rec.reclaimed, 1000); /* until compaction_suitable says go */
	EXPECT_EQ(fe.n_writeout, 1);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_COMPACT_WB_WAIT], 2);
	EXPECT_EQ(st[MM_STAT_RECLAIM_WB_WAIT], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 1);
	EXPECT_EQ(st[MM_STAT_COMPACT_STALL], 2);
	EXPECT_EQ(st[MM_STAT_COMPACT_SUCCESS], 1);
	fakeenv_destroy(&fe);
}

/* Mel's patch: the second compaction is async, never waits, and the fault falls back fast. */
TEST(nostall_does_not_wait)
{
	static const int want[] = {L, M, A, R, A, F, END};
	struct fakeenv fe;
	struct mm_fault_res res;

	stall_pool(&fe, "linux-3.1+nostall:reclaim-waits-writeback=no,reclaim-writeout=no");
	res = fault(&fe, MM_VMA_DEFAULT, 1);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	expect_steps(&res.rec, want);
	EXPECT_EQ(res.rec.wb_waits, 0);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_LT(res.rec.total_ns, 1 * MS);
	fakeenv_destroy(&fe);
}

/* 3.1 as shipped: direct reclaim for the THP writes the dirty page out and its synchronous
 * second pass waits on writeback (counted apart from compaction waits). */
TEST(stall_31_reclaim_waits_on_writeback)
{
	struct fakeenv fe;
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];

	stall_pool(&fe, "linux-3.1");
	res = fault(&fe, MM_VMA_DEFAULT, 1);
	mm_get_stats(fe.mm, st);
	EXPECT_GE(st[MM_STAT_RECLAIM_WB_WAIT], 1);
	EXPECT_GE(st[MM_STAT_PGSCAN_DIRECT_THROTTLE], 1);
	EXPECT_GE(res.rec.wb_waits, 1);
	EXPECT_EQ(res.rec.cause, MM_CAUSE_RECLAIM_WB_WAIT);
	EXPECT_GE(res.rec.reclaim_ns, 990 * MS);
	fakeenv_destroy(&fe);

	/* 3.3 still has the synchronous pass but no longer writes pages out itself */
	stall_pool(&fe, "linux-3.3");
	res = fault(&fe, MM_VMA_DEFAULT, 1);
	EXPECT_EQ(fe.n_writeout, 0);
	fakeenv_destroy(&fe);
}

/* 6.12 never waits on writeback for a THP: sync-light skips such pages. */
TEST(modern_never_waits)
{
	struct fakeenv fe;
	struct mm_fault_res res;

	stall_pool(&fe, "modern-always");
	res = fault(&fe, MM_VMA_HUGEPAGE, 1);
	EXPECT_EQ(res.rec.wb_waits, 0);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(fe.n_writeout, 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()
