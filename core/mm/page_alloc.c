/* The buddy allocator of one zone: free lists per order and migratetype, merging on free,
 * splitting on allocation, migratetype fallback with block stealing, and the watermarks.
 *
 * Mirrors mm/page_alloc.c: __free_one_page (with the modern compaction_capture), expand,
 * __rmqueue_smallest, __rmqueue_fallback (the 3.x and 6.12 fallback tables and stealing rules),
 * steal_suitable_fallback/move_freepages_block, boost_watermark, __zone_watermark_ok (3.x
 * per-order decay vs. 6.12 "any free block of the order"), setup_per_zone_wmarks and
 * khugepaged's set_recommended_min_free_kbytes, get_page_from_freelist, and vmstat.c's
 * __fragmentation_index. Per-cpu page lists are not modelled (every free goes to the buddy).
 */
#include <math.h>

#include "mm/internal.h"

/* fallbacks[] of the kernel, MIGRATE_RESERVE / HIGHATOMIC / CMA not modelled. */
static const unsigned fallbacks[MM_MT_NR][2] = {
    [MM_MT_UNMOVABLE] = {MM_MT_RECLAIMABLE, MM_MT_MOVABLE},
    [MM_MT_MOVABLE] = {MM_MT_RECLAIMABLE, MM_MT_UNMOVABLE},
    [MM_MT_RECLAIMABLE] = {MM_MT_UNMOVABLE, MM_MT_MOVABLE},
};

/* ---- Watermarks --------------------------------------------------------------------------- */

static uint64_t int_sqrt64(uint64_t x)
{
	uint64_t r = (uint64_t)sqrt((double)x);

	while (r * r > x)
		r--;
	while ((r + 1) * (r + 1) <= x)
		r++;
	return r;
}

/* init_per_zone_wmark_min: the sqrt rule (khugepaged's raise is applied by setup_watermarks). */
static uint64_t default_min_free_kbytes(const struct mm *mm)
{
	uint64_t lowmem_kb = (uint64_t)mm->nr_frames * (MM_PAGE_SIZE / 1024);
	uint64_t kb = int_sqrt64(lowmem_kb * 16);
	uint64_t cap = era_modern(mm) ? 262144 : 65536;

	if (kb < 128)
		kb = 128;
	if (kb > cap)
		kb = cap;
	return kb;
}

/* set_recommended_min_free_kbytes (3.1-3.3 mm/huge_memory.c, 6.12 mm/khugepaged.c, the same
 * text): pageblock_nr_pages * nr_zones * 2 + pageblock_nr_pages * nr_zones * MIGRATE_PCPTYPES^2,
 * one zone, MIGRATE_PCPTYPES = 3; capped at 5 % of memory (nr_free_buffer_pages() / 20). */
static uint64_t thp_recommended_min_free_kbytes(const struct mm *mm)
{
	uint64_t pages = (uint64_t)MM_HPAGE_NR * 1 * 2 + (uint64_t)MM_HPAGE_NR * 1 * 3 * 3;

	if (pages > mm->nr_frames / 20)
		pages = mm->nr_frames / 20;
	return pages * (MM_PAGE_SIZE / 1024);
}

void setup_watermarks(struct mm *mm)
{
	uint64_t kb =
	    mm->cfg.min_free_kbytes ? mm->cfg.min_free_kbytes : default_min_free_kbytes(mm);
	uint32_t min, step;

	/* 3.x hugepage_init / start_khugepaged and 6.12 start_stop_khugepaged: raised while THP
	 * is enabled (set_recommended_min_free_kbytes returns at once under enabled=never) */
	if (thp_pmd_enabled(&mm->cfg.policy)) {
		uint64_t rec = thp_recommended_min_free_kbytes(mm);

		if (rec > kb)
			kb = rec;
	}
	mm->min_free_kbytes = kb;
	min = (uint32_t)(kb / (MM_PAGE_SIZE / 1024));
	if (min > mm->nr_frames / 4)
		min = mm->nr_frames / 4; /* a tiny pool must stay usable */
	mm->wmark[WMARK_MIN] = min;
	if (era_modern(mm)) {
		uint64_t scale = (uint64_t)mm->nr_frames * mm->cfg.watermark_scale_factor / 10000;

		step = (uint32_t)(scale > min / 4 ? scale : min / 4);
		mm->wmark[WMARK_LOW] = min + step;
		mm->wmark[WMARK_HIGH] = min + 2 * step;
	} else {
		mm->wmark[WMARK_LOW] = min + min / 4;
		mm->wmark[WMARK_HIGH] = min + min / 2;
	}
	mm->watermark_boost = 0;
}

