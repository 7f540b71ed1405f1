/* The simulated block layer and device: an I/O scheduler, requests to the device model, their
 * completion in virtual time, and the end of writeback they bring (end_page_writeback +
 * wake_up_page).
 *
 * A new write is merged into a queued one it extends (back or front merge, up to max_sectors,
 * elv_merge); the order in which queued requests go to the device is the policy's I/O
 * scheduler, core/io/iosched (key iosched: CFQ, the 3.x default, or deadline, 6.12's
 * mq-deadline), as a pure model with the kernel's rules and sources. The device model
 * (core/io/devmodel: a service-slot queue, depth 1 for a USB stick) gets no more requests than
 * it has slots, as a driver asks the elevator for one request when it can take it. One pending
 * engine event tracks the model's earliest completion; when it fires, every request done by
 * then is popped: writeback pages end their writeback (mm_writeback_end) and actors waiting on
 * those frames are woken, read requests wake their reader. How long wait_on_page_writeback
 * takes therefore emerges from the queue and the scheduler's order.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

static void dev_kick(struct sim_world *w);
static void elv_dispatch(struct sim_world *w);

static struct sim_io *io_alloc(struct sim_world *w)
{
	struct sim_io *io = w->io_free;

	struct sim_io *all;

	if (io) {
		w->io_free = io->next_free;
		all = io->next_all;
	} else {
		io = malloc(sizeof(*io));
		if (!io)
			return NULL;
		all = w->io_all;
		w->io_all = io;
	}
	*io = (struct sim_io){0};
	io->next_all = all;
	return io;
}

void dev_io_release(struct sim_world *w, struct sim_io *io)
{
	io->next_free = w->io_free;
	w->io_free = io;
}

void dev_free_all(struct sim_world *w)
{
	while (w->io_all) {
		struct sim_io *io = w->io_all;

		w->io_all = io->next_all;
		free(io);
	}
	w->io_free = NULL;
}

/* Append pfns to io (back merge) or put them in front (front merge). */
static void io_merge(struct sim_world *w, struct sim_io *q, enum sim_io_kind kind, uint64_t off,
		     const uint32_t *pfns, unsigned n)
{
	if (off == q->req.off + q->req.len) {
		for (unsigned i = 0; i < n; i++)
			q->pfn[q->npages + i] = pfns[i];
	} else {
		for (unsigned i = q->npages; i-- > 0;)
			q->pfn[i + n] = q->pfn[i];
		for (unsigned i = 0; i < n; i++)
			q->pfn[i] = pfns[i];
		q->req.off = off;
		q->srq.pos = off;
		ios_front_merged(&w->sched, &q->srq);
	}
	q->npages += n;
	q->req.len += (uint64_t)n * MM_PAGE_SIZE;
	q->srq.len = q->req.len;
	q->nwb += kind == SIO_WRITEBACK;
	w->elv.merged++;
}

/* elv_merge: a queued write this one extends at either end, within max_sectors. */
static struct sim_io *find_merge(struct sim_world *w, uint64_t off, unsigned n)
{
	uint64_t len = (uint64_t)n * MM_PAGE_SIZE;

	for (struct sim_io *q = w->elv_head; q; q = q->q_next) {
		if (q->kind == SIO_READ || q->npages + n > w->elv_max_pages)
			continue;
		if (q->req.off + q->req.len == off || off + len == q->req.off)
			return q;
	}
	return NULL;
}

static void elv_add(struct sim_world *w, struct sim_io *io)
{
	io->srq.pos = io->req.off;
	io->srq.len = io->req.len;
	io->srq.write = io->req.write;
	io->srq.sync = io->kind == SIO_READ; /* reads are sync; writeback and writeout async */
	ios_add(&w->sched, &io->srq, sim_now(w->e));
	io->q_next = NULL;
	io->q_prev = w->elv_tail;
	if (w->elv_tail)
		w->elv_tail->q_next = io;
	else
		w->elv_head = io;
	w->elv_tail = io;
	if (++w->elv_len > w->elv.queue_max)
		w->elv.queue_max = w->elv_len;
}

