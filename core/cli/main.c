/* thpemu: dispatch to the registered subcommands. */
#include "cli/cli.h"
#include "util/text.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_MAX_COMMANDS 16

static const struct cli_command *commands[CLI_MAX_COMMANDS];
static int ncommands;

void cli_register(const struct cli_command *c)
{
	if (ncommands < CLI_MAX_COMMANDS)
		commands[ncommands++] = c;
}

/* "thpemu CMD: MESSAGE\n", the message escaped as a whole (cli.h). */
static void say(const char *cmd, const char *fmt, va_list ap)
{
	char msg[4096], esc[8192];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "thpemu %s: %s\n", cmd, text_escape(msg, esc, sizeof(esc)));
}

void cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap);
	va_end(ap);
	exit(2);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap);
	va_end(ap);
}

const char *cli_esc(const char *s)
{
	static char ring[8][1024];
	static unsigned next;

	return text_escape(s, ring[next++ % 8], sizeof(ring[0]));
}

const char *cli_self_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		strcpy(dir, ".");
		return dir;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

int cli_find_lib(const char *name, char *buf, size_t len, char *why, size_t whylen)
{
	static const char *const rel[] = {"", "/../lib/thpemu"};
	char tried[2][PATH_MAX];

	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(tried[i], sizeof(tried[i]), "%s%s/%s", cli_self_dir(), rel[i], name);
		if (access(tried[i], R_OK) == 0) {
			snprintf(buf, len, "%s", tried[i]);
			return 0;
		}
	}
	snprintf(why, whylen, "cannot find %s (looked for %s and %s)", name, tried[0], tried[1]);
	return -1;
}

static int cmp_cmd(const void *a, const void *b)
{
	const struct cli_command *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: thpemu COMMAND [OPTIONS]\n\n"
	       "Userspace emulator of Linux transparent huge pages: runs real programs against an\n"
	       "emulated kernel THP/compaction policy and reports, per fault, what it cost and "
	       "why.\n\n"
	       "Commands:\n");
	for (int i = 0; i < ncommands; i++)
		fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\n'thpemu COMMAND --help' describes a command. Version " THPEMU_VERSION ".\n");
}

int main(int argc, char **argv)
{
	qsort(commands, (size_t)ncommands, sizeof(commands[0]), cmp_cmd);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("thpemu " THPEMU_VERSION "\n");
		return 0;
	}
	for (int i = 0; i < ncommands; i++)
		if (strcmp(argv[1], commands[i]->name) == 0)
			return commands[i]->main(argc - 1, argv + 1);
	fprintf(stderr, "thpemu: unknown command '%s' (accepted:", cli_esc(argv[1]));
	for (int i = 0; i < ncommands; i++)
		fprintf(stderr, " %s", commands[i]->name);
	fprintf(stderr, "); see 'thpemu --help'\n");
	return 2;
}
