/* The writeback engine: the flusher thread, its requests, completions, timeouts and the hooks
 * core/mm calls (writeout, copy_file_page).
 *
 * Mirrors fs/fs-writeback.c (wb_writeback: background writeback while dirty pages exceed the
 * background threshold, wb_kupdate for pages dirtied longer than dirty_expire ago, sync for
 * fsync), mm/page-writeback.c's write_cache_pages -> test_set_page_writeback, the block
 * layer's merging of file-contiguous pages into one request of at most max_sectors and its
 * nr_requests bound (core/io/wbqueue, shared with the simulator; for the 3.x eras the request
 * list of core/io/rqlist through io/rqshare.h, block/blk-core.c get_request_wait),
 * end_page_writeback() (clear PG_writeback, wake_up_page on the hashed wait queue) and mm/vmscan.c
 * / mm/migrate.c's writeout(), which starts writeback of one page.
 *
 * Only the flusher talks to the backend. Other threads (the dirtier, fault handlers in
 * writeout()) hand it work through short critical sections on q_lock and a kick; no thread but
 * the flusher ever waits for the device.
 */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <stdint.h>
#include <time.h>

#include "util/clock.h"
#include "util/sys.h"
#include "util/units.h"

/* ---- small helpers --------------------------------------------------------------------------- */

void io_note(struct io *io, const char *fmt, ...)
{
	char buf[sizeof(io->st->note)];
	va_list ap;

	if (__atomic_load_n(&io->st->note[0], __ATOMIC_ACQUIRE))
		return; /* the first problem is the one worth reading */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&io->q_lock);
	if (!io->st->note[0]) {
		memcpy(io->st->note + 1, buf + 1, sizeof(buf) - 1);
		__atomic_store_n(&io->st->note[0], buf[0], __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&io->q_lock);
}

void io_block_signals_and_init(struct io *io)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (io->env.thread_init)
		io->env.thread_init(io->env.arg);
}

/* An io thread is gone: joined, so its C library teardown after its start routine returned
 * (glibc's nptl/pthread_create.c: start_thread runs the TLS destructors, the thread-specific
 * data's and __libc_thread_freeres, which calls free, the program's allocator if it has its own)
 * is over. The join returns once the kernel cleared the thread's id word (kernel/fork.c:
 * mm_release, from do_exit's exit_mm, every era), after its last user-mode instruction and
 * before its id is freed (kernel/exit.c: release_task, later in do_exit): the id is not anyone
 * else's yet. */
static void thread_gone(struct io *io, struct guard_thread *gt)
{
	if (io->env.thread_gone)
		io->env.thread_gone(io->env.arg, __atomic_load_n(&gt->tid, __ATOMIC_ACQUIRE));
}

void io_dirtier_returns(struct io *io)
{
	atomic_store_explicit(&io->dirtier_returned, true, memory_order_release);
}

/* Join the dirtier if it is gone within ns (0: now; the flusher, which never waits for it: if
 * io_stop holds the lock, it joins it); true if it is gone (or was never made). */
static bool join_dirtier(struct io *io, uint64_t ns)
{
	bool gone = true;

	if (ns)
		pthread_mutex_lock(&io->join_lock);
	else if (pthread_mutex_trylock(&io->join_lock) != 0)
		return false;
	if (io->dirtier_started) {
		gone = guard_thread_timedjoin(io->dirtier, &io->dirtier_gt, ns) == 0;
		if (gone) {
			io->dirtier_started = false;
			thread_gone(io, &io->dirtier_gt);
		}
	}
	pthread_mutex_unlock(&io->join_lock);
	return gone;
}

void *io_page(struct io *io, uint32_t pfn)
{
	return io->arena + (size_t)pfn * IO_PAGE_SIZE;
}

const char *io_dir(const struct io *io)
{
	return io->dir;
}

/* ---- requests -------------------------------------------------------------------------------- */

struct io_req *io_req_get(struct io *io)
{
	struct io_req *r;

	pthread_mutex_lock(&io->q_lock);
	r = io->free_list;
	if (r) {
		io->free_list = r->next;
		__atomic_fetch_sub(&io->nfree, 1, __ATOMIC_RELAXED);
		r->next = NULL;
		req_set_state(r, IORS_QUEUED);
		r->done = 0;
		r->res = 0;
		r->file = NULL;
		r->npages = 0;
	}
	pthread_mutex_unlock(&io->q_lock);
	return r;
}

void io_req_put(struct io *io, struct io_req *r)
{
	pthread_mutex_lock(&io->q_lock);
	req_set_state(r, IORS_FREE);
	r->next = io->free_list;
	io->free_list = r;
	__atomic_fetch_add(&io->nfree, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&io->q_lock);
}

void io_req_queue(struct io *io, struct io_req *r)
{
	pthread_mutex_lock(&io->q_lock);
	r->next = NULL;
	if (io->subq_tail)
		io->subq_tail->next = r;
	else
		io->subq_head = r;
	io->subq_tail = r;
	pthread_mutex_unlock(&io->q_lock);
	io->be->kick(io);
}

int io_req_run(struct io *io, struct io_req *r)
{
	int res;

	if (atomic_load_explicit(&io->flusher_stop, memory_order_acquire)) {
		if (r->file)
			io_file_put(io, r->file);
		io_req_put(io, r);
		return -ESHUTDOWN;
	}
	io_req_queue(io, r);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
		io_futex_wait(&r->done, 0, 0);
	res = r->res;
	/* an abandoned request still belongs to the backend: the flusher frees it later */
	if (req_state(r) != IORS_ABANDONED) {
		if (r->file)
			io_file_put(io, r->file);
		io_req_put(io, r);
	}
	return res;
}

/* A synchronous request is over: hand the result to its waiter. */
static void finish_sync(struct io_req *r, int res)
{
	r->res = res;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	io_futex_wake_all(&r->done);
}

