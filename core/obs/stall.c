/* The stall event store (see stall.h): preallocated, appended to lock-free from the fault path.
 *
 * Plays the part of mmtests' watch-dstate.pl, which logged every task that stayed in D state
 * longer than stall_threshold together with its /proc/PID/stack. Slots are reserved with one
 * atomic increment and published with a release store of their ready flag, so a reporter
 * running concurrently sees only complete events.
 */
#include "obs/stall.h"

#include <errno.h>
#include <string.h>

#include "obs/stall_internal.h"
#include "inprocess/guard.h"
#include "obs/usdt.h"
#include "util/sys.h"

#define LOAD(p)	  __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* Raw mmap (inside the preload library, mmap() is the shim's interposed name), marked as the
 * emulator's own memory for the census. */
static void *raw_map(size_t len)
{
	long p = guard_vm_map(len, 0, 0, 0);

	return sys_is_err(p) ? NULL : (void *)p;
}

static int create(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
		  enum obs_stacks_kind kind, bool waits)
{
	size_t len = sizeof(struct obs_stalls) + (size_t)capacity * sizeof(struct stall_slot);
	struct obs_stalls *s;

	if (!capacity || capacity > (1U << 24) || kind > OBS_STACKS_MODELLED)
		return -EINVAL;
	len = (len + 4095) & ~(size_t)4095;
	s = raw_map(len);
	if (!s)
		return -ENOMEM;
	s->map_len = len;
	s->capacity = capacity;
	s->threshold_ns = threshold_ns;
	s->kind = kind;
	s->waits = waits;
	*out = s;
	return 0;
}

int obs_stalls_create(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
		      enum obs_stacks_kind kind)
{
	return create(out, capacity, threshold_ns, kind, false);
}

int obs_stalls_create_waits(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
			    enum obs_stacks_kind kind)
{
	return create(out, capacity, threshold_ns, kind, true);
}

void obs_stalls_destroy(struct obs_stalls *s)
{
	if (s)
		guard_vm_unmap(s, s->map_len);
}

uint64_t obs_stalls_threshold(const struct obs_stalls *s)
{
	return s->threshold_ns;
}

uint64_t obs_stalls_count(const struct obs_stalls *s)
{
	return LOAD(&s->count);
}

uint64_t obs_stalls_total_ns(const struct obs_stalls *s)
{
	return LOAD(&s->total_ns);
}

uint64_t obs_stalls_max_ns(const struct obs_stalls *s)
{
	return LOAD(&s->max_ns);
}

/* Raise s->max_ns to ns (lock-free: a CAS loop that ends as soon as the stored value is
 * at least ns). */
