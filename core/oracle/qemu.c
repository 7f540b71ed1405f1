/* One oracle boot: qemu's command line, then its console read line by line until the guest's
 * end marker.
 *
 *   qemu-system-x86_64 -accel tcg -m MEM -smp N -nographic -no-reboot -nodefaults
 *     -no-user-config -serial stdio -kernel VMLINUZ -initrd INITRAMFS
 *     -append "console=ttyS0 quiet panic=-1 ... OW=WORKLOAD OSEED=S OSET=K:V,... OA0=ARG ..."
 *   pinned: -smp 1 -icount shift=3,sleep=off -cpu max,rdrand=off,rdseed=off
 *           -rtc base=2020-01-01T00:00:00+SEED-1 hours,clock=vm, and nokaslr
 *
 * qemu is exec'd directly in a process group of its own (a ^C reaches thpemu, which ends the
 * boot), and killed as soon as the guest prints "ORACLE end": with a throttled disk qemu
 * drains its queued writes before exiting, which can take longer than the boot. A boot that
 * prints no end marker within the timeout is killed too, and says so. Nothing on the host is
 * changed: the kernel, initramfs and disk are files of the run.
 *
 * The pinned mode removes each source of boot-to-boot variation that repeated boots of one
 * setting showed: several vCPUs and interrupt timing (one vCPU, -icount: guest time
 * counts instructions, so the same instructions give the same interrupts), RDRAND/RDSEED, the
 * wall clock (a fixed RTC base, guest clock), KASLR, address-space randomisation and
 * kcompactd's proactive compaction and watermark boosting (settings.c). What still varies
 * with the seed: the RTC base and the kernel command line (both mixed into the kernel's
 * entropy pool at boot, drivers/char/random.c random_init_early/random_init) and the
 * workload's own choices.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oracle/oracle.h"

#define RTC_BASE_EPOCH 1577836800 /* 2020-01-01T00:00:00Z */
#define LINE_MAX_LEN   4096

volatile sig_atomic_t oracle_interrupted;

int oracle_arg_check(const char *arg, char *err, size_t errlen)
{
	for (const unsigned char *p = (const unsigned char *)arg; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '"') {
			snprintf(err, errlen,
				 "a workload argument cannot hold a double quote or a control "
				 "character (it travels on the kernel command line)");
			return -EINVAL;
		}
	if (strlen(arg) > 200) {
		snprintf(err, errlen, "a workload argument is at most 200 bytes");
		return -E2BIG;
	}
	return 0;
}

static char *stash(struct oracle_argv *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (a->used + n > sizeof(a->buf))
		return NULL;
	p = memcpy(a->buf + a->used, s, n);
	a->used += n;
	return p;
}

static int push(struct oracle_argv *a, const char *s)
{
	char *p = stash(a, s);

	if (!p || a->argc + 1 >= (int)(sizeof(a->argv) / sizeof(a->argv[0])))
		return -E2BIG;
	a->argv[a->argc++] = p;
	a->argv[a->argc] = NULL;
	return 0;
}

/* Append " KEY=VALUE" (quoted when it has a space) to the kernel command line. */
static int append_word(char *cmd, size_t len, const char *key, const char *value)
{
	size_t used = strlen(cmd);
	bool quote = strchr(value, ' ') || !*value;
	int n = snprintf(cmd + used, len - used, " %s=%s%s%s", key, quote ? "\"" : "", value,
			 quote ? "\"" : "");

	return n < 0 || (size_t)n >= len - used ? -E2BIG : 0;
}

/* The guest's command line (x86's COMMAND_LINE_SIZE is 2048, with its NUL). */
static int kernel_cmdline(const struct oracle_boot_cfg *c, char *cmd, size_t len)
{
	char seed[32], key[16];
	int rc = 0;

	snprintf(cmd, len, "console=ttyS0 quiet panic=-1%s", c->pinned ? " nokaslr" : "");
	for (int i = 0; i < c->nkargs && !rc; i++) {
		size_t used = strlen(cmd);

		if ((size_t)snprintf(cmd + used, len - used, " %s", c->kargs[i]) >= len - used)
			rc = -E2BIG;
	}
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)c->seed);
	rc = rc ? rc : append_word(cmd, len, "OW", c->workload_name);
	rc = rc ? rc : append_word(cmd, len, "OSEED", seed);
	if (c->oset && *c->oset)
		rc = rc ? rc : append_word(cmd, len, "OSET", c->oset);
	if (c->disk)
		rc = rc ? rc : append_word(cmd, len, "ODISK", "1");
	if (c->snapshot_at)
		rc = rc ? rc : append_word(cmd, len, "OSNAP", c->snapshot_at);
	for (int i = 0; i < c->nargs && !rc; i++) {
		snprintf(key, sizeof(key), "OA%d", i);
		rc = append_word(cmd, len, key, c->args[i]);
	}
	if (!rc && strlen(cmd) >= 2048)
		rc = -E2BIG;
	return rc;
}

