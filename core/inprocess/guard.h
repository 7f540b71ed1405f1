/* core/inprocess: what keeps the emulator out of the program's way inside the program's process.
 *
 * The preload library lives in someone else's process. Whatever it holds there - descriptors,
 * threads, a window in which a page is not where the program left it - the program must never
 * receive, see or lose because of it. This module holds those process-level rules, used by
 * core/live, core/io and core/obs and enforced at the program's side by core/preload's
 * interposers:
 *
 *  descriptors  every descriptor of the emulator lives in a *zone* at the top of
 *               RLIMIT_NOFILE, above the soft limit the program can ever reach. The program is
 *               shown a hard limit lowered by the zone's size, as valgrind does, so it can
 *               neither be given one of those numbers by open(2) nor dup2(2) onto one (the
 *               kernel refuses numbers at or above the soft limit). close, close_range and
 *               closefrom step around them (natively those numbers are not open: EBADF), and a
 *               descriptor found closed anyway (a raw close_range) fails with EBADF, never
 *               reaching the program's files. All are close-on-exec and closed in fork children.
 *  threads      every emulator thread registers, so that per-thread credential state the
 *               program changes (capset, PR_SET_KEEPCAPS, securebits, the bounding and ambient
 *               sets - none of which glibc propagates) is applied to them too before the call
 *               returns; glibc's own set*id broadcast then finds every thread in the same state
 *               and cannot fail on ours.
 *  fork         a page being migrated is briefly absent from the program's mapping (moved out,
 *               copied, mapped back). fork() must not copy the address space in that window:
 *               a fork waits for migrations in flight and none starts until it is done.
 *
 * Nothing here allocates with malloc, uses stdio or takes a lock the program can hold; the
 * descriptor checks are async-signal-safe (close(2) may be called from a signal handler).
 */
#ifndef THPEMU_GUARD_GUARD_H
#define THPEMU_GUARD_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

/* ---- descriptors ----------------------------------------------------------------------------- */

#define GUARD_FD_ZONE	  32  /* descriptors reserved at the top of RLIMIT_NOFILE */
#define GUARD_FD_MIN_HARD 256 /* with a hard limit below this, no zone is reserved */
#define GUARD_FD_TRACK	  64  /* descriptors the emulator holds at most */

/* Reserve the zone: the program's soft limit is lowered below it if it reaches into it. Call
 * once, before the emulator opens anything. 0, or -errno (no zone: descriptors stay where the
 * kernel puts them, still tracked and protected from close). */
int guard_fd_init(void);
/* Give the zone up while no descriptor is held (the emulator did not start): the program's
 * soft limit is what it was before guard_fd_init. */
void guard_fd_fini(void);
/* Take fd (just created by the emulator) into the zone and track it. Returns the descriptor to
 * use from now on (fd itself when there is no zone or the zone is full), or -errno with fd
 * closed. */
int guard_fd_own(int fd);
/* Keep the soft limit raised for the descriptors guard_fd_own moves until guard_fd_batch_end:
 * one raise and one lowering for a start-up's several descriptors instead of a pair each. For
 * a thread the program's threads do not run beside (a constructor, the atfork child handler):
 * meanwhile an open of theirs could take a number above their soft limit. A program's
 * setrlimit ends the batch first; a fork child ends its parent's. */
void guard_fd_batch_begin(void);
void guard_fd_batch_end(void);
/* Open path (read-only, close-on-exec) straight into the zone, tracked: the descriptor the
 * emulator reads a file of its own through (/proc/self/smaps, statm, maps). A descriptor held in
 * the program's range for the length of the reads could be closed by the program (bash closes a
 * pipe's write end twice: harmless natively) and the number reused for the program's next pipe,
 * whose data the emulator's next read would take. Returns the descriptor or -errno. */
int guard_fd_open(const char *path);
/* A descriptor made while the program runs (open, eventfd, epoll, pipe, ...): between
 * make_begin and make_end no close or dup2 of the program runs, so none can close it while it is
 * still in the program's range (then guard_fd_own it inside the pair). The program's close,
 * close_range and dup2/dup3 run between close_begin and close_end. Nested on one thread (a signal
 * handler) neither waits for itself; a wait is bounded (2 s). async-signal-safe. */
