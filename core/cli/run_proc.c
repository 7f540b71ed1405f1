/* thpemu run's program as a process: where it sits, which signals reach it, how it stops and
 * continues, and how thpemu run ends (see run_proc.h).
 *
 * The goal is the program's native signal life: a signal reaches it as many times as it was sent,
 * from whoever sent it, and never turns into another one. The trouble is that thpemu run stands
 * between the program and its caller: a signal sent to thpemu run is meant for the program, and
 * a signal sent to a process group that holds both reaches the program directly while thpemu run
 * cannot tell it from one sent to it alone (siginfo has no target). So the two never share a
 * group:
 *
 *  - own group (the usual case): the program leads a process group of its own, made in the child
 *    and in the parent (setpgid), and, when the caller's group was its terminal's foreground
 *    group, takes the terminal (tcsetpgrp in the child before exec, SIGTTOU blocked). A signal
 *    sent to thpemu run or to the caller's group reaches thpemu run once and is relayed once;
 *    `timeout`, which signals its child and then its group, reaches thpemu run twice in a row,
 *    and the two are one signal, as they usually are natively, both pending before the program's
 *    handler runs (a standard signal is relayed after a 1 ms window in which more of it
 *    coalesce; relaying each at once, or unless the program still had it pending, gave two in
 *    a third of the runs, where natively one run in 30 had its handler run between the two
 *    kills). The terminal's signals
 * (^C, ^\, ^Z, SIGWINCH) reach the program's group directly. Job control is mirrored: when the
 * program stops (SIGTSTP, SIGTTIN, SIGTTOU, SIGSTOP) thpemu run takes the terminal back and stops
 * itself with the same signal, so the shell sees its job stopped; when continued it hands the
 * terminal back if its group has it and continues the program's group.
 *  - the caller's group: when thpemu run runs from a script on a terminal (its group owns the
 *    terminal and thpemu run does not lead it), the program stays in that group and thpemu run
 *    moves to a group of its own. The terminal's signals then reach the script and the program
 *    together, as natively (a script whose program died of ^C ends too: bash checks that it got
 *    the SIGINT itself); a signal to the group reaches the program (and its children) once and
 *    thpemu run not at all; a signal to thpemu run is relayed. When the program stops, thpemu run
 *    rejoins the group and stops with it, so that the group's SIGCONT continues it too.
 *
 * Relayed: every asynchronous signal a user, a terminal or a timer may send (relayed[] below) and
 * the real-time signals (sigqueue'd with their value), taken with sigwaitinfo on the main thread
 * (blocked in every thread, which inherit the mask), so none is lost or doubled by a handler's
 * race. Not relayed: SIGKILL and SIGSTOP (nobody can take them: SIGSTOP to thpemu run stops it
 * alone), the fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT: thpemu
 * run's own crash is its own), SIGCHLD, signals thpemu run raised itself (SIGPIPE and SIGXFSZ of
 * its own writes: its outputs see EPIPE/EFBIG instead of dying), and signals the program, or in
 * its own group a process of its group, sent (kill(-1, sig) would otherwise come back to it).
 * SIGKILL cannot be relayed: a keeper process (thpemu-keeper, PR_SET_PDEATHSIG) SIGKILLs the
 * program's group when thpemu run dies without ending it, so that `timeout -k` or a kill -9 of
 * the pid a script knows ends the program as it would have natively, instead of leaving it
 * running in a group nobody signals.
 *
 * What the program sees differently: a relayed signal's si_pid is thpemu run's; a signal sent
 * to the caller's group while the program has a group of its own reaches the program but not
 * its children; its process group is not its parent's.
 *
 * The child gets the signal mask and SIGCHLD disposition thpemu run was started with (nothing
 * else is changed), and thpemu run, once its report is written, dies of the signal that killed
 * the program (core dumps off), as sudo and timeout do: its caller's waitpid sees WIFSIGNALED as
 * natively (a shell's $? is 128 + N either way).
 */
