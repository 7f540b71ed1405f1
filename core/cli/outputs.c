/* Output paths of every command, checked or opened before any work starts (see cli.h).
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
