/* Hashed wait queues: the kernel's wait_on_page_writeback() over a folio wait table.
 *
 * A frame under writeback is waited on by hashing its pfn to one of WAITQ_SIZE futex words
 * (mm/filemap.c: folio_waitqueue() hashes the folio into a 256-entry table). A waiter samples the
 * word, re-checks its condition and sleeps on the word; the writeback completion path changes
 * the frame's state first, then bumps the word and wakes every sleeper on it (waiters of other
 * frames in the same bucket re-check and sleep again, as with the kernel's shared queues).
 *
 * Lock-free and allocation-free: safe from handler threads. Futexes are process-private
 * (waitq_init), or shared (waitq_init_shared) for a queue in memory several processes map (the
 * shared machine's segment): a private futex is keyed by (mm, address), so a wake from another
 * process would be lost; a shared one by the backing object and offset.
 */
#ifndef THPEMU_IO_WAITQ_H
#define THPEMU_IO_WAITQ_H

#include <stdbool.h>
#include <stdint.h>

#define WAITQ_BITS 8
#define WAITQ_SIZE (1U << WAITQ_BITS)

struct waitq {
	/* one futex word per bucket, a cache line apart so wakers do not bounce neighbours */
	struct {
		uint32_t seq;
		uint32_t waiters;
		char pad[56];
	} bucket[WAITQ_SIZE];
	uint32_t shared; /* 1: futexes without FUTEX_PRIVATE_FLAG (waitq_init_shared) */
};

/* busy(arg, key) says whether the waited-for condition still holds (e.g. the frame is still under
 * writeback); it must be lock-free. */
typedef bool (*waitq_busy_fn)(void *arg, uint64_t key);

void waitq_init(struct waitq *q);
/* For a queue in shared memory whose waiters and wakers may be in different processes. */
void waitq_init_shared(struct waitq *q);
/* Block until busy() is false (0) or timeout_ns elapsed (-ETIMEDOUT); 0 = no timeout. */
int waitq_wait(struct waitq *q, uint64_t key, waitq_busy_fn busy, void *arg, uint64_t timeout_ns);
/* Wake the waiters of key's bucket; call after making busy() false. */
void waitq_wake(struct waitq *q, uint64_t key);
/* Waiters currently sleeping in key's bucket (tests, diagnostics). */
uint32_t waitq_waiters(struct waitq *q, uint64_t key);

#endif
