/* The simulated machine's shared pieces: the emulated kernel (core/mm) instance, actors' task
 * records, fault and stall accounting, and the background threads (kswapd / kcompactd through
 * mm_background).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int world_mm_create(struct sim_world *w, char *err, size_t errlen)
{
	w->env.ops = &sim_env_ops;
	w->env.priv = w;
	return mm_create(&w->mmcfg, &w->env, &w->mm, err, errlen);
}

/* Fold the pool's counters into the run's totals and drop it (between iterations). */
void world_mm_destroy(struct sim_world *w)
{
	uint64_t st[MM_STAT_NR];

	if (!w->mm)
		return;
	mm_get_stats(w->mm, st);
	for (int i = 0; i < MM_STAT_NR; i++)
		w->stats_done[i] += st[i];
	mm_destroy(w->mm);
	w->mm = NULL;
}

/* Apply an mm_fragment recipe to the pool (the scenarios' "init" parameter).
 * Until core/mm provides mm_fragment (its milestone 2) a recipe is refused; an empty recipe
 * leaves the pool as created. */
int world_apply_recipe(struct sim_world *w, const char *recipe, char *err, size_t errlen)
{
	if (!recipe[0])
		return 0;
	snprintf(err, errlen,
		 "init: fragmentation recipes need core/mm's mm_fragment, not in this "
		 "build (use --opt init=)");
	return -EINVAL;
}

int world_spawn(struct sim_world *w, struct sim_task *t, const char *comm, uint64_t start,
		sim_actor_fn fn, void *arg)
{
	t->w = w;
	t->in_compaction = 0;
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	return sim_spawn(w->e, comm, start, fn, arg, &t->a);
}

static bool woke_kswapd(const struct mm_fault_rec *rec)
{
	for (unsigned i = 0; i < rec->nsteps && i < MM_FAULT_MAX_STEPS; i++)
		if (rec->steps[i].step == MM_STEP_WAKE_KSWAPD)
			return true;
	return false;
}

void world_record_fault(struct sim_world *w, struct sim_task *t, const struct mm_fault_res *res,
			uint64_t latency_ns, uint32_t pid, uint64_t addr)
{
	obs_faults_record(&w->faults, &res->rec, latency_ns);
	if (latency_ns >= w->cfg->stall_threshold_ns) {
		w->nstalls++;
		if (latency_ns > w->stall_max_ns)
			w->stall_max_ns = latency_ns;
		obs_stalls_add_modelled(w->stalls, res->rec.t_start, latency_ns,
					(enum mm_cause)res->rec.cause, t->comm, (int32_t)pid, addr);
	}
	if (woke_kswapd(&res->rec))
		world_wake_background(w);
}

void world_wake_background(struct sim_world *w)
{
	if (w->bg_running)
		sim_wake_all(w->e, &w->bg_wq);
}

#define BG_POLL_NS 100000000ULL /* idle background threads look again every 100 ms */

/* kswapd and kcompactd: mm_background says when it wants to run again. */
static void background_fn(struct sim_actor *a, void *arg)
{
	struct sim_world *w = arg;

	for (;;) {
		uint64_t next;

		if (!w->mm) { /* between iterations */
			sim_wait(a, &w->bg_wq, BG_POLL_NS);
			continue;
		}
		next = UINT64_MAX; /* mm_background: core/mm milestone 2 */
		sim_settle(a);
		if (next == 0)
			next = 1000000; /* never spin in zero time */
		sim_wait(a, &w->bg_wq, next > BG_POLL_NS ? BG_POLL_NS : next);
	}
}

void world_start_background(struct sim_world *w)
{
	if (w->bg_running)
		return;
	if (world_spawn(w, &w->bg, "kswapd0", sim_now(w->e), background_fn, w) == 0)
		w->bg_running = true;
}
