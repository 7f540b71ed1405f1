/* Named machines, the client side: the socket's name and one request (see named.h). */
#include "host/named.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/prog.h"
#include "host/host.h"
#include "config/config.h"
#include "report/run.h"
#include "util/clock.h"

#define MAX_REPLY (4 << 20)

const enum config_id named_attach_keys[] = {
    CONFIG_POLICY, CONFIG_FS,	      CONFIG_POOL,  CONFIG_FRAGMENT,	   CONFIG_SEED,
    CONFIG_DEVICE, CONFIG_DEVICE_DIR, CONFIG_DIRTY, CONFIG_STALL_THRESHOLD};
const size_t named_nattach_keys = sizeof(named_attach_keys) / sizeof(named_attach_keys[0]);

bool named_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > NAMED_NAME_MAX || name[0] == '-') /* an option, not a name */
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
	       n;
}

socklen_t named_sockaddr(const char *name, unsigned uid, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] = '\0': the abstract namespace; the name is the bytes that follow */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "thpemu-machine-%u-%s", uid, name);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Wait for fd to be ready for events until the deadline; false on timeout. */
static bool wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};

	for (;;) {
		uint64_t now = clock_now_ns();
		int r;

		if (now >= deadline)
			return false;
		r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

/* Read until EOF (the daemon closes after its answer). */
static int read_all(int fd, uint64_t deadline, char **out, size_t *len)
{
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t r;

		if (!wait_fd(fd, POLLIN, deadline)) {
			free(buf);
			return -ETIMEDOUT;
		}
		r = read(fd, buf + n, cap - n);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		n += (size_t)r;
		if (n == cap) {
			char *nb = cap < MAX_REPLY ? realloc(buf, cap * 2 + 1) : NULL;

			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf)
		return -ENOMEM;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Who listens on the connected socket fd (SO_PEERCRED: the listener's credentials when it
 * called listen(), net/unix/af_unix.c: unix_stream_connect copies them to the client). Anyone
 * may bind an abstract name, so a listener of another uid is not our daemon: -EPERM. */
static int check_listener(int fd, int *pid, char *err, size_t errlen)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot tell who listens on the machine's socket: %s",
			 strerror(e));
		return -e;
	}
	if (pid)
		*pid = (int)cr.pid;
	if (cr.uid != getuid()) {
		snprintf(err, errlen,
			 "the name is held by another user's process (uid %u, pid %d), not by a "
			 "machine of yours",
			 (unsigned)cr.uid, (int)cr.pid);
		return -EPERM;
	}
	return 0;
}

