/* Real migration of a program page: the migrate_anon hook (mm/migrate.c: unmap_and_move,
 * migrate_folio_unmap / move_to_new_folio / remove_migration_ptes).
 *
 * Compaction picked one of the program's 4 KiB frames. As the kernel does, the page is unmapped
 * (UFFDIO_MOVE to this worker's registered scratch page, DONTWAKE: a program access now blocks in
 * a userfault, as it would on a migration entry), its data is copied to a new page and mapped back
 * (UFFDIO_COPY from the scratch page, which wakes the blocked threads).
 *
 * UFFDIO_MOVE can report an error (EEXIST, with nothing moved) for a page it did move: on this
 * kernel a move that retried after an internal -EAGAIN keeps the stale error and then trips over
 * its own destination. So a failed move is checked against the page tables (mincore of both
 * pages) before anything is concluded: data that reached the scratch page is always copied back.
 *
 * The page is MIGRATING for the whole operation, and a fault on a MIGRATING page is never
 * answered by the handlers: a zero page there would lose the program's data (the addendum's
 * trap). The region's busy lock is held for reading, so the program's munmap/madvise cannot
 * interleave; if it came first it has flagged the page FREED and the migration gives up with
 * -ENOENT (mm then frees both frames). Once the hook has returned, the program may free the page
 * before mm has retaken its lock to commit the migration: mm honours that free (mm.h,
 * mm_anon_free), so the hook returns without the mm lock, as every [unlocked] hook does.
 * The page-state side (claim, freed meanwhile, commit, abandon) is core/addrspace's, shared with
 * the simulator (as_migrate_*).
 *
 * In the modern era mm hands over a pass's program pages at once (migrate_anon_batch: 6.12
 * migrate_pages_batch unmaps them all, then moves them all): uffd_migrate_batch claims them,
 * sorts them by address and, region by region under its busy lock, moves them all out, then
 * copies them all back, a run of consecutive pages in one UFFDIO_MOVE and one UFFDIO_COPY. A
 * run's ioctl that reports an error is taken up page by page from where it stopped, with the
 * one-page path's checks.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <time.h>

#include "util/sys.h"
#include "util/clock.h"

/* An empty scratch page: each page of the batch is handed out once, and the whole batch is
 * emptied when used up (one MADV_DONTNEED - one TLB flush - per UFFD_SCRATCH_PAGES pages: it is
 * the free of the migrated pages' old copies). Nothing else maps a scratch page (the program
 * cannot reach it, fork does not copy it), so whatever a move leaves there is the program's page
 * - what uffd_moved_anyway relies on. (A mincore() check of every page before use cost more than
 * the move itself on this VM: 1-2 us a page.) */
uint8_t *uffd_scratch_page(struct uffd_worker *w)
{
	uint8_t *s;

	if (w->scratch_next >= UFFD_SCRATCH_PAGES) {
		sys_zap(w->scratch, UFFD_SCRATCH_PAGES * UFFD_PAGE_SIZE);
		w->scratch_next = 0;
	}
	s = w->scratch + (size_t)w->scratch_next++ * UFFD_PAGE_SIZE;
	return s;
}

/* A move from src to dst failed: did it move the page anyway? */
bool uffd_moved_anyway(struct uffd_live *lv, uintptr_t dst, uintptr_t src)
{
	if (uffd_page_resident(dst) != 1 || uffd_page_resident(src) != 0)
		return false;
	UFFD_COUNT(lv, move_misreports);
	return true;
}

/* The unmap failed: nothing moved. Say why in mm's terms. A thread that faulted meanwhile saw
 * MIGRATING and waits: wake it once the page has its new state. */
static int unmap_failed(struct uffd_worker *w, struct uffd_region *r, uint32_t p, int rc)
{
	struct uffd_live *lv = w->lv;
	bool lost = false;
	int ret;

	switch (rc) {
	case -ENOENT: /* no page there any more: its data went with whoever zapped it */
		lost = true;
		ret = -ENOENT;
		break;
	case -EBUSY:  /* pinned, or shared with a fork child: not movable now */
	case -EINVAL: /* VMA flags differ from the scratch VMA (mlock, prot): not movable */
		UFFD_COUNT(lv, anon_migrate_busy);
		ret = -EBUSY;
		break;
	case -EEXIST: /* scratch page not empty: drop the batch and let compaction retry */
		w->scratch_next = UFFD_SCRATCH_PAGES;
		ret = -EAGAIN;
		break;
	default:
		if (rc != -EAGAIN)
			UFFD_COUNT(lv, uffd_errors);
		ret = -EAGAIN;
		break;
	}
	as_migrate_cancel(&r->as, p, lost);
	uffd_io_wake(lv->uffd, as_page_addr(&r->as, p), UFFD_PAGE_SIZE);
	return ret;
}

