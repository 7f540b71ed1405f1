/* core/sim machine level: a writeback wait ends exactly when the device completes the request
 * carrying the frame (the queue decides, nothing is fixed), bounded waits time out, and the
 * owner side of migration handles an owner exiting during the copy (mm.h's rule). */
#include "harness.h"
#include "mm/internal.h" /* pageblock_mt */
#include "sim/sim_internal.h"

#include <errno.h>

struct fixture {
	struct sim_config c;
	struct sim_world w;
};

static void setup_policy(struct fixture *f, const char *policy, const char *device)
{
	char err[512];

	sim_config_init(&f->c);
	ASSERT_EQ(mm_policy_parse(policy, &f->c.policy, err, sizeof(err)), 0);
	f->c.scenario = sim_scenario_find("seed-2011");
	sim_params_defaults(f->c.scenario, &f->c.params);
	f->c.pool_bytes = 64 << 20;
	ASSERT_EQ(sim_device_parse(device, &f->c.device, err, sizeof(err)), 0);
	memset(&f->w, 0, sizeof(f->w));
	ASSERT_EQ(world_init(&f->w, &f->c, err, sizeof(err)), 0);
}

static void setup(struct fixture *f, const char *device)
{
	setup_policy(f, "linux-3.1", device);
}

static uint32_t pfn_of(struct sim_world *w, uint32_t id, uint32_t index)
{
	uint32_t pfn;
	bool created;

	if (mm_pagecache_get(w->mm, MM_OWNER_FILE(id, index), false, &pfn, &created, NULL))
		return MM_NO_PFN;
	mm_pagecache_put(w->mm, pfn, false);
	return pfn;
}

struct wb_case {
	struct sim_task task;
	struct sim_world *w;
	uint64_t t_submit, t_first, t_last, t_timeout;
	int rc_first, rc_last, rc_timeout;
	bool first_still_wb, last_still_wb;
};

static void wb_actor(struct sim_actor *a, void *arg)
{
	struct wb_case *k = arg;
	struct sim_world *w = k->w;
	uint32_t id = file_new(w, 64), first, last;

	for (uint32_t i = 0; i < 64; i++)
		file_write_page(w, &k->task, id, i);
	sim_settle(a);
	first = pfn_of(w, id, 0);
	last = pfn_of(w, id, 63);
	k->t_submit = sim_now(w->e);
	w->fl.p.background_ratio = 0; /* write everything: 30 + 30 + 4 pages */
	w->fl.p.dirty_ratio = 1;
	flusher_kick(w);
	k->rc_timeout = dev_wait_writeback(w, &k->task, last, 10000000);
	k->t_timeout = sim_now(w->e);
	k->rc_first = dev_wait_writeback(w, &k->task, first, SIM_NO_TIMEOUT);
	k->t_first = sim_now(w->e);
	k->first_still_wb = mm_frame_under_writeback(w->mm, first);
	k->rc_last = dev_wait_writeback(w, &k->task, last, SIM_NO_TIMEOUT);
	k->t_last = sim_now(w->e);
	k->last_still_wb = mm_frame_under_writeback(w->mm, last);
}

TEST(writeback_wait_ends_when_the_queue_completes_the_request)
{
	struct fixture f;
	struct wb_case k = {0};
	/* 1 ms setup + bytes at 5 MB/s, one slot, no jitter, no flash GC */
	const uint64_t req30 = 1000000 + 30 * 4096 * 200; /* 200 ns per byte at 5 MB/s */
	const uint64_t req4 = 1000000 + 4 * 4096 * 200;

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	f.c.stall_threshold_ns = 15000000; /* 15 ms: the two full waits count, the timeout not */
	k.w = &f.w;
	ASSERT_EQ(world_spawn(&f.w, &k.task, "writer", 0, wb_actor, &k), 0);
	ASSERT_EQ(sim_run(f.w.e, 10000000000ULL), 0);
	EXPECT_EQ(f.w.fl.reqs, 3);
	EXPECT_EQ(k.rc_timeout, -ETIMEDOUT);
	EXPECT_EQ(k.t_timeout, k.t_submit + 10000000);
	EXPECT_EQ(k.rc_first, 0);
	EXPECT_EQ(k.t_first, k.t_submit + req30);
	EXPECT(!k.first_still_wb);
	EXPECT_EQ(k.rc_last, 0);
	EXPECT_EQ(k.t_last, k.t_submit + 2 * req30 + req4); /* behind the two requests ahead */
	EXPECT(!k.last_still_wb);
	/* every wait above was outside compaction: counted as a reclaim-path wait */
	EXPECT_EQ(f.w.wb_reclaim.count, 3);
	EXPECT_EQ(f.w.wb_reclaim.over, 2);
	EXPECT_EQ(f.w.wb_reclaim.max_ns, k.t_last - k.t_first);
	EXPECT_EQ(f.w.wb_compact.count, 0);
	world_fini(&f.w);
}

