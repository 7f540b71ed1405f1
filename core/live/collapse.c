/* Collapse for real: khugepaged's and MADV_COLLAPSE's address-space side (mm/khugepaged.c:
 * hpage_collapse_scan_pmd's walk, collapse_huge_page's copy and remap), the khugepaged thread
 * of a process with a pool of its own, and MADV_COLLAPSE from the program's madvise.
 *
 * The walker. next_range goes through the managed regions in address order and describes each
 * whole 2 MiB extent of a live span with as_collapse_scan (extent_owner is the cookie the fault
 * handler gives page 0 of the extent); core/mm decides, allocates the order-9 block and calls
 * collapse with the mm lock released. The shmem mappings' ranges come in the same address
 * order (shmem.c uffd_shmem_next_range: as khugepaged_scan_mm_slot walks every VMA, the
 * vm_file ones through hpage_collapse_scan_file); their collapse is core/mm's alone (the
 * object's page cache), collapse is never called for them: the host's pages stay.
 *
 * The collapse (the kernel holds mmap_lock for write from pmdp_collapse_flush to set_pmd_at):
 *   1. claim: the extent COLLAPSING, every page MIGRATING (as_collapse_claim), under the
 *      region's busy read lock (the program's munmap/madvise wait, as on mmap_lock), and no fork
 *      copies the address space meanwhile (guard_migrate_begin);
 *   1b. copy early (copy_early, with a staged THP and the range registered for write-protect):
 *      the range is write-protected (UFFDIO_WRITEPROTECT) and its present pages copied into the
 *      staged THP from the program's own mapping. Reads go on; each write faults once, and the
 *      handler marks the page written and lifts its protection (uffd_collapse_wp_write), so
 *      the program does not wait for the copy - the kernel's copy is inside its hold
 *      (__collapse_huge_page_copy under mmap_lock for write), and here it was most of it;
 *   2. unmap: one UFFDIO_MOVE (ALLOW_SRC_HOLES, DONTWAKE) takes every present 4 KiB page of the
 *      range out to this worker's registered 2 MiB scratch. From here the program's accesses
 *      to the range fault and wait: the handlers drop messages on MIGRATING pages. A page the
 *      move refuses because it is shared copy-on-write (a fork) is written once in place with an
 *      atomic add of 0 (the kernel's COW break gives the process a page of its own, data
 *      unchanged) and moved; one still refused (pinned) abandons the collapse;
 *   3. copy: a staged host THP (staging.c) gets the present pages' data, holes are zeroed
 *      (__collapse_huge_page_copy); after 1b only the pages written since (or not copied then)
 *      are copied, from the scratch;
 *   4. map: MADV_DONTNEED of the now empty range frees its PTE table (CONFIG_PT_RECLAIM,
 *      mm/memory.c zap_pte_range: a huge UFFDIO_MOVE needs pmd_none at the destination, else it
 *      splits the source THP: mm/userfaultfd.c move_pages), and UFFDIO_MOVE puts the THP there:
 *      one real PMD (set_pmd_at). If the host gives no THP (staging empty, --host-thp 0, the move
 *      refused or split) the range is mapped with 4 KiB pages (the data moved back, holes filled
 *      with zeroed pages) and host.collapse_host_small counts it; the emulated collapse happens
 *      all the same;
 *   5. wake: the range is mapped, its waiters go on; then commit: as_collapse_commit (the old
 *      frames go back, pages head + i, HUGE) and a second wake (for a message the handlers
 *      left to us meanwhile). mm maps the block (mm_collapse_done) when collapse returns.
 * The program waits from 2 to the first wake of 5 (host.collapse_copy_ns / _max_ns), a writer
 * during 1b one write-protect fault per page (host.collapse_wp_writes).
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "obs/usdt.h"
#include "util/clock.h"
#include "util/sys.h"

#define HPAGE UFFD_HPAGE_SIZE
#define PAGE  UFFD_PAGE_SIZE
/* in uffd_worker.cwp_addr: the collapse holds the range (copy_early's messages now wait) */
#define CWP_HOLD 1

