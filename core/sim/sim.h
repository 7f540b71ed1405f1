/* The deterministic simulator: the same core/mm driven by a virtual clock.
 *
 * Engine. A discrete-event scheduler over virtual nanoseconds. Events are ordered by (time,
 * sequence number of insertion), so two events due at the same instant run in the order they
 * were scheduled: the run is a pure function of its inputs, never of pointers or the host.
 * Actors (a faulting process, the writer, kswapd) are fibers: they run on their own stacks and
 * can be suspended anywhere, in particular inside an mm hook (mm releases its lock around the
 * unlocked hooks, so other actors may call into mm meanwhile, exactly as other CPUs would).
 *
 * Time within an actor. Work done by an actor (mm's modelled costs, copying, zeroing) is charged
 * as debt: the actor's own clock, sim_actor_now(), runs ahead of the global clock by its debt.
 * sim_settle() passes the debt in virtual time: it suspends the actor until then when any other
 * event is due first, and otherwise simply advances the clock (no context switch). Waits settle
 * first. Every latency measured with sim_actor_now() therefore includes all charged work.
 *
 * Nothing here sleeps for real, reads a clock or depends on the host: the simulator's output
 * is byte-identical for identical inputs.
 */
#ifndef THPEMU_SIM_H
#define THPEMU_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/devmodel.h"
#include "mm/mm_policy.h"

struct sim_engine;
struct sim_actor;

/* A FIFO of actors parked in sim_wait(). Zero-initialised or sim_waitq_init(). */
struct sim_waitq {
	struct sim_actor *head, *tail;
};

typedef void (*sim_actor_fn)(struct sim_actor *a, void *arg);
/* A timed callback: runs on the scheduler's stack, must not sleep or wait. */
typedef void (*sim_event_fn)(struct sim_engine *e, void *arg);

#define SIM_STACK_DEFAULT (512u << 10)
#define SIM_NO_TIMEOUT	  0 /* sim_wait() timeout: wait until woken */

/* Create an engine at virtual time 0. stack_bytes 0 means SIM_STACK_DEFAULT. 0 or -ENOMEM. */
int sim_engine_create(size_t stack_bytes, struct sim_engine **out);
/* Free the engine, its actors and their stacks (actors still suspended are abandoned). */
void sim_engine_destroy(struct sim_engine *e);

uint64_t sim_now(const struct sim_engine *e);
/* Start an actor: fn(a, arg) runs on its own stack from virtual time `start` (>= now).
 * 0, -EINVAL (start in the past) or -ENOMEM. */
int sim_spawn(struct sim_engine *e, const char *name, uint64_t start, sim_actor_fn fn, void *arg,
	      struct sim_actor **out);
/* Run fn(e, arg) at virtual time t (>= now). 0, -EINVAL or -ENOMEM. */
int sim_at(struct sim_engine *e, uint64_t t, sim_event_fn fn, void *arg);
/* Process events due at or before `until`, in order. Returns when the next event is later than
 * until (the clock is then set to until), when no event is left (the clock stays at the last
 * event) or when sim_stop() was called. 0, or the first internal error (-ENOMEM). Must be called
 * from the host thread, not from an actor. May be called again to continue. */
int sim_run(struct sim_engine *e, uint64_t until);
/* Make sim_run return after the current event. */
void sim_stop(struct sim_engine *e);

struct sim_engine_stats {
	uint64_t events;   /* events processed */
	uint64_t switches; /* context switches into actors */
	uint64_t lazy;	   /* settles that advanced the clock without a switch */
	uint64_t actors;   /* actors spawned */
};
void sim_engine_get_stats(const struct sim_engine *e, struct sim_engine_stats *s);

/* ---- Inside an actor -------------------------------------------------------------------- */

/* The running actor, or NULL on the scheduler stack. */
struct sim_actor *sim_current(const struct sim_engine *e);
struct sim_engine *sim_actor_engine(const struct sim_actor *a);
const char *sim_actor_name(const struct sim_actor *a);
bool sim_actor_done(const struct sim_actor *a);
/* The actor's own clock: global time plus its unsettled debt. */
uint64_t sim_actor_now(const struct sim_actor *a);
uint64_t sim_actor_debt(const struct sim_actor *a);
/* Add ns of work to the actor's debt (never switches; safe under mm's lock). */
void sim_charge(struct sim_actor *a, uint64_t ns);
/* Pass the debt in virtual time (see above). Only the running actor may call it. */
void sim_settle(struct sim_actor *a);
/* Charge ns and settle. */
void sim_sleep(struct sim_actor *a, uint64_t ns);
/* Settle, then park on wq until sim_wake_*() (returns 0) or until timeout_ns elapsed (returns
 * -ETIMEDOUT; SIM_NO_TIMEOUT waits forever). */
