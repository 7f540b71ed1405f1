/* core/sim khugepaged: the actor wakes when a process registers, its visits collapse a
 * process's 4 KiB ranges into huge extents (frames and page states as core/addrspace says, old
 * frames back in the pool, the counters counted), the program's touches of a range being collapsed
 * wait for the copy, an exit during a collapse waits and leaks nothing, and the underused split
 * judges subpages by what the program wrote (6.12 thp_underused at the max_ptes_none
 * boundary). */
#include "harness.h"
#include "sim/sim_internal.h"

#include <errno.h>

#define MS 1000000ULL
#define S  1000000000ULL

struct fixture {
	struct sim_config c;
	struct sim_world w;
};

static void setup(struct fixture *f, const char *policy)
{
	char err[512];

	sim_config_init(&f->c);
	ASSERT_EQ(mm_policy_parse(policy, &f->c.policy, err, sizeof(err)), 0);
	f->c.scenario = sim_scenario_find("seed-2011");
	sim_params_defaults(f->c.scenario, &f->c.params);
	f->c.pool_bytes = 64 << 20;
	ASSERT_EQ(sim_device_parse("usb2-stick-2011", &f->c.device, err, sizeof(err)), 0);
	memset(&f->w, 0, sizeof(f->w));
	ASSERT_EQ(world_init(&f->w, &f->c, err, sizeof(err)), 0);
}

static uint64_t vmstat_of(struct sim_world *w, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(w->mm, st);
	return st[s];
}

#define NEXT 4 /* extents of the test process: 8 MiB */

struct prog {
	struct sim_task task;
	struct sim_world *w;
	struct sim_proc *p;
	uint32_t pid;
	uint64_t exit_at; /* exit at the first collapse seen after this time (0: never) */
	uint64_t touch_t0, touch_t1;
	bool touched_collapsing, exited_collapsing;
	uint8_t xstate_after_touch;
};

/* Map 8 MiB whose extents already have page tables (a fallback at their first fault), fault
 * every page with 4 KiB pages, then watch for a collapse every 100 us: touch a page of the
 * range being collapsed (or exit then). */
static void prog_fn(struct sim_actor *a, void *arg)
{
	struct prog *g = arg;
	struct sim_world *w = g->w;

	g->p = proc_create(w, NEXT * MM_HPAGE_SIZE, MM_VMA_HUGEPAGE);
	g->pid = g->p->pid;
	for (uint32_t e = 0; e < NEXT; e++)
		as_xstate_set(&g->p->as, e, AS_X_SMALL); /* the THP fault fell back */
	proc_touch_range(w, &g->task, g->p, 0, g->p->npages);
	/* the fallen-back THP faults registered the process (khugepaged_enter in
	 * do_huge_pmd_anonymous_page); here the extents skipped them: register as they would */
	EXPECT_EQ(mm_khugepaged_enter(w->mm, g->pid), 0);
	world_wake_khugepaged(w);
	for (;;) {
		sim_sleep(a, 100000);
		for (uint32_t e = 0; e < NEXT; e++) {
			if (AS_X_STATE(as_xstate(&g->p->as, e)) != AS_X_COLLAPSING)
				continue;
			if (g->exit_at && sim_now(w->e) >= g->exit_at) {
				g->exited_collapsing = true;
				proc_exit(w, &g->task, g->p);
				return;
			}
			if (!g->touched_collapsing) {
				g->touched_collapsing = true;
				g->touch_t0 = task_now(&g->task);
				proc_touch_range(w, &g->task, g->p, e * MM_HPAGE_NR + 7, 1);
				g->touch_t1 = task_now(&g->task);
				g->xstate_after_touch = AS_X_STATE(as_xstate(&g->p->as, e));
			}
		}
	}
}

