/* Fault aggregation and the shared report sections (core/obs/faults.c): bands, merge, empty
 * report, byte-exact JSON for a known input, and concurrent recording. */
#include "harness.h"
#include "obs/faults.h"

#include <pthread.h>

static struct obs_faults f, g;

static struct mm_fault_rec rec_of(enum mm_fault_outcome o)
{
	struct mm_fault_rec r;

	memset(&r, 0, sizeof(r));
	r.outcome = (uint8_t)o;
	return r;
}

/* Writes obs_report_faults (compact JSON) into buf. */
static void render(const struct obs_faults *x, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	struct json_w w;

	ASSERT(m != NULL);
	jw_init(&w, m, false);
	jw_obj_begin(&w, NULL);
	obs_report_faults(&w, x);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(m);
}

TEST(bands_have_decade_edges)
{
	EXPECT_EQ(obs_band_of(0), OBS_BAND_10US);
	EXPECT_EQ(obs_band_of(9999), OBS_BAND_10US);
	EXPECT_EQ(obs_band_of(10000), OBS_BAND_100US);
	EXPECT_EQ(obs_band_of(99999), OBS_BAND_100US);
	EXPECT_EQ(obs_band_of(100000), OBS_BAND_1MS);
	EXPECT_EQ(obs_band_of(1000000), OBS_BAND_10MS);
	EXPECT_EQ(obs_band_of(10000000), OBS_BAND_100MS);
	EXPECT_EQ(obs_band_of(999999999), OBS_BAND_1S);
	EXPECT_EQ(obs_band_of(1000000000), OBS_BAND_SLOWER);
	EXPECT_EQ(obs_band_of(UINT64_MAX), OBS_BAND_SLOWER);
	ASSERT_STREQ(obs_band_name(OBS_BAND_10US), "<10us");
	ASSERT_STREQ(obs_band_name(OBS_BAND_SLOWER), ">=1s");
}

static const char empty_json[] =
    "{\"faults\":{\"total\":0,\"huge\":0,\"base\":0,\"mthp\":0,\"nomem\":0,\"huge_pct\":0.00},"
    "\"latency_us\":{"
    "\"huge\":{\"count\":0,\"mean\":0.000,\"p50\":0.000,\"p90\":0.000,\"p99\":0.000,"
    "\"p999\":0.000,\"max\":0.000},"
    "\"base\":{\"count\":0,\"mean\":0.000,\"p50\":0.000,\"p90\":0.000,\"p99\":0.000,"
    "\"p999\":0.000,\"max\":0.000},"
    "\"mthp\":{\"count\":0,\"mean\":0.000,\"p50\":0.000,\"p90\":0.000,\"p99\":0.000,"
    "\"p999\":0.000,\"max\":0.000},"
    "\"both\":{\"count\":0,\"mean\":0.000,\"p50\":0.000,\"p90\":0.000,\"p99\":0.000,"
    "\"p999\":0.000,\"max\":0.000}},"
    "\"latency_bands\":{"
    "\"huge\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0},"
    "\"base\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0},"
    "\"mthp\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0},"
    "\"both\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0}},"
    "\"latency_cdf\":{\"huge\":[],\"base\":[],\"mthp\":[],\"both\":[]},"
    "\"latency_hist\":{\"huge\":[],\"base\":[],\"mthp\":[],\"both\":[]},"
    "\"writeback_waits\":{\"count\":0,\"total_ms\":0.000,\"max_ms\":0.000},"
    "\"time_ms\":{\"compaction\":0.000,\"reclaim\":0.000,\"writeback_wait\":0.000,"
    "\"migrate\":0.000,\"zeroing\":0.000}}\n";

TEST(empty_report_is_all_zeros)
{
	char buf[8192];

	obs_faults_init(&f);
	render(&f, buf, sizeof(buf));
	ASSERT_STREQ(buf, empty_json);
}