static void raise_max(struct obs_stalls *s, uint64_t ns)
{
	uint64_t cur = LOAD(&s->max_ns);

	while (cur < ns && !__atomic_compare_exchange_n(&s->max_ns, &cur, ns, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void obs_stall_event_init(struct obs_stall_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->syscall_nr = -1;
	ev->app = OBS_APP_NONE;
	ev->wait = OBS_NO_WAIT;
}

int obs_stalls_add(struct obs_stalls *s, const struct obs_stall_event *ev)
{
	uint64_t idx;
	struct stall_slot *slot;

	if (ev->duration_ns < s->threshold_ns)
		return 1;
	THPEMU_PROBE(stall, ev->duration_ns, (int)ev->cause, ev->addr, ev->tid, (int)ev->wait);
	ADD(&s->count, 1);
	ADD(&s->total_ns, ev->duration_ns);
	raise_max(s, ev->duration_ns);
	if (ev->wait != OBS_NO_WAIT && ev->background)
		ADD(&s->background, 1);
	idx = ADD(&s->next, 1);
	if (idx >= s->capacity) {
		ADD(&s->dropped, 1);
		return -ENOSPC;
	}
	slot = &s->slots[idx];
	slot->ev = *ev;
	slot->ev.comm[OBS_COMM_LEN - 1] = '\0';
	__atomic_store_n(&slot->ready, 1, __ATOMIC_RELEASE);
	return 0;
}

/* The fields a simulator event (per fault or per wait) has in common: no stacks, the cause's
 * modelled chain. */
static void modelled_event(struct obs_stall_event *ev, uint64_t t_start_ns, uint64_t duration_ns,
			   enum mm_cause cause, const char *comm, int32_t tid)
{
	obs_stall_event_init(ev);
	ev->t_start_ns = t_start_ns;
	ev->duration_ns = duration_ns;
	ev->cause = (uint8_t)cause;
	ev->tid = tid;
	ev->handler.method = OBS_UNWIND_MODELLED;
	if (comm)
		strncpy(ev->comm, comm, OBS_COMM_LEN - 1);
}

int obs_stalls_add_modelled(struct obs_stalls *s, uint64_t t_start_ns, uint64_t duration_ns,
			    enum mm_cause cause, const char *comm, int32_t tid, uint64_t addr)
{
	struct obs_stall_event ev;

	if (duration_ns < s->threshold_ns)
		return 1;
	modelled_event(&ev, t_start_ns, duration_ns, cause, comm, tid);
	ev.addr = addr;
	return obs_stalls_add(s, &ev);
}

int obs_stalls_add_modelled_wait(struct obs_stalls *s, uint64_t t_start_ns, uint64_t duration_ns,
				 enum mm_wait_kind k, bool background, const char *comm,
				 int32_t tid)
{
	struct obs_stall_event ev;

	if (duration_ns < s->threshold_ns)
		return 1;
	modelled_event(&ev, t_start_ns, duration_ns, obs_stall_wait_cause(k), comm, tid);
	ev.wait = (uint8_t)k;
	ev.background = background;
	return obs_stalls_add(s, &ev);
}

/* Chains name the kernel's functions (3.1 call paths) that core/mm mirrors, innermost first. */
#define SLOWPATH_TAIL                                                                              \
	"__alloc_pages_slowpath", "__alloc_pages_nodemask", "alloc_pages_vma",                     \
	    "do_huge_pmd_anonymous_page", "handle_mm_fault"
#define COMPACT_TAIL                                                                               \
	"compact_zone", "compact_zone_order", "try_to_compact_pages",                              \
	    "__alloc_pages_direct_compact", SLOWPATH_TAIL
#define MIGRATE_TAIL "unmap_and_move", "migrate_pages", COMPACT_TAIL
#define RECLAIM_TAIL                                                                               \
	"shrink_page_list", "shrink_inactive_list", "shrink_zone", "do_try_to_free_pages",         \
	    "try_to_free_pages", "__alloc_pages_direct_reclaim", SLOWPATH_TAIL

static const char *const chain_none[] = {"get_page_from_freelist", "__alloc_pages_nodemask",
					 "alloc_pages_vma",	   "do_huge_pmd_anonymous_page",
					 "handle_mm_fault",	   NULL};
static const char *const chain_compact[] = {COMPACT_TAIL, NULL};
static const char *const chain_wb_wait[] = {"wait_on_frame_writeback", MIGRATE_TAIL, NULL};
static const char *const chain_writeout[] = {"writeout", MIGRATE_TAIL, NULL};
static const char *const chain_migrate[] = {"migrate_page_copy", MIGRATE_TAIL, NULL};
static const char *const chain_reclaim[] = {RECLAIM_TAIL, NULL};
static const char *const chain_reclaim_wb[] = {"wait_on_frame_writeback", RECLAIM_TAIL, NULL};
static const char *const chain_zeroing[] = {"clear_huge_page", "do_huge_pmd_anonymous_page",
					    "handle_mm_fault", NULL};

const char *const *obs_stall_modelled_stack(enum mm_cause c)
{
	switch (c) {
	case MM_CAUSE_COMPACT_ASYNC:
	case MM_CAUSE_COMPACT_SYNC_LIGHT:
	case MM_CAUSE_COMPACT_SYNC:
	case MM_CAUSE_COMPACT_THROTTLE:
		return chain_compact;
	case MM_CAUSE_COMPACT_WB_WAIT:
		return chain_wb_wait;
	case MM_CAUSE_COMPACT_WRITEOUT:
		return chain_writeout;
	case MM_CAUSE_COMPACT_MIGRATE:
		return chain_migrate;
	case MM_CAUSE_RECLAIM:
	case MM_CAUSE_RECLAIM_THROTTLE:
		return chain_reclaim;
	case MM_CAUSE_RECLAIM_WB_WAIT:
		return chain_reclaim_wb;
	case MM_CAUSE_ZEROING:
		return chain_zeroing;
	default:
		return chain_none;
	}
}

/* ---- per-wait chains: where a 3.x task slept, as /proc/PID/stack showed it ----------------- */

/* mm/filemap.c: wait_on_page_writeback -> wait_on_page_bit -> __wait_on_bit -> sleep_on_page
 * (io_schedule); the kernel's stack shows sleep_on_page innermost. */
#define PAGE_SLEEP "sleep_on_page", "__wait_on_bit", "wait_on_page_bit"
/* ->writepage (block_write_full_page -> submit_bh) sleeping for a request: block/blk-core.c
 * (3.x) blk_queue_bio -> get_request_wait (io_schedule). A writeout that did not sleep takes
 * microseconds and never makes an event. */
#define RQ_SLEEP "get_request_wait", "blk_queue_bio", "generic_make_request", "submit_bio"
/* mm/vmscan.c balance_pgdat (3.x): kswapd's reclaim loop. */
#define KSWAPD_TAIL    "balance_pgdat", "kswapd", "kthread"
#define KSWAPD_RECLAIM "shrink_page_list", "shrink_inactive_list", "shrink_zone", KSWAPD_TAIL
/* 3.3 mm/compaction.c compact_pgdat, called by balance_pgdat for high-order wakeups. */
#define KSWAPD_COMPACT "compact_zone", "compact_pgdat", KSWAPD_TAIL

/* mm/migrate.c (3.1): unmap_and_move waits on writeback in sync mode; move_to_new_page ->
 * fallback_migrate_page -> writeout (->writepage) for a dirty page without ->migratepage;
 * mm/compaction.c isolate_migratepages naps in congestion_wait while too_many_isolated;
 * mm/vmscan.c shrink_page_list waits on writeback (sync lumpy pass) or calls pageout(),
 * shrink_inactive_list naps while too_many_isolated, do_try_to_free_pages takes
 * wait_iff_congested / congestion_wait naps (HZ/10). */
static const char *const w_compact_wb[] = {PAGE_SLEEP, MIGRATE_TAIL, NULL};
static const char *const w_compact_wo[] = {
    RQ_SLEEP, "writeout", "fallback_migrate_page", "move_to_new_page", MIGRATE_TAIL, NULL};
static const char *const w_compact_iso[] = {"congestion_wait", "isolate_migratepages", COMPACT_TAIL,
					    NULL};
static const char *const w_reclaim_wb[] = {PAGE_SLEEP, RECLAIM_TAIL, NULL};
static const char *const w_reclaim_wo[] = {RQ_SLEEP, "pageout", RECLAIM_TAIL, NULL};
static const char *const w_reclaim_iso[] = {
    "congestion_wait",	 "shrink_inactive_list",	 "shrink_zone", "do_try_to_free_pages",
    "try_to_free_pages", "__alloc_pages_direct_reclaim", SLOWPATH_TAIL, NULL};
static const char *const w_reclaim_cong[] = {"congestion_wait",	  "do_try_to_free_pages",
					     "try_to_free_pages", "__alloc_pages_direct_reclaim",
					     SLOWPATH_TAIL,	  NULL};
/* kswapd's */
static const char *const k_compact_wb[] = {PAGE_SLEEP, "unmap_and_move", "migrate_pages",
					   KSWAPD_COMPACT, NULL};
static const char *const k_compact_wo[] = {
    RQ_SLEEP,	      "writeout",      "fallback_migrate_page", "move_to_new_page",
    "unmap_and_move", "migrate_pages", KSWAPD_COMPACT,		NULL};
static const char *const k_compact_iso[] = {"congestion_wait", "isolate_migratepages",
					    KSWAPD_COMPACT, NULL};
static const char *const k_reclaim_wb[] = {PAGE_SLEEP, KSWAPD_RECLAIM, NULL};
static const char *const k_reclaim_wo[] = {RQ_SLEEP, "pageout", KSWAPD_RECLAIM, NULL};
static const char *const k_reclaim_iso[] = {"congestion_wait", "shrink_inactive_list",
					    "shrink_zone", KSWAPD_TAIL, NULL};
static const char *const k_reclaim_cong[] = {"congestion_wait", KSWAPD_TAIL, NULL};
static const char *const w_unknown[] = {"?", NULL};

const char *const *obs_stall_wait_stack(enum mm_wait_kind k, bool background)
{
	static const char *const *const fault[MM_WAIT_NR] = {
	    [MM_WAIT_COMPACT_WRITEBACK] = w_compact_wb,
	    [MM_WAIT_COMPACT_WRITEOUT] = w_compact_wo,
	    [MM_WAIT_COMPACT_ISOLATED] = w_compact_iso,
	    [MM_WAIT_RECLAIM_WRITEBACK] = w_reclaim_wb,
	    [MM_WAIT_RECLAIM_WRITEOUT] = w_reclaim_wo,
	    [MM_WAIT_RECLAIM_ISOLATED] = w_reclaim_iso,
	    [MM_WAIT_RECLAIM_CONGESTED] = w_reclaim_cong,
	};
	static const char *const *const kswapd[MM_WAIT_NR] = {
	    [MM_WAIT_COMPACT_WRITEBACK] = k_compact_wb,
	    [MM_WAIT_COMPACT_WRITEOUT] = k_compact_wo,
	    [MM_WAIT_COMPACT_ISOLATED] = k_compact_iso,
	    [MM_WAIT_RECLAIM_WRITEBACK] = k_reclaim_wb,
	    [MM_WAIT_RECLAIM_WRITEOUT] = k_reclaim_wo,
	    [MM_WAIT_RECLAIM_ISOLATED] = k_reclaim_iso,
	    [MM_WAIT_RECLAIM_CONGESTED] = k_reclaim_cong,
	};

	if ((unsigned)k >= MM_WAIT_NR)
		return w_unknown;
	return background ? kswapd[k] : fault[k];
}

enum mm_cause obs_stall_wait_cause(enum mm_wait_kind k)
{
	switch (k) {
	case MM_WAIT_COMPACT_WRITEBACK:
		return MM_CAUSE_COMPACT_WB_WAIT;
	case MM_WAIT_COMPACT_WRITEOUT:
		return MM_CAUSE_COMPACT_WRITEOUT;
	case MM_WAIT_COMPACT_ISOLATED:
		return MM_CAUSE_COMPACT_THROTTLE;
	case MM_WAIT_RECLAIM_WRITEBACK:
		return MM_CAUSE_RECLAIM_WB_WAIT;
	case MM_WAIT_RECLAIM_WRITEOUT:
		return MM_CAUSE_RECLAIM;
	default:
		return MM_CAUSE_RECLAIM_THROTTLE;
	}
}
