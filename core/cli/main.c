/* thpemu: dispatch to the registered subcommands. */
#include "cli/cli.h"
#include "util/prog.h"

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
	fprintf(stderr, "thpemu: unknown command '%s' (accepted:", prog_esc(argv[1]));
	for (int i = 0; i < ncommands; i++)
		fprintf(stderr, " %s", commands[i]->name);
	fprintf(stderr, "); see 'thpemu --help'\n");
	return 2;
}
