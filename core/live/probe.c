/* The emulator's own userfaultfd round trip on this machine, measured at start-up, so that a
 * report can give fault latencies net of the emulation (kernel_latency_us).
 *
 * The background thread touches UFFD_PROBES pages of a registered area of its own, one at a
 * time, timing each touch from its side (the round trip: fault entry, message, an idle handler's
 * wake-up and read, the mapping ioctl, the wake-up and the retried access). The handler that
 * reads such a message answers it as a bare handler would - UFFDIO_COPY of a zero page, nothing
 * asked of mm - and keeps its own service time (message read to ioctl return: what latency_us
 * measures for a real fault). The distributions go into the statistics; the report subtracts the
 * median service time from every latency (uffd_report_json).
 *
 * The probe never blocks a stop for long: stop_threads gives a probe under way up to
 * UFFD_PROBE_GRACE_NS to finish (a program that exits within milliseconds still gets its
 * measurement), then raises probe_stop and waits for a touch in flight (served by handlers that
 * are still running) before it stops the handlers.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <sched.h>

#include "util/sys.h"
#include "util/clock.h"

int uffd_probe_init(struct uffd_live *lv)
{
	size_t len = (size_t)UFFD_PROBES * UFFD_PAGE_SIZE;
	long p = guard_vm_map(len, 0, MAP_NORESERVE, GUARD_VM_DONTFORK);

	if (sys_is_err(p))
		return (int)p;
	sys_madvise((void *)p, len, MADV_NOHUGEPAGE);
	if (uffd_io_register(lv->uffd, (uintptr_t)p, len) < 0) {
		guard_vm_unmap((void *)p, len);
		return 0; /* no probe: reports say so (uffd_probe.probes 0) */
	}
	lv->probe_base = (uintptr_t)p;
	__atomic_store_n(&lv->probe_len, len, __ATOMIC_RELEASE);
	return 0;
}

bool uffd_probe_serve(struct uffd_worker *w, uintptr_t addr, uint64_t t_read)
{
	struct uffd_live *lv = w->lv;
	uintptr_t off = addr - lv->probe_base;
	int rc;

	if (off >= __atomic_load_n(&lv->probe_len, __ATOMIC_ACQUIRE))
		return false;
	rc = uffd_io_copy(lv->uffd, addr & ~(UFFD_PAGE_SIZE - 1), lv->zero_page, UFFD_PAGE_SIZE,
			  true, NULL);
	if (rc < 0) /* EEXIST (a duplicate) or worse: the toucher must not stay blocked */
		uffd_io_wake(lv->uffd, addr & ~(UFFD_PAGE_SIZE - 1), UFFD_PAGE_SIZE);
	__atomic_store_n(&lv->probe_svc_ns[off / UFFD_PAGE_SIZE], (clock_now_ns() - t_read) | 1,
			 __ATOMIC_RELEASE);
	return true;
}

/* Sorted in place by insertion (UFFD_PROBES values, once per process). Not qsort: glibc's
 * mallocs from 1 KiB on, and this runs on the background thread, which must not call the
 * program's allocator (jemalloc under `thpemu run`, its memory managed) any more than a handler
 * may (README.md, *How it is built*). */
static void sort_u64(uint64_t *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		uint64_t x = v[i];
		unsigned j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* min, p10, p50, p90, p99, max, mean of v[0..n) (sorted in place) */
static void quantiles(uint64_t *v, unsigned n, uint64_t q[UFFD_PROBE_Q])
{
	uint64_t sum = 0;

	sort_u64(v, n);
	for (unsigned i = 0; i < n; i++)
		sum += v[i];
	q[0] = v[0];
	q[1] = v[n / 10];
	q[2] = v[n / 2];
	q[3] = v[n * 9 / 10];
	q[4] = v[n * 99 / 100];
	q[5] = v[n - 1];
	q[6] = sum / n;
}

void uffd_probe_run(struct uffd_live *lv, struct guard_thread *gt)
{
	static uint64_t rt[UFFD_PROBES], svc[UFFD_PROBES]; /* the background thread's only */
	size_t len = __atomic_load_n(&lv->probe_len, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	if (!len)
		return;
	for (; n < UFFD_PROBES; n++) {
		volatile uint8_t *page = (volatile uint8_t *)(lv->probe_base + n * UFFD_PAGE_SIZE);
		uint64_t t0;

		/* a credential change of the program waits for this thread: apply it between
		 * touches, not after all of them */
		guard_thread_sync(gt);
		__atomic_store_n(&lv->probe_inflight, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&lv->probe_stop, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&lv->probe_inflight, 0, __ATOMIC_RELEASE);
			break;
		}
		t0 = clock_now_ns();
		*page = 1; /* blocks until a handler served it */
		rt[n] = clock_now_ns() - t0;
		__atomic_store_n(&lv->probe_inflight, 0, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < n; i++) { /* the handler writes it just after the wake-up */
		uint64_t give_up = clock_now_ns() + 1000000;

		while (!(svc[i] = __atomic_load_n(&lv->probe_svc_ns[i], __ATOMIC_ACQUIRE)) &&
		       clock_now_ns() < give_up)
			sched_yield();
	}
	__atomic_store_n(&lv->probe_len, 0, __ATOMIC_RELEASE);
	uffd_io_unregister(lv->uffd, lv->probe_base, len);
	/* the pages go back now; the range stays reserved until destroy (uffd_probe_release), so
	 * that no later mapping of the program reuses an address this thread wrote without any
	 * ordering a race detector could see (TSan reported the probe's store against a test's
	 * memset of a new mapping at the same address) */
	sys_zap((void *)lv->probe_base, len);
	if (n < UFFD_PROBES / 2)
		return; /* stopped early: too few to say anything */
	quantiles(rt, n, lv->stats->probe.rt_ns);
	quantiles(svc, n, lv->stats->probe.svc_ns);
	__atomic_store_n(&lv->stats->probe.n, n, __ATOMIC_RELEASE);
}

void uffd_probe_stop(struct uffd_live *lv)
{
	uint64_t give_up = clock_now_ns() + UFFD_PROBE_GRACE_NS;

	/* a program that ends within milliseconds would otherwise leave no measurement: let a
	 * probe under way finish (256 round trips take a few milliseconds), within a bound */
	while (__atomic_load_n(&lv->probe_len, __ATOMIC_ACQUIRE) && clock_now_ns() < give_up)
		sched_yield();
	__atomic_store_n(&lv->probe_stop, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&lv->probe_inflight, __ATOMIC_SEQ_CST))
		sched_yield();
}

void uffd_probe_release(struct uffd_live *lv)
{
	if (lv->probe_base)
		guard_vm_unmap((void *)lv->probe_base, (size_t)UFFD_PROBES * UFFD_PAGE_SIZE);
	lv->probe_base = 0;
}
