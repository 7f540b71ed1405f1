/* Stall events: faults whose service time crossed a threshold, with where the time went and
 * who was waiting, grouped by unique stack pair and reported in the 2011 format.
 *
 * The 2011 reports (Mel Gorman's "Do not stall in synchronous compaction for THP allocations",
 * produced by mmtests' watch-dstate.pl + stap-dstate-frequency) list, for each unique stack,
 * "Time stalled in this event", "Event count", one "comm function ms" line per event and the
 * stack. Here an event carries two stacks: the handler's (the emulated kernel's call chain, e.g.
 * wait_on_frame_writeback < unmap_and_move < migrate_pages < compact_zone < ...) and the
 * application's (where the program touched the memory), or, for a fault taken inside a syscall,
 * the syscall instead.
 *
 * Recording (obs_stalls_add) is lock-free and allocation-free: handler threads call it on the
 * fault path; the store is preallocated with mmap (never malloc, never managed memory). Reporting
 * symbolises, allocates and sorts: exit or report time only, in the process that captured.
 *
 * JSON: "stalls": {"threshold_ms", "count", "total_ms", "stored", "dropped", "stacks",
 *   "groups": [{"total_ms", "count", "events_ms": [...], "cause", "function", "comms": [...],
 *               "unwind", "app", "app_unwind", "syscall", "handler_stack": [...],
 *               "app_stack": [...]}]}
 * "unwind" says how the handler stack was taken (libunwind, frame-pointer, modelled); "app" what
 * the application side gave (user, syscall, timeout, unavailable, none) and "app_unwind" how its
 * stack was taken (libunwind, or proc-pc: only the faulting instruction).
 * "count"/"total_ms" cover every stall seen, "stored" those kept (the store's capacity bounds
 * it), "dropped" the rest. `thpemu run` adds to each group the process that waited ("pid",
 * "process": its comm) when it merges the processes' reports (core/host/run_io.c). Groups are
 * sorted by total_ms descending, then count descending, then by their stacks' text, so equal inputs
 * give equal bytes. "stacks" is "captured" (live: real stacks) or "modelled" (simulator:
 * handler_stack lists the mm function chain of the cause, app_stack is empty).
 *
 * Two metrics. The store above counts *faults* whose whole service crossed the
 * threshold (per-fault stalls). Mel Gorman's monitor counted *waits*: every single sleep in D
 * state of at least the threshold, so a fault that waits ten times is ten events. A second store
 * (obs_stalls_create_waits) holds those per-wait events: one per blocking wait inside the
 * emulated kernel (mm's ops->waited: a writeback wait, a writeout, a congestion_wait /
 * too_many_isolated nap) that lasted at least the threshold, with the wait's kind, the kernel
 * function that blocked, its own stack (live: the handler's at the blocking point of that very
 * wait, plus the fault's application stack; simulator: the kind's modelled 3.x chain) and, for
 * kswapd's waits (no fault behind them), comm "kswapd0" and "background": true.
 * obs_report_stalls_pair writes both:
 *   "stalls": {<the per-fault keys above, unchanged, for existing readers>,
 *     "faults": {"threshold_ms", "count", "total_ms", "max_ms", "stored", "dropped"}
 *               (the per-fault summary; its groups are stalls.groups, not repeated),
 *     "waits": {"threshold_ms", "count", "total_ms", "max_ms", "stored", "dropped",
 *               "background" (how many of count were kswapd's), "stacks",
 *               "groups": [{... as above, plus "kind" (mm_wait_name), "background",
 *                           with "function" the blocking function (mm_wait_function)}]}}
 * and obs_report_stalls_text_pair the 2011 report from the per-wait events first, then the
 * per-fault view.
 */
#ifndef THPEMU_OBS_STALL_H
#define THPEMU_OBS_STALL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mm/mm.h"
#include "obs/unwind.h"
#include "util/json.h"

#define OBS_COMM_LEN 16
#define OBS_NO_WAIT  0xff /* obs_stall_event.wait of a per-fault event */