static int rtc_base(uint64_t seed, char *buf, size_t len)
{
	time_t t = (time_t)(RTC_BASE_EPOCH + (seed ? seed - 1 : 0) % (24 * 365 * 10) * 3600);
	struct tm tm;

	gmtime_r(&t, &tm);
	return strftime(buf, len, "base=%Y-%m-%dT%H:%M:%S,clock=vm", &tm) ? 0 : -E2BIG;
}

int oracle_qemu_argv(const struct oracle_boot_cfg *c, struct oracle_argv *a, char *err,
		     size_t errlen)
{
	char num[32], cmd[2200], rtc[64], drive[4096 + 128];
	int rc = 0;

	a->argc = 0;
	a->used = 0;
	rc |= push(a, c->qemu);
	rc |= push(a, "-accel");
	rc |= push(a, c->kvm ? "kvm" : "tcg");
	snprintf(num, sizeof(num), "%lluM", (unsigned long long)c->mem_mb);
	rc |= push(a, "-m");
	rc |= push(a, num);
	snprintf(num, sizeof(num), "%d", c->pinned ? 1 : c->smp);
	rc |= push(a, "-smp");
	rc |= push(a, num);
	rc |= push(a, "-cpu");
	if (c->pinned) {
		rc |= push(a, "max,rdrand=off,rdseed=off");
		rc |= push(a, "-icount");
		rc |= push(a, "shift=3,sleep=off");
		rc |= rtc_base(c->seed, rtc, sizeof(rtc));
		rc |= push(a, "-rtc");
		rc |= push(a, rtc);
	} else {
		rc |= push(a, c->kvm ? "host" : "max");
	}
	rc |= push(a, "-nographic");
	rc |= push(a, "-no-reboot");
	rc |= push(a, "-nodefaults");
	rc |= push(a, "-no-user-config");
	rc |= push(a, "-serial");
	rc |= push(a, "stdio");
	rc |= push(a, "-kernel");
	rc |= push(a, c->vmlinuz);
	rc |= push(a, "-initrd");
	rc |= push(a, c->initrd);
	if (c->disk) {
		int n = snprintf(drive, sizeof(drive), "file=%s,if=virtio,format=raw,cache=unsafe",
				 c->disk);

		if (c->disk_bps)
			snprintf(drive + n, sizeof(drive) - (size_t)n, ",throttling.bps-write=%llu",
				 (unsigned long long)c->disk_bps);
		rc |= push(a, "-drive");
		rc |= push(a, drive);
	}
	if (kernel_cmdline(c, cmd, sizeof(cmd))) {
		snprintf(err, errlen,
			 "the kernel command line would exceed 2047 bytes (fewer or shorter "
			 "workload arguments, settings or --kernel-arg)");
		return -E2BIG;
	}
	rc |= push(a, "-append");
	rc |= push(a, cmd);
	if (rc) {
		snprintf(err, errlen, "qemu's command line is too long");
		return -E2BIG;
	}
	return 0;
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

struct console {
	char line[LINE_MAX_LEN];
	size_t len;
	struct timespec t0;
	double t_start;
};

/* One console line: logged, parsed, its times taken. */
static int line(const struct oracle_boot_cfg *c, struct oracle_result *r, struct console *con,
		struct oracle_boot_out *out)
{
	bool had_hello = r->hello, had_start = r->started, had_exit = r->exited;
	int rc;

	con->line[con->len] = '\0';
	if (c->log)
		fprintf(c->log, "%s\n", con->line);
	rc = oracle_result_line(r, con->line);
	con->len = 0;
	if (rc < 0)
		return rc;
	if (!had_hello && r->hello)
		out->to_init_s = since(&con->t0);
	if (!had_start && r->started)
		con->t_start = since(&con->t0);
	if (!had_exit && r->exited)
		out->program_s = since(&con->t0) - con->t_start;
	return 0;
}

static int console_bytes(const struct oracle_boot_cfg *c, struct oracle_result *r,
			 struct console *con, struct oracle_boot_out *out, const char *buf,
			 size_t n)
{
	for (size_t i = 0; i < n && !r->ended; i++) {
		int rc;

		if (buf[i] == '\n' || con->len == LINE_MAX_LEN - 1) {
			rc = line(c, r, con, out);
			if (rc)
				return rc;
			if (buf[i] == '\n')
				continue;
		}
		if (buf[i] != '\r')
			con->line[con->len++] = buf[i];
	}
	return 0;
}

static void keep_err(struct oracle_boot_out *out, const char *buf, size_t n)
{
	size_t have = strlen(out->qemu_err), cap = sizeof(out->qemu_err) - 1;

	if (n > cap) {
		buf += n - cap;
		n = cap;
	}
	if (have + n > cap) {
		memmove(out->qemu_err, out->qemu_err + have + n - cap, cap - n);
		have = cap - n;
	}
	memcpy(out->qemu_err + have, buf, n);
	out->qemu_err[have + n] = '\0';
}

static pid_t spawn(const struct oracle_argv *a, int out[2], int errp[2])
{
	pid_t pid = fork();

	if (pid)
		return pid;
	int null = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(errp[1], 2) < 0)
		_exit(127);
	execvp(a->argv[0], a->argv);
	/* the parent may be a boot worker of a threaded run (--jobs): after fork only
	 * async-signal-safe calls, so the errno in digits rather than strerror's text */
	{
		char num[12];
		int e = errno, k = (int)sizeof(num);

		num[--k] = '\n';
		do
			num[--k] = (char)('0' + e % 10);
		while ((e /= 10) && k > 0);
		if (write(2, "exec ", 5) < 0 || write(2, a->argv[0], strlen(a->argv[0])) < 0 ||
		    write(2, ": errno ", 8) < 0 || write(2, num + k, sizeof(num) - (size_t)k) < 0)
			_exit(127);
	}
	_exit(127);
}

