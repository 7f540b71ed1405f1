/* The address-space rules (as.h): release, trim, revive, advice, remap transfer and the owner
 * side of migration, on a region's atomic state bytes. Kernel functions mirrored are named at
 * each rule in as.h.
 */
#include "addrspace/as.h"

#include <errno.h>
#include <string.h>

/* ---- a region's memory ------------------------------------------------------------------------
 */

int as_region_geometry(struct as_region *r, uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	if (hi <= lo || lo < base || (hi - base) / MM_PAGE_SIZE > UINT32_MAX)
		return -ERANGE;
	r->base = base;
	r->ext_base = base & ~(MM_HPAGE_SIZE - 1);
	r->lo = lo;
	r->hi = hi;
	r->npages = (uint32_t)((hi - base) / MM_PAGE_SIZE);
	r->nexts = (uint32_t)((hi - r->ext_base + MM_HPAGE_SIZE - 1) / MM_HPAGE_SIZE);
	return 0;
}

/* Layout: pstate (rounded to 8), pfn, xstate (rounded to 8), xadv. */
static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

size_t as_region_meta_size(const struct as_region *r)
{
	return round8(r->npages) + (size_t)r->npages * sizeof(uint32_t) + 2 * round8(r->nexts);
}

void as_region_attach(struct as_region *r, void *mem)
{
	_Static_assert(AS_P_EMPTY == 0 && (uint32_t)(MM_NO_PFN + 1) == 0,
		       "zeroed arrays are empty pages without a frame");
	r->pstate = mem;
	r->pfn = (uint32_t *)(void *)(r->pstate + round8(r->npages));
	r->xstate = (uint8_t *)(r->pfn + r->npages);
	r->xadv = r->xstate + round8(r->nexts);
	r->single = false;
	r->mthp_seen = false;
	for (uint32_t e = 0; e < r->nexts; e++)
		r->xstate[e] = as_ext_inside(r, e) ? AS_X_EMPTY : AS_X_SMALL;
}

/* Pages [p, p + n) take state s and the frames pfn0 + i (pfn0 MM_NO_PFN: no frame), each page's
 * frame stored before its state. One thread's region does it with memset and a plain loop. */
static void set_pages(struct as_region *r, uint32_t p, uint32_t n, uint8_t s, uint32_t pfn0)
{
	if (r->single) {
		if (pfn0 == MM_NO_PFN) {
			memset(r->pfn + p, 0, (size_t)n * sizeof(*r->pfn));
		} else {
			for (uint32_t i = 0; i < n; i++)
				r->pfn[p + i] = pfn0 + i + 1; /* as_pfn_set's frame + 1 */
		}
		memset(r->pstate + p, s, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		as_pfn_set(r, p + i, pfn0 == MM_NO_PFN ? MM_NO_PFN : pfn0 + i);
		as_pstate_set(r, p + i, s);
	}
}

/* ---- release ----------------------------------------------------------------------------------
 */

static void mm_free_frame(void *arg, uint32_t pfn, unsigned order)
{
	struct as_mm_ctx *ctx = arg;

	mm_anon_free(ctx->mm, pfn, order, ctx->call);
}

static int mm_split_huge(void *arg, uint32_t head)
{
	struct as_mm_ctx *ctx = arg;

	return mm_anon_split(ctx->mm, head);
}

static int mm_split_folio(void *arg, uint32_t head)
{
	struct as_mm_ctx *ctx = arg;

	return mm_anon_split_folio(ctx->mm, head);
}

static unsigned mm_folio_order(void *arg, uint32_t pfn)
{
	struct as_mm_ctx *ctx = arg;

	return mm_anon_folio_order(ctx->mm, pfn);
}

static void mm_free_run(void *arg, uint32_t pfn, uint32_t n)
{
	struct as_mm_ctx *ctx = arg;

	mm_anon_free_run(ctx->mm, pfn, n, ctx->call);
}

struct as_env as_mm_env(struct as_mm_ctx *ctx)
{
	return (struct as_env){
	    ctx, mm_free_frame, mm_split_huge, mm_split_folio, mm_folio_order, mm_free_run};
}

/* Base pages released one after another whose frames are consecutive go back as one run. */
struct free_batch {
	uint32_t pfn, n;
};

static void batch_flush(const struct as_env *env, struct free_batch *b)
{
	if (b->n == 1 || (b->n && !env->free_run))
		for (uint32_t i = 0; i < b->n; i++)
			env->free_frame(env->arg, b->pfn + i, 0);
	else if (b->n)
		env->free_run(env->arg, b->pfn, b->n);
	b->n = 0;
}

static void batch_add(const struct as_env *env, struct free_batch *b, uint32_t pfn)
{
	if (b->n && pfn != b->pfn + b->n)
		batch_flush(env, b);
	if (!b->n)
		b->pfn = pfn;
	b->n++;
}

/* Split the huge block at head (split_huge_pmd); false if mm refused. mm refuses only a block
 * that is not huge (a broken invariant): the caller then gives the whole block back and leaves
 * the extent's pages with no frame behind them (outside the pool), instead of freeing them one
 * by one with order 0 while the 512 frames leak in mm. */
static bool split_or_drop(const struct as_env *env, uint32_t head)
{
	if (head == MM_NO_PFN || env->split_huge(env->arg, head) == 0)
		return true;
	env->free_frame(env->arg, head, MM_HPAGE_ORDER);
	return false;
}

/* Pages [addr, addr + 2 MiB) of r lose their frame (the part inside r). */
static void drop_frames(struct as_region *r, uintptr_t addr)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t a = addr + (uintptr_t)i * MM_PAGE_SIZE;

		if (a >= r->base && as_page_of(r, a) < r->npages)
			as_pfn_set(r, as_page_of(r, a), MM_NO_PFN);
	}
}