/* ---- the walker ------------------------------------------------------------------------------ */

/* A fault finishing a page (FILLING until just after the program was woken) or a migration in
 * flight owns it for microseconds: the kernel's collapse would wait for them (its mmap_lock for
 * write waits for the faults in flight; the PTE lock for the rest). Wait a little for them. */
static void settle(struct uffd_region *r, uint32_t e, uint64_t owner, struct mm_collapse_scan *s)
{
	for (int i = 0; i < 100 && s->busy; i++) {
		struct timespec ts = {0, 50000};

		nanosleep(&ts, NULL);
		as_collapse_scan(&r->as, e, owner, s);
	}
}

static int private_next(struct uffd_live *lv, uint64_t *addr, struct mm_collapse_scan *scan)
{
	uintptr_t a = (uintptr_t)*addr;

	for (;;) {
		struct uffd_region *r;
		uintptr_t start, ea;
		bool ok;

		if (uffd_regions_overlapping(&lv->table, a, UINTPTR_MAX, &r, 1) == 0)
			return -ENOENT;
		start = a > r->lo ? a : r->lo;
		ea = (start + HPAGE - 1) & ~(HPAGE - 1);
		ok = ea >= start && ea + HPAGE <= r->hi && !r->failed &&
		     !__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE);
		if (ok) {
			uint32_t e = as_ext_of(&r->as, ea);
			uint64_t owner = uffd_cookie(r, as_page_of(&r->as, ea));

			as_collapse_scan(&r->as, e, owner, scan);
			settle(r, e, owner, scan);
			scan->thp_disable = (enum mm_thp_disable)__atomic_load_n(&lv->thp_disable,
										 __ATOMIC_RELAXED);
			*addr = ea;
		}
		a = r->hi;
		uffd_region_put(&lv->table, r);
		if (ok)
			return 0;
	}
}

/* The lower of the next private range and the next shmem range. */
static int next_range(void *arg, uint64_t *addr, struct mm_collapse_scan *scan)
{
	struct uffd_live *lv = arg;
	struct mm_collapse_scan ss;
	uint64_t pa = *addr, sa = *addr;
	int pr = private_next(lv, &pa, scan), sr = uffd_shmem_next_range(lv, &sa, &ss);

	if (sr == 0 && (pr != 0 || sa < pa)) {
		*scan = ss;
		*addr = sa;
		return 0;
	}
	if (pr == 0)
		*addr = pa;
	return pr;
}

/* ---- the collapse ---------------------------------------------------------------------------- */

static bool resident(uintptr_t a, unsigned char *vec)
{
	return sys_call3(SYS_mincore, a, HPAGE, vec) == 0;
}

/* The pages of [a, a + 2 MiB) that hold data: resident (mincore) or swapped out by the host.
 * mincore says 0 for a page the host swapped out, which is no hole: its data is in the swap
 * entry UFFDIO_MOVE carried along (6.12 mm/userfaultfd.c move_pages_pte -> move_swap_pte), and
 * the copy reads it back in (process_vm_readv faults it in like any access). The kernel's
 * collapse swaps such pages in first (6.12 mm/khugepaged.c __collapse_huge_page_swapin, up to
 * max_ptes_swap); the host's swap is outside the emulation, so here it is done without a limit
 * (host.collapse_swapped counts the collapses that met one). A swapped page taken for a hole
 * would be collapsed into zeros. */
static bool holding_data(struct uffd_live *lv, uintptr_t a, unsigned char *vec)
{
	if (!resident(a, vec))
		return false;
	for (unsigned i = 0; i < MM_HPAGE_NR; i++)
		if (!(vec[i] & 1)) {
			int n = uffd_range_swapped(lv->pagemap_fd, a, HPAGE, vec);

			if (n > 0)
				UFFD_COUNT(lv, collapse_swapped);
			else if (n < 0) /* unknown: mincore's answer, as before */
				UFFD_COUNT(lv, uffd_errors);
			break;
		}
	return true;
}

