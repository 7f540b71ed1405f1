/* Writeback request building: pages under writeback waiting for a request, cut into requests
 * of file-contiguous runs, with at most nr_requests requests in flight. A pure queue (no
 * syscalls, no allocation: the caller gives the storage) shared by the live flusher
 * (core/io/writeback.c) and the simulator's (core/sim/writer.c).
 *
 * Mirrors, for the 2011 kernels (3.1-3.3) and today's:
 *   - fs/mpage.c: __mpage_writepage(): write_cache_pages() hands pages in order, a page whose
 *     block follows the previous one's joins the bio being built, any other page submits it
 *     (mpage_bio_submit) and starts a new one; the block layer's back merge
 *     (block/blk-merge.c: ll_back_merge_fn) bounds a request at queue_max_sectors
 *     (max_sectors_kb: usb-storage's 120 KiB). Here a run continues while the next page is the
 *     same file's next index, up to max_pages.
 *   - block/blk-core.c: get_request() / get_request_wait() (3.x): at most nr_requests (128,
 *     BLKDEV_MAX_RQ) requests are allocated per queue; a writer needing one more waits for a
 *     completion. Today the same bound is the tag depth of block/blk-mq-tag.c
 *     (blk_mq_get_tag; nr_requests in block/blk-sysfs.c). Here a request that would exceed it
 *     is not built: its pages stay queued (still under writeback) until a completion.
 *   - writeout() (mm/vmscan.c pageout, mm/migrate.c writeout): a page written out for reclaim
 *     or sync compaction is submitted ahead of the flusher's (wbq_push_front).
 */
#ifndef THPEMU_IO_WBQUEUE_H
#define THPEMU_IO_WBQUEUE_H

#include <stdbool.h>
#include <stdint.h>

struct wbq {
	unsigned nr_requests; /* requests in flight at most */
	unsigned max_pages;   /* pages per request at most (max_sectors) */
	unsigned inflight;    /* requests taken and not yet completed */
	unsigned cap;	      /* capacity of pfn[] and owner[] */
	unsigned head, n;     /* the queued pages are [head, head + n), oldest first */
	uint32_t *pfn;	      /* their frames */
	uint64_t *owner;      /* their page-cache owners (MM_OWNER_FILE: file id, index) */
};

/* nr_requests for a caller that allocates requests elsewhere (the simulator's 3.x block layer,
 * core/io/rqlist): no bound here */
#define WBQ_UNBOUNDED 0xffffffffu

void wbq_init(struct wbq *q, unsigned nr_requests, unsigned max_pages, uint32_t *pfn,
	      uint64_t *owner, unsigned cap);
/* nr_requests requests are in flight: no request can be built now. */
bool wbq_congested(const struct wbq *q);
/* Free room at the tail. */
unsigned wbq_room(const struct wbq *q);
/* Queue n pages at the tail (the flusher's, oldest first); returns how many fitted. */
unsigned wbq_push(struct wbq *q, const uint32_t *pfn, const uint64_t *owner, unsigned n);
/* Queue n pages at the head, in this order (writeouts: someone waits for them); returns how
 * many fitted. */
unsigned wbq_push_front(struct wbq *q, const uint32_t *pfn, const uint64_t *owner, unsigned n);
/* Pages of the next request: the file-contiguous run at the head, at most max_pages; 0 when
 * no page is queued or the queue is congested. They are q->pfn + q->head, q->owner + q->head. */
unsigned wbq_next(const struct wbq *q);
/* The head n pages are now a request: dequeue them and count it in flight. A request that
 * ends before reaching the device still completes with wbq_done(). */
void wbq_take(struct wbq *q, unsigned n);
/* nreq requests completed (more than one when the I/O scheduler merged them into one). */
void wbq_done(struct wbq *q, unsigned nreq);

#endif
