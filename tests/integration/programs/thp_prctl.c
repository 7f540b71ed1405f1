/* prctl(PR_SET_THP_DISABLE) and its 6.18 flag PR_THP_DISABLE_EXCEPT_ADVISED across fork and exec,
 * and what faults get afterwards.
 *
 * usage: thp_prctl except|full|none    set the flag (1, 2 / 1, 0 / nothing), check that a flag
 *                                      while enabling is refused (EINVAL), fork; the child execs
 *                                      this program as "probe"
 *        thp_prctl probe               print PR_GET_THP_DISABLE, then write 8 MiB of a plain
 *                                      mapping and 8 MiB of a MADV_HUGEPAGE one and print the
 *                                      emulated huge faults each took (-1 when not emulated)
 * Prints "set R get G", "child get G", "exec get G", "plain_huge N advised_huge M"; exit 0, or
 * 1 on a failed call, 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "thpemu.h"

#define LEN (8UL << 20)

#pragma weak thpemu_get_counters

static long huge_faults_now(void)
{
	struct thpemu_counters c;

	if (!thpemu_get_counters || thpemu_get_counters(&c, sizeof(c)) != 0)
		return -1;
	return (long)c.huge_faults;
}

/* A handler counts a fault once it has woken the program: wait until the count has stood still
 * for 50 ms (at most 2 s). */
static long huge_faults(void)
{
	long v = huge_faults_now(), prev = -2;
	struct timespec ts = {0, 10 * 1000 * 1000};

	for (int i = 0, still = 0; v >= 0 && i < 200 && still < 5; i++) {
		still = v == prev ? still + 1 : 0;
		prev = v;
		nanosleep(&ts, NULL);
		v = huge_faults_now();
	}
	return v;
}

static long touch(int advise)
{
	char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long before = huge_faults(), after;

	if (p == MAP_FAILED || (advise && madvise(p, LEN, MADV_HUGEPAGE) != 0))
		return -2;
	for (size_t i = 0; i < LEN; i += 4096)
		p[i] = 1;
	after = huge_faults();
	return before < 0 || after < 0 ? -1 : after - before;
}

static int probe(void)
{
	long plain, advised;

	printf("exec get %d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	plain = touch(0);
	advised = touch(1);
	if (plain == -2 || advised == -2) {
		perror("thp_prctl: mmap/madvise");
		return 1;
	}
	printf("plain_huge %ld advised_huge %ld\n", plain, advised);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long flags;
	int status, set = 0;
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && strcmp(argv[1], "probe") == 0)
		return probe();
	if (argc != 2 ||
	    (strcmp(argv[1], "except") && strcmp(argv[1], "full") && strcmp(argv[1], "none"))) {
		fprintf(stderr, "usage: thp_prctl except|full|none|probe\n");
		return 2;
	}
	/* flags are only allowed when disabling (6.18 prctl_set_thp_disable) */
	if (prctl(PR_SET_THP_DISABLE, 0, 2, 0, 0) != -1 || errno != EINVAL) {
		fprintf(stderr, "thp_prctl: PR_SET_THP_DISABLE 0, 2 was not refused\n");
		return 1;
	}
	flags = strcmp(argv[1], "except") == 0 ? 2 : 0;
	if (strcmp(argv[1], "none") != 0)
		set = prctl(PR_SET_THP_DISABLE, 1, flags, 0, 0);
	printf("set %d get %d\n", set, prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child get %d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
		execl("/proc/self/exe", argv[0], "probe", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
