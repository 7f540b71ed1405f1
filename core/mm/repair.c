/* Repair of the model after a lock holder died in the middle of an update (a pool shared by
 * processes: SIGKILL or _exit of a process one of whose threads held the mm lock).
 *
 * The robust mutex tells the next locker (EOWNERDEAD), but not what the dead thread left half
 * done: a free block unlinked and not yet relinked, a counter not yet moved, frames isolated on
 * a private list nobody will put back. The kernel has no counterpart (a kernel thread does not
 * die holding zone->lock); the method is a CONFIG_DEBUG_VM walk turned into a rebuild: the
 * per-frame descriptors (state, order, owner, flags, writeback byte) and the pageblock bytes
 * are authoritative, everything else is derived from them again.
 *
 *  checked     every state is a frame state; a page-cache frame has a file owner; an order-9
 *              block holding huge frames is a whole extent, a split cut short (huge + base
 *              frames of consecutive cookies: the split is finished), or an allocation or free
 *              cut short (huge + free frames: the extent is freed, its caller is gone). Anything
 *              else is -EUCLEAN and nothing is written. mTHP folios: a whole one is kept, a
 *              split cut short is finished, other mTHP frames are freed (fix_mthp_folios).
 *  put back    every isolation ends: free frames (buddy blocks, a compaction's targets, a
 *              captured block) are merged as far as they go and queued per order and
 *              migratetype in pfn order (a head that was on a list keeps its list, others take
 *              their pageblock's); program and foreign frames stay as they are; page cache goes
 *              on the LRU its active bit names; a frame whose owner let it go (FF_GONE) is
 *              freed once nothing holds it (not locked, not under writeback).
 *  rebuilt     free lists and nr_free / nr_free_mt / nr_free_pages (the never-touched blocks
 *              past the fresh cursor stay pending and counted), the LRU lists and nr_lru, the
 *              page-cache hash chains, the dirty ring and its bitmap (surviving entries keep
 *              their order), every per-state count.
 *  kept        page locks (FF_LOCKED): only page-cache callers take them (core/io's dirtier
 *              and reader, in the machine's host), never a program's fault handler, so the
 *              dead lock holder held none, and dropping a live holder's lock would lose the
 *              dirtying its put brings. Writeback state (the flusher's). The pageblock bytes,
 *              compaction's deferral and cached scanners, kswapd's state, the statistics.
 *  lost        the order within each free list and LRU (rebuilt in pfn order), so allocation
 *              and reclaim order differ from what they would have been.
 * Callers in other processes that were inside an [unlocked] hook notice the bumped epoch when
 * they relock and abandon what they held (internal.h, mm_relock_after_hook).
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

static bool in_fresh(const struct mm *mm, uint32_t pfn)
{
	return pfn >= mm->fresh_pfn && pfn < mm->fresh_end;
}

/* ---- Checking the descriptors (nothing is written) ---------------------------------------- */

/* An order-9 block that holds huge frames. */
enum huge_block { HB_EXTENT, HB_SPLIT, HB_FREE, HB_BAD };

/* The cookie of page 0 of the extent a huge frame belongs to (cookies are consecutive). */
static uint64_t extent_base(struct mm *mm, uint32_t block)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (pfn_frame(mm, block + i)->state == FS_HUGE)
			return pfn_frame(mm, block + i)->owner - i;
	return 0;
}

static enum huge_block classify_huge(struct mm *mm, uint32_t block)
{
	uint64_t base = extent_base(mm, block);
	uint32_t huge = 0, split = 0, free = 0;

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		const struct mm_frame *f = pfn_frame(mm, block + i);

		if (f->state == FS_HUGE)
			huge++;
		else if (f->state == FS_ANON && f->owner == base + i)
			split++;
		else if (f->state == FS_FREE)
			free++;
	}
	if (huge == MM_HPAGE_NR)
		return HB_EXTENT;
	if (huge + split == MM_HPAGE_NR)
		return HB_SPLIT;
	return huge + free == MM_HPAGE_NR ? HB_FREE : HB_BAD;
}

