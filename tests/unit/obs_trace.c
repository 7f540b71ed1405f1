/* Fault traces (core/obs/trace.c): the header and its configuration text round-trip, so do every
 * decision (zero pages: version 2) and the zero-page write flag, version 1 files still load,
 * records load in file order with END found anywhere, the replay order is the effect time (stable),
 * a truncated or foreign file is refused with a reason, and a release waits for exactly the faults
 * recorded before it on the pages it frees. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "mm/mm.h"
#include "obs/trace.h"

static char path[64];

static void write_trace_zero(const struct obs_trace_rec *recs, size_t n, size_t extra_bytes,
			     const char *zero_page)
{
	const char *keys[] = {"policy", "pool_bytes", "cmdline", "zero_page"};
	const char *vals[] = {"linux-3.1", "268435456", "usemem --size\n64M", zero_page};
	char hdr[OBS_TRACE_HDR_MAX];
	size_t len =
	    obs_trace_header(hdr, sizeof(hdr), 1000, 2000, 42, keys, vals, zero_page ? 4 : 3);
	int fd;

	ASSERT(len > sizeof(struct obs_trace_hdr) && len % 8 == 0);
	snprintf(path, sizeof(path), "/tmp/thpemu-obs-trace.%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, hdr, len), (ssize_t)len);
	ASSERT_EQ(write(fd, recs, n * sizeof(*recs)), (ssize_t)(n * sizeof(*recs)));
	if (extra_bytes)
		ASSERT_EQ(write(fd, recs, extra_bytes), (ssize_t)extra_bytes);
	close(fd);
}

static void write_trace(const struct obs_trace_rec *recs, size_t n, size_t extra_bytes)
{
	write_trace_zero(recs, n, extra_bytes, NULL);
}

/* Rewrite the version in the header of the file at path. */
static void set_version(uint32_t version)
{
	struct obs_trace_hdr h;
	int fd = open(path, O_RDWR);

	ASSERT(fd >= 0);
	ASSERT_EQ(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	h.version = version;
	ASSERT_EQ(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
}

static struct obs_trace_rec fault(uint64_t t, uint64_t addr, unsigned decision, uint32_t tid)
{
	return (struct obs_trace_rec){.t_ns = t,
				      .addr = addr,
				      .val = 5000,
				      .val2 = 10,
				      .tid = tid,
				      .type = OBS_TR_FAULT,
				      .flags =
					  (uint8_t)(OBS_TRF_WRITE | decision << OBS_TRF_DEC_SHIFT)};
}

static struct obs_trace_rec range(unsigned type, uint64_t t, uint64_t addr, uint64_t len)
{
	return (struct obs_trace_rec){
	    .t_ns = t, .addr = addr, .val = len, .tid = 1, .type = (uint8_t)type};
}

TEST(header_and_configuration_round_trip)
{
	struct obs_trace_rec r[] = {range(OBS_TR_MAP, 5, 0x200000, 0x400000),
				    fault(10, 0x200000, 0, 7),
				    {.type = OBS_TR_END, .val = 3}};
	struct obs_trace t;
	char err[256], v[64];

	write_trace(r, 3, 0);
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT(obs_trace_is_trace(path));
	EXPECT_EQ(t.hdr.pid, 42);
	EXPECT_EQ(t.hdr.t0_mono_ns, 1000);
	EXPECT_EQ(t.hdr.t0_real_ns, 2000);
	ASSERT_STREQ(obs_trace_get(&t, "policy", v, sizeof(v)), "linux-3.1");
	ASSERT_STREQ(obs_trace_get(&t, "pool_bytes", v, sizeof(v)), "268435456");
	ASSERT_STREQ(obs_trace_get(&t, "cmdline", v, sizeof(v)),
		     "usemem --size 64M");			 /* one line */
	EXPECT(obs_trace_get(&t, "pool", v, sizeof(v)) == NULL); /* a prefix is not a key */
	EXPECT_EQ(t.n, 2);
	EXPECT(t.complete);
	EXPECT_EQ(t.dropped, 3);
	EXPECT_EQ(t.counts[OBS_TR_FAULT], 1);
	EXPECT_EQ(t.counts[OBS_TR_MAP], 1);
	EXPECT_EQ(obs_trace_decision(&t.recs[1]), 0);
	obs_trace_free(&t);
	unlink(path);
}

/* Version 2: every decision round-trips, the zero ones (a third bit) included, with the first
 * write to a zero page flagged and the recording's zero_page setting in the header. */
TEST(zero_decisions_and_zero_page_writes_round_trip)
{
	static const unsigned decisions[] = {MM_FAULT_HUGE, MM_FAULT_BASE, MM_FAULT_NOMEM,
					     MM_FAULT_MTHP, MM_FAULT_ZERO, MM_FAULT_HUGE_ZERO};
	struct obs_trace_rec r[8];
	struct obs_trace t;
	char err[256];
	size_t n = 0;

	for (unsigned i = 0; i < 6; i++) {
		r[n] = fault(10 + i, 0x200000 + 0x1000 * i, 0, 7);
		r[n].flags = (uint8_t)((decisions[i] >= MM_FAULT_ZERO ? 0 : OBS_TRF_WRITE) |
				       obs_trace_decision_flags(decisions[i]) |
				       OBS_TRF_CAND); /* the bits beside stay */
		n++;
	}
	r[n] = fault(20, 0x200000, MM_FAULT_BASE, 7);
	r[n++].flags |= OBS_TRF_WP_ZERO;
	r[n++] = (struct obs_trace_rec){.type = OBS_TR_END};
	write_trace_zero(r, n, 0, "1");
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT_EQ(t.hdr.version, OBS_TRACE_VERSION);
	ASSERT_EQ(t.n, 7);
	for (unsigned i = 0; i < 6; i++) {
		EXPECT_EQ(obs_trace_decision(&t.recs[i]), decisions[i]);
		EXPECT(t.recs[i].flags & OBS_TRF_CAND);
		EXPECT(!(t.recs[i].flags & OBS_TRF_WP_ZERO));
		EXPECT_EQ(!!(t.recs[i].flags & OBS_TRF_WRITE), decisions[i] < MM_FAULT_ZERO);
	}
	EXPECT_EQ(obs_trace_decision(&t.recs[6]), MM_FAULT_BASE);
	EXPECT(t.recs[6].flags & OBS_TRF_WP_ZERO);
	EXPECT(t.recs[6].flags & OBS_TRF_WRITE);
	EXPECT(obs_trace_zero_pages(&t));
	obs_trace_free(&t);
	write_trace_zero(r, n, 0, "0");
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT(!obs_trace_zero_pages(&t));
	obs_trace_free(&t);
	unlink(path);
}

/* A version 1 trace still loads: its decisions are two bits, and it has no zero pages whatever
 * its header or the records' unused bits say. A version this thpemu does not know is refused
 * with a message naming both. */
TEST(version_1_traces_load_without_zero_pages_and_unknown_versions_are_named)
{
	struct obs_trace_rec r[] = {fault(1, 0x1000, MM_FAULT_MTHP, 1), {.type = OBS_TR_END}};
	struct obs_trace t;
	char err[256];

	r[0].flags |= OBS_TRF_DEC_HI | OBS_TRF_WP_ZERO;
	write_trace_zero(r, 2, 0, "1");
	set_version(1);
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT_EQ(t.hdr.version, 1);
	EXPECT_EQ(obs_trace_decision(&t.recs[0]), MM_FAULT_MTHP);
	EXPECT(!(t.recs[0].flags & OBS_TRF_WP_ZERO));
	EXPECT(!obs_trace_zero_pages(&t));
	obs_trace_free(&t);
	set_version(0);
	EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "version 0: this thpemu reads versions 1 to 2") != NULL);
	set_version(3);
	EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -EINVAL);
	EXPECT(
	    strstr(err, "version 3: this thpemu reads versions 1 to 2 (a newer thpemu wrote it)") !=
	    NULL);
	unlink(path);
}