/* ---- completion ------------------------------------------------------------------------------ */

enum io_err_class io_err_class(int err)
{
	switch (-err) {
	case EIO:
		return IO_ERR_EIO;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return IO_ERR_ENOSPC;
	case ENOTCONN:
	case ECONNABORTED:
	case ENODEV:
		return IO_ERR_DISCONNECTED;
	case ETIMEDOUT:
	case ECANCELED:
		return IO_ERR_TIMEOUT;
	default:
		return IO_ERR_OTHER;
	}
}

void io_count_error(struct io *io, int err, unsigned npages)
{
	struct io_stats *st = io->st;

	switch (io_err_class(err)) {
	case IO_ERR_EIO:
		io_stat_add(&st->err_eio, 1);
		break;
	case IO_ERR_ENOSPC:
		io_stat_add(&st->err_enospc, 1);
		break;
	case IO_ERR_DISCONNECTED:
		if (!__atomic_fetch_add(&st->err_disconnected, 1, __ATOMIC_RELAXED))
			io_note(io, "the device is gone (%s): writeback fails from now on",
				strerrordesc_np(-err));
		break;
	case IO_ERR_TIMEOUT:
		io_stat_add(&st->err_timeout, 1);
		break;
	case IO_ERR_OTHER:
		if (!__atomic_fetch_add(&st->err_other, 1, __ATOMIC_RELAXED))
			io_note(io, "writeback failed: %s", strerrordesc_np(-err));
		break;
	}
	io_stat_add(&st->pages_failed, npages);
}

/* end_page_writeback for each page of a write, with err for pages from index `ok` on. */
static void end_pages(struct io *io, struct io_req *r, unsigned ok, int err)
{
	for (unsigned i = 0; i < r->npages; i++) {
		mm_writeback_end(io->mm, r->pfns[i], i < ok ? 0 : err);
		waitq_wake(io->env.wq, r->pfns[i]);
	}
}

static void complete_write(struct io *io, struct io_req *r, int res)
{
	uint64_t now = clock_now_ns(), len = (uint64_t)r->npages * IO_PAGE_SIZE;
	unsigned ok = res < 0 ? 0 : (unsigned)((uint64_t)res / IO_PAGE_SIZE);
	int err = res < 0 ? res : -EIO; /* a short write fails the rest */

	if (ok > r->npages)
		ok = r->npages;
	if (ok < r->npages) /* counted before the waiters wake, so they see it */
		io_count_error(io, err, r->npages - ok);
	io_stat_add(&io->st->writeback_ops, 1);
	io_stat_add(&io->st->bytes_written, (uint64_t)ok * IO_PAGE_SIZE);
	obs_hist_record(&io->st->wb_lat, now - r->t_submit);
	end_pages(io, r, ok, err);
	io->completed_bytes += res > 0 && (uint64_t)res <= len ? (uint64_t)res : 0;
	wbm_bw_update(&io->bw, now, io->completed_bytes);
	__atomic_store_n(&io->bw_bps, io->bw.bw, __ATOMIC_RELAXED);
	if (r->file) {
		io_file_pages_done(io, r->file, r->npages, r->npages - ok, err);
		io_file_put(io, r->file);
	}
	io_req_put(io, r);
}

/* Publish carry's congestion (flusher only); after a completion that leaves it uncongested,
 * wake the throttled (clear_bdi_congested: every request freed below the off threshold). */
static void publish_congestion(struct io *io, bool completed)
{
	bool c = io->rqs ? rqs_congested(io->rqs, RQL_ASYNC) : wbq_congested(&io->carry);

	__atomic_store_n(&io->congested, c, __ATOMIC_RELEASE);
	if (!completed || c)
		return;
	__atomic_fetch_add(&io->uncongest_seq, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&io->uncongest_waiters, __ATOMIC_SEQ_CST))
		sys_futex_wake(&io->uncongest_seq, INT32_MAX);
}

bool io_congested(struct io *io)
{
	return __atomic_load_n(&io->congested, __ATOMIC_ACQUIRE);
}

int io_wait_uncongested(struct io *io, uint64_t timeout_ns, bool iff_congested)
{
	uint64_t deadline = clock_now_ns() + timeout_ns;
	uint32_t seq = __atomic_load_n(&io->uncongest_seq, __ATOMIC_ACQUIRE);

	if (iff_congested && !io_congested(io))
		return 0;
	for (;;) {
		uint64_t now = clock_now_ns(), left;
		struct timespec ts;

		if (now >= deadline)
			return -ETIMEDOUT;
		left = deadline - now;
		ts.tv_sec = (time_t)(left / 1000000000ULL);
		ts.tv_nsec = (long)(left % 1000000000ULL);
		__atomic_fetch_add(&io->uncongest_waiters, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&io->uncongest_seq, __ATOMIC_SEQ_CST) == seq)
			sys_futex_wait(&io->uncongest_seq, seq, &ts);
		__atomic_fetch_sub(&io->uncongest_waiters, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&io->uncongest_seq, __ATOMIC_ACQUIRE) != seq)
			return 0;
	}
}

void io_complete(struct io *io, struct io_req *r, int res)
{
	bool abandoned = req_state(r) == IORS_ABANDONED;

	/* cancelled because it took too long: the daemon answered the interrupt (EINTR), or the
	 * ring took it back before it started (ECANCELED). Either way, the device timed out. */
	if (req_state(r) == IORS_CANCELLING && (res == -EINTR || res == -ECANCELED))
		res = -ETIMEDOUT;

	if (r->kind == IOR_WRITE) {
		wbq_done(&io->carry, 1);
		if (r->has_rq) /* freed_request(): the first sleeper's turn */
			rqs_put(io->rqs, RQL_ASYNC, -1, NULL);
		r->has_rq = false;
		publish_congestion(io, true);
	}
	if (abandoned) { /* its pages (or waiter) were dealt with when we gave up on it */
		if (r->file)
			io_file_put(io, r->file);
		io_req_put(io, r);
		return;
	}
	if (r->kind == IOR_WRITE) {
		complete_write(io, r, res);
		return;
	}
	if (r->kind == IOR_META) { /* nobody waits for it */
		if (res != r->meta_len)
			io_note(io, "a manifest line could not be written: %s",
				strerrordesc_np(res < 0 ? -res : EIO));
		__atomic_fetch_sub(&io->meta_pending, 1, __ATOMIC_RELAXED);
		io_req_put(io, r);
		return;
	}
	req_set_state(r, IORS_FREE); /* the waiter puts it back on the free list */
	finish_sync(r, res);
}

