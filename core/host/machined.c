/* The daemon of a named machine (`thpemu machine start NAME`, named.h).
 *
 * It is a child of the start command, in a session of its own, with its working directory at /
 * and its standard streams on /dev/null once ready. It keeps a private directory (0700, under
 * TMPDIR: tmpdir_create, so that the next start removes it if this daemon was killed) for
 * the device's mount point; the device is mounted as `thpemu run` mounts it (run_io.c: the
 * fusedev daemon gets SIGTERM and unmounts when this process dies, PR_SET_PDEATHSIG). Then it
 * hosts the machine (host.c: kernel threads, io, the keeper that reaps dead processes) and
 * answers requests on its socket, one connection at a time, until it is stopped: by `stop`, or
 * by SIGTERM / SIGINT (the same stop without anyone to answer).
 *
 * A stop marks the machine stopping (struct machine_hdr.stopping): the agent of every attached
 * process notices it within a slice and the process steps aside (its memory handed back to the
 * kernel with its data, the emulator's threads gone); the keeper reaps the slots. After every
 * slot is free (or 10 s), io stops, the device is unmounted, the report is written and the
 * daemon exits. A daemon killed with SIGKILL leaves no socket (abstract) and no shared-memory
 * object (a memfd lives as long as a process maps it): its attached processes keep running,
 * still on the segment they map, without kernel threads, writeback or reaping, and none waits
 * for it (machine_host_gone: the robust lock the daemon held as the host).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/prog.h"
#include "host/tmpdirs.h"
#include "host/host.h"
#include "host/named.h"
#include "host/run_io.h"
#include "config/config.h"
#include "report/run.h"
#include "util/clock.h"

#define TICK_MS		 100
#define STOP_WAIT_NS	 (10 * 1000000000ULL)
#define IO_DRAIN_NS	 1000000000ULL
#define CLIENT_TIMEOUT_S 2
#define MAX_SEEN	 1024
#define ATTACH_MAX	 4096

/* A process seen on the machine (a slot generation), for the report. */
struct seen {
	int slot, pid;
	uint32_t gen, state;
	bool reaped; /* it left the machine (exit, death, stepping aside) */
	char comm[16];
};

struct daemon {
	const struct named_daemon_opts *o;
	struct config cfg; /* what the machine was made with */
	struct run_device dev;
	struct run_host host;
	char dir[PATH_MAX];
	char attach[ATTACH_MAX]; /* THPEMU_* lines for attach */
	int lfd;
	uint64_t t0;
	pthread_mutex_t seen_lock; /* the keeper adds processes it reaps (on_reap) */
	struct seen seen[MAX_SEEN];
	unsigned nseen;
};

static volatile sig_atomic_t terminate;

static void on_term(int sig)
{
	terminate = sig;
}

static const char *const state_names[] = {"free", "live", "exiting", "dead", "joining"};

