/* thpemu-fusedev: mount a slow device (a FUSE filesystem throttled by core/io/devmodel).
 *
 * The command line, checks that turn every bad value or unusable mount point into one line
 * and exit status 2, and the mount life cycle: mount, daemonize (unless --foreground), answer
 * INIT and report readiness (--ready-fd, --pidfile), serve until SIGINT/SIGTERM or an unmount,
 * complete what is still held, unmount. A SIGKILLed daemon leaves a dead mount that
 * `fusermount3 -u -z MOUNTPOINT` (or `umount -l`) removes; see fusedev/README.md.
 */
#include "fusedev.h"
#include "util/units.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROG	      "thpemu-fusedev"
#define EXIT_USAGE    2
#define MAX_OVERRIDES 64

struct override {
	const char *opt; /* option as typed, for messages */
	const char *key; /* device key */
	const char *value;
};

struct cli {
	struct fdev_opts o;
	const char *preset;
	struct override ov[MAX_OVERRIDES];
	unsigned nov;
};

/* clang-format off */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " MOUNTPOINT [options]\n"
		"Mount a slow device: a FUSE filesystem whose writes (and reads) complete after the\n"
		"service time of a device model, for thpemu's writeback (see fusedev/README.md).\n"
		"\n"
		"device:\n"
		"  --preset P            device preset (default usb2-stick-2011)\n"
		"  --bandwidth RATE      write bandwidth: 5M, 5MB/s, 40Mbit/s (0 = unthrottled)\n"
		"  --latency DUR         per-request setup latency: 1ms, 500us\n"
		"  --jitter PCT          relative sd of service time: 20%%\n"
		"  --slots N             device queue depth, 1..64\n"
		"  --stall-every SIZE|DUR  periodic busy stall every SIZE written or DUR busy ...\n"
		"  --stall-for DUR       ... lasting DUR\n"
		"  --error-rate P        share of requests failing with EIO: 0.1, 10%%\n"
		"  --set KEY=VALUE       any device key below (repeatable)\n"
		"  --seed N              seed of jitter and error draws (default 1)\n"
		"filesystem:\n"
		"  --capacity SIZE       ENOSPC beyond SIZE (default: 1G for memory, else unbounded)\n"
		"  --store S             memory | discard | writers | DIRECTORY (default memory)\n"
		"  --cache MODE          auto (page cache, O_DIRECT honoured) | direct (no page\n"
		"                        cache) | writeback (kernel writeback cache) (default auto)\n"
		"  --reads MODE          model | instant (default model)\n"
		"  --threads N           FUSE worker threads, 1..64 (default 4)\n"
		"  --max-background N    kernel background request limit (default 64)\n"
		"process:\n"
		"  -f, --foreground      stay in the foreground\n"
		"  --ready-fd FD         write \"ready\\n\" to FD and close it once the mount is live\n"
		"  --pidfile FILE        write the daemon's pid to FILE (removed at exit)\n"
		"  --auto-unmount        let fusermount3 unmount if the daemon dies\n"
		"  -d, --debug           libfuse debug output (implies --foreground)\n"
		"  -h, --help            this help; -V, --version\n"
		"\n"
		"At run time: echo 'bandwidth=2M' > MOUNTPOINT/" FDEV_CTL_NAME
		"  (also pause, resume)\n"
		"             cat MOUNTPOINT/" FDEV_STATS_NAME "  (JSON)\n"
		"After a SIGKILL: fusermount3 -u -z MOUNTPOINT\n\n");
	devm_help(f);
}
/* clang-format on */

static int bad(const char *opt, const char *what, const char *value)
{
	fprintf(stderr, PROG ": %s: %s '%s'\n", opt, what, value ? value : "");
	return -EINVAL;
}

/* clang-format off */
enum {
	O_PRESET = 256, O_BW, O_LAT, O_JIT, O_SLOTS, O_SEVERY, O_SFOR, O_ERATE, O_SET, O_SEED,
	O_CAP, O_STORE, O_CACHE, O_READS, O_THREADS, O_MAXBG, O_READY, O_PIDFILE, O_AUTOUM,
};

