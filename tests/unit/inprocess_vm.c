/* core/inprocess/vm.c: the emulator's own memory comes from one reserved arena; a freed part stays
 * reserved; a fork child takes back the ranges of its parent's DONTFORK mappings and of the
 * copies it never uses (threads' stacks) and maps its own there, never outside; the lock is held
 * across a fork and the forking thread may map meanwhile (another library's prefork handler). */
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "inprocess/guard.h"
#include "harness.h"
#include "util/sys.h"

#define MB (1UL << 20)

/* Is [p, p + len) mapped (anything: a reservation too)? MAP_FIXED_NOREPLACE says. */
static bool occupied(uintptr_t p, size_t len)
{
	long r = sys_mmap((void *)p, len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (!sys_is_err(r)) {
		sys_munmap((void *)r, len);
		return false;
	}
	return r == -EEXIST;
}

TEST(mappings_come_from_the_arena_and_stay_reserved_when_freed)
{
	long a = guard_vm_map(3 * MB, 0, MAP_NORESERVE, 0);
	long b = guard_vm_map(64 * 1024, 2 * MB, 0, 0);

	ASSERT(!sys_is_err(a) && !sys_is_err(b));
	EXPECT(guard_vm_owns((void *)a) && guard_vm_owns((void *)b));
	EXPECT_EQ((uintptr_t)b % (2 * MB), 0);
	EXPECT((uintptr_t)b >= (uintptr_t)a + 3 * MB || (uintptr_t)b + 64 * 1024 <= (uintptr_t)a);
	((char *)a)[3 * MB - 1] = 1; /* writable */
	guard_vm_unmap((void *)a, 3 * MB);
	EXPECT(occupied((uintptr_t)a, 3 * MB)); /* reserved again, not given to anyone */
	EXPECT_EQ(guard_vm_map(3 * MB, 0, MAP_NORESERVE, 0), a); /* the lowest gap, reused */
	guard_vm_unmap((void *)a, 3 * MB);
	guard_vm_unmap((void *)b, 64 * 1024);
}

TEST(a_mapping_larger_than_the_arena_goes_outside_it)
{
	long p = guard_vm_map(GUARD_VM_ARENA + 2 * MB, 2 * MB, MAP_NORESERVE, 0);

	ASSERT(!sys_is_err(p));
	EXPECT(!guard_vm_owns((void *)p));
	EXPECT_EQ((uintptr_t)p % (2 * MB), 0);
	guard_vm_unmap((void *)p, GUARD_VM_ARENA + 2 * MB);
	EXPECT(!occupied((uintptr_t)p, GUARD_VM_ARENA + 2 * MB)); /* unmapped: it was no arena's */
}

TEST(a_fork_child_maps_where_its_parent_had_dontfork_and_stack_mappings)
{
	long keep = guard_vm_map(MB, 0, 0, 0);
	long gone = guard_vm_map(4 * MB, 0, MAP_NORESERVE, GUARD_VM_DONTFORK);
	long stack = guard_vm_map(2 * MB, 0, MAP_NORESERVE, GUARD_VM_PARENT_ONLY);
	int status;
	pid_t pid;

	ASSERT(!sys_is_err(keep) && !sys_is_err(gone) && !sys_is_err(stack));
	((char *)keep)[0] = 42;
	((char *)stack)[0] = 7;
	guard_vm_fork_prepare();
	/* the forking thread may map meanwhile (jemalloc's prefork handler does): no deadlock */
	guard_vm_unmap((void *)guard_vm_map(MB, 0, 0, 0), MB);
	pid = fork();
	if (pid == 0) {
		long a, b;
		int bad = 0;

		guard_vm_fork_child(true);
		bad |= ((char *)keep)[0] != 42;			 /* inherited */
		bad |= !occupied((uintptr_t)gone, 4 * MB) << 1;	 /* the hole is ours again */
		bad |= !occupied((uintptr_t)stack, 2 * MB) << 2; /* so is the stack's copy */
		a = guard_vm_map(4 * MB, 0, MAP_NORESERVE, 0);
		b = guard_vm_map(2 * MB, 0, MAP_NORESERVE, 0);
		bad |= (sys_is_err(a) || !guard_vm_owns((void *)a)) << 3;
		bad |= (sys_is_err(b) || !guard_vm_owns((void *)b)) << 4;
		/* what the parent had there is free for the child's own (the lowest gaps) */
		bad |= (a != gone && a != stack && b != gone && b != stack) << 5;
		_exit(bad);
	}
	guard_vm_fork_parent();
	ASSERT(pid > 0);
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
	EXPECT_EQ(((char *)stack)[0], 7); /* the parent's own are untouched */
	guard_vm_unmap((void *)keep, MB);
	guard_vm_unmap((void *)gone, 4 * MB);
	guard_vm_unmap((void *)stack, 2 * MB);
}

TEST_MAIN()