/* The throttle hook (congestion_wait / wait_iff_congested) and the per-wait report. With one
 * request allowed in flight (3.x: nr_requests 1, so the flusher, a batcher, gets one and sleeps
 * for the next) the queue is congested while it is at the device: wait_iff_congested
 * returns at once on an idle queue, a nap shorter than the request times out, a nap on the
 * congested queue ends exactly when the request completes (clear_bdi_congested), a congestion
 * nap without congestion waits for the next completion. */
struct nap_case {
	struct sim_task task;
	struct sim_world *w;
	uint64_t t_submit, t_iff_idle, t_short, t_woken, t_next;
	bool congested_at_submit;
};

static void nap_actor(struct sim_actor *a, void *arg)
{
	struct nap_case *k = arg;
	struct sim_world *w = k->w;
	uint32_t id = file_new(w, 64);
	uint64_t t0;

	for (uint32_t i = 0; i < 64; i++)
		file_write_page(w, &k->task, id, i);
	sim_settle(a);
	t0 = sim_now(w->e);
	dev_throttle(w, &k->task, 100000000, true); /* idle queue: no nap */
	k->t_iff_idle = sim_now(w->e) - t0;
	w->fl.q.nr_requests = 1; /* the modern era's bound */
	rql_init(&w->rl, 1);	 /* 3.x: congested from 1 request, uncongested below 1 */
	w->fl.p.background_ratio = 0;
	w->fl.p.dirty_ratio = 1;
	k->t_submit = sim_now(w->e);
	flusher_kick(w);
	k->congested_at_submit = sim_env_ops.congested(w, NULL);
	dev_throttle(w, &k->task, 1000000, false); /* 1 ms: shorter than the request */
	k->t_short = sim_now(w->e);
	dev_throttle(w, &k->task, 10000000000ULL, true); /* congested: until it completes */
	k->t_woken = sim_now(w->e);
	dev_throttle(w, &k->task, 10000000000ULL, false); /* the next completion */
	k->t_next = sim_now(w->e);
}

TEST(throttle_naps_end_at_a_completion_on_an_uncongested_queue_or_the_timeout)
{
	struct fixture f;
	struct nap_case k = {0};
	const uint64_t req30 = 1000000 + 30 * 4096 * 200; /* 5 MB/s, 1 ms setup */

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	k.w = &f.w;
	ASSERT_EQ(world_spawn(&f.w, &k.task, "writer", 0, nap_actor, &k), 0);
	ASSERT_EQ(sim_run(f.w.e, 10000000000ULL), 0);
	EXPECT_EQ(k.t_iff_idle, 0);
	EXPECT(k.congested_at_submit);
	EXPECT_EQ(k.t_short, k.t_submit + 1000000);
	EXPECT_EQ(k.t_woken, k.t_submit + req30);
	EXPECT_EQ(k.t_next, k.t_submit + 2 * req30);
	EXPECT_EQ(f.w.fl.throttles, 3); /* the idle wait_iff_congested did not nap */
	world_fini(&f.w);
}

