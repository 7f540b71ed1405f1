/* The live mm environment: real time, a real lock, real work behind each decision.
 *
 *   now             CLOCK_MONOTONIC
 *   lock/unlock     one mutex shared by the handler threads, the background thread and the
 *                   program's munmap/madvise (mm's own concurrency contract, mm.h)
 *   wait_writeback  wait_on_page_writeback(): a hashed futex wait queue (io/waitq.h) woken by
 *                   the writeback engine when the frame's I/O completes; the handler's stack is
 *                   captured here for stall reports (stallcap.c). On a machine the engine is
 *                   the host's: the wait ends when the host is gone (machine_host_gone)
 *   migrate_anon    a real unmap / copy / remap of the program's page (migrate.c)
 *   split_underused the THP shrinker's underused split: zero-filled subpages really unmapped
 *                   (split.c); another process's THP is split by that process (its mailbox)
 *   copy_file_page  the page-cache arena's copy (core/io), when io runs in this process; without
 *                   it the emulated file pages carry no data and migrate as metadata
 *   writeout        writeout(): core/io starts writeback of the page (without io: -EBUSY, the
 *                   dirty page is not migratable); on a machine the host's io is asked (a
 *                   host that is gone: -EBUSY at once); its stack is captured like a wait's
 *   throttle        congestion_wait / wait_iff_congested: a futex sleep until the writeback
 *                   engine completes a request with its queue uncongested, or the timeout
 *                   (io_wait_uncongested); its stack is captured like a wait's
 *   waited          every completed wait: one of at least the stall threshold becomes a
 *                   per-wait stall event with the stack of its blocking point (stallcap.c)
 *   clear_huge      clear_huge_page(): a zeroed 2 MiB staging THP, kept for the materialising
 *                   move: the host's populate zeroed it (charged at the cost of a clear measured
 *                   here), else a memset (staging.c uffd_staging_zero)
 *   alloc_cost      nothing to charge (live, the real work is its own cost); a long-running
 *                   fault's stack is captured here for stall reports
 *   khugepaged_scan a khugepaged visit of this process: the collapse walker (collapse.c)
 *   meta_alloc/free mm's frame descriptors and indexes: a raw private anonymous NORESERVE
 *                   mapping (never the program's allocator, never a managed region), whose
 *                   pages the host kernel supplies when mm first writes them, so a 64 GiB pool
 *                   costs nothing at start-up; munmap at the end
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "io/rqshare.h"
#include "util/sys.h"
#include "util/clock.h"
#include "obs/usdt.h"

#define HOST_CHECK_NS (100 * 1000000ULL) /* a wait on the host's work looks at the host */

static uint64_t env_now(void *priv, void *call)
{
	return clock_now_ns();
}

static void env_lock(void *priv)
{
	struct uffd_live *lv = priv;

	if (lv->on_machine)
		machine_lock(&lv->mach);
	else
		pthread_mutex_lock(&lv->mm_lock);
}

static void env_unlock(void *priv)
{
	struct uffd_live *lv = priv;

	if (lv->on_machine)
		machine_unlock(&lv->mach);
	else
		pthread_mutex_unlock(&lv->mm_lock);
}

/* wait_on_page_writeback on a machine: only the host's flusher ends writeback, so the wait
 * goes in slices and ends when the host is gone (the page stays under writeback, as after a
 * timeout: -ETIMEDOUT), however long the caller would have waited. */
static int machine_wait_writeback(struct uffd_live *lv, uint32_t pfn, uint64_t timeout_ns)
{
	uint64_t end = timeout_ns ? clock_now_ns() + timeout_ns : UINT64_MAX;

	for (;;) {
		uint64_t now = clock_now_ns();
		int rc;

		if (machine_host_gone(&lv->mach) || now >= end)
			return -ETIMEDOUT;
		rc = io_wait_writeback(lv->wq, lv->mm, pfn,
				       end - now < HOST_CHECK_NS ? end - now : HOST_CHECK_NS);
		if (rc != -ETIMEDOUT)
			return rc;
	}
}

