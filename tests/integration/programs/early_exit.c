/* Touch memory, then leave without running exit handlers: `_exit N`, `abort`, or `segv`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t len = 32UL << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	if (argc > 1 && !strcmp(argv[1], "abort"))
		abort();
	if (argc > 1 && !strcmp(argv[1], "segv"))
		raise(SIGSEGV);
	_exit(argc > 2 ? atoi(argv[2]) : 0);
}
