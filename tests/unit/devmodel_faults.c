/* Device model (core/io/devmodel*.c): error injection (rate, window, cycle, ENOSPC at capacity)
 * and the parameter language (presets, key=value with human units, round trip). */
#include "harness.h"
#include "io/devmodel.h"
#include "util/units.h"

#include <errno.h>
#include <math.h>

#define MB  1000000ULL
#define MIB (1ULL << 20)
#define MS  NSEC_PER_MSEC
#define SEC NSEC_PER_SEC

static struct devm_req reqs[20000];

static struct devm *mk(const struct devm_params *p, uint64_t seed)
{
	struct devm *m = NULL;

	if (devm_create(p, seed, &m) < 0 || !m)
		HARNESS_FAIL_(1, "devm_create");
	return m;
}

TEST(error_rate_matches_probability)
{
	struct devm_params p = {.write_bw = 100 * MB, .slots = 4, .error_rate = 0.1};
	const unsigned n = 20000;
	struct devm_stats st;
	unsigned eio = 0;
	struct devm *m = mk(&p, 9);
	struct devm_req *r;

	for (unsigned i = 0; i < n; i++) {
		reqs[i] = (struct devm_req){.off = i * 4096ULL, .len = 4096, .write = true};
		devm_submit(m, 0, &reqs[i]);
	}
	while ((r = devm_pop_done(m, UINT64_MAX - 1)))
		eio += r->err == -EIO;
	devm_get_stats(m, &st);
	EXPECT_EQ(st.errors_injected, eio);
	/* binomial sd = sqrt(0.1 * 0.9 / n) = 0.0021: allow 4 sd */
	EXPECT_NEAR((double)eio / n, 0.1, 0.0085);
	EXPECT_EQ(st.ops_written, n - eio); /* failed requests are not counted as written */
	devm_destroy(m);

	p.error_rate = 1;
	m = mk(&p, 9);
	devm_submit(m, 0, &reqs[0]);
	ASSERT(devm_pop_done(m, SEC) == &reqs[0]);
	EXPECT_EQ(reqs[0].err, -EIO);
	devm_destroy(m);
}

/* One 1 ms request every 10 ms, indexes from..n-1; err[i] = its error. */
static void tick_requests(struct devm *m, int *err, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++) {
		reqs[i] = (struct devm_req){.off = i * 1000ULL, .len = 1000, .write = true};
		devm_submit(m, i * 10 * MS, &reqs[i]);
		while (devm_pop_done(m, i * 10 * MS + 5 * MS))
			;
		err[i] = reqs[i].err;
	}
}

TEST(error_window_fails_requests_starting_inside_it)
{
	struct devm_params p = {.write_bw = 1 * MB, .slots = 1};
	static int err[1000];
	struct devm *m;

	ASSERT_EQ(devm_params_set(&p, "error-window", "2s+1s"), 0);
	m = mk(&p, 1);
	tick_requests(m, err, 0, 1000);
	for (unsigned i = 0; i < 1000; i++) {
		bool in = i >= 200 && i < 300;

		if ((err[i] == -EIO) != in)
			HARNESS_FAIL_(1, "request %u at %u ms: err %d", i, i * 10, err[i]);
	}
	devm_destroy(m);

	/* At run time, the window counts from the moment it is set. */
	p = (struct devm_params){.write_bw = 1 * MB, .slots = 1};
	m = mk(&p, 1);
	tick_requests(m, err, 0, 500);
	ASSERT_EQ(devm_set(m, 5 * SEC, "error-window", "500ms"), 0);
	EXPECT_EQ(devm_params(m)->err_win_start_ns, 5 * SEC);
	tick_requests(m, err, 500, 1000);
	for (unsigned i = 0; i < 1000; i++)
		if ((err[i] == -EIO) != (i >= 500 && i < 550))
			HARNESS_FAIL_(1, "request %u: err %d", i, err[i]);
	devm_destroy(m);
}

TEST(error_cycle_alternates_up_and_down)
{
	struct devm_params p = {.write_bw = 1 * MB, .slots = 1};
	static int err[1000];
	struct devm *m;

	ASSERT_EQ(devm_params_set(&p, "error-cycle", "1s/250ms"), 0);
	m = mk(&p, 1);
	tick_requests(m, err, 0, 1000);
	for (unsigned i = 0; i < 1000; i++) {
		bool down = (i * 10) % 1250 >= 1000;

		if ((err[i] == -EIO) != down)
			HARNESS_FAIL_(1, "request %u: err %d", i, err[i]);
	}
	devm_destroy(m);
}

TEST(writes_beyond_capacity_fail_enospc)
{
	struct devm_params p = {.write_bw = 1 * MB, .slots = 1, .capacity = 1 * MIB};
	struct devm_req ok = {.off = 1 * MIB - 4096, .len = 4096, .write = true};
	struct devm_req over = {.off = 1 * MIB - 4096, .len = 8192, .write = true};
	struct devm_req rd = {.off = 2 * MIB, .len = 4096, .write = false};
	struct devm_stats st;
	struct devm *m = mk(&p, 1);

	devm_submit(m, 0, &ok);
	devm_submit(m, 0, &over);
	devm_submit(m, 0, &rd);
	while (devm_pop_done(m, UINT64_MAX - 1))
		;
	EXPECT_EQ(ok.err, 0);
	EXPECT_EQ(over.err, -ENOSPC);
	EXPECT_EQ(rd.err, 0);
	devm_get_stats(m, &st);
	EXPECT_EQ(st.errors_enospc, 1);
	EXPECT_EQ(st.errors_injected, 0);
	devm_destroy(m);
}