uint32_t wmark_pages(const struct mm *mm, enum wmark w)
{
	return mm->wmark[w] + mm->watermark_boost;
}

/* __zone_watermark_ok for the era: 3.x decays the mark per order below the request, 6.12 only
 * asks for one free block of at least the order on a list of the usable migratetypes. */
/* NR_FREE_PAGES_BLOCKS (6.15, vm.defrag_mode): free pages in free blocks of at least pageblock
 * order, the ones an allocation can take without polluting a block of another type. */
uint32_t free_pages_blocks(const struct mm *mm)
{
	uint32_t n = 0;

	for (unsigned o = MM_PAGEBLOCK_ORDER; o <= MM_MAX_ORDER; o++)
		n += mm->nr_free[o] << o;
	return n;
}

/* __zone_watermark_ok against NR_FREE_PAGES_BLOCKS instead of NR_FREE_PAGES (6.15
 * mm/compaction.c __compact_finished / compaction_suit_allocation_order for kcompactd under
 * defrag_mode, mm/vmscan.c pgdat_balanced): the mark met in whole free pageblocks. */
bool zone_watermark_ok_blocks(struct mm *mm, unsigned order, uint32_t mark)
{
	int64_t free = (int64_t)free_pages_blocks(mm) - ((1 << order) - 1);

	if (free <= (int64_t)mark)
		return false;
	for (unsigned o = order; o <= MM_MAX_ORDER; o++)
		if (mm->nr_free[o])
			return true;
	return false;
}

/* __zone_watermark_ok on one zone's free area; mark includes the zone's lowmem_reserve. */
static bool area_watermark_ok(const struct mm *mm, const struct free_area *fa, unsigned order,
			      uint32_t mark)
{
	int64_t free = (int64_t)fa->nr_free_pages - ((1 << order) - 1);
	int64_t min = mark;

	if (free <= min)
		return false;
	if (!order)
		return true;
	if (era_modern(mm)) {
		for (unsigned o = order; o <= MM_MAX_ORDER; o++)
			if (fa->nr_free[o])
				return true;
		return false;
	}
	for (unsigned o = 0; o < order; o++) {
		free -= (int64_t)fa->nr_free[o] << o;
		min >>= 1;
		if (free <= min)
			return false;
	}
	return true;
}

/* The main zone's (every caller but the zonelist walk asks about it). */
bool zone_watermark_ok(struct mm *mm, unsigned order, uint32_t mark, unsigned alloc_flags)
{
	(void)alloc_flags;
	return area_watermark_ok(mm, &mm->area, order, mark);
}

/* ---- Free lists ----------------------------------------------------------------------------- */

/* Queue a free block at the head or the tail of its list (the list's logical order is the
 * caller's business: see add_free_block). */
static void list_free_block(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt, bool tail)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	uint32_t head = sentinel(mm, free_list_of(mm, pfn, order, mt));
	struct lower_zone *z = lower_zone_of(mm, pfn);
	struct free_area *fa = z ? &z->area : &mm->area;

	f->state = FS_FREE;
	f->flags = 0;
	f->owner = 0;
	f->order = (uint8_t)(order | (mt << ORDER_MT_SHIFT));
	if (tail)
		flist_add_tail(mm, head, pfn);
	else
		flist_add(mm, head, pfn);
	fa->nr_free[order]++;
	fa->nr_free_mt[order][mt]++;
	fa->nr_free_pages += 1U << order;
	mm->pb_nbuddy[pfn >> MM_PAGEBLOCK_ORDER]++;
}

