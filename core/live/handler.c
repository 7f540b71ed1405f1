/* First-touch fault service: the emulated handle_mm_fault for the program's managed memory.
 *
 * One message is one thread waiting on one page. The extent's state decides who serves it:
 *   EMPTY    this handler claims the extent (FILLING) and asks mm with huge_ok, as
 *            do_huge_pmd_anonymous_page does for a pmd_none fault in a THP-eligible VMA;
 *   FILLING  another handler is deciding it (maybe stalled in compaction): drop the message, the
 *            owner's move or its explicit wake of the whole extent wakes this waiter;
 *   HUGE     already mapped: a duplicate (several threads, or a kernel-mode fault retry storm);
 *   SMALL    the page's state decides: EMPTY is claimed and served as a 4 KiB first touch
 *            (do_anonymous_page), FILLING and MIGRATING are left to their owner (never a zero
 *            page over a page being migrated), PRESENT gets a wake.
 *   ZERO     (zero pages) the huge zero PMD: this handler claims the extent for a read of one
 *            of its pages or its first write (see "zero pages" below).
 * Materialising (the ioctl that maps the decision) runs under the region's busy read lock after
 * re-checking that the program has not freed or unmapped the page meanwhile. A fault is counted
 * before its thread is woken, as the shmem path does: a woken program may _exit at once, its
 * handler threads with it, and a fault recorded after the wake could be lost. Where one ioctl
 * maps the page and wakes its only waiter (a 4 KiB page of a SMALL extent, the first write to a
 * zero page), the fault is counted just before it with the latency so far (count_early) and its
 * latency amended after (record): no ioctl more. Elsewhere the mapping is DONTWAKE and the
 * waiters are woken by record, once the fault is counted (one UFFDIO_WAKE: a huge move wakes
 * the extent that way, where the first fault of an extent woke it already).
 *
 * thpemu's own faults: those of the emulator's own threads (handlers, background, khugepaged,
 * watchdog, refill, trace writer, flusher, dirtier) at any time, and once thpemu's exit hook
 * runs those of the thread running it (its reports' symbolisation, libdw inflating debug
 * sections, the report writers): all of it allocates with the program's allocator, in managed
 * memory. They are served outside the emulated kernel: a
 * 4 KiB page with no frame, no decision, no stall, no trace record, not a fault of the program's
 * (host.own_faults and host.exit_faults count them). The faulting thread is the message's
 * (UFFD_FEATURE_THREAD_ID: fs/userfaultfd.c userfault_msg sets feat.ptid = task_pid_vnr(current),
 * since 4.14), looked up in live.c's table of thpemu's threads.
 *
 * Nothing here allocates, uses stdio or takes a lock the program can hold while faulting.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "util/sys.h"
#include "util/clock.h"
#include "obs/usdt.h"

/* Whose fault this is when it is not the program's (fault_ctx.own). */
enum { OWN_NONE, OWN_THREAD, OWN_EXIT };

struct fault_ctx {
	struct uffd_worker *w;
	struct uffd_live *lv;
	struct uffd_region *r;
	uintptr_t addr; /* page address */
	uint32_t p, e;	/* page and extent index */
	bool write;
	bool wp;		 /* a write-protect message: the page is mapped, protected */
	enum mm_wp_zero wp_zero; /* a write to a zero page (mm_fault_req.wp_zero) */
	int tid;
	uint64_t t_read;
	struct mm_fault_res res;
	int real_pmd;	    /* huge: 1 PMD-mapped, 0 not, -1 unknown */
	bool cand;	    /* mm was asked with huge_ok */
	uint32_t lo, hi;    /* pages [lo, hi) claimed (FILLING) for an mTHP block; p among them */
	uint8_t decision;   /* mm's outcome (res.outcome may become BASE if the host refuses) */
	uint8_t own;	    /* thpemu's own fault (OWN_*): served outside the emulated kernel */
	bool huge_mapped;   /* the huge move went in: its PMD is checked after the wake */
	bool early;	    /* counted before the ioctl that woke its thread (count_early) */
	uint64_t lat_early; /* ... with this latency, amended by record */
	uintptr_t wake_lo, wake_hi; /* waiters to wake once the fault is recorded (record) */
};

static void count_early(struct fault_ctx *fc);

static void wake_page(struct fault_ctx *fc)
{
	uffd_io_wake(fc->lv->uffd, fc->addr, UFFD_PAGE_SIZE);
}

static void wake_extent(struct fault_ctx *fc)
{
	uffd_io_wake(fc->lv->uffd, as_ext_addr(&fc->r->as, fc->e), UFFD_HPAGE_SIZE);
}

/* Wake [a, a + len) once the fault is recorded (record); ranges merge into one wake. */
static void wake_later(struct fault_ctx *fc, uintptr_t a, size_t len)
{
	if (!fc->wake_hi || a < fc->wake_lo)
		fc->wake_lo = a;
	if (a + len > fc->wake_hi)
		fc->wake_hi = a + len;
}

static void wake_page_later(struct fault_ctx *fc)
{
	wake_later(fc, fc->addr, UFFD_PAGE_SIZE);
}

static void wake_extent_later(struct fault_ctx *fc)
{
	wake_later(fc, as_ext_addr(&fc->r->as, fc->e), UFFD_HPAGE_SIZE);
}

static uint32_t ext_first_page(const struct fault_ctx *fc)
{
	return as_page_of(&fc->r->as, as_ext_addr(&fc->r->as, fc->e));
}

/* The 4 KiB first touch: a zeroed page for a write, the shared zero page for a read; wake: its
 * waiter is woken by the same ioctl (the fault was counted: count_early). */
static int fill_page(struct fault_ctx *fc, bool wake)
{
	struct uffd_live *lv = fc->lv;

	if (fc->write)
		return uffd_io_copy(lv->uffd, fc->addr, lv->zero_page, UFFD_PAGE_SIZE, wake, NULL);
	return uffd_io_zeropage_mode(lv->uffd, fc->addr, UFFD_PAGE_SIZE,
				     wake ? 0 : UFFDIO_ZEROPAGE_MODE_DONTWAKE);
}

static void free_frame(struct uffd_live *lv, uint32_t pfn, unsigned order, void *call)
{
	if (pfn != MM_NO_PFN)
		mm_anon_free(lv->mm, pfn, order, call);
}

/* The program freed or unmapped the page/extent while we decided: give the frame back and let
 * the waiters fault again (busy read lock held). */