struct obs_stall_event {
	uint64_t t_start_ns;  /* when the fault arrived (env time: monotonic live, virtual sim) */
	uint64_t duration_ns; /* its service time */
	uint64_t addr;	      /* faulting address (0 if unknown) */
	int32_t tid;	      /* faulting thread (0 if unknown) */
	int32_t syscall_nr;   /* app == OBS_APP_SYSCALL: the syscall the thread was in; else -1 */
	uint8_t cause;	      /* enum mm_cause: the fault record's largest contributor */
	uint8_t app;	      /* enum obs_app_result: what the application side gave */
	char comm[OBS_COMM_LEN]; /* faulting thread's comm, NUL-terminated */
	uint8_t wait;		 /* per-wait events: enum mm_wait_kind; OBS_NO_WAIT for a fault */
	uint8_t background;	 /* per-wait events: kswapd's (no program fault behind it) */
	uint8_t
	    own_exit; /* live: the fault was taken on this thread by thpemu's own exit-time work
		       * (writing its reports at the program's exit), not by the program's code */
	char waited_on[128]; /* whose page the longest wait was on ("a page written by rsync (pid
			      * 790) to r/f.tar"), or "" */
	struct obs_stack handler;   /* the handler's stack at the blocking point (or MODELLED) */
	struct obs_stack app_stack; /* app == OBS_APP_USER: the program's stack at the fault */
};

enum obs_stacks_kind {
	OBS_STACKS_CAPTURED, /* live: real handler stacks (and application stacks when possible) */
	OBS_STACKS_MODELLED, /* simulator: cause-only events */
};

struct obs_stalls;

/* Preallocate a store for up to capacity events (>= 1) over threshold_ns. Returns 0, -EINVAL or
 * -ENOMEM. */
int obs_stalls_create(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
		      enum obs_stacks_kind kind);
/* The same for per-wait events (their reports say "waits"; events carry a wait kind). */
int obs_stalls_create_waits(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
			    enum obs_stacks_kind kind);
void obs_stalls_destroy(struct obs_stalls *s);
uint64_t obs_stalls_threshold(const struct obs_stalls *s);
/* Events seen (stored or not), their summed and their longest duration. */
uint64_t obs_stalls_count(const struct obs_stalls *s);
uint64_t obs_stalls_total_ns(const struct obs_stalls *s);
uint64_t obs_stalls_max_ns(const struct obs_stalls *s);

/* An event with no stacks, no application side, syscall_nr -1. */
void obs_stall_event_init(struct obs_stall_event *ev);

/* Record a copy of ev if ev->duration_ns >= the threshold. Lock-free, allocation-free, safe from
 * any number of threads. Returns 0 (stored), 1 (below threshold, ignored) or -ENOSPC (store
 * full: counted in count/total_ms/dropped but not kept). */
int obs_stalls_add(struct obs_stalls *s, const struct obs_stall_event *ev);
/* Simulator: an event with the cause only; the handler stack is the cause's modelled chain. */
int obs_stalls_add_modelled(struct obs_stalls *s, uint64_t t_start_ns, uint64_t duration_ns,
			    enum mm_cause cause, const char *comm, int32_t tid, uint64_t addr);

/* Simulator: a per-wait event of kind k; the handler stack is the kind's modelled chain
 * (kswapd's when background). Same returns as obs_stalls_add. */
int obs_stalls_add_modelled_wait(struct obs_stalls *s, uint64_t t_start_ns, uint64_t duration_ns,
				 enum mm_wait_kind k, bool background, const char *comm,
				 int32_t tid);
/* The 3.x kernel call chain of a wait kind, innermost first (its first frame is
 * mm_wait_function(k)), NULL-terminated; background: kswapd's instead of a fault's. */
const char *const *obs_stall_wait_stack(enum mm_wait_kind k, bool background);
/* The cause a wait kind belongs to (a per-wait event's "cause"). */
enum mm_cause obs_stall_wait_cause(enum mm_wait_kind k);

/* The mm function chain a cause stands for, innermost first, NULL-terminated (the names core/mm
 * gives its noinline functions, which are the kernel's). */
const char *const *obs_stall_modelled_stack(enum mm_cause c);

/* Write "stalls": {...} into the current JSON object. Returns 0 or -ENOMEM (then nothing but
 * the counts is written). */
int obs_report_stalls(struct json_w *w, struct obs_stalls *s);
/* The 2011 text report. Returns 0, -ENOMEM or -EIO. */
int obs_report_stalls_text(FILE *f, struct obs_stalls *s);
/* Both metrics (see above): faults and waits from their stores; waits may be NULL (then
 * "waits" is written with zero counts and no groups, and the text says none were recorded). */
int obs_report_stalls_pair(struct json_w *w, struct obs_stalls *faults, struct obs_stalls *waits);
int obs_report_stalls_text_pair(FILE *f, struct obs_stalls *faults, struct obs_stalls *waits);

#endif
