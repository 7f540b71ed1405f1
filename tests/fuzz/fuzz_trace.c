/* Fuzz target: the fault-trace reader and the replay planner (core/obs/trace.c), as every
 * consumer of a trace runs them: load (header, configuration text, records), the configuration
 * keys a replay reads, the replay order, the plan (threads, change order, release
 * dependencies). The plan must cover every record exactly once. */
#include "fuzz.h"
#include "obs/trace.h"

static void check_plan(const struct obs_trace *t, const struct obs_trace_plan *p)
{
	size_t total = 0;

	for (unsigned i = 0; i < p->nthreads; i++) {
		total += p->threads[i].n;
		for (size_t k = 0; k < p->threads[i].n; k++)
			FUZZ_CHECK(p->threads[i].idx[k] < t->n);
	}
	FUZZ_CHECK(total == t->n);
	for (size_t i = 0; i < t->n; i++)
		FUZZ_CHECK(p->fault_before[i] == UINT32_MAX || p->fault_before[i] < t->n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"policy", "pool_bytes", "fragment", "seed", "exe"};
	const char *path = fuzz_file(data, size);
	struct obs_trace t;
	struct obs_trace_plan p;
	char err[1024], v[256];

	if (obs_trace_load(path, &t, err, sizeof(err)) != 0)
		return 0;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (obs_trace_get(&t, keys[k], v, sizeof(v)))
			FUZZ_CHECK(strlen(v) < sizeof(v));
	obs_trace_sort(&t);
	for (size_t i = 1; i < t.n; i++)
		FUZZ_CHECK(obs_trace_effect_ns(&t.recs[i - 1]) <= obs_trace_effect_ns(&t.recs[i]));
	if (obs_trace_plan(&t, &p) == 0) {
		check_plan(&t, &p);
		obs_trace_plan_free(&p);
	}
	obs_trace_free(&t);
	return 0;
}