/* Queue a free block at the tail of its list, counted, as it is (mm_repair relinks every block
 * in pfn order before the never-touched ones, which keeps the logical list as it reads). */
void link_free_block(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt)
{
	list_free_block(mm, pfn, order, mt, true);
}

/* The list (MM_MAX_ORDER, MOVABLE) is, logically, its linked entries followed by the
 * never-touched blocks [fresh_pfn, fresh_end) in ascending pfn order (where memblock_free_all
 * queued them, at the tail, and where every later head insertion leaves them). Taking the
 * first of them appends it to the linked part: the logical list does not change. */
bool materialise_free(struct mm *mm)
{
	uint32_t pfn = mm->fresh_pfn, n = 1U << MM_MAX_ORDER;

	if (pfn >= mm->fresh_end)
		return false;
	mm->fresh_pfn += n;
	/* it was counted from the start: list_free_block counts it again */
	mm->nr_free[MM_MAX_ORDER]--;
	mm->nr_free_mt[MM_MAX_ORDER][MM_MT_MOVABLE]--;
	mm->nr_free_pages -= n;
	init_free_frames(mm, pfn, n);
	list_free_block(mm, pfn, MM_MAX_ORDER, MM_MT_MOVABLE, true);
	return true;
}

void materialise_all(struct mm *mm)
{
	while (materialise_free(mm))
		;
}

static bool holds_fresh(const struct mm *mm, unsigned order, unsigned mt)
{
	return order == MM_MAX_ORDER && mt == MM_MT_MOVABLE && mm->fresh_pfn < mm->fresh_end;
}

uint32_t free_list_first(struct mm *mm, unsigned order, unsigned mt)
{
	uint32_t head = sentinel(mm, SENT_FREE(order, mt));

	if (flist_empty(mm, head) && !(holds_fresh(mm, order, mt) && materialise_free(mm)))
		return MM_NO_PFN;
	return pfn_frame(mm, head)->next;
}

/* The zone an allocation takes from: -1 the main zone, else lower zone zi. */
static struct free_area *zone_area(struct mm *mm, int zi)
{
	return zi < 0 ? &mm->area : &mm->lower[zi].area;
}

static uint32_t zone_list_first(struct mm *mm, int zi, unsigned order, unsigned mt)
{
	uint32_t head;

	if (zi < 0)
		return free_list_first(mm, order, mt);
	head = sentinel(mm, SENT_LOWER_FREE((unsigned)zi, order, mt));
	return flist_empty(mm, head) ? MM_NO_PFN : pfn_frame(mm, head)->next;
}

/* A block queued at the tail of the list that holds never-touched blocks goes after them:
 * they are linked first. */
void add_free_block(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt, bool tail)
{
	if (tail && holds_fresh(mm, order, mt))
		materialise_all(mm);
	list_free_block(mm, pfn, order, mt, tail);
}

void del_free_block(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	unsigned order = frame_order(f), mt = frame_list_mt(f);
	struct lower_zone *z = lower_zone_of(mm, pfn);
	struct free_area *fa = z ? &z->area : &mm->area;

	flist_del(mm, pfn);
	fa->nr_free[order]--;
	fa->nr_free_mt[order][mt]--;
	fa->nr_free_pages -= 1U << order;
	mm->pb_nbuddy[pfn >> MM_PAGEBLOCK_ORDER]--;
	f->order = ORDER_TAIL;
}

/* Modern compaction_capture: a block of exactly the compacting task's order, freed while it
 * compacts, goes straight to it instead of onto a free list. */
static bool compaction_capture(struct mm *mm, struct capture_control *capc, uint32_t pfn,
			       unsigned order)
{
	if (!capc || capc->pfn != MM_NO_PFN || order != capc->order || !era_modern(mm))
		return false;
	capc->pfn = pfn;
	return true;
}

