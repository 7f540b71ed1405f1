/* The guest side (core/oracle/guest.c): /init parses as a shell script and reads back every
 * knob; the initramfs holds init, busybox, the workload, the console node and the modules. */
#include "harness.h"
#include "oracle/cpio.h"
#include "oracle/oracle.h"

#include <errno.h>
#include <sys/stat.h>

TEST(init_script_is_a_script)
{
	char script[16384], path[] = "/tmp/oracle_init_XXXXXX";
	const char *argv[] = {"sh", "-n", path, NULL};
	struct oracle_cmd c;
	int n = oracle_init_script(script, sizeof(script)), fd;

	ASSERT_GT(n, 0);
	EXPECT(!strncmp(script, "#!/bin/busybox sh\n", 18));
	EXPECT(strstr(script, "\"${kv%%:*}\"") != NULL); /* printf's %% became % */
	EXPECT(strstr(script, "${k%:}") != NULL);
	EXPECT(strstr(script, "khugepaged/max_ptes_none") != NULL);
	EXPECT(strstr(script, "say end\n") != NULL);
	/* OSNAP= hands the workload the snapshot helper and the point to run it at */
	EXPECT(strstr(script, "ORACLE_SNAPSHOT=/bin/thpemu-snapshot ORACLE_SNAPSHOT_AT=$OSNAP") !=
	       NULL);
	EXPECT_EQ(oracle_init_script(script, 100), -E2BIG);
	n = oracle_init_script(script, sizeof(script));
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, script, (size_t)n), n);
	close(fd);
	EXPECT_EQ(oracle_cmd_run(argv, NULL, -1, &c), 0); /* sh -n: syntax only */
	if (c.err[0])
		fprintf(stderr, "  sh -n: %s\n", c.err);
	oracle_cmd_free(&c);
	unlink(path);
}

/* Names in a newc archive (enough of a reader for this test). */
static bool has(const unsigned char *a, size_t len, const char *name, unsigned *mode)
{
	size_t off = 0;

	while (off + 110 <= len && !memcmp(a + off, "070701", 6)) {
		char f[9] = {0};
		size_t ns, sz;

		memcpy(f, a + off + 94, 8);
		ns = strtoul(f, NULL, 16);
		memcpy(f, a + off + 54, 8);
		sz = strtoul(f, NULL, 16);
		if (!strcmp((const char *)a + off + 110, name)) {
			memcpy(f, a + off + 14, 8);
			*mode = (unsigned)strtoul(f, NULL, 16);
			return true;
		}
		off += (110 + ns + 3) & ~3UL;
		off += (sz + 3) & ~3UL;
	}
	return false;
}

TEST(initramfs_holds_everything)
{
	char dir[] = "/tmp/oracle_guest_XXXXXX", out[4200], err[512];
	struct oracle_modules m = {.n = 1};
	struct oracle_guest g = {
	    .busybox = "/bin/sh", .workload = "/bin/true", .workload_name = "true", .modules = &m};
	unsigned mode = 0;
	char *buf;
	size_t len;
	FILE *f;

	ASSERT(mkdtemp(dir));
	snprintf(m.name[0], sizeof(m.name[0]), "fat");
	snprintf(m.path[0], sizeof(m.path[0]), "/bin/true");
	snprintf(out, sizeof(out), "%s/initramfs.cpio", dir);
	ASSERT_EQ(oracle_initramfs_write(out, &g, err, sizeof(err)), 0);
	buf = harness_slurp(out);
	ASSERT(buf);
	f = fopen(out, "r");
	ASSERT(f != NULL);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fclose(f);
	ASSERT(has((unsigned char *)buf, len, "init", &mode));
	EXPECT_EQ(mode, S_IFREG | 0755);
	ASSERT(has((unsigned char *)buf, len, "bin/busybox", &mode));
	ASSERT(has((unsigned char *)buf, len, "wl/true", &mode));
	EXPECT_EQ(mode, S_IFREG | 0755);
	ASSERT(has((unsigned char *)buf, len, "dev/console", &mode));
	EXPECT_EQ(mode, S_IFCHR | 0600);
	ASSERT(has((unsigned char *)buf, len, "modules/fat.ko", &mode));
	ASSERT(has((unsigned char *)buf, len, "modules/order", &mode));
	ASSERT(has((unsigned char *)buf, len, "TRAILER!!!", &mode));
	EXPECT(!has((unsigned char *)buf, len, "bin/thpemu-snapshot", &mode));
	free(buf);
	/* the snapshot helper, when asked for */
	g.snapshot = "/bin/true";
	ASSERT_EQ(oracle_initramfs_write(out, &g, err, sizeof(err)), 0);
	buf = harness_slurp(out);
	ASSERT(buf);
	f = fopen(out, "r");
	ASSERT(f != NULL);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fclose(f);
	ASSERT(has((unsigned char *)buf, len, "bin/thpemu-snapshot", &mode));
	EXPECT_EQ(mode, S_IFREG | 0755);
	free(buf);
	g.snapshot = "/nonexistent";
	EXPECT_EQ(oracle_initramfs_write(out, &g, err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "thpemu-snapshot") != NULL);
	g.snapshot = NULL;
	g.workload = "/nonexistent";
	EXPECT_EQ(oracle_initramfs_write(out, &g, err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "workload") != NULL);
	oracle_rm_rf(dir);
}

TEST_MAIN()