TEST(waits_of_at_least_the_threshold_are_per_wait_events)
{
	struct fixture f;
	struct sim_task t = {0};
	struct mm_wait wt = {.kind = MM_WAIT_COMPACT_WRITEBACK, .t_start = 5, .pfn = MM_NO_PFN};

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	snprintf(t.comm, sizeof(t.comm), "usemem");
	wt.ns = f.c.stall_threshold_ns - 1;
	sim_env_ops.waited(&f.w, &t, &wt);
	EXPECT_EQ(obs_stalls_count(f.w.waits), 0);
	wt.ns = f.c.stall_threshold_ns;
	sim_env_ops.waited(&f.w, &t, &wt);
	wt.kind = MM_WAIT_RECLAIM_CONGESTED;
	wt.background = true;
	wt.ns = 3 * f.c.stall_threshold_ns;
	sim_env_ops.waited(&f.w, &f.w.bg, &wt);
	EXPECT_EQ(obs_stalls_count(f.w.waits), 2);
	EXPECT_EQ(obs_stalls_max_ns(f.w.waits), 3 * f.c.stall_threshold_ns);
	EXPECT_EQ(obs_stalls_total_ns(f.w.waits), 4 * f.c.stall_threshold_ns);
	world_fini(&f.w);
}

struct merge_case {
	struct sim_task task;
	struct sim_world *w;
	uint64_t t_submit, t_done[3];
};

/* Three single-page writeouts of adjacent file pages while the device is busy with another
 * request: the I/O scheduler back-merges them into one request (elv_merge, up to max_sectors),
 * so all three complete together. */
static void merge_actor(struct sim_actor *a, void *arg)
{
	struct merge_case *k = arg;
	struct sim_world *w = k->w;
	uint32_t busy = file_new(w, 16), id = file_new(w, 8), pfns[16], pfn[3];

	for (uint32_t i = 0; i < 16; i++) {
		file_write_page(w, &k->task, busy, i);
		pfns[i] = pfn_of(w, busy, i);
		ASSERT_EQ(mm_writeback_begin_one(w->mm, pfns[i]), 0);
	}
	for (uint32_t i = 0; i < 3; i++) {
		file_write_page(w, &k->task, id, i);
		pfn[i] = pfn_of(w, id, i);
	}
	sim_settle(a);
	k->t_submit = sim_now(w->e);
	ASSERT_EQ(dev_submit(w, &k->task, SIO_WRITEBACK, dev_offset_of(w, MM_OWNER_FILE(busy, 0)),
			     pfns, 16, true, NULL),
		  0);
	for (uint32_t i = 0; i < 3; i++)
		ASSERT_EQ(sim_env_ops.writeout(w, &k->task, MM_OWNER_FILE(id, i), pfn[i]), 0);
	for (uint32_t i = 0; i < 3; i++) {
		dev_wait_writeback(w, &k->task, pfn[i], SIM_NO_TIMEOUT);
		k->t_done[i] = sim_now(w->e);
	}
}

TEST(adjacent_writeouts_merge_in_the_io_scheduler)
{
	struct fixture f;
	struct merge_case k = {0};

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	k.w = &f.w;
	ASSERT_EQ(world_spawn(&f.w, &k.task, "writer", 0, merge_actor, &k), 0);
	ASSERT_EQ(sim_run(f.w.e, 10000000000ULL), 0);
	EXPECT_EQ(f.w.elv.merged, 2);
	EXPECT_EQ(f.w.elv.dispatched, 2);
	EXPECT_EQ(f.w.fl.writeout_pages, 3);
	EXPECT_EQ(k.t_done[0], k.t_done[2]);
	/* behind the 16-page request: 2 ms of setup and 19 pages at 5 MB/s */
	EXPECT_EQ(k.t_done[2], k.t_submit + 2000000 + 19 * 4096 * 200);
	world_fini(&f.w);
}

/* 3.x request allocation (block/blk-core.c get_request_wait): with nr_requests 4, a writer
 * that fills the queue batches on to 3/2 of it; later writers sleep, and each wakes, in
 * arrival order, when a completion takes the count below the limit. */
struct rq_case {
	struct sim_task filler, b, c;
	struct sim_world *w;
	uint32_t files[8];
	uint64_t t_first, t_b, t_c;
	bool congested_full;
};

static void rq_write_one(struct rq_case *k, struct sim_task *t, unsigned i)
{
	struct sim_world *w = k->w;

	ASSERT_EQ(
	    sim_env_ops.writeout(w, t, MM_OWNER_FILE(k->files[i], 0), pfn_of(w, k->files[i], 0)),
	    0);
}

