/* The emulator's own memory: one reserved range of the program's address space.
 *
 * The emulator maps memory of its own after the program has started: a fork child joining its
 * machine maps its tables, scratch pages, staging THPs and thread stacks in the atfork child
 * handler, and a running process maps census buffers, trace rings and threads' stacks when it
 * first needs them. Placed by the kernel, such a mapping can take an address the program has
 * every reason to think free: in a fork child, the hole its parent's MADV_DONTFORK mapping left
 * (a program that maps its buffer there again with MAP_FIXED_NOREPLACE got EEXIST); anywhere, an
 * address the program just unmapped and is about to map again. Natively nothing else maps in
 * the process. So every mapping of the emulator's own is carved from an *arena*: one range
 * reserved PROT_NONE (no memory, MAP_NORESERVE) when the emulator starts. Freed parts are
 * reserved again, never unmapped. A fork child inherits the arena with its parent's mappings,
 * except those made MADV_DONTFORK (staging, scratch ...), whose ranges the child reserves again,
 * and gives back its copies of what only the parent uses (its threads' stacks): it uses them for
 * its own, and its emulator never maps outside what its parent already occupied. A child forked
 * while another thread of the parent was changing the table keeps all that the table names as
 * used and maps above it. When the arena is full (or could not be reserved: an RLIMIT_AS too
 * small) a mapping goes wherever the kernel puts it, as before.
 *
 * Every mapping of the emulator's own is MADV_DONTDUMP: out of the program's core dumps, and
 * marked ("dd" in /proc/PID/smaps VmFlags, a VMA that never merges with the program's) for the
 * memory census (core/live/census.c), which tells it from the program's memory.
 *
 * A piece of the arena is made readable and writable in place (mprotect), not mapped again over
 * the reservation: the reservation is already DONTDUMP and NORESERVE, and mprotect keeps a VMA's
 * other flags (mm/mprotect.c: mprotect_fixup, 3.x-6.18: newflags are the old ones with the
 * protection bits replaced), so one system call instead of an mmap(MAP_FIXED) - which first
 * unmaps that part of the reservation - and a madvise(MADV_DONTDUMP): a short process makes
 * a dozen pieces at start. A reserved range was never written since it was reserved (made anew,
 * PROT_NONE, on every free): its pages are zero as a fresh mapping's. Every piece is NORESERVE
 * then, as most were asked to be: not charged to the commit (mprotect_fixup charges a private
 * writable range only without VM_NORESERVE; under overcommit_memory=2 MAP_NORESERVE is ignored,
 * mm/mmap.c: do_mmap, so the reservation has no VM_NORESERVE there and mprotect charges the piece
 * as mmap did). mprotect fails only as the mapping would (ENOMEM: the commit, RLIMIT_DATA,
 * max_map_count), so a failed piece is not mapped over (where a failed MAP_FIXED may leave a
 * hole, kernels before 6.12): the range stays reserved and free. Mapped over as before: a piece
 * asking for more (MAP_POPULATE); a piece of 2 MiB or more (mprotect leaves the page tables an
 * earlier piece there left, and a page table in a 2 MiB span keeps it from one huge mapping;
 * mmap(MAP_FIXED) frees them, mm/mmap.c: unmap_region -> free_pgtables); and every piece while
 * an mlockall is in force (the reservation's VM_LOCKED is then whatever the lock found,
 * where a new mapping's follows MCL_FUTURE, mm/mmap.c: do_mmap's mm->def_flags).
 *
 * Raw system calls only; a spin lock (no lock the program can hold); no allocation.
 */
#include "inprocess/guard.h"

#include <errno.h>
#include <sys/mman.h>

#include "util/sys.h"

#define PAGE	     4096UL
#define MAX_BLOCKS   512
#define IN_PLACE_MAX (2UL << 20) /* a piece this big or bigger is mapped over (above) */

struct block {
	uintptr_t lo, hi;
	unsigned how; /* GUARD_VM_* */
};

static uintptr_t arena_lo, arena_hi;	/* [lo, hi): reserved, or 0 when there is none */
static struct block blocks[MAX_BLOCKS]; /* in use, sorted by address */
static unsigned nblocks;
static int vm_owner; /* the thread holding the lock, 0 if none */
static unsigned vm_depth;
static unsigned vm_seq; /* odd while the lock is held */
static bool tried;	/* the reservation was attempted (once per process image) */
static bool outside;	/* a mapping was made outside the arena (kept by a fork child) */

/* Held by one thread, again and again if need be. A fork does not hold it: the handlers other
 * libraries run before the copy may fault on managed memory, and the handler that serves the fault
 * may hold a lock whose holder waits here (jemalloc's prefork faulting while an mremap of the
 * program holds the region table and maps its metadata). The child finds vm_seq odd instead when a
 * thread of the parent was inside (guard_vm_fork_child). */
