/* A program with an allocator's free of its own, which every thread's C library teardown calls
 * after the start routine returns (glibc 2.34 and later, nptl/pthread_create.c: start_thread ->
 * __libc_thread_freeres -> free of the thread's strerror and strsignal buffers, NULL or not):
 * called on one of thpemu's threads (named "thpemu-..."), each call first-touches a new page of
 * managed memory, as a real allocator's free may (a chunk header, a bin). Those faults are
 * thpemu's, never the program's.
 *
 * It touches argv[1] pages itself, waits (up to 60 s) for thpemu's dirtier (a finite --dirty
 * total, in this process: io runs there under a bare LD_PRELOAD, in the host of a run's machine
 * under `thpemu run`) to call free and to be gone, then prints one line at its last
 * instruction:
 *   own=N before=F0 after=F1 dirty_calls=D thpemu_calls=C faults=F
 * own: the pages it touched itself; F0, F1: the emulator's fault count (thpemu_get_counters)
 * after its own touches and after the wait, in which the program itself touches nothing; D:
 * free calls on the dirtier; C: on any thread of thpemu's; F: the count at its last
 * instruction. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "thpemu.h"

extern int thpemu_get_counters(struct thpemu_counters *c, size_t size) __attribute__((weak));
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

#define SPARE_PAGES 1024 /* pages free may touch (4 MiB, all 4 KiB faults: see main) */

static char *spare;	    /* managed memory free touches; NULL until main maps it */
static uint32_t spare_next; /* next page (atomic) */
static uint32_t dirty_calls, thpemu_calls;
static int dirty_tid;

void free(void *p)
{
	char *s = __atomic_load_n(&spare, __ATOMIC_ACQUIRE);
	char name[16] = "";

	if (s && prctl(PR_GET_NAME, name) == 0 && !strncmp(name, "thpemu-", 7)) {
		uint32_t i = __atomic_fetch_add(&spare_next, 1, __ATOMIC_ACQ_REL);

		if (i < SPARE_PAGES)
			__atomic_store_n(&s[(size_t)i * 4096], 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&thpemu_calls, 1, __ATOMIC_ACQ_REL);
		if (!strcmp(name, "thpemu-dirty")) {
			__atomic_store_n(&dirty_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
			__atomic_fetch_add(&dirty_calls, 1, __ATOMIC_ACQ_REL);
		}
	}
	__libc_free(p);
}

/* The rest of the allocator is glibc's, interposed with free so that the dynamic loader hands
 * the whole family to the program (elf/dl-minimal.c: __rtld_malloc_init_real): a free of the
 * program's alone was given blocks of the loader's minimal malloc. */
void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

static uint64_t faults_now(void)
{
	struct thpemu_counters c = {0};

	if (thpemu_get_counters)
		thpemu_get_counters(&c, sizeof(c));
	return c.faults;
}

int main(int argc, char **argv)
{
	size_t own = (size_t)(argc > 1 ? atoi(argv[1]) : 64);
	/* 4 KiB pages under any policy: MADV_NOHUGEPAGE (the program's own, and free's) */
	char *p =
	    mmap(NULL, own * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *s = mmap(NULL, (size_t)SPARE_PAGES * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec tick = {0, 20 * 1000 * 1000};
	uint64_t before, after;
	char line[200];
	int n, gone = 0;

	if (p == MAP_FAILED || s == MAP_FAILED)
		return 1;
	madvise(p, own * 4096, MADV_NOHUGEPAGE);
	madvise(s, (size_t)SPARE_PAGES * 4096, MADV_NOHUGEPAGE);
	__atomic_store_n(&spare, s, __ATOMIC_RELEASE); /* first: the dirtier may end any time */
	for (size_t i = 0; i < own; i++)
		p[i * 4096] = 1;
	before = faults_now();
	/* the dirtier's teardown called free, and its id is gone from the process */
	for (int k = 0; k < 3000 && !gone; k++) {
		int tid = __atomic_load_n(&dirty_tid, __ATOMIC_ACQUIRE);
		char path[64];

		nanosleep(&tick, NULL);
		if (!tid)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
		gone = access(path, F_OK) < 0 && errno == ENOENT;
	}
	nanosleep(&tick, NULL);
	after = faults_now();
	n = snprintf(line, sizeof(line),
		     "own=%zu before=%" PRIu64 " after=%" PRIu64 " dirty_calls=%u thpemu_calls=%u "
		     "dirtier_gone=%d faults=%" PRIu64 "\n",
		     own, before, after, __atomic_load_n(&dirty_calls, __ATOMIC_ACQUIRE),
		     __atomic_load_n(&thpemu_calls, __ATOMIC_ACQUIRE), gone, faults_now());
	return write(1, line, (size_t)n) == n ? 0 : 1;
}