int sim_wait(struct sim_actor *a, struct sim_waitq *wq, uint64_t timeout_ns);

void sim_waitq_init(struct sim_waitq *wq);
bool sim_waitq_empty(const struct sim_waitq *wq);
/* Make parked actors runnable at the current time, first parked first. Callable from actors
 * and from callbacks. Return the number woken. */
unsigned sim_wake_all(struct sim_engine *e, struct sim_waitq *wq);
unsigned sim_wake_one(struct sim_engine *e, struct sim_waitq *wq);

/* ---- Cost table (costs.c) ------------------------------------------------------------------ */

/* What the simulator charges in virtual time. The first five are mm's enum mm_cost units
 * (charged through the alloc_cost hook); the rest are charged by the simulator's hooks and
 * actors. Keys, defaults and sources: sim_costs_help() and core/sim/README.md. */
enum sim_cost {
	SIM_COST_FAULT,	       /* fixed per-fault service overhead (MM_COST_FAULT) */
	SIM_COST_BUDDY_OP,     /* one buddy allocation or free (MM_COST_BUDDY_OP) */
	SIM_COST_SCAN_PFN,     /* one pfn examined by a compaction scanner (MM_COST_SCAN_PFN) */
	SIM_COST_ISOLATE,      /* one page isolated (MM_COST_ISOLATE) */
	SIM_COST_RECLAIM_PAGE, /* one page scanned by direct reclaim (MM_COST_RECLAIM_PAGE) */
	SIM_COST_MIGRATE_PAGE, /* migrate one anon page: unmap, TLB flush, copy, remap */
	SIM_COST_COPY_4K,      /* copy 4 KiB (page-cache migration, write(2)/read(2) copies) */
	SIM_COST_CLEAR_2M,     /* zero a 2 MiB huge page */
	SIM_COST_CLEAR_4K,     /* zero a 4 KiB page on a base fault */
	SIM_COST_TOUCH_4K,     /* the program writing one faulted 4 KiB page (not fault latency) */
	SIM_COST_WRITEOUT,     /* ->writepage of one dirty page by sync migration (submission) */
	SIM_COST_NR,
};

struct sim_costs {
	uint64_t ns[SIM_COST_NR]; /* nanoseconds per unit */
};

/* The documented defaults. */
void sim_costs_defaults(struct sim_costs *c);
const char *sim_cost_key(enum sim_cost k);
/* Set one cost from "key", "value" (a duration with unit, e.g. 20ns, 5us). 0, -ENOENT
 * (unknown key) or -EINVAL (bad value). */
int sim_costs_set(struct sim_costs *c, const char *key, const char *value);
/* Apply a calibration file: key=value lines, '#' comments, blank lines. On error returns
 * -errno and writes one line naming FILE:LINE and the key into err. */
int sim_costs_load(struct sim_costs *c, const char *path, char *err, size_t errlen);
/* One line per key: key, default, what it is, where the default comes from. */
void sim_costs_help(FILE *f);

/* ---- Scenarios (scenario.c, scen_*.c) ------------------------------------------------------ */

enum sim_param_type {
	SIM_P_SIZE,	/* bytes: 64M, 1G */
	SIM_P_DURATION, /* ns: 500ms, 2s */
	SIM_P_COUNT,	/* a non-negative integer */
	SIM_P_ACTORS,	/* how many simulated processes or threads: 0..SIM_MAX_ACTORS */
	SIM_P_FRACTION, /* 0.5, 20% */
	SIM_P_RATIO,	/* like a fraction but may exceed 1: 1.25, 125% (at most 100) */
	SIM_P_BOOL,	/* 0/1, yes/no, on/off */
	SIM_P_STRING,	/* free text (an mm_fragment recipe) */
};

struct sim_param_def {
	const char *key;
	enum sim_param_type type;
	const char *def; /* default, in the same syntax a user writes */
	const char *help;
};

#define SIM_MAX_PARAMS 24
/* Simulated processes or threads a parameter may ask for: each is a fiber with a stack mapping
 * of its own, and the kernel's vm.max_map_count (65530) bounds those well below 10^9. */
#define SIM_MAX_ACTORS 10000
#define SIM_PARAM_STR  128

/* Values of a scenario's parameters, by index into its table. */
struct sim_params {
	uint64_t u[SIM_MAX_PARAMS];	       /* SIZE, DURATION, COUNT, BOOL */
	double f[SIM_MAX_PARAMS];	       /* FRACTION, RATIO */
	char s[SIM_MAX_PARAMS][SIM_PARAM_STR]; /* STRING, and every value as given */
};

