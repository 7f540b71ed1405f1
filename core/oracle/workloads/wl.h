/* The oracle's workload suite: what every workload shares.
 *
 * A workload runs unchanged in two worlds: as a static binary in a guest booted by `thpemu
 * oracle` (a real kernel), and as an ordinary program under `thpemu run` (the emulated one).
 * It speaks the same line protocol in both (core/oracle/README.md, "The line protocol"), so one
 * parser (core/oracle/result.h) reads both:
 *
 *   ORACLE wl NAME 1                     the workload and the protocol version
 *   ORACLE info KEY=VALUE...             what it resolved (sizes in bytes, the seed, ...)
 *   ORACLE fault I huge|base US          extent I's first touch and its latency
 *   ORACLE extent I STATE                extent I at the end (huge, mthp, base, mixed, none,
 *                                        unknown), from pagemap + /proc/kpageflags
 *   ORACLE order ORDER PAGES             4 KiB pages of the region in folios of ORDER
 *   ORACLE anonhuge T_MS KB              AnonHugePages of the region T_MS after the phase began
 *   ORACLE collapse I RC ERRNO US        MADV_COLLAPSE of extent I
 *   ORACLE snap TAG vmstat NAME VALUE    counters at the phase's begin and end (TAG phase-begin,
 *   ORACLE snap TAG mthp SIZE STAT VALUE phase-end), only when ORACLE_COUNTERS=1 (the guest)
 *   ORACLE snapshot begin|end|failed ... the machine's memory (thpemu-snapshot's text, base64 in
 *   ORACLE S BASE64                      "S" lines), only with $ORACLE_SNAPSHOT (the helper) at
 *                                        $ORACLE_SNAPSHOT_AT (start, or phase: the default)
 *   ORACLE summary KEY=VALUE...          the outcome
 *   ORACLE error MESSAGE                 why it could not run
 *
 * Everything is measured into memory during the phase and printed after it, so printing does
 * not disturb what is measured. No thpemu code is linked: thpemu_active(), thpemu_vmstat() and
 * thpemu_mthp_stats() are looked up weakly, to refuse sizes relative to the machine's memory
 * under the emulator (its pool is not the host's /proc/meminfo) and to snapshot the emulated
 * machine's counters there instead of the host's /proc/vmstat and per-size stats files.
 */
#ifndef THPEMU_WL_H
#define THPEMU_WL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WL_PROTOCOL   1
#define WL_HPAGE      (2UL << 20)
#define WL_PAGE	      4096UL
#define WL_PROBE      (64 * WL_PAGE) /* thpscale's mincore probe: 256 KiB into the extent */
#define WL_MAX_SAMPLE 4096

struct wl_region {
	char *base;
	size_t len; /* a multiple of WL_HPAGE, base aligned to it */
};

/* One extent's first touch. */
struct wl_fault {
	uint64_t ns;
	bool huge;
	bool done;
};