/* buddy_merge_likely (6.1 and 6.12 mm/page_alloc.c; since 2.6.37): is the buddy of the
 * order + 1 block holding the free block (pfn, order) itself a free block of order + 1, so that
 * the block may merge soon? Never below the top two orders ("order >= MAX_ORDER - 2" in 6.1,
 * "order >= MAX_PAGE_ORDER - 1" in 6.12: false). */
bool buddy_merge_likely(struct mm *mm, uint32_t pfn, unsigned order)
{
	uint32_t combined, higher;

	if (order >= MM_MAX_ORDER - 1)
		return false;
	combined = pfn & ~(1U << order);
	higher = combined ^ (1U << (order + 1));
	return higher + (1U << (order + 1)) <= mm->nr_frames &&
	       frame_is_buddy(pfn_frame(mm, higher)) &&
	       frame_order(pfn_frame(mm, higher)) == order + 1;
}

/* __free_one_page: merge with free buddies as far as possible, then queue the block. A block
 * whose next-higher buddy is free goes to the list tail (it may merge soon), as the kernel
 * does since 2.6.37. */
void free_one_block(struct mm *mm, uint32_t pfn, unsigned order, struct capture_control *capc)
{
	unsigned mt = pageblock_mt(mm, pfn);

	while (order < MM_MAX_ORDER) {
		uint32_t buddy = pfn ^ (1U << order);
		struct mm_frame *b;

		if (compaction_capture(mm, capc, pfn, order))
			return;
		if (buddy + (1U << order) > mm->nr_frames)
			break;
		b = pfn_frame(mm, buddy);
		if (!frame_is_buddy(b) || frame_order(b) != order)
			break;
		del_free_block(mm, buddy);
		pfn_frame(mm, pfn > buddy ? pfn : buddy)->order = ORDER_TAIL;
		pfn &= ~(1U << order);
		order++;
	}
	if (compaction_capture(mm, capc, pfn, order))
		return;
	add_free_block(mm, pfn, order, mt, buddy_merge_likely(mm, pfn, order));
}

/* Return 2^order allocated frames to the buddy allocator. */
void free_frames(struct mm *mm, uint32_t pfn, unsigned order, struct capture_control *capc)
{
	for (uint32_t i = 0; i < (1U << order); i++) {
		struct mm_frame *f = pfn_frame(mm, pfn + i);

		f->state = FS_FREE;
		f->owner = 0;
		f->flags = 0;
		f->order = ORDER_TAIL;
		f->hnext = 0;
	}
	count_event(mm, MM_STAT_PGFREE, 1U << order);
	free_one_block(mm, pfn, order, capc);
}

/* Give allocated frames their state and consecutive owner cookies. */
void mark_allocated(struct mm *mm, uint32_t pfn, unsigned order, enum frame_state st,
		    uint64_t owner)
{
	for (uint32_t i = 0; i < (1U << order); i++) {
		struct mm_frame *f = pfn_frame(mm, pfn + i);

		f->state = (uint8_t)st;
		f->owner = owner ? owner + i : 0;
		f->flags = 0;
		f->order = ORDER_TAIL;
		f->hnext = 0;
		f->next = f->prev = MM_NO_PFN;
	}
}

/* expand: split a block of order high down to order low, queueing the upper halves. */
static void expand(struct mm *mm, uint32_t pfn, unsigned low, unsigned high, unsigned mt)
{
	while (high > low) {
		high--;
		add_free_block(mm, pfn + (1U << high), high, mt, false);
	}
}

static uint32_t rmqueue_smallest(struct mm *mm, int zi, unsigned order, unsigned mt)
{
	for (unsigned o = order; o <= MM_MAX_ORDER; o++) {
		uint32_t pfn = zone_list_first(mm, zi, o, mt);

		if (pfn == MM_NO_PFN)
			continue;
		del_free_block(mm, pfn);
		expand(mm, pfn, order, o, mt);
		return pfn;
	}
	return MM_NO_PFN;
}

