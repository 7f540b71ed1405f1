/* Named machines: `thpemu machine start NAME` runs a daemon that hosts one machine (host.h)
 * until `thpemu machine stop NAME`; `thpemu run --machine NAME` attaches programs to it and
 * `thpemu machine status NAME` reads its counters. Private to core/cli.
 *
 * Rendezvous: the abstract unix socket "\0thpemu-machine-UID-NAME" (UID: the daemon's real uid).
 * An abstract name is no file: a daemon killed with SIGKILL leaves nothing behind, and a new
 * daemon can take the name at once. Anyone may connect to an abstract socket, and anyone may bind
 * any free abstract name (there are no permissions on the abstract namespace: net/unix/af_unix.c
 * checks none for it), so both ends check each other with SO_PEERCRED:
 *  - the daemon refuses every connection whose uid is not its own: the machine is private to the
 *    user who started it (and its segment is a memfd reachable only through
 *    /proc/DAEMONPID/fd/N, which other users cannot open);
 *  - a client (every request: run --machine, machine status, stop, start's ping) trusts only a
 *    listener of its own uid: one of another uid has taken the name before the daemon (a
 *    squatter, who could otherwise hand out a policy plugin= to load, or a report directory),
 *    and is refused before anything is sent (-EPERM, naming its uid and pid). The attach answer
 *    is checked too: only the keys below, each value through the config parser, and a
 *    rendezvous whose HOSTPID is the verified daemon's pid.
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

#include "config/config.h"
#include "io/io.h"
#include "machine/machine.h"
#include "mm/mm.h"

#define NAMED_NAME_MAX	 32
#define NAMED_NAME_CHARS "A-Z a-z 0-9 . _ -, not starting with -"

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

/* What attach's answer may set, besides THPEMU_MACHINE (the daemon sends exactly these). */
extern const enum config_id named_attach_keys[];
extern const size_t named_nattach_keys;

/* Is name a machine name ([A-Za-z0-9._-]{1,32}, not starting with '-')? */
bool named_valid(const char *name);
/* The socket address of machine name of user uid; returns its length. */
socklen_t named_sockaddr(const char *name, unsigned uid, struct sockaddr_un *sa);
/* Ask machine name (of the calling user) req; the body of an "ok" answer in *body (malloc,
 * NUL-terminated, its length in *len), the daemon's pid (SO_PEERCRED) in *pid if pid is not
 * NULL. 0; -ENOENT no such machine; -EPERM the name is held by a process of another user
 * (nothing was sent; err names its uid and pid, *pid is its pid); -EPROTO "error" answer (its
 * message in err); -errno. timeout_ms bounds every wait. */
int named_request(const char *name, const char *req, int timeout_ms, char **body, size_t *len,
		  int *pid, char *err, size_t errlen);

struct config;
struct uffd_stats;
/* thpemu run --machine NAME: ask the machine for its rendezvous and configuration, refuse an
 * option in given[] (the values of the options given, by config id) that configures a machine,
 * set the machine's THPEMU_* for the program and parse them into cfg. Exits 2 on bad input (no
 * such machine, a name held by another user, an option the machine has its own of), 1 on
 * failure (an answer that is not what a daemon of this build sends). */
void named_run_attach(const char *name, const char *const given[], struct config *cfg);
/* After the run: the machine's vmstat, pool and io figures into total, its facts as a JSON
 * object into *json (malloc'd, one line; NULL if memory ran out). false (nothing changed but
 * *json, which says so) if the machine cannot tell (stopped meanwhile). */
bool named_run_stats(const char *name, struct uffd_stats *total, char **json);

struct named_daemon_opts {
	const char *name;
	const char *report; /* --report FILE (for messages) */
	FILE *report_f;	    /* ... opened by the launcher, written at stop */
	bool quiet;
	const char *device_spec; /* --device as given, or NULL */
	struct io_device_spec device;
	uint64_t seed;
	/* the machine's configuration: the options as parsed (they also went to the environment,
	 * for the processes) and the THPEMU_* variables inherited */
	const struct config *cfg;
};
/* Start the daemon of machine o->name and return once it is ready (the caller prints and
 * exits). 0; -EEXIST (*pid: the running one's, -1 when what holds the name does not answer as
 * a daemon); -EPERM the name is held by another user's process (err says whose); -errno with
 * err set. */
int named_daemon_start(const struct named_daemon_opts *o, int *pid, char *err, size_t errlen);

#endif
