/* Fault traces: every first touch a managed process took, and every change to its managed
 * memory, in a compact binary file — so that a run can be replayed under another policy on the
 * identical fault sequence (`thpemu sim --replay`, `thpemu replay`).
 *
 * File layout (little-endian, the host's; x86_64 only writes and reads it):
 *
 *   struct obs_trace_hdr   64 bytes: magic "THPEMUTR", version, header and record sizes,
 *                          the trace's time origin (CLOCK_MONOTONIC and CLOCK_REALTIME), pid
 *   text                   hdr_bytes - 64 bytes: "key=value\n" lines (the run's configuration:
 *                          policy, pool_bytes, fragment, seed, min_region, handlers,
 *                          stall_threshold_ns, exe, cmdline; v2: zero_page, 1 when read first
 *                          touches mapped zero pages), NUL-padded to a multiple of 8
 *   struct obs_trace_rec   40 bytes each, until the end of the file. An OBS_TR_END record is
 *                          written when the process reaches its exit hook; the few records of
 *                          its last moments (destructors, its report) may follow it. A trace
 *                          without one is incomplete: a crash, _exit or a kill lose the last
 *                          ~10 ms. One that ends inside a record was cut short (a full disk:
 *                          the writer removes such a file; a partial copy)
 *
 * Records are written in the order a background thread drained them from per-thread rings, so
 * the file is only roughly time-ordered; obs_trace_sort() gives the replay order. Times are ns
 * since t0. A record:
 *
 *   type      t_ns          addr         val              val2           flags, cause, advice
 *   FAULT     message read  page         service latency  ns until mm    OBS_TRF_*, mm_cause
 *                                                         began deciding
 *   MAP       the call      range start  length           -              -
 *   ADOPT     the call      range start  length           -              -
 *   RESIDENT  the call      range start  length           -              -
 *   RELEASE   the call      range start  length           -              OBS_TRF_UNMAP
 *   ADVISE    the call      range start  length           -              advice (mm_vma_advice)
 *   REMAP     the call      old start    new length       new start      -
 *   END       exit hook     0            records dropped  records written
 *
 * MAP: a range became managed (a new region, or a hole of one mapped again). ADOPT: a mapping
 * made before the emulator started (or the result of a partial mremap) became managed; the
 * RESIDENT records right after it name its pages that were already resident (outside the pool).
 * RELEASE: pages given back (munmap and MAP_FIXED: OBS_TRF_UNMAP; MADV_DONTNEED/FREE: not).
 * REMAP: a whole region moved or grew to [val2, val2 + val) keeping its pages (a cut tail is a
 * RELEASE before it). tid is the faulting thread, or the thread that made the call.
 *
 * Zero pages (v2, a recording with zero_page=1): a read first touch may be decided MM_FAULT_ZERO
 * or MM_FAULT_HUGE_ZERO (no frame); the first write to a zero page is a FAULT of its own with
 * OBS_TRF_WP_ZERO (decided base, or nomem); reads of a huge zero extent's other pages take no
 * fault in the kernel and have no record. A version 1 trace has none of these: its reads were
 * decided as writes.
 *
 * Replay convention: a FAULT whose decision was huge stands for the program touching the whole
 * 2 MiB extent (as usemem and mmtests' thpcompact do); a replay that decides base there touches
 * the extent's other pages too ("implied" faults). A FAULT on a page the replay has already
 * populated is "absorbed".
 */
#ifndef THPEMU_OBS_TRACE_H
#define THPEMU_OBS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OBS_TRACE_MAGIC "THPEMUTR"
/* Version 2: zero pages (a decision MM_FAULT_ZERO / MM_FAULT_HUGE_ZERO needs a third bit,
 * OBS_TRF_DEC_HI; OBS_TRF_WP_ZERO; the header key zero_page). Version 1 files still load: their
 * decisions fit two bits, and they have no zero pages (a recording decided reads as writes). */
#define OBS_TRACE_VERSION     2
#define OBS_TRACE_VERSION_MIN 1
#define OBS_TRACE_HDR_MAX     8192 /* header + configuration text, at most */

