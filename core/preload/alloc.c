/* The one function of glibc's replaceable allocator set that jemalloc leaves out: pvalloc.
 *
 * glibc lets a program's allocator replace malloc, free, calloc and realloc, and with them
 * aligned_alloc, malloc_usable_size, memalign, posix_memalign, pvalloc and valloc (the glibc
 * manual, "Replacing malloc"). jemalloc 5.3 (Debian's, and libthpemu-jemalloc.so built from it)
 * defines all of them but pvalloc, so under `thpemu run` a program's pvalloc was glibc's: it
 * returned memory of glibc's own heap, which jemalloc's free does not own, and the program
 * crashed in free where natively it runs. Here pvalloc is what glibc's is (malloc/malloc.c
 * __libc_pvalloc: the size rounded up to a whole page, page-aligned, ENOMEM on overflow) on top
 * of whichever memalign comes first in the lookup order: the preloaded allocator's, or glibc's
 * under --allocator none.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), rounded;

	if (__builtin_add_overflow(size, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	return memalign(page, rounded & ~(page - 1));
}
