/* The THPEMU_* table (core/config): defaults, parsing per parser, every option landing in its
 * own field, one-line errors naming the variable or option and the accepted values, lookups by
 * option, the help output, and core/live/README.md's table being exactly the table's. */
#include "harness.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "config/config.h"

static void clear_env(void)
{
	for (unsigned i = 0; i < CONFIG_NR; i++)
		unsetenv(config_opts[i].env);
}

TEST(options_defaults)
{
	struct config c;

	clear_env();
	ASSERT_EQ(config_from_env(&c, (char[256]){0}, 256), 0);
	ASSERT_STREQ(c.policy_spec, "modern-always");
	EXPECT_EQ(c.pool_bytes, 1ULL << 30);
	EXPECT_EQ(c.stall_threshold_ns, 1000000000ULL);
	EXPECT_EQ(c.handlers, 0); /* auto */
	EXPECT_EQ(c.min_region, 256 << 10);
	EXPECT_EQ(c.staging, 8);
	EXPECT_EQ(c.allocator, CONFIG_ALLOC_JEMALLOC);
	EXPECT_EQ(c.log, CONFIG_LOG_WARN);
	EXPECT(!c.disable);
	EXPECT_EQ(c.fragment[0], 0);
	EXPECT_EQ(c.policy.enabled, MM_THP_ALWAYS);
}

TEST(options_from_env)
{
	struct config c;
	char err[256];

	clear_env();
	setenv("THPEMU_POLICY", "linux-3.1", 1);
	setenv("THPEMU_POOL", "256M", 1);
	setenv("THPEMU_STALL_THRESHOLD", "20ms", 1);
	setenv("THPEMU_HANDLERS", "5", 1);
	setenv("THPEMU_DISABLE", "yes", 1);
	setenv("THPEMU_LOG", "debug", 1);
	setenv("THPEMU_REPORT", "/tmp/x.%p.json", 1);
	setenv("THPEMU_FRAGMENT", "thpcompact", 1);
	setenv("THPEMU_SEED", "42", 1);
	ASSERT_EQ(config_from_env(&c, err, sizeof(err)), 0);
	ASSERT_STREQ(c.policy_spec, "linux-3.1");
	EXPECT_EQ(c.policy.era, MM_ERA_3_1);
	EXPECT_EQ(c.pool_bytes, 256ULL << 20);
	EXPECT_EQ(c.stall_threshold_ns, 20000000ULL);
	EXPECT_EQ(c.handlers, 5);
	EXPECT(c.disable);
	EXPECT_EQ(c.log, CONFIG_LOG_DEBUG);
	ASSERT_STREQ(c.report, "/tmp/x.%p.json");
	ASSERT_STREQ(c.fragment, "thpcompact");
	EXPECT_EQ(c.seed, 42);
}

/* Each bad value: -EINVAL, one line naming the variable, the value and what is accepted. */
static void expect_bad(const char *var, const char *val, const char *accepted_part)
{
	struct config c;
	char err[512];

	clear_env();
	setenv(var, val, 1);
	err[0] = 0;
	EXPECT_EQ(config_from_env(&c, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, var) != NULL);
	EXPECT(strstr(err, val) != NULL);
	EXPECT(strstr(err, accepted_part) != NULL);
	EXPECT(strchr(err, '\n') == NULL);
	if (!strstr(err, accepted_part))
		fprintf(stderr, "  message was: %s\n", err);
}

TEST(options_bad_values)
{
	expect_bad("THPEMU_POOL", "12X", "is not a size");
	expect_bad("THPEMU_POOL", "1M", "from 8M to 64G");
	expect_bad("THPEMU_POOL", "100G", "is out of range (accepted: a size from 8M to 64G");
	expect_bad("THPEMU_SEED", "abc", "is not a non-negative integer");
	expect_bad("THPEMU_SEED", "-3", "is not a non-negative integer");
	expect_bad("THPEMU_SEED", "99999999999999999999", "is out of range");
	expect_bad("THPEMU_HANDLERS", "2.5", "is not a non-negative integer");
	expect_bad("THPEMU_POLICY", "linux-2.6", "thp-ENABLED/DEFRAG"); /* mm lists the profiles */
	expect_bad("THPEMU_HANDLERS", "0", "1..64");
	expect_bad("THPEMU_HANDLERS", "65", "1..64");
	expect_bad("THPEMU_STALL_THRESHOLD", "10", "duration");
	expect_bad("THPEMU_LOG", "loud", "quiet, warn");
	expect_bad("THPEMU_DISABLE", "maybe", "yes");
	expect_bad("THPEMU_MIN_REGION", "1k", "at least 4K");
	expect_bad("THPEMU_MACHINE", "garbage",
		   "is not a machine's rendezvous (accepted: HOSTPID:FD");
	expect_bad("THPEMU_MACHINE", "0:3", "HOSTPID:FD");
	expect_bad("THPEMU_MACHINE", "12:", "HOSTPID:FD");
	expect_bad("THPEMU_MACHINE", "1:2:3", "HOSTPID:FD");
	expect_bad("THPEMU_MACHINE", "99999999999:3", "HOSTPID:FD");
}

