/* One simulator run: build the machine (emulated kernel, device, engine), let the scenario set
 * it up and spawn its actors, run virtual time to the end, and keep what the report needs.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STALL_CAPACITY 65536 /* stall events kept with detail; more are counted only */
#define DEV_SEED_SALT  0x5eed2011d0c0ffeeULL

void sim_config_init(struct sim_config *c)
{
	memset(c, 0, sizeof(*c));
	c->seed = 1;
	snprintf(c->device_spec, sizeof(c->device_spec), "%s", SIM_DEFAULT_DEVICE);
	devm_preset(SIM_DEFAULT_DEVICE, &c->device);
	sim_costs_defaults(&c->costs);
	c->stall_threshold_ns = SIM_DEFAULT_STALL_THRESHOLD;
	c->zero_page = true;
}

static void preset_list(char *buf, size_t len)
{
	const char *const *names = devm_preset_names();
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; names[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
}

int sim_device_parse(const char *spec, struct devm_params *p, char *err, size_t errlen)
{
	char buf[256], *colon, *kv, *save = NULL;
	char names[512];

	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "device spec too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	if (devm_preset(buf, p) != 0) {
		preset_list(names, sizeof(names));
		snprintf(err, errlen, "unknown preset '%s' (accepted: %s)", buf, names);
		return -EINVAL;
	}
	if (!colon)
		return 0;
	for (kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		int rc = devm_params_set_kv(p, kv);

		if (rc == -ENOENT) {
			snprintf(err, errlen,
				 "unknown device key in '%s' (keys: 'thpemu sim --help')", kv);
			return -EINVAL;
		}
		if (rc) {
			snprintf(names, sizeof(names), "%.*s", (int)strcspn(kv, "="), kv);
			snprintf(err, errlen, "bad device setting '%s' (accepted: %s)", kv,
				 devm_key_accepted(names) ?: "see --help");
			return -EINVAL;
		}
	}
	if (devm_params_check(p, names, sizeof(names)) < 0) {
		snprintf(err, errlen, "device '%s': %s", spec, names);
		return -EINVAL;
	}
	return 0;
}

int sim_config_scenario_machine(struct sim_config *c, bool device_given, bool fs_given, char *err,
				size_t errlen)
{
	const struct sim_scenario *s = c->scenario;

	if (!s)
		return 0;
	if (!device_given && s->device) {
		int rc = sim_device_parse(s->device, &c->device, err, errlen);

		if (rc)
			return rc;
		snprintf(c->device_spec, sizeof(c->device_spec), "%s", s->device);
	}
	if (!fs_given && s->fs_set)
		c->policy.fs = s->fs;
	return 0;
}

int world_init(struct sim_world *w, const struct sim_config *c, char *err, size_t errlen)
{
	const struct sim_scenario *s = c->scenario;
	int rc;

	w->cfg = c;
	rng_seed(&w->rng, c->seed);
	w->mmcfg.pool_bytes = c->pool_bytes ? c->pool_bytes : s->pool_bytes;
	w->mmcfg.policy = c->policy;
	w->end_ns = c->duration_ns ? c->duration_ns : s->duration_ns;
	w->dev_event_at = UINT64_MAX;
	obs_faults_init(&w->faults);
	sim_waitq_init(&w->bg_wq);
	wbm_params_default(&w->fl.p);
	rc = sim_engine_create(0, &w->e);
	if (rc)
		goto out_nomem;
	rc = obs_stalls_create(&w->stalls, STALL_CAPACITY, c->stall_threshold_ns,
			       OBS_STACKS_MODELLED);
	if (rc)
		goto out_nomem;
	rc = obs_stalls_create_waits(&w->waits, STALL_CAPACITY, c->stall_threshold_ns,
				     OBS_STACKS_MODELLED);
	if (rc)
		goto out_nomem;
	rc = world_mm_create(w, err, errlen);
	if (rc)
		return rc;
	rc = devm_create(&c->device, c->seed ^ DEV_SEED_SALT, &w->dev);
	if (rc) {
		snprintf(err, errlen, "device: cannot create the model (%s)", strerror(-rc));
		return rc;
	}
	ios_init(&w->sched, c->policy.iosched == MM_IOSCHED_CFQ ? IOS_CFQ : IOS_DEADLINE, 0);
	flusher_init(w, 128, 30);
	return 0;

out_nomem:
	snprintf(err, errlen, "out of memory");
	return rc;
}

/* Free the world; the engine goes first so no actor can run again. */
void world_fini(struct sim_world *w)
{
	sim_engine_destroy(w->e);
	world_mm_destroy(w);
	if (w->dev)
		devm_destroy(w->dev);
	dev_free_all(w);
	proc_free_all(w);
	writer_free(w);
	readers_free(w);
	free(w->scen_state);
	files_free(w);
	obs_stalls_destroy(w->stalls);
	obs_stalls_destroy(w->waits);
}

