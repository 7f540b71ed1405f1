/* The simulated machine's shared pieces: the emulated kernel (core/mm) instance, actors' task
 * records, fault and stall accounting, and the background threads (kswapd / kcompactd through
 * mm_background).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"

/* The plugin's first nonsense / overtime answer (mm's lock held: one line, nothing more). */
static void plugin_note(void *cookie, const char *msg)
{
	const struct policy_plugin *p = cookie;

	fprintf(stderr, "thpemu: policy plugin %s: %s\n", p->path, msg);
}

int world_mm_create(struct sim_world *w, char *err, size_t errlen)
{
	int rc;

	w->env.ops = &sim_env_ops;
	w->env.priv = w;
	if (w->mmcfg.policy.plugin[0] && !w->plugin.pl) {
		char why[400];

		if (policy_plugin_load(w->mmcfg.policy.plugin, &w->plugin, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "policy key 'plugin': %s", why);
			return -EINVAL;
		}
	}
	rc = mm_create(&w->mmcfg, &w->env, &w->mm, err, errlen);
	if (rc == 0 && w->plugin.pl) {
		struct mm_policy_hook h = {
		    .pl = w->plugin.pl, .note = plugin_note, .cookie = &w->plugin};

		rc = mm_set_policy_hook(w->mm, &h);
		if (rc < 0)
			snprintf(err, errlen, "policy key 'plugin': the pool refused it");
	}
	return rc;
}

/* Fold the pool's counters into the run's totals and drop it (between iterations). */
void world_mm_destroy(struct sim_world *w)
{
	uint64_t st[MM_STAT_NR];
	struct obs_mthp m;

	if (!w->mm)
		return;
	mm_get_stats(w->mm, st);
	for (int i = 0; i < MM_STAT_NR; i++)
		w->stats_done[i] += st[i];
	obs_mthp_snapshot(&m, mm_policy(w->mm), w->mm);
	obs_mthp_accumulate(&w->mthp_done, &m);
	mm_destroy(w->mm);
	w->mm = NULL;
	policy_plugin_unload(&w->plugin);
}

/* Apply an mm_fragment recipe to the pool (the scenarios' "init" parameter); an empty recipe
 * leaves the pool as created. Deterministic for the run's seed. */
int world_apply_recipe(struct sim_world *w, const char *recipe, char *err, size_t errlen)
{
	char why[256];
	int rc;

	if (!recipe[0])
		return 0;
	rc = snap_fragment(w->mm, recipe, w->cfg->seed, why, sizeof(why), NULL);
	if (rc)
		snprintf(err, errlen, "--opt init: %s", why);
	return rc;
}

int world_spawn(struct sim_world *w, struct sim_task *t, const char *comm, uint64_t start,
		sim_actor_fn fn, void *arg)
{
	t->w = w;
	t->in_compaction = 0;
	t->fault_t0 = 0;
	t->next = w->tasks;
	w->tasks = t;
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

static bool is_compaction(unsigned step)
{
	return step == MM_STEP_COMPACT_ASYNC || step == MM_STEP_COMPACT_SYNC_LIGHT ||
	       step == MM_STEP_COMPACT_SYNC;
}

static void count_steps(struct sim_steps *st, const struct mm_fault_rec *rec)
{
	unsigned n = rec->nsteps < MM_FAULT_MAX_STEPS ? rec->nsteps : MM_FAULT_MAX_STEPS;
	bool reclaimed = false;

	for (unsigned i = 0; i < n; i++) {
		unsigned step = rec->steps[i].step, res = rec->steps[i].result;

		if (step >= MM_STEP_NR)
			continue;
		reclaimed |= step == MM_STEP_RECLAIM;
		if (is_compaction(step)) {
			bool ok = res == MM_COMPACT_SUCCESS;

			if (reclaimed) {
				st->second_runs++;
				st->second_success += ok;
			} else {
				st->first_runs++;
				st->first_success += ok;
			}
		}
		st->count[step]++;
		st->result[step][res < SIM_STEP_RESULTS ? res : SIM_STEP_RESULTS - 1]++;
	}
	if (rec->outcome == MM_FAULT_HUGE && n > 0 && rec->steps[n - 1].step < MM_STEP_NR)
		st->huge_from[rec->steps[n - 1].step]++;
}

void world_record_fault(struct sim_world *w, struct sim_task *t, const struct mm_fault_res *res,
			uint64_t latency_ns, uint32_t pid, uint64_t addr)
{
	obs_faults_record(&w->faults, &res->rec, latency_ns);
	for (int i = 0; i < 2; i++) {
		struct sim_wait_stat *f = &w->fault_wb[i], *p = &t->fault_wb[i];

		f->count += p->count;
		f->over += p->over;
		f->total_ns += p->total_ns;
		if (p->max_ns > f->max_ns)
			f->max_ns = p->max_ns;
		*p = (struct sim_wait_stat){0};
	}
	count_steps(&w->steps, &res->rec);
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

#define BG_POLL_NS 10000000ULL /* idle background threads look again every 10 ms */

/* kswapd and kcompactd: mm_background says when it wants to run again. */
static void background_fn(struct sim_actor *a, void *arg)
{
	struct sim_world *w = arg;

	for (;;) {
		uint64_t next;

		next = mm_background(w->mm, &w->bg);
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

/* Coverage: a sample every interval of virtual time, at most ~2000 per run (OBS_COV_MAX_SAMPLES:
 * a scenario of fixed duration gets max(100 ms, duration / 1998); one that runs to completion
 * starts at 100 ms and thins). A timer on the scheduler's stack: it only reads the pool. */
#define COV_MIN_INTERVAL_NS (100ULL * 1000000ULL)

static void coverage_sample(struct sim_world *w, bool last)
{
	struct mm_counts c;

	if (!w->mm)
		return; /* between two iterations' pools */
	mm_get_counts(w->mm, &c);
	if (last)
		obs_coverage_finish(&w->cov, sim_now(w->e), c.anon_pmd, c.anon);
	else
		obs_coverage_sample(&w->cov, sim_now(w->e), c.anon_pmd, c.anon);
}

static void coverage_event(struct sim_engine *e, void *arg)
{
	struct sim_world *w = arg;

	uint64_t next;

	coverage_sample(w, false);
	next = obs_coverage_next(&w->cov);
	if (next <= sim_now(e)) /* no sample kept (no pool): never again at this instant */
		next = sim_now(e) + w->cov.interval_ns;
	sim_at(e, next, coverage_event, w);
}

int world_start_coverage(struct sim_world *w)
{
	uint64_t iv = w->end_ns / (OBS_COV_MAX_SAMPLES - 2); /* and the end's sample */

	if (w->cfg->scenario->runs_to_completion || iv < COV_MIN_INTERVAL_NS)
		iv = COV_MIN_INTERVAL_NS;
	obs_coverage_init(&w->cov, sim_now(w->e), iv);
	return sim_at(w->e, sim_now(w->e), coverage_event, w);
}

void world_finish_coverage(struct sim_world *w)
{
	coverage_sample(w, true);
}
