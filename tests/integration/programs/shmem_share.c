/* Shared memory between processes, data checked: shmem_share MODE [SIZE_MIB] [huge]
 *
 *   anon   MAP_SHARED|MAP_ANONYMOUS: the parent writes the first half, forks; the child checks
 *          it and writes the second half; the parent checks the child's half after its exit
 *   memfd  the same on a memfd (memfd_create, ftruncate, MAP_SHARED)
 *   memfd-reserved  the same, the memfd mapped MAP_FIXED into a private PROT_NONE reservation
 *          twice its size (as a JVM or a browser places its heaps)
 *   posix  a POSIX shm file (shm_open): the parent writes the first half and runs a second
 *          program (fork + exec of itself, "posix-peer NAME"), which maps the file by name,
 *          checks it and writes the second half; the parent checks it
 *   sysv   a SysV segment (shmget, shmat): as posix, the peer attaching by id
 *
 * "huge" adds MADV_HUGEPAGE on the mapping (shmem-enabled=advise). Prints one line
 * "ok MODE pages=N" or "BAD ..." (exit 1). Every page's first word is its page number plus a
 * per-half salt, every other word of it a pattern of the page; all are checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096UL

static void fill(uint64_t *p, size_t from, size_t to, uint64_t salt)
{
	for (size_t pg = from; pg < to; pg++)
		for (size_t w = 0; w < PG / 8; w += 64)
			p[pg * (PG / 8) + w] = (pg << 16) ^ salt ^ w;
}

static size_t check(const uint64_t *p, size_t from, size_t to, uint64_t salt)
{
	size_t bad = 0;

	for (size_t pg = from; pg < to; pg++)
		for (size_t w = 0; w < PG / 8; w += 64)
			bad += p[pg * (PG / 8) + w] != ((pg << 16) ^ salt ^ w);
	return bad;
}

#define SALT_PARENT 0x5a5a000000000000ULL
#define SALT_CHILD  0x3c3c000000000000ULL

/* The peer's half: check the parent's, write its own. */
static int peer(uint64_t *p, size_t pages)
{
	size_t bad = check(p, 0, pages / 2, SALT_PARENT);

	if (bad) {
		printf("BAD peer saw %zu wrong words of the parent's half\n", bad);
		return 1;
	}
	fill(p, pages / 2, pages, SALT_CHILD);
	return 0;
}

static int finish(const char *mode, uint64_t *p, size_t pages, int status)
{
	size_t bad;

	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("BAD %s: the peer failed (status %#x)\n", mode, status);
		return 1;
	}
	bad = check(p, pages / 2, pages, SALT_CHILD) + check(p, 0, pages / 2, SALT_PARENT);
	if (bad) {
		printf("BAD %s: %zu wrong words after the peer\n", mode, bad);
		return 1;
	}
	printf("ok %s pages=%zu\n", mode, pages);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "anon";
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 8, len = mib << 20, pages = len / PG;
	bool huge = argc > 3 && strcmp(argv[3], "huge") == 0;
	char name[64], arg[32];
	uint64_t *p;
	int fd = -1, status = 0, id = -1;
	pid_t pid;

	if (!strcmp(mode, "posix-peer") || !strcmp(mode, "sysv-peer")) {
		/* argv: MODE SIZE_MIB NAME|ID */
		if (argc < 4)
			return 2;
		if (mode[0] == 'p') {
			fd = shm_open(argv[3], O_RDWR, 0);
			if (fd < 0)
				return perror("shm_open"), 1;
			p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		} else {
			p = shmat(atoi(argv[3]), NULL, 0);
		}
		if (p == MAP_FAILED || p == (void *)-1)
			return perror("map"), 1;
		return peer(p, pages);
	}
	if (!strcmp(mode, "anon")) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	} else if (!strcmp(mode, "memfd") || !strcmp(mode, "memfd-reserved")) {
		void *at = NULL;
		int fixed = 0;

		fd = memfd_create("shmem_share", 0);
		if (fd < 0 || ftruncate(fd, (off_t)len))
			return perror("memfd"), 1;
		if (!strcmp(mode, "memfd-reserved")) {
			at = mmap(NULL, 2 * len, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (at == MAP_FAILED)
				return perror("reserve"), 1;
			at = (char *)at + len / 2;
			fixed = MAP_FIXED;
		}
		p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | fixed, fd, 0);
	} else if (!strcmp(mode, "posix")) {
		snprintf(name, sizeof(name), "/thpemu-shmem-share-%d", (int)getpid());
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)len))
			return perror("shm_open"), 1;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else if (!strcmp(mode, "sysv")) {
		id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
		if (id < 0)
			return perror("shmget"), 1;
		p = shmat(id, NULL, 0);
		if (p == (void *)-1)
			p = MAP_FAILED;
	} else {
		fprintf(stderr, "shmem_share: unknown mode %s\n", mode);
		return 2;
	}
	if (p == MAP_FAILED)
		return perror("mmap"), 1;
	if (huge && madvise(p, len, MADV_HUGEPAGE))
		return perror("madvise"), 1;
	fill(p, 0, pages / 2, SALT_PARENT);
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (pid == 0) {
		if (!strcmp(mode, "anon") || !strncmp(mode, "memfd", 5))
			_exit(peer(p, pages));
		snprintf(arg, sizeof(arg), "%zu", mib);
		if (!strcmp(mode, "posix")) {
			execl("/proc/self/exe", argv[0], "posix-peer", arg, name, (char *)NULL);
		} else {
			char sid[16];

			snprintf(sid, sizeof(sid), "%d", id);
			execl("/proc/self/exe", argv[0], "sysv-peer", arg, sid, (char *)NULL);
		}
		_exit(127);
	}
	waitpid(pid, &status, 0);
	status = finish(mode, p, pages, status);
	if (!strcmp(mode, "posix"))
		shm_unlink(name);
	if (id >= 0) {
		shmdt(p);
		shmctl(id, IPC_RMID, NULL);
	} else {
		munmap(p, len);
	}
	if (fd >= 0)
		close(fd);
	return status;
}