static void elv_del(struct sim_world *w, struct sim_io *io)
{
	if (io->q_prev)
		io->q_prev->q_next = io->q_next;
	else
		w->elv_head = io->q_next;
	if (io->q_next)
		io->q_next->q_prev = io->q_prev;
	else
		w->elv_tail = io->q_prev;
	io->q_prev = io->q_next = NULL;
	w->elv_len--;
}

/* The flusher's get_request_wait sleep ends (an engine event at the wake-up's time). */
static void flusher_rq_event(struct sim_engine *e, void *arg)
{
	struct sim_world *w = arg;
	struct sim_flusher *fl = &w->fl;

	(void)e;
	if (!fl->rq_sleeping)
		return;
	fl->rq_sleeping = false;
	fl->rq_retry = true;
	rql_woken(&w->rl, RQL_ASYNC, &fl->rqw, &fl->ioc, sim_now(w->e));
	wait_stat_add(&fl->rq_wait, sim_now(w->e) - fl->rq_t0, w->cfg->stall_threshold_ns);
	flusher_kick(w);
}

/* freed_request: a request completed. Below the congestion-off threshold congestion_wait's
 * sleepers wake (clear_bdi_congested); below nr_requests the first get_request_wait sleeper. */
static void rq_free(struct sim_world *w, struct sim_io *io)
{
	struct rql_waiter *rw;
	bool uncongested;

	if (!io->has_rq)
		return;
	io->has_rq = false;
	rw = rql_put(&w->rl, io->dir, &uncongested);
	if (uncongested && io->dir == RQL_ASYNC)
		sim_wake_all(w->e, &w->fl.congest_wq);
	if (!rw)
		return;
	if (rw == &w->fl.rqw)
		sim_at(w->e, sim_now(w->e), flusher_rq_event, w);
	else
		sim_wake_all(w->e, rw->cookie);
}

/* get_request_wait: a request for t (an actor: it sleeps in FIFO order until one is freed, and
 * the sleep is part of its writeout hook's time, which mm reports as a wait) or for the flusher
 * (no actor: -EAGAIN, its waiter queued). */
static int rq_get(struct sim_world *w, struct sim_task *t, enum rql_dir d)
{
	struct rql_ioc *ioc = t ? &t->ioc : &w->fl.ioc;

	if (rql_get(&w->rl, d, ioc, sim_now(w->e)))
		return 0;
	if (!t) {
		w->fl.rq_sleeping = true;
		w->fl.rq_t0 = sim_now(w->e);
		rql_wait(&w->rl, d, &w->fl.rqw);
		return -EAGAIN;
	}
	if (!t->a) /* setup, no actor to put to sleep: the request is not counted */
		return 1;
	do {
		struct sim_waitq wq;
		struct rql_waiter rw = {.cookie = &wq};
		uint64_t t0 = sim_now(w->e);

		sim_waitq_init(&wq);
		rql_wait(&w->rl, d, &rw);
		sim_wait(t->a, &wq, SIM_NO_TIMEOUT);
		rql_woken(&w->rl, d, &rw, ioc, sim_now(w->e));
		wait_stat_add(&w->rq_wait, sim_now(w->e) - t0, w->cfg->stall_threshold_ns);
	} while (!rql_get(&w->rl, d, ioc, sim_now(w->e)));
	return 0;
}