/* Known input: two huge faults (100 us with 2 ms zeroing; 3 s of which 2.5 s in two writeback
 * waits inside compaction) and three base faults (5 us, 20 us, and a NOMEM at 31 ns).
 * Hand-derived: huge p50 = rank 1 = 100000 ns, whose bucket (group 12, width 2048 ns) ends at
 * 100351 ns; p90 = rank 2 = max 3 s. base: 31 ns exact; 5000 ns bucket ends 5119; 20000 ns
 * bucket ends 20479, clamped to base max 20000 (not in "both", whose max is 3 s). Bands: 31 ns and
 * 5 us < 10 us; 20 us and 100 us in 10-100us / 100us-1ms; 3 s >= 1 s. */
static const char known_json[] =
    "{\"faults\":{\"total\":5,\"huge\":2,\"base\":3,\"mthp\":0,\"nomem\":1,\"huge_pct\":40.00},"
    "\"latency_us\":{"
    "\"huge\":{\"count\":2,\"mean\":1500050.000,\"p50\":100.351,\"p90\":3000000.000,"
    "\"p99\":3000000.000,\"p999\":3000000.000,\"max\":3000000.000},"
    "\"base\":{\"count\":3,\"mean\":8.344,\"p50\":5.119,\"p90\":20.000,\"p99\":20.000,"
    "\"p999\":20.000,\"max\":20.000},"
    "\"mthp\":{\"count\":0,\"mean\":0.000,\"p50\":0.000,\"p90\":0.000,\"p99\":0.000,"
    "\"p999\":0.000,\"max\":0.000},"
    "\"both\":{\"count\":5,\"mean\":600025.006,\"p50\":20.479,\"p90\":3000000.000,"
    "\"p99\":3000000.000,\"p999\":3000000.000,\"max\":3000000.000}},"
    "\"latency_bands\":{"
    "\"huge\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":1,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":1},"
    "\"base\":{\"<10us\":2,\"10-100us\":1,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0},"
    "\"mthp\":{\"<10us\":0,\"10-100us\":0,\"100us-1ms\":0,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":0},"
    "\"both\":{\"<10us\":2,\"10-100us\":1,\"100us-1ms\":1,\"1-10ms\":0,\"10-100ms\":0,"
    "\"100ms-1s\":0,\">=1s\":1}},"
    "\"latency_cdf\":{"
    "\"huge\":[[100.351,0.500000],[3000000.000,1.000000]],"
    "\"base\":[[0.031,0.333333],[5.119,0.666667],[20.000,1.000000]],"
    "\"mthp\":[],\"both\":[[0.031,0.200000],[5.119,0.400000],[20.479,0.600000],[100.351,0.800000],"
    "[3000000.000,1.000000]]},"
    /* exact counts per bucket [lo, hi] ns: the CDF's upper edges above, before clamping */
    "\"latency_hist\":{"
    "\"huge\":[[98304,100351,1],[2952790016,3019898879,1]],"
    "\"base\":[[31,31,1],[4992,5119,1],[19968,20479,1]],"
    "\"mthp\":[],\"both\":[[31,31,1],[4992,5119,1],[19968,20479,1],[98304,100351,1],"
    "[2952790016,3019898879,1]]},"
    "\"writeback_waits\":{\"count\":2,\"total_ms\":2500.000,\"max_ms\":1500.000},"
    "\"time_ms\":{\"compaction\":2900.000,\"reclaim\":0.000,\"writeback_wait\":2500.000,"
    "\"migrate\":0.000,\"zeroing\":4.000}}\n";

static void record_known(struct obs_faults *x)
{
	struct mm_fault_rec r = rec_of(MM_FAULT_HUGE);

	r.zero_ns = 2000000;
	obs_faults_record(x, &r, 100000);
	r.compact_ns = 2900000000ULL;
	r.wb_waits = 2;
	r.wb_wait_ns = 2500000000ULL;
	r.wb_wait_max_us = 1500000;
	r.cause = MM_CAUSE_COMPACT_WB_WAIT;
	obs_faults_record(x, &r, 3000000000ULL);
	r = rec_of(MM_FAULT_BASE);
	obs_faults_record(x, &r, 5000);
	obs_faults_record(x, &r, 20000);
	r = rec_of(MM_FAULT_NOMEM);
	obs_faults_record(x, &r, 31);
}

TEST(report_sections_are_byte_exact_for_a_known_input)
{
	char buf[8192];

	obs_faults_init(&f);
	record_known(&f);
	render(&f, buf, sizeof(buf));
	ASSERT_STREQ(buf, known_json);
}

