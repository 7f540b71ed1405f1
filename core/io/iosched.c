/* The I/O scheduler as a pure model: CFQ and deadline of 3.x (see iosched.h for the rules and
 * their lines in block/cfq-iosched.c and block/deadline-iosched.c, 3.2.7). */
#include "io/iosched.h"

#include <string.h>

#define MS		1000000ULL
#define CFQ_ASYNC	0
#define CFQ_SYNC	1
#define IOPRIO_BE_NR	8 /* include/linux/ioprio.h */
#define IOPRIO_NORM	4 /* a nice-0 task's best-effort level */
#define CFQ_SLICE_SCALE 5

static const char *const kind_names[] = {"cfq", "deadline", NULL};

int ios_kind_parse(const char *s)
{
	for (int i = 0; kind_names[i]; i++)
		if (strcmp(s, kind_names[i]) == 0)
			return i;
	return -1;
}

const char *ios_kind_name(enum ios_kind k)
{
	return (unsigned)k < 2 ? kind_names[k] : "?";
}

void ios_init(struct ios *s, enum ios_kind kind, uint64_t now)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->active = -1;
	s->last_served = -1;
	if (kind == IOS_CFQ) {
		s->p.fifo_expire[CFQ_ASYNC] = 250 * MS; /* cfq_fifo_expire {HZ / 4, HZ / 8} */
		s->p.fifo_expire[CFQ_SYNC] = 125 * MS;
		s->p.quantum = 8;
		s->p.slice_async_rq = 2;
		s->p.slice[CFQ_ASYNC] = 40 * MS; /* HZ / 25 */
		s->p.slice[CFQ_SYNC] = 100 * MS; /* HZ / 10 */
		s->p.back_max = 16ULL << 20;	 /* cfq_back_max 16 * 1024 KiB */
		s->p.back_penalty = 2;
		s->last_delayed_sync = (int64_t)now - (int64_t)(1000 * MS); /* jiffies - HZ */
	} else {
		s->p.fifo_expire[0] = 500 * MS;	 /* read_expire HZ / 2 */
		s->p.fifo_expire[1] = 5000 * MS; /* write_expire 5 * HZ */
		s->p.fifo_batch = 16;
		s->p.writes_starved = 2;
	}
	for (int i = 0; i < 2; i++)
		s->q[i].slice_new = true;
}

/* ---- one queue: a FIFO, sort order by scanning it ------------------------------------------- */

static bool sorts_before(const struct ios_rq *a, const struct ios_rq *b)
{
	return a->pos < b->pos || (a->pos == b->pos && a->seq < b->seq);
}

static void q_append(struct ios_queue *q, struct ios_rq *rq)
{
	rq->next = NULL;
	rq->prev = q->tail;
	if (q->tail)
		q->tail->next = rq;
	else
		q->head = rq;
	q->tail = rq;
	q->n++;
}

static void q_remove(struct ios_queue *q, struct ios_rq *rq)
{
	if (rq->prev)
		rq->prev->next = rq->next;
	else
		q->head = rq->next;
	if (rq->next)
		rq->next->prev = rq->prev;
	else
		q->tail = rq->prev;
	rq->prev = rq->next = NULL;
	q->n--;
}

/* rb_next: the first request after rq in sort order, or NULL. */
static struct ios_rq *q_latter(const struct ios_queue *q, const struct ios_rq *rq)
{
	struct ios_rq *best = NULL;

	for (struct ios_rq *p = q->head; p; p = p->next)
		if (sorts_before(rq, p) && (!best || sorts_before(p, best)))
			best = p;
	return best;
}

/* rb_prev: the last request before rq in sort order, or NULL. */
static struct ios_rq *q_former(const struct ios_queue *q, const struct ios_rq *rq)
{
	struct ios_rq *best = NULL;

	for (struct ios_rq *p = q->head; p; p = p->next)
		if (sorts_before(p, rq) && (!best || sorts_before(best, p)))
			best = p;
	return best;
}

/* rb_first */
static struct ios_rq *q_first(const struct ios_queue *q)
{
	struct ios_rq *best = NULL;

	for (struct ios_rq *p = q->head; p; p = p->next)
		if (!best || sorts_before(p, best))
			best = p;
	return best;
}

/* ---- CFQ ---------------------------------------------------------------------------------------
 */

/* cfq_choose_req: which of two requests is better served next with the head at last. */
static struct ios_rq *cfq_choose(const struct ios *s, struct ios_rq *r1, struct ios_rq *r2,
				 uint64_t last)
{
	uint64_t d1 = 0, d2 = 0;
	bool w1 = false, w2 = false;

	if (!r1 || r1 == r2)
		return r2;
	if (!r2)
		return r1;
	if (r1->sync != r2->sync)
		return r1->sync ? r1 : r2;
	if (r1->pos >= last)
		d1 = r1->pos - last;
	else if (r1->pos + s->p.back_max >= last)
		d1 = (last - r1->pos) * s->p.back_penalty;
	else
		w1 = true;
	if (r2->pos >= last)
		d2 = r2->pos - last;
	else if (r2->pos + s->p.back_max >= last)
		d2 = (last - r2->pos) * s->p.back_penalty;
	else
		w2 = true;
	if (!w1 && !w2) {
		if (d1 != d2)
			return d1 < d2 ? r1 : r2;
		return r1->pos >= r2->pos ? r1 : r2;
	}
	if (w1 != w2)
		return w2 ? r1 : r2;
	return r1->pos <= r2->pos ? r1 : r2; /* both behind: one back seek, to the lower */
}