/* The remap failed with the data in the scratch page: move it back where it was. */
static int remap_failed(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint8_t *scratch,
			int rc)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = as_page_addr(&r->as, p);

	if (uffd_io_move(lv->uffd, addr, (uintptr_t)scratch, UFFD_PAGE_SIZE, 0, NULL) == 0 ||
	    uffd_moved_anyway(lv, addr, (uintptr_t)scratch)) {
		as_migrate_cancel(&r->as, p, false);
		uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
		return -EAGAIN;
	}
	/* only a mapping that vanished behind our back gets here: its data is gone with it */
	if (rc != -ENOENT)
		UFFD_COUNT(lv, uffd_errors);
	as_migrate_cancel(&r->as, p, true);
	uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
	return -ENOENT;
}

/* Before a page is moved out: may it be? 0 yes; else the migration's result, the page already
 * let go of (its waiters woken). */
static int migrate_check(struct uffd_worker *w, struct uffd_region *r, uint32_t p)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = as_page_addr(&r->as, p);

	if (as_migrate_freed(&r->as, p) < 0) { /* the program freed it first: nothing to copy */
		uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
		return -ENOENT;
	}
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) || r->failed) {
		/* transferred (its successor owns the frame) or given back to the kernel */
		as_migrate_cancel(&r->as, p, false);
		uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
		return -EAGAIN;
	}
	return 0;
}

/* A fork is copying the address space: the page is not migrated now. */
static int migrate_forking(struct uffd_worker *w, struct uffd_region *r, uint32_t p)
{
	UFFD_COUNT(w->lv, fork_deferred);
	as_migrate_cancel(&r->as, p, false);
	uffd_io_wake(w->lv->uffd, as_page_addr(&r->as, p), UFFD_PAGE_SIZE);
	return -EBUSY;
}

/* Unmap: move page p to the scratch page, without waking. 0, or unmap_failed's result. */
static int move_out(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint8_t *scratch)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = as_page_addr(&r->as, p);
	int rc = uffd_io_move(lv->uffd, (uintptr_t)scratch, addr, UFFD_PAGE_SIZE,
			      UFFDIO_MOVE_MODE_DONTWAKE, NULL);

	if (rc < 0 && uffd_moved_anyway(lv, (uintptr_t)scratch, addr))
		rc = 0;
	return rc < 0 ? unmap_failed(w, r, p, rc) : 0;
}

/* tests: a page being migrated, or a range being collapsed, stays out this much longer */
void uffd_test_gap(struct uffd_live *lv)
{
	uint64_t gap = lv->cfg.test_migrate_gap_ns;
	struct timespec ts = {(time_t)(gap / 1000000000ULL), (long)(gap % 1000000000ULL)};

	if (gap)
		sys_call2(SYS_nanosleep, &ts, NULL);
}

/* Page p is mapped again, its data in frame `to`. */
static void migrated(struct uffd_live *lv, struct uffd_region *r, uint32_t p, uint32_t to)
{
	as_migrate_commit(&r->as, p, to);
	UFFD_COUNT(lv, anon_migrations);
}

/* Copy the page back from scratch and map it, waking its waiters; commit. 0 or -errno. */
static int copy_back(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint8_t *scratch,
		     uint32_t to)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = as_page_addr(&r->as, p);
	int rc = uffd_io_copy(lv->uffd, addr, scratch, UFFD_PAGE_SIZE, true, NULL);

	if (rc < 0)
		return remap_failed(w, r, p, scratch, rc);
	migrated(lv, r, p, to);
	return 0;
}

static int migrate_locked(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint32_t to)
{
	uint8_t *scratch;
	int rc = migrate_check(w, r, p);

	if (rc < 0)
		return rc;
	if (!guard_migrate_begin())
		return migrate_forking(w, r, p);
	scratch = uffd_scratch_page(w);
	rc = move_out(w, r, p, scratch);
	if (rc == 0) {
		uffd_test_gap(w->lv);
		rc = copy_back(w, r, p, scratch, to);
	}
	guard_migrate_end(); /* the page is back where the program left it (or gone with it) */
	return rc;
}