TEST(khugepaged_collapses_a_fallback_mapping_and_touches_wait_for_the_copy)
{
	struct fixture f;
	struct prog g = {0};
	struct mm_counts mc;
	uint64_t copy_ns;

	setup(&f, "modern-always");
	ASSERT(f.c.policy.khugepaged);
	f.c.costs.ns[SIM_COST_COPY_4K] = 10000; /* a 5 ms copy: the poller sees it */
	copy_ns = MM_HPAGE_NR * f.c.costs.ns[SIM_COST_COPY_4K];
	g.w = &f.w;
	world_start_khugepaged(&f.w);
	ASSERT(f.w.khd_running);
	ASSERT_EQ(world_spawn(&f.w, &g.task, "usemem", 0, prog_fn, &g), 0);
	/* one scan_sleep (10 s) after the registration is enough for 4 ranges (8 per wake) */
	ASSERT_EQ(sim_run(f.w.e, f.c.policy.scan_sleep_ns + 5 * S), 0);
	for (uint32_t e = 0; e < NEXT; e++) {
		uint32_t head = as_pfn(&g.p->as, e * MM_HPAGE_NR);

		EXPECT_EQ(AS_X_STATE(as_xstate(&g.p->as, e)), AS_X_HUGE);
		EXPECT_EQ(head % MM_HPAGE_NR, 0);
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
			EXPECT_EQ(as_pstate(&g.p->as, e * MM_HPAGE_NR + i), AS_P_PRESENT);
			EXPECT_EQ(as_pfn(&g.p->as, e * MM_HPAGE_NR + i), head + i);
		}
	}
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), NEXT);
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_THP_COLLAPSE_ALLOC), NEXT);
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 0);
	/* the 4 KiB frames went back: the process holds exactly its 4 huge extents */
	mm_get_counts(f.w.mm, &mc);
	EXPECT_EQ(mc.anon, NEXT * MM_HPAGE_NR);
	EXPECT_EQ(mc.anon_huge, NEXT * MM_HPAGE_NR);
	/* the touch of a collapsing range waited for the copy (it would take touch-4k alone) and
	 * found the range huge */
	EXPECT(g.touched_collapsing);
	EXPECT(g.touch_t1 - g.touch_t0 > f.c.costs.ns[SIM_COST_TOUCH_4K]);
	EXPECT(g.touch_t1 - g.touch_t0 <= copy_ns);
	EXPECT_EQ(g.xstate_after_touch, AS_X_HUGE);
	world_fini(&f.w);
}

TEST(an_exit_during_a_collapse_waits_for_it_and_leaks_nothing)
{
	struct fixture f;
	struct prog g = {0};
	struct mm_counts mc;

	setup(&f, "modern-always");
	f.c.costs.ns[SIM_COST_COPY_4K] = 10000;
	g.w = &f.w;
	g.exit_at = 1; /* at the first collapse seen */
	world_start_khugepaged(&f.w);
	ASSERT_EQ(world_spawn(&f.w, &g.task, "usemem", 0, prog_fn, &g), 0);
	ASSERT_EQ(sim_run(f.w.e, f.c.policy.scan_sleep_ns + 5 * S), 0);
	EXPECT(g.exited_collapsing);
	EXPECT(proc_lookup(&f.w, g.pid) == NULL);
	EXPECT(vmstat_of(&f.w, MM_STAT_THP_COLLAPSE_ALLOC) >= 1);
	mm_get_counts(f.w.mm, &mc);
	EXPECT_EQ(mc.anon, 0);
	EXPECT_EQ(mc.isolated, 0);
	/* the collapse in flight finished before munmap went on (mmap_lock) */
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 1);
	world_fini(&f.w);
}

TEST(khugepaged_off_never_collapses)
{
	struct fixture f;
	struct prog g = {0};

	setup(&f, "modern-always:khugepaged=no");
	ASSERT(!f.c.policy.khugepaged);
	g.w = &f.w;
	/* run.c starts the thread only with policy.khugepaged; a forced mm_khugepaged must do
	 * nothing either */
	world_start_khugepaged(&f.w);
	ASSERT_EQ(world_spawn(&f.w, &g.task, "usemem", 0, prog_fn, &g), 0);
	ASSERT_EQ(sim_run(f.w.e, 30 * S), 0);
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 0);
	EXPECT_EQ(vmstat_of(&f.w, MM_STAT_THP_COLLAPSE_ALLOC), 0);
	for (uint32_t e = 0; e < NEXT; e++)
		EXPECT_EQ(AS_X_STATE(as_xstate(&g.p->as, e)), AS_X_SMALL);
	world_fini(&f.w);
}