TEST(records_after_end_and_a_torn_tail)
{
	struct obs_trace_rec r[] = {
	    fault(1, 0x1000, 1, 1), {.type = OBS_TR_END}, fault(2, 0x2000, 1, 1)};
	struct obs_trace t;
	char err[256];

	write_trace(r, 3, 17); /* a partial record at the end: a crash while writing */
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT(t.complete);
	EXPECT_EQ(t.n, 2); /* the process's last moments follow END */
	obs_trace_free(&t);
	write_trace(r, 1, 0);
	ASSERT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
	EXPECT(!t.complete); /* no END: truncated */
	EXPECT_EQ(t.n, 1);
	obs_trace_free(&t);
	unlink(path);
}

TEST(foreign_and_damaged_files_are_refused)
{
	struct obs_trace t;
	char err[256];
	int fd;

	snprintf(path, sizeof(path), "/tmp/thpemu-obs-trace.%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, "{\"kind\":\"run\"}\n", 15), 15);
	close(fd);
	EXPECT(!obs_trace_is_trace(path));
	EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "not a thpemu trace") != NULL);
	EXPECT_EQ(obs_trace_load("/nonexistent/trace", &t, err, sizeof(err)), -ENOENT);
	{
		struct obs_trace_rec r[] = {fault(1, 0x1000, 1, 1)};
		struct obs_trace_hdr h;

		write_trace(r, 1, 0);
		fd = open(path, O_RDWR);
		ASSERT(fd >= 0);
		ASSERT_EQ(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
		h.version = 99;
		ASSERT_EQ(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
		close(fd);
		EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -EINVAL);
		EXPECT(strstr(err, "version 99") != NULL);
	}
	unlink(path);
}

