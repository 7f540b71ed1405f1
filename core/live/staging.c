/* Staging: a few prefaulted host THPs kept ready for huge decisions.
 *
 * The kernel's do_huge_pmd_anonymous_page allocates and clears a 2 MiB folio and maps it with one
 * PMD. Here the allocation and the clearing are paid ahead of time by a refill thread
 * (MADV_POPULATE_WRITE of an empty MADV_HUGEPAGE chunk: the host allocates a THP and zeroes it,
 * checked with PAGEMAP_SCAN and, if the host gave small pages, one MADV_COLLAPSE attempt); the
 * fault pays the UFFDIO_MOVE that installs the PMD in the program, and is charged the clear it
 * did not pay (uffd_staging_zero: each 2 MiB is cleared once). The staging area is
 * MADV_DONTFORK: a fork would make its pages COW-shared and every later move would fail with
 * EBUSY.
 *
 * A chunk holds data only while a collapse copies into it; whatever then happens to it, it is
 * moved away or zapped (MADV_DONTNEED), never handed out again: a slot is populated only from
 * an empty range, so a READY chunk is the host's zeroed THP, untouched.
 *
 * When the host cannot give THPs the chunks are 512 small pages; moves still work (the program
 * then sees 4 KiB host mappings for an emulated huge extent) and host_thp_unavailable counts it.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/sys.h"

/* One PAGEMAP_SCAN of [addr, addr + len): the regions whose pages have any of the anyof
 * categories (0: every page), with the return categories, into vec. Returns their number or
 * -errno. */
static int scan(int pagemap_fd, uintptr_t addr, size_t len, struct page_region *vec, unsigned nvec,
		uint64_t anyof, uint64_t ret)
{
	struct pm_scan_arg arg = {
	    .size = sizeof(arg),
	    .start = addr,
	    .end = addr + len,
	    .vec = (uintptr_t)vec,
	    .vec_len = nvec,
	    .category_anyof_mask = anyof,
	    .return_mask = ret,
	};

	if (pagemap_fd < 0)
		return -EBADF;
	return sys_ioctl(pagemap_fd, PAGEMAP_SCAN, &arg);
}

int uffd_range_is_pmd(int pagemap_fd, uintptr_t addr, size_t len)
{
	struct page_region vec[2];
	int n = scan(pagemap_fd, addr, len, vec, 2, 0, PAGE_IS_HUGE | PAGE_IS_PRESENT);

	if (n < 0)
		return n;
	return n == 1 && vec[0].start == addr && vec[0].end == addr + len &&
	       (vec[0].categories & PAGE_IS_HUGE);
}

int uffd_range_is_empty(int pagemap_fd, uintptr_t addr, size_t len)
{
	struct page_region vec[1];
	int n = scan(pagemap_fd, addr, len, vec, 1, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		     PAGE_IS_PRESENT | PAGE_IS_SWAPPED);

	return n < 0 ? n : n == 0;
}

int uffd_range_swapped(int pagemap_fd, uintptr_t addr, size_t len, unsigned char *vec)
{
	uint64_t pm[MM_HPAGE_NR]; /* /proc/self/pagemap entries: bit 62 swapped (pagemap.rst) */
	size_t n = len / UFFD_PAGE_SIZE;
	int marked = 0;
	long got;

	if (n > MM_HPAGE_NR || pagemap_fd < 0)
		return -EINVAL;
	got = sys_call4(SYS_pread64, pagemap_fd, (long)pm, (long)(n * sizeof(pm[0])),
			(long)(addr / UFFD_PAGE_SIZE * sizeof(pm[0])));
	if (got < 0)
		return (int)got;
	for (size_t i = 0; i < (size_t)got / sizeof(pm[0]); i++)
		if (pm[i] & (1ULL << 62)) {
			vec[i] |= 1;
			marked++;
		}
	return marked;
}

/* A 2 MiB range of our own gets a page table from a 4 KiB write (MADV_NOHUGEPAGE), is emptied
 * with MADV_DONTNEED and populated again as THP-eligible: only a range whose page table went
 * (pmd_none) can take one PMD. CONFIG_PT_RECLAIM (Linux 6.14, x86-64) has mm/memory.c
 * zap_pte_range free a page table that a MADV_DONTNEED leaves empty. */
