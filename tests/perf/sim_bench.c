/* Simulator speed benchmark.
 *
 * Floor: the bare engine, 64 actors sleeping pseudo-random virtual times (every sleep is a
 * context switch through the event heap): wall ns per event. Then every shipped scenario
 * (thpcompact, thpchallenge-fio, seed-2011, seed-2011-long, and one writeback-cp iteration at
 * 256M) under linux-3.1, linux-3.3 and modern-always at its default pool and duration (a
 * writeback-cp iteration under 3.1 lasts over an hour of virtual time): virtual seconds per
 * wall second (virt/wall: the simulator's speed against real time), modelled faults per wall
 * second, wall ns per fault, and wall ns per engine event as a ratio to the floor (what the
 * emulated kernel and the workload add per event). Wall time is the process's CPU time (the
 * machine may be shared: CPU time does not count other programs' turns), printed beside it.
 *
 *   sim_bench            the table above
 *   sim_bench --2g       also writeback-cp at 2 GiB (Mel Gorman's size, 5 iterations) under
 *                        3.1, 3.2 and 3.3 (tens of minutes)
 *   sim_bench SCEN[:POOL[:POLICY]]...  only these runs (POOL e.g. 256M, 0 the default)
 *
 * THPEMU_PERF_QUICK=1 (CI smoke mode) shortens every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	t0 = cpu_now_ns();
	sim_run(e, virt_ns);
	t1 = cpu_now_ns();
	sim_engine_get_stats(e, &st);
	sim_engine_destroy(e);
	printf("floor: bare engine, 64 sleeping actors: %llu events, %llu switches, %.1f CPU "
	       "ns/event\n",
	       (unsigned long long)st.events, (unsigned long long)st.switches,
	       (double)(t1 - t0) / (double)st.events);
	return (double)(t1 - t0) / (double)st.events;
}

static int bench(const char *scen, const char *policy, uint64_t pool, uint64_t dur_ns,
		 const char *opt, double floor)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary s;
	char err[512], poolbuf[16];
	uint64_t t0, t1, c0, c1;
	double cpu, virt;

	sim_config_init(&c);
	if (mm_policy_parse(policy, &c.policy, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), 1;
	c.scenario = sim_scenario_find(scen);
	if (!c.scenario)
		return fprintf(stderr, "sim_bench: no scenario %s\n", scen), 1;
	sim_params_defaults(c.scenario, &c.params);
	if (opt && sim_params_set(c.scenario, &c.params, opt, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), 1;
	c.pool_bytes = pool;
	c.duration_ns = dur_ns;
	t0 = clock_now_ns();
	c0 = cpu_now_ns();
	if (sim_run_scenario(&c, &r, err, sizeof(err)))
		return fprintf(stderr, "%s %s: %s\n", scen, policy, err), 1;
	c1 = cpu_now_ns();
	t1 = clock_now_ns();
	sim_result_summary(r, &s);
	cpu = (double)(c1 - c0) / 1e9;
	virt = (double)s.duration_ns / 1e9;
	snprintf(poolbuf, sizeof(poolbuf), "%lluM",
		 (unsigned long long)((pool ? pool : c.scenario->pool_bytes) >> 20));
	printf("%-17s %6s %-14s %9.1f %8.2f %8.2f %9.1f %11llu %10.0f %8.0f %12llu %7.1f\n", scen,
	       poolbuf, policy, virt, cpu, (double)(t1 - t0) / 1e9, virt / cpu,
	       (unsigned long long)s.faults, (double)s.faults / cpu,
	       s.faults ? (double)(c1 - c0) / (double)s.faults : 0, (unsigned long long)s.events,
	       s.events ? (double)(c1 - c0) / (double)s.events / floor : 0);
	fflush(stdout);
	sim_result_free(r);
	return 0;
}

int main(int argc, char **argv)
{
	const char *q = getenv("THPEMU_PERF_QUICK");
	bool quick = q && strcmp(q, "1") == 0, big = false;
	const uint64_t s = 1000000000ULL, M = 1ULL << 20;
	static const char *const pol[] = {"linux-3.1", "linux-3.3", "modern-always"};
	/* duration 0: the scenario's default; quick runs are cut short */
	const struct {
		const char *scen;
		uint64_t pool, quick_pool, dur, quick_dur;
		const char *opt;
	} run[] = {
	    {"thpcompact", 0, 0, 0, 2 * s, NULL},
	    {"thpchallenge-fio", 0, 0, 0, 5 * s, NULL},
	    {"seed-2011", 0, 0, 0, 60 * s, NULL},
	    {"seed-2011-long", 0, 0, 0, 60 * s, NULL},
	    {"writeback-cp", 256 * M, 64 * M, 0, 0, "iterations=1"},
	};
	double floor = floor_ns_per_event(quick ? 20 * s / 1000 : 200 * s / 1000);
	int rc = 0, first = 1;

	if (argc > 1 && strcmp(argv[1], "--2g") == 0)
		big = true, first = 2;
	printf("%-17s %6s %-14s %9s %8s %8s %9s %11s %10s %8s %12s %7s\n", "scenario", "pool",
	       "policy", "virtual_s", "cpu_s", "wall_s", "virt/cpu", "faults", "faults/s",
	       "ns/fault", "events", "x floor");
	if (argc > first) {
		for (int i = first; i < argc; i++) {
			char buf[128], *scen = buf, *p, *policy = "linux-3.3";
			uint64_t pool = 0;

			snprintf(buf, sizeof(buf), "%s", argv[i]);
			if ((p = strchr(buf, ':'))) {
				*p++ = '\0';
				pool = strtoull(p, &p, 10) * M;
				if (*p == 'M')
					p++;
				if (*p == ':')
					policy = p + 1;
			}
			rc |= bench(scen, policy, pool, 0, NULL, floor);
		}
		return rc;
	}
	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		for (size_t j = 0; j < sizeof(pol) / sizeof(pol[0]); j++)
			rc |= bench(run[i].scen, pol[j], quick ? run[i].quick_pool : run[i].pool,
				    quick ? run[i].quick_dur : run[i].dur, run[i].opt, floor);
	if (big)
		for (int j = 0; j < 3; j++)
			rc |= bench("writeback-cp",
				    (const char *[]){"linux-3.1", "linux-3.2", "linux-3.3"}[j],
				    2048 * M, 0, NULL, floor);
	return rc;
}
