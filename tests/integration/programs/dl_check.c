/* dlopen as a program sees it: a library found by bare name through the program's RUNPATH
 * ($ORIGIN/dl), with and without RTLD_DEEPBIND, its memory freed by the program (with a
 * preloaded allocator and DEEPBIND honoured, that free crashes); the main program's handle; the
 * error for a library that does not exist. Prints the same lines natively and under the
 * emulator. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int load(int mode, const char *how)
{
	void *h = dlopen("libthpemu_dltest.so", mode);
	char *(*dup)(const char *);
	char *s;

	if (!h) {
		printf("%s: dlopen failed: %s\n", how, dlerror());
		return 1;
	}
	dup = (char *(*)(const char *))dlsym(h, "dltest_dup");
	s = dup ? dup(how) : NULL;
	printf("%s: loaded, dltest_dup says %s\n", how, s ? s : "(nothing)");
	free(s);
	dlclose(h);
	return s ? 0 : 1;
}

int main(void)
{
	int bad = load(RTLD_NOW, "plain") + load(RTLD_NOW | RTLD_DEEPBIND, "deepbind");
	void *self = dlopen(NULL, RTLD_NOW);

	printf("main program handle: %s\n", self && dlsym(self, "printf") ? "finds printf" : "no");
	if (dlopen("libthpemu-no-such-library.so", RTLD_NOW))
		bad++;
	else
		printf("missing library: %s\n", dlerror());
	return bad;
}