/* ---- submission ------------------------------------------------------------------------------ */

static void submit(struct io *io, struct io_req *r)
{
	int rc;

	r->t_submit = clock_now_ns();
	req_set_state(r, IORS_INFLIGHT);
	if (r->kind == IOR_WRITE) /* taken from the carry in write_run */
		io_stat_max(&io->st->inflight_max, io->carry.inflight);
	rc = io->be->submit(io, r);
	if (rc < 0)
		io_complete(io, r, rc);
}

/* A request of the 3.x list for the flusher's next write of n pages: the writeout callers took
 * one for each page they queued (they are at the carry's head): the write uses one, and the
 * others are freed as merged into it (a bio merged into a request allocates none; two
 * requests merged free one: block/blk-core.c attempt_merge -> __blk_put_request ->
 * freed_request, 3.2), which wakes their sleepers. Else get_request() in the flusher's own
 * name: refused, the flusher is queued among the sleepers (FIFO with the writeout callers)
 * and tries again once a freed request woke it (rqs_try), meanwhile completing requests as
 * the device lets it. */
static bool rq_take(struct io *io, unsigned n)
{
	uint32_t c = __atomic_load_n(&io->rq_credits, __ATOMIC_RELAXED), k;
	int slot;
	bool got;

	do {
		k = c < n ? c : n;
	} while (k && !__atomic_compare_exchange_n(&io->rq_credits, &c, c - k, true,
						   __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (k) {
		while (--k)
			rqs_put(io->rqs, RQL_ASYNC, -1, NULL);
		return true;
	}
	slot = __atomic_load_n(&io->fl_slot, __ATOMIC_RELAXED);
	got = rqs_try(io->rqs, RQL_ASYNC, &io->fl_ioc, &slot);
	__atomic_store_n(&io->fl_slot, slot, __ATOMIC_RELAXED);
	return got;
}

/* Make a write request of the carry's next n pages (a run, all under writeback). Returns false
 * when no request slot is free (the pages stay in the carry). */
static bool write_run(struct io *io, unsigned n)
{
	const uint32_t *pfns = io->carry.pfn + io->carry.head;
	const uint64_t *owners = io->carry.owner + io->carry.head;
	uint64_t fid = MM_OWNER_FILE_ID(owners[0]);
	struct io_file *f;
	struct io_req *r;
	int rc;

	if (__atomic_load_n(&io->nfree, __ATOMIC_RELAXED) <= IO_EXTRA_REQS / 2)
		return false;
	if (io->rqs && !rq_take(io, n))
		return false; /* the flusher sleeps in get_request_wait (its pages stay queued) */
	r = io_req_get(io);
	if (!r) {
		if (io->rqs) /* the request stays allocated for the next run */
			__atomic_fetch_add(&io->rq_credits, 1, __ATOMIC_RELAXED);
		return false;
	}
	r->has_rq = io->rqs != NULL;
	r->kind = IOR_WRITE;
	r->npages = (uint16_t)n;
	r->off = MM_OWNER_FILE_INDEX(owners[0]) * IO_PAGE_SIZE;
	for (unsigned i = 0; i < n; i++) {
		r->pfns[i] = pfns[i];
		r->iov[i].iov_base = io_page(io, pfns[i]);
		r->iov[i].iov_len = IO_PAGE_SIZE;
	}
	wbq_take(&io->carry, n); /* in flight from here: io_complete() ends it */
	publish_congestion(io, false);
	f = io_file_get(io, fid, true);
	r->file = f;
	io_stat_add(&io->st->pages_submitted, n);
	rc = !f			    ? -ENFILE
	     : io->dir[0] && f->err ? f->err
				    : io_file_cover(io, f, r->off / IO_PAGE_SIZE + n);
	if (rc < 0) { /* no file to write to: fail the pages */
		r->t_submit = clock_now_ns();
		req_set_state(r, IORS_INFLIGHT);
		io_complete(io, r, rc);
		return true;
	}
	submit(io, r);
	return true;
}

/* Submit the carry (pages under writeback waiting for a request) in order, as far as
 * nr_requests and request slots allow. */
static void submit_carry(struct io *io)
{
	unsigned n;

	while ((n = wbq_next(&io->carry)) && write_run(io, n))
		;
}

/* Pages from writeout() go first: a sync compaction is waiting for them. */
static void take_writeouts(struct io *io)
{
	uint32_t pfn[IO_WRITEOUT_MAX];
	uint64_t owner[IO_WRITEOUT_MAX];
	unsigned n, room;

	pthread_mutex_lock(&io->q_lock);
	room = wbq_room(&io->carry);
	n = io->nwriteout < room ? io->nwriteout : room;
	memcpy(pfn, io->writeout_pfn, n * sizeof(*pfn));
	memcpy(owner, io->writeout_owner, n * sizeof(*owner));
	memmove(io->writeout_pfn, io->writeout_pfn + n, (io->nwriteout - n) * sizeof(*pfn));
	memmove(io->writeout_owner, io->writeout_owner + n, (io->nwriteout - n) * sizeof(*owner));
	io->nwriteout -= n;
	pthread_mutex_unlock(&io->q_lock);
	wbq_push_front(&io->carry, pfn, owner, n);
}

/* Reads and fsyncs queued by other threads. */
static void take_queued(struct io *io)
{
	struct io_req *r;

	pthread_mutex_lock(&io->q_lock);
	r = io->subq_head;
	io->subq_head = io->subq_tail = NULL;
	pthread_mutex_unlock(&io->q_lock);
	while (r) {
		struct io_req *next = r->next;

		if (r->file && io->dir[0] && r->file->err) {
			req_set_state(r, IORS_INFLIGHT);
			io_complete(io, r, r->file->err);
		} else {
			submit(io, r);
		}
		r = next;
	}
}

/* How many dirty pages the flusher wants written now: background writeback above the
 * background threshold, kupdate's expired pages, everything for sync waiters. */
static uint64_t writeback_want(struct io *io, uint64_t now)
{
	uint64_t want, expired = 0,
		       fresh = __atomic_exchange_n(&io->dirtied_new, 0, __ATOMIC_RELAXED);
	struct mm_counts c;
	struct wbm_thresh th;

	wbm_age_dirtied(&io->age, now, fresh);
	mm_get_counts(io->mm, &c);
	if (!c.file_dirty)
		return 0;
	wbm_thresholds(&io->wbp, (uint64_t)c.free + c.file, &th);
	if (now >= io->next_kupdate) { /* the kupdate pass, every dirty_writeback_interval */
		expired = wbm_age_expired(&io->age, now, c.file_dirty, io->wbp.expire_ns);
		io->next_kupdate = now + io->wbp.interval_ns;
	}
	want = wbm_flush_want(&th, c.file_dirty, expired);
	if (__atomic_load_n(&io->sync_all, __ATOMIC_ACQUIRE))
		want = c.file_dirty;
	return want;
}

static void writeback_pass(struct io *io, uint64_t now)
{
	uint64_t want = writeback_want(io, now), owner[IO_CARRY_MAX];
	uint32_t pfn[IO_CARRY_MAX];

	submit_carry(io);
	/* with the 3.x list, pages left in the carry mean the flusher sleeps for a request: it
	 * takes no more (the real one sleeps with one bio built) */
	while (want && !wbq_congested(&io->carry) && wbq_room(&io->carry) >= io->max_pages &&
	       !(io->rqs && io->carry.n)) {
		unsigned max = want < io->max_pages ? (unsigned)want : io->max_pages;
		unsigned n = mm_writeback_begin(io->mm, max, pfn, owner);

		if (!n)
			break;
		wbq_push(&io->carry, pfn, owner, n);
		want -= n < want ? n : want;
		submit_carry(io);
	}
}

/* ---- timeouts -------------------------------------------------------------------------------- */

/* Give up on r: its pages stop being under writeback (with -ETIMEDOUT) and wake their waiters;
 * a synchronous waiter gets -ETIMEDOUT. The slot stays taken until the late completion. */
static void abandon(struct io *io, struct io_req *r, int err)
{
	bool at_exit = err == -ESHUTDOWN; /* not the device's fault: the program is ending */

	io_stat_add(at_exit ? &io->st->unfinished_at_exit : &io->st->abandoned, 1);
	if (r->kind == IOR_META) {
		__atomic_fetch_sub(&io->meta_pending, 1, __ATOMIC_RELAXED);
		req_set_state(r, IORS_ABANDONED);
		return;
	}
	if (r->kind == IOR_WRITE) {
		if (!at_exit)
			io_count_error(io, err, r->npages);
		end_pages(io, r, 0, err);
		if (r->file)
			io_file_pages_done(io, r->file, r->npages, r->npages, err);
		req_set_state(r, IORS_ABANDONED);
		return;
	}
	req_set_state(r, IORS_ABANDONED);
	finish_sync(r, err);
}

static void check_timeouts(struct io *io)
{
	uint64_t tmo = io->cfg.dev.timeout_ns, now = clock_now_ns(); /* after this pass's submits */

	for (unsigned i = 0; i < io->nreqs; i++) {
		struct io_req *r = &io->reqs[i];
		uint8_t state = req_state(r);

		if (state == IORS_INFLIGHT && now >= r->t_submit + tmo) {
			req_set_state(r, IORS_CANCELLING);
			r->t_cancel = now;
			io_stat_add(&io->st->cancels, 1);
			io_note(io, "a request to the device took longer than %llu ms: cancelled",
				(unsigned long long)(tmo / 1000000));
			io->be->cancel(io, r);
		} else if (state == IORS_CANCELLING && now >= r->t_cancel + IO_CANCEL_GRACE_NS) {
			abandon(io, r, -ETIMEDOUT);
		}
	}
}

/* ---- the flusher thread ---------------------------------------------------------------------- */

static unsigned at_backend(struct io *io)
{
	unsigned n = 0;

	for (unsigned i = 0; i < io->nreqs; i++)
		n += req_state(&io->reqs[i]) == IORS_ABANDONED;
	return n;
}

/* The flusher thread's exit waits until the device has answered every request still at it (the
 * ring's workers finish what they run), 10 s and more for a slow stick. Ask it to give them
 * back instead, for a bounded time. A cancel interrupts what a worker waits on now; a write the
 * kernel splits into several device requests goes on with the next one, so ask again until
 * nothing is left. */
static void flusher_release(struct io *io)
{
	uint64_t now = clock_now_ns(), deadline = now + IO_RELEASE_NS, moved = now, asked = 0;
	unsigned left = at_backend(io);

	if (!io->be->cancel_all)
		return;
	while (left && now < deadline && now - moved < IO_RELEASE_STILL_NS) {
		unsigned before = left;

		if (now - asked >= IO_RELEASE_TICK_NS) {
			io->be->cancel_all(io);
			asked = now;
		}
		io->be->wait(io, IO_RELEASE_TICK_NS);
		left = at_backend(io);
		now = clock_now_ns();
		if (left < before)
			moved = now;
	}
}

/* On the way out: nothing may stay under writeback or waiting, whatever the device does. */
/* The 3.x list's counts into the report's statistics (every process's sleeps are in it). */
static void rq_stats_publish(struct io *io)
{
	struct rqs_wait_stat ws[RQS_WHO_NR];
	struct rql_stats st;
	struct io_stats *o = io->st;

	if (!io->rqs)
		return;
	rqs_stats(io->rqs, &st, ws);
	__atomic_store_n(&o->rq_active, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&o->rq_allocated, st.allocated[RQL_ASYNC], __ATOMIC_RELAXED);
	__atomic_store_n(&o->rq_refused, st.refused[RQL_ASYNC], __ATOMIC_RELAXED);
	__atomic_store_n(&o->rq_beyond, st.batched[RQL_ASYNC], __ATOMIC_RELAXED);
	__atomic_store_n(&o->rq_allocated_max, st.count_max[RQL_ASYNC], __ATOMIC_RELAXED);
	__atomic_store_n(&o->rq_congested_on, st.congested_on[RQL_ASYNC], __ATOMIC_RELAXED);
	for (int i = 0; i < RQS_WHO_NR; i++) {
		__atomic_store_n(&o->rq_waits[i], ws[i].count, __ATOMIC_RELAXED);
		__atomic_store_n(&o->rq_wait_ns[i], ws[i].total_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&o->rq_wait_max_ns[i], ws[i].max_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&o->rq_waits_1s[i], ws[i].over_1s, __ATOMIC_RELAXED);
	}
}

static void flusher_shutdown(struct io *io)
{
	struct mm_counts c;
	int slot = __atomic_load_n(&io->fl_slot, __ATOMIC_RELAXED);

	if (io->rqs) { /* the flusher leaves the sleepers' queue */
		rqs_cancel(io->rqs, RQL_ASYNC, &slot);
		__atomic_store_n(&io->fl_slot, -1, __ATOMIC_RELAXED);
		rq_stats_publish(io);
	}

	take_writeouts(io);
	for (unsigned i = io->carry.head; i < io->carry.head + io->carry.n; i++) {
		mm_writeback_end(io->mm, io->carry.pfn[i], -ESHUTDOWN);
		waitq_wake(io->env.wq, io->carry.pfn[i]);
	}
	io->carry.n = 0;
	for (unsigned i = 0; i < io->nreqs; i++) {
		struct io_req *r = &io->reqs[i];
		uint8_t state = req_state(r);

		if (state == IORS_INFLIGHT || state == IORS_CANCELLING)
			abandon(io, r, -ESHUTDOWN);
		else if (state == IORS_QUEUED && (r->kind == IOR_READ || r->kind == IOR_FSYNC))
			finish_sync(r, -ESHUTDOWN);
	}
	mm_get_counts(io->mm, &c);
	__atomic_store_n(&io->st->dropped_dirty, c.file_dirty, __ATOMIC_RELAXED);
	flusher_release(io);
}

static bool flusher_done(struct io *io, uint64_t now)
{
	if (!atomic_load_explicit(&io->flusher_stop, memory_order_acquire))
		return false;
	if (now >= io->drain_deadline)
		return true;
	return io->carry.inflight == 0 && !__atomic_load_n(&io->meta_pending, __ATOMIC_RELAXED);
}

static void *flusher_main(void *arg)
{
	struct io *io = arg;

	io_block_signals_and_init(io);
	guard_thread_started(&io->flusher_gt);
	for (;;) {
		uint64_t now = clock_now_ns();

		guard_thread_sync(&io->flusher_gt);
		if (flusher_done(io, now))
			break;
		take_queued(io);
		take_writeouts(io);
		if (!atomic_load_explicit(&io->flusher_stop, memory_order_acquire))
			writeback_pass(io, now);
		check_timeouts(io);
		rq_stats_publish(io);
		/* a dirtier whose total is done: its id leaves with it (a tick after it ends) */
		if (atomic_load_explicit(&io->dirtier_returned, memory_order_acquire))
			join_dirtier(io, 0);
		io->be->wait(io, IO_TICK_NS);
	}
	flusher_shutdown(io);
	guard_thread_leave(&io->flusher_gt);
	return NULL;
}

void io_kick(struct io *io)
{
	io->be->kick(io);
}

/* ---- mm hooks -------------------------------------------------------------------------------- */

struct rqs *io_rqs(struct io *io)
{
	return io ? io->rqs : NULL;
}

int io_writeout_held(struct io *io, uint64_t owner, uint32_t pfn)
{
	int rc;

	if (!io->rqs)
		return io_writeout(io, owner, pfn);
	/* the request joins the carry with the page (the flusher's next write uses one) before
	 * the page is queued, so the flusher never builds it without one */
	__atomic_fetch_add(&io->rq_credits, 1, __ATOMIC_RELAXED);
	rc = io_writeout(io, owner, pfn);
	if (rc < 0) { /* not written out: freed_request() at once, unless already used */
		uint32_t c = __atomic_load_n(&io->rq_credits, __ATOMIC_RELAXED);

		while (c && !__atomic_compare_exchange_n(&io->rq_credits, &c, c - 1, true,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		if (c && rqs_put(io->rqs, RQL_ASYNC,
				 __atomic_load_n(&io->fl_slot, __ATOMIC_RELAXED), NULL))
			io->be->kick(io);
	}
	return rc;
}

static bool rq_gone(void *arg)
{
	return io_stopping(arg);
}

int io_writeout_wait(struct io *io, uint64_t owner, uint32_t pfn, int who, uint64_t *waited_ns)
{
	static __thread struct rql_ioc ioc; /* the task's io_context: its batch */

	if (waited_ns)
		*waited_ns = 0;
	if (!io->rqs)
		return io_writeout(io, owner, pfn);
	if (rqs_get(io->rqs, RQL_ASYNC, &ioc, (enum rqs_who)who, IO_TICK_NS, rq_gone, io,
		    waited_ns) < 0)
		return -EBUSY; /* the engine is stopping: nobody writes it */
	return io_writeout_held(io, owner, pfn);
}

int io_writeout(struct io *io, uint64_t owner, uint32_t pfn)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&io->q_lock);
	if (!io_stopping(io) && io->nwriteout < IO_WRITEOUT_MAX) {
		rc = mm_writeback_begin_one(io->mm, pfn);
		if (rc == 0) {
			io->writeout_pfn[io->nwriteout] = pfn;
			io->writeout_owner[io->nwriteout] = owner;
			io->nwriteout++;
		}
	}
	pthread_mutex_unlock(&io->q_lock);
	if (rc == 0) {
		io_stat_add(&io->st->writeout_pages, 1);
		io->be->kick(io);
	}
	return rc;
}

static bool frame_under_writeback(void *mm, uint64_t pfn)
{
	return mm_frame_under_writeback(mm, (uint32_t)pfn);
}

int io_wait_writeback(struct waitq *q, struct mm *mm, uint32_t pfn, uint64_t timeout_ns)
{
	return waitq_wait(q, pfn, frame_under_writeback, mm, timeout_ns);
}

int io_copy_file_page(struct io *io, uint64_t owner, uint32_t from, uint32_t to)
{
	if (from >= io->nr_frames || to >= io->nr_frames)
		return -EINVAL;
	memcpy(io_page(io, to), io_page(io, from), IO_PAGE_SIZE);
	io_stat_add(&io->st->copies, 1);
	return 0;
}

/* ---- sync ------------------------------------------------------------------------------------ */

int io_sync_all(struct io *io, uint64_t timeout_ns)
{
	uint64_t deadline = clock_now_ns() + timeout_ns;
	int rc = 0;

	__atomic_fetch_add(&io->sync_all, 1, __ATOMIC_ACQ_REL);
	io->be->kick(io);
	for (;;) {
		uint32_t v = __atomic_load_n(&io->progress, __ATOMIC_ACQUIRE);
		uint64_t now = clock_now_ns();
		struct mm_counts c;

		mm_get_counts(io->mm, &c);
		if (!c.file_dirty && !c.file_writeback)
			break;
		if (now >= deadline || io_stopping(io)) {
			rc = -ETIMEDOUT;
			break;
		}
		io_futex_wait(&io->progress, v,
			      deadline - now < IO_TICK_NS ? deadline - now : IO_TICK_NS);
	}
	__atomic_fetch_sub(&io->sync_all, 1, __ATOMIC_ACQ_REL);
	return rc;
}

static uint64_t file_pending(struct io *io, struct io_file *f)
{
	uint64_t p;

	pthread_mutex_lock(&io->files_lock);
	p = f->pending;
	pthread_mutex_unlock(&io->files_lock);
	return p;
}

static int file_fsync(struct io *io, struct io_file *f)
{
	struct io_req *r = io_req_get(io);

	if (!r)
		return -EAGAIN;
	r->kind = IOR_FSYNC;
	pthread_mutex_lock(&io->files_lock);
	f->refs++;
	pthread_mutex_unlock(&io->files_lock);
	r->file = f;
	return io_req_run(io, r);
}

int io_file_sync(struct io *io, uint64_t file_id)
{
	struct io_file *f = io_file_get(io, file_id, false);
	int err;

	if (!f)
		return 0; /* finished and gone: nothing left to write */
	pthread_mutex_lock(&io->files_lock);
	f->sync_waiters++;
	pthread_mutex_unlock(&io->files_lock);
	__atomic_fetch_add(&io->sync_all, 1, __ATOMIC_ACQ_REL);
	io->be->kick(io);
	while (file_pending(io, f) && !io_stopping(io)) {
		uint32_t v = __atomic_load_n(&io->progress, __ATOMIC_ACQUIRE);

		if (file_pending(io, f))
			io_futex_wait(&io->progress, v, IO_TICK_NS);
	}
	__atomic_fetch_sub(&io->sync_all, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&io->files_lock);
	err = f->first_err;
	pthread_mutex_unlock(&io->files_lock);
	if (!io_stopping(io)) {
		int rc = file_fsync(io, f);

		err = err ? err : rc;
	}
	io_stat_add(&io->st->fsyncs, 1);
	if (err)
		io_stat_add(&io->st->fsync_errors, 1);
	pthread_mutex_lock(&io->files_lock);
	f->sync_waiters--;
	pthread_mutex_unlock(&io->files_lock);
	io_file_put(io, f);
	return err;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

void *io_map(size_t len)
{
	long p = guard_vm_map(len, 0, MAP_NORESERVE, 0);

	return sys_is_err(p) ? NULL : (void *)p;
}

/* The page-cache arena: a fork child has none of it (its own process runs no writeback). */
static void *io_map_dontfork(size_t len)
{
	long p = guard_vm_map(len, 0, MAP_NORESERVE, GUARD_VM_DONTFORK);

	return sys_is_err(p) ? NULL : (void *)p;
}

void io_unmap(void *p, size_t len)
{
	if (p)
		guard_vm_unmap(p, len);
}

static int reqs_init(struct io *io)
{
	unsigned mp = io->max_pages;
	uint8_t *mem;

	/* the 3.x list gives a batcher up to 3/2 nr_requests (block/blk-core.c get_request) */
	io->nreqs =
	    (io->rqs ? io->cfg.dev.nr_requests * 3 / 2 : io->cfg.dev.nr_requests) + IO_EXTRA_REQS;
	io->reqs = io_map(io->nreqs * sizeof(*io->reqs));
	io->req_mem_len = (size_t)io->nreqs * mp * (sizeof(uint32_t) + sizeof(struct iovec));
	io->req_mem = io_map(io->req_mem_len);
	if (!io->reqs || !io->req_mem)
		return -ENOMEM;
	mem = io->req_mem;
	for (unsigned i = 0; i < io->nreqs; i++) {
		struct io_req *r = &io->reqs[i];

		r->iov = (struct iovec *)(void *)(mem + (size_t)i * mp * sizeof(struct iovec));
		r->pfns = (uint32_t *)(void *)(mem + (size_t)io->nreqs * mp * sizeof(struct iovec) +
					       (size_t)i * mp * sizeof(uint32_t));
		r->next = io->free_list;
		io->free_list = r;
	}
	io->nfree = io->nreqs;
	return 0;
}

/* Can files of this directory be opened with O_DIRECT? (A FUSE mount answers EINVAL when its
 * daemon does not allow direct I/O; then writes go through the host page cache.) */
static bool odirect_works(struct io *io)
{
	char path[IO_PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/.odirect", io->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd >= 0)
		sys_close(fd);
	unlink(path);
	return fd >= 0 || errno != EINVAL;
}

/* This process's directory on the device and its manifest (made by path: the backend opens it
 * into a slot of its own). */
static int dir_init(struct io *io, char *err, size_t errlen)
{
	char path[IO_PATH_MAX];

	snprintf(io->dir, sizeof(io->dir), "%s/thpemu-io.%d", io->cfg.dir, (int)getpid());
	if (mkdir(io->dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", io->dir, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/%s", io->dir, IO_MANIFEST_NAME);
	if (mknodat(AT_FDCWD, path, S_IFREG | 0644, 0) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -errno;
	}
	io->odirect = odirect_works(io);
	if (!io->odirect)
		io_note(io, "O_DIRECT refused by %s: writing through the host page cache", io->dir);
	return 0;
}

static void stats_init(struct io *io)
{
	struct io_stats *st = io->st;

	st->active = 1;
	st->in_process = io->dir[0] ? 0 : 1;
	st->odirect = io->odirect;
	obs_hist_init(&st->wb_lat);
	snprintf(st->device, sizeof(st->device), "%.127s", io->dir[0] ? io->cfg.dir : "model");
	snprintf(st->model, sizeof(st->model), "%.63s", io->cfg.dev.model.name);
}

static void policy_init(struct io *io)
{
	uint64_t now = clock_now_ns(), bw = io->cfg.dev.model.write_bw;

	wbm_params_default(&io->wbp);
	if (io->cfg.dirty) {
		io->wbp.dirty_ratio = io->cfg.dspec.dirty_ratio;
		io->wbp.background_ratio = io->cfg.dspec.background_ratio;
	}
	wbm_age_init(&io->age, NSEC_PER_SEC);
	wbm_age_dirtied(&io->age, now, 0);
	wbm_bw_init(&io->bw, now, bw ? bw : 100ULL << 20);
	io->bw_bps = io->bw.bw;
	io->next_kupdate = now + io->wbp.interval_ns;
	io->t0 = now;
}

/* The data arena: the caller's (io_env.arena) or a private mapping kept out of fork children
 * (the page cache belongs to this process); then the request pool. */
static int arena_init(struct io *io, void *given)
{
	io->arena_len = (size_t)io->nr_frames * IO_PAGE_SIZE;
	if (given && (uintptr_t)given % IO_PAGE_SIZE)
		return -EINVAL;
	io->arena_given = given != NULL;
	io->arena = given ? given : io_map_dontfork(io->arena_len);
	if (!io->arena)
		return -ENOMEM;
	return reqs_init(io) < 0 ? -ENOMEM : 0;
}

int io_create(const struct io_config *cfg, const struct io_env *env, struct io **out, char *err,
	      size_t errlen)
{
	struct io *io = io_map(sizeof(*io));
	int rc;

	if (!io) {
		snprintf(err, errlen, "io: out of memory");
		return -ENOMEM;
	}
	io->cfg = *cfg;
	io->env = *env;
	io->mm = env->mm;
	io->st = env->stats;
	io->nr_frames = mm_nr_frames(io->mm);
	io->max_pages = (unsigned)(cfg->dev.max_request / IO_PAGE_SIZE);
	io->fl_slot = -1;
	if (cfg->rq_3x) {
		io->rqs = env->rqs;
		if (!io->rqs) {
			io->rqs = io_map(sizeof(*io->rqs));
			io->rqs_own = io->rqs != NULL;
			if (io->rqs)
				rqs_init(io->rqs, cfg->dev.nr_requests);
		}
		if (!io->rqs) {
			snprintf(err, errlen, "io: out of memory");
			io_unmap(io, sizeof(*io));
			return -ENOMEM;
		}
	}
	wbq_init(&io->carry, io->rqs ? WBQ_UNBOUNDED : cfg->dev.nr_requests, io->max_pages,
		 io->carry_pfn, io->carry_owner, IO_CARRY_MAX);
	pthread_mutex_init(&io->q_lock, NULL);
	pthread_mutex_init(&io->files_lock, NULL);
	pthread_mutex_init(&io->join_lock, NULL);
	io_files_init(io);
	rc = arena_init(io, env->arena);
	if (rc < 0) {
		snprintf(err, errlen, "io: %s",
			 rc == -EINVAL ? "the given page-cache arena is not 4 KiB aligned"
				       : "cannot map the page-cache arena or the requests");
		goto destroy;
	}
	rc = cfg->dir[0] ? dir_init(io, err, errlen) : 0;
	if (rc == 0)
		rc = cfg->dir[0] ? io_uring_backend_init(io, err, errlen)
				 : io_model_backend_init(io, err, errlen);
	if (rc < 0)
		goto destroy;
	policy_init(io);
	stats_init(io);
	*out = io;
	return 0;

destroy:
	io_destroy(io);
	return rc;
}

/* Every io thread asleep on a futex word wakes (each such wait loops on its condition). */
static void wake_sleepers(struct io *io)
{
	__atomic_fetch_add(&io->dirtier_wake, 1, __ATOMIC_RELEASE);
	io_futex_wake_all(&io->dirtier_wake);
	__atomic_fetch_add(&io->progress, 1, __ATOMIC_RELEASE);
	io_futex_wake_all(&io->progress);
}

/* A credential change of the program is waiting for an io thread: wake it wherever it sleeps. */
static void io_thread_ping(void *arg)
{
	struct io *io = arg;

	wake_sleepers(io);
	if (io->be)
		io->be->kick(io);
}

int io_start(struct io *io)
{
	int rc = guard_thread_create(&io->flusher, &io->flusher_gt, io_thread_ping, io,
				     flusher_main, io, "thpemu-flush");

	if (rc < 0)
		return rc;
	io->flusher_started = true;
	if (!io->cfg.dirty)
		return 0;
	pthread_mutex_lock(&io->join_lock); /* the flusher may look for it already */
	rc = guard_thread_create(&io->dirtier, &io->dirtier_gt, io_thread_ping, io, io_dirtier_main,
				 io, "thpemu-dirty");
	io->dirtier_started = rc == 0;
	pthread_mutex_unlock(&io->join_lock);
	return rc < 0 ? rc : 0;
}

void io_stop(struct io *io, uint64_t drain_ns)
{
	bool joined;

	if (!io || atomic_exchange(&io->stopping, true))
		return;
	wake_sleepers(io);
	/* the flusher keeps completing writes meanwhile; if the dirtier still waits on one when
	 * the drain time is up, stopping the flusher ends every page in flight and wakes it (e.g.
	 * blocked in reclaim on a page whose write the device has not completed) */
	joined = join_dirtier(io, drain_ns ? drain_ns : 1);
	io->drain_deadline = joined ? clock_now_ns() + drain_ns : 0;
	atomic_store_explicit(&io->flusher_stop, true, memory_order_release);
	if (io->be) /* none when io_create failed before the backend was up */
		io->be->kick(io);
	if (io->flusher_started && guard_thread_join(io->flusher, &io->flusher_gt) == 0)
		thread_gone(io, &io->flusher_gt);
	io->flusher_started = false;
	pthread_mutex_lock(&io->join_lock);
	if (io->dirtier_started && guard_thread_join(io->dirtier, &io->dirtier_gt) == 0)
		thread_gone(io, &io->dirtier_gt);
	io->dirtier_started = false;
	pthread_mutex_unlock(&io->join_lock);
}

void io_destroy(struct io *io)
{
	if (!io)
		return;
	io_stop(io, 0);
	if (io->be)
		io->be->destroy(io); /* with it every slot it held open */
	if (!io->arena_given)
		io_unmap(io->arena, io->arena_len);
	if (io->rqs_own)
		io_unmap(io->rqs, sizeof(*io->rqs));
	io_unmap(io->req_mem, io->req_mem_len);
	io_unmap(io->reqs, io->nreqs * sizeof(*io->reqs));
	pthread_mutex_destroy(&io->q_lock);
	pthread_mutex_destroy(&io->files_lock);
	pthread_mutex_destroy(&io->join_lock);
	io_unmap(io, sizeof(*io));
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void io_stats_merge(struct io_stats *dst, const struct io_stats *src)
{
	const uint64_t *s = (const uint64_t *)(const void *)src;
	uint64_t *d = (uint64_t *)(void *)dst;
	size_t n = offsetof(struct io_stats, wb_lat) / sizeof(uint64_t);
	uint64_t inflight = max64(dst->inflight_max, src->inflight_max);
	uint64_t dirty = max64(dst->dirty_max_pages, src->dirty_max_pages);
	uint64_t pause = max64(dst->throttle_max_ns, src->throttle_max_ns);
	uint64_t rq_max = max64(dst->rq_allocated_max, src->rq_allocated_max), rq_wait_max[3];

	for (int i = 0; i < 3; i++)
		rq_wait_max[i] = max64(dst->rq_wait_max_ns[i], src->rq_wait_max_ns[i]);
	for (size_t i = 0; i < n; i++)
		d[i] += s[i];
	dst->rq_active = dst->rq_active || src->rq_active;
	dst->rq_allocated_max = rq_max;
	memcpy(dst->rq_wait_max_ns, rq_wait_max, sizeof(rq_wait_max));
	dst->inflight_max = inflight;
	dst->dirty_max_pages = dirty;
	dst->throttle_max_ns = pause;
	obs_hist_merge(&dst->wb_lat, &src->wb_lat);
	if (!dst->device[0])
		memcpy(dst->device, src->device, sizeof(dst->device));
	if (!dst->model[0])
		memcpy(dst->model, src->model, sizeof(dst->model));
	if (!dst->note[0])
		memcpy(dst->note, src->note, sizeof(dst->note));
}

void io_stats_copy(struct io_stats *dst, const struct io_stats *src)
{
	const uint64_t *s = (const uint64_t *)(const void *)src;
	uint64_t *d = (uint64_t *)(void *)dst;
	size_t n = offsetof(struct io_stats, wb_lat) / sizeof(uint64_t);

	for (size_t i = 0; i < n; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
	obs_hist_init(&dst->wb_lat);
	obs_hist_merge(&dst->wb_lat, &src->wb_lat);
	memcpy(dst->device, src->device, sizeof(dst->device)); /* set before io threads start */
	memcpy(dst->model, src->model, sizeof(dst->model));
	dst->note[0] = __atomic_load_n(&src->note[0], __ATOMIC_ACQUIRE);
	if (dst->note[0]) /* published by its first byte */
		memcpy(dst->note + 1, src->note + 1, sizeof(dst->note) - 1);
	else
		memset(dst->note, 0, sizeof(dst->note));
}
