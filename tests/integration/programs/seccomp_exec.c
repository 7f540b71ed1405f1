/* Run a command under a seccomp filter, as a container runtime or a sandboxing program would.
 *
 *   seccomp_exec --no-uring CMD ARGS...    io_uring_setup/enter/register fail with EPERM (Docker's
 *                                          default profile does this)
 *   seccomp_exec --in-process SECONDS      (no exec) map and fill 64 MiB, install a filter that
 *                                          allows everything but ptrace, check the data, map and
 *                                          fill 64 MiB more, check everything again
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DENY(nr)                                                                                   \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

static int install(struct sock_filter *f, unsigned short n)
{
	struct sock_fprog prog = {.len = n, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static int no_uring(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    DENY(__NR_io_uring_setup),
	    DENY(__NR_io_uring_enter),
	    DENY(__NR_io_uring_register),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install(f, sizeof(f) / sizeof(f[0]));
}

static int no_ptrace(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    DENY(__NR_ptrace),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install(f, sizeof(f) / sizeof(f[0]));
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 64)
		p[i] = (unsigned char)(i / 64 * 31 + seed);
}

static size_t check(const unsigned char *p, size_t len, unsigned seed)
{
	size_t bad = 0;

	for (size_t i = 0; i < len; i += 64)
		bad += p[i] != (unsigned char)(i / 64 * 31 + seed);
	return bad;
}

static int in_process(void)
{
	size_t len = 64 << 20, bad;
	unsigned char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
				0),
		      *b;

	if (a == MAP_FAILED)
		return 2;
	fill(a, len, 1);
	if (no_ptrace() < 0) {
		perror("seccomp_exec: filter");
		return 2;
	}
	bad = check(a, len, 1);
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 2;
	fill(b, len, 2);
	bad += check(a, len, 1) + check(b, len, 2);
	printf("filtered: %zu bad bytes\n", bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--in-process") == 0)
		return in_process();
	if (argc < 3 || strcmp(argv[1], "--no-uring") != 0) {
		fprintf(stderr, "usage: seccomp_exec --no-uring CMD ARGS... | --in-process\n");
		return 2;
	}
	if (no_uring() < 0) {
		perror("seccomp_exec: filter");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("seccomp_exec: exec");
	return 127;
}
