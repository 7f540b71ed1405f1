/* Run-configuration specs shared by `thpemu ab` (--a/--b) and `thpemu matrix` (--policy). */
#ifndef THPEMU_CLI_SPEC_H
#define THPEMU_CLI_SPEC_H

#include <stdint.h>

#define CLI_SPEC_ITEMS 24  /* items in one spec */
#define CLI_SPEC_LABEL 100 /* characters of a label= */

struct cli_side {
	char spec[1024];
	char label[160];		    /* label=, else the policy=, else empty */
	char *argv[2 * CLI_SPEC_ITEMS + 3]; /* "--key", "value", ..., NULL */
	int argc;
};

/* Split spec into items and check each value as `thpemu run` would, or exit 2 with one line
 * "thpemu CMD: OPT: ..." naming the item and what is accepted. */
void cli_side_parse(const char *cmd, const char *opt, const char *spec, struct cli_side *s);
/* A --seed given for every run (thpemu matrix): run's --seed, checked by the same parser, or exit
 * 2 with its one-line error. */
uint64_t cli_run_seed(const char *cmd, const char *val);

#endif
