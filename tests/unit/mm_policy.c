/* core/mm policy: named profiles, spec-string overrides, errors, canonical round trip. */
#include <errno.h>

#include "harness.h"
#include "mm/mm.h"

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
	    "modern-always:second-compaction=sync,wb-wait-max=1500us,proactiveness=0",
	    "linux-3.3:reclaim-skip=suitable-or-deferred,migrate-passes=3,kswapd=no",
	    "linux-3.2+nostall:era=3.1,reclaim-writeout=yes",
	    "modern-madvise:second-compaction=none,sync-wait-from-pass=9,wb-wait-max=2s",
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
		if (strncmp(*n, "modern-", 7))
			EXPECT(strstr(buf, *n) != NULL);
	EXPECT(strstr(buf, "wb-wait-max=DURATION") != NULL);
	EXPECT(strstr(buf, "second-compaction=none|async|sync-light|sync") != NULL);
	EXPECT(strstr(buf, "reclaim-waits-writeback=yes|no") != NULL);
	free(buf);
}

TEST_MAIN()
