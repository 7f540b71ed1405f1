/* Stall capture for the live emulator: a fault whose service took longer than the stall
 * threshold becomes an event with the emulated kernel's stack at the point where the handler
 * blocked and the faulting thread's own stack, as Mel Gorman's 2011 watch-dstate.pl recorded
 * /proc/PID/stack for every task in D state longer than a second.
 *
 * Handler side. The hooks in which a fault can block for long (wait_writeback: the kernel's
 * wait_on_page_writeback; writeout) capture the handler's stack with libunwind at entry (~0.2
 * us; ~40 us on a thread's first fault that blocks, whose end builds libunwind's per-thread
 * trace cache: 256 KiB no handler pays for at start-up) and keep the one of the longest block
 * of the fault, so a writeback stall shows
 * wait_on_frame_writeback < unmap_and_move < migrate_frames < compact_zone < ... A fault that
 * never blocks but runs long (compaction scanning, reclaim) is captured from the [locked] cost
 * hook once it has been in service for half the threshold, by a frame-pointer walk (libunwind
 * is never entered with the mm lock held).
 *
 * Application side. Handler threads block every signal and never wait for anyone, so a
 * watchdog thread scans the handlers' published faults; for one in service longer than half the
 * threshold it reads /proc/self/task/TID/syscall and, if the thread faulted in user mode, asks
 * it for its stack with a real-time signal (unw_init_local2 with UNW_INIT_SIGNAL_FRAME on the
 * thread itself, obs/unwind.h); for a fault taken inside a syscall it records the syscall
 * instead (a signal would make the kernel's fault retry loop spin). The answer is attached to
 * the handler's fault only if that fault is still the one in service. A handler whose block
 * lasted half the threshold asks itself, unlocked, when nobody has asked for that fault yet:
 * the watchdog is made by the background thread, whose pthread_create allocates with the
 * program's allocator and so may wait for the very handler that blocks (a process's first
 * stall had no application stack, one of four usemem processes in most demo runs). One request
 * per fault (claim_app_request). A fault the exiting thread takes inside thpemu's exit hook
 * (the reports' symbolisation allocates) would be marked own_exit: its stack is thpemu's, not
 * the program's. Such faults are no longer emulated (handler.c: own_fault, OWN_EXIT), so none
 * is; the mark stays as the check that finds none.
 *
 * Per-wait events. Every blocking hook (wait_writeback, writeout, throttle) captures at its
 * blocking point; mm then reports the wait ([locked], ops->waited -> uffd_stallcap_waited, in
 * the same thread right after it), and one of at least the threshold becomes a per-wait event
 * with that wait's own stack (not the fault's longest), the fault's thread and application
 * stack when the watchdog has it, and whose page it was. Waits of the background thread (kswapd's
 * part) and khugepaged's are events under "kswapd0" / "khugepaged" with the kind's modelled
 * kernel chain (those threads do not capture).
 *
 * Per handler a slot: `seq` is odd while a fault is in service (even between faults); the
 * watchdog publishes an application stack for fault seq s by writing its fields and then
 * app_done = s (release), and the handler reads them at the end of fault s only if app_done
 * is s (acquire). Both sides are lock-free; the handler side never allocates or blocks.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/sys.h"
#include "util/clock.h"

#if defined(__SANITIZE_THREAD__)
/* Under ThreadSanitizer, libunwind's per-thread cache destructors (uninstrumented) run after
 * TSan has torn the exiting thread down and crash it; asynchronous signal handlers are delayed
 * anyway (core/obs/README.md). So: frame-pointer handler stacks, no application stacks. */
#define STALLCAP_LIBUNWIND 0
#else
#define STALLCAP_LIBUNWIND 1
#endif

#define STALL_CAPACITY	    4096	 /* events kept per process */
#define APP_TIMEOUT_NS	    200000000ULL /* how long the watchdog waits for a thread's answer */
#define WATCH_MIN_PERIOD_NS 2000000ULL
#define WATCH_MAX_PERIOD_NS 50000000ULL

