/* Fault traces, live side: per-thread record rings and the background thread that writes them
 * to THPEMU_TRACE (the format is in core/obs/trace.h).
 *
 * Every handler thread has its own ring, and the program's threads (whose mmap/munmap/madvise
 * calls become MAP/RELEASE/ADVISE records) share one more. A ring is a bounded multi-producer
 * queue with a sequence number per slot (Vyukov's), so a producer never waits and never takes
 * a lock: a full ring drops the record and counts it. A handler's ring has one producer, so its
 * reservation never contends. Rings are mapped and populated at start (a record costs a few
 * stores on the fault path, never a page fault or a system call). The writer thread drains them
 * every 10 ms into the file with write(2). The exit hook writes what the rings hold and an END
 * record (records dropped, records written so far); the writer goes on until the process is
 * gone, so faults of its last moments (destructors, writing its report) follow the END record.
 * The file is opened O_CLOEXEC and a fork child forgets it.
 *
 * Which file: the process `thpemu run` started (THPEMU_IO_PID), or the first process to start
 * the emulator when nobody set it, writes THPEMU_TRACE; any other process (an exec'd child)
 * writes THPEMU_TRACE.PID. "%p" in the name expands to the pid.
 *
 * A trace is streamed in place (util/outfile.h: outfile_open): a process that dies without its
 * exit hook leaves what was written, without END. A trace that cannot be written (a full disk,
 * an I/O error, before its END record) is no trace to replay: tracing stops, the partial file is
 * removed, and the process says so once, on stderr and in its statistics (output_error), where
 * `thpemu run` finds it and exits 1. The program goes on, managed.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obs/trace.h"
#include "util/sys.h"
#include "util/clock.h"
#include "util/outfile.h"
#include "util/text.h"

#define RING_SLOTS_HANDLER 16384
#define RING_SLOTS_PROGRAM 8192
#define DRAIN_PERIOD_NS	   (10 * 1000000ULL)
#define WRITE_BUF_RECS	   1024

struct trace_slot {
	uint64_t seq;
	struct obs_trace_rec rec;
};

struct trace_ring {
	uint64_t enq __attribute__((aligned(64)));
	uint64_t deq __attribute__((aligned(64)));
	uint64_t dropped;
	uint32_t mask;
	struct trace_slot *slots;
};

struct uffd_tracer {
	int fd;
	uint64_t t0;
	unsigned nrings; /* handlers + 1 (the program's threads) */
	struct trace_ring *rings;
	void *map;
	size_t map_len;
	pthread_t thread;
	bool started;
	uint32_t stop;		    /* futex word: 1 = drain and exit */
	struct guard_thread gt;	    /* the writer's registration (credentials) */
	pthread_mutex_t drain_lock; /* one consumer at a time: the writer, or the exit hook */
	bool ended;		    /* the END record is written */
	uint64_t written, write_errors;
	struct uffd_stats *stats; /* output_error: where a failure is told */
	bool quiet_failure;	  /* thpemu run tells it (from stats): not on stderr too */
	struct obs_trace_rec buf[WRITE_BUF_RECS];
	char path[600];
};

/* ---- rings ------------------------------------------------------------------------------------
 */

static bool ring_put(struct trace_ring *r, const struct obs_trace_rec *rec)
{
	uint64_t pos = __atomic_load_n(&r->enq, __ATOMIC_RELAXED);

	for (;;) {
		struct trace_slot *s = &r->slots[pos & r->mask];
		uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		int64_t diff = (int64_t)(seq - pos);

		if (diff == 0) {
			if (__atomic_compare_exchange_n(&r->enq, &pos, pos + 1, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				s->rec = *rec;
				__atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
				return true;
			}
		} else if (diff < 0) {
			__atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
			return false;
		} else {
			pos = __atomic_load_n(&r->enq, __ATOMIC_RELAXED);
		}
	}
}

/* One consumer (the writer thread, or the exit hook after it stopped). */
static bool ring_get(struct trace_ring *r, struct obs_trace_rec *out)
{
	uint64_t pos = r->deq;
	struct trace_slot *s = &r->slots[pos & r->mask];

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos + 1)
		return false;
	*out = s->rec;
	__atomic_store_n(&s->seq, pos + r->mask + 1, __ATOMIC_RELEASE);
	r->deq = pos + 1;
	return true;
}

/* ---- writing -----------------------------------------------------------------------------------
 */