/* Extent e overlaps the released pages [p0, p1). True when it was a THP unmapped whole: its
 * pages are GONE, the page walk has nothing left to do there. */
static bool release_extent(const struct as_env *env, struct as_region *r, uint32_t e, uint32_t p0,
			   uint32_t p1, bool unmap, struct as_counts *c)
{
	uintptr_t ea = as_ext_addr(r, e);
	bool whole = as_ext_inside(r, e) && ea >= r->base && as_page_of(r, ea) >= p0 &&
		     as_page_of(r, ea) + MM_HPAGE_NR <= p1;

	for (;;) {
		uint8_t xs = as_xstate(r, e);

		switch (AS_X_STATE(xs)) {
		case AS_X_HUGE: {
			uint32_t ep = as_page_of(r, ea), head = as_pfn(r, ep);

			if (!whole) {
				if (!split_or_drop(env, head))
					drop_frames(r, ea);
				as_xstate_set(r, e, AS_X_SMALL);
				c->huge_splits++;
				return false;
			}
			env->free_frame(env->arg, head, MM_HPAGE_ORDER);
			set_pages(r, ep, MM_HPAGE_NR, unmap ? AS_P_GONE : AS_P_EMPTY, MM_NO_PFN);
			/* a zapped PMD leaves pmd_none: the extent may take a THP again */
			as_xstate_set(r, e, unmap ? AS_X_SMALL : AS_X_EMPTY);
			c->pages_freed += MM_HPAGE_NR;
			return unmap;
		}
		case AS_X_ZERO:
			/* the huge zero PMD: no frame to give back. Released whole, zap_huge_pmd
			 * leaves pmd_none (a candidate again after DONTNEED; the pages go below);
			 * in part, split_huge_pmd maps the rest with the 4 KiB zero page
			 * (__split_huge_zero_page_pmd, 6.12 mm/huge_memory.c) */
			if (!whole) {
				as_zero_split(r, e);
				c->huge_splits++;
				return false;
			}
			/* nobody owns a page of it (a fault on it owns the extent) */
			if (as_xstate_cas(r, e, xs, unmap ? AS_X_SMALL : AS_X_EMPTY))
				return false;
			continue;
		case AS_X_FILLING:
			if (as_xstate_cas(r, e, xs, xs | AS_X_DISTURBED))
				return false;
			continue;
		case AS_X_EMPTY:
			if (!unmap || as_xstate_cas(r, e, xs, AS_X_SMALL))
				return false;
			continue;
		default:
			return false;
		}
	}
}

