/* A pool that starts from a snapshot of a real machine's physical memory: the frames of a new
 * pool take the states a snapshot gives them, run by run in pfn order, instead of the state
 * memblock_free_all leaves (every frame free in max-order blocks, every pageblock MOVABLE).
 *
 * mm reads nothing: core/snapshot parses the file and hands the runs over. Free frames become
 * buddy blocks of the snapshot's orders (merged with a free buddy as __free_one_page merges) on
 * the free list of their pageblock's migratetype, where the kernel would have queued them (see
 * place_free: the lists' order is not in any snapshot); anon frames become foreign anon (a phantom
 * owner's, migrated as metadata, never reclaimed), unevictable ones marked so (compaction migrates
 * them only when the policy allows); file frames page cache of one phantom file (clean or dirty, on
 * the inactive or active LRU); all else unmovable. Mirrors nothing in the kernel: it is the boot
 * state replaced by a measured one.
 */
#include <errno.h>
#include <stdio.h>

#include "mm/internal.h"

/* Every frame of the untouched pool is in a free block: take them all off the lists. */
static void take_all_free(struct mm *mm)
{
	for (uint32_t pfn = 0; pfn < mm->nr_frames;) {
		uint32_t n = 1U << frame_order(pfn_frame(mm, pfn));

		del_free_block(mm, pfn);
		pfn += n;
	}
}

int mm_snapshot_begin(struct mm *mm, struct mm_snapshot *s)
{
	int ret = 0;

	*s = (struct mm_snapshot){.mm = mm};
	mm_lock(mm);
	materialise_all(mm);
	if (mm->nr_free_pages != mm->nr_frames || mm->stats[MM_STAT_PGALLOC]) {
		ret = -EBUSY;
		goto out_unlock;
	}
	take_all_free(mm);
out_unlock:
	mm_unlock(mm);
	return ret;
}

int mm_snapshot_pageblock(struct mm_snapshot *s, uint32_t block, enum mm_migratetype mt)
{
	struct mm *mm = s->mm;

	if (block >= mm->nr_blocks || (unsigned)mt >= MM_MT_NR)
		return -EINVAL;
	mm_lock(mm);
	set_pageblock_mt(mm, block << MM_PAGEBLOCK_ORDER, mt);
	mm_unlock(mm);
	return 0;
}

/* A free block joins its lower buddy if that is free with the same order, as __free_one_page
 * would have merged them: the pool's free blocks are the kernel's canonical ones even when the
 * runs list buddies apart (a pageblock isolated while the snapshot was taken, a sampled or a
 * hand-written file). Runs come in pfn order, so the upper buddy is never placed yet.
 *
 * Where on its list: no interface shows the kernel's list order (kpageflags and pagetypeinfo
 * give flags and counts), so the block goes where 6.1's and 6.12's __free_one_page
 * (mm/page_alloc.c) would have queued it, freed in ascending pfn order - the order in which a
 * program's munmap or MADV_DONTNEED of a range frees its pages (zapped in address order; the
 * per-cpu lists take each page at their head and free_pcppages_bulk hands the oldest on first,
 * list_last_entry): at the head, the highest pfns first, unless buddy_merge_likely sends it to
 * the tail (shuffle_pick_tail decides only under page_alloc.shuffle=1, mm/shuffle.c, which the
 * oracle's guests do not set). A block of the top two orders, which buddy_merge_likely never sends
 * to the tail, goes to the tail in ascending pfn order instead: in a snapshot they are mostly
 * memory untouched since boot, which memblock_free_pages queued so (__free_pages_core,
 * FPI_TO_TAIL). */
static void place_free(struct mm *mm, uint32_t pfn, unsigned order)
{
	init_free_frames(mm, pfn, 1U << order);
	while (order < MM_MAX_ORDER && (pfn & (1U << order))) {
		uint32_t buddy = pfn ^ (1U << order);
		const struct mm_frame *b = pfn_frame(mm, buddy);

		if (!frame_is_buddy(b) || frame_order(b) != order)
			break;
		del_free_block(mm, buddy);
		pfn = buddy;
		order++;
	}
	add_free_block(mm, pfn, order, pageblock_mt(mm, pfn),
		       order >= MM_MAX_ORDER - 1 || buddy_merge_likely(mm, pfn, order));
}

static void place_file(struct mm_snapshot *s, uint32_t pfn, const struct mm_snapshot_run *r)
{
	struct mm *mm = s->mm;

	mark_allocated(mm, pfn, 0, FS_FILE, MM_OWNER_FILE(MM_SNAPSHOT_FILE_ID, s->placed++));
	if (r->active)
		pfn_frame(mm, pfn)->flags |= FF_ACTIVE;
	pc_insert(mm, pfn);
	lru_add(mm, pfn);
	mm->nr_file++;
	if (r->kind == MM_SNAP_FILE_DIRTY)
		set_page_dirty(mm, pfn);
}

