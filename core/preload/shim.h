/* Internal interface between the interposers (shim.c) and the public API (api.c). */
#ifndef THPEMU_SHIM_H
#define THPEMU_SHIM_H

#include "inprocess/guard.h"
#include "live/uffd.h"

/* The process's emulator, or NULL when it runs unmanaged (or is a fork child). */
struct uffd_live *shim_live(void);
/* The emulator steps aside for this process (one line on stderr saying why, kept in the report):
 * its memory goes back to the kernel intact, its threads end, every later call passes through. */
void shim_step_aside(const char *why);
/* The program's thread changed its own credential state: the emulator's threads follow. */
void shim_cred_replicate(enum guard_cred_op op, const long a[5], const void *hdr, const void *data);
/* prctl(PR_SET_THP_DISABLE or PR_GET_THP_DISABLE): true when the emulated kernel answered it
 * (*ret: the result or -errno), false when the call is the host's alone (no emulator). */
bool shim_prctl_thp(int option, long a2, long a3, long a4, long a5, long *ret);
/* Is the program's malloc glibc's (no allocator preloaded, none linked in)? */
bool shim_malloc_is_glibc(void);
/* At start: will a dlopen(RTLD_DEEPBIND) be made without the flag (a preloaded allocator)? */
void shim_deepbind_init(void);
/* ... one was (counted, said once in the report). */
void shim_deepbind_loaded(const char *file);
/* The program registers the range of *reg (a struct uffdio_register) with its own userfaultfd. */
void shim_uffd_register(const void *reg);
/* The program locked (or, all with flags -1, unlocked) memory (uffd_live_mlocked). */
void shim_mlocked(bool all, int flags);

#endif
