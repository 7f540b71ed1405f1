/* mremap of managed memory (mm/mremap.c: mremap_to, move_vma, vma_expand).
 *
 * Without UFFD_FEATURE_EVENT_REMAP the kernel drops the userfaultfd registration of a VMA it
 * moves (mremap_userfaultfd_prep -> userfaultfd_reset_ctx), so every mremap of managed memory
 * goes through here:
 *   - a whole region shrinking in place frees the cut pages;
 *   - a whole region growing or moving is *transferred*: a successor region takes its page
 *     states, frames and cookie id (mm's reverse map keeps pointing at the right pages), the new
 *     range is registered again, and if the move changed the address modulo 2 MiB its huge
 *     extents are split, as move_huge_pmd cannot keep a misaligned PMD. A region allowed to move
 *     is moved to an address with the same 2 MiB phase, so its PMDs survive;
 *   - anything else (part of a region, MREMAP_DONTUNMAP, a destination over managed memory) gives
 *     the source pages back to the kernel before the call and adopts the result afterwards:
 *     pages it holds stay, unaccounted, and its holes are first touches again.
 * What the successor of a transferred region holds is core/addrspace's rule (as_transfer).
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <string.h>

#include "obs/trace.h"
#include "util/sys.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static uintptr_t page_up(uintptr_t x)
{
	return (x + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
}

/* The zero pages the host moved with the region lost their write protection (6.12
 * mm/mremap.c move_ptes clears the uffd-wp bit of a VMA without UFFD_FEATURE_EVENT_REMAP, and
 * the registration itself went): unmap them, before the program can write there unseen. They
 * hold zeros; their next touch maps them again (handler.c: zero pages). */
static void unmap_zero_pages(struct uffd_region *s)
{
	uint32_t p = as_page_of(&s->as, s->lo), end = as_page_of(&s->as, s->hi);

	while (p < end) {
		uint32_t q = p;

		while (q < end && AS_P_STATE(as_pstate(&s->as, q)) == AS_P_ZERO)
			q++;
		if (q > p)
			sys_zap((void *)as_page_addr(&s->as, p), (size_t)(q - p) * UFFD_PAGE_SIZE);
		p = q > p ? q : p + 1;
	}
}

/* Transfer r (busy write lock held) to its new place [a, a + len). */
static int transfer(struct uffd_live *lv, struct uffd_region *r, uintptr_t a, size_t len)
{
	uint32_t off = as_page_of(&r->as, r->lo);
	uint32_t n_old = (uint32_t)((r->hi - r->lo) / UFFD_PAGE_SIZE);
	uint32_t n_new = (uint32_t)(len / UFFD_PAGE_SIZE);
	uintptr_t base = a - (uintptr_t)off * UFFD_PAGE_SIZE;
	struct as_counts c = {0};
	struct uffd_region *s;
	struct as_mm_ctx ctx = {lv->mm, NULL};
	const struct as_env env = as_mm_env(&ctx);
	int rc;

	if (a < (uintptr_t)off * UFFD_PAGE_SIZE)
		return -ERANGE;
	if (n_new < n_old) { /* moved and shrunk: the cut pages are unmapped */
		uffd_region_release_pages(lv, r, off + n_new, off + n_old, true);
		uffd_gauge_sub(lv, (uint64_t)(n_old - n_new) * UFFD_PAGE_SIZE);
	}
	rc = uffd_region_create(&lv->table, base, a + len, r->prot, r->cid, false, &s);
	if (rc < 0)
		return rc;
	uffd_trace_event(lv, OBS_TR_REMAP, r->lo, len, a, 0, 0);
	s->lo = a;
	as_transfer(&env, &r->as, &s->as, &c);
	uffd_as_count(lv, &c);
	s->no_huge_move = r->no_huge_move;
	uffd_region_remove(&lv->table, r);
	rc = uffd_region_insert(&lv->table, s);
	if (rc < 0) {
		uffd_trace_event(lv, OBS_TR_RELEASE, a, len, 0, OBS_TRF_UNMAP, 0);
		uffd_region_discard(&lv->table, s);
		return rc;
	}
	uffd_host_advise(lv, a, len);
	rc = uffd_register_managed(lv, a, len);
	if (rc < 0) {
		uffd_region_fail(lv, s, rc);
		return rc;
	}
	if (lv->zero_wp)
		unmap_zero_pages(s);
	if (n_new > n_old)
		uffd_gauge_add(lv, (uint64_t)(n_new - n_old) * UFFD_PAGE_SIZE);
	return 0;
}