static void base_abort(struct fault_ctx *fc, bool in_extent, uint8_t ps)
{
	free_frame(fc->lv, fc->res.pfn, 0, fc->w);
	if (in_extent) {
		as_recompute_extents(&fc->r->as, fc->e, fc->e);
		wake_extent(fc);
	} else {
		as_pstate_set(&fc->r->as, fc->p, (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY);
		wake_page(fc);
	}
}

/* Map a base decision (busy read lock held); returns -errno when the region must be failed. */
static int base_map_locked(struct fault_ctx *fc, bool in_extent)
{
	struct uffd_region *r = fc->r;
	uint8_t ps = as_pstate(&r->as, fc->p);
	uint8_t xs = as_xstate(&r->as, fc->e);
	int rc;

	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed ||
	    (in_extent ? (xs & AS_X_DISTURBED) : (ps & AS_P_FREED))) {
		base_abort(fc, in_extent, ps);
		return 0;
	}
	/* a page's one waiter is woken by its copy, counted just before; an extent's once the
	 * fault is counted (record) */
	if (!in_extent)
		count_early(fc);
	rc = fill_page(fc, !in_extent);
	if (rc == -EEXIST) { /* mapped behind our back: keep it, account it, wake the waiter */
		UFFD_COUNT(fc->lv, eexist);
		if (!in_extent)
			wake_page(fc);
		rc = 0;
	}
	if (rc == 0) {
		as_fault_base(&r->as, fc->p, fc->res.pfn, in_extent);
		if (in_extent)
			wake_extent_later(fc); /* other waiters in it now go per page */
		return 0;
	}
	free_frame(fc->lv, fc->res.pfn, 0, fc->w);
	as_pfn_set(&r->as, fc->p, MM_NO_PFN);
	as_pstate_set(&r->as, fc->p, AS_P_EMPTY);
	if (in_extent)
		as_xstate_set(&r->as, fc->e, AS_X_SMALL);
	if (rc == -ENOENT || rc == -ESRCH) { /* mapping or process gone */
		in_extent ? wake_extent(fc) : wake_page(fc);
		return 0;
	}
	UFFD_COUNT(fc->lv, uffd_errors);
	return rc;
}

static void materialise_base(struct fault_ctx *fc, bool in_extent)
{
	int rc;

	if (fc->res.outcome == MM_FAULT_NOMEM) {
		fc->res.pfn = MM_NO_PFN;
		UFFD_COUNT(fc->lv, nomem_faults);
		uffd_say_once(fc->lv, 0, "the emulated pool (", fc->lv->cfg.pool_bytes >> 20,
			      " MiB) is exhausted: faults are now served outside it "
			      "(host.nomem_faults counts them)");
	}
	pthread_rwlock_rdlock(&fc->r->busy);
	rc = base_map_locked(fc, in_extent);
	pthread_rwlock_unlock(&fc->r->busy);
	if (rc < 0)
		uffd_region_fail(fc->lv, fc->r, rc);
}

/* The host refused the huge move (a PTE table already in the extent, VMA flags that differ from
 * the staging area, ...): serve the fault with 4 KiB pages, keeping whatever the move mapped, as
 * a THP fault that falls back. What is mapped is read from the page tables (mincore), not from
 * the byte count the move reported: a move can under-report (see migrate.c). Busy read lock
 * held. */
static int huge_fallback_locked(struct fault_ctx *fc, uint32_t head, int slot, int rc, size_t moved)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	uintptr_t dst = as_ext_addr(&r->as, fc->e);
	uint32_t p0 = ext_first_page(fc), nmoved = (uint32_t)(moved / UFFD_PAGE_SIZE);
	struct as_mm_ctx ctx = {lv->mm, fc->w};
	const struct as_env env = as_mm_env(&ctx);
	unsigned char vec[MM_HPAGE_NR];
	bool known = sys_call3(SYS_mincore, dst, UFFD_HPAGE_SIZE, vec) == 0;
	bool mapped[MM_HPAGE_NR];
	uint32_t i_fault = fc->p - p0;
	int frc = 0;

	UFFD_COUNT(lv, huge_move_fallbacks);
	if (rc == -EINVAL) /* this region's VMA cannot take staging chunks */
		__atomic_store_n(&r->no_huge_move, 1, __ATOMIC_RELAXED);
	else if (rc != -EEXIST && rc != -EBUSY && rc != -ENOENT && rc != -ENOMEM)
		UFFD_COUNT(lv, uffd_errors);
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		mapped[i] = known ? (vec[i] & 1) : i < nmoved;
	if (!mapped[i_fault]) { /* the faulting page at least: a 4 KiB first touch */
		frc = fill_page(fc, false);
		mapped[i_fault] = frc == 0 || frc == -EEXIST;
		frc = mapped[i_fault] ? 0 : frc;
	}
	as_fault_huge_fallback(&env, &r->as, fc->e, head, mapped);
	uffd_staging_release(&lv->staging, slot, false);
	wake_extent_later(fc);
	fc->res.outcome = MM_FAULT_BASE;
	return (frc == 0 || frc == -ENOENT || frc == -ESRCH) ? 0 : frc;
}

/* Freed or unmapped while deciding, or the mapping vanished: give everything back. */
static void huge_abort_locked(struct fault_ctx *fc, uint32_t head, int slot, bool intact)
{
	struct uffd_live *lv = fc->lv;

	mm_anon_free(lv->mm, head, MM_HPAGE_ORDER, fc->w);
	uffd_staging_release(&lv->staging, slot, intact);
	as_recompute_extents(&fc->r->as, fc->e, fc->e);
	wake_extent(fc);
}

/* --host-fault pte: the fault came through the host's 4 KiB path, which left an empty page table
 * at dst (do_anonymous_page's pte_alloc); a huge move needs pmd_none there (mm/userfaultfd.c
 * move_pages), else it splits the staging THP. MADV_DONTNEED frees an empty table
 * (CONFIG_PT_RECLAIM). Only an empty range is touched: a page found there (nothing should be:
 * this handler owns the whole extent) stays, and the move's EEXIST takes the fallback. */
static void free_empty_table(struct uffd_live *lv, uintptr_t dst)
{
	if (uffd_range_is_empty(lv->pagemap_fd, dst, UFFD_HPAGE_SIZE) == 1 &&
	    sys_zap((void *)dst, UFFD_HPAGE_SIZE) == 0)
		UFFD_COUNT(lv, pt_reclaims);
}

