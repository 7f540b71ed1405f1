/* The library tests/programs/dl_check loads by its bare name (found through the program's
 * RUNPATH, $ORIGIN/dl). Its memory comes from whichever malloc its symbols bind to: with
 * RTLD_DEEPBIND, the C library's even when the program's is a preloaded allocator's. */
#include <stdlib.h>
#include <string.h>

char *dltest_dup(const char *s);

char *dltest_dup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}