int uffd_migrate_page(struct uffd_worker *w, uint64_t owner, uint32_t from, uint32_t to)
{
	struct uffd_live *lv = w->lv;
	struct uffd_region *r = uffd_region_by_cookie(&lv->table, owner);
	uint32_t p = (uint32_t)owner;
	uint64_t t0 = clock_now_ns(), t1;
	int rc;

	if (!r)
		return -ENOENT;
	rc = as_migrate_claim(&r->as, p, from);
	if (rc < 0) {
		uffd_region_put(&lv->table, r);
		return rc;
	}
	pthread_rwlock_rdlock(&r->busy);
	rc = migrate_locked(w, r, p, to);
	pthread_rwlock_unlock(&r->busy);
	uffd_region_put(&lv->table, r);
	t1 = clock_now_ns();
	uffd_staging_quiet(&lv->staging, t1); /* no chunk fill beside a migration burst */
	if (rc == 0) /* per-page cost, against the bare MOVE + COPY floor (tests/perf/bench.sh) */
		uffd_stat_add(&lv->stats->host.anon_migrate_ns, t1 - t0);
	return rc;
}

/* ---- A batch (the modern era: 6.12 migrate_pages_batch) ----------------------------------- */

struct batch_page {
	struct uffd_region *r;
	uint32_t p, to;
	int *ret;
	uint8_t *scratch;
};

static uintptr_t bp_addr(const struct batch_page *b)
{
	return as_page_addr(&b->r->as, b->p);
}

/* Pages [i, end) of the (address-sorted) batch that are one run: same region, consecutive
 * pages and consecutive scratch pages, all still to be done (*ret == 1). A page not to be done
 * is a run of its own, which the caller skips. */
static unsigned run_end(const struct batch_page *b, unsigned i, unsigned n)
{
	unsigned e = i + 1;

	while (*b[i].ret == 1 && e < n && *b[e].ret == 1 && b[e].r == b[i].r &&
	       b[e].p == b[e - 1].p + 1 && b[e].scratch == b[e - 1].scratch + UFFD_PAGE_SIZE)
		e++;
	return e;
}

/* Pages of the run [i, e) a whole-run ioctl (rc, done bytes) covered: all, or those it did. */
static unsigned run_done(unsigned i, unsigned e, int rc, int64_t done)
{
	return rc == 0 ? e - i : (unsigned)(done / UFFD_PAGE_SIZE);
}

/* One region's pages [0, n) of a batch, claimed, with the region's busy lock held: unmap them
 * all, then copy and map them all back, each contiguous run in one UFFDIO_MOVE and one
 * UFFDIO_COPY (a run that reports an error goes on one page at a time from where it stopped). */
static void batch_locked(struct uffd_worker *w, struct batch_page *b, unsigned n)
{
	struct uffd_live *lv = w->lv;

	for (unsigned i = 0; i < n; i++) {
		*b[i].ret = migrate_check(w, b[i].r, b[i].p);
		if (*b[i].ret == 0)
			*b[i].ret = 1; /* to be done */
	}
	if (!guard_migrate_begin()) {
		for (unsigned i = 0; i < n; i++)
			if (*b[i].ret == 1)
				*b[i].ret = migrate_forking(w, b[i].r, b[i].p);
		return;
	}
	if (w->scratch_next + n > UFFD_SCRATCH_PAGES) /* the batch's scratch pages in one piece */
		w->scratch_next = UFFD_SCRATCH_PAGES;
	for (unsigned i = 0; i < n; i++)
		b[i].scratch = *b[i].ret == 1 ? uffd_scratch_page(w) : NULL;
	/* unmap: a page moved out stays to be done (1), one that could not be is let go */
	for (unsigned i = 0, e; i < n; i = e) {
		unsigned k = 0;
		int64_t done = 0;
		int rc;

		e = run_end(b, i, n);
		if (*b[i].ret != 1)
			continue;
		if (e - i > 1)
			k = run_done(i, e,
				     uffd_io_move(lv->uffd, (uintptr_t)b[i].scratch, bp_addr(&b[i]),
						  (e - i) * UFFD_PAGE_SIZE,
						  UFFDIO_MOVE_MODE_DONTWAKE, &done),
				     done);
		for (unsigned j = i + k; j < e; j++)
			if ((rc = move_out(w, b[j].r, b[j].p, b[j].scratch)) < 0)
				*b[j].ret = rc;
	}
	uffd_test_gap(lv);
	/* move: copy back and map */
	for (unsigned i = 0, e; i < n; i = e) {
		unsigned k = 0;
		int64_t done = 0;

		e = run_end(b, i, n);
		if (*b[i].ret != 1)
			continue;
		if (e - i > 1)
			k = run_done(i, e,
				     uffd_io_copy(lv->uffd, bp_addr(&b[i]), b[i].scratch,
						  (e - i) * UFFD_PAGE_SIZE, true, &done),
				     done);
		for (unsigned j = i; j < i + k; j++) {
			migrated(lv, b[j].r, b[j].p, b[j].to);
			*b[j].ret = 0;
		}
		for (unsigned j = i + k; j < e; j++)
			*b[j].ret = copy_back(w, b[j].r, b[j].p, b[j].scratch, b[j].to);
	}
	guard_migrate_end();
}

