/* The mm environment of a machine's host (core/host): the process that runs what the kernel
 * runs once per machine (kswapd, kcompactd, khugepaged, the flusher). Its hooks:
 *   lock/unlock     the machine's robust process-shared mutex (a process that died holding it
 *                   is repaired after: mm_repair)
 *   wait_writeback  the machine's shared wait queues, woken by the flusher here
 *   migrate_anon    kcompactd picked a program page: its process is asked (core/machine
 *                   mailbox) and migrates it for real; no answer in time makes it busy
 *   copy_file_page  the segment's page-cache arena (core/io)
 *   writeout        core/io starts writeback of the page
 *   khugepaged_scan khugepaged's visit of a process: its agent scans and collapses (mailbox)
 *   meta_alloc      the segment: mm's struct and arrays live where every process maps them
 *   throttle        congestion_wait / wait_iff_congested: the writeback engine's queue
 * priv is a struct env_member (env.h). */
#include "env/env.h"

#include <errno.h>
#include <time.h>

#define VISIT_TAKE_NS (200 * 1000000ULL)

/* khugepaged visits process as_id (its machine slot): the process scans and collapses its own
 * ranges (only it can move a THP into its mapping). The agent must take the request within
 * 200 ms, else the process is skipped this pass, as 6.12 skips an mm whose mmap_lock it cannot
 * take (khugepaged_scan_mm_slot: mmap_read_trylock); once taken, the visit may take as long as
 * its collapse does (sync compaction), and -ENOENT says the process is gone. */
static int khugepaged_scan(void *priv, void *call, uint32_t as_id, uint64_t *addr, unsigned budget,
			   bool *done)
{
	struct env_member *e = priv;
	uint64_t reply = 0;
	int rc;

	(void)call;
	if (as_id == 0 || as_id >= MACHINE_MAX_PROCS)
		return -ENOENT;
	rc = machine_request_long(e->m, (int)as_id, MACHINE_REQ_KHUGEPAGED, *addr, budget, 0,
				  VISIT_TAKE_NS, &reply);
	if (rc == -EBUSY) {
		*done = true;
		return 0;
	}
	if (rc < 0)
		return -ENOENT;
	*addr = reply & ~1ULL;
	*done = reply & 1;
	return rc;
}

static void *meta_alloc(void *priv, size_t len)
{
	return machine_alloc(((struct env_member *)priv)->m, len);
}

static void meta_free(void *priv, void *p, size_t len)
{
	(void)priv;
	(void)p;
	(void)len; /* the segment goes as a whole */
}

/* congestion_wait / wait_iff_congested for the machine's own threads (kswapd, khugepaged's
 * compaction): the writeback engine's queue. */
static int throttle(void *priv, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
		    bool iff_congested)
{
	struct env_member *e = priv;

	(void)call;
	(void)kind;
	if (e->io) {
		io_wait_uncongested(e->io, timeout_ns, iff_congested);
	} else if (!iff_congested) {
		struct timespec ts = {(time_t)(timeout_ns / 1000000000ULL),
				      (long)(timeout_ns % 1000000000ULL)};

		nanosleep(&ts, NULL);
	}
	return 0;
}

static bool congested(void *priv, void *call)
{
	struct env_member *e = priv;

	(void)call;
	return e->io && io_congested(e->io);
}

const struct mm_env_ops env_host_ops = {
    .now = env_member_now,
    .lock = env_member_lock,
    .unlock = env_member_unlock,
    .wait_writeback = env_member_wait_writeback,
    .migrate_anon = env_member_migrate_anon,
    .copy_file_page = env_member_copy_file_page,
    .writeout = env_member_writeout,
    .meta_alloc = meta_alloc,
    .meta_free = meta_free,
    .khugepaged_scan = khugepaged_scan,
    .split_underused = env_member_split_underused,
    .throttle = throttle,
    .congested = congested,
};