int dev_submit(struct sim_world *w, struct sim_task *t, enum sim_io_kind kind, uint64_t off,
	       const uint32_t *pfns, unsigned npages, bool merge, struct sim_io **out)
{
	enum rql_dir dir = kind == SIO_READ ? RQL_SYNC : RQL_ASYNC;
	bool has_rq = false;
	struct sim_io *io;

	if (npages == 0 || npages > SIM_IO_MAX_PAGES)
		return -EINVAL;
	if (merge && kind != SIO_READ && pfns && !out) {
		io = find_merge(w, off, npages);
		if (io) {
			w->elv.requests++;
			io_merge(w, io, kind, off, pfns, npages);
			return 0;
		}
	}
	if (w->rq_model) {
		int rc = rq_get(w, t, dir);

		if (rc < 0)
			return rc;
		has_rq = rc == 0;
	}
	w->elv.requests++;
	io = io_alloc(w);
	if (!io) {
		if (has_rq) {
			struct sim_io tmp = {.has_rq = true, .dir = dir};

			rq_free(w, &tmp);
		}
		return -ENOMEM;
	}
	io->has_rq = has_rq;
	io->dir = dir;
	io->kind = kind;
	io->npages = npages;
	io->nwb = kind == SIO_WRITEBACK;
	for (unsigned i = 0; i < npages; i++)
		io->pfn[i] = pfns ? pfns[i] : MM_NO_PFN;
	io->req.off = off;
	io->req.len = (uint64_t)npages * MM_PAGE_SIZE;
	io->req.write = kind != SIO_READ;
	io->req.cookie = io;
	elv_add(w, io);
	elv_dispatch(w);
	if (out)
		*out = io;
	return 0;
}

/* Hand requests to the device while it has free slots. */
static void elv_dispatch(struct sim_world *w)
{
	unsigned slots = devm_params(w->dev)->slots;

	while (w->elv_head && w->dev_inflight < (slots ? slots : 1)) {
		struct ios_rq *rq = ios_dispatch(&w->sched, sim_now(w->e));
		struct sim_io *io;

		if (!rq) /* CFQ holds it back until a completion */
			break;
		io = (struct sim_io *)((char *)rq - offsetof(struct sim_io, srq));
		elv_del(w, io);
		w->dev_inflight++;
		w->elv.dispatched++;
		devm_submit(w->dev, sim_now(w->e), &io->req);
	}
	dev_kick(w);
}

/* Wake the actors waiting for pfn's writeback to end. */
static void wake_wb_waiters(struct sim_world *w, uint32_t pfn)
{
	struct sim_wb_waiter **pp = &w->wb_waiters;

	while (*pp) {
		struct sim_wb_waiter *ww = *pp;

		if (ww->pfn == pfn) {
			*pp = ww->next;
			ww->next = NULL;
			sim_wake_all(w->e, &ww->wq);
		} else {
			pp = &ww->next;
		}
	}
}

static void io_complete(struct sim_world *w, struct sim_io *io)
{
	w->dev_inflight--;
	ios_completed(&w->sched, &io->srq, sim_now(w->e)); /* elv_completed_request */
	rq_free(w, io); /* blk_finish_request -> __blk_put_request */
	if (io->kind == SIO_READ) {
		io->done = true;
		sim_wake_all(w->e, &io->done_wq); /* the reader releases the request */
		return;
	}
	for (unsigned i = 0; i < io->npages; i++) {
		mm_writeback_end(w->mm, io->pfn[i], io->req.err);
		wake_wb_waiters(w, io->pfn[i]);
	}
	flusher_io_done(w, io);
	dev_io_release(w, io);
}

static void dev_event(struct sim_engine *e, void *arg)
{
	struct sim_world *w = arg;
	uint64_t now = sim_now(e);
	struct devm_req *r;

	if (now == w->dev_event_at)
		w->dev_event_at = UINT64_MAX;
	while ((r = devm_pop_done(w->dev, now)))
		io_complete(w, r->cookie);
	elv_dispatch(w);
}

/* Make sure an engine event is pending for the device's earliest completion. */
static void dev_kick(struct sim_world *w)
{
	uint64_t next = devm_next_completion(w->dev);

	if (next == UINT64_MAX || next >= w->dev_event_at)
		return;
	if (next < sim_now(w->e))
		next = sim_now(w->e);
	if (sim_at(w->e, next, dev_event, w) == 0)
		w->dev_event_at = next;
}

