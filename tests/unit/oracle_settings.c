/* The oracle's kernel settings (core/oracle/settings.c): names as the kernel's, values checked,
 * applied in class order, the pinned mode's additions, where each is written. */
#include "harness.h"
#include "oracle/oracle.h"

#include <errno.h>

TEST(values_are_checked_by_knob)
{
	struct oracle_settings s;
	char err[512];

	oracle_settings_init(&s);
	EXPECT_EQ(
	    oracle_settings_set(&s, "enabled", "always", ORACLE_ORIGIN_USER, err, sizeof(err)), 0);
	EXPECT_EQ(oracle_settings_set(&s, "defrag", "defer+madvise", ORACLE_ORIGIN_USER, err,
				      sizeof(err)),
		  0);
	EXPECT_EQ(
	    oracle_settings_set(&s, "defrag", "madvise", ORACLE_ORIGIN_USER, err, sizeof(err)),
	    -EINVAL); /* given twice */
	EXPECT(strstr(err, "twice") != NULL);
	EXPECT_EQ(oracle_settings_set(&s, "hugepages-64kB", "sometimes", ORACLE_ORIGIN_USER, err,
				      sizeof(err)),
		  -EINVAL);
	EXPECT(strstr(err, "always|inherit|madvise|never") != NULL);
	EXPECT_EQ(oracle_settings_set(&s, "hugepages-8kB", "always", ORACLE_ORIGIN_USER, err,
				      sizeof(err)),
		  -EINVAL); /* anon mTHP starts at 16kB */
	EXPECT_EQ(oracle_settings_set(&s, "khugepaged/max_ptes_none", "512", ORACLE_ORIGIN_USER,
				      err, sizeof(err)),
		  -EINVAL);
	EXPECT_EQ(oracle_settings_set(&s, "khugepaged/max_ptes_none", "511", ORACLE_ORIGIN_USER,
				      err, sizeof(err)),
		  0);
	EXPECT_EQ(oracle_settings_set(&s, "vm.min_free_kbytes", "-1", ORACLE_ORIGIN_USER, err,
				      sizeof(err)),
		  -EINVAL);
	EXPECT_EQ(oracle_settings_set(&s, "vm.min_free_kbytes", "4096x", ORACLE_ORIGIN_USER, err,
				      sizeof(err)),
		  -EINVAL);
	EXPECT_EQ(
	    oracle_settings_set(&s, "vm.drop_caches", "3", ORACLE_ORIGIN_USER, err, sizeof(err)),
	    -EINVAL);
	EXPECT(strstr(err, "unknown setting 'vm.drop_caches'") != NULL);
	ASSERT_STREQ(oracle_settings_get(&s, "enabled"), "always");
	EXPECT(!oracle_settings_get(&s, "vm.min_free_kbytes"));
}