/* A record initialised on zeroed memory (a fresh statistics file) is the same bytes as one
 * initialised from anything, and records and renders alike. */
TEST(init_on_zeroed_memory_equals_full_init)
{
	char a[8192], b[8192];

	memset(&f, 0xa5, sizeof(f));
	obs_faults_init(&f);
	memset(&g, 0, sizeof(g));
	obs_faults_init_zeroed(&g);
	ASSERT(memcmp(&f, &g, sizeof(f)) == 0);
	record_known(&f);
	record_known(&g);
	render(&f, a, sizeof(a));
	render(&g, b, sizeof(b));
	ASSERT_STREQ(a, b);
	ASSERT_STREQ(b, known_json);
}

TEST(merge_of_two_halves_renders_like_the_whole)
{
	char a[8192], b[8192];
	struct mm_fault_rec r = rec_of(MM_FAULT_BASE);

	obs_faults_init(&f);
	obs_faults_init(&g);
	record_known(&f);
	obs_faults_record(&f, &r, 777777);
	render(&f, a, sizeof(a));

	obs_faults_init(&f);
	record_known(&f);
	obs_faults_record(&g, &r, 777777);
	obs_faults_merge(&f, &g);
	render(&f, b, sizeof(b));
	ASSERT_STREQ(a, b);
}

TEST(vmstat_section_uses_kernel_names_in_order)
{
	uint64_t st[MM_STAT_NR];
	char buf[8192], want[8192];
	size_t off = 0;
	FILE *m;
	struct json_w w;

	for (int i = 0; i < MM_STAT_NR; i++)
		st[i] = (uint64_t)i * 1000 + 7;
	m = fmemopen(buf, sizeof(buf), "w");
	ASSERT(m != NULL);
	jw_init(&w, m, false);
	jw_obj_begin(&w, NULL);
	obs_report_vmstat(&w, st);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(m);
	off += (size_t)snprintf(want + off, sizeof(want) - off, "{\"vmstat\":{");
	for (int i = 0; i < MM_STAT_NR; i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s\"%s\":%d", i ? "," : "",
					mm_stat_names[i], i * 1000 + 7);
	snprintf(want + off, sizeof(want) - off, "}}\n");
	ASSERT_STREQ(buf, want);
	{
		const char *head =
		    "{\"vmstat\":{\"thp_fault_alloc\":7,\"thp_fault_fallback\":1007,";

		EXPECT(strncmp(buf, head, strlen(head)) == 0);
	}
}

#define THREADS	   4
#define PER_THREAD 100000

static void *recorder(void *arg)
{
	struct mm_fault_rec r = rec_of((uintptr_t)arg & 1 ? MM_FAULT_HUGE : MM_FAULT_BASE);

	r.wb_waits = 1;
	r.wb_wait_ns = 10;
	r.wb_wait_max_us = (uint32_t)(uintptr_t)arg;
	r.compact_ns = 3;
	for (int i = 0; i < PER_THREAD; i++)
		obs_faults_record(&f, &r, (uint64_t)i * 131);
	return NULL;
}

TEST(concurrent_records_lose_nothing)
{
	pthread_t t[THREADS];
	uint64_t bands = 0;

	obs_faults_init(&f);
	for (uintptr_t i = 0; i < THREADS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, recorder, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(f.lat[OBS_HUGE].count, THREADS / 2 * PER_THREAD);
	EXPECT_EQ(f.lat[OBS_BASE].count, THREADS / 2 * PER_THREAD);
	for (int c = 0; c < OBS_NCLASS; c++)
		for (int b = 0; b < OBS_NBANDS; b++)
			bands += f.bands[c][b];
	EXPECT_EQ(bands, THREADS * PER_THREAD);
	EXPECT_EQ(f.wb_waits, THREADS * PER_THREAD);
	EXPECT_EQ(f.wb_wait_ns, 10ULL * THREADS * PER_THREAD);
	EXPECT_EQ(f.compact_ns, 3ULL * THREADS * PER_THREAD);
	EXPECT_EQ(f.wb_wait_max_ns, (THREADS - 1) * 1000);
}

TEST_MAIN()
