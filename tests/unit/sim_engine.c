/* core/sim engine: event ordering, deterministic ties, actors on fibers, virtual time passing
 * through sleeps and waits (including waits suspended deep inside a call chain, as mm's hooks
 * are), timeouts racing wake-ups, lazy settling. */
#include "harness.h"
#include "sim/sim.h"

#include <errno.h>

#define LOG_MAX 64

struct log {
	unsigned n;
	uint64_t t[LOG_MAX];
	int tag[LOG_MAX];
};

static void log_add(struct log *l, uint64_t t, int tag)
{
	if (l->n < LOG_MAX) {
		l->t[l->n] = t;
		l->tag[l->n] = tag;
		l->n++;
	}
}

struct cb {
	struct log *log;
	int tag;
};

static void record_cb(struct sim_engine *e, void *arg)
{
	struct cb *c = arg;

	log_add(c->log, sim_now(e), c->tag);
}

TEST(events_run_in_time_order_and_ties_in_insertion_order)
{
	struct sim_engine *e;
	struct log log = {0};
	static const uint64_t when[] = {50, 10, 30, 10, 50, 0, 10};
	struct cb cbs[7];

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	for (int i = 0; i < 7; i++) {
		cbs[i] = (struct cb){&log, i};
		ASSERT_EQ(sim_at(e, when[i], record_cb, &cbs[i]), 0);
	}
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	ASSERT_EQ(log.n, 7);
	static const int order[] = {5, 1, 3, 6, 2, 0, 4};
	for (int i = 0; i < 7; i++) {
		EXPECT_EQ(log.tag[i], order[i]);
		EXPECT_EQ(log.t[i], when[order[i]]);
	}
	EXPECT_EQ(sim_now(e), 50);
	EXPECT_EQ(sim_at(e, 49, record_cb, &cbs[0]), -EINVAL); /* the past is closed */
	sim_engine_destroy(e);
}

TEST(run_stops_at_bound_and_continues)
{
	struct sim_engine *e;
	struct log log = {0};
	struct cb a = {&log, 1}, b = {&log, 2};

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_at(e, 100, record_cb, &a);
	sim_at(e, 300, record_cb, &b);
	ASSERT_EQ(sim_run(e, 200), 0);
	EXPECT_EQ(log.n, 1);
	EXPECT_EQ(sim_now(e), 200); /* the clock reaches the bound */
	ASSERT_EQ(sim_run(e, 1000), 0);
	EXPECT_EQ(log.n, 2);
	EXPECT_EQ(sim_now(e), 300); /* queue empty: the clock stays at the last event */
	EXPECT_EQ(sim_run(e, 100), -EINVAL);
	sim_engine_destroy(e);
}

struct sleeper {
	struct log *log;
	int tag;
	uint64_t step;
	int n;
};

static void sleeper_fn(struct sim_actor *a, void *arg)
{
	struct sleeper *s = arg;

	for (int i = 0; i < s->n; i++) {
		log_add(s->log, sim_actor_now(a), s->tag);
		sim_sleep(a, s->step);
	}
	log_add(s->log, sim_actor_now(a), s->tag + 100);
}

TEST(actors_interleave_by_virtual_time)
{
	struct sim_engine *e;
	struct log log = {0};
	struct sleeper a = {&log, 1, 30, 3}, b = {&log, 2, 20, 4};
	struct sim_actor *aa, *ab;

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	ASSERT_EQ(sim_spawn(e, "a", 0, sleeper_fn, &a, &aa), 0);
	ASSERT_EQ(sim_spawn(e, "b", 5, sleeper_fn, &b, &ab), 0);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	/* a at 0,30,60, done 90; b at 5,25,45,65, done 85 */
	static const uint64_t t[] = {0, 5, 25, 30, 45, 60, 65, 85, 90};
	static const int tag[] = {1, 2, 2, 1, 2, 1, 2, 102, 101};
	ASSERT_EQ(log.n, 9);
	for (int i = 0; i < 9; i++) {
		EXPECT_EQ(log.t[i], t[i]);
		EXPECT_EQ(log.tag[i], tag[i]);
	}
	EXPECT(sim_actor_done(aa));
	EXPECT(sim_actor_done(ab));
	EXPECT_EQ(sim_now(e), 90);
	sim_engine_destroy(e);
}

struct waiter {
	struct sim_waitq *wq;
	uint64_t timeout;
	int result;
	uint64_t woke_at;
	uint64_t debt_before; /* charged before waiting: the wait settles it first */
};