/* cfq_find_next_rq: after last leaves, the better of its neighbours (wrapping to the first). */
static struct ios_rq *cfq_find_next(const struct ios *s, const struct ios_queue *q,
				    const struct ios_rq *last)
{
	struct ios_rq *next = q_latter(q, last), *prev = q_former(q, last);

	if (!next) {
		next = q_first(q);
		if (next == last)
			next = NULL;
	}
	return cfq_choose(s, next, prev, last->pos);
}

/* cfq_prio_slice at the best-effort level of a nice-0 task */
static uint64_t cfq_slice(const struct ios *s, int qi)
{
	uint64_t base = s->p.slice[qi];

	return base + base / CFQ_SLICE_SCALE * (4 - IOPRIO_NORM);
}

static unsigned cfq_busy(const struct ios *s)
{
	return (s->q[0].n > 0) + (s->q[1].n > 0);
}

static bool cfq_slice_used(const struct ios_queue *q, uint64_t now)
{
	return !q->slice_new && now >= q->slice_end;
}

/* __cfq_set_active_queue */
static void cfq_set_active(struct ios *s, int qi)
{
	s->active = qi;
	if (qi < 0)
		return;
	s->q[qi].slice_dispatch = 0;
	s->q[qi].slice_end = 0;
	s->q[qi].fifo_checked = false;
	s->q[qi].slice_new = true;
	s->st.slices++;
}

/* __cfq_slice_expired */
static void cfq_expire(struct ios *s)
{
	if (s->active >= 0)
		s->last_served = s->active;
	s->active = -1;
}

/* cfq_select_queue, for at most two queues: keep a queue with requests and slice left; else the
 * busy queue that did not just run (the service tree's rotation), or the only one. */
static int cfq_select(struct ios *s, uint64_t now)
{
	int a = s->active;

	if (a >= 0) {
		if (s->q[a].n > 0 && !cfq_slice_used(&s->q[a], now))
			return a;
		cfq_expire(s);
	}
	if (!s->q[0].n && !s->q[1].n)
		return -1;
	if (s->q[0].n && s->q[1].n)
		a = s->last_served == CFQ_SYNC ? CFQ_ASYNC : CFQ_SYNC;
	else
		a = s->q[0].n ? CFQ_ASYNC : CFQ_SYNC;
	cfq_set_active(s, a);
	return a;
}

/* cfq_may_dispatch */
static bool cfq_may_dispatch(struct ios *s, int qi, uint64_t now)
{
	const struct ios_queue *q = &s->q[qi];
	unsigned max = s->p.quantum / 2 ? s->p.quantum / 2 : 1;

	/* an async queue waits while sync requests are in the driver */
	if (qi == CFQ_ASYNC && s->in_flight[CFQ_SYNC])
		return false;
	if (q->dispatched >= max) {
		/* other queues busy and the slice nearly used (cfq_slice_used_soon: slice_idle 8 ms
		 * per request in flight) */
		if (cfq_busy(s) > 1 &&
		    (q->slice_new || now + 8 * MS * q->dispatched > q->slice_end))
			return false;
		max = cfq_busy(s) == 1 ? UINT32_MAX : s->p.quantum;
	}
	if (qi == CFQ_ASYNC) { /* low_latency: async depth grows with the time since a late sync */
		uint64_t depth =
		    (uint64_t)((int64_t)now - s->last_delayed_sync) / s->p.slice[CFQ_SYNC];

		if (!depth && !q->dispatched)
			depth = 1;
		if (depth < max)
			max = (unsigned)depth;
	}
	return q->dispatched < max;
}

static struct ios_rq *cfq_dispatch(struct ios *s, uint64_t now)
{
	int qi = cfq_select(s, now);
	struct ios_queue *q;
	struct ios_rq *rq = NULL;

	if (qi < 0)
		return NULL;
	q = &s->q[qi];
	if (!cfq_may_dispatch(s, qi, now)) {
		s->st.refused++;
		return NULL;
	}
	if (!q->fifo_checked) { /* cfq_check_fifo: once per slice */
		q->fifo_checked = true;
		if (q->head && now >= q->head->fifo_time) {
			rq = q->head;
			s->st.fifo_expired++;
		}
	}
	if (!rq)
		rq = q->next_rq;
	/* cfq_dispatch_insert */
	q->next_rq = cfq_find_next(s, q, rq);
	q_remove(q, rq);
	if (q->next_rq == rq)
		q->next_rq = NULL;
	q->dispatched++;
	s->in_flight[qi]++;
	s->last_position = rq->pos + rq->len; /* cfq_activate_request */
	q->slice_dispatch++;
	/* an async queue's slice also ends after cfq_prio_to_maxrq dispatches while another queue
	 * is busy (the active queue counts as busy until it expires) */
	if (qi == CFQ_ASYNC && s->q[CFQ_SYNC].n > 0 &&
	    q->slice_dispatch >= 2 * s->p.slice_async_rq * (IOPRIO_BE_NR - IOPRIO_NORM))
		cfq_expire(s);
	return rq;
}

