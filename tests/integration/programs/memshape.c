/* Memory of shapes the memory census must see (its own mappings, written, no library between):
 *
 *   memshape brief MB          map MB MiB, write it, unmap it at once, exit
 *   memshape hold MB MS        map MB MiB, write it, keep it MS ms, unmap it, exit
 *   memshape small N KB        N adjacent mappings of KB KiB each (each below --min-region; the
 *                              kernel merges them into one VMA), written, kept until exit
 *   memshape glibc MB MS       malloc MB MiB (glibc's malloc maps it through its own __mmap),
 *                              write it, keep it MS ms, exit without freeing
 *   memshape shm MB MS         MB MiB each of a SysV segment, a memfd and a MAP_SHARED anonymous
 *                              mapping (shared memory), written; a fork child writes them too;
 *                              both keep them MS ms
 *
 * Prints nothing; exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
	} else if (argc > 3 && !strcmp(argv[1], "shm")) {
		size_t len = mb << 20;
		int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
		int fd = memfd_create("memshape", 0);
		char *sysv = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
		char *mfd = fd >= 0 && ftruncate(fd, (off_t)len) == 0
				? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
				: MAP_FAILED;
		char *anon =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		pid_t pid;

		if (id >= 0)
			shmctl(id, IPC_RMID, NULL); /* gone once the last process detaches */
		if (sysv == (void *)-1 || mfd == MAP_FAILED || anon == MAP_FAILED) {
			perror("memshape: shared memory");
			return 1;
		}
		memset(sysv, 1, len);
		memset(mfd, 2, len);
		memset(anon, 3, len);
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) { /* the same pages: no new memory */
			memset(sysv, 4, len);
			memset(mfd, 5, len);
			memset(anon, 6, len);
			sleep_ms(arg3);
			_exit(0);
		}
		sleep_ms(arg3);
		waitpid(pid, NULL, 0);
	} else {
		fprintf(stderr,
			"usage: memshape brief MB | hold MB MS | small N KB | glibc MB MS | "
			"shm MB MS\n");
		return 2;
	}
	return 0;
}