int uffd_pt_reclaim_works(int pagemap_fd)
{
	long map = guard_vm_map(2 * UFFD_HPAGE_SIZE, 0, 0, 0);
	uint8_t *a;
	int rc;

	if (sys_is_err(map))
		return 0;
	a = (uint8_t *)(((uintptr_t)map + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1));
	sys_madvise(a, UFFD_HPAGE_SIZE, MADV_NOHUGEPAGE);
	*(volatile uint8_t *)a = 1;
	sys_madvise(a, UFFD_HPAGE_SIZE, MADV_DONTNEED);
	sys_madvise(a, UFFD_HPAGE_SIZE, MADV_HUGEPAGE);
	rc = uffd_populate_chunk(pagemap_fd, a, false);
	guard_vm_unmap((void *)map, 2 * UFFD_HPAGE_SIZE);
	return rc > 0;
}

int uffd_populate_chunk(int pagemap_fd, void *chunk, bool collapse)
{
	int rc = sys_madvise(chunk, UFFD_HPAGE_SIZE, MADV_POPULATE_WRITE);

	if (rc < 0)
		return rc;
	rc = uffd_range_is_pmd(pagemap_fd, (uintptr_t)chunk, UFFD_HPAGE_SIZE);
	if (rc == 0 && collapse && sys_madvise(chunk, UFFD_HPAGE_SIZE, MADV_COLLAPSE) == 0)
		rc = uffd_range_is_pmd(pagemap_fd, (uintptr_t)chunk, UFFD_HPAGE_SIZE);
	return rc < 0 ? 0 : rc; /* unknown counts as small: never over-report real THPs */
}

static bool slot_cas(struct uffd_staging *s, unsigned i, uint8_t from, uint8_t to)
{
	return __atomic_compare_exchange_n(&s->state[i], &from, to, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

static unsigned count_state(struct uffd_staging *s, uint8_t st)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->nslots; i++)
		n += __atomic_load_n(&s->state[i], __ATOMIC_ACQUIRE) == st;
	return n;
}

/* Wake the refill thread once the ready chunks fall below half the depth; it then fills up to
 * the depth in one burst. A kick on every take cost each huge fault a futex wake and had the
 * refill (a host THP allocation and its clearing) run beside the very next faults, competing with
 * their clear and move for the CPUs, the memory bandwidth and the TLB (a move flushes on every
 * CPU the refill runs on). */
