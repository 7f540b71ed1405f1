/* The live emulator's life cycle: create (userfaultfd, pool, staging, scratch, stats, threads),
 * the handler and background threads, snapshots, exit and fork.
 *
 * Handler threads block every signal (so no program handler ever runs on them and faults) and
 * read one message at a time from the userfaultfd. One idle handler listens, blocked in read(2)
 * as a bare handler is; the others park on a futex until a fault turns slow (handler_next): a
 * thread stalled for seconds in sync compaction holds up only the fault it serves. A process
 * starts with one handler; the background thread makes more when a fault would be handed on
 * and none is parked (bg_make_wanted), and the watchdog and refill thread when first wanted. A stop
 * or a credential request reaches the blocked listener as a fault on a page of ours
 * (handlers_kick), so nothing is polled on the fault path. The background thread runs mm's
 * kswapd/kcompactd model (mm_background) and refreshes the stats snapshot.
 *
 * The preload library never stops its handlers: a program exiting while other threads still
 * fault must not hang on a handler that is gone. Only tests call uffd_live_destroy.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>

#include "snapshot/snapshot.h"
#include "util/sys.h"
#include "util/clock.h"
#include "util/outfile.h"

#define BG_PERIOD_NS (100 * 1000000ULL) /* background tick and stats snapshot period */

__thread int uffd_tls_passthrough __attribute__((tls_model("initial-exec")));

/* ---- messages ------------------------------------------------------------------------------ */

/* Append s to buf (bounded); returns the new length. */
static size_t put_str(char *buf, size_t len, size_t cap, const char *s)
{
	while (*s && len + 1 < cap)
		buf[len++] = *s++;
	buf[len] = '\0';
	return len;
}

static size_t put_u64(char *buf, size_t len, size_t cap, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n && len + 1 < cap)
		buf[len++] = tmp[--n];
	buf[len] = '\0';
	return len;
}

void uffd_note(struct uffd_live *lv, const char *msg)
{
	/* first note wins; the report shows it after the leading space */
	pthread_mutex_lock(&lv->snap_lock);
	if (!lv->stats->note[0]) {
		lv->stats->note[0] = ' ';
		put_str(lv->stats->note + 1, 0, sizeof(lv->stats->note) - 1, msg);
	}
	pthread_mutex_unlock(&lv->snap_lock);
}

void uffd_say_once(struct uffd_live *lv, int bit, const char *msg, uint64_t num, const char *tail)
{
	char buf[320];
	size_t n = 0;

	if (__atomic_fetch_or(&lv->said, 1 << bit, __ATOMIC_RELAXED) & (1 << bit))
		return;
	n = put_str(buf, n, sizeof(buf), msg);
	n = put_u64(buf, n, sizeof(buf), num);
	n = put_str(buf, n, sizeof(buf), tail);
	uffd_note(lv, buf);
	if (lv->cfg.log == CONFIG_LOG_QUIET)
		return;
	sys_write(2, "thpemu: ", 8);
	n = put_str(buf, n, sizeof(buf), "\n");
	sys_write(2, buf, n);
}

/* ---- threads ------------------------------------------------------------------------------- */

bool uffd_test_force_epoll;

/* Wake every parked handler: a stop or a credential request (they then see it at the top of
 * their loop). */
static void handlers_unpark_all(struct uffd_live *lv)
{
	__atomic_fetch_add(&lv->park_seq, 1, __ATOMIC_SEQ_CST);
	sys_futex_wake(&lv->park_seq, INT32_MAX);
}

/* block_read: make the handler blocked in read(2) return - only a message does that (its signals
 * are blocked) - by touching kick_page, a registered page of ours: the touch waits until a
 * handler has served it (handler_main: kick_serve), then the page is zapped for the next kick.
 * want: only if handler want - 1 is the one blocked (0: any). kicks is raised first: a handler
 * that is stopping serves messages until it is 0 again (handler_drain_kicks), so that a touch
 * made for a reader that has just left is read by someone. */
static void handlers_kick(struct uffd_live *lv, uint32_t want)
{
	uint32_t l;

	__atomic_fetch_add(&lv->kicks, 1, __ATOMIC_SEQ_CST);
	l = __atomic_load_n(&lv->listener, __ATOMIC_SEQ_CST);
	if (l && (!want || l == want)) {
		/* empty before the touch as well: a populate of every mapping (the program's
		 * mlockall) may have given the page a frame, and a touch of it would wake nobody */
		sys_zap(lv->kick_page, UFFD_PAGE_SIZE);
		(void)*(volatile char *)lv->kick_page;
		sys_zap(lv->kick_page, UFFD_PAGE_SIZE);
	}
	__atomic_fetch_sub(&lv->kicks, 1, __ATOMIC_SEQ_CST);
}

static void kick_serve(struct uffd_live *lv)
{
	if (uffd_io_zeropage(lv->uffd, (uintptr_t)lv->kick_page, UFFD_PAGE_SIZE) < 0)
		uffd_io_wake(lv->uffd, (uintptr_t)lv->kick_page,
			     UFFD_PAGE_SIZE); /* mapped already */
}

static bool is_kick(const struct uffd_live *lv, uintptr_t addr)
{
	return lv->kick_page && addr - (uintptr_t)lv->kick_page < UFFD_PAGE_SIZE;
}

/* A credential request for handler w (guard_cred_replicate: it waits until w has seen it). With
 * epoll, a token on the control eventfd (a semaphore: each read takes one token, and every poller
 * wakes on a write). */
static void handler_ping(void *arg)
{
	struct uffd_worker *w = arg;
	struct uffd_live *lv = w->lv;
	uint64_t one = 1;

	if (lv->block_read)
		handlers_kick(lv, w->idx + 1);
	else
		sys_write(lv->ctl_fd, &one, sizeof(one));
	handlers_unpark_all(lv);
}

void uffd_handlers_cover(struct uffd_worker *w)
{
	struct uffd_live *lv = w ? w->lv : NULL;

	/* only a handler holds a fault others could queue behind: the background threads' own
	 * compaction, reclaim and waits (kcompactd, khugepaged) wake nobody */
	if (!lv || w->idx >= lv->nworkers)
		return;
	/* a fault that may last, or faults of several threads: where it could stall, the watchdog
	 * is wanted from now on (made once) */
	if (lv->stallcap)
		uffd_live_want(lv, UFFD_TODO_WATCHDOG);
	if (__atomic_load_n(&lv->listeners, __ATOMIC_SEQ_CST))
		return;
	if (!__atomic_load_n(&lv->parked, __ATOMIC_SEQ_CST)) {
		/* every handler made so far is busy: one more, if there may be */
		if (__atomic_load_n(&lv->handlers_made, __ATOMIC_ACQUIRE) < lv->nworkers)
			uffd_live_want(lv, UFFD_TODO_HANDLER);
		return;
	}
	__atomic_fetch_add(&lv->park_seq, 1, __ATOMIC_SEQ_CST);
	sys_futex_wake(&lv->park_seq, 1);
}

/* A parked handler also wakes on its own now and then: a handler blocked somewhere no hook calls
 * uffd_handlers_cover delays the other faults by this much at most. */
#define PARK_TIMEOUT_NS 50000000L

/* Park until uffd_handlers_cover, a stop or credential request, or the timeout. */
static void handler_park(struct uffd_worker *w)
{
	struct uffd_live *lv = w->lv;
	uint32_t seq = __atomic_load_n(&lv->park_seq, __ATOMIC_SEQ_CST);
	struct timespec ts = {0, PARK_TIMEOUT_NS};

	__atomic_fetch_add(&lv->parked, 1, __ATOMIC_SEQ_CST);
	/* the listener may have taken a message since: then nobody listens, so do not sleep */
	if (__atomic_load_n(&lv->listeners, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&lv->stopping, __ATOMIC_SEQ_CST) && !guard_thread_pending(&w->gt))
		sys_futex_wait(&lv->park_seq, seq, &ts);
	__atomic_fetch_sub(&lv->parked, 1, __ATOMIC_SEQ_CST);
}

/* epoll: sleep until the userfaultfd may have a message or ctl_fd a token. The uffd is
 * registered in the epoll instance with EPOLLEXCLUSIVE: handle_userfault's wake-up of the uffd's
 * readers (fd_wqh) wakes one instance that has a handler waiting in it, not every handler. The
 * caller is the one listener (handler_next). */
static void handler_epoll(struct uffd_worker *w)
{
	struct uffd_live *lv = w->lv;
	struct epoll_event ev[2];
	uint64_t token;
	long n;

	n = sys_call6(SYS_epoll_pwait, lv->ep_fd[w->idx % lv->n_ep], (long)ev, 2, -1, 0, 8);
	for (long i = 0; i < n; i++)
		if (ev[i].data.u32 == 1) /* a stop or a credential request: take its token */
			sys_read(lv->ctl_fd, &token, sizeof(token));
}

/* One read of the userfaultfd by handler w (block: a read(2) that may block; else one that does
 * not). w->busy says it holds a message, and is raised before a read that does not block, so
 * that wait_handlers_idle never misses a message just taken. */
