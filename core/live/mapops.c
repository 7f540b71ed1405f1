/* The program's mapping calls on managed memory: mmap, munmap, madvise (the emulated side of
 * do_mmap, do_vmi_munmap, madvise_dontneed_free / hugepage_madvise).
 *
 * A call that changes managed memory takes the busy write lock of every region it touches (in
 * address order), so no handler is between "check the page is still wanted" and "map it". Pages
 * it frees give their frames back to mm; pages a handler owns (FILLING, MIGRATING) are only
 * flagged and their owner finalises. The real system call runs under the same locks. The
 * emulator never asks for EVENT_* features, so none of this waits for a handler round trip.
 *
 * What a call does to the page and extent states (which frames go back, which huge extents are
 * split, what a revived hole or an advice becomes) is core/addrspace's rule, shared with the
 * simulator; this file adds the locks, the trace records, the counters and the real system calls.
 *
 * Lock order: region busy (address order) -> mm lock -> table lock.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <string.h>

#include "obs/trace.h"
#include "util/sys.h"

#define MAX_TOUCHED 64 /* regions one call may touch; more is handled in passes */

static uintptr_t page_up(uintptr_t x)
{
	return (x + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
}

static void lock_all(struct uffd_region **rs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pthread_rwlock_wrlock(&rs[i]->busy);
}

static void unlock_put_all(struct uffd_live *lv, struct uffd_region **rs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		pthread_rwlock_unlock(&rs[i]->busy);
		uffd_region_put(&lv->table, rs[i]);
	}
}

void uffd_gauge_sub(struct uffd_live *lv, uint64_t bytes)
{
	__atomic_fetch_sub(&lv->stats->host.bytes_managed, bytes, __ATOMIC_RELAXED);
}

/* The host VMA advice of managed memory. With huge decisions possible, MADV_HUGEPAGE, so that
 * faults arrive with pmd_none and moves keep the PMD. With --host-thp 0 (a host with no THPs to
 * give), MADV_NOHUGEPAGE: the host's khugepaged would otherwise collapse a fully moved-in extent
 * (512 present PTEs qualify even in a uffd-armed VMA, mm/khugepaged.c: hpage_collapse_scan_pmd
 * refuses only pte_none entries there) and a real PMD would appear under a "no THP" host.
 * With --host-fault pte, MADV_NOHUGEPAGE too: a first touch then takes the host's 4 KiB path
 * (mm/memory.c do_anonymous_page: a page table, then handle_userfault) instead of
 * __do_huge_pmd_anonymous_page's allocation and clearing of a 2 MiB folio that it discards on
 * finding the VMA armed (mm/huge_memory.c, 6.18); the handler frees that empty page table before
 * a huge move (handler.c: free_empty_table). */
void uffd_host_advise(struct uffd_live *lv, uintptr_t lo, size_t len)
{
	if (!lv->cfg.host_thp || lv->pt_reclaim)
		sys_madvise((void *)lo, len, MADV_NOHUGEPAGE);
	else if (lv->may_huge)
		sys_madvise((void *)lo, len, MADV_HUGEPAGE);
}

void uffd_gauge_add(struct uffd_live *lv, uint64_t bytes)
{
	uint64_t now = __atomic_add_fetch(&lv->stats->host.bytes_managed, bytes, __ATOMIC_RELAXED);

	uffd_stat_max(&lv->stats->host.bytes_managed_peak, now);
}

/* ---- releasing pages ------------------------------------------------------------------------ */

/* Counters of what a core/addrspace rule did. */
void uffd_as_count(struct uffd_live *lv, const struct as_counts *c)
{
	if (c->pages_freed)
		uffd_stat_add(&lv->stats->host.pages_freed, c->pages_freed);
	if (c->huge_splits)
		uffd_stat_add(&lv->stats->host.huge_splits, c->huge_splits);
}

void uffd_region_release_pages(struct uffd_live *lv, struct uffd_region *r, uint32_t p0,
			       uint32_t p1, bool unmap)
{
	uintptr_t a0 = as_page_addr(&r->as, p0);
	uintptr_t a1 = as_page_addr(&r->as, p1);
	struct as_counts c = {0};
	struct as_mm_ctx ctx = {lv->mm, NULL};
	const struct as_env env = as_mm_env(&ctx);

	if (p0 >= p1)
		return;
	uffd_trace_event(lv, OBS_TR_RELEASE, a0, a1 - a0, 0, unmap ? OBS_TRF_UNMAP : 0, 0);
	as_release(&env, &r->as, p0, p1, unmap, &c);
	uffd_as_count(lv, &c);
}

