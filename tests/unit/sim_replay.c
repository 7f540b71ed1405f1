/* Trace replay in virtual time (core/sim/replay.c) on hand-written traces: a replay under the
 * recording's policy makes the recorded decisions; another policy makes its own, with the
 * implied touches of a recorded huge extent; the modelled address space follows the live
 * rules (absorbed and orphan faults, MADV_DONTNEED of a whole THP, advice covering part of an
 * extent, adopted resident pages, a whole-region mremap); zero pages replay as recorded, per
 * era; and a replay is deterministic. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <unistd.h>

#include "mm/mm.h"
#include "obs/trace.h"
#include "sim/sim.h"

#define MB (1ULL << 20)
#define HP (2ULL << 20)
#define R0 0x7f0000000000ULL /* where the recorded region lives (2 MiB aligned) */

static char path[64];
static struct obs_trace_rec recs[4096];
static size_t nrec;
static uint64_t now;

static void rec(struct obs_trace_rec r)
{
	ASSERT(nrec < sizeof(recs) / sizeof(recs[0]));
	r.t_ns = now += 1000;
	if (!r.tid)
		r.tid = 1;
	recs[nrec++] = r;
}

static void map(uint64_t addr, uint64_t len)
{
	rec((struct obs_trace_rec){.addr = addr, .val = len, .type = OBS_TR_MAP});
}

static void fault(uint64_t addr, unsigned decision)
{
	rec((struct obs_trace_rec){.addr = addr,
				   .val = 3000,
				   .type = OBS_TR_FAULT,
				   .flags =
				       (uint8_t)(OBS_TRF_WRITE | decision << OBS_TRF_DEC_SHIFT |
						 (decision == 0 ? OBS_TRF_CAND : 0))});
}

static void release(uint64_t addr, uint64_t len, bool unmap)
{
	rec((struct obs_trace_rec){
	    .addr = addr, .val = len, .type = OBS_TR_RELEASE, .flags = unmap ? OBS_TRF_UNMAP : 0});
}

/* A read first touch recorded with mm's decision (zero pages: a format 2 recording). */
static void read_fault(uint64_t addr, unsigned decision)
{
	rec((struct obs_trace_rec){
	    .addr = addr,
	    .val = 3000,
	    .type = OBS_TR_FAULT,
	    .flags = (uint8_t)(obs_trace_decision_flags(decision) |
			       (decision == MM_FAULT_HUGE_ZERO ? OBS_TRF_CAND : 0))});
}

/* The first write to a zero page, as recorded (a base decision, OBS_TRF_WP_ZERO). */
static void wp_write(uint64_t addr)
{
	rec((struct obs_trace_rec){.addr = addr,
				   .val = 3000,
				   .type = OBS_TR_FAULT,
				   .flags = (uint8_t)(OBS_TRF_WRITE | OBS_TRF_WP_ZERO |
						      obs_trace_decision_flags(MM_FAULT_BASE))});
}

static void save_zero(const char *policy, const char *pool, const char *zero_page)
{
	const char *keys[] = {"policy", "pool_bytes", "fragment", "seed", "zero_page"};
	const char *vals[] = {policy, pool, "", "1", zero_page};
	char hdr[OBS_TRACE_HDR_MAX];
	struct obs_trace_rec end = {.type = OBS_TR_END, .t_ns = now + 1};
	size_t len = obs_trace_header(hdr, sizeof(hdr), 0, 0, 1, keys, vals, zero_page ? 5 : 4);
	int fd;

	snprintf(path, sizeof(path), "/tmp/thpemu-sim-replay.%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, hdr, len), (ssize_t)len);
	ASSERT_EQ(write(fd, recs, nrec * sizeof(recs[0])), (ssize_t)(nrec * sizeof(recs[0])));
	ASSERT_EQ(write(fd, &end, sizeof(end)), (ssize_t)sizeof(end));
	close(fd);
}

static void save(const char *policy, const char *pool)
{
	save_zero(policy, pool, NULL);
}

/* Replay the saved trace under policy with zero pages as recorded (sim_replay_configure's
 * rule, which `thpemu sim --replay` applies); returns the report, parsed. */
static json_t *replay(const char *policy, char **text)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_replay_info in;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *f;
	json_t *j;

	sim_config_init(&c);
	ASSERT_EQ(sim_replay_load(path, &c.replay, err, sizeof(err)), 0);
	sim_replay_info(c.replay, &in);
	ASSERT_EQ(mm_policy_parse(policy, &c.policy, err, sizeof(err)), 0);
	c.scenario = &sim_scen_replay;
	sim_params_defaults(c.scenario, &c.params);
	c.pool_bytes = in.pool_bytes;
	c.duration_ns = in.span_ns + 60ULL * 1000000000ULL;
	c.zero_page = in.zero_page;
	if (sim_run_scenario(&c, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "  replay: %s\n", err);
		ASSERT(0);
	}
	f = open_memstream(&buf, &len);
	ASSERT(f);
	ASSERT_EQ(sim_report_json(r, f, false), 0);
	fclose(f);
	j = json_loads(buf, 0, NULL);
	ASSERT(j);
	if (text)
		*text = buf;
	else
		free(buf);
	sim_result_free(r);
	sim_replay_free(c.replay);
	return j;
}

