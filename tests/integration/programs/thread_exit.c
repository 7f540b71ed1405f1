/* A process ends when its last thread ends, however that thread leaves.
 *
 *   thread_exit main    main() hands over to a worker with pthread_exit; the worker fills 8 MiB
 *                       of its own mapping, checks it, prints its sum and returns: the process
 *                       must end with status 0 when it does.
 *   thread_exit fork    a second thread forks; in the child that thread is the only one, it
 *                       checks memory written before the fork and returns from its start
 *                       routine: the child must end with status 0 (the parent waits for it, at
 *                       most 20 s, and prints how it ended).
 *
 * Prints the same lines natively and under the emulator; exit status 0 when all was right.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEN (8UL << 20)

static unsigned char *area;

static unsigned long fill_and_sum(unsigned char *p, size_t len, unsigned seed)
{
	unsigned long s = 0;

	for (size_t i = 0; i < len; i += 4096)
		p[i] = (unsigned char)(i / 4096 * 7 + seed);
	for (size_t i = 0; i < len; i += 4096)
		s += p[i];
	return s;
}

static void *late_worker(void *arg)
{
	unsigned char *p;
	struct timespec ts = {0, 100 * 1000 * 1000};

	(void)arg;
	nanosleep(&ts, NULL); /* main is gone by now */
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	printf("worker: sum %lu\n", fill_and_sum(p, LEN, 3));
	fflush(stdout);
	return NULL; /* the last thread: the process ends here, status 0 */
}

static int main_exits(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, late_worker, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}

static void *forking_thread(void *arg)
{
	pid_t pid;
	int status;

	(void)arg;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return (void *)1;
	if (pid == 0) { /* only this thread lives in the child */
		unsigned long s = 0;

		for (size_t i = 0; i < LEN; i += 4096)
			s += area[i];
		printf("child: inherited sum %lu\n", s);
		fflush(stdout);
		return NULL; /* the child's last thread: the child ends, status 0 */
	}
	for (int i = 0; i < 200; i++) { /* 20 s at most */
		struct timespec ts = {0, 100 * 1000 * 1000};
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			printf("parent: child exited %d\n",
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			return (void *)(intptr_t)(WIFEXITED(status) && WEXITSTATUS(status) == 0
						      ? 0
						      : 1);
		}
		nanosleep(&ts, NULL);
	}
	printf("parent: child still running after 20 s\n");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return (void *)1;
}

static int thread_forks(void)
{
	pthread_t t;
	void *ret;

	area = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	printf("parent: sum %lu\n", fill_and_sum(area, LEN, 5));
	if (pthread_create(&t, NULL, forking_thread, NULL) != 0 || pthread_join(t, &ret) != 0)
		return 1;
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "main") == 0)
		return main_exits();
	if (argc == 2 && strcmp(argv[1], "fork") == 0)
		return thread_forks();
	fprintf(stderr, "usage: thread_exit main|fork\n");
	return 2;
}