static const char *state_name(uint32_t s)
{
	return s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

/* ---- what the machine has seen ----------------------------------------------------------------
 */

/* The entry of slot's current process (added if new), or NULL when the list is full. */
static struct seen *seen_slot(struct daemon *d, int s, const struct machine_slot *sl)
{
	unsigned i;

	for (i = 0; i < d->nseen; i++)
		if (d->seen[i].slot == s && d->seen[i].gen == sl->gen)
			return &d->seen[i];
	if (d->nseen == MAX_SEEN)
		return NULL; /* the report lists the first MAX_SEEN */
	d->nseen++;
	d->seen[i] = (struct seen){.slot = s, .pid = sl->pid, .gen = sl->gen};
	memcpy(d->seen[i].comm, sl->comm, sizeof(d->seen[i].comm));
	d->seen[i].comm[sizeof(d->seen[i].comm) - 1] = '\0';
	return &d->seen[i];
}

static void note_slots(struct daemon *d)
{
	pthread_mutex_lock(&d->seen_lock);
	for (int s = 1; s < MACHINE_MAX_PROCS; s++) {
		const struct machine_slot *sl = machine_slot(&d->host.m, s);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		struct seen *e;

		if (st == MACHINE_SLOT_FREE || st == MACHINE_SLOT_TAKING)
			continue;
		if ((e = seen_slot(d, s, sl)) && !e->reaped)
			e->state = st;
	}
	pthread_mutex_unlock(&d->seen_lock);
}

/* host.c's on_reap (the keeper thread): a process too short-lived for note_slots' tick is
 * listed all the same. */
static void reaped(void *arg, int s)
{
	struct daemon *d = arg;
	struct seen *e;

	pthread_mutex_lock(&d->seen_lock);
	if ((e = seen_slot(d, s, machine_slot(&d->host.m, s))))
		e->reaped = true;
	pthread_mutex_unlock(&d->seen_lock);
}

/* ---- status ---------------------------------------------------------------------------------- */

static const unsigned key_stats[] = {
    MM_STAT_THP_FAULT_ALLOC, MM_STAT_THP_FAULT_FALLBACK, MM_STAT_COMPACT_STALL,
    MM_STAT_COMPACT_SUCCESS, MM_STAT_COMPACT_FAIL,	 MM_STAT_PGMIGRATE_SUCCESS,
};

static void fill_stats(struct daemon *d, struct named_stats *ns)
{
	struct machine_hdr *h = d->host.m.hdr;

	memset(ns, 0, sizeof(*ns));
	ns->size = sizeof(*ns);
	ns->pid = (int32_t)getpid();
	ns->tainted = machine_tainted(&d->host.m);
	ns->nr_live = machine_nr_live(&d->host.m);
	ns->reaped = d->host.reaped;
	ns->frames_back = d->host.frames_back;
	ns->repairs = h->repairs;
	ns->writers = h->writers;
	run_host_stats(&d->host, ns->vmstat, &ns->counts, &ns->io);
}

static void status_text(struct daemon *d, FILE *f)
{
	struct named_stats ns;
	const struct mm_counts *c = &ns.counts;

	fill_stats(d, &ns);
	fprintf(f, "machine %s: running (pid %d, up %.1f s), policy %s, pool %llu MiB\n",
		d->o->name, (int)ns.pid, (double)(clock_now_ns() - d->t0) / 1e9, d->cfg.policy_spec,
		(unsigned long long)(d->cfg.pool_bytes >> 20));
	fprintf(f, "vmstat:");
	for (size_t i = 0; i < sizeof(key_stats) / sizeof(key_stats[0]); i++)
		fprintf(f, " %s=%llu", mm_stat_names[key_stats[i]],
			(unsigned long long)ns.vmstat[key_stats[i]]);
	fprintf(f,
		"\nframes: total=%u free=%u anon=%u anon_huge=%u file=%u dirty=%u "
		"writeback=%u unmovable=%u\nfree blocks by order:",
		c->nr_frames, c->free, c->anon, c->anon_huge, c->file, c->file_dirty,
		c->file_writeback, c->unmovable);
	for (unsigned o = 0; o < MM_NR_ORDERS; o++)
		fprintf(f, " %u:%u", o, c->nr_free[o]);
	fprintf(f, "\nrepairs=%llu tainted=%s reaped=%llu\nprocesses: %u\n",
		(unsigned long long)ns.repairs, ns.tainted ? "yes" : "no",
		(unsigned long long)ns.reaped, ns.nr_live);
	for (int s = 1; s < MACHINE_MAX_PROCS; s++) {
		const struct machine_slot *sl = machine_slot(&d->host.m, s);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (st != MACHINE_SLOT_FREE)
			fprintf(f, "  slot %d pid %d comm %.16s state %s\n", s, (int)sl->pid,
				sl->comm, state_name(st));
	}
}

static void counts_json(struct json_w *w, const char *key, const struct mm_counts *c)
{
	jw_obj_begin(w, key);
	jw_u64(w, "frames", c->nr_frames);
	jw_u64(w, "free", c->free);
	jw_u64(w, "anon", c->anon);
	jw_u64(w, "anon_huge", c->anon_huge);
	jw_u64(w, "file", c->file);
	jw_u64(w, "shmem", c->shmem);
	jw_u64(w, "shmem_huge", c->shmem_huge);
	jw_u64(w, "dirty", c->file_dirty);
	jw_u64(w, "writeback", c->file_writeback);
	jw_u64(w, "unmovable", c->unmovable);
	jw_u64(w, "isolated", c->isolated);
	jw_u64(w, "anon_pmd", c->anon_pmd);
	jw_u64(w, "min_free_kbytes", c->min_free_kbytes);
	jw_arr_begin(w, "free_blocks_by_order");
	for (unsigned i = 0; i < MM_NR_ORDERS; i++)
		jw_u64(w, NULL, c->nr_free[i]);
	jw_arr_end(w);
	jw_obj_begin(w, "watermarks");
	jw_u64(w, "min", c->wmark_min);
	jw_u64(w, "low", c->wmark_low);
	jw_u64(w, "high", c->wmark_high);
	jw_obj_end(w);
	jw_obj_end(w);
}

static void slots_json(struct json_w *w, const char *key, struct daemon *d)
{
	jw_arr_begin(w, key);
	for (int s = 1; s < MACHINE_MAX_PROCS; s++) {
		const struct machine_slot *sl = machine_slot(&d->host.m, s);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		char comm[17];

		if (st == MACHINE_SLOT_FREE)
			continue;
		snprintf(comm, sizeof(comm), "%.16s", sl->comm);
		jw_obj_begin(w, NULL);
		jw_i64(w, "slot", s);
		jw_i64(w, "pid", sl->pid);
		jw_str(w, "comm", comm);
		jw_str(w, "state", state_name(st));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* `status json`: indented 2 spaces, uptime_s with 6 significant digits. */
static char *status_json(struct daemon *d)
{
	struct named_stats ns;
	struct json_w w;

	if (jw_mem_open(&w, 2) < 0)
		return NULL;
	fill_stats(d, &ns);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "name", d->o->name);
	jw_i64(&w, "pid", ns.pid);
	jw_real(&w, "uptime_s", (double)(clock_now_ns() - d->t0) / 1e9, 6);
	jw_str(&w, "policy", d->cfg.policy_spec);
	jw_u64(&w, "pool_bytes", d->cfg.pool_bytes);
	jw_obj_begin(&w, "vmstat");
	for (unsigned i = 0; i < MM_STAT_NR; i++)
		jw_u64(&w, mm_stat_names[i], ns.vmstat[i]);
	jw_obj_end(&w);
	counts_json(&w, "pool", &ns.counts);
	jw_obj_begin(&w, "io");
	jw_u64(&w, "bytes_dirtied", ns.io.bytes_dirtied);
	jw_u64(&w, "bytes_written", ns.io.bytes_written);
	jw_u64(&w, "pages_submitted", ns.io.pages_submitted);
	jw_obj_end(&w);
	slots_json(&w, "processes", d);
	jw_u64(&w, "repairs", ns.repairs);
	jw_bool(&w, "tainted", ns.tainted);
	jw_u64(&w, "reaped", ns.reaped);
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

/* ---- the machine report (at stop) ---------------------------------------------------------------
 */

/* The report's "processes": every process the machine has seen (uffd_program_info.more_json). */
static void seen_json(struct json_w *w, void *arg)
{
	struct daemon *d = arg;

	jw_arr_begin(w, "processes");
	for (unsigned i = 0; i < d->nseen; i++) {
		const struct seen *s = &d->seen[i];
		bool alive = kill(s->pid, 0) == 0 || errno == EPERM;
		/* still running: it stepped aside (it had left), or never answered the stop */
		const char *st = !alive					      ? "exited"
				 : s->reaped || s->state != MACHINE_SLOT_LIVE ? "detached"
									      : "attached";

		jw_obj_begin(w, NULL);
		jw_i64(w, "slot", s->slot);
		jw_i64(w, "pid", s->pid);
		jw_str(w, "comm", s->comm);
		jw_str(w, "state", st);
		jw_bool(w, "running", alive);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* The machine's facts: program.machine, one line as in a run's report. */
static char *machine_json(struct daemon *d, const char *check)
{
	struct json_w w;

	if (jw_mem_open(&w, JW_LINE) < 0)
		return NULL;
	jw_obj_begin(&w, NULL);
	jw_bool(&w, "shared", true);
	jw_str(&w, "name", d->o->name);
	jw_i64(&w, "pid", getpid());
	jw_u64(&w, "processes_reaped", d->host.reaped);
	jw_u64(&w, "frames_returned", d->host.frames_back);
	jw_u64(&w, "repairs", d->host.m.hdr->repairs);
	jw_str(&w, "check", check);
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

/* The run report (uffd_report_json) of the machine's life: its figures, its processes. */
static int write_report(struct daemon *d, const char *check)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));
	struct obs_coverage *cov = malloc(sizeof(*cov));
	struct uffd_program_info prog = {.exit_status = -1, .cmdline = "thpemu machine"};
	char *mjson = machine_json(d, check), *dev_json = run_device_json(&d->dev);
	int rc = -1;

	if (st) {
		obs_faults_init(&st->faults);
		snprintf(st->policy, sizeof(st->policy), "%s", d->cfg.policy_spec);
		st->pool_bytes = d->cfg.pool_bytes;
		run_host_stats(&d->host, st->vmstat, &st->counts, &st->io);
		run_host_mem_peak(&d->host, &st->mem); /* its processes' memory at its largest */
		st->mem.processes = d->nseen;
		prog.machine_json = mjson;
		prog.device_json = dev_json;
		prog.wall_s = (double)(clock_now_ns() - d->t0) / 1e9;
		prog.processes = d->nseen;
		if (cov) { /* over the machine's life */
			run_host_coverage(&d->host, cov);
			prog.coverage = cov;
		}
		prog.more_json = seen_json;
		prog.more_arg = d;
		rc = uffd_report_json(d->o->report_f, &d->cfg, st, &prog);
	}
	free(mjson);
	free(dev_json);
	free(cov);
	free(st);
	return rc;
}

/* ---- stop -------------------------------------------------------------------------------------
 */

static void ask_everyone_to_leave(struct daemon *d)
{
	__atomic_store_n(&d->host.m.hdr->stopping, 1, __ATOMIC_RELEASE);
	for (int s = 1; s < MACHINE_MAX_PROCS; s++) /* agents asleep on their mailbox see it now */
		machine_serve_kick(&d->host.m, s);
}

/* Slots still taken by programs (the device's daemon, a process of the machine too, goes with
 * the device). */
static unsigned slots_left(struct daemon *d)
{
	unsigned n = 0;

	for (int s = 1; s < MACHINE_MAX_PROCS; s++) {
		const struct machine_slot *sl = machine_slot(&d->host.m, s);

		n += sl && __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != MACHINE_SLOT_FREE &&
		     !(d->dev.pid > 0 && sl->pid == d->dev.pid);
	}
	return n;
}

static void wait_slots_free(struct daemon *d)
{
	uint64_t end = clock_now_ns() + STOP_WAIT_NS;

	while (slots_left(d) && clock_now_ns() < end) {
		note_slots(d);
		usleep(20000);
	}
	note_slots(d);
}

/* Stop the machine; answer fd (if any) once done; never returns. */
static void stop(struct daemon *d, int fd)
{
	char why[300] = "", msg[PATH_MAX + 64];
	unsigned left;
	int bad;

	ask_everyone_to_leave(d);
	wait_slots_free(d);
	left = slots_left(d);
	run_host_stop(&d->host, IO_DRAIN_NS); /* its writeback ends while the device is there */
	run_device_stop(&d->dev);
	bad = left ? 0 : run_host_check(&d->host, why, sizeof(why));
	if (d->o->report_f) {
		if (write_report(d, left || bad > 0 ? "skipped"
				    : bad < 0	    ? "failed"
						    : "ok") < 0 ||
		    fclose(d->o->report_f) != 0)
			snprintf(why, sizeof(why), "could not write the report");
	}
	run_host_destroy(&d->host);
	tmpdir_rmtree(d->dir);
	snprintf(msg, sizeof(msg), "ok\nreport=%s\nprocesses_left=%u\n",
		 d->o->report ? d->o->report : "", left);
	if (fd >= 0) {
		send(fd, msg, strlen(msg), MSG_NOSIGNAL);
		close(fd);
	}
	_exit(0);
}

/* ---- requests ---------------------------------------------------------------------------------
 */

static void reply(int fd, const char *status, const char *body, size_t len)
{
	send(fd, status, strlen(status), MSG_NOSIGNAL);
	if (body && len)
		send(fd, body, len, MSG_NOSIGNAL);
}

/* The peer must be our own user (named.h: the machine is private). */
static bool peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0 && cr.uid == getuid();
}

/* One line, up to '\n' (the client writes it at once; a slow one is cut off). */
static bool read_request(int fd, char *line, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t r = read(fd, line + n, len - 1 - n);
		char *nl;

		if (r <= 0)
			return false;
		n += (size_t)r;
		line[n] = '\0';
		if ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			return true;
		}
	}
	return false;
}

