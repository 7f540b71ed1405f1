/* A forking server: the parent fills a table, then forks N workers without exec (as a
 * pre-fork server does). Each worker reads the inherited table, allocates and fills memory of
 * its own, holds it until every worker has filled (so that all of it is in use at once), checks
 * it and prints one line. The output is the same natively and under the emulator; the exit
 * status is 0 when every worker saw the right data.
 *
 *   forkserver WORKERS MIB [--kill-one]
 *
 * --kill-one: the parent SIGKILLs worker 0 while the others are still faulting; the others must
 * finish intact (the killed worker's line is not printed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern int thpemu_active(void) __attribute__((weak));

#define TABLE (8UL << 20)

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t fill(uint64_t *p, size_t n, uint64_t seed)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		p[i] = mix(seed + i);
		sum += p[i];
	}
	return sum;
}

static uint64_t sum_of(const uint64_t *p, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

/* A worker: 0 if its memory and the inherited table were right. */
static int worker(int id, size_t mib, const uint64_t *table, uint64_t table_sum, int ready_fd,
		  int go_fd)
{
	size_t n = (mib << 20) / sizeof(uint64_t);
	uint64_t *p = malloc(n * sizeof(uint64_t));
	uint64_t want;
	char c = 'r';
	int rc = 0;

	if (!p)
		return 2;
	want = fill(p, n, (uint64_t)id << 40);
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1) /* all filled: all in use */
		rc = 3;
	else if (sum_of(p, n) != want || sum_of(table, TABLE / 8) != table_sum)
		rc = 1;
	else
		printf("worker %d: %zu MiB ok, table ok, managed=%d\n", id, mib,
		       thpemu_active ? thpemu_active() : 0);
	free(p);
	return rc;
}

int main(int argc, char **argv)
{
	int nw = argc > 1 ? atoi(argv[1]) : 2, ready[2], go[2], fails = 0;
	size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 16;
	bool kill_one = argc > 3 && !strcmp(argv[3], "--kill-one");
	uint64_t *table =
	    mmap(NULL, TABLE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t table_sum;
	pid_t pid[64];

	if (nw < 1 || nw > 64 || table == MAP_FAILED || pipe(ready) || pipe(go))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	table_sum = fill(table, TABLE / 8, 7);
	for (int i = 0; i < nw; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			close(ready[0]);
			close(go[1]);
			if (kill_one && i == 0) { /* fault until killed */
				for (;;) {
					size_t n = (mib << 20) / 8;
					uint64_t *q = malloc(n * 8);

					if (q)
						fill(q, n, 1);
					free(q);
				}
			}
			_exit(worker(i, mib, table, table_sum, ready[1], go[0]));
		}
	}
	close(ready[1]);
	for (int i = kill_one ? 1 : 0; i < nw; i++) {
		char c;

		if (read(ready[0], &c, 1) != 1)
			fails++;
	}
	if (kill_one) {
		kill(pid[0], SIGKILL);
		waitpid(pid[0], NULL, 0);
	}
	for (int i = 0; i < nw; i++) /* one token per worker */
		if (write(go[1], "g", 1) != 1)
			fails++;
	for (int i = kill_one ? 1 : 0; i < nw; i++) {
		int st;

		if (waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			fails++;
	}
	fails += sum_of(table, TABLE / 8) != table_sum;
	printf("server: %d workers, table %s\n", nw, fails ? "FAILED" : "ok");
	return fails ? 1 : 0;
}