static void cfq_add(struct ios *s, struct ios_rq *rq, uint64_t now)
{
	int qi = rq->sync ? CFQ_SYNC : CFQ_ASYNC;
	struct ios_queue *q = &s->q[qi];

	rq->q = (unsigned)qi;
	rq->fifo_time = now + s->p.fifo_expire[qi];
	q_append(q, rq);
	q->next_rq = cfq_choose(s, q->next_rq, rq, s->last_position);
	/* cfq_rq_enqueued -> cfq_should_preempt: a sync request cuts an async slice short */
	if (qi == CFQ_SYNC && s->active == CFQ_ASYNC) {
		cfq_expire(s);
		cfq_set_active(s, CFQ_SYNC);
		s->st.preempted++;
	}
}

static void cfq_completed(struct ios *s, struct ios_rq *rq, uint64_t now)
{
	int qi = (int)rq->q;
	struct ios_queue *q = &s->q[qi];

	if (q->dispatched)
		q->dispatched--;
	if (s->in_flight[qi])
		s->in_flight[qi]--;
	if (qi == CFQ_SYNC && rq->t_add + s->p.fifo_expire[CFQ_SYNC] <= now)
		s->last_delayed_sync = (int64_t)now;
	if (s->active != qi)
		return;
	if (q->slice_new) { /* cfq_set_prio_slice at the slice's first completion */
		q->slice_end = now + cfq_slice(s, qi);
		q->slice_new = false;
	}
	if (cfq_slice_used(q, now))
		cfq_expire(s);
}

/* ---- deadline -----------------------------------------------------------------------------------
 */

static void dl_add(struct ios *s, struct ios_rq *rq, uint64_t now)
{
	unsigned d = rq->write;

	rq->q = d;
	rq->fifo_time = now + s->p.fifo_expire[d];
	q_append(&s->q[d], rq);
}

/* deadline_move_request: next_rq of the other direction is forgotten, this one's is the
 * request after rq in sort order. */
static void dl_move(struct ios *s, struct ios_rq *rq)
{
	unsigned d = rq->q;

	s->dl_next[0] = s->dl_next[1] = NULL;
	s->dl_next[d] = q_latter(&s->q[d], rq);
	q_remove(&s->q[d], rq);
}

static struct ios_rq *dl_dispatch(struct ios *s, uint64_t now)
{
	bool reads = s->q[0].n > 0, writes = s->q[1].n > 0;
	struct ios_rq *rq = s->dl_next[1] ? s->dl_next[1] : s->dl_next[0];
	unsigned d;

	if (!(rq && s->batching < s->p.fifo_batch)) {
		if (reads && !(writes && s->starved++ >= s->p.writes_starved)) {
			d = 0;
		} else if (writes) {
			s->starved = 0;
			d = 1;
		} else {
			return NULL;
		}
		if (now > s->q[d].head->fifo_time || !s->dl_next[d]) {
			if (now > s->q[d].head->fifo_time)
				s->st.fifo_expired++;
			rq = s->q[d].head;
		} else {
			rq = s->dl_next[d];
		}
		s->batching = 0;
	}
	s->batching++;
	dl_move(s, rq);
	return rq;
}

/* ---- the interface ------------------------------------------------------------------------------
 */

void ios_add(struct ios *s, struct ios_rq *rq, uint64_t now)
{
	rq->seq = s->seq++;
	rq->t_add = now;
	s->st.added++;
	if (s->kind == IOS_CFQ)
		cfq_add(s, rq, now);
	else
		dl_add(s, rq, now);
}

void ios_front_merged(struct ios *s, struct ios_rq *rq)
{
	/* the sort order is found by scanning, so only CFQ's next_rq may change (cfq_merged_request
	 * -> cfq_reposition_rq_rb -> cfq_add_rq_rb) */
	if (s->kind == IOS_CFQ)
		s->q[rq->q].next_rq = cfq_choose(s, s->q[rq->q].next_rq, rq, s->last_position);
}

struct ios_rq *ios_dispatch(struct ios *s, uint64_t now)
{
	struct ios_rq *rq = s->kind == IOS_CFQ ? cfq_dispatch(s, now) : dl_dispatch(s, now);

	if (rq)
		s->st.dispatched++;
	return rq;
}

void ios_completed(struct ios *s, struct ios_rq *rq, uint64_t now)
{
	if (s->kind == IOS_CFQ)
		cfq_completed(s, rq, now);
}