static void answer(struct daemon *d, int fd, const char *req)
{
	char buf[64], *text = NULL;
	size_t len = 0;

	if (!strcmp(req, "ping")) {
		snprintf(buf, sizeof(buf), "pid=%d\n", (int)getpid());
		reply(fd, "ok\n", buf, strlen(buf));
	} else if (!strcmp(req, "attach")) {
		reply(fd, "ok\n", d->attach, strlen(d->attach));
	} else if (!strcmp(req, "status")) {
		FILE *f = open_memstream(&text, &len);

		if (f) {
			status_text(d, f);
			fclose(f);
		}
		reply(fd, "ok\n", text, len);
	} else if (!strcmp(req, "status json")) {
		text = status_json(d);
		if (text)
			reply(fd, "ok\n", text, strlen(text));
	} else if (!strcmp(req, "stats")) {
		struct named_stats ns;

		fill_stats(d, &ns);
		reply(fd, "ok\n", (const char *)&ns, sizeof(ns));
	} else if (!strcmp(req, "stop")) {
		stop(d, fd);
	} else {
		reply(fd,
		      "error unknown request (ping, attach, status, status json, stats, stop)\n",
		      NULL, 0);
	}
	free(text);
}

static void serve_one(struct daemon *d)
{
	struct timeval tv = {CLIENT_TIMEOUT_S, 0};
	int fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);
	char line[128];

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* the request is read even from a stranger, so that it reads our refusal (a peer still
	 * writing to a closed connection would only see it reset) */
	if (read_request(fd, line, sizeof(line))) {
		if (peer_allowed(fd))
			answer(d, fd, line);
		else
			reply(fd,
			      "error refused: this machine is private to the user who started it\n",
			      NULL, 0);
	}
	close(fd);
}