static long long num(json_t *j, const char *sect, const char *key)
{
	return (long long)json_number_value(json_object_get(json_object_get(j, sect), key));
}

static void reset(void)
{
	nrec = 0;
	now = 0;
}

TEST(same_policy_same_decisions)
{
	json_t *j;

	reset();
	map(R0, 8 * MB);
	for (int e = 0; e < 4; e++)
		fault(R0 + e * HP + 4096 * e, 0);
	save("modern-always", "67108864");
	j = replay("modern-always", NULL);
	EXPECT_EQ(num(j, "replay", "faults_recorded"), 4);
	EXPECT_EQ(num(j, "replay", "compared"), 4);
	EXPECT_EQ(num(j, "replay", "same"), 4);
	EXPECT_EQ(num(j, "replay", "implied"), 0);
	EXPECT_EQ(num(j, "faults", "huge"), 4);
	EXPECT_EQ(num(j, "faults", "total"), 4);
	EXPECT_EQ(num(j, "replay", "threads"), 1);
	json_decref(j);
}

/* A recording with zero pages (format 2): a read of each extent mapped the huge zero page
 * (6.12), then one page of the first was written (its split: a 4 KiB frame) and one of the
 * second. Replayed under 6.12 the same zero decisions and first writes come back; under 3.2 (no
 * huge zero page before 3.8) the reads take THPs and the writes are absorbed. Without zero pages
 * in the header (format 1's reads were decided as writes), reads are decided as writes. */
TEST(zero_pages_replay_as_recorded_per_era)
{
	struct sim_replay *rp;
	struct sim_replay_info in;
	char err[256];
	json_t *j;

	reset();
	map(R0, 4 * MB);
	read_fault(R0, MM_FAULT_HUGE_ZERO);
	read_fault(R0 + HP, MM_FAULT_HUGE_ZERO);
	wp_write(R0 + 5 * 4096);
	wp_write(R0 + 6 * 4096); /* a 4 KiB zero page since the split */
	wp_write(R0 + HP);
	save_zero("thp-always/madvise", "67108864", "1");
	ASSERT_EQ(sim_replay_load(path, &rp, err, sizeof(err)), 0);
	sim_replay_info(rp, &in);
	EXPECT(in.zero_page);
	sim_replay_free(rp);
	j = replay("thp-always/madvise", NULL);
	EXPECT_EQ(num(j, "zero_pages", "huge_zero_faults"), 2);
	EXPECT_EQ(num(j, "zero_pages", "zero_faults"), 0);
	EXPECT_EQ(num(j, "zero_pages", "zero_wp_faults"), 3);
	EXPECT_EQ(num(j, "vmstat", "thp_zero_page_alloc"), 1);
	EXPECT_EQ(num(j, "vmstat", "thp_split_pmd"), 2);
	EXPECT_EQ(num(j, "vmstat", "thp_fault_alloc"), 0);
	EXPECT_EQ(num(j, "replay", "compared"), 2); /* the reads; the first writes are not */
	EXPECT_EQ(num(j, "replay", "huge_to_base"), 0);
	EXPECT_EQ(num(j, "faults", "total"), 5);
	json_decref(j);
	j = replay("linux-3.2", NULL);
	EXPECT(json_object_get(j, "zero_pages") == NULL);
	EXPECT_EQ(num(j, "vmstat", "thp_fault_alloc"), 2);
	EXPECT_EQ(num(j, "vmstat", "thp_zero_page_alloc"), 0);
	EXPECT_EQ(num(j, "replay", "absorbed"), 3);
	EXPECT_EQ(num(j, "faults", "total"), 2);
	json_decref(j);
	nrec = 0; /* the same records, from a recording without zero pages */
	now = 0;
	map(R0, 4 * MB);
	read_fault(R0, MM_FAULT_HUGE);
	save("thp-always/madvise", "67108864");
	j = replay("thp-always/madvise", NULL);
	EXPECT(json_object_get(j, "zero_pages") == NULL);
	EXPECT_EQ(num(j, "vmstat", "thp_fault_alloc"), 1);
	json_decref(j);
}