static int huge_map_locked(struct fault_ctx *fc, uint32_t head, int slot)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	uintptr_t dst = as_ext_addr(&r->as, fc->e);
	size_t moved = 0;
	int rc;

	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed ||
	    (as_xstate(&r->as, fc->e) & AS_X_DISTURBED)) {
		huge_abort_locked(fc, head, slot, true);
		return 0;
	}
	if (lv->pt_reclaim)
		free_empty_table(lv, dst);
	rc = uffd_io_move_all(lv->uffd, dst, (uintptr_t)uffd_staging_addr(&lv->staging, slot),
			      UFFD_HPAGE_SIZE, UFFDIO_MOVE_MODE_DONTWAKE, &moved);
	if (rc == 0) {
		as_fault_huge(&r->as, fc->e, head);
		uffd_staging_spent(&lv->staging, slot);
		wake_extent_later(fc);
		return 1;
	}
	if ((rc == -ENOENT || rc == -ESRCH) && moved == 0) {
		huge_abort_locked(fc, head, slot, true);
		return 0;
	}
	return huge_fallback_locked(fc, head, slot, rc, moved);
}

static void materialise_huge(struct fault_ctx *fc)
{
	struct uffd_live *lv = fc->lv;
	uint32_t head = fc->res.pfn;
	int slot = fc->w->slot, rc;

	fc->w->slot = -1;
	if (slot < 0) { /* clear_huge found no chunk at all: pay it here */
		slot = uffd_staging_take(&lv->staging);
		if (slot >= 0) {
			uint64_t ahead = uffd_staging_zero(&lv->staging, slot);

			fc->w->clear_ahead_ns += ahead;
			fc->res.rec.zero_ns += ahead;
			fc->res.rec.total_ns += ahead;
		}
	}
	pthread_rwlock_rdlock(&fc->r->busy);
	if (slot < 0)
		rc = huge_fallback_locked(fc, head, slot, -ENOMEM, 0);
	else
		rc = huge_map_locked(fc, head, slot);
	pthread_rwlock_unlock(&fc->r->busy);
	if (rc == 1)
		fc->huge_mapped = true; /* its PMD is checked once the program is woken (record) */
	else if (rc < 0)
		uffd_region_fail(lv, fc->r, rc);
}

/* Did the huge move end PMD-mapped on the host? (after the wake: the program need not wait) */
static void check_pmd(struct fault_ctx *fc)
{
	struct uffd_live *lv = fc->lv;

	fc->real_pmd =
	    uffd_range_is_pmd(lv->pagemap_fd, as_ext_addr(&fc->r->as, fc->e), UFFD_HPAGE_SIZE);
	if (fc->real_pmd > 0)
		UFFD_COUNT(lv, real_pmd_faults);
	else if (fc->real_pmd == 0)
		UFFD_COUNT(lv, huge_not_pmd);
	else
		UFFD_COUNT(lv, huge_unverified);
}

/* ---- multi-size THP (6.8+) ------------------------------------------------------------------
 *
 * 6.12 mm/memory.c alloc_anon_folio: a write fault in a VMA whose allowable orders include some
 * mTHP size takes the highest order whose naturally aligned block lies in the VMA
 * (thp_vma_suitable_order) with every PTE none (pte_range_none); as_mthp_orders says which.
 * A handler owns only its page (page FILLING) unless it owns the whole extent, so before asking
 * mm it claims the other pages of the candidate blocks, smallest block first, and asks only for
 * the orders it holds: a page another thread is serving is not none. The folio is delivered as
 * one UFFDIO_COPY of 2^k zeroed pages (the kernel's folio_zero_user + set_ptes at once; the
 * host maps it with 4 KiB PTEs, so the delivery is per PTE while the decision and its cost are
 * the emulated kernel's). */