/* Page p is being released: returns the frame to give back (MM_NO_PFN if none). */
static uint32_t release_page(struct as_region *r, uint32_t p, bool unmap, struct as_counts *c)
{
	for (;;) {
		uint8_t ps = as_pstate(r, p);
		uint8_t flags = AS_P_FREED | (unmap ? AS_P_UNMAPPED : 0);

		switch (AS_P_STATE(ps)) {
		case AS_P_EMPTY:
			if (!unmap || as_pstate_cas(r, p, ps, AS_P_GONE))
				return MM_NO_PFN;
			continue;
		case AS_P_ZERO: /* the zero page: nothing to give back */
			if (as_pstate_cas(r, p, ps, unmap ? AS_P_GONE : AS_P_EMPTY))
				return MM_NO_PFN;
			continue;
		case AS_P_PRESENT: {
			uint32_t pfn = as_pfn(r, p);

			if (!as_pstate_cas(r, p, ps, unmap ? AS_P_GONE : AS_P_EMPTY))
				continue;
			as_pfn_set(r, p, MM_NO_PFN);
			c->pages_freed++;
			return pfn;
		}
		case AS_P_FILLING:
		case AS_P_MIGRATING:
			/* owned: flag it, the owner gives the frame back */
			if (as_pstate_cas(r, p, ps, ps | flags))
				return MM_NO_PFN;
			continue;
		default:
			return MM_NO_PFN;
		}
	}
}

void as_release(const struct as_env *env, struct as_region *r, uint32_t p0, uint32_t p1, bool unmap,
		struct as_counts *c)
{
	uintptr_t a0 = as_page_addr(r, p0), a1 = as_page_addr(r, p1);
	struct free_batch b = {0};
	uint32_t e0 = as_ext_of(r, a0);
	uint64_t gone = 0; /* extents e0 + i whose THP went back whole, unmapped */
	const bool single = r->single;
	const bool folios = !single || __atomic_load_n(&r->mthp_seen, __ATOMIC_RELAXED);

	if (p0 >= p1)
		return;
	/* extents first: a wholly released huge extent goes back as one order-9 block, a partly
	 * released one is split so that its pages go back one by one below */
	for (uint32_t e = e0; e <= as_ext_of(r, a1 - 1); e++)
		if (release_extent(env, r, e, p0, p1, unmap, c) && e - e0 < 64)
			gone |= 1ULL << (e - e0);
	for (uint32_t p = p0; p < p1; p++) {
		uint32_t x = gone ? as_ext_of(r, as_page_addr(r, p)) - e0 : 64, pfn;
		unsigned k;

		if (x < 64 && (gone >> x & 1)) {
			/* a THP unmapped whole (inside [p0, p1)): every page is GONE */
			p = as_page_of(r, as_ext_addr(r, e0 + x)) + MM_HPAGE_NR - 1;
			continue;
		}
		if (single && p + 8 <= p1) {
			/* eight pages unmapped before (a hole punched earlier): nothing to do */
			uint64_t w8;

			memcpy(&w8, r->pstate + p, sizeof(w8));
			if (w8 == 0x0101010101010101ULL * AS_P_GONE) {
				p += 7;
				continue;
			}
		}
		if (single && r->pstate[p] == AS_P_PRESENT) {
			/* release_page's PRESENT case, in one thread's region */
			pfn = r->pfn[p] - 1;
			r->pstate[p] = unmap ? AS_P_GONE : AS_P_EMPTY;
			r->pfn[p] = 0;
			c->pages_freed++;
		} else {
			pfn = release_page(r, p, unmap, c);
		}
		if (pfn == MM_NO_PFN)
			continue;
		/* the head of an mTHP folio wholly in the range: released as one batch, the folio
		 * goes back whole at its order (6.12 zap_pte_range, folio_remove_rmap_ptes); a part
		 * of one goes back page by page (partially mapped: deferred split, mm/mthp.c). One
		 * thread's region that never mapped an mTHP folio holds none: nothing to ask */
		k = env->folio_order && folios ? env->folio_order(env->arg, pfn) : 0;
		if (k && !(pfn & ((1U << k) - 1)) && p + (1U << k) <= p1) {
			uint32_t n = 1U << k, i;

			batch_flush(env, &b);
			for (i = 1; i < n; i++) {
				uint32_t q = release_page(r, p + i, unmap, c);

				if (q == pfn + i)
					continue;
				if (q != MM_NO_PFN)
					env->free_frame(env->arg, q, 0);
				break;
			}
			if (i == n) {
				env->free_frame(env->arg, pfn, k);
				p += n - 1;
				continue;
			}
			/* not the whole folio: what was released goes back page by page */
			for (uint32_t j = 0; j < i; j++)
				env->free_frame(env->arg, pfn + j, 0);
			p += i;
			continue;
		}
		batch_add(env, &b, pfn);
	}
	batch_flush(env, &b);
}

uint64_t as_live_pages(const struct as_region *r, uint32_t p0, uint32_t p1)
{
	uint64_t n = 0;

	for (uint32_t p = p0; p < p1; p++)
		n += AS_P_STATE(as_pstate(r, p)) != AS_P_GONE;
	return n;
}