#include "cli/run_proc.h"
#include "host/tmpdirs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/clock.h"

#define COALESCE_NS 1000000ULL /* a woken program reaches its handler well within 1 ms */

static const int relayed[] = {SIGHUP,  SIGINT,	  SIGQUIT,   SIGUSR1, SIGUSR2,	SIGPIPE, SIGALRM,
			      SIGTERM, SIGSTKFLT, SIGCONT,   SIGTSTP, SIGTTIN,	SIGTTOU, SIGURG,
			      SIGXCPU, SIGXFSZ,	  SIGVTALRM, SIGPROF, SIGWINCH, SIGIO,	 SIGPWR};

static sigset_t start_mask;	    /* thpemu run's signal mask when it started */
static struct sigaction start_chld; /* and SIGCHLD's disposition (SIG_IGN would reap for us) */
static bool started_saved;

/* The relayed signals, with SIGCHLD: what run_proc_wait waits for. */
static void wait_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++)
		sigaddset(set, relayed[i]);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaddset(set, s);
	sigaddset(set, SIGCHLD);
}

void run_proc_init(struct run_proc *p)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t set;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->keeper = -1;
	wait_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, &start_mask);
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &start_chld);
	started_saved = true;
	p->caller_pgrp = getpgrp();
	p->tty = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	p->foreground = p->tty >= 0 && tcgetpgrp(p->tty) == p->caller_pgrp;
	/* a script on a terminal: the program stays with it, thpemu run leaves */
	p->own_group = !p->foreground || p->caller_pgrp == getpid() || setpgid(0, 0) < 0;
}

void run_proc_child_signals(void)
{
	if (!started_saved)
		return;
	sigaction(SIGCHLD, &start_chld, NULL);
	pthread_sigmask(SIG_SETMASK, &start_mask, NULL);
}

/* Put pid (0: the caller) in group want, else in a group of its own; the group it is in. */
static pid_t place(pid_t pid, pid_t want)
{
	if (setpgid(pid, want) == 0)
		return want ? want : (pid ? pid : getpid());
	if (setpgid(pid, 0) == 0)
		return pid ? pid : getpid();
	return getpgid(pid); /* the child placed itself and exec'd already */
}

