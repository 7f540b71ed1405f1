/* Print the descriptors this process can see, as a program checking "only the descriptors I was
 * given are open" would: fstat(2) over 0 .. sysconf(_SC_OPEN_MAX) - 1, one line per open
 * descriptor with its file type; then what getrlimit(RLIMIT_NOFILE) says. With an argument,
 * first exercise the calls that must not reach the emulator's descriptors: close_range from 3
 * up, closefrom, close of every number up to the hard limit, dup2 onto the top numbers - and
 * then allocate and touch memory, which the emulator must still serve.
 *
 *   fdlist [--close-everything]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind(mode_t m)
{
	return S_ISREG(m)    ? "file"
	       : S_ISDIR(m)  ? "dir"
	       : S_ISCHR(m)  ? "chr"
	       : S_ISFIFO(m) ? "fifo"
	       : S_ISSOCK(m) ? "sock"
			     : "other";
}

static int close_everything(void)
{
	struct rlimit rl;
	int dup_refused = 0;

	if (close_range(3, ~0U, 0) < 0)
		perror("close_range");
	closefrom(3);
	getrlimit(RLIMIT_NOFILE, &rl);
	for (rlim_t fd = 3; fd < rl.rlim_max && fd < (1 << 21); fd++)
		close((int)fd);
	/* the numbers at the very top are out of reach, as they are natively: EBADF */
	for (rlim_t fd = rl.rlim_cur; fd < rl.rlim_cur + 64; fd++)
		dup_refused += dup2(1, (int)fd) < 0 && errno == EBADF;
	printf("dup2 above the soft limit refused: %d of 64\n", dup_refused);
	return 0;
}

int main(int argc, char **argv)
{
	long max = sysconf(_SC_OPEN_MAX);
	struct rlimit rl;

	if (argc > 1 && strcmp(argv[1], "--close-everything") == 0) {
		size_t len = 64 << 20;
		char *p;

		close_everything();
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 2;
		for (size_t off = 0; off < len; off += 4096)
			p[off] = (char)(off >> 12);
		for (size_t off = 0; off < len; off += 4096)
			if (p[off] != (char)(off >> 12))
				return 3;
		printf("touched %zu MiB after closing everything\n", len >> 20);
	}
	for (long fd = 0; fd < max; fd++) {
		struct stat st;

		if (fstat((int)fd, &st) == 0)
			printf("fd %ld %s\n", fd, kind(st.st_mode));
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("open max %ld\n", max);
	return 0;
}
