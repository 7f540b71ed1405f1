/* thpemu run: the slow device around the program, and the merge of the stall reports its
 * processes leave behind (see run_io.h).
 *
 * The private mount. thpemu-fusedev runs in the foreground as a child of thpemu run, in its own
 * process group (a terminal's ^C reaches the program, not the device under it) and with
 * PR_SET_PDEATHSIG (if thpemu run itself is killed, the daemon gets SIGTERM and unmounts).
 * Readiness comes through --ready-fd. At the end: statistics are read, the daemon gets SIGTERM
 * (it completes what it holds and unmounts), a mount still present is detached (umount2
 * MNT_DETACH, or fusermount3 -u -z without root), a daemon still alive after 5 s is killed, and
 * it is always reaped. A daemon that died during the run leaves a dead mount, which the same
 * steps remove. The mount point is RUN_DIR/dev: if thpemu run is killed with SIGKILL, the next run
 * removes the run directory, detaching a mount still there (tmpdir_sweep).
 */
#include "host/run_io.h"
#include "host/tmpdirs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/prog.h"
#include "report/run.h"
#include "report/runs.h"
#include "util/clock.h"

#define READY_TIMEOUT_MS 15000
#define STOP_TIMEOUT_NS	 5000000000ULL
#define MAX_STATS_BYTES	 (1 << 20)

/* ---- small helpers --------------------------------------------------------------------------- */

/* The whole of a small file (malloc, NUL-terminated), or NULL. */
static char *slurp(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	size_t n = 0, cap = 0;
	ssize_t r;

	if (fd < 0)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			char *nb = cap + 8192 <= max + 1 ? realloc(buf, cap + 8192) : NULL;

			if (!nb)
				break;
			buf = nb;
			cap += 8192;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* ---- the private mount ----------------------------------------------------------------------- */

static void fusedev_exec(struct run_device *d, uint64_t seed, int ready_fd, pid_t parent)
{
	char exe[PATH_MAX], seedbuf[24], ov[IO_DEV_OVERRIDES], *save = NULL, *kv;
	const char *argv[96];
	int n = 0;

	setpgid(0, 0);
	if (d->child_setup)
		d->child_setup(); /* not thpemu run's blocked signals */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent) /* thpemu run died before the line above */
		_exit(1);
	if (dup2(ready_fd, 3) < 0)
		_exit(1);
	unsetenv("LD_PRELOAD");
	snprintf(exe, sizeof(exe), "%s/thpemu-fusedev", prog_self_dir());
	snprintf(seedbuf, sizeof(seedbuf), "%llu", (unsigned long long)seed);
	snprintf(ov, sizeof(ov), "%s", d->dev.overrides);
	argv[n++] = exe;
	argv[n++] = d->mnt;
	argv[n++] = "--foreground";
	argv[n++] = "--ready-fd";
	argv[n++] = "3";
	argv[n++] = "--preset";
	argv[n++] = d->dev.model.name;
	/* a private mount lives as long as the run: programs' files are kept (they read back what
	 * they wrote), the writeback engine's copies of them are not */
	argv[n++] = "--store";
	argv[n++] = "writers";
	argv[n++] = "--seed";
	argv[n++] = seedbuf;
	for (kv = strtok_r(ov, ",", &save); kv && n < 92; kv = strtok_r(NULL, ",", &save)) {
		argv[n++] = "--set";
		argv[n++] = kv;
	}
	argv[n] = NULL;
	execv(exe, (char *const *)argv);
	fprintf(stderr, "thpemu run: cannot execute %s: %s\n", exe, strerror(errno));
	_exit(127);
}

/* Wait for "ready" on fd; false on EOF (the daemon gave up) or timeout. */
static bool wait_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[16] = "";
	ssize_t n;

	while (poll(&p, 1, READY_TIMEOUT_MS) < 0)
		if (errno != EINTR)
			return false;
	if (!(p.revents & POLLIN))
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	return n > 0 && strncmp(buf, "ready", 5) == 0;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (status < 0)
		snprintf(buf, len, "running");
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
}