static void child(const struct run_proc *p, char *const argv[], void (*before_exec)(void *),
		  void *arg)
{
	pid_t g = place(0, p->own_group ? 0 : p->caller_pgrp);

	if (p->own_group && p->foreground)
		tcsetpgrp(p->tty, g); /* SIGTTOU is still blocked: allowed from the background */
	if (before_exec)
		before_exec(arg);
	run_proc_child_signals();
	execvp(argv[0], argv);
	fprintf(stderr, "thpemu run: cannot execute %s: %s\n", prog_esc(argv[0]), strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* The keeper: a process of thpemu run's own, told by PR_SET_PDEATHSIG when thpemu run dies
 * without ending it (SIGKILL, a crash), that then SIGKILLs the program's group (the caller's
 * kill of thpemu run's group would have reached it there: `timeout -k`), or in the caller's
 * group the program alone. It holds no lock and touches nothing of thpemu run's. */
static void keeper_main(pid_t parent, pid_t target)
{
	sigset_t hup;

	prctl(PR_SET_NAME, "thpemu-keeper");
	setpgid(0, 0); /* a kill of thpemu run's group must not take the keeper with it */
	prctl(PR_SET_PDEATHSIG, SIGHUP);
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP); /* blocked: thpemu run's mask */
	while (getppid() == parent)
		sigwaitinfo(&hup, NULL); /* a SIGHUP of someone else's: not the parent's death */
	kill(target, SIGKILL);
	_exit(0);
}

static void start_keeper(struct run_proc *p)
{
	pid_t parent = getpid(), target = p->own_group ? -p->pgrp : p->pid;

	p->keeper = fork();
	if (p->keeper == 0)
		keeper_main(parent, target);
}

int run_proc_start(struct run_proc *p, char *const argv[], void (*before_exec)(void *), void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(p, argv, before_exec, arg);
	p->pid = pid;
	p->pgrp = place(pid, p->own_group ? pid : p->caller_pgrp);
	start_keeper(p);
	return 0;
}

/* ---- signals --------------------------------------------------------------------------------- */

/* Was the signal sent by thpemu run itself, by the program, or (in its own group) by a process
 * of the program's group? Those are not relayed. */
static bool not_for_program(const struct run_proc *p, const siginfo_t *si)
{
	pid_t g;

	if (si->si_code != SI_USER && si->si_code != SI_QUEUE && si->si_code != SI_TKILL)
		return false; /* the kernel's: a terminal, a timer, a limit */
	if (si->si_pid == getpid() || si->si_pid == p->pid)
		return true;
	g = p->own_group ? getpgid(si->si_pid) : -1;
	return g >= 0 && g == p->pgrp;
}

/* More of sig that arrive within COALESCE_NS of the first are the same signal: pending in the
 * program, they would have merged before its handler ran (real-time signals queue: each is
 * relayed). `timeout` signals its child and then its group: natively one signal. */
static void coalesce(int sig)
{
	uint64_t end = clock_now_ns() + COALESCE_NS, now;
	sigset_t one;

	if (sig >= SIGRTMIN)
		return;
	sigemptyset(&one);
	sigaddset(&one, sig);
	while ((now = clock_now_ns()) < end) {
		struct timespec left = {0, (long)(end - now)};

		if (sigtimedwait(&one, NULL, &left) < 0 && errno != EINTR)
			return;
	}
}

static void relay(const struct run_proc *p, int sig, const siginfo_t *si)
{
	if (not_for_program(p, si))
		return;
	coalesce(sig);
	if (si->si_code == SI_QUEUE)
		sigqueue(p->pid, sig, si->si_value);
	else
		kill(p->pid, sig);
}

/* The program's group has the terminal if thpemu run's group has it now. */
static void hand_terminal(const struct run_proc *p)
{
	if (p->own_group && p->tty >= 0 && tcgetpgrp(p->tty) == getpgrp())
		tcsetpgrp(p->tty, p->pgrp);
}

/* SIGCONT to thpemu run (a shell's fg or bg, a user's kill -CONT): continue the program. */
static void continued(const struct run_proc *p, const siginfo_t *si)
{
	if (not_for_program(p, si))
		return;
	coalesce(SIGCONT);
	hand_terminal(p);
	if (p->own_group)
		killpg(p->pgrp, SIGCONT);
	else
		kill(p->pid, SIGCONT);
}

/* Stop thpemu run with sig (default action whatever its disposition), until a SIGCONT. */
static void stop_self(int sig)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
	sigset_t one;

	if (sig == SIGSTOP) {
		raise(SIGSTOP);
		return;
	}
	sigemptyset(&dfl.sa_mask);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigaction(sig, &dfl, &old);
	raise(sig);				  /* pending: every thread blocks it */
	pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* delivered here: every thread stops */
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	sigaction(sig, &old, NULL);
}

/* Is the program stopped now (/proc/PID/stat state T)? */
static bool program_stopped(const struct run_proc *p)
{
	unsigned long long start;
	char state = 0;

	return tmpdir_proc_start(p->pid, &start, &state) == 0 && state == 'T';
}

/* After thpemu run was continued: the SIGCONT that did it is taken here, then the program goes
 * on (in the caller's group the group's SIGCONT reached it already). */
