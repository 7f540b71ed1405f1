/* One boot (core/oracle/qemu.c): qemu's command line in each mode, the kernel command line's
 * limits, and the console watched to its end marker, a timeout or qemu's exit -- with a
 * stand-in for qemu (a script printing what a guest prints), so no real boot is needed. */
#include "harness.h"
#include "oracle/oracle.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

static const char *const no_args[] = {NULL};

static struct oracle_boot_cfg cfg(void)
{
	return (struct oracle_boot_cfg){.qemu = "qemu-system-x86_64",
					.vmlinuz = "vmlinuz",
					.initrd = "initrd",
					.mem_mb = 512,
					.smp = 2,
					.pinned = true,
					.seed = 1,
					.oset = "enabled:always",
					.workload_name = "wl",
					.args = no_args,
					.timeout_ns = 10000000000ULL};
}

static int find(const struct oracle_argv *a, const char *s)
{
	for (int i = 0; i < a->argc; i++)
		if (!strcmp(a->argv[i], s))
			return i;
	return -1;
}

TEST(pinned_argv)
{
	struct oracle_boot_cfg c = cfg();
	struct oracle_argv a;
	char err[256];
	int i;

	ASSERT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), 0);
	ASSERT_STREQ(a.argv[0], "qemu-system-x86_64");
	EXPECT(a.argv[a.argc] == NULL);
	i = find(&a, "-icount");
	ASSERT_GT(i, 0);
	ASSERT_STREQ(a.argv[i + 1], "shift=3,sleep=off");
	i = find(&a, "-smp");
	ASSERT_STREQ(a.argv[i + 1], "1");
	i = find(&a, "-cpu");
	ASSERT_STREQ(a.argv[i + 1], "max,rdrand=off,rdseed=off");
	i = find(&a, "-rtc");
	ASSERT_STREQ(a.argv[i + 1], "base=2020-01-01T00:00:00,clock=vm");
	i = find(&a, "-accel");
	ASSERT_STREQ(a.argv[i + 1], "tcg");
	EXPECT_GT(find(&a, "-no-reboot"), 0);
	EXPECT_GT(find(&a, "-nodefaults"), 0);
	i = find(&a, "-append");
	ASSERT_STREQ(a.argv[i + 1], "console=ttyS0 quiet panic=-1 nokaslr OW=wl OSEED=1 "
				    "OSET=enabled:always");
	c.seed = 25; /* a day later */
	ASSERT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), 0);
	ASSERT_STREQ(a.argv[find(&a, "-rtc") + 1], "base=2020-01-02T00:00:00,clock=vm");
}

TEST(free_argv_disk_and_arguments)
{
	static const char *const args[] = {"fragfault", "--fill", "two words", ""};
	static const char *const kargs[] = {"page_alloc.shuffle=1"};
	struct oracle_boot_cfg c = cfg();
	struct oracle_argv a;
	char err[256];
	int i;

	c.pinned = false;
	c.args = args;
	c.nargs = 4;
	c.kargs = kargs;
	c.nkargs = 1;
	c.disk = "disk.img";
	c.disk_bps = 3000000;
	c.oset = "";
	ASSERT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), 0);
	EXPECT_LT(find(&a, "-icount"), 0);
	EXPECT_LT(find(&a, "-rtc"), 0);
	ASSERT_STREQ(a.argv[find(&a, "-smp") + 1], "2");
	ASSERT_STREQ(a.argv[find(&a, "-cpu") + 1], "max");
	ASSERT_STREQ(
	    a.argv[find(&a, "-drive") + 1],
	    "file=disk.img,if=virtio,format=raw,cache=unsafe,throttling.bps-write=3000000");
	i = find(&a, "-append");
	ASSERT_STREQ(a.argv[i + 1], "console=ttyS0 quiet panic=-1 page_alloc.shuffle=1 OW=wl "
				    "OSEED=1 ODISK=1 OA0=fragfault OA1=--fill OA2=\"two words\" "
				    "OA3=\"\"");
	/* a memory snapshot: where the workload takes it travels as OSNAP */
	c.snapshot_at = "phase";
	ASSERT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), 0);
	EXPECT(strstr(a.argv[find(&a, "-append") + 1], " ODISK=1 OSNAP=phase OA0=") != NULL);
	c.snapshot_at = NULL;
	c.kvm = true;
	ASSERT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), 0);
	ASSERT_STREQ(a.argv[find(&a, "-accel") + 1], "kvm");
	ASSERT_STREQ(a.argv[find(&a, "-cpu") + 1], "host");
}