struct stall_slot {
	uint32_t seq; /* odd while a fault is in service (atomic) */
	uint64_t t0;  /* when it was read (atomic) */
	int32_t tid;  /* the faulting thread (atomic) */
	/* handler side: the handler thread only */
	bool own_exit; /* the fault came while its thread ran thpemu's exit hook (at its start) */
	uint64_t block_ns;    /* length of the block whose stack is kept */
	uint64_t block_owner; /* owner cookie of the page that block waited on (0: none) */
	bool long_captured;   /* the cost hook already captured for this fault */
	struct obs_stack handler;
	bool wait_have;		     /* wait_stack is the last block's (per-wait events) */
	struct obs_stack wait_stack; /* the handler's stack at the last blocking point */
	/* application side: the watchdog writes, publishes with app_done */
	uint32_t app_req;  /* the fault seq whose stack was asked for (atomic: claim_app_request) */
	uint32_t app_done; /* fault seq the fields below belong to (atomic) */
	uint8_t app_res;   /* enum obs_app_result */
	int32_t syscall_nr;
	char comm[OBS_COMM_LEN];
	struct obs_stack app;
};

struct uffd_stallcap {
	struct uffd_live *lv;
	struct obs_stalls *store;
	struct obs_stalls *waits; /* per-wait events (uffd_stallcap_waited) */
	uint64_t threshold_ns;
	uint64_t period_ns; /* watchdog scan period */
	pthread_t watchdog;
	bool started;
	uint32_t stop;	  /* futex word: 1 stops the watchdog */
	int32_t exit_tid; /* the thread running thpemu's exit hook, once it runs (atomic) */
	struct guard_thread gt;
	struct stall_slot slot[UFFD_MAX_HANDLERS + 1];
};

static struct stall_slot *slot_of(struct uffd_worker *w)
{
	struct uffd_stallcap *sc = w->lv->stallcap;

	if (!sc || w->idx >= w->lv->nworkers) /* not a fault handler (background, io) */
		return NULL;
	return &sc->slot[w->idx];
}

/* ---- handler side (fault path) --------------------------------------------------------------- */

/* Parse "lo-hi" at the start of a /proc/self/maps line. */
static bool parse_range(const char *line, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t v[2] = {0, 0};
	int k = 0;

	for (const char *p = line; *p && k < 2; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;

		if (d >= 0)
			v[k] = v[k] * 16 + (uintptr_t)d;
		else if (*p == '-' && k == 0)
			k = 1;
		else
			break;
	}
	*lo = v[0];
	*hi = v[1];
	return k == 1 && v[1] > v[0];
}

/* The mapping containing addr (the calling thread's stack), from /proc/self/maps with raw
 * reads: a handler thread must not allocate (pthread_getattr_np does), since the allocator's
 * memory may be managed and only handlers can serve its faults. */
static int stack_bounds(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	char buf[4096 + 1];
	size_t have = 0;
	int fd = guard_fd_open("/proc/self/maps"), rc = -ENOENT;

	if (fd < 0)
		return fd;
	for (;;) {
		long n = sys_read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n'))) {
			if (parse_range(line, lo, hi) && addr >= *lo && addr < *hi) {
				rc = 0;
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf); /* keep the partial line for the next read */
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not one we want */
	}
out:
	guard_fd_close(fd);
	return rc;
}

void uffd_stallcap_thread_init(struct uffd_worker *w, bool maps_ok)
{
	uintptr_t lo, hi;
	int here;

	if (!w->lv->stallcap)
		return;
	if (w->gt.stack) /* carved from the arena (guard_thread_create): a guard page, then it */
		obs_unwind_thread_init((char *)w->gt.stack + UFFD_PAGE_SIZE,
				       w->gt.stack_len - UFFD_PAGE_SIZE);
	else if (maps_ok && stack_bounds((uintptr_t)&here, &lo, &hi) == 0)
		obs_unwind_thread_init((void *)lo, hi - lo);
}

void uffd_stallcap_idle(struct uffd_worker *w)
{
	if (w->unwind_cold && obs_unwind_thread_warm())
		w->unwind_cold = false;
}