/* ---- start, arguments, errors ---------------------------------------------------------------- */
void wl_set_name(const char *name); /* for messages, before the options are read */
void wl_start(const char *name);    /* the options are good: ORACLE wl NAME */
__attribute__((noreturn, format(printf, 1, 2))) void wl_usage(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void wl_die(const char *fmt, ...);
/* SIZE ("64M") or PCT% of base_kb (kB); 0 or -1. pct_out tells which it was. */
int wl_parse_amount(const char *s, uint64_t base_kb, uint64_t *bytes, bool *pct_out);
/* A duration with its unit ("500ms", "2s") or "0". */
int wl_parse_duration(const char *s, uint64_t *ns);
uint64_t wl_parse_uint(const char *opt, const char *s, uint64_t max);
/* OPT's madvise advice for wl_advise: hugepage, none or nohugepage (else wl_usage naming OPT). */
const char *wl_parse_advice(const char *opt, const char *s);
/* An amount relative to the machine's memory is refused under thpemu (name: the option). */
void wl_check_relative(const char *opt, bool pct);
/* getopt_long over a workload's options (no short ones; --help has val 'h'): the next option's
 * val, or -1 after the last. --help prints usage(name) and exits 0; an unknown option or an
 * argument left over is a usage error. */
struct option;
int wl_getopt(const char *name, int argc, char **argv, const struct option *lo,
	      void (*usage)(const char *name));
/* OPT's amount: SIZE or PCT% of base_kb, at least min bytes (else wl_usage naming OPT); a
 * percentage is refused under thpemu. */
uint64_t wl_amount(const char *opt, const char *s, uint64_t base_kb, uint64_t min);
/* --seed, else $ORACLE_SEED, else 1. */
uint64_t wl_seed(uint64_t opt);
uint64_t wl_rand(uint64_t *state);
/* Run $ORACLE_SNAPSHOT (the static thpemu-snapshot) when point ("start": wl_start; "phase":
 * wl_phase_begin) is $ORACLE_SNAPSHOT_AT (default phase), and print its text as ORACLE lines. */
void wl_snapshot_point(const char *point);

/* Where a workload's file goes by default: $ORACLE_DISK (the guest's disk), else
 * $THPEMU_DEVICE_DIR (thpemu run --device: the emulated machine's device, whose page cache is
 * the pool's), else $TMPDIR, else /tmp (a guest's tmpfs). */
const char *wl_file_dir(void);

/* ---- memory ------------------------------------------------------------------------------ */
uint64_t wl_meminfo_kb(const char *field); /* /proc/meminfo "MemFree" etc.; 0 if absent */
/* A 2 MiB aligned private anonymous mapping of len (rounded up to 2 MiB); dies on failure. */
void wl_map(struct wl_region *r, size_t len);
void wl_advise(const struct wl_region *r, const char *advice); /* hugepage|nohugepage|none */
/* First touch of extent i as thpscale does it: a byte, mincore() 256 KiB in, then the whole
 * 2 MiB (memset, or a byte per 4 KiB page with per_page). */
void wl_touch_extent(const struct wl_region *r, size_t i, bool per_page, struct wl_fault *f);
/* Filler of fill bytes in 4 KiB pages (MADV_NOHUGEPAGE), all touched, then all but one page in
 * every keep freed (the kept one chosen by the seed); mlock'ed (MLOCK_ONFAULT) if asked. */
void wl_fill(struct wl_region *filler, uint64_t fill, unsigned keep, bool lock, uint64_t *rng);

/* ---- the phase: counters, samples, results ------------------------------------------------ */
void wl_phase_begin(void);
void wl_phase_end(void);
uint64_t wl_now_ns(void);
double wl_phase_ms(void); /* since wl_phase_begin */
/* AnonHugePages (kB) of the VMAs in the region, from /proc/self/smaps. */
uint64_t wl_anonhuge_kb(const struct wl_region *r);
void wl_sample(const struct wl_region *r); /* records (time, AnonHugePages) */
void wl_sleep_ns(uint64_t ns);
/* Sleep every_ns and sample, for dur_ns; with until_huge stop once the whole region is huge
 * (AnonHugePages): the phase's time then in ms, else -1. */
double wl_sample_for(const struct wl_region *r, uint64_t dur_ns, uint64_t every_ns,
		     bool until_huge);
/* Print the phase's snapshots and samples (after wl_phase_end). */
void wl_print_phase(void);
void wl_print_faults(const struct wl_fault *f, size_t n);
/* Print ORACLE extent and order lines for the region; the number of extents found huge. */
size_t wl_print_extents(const struct wl_region *r);
/* "p50_us=.. p90_us=.. p99_us=.. max_us=.." of the faults into buf. */
void wl_latency_summary(const struct wl_fault *f, size_t n, char *buf, size_t len);
/* After wl_phase_end, for a region faulted extent by extent: the phase, every fault, every
 * extent, and the summary line (extents, huge at first touch, final, latencies). */
void wl_report_faults(const struct wl_region *r, const struct wl_fault *f, size_t n);

/* ---- the workloads ----------------------------------------------------------------------- */
int wl_fault_main(const char *name, int argc, char **argv);	 /* fragfault, unevictable, mthp */
int wl_thpscale_main(const char *name, int argc, char **argv);	 /* thpscale */
int wl_thpcompact_main(const char *name, int argc, char **argv); /* thpcompact */
int wl_khugepaged_main(const char *name, int argc, char **argv); /* khugepaged, collapse */
int wl_shrinker_main(const char *name, int argc, char **argv);	 /* shrinker */
int wl_writer_main(const char *name, int argc, char **argv);	 /* writer */
int wl_shmem_main(const char *name, int argc, char **argv);	 /* shmem */

#endif