/* Reserve len bytes at an address with the given 2 MiB phase; returns it or -errno. */
long uffd_reserve_phase(size_t len, uintptr_t phase, long *res, size_t *res_len)
{
	size_t total = len + UFFD_HPAGE_SIZE;
	long p =
	    sys_mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t dst;

	if (sys_is_err(p))
		return p;
	dst = (((uintptr_t)p - phase + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1)) + phase;
	if (dst < (uintptr_t)p)
		dst += UFFD_HPAGE_SIZE;
	*res = p;
	*res_len = total;
	return (long)dst;
}

void uffd_unreserve(long res, size_t res_len, uintptr_t dst, size_t len)
{
	uintptr_t lo = (uintptr_t)res, hi = lo + res_len;

	if (dst > lo)
		sys_munmap((void *)lo, dst - lo);
	if (hi > dst + len)
		sys_munmap((void *)(dst + len), hi - (dst + len));
}

/* Grow or move a whole region, keeping its 2 MiB phase when the kernel lets us choose. */
static long remap_whole(struct uffd_live *lv, struct uffd_region *r, size_t newlen, int flags,
			void *new_addr)
{
	void *old = (void *)r->lo;
	size_t oldlen = r->hi - r->lo;
	long rc, res = 0;
	size_t res_len = 0;
	long dst;

	if (flags & MREMAP_FIXED)
		return sys_mremap(old, oldlen, newlen, flags, new_addr);
	rc = sys_mremap(old, oldlen, newlen, 0, NULL); /* in place first, as the kernel tries */
	if (rc != -ENOMEM || !(flags & MREMAP_MAYMOVE))
		return rc;
	dst = uffd_reserve_phase(newlen, r->lo & (UFFD_HPAGE_SIZE - 1), &res, &res_len);
	if (sys_is_err(dst))
		return sys_mremap(old, oldlen, newlen, flags, new_addr);
	rc = sys_mremap(old, oldlen, newlen, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)dst);
	if (sys_is_err(rc)) {
		sys_munmap((void *)res, res_len);
		return sys_mremap(old, oldlen, newlen, flags, new_addr);
	}
	uffd_unreserve(res, res_len, (uintptr_t)dst, newlen);
	return rc;
}

static long remap_region(struct uffd_live *lv, struct uffd_region *r, size_t newlen, int flags,
			 void *new_addr)
{
	uintptr_t o = r->lo;
	size_t oldlen = r->hi - r->lo;
	long rc;

	pthread_rwlock_wrlock(&r->busy);
	if (newlen <= oldlen && !(flags & MREMAP_FIXED)) { /* shrinks in place */
		uffd_region_release_pages(lv, r, as_page_of(&r->as, o + newlen),
					  as_page_of(&r->as, r->hi), true);
		rc = sys_mremap((void *)o, oldlen, newlen, flags, new_addr);
		uffd_region_trim(&lv->table, r);
		if (!sys_is_err(rc))
			uffd_gauge_sub(lv, oldlen - newlen);
		pthread_rwlock_unlock(&r->busy);
		return rc;
	}
	rc = remap_whole(lv, r, newlen, flags, new_addr);
	if (!sys_is_err(rc) && transfer(lv, r, (uintptr_t)rc, newlen) < 0) {
		UFFD_COUNT(lv, mremap_unmanaged); /* the memory is intact, only unmanaged */
		uffd_io_unregister(lv->uffd, (uintptr_t)rc, newlen);
	}
	pthread_rwlock_unlock(&r->busy);
	return rc;
}

static long real_nothing(void *arg)
{
	return 0;
}

/* Partial or unusual mremap: give the source back to the kernel, call, adopt the result. */
static long remap_generic(struct uffd_live *lv, uintptr_t o, size_t oldlen, size_t newlen,
			  int flags, void *new_addr, int prot)
{
	long rc;
	bool managed;

	if ((flags & MREMAP_FIXED) && uffd_is_managed(lv, new_addr, newlen))
		uffd_unmap_managed(lv, (uintptr_t)new_addr, (uintptr_t)new_addr + newlen,
				   real_nothing, NULL);
	managed = uffd_is_managed(lv, (void *)o, oldlen);
	if (managed) {
		/* the kernel must serve whatever stays behind at the old place natively */
		uffd_io_unregister(lv->uffd, o, oldlen);
		uffd_unmap_managed(lv, o, o + oldlen, real_nothing, NULL);
	}
	rc = sys_mremap((void *)o, oldlen, newlen, flags, new_addr);
	if (sys_is_err(rc)) {
		/* refused (no room to grow in place, a real VMA boundary): the mapping is where it
		 * was; manage it again (its resident pages are outside the pool from now on) */
		if (managed && uffd_adopt(lv, (void *)o, oldlen, prot) != 0)
			UFFD_COUNT(lv, mremap_unmanaged);
		return rc;
	}
	if (prot == (PROT_READ | PROT_WRITE) && newlen >= lv->cfg.min_region &&
	    uffd_adopt(lv, (void *)rc, newlen, prot) == 0)
		return rc;
	UFFD_COUNT(lv, mremap_unmanaged);
	return rc;
}