void uffd_stallcap_fault_begin(struct uffd_worker *w, uintptr_t addr, int tid, uint64_t t_read)
{
	struct stall_slot *s = slot_of(w);

	if (!s)
		return;
	s->block_ns = 0;
	s->block_owner = 0;
	s->long_captured = false;
	s->handler.nr = 0;
	s->handler.method = OBS_UNWIND_NONE;
	s->wait_have = false;
	/* taken at the fault's start: a thread woken before its fault ends (counted early) may be
	 * in the exit hook by then, with a fault of its own program */
	s->own_exit = tid && tid == __atomic_load_n(&w->lv->stallcap->exit_tid, __ATOMIC_ACQUIRE);
	__atomic_store_n(&s->t0, t_read, __ATOMIC_RELAXED);
	__atomic_store_n(&s->tid, tid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, s->seq | 1, __ATOMIC_RELEASE);
}

static bool claim_app_request(struct stall_slot *s, uint32_t seq);
static void request_app_stack(struct stall_slot *s, uint32_t seq);

uint64_t uffd_stallcap_blocking(struct uffd_worker *w, struct obs_stack *scratch)
{
	struct stall_slot *s = w ? slot_of(w) : NULL;

	if (!s || !(s->seq & 1))
		return 0;
	obs_stack_capture(scratch, 2); /* from the hook's caller: the mm function that blocks */
	w->unwind_cold = true;
	return clock_now_ns();
}

void uffd_stallcap_blocked(struct uffd_worker *w, struct obs_stack *scratch, uint64_t token,
			   uint64_t owner)
{
	struct stall_slot *s;
	uint64_t ns;

	if (!token)
		return;
	s = slot_of(w);
	if (!s) /* never: only a worker with a slot gets a token (uffd_stallcap_blocking) */
		return;
	ns = clock_now_ns() - token;
	s->wait_stack = *scratch; /* this wait's own, for its per-wait event (waited follows) */
	s->wait_have = true;
	if (ns >= s->block_ns) {
		s->block_ns = ns;
		s->block_owner = owner;
		s->handler = *scratch;
	}
	/* A long block whose fault nobody has asked for its stack: the watchdog does not exist yet
	 * (the background thread that makes it may itself be waiting, inside pthread_create, for a
	 * page of the program's allocator that only a handler can serve: this one, or one behind
	 * it) or has not come round. The faulting thread is still blocked in this fault (not woken
	 * yet), so ask it here, unlocked, as the watchdog would; its answer is attached to the
	 * per-wait event that follows and to the fault's own. */
	if (STALLCAP_LIBUNWIND && ns >= w->lv->stallcap->threshold_ns / 2 &&
	    __atomic_load_n(&s->app_done, __ATOMIC_ACQUIRE) != s->seq &&
	    claim_app_request(s, s->seq))
		request_app_stack(s, s->seq);
}

/* "a page written by rsync (pid 790) to r/f.tar": whose page a writeback wait was on. */
static void describe_owner(struct uffd_live *lv, uint64_t owner, char *buf, size_t len)
{
	struct machine_file f;
	uint64_t id;

	buf[0] = '\0';
	if (!(owner & MM_OWNER_FILE_BIT))
		return;
	id = MM_OWNER_FILE_ID(owner);
	if (lv->on_machine && machine_file_who(&lv->mach, id, &f))
		snprintf(buf, len, "a page written by %.15s (pid %d) to %.67s", f.comm, (int)f.pid,
			 f.path[0] ? f.path : "?");
	else if (id < IO_READER_ID_BASE)
		snprintf(buf, len, "a page written by thpemu's --dirty writer to its file %llu",
			 (unsigned long long)id);
	else
		snprintf(buf, len, "a page-cache page of file %llu", (unsigned long long)id);
}

