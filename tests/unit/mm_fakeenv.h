/* A fake environment for driving core/mm in unit tests (other modules' tests may reuse it).
 *
 * Virtual clock: now() returns fe->now; every modelled cost and hook advances it by a fixed
 * amount, so tests can assert where time went. Writeback completion: fe->wb_done_at[pfn] says
 * when the writeback of a frame completes; the wait hook advances the clock to that time (or by
 * the timeout) and completes the writeback itself through mm_writeback_end (re-entering mm with
 * the lock released, as the simulator does). Every hook counts its calls and checks the lock
 * discipline of mm.h: [unlocked] hooks must run without the lock, [locked] ones with it.
 *
 * Threaded mode (fakeenv_init(..., true)): the lock is a pthread mutex and the wait hook polls
 * mm_frame_under_writeback (yielding) so that another thread completes writeback; the clock is
 * then an atomic counter.
 */
#ifndef THPEMU_TESTS_MM_FAKEENV_H
#define THPEMU_TESTS_MM_FAKEENV_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mm/mm.h"

#define FE_MAX_WAITS 256

struct fakeenv {
	struct mm *mm;
	bool threaded;
	pthread_mutex_t mutex;
	uint64_t now;				/* virtual ns (atomic in threaded mode) */
	uint64_t cost_ns[MM_COST_NR];		/* ns charged per unit of each modelled cost */
	uint64_t clear_ns, migrate_ns, copy_ns; /* ns per hook call */
	uint64_t clear_ahead_ns;		/* what clear_huge says was cleared ahead of time */
	uint64_t writeout_latency_ns;		/* writeout: writeback completes this long after */
	uint64_t *wb_done_at; /* per pfn: completion time of its writeback (0: at once) */
	uint32_t nr_frames;
	int migrate_ret; /* what migrate_anon returns (0 by default) */
	/* optional test callbacks, run with the mm lock released (they may call into mm) */
	int (*on_migrate)(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to);
	void (*on_wait)(struct fakeenv *fe, uint32_t pfn);
	void (*on_clear)(struct fakeenv *fe, uint32_t head);
	/* khugepaged_scan and split_underused hooks (NULL: -ENOENT, 0) */
	int (*on_khugepaged_scan)(struct fakeenv *fe, uint32_t as_id, uint64_t *addr,
				  unsigned budget, bool *done);
	int (*on_split_underused)(struct fakeenv *fe, uint64_t extent_owner, uint32_t head);
	void (*on_throttle)(struct fakeenv *fe, enum mm_wait_kind kind);
	void *user;
	int copy_ret; /* what copy_file_page returns */
	/* observations */
	uint64_t n_wait, n_wait_timeout, n_writeout, n_migrate, n_copy, n_clear, n_trace;
	uint64_t n_batches;	    /* migrate_anon_batch calls (fakeenv_batch) */
	unsigned batch_max;	    /* the most pages one of them moved */
	uint64_t n_lock_violations; /* a hook called with the wrong lock state */
	uint64_t trace_count[MM_TRACE_NR];
	uint32_t wait_pfn[FE_MAX_WAITS];
	uint64_t wait_ns[FE_MAX_WAITS];
	uint64_t wait_timeout[FE_MAX_WAITS];
	/* throttles and per-wait reports: a nap advances the clock by its timeout unless it is
	 * wait_iff_congested and the device is not `congested` */
	bool congested;
	uint64_t n_throttle, n_throttle_kind[MM_WAIT_NR];
	uint64_t n_waited, n_waited_kind[MM_WAIT_NR];
	struct mm_wait waited[FE_MAX_WAITS];
};

static __thread int fe_lock_depth; /* the mm lock held by this thread */

static inline uint64_t fe_advance(struct fakeenv *fe, uint64_t ns)
{
	return __atomic_add_fetch(&fe->now, ns, __ATOMIC_RELAXED);
}

static inline void fe_expect_locked(struct fakeenv *fe, bool locked)
{
	if (fe->threaded && (fe_lock_depth > 0) != locked)
		__atomic_add_fetch(&fe->n_lock_violations, 1, __ATOMIC_RELAXED);
}

static inline uint64_t fe_now(void *priv, void *call)
{
	struct fakeenv *fe = priv;

	return __atomic_load_n(&fe->now, __ATOMIC_RELAXED);
}

static inline void fe_lock(void *priv)
{
	struct fakeenv *fe = priv;

	pthread_mutex_lock(&fe->mutex);
	if (fe_lock_depth++)
		fe->n_lock_violations++; /* recursive locking would deadlock a real mutex */
}

static inline void fe_unlock(void *priv)
{
	struct fakeenv *fe = priv;

	fe_lock_depth--;
	pthread_mutex_unlock(&fe->mutex);
}

