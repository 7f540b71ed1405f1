/* thpemu oracle: boot a real Linux kernel under qemu and run a workload in it (core/oracle).
 *
 *   thpemu oracle [OPTIONS] --workload NAME|PATH [ARGS...]
 *
 * Every option is checked before anything is fetched or booted; the work is core/oracle's.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "oracle/oracle.h"
#include "util/units.h"

#define CMD "oracle"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu oracle [OPTIONS] --workload NAME|PATH [ARGS...]\n\n"
	    "Boots a real Linux kernel (Debian's cloud kernel packages) under qemu, runs a "
	    "workload\n"
	    "in it and collects what the kernel says: /proc/vmstat and the per-size mTHP stats\n"
	    "around the workload's phase, each 2 MiB extent's outcome, AnonHugePages over time,\n"
	    "fault latencies (relative only: TCG time). One JSON for all boots\n"
	    "(core/oracle/README.md). Kernels are fetched with apt-get download into a cache and\n"
	    "unpacked there; nothing is installed, the host is not changed.\n\n"
	    "The workload:\n"
	    "  --workload NAME|PATH  a workload of the suite (thpemu-wl --help: fragfault,\n"
	    "                        unevictable, mthp, thpscale, thpcompact, khugepaged, "
	    "collapse,\n"
	    "                        shrinker) or a static program; every later argument is its\n"
	    "                        own (at most 23, no double quotes). The same workload runs\n"
	    "                        under thpemu run as `thpemu-wl NAME ARGS`.\n\n"
	    "The machine:\n"
	    "  --kernel 6.12|6.1|PATH  Debian's newest linux-image-SERIES.*-cloud-amd64-unsigned,\n"
	    "                        or a vmlinuz (default 6.12)\n"
	    "  --mem SIZE            guest memory, 128M..16G (default 512M)\n"
	    "  --mode pinned|free    pinned (default): one vCPU, -icount shift=3,sleep=off, no\n"
	    "                        RDRAND/RDSEED, a fixed RTC, nokaslr, randomize_va_space=0,\n"
	    "                        no proactive compaction or watermark boost: the same seed\n"
	    "                        gives the same boot. free: --smp vCPUs, real time, KVM where\n"
	    "                        /dev/kvm is usable (--accel)\n"
	    "  --smp N               vCPUs in free mode, 1..16 (default 2)\n"
	    "  --accel auto|tcg|kvm  free mode's accelerator (default auto: kvm where usable)\n"
	    "  --disk SIZE           a vfat disk for the workload, mounted at $ORACLE_DISK\n"
	    "  --disk-write-rate RATE  throttle its writes (qemu throttling.bps-write), e.g. "
	    "3MB/s\n"
	    "  --kernel-arg ARG      one more kernel parameter (repeatable)\n\n"
	    "The settings (written in the guest before the workload; see core/oracle/README.md):\n"
	    "  --enabled always|madvise|never  transparent_hugepage/enabled\n"
	    "  --defrag always|defer|defer+madvise|madvise|never  transparent_hugepage/defrag\n"
	    "  --set KEY=VALUE[,KEY=VALUE...]  any of (repeatable):\n"
	    "      enabled, defrag, use_zero_page, shrink_underused (6.12),\n"
	    "      hugepages-SIZEkB (16kB..2048kB, 6.8+: always|inherit|madvise|never),\n"
	    "      shmem_enabled (always|within_size|advise|never|deny|force),\n"
	    "      hugepages-SIZEkB/shmem_enabled (16kB..2048kB, 6.11+:\n"
	    "      always|inherit|within_size|advise|never), tmpfs.huge (a tmpfs on /dev/shm\n"
	    "      mounted with huge=never|always|within_size|advise),\n"
	    "      khugepaged/KNOB, KNOB one of defrag, pages_to_scan, scan_sleep_millisecs,\n"
	    "      alloc_sleep_millisecs, max_ptes_none, max_ptes_swap, max_ptes_shared,\n"
	    "      vm.NAME, NAME one of compaction_proactiveness, watermark_boost_factor,\n"
	    "      watermark_scale_factor, compact_unevictable_allowed, extfrag_threshold,\n"
	    "      min_free_kbytes, dirty_ratio, dirty_background_ratio, dirty_bytes,\n"
	    "      dirty_background_bytes, dirty_expire_centisecs, dirty_writeback_centisecs,\n"
	    "      swappiness, overcommit_memory,\n"
	    "      kernel.randomize_va_space\n"
	    "      A setting the booted kernel does not have fails that boot.\n\n"
	    "The run:\n"
	    "  --boots N             boots (default 1); boot I gets seed SEED+I: the RTC base\n"
	    "                        (pinned) and $ORACLE_SEED\n"
	    "  --jobs N              boots side by side, 1..64 (default: the online CPUs when\n"
	    "                        pinned, 1 in free mode); lines and JSON in boot order, the\n"
	    "                        same as --jobs 1 (a pinned guest counts instructions, so\n"
	    "                        its results do not depend on what runs beside it)\n"
	    "  --seed N              the first boot's seed (default 1)\n"
	    "  --timeout DUR         a boot without its end marker by then is killed (default "
	    "10m)\n"
	    "  --json FILE           the results (core/oracle/README.md, \"JSON\")\n"
	    "  --keep DIR            keep the initramfs, the disk and each boot's console log\n"
	    "  --quiet               no line per boot\n\n"
	    "Where things come from:\n"
	    "  --cache DIR           kernels (default $THPEMU_ORACLE_CACHE, else\n"
	    "                        $XDG_CACHE_HOME/thpemu/oracle, else ~/.cache/thpemu/oracle)\n"
	    "  --offline             no apt: the newest kernel of the series in the cache\n"
	    "  --fetch-only          fetch and unpack the kernel, then exit\n"
	    "  --qemu PATH           default qemu-system-x86_64\n"
	    "  --busybox PATH        a static busybox (default /bin/busybox, Debian's\n"
	    "                        busybox-static)\n\n"
	    "Exit status: 0 every boot ended and the workload exited 0; 1 a boot failed (the JSON\n"
	    "says which and why), or the kernel, qemu or busybox was unavailable; 2 bad usage.\n");
}

struct opts {
	struct oracle_run_cfg cfg;
	struct oracle_boot_opts boot;
	const char *json;
	const char *kargs[32];
	char cache[PATH_MAX], builtin[PATH_MAX], busybox[PATH_MAX];
};

static const char *value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		prog_usage_error(CMD, "%s needs a value (see thpemu oracle --help)", argv[*i]);
	return argv[++*i];
}

static void set(struct opts *o, const char *opt, const char *key, const char *v)
{
	char err[512];

	if (oracle_settings_set(&o->cfg.settings, key, v, ORACLE_ORIGIN_USER, err, sizeof(err)))
		prog_usage_error(CMD, "%s: %s", opt, err);
}

/* One option at argv[*i]; 1 when it was --workload (the rest is the workload's). */
static int option(struct opts *o, int argc, char **argv, int *i)
{
	struct oracle_run_cfg *c = &o->cfg;
	const char *a = argv[*i];
	char err[512];
	int rc;

	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		usage(stdout);
		exit(0);
	} else if (!strcmp(a, "--workload")) {
		c->workload = value(argc, argv, i);
		return 1;
	} else if ((rc = oracle_boot_opt(&o->boot, argc, argv, i, err, sizeof(err)))) {
		if (rc < 0)
			prog_usage_error(CMD, "%s", err);
	} else if (!strcmp(a, "--accel")) {
		c->accel = value(argc, argv, i);
		if (strcmp(c->accel, "auto") && strcmp(c->accel, "tcg") && strcmp(c->accel, "kvm"))
			prog_usage_error(CMD, "--accel: '%s' is not auto, tcg or kvm", c->accel);
	} else if (!strcmp(a, "--kernel-arg")) {
		const char *v = value(argc, argv, i);

		if (c->nkargs == 32 || !*v || strchr(v, ' ') || strchr(v, '"'))
			prog_usage_error(CMD, "--kernel-arg: '%s': one word, no quotes, at most 32",
					 v);
		o->kargs[c->nkargs++] = v;
	} else if (!strcmp(a, "--enabled")) {
		set(o, a, "enabled", value(argc, argv, i));
	} else if (!strcmp(a, "--defrag")) {
		set(o, a, "defrag", value(argc, argv, i));
	} else if (!strcmp(a, "--set")) {
		if (oracle_settings_parse(&c->settings, value(argc, argv, i), err, sizeof(err)))
			prog_usage_error(CMD, "--set: %s", err);
	} else if (!strcmp(a, "--json")) {
		o->json = value(argc, argv, i);
	} else if (!strcmp(a, "--keep")) {
		c->keep = value(argc, argv, i);
	} else if (!strcmp(a, "--fetch-only")) {
		c->fetch_only = true;
	} else if (!strcmp(a, "--quiet")) {
		c->quiet = true;
	} else {
		prog_usage_error(CMD, "unknown option '%s' (see thpemu oracle --help)", a);
	}
	return 0;
}

