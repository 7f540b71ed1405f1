/* The live emulator's io: the writeback engine and the dirtier (core/io) started in the
 * program's process, and the mm hooks that reach them (writeout, copy_file_page; the
 * wait_writeback hook sleeps on lv->wbq, which the engine wakes).
 *
 * The emulated pool is per process, so io runs where the program's faults are: in the process
 * `thpemu run` started (THPEMU_IO_PID), not in the programs it execs (each has its own pool and
 * would otherwise start another writer). Without `thpemu run`, the first process that loads the
 * library claims io and its exec'd children inherit the claim.
 *
 * A device that cannot be used (no mount, a directory that cannot be written) degrades to the
 * in-process device model, and io.note in the report says why; nothing here makes the program
 * run unmanaged.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IO_EXIT_DRAIN_NS 1000000000ULL /* at exit, wait this long for writes in flight */

/* An io thread (the flusher, the dirtier) starts: thpemu's own, its faults served outside the
 * emulated kernel, for as long as it runs, its C library teardown included. */
static void io_thread_init(void *arg)
{
	uffd_tls_passthrough = 1; /* io threads' own mappings are never managed */
	uffd_own_thread_enter();
}

/* ... and is gone (the dirtier when a finite --dirty total is written, long before the process;
 * joined by the flusher): its id leaves the table, which would otherwise serve every fault of a
 * later thread given the same id (pid_max wraps) outside the emulated kernel. */
static void io_thread_gone(void *arg, int tid)
{
	uffd_own_thread_gone(tid);
}

static int copy_file(void *arg, uint64_t owner, uint32_t from, uint32_t to)
{
	return io_copy_file_page(arg, owner, from, to);
}

/* Is io this process's job? Claim it for this process if nobody has. */
static bool io_is_ours(struct uffd_live *lv)
{
	char pid[24];

	if (lv->cfg.io_pid)
		return lv->cfg.io_pid == (uint64_t)getpid();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("THPEMU_IO_PID", pid, 1); /* constructor time: no other thread reads environ */
	return true;
}

void uffd_io_start(struct uffd_live *lv)
{
	struct io_env env = {
	    .mm = lv->mm,
	    .wq = lv->wq,
	    .stats = &lv->stats->io,
	    .thread_init = io_thread_init,
	    .thread_gone = io_thread_gone,
	    .call = &lv->workers[lv->nworkers], /* io's mm calls never migrate program pages */
	};
	struct io_config ic;
	char err[320] = "", why[640] = "";
	int rc;

	if ((!lv->cfg.device_spec[0] && !lv->cfg.dirty_spec[0]) || lv->on_machine ||
	    !io_is_ours(lv))
		return; /* on a shared machine, io is the host's (core/host/host.c) */
	config_io(&lv->cfg, &ic);
	if (ic.dev.kind == IO_DEV_PRESET && !ic.dir[0])
		snprintf(why, sizeof(why),
			 "no mount for device %s: the in-process device model "
			 "stands in",
			 ic.dev.model.name);
	rc = io_create(&ic, &env, &lv->io, err, sizeof(err));
	if (rc < 0 && ic.dir[0]) { /* degrade to the model */
		snprintf(why, sizeof(why),
			 "device %.200s unusable (%.200s): the in-process device model "
			 "stands in",
			 ic.dir, err);
		ic.dir[0] = '\0';
		rc = io_create(&ic, &env, &lv->io, err, sizeof(err));
	}
	if (rc == 0 && why[0]) /* before the io threads can write notes of their own */
		snprintf(lv->stats->io.note, sizeof(lv->stats->io.note), "%.*s",
			 (int)sizeof(lv->stats->io.note) - 1, why); /* the note keeps its head */
	if (rc == 0)
		rc = io_start(lv->io);
	if (rc < 0) {
		snprintf(why, sizeof(why), "io could not start (%s): no dirtier, no writeback",
			 err[0] ? err : strerror(-rc));
		snprintf(lv->stats->io.note, sizeof(lv->stats->io.note), "%.*s",
			 (int)sizeof(lv->stats->io.note) - 1, why); /* the note keeps its head */
		io_destroy(lv->io);
		lv->io = NULL;
	} else {
		uffd_live_set_copy_file(lv, copy_file, lv->io);
	}
	if (why[0] && lv->cfg.log != CONFIG_LOG_QUIET)
		fprintf(stderr, "thpemu: %s\n", why);
}

void uffd_io_stop(struct uffd_live *lv)
{
	if (lv->io && !lv->child)
		io_stop(lv->io, IO_EXIT_DRAIN_NS);
}
