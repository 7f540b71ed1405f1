/* fork() against migrations in flight.
 *
 * A live migration of a program page (core/live/migrate.c) moves the page out of the program's
 * mapping, copies it and maps the copy back. In the kernel the page meanwhile holds a migration
 * entry, which fork copies (mm/memory.c: copy_nonpresent_pte), so a child waits for the
 * migration like the parent. Here the page is simply absent for a few microseconds, and the
 * kernel gives a fork child plain anonymous memory without the userfaultfd registration (no
 * UFFD_FEATURE_EVENT_FORK): a child forked in that window reads a page of zeros where its
 * parent had data. So a fork waits until no migration is in flight, and no migration starts
 * until the fork is done: a migration that finds a fork being prepared does not start (the page
 * is busy, as a page the kernel cannot isolate).
 *
 * The gate is two counters: forks being prepared and migrations in flight. A migration
 * increments in-flight first and then checks for a fork; a fork announces itself first and then
 * waits for in-flight to drain (both sequentially consistent), so one of the two always sees the
 * other.
 */
#include "inprocess/guard.h"

#include <time.h>

#include "util/sys.h"

static uint32_t forking;  /* forks being prepared; FROZEN and above: stopped for good */
static uint32_t inflight; /* migrations between begin and end (futex word) */

#define FROZEN (1U << 30)

bool guard_migrate_begin(void)
{
	__atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&forking, __ATOMIC_SEQ_CST) == 0)
		return true;
	guard_migrate_end();
	return false;
}

void guard_migrate_end(void)
{
	if (__atomic_sub_fetch(&inflight, 1, __ATOMIC_SEQ_CST) == 0 &&
	    __atomic_load_n(&forking, __ATOMIC_SEQ_CST))
		sys_futex_wake(&inflight, 1 << 20);
}

static void wait_drained(void)
{
	uint32_t v;

	while ((v = __atomic_load_n(&inflight, __ATOMIC_SEQ_CST)) != 0) {
		struct timespec ts = {0, 1000000}; /* a migration takes microseconds */

		sys_futex_wait(&inflight, v, &ts);
	}
}

void guard_fork_prepare(void)
{
	__atomic_add_fetch(&forking, 1, __ATOMIC_SEQ_CST);
	wait_drained();
	guard_fd_fork_prepare(); /* last: held only around system calls that cannot block */
}

void guard_fork_parent(void)
{
	guard_fd_fork_parent();
	__atomic_sub_fetch(&forking, 1, __ATOMIC_SEQ_CST);
}

void guard_fork_child(bool real_fork)
{
	/* the child has no emulator threads and no migrations; the parent's other forks are not
	 * its business */
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&inflight, 0, __ATOMIC_SEQ_CST);
	guard_fd_fork_child();
	guard_vm_fork_child(real_fork);
}

void guard_migrate_freeze(void)
{
	__atomic_add_fetch(&forking, FROZEN, __ATOMIC_SEQ_CST);
	wait_drained();
}