static void lock(void)
{
	int me = sys_gettid(), none = 0;

	if (__atomic_load_n(&vm_owner, __ATOMIC_ACQUIRE) == me) {
		vm_depth++;
		return;
	}
	while (!__atomic_compare_exchange_n(&vm_owner, &none, me, false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED))
		none = 0;
	vm_depth = 1;
	__atomic_add_fetch(&vm_seq, 1, __ATOMIC_SEQ_CST);
}

static void unlock(void)
{
	if (--vm_depth)
		return;
	__atomic_add_fetch(&vm_seq, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vm_owner, 0, __ATOMIC_RELEASE);
}

/* PROT_NONE over [lo, hi): no memory, the range stays ours. */
static int reserve(uintptr_t lo, uintptr_t hi, int fixed)
{
	long p = sys_mmap((void *)lo, hi - lo, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);

	if (sys_is_err(p))
		return (int)p;
	sys_madvise((void *)p, hi - lo, MADV_DONTDUMP);
	return 0;
}

static void arena_init(void)
{
	size_t len = GUARD_VM_ARENA;
	long p;

	tried = true;
	/* a smaller one if the address-space limit is tight */
	for (; len >= (64UL << 20); len /= 2) {
		p = sys_mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			     0);
		if (!sys_is_err(p)) {
			sys_madvise((void *)p, len, MADV_DONTDUMP);
			arena_lo = (uintptr_t)p;
			arena_hi = arena_lo + len;
			return;
		}
	}
}

/* The lowest free [lo, lo + len) of the arena aligned to align, or 0. */
static uintptr_t find_gap(size_t len, size_t align)
{
	uintptr_t cur = arena_lo;

	for (unsigned i = 0; i <= nblocks; i++) {
		uintptr_t end = i < nblocks ? blocks[i].lo : arena_hi;
		uintptr_t at = (cur + align - 1) & ~(uintptr_t)(align - 1);

		if (at + len <= end && at + len > at)
			return at;
		if (i < nblocks)
			cur = blocks[i].hi;
	}
	return 0;
}

static bool insert(uintptr_t lo, uintptr_t hi, unsigned how)
{
	unsigned i = 0;

	if (nblocks == MAX_BLOCKS)
		return false;
	while (i < nblocks && blocks[i].lo < lo)
		i++;
	for (unsigned j = nblocks; j > i; j--)
		blocks[j] = blocks[j - 1];
	blocks[i] = (struct block){lo, hi, how};
	nblocks++;
	return true;
}

static void drop(unsigned i)
{
	for (unsigned j = i; j + 1 < nblocks; j++)
		blocks[j] = blocks[j + 1];
	nblocks--;
}

static bool locked_all; /* an mlockall in force (guard_vm_lock_all) */

void guard_vm_lock_all(bool on)
{
	__atomic_store_n(&locked_all, on, __ATOMIC_RELAXED);
}

static long map_outside(size_t len, int prot, int flags)
{
	long p = sys_mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (!sys_is_err(p)) {
		__atomic_store_n(&outside, true, __ATOMIC_RELAXED);
		sys_madvise((void *)p, len, MADV_DONTDUMP);
	}
	return p;
}

long guard_vm_map(size_t len, size_t align, int flags, unsigned how)
{
	int prot = PROT_READ | PROT_WRITE;
	uintptr_t at = 0;
	long p;

	len = (len + PAGE - 1) & ~(PAGE - 1);
	align = align < PAGE ? PAGE : align;
	lock();
	if (!tried)
		arena_init();
	if (arena_lo)
		at = find_gap(len, align);
	if (at && insert(at, at + len, how)) {
		if (!(flags & ~MAP_NORESERVE) && len < IN_PLACE_MAX &&
		    !__atomic_load_n(&locked_all, __ATOMIC_RELAXED)) {
			p = sys_mprotect((void *)at, len, prot);
			if (p == 0) {
				unlock();
				if (how & GUARD_VM_DONTFORK)
					sys_madvise((void *)at, len, MADV_DONTFORK);
				return (long)at;
			}
		} else {
			p = sys_mmap((void *)at, len, prot,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | flags, -1, 0);
			/* a failed MAP_FIXED may have unmapped the range (before 6.12): reserved
			 * again, else kept in use, so that nothing is made in place over a hole */
			if (sys_is_err(p) && reserve(at, at + len, MAP_FIXED) < 0) {
				unlock();
				return p;
			}
		}
		if (sys_is_err(p)) { /* the range is reserved (a part mprotect made writable
				      * before it failed is still unwritten) and free */
			for (unsigned i = 0; i < nblocks; i++)
				if (blocks[i].lo == at) {
					drop(i);
					break;
				}
			unlock();
			return p;
		}
		unlock();
		sys_madvise((void *)p, len, MADV_DONTDUMP);
		if (how & GUARD_VM_DONTFORK)
			sys_madvise((void *)p, len, MADV_DONTFORK);
		return p;
	}
	unlock();
	if (align > PAGE) { /* outside the arena: over-map and trim to the alignment */
		long q = map_outside(len + align, prot, flags);
		uintptr_t a;

		if (sys_is_err(q))
			return q;
		a = ((uintptr_t)q + align - 1) & ~(uintptr_t)(align - 1);
		if (a > (uintptr_t)q)
			sys_munmap((void *)q, a - (uintptr_t)q);
		if ((uintptr_t)q + len + align > a + len)
			sys_munmap((void *)(a + len), (uintptr_t)q + len + align - (a + len));
		p = (long)a;
	} else {
		p = map_outside(len, prot, flags);
	}
	if (!sys_is_err(p) && (how & GUARD_VM_DONTFORK))
		sys_madvise((void *)p, len, MADV_DONTFORK);
	return p;
}

