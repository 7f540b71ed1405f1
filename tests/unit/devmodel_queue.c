/* Device model (core/io/devmodel.c): the service-slot queue, throughput, queueing, stalls,
 * flash GC, burst cache, pause/resume and determinism. All in virtual time. */
#include "harness.h"
#include "io/devmodel.h"
#include "util/units.h"

#include <errno.h>
#include <math.h>

#define MB  1000000ULL
#define MIB (1ULL << 20)
#define KIB 1024ULL
#define MS  NSEC_PER_MSEC
#define SEC NSEC_PER_SEC

#define HORIZON (1000000 * SEC) /* "long after everything completed" */

static struct devm_req reqs[40000];

static struct devm_params plain(uint64_t bw)
{
	struct devm_params p = {.write_bw = bw, .read_bw = bw, .slots = 1};

	return p;
}

static struct devm *mk(const struct devm_params *p, uint64_t seed)
{
	struct devm *m = NULL;

	if (devm_create(p, seed, &m) < 0 || !m)
		HARNESS_FAIL_(1, "devm_create");
	return m;
}

/* Submits n writes of len bytes at time 0 (sequential offsets from off0, or scattered by
 * stride) and pops them all; returns the last completion time. */
static uint64_t burst_all(struct devm *m, unsigned n, uint64_t len, uint64_t stride)
{
	uint64_t last = 0;
	struct devm_req *r;
	unsigned got = 0;

	for (unsigned i = 0; i < n; i++) {
		reqs[i] = (struct devm_req){.off = (uint64_t)i * stride, .len = len, .write = true};
		devm_submit(m, 0, &reqs[i]);
	}
	while ((r = devm_pop_done(m, HORIZON))) {
		if (r->t_done < last)
			HARNESS_FAIL_(1, "completion order: %llu after %llu",
				      (unsigned long long)r->t_done, (unsigned long long)last);
		last = r->t_done;
		got++;
	}
	if (got != n)
		HARNESS_FAIL_(1, "popped %u of %u", got, n);
	return last;
}

/* Closed loop, queue depth qd: a new request is submitted when one completes (like a writer
 * with qd outstanding I/Os), polling at the device's next completion. */
static uint64_t closed_loop(struct devm *m, unsigned n, uint64_t len, unsigned qd)
{
	unsigned sub = 0, done = 0;
	uint64_t now = 0;

	while (sub < qd && sub < n) {
		reqs[sub] = (struct devm_req){.off = sub * len, .len = len, .write = true};
		devm_submit(m, now, &reqs[sub]);
		sub++;
	}
	while (done < n) {
		struct devm_req *r;

		now = devm_next_completion(m);
		if (now == UINT64_MAX)
			HARNESS_FAIL_(1, "device idle with %u outstanding", sub - done);
		while ((r = devm_pop_done(m, now))) {
			done++;
			if (sub < n) {
				reqs[sub] =
				    (struct devm_req){.off = sub * len, .len = len, .write = true};
				devm_submit(m, now, &reqs[sub]);
				sub++;
			}
		}
	}
	return now;
}

TEST(long_sequential_stream_runs_at_configured_bandwidth)
{
	struct devm_params p = plain(5 * MB);
	uint64_t len = 128 * KIB, n = 4000, t;
	double want, ratio;
	struct devm *m;

	p.jitter = 0.20; /* lognormal with mean 1: must not bias throughput */
	m = mk(&p, 1);
	t = burst_all(m, n, len, len);
	want = (double)(n * len) / (double)p.write_bw * 1e9;
	ratio = (double)t / want;
	printf("  achieved/configured time ratio %.4f\n", ratio);
	EXPECT_NEAR(ratio, 1.0, 0.01);
	devm_destroy(m);

	/* The same with a writer keeping 4 requests in flight. */
	m = mk(&p, 2);
	t = closed_loop(m, n, len, 4);
	EXPECT_NEAR((double)t / want, 1.0, 0.01);
	devm_destroy(m);
}