/* A command's processes read the options it gives and inherit the others: config_inherit
 * completes the parsed options with the saved environment, as config_from_env would read it. */
TEST(options_inherit_completes_what_was_given)
{
	const char *given[CONFIG_NR] = {0};
	char *saved[CONFIG_NR], err[512];
	struct config c;

	clear_env();
	setenv("THPEMU_POLICY", "linux-3.3", 1);
	setenv("THPEMU_FS", "ext4", 1);
	setenv("THPEMU_POOL", "256M", 1);
	config_env_save(saved);
	setenv("THPEMU_POOL", "2G", 1); /* what the command puts there later is not read back */
	config_defaults(&c);
	given[CONFIG_POLICY] = "linux-3.1:wb-wait-max=50ms";
	ASSERT_EQ(config_opt_parse(config_opt_by_cli("--policy"), "--policy", given[CONFIG_POLICY],
				   &c, err, sizeof(err)),
		  0);
	ASSERT_EQ(config_inherit(&c, given, saved, err, sizeof(err)), 0);
	ASSERT_STREQ(c.policy_spec, "linux-3.1:wb-wait-max=50ms"); /* given wins */
	EXPECT_EQ(c.policy.era, MM_ERA_3_1);
	EXPECT_EQ(c.policy.wb_wait_max_ns, 50000000ULL);
	EXPECT_EQ(c.policy.fs, MM_FS_EXT4); /* inherited THPEMU_FS on the given policy */
	EXPECT_EQ(c.pool_bytes, 256ULL << 20);
	/* a value the processes will refuse: -EINVAL naming it */
	free(saved[CONFIG_POOL]);
	saved[CONFIG_POOL] = strdup("12X");
	config_defaults(&c);
	EXPECT_EQ(config_inherit(&c, given, saved, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "THPEMU_POOL='12X'") != NULL);
	given[CONFIG_POOL] = "64M"; /* unless the command gives that option itself */
	EXPECT_EQ(config_inherit(&c, given, saved, err, sizeof(err)), 0);
	for (unsigned i = 0; i < CONFIG_NR; i++)
		free(saved[i]);
	clear_env();
}

/* The policy's plugin= key wins over THPEMU_POLICY_PLUGIN, whichever was parsed first. */
TEST(options_plugin_key_wins)
{
	const struct config_opt *pol = config_opt_by_cli("--policy"),
				*plug = config_opt_by_cli("--policy-plugin");
	struct config c;
	char err[512];

	config_defaults(&c);
	ASSERT_EQ(config_opt_parse(plug, NULL, "/a.so", &c, err, sizeof(err)), 0);
	ASSERT_STREQ(config_plugin(&c), "/a.so");
	ASSERT_EQ(config_opt_parse(pol, NULL, "linux-3.1:plugin=/b.so", &c, err, sizeof(err)), 0);
	ASSERT_STREQ(config_plugin(&c), "/b.so");
	ASSERT_EQ(config_opt_parse(plug, NULL, "/c.so", &c, err, sizeof(err)), 0);
	ASSERT_STREQ(config_plugin(&c), "/b.so");
	ASSERT_EQ(config_opt_parse(pol, NULL, "linux-3.1", &c, err, sizeof(err)), 0);
	ASSERT_STREQ(config_plugin(&c), "/c.so");
}

/* The table's pool range is mm's: the size mm_create refuses is the size the table refuses.
 * (An invalid extfrag_threshold makes mm_create stop right after the pool check, so a 64 GiB
 * pool is validated without building its metadata.) */