/* The machine's host is gone: nothing it did not finish (writeback, a writeout) ever will. */
static bool host_gone(const struct uffd_live *lv)
{
	return lv->on_machine && machine_host_gone(&lv->mach);
}

static int env_wait_writeback(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	struct uffd_live *lv = priv;
	struct obs_stack st;
	uint64_t token, owner, t0;
	int rc;

	if (host_gone(lv)) /* no wait, and no stack for one: reclaim meets such pages by the
			    * hundred on every fault */
		return -ETIMEDOUT;
	token = uffd_stallcap_blocking(call, &st); /* the blocking point's stack */
	owner = mm_frame_owner_peek(lv->mm, pfn);  /* whose page (for the report) */
	uffd_handlers_cover(call);		   /* other faults must not wait behind this one */
	t0 = clock_now_ns();

	THPEMU_PROBE(wb_wait_begin, pfn, owner);
	if (lv->on_machine)
		rc = machine_wait_writeback(lv, pfn, timeout_ns);
	else
		rc = io_wait_writeback(lv->wq, lv->mm, pfn, timeout_ns);
	THPEMU_PROBE(wb_wait_end, pfn, rc, clock_now_ns() - t0);
	(void)t0; /* without probes */
	uffd_stallcap_blocked(call, &st, token, owner);
	return rc;
}

static bool host_gone_cb(void *arg)
{
	return host_gone(arg);
}

/* writeout() on a machine: with the machine's 3.x request list, get_request_wait in this
 * thread first (block/blk-core.c, 3.2: ->writepage's submit_bio sleeps in the writer's own
 * context until a completion frees a request, one sleeper per request, FIFO), then the host
 * starts writeback of the page with the request taken (MACHINE_WRITEOUT_HELD). mm reports the
 * hook's time, the sleep included, as the compact-writeout / reclaim-writeout wait. */
static int machine_writeout(struct uffd_live *lv, void *call, uint64_t owner, uint32_t pfn)
{
	static __thread struct rql_ioc ioc; /* this task's io_context: its batch */
	int rc;

	if (!lv->rqs) {
		rc = uffd_machine_request(lv, call, 0, MACHINE_REQ_WRITEOUT, owner, pfn, 0);
		return rc == -ENOENT ? -EBUSY : rc; /* the host is gone: nobody writes it */
	}
	if (rqs_get(lv->rqs, RQL_ASYNC, &ioc, RQS_WRITEOUT, HOST_CHECK_NS, host_gone_cb, lv, NULL) <
	    0)
		return -EBUSY; /* the host is gone */
	rc = uffd_machine_request(lv, call, 0, MACHINE_REQ_WRITEOUT, owner, pfn,
				  MACHINE_WRITEOUT_HELD);
	if (rc == -EBUSY) /* withdrawn before the host took it: the request is still ours */
		rqs_put(lv->rqs, RQL_ASYNC, -1, NULL);
	/* -EAGAIN: the host took the request but not the page (no longer dirty, say) */
	return rc == -ENOENT || rc == -EAGAIN ? -EBUSY : rc;
}

static int env_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	struct uffd_live *lv = priv;
	struct obs_stack st;
	uint64_t token;
	int rc;

	if (host_gone(lv))
		return -EBUSY; /* nobody writes it: a dirty page that cannot be written */
	token = uffd_stallcap_blocking(call, &st); /* writeout's own stack */
	uffd_handlers_cover(call);
	if (lv->on_machine) /* the machine's flusher runs in the host */
		rc = machine_writeout(lv, call, owner, pfn);
	else
		rc = lv->io ? io_writeout_wait(lv->io, owner, pfn, RQS_WRITEOUT, NULL) : -EBUSY;
	uffd_stallcap_blocked(call, &st, token, owner);
	return rc;
}

/* congestion_wait / wait_iff_congested: the writeback engine's queue (io_wait_uncongested).
 * Without an engine in this process (a machine's host runs it, or no --dirty), there is no
 * congestion to see: wait_iff_congested returns at once, congestion_wait sleeps its timeout
 * (nothing completes to wake it). */
