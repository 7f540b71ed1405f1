/* The run report: merging the statistics records of a run's processes (stats.c), the report's
 * per-process view (procs.c), and writing the report as JSON and as a short summary (run.c).
 *
 * Everything here works on records (stats.h) and runs wherever a report is made: in the program
 * at exit (core/live writes THPEMU_REPORT with it), in `thpemu run` once the program has ended,
 * in the machine daemon at stop. It needs no jansson (libthpemu.so links it) and no live
 * emulator (the commands link it): the reading and rendering side is runs.h.
 */
#ifndef THPEMU_REPORT_RUN_H
#define THPEMU_REPORT_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "report/stats.h"
#include "util/json.h"

struct obs_coverage;

/* ---- records (stats.c) ----------------------------------------------------------------------- */

/* Read one process's record from path: 0, or -1 if it cannot be read or is not a record of this
 * build (magic, version, size). */
int uffd_stats_read(const char *path, struct uffd_stats *st);
/* Merge src into dst (sums, maxima, histograms). */
void uffd_stats_merge(struct uffd_stats *dst, const struct uffd_stats *src);
/* Keep m among the census's largest unmanaged mappings (ordered by anonymous bytes). */
void uffd_census_keep_largest(struct uffd_census *c, const struct uffd_unmanaged_map *m);
/* Add src's census to dst: the figures of the one with more program memory, the processes
 * counted, the largest unmanaged mappings of both. */
void uffd_census_merge(struct uffd_census *dst, const struct uffd_census *src);
/* A machine's processes' memory at its largest: each live process publishes its latest census
 * in its slot as words (anon, managed, thpemu's own, then by reason), and the machine keeps the
 * sum over the live slots with the most program memory (words_program: machine_mem_offer, by
 * the process at each census and by the host's sampler); it replaces the report's figures if it
 * is larger than the largest single process's (peak_words). */
uint64_t uffd_census_words_program(const uint64_t *w);
void uffd_census_peak_words(struct uffd_census *dst, const uint64_t *w);

/* ---- processes: the report's per-process view (procs.c) ------------------------------------- */

/* How a process of the run ended, as far as `thpemu run` can tell. */
#define UFFD_PROC_ENDS(X)                                                                          \
	X(exited, "its exit hook ran: its counters are final")                                     \
	X(no_clean_exit, "it ended without its exit hook (_exit, a crash, a signal)")              \
	X(killed, "killed by a signal (the process thpemu run started: its wait status says so)")  \
	X(running, "still running when the report was written")                                    \
	X(unmanaged, "ran unmanaged (the library could not, or was told not to, manage it)")       \
	X(exec_unseen, "exec'd a program that left no record (static, set-user-ID, no preload)")

enum uffd_proc_end {
#define UFFD_X_ENUM(name, help) UFFD_END_##name,
	UFFD_PROC_ENDS(UFFD_X_ENUM)
#undef UFFD_X_ENUM
	    UFFD_END_NR
};
extern const char *const uffd_proc_end_names[];
extern const char *const uffd_proc_end_help[];

/* One process of the run as the report lists it, made by `thpemu run` from the statistics files
 * once the program ended (never on the fault path). A pid that exec'd is one entry: its identity
 * is its last program's, its counters those of every program it ran. */
struct uffd_proc_summary {
	int32_t pid, ppid;  /* ppid: its first program's parent */
	uint32_t end;	    /* enum uffd_proc_end */
	uint32_t execs;	    /* earlier programs of this pid merged in (exec'd predecessors) */
	int32_t signal;	    /* UFFD_END_killed: the signal */
	bool stepped_aside; /* the emulator stepped aside for one of its programs */
	char comm[16];	    /* its last program's name */
	char exec_from[16]; /* execs > 0: its first program's name */
	char cmdline[256];  /* its last program's, truncated */
	uint64_t faults, huge, nomem;  /* base = faults - huge (nomem included, as in "faults") */
	double p50_us, p99_us, max_us; /* per-fault service latency, huge and base together */
	uint64_t stalls, stall_ns;     /* faults slower than the stall threshold, their time */
	uint64_t anon, anon_managed;   /* its memory at its largest (its census: program's anon) */
	char note[160];		       /* why it ran unmanaged or stepped aside (its note), or "" */
};

#define UFFD_PROCS_MAX 4096 /* processes a report lists; the least busy beyond are counted */