/* Move [src, src + 2 MiB) to dst, holes allowed, going on after partial progress. */
static int move_range(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, size_t *out)
{
	return uffd_io_move_all(fd, dst, src, len, mode | UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES, out);
}

static void mark_written(struct uffd_worker *w, uintptr_t addr)
{
	unsigned pg = (unsigned)((addr & (HPAGE - 1)) / PAGE);

	__atomic_fetch_or(&w->cwp_dirty[pg / 64], 1ULL << (pg % 64), __ATOMIC_SEQ_CST);
}

/* Step 2: every present page of the range at addr into the worker's scratch. */
static int move_out(struct uffd_worker *w, uintptr_t addr)
{
	struct uffd_live *lv = w->lv;
	uint8_t *cs = w->cscratch;
	uintptr_t cow_tried = 0;
	size_t off = 0;

	for (unsigned round = 0; round < 2 * MM_HPAGE_NR; round++) {
		uintptr_t at;
		size_t got = 0;
		int rc = move_range(lv->uffd, (uintptr_t)cs + off, addr + off, HPAGE - off,
				    UFFDIO_MOVE_MODE_DONTWAKE, &got);

		off += got;
		if (rc == 0)
			return 0;
		at = addr + off;
		if (uffd_moved_anyway(lv, (uintptr_t)cs + off, at)) { /* migrate.c says why */
			off += PAGE;
			if (off >= HPAGE)
				return 0;
			continue;
		}
		if (rc == -EBUSY && cow_tried != at && uffd_page_resident(at) == 1) {
			/* shared copy-on-write with a fork: break the sharing without changing a
			 * byte (the page is present and ours to hold: no fault, no wait) */
			cow_tried = at;
			if (__atomic_load_n(&w->cwp_addr, __ATOMIC_RELAXED)) {
				/* write-protected by copy_early, whose messages the handlers
				 * now leave to us: lift it here (marked first, as they do) */
				mark_written(w, at);
				uffd_io_unprotect(lv->uffd, at, PAGE);
			}
			__atomic_fetch_add((volatile uint8_t *)at, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		return rc;
	}
	return -EAGAIN;
}

/* Map at addr every page src still holds and addr lacks (moved back, else copied), and zeroed
 * pages over the remaining holes when zero_holes. src is the scratch (registered: its holes are
 * never read) or a staging chunk. */
static void put_back(struct uffd_live *lv, uintptr_t addr, uintptr_t src, bool zero_holes)
{
	unsigned char dv[MM_HPAGE_NR], sv[MM_HPAGE_NR];
	size_t moved;

	move_range(lv->uffd, addr, src, HPAGE, UFFDIO_MOVE_MODE_DONTWAKE, &moved);
	if (!resident(addr, dv))
		return;
	if (!resident(src, sv))
		memset(sv, 0, sizeof(sv));
	for (unsigned i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t d = addr + (uintptr_t)i * PAGE;
		int rc;

		if (dv[i] & 1)
			continue;
		if (sv[i] & 1)
			rc = uffd_io_copy(lv->uffd, d, (void *)(src + (uintptr_t)i * PAGE), PAGE,
					  false, NULL);
		else if (zero_holes)
			rc = uffd_io_copy(lv->uffd, d, lv->zero_page, PAGE, false, NULL);
		else
			continue;
		if (rc < 0 && rc != -EEXIST)
			UFFD_COUNT(lv, uffd_errors);
	}
}

/* Step 3: the present pages of the scratch cs (vec: mincore's) into the staged THP chunk, zeroes
 * over the holes. The pages are read by the kernel (process_vm_readv on ourselves: through its
 * direct map), not through the scratch's mapping: the PTEs UFFDIO_MOVE installs there are not
 * young, and on a virtual machine whose hypervisor traps the accessed-bit update the first read
 * of each costs an exit - measured on these VMs: 2 MiB of moved pages read in 9-21 ms the first
 * time, 5 us the second; through process_vm_readv 0.4-0.5 ms. Each run of present pages is one
 * iovec pair; anything the call does not copy is copied by hand. */
static void copy_present(uint8_t *chunk, const uint8_t *cs, const unsigned char *vec,
			 bool zero_holes)
{
	struct iovec local[MM_HPAGE_NR / 2 + 1], remote[MM_HPAGE_NR / 2 + 1];
	unsigned n = 0;
	size_t want = 0;
	long got;

	for (unsigned i = 0; i < MM_HPAGE_NR;) {
		unsigned j = i;

		while (j < MM_HPAGE_NR && (vec[j] & 1) == (vec[i] & 1))
			j++;
		if (vec[i] & 1) {
			local[n] = (struct iovec){chunk + (size_t)i * PAGE, (size_t)(j - i) * PAGE};
			remote[n] =
			    (struct iovec){(void *)(cs + (size_t)i * PAGE), local[n].iov_len};
			want += local[n].iov_len;
			n++;
		} else if (zero_holes) {
			memset(chunk + (size_t)i * PAGE, 0, (size_t)(j - i) * PAGE);
		}
		i = j;
	}
	if (n == 0)
		return;
	got = sys_call6(SYS_process_vm_readv, sys_getpid(), (long)local, n, (long)remote, n, 0);
	if (got == (long)want)
		return;
	for (unsigned k = 0; k < n; k++) /* refused (a seccomp filter, ...) or short */
		memcpy(local[k].iov_base, remote[k].iov_base, local[k].iov_len);
}

/* Step 3 before the hold (the copy while the range is only write-protected). The range's writes
 * now fault (uffd-wp, the range is registered MISSING | WP with zero pages): the handlers mark
 * each written page in w->cwp_dirty and make it writable again at once
 * (uffd_collapse_wp_write), so the program's writers wait one message each, not for the copy.
 * The present pages are copied into the chunk from the program's own range, holes zeroed;
 * copied says which pages were copied. After the move out, only the pages written meanwhile
 * (and any not copied) are copied again, from the scratch: a page can only be written after the
 * handler marked it, and the mark is read after the move out took it away. Once the hold begins
 * (CWP_HOLD) a write-protect message waits for the end as any other fault does: a writer woken
 * then would only fault again in the empty range, and a fault there between the PTE table's
 * free and the THP's move in can make a new table (a 4 KiB fallback of the host's fault). The
 * kernel's collapse copies under mmap_lock for write (collapse_huge_page ->
 * __collapse_huge_page_copy); here the copy is what the program would wait for, so it is taken out
 * of the hold, the protection being the only cost left to the writers. False (nothing done, nothing
 * protected): no write-protect registration (--zero-page 0) or the host refused. */
static bool copy_early(struct uffd_worker *w, uintptr_t addr, uint8_t *chunk, unsigned char *copied)
{
	struct uffd_live *lv = w->lv;

	if (!lv->zero_wp || w < UFFD_W_BG(lv) || w > UFFD_W_MADV(lv))
		return false;
	for (unsigned i = 0; i < MM_HPAGE_NR / 64; i++)
		__atomic_store_n(&w->cwp_dirty[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->cwp_addr, addr, __ATOMIC_SEQ_CST);
	if (uffd_io_protect(lv->uffd, addr, HPAGE) < 0) {
		uffd_io_unprotect(lv->uffd, addr, HPAGE); /* any part it did */
		__atomic_store_n(&w->cwp_addr, 0, __ATOMIC_RELEASE);
		return false;
	}
	/* nothing maps a hole meanwhile (MIGRATING: the handlers leave it) nor unmaps a page
	 * (the busy lock): mincore's answer holds, and no hole is read (it would wait for us) */
	if (!resident(addr, copied))
		memset(copied, 0, MM_HPAGE_NR);
	copy_present(chunk, (const uint8_t *)addr, copied, true);
	return true;
}

/* Done with the write-protect: no handler marks pages for w from now on. With undo (the
 * collapse abandoned) the pages still in the range are made writable again (waking whoever
 * waits there: they fault again on the pages still MIGRATING and wait for the final wake). */
static void copy_early_end(struct uffd_worker *w, uintptr_t addr, bool undo)
{
	if (undo)
		uffd_io_unprotect(w->lv->uffd, addr, HPAGE);
	__atomic_store_n(&w->cwp_addr, 0, __ATOMIC_RELEASE);
}

bool uffd_collapse_wp_write(struct uffd_live *lv, uintptr_t addr)
{
	uintptr_t base = addr & ~(uintptr_t)(HPAGE - 1);
	bool mine = false;

	/* counted in before the look (see wp_users_gone) */
	__atomic_fetch_add(&lv->cwp_users, 1, __ATOMIC_SEQ_CST);
	for (struct uffd_worker *w = UFFD_W_BG(lv); w <= UFFD_W_MADV(lv) && !mine; w++) {
		if (__atomic_load_n(&w->cwp_addr, __ATOMIC_SEQ_CST) != base)
			continue;
		/* the mark before the write can happen (the unprotect): see copy_early */
		mark_written(w, addr);
		uffd_io_unprotect(lv->uffd, addr & ~(uintptr_t)(PAGE - 1), PAGE);
		UFFD_COUNT(lv, collapse_wp_writes);
		mine = true;
	}
	__atomic_fetch_sub(&lv->cwp_users, 1, __ATOMIC_SEQ_CST);
	return mine;
}

/* The hold began (CWP_HOLD stored): wait for the handlers that may still have seen the copy's
 * address, so that no unprotect of one of its pages comes after the THP is moved in (on a
 * PMD-mapped range a 4 KiB UFFDIO_WRITEPROTECT splits the PMD: mm/mprotect.c
 * change_pmd_range). A handler counted in after this look sees CWP_HOLD (both are
 * sequentially consistent). */
static void wp_users_gone(struct uffd_live *lv)
{
	while (__atomic_load_n(&lv->cwp_users, __ATOMIC_SEQ_CST))
		sched_yield();
}

/* Steps 3 and 4 (copied: what copy_early copied, or NULL). */
static void map_collapsed(struct uffd_live *lv, struct uffd_worker *w, uintptr_t addr, uint8_t *cs,
			  int slot, const unsigned char *copied)
{
	unsigned char vec[MM_HPAGE_NR];
	uint8_t *chunk;
	size_t moved;
	int rc;

	if (!holding_data(lv, (uintptr_t)cs, vec))
		memset(vec, 1, sizeof(vec));
	if (slot < 0) { /* no host THP to give: the 4 KiB pages go back, holes zeroed */
		put_back(lv, addr, (uintptr_t)cs, true);
		return;
	}
	chunk = uffd_staging_addr(&lv->staging, slot);
	uffd_staging_written(&lv->staging, slot);
	if (copied) { /* again only what was written since, or not copied */
		for (unsigned i = 0; i < MM_HPAGE_NR; i++) {
			uint64_t d = __atomic_load_n(&w->cwp_dirty[i / 64], __ATOMIC_SEQ_CST);

			if ((copied[i] & 1) && !(d & (1ULL << (i % 64))))
				vec[i] = 0;
		}
		copy_present(chunk, cs, vec, false);
	} else {
		copy_present(chunk, cs, vec, true);
	}
	/* the range is empty: its PTE table goes, so that the move can install a PMD */
	sys_zap((void *)addr, HPAGE);
	rc = move_range(lv->uffd, addr, (uintptr_t)chunk, HPAGE, UFFDIO_MOVE_MODE_DONTWAKE, &moved);
	if (rc == 0 && moved == HPAGE) {
		uffd_staging_spent(&lv->staging, slot);
	} else {
		put_back(lv, addr, (uintptr_t)chunk, true);
		uffd_staging_release(&lv->staging, slot, false);
	}
}

static void count_wait(struct uffd_live *lv, uint64_t t0)
{
	uint64_t ns = clock_now_ns() - t0;

	uffd_stat_add(&lv->stats->host.collapse_copy_ns, ns);
	uffd_stat_max(&lv->stats->host.collapse_copy_max_ns, ns);
}

/* The zero pages of the claimed range (holes: AS_P_WASZERO) hold zeros in write-protected host
 * pages. They are unmapped rather than moved out with the others: a move would map them back
 * writable if the collapse is abandoned, and a hole is what the copy wants. */
static void unmap_zero_holes(struct uffd_region *r, uint32_t p0, uintptr_t addr)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR;) {
		uint32_t j = i;

		while (j < MM_HPAGE_NR && (as_pstate(&r->as, p0 + j) & AS_P_WASZERO))
			j++;
		if (j > i)
			sys_zap((void *)(addr + (uintptr_t)i * PAGE), (size_t)(j - i) * PAGE);
		i = j > i ? j : i + 1;
	}
}

static int collapse_locked(struct uffd_worker *w, struct uffd_region *r, uint32_t e, uintptr_t addr,
			   const struct mm_collapse_scan *scan, uint32_t head, int slot)
{
	struct uffd_live *lv = w->lv;
	struct as_mm_ctx ctx = {lv->mm, w};
	const struct as_env env = as_mm_env(&ctx);
	uint32_t p0 = as_page_of(&r->as, addr), holes = 0, shared = 0;
	struct as_counts c = {0};
	unsigned char copied[MM_HPAGE_NR];
	bool pmd, early = false;
	uint64_t t0;
	int rc;

	rc = -EAGAIN;
	for (int i = 0; i < 100 && rc == -EAGAIN; i++) { /* owners in flight: see settle() */
		struct timespec ts = {0, 50000};

		if (i)
			nanosleep(&ts, NULL);
		rc = as_collapse_claim(&r->as, e);
	}
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed || rc != 0) {
		if (rc == 0)
			as_collapse_cancel(&env, &r->as, e, &c);
		uffd_staging_release(&lv->staging, slot, true); /* untouched (none: no-op) */
		return -EAGAIN;
	}
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (as_pstate(&r->as, p0 + i) & AS_P_HOLE)
			holes++;
		else if (as_pfn(&r->as, p0 + i) == MM_NO_PFN)
			shared++;
	}
	/* __collapse_huge_page_isolate: more holes or foreign pages than the scan judged is a
	 * changed range (a zero page is a hole: none_or_zero) */
	if (holes > scan->none + scan->zero || shared > scan->shared || !guard_migrate_begin()) {
		if (holes <= scan->none + scan->zero && shared <= scan->shared)
			UFFD_COUNT(lv, fork_deferred);
		as_collapse_cancel(&env, &r->as, e, &c);
		uffd_io_wake(lv->uffd, addr, HPAGE);
		uffd_staging_release(&lv->staging, slot, true);
		return -EAGAIN;
	}
	unmap_zero_holes(r, p0, addr);
	if (slot >= 0) {
		early = copy_early(w, addr, uffd_staging_addr(&lv->staging, slot), copied);
		if (early) { /* the chunk holds data now: an abandon gives it back to be cleared */
			uffd_staging_written(&lv->staging, slot);
			uffd_test_gap(lv);
		}
	}
	t0 = clock_now_ns();
	if (early) /* the hold: a write-protect message now waits for the end, as any fault */
		__atomic_store_n(&w->cwp_addr, addr | CWP_HOLD, __ATOMIC_SEQ_CST);
	rc = move_out(w, addr);
	if (rc < 0) { /* pinned, or the host refused: everything back as it was */
		put_back(lv, addr, (uintptr_t)w->cscratch, false);
		if (early)
			copy_early_end(w, addr, true);
		guard_migrate_end();
		as_collapse_cancel(&env, &r->as, e, &c);
		uffd_io_wake(lv->uffd, addr, HPAGE);
		count_wait(lv, t0);
		sys_zap(w->cscratch, HPAGE);
		uffd_staging_release(&lv->staging, slot, true);
		return -EAGAIN;
	}
	if (early)
		wp_users_gone(lv);
	uffd_test_gap(lv);
	map_collapsed(lv, w, addr, w->cscratch, slot, early ? copied : NULL);
	/* the range is mapped (a PMD, else every page): the program's accesses go on now; the
	 * emulated state follows. A message read before the commit found the pages MIGRATING and
	 * was left to us: the second wake is for its writer (one that faulted after the first
	 * wake, on a page a failed move left out). */
	uffd_io_wake(lv->uffd, addr, HPAGE);
	count_wait(lv, t0);
	if (early)
		copy_early_end(w, addr, false);
	rc = as_collapse_commit(&env, &r->as, e, head, &c);
	guard_migrate_end();
	uffd_io_wake(lv->uffd, addr, HPAGE);
	pmd = uffd_range_is_pmd(lv->pagemap_fd, addr, HPAGE) > 0; /* busy lock: still ours */
	sys_zap(w->cscratch, HPAGE);				  /* the old 4 KiB pages */
	uffd_as_count(lv, &c);
	if (rc < 0)
		return -EAGAIN;
	UFFD_COUNT(lv, collapses);
	if (!pmd)
		UFFD_COUNT(lv, collapse_host_small);
	return 0;
}