static void check_workload(struct opts *o)
{
	struct oracle_run_cfg *c = &o->cfg;
	char why[512], path[PATH_MAX];
	int rc;

	if (!c->workload) {
		if (c->fetch_only)
			return;
		prog_usage_error(CMD,
				 "--workload NAME|PATH is required (see thpemu oracle --help)");
	}
	for (int i = 0; i < c->nargs; i++)
		if (oracle_arg_check(c->args[i], why, sizeof(why)))
			prog_usage_error(CMD, "--workload: '%s': %s", c->args[i], why);
	if (c->nargs > ORACLE_MAX_ARGS - 1)
		prog_usage_error(CMD,
				 "--workload: at most %d arguments (the kernel passes init 32 "
				 "variables)",
				 ORACLE_MAX_ARGS - 1);
	if (!strchr(c->workload, '/')) {
		if (prog_find_lib("thpemu-wl-static", o->builtin, sizeof(o->builtin), why,
				  sizeof(why)) < 0) {
			prog_error(CMD, "the workload suite is missing: %s", why);
			exit(1);
		}
		if (!oracle_builtin_workload(o->builtin, c->workload))
			prog_usage_error(CMD,
					 "--workload: '%s' is not a workload of the suite "
					 "(thpemu-wl --help lists them) nor a path",
					 c->workload);
		c->builtin_path = o->builtin;
		return;
	}
	rc = cli_program_static(c->workload, path, sizeof(path));
	if (rc < 0)
		prog_usage_error(CMD, "--workload: '%s': %s", c->workload,
				 rc == -ENOENT	 ? "not found"
				 : rc == -EACCES ? "not executable"
						 : "not an ELF program");
	if (rc == 0)
		prog_usage_error(CMD,
				 "--workload: '%s' is dynamically linked; the guest has no libc "
				 "(link it with -static)",
				 c->workload);
}