static void serve(struct daemon *d)
{
	struct pollfd p = {.fd = d->lfd, .events = POLLIN};

	for (;;) {
		int r = poll(&p, 1, TICK_MS);

		note_slots(d);
		if (terminate)
			stop(d, -1);
		if (r > 0 && (p.revents & POLLIN))
			serve_one(d);
	}
}

/* ---- start ------------------------------------------------------------------------------------
 */

/* The configuration every process's library must agree on (attach's body). */
static void make_attach(struct daemon *d)
{
	size_t n = 0;

	n += (size_t)snprintf(d->attach, sizeof(d->attach), "THPEMU_MACHINE=%s\n",
			      getenv("THPEMU_MACHINE"));
	for (size_t i = 0; i < named_nattach_keys && n < sizeof(d->attach); i++) {
		const struct config_opt *o = &config_opts[named_attach_keys[i]];
		const char *v = getenv(o->env);

		n += (size_t)snprintf(d->attach + n, sizeof(d->attach) - n, "%s=%s\n", o->env,
				      v ? v : o->def);
	}
}

static int listen_on(const char *name, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	socklen_t sl = named_sockaddr(name, (unsigned)getuid(), &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 16) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot listen on the machine's socket: %s", strerror(e));
		if (fd >= 0)
			close(fd);
		return e == EADDRINUSE ? -EEXIST : -e;
	}
	return fd;
}