TEST(another_policy_makes_its_own_decisions_and_touches_the_whole_extent)
{
	json_t *j;

	reset();
	map(R0, 4 * MB);
	fault(R0, 0);
	fault(R0 + HP, 0);
	save("modern-always", "67108864");
	j = replay("modern-never", NULL);
	EXPECT_EQ(num(j, "replay", "compared"), 2);
	EXPECT_EQ(num(j, "replay", "huge_to_base"), 2);
	EXPECT_EQ(num(j, "replay", "same"), 0);
	EXPECT_EQ(num(j, "replay", "implied"), 2 * 511);
	EXPECT_EQ(num(j, "faults", "base"), 2 * 512);
	EXPECT_EQ(num(j, "faults", "huge"), 0);
	json_decref(j);
}

TEST(absorbed_orphan_and_dontneed)
{
	json_t *j;

	reset();
	map(R0, 4 * MB);
	fault(R0 + 8192, 0);	    /* huge */
	fault(R0 + 3 * 4096, 1);    /* the same extent: absorbed */
	release(R0, HP, false);	    /* MADV_DONTNEED of the whole THP: empty again */
	fault(R0 + 4096, 0);	    /* huge again */
	release(R0 + HP, HP, true); /* munmap of the second extent */
	fault(R0 + HP + 4096, 1);   /* nothing there any more: orphan */
	save("modern-always", "67108864");
	j = replay("modern-always", NULL);
	EXPECT_EQ(num(j, "replay", "faults_recorded"), 4);
	EXPECT_EQ(num(j, "replay", "absorbed"), 1);
	EXPECT_EQ(num(j, "replay", "orphans"), 1);
	EXPECT_EQ(num(j, "faults", "huge"), 2);
	EXPECT_EQ(num(j, "replay", "same"), 2);
	json_decref(j);
}

TEST(advice_on_part_of_an_extent_and_adopted_pages_keep_it_small)
{
	json_t *j;

	reset();
	map(R0, 4 * MB);
	/* MADV_NOHUGEPAGE over half of extent 0: two VMAs in the kernel, never huge */
	rec((struct obs_trace_rec){
	    .addr = R0, .val = MB, .type = OBS_TR_ADVISE, .advice = 2 /* MM_VMA_NOHUGEPAGE */});
	fault(R0 + MB + 4096, 1);
	/* an adopted mapping with one resident page: its extent is a page table already */
	rec((struct obs_trace_rec){.addr = R0 + 16 * MB, .val = 2 * MB, .type = OBS_TR_ADOPT});
	rec((struct obs_trace_rec){
	    .addr = R0 + 16 * MB + 4096, .val = 4096, .type = OBS_TR_RESIDENT});
	fault(R0 + 16 * MB, 1);
	fault(R0 + 16 * MB + 4096, 1); /* the resident page itself: absorbed */
	fault(R0 + HP, 0);	       /* extent 1 has no advice: huge */
	save("modern-always", "67108864");
	j = replay("modern-always", NULL);
	EXPECT_EQ(num(j, "faults", "huge"), 1);
	EXPECT_EQ(num(j, "faults", "base"), 2);
	EXPECT_EQ(num(j, "replay", "absorbed"), 1);
	EXPECT_EQ(num(j, "replay", "same"), 3);
	EXPECT_EQ(num(j, "replay", "candidate_mismatches"), 0);
	json_decref(j);
}

