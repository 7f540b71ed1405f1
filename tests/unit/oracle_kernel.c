/* Kernels of the oracle (core/oracle/kernel.c): Debian's version order, what --kernel accepts,
 * the cache's place, a kernel given as a path and a series found in the cache offline. */
#include "harness.h"
#include "oracle/oracle.h"

#include <errno.h>
#include <sys/stat.h>

TEST(debian_version_order)
{
	EXPECT_EQ(oracle_deb_vercmp("6.1.192-3", "6.1.192-3"), 0);
	EXPECT_EQ(oracle_deb_vercmp("6.1.192-3", "6.1.99-1"), 1);
	EXPECT_EQ(oracle_deb_vercmp("6.12.118-1~deb12u1", "6.12.118-1"), -1); /* ~ sorts first */
	EXPECT_EQ(oracle_deb_vercmp("6.12.118-1~deb12u1", "6.12.117-1~deb12u1"), 1);
	EXPECT_EQ(oracle_deb_vercmp("6.12.115-2~deb12u1", "6.12.115-1~deb12u1"), 1);
	EXPECT_EQ(oracle_deb_vercmp("1:1.0-1", "2.0-1"), 1); /* the epoch first */
	EXPECT_EQ(oracle_deb_vercmp("1.0a-1", "1.0-1"), 1);
	EXPECT_EQ(oracle_deb_vercmp("1.0+b1", "1.0"), 1);
	EXPECT_EQ(oracle_deb_vercmp("1.0", "1.0-0"), 0);
	EXPECT_EQ(oracle_deb_vercmp("007", "7"), 0);
}

TEST(kernel_requests)
{
	char err[512];

	EXPECT_EQ(oracle_kernel_check("6.12", err, sizeof(err)), 0);
	EXPECT_EQ(oracle_kernel_check("6.1", err, sizeof(err)), 0);
	EXPECT_EQ(oracle_kernel_check("/bin/sh", err, sizeof(err)), 0);
	EXPECT_EQ(oracle_kernel_check("6", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_kernel_check("6.12.1", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_kernel_check("latest", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_kernel_check("./nonexistent/vmlinuz", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "--kernel") != NULL);
}

TEST(cache_dir_precedence)
{
	char buf[4096], err[512], tmp[] = "/tmp/oracle_kernel_XXXXXX", want[4200];

	ASSERT(mkdtemp(tmp));
	setenv("THPEMU_ORACLE_CACHE", tmp, 1);
	ASSERT_EQ(oracle_cache_dir(NULL, buf, sizeof(buf), err, sizeof(err)), 0);
	ASSERT_STREQ(buf, tmp);
	unsetenv("THPEMU_ORACLE_CACHE");
	setenv("XDG_CACHE_HOME", tmp, 1);
	ASSERT_EQ(oracle_cache_dir(NULL, buf, sizeof(buf), err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "%s/thpemu/oracle", tmp);
	ASSERT_STREQ(buf, want);
	snprintf(want, sizeof(want), "%s/opt/a/b", tmp);
	ASSERT_EQ(oracle_cache_dir(want, buf, sizeof(buf), err, sizeof(err)), 0);
	ASSERT_STREQ(buf, want);
	EXPECT_EQ(access(want, W_OK), 0);
	EXPECT_EQ(oracle_rm_rf(tmp), 0);
	EXPECT_NE(access(tmp, F_OK), 0);
}

/* A fake unpacked package: DIR/boot/vmlinuz-REL, DIR/lib/modules/REL. */
static void fake_tree(const char *root, const char *rel)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/boot", root);
	ASSERT_EQ(oracle_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/modules/%s", root, rel);
	ASSERT_EQ(oracle_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/boot/vmlinuz-%s", root, rel);
	f = fopen(p, "w");
	ASSERT(f);
	fputs("not a kernel", f);
	fclose(f);
}

TEST(a_path_finds_its_modules)
{
	char tmp[] = "/tmp/oracle_kernel_XXXXXX", p[4096], err[512];
	struct oracle_kernel k;

	ASSERT(mkdtemp(tmp));
	fake_tree(tmp, "6.9.0-test");
	snprintf(p, sizeof(p), "%s/boot/vmlinuz-6.9.0-test", tmp);
	ASSERT_EQ(oracle_kernel_resolve(tmp, p, false, &k, err, sizeof(err)), 0);
	ASSERT_STREQ(k.release, "6.9.0-test");
	EXPECT(strstr(k.moddir, "/lib/modules/6.9.0-test") != NULL);
	EXPECT(!k.package[0]);
	oracle_rm_rf(tmp);
}

TEST(offline_takes_the_newest_cached_of_the_series)
{
	char tmp[] = "/tmp/oracle_kernel_XXXXXX", p[4096], err[512];
	struct oracle_kernel k;

	ASSERT(mkdtemp(tmp));
	snprintf(p, sizeof(p), "%s/kernels/linux-image-6.1.0-9-cloud-amd64-unsigned_6.1.99-1", tmp);
	fake_tree(p, "6.1.0-9-cloud-amd64");
	snprintf(p, sizeof(p), "%s/kernels/linux-image-6.1.0-10-cloud-amd64-unsigned_6.1.100-1",
		 tmp);
	fake_tree(p, "6.1.0-10-cloud-amd64");
	snprintf(p, sizeof(p),
		 "%s/kernels/linux-image-6.12.9+deb12-cloud-amd64-unsigned_6.12.9-1~deb12u1", tmp);
	fake_tree(p, "6.12.9+deb12-cloud-amd64");
	ASSERT_EQ(oracle_kernel_resolve(tmp, "6.1", true, &k, err, sizeof(err)), 0);
	ASSERT_STREQ(k.package, "linux-image-6.1.0-10-cloud-amd64-unsigned"); /* not 6.12 */
	ASSERT_STREQ(k.version, "6.1.100-1");
	ASSERT_STREQ(k.release, "6.1.0-10-cloud-amd64");
	ASSERT_EQ(oracle_kernel_resolve(tmp, "6.12", true, &k, err, sizeof(err)), 0);
	ASSERT_STREQ(k.release, "6.12.9+deb12-cloud-amd64");
	EXPECT_EQ(oracle_kernel_resolve(tmp, "5.10", true, &k, err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "--offline") != NULL);
	oracle_rm_rf(tmp);
}

TEST_MAIN()