TEST(sort_orders_by_effect_time_and_keeps_ties_in_file_order)
{
	struct obs_trace t = {0};
	struct obs_trace_rec r[] = {
	    fault(100, 0x1000, 1, 1),		      /* effect 110 */
	    range(OBS_TR_MAP, 50, 0x0, 0x100000),     /* 50 */
	    range(OBS_TR_ADOPT, 110, 0x200000, 4096), /* 110: after the fault (file order) */
	    range(OBS_TR_RESIDENT, 110, 0x200000, 4096),
	    fault(20, 0x3000, 1, 2), /* 30 */
	};

	t.recs = r;
	t.n = 5;
	obs_trace_sort(&t);
	EXPECT_EQ(r[0].type, OBS_TR_FAULT);
	EXPECT_EQ(r[0].addr, 0x3000);
	EXPECT_EQ(r[1].type, OBS_TR_MAP);
	EXPECT_EQ(r[2].addr, 0x1000);
	EXPECT_EQ(r[3].type, OBS_TR_ADOPT);
	EXPECT_EQ(r[4].type, OBS_TR_RESIDENT);
}

TEST(a_release_waits_for_the_faults_on_its_pages)
{
	struct obs_trace t = {0};
	struct obs_trace_rec r[] = {
	    fault(1, 0x400000, 0, 1),			  /* 0: huge: keyed by its extent */
	    fault(2, 0x601000, 1, 2),			  /* 1: base */
	    fault(3, 0x800000, 1, 2),			  /* 2: base, outside the release */
	    range(OBS_TR_RELEASE, 4, 0x5ff000, 0x3000),	  /* 3: the huge extent's tail, 0x601000 */
	    range(OBS_TR_RELEASE, 5, 0x400000, 0x200000), /* 4: the huge extent */
	    fault(6, 0x601000, 1, 2),			  /* 5: after the releases */
	    range(OBS_TR_RELEASE, 7, 0x600000, 0x400000), /* 6: faults 2 and 5 */
	};
	uint32_t *before, *pending;

	t.recs = r;
	t.n = 7;
	t.counts[OBS_TR_FAULT] = 4;
	ASSERT_EQ(obs_trace_deps(&t, &before, &pending), 0);
	/* release 3 covers 0x5ff000..0x602000: the huge extent 0x400000 and base page 0x601000 */
	EXPECT_EQ(before[0], 3);
	EXPECT_EQ(before[1], 3);
	EXPECT_EQ(pending[3], 2);
	EXPECT_EQ(pending[4], 0); /* fault 0 already precedes release 3 */
	EXPECT_EQ(before[2], 6);
	EXPECT_EQ(before[5], 6);
	EXPECT_EQ(pending[6], 2);
	EXPECT_EQ(before[3], UINT32_MAX); /* releases wait, they are not waited for */
	free(before);
	free(pending);
}