static void rq_filler(struct sim_actor *a, void *arg)
{
	struct rq_case *k = arg;

	(void)a;
	for (unsigned i = 0; i < 8; i++) /* one dirty page per file, files apart on the device */
		file_write_page(k->w, &k->filler, k->files[i], 0);
	for (unsigned i = 0; i < 6; i++) { /* 3 below the limit, the 4th fills it, 2 batched */
		rq_write_one(k, &k->filler, i);
		if (i == 0)
			k->t_first = sim_now(k->w->e); /* at the idle device at once */
	}
	k->congested_full = sim_env_ops.congested(k->w, NULL);
}

static void rq_b(struct sim_actor *a, void *arg)
{
	struct rq_case *k = arg;

	(void)a;
	rq_write_one(k, &k->b, 6);
	k->t_b = sim_now(k->w->e);
}

static void rq_c(struct sim_actor *a, void *arg)
{
	struct rq_case *k = arg;

	(void)a;
	rq_write_one(k, &k->c, 7);
	k->t_c = sim_now(k->w->e);
}

TEST(writeouts_sleep_for_a_request_and_wake_in_arrival_order)
{
	struct fixture f;
	struct rq_case k = {0};
	const uint64_t one =
	    1000000 + 4096 * 200; /* a one-page request: 1 ms setup, 4 KiB at 5 MB/s */

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	flusher_init(&f.w, 4, 30);
	ASSERT(f.w.rq_model); /* linux-3.1 */
	k.w = &f.w;
	for (unsigned i = 0; i < 8; i++)
		k.files[i] = file_new(&f.w, 2);
	ASSERT_EQ(world_spawn(&f.w, &k.filler, "filler", 0, rq_filler, &k), 0);
	ASSERT_EQ(world_spawn(&f.w, &k.b, "b", 1000000, rq_b, &k), 0);
	ASSERT_EQ(world_spawn(&f.w, &k.c, "c", 1500000, rq_c, &k), 0);
	ASSERT_EQ(sim_run(f.w.e, 10000000000ULL), 0);
	EXPECT(k.congested_full);
	EXPECT_EQ(f.w.rl.st.count_max[RQL_ASYNC], 6);
	EXPECT_EQ(f.w.rq_wait.count, 2);
	/* 6 -> 3 after three completions: b wakes and takes one (4); the fourth wakes c */
	EXPECT_LT(k.t_first, 1000000);
	EXPECT_EQ(k.t_b, k.t_first + 3 * one);
	EXPECT_EQ(k.t_c, k.t_first + 4 * one);
	EXPECT_EQ(f.w.elv.merged, 0);
	EXPECT_EQ(f.w.rl.count[RQL_ASYNC], 0);
	EXPECT(!sim_env_ops.congested(&f.w, NULL));
	world_fini(&f.w);
}

struct race {
	struct sim_task victim_task, other_task;
	struct sim_world *w;
	struct sim_proc *victim, *other;
	uint32_t victim_pid;
	int rc_racing, rc_clean;
	uint32_t other_pfn_after;
	struct mm_counts after_exit;
};

#define FAKE_TARGET 4242 /* proc_migrate only updates the page table: any pfn will do */

static void sleep_until(struct sim_actor *a, uint64_t t)
{
	uint64_t now = sim_actor_now(a);

	sim_sleep(a, t > now ? t - now : 0);
}

/* The owner: faults 16 pages, exits at 1 ms (during the copy of page 5). */
static void victim_fn(struct sim_actor *a, void *arg)
{
	struct race *r = arg;

	r->victim = proc_create(r->w, 64 << 10, MM_VMA_NOHUGEPAGE);
	r->victim_pid = r->victim->pid;
	proc_touch_range(r->w, &r->victim_task, r->victim, 0, r->victim->npages);
	sleep_until(a, 1000000);
	proc_exit(r->w, &r->victim_task, r->victim);
	mm_get_counts(r->w->mm, &r->after_exit);
}

/* The compactor: the racing migration, then a clean one of another process's page. */
static void other_fn(struct sim_actor *a, void *arg)
{
	struct race *r = arg;
	struct sim_world *w = r->w;

	r->other = proc_create(w, 64 << 10, MM_VMA_NOHUGEPAGE);
	proc_touch_range(w, &r->other_task, r->other, 0, r->other->npages);
	sleep_until(a, 500000);
	r->rc_racing =
	    proc_migrate(w, &r->other_task, (uint64_t)r->victim_pid << 32 | 5,
			 as_pfn(&r->victim->as, 5), FAKE_TARGET); /* copy: 0.5 ms .. 1.5 ms */
	r->rc_clean = proc_migrate(w, &r->other_task, (uint64_t)r->other->pid << 32 | 3,
				   as_pfn(&r->other->as, 3), FAKE_TARGET);
	r->other_pfn_after = as_pfn(&r->other->as, 3);
	as_pfn_set(&r->other->as, 3, MM_NO_PFN); /* nothing moved in mm: forget the fake target */
}

