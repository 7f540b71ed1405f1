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
 * The page-state side (claim, freed meanwhile, commit, abandon) is core/as's, shared with the
 * simulator (as_migrate_*).
 */
#include "uffd/uffd_internal.h"

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
		sys_madvise(w->scratch, UFFD_SCRATCH_PAGES * UFFD_PAGE_SIZE, MADV_DONTNEED);
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
	uffd_io_wake(lv->uffd, r->base + (uintptr_t)p * UFFD_PAGE_SIZE, UFFD_PAGE_SIZE);
	return ret;
}

/* The remap failed with the data in the scratch page: move it back where it was. */
static int remap_failed(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint8_t *scratch,
			int rc)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = r->base + (uintptr_t)p * UFFD_PAGE_SIZE;

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

static int migrate_locked(struct uffd_worker *w, struct uffd_region *r, uint32_t p, uint32_t to)
{
	struct uffd_live *lv = w->lv;
	uintptr_t addr = r->base + (uintptr_t)p * UFFD_PAGE_SIZE;
	uint8_t *scratch;
	int rc;

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
	if (!guard_migrate_begin()) { /* a fork is copying the address space: not now */
		UFFD_COUNT(lv, fork_deferred);
		as_migrate_cancel(&r->as, p, false);
		uffd_io_wake(lv->uffd, addr, UFFD_PAGE_SIZE);
		return -EBUSY;
	}
	scratch = uffd_scratch_page(w);
	rc = uffd_io_move(lv->uffd, (uintptr_t)scratch, addr, UFFD_PAGE_SIZE,
			  UFFDIO_MOVE_MODE_DONTWAKE, NULL);
	if (rc < 0 && uffd_moved_anyway(lv, (uintptr_t)scratch, addr))
		rc = 0;
	if (rc < 0) {
		guard_migrate_end();
		return unmap_failed(w, r, p, rc);
	}
	if (lv->cfg.test_migrate_gap_ns) { /* tests: the page stays out this much longer */
		uint64_t gap = lv->cfg.test_migrate_gap_ns;
		struct timespec ts = {(time_t)(gap / 1000000000ULL), (long)(gap % 1000000000ULL)};

		sys_call2(SYS_nanosleep, &ts, NULL);
	}
	rc = uffd_io_copy(lv->uffd, addr, scratch, UFFD_PAGE_SIZE, true, NULL);
	if (rc < 0)
		rc = remap_failed(w, r, p, scratch, rc);
	guard_migrate_end(); /* the page is back where the program left it (or gone with it) */
	if (rc < 0)
		return rc;
	as_migrate_commit(&r->as, p, to);
	UFFD_COUNT(lv, anon_migrations);
	return 0;
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
