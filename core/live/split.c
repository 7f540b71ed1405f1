/* The THP shrinker's underused split, live: the split_underused hook (6.12 mm/huge_memory.c:
 * deferred_split_scan -> thp_underused -> split_folio, whose remap maps the shared zero page
 * where a subpage was zero-filled: try_to_map_unused_to_zeropage).
 *
 * mm's shrinker (run by reclaim: a handler's direct reclaim, the background thread's kswapd,
 * or the host's) found a fully mapped THP of ours on the split queue and calls the hook with its
 * lock released. Here the owner judges it: the 512 subpages are read (process_vm_readv on
 * ourselves, so a range the program made unreadable with mprotect is not zero, not a SIGSEGV)
 * and, if mm_thp_underused says so, the THP is split for real:
 *   - the extent is claimed (COLLAPSING: faults in it look at the page states, compaction and a
 *     collapse back off) and every zero-filled candidate becomes MIGRATING;
 *   - each candidate is taken out of the program's mapping by UFFDIO_MOVE to this worker's
 *     scratch page (the host splits its PMD and its folio), DONTWAKE, exactly as a migration
 *     unmaps a page: a thread touching it now blocks in a userfault until we are done;
 *   - the page is checked again where it now is: a program thread may have written it after the
 *     first read, and that data must not be lost (the kernel checks the page while it is
 *     unmapped behind a migration entry, for the same reason). Still zero: it stays out (the
 *     scratch batch is dropped later: that is the real MADV_DONTNEED). Written: it is copied
 *     back (UFFDIO_COPY wakes its waiters) and stays a 4 KiB page of the THP's frames;
 *   - core/addrspace splits the emulated THP (mm_anon_split_folio) and frees the zero subpages'
 * frames (as_split_underused), which become EMPTY: the next touch of one is a first touch, a read
 *     gets the zero page (UFFDIO_ZEROPAGE), as after the kernel's zero-page remap;
 *   - the extent's waiters are woken.
 * The region's busy lock is taken for writing with trylock only: the hook may run in a handler
 * of this process in the middle of its own fault's direct reclaim, or inside a call that holds
 * the lock already (a MADV_COLLAPSE allocating), so a busy region makes the THP busy (-EAGAIN:
 * it stays queued), as the kernel's split_folio fails on a folio it cannot lock.
 *
 * A THP of another process of the machine is split by that process: the hook asks its agent
 * (MACHINE_REQ_SPLIT, env.c) and the agent runs uffd_split_underused (machine.c).
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "obs/usdt.h"
#include "util/sys.h"

#define MOVE_TRIES 3 /* a move the host answers -EAGAIN (a racing PMD split) is retried */

static bool page_is_zero(const void *p)
{
	const uint64_t *q = p;

	for (size_t i = 0; i < UFFD_PAGE_SIZE / sizeof(*q); i++)
		if (q[i])
			return false;
	return true;
}

/* Is the page at addr zero-filled? Read through process_vm_readv: a page the program made
 * unreadable (mprotect is not interposed) reads as "not zero" instead of raising a signal. The
 * extent is HUGE, so every page is mapped and no read can fault into our own handlers. */
static bool program_page_is_zero(uintptr_t addr)
{
	uint64_t buf[UFFD_PAGE_SIZE / sizeof(uint64_t)];
	struct iovec local = {buf, UFFD_PAGE_SIZE}, remote = {(void *)addr, UFFD_PAGE_SIZE};
	long n =
	    sys_call6(SYS_process_vm_readv, sys_getpid(), (long)&local, 1, (long)&remote, 1, 0);

	return n == (long)UFFD_PAGE_SIZE && page_is_zero(buf);
}

/* Take page p (MIGRATING, believed zero-filled) out of the program's mapping. Returns true if
 * it is out and zero-filled (it stays out, MIGRATING), false if it is back in place, PRESENT
 * (the host refused the move, or the program wrote it meanwhile). */
static bool take_zero_page(struct uffd_worker *w, struct uffd_region *r, uint32_t p)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = as_page_addr(&r->as, p);
	uint8_t *s = uffd_scratch_page(w);
	int rc = -EAGAIN;

	for (int i = 0; i < MOVE_TRIES && rc == -EAGAIN; i++) {
		rc = uffd_io_move(lv->uffd, (uintptr_t)s, addr, UFFD_PAGE_SIZE,
				  UFFDIO_MOVE_MODE_DONTWAKE, NULL);
		if (rc < 0 && uffd_moved_anyway(lv, (uintptr_t)s, addr))
			rc = 0;
	}
	if (rc < 0) { /* still mapped (pinned, shared with a fork child...): keep it */
		if (rc == -EEXIST)
			w->scratch_next = UFFD_SCRATCH_PAGES; /* drop the batch */
		else if (rc != -EBUSY && rc != -EAGAIN && rc != -EINVAL)
			UFFD_COUNT(lv, uffd_errors);
		as_pstate_set(&r->as, p, AS_P_PRESENT);
		uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
		return false;
	}
	if (page_is_zero(s))
		return true;
	/* written since it was read: its data goes back where the program left it */
	rc = uffd_io_copy(lv->uffd, addr, s, UFFD_PAGE_SIZE, true, NULL);
	if (rc < 0 && uffd_io_move(lv->uffd, addr, (uintptr_t)s, UFFD_PAGE_SIZE, 0, NULL) < 0 &&
	    !uffd_moved_anyway(lv, addr, (uintptr_t)s))
		UFFD_COUNT(lv, uffd_errors);
	as_pstate_set(&r->as, p, AS_P_PRESENT);
	uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
	return false;
}

