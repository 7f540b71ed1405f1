/* khugepaged in the simulated machine: one actor, the kernel thread of mm/khugepaged.c.
 *
 * The thread's loop (khugepaged -> khugepaged_do_scan, khugepaged_wait_work) is core/mm's
 * mm_khugepaged: each call runs the wake that is due (its scan visits processes through the
 * khugepaged_scan hook, env.c -> proc.c) and says how long the thread sleeps: scan_sleep after a
 * wake, alloc_sleep after a failed allocation. The actor sleeps exactly that long in virtual
 * time; a registration does not cut that sleep short (khugepaged_wait_work waits for
 * khugepaged_sleep_expire). When nothing is registered (UINT64_MAX) it parks until a fault may
 * have registered a process: __khugepaged_enter wakes khugepaged_wait when it adds the first
 * mm_slot, and proc_fault calls world_wake_khugepaged after every THP-eligible first touch (an
 * idle thread is woken, asks mm, and parks again if that fault registered nothing, e.g. under
 * enabled=never). A wake costs khugepaged's time only: its allocation, compaction and copies
 * are charged to this actor, its writeback waits park it, never the program.
 *
 * Runs only when the policy has khugepaged and never during a trace replay (run.c): the replay
 * has no simulated process to visit.
 */
#include "sim/sim_internal.h"

#include <stdint.h>

static void khugepaged_fn(struct sim_actor *a, void *arg)
{
	struct sim_world *w = arg;

	for (;;) {
		uint64_t next = mm_khugepaged(w->mm, &w->khd);

		sim_settle(a);
		if (next == UINT64_MAX) {
			w->khd_idle = true;
			sim_wait(a, &w->khd_wq, SIM_NO_TIMEOUT);
			w->khd_idle = false;
			continue;
		}
		sim_sleep(a, next ? next : 1000000); /* never spin in zero time */
	}
}

void world_wake_khugepaged(struct sim_world *w)
{
	if (w->khd_running && w->khd_idle)
		sim_wake_all(w->e, &w->khd_wq);
}

void world_start_khugepaged(struct sim_world *w)
{
	if (w->khd_running)
		return;
	sim_waitq_init(&w->khd_wq);
	if (world_spawn(w, &w->khd, "khugepaged", sim_now(w->e), khugepaged_fn, w) == 0)
		w->khd_running = true;
}