/* What no recording writes is refused with the record named, before any consumer
 * (a replay allocating a region per range, waiting until a record's time) sees it. */
TEST(records_beyond_what_a_trace_holds_are_refused)
{
	const struct {
		struct obs_trace_rec r;
		const char *why;
	} bad[] = {
	    {range(OBS_TR_RESIDENT, 5, 0x7f0000200000ULL, -0x7f0000200000ULL + 8192), "wraps"},
	    {range(OBS_TR_MAP, 5, 0x200000, 0x1001), "unaligned"},
	    {range(OBS_TR_RELEASE, 5, 1ULL << 57, 4096), "user space"},
	    {fault(1ULL << 62, 0x1000, 1, 1), "beyond 2^62"},
	    {{.t_ns = 1, .addr = 0x1000, .val2 = UINT64_MAX - 5, .tid = 1, .type = OBS_TR_FAULT},
	     "decision time"},
	    {{.t_ns = 1,
	      .addr = 0x200000,
	      .val = 8192,
	      .val2 = (1ULL << 57) - 4096,
	      .tid = 1,
	      .type = OBS_TR_REMAP},
	     "leave user space"},
	};
	struct obs_trace_rec ok = range(OBS_TR_MAP, 1, 0x200000, 0x200000);
	struct obs_trace t;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct obs_trace_rec r[] = {ok, bad[i].r};

		write_trace(r, 2, 0);
		EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -EINVAL);
		EXPECT(strstr(err, "corrupt trace: record 1") && strstr(err, bad[i].why));
	}
	/* 64 GiB of changes, and 2 MiB per record besides: 3 records change 64 GiB + 6 MiB */
	{
		struct obs_trace_rec r[] = {range(OBS_TR_MAP, 1, 0x200000, 64ULL << 30),
					    range(OBS_TR_RELEASE, 2, 0x200000, 4096),
					    range(OBS_TR_MAP, 3, 0x200000, (6ULL << 20) - 4096)};

		write_trace(r, 3, 0);
		EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), 0);
		obs_trace_free(&t);
		r[2].val += 4096;
		write_trace(r, 3, 0);
		EXPECT_EQ(obs_trace_load(path, &t, err, sizeof(err)), -E2BIG);
		EXPECT(strstr(err, "64 GiB + 2 MiB per record") != NULL);
	}
	unlink(path);
}

TEST(a_plan_has_at_most_4096_threads_found_by_hash)
{
	static struct obs_trace_rec r[OBS_TRACE_THREADS_MAX + 1];
	struct obs_trace t = {0};
	struct obs_trace_plan p;

	for (uint32_t i = 0; i <= OBS_TRACE_THREADS_MAX; i++)
		r[i] = fault(i, 0x1000 + 4096ULL * i, 1, 1000 + i * 7919);
	t.recs = r;
	t.n = OBS_TRACE_THREADS_MAX;
	t.counts[OBS_TR_FAULT] = t.n;
	ASSERT_EQ(obs_trace_plan(&t, &p), 0);
	EXPECT_EQ(p.nthreads, OBS_TRACE_THREADS_MAX);
	EXPECT_EQ(p.threads[17].tid, 1000 + 17 * 7919);
	EXPECT_EQ(p.threads[17].n, 1);
	obs_trace_plan_free(&p);
	t.n++;
	EXPECT_EQ(obs_trace_plan(&t, &p), -E2BIG);
	r[OBS_TRACE_THREADS_MAX].tid = r[3].tid; /* a known thread: fine */
	ASSERT_EQ(obs_trace_plan(&t, &p), 0);
	EXPECT_EQ(p.threads[3].n, 2);
	obs_trace_plan_free(&p);
}

TEST_MAIN()