/* ---- failing a region ------------------------------------------------------------------------ */

/* Hand region r back to the kernel: present pages stay the program's, missing ones are served
 * natively from now on, waiters are woken. false if it was already gone. */
static bool give_back(struct uffd_live *lv, struct uffd_region *r)
{
	uint64_t live = 0;

	pthread_rwlock_wrlock(&r->busy);
	if (r->failed || __atomic_load_n(&r->dead, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_unlock(&r->busy);
		return false;
	}
	r->failed = 1;
	live = as_live_pages(&r->as, as_page_of(&r->as, r->lo), as_page_of(&r->as, r->hi));
	uffd_io_unregister(lv->uffd, r->lo, r->hi - r->lo);
	uffd_region_release_pages(lv, r, as_page_of(&r->as, r->lo), as_page_of(&r->as, r->hi),
				  true);
	uffd_io_wake(lv->uffd, r->lo, r->hi - r->lo);
	pthread_rwlock_unlock(&r->busy);
	uffd_region_remove(&lv->table, r);
	uffd_gauge_sub(lv, live * UFFD_PAGE_SIZE);
	return true;
}

void uffd_region_fail(struct uffd_live *lv, struct uffd_region *r, int err)
{
	if (!give_back(lv, r))
		return;
	UFFD_COUNT(lv, regions_failed);
	uffd_say_once(lv, 1, "a userfaultfd operation failed (errno ", (uint64_t)-err,
		      "): that mapping now runs unmanaged (host.uffd_errors counts them)");
}

void uffd_release_for_program(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_region *rs[MAX_TOUCHED];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);

	for (unsigned i = 0; i < n; i++) {
		if (give_back(lv, rs[i])) {
			UFFD_COUNT(lv, ranges_released);
			uffd_note(lv, "the program registers memory with a userfaultfd of its own: "
				      "those mappings are its own (host.ranges_released)");
		}
		uffd_region_put(&lv->table, rs[i]);
	}
}

/* ---- mmap --------------------------------------------------------------------------------------
 */

static bool eligible_shape(int prot, int flags)
{
	if (!(flags & MAP_ANONYMOUS) || (flags & MAP_TYPE) != MAP_PRIVATE)
		return false;
	if (flags & (MAP_HUGETLB | MAP_STACK | MAP_GROWSDOWN))
		return false;
	/* PROT_NONE: a reservation that the program makes accessible later with mprotect (V8's
	 * and PartitionAlloc's pages, the JVM's heap, glibc's thread arenas). Registering it is
	 * free; the kernel keeps the registration when mprotect splits the VMA, so the pages
	 * made accessible fault here as they would into the kernel's THP code. */
	return prot == (PROT_READ | PROT_WRITE) || prot == PROT_NONE;
}

bool uffd_mmap_eligible(const struct uffd_live *lv, size_t len, int prot, int flags, int fd)
{
	(void)fd;
	return eligible_shape(prot, flags) && len >= lv->cfg.min_region && len > 0;
}

void uffd_passthrough_mapped(struct uffd_live *lv, long addr, size_t len, int prot, int flags)
{
	if (!sys_is_err(addr) && (flags & MAP_FIXED))
		uffd_shmem_unmapped(lv, (void *)addr, len); /* a shmem mapping replaced */
	if (!sys_is_err(addr) && len && len < lv->cfg.min_region && eligible_shape(prot, flags))
		uffd_census_note_small(lv, (uintptr_t)addr, page_up((uintptr_t)addr + len));
}

void uffd_passthrough_unmapped(struct uffd_live *lv, void *addr, size_t len)
{
	uffd_shmem_unmapped(lv, addr, len);
	uffd_census_forget_small(lv, (uintptr_t)addr, page_up((uintptr_t)addr + len));
}

/* A hole [lo, hi) in a region's span was mapped again: manage it in that region. Returns
 * -EAGAIN when the span no longer covers the hole (trimmed or removed meanwhile). */