static void unclaim_page(struct fault_ctx *fc, uint32_t q)
{
	uint8_t ps = as_pstate(&fc->r->as, q);

	as_pstate_set(&fc->r->as, q, (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY);
	uffd_io_wake(fc->lv->uffd, as_page_addr(&fc->r->as, q), UFFD_PAGE_SIZE);
}

/* Give back the claimed pages outside [keep0, keep0 + keepn) (busy read lock held). */
static void unclaim(struct fault_ctx *fc, uint32_t keep0, uint32_t keepn)
{
	for (uint32_t q = fc->lo; q < fc->hi; q++)
		if (q < keep0 || q >= keep0 + keepn)
			unclaim_page(fc, q);
	fc->lo = keep0;
	fc->hi = keep0 + keepn;
}

static uint32_t block_first(const struct fault_ctx *fc, unsigned order)
{
	uintptr_t len = (uintptr_t)UFFD_PAGE_SIZE << order;

	return as_page_of(&fc->r->as, fc->addr & ~(len - 1));
}

/* The mTHP orders mm could pick for a fault in a VMA with this advice: those the policy allows
 * (mm_thp_allowable_orders: with no mTHP size enabled, none), every one with a policy plugin
 * (it may choose any possible order); none before the modern era. Claiming a block's pages for
 * an order mm cannot pick cost an UFFDIO_WAKE for each page given back: ~3 a 4 KiB fault. */
static uint16_t mthp_wanted(const struct uffd_live *lv, enum mm_vma_advice advice)
{
	const struct mm_policy *pol = mm_policy(lv->mm);
	const uint16_t mthp = (uint16_t)((1U << MM_HPAGE_ORDER) - (1U << MM_MTHP_MIN_ORDER));

	if (pol->era != MM_ERA_MODERN)
		return 0;
	if (lv->cfg.policy.plugin[0])
		return mthp;
	return mm_thp_allowable_orders(pol, advice) & mthp;
}

/* The mTHP orders this fault may ask for (bit k); claims their blocks' pages (page case). */
static uint16_t mthp_orders(struct fault_ctx *fc, bool in_extent, enum mm_vma_advice advice)
{
	uint16_t ok, got = 0, want;
	enum mm_thp_disable off =
	    (enum mm_thp_disable)__atomic_load_n(&fc->lv->thp_disable, __ATOMIC_RELAXED);

	fc->lo = fc->p;
	fc->hi = fc->p + 1;
	if (!fc->write || fc->wp_zero != MM_WP_NONE ||
	    (off != MM_THP_DISABLE_NONE && mm_vma_thp_disabled(advice, off, false)))
		return 0; /* read: the zero page; a write to a zero page: the PTE is not none;
			   * PR_SET_THP_DISABLE for this VMA: no size */
	want = mthp_wanted(fc->lv, advice);
	if (!want)
		return 0;
	ok = as_mthp_orders(&fc->r->as, fc->p); /* orders 2..K: the blocks nest */
	if (in_extent || !(ok & want))
		return ok & want; /* the extent's owner owns every page of it */
	/* claim block by block, the smaller inside the larger, up to the largest wanted one */
	ok &= (uint16_t)((2U << (31 - __builtin_clz(ok & want))) - 1);
	for (unsigned k = MM_MTHP_MIN_ORDER; k < MM_HPAGE_ORDER && (ok & (1U << k)); k++) {
		uint32_t b0 = block_first(fc, k), n = 1U << k, q;

		for (q = b0; q < b0 + n; q++) {
			uint8_t ps = as_pstate(&fc->r->as, q);

			if (q >= fc->lo && q < fc->hi)
				continue;
			if (AS_P_STATE(ps) != AS_P_EMPTY ||
			    !as_pstate_cas(&fc->r->as, q, ps, AS_P_FILLING))
				break;
		}
		if (q < b0 + n) { /* taken meanwhile: not none; give back this step's claims */
			for (uint32_t u = b0; u < q; u++)
				if (u < fc->lo || u >= fc->hi)
					unclaim_page(fc, u);
			break;
		}
		fc->lo = b0;
		fc->hi = b0 + n;
		got |= (uint16_t)(1U << k);
	}
	return got & want;
}

/* The program freed or unmapped part of the block, or the mapping went: the folio goes back
 * whole (busy read lock held). */
static void mthp_abort_locked(struct fault_ctx *fc, bool in_extent, uint32_t b0, uint32_t n)
{
	mm_anon_free(fc->lv->mm, fc->res.pfn, fc->res.order, fc->w);
	if (in_extent) {
		as_recompute_extents(&fc->r->as, fc->e, fc->e);
		wake_extent(fc);
	} else {
		fc->lo = b0;
		fc->hi = b0 + n;
		unclaim(fc, 0, 0);
	}
}

/* Map the folio (busy read lock held); -errno when the region must be failed. */
static int mthp_map_locked(struct fault_ctx *fc, bool in_extent)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	unsigned order = fc->res.order;
	uint32_t b0 = block_first(fc, order), n = 1U << order;
	uintptr_t dst = as_page_addr(&r->as, b0);
	size_t len = (size_t)n * UFFD_PAGE_SIZE, off = 0;
	bool disturbed = in_extent && (as_xstate(&r->as, fc->e) & AS_X_DISTURBED);
	int rc = 0;

	for (uint32_t q = b0; q < b0 + n && !in_extent && !disturbed; q++)
		disturbed = (as_pstate(&r->as, q) & AS_P_FREED) != 0;
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed || disturbed) {
		mthp_abort_locked(fc, in_extent, b0, n);
		return 0;
	}
	for (unsigned tries = 0; off < len && tries < 64; tries++) {
		int64_t done = 0;

		rc = uffd_io_copy(lv->uffd, dst + off, lv->zero_block, len - off, false, &done);
		off += (size_t)done;
		if (rc == 0)
			break;
		if (rc == -EEXIST) { /* that page mapped behind our back: keep it */
			UFFD_COUNT(lv, eexist);
			off += UFFD_PAGE_SIZE;
			rc = 0;
		} else if (rc != -EAGAIN) {
			break;
		}
	}
	if (rc == 0 && off < len)
		rc = -EAGAIN;
	if (rc < 0) {
		mthp_abort_locked(fc, in_extent, b0, n);
		if (rc == -ENOENT || rc == -ESRCH) /* mapping or process gone */
			return 0;
		UFFD_COUNT(lv, uffd_errors);
		return rc;
	}
	as_fault_mthp(&r->as, fc->p, order, fc->res.pfn, in_extent);
	if (in_extent)
		wake_extent_later(fc); /* other waiters in it now go per page */
	else
		wake_later(fc, dst, len);
	return 0;
}

static void materialise_mthp(struct fault_ctx *fc, bool in_extent)
{
	int rc;

	pthread_rwlock_rdlock(&fc->r->busy);
	rc = mthp_map_locked(fc, in_extent);
	pthread_rwlock_unlock(&fc->r->busy);
	if (rc < 0)
		uffd_region_fail(fc->lv, fc->r, rc);
}

static void ask_mm(struct fault_ctx *fc, bool huge_ok)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	uint8_t adv = as_xadv(&r->as, fc->e);
	enum mm_thp_disable thp_off =
	    (enum mm_thp_disable)__atomic_load_n(&lv->thp_disable, __ATOMIC_RELAXED);
	struct mm_fault_req req = {
	    .owner = uffd_cookie(r, fc->p),
	    .extent_owner = uffd_cookie(r, huge_ok ? ext_first_page(fc) : fc->p),
	    .advice = (enum mm_vma_advice)(adv & AS_ADV_MASK),
	    .thp_disable = thp_off, /* mm applies it (mm_vma_thp_disabled) */
	    /* aligned, wholly inside, still empty, one VMA's advice, a host VMA that moves take */
	    .huge_ok = huge_ok && !(adv & AS_ADV_SPLIT) &&
		       !__atomic_load_n(&r->no_huge_move, __ATOMIC_RELAXED),
	    .write = fc->write,
	    .zero_ok = lv->zero_wp && !fc->write, /* the later write is seen (zero pages) */
	    .wp_zero = fc->wp_zero,
	    .as_id = (uint32_t)lv->mslot, /* khugepaged's mm_slot: the machine slot, else 0 */
	    .orders_ok = mthp_orders(fc, huge_ok, (enum mm_vma_advice)(adv & AS_ADV_MASK)),
	    /* for a policy plugin: the live span of the region (the VMA) */
	    .addr = fc->addr,
	    .region_start = r->lo,
	    .region_len = r->hi - r->lo,
	};

	if (fc->w->slot >= 0) { /* left over from an earlier fault that never used it */
		uffd_staging_release(&lv->staging, fc->w->slot, true);
		fc->w->slot = -1;
	}
	fc->cand = req.huge_ok;
	if (req.orders_ok && !req.huge_ok) /* page 0 of the 2 MiB extent by address (the region
					    * may start inside it): mm's block cookies */
		req.extent_owner =
		    req.owner - ((fc->addr / UFFD_PAGE_SIZE) & (uintptr_t)(MM_HPAGE_NR - 1));
	THPEMU_PROBE(fault_begin, (uint64_t)fc->addr, (int)fc->write, fc->tid);
	if (mm_fault(lv->mm, &req, &fc->res, fc->w) < 0) {
		fc->res.outcome = MM_FAULT_NOMEM;
		fc->res.pfn = MM_NO_PFN;
	}
	if (!huge_ok && fc->res.outcome == MM_FAULT_HUGE) { /* cannot happen: mm honours huge_ok */
		mm_anon_free(lv->mm, fc->res.pfn, MM_HPAGE_ORDER, fc->w);
		fc->res.outcome = MM_FAULT_NOMEM;
	}
	if (fc->hi - fc->lo > 1) { /* claimed pages the folio does not cover go back */
		bool mthp = fc->res.outcome == MM_FAULT_MTHP;

		pthread_rwlock_rdlock(&fc->r->busy);
		unclaim(fc, mthp ? block_first(fc, fc->res.order) : fc->p,
			mthp ? 1U << fc->res.order : 1);
		pthread_rwlock_unlock(&fc->r->busy);
	}
	fc->decision = (uint8_t)fc->res.outcome;
}