TEST(preset_sequential_throughput_is_bandwidth_minus_setup)
{
	struct devm_params p;
	uint64_t len = 1 * MIB, n = 400, t;
	struct devm_stats st;
	double want;
	struct devm *m;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	m = mk(&p, 3);
	t = burst_all(m, n, len, len);
	want = n * ((double)p.setup_ns + (double)len * 1e9 / (double)p.write_bw);
	EXPECT_NEAR((double)t / want, 1.0, 0.01);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.gc_events, 0); /* sequential writes close full AUs: no forced GC */
	EXPECT_EQ(st.bytes_written, n * len);
	EXPECT_EQ(st.ops_written, n);
	EXPECT_EQ(st.in_flight, 0);
	EXPECT_EQ(st.queue_max, n);
	devm_destroy(m);
}

TEST(one_slot_serialises_n_slots_overlap_setup_not_bandwidth)
{
	struct devm_params p = plain(100 * MB);
	uint64_t t1, t8, small = 4 * KIB, big = 1 * MIB;
	struct devm *m;

	/* Small requests: setup dominates; 8 slots overlap it. */
	p.setup_ns = 1 * MS;
	m = mk(&p, 1);
	t1 = burst_all(m, 800, small, small);
	devm_destroy(m);
	p.slots = 8;
	m = mk(&p, 1);
	t8 = burst_all(m, 800, small, small);
	devm_destroy(m);
	printf("  4 KiB: 1 slot %.1f ms, 8 slots %.1f ms\n", t1 / 1e6, t8 / 1e6);
	EXPECT_NEAR((double)t1, 800 * (1e6 + small * 1e9 / 100e6), 800);
	EXPECT((double)t1 / (double)t8 > 6.0);

	/* Large requests: the medium is shared, so 8 slots cannot beat the bandwidth. */
	p.slots = 1;
	m = mk(&p, 1);
	t1 = burst_all(m, 100, big, big);
	devm_destroy(m);
	p.slots = 8;
	m = mk(&p, 1);
	t8 = burst_all(m, 100, big, big);
	devm_destroy(m);
	EXPECT((double)t8 >= 100 * big * 1e9 / 100e6);
	EXPECT_LT(t8, t1);
	EXPECT((double)t8 / (double)t1 > 0.9);
}

TEST(queued_request_starts_when_its_predecessor_completes)
{
	struct devm_params p = plain(1 * MB);
	struct devm_req a = {.off = 0, .len = 1000, .write = true};
	struct devm_req b = {.off = 1000, .len = 1000, .write = true};
	struct devm_stats st;
	struct devm *m;

	p.setup_ns = 1 * MS;
	m = mk(&p, 1);
	devm_submit(m, 0, &a);
	devm_submit(m, 100, &b);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.in_flight, 2);
	EXPECT_EQ(st.queued, 1);
	EXPECT_EQ(a.t_done, 2 * MS);
	EXPECT_EQ(devm_next_completion(m), 2 * MS);
	EXPECT(devm_pop_done(m, 2 * MS - 1) == NULL);
	/* Popping late does not shift b: it started when a's slot freed. */
	ASSERT(devm_pop_done(m, 10 * MS) == &a);
	EXPECT_EQ(b.t_arrive, 100);
	EXPECT_EQ(b.t_start, 2 * MS);
	EXPECT_EQ(b.t_done, 4 * MS);
	ASSERT(devm_pop_done(m, 10 * MS) == &b);
	EXPECT(devm_pop_done(m, 10 * MS) == NULL);
	EXPECT_EQ(devm_next_completion(m), UINT64_MAX);
	devm_destroy(m);
}

