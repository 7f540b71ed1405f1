/* Process-level calls whose results must not depend on running under the emulator. Prints one
 * line per check; the output natively and under thpemu must be identical.
 *
 *   - the disposition of every signal, as sigaction(2) reports it;
 *   - a handler of the program on each real-time signal runs when the signal is raised;
 *   - with every signal blocked, nothing is pending;
 *   - vfork + _exit, vfork + exec, clone(CLONE_VM | CLONE_VFORK) + exec;
 *   - a child made by a raw clone system call (no atfork handler runs), which maps and touches
 *     memory of its own and reads its parent's;
 *   - prctl(PR_SET_NAME / PR_GET_NAME), PR_SET_PDEATHSIG, and an RLIMIT_AS round trip.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

static const char *kind(const struct sigaction *sa)
{
	if (!(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL)
		return "default";
	if (!(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN)
		return "ignored";
	return "handled";
}

static void dispositions(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigaction(sig, NULL, &sa) == 0)
			printf("signal %d %s\n", sig, kind(&sa));
	}
}

static void rt_handlers(void)
{
	unsigned ran = 0;

	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction sa, back;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		got = 0;
		sigaction(sig, &sa, NULL);
		raise(sig);
		ran += got == sig;
		sigaction(sig, NULL, &back);
		if (back.sa_handler != on_signal)
			printf("signal %d: handler reads back as something else\n", sig);
	}
	printf("real-time handlers that ran: %u of %d\n", ran, SIGRTMAX - SIGRTMIN + 1);
}

static void blocked(void)
{
	sigset_t all, pend;
	int n = 0;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	usleep(200000);
	sigpending(&pend);
	for (int sig = 1; sig < NSIG; sig++)
		n += sigismember(&pend, sig) == 1;
	printf("pending with everything blocked: %d\n", n);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

static int status_of(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int exec_true(void *arg)
{
	char *argv[] = {"true", NULL};

	(void)arg;
	execv("/bin/true", argv);
	_exit(127);
}

static int *shared_word;

static void children(void)
{
	static char stack[64 << 10];
	pid_t pid;

	pid = vfork();
	if (pid == 0)
		_exit(7);
	printf("vfork + _exit: %d\n", status_of(pid));
	pid = vfork();
	if (pid == 0)
		exec_true(NULL);
	printf("vfork + exec: %d\n", status_of(pid));
	pid = clone(exec_true, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	printf("clone(CLONE_VM | CLONE_VFORK) + exec: %d\n", status_of(pid));

	*shared_word = 42;
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); /* fork without atfork handlers */
	if (pid == 0) {
		size_t len = 8 << 20;
		char *p =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || *shared_word != 42)
			_exit(2);
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;
		munmap(p, len);
		_exit(0);
	}
	printf("raw clone child with memory of its own: %d\n", status_of(pid));
}

static void misc(void)
{
	char name[17] = "";
	struct rlimit as, back;
	int sig = -1;

	prctl(PR_SET_NAME, "hostcalls", 0, 0, 0);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0);
	printf("name %s, parent-death signal %d\n", name, sig);
	getrlimit(RLIMIT_AS, &as);
	printf("RLIMIT_AS set back: %d", setrlimit(RLIMIT_AS, &as));
	getrlimit(RLIMIT_AS, &back);
	printf(", same: %d\n", back.rlim_cur == as.rlim_cur && back.rlim_max == as.rlim_max);
}

int main(void)
{
	shared_word =
	    mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shared_word == MAP_FAILED)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	dispositions();
	rt_handlers();
	blocked();
	children();
	misc();
	return 0;
}
