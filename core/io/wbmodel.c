/* Writeback model: dirty thresholds, balance_dirty_pages() pauses, dirty-data age and write
 * bandwidth estimation (see wbmodel.h; mirrors Linux 3.2 mm/page-writeback.c). Pure. */
#include "io/wbmodel.h"

#define RATIO_ONE 1024 /* RATELIMIT_CALC_SHIFT = 10 */

void wbm_params_default(struct wbm_params *p)
{
	p->background_ratio = 10;
	p->dirty_ratio = 20;
	p->expire_ns = 30000000000ULL;
	p->interval_ns = 5000000000ULL;
	p->max_pause_ns = WBM_MAX_PAUSE_NS;
}

void wbm_thresholds(const struct wbm_params *p, uint64_t dirtyable, struct wbm_thresh *t)
{
	t->dirty = dirtyable * p->dirty_ratio / 100;
	t->background = dirtyable * p->background_ratio / 100;
	if (t->background >= t->dirty)
		t->background = t->dirty / 2;
	t->freerun = (t->dirty + t->background) / 2;
	t->setpoint = (t->freerun + t->dirty) / 2;
}

bool wbm_over_background(const struct wbm_thresh *t, uint64_t nr_dirty)
{
	return nr_dirty > t->background;
}

uint64_t wbm_flush_want(const struct wbm_thresh *t, uint64_t nr_dirty, uint64_t expired)
{
	uint64_t want = wbm_over_background(t, nr_dirty) ? nr_dirty - t->background : 0;

	return expired > want ? expired : want;
}

uint64_t wbm_pos_ratio(const struct wbm_thresh *t, uint64_t nr)
{
	int64_t x, r;

	if (nr >= t->dirty)
		return 0;
	/* x = (setpoint - dirty) / (limit - setpoint), fixed point, then 1 + x^3 */
	x = ((int64_t)t->setpoint - (int64_t)nr) * RATIO_ONE /
	    ((int64_t)t->dirty - (int64_t)t->setpoint + 1);
	r = x * x / RATIO_ONE * x / RATIO_ONE + RATIO_ONE;
	if (r < 0)
		return 0;
	return r > 2 * RATIO_ONE ? 2 * RATIO_ONE : (uint64_t)r;
}

uint64_t wbm_pause_ns(const struct wbm_params *p, const struct wbm_thresh *t, uint64_t nr,
		      uint64_t dirtied, uint64_t ratelimit_bps)
{
	uint64_t pos, pages_per_s;
	double pause;

	if (nr <= t->freerun)
		return 0;
	pos = wbm_pos_ratio(t, nr);
	pages_per_s = ratelimit_bps / 4096 * pos / RATIO_ONE;
	if (pages_per_s == 0)
		return p->max_pause_ns;
	pause = (double)dirtied * 1e9 / (double)pages_per_s;
	return pause >= (double)p->max_pause_ns ? p->max_pause_ns : (uint64_t)pause;
}

/* Move the ring forward to the slot of `now`, clearing slots that went by. */
static void age_advance(struct wbm_age *a, uint64_t now)
{
	uint64_t slot = now / a->slot_ns;

	if (slot <= a->newest)
		return;
	if (slot - a->newest >= WBM_AGE_SLOTS) {
		for (unsigned i = 0; i < WBM_AGE_SLOTS; i++)
			a->counts[i] = 0;
	} else {
		for (uint64_t s = a->newest + 1; s <= slot; s++)
			a->counts[s % WBM_AGE_SLOTS] = 0;
	}
	a->newest = slot;
}

void wbm_age_init(struct wbm_age *a, uint64_t slot_ns)
{
	a->slot_ns = slot_ns ? slot_ns : 1;
	a->newest = 0;
	for (unsigned i = 0; i < WBM_AGE_SLOTS; i++)
		a->counts[i] = 0;
}

void wbm_age_dirtied(struct wbm_age *a, uint64_t now, uint64_t pages)
{
	age_advance(a, now);
	a->counts[a->newest % WBM_AGE_SLOTS] += pages;
}

uint64_t wbm_age_recent(struct wbm_age *a, uint64_t now, uint64_t window_ns)
{
	uint64_t slots = (window_ns + a->slot_ns - 1) / a->slot_ns, sum = 0;

	age_advance(a, now);
	if (slots > WBM_AGE_SLOTS)
		slots = WBM_AGE_SLOTS;
	for (uint64_t i = 0; i < slots && i <= a->newest; i++)
		sum += a->counts[(a->newest - i) % WBM_AGE_SLOTS];
	return sum;
}

uint64_t wbm_age_expired(struct wbm_age *a, uint64_t now, uint64_t nr_dirty, uint64_t expire_ns)
{
	uint64_t recent = wbm_age_recent(a, now, expire_ns);

	return nr_dirty > recent ? nr_dirty - recent : 0;
}

void wbm_bw_init(struct wbm_bw *b, uint64_t now, uint64_t initial_bps)
{
	b->last_t = now;
	b->last_bytes = 0;
	b->bw = initial_bps;
}

void wbm_bw_update(struct wbm_bw *b, uint64_t now, uint64_t completed_bytes)
{
	uint64_t elapsed = now - b->last_t;
	double bw, w;

	if (now < b->last_t || elapsed < WBM_BW_INTERVAL_NS)
		return;
	bw = (double)(completed_bytes - b->last_bytes) * 1e9 / (double)elapsed;
	w = elapsed >= WBM_BW_PERIOD_NS ? 1.0 : (double)elapsed / (double)WBM_BW_PERIOD_NS;
	b->bw = (uint64_t)((double)b->bw * (1.0 - w) + bw * w);
	b->last_t = now;
	b->last_bytes = completed_bytes;
}
