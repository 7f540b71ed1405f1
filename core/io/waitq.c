/* Hashed futex wait queues for writeback waits (see waitq.h; mirrors folio_wait_bit_common()
 * and folio_wake_bit() in mm/filemap.c, without exclusive waiters). */
#include "io/waitq.h"

#include "inprocess/guard.h"
#include "util/sys.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

static unsigned waitq_hash(uint64_t key)
{
	/* the kernel's hash_ptr: multiplicative hashing, top bits */
	return (unsigned)((key * 0x61c8864680b583ebULL) >> (64 - WAITQ_BITS));
}

void waitq_init(struct waitq *q)
{
	memset(q, 0, sizeof(*q));
}

void waitq_init_shared(struct waitq *q)
{
	memset(q, 0, sizeof(*q));
	q->shared = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void futex_sleep(const struct waitq *q, uint32_t *word, uint32_t val, uint64_t rel_ns)
{
	struct timespec ts = {(time_t)(rel_ns / 1000000000ULL), (long)(rel_ns % 1000000000ULL)};

	if (q->shared)
		sys_futex_wait_shared(word, val, rel_ns ? &ts : NULL);
	else
		sys_futex_wait(word, val, rel_ns ? &ts : NULL);
}

int waitq_wait(struct waitq *q, uint64_t key, waitq_busy_fn busy, void *arg, uint64_t timeout_ns)
{
	unsigned h = waitq_hash(key);
	uint32_t *seq = &q->bucket[h].seq;
	uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
	int saved = errno, rc = 0;

	__atomic_fetch_add(&q->bucket[h].waiters, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t s = __atomic_load_n(seq, __ATOMIC_SEQ_CST);
		uint64_t rel = 0;

		if (!busy(arg, key))
			break;
		if (deadline) {
			uint64_t t = now_ns();

			if (t >= deadline) {
				rc = -ETIMEDOUT;
				break;
			}
			rel = deadline - t;
		}
		guard_sync_self(); /* an emulator thread waiting here takes a credential change */
		futex_sleep(q, seq, s, rel);
	}
	__atomic_fetch_sub(&q->bucket[h].waiters, 1, __ATOMIC_SEQ_CST);
	errno = saved;
	return rc;
}

void waitq_wake(struct waitq *q, uint64_t key)
{
	unsigned h = waitq_hash(key);

	__atomic_fetch_add(&q->bucket[h].seq, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&q->bucket[h].waiters, __ATOMIC_SEQ_CST))
		return;
	if (q->shared)
		sys_futex_wake_shared(&q->bucket[h].seq, INT_MAX);
	else
		sys_futex_wake(&q->bucket[h].seq, INT_MAX);
}

uint32_t waitq_waiters(struct waitq *q, uint64_t key)
{
	return __atomic_load_n(&q->bucket[waitq_hash(key)].waiters, __ATOMIC_SEQ_CST);
}
