/* Shared memory collapsed after its 4 KiB faults, data checked:
 *   shmem_collapse madv|khugepaged anon|memfd SIZE_MIB [WAIT_MS]
 *
 * Maps SIZE_MIB of shared memory (MAP_SHARED|MAP_ANONYMOUS, or a memfd), writes every page but
 * the eighth of each 2 MiB (a hole), then
 *   madv        MADV_COLLAPSE on the whole mapping: prints its result ("rc=0" or "rc=-ERRNO")
 *   khugepaged  MADV_HUGEPAGE, then waits WAIT_MS (default 3000) for khugepaged
 * and a fork child reads every page back: the written ones hold what was written, the holes
 * zeros (the child's reads are its first touches). Prints "ok MODE rc=R pages=N" or "BAD ..."
 * (exit 1). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PG   4096UL
#define HOLE 8 /* page 8 of every 2 MiB stays untouched */

static int is_hole(size_t pg)
{
	return pg % 512 == HOLE;
}

static uint64_t word(size_t pg, size_t w)
{
	return (pg << 16) ^ 0x6b6b000000000000ULL ^ w;
}

static size_t check(const uint64_t *p, size_t pages)
{
	size_t bad = 0;

	for (size_t pg = 0; pg < pages; pg++)
		for (size_t w = 0; w < PG / 8; w += 32)
			bad += p[pg * (PG / 8) + w] != (is_hole(pg) ? 0 : word(pg, w));
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *kind = argc > 2 ? argv[2] : "";
	size_t mib = argc > 3 ? strtoul(argv[3], NULL, 10) : 8, len = mib << 20, pages = len / PG;
	long wait_ms = argc > 4 ? strtol(argv[4], NULL, 10) : 3000;
	int fd = -1, rc = 0, status;
	uint64_t *p;
	pid_t child;

	if ((strcmp(mode, "madv") && strcmp(mode, "khugepaged")) ||
	    (strcmp(kind, "anon") && strcmp(kind, "memfd")) || !mib) {
		fprintf(stderr,
			"usage: shmem_collapse madv|khugepaged anon|memfd SIZE_MIB [WAIT_MS]\n");
		return 2;
	}
	if (!strcmp(kind, "memfd")) {
		fd = memfd_create("shmem_collapse", 0);
		if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
			printf("BAD memfd: %s\n", strerror(errno));
			return 1;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED) {
		printf("BAD mmap: %s\n", strerror(errno));
		return 1;
	}
	for (size_t pg = 0; pg < pages; pg++)
		if (!is_hole(pg))
			for (size_t w = 0; w < PG / 8; w += 32)
				p[pg * (PG / 8) + w] = word(pg, w);
	if (!strcmp(mode, "madv")) {
		rc = madvise(p, len, MADV_COLLAPSE) ? -errno : 0;
	} else {
		struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};

		if (madvise(p, len, MADV_HUGEPAGE)) {
			printf("BAD MADV_HUGEPAGE: %s\n", strerror(errno));
			return 1;
		}
		nanosleep(&ts, NULL);
	}
	child = fork();
	if (child == 0) {
		size_t bad = check(p, pages);

		if (bad)
			printf("BAD child saw %zu wrong words\n", bad);
		_exit(bad ? 1 : 0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("BAD child\n");
		return 1;
	}
	if (check(p, pages)) {
		printf("BAD parent's read-back\n");
		return 1;
	}
	printf("ok %s rc=%d pages=%zu\n", mode, rc, pages);
	munmap(p, len);
	if (fd >= 0)
		close(fd);
	return 0;
}