static void waiter_fn(struct sim_actor *a, void *arg)
{
	struct waiter *w = arg;

	sim_charge(a, w->debt_before);
	w->result = sim_wait(a, w->wq, w->timeout);
	w->woke_at = sim_now(sim_actor_engine(a));
}

static void wake_cb(struct sim_engine *e, void *arg)
{
	sim_wake_all(e, arg);
}

TEST(wait_ends_at_the_wake_and_timeouts_expire)
{
	struct sim_engine *e;
	struct sim_waitq wq = {0};
	struct waiter w1 = {&wq, SIM_NO_TIMEOUT, 1, 0, 7};
	struct waiter w2 = {&wq, 40, 1, 0, 0};
	struct waiter w3 = {&wq, 1000, 1, 0, 0};

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "w1", 0, waiter_fn, &w1, NULL);
	sim_spawn(e, "w2", 10, waiter_fn, &w2, NULL);
	sim_spawn(e, "w3", 20, waiter_fn, &w3, NULL);
	sim_at(e, 100, wake_cb, &wq);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	EXPECT_EQ(w1.result, 0);
	EXPECT_EQ(w1.woke_at, 100);
	EXPECT_EQ(w2.result, -ETIMEDOUT);
	EXPECT_EQ(w2.woke_at, 50);
	EXPECT_EQ(w3.result, 0);
	EXPECT_EQ(w3.woke_at, 100);
	EXPECT(sim_waitq_empty(&wq));
	/* w3's timeout event at 1020 is stale after the wake and must not resume anything */
	EXPECT_EQ(sim_now(e), 1020);
	sim_engine_destroy(e);
}

static void schedule_wake_cb(struct sim_engine *e, void *arg)
{
	sim_at(e, 50, wake_cb, arg);
}

TEST(wake_and_timeout_at_the_same_instant_resume_once)
{
	struct sim_engine *e;
	struct sim_waitq wq = {0};
	struct waiter w = {&wq, 50, 1, 0, 0};
	struct sim_engine_stats st;

	/* The wake is scheduled before the waiter parks: it is first in the tie. */
	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "w", 0, waiter_fn, &w, NULL);
	sim_at(e, 50, wake_cb, &wq);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	EXPECT_EQ(w.result, 0);
	EXPECT_EQ(w.woke_at, 50);
	sim_engine_get_stats(e, &st);
	EXPECT_EQ(st.switches, 2); /* start, one resume */
	sim_engine_destroy(e);

	/* The wake is scheduled after the waiter parked: the timeout is first. */
	ASSERT_EQ(sim_engine_create(0, &e), 0);
	w.result = 1;
	sim_spawn(e, "w", 0, waiter_fn, &w, NULL);
	sim_at(e, 10, schedule_wake_cb, &wq);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	EXPECT_EQ(w.result, -ETIMEDOUT);
	EXPECT_EQ(w.woke_at, 50);
	sim_engine_get_stats(e, &st);
	EXPECT_EQ(st.switches, 2);
	sim_engine_destroy(e);
}

/* A wait deep inside a call chain, as in mm_fault -> compaction -> wait_writeback hook. */
struct deep {
	struct sim_waitq *wq;
	uint64_t t_in, t_out;
	int depth_reached;
};

__attribute__((noinline)) static int descend(struct sim_actor *a, struct deep *d, int depth)
{
	volatile char pad[512]; /* use some stack at every level */

	pad[0] = (char)depth;
	if (depth == 0) {
		d->t_in = sim_actor_now(a);
		sim_wait(a, d->wq, SIM_NO_TIMEOUT);
		d->t_out = sim_actor_now(a);
		return pad[0];
	}
	sim_charge(a, 1);
	d->depth_reached++;
	return descend(a, d, depth - 1) + pad[0];
}

static void deep_fn(struct sim_actor *a, void *arg)
{
	descend(a, arg, 100);
}

static void other_fn(struct sim_actor *a, void *arg)
{
	struct sleeper *s = arg;

	sleeper_fn(a, s);
}

TEST(virtual_time_passes_through_a_wait_deep_in_a_call_chain)
{
	struct sim_engine *e;
	struct sim_waitq wq = {0};
	struct deep d = {&wq, 0, 0, 0};
	struct log log = {0};
	struct sleeper other = {&log, 7, 1000, 5};

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "deep", 0, deep_fn, &d, NULL);
	sim_spawn(e, "other", 0, other_fn, &other, NULL);
	sim_at(e, 3000, wake_cb, &wq);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	EXPECT_EQ(d.depth_reached, 100);
	EXPECT_EQ(d.t_in, 100); /* charged 1 ns per level, settled by the wait */
	EXPECT_EQ(d.t_out, 3000);
	/* the other actor kept running while the deep one was suspended */
	ASSERT_EQ(log.n, 6);
	EXPECT_EQ(log.t[1], 1000);
	EXPECT_EQ(log.t[3], 3000);
	sim_engine_destroy(e);
}