TEST(a_whole_region_mremap_keeps_its_huge_pages)
{
	json_t *j;

	reset();
	map(R0, 4 * MB);
	fault(R0, 0);
	/* moved and grown to 8 MiB at R0 + 64 MiB (same 2 MiB phase) */
	rec((struct obs_trace_rec){
	    .addr = R0, .val = 8 * MB, .val2 = R0 + 64 * MB, .type = OBS_TR_REMAP});
	fault(R0 + 64 * MB + 4096, 1);	 /* the moved THP: absorbed */
	fault(R0 + 64 * MB + 6 * MB, 0); /* the grown part: a fresh huge candidate */
	fault(R0 + 4096, 1);		 /* the old place: gone */
	save("modern-always", "67108864");
	j = replay("modern-always", NULL);
	EXPECT_EQ(num(j, "replay", "absorbed"), 1);
	EXPECT_EQ(num(j, "replay", "orphans"), 1);
	EXPECT_EQ(num(j, "faults", "huge"), 2);
	EXPECT_EQ(num(j, "replay", "map_conflicts"), 0);
	json_decref(j);
}

TEST(threads_replay_in_parallel_and_the_replay_is_deterministic)
{
	char *a, *b;
	json_t *j;

	reset();
	map(R0, 32 * MB);
	for (int i = 0; i < 16; i++) {
		struct obs_trace_rec r = {.addr = R0 + (uint64_t)i * HP,
					  .val = 3000,
					  .type = OBS_TR_FAULT,
					  .tid = 10 + (uint32_t)(i % 4),
					  .flags = OBS_TRF_WRITE | OBS_TRF_CAND};

		rec(r);
	}
	save("linux-3.1", "67108864");
	j = replay("linux-3.1", &a);
	EXPECT_EQ(num(j, "replay", "threads"), 5); /* the mapping thread and four faulting */
	EXPECT_EQ(num(j, "replay", "compared"), 16);
	json_decref(j);
	json_decref(replay("linux-3.1", &b));
	ASSERT_STREQ(a, b);
	free(a);
	free(b);
	unlink(path);
}

/* A trace with nothing to replay (every record of an unknown type, say) ends at once: it used to
 * run to the run's guard, 4 x (span + 10 min) + 10 min of idle virtual time. */
TEST(an_empty_trace_ends_at_once)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary sum;
	char err[512];

	reset();
	rec((struct obs_trace_rec){.addr = R0, .val = 4096, .type = 99});
	save("modern-always", "67108864");
	sim_config_init(&c);
	ASSERT_EQ(sim_replay_load(path, &c.replay, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("modern-always", &c.policy, err, sizeof(err)), 0);
	ASSERT_EQ(sim_replay_configure(&c, 0, err, sizeof(err)), 0);
	c.pool_bytes = 64 * MB;
	ASSERT_EQ(sim_run_scenario(&c, &r, err, sizeof(err)), 0);
	sim_result_summary(r, &sum);
	EXPECT_EQ(sum.faults, 0);
	EXPECT_EQ(sum.duration_ns, 0);
	sim_result_free(r);
	sim_replay_free(c.replay);
	unlink(path);
}

/* One corrupt time made a replay run for hours (the simulator's idle background
 * costs real time per virtual hour). By default a trace covers 1 h + 1 min per record; a longer
 * one needs an explicit duration, and then replays its first part promptly. */
TEST(a_span_beyond_the_records_needs_a_duration)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary sum;
	char err[512];

	reset();
	map(R0, 8 * MB);
	fault(R0, 0);
	fault(R0 + HP, 0);
	recs[nrec - 1].t_ns = 100ULL * 86400 * 1000000000ULL; /* 100 days in */
	save("modern-always", "67108864");
	sim_config_init(&c);
	ASSERT_EQ(sim_replay_load(path, &c.replay, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("modern-always", &c.policy, err, sizeof(err)), 0);
	EXPECT_EQ(sim_replay_configure(&c, 0, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "spans 2400.0 h with 3 records") && strstr(err, "--duration"));
	c.duration_ns = 10ULL * 1000000000ULL;
	ASSERT_EQ(sim_replay_configure(&c, SIM_REPLAY_KEEP_DURATION, err, sizeof(err)), 0);
	c.pool_bytes = 64 * MB;
	ASSERT_EQ(sim_run_scenario(&c, &r, err, sizeof(err)), 0);
	sim_result_summary(r, &sum);
	EXPECT_EQ(sum.faults, 1); /* the first, not the one 100 days in */
	EXPECT_LE(sum.duration_ns, 4 * c.duration_ns + SIM_REPLAY_TAIL_NS); /* run.c's guard */
	sim_result_free(r);
	sim_replay_free(c.replay);
	unlink(path);
}

TEST_MAIN()
