/* Shared memory after its first touch, data checked: shmem_hole MODE
 *
 *   punch  a memfd of 8 MiB, every page written; a fork child punches its second 2 MiB with
 *          fallocate(FALLOC_FL_PUNCH_HOLE) through its own descriptor; the parent finds zeros
 *          there and writes them again; MADV_REMOVE of 64 KiB inside the third 2 MiB (zeros,
 *          written again, the rest of those 2 MiB intact); ftruncate to 6 MiB; the 6 MiB left
 *          checked
 *   remap  a memfd of 8 MiB mapped 4 MiB, its first 2 MiB written; mremap to 8 MiB (may move),
 *          the second 2 MiB written at the new place; a move to a fixed 2 MiB-aligned address;
 *          a fork child checks the first 4 MiB there and writes the rest; the parent checks it
 *          all; a shrink in place to 6 MiB, checked
 *   anon   MAP_SHARED|MAP_ANONYMOUS of 4 MiB written, MADV_REMOVE of its first 2 MiB: zeros,
 *          written again, checked
 *
 * Prints one line "ok MODE" or "BAD ..." (exit 1). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG  4096UL
#define MIB (1UL << 20)

static void fill(char *p, size_t from, size_t to, uint64_t salt)
{
	for (size_t pg = from; pg < to; pg++)
		for (size_t w = 0; w < PG / 8; w += 64)
			((uint64_t *)(p + pg * PG))[w] = (pg << 16) ^ salt ^ w;
}

static size_t check(const char *p, size_t from, size_t to, uint64_t salt)
{
	size_t bad = 0;

	for (size_t pg = from; pg < to; pg++)
		for (size_t w = 0; w < PG / 8; w += 64)
			bad += ((const uint64_t *)(p + pg * PG))[w] != ((pg << 16) ^ salt ^ w);
	return bad;
}

static size_t nonzero(const char *p, size_t from, size_t to)
{
	size_t bad = 0;

	for (size_t i = from * PG; i < to * PG; i += 8)
		bad += *(const uint64_t *)(p + i) != 0;
	return bad;
}

#define S1 0x5a5a000000000000ULL
#define S2 0x3c3c000000000000ULL

static int bad(const char *what, size_t n)
{
	printf("BAD %s: %zu wrong words\n", what, n);
	return 1;
}

#define CHECK(what, expr)                                                                          \
	do {                                                                                       \
		size_t n_ = (expr);                                                                \
		if (n_)                                                                            \
			return bad(what, n_);                                                      \
	} while (0)

static int child_done(pid_t pid)
{
	int st;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A memfd of 8 MiB, its first maplen bytes mapped shared (NULL on failure). */
static char *memfd_map(size_t maplen, int *fd)
{
	char *p;

	*fd = memfd_create("shmem_hole", 0);
	if (*fd < 0 || ftruncate(*fd, 8 * MIB) != 0)
		return NULL;
	p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int punch(void)
{
	int fd;
	char *p = memfd_map(8 * MIB, &fd);
	pid_t pid;

	if (!p)
		return bad("memfd", 1);
	fill(p, 0, 2048, S1);
	pid = fork();
	if (pid == 0)
		_exit(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * MIB, 2 * MIB)
			  ? 1
			  : 0);
	if (pid < 0 || !child_done(pid))
		return bad("the child's fallocate", 1);
	CHECK("the punched 2 MiB read zero", nonzero(p, 512, 1024));
	fill(p, 512, 1024, S2);
	if (madvise(p + 5 * MIB, 64 << 10, MADV_REMOVE) != 0)
		return bad("MADV_REMOVE", 1);
	CHECK("the removed 64 KiB read zero", nonzero(p, 1280, 1296));
	fill(p, 1280, 1296, S2);
	if (ftruncate(fd, 6 * MIB) != 0)
		return bad("ftruncate", 1);
	CHECK("first 2 MiB", check(p, 0, 512, S1));
	CHECK("second 2 MiB, written again", check(p, 512, 1024, S2));
	CHECK("third 2 MiB before the hole", check(p, 1024, 1280, S1));
	CHECK("the hole, written again", check(p, 1280, 1296, S2));
	CHECK("third 2 MiB after the hole", check(p, 1296, 1536, S1));
	munmap(p, 8 * MIB);
	close(fd);
	printf("ok punch\n");
	return 0;
}

static int remap(void)
{
	int fd;
	char *p = memfd_map(4 * MIB, &fd), *q, *r, *res;
	pid_t pid;

	if (!p)
		return bad("memfd", 1);
	fill(p, 0, 512, S1);
	q = mremap(p, 4 * MIB, 8 * MIB, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return bad("mremap grow", 1);
	fill(q, 512, 1024, S1);
	CHECK("first 2 MiB after the growth", check(q, 0, 512, S1));
	/* a fixed, 2 MiB-aligned destination inside a reservation */
	res = mmap(NULL, 10 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return bad("reserve", 1);
	r = (char *)(((uintptr_t)res + 2 * MIB - 1) & ~(2 * MIB - 1));
	if (mremap(q, 8 * MIB, 8 * MIB, MREMAP_MAYMOVE | MREMAP_FIXED, r) != r)
		return bad("mremap fixed", 1);
	CHECK("first 4 MiB after the move", check(r, 0, 1024, S1));
	pid = fork();
	if (pid == 0) {
		if (check(r, 0, 1024, S1))
			_exit(2);
		fill(r, 1024, 2048, S2);
		_exit(0);
	}
	if (pid < 0 || !child_done(pid))
		return bad("the child's check of the first 4 MiB", 1);
	CHECK("the child's 4 MiB", check(r, 1024, 2048, S2));
	if (mremap(r, 8 * MIB, 6 * MIB, 0) != r)
		return bad("mremap shrink", 1);
	CHECK("after the shrink", check(r, 0, 1024, S1) + check(r, 1024, 1536, S2));
	munmap(r, 6 * MIB);
	close(fd);
	printf("ok remap\n");
	return 0;
}

static int anon(void)
{
	char *p = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return bad("mmap", 1);
	fill(p, 0, 1024, S1);
	if (madvise(p, 2 * MIB, MADV_REMOVE) != 0)
		return bad("MADV_REMOVE", 1);
	CHECK("the removed 2 MiB read zero", nonzero(p, 0, 512));
	fill(p, 0, 512, S2);
	CHECK("written again", check(p, 0, 512, S2));
	CHECK("the rest", check(p, 512, 1024, S1));
	munmap(p, 4 * MIB);
	printf("ok anon\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "punch"))
		return punch();
	if (argc == 2 && !strcmp(argv[1], "remap"))
		return remap();
	if (argc == 2 && !strcmp(argv[1], "anon"))
		return anon();
	fprintf(stderr, "usage: shmem_hole punch|remap|anon\n");
	return 2;
}
