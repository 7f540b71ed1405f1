/* Collapse for real: khugepaged's visits and MADV_COLLAPSE on the program's managed memory
 * (the walker of mm_khugepaged_scan_mm / mm_madv_collapse; mm decides, this does it).
 *
 * A range core/mm decided to collapse (its new order-9 block already taken) becomes one huge
 * page of the host, as collapse_huge_page makes one (mm/khugepaged.c of 6.12):
 *   1. core/as claims the extent (as_collapse_claim: every page MIGRATING, holes flagged): a
 *      fault on a hole waits, as on the kernel's mmap_lock held for write, and compaction backs
 *      off the range's pages.
 *   2. The holes get zeroed pages (UFFDIO_COPY without waking: the threads waiting on them stay
 *      asleep until the end) - a collapse fills holes with zeroed subpages.
 *   3. The host kernel's own MADV_COLLAPSE turns the now fully populated range into a THP: it
 *      takes mmap_lock for write, clears the PMD, copies the 512 pages into a huge page and maps
 *      it, so the program's threads wait for the copy exactly where the kernel makes them wait,
 *      and no write can be lost. (A range registered with userfaultfd tolerates no hole: the
 *      host's MADV_COLLAPSE gives -EBUSY, hence step 2.) Measured on this kernel: a populated
 *      uffd-registered range collapses, one hole makes it EBUSY.
 *   4. core/as commits (as_collapse_commit: old frames back, pages head + i, extent HUGE) and
 *      the waiters are woken.
 * If the host gives no THP (MADV_COLLAPSE fails, --host-thp 0), the emulated collapse stands and
 * the range stays mapped by 4 KiB pages: host.collapse_host_small counts it. The region's busy
 * lock is held for reading throughout, so the program's munmap/madvise/mremap of it wait, as
 * they would on mmap_lock.
 */
#include "uffd/uffd_internal.h"

#include <errno.h>

#include "util/clock.h"
#include "util/sys.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

struct walk {
	struct uffd_live *lv;
};

/* 2 MiB of zeros to fill holes from, mapped once, never written (reads map the zero page). */
static const void *zeros_2m(struct uffd_live *lv)
{
	void *z = __atomic_load_n(&lv->zeros_2m, __ATOMIC_ACQUIRE);
	long p;

	if (z)
		return z;
	p = sys_mmap_own(UFFD_HPAGE_SIZE, MAP_NORESERVE);
	if (sys_is_err(p))
		return NULL;
	if (!__atomic_compare_exchange_n(&lv->zeros_2m, &z, (void *)p, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		sys_munmap((void *)p, UFFD_HPAGE_SIZE);
		return z;
	}
	return (void *)p;
}

/* The first whole 2 MiB range of a managed region at or after *addr. */
static int walk_next(void *arg, uint64_t *addr, struct mm_collapse_scan *s)
{
	struct walk *wk = arg;
	struct uffd_live *lv = wk->lv;
	uintptr_t a = (uintptr_t)*addr;

	for (;;) {
		struct uffd_region *r;
		uintptr_t ea;
		uint32_t e;

		if (!uffd_regions_overlapping(&lv->table, a, UINTPTR_MAX, &r, 1))
			return -ENOENT;
		if (a < r->lo)
			a = r->lo;
		ea = (a + UFFD_HPAGE_SIZE - 1) & ~(uintptr_t)(UFFD_HPAGE_SIZE - 1);
		e = uffd_ext_of(r, ea);
		if (ea >= r->hi || e >= r->nexts || ea < r->base) {
			a = r->hi;
			uffd_region_put(&lv->table, r);
			continue;
		}
		as_collapse_scan(&r->as, e, uffd_cookie(r, uffd_page_of(r, ea)), s);
		uffd_region_put(&lv->table, r);
		*addr = ea;
		return 0;
	}
}

/* Zeroed pages into the holes of extent e (claimed: its holes are MIGRATING | AS_P_HOLE). */
static int fill_holes(struct uffd_live *lv, struct uffd_region *r, uint32_t e)
{
	uint32_t p0 = uffd_page_of(r, uffd_ext_addr(r, e));
	const void *zeros = zeros_2m(lv);

	for (uint32_t i = 0; i < MM_HPAGE_NR;) {
		uint32_t j = i;
		int rc;

		if (!(as_pstate(&r->as, p0 + i) & AS_P_HOLE)) {
			i++;
			continue;
		}
		while (j < MM_HPAGE_NR && (as_pstate(&r->as, p0 + j) & AS_P_HOLE))
			j++;
		if (zeros)
			rc = uffd_io_copy(lv->uffd,
					  uffd_ext_addr(r, e) + (uintptr_t)i * UFFD_PAGE_SIZE,
					  zeros, (size_t)(j - i) * UFFD_PAGE_SIZE, false, NULL);
		else
			rc = -ENOMEM;
		for (uint32_t k = i; rc == -ENOMEM && k < j; k++) /* one page at a time */
			rc = uffd_io_copy(lv->uffd,
					  uffd_ext_addr(r, e) + (uintptr_t)k * UFFD_PAGE_SIZE,
					  lv->zero_page, UFFD_PAGE_SIZE, false, NULL);
		if (rc < 0 && rc != -EEXIST)
			return rc;
		i = j;
	}
	return 0;
}

static int collapse_locked(struct uffd_live *lv, struct uffd_region *r, uint32_t e, uint32_t head,
			   void *call)
{
	uintptr_t ea = uffd_ext_addr(r, e);
	struct as_mm_ctx ctx = {lv->mm, call};
	const struct as_env env = as_mm_env(&ctx);
	struct as_counts c = {0};
	uint64_t t0 = clock_now_ns(), held;
	bool huge = false;
	int rc;

	if (as_collapse_claim(&r->as, e))
		return -EAGAIN;
	rc = fill_holes(lv, r, e);
	if (rc < 0) { /* the mapping is gone or broken: nothing collapsed, pages as they were */
		as_collapse_cancel(&env, &r->as, e, &c);
		uffd_io_wake(lv->uffd, ea, UFFD_HPAGE_SIZE);
		return -EAGAIN;
	}
	/* now every page is mapped (the filled holes hold zeros): the emulated huge page */
	if (lv->cfg.host_thp && !__atomic_load_n(&lv->thp_disabled, __ATOMIC_RELAXED))
		huge = sys_madvise((void *)ea, UFFD_HPAGE_SIZE, MADV_COLLAPSE) == 0 &&
		       uffd_range_is_pmd(lv->pagemap_fd, ea, UFFD_HPAGE_SIZE) > 0;
	rc = as_collapse_commit(&env, &r->as, e, head, &c);
	uffd_io_wake(lv->uffd, ea, UFFD_HPAGE_SIZE);
	if (rc < 0) /* cannot happen with the busy lock held: a release would have waited */
		return -EAGAIN;
	held = clock_now_ns() - t0;
	UFFD_COUNT(lv, collapses);
	if (!huge)
		UFFD_COUNT(lv, collapse_host_small);
	uffd_stat_add(&lv->stats->host.collapse_ns, held);
	uffd_stat_max(&lv->stats->host.collapse_max_ns, held);
	return 0;
}

/* [unlocked] mm's collapse of the range at addr into the block at head. */
static int walk_collapse(void *arg, uint64_t addr, const struct mm_collapse_scan *s, uint32_t head,
			 void *call)
{
	struct walk *wk = arg;
	struct uffd_live *lv = wk->lv;
	struct uffd_region *r = uffd_region_get(&lv->table, (uintptr_t)addr);
	int rc = -EAGAIN;

	if (!r)
		return -EAGAIN;
	pthread_rwlock_rdlock(&r->busy);
	if (!__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) && !r->failed &&
	    (uintptr_t)addr >= r->base &&
	    uffd_ext_addr(r, uffd_ext_of(r, (uintptr_t)addr)) == (uintptr_t)addr &&
	    uffd_cookie(r, uffd_page_of(r, (uintptr_t)addr)) == s->extent_owner)
		rc = collapse_locked(lv, r, uffd_ext_of(r, (uintptr_t)addr), head, call);
	pthread_rwlock_unlock(&r->busy);
	uffd_region_put(&lv->table, r);
	return rc;
}

