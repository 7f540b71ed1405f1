/* memmix: memory of every kind the memory census must tell apart, held for a while, then checked.
 *
 *   memmix BRK_MB MALLOC_MB MMAP_MB RESERVE_MB HOLD_MS
 *
 * BRK_MB through sbrk(2) (a brk heap), MALLOC_MB in 4 KiB malloc(3) blocks (glibc's main arena
 * is the brk heap too; under jemalloc they are mmap'd), MMAP_MB in one private anonymous
 * read-write mapping, and RESERVE_MB reserved PROT_NONE | MAP_NORESERVE whose first half is
 * later made read-write with mprotect(2) and touched (as V8 and the JVM commit their heaps).
 * Every page gets a pattern; after HOLD_MS (for the census to see it all) every page is checked.
 * First, each function of glibc's replaceable allocator set (the glibc manual, "Replacing
 * malloc") allocates, is written and freed: one the preloaded allocator lacks would return
 * memory its free does not own. Prints "memmix: ok" or what went wrong; exit 0 when all is
 * intact.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MB   (1024UL * 1024UL)

static void fill(unsigned char *p, size_t len, unsigned tag)
{
	for (size_t o = 0; o < len; o += PAGE)
		*(uint64_t *)(void *)(p + o) = ((uint64_t)tag << 48) ^ o;
}

static int check(const unsigned char *p, size_t len, unsigned tag, const char *what)
{
	for (size_t o = 0; o < len; o += PAGE) {
		if (*(const uint64_t *)(const void *)(p + o) != (((uint64_t)tag << 48) ^ o)) {
			printf("memmix: %s: page at offset %zu lost its data\n", what, o);
			return 1;
		}
	}
	return 0;
}

/* One block from each allocation function, aligned as it promises, written, resized, freed. */
static int allocators(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int bad = 0;

	for (size_t size = 1; size <= 3 * page && !bad; size = size * 3 + 7) {
		void *pm = NULL;
		struct {
			const char *name;
			void *p;
			size_t align;
		} b[] = {
		    {"malloc", malloc(size), 1},
		    {"calloc", calloc(1, size), 1},
		    {"realloc", realloc(NULL, size), 1},
		    {"aligned_alloc", aligned_alloc(64, (size + 63) & ~(size_t)63), 64},
		    {"memalign", memalign(256, size), 256},
		    {"posix_memalign", posix_memalign(&pm, 128, size) == 0 ? pm : NULL, 128},
		    {"valloc", valloc(size), page},
		    {"pvalloc", pvalloc(size), page},
		};

		/* every block is freed, whatever went wrong with one */
		for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
			unsigned char *q;

			if (bad || !b[i].p || (uintptr_t)b[i].p % b[i].align ||
			    malloc_usable_size(b[i].p) < size) {
				if (!bad)
					printf("memmix: %s(%zu) gave %p\n", b[i].name, size,
					       b[i].p);
				bad = 1;
				free(b[i].p);
				continue;
			}
			memset(b[i].p, 0xa5, size);
			q = realloc(b[i].p, size * 2);
			if (!q) {
				printf("memmix: realloc of %s(%zu) failed\n", b[i].name, size);
				bad = 1;
				free(b[i].p);
				continue;
			}
			if (q[size - 1] != 0xa5) {
				printf("memmix: realloc of %s(%zu) lost its data\n", b[i].name,
				       size);
				bad = 1;
			}
			free(q);
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	unsigned long brk_mb, malloc_mb, mmap_mb, reserve_mb, hold_ms;
	unsigned char *heap, *map, *res, **blocks;
	size_t nblocks;
	struct timespec ts;
	int bad = 0;

	if (argc != 6) {
		fprintf(stderr, "usage: memmix BRK_MB MALLOC_MB MMAP_MB RESERVE_MB HOLD_MS\n");
		return 2;
	}
	brk_mb = strtoul(argv[1], NULL, 10);
	malloc_mb = strtoul(argv[2], NULL, 10);
	mmap_mb = strtoul(argv[3], NULL, 10);
	reserve_mb = strtoul(argv[4], NULL, 10);
	hold_ms = strtoul(argv[5], NULL, 10);
	if (allocators())
		return 1;

	heap = sbrk((intptr_t)(brk_mb * MB));
	if (heap == (void *)-1) {
		perror("memmix: sbrk");
		return 1;
	}
	fill(heap, brk_mb * MB, 1);
	nblocks = malloc_mb * MB / PAGE;
	blocks = calloc(nblocks ? nblocks : 1, sizeof(*blocks));
	if (!blocks) {
		perror("memmix: calloc");
		return 1;
	}
	for (size_t i = 0; i < nblocks; i++) {
		unsigned char *b = malloc(PAGE);

		if (!b)
			return 1;
		fill(b, PAGE, 2);
		blocks[i] = b;
	}
	map = mmap(NULL, mmap_mb * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	res = mmap(NULL, reserve_mb * MB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (map == MAP_FAILED || res == MAP_FAILED) {
		perror("memmix: mmap");
		return 1;
	}
	fill(map, mmap_mb * MB, 3);
	if (mprotect(res, reserve_mb * MB / 2, PROT_READ | PROT_WRITE) != 0) {
		perror("memmix: mprotect");
		return 1;
	}
	fill(res, reserve_mb * MB / 2, 4);

	ts.tv_sec = (time_t)(hold_ms / 1000);
	ts.tv_nsec = (long)(hold_ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);

	bad |= check(heap, brk_mb * MB, 1, "brk");
	for (size_t i = 0; i < nblocks && !bad; i++)
		bad |= check(blocks[i], PAGE, 2, "malloc");
	bad |= check(map, mmap_mb * MB, 3, "mmap");
	bad |= check(res, reserve_mb * MB / 2, 4, "reservation");
	if (!bad)
		printf("memmix: ok\n");
	return bad;
}
