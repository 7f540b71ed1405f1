/* The per-size multi-size THP report section (core/obs/mthp.c) over a real pool: a 64kB=always
 * fault path feeds obs_faults and mm's per-size statistics, and the "mthp" JSON object carries
 * every size with the counters and latencies of the faults served at it; absent for a 3.x era;
 * kernel_latency_us only when asked; merge and accumulate. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "obs/mthp.h"

static struct obs_faults f;

static struct fakeenv *env(const char *spec)
{
	static struct fakeenv fe;
	char err[256];
	int rc = fakeenv_init(&fe, spec, 64ULL << 20, false, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  %s: %s\n", spec, err);
	ASSERT_EQ(rc, 0);
	return &fe;
}

/* A write fault at page `page` of extent 1, all mTHP orders structurally possible. */
static struct mm_fault_res fault(struct fakeenv *fe, uint32_t page, uint64_t latency_ns)
{
	struct mm_fault_req req = {
	    .owner = (1ULL << 9) + page,
	    .extent_owner = 1ULL << 9,
	    .write = true,
	    .orders_ok = 0x1fc,
	};
	struct mm_fault_res res;

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	obs_faults_record(&f, &res.rec, latency_ns);
	return res;
}

static void render(const struct obs_mthp *m, const char *delivery, double over, char *buf,
		   size_t len)
{
	FILE *out = fmemopen(buf, len, "w");
	struct json_w w;

	ASSERT(out != NULL);
	jw_init(&w, out, false);
	jw_obj_begin(&w, NULL);
	obs_report_mthp(&w, m, &f, delivery, over);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(out);
}

static const char *size_obj(const char *buf, const char *size)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":{\"order\"", size);
	p = strstr(buf, key);
	ASSERT(p != NULL);
	return p;
}

