/* Output paths of every command, checked or opened before any work starts (see cli.h).
 *
 * The rules for a file thpemu may write are util/outfile.h's; here a refusal becomes the
 * command's usage error: "thpemu CMD: OPT: 'PATH': why", exit status 2. A whole output
 * (cli_output_open) is written to memory while the command works and to its temporary file at
 * the end, every write checked, then renamed into place; if it cannot be completed the
 * destination is left as it was and the command says so in one line (and exits 1). Outputs not
 * completed when the command exits (a usage error after they were opened) are removed by an
 * atexit handler.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/outfile.h"

struct cli_output {
	const char *cmd, *opt;
	struct outfile file; /* the temporary file, created when opened */
	FILE *f;	     /* the command writes here: memory (open_memstream) */
	char *buf;
	size_t len;
	struct cli_output *next; /* outputs not yet completed (removed at exit) */
};

static struct cli_output *pending;

static void forget(struct cli_output *o)
{
	for (struct cli_output **p = &pending; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			return;
		}
}

static void discard_pending(void)
{
	while (pending)
		cli_output_discard(pending);
}

struct cli_output *cli_output_open(const char *cmd, const char *opt, const char *path)
{
	static bool registered;
	struct cli_output *o = calloc(1, sizeof(*o));
	char err[2048];

	if (!o)
		prog_usage_error(cmd, "%s: out of memory", opt);
	if (outfile_create(&o->file, path, err, sizeof(err)) < 0) {
		free(o);
		prog_usage_error(cmd, "%s: %s", opt, err);
	}
	o->cmd = cmd;
	o->opt = opt;
	o->f = open_memstream(&o->buf, &o->len);
	if (!o->f) {
		outfile_abort(&o->file);
		free(o);
		prog_usage_error(cmd, "%s: out of memory", opt);
	}
	if (!registered)
		registered = atexit(discard_pending) == 0;
	o->next = pending;
	pending = o;
	return o;
}

FILE *cli_output_stream(const struct cli_output *o)
{
	return o->f;
}

int cli_output_close(struct cli_output *o)
{
	char err[2 * PATH_MAX] = "";
	int rc = 0;

	forget(o);
	if (ferror(o->f) || fclose(o->f) != 0) {
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "'%s': cannot be written (%s)", o->file.path,
			 strerror(ENOMEM));
	}
	o->f = NULL;
	if (rc == 0)
		rc = outfile_write(&o->file, o->buf, o->len, err, sizeof(err));
	if (rc == 0)
		rc = outfile_commit(&o->file, err, sizeof(err));
	else
		outfile_abort(&o->file);
	if (rc < 0)
		prog_error(o->cmd, "%s: %s; an earlier file there is left as it was", o->opt, err);
	free(o->buf);
	free(o);
	return rc < 0 ? -1 : 0;
}

void cli_output_discard(struct cli_output *o)
{
	if (!o)
		return;
	forget(o);
	if (o->f)
		fclose(o->f);
	outfile_abort(&o->file);
	free(o->buf);
	free(o);
}

void cli_check_output(const char *cmd, const char *opt, const char *path)
{
	char err[2048];

	if (outfile_check(path, err, sizeof(err)) < 0)
		prog_usage_error(cmd, "%s: %s", opt, err);
}

FILE *cli_open_output(const char *cmd, const char *opt, const char *path)
{
	char err[2048];
	FILE *f = outfile_fopen(path, err, sizeof(err));

	if (!f)
		prog_usage_error(cmd, "%s: %s", opt, err);
	return f;
}

int cli_open_output_fd(const char *cmd, const char *opt, const char *path)
{
	char err[2048];
	int fd = outfile_open(path, err, sizeof(err));

	if (fd < 0)
		prog_usage_error(cmd, "%s: %s", opt, err);
	return fd;
}

void cli_distinct_paths(const char *cmd, const char *opt_a, const char *a, const char *opt_b,
			const char *b)
{
	if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-") || !outfile_same(a, b))
		return;
	prog_usage_error(cmd, "%s and %s name the same file ('%s'); give each its own", opt_a,
			 opt_b, b);
}

void cli_output_dir(const char *cmd, const char *opt, const char *path)
{
	char err[2048];

	if (outfile_dir(path, err, sizeof(err)) < 0)
		prog_usage_error(cmd, "%s: %s", opt, err);
}

/* ---- SIGPIPE --------------------------------------------------------------------------------- */

static struct sigaction start_pipe; /* the disposition the command was started with */
static bool pipe_saved;

void cli_sigpipe_ignore(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGPIPE, &ign, &start_pipe) == 0)
		pipe_saved = true;
}

void cli_sigpipe_child(void)
{
	if (pipe_saved)
		sigaction(SIGPIPE, &start_pipe, NULL);
}

int cli_stdout_end(int rc)
{
	if (fflush(stdout) == 0 || errno != EPIPE || !pipe_saved ||
	    start_pipe.sa_handler != SIG_DFL)
		return rc;
	cli_sigpipe_child(); /* its files are written: now it ends as a writer to a closed pipe */
	raise(SIGPIPE);
	return rc;
}
