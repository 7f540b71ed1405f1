/* The 3.x request list shared by a machine's processes (see rqshare.h; the rules are rqlist's,
 * block/blk-core.c get_request_wait and freed_request, 3.1-3.3). */
#include "io/rqshare.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/sys.h"

#define RQS_SLOT_POLL_NS 1000000ULL /* every slot taken: look again this often */

/* A robust process-shared mutex, as the machine's mm lock: a process killed while holding it
 * (held only around rqlist's pure steps: no fault, no system call inside) leaves EOWNERDEAD,
 * and the next taker goes on with counts at worst one step behind, where a plain futex word
 * would leave every other process of the machine asleep on it. */
static void lock(struct rqs *s)
{
	if (pthread_mutex_lock(&s->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&s->lock);
}

static void unlock(struct rqs *s)
{
	pthread_mutex_unlock(&s->lock);
}

void rqs_init(struct rqs *s, unsigned nr_requests)
{
	pthread_mutexattr_t a;

	memset(s, 0, sizeof(*s));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&s->lock, &a);
	pthread_mutexattr_destroy(&a);
	rql_init(&s->l, nr_requests);
}

static void stat_add(struct rqs *s, enum rqs_who who, uint64_t ns)
{
	struct rqs_wait_stat *w = &s->waited[who];

	w->count++;
	w->total_ns += ns;
	if (ns > w->max_ns)
		w->max_ns = ns;
	w->over_1s += ns >= 1000000000ULL;
}

/* A free slot, queued at the tail of d's sleepers (lock held); -1 when all are taken. */
static int queue_slot(struct rqs *s, enum rql_dir d, uint64_t now)
{
	for (int i = 0; i < RQS_WAITERS; i++) {
		struct rqs_slot *q = &s->slot[i];

		if (__atomic_load_n(&q->used, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&q->used, 1, __ATOMIC_RELAXED);
		q->t0 = now;
		__atomic_store_n(&q->word, 0, __ATOMIC_RELAXED);
		q->w.cookie = q;
		rql_wait(&s->l, d, &q->w); /* prepare_to_wait_exclusive */
		return i;
	}
	return -1;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

	nanosleep(&ts, NULL);
}

int rqs_get(struct rqs *s, enum rql_dir d, struct rql_ioc *ioc, enum rqs_who who, uint64_t slice_ns,
	    bool (*gone)(void *), void *arg, uint64_t *waited_ns)
{
	uint64_t t0 = 0;
	int rc = 0;

	if (waited_ns)
		*waited_ns = 0;
	for (;;) {
		uint64_t now = clock_now_ns();
		struct rqs_slot *q;
		int i;

		lock(s);
		if (rql_get(&s->l, d, ioc, now))
			break;
		if (!t0)
			t0 = now;
		i = queue_slot(s, d, now);
		if (i < 0) {
			s->slot_waits++;
			unlock(s);
			if (gone && gone(arg))
				return -ETIMEDOUT;
			sleep_ns(RQS_SLOT_POLL_NS);
			continue;
		}
		q = &s->slot[i];
		unlock(s);
		/* io_schedule() until freed_request() picks this sleeper */
		while (!__atomic_load_n(&q->word, __ATOMIC_ACQUIRE)) {
			struct timespec ts = {(time_t)(slice_ns / 1000000000ULL),
					      (long)(slice_ns % 1000000000ULL)};

			sys_futex_wait_shared(&q->word, 0, slice_ns ? &ts : NULL);
			if (!__atomic_load_n(&q->word, __ATOMIC_ACQUIRE) && gone && gone(arg)) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		lock(s);
		rql_woken(&s->l, d, &q->w, ioc, clock_now_ns()); /* finish_wait, batching */
		__atomic_store_n(&q->used, 0, __ATOMIC_RELAXED);
		if (rc < 0)
			break;
		unlock(s);
	}
	/* the lock is held here */
	if (t0) {
		uint64_t ns = clock_now_ns() - t0;

		stat_add(s, who, ns);
		if (waited_ns)
			*waited_ns = ns;
	}
	unlock(s);
	return rc;
}

bool rqs_try(struct rqs *s, enum rql_dir d, struct rql_ioc *ioc, int *slot)
{
	uint64_t now = clock_now_ns();
	bool got;

	lock(s);
	if (*slot >= 0) {
		struct rqs_slot *q = &s->slot[*slot];

		if (!__atomic_load_n(&q->word, __ATOMIC_ACQUIRE)) {
			unlock(s);
			return false; /* still asleep */
		}
		rql_woken(&s->l, d, &q->w, ioc, now);
		got = rql_get(&s->l, d, ioc, now);
		if (got) {
			stat_add(s, RQS_FLUSHER, now - q->t0);
			__atomic_store_n(&q->used, 0, __ATOMIC_RELAXED);
			*slot = -1;
		} else { /* back to the tail, still counted from the first sleep */
			__atomic_store_n(&q->word, 0, __ATOMIC_RELAXED);
			rql_wait(&s->l, d, &q->w);
		}
		unlock(s);
		return got;
	}
	got = rql_get(&s->l, d, ioc, now);
	if (!got) {
		*slot = queue_slot(s, d, now);
		if (*slot < 0)
			s->slot_waits++;
	}
	unlock(s);
	return got;
}

void rqs_cancel(struct rqs *s, enum rql_dir d, int *slot)
{
	struct rql_ioc ioc = {0};

	if (*slot < 0)
		return;
	lock(s);
	rql_woken(&s->l, d, &s->slot[*slot].w, &ioc, 0);
	__atomic_store_n(&s->slot[*slot].used, 0, __ATOMIC_RELAXED);
	unlock(s);
	*slot = -1;
}

bool rqs_put(struct rqs *s, enum rql_dir d, int flusher_slot, bool *uncongested)
{
	struct rql_waiter *w;
	struct rqs_slot *q = NULL;
	bool unc;

	lock(s);
	w = rql_put(&s->l, d, &unc);
	if (w) {
		q = w->cookie;
		__atomic_store_n(&q->word, 1, __ATOMIC_RELEASE);
	}
	unlock(s);
	if (uncongested)
		*uncongested = unc;
	if (!q)
		return false;
	if (flusher_slot >= 0 && q == &s->slot[flusher_slot])
		return true;
	/* wake_up(): the slot may already be another sleeper's (this one saw the word and left):
	 * that one finds its word 0 and sleeps again */
	sys_futex_wake_shared(&q->word, 1);
	return false;
}

bool rqs_congested(struct rqs *s, enum rql_dir d)
{
	bool c;

	lock(s);
	c = rql_congested(&s->l, d);
	unlock(s);
	return c;
}

void rqs_stats(struct rqs *s, struct rql_stats *st, struct rqs_wait_stat waited[RQS_WHO_NR])
{
	lock(s);
	*st = s->l.st;
	memcpy(waited, s->waited, sizeof(s->waited));
	unlock(s);
}