static int make_machine(struct daemon *d, char *err, size_t errlen)
{
	struct config hc;
	int rc;

	tmpdir_sweep("thpemu-machine"); /* those of daemons that were killed */
	rc = tmpdir_create("thpemu-machine", d->dir, sizeof(d->dir), err, errlen);
	if (rc < 0)
		return rc;
	d->dev = (struct run_device){.spec = d->o->device_spec,
				     .dev = d->o->device,
				     .parent = d->dir,
				     .pid = -1,
				     .status = -1};
	run_device_start(&d->dev, d->o->seed, d->o->quiet);
	/* the configuration as parsed, with the device's directory (or the model standing in) */
	hc = *d->o->cfg;
	rc = run_device_config(&d->dev, &hc, err, errlen);
	if (rc == 0)
		rc = run_host_start(&d->host, &hc, err, errlen);
	if (rc < 0) {
		run_device_stop(&d->dev);
		tmpdir_rmtree(d->dir);
		return rc;
	}
	d->cfg = hc;
	run_device_join(&d->dev, getenv("THPEMU_MACHINE"), d->o->quiet); /* real writers */
	__atomic_store_n(&d->host.on_reap_arg, d, __ATOMIC_RELAXED);
	__atomic_store_n(&d->host.on_reap, reaped, __ATOMIC_RELEASE);
	make_attach(d);
	return 0;
}

