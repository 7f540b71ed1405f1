/* The address space of one process: regions (the program's managed anonymous VMAs), their 2 MiB
 * extents and 4 KiB pages, and the rules by which the program's memory calls change them. One
 * model for the live emulator (core/live), the simulator's replay of a recorded trace
 * (core/sim/replay.c) and the unit tests.
 *
 * Pure, like core/mm: no system call, no thread, no clock, no allocation. A region's per-page and
 * per-extent state bytes live in memory its user provides (core/live: a raw private mapping;
 * core/sim: calloc), and every effect on the emulated pool (giving a frame back, splitting a
 * huge frame block) goes through an environment (struct as_env), so the same rules run against
 * the live mm under its lock and against the simulator's mm in virtual time.
 *
 * Concurrency. Every state byte is read and written with atomic loads, stores and CAS, so the
 * live emulator's handler threads (which own FILLING and MIGRATING states) and the program's
 * munmap/madvise (which only flag pages owned by someone else) can run the same functions; a
 * single-threaded user (the simulator) pays nothing for it. Callers hold whatever lock keeps the
 * region alive and its span stable (core/live: the region's busy lock).
 *
 * State machines:
 *   extent  EMPTY -> FILLING -> HUGE | SMALL | ZERO (SMALL is terminal until a whole-extent free,
 *                                                     or a collapse: SMALL -> COLLAPSING -> HUGE;
 *                                                     an underused split: HUGE -> SMALL; the
 *                                                     first write to a ZERO one: ZERO -> FILLING
 *                                                     -> SMALL)
 *   page    EMPTY -> FILLING -> PRESENT <-> MIGRATING, any -> GONE (unmapped), PRESENT -> EMPTY,
 *           EMPTY -> FILLING -> ZERO -> FILLING -> PRESENT (a read, then a write: zero pages)
 * The owner of a transient state (FILLING, MIGRATING) is the only one that may leave it; a release
 * only flags such a page (AS_P_FREED, AS_P_UNMAPPED) or extent (AS_X_DISTURBED) and the owner
 * finalises.
 */
#ifndef THPEMU_AS_H
#define THPEMU_AS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/mm.h"

enum as_page_state {
	AS_P_EMPTY = 0, /* never populated, or freed: the next fault is a first touch */
	AS_P_FILLING,	/* a fault owns it: deciding and materialising a first touch */
	AS_P_PRESENT,	/* mapped; pfn[] holds its frame (MM_NO_PFN: outside the pool) */
	AS_P_MIGRATING, /* compaction is moving it: faults wait for the migrator's copy */
	AS_P_GONE,	/* not (any more) a live managed page: unmapped hole */
	AS_P_ZERO,	/* maps the 4 KiB zero page (a read first touch): no frame; its first write
			 * is a fault of its own (mm_fault_req.wp_zero). The live host maps a
			 * write-protected page of zeros there, or nothing yet */
};
#define AS_P_STATE(s) ((s)&0x0f)
#define AS_P_FREED    0x10 /* freed while someone owned it: the owner finalises */
#define AS_P_UNMAPPED 0x20 /* ... and unmapped (finalise to GONE, not EMPTY) */
#define AS_P_HOLE     0x40 /* MIGRATING for a collapse, but a hole before it (EMPTY) */
#define AS_P_WASZERO  0x80 /* ... a zero page before it (ZERO; with AS_P_HOLE) */

