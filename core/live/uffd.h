/* The live emulator as the rest of thpemu sees it: core/preload creates it and forwards the
 * program's memory calls to it. Every process keeps its statistics in a record
 * (core/report/stats.h) that `thpemu run` reads and merges into the report without linking this
 * emulator (core/report/run.h). How it works, and everything the uffd files share among
 * themselves, is in uffd_internal.h (core/live only).
 *
 * Errors: negative errno inside. Nothing here exits or aborts the host program.
 */
#ifndef THPEMU_UFFD_H
#define THPEMU_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "io/io.h"
#include "mm/mm.h"
#include "obs/faults.h"
#include "obs/mthp.h"
#include "report/run.h"
#include "report/stats.h"

#define UFFD_PAGE_SIZE	4096UL
#define UFFD_HPAGE_SIZE (2UL << 20)

/* ---- statistics shared with `thpemu run` ---------------------------------------------------- */

/* The record's format is core/report/stats.h; merging records and writing the run report are
 * core/report/run.h's (the process's own THPEMU_REPORT is written with it). Counting into the
 * record, and the records a process leaves in the run directory, are the emulator's. */

static inline void uffd_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}
static inline void uffd_stat_max(uint64_t *c, uint64_t v)
{
	uint64_t cur = __atomic_load_n(c, __ATOMIC_RELAXED);

	while (v > cur &&
	       !__atomic_compare_exchange_n(c, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A record DIR/PID.stats left by this pid's previous program (it exec'd) is kept as
 * DIR/PID.eN.stats in state EXECED, so that the new program's record does not erase what the
 * old one did (its counters, why the emulator stepped aside). A record in state EXITED is of
 * an earlier process that had this pid (its exit hook ran: it did not exec): it is kept as it
 * is, a process of its own. */
void uffd_stats_keep_previous(const char *dir, int pid);
/* Fill the record's identity: pid, ppid, exe (/proc/self/exe), comm (the calling thread's
 * name), cmdline (the arguments given to uffd_stats_identify_args, else /proc/self/cmdline). */
void uffd_stats_identify(struct uffd_stats *st);
/* The program's argv as the library's constructor received it (NULL-terminated, kept). */
void uffd_stats_identify_args(char *const *argv);

/* ---- the live emulator ----------------------------------------------------------------------- */

struct uffd_live;

/* Create the emulator: open the userfaultfd (syscall, else /dev/userfaultfd), create the pool,
 * apply the recipe, set up staging, scratch and stats, start handler, refill and background
 * threads. On failure err says why in one line and nothing is left behind. */
int uffd_live_create(const struct config *cfg, struct uffd_live **out, char *err, size_t errlen);
/* Stop the threads and free everything (tests; the preload library never stops its handlers,
 * so a program exiting with threads still faulting cannot hang). */
void uffd_live_destroy(struct uffd_live *lv);
/* Refresh the stats snapshot of mm's counters. */
void uffd_live_snapshot(struct uffd_live *lv);
/* Write this process's JSON report to f (a consistent copy of its statistics). */
int uffd_live_report(struct uffd_live *lv, FILE *f, const char *cmdline);
/* THPEMU_REPORT at exit: the report written whole to path (util/outfile.h: a temporary file
 * renamed into place once complete); if it cannot be, one line on stderr and in the statistics'
 * output_error, and an earlier file there is left as it was. */
void uffd_report_write_file(struct uffd_live *lv, const char *path, const char *cmdline);
/* Exit hook: final snapshot, state EXITED, per-process JSON when configured. */
void uffd_live_exit(struct uffd_live *lv, const char *cmdline);
/* In a fork child: forget everything of the parent's (the kernel unregistered the child's
 * VMAs). On a shared machine the child joins it as a process of its own and the new emulator
 * is returned; otherwise (or if that fails: one line on stderr) NULL, the child is unmanaged. */
struct uffd_live *uffd_live_forked_child(struct uffd_live *lv);
/* Step aside for good: io stopped, no migration in flight, every managed range handed back to
 * the kernel with its data, every emulator thread gone (the process is as single-threaded as
 * the program made it). The statistics stay for the exit report, which says why. */
void uffd_live_detach(struct uffd_live *lv, const char *why);
/* The machine this process is on is being stopped (`thpemu machine stop`): fn is called once,
 * on the emulator's background thread, which stepping aside joins, so fn must leave the step
 * aside to a thread of its own. */
typedef void (*uffd_machine_stop_fn)(void);
void uffd_set_machine_stop_hook(uffd_machine_stop_fn fn);
/* prctl(PR_SET_THP_DISABLE / PR_GET_THP_DISABLE, a2..a5) as the emulated kernel answers it
 * (6.x profiles: 6.18's rules, PR_THP_DISABLE_EXCEPT_ADVISED included, whether or not the host
 * knows the flag; the host is told too, for the memory the emulator does not manage). true:
 * *ret is the call's result (>= 0, or -errno); false: the call is the host's alone. */
bool uffd_live_prctl_thp(struct uffd_live *lv, int option, long a2, long a3, long a4, long a5,
			 long *ret);
/* A mapping call passed through to the kernel unmanaged (the memory census remembers the small
 * eligible ones: core/live/census.c), and an unmapping outside managed memory. */
void uffd_passthrough_mapped(struct uffd_live *lv, long addr, size_t len, int prot, int flags);
void uffd_passthrough_unmapped(struct uffd_live *lv, void *addr, size_t len);
/* The program is registering [lo, hi) with a userfaultfd of its own (UFFDIO_REGISTER): a range
 * can be registered with one userfaultfd only (fs/userfaultfd.c: userfaultfd_register, -EBUSY),
 * so every managed mapping it overlaps is handed back to the kernel first, its data intact - as
 * for a CRIU lazy restore or a QEMU postcopy, whose pages the program serves itself. */
void uffd_release_for_program(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
/* The program's mlock(2) family succeeded: mlock/mlock2 (all false), mlockall(flags)
 * (all true), munlockall (all true, flags -1). */
void uffd_live_mlocked(struct uffd_live *lv, bool all, int flags);
/* Print "thpemu: MSG NUM TAIL" once per bit and keep it as the report's note (no stdio, no
 * allocation: safe on the fault path). */
void uffd_say_once(struct uffd_live *lv, int bit, const char *msg, uint64_t num, const char *tail);
/* A consistent copy of the process's statistics (for writing a report while handlers run). */
void uffd_live_stats_copy(struct uffd_live *lv, struct uffd_stats *out);
/* Keep msg as the report's note if it has none yet (nothing printed). */
void uffd_note(struct uffd_live *lv, const char *msg);

/* Set on the emulator's own threads (and by the shim while it works): interposed calls made on
 * such a thread pass straight through. */
extern __thread int uffd_tls_passthrough;
/* Enter the calling thread in the table of thpemu's own threads, whose faults are served outside
 * the emulated kernel (core/live/README.md: thpemu's own work), and take it out: for a thread of
 * the library's that core/live does not make and join itself. Leave before the thread ends: a
 * later thread may be given its id. */
void uffd_own_thread_enter(void);
void uffd_own_thread_leave(void);

/* The process's statistics, updated in place while the emulator runs (read them with atomic
 * loads; uffd_stat_add to count). */
struct uffd_stats *uffd_live_stats(struct uffd_live *lv);
/* The configuration the emulator was created with. */
const struct config *uffd_live_config(const struct uffd_live *lv);
/* False in a process made from the emulator's by a fork of the address space (atfork handlers
 * or not: a raw clone, _Fork), true in the emulator's own process and in vfork / CLONE_VM
 * children that share it. Cheap: a load. */
bool uffd_live_own_process(const struct uffd_live *lv);

/* ---- the program's memory calls (core/preload forwards eligible calls here) -------------------
 */

/* Is this mapping one the emulator manages (private anonymous, read-write, large enough, not a
 * stack or hugetlb)? */
bool uffd_mmap_eligible(const struct uffd_live *lv, size_t len, int prot, int flags, int fd);
/* mmap for an eligible mapping (or a MAP_FIXED one over managed memory). Returns the address or
 * -errno, exactly as the kernel would. */
long uffd_mmap(struct uffd_live *lv, void *addr, size_t len, int prot, int flags, int fd, long off);
/* True if [addr, addr + len) overlaps managed memory (cheap check before the calls below). */
bool uffd_is_managed(struct uffd_live *lv, const void *addr, size_t len);
int uffd_munmap(struct uffd_live *lv, void *addr, size_t len);
int uffd_madvise(struct uffd_live *lv, void *addr, size_t len, int advice);
long uffd_mremap(struct uffd_live *lv, void *old, size_t oldlen, size_t newlen, int flags,
		 void *new_addr);
/* Shared memory (shmem.c): a MAP_SHARED anonymous mapping or a shared mapping of a tmpfs file
 * (memfd, /dev/shm), read-write, at least --min-region: managed per object. */
bool uffd_shmem_eligible(const struct uffd_live *lv, size_t len, int prot, int flags, int fd);
long uffd_shmem_mmap(struct uffd_live *lv, void *addr, size_t len, int prot, int flags, int fd,
		     long off);
/* Such a mapping, just made at p over a managed range (MAP_FIXED into a reservation): managed. */
void uffd_shmem_mapped_over(struct uffd_live *lv, long p, size_t len, int flags, int fd, long off);
/* [addr, addr + len) is being unmapped or mapped over: forget the shmem mappings there. */
void uffd_shmem_unmapped(struct uffd_live *lv, void *addr, size_t len);
/* madvise on what no private region holds: MADV_HUGEPAGE / MADV_NOHUGEPAGE set the shmem
 * mappings' advice (the kernel is called as well: false); MADV_COLLAPSE over shmem mappings is
 * the emulated kernel's alone (true, *ret its result: 0 or -errno; the host's pages stay). */
bool uffd_shmem_madvise(struct uffd_live *lv, void *addr, size_t len, int advice, long *ret);
/* MADV_REMOVE over shmem mappings: the kernel's call, then the frames of the hole go. */
long uffd_shmem_remove(struct uffd_live *lv, void *addr, size_t len);
/* fallocate(fd, mode, off, len) succeeded: a punched hole's frames go. */
void uffd_shmem_fallocated(struct uffd_live *lv, int fd, int mode, long off, long len);
/* ftruncate(fd, size) (path NULL) or truncate(path, size) succeeded: frames past size go. */
void uffd_shmem_truncated(struct uffd_live *lv, int fd, const char *path, long size);
/* Does [lo, hi) overlap a managed shmem mapping (the census, mremap)? */
bool uffd_shmem_overlaps(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
/* mremap of a range inside one shmem mapping: the mapping follows (same object, offset). */
long uffd_shmem_mremap(struct uffd_live *lv, void *old, size_t oldlen, size_t newlen, int flags,
		       void *new_addr);
/* Manage a mapping made before the emulator existed (pre-init calls from an allocator):
 * resident pages stay as they are (unaccounted), missing ones become first touches. */
int uffd_adopt(struct uffd_live *lv, void *addr, size_t len, int prot);

#endif
