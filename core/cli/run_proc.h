/* thpemu run's program as a process: its process group and terminal, the signals sent to thpemu
 * run, job control, and the way thpemu run ends (run_proc.c says why it is done this way).
 * Private to core/cli.
 */
#ifndef THPEMU_CLI_RUN_PROC_H
#define THPEMU_CLI_RUN_PROC_H

#include <stdbool.h>
#include <sys/types.h>

struct run_proc {
	pid_t pid;	   /* the program, once started (-1 before) */
	pid_t pgrp;	   /* its process group */
	pid_t caller_pgrp; /* the process group thpemu run was started in */
	bool own_group;	   /* the program leads a group of its own (else it is in the caller's) */
	bool foreground;   /* the caller's group was its terminal's foreground group */
	int tty;	   /* the controlling terminal (/dev/tty), or -1 */
	pid_t keeper;	   /* SIGKILLs the program if thpemu run dies first (run_proc.c), or -1 */
	/* the program as it ended (read from the zombie before it was reaped): its last image's
	 * name and ids, so that a last image that left no statistics can be told */
	bool ended_seen;
	char ended_comm[16];
	unsigned ended_uid, ended_euid;
};

/* Before any thread exists: every relayed signal is blocked (run_proc_wait takes them), SIGCHLD's
 * disposition is the default; the mask and dispositions thpemu run was started with are kept for
 * the program. Decides the program's process group (and leaves the caller's group when the program
 * is to stay in it). */
void run_proc_init(struct run_proc *p);
/* In a fork child about to exec (the program, a helper): the signal mask and dispositions thpemu
 * run was started with. */
void run_proc_child_signals(void);
/* Start argv (PATH searched as execvp searches it) in its process group, with the terminal if it
 * is to have it; before_exec(arg) runs in the child first. 0, or -errno if fork failed. */
int run_proc_start(struct run_proc *p, char *const argv[], void (*before_exec)(void *), void *arg);
/* Relay the signals thpemu run receives and mirror the program's stops until it ends; its wait
 * status (-1 if it could not be waited for). */
int run_proc_wait(struct run_proc *p);
/* The terminal back to thpemu run's group if the program's group still has it (before thpemu run
 * prints its summary). */
void run_proc_end(struct run_proc *p);
/* Die of the signal that killed the program (its wait status), without a core dump; returns only
 * if that signal cannot end thpemu run. */
void run_proc_die_like(int wait_status);

#endif
