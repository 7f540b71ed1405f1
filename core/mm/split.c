/* A THP after its fault: the PMD split that leaves the folio whole, the deferred split queue and
 * the THP shrinker (6.12), and the immediate split of 3.x.
 *
 * Mirrors mm/huge_memory.c of Linux 6.12: __split_huge_pmd (thp_split_pmd),
 * deferred_split_folio (thp_deferred_split_page, PG_partially_mapped, nr_anon_partially_mapped),
 * deferred_split_count / deferred_split_scan and thp_underused (Usama Arif's "mm: split
 * underused THPs", dafff3f4c850), split_folio (thp_split_page); and mm/shrinker.c
 * do_shrink_slab's scan volume (seeks = DEFAULT_SEEKS 2, batch SHRINK_BATCH 128, the carried
 * nr_deferred). In 3.x (mm/huge_memory.c of 3.1: split_huge_page from zap_pmd_range) a
 * partial unmap splits the whole THP at once: that is mm_anon_split without deferred_split.
 *
 * A "PTE-mapped THP" keeps its 512 frames FS_HUGE with FF_THP_PTE on the head; a subpage its
 * owner freed is FF_THP_UNMAPPED and counted in the head's hnext (unused by FS_HUGE frames).
 * The queue links THP heads through their (otherwise unused) list links; partially mapped mTHP
 * folios (mthp.c) share it, as 6.12's one deferred split queue holds every large folio.
 */
#include <errno.h>

#include "mm/internal.h"

#define SHRINK_BATCH  128 /* include/linux/shrinker.h */
#define DEFAULT_SEEKS 2

void thp_queue_add(struct mm *mm, uint32_t head, bool partial)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	if (!(hf->flags & FF_THP_QUEUED)) {
		flist_add_tail(mm, sentinel(mm, SENT_SPLIT_QUEUE), head);
		hf->flags |= FF_THP_QUEUED;
		mm->nr_split_queue++;
	}
	if (partial && !(hf->flags & FF_THP_PARTIAL)) {
		hf->flags |= FF_THP_PARTIAL;
		if (hf->state == FS_MTHP) { /* an mTHP folio (mthp.c) */
			mm->nr_mthp_partial[mthp_order(hf)]++;
			count_mthp_event(mm, mthp_order(hf), MTHP_EV_SPLIT_DEFERRED);
			return;
		}
		mm->nr_partially_mapped++;
		count_event(mm, MM_STAT_THP_DEFERRED_SPLIT_PAGE, 1);
		count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_SPLIT_DEFERRED);
	}
}

void thp_queue_del(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	if (!(hf->flags & FF_THP_QUEUED))
		return;
	flist_del(mm, head);
	hf->flags &= (uint8_t)~FF_THP_QUEUED;
	mm->nr_split_queue--;
}

void thp_forget(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	thp_queue_del(mm, head);
	if (hf->flags & FF_THP_PTE)
		mm->nr_huge_pte -= MM_HPAGE_NR;
	if (hf->flags & FF_THP_PARTIAL)
		mm->nr_partially_mapped--;
	hf->flags &= (uint8_t) ~(FF_THP_PTE | FF_THP_PARTIAL);
}

/* __split_huge_pmd: the PMD goes, the folio stays whole and mapped by 512 PTEs. */
bool thp_pmd_split(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	count_event(mm, MM_STAT_THP_SPLIT_PMD, 1);
	if (hf->flags & FF_THP_PTE)
		return false;
	hf->flags |= FF_THP_PTE;
	mm->nr_huge_pte += MM_HPAGE_NR;
	return true;
}

void thp_new_mapped(struct mm *mm, uint32_t head)
{
	const struct mm_policy *p = &mm->cfg.policy;

	/* 6.12 do_huge_pmd_anonymous_page / collapse_huge_page: deferred_split_folio(folio,
	 * false) unless shrink_underused is off */
	if (p->deferred_split && p->shrink_underused)
		thp_queue_add(mm, head, false);
}