static int collapse(void *arg, uint64_t addr, const struct mm_collapse_scan *scan, uint32_t head,
		    void *call)
{
	struct uffd_live *lv = arg;
	struct uffd_worker *w = call;
	struct uffd_region *r;
	uint32_t e;
	int rc = -EAGAIN;

	if (!w || !w->cscratch)
		return -EAGAIN;
	r = uffd_region_get(&lv->table, (uintptr_t)addr);
	if (!r)
		goto out;
	e = as_ext_of(&r->as, (uintptr_t)addr);
	if (as_ext_addr(&r->as, e) == addr &&
	    uffd_cookie(r, as_page_of(&r->as, (uintptr_t)addr)) == scan->extent_owner) {
		/* the host THP first, before the program waits (the kernel allocates before it
		 * takes mmap_lock for write); -errno: the range will be mapped small */
		int slot = uffd_staging_take(&lv->staging);

		pthread_rwlock_rdlock(&r->busy);
		rc = collapse_locked(w, r, e, (uintptr_t)addr, scan, head, slot);
		pthread_rwlock_unlock(&r->busy);
	}
	uffd_region_put(&lv->table, r);
out:
	THPEMU_PROBE(collapse, addr, rc);
	if (rc < 0)
		UFFD_COUNT(lv, collapse_failed);
	return rc;
}