bool as_trim_span(const struct as_region *r, uintptr_t *lo, uintptr_t *hi)
{
	uint32_t p0 = as_page_of(r, r->lo), p1 = as_page_of(r, r->hi);

	while (p0 < p1 && AS_P_STATE(as_pstate(r, p0)) == AS_P_GONE)
		p0++;
	while (p1 > p0 && AS_P_STATE(as_pstate(r, p1 - 1)) == AS_P_GONE)
		p1--;
	*lo = as_page_addr(r, p0);
	*hi = as_page_addr(r, p1);
	return p0 < p1;
}

void as_recompute_extents(struct as_region *r, uint32_t e0, uint32_t e1)
{
	for (uint32_t e = e0; e <= e1 && e < r->nexts; e++) {
		uint8_t want = AS_X_SMALL;

		if (AS_X_STATE(as_xstate(r, e)) == AS_X_HUGE ||
		    AS_X_STATE(as_xstate(r, e)) == AS_X_COLLAPSING ||
		    AS_X_STATE(as_xstate(r, e)) == AS_X_ZERO)
			continue;
		if (as_ext_inside(r, e)) {
			uint32_t p = as_page_of(r, as_ext_addr(r, e));

			want = AS_X_EMPTY;
			for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
				if (as_pstate(r, p + i) != AS_P_EMPTY) {
					want = AS_X_SMALL;
					break;
				}
			}
		}
		as_xstate_set(r, e, want);
	}
}

/* ---- mapping again, advice ----------------------------------------------------------------------
 */

bool as_range_gone(const struct as_region *r, uint32_t p0, uint32_t p1)
{
	for (uint32_t p = p0; p < p1; p++)
		if (AS_P_STATE(as_pstate(r, p)) != AS_P_GONE)
			return false;
	return true;
}

void as_revive(struct as_region *r, uint32_t p0, uint32_t p1)
{
	uintptr_t a0 = as_page_addr(r, p0), a1 = as_page_addr(r, p1);

	if (p0 >= p1)
		return;
	for (uint32_t p = p0; p < p1; p++)
		as_pstate_set(r, p, AS_P_EMPTY);
	for (uint32_t e = as_ext_of(r, a0); e <= as_ext_of(r, a1 - 1); e++) {
		uintptr_t ea = as_ext_addr(r, e);

		if (ea >= a0 && ea + MM_HPAGE_SIZE <= a1 && as_ext_inside(r, e)) {
			as_xstate_set(r, e, AS_X_EMPTY);
			as_xadv_set(r, e, MM_VMA_DEFAULT);
		}
	}
}

void as_resident(struct as_region *r, uint32_t p0, uint32_t p1)
{
	if (p0 >= p1)
		return;
	for (uint32_t p = p0; p < p1; p++)
		as_pstate_set(r, p, AS_P_PRESENT); /* outside the pool: no frame */
	as_recompute_extents(r, as_ext_of(r, as_page_addr(r, p0)),
			     as_ext_of(r, as_page_addr(r, p1) - 1));
}

void as_advise(struct as_region *r, uintptr_t lo, uintptr_t hi, uint8_t adv)
{
	uintptr_t x = lo > r->lo ? lo : r->lo, y = hi < r->hi ? hi : r->hi;

	if (x >= y)
		return;
	for (uint32_t e = as_ext_of(r, x); e <= as_ext_of(r, y - 1); e++) {
		uintptr_t ea = as_ext_addr(r, e);
		bool whole = ea >= lo && ea + MM_HPAGE_SIZE <= hi;
		uint8_t old = as_xadv(r, e);

		as_xadv_set(r, e, (uint8_t)(adv | (whole ? (old & AS_ADV_SPLIT) : AS_ADV_SPLIT)));
	}
}

bool as_advice_splits(const struct as_region *r, uintptr_t lo, uintptr_t hi, int *first)
{
	uintptr_t x = lo > r->lo ? lo : r->lo, y = hi < r->hi ? hi : r->hi;

	if (x >= y)
		return false;
	for (uint32_t e = as_ext_of(r, x); e <= as_ext_of(r, y - 1); e++) {
		uintptr_t ea = as_ext_addr(r, e);
		bool inside = ea >= lo && ea + MM_HPAGE_SIZE <= hi;
		uint8_t a = as_xadv(r, e);

		if (a & AS_ADV_SPLIT) {
			if (inside)
				return true;
			continue;
		}
		if (*first < 0)
			*first = a & AS_ADV_MASK;
		else if ((a & AS_ADV_MASK) != *first)
			return true;
	}
	return false;
}

