/* core/inprocess/vm.c: the emulator's own memory comes from one reserved arena; a freed part stays
 * reserved; a fork child takes back the ranges of its parent's DONTFORK mappings and of the
 * copies it never uses (threads' stacks) and maps its own there, never outside; a fork never
 * waits for the arena's lock, and a child copied while another thread was changing the arena
 * leaves it alone. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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

/* The line starting with key in the smaps entry holding p, into line (len bytes): true if found. */
static bool smaps_line(uintptr_t p, const char *key, char *line, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false, found = false;

	while (f && !found && fgets(line, (int)len, f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a VMA's first line */
			in = p >= lo && p < hi;
		found = in && strncmp(line, key, strlen(key)) == 0;
	}
	if (f)
		fclose(f);
	return found;
}

/* The VmFlags line of the smaps entry holding p has "dd" (MADV_DONTDUMP): 1, 0, or -1. */
static int dontdump(uintptr_t p)
{
	char line[512];

	return smaps_line(p, "VmFlags:", line, sizeof(line)) ? strstr(line, " dd") != NULL : -1;
}

/* A piece is made in place over the reservation (mprotect): what a freed piece held is gone, and
 * the piece is the emulator's own (DONTDUMP) as a mapping made over it was. */
TEST(a_piece_made_again_is_zero_writable_and_dontdump)
{
	long a = guard_vm_map(256 * 1024, 0, 0, 0), b;

	ASSERT(!sys_is_err(a));
	EXPECT_EQ(dontdump((uintptr_t)a), 1);
	memset((void *)a, 0x5a, 256 * 1024);
	guard_vm_unmap((void *)a, 256 * 1024);
	b = guard_vm_map(128 * 1024, 0, MAP_NORESERVE, 0); /* the lowest gap: where a was */
	ASSERT_EQ(b, a);
	for (size_t i = 0; i < 128 * 1024; i += 4096)
		EXPECT_EQ(((volatile char *)b)[i + 17], 0);
	((char *)b)[128 * 1024 - 1] = 1; /* writable */
	EXPECT_EQ(dontdump((uintptr_t)b), 1);
	EXPECT_EQ(dontdump((uintptr_t)b + 128 * 1024), 1); /* the reservation above it too */
	guard_vm_unmap((void *)b, 128 * 1024);
}

/* AnonHugePages of the smaps entry holding p, in kB (-1: none found). */
static long anon_huge_kb(uintptr_t p)
{
	char line[512];
	long kb = -1;

	if (smaps_line(p, "AnonHugePages:", line, sizeof(line)))
		sscanf(line, "AnonHugePages: %ld kB", &kb);
	return kb;
}

/* A 2 MiB piece where a smaller one was written and freed is mapped anew, not made in place: a
 * freed small piece leaves its page table (its neighbours in the reservation keep it), which
 * would keep the span from one huge mapping; mmap(MAP_FIXED) frees it. Checked where the host
 * gives this process THPs at all. */
TEST(a_2m_piece_over_a_freed_small_one_can_be_one_huge_page)
{
	const size_t M2 = 2UL << 20;
	long x = guard_vm_map(M2, M2, 0, 0), a, b;
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		fclose(f);
	}
	ASSERT(!sys_is_err(x));
	guard_vm_unmap((void *)x, M2);
	a = guard_vm_map(M2 / 2, M2, 0, 0); /* the same lowest 2 MiB-aligned gap */
	ASSERT_EQ(a, x);
	memset((void *)a, 0x5a, M2 / 2);
	guard_vm_unmap((void *)a, M2 / 2);
	b = guard_vm_map(M2, M2, 0, 0);
	ASSERT_EQ(b, x);
	if (strstr(mode, "[never]") == NULL) {
		EXPECT_EQ(madvise((void *)b, M2, MADV_HUGEPAGE), 0);
		EXPECT_EQ(madvise((void *)b, M2, MADV_POPULATE_WRITE), 0);
		EXPECT_EQ(anon_huge_kb((uintptr_t)b), 2048);
	}
	for (size_t i = 0; i < M2; i += 4096)
		EXPECT_EQ(((volatile char *)b)[i], 0);
	guard_vm_unmap((void *)b, M2);
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
	ASSERT(pid > 0);
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
	EXPECT_EQ(((char *)stack)[0], 7); /* the parent's own are untouched */
	guard_vm_unmap((void *)keep, MB);
	guard_vm_unmap((void *)gone, 4 * MB);
	guard_vm_unmap((void *)stack, 2 * MB);
}

/* Another thread maps and unmaps in the arena while holding a lock that a prefork handler of the
 * forking thread needs (an mremap holding the region table while a fault of jemalloc's prefork
 * needs it): every fork completes, and every child's own mappings miss the parent's live ones. */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static bool stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&busy);
		guard_vm_unmap((void *)guard_vm_map(64 * 1024, 0, 0, 0), 64 * 1024);
		pthread_mutex_unlock(&busy);
	}
	return NULL;
}

static void prefork(void)
{
	pthread_mutex_lock(&busy);
}

static void postfork(void)
{
	pthread_mutex_unlock(&busy);
}

static void guard_child(void)
{
	guard_fork_child(true);
}

/* n fork children each map a MB of their own: how many failed to, overlapped the parent's live
 * MB (filled with 5) or saw it changed. raw: the fork ran no atfork handlers, so the child makes
 * guard_vm_fork_child's call itself, and its mapping must come from the arena. */
static int fork_and_map(long live, int n, bool raw)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			long a;

			if (raw)
				guard_vm_fork_child(true);
			a = guard_vm_map(MB, 0, 0, 0);
			_exit(sys_is_err(a) || (raw && !guard_vm_owns((void *)a)) ||
			      (a < live + (long)MB && a + (long)MB > live) ||
			      ((char *)live)[MB - 1] != 5);
		}
		if (pid < 0)
			return n;
		waitpid(pid, &status, 0);
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	return bad;
}

TEST(a_fork_while_another_thread_maps_neither_waits_for_it_nor_overlaps_it)
{
	long live = guard_vm_map(MB, 0, 0, 0);
	pthread_t t;
	int bad;

	ASSERT(!sys_is_err(live));
	memset((void *)live, 5, MB);
	/* the preload's handlers are registered after those of the program's malloc: theirs run
	 * first in the prepare phase */
	ASSERT_EQ(pthread_atfork(prefork, postfork, postfork), 0);
	ASSERT_EQ(pthread_atfork(guard_fork_prepare, guard_fork_parent, guard_child), 0);
	ASSERT_EQ(pthread_create(&t, NULL, churn, NULL), 0);
	bad = fork_and_map(live, 200, false);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(bad, 0);
	guard_vm_unmap((void *)live, MB);
}

/* A fork while another thread is inside guard_vm_map or guard_vm_unmap (nothing holds it off):
 * the child's own mappings still come from the arena, never from where the kernel would put
 * them, and miss the parent's live one. */
static void *churn_free(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		guard_vm_unmap((void *)guard_vm_map(64 * 1024, 0, 0, 0), 64 * 1024);
	return NULL;
}

TEST(a_child_forked_while_the_table_changes_still_maps_in_the_arena)
{
	long live = guard_vm_map(MB, 0, 0, 0);
	pthread_t t;
	int bad;

	ASSERT(!sys_is_err(live));
	ASSERT(guard_vm_owns((void *)live));
	memset((void *)live, 5, MB);
	ASSERT_EQ(pthread_create(&t, NULL, churn_free, NULL), 0);
	bad = fork_and_map(live, 300, true);
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(bad, 0);
	guard_vm_unmap((void *)live, MB);
}

TEST_MAIN()
