/* What a process costs: fork + exit, fork + exec + exit and posix_spawn, timed one at a time from
 * the parent, natively or under thpemu (tests/perf/proc_bench.sh runs both in the same run).
 *
 *   proc_bench fork N              fork(); the child _exit(0)s at once; waitpid
 *   proc_bench fork-exit N         the same, the child leaving by exit(0) (atexit handlers run)
 *   proc_bench forkexec N PROG     fork(); the child execv(PROG); waitpid
 *   proc_bench vforkexec N PROG    vfork(); the child execv(PROG); waitpid
 *   proc_bench spawn N PROG        posix_spawn(PROG); waitpid
 *
 * Before the loop the parent maps and touches ARENA_MB (8) MiB of private anonymous memory, as a
 * program with a heap would (under thpemu it is managed, and a fork child inherits it). Prints
 * one line: "mode=M n=N p50_us=.. mean_us=.. min_us=.. p90_us=.. child_cpu_us=..", the last the
 * CPU time (user and system, every thread) of a child, the mean over the N (getrusage of the
 * waited-for children): what a process costs the machine, less noisy than its wall time on a
 * loaded one.
 */
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARENA_MB 8

extern char **environ;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int wait_ok(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int one(const char *mode, char *prog)
{
	char *argv[] = {prog, NULL};
	pid_t pid;

	if (strcmp(mode, "fork") == 0 || strcmp(mode, "fork-exit") == 0) {
		pid = fork();
		if (pid == 0) {
			if (mode[4])
				exit(0);
			_exit(0);
		}
	} else if (strcmp(mode, "forkexec") == 0) {
		pid = fork();
		if (pid == 0) {
			execv(prog, argv);
			_exit(127);
		}
	} else if (strcmp(mode, "vforkexec") == 0) {
		pid = vfork();
		if (pid == 0) {
			execv(prog, argv);
			_exit(127);
		}
	} else {
		if (posix_spawn(&pid, prog, NULL, NULL, argv, environ) != 0)
			return -1;
	}
	return wait_ok(pid);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;
	char *prog = argc > 3 ? argv[3] : NULL;
	bool needs_prog = strcmp(mode, "forkexec") == 0 || strcmp(mode, "vforkexec") == 0 ||
			  strcmp(mode, "spawn") == 0;
	uint64_t *t, sum = 0;
	size_t arena = (size_t)ARENA_MB << 20;
	char *mem;
	struct rusage ru;
	double child_us;

	if (n <= 0 ||
	    (!needs_prog && strcmp(mode, "fork") != 0 && strcmp(mode, "fork-exit") != 0) ||
	    (needs_prog && !prog)) {
		fprintf(stderr, "usage: proc_bench fork|fork-exit N | forkexec|vforkexec|spawn N "
				"PROG\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	mem = mmap(NULL, arena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!t || mem == MAP_FAILED)
		return 1;
	for (size_t off = 0; off < arena; off += 4096)
		mem[off] = 1;
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		if (one(mode, prog) < 0) {
			fprintf(stderr, "proc_bench: %s #%ld failed\n", mode, i);
			return 1;
		}
		t[i] = now_ns() - t0;
		sum += t[i];
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	getrusage(RUSAGE_CHILDREN, &ru);
	child_us = ((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)) /
		   (double)n;
	printf("mode=%s n=%ld p50_us=%.1f mean_us=%.1f min_us=%.1f p90_us=%.1f child_cpu_us=%.1f\n",
	       mode, n, (double)t[n / 2] / 1e3, (double)sum / (double)n / 1e3, (double)t[0] / 1e3,
	       (double)t[n * 9 / 10] / 1e3, child_us);
	free(t);
	munmap(mem, arena);
	return 0;
}
