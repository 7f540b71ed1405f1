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
#include "util/sys.h"

#define LOAD(p)	  __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* Raw mmap (inside the preload library, mmap() is the shim's interposed name), marked as the
 * emulator's own memory for the census. */
static void *raw_map(size_t len)
{
	long p = sys_mmap_own(len, 0);

	return sys_is_err(p) ? NULL : (void *)p;
}

int obs_stalls_create(struct obs_stalls **out, unsigned capacity, uint64_t threshold_ns,
		      enum obs_stacks_kind kind)
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
	*out = s;
	return 0;
}

void obs_stalls_destroy(struct obs_stalls *s)
{
	if (s)
		sys_munmap(s, s->map_len);
}

uint64_t obs_stalls_threshold(const struct obs_stalls *s)
{
	return s->threshold_ns;
}

void obs_stall_event_init(struct obs_stall_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->syscall_nr = -1;
	ev->app = OBS_APP_NONE;
}

int obs_stalls_add(struct obs_stalls *s, const struct obs_stall_event *ev)
{
	uint64_t idx;
	struct stall_slot *slot;

	if (ev->duration_ns < s->threshold_ns)
		return 1;
	ADD(&s->count, 1);
	ADD(&s->total_ns, ev->duration_ns);
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

int obs_stalls_add_modelled(struct obs_stalls *s, uint64_t t_start_ns, uint64_t duration_ns,
			    enum mm_cause cause, const char *comm, int32_t tid, uint64_t addr)
{
	struct obs_stall_event ev;

	if (duration_ns < s->threshold_ns)
		return 1;
	obs_stall_event_init(&ev);
	ev.t_start_ns = t_start_ns;
	ev.duration_ns = duration_ns;
	ev.cause = (uint8_t)cause;
	ev.tid = tid;
	ev.addr = addr;
	ev.handler.method = OBS_UNWIND_MODELLED;
	if (comm)
		strncpy(ev.comm, comm, OBS_COMM_LEN - 1);
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
