/* Frames owned by programs and by the "rest of the system": freeing and splitting a program's
 * anonymous memory, and the raw allocations fragmentation recipes and tests make.
 *
 * Mirrors the freeing side of mm/memory.c (zap_pte_range / zap_huge_pmd releasing pages),
 * split_huge_page for a partly unmapped THP (thp_split_page), and alloc_pages/__free_pages for
 * kernel (UNMOVABLE/RECLAIMABLE) and other processes' (foreign MOVABLE) memory. A frame that
 * compaction has isolated is not freed here: it is marked and the compaction frees it (rule
 * stated in mm.h). mm_release_owners frees every frame of a process that is gone (a shared
 * pool's reaper: exit_mmap of a process that can no longer free its own memory).
 */
#include <errno.h>

#include "mm/internal.h"

static void anon_free_base(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (f->state == FS_HUGE) {
		thp_unmap_subpage(mm, pfn); /* a subpage of a PTE-mapped THP (split.c) */
		return;
	}
	if (f->state == FS_MTHP) {
		mthp_unmap_subpage(mm, pfn); /* a page of an mTHP folio (mthp.c) */
		return;
	}
	if (f->state != FS_ANON)
		return;
	if (f->flags & FF_ISOLATED) {
		f->flags |= FF_GONE; /* compaction frees it (and its target) when it gets to it */
		return;
	}
	frame_free_owned(mm, pfn, NULL);
}

static void anon_free_huge(struct mm *mm, uint32_t head)
{
	if (head % MM_HPAGE_NR || pfn_frame(mm, head)->state != FS_HUGE)
		return;
	thp_forget(mm, head);
	mm->nr_anon -= MM_HPAGE_NR;
	mm->nr_anon_huge -= MM_HPAGE_NR;
	free_frames(mm, head, MM_HPAGE_ORDER, NULL);
}

void mm_anon_free(struct mm *mm, uint32_t pfn, unsigned order, void *call)
{
	mm_lock(mm);
	if (pfn < mm->nr_frames) {
		if (order == 0)
			anon_free_base(mm, pfn);
		else if (order == MM_HPAGE_ORDER)
			anon_free_huge(mm, pfn);
		else if (order >= MM_MTHP_MIN_ORDER && order < MM_HPAGE_ORDER &&
			 pfn_frame(mm, pfn)->state == FS_MTHP &&
			 mthp_order(pfn_frame(mm, pfn)) == order && pfn % (1U << order) == 0)
			mthp_free_folio(mm, pfn);
	}
	mm_unlock(mm);
}

/* Give back the consecutive plain base frames [a, b) (FS_ANON, or FS_FILE from a deleted file's
 * page cache; not isolated), as freeing them one by one in ascending order would (mm/memory.c
 * zap_pte_range, mm/filemap.c delete_from_page_cache_batch free page by page; the buddy
 * outcome does not depend on how the pages are grouped). One by one, the pages freed so far of
 * an aligned block of the run merge only inside that block, and the pieces they queue are
 * unlinked again when its last page merges them (a list unlink leaves the others in order), so
 * the block is merged and queued by its last page's __free_one_page exactly as it is when
 * freed at its order: the run goes back as its largest aligned blocks (at most a pageblock),
 * ascending. The caller has taken the frames off nr_anon / nr_foreign. */
void free_plain_blocks(struct mm *mm, uint32_t a, uint32_t b)
{
	while (a < b) {
		unsigned k = 0;

		/* within a pageblock: __free_one_page takes the migratetype of the page it frees */
		while (k < MM_PAGEBLOCK_ORDER && !(a & (1U << k)) && a + (2U << k) <= b)
			k++;
		free_frames(mm, a, k, NULL);
		a += 1U << k;
	}
}

void free_plain_run(struct mm *mm, uint32_t a, uint32_t b)
{
	for (uint32_t p = a; p < b; p++) {
		if (pfn_frame(mm, p)->owner & MM_OWNER_FOREIGN)
			mm->nr_foreign--;
		else
			mm->nr_anon--;
	}
	free_plain_blocks(mm, a, b);
}

