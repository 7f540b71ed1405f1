/* core/policy/host.c: the host profile from fake sysfs trees - a full 6.x tree, an older
 * kernel's (defaults kept), and the errors, each naming the file and the value; the root given
 * directly or through $THPEMU_SYSFS_ROOT (policy_parse). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "policy/policy.h"

#define EXPECT_STR_EQ_(a, b) EXPECT(strcmp((a), (b)) == 0)

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
	ASSERT_EQ(policy_parse("host", &p, err, sizeof(err)), 0);
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

		char again[512];

		ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
		mm_policy_format(&q, again, sizeof(again));
		EXPECT_STR_EQ_(again, buf);
	}
	/* host takes overrides like any profile */
	ASSERT_EQ(policy_parse("host:enabled=always", &p, err, sizeof(err)), 0);
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
	ASSERT_EQ(policy_parse("host", &p, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("thp-always/madvise", &d, err, sizeof(err)), 0);
	{
		char a[512], b[512];

		mm_policy_format(&p, a, sizeof(a));
		mm_policy_format(&d, b, sizeof(b));
		EXPECT_STR_EQ_(a, b);
		EXPECT_STR_EQ_(a, "thp-always/madvise");
	}
}

/* Shared memory: shmem_enabled, the per-size shmem_enabled files and /dev/shm's huge= */
TEST(host_reads_shmem)
{
	struct mm_policy p;
	char err[512], buf[512];

	fake_tree();
	put(THP "enabled", "always [madvise] never");
	put(THP "defrag", "always defer defer+madvise [madvise] never");
	put(THP "shmem_enabled", "always within_size [advise] never deny force");
	put(THP "hugepages-8kB/shmem_enabled", "always inherit within_size advise [never]");
	put(THP "hugepages-64kB/enabled", "always inherit madvise [never]");
	put(THP "hugepages-64kB/shmem_enabled", "always inherit [within_size] advise never");
	put(THP "hugepages-2048kB/enabled", "always [inherit] madvise never");
	put(THP "hugepages-2048kB/shmem_enabled", "always [inherit] within_size advise never");
	put("proc/mounts", "proc /proc proc rw,nosuid 0 0\n"
			   "tmpfs /dev/shm tmpfs rw,nosuid,nodev,huge=within_size,inode64 0 0");
	ASSERT_EQ(policy_parse("host", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.shmem_enabled, MM_SHMEM_HUGE_ADVISE);
	EXPECT_EQ(p.shmem_hugepages[4], MM_SHMEM_SIZE_WITHIN_SIZE);
	EXPECT_EQ(p.shmem_hugepages[MM_POLICY_PMD_ORDER], MM_SHMEM_SIZE_INHERIT);
	EXPECT_EQ(p.tmpfs_huge, MM_SHMEM_HUGE_WITHIN_SIZE);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT(strstr(buf, "shmem-enabled=advise") != NULL);
	EXPECT(strstr(buf, "shmem-hugepages-64kB=within_size") != NULL);
	EXPECT(strstr(buf, "tmpfs-huge=within_size") != NULL);
	/* /dev/shm without huge= is never (shmem_show_options prints it only when set) */
	put("proc/mounts", "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0");
	put(THP "shmem_enabled", "[always] within_size advise never deny force");
	ASSERT_EQ(policy_parse("host", &p, err, sizeof(err)), 0);
	EXPECT_EQ(p.shmem_enabled, MM_SHMEM_HUGE_ALWAYS);
	EXPECT_EQ(p.tmpfs_huge, MM_SHMEM_HUGE_NEVER);
}

static void host_error(const char *needle1, const char *needle2)
{
	struct mm_policy p;
	char err[512];

	EXPECT_EQ(policy_parse("host", &p, err, sizeof(err)), -EINVAL);
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
	put(THP "hugepages-4096kB/enabled", "always inherit madvise [never]");
	put(THP "shmem_enabled", "always within_size advise never deny force");
	host_error("transparent_hugepage/shmem_enabled", "always within_size");
	put(THP "shmem_enabled", "always within_size advise [never] deny force");
	put(THP "hugepages-8kB/shmem_enabled", "always inherit within_size [advise] never");
	host_error("hugepages-8kB/shmem_enabled", "16kB..2048kB");
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
		EXPECT_EQ(system(cmd), 0);
	}
}

/* The root as an argument: the same profile as through the environment, which it ignores. */
TEST(host_root_given_directly)
{
	struct mm_policy p, q;
	char err[512], a[512], b[512], root[256];

	fake_tree();
	put(THP "enabled", "always madvise [never]");
	put(THP "defrag", "[always] defer defer+madvise madvise never");
	put(THP "khugepaged/max_ptes_none", "100");
	ASSERT_EQ(policy_parse("host", &p, err, sizeof(err)), 0);
	snprintf(root, sizeof(root), "%s", fake_root);
	setenv("THPEMU_SYSFS_ROOT", "/nonexistent", 1);
	ASSERT_EQ(policy_host(root, &q, err, sizeof(err)), 0);
	mm_policy_format(&p, a, sizeof(a));
	mm_policy_format(&q, b, sizeof(b));
	EXPECT_STR_EQ_(a, "thp-never/always:max-ptes-none=100");
	EXPECT_STR_EQ_(a, b);
	EXPECT_EQ(policy_parse("host", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "/nonexistent/sys/kernel/mm/transparent_hugepage/enabled") != NULL);
	setenv("THPEMU_SYSFS_ROOT", root, 1);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
		EXPECT_EQ(system(cmd), 0);
	}
}

TEST_MAIN()
