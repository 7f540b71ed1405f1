/* fork, vfork+exec and posix_spawn under the emulator: the forked child reads the parent's data
 * and gets new memory (it runs unmanaged), the parent keeps working managed, exec'd and spawned
 * children manage their own memory. Prints what each step saw; exit 0 when all were right. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
extern int thpemu_active(void) __attribute__((weak));

#define LEN (16UL << 20)

static int active(void)
{
	return thpemu_active ? thpemu_active() : 0;
}

static unsigned long pattern_sum(const unsigned char *p, size_t len)
{
	unsigned long s = 0;

	for (size_t i = 0; i < len; i += 4096)
		s += p[i];
	return s;
}

/* What pattern_sum must find over the first half, as the parent wrote it. */
static unsigned long expected_sum(void)
{
	unsigned long s = 0;

	for (size_t i = 0; i < LEN / 2; i += 4096)
		s += (unsigned char)(i >> 12);
	return s;
}

/* What exec'd and spawned children do: allocate, fill, verify. */
static int child_work(void)
{
	size_t len = 8UL << 20;
	unsigned char *p = malloc(len);

	if (!p)
		return 1;
	memset(p, 0x3c, len);
	for (size_t i = 0; i < len; i += 4096) {
		if (p[i] != 0x3c) {
			free(p);
			return 1;
		}
	}
	printf("spawned: ok managed=%d\n", active());
	free(p);
	return 0;
}

static int wait_ok(pid_t pid, const char *what)
{
	int st;

	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("%s: FAILED (status %d)\n", what, st);
		return 1;
	}
	printf("%s: ok\n", what);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char *p;
	int fails = 0;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_work();
	setvbuf(stdout, NULL, _IONBF, 0);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (size_t i = 0; i < LEN / 2; i += 4096)
		p[i] = (unsigned char)(i >> 12);
	printf("parent: managed=%d\n", active());
	pid = fork();
	if (pid == 0) {
		unsigned char *q = malloc(4 << 20);

		if (!q)
			_exit(1);
		memset(q, 7, 4 << 20);
		p[LEN - 1] = 9; /* untouched in the parent: plain memory in the child */
		if (pattern_sum(p, LEN / 2) != expected_sum() || q[12345] != 7 ||
		    p[4096 * 3] != 3 || p[LEN - 1] != 9)
			_exit(1);
		_exit(0);
	}
	fails += wait_ok(pid, "fork");
	p[LEN - 4096] = 1; /* the parent is still managed after the fork */
	fails += p[4096 * 5] != 5 || p[LEN - 4096] != 1;
	pid = vfork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
		_exit(127);
	}
	fails += wait_ok(pid, "vfork+exec");
	{
		char *args[] = {argv[0], "--child", NULL};

		if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0)
			fails++;
		else
			fails += wait_ok(pid, "posix_spawn");
	}
	fails += pattern_sum(p, LEN / 2) != expected_sum();
	printf("parent: data %s\n",
	       pattern_sum(p, LEN / 2) == expected_sum() ? "intact" : "CORRUPTED");
	munmap(p, LEN);
	return fails ? 1 : 0;
}