static const struct option longopts[] = {
	{"preset", required_argument, NULL, O_PRESET},
	{"bandwidth", required_argument, NULL, O_BW},
	{"latency", required_argument, NULL, O_LAT},
	{"jitter", required_argument, NULL, O_JIT},
	{"slots", required_argument, NULL, O_SLOTS},
	{"stall-every", required_argument, NULL, O_SEVERY},
	{"stall-for", required_argument, NULL, O_SFOR},
	{"error-rate", required_argument, NULL, O_ERATE},
	{"set", required_argument, NULL, O_SET},
	{"seed", required_argument, NULL, O_SEED},
	{"capacity", required_argument, NULL, O_CAP},
	{"store", required_argument, NULL, O_STORE},
	{"cache", required_argument, NULL, O_CACHE},
	{"reads", required_argument, NULL, O_READS},
	{"threads", required_argument, NULL, O_THREADS},
	{"max-background", required_argument, NULL, O_MAXBG},
	{"ready-fd", required_argument, NULL, O_READY},
	{"pidfile", required_argument, NULL, O_PIDFILE},
	{"auto-unmount", no_argument, NULL, O_AUTOUM},
	{"foreground", no_argument, NULL, 'f'},
	{"debug", no_argument, NULL, 'd'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};
/* clang-format on */

static int add_override(struct cli *c, const char *opt, const char *key, const char *value)
{
	if (c->nov == MAX_OVERRIDES)
		return bad(opt, "too many device settings at", value);
	c->ov[c->nov++] = (struct override){opt, key, value};
	return 0;
}

static int add_set(struct cli *c, char *kv)
{
	char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return bad("--set", "expected KEY=VALUE, got", kv);
	*eq = '\0';
	return add_override(c, "--set", kv, eq + 1);
}

static int parse_uint_opt(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char what[64];

	if (units_parse_uint(v, hi, out) == 0 && *out >= lo)
		return 0;
	snprintf(what, sizeof(what), "expected an integer in %llu..%llu, got",
		 (unsigned long long)lo, (unsigned long long)hi);
	return bad(opt, what, v);
}

static int parse_store(struct fdev_opts *o, const char *v)
{
	struct stat st;

	if (!strcmp(v, "memory")) {
		o->store = FDEV_STORE_MEMORY;
	} else if (!strcmp(v, "discard")) {
		o->store = FDEV_STORE_DISCARD;
	} else if (!strcmp(v, "writers")) {
		o->store = FDEV_STORE_WRITERS;
	} else {
		if (stat(v, &st) || !S_ISDIR(st.st_mode))
			return bad("--store",
				   "expected memory, discard or an existing directory, got", v);
		o->store = FDEV_STORE_DIR;
		o->store_dir = v;
	}
	return 0;
}

static int parse_enum(const char *opt, const char *v, const char *const *names, int *out)
{
	char what[128] = "expected";

	for (int i = 0; names[i]; i++) {
		if (!strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s %s",
			 i ? (names[i + 1] ? "," : " or") : "", names[i]);
	}
	strncat(what, ", got", sizeof(what) - strlen(what) - 1);
	return bad(opt, what, v);
}

static int parse_ready_fd(struct fdev_opts *o, const char *v)
{
	uint64_t fd;

	if (parse_uint_opt("--ready-fd", v, 0, INT_MAX, &fd))
		return -EINVAL;
	if (fcntl((int)fd, F_GETFD) < 0)
		return bad("--ready-fd", "not an open file descriptor:", v);
	o->ready_fd = (int)fd;
	return 0;
}

static int parse_opt(struct cli *c, int ch, char *v)
{
	static const char *const caches[] = {"auto", "direct", "writeback", NULL};
	static const char *const reads[] = {"model", "instant", NULL};
	struct fdev_opts *o = &c->o;
	uint64_t u;
	int e;

	switch (ch) {
	case O_PRESET:
		c->preset = v;
		return 0;
	case O_BW:
		return add_override(c, "--bandwidth", "bandwidth", v);
	case O_LAT:
		return add_override(c, "--latency", "latency", v);
	case O_JIT:
		return add_override(c, "--jitter", "jitter", v);
	case O_SLOTS:
		return add_override(c, "--slots", "slots", v);
	case O_SEVERY:
		return add_override(c, "--stall-every", "stall-every", v);
	case O_SFOR:
		return add_override(c, "--stall-for", "stall-for", v);
	case O_ERATE:
		return add_override(c, "--error-rate", "error-rate", v);
	case O_SET:
		return add_set(c, v);
	case O_SEED:
		return parse_uint_opt("--seed", v, 0, UINT64_MAX, &o->seed);
	case O_CAP:
		o->capacity_set = true;
		return units_parse_size(v, &o->capacity)
			   ? bad("--capacity", "expected a size like 512M or 4G, got", v)
			   : 0;
	case O_STORE:
		return parse_store(o, v);
	case O_CACHE:
		if (parse_enum("--cache", v, caches, &e))
			return -EINVAL;
		o->cache = (enum fdev_cache)e;
		return 0;
	case O_READS:
		if (parse_enum("--reads", v, reads, &e))
			return -EINVAL;
		o->model_reads = e == 0;
		return 0;
	case O_THREADS:
		if (parse_uint_opt("--threads", v, 1, 64, &u))
			return -EINVAL;
		o->threads = (unsigned)u;
		return 0;
	case O_MAXBG:
		if (parse_uint_opt("--max-background", v, 1, 65535, &u))
			return -EINVAL;
		o->max_background = (unsigned)u;
		return 0;
	case O_READY:
		return parse_ready_fd(o, v);
	case O_PIDFILE:
		o->pidfile = v;
		return 0;
	case O_AUTOUM:
		o->auto_unmount = true;
		return 0;
	case 'f':
		o->foreground = true;
		return 0;
	case 'd':
		o->debug = o->foreground = true;
		return 0;
	default:
		return -EINVAL;
	}
}

/* "expected <what the key accepts>, got" (the bounds are the model's: devm_key_accepted). */
static const char *override_what(const char *key, char *buf, size_t len)
{
	const char *ok = devm_key_accepted(key);

	snprintf(buf, len, "expected %s, got", ok ? ok : "a valid value");
	return buf;
}

/* "--preset: unknown preset 'x' (one of: a b c)" on one line. */
static int bad_preset(const char *name)
{
	fprintf(stderr, PROG ": --preset: unknown preset '%s' (one of:", name);
	for (const char *const *n = devm_preset_names(); *n; n++)
		fprintf(stderr, " %s", *n);
	fprintf(stderr, ")\n");
	return -EINVAL;
}

/* Preset first, then the overrides in command-line order. */
static int build_device(struct cli *c)
{
	struct devm_params *p = &c->o.dev;
	char what[160];

	if (devm_preset(c->preset, p))
		return bad_preset(c->preset);
	for (unsigned i = 0; i < c->nov; i++) {
		const struct override *ov = &c->ov[i];
		int err = devm_params_set(p, ov->key, ov->value);

		if (err == -ENOENT)
			return bad(ov->opt, "unknown device key (see --help):", ov->key);
		if (err)
			return bad(ov->opt, override_what(ov->key, what, sizeof(what)), ov->value);
		if (!strcmp(ov->key, "capacity")) { /* the filesystem owns capacity */
			c->o.capacity = p->capacity;
			c->o.capacity_set = true;
		}
	}
	if ((p->stall_every_bytes || p->stall_every_ns) && !p->stall_for_ns)
		return bad("--stall-every", "needs --stall-for DUR as well; got", "");
	if (p->gc_au_bytes && !p->gc_open_aus)
		return bad("--set", "gc-au needs gc-open N (1..16) as well; got", "gc-open=0");
	if (devm_params_check(p, what, sizeof(what)) < 0)
		return bad("--set", what, "");
	return 0;
}

static void defaults(struct cli *c)
{
	memset(c, 0, sizeof(*c));
	c->preset = "usb2-stick-2011";
	c->o.seed = 1;
	c->o.store = FDEV_STORE_MEMORY;
	c->o.model_reads = true;
	c->o.ready_fd = -1;
	c->o.threads = 4;
	c->o.max_background = 64;
}

/* The daemon leaves its launcher's directory: keep the pid file where it was meant to be. */
static int absolute_pidfile(struct fdev_opts *o)
{
	static char abs[PATH_MAX];
	char cwd[PATH_MAX];

	if (!o->pidfile || o->pidfile[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    snprintf(abs, sizeof(abs), "%s/%s", cwd, o->pidfile) >= (int)sizeof(abs))
		return bad("--pidfile", "path too long:", o->pidfile);
	o->pidfile = abs;
	return 0;
}

/* Returns 0, 1 (--help/--version printed) or -EINVAL (message printed). */
static int parse_args(struct cli *c, int argc, char **argv)
{
	int ch;

	defaults(c);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":fdhV", longopts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 1;
		}
		if (ch == 'V') {
			printf(PROG " " THPEMU_VERSION "\n");
			return 1;
		}
		if (ch == '?' || ch == ':') {
			fprintf(stderr, PROG ": %s '%s' (see --help)\n",
				ch == '?' ? "unknown option" : "missing value for",
				argv[optind - 1]);
			return -EINVAL;
		}
		if (parse_opt(c, ch, optarg))
			return -EINVAL;
	}
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": expected one MOUNTPOINT, got %d arguments (see --help)\n",
			argc - optind);
		return -EINVAL;
	}
	c->o.mountpoint = argv[optind];
	if (absolute_pidfile(&c->o))
		return -EINVAL;
	if (!c->o.capacity_set && c->o.store == FDEV_STORE_MEMORY)
		c->o.capacity = 1ULL << 30;
	return build_device(c);
}