struct charger {
	uint64_t seen_now;
};

static void charger_fn(struct sim_actor *a, void *arg)
{
	struct charger *c = arg;

	for (int i = 0; i < 10; i++) {
		sim_charge(a, 10);
		sim_settle(a);
	}
	c->seen_now = sim_now(sim_actor_engine(a));
}

TEST(settling_without_competition_needs_no_switch)
{
	struct sim_engine *e;
	struct charger c = {0};
	struct sim_engine_stats st;

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "c", 0, charger_fn, &c, NULL);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	EXPECT_EQ(c.seen_now, 100);
	sim_engine_get_stats(e, &st);
	EXPECT_EQ(st.switches, 1);
	EXPECT_EQ(st.lazy, 10);
	sim_engine_destroy(e);
}

TEST(settling_lets_earlier_events_run_first)
{
	struct sim_engine *e;
	struct log log = {0};
	struct cb mid = {&log, 1};
	struct charger c = {0};

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "c", 0, charger_fn, &c, NULL);
	sim_at(e, 55, record_cb, &mid);
	ASSERT_EQ(sim_run(e, UINT64_MAX), 0);
	ASSERT_EQ(log.n, 1);
	EXPECT_EQ(log.t[0], 55);
	EXPECT_EQ(c.seen_now, 100);
	sim_engine_destroy(e);
}

TEST(a_bound_suspends_actors_mid_work)
{
	struct sim_engine *e;
	struct charger c = {0};

	ASSERT_EQ(sim_engine_create(0, &e), 0);
	sim_spawn(e, "c", 0, charger_fn, &c, NULL);
	ASSERT_EQ(sim_run(e, 45), 0);
	EXPECT_EQ(sim_now(e), 45);
	EXPECT_EQ(c.seen_now, 0);
	ASSERT_EQ(sim_run(e, 1000), 0);
	EXPECT_EQ(c.seen_now, 100);
	sim_engine_destroy(e); /* also fine with actors abandoned mid-run: see next test */
}

TEST(many_actors_and_abandoned_ones_are_freed)
{
	struct sim_engine *e;
	static struct sleeper s[500];
	static struct log logs[500];
	struct sim_engine_stats st;

	ASSERT_EQ(sim_engine_create(64 << 10, &e), 0);
	for (int i = 0; i < 500; i++) {
		s[i] = (struct sleeper){&logs[i], i, (uint64_t)(1 + i % 7), 1 + i % 5};
		ASSERT_EQ(sim_spawn(e, "s", (uint64_t)i % 13, sleeper_fn, &s[i], NULL), 0);
	}
	ASSERT_EQ(sim_run(e, 20), 0);
	sim_engine_get_stats(e, &st);
	EXPECT_EQ(st.actors, 500);
	EXPECT_GT(st.events, 500);
	sim_engine_destroy(e);
}

/* Two identical runs of a busy mixed workload give identical traces. */
struct mixer {
	struct sim_waitq *wq;
	struct log *log;
	int tag;
};

static void mixer_fn(struct sim_actor *a, void *arg)
{
	struct mixer *m = arg;

	for (int i = 0; i < 6; i++) {
		sim_charge(a, (uint64_t)(m->tag * 3 + i) % 11);
		if ((i + m->tag) % 3 == 0)
			sim_wait(a, m->wq, (uint64_t)(5 + m->tag));
		else
			sim_settle(a);
		log_add(m->log, sim_actor_now(a), m->tag);
		sim_wake_one(sim_actor_engine(a), m->wq);
	}
}

static void mixed_run(struct log *log)
{
	struct sim_engine *e;
	struct sim_waitq wq = {0};
	struct mixer m[8];

	sim_engine_create(0, &e);
	for (int i = 0; i < 8; i++) {
		m[i] = (struct mixer){&wq, log, i};
		sim_spawn(e, "m", (uint64_t)i % 3, mixer_fn, &m[i], NULL);
	}
	sim_run(e, UINT64_MAX);
	sim_engine_destroy(e);
}

TEST(identical_inputs_give_identical_traces)
{
	struct log a = {0}, b = {0};

	mixed_run(&a);
	mixed_run(&b);
	ASSERT_EQ(a.n, 48);
	ASSERT_EQ(b.n, 48);
	EXPECT(memcmp(&a, &b, sizeof(a)) == 0);
}

TEST_MAIN()
