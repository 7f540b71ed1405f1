/* The mm environment hooks every process of a machine that owns no program pages shares (the
 * host, fusedev): see env.h. priv is a struct env_member. */
#include "env/env.h"

#include <errno.h>
#include <string.h>

#include "io/rqshare.h"
#include "util/clock.h"

#define REQUEST_TIMEOUT_NS  (200 * 1000000ULL)	/* a page owner that does not answer: busy */
#define WRITEOUT_TIMEOUT_NS (1000 * 1000000ULL) /* the host's writeout, asked by fusedev */

uint64_t env_member_now(void *priv, void *call)
{
	(void)priv;
	(void)call;
	return clock_now_ns();
}

void env_member_lock(void *priv)
{
	machine_lock(((struct env_member *)priv)->m);
}

void env_member_unlock(void *priv)
{
	machine_unlock(((struct env_member *)priv)->m);
}

int env_member_wait_writeback(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	struct env_member *e = priv;

	(void)call;
	return io_wait_writeback(e->wq, e->mm, pfn, timeout_ns);
}

/* Compaction here picked a program page: its process is asked (its mailbox) and migrates it for
 * real; no answer in time makes it busy. */
int env_member_migrate_anon(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct env_member *e = priv;
	unsigned slot = MACHINE_OWNER_SLOT(owner);

	(void)call;
	if (!slot || (int)slot == e->slot)
		return -EBUSY; /* none of ours: this process has no program pages */
	return machine_request(e->m, (int)slot, MACHINE_REQ_MIGRATE, owner, from, to,
			       REQUEST_TIMEOUT_NS);
}

/* The THP shrinker run here: the THP's process judges and splits it (its mailbox). */
int env_member_split_underused(void *priv, void *call, uint64_t extent_owner, uint32_t head)
{
	struct env_member *e = priv;
	unsigned slot = MACHINE_OWNER_SLOT(extent_owner);
	int rc;

	(void)call;
	if (!slot)
		return -ENOENT; /* no program pages here */
	rc = machine_request(e->m, (int)slot, MACHINE_REQ_SPLIT, extent_owner, head, 0,
			     REQUEST_TIMEOUT_NS);
	return rc == -EBUSY ? -EAGAIN : rc;
}

/* A page-cache page's data lives in the machine's arena: copied there (by the writeback engine,
 * which counts it, where this process runs it). */
int env_member_copy_file_page(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	struct env_member *e = priv;

	(void)call;
	if (e->io)
		return io_copy_file_page(e->io, owner, from, to);
	if (e->arena && e->slot)
		memcpy(e->arena + (uint64_t)to * IO_PAGE_SIZE,
		       e->arena + (uint64_t)from * IO_PAGE_SIZE, IO_PAGE_SIZE);
	return 0;
}

/* Writing a dirty page out is the writeback engine's: here, or the host's (slot 0's mailbox). */
int env_member_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn)
{
	struct env_member *e = priv;

	(void)call;
	if (e->io) /* the host's own threads (kswapd, the dirtier) sleep for a request here */
		return io_writeout_wait(e->io, owner, pfn, RQS_WRITEOUT, NULL);
	if (!e->slot)
		return -EBUSY; /* the host without a writeback engine */
	return machine_request(e->m, 0, MACHINE_REQ_WRITEOUT, owner, pfn, 0, WRITEOUT_TIMEOUT_NS);
}