/* mm would not split (the THP changed hands meanwhile): the pages taken out go back, zeroed. */
static void put_back(struct uffd_live *lv, struct uffd_region *r, uint32_t p0, const bool *zero)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t addr = as_page_addr(&r->as, p0 + i);

		if (!zero[i])
			continue;
		if (uffd_io_copy(lv->uffd, addr, lv->zero_page, UFFD_PAGE_SIZE, false, NULL) < 0)
			UFFD_COUNT(lv, uffd_errors);
		as_pstate_set(&r->as, p0 + i, AS_P_PRESENT);
	}
}

/* The busy lock is held for writing: judge the THP at pages [p0, p0 + 512) and split it. */
static int split_locked(struct uffd_worker *w, struct uffd_region *r, uint32_t p0, uint32_t head)
{
	struct uffd_live *lv = w->lv;
	uintptr_t ext = as_page_addr(&r->as, p0);
	struct as_mm_ctx ctx = {lv->mm, w};
	const struct as_env env = as_mm_env(&ctx);
	struct as_counts c = {0};
	bool zero[MM_HPAGE_NR];
	unsigned nz = 0;
	uint32_t e;
	uint8_t xs;
	int freed;

	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed)
		return -ENOENT;
	if ((ext & (UFFD_HPAGE_SIZE - 1)) || ext < r->lo || ext + UFFD_HPAGE_SIZE > r->hi)
		return -ENOENT;
	e = as_ext_of(&r->as, ext);
	xs = as_xstate(&r->as, e);
	/* mm queues a THP when it allocates it for a fault: until the fault has mapped it (or
	 * while a collapse owns the extent) it is busy, not gone */
	if (AS_X_STATE(xs) == AS_X_FILLING || AS_X_STATE(xs) == AS_X_COLLAPSING)
		return -EAGAIN;
	if (AS_X_STATE(xs) != AS_X_HUGE || as_pfn(&r->as, p0) != head)
		return -ENOENT;

	/* thp_underused: count the zero-filled subpages, stopping once it cannot be */
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (!mm_thp_underused(lv->mm, nz + (MM_HPAGE_NR - i)))
			return 0;
		zero[i] = AS_P_STATE(as_pstate(&r->as, p0 + i)) == AS_P_PRESENT &&
			  program_page_is_zero(ext + (uintptr_t)i * UFFD_PAGE_SIZE);
		nz += zero[i];
	}
	if (!mm_thp_underused(lv->mm, nz))
		return 0;
	if (!guard_migrate_begin()) { /* a fork is copying the address space: not now */
		UFFD_COUNT(lv, fork_deferred);
		return -EAGAIN;
	}
	if (!as_xstate_cas(&r->as, e, xs, AS_X_COLLAPSING)) {
		guard_migrate_end();
		return -EAGAIN;
	}
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (zero[i] && !as_pstate_cas(&r->as, p0 + i, AS_P_PRESENT, AS_P_MIGRATING))
			zero[i] = false;
	nz = 0;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (zero[i]) {
			zero[i] = take_zero_page(w, r, p0 + i);
			nz += zero[i];
		}
	as_xstate_set(&r->as, e, xs); /* HUGE again for as_split_underused, which makes it SMALL */
	if (!nz) { /* the host let no page go (shared with a fork child...): nothing to gain */
		uffd_io_wake(lv->uffd, ext, UFFD_HPAGE_SIZE);
		guard_migrate_end();
		return 0;
	}
	freed = as_split_underused(&env, &r->as, e, zero, &c);
	if (freed < 0) {
		put_back(lv, r, p0, zero);
		uffd_io_wake(lv->uffd, ext, UFFD_HPAGE_SIZE);
		guard_migrate_end();
		return freed == -EINVAL ? -ENOENT : -EAGAIN;
	}
	/* whoever touched a page taken out faults again: a first touch now */
	uffd_io_wake(lv->uffd, ext, UFFD_HPAGE_SIZE);
	guard_migrate_end();
	UFFD_COUNT(lv, underused_splits);
	uffd_stat_add(&lv->stats->host.underused_pages_freed, (uint64_t)freed);
	return 1;
}

int uffd_split_underused(struct uffd_worker *w, uint64_t extent_owner, uint32_t head)
{
	struct uffd_live *lv;
	struct uffd_region *r;
	int rc;

	if (!w)
		return -EAGAIN;
	lv = w->lv;
	r = uffd_region_by_cookie(&lv->table, extent_owner);
	if (!r)
		return -ENOENT;
	if (pthread_rwlock_trywrlock(&r->busy) != 0) { /* busy, maybe by this very thread */
		uffd_region_put(&lv->table, r);
		return -EAGAIN;
	}
	rc = split_locked(w, r, (uint32_t)extent_owner, head);
	THPEMU_PROBE(split, head, extent_owner, rc);
	pthread_rwlock_unlock(&r->busy);
	uffd_region_put(&lv->table, r);
	return rc;
}