TEST(periodic_stall_every_x_bytes_adds_d)
{
	struct devm_params p = plain(10 * MB);
	uint64_t t, base = (uint64_t)(8 * MIB * 1e9 / (10 * MB));
	struct devm_stats st;
	struct devm *m;

	p.stall_every_bytes = 1 * MIB;
	p.stall_for_ns = 200 * MS;
	m = mk(&p, 1);
	t = burst_all(m, 128, 64 * KIB, 64 * KIB); /* 8 MiB */
	devm_get_stats(m, &st);
	EXPECT_EQ(st.stalls, 8);
	EXPECT_EQ(st.stall_ns, 8 * 200 * MS);
	EXPECT_NEAR((double)t, (double)(base + 8 * 200 * MS), 1000);
	devm_destroy(m);

	/* With jitter the mean stays D. */
	p.stall_jitter_ns = 100 * MS;
	m = mk(&p, 1);
	burst_all(m, 16384, 64 * KIB, 64 * KIB); /* 1 GiB: 1024 stalls */
	devm_get_stats(m, &st);
	EXPECT_EQ(st.stalls, 1024);
	EXPECT_NEAR(st.stall_ns / 1024.0, 200.0 * MS, 5.0 * MS);
	devm_destroy(m);

	/* Every T of device busy time. */
	p = plain(10 * MB);
	p.stall_every_ns = 100 * MS;
	p.stall_for_ns = 50 * MS;
	m = mk(&p, 1);
	t = burst_all(m, 100, 100000, 100000); /* 10 MB: 1 s busy */
	devm_get_stats(m, &st);
	EXPECT_EQ(st.stalls, 10);
	EXPECT_NEAR((double)t, 1.5 * SEC, 1000);
	devm_destroy(m);
}

/* The calibration of usb2-stick-2011's forced GC: 256 KiB writes scattered over many AUs
 * run at the 0.51 MB/s measured on a cheap USB 2.0 stick (SanDisk Cruzer Blade 16 GB, FAT,
 * davidsommers.com 2012) within 10 %; scattered 4 KiB writes (what sync compaction's writeouts
 * are) collapse to about 0.01 MB/s; a sequential stream keeps its 5 MB/s. */
TEST(stick_preset_random_write_rate)
{
	struct devm_params p;
	struct devm *m;
	double mbs;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	p.jitter = 0;
	m = mk(&p, 1);
	mbs = 64.0 * 256 * KIB / (double)burst_all(m, 64, 256 * KIB, 4 * MIB + 256 * KIB) * 1e3;
	printf("  scattered 256 KiB: %.3f MB/s\n", mbs);
	EXPECT(mbs > 0.51 * 0.9 && mbs < 0.51 * 1.1);
	devm_destroy(m);
	m = mk(&p, 1);
	mbs = 64.0 * 4 * KIB / (double)burst_all(m, 64, 4 * KIB, 4 * MIB + 4 * KIB) * 1e3;
	printf("  scattered 4 KiB: %.4f MB/s\n", mbs);
	EXPECT(mbs > 0.005 && mbs < 0.02);
	devm_destroy(m);
	m = mk(&p, 1);
	mbs = 64.0 * 1024 * KIB / (double)burst_all(m, 64, 1024 * KIB, 1024 * KIB) * 1e3;
	EXPECT(mbs > 4.9 && mbs < 5.0);
	devm_destroy(m);
}

TEST(scattered_writes_pay_flash_gc)
{
	struct devm_params p;
	uint64_t len = 64 * KIB, t_seq, t_rnd, stride = 4 * MIB + 7 * len;
	struct devm_stats st;
	struct devm *m;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	p.jitter = 0;
	m = mk(&p, 1);
	t_seq = burst_all(m, 64, len, len);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.gc_events, 0);
	devm_destroy(m);

	/* Each write lands in a different AU: beyond 2 open AUs each evicts a partly written one:
	 * copy (4 MiB - 64 KiB) at 9 MB/s + erase 2 ms. */
	m = mk(&p, 1);
	t_rnd = burst_all(m, 64, len, stride);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.gc_events, 62);
	EXPECT_NEAR((double)st.gc_ns / 62, (4 * MIB - len) * 1e9 / (9 * MB) + 2e6, 1000);
	printf("  64 x 64 KiB: sequential %.2f s, scattered %.2f s\n", t_seq / 1e9, t_rnd / 1e9);
	EXPECT((double)t_rnd / (double)t_seq > 30.0);
	devm_destroy(m);

	/* Alternating between two AUs stays within the open set: no GC. */
	m = mk(&p, 1);
	for (unsigned i = 0; i < 64; i++) {
		reqs[i] = (struct devm_req){
		    .off = (i % 2) * 4 * MIB + (i / 2) * len, .len = len, .write = true};
		devm_submit(m, 0, &reqs[i]);
	}
	while (devm_pop_done(m, UINT64_MAX - 1))
		;
	devm_get_stats(m, &st);
	EXPECT_EQ(st.gc_events, 0);
	devm_destroy(m);
}