void uffd_stallcap_long_running(struct uffd_worker *w)
{
	struct stall_slot *s = w ? slot_of(w) : NULL;

	if (!s || s->long_captured || s->handler.nr || !(s->seq & 1))
		return;
	if (clock_now_ns() - s->t0 < w->lv->stallcap->threshold_ns / 2)
		return;
	s->long_captured = true;
	/* the mm lock is held here: never libunwind, whose dl_iterate_phdr takes the loader lock a
	 * faulting application thread may hold (it would wait for a handler, which waits for us) */
	obs_stack_capture_fp(&s->handler, 3); /* past the cost hook and mm_charge */
}

/* The comm of a thread that is not a fault handler: the background thread is kswapd's part
 * (Mel Gorman's monitor saw kswapd0 sleep too), the next khugepaged's. */
static const char *worker_comm(struct uffd_worker *w)
{
	unsigned n = w->lv->nworkers;

	return w->idx == n ? "kswapd0" : w->idx == n + 1 ? "khugepaged" : "thpemu-collapse";
}

static void fill_app_side(struct uffd_stallcap *sc, struct stall_slot *s,
			  struct obs_stall_event *ev);

void uffd_stallcap_waited(struct uffd_worker *w, const struct mm_wait *wt)
{
	struct uffd_stallcap *sc = w ? w->lv->stallcap : NULL;
	struct stall_slot *s;
	struct obs_stall_event ev;

	if (!sc || !sc->waits)
		return;
	s = slot_of(w);
	if (wt->ns < sc->threshold_ns) {
		if (s)
			s->wait_have = false;
		return;
	}
	obs_stall_event_init(&ev);
	ev.t_start_ns = wt->t_start;
	ev.duration_ns = wt->ns;
	ev.wait = (uint8_t)wt->kind;
	ev.background = wt->background && w->idx == w->lv->nworkers; /* kswapd's part */
	ev.cause = (uint8_t)obs_stall_wait_cause(wt->kind);
	describe_owner(w->lv, wt->owner, ev.waited_on, sizeof(ev.waited_on));
	if (s && (s->seq & 1)) { /* a handler's wait inside a fault: the fault's thread */
		ev.addr = w->fault_addr;
		ev.tid = s->tid;
		fill_app_side(sc, s, &ev); /* its stack if it was asked, else its comm */
	} else {
		ev.tid = w->tid;
		const char *c = worker_comm(w);

		for (unsigned i = 0; c[i] && i < OBS_COMM_LEN - 1; i++)
			ev.comm[i] = c[i];
	}
	if (s && s->wait_have) {
		ev.handler = s->wait_stack;
		s->wait_have = false;
	} else { /* no capture on this thread (background): the kind's kernel chain */
		ev.handler.nr = 0;
		ev.handler.method = OBS_UNWIND_MODELLED;
	}
	obs_stalls_add(sc->waits, &ev);
}

static void fill_app_side(struct uffd_stallcap *sc, struct stall_slot *s,
			  struct obs_stall_event *ev)
{
	/* the program's thread in thpemu's exit hook (symbolising for the reports allocates, and
	 * its allocator's memory is managed): a fault of ours, whatever stack it shows */
	ev->own_exit = s->own_exit;
	if (__atomic_load_n(&s->app_done, __ATOMIC_ACQUIRE) != s->seq) {
		obs_task_comm(ev->tid, ev->comm); /* no answer for this fault: the name at least */
		return;
	}
	ev->app = s->app_res;
	ev->syscall_nr = s->syscall_nr;
	ev->app_stack = s->app;
	memcpy(ev->comm, s->comm, sizeof(ev->comm));
}

