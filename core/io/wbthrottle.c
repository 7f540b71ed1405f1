/* Dirty throttling: balance_dirty_pages() of Linux 3.2 as a state machine (see wbthrottle.h;
 * mm/page-writeback.c). Pure. */
#include "io/wbthrottle.h"

void wbt_bdp_start(struct wbt_bdp *b, uint64_t dirtied)
{
	*b = (struct wbt_bdp){.dirtied = dirtied};
}

struct wbt_step wbt_bdp_step(const struct wbm_params *p, struct wbt_bdp *b, uint64_t dirtyable,
			     uint64_t nr_dirty, uint64_t nr_writeback, uint64_t bw_bps)
{
	struct wbt_step s;

	wbm_thresholds(p, dirtyable, &b->th);
	b->nr = nr_dirty + nr_writeback;
	b->over_limit = b->nr >= b->th.dirty;
	s.kick = wbm_over_background(&b->th, nr_dirty);
	s.pause_ns = wbm_pause_ns(p, &b->th, b->nr, b->dirtied, bw_bps);
	return s;
}

bool wbt_bdp_paused(struct wbt_bdp *b, uint64_t pause_ns, struct wbt_stats *st)
{
	st->throttles++;
	st->throttle_ns += pause_ns;
	if (pause_ns > st->throttle_max_ns)
		st->throttle_max_ns = pause_ns;
	if (!b->over_limit)
		return false;
	b->dirtied = WBT_RATELIMIT_PAGES; /* over the hard limit: keep pausing */
	return true;
}
