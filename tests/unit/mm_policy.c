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
	expect_error("linux-3.1:era=3.4", "3.1|3.2|3.3|6.1|modern");
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

/* Every key is documented: name, what it accepts, a line of help (policy_help prints them). */
TEST(every_key_is_documented)
{
	char accepted[160], val[64], err[256];
	const char *name, *help;
	struct mm_policy p;
	size_t i;

	ASSERT_EQ(mm_policy_parse("linux-3.1", &p, err, sizeof(err)), 0);
	for (i = 0; (name = mm_policy_key_doc(i, accepted, sizeof(accepted), &help)); i++) {
		const char *key = mm_policy_key(i, &p, val, sizeof(val), NULL);

		EXPECT(key && !strcmp(name, key)); /* the same keys, in the same order */
		EXPECT(accepted[0] && help && help[0]);
		if (!strcmp(name, "wb-wait-max"))
			EXPECT_STR_EQ_(accepted, "DURATION");
		if (!strcmp(name, "second-compaction"))
			EXPECT_STR_EQ_(accepted, "none|async|sync-light|sync");
		if (!strcmp(name, "reclaim-waits-writeback"))
			EXPECT_STR_EQ_(accepted, "yes|no");
	}
	EXPECT(i > 30);
	EXPECT(mm_policy_key(i, &p, val, sizeof(val), NULL) == NULL);
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

/* ---- profiles from outside mm ---- */

/* mm knows no host: reading the machine is core/policy's (tests/unit/policy_host.c). */
TEST(host_is_not_mms)
{
	struct mm_policy p;
	char err[512];

	EXPECT_EQ(mm_policy_parse("host", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown profile 'host'") != NULL);
	EXPECT(strstr(err, "|host") == NULL);
}

static int fill_calls;

/* thp-never/never with one key changed, as a caller's profile would be */
static int fill_mine(void *arg, struct mm_policy *p, char *err, size_t errlen)
{
	fill_calls++;
	if (arg)
		return snprintf(err, errlen, "mine: %s", (const char *)arg), -EINVAL;
	if (mm_policy_parse("thp-never/never", p, err, errlen))
		return -EINVAL;
	return mm_policy_set(p, "max-ptes-none", "7", err, errlen);
}

TEST(a_profile_from_outside_takes_keys_like_any)
{
	struct mm_policy_profile mine = {.name = "mine", .fill = fill_mine};
	struct mm_policy p;
	char err[512], buf[512];

	fill_calls = 0;
	ASSERT_EQ(mm_policy_parse_ext("mine:khugepaged=no", &mine, &p, err, sizeof(err)), 0);
	EXPECT_EQ(fill_calls, 1);
	EXPECT_EQ(p.enabled, MM_THP_NEVER);
	EXPECT_EQ(p.max_ptes_none, 7u);
	EXPECT(!p.khugepaged);
	mm_policy_format(&p, buf, sizeof(buf)); /* spelled from the profile it was made of */
	EXPECT_STR_EQ_(buf, "thp-never/never:khugepaged=no,max-ptes-none=7");
	/* the keys are checked as on any profile; the profile's own error comes through */
	EXPECT_EQ(mm_policy_parse_ext("mine:era=3.1,defrag=defer", &mine, &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT(strstr(err, "needs era=modern") != NULL);
	mine.arg = "no such thing";
	EXPECT_EQ(mm_policy_parse_ext("mine", &mine, &p, err, sizeof(err)), -EINVAL);
	EXPECT_STR_EQ_(err, "mine: no such thing");
	/* an unknown name lists it with mm's */
	EXPECT_EQ(mm_policy_parse_ext("yours", &mine, &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "thp-ENABLED/DEFRAG|mine and the modern-* aliases") != NULL);
	/* mm's own names are not the caller's */
	fill_calls = 0;
	ASSERT_EQ(mm_policy_parse_ext("linux-3.3", &mine, &p, err, sizeof(err)), 0);
	EXPECT_EQ(fill_calls, 0);
}

TEST(set_one_key)
{
	struct mm_policy p;
	char err[512];

	ASSERT_EQ(mm_policy_parse("linux-3.1", &p, err, sizeof(err)), 0);
	EXPECT_EQ(mm_policy_set(&p, "wb-wait-max", "50ms", err, sizeof(err)), 0);
	EXPECT_EQ(p.wb_wait_max_ns, 50000000ULL);
	EXPECT_EQ(mm_policy_set(&p, "kswapd", "off", err, sizeof(err)), 0);
	EXPECT(!p.kswapd);
	EXPECT_EQ(mm_policy_set(&p, "max-ptes-none", "600", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "0..511") != NULL);
	EXPECT_EQ(mm_policy_set(&p, "nosuch", "1", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown key 'nosuch'") != NULL);
}

/* linux-6.1: Debian 12's 6.1 with Debian's defaults; any sysfs pair through the keys; what came
 * after 6.1 (mTHP 6.8, shrink_underused 6.12, defrag_mode 6.15) is refused with its reason. */
TEST(linux_6_1_profile_and_what_6_1_lacks)
{
	struct mm_policy p, q;
	char err[256], buf[256];

	ASSERT_EQ(mm_policy_parse("linux-6.1", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_6_1);
	EXPECT_EQ(p.enabled, MM_THP_ALWAYS);	/* CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS=y */
	EXPECT_EQ(p.defrag, MM_DEFRAG_MADVISE); /* DEFRAG_REQ_MADV_FLAG */
	EXPECT(p.numa_two_pass);
	EXPECT(p.deferred_split);
	EXPECT(!p.shrink_underused);
	EXPECT(p.madv_collapse);
	EXPECT_EQ(p.max_ptes_swap, 64u);
	EXPECT_EQ(p.max_ptes_shared, 256u);
	EXPECT_EQ(p.proactiveness, 20u);
	EXPECT_EQ(p.second_mode, MM_MIGRATE_SYNC_LIGHT);
	/* 6.1 with any pair, and its canonical spelling */
	ASSERT_EQ(mm_policy_parse("linux-6.1:enabled=madvise,defrag=always", &p, err, sizeof(err)),
		  0);
	EXPECT_EQ(p.enabled, MM_THP_MADVISE);
	EXPECT_EQ(p.defrag, MM_DEFRAG_ALWAYS);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_STR_EQ_(buf, "linux-6.1:enabled=madvise,defrag=always");
	ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
	EXPECT(policy_equal(&p, &q));
	ASSERT_EQ(mm_policy_parse("linux-6.1:defrag=defer+madvise", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.defrag, MM_DEFRAG_DEFER_MADVISE); /* 6.1 has the defer modes */
	/* a 6.12 pair moved to 6.1 needs the shrinker off; then it is 6.1 */
	ASSERT_EQ(
	    mm_policy_parse("thp-always/madvise:era=6.1,shrink-underused=no", &p, err, sizeof(err)),
	    0);
	EXPECT_EQ(p.era, MM_ERA_6_1);
	/* what 6.1 lacks */
	expect_error("linux-6.1:hugepages-64kB=always", "needs era=modern");
	expect_error("linux-6.1:hugepages-64kB=always", "6.8");
	expect_error("linux-6.1:hugepages-2048kB=never", "'hugepages-2048kB'");
	expect_error("thp-always/always:hugepages-16kB=always,era=6.1", "'hugepages-16kB'");
	expect_error("linux-6.1:defrag-mode=1", "6.15");
	expect_error("linux-6.1:shrink-underused=yes", "'shrink-underused'");
	expect_error("thp-always/madvise:era=6.1", "linux-6.1:enabled=always,defrag=madvise");
	/* and the 3.x eras still lack the defer modes */
	expect_error("linux-6.1:era=3.3,defrag=defer", "needs era=modern or era=6.1");
	/* era=modern on linux-6.1 is 6.12's mechanism with 6.1's settings */
	ASSERT_EQ(
	    mm_policy_parse("linux-6.1:era=modern,hugepages-64kB=always", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.era, MM_ERA_MODERN);
}

/* mm_thp_allowable_orders: 6.1 has the PMD order only, as 3.x (no per-size masks). */
TEST(linux_6_1_allows_the_pmd_order_only)
{
	struct mm_policy p;
	char err[256];

	ASSERT_EQ(mm_policy_parse("linux-6.1", &p, err, sizeof(err)), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_DEFAULT), 1U << MM_HPAGE_ORDER);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_NOHUGEPAGE), 0u);
	ASSERT_EQ(mm_policy_parse("linux-6.1:enabled=madvise", &p, err, sizeof(err)), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_DEFAULT), 0);
	EXPECT_EQ(mm_thp_allowable_orders(&p, MM_VMA_HUGEPAGE), 1U << MM_HPAGE_ORDER);
}

/* 6.18 kernel/sys.c prctl_set_thp_disable / prctl_get_thp_disable and include/linux/huge_mm.h
 * vma_thp_disabled; the 3.x profiles predate PR_SET_THP_DISABLE (3.15). */
TEST(prctl_thp_disable_rules)
{
	struct mm_policy m, old;
	enum mm_thp_disable d = MM_THP_DISABLE_NONE;
	char err[256];

	ASSERT_EQ(mm_policy_parse("thp-always/madvise", &m, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("linux-3.2", &old, err, sizeof(err)), 0);
	EXPECT_EQ(mm_prctl_get_thp_disable(d), 0);
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 1, 2, 0, 0, &d), 0);
	EXPECT_EQ(d, MM_THP_DISABLE_EXCEPT_ADVISED);
	EXPECT_EQ(mm_prctl_get_thp_disable(d), 3); /* "1 | flags" */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 1, 0, 0, 0, &d), 0);
	EXPECT_EQ(d, MM_THP_DISABLE_COMPLETELY); /* one flag set, the other cleared */
	EXPECT_EQ(mm_prctl_get_thp_disable(d), 1);
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 0, 2, 0, 0, &d),
		  -EINVAL); /* flags only to disable */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 1, 4, 0, 0, &d), -EINVAL); /* unknown flag */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 1, 2, 1, 0, &d), -EINVAL); /* arg4 */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 1, 0, 0, 1, &d), -EINVAL); /* arg5 */
	EXPECT_EQ(d, MM_THP_DISABLE_COMPLETELY); /* a refused call changes nothing */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 7, 0, 0, 0, &d), 0); /* any nonzero disables */
	EXPECT_EQ(mm_prctl_set_thp_disable(&m, 0, 0, 0, 0, &d), 0);
	EXPECT_EQ(d, MM_THP_DISABLE_NONE);
	EXPECT_EQ(mm_prctl_set_thp_disable(&old, 1, 0, 0, 0, &d), -ENOSYS);
	EXPECT_EQ(d, MM_THP_DISABLE_NONE);
	/* the 6.x profiles all take it, 6.1's too */
	ASSERT_EQ(mm_policy_parse("linux-6.1", &old, err, sizeof(err)), 0);
	EXPECT_EQ(mm_prctl_set_thp_disable(&old, 1, 2, 0, 0, &d), 0);
	EXPECT_EQ(d, MM_THP_DISABLE_EXCEPT_ADVISED);
	EXPECT_EQ(mm_prctl_set_thp_disable(&old, 0, 0, 0, 0, &d), 0);
	/* the host's PR_GET_THP_DISABLE answer read back after exec */
	EXPECT_EQ(mm_thp_disable_from_prctl(0), MM_THP_DISABLE_NONE);
	EXPECT_EQ(mm_thp_disable_from_prctl(1), MM_THP_DISABLE_COMPLETELY);
	EXPECT_EQ(mm_thp_disable_from_prctl(3), MM_THP_DISABLE_EXCEPT_ADVISED);
	EXPECT_EQ(mm_thp_disable_from_prctl(-22), MM_THP_DISABLE_NONE);
	/* vma_thp_disabled: NOHUGEPAGE, then COMPLETELY, then HUGEPAGE or a forced collapse allow
	 */
	EXPECT(mm_vma_thp_disabled(MM_VMA_NOHUGEPAGE, MM_THP_DISABLE_NONE, true));
	EXPECT(!mm_vma_thp_disabled(MM_VMA_DEFAULT, MM_THP_DISABLE_NONE, false));
	EXPECT(mm_vma_thp_disabled(MM_VMA_HUGEPAGE, MM_THP_DISABLE_COMPLETELY, true));
	EXPECT(mm_vma_thp_disabled(MM_VMA_DEFAULT, MM_THP_DISABLE_EXCEPT_ADVISED, false));
	EXPECT(!mm_vma_thp_disabled(MM_VMA_HUGEPAGE, MM_THP_DISABLE_EXCEPT_ADVISED, false));
	EXPECT(!mm_vma_thp_disabled(MM_VMA_DEFAULT, MM_THP_DISABLE_EXCEPT_ADVISED, true));
	EXPECT(mm_vma_thp_disabled(MM_VMA_NOHUGEPAGE, MM_THP_DISABLE_EXCEPT_ADVISED, true));
}

TEST_MAIN()