static void decide(struct fault_ctx *fc, bool huge_ok)
{
	if (!fc->own) {
		ask_mm(fc, huge_ok);
		return;
	}
	/* thpemu's own fault: no decision, a 4 KiB page with no frame, as a page outside the pool
	 * (the staging chunk a previous fault left stays with the worker for the next) */
	fc->lo = fc->p;
	fc->hi = fc->p + 1;
	fc->res.outcome = MM_FAULT_BASE;
	fc->res.pfn = MM_NO_PFN;
	fc->decision = MM_FAULT_BASE;
}

/* The faulting thread's name, read with raw system calls (no stdio on the fault path). */
static void thread_comm(int tid, char *comm, size_t len)
{
	char path[48] = "/proc/self/task/";
	size_t n = 16;
	char digits[12];
	int d = 0, fd;
	long got;

	do {
		digits[d++] = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid > 0 && d < 11);
	while (d)
		path[n++] = digits[--d];
	memcpy(path + n, "/comm", 6);
	comm[0] = '\0';
	fd = guard_fd_open(path); /* read while the program runs: out of its reach */
	if (fd < 0)
		return;
	got = sys_read(fd, comm, len - 1);
	guard_fd_close(fd);
	if (got <= 0)
		got = 0;
	comm[got] = '\0';
	if (got && comm[got - 1] == '\n')
		comm[got - 1] = '\0';
}

/* Keep a stall event in the process's statistics (lock-free slot reservation). */
static void record_stall(struct fault_ctx *fc, uint64_t lat)
{
	struct uffd_stats *st = fc->lv->stats;
	uint32_t idx = __atomic_fetch_add(&st->nstall_recs, 1, __ATOMIC_RELAXED);
	struct uffd_stall_rec *sr;

	if (idx >= UFFD_STALL_RECS)
		return;
	sr = &st->stall_recs[idx];
	sr->t_start_ns = fc->t_read;
	sr->duration_ns = lat;
	sr->addr = fc->addr;
	sr->tid = fc->tid;
	sr->cause = fc->res.rec.cause;
	thread_comm(fc->tid, sr->comm, sizeof(sr->comm));
	__atomic_store_n(&sr->ready, 1, __ATOMIC_RELEASE);
}

/* Wake the fault's waiters (wake_later), once it is counted. */
static void wake_waiters(struct fault_ctx *fc)
{
	if (fc->wake_hi)
		uffd_io_wake(fc->lv->uffd, fc->wake_lo, fc->wake_hi - fc->wake_lo);
	fc->wake_hi = 0;
}

/* Count the fault with latency lat: faults, latency, stalls. */
static void count(struct fault_ctx *fc, uint64_t lat)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_host_stats *h = &lv->stats->host;

	obs_faults_record(&lv->stats->faults, &fc->res.rec, lat);
	uffd_stat_max(&h->latency_max_ns, lat);
	if (lat >= lv->cfg.stall_threshold_ns) {
		uffd_stat_add(&h->stalls, 1);
		uffd_stat_add(&h->stall_ns, lat);
		record_stall(fc, lat);
	}
}

/* Count the fault now, with its latency so far: the next ioctl maps its page and wakes its
 * thread, which may _exit at once. record amends the latency. */
static void count_early(struct fault_ctx *fc)
{
	if (fc->own)
		return;
	fc->lat_early = clock_now_ns() - fc->t_read + fc->w->clear_ahead_ns;
	fc->early = true;
	count(fc, fc->lat_early);
}

/* The fault counted early took lat after all. */
static void amend(struct fault_ctx *fc, uint64_t lat)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_host_stats *h = &lv->stats->host;
	uint64_t thr = lv->cfg.stall_threshold_ns;

	obs_faults_amend(&lv->stats->faults, &fc->res.rec, fc->lat_early, lat);
	uffd_stat_max(&h->latency_max_ns, lat);
	if (fc->lat_early >= thr) {
		uffd_stat_add(&h->stall_ns, lat - fc->lat_early);
	} else if (lat >= thr) {
		uffd_stat_add(&h->stalls, 1);
		uffd_stat_add(&h->stall_ns, lat);
		record_stall(fc, lat);
	}
}

/* Count the fault (or amend what count_early counted), wake its waiters, then tell the
 * observers. Everything a report counts is done before the wake: a woken program may _exit at
 * once and take its handler threads with it. */
static void record(struct fault_ctx *fc)
{
	struct uffd_live *lv = fc->lv;
	/* the service time, and the clear the host did ahead of time for it (charged) */
	uint64_t lat = clock_now_ns() - fc->t_read + fc->w->clear_ahead_ns;

	if (fc->own) { /* not the program's fault: counted apart, nothing observed */
		if (fc->own == OWN_EXIT)
			UFFD_COUNT(lv, exit_faults);
		else
			UFFD_COUNT(lv, own_faults);
		wake_waiters(fc);
		return;
	}
	if (fc->early)
		amend(fc, lat);
	else
		count(fc, lat);
	uffd_stallcap_fault_end(fc->w, &fc->res.rec, lat); /* in service until the wake */
	wake_waiters(fc);
	/* decision: mm's (huge even when the host then mapped it small); order: frames served */
	THPEMU_PROBE(fault_end, (uint64_t)fc->addr, (int)fc->decision, (int)fc->res.order, lat,
		     fc->tid);
	if (fc->res.rec.reclaim_ns)
		THPEMU_PROBE(reclaim, (uint64_t)fc->addr, (uint64_t)fc->res.rec.reclaimed,
			     fc->res.rec.reclaim_ns);
	if (fc->huge_mapped)
		check_pmd(fc);
	if (lv->fault_hook || uffd_tracing(lv)) {
		struct uffd_fault_event ev = {
		    .addr = fc->addr,
		    .tid = fc->tid,
		    .write = fc->write,
		    .wp_zero = fc->wp_zero != MM_WP_NONE,
		    .t_read_ns = fc->t_read,
		    .latency_ns = lat,
		    .rec = &fc->res.rec,
		    .real_pmd = fc->real_pmd,
		    .worker = fc->w,
		};

		uffd_trace_fault(fc->w, &ev, fc->cand, fc->decision,
				 fc->decision == MM_FAULT_HUGE && fc->res.outcome != MM_FAULT_HUGE);
		if (lv->fault_hook)
			lv->fault_hook(lv->fault_hook_arg, &ev);
	}
}

