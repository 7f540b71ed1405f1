/* Reading the oracle's line protocol: what a guest's /init and the workloads print (the
 * "ORACLE ..." lines, core/oracle/README.md and core/oracle/workloads/wl.h), collected into one
 * boot's result, and that result as JSON.
 *
 * The same parser reads a workload's output under `thpemu run` (no /init lines, no snapshots:
 * the emulator's counters are in its own report), so one reader serves both sides of a
 * fidelity comparison. Lines that do not start with "ORACLE " are not the protocol; the last
 * few are kept (the console's tail says why a boot failed).
 */
#ifndef THPEMU_ORACLE_RESULT_H
#define THPEMU_ORACLE_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_w;

#define ORACLE_TAIL_LINES 24

enum oracle_ext {
	ORACLE_EXT_NONE,
	ORACLE_EXT_BASE,
	ORACLE_EXT_MTHP,
	ORACLE_EXT_HUGE,
	ORACLE_EXT_MIXED,
	ORACLE_EXT_UNKNOWN,
	ORACLE_EXT_NOT_SEEN
};

/* A counter: /proc/vmstat NAME VALUE, or an mTHP stat (size "64kB", stat "anon_fault_alloc"). */
struct oracle_counter {
	char name[64];
	char size[16]; /* "" for vmstat */
	int64_t value;
};

/* The counters at one moment: TAG program-begin/-end (/init), phase-begin/-end (workload). */
struct oracle_snap {
	char tag[24];
	struct oracle_counter *c;
	size_t n, cap;
};

struct oracle_extent {
	int fault;	 /* first touch: 1 huge, 0 base, -1 not reported */
	double fault_us; /* its latency */
	enum oracle_ext final;
	int collapse_rc; /* MADV_COLLAPSE: 0, -1; 1 not reported */
	char collapse_errno[12];
	double collapse_us;
};

struct oracle_pair {
	char key[64];
	char value[128];
};

/* The machine's physical memory as the workload's helper wrote it (thpemu-snapshot's text,
 * core/snapshot/README.md), carried as base64 in "ORACLE S" lines between "ORACLE snapshot
 * begin POINT" and "ORACLE snapshot end BYTES FNV1A64", and checked against both. */
enum oracle_memsnap_state {
	ORACLE_MEMSNAP_NONE, /* none was taken */
	ORACLE_MEMSNAP_OPEN, /* begun, not ended (the boot died, or the lines are still coming) */
	ORACLE_MEMSNAP_OK,
	ORACLE_MEMSNAP_BAD /* failed in the guest, or what arrived does not add up: why */
};

struct oracle_memsnap {
	enum oracle_memsnap_state state;
	char point[16]; /* start, phase */
	char *text;	/* decoded so far, NUL-terminated */
	size_t len, cap;
	bool padded; /* the last quantum had '=': the text is complete */
	char why[160];
};

struct oracle_result {
	int hello;	    /* /init's protocol version, 0: no /init (not a guest) */
	int wl_protocol;    /* the workload's, 0: it printed none */
	char workload[32];  /* ORACLE wl NAME */
	char kernel[128];   /* uname -r */
	double uptime_init; /* guest seconds at /init, at the program's start and exit */
	double uptime_start, uptime_exit;
	bool started, exited, ended;
	int exit_status;
	char disk[64]; /* where the disk was mounted, or an error */

	struct oracle_pair *settings; /* key -> ok|absent|failed */
	size_t nsettings, capsettings;
	struct oracle_pair *knobs; /* key -> the sysfs/sysctl text read back */
	size_t nknobs, capknobs;
	struct oracle_pair *meminfo; /* at /init, kB */
	size_t nmeminfo, capmeminfo;
	struct oracle_pair *info; /* the workload's ORACLE info */
	size_t ninfo, capinfo;
	struct oracle_pair *summary; /* the workload's ORACLE summary */
	size_t nsummary, capsummary;

	struct oracle_snap *snaps;
	size_t nsnaps, capsnaps;
	struct oracle_extent *ext;
	size_t next, capext;
	struct {
		double ms;
		uint64_t kb;
	} * anonhuge;
	size_t nanonhuge, capanonhuge;
	uint64_t orders[10]; /* 4 KiB pages per folio order (ORACLE order) */
	bool have_orders;

	struct oracle_memsnap memsnap;

	char errors[4][256]; /* ORACLE error lines (the first four) */
	int nerrors;
	char tail[ORACLE_TAIL_LINES][200]; /* the last lines outside the protocol */
	int ntail, tail_next;
	size_t protocol_lines, unknown_lines;
};

void oracle_result_init(struct oracle_result *r);
void oracle_result_free(struct oracle_result *r);
/* Take one line (without its newline; a trailing \r is dropped). Returns 1 for a protocol line,
 * 0 for another line, -ENOMEM. */
int oracle_result_line(struct oracle_result *r, const char *line);
/* Feed a whole text (lines separated by \n). */
int oracle_result_text(struct oracle_result *r, const char *text);

const struct oracle_snap *oracle_result_snap(const struct oracle_result *r, const char *tag);
/* The change of a counter between two snapshots (0 when either lacks it); found: both had it. */
int64_t oracle_snap_delta(const struct oracle_snap *a, const struct oracle_snap *b,
			  const char *size, const char *name, bool *found);
/* The scope of the counters a result reports: "phase" when the workload took phase snapshots,
 * else "program" (/init's), else NULL. */
const char *oracle_result_scope(const struct oracle_result *r, const struct oracle_snap **begin,
				const struct oracle_snap **end);
const char *oracle_ext_name(enum oracle_ext e);
/* Extents counted by their final state, and by their first touch (huge, base). */
void oracle_result_counts(const struct oracle_result *r, size_t final[ORACLE_EXT_NOT_SEEN + 1],
			  size_t *fault_huge, size_t *fault_base);
/* The snapshot's text when it arrived whole (len set), else NULL. */
const char *oracle_result_memsnap(const struct oracle_result *r, size_t *len);
/* FNV-1a 64 of n bytes: the snapshot's check (the workload computes the same). */
uint64_t oracle_fnv1a64(const void *p, size_t n);
/* A summary or info value, or NULL. */
const char *oracle_result_value(const struct oracle_result *r, const char *key);

/* The result's fields into the JSON object being written (core/oracle/README.md, "JSON"). */
void oracle_result_json(struct json_w *w, const struct oracle_result *r);

#endif