/* The processes of a run: the busiest max by faults, in pid order once finished. */
struct uffd_proc_list {
	struct uffd_proc_summary *v;
	unsigned n, cap, max;
	uint64_t omitted, omitted_faults; /* processes left out (the least busy), their faults */
};

/* 0, or -ENOMEM. max 0 means UFFD_PROCS_MAX. */
int uffd_procs_init(struct uffd_proc_list *l, unsigned max);
void uffd_procs_free(struct uffd_proc_list *l);
/* Counters, identity (pid, ppid, comm, cmdline) and stepped_aside from a record (one program's,
 * or several merged); end, execs, exec_from and signal are the caller's. */
void uffd_proc_summarise(struct uffd_proc_summary *p, const struct uffd_stats *st);
void uffd_procs_add(struct uffd_proc_list *l, const struct uffd_proc_summary *p);
/* Keep the busiest max (counting the rest) and sort by pid. */
void uffd_procs_finish(struct uffd_proc_list *l);
/* A finished list's entry for pid, or NULL. */
const struct uffd_proc_summary *uffd_procs_find(const struct uffd_proc_list *l, int pid);

/* "processes": [...] into the current JSON object. */
void uffd_report_procs_json(struct json_w *w, const struct uffd_proc_list *l);
/* The busiest processes as a table, when there is more than one. */
void uffd_report_procs_summary(FILE *f, const struct uffd_proc_list *l);

/* ---- the run report (run.c) ------------------------------------------------------------------ */

struct obs_stalls; /* obs/stall.h */

/* A program of the run the emulator did not manage to its end: it ran unmanaged (the library
 * said why in its record, or `thpemu run` knows: a static binary, an image that left no record),
 * or the emulator stepped aside for it. `thpemu run` lists them in the summary and the report. */
struct uffd_aside {
	int32_t pid;
	bool stepped_aside; /* else it ran unmanaged */
	char comm[16];
	char why[256];
};
#define UFFD_ASIDE_MAX 64 /* listed; more are only counted */

struct uffd_program_info {
	char *const *argv;	   /* NULL-terminated, or NULL */
	struct obs_stalls *stalls; /* this process's captured stall events, or NULL */
	struct obs_stalls *waits;  /* and its per-wait events (obs/stall.h), or NULL */
	const char *stalls_json;   /* or the merged "stalls" object as JSON text (thpemu run) */
	const char *device_json;   /* the launcher's device facts as a JSON object, or NULL */
	const char *cmdline;	   /* used when argv is NULL */
	int exit_status;	   /* -1 when unknown (still running at report time) */
	double wall_s;
	double start_mono_s;	/* when the run began, CLOCK_MONOTONIC (stall event times) */
	unsigned processes;	/* managed processes merged */
	unsigned unmanaged;	/* processes that ran unmanaged */
	unsigned no_clean_exit; /* processes whose exit hook never ran (_exit, crash) */
	unsigned stepped_aside; /* programs the emulator stepped aside for */
	const struct uffd_aside *aside; /* thpemu run: the unmanaged and stepped-aside programs */
	unsigned naside;		/* listed in aside (at most UFFD_ASIDE_MAX) */
	const char *policy_spec; /* the policy asked for (shown when no process applied it) */
	const struct uffd_proc_list *procs; /* thpemu run: every process (finished), or NULL */
	const char *machine_json; /* the shared machine's facts as a JSON object, or NULL */
	const struct obs_coverage *coverage; /* the machine's AnonHugePages over the run, or NULL */
	/* more members of the report, written last (the machine daemon's "processes"), or NULL */
	void (*more_json)(struct json_w *w, void *arg);
	void *more_arg;
};

/* Write the run report (JSON, keys shared with `thpemu sim` through obs/faults.h). */
int uffd_report_json(FILE *f, const struct config *cfg, const struct uffd_stats *st,
		     const struct uffd_program_info *prog);
/* A few human lines to f (stderr); with more than one process, a table of the busiest. */
void uffd_report_summary(FILE *f, const struct uffd_stats *st,
			 const struct uffd_program_info *prog);
/* The warning of a run whose program's anonymous memory (at least min_bytes of it) is mostly
 * unmanaged, with the main reason, on f; true if said. */
bool uffd_memory_warning(FILE *f, const struct uffd_census *c, uint64_t min_bytes);

#endif
