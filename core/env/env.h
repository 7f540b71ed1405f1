/* The environments of the emulated kernel: what core/mm asks of the world it runs in (mm.h:
 * struct mm_env_ops - the clock, its lock, waiting on writeback, moving a program's page,
 * copying a page-cache page, writing one out, khugepaged's visits, ...), one implementation per
 * runtime that drives mm, all in this folder, as mimalloc keeps every OS primitive behind one
 * layer with one folder of implementations:
 *
 *   live.c    a managed program's process (core/live): real time, real waits, real copies; on
 *             a machine, requests to the processes owning pages
 *   sim.c     the simulator (core/sim): virtual time, costs from the cost table, fibers
 *   host.c    a machine's host (core/host): the member's hooks, the machine's writeback engine,
 *             khugepaged's visits of processes, mm's arrays in the shared segment
 *   device.c  thpemu-fusedev joined to a machine (fusedev/writers.c): the member's hooks
 *   member.c  what every process of a machine that owns no program pages (the host, fusedev)
 *             shares: the machine's clock and robust lock, its writeback wait queues, its
 *             page-cache arena, requests to the page owners' mailboxes
 *
 * Each file is compiled into its runtime's library (core/CMakeLists.txt); live.c and sim.c see
 * their runtime's internal header, the others only the structure below.
 */
#ifndef THPEMU_ENV_ENV_H
#define THPEMU_ENV_ENV_H

#include <stdint.h>

#include "io/io.h"
#include "io/waitq.h"
#include "machine/machine.h"
#include "mm/mm.h"

/* A process of a machine that owns no program pages: its mm environment's priv. */
struct env_member {
	struct machine *m;
	struct mm *mm;
	struct waitq *wq; /* the machine's writeback wait queues */
	uint8_t *arena;	  /* the machine's page-cache arena */
	int slot;	  /* this process's slot (0: the host) */
	struct io *io;	  /* the machine's writeback engine (the host, once it runs), or NULL */
};

/* The host's hooks (member's, and the host's own), and fusedev's (member's only). */
extern const struct mm_env_ops env_host_ops;
extern const struct mm_env_ops env_device_ops;

/* The member's hooks, for the tables above. */
uint64_t env_member_now(void *priv, void *call);
void env_member_lock(void *priv);
void env_member_unlock(void *priv);
int env_member_wait_writeback(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns);
int env_member_migrate_anon(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to);
int env_member_copy_file_page(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to);
int env_member_writeout(void *priv, void *call, uint64_t owner, uint32_t pfn);
int env_member_split_underused(void *priv, void *call, uint64_t extent_owner, uint32_t head);

#endif