/* Reap the daemon, waiting up to ns; true if it is gone. */
static bool reap(struct run_device *d, uint64_t ns)
{
	uint64_t end = clock_now_ns() + ns;

	while (d->pid > 0) {
		pid_t r = waitpid(d->pid, &d->status, WNOHANG);

		if (r == d->pid || (r < 0 && errno != EINTR)) {
			d->pid = -1;
			break;
		}
		if (clock_now_ns() >= end)
			return false;
		usleep(20000);
	}
	return true;
}

static int mount_fusedev(struct run_device *d, uint64_t seed)
{
	int pfd[2];
	pid_t self = getpid();

	/* inside the run directory: a killed run's mount point goes with it (tmpdir_sweep) */
	snprintf(d->mnt, sizeof(d->mnt), "%s/dev", d->parent);
	if (mkdir(d->mnt, 0700) < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(d->fallback, sizeof(d->fallback), "cannot create a mount point: %s",
			 strerror(errno));
		d->mnt[0] = '\0';
		return -1;
	}
	fflush(NULL);
	d->pid = fork();
	if (d->pid == 0)
		fusedev_exec(d, seed, pfd[1], self);
	close(pfd[1]);
	if (d->pid > 0 && wait_ready(pfd[0])) {
		close(pfd[0]);
		return 0;
	}
	close(pfd[0]);
	if (d->pid > 0 && !reap(d, 100000000ULL)) {
		kill(d->pid, SIGKILL);
		reap(d, STOP_TIMEOUT_NS);
	}
	{
		char st[64];

		describe_status(d->status, st, sizeof(st));
		snprintf(d->fallback, sizeof(d->fallback), "thpemu-fusedev could not mount %s (%s)",
			 d->dev.model.name, st);
	}
	rmdir(d->mnt);
	d->mnt[0] = '\0';
	return -1;
}

/* The model of the same device: "none:preset=NAME" plus every key given. */
static void model_spec(const struct run_device *d, char *spec, size_t len)
{
	const char *colon = strchr(d->spec, ':');

	snprintf(spec, len, "none:preset=%s%s%s", d->dev.model.name, colon ? "," : "",
		 colon ? colon + 1 : "");
}

/* The library gets the model of the same device. */
static void use_model(struct run_device *d, bool quiet)
{
	char spec[600];

	model_spec(d, spec, sizeof(spec));
	setenv("THPEMU_DEVICE", spec, 1);
	unsetenv("THPEMU_DEVICE_DIR");
	if (!quiet)
		fprintf(stderr,
			"thpemu run: --device %s: %s; the in-process device model stands "
			"in\n",
			prog_esc(d->spec), prog_esc(d->fallback));
}

void run_device_start(struct run_device *d, uint64_t seed, bool quiet)
{
	d->pid = -1;
	d->status = -1;
	if (!d->spec)
		return;
	if (d->dev.kind == IO_DEV_PATH) {
		setenv("THPEMU_DEVICE_DIR", d->dev.path, 1);
		return;
	}
	if (d->dev.kind != IO_DEV_PRESET)
		return;
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		snprintf(d->fallback, sizeof(d->fallback), "no usable /dev/fuse (%s)",
			 strerror(errno));
	else if (mount_fusedev(d, seed) == 0) {
		setenv("THPEMU_DEVICE_DIR", d->mnt, 1);
		return;
	}
	use_model(d, quiet);
}

int run_device_config(const struct run_device *d, struct config *cfg, char *err, size_t errlen)
{
	const struct config_opt *dir = &config_opts[CONFIG_DEVICE_DIR];
	char spec[600];
	int rc;

	if (!d->spec || (d->dev.kind != IO_DEV_PATH && d->dev.kind != IO_DEV_PRESET))
		return 0; /* nothing set: none, or no --device */
	if (d->dev.kind == IO_DEV_PATH)
		return config_opt_parse(dir, NULL, d->dev.path, cfg, err, errlen);
	if (d->mnt[0])
		return config_opt_parse(dir, NULL, d->mnt, cfg, err, errlen);
	model_spec(d, spec, sizeof(spec)); /* use_model's */
	rc = config_opt_parse(&config_opts[CONFIG_DEVICE], NULL, spec, cfg, err, errlen);
	if (rc == 0)
		cfg->device_dir[0] = '\0';
	return rc;
}

