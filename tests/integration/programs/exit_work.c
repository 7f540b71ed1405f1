/* Touch memory, then write the emulator's fault count, the time (CLOCK_REALTIME) at the
 * program's last instruction and the pages it touched, and return from main: every fault after
 * that is thpemu's exit work (its reports), not the program's. argv[1]: MiB to touch (default
 * 8). Nothing here allocates (the line is formatted on the stack and written with write(2)), so
 * the program's first touches are those pages alone. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "thpemu.h"

extern int thpemu_get_counters(struct thpemu_counters *c, size_t size) __attribute__((weak));

int main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? atoi(argv[1]) : 8) << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thpemu_counters c = {0};
	struct timespec pause = {0, 200 * 1000 * 1000}, now;
	char line[128];
	int n;

	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	nanosleep(&pause, NULL); /* threads the emulator made on demand are made */
	if (thpemu_get_counters)
		thpemu_get_counters(&c, sizeof(c));
	clock_gettime(CLOCK_REALTIME, &now);
	n = snprintf(line, sizeof(line), "faults=%" PRIu64 " end=%lld.%09ld touched=%zu\n",
		     c.faults, (long long)now.tv_sec, now.tv_nsec, len / 4096);
	return write(1, line, (size_t)n) == n ? 0 : 1;
}