void guard_vm_unmap(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi;

	if (!addr || !len)
		return;
	len = (len + PAGE - 1) & ~(PAGE - 1);
	hi = lo + len;
	if (!arena_lo || lo < arena_lo || hi > arena_hi) {
		sys_munmap(addr, len);
		return;
	}
	lock();
	if (reserve(lo, hi, MAP_FIXED) < 0) {
		/* still mapped with its contents (no VMA left: max_map_count): still in use, so
		 * that no piece made in place later finds it written */
		unlock();
		return;
	}
	for (unsigned i = 0; i < nblocks;) {
		struct block *b = &blocks[i];

		if (b->hi <= lo || b->lo >= hi) {
			i++;
			continue;
		}
		if (b->lo < lo && b->hi > hi) { /* the middle of a block: two blocks */
			struct block tail = {hi, b->hi, b->how};

			b->hi = lo;
			insert(tail.lo, tail.hi, tail.how);
			break;
		}
		if (b->lo < lo)
			b->hi = lo;
		else if (b->hi > hi)
			b->lo = hi;
		else {
			drop(i);
			continue;
		}
		i++;
	}
	unlock();
}

bool guard_vm_owns(const void *addr)
{
	return arena_lo && (uintptr_t)addr >= arena_lo && (uintptr_t)addr < arena_hi;
}

bool guard_vm_went_outside(void)
{
	return __atomic_load_n(&outside, __ATOMIC_RELAXED);
}

void guard_vm_fork_child(bool real_fork)
{
	/* only the forking thread is here, and it was not inside (fork is no call of ours) */
	__atomic_store_n(&vm_owner, 0, __ATOMIC_RELAXED);
	vm_depth = 0;
	if (__atomic_load_n(&vm_seq, __ATOMIC_SEQ_CST) & 1) {
		/* another thread of the parent was changing the table when the address space was
		 * copied: the child cannot tell which of its copies are in use. It keeps every
		 * address any slot names (in use, half moved or stale: a slot is only ever copied
		 * before it is overwritten) as one block from the arena's start to the highest, and
		 * maps its own above it. Outside the arena the kernel would place them where the
		 * program may mean to map: the hole of a MADV_DONTFORK mapping of the parent's,
		 * just below the arena (a child's MAP_FIXED_NOREPLACE there failed with EEXIST). */
		uintptr_t top = arena_lo;

		vm_seq = 0;
		for (unsigned i = 0; i < MAX_BLOCKS && arena_lo; i++) {
			uintptr_t hi = blocks[i].hi;

			if (hi > arena_hi)
				top =
				    arena_hi; /* torn: nothing can be trusted, all of it is used */
			else if (hi > top)
				top = hi;
		}
		nblocks = 0;
		if (top > arena_lo)
			blocks[nblocks++] = (struct block){arena_lo, top, 0};
		return;
	}
	lock();
	/* the parent's MADV_DONTFORK mappings are holes here, its threads' stacks copies no one
	 * uses: ours again, free */
	for (unsigned i = 0; i < nblocks;) {
		/* a range that could not be reserved again stays in use: a piece is made in place
		 * only over the reservation */
		if ((blocks[i].how & GUARD_VM_DONTFORK) &&
		    reserve(blocks[i].lo, blocks[i].hi, MAP_FIXED_NOREPLACE) == 0) {
			drop(i);
		} else if ((blocks[i].how & GUARD_VM_PARENT_ONLY) && real_fork &&
			   reserve(blocks[i].lo, blocks[i].hi, MAP_FIXED) == 0) {
			/* (after a raw clone glibc still lists the parent's threads: kept) */
			drop(i);
		} else {
			i++;
		}
	}
	unlock();
}