/* ---- zero pages (--zero-page) -----------------------------------------------------------------
 *
 * Managed ranges are registered MISSING | WP. A read first touch that mm answers with a zero page
 * takes no frame: MM_FAULT_ZERO (mm/memory.c do_anonymous_page's read path, every era) maps one
 * page, MM_FAULT_HUGE_ZERO (6.12 mm/huge_memory.c do_huge_pmd_anonymous_page with use_zero_page
 * and mm_get_huge_zero_folio) makes the extent ZERO and maps the page touched; the huge zero PMD
 * itself cannot be mapped here (no huge UFFDIO_ZEROPAGE), so each other page of the extent is
 * mapped at its first read without asking mm, as the kernel takes no fault there (zero_reads).
 * The host gets a page of zeros by UFFDIO_COPY(MODE_WP): mapped and protected in one ioctl, so
 * no write can slip in between. The first write to it is a write-protect message (6.12
 * mm/memory.c do_wp_page checks userfaultfd_pte_wp before it copies), the kernel's wp fault on
 * the zero page: mm is asked with wp_zero (MM_WP_ZERO: do_wp_page -> wp_page_copy, a 4 KiB
 * frame; MM_WP_HUGE_ZERO: 6.12 do_huge_pmd_wp_page on is_huge_zero_pmd goes to fallback,
 * __split_huge_pmd maps the other pages with the 4 KiB zero page (as_zero_split), and the write
 * takes a 4 KiB frame; 6.13+ allocates a THP there instead, do_huge_zero_wp_pmd, which no
 * profile models), and the protection is lifted (UFFDIO_WRITEPROTECT mode 0, which wakes the
 * writer; the page already holds zeros, so the host copies nothing). A zero page the host has
 * not mapped (after a split, a remap) takes its write as a MISSING message and gets a copy.
 * A fault on a ZERO extent owns the extent (FILLING) while it maps a page or splits it. */

/* The host maps a write-protected page of zeros at fc->addr (busy read lock held): 0, -EEXIST
 * (something is there already) or -errno. It wakes nobody: the caller sets the page's state,
 * then wakes (a writer woken before would meet the page still owned, and be dropped). */
static int map_zero_wp(struct fault_ctx *fc)
{
	return uffd_io_copy_wp(fc->lv->uffd, fc->addr, fc->lv->zero_page);
}

/* A ZERO extent's fault is over without a change of its state: back to ZERO, unless the program
 * freed or unmapped part of it meanwhile (DISTURBED): then, its released pages being EMPTY or
 * GONE, it is a candidate again if nothing of it is left, else split (busy read lock held). */
static void zero_extent_done(struct fault_ctx *fc)
{
	struct uffd_region *r = fc->r;

	if (!(as_xstate(&r->as, fc->e) & AS_X_DISTURBED)) {
		as_xstate_set(&r->as, fc->e, AS_X_ZERO);
	} else {
		uint32_t p0 = ext_first_page(fc), i;

		for (i = 0; i < MM_HPAGE_NR && as_pstate(&r->as, p0 + i) == AS_P_EMPTY; i++)
			;
		if (i == MM_HPAGE_NR)
			as_recompute_extents(&r->as, fc->e, fc->e);
		else
			as_zero_split(&r->as, fc->e);
	}
	wake_extent(fc);
}

/* The end of a zero-page step, the busy lock released: an error other than the mapping's or
 * the process's going counts and fails the region. */
static void zero_settle(struct fault_ctx *fc, int rc)
{
	if (rc < 0 && rc != -ENOENT && rc != -ESRCH) {
		UFFD_COUNT(fc->lv, uffd_errors);
		uffd_region_fail(fc->lv, fc->r, rc);
	}
}

/* Map a read first touch mm answered with a zero page (busy read lock taken here). */
static void materialise_zero(struct fault_ctx *fc, bool in_extent)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	bool huge = fc->res.outcome == MM_FAULT_HUGE_ZERO;
	uint8_t ps;
	int rc;

	fc->res.pfn = MM_NO_PFN;
	pthread_rwlock_rdlock(&r->busy);
	ps = as_pstate(&r->as, fc->p);
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed ||
	    (in_extent ? (as_xstate(&r->as, fc->e) & AS_X_DISTURBED) : (ps & AS_P_FREED))) {
		base_abort(fc, in_extent, ps);
		pthread_rwlock_unlock(&r->busy);
		return;
	}
	rc = map_zero_wp(fc);
	if (rc == 0) {
		if (huge)
			as_fault_huge_zero(&r->as, fc->e, fc->p);
		else
			as_fault_zero(&r->as, fc->p, in_extent);
		if (huge)
			UFFD_COUNT(lv, huge_zero_faults);
		else
			UFFD_COUNT(lv, zero_faults);
		/* the state first (map_zero_wp), then the record */
		in_extent ? wake_extent_later(fc) : wake_page_later(fc);
	} else if (rc == -EEXIST) {
		/* mapped behind our back, with what we cannot know: kept, outside the pool */
		UFFD_COUNT(lv, eexist);
		as_fault_base(&r->as, fc->p, MM_NO_PFN, in_extent);
		in_extent ? wake_extent_later(fc) : wake_page_later(fc);
		rc = 0;
	} else {
		as_pstate_set(&r->as, fc->p, AS_P_EMPTY);
		if (in_extent)
			as_recompute_extents(&r->as, fc->e, fc->e);
		in_extent ? wake_extent(fc) : wake_page(fc);
	}
	pthread_rwlock_unlock(&r->busy);
	zero_settle(fc, rc);
}

/* A read of a page that maps the zero page in the kernel (a ZERO page, or any page of a ZERO
 * extent) reached us because the host had not mapped it yet: map it, no fault for mm. The
 * caller owns the page (zero_extent: the extent); busy read lock held. */
