/* Named machines, the client side: the socket's name and one request (see named.h). */
#include "cli/named.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/host.h"
#include "config/config.h"
#include "uffd/uffd.h"
#include "util/clock.h"

#define MAX_REPLY (4 << 20)

bool named_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > NAMED_NAME_MAX)
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

static int connect_to(const char *name)
{
	struct sockaddr_un sa;
	socklen_t sl = named_sockaddr(name, (unsigned)getuid(), &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sl) < 0) {
		int e = errno;

		close(fd);
		/* nobody listens on that name: there is no such machine */
		return e == ECONNREFUSED || e == ENOENT ? -ENOENT : -e;
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
		  char *err, size_t errlen)
{
	uint64_t deadline = clock_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	char line[128], *all = NULL;
	size_t n = 0;
	int fd = connect_to(name), rc, ll;

	*body = NULL;
	*len = 0;
	if (fd < 0) {
		snprintf(err, errlen, "%s", fd == -ENOENT ? "no such machine" : strerror(-fd));
		return fd;
	}
	ll = snprintf(line, sizeof(line), "%s\n", req);
	rc = send(fd, line, (size_t)ll, MSG_NOSIGNAL) == ll ? 0 : -errno;
	if (rc == 0)
		rc = read_all(fd, deadline, &all, &n);
	close(fd);
	if (rc < 0) {
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
		cli_usage_error("run", "%s: the machine %s has its own (started with %s %s)",
				o->cli, name, o->cli, val);
	cli_usage_error("run", "%s: the machine %s has its own (started without %s)", o->cli, name,
			o->cli);
}

/* One KEY=VALUE line of attach's answer: for the program's environment and the report. */
static void apply_line(const char *name, const char *const given[], char *line, struct config *cfg)
{
	char *eq = strchr(line, '='), err[512];
	const struct config_opt *o;

	if (!eq)
		return;
	*eq = '\0';
	o = config_opt_by_env(line);
	if (!o)
		return; /* a newer daemon's key: not ours to set */
	refuse_given(name, given, o, eq + 1);
	if (o == &config_opts[CONFIG_STALL_THRESHOLD] && given[CONFIG_STALL_THRESHOLD])
		return;
	if (!eq[1]) {
		unsetenv(line);
		return;
	}
	setenv(line, eq + 1, 1);
	if (config_opt_parse(o, o->env, eq + 1, cfg, err, sizeof(err)) < 0) {
		cli_error("run", "--machine %s: %s", name, err);
		exit(1);
	}
}

void named_run_attach(const char *name, const char *const given[], struct config *cfg)
{
	char *body = NULL, err[512], *save = NULL;
	size_t len;
	int rc;

	if (!named_valid(name))
		cli_usage_error("run", "--machine: '%s' is not a machine name (1 to %d of %s)",
				name, NAMED_NAME_MAX, NAMED_NAME_CHARS);
	rc = named_request(name, "attach", 5000, &body, &len, err, sizeof(err));
	if (rc == -ENOENT)
		cli_usage_error("run",
				"--machine: no machine %s (start it with thpemu machine start %s)",
				name, name);
	if (rc < 0) {
		cli_error("run", "--machine %s: %s", name, err);
		exit(1);
	}
	for (char *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		apply_line(name, given, l, cfg);
	free(body);
	if (!getenv("THPEMU_MACHINE")) {
		cli_error("run", "--machine %s: its daemon gave no rendezvous", name);
		exit(1);
	}
}

bool named_run_stats(const char *name, struct uffd_stats *total, char *json, size_t len)
{
	struct named_stats ns;
	char *body = NULL, err[256], writers[400];
	size_t n;
	bool ok;

	/* the run's processes are gone; the machine's keeper gives their frames back within a
	 * slice or two (host.c) */
	usleep(200000);
	ok =
	    named_request(name, "stats", 5000, &body, &n, err, sizeof(err)) == 0 && n == sizeof(ns);

	if (ok)
		memcpy(&ns, body, sizeof(ns));
	free(body);
	if (!ok || ns.size != sizeof(ns)) {
		snprintf(json, len,
			 "{\"shared\": true, \"name\": \"%s\", \"stopped\": true, \"note\": \"the "
			 "machine could not be asked after the run: vmstat and pool are the "
			 "processes' last snapshots\"}",
			 name);
		return false;
	}
	memcpy(total->vmstat, ns.vmstat, sizeof(ns.vmstat));
	total->counts = ns.counts;
	total->io = ns.io;
	run_host_writers_json(&ns.writers, writers, sizeof(writers));
	snprintf(json, len,
		 "{\"shared\": true, \"name\": \"%s\", \"pid\": %d, \"processes_attached\": %u, "
		 "\"processes_reaped\": %llu, \"frames_returned\": %llu, \"repairs\": %llu, "
		 "\"tainted\": %s, \"writers\": %s}",
		 name, (int)ns.pid, ns.nr_live, (unsigned long long)ns.reaped,
		 (unsigned long long)ns.frames_back, (unsigned long long)ns.repairs,
		 ns.tainted ? "true" : "false", writers);
	return true;
}
