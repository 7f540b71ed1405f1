/* Fuzz target: a fault trace replayed in the simulator (core/sim/replay.c) exactly as
 * `thpemu sim --replay FILE` runs it: loaded, configured from its header (policy, pool, seed,
 * recipe, a duration covering its records), run, and reported (JSON and text, into /dev/null).
 * Two deviations, for throughput, both costs of the simulator bounded by the CLI rather than
 * work a trace's bytes could multiply: the recorded pool is capped at 64 MiB (64 GiB, the CLI's
 * limit, takes ~2 s before the first record), and a trace spanning more than 1 s of recorded
 * time is not run once sim_replay_configure has accepted it (the simulator's idle background
 * costs real time per virtual second: the span rule's 1 h + 1 min per record is ~0.1 s in a
 * release build, ten times that here; tests/unit/sim_replay.c covers the rule). */
#include "fuzz.h"
#include "sim/sim.h"

#define FUZZ_POOL_MIN (8ULL << 20) /* the CLI's --pool range starts there too */
#define FUZZ_POOL_MAX (64ULL << 20)
#define FUZZ_SPAN_MAX (1000000000ULL)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	struct sim_config c;
	struct sim_replay_info in;
	struct sim_result *r;
	char err[1024];

	sim_config_init(&c);
	if (sim_replay_load(path, &c.replay, err, sizeof(err)) != 0)
		return 0;
	sim_replay_info(c.replay, &in);
	if (mm_policy_parse(in.policy[0] ? in.policy : "modern-always", &c.policy, err,
			    sizeof(err)) != 0 ||
	    sim_replay_configure(&c, 0, err, sizeof(err)) != 0 || in.span_ns > FUZZ_SPAN_MAX)
		goto out;
	if (in.pool_bytes >= FUZZ_POOL_MIN)
		c.pool_bytes = in.pool_bytes < FUZZ_POOL_MAX ? in.pool_bytes : FUZZ_POOL_MAX;
	if (sim_run_scenario(&c, &r, err, sizeof(err)) == 0) {
		FUZZ_CHECK(sim_report_json(r, fuzz_null(), true) == 0);
		sim_report_text(r, fuzz_null());
		sim_result_free(r);
	}
out:
	sim_replay_free(c.replay);
	return 0;
}