struct sim_world;

struct sim_scenario {
	const char *name;
	const char *summary;  /* one line for --help */
	uint64_t pool_bytes;  /* default --pool */
	uint64_t duration_ns; /* default --duration */
	const struct sim_param_def *params;
	unsigned nparams;
	/* Set up the initial state and spawn the actors at virtual time 0. 0 or -errno (err). */
	int (*start)(struct sim_world *w, char *err, size_t errlen);
	/* The scenario ends itself (whole iterations) after --duration; without this flag the
	 * run is cut at --duration. */
	bool runs_to_completion;
	/* The machine the scenario describes where it is not the simulator's default: a device
	 * spec (NULL: SIM_DEFAULT_DEVICE) and the file system of the writer's files (fs_set: use
	 * fs, else the policy's). --device, --fs and the policy key fs override them
	 * (sim_config_scenario_machine). */
	const char *device;
	bool fs_set;
	enum mm_fs fs;
};

/* NULL-terminated list of the built-in scenarios. */
const struct sim_scenario *const *sim_scenarios(void);
const struct sim_scenario *sim_scenario_find(const char *name);
void sim_params_defaults(const struct sim_scenario *s, struct sim_params *p);
/* Apply "key=value" to a scenario's parameters. 0, or -EINVAL with a one-line reason naming
 * the key and the accepted keys or values in err. */
int sim_params_set(const struct sim_scenario *s, struct sim_params *p, const char *kv, char *err,
		   size_t errlen);
/* Value accessors by key (the key must exist in the scenario's table). */
uint64_t sim_param_u(const struct sim_world *w, const char *key);
double sim_param_f(const struct sim_world *w, const char *key);
const char *sim_param_s(const struct sim_world *w, const char *key);
/* The scenarios, their defaults and parameters (for --help). */
void sim_scenarios_help(FILE *f);

/* ---- A run (run.c) and its report (report.c) --------------------------------------------- */

/* ---- Trace replay (replay.c) ----------------------------------------------------------------- */

/* A fault trace (core/obs/trace.h) loaded for replay. */
struct sim_replay;

/* What the trace says about the run that recorded it (defaults for the replay). */
struct sim_replay_info {
	char policy[256];    /* the recording's policy (canonical spec) */
	uint64_t pool_bytes; /* its pool */
	char fragment[256];  /* its initial-state recipe */
	uint64_t seed;
	char exe[256];
	size_t records, faults, faults_huge;
	unsigned threads; /* recorded threads (one replay actor each) */
	bool complete;	  /* the trace ends with its END record */
	uint64_t dropped; /* records the live rings dropped */
	uint64_t span_ns; /* time of the last record */
	bool zero_page;	  /* the recording mapped zero pages (obs_trace_zero_pages) */
};

/* How the replay went. "compared" recorded faults were served here as first touches; of them
 * huge_huge + base_base got the recorded decision. */
struct sim_replay_stats {
	uint64_t recorded;				     /* fault records replayed */
	uint64_t compared;				     /* ... served as first touches here */
	uint64_t huge_huge, huge_base, base_huge, base_base; /* recorded -> replayed */
	uint64_t absorbed; /* on a page this replay had already populated */
	uint64_t orphans;  /* outside any region (a recorded race with munmap) */
	uint64_t implied;  /* extra base faults: a recorded huge touch served with 4 KiB pages */
	uint64_t host_fallbacks; /* recorded host refusals mirrored */
	uint64_t cand_mismatch;	 /* huge_ok differed from the recording's */
	uint64_t map_conflicts;	 /* memory changes that did not fit the modelled address space */
	uint64_t huge_splits;
	uint64_t regions;
	unsigned threads_done;
};

/* Read a trace. 0, or -errno with a one-line reason in err. */
int sim_replay_load(const char *path, struct sim_replay **out, char *err, size_t errlen);
/* The recorded time a replay covers by default: an idle virtual hour costs the simulator
 * ~25 ms (its background threads look every 10 ms), so a trace may span 1 h + 1 min per
 * record; beyond, only with an explicit duration (a corrupt time would run for hours). */
#define SIM_REPLAY_SPAN_BASE_NS	      (3600ULL * 1000000000ULL)
#define SIM_REPLAY_SPAN_PER_RECORD_NS (60ULL * 1000000000ULL)
#define SIM_REPLAY_TAIL_NS	      (600ULL * 1000000000ULL) /* after the last record */
uint64_t sim_replay_span_max(const struct sim_replay_info *in);
void sim_replay_free(struct sim_replay *rp);
void sim_replay_info(const struct sim_replay *rp, struct sim_replay_info *out);
/* The scenario that replays sim_config.replay (not in sim_scenarios()). */
extern const struct sim_scenario sim_scen_replay;