/* What a trace can hold (obs_trace_load refuses a file beyond, as corrupt). Times are below
 * 2^62 ns (146 years) so that t_ns + val2 never wraps; ranges are page-aligned, inside the
 * x86_64 user address space (57 bits with 5-level paging) and do not wrap; all the ranges of
 * a trace together cover at most 64 GiB + 2 MiB per record, so that a replay's work on them
 * is bounded by the file's size (a live program's changes: its mappings, each faulted page a
 * record of its own); and a plan has at most OBS_TRACE_THREADS_MAX threads. */
#define OBS_TRACE_TIME_MAX	   (1ULL << 62)
#define OBS_TRACE_ADDR_MAX	   (1ULL << 57)
#define OBS_TRACE_PAGES_BASE	   (1ULL << 24) /* 64 GiB */
#define OBS_TRACE_PAGES_PER_RECORD 512		/* 2 MiB */
#define OBS_TRACE_THREADS_MAX	   4096

enum obs_trace_type {
	OBS_TR_FAULT = 1,
	OBS_TR_MAP,
	OBS_TR_ADOPT,
	OBS_TR_RESIDENT,
	OBS_TR_RELEASE,
	OBS_TR_ADVISE,
	OBS_TR_REMAP,
	OBS_TR_END,
	OBS_TR_NTYPES,
};

/* FAULT flags */
#define OBS_TRF_WRITE	   0x01 /* a write fault (else a read) */
#define OBS_TRF_DEC_SHIFT  1	/* bits 1-2: mm's decision, enum mm_fault_outcome (low bits) */
#define OBS_TRF_DEC_MASK   0x06
#define OBS_TRF_CAND	   0x08 /* mm was asked with huge_ok (an empty, wholly mapped extent) */
#define OBS_TRF_HOST_SMALL 0x10 /* mm said huge, the host mapped it with 4 KiB pages */
#define OBS_TRF_REAL_PMD   0x20 /* huge and verified PMD-mapped on the host */
#define OBS_TRF_DEC_HI	   0x40 /* (v2) bit 2 of the decision: MM_FAULT_ZERO, MM_FAULT_HUGE_ZERO */
#define OBS_TRF_WP_ZERO                                                                            \
	0x80 /* (v2) the first write to a zero page (mm asked with wp_zero),                       \
	      * not a first touch */
/* RELEASE flags */
#define OBS_TRF_UNMAP 0x01 /* munmap (pages gone) rather than MADV_DONTNEED (pages empty) */

struct obs_trace_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_bytes; /* this struct + the text, a multiple of 8 */
	uint32_t rec_bytes; /* sizeof(struct obs_trace_rec) */
	uint32_t flags;
	uint64_t t0_mono_ns;
	uint64_t t0_real_ns;
	int32_t pid;
	uint32_t reserved0;
	uint64_t reserved[2];
};

struct obs_trace_rec {
	uint64_t t_ns;
	uint64_t addr;
	uint64_t val;
	uint64_t val2;
	uint32_t tid;
	uint8_t type;	/* enum obs_trace_type */
	uint8_t flags;	/* OBS_TRF_* */
	uint8_t cause;	/* FAULT: enum mm_cause */
	uint8_t advice; /* ADVISE: enum mm_vma_advice */
};

_Static_assert(sizeof(struct obs_trace_hdr) == 64, "trace header is 64 bytes");
_Static_assert(sizeof(struct obs_trace_rec) == 40, "trace records are 40 bytes");

static inline unsigned obs_trace_decision(const struct obs_trace_rec *r)
{
	return ((r->flags & OBS_TRF_DEC_MASK) >> OBS_TRF_DEC_SHIFT) |
	       ((r->flags & OBS_TRF_DEC_HI) ? 4u : 0u);
}

/* The FAULT flags that hold decision (enum mm_fault_outcome, 0..7). */
static inline unsigned obs_trace_decision_flags(unsigned decision)
{
	return ((decision << OBS_TRF_DEC_SHIFT) & OBS_TRF_DEC_MASK) |
	       ((decision & 4u) ? OBS_TRF_DEC_HI : 0u);
}