TEST(burst_cache_then_sustained_rate)
{
	struct devm_params p = plain(5 * MB);
	uint64_t len = 256 * KIB, t;
	struct devm *m;

	p.burst_bytes = 16 * MIB;
	p.burst_bw = 50 * MB;
	m = mk(&p, 1);
	/* 8 MiB fits in the cache (net fill 45 MB/s): written at about the burst rate. */
	t = burst_all(m, 32, len, len);
	EXPECT_NEAR((double)t, 8 * MIB * 1e9 / (50 * MB), 1e6);
	devm_destroy(m);

	/* 400 MiB: long-run rate is the sustained one (plus the cache's head start). */
	m = mk(&p, 1);
	t = burst_all(m, 1600, len, len);
	{
		double fill_s = 16.0 * MIB / (45 * MB); /* time to fill the cache */
		double early = fill_s * 50 * MB;	/* bytes accepted meanwhile */
		double want = fill_s + (400.0 * MIB - early) / (5 * MB);

		EXPECT_NEAR(t / 1e9 / want, 1.0, 0.01);
	}
	devm_destroy(m);

	/* Idle time drains the cache: after 10 s idle the next 8 MiB are fast again. */
	m = mk(&p, 1);
	{
		uint64_t end = 0, t0;
		struct devm_req *r;

		for (unsigned i = 0; i < 64; i++) { /* 16 MiB: fills it */
			reqs[i] = (struct devm_req){.off = i * len, .len = len, .write = true};
			devm_submit(m, 0, &reqs[i]);
		}
		while ((r = devm_pop_done(m, 10 * SEC)))
			end = r->t_done;
		ASSERT_LT(end, 10 * SEC);
		t0 = end + 10 * SEC;
		for (unsigned i = 0; i < 32; i++) {
			reqs[i] = (struct devm_req){.off = i * len, .len = len, .write = true};
			devm_submit(m, t0, &reqs[i]);
		}
		while ((r = devm_pop_done(m, HORIZON)))
			end = r->t_done;
		EXPECT_NEAR((double)(end - t0), 8 * MIB * 1e9 / (50 * MB), 1e6);
	}
	devm_destroy(m);
}

TEST(hdd_seeks_only_when_not_sequential)
{
	struct devm_params p;
	struct devm_stats st;
	struct devm *m;

	ASSERT_EQ(devm_preset("usb2-hdd", &p), 0);
	p.jitter = 0;
	m = mk(&p, 1);
	burst_all(m, 100, 64 * KIB, 64 * KIB);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.seeks, 0);
	devm_destroy(m);
	m = mk(&p, 1);
	burst_all(m, 100, 64 * KIB, 1 * MIB);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.seeks, 99);
	devm_destroy(m);
}

TEST(reads_use_read_rate_and_share_the_medium)
{
	struct devm_params p = plain(1 * MB);
	struct devm_req w = {.off = 0, .len = 1 * MB, .write = true};
	struct devm_req r = {.off = 0, .len = 1 * MB, .write = false};
	struct devm_stats st;
	struct devm *m;

	p.read_bw = 10 * MB;
	p.slots = 2;
	m = mk(&p, 1);
	devm_submit(m, 0, &w);
	devm_submit(m, 0, &r);
	EXPECT_EQ(w.t_done, 1 * SEC);
	EXPECT_EQ(r.t_start, 0);		 /* got the second slot ... */
	EXPECT_EQ(r.t_done, 1 * SEC + 100 * MS); /* ... but waited for the medium */
	while (devm_pop_done(m, 2 * SEC))
		;
	devm_get_stats(m, &st);
	EXPECT_EQ(st.bytes_read, 1 * MB);
	EXPECT_EQ(st.ops_read, 1);
	devm_destroy(m);
}

