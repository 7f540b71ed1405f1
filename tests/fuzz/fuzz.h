/* What the libFuzzer targets share: the input as a C string or as a file, and an output stream
 * that goes nowhere.
 *
 * A file input is a memfd opened through /proc/self/fd/N, so the readers run exactly as the
 * commands run them on a file (open, fstat, read). FUZZ_CHECK is an assertion that stays on in
 * every build: a property a target checks (a bound, a round trip) fails as a crash would.
 */
#ifndef THPEMU_TESTS_FUZZ_H
#define THPEMU_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", __FILE__, __LINE__,      \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (malloc'ed; it ends at the first NUL byte). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* The input as a file: writes it to one memfd kept for the whole run and returns its path. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	size_t off = 0;

	if (fd < 0) {
		fd = memfd_create("thpemu-fuzz", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0)
		abort();
	while (off < size) {
		ssize_t n = pwrite(fd, data + off, size - off, (off_t)off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	return path;
}

/* A stream to /dev/null (opened once), for renderers whose output is not looked at. */
static inline FILE *fuzz_null(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "we");
	if (!f)
		abort();
	return f;
}

#endif