TEST(command_line_limits)
{
	static char big[300];
	const char *args[12];
	struct oracle_boot_cfg c = cfg();
	struct oracle_argv a;
	char err[256];

	memset(big, 'x', 199);
	for (int i = 0; i < 12; i++)
		args[i] = big;
	c.args = args;
	c.nargs = 12; /* 12 x 205 bytes > 2047 */
	EXPECT_EQ(oracle_qemu_argv(&c, &a, err, sizeof(err)), -E2BIG);
	EXPECT(strstr(err, "2047") != NULL);
	EXPECT_EQ(oracle_arg_check("plain --arg=1 with spaces", err, sizeof(err)), 0);
	EXPECT_EQ(oracle_arg_check("a\"quote", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(oracle_arg_check("new\nline", err, sizeof(err)), -EINVAL);
	memset(big, 'x', 250);
	EXPECT_EQ(oracle_arg_check(big, err, sizeof(err)), -E2BIG);
}

/* A stand-in for qemu: a script that prints body and then does what tail says. */
static void fake(char *path, const char *body)
{
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	ASSERT(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	chmod(path, 0755);
}

static double boot(const char *qemu, uint64_t timeout_ns, struct oracle_result *r,
		   struct oracle_boot_out *o)
{
	struct oracle_boot_cfg c = cfg();
	struct timespec t0, t1;
	char err[512];

	c.qemu = qemu;
	c.timeout_ns = timeout_ns;
	oracle_result_init(r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(oracle_qemu_boot(&c, r, o, err, sizeof(err)), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

TEST(stops_at_the_end_marker)
{
	char path[] = "/tmp/oracle_fakeqemu_XXXXXX";
	struct oracle_result r;
	struct oracle_boot_out o;
	double t;

	fake(path, "printf 'SeaBIOS\\r\\nORACLE hello 1\\r\\nORACLE start 1.0\\r\\n'\n"
		   "printf 'ORACLE exit 0 2.0\\r\\nORACLE end\\r\\n'\n"
		   "exec sleep 30\n");
	t = boot(path, 20000000000ULL, &r, &o);
	EXPECT_EQ(o.how, ORACLE_BOOT_ENDED);
	EXPECT_LT(t, 10.0); /* killed at the marker, not after the sleep */
	EXPECT(r.ended);
	EXPECT_EQ(r.hello, 1);
	EXPECT_EQ(r.exit_status, 0);
	oracle_result_free(&r);
	unlink(path);
}

TEST(timeout_and_early_exit)
{
	char p1[] = "/tmp/oracle_fakeqemu_XXXXXX", p2[] = "/tmp/oracle_fakeqemu_XXXXXX";
	struct oracle_result r;
	struct oracle_boot_out o;
	double t;

	fake(p1, "printf 'ORACLE hello 1\\n'\nexec sleep 30\n");
	t = boot(p1, 1000000000ULL, &r, &o);
	EXPECT_EQ(o.how, ORACLE_BOOT_TIMEOUT);
	EXPECT_LT(t, 5.0);
	EXPECT_EQ(r.hello, 1);
	oracle_result_free(&r);
	fake(p2, "printf 'Kernel panic - not syncing\\n'; echo 'qemu: a complaint' >&2; exit 0\n");
	boot(p2, 10000000000ULL, &r, &o);
	EXPECT_EQ(o.how, ORACLE_BOOT_EXITED);
	EXPECT(strstr(o.qemu_err, "a complaint") != NULL);
	EXPECT(strstr(r.tail[0], "panic") != NULL);
	oracle_result_free(&r);
	unlink(p1);
	unlink(p2);
}

TEST(qemu_missing)
{
	struct oracle_result r;
	struct oracle_boot_out o;
	struct oracle_boot_cfg c = cfg();
	char err[512];

	c.qemu = "/nonexistent/qemu-system-x86_64";
	oracle_result_init(&r);
	EXPECT_EQ(oracle_qemu_boot(&c, &r, &o, err, sizeof(err)), 0);
	EXPECT_EQ(o.how, ORACLE_BOOT_FAILED);
	EXPECT(strstr(err, "could not be started") != NULL);
	oracle_result_free(&r);
}

TEST_MAIN()