TEST(pause_holds_and_resume_releases)
{
	struct devm_params p = plain(1 * MB);
	struct devm_req a = {.len = 1000, .write = true},
			b = {.off = 1000, .len = 1000, .write = true};
	struct devm_stats st;
	struct devm *m;

	m = mk(&p, 1);
	devm_submit(m, 0, &a); /* in service until 1 ms */
	devm_pause(m, 0);
	EXPECT(devm_paused(m));
	devm_submit(m, 10, &b); /* held */
	/* the request in service drains ... */
	ASSERT(devm_pop_done(m, 3600 * SEC) == &a);
	/* ... nothing else completes, however long we wait */
	EXPECT_EQ(devm_next_completion(m), UINT64_MAX);
	EXPECT(devm_pop_done(m, 3600 * SEC) == NULL);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.queued, 1);
	EXPECT(st.paused);
	devm_resume(m, 3600 * SEC);
	EXPECT(!devm_paused(m));
	EXPECT_EQ(b.t_start, 3600 * SEC);
	EXPECT_EQ(devm_next_completion(m), 3600 * SEC + 1 * MS);
	ASSERT(devm_pop_done(m, 3601 * SEC) == &b);
	devm_destroy(m);
}

TEST(dead_device_hangs_until_resumed)
{
	struct devm_params p;
	struct devm_req a = {.len = 4096, .write = true};
	struct devm *m;

	ASSERT_EQ(devm_preset("dead", &p), 0);
	m = mk(&p, 1);
	EXPECT(devm_paused(m));
	devm_submit(m, 0, &a);
	EXPECT_EQ(devm_next_completion(m), UINT64_MAX);
	EXPECT(devm_pop_done(m, 86400 * SEC) == NULL);
	devm_resume(m, 86400 * SEC);
	ASSERT(devm_pop_done(m, 86400 * SEC) == &a);
	EXPECT_EQ(a.err, 0);
	devm_destroy(m);

	/* dead=1 at run time hangs a live device; dead=0 revives it. */
	ASSERT_EQ(devm_preset("fast", &p), 0);
	m = mk(&p, 1);
	ASSERT_EQ(devm_set(m, 5, "dead", "1"), 0);
	devm_submit(m, 6, &a);
	EXPECT(devm_pop_done(m, 1000 * SEC) == NULL);
	ASSERT_EQ(devm_set(m, 1000 * SEC, "dead", "0"), 0);
	ASSERT(devm_pop_done(m, 1000 * SEC) == &a);
	devm_destroy(m);
}

TEST(runtime_set_retimes_requests_in_service_and_applies_to_the_rest)
{
	struct devm_params p = plain(1 * MB);
	struct devm_req a = {.len = 1 * MB, .write = true},
			b = {.off = 1 * MB, .len = 1 * MB, .write = true};
	struct devm *m;

	m = mk(&p, 1);
	devm_submit(m, 0, &a);
	devm_submit(m, 0, &b);
	ASSERT_EQ(a.t_done, 1 * SEC);
	/* half way through a, the device doubles its speed: a's other half takes 250 ms */
	ASSERT_EQ(devm_set(m, 500 * MS, "bandwidth", "2MB/s"), 0);
	EXPECT_EQ(a.t_done, 750 * MS);
	while (devm_pop_done(m, 10 * SEC))
		;
	EXPECT_EQ(b.t_done, 1250 * MS); /* not started then: all of it at the new rate */
	EXPECT_EQ(devm_set(m, 0, "slots", "0"), -EINVAL);
	EXPECT_EQ(devm_set(m, 0, "nonsense", "1"), -ENOENT);
	EXPECT_EQ(devm_params(m)->write_bw, 2 * MB);
	devm_destroy(m);

	/* Raising slots at run time starts queued requests at once. */
	m = mk(&p, 1);
	devm_submit(m, 0, &a);
	devm_submit(m, 0, &b);
	ASSERT_EQ(devm_set(m, 100, "slots", "2"), 0);
	EXPECT_EQ(b.t_start, 100);
	devm_destroy(m);
}