TEST(keys_take_human_units)
{
	struct devm_params p = {.slots = 1};

	ASSERT_EQ(devm_params_set(&p, "bandwidth", "2M"), 0);
	EXPECT_EQ(p.write_bw, 2 * MIB);
	ASSERT_EQ(devm_params_set(&p, "bandwidth", "40Mbit/s"), 0);
	EXPECT_EQ(p.write_bw, 5 * MB);
	ASSERT_EQ(devm_params_set(&p, "latency", "5ms"), 0);
	EXPECT_EQ(p.setup_ns, 5 * MS);
	ASSERT_EQ(devm_params_set(&p, "jitter", "20%"), 0);
	EXPECT_NEAR(p.jitter, 0.2, 1e-12);
	ASSERT_EQ(devm_params_set(&p, "slots", "32"), 0);
	EXPECT_EQ(p.slots, 32);
	ASSERT_EQ(devm_params_set(&p, "stall-every", "4M"), 0);
	EXPECT_EQ(p.stall_every_bytes, 4 * MIB);
	EXPECT_EQ(p.stall_every_ns, 0);
	ASSERT_EQ(devm_params_set(&p, "stall-every", "2s"), 0);
	EXPECT_EQ(p.stall_every_ns, 2 * SEC);
	EXPECT_EQ(p.stall_every_bytes, 0);
	ASSERT_EQ(devm_params_set(&p, "error-rate", "0.1"), 0);
	EXPECT_NEAR(p.error_rate, 0.1, 1e-12);
	ASSERT_EQ(devm_params_set(&p, "tail-latency", "100ms-1s"), 0);
	EXPECT_EQ(p.tail_min_ns, 100 * MS);
	EXPECT_EQ(p.tail_max_ns, 1 * SEC);
	ASSERT_EQ(devm_params_set_kv(&p, "capacity=1G"), 0);
	EXPECT_EQ(p.capacity, 1ULL << 30);
	ASSERT_EQ(devm_params_set_kv(&p, "dead"), 0);
	EXPECT(p.dead);
	ASSERT_EQ(devm_params_set_kv(&p, "preset=sd-class4"), 0);
	EXPECT_EQ(p.write_bw, 4 * MB);
	EXPECT(!p.dead);
}

TEST(bad_values_are_rejected_without_change)
{
	struct devm_params p, before;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	before = p;
	EXPECT_EQ(devm_params_set(&p, "bandwidth", "fast"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "latency", "5"), -EINVAL); /* durations need a unit */
	EXPECT_EQ(devm_params_set(&p, "slots", "0"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "slots", "65"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "jitter", "150%"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "error-rate", "-1"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "error-cycle", "1s"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "tail-latency", "1s-100ms"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "preset", "floppy"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "dead", "maybe"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "name", "a b"), -EINVAL);
	EXPECT_EQ(devm_params_set(&p, "colour", "blue"), -ENOENT);
	EXPECT_EQ(devm_params_set_kv(&p, "=1"), -ENOENT);
	EXPECT(memcmp(&p, &before, sizeof(p)) == 0);
	EXPECT_EQ(devm_preset("nope", &p), -EINVAL);
}

TEST(every_preset_round_trips_through_format)
{
	const char *const *names = devm_preset_names();
	unsigned n = 0;

	for (; *names; names++, n++) {
		struct devm_params p, q = {0};
		char *buf = NULL, *save = NULL, *tok;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct devm *m;

		ASSERT_EQ(devm_preset(*names, &p), 0);
		ASSERT_STREQ(p.name, *names);
		ASSERT_EQ(devm_create(&p, 1, &m), 0);
		devm_destroy(m);
		devm_params_format(&p, f);
		fclose(f);
		for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (devm_params_set_kv(&q, tok) != 0)
				HARNESS_FAIL_(1, "%s: cannot parse back '%s'", *names, tok);
		if (memcmp(&p, &q, sizeof(p)) != 0)
			HARNESS_FAIL_(0, "%s does not round-trip: %s", *names, buf);
		free(buf);
	}
	EXPECT_GE(n, 9);
}

TEST(required_presets_exist_with_their_central_values)
{
	struct devm_params p;

	ASSERT_EQ(devm_preset("usb2-stick-2011", &p), 0);
	EXPECT_EQ(p.write_bw, 5 * MB);
	EXPECT_EQ(p.slots, 1);
	ASSERT_EQ(devm_preset("sd-class4", &p), 0);
	EXPECT_EQ(p.write_bw, 4 * MB);
	ASSERT_EQ(devm_preset("sd-class10", &p), 0);
	EXPECT_EQ(p.write_bw, 10 * MB);
	ASSERT_EQ(devm_preset("usb2-stick-fast", &p), 0);
	ASSERT_EQ(devm_preset("usb2-hdd", &p), 0);
	ASSERT_EQ(devm_preset("nfs-100mbit", &p), 0);
	EXPECT_EQ(p.slots, 16);
	ASSERT_EQ(devm_preset("nfs-wan", &p), 0);
	ASSERT_EQ(devm_preset("dead", &p), 0);
	EXPECT(p.dead);
	ASSERT_EQ(devm_preset("fast", &p), 0);
	EXPECT_EQ(p.write_bw, 0);
}

TEST(help_lists_presets_and_keys)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	devm_help(f);
	fclose(f);
	EXPECT(strstr(buf, "usb2-stick-2011") != NULL);
	EXPECT(strstr(buf, "stall-every") != NULL);
	EXPECT(strstr(buf, "error-window") != NULL);
	free(buf);
}

TEST_MAIN()