void run_device_join(struct run_device *d, const char *rendezvous, bool quiet)
{
	char path[PATH_MAX + 32], line[96];
	int fd, n, ok = 0;

	if (!d->mnt[0] || d->pid <= 0 || !rendezvous)
		return;
	snprintf(path, sizeof(path), "%s/.thpemu-control", d->mnt);
	n = snprintf(line, sizeof(line), "machine=%s\n", rendezvous);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ok = write(fd, line, (size_t)n) == n;
		close(fd);
	}
	if (!ok && !quiet)
		fprintf(stderr,
			"thpemu run: the device did not join the machine (%s): programs' writes "
			"to it bypass the machine's page cache\n",
			strerror(errno));
}

static void read_stats(struct run_device *d)
{
	char path[PATH_MAX + 32];
	json_t *j;

	snprintf(path, sizeof(path), "%s/.thpemu-stats", d->mnt);
	free(d->stats_json);
	d->stats_json = slurp(path, MAX_STATS_BYTES, NULL);
	j = d->stats_json ? json_loads(d->stats_json, 0, NULL) : NULL;
	if (!j) { /* only valid JSON goes into the report */
		free(d->stats_json);
		d->stats_json = NULL;
		return;
	}
	json_decref(j);
}

void run_device_stop(struct run_device *d)
{
	if (!d->mnt[0])
		return;
	if (d->pid > 0 && kill(d->pid, 0) == 0)
		read_stats(d);
	if (d->pid > 0) { /* it completes what it holds and unmounts */
		kill(d->pid, SIGTERM);
		if (!reap(d, STOP_TIMEOUT_NS))
			kill(d->pid, SIGKILL);
	}
	if (tmpdir_is_mounted(d->mnt))
		tmpdir_detach(d->mnt);
	reap(d, STOP_TIMEOUT_NS);
	if (rmdir(d->mnt) < 0 && errno != ENOENT)
		prog_error("run", "could not remove the mount point %s: %s", d->mnt,
			   strerror(errno));
	d->mnt[0] = '\0';
}