/* "bandwidth=1" held a 1 MiB write for 12 days, and neither preset=fast nor resume
 * released it. A value that slow is refused now, the slowest accepted one is re-timed away by
 * a faster preset, and no combination holds a request for more than DEVM_BUSY_MAX_NS. */
TEST(held_request_follows_the_device_it_is_held_by)
{
	struct devm_params p;
	struct devm_req a = {.len = 1 * MIB, .write = true};
	struct devm *m;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	EXPECT_EQ(devm_params_set(&p, "bandwidth", "1"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "latency", "1h"), -EINVAL);
	EXPECT(strcmp(devm_key_accepted("bandwidth"), "0 (unthrottled) or 10KB/s..1TB/s") == 0);
	ASSERT_EQ(devm_params_set(&p, "bandwidth", "10KB/s"), 0);
	p.jitter = 0;
	p.gc_au_bytes = 0;
	m = mk(&p, 1);
	devm_submit(m, 0, &a);
	EXPECT_GT(a.t_done, 100 * SEC); /* 1 MiB at 10 KB/s */
	ASSERT_EQ(devm_set(m, 2 * SEC, "preset", "fast"), 0);
	EXPECT_EQ(a.t_done, 2 * SEC);
	ASSERT(devm_pop_done(m, 2 * SEC) == &a);
	devm_destroy(m);

	/* the slowest transfer with every stall there is: capped */
	ASSERT_EQ(devm_params_set(&p, "stall-every", "64K"), 0);
	ASSERT_EQ(devm_params_set(&p, "stall-for", "10s"), 0);
	m = mk(&p, 1);
	a = (struct devm_req){.len = 1 * MIB, .write = true};
	devm_submit(m, 0, &a);
	EXPECT_EQ(a.t_done, p.setup_ns + DEVM_BUSY_MAX_NS);
	devm_destroy(m);
}

static void workload(struct devm *m, unsigned n, uint64_t *done, int *errs, uint64_t step)
{
	uint64_t now = 0;
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		struct devm_req *r;

		reqs[i] = (struct devm_req){.off = (i * 2654435761ULL) % (256 * MIB),
					    .len = 4 * KIB << (i % 6),
					    .write = i % 5 != 0};
		devm_submit(m, now, &reqs[i]);
		now += 3 * MS;
		while (step && (r = devm_pop_done(m, now)))
			k++;
	}
	while (devm_pop_done(m, UINT64_MAX - 1))
		k++;
	for (unsigned i = 0; i < n; i++) {
		done[i] = reqs[i].t_done;
		errs[i] = reqs[i].err;
	}
}

TEST(same_seed_gives_same_completion_times)
{
	static uint64_t d1[3000], d2[3000], d3[3000];
	static int e1[3000], e2[3000], e3[3000];
	const char *const *names = devm_preset_names();

	for (; *names; names++) {
		struct devm_params p;
		struct devm *m;

		ASSERT_EQ(devm_preset(*names, &p), 0);
		if (p.dead)
			continue;
		p.error_rate = 0.01;
		m = mk(&p, 42);
		workload(m, 3000, d1, e1, 0);
		devm_destroy(m);
		/* same seed, polled at every step instead of once: identical */
		m = mk(&p, 42);
		workload(m, 3000, d2, e2, 1);
		devm_destroy(m);
		m = mk(&p, 43);
		workload(m, 3000, d3, e3, 0);
		devm_destroy(m);
		EXPECT(memcmp(d1, d2, sizeof(d1)) == 0);
		EXPECT(memcmp(e1, e2, sizeof(e1)) == 0);
		if (p.jitter > 0)
			EXPECT(memcmp(d1, d3, sizeof(d1)) != 0);
	}
}

TEST(fast_preset_completes_at_arrival)
{
	struct devm_params p;
	struct devm_req a = {.len = 1 * MIB, .write = true};
	struct devm *m;

	ASSERT_EQ(devm_preset("fast", &p), 0);
	m = mk(&p, 1);
	devm_submit(m, 777, &a);
	EXPECT_EQ(devm_next_completion(m), 777);
	ASSERT(devm_pop_done(m, 777) == &a);
	devm_destroy(m);
}

TEST_MAIN()
