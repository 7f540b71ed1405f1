/* The THPEMU_* table: defaults, parsing per type, one-line errors naming the variable or option
 * and the accepted values, lookups by option, the help output. */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>

#include "uffd/uffd.h"

static void clear_env(void)
{
	for (unsigned i = 0; i < uffd_nopts; i++)
		unsetenv(uffd_opts[i].env);
}

TEST(config_defaults)
{
	struct uffd_config c;

	clear_env();
	ASSERT_EQ(uffd_config_from_env(&c, (char[256]){0}, 256), 0);
	ASSERT_STREQ(c.policy_spec, "modern-always");
	EXPECT_EQ(c.pool_bytes, 1ULL << 30);
	EXPECT_EQ(c.stall_threshold_ns, 1000000000ULL);
	EXPECT_EQ(c.handlers, 0); /* auto */
	EXPECT_EQ(c.min_region, 256 << 10);
	EXPECT_EQ(c.staging, 8);
	EXPECT_EQ(c.allocator, UFFD_ALLOC_JEMALLOC);
	EXPECT_EQ(c.log, UFFD_LOG_WARN);
	EXPECT(!c.disable);
	EXPECT_EQ(c.fragment[0], 0);
	EXPECT_EQ(c.policy.enabled, MM_THP_ALWAYS);
	EXPECT_GE(uffd_handlers_auto(), 3);
	EXPECT_LE(uffd_handlers_auto(), 16);
}

TEST(config_from_env)
{
	struct uffd_config c;
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
	ASSERT_EQ(uffd_config_from_env(&c, err, sizeof(err)), 0);
	ASSERT_STREQ(c.policy_spec, "linux-3.1");
	EXPECT_EQ(c.policy.era, MM_ERA_3_1);
	EXPECT_EQ(c.pool_bytes, 256ULL << 20);
	EXPECT_EQ(c.stall_threshold_ns, 20000000ULL);
	EXPECT_EQ(c.handlers, 5);
	EXPECT(c.disable);
	EXPECT_EQ(c.log, UFFD_LOG_DEBUG);
	ASSERT_STREQ(c.report, "/tmp/x.%p.json");
	ASSERT_STREQ(c.fragment, "thpcompact");
	EXPECT_EQ(c.seed, 42);
}

/* Each bad value: -EINVAL, one line naming the variable, the value and what is accepted. */
static void expect_bad(const char *var, const char *val, const char *accepted_part)
{
	struct uffd_config c;
	char err[512];

	clear_env();
	setenv(var, val, 1);
	err[0] = 0;
	EXPECT_EQ(uffd_config_from_env(&c, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, var) != NULL);
	EXPECT(strstr(err, val) != NULL);
	EXPECT(strstr(err, accepted_part) != NULL);
	EXPECT(strchr(err, '\n') == NULL);
	if (!strstr(err, accepted_part))
		fprintf(stderr, "  message was: %s\n", err);
}

TEST(config_bad_values)
{
	expect_bad("THPEMU_POOL", "12X", "is not a size");
	expect_bad("THPEMU_POOL", "1M", "from 8M to 64G");
	expect_bad("THPEMU_POOL", "100G", "is out of range (accepted: a size from 8M to 64G");
	expect_bad("THPEMU_SEED", "abc", "is not a non-negative integer");
	expect_bad("THPEMU_SEED", "-3", "is not a non-negative integer");
	expect_bad("THPEMU_SEED", "99999999999999999999", "is out of range");
	expect_bad("THPEMU_HANDLERS", "2.5", "is not a non-negative integer");
	expect_bad("THPEMU_POLICY", "linux-2.6", "modern-always"); /* mm lists the profiles */
	expect_bad("THPEMU_HANDLERS", "0", "1..64");
	expect_bad("THPEMU_HANDLERS", "65", "1..64");
	expect_bad("THPEMU_STALL_THRESHOLD", "10", "duration");
	expect_bad("THPEMU_LOG", "loud", "quiet, warn");
	expect_bad("THPEMU_DISABLE", "maybe", "yes");
	expect_bad("THPEMU_MIN_REGION", "1k", "at least 4K");
}