void guard_fd_make_begin(void);
void guard_fd_make_end(void);
void guard_fd_close_begin(void);
void guard_fd_close_end(void);
/* Is fd one of the emulator's? (async-signal-safe) */
bool guard_fd_is_ours(int fd);
/* Close one of the emulator's descriptors and forget it. */
void guard_fd_close(int fd);
/* Forget every tracked descriptor, closing it (a fork child: they are the parent's), except
 * those marked with guard_fd_keep_across_fork. */
void guard_fd_close_all(void);
/* fd (tracked) belongs to a library's static state, which a fork child inherits with it: the
 * child keeps it (libunwind's validation pipe; a pipe shared with the parent is harmless). */
void guard_fd_keep_across_fork(int fd);
/* fork: prepare holds the writers' lock so that no descriptor is half moved or half forgotten
 * in the copy (parent and child release it); the child of a raw clone or _Fork (no prepare) takes
 * the lock and the soft limit back from a parent thread that held them. */
void guard_fd_fork_prepare(void);
void guard_fd_fork_parent(void);
void guard_fd_fork_child(void);
/* The zone [lo, hi) (lo == hi when none). */
void guard_fd_zone(unsigned *lo, unsigned *hi);

/* The program's side (core/preload): close(2) / close_range(2) / closefrom(3) as they would behave
 * natively, the emulator's descriptors not being open there. Kernel convention: 0 or -errno. */
long guard_close_range(unsigned lo, unsigned hi, unsigned flags);
/* RLIMIT_NOFILE as the program sees it: prlimit64(2) for this process, translated. Other
 * resources and other processes pass through. 0 or -errno. */
int guard_prlimit(int pid, int resource, const struct rlimit *new_lim, struct rlimit *old_lim);

/* ---- threads and credentials ---------------------------------------------------------------- */

struct guard_thread {
	int tid;
	uint32_t seen;		 /* last credential request applied (atomic) */
	void (*wake)(void *arg); /* make the thread reach guard_thread_sync() soon */
	void *arg;
	void *(*fn)(void *); /* what the thread runs (guard_thread_create) */
	void *fn_arg;
	void *stack; /* its stack (guard_vm_map, DONTFORK), freed by guard_thread_join */
	size_t stack_len;
	char name[16]; /* the thread names itself with it as it starts ("" none) */
	struct guard_thread *next;
};

/* Register an emulator thread: called by its creator just before pthread_create (a thread that
 * registered itself once running could miss a request made in between, starting with
 * credentials that had not seen it), and by the thread on its way out - or by the creator if
 * pthread_create failed. */
void guard_thread_enter(struct guard_thread *t, void (*wake)(void *), void *arg);
void guard_thread_leave(struct guard_thread *t);
/* All of it: register t, create the thread with every signal blocked (the program's signals are
 * never delivered to it), name it. The thread does not count among the process's threads: the
 * process still ends when the program's last thread does (guard_thread_counted). 0 or -errno (t
 * is then unregistered). */
int guard_thread_create(pthread_t *th, struct guard_thread *t, void (*wake)(void *), void *wake_arg,
			void *(*fn)(void *), void *arg, const char *name);
/* pthread_join a thread made by guard_thread_create, and give its stack back. */
int guard_thread_join(pthread_t th, struct guard_thread *t);
/* The same if the thread is gone within ns (0: now, without waiting): 0, -EBUSY or -ETIMEDOUT
 * while it still runs (its C library teardown included). */
int guard_thread_timedjoin(pthread_t th, struct guard_thread *t, uint64_t ns);
/* Does the C library count this process's threads, so that the emulator's can be left out of the
 * count? (glibc: yes; without it a program whose last thread leaves with pthread_exit would stay
 * alive as long as the emulator's threads.) */