/* Say once, on stderr and in the statistics, that the trace at tr->path failed: why. */
static void tell_failure(struct uffd_tracer *tr, const char *why)
{
	char esc[700], msg[sizeof(tr->stats->output_error)];
	int n = snprintf(msg, sizeof(msg), "--trace (THPEMU_TRACE) '%s': %s",
			 text_escape(tr->path, esc, sizeof(esc)), why);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	if (tr->stats && !tr->stats->output_error[0])
		memcpy(tr->stats->output_error, msg, (size_t)n + 1);
	if (tr->quiet_failure)
		return;
	sys_write(2, "thpemu: ", 8);
	sys_write(2, msg, (size_t)n);
	sys_write(2, "\n", 1);
}

/* The file cannot take more (rc): stop tracing, the program goes on. Before the END record the
 * trace is incomplete: the partial file is removed and the failure told. */
static void write_failed(struct uffd_tracer *tr, int rc)
{
	char why[160];
	const char *d = strerrordesc_np(-rc);

	tr->write_errors++;
	if (!tr->ended) {
		snprintf(why, sizeof(why), "cannot be written (%s); the partial trace was removed",
			 d ? d : "error");
		outfile_remove(tr->path, tr->fd);
		tell_failure(tr, why);
	}
	guard_fd_close(tr->fd);
	tr->fd = -1;
}

static void write_out(struct uffd_tracer *tr, const void *buf, size_t len)
{
	const char *p = buf;

	while (len && tr->fd >= 0) {
		long n = sys_write(tr->fd, p, len);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			write_failed(tr, n ? (int)n : -EIO);
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

static void drain(struct uffd_tracer *tr)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tr->nrings; i++) {
		while (ring_get(&tr->rings[i], &tr->buf[n])) {
			if (++n == WRITE_BUF_RECS) {
				write_out(tr, tr->buf, n * sizeof(tr->buf[0]));
				tr->written += n;
				n = 0;
			}
		}
	}
	if (n) {
		write_out(tr, tr->buf, n * sizeof(tr->buf[0]));
		tr->written += n;
	}
}

static uint64_t dropped(const struct uffd_tracer *tr)
{
	uint64_t d = 0;

	for (unsigned i = 0; i < tr->nrings; i++)
		d += __atomic_load_n(&tr->rings[i].dropped, __ATOMIC_RELAXED);
	return d;
}

static void writer_ping(void *arg)
{
	struct uffd_tracer *tr = arg;

	sys_futex_wake(&tr->stop, 1);
}

static void *writer_main(void *arg)
{
	struct uffd_tracer *tr = arg;
	struct timespec ts = {0, (long)DRAIN_PERIOD_NS};

	uffd_tls_passthrough = 1;
	uffd_thread_started(&tr->gt);
	while (!__atomic_load_n(&tr->stop, __ATOMIC_ACQUIRE)) {
		guard_thread_sync(&tr->gt);
		sys_futex_wait(&tr->stop, 0, &ts);
		pthread_mutex_lock(&tr->drain_lock);
		drain(tr);
		pthread_mutex_unlock(&tr->drain_lock);
	}
	uffd_thread_leave(&tr->gt);
	return NULL;
}

/* ---- set-up ------------------------------------------------------------------------------------
 */

void uffd_trace_path(const struct config *cfg, char *out, size_t len)
{
	bool mine = !cfg->io_pid || cfg->io_pid == (uint64_t)getpid();
	size_t n;

	uffd_expand_pid(cfg->trace, out, len > 12 ? len - 12 : len); /* room for ".PID" */
	n = strlen(out);
	if (!mine)
		snprintf(out + n, len - n, ".%d", (int)getpid());
}

static int write_header(struct uffd_live *lv, struct uffd_tracer *tr)
{
	const struct config *c = &lv->cfg;
	char pool[24], seed[24], minr[24], hand[24], thr[24], policy[200], *hdr;
	const char *keys[] = {"policy",	    "pool_bytes", "fragment", "seed",
			      "min_region", "handlers",	  "host_thp", "stall_threshold_ns",
			      "exe",	    "cmdline",	  "zero_page"};
	const char *vals[11];
	size_t len;

	mm_policy_format(&c->policy, policy, sizeof(policy));
	snprintf(pool, sizeof(pool), "%llu", (unsigned long long)c->pool_bytes);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)c->seed);
	snprintf(minr, sizeof(minr), "%llu", (unsigned long long)c->min_region);
	snprintf(hand, sizeof(hand), "%u", lv->nworkers);
	snprintf(thr, sizeof(thr), "%llu", (unsigned long long)c->stall_threshold_ns);
	vals[0] = policy;
	vals[1] = pool;
	vals[2] = c->fragment;
	vals[3] = seed;
	vals[4] = minr;
	vals[5] = hand;
	vals[6] = c->host_thp ? "1" : "0";
	vals[7] = thr;
	vals[8] = lv->stats->exe;
	vals[9] = lv->stats->cmdline;
	vals[10] = lv->zero_wp ? "1" : "0"; /* read first touches map zero pages */
	hdr = calloc(1, OBS_TRACE_HDR_MAX);
	if (!hdr)
		return -ENOMEM;
	len = obs_trace_header(hdr, OBS_TRACE_HDR_MAX, tr->t0, clock_realtime_ns(), getpid(), keys,
			       vals, 11);
	if (len)
		write_out(tr, hdr, len);
	free(hdr);
	return len && tr->fd >= 0 ? 0 : -EIO;
}