static void refill_kick(struct uffd_staging *s)
{
	if (!__atomic_load_n(&s->started, __ATOMIC_ACQUIRE)) {
		if (s->want_refill) /* made on demand: it then fills up to the depth */
			s->want_refill(s->want_arg);
		return;
	}
	if (!__atomic_load_n(&s->refilling, __ATOMIC_ACQUIRE)) {
		if (count_state(s, US_READY) * 2 >= s->depth)
			return;
		__atomic_store_n(&s->refilling, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_lock(&s->lock);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int uffd_staging_init(struct uffd_staging *s, unsigned depth, unsigned extra,
		      struct uffd_host_stats *host, int pagemap_fd, bool host_thp)
{
	long map;
	uintptr_t aligned;

	memset(s, 0, sizeof(*s));
	s->depth = depth ? depth : 1;
	s->nslots = s->depth + extra;
	s->host = host;
	s->pagemap_fd = pagemap_fd;
	s->collapse = host_thp;
	s->area_len = (size_t)s->nslots * UFFD_HPAGE_SIZE;
	s->area_map_len = s->area_len + UFFD_HPAGE_SIZE;
	map = guard_vm_map(s->area_map_len + UFFD_PAGE_SIZE, 0, MAP_NORESERVE, GUARD_VM_DONTFORK);
	if (sys_is_err(map))
		return (int)map;
	s->area_map = (void *)map;
	aligned = ((uintptr_t)map + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1);
	s->area = (uint8_t *)aligned;
	/* the per-slot bytes live just after the chunks (at least one spare page is mapped there)
	 */
	s->state = s->area + s->area_len;
	s->huge = s->state + s->nslots;
	s->zeroed = s->huge + s->nslots;
	/* without host THPs (THPEMU_HOST_THP=0) chunks are 512 small pages, as on a host that has
	 * none to give */
	sys_madvise(s->area, s->area_len, host_thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	return 0;
}

/* Populate slot i (owned: FILLING or TAKEN; its range empty) and record whether it is a real
 * THP. Every page the populate gives is a new zeroed one (or a hole, if it failed part way). */
static void slot_fill(struct uffd_staging *s, unsigned i)
{
	int rc = uffd_populate_chunk(s->pagemap_fd, uffd_staging_addr(s, (int)i), s->collapse);

	s->huge[i] = rc > 0;
	s->zeroed[i] = 1;
	uffd_stat_add(&s->host->staging_refills, 1);
	if (rc <= 0)
		uffd_stat_add(&s->host->host_thp_unavailable, 1);
}

/* thpemu's own clear of slot i's chunk, timed: the cost charged to the faults whose chunk the
 * host zeroed, a moving average of thpemu's clears of THP chunks - in practice the one
 * measure_clear makes, as a THP chunk is otherwise never cleared here: a preempted memset
 * there sets a high charge for the process's run. */
static uint64_t slot_clear(struct uffd_staging *s, unsigned i)
{
	uint64_t t0 = clock_now_ns(), dt, old;

	memset(uffd_staging_addr(s, (int)i), 0, UFFD_HPAGE_SIZE);
	dt = clock_now_ns() - t0;
	s->zeroed[i] = 1;
	uffd_stat_add(&s->host->huge_clears, 1);
	if (!s->huge[i]) /* 512 small pages: not what a THP's clear costs */
		return dt;
	old = __atomic_load_n(&s->clear_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->clear_ns, old ? (3 * old + dt) / 4 : (dt ? dt : 1), __ATOMIC_RELAXED);
	return dt;
}

uint64_t uffd_staging_zero(struct uffd_staging *s, int slot)
{
	uint64_t cost = __atomic_load_n(&s->clear_ns, __ATOMIC_RELAXED);

	if (!s->zeroed[slot] || !cost || !s->huge[slot]) {
		slot_clear(s, (unsigned)slot);
		return 0;
	}
	uffd_stat_add(&s->host->huge_clears_skipped, 1);
	uffd_stat_add(&s->host->huge_clear_charged_ns, cost);
	return cost;
}

void uffd_staging_written(struct uffd_staging *s, int slot)
{
	if (slot >= 0)
		s->zeroed[slot] = 0;
}

/* What a clear costs here, measured once, off the fault path, at the end of the first fill
 * burst: on the chunk filled first (the lowest ready THP slot), whose lines the later fills
 * have pushed out of the caches as a fault's chunk is. A clear right after the host's populate
 * finds the chunk in the cache and took a third of a fault's clear (31-41 us against 125). */
static void measure_clear(struct uffd_staging *s)
{
	if (__atomic_load_n(&s->clear_ns, __ATOMIC_RELAXED))
		return;
	for (unsigned i = 0; i < s->nslots; i++) {
		bool huge;

		if (!slot_cas(s, i, US_READY, US_FILLING))
			continue;
		huge = s->huge[i];
		if (huge)
			slot_clear(s, i);
		__atomic_store_n(&s->state[i], US_READY, __ATOMIC_RELEASE);
		if (huge)
			return;
	}
}

static void refill_ping(void *arg)
{
	struct uffd_staging *s = arg;

	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* While a handler migrates program pages, a fill on another CPU makes every UFFDIO_MOVE a
 * TLB-shootdown IPI to it: the refill thread runs in the program's mm, and x86 flushes every CPU
 * where that mm is loaded and not lazy (flush_tlb_mm_range). On the 2-vCPU VM each IPI is a VM
 * exit and a wait for the other vCPU; migrations took 5-12 us a page with a fill running beside
 * them instead of 3.7-5, and the fill itself ran 5x longer. So a fill waits until no migration
 * has happened for this long - unless no chunk is ready at all, when a huge fault would pay for
 * one. */
#define UFFD_STAGING_QUIET_NS 1000000ULL

void uffd_staging_quiet(struct uffd_staging *s, uint64_t now)
{
	__atomic_store_n(&s->quiet_until, now + UFFD_STAGING_QUIET_NS, __ATOMIC_RELAXED);
}

/* Wait out a migration burst (see UFFD_STAGING_QUIET_NS). */
static void refill_wait_quiet(struct uffd_staging *s)
{
	for (;;) {
		uint64_t now = clock_now_ns(),
			 q = __atomic_load_n(&s->quiet_until, __ATOMIC_RELAXED);
		struct timespec ts = {0, 0};

		if (q <= now || !count_state(s, US_READY) ||
		    __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) || guard_thread_pending(&s->gt))
			return;
		ts.tv_nsec = (long)(q - now);
		nanosleep(&ts, NULL);
	}
}

static void *refill_main(void *arg)
{
	struct uffd_staging *s = arg;

	uffd_tls_passthrough = 1;
	uffd_thread_started(&s->gt);
	for (;;) {
		int pick = -1;

		guard_thread_sync(&s->gt);
		pthread_mutex_lock(&s->lock);
		if (count_state(s, US_READY) >= s->depth) /* full: sleep until below half */
			__atomic_store_n(&s->refilling, false, __ATOMIC_RELEASE);
		while (!s->stop &&
		       (count_state(s, US_READY) >= s->depth ||
			!__atomic_load_n(&s->refilling, __ATOMIC_ACQUIRE) ||
			(s->lazy && !__atomic_load_n(&s->wanted, __ATOMIC_ACQUIRE))) &&
		       !guard_thread_pending(&s->gt))
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
		if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			break;
		refill_wait_quiet(s);
		for (unsigned i = 0; i < s->nslots && pick < 0; i++)
			if (slot_cas(s, i, US_FREE, US_FILLING))
				pick = (int)i;
		if (pick < 0) {
			/* every slot ready or held by a handler: wait for a release */
			struct timespec ts = {0, 1000000};

			nanosleep(&ts, NULL);
			continue;
		}
		slot_fill(s, (unsigned)pick);
		__atomic_store_n(&s->state[pick], US_READY, __ATOMIC_RELEASE);
		if (count_state(s, US_READY) >= s->depth)
			measure_clear(s);
	}
	uffd_thread_leave(&s->gt);
	return NULL;
}

int uffd_staging_start(struct uffd_staging *s)
{
	int rc;

	__atomic_store_n(&s->refilling, true, __ATOMIC_RELEASE); /* the first fill */
	rc = guard_thread_create(&s->thread, &s->gt, refill_ping, s, refill_main, s,
				 "thpemu-refill");

	if (rc == 0)
		__atomic_store_n(&s->started, true, __ATOMIC_RELEASE);
	return rc;
}

void uffd_staging_destroy(struct uffd_staging *s)
{
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		uffd_thread_join(s->thread, &s->gt);
		s->started = false;
	}
	if (s->area_map) {
		guard_vm_unmap(s->area_map, s->area_map_len + UFFD_PAGE_SIZE);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
	}
	memset(s, 0, sizeof(*s));
}

int uffd_staging_take(struct uffd_staging *s)
{
	__atomic_store_n(&s->wanted, true, __ATOMIC_RELEASE);
	for (unsigned spins = 0;; spins++) {
		for (unsigned i = 0; i < s->nslots; i++) {
			if (slot_cas(s, i, US_READY, US_TAKEN)) {
				refill_kick(s);
				return (int)i;
			}
		}
		/* nothing ready: pay the allocation on the fault path, as the kernel does */
		for (unsigned i = 0; i < s->nslots; i++) {
			if (slot_cas(s, i, US_FREE, US_TAKEN)) {
				uffd_stat_add(&s->host->staging_misses, 1);
				slot_fill(s, i);
				refill_kick(s);
				return (int)i;
			}
		}
		if (spins > 100000)
			return -EAGAIN;
		sched_yield(); /* all slots in flight: one is about to come back */
	}
}

void uffd_staging_release(struct uffd_staging *s, int slot, bool intact)
{
	if (slot < 0)
		return;
	intact = intact && s->zeroed[slot]; /* data in it: back to the host, never handed out */
	if (!intact)
		sys_zap(uffd_staging_addr(s, slot), UFFD_HPAGE_SIZE);
	__atomic_store_n(&s->state[slot], intact ? US_READY : US_FREE, __ATOMIC_RELEASE);
	refill_kick(s);
}

void uffd_staging_spent(struct uffd_staging *s, int slot)
{
	__atomic_store_n(&s->state[slot], US_FREE, __ATOMIC_RELEASE);
	refill_kick(s);
}