static int zero_read_locked(struct fault_ctx *fc)
{
	int rc = map_zero_wp(fc);

	if (rc == 0)
		UFFD_COUNT(fc->lv, zero_reads);
	if (rc == 0 || rc == -EEXIST) { /* -EEXIST: a duplicate message, the page is there */
		as_zero_read(&fc->r->as, fc->p);
		return 0;
	}
	return rc;
}

/* The first write to a zero page: mm decided (fc->res); give the page its frame and make it
 * writable. zero_extent: the page was in a ZERO extent (the extent is owned), else the page is
 * owned. Busy read lock taken here. */
static void materialise_wp(struct fault_ctx *fc, bool zero_extent)
{
	struct uffd_live *lv = fc->lv;
	struct uffd_region *r = fc->r;
	uint64_t mode;
	uint8_t ps;
	int rc;

	if (fc->res.outcome == MM_FAULT_NOMEM) {
		fc->res.pfn = MM_NO_PFN;
		UFFD_COUNT(lv, nomem_faults);
	}
	pthread_rwlock_rdlock(&r->busy);
	ps = as_pstate(&r->as, fc->p);
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed ||
	    (zero_extent ? (as_xstate(&r->as, fc->e) & AS_X_DISTURBED) : (ps & AS_P_FREED))) {
		free_frame(lv, fc->res.pfn, 0, fc->w);
		if (zero_extent) {
			zero_extent_done(fc);
		} else {
			as_pstate_set(&r->as, fc->p, (ps & AS_P_UNMAPPED) ? AS_P_GONE : AS_P_EMPTY);
			wake_page(fc);
		}
		pthread_rwlock_unlock(&r->busy);
		return;
	}
	/* a WP message: the protected page is there (nothing unmaps an owned page but the
	 * program's release, checked above); else it may be there (a read raced) or not */
	/* a page's writer is woken by the ioctl, counted just before; a ZERO extent's waiters
	 * once the fault is counted (record) */
	if (!zero_extent)
		count_early(fc);
	mode = zero_extent ? UFFDIO_WRITEPROTECT_MODE_DONTWAKE : 0;
	rc = fc->wp ? uffd_io_unprotect_mode(lv->uffd, fc->addr, UFFD_PAGE_SIZE, mode)
		    : uffd_io_copy(lv->uffd, fc->addr, lv->zero_page, UFFD_PAGE_SIZE, !zero_extent,
				   NULL);
	if (rc == -EEXIST)
		rc = uffd_io_unprotect_mode(lv->uffd, fc->addr, UFFD_PAGE_SIZE, mode);
	if (rc == 0) {
		as_fault_base(&r->as, fc->p, fc->res.pfn, false);
		if (!fc->own)
			UFFD_COUNT(lv, zero_wp_faults);
		if (zero_extent) {
			as_zero_split(&r->as, fc->e);
			wake_extent_later(fc);
		}
	} else {
		free_frame(lv, fc->res.pfn, 0, fc->w);
		fc->res.pfn = MM_NO_PFN;
		as_pstate_set(&r->as, fc->p, zero_extent ? AS_P_EMPTY : AS_P_ZERO);
		zero_extent ? zero_extent_done(fc) : wake_page(fc);
	}
	pthread_rwlock_unlock(&r->busy);
	zero_settle(fc, rc);
}

/* A message on a ZERO page of a SMALL extent (this handler owns the page: FILLING). */
static void zero_page_fault(struct fault_ctx *fc)
{
	struct uffd_region *r = fc->r;
	int rc;

	if (fc->write) {
		fc->wp_zero = MM_WP_ZERO;
		decide(fc, false);
		materialise_wp(fc, false);
		record(fc);
		return;
	}
	fc->res.pfn = MM_NO_PFN;
	pthread_rwlock_rdlock(&r->busy);
	if (as_pstate(&r->as, fc->p) & AS_P_FREED) {
		base_abort(fc, false, as_pstate(&r->as, fc->p));
		rc = 0;
	} else {
		rc = zero_read_locked(fc);
		if (rc < 0)
			as_pstate_set(&r->as, fc->p, AS_P_ZERO);
		wake_page(fc);
	}
	pthread_rwlock_unlock(&r->busy);
	zero_settle(fc, rc);
}

/* A message on a page of a ZERO extent (this handler owns the extent: FILLING). */
static void zero_extent_fault(struct fault_ctx *fc)
{
	struct uffd_region *r = fc->r;
	int rc = 0;

	if (fc->write) {
		fc->wp_zero = MM_WP_HUGE_ZERO;
		decide(fc, false);
		materialise_wp(fc, true);
		record(fc);
		return;
	}
	pthread_rwlock_rdlock(&r->busy);
	if (!(as_xstate(&r->as, fc->e) & AS_X_DISTURBED))
		rc = zero_read_locked(fc);
	zero_extent_done(fc);
	pthread_rwlock_unlock(&r->busy);
	zero_settle(fc, rc);
}

static void fault_extent(struct fault_ctx *fc)
{
	decide(fc, true);
	if (fc->res.outcome == MM_FAULT_HUGE)
		materialise_huge(fc);
	else if (fc->res.outcome == MM_FAULT_ZERO || fc->res.outcome == MM_FAULT_HUGE_ZERO)
		materialise_zero(fc, true);
	else if (fc->res.outcome == MM_FAULT_MTHP)
		materialise_mthp(fc, true);
	else
		materialise_base(fc, true);
	record(fc);
}

static void fault_page(struct fault_ctx *fc)
{
	decide(fc, false);
	if (fc->res.outcome == MM_FAULT_MTHP)
		materialise_mthp(fc, false);
	else if (fc->res.outcome == MM_FAULT_ZERO)
		materialise_zero(fc, false);
	else
		materialise_base(fc, false);
	record(fc);
}

static void dispatch_page(struct fault_ctx *fc)
{
	struct uffd_host_stats *h = &fc->lv->stats->host;

	for (;;) {
		uint8_t ps = as_pstate(&fc->r->as, fc->p);

		switch (AS_P_STATE(ps)) {
		case AS_P_EMPTY:
			if (as_pstate_cas(&fc->r->as, fc->p, ps, AS_P_FILLING)) {
				fault_page(fc);
				return;
			}
			continue;
		case AS_P_FILLING:
			uffd_stat_add(&h->dup_messages, 1);
			return;
		case AS_P_MIGRATING:
			if (fc->wp && uffd_collapse_wp_write(fc->lv, fc->addr))
				return; /* a collapse copying the range: the write goes on */
			uffd_stat_add(&h->migrating_waits, 1);
			return;
		case AS_P_ZERO:
			if (as_pstate_cas(&fc->r->as, fc->p, ps, AS_P_FILLING)) {
				zero_page_fault(fc);
				return;
			}
			continue;
		default: /* PRESENT: a duplicate; GONE: a stale message */
			uffd_stat_add(&h->dup_messages, 1);
			/* a protection left behind: lift it (wakes). Not on a huge extent: a
			 * write-protect message of a collapse's copy that came round only after
			 * the THP went in (dispatch saw the extent before the commit) finds
			 * nothing protected there, and a 4 KiB UFFDIO_WRITEPROTECT would split
			 * the PMD (6.18 mm/mprotect.c change_pmd_range) */
			if (fc->wp && AS_X_STATE(as_xstate(&fc->r->as, fc->e)) != AS_X_HUGE)
				uffd_io_unprotect(fc->lv->uffd, fc->addr, UFFD_PAGE_SIZE);
			else
				wake_page(fc);
			return;
		}
	}
}