static int env_throttle(void *priv, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
			bool iff_congested)
{
	struct uffd_live *lv = priv;
	struct obs_stack st;
	uint64_t token;

	if (iff_congested && (!lv->io || !io_congested(lv->io)))
		return 0;
	token = uffd_stallcap_blocking(call, &st); /* the nap's own stack */
	uffd_handlers_cover(call);
	if (lv->io) {
		io_wait_uncongested(lv->io, timeout_ns, iff_congested);
	} else {
		struct timespec ts = {(time_t)(timeout_ns / 1000000000ULL),
				      (long)(timeout_ns % 1000000000ULL)};

		sys_call2(SYS_nanosleep, &ts, NULL);
	}
	uffd_stallcap_blocked(call, &st, token, 0);
	return 0;
}

/* bdi_write_congested: the writeback engine's queue (none in this process: never). */
static bool env_congested(void *priv, void *call)
{
	struct uffd_live *lv = priv;

	(void)call;
	return lv->io && io_congested(lv->io);
}

static void env_waited(void *priv, void *call, const struct mm_wait *w)
{
	THPEMU_PROBE(wait, (int)w->kind, w->ns, w->pfn, (int)w->background);
	uffd_stallcap_waited(call, w);
}

static int env_migrate_anon(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct uffd_live *lv = priv;
	unsigned slot = MACHINE_OWNER_SLOT(owner);
	int rc;

	if (lv->on_machine && slot != (unsigned)lv->mslot) /* another process's page: ask it */
		rc =
		    uffd_machine_request(lv, call, (int)slot, MACHINE_REQ_MIGRATE, owner, from, to);
	else
		rc = uffd_migrate_page(call, owner, from, to);
	THPEMU_PROBE(migrate_page, from, to, owner, rc, 0);
	return rc;
}

/* The modern era's batch: this process's pages in uffd_migrate_batch calls, another process's
 * each through its mailbox as above. */
static void env_migrate_anon_batch(void *priv, void *call, unsigned n, const uint64_t *owner,
				   const uint32_t *from, const uint32_t *to, int *ret)
{
	struct uffd_live *lv = priv;
	uint64_t own[UFFD_SCRATCH_PAGES];
	uint32_t f[UFFD_SCRATCH_PAGES], t[UFFD_SCRATCH_PAGES];
	int r[UFFD_SCRATCH_PAGES];
	unsigned at[UFFD_SCRATCH_PAGES], k;

	if (!lv->on_machine) {
		uffd_migrate_batch(call, n, owner, from, to, ret);
		for (unsigned i = 0; i < n; i++)
			THPEMU_PROBE(migrate_page, from[i], to[i], owner[i], ret[i], 0);
		return;
	}
	for (unsigned i = 0; i < n;) {
		for (k = 0; i < n && k < UFFD_SCRATCH_PAGES; i++) {
			if (MACHINE_OWNER_SLOT(owner[i]) != (unsigned)lv->mslot) {
				ret[i] = env_migrate_anon(priv, call, owner[i], from[i], to[i]);
				continue;
			}
			own[k] = owner[i];
			f[k] = from[i];
			t[k] = to[i];
			at[k++] = i;
		}
		uffd_migrate_batch(call, k, own, f, t, r);
		for (unsigned j = 0; j < k; j++) {
			ret[at[j]] = r[j];
			THPEMU_PROBE(migrate_page, f[j], t[j], own[j], r[j], 0);
		}
	}
}

/* The THP shrinker's underused split: by the process whose THP it is (split.c). Another
 * process's is asked through its mailbox like a migration; no answer in time is a busy THP. */
static int env_split_underused(void *priv, void *call, uint64_t extent_owner, uint32_t head)
{
	struct uffd_live *lv = priv;
	unsigned slot = MACHINE_OWNER_SLOT(extent_owner);
	int rc;

	if (!lv->on_machine || slot == (unsigned)lv->mslot)
		return uffd_split_underused(call, extent_owner, head);
	rc = uffd_machine_request(lv, call, (int)slot, MACHINE_REQ_SPLIT, extent_owner, head, 0);
	return rc == -EBUSY ? -EAGAIN : rc;
}