/* prep_move_freepages_block: count the free frames of pfn's pageblock and its allocated frames
 * that are movable. */
static void count_block(struct mm *mm, uint32_t pfn, uint32_t *free_pages, uint32_t *movable)
{
	uint32_t start = pageblock_start(pfn), end = start + MM_HPAGE_NR;

	*free_pages = *movable = 0;
	for (uint32_t p = start; p < end;) {
		struct mm_frame *f = pfn_frame(mm, p);

		if (frame_is_buddy(f)) {
			*free_pages += 1U << frame_order(f);
			p += 1U << frame_order(f);
			continue;
		}
		if (f->state == FS_ANON || f->state == FS_FILE)
			(*movable)++;
		p++;
	}
}

/* move_freepages_block: relist every free block inside pfn's pageblock on mt's lists. Returns
 * the free frames moved. */
static uint32_t move_freepages_block(struct mm *mm, uint32_t pfn, unsigned mt)
{
	uint32_t start = pageblock_start(pfn), end = start + MM_HPAGE_NR, moved = 0;

	for (uint32_t p = start; p < end;) {
		struct mm_frame *f = pfn_frame(mm, p);
		unsigned o;

		if (!frame_is_buddy(f)) {
			p++;
			continue;
		}
		o = frame_order(f);
		del_free_block(mm, p);
		add_free_block(mm, p, o, mt, false);
		moved += 1U << o;
		p += 1U << o;
	}
	return moved;
}

/* change_pageblock_range: a block of order >= pageblock order takes its pageblocks over. */
static void change_pageblock_range(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt)
{
	for (uint32_t p = pfn; p < pfn + (1U << order); p += MM_HPAGE_NR)
		set_pageblock_mt(mm, p, mt);
}

static bool can_steal_fallback(const struct mm *mm, unsigned order, unsigned start_mt)
{
	if (order >= MM_PAGEBLOCK_ORDER / 2 || start_mt == MM_MT_RECLAIMABLE)
		return true;
	return era_modern(mm) && start_mt == MM_MT_UNMOVABLE;
}

/* boost_watermark (6.12): raise the marks by a pageblock, capped at high * boost factor. */
static void boost_watermark(struct mm *mm)
{
	uint64_t max_boost = (uint64_t)mm->wmark[WMARK_HIGH] * 15000 / 10000;

	if ((uint64_t)MM_HPAGE_NR * 4 > mm->nr_frames || !max_boost)
		return;
	if (max_boost < MM_HPAGE_NR)
		max_boost = MM_HPAGE_NR;
	mm->watermark_boost += MM_HPAGE_NR;
	if (mm->watermark_boost > max_boost)
		mm->watermark_boost = (uint32_t)max_boost;
}

static void trace_extfrag(struct mm *mm, void *call, uint32_t pfn, unsigned order,
			  unsigned fallback_order, bool owned)
{
	count_event(mm, MM_STAT_EXTFRAG_STEAL, 1);
	mm_trace(mm, call, MM_TRACE_EXTFRAG, order, pfn, order, fallback_order, owned);
}

/* 3.x __rmqueue_fallback: largest block first; steal the whole block's free pages when the
 * block is big or the request is RECLAIMABLE, relabel the block if half of it moved. */
static uint32_t rmqueue_fallback_3x(struct mm *mm, int zi, unsigned order, unsigned start_mt,
				    void *call)
{
	for (int o = MM_MAX_ORDER; o >= (int)order; o--) {
		for (unsigned i = 0; i < 2; i++) {
			unsigned mt = fallbacks[start_mt][i], list_mt = mt;
			uint32_t pfn = zone_list_first(mm, zi, (unsigned)o, mt);
			bool owned = false;

			if (pfn == MM_NO_PFN)
				continue;
			if (o >= MM_PAGEBLOCK_ORDER / 2 || start_mt == MM_MT_RECLAIMABLE) {
				uint32_t moved = move_freepages_block(mm, pfn, start_mt);

				if (moved >= (1U << (MM_PAGEBLOCK_ORDER - 1))) {
					set_pageblock_mt(mm, pfn, start_mt);
					owned = true;
				}
				list_mt = start_mt;
			}
			del_free_block(mm, pfn);
			if (o >= MM_PAGEBLOCK_ORDER) {
				change_pageblock_range(mm, pfn, (unsigned)o, start_mt);
				owned = true;
			}
			expand(mm, pfn, order, (unsigned)o, list_mt);
			trace_extfrag(mm, call, pfn, order, (unsigned)o, owned);
			return pfn;
		}
	}
	return MM_NO_PFN;
}