/* The walk below reads each frame once: the plain frames [run, p) are counted as it goes
 * (foreign of them), and go back with their counts when something else interrupts them. */
static void flush_plain(struct mm *mm, uint32_t run, uint32_t p, uint32_t foreign)
{
	mm->nr_foreign -= foreign;
	mm->nr_anon -= p - run - foreign;
	free_plain_blocks(mm, run, p);
}

void mm_anon_free_run(struct mm *mm, uint32_t pfn, uint32_t n, void *call)
{
	uint32_t run = pfn, end, foreign = 0;

	(void)call;
	mm_lock(mm);
	end = pfn >= mm->nr_frames ? pfn : n < mm->nr_frames - pfn ? pfn + n : mm->nr_frames;
	for (uint32_t p = pfn; p < end;) {
		const struct mm_frame *f = pfn_frame(mm, p);
		uint32_t q = p + 1;

		if (f->state == FS_ANON && !(f->flags & FF_ISOLATED)) {
			foreign += (f->owner & MM_OWNER_FOREIGN) != 0;
			p++;
			continue;
		}
		/* anything else takes mm_anon_free's own path, after the run before it; the
		 * subpages of one PTE-mapped THP in a row are unmapped together */
		flush_plain(mm, run, p, foreign);
		foreign = 0;
		if (f->state == FS_HUGE) {
			uint32_t head = pageblock_start(p), stop = head + MM_HPAGE_NR;

			while (q < end && q < stop && pfn_frame(mm, q)->state == FS_HUGE)
				q++;
			thp_unmap_subpages(mm, head, p, q);
		} else {
			anon_free_base(mm, p);
		}
		run = p = q;
	}
	flush_plain(mm, run, end, foreign);
	mm_unlock(mm);
}

/* A program anon frame (base or part of a huge extent) whose owner matches. */
static bool owned_by(const struct mm_frame *f, uint64_t mask, uint64_t value)
{
	if (f->state != FS_ANON && f->state != FS_HUGE && f->state != FS_MTHP)
		return false;
	return !(f->owner & MM_OWNER_FOREIGN) && (f->owner & mask) == value;
}

/* One frame (or extent) of a dead owner, as mm_anon_free would: 0 if nothing to release. */
static uint32_t release_one(struct mm *mm, uint32_t pfn, uint64_t mask, uint64_t value)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (!owned_by(f, mask, value) || (f->flags & FF_GONE))
		return 0;
	if (f->state == FS_HUGE) {
		if (pfn % MM_HPAGE_NR)
			return 0;
		anon_free_huge(mm, pfn);
		return MM_HPAGE_NR;
	}
	if (f->state == FS_MTHP) {
		uint32_t n = 1U << mthp_order(f);

		if (mthp_head(f, pfn) != pfn)
			return 0;
		mthp_free_folio(mm, pfn);
		return n;
	}
	anon_free_base(mm, pfn);
	return 1;
}

uint32_t mm_release_owners(struct mm *mm, uint64_t mask, uint64_t value)
{
	uint32_t released = 0;

	mm_lock(mm);
	for (uint32_t pfn = 0; pfn < mm->nr_frames;) {
		if (pfn >= mm->fresh_pfn && pfn < mm->fresh_end) {
			pfn = mm->fresh_end; /* never touched: nothing of anyone's */
			continue;
		}
		if (pfn_frame(mm, pfn)->state == FS_HUGE && pfn % MM_HPAGE_NR == 0) {
			released += release_one(mm, pfn, mask, value);
			pfn += MM_HPAGE_NR;
			continue;
		}
		if (pfn_frame(mm, pfn)->state == FS_MTHP) {
			uint32_t n = 1U << mthp_order(pfn_frame(mm, pfn));

			released += release_one(mm, pfn, mask, value);
			pfn += n;
			continue;
		}
		released += release_one(mm, pfn, mask, value);
		pfn++;
	}
	mm_unlock(mm);
	return released;
}