void wait_stat_add(struct sim_wait_stat *s, uint64_t ns, uint64_t threshold_ns)
{
	s->count++;
	s->over += ns >= threshold_ns;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
}

/* Park t until pfn's writeback ends (or the timeout); the wait's time emerges from the queue. */
static int park_on_writeback(struct sim_world *w, struct sim_task *t, uint32_t pfn,
			     uint64_t timeout)
{
	struct sim_wb_waiter ww = {.pfn = pfn};
	struct sim_wb_waiter **pp;
	int rc;

	ww.next = w->wb_waiters;
	w->wb_waiters = &ww;
	rc = sim_wait(t->a, &ww.wq, timeout);
	for (pp = &w->wb_waiters; *pp; pp = &(*pp)->next) { /* still linked after a timeout */
		if (*pp == &ww) {
			*pp = ww.next;
			break;
		}
	}
	return rc;
}

/* The wait_writeback hook. Every call counts as a wait, as mm counts it, even one that finds
 * the writeback already ended once the actor's debt is settled (a wait of 0 ns). */
int dev_wait_writeback(struct sim_world *w, struct sim_task *t, uint32_t pfn, uint64_t timeout)
{
	uint64_t t0;
	int rc = 0;

	if (!t || !t->a)
		return mm_frame_under_writeback(w->mm, pfn) ? -ETIMEDOUT : 0;
	sim_settle(t->a);
	t0 = sim_now(w->e);
	if (mm_frame_under_writeback(w->mm, pfn))
		rc = park_on_writeback(w, t, pfn, timeout);
	wait_stat_add(t->in_compaction ? &w->wb_compact : &w->wb_reclaim, sim_now(w->e) - t0,
		      w->cfg->stall_threshold_ns);
	if (t->fault_t0) /* credited to the fault if it completes */
		wait_stat_add(&t->fault_wb[t->in_compaction ? 0 : 1], sim_now(w->e) - t0,
			      w->cfg->stall_threshold_ns);
	return rc;
}

/* congestion_wait(BLK_RW_ASYNC, timeout) (3.x mm/backing-dev.c): sleep on the congestion wait
 * queue until clear_bdi_congested wakes it - every writeback request freed while the queue is
 * below its congestion-off threshold (block/blk-core.c __freed_request) - or the timeout.
 * wait_iff_congested (3.1+) returns at once when no device is congested. Here "congested" is
 * the flusher's queue having nr_requests in flight (io/wbqueue.h), and flusher_io_done wakes
 * the nappers. */
int dev_throttle(struct sim_world *w, struct sim_task *t, uint64_t timeout, bool iff_congested)
{
	uint64_t t0;

	if (!t || !t->a)
		return 0;
	sim_settle(t->a);
	if (iff_congested &&
	    !(w->rq_model ? rql_congested(&w->rl, RQL_ASYNC) : wbq_congested(&w->fl.q)))
		return 0;
	t0 = sim_now(w->e);
	sim_wait(t->a, &w->fl.congest_wq, timeout ? timeout : 1);
	w->fl.throttles++;
	w->fl.throttle_ns += sim_now(w->e) - t0;
	return 0;
}

/* Device address of a page-cache page: files we created are laid out where they were
 * allocated; pages of recipe-made files get a stable address from their file id. */
uint64_t dev_offset_of(struct sim_world *w, uint64_t owner)
{
	uint64_t id = MM_OWNER_FILE_ID(owner), idx = MM_OWNER_FILE_INDEX(owner);

	if (id >= SIM_FILE_ID_BASE && id - SIM_FILE_ID_BASE < w->nfiles)
		return w->files[id - SIM_FILE_ID_BASE].dev_off + idx * MM_PAGE_SIZE;
	return ((id * 2654435761ULL) % 4096) * (64ULL << 20) + idx * MM_PAGE_SIZE;
}
