/* core/mm policy: named profiles, spec-string overrides, errors, canonical round trip. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mm/mm.h"

#define EXPECT_STR_EQ_(a, b) EXPECT(strcmp((a), (b)) == 0)

TEST(every_named_profile_parses_to_itself)
{
	for (const char *const *n = mm_policy_names(); *n; n++) {
		struct mm_policy p;
		char err[256], buf[256];

		ASSERT_EQ(mm_policy_parse(*n, &p, err, sizeof(err)), 0);
		ASSERT_STREQ(p.name, *n);
		mm_policy_format(&p, buf, sizeof(buf));
		ASSERT_STREQ(buf, *n);
	}
}

TEST(profiles_encode_their_era)
{
	struct mm_policy p;
	char err[256];

	ASSERT_EQ(mm_policy_parse("linux-3.1", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_3_1);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_SYNC);
	EXPECT(p.async_failure_defers);
	EXPECT_EQ(p.sync_wait_from_pass, 3);
	ASSERT_EQ(mm_policy_parse("linux-3.1+nostall", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_ASYNC);
	EXPECT(p.reclaim_writeout);
	EXPECT_EQ(p.reclaim_skip, MM_RECLAIM_SKIP_NONE);
	/* 3.2: no filesystem writeback from direct reclaim, the suitable-or-deferred zone skip,
	 * ISOLATE_CLEAN for async compaction (era 3.2); otherwise 3.1 */
	ASSERT_EQ(mm_policy_parse("linux-3.2", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_3_2);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_SYNC);
	EXPECT(p.async_failure_defers);
	EXPECT(!p.deferred_skips_reclaim);
	EXPECT(p.reclaim_waits_writeback);
	EXPECT(!p.reclaim_writeout);
	EXPECT_EQ(p.reclaim_skip, MM_RECLAIM_SKIP_SUITABLE_OR_DEFERRED);
	ASSERT_EQ(mm_policy_parse("linux-3.2+nostall", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_3_2);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_ASYNC);
	EXPECT(!p.reclaim_writeout);
	ASSERT_EQ(mm_policy_parse("linux-3.3", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_SYNC_LIGHT);
	EXPECT(!p.async_failure_defers);
	EXPECT(p.deferred_skips_reclaim);
	ASSERT_EQ(mm_policy_parse("modern-defer+madvise", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_MODERN);
	EXPECT_EQ(p.defrag, MM_DEFRAG_DEFER_MADVISE);
	EXPECT_EQ(p.enabled, MM_THP_ALWAYS);
	EXPECT(p.numa_two_pass);
	ASSERT_EQ(mm_policy_parse("modern-never", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.enabled, MM_THP_NEVER);
}

static bool policy_equal(const struct mm_policy *a, const struct mm_policy *b)
{
	return !strcmp(a->name, b->name) && a->era == b->era && a->enabled == b->enabled &&
	       a->defrag == b->defrag && a->second_mode == b->second_mode &&
	       a->async_failure_defers == b->async_failure_defers &&
	       a->deferred_skips_reclaim == b->deferred_skips_reclaim &&
	       a->reclaim_waits_writeback == b->reclaim_waits_writeback &&
	       a->reclaim_writeout == b->reclaim_writeout && a->numa_two_pass == b->numa_two_pass &&
	       a->sync_wait_from_pass == b->sync_wait_from_pass &&
	       a->migrate_passes == b->migrate_passes && a->wb_wait_max_ns == b->wb_wait_max_ns &&
	       a->kswapd == b->kswapd && a->kcompactd == b->kcompactd &&
	       a->proactiveness == b->proactiveness && a->reclaim_skip == b->reclaim_skip;
}

TEST(overrides_apply_and_round_trip)
{
	static const char *const specs[] = {
	    "linux-3.1:wb-wait-max=50ms",
	    "linux-3.1:second-compaction=sync-light,async-failure-defers=no",
	    "thp-always/always:second-compaction=sync,wb-wait-max=1500us,proactiveness=0",
	    "linux-3.3:reclaim-skip=suitable-or-deferred,migrate-passes=3,kswapd=no",
	    "linux-3.2+nostall:era=3.1,reclaim-writeout=yes",
	    "thp-madvise/defer+madvise:second-compaction=none,sync-wait-from-pass=9,wb-wait-max=2s",
	};

	for (unsigned i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct mm_policy p, q;
		char err[256], buf[256];

		ASSERT_EQ(mm_policy_parse(specs[i], &p, err, sizeof(err)), 0);
		mm_policy_format(&p, buf, sizeof(buf));
		ASSERT_STREQ(buf, specs[i]);
		ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
		ASSERT(policy_equal(&p, &q));
	}
}

TEST(override_values)
{
	struct mm_policy p;
	char err[256];

	ASSERT_EQ(mm_policy_parse("linux-3.1:wb-wait-max=50ms", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.wb_wait_max_ns, 50000000ULL);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_SYNC);
	ASSERT_EQ(
	    mm_policy_parse("linux-3.1:second-compaction=none,kcompactd=yes", &p, err, sizeof(err)),
	    0);
	EXPECT_EQ(p.second_mode, -1);
	EXPECT(p.kcompactd);
	/* a non-canonical spelling formats canonically */
	ASSERT_EQ(mm_policy_parse("linux-3.1:kswapd=off,wb-wait-max=1000ms", &p, err, sizeof(err)),
		  0);
	{
		char buf[256];

		mm_policy_format(&p, buf, sizeof(buf));
		ASSERT_STREQ(buf, "linux-3.1:wb-wait-max=1s,kswapd=no");
	}
}

static void expect_error(const char *spec, const char *needle)
{
	struct mm_policy p;
	char err[256] = "";

	EXPECT_EQ(mm_policy_parse(spec, &p, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fprintf(stderr, "  spec '%s': error '%s' lacks '%s'\n", spec, err, needle);
	EXPECT(strstr(err, needle) != NULL);
	EXPECT(strchr(err, '\n') == NULL);
}

TEST(errors_name_the_key_and_accepted_values)
{
	expect_error("linux-3.4", "unknown profile 'linux-3.4'");
	expect_error("linux-3.4", "linux-3.2+nostall");
	expect_error("linux-3.1:era=3.4", "3.1|3.2|3.3|modern");
	expect_error("", "unknown profile");
	expect_error("linux-3.1:foo=1", "unknown key 'foo'");
	expect_error("linux-3.1:foo=1", "wb-wait-max");
	expect_error("linux-3.1:wb-wait-max=fast", "'wb-wait-max'");
	expect_error("linux-3.1:wb-wait-max=50", "duration");
	expect_error("linux-3.1:second-compaction=full", "none|async|sync-light|sync");
	expect_error("linux-3.1:kswapd=maybe", "yes|no");
	expect_error("linux-3.1:proactiveness=101", "0..100");
	expect_error("linux-3.1:migrate-passes=0", "1..10");
	expect_error("linux-3.1:wb-wait-max", "KEY=VALUE");
	expect_error("linux-3.1:wb-wait-max=", "missing");
	expect_error("linux-3.1:defrag=defer", "needs era=modern");
}

TEST(help_lists_every_key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	mm_policy_help(f);
	fclose(f);
	for (const char *const *n = mm_policy_names(); *n; n++)
		if (strncmp(*n, "thp-", 4))
			EXPECT(strstr(buf, *n) != NULL);
	EXPECT(strstr(buf, "thp-ENABLED/DEFRAG") != NULL);
	EXPECT(strstr(buf, "host") != NULL);
	EXPECT(strstr(buf, "wb-wait-max=DURATION") != NULL);
	EXPECT(strstr(buf, "second-compaction=none|async|sync-light|sync") != NULL);
	EXPECT(strstr(buf, "reclaim-waits-writeback=yes|no") != NULL);
	free(buf);
}

TEST(sysfs_pair_names_mean_their_pair)
{
	static const char *const en[] = {"always", "madvise", "never"};
	static const char *const df[] = {"always", "defer", "defer+madvise", "madvise", "never"};
	unsigned found = 0;

	for (const char *const *n = mm_policy_names(); *n; n++) {
		struct mm_policy p;
		char err[256], want[64];

		if (strncmp(*n, "thp-", 4))
			continue;
		ASSERT_EQ(mm_policy_parse(*n, &p, err, sizeof(err)), 0);
		snprintf(want, sizeof(want), "thp-%s/%s", en[p.enabled], df[p.defrag]);
		EXPECT_STR_EQ_(*n, want);
		EXPECT_EQ(p.era, MM_ERA_MODERN);
		found++;
	}
	EXPECT_EQ(found, 15u);
}

TEST(aliases_resolve_to_their_canonical_profile)
{
	const char *alias, *canonical;
	size_t i;

	for (i = 0; (alias = mm_policy_alias(i, &canonical)); i++) {
		struct mm_policy a, c;
		char err[256], buf[256];

		ASSERT_EQ(mm_policy_parse(alias, &a, err, sizeof(err)), 0);
		ASSERT_EQ(mm_policy_parse(canonical, &c, err, sizeof(err)), 0);
		EXPECT(policy_equal(&a, &c));
		mm_policy_format(&a, buf, sizeof(buf));
		EXPECT_STR_EQ_(buf, canonical); /* reports print the canonical name */
	}
	EXPECT_EQ(i, mm_policy_alias_count());
	/* what the old names always meant: modern-X is enabled=always */
	{
		struct mm_policy p;
		char err[256];

		ASSERT_EQ(mm_policy_parse("modern-madvise", &p, err, sizeof(err)), 0);
		EXPECT_EQ(p.enabled, MM_THP_ALWAYS);
		EXPECT_EQ(p.defrag, MM_DEFRAG_MADVISE);
		ASSERT_EQ(mm_policy_parse("modern-never", &p, err, sizeof(err)), 0);
		EXPECT_EQ(p.enabled, MM_THP_NEVER);
	}
}

TEST(enabled_madvise_allows_only_madvised_ranges)
{
	struct mm_policy p;
	char err[256];

	ASSERT_EQ(mm_policy_parse("thp-madvise/madvise", &p, err, sizeof(err)), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_DEFAULT), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_HUGEPAGE), 1U << MM_POLICY_PMD_ORDER);
	ASSERT_EQ(mm_policy_parse("modern-madvise", &p, err, sizeof(err)), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_DEFAULT), 1U << MM_POLICY_PMD_ORDER);
}

/* ---- host, from fake sysfs trees ---- */

static char fake_root[256];

static void put(const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	for (slash = strchr(path + strlen(fake_root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (!f)
		abort();
	fprintf(f, "%s\n", text);
	fclose(f);
}

static void fake_tree(void)
{
	char cmd[300];

	if (fake_root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
		if (system(cmd))
			abort();
	}
	snprintf(fake_root, sizeof(fake_root), "%s/thpemu-sysfs.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fake_root))
		abort();
	setenv("THPEMU_SYSFS_ROOT", fake_root, 1);
}

#define THP "sys/kernel/mm/transparent_hugepage/"

TEST(host_reads_a_full_6_x_tree)
{
	struct mm_policy p;
	char err[512], buf[512];

	fake_tree();
	put(THP "enabled", "always [madvise] never");
	put(THP "defrag", "always defer [defer+madvise] madvise never");
	put(THP "use_zero_page", "1"); /* not modelled: not read */
	put(THP "shrink_underused", "0");
	put(THP "khugepaged/pages_to_scan", "1000");
	put(THP "khugepaged/scan_sleep_millisecs", "2500");
	put(THP "khugepaged/alloc_sleep_millisecs", "60000");
	put(THP "khugepaged/max_ptes_none", "64");
	put(THP "khugepaged/max_ptes_swap", "64");
	put(THP "khugepaged/max_ptes_shared", "256");
	put(THP "khugepaged/defrag", "0");
	put(THP "hugepages-64kB/enabled", "[always] inherit madvise never");
	put(THP "hugepages-2048kB/enabled", "always inherit [madvise] never");
	put(THP "hugepages-1048576kB/enabled", "always inherit madvise [never]"); /* PUD: never */
	put(THP "hugepages-8kB/shmem_enabled", "always inherit within_size advise [never]");
	put("proc/sys/vm/defrag_mode", "1");
	ASSERT_EQ(mm_policy_parse("host", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_MODERN);
	EXPECT_EQ(p.enabled, MM_THP_MADVISE);
	EXPECT_EQ(p.defrag, MM_DEFRAG_DEFER_MADVISE);
	EXPECT_EQ(p.pages_to_scan, 1000u);
	EXPECT_EQ(p.scan_sleep_ns, 2500000000ULL);
	EXPECT_EQ(p.max_ptes_none, 64u);
	EXPECT(!p.khugepaged_defrag);
	EXPECT(!p.shrink_underused);
	EXPECT_EQ(p.hugepages[4], MM_THP_SIZE_ALWAYS);
	EXPECT_EQ(p.hugepages[MM_POLICY_PMD_ORDER], MM_THP_SIZE_MADVISE);
	EXPECT_EQ(p.defrag_mode, 1u);
	/* it resolves to its sysfs pair and the overrides, which parse back to the same */
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_STR_EQ_(buf, "thp-madvise/defer+madvise:pages-to-scan=1000,scan-sleep=2500ms,"
			    "max-ptes-none=64,khugepaged-defrag=no,shrink-underused=no,"
			    "hugepages-64kB=always,hugepages-2048kB=madvise,defrag-mode=1");
	{
		struct mm_policy q;

		ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
		EXPECT(policy_equal(&p, &q));
	}
	/* host takes overrides like any profile */
	ASSERT_EQ(mm_policy_parse("host:enabled=always", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.enabled, MM_THP_ALWAYS);
}

TEST(host_of_an_older_kernel_keeps_defaults)
{
	struct mm_policy p, d;
	char err[512];

	fake_tree(); /* 4.x: no mTHP directories, no max_ptes_shared, no shrink_underused */
	put(THP "enabled", "[always] madvise never");
	put(THP "defrag", "always defer defer+madvise [madvise] never");
	put(THP "khugepaged/max_ptes_none", "511");
	ASSERT_EQ(mm_policy_parse("host", &p, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("thp-always/madvise", &d, err, sizeof(err)), 0);
	EXPECT(policy_equal(&p, &d));
}

static void host_error(const char *needle1, const char *needle2)
{
	struct mm_policy p;
	char err[512];

	EXPECT_EQ(mm_policy_parse("host", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, needle1) != NULL);
	EXPECT(strstr(err, needle2) != NULL);
	if (!strstr(err, needle1) || !strstr(err, needle2))
		fprintf(stderr, "  error was: %s\n", err);
}

TEST(host_errors_name_the_file_and_value)
{
	fake_tree(); /* no THP at all */
	host_error("transparent_hugepage/enabled", "THP");
	put(THP "enabled", "always madvise never"); /* nothing chosen */
	put(THP "defrag", "[always] defer defer+madvise madvise never");
	host_error("transparent_hugepage/enabled", "always madvise never");
	put(THP "enabled", "[always] madvise never");
	put(THP "khugepaged/max_ptes_none", "600");
	host_error("khugepaged/max_ptes_none", "'600'");
	put(THP "khugepaged/max_ptes_none", "511");
	put(THP "khugepaged/pages_to_scan", "lots");
	host_error("khugepaged/pages_to_scan", "not a number");
	put(THP "khugepaged/pages_to_scan", "4096");
	put(THP "hugepages-4096kB/enabled", "[always] inherit madvise never");
	host_error("hugepages-4096kB/enabled", "16kB..2048kB");
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
		EXPECT_EQ(system(cmd), 0);
	}
}

TEST_MAIN()