static void place_frame(struct mm_snapshot *s, uint32_t pfn, const struct mm_snapshot_run *r)
{
	struct mm *mm = s->mm;

	switch (r->kind) {
	case MM_SNAP_ANON:
	case MM_SNAP_UNEVICTABLE:
		mark_allocated(mm, pfn, 0, FS_ANON,
			       MM_OWNER_FOREIGN | (s->placed++ << MM_HPAGE_ORDER) |
				   (r->kind == MM_SNAP_UNEVICTABLE ? MM_OWNER_UNEVICTABLE : 0));
		mm->nr_foreign++;
		break;
	case MM_SNAP_FILE:
	case MM_SNAP_FILE_DIRTY:
		place_file(s, pfn, r);
		break;
	default:
		mark_allocated(mm, pfn, 0, FS_UNMOVABLE, 0);
		mm->nr_unmovable++;
		break;
	}
}

static int check_run(const struct mm_snapshot *s, const struct mm_snapshot_run *r, char *err,
		     size_t errlen)
{
	const struct mm *mm = s->mm;

	if (r->kind >= MM_SNAP_NR) {
		snprintf(err, errlen, "frame %u: unknown kind %u", s->next, r->kind);
		return -EINVAL;
	}
	if (!r->len || r->len > mm->nr_frames - s->next) {
		snprintf(err, errlen, "frame %u: a run of %u frames does not fit the pool of %u",
			 s->next, r->len, mm->nr_frames);
		return -EINVAL;
	}
	if (r->kind == MM_SNAP_FREE &&
	    (r->order > MM_MAX_ORDER || (s->next | r->len) & ((1U << r->order) - 1))) {
		snprintf(err, errlen, "frame %u: %u frames are not aligned free blocks of order %u",
			 s->next, r->len, r->order);
		return -EINVAL;
	}
	return 0;
}

static void place_run(struct mm_snapshot *s, const struct mm_snapshot_run *r)
{
	struct mm *mm = s->mm;
	uint32_t end = s->next + r->len;

	if (r->kind == MM_SNAP_FREE) {
		for (uint32_t pfn = s->next; pfn < end; pfn += 1U << r->order)
			place_free(mm, pfn, r->order);
	} else {
		for (uint32_t pfn = s->next; pfn < end; pfn++)
			place_frame(s, pfn, r);
	}
	s->next = end;
}

int mm_snapshot_runs(struct mm_snapshot *s, const struct mm_snapshot_run *r, unsigned n, char *err,
		     size_t errlen)
{
	int ret = 0;

	mm_lock(s->mm);
	for (unsigned i = 0; i < n && !ret; i++) {
		ret = check_run(s, &r[i], err, errlen);
		if (!ret)
			place_run(s, &r[i]);
	}
	mm_unlock(s->mm);
	return ret;
}

/* Frames no run reached: free, in the largest aligned blocks that fit. */
static void free_rest(struct mm *mm, uint32_t pfn)
{
	while (pfn < mm->nr_frames) {
		unsigned order = MM_MAX_ORDER;

		while (pfn + (1U << order) > mm->nr_frames || (pfn & ((1U << order) - 1)))
			order--;
		place_free(mm, pfn, order);
		pfn += 1U << order;
	}
}

static void set_wmarks(struct mm *mm, const uint32_t wmark[3])
{
	if (!wmark || !wmark[WMARK_MIN] || wmark[WMARK_LOW] < wmark[WMARK_MIN] ||
	    wmark[WMARK_HIGH] < wmark[WMARK_LOW])
		return;
	for (unsigned w = 0; w < NR_WMARK; w++)
		mm->wmark[w] = wmark[w];
	mm->min_free_kbytes = (uint64_t)wmark[WMARK_MIN] * (MM_PAGE_SIZE / 1024);
}

int mm_snapshot_end(struct mm_snapshot *s, const uint32_t wmark[3], char *err, size_t errlen)
{
	struct mm *mm = s->mm;
	uint32_t covered = s->next;

	mm_lock(mm);
	free_rest(mm, s->next);
	s->next = mm->nr_frames;
	set_wmarks(mm, wmark);
	mm_unlock(mm);
	if (covered == mm->nr_frames)
		return 0;
	snprintf(err, errlen, "the snapshot covers %u of the pool's %u frames", covered,
		 mm->nr_frames);
	return -EINVAL;
}