TEST(options_pool_limits_are_mm_limits)
{
	const struct config_opt *o = config_opt_by_env("THPEMU_POOL");
	struct mm_env_ops ops = {0};
	struct mm_env env = {.ops = &ops};
	struct mm_config mc = {.extfrag_threshold = 1001};
	struct mm *mm = NULL;
	char err[256];

	ASSERT(o != NULL);
	ASSERT_EQ(mm_policy_parse("modern-always", &mc.policy, err, sizeof(err)), 0);
	for (int k = 0; k < 4; k++) {
		uint64_t sizes[] = {o->min, o->max, o->min - 4096, o->max + (2 << 20)};
		bool inside = k < 2;

		mc.pool_bytes = sizes[k];
		err[0] = 0;
		EXPECT_EQ(mm_create(&mc, &env, &mm, err, sizeof(err)), -EINVAL);
		if (inside) /* the pool passed; the threshold stopped it */
			EXPECT(strstr(err, "extfrag_threshold") != NULL);
		else
			EXPECT(strstr(err, "pool size") != NULL);
		if (!!strstr(err, "pool size") == inside)
			fprintf(stderr, "  %llu bytes: %s\n", (unsigned long long)sizes[k], err);
	}
}

/* A value echoed in a message cannot make it several lines (util/text.h). */
TEST(options_errors_escape_the_value)
{
	const char *vals[] = {"12\nX", "linux-3.1\n:x=1", "none:\x1b[2Jx", "1\r\n"};
	const char *opts[] = {"--pool", "--policy", "--device", "--seed"};
	struct config c;
	char err[512];

	for (int i = 0; i < 4; i++) {
		const struct config_opt *o = config_opt_by_cli(opts[i]);

		config_defaults(&c);
		err[0] = 0;
		EXPECT(config_opt_parse(o, opts[i], vals[i], &c, err, sizeof(err)) < 0);
		EXPECT(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
		EXPECT(strchr(err, '\x1b') == NULL);
		EXPECT(strstr(err, "\\x0a") != NULL || strstr(err, "\\x1b") != NULL);
		if (strchr(err, '\n') || strchr(err, '\x1b'))
			fprintf(stderr, "  %s %s: %s\n", opts[i], vals[i], err);
	}
}

TEST(options_cli_names)
{
	const struct config_opt *o = config_opt_by_cli("--pool");
	struct config c;
	char err[256];

	ASSERT(o != NULL);
	ASSERT_STREQ(o->env, "THPEMU_POOL");
	config_defaults(&c);
	EXPECT_EQ(config_opt_parse(o, "--pool", "bogus", &c, err, sizeof(err)), -EINVAL);
	EXPECT(strncmp(err, "--pool: 'bogus'", 15) == 0);
	EXPECT_EQ(config_opt_parse(o, "--pool", "2G", &c, err, sizeof(err)), 0);
	EXPECT_EQ(c.pool_bytes, 2ULL << 30);
	EXPECT(config_opt_by_cli("--policy") && config_opt_by_cli("--handlers") &&
	       config_opt_by_cli("--stall-threshold") && config_opt_by_cli("--fragment") &&
	       config_opt_by_cli("--seed") && config_opt_by_cli("--allocator"));
	EXPECT(config_opt_by_cli("--nonsense") == NULL);
	EXPECT(config_opt_by_env("THPEMU_RUN_DIR")->flags & CONFIG_INTERNAL);
}

TEST(options_help_lists_every_variable)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	config_help(f, true);
	fclose(f);
	for (unsigned i = 0; i < CONFIG_NR; i++)
		EXPECT(strstr(buf, config_opts[i].env) != NULL);
	free(buf);
}

/* A value of every option, each different from its default. A new option needs one here. */
static const char *const sample[CONFIG_NR] = {
    [CONFIG_POLICY] = "linux-3.1",
    [CONFIG_FS] = "ext4",
    [CONFIG_POLICY_PLUGIN] = "/tmp/p.so",
    [CONFIG_POOL] = "256M",
    [CONFIG_STALL_THRESHOLD] = "20ms",
    [CONFIG_ALLOCATOR] = "none",
    [CONFIG_HANDLERS] = "5",
    [CONFIG_SPIN] = "50us",
    [CONFIG_MIN_REGION] = "64K",
    [CONFIG_STAGING] = "3",
    [CONFIG_FRAGMENT] = "thpcompact",
    [CONFIG_SEED] = "42",
    [CONFIG_LOG] = "debug",
    [CONFIG_HOST_THP] = "no",
    [CONFIG_ZERO_PAGE] = "off",
    [CONFIG_HOST_FAULT] = "pte",
    [CONFIG_DISABLE] = "on",
    [CONFIG_REPORT] = "/tmp/r.json",
    [CONFIG_TRACE] = "/tmp/t.trace",
    [CONFIG_RUN_DIR] = "/tmp/run",
    [CONFIG_DEVICE] = "usb2-stick-2011",
    [CONFIG_DIRTY] = "16M",
    [CONFIG_DEVICE_DIR] = "/tmp/dev",
    [CONFIG_TEST_MIGRATE_GAP] = "200us",
    [CONFIG_IO_PID] = "77",
    [CONFIG_MACHINE] = "4242:7",
};

