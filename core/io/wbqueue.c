/* Writeback request building: file-contiguous runs, at most max_pages each, at most
 * nr_requests in flight (see wbqueue.h; fs/mpage.c, block/blk-merge.c, block/blk-core.c /
 * block/blk-mq-tag.c). Pure. */
#include "io/wbqueue.h"

#include <string.h>

#include "mm/mm.h"

void wbq_init(struct wbq *q, unsigned nr_requests, unsigned max_pages, uint32_t *pfn,
	      uint64_t *owner, unsigned cap)
{
	*q = (struct wbq){.nr_requests = nr_requests ? nr_requests : 1,
			  .max_pages = max_pages ? max_pages : 1,
			  .cap = cap,
			  .pfn = pfn,
			  .owner = owner};
}

bool wbq_congested(const struct wbq *q)
{
	return q->inflight >= q->nr_requests;
}

unsigned wbq_room(const struct wbq *q)
{
	return q->cap - q->n;
}

/* Move the queued pages to start at `to`. */
static void move_to(struct wbq *q, unsigned to)
{
	if (to == q->head)
		return;
	memmove(q->pfn + to, q->pfn + q->head, q->n * sizeof(*q->pfn));
	memmove(q->owner + to, q->owner + q->head, q->n * sizeof(*q->owner));
	q->head = to;
}

unsigned wbq_push(struct wbq *q, const uint32_t *pfn, const uint64_t *owner, unsigned n)
{
	if (n > wbq_room(q))
		n = wbq_room(q);
	if (q->head + q->n + n > q->cap)
		move_to(q, 0);
	memcpy(q->pfn + q->head + q->n, pfn, n * sizeof(*pfn));
	memcpy(q->owner + q->head + q->n, owner, n * sizeof(*owner));
	q->n += n;
	return n;
}

unsigned wbq_push_front(struct wbq *q, const uint32_t *pfn, const uint64_t *owner, unsigned n)
{
	if (n > wbq_room(q))
		n = wbq_room(q);
	if (q->head < n)
		move_to(q, q->cap - q->n);
	q->head -= n;
	q->n += n;
	memcpy(q->pfn + q->head, pfn, n * sizeof(*pfn));
	memcpy(q->owner + q->head, owner, n * sizeof(*owner));
	return n;
}

unsigned wbq_next(const struct wbq *q)
{
	const uint64_t *o = q->owner + q->head;
	unsigned j = 1;

	if (!q->n || wbq_congested(q))
		return 0;
	while (j < q->n && j < q->max_pages && MM_OWNER_FILE_ID(o[j]) == MM_OWNER_FILE_ID(o[0]) &&
	       MM_OWNER_FILE_INDEX(o[j]) == MM_OWNER_FILE_INDEX(o[0]) + j)
		j++;
	return j;
}

void wbq_take(struct wbq *q, unsigned n)
{
	if (n > q->n)
		n = q->n;
	q->head = n == q->n ? 0 : q->head + n;
	q->n -= n;
	q->inflight++;
}

void wbq_done(struct wbq *q, unsigned nreq)
{
	q->inflight -= nreq < q->inflight ? nreq : q->inflight;
}