static int env_copy_file_page(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct uffd_live *lv = priv;
	int rc;

	if (lv->on_machine) /* the page-cache arena is in the machine's segment */
		rc = uffd_machine_copy_file(lv, from, to);
	else if (!lv->copy_file)
		rc = 0;
	else
		rc = lv->copy_file(lv->copy_file_arg, owner, from, to);
	THPEMU_PROBE(migrate_page, from, to, owner, rc, 1);
	return rc;
}

/* mm's tracepoints (compaction.h, migrate.h names) as USDT probes. */
static void env_trace(void *priv, void *call, const struct mm_trace *ev)
{
	switch (ev->kind) {
	case MM_TRACE_COMPACTION_BEGIN:
		THPEMU_PROBE(compaction_begin, (int)ev->d, ev->order, ev->a, ev->b);
		break;
	case MM_TRACE_COMPACTION_END:
		THPEMU_PROBE(compaction_end, (int)ev->d, ev->order, ev->a, ev->b);
		break;
	case MM_TRACE_MIGRATEPAGES:
		THPEMU_PROBE(migrate_pages, ev->a, ev->b);
		break;
	case MM_TRACE_DEFERRED: /* compaction_deferred() said skip: considered, defer_shift */
		THPEMU_PROBE(compaction_deferred, ev->order, ev->a, ev->b);
		break;
	case MM_TRACE_DEFER_COMPACTION: /* defer_compaction() after a failure */
		THPEMU_PROBE(defer_compaction, ev->order, ev->a, ev->b);
		break;
	default:
		break;
	}
}

static uint64_t env_clear_huge(void *priv, void *call, uint32_t head, uint64_t extent_owner)
{
	struct uffd_live *lv = priv;
	struct uffd_worker *w = call;
	uint64_t ahead = 0;

	if (w->slot < 0)
		w->slot = uffd_staging_take(&lv->staging);
	if (w->slot >= 0)
		ahead = uffd_staging_zero(&lv->staging, w->slot);
	w->clear_ahead_ns += ahead;
	return ahead;
}

static void env_alloc_cost(void *priv, void *call, enum mm_cost what, uint64_t n)
{
	if (what < MM_COST_SCAN_PFN)
		return; /* a fault's fixed cost, a buddy operation: nothing that can last */
	uffd_handlers_cover(call); /* compaction or reclaim: faults must not wait behind it */
	uffd_stallcap_long_running(call); /* a long compaction or reclaim pass: where is it? */
}

/* khugepaged visits this process (its own pool: as_id 0, on khugepaged's thread). On a machine
 * the host runs khugepaged and its hook asks the owner through the mailbox (machine.c). */
static int env_khugepaged_scan(void *priv, void *call, uint32_t as_id, uint64_t *addr,
			       unsigned budget, bool *done)
{
	struct uffd_live *lv = priv;

	if (lv->on_machine || as_id != 0 || !call)
		return -ENOENT;
	return uffd_khugepaged_visit(call, addr, budget, done);
}

static void *env_meta_alloc(void *priv, size_t len)
{
	long p = guard_vm_map(len, 0, MAP_NORESERVE, 0); /* thpemu's own, as the census counts it */

	return sys_is_err(p) ? NULL : (void *)p;
}

static void env_meta_free(void *priv, void *p, size_t len)
{
	guard_vm_unmap(p, len);
}

const struct mm_env_ops uffd_env_ops = {
    .now = env_now,
    .lock = env_lock,
    .unlock = env_unlock,
    .wait_writeback = env_wait_writeback,
    .migrate_anon = env_migrate_anon,
    .migrate_anon_batch = env_migrate_anon_batch,
    .copy_file_page = env_copy_file_page,
    .clear_huge = env_clear_huge,
    .alloc_cost = env_alloc_cost,
    .writeout = env_writeout,
    .trace = env_trace,
    .meta_alloc = env_meta_alloc,
    .meta_free = env_meta_free,
    .khugepaged_scan = env_khugepaged_scan,
    .split_underused = env_split_underused,
    .throttle = env_throttle,
    .waited = env_waited,
    .congested = env_congested,
};