struct bdev_case {
	struct sim_task task;
	struct sim_world *w;
	uint32_t bdev, reg;
};

static void bdev_actor(struct sim_actor *a, void *arg)
{
	struct bdev_case *k = arg;
	struct sim_world *w = k->w;

	(void)a;
	k->bdev = file_new(w, 32);
	file_get(w, k->bdev)->bdev = true;
	k->reg = file_new(w, 32);
	for (uint32_t i = 0; i < 32; i++) {
		file_read_page(w, &k->task, k->bdev, i, false);
		file_read_page(w, &k->task, k->reg, i, false);
	}
}

/* writeback-cp's reader copies a block device (cp /dev/sda /dev/null): that page cache is
 * GFP_USER (3.1 fs/block_dev.c bdget), so it fills unmovable pageblocks, apart from a regular
 * file's movable pages read alongside. */
TEST(a_block_device_read_fills_unmovable_pageblocks)
{
	struct fixture f;
	struct bdev_case k = {0};

	setup(&f, "usb2-stick-2011:jitter=0,gc-au=0");
	k.w = &f.w;
	ASSERT_EQ(world_spawn(&f.w, &k.task, "cp", 0, bdev_actor, &k), 0);
	ASSERT_EQ(sim_run(f.w.e, 10000000000ULL), 0);
	for (uint32_t i = 0; i < 32; i++) {
		uint32_t b = pfn_of(&f.w, k.bdev, i), r = pfn_of(&f.w, k.reg, i);

		ASSERT_NE(b, MM_NO_PFN);
		ASSERT_NE(r, MM_NO_PFN);
		EXPECT_EQ(pageblock_mt(f.w.mm, b), MM_MT_UNMOVABLE);
		EXPECT_EQ(pageblock_mt(f.w.mm, r), MM_MT_MOVABLE);
	}
	world_fini(&f.w);
}

TEST(owner_exiting_during_a_migration_copy_gets_enoent_and_leaves_the_frame_to_mm)
{
	struct fixture f;
	struct race r = {0};

	setup(&f, "usb2-stick-2011");
	f.c.costs.ns[SIM_COST_MIGRATE_PAGE] = 1000000;
	r.w = &f.w;
	ASSERT_EQ(world_spawn(&f.w, &r.victim_task, "usemem", 0, victim_fn, &r), 0);
	ASSERT_EQ(world_spawn(&f.w, &r.other_task, "kcompactd", 0, other_fn, &r), 0);
	ASSERT_EQ(sim_run(f.w.e, 3000000), 0);
	EXPECT_EQ(r.rc_clean, 0);
	EXPECT_EQ(r.other_pfn_after, FAKE_TARGET);
	EXPECT_EQ(r.rc_racing, -ENOENT);
	/* the exiting owner freed 15 of its 16 frames (the one being copied is mm's to free);
	 * the other process still holds its 16 */
	EXPECT_EQ(r.after_exit.anon, 1 + 16);
	/* once the copy returned, the exited process is gone */
	EXPECT(proc_lookup(&f.w, r.victim_pid) == NULL);
	world_fini(&f.w);
}

/* The block layer's scheduler is the policy's iosched: CFQ for the 3.x profiles (their
 * default), mq-deadline's rules for the modern ones, deadline when a 3.x policy asks. */
TEST(the_block_layer_schedules_with_the_policys_iosched)
{
	static const struct {
		const char *policy;
		enum ios_kind kind;
	} cases[] = {
	    {"linux-3.1", IOS_CFQ},
	    {"linux-3.2", IOS_CFQ},
	    {"linux-3.3", IOS_CFQ},
	    {"linux-3.2:iosched=deadline", IOS_DEADLINE},
	    {"thp-always/always", IOS_DEADLINE},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture f;

		setup_policy(&f, cases[i].policy, "usb2-stick-2011");
		EXPECT_EQ(f.w.sched.kind, cases[i].kind);
		world_fini(&f.w);
	}
}