bool guard_thread_counted(void);
/* The new thread's first call: records its id and applies what is pending. */
void guard_thread_started(struct guard_thread *t);
/* guard_thread_sync() for the calling thread if it is a registered emulator thread (for waits
 * in code that does not know which thread runs it). */
void guard_sync_self(void);
/* Checkpoint: apply a pending credential request to the calling emulator thread. Call at every
 * point where the thread wakes up (cheap when nothing is pending). */
void guard_thread_sync(struct guard_thread *t);
/* The thread ids of the registered threads (at most max); returns how many. */
unsigned guard_thread_tids(int *out, unsigned max);
/* Is tid one of the registered threads? (A short spin on the list's lock, which is never held
 * across anything that can fault or block: callable from a fault handler.) */
bool guard_thread_is(int tid);
/* Is a credential request waiting for this thread? (for threads that sleep on a condition) */
bool guard_thread_pending(const struct guard_thread *t);

enum guard_cred_op {
	GUARD_CRED_PRCTL,  /* prctl(a[0], a[1], a[2], a[3], a[4]) */
	GUARD_CRED_CAPSET, /* capset with the header and data at cap */
};

/* The program's thread changed its own credential state successfully: do the same on every
 * emulator thread and wait until all have. Returns the number of threads that could not
 * (their error is counted, nothing else happens). */
int guard_cred_replicate(enum guard_cred_op op, const long a[5], const void *cap_hdr,
			 const void *cap_data);
/* Is this prctl option one whose state is per thread and affects later set*id calls? */
bool guard_prctl_is_cred(int option);

/* ---- the emulator's own memory ------------------------------------------------------------ */

/* Address space reserved for it (less if RLIMIT_AS is tight). */
#define GUARD_VM_ARENA (1UL << 30)

/* What a fork child makes of a mapping: none of it (MADV_DONTFORK), or a copy it never uses and
 * gives back (a thread's stack: glibc reads the thread descriptors in the parent's other
 * threads' stacks in the child, nptl/fork.h reclaim_stacks, so DONTFORK would fault there). */
#define GUARD_VM_DONTFORK    1U
#define GUARD_VM_PARENT_ONLY 2U

/* A private read-write anonymous mapping of len bytes for the emulator, aligned to align (0:
 * a page), with extra mmap flags (MAP_NORESERVE, MAP_POPULATE), MADV_DONTDUMP, and what a fork
 * child makes of it (how: 0 or GUARD_VM_*). Carved from the arena, which is reserved at the
 * first call: the emulator never takes an address the program could have had. The address, or
 * -errno. */
long guard_vm_map(size_t len, size_t align, int flags, unsigned how);
/* An mlockall is in force (true) or was undone by munlockall (false): pieces are then mapped
 * anew, not made in place (vm.c). */
void guard_vm_lock_all(bool on);
/* Give [addr, addr + len) back: reserved again if in the arena, else unmapped. */
void guard_vm_unmap(void *addr, size_t len);
/* Is addr in the arena? */
bool guard_vm_owns(const void *addr);
/* Was any mapping of this process image's emulator made outside the arena (a full arena), so
 * that the arena alone no longer tells all of the emulator's memory (the census)? */
bool guard_vm_went_outside(void);
/* In a fork child (called by guard_fork_child): the child takes the ranges of its parent's
 * DONTFORK mappings back (holes there now) for its own. A fork does not wait for the arena: a
 * child copied while another thread was changing it maps outside it from then on. */
void guard_vm_fork_child(bool real_fork);

/* ---- fork and migrations -------------------------------------------------------------------- */

/* A migration of a program page starts / ends (a handler thread). begin returns false while a
 * fork is being prepared: the migration must not start (the page is busy for now). */
bool guard_migrate_begin(void);
void guard_migrate_end(void);
/* pthread_atfork handlers: prepare waits until no migration is in flight; parent and child
 * let migrations start again. */
void guard_fork_prepare(void);
void guard_fork_parent(void);
void guard_fork_child(bool real_fork); /* false: a raw clone or _Fork (no atfork handlers ran) */
/* Stop migrations for good (the emulator steps aside): waits for those in flight. */
void guard_migrate_freeze(void);

#endif