static inline void fe_record_wait(struct fakeenv *fe, uint32_t pfn, uint64_t ns, uint64_t to)
{
	uint64_t i = __atomic_fetch_add(&fe->n_wait, 1, __ATOMIC_RELAXED);

	if (i < FE_MAX_WAITS) {
		fe->wait_pfn[i] = pfn;
		fe->wait_ns[i] = ns;
		fe->wait_timeout[i] = to;
	}
}

static inline int fe_wait_threaded(struct fakeenv *fe, uint32_t pfn, uint64_t timeout_ns)
{
	uint64_t spins = 0, limit = timeout_ns ? timeout_ns / 1000 + 1 : UINT64_MAX;

	while (mm_frame_under_writeback(fe->mm, pfn)) {
		if (++spins > limit) {
			__atomic_add_fetch(&fe->n_wait_timeout, 1, __ATOMIC_RELAXED);
			fe_record_wait(fe, pfn, spins * 1000, timeout_ns);
			return -ETIMEDOUT;
		}
		fe_advance(fe, 1000);
		sched_yield();
	}
	fe_record_wait(fe, pfn, spins * 1000, timeout_ns);
	return 0;
}

static inline int fe_wait_writeback(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	struct fakeenv *fe = priv;
	uint64_t now, done;

	fe_expect_locked(fe, false);
	if (fe->on_wait)
		fe->on_wait(fe, pfn);
	if (fe->threaded)
		return fe_wait_threaded(fe, pfn, timeout_ns);
	if (!mm_frame_under_writeback(fe->mm, pfn)) {
		fe_record_wait(fe, pfn, 0, timeout_ns);
		return 0;
	}
	now = fe->now;
	done = pfn < fe->nr_frames ? fe->wb_done_at[pfn] : 0;
	if (done < now)
		done = now;
	if (timeout_ns && done - now > timeout_ns) {
		fe->now = now + timeout_ns;
		fe->n_wait_timeout++;
		fe_record_wait(fe, pfn, timeout_ns, timeout_ns);
		return -ETIMEDOUT;
	}
	fe->now = done;
	fe_record_wait(fe, pfn, done - now, timeout_ns);
	mm_writeback_end(fe->mm, pfn, 0);
	return 0;
}

static inline int fe_migrate_anon(void *priv, void *call, uint64_t owner, uint32_t from,
				  uint32_t to)
{
	struct fakeenv *fe = priv;

	fe_expect_locked(fe, false);
	__atomic_add_fetch(&fe->n_migrate, 1, __ATOMIC_RELAXED);
	fe_advance(fe, fe->migrate_ns);
	if (fe->on_migrate)
		return fe->on_migrate(fe, owner, from, to);
	return fe->migrate_ret;
}

/* The modern era's batch: each page as one migrate_anon call, all with the lock released. */
static inline void fe_migrate_anon_batch(void *priv, void *call, unsigned n, const uint64_t *owner,
					 const uint32_t *from, const uint32_t *to, int *ret)
{
	struct fakeenv *fe = priv;

	fe->n_batches++;
	if (n > fe->batch_max)
		fe->batch_max = n;
	for (unsigned i = 0; i < n; i++)
		ret[i] = fe_migrate_anon(priv, call, owner[i], from[i], to[i]);
}

static inline int fe_copy_file_page(void *priv, void *call, uint64_t owner, uint32_t from,
				    uint32_t to)
{
	struct fakeenv *fe = priv;

	fe_expect_locked(fe, false);
	__atomic_add_fetch(&fe->n_copy, 1, __ATOMIC_RELAXED);
	fe_advance(fe, fe->copy_ns);
	return fe->copy_ret;
}

static inline uint64_t fe_clear_huge(void *priv, void *call, uint32_t head, uint64_t extent_owner)
{
	struct fakeenv *fe = priv;

	fe_expect_locked(fe, false);
	__atomic_add_fetch(&fe->n_clear, 1, __ATOMIC_RELAXED);
	fe_advance(fe, fe->clear_ns);
	if (fe->on_clear)
		fe->on_clear(fe, head);
	return fe->clear_ahead_ns;
}

static inline void fe_alloc_cost(void *priv, void *call, enum mm_cost what, uint64_t n)
{
	struct fakeenv *fe = priv;

	fe_expect_locked(fe, true);
	fe_advance(fe, fe->cost_ns[what] * n);
}

static inline int fe_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	struct fakeenv *fe = priv;
	int ret;

	fe_expect_locked(fe, false);
	ret = mm_writeback_begin_one(fe->mm, pfn);
	if (ret)
		return ret;
	__atomic_add_fetch(&fe->n_writeout, 1, __ATOMIC_RELAXED);
	if (!fe->threaded && pfn < fe->nr_frames) /* threaded: another thread completes it */
		fe->wb_done_at[pfn] = fe->now + fe->writeout_latency_ns;
	return 0;
}

static inline void fe_trace(void *priv, void *call, const struct mm_trace *ev)
{
	struct fakeenv *fe = priv;

	fe_expect_locked(fe, true);
	fe->n_trace++;
	if ((unsigned)ev->kind < MM_TRACE_NR)
		fe->trace_count[ev->kind]++;
}

