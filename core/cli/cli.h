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

#include "util/prog.h" /* prog_error, prog_usage_error, prog_esc: every command's */

struct cli_command {
	const char *name;
	const char *summary;		    /* one line for `thpemu --help` */
	int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
};

void cli_register(const struct cli_command *c);

#define CLI_COMMAND(ident, name_, summary_, fn)                                                    \
	static const struct cli_command cli_cmd_##ident = {name_, summary_, fn};                   \
	__attribute__((constructor)) static void cli_reg_##ident(void)                             \
	{                                                                                          \
		cli_register(&cli_cmd_##ident);                                                    \
	}

/* ---- output paths (outputs.c) ----------------------------------------------------------------
 * Every output path is checked (or opened) before any work starts; one that cannot be written is
 * bad input: "thpemu CMD: OPT: 'PATH': why" and exit 2. */

/* Check path as an output file (util/outfile.h) without creating it, or exit 2. */
void cli_check_output(const char *cmd, const char *opt, const char *path);
/* Open path as an output file (truncated, close-on-exec), or exit 2. */
FILE *cli_open_output(const char *cmd, const char *opt, const char *path);
int cli_open_output_fd(const char *cmd, const char *opt, const char *path);
/* An output written whole: the temporary file (util/outfile.h) is created now, or exit 2; the
 * command writes the content to cli_output_stream (memory); cli_output_close writes it, fsyncs
 * and renames it over the destination: 0, or -1 after one line "thpemu CMD: OPT: 'PATH': cannot
 * be written (why); ..." with the destination left as it was (the caller exits 1).
 * cli_output_discard gives up (nothing written); outputs neither closed nor discarded when the
 * command exits are discarded. */
struct cli_output;
struct cli_output *cli_output_open(const char *cmd, const char *opt, const char *path);
FILE *cli_output_stream(const struct cli_output *o);
int cli_output_close(struct cli_output *o);
void cli_output_discard(struct cli_output *o);
/* SIGPIPE while a command has files to write: ignored, so that a reader of its stdout or stderr
 * that goes away (`| head`) cannot cost them (writes to the pipe fail with EPIPE instead).
 * cli_sigpipe_child gives a fork child the disposition the command was started with, before it
 * execs; cli_stdout_end(rc), once the files are written, flushes stdout and, if its reader went
 * away and SIGPIPE was at its default, ends the command by SIGPIPE as it would have ended
 * (else returns rc). */
void cli_sigpipe_ignore(void);
void cli_sigpipe_child(void);
int cli_stdout_end(int rc);
/* Exit 2 if two outputs (or an output and an input) name the same file. NULL paths and "-"
 * are skipped. */
void cli_distinct_paths(const char *cmd, const char *opt_a, const char *a, const char *opt_b,
			const char *b);
/* A directory for outputs (ab --keep): created 0700, or an existing one of ours, or exit 2. */
void cli_output_dir(const char *cmd, const char *opt, const char *path);

/* ---- checks before work (checks.c) ---------------------------------------------------------- */

/* Can the program be executed (a path, or a name found in PATH as execvp would)? 0 or -errno
 * (-ENOENT not found, -EACCES not executable). */
int cli_find_program(const char *name);
/* The same, with the file execvp would run in out. */
int cli_resolve_program(const char *name, char *out, size_t len);
/* Is the program (its file in path) a static binary, which LD_PRELOAD cannot reach (an ELF
 * without PT_INTERP; a script is judged by its interpreter)? 1 static, 0 dynamic, -errno if it
 * cannot be told (not found, not ELF). */
int cli_program_static(const char *name, char *path, size_t len);
/* May this process open a userfaultfd that takes kernel-mode faults as well, as the preload
 * library does (userfaultfd(2), else /dev/userfaultfd)? 0, or -EPERM with why (one line). */
int cli_userfaultfd_access(char *why, size_t len);
/* Is a key given twice in the comma list "K=V,K2=V2,FLAG,..."? 1 with the key in key, else 0. */
int cli_repeated_key(const char *list, char *key, size_t len);

struct config;
/* The checks `thpemu run` makes before anything starts, beyond each option's own parsing: no key
 * given twice in --policy, --device, --dirty; a --device directory that exists; a --fragment
 * recipe applied to a pool of the --pool size.
 * side NULL names the options as run's (--fragment), else as in an ab spec (--a fragment=).
 * 0, or -EINVAL with err set. */
int cli_run_check_config(const struct config *cfg, const char *side, char *err, size_t errlen);
/* A policy plugin (PATH[?ARGS]) loads: dlopen, thpemu_policy, abi_version, init. 0, or -EINVAL
 * with "NAME: why" in err. */
int cli_check_plugin(const char *name, const char *spec, char *err, size_t errlen);

/* Does `thpemu run` option name (e.g. "--report", "--pool") take a value? (for commands that
 * pass run options through: replay) */
bool cli_run_opt_takes_value(const char *name);

#endif
