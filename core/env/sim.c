/* The simulator's environment for core/mm: virtual time, modelled costs and waits.
 *
 * mm calls these hooks with the `call` cookie of the actor it works for (a struct sim_task).
 *   now            the actor's own clock (global virtual time plus its unsettled debt);
 *   alloc_cost     charges mm's units (pfns scanned, pages isolated, ...) from the cost table;
 *   wait_writeback settles the actor's debt and parks it until the frame's writeback request
 *                  completes at the device (wait_on_page_writeback): the wait's length emerges
 *                  from the device queue, other actors run meanwhile;
 *   migrate_anon   charges migrate-page and updates the owning process's page table; the
 *                  owner may exit while the copy is in flight (then -ENOENT, as mm.h asks);
 *   copy_file_page charges copy-4k; clear_huge charges clear-2m;
 *   writeout       starts writeback of one dirty page (->writepage): a single-page request
 *                  queued behind everything already at the device;
 *   trace          tracks whether the actor is inside compact_zone, so that writeback waits
 *                  can be told apart: compaction (migration) versus direct reclaim;
 *   khugepaged_scan the visited process (as_id = pid) walks its region with
 *                  mm_khugepaged_scan_mm and collapses in khugepaged's time (proc.c); the
 *                  replay has no processes: every as_id is gone (-ENOENT);
 *   split_underused the THP's process judges its subpages by what it wrote (proc.c);
 *   throttle       congestion_wait / wait_iff_congested: parks the actor until a writeback
 *                  request completes with the flusher's queue uncongested, or the timeout
 *                  (device.c dev_throttle);
 *   waited         every completed wait: one of at least the stall threshold is a per-wait
 *                  stall event (obs/stall.h) under the actor's comm (the background actor is
 *                  "kswapd0").
 * There is no lock: the simulator is one thread, and actors only switch at unlocked hooks.
 * Called without an actor (setup, recipes), costs are not charged and waits do not block.
 */
#include "sim/sim_internal.h"

#include <errno.h>

static uint64_t env_now(void *priv, void *call)
{
	struct sim_world *w = priv;
	struct sim_task *t = call;

	return t && t->a ? sim_actor_now(t->a) : sim_now(w->e);
}

static void charge(struct sim_task *t, uint64_t ns)
{
	if (t && t->a)
		sim_charge(t->a, ns);
}

static void env_alloc_cost(void *priv, void *call, enum mm_cost what, uint64_t n)
{
	static const enum sim_cost map[MM_COST_NR] = {
	    [MM_COST_FAULT] = SIM_COST_FAULT,
	    [MM_COST_BUDDY_OP] = SIM_COST_BUDDY_OP,
	    [MM_COST_SCAN_PFN] = SIM_COST_SCAN_PFN,
	    [MM_COST_ISOLATE] = SIM_COST_ISOLATE,
	    [MM_COST_RECLAIM_PAGE] = SIM_COST_RECLAIM_PAGE,
	};
	struct sim_world *w = priv;

	if ((unsigned)what < MM_COST_NR)
		charge(call, w->cfg->costs.ns[map[what]] * n);
}

static int env_wait_writeback(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	return dev_wait_writeback(priv, call, pfn, timeout_ns);
}

static int env_throttle(void *priv, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
			bool iff_congested)
{
	return dev_throttle(priv, call, timeout_ns, iff_congested);
}

/* A per-wait event for each wait of at least the threshold, in the actor's virtual time; kswapd's
 * (background) too, under its actor's comm, as Mel Gorman's monitor saw every task. */
/* bdi_write_congested: the flusher's request queue is full - except for a task writing to
 * the stick itself (may_write_to_queue: bdi == current->backing_dev_info). */
static bool env_congested(void *priv, void *call)
{
	struct sim_world *w = priv;
	const struct sim_task *t = call;

	if (t && t->writing)
		return false;
	return w->rq_model ? rql_congested(&w->rl, RQL_ASYNC) : wbq_congested(&w->fl.q);
}

static void env_waited(void *priv, void *call, const struct mm_wait *wt)
{
	struct sim_world *w = priv;
	struct sim_task *t = call;
	const char *comm = t ? t->comm : wt->background ? "kswapd0" : "?";
	/* kswapd's chain only for the kswapd actor (khugepaged has no fault behind it either, but
	 * its own allocation path) */
	bool kswapd = wt->background && (!t || t == &w->bg);

	if (w->waits)
		obs_stalls_add_modelled_wait(w->waits, wt->t_start, wt->ns, wt->kind, kswapd, comm,
					     0);
}

static int env_migrate_anon(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct sim_world *w = priv;

	if (w->replay_state)
		return replay_migrate(w, call, owner, from, to);
	return proc_migrate(priv, call, owner, from, to);
}

static int env_copy_file_page(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct sim_world *w = priv;
	struct sim_task *t = call;

	charge(t, w->cfg->costs.ns[SIM_COST_COPY_4K]);
	if (t && t->a)
		sim_settle(t->a);
	return 0;
}

static uint64_t env_clear_huge(void *priv, void *call, uint32_t head, uint64_t extent_owner)
{
	struct sim_world *w = priv;
	struct sim_task *t = call;

	charge(t, w->cfg->costs.ns[SIM_COST_CLEAR_2M]);
	if (t && t->a)
		sim_settle(t->a);
	return 0; /* charged in virtual time, on the fault */
}

static int env_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	struct sim_world *w = priv;
	struct sim_task *t = call;
	int rc;

	charge(t, w->cfg->costs.ns[SIM_COST_WRITEOUT]);
	if (t && t->a)
		sim_settle(t->a);
	rc = mm_writeback_begin_one(w->mm, pfn);
	if (rc)
		return rc;
	file_written_out(w, owner);
	/* ->writepage -> submit_bio: may sleep in get_request_wait (3.x) */
	rc = dev_submit(w, t, SIO_WRITEOUT, dev_offset_of(w, owner), &pfn, 1, true, NULL);
	if (rc) {
		mm_writeback_end(w->mm, pfn,
				 rc); /* the page goes back to clean, counted as error */
		return rc;
	}
	w->fl.writeout_pages++;
	return 0;
}

static void env_trace(void *priv, void *call, const struct mm_trace *ev)
{
	struct sim_task *t = call;

	if (!t)
		return;
	if (ev->kind == MM_TRACE_COMPACTION_BEGIN)
		t->in_compaction++;
	else if (ev->kind == MM_TRACE_COMPACTION_END && t->in_compaction > 0)
		t->in_compaction--;
}

static int env_khugepaged_scan(void *priv, void *call, uint32_t as_id, uint64_t *addr,
			       unsigned budget, bool *done)
{
	return proc_khugepaged_scan(priv, call, as_id, addr, budget, done);
}

static int env_split_underused(void *priv, void *call, uint64_t extent_owner, uint32_t head)
{
	struct sim_world *w = priv;

	if (w->replay_state)
		return 0; /* the replay does not know what the program wrote: never underused */
	return proc_split_underused(priv, call, extent_owner, head);
}

const struct mm_env_ops sim_env_ops = {
    .now = env_now,
    .lock = NULL,
    .unlock = NULL,
    .wait_writeback = env_wait_writeback,
    .migrate_anon = env_migrate_anon,
    .copy_file_page = env_copy_file_page,
    .clear_huge = env_clear_huge,
    .alloc_cost = env_alloc_cost,
    .writeout = env_writeout,
    .trace = env_trace,
    .khugepaged_scan = env_khugepaged_scan,
    .split_underused = env_split_underused,
    .throttle = env_throttle,
    .waited = env_waited,
    .congested = env_congested,
};
