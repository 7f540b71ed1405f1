/* Running the host tools the oracle needs (apt-cache, apt-get, dpkg-deb, xz): exec'd directly,
 * never through a shell, with stdin from /dev/null, stdout captured (or sent to a file) and the
 * tail of stderr kept for the one-line error that names what failed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oracle/oracle.h"

void oracle_cmd_free(struct oracle_cmd *c)
{
	free(c->out);
	c->out = NULL;
	c->outlen = 0;
}

/* In the child: stdin from /dev/null, stdout to out_fd, stderr to err_fd; then exec. */
static void child(const char *const argv[], const char *cwd, int out_fd, int err_fd)
{
	int null = open("/dev/null", O_RDONLY);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(127);
	if (cwd && chdir(cwd) < 0)
		_exit(126);
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

static int append(struct oracle_cmd *c, const char *buf, size_t n)
{
	char *p = realloc(c->out, c->outlen + n + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p + c->outlen, buf, n);
	c->outlen += n;
	p[c->outlen] = '\0';
	c->out = p;
	return 0;
}

/* Keep the last bytes of stderr (the message that says why). */
static void keep_err(struct oracle_cmd *c, const char *buf, size_t n)
{
	size_t cap = sizeof(c->err) - 1, have = strlen(c->err);

	if (n >= cap) {
		memcpy(c->err, buf + n - cap, cap);
		c->err[cap] = '\0';
		return;
	}
	if (have + n > cap) {
		memmove(c->err, c->err + (have + n - cap), cap - n);
		have = cap - n;
	}
	memcpy(c->err + have, buf, n);
	c->err[have + n] = '\0';
}

/* Read both pipes until both are closed. */
static int drain(struct oracle_cmd *c, int out, int err)
{
	struct pollfd p[2] = {{.fd = out, .events = POLLIN}, {.fd = err, .events = POLLIN}};
	char buf[16384];
	int rc = 0;

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
			} else if (i == 0 && !rc) {
				rc = append(c, buf, (size_t)n);
			} else if (i == 1) {
				keep_err(c, buf, (size_t)n);
			}
		}
	}
	return rc;
}

int oracle_cmd_run(const char *const argv[], const char *cwd, int out_fd, struct oracle_cmd *c)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc = 0;
	pid_t pid;

	memset(c, 0, sizeof(*c));
	c->status = -1;
	if ((out_fd < 0 && pipe2(po, O_CLOEXEC) < 0) || pipe2(pe, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out_close;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out_close;
	}
	if (pid == 0)
		child(argv, cwd, out_fd >= 0 ? out_fd : po[1], pe[1]);
	close(pe[1]);
	pe[1] = -1;
	if (po[1] >= 0) {
		close(po[1]);
		po[1] = -1;
	}
	rc = drain(c, po[0], pe[0]);
	po[0] = pe[0] = -1; /* closed by drain */
	while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR)
		;
	if (!rc && !(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0))
		rc = WIFEXITED(c->status) && WEXITSTATUS(c->status) == 127 ? -ENOENT : -ECHILD;
out_close:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

/* The last line of a tool's stderr, for a one-line message. */
const char *oracle_cmd_why(const struct oracle_cmd *c)
{
	static char line[256];
	const char *e = c->err;
	size_t n = strlen(e);

	while (n && (e[n - 1] == '\n' || e[n - 1] == ' '))
		n--;
	for (size_t i = n; i > 0; i--)
		if (e[i - 1] == '\n') {
			e += i;
			n -= i;
			break;
		}
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, e, n);
	line[n] = '\0';
	if (!n)
		snprintf(line, sizeof(line), "exit status %d",
			 WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 128 + WTERMSIG(c->status));
	return line;
}

int oracle_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
