/* Slow-device model: a service-slot queue, shared by fusedev (real wall-clock replies), the
 * in-process writeback fallback (no device available) and the simulator (virtual time).
 *
 * Method. A request arriving at t_arr waits for one of N slots (command queue depth); it
 * starts at t_start = max(t_arr, slot free). Its command overhead (setup latency) runs in
 * the slot, so N > 1 slots overlap it; its data transfer then occupies the one shared medium:
 *   xfer_start = max(t_start + setup, medium free)
 *   t_done     = xfer_start + (bytes / bandwidth) + seek + flash GC + busy stall + tail
 * and the whole of (setup + bytes/bandwidth) is scaled by a lognormal jitter factor of mean 1.
 * With one slot this is google/slowfs's busyUntil scheduler (S = setup + bytes/bw + ...); with
 * N slots latency overlaps but throughput never exceeds the bandwidth (null_blk's split between
 * a bandwidth limit and a fixed completion latency).
 *
 * Time is in nanoseconds from the device's power-on (0): callers pass times relative to the
 * moment they created the model (fusedev: since mount; simulator: virtual time). Every call
 * takes `now`, which must not go backwards; the model processes completions up to `now`
 * first, so results depend only on arrival times and control calls, not on how often the
 * caller polls. The model is pure and deterministic for a seed: it never sleeps, never
 * allocates after creation and never locks (callers serialise).
 *
 * Pause holds every request that has not started; requests already in service complete
 * (a paused device drains, as nbdkit's pause filter acknowledges after draining). "dead" is a
 * device paused from power-on: nothing completes until it is resumed.
 */
#ifndef THPEMU_IO_DEVMODEL_H
#define THPEMU_IO_DEVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DEVM_MAX_SLOTS	  64
#define DEVM_MAX_OPEN_AUS 16
/* No request occupies the medium longer than this, whatever the keys (each within its bounds,
 * devm_help) combine to: a device that busy would have been reset by its host long before (sd
 * gives a SCSI command 30 s and retries it a few times). With its command overhead (at most
 * 10 s, times the jitter factor, itself at most DEVM_JITTER_MAX) and a tail (at most 60 s), a
 * request in service completes within about 6 minutes while the device runs. */
#define DEVM_BUSY_MAX_NS (120ULL * 1000000000ULL)
#define DEVM_JITTER_MAX	 20.0

struct devm_params {
	char name[32];
	uint64_t write_bw; /* bytes/s media write rate; 0 = unthrottled */
	uint64_t read_bw;  /* bytes/s; 0 = unthrottled */
	uint64_t setup_ns; /* per-request fixed latency (command + status) */
	uint64_t read_setup_ns;
	double jitter;	      /* relative sd of a lognormal factor on S (0.2 = ±20 %) */
	unsigned slots;	      /* queue depth (1 for USB BOT and SD) */
	uint64_t seek_ns;     /* charged when a request is not within seek_window of the last */
	uint64_t seek_window; /* bytes; 0 with seek_ns > 0 means "any jump seeks" */
	uint64_t stall_every_bytes; /* periodic busy stall every N bytes written (0 = off) */
	uint64_t stall_every_ns;    /* ... or every T of device busy time writing (0 = off) */
	uint64_t stall_for_ns;	    /* busy stall length */
	uint64_t stall_jitter_ns;   /* ± uniform on the stall length */
	double tail_rate;	    /* probability of an extra tail delay per request ... */
	uint64_t tail_min_ns;	    /* ... uniform in [tail_min, tail_max] (retransmit, busy) */
	uint64_t tail_max_ns;
	uint64_t gc_au_bytes; /* flash allocation-unit size (0 = no GC model) */
	unsigned gc_open_aus; /* open AUs kept; a write elsewhere evicts one (forced GC) */
	uint64_t gc_copy_bw;  /* bytes/s at which GC copies the evicted AU's valid data */
	uint64_t gc_erase_ns;
	uint64_t burst_bytes;	   /* fast cache in front (0 = none) ... */
	uint64_t burst_bw;	   /* ... written at this rate until full, drained at write_bw */
	double error_rate;	   /* probability that a request fails with EIO */
	uint64_t err_win_start_ns; /* one window in which every request fails EIO ... */
	uint64_t err_win_len_ns;   /* ... [start, start + len); len 0 = none */
	uint64_t err_up_ns;	   /* dm-flakey cycle: works for up, then ... */
	uint64_t err_down_ns;	   /* ... fails every request for down, repeating; 0 = off */
	uint64_t capacity; /* bytes of device address space; beyond fails ENOSPC (0 = unbounded) */
	bool dead;	   /* starts paused: nothing completes until resumed */
};