/* Zero pages in a simulated process (proc.c): a program that reads memory before writing it
 * gets the era's zero decisions, and its first write is a fault of its own. */
static uint64_t vmstat_of(struct sim_world *w, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(w->mm, st);
	return st[s];
}

struct zero_case {
	struct sim_task task;
	struct sim_world *w;
	enum mm_vma_advice advice;
	struct sim_zero_stats after_read, after_write, after_reread, after_rewrite;
	uint64_t zero_alloc, thp_alloc, split_pmd;
	uint64_t anon_after_read, anon_after_write;
	uint8_t x0_read, x1_read, x0_write, x1_write, p0_write, p1_write, p5_reread;
};

static void zero_actor(struct sim_actor *a, void *arg)
{
	struct zero_case *k = arg;
	struct sim_world *w = k->w;
	struct sim_proc *p = proc_create(w, 4 << 20, k->advice); /* two whole extents */
	struct mm_counts c;

	(void)a;
	proc_read_range(w, &k->task, p, 0, p->npages); /* reads every page of both extents */
	k->after_read = w->zero;
	k->zero_alloc = vmstat_of(w, MM_STAT_THP_ZERO_PAGE_ALLOC);
	k->thp_alloc = vmstat_of(w, MM_STAT_THP_FAULT_ALLOC);
	k->x0_read = AS_X_STATE(as_xstate(&p->as, 0));
	k->x1_read = AS_X_STATE(as_xstate(&p->as, 1));
	mm_get_counts(w->mm, &c);
	k->anon_after_read = c.anon;
	proc_touch_range(w, &k->task, p, 0, 1); /* writes page 0 */
	k->after_write = w->zero;
	k->split_pmd = vmstat_of(w, MM_STAT_THP_SPLIT_PMD);
	k->x0_write = AS_X_STATE(as_xstate(&p->as, 0));
	k->x1_write = AS_X_STATE(as_xstate(&p->as, 1));
	k->p0_write = AS_P_STATE(as_pstate(&p->as, 0));
	k->p1_write = AS_P_STATE(as_pstate(&p->as, 1));
	mm_get_counts(w->mm, &c);
	k->anon_after_write = c.anon;
	proc_read_range(w, &k->task, p, 5, 1); /* maps the zero page already: no fault */
	k->after_reread = w->zero;
	k->p5_reread = AS_P_STATE(as_pstate(&p->as, 5));
	proc_touch_range(w, &k->task, p, 5, 1); /* its first write */
	k->after_rewrite = w->zero;
	proc_exit(w, &k->task, p);
}

static void run_zero_case(struct fixture *f, struct zero_case *k, const char *policy,
			  enum mm_vma_advice advice, bool zero_page)
{
	setup_policy(f, policy, "usb2-stick-2011");
	f->c.zero_page = zero_page;
	memset(k, 0, sizeof(*k));
	k->w = &f->w;
	k->advice = advice;
	ASSERT_EQ(world_spawn(&f->w, &k->task, "reader", 0, zero_actor, k), 0);
	ASSERT_EQ(sim_run(f->w.e, 10000000000ULL), 0);
}

/* 6.12 (mm/huge_memory.c do_huge_pmd_anonymous_page with use_zero_page): a read of a THP-eligible
 * extent maps the huge zero folio, allocated once, and no frame of the process; the first write
 * splits the PMD (do_huge_pmd_wp_page -> __split_huge_pmd): the written page gets a 4 KiB frame,
 * the others map the 4 KiB zero page, and each of them takes a fault at its own first write. */