/* ---- environment checks ---- */

static bool is_mounted(const char *path)
{
	char line[4096], mnt[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d %*d %*s %*s %4095s", mnt) == 1 && !strcmp(mnt, path))
			found = true;
	fclose(f);
	return found;
}

static int check_mountpoint(struct fdev_opts *o, char *real)
{
	struct stat st;

	if (stat(o->mountpoint, &st)) {
		if (errno == ENOTCONN)
			fprintf(stderr,
				PROG ": %s: a dead FUSE mount (daemon killed?); clear it with "
				     "'fusermount3 -u -z %s'\n",
				o->mountpoint, o->mountpoint);
		else
			fprintf(stderr, PROG ": %s: mount point %s\n", o->mountpoint,
				errno == ENOENT ? "does not exist" : strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": %s: mount point is not a directory\n", o->mountpoint);
		return -EINVAL;
	}
	if (!realpath(o->mountpoint, real))
		return bad("MOUNTPOINT", strerror(errno), o->mountpoint);
	if (is_mounted(real)) {
		fprintf(stderr, PROG ": %s: something is already mounted there\n", o->mountpoint);
		return -EINVAL;
	}
	o->mountpoint = real;
	return 0;
}

static int check_fuse(void)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr,
			PROG ": /dev/fuse: %s (load the fuse module; in a container, pass "
			     "--device /dev/fuse)\n",
			strerror(errno));
		return -EINVAL;
	}
	close(fd);
	return 0;
}