static inline int fe_khugepaged_scan(void *priv, void *call, uint32_t as_id, uint64_t *addr,
				     unsigned budget, bool *done)
{
	struct fakeenv *fe = priv;

	(void)call;
	fe_expect_locked(fe, false);
	return fe->on_khugepaged_scan ? fe->on_khugepaged_scan(fe, as_id, addr, budget, done)
				      : -ENOENT;
}

static inline int fe_split_underused(void *priv, void *call, uint64_t extent_owner, uint32_t head)
{
	struct fakeenv *fe = priv;

	(void)call;
	fe_expect_locked(fe, false);
	return fe->on_split_underused ? fe->on_split_underused(fe, extent_owner, head) : 0;
}

static inline int fe_throttle(void *priv, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
			      bool iff_congested)
{
	struct fakeenv *fe = priv;

	(void)call;
	fe_expect_locked(fe, false);
	if (iff_congested && !fe->congested)
		return 0;
	__atomic_add_fetch(&fe->n_throttle, 1, __ATOMIC_RELAXED);
	if ((unsigned)kind < MM_WAIT_NR)
		__atomic_add_fetch(&fe->n_throttle_kind[kind], 1, __ATOMIC_RELAXED);
	fe_advance(fe, timeout_ns);
	if (fe->on_throttle)
		fe->on_throttle(fe, kind);
	return 0;
}

static inline void fe_waited(void *priv, void *call, const struct mm_wait *w)
{
	struct fakeenv *fe = priv;
	uint64_t i;

	(void)call;
	fe_expect_locked(fe, true);
	i = __atomic_fetch_add(&fe->n_waited, 1, __ATOMIC_RELAXED);
	if (i < FE_MAX_WAITS)
		fe->waited[i] = *w;
	if ((unsigned)w->kind < MM_WAIT_NR)
		__atomic_add_fetch(&fe->n_waited_kind[w->kind], 1, __ATOMIC_RELAXED);
}

static inline bool fe_congested(void *priv, void *call)
{
	struct fakeenv *fe = priv;

	(void)call;
	fe_expect_locked(fe, true);
	return fe->congested;
}

/* Every hook but the lock's, which only a threaded env has. */
#define FE_OPS_HOOKS                                                                               \
	.now = fe_now, .wait_writeback = fe_wait_writeback, .migrate_anon = fe_migrate_anon,       \
	.copy_file_page = fe_copy_file_page, .clear_huge = fe_clear_huge,                          \
	.alloc_cost = fe_alloc_cost, .writeout = fe_writeout, .trace = fe_trace,                   \
	.khugepaged_scan = fe_khugepaged_scan, .split_underused = fe_split_underused,              \
	.throttle = fe_throttle, .waited = fe_waited, .congested = fe_congested

static const struct mm_env_ops fe_ops_single = {FE_OPS_HOOKS};

static const struct mm_env_ops fe_ops_threaded = {
    FE_OPS_HOOKS,
    .lock = fe_lock,
    .unlock = fe_unlock,
};

/* Single-threaded, with migrate_anon_batch too (the live emulator's env has it). */
static const struct mm_env_ops fe_ops_batch = {
    FE_OPS_HOOKS,
    .migrate_anon_batch = fe_migrate_anon_batch,
};

/* Create a pool of pool_bytes with policy spec under a fake environment with these hooks (one
 * of the fe_ops_* above; threaded when they lock). Returns 0 or -errno; err gets mm's message.
 * The env must outlive the pool. */
static inline int fakeenv_init_ops(struct fakeenv *fe, const char *spec, uint64_t pool_bytes,
				   const struct mm_env_ops *ops, char *err, size_t errlen)
{
	struct mm_config cfg = {.pool_bytes = pool_bytes};
	struct mm_env env = {.ops = ops, .priv = fe};
	int ret;

	memset(fe, 0, sizeof(*fe));
	fe->threaded = ops->lock != NULL;
	pthread_mutex_init(&fe->mutex, NULL);
	ret = mm_policy_parse(spec, &cfg.policy, err, errlen);
	if (ret)
		return ret;
	fe->nr_frames = (uint32_t)(pool_bytes / MM_PAGE_SIZE);
	fe->wb_done_at = calloc(fe->nr_frames, sizeof(uint64_t));
	if (!fe->wb_done_at)
		return -ENOMEM;
	return mm_create(&cfg, &env, &fe->mm, err, errlen);
}

static inline int fakeenv_init(struct fakeenv *fe, const char *spec, uint64_t pool_bytes,
			       bool threaded, char *err, size_t errlen)
{
	return fakeenv_init_ops(fe, spec, pool_bytes, threaded ? &fe_ops_threaded : &fe_ops_single,
				err, errlen);
}

static inline void fakeenv_destroy(struct fakeenv *fe)
{
	mm_destroy(fe->mm);
	free(fe->wb_done_at);
	pthread_mutex_destroy(&fe->mutex);
}

#endif