/* Read the console and qemu's stderr until the end marker, EOF, the deadline or a signal. */
static void watch(const struct oracle_boot_cfg *c, struct oracle_result *r, int fo, int fe,
		  struct console *con, struct oracle_boot_out *out)
{
	struct pollfd p[2] = {{.fd = fo, .events = POLLIN}, {.fd = fe, .events = POLLIN}};
	char buf[16384];
	double limit = (double)c->timeout_ns / 1e9;

	out->how = ORACLE_BOOT_EXITED;
	while (!r->ended && p[0].fd >= 0) {
		double left = limit - since(&con->t0);
		int ms = left > 0 ? (int)(left * 1000) + 1 : 0;

		if (oracle_interrupted) {
			out->how = ORACLE_BOOT_INTERRUPTED;
			return;
		}
		if (left <= 0) {
			out->how = ORACLE_BOOT_TIMEOUT;
			return;
		}
		if (poll(p, 2, ms > 1000 ? 1000 : ms) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				p[i].fd = -1;
				continue;
			}
			if (i == 1)
				keep_err(out, buf, (size_t)n);
			else if (console_bytes(c, r, con, out, buf, (size_t)n))
				return;
		}
	}
	if (r->ended)
		out->how = ORACLE_BOOT_ENDED;
	else if (con->len) /* a last line without its newline */
		line(c, r, con, out);
}

int oracle_qemu_boot(const struct oracle_boot_cfg *c, struct oracle_result *r,
		     struct oracle_boot_out *out, char *err, size_t errlen)
{
	struct oracle_argv *a = calloc(1, sizeof(*a));
	struct console *con = calloc(1, sizeof(*con));
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc = 0, status = 0;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	out->how = ORACLE_BOOT_FAILED;
	if (!a || !con) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	rc = oracle_qemu_argv(c, a, err, errlen);
	if (rc)
		goto out_free;
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto out_close;
	}
	clock_gettime(CLOCK_MONOTONIC, &con->t0);
	pid = spawn(a, po, pe);
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto out_close;
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	watch(c, r, po[0], pe[0], con, out);
	out->wall_s = since(&con->t0);
	if (out->how != ORACLE_BOOT_EXITED)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out->qemu_status = status;
	if (out->how == ORACLE_BOOT_EXITED && WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
	    !r->hello) {
		out->how = ORACLE_BOOT_FAILED;
		snprintf(err, errlen, "%s could not be started: %s", c->qemu, out->qemu_err);
	}
out_close:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
out_free:
	free(a);
	free(con);
	return rc;
}

void oracle_qemu_version(const char *qemu, char *buf, size_t len)
{
	const char *argv[] = {qemu, "--version", NULL};
	struct oracle_cmd c;

	buf[0] = '\0';
	if (!oracle_cmd_run(argv, NULL, -1, &c) && c.out)
		snprintf(buf, len, "%.*s", (int)strcspn(c.out, "\n"), c.out);
	oracle_cmd_free(&c);
}