/* ---- remap
 * ---------------------------------------------------------------------------------------- */

/* Page q of the successor mirrors page q of the region (same index, same owner cookie). */
static uint8_t successor_state(const struct as_region *r, uint32_t q, uint32_t *pfn)
{
	uint8_t ps = as_pstate(r, q);
	uint8_t gone = (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY;

	*pfn = as_pfn(r, q);
	switch (AS_P_STATE(ps)) {
	case AS_P_FILLING: /* its owner sees the region dead and gives its frame back */
		*pfn = MM_NO_PFN;
		return (ps & AS_P_FREED) ? gone : AS_P_EMPTY;
	case AS_P_MIGRATING: /* the migration fails (-EAGAIN) and the frame stays with the page,
			      * unless the program freed it: then mm frees it (-ENOENT) */
		if (ps & AS_P_FREED) {
			*pfn = MM_NO_PFN;
			return gone;
		}
		return AS_P_PRESENT;
	default:
		return AS_P_STATE(ps);
	}
}

static void transfer_extents(const struct as_env *env, const struct as_region *r,
			     struct as_region *s, intptr_t delta, struct as_counts *c)
{
	bool same_phase = (delta & (intptr_t)(MM_HPAGE_SIZE - 1)) == 0;

	for (uint32_t e = 0; e < r->nexts; e++) {
		uintptr_t ea = as_ext_addr(r, e);
		uint8_t xs = AS_X_STATE(as_xstate(r, e));

		if (xs != AS_X_HUGE && xs != AS_X_ZERO)
			continue;
		if (same_phase && as_ext_inside(s, as_ext_of(s, ea + (uintptr_t)delta))) {
			uint32_t e2 = as_ext_of(s, ea + (uintptr_t)delta);

			as_xstate_set(s, e2, xs);
			as_xadv_set(s, e2, as_xadv(r, e));
		} else if (xs == AS_X_ZERO) {
			/* move_huge_pmd cannot keep it: split, the pages map the zero page */
			for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
				uintptr_t a = ea + (uintptr_t)i * MM_PAGE_SIZE;
				uint32_t q = as_page_of(r, a);

				if (a >= r->base && q < r->npages && q < s->npages &&
				    as_pstate(s, q) == AS_P_EMPTY)
					as_pstate_set(s, q, AS_P_ZERO);
			}
			c->huge_splits++;
		} else {
			if (!split_or_drop(env, as_pfn(r, as_page_of(r, ea))))
				drop_frames(s, ea + (uintptr_t)delta);
			c->huge_splits++;
		}
	}
	for (uint32_t e2 = 0; e2 < s->nexts; e2++)
		if (AS_X_STATE(as_xstate(s, e2)) != AS_X_HUGE &&
		    AS_X_STATE(as_xstate(s, e2)) != AS_X_ZERO)
			as_recompute_extents(s, e2, e2);
	if (same_phase) { /* carry the program's advice for the extents that kept their place */
		for (uint32_t e = 0; e < r->nexts; e++) {
			uintptr_t ea2 = as_ext_addr(r, e) + (uintptr_t)delta;

			if (ea2 >= s->ext_base && as_ext_of(s, ea2) < s->nexts)
				as_xadv_set(s, as_ext_of(s, ea2), as_xadv(r, e));
		}
	}
}

void as_transfer(const struct as_env *env, const struct as_region *r, struct as_region *s,
		 struct as_counts *c)
{
	uint32_t off = as_page_of(r, r->lo);
	uint32_t n_old = (uint32_t)((r->hi - r->lo) / MM_PAGE_SIZE);
	uint32_t n_new = (uint32_t)((s->hi - s->lo) / MM_PAGE_SIZE);

	for (uint32_t q = 0; q < off; q++)
		as_pstate_set(s, q, AS_P_GONE);
	for (uint32_t q = off; q < off + n_old && q < off + n_new; q++) {
		uint32_t pfn;

		as_pstate_set(s, q, successor_state(r, q, &pfn));
		as_pfn_set(s, q, pfn);
	}
	if (__atomic_load_n(&r->mthp_seen, __ATOMIC_RELAXED)) /* its folios moved with the pages */
		__atomic_store_n(&s->mthp_seen, true, __ATOMIC_RELAXED);
	for (uint32_t e = 0; e < s->nexts; e++)
		as_xstate_set(s, e, AS_X_SMALL);
	transfer_extents(env, r, s, (intptr_t)(s->lo - r->lo), c);
}

