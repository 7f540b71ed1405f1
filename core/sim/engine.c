/* The discrete-event scheduler: a binary min-heap of timed events ordered by (time, insertion
 * sequence), actors on fibers, waitqueues with timeouts, and lazy settling of an actor's debt.
 *
 * The kernel counterpart is the scheduler plus the wait-queue machinery a process sleeping in
 * wait_on_page_bit() uses: a waiter parks on a queue, the completion wakes the queue, the waiter
 * continues at the completion's time. Stale wake-ups (a timeout racing a wake) are discarded by
 * a per-actor token that changes at each transition.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum ev_kind {
	EV_CALL,    /* a sim_at() callback */
	EV_RESUME,  /* continue an actor (start, end of a sleep, a wake-up) */
	EV_TIMEOUT, /* a wait's bound expired */
};

struct sim_event {
	uint64_t t;   /* virtual time due */
	uint64_t seq; /* insertion order: breaks ties deterministically */
	enum ev_kind kind;
	sim_event_fn fn; /* EV_CALL */
	void *arg;	 /* EV_CALL argument, or the actor */
	uint64_t token;	 /* actor token when scheduled (EV_RESUME, EV_TIMEOUT) */
};

enum actor_state {
	ACTOR_READY, /* a resume event is pending */
	ACTOR_RUNNING,
	ACTOR_WAITING, /* parked on a waitqueue */
	ACTOR_DONE,
};

struct sim_actor {
	struct fiber fiber;
	struct sim_engine *e;
	struct sim_actor *next_all; /* engine's list of actors, for destroy */
	char name[32];
	sim_actor_fn fn;
	void *arg;
	uint64_t debt;	/* work charged but not yet passed in virtual time (ns) */
	uint64_t token; /* changes at each wake; older events are stale */
	enum actor_state state;
	int wait_result;      /* what sim_wait() returns */
	struct sim_waitq *wq; /* the queue parked on, or NULL */
	struct sim_actor *wq_next;
};

struct sim_engine {
	uint64_t now;		/* global virtual clock (ns) */
	uint64_t until;		/* bound of the current sim_run() */
	uint64_t seq;		/* next event sequence number */
	struct sim_event *heap; /* min-heap on (t, seq) */
	size_t n, cap;
	struct fiber host;	   /* the scheduler's own stack */
	struct sim_actor *current; /* running actor or NULL */
	struct sim_actor *actors;  /* all actors ever spawned */
	size_t stack_bytes;
	bool stopped;
	int err; /* first internal error, sticky */
	struct sim_engine_stats st;
};

/* ---- heap -------------------------------------------------------------------------------- */

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_swap(struct sim_event *h, size_t i, size_t j)
{
	struct sim_event t = h[i];

	h[i] = h[j];
	h[j] = t;
}

static void heap_up(struct sim_event *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&h[i], &h[p]))
			break;
		heap_swap(h, i, p);
		i = p;
	}
}

static void heap_down(struct sim_event *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < n && ev_before(&h[l], &h[m]))
			m = l;
		if (r < n && ev_before(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

static int heap_push(struct sim_engine *e, struct sim_event ev)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;
		struct sim_event *h = realloc(e->heap, cap * sizeof(*h));

		if (!h) {
			if (!e->err)
				e->err = -ENOMEM;
			e->stopped = true;
			return -ENOMEM;
		}
		e->heap = h;
		e->cap = cap;
	}
	ev.seq = e->seq++;
	e->heap[e->n] = ev;
	heap_up(e->heap, e->n++);
	return 0;
}

static struct sim_event heap_pop(struct sim_engine *e)
{
	struct sim_event top = e->heap[0];

	e->heap[0] = e->heap[--e->n];
	heap_down(e->heap, e->n, 0);
	return top;
}

/* ---- engine -------------------------------------------------------------------------------- */