char *run_device_json(const struct run_device *d)
{
	json_t *stats = NULL;
	struct json_w w;
	char st[64];

	if (!d->spec || jw_mem_open(&w, JW_COMPACT) < 0)
		return NULL;
	jw_obj_begin(&w, NULL);
	jw_str(&w, "kind",
	       d->dev.kind == IO_DEV_PATH		      ? "directory"
	       : d->fallback[0] || d->dev.kind == IO_DEV_NONE ? "model"
							      : "fusedev");
	jw_str(&w, "spec", d->spec);
	if (d->fallback[0])
		jw_str(&w, "fallback_reason", d->fallback);
	if (d->dev.kind == IO_DEV_PRESET && !d->fallback[0]) {
		describe_status(d->status, st, sizeof(st));
		jw_str(&w, "daemon", st);
		/* fusedev's own JSON, read and written again compact (unreadable: left out) */
		stats = d->stats_json ? json_loads(d->stats_json, 0, NULL) : NULL;
		if (stats)
			rd_jw_value(&w, "fusedev_stats", stats, 12, false);
		json_decref(stats);
	}
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

/* ---- stall reports --------------------------------------------------------------------------- */

static int by_total(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	double tx = json_number_value(json_object_get(x, "total_ms"));
	double ty = json_number_value(json_object_get(y, "total_ms"));
	json_int_t cx = json_integer_value(json_object_get(x, "count"));
	json_int_t cy = json_integer_value(json_object_get(y, "count"));

	if (tx != ty)
		return tx < ty ? 1 : -1;
	return (cx < cy) - (cx > cy);
}

static void add_number(json_t *dst, json_t *src, const char *key)
{
	json_t *a = json_object_get(dst, key), *b = json_object_get(src, key);
	double v = json_number_value(a) + json_number_value(b);

	if (json_is_integer(b))
		json_object_set_new(dst, key, json_integer((json_int_t)v));
	else
		json_object_set_new(dst, key, json_real(v));
}

static void max_number(json_t *dst, json_t *src, const char *key)
{
	json_t *b = json_object_get(src, key);

	if (json_is_number(b) &&
	    json_number_value(b) > json_number_value(json_object_get(dst, key)))
		json_object_set(dst, key, b);
}

/* Fold one process's "faults" or "waits" summary (obs/stall.h) into the merged one: counts add
 * up, the longest is the longest of all, the per-wait groups are appended. */
static void merge_part(json_t *m, json_t *s, const char *part)
{
	static const char *const sums[] = {"count", "total_ms", "stored", "dropped", "background"};
	json_t *src = json_object_get(s, part), *dst = json_object_get(m, part), *groups;

	if (!json_is_object(src))
		return;
	if (!dst) {
		dst = json_object();
		json_object_set(dst, "threshold_ms", json_object_get(src, "threshold_ms"));
		json_object_set_new(dst, "max_ms", json_real(0));
		json_object_set_new(m, part, dst);
	}
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
		if (!json_object_get(src, sums[i]))
			continue;
		if (!json_object_get(dst, sums[i]))
			json_object_set_new(dst, sums[i], json_integer(0));
		add_number(dst, src, sums[i]);
	}
	max_number(dst, src, "max_ms");
	if (json_object_get(src, "stacks"))
		json_object_set(dst, "stacks", json_object_get(src, "stacks"));
	groups = json_object_get(src, "groups");
	if (json_is_array(groups)) {
		if (!json_object_get(dst, "groups"))
			json_object_set_new(dst, "groups", json_array());
		json_array_extend(json_object_get(dst, "groups"), groups);
	}
}

/* Fold one process's "stalls" object into the merged one. */
static void merge_stalls(json_t *m, json_t *s)
{
	static const char *const sums[] = {"count", "total_ms", "stored", "dropped"};
	json_t *groups = json_object_get(s, "groups");

	if (!json_object_get(m, "threshold_ms")) {
		json_object_set(m, "threshold_ms", json_object_get(s, "threshold_ms"));
		json_object_set_new(m, "count", json_integer(0));
		json_object_set_new(m, "total_ms", json_real(0));
		json_object_set_new(m, "stored", json_integer(0));
		json_object_set_new(m, "dropped", json_integer(0));
		json_object_set(m, "stacks", json_object_get(s, "stacks"));
		json_object_set_new(m, "groups", json_array());
	}
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		add_number(m, s, sums[i]);
	if (json_is_array(groups))
		json_array_extend(json_object_get(m, "groups"), groups);
	merge_part(m, s, "faults");
	merge_part(m, s, "waits");
}