TEST(lists_parse_and_encode_in_class_order)
{
	struct oracle_settings s;
	char err[256], buf[1024];

	oracle_settings_init(&s);
	ASSERT_EQ(oracle_settings_parse(&s,
					"vm.min_free_kbytes=8192,khugepaged/defrag=1,"
					"hugepages-64kB=always,enabled=madvise",
					err, sizeof(err)),
		  0);
	ASSERT_EQ(oracle_settings_encode(&s, buf, sizeof(buf)), 0);
	/* enabled resets min_free_kbytes (set_recommended_min_free_kbytes): it goes first */
	ASSERT_STREQ(buf, "enabled:madvise,hugepages-64kB:always,khugepaged/defrag:1,"
			  "vm.min_free_kbytes:8192");
	EXPECT_EQ(oracle_settings_parse(&s, "defrag", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_settings_parse(&s, "=1", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_settings_parse(&s, "defrag=", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_settings_encode(&s, buf, 10), -E2BIG);
}

TEST(pinned_adds_only_what_the_user_left)
{
	struct oracle_settings s;
	char err[256], buf[1024];

	oracle_settings_init(&s);
	ASSERT_EQ(oracle_settings_parse(&s, "vm.compaction_proactiveness=20", err, sizeof(err)), 0);
	oracle_settings_pin(&s);
	ASSERT_EQ(s.n, 3);
	ASSERT_STREQ(oracle_settings_get(&s, "vm.compaction_proactiveness"), "20");
	ASSERT_STREQ(oracle_settings_get(&s, "vm.watermark_boost_factor"), "0");
	ASSERT_STREQ(oracle_settings_get(&s, "kernel.randomize_va_space"), "0");
	EXPECT_EQ(s.s[0].origin, ORACLE_ORIGIN_USER);
	EXPECT_EQ(s.s[1].origin, ORACLE_ORIGIN_PINNED);
	ASSERT_EQ(oracle_settings_encode(&s, buf, sizeof(buf)), 0);
	ASSERT_STREQ(buf, "vm.compaction_proactiveness:20,vm.watermark_boost_factor:0,"
			  "kernel.randomize_va_space:0");
}

TEST(keys_say_where_they_are_written)
{
	char p[256];

	ASSERT_EQ(oracle_knob_path("enabled", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/sys/kernel/mm/transparent_hugepage/enabled");
	ASSERT_EQ(oracle_knob_path("hugepages-64kB", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled");
	ASSERT_EQ(oracle_knob_path("khugepaged/pages_to_scan", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan");
	ASSERT_EQ(oracle_knob_path("vm.extfrag_threshold", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/proc/sys/vm/extfrag_threshold");
	ASSERT_EQ(oracle_knob_path("kernel.randomize_va_space", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/proc/sys/kernel/randomize_va_space");
	ASSERT_EQ(oracle_knob_path("shmem_enabled", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/sys/kernel/mm/transparent_hugepage/shmem_enabled");
	ASSERT_EQ(oracle_knob_path("hugepages-64kB/shmem_enabled", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled");
	ASSERT_EQ(oracle_knob_path("tmpfs.huge", p, sizeof(p)), 0);
	ASSERT_STREQ(p, "/dev/shm");
	EXPECT_EQ(oracle_knob_path("enabled", p, 8), -ENAMETOOLONG);
	/* every knob's values are words the guest's /init can pass unquoted */
	for (size_t i = 0; oracle_knob(i); i++) {
		const struct oracle_knob *k = oracle_knob(i);

		EXPECT(!strpbrk(k->key, " ,:=\""));
		EXPECT(!k->values || !strpbrk(k->values, " ,:=\""));
		EXPECT(oracle_knob_find(k->key) == k);
	}
}

TEST_MAIN()

/* thpemu fidelity's --set: a knob thpemu models becomes its policy key, in the key's units. */
TEST(settings_map_to_policy_keys)
{
	char kv[64];

	EXPECT_EQ(oracle_setting_policy("vm.compact_unevictable_allowed", "0", kv, sizeof(kv)), 0);
	ASSERT_STREQ(kv, "compact-unevictable-allowed=0");
	EXPECT_EQ(oracle_setting_policy("khugepaged/scan_sleep_millisecs", "100", kv, sizeof(kv)),
		  0);
	ASSERT_STREQ(kv, "scan-sleep=100ms");
	EXPECT_EQ(oracle_setting_policy("hugepages-64kB", "always", kv, sizeof(kv)), 0);
	ASSERT_STREQ(kv, "hugepages-64kB=always");
	EXPECT_EQ(oracle_setting_policy("vm.compaction_proactiveness", "20", kv, sizeof(kv)), 0);
	ASSERT_STREQ(kv, "proactiveness=20");
	EXPECT_EQ(oracle_setting_policy("shmem_enabled", "within_size", kv, sizeof(kv)), 0);
	ASSERT_STREQ(kv, "shmem-enabled=within_size");
	EXPECT_EQ(oracle_setting_policy("hugepages-64kB/shmem_enabled", "inherit", kv, sizeof(kv)),
		  0);
	ASSERT_STREQ(kv, "shmem-hugepages-64kB=inherit");
	EXPECT_EQ(oracle_setting_policy("tmpfs.huge", "always", kv, sizeof(kv)), 0);
	ASSERT_STREQ(kv, "tmpfs-huge=always");
	EXPECT_EQ(oracle_setting_policy("vm.min_free_kbytes", "1024", kv, sizeof(kv)), -ENOENT);
	EXPECT_EQ(oracle_setting_policy("enabled", "always", kv, sizeof(kv)), -ENOENT);
	EXPECT_EQ(oracle_setting_policy("khugepaged/max_ptes_none", "511", kv, 8), -ENAMETOOLONG);
}