enum as_ext_state {
	AS_X_EMPTY = 0,	 /* all pages EMPTY, extent wholly inside the span: a huge candidate */
	AS_X_FILLING,	 /* a fault owns the extent's first-touch decision */
	AS_X_HUGE,	 /* one emulated huge extent; pfn[] = head + i */
	AS_X_SMALL,	 /* per-page states rule (base decision, split, partial extent) */
	AS_X_COLLAPSING, /* a collapse owns it (SMALL -> HUGE or back): every page of it is
			  * MIGRATING, so faults and compaction wait or back off */
	AS_X_ZERO,	 /* the huge zero PMD (a read first touch, 6.x): no frame; every page reads
			  * zeros, EMPTY or ZERO (the live host maps the pages touched), none owned
			  * (a fault on it owns the extent: ZERO -> FILLING -> ZERO). Its first write
			  * splits it (MM_WP_HUGE_ZERO, as_zero_split) */
};
#define AS_X_STATE(s)  ((s)&0x0f)
#define AS_X_DISTURBED 0x10 /* freed or unmapped (in part) while FILLING: the owner aborts */
#define AS_ADV_MASK    0x03 /* xadv: enum mm_vma_advice */
#define AS_ADV_SPLIT                                                                               \
	0x80 /* xadv: the advice covers part of the extent only (two VMAs in the                   \
	      * kernel): never huge */

/* The members of a region, also spliced into core/live's region (an anonymous struct in a union
 * with struct as_region, so both names reach the same bytes). */
#define AS_REGION_MEMBERS                                                                          \
	uintptr_t base;	    /* address of page 0 (page aligned) */                                 \
	uintptr_t ext_base; /* base rounded down to 2 MiB: extent 0 starts here */                 \
	uintptr_t lo, hi;   /* live span, within [base, base + npages * 4K) */                     \
	uint32_t npages;                                                                           \
	uint32_t nexts;                                                                            \
	uint8_t *pstate; /* per page: enum as_page_state | AS_P_* */                               \
	uint32_t *pfn;	 /* per page: frame + 1 (0: none), so zeroed memory means "no frame" */    \
	uint8_t *xstate; /* per extent: enum as_ext_state | AS_X_* */                              \
	uint8_t *xadv;	 /* per extent: enum mm_vma_advice | AS_ADV_SPLIT */                       \
	bool single;	 /* only one thread ever reads or writes the arrays (the simulator's       \
			  * users set it after as_region_attach): runs of pages change with        \
			  * memset instead of an atomic store per page */                          \
	bool mthp_seen;	 /* a page of it has mapped an mTHP folio (as_fault_mthp, or the region    \
			  * it succeeds): until then a single region's release asks mm no          \
			  * folio order */

struct as_region {
	AS_REGION_MEMBERS
};

/* The effects of the rules on the emulated pool. */
struct as_env {
	void *arg;
	/* Give frame pfn of the given order (0 or MM_HPAGE_ORDER) back (mm_anon_free). */
	void (*free_frame)(void *arg, uint32_t pfn, unsigned order);
	/* Split the huge block at head into base frames (mm_anon_split): 0 or -errno. */
	int (*split_huge)(void *arg, uint32_t head);
	/* Split the THP at head into 512 base frames at once (mm_anon_split_folio): 0 or -errno.
	 * The underused split; may be NULL for users that never do one. */
	int (*split_folio)(void *arg, uint32_t head);
	/* The order (2..8) of the mTHP folio pfn belongs to, else 0 (mm_anon_folio_order); may
	 * be NULL: every page then goes back at order 0. */
	unsigned (*folio_order)(void *arg, uint32_t pfn);
	/* free_frame(pfn + i, 0) for i = 0 .. n - 1, in order (mm_anon_free_run); may be NULL:
	 * each page then goes back by itself. */
	void (*free_run)(void *arg, uint32_t pfn, uint32_t n);
};

/* The environment every user has: frames go back with mm_anon_free(mm, pfn, order, call) and
 * huge blocks split with mm_anon_split(mm, head), call being the caller's context for mm's hooks
 * (the live handler's worker, the simulator's task, or NULL). ctx must outlive the env. */
struct as_mm_ctx {
	struct mm *mm;
	void *call;
};
struct as_env as_mm_env(struct as_mm_ctx *ctx);

/* What a rule did, for the caller's counters. */
struct as_counts {
	uint64_t pages_freed; /* frames given back by a release */
	uint64_t huge_splits; /* huge extents split (partial release, misaligned move) */
	uint64_t collapsed;   /* extents collapsed into a huge one */
};