static int map_rings(struct uffd_tracer *tr, unsigned handlers)
{
	size_t off = 0;
	long p;

	tr->nrings = handlers + 1;
	tr->map_len = (size_t)tr->nrings * sizeof(struct trace_ring);
	for (unsigned i = 0; i < tr->nrings; i++)
		tr->map_len += (i < handlers ? RING_SLOTS_HANDLER : RING_SLOTS_PROGRAM) *
			       sizeof(struct trace_slot);
	tr->map_len = (tr->map_len + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
	p = guard_vm_map(tr->map_len, 0, MAP_POPULATE, 0);
	if (sys_is_err(p))
		return (int)p;
	tr->map = (void *)p;
	tr->rings = tr->map;
	off = (size_t)tr->nrings * sizeof(struct trace_ring);
	for (unsigned i = 0; i < tr->nrings; i++) {
		struct trace_ring *r = &tr->rings[i];
		uint32_t n = i < handlers ? RING_SLOTS_HANDLER : RING_SLOTS_PROGRAM;

		r->mask = n - 1;
		r->slots = (struct trace_slot *)((char *)tr->map + off);
		for (uint32_t k = 0; k < n; k++)
			r->slots[k].seq = k;
		off += n * sizeof(struct trace_slot);
	}
	return 0;
}

static void tracer_free(struct uffd_tracer *tr)
{
	if (tr->fd >= 0)
		guard_fd_close(tr->fd);
	if (tr->map)
		guard_vm_unmap(tr->map, tr->map_len);
	guard_vm_unmap(tr, sizeof(*tr));
}

int uffd_trace_start(struct uffd_live *lv, char *err, size_t errlen)
{
	char why[700];
	struct uffd_tracer *tr;
	long p;
	int rc;

	if (!lv->cfg.trace[0])
		return 0;
	if (!lv->cfg.io_pid) { /* the first process claims the plain name, as io does */
		char pid[24];

		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("THPEMU_IO_PID", pid,
		       1); /* constructor time: no other thread reads environ */
	}
	p = guard_vm_map(sizeof(*tr), 0, 0, 0);
	if (sys_is_err(p))
		return (int)p;
	tr = (struct uffd_tracer *)p;
	tr->t0 = clock_now_ns();
	tr->stats = lv->stats;
	tr->quiet_failure = lv->cfg.run_dir[0] != '\0';
	pthread_mutex_init(&tr->drain_lock, NULL);
	uffd_trace_path(&lv->cfg, tr->path, sizeof(tr->path));
	tr->fd = outfile_open(tr->path, why, sizeof(why)); /* never through someone else's link */
	if (tr->fd < 0) {
		rc = tr->fd;
		snprintf(err, errlen, "--trace (THPEMU_TRACE): %s", why);
		goto fail;
	}
	tr->fd = guard_fd_own(tr->fd);
	if (tr->fd < 0) {
		rc = tr->fd;
		goto fail;
	}
	rc = map_rings(tr, lv->nworkers);
	if (rc == 0)
		rc = write_header(lv, tr);
	if (rc < 0)
		goto fail;
	rc = guard_thread_create(&tr->thread, &tr->gt, writer_ping, tr, writer_main, tr,
				 "thpemu-trace");
	if (rc < 0)
		goto fail;
	tr->started = true;
	__atomic_store_n(&lv->tracer, tr, __ATOMIC_RELEASE);
	return 0;

fail:
	/* no trace, but the program is managed as it would be without one */
	if (err[0]) {
		if (!lv->stats->output_error[0])
			snprintf(lv->stats->output_error, sizeof(lv->stats->output_error), "%s",
				 err);
		if (!tr->quiet_failure)
			fprintf(stderr, "thpemu: %s\n", err);
	} else if (tr->fd >= 0 || tr->write_errors) {
		snprintf(why, sizeof(why), "cannot record the trace (%s)", strerror(-rc));
		if (tr->fd >= 0)
			outfile_remove(tr->path, tr->fd);
		if (!tr->write_errors) /* write_failed said it already */
			tell_failure(tr, why);
	}
	err[0] = '\0';
	tracer_free(tr);
	return 0;
}

/* The END record: what was written and dropped up to now (drain lock held). */
static void write_end(struct uffd_live *lv, struct uffd_tracer *tr)
{
	struct obs_trace_rec end = {.type = OBS_TR_END};

	drain(tr);
	end.t_ns = clock_now_ns() - tr->t0;
	end.val = dropped(tr);
	end.val2 = tr->written;
	write_out(tr, &end, sizeof(end));
	tr->ended = true;
	if (end.val)
		uffd_say_once(lv, 5, "the trace lost ", end.val,
			      " records (rings full): replays of it are approximate");
}

void uffd_trace_exit(struct uffd_live *lv)
{
	struct uffd_tracer *tr = __atomic_load_n(&lv->tracer, __ATOMIC_ACQUIRE);

	if (!tr)
		return;
	/* the writer goes on: whatever the process still does until it is gone (destructors,
	 * the report being written) follows the END record */
	pthread_mutex_lock(&tr->drain_lock);
	if (!tr->ended)
		write_end(lv, tr);
	pthread_mutex_unlock(&tr->drain_lock);
}

void uffd_trace_stop(struct uffd_live *lv)
{
	struct uffd_tracer *tr = __atomic_exchange_n(&lv->tracer, NULL, __ATOMIC_ACQ_REL);

	if (!tr)
		return;
	if (tr->started) {
		__atomic_store_n(&tr->stop, 1, __ATOMIC_RELEASE);
		sys_futex_wake(&tr->stop, 1);
		uffd_thread_join(tr->thread, &tr->gt);
	}
	if (!tr->ended)
		write_end(lv, tr);
	else
		drain(tr);
	tracer_free(tr);
}

void uffd_trace_forked_child(struct uffd_live *lv)
{
	struct uffd_tracer *tr = lv->tracer;

	lv->tracer =
	    NULL; /* the writer thread did not survive the fork; the file is the parent's */
	if (tr && tr->fd >= 0)
		guard_fd_close(tr->fd);
}

/* ---- records -----------------------------------------------------------------------------------
 */

static uint64_t since(const struct uffd_tracer *tr, uint64_t t)
{
	return t > tr->t0 ? t - tr->t0 : 0;
}

void uffd_trace_fault(const struct uffd_worker *w, const struct uffd_fault_event *ev, bool cand,
		      unsigned decision, bool host_small)
{
	struct uffd_tracer *tr = __atomic_load_n(&w->lv->tracer, __ATOMIC_ACQUIRE);
	struct obs_trace_rec r;
	uint64_t t_mm;

	if (!tr)
		return;
	t_mm = ev->rec->t_start > ev->t_read_ns ? ev->rec->t_start - ev->t_read_ns : 0;
	r = (struct obs_trace_rec){
	    .t_ns = since(tr, ev->t_read_ns),
	    .addr = ev->addr,
	    .val = ev->latency_ns,
	    .val2 = t_mm,
	    .tid = (uint32_t)ev->tid,
	    .type = OBS_TR_FAULT,
	    .flags =
		(uint8_t)((ev->write ? OBS_TRF_WRITE : 0) | obs_trace_decision_flags(decision) |
			  (cand ? OBS_TRF_CAND : 0) | (host_small ? OBS_TRF_HOST_SMALL : 0) |
			  (ev->real_pmd > 0 ? OBS_TRF_REAL_PMD : 0) |
			  (ev->wp_zero ? OBS_TRF_WP_ZERO : 0)),
	    .cause = ev->rec->cause,
	};
	ring_put(&tr->rings[w->idx < tr->nrings - 1 ? w->idx : tr->nrings - 1], &r);
}

void uffd_trace_event(struct uffd_live *lv, unsigned type, uintptr_t addr, uint64_t len,
		      uint64_t val2, unsigned flags, unsigned advice)
{
	struct uffd_tracer *tr = __atomic_load_n(&lv->tracer, __ATOMIC_ACQUIRE);
	struct obs_trace_rec r;

	if (!tr || !len)
		return;
	r = (struct obs_trace_rec){
	    .t_ns = since(tr, clock_now_ns()),
	    .addr = addr,
	    .val = len,
	    .val2 = val2,
	    .tid = (uint32_t)sys_gettid(),
	    .type = (uint8_t)type,
	    .flags = (uint8_t)flags,
	    .advice = (uint8_t)advice,
	};
	ring_put(&tr->rings[tr->nrings - 1], &r);
}

bool uffd_tracing(const struct uffd_live *lv)
{
	return __atomic_load_n(&lv->tracer, __ATOMIC_RELAXED) != NULL;
}