static bool has_huge(struct mm *mm, uint32_t block)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (pfn_frame(mm, block + i)->state == FS_HUGE)
			return true;
	return false;
}

static bool block_ok(struct mm *mm, uint32_t block)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		const struct mm_frame *f = pfn_frame(mm, block + i);

		if (f->state > FS_UNMOVABLE && f->state != FS_MTHP && f->state != FS_SHMEM)
			return false;
		if (f->state == FS_SHMEM && !MM_OWNER_IS_SHMEM(f->owner))
			return false;
		if (f->state == FS_FILE && !(f->owner & MM_OWNER_FILE_BIT))
			return false;
	}
	return !has_huge(mm, block) || classify_huge(mm, block) != HB_BAD;
}

static int check_descriptors(struct mm *mm)
{
	const uint32_t max_block = 1U << MM_MAX_ORDER;

	if (mm->fresh_pfn > mm->fresh_end || mm->fresh_end > mm->nr_frames ||
	    mm->fresh_pfn % max_block || mm->fresh_end % max_block)
		return -EUCLEAN;
	for (uint32_t b = 0; b < mm->nr_frames; b += MM_HPAGE_NR)
		if (!in_fresh(mm, b) && !block_ok(mm, b))
			return -EUCLEAN;
	return 0;
}

/* ---- Rebuilding ------------------------------------------------------------------------------ */

static void reset_derived(struct mm *mm)
{
	for (unsigned i = 0; i < NR_SENTINELS; i++) {
		pfn_frame(mm, sentinel(mm, i))->state = FS_SENTINEL;
		flist_init(mm, sentinel(mm, i));
	}
	memset(mm->nr_free, 0, sizeof(mm->nr_free));
	memset(mm->nr_free_mt, 0, sizeof(mm->nr_free_mt));
	for (unsigned z = 0; z < mm->nr_lower; z++)
		memset(&mm->lower[z].area, 0, sizeof(mm->lower[z].area));
	memset(mm->nr_lru, 0, sizeof(mm->nr_lru));
	mm->nr_free_pages = 0;
	mm->nr_anon = mm->nr_anon_huge = mm->nr_foreign = mm->nr_file = 0;
	mm->nr_file_dirty = mm->nr_file_writeback = mm->nr_unmovable = 0;
	mm->nr_isolated = mm->nr_isolated_free = 0;
	mm->nr_huge_pte = mm->nr_split_queue = mm->nr_partially_mapped = 0;
	mm->nr_anon_mthp = 0;
	mm->nr_shmem = mm->nr_shmem_huge = 0;
	memset(mm->nr_mthp, 0, sizeof(mm->nr_mthp));
	memset(mm->nr_mthp_partial, 0, sizeof(mm->nr_mthp_partial));
	memset(mm->pc_hash, 0, (size_t)(mm->pc_hash_mask + 1) * sizeof(*mm->pc_hash));
	memset(mm->pb_nbuddy, 0, (size_t)mm->nr_blocks * sizeof(*mm->pb_nbuddy));
}

static void set_extent(struct mm *mm, uint32_t block, enum frame_state st)
{
	uint64_t base = extent_base(mm, block);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		struct mm_frame *f = pfn_frame(mm, block + i);

		f->state = (uint8_t)st;
		f->owner = base + i;
		/* a THP keeps what split.c says of it (PTE-mapped, partially mapped, unmapped
		 * subpages); its queue membership is rebuilt */
		f->flags = st == FS_HUGE ? f->flags & (i ? FF_THP_UNMAPPED : FF_THP_MASK) : 0;
		f->hnext = 0;
	}
}

/* A THP's derived state: the unmapped count, the counters, the split queue. */
static void rebuild_thp(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);
	bool queued = hf->flags & FF_THP_QUEUED;
	uint32_t unmapped = 0;

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		unmapped += !!(pfn_frame(mm, head + i)->flags & FF_THP_UNMAPPED);
	hf->flags &= (uint8_t)~FF_THP_QUEUED;
	if (unmapped)
		hf->flags |= FF_THP_PTE;
	hf->hnext = unmapped;
	if (hf->flags & FF_THP_PTE)
		mm->nr_huge_pte += MM_HPAGE_NR;
	if (hf->flags & FF_THP_PARTIAL) {
		mm->nr_partially_mapped++;
		queued = true;
	}
	if (queued) {
		flist_add_tail(mm, sentinel(mm, SENT_SPLIT_QUEUE), head);
		hf->flags |= FF_THP_QUEUED;
		mm->nr_split_queue++;
	}
}