/* ---- geometry and state bytes --------------------------------------------------------------- */

static inline uint32_t as_page_of(const struct as_region *r, uintptr_t a)
{
	return (uint32_t)((a - r->base) / MM_PAGE_SIZE);
}
static inline uintptr_t as_page_addr(const struct as_region *r, uint32_t p)
{
	return r->base + (uintptr_t)p * MM_PAGE_SIZE;
}
static inline uint32_t as_ext_of(const struct as_region *r, uintptr_t a)
{
	return (uint32_t)((a - r->ext_base) / MM_HPAGE_SIZE);
}
static inline uintptr_t as_ext_addr(const struct as_region *r, uint32_t e)
{
	return r->ext_base + (uintptr_t)e * MM_HPAGE_SIZE;
}
/* Is extent e wholly inside the live span (a huge candidate, given empty pages)? */
static inline bool as_ext_inside(const struct as_region *r, uint32_t e)
{
	uintptr_t a = as_ext_addr(r, e);

	return a >= r->lo && a + MM_HPAGE_SIZE <= r->hi;
}
static inline uint32_t as_pfn(const struct as_region *r, uint32_t p)
{
	return __atomic_load_n(&r->pfn[p], __ATOMIC_ACQUIRE) - 1;
}
static inline void as_pfn_set(struct as_region *r, uint32_t p, uint32_t pfn)
{
	__atomic_store_n(&r->pfn[p], pfn + 1, __ATOMIC_RELEASE);
}
static inline uint8_t as_pstate(const struct as_region *r, uint32_t p)
{
	return __atomic_load_n(&r->pstate[p], __ATOMIC_ACQUIRE);
}
static inline void as_pstate_set(struct as_region *r, uint32_t p, uint8_t s)
{
	__atomic_store_n(&r->pstate[p], s, __ATOMIC_RELEASE);
}
static inline bool as_pstate_cas(struct as_region *r, uint32_t p, uint8_t from, uint8_t to)
{
	if (r->single) { /* no other thread: no locked instruction */
		if (r->pstate[p] != from)
			return false;
		r->pstate[p] = to;
		return true;
	}
	return __atomic_compare_exchange_n(&r->pstate[p], &from, to, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}
static inline uint8_t as_xstate(const struct as_region *r, uint32_t e)
{
	return __atomic_load_n(&r->xstate[e], __ATOMIC_ACQUIRE);
}
static inline void as_xstate_set(struct as_region *r, uint32_t e, uint8_t s)
{
	__atomic_store_n(&r->xstate[e], s, __ATOMIC_RELEASE);
}
static inline bool as_xstate_cas(struct as_region *r, uint32_t e, uint8_t from, uint8_t to)
{
	if (r->single) { /* no other thread: no locked instruction */
		if (r->xstate[e] != from)
			return false;
		r->xstate[e] = to;
		return true;
	}
	return __atomic_compare_exchange_n(&r->xstate[e], &from, to, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}
static inline uint8_t as_xadv(const struct as_region *r, uint32_t e)
{
	return __atomic_load_n(&r->xadv[e], __ATOMIC_RELAXED);
}
static inline void as_xadv_set(struct as_region *r, uint32_t e, uint8_t adv)
{
	__atomic_store_n(&r->xadv[e], adv, __ATOMIC_RELAXED);
}

/* ---- a region's memory ------------------------------------------------------------------------
 */

/* Geometry of a region whose page 0 is at base and whose live span is [lo, hi) (page aligned,
 * base <= lo < hi). Returns 0, or -ERANGE when it has more pages than a region indexes. */
int as_region_geometry(struct as_region *r, uintptr_t base, uintptr_t lo, uintptr_t hi);
/* Bytes of zeroed memory the state arrays of r (geometry set) need. */
size_t as_region_meta_size(const struct as_region *r);
/* Lay the arrays out in mem (as_region_meta_size bytes, zeroed: pages EMPTY without a frame,
 * default advice) and set each extent EMPTY when wholly inside the span, else SMALL. The region
 * is shared (single false). */
void as_region_attach(struct as_region *r, void *mem);

/* ---- the rules ---------------------------------------------------------------------------------
 */

/* munmap (unmap) or MADV_DONTNEED / MADV_FREE (!unmap) of pages [p0, p1) (zap_page_range_single,
 * unmap_region; MADV_FREE carried out as MADV_DONTNEED, one outcome it allows). Extents first: a
 * huge extent released whole goes back as one order-9 block and becomes a huge candidate again
 * after DONTNEED (a zapped PMD is pmd_none: mm/memory.c zap_huge_pmd); one released in part is
 * split (split_huge_pmd in zap_pmd_range) and its pages go back one by one; an EMPTY extent
 * unmapped in part can never be huge again (two VMAs); a FILLING one is flagged DISTURBED. Then
 * pages: PRESENT ones give their frame back and become EMPTY (GONE if unmapped), EMPTY ones
 * become GONE if unmapped, owned ones (FILLING, MIGRATING) are flagged for their owner. */
void as_release(const struct as_env *env, struct as_region *r, uint32_t p0, uint32_t p1, bool unmap,
		struct as_counts *c);
/* Pages of [p0, p1) not GONE (the bytes a release takes out of management). */
uint64_t as_live_pages(const struct as_region *r, uint32_t p0, uint32_t p1);
/* The live span without GONE pages at either end, in *lo / *hi; false if no page is live. */
bool as_trim_span(const struct as_region *r, uintptr_t *lo, uintptr_t *hi);
/* Recompute extents [e0, e1] from their pages (no owner may hold them): HUGE stays, an extent
 * inside the span with every page EMPTY is EMPTY, anything else SMALL. */
void as_recompute_extents(struct as_region *r, uint32_t e0, uint32_t e1);
/* Are pages [p0, p1) all GONE (a hole that a new mmap may fill)? */
bool as_range_gone(const struct as_region *r, uint32_t p0, uint32_t p1);
/* A hole [p0, p1) mapped again (all GONE): pages EMPTY; extents wholly inside it (whose pages
 * were all GONE, so nobody can be claiming them) are huge candidates again with default advice. */
void as_revive(struct as_region *r, uint32_t p0, uint32_t p1);
/* Pages [p0, p1) were resident before the emulator saw the mapping: PRESENT without a frame. */
void as_resident(struct as_region *r, uint32_t p0, uint32_t p1);
/* MADV_HUGEPAGE / MADV_NOHUGEPAGE (adv: enum mm_vma_advice) on [lo, hi) (mm/khugepaged.c:
 * hugepage_madvise, with madvise_update_vma splitting the VMA): the advice of every extent of r
 * it touches; an extent covered in part would be two VMAs in the kernel and is never huge. */
void as_advise(struct as_region *r, uintptr_t lo, uintptr_t hi, uint8_t adv);
/* Would the kernel see more than one VMA in [lo, hi) of r (a change of advice inside it)? *first
 * carries the first whole extent's advice across the regions of one range (start with -1).
 * Extents at the ends covered in part by the advice are not judged. */
bool as_advice_splits(const struct as_region *r, uintptr_t lo, uintptr_t hi, int *first);
/* mremap of a whole region r to successor s (geometry set, arrays attached; its span is where
 * the region went, page q of s mirrors page q of r; mm/mremap.c move_vma / move_page_tables).
 * Pages before the span are GONE, pages past the old length EMPTY; a FILLING page becomes EMPTY
 * (its owner gives its frame back), a MIGRATING one PRESENT with its frame (the migration fails)
 * unless the program freed it; huge extents stay huge when the move kept the 2 MiB phase and
 * the extent is inside s, else they are split (move_huge_pmd cannot keep a misaligned PMD). The
 * caller releases pages a shrinking move cuts first. */
void as_transfer(const struct as_env *env, const struct as_region *r, struct as_region *s,
		 struct as_counts *c);

/* ---- first touches ------------------------------------------------------------------------------
 */

/* A huge decision is mapped: extent e's pages hold head + i, the extent is HUGE
 * (do_huge_pmd_anonymous_page). The caller owns the extent. */
void as_fault_huge(struct as_region *r, uint32_t e, uint32_t head);
/* A base decision is mapped at page p: it holds pfn (MM_NO_PFN: served outside the pool). If
 * the fault owned the extent (extent), the extent has a page table now: SMALL, never huge again
 * until it is freed whole (do_anonymous_page after __pte_alloc). */
void as_fault_base(struct as_region *r, uint32_t p, uint32_t pfn, bool extent);
/* A read first touch mapped a zero page (MM_FAULT_ZERO: mm/memory.c do_anonymous_page's read
 * path): page p is ZERO, without a frame. extent as for as_fault_base. */
void as_fault_zero(struct as_region *r, uint32_t p, bool extent);
/* A read first touch mapped the huge zero PMD over extent e (MM_FAULT_HUGE_ZERO: 6.12
 * mm/huge_memory.c do_huge_pmd_anonymous_page with use_zero_page): the extent is ZERO and page
 * p (the one the host mapped) ZERO. The caller owns the extent. */
void as_fault_huge_zero(struct as_region *r, uint32_t e, uint32_t p);
/* A read of page p of a ZERO extent, or of a ZERO page the host had not mapped yet: the kernel
 * took no fault (the PMD or PTE maps the zero page); the page is ZERO. The caller owns p (or
 * its extent). */
void as_zero_read(struct as_region *r, uint32_t p);
/* The first write to ZERO extent e split its PMD (6.12 do_huge_pmd_wp_page -> __split_huge_pmd
 * -> __split_huge_zero_page_pmd: mm_fault_res.zero_split): every page of it not owned by
 * someone maps the 4 KiB zero page (EMPTY -> ZERO) and the extent is SMALL. The caller owns the
 * extent (FILLING) and commits the written page itself (as_fault_base). */
void as_zero_split(struct as_region *r, uint32_t e);
/* Multi-size THP candidates of a first touch at page p (6.12 mm/memory.c alloc_anon_folio:
 * thp_vma_suitable_order and pte_range_none): bit k (MM_MTHP_MIN_ORDER..8) set when the
 * naturally aligned 2^k-page block around p lies inside the live span and every page of it but
 * p is EMPTY (p is the faulting page: its state is not judged, its fault may own it already).
 * 0 when the extent's advice is split (two VMAs: the block's VMA is not known). Pass it as
 * mm_fault_req.orders_ok with extent_owner the cookie of the extent's page 0. A concurrent
 * user must own the block's pages before it maps a folio there (core/live handler.c claims
 * them). */
uint16_t as_mthp_orders(const struct as_region *r, uint32_t p);
/* An mTHP decision (MM_FAULT_MTHP of order `order`, 2..8) is mapped at page p: the naturally
 * aligned block around p holds head + i, PRESENT (do_anonymous_page with a large folio,
 * set_ptes). extent as for as_fault_base (the extent has a page table now: SMALL). Releasing
 * its pages later gives each frame back at order 0; mm keeps the folio until its last page
 * goes or the shrinker splits it. */
void as_fault_mthp(struct as_region *r, uint32_t p, unsigned order, uint32_t head, bool extent);
/* A huge decision the host refused to map whole (the live UFFDIO_MOVE failed; the replay mirrors
 * a recorded refusal): the fault falls back to 4 KiB pages, as a THP fault returning
 * VM_FAULT_FALLBACK falls back to handle_pte_fault (mm/memory.c: __handle_mm_fault). The block
 * at head is split; the pages of extent e that got mapped (mapped[i]) keep head + i and are
 * PRESENT, the others give their frame back and are EMPTY; the extent is SMALL. The caller owns
 * the extent (live: FILLING; replay: just committed huge). */
void as_fault_huge_fallback(const struct as_env *env, struct as_region *r, uint32_t e,
			    uint32_t head, const bool *mapped);

/* ---- collapse (khugepaged, MADV_COLLAPSE) and the underused split ------------------------------
 */

/* What extent e holds, for khugepaged's scan (mm/khugepaged.c hpage_collapse_scan_pmd): holes
 * (EMPTY pages), zero pages (ZERO: mm's era decides what they mean), pages with a frame, pages
 * without one (shared with a fork parent, or resident before the emulator saw the mapping: counted
 * as shared), pages owned by a fault or a migration (busy), the extent's advice, whether it is
 * wholly inside the span (vma_ok) and whether it is HUGE (or ZERO: the huge zero PMD,
 * pmd_trans_huge) or was never touched (EMPTY: pmd_none). extent_owner is the cookie the caller's
 * owner scheme gives page 0 of the extent. */
void as_collapse_scan(const struct as_region *r, uint32_t e, uint64_t extent_owner,
		      struct mm_collapse_scan *s);
/* Claim extent e for a collapse (collapse_huge_page takes mmap_lock for write): SMALL ->
 * COLLAPSING and every page of it MIGRATING (a hole flagged AS_P_HOLE), so faults into the
 * range wait and compaction backs off; a ZERO page is a hole too (AS_P_HOLE | AS_P_WASZERO: no
 * frame, data zeros; the live collapse unmaps it first). Returns 0, -EAGAIN (a fault or a migration
 * owns part of it; nothing changed) or -ENOENT (not SMALL, not inside the span, or a page is GONE).
 */
int as_collapse_claim(struct as_region *r, uint32_t e);
/* The copy is in place: every page holds head + i, PRESENT, the extent is HUGE, the old frames
 * went back through env->free_frame (order 0). A page the program freed or unmapped meanwhile
 * (AS_P_FREED) makes the collapse fail instead: -EAGAIN, the extent SMALL, the freed pages
 * finalised (their old frames given back), the others as before; the caller frees head. */
int as_collapse_commit(const struct as_env *env, struct as_region *r, uint32_t e, uint32_t head,
		       struct as_counts *c);
/* The collapse is abandoned before anything changed: pages and extent as before the claim
 * (freed ones finalised, their frames given back). */
void as_collapse_cancel(const struct as_env *env, struct as_region *r, uint32_t e,
			struct as_counts *c);
/* The underused split of HUGE extent e (6.12 thp_underused + split_folio with the zero-page
 * remap): the THP is split into base frames (env->split_folio), zero-filled subpages (zero[i])
 * give their frame back and are EMPTY (the next touch is a first touch), the others stay
 * PRESENT with head + i; the extent is SMALL. The caller owns the extent (the live emulator
 * unmaps the zero subpages for real first). Returns the pages freed, or -EINVAL (not HUGE) /
 * -errno of split_folio (nothing changed). */
int as_split_underused(const struct as_env *env, struct as_region *r, uint32_t e, const bool *zero,
		       struct as_counts *c);

/* ---- the owner side of page migration (mm/migrate.c: unmap_and_move) ------------------------ */

/* PRESENT -> MIGRATING if page p still holds frame `from`. Returns 0, -ENOENT (not mapped, or
 * freed and refilled since mm isolated the frame), -EBUSY (part of a THP: never a migration
 * source) or -EAGAIN (some other owner holds it). */
int as_migrate_claim(struct as_region *r, uint32_t p, uint32_t from);
/* Was page p (MIGRATING) freed by the program meanwhile? Then it is finalised (no frame; EMPTY,
 * or GONE if unmapped) and the result is -ENOENT: mm frees both frames. Otherwise 0. */
int as_migrate_freed(struct as_region *r, uint32_t p);
/* The copy is in place: page p holds frame `to`. */
void as_migrate_commit(struct as_region *r, uint32_t p, uint32_t to);
/* The migration of page p is abandoned: it keeps its frame, or (lost) its data went with a
 * mapping that vanished and it is EMPTY without a frame. */
void as_migrate_cancel(struct as_region *r, uint32_t p, bool lost);

#endif
