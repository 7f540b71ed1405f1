/* Named machines: `thpemu machine start NAME` runs a daemon that hosts one machine (host.h)
 * until `thpemu machine stop NAME`; `thpemu run --machine NAME` attaches programs to it and
 * `thpemu machine status NAME` reads its counters. Private to core/cli.
 *
 * Rendezvous: the abstract unix socket "\0thpemu-machine-UID-NAME" (UID: the daemon's real uid).
 * An abstract name is no file: a daemon killed with SIGKILL leaves nothing behind, and a new
 * daemon can take the name at once. Anyone may connect to an abstract socket, so the daemon
 * checks every connection's SO_PEERCRED and refuses any uid but its own: the machine is private
 * to the user who started it (and its segment is a memfd reachable only through
 * /proc/DAEMONPID/fd/N, which other users cannot open).
 *
 * Protocol: one request per connection. The client writes one line; the daemon answers with a
 * status line, "ok" or "error MESSAGE", then the body, and closes the connection.
 *   ping         body "pid=N"
 *   attach       body: THPEMU_MACHINE=HOSTPID:FD and the machine's configuration as THPEMU_*
 *                KEY=VALUE lines (what every process's library must agree on: policy, pool,
 *                fragment, seed, device, device dir, dirty, stall threshold). "error" while
 *                the machine is being stopped.
 *   status       human-readable status (what `thpemu machine status NAME` prints)
 *   status json  the same as one JSON object
 *   stats        struct named_stats, raw (thpemu run --machine of the same build: its report's
 *                vmstat, pool and io figures are the machine's)
 *   stop         the machine stops (its processes step aside, the report is written, the device
 *                unmounted); the answer comes when it is done: body "report=PATH" (or empty)
 */
#ifndef THPEMU_CLI_NAMED_H
#define THPEMU_CLI_NAMED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "io/io.h"
#include "machine/machine.h"
#include "mm/mm.h"

#define NAMED_NAME_MAX	 32
#define NAMED_NAME_CHARS "A-Z a-z 0-9 . _ -"

struct named_stats {
	uint32_t size; /* sizeof(struct named_stats): another build answers with another size */
	uint32_t tainted;
	int32_t pid; /* the daemon's */
	uint32_t nr_live;
	uint64_t reaped, frames_back, repairs;
	uint64_t vmstat[MM_STAT_NR];
	struct mm_counts counts;
	struct io_stats io;
	struct machine_writers writers; /* the device's real writers */
};

/* Is name a machine name ([A-Za-z0-9._-]{1,32})? */
bool named_valid(const char *name);
/* The socket address of machine name of user uid; returns its length. */
socklen_t named_sockaddr(const char *name, unsigned uid, struct sockaddr_un *sa);
/* Ask machine name (of the calling user) req; the body of an "ok" answer in *body (malloc,
 * NUL-terminated, its length in *len). 0; -ENOENT no such machine; -EPROTO "error" answer
 * (its message in err); -errno. timeout_ms bounds every wait. */
int named_request(const char *name, const char *req, int timeout_ms, char **body, size_t *len,
		  char *err, size_t errlen);

struct config;
struct uffd_stats;
/* thpemu run --machine NAME: ask the machine for its rendezvous and configuration, refuse an
 * option in given[] (the values of the options given, by config id) that configures a machine,
 * set the machine's THPEMU_* for the program and parse them into cfg. Exits 2 on bad input (no
 * such machine, an option the machine has its own of), 1 on failure. */
void named_run_attach(const char *name, const char *const given[], struct config *cfg);
/* After the run: the machine's vmstat, pool and io figures into total, its facts as a JSON
 * object into json. false (nothing changed) if the machine cannot tell (stopped meanwhile). */
bool named_run_stats(const char *name, struct uffd_stats *total, char *json, size_t len);

struct named_daemon_opts {
	const char *name;
	const char *report; /* --report FILE (for messages) */
	FILE *report_f;	    /* ... opened by the launcher, written at stop */
	bool quiet;
	const char *device_spec; /* --device as given, or NULL */
	struct io_device_spec device;
	uint64_t seed;
	const struct config *cfg; /* as parsed (the options also went to the environment) */
};
/* Start the daemon of machine o->name and return once it is ready (the caller prints and
 * exits). 0; -EEXIST (*pid: the running one's); -errno with err set. */
int named_daemon_start(const struct named_daemon_opts *o, int *pid, char *err, size_t errlen);

#endif