/* find_suitable_fallback: the first fallback list of this order that has a block. */
static int find_suitable_fallback(struct mm *mm, int zi, unsigned order, unsigned start_mt,
				  bool only_stealable, bool *can_steal)
{
	const struct free_area *fa = zone_area(mm, zi);

	*can_steal = false;
	if (!fa->nr_free[order])
		return -1;
	for (unsigned i = 0; i < 2; i++) {
		unsigned mt = fallbacks[start_mt][i];

		if (!fa->nr_free_mt[order][mt])
			continue;
		*can_steal = can_steal_fallback(mm, order, start_mt);
		if (!only_stealable || *can_steal)
			return (int)mt;
	}
	return -1;
}

/* steal_suitable_fallback's claim test (6.1 and 6.12): free pages plus those "alike" the request
 * (a MOVABLE request: the movable ones; another falling back to a MOVABLE block: the
 * non-movable ones) make at least half the pageblock. */
static bool can_claim_block(struct mm *mm, uint32_t pfn, unsigned start_mt, unsigned block_mt)
{
	uint32_t free_pages, movable, alike;

	count_block(mm, pfn, &free_pages, &movable);
	if (start_mt == MM_MT_MOVABLE)
		alike = movable;
	else if (block_mt == MM_MT_MOVABLE)
		alike = MM_HPAGE_NR - (free_pages + movable);
	else
		alike = 0;
	return free_pages + alike >= (1U << (MM_PAGEBLOCK_ORDER - 1));
}

/* A fallback that steals below a pageblock boosts the zone's watermark (6.1 and 6.12
 * steal_suitable_fallback: boost_watermark, ZONE_BOOSTED_WATERMARK wakes kswapd after the
 * allocation); a lower zone's boost is not modelled (zones.c). */
static void boost_for_steal(struct mm *mm, int zi, unsigned alloc_flags)
{
	if (zi >= 0)
		return;
	boost_watermark(mm);
	if (alloc_flags & ALLOC_KSWAPD)
		mm->boost_wake = true;
}

/* 6.12 steal_suitable_fallback: take over big blocks, boost the watermark, and claim the
 * pageblock when at least half of it is free or compatible; otherwise take just the page. */
static uint32_t steal_suitable_fallback(struct mm *mm, int zi, uint32_t pfn, unsigned o,
					unsigned order, unsigned start_mt, unsigned alloc_flags,
					bool whole_block, void *call)
{
	unsigned block_mt = pageblock_mt(mm, pfn);

	if (o >= MM_PAGEBLOCK_ORDER) {
		del_free_block(mm, pfn);
		change_pageblock_range(mm, pfn, o, start_mt);
		expand(mm, pfn, order, o, start_mt);
		trace_extfrag(mm, call, pfn, order, o, true);
		return pfn;
	}
	boost_for_steal(mm, zi, alloc_flags);
	if (whole_block) {
		if (can_claim_block(mm, pfn, start_mt, block_mt)) {
			move_freepages_block(mm, pfn, start_mt);
			set_pageblock_mt(mm, pfn, start_mt);
			trace_extfrag(mm, call, pfn, order, o, true);
			return rmqueue_smallest(mm, zi, order, start_mt);
		}
	}
	del_free_block(mm, pfn);
	expand(mm, pfn, order, o, block_mt);
	trace_extfrag(mm, call, pfn, order, o, false);
	return pfn;
}