/* ---- first touches ------------------------------------------------------------------------------
 */

void as_fault_huge(struct as_region *r, uint32_t e, uint32_t head)
{
	set_pages(r, as_page_of(r, as_ext_addr(r, e)), MM_HPAGE_NR, AS_P_PRESENT, head);
	as_xstate_set(r, e, AS_X_HUGE);
}

void as_fault_base(struct as_region *r, uint32_t p, uint32_t pfn, bool extent)
{
	as_pfn_set(r, p, pfn);
	as_pstate_set(r, p, AS_P_PRESENT);
	if (extent)
		as_xstate_set(r, as_ext_of(r, as_page_addr(r, p)), AS_X_SMALL);
}

void as_fault_zero(struct as_region *r, uint32_t p, bool extent)
{
	as_pfn_set(r, p, MM_NO_PFN);
	as_pstate_set(r, p, AS_P_ZERO);
	if (extent)
		as_xstate_set(r, as_ext_of(r, as_page_addr(r, p)), AS_X_SMALL);
}

void as_fault_huge_zero(struct as_region *r, uint32_t e, uint32_t p)
{
	as_pfn_set(r, p, MM_NO_PFN);
	as_pstate_set(r, p, AS_P_ZERO);
	as_xstate_set(r, e, AS_X_ZERO);
}

void as_zero_read(struct as_region *r, uint32_t p)
{
	as_pfn_set(r, p, MM_NO_PFN);
	as_pstate_set(r, p, AS_P_ZERO);
}

void as_zero_split(struct as_region *r, uint32_t e)
{
	uintptr_t ea = as_ext_addr(r, e);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t a = ea + (uintptr_t)i * MM_PAGE_SIZE;

		if (a >= r->base && as_page_of(r, a) < r->npages)
			as_pstate_cas(r, as_page_of(r, a), AS_P_EMPTY, AS_P_ZERO);
	}
	as_xstate_set(r, e, AS_X_SMALL);
}

/* Are pages [q, q1) all EMPTY (flags aside)? One thread's region is read 8 states at a time. */
static bool pages_empty(const struct as_region *r, uint32_t q, uint32_t q1)
{
	if (r->single) {
		const uint64_t low = 0x0f0f0f0f0f0f0f0fULL; /* AS_P_STATE of 8 bytes */

		for (; q + 8 <= q1; q += 8) {
			uint64_t w;

			memcpy(&w, r->pstate + q, sizeof(w));
			if (w & low)
				return false;
		}
	}
	for (; q < q1; q++)
		if (AS_P_STATE(as_pstate(r, q)) != AS_P_EMPTY)
			return false;
	return true;
}

uint16_t as_mthp_orders(const struct as_region *r, uint32_t p)
{
	uintptr_t a = as_page_addr(r, p);
	uint32_t e = as_ext_of(r, a);
	uint16_t orders = 0;
	uint32_t lo = p, hi = p + 1; /* the pages known empty (but p), the last block that was */

	if (p >= r->npages || (as_xadv(r, e) & AS_ADV_SPLIT))
		return 0; /* two VMAs share the extent: where one ends is not known here */
	for (unsigned k = MM_MTHP_MIN_ORDER; k < MM_HPAGE_ORDER; k++) {
		uintptr_t len = MM_PAGE_SIZE << k, start = a & ~(len - 1);
		uint32_t p0, p1;
		bool none;

		/* thp_vma_suitable_order: the aligned block inside the VMA */
		if (start < r->lo || start + len > r->hi)
			break; /* a larger block cannot fit either */
		/* pte_range_none: every other page of the block still empty. The blocks nest, so
		 * only the pages outside the previous block [lo, hi) are read */
		p0 = as_page_of(r, start);
		p1 = p0 + (1U << k);
		none = pages_empty(r, p0, lo) && pages_empty(r, hi, p1);
		if (!none)
			break; /* nor can a larger block around it */
		lo = p0;
		hi = p1;
		orders |= (uint16_t)(1U << k);
	}
	return orders;
}

void as_fault_mthp(struct as_region *r, uint32_t p, unsigned order, uint32_t head, bool extent)
{
	uint32_t p0 = as_page_of(r, as_page_addr(r, p) & ~((uintptr_t)(MM_PAGE_SIZE << order) - 1));

	__atomic_store_n(&r->mthp_seen, true, __ATOMIC_RELAXED);
	set_pages(r, p0, 1U << order, AS_P_PRESENT, head);
	if (extent)
		as_xstate_set(r, as_ext_of(r, as_page_addr(r, p)), AS_X_SMALL);
}

