/* The 3.x request list (core/io/rqlist) for live runs: one device queue's request_list in
 * memory every process of a machine maps (or a process's own), with a lock and sleepers that
 * may be threads of any of those processes. The rules are rqlist's (block/blk-core.c
 * get_request, get_request_wait, freed_request of 3.1-3.3); this file only adds what a real
 * sleep needs:
 *   - a lock: a robust process-shared mutex in the structure (waker and sleeper may be in
 *     different processes; one killed while holding it does not stop the others);
 *   - the sleepers' storage: rqlist's waiters live in the structure (RQS_WAITERS slots), each
 *     with a futex word set by the waker, since a waiter on another process's stack has no
 *     address here;
 *   - the wait statistics of who slept: compaction/reclaim's writeout, real writers (an
 *     fsync's writeback), the flusher.
 * A blocked task sleeps on its slot's word, as get_request_wait's io_schedule; the request
 * freed at a completion (rqs_put) hands the slot's task the wake-up (one FIFO sleeper), and it
 * tries again (rql_woken, rql_get).
 *
 * No allocation; rqs_get sleeps in slices and asks the caller whether to give up (a machine's
 * host that is gone frees nothing any more).
 */
#ifndef THPEMU_IO_RQSHARE_H
#define THPEMU_IO_RQSHARE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/rqlist.h"

#define RQS_WAITERS 64 /* tasks asleep at once (more wait for a slot, polling) */

enum rqs_who {
	RQS_WRITEOUT, /* a fault's compaction or reclaim writing a page out */
	RQS_WRITER,   /* a real writer's own writeback (fsync through thpemu-fusedev) */
	RQS_FLUSHER,  /* the flusher thread */
	RQS_WHO_NR,
};

struct rqs_wait_stat {
	uint64_t count, total_ns, max_ns;
	uint64_t over_1s; /* sleeps of 1 s or more */
};

struct rqs_slot {
	struct rql_waiter w; /* on the list while asleep */
	uint32_t word;	     /* futex: 1 once woken */
	uint32_t used;
	uint64_t t0; /* when it went to sleep */
};

struct rqs {
	pthread_mutex_t lock; /* robust, pshared */
	struct rql l;
	struct rqs_slot slot[RQS_WAITERS];
	struct rqs_wait_stat waited[RQS_WHO_NR];
	uint64_t slot_waits; /* a sleeper found every slot taken */
};

void rqs_init(struct rqs *s, unsigned nr_requests);
/* get_request_wait(): a request of direction d for the task whose io_context is ioc, sleeping
 * until one is freed. Every slice_ns asleep, gone(arg) (may be NULL) says whether to give up
 * (-ETIMEDOUT, no request). 0 with a request (rqs_put frees it); *waited_ns (may be NULL): how
 * long it slept (0 if it never did), counted in who's statistics. */
int rqs_get(struct rqs *s, enum rql_dir d, struct rql_ioc *ioc, enum rqs_who who, uint64_t slice_ns,
	    bool (*gone)(void *), void *arg, uint64_t *waited_ns);
/* The flusher's get_request_wait, which must not sleep (its thread ends the requests): true
 * with a request; false with the flusher queued as a sleeper in *slot (-1: not queued) if it
 * was not already; while it is queued and not woken, false without trying. */
bool rqs_try(struct rqs *s, enum rql_dir d, struct rql_ioc *ioc, int *slot);
/* Leave the queue without a request (the flusher stopping); *slot becomes -1. */
void rqs_cancel(struct rqs *s, enum rql_dir d, int *slot);
/* freed_request(): a request of d freed (completed, merged, or never used). Wakes the first
 * sleeper if any; true if that sleeper was `flusher_slot` (the caller kicks the flusher).
 * *uncongested (may be NULL): the count is below the congestion-off threshold. */
bool rqs_put(struct rqs *s, enum rql_dir d, int flusher_slot, bool *uncongested);
/* bdi_write_congested(): the direction's congested flag. */
bool rqs_congested(struct rqs *s, enum rql_dir d);
/* A consistent copy of the list's counts and the wait statistics. */
void rqs_stats(struct rqs *s, struct rql_stats *st, struct rqs_wait_stat waited[RQS_WHO_NR]);

#endif
