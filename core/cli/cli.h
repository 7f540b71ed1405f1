/* The thpemu command: subcommands register themselves (CLI_COMMAND) so each lives in its own
 * file (cmd_run.c, cmd_sim.c, ...) and main.c only dispatches.
 *
 * Exit status convention for every subcommand: 0 success; 2 usage error (one line on stderr
 * naming the option and the accepted values); 1 runtime failure; `run` propagates the
 * program's own status.
 */
#ifndef THPEMU_CLI_H
#define THPEMU_CLI_H

#include <stdbool.h>
#include <stdio.h>

struct cli_command {
	const char *name;
	const char *summary; /* one line for `thpemu --help` */
	int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
};

void cli_register(const struct cli_command *c);

#define CLI_COMMAND(ident, name_, summary_, fn)                                  \
	static const struct cli_command cli_cmd_##ident = {name_, summary_, fn}; \
	__attribute__((constructor)) static void cli_reg_##ident(void)           \
	{                                                                        \
		cli_register(&cli_cmd_##ident);                                  \
	}

/* Print "thpemu CMD: MESSAGE" to stderr and exit(2). */
__attribute__((noreturn, format(printf, 2, 3))) void cli_usage_error(const char *cmd,
								     const char *fmt, ...);
/* Print "thpemu CMD: MESSAGE" to stderr (runtime errors; caller decides the status). */
__attribute__((format(printf, 2, 3))) void cli_error(const char *cmd, const char *fmt, ...);

/* Does `thpemu run` option name (e.g. "--report", "--pool") take a value? (for commands that
 * pass run options through: replay) */
bool cli_run_opt_takes_value(const char *name);

/* Directory holding the thpemu executable (to find libthpemu.so, thpemu-fusedev beside it). */
const char *cli_self_dir(void);

#endif