static int revive(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_region *r = uffd_region_get(&lv->table, lo);
	uint32_t p0, p1;
	int rc = -EAGAIN;

	if (!r)
		return -EAGAIN;
	pthread_rwlock_wrlock(&r->busy);
	if (lo < r->lo || hi > r->hi || r->dead || r->failed)
		goto unlock;
	p0 = as_page_of(&r->as, lo);
	p1 = as_page_of(&r->as, hi);
	rc = -EEXIST;
	if (!as_range_gone(&r->as, p0, p1))
		goto unlock;
	uffd_host_advise(lv, lo, hi - lo);
	uffd_trace_event(lv, OBS_TR_MAP, lo, hi - lo, 0, 0, 0);
	as_revive(&r->as, p0, p1); /* before the first fault can arrive */
	rc = uffd_register_managed(lv, lo, hi - lo);
	if (rc == 0) {
		uffd_gauge_add(lv, hi - lo);
	} else {
		uffd_trace_event(lv, OBS_TR_RELEASE, lo, hi - lo, 0, OBS_TRF_UNMAP, 0);
		for (uint32_t p = p0; p < p1; p++)
			as_pstate_set(&r->as, p, AS_P_GONE);
		as_recompute_extents(&r->as, as_ext_of(&r->as, lo), as_ext_of(&r->as, hi - 1));
	}
unlock:
	pthread_rwlock_unlock(&r->busy);
	uffd_region_put(&lv->table, r);
	return rc;
}

/* A span may still reach over pages that were unmapped while a migration held them (they become
 * GONE only when the migrator lets go): trim the regions overlapping [lo, hi) again. */
static void retrim(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_region *rs[MAX_TOUCHED];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);

	for (unsigned i = 0; i < n; i++) {
		pthread_rwlock_wrlock(&rs[i]->busy);
		if (!rs[i]->dead)
			uffd_region_trim(&lv->table, rs[i]);
		pthread_rwlock_unlock(&rs[i]->busy);
		uffd_region_put(&lv->table, rs[i]);
	}
}

static int create_new(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, int prot)
{
	struct uffd_region *r;
	int rc = uffd_region_create(&lv->table, lo, hi, prot, 0, true, &r);

	if (rc < 0)
		return rc == -EEXIST ? -EAGAIN : rc;
	uffd_host_advise(lv, lo, hi - lo);
	uffd_trace_event(lv, OBS_TR_MAP, lo, hi - lo, 0, 0, 0);
	rc = uffd_register_managed(lv, lo, hi - lo);
	if (rc < 0) {
		uffd_trace_event(lv, OBS_TR_RELEASE, lo, hi - lo, 0, OBS_TRF_UNMAP, 0);
		uffd_region_remove(&lv->table, r);
		return rc;
	}
	UFFD_COUNT(lv, regions_created);
	uffd_gauge_add(lv, hi - lo);
	return 0;
}

/* Manage a fresh mapping [lo, hi): a new region, or a revived hole of an existing one. The
 * kernel may hand out addresses a region's span still covers (a concurrent unmap not finished
 * with its bookkeeping yet, pages released by a migration): trim and retry. */
static int manage_new(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, int prot)
{
	int rc = -EAGAIN;

	for (int tries = 0; tries < 4 && rc == -EAGAIN; tries++) {
		if (tries)
			retrim(lv, lo, hi);
		if (uffd_table_overlaps(&lv->table, lo, hi))
			rc = revive(lv, lo, hi);
		else
			rc = create_new(lv, lo, hi, prot);
	}
	if (rc < 0)
		UFFD_COUNT(lv, unmanaged_maps);
	return rc;
}

/* Place an eligible mapping of len bytes on a 2 MiB boundary (the kernel aligns only lengths that
 * are multiples of 2 MiB: thp_get_unmapped_area). */
static long map_aligned(size_t len, int prot, int flags)
{
	size_t over = len + UFFD_HPAGE_SIZE - UFFD_PAGE_SIZE;
	uintptr_t start, aligned;
	long p;

	if (len % UFFD_HPAGE_SIZE == 0) {
		p = sys_mmap(NULL, len, prot, flags, -1, 0);
		if (sys_is_err(p) || ((uintptr_t)p & (UFFD_HPAGE_SIZE - 1)) == 0)
			return p;
		sys_munmap((void *)p, len);
	}
	p = sys_mmap(NULL, over, prot, flags, -1, 0);
	if (sys_is_err(p))
		return p;
	start = (uintptr_t)p;
	aligned = (start + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1);
	if (aligned > start)
		sys_munmap((void *)start, aligned - start);
	if (start + over > aligned + len)
		sys_munmap((void *)(aligned + len), start + over - (aligned + len));
	return (long)aligned;
}