TEST(a_read_first_touch_maps_the_huge_zero_page_in_6_12_and_a_write_splits_it)
{
	struct fixture f;
	struct zero_case k;

	run_zero_case(&f, &k, "thp-always/madvise", MM_VMA_HUGEPAGE, true);
	EXPECT_EQ(k.after_read.huge_faults, 2);
	EXPECT_EQ(k.after_read.faults, 0);
	EXPECT_EQ(k.after_read.wp_faults, 0);
	EXPECT_EQ(k.zero_alloc, 1); /* one huge zero folio for both extents */
	EXPECT_EQ(k.thp_alloc, 0);
	EXPECT_EQ(k.x0_read, AS_X_ZERO);
	EXPECT_EQ(k.x1_read, AS_X_ZERO);
	EXPECT_EQ(k.anon_after_read, 0);
	EXPECT_EQ(k.after_write.wp_faults, 1);
	EXPECT_EQ(k.split_pmd, 1);
	EXPECT_EQ(k.x0_write, AS_X_SMALL);
	EXPECT_EQ(k.x1_write, AS_X_ZERO); /* the other extent keeps its huge zero PMD */
	EXPECT_EQ(k.p0_write, AS_P_PRESENT);
	EXPECT_EQ(k.p1_write, AS_P_ZERO);
	EXPECT_EQ(k.anon_after_write, 1);
	EXPECT_EQ(k.after_reread.wp_faults, 1);
	EXPECT_EQ(k.after_reread.faults, 0);
	EXPECT_EQ(k.p5_reread, AS_P_ZERO);
	EXPECT_EQ(k.after_rewrite.wp_faults, 2);
	EXPECT_EQ(f.w.extents, 2);
	EXPECT_EQ(f.w.extents_huge, 0);
	world_fini(&f.w);
}

/* 3.2 has no huge zero page (it came with 3.8): a read of a THP-eligible extent allocates a THP
 * as a write does (do_huge_pmd_anonymous_page), so no zero page and no later write fault. */
TEST(a_read_first_touch_of_a_thp_eligible_extent_takes_a_thp_in_3_2)
{
	struct fixture f;
	struct zero_case k;

	run_zero_case(&f, &k, "linux-3.2", MM_VMA_HUGEPAGE, true);
	EXPECT_EQ(k.after_read.huge_faults, 0);
	EXPECT_EQ(k.after_read.faults, 0);
	EXPECT_EQ(k.zero_alloc, 0);
	EXPECT_EQ(k.thp_alloc, 2);
	EXPECT_EQ(k.x0_read, AS_X_HUGE);
	EXPECT_EQ(k.anon_after_read, 2 * MM_HPAGE_NR);
	EXPECT_EQ(k.after_rewrite.wp_faults, 0);
	EXPECT_EQ(f.w.extents_huge, 2);
	world_fini(&f.w);
}

/* Where no THP can go, every era maps the 4 KiB zero page on a read (mm/memory.c
 * do_anonymous_page) and the first write copies it (do_wp_page -> wp_page_copy). */
TEST(a_read_first_touch_without_a_thp_maps_the_4k_zero_page_in_every_era)
{
	static const char *const policies[] = {"linux-3.2", "thp-always/madvise"};

	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		struct fixture f;
		struct zero_case k;

		run_zero_case(&f, &k, policies[i], MM_VMA_NOHUGEPAGE, true);
		EXPECT_EQ(k.after_read.faults, 2 * MM_HPAGE_NR);
		EXPECT_EQ(k.after_read.huge_faults, 0);
		EXPECT_EQ(k.anon_after_read, 0);
		EXPECT_EQ(k.x0_read, AS_X_SMALL);
		EXPECT_EQ(k.after_write.wp_faults, 1);
		EXPECT_EQ(k.split_pmd, 0);
		EXPECT_EQ(k.p0_write, AS_P_PRESENT);
		EXPECT_EQ(k.p1_write, AS_P_ZERO);
		EXPECT_EQ(k.anon_after_write, 1);
		EXPECT_EQ(k.after_rewrite.wp_faults, 2);
		world_fini(&f.w);
	}
}

/* --zero-page 0: a read is decided as a write (6.12 takes a THP, no zero page). */
TEST(without_zero_pages_a_read_is_decided_as_a_write)
{
	struct fixture f;
	struct zero_case k;

	run_zero_case(&f, &k, "thp-always/madvise", MM_VMA_HUGEPAGE, false);
	EXPECT_EQ(k.after_read.huge_faults, 0);
	EXPECT_EQ(k.after_read.faults, 0);
	EXPECT_EQ(k.zero_alloc, 0);
	EXPECT_EQ(k.thp_alloc, 2);
	EXPECT_EQ(k.after_rewrite.wp_faults, 0);
	world_fini(&f.w);
}

TEST_MAIN()