/* Kernels >= 6.14 can abort FUSE requests held longer than fs.fuse.*_request_timeout seconds:
 * a stall, pause or dead device longer than that would kill the connection. */
static void warn_request_timeout(void)
{
	static const char *const names[] = {"default_request_timeout", "max_request_timeout"};

	for (int i = 0; i < 2; i++) {
		char path[96];
		long v = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/sys/fs/fuse/%s", names[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%ld", &v) == 1 && v > 0)
			fprintf(stderr,
				PROG ": warning: fs.fuse.%s=%ld s: requests held longer "
				     "(stall, pause, dead) abort the connection\n",
				names[i], v);
		fclose(f);
	}
}

/* ---- life cycle ---- */

static struct fuse_session *make_session(struct fdev *fs, const char *argv0)
{
	char opts[256];
	char *av[8];
	int ac = 0;
	struct fuse_args args;
	struct fuse_session *se;

	snprintf(opts, sizeof(opts), "fsname=thpemu-fusedev,subtype=thpemu,default_permissions%s%s",
		 geteuid() == 0 ? ",allow_other" : "", fs->o.auto_unmount ? ",auto_unmount" : "");
	av[ac++] = (char *)argv0;
	av[ac++] = "-o";
	av[ac++] = opts;
	if (fs->o.debug)
		av[ac++] = "-d";
	args = (struct fuse_args)FUSE_ARGS_INIT(ac, av);
	se = fuse_session_new(&args, &fdev_ops, sizeof(fdev_ops), fs);
	fuse_opt_free_args(&args);
	return se;
}

static struct fuse_session *signal_se;

static void on_signal(int sig)
{
	if (signal_se)
		fuse_session_exit(signal_se);
}

/* libfuse leaves signals alone when they are ignored (as for a background job of a
 * non-interactive shell); SIGINT/SIGTERM/SIGHUP must unmount whoever started us. */
static int set_signals(struct fuse_session *se)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {.sa_handler = on_signal};

	if (fuse_set_signal_handlers(se))
		return -EIO;
	signal_se = se;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < 3; i++)
		if (sigaction(sigs[i], &sa, NULL))
			return -errno;
	return 0;
}