/* Compare c with the defaults d: the option's field must differ, and nothing else may. The
 * parsed forms of policy, device and dirty are left out (their parsers fill them from a local
 * copy, padding included, so they may differ in padding whatever was parsed). */
static void expect_only_own_field(const struct config_opt *o, const struct config *d,
				  const struct config *c)
{
	const size_t parsed[3][2] = {
	    {offsetof(struct config, policy), sizeof(d->policy)},
	    {offsetof(struct config, device), sizeof(d->device)},
	    {offsetof(struct config, dirty), sizeof(d->dirty)},
	};
	const unsigned char *a = (const void *)d, *b = (const void *)c;
	size_t own = 0, stray = 0;

	for (size_t k = 0; k < sizeof(*c); k++) {
		bool skip = false;

		for (int j = 0; j < 3; j++)
			skip |= k >= parsed[j][0] && k < parsed[j][0] + parsed[j][1];
		if (a[k] == b[k] || skip)
			continue;
		if ((k >= o->offset && k < o->offset + o->size) ||
		    (o == &config_opts[CONFIG_POOL] && k == offsetof(struct config, pool_given)))
			own++; /* pool_given: the pool was given (a snapshot does not size it) */
		else
			stray++;
	}
	if (!own || stray)
		fprintf(stderr, "  %s='%s': %zu bytes of its field changed, %zu elsewhere\n",
			o->env, sample[o - config_opts], own, stray);
	EXPECT(own > 0);
	EXPECT_EQ(stray, 0);
}

/* Every option lands in its own field and nowhere else. */
TEST(options_each_fills_its_own_field)
{
	static struct config d, c;
	char err[512];

	config_defaults(&d);
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const struct config_opt *o = &config_opts[i];

		ASSERT(sample[i] != NULL);
		ASSERT(o->offset + o->size <= sizeof(c));
		c = d;
		err[0] = 0;
		EXPECT_EQ(config_opt_parse(o, NULL, sample[i], &c, err, sizeof(err)), 0);
		expect_only_own_field(o, &d, &c);
	}
}

/* Each variable set in the environment reaches the config: none is dropped on the way. */
TEST(options_env_reaches_every_field)
{
	static struct config d, c;
	char err[512];

	clear_env();
	config_defaults(&d);
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const struct config_opt *o = &config_opts[i];

		clear_env();
		setenv(o->env, sample[i], 1);
		err[0] = 0;
		ASSERT_EQ(config_from_env(&c, err, sizeof(err)), 0);
		expect_only_own_field(o, &d, &c);
	}
	clear_env();
}

/* core/live/README.md's THPEMU_* table is exactly the one the table prints (`thpemu run
 * --help-markdown`): the same rows in the same order, none missing, none left over. */
TEST(options_readme_table_is_current)
{
	const char *src = getenv("THPEMU_SOURCE_DIR");
	char path[1024], *readme, *gen = NULL, *start, *end;
	size_t len = 0, n;
	FILE *f;

	if (!src)
		SKIP("THPEMU_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/core/live/README.md", src);
	readme = harness_slurp(path);
	ASSERT(readme != NULL);
	f = open_memstream(&gen, &len);
	config_help(f, true);
	fclose(f);
	/* the README's table: from its header line to the first line that is not a row */
	start = strstr(readme, "| Variable | `thpemu run` |");
	ASSERT(start != NULL);
	for (end = start; *end == '|';)
		end = strchr(end, '\n') ? strchr(end, '\n') + 1 : end + strlen(end);
	n = (size_t)(end - start);
	if (n != len || memcmp(start, gen, len)) {
		fprintf(stderr,
			"  core/live/README.md's THPEMU_* table differs from the table; "
			"replace it with the output of 'thpemu run --help-markdown':\n%s",
			gen);
		EXPECT(0);
	}
	free(gen);
	free(readme);
}

TEST_MAIN()