/* A partial unmap of a THP: 3.x split_huge_page at once; with deferred_split (4.5+) only the
 * PMD (__split_huge_pmd), the folio staying whole until the shrinker or its last unmap. */
int mm_anon_split(struct mm *mm, uint32_t head)
{
	int ret = -EINVAL;

	mm_lock(mm);
	if (head < mm->nr_frames && head % MM_HPAGE_NR == 0 &&
	    pfn_frame(mm, head)->state == FS_HUGE) {
		if (mm->cfg.policy.deferred_split) {
			thp_pmd_split(mm, head);
		} else {
			thp_forget(mm, head);
			for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
				pfn_frame(mm, head + i)->state = FS_ANON;
				pfn_frame(mm, head + i)->flags = 0;
				pfn_frame(mm, head + i)->hnext = 0;
			}
			mm->nr_anon_huge -= MM_HPAGE_NR;
			count_event(mm, MM_STAT_THP_SPLIT_PAGE, 1);
			count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_SPLIT);
		}
		ret = 0;
	}
	mm_unlock(mm);
	return ret;
}

/* An allocation of the rest of the system: GFP_KERNEL-like (LOW, MIN, reclaim, MIN, the 3.x
 * retries of alloc_base_page_slow; no dip below MIN), so recipes cannot starve the pool's
 * reserves. */
static uint32_t alloc_other(struct mm *mm, unsigned order, enum mm_migratetype mt, void *call)
{
	struct fault_ctx fc = {.call = call};
	struct alloc_ctx ac = {.order = order, .mt = mt, .gfp = GFP_HIGHUSER_MOVABLE, .fc = &fc};

	if (order == 0)
		return alloc_base_page(mm, &ac, false);
	return get_page_from_freelist(mm, &ac, WMARK_MIN);
}

int mm_alloc_pages(struct mm *mm, unsigned order, enum mm_migratetype mt, uint64_t owner,
		   uint32_t *pfn, void *call)
{
	bool foreign = mt == MM_MT_MOVABLE;
	uint32_t p;
	int ret = 0;

	if (order > MM_MAX_ORDER || (unsigned)mt >= MM_MT_NR ||
	    (foreign && !(owner & MM_OWNER_FOREIGN)))
		return -EINVAL;
	mm_lock(mm);
	p = alloc_other(mm, order, mt, call);
	if (p == MM_NO_PFN) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	mark_allocated(mm, p, order, foreign ? FS_ANON : FS_UNMOVABLE, foreign ? owner : 0);
	if (foreign)
		mm->nr_foreign += 1U << order;
	else
		mm->nr_unmovable += 1U << order;
	*pfn = p;
out_unlock:
	mm_unlock(mm);
	return ret;
}

static bool other_frame(const struct mm_frame *f)
{
	return f->state == FS_UNMOVABLE || (f->state == FS_ANON && (f->owner & MM_OWNER_FOREIGN));
}

/* Free what mm_alloc_pages gave. Foreign frames may have been moved by compaction since (only
 * their metadata moves): frames that are no longer "other" frames are left alone. */
void mm_free_pages(struct mm *mm, uint32_t pfn, unsigned order, void *call)
{
	uint32_t n = 1U << (order & 31);
	bool whole = true;

	mm_lock(mm);
	if (order > MM_MAX_ORDER || pfn % n || pfn >= mm->nr_frames || n > mm->nr_frames - pfn)
		goto out_unlock;
	for (uint32_t i = 0; i < n; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfn + i);

		if (!other_frame(f) || (f->flags & FF_ISOLATED))
			whole = false;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct mm_frame *f = pfn_frame(mm, pfn + i);

		if (!other_frame(f))
			continue;
		if (f->flags & FF_ISOLATED)
			f->flags |= FF_GONE;
		else if (!whole)
			frame_free_owned(mm, pfn + i, NULL);
		else if (f->state == FS_ANON)
			mm->nr_foreign--;
		else
			mm->nr_unmovable--;
	}
	if (whole)
		free_frames(mm, pfn, order, NULL);
out_unlock:
	mm_unlock(mm);
}