static void write_pidfile(const struct fdev_opts *o)
{
	FILE *f;

	if (!o->pidfile)
		return;
	f = fopen(o->pidfile, "we");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0)
		fprintf(stderr, PROG ": %s: cannot write pid file: %s\n", o->pidfile,
			strerror(errno));
	if (f)
		fclose(f);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int serve(struct fdev *fs)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int err;

	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, fs->o.threads);
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	err = fuse_session_loop_mt(fs->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return err;
}

void fdev_ready(struct fdev *fs)
{
	int null;

	if (fs->ready_sent)
		return;
	fs->ready_sent = true;
	if (fs->o.ready_fd >= 0) {
		if (write(fs->o.ready_fd, "ready\n", 6) != 6)
			fprintf(stderr, PROG ": --ready-fd: %s\n", strerror(errno));
		close(fs->o.ready_fd);
	}
	if (fs->launcher_fd < 0)
		return;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) { /* the launcher's terminal is not ours any more */
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	if (write(fs->launcher_fd, "1", 1) != 1)
		(void)0; /* the launcher died: nobody to tell */
	close(fs->launcher_fd);
	fs->launcher_fd = -1;
}

/* Daemonizes before mounting (libfuse's fuse_daemonize() would release the launcher before
 * the pid file and the device exist). The launcher returns 1 with *status: 0 once the daemon
 * answered INIT, 1 if it exited first (having printed why). The daemon returns 0. */
static int daemonize(struct fdev *fs, int *status)
{
	int p[2];
	ssize_t n;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		*status = n == 1 ? 0 : 1;
		return 1;
	}
	close(p[0]);
	setsid();
	fs->launcher_fd = p[1];
	return 0;
}

/* Mounted: start the device, serve, then complete what is held. */
static int run_mounted(struct fdev *fs)
{
	int err;

	err = fdev_ioq_start(fs);
	if (err) {
		fprintf(stderr, PROG ": cannot start the device queue: %s\n", strerror(-err));
		return err;
	}
	write_pidfile(&fs->o);
	if (!fs->o.foreground && chdir("/"))
		(void)0; /* only to not pin the launcher's directory */
	err = serve(fs);
	fdev_ioq_stop(fs);
	fdev_machine_leave(fs);
	if (fs->o.pidfile)
		unlink(fs->o.pidfile);
	return err < 0 ? err : 0;
}

/* Returns 0, a negative errno, or 1 in the launcher of a daemon (*launcher_status set). */
static int run(struct fdev *fs, const char *argv0, int *launcher_status)
{
	int err;

	atomic_store(&fs->capacity, fs->o.capacity);
	err = fdev_ns_init(fs);
	if (!err)
		err = fdev_store_open(fs);
	if (!err)
		err = fdev_store_scan(fs);
	if (err) {
		fprintf(stderr, PROG ": store %s: %s\n", fdev_store_name(fs), strerror(-err));
		goto out_ns;
	}
	if (!fs->o.foreground) {
		err = daemonize(fs, launcher_status);
		if (err) /* the launcher (1), or fork failed */
			goto out_ns;
	}
	fs->se = make_session(fs, argv0);
	if (!fs->se) {
		err = -EINVAL;
		goto out_ns;
	}
	err = set_signals(fs->se);
	if (err)
		goto out_session;
	if (fuse_session_mount(fs->se, fs->o.mountpoint)) {
		fprintf(stderr, PROG ": %s: mount failed\n", fs->o.mountpoint);
		err = -EIO;
		goto out_signals;
	}
	err = run_mounted(fs);
	fuse_session_unmount(fs->se);
out_signals:
	fuse_remove_signal_handlers(fs->se);
	signal_se = NULL;
out_session:
	fuse_session_destroy(fs->se);
out_ns:
	fdev_ns_destroy(fs);
	fdev_store_close(fs);
	return err;
}

int main(int argc, char **argv)
{
	static struct fdev fs;
	static char real[PATH_MAX];
	struct cli c;
	int launcher = 1, rc = parse_args(&c, argc, argv);

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	if (check_mountpoint(&c.o, real) || check_fuse())
		return EXIT_USAGE;
	raise_nofile();
	warn_request_timeout();
	fs.o = c.o;
	fs.launcher_fd = -1;
	rc = run(&fs, argv[0], &launcher);
	if (rc == 1)
		return launcher;
	return rc ? 1 : 0;
}