/* A connection to the machine's daemon, its listener checked; -errno with err set. */
static int connect_to(const char *name, int *pid, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	socklen_t sl = named_sockaddr(name, (unsigned)getuid(), &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		/* nobody listens on that name: there is no such machine */
		if (e == ECONNREFUSED || e == ENOENT)
			e = ENOENT;
		snprintf(err, errlen, "%s", e == ENOENT ? "no such machine" : strerror(e));
		return -e;
	}
	rc = check_listener(fd, pid, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Split the answer: "ok\n" + body, or "error MESSAGE\n". */
static int split_answer(char *all, size_t n, char **body, size_t *len, char *err, size_t errlen)
{
	char *nl = memchr(all, '\n', n);

	if (!nl) {
		snprintf(err, errlen, "the machine's daemon gave no answer");
		return -EPROTO;
	}
	*nl = '\0';
	if (strcmp(all, "ok") != 0) {
		snprintf(err, errlen, "%s", strncmp(all, "error ", 6) == 0 ? all + 6 : all);
		return -EPROTO;
	}
	*len = n - (size_t)(nl + 1 - all);
	*body = malloc(*len + 1);
	if (!*body)
		return -ENOMEM;
	memcpy(*body, nl + 1, *len);
	(*body)[*len] = '\0';
	return 0;
}

int named_request(const char *name, const char *req, int timeout_ms, char **body, size_t *len,
		  int *pid, char *err, size_t errlen)
{
	uint64_t deadline = clock_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	char line[128], *all = NULL;
	size_t n = 0;
	ssize_t sent;
	int fd, rc, ll;

	*body = NULL;
	*len = 0;
	ll = snprintf(line, sizeof(line), "%s\n", req);
	if (ll < 0 || (size_t)ll >= sizeof(line)) { /* the requests are short words: a bug */
		snprintf(err, errlen, "a request to the machine's daemon is too long");
		return -EINVAL;
	}
	fd = connect_to(name, pid, err, errlen);
	if (fd < 0)
		return fd;
	sent = send(fd, line, (size_t)ll, MSG_NOSIGNAL);
	if (sent == ll)
		rc = read_all(fd, deadline, &all, &n);
	else
		rc = sent < 0 ? -errno : -EIO; /* a short send sets no errno */
	close(fd);
	if (!all) { /* not sent, or no answer read: rc < 0 (read_all sets all only on success) */
		snprintf(err, errlen, "no answer from the machine's daemon: %s", strerror(-rc));
		return rc;
	}
	rc = split_answer(all, n, body, len, err, errlen);
	free(all);
	return rc;
}

/* ---- thpemu run --machine -------------------------------------------------------------------- */

static void refuse_given(const char *name, const char *const given[], const struct config_opt *o,
			 const char *val)
{
	unsigned id = (unsigned)(o - config_opts);

	if (!o->cli || !given[id] || id == CONFIG_STALL_THRESHOLD) /* a process's own choice */
		return;
	if (val[0])
		prog_usage_error("run", "%s: the machine %s has its own (started with %s %s)",
				 o->cli, name, o->cli, val);
	prog_usage_error("run", "%s: the machine %s has its own (started without %s)", o->cli, name,
			 o->cli);
}

/* What named_run_attach is reading: the daemon it verified and the keys seen so far. */
struct attach {
	const char *name;
	const char *const *given;
	struct config *cfg;
	int pid; /* the daemon's (SO_PEERCRED) */
	bool seen[CONFIG_NR];
};

/* An answer no daemon of this build gives: nothing of it is used. */
static void __attribute__((noreturn))
bad_answer(const struct attach *a, const char *what, const char *detail)
{
	prog_error("run", "--machine %s: its daemon (pid %d) %s%s; not attaching", a->name, a->pid,
		   what, detail);
	exit(1);
}

/* Is o a key attach's answer may carry? */
static bool attach_key(const struct config_opt *o)
{
	if (o == &config_opts[CONFIG_MACHINE])
		return true;
	for (size_t i = 0; i < named_nattach_keys; i++)
		if (o == &config_opts[named_attach_keys[i]])
			return true;
	return false;
}

/* THPEMU_MACHINE=HOSTPID:FD: the segment must be the verified daemon's (it hosts the machine),
 * so that no other process's descriptor is opened by the program. */
static void check_rendezvous(const struct attach *a, const char *val)
{
	int pid, fd;

	if (!config_rendezvous(val, &pid, &fd))
		bad_answer(a, "gave a rendezvous that is not HOSTPID:FD: ", val);
	if (pid != a->pid)
		bad_answer(a, "gave the rendezvous of another process: ", val);
}

/* One KEY=VALUE line of attach's answer: checked, then for the program's environment and the
 * report. */
static void apply_line(struct attach *a, char *line)
{
	char *eq = strchr(line, '='), err[512];
	const struct config_opt *o;
	unsigned id;

	if (!eq)
		bad_answer(a, "sent a line that is not KEY=VALUE: ", line);
	*eq = '\0';
	o = config_opt_by_env(line);
	if (!o || !attach_key(o))
		bad_answer(a, "sent a key that is not a machine's setting: ", line);
	id = (unsigned)(o - config_opts);
	if (a->seen[id])
		bad_answer(a, "sent a key twice: ", line);
	a->seen[id] = true;
	if (id == CONFIG_MACHINE)
		check_rendezvous(a, eq + 1);
	refuse_given(a->name, a->given, o, eq + 1);
	if (id == CONFIG_STALL_THRESHOLD && a->given[CONFIG_STALL_THRESHOLD])
		return;
	if (!eq[1]) {
		unsetenv(line);
		return;
	}
	if (config_opt_parse(o, o->env, eq + 1, a->cfg, err, sizeof(err)) < 0) {
		prog_error("run", "--machine %s: %s", a->name, err);
		exit(1);
	}
	setenv(line, eq + 1, 1);
}

void named_run_attach(const char *name, const char *const given[], struct config *cfg)
{
	struct attach a = {.name = name, .given = given, .cfg = cfg, .pid = -1};
	char *body = NULL, err[512], *save = NULL;
	size_t len;
	int rc;

	if (!named_valid(name))
		prog_usage_error("run", "--machine: '%s' is not a machine name (1 to %d of %s)",
				 name, NAMED_NAME_MAX, NAMED_NAME_CHARS);
	rc = named_request(name, "attach", 5000, &body, &len, &a.pid, err, sizeof(err));
	if (rc == -ENOENT)
		prog_usage_error("run",
				 "--machine: no machine %s (start it with thpemu machine start %s)",
				 name, name);
	if (rc == -EPERM)
		prog_usage_error("run", "--machine %s: %s; refusing it", name, err);
	if (rc < 0) {
		prog_error("run", "--machine %s: %s", name, err);
		exit(1);
	}
	if (strlen(body) != len)
		bad_answer(&a, "sent a NUL byte", "");
	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		apply_line(&a, l);
	free(body);
	if (!a.seen[CONFIG_MACHINE] || !getenv("THPEMU_MACHINE"))
		bad_answer(&a, "gave no rendezvous", "");
}

/* The report's program.machine after a run on a machine that could not be asked. */
static char *stopped_json(const char *name)
{
	struct json_w w;

	if (jw_mem_open(&w, JW_LINE) < 0)
		return NULL;
	jw_obj_begin(&w, NULL);
	jw_bool(&w, "shared", true);
	jw_str(&w, "name", name);
	jw_bool(&w, "stopped", true);
	jw_str(&w, "note",
	       "the machine could not be asked after the run: vmstat and pool are the "
	       "processes' last snapshots");
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

/* ... and after one on a machine that answered (one line, as the report has it). */
static char *machine_json(const char *name, const struct named_stats *ns)
{
	struct json_w w;

	if (jw_mem_open(&w, JW_LINE) < 0)
		return NULL;
	jw_obj_begin(&w, NULL);
	jw_bool(&w, "shared", true);
	jw_str(&w, "name", name);
	jw_i64(&w, "pid", ns->pid);
	jw_u64(&w, "processes_attached", ns->nr_live);
	jw_u64(&w, "processes_reaped", ns->reaped);
	jw_u64(&w, "frames_returned", ns->frames_back);
	jw_u64(&w, "repairs", ns->repairs);
	jw_bool(&w, "tainted", ns->tainted);
	run_host_writers_json(&w, "writers", &ns->writers);
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

bool named_run_stats(const char *name, struct uffd_stats *total, char **json)
{
	struct named_stats ns;
	char *body = NULL, err[256];
	size_t n;
	bool ok;

	/* the run's processes are gone; the machine's keeper gives their frames back within a
	 * slice or two (host.c) */
	usleep(200000);
	ok = named_request(name, "stats", 5000, &body, &n, NULL, err, sizeof(err)) == 0 &&
	     n == sizeof(ns);

	if (ok)
		memcpy(&ns, body, sizeof(ns));
	free(body);
	if (!ok || ns.size != sizeof(ns)) {
		*json = stopped_json(name);
		return false;
	}
	memcpy(total->vmstat, ns.vmstat, sizeof(ns.vmstat));
	total->counts = ns.counts;
	total->io = ns.io;
	*json = machine_json(name, &ns);
	return true;
}