/* Zero pages (sim_config.zero_page): read first touches that mapped one, first writes to one. */
struct sim_zero_stats {
	uint64_t faults;      /* read first touches that mapped the 4 KiB zero page */
	uint64_t huge_faults; /* ... the huge zero page (6.x) */
	uint64_t wp_faults;   /* first writes to a zero page (a 4 KiB frame each) */
};

struct sim_config {
	struct sim_replay *replay; /* scenario "replay": the loaded trace (replayed once) */
	struct mm_policy policy;
	const struct sim_scenario *scenario;
	struct sim_params params;
	uint64_t seed;
	uint64_t pool_bytes;   /* 0: the scenario's default */
	uint64_t duration_ns;  /* 0: the scenario's default */
	char device_spec[128]; /* PRESET[:key=value,...] as given, for the report */
	struct devm_params device;
	struct sim_costs costs;
	uint64_t stall_threshold_ns; /* faults (and single waits) at least this long are stalls */
	/* a read first touch maps the zero page where the era does (--zero-page, default on; a
	 * replay: what the recording did); off, a read is decided as a write */
	bool zero_page;
};

#define SIM_DEFAULT_DEVICE	    "usb2-stick-2011"
#define SIM_DEFAULT_STALL_THRESHOLD 1000000000ULL /* 1 s, as in the 2011 reports */

/* Defaults for everything but policy and scenario (which the caller sets). */
void sim_config_init(struct sim_config *c);
/* Make c replay c->replay as `thpemu sim --replay` does: the replay scenario, from the
 * recording's --fragment recipe, with its seed and a duration covering every record
 * (sim_replay_span_max, then SIM_REPLAY_TAIL_NS), except what keep (SIM_REPLAY_KEEP_*) says
 * the caller set. 0, or -EINVAL with a one-line reason in err. The policy and the pool stay
 * the caller's (the recording's are in sim_replay_info; the CLI owns the pool's limits). */
#define SIM_REPLAY_KEEP_SEED	  2u
#define SIM_REPLAY_KEEP_DURATION  4u
#define SIM_REPLAY_KEEP_ZERO_PAGE 8u /* else zero pages as the recording had them */
int sim_replay_configure(struct sim_config *c, unsigned keep, char *err, size_t errlen);
/* Parse PRESET[:key=value,...] into p. 0 or -EINVAL with a one-line reason in err. */
int sim_device_parse(const char *spec, struct devm_params *p, char *err, size_t errlen);
/* Give c its scenario's machine where the caller chose none: the scenario's device unless
 * device_given, its file system unless fs_given (--fs, or the policy key fs). Call after
 * c->scenario and c->policy are set. 0, or -EINVAL with a one-line reason in err. */
int sim_config_scenario_machine(struct sim_config *c, bool device_given, bool fs_given, char *err,
				size_t errlen);

struct sim_result;

/* Run the scenario. 0, or -errno with a one-line reason in err (bad recipe, no memory). */
int sim_run_scenario(const struct sim_config *c, struct sim_result **out, char *err, size_t errlen);
void sim_result_free(struct sim_result *r);

/* The run's numbers, for tests and the CLI. */
struct sim_summary {
	uint64_t faults, huge, base, nomem;
	uint64_t mthp; /* faults served by a multi-size THP folio (orders 2..8) */
	double huge_pct;
	uint64_t extents, extents_huge; /* THP-eligible 2 MiB extents first touched, served huge */
	uint64_t wb_waits, compact_wb_waits, reclaim_wb_waits;
	uint64_t wb_wait_ns, compact_wb_wait_ns, reclaim_wb_wait_ns, wb_wait_max_ns;
	uint64_t stalls, stall_max_ns; /* per-fault: faults whose service crossed the threshold */
	uint64_t wait_stalls, wait_stall_ns,
	    wait_stall_max_ns; /* per-wait: single waits that did */
	uint64_t duration_ns;
	uint64_t events;
	struct sim_zero_stats zero;
};
void sim_result_summary(const struct sim_result *r, struct sim_summary *s);
const uint64_t *sim_result_vmstat(const struct sim_result *r);

/* The JSON report (deterministic bytes for identical inputs). 0 or -EIO. */
int sim_report_json(const struct sim_result *r, FILE *f, bool pretty);
/* A human summary, stall events in the 2011 format. */
void sim_report_text(const struct sim_result *r, FILE *f);

#endif
