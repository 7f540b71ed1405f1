/* Page reclaim of the page cache: the inactive/active file LRU, direct reclaim and kswapd.
 *
 * Mirrors mm/vmscan.c: shrink_inactive_list / shrink_page_list (clean unlocked page-cache
 * frames are freed; dirty and writeback frames are kept), shrink_active_list (deactivation when
 * the inactive list is the smaller), and do_try_to_free_pages' priority loop with
 * nr_to_reclaim = SWAP_CLUSTER_MAX. Anonymous memory is never reclaimed (no swap is modelled).
 */
#include "mm/internal.h"

#define SWAP_CLUSTER_MAX 32
#define DEF_PRIORITY 12

struct scan_control {
	uint32_t nr_to_reclaim;
	uint32_t nr_scanned;
	uint32_t nr_reclaimed;
	bool kswapd;
	void *call;
};

static bool frame_reclaimable(const struct mm_frame *f)
{
	return !(f->flags & (FF_DIRTY | FF_LOCKED | FF_GONE | FF_ISOLATED)) && !frame_under_wb(f);
}

/* shrink_active_list: move up to nr frames from the active tail to the inactive head. */
static void shrink_active_list(struct mm *mm, uint32_t nr)
{
	uint32_t head = sentinel(mm, SENT_LRU_ACTIVE);

	while (nr-- && !flist_empty(mm, head)) {
		uint32_t pfn = pfn_frame(mm, head)->prev;
		struct mm_frame *f = pfn_frame(mm, pfn);

		lru_del(mm, pfn);
		f->flags &= (uint8_t)~(FF_ACTIVE | FF_REFERENCED);
		lru_add(mm, pfn);
	}
}

/* Free one clean page-cache frame taken off the LRU (__remove_mapping + free). */
static void reclaim_frame(struct mm *mm, uint32_t pfn)
{
	pc_delete(mm, pfn);
	frame_free_owned(mm, pfn, NULL);
}

/* shrink_inactive_list + shrink_page_list on up to nr frames from the inactive tail. Frames
 * that cannot be reclaimed now (dirty, under writeback, locked) rotate to the head. */
static void shrink_inactive_list(struct mm *mm, struct scan_control *sc, uint32_t nr)
{
	uint32_t head = sentinel(mm, SENT_LRU_INACTIVE);

	while (nr-- && !flist_empty(mm, head)) {
		uint32_t pfn = pfn_frame(mm, head)->prev;
		struct mm_frame *f = pfn_frame(mm, pfn);

		sc->nr_scanned++;
		lru_del(mm, pfn);
		f->flags &= (uint8_t)~FF_REFERENCED;
		if (!frame_reclaimable(f)) {
			lru_add(mm, pfn);
			continue;
		}
		reclaim_frame(mm, pfn);
		sc->nr_reclaimed++;
	}
	mm_charge(mm, sc->call, MM_COST_RECLAIM_PAGE, sc->nr_scanned);
}

/* One priority level of shrink_node: balance the lists, then scan lru_size >> priority. */
static void shrink_lruvec(struct mm *mm, struct scan_control *sc, int priority)
{
	uint32_t nr = mm->nr_lru[0] >> priority;

	if (nr < SWAP_CLUSTER_MAX)
		nr = SWAP_CLUSTER_MAX;
	if (mm->nr_lru[1] > mm->nr_lru[0])
		shrink_active_list(mm, SWAP_CLUSTER_MAX);
	while (nr && sc->nr_reclaimed < sc->nr_to_reclaim && mm->nr_lru[0]) {
		uint32_t batch = nr < SWAP_CLUSTER_MAX ? nr : SWAP_CLUSTER_MAX;

		shrink_inactive_list(mm, sc, batch);
		nr -= batch;
	}
}

static void do_try_to_free_pages(struct mm *mm, struct scan_control *sc)
{
	for (int priority = DEF_PRIORITY; priority >= 0; priority--) {
		shrink_lruvec(mm, sc, priority);
		if (sc->nr_reclaimed >= sc->nr_to_reclaim || !mm->nr_lru[0])
			break;
		if (mm->nr_lru[1])
			shrink_active_list(mm, SWAP_CLUSTER_MAX);
	}
}

/* try_to_free_pages: direct reclaim for an allocation that failed at MIN. Returns the number
 * of frames reclaimed. */
uint32_t try_to_free_pages(struct mm *mm, struct alloc_ctx *ac)
{
	struct scan_control sc = {
		.nr_to_reclaim = SWAP_CLUSTER_MAX,
		.call = ac->fc ? ac->fc->call : NULL,
	};

	count_event(mm, MM_STAT_ALLOCSTALL, 1);
	do_try_to_free_pages(mm, &sc);
	count_event(mm, MM_STAT_PGSCAN_DIRECT, sc.nr_scanned);
	count_event(mm, MM_STAT_PGSTEAL_DIRECT, sc.nr_reclaimed);
	if (ac->fc && ac->fc->rec)
		ac->fc->rec->reclaimed += sc.nr_reclaimed;
	return sc.nr_reclaimed;
}
