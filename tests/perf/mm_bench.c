/* mm_bench: what the emulated kernel costs per operation, on a 1 GiB pool.
 *
 * Prints ns per operation and the ratio to a floor measured in the same run (one order-0
 * buddy allocation + free through the public API), so numbers from a noisy shared machine stay
 * comparable:
 *   huge fault, fast path      mm_fault of a 2 MiB extent from the free lists + its free
 *   base fault, fast path      mm_fault of a 4 KiB page + its free
 *   compaction attempt         one direct async compaction on a thpcompact-fragmented pool
 *                              (3.x restart-from-scratch and 6.12 cached scanners) with a
 *                              quarter of its page cache dropped; a block it frees is kept
 * THPEMU_PERF_QUICK=1 runs few iterations (CI smoke mode). No timing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm/internal.h"
#include "util/clock.h"

#define GIB (1ULL << 30)

static uint64_t vnow(void *priv, void *call)
{
	return 0;
}

static const struct mm_env_ops ops = {.now = vnow}; /* no hooks: measure mm itself */

static struct mm *pool(const char *spec)
{
	struct mm_config cfg = {.pool_bytes = GIB};
	struct mm_env env = {.ops = &ops};
	struct mm *mm;
	char err[256];

	if (mm_policy_parse(spec, &cfg.policy, err, sizeof(err)) ||
	    mm_create(&cfg, &env, &mm, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: %s\n", err);
		exit(1);
	}
	return mm;
}

static double floor_ns(unsigned iters)
{
	struct mm *mm = pool("linux-3.1");
	uint64_t t0;
	uint32_t pfn;

	t0 = clock_now_ns();
	for (unsigned i = 0; i < iters; i++) {
		if (mm_alloc_pages(mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | i, &pfn, NULL))
			abort();
		mm_free_pages(mm, pfn, 0, NULL);
	}
	t0 = clock_now_ns() - t0;
	mm_destroy(mm);
	return (double)t0 / iters;
}

static double fault_ns(const char *spec, bool huge, unsigned iters)
{
	struct mm *mm = pool(spec);
	struct mm_fault_req req = {
	    .advice = huge ? MM_VMA_HUGEPAGE : MM_VMA_NOHUGEPAGE, .huge_ok = huge, .write = true};
	struct mm_fault_res res;
	uint64_t t0 = clock_now_ns();

	for (unsigned i = 0; i < iters; i++) {
		req.owner = req.extent_owner = (uint64_t)(i + 1) << 9;
		mm_fault(mm, &req, &res, NULL);
		if (res.outcome != (huge ? MM_FAULT_HUGE : MM_FAULT_BASE))
			abort();
		mm_anon_free(mm, res.pfn, huge ? MM_HPAGE_ORDER : 0, NULL);
	}
	t0 = clock_now_ns() - t0;
	mm_destroy(mm);
	return (double)t0 / iters;
}

/* Direct async compactions on a thpcompact pool; each successful one's block is kept. */
static double compaction_ns(const char *spec, unsigned iters, unsigned *succeeded,
			    uint64_t *scanned)
{
	struct mm *mm = pool(spec);
	struct fault_ctx fc = {0};
	struct alloc_ctx ac = {.order = 9,
			       .mt = MM_MT_MOVABLE,
			       .gfp = GFP_HIGHUSER_MOVABLE,
			       .alloc_flags = WMARK_MIN,
			       .fc = &fc};
	uint64_t st[MM_STAT_NR], t = 0;
	char err[256];

	if (mm_fragment(mm, "thpcompact", 1, err, sizeof(err), NULL))
		abort();
	/* thpcompact leaves the pool at HIGH; drop a quarter of its page cache so compaction
	 * has the free memory it needs (it would come from reclaim in a real run) */
	for (uint32_t i = 0; i < mm_nr_frames(mm); i += 4)
		mm_pagecache_remove(mm, MM_OWNER_FILE((1ULL << 26) - 1, i));
	*succeeded = 0;
	for (unsigned i = 0; i < iters; i++) {
		uint32_t cap, pfn;
		uint64_t t0 = clock_now_ns();

		try_to_compact_pages(mm, &ac, MM_MIGRATE_ASYNC, &cap);
		pfn = cap != MM_NO_PFN ? cap : get_page_from_freelist(mm, &ac, WMARK_MIN);
		t += clock_now_ns() - t0;
		if (pfn == MM_NO_PFN)
			continue;
		(*succeeded)++;
		mark_allocated(mm, pfn, 9, FS_HUGE, (uint64_t)(i + 1) << 9);
		mm->nr_anon += MM_HPAGE_NR;
		mm->nr_anon_huge += MM_HPAGE_NR;
	}
	if (mm_check(mm, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: %s\n", err);
		abort();
	}
	mm_get_stats(mm, st);
	*scanned = st[MM_STAT_COMPACT_MIGRATE_SCANNED] + st[MM_STAT_COMPACT_FREE_SCANNED];
	mm_destroy(mm);
	return (double)t / iters;
}

int main(void)
{
	const char *q = getenv("THPEMU_PERF_QUICK");
	bool quick = q && strcmp(q, "0");
	unsigned n = quick ? 2000 : 200000, nc = quick ? 5 : 100, ok;
	uint64_t scanned;
	double fl = floor_ns(n * 5), v;

	printf("mm_bench: 1 GiB pool (%u frames), %s mode\n", 262144, quick ? "quick" : "full");
	printf("  %-44s %10.1f ns\n", "floor: order-0 buddy alloc + free", fl);
	v = fault_ns("modern-always", true, n / 10);
	printf("  %-44s %10.1f ns  %7.1fx floor\n", "huge fault, fast path (+ free)", v, v / fl);
	v = fault_ns("modern-always", false, n);
	printf("  %-44s %10.1f ns  %7.1fx floor\n", "base fault, fast path (+ free)", v, v / fl);
	v = compaction_ns("linux-3.3", nc, &ok, &scanned);
	printf("  %-44s %10.1f ns  %7.1fx floor  (%u/%u freed a block, %.0f pfns scanned each)\n",
	       "compaction attempt, 3.x async, thpcompact", v, v / fl, ok, nc,
	       (double)scanned / nc);
	v = compaction_ns("modern-always", nc, &ok, &scanned);
	printf("  %-44s %10.1f ns  %7.1fx floor  (%u/%u freed a block, %.0f pfns scanned each)\n",
	       "compaction attempt, 6.12 async, thpcompact", v, v / fl, ok, nc,
	       (double)scanned / nc);
	return 0;
}