/* 6.1 steal_suitable_fallback (mm/page_alloc.c), before 6.10's freelist migratetype hygiene:
 * with whole_block, move_freepages_block moves every free page of the block to start_mt's lists
 * whether or not the block is claimed (claimed: free + alike >= half of it); without, the one
 * free block goes to start_mt's list (move_to_free_list). Either way __rmqueue's "goto retry"
 * then takes the smallest start_mt block, so what the split leaves stays on start_mt's lists,
 * where 6.12 leaves it on the block's own (page_del_and_expand). */
static uint32_t steal_suitable_fallback_6_1(struct mm *mm, int zi, uint32_t pfn, unsigned o,
					    unsigned order, unsigned start_mt, unsigned alloc_flags,
					    bool whole_block, void *call)
{
	unsigned block_mt = pageblock_mt(mm, pfn);
	bool owned = false;

	if (o < MM_PAGEBLOCK_ORDER)
		boost_for_steal(mm, zi, alloc_flags);
	if (o >= MM_PAGEBLOCK_ORDER) {
		change_pageblock_range(mm, pfn, o, start_mt);
		owned = true;
	} else if (whole_block) {
		owned = can_claim_block(mm, pfn, start_mt, block_mt); /* counted before the move */
		move_freepages_block(mm, pfn, start_mt);
		if (owned)
			set_pageblock_mt(mm, pfn, start_mt);
		trace_extfrag(mm, call, pfn, order, o, owned);
		return rmqueue_smallest(mm, zi, order, start_mt);
	}
	del_free_block(mm, pfn);
	expand(mm, pfn, order, o, start_mt);
	trace_extfrag(mm, call, pfn, order, o, owned);
	return pfn;
}

/* 6.12 __rmqueue_fallback: largest stealable block first (only whole pageblocks under
 * ALLOC_NOFRAGMENT); a MOVABLE request that cannot steal takes the smallest fallback block. */
static uint32_t rmqueue_fallback_modern(struct mm *mm, int zi, unsigned order, unsigned start_mt,
					unsigned alloc_flags, void *call)
{
	unsigned min_order = order;
	bool can_steal;
	int fmt = -1, o;

	if (order < MM_PAGEBLOCK_ORDER && (alloc_flags & ALLOC_NOFRAGMENT))
		min_order = MM_PAGEBLOCK_ORDER;
	for (o = MM_MAX_ORDER; o >= (int)min_order; o--) {
		fmt = find_suitable_fallback(mm, zi, (unsigned)o, start_mt, false, &can_steal);
		if (fmt < 0)
			continue;
		if (!can_steal && start_mt == MM_MT_MOVABLE && (unsigned)o > order)
			break;
		goto do_steal;
	}
	if (alloc_flags & ALLOC_NOFRAGMENT)
		return MM_NO_PFN;
	for (o = (int)order; o <= MM_MAX_ORDER; o++) {
		fmt = find_suitable_fallback(mm, zi, (unsigned)o, start_mt, false, &can_steal);
		if (fmt >= 0)
			break;
	}
	if (fmt < 0)
		return MM_NO_PFN;
do_steal:
	if (era_6_1(mm)) /* 6.1 __rmqueue_fallback: the same search, 6.1's steal */
		return steal_suitable_fallback_6_1(
		    mm, zi, zone_list_first(mm, zi, (unsigned)o, (unsigned)fmt), (unsigned)o, order,
		    start_mt, alloc_flags, can_steal, call);
	return steal_suitable_fallback(mm, zi, zone_list_first(mm, zi, (unsigned)o, (unsigned)fmt),
				       (unsigned)o, order, start_mt, alloc_flags, can_steal, call);
}

/* __rmqueue in zone zi (-1: the main zone): own migratetype first, then steal. */
static uint32_t rmqueue_zone(struct mm *mm, int zi, unsigned order, enum mm_migratetype mt,
			     unsigned alloc_flags, void *call)
{
	uint32_t pfn = rmqueue_smallest(mm, zi, order, mt);

	if (pfn != MM_NO_PFN)
		return pfn;
	if (era_modern(mm))
		return rmqueue_fallback_modern(mm, zi, order, mt, alloc_flags, call);
	return rmqueue_fallback_3x(mm, zi, order, mt, call);
}

