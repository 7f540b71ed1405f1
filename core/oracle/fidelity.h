/* The fidelity table: thpemu's emulated kernel against the real kernel, on the same workload
 * from the same starting state (core/oracle/README.md, "Fidelity").
 *
 * Pure: boots' and runs' results (result.h) in, a table out. Per setting and row the real
 * kernel's min / median / max over boots beside thpemu's over runs, a verdict per row, and the
 * pairs of settings where the two move in opposite directions; as text and as JSON. Running the
 * boots and the runs is cmd_fidelity.c's.
 */
#ifndef THPEMU_ORACLE_FIDELITY_H
#define THPEMU_ORACLE_FIDELITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "oracle/result.h"

struct json_w;

enum fid_kind {
	FID_PCT,     /* a percentage of the region's 2 MiB extents */
	FID_COUNTER, /* a vmstat counter's change over the workload's phase */
};

/* One row: what it is and where each side's value comes from. */
struct fid_row {
	const char *key;   /* huge_fault_pct, huge_final_pct, or the vmstat name */
	const char *label; /* the text table's */
	enum fid_kind kind;
	const char *real; /* the real kernel: where it counts it, and how the guest reads it */
	const char *emu;  /* thpemu: where core/mm counts it, and how the run reads it */
	bool optional;	  /* in the text, HTML and verdicts only where a value is non-zero */
	const char
	    *size; /* a per-size stat (hugepages-<size>/stats/<stat>): "64kB"; NULL: vmstat */
	const char *stat; /* its file name: anon_fault_alloc, ... */
};

/* 13 rows, then the per-size ones: 7 sizes (16kB..1024kB) x 4 stats */
#define FID_MTHP_SIZES 7
#define FID_MTHP_STATS 4
#define FID_NROWS      (13 + FID_MTHP_SIZES * FID_MTHP_STATS)

extern const struct fid_row fid_rows[FID_NROWS];

/* Tolerances of the verdicts. */
#define FID_PCT_POINTS	5.0  /* huge %: within this many points of the real median */
#define FID_BIMODAL_GAP 10.0 /* huge %: real boots split by a gap wider than this: bimodal */
#define FID_COUNTER_REL 0.25 /* a counter: within this fraction of the real median */

/* One boot's or one run's values. */
struct fid_sample {
	double v[FID_NROWS];
	bool have[FID_NROWS];
};

/* A result's values: the huge % from its fault and extent lines, the counters from its phase
 * snapshots (phase-begin/-end; a result without them has no counters). With program, a program
 * outside the suite (no phase of its own): the counters over the whole program, /init's
 * program-begin/-end, and only when the result has no phase snapshots. */
void fid_sample_from_result(const struct oracle_result *r, struct fid_sample *s, bool program);

struct fid_stat {
	int n; /* values: 0, and the rest is meaningless */
	double min, median, max;
	bool bimodal; /* sorted values have a gap wider than FID_BIMODAL_GAP (huge % only) */
};

/* The stat of row over n samples (those without the row skipped). */
void fid_stat(const struct fid_sample *s, int n, int row, struct fid_stat *st);

enum fid_verdict {
	FID_NA,	     /* a side has no value */
	FID_CLOSE,   /* within the tolerance of the real median */
	FID_INRANGE, /* inside the real min..max (huge %: only where the real kernel is bimodal) */
	FID_OFF,
};

const char *fid_verdict_name(enum fid_verdict v);
enum fid_verdict fid_verdict(enum fid_kind kind, const struct fid_stat *real,
			     const struct fid_stat *emu);

#define FID_MAX_SETTINGS 8
#define FID_MAX_SAMPLES	 32

/* One side of a setting: its boots or runs. */
struct fid_side {
	int n;
	struct fid_sample s[FID_MAX_SAMPLES];
	uint64_t seed[FID_MAX_SAMPLES];
	char status[FID_MAX_SAMPLES][24]; /* ok, or why the sample has no values */
	char note[FID_MAX_SAMPLES][96];	  /* e.g. the host could not map every huge extent */
};

struct fid_setting {
	char name[64];	  /* "enabled=always defrag=madvise" */
	char policy[320]; /* thpemu's policy: the profile and its keys */
	struct fid_side real, emu;
	/* fid_build's */
	struct fid_stat rs[FID_NROWS], es[FID_NROWS];
	enum fid_verdict verdict[FID_NROWS];
};

/* Settings a and b (a before b in the list), where row moved one way on the real kernel and
 * the other under thpemu, each by more than its tolerance. */
struct fid_flip {
	int row, a, b;
	double real_delta, emu_delta; /* medians: b - a */
};

#define FID_MAX_FLIPS (FID_NROWS * FID_MAX_SETTINGS * (FID_MAX_SETTINGS - 1) / 2)

struct fid_table {
	/* what was compared (the text's header and the JSON's config) */
	char command[1024]; /* the command line that made the table */
	char kernel[128];   /* the real kernel: package version, release */
	char workload[256]; /* the workload's command line in the guest */
	char emu_cmd[512];  /* thpemu's side, one run's command line (its snapshot a placeholder) */
	char mode[16];	    /* pinned, free */
	char at[16];	    /* where the guest snapshots memory: phase, start */
	uint64_t mem_bytes;
	int nset;
	struct fid_setting set[FID_MAX_SETTINGS];
	/* fid_build's */
	bool shown[FID_NROWS]; /* not optional, or some value of some setting non-zero */
	int nflips;
	struct fid_flip flips[FID_MAX_FLIPS];
};

/* Stats, verdicts and flips from the samples. */
void fid_build(struct fid_table *t);
/* The direction of a change from x to y: 1, -1, or 0 when within the row's tolerance. */
int fid_direction(enum fid_kind kind, double x, double y);

void fid_text(FILE *f, const struct fid_table *t);
/* A self-contained HTML page of the same table (no script, no external resource). */
void fid_html(FILE *f, const struct fid_table *t);
void fid_json(struct json_w *w, const struct fid_table *t);
/* Counts of rows per verdict over every setting (indexed by enum fid_verdict). */
void fid_tally(const struct fid_table *t, int counts[FID_OFF + 1]);

#endif