int sim_engine_create(size_t stack_bytes, struct sim_engine **out)
{
	struct sim_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->stack_bytes = stack_bytes ? stack_bytes : SIM_STACK_DEFAULT;
	e->until = UINT64_MAX;
	fiber_host_init(&e->host);
	*out = e;
	return 0;
}

void sim_engine_destroy(struct sim_engine *e)
{
	struct sim_actor *a, *next;

	if (!e)
		return;
	for (a = e->actors; a; a = next) {
		next = a->next_all;
		fiber_destroy(&a->fiber);
		free(a);
	}
	free(e->heap);
	free(e);
}

uint64_t sim_now(const struct sim_engine *e)
{
	return e->now;
}

void sim_engine_get_stats(const struct sim_engine *e, struct sim_engine_stats *s)
{
	*s = e->st;
}

void sim_stop(struct sim_engine *e)
{
	e->stopped = true;
}

int sim_at(struct sim_engine *e, uint64_t t, sim_event_fn fn, void *arg)
{
	if (t < e->now)
		return -EINVAL;
	return heap_push(e, (struct sim_event){.t = t, .kind = EV_CALL, .fn = fn, .arg = arg});
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
/* false positive (gcc 12 -fanalyzer): the grown heap is kept in a->e (sim_engine_destroy) */
static int schedule_resume(struct sim_actor *a, uint64_t t)
{
	a->state = ACTOR_READY;
	return heap_push(
	    a->e, (struct sim_event){.t = t, .kind = EV_RESUME, .arg = a, .token = a->token});
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static void actor_main(void *arg)
{
	struct sim_actor *a = arg;

	a->fn(a, a->arg);
	a->state = ACTOR_DONE;
	fiber_exit_to(&a->fiber, &a->e->host);
}

int sim_spawn(struct sim_engine *e, const char *name, uint64_t start, sim_actor_fn fn, void *arg,
	      struct sim_actor **out)
{
	struct sim_actor *a;
	int err;

	if (start < e->now)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	err = fiber_create(&a->fiber, e->stack_bytes, actor_main, a);
	if (err)
		goto out_free;
	a->e = e;
	snprintf(a->name, sizeof(a->name), "%s", name ? name : "actor");
	a->fn = fn;
	a->arg = arg;
	err = schedule_resume(a, start);
	if (err)
		goto out_fiber;
	a->next_all = e->actors;
	e->actors = a;
	e->st.actors++;
	if (out)
		*out = a;
	return 0;

out_fiber:
	fiber_destroy(&a->fiber);
out_free:
	free(a);
	return err;
}

/* Scheduler side: run actor a until it yields or finishes. */
static void run_actor(struct sim_engine *e, struct sim_actor *a)
{
	e->current = a;
	a->state = ACTOR_RUNNING;
	e->st.switches++;
	fiber_switch(&e->host, &a->fiber);
	e->current = NULL;
	if (a->state == ACTOR_DONE)
		fiber_destroy(&a->fiber);
}

static void waitq_unlink(struct sim_waitq *wq, struct sim_actor *a)
{
	struct sim_actor **pp = &wq->head, *prev = NULL;

	while (*pp && *pp != a) {
		prev = *pp;
		pp = &(*pp)->wq_next;
	}
	if (!*pp)
		return;
	*pp = a->wq_next;
	if (wq->tail == a)
		wq->tail = prev;
	a->wq_next = NULL;
}

static void wake_actor(struct sim_actor *a, int result)
{
	if (a->wq)
		waitq_unlink(a->wq, a);
	a->wq = NULL;
	a->wait_result = result;
	a->token++;
	schedule_resume(a, a->e->now);
}

static void dispatch(struct sim_engine *e, const struct sim_event *ev)
{
	struct sim_actor *a = ev->arg;

	switch (ev->kind) {
	case EV_CALL:
		ev->fn(e, ev->arg);
		break;
	case EV_RESUME:
		if (a->token == ev->token && a->state == ACTOR_READY)
			run_actor(e, a);
		break;
	case EV_TIMEOUT:
		if (a->token == ev->token && a->state == ACTOR_WAITING)
			wake_actor(a, -ETIMEDOUT);
		break;
	}
}

int sim_run(struct sim_engine *e, uint64_t until)
{
	if (e->current || until < e->now)
		return -EINVAL;
	e->until = until;
	e->stopped = false;
	while (!e->stopped && e->n > 0 && e->heap[0].t <= until) {
		struct sim_event ev = heap_pop(e);

		e->now = ev.t;
		e->st.events++;
		dispatch(e, &ev);
	}
	if (!e->stopped && e->n > 0)
		e->now = until;
	return e->err;
}

/* ---- actors ---------------------------------------------------------------------------------- */

struct sim_actor *sim_current(const struct sim_engine *e)
{
	return e->current;
}

struct sim_engine *sim_actor_engine(const struct sim_actor *a)
{
	return a->e;
}

const char *sim_actor_name(const struct sim_actor *a)
{
	return a->name;
}

bool sim_actor_done(const struct sim_actor *a)
{
	return a->state == ACTOR_DONE;
}

uint64_t sim_actor_now(const struct sim_actor *a)
{
	uint64_t t = a->e->now + a->debt;

	return t < a->e->now ? UINT64_MAX : t;
}

uint64_t sim_actor_debt(const struct sim_actor *a)
{
	return a->debt;
}

void sim_charge(struct sim_actor *a, uint64_t ns)
{
	a->debt = a->debt + ns < a->debt ? UINT64_MAX : a->debt + ns;
}

/* Actor side: give control back to the scheduler until a resume event for us runs. */
static void yield(struct sim_actor *a)
{
	fiber_switch(&a->fiber, &a->e->host);
}

void sim_settle(struct sim_actor *a)
{
	struct sim_engine *e = a->e;
	uint64_t target;

	if (!a->debt)
		return;
	target = sim_actor_now(a);
	a->debt = 0;
	if (!e->stopped && target <= e->until && (e->n == 0 || e->heap[0].t > target)) {
		/* Nothing else happens before target: no need to switch. */
		e->now = target;
		e->st.lazy++;
		return;
	}
	schedule_resume(a, target);
	yield(a);
}

void sim_sleep(struct sim_actor *a, uint64_t ns)
{
	sim_charge(a, ns);
	sim_settle(a);
}

int sim_wait(struct sim_actor *a, struct sim_waitq *wq, uint64_t timeout_ns)
{
	struct sim_engine *e = a->e;

	sim_settle(a);
	a->state = ACTOR_WAITING;
	a->wq = wq;
	a->wq_next = NULL;
	if (wq->tail)
		wq->tail->wq_next = a;
	else
		wq->head = a;
	wq->tail = a;
	if (timeout_ns != SIM_NO_TIMEOUT) {
		uint64_t t = e->now + timeout_ns < e->now ? UINT64_MAX : e->now + timeout_ns;

		heap_push(
		    e, (struct sim_event){.t = t, .kind = EV_TIMEOUT, .arg = a, .token = a->token});
	}
	yield(a);
	return a->wait_result;
}

void sim_waitq_init(struct sim_waitq *wq)
{
	wq->head = wq->tail = NULL;
}

bool sim_waitq_empty(const struct sim_waitq *wq)
{
	return wq->head == NULL;
}

unsigned sim_wake_all(struct sim_engine *e, struct sim_waitq *wq)
{
	unsigned n = 0;

	(void)e;
	while (wq->head) {
		wake_actor(wq->head, 0);
		n++;
	}
	return n;
}

unsigned sim_wake_one(struct sim_engine *e, struct sim_waitq *wq)
{
	(void)e;
	if (!wq->head)
		return 0;
	wake_actor(wq->head, 0);
	return 1;
}
