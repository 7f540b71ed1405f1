/* The I/O scheduler in front of one device queue, as a pure model (prefix ios_): which queued
 * request the driver gets next. Pure (no syscalls, clock or allocation: the caller owns the
 * requests and gives the time); the simulator's block layer (core/sim/device.c) uses it for
 * every request. Positions and lengths are bytes on the device (blk_rq_pos in sectors there).
 *
 * IOS_CFQ — block/cfq-iosched.c of 3.1-3.3 (line numbers of 3.2.7; CONFIG_DEFAULT_IOSCHED
 * "cfq", block/Kconfig.iosched 35 "This is the default I/O scheduler", 46-67):
 *   - Every async write, whoever submits it (the flusher, kswapd, direct reclaim, compaction's
 *     writeout), goes to one shared queue: cfq_get_queue() (3074-3101) takes
 *     cfq_async_queue_prio() (3060-3072) for !is_sync, one per (class, level), and every task
 *     of the scenario is best effort at level 4 (task_nice_ioprio of nice 0,
 *     cfq_init_prio_data 2875-2915). Reads are sync; here they share one sync queue (per-task
 *     sync queues and their service trees are not modelled).
 *   - A request enters its queue's FIFO with rq_fifo_time = now + cfq_fifo_expire[sync]
 *     (cfq_insert_request 3505-3520; cfq_fifo_expire = {HZ/4, HZ/8}, line 24: async 250 ms,
 *     sync 125 ms) and its sort tree; the queue's next_rq is the better of the old one and the
 *     new request by cfq_choose_req() (cfq_add_rq_rb 1520-1546).
 *   - cfq_choose_req (670-753): the closest request ahead of the head, a request behind it
 *     within cfq_back_max (16 MiB) at twice its distance (cfq_back_penalty 2), and if both are
 *     further behind, the lower one. After a dispatch, next_rq is the better of the request's
 *     two neighbours in sector order, wrapping to the first (cfq_find_next_rq 801-823).
 *   - cfq_dispatch_request (2573-2602): the FIFO is checked once per slice (cfq_check_fifo
 *     2101-2119, the fifo_expire flag cleared when the queue becomes active,
 *     __cfq_set_active_queue 1717-1741): its head goes first if it expired, else next_rq.
 *   - Slices: the slice starts at the first completion of the queue's slice
 *     (cfq_completed_request 3596-3682: cfq_set_prio_slice), cfq_slice_async HZ/25 = 40 ms and
 *     cfq_slice_sync HZ/10 = 100 ms at level 4 (cfq_prio_slice 526-534; with low_latency the
 *     scaling of cfq_scaled_cfqq_slice 609-637 needs more than 3 busy queues, never here); a
 *     used slice expires at the next completion or selection (cfq_select_queue 2322-2431), and
 *     an async queue also after cfq_prio_to_maxrq = 2 * cfq_slice_async_rq * (8 - 4) = 16
 *     dispatches when another queue is busy (cfq_dispatch_requests 2608-2645). An empty active
 *     queue gives way at once (async queues never idle, cfq_should_idle 1974-2004; sync idling,
 *     slice_idle 8 ms, is not modelled).
 *   - Sync before async: a sync request preempts an async active queue (cfq_should_preempt
 *     3348-3418), and an async queue dispatches nothing while sync requests are in the driver
 *     (cfq_may_dispatch 2484-2567), whose dispatch limit is cfq_quantum / 2 = 4 (cfq_quantum 8,
 *     line 23), no limit for the only busy queue, and for async queues with low_latency at most
 *     one request per 100 ms since the last sync request that completed late (its
 *     last_delayed_sync). Of two busy queues, the one that did not just run gets the next slice.
 *
 * IOS_DEADLINE — block/deadline-iosched.c of 3.2 (the same rules in mq-deadline of 6.12,
 * block/mq-deadline.c 30-38 of 6.12.19, without its I/O priority levels; 6.12's
 * elevator_get_default, block/elevator.c 562-572, picks mq-deadline for a single-hardware-queue
 * device such as a USB stick, and "none" for a multi-queue one):
 *   - read_expire HZ/2, write_expire 5 * HZ, writes_starved 2, fifo_batch 16 (lines 20-24);
 *     a request is in its direction's FIFO (fifo_time = now + expire) and sort tree
 *     (deadline_add_request).
 *   - deadline_dispatch_requests (243-325): a batch goes on in sector order (next_rq of the last
 *     dispatched direction, deadline_move_request 204-220) for up to fifo_batch requests; else
 *     reads go first unless writes were starved writes_starved times; the new batch starts at
 *     the FIFO head if it expired (deadline_check_fifo 226-237: time_after) or the sort order
 *     ran out, else at next_rq.
 */