/* ---- khugepaged ------------------------------------------------------------------------------ */

int uffd_khugepaged_visit(struct uffd_worker *w, uint64_t *addr, unsigned budget, bool *done)
{
	struct uffd_live *lv = w->lv;
	const struct mm_khugepaged_walker walker = {lv, next_range, collapse};

	if (lv->detached || __atomic_load_n(&lv->stopping, __ATOMIC_ACQUIRE))
		return -ENOENT;
	UFFD_COUNT(lv, khugepaged_visits);
	return mm_khugepaged_scan_mm(lv->mm, &walker, addr, budget, done, w);
}

void uffd_khugepaged_ping(void *arg)
{
	struct uffd_live *lv = arg;

	__atomic_fetch_add(&lv->khd_wake, 1, __ATOMIC_RELEASE);
	sys_futex_wake(&lv->khd_wake, 1);
}

/* khugepaged, a kernel thread of its own (it may stall for seconds in 3.x sync compaction):
 * mm_khugepaged runs the wake that is due and says how long to sleep. A registration does not
 * wake it (mm has no hook for that): with nothing registered it looks again every 100 ms. */
void *uffd_khugepaged_main(void *arg)
{
	struct uffd_worker *w = arg;
	struct uffd_live *lv = w->lv;

	w->tid = sys_gettid();
	uffd_tls_passthrough = 1;
	uffd_thread_started(&w->gt);
	while (!__atomic_load_n(&lv->khd_stop, __ATOMIC_ACQUIRE)) {
		uint64_t next;
		uint32_t v;
		struct timespec ts;

		guard_thread_sync(&w->gt);
		v = __atomic_load_n(&lv->khd_wake, __ATOMIC_ACQUIRE);
		next = mm_khugepaged(lv->mm, w);
		if (next > 100 * 1000000ULL)
			next = 100 * 1000000ULL;
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		if (!__atomic_load_n(&lv->khd_stop, __ATOMIC_ACQUIRE))
			sys_futex_wait(&lv->khd_wake, v, &ts);
	}
	uffd_thread_leave(&w->gt);
	return NULL;
}

