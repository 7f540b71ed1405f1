/* Background actors: kswapd, kcompactd and proactive compaction, run when the driver calls
 * mm_background() (the simulator on its event clock, the live emulator from a thread).
 *
 * Mirrors the main loops of mm/vmscan.c's kswapd() and mm/compaction.c's kcompactd(): kswapd
 * runs when woken (by an allocation below its watermark, or a watermark boost) until the zone
 * is balanced; kcompactd runs when woken (by kswapd going to sleep, or directly by a defer-mode
 * THP fault) and, with vm.compaction_proactiveness > 0, checks the fragmentation score every
 * 500 ms (HPAGE_FRAG_CHECK_INTERVAL_MSEC), backing off to 32 s after a run that did not lower
 * it. khugepaged (collapsing 4 KiB ranges into huge pages) is not modelled.
 */
#include "mm/internal.h"

#define FRAG_CHECK_INTERVAL_NS (500ULL * 1000000ULL)

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* kcompactd's timer: proactive compaction when the score is above the high threshold. */
static uint64_t kcompactd_timer(struct mm *mm, void *call, uint64_t now)
{
	int r;

	if (now < mm->proactive_next_ns)
		return mm->proactive_next_ns - now;
	r = proactive_compact_node(mm, call);
	mm->proactive_next_ns = now + (r == 0 ? FRAG_CHECK_INTERVAL_NS << MM_COMPACT_MAX_DEFER_SHIFT
					      : FRAG_CHECK_INTERVAL_NS);
	return mm->proactive_next_ns - now;
}

uint64_t mm_background(struct mm *mm, void *call)
{
	const struct mm_policy *p = &mm->cfg.policy;
	uint64_t next = UINT64_MAX;

	mm_lock(mm);
	if (p->kswapd && mm->kswapd_awake)
		next = min64(next, kswapd_run(mm, call));
	if (p->kcompactd && mm->kcompactd_awake)
		kcompactd_do_work(mm, call);
	if (p->kcompactd && p->proactiveness && era_modern(mm))
		next = min64(next, kcompactd_timer(mm, call, mm_now(mm, call)));
	if (mm->kswapd_awake && next == UINT64_MAX)
		next = 0;
	mm_unlock(mm);
	return next;
}