static void collect(struct sim_world *w, struct sim_result *r)
{
	uint64_t st[MM_STAT_NR];

	r->cfg = *w->cfg;
	mm_policy_format(mm_policy(w->mm), r->policy, sizeof(r->policy));
	r->pool_bytes = (uint64_t)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	r->duration_ns = sim_now(w->e);
	r->iterations = w->iterations;
	r->niter = w->niter;
	memcpy(r->iter, w->iter, sizeof(r->iter));
	r->finished = w->finished;
	r->faults = w->faults;
	r->extents = w->extents;
	r->extents_huge = w->extents_huge;
	r->zero = w->zero;
	r->steps = w->steps;
	for (struct sim_task *t = w->tasks; t; t = t->next) {
		uint64_t d;

		if (!t->fault_t0)
			continue;
		d = r->duration_ns - t->fault_t0;
		r->unfinished++;
		if (d > r->unfinished_max_ns)
			r->unfinished_max_ns = d;
	}
	r->stalls = w->stalls; /* moved: the result reports and frees it */
	w->stalls = NULL;
	r->waits = w->waits;
	w->waits = NULL;
	r->nstalls = w->nstalls;
	r->stall_max_ns = w->stall_max_ns;
	mm_get_stats(w->mm, st);
	for (int i = 0; i < MM_STAT_NR; i++)
		r->vmstat[i] = st[i] + w->stats_done[i];
	{
		struct obs_mthp m;

		obs_mthp_snapshot(&m, mm_policy(w->mm), w->mm);
		r->mthp = w->mthp_done;
		obs_mthp_accumulate(&r->mthp, &m);
	}
	r->wb_compact = w->wb_compact;
	r->wb_reclaim = w->wb_reclaim;
	r->fault_wb[0] = w->fault_wb[0];
	r->fault_wb[1] = w->fault_wb[1];
	devm_get_stats(w->dev, &r->dev);
	r->fl = w->fl;
	w->elv.expired = w->sched.st.fifo_expired;
	w->elv.slices = w->sched.st.slices;
	w->elv.preempted = w->sched.st.preempted;
	w->elv.kind = w->sched.kind;
	r->elv = w->elv;
	r->rq_model = w->rq_model;
	r->rq = w->rl.st;
	r->rq_wait = w->rq_wait;
	r->writer = w->writer;
	r->reader = w->reader;
	mm_get_counts(w->mm, &r->end);
	world_finish_coverage(w);
	r->cov = w->cov;
	sim_engine_get_stats(w->e, &r->eng);
	replay_collect(w, r);
}

static uint64_t run_bound(const struct sim_world *w)
{
	uint64_t d = w->end_ns;

	if (!w->cfg->scenario->runs_to_completion)
		return d;
	/* the scenario stops itself after its last whole iteration; this only guards */
	return d > UINT64_MAX / 4 ? UINT64_MAX : d * 4 + 600ULL * 1000000000ULL;
}

int sim_run_scenario(const struct sim_config *c, struct sim_result **out, char *err, size_t errlen)
{
	struct sim_world *w = calloc(1, sizeof(*w));
	struct sim_result *r = calloc(1, sizeof(*r));
	const struct mm_policy *pol;
	int rc = -ENOMEM;

	if (!w || !r) {
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	rc = world_init(w, c, err, errlen);
	if (rc)
		goto out_fini;
	rc = c->scenario->start(w, err, errlen);
	if (rc)
		goto out_fini;
	pol = mm_policy(w->mm);
	if (pol->kswapd || pol->kcompactd || pol->proactiveness)
		world_start_background(w);
	if (pol->khugepaged && !w->replay_state) /* khugepaged.c: not in a replay */
		world_start_khugepaged(w);
	rc = world_start_coverage(w);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto out_fini;
	}
	rc = sim_run(w->e, run_bound(w));
	if (rc) {
		snprintf(err, errlen, "simulation failed: %s", strerror(-rc));
		goto out_fini;
	}
	collect(w, r);
	world_fini(w);
	free(w);
	*out = r;
	return 0;

out_fini:
	world_fini(w);
out_free:
	free(w);
	free(r);
	return rc;
}

void sim_result_free(struct sim_result *r)
{
	if (!r)
		return;
	obs_stalls_destroy(r->stalls);
	obs_stalls_destroy(r->waits);
	free(r);
}

const uint64_t *sim_result_vmstat(const struct sim_result *r)
{
	return r->vmstat;
}

void sim_result_summary(const struct sim_result *r, struct sim_summary *s)
{
	const struct obs_faults *f = &r->faults;

	memset(s, 0, sizeof(*s));
	s->huge = f->lat[OBS_HUGE].count;
	s->base = f->lat[OBS_BASE].count;
	s->mthp = f->lat[OBS_MTHP].count;
	s->faults = s->huge + s->base + s->mthp;
	s->nomem = f->nomem;
	s->huge_pct = s->faults ? (double)s->huge * 100.0 / (double)s->faults : 0;
	s->extents = r->extents;
	s->extents_huge = r->extents_huge;
	s->wb_waits = f->wb_waits;
	s->wb_wait_ns = f->wb_wait_ns;
	s->wb_wait_max_ns = f->wb_wait_max_ns;
	s->compact_wb_waits = r->wb_compact.count;
	s->compact_wb_wait_ns = r->wb_compact.total_ns;
	s->reclaim_wb_waits = r->wb_reclaim.count;
	s->reclaim_wb_wait_ns = r->wb_reclaim.total_ns;
	s->stalls = r->nstalls;
	s->stall_max_ns = r->stall_max_ns;
	s->wait_stalls = r->waits ? obs_stalls_count(r->waits) : 0;
	s->wait_stall_ns = r->waits ? obs_stalls_total_ns(r->waits) : 0;
	s->wait_stall_max_ns = r->waits ? obs_stalls_max_ns(r->waits) : 0;
	s->duration_ns = r->duration_ns;
	s->events = r->eng.events;
	s->zero = r->zero;
}