static void dispatch(struct fault_ctx *fc)
{
	struct uffd_host_stats *h = &fc->lv->stats->host;

	for (;;) {
		uint8_t xs = as_xstate(&fc->r->as, fc->e);

		switch (AS_X_STATE(xs)) {
		case AS_X_EMPTY:
			if (as_xstate_cas(&fc->r->as, fc->e, xs, AS_X_FILLING)) {
				fault_extent(fc);
				return;
			}
			continue;
		case AS_X_FILLING:
			uffd_stat_add(&h->dup_messages, 1);
			return;
		case AS_X_HUGE:
			uffd_stat_add(&h->dup_messages, 1);
			wake_page(fc);
			return;
		case AS_X_ZERO:
			if (as_xstate_cas(&fc->r->as, fc->e, xs, AS_X_FILLING)) {
				zero_extent_fault(fc);
				return;
			}
			continue;
		default:
			dispatch_page(fc);
			return;
		}
	}
}

/* A page of the emulator's scratch area. Nothing of ours faults there (a migration or a collapse
 * moves pages in and copies them out; a copy checks the page is there first), so this is the
 * kernel touching it on the program's behalf: mlockall(MCL_CURRENT) and mlock populate every page
 * of the mappings they lock (mm/gup.c: __mm_populate). The zero page lets the populate go on at
 * once (it waited for an answer, and a wake-up alone made it fault again: millions of messages);
 * whoever uses the page next finds it taken (EEXIST) and empties the scratch (sys_zap). */
static bool own_page(struct fault_ctx *fc)
{
	struct uffd_live *lv = fc->lv;
	uintptr_t lo = (uintptr_t)lv->scratch_area;

	if (!lo || fc->addr - lo >= lv->scratch_len)
		return false;
	UFFD_COUNT(lv, own_populated);
	if (uffd_io_zeropage(lv->uffd, fc->addr, UFFD_PAGE_SIZE) < 0)
		wake_page(fc); /* mapped meanwhile */
	return true;
}

/* No region claims the page. Usually a race with an unmap or a region being moved (let the
 * kernel re-check); a page that keeps coming back is registered memory we lost track of, and is
 * given back to the kernel rather than left faulting forever. */
static void orphan(struct fault_ctx *fc)
{
	struct uffd_live *lv = fc->lv;
	uintptr_t prev = __atomic_exchange_n(&lv->unknown_addr, fc->addr, __ATOMIC_RELAXED);
	uint32_t hits = 0;

	if (prev == fc->addr)
		hits = __atomic_add_fetch(&lv->unknown_hits, 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&lv->unknown_hits, 0, __ATOMIC_RELAXED);
	UFFD_COUNT(lv, dup_messages);
	if (hits >= 10000) {
		uffd_io_unregister(lv->uffd, fc->addr, UFFD_PAGE_SIZE);
		UFFD_COUNT(lv, orphan_pages);
	}
	wake_page(fc);
}

/* Whose fault is this: one of the emulator's own threads' (at any time: the background thread's
 * pthread_create allocating a thread's DTV, the watchdog's libunwind, the dirtier's buffers, in
 * the program's allocator's managed memory), the exit hook's thread's once it runs, or the
 * program's? The program, natively, would have none of the first two. */
static uint8_t own_fault(struct uffd_live *lv, int tid)
{
	if (tid <= 0) /* no thread id (a kernel without UFFD_FEATURE_THREAD_ID): the program's */
		return OWN_NONE;
	if (uffd_own_thread_is(tid))
		return OWN_THREAD;
	return tid == __atomic_load_n(&lv->exit_tid, __ATOMIC_ACQUIRE) ? OWN_EXIT : OWN_NONE;
}

void uffd_handle_fault(struct uffd_worker *w, uintptr_t addr, bool write, bool wp, int tid,
		       uint64_t t_read)
{
	struct uffd_live *lv = w->lv;
	struct fault_ctx fc = {
	    .w = w,
	    .lv = lv,
	    .addr = addr & ~(UFFD_PAGE_SIZE - 1),
	    .write = write || wp,
	    .wp = wp,
	    .tid = tid,
	    .t_read = t_read,
	    .real_pmd = -1,
	};

	if (uffd_probe_serve(w, fc.addr, t_read))
		return; /* the start-up probe's page: a bare fill, nothing to emulate */
	UFFD_COUNT(lv, messages);
	fc.r = uffd_region_get(&lv->table, fc.addr);
	/* a hole in a region's span that now holds shared memory (MAP_FIXED into a reservation) */
	if (fc.r && as_pstate(&fc.r->as, as_page_of(&fc.r->as, fc.addr)) == AS_P_GONE &&
	    uffd_shmem_fault(w, fc.addr, t_read)) {
		uffd_region_put(&lv->table, fc.r);
		return;
	}
	if (!fc.r) {
		if (!uffd_shmem_fault(w, fc.addr, t_read) && !own_page(&fc))
			orphan(&fc);
		return;
	}
	fc.p = as_page_of(&fc.r->as, fc.addr);
	fc.e = as_ext_of(&fc.r->as, fc.addr);
	fc.own = own_fault(lv, tid);
	w->fault_addr = fc.addr;
	w->fault_tid = tid;
	__atomic_store_n(&w->fault_t0, t_read, __ATOMIC_RELAXED); /* the background tick reads it */
	uffd_stallcap_fault_begin(w, fc.addr, tid, t_read);
	w->clear_ahead_ns = 0;
	dispatch(&fc);
	uffd_stallcap_fault_end(w, NULL, 0); /* a duplicate or a dropped message: no event */
	w->fault_addr = 0;
	uffd_region_put(&lv->table, fc.r);
}