/* Every subpage of a THP was unmapped but the free was cut short. */
static bool thp_all_unmapped(struct mm *mm, uint32_t block)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (!(pfn_frame(mm, block + i)->flags & FF_THP_UNMAPPED))
			return false;
	return true;
}

/* Blocks with huge frames: a whole extent gets its cookies right, a split cut short is
 * finished, an allocation or free cut short leaves free frames (the main walk frees them). */
static void fix_huge_blocks(struct mm *mm)
{
	for (uint32_t b = 0; b < mm->nr_frames; b += MM_HPAGE_NR) {
		if (in_fresh(mm, b) || !has_huge(mm, b))
			continue;
		switch (classify_huge(mm, b)) {
		case HB_EXTENT:
			if (thp_all_unmapped(mm, b)) {
				for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
					pfn_frame(mm, b + i)->state = FS_FREE;
				break;
			}
			set_extent(mm, b, FS_HUGE);
			break;
		case HB_SPLIT:
			set_extent(mm, b, FS_ANON);
			count_event(mm, MM_STAT_THP_SPLIT_PAGE, 1);
			break;
		default:
			for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
				if (pfn_frame(mm, b + i)->state == FS_HUGE)
					pfn_frame(mm, b + i)->state = FS_FREE;
			break;
		}
	}
}

/* mTHP folios (mthp.c): a whole one stays (freed if every page was unmapped but the free was
 * cut short); a split cut short (mTHP + base frames of consecutive cookies) is finished; any
 * other mTHP frame is what an allocation or a free cut short left: it is freed. */
static void fix_mthp_folios(struct mm *mm)
{
	for (uint32_t pfn = 0; pfn < mm->nr_frames; pfn++) {
		struct mm_frame *f = pfn_frame(mm, pfn);
		unsigned order = mthp_order(f);
		uint32_t n = 1U << order, head = pfn & ~(n - 1), mthp = 0, anon = 0, unmapped = 0;
		uint64_t base;

		if (in_fresh(mm, pfn) || f->state != FS_MTHP)
			continue;
		if (order < MM_MTHP_MIN_ORDER || order >= MM_HPAGE_ORDER ||
		    head + n > mm->nr_frames) {
			f->state = FS_FREE;
			continue;
		}
		base = f->owner - (pfn - head);
		for (uint32_t i = 0; i < n; i++) {
			const struct mm_frame *t = pfn_frame(mm, head + i);

			if (t->owner != base + i)
				continue;
			if (t->state == FS_MTHP && mthp_order(t) == order) {
				mthp++;
				unmapped += !!(t->flags & FF_THP_UNMAPPED);
			} else if (t->state == FS_ANON) {
				anon++;
			}
		}
		for (uint32_t i = 0; i < n; i++) {
			struct mm_frame *t = pfn_frame(mm, head + i);

			if (t->state != FS_MTHP)
				continue;
			if (mthp == n && unmapped == n) {
				t->state = FS_FREE;
			} else if (mthp == n) {
				t->flags &= i ? FF_THP_UNMAPPED
					      : (uint8_t)(FF_THP_PARTIAL | FF_THP_UNMAPPED);
				t->hnext = 0;
			} else if (mthp + anon == n) {
				t->state = FS_ANON; /* the split goes on to its end */
				t->flags = 0;
				t->order = ORDER_TAIL;
			} else {
				t->state = FS_FREE;
			}
		}
		pfn = head + n - 1;
	}
}