void as_fault_huge_fallback(const struct as_env *env, struct as_region *r, uint32_t e,
			    uint32_t head, const bool *mapped)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e));
	/* no THP was mapped: the block is split whole (split_folio), not left PTE-mapped on the
	 * deferred split queue; refused: the block went back whole */
	bool split = env->split_folio ? head != MM_NO_PFN && env->split_folio(env->arg, head) == 0
				      : split_or_drop(env, head);

	if (!split && env->split_folio && head != MM_NO_PFN)
		env->free_frame(env->arg, head, MM_HPAGE_ORDER);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (mapped[i]) {
			as_pfn_set(r, p0 + i, split ? head + i : MM_NO_PFN);
			as_pstate_set(r, p0 + i, AS_P_PRESENT);
			continue;
		}
		if (split)
			env->free_frame(env->arg, head + i, 0);
		as_pfn_set(r, p0 + i, MM_NO_PFN);
		as_pstate_set(r, p0 + i, AS_P_EMPTY);
	}
	as_xstate_set(r, e, AS_X_SMALL);
}

/* ---- the owner side of migration ---------------------------------------------------------------
 */

int as_migrate_claim(struct as_region *r, uint32_t p, uint32_t from)
{
	uint8_t ps;

	if (p >= r->npages)
		return -ENOENT;
	if (AS_X_STATE(as_xstate(r, as_ext_of(r, as_page_addr(r, p)))) == AS_X_HUGE)
		return -EBUSY; /* THP are never migration sources */
	ps = as_pstate(r, p);
	switch (AS_P_STATE(ps)) {
	case AS_P_PRESENT:
		break;
	case AS_P_EMPTY:
	case AS_P_GONE:
	case AS_P_ZERO: /* the zero page is nobody's frame */
		return -ENOENT;
	default:
		return -EAGAIN;
	}
	if (ps != AS_P_PRESENT)
		return -EAGAIN;
	if (as_pfn(r, p) != from)
		return -ENOENT; /* freed and refilled since mm isolated it */
	if (!as_pstate_cas(r, p, ps, AS_P_MIGRATING))
		return -EAGAIN;
	return 0;
}

int as_migrate_freed(struct as_region *r, uint32_t p)
{
	uint8_t ps = as_pstate(r, p);

	if (!(ps & AS_P_FREED))
		return 0;
	as_pfn_set(r, p, MM_NO_PFN);
	as_pstate_set(r, p, (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY);
	return -ENOENT;
}

void as_migrate_commit(struct as_region *r, uint32_t p, uint32_t to)
{
	as_pfn_set(r, p, to);
	as_pstate_set(r, p, AS_P_PRESENT);
}

void as_migrate_cancel(struct as_region *r, uint32_t p, bool lost)
{
	if (lost)
		as_pfn_set(r, p, MM_NO_PFN);
	as_pstate_set(r, p, lost ? AS_P_EMPTY : AS_P_PRESENT);
}

/* ---- collapse and the underused split
 * ------------------------------------------------------------
 */

void as_collapse_scan(const struct as_region *r, uint32_t e, uint64_t extent_owner,
		      struct mm_collapse_scan *s)
{
	uint8_t xs = AS_X_STATE(as_xstate(r, e));
	uintptr_t ea = as_ext_addr(r, e);
	uint8_t adv = as_xadv(r, e);

	*s = (struct mm_collapse_scan){.extent_owner = extent_owner};
	s->advice = (enum mm_vma_advice)(adv & AS_ADV_MASK);
	s->vma_ok = as_ext_inside(r, e) && ea >= r->base && !(adv & AS_ADV_SPLIT);
	s->huge = xs == AS_X_HUGE || xs == AS_X_ZERO; /* the huge zero PMD: pmd_trans_huge */
	s->pmd_none = xs == AS_X_EMPTY;
	s->busy = xs == AS_X_FILLING || xs == AS_X_COLLAPSING;
	if (!s->vma_ok || s->huge || s->pmd_none)
		return;
	for (uint32_t i = 0, p = as_page_of(r, ea); i < MM_HPAGE_NR; i++, p++) {
		uint8_t ps = as_pstate(r, p);

		switch (AS_P_STATE(ps)) {
		case AS_P_EMPTY:
			s->none++;
			break;
		case AS_P_ZERO:
			s->zero++;
			break;
		case AS_P_PRESENT:
			if (as_pfn(r, p) == MM_NO_PFN)
				s->shared++;
			else
				s->present++;
			break;
		case AS_P_GONE:
			s->vma_ok = false; /* a hole in the VMA: two VMAs in the kernel */
			break;
		default:
			s->busy = true;
			break;
		}
	}
}

/* What a page claimed for a collapse was before. */
static uint8_t claimed_state(uint8_t ps)
{
	if (ps & AS_P_WASZERO)
		return AS_P_ZERO;
	return (ps & AS_P_HOLE) ? AS_P_EMPTY : AS_P_PRESENT;
}

int as_collapse_claim(struct as_region *r, uint32_t e)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e));
	uint8_t xs = as_xstate(r, e);

	if (xs != AS_X_SMALL || !as_ext_inside(r, e) || as_ext_addr(r, e) < r->base)
		return -ENOENT;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uint8_t ps = as_pstate(r, p0 + i);

		if (ps == AS_P_GONE)
			return -ENOENT;
		if (ps != AS_P_EMPTY && ps != AS_P_PRESENT && ps != AS_P_ZERO)
			return -EAGAIN;
	}
	if (!as_xstate_cas(r, e, xs, AS_X_COLLAPSING))
		return -EAGAIN;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uint32_t p = p0 + i;

		if (as_pstate_cas(r, p, AS_P_PRESENT, AS_P_MIGRATING) ||
		    as_pstate_cas(r, p, AS_P_EMPTY, AS_P_MIGRATING | AS_P_HOLE) ||
		    as_pstate_cas(r, p, AS_P_ZERO, AS_P_MIGRATING | AS_P_HOLE | AS_P_WASZERO))
			continue;
		/* a fault took it between the check and the extent's claim: give back what was
		 * claimed so far */
		for (uint32_t j = 0; j < i; j++)
			as_pstate_set(r, p0 + j, claimed_state(as_pstate(r, p0 + j)));
		as_xstate_set(r, e, AS_X_SMALL);
		return -EAGAIN;
	}
	return 0;
}