static void sort_groups(json_t *m)
{
	json_t *g = json_object_get(m, "groups"), *sorted = json_array(),
	       *waits = json_object_get(m, "waits");
	size_t n = json_array_size(g);
	json_t **v = calloc(n ? n : 1, sizeof(*v));

	for (size_t i = 0; v && i < n; i++)
		v[i] = json_array_get(g, i);
	if (v)
		qsort(v, n, sizeof(*v), by_total);
	for (size_t i = 0; v && i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_object_set_new(m, "groups", sorted);
	if (json_is_object(waits) && json_object_get(waits, "groups"))
		sort_groups(waits); /* the per-wait groups likewise */
}

/* Say which process waited in each of its groups. */
static void tag_groups(json_t *stalls, int pid, const char *comm)
{
	json_t *groups = json_object_get(stalls, "groups"),
	       *waits = json_object_get(stalls, "waits");

	if (json_is_object(waits))
		tag_groups(waits, pid, comm);
	for (size_t i = 0; i < json_array_size(groups); i++) {
		json_t *g = json_array_get(groups, i);

		if (!json_is_object(g))
			continue;
		json_object_set_new(g, "pid", json_integer(pid));
		json_object_set_new(g, "process", comm ? json_string(comm) : json_null());
	}
}

static void append_text(struct run_stalls *s, const char *pid, const char *comm, const char *txt,
			size_t n, bool header)
{
	char head[128];
	int h = header ? snprintf(head, sizeof(head), "# process %s%s%s%s\n", pid, comm ? " (" : "",
				  comm ? prog_esc(comm) : "", comm ? ")" : "")
		       : 0;
	char *nt = realloc(s->text, s->text_len + (size_t)h + n + 2);

	if (!nt)
		return;
	s->text = nt;
	memcpy(s->text + s->text_len, head, (size_t)h);
	memcpy(s->text + s->text_len + h, txt, n);
	s->text_len += (size_t)h + n;
	s->text[s->text_len] = '\0';
}

/* One process's pair of files (base = DIR/PID). */
static void collect_one(const char *dir, const char *pid, json_t *merged, struct run_stalls *s,
			bool header, const struct uffd_proc_list *procs)
{
	const struct uffd_proc_summary *p = uffd_procs_find(procs, atoi(pid));
	const char *comm = p && p->comm[0] ? p->comm : NULL;
	char path[PATH_MAX + 64], *txt;
	unsigned long long events = 0, waits;
	json_t *j, *st;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.stalls.json", dir, pid);
	j = json_load_file(path, 0, NULL);
	st = j ? json_object_get(j, "stalls") : NULL;
	if (json_is_object(st)) {
		tag_groups(st, atoi(pid), comm);
		merge_stalls(merged, st);
		s->processes++;
		events = (unsigned long long)json_integer_value(json_object_get(st, "count"));
		s->events += events;
		/* a process whose waits crossed the threshold has a report even without a stalled
		 * fault */
		waits = (unsigned long long)json_integer_value(
		    json_object_get(json_object_get(st, "waits"), "count"));
		s->wait_events += waits;
		events += waits;
	}
	json_decref(j);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.stalls.txt", dir, pid);
	txt = slurp(path, 64 << 20, &n);
	if (txt && (events || !header)) /* of many processes, those that stalled */
		append_text(s, pid, comm, txt, n, header);
	free(txt);
	unlink(path);
}

static unsigned count_files(DIR *d)
{
	struct dirent *de;
	unsigned n = 0;

	while ((de = readdir(d)))
		n += strstr(de->d_name, ".stalls.json") != NULL;
	rewinddir(d);
	return n;
}

void run_stalls_collect(const char *dir, struct run_stalls *s, const struct uffd_proc_list *procs)
{
	DIR *d = opendir(dir);
	json_t *merged = json_object();
	struct dirent *de;
	bool header = d && count_files(d) > 1; /* say whose report is whose */

	memset(s, 0, sizeof(*s));
	while (d && (de = readdir(d))) {
		char pid[64], *dot;

		if (!strstr(de->d_name, ".stalls.json"))
			continue;
		snprintf(pid, sizeof(pid), "%.63s", de->d_name);
		dot = strchr(pid, '.');
		if (dot)
			*dot = '\0';
		collect_one(dir, pid, merged, s, header, procs);
		rewinddir(d); /* files were removed: start over, the rest are still there */
	}
	if (d)
		closedir(d);
	if (header && !s->text && s->processes) {
		char none[96];
		int k = snprintf(none, sizeof(none), "No stalls in any of the %u processes.\n",
				 s->processes);

		append_text(s, "", NULL, none, (size_t)k, false);
	}
	if (s->processes) {
		sort_groups(merged);
		s->json = rd_json_text(merged, JW_COMPACT, 12, false);
	}
	json_decref(merged);
}

void run_stalls_free(struct run_stalls *s)
{
	free(s->json);
	free(s->text);
	memset(s, 0, sizeof(*s));
}