/* The table's pool range is mm's: the size mm_create refuses is the size the table refuses.
 * (An invalid extfrag_threshold makes mm_create stop right after the pool check, so a 64 GiB
 * pool is validated without building its metadata.) */
TEST(config_pool_limits_are_mm_limits)
{
	const struct uffd_opt *o = uffd_opt_by_env("THPEMU_POOL");
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
TEST(config_errors_escape_the_value)
{
	const char *vals[] = {"12\nX", "linux-3.1\n:x=1", "none:\x1b[2Jx", "1\r\n"};
	const char *opts[] = {"--pool", "--policy", "--device", "--seed"};
	struct uffd_config c;
	char err[512];

	for (int i = 0; i < 4; i++) {
		const struct uffd_opt *o = uffd_opt_by_cli(opts[i]);

		uffd_config_defaults(&c);
		err[0] = 0;
		EXPECT(uffd_opt_parse(o, opts[i], vals[i], &c, err, sizeof(err)) < 0);
		EXPECT(strchr(err, '\n') == NULL && strchr(err, '\r') == NULL);
		EXPECT(strchr(err, '\x1b') == NULL);
		EXPECT(strstr(err, "\\x0a") != NULL || strstr(err, "\\x1b") != NULL);
		if (strchr(err, '\n') || strchr(err, '\x1b'))
			fprintf(stderr, "  %s %s: %s\n", opts[i], vals[i], err);
	}
}

TEST(config_cli_names)
{
	const struct uffd_opt *o = uffd_opt_by_cli("--pool");
	struct uffd_config c;
	char err[256];

	ASSERT(o != NULL);
	ASSERT_STREQ(o->env, "THPEMU_POOL");
	uffd_config_defaults(&c);
	EXPECT_EQ(uffd_opt_parse(o, "--pool", "bogus", &c, err, sizeof(err)), -EINVAL);
	EXPECT(strncmp(err, "--pool: 'bogus'", 15) == 0);
	EXPECT_EQ(uffd_opt_parse(o, "--pool", "2G", &c, err, sizeof(err)), 0);
	EXPECT_EQ(c.pool_bytes, 2ULL << 30);
	EXPECT(uffd_opt_by_cli("--policy") && uffd_opt_by_cli("--handlers") &&
	       uffd_opt_by_cli("--stall-threshold") && uffd_opt_by_cli("--fragment") &&
	       uffd_opt_by_cli("--seed") && uffd_opt_by_cli("--allocator"));
	EXPECT(uffd_opt_by_cli("--nonsense") == NULL);
	EXPECT(uffd_opt_by_env("THPEMU_RUN_DIR")->flags & UOPT_INTERNAL);
}

TEST(config_help_lists_every_variable)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	uffd_opts_help(f, true);
	fclose(f);
	for (unsigned i = 0; i < uffd_nopts; i++)
		EXPECT(strstr(buf, uffd_opts[i].env) != NULL);
	free(buf);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = 0;
	fclose(f);
	return buf;
}

/* core/uffd/README.md carries the table and the host counters verbatim: they cannot drift. */
TEST(config_readme_is_current)
{
	const char *src = getenv("THPEMU_SOURCE_DIR");
	char path[1024], *readme, *gen = NULL, *line, *save;
	size_t len = 0;
	FILE *f;

	if (!src)
		SKIP("THPEMU_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/core/uffd/README.md", src);
	readme = slurp(path);
	ASSERT(readme != NULL);
	f = open_memstream(&gen, &len);
	uffd_opts_help(f, true);
	for (unsigned i = 0; i < UFFD_NR_HOST; i++)
		fprintf(f, "| `%s` | %s |\n", uffd_host_names[i], uffd_host_help[i]);
	fclose(f);
	for (line = strtok_r(gen, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(readme, line))
			fprintf(stderr, "  README.md lacks: %s\n", line);
		EXPECT(strstr(readme, line) != NULL);
	}
	free(gen);
	free(readme);
}

TEST_MAIN()