/* The end of a folio's split: the subpages marked in `unmapped` (bit i: head + i) go back to
 * the buddy, the others stay their owners' base frames. Returns the frames freed. The subpages
 * are plain anon frames by now, freed in ascending order, so each run of unmapped ones goes
 * back as one (free_plain_run: the buddy ends as the page-by-page frees leave it). */
unsigned split_free_unmapped(struct mm *mm, uint32_t head, uint32_t n, const uint64_t *unmapped)
{
	unsigned freed = 0;

	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;

		while (j < n && (unmapped[j / 64] & (1ULL << (j % 64))))
			j++;
		if (j == i) {
			i++;
			continue;
		}
		free_plain_run(mm, head + i, head + j);
		freed += j - i;
		i = j;
	}
	return freed;
}

/* split_folio of a THP: unmapped subpages go back to the buddy, the rest become base anon
 * frames of their owner. Returns the frames freed. */
static unsigned split_folio_locked(struct mm *mm, uint32_t head)
{
	uint64_t unmapped[MM_HPAGE_NR / 64] = {0};

	thp_forget(mm, head);
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		struct mm_frame *f = pfn_frame(mm, head + i);

		if (f->flags & FF_THP_UNMAPPED)
			unmapped[i / 64] |= 1ULL << (i % 64);
		f->state = FS_ANON;
		f->flags = 0;
		f->hnext = 0;
	}
	mm->nr_anon_huge -= MM_HPAGE_NR;
	count_event(mm, MM_STAT_THP_SPLIT_PAGE, 1);
	count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_SPLIT);
	return split_free_unmapped(mm, head, MM_HPAGE_NR, unmapped);
}

/* A subpage of a PTE-mapped THP is unmapped by its owner (zap_pte_range ->
 * __folio_remove_rmap): the folio becomes partially mapped and is queued
 * (deferred_split_folio(folio, true)); the last subpage frees it whole. A run of one: nothing
 * for a THP mapped by a PMD (a caller's bug) or a subpage unmapped already. */
void thp_unmap_subpage(struct mm *mm, uint32_t pfn)
{
	thp_unmap_subpages(mm, pageblock_start(pfn), pfn, pfn + 1);
}

/* thp_unmap_subpage(pfn) for pfn = p .. q - 1, subpages of the THP at head, in one step (6.12
 * mm/memory.c zap_pte_range batches a folio's PTEs the same way: folio_remove_rmap_ptes, then
 * one deferred_split_folio): the subpages are flagged, the folio's mapped count drops by the
 * number newly unmapped, and the folio goes back whole if that was its last one, else is
 * queued (once: the queueing of the later subpages one by one changes nothing). */
void thp_unmap_subpages(struct mm *mm, uint32_t head, uint32_t p, uint32_t q)
{
	struct mm_frame *hf = pfn_frame(mm, head);
	uint32_t n = 0;

	if (!(hf->flags & FF_THP_PTE))
		return;
	for (uint32_t i = p; i < q; i++) {
		struct mm_frame *f = pfn_frame(mm, i);

		if (f->flags & FF_THP_UNMAPPED)
			continue;
		f->flags |= FF_THP_UNMAPPED;
		n++;
	}
	if (n == 0)
		return;
	hf->hnext += n;
	if (hf->hnext == MM_HPAGE_NR) {
		thp_forget(mm, head);
		mm->nr_anon -= MM_HPAGE_NR;
		mm->nr_anon_huge -= MM_HPAGE_NR;
		free_frames(mm, head, MM_HPAGE_ORDER, NULL);
		return;
	}
	thp_queue_add(mm, head, true);
}

int mm_anon_split_folio(struct mm *mm, uint32_t head)
{
	int ret = -EINVAL;

	mm_lock(mm);
	if (head < mm->nr_frames && head % MM_HPAGE_NR == 0 &&
	    pfn_frame(mm, head)->state == FS_HUGE) {
		split_folio_locked(mm, head);
		ret = 0;
	} else if (head < mm->nr_frames && pfn_frame(mm, head)->state == FS_MTHP &&
		   mthp_head(pfn_frame(mm, head), head) == head) {
		mthp_split_locked(mm, head);
		ret = 0;
	}
	mm_unlock(mm);
	return ret;
}