TEST(folio_faults_fill_their_size_and_only_it)
{
	struct fakeenv *fe = env("modern-never:hugepages-64kB=always");
	struct mm_fault_res a, b;
	struct obs_mthp m;
	static char buf[16384];
	const char *s64, *s32;

	obs_faults_init(&f);
	a = fault(fe, 0, 20000);
	b = fault(fe, 16, 40000);
	ASSERT_EQ(a.outcome, MM_FAULT_MTHP);
	ASSERT_EQ(a.order, 4);
	ASSERT_EQ(b.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(f.lat[OBS_MTHP].count, 2);
	EXPECT_EQ(f.lat[OBS_BASE].count, 0);
	EXPECT_EQ(f.lat_order[4 - OBS_MTHP_MIN_ORDER].count, 2);
	/* one page of the first folio unmapped: partially mapped, deferred split */
	mm_anon_free(fe->mm, a.pfn + 3, 0, NULL);
	obs_mthp_snapshot(&m, mm_policy(fe->mm), fe->mm);
	render(&m, "per-PTE", 5.0, buf, sizeof(buf));

	ASSERT(strstr(buf, "{\"mthp\":{\"delivery\":\"per-PTE\",\"coverage_pct\":100.00,") == buf);
	s64 = size_obj(buf, "64kB");
	ASSERT(strncmp(s64,
		       "\"64kB\":{\"order\":4,\"setting\":\"always\",\"faults\":2,"
		       "\"anon_fault_alloc\":2,\"anon_fault_fallback\":0,"
		       "\"anon_fault_fallback_charge\":0,\"split\":0,\"split_deferred\":1,"
		       "\"nr_anon\":2,\"nr_anon_partially_mapped\":1,"
		       "\"latency_us\":{\"count\":2,",
		       strlen("\"64kB\":{\"order\":4,\"setting\":\"always\",\"faults\":2,"
			      "\"anon_fault_alloc\":2,\"anon_fault_fallback\":0,"
			      "\"anon_fault_fallback_charge\":0,\"split\":0,\"split_deferred\":1,"
			      "\"nr_anon\":2,\"nr_anon_partially_mapped\":1,"
			      "\"latency_us\":{\"count\":2,")) == 0);
	/* net of a 5 us overhead: max 40 us -> 35 us */
	ASSERT(strstr(s64, "\"kernel_latency_us\":{\"count\":2,") != NULL);
	ASSERT(strstr(s64, "\"max\":35.000}") != NULL);
	s32 = size_obj(buf, "32kB");
	ASSERT(strncmp(s32, "\"32kB\":{\"order\":3,\"setting\":\"never\",\"faults\":0,", 45) == 0);
	/* every size, 16kB .. the PMD size (whose setting is inherit by default) */
	size_obj(buf, "16kB");
	size_obj(buf, "128kB");
	size_obj(buf, "256kB");
	size_obj(buf, "512kB");
	size_obj(buf, "1024kB");
	ASSERT(strstr(buf, "\"2048kB\":{\"order\":9,\"setting\":\"inherit\",\"faults\":0,") !=
	       NULL);
	fakeenv_destroy(fe);
}

TEST(coverage_counts_pages_not_faults_and_sim_has_no_kernel_latency)
{
	struct fakeenv *fe = env("modern-never:hugepages-64kB=always");
	struct mm_fault_req rd = {.owner = (2ULL << 9), .extent_owner = 2ULL << 9};
	struct mm_fault_res r;
	struct obs_mthp m;
	static char buf[16384];

	obs_faults_init(&f);
	fault(fe, 0, 1000);			       /* 16 pages by one mTHP */
	ASSERT_EQ(mm_fault(fe->mm, &rd, &r, NULL), 0); /* a read: one 4 KiB page */
	ASSERT_EQ(r.outcome, MM_FAULT_BASE);
	obs_faults_record(&f, &r.rec, 1000);
	obs_mthp_snapshot(&m, mm_policy(fe->mm), fe->mm);
	render(&m, "model", -1.0, buf, sizeof(buf));
	/* 16 of 17 pages */
	ASSERT(strstr(buf, "\"delivery\":\"model\",\"coverage_pct\":94.12,") != NULL);
	ASSERT(strstr(buf, "kernel_latency_us") == NULL);
	fakeenv_destroy(fe);
}

TEST(no_section_for_an_era_without_mthp)
{
	struct fakeenv *fe = env("linux-3.1");
	struct obs_mthp m;
	char buf[256];

	obs_faults_init(&f);
	obs_mthp_snapshot(&m, mm_policy(fe->mm), fe->mm);
	render(&m, "model", -1.0, buf, sizeof(buf));
	ASSERT_STREQ(buf, "{}\n");
	fakeenv_destroy(fe);
}

TEST(merge_adds_processes_accumulate_keeps_the_latest_gauges)
{
	struct obs_mthp a, b, sum;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&sum, 0, sizeof(sum));
	a.era_has_mthp = b.era_has_mthp = 1;
	a.setting[4] = b.setting[4] = MM_THP_SIZE_ALWAYS;
	a.st[4].anon_fault_alloc = 3;
	a.st[4].nr_anon = 2;
	b.st[4].anon_fault_alloc = 4;
	b.st[4].split_deferred = 1;
	b.st[4].nr_anon = 5;
	obs_mthp_merge(&sum, &a);
	obs_mthp_merge(&sum, &b);
	EXPECT_EQ(sum.era_has_mthp, 1);
	EXPECT_EQ(sum.setting[4], MM_THP_SIZE_ALWAYS);
	EXPECT_EQ(sum.st[4].anon_fault_alloc, 7);
	EXPECT_EQ(sum.st[4].split_deferred, 1);
	EXPECT_EQ(sum.st[4].nr_anon, 7);
	obs_mthp_accumulate(&a, &b);
	EXPECT_EQ(a.st[4].anon_fault_alloc, 7);
	EXPECT_EQ(a.st[4].nr_anon, 5);
	ASSERT_STREQ(obs_mthp_setting_name(MM_THP_SIZE_MADVISE), "madvise");
	ASSERT_STREQ(obs_mthp_setting_name(MM_THP_SIZE_INHERIT), "inherit");
}

TEST_MAIN()