/* munmap semantics for [lo, hi) on every managed region it overlaps (MAP_FIXED, munmap),
 * running `real` (the actual system call) under the regions' locks. */
long uffd_unmap_managed(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, long (*real)(void *arg),
			void *arg)
{
	struct uffd_region *rs[MAX_TOUCHED];
	uint64_t gone = 0;
	unsigned n;
	long rc;

	n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);
	lock_all(rs, n);
	for (unsigned i = 0; i < n; i++) {
		struct uffd_region *r = rs[i];
		uintptr_t a = lo > r->lo ? lo : r->lo, b = hi < r->hi ? hi : r->hi;

		gone += as_live_pages(&r->as, as_page_of(&r->as, a), as_page_of(&r->as, b));
		uffd_region_release_pages(lv, r, as_page_of(&r->as, a), as_page_of(&r->as, b),
					  true);
	}
	rc = real(arg);
	for (unsigned i = 0; i < n; i++)
		uffd_region_trim(&lv->table, rs[i]);
	unlock_put_all(lv, rs, n);
	uffd_gauge_sub(lv, gone * UFFD_PAGE_SIZE);
	return rc;
}

struct mmap_args {
	void *addr;
	size_t len;
	int prot, flags, fd;
	long off;
};

static long real_mmap(void *arg)
{
	struct mmap_args *a = arg;

	return sys_mmap(a->addr, a->len, a->prot, a->flags, a->fd, a->off);
}

long uffd_mmap(struct uffd_live *lv, void *addr, size_t len, int prot, int flags, int fd, long off)
{
	struct mmap_args a = {addr, page_up(len), prot, flags & ~MAP_POPULATE, fd, off};
	bool eligible = uffd_mmap_eligible(lv, a.len, prot, flags, fd);
	/* after mlockall(MCL_FUTURE) the kernel populates a new mapping before mmap returns
	 * (mm/mmap.c: do_mmap, mm_populate), before it could be registered: its first touches
	 * would never reach the emulated kernel. Mapped PROT_NONE it is not populated (no access:
	 * mm/gup.c check_vma_flags); registered, then opened, it is populated through the
	 * emulator as MAP_POPULATE is (the populate mprotect attempts on a locked mapping cannot
	 * wait for a handler and stops at once: mm/mprotect.c mprotect_fixup) */
	bool future = eligible && __atomic_load_n(&lv->mcl_future, __ATOMIC_ACQUIRE);
	long p;

	if (future) {
		a.prot = PROT_NONE;
		flags |= MAP_POPULATE;
	}

	if ((flags & MAP_FIXED) && addr && uffd_is_managed(lv, addr, a.len)) {
		uintptr_t lo = (uintptr_t)addr;

		UFFD_COUNT(lv, fixed_over_managed);
		p = uffd_unmap_managed(lv, lo, lo + a.len, real_mmap, &a);
		/* shared memory placed into a reservation the program mapped PROT_NONE */
		if (!sys_is_err(p) && !eligible && uffd_shmem_eligible(lv, a.len, prot, flags, fd))
			uffd_shmem_mapped_over(lv, p, a.len, flags, fd, off);
	} else if (eligible && !addr && a.len >= UFFD_HPAGE_SIZE) {
		p = map_aligned(a.len, a.prot, a.flags);
	} else {
		p = real_mmap(&a);
	}
	if (sys_is_err(p) || !eligible)
		return p;
	if (flags & MAP_FIXED)
		uffd_shmem_unmapped(lv, (void *)p, a.len); /* a shmem mapping replaced */
	manage_new(lv, (uintptr_t)p, (uintptr_t)p + a.len, prot);
	if (future)
		sys_call3(SYS_mprotect, p, a.len, prot);
	/* MAP_POPULATE: prefault through the emulator, as first touches */
	if (flags & MAP_POPULATE)
		sys_madvise((void *)p, a.len, MADV_POPULATE_WRITE);
	return p;
}

/* ---- munmap -------------------------------------------------------------------------------- */

struct range_args {
	void *addr;
	size_t len;
	int advice;
};

static long real_munmap(void *arg)
{
	struct range_args *a = arg;

	return sys_munmap(a->addr, a->len);
}

bool uffd_is_managed(struct uffd_live *lv, const void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr & ~(UFFD_PAGE_SIZE - 1);

	return len && uffd_table_overlaps(&lv->table, lo, page_up((uintptr_t)addr + len));
}