int uffd_khugepaged_visit(struct uffd_live *lv, struct uffd_worker *w, uint64_t *addr,
			  unsigned budget, bool *done)
{
	struct walk wk = {lv};
	const struct mm_khugepaged_walker walker = {&wk, walk_next, walk_collapse};

	return mm_khugepaged_scan_mm(lv->mm, &walker, addr, budget, done, w);
}

/* MADV_COLLAPSE of [lo, hi) (6.12 madvise_collapse): each whole 2 MiB range of managed memory,
 * in the caller's thread; 0 if every range is huge now, else the last failure's errno. Parts of
 * the range thpemu does not manage go to the real madvise. */
int uffd_madv_collapse(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct walk wk = {lv};
	const struct mm_khugepaged_walker walker = {&wk, walk_next, walk_collapse};
	uintptr_t a = (lo + UFFD_HPAGE_SIZE - 1) & ~(uintptr_t)(UFFD_HPAGE_SIZE - 1);
	struct uffd_worker *w = &lv->caller;
	int ret = 0;

	if (!mm_policy(lv->mm)->madv_collapse)
		return -EINVAL; /* no such advice in this kernel */
	UFFD_COUNT(lv, madv_collapse_calls);
	pthread_mutex_lock(&lv->caller_lock);
	w->tid = sys_gettid();
	for (; a + UFFD_HPAGE_SIZE <= hi; a += UFFD_HPAGE_SIZE) {
		struct uffd_region *r = uffd_region_get(&lv->table, a);
		enum mm_scan_result res;
		int rc;

		if (!r || a + UFFD_HPAGE_SIZE > r->hi) { /* not (wholly) ours: the kernel's */
			if (r)
				uffd_region_put(&lv->table, r);
			rc = sys_madvise((void *)a, UFFD_HPAGE_SIZE, MADV_COLLAPSE);
			if (rc < 0)
				ret = rc;
			continue;
		}
		uffd_region_put(&lv->table, r);
		res = mm_madv_collapse(lv->mm, &walker, a, NULL, w);
		rc = mm_scan_result_errno(res);
		if (rc < 0)
			ret = rc;
	}
	pthread_mutex_unlock(&lv->caller_lock);
	return ret;
}
