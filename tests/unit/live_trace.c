/* Fault traces recorded live (core/live/trace.c) on a real userfaultfd: every served fault with
 * mm's decision, the thread and the write flag, and every change to managed memory (map,
 * release by munmap and MADV_DONTNEED, advice) in the file, the END record at the exit hook,
 * and a trace that replays in the simulator to the recorded decisions. Needs root or
 * /dev/userfaultfd. */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "obs/trace.h"
#include "sim/sim.h"
#include "live_fixture.h"

static char path[64];

static struct uffd_live *mk(const char *policy)
{
	struct config cfg;
	struct uffd_live *lv;

	live_config(&cfg, policy, "128M");
	cfg.policy.khugepaged = false; /* a collapse is not a traced event: keep the trace whole */
	snprintf(path, sizeof(path), "/tmp/thpemu-uffd-trace.%d", (int)getpid());
	snprintf(cfg.trace, sizeof(cfg.trace), "%s", path);
	cfg.io_pid = (uint64_t)getpid();
	lv = live_start(&cfg);
	ASSERT(uffd_tracing(lv));
	return lv;
}

static uint64_t served(struct uffd_live *lv)
{
	return __atomic_load_n(&lv->stats->faults.lat[OBS_HUGE].count, __ATOMIC_RELAXED) +
	       __atomic_load_n(&lv->stats->faults.lat[OBS_BASE].count, __ATOMIC_RELAXED);
}

TEST(every_fault_and_change_is_recorded)
{
	struct uffd_live *lv = mk("modern-always");
	char *m = live_map(lv, 8 * MB), err[256];
	size_t faults = 0, huge = 0, base = 0, maps = 0, releases = 0, dontneed = 0, advice = 0;
	struct obs_trace t;
	int tid = (int)syscall(SYS_gettid);

	ASSERT_EQ(uffd_madvise(lv, m + 6 * MB, 2 * MB, MADV_NOHUGEPAGE), 0);
	m[0] = 1;			  /* huge */
	(void)*(volatile char *)(m + HP); /* a read: huge too */
	m[6 * MB] = 1;			  /* NOHUGEPAGE: base */
	m[6 * MB + 4096] = 1;		  /* base */
	for (int i = 0; i < 1000 && served(lv) < 4; i++)
		usleep(1000);
	ASSERT_EQ(served(lv), 4);
	ASSERT_EQ(uffd_madvise(lv, m, HP, MADV_DONTNEED), 0);
	ASSERT_EQ(uffd_munmap(lv, m, 8 * MB), 0);
	uffd_live_exit(lv, NULL);
	uffd_live_destroy(lv);

	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT(t.complete);
	EXPECT_EQ(t.dropped, 0);
	for (size_t i = 0; i < t.n; i++) {
		const struct obs_trace_rec *r = &t.recs[i];

		switch (r->type) {
		case OBS_TR_FAULT:
			faults++;
			huge += obs_trace_decision(r) == MM_FAULT_HUGE;
			base += obs_trace_decision(r) == MM_FAULT_BASE;
			EXPECT_EQ(r->tid, (uint32_t)tid);
			EXPECT(r->val > 0); /* latency */
			if (r->addr == (uintptr_t)m + HP)
				EXPECT(!(r->flags & OBS_TRF_WRITE));
			if (r->addr == (uintptr_t)m)
				EXPECT((r->flags & OBS_TRF_WRITE) && (r->flags & OBS_TRF_CAND));
			break;
		case OBS_TR_MAP:
			maps++;
			EXPECT_EQ(r->addr, (uintptr_t)m);
			EXPECT_EQ(r->val, 8 * MB);
			break;
		case OBS_TR_RELEASE:
			releases++;
			dontneed += !(r->flags & OBS_TRF_UNMAP);
			break;
		case OBS_TR_ADVISE:
			advice++;
			EXPECT_EQ(r->addr, (uintptr_t)m + 6 * MB);
			EXPECT_EQ(r->advice, MM_VMA_NOHUGEPAGE);
			break;
		default:
			break;
		}
	}
	EXPECT_EQ(faults, 4);
	EXPECT_EQ(huge, 2);
	EXPECT_EQ(base, 2);
	EXPECT_EQ(maps, 1);
	EXPECT_EQ(advice, 1);
	EXPECT_EQ(releases, 2);
	EXPECT_EQ(dontneed, 1);
	obs_trace_free(&t);
}

TEST(a_recorded_trace_replays_to_the_recorded_decisions)
{
	struct uffd_live *lv = mk("linux-3.3");
	char *m = live_map(lv, 32 * MB), err[512];
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary s;

	for (size_t off = 0; off < 32 * MB; off += HP)
		memset(m + off, 1, HP / 2);
	ASSERT_EQ(uffd_munmap(lv, m + 4 * MB, 6 * MB), 0); /* a hole, some frees */
	for (size_t off = 10 * MB; off < 32 * MB; off += 4096)
		m[off] = 2;
	uffd_live_exit(lv, NULL);
	uffd_live_destroy(lv);

	sim_config_init(&c);
	ASSERT_EQ(sim_replay_load(path, &c.replay, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("linux-3.3", &c.policy, err, sizeof(err)), 0);
	c.scenario = &sim_scen_replay;
	sim_params_defaults(c.scenario, &c.params);
	c.pool_bytes = 128 * MB;
	c.duration_ns = 600ULL * 1000000000ULL;
	ASSERT_EQ(sim_run_scenario(&c, &r, err, sizeof(err)), 0);
	sim_result_summary(r, &s);
	EXPECT_EQ(s.huge, 16); /* every extent of the mapping, as live */
	EXPECT_EQ(s.faults, 16);
	sim_result_free(r);
	sim_replay_free(c.replay);
	unlink(path);
}

TEST_MAIN()