static long handler_read(struct uffd_worker *w, struct uffd_msg *msg, bool block)
{
	struct uffd_live *lv = w->lv;
	long n;

	__atomic_store_n(&w->busy, !block, __ATOMIC_SEQ_CST);
	n = uffd_io_read(lv->uffd, msg, !block && lv->block_read); /* epoll: O_NONBLOCK */
	__atomic_store_n(&w->busy, n == (long)sizeof(*msg), __ATOMIC_SEQ_CST);
	return n;
}

/* --spin: one idle handler at a time polls the userfaultfd for up to spin_ns before it sleeps
 * (a fault then costs no wake-up of a handler). Returns the read's result: a message, or -EAGAIN
 * when the time is up. */
static long handler_spin(struct uffd_worker *w, struct uffd_msg *msg)
{
	struct uffd_live *lv = w->lv;
	uint32_t free_slot = 0;
	uint64_t until;
	long n = -EAGAIN;

	if (!lv->cfg.spin_ns || !__atomic_compare_exchange_n(&lv->spinner, &free_slot, 1, false,
							     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -EAGAIN;
	until = clock_now_ns() + lv->cfg.spin_ns;
	while (!__atomic_load_n(&lv->stopping, __ATOMIC_RELAXED) && !guard_thread_pending(&w->gt) &&
	       clock_now_ns() < until) {
		n = handler_read(w, msg, false);
		if (n != -EAGAIN)
			break;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	__atomic_store_n(&lv->spinner, 0, __ATOMIC_RELEASE);
	return n;
}

/* The next message for handler w: sizeof(*msg), or < 0 when it woke without one (parked, a
 * stop or a credential request; the caller loops).
 *
 * Only one idle handler listens at a time; the others park (handler_park). A handler done with
 * a fault tries to become the listener at once:
 * - block_read: the listener blocks in read(2), as a bare handler does; the read returns at
 *   once when a message is queued. fs/userfaultfd.c queues blocked readers non-exclusively
 *   (every fault wakes every one of them), which is why only one reads so. A handler that finds
 *   a listener takes what is queued without blocking (RWF_NOWAIT) and parks when nothing is.
 * - epoll (a kernel without RWF_NOWAIT reads of a userfaultfd): every handler first reads
 *   without blocking (O_NONBLOCK), then the listener sleeps in epoll (handler_epoll): a
 *   wake-up and one system call more a fault.
 * With every idle handler waiting, a fault arriving while the handler of the previous one was
 * still finishing it woke an idle one - a cross-CPU wake-up on the faulting thread's path, for a
 * handler that then found the message taken (4 KiB first touches: p50 8.2-13.7 us with 4
 * handlers, 5.6-7.6 us with 1). */
static long handler_next(struct uffd_worker *w, struct uffd_msg *msg)
{
	struct uffd_live *lv = w->lv;
	bool listen;
	long n;

	if (!lv->block_read) {
		n = handler_read(w, msg, false); /* queued faults first */
		if (n == -EAGAIN)
			n = handler_spin(w, msg);
		if (n != -EAGAIN)
			return n;
	}
	listen = __atomic_fetch_add(&lv->listeners, 1, __ATOMIC_SEQ_CST) == 0;
	if (!listen) {
		__atomic_fetch_sub(&lv->listeners, 1, __ATOMIC_SEQ_CST);
		n = lv->block_read ? handler_read(w, msg, false) : -EAGAIN;
		if (n == -EAGAIN)
			handler_park(w);
		return n;
	}
	if (lv->block_read) {
		n = handler_spin(w, msg);
		if (n == -EAGAIN) {
			/* from here the read is sure to come: a kick (handlers_kick) is read */
			__atomic_store_n(&lv->listener, w->idx + 1, __ATOMIC_SEQ_CST);
			n = handler_read(w, msg, true);
			__atomic_store_n(&lv->listener, 0, __ATOMIC_SEQ_CST);
		}
	} else {
		handler_epoll(w);
		n = -EAGAIN;
	}
	__atomic_fetch_sub(&lv->listeners, 1, __ATOMIC_SEQ_CST);
	return n;
}

/* A handler that is stopping leaves no kick unread (handlers_kick), nor a fault of the program
 * unwoken: it retries, and a later handler (or the kernel, once the range is unregistered or the
 * userfaultfd closed) serves it. */
static void handler_drain_kicks(struct uffd_live *lv)
{
	while (lv->block_read && __atomic_load_n(&lv->kicks, __ATOMIC_SEQ_CST)) {
		struct uffd_msg msg;

		if (uffd_io_read(lv->uffd, &msg, true) != sizeof(msg)) {
			sched_yield();
			continue;
		}
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		if (is_kick(lv, (uintptr_t)msg.arg.pagefault.address))
			kick_serve(lv);
		else
			uffd_io_wake(lv->uffd, msg.arg.pagefault.address & ~(UFFD_PAGE_SIZE - 1),
				     UFFD_PAGE_SIZE);
	}
}

static void *handler_main(void *arg)
{
	struct uffd_worker *w = arg;
	struct uffd_live *lv = w->lv;

	w->tid = sys_gettid();
	uffd_tls_passthrough = 1;
	uffd_thread_started(&w->gt);
	/* /proc/self/maps only for the first handler, whose start the constructor waits for (its
	 * descriptor must never be seen by the program: start_threads) */
	uffd_stallcap_thread_init(w, w->idx == 0);
	__atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
	sys_futex_wake(&w->ready, 1);
	for (;;) {
		struct uffd_msg msg;
		uintptr_t addr;
		int ptid;
		long n;

		guard_thread_sync(&w->gt);
		if (__atomic_load_n(&lv->stopping, __ATOMIC_ACQUIRE))
			break;
		n = handler_next(w, &msg);
		if (n != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT) {
			__atomic_store_n(&w->busy, 0, __ATOMIC_RELEASE);
			continue;
		}
		addr = (uintptr_t)msg.arg.pagefault.address;
		ptid = (int)msg.arg.pagefault.feat.ptid;
		if (is_kick(lv, addr)) {
			kick_serve(lv); /* a stop or a credential request: the loop's top sees it */
		} else {
			/* faults of another thread than the last one: they may be concurrent */
			if (ptid != w->last_ptid && w->last_ptid)
				uffd_handlers_cover(w);
			w->last_ptid = ptid;
			uffd_handle_fault(
			    w, addr, msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE,
			    msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP, ptid, clock_now_ns());
		}
		__atomic_store_n(&w->busy, 0, __ATOMIC_RELEASE);
		uffd_stallcap_idle(w);
	}
	handler_drain_kicks(lv);
	uffd_thread_leave(&w->gt);
	__atomic_fetch_sub(&lv->handlers_alive, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void bg_ping(void *arg)
{
	struct uffd_live *lv = arg;

	__atomic_fetch_add(&lv->bg_wake, 1, __ATOMIC_RELEASE);
	sys_futex_wake(&lv->bg_wake, 1);
}

static void bg_sleep(struct uffd_live *lv, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
	uint32_t v = __atomic_load_n(&lv->bg_wake, __ATOMIC_ACQUIRE);

	if (!__atomic_load_n(&lv->bg_stop, __ATOMIC_ACQUIRE))
		sys_futex_wait(&lv->bg_wake, v, &ts);
}

static int start_thread(struct uffd_worker *w, void *(*fn)(void *), void (*wake)(void *),
			void *wake_arg, const char *name);

/* ---- thpemu's own threads -------------------------------------------------------------------- */

/* Their ids (0: a free slot), for the fault handler: read on every fault without a lock (a
 * registry behind a lock could be held by a thread waiting on a fault: core/inprocess's list is,
 * while a credential request touches the listening handler's kick page). Slots below own_hi may
 * be in use. */
static int32_t own_tids[UFFD_OWN_TIDS];
static uint32_t own_hi;

void uffd_own_thread_enter(void)
{
	int32_t tid = (int32_t)sys_gettid();

	for (uint32_t i = 0; i < UFFD_OWN_TIDS; i++) {
		int32_t free_slot = 0;

		if (__atomic_compare_exchange_n(&own_tids[i], &free_slot, tid, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			uint32_t hi = __atomic_load_n(&own_hi, __ATOMIC_ACQUIRE);

			while (hi < i + 1 &&
			       !__atomic_compare_exchange_n(&own_hi, &hi, i + 1, false,
							    __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
				;
			return;
		}
	}
}

static void own_tid_remove(int32_t tid)
{
	uint32_t hi = __atomic_load_n(&own_hi, __ATOMIC_ACQUIRE);

	if (tid <= 0)
		return;
	for (uint32_t i = 0; i < hi; i++)
		if (__atomic_load_n(&own_tids[i], __ATOMIC_RELAXED) == tid)
			__atomic_store_n(&own_tids[i], 0, __ATOMIC_RELEASE);
}

void uffd_own_thread_leave(void)
{
	own_tid_remove((int32_t)sys_gettid());
}

void uffd_own_thread_gone(int tid)
{
	own_tid_remove((int32_t)tid);
}

bool uffd_own_thread_is(int tid)
{
	uint32_t hi = __atomic_load_n(&own_hi, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < hi; i++)
		if (__atomic_load_n(&own_tids[i], __ATOMIC_ACQUIRE) == tid)
			return true;
	return false;
}

void uffd_own_threads_forget(void)
{
	for (uint32_t i = 0; i < UFFD_OWN_TIDS; i++)
		__atomic_store_n(&own_tids[i], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&own_hi, 0, __ATOMIC_RELEASE);
}

void uffd_thread_started(struct guard_thread *gt)
{
	guard_thread_started(gt);
	uffd_own_thread_enter();
}

/* The thread stays in the table: after its start routine returns, the C library's thread
 * teardown still runs on it (TLS destructors, the allocator's thread cache flush - jemalloc's
 * tsd cleanup -, the DTV's free), in the program's allocator's managed memory. uffd_thread_join
 * takes it out once it is gone. */
void uffd_thread_leave(struct guard_thread *gt)
{
	guard_thread_leave(gt);
}

int uffd_thread_join(pthread_t th, struct guard_thread *gt)
{
	int rc = guard_thread_join(th, gt);

	if (rc == 0) /* the kernel has released the id: nothing runs under it any more */
		own_tid_remove(__atomic_load_n(&gt->tid, __ATOMIC_ACQUIRE));
	return rc;
}

void uffd_live_want(struct uffd_live *lv, uint32_t what)
{
	if ((__atomic_load_n(&lv->todo, __ATOMIC_ACQUIRE) & what) == what ||
	    (__atomic_fetch_or(&lv->todo, what, __ATOMIC_ACQ_REL) & what) == what)
		return; /* asked already */
	if (lv->on_machine)
		uffd_machine_poke(lv);
	else
		bg_ping(lv);
}

static void want_refill(void *arg)
{
	uffd_live_want(arg, UFFD_TODO_REFILL);
}

/* Handler idx, made now: counted alive before it exists (stop_threads waits for it). */
static int start_handler(struct uffd_live *lv, unsigned idx)
{
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "thpemu-flt%u", idx % 100);
	__atomic_fetch_add(&lv->handlers_alive, 1, __ATOMIC_SEQ_CST);
	rc = start_thread(&lv->workers[idx], handler_main, handler_ping, &lv->workers[idx], name);
	if (rc < 0) {
		__atomic_fetch_sub(&lv->handlers_alive, 1, __ATOMIC_SEQ_CST);
		return rc;
	}
	__atomic_store_n(&lv->handlers_made, idx + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The background thread makes what was asked of it (uffd_live_want), one handler a turn, unless
 * the emulator is stopping. A thread that cannot be made is not asked for again. */
static void bg_make_wanted(struct uffd_live *lv)
{
	uint32_t todo = __atomic_exchange_n(&lv->todo, 0, __ATOMIC_ACQ_REL);

	if (!todo)
		return;
	pthread_mutex_lock(&lv->start_lock);
	if (lv->starts_closed) {
		pthread_mutex_unlock(&lv->start_lock);
		return;
	}
	/* one that cannot be made (no memory for its stack) is made at the next asking */
	if (todo & UFFD_TODO_HANDLER) {
		unsigned made = __atomic_load_n(&lv->handlers_made, __ATOMIC_ACQUIRE);

		if (made < lv->nworkers)
			start_handler(lv, made);
	}
	if (todo & UFFD_TODO_WATCHDOG)
		uffd_stallcap_start_watchdog(lv);
	if ((todo & UFFD_TODO_REFILL) && lv->may_huge &&
	    !__atomic_load_n(&lv->staging.started, __ATOMIC_ACQUIRE))
		uffd_staging_start(&lv->staging);
	pthread_mutex_unlock(&lv->start_lock);
}

/* Every handler made so far has been serving one fault for a background tick or more, none
 * listens or is parked, and there may be more. */
static bool handlers_stuck(struct uffd_live *lv, uint64_t now)
{
	unsigned made = __atomic_load_n(&lv->handlers_made, __ATOMIC_ACQUIRE);

	if (made >= lv->nworkers || __atomic_load_n(&lv->listeners, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&lv->parked, __ATOMIC_SEQ_CST))
		return false;
	for (unsigned i = 0; i < made; i++)
		if (!__atomic_load_n(&lv->workers[i].busy, __ATOMIC_ACQUIRE) ||
		    now - __atomic_load_n(&lv->workers[i].fault_t0, __ATOMIC_RELAXED) <
			BG_PERIOD_NS)
			return false;
	return true;
}

/* No thread is made from here on (stopping, stepping aside). */
static void close_starts(struct uffd_live *lv)
{
	pthread_mutex_lock(&lv->start_lock);
	lv->starts_closed = true;
	pthread_mutex_unlock(&lv->start_lock);
}

static void *background_main(void *arg)
{
	struct uffd_worker *w = arg;
	struct uffd_live *lv = w->lv;
	uint64_t next_snap = 0, born = clock_now_ns();

	w->tid = sys_gettid();
	uffd_tls_passthrough = 1;
	uffd_thread_started(&w->gt);
	uffd_probe_run(lv, &w->gt); /* the bare round trip, before the program loads the handlers */
	while (!__atomic_load_n(&lv->bg_stop, __ATOMIC_ACQUIRE)) {
		uint64_t wait, now;

		guard_thread_sync(&w->gt);
		__atomic_and_fetch(&lv->agent_stop, ~UFFD_AGENT_POKE, __ATOMIC_ACQ_REL);
		bg_make_wanted(lv);
		if (lv->on_machine) { /* the host runs the kernel threads; we answer requests */
			uffd_machine_serve(lv, w, BG_PERIOD_NS);
			wait = 0;
		} else {
			wait = mm_background(lv->mm, w);
		}
		now = clock_now_ns();
		if (now >= next_snap) {
			uffd_live_snapshot(lv);
			next_snap = now + BG_PERIOD_NS;
			/* every handler in one fault for a whole tick (blocked where no hook asks
			 * for one): one more; the run's first process, alive for a tick, gets its
			 * staging prefilled (a short-lived one never clears a chunk for nothing) */
			if (handlers_stuck(lv, now))
				uffd_live_want(lv, UFFD_TODO_HANDLER);
			if (lv->may_huge && !lv->staging.lazy && now - born >= BG_PERIOD_NS &&
			    !__atomic_load_n(&lv->staging.started, __ATOMIC_ACQUIRE))
				uffd_live_want(lv, UFFD_TODO_REFILL);
		}
		uffd_census_tick(lv); /* when the process grew, or a second passed */
		if (!lv->on_machine)
			bg_sleep(lv, wait < BG_PERIOD_NS ? (wait ? wait : 1000000) : BG_PERIOD_NS);
	}
	uffd_thread_leave(&w->gt);
	return NULL;
}

static int start_thread(struct uffd_worker *w, void *(*fn)(void *), void (*wake)(void *),
			void *wake_arg, const char *name)
{
	int rc = guard_thread_create(&w->thread, &w->gt, wake, wake_arg, fn, w, name);

	if (rc == 0)
		w->started = true;
	return rc;
}

/* The threads a process starts with: one handler and the background thread (and khugepaged
 * without a machine). More handlers, the stall watchdog and the staging refill thread are made
 * by the background thread when first wanted (uffd_live_want): a process whose faults come one
 * at a time (a single-threaded program: its thread waits in each) never needs a second handler,
 * and a short one (a compiler, sha1sum) neither a watchdog nor staging. */
/* Below this stall threshold the watchdog is made at start (start_threads). */
#define UFFD_WATCHDOG_AT_START_NS (50ULL * 1000 * 1000)

static int start_threads(struct uffd_live *lv)
{
	int rc = start_handler(lv, 0);

	if (rc < 0)
		return rc;
	/* A handler whose stack is not the arena's reads /proc/self/maps for its bounds
	 * (uffd_stallcap_thread_init) through a descriptor the kernel numbers lowest-free, in the
	 * program's range. The program must never see it: a program listing its descriptors at the
	 * start of main saw one more than natively (integration/guard_fds, CI, twice). So the
	 * constructor returns only once the first handler is past it (bounded: 2 s); the handlers
	 * made later never read it. */
	for (int k = 0; k < 200 && !lv->workers[0].gt.stack &&
			!__atomic_load_n(&lv->workers[0].ready, __ATOMIC_ACQUIRE);
	     k++) {
		struct timespec ts = {0, 10000000};

		sys_futex_wait(&lv->workers[0].ready, 0, &ts);
	}
	rc = start_thread(&lv->workers[lv->nworkers], background_main, bg_ping, lv,
			  "thpemu-kthread");
	if (rc == 0 && !lv->on_machine) /* on a machine the host runs khugepaged */
		rc = start_thread(UFFD_W_KHD(lv), uffd_khugepaged_main, uffd_khugepaged_ping, lv,
				  "thpemu-khugepd");
	if (lv->may_huge) /* huge decisions: staging THPs, filled by a thread made on demand */
		lv->staging.want_refill = want_refill, lv->staging.want_arg = lv;
	/* A threshold an ordinary fault can pass (clearing a huge page takes 0.1-2 ms) makes the
	 * process's very first faults stalls: their application stacks need the watchdog now, not
	 * when a fault first blocks or compacts (a lone usemem never does) */
	if (rc == 0 && lv->stallcap && lv->cfg.stall_threshold_ns < UFFD_WATCHDOG_AT_START_NS) {
		pthread_mutex_lock(&lv->start_lock);
		uffd_stallcap_start_watchdog(lv);
		pthread_mutex_unlock(&lv->start_lock);
	}
	return rc;
}

static void stop_threads(struct uffd_live *lv)
{
	uint64_t one;

	uffd_probe_stop(lv); /* a probe touch in flight needs the handlers */
	close_starts(lv);    /* before the stop: a handler made after it could be missed */
	__atomic_store_n(&lv->stopping, true, __ATOMIC_RELEASE);
	one = (uint64_t)lv->nworkers + 1; /* a token for every handler (semaphore) */
	if (lv->ctl_fd >= 0)
		sys_write(lv->ctl_fd, &one, sizeof(one));
	handlers_unpark_all(lv);
	__atomic_store_n(&lv->bg_stop, true, __ATOMIC_RELEASE);
	bg_ping(lv);
	__atomic_store_n(&lv->khd_stop, true, __ATOMIC_RELEASE);
	uffd_khugepaged_ping(lv);
	uffd_machine_kick(lv);
	/* block_read: the listener leaves its read only for a message; each one that takes a
	 * kick's leaves the loop, and a handler next in line listens (handler_next) */
	while (lv->block_read && __atomic_load_n(&lv->handlers_alive, __ATOMIC_SEQ_CST)) {
		struct timespec ts = {0, 200000};

		if (__atomic_load_n(&lv->listener, __ATOMIC_SEQ_CST))
			handlers_kick(lv, 0);
		else
			nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < lv->nworkers + UFFD_EXTRA_WORKERS; i++) {
		if (lv->workers[i].started)
			uffd_thread_join(lv->workers[i].thread, &lv->workers[i].gt);
		lv->workers[i].started = false;
	}
	uffd_staging_destroy(&lv->staging);
}

/* ---- stats ---------------------------------------------------------------------------------- */

static void read_small_file(const char *path, char *buf, size_t cap, char sep)
{
	int fd = guard_fd_open(path); /* the program may be running: out of its reach */
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return;
	n = sys_read(fd, buf, cap - 1);
	guard_fd_close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n - 1; i++)
		if (buf[i] == '\0')
			buf[i] = sep;
	if (buf[n - 1] == '\n' || buf[n - 1] == '\0')
		buf[n - 1] = '\0';
}

/* PATH made from a spare record of the run's host (UFFD_STATS_SPARES, report/stats.h), open;
 * or -errno: none there (not a run's machine, the run younger than a keeper tick, a burst of
 * processes took it), or PATH exists (an exec'd program's predecessor, a reused pid). Renamed
 * before it is opened: a spare the host made again meanwhile under the same name is never
 * opened by two processes, and the renamed file is this pid's alone. */
static int stats_claim_spare(const char *dir, const char *path, int pid)
{
	char spare[600];
	struct stat st;
	int fd;

	snprintf(spare, sizeof(spare), UFFD_STATS_SPARE_FMT, dir,
		 (unsigned)pid % UFFD_STATS_SPARES);
	if (renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_NOREPLACE) < 0)
		return -errno;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* a record of another build's length, or a file someone else left in a directory given
	 * by hand (THPEMU_RUN_DIR): made here instead (a short file would fault past its end) */
	if (fstat(fd, &st) < 0 || st.st_size != (off_t)UFFD_STATS_FILE_LEN ||
	    st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
		sys_close(fd);
		unlink(path);
		return -EINVAL;
	}
	return fd;
}

static int stats_map(struct uffd_live *lv, char *err, size_t errlen)
{
	char path[600];
	int pid = (int)getpid(), rc = 0;
	long p;

	lv->stats_fd = -1;
	lv->stats_len = UFFD_STATS_FILE_LEN;
	if (lv->cfg.run_dir[0]) {
		snprintf(path, sizeof(path), "%s/%d.stats", lv->cfg.run_dir, pid);
		lv->stats_fd = stats_claim_spare(lv->cfg.run_dir, path, pid);
		if (lv->stats_fd == -EEXIST) { /* the record of this pid's previous program */
			uffd_stats_keep_previous(lv->cfg.run_dir, pid);
			lv->stats_fd = stats_claim_spare(lv->cfg.run_dir, path, pid);
		}
		if (lv->stats_fd < 0) { /* no spare: made here, as long as the record */
			uffd_stats_keep_previous(lv->cfg.run_dir, pid);
			lv->stats_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			rc = lv->stats_fd < 0 ? -errno
					      : sys_ftruncate(lv->stats_fd, (long)lv->stats_len);
		}
		if (rc < 0) {
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(-rc));
			if (lv->stats_fd >= 0)
				sys_close(lv->stats_fd);
			lv->stats_fd = -1;
			return -EIO;
		}
		p = guard_vm_map(lv->stats_len, 0, MAP_NORESERVE, 0); /* where it goes */
		if (!sys_is_err(p))
			p = sys_mmap((void *)p, lv->stats_len, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_FIXED, lv->stats_fd, 0);
		sys_close(lv->stats_fd); /* the mapping keeps the file: no descriptor to hold */
		lv->stats_fd = -1;
	} else {
		p = guard_vm_map(lv->stats_len, 0, 0, 0);
	}
	if (sys_is_err(p)) {
		snprintf(err, errlen, "cannot map the statistics: %s", strerror((int)-p));
		return (int)p;
	}
	lv->stats = (struct uffd_stats *)p;
	return 0;
}

/* The program's arguments as the C library handed them to the library's constructor (ELF
 * constructors get argc, argv, envp from glibc's _dl_init), or NULL. */
static char *const *id_argv;

void uffd_stats_identify_args(char *const *argv)
{
	id_argv = argv;
}

/* The arguments as /proc/self/cmdline gives them before the program could change them (the
 * kernel's copy of the same strings, each ended by a NUL: fs/proc/base.c, get_mm_cmdline), cut
 * and joined as read_small_file does: no file opened. */
static void cmdline_from_args(char *const *argv, char *buf, size_t cap)
{
	size_t n = 0;

	for (; *argv && n < cap - 1; argv++) {
		size_t len = strlen(*argv) + 1; /* its NUL too */

		if (len > cap - 1 - n)
			len = cap - 1 - n;
		memcpy(buf + n, *argv, len);
		n += len;
	}
	buf[n] = '\0';
	for (size_t i = 0; n && i < n - 1; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	if (n && buf[n - 1] == '\0')
		buf[n - 1] = '\0';
}

void uffd_stats_identify(struct uffd_stats *st)
{
	char name[17] = ""; /* PR_GET_NAME writes 16 bytes, the NUL included */
	ssize_t n;

	st->pid = getpid();
	st->ppid = getppid();
	n = readlink("/proc/self/exe", st->exe, sizeof(st->exe) - 1);
	st->exe[n > 0 ? n : 0] = '\0';
	/* the calling thread's name: the constructor runs on the main thread, whose name
	 * /proc/self/comm shows */
	if (sys_call6(SYS_prctl, PR_GET_NAME, (long)name, 0, 0, 0, 0) == 0)
		snprintf(st->comm, sizeof(st->comm), "%.15s", name);
	else
		read_small_file("/proc/self/comm", st->comm, sizeof(st->comm), ' ');
	if (id_argv)
		cmdline_from_args(id_argv, st->cmdline, sizeof(st->cmdline));
	else
		read_small_file("/proc/self/cmdline", st->cmdline, sizeof(st->cmdline), ' ');
}

/* A fork child is its parent's image: the same executable and argument memory, so only its pids
 * and its name (the forking thread's, PR_GET_NAME: no /proc lookup) are its own. */
static void stats_identify_child(struct uffd_stats *st, const struct uffd_stats *parent)
{
	char name[17] = ""; /* PR_GET_NAME writes 16 bytes, the NUL included */

	st->pid = (int32_t)sys_getpid();
	st->ppid = getppid();
	memcpy(st->exe, parent->exe, sizeof(st->exe));
	memcpy(st->cmdline, parent->cmdline, sizeof(st->cmdline));
	if (sys_call6(SYS_prctl, PR_GET_NAME, (long)name, 0, 0, 0, 0) == 0)
		snprintf(st->comm, sizeof(st->comm), "%.15s", name);
	else
		memcpy(st->comm, parent->comm, sizeof(st->comm));
}

/* The statistics are fresh (stats_map: a new file, or a new mapping): all zero already, so only
 * what is not zero is written; a page of histograms no fault reaches is never touched (on a
 * file system such as ext4 every page written costs a page_mkwrite and a block). */
static void stats_init(struct uffd_live *lv, const struct uffd_live *parent)
{
	struct uffd_stats *st = lv->stats;

	st->version = UFFD_STATS_VERSION;
	st->size = sizeof(*st);
	if (parent)
		stats_identify_child(st, parent->stats);
	else
		uffd_stats_identify(st);
	st->state = UFFD_PROC_RUNNING;
	st->handlers = lv->nworkers;
	st->pool_bytes = lv->cfg.pool_bytes;
	st->start_mono_ns = clock_now_ns();
	mm_policy_format(&lv->cfg.policy, st->policy, sizeof(st->policy));
	obs_faults_init_zeroed(&st->faults);
	__atomic_store_n(&st->magic, UFFD_STATS_MAGIC, __ATOMIC_RELEASE);
}

void uffd_live_snapshot(struct uffd_live *lv)
{
	uint64_t v[MM_STAT_NR];
	struct mm_counts c;
	struct obs_mthp m;

	mm_get_stats(lv->mm, v);
	mm_get_counts(lv->mm, &c);
	obs_mthp_snapshot(&m, &lv->cfg.policy, lv->mm);
	pthread_mutex_lock(&lv->snap_lock);
	memcpy(lv->stats->vmstat, v, sizeof(v));
	lv->stats->counts = c;
	lv->stats->mthp = m;
	lv->stats->last_update_mono_ns = clock_now_ns();
	pthread_mutex_unlock(&lv->snap_lock);
}

void uffd_live_stats_copy(struct uffd_live *lv, struct uffd_stats *out)
{
	const uint64_t *h = (const uint64_t *)(const void *)&lv->stats->host;
	uint64_t *o = (uint64_t *)(void *)&out->host;

	pthread_mutex_lock(&lv->snap_lock);
	memcpy(out, lv->stats, offsetof(struct uffd_stats, host));
	out->mem = lv->stats->mem; /* the census too (written under the same lock) */
	pthread_mutex_unlock(&lv->snap_lock);
	for (unsigned i = 0; i < UFFD_NR_HOST; i++)
		o[i] = __atomic_load_n(&h[i], __ATOMIC_RELAXED);
	obs_faults_init(&out->faults);
	obs_faults_merge(&out->faults, &lv->stats->faults);
	io_stats_copy(&out->io, &lv->stats->io);
	if (__atomic_load_n(&lv->stats->probe.n, __ATOMIC_ACQUIRE))
		out->probe = lv->stats->probe; /* published: complete */
	else
		memset(&out->probe, 0, sizeof(out->probe));
	out->nstall_recs = 0;
	for (uint32_t i = 0; i < UFFD_STALL_RECS; i++) {
		const struct uffd_stall_rec *sr = &lv->stats->stall_recs[i];

		if (__atomic_load_n(&sr->ready, __ATOMIC_ACQUIRE))
			out->stall_recs[out->nstall_recs++] = *sr; /* published: complete */
	}
}

void uffd_expand_pid(const char *pattern, char *out, size_t len)
{
	size_t n = 0;

	for (const char *s = pattern; *s && n + 12 < len; s++) {
		if (s[0] == '%' && s[1] == 'p') {
			n += (size_t)snprintf(out + n, len - n, "%d", (int)getpid());
			s++;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = '\0';
}

/* Output paths are checked before anything starts: a report that could not be written at exit
 * (or would go through a planted link) is bad input, found now. */
/* An output that cannot be written is bad input: the process runs unmanaged, saying why (one
 * that fails later, a full disk, is said and the program goes on managed). */
/* Zero pages (--zero-page): read first touches take no frame, and their first writes are seen
 * through write-protect. A trace records them (core/obs/trace.h, version 2: the zero decisions,
 * the first writes, the header's zero_page). */
static bool zero_wanted(const struct uffd_live *lv)
{
	return lv->cfg.zero_page;
}

static int check_outputs(const struct config *cfg, char *err, size_t errlen)
{
	char path[600], why[700];

	if (cfg->report[0]) {
		uffd_expand_pid(cfg->report, path, sizeof(path));
		if (outfile_check(path, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "THPEMU_REPORT: %s", why);
			return -EINVAL;
		}
	}
	if (cfg->trace[0]) {
		uffd_trace_path(cfg, path, sizeof(path));
		if (outfile_check(path, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "THPEMU_TRACE: %s", why);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- create / destroy ------------------------------------------------------------------------ */

static void *map_anon(size_t len)
{
	long p = guard_vm_map(len, 0, 0, 0);

	return sys_is_err(p) ? NULL : (void *)p;
}

static const uint32_t *forkcheck_page(void)
{
	uint32_t *p = map_anon(UFFD_PAGE_SIZE);

	if (p && sys_madvise(p, UFFD_PAGE_SIZE, MADV_WIPEONFORK) == 0) {
		*p = 1;
		return p;
	}
	if (p)
		guard_vm_unmap(p, UFFD_PAGE_SIZE);
	return NULL;
}

static int scratch_init(struct uffd_live *lv)
{
	unsigned n = lv->nworkers + UFFD_EXTRA_WORKERS;
	size_t pages = (size_t)n * UFFD_SCRATCH_PAGES * UFFD_PAGE_SIZE;
	size_t pages_up = (pages + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1);
	uintptr_t aligned;
	long map;
	int rc;

	/* the migration pages, then a 2 MiB collapse scratch for each worker that collapses (the
	 * background thread answering the machine's khugepaged, khugepaged, MADV_COLLAPSE) */
	lv->scratch_len = pages_up + (size_t)UFFD_EXTRA_WORKERS * UFFD_HPAGE_SIZE;
	lv->scratch_map_len = lv->scratch_len + UFFD_HPAGE_SIZE;
	map = guard_vm_map(lv->scratch_map_len, 0, MAP_NORESERVE, GUARD_VM_DONTFORK);
	if (sys_is_err(map))
		return -ENOMEM;
	lv->scratch_map = (void *)map;
	aligned = ((uintptr_t)map + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1);
	lv->scratch_area = (uint8_t *)aligned;
	/* moves into it need a registered destination with the program's VMA flags */
	rc = uffd_io_register(lv->uffd, (uintptr_t)lv->scratch_area, lv->scratch_len);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < n; i++)
		lv->workers[i].scratch =
		    lv->scratch_area + (size_t)i * UFFD_SCRATCH_PAGES * UFFD_PAGE_SIZE;
	for (unsigned i = 0; i < UFFD_EXTRA_WORKERS; i++)
		lv->workers[lv->nworkers + i].cscratch =
		    lv->scratch_area + pages_up + (size_t)i * UFFD_HPAGE_SIZE;
	return 0;
}

/* The plugin's first nonsense / overtime answer: in a handler thread with mm's lock held, so
 * one raw write and nothing more (no stdio, no other lock). */
static void plugin_note(void *cookie, const char *msg)
{
	const struct policy_plugin *p = cookie;
	char line[512];
	int n = snprintf(line, sizeof(line), "thpemu: policy plugin %s: %s\n", p->path, msg);

	if (n > 0)
		(void)sys_write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* The policy plugin of cfg.policy (key plugin=, or THPEMU_POLICY_PLUGIN): loaded into this
 * process and installed in its pool. One that does not load leaves the built-in policy, after
 * one stderr line (the CLI refuses such a plugin before starting anything; this is the bare
 * LD_PRELOAD case). */
static void plugin_init(struct uffd_live *lv)
{
	char why[400];

	if (!lv->cfg.policy.plugin[0]) /* the policy names none: THPEMU_POLICY_PLUGIN's */
		snprintf(lv->cfg.policy.plugin, sizeof(lv->cfg.policy.plugin), "%s",
			 config_plugin(&lv->cfg));
	if (!lv->cfg.policy.plugin[0])
		return;
	if (policy_plugin_load(lv->cfg.policy.plugin, &lv->plugin, why, sizeof(why)) == 0) {
		struct mm_policy_hook h = {
		    .pl = lv->plugin.pl, .note = plugin_note, .cookie = &lv->plugin};

		if (mm_set_policy_hook(lv->mm, &h) == 0) { /* the report names it */
			mm_policy_format(&lv->cfg.policy, lv->stats->policy,
					 sizeof(lv->stats->policy));
			return;
		}
		snprintf(why, sizeof(why), "%s: the pool refused it", lv->plugin.path);
		policy_plugin_unload(&lv->plugin);
	}
	fprintf(stderr, "thpemu: policy plugin %s; using the built-in policy\n", why);
	lv->cfg.policy.plugin[0] = '\0';
}

static int pool_init(struct uffd_live *lv, const struct uffd_live *parent, char *err, size_t errlen)
{
	struct mm_config mc = {.pool_bytes = lv->cfg.pool_bytes, .policy = lv->cfg.policy};
	int rc;

	if (lv->cfg.machine[0]) { /* one machine for the whole run: the host made the pool */
		char why[400] = "", msg[600];

		rc = uffd_machine_join(lv, parent, why, sizeof(why));
		if (rc == 0) {
			plugin_init(lv); /* per process: this process's binding of the pool */
			return 0;
		}
		if (!parent && (rc == -ENOENT || rc == -EPROTO)) { /* no machine there: dead, or
								    * not one */
			snprintf(err, errlen, "THPEMU_MACHINE=%s: %s", lv->cfg.machine, why);
			return rc;
		}
		/* e.g. in a new user namespace, whose processes may not open the host's memfd:
		 * a pool of its own still manages the process */
		snprintf(msg, sizeof(msg), "%s: this process has a pool of its own", why);
		uffd_note(lv, msg);
		if (lv->cfg.log >= CONFIG_LOG_INFO)
			fprintf(stderr, "thpemu: %s\n", msg);
		lv->cfg.machine[0] = '\0';
	}
	lv->env.ops = &uffd_env_ops;
	lv->env.priv = lv;
	mc.policy.plugin[0] = '\0'; /* loaded below, after the pool exists */
	rc = mm_create(&mc, &lv->env, &lv->mm, err, errlen);
	if (rc < 0)
		return rc;
	plugin_init(lv);
	if (lv->cfg.fragment[0])
		rc = snap_fragment(lv->mm, lv->cfg.fragment, lv->cfg.seed, err, errlen,
				   &lv->workers[lv->nworkers]);
	return rc;
}

/* The epoll instances the idle handlers wait in (handler_epoll): up to UFFD_EPOLL_MAX, one per
 * handler while there are that few (handlers sharing an instance may wake each other: its
 * level-triggered item is requeued for the next waiter). */
static int epoll_init(struct uffd_live *lv)
{
	lv->n_ep = lv->nworkers < UFFD_EPOLL_MAX ? lv->nworkers : UFFD_EPOLL_MAX;
	for (unsigned i = 0; i < lv->n_ep; i++) {
		struct epoll_event ev_uffd = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.u32 = 0};
		struct epoll_event ev_ctl = {.events = EPOLLIN, .data.u32 = 1};
		int fd = guard_fd_own((int)sys_call1(SYS_epoll_create1, EPOLL_CLOEXEC));

		if (fd < 0)
			return fd;
		lv->ep_fd[i] = fd;
		if (sys_call4(SYS_epoll_ctl, fd, EPOLL_CTL_ADD, lv->uffd, &ev_uffd) < 0 ||
		    sys_call4(SYS_epoll_ctl, fd, EPOLL_CTL_ADD, lv->ctl_fd, &ev_ctl) < 0)
			return -EINVAL;
	}
	return 0;
}

static void epoll_close(struct uffd_live *lv)
{
	for (unsigned i = 0; i < lv->n_ep; i++)
		guard_fd_close(lv->ep_fd[i]);
	lv->n_ep = 0;
}

/* How idle handlers wait (handler_next): blocked in read(2) where the kernel takes RWF_NOWAIT
 * reads of a userfaultfd (its ->read_iter honours IOCB_NOWAIT), with a page to kick them; else in
 * epoll on an O_NONBLOCK userfaultfd beside a control eventfd. */
static int wait_init(struct uffd_live *lv)
{
	if (!uffd_test_force_epoll && uffd_io_nowait_reads(lv->uffd)) {
		long p = guard_vm_map(UFFD_PAGE_SIZE, 0, MAP_NORESERVE,
				      GUARD_VM_DONTFORK); /* as the probe's */

		if (!sys_is_err(p)) {
			if (uffd_io_register(lv->uffd, (uintptr_t)p, UFFD_PAGE_SIZE) == 0) {
				lv->kick_page = (char *)p;
				lv->block_read = true;
				return 0;
			}
			guard_vm_unmap((void *)p, UFFD_PAGE_SIZE); /* no kick page: epoll, then */
		}
	}
	if (sys_call3(SYS_fcntl, lv->uffd, F_SETFL, O_NONBLOCK) < 0)
		return -EINVAL;
	lv->ctl_fd = guard_fd_own(
	    (int)sys_call2(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE));
	return lv->ctl_fd < 0 ? lv->ctl_fd : epoll_init(lv);
}

static void workers_init(struct uffd_live *lv)
{
	for (unsigned i = 0; i < lv->nworkers + UFFD_EXTRA_WORKERS; i++) {
		lv->workers[i].lv = lv;
		lv->workers[i].idx = i;
		lv->workers[i].slot = -1;
	}
}

unsigned uffd_handlers_auto(void)
{
	cpu_set_t set;
	int n = 2;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	n += 2;
	return n < 3 ? 3 : n > 16 ? 16 : (unsigned)n;
}

/* The process a run starts with (or the only one: a pool of its own), as opposed to the other
 * processes of its machine (fork children, programs they exec): what is measured once per run
 * (the start-up probe: the report takes the first process's for all, core/report/stats.c) and
 * what a process that may never need it pays at once (staging THPs cleared ahead) is its alone.
 * THPEMU_IO_PID names it (thpemu run sets it to the pid it starts). A fork child is never it. */
static bool run_first(const struct uffd_live *lv)
{
	if (lv->child_of_fork)
		return false;
	return !lv->on_machine || !lv->cfg.io_pid || lv->cfg.io_pid == (uint64_t)getpid();
}

static int live_create(const struct config *cfg, const struct uffd_live *parent,
		       struct uffd_live **out, char *err, size_t errlen)
{
	struct uffd_live *lv = map_anon(sizeof(*lv));
	int rc;

	if (!lv) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	lv->cfg = *cfg;
	lv->uffd = lv->ctl_fd = lv->pagemap_fd = lv->stats_fd = -1;
	lv->child_of_fork = parent != NULL;
	/* the userfaultfd, pagemap and libunwind's pipe move to the zone under one raise of the
	 * soft limit (a constructor or the atfork child handler, where the program's threads do
	 * not run; a raw clone child's first call, where they may: a descriptor of the program's
	 * made meanwhile could take a zone number, as during any single raise) */
	guard_fd_batch_begin();

	lv->nworkers = cfg->handlers ? cfg->handlers
		       : parent	     ? parent->nworkers /* the same CPUs (no affinity read) */
				     : uffd_handlers_auto();
	lv->may_huge = cfg->policy.enabled != MM_THP_NEVER;
	/* prctl(PR_SET_THP_DISABLE)'s flags are in MMF_INIT_MASK: kept by a fork child (its
	 * parent's) and by an exec'd image (the host's, read back; 6.18 kernel/fork.c mm_init) */
	if (cfg->policy.era >= MM_ERA_6_1)
		lv->thp_disable = parent ? parent->thp_disable
					 : (uint8_t)mm_thp_disable_from_prctl(sys_call6(
					       SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, 0));
	pthread_mutex_init(&lv->mm_lock, NULL);
	pthread_mutex_init(&lv->snap_lock, NULL);
	pthread_mutex_init(&lv->census_lock, NULL);
	pthread_mutex_init(&lv->madv_lock, NULL);
	pthread_mutex_init(&lv->start_lock, NULL);
	waitq_init(&lv->wbq);
	lv->wq = &lv->wbq;
	workers_init(lv);
	rc = check_outputs(cfg, err, errlen);
	if (rc == 0)
		rc = uffd_open_fd(UFFD_FEATURE_MOVE | UFFD_FEATURE_THREAD_ID |
				      (zero_wanted(lv) ? UFFD_FEATURE_PAGEFAULT_FLAG_WP : 0),
				  &lv->features, err, errlen);
	if (rc >= 0)
		rc = guard_fd_own(
		    rc); /* every descriptor of ours lives out of the program's reach */
	if (rc < 0)
		goto destroy;
	lv->uffd = rc;
	lv->zero_wp = zero_wanted(lv) && (lv->features & UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	rc = stats_map(lv, err, errlen);
	if (rc < 0)
		goto destroy;
	stats_init(lv, parent);
	lv->pagemap_fd = guard_fd_own(
	    (int)sys_call4(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0));
	if (cfg->host_fault == CONFIG_HOST_FAULT_PTE && cfg->host_thp && lv->may_huge) {
		lv->pt_reclaim =
		    parent ? parent->pt_reclaim : uffd_pt_reclaim_works(lv->pagemap_fd) > 0;
		if (!lv->pt_reclaim && !parent)
			uffd_say_once(
			    lv, 8,
			    "--host-fault pte unavailable, thp used: an emptied 2 MiB range "
			    "took no PMD (MADV_DONTNEED frees empty page tables since Linux 6.",
			    14, " with CONFIG_PT_RECLAIM; or the host gave no THP)");
	}
	lv->stats->host_fault = lv->pt_reclaim ? CONFIG_HOST_FAULT_PTE : CONFIG_HOST_FAULT_THP;
	lv->zero_page = map_anon(UFFD_PAGE_SIZE);
	lv->zero_block = map_anon(UFFD_MTHP_MAX_BYTES);
	lv->forkcheck = forkcheck_page();
	rc = lv->zero_page && lv->zero_block && lv->forkcheck ? 0 : -ENOMEM;
	if (rc == 0)
		rc = wait_init(lv);
	if (rc == 0)
		rc = pool_init(lv, parent, err, errlen);
	if (rc == 0)
		rc = uffd_table_init(&lv->table);
	lv->table.proc_slot = (uint32_t)lv->mslot;
	if (rc == 0)
		rc = uffd_staging_init(&lv->staging, cfg->staging, lv->nworkers + 4,
				       &lv->stats->host, lv->pagemap_fd, cfg->host_thp);
	/* a fork child may exec at once, and another process of the run may never fault huge (a
	 * compiler, sha1sum): their chunks would be cleared for nothing */
	lv->staging.lazy = !run_first(lv);
	if (rc == 0)
		rc = scratch_init(lv);
	if (rc == 0)
		rc = uffd_shmem_init(lv);
	if (rc == 0 && run_first(lv)) /* the report's figure is the first process's */
		rc = uffd_probe_init(lv);
	if (rc == 0 && uffd_stallcap_start(lv) < 0)
		uffd_note(lv, "stall stacks unavailable (libunwind): stalls are only counted");
	guard_fd_batch_end(); /* before any thread of ours (the trace writer's, the handlers'): they
			       * open files while the program runs */
	if (rc == 0)
		rc = uffd_trace_start(lv, err, errlen);
	if (rc == 0)
		rc = start_threads(lv);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, errlen, "cannot start the emulator: %s", strerror(-rc));
		goto destroy;
	}
	uffd_io_start(lv);
	if (parent) {
		uffd_machine_adopt_inherited(lv, parent);
		uffd_shmem_forked(lv, parent);
	}
	uffd_live_snapshot(lv);
	*out = lv;
	return 0;

destroy:
	guard_fd_batch_end();
	uffd_live_destroy(lv);
	return rc;
}

int uffd_live_create(const struct config *cfg, struct uffd_live **out, char *err, size_t errlen)
{
	return live_create(cfg, NULL, out, err, errlen);
}

void uffd_live_destroy(struct uffd_live *lv)
{
	if (!lv)
		return;
	if (!lv->child) {
		uffd_io_stop(lv);
		close_starts(lv); /* no watchdog made after its stop */
		uffd_stallcap_stop(lv);
		stop_threads(lv);
		uffd_probe_release(lv); /* not a fork child's: the range is DONTFORK */
		uffd_trace_stop(lv);
		io_destroy(lv->io);
		lv->io = NULL;
	}
	if (lv->uffd >= 0)
		guard_fd_close(lv->uffd); /* unregisters every range and wakes any waiter */
	if (lv->on_machine && !lv->child)
		uffd_machine_leave(lv); /* the machine and its mm are the host's */
	else if (lv->mm && !lv->child && !lv->cfg.machine[0])
		mm_destroy(lv->mm);
	if (!lv->child)
		policy_plugin_unload(&lv->plugin);
	uffd_table_destroy(&lv->table);
	uffd_shmem_destroy(lv);
	if (lv->scratch_map)
		guard_vm_unmap(lv->scratch_map, lv->scratch_map_len);
	if (lv->zero_page)
		guard_vm_unmap(lv->zero_page, UFFD_PAGE_SIZE);
	if (lv->zero_block)
		guard_vm_unmap(lv->zero_block, UFFD_MTHP_MAX_BYTES);
	if (lv->forkcheck)
		guard_vm_unmap((void *)lv->forkcheck, UFFD_PAGE_SIZE);
	if (lv->kick_page && !lv->child) /* DONTFORK: not in a child */
		guard_vm_unmap(lv->kick_page, UFFD_PAGE_SIZE);
	if (lv->stats)
		guard_vm_unmap(lv->stats, lv->stats_len);
	if (lv->stats_fd >= 0)
		sys_close(lv->stats_fd);
	epoll_close(lv);
	guard_fd_close(lv->ctl_fd);
	guard_fd_close(lv->pagemap_fd);
	guard_vm_unmap(lv, sizeof(*lv));
}

int uffd_live_report(struct uffd_live *lv, FILE *f, const char *cmdline)
{
	struct uffd_stats *st = malloc(sizeof(*st));
	struct uffd_program_info prog = {.exit_status = -1, .processes = 1};
	int rc;

	if (!st)
		return -ENOMEM;
	uffd_live_stats_copy(lv, st);
	prog.cmdline = cmdline ? cmdline : st->cmdline;
	prog.stalls = uffd_stallcap_store(lv);
	prog.waits = uffd_stallcap_waits(lv);
	prog.wall_s = (double)(clock_now_ns() - st->start_mono_ns) / 1e9;
	prog.start_mono_s = (double)st->start_mono_ns / 1e9;
	rc = uffd_report_json(f, &lv->cfg, st, &prog);
	free(st);
	return rc;
}

/* Give handlers serving a fault a moment to finish it (a fault is counted before its thread is
 * woken, but what follows the wake - the trace, the PMD check - may still run); never wait long:
 * one may be stalled for seconds in compaction. */
static void wait_handlers_idle(struct uffd_live *lv, uint64_t max_ns)
{
	uint64_t deadline = clock_now_ns() + max_ns;

	for (;;) {
		bool idle = true;

		for (unsigned i = 0; i < lv->nworkers; i++)
			idle &= !__atomic_load_n(&lv->workers[i].busy, __ATOMIC_ACQUIRE);
		if (idle || clock_now_ns() >= deadline)
			return;
		sched_yield();
	}
}

static void live_exit(struct uffd_live *lv, const char *cmdline);

/* Stall events (faults or waits over the threshold) captured in this process. */
static bool stalls_to_report(struct uffd_live *lv)
{
	struct obs_stalls *f = uffd_stallcap_store(lv), *w = uffd_stallcap_waits(lv);

	return (f && obs_stalls_count(f)) || (w && obs_stalls_count(w));
}

void uffd_live_exit(struct uffd_live *lv, const char *cmdline)
{
	if (lv->child)
		return;
	/* The program's own work is over on this thread: from here on its faults are thpemu's -
	 * the reports' symbolisation, the report writers - and are served outside the emulated
	 * kernel (handler.c: own_fault, OWN_EXIT; host.exit_faults), never stalled, never in the
	 * report's faults, stalls or trace. The emulator's own threads' faults are served so at
	 * any time, not only from here (OWN_THREAD, host.own_faults). */
	__atomic_store_n(&lv->exit_tid, (int32_t)sys_gettid(), __ATOMIC_RELEASE);
	live_exit(lv, cmdline);
	obs_symbolise_end(); /* the reports are written: close the objects' files, free their tables
			      */
	/* last: the program's other threads may still be faulting (emulated, traced) */
	wait_handlers_idle(lv, 20 * 1000000ULL);
	uffd_trace_exit(lv);
}

static void live_exit(struct uffd_live *lv, const char *cmdline)
{
	char path[600];

	uffd_stallcap_exiting(lv); /* this thread's faults from here on are thpemu's own */
	wait_handlers_idle(lv, 100 * 1000000ULL);
	uffd_io_stop(lv); /* the dirtier stops with the program; writes in flight get 1 s */
	uffd_census_take(lv);
	uffd_live_snapshot(lv);
	/* the run's stall report: the first process's files (the section's figures), the others'
	 * only when they have events (a file pair cost every short process of a build 0.5 ms) */
	if (lv->cfg.run_dir[0] && (run_first(lv) || stalls_to_report(lv)))
		uffd_stallcap_write_files(lv, lv->cfg.run_dir);
	pthread_mutex_lock(&lv->snap_lock);
	lv->stats->state = UFFD_PROC_EXITED;
	pthread_mutex_unlock(&lv->snap_lock);
	if (!lv->cfg.report[0])
		return;
	uffd_expand_pid(lv->cfg.report, path, sizeof(path));
	uffd_report_write_file(lv, path, cmdline); /* whole, or an earlier file left as it was */
}

struct uffd_live *uffd_live_forked_child(struct uffd_live *lv)
{
	struct uffd_stats *priv = map_anon(lv->stats_len);
	struct uffd_live *nlv = NULL;
	char err[400] = "";

	/* the kernel reset this child's registrations (no EVENT_FORK); its pages are plain
	 * anonymous memory now. Nothing here may touch the parent's descriptors or files. */
	lv->child = true;
	uffd_own_threads_forget(); /* the parent's threads are not here; the child's register anew
				    */
	lv->io = NULL;		   /* its threads did not survive the fork; its arena is DONTFORK */
	lv->stallcap = NULL;	   /* nor did the watchdog */
	uffd_trace_forked_child(lv);
	if (priv) {
		/* the parent's counters are not the child's: only its identity is kept (the
		 * child's record starts from it), and the rest of the map is never touched */
		memcpy(priv->exe, lv->stats->exe, sizeof(priv->exe));
		memcpy(priv->comm, lv->stats->comm, sizeof(priv->comm));
		memcpy(priv->cmdline, lv->stats->cmdline, sizeof(priv->cmdline));
		priv->magic = lv->stats->magic;
		priv->version = lv->stats->version;
		priv->size = lv->stats->size;
		if (lv->cfg.run_dir[0]) /* the shared file belongs to the parent */
			guard_vm_unmap(lv->stats, lv->stats_len);
		lv->stats = priv;
	}
	/* every descriptor of ours is the parent's (its userfaultfd, the pagemap of its page
	 * tables, its io ring): the child sees only its own */
	guard_fd_close_all();
	lv->uffd = lv->ctl_fd = lv->stats_fd = lv->pagemap_fd = -1;
	lv->n_ep = 0;
	if (!lv->on_machine || lv->detached)
		return NULL; /* a pool of its own was the parent's: the child runs unmanaged */
	/* on a shared machine the child is a process of the machine like any other */
	if (live_create(&lv->cfg, lv, &nlv, err, sizeof(err)) < 0) {
		if (lv->cfg.log != CONFIG_LOG_QUIET)
			fprintf(stderr, "thpemu: fork child %d: %s; running unmanaged\n",
				(int)sys_getpid(), err);
		return NULL;
	}
	return nlv;
}

/* ---- stepping aside -------------------------------------------------------------------------- */

/* Hand every managed range back to the kernel: present pages stay as they are (the program's
 * data), missing ones become ordinary first touches, waiters retry natively. */
static void unregister_all(struct uffd_live *lv)
{
	struct uffd_table *t = &lv->table;

	pthread_rwlock_rdlock(&t->lock);
	for (unsigned i = 0; i < t->n; i++)
		uffd_io_unregister(lv->uffd, t->sorted[i]->lo, t->sorted[i]->hi - t->sorted[i]->lo);
	pthread_rwlock_unlock(&t->lock);
	if (lv->scratch_area)
		uffd_io_unregister(lv->uffd, (uintptr_t)lv->scratch_area, lv->scratch_len);
}

/* Is tid one of those in ours[], or a kernel worker of an io ring ("iou-wrk-", "iou-sqp-")? */
static bool task_is_ours(int tid, const int *ours, unsigned n)
{
	char path[48], comm[20];
	long fd, got;

	for (unsigned i = 0; i < n; i++)
		if (ours[i] == tid)
			return true;
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	fd = guard_fd_open(path); /* the program's threads run: out of their reach */
	if (fd < 0)
		return false;
	got = sys_read((int)fd, comm, sizeof(comm) - 1);
	guard_fd_close((int)fd);
	return got >= 4 && memcmp(comm, "iou-", 4) == 0;
}

/* Any of our threads still in the thread group? (pthread_join returns once a thread cleared its
 * tid, a little before the kernel takes it off the group's list; an io ring's workers leave
 * after the ring is gone.) */
static bool threads_linger(const int *ours, unsigned n)
{
	char buf[4096];
	long fd = guard_fd_open("/proc/self/task"); /* a directory: getdents64 reads it */
	bool found = false;
	long got;

	if (fd < 0)
		return false;
	while (!found && (got = sys_call3(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got && !found;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			int tid = atoi(d->name);

			found = tid > 0 && task_is_ours(tid, ours, n);
			off += d->reclen;
		}
	}
	guard_fd_close((int)fd);
	return found;
}

void uffd_live_detach(struct uffd_live *lv, const char *why)
{
	int ours[UFFD_MAX_HANDLERS + 16];
	unsigned n;
	char msg[240];

	if (lv->detached || lv->child)
		return;
	snprintf(msg, sizeof(msg),
		 "%s: the emulator stepped aside, the process runs unmanaged "
		 "from here on",
		 why);
	uffd_note(lv, msg);
	UFFD_COUNT(lv, stepped_aside);
	uffd_io_stop(lv);	/* the writer stops; writes in flight complete or are abandoned */
	guard_migrate_freeze(); /* from here on no page of the program is ever mid-migration */
	unregister_all(lv);
	uffd_machine_leave(lv); /* requests for our pages now fail; the host takes our frames */
	close_starts(lv);	/* the threads listed are all there will be */
	n = guard_thread_tids(ours, sizeof(ours) / sizeof(ours[0]));
	uffd_stallcap_stop(lv);
	obs_appstack_uninstall(); /* the program's own disposition of the signal, if it set one */
	stop_threads(lv);
	uffd_trace_stop(lv);
	io_destroy(lv->io); /* the ring, and with it its kernel workers */
	lv->io = NULL;
	uffd_live_snapshot(lv);
	epoll_close(lv);
	guard_fd_close(lv->uffd);
	guard_fd_close(lv->ctl_fd);
	guard_fd_close(lv->pagemap_fd);
	lv->uffd = lv->ctl_fd = lv->pagemap_fd = -1;
	lv->detached = true;
	for (int i = 0; i < 2000 && threads_linger(ours, n); i++) {
		struct timespec ts = {0, 1000000};

		nanosleep(&ts, NULL);
	}
	if (lv->cfg.log != CONFIG_LOG_QUIET)
		fprintf(stderr, "thpemu: %s\n", msg);
}

bool uffd_live_prctl_thp(struct uffd_live *lv, int option, long a2, long a3, long a4, long a5,
			 long *ret)
{
	const struct mm_policy *pol = &lv->cfg.policy;
	enum mm_thp_disable d =
	    (enum mm_thp_disable)__atomic_load_n(&lv->thp_disable, __ATOMIC_ACQUIRE);
	long r;
	int rc;

	if (option == PR_GET_THP_DISABLE) { /* 6.18 prctl_get_thp_disable: "1 | flags" */
		if (pol->era < MM_ERA_6_1)
			return false;
		*ret = a2 || a3 || a4 || a5 ? -EINVAL : mm_prctl_get_thp_disable(d);
		return true;
	}
	if (option != PR_SET_THP_DISABLE)
		return false;
	rc = mm_prctl_set_thp_disable(pol, (unsigned long)a2, (unsigned long)a3, (unsigned long)a4,
				      (unsigned long)a5, &d);
	r = sys_call6(SYS_prctl, PR_SET_THP_DISABLE, a2, a3, a4, a5, 0);
	if (rc == -ENOSYS) { /* a 3.x profile: the call came with Linux 3.15, after it */
		if (r == 0)
			uffd_say_once(lv, 7,
				      "PR_SET_THP_DISABLE ignored: the emulated kernel predates it "
				      "(it came with Linux 3.",
				      15, ")");
		*ret = r;
		return true;
	}
	if (rc < 0) { /* the emulated kernel refuses it, whatever the host said */
		*ret = rc;
		return true;
	}
	/* The host keeps its own flags for the memory the emulator does not manage, and carries
	 * them across exec (MMF_INIT_MASK), where the next image reads them (live_create). A
	 * host before 6.18 refuses PR_THP_DISABLE_EXCEPT_ADVISED: the emulated kernel's answer
	 * stands, for managed memory and this image only. */
	if (r < 0 && !(r == -EINVAL && a3)) {
		*ret = r; /* EINTR from mmap_write_lock_killable: nothing changed */
		return true;
	}
	if (r < 0)
		uffd_say_once(lv, 9,
			      "PR_THP_DISABLE_EXCEPT_ADVISED emulated for managed memory only: the "
			      "host kernel predates it (Linux 6.",
			      18, "), so an exec'd image does not inherit it");
	__atomic_store_n(&lv->thp_disable, (uint8_t)d, __ATOMIC_RELEASE);
	*ret = 0;
	return true;
}

void uffd_live_mlocked(struct uffd_live *lv, bool all, int flags)
{
	/* mm/mlock.c: mlockall sets VM_LOCKED on every VMA (MCL_CURRENT, populating them) and in
	 * mm->def_flags for mappings to come (MCL_FUTURE: do_mmap populates each new one, unless
	 * MCL_ONFAULT); munlockall clears both */
	if (!all || flags >= 0)
		__atomic_store_n(&lv->locks_used, true, __ATOMIC_RELEASE);
	if (all)
		__atomic_store_n(&lv->mcl_future,
				 flags >= 0 && (flags & MCL_FUTURE) && !(flags & MCL_ONFAULT),
				 __ATOMIC_RELEASE);
}

void uffd_live_set_fault_hook(struct uffd_live *lv, uffd_fault_hook_fn fn, void *arg)
{
	lv->fault_hook_arg = arg;
	__atomic_store_n(&lv->fault_hook, fn, __ATOMIC_RELEASE);
}

void uffd_live_set_copy_file(struct uffd_live *lv, uffd_copy_file_fn fn, void *arg)
{
	lv->copy_file_arg = arg;
	__atomic_store_n(&lv->copy_file, fn, __ATOMIC_RELEASE);
}

struct uffd_stats *uffd_live_stats(struct uffd_live *lv)
{
	return lv->stats;
}

const struct config *uffd_live_config(const struct uffd_live *lv)
{
	return &lv->cfg;
}

bool uffd_live_own_process(const struct uffd_live *lv)
{
	return __atomic_load_n(lv->forkcheck, __ATOMIC_RELAXED) != 0;
}