/* NULL-terminated list of preset names. */
const char *const *devm_preset_names(void);
/* Fill p from a preset. Returns 0 or -EINVAL. */
int devm_preset(const char *name, struct devm_params *p);
/* Apply one "key=value" override (bandwidth=2M, latency=5ms, jitter=20%, slots=N,
 * stall-every=4M|2s, stall-for=250ms, error-rate=0.1, capacity=1G, preset=NAME, ...).
 * Returns 0, -ENOENT for an unknown key or -EINVAL for a bad value (p unchanged). */
int devm_params_set(struct devm_params *p, const char *key, const char *value);
/* Apply "key=value" (one string, as in a control file line). Same returns. */
int devm_params_set_kv(struct devm_params *p, const char *kv);
/* What key accepts ("0 (unthrottled) or 10KB/s..1TB/s"), for messages; NULL if unknown. */
const char *devm_key_accepted(const char *key);
/* The rules between keys (gc-au needs gc-open, ...): 0, or -EINVAL with the reason in err (may
 * be NULL). devm_create and devm_set refuse a set that breaks them; a spec parser checks once
 * it has applied every key. */
int devm_params_check(const struct devm_params *p, char *err, size_t errlen);
/* Write the presets and keys (for --help), one line each. */
void devm_help(FILE *f);
/* Write p as space-separated "key=value" pairs that devm_params_set accepts back. */
void devm_params_format(const struct devm_params *p, FILE *f);

/* A request. Caller-owned; linked into the model while queued/in service. */
struct devm_req {
	uint64_t off, len;
	bool write;
	uint64_t t_arrive, t_start, t_done; /* set by the model */
	int err;			    /* 0, -EIO (injected) or -ENOSPC; set at start */
	void *cookie;			    /* caller's */
	struct devm_req *next;		    /* model-internal link */
};

struct devm_stats {
	uint64_t bytes_written, bytes_read, ops_written, ops_read; /* completed */
	uint64_t in_flight;	  /* submitted, not yet completed (queued + in service) */
	uint64_t queued;	  /* waiting for a slot (or for resume) */
	uint64_t queue_max;	  /* max in_flight seen */
	uint64_t errors_injected; /* EIO by rate, window or cycle */
	uint64_t errors_enospc;
	uint64_t stalls, stall_ns; /* periodic busy stalls charged */
	uint64_t gc_events, gc_ns; /* forced GCs charged */
	uint64_t seeks, tails;
	uint64_t busy_ns; /* medium time spent serving */
	bool paused;
};

struct devm;

/* Returns 0, -EINVAL (bad params) or -ENOMEM. */
int devm_create(const struct devm_params *p, uint64_t seed, struct devm **out);
void devm_destroy(struct devm *m);
/* Enqueue req at time now (sets t_arrive = now). */
void devm_submit(struct devm *m, uint64_t now, struct devm_req *req);
/* Earliest completion time among requests in service or completed but not yet popped, or
 * UINT64_MAX when nothing is in service (idle, or everything held by pause/dead). */
uint64_t devm_next_completion(const struct devm *m);
/* Pop one request completed by `now` (t_done <= now), in completion order; NULL if none.
 * Slots freed start queued requests at the time they freed. */
struct devm_req *devm_pop_done(struct devm *m, uint64_t now);
void devm_pause(struct devm *m, uint64_t now);
void devm_resume(struct devm *m, uint64_t now);
bool devm_paused(const struct devm *m);
/* Change parameters at run time (control file). Requests not yet started get the new
 * parameters; those in service are re-timed: what is left of each (the share of its service
 * time not yet elapsed) takes what it would under the new parameters, in completion order on
 * the medium, so a slower device delays them and a faster one (or "preset=fast") completes
 * them at once. "dead=1" pauses, "dead=0" resumes; "error-window=LEN" or "AFTER+LEN" counts
 * from now. Returns like devm_params_set, or -EINVAL for a set devm_params_check refuses. */
int devm_set(struct devm *m, uint64_t now, const char *key, const char *value);
const struct devm_params *devm_params(const struct devm *m);
void devm_get_stats(const struct devm *m, struct devm_stats *s);

#endif
