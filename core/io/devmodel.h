/* Slow-device model: a service-slot queue, shared by fusedev (real wall-clock replies), the
 * in-process writeback fallback (no device available) and the simulator (virtual time).
 *
 * Method. A request arriving at t_arr waits for one of N slots; it starts at
 * t_start = max(t_arr, slot free) and completes at t_start + S, where
 *   S = setup latency + bytes / bandwidth + jitter + (flash GC / periodic busy stall if due)
 * (google/slowfs's busyUntil scheduler generalised to N slots, null_blk's split between a
 * bandwidth limit and a fixed completion latency). Pause holds every request that has not
 * started; "dead" is a device paused from the start. Errors are injected per request by rate
 * and by time window. The model is pure and deterministic for a seed: time is passed in, it
 * never sleeps, never allocates after creation and never locks (callers serialise).
 */
#ifndef THPEMU_IO_DEVMODEL_H
#define THPEMU_IO_DEVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DEVM_MAX_SLOTS 64

struct devm_params {
	char name[32];
	uint64_t write_bw;        /* bytes/s sustained write; 0 = unthrottled */
	uint64_t read_bw;         /* bytes/s; 0 = unthrottled */
	uint64_t setup_ns;        /* per-request fixed latency (command + status) */
	uint64_t read_setup_ns;
	double jitter;            /* relative sd of a lognormal factor on S (0.2 = ±20 %) */
	unsigned slots;           /* queue depth (1 for USB BOT and SD) */
	uint64_t stall_every_bytes; /* periodic busy stall every N bytes written (0 = off) */
	uint64_t stall_every_ns;    /* ... or every T of device time (0 = off) */
	uint64_t stall_for_ns;      /* busy stall length */
	uint64_t stall_jitter_ns;   /* ± uniform on the stall length */
	uint64_t gc_au_bytes;       /* flash allocation-unit size (0 = no GC model) */
	unsigned gc_open_aus;       /* open AUs kept; a write elsewhere evicts one (forced GC) */
	uint64_t gc_copy_bw;        /* bytes/s at which GC copies the evicted AU's valid data */
	uint64_t gc_erase_ns;
	uint64_t burst_bytes;       /* fast cache in front (0 = none) ... */
	uint64_t burst_bw;          /* ... written at this rate until full, drained when idle */
	double error_rate;          /* probability that a request fails with EIO */
	uint64_t capacity;          /* bytes; writes beyond fail ENOSPC (0 = unbounded) */
	bool dead;                  /* starts paused: nothing completes until resumed */
};

/* NULL-terminated list of preset names. */
const char *const *devm_preset_names(void);
/* Fill p from a preset. Returns 0 or -EINVAL. */
int devm_preset(const char *name, struct devm_params *p);
/* Apply one "key=value" override (bandwidth=2M, latency=5ms, jitter=20%, slots=N,
 * stall-every=4M|2s, stall-for=250ms, error-rate=0.1, capacity=1G, ...). 0 or -EINVAL. */
int devm_params_set(struct devm_params *p, const char *key, const char *value);
/* Write the presets and keys (for --help), one line each. */
void devm_help(FILE *f);

/* A request. Caller-owned; linked into the model while queued/in service. */
struct devm_req {
	uint64_t off, len;
	bool write;
	uint64_t t_arrive, t_start, t_done; /* set by the model */
	int err;                            /* 0, -EIO (injected) or -ENOSPC; set at completion */
	void *cookie;                       /* caller's */
	struct devm_req *next;              /* model-internal link */
};

struct devm_stats {
	uint64_t bytes_written, bytes_read, ops_written, ops_read;
	uint64_t in_flight, queued, queue_max;
	uint64_t errors_injected, stalls, gc_events;
	uint64_t busy_ns; /* device time spent serving */
};

struct devm;

int devm_create(const struct devm_params *p, uint64_t seed, struct devm **out);
void devm_destroy(struct devm *m);
/* Enqueue req at time now. */
void devm_submit(struct devm *m, uint64_t now, struct devm_req *req);
/* Earliest completion time among started requests, or UINT64_MAX (idle, paused or dead). */
uint64_t devm_next_completion(const struct devm *m);
/* Pop one request completed by `now` (t_done <= now), in completion order; NULL if none.
 * Popping starts queued requests in freed slots. */
struct devm_req *devm_pop_done(struct devm *m, uint64_t now);
void devm_pause(struct devm *m, uint64_t now);
void devm_resume(struct devm *m, uint64_t now);
bool devm_paused(const struct devm *m);
/* Change parameters at run time (control file); applies to requests not yet started. */
int devm_set(struct devm *m, uint64_t now, const char *key, const char *value);
const struct devm_params *devm_params(const struct devm *m);
void devm_get_stats(const struct devm *m, struct devm_stats *s);

#endif
