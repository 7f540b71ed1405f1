/* Output paths of every command, checked or opened before any work starts (see cli.h), and the
 * program a command will run, found before it starts anything.
 *
 * The rules for a file thpemu may write are util/outfile.h's; here a refusal becomes the
 * command's usage error: "thpemu CMD: OPT: 'PATH': why", exit status 2.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/outfile.h"

void cli_check_output(const char *cmd, const char *opt, const char *path)
{
	char err[2048];

	if (outfile_check(path, err, sizeof(err)) < 0)
		cli_usage_error(cmd, "%s: %s", opt, err);
}

FILE *cli_open_output(const char *cmd, const char *opt, const char *path)
{
	char err[2048];
	FILE *f = outfile_fopen(path, err, sizeof(err));

	if (!f)
		cli_usage_error(cmd, "%s: %s", opt, err);
	return f;
}

int cli_open_output_fd(const char *cmd, const char *opt, const char *path)
{
	char err[2048];
	int fd = outfile_open(path, err, sizeof(err));

	if (fd < 0)
		cli_usage_error(cmd, "%s: %s", opt, err);
	return fd;
}

void cli_distinct_paths(const char *cmd, const char *opt_a, const char *a, const char *opt_b,
			const char *b)
{
	if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-") || !outfile_same(a, b))
		return;
	cli_usage_error(cmd, "%s and %s name the same file ('%s'); give each its own", opt_a, opt_b,
			b);
}

void cli_output_dir(const char *cmd, const char *opt, const char *path)
{
	char err[2048];

	if (outfile_dir(path, err, sizeof(err)) < 0)
		cli_usage_error(cmd, "%s: %s", opt, err);
}

/* An executable regular file (what execve could run). */
static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EACCES;
	return access(path, X_OK) < 0 ? -errno : 0;
}

int cli_find_program(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	int rc = -ENOENT;

	if (!name || !*name)
		return -ENOENT;
	if (strchr(name, '/'))
		return executable(name);
	if (!path)
		path = "/bin:/usr/bin"; /* execvp's default (glibc) */
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		int r;

		/* an empty entry is the current directory */
		if ((size_t)snprintf(buf, sizeof(buf), "%.*s%s%s", (int)n, p, n ? "/" : "", name) <
		    sizeof(buf)) {
			r = executable(buf);
			if (r == 0)
				return 0;
			if (r == -EACCES)
				rc = r; /* execvp reports EACCES if that was all it found */
		}
		p += n;
		if (!*p)
			break;
	}
	return rc;
}
