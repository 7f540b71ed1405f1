/* thpemu run's device and stall-report helpers (cmd_run.c uses them; private to core/cli).
 *
 * Device: a preset is served by thpemu-fusedev on a private mount (in the run directory) that
 * thpemu run creates, watches and always removes; a directory is used as it is; "none" (and a
 * preset that cannot be mounted here) leaves the in-process device model to the library. Stall
 * reports: each managed process leaves its events in the run directory at exit (PID.stalls.json,
 * PID.stalls.txt); they are merged here into the report's "stalls" section and the 2011-format
 * text.
 */
#ifndef THPEMU_CLI_RUN_IO_H
#define THPEMU_CLI_RUN_IO_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "config/config.h"
#include "io/io.h"

struct run_device {
	const char *spec; /* --device as given, or NULL */
	/* run in the daemon's child before it execs (thpemu run: the signal mask and dispositions
	 * the program gets too), or NULL */
	void (*child_setup)(void);
	const char *parent; /* where to make the mount point (the run directory) */
	struct io_device_spec dev;
	char mnt[PATH_MAX]; /* the private mount ("" = none) */
	pid_t pid;	    /* thpemu-fusedev, or -1 */
	int status;	    /* its wait status once reaped (-1 while running) */
	char fallback[320]; /* why the in-process model stands in ("" = it does not) */
	char *stats_json;   /* fusedev's .thpemu-stats at the end of the run (malloc) */
};

/* Make the device ready before the program starts and set THPEMU_DEVICE / THPEMU_DEVICE_DIR
 * for it (a preset is mounted on PARENT/dev). A preset that cannot be mounted falls back to the
 * model (one line on stderr). */
void run_device_start(struct run_device *d, uint64_t seed, bool quiet);
/* What run_device_start gave the processes (THPEMU_DEVICE, THPEMU_DEVICE_DIR), into cfg: the
 * machine's host is configured as the processes are, without reading the environment back. 0,
 * or -EINVAL with err set (a value the processes would refuse too). */
int run_device_config(const struct run_device *d, struct config *cfg, char *err, size_t errlen);
/* The machine is made (after the device: the device's mount is in its configuration): a
 * thpemu-fusedev device joins it (`machine=` on its control file), so programs' writes to the
 * device go through the machine's page cache (fusedev/writers.c). */
void run_device_join(struct run_device *d, const char *rendezvous, bool quiet);
/* After the program: read the device's statistics, unmount, stop and reap the daemon, remove
 * the mount point. Safe to call when nothing was started, and more than once. */
void run_device_stop(struct run_device *d);
/* The report's io.device_info object (malloc'd JSON text), or NULL. */
char *run_device_json(const struct run_device *d);

struct run_stalls {
	char *json; /* merged "stalls" object (malloc), or NULL: no process wrote one */
	char *text; /* 2011-format text of every process (malloc), or NULL */
	size_t text_len;
	unsigned processes;		/* processes that wrote stall files */
	unsigned long long events;	/* per-fault stalls */
	unsigned long long wait_events; /* per-wait stall events (obs/stall.h) */
};

struct uffd_proc_list;
/* Read and remove DIR/PID.stalls.{json,txt} of every process. Each group of the merged JSON
 * gets the process that waited: "pid", and "process" (its name in procs, when listed there);
 * each process's text is headed by its pid and name when there are several. */
void run_stalls_collect(const char *dir, struct run_stalls *s, const struct uffd_proc_list *procs);
void run_stalls_free(struct run_stalls *s);

#endif