static void resumed(const struct run_proc *p)
{
	struct timespec zero = {0, 0};
	sigset_t cont;

	sigemptyset(&cont);
	sigaddset(&cont, SIGCONT);
	sigtimedwait(&cont, NULL, &zero);
	if (!p->own_group) {
		setpgid(0, 0); /* out of the caller's group again */
		if (program_stopped(p))
			kill(p->pid, SIGCONT);
		return;
	}
	hand_terminal(p);
	killpg(p->pgrp, SIGCONT);
}

/* The program stopped with sig: so does thpemu run, where the shell can see it. */
static void stopped(const struct run_proc *p, int sig)
{
	pid_t fg = p->own_group && p->tty >= 0 ? tcgetpgrp(p->tty) : -1;

	if (sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		return;
	if ((sig == SIGTTIN || sig == SIGTTOU) && fg == getpgrp()) {
		/* it met the terminal while thpemu run's group holds it: its turn (as sudo does) */
		if (tcsetpgrp(p->tty, p->pgrp) == 0) {
			killpg(p->pgrp, SIGCONT);
			return;
		}
	}
	if (fg >= 0 && fg == p->pgrp)
		tcsetpgrp(p->tty, getpgrp());
	if (!p->own_group)
		setpgid(0, p->caller_pgrp); /* stopped with the job, continued with it */
	stop_self(sig);
	resumed(p);
}

/* The program ended and is a zombie: what its last image was (name, real and effective uid),
 * before waitpid takes it away. */
static void look_at_zombie(struct run_proc *p)
{
	siginfo_t si = {0};
	char path[64], line[256];
	FILE *f;

	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
	    si.si_pid != p->pid)
		return;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Name:\t", 6)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(p->ended_comm, sizeof(p->ended_comm), "%.15s", line + 6);
		} else if (sscanf(line, "Uid:\t%u\t%u", &p->ended_uid, &p->ended_euid) == 2) {
			p->ended_seen = true;
		}
	}
	fclose(f);
}

/* The program's state changed (SIGCHLD): true once it ended, its wait status in *status. */
static bool reap(struct run_proc *p, int *status)
{
	look_at_zombie(p);
	for (;;) {
		pid_t r = waitpid(p->pid, status, WNOHANG | WUNTRACED);

		if (r == 0)
			return false;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*status = -1;
			return true;
		}
		if (!WIFSTOPPED(*status))
			return true;
		stopped(p, WSTOPSIG(*status));
	}
}

int run_proc_wait(struct run_proc *p)
{
	int status = -1;
	siginfo_t si;
	sigset_t set;

	wait_set(&set);
	for (;;) {
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0 && errno == EINTR)
			continue;
		if (sig < 0)
			break;
		if (sig == SIGCHLD) {
			if (reap(p, &status))
				return status;
		} else if (sig == SIGCONT) {
			continued(p, &si);
		} else {
			relay(p, sig, &si);
		}
	}
	while (waitpid(p->pid, &status, 0) < 0) /* sigwaitinfo failed: wait without relaying */
		if (errno != EINTR)
			return -1;
	return status;
}

void run_proc_end(struct run_proc *p)
{
	if (p->keeper > 0) { /* the program is gone: nothing to keep */
		kill(p->keeper, SIGKILL);
		while (waitpid(p->keeper, NULL, 0) < 0 && errno == EINTR)
			;
		p->keeper = -1;
	}
	if (p->own_group && p->tty >= 0 && p->pid > 0 && tcgetpgrp(p->tty) == p->pgrp)
		tcsetpgrp(p->tty, getpgrp());
	if (p->tty >= 0)
		close(p->tty);
	p->tty = -1;
}

void run_proc_die_like(int wait_status)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	struct rlimit none = {0, 0};
	sigset_t one;
	int sig;

	if (wait_status < 0 || !WIFSIGNALED(wait_status))
		return;
	sig = WTERMSIG(wait_status);
	fflush(NULL);
	setrlimit(RLIMIT_CORE,
		  &none); /* the program's core is the program's, thpemu run leaves none */
	prctl(PR_SET_DUMPABLE, 0);
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}