struct underused {
	struct sim_task task;
	struct sim_world *w;
	unsigned written;
	int rc;
	uint32_t head;
	struct mm_counts before, after;
	uint8_t xs;
	bool kept_written, freed_zero;
};

/* A huge fault, then the program writes the first `written` pages; the shrinker asks. */
static void underused_fn(struct sim_actor *a, void *arg)
{
	struct underused *u = arg;
	struct sim_world *w = u->w;
	struct sim_proc *p = proc_create(w, MM_HPAGE_SIZE, MM_VMA_HUGEPAGE);

	(void)a;
	proc_touch_range(w, &u->task, p, 0, u->written);
	if (AS_X_STATE(as_xstate(&p->as, 0)) != AS_X_HUGE) {
		u->rc = -EINVAL;
		return;
	}
	u->head = as_pfn(&p->as, 0);
	mm_get_counts(w->mm, &u->before);
	u->rc = proc_split_underused(w, &u->task, (uint64_t)p->pid << 32, u->head);
	mm_get_counts(w->mm, &u->after);
	u->xs = AS_X_STATE(as_xstate(&p->as, 0));
	u->kept_written = u->freed_zero = true;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (i < u->written)
			u->kept_written &= as_pstate(&p->as, i) == AS_P_PRESENT &&
					   as_pfn(&p->as, i) == u->head + i;
		else
			u->freed_zero &= as_pstate(&p->as, i) == AS_P_EMPTY;
	}
	/* a wrong owner or head is not this THP */
	u->rc = u->rc * 10 +
		(proc_split_underused(w, &u->task, (uint64_t)p->pid << 32 | 1, u->head) == -ENOENT);
}

static void run_underused(unsigned max_ptes_none, struct underused *u)
{
	struct fixture f;

	setup(&f, "modern-always");
	f.c.policy.max_ptes_none = max_ptes_none;
	/* world_init copied the policy into the pool: make one with this max_ptes_none */
	world_mm_destroy(&f.w);
	f.w.mmcfg.policy = f.c.policy;
	ASSERT_EQ(world_mm_create(&f.w, (char[256]){0}, 256), 0);
	u->w = &f.w;
	u->written = 40;
	ASSERT_EQ(world_spawn(&f.w, &u->task, "usemem", 0, underused_fn, u), 0);
	ASSERT_EQ(sim_run(f.w.e, S), 0);
	world_fini(&f.w);
}

TEST(underused_split_at_the_max_ptes_none_boundary)
{
	struct underused u;

	/* 40 written, 472 zero-filled: underused iff 472 > max_ptes_none (thp_underused) */
	u = (struct underused){0};
	run_underused(450, &u);
	EXPECT_EQ(u.rc, 1 * 10 + 1);
	EXPECT_EQ(u.xs, AS_X_SMALL);
	EXPECT(u.kept_written);
	EXPECT(u.freed_zero);
	EXPECT_EQ(u.before.anon - u.after.anon, MM_HPAGE_NR - 40);
	EXPECT_EQ(u.after.anon_huge, 0);

	u = (struct underused){0};
	run_underused(471, &u);
	EXPECT_EQ(u.rc, 1 * 10 + 1);

	u = (struct underused){0};
	run_underused(472, &u);
	EXPECT_EQ(u.rc, 0 * 10 + 1);
	EXPECT_EQ(u.xs, AS_X_HUGE);
	EXPECT_EQ(u.after.anon_huge, MM_HPAGE_NR);

	u = (struct underused){0};
	run_underused(511, &u); /* the default: never */
	EXPECT_EQ(u.rc, 0 * 10 + 1);
	EXPECT_EQ(u.xs, AS_X_HUGE);
}

TEST_MAIN()