void uffd_stallcap_fault_end(struct uffd_worker *w, const struct mm_fault_rec *rec,
			     uint64_t latency_ns)
{
	struct stall_slot *s = slot_of(w);
	struct obs_stall_event ev;

	if (!s || !(s->seq & 1)) /* ended already (the fault was recorded) */
		return;
	if (rec && latency_ns >= w->lv->stallcap->threshold_ns) {
		obs_stall_event_init(&ev);
		ev.t_start_ns = s->t0;
		ev.duration_ns = latency_ns;
		ev.addr = w->fault_addr;
		ev.tid = s->tid;
		ev.cause = rec->cause;
		ev.handler = s->handler;
		describe_owner(w->lv, s->block_owner, ev.waited_on, sizeof(ev.waited_on));
		fill_app_side(w->lv->stallcap, s, &ev);
		obs_stalls_add(w->lv->stallcap->store, &ev);
	}
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* ---- the watchdog ---------------------------------------------------------------------------- */

/* One request per fault: the watchdog or, after a long block, the handler itself
 * (uffd_stallcap_blocked) takes fault seq's request; true for the one that does. */
static bool claim_app_request(struct stall_slot *s, uint32_t seq)
{
	uint32_t cur = __atomic_load_n(&s->app_req, __ATOMIC_RELAXED);

	return cur != seq && __atomic_compare_exchange_n(&s->app_req, &cur, seq, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Ask the thread of handler slot s's fault seq for its stack, and publish the answer if that
 * fault is still in service. */
static void request_app_stack(struct stall_slot *s, uint32_t seq)
{
	pid_t tid = __atomic_load_n(&s->tid, __ATOMIC_RELAXED);
	struct obs_stack st;
	long nr = -1;
	char comm[OBS_COMM_LEN] = "";
	enum obs_app_result r;

	obs_task_comm(tid, comm);
	r = obs_appstack_capture(tid, &st, &nr, APP_TIMEOUT_NS);
	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != seq)
		return; /* it finished meanwhile: the stack may be of something else */
	s->app = st;
	s->app_res = (uint8_t)r;
	s->syscall_nr = (int32_t)nr;
	memcpy(s->comm, comm, sizeof(comm));
	__atomic_store_n(&s->app_done, seq, __ATOMIC_RELEASE);
}

static void scan(struct uffd_stallcap *sc)
{
	uint64_t now = clock_now_ns();

	for (unsigned i = 0; i < sc->lv->nworkers; i++) {
		struct stall_slot *s = &sc->slot[i];
		uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

		if (!(seq & 1) || __atomic_load_n(&s->app_req, __ATOMIC_RELAXED) == seq)
			continue;
		if (now - __atomic_load_n(&s->t0, __ATOMIC_RELAXED) >= sc->threshold_ns / 2 &&
		    claim_app_request(s, seq))
			request_app_stack(s, seq);
	}
}

static void watchdog_ping(void *arg)
{
	struct uffd_stallcap *sc = arg;

	sys_futex_wake(&sc->stop, 1);
}

static void *watchdog_main(void *arg)
{
	struct uffd_stallcap *sc = arg;
	struct timespec ts = {(time_t)(sc->period_ns / 1000000000ULL),
			      (long)(sc->period_ns % 1000000000ULL)};

	uffd_tls_passthrough = 1;
	uffd_thread_started(&sc->gt);
	/* its stack's bounds from its maker, as a handler's (uffd_stallcap_thread_init), not from
	 * pthread_getattr_np, which allocates (the affinity mask) through the program's allocator:
	 * under jemalloc the watchdog's first allocation made the process an arena of its own,
	 * whose mutexes every later fork locks and unlocks (jemalloc's prefork/postfork handlers)
	 */
	if (sc->gt.stack)
		obs_unwind_thread_init((char *)sc->gt.stack + UFFD_PAGE_SIZE,
				       sc->gt.stack_len - UFFD_PAGE_SIZE);
	else
		obs_unwind_thread_init(NULL, 0);
	while (!__atomic_load_n(&sc->stop, __ATOMIC_ACQUIRE)) {
		guard_thread_sync(&sc->gt);
		scan(sc);
		sys_futex_wait(&sc->stop, 0, &ts);
	}
	uffd_thread_leave(&sc->gt);
	return NULL;
}

/* ---- set-up, reports ------------------------------------------------------------------------- */

int uffd_stallcap_start(struct uffd_live *lv)
{
	long p = guard_vm_map(sizeof(struct uffd_stallcap), 0, 0, 0);
	struct uffd_stallcap *sc;
	int rc;

	if (sys_is_err(p))
		return (int)p;
	sc = (struct uffd_stallcap *)p;
	sc->lv = lv;
	sc->threshold_ns = lv->cfg.stall_threshold_ns ? lv->cfg.stall_threshold_ns : 1;
	sc->period_ns = sc->threshold_ns / 8;
	if (sc->period_ns < WATCH_MIN_PERIOD_NS)
		sc->period_ns = WATCH_MIN_PERIOD_NS;
	if (sc->period_ns > WATCH_MAX_PERIOD_NS)
		sc->period_ns = WATCH_MAX_PERIOD_NS;
	rc = obs_stalls_create(&sc->store, STALL_CAPACITY, sc->threshold_ns, OBS_STACKS_CAPTURED);
	if (rc == 0)
		rc = obs_stalls_create_waits(&sc->waits, STALL_CAPACITY, sc->threshold_ns,
					     OBS_STACKS_CAPTURED);
	if (rc == 0 && STALLCAP_LIBUNWIND)
		rc = obs_unwind_init(lv->nworkers > 1 ? lv->nworkers - 1 : 1);
	if (rc < 0)
		goto unmap;
	lv->stallcap = sc;
	return 0; /* the watchdog is made when a fault may first stall */

unmap:
	if (sc->store)
		obs_stalls_destroy(sc->store);
	if (sc->waits)
		obs_stalls_destroy(sc->waits);
	guard_vm_unmap(sc, sizeof(*sc));
	return rc;
}

/* Made on the background thread (uffd_live_want(UFFD_TODO_WATCHDOG): a handler about to block or
 * to do compaction or reclaim, or faults of several threads), not at start: a short process
 * never had a fault long enough for it. Without it, events still get handler stacks. */
int uffd_stallcap_start_watchdog(struct uffd_live *lv)
{
	struct uffd_stallcap *sc = lv->stallcap;
	int rc;

	if (!sc || sc->started || !STALLCAP_LIBUNWIND)
		return 0;
	/* the application-stack signal is installed at the first capture (obs/appstack.c) */
	rc = guard_thread_create(&sc->watchdog, &sc->gt, watchdog_ping, sc, watchdog_main, sc,
				 "thpemu-stallwd");
	if (rc == 0)
		__atomic_store_n(&sc->started, true, __ATOMIC_RELEASE);
	return rc;
}

void uffd_stallcap_stop(struct uffd_live *lv)
{
	struct uffd_stallcap *sc = lv->stallcap;

	if (!sc || !sc->started)
		return;
	__atomic_store_n(&sc->stop, 1, __ATOMIC_RELEASE);
	sys_futex_wake(&sc->stop, 1);
	uffd_thread_join(sc->watchdog, &sc->gt);
	sc->started = false;
}

void uffd_stallcap_exiting(struct uffd_live *lv)
{
	if (lv->stallcap)
		__atomic_store_n(&lv->stallcap->exit_tid, sys_gettid(), __ATOMIC_RELEASE);
}

struct obs_stalls *uffd_stallcap_store(struct uffd_live *lv)
{
	return lv->stallcap ? lv->stallcap->store : NULL;
}

struct obs_stalls *uffd_stallcap_waits(struct uffd_live *lv)
{
	return lv->stallcap ? lv->stallcap->waits : NULL;
}

static FILE *open_in(const char *dir, const char *suffix)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%d.%s", dir, (int)getpid(), suffix);
	return fopen(path, "w");
}

void uffd_stallcap_write_files(struct uffd_live *lv, const char *dir)
{
	struct obs_stalls *st = uffd_stallcap_store(lv);
	struct json_w w;
	FILE *f;

	if (!st)
		return;
	f = open_in(dir, "stalls.json");
	if (f) {
		jw_init(&w, f, false);
		jw_obj_begin(&w, NULL);
		obs_report_stalls_pair(&w, st, uffd_stallcap_waits(lv));
		jw_obj_end(&w);
		jw_finish(&w);
		fclose(f);
	}
	f = open_in(dir, "stalls.txt");
	if (f) {
		obs_report_stalls_text_pair(f, st, uffd_stallcap_waits(lv));
		fclose(f);
	}
}