/* Descriptors the start command's caller left open (a pipe someone waits on for EOF) must not
 * live as long as the daemon. */
static void close_inherited(int keep_a, int keep_b)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fds[256], n = 0;

	while (d && (de = readdir(d)) && n < 256) {
		int fd = atoi(de->d_name);

		if (fd > 2 && fd != keep_a && fd != keep_b && fd != dirfd(d))
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	while (n--)
		close(fds[n]);
}

static void detach_streams(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
}

static void handle_signals(void)
{
	struct sigaction sa = {.sa_handler = on_term};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
}

/* The daemon: tell the start command (ready_fd) how it went, then serve. */
static void daemon_main(const struct named_daemon_opts *o, int ready_fd)
{
	static struct daemon d;
	char err[1024], msg[1100];
	int rc;

	setsid();
	close_inherited(ready_fd, o->report_f ? fileno(o->report_f) : -1);
	handle_signals();
	d.o = o;
	pthread_mutex_init(&d.seen_lock, NULL);
	d.t0 = clock_now_ns();
	d.lfd = listen_on(o->name, err, sizeof(err));
	rc = d.lfd < 0 ? d.lfd : make_machine(&d, err, sizeof(err));
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "%s %s", rc == -EEXIST ? "busy" : "error", err);
		if (write(ready_fd, msg, strlen(msg)) < 0)
			_exit(1);
		_exit(1);
	}
	if (chdir("/") < 0)
		_exit(1);
	snprintf(msg, sizeof(msg), "ready %d", (int)getpid());
	if (write(ready_fd, msg, strlen(msg)) < 0)
		stop(&d, -1);
	close(ready_fd);
	detach_streams();
	serve(&d);
}

/* Who holds the name: 0 nobody; -EEXIST our daemon (*pid, -1 if what listens does not answer
 * as one); -EPERM another user's process (err says whose). */
static int name_holder(const char *name, int *pid, char *err, size_t errlen)
{
	char *body = NULL;
	size_t len;
	int rc = named_request(name, "ping", 2000, &body, &len, NULL, err, errlen);

	*pid = -1;
	if (rc == 0 && body)
		sscanf(body, "pid=%d", pid);
	free(body);
	return rc == -ENOENT ? 0 : rc == -EPERM ? -EPERM : -EEXIST;
}

int named_daemon_start(const struct named_daemon_opts *o, int *pid, char *err, size_t errlen)
{
	char buf[1200] = "";
	ssize_t n = 0, r;
	int p[2], rc;
	pid_t child;

	rc = name_holder(o->name, pid, err, errlen);
	if (rc < 0)
		return rc;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		close(p[0]);
		daemon_main(o, p[1]);
		_exit(0);
	}
	close(p[1]);
	while ((r = read(p[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0 ||
	       (r < 0 && errno == EINTR))
		n += r > 0 ? r : 0;
	close(p[0]);
	buf[n] = '\0';
	if (!strncmp(buf, "ready ", 6)) {
		*pid = atoi(buf + 6);
		return 0;
	}
	if (!strncmp(buf, "busy", 4)) /* taken since we looked */
		return name_holder(o->name, pid, err, errlen) == -EPERM ? -EPERM : -EEXIST;
	snprintf(err, errlen, "%s", !strncmp(buf, "error ", 6) ? buf + 6 : "the daemon died");
	return -EIO;
}