/* Sort a batch by address, in place. Not qsort: glibc's qsort mallocs a buffer once the array
 * is 1 KiB or more (32 pages here), and a handler thread must not call the program's allocator
 * (README.md): jemalloc's memory is managed memory, and with this batch's pages claimed a fault
 * on it can wait for this very thread. Insertion sort: at most UFFD_SCRATCH_PAGES entries, and
 * compaction's lists mostly come in address order already. */
static void bp_sort(struct batch_page *b, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		struct batch_page x = b[i];
		unsigned j = i;

		for (; j > 0 && bp_addr(&b[j - 1]) > bp_addr(&x); j--)
			b[j] = b[j - 1];
		b[j] = x;
	}
}

/* Up to UFFD_SCRATCH_PAGES pages of a batch; returns how many moved. */
static unsigned batch_chunk(struct uffd_worker *w, unsigned n, const uint64_t *owner,
			    const uint32_t *from, const uint32_t *to, int *ret)
{
	struct uffd_live *lv = w->lv;
	struct batch_page b[UFFD_SCRATCH_PAGES];
	unsigned nb = 0, moved = 0;

	for (unsigned i = 0; i < n; i++) {
		struct uffd_region *r = uffd_region_by_cookie(&lv->table, owner[i]);

		ret[i] = r ? as_migrate_claim(&r->as, (uint32_t)owner[i], from[i]) : -ENOENT;
		if (r && ret[i] < 0)
			uffd_region_put(&lv->table, r);
		if (ret[i] < 0)
			continue;
		b[nb++] = (struct batch_page){
		    .r = r, .p = (uint32_t)owner[i], .to = to[i], .ret = &ret[i]};
	}
	bp_sort(b, nb);
	for (unsigned i = 0, e; i < nb; i = e) { /* region by region, each under its busy lock */
		for (e = i + 1; e < nb && b[e].r == b[i].r; e++)
			;
		pthread_rwlock_rdlock(&b[i].r->busy);
		batch_locked(w, b + i, e - i);
		pthread_rwlock_unlock(&b[i].r->busy);
	}
	for (unsigned i = 0; i < nb; i++) {
		moved += *b[i].ret == 0;
		uffd_region_put(&lv->table, b[i].r);
	}
	return moved;
}

void uffd_migrate_batch(struct uffd_worker *w, unsigned n, const uint64_t *owner,
			const uint32_t *from, const uint32_t *to, int *ret)
{
	struct uffd_live *lv = w->lv;
	uint64_t t0 = clock_now_ns(), t1;
	unsigned moved = 0;

	if (!n)
		return;
	for (unsigned i = 0; i < n; i += UFFD_SCRATCH_PAGES) {
		unsigned k = n - i < UFFD_SCRATCH_PAGES ? n - i : UFFD_SCRATCH_PAGES;

		moved += batch_chunk(w, k, owner + i, from + i, to + i, ret + i);
	}
	t1 = clock_now_ns();
	uffd_staging_quiet(&lv->staging, t1); /* no chunk fill beside a migration burst */
	if (moved) /* per-page cost, as for one page at a time: the call over the pages moved */
		uffd_stat_add(&lv->stats->host.anon_migrate_ns, t1 - t0);
}