/* When the record takes effect, for ordering a replay: a fault when mm began deciding it. */
static inline uint64_t obs_trace_effect_ns(const struct obs_trace_rec *r)
{
	return r->type == OBS_TR_FAULT ? r->t_ns + r->val2 : r->t_ns;
}

const char *obs_trace_type_name(unsigned type);

/* Fill hdr and write "key=value" text for a header into buf (NUL-padded to a multiple of 8);
 * returns the header's total size, or 0 if it does not fit in cap. No allocation, no stdio. */
size_t obs_trace_header(void *buf, size_t cap, uint64_t t0_mono_ns, uint64_t t0_real_ns,
			int32_t pid, const char *const *keys, const char *const *values,
			unsigned nkv);

/* A trace read into memory. */
struct obs_trace {
	struct obs_trace_hdr hdr;
	char *text;		    /* the configuration lines */
	struct obs_trace_rec *recs; /* in file order (obs_trace_sort: replay order) */
	size_t n;		    /* records, END excluded */
	bool complete;		    /* an END record was found */
	bool cut;		    /* the file ends inside a record: it was cut short */
	uint64_t dropped;	    /* from END: records the rings could not take */
	uint64_t counts[OBS_TR_NTYPES];
	size_t bad; /* records of unknown type (skipped) */
};

/* Read path into t. Returns 0, or -errno with a one-line reason in err (not a trace, a version
 * outside OBS_TRACE_VERSION_MIN..OBS_TRACE_VERSION, unreadable, a record beyond the limits above:
 * -EINVAL or -E2BIG). A trailing partial record is ignored; records of unknown type are skipped
 * (counted in bad). */
int obs_trace_load(const char *path, struct obs_trace *t, char *err, size_t errlen);
/* Only the header and its configuration text (no records). */
int obs_trace_load_header(const char *path, struct obs_trace *t, char *err, size_t errlen);
void obs_trace_free(struct obs_trace *t);
/* A configuration value from the header text, or NULL. */
const char *obs_trace_get(const struct obs_trace *t, const char *key, char *buf, size_t len);
/* Did the recording map zero pages (header key zero_page=1; never in a version 1 trace)? */
bool obs_trace_zero_pages(const struct obs_trace *t);
/* Stable sort into replay order (obs_trace_effect_ns; file order among equals; a RESIDENT keeps
 * its place behind its ADOPT). */
void obs_trace_sort(struct obs_trace *t);
/* Replay dependencies (of records in replay order): a RELEASE must not run before the faults
 * recorded earlier on the pages it frees (a replay thread running behind its recorded time
 * would otherwise touch memory that is gone). before[j] is the RELEASE fault j must precede
 * (UINT32_MAX: none); pending[i] how many faults RELEASE i waits for. Both are malloc'ed
 * arrays of t->n entries. Returns 0, -ENOMEM or -E2BIG. Work: the records plus the pages and
 * extents of the releases (bounded for a loaded trace). */
int obs_trace_deps(const struct obs_trace *t, uint32_t **before, uint32_t **pending);
/* How a replay acts a sorted trace out: one thread per recorded thread with the indices of its
 * records in order; a record may go once next_change[i] memory changes (every record but a
 * FAULT) have been applied and, for a RELEASE, its release_pending[i] faults are done (each
 * fault i done decrements release_pending[fault_before[i]] unless that is UINT32_MAX). */
struct obs_trace_thread {
	uint32_t tid;
	size_t *idx, n, cap;
};
struct obs_trace_plan {
	struct obs_trace_thread *threads;
	unsigned nthreads;
	size_t *next_change;
	uint32_t *fault_before, *release_pending;
};
/* 0, -ENOMEM, or -E2BIG (more than OBS_TRACE_THREADS_MAX threads, or 2^32 records). */
int obs_trace_plan(const struct obs_trace *t, struct obs_trace_plan *p);
void obs_trace_plan_free(struct obs_trace_plan *p);
/* Is the file at path a trace (by its magic)? */
bool obs_trace_is_trace(const char *path);

#endif