int uffd_munmap(struct uffd_live *lv, void *addr, size_t len)
{
	struct range_args a = {addr, page_up(len), 0};

	if ((uintptr_t)addr & (UFFD_PAGE_SIZE - 1) || !len)
		return -EINVAL;
	uffd_census_before_free(lv, a.len);
	/* shared memory placed inside a managed reservation goes too */
	uffd_shmem_unmapped(lv, addr, a.len);
	return (int)uffd_unmap_managed(lv, (uintptr_t)addr, (uintptr_t)addr + a.len, real_munmap,
				       &a);
}

/* ---- madvise -----------------------------------------------------------------------------------
 */

/* MADV_DONTNEED / MADV_FREE: the frames go back to the pool now. MADV_FREE is carried out as
 * MADV_DONTNEED, one of the outcomes MADV_FREE allows (the kernel may free lazily-freed pages at
 * any time; a later read then sees zeros). MADV_DONTNEED_LOCKED stays itself. */
static int discard(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, int advice)
{
	struct uffd_region *rs[MAX_TOUCHED];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);
	/* in a locked mapping only MADV_DONTNEED_LOCKED frees anything (mm/madvise.c:
	 * madvise_dontneed_free_valid_vma: EINVAL): once the program locked memory, the kernel
	 * answers first and the frames go back only if it freed the pages */
	bool kernel_first = __atomic_load_n(&lv->locks_used, __ATOMIC_ACQUIRE);
	long rc = 0;

	if (advice == MADV_FREE)
		advice = MADV_DONTNEED;
	uffd_census_before_free(lv, hi - lo);
	lock_all(rs, n);
	if (kernel_first)
		rc = sys_madvise((void *)lo, hi - lo, advice);
	for (unsigned i = 0; i < n && rc == 0; i++) {
		struct uffd_region *r = rs[i];
		uintptr_t x = lo > r->lo ? lo : r->lo, y = hi < r->hi ? hi : r->hi;

		uffd_region_release_pages(lv, r, as_page_of(&r->as, x), as_page_of(&r->as, y),
					  false);
	}
	if (!kernel_first)
		rc = sys_madvise((void *)lo, hi - lo, advice);
	unlock_put_all(lv, rs, n);
	return (int)rc;
}

/* MADV_HUGEPAGE / MADV_NOHUGEPAGE: the emulated VMA advice (the host VMA stays MADV_HUGEPAGE so
 * that faults keep arriving with pmd_none). Extents the advice covers only in part would be two
 * VMAs in the kernel, so they can never be huge. */
static void set_advice(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, int advice)
{
	struct uffd_region *rs[MAX_TOUCHED];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);
	uint8_t adv = advice == MADV_HUGEPAGE ? MM_VMA_HUGEPAGE : MM_VMA_NOHUGEPAGE;

	if (n)
		uffd_trace_event(lv, OBS_TR_ADVISE, lo, hi - lo, 0, 0, adv);
	if (n && adv == MM_VMA_HUGEPAGE) /* hugepage_madvise -> khugepaged_enter_vma */
		mm_khugepaged_enter(lv->mm, (uint32_t)lv->mslot);
	for (unsigned i = 0; i < n; i++) {
		as_advise(&rs[i]->as, lo, hi, adv);
		uffd_region_put(&lv->table, rs[i]);
	}
}

/* Run the real madvise on the parts of [lo, hi) outside managed spans. */
static int advise_unmanaged(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, int advice)
{
	struct uffd_region *rs[MAX_TOUCHED];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, MAX_TOUCHED);
	uintptr_t cur = lo;
	int rc = 0;

	for (unsigned i = 0; i <= n; i++) {
		uintptr_t gap_end = i < n ? (rs[i]->lo > lo ? rs[i]->lo : lo) : hi;

		if (gap_end > cur) {
			int r2 = sys_madvise((void *)cur, gap_end - cur, advice);

			if (r2 < 0 && rc == 0)
				rc = r2;
		}
		if (i < n) {
			cur = rs[i]->hi;
			uffd_region_put(&lv->table, rs[i]);
		}
	}
	return rc;
}