/* Leave the collapse of extent e: freed pages finalised (frames back), the others restored. */
static bool collapse_unwind(const struct as_env *env, struct as_region *r, uint32_t e,
			    struct as_counts *c)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e));
	bool freed = false;

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uint32_t p = p0 + i, pfn = as_pfn(r, p);
		uint8_t ps = as_pstate(r, p);

		if (ps & AS_P_FREED) {
			freed = true;
			if (pfn != MM_NO_PFN) {
				env->free_frame(env->arg, pfn, 0);
				c->pages_freed++;
			}
			as_pfn_set(r, p, MM_NO_PFN);
			as_pstate_set(r, p, (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY);
			continue;
		}
		as_pstate_set(r, p, claimed_state(ps));
	}
	as_xstate_set(r, e, AS_X_SMALL);
	return freed;
}

int as_collapse_commit(const struct as_env *env, struct as_region *r, uint32_t e, uint32_t head,
		       struct as_counts *c)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e));

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (as_pstate(r, p0 + i) & AS_P_FREED) {
			collapse_unwind(env, r, e, c);
			return -EAGAIN;
		}
	}
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uint32_t p = p0 + i, old = as_pfn(r, p);

		if (!(as_pstate(r, p) & AS_P_HOLE) && old != MM_NO_PFN)
			env->free_frame(env->arg, old, 0);
		as_pfn_set(r, p, head + i);
		as_pstate_set(r, p, AS_P_PRESENT);
	}
	as_xstate_set(r, e, AS_X_HUGE);
	c->collapsed++;
	return 0;
}

void as_collapse_cancel(const struct as_env *env, struct as_region *r, uint32_t e,
			struct as_counts *c)
{
	collapse_unwind(env, r, e, c);
}

int as_split_underused(const struct as_env *env, struct as_region *r, uint32_t e, const bool *zero,
		       struct as_counts *c)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e)), head;
	int freed = 0, rc;

	if (AS_X_STATE(as_xstate(r, e)) != AS_X_HUGE)
		return -EINVAL;
	head = as_pfn(r, p0);
	rc = env->split_folio ? env->split_folio(env->arg, head) : -EOPNOTSUPP;
	if (rc)
		return rc;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (!zero[i])
			continue;
		env->free_frame(env->arg, head + i, 0);
		as_pfn_set(r, p0 + i, MM_NO_PFN);
		as_pstate_set(r, p0 + i, AS_P_EMPTY);
		freed++;
	}
	as_xstate_set(r, e, AS_X_SMALL);
	c->huge_splits++;
	c->pages_freed += (uint64_t)freed;
	return freed;
}