/* The kernel's checks of the arguments alone (6.x mm/mremap.c: check_mremap_params; 5.x-6.16
 * SYSCALL_DEFINE5(mremap) itself), made before anything is un-managed, so that a call the kernel
 * refuses leaves the mapping as it was. */
static long remap_args_check(uintptr_t o, size_t oldlen, size_t newlen, int flags, void *new_addr)
{
	uintptr_t n = (uintptr_t)new_addr;

	if (flags & ~(MREMAP_FIXED | MREMAP_MAYMOVE | MREMAP_DONTUNMAP))
		return -EINVAL;
	if ((flags & MREMAP_FIXED) && !(flags & MREMAP_MAYMOVE))
		return -EINVAL;
	/* MREMAP_DONTUNMAP is always a move, and never a resize */
	if ((flags & MREMAP_DONTUNMAP) && (!(flags & MREMAP_MAYMOVE) || oldlen != newlen))
		return -EINVAL;
	if ((o & (UFFD_PAGE_SIZE - 1)) || !newlen)
		return -EINVAL;
	if (flags & MREMAP_FIXED) {
		if (n & (UFFD_PAGE_SIZE - 1))
			return -EINVAL;
		if (n < o + oldlen && o < n + newlen) /* the ranges overlap */
			return -EINVAL;
	}
	return 0;
}

/* Would the kernel see more than one VMA in [lo, hi)? The program's MADV_(NO)HUGEPAGE on managed
 * memory is emulated, not passed to the host (whose VMA stays whole), so a change of advice
 * inside the range is a VMA boundary the kernel would have and the host does not. Extents at
 * the ends that the advice covers in part are not judged (where their boundary lies is not
 * kept). */
static bool advice_splits(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_region *rs[8];
	unsigned n = uffd_regions_overlapping(&lv->table, lo, hi, rs, 8);
	int first = -1;
	bool split = false;

	for (unsigned i = 0; i < n; i++) {
		split = split || as_advice_splits(&rs[i]->as, lo, hi, &first);
		uffd_region_put(&lv->table, rs[i]);
	}
	return split;
}

long uffd_mremap(struct uffd_live *lv, void *old, size_t oldlen, size_t newlen, int flags,
		 void *new_addr)
{
	uintptr_t o = (uintptr_t)old;
	struct uffd_region *r;
	bool whole;
	long rc;
	int prot;

	oldlen = page_up(oldlen);
	newlen = page_up(newlen);
	rc = remap_args_check(o, oldlen, newlen, flags, new_addr);
	if (rc < 0)
		return rc;
	if (!oldlen) /* duplicating a mapping: shared mappings only */
		return -EINVAL;
	/* a move that keeps the old mapping, or a resize, stays within one VMA (mm/mremap.c:
	 * vma_to_resize, 6.17+ check_prep_vma: "can't remap across vm area boundaries") */
	if (((flags & MREMAP_DONTUNMAP) || newlen > oldlen) && advice_splits(lv, o, o + oldlen))
		return -EFAULT;
	UFFD_COUNT(lv, mremaps);
	r = uffd_region_get(&lv->table, o);
	if (!r)
		return remap_generic(lv, o, oldlen, newlen, flags, new_addr,
				     PROT_READ | PROT_WRITE);
	prot = r->prot;
	whole = r->lo == o && r->hi == o + oldlen && !(flags & MREMAP_DONTUNMAP) &&
		!((flags & MREMAP_FIXED) && uffd_is_managed(lv, new_addr, newlen));
	if (whole) {
		rc = remap_region(lv, r, newlen, flags, new_addr);
		uffd_region_put(&lv->table, r);
		return rc;
	}
	uffd_region_put(&lv->table, r);
	return remap_generic(lv, o, oldlen, newlen, flags, new_addr, prot);
}