/* ---- MADV_COLLAPSE ----------------------------------------------------------------------------
 */

/* 6.12 madvise_collapse: which results let the loop go on (SCAN_PAGE_COMPOUND: 6.1's shmem). */
static bool collapse_goes_on(enum mm_scan_result r)
{
	return r == MM_SCAN_SUCCEED || r == MM_SCAN_PMD_MAPPED || r == MM_SCAN_PMD_NULL ||
	       r == MM_SCAN_PAGE_LOCK || r == MM_SCAN_PAGE_COMPOUND;
}

struct madv_run {
	enum mm_scan_result last;
	uint64_t ranges, thps;
	bool stop;
};

/* madvise_collapse's loop over the aligned ranges of [x, y) (madv_lock held). */
static void madv_span(struct uffd_live *lv, uintptr_t x, uintptr_t y, struct madv_run *run)
{
	const struct mm_khugepaged_walker walker = {lv, next_range, collapse};
	uintptr_t a = (x + HPAGE - 1) & ~(HPAGE - 1), end = y & ~(HPAGE - 1);

	for (; !run->stop && a < end; a += HPAGE) {
		enum mm_scan_result r = mm_madv_collapse(lv->mm, &walker, a, NULL, UFFD_W_MADV(lv));

		run->ranges++;
		if (r == MM_SCAN_SUCCEED || r == MM_SCAN_PMD_MAPPED)
			run->thps++;
		else
			run->last = r;
		run->stop = !collapse_goes_on(r);
	}
}