/* An mTHP folio's derived state: counts, unmapped pages, the split queue. */
static void rebuild_mthp(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);
	unsigned order = mthp_order(hf);
	uint32_t n = 1U << order, unmapped = 0;

	for (uint32_t i = 0; i < n; i++)
		unmapped += !!(pfn_frame(mm, head + i)->flags & FF_THP_UNMAPPED);
	hf->hnext = unmapped;
	hf->flags &= (uint8_t) ~(FF_THP_QUEUED | FF_THP_PARTIAL);
	mm->nr_anon += n;
	mm->nr_anon_mthp += n;
	mm->nr_mthp[order]++;
	if (unmapped) { /* partially mapped: queued (the statistics are kept, not recounted) */
		flist_add_tail(mm, sentinel(mm, SENT_SPLIT_QUEUE), head);
		hf->flags |= FF_THP_QUEUED | FF_THP_PARTIAL;
		mm->nr_split_queue++;
		mm->nr_mthp_partial[order]++;
	}
}

/* The page-cache index: first every frame nobody holds isolated, then the isolated ones. A
 * second frame of one owner that is isolated is the source of a migration whose commit was cut
 * short (the target already holds the page): it is let go. Two unisolated ones: -EUCLEAN. */
static int rebuild_index(struct mm *mm)
{
	for (unsigned pass = 0; pass < 2; pass++) {
		uint8_t isolated = pass ? FF_ISOLATED : 0;

		for (uint32_t pfn = 0; pfn < mm->nr_frames; pfn++) {
			struct mm_frame *f = pfn_frame(mm, pfn);

			if (in_fresh(mm, pfn) || f->state != FS_FILE || (f->flags & FF_GONE) ||
			    (f->flags & FF_ISOLATED) != isolated)
				continue;
			if (pc_lookup(mm, f->owner) == MM_NO_PFN)
				pc_insert(mm, pfn);
			else if (isolated)
				f->flags |= FF_GONE;
			else
				return -EUCLEAN;
		}
	}
	return 0;
}

static void make_free(struct mm_frame *f)
{
	f->state = FS_FREE;
	f->owner = 0;
	f->flags = 0;
	f->order = ORDER_TAIL;
	f->hnext = 0;
	frame_set_wb(f, false);
}

/* A page-cache frame back where it belongs; false if it was freed. */
static bool put_back_file(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if ((f->flags & FF_GONE) && !(f->flags & FF_LOCKED) && !frame_under_wb(f))
		return false;
	mm->nr_file++;
	mm->nr_file_dirty += !!(f->flags & FF_DIRTY);
	mm->nr_file_writeback += frame_under_wb(f);
	lru_add(mm, pfn);
	return true;
}

/* Put one (non-huge) frame back and count it. Returns true if it is free now. */
static bool put_back(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	bool held = f->flags & FF_ISOLATED;

	f->flags &= (uint8_t) ~(FF_ISOLATED | FF_MIGRATING);
	switch (f->state) {
	case FS_ANON:
		if (f->flags & FF_GONE)
			break;
		if (f->owner & MM_OWNER_FOREIGN)
			mm->nr_foreign++;
		else
			mm->nr_anon++;
		return false;
	case FS_FILE:
		if (put_back_file(mm, pfn))
			return false;
		break;
	case FS_UNMOVABLE:
		mm->nr_unmovable++;
		return false;
	default:
		if (held)
			f->order =
			    ORDER_TAIL; /* a compaction's target: its order byte is no list's */
		f->flags = 0;
		f->owner = 0;
		f->hnext = 0;
		return true;
	}
	make_free(f);
	return true;
}

/* The list a merged free block goes on: its head's, if the head headed a block of that order
 * on a list before, else its pageblock's migratetype. */
static unsigned block_mt(struct mm *mm, uint32_t pfn, unsigned order)
{
	const struct mm_frame *f = pfn_frame(mm, pfn);

	if (f->order != ORDER_TAIL && frame_order(f) == order && frame_list_mt(f) < MM_MT_NR)
		return frame_list_mt(f);
	return pageblock_mt(mm, pfn);
}

/* Free frames [*run, end): the largest aligned blocks, as __free_one_page would merge them. */
static void flush_run(struct mm *mm, uint32_t *run, uint32_t end)
{
	for (uint32_t pfn = *run; *run != MM_NO_PFN && pfn < end;) {
		unsigned order = MM_MAX_ORDER, mt;

		while (pfn + (1U << order) > end || (pfn & ((1U << order) - 1)))
			order--;
		mt = block_mt(mm, pfn, order);
		init_free_frames(mm, pfn, 1U << order);
		link_free_block(mm, pfn, order, mt);
		pfn += 1U << order;
	}
	*run = MM_NO_PFN;
}