/* qemu and a static busybox: the environment, so a failure is exit 1, not usage. */
static void check_tools(struct opts *o)
{
	struct oracle_run_cfg *c = &o->cfg;
	int rc;

	if (c->fetch_only)
		return;
	if (cli_find_program(c->qemu)) {
		prog_error(CMD, "%s not found (apt-get install qemu-system-x86)", c->qemu);
		exit(1);
	}
	rc = cli_program_static(c->busybox, o->busybox, sizeof(o->busybox));
	if (rc != 1) {
		prog_error(CMD, "--busybox: '%s' is %s (apt-get install busybox-static)",
			   c->busybox, rc == 0 ? "not static: the guest has no libc" : "not found");
		exit(1);
	}
	c->busybox = o->busybox;
}

static void on_signal(int sig)
{
	(void)sig;
	oracle_interrupted = 1;
}

static int oracle_main(int argc, char **argv)
{
	struct opts *o = calloc(1, sizeof(*o));
	struct cli_output *out = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	char err[1024];
	int rc;

	if (!o)
		return 1;
	o->cfg = (struct oracle_run_cfg){.kernel = "6.12",
					 .mem = 512ULL << 20,
					 .smp = 2,
					 .accel = "auto",
					 .boots = 1,
					 .seed = 1,
					 .timeout_ns = 600 * 1000000000ULL,
					 .qemu = "qemu-system-x86_64",
					 .busybox = "/bin/busybox",
					 .kargs = o->kargs};
	o->boot = (struct oracle_boot_opts){.cmd = CMD,
					    .cfg = &o->cfg,
					    .mem_min = 128ULL << 20,
					    .mem_max = 16ULL << 30,
					    .boots_max = 1000};
	oracle_settings_init(&o->cfg.settings);
	for (int i = 1; i < argc; i++)
		if (option(o, argc, argv, &i)) {
			o->cfg.args = (const char *const *)argv + i + 1;
			o->cfg.nargs = argc - i - 1;
			if (o->cfg.nargs && !strcmp(argv[i + 1], "--")) {
				o->cfg.args++;
				o->cfg.nargs--;
			}
			break;
		}
	o->cfg.pinned = !o->boot.mode || !strcmp(o->boot.mode, "pinned");
	if (o->cfg.pinned && (!strcmp(o->cfg.accel, "kvm")))
		prog_usage_error(CMD,
				 "--accel kvm: the pinned mode counts instructions (TCG only); "
				 "use --mode free");
	if (o->cfg.disk_bps && !o->cfg.disk)
		prog_usage_error(CMD, "--disk-write-rate needs --disk");
	if (oracle_kernel_check(o->cfg.kernel, err, sizeof(err)))
		prog_usage_error(CMD, "%s", err);
	check_workload(o);
	if (o->cfg.keep)
		cli_output_dir(CMD, "--keep", o->cfg.keep);
	if (o->json)
		out = cli_output_open(CMD, "--json", o->json);
	check_tools(o);
	if (oracle_cache_dir(o->boot.cache, o->cache, sizeof(o->cache), err, sizeof(err))) {
		prog_error(CMD, "%s", err);
		return 1;
	}
	o->cfg.cache = o->cache;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cli_sigpipe_ignore();
	rc = oracle_run(&o->cfg, out ? cli_output_stream(out) : NULL, err, sizeof(err));
	if (rc < 0)
		prog_error(CMD, "%s", err);
	if (out && ftell(cli_output_stream(out)) <= 0)
		cli_output_discard(out); /* nothing booted: no JSON rather than an empty one */
	else if (out && cli_output_close(out))
		rc = 1;
	free(o);
	return cli_stdout_end(rc ? 1 : 0);
}

CLI_COMMAND(oracle, "oracle", "boot a real kernel under qemu, run a workload, collect its counters",
	    oracle_main)