int uffd_madvise(struct uffd_live *lv, void *addr, size_t len, int advice)
{
	uintptr_t lo = (uintptr_t)addr, hi = page_up(lo + len);

	if (lo & (UFFD_PAGE_SIZE - 1))
		return -EINVAL;
	if (!len)
		return 0;
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_FREE:
	case MADV_DONTNEED_LOCKED:
		return discard(lv, lo, hi, advice);
	case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE:
		set_advice(lv, lo, hi, advice);
		return advise_unmanaged(lv, lo, hi, advice);
	case 25: { /* MADV_COLLAPSE: the managed part emulated (collapse.c), the rest native */
		int rc = uffd_madv_collapse(lv, lo, hi), r2;

		if (rc == -EINVAL && !mm_policy(lv->mm)->madv_collapse)
			return rc; /* the emulated kernel does not know the advice at all */
		r2 = advise_unmanaged(lv, lo, hi, advice);
		return rc ? rc : r2;
	}
	default:
		return sys_madvise(addr, len, advice);
	}
}

/* ---- adopting a mapping made before initialisation ------------------------------------------ */

/* One RESIDENT record per run of pages already resident in a chunk (after the range's ADOPT). */
static void trace_resident(struct uffd_live *lv, uintptr_t lo, const uint8_t *vec, size_t npages)
{
	for (size_t p = 0; p < npages;) {
		size_t q = p;

		if (!(vec[p] & 1)) {
			p++;
			continue;
		}
		while (q < npages && (vec[q] & 1))
			q++;
		uffd_trace_event(lv, OBS_TR_RESIDENT, lo + p * UFFD_PAGE_SIZE,
				 (q - p) * UFFD_PAGE_SIZE, 0, 0, 0);
		p = q;
	}
}

int uffd_adopt(struct uffd_live *lv, void *addr, size_t len, int prot)
{
	return uffd_adopt_range(lv, addr, len, prot, NULL);
}

/* Pages resident at adoption stay as the kernel made them: present, outside the pool. mincore
 * goes through a small buffer on the stack, a chunk at a time: a scratch mapping per range cost a
 * fork child an mmap and an munmap (a TLB shootdown once its threads run) for every range it
 * inherited. */
#define ADOPT_CHUNK 1024 /* pages per mincore call (4 MiB) */

int uffd_adopt_range(struct uffd_live *lv, void *addr, size_t len, int prot, uint64_t *present)
{
	uintptr_t lo = (uintptr_t)addr, hi = page_up(lo + len);
	size_t npages = (hi - lo) / UFFD_PAGE_SIZE;
	uint8_t vec[ADOPT_CHUNK];
	struct uffd_region *r;
	int rc;

	rc = uffd_region_create(&lv->table, lo, hi, prot, 0, false, &r);
	if (rc < 0)
		return rc;
	if (uffd_tracing(lv))
		uffd_trace_event(lv, OBS_TR_ADOPT, lo, hi - lo, 0, 0, 0);
	for (size_t c = 0; c < npages; c += ADOPT_CHUNK) {
		size_t n = npages - c < ADOPT_CHUNK ? npages - c : ADOPT_CHUNK;

		rc = (int)sys_call3(SYS_mincore, lo + c * UFFD_PAGE_SIZE, n * UFFD_PAGE_SIZE,
				    (long)vec);
		if (rc < 0) { /* not all mapped: nothing adopted */
			if (uffd_tracing(lv))
				uffd_trace_event(lv, OBS_TR_RELEASE, lo, hi - lo, 0, OBS_TRF_UNMAP,
						 0);
			uffd_region_discard(&lv->table, r);
			return rc;
		}
		for (size_t p = 0; p < n;) {
			size_t q = p;

			while (q < n && (vec[q] & 1))
				q++;
			as_resident(&r->as, (uint32_t)(c + p), (uint32_t)(c + q));
			if (present)
				*present += q - p;
			p = q > p ? q : p + 1;
		}
		if (uffd_tracing(lv))
			trace_resident(lv, lo + c * UFFD_PAGE_SIZE, vec, n);
	}
	uffd_host_advise(lv, (uintptr_t)addr, hi - lo);
	rc = uffd_register_managed(lv, lo, hi - lo);
	if (rc == 0)
		rc = uffd_region_insert(&lv->table, r);
	if (rc < 0) {
		uffd_trace_event(lv, OBS_TR_RELEASE, lo, hi - lo, 0, OBS_TRF_UNMAP, 0);
		uffd_io_unregister(lv->uffd, lo, hi - lo);
		uffd_region_discard(&lv->table, r);
		return rc;
	}
	UFFD_COUNT(lv, regions_adopted);
	uffd_gauge_add(lv, hi - lo);
	return 0;
}