/* A shmem folio at pfn: kept, counted and indexed when whole (an add_folio that ran to its
 * end: every frame FS_SHMEM of its order with consecutive cookies), else its shmem frames are
 * freed (an allocation cut short: the fault that made it never returned). Its length, and
 * whether it was kept. */
static uint32_t rebuild_shmem(struct mm *mm, uint32_t pfn, bool *kept)
{
	struct mm_frame *hf = pfn_frame(mm, pfn);
	unsigned order = frame_order(hf);
	uint32_t n = order <= MM_HPAGE_ORDER ? 1U << order : 1;

	*kept = !(pfn % n) && pfn + n <= mm->nr_frames && !(MM_OWNER_FILE_INDEX(hf->owner) % n);
	for (uint32_t i = 0; *kept && i < n; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfn + i);

		*kept = f->state == FS_SHMEM && frame_order(f) == order &&
			f->owner == hf->owner + i && pc_lookup(mm, f->owner) == MM_NO_PFN;
	}
	if (!*kept) {
		make_free(hf);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		pfn_frame(mm, pfn + i)->flags = 0;
		pc_insert(mm, pfn + i);
	}
	mm->nr_shmem += n;
	if (order == MM_HPAGE_ORDER)
		mm->nr_shmem_huge += n;
	return n;
}

static void rebuild_frames(struct mm *mm)
{
	uint32_t run = MM_NO_PFN;

	for (uint32_t pfn = 0; pfn < mm->nr_frames;) {
		if (in_fresh(mm, pfn) || pfn_frame(mm, pfn)->state == FS_HUGE) {
			flush_run(mm, &run, pfn);
			if (in_fresh(mm, pfn)) {
				pfn = mm->fresh_end;
				continue;
			}
			mm->nr_anon += MM_HPAGE_NR;
			mm->nr_anon_huge += MM_HPAGE_NR;
			rebuild_thp(mm, pfn);
			pfn += MM_HPAGE_NR;
			continue;
		}
		if (pfn_frame(mm, pfn)->state == FS_MTHP) {
			flush_run(mm, &run, pfn);
			rebuild_mthp(mm, pfn);
			pfn += 1U << mthp_order(pfn_frame(mm, pfn));
			continue;
		}
		if (pfn_frame(mm, pfn)->state == FS_SHMEM) {
			bool kept;
			uint32_t n = rebuild_shmem(mm, pfn, &kept);

			if (kept) {
				flush_run(mm, &run, pfn);
				pfn += n;
				continue;
			}
			/* freed: fall through to put_back, which sees a free frame */
		}
		if (!put_back(mm, pfn))
			flush_run(mm, &run, pfn);
		else if (run == MM_NO_PFN)
			run = pfn;
		pfn++;
	}
	flush_run(mm, &run, mm->nr_frames);
}

/* The never-touched max-order blocks stay pending, counted as free (pool.c's init_zone). */
static void count_fresh(struct mm *mm)
{
	uint32_t n = (mm->fresh_end - mm->fresh_pfn) >> MM_MAX_ORDER;

	mm->nr_free[MM_MAX_ORDER] += n;
	mm->nr_free_mt[MM_MAX_ORDER][MM_MT_MOVABLE] += n;
	mm->nr_free_pages += n << MM_MAX_ORDER;
}

int mm_repair(struct mm *mm)
{
	int ret = check_descriptors(mm);

	mm->epoch++; /* whatever happens, what callers hold across a hook is no longer theirs */
	if (ret)
		return ret;
	reset_derived(mm);
	fix_huge_blocks(mm);
	fix_mthp_folios(mm);
	ret = rebuild_index(mm);
	if (ret)
		return ret;
	rebuild_frames(mm);
	count_fresh(mm);
	pc_rebuild_ring(mm);
	return 0;
}
