/* A buffer the program keeps out of its fork children (MADV_DONTFORK, as a DMA or RDMA buffer
 * is), mapped again by each child at the same address with MAP_FIXED_NOREPLACE: natively the
 * address is free in the child (nothing else maps there between the fork and the child's call).
 * Meanwhile the parent's other memory is checked in each child.
 *
 *   dontfork [CHILDREN]   (default 8)
 *
 * Output: "children=N ok=N eexist=N other=N"; exit 1 unless every child got its address. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/sys.h" /* MAP_FIXED_NOREPLACE where the system's headers lack it */

#define BUF  (128UL << 20)
#define DATA (8UL << 20)

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 8, ok = 0, eexist = 0, other = 0;
	uint8_t *buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *data =
	    mmap(NULL, DATA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (buf == MAP_FAILED || data == MAP_FAILED || madvise(buf, BUF, MADV_DONTFORK) != 0)
		return 2;
	for (size_t i = 0; i < DATA; i += 4096)
		data[i] = (uint8_t)(i >> 12);
	for (int c = 0; c < children; c++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0) {
			void *p = mmap(buf, BUF, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

			if (p == MAP_FAILED)
				_exit(errno == EEXIST ? 10 : 11);
			for (size_t i = 0; i < DATA; i += 4096)
				if (data[i] != (uint8_t)(i >> 12))
					_exit(12);
			((uint8_t *)p)[0] = 1;
			_exit(p == buf ? 0 : 11);
		}
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			ok++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 10)
			eexist++;
		else
			other++;
	}
	printf("children=%d ok=%d eexist=%d other=%d\n", children, ok, eexist, other);
	return ok == children ? 0 : 1;
}
