/* Simulator speed benchmark.
 *
 * Floor: the bare engine, 64 actors sleeping pseudo-random virtual times (every sleep is a
 * context switch through the event heap): wall ns per event. Then each scenario under
 * linux-3.1 and linux-3.3 at its default pool: virtual seconds per wall second, wall ns per
 * fault, and wall ns per engine event as a ratio to the floor (what the emulated kernel and
 * the workload add per event). THPEMU_PERF_QUICK=1 (CI smoke mode) shortens every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/clock.h"
#include "util/rng.h"

struct floor_actor {
	struct rng rng;
	uint64_t sleeps;
};

static void floor_fn(struct sim_actor *a, void *arg)
{
	struct floor_actor *f = arg;

	for (;;) {
		sim_sleep(a, 1 + rng_below(&f->rng, 1000));
		f->sleeps++;
	}
}

static double floor_ns_per_event(uint64_t virt_ns)
{
	static struct floor_actor fa[64];
	struct sim_engine *e;
	struct sim_engine_stats st;
	uint64_t t0, t1;

	if (sim_engine_create(64 << 10, &e))
		return 0;
	for (int i = 0; i < 64; i++) {
		rng_seed(&fa[i].rng, (uint64_t)i + 1);
		sim_spawn(e, "floor", 0, floor_fn, &fa[i], NULL);
	}
	t0 = clock_now_ns();
	sim_run(e, virt_ns);
	t1 = clock_now_ns();
	sim_engine_get_stats(e, &st);
	sim_engine_destroy(e);
	printf(
	    "floor: bare engine, 64 sleeping actors: %llu events, %llu switches, %.1f ns/event\n",
	    (unsigned long long)st.events, (unsigned long long)st.switches,
	    (double)(t1 - t0) / (double)st.events);
	return (double)(t1 - t0) / (double)st.events;
}

static int bench(const char *scen, const char *policy, uint64_t dur_ns, double floor)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary s;
	char err[512];
	uint64_t t0, t1;
	double wall;

	sim_config_init(&c);
	if (mm_policy_parse(policy, &c.policy, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), 1;
	c.scenario = sim_scenario_find(scen);
	sim_params_defaults(c.scenario, &c.params);
	c.duration_ns = dur_ns;
	t0 = clock_now_ns();
	if (sim_run_scenario(&c, &r, err, sizeof(err)))
		return fprintf(stderr, "%s %s: %s\n", scen, policy, err), 1;
	t1 = clock_now_ns();
	sim_result_summary(r, &s);
	wall = (double)(t1 - t0) / 1e9;
	printf("%-17s %-18s %9.1f %8.3f %9.1f %11llu %8.0f %12llu %8.1f\n", scen, policy,
	       (double)s.duration_ns / 1e9, wall, (double)s.duration_ns / 1e9 / wall,
	       (unsigned long long)s.faults, s.faults ? (double)(t1 - t0) / (double)s.faults : 0,
	       (unsigned long long)s.events,
	       s.events ? (double)(t1 - t0) / (double)s.events / floor : 0);
	sim_result_free(r);
	return 0;
}

int main(void)
{
	const char *q = getenv("THPEMU_PERF_QUICK");
	bool quick = q && strcmp(q, "1") == 0;
	static const char *const scen[] = {"seed-2011", "thpcompact", "thpchallenge-fio"};
	const uint64_t s = 1000000000ULL;
	/* 0: the scenario's default duration */
	const uint64_t dur[] = {quick ? 60 * s : 0, quick ? 2 * s : 0, quick ? 5 * s : 0};
	double floor = floor_ns_per_event(quick ? 20 * s / 1000 : 200 * s / 1000);
	int rc = 0;

	printf("%-17s %-18s %9s %8s %9s %11s %8s %12s %8s\n", "scenario", "policy", "virtual_s",
	       "wall_s", "virt/wall", "faults", "ns/fault", "events", "x floor");
	for (int i = 0; i < 3; i++) {
		rc |= bench(scen[i], "linux-3.1", dur[i], floor);
		rc |= bench(scen[i], "linux-3.3", dur[i], floor);
	}
	return rc;
}