#ifndef THPEMU_IO_IOSCHED_H
#define THPEMU_IO_IOSCHED_H

#include <stdbool.h>
#include <stdint.h>

enum ios_kind { IOS_CFQ, IOS_DEADLINE };

/* Parse "cfq" / "deadline"; -1 for anything else. */
int ios_kind_parse(const char *s);
const char *ios_kind_name(enum ios_kind k);

/* A request as the scheduler sees it; the caller owns it and fills pos, len, write, sync. */
struct ios_rq {
	uint64_t pos, len; /* bytes */
	bool write;
	bool sync; /* reads (and sync writes): CFQ's sync queue */
	/* the scheduler's */
	uint64_t fifo_time; /* when it expires */
	uint64_t t_add;	    /* when it was added (rq->start_time) */
	uint64_t seq;	    /* insertion order: equal positions sort in it (elv_rb_add) */
	unsigned q;	    /* its queue: deadline, the direction; CFQ, 0 async / 1 sync */
	struct ios_rq *prev, *next;
};

/* A FIFO of requests (arrival order); sort order is found by scanning it (queues hold at most
 * a few hundred requests: 3/2 nr_requests per direction). */
struct ios_queue {
	struct ios_rq *head, *tail;
	unsigned n;
	/* CFQ */
	struct ios_rq *next_rq;
	unsigned dispatched;	 /* in the driver */
	unsigned slice_dispatch; /* dispatched in this slice */
	uint64_t slice_end;
	bool slice_new;	   /* the slice has not started (no completion yet) */
	bool fifo_checked; /* cfq_cfqq_fifo_expire: the FIFO was looked at in this slice */
};

struct ios_params {
	uint64_t fifo_expire[2]; /* deadline: [read, write]; CFQ: [async, sync] */
	unsigned fifo_batch, writes_starved;
	unsigned quantum, slice_async_rq;
	uint64_t slice[2]; /* CFQ: [async, sync] */
	uint64_t back_max; /* bytes */
	unsigned back_penalty;
};

struct ios_stats {
	uint64_t added, dispatched;
	uint64_t fifo_expired; /* dispatched because its FIFO time had passed */
	uint64_t slices;       /* CFQ: queues made active */
	uint64_t preempted;    /* CFQ: an async slice cut short by a sync request */
	uint64_t refused;      /* CFQ: a dispatch the rules held back with requests queued */
};

struct ios {
	enum ios_kind kind;
	struct ios_params p;
	struct ios_queue q[2];
	uint64_t seq;
	/* deadline */
	struct ios_rq *dl_next[2];
	unsigned batching, starved;
	/* CFQ */
	int active; /* queue index, -1 none */
	int last_served;
	uint64_t last_position;	   /* end of the last dispatched request */
	unsigned in_flight[2];	   /* rq_in_flight by queue */
	int64_t last_delayed_sync; /* may precede time 0 (jiffies - HZ at start) */
	struct ios_stats st;
};

/* The era defaults of kind (above); now is the scheduler's start (CFQ's last_delayed_sync is
 * now - HZ, cfq_init_queue). */
void ios_init(struct ios *s, enum ios_kind kind, uint64_t now);
/* elv_insert: rq joins its queue (caller set pos, len, write, sync). */
void ios_add(struct ios *s, struct ios_rq *rq, uint64_t now);
/* A bio merged at rq's front: its position moved down (elv_merged_request). */
void ios_front_merged(struct ios *s, struct ios_rq *rq);
/* The next request for the driver, removed from the scheduler, or NULL (nothing queued, or
 * CFQ holds it back: ask again at the next completion or addition). */
struct ios_rq *ios_dispatch(struct ios *s, uint64_t now);
/* elv_completed_request: a dispatched rq completed. */
void ios_completed(struct ios *s, struct ios_rq *rq, uint64_t now);
static inline unsigned ios_queued(const struct ios *s)
{
	return s->q[0].n + s->q[1].n;
}

#endif