bool mm_thp_underused(const struct mm *mm, unsigned nr_zero)
{
	unsigned max = mm->cfg.policy.max_ptes_none;

	/* 6.12 thp_underused: "if (khugepaged_max_ptes_none == HPAGE_PMD_NR - 1) return false" */
	if (max >= MM_HPAGE_NR - 1)
		return false;
	return nr_zero > max;
}

/* deferred_split_scan: take up to nr THPs off the queue head; a partially mapped one is split
 * (its unmapped subpages freed), a fully mapped one is split if its owner finds it underused;
 * one that is not leaves the queue for good, one that is busy goes back to the tail. */
static unsigned deferred_split_scan(struct mm *mm, unsigned nr, void *call, bool *stale)
{
	uint32_t sent = sentinel(mm, SENT_SPLIT_QUEUE);
	unsigned split = 0, requeue = 0;

	while (nr-- && !flist_empty(mm, sent)) {
		uint32_t head = pfn_frame(mm, sent)->next;
		struct mm_frame *hf = pfn_frame(mm, head);
		uint64_t owner, epoch;
		int rc;

		if (hf->flags & FF_THP_PARTIAL) {
			if (hf->state == FS_MTHP)
				mthp_split_locked(mm, head);
			else
				split_folio_locked(mm, head);
			split++;
			continue;
		}
		thp_queue_del(mm, head);
		if (hf->state == FS_MTHP)
			continue; /* only partially mapped mTHPs are queued (thp_underused: PMD) */
		if (!mm->cfg.policy.shrink_underused ||
		    mm->cfg.policy.max_ptes_none >= MM_HPAGE_NR - 1)
			continue; /* thp_underused() is false: off the queue for good */
		owner = hf->owner;
		epoch = mm_unlock_for_hook(mm);
		rc = mm_hook_split_underused(mm, call, owner, head);
		if (!mm_relock_after_hook(mm, epoch)) {
			*stale = true;
			return split;
		}
		if (rc == 1) {
			count_event(mm, MM_STAT_THP_UNDERUSED_SPLIT_PAGE, 1);
			split++;
		} else if (rc == -EAGAIN) {
			count_event(mm, MM_STAT_THP_SPLIT_PAGE_FAILED, 1);
			count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_SPLIT_FAILED);
			if (pfn_frame(mm, head)->state == FS_HUGE &&
			    pfn_frame(mm, head)->owner == owner && requeue++ < MM_HPAGE_NR)
				thp_queue_add(mm, head, false);
		}
	}
	return split;
}

/* do_shrink_slab for the deferred split shrinker at reclaim priority prio. */
unsigned shrink_thp(struct mm *mm, int prio, void *call, bool *stale)
{
	uint64_t freeable = mm->nr_split_queue, nr, delta, total, scanned = 0, next;
	unsigned split = 0;

	if (!mm->cfg.policy.deferred_split || !freeable)
		return 0;
	nr = mm->shrink_deferred;
	mm->shrink_deferred = 0;
	delta = (freeable >> prio) * 4 / DEFAULT_SEEKS;
	total = (nr >> prio) + delta;
	if (total > 2 * freeable)
		total = 2 * freeable;
	while ((total >= SHRINK_BATCH || total >= freeable) && total && !*stale) {
		uint64_t n = total < SHRINK_BATCH ? total : SHRINK_BATCH;

		split += deferred_split_scan(mm, (unsigned)n, call, stale);
		total -= n;
		scanned += n;
		if (!mm->nr_split_queue)
			break;
	}
	next = nr + delta > scanned ? nr + delta - scanned : 0;
	if (next > 2 * freeable)
		next = 2 * freeable;
	mm->shrink_deferred = next;
	return split;
}

unsigned mm_shrink_thp(struct mm *mm, int prio, void *call)
{
	bool stale = false;
	unsigned n;

	mm_lock(mm);
	n = shrink_thp(mm, prio < 0 ? 0 : prio > 12 ? 12 : prio, call, &stale);
	mm_unlock(mm);
	return n;
}
