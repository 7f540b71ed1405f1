/* The block layer's request allocation of the 2011 kernels: one device queue's request_list,
 * per direction, with its limit, its "batching" allowance, its congestion flags and the FIFO of
 * tasks sleeping for a free request. Pure (no syscalls, clock or allocation: the caller gives
 * the time and the waiters' storage); the simulator's block layer uses it for every write
 * (the flusher's, kswapd's and direct reclaim's pageout, compaction's writeout) and read.
 *
 * Mirrors block/blk-core.c of 3.1-3.3 (line numbers of 3.2.7; 3.1.0 and 3.3.8 have the same
 * rules, 3.3 only changed how the io_context is created):
 *   - blk_queue_congestion_threshold() (93-106): congested from
 *     nr_requests - nr_requests/8 + 1 requests (113 of 128), uncongested below
 *     nr_requests - nr_requests/8 - nr_requests/16 - 1 (103); nr_requests is BLKDEV_MAX_RQ
 *     (128, include/linux/blkdev.h) and nr_batching BLK_BATCH_REQ (32, block/blk.h), both set
 *     by blk_queue_make_request() (block/blk-settings.c).
 *   - get_request() (748-850): a request that brings the direction's count to the congestion
 *     threshold marks the queue congested; one that brings it to nr_requests marks it full,
 *     and its task becomes a "batcher" (ioc_set_batching); once full, only a batcher gets one,
 *     and nobody beyond 3/2 nr_requests. A batcher's allocation uses up one of its batch.
 *   - ioc_batching() (651-664): a task is a batcher while its batch is untouched
 *     (nr_batch_requests == nr_batching) or it has requests left within BLK_BATCH_TIME
 *     (HZ/50: 20 ms) of the wait that made it one; ioc_set_batching() (672-679) gives a fresh
 *     batch to a task that is not one.
 *   - get_request_wait() (865-900): a task that gets none sleeps exclusively at the tail of the
 *     direction's wait queue (prepare_to_wait_exclusive), and on waking becomes a batcher and
 *     tries again (at the tail again if it fails).
 *   - freed_request() / __freed_request() (681-713): a request freed (at its completion,
 *     blk_finish_request -> __blk_put_request, or merged into another) clears congestion below
 *     the off threshold (clear_bdi_congested: congestion_wait's sleepers wake) and, while the
 *     count is below nr_requests, clears "full" and wakes the first waiter (wake_up: one
 *     exclusive waiter, removed from the queue by autoremove_wake_function).
 * Not modelled: elv_may_queue (deadline has none; CFQ's ELV_MQUEUE_MUST), the "starved" flag
 * (a request allocation failing for memory), cgroups (3.x has one request_list per queue).
 *
 * Today's kernels have no get_request_wait: blk-mq allocates a scheduler tag (blk_mq_get_tag,
 * block/blk-mq-tag.c, sleeping in io_schedule when none is free), nr_requests being
 * 2 * min(queue depth, 128) with a scheduler (blk_mq_init_sched, block/blk-mq-sched.c, read in
 * 6.1), no batching and no congestion flags; this model is not that one.
 */
#ifndef THPEMU_IO_RQLIST_H
#define THPEMU_IO_RQLIST_H

#include <stdbool.h>
#include <stdint.h>

enum rql_dir { RQL_ASYNC = 0, RQL_SYNC = 1 }; /* BLK_RW_ASYNC, BLK_RW_SYNC (reads are sync) */

#define RQL_NR_REQUESTS	  128	      /* BLKDEV_MAX_RQ */
#define RQL_BATCH_REQ	  32	      /* BLK_BATCH_REQ */
#define RQL_BATCH_TIME_NS 20000000ULL /* BLK_BATCH_TIME, HZ/50 */

/* A task's io_context as far as requests go; zero-initialised is a task that never waited. */
struct rql_ioc {
	unsigned nr_batch;    /* nr_batch_requests */
	uint64_t last_waited; /* when it became a batcher (ns) */
};

/* A task sleeping in get_request_wait; the caller owns it (on its stack, say). */
struct rql_waiter {
	struct rql_waiter *next;
	void *cookie; /* the caller's: who to wake */
	bool queued;  /* on a wait queue (cleared when woken) */
};

struct rql_stats {
	uint64_t allocated[2];	  /* requests given */
	uint64_t refused[2];	  /* get_request() said no */
	uint64_t batched[2];	  /* given to a batcher beyond nr_requests */
	unsigned count_max[2];	  /* the most allocated at once */
	uint64_t congested_on[2]; /* times the congested flag was set from clear */
};

struct rql {
	unsigned nr_requests, nr_batching;
	unsigned congestion_on, congestion_off; /* blk_queue_congestion_threshold() */
	uint64_t batch_time_ns;
	unsigned count[2];
	bool full[2], congested[2];
	struct rql_waiter *head[2], *tail[2]; /* rl->wait[]: FIFO */
	struct rql_stats st;
};

/* blk_queue_make_request + blk_queue_congestion_threshold; nr_requests 0 means 128. */
void rql_init(struct rql *l, unsigned nr_requests);
/* get_request(): true if a request was allocated for ioc at time now (counted until
 * rql_put); false if the task must sleep (rql_wait) and try again when woken. */
bool rql_get(struct rql *l, enum rql_dir d, struct rql_ioc *ioc, uint64_t now);
/* prepare_to_wait_exclusive: queue w at the tail of d's waiters. */
void rql_wait(struct rql *l, enum rql_dir d, struct rql_waiter *w);
/* After the sleep (io_schedule returned): ioc_set_batching, and finish_wait (w leaves the queue
 * if it is still on it). */
void rql_woken(struct rql *l, enum rql_dir d, struct rql_waiter *w, struct rql_ioc *ioc,
	       uint64_t now);
/* freed_request(): one request of d freed. Returns the waiter to wake (already off the queue)
 * or NULL; *uncongested says the count is below the off threshold (clear_bdi_congested: wake
 * congestion_wait's sleepers). */
struct rql_waiter *rql_put(struct rql *l, enum rql_dir d, bool *uncongested);
/* bdi_write_congested / bdi_read_congested */
bool rql_congested(const struct rql *l, enum rql_dir d);
/* ioc_batching() at time now */
bool rql_batching(const struct rql *l, const struct rql_ioc *ioc, uint64_t now);

#endif
