/* Memory of shapes the memory census must see (its own mappings, written, no library between):
 *
 *   memshape brief MB          map MB MiB, write it, unmap it at once, exit
 *   memshape hold MB MS        map MB MiB, write it, keep it MS ms, unmap it, exit
 *   memshape small N KB        N adjacent mappings of KB KiB each (each below --min-region; the
 *                              kernel merges them into one VMA), written, kept until exit
 *   memshape glibc MB MS       malloc MB MiB (glibc's malloc maps it through its own __mmap),
 *                              write it, keep it MS ms, exit without freeing
 *
 * Prints nothing; exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	long arg3 = argc > 3 ? strtol(argv[3], NULL, 10) : 0;

	if (argc > 2 && !strcmp(argv[1], "brief")) {
		char *p = map(mb << 20);

		memset(p, 1, mb << 20);
		munmap(p, mb << 20);
	} else if (argc > 3 && !strcmp(argv[1], "hold")) {
		char *p = map(mb << 20);

		memset(p, 1, mb << 20);
		sleep_ms(arg3);
		munmap(p, mb << 20);
	} else if (argc > 3 && !strcmp(argv[1], "small")) {
		size_t len = (size_t)arg3 << 10;

		for (size_t i = 0; i < mb; i++) /* each just below the last: top-down placement */
			memset(map(len), 1, len);
		sleep_ms(300); /* a census or two while they are there */
	} else if (argc > 3 && !strcmp(argv[1], "glibc")) {
		char *p = malloc(mb << 20);

		if (!p)
			return 1;
		memset(p, 1, mb << 20);
		sleep_ms(arg3);
	} else {
		fprintf(stderr,
			"usage: memshape brief MB | hold MB MS | small N KB | glibc MB MS\n");
		return 2;
	}
	return 0;
}