uint32_t rmqueue(struct mm *mm, unsigned order, enum mm_migratetype mt, unsigned alloc_flags,
		 void *call)
{
	return rmqueue_zone(mm, -1, order, mt, alloc_flags, call);
}

/* May zone zi (-1: the main zone) give 2^order pages at the mark alloc_flags names? A lower
 * zone is checked against its own watermark plus its lowmem_reserve for allocations whose
 * highest usable zone is the main one (6.12 __zone_watermark_ok: "free_pages <= min +
 * z->lowmem_reserve[highest_zoneidx]"); its watermark is not boosted here. */
static bool zonelist_watermark_ok(struct mm *mm, int zi, unsigned order, unsigned alloc_flags)
{
	enum wmark w = (enum wmark)(alloc_flags & ALLOC_WMARK_MASK);
	const struct lower_zone *z;

	if (alloc_flags & ALLOC_NO_WATERMARKS)
		return true;
	if (zi < 0)
		return zone_watermark_ok(mm, order, wmark_pages(mm, w), alloc_flags);
	z = &mm->lower[zi];
	return area_watermark_ok(mm, &z->area, order, z->wmark[w] + z->lowmem_reserve);
}

/* get_page_from_freelist: the zonelist in order (the main zone, then the lower zones highest
 * first: 6.12 mm/page_alloc.c build_zonerefs_node), each zone whose watermark named by
 * alloc_flags holds (unless ALLOC_NO_WATERMARKS) tried with the buddy allocator, the first
 * success taken (for_next_zone_zonelist_nodemask, zone_watermark_fast, rmqueue). Modern
 * kernels walk the zonelist again without ALLOC_NOFRAGMENT before giving up, except under
 * vm.defrag_mode (6.15 get_page_from_freelist: "if (no_fallback && !defrag_mode)"): then only
 * the slow path drops it, once reclaim and compaction failed (slowpath.c). */
uint32_t get_page_from_freelist(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags)
{
	void *call = ac->fc ? ac->fc->call : NULL;
	uint32_t pfn = MM_NO_PFN;
	bool retry = (alloc_flags & ALLOC_NOFRAGMENT) && !mm->cfg.policy.defrag_mode;

	mm_charge(mm, call, MM_COST_BUDDY_OP, 1);
	for (unsigned pass = 0; pass < 1U + retry && pfn == MM_NO_PFN; pass++) {
		if (pass)
			alloc_flags &= ~ALLOC_NOFRAGMENT;
		for (int zi = -1; zi < (int)mm->nr_lower && pfn == MM_NO_PFN; zi++)
			if (zonelist_watermark_ok(mm, zi, ac->order, alloc_flags))
				pfn = rmqueue_zone(mm, zi, ac->order, ac->mt, alloc_flags, call);
	}
	if (pfn != MM_NO_PFN)
		count_event(mm, MM_STAT_PGALLOC, 1U << ac->order);
	if (mm->boost_wake) {
		mm->boost_wake = false;
		wakeup_kswapd(mm, 0, 0);
	}
	return pfn;
}

/* __fragmentation_index: 0..1000 (0 = lack of memory, 1000 = fragmentation), -1000 when a
 * block of the order is free. */
int fragmentation_index(struct mm *mm, unsigned order)
{
	uint64_t total = 0, free_pages = 0, suitable = 0;

	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) {
		total += mm->nr_free[o];
		free_pages += (uint64_t)mm->nr_free[o] << o;
		if (o >= order)
			suitable += (uint64_t)mm->nr_free[o] << (o - order);
	}
	if (!total)
		return 0;
	if (suitable)
		return -1000;
	return (int)(1000 - (1000 + free_pages * 1000 / (1ULL << order)) / total);
}