static int madv_result(struct uffd_live *lv, const struct madv_run *run)
{
	return run->thps == run->ranges ? 0 : mm_scan_result_errno(mm_policy(lv->mm), run->last);
}

int uffd_shmem_madv_collapse(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	uintptr_t spans[64][2];
	struct madv_run run = {.last = MM_SCAN_FAIL};
	unsigned n;

	if (!mm_policy(lv->mm)->madv_collapse)
		return -EINVAL; /* the emulated kernel has no such advice */
	UFFD_COUNT(lv, madv_collapse_calls);
	n = uffd_shmem_spans(lv, lo, hi, spans, 64);
	pthread_mutex_lock(&lv->madv_lock);
	for (unsigned i = 0; i < n; i++)
		madv_span(lv, spans[i][0], spans[i][1], &run);
	pthread_mutex_unlock(&lv->madv_lock);
	return madv_result(lv, &run);
}

int uffd_madv_collapse(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_region *rs[64];
	struct madv_run run = {.last = MM_SCAN_FAIL};
	unsigned n;

	if (!mm_policy(lv->mm)->madv_collapse)
		return -EINVAL; /* the emulated kernel has no such advice */
	UFFD_COUNT(lv, madv_collapse_calls);
	n = uffd_regions_overlapping(&lv->table, lo, hi, rs, 64);
	pthread_mutex_lock(&lv->madv_lock);
	for (unsigned i = 0; i < n; i++)
		madv_span(lv, lo > rs[i]->lo ? lo : rs[i]->lo, hi < rs[i]->hi ? hi : rs[i]->hi,
			  &run);
	pthread_mutex_unlock(&lv->madv_lock);
	for (unsigned i = 0; i < n; i++)
		uffd_region_put(&lv->table, rs[i]);
	return madv_result(lv, &run);
}
