/* A program that shuts down gracefully on signals, for thpemu run's signal tests.
 *
 *   sigcount GRACE_MS READY SIG...   count each SIG (INT, TERM, HUP, USR1, ...) with a handler;
 *                                    once one arrived, wait GRACE_MS for more, then print
 *                                    "SIG N" for each and exit 0. READY is created once the
 *                                    handlers are in place ("-": none).
 *   sigcount state                   print what it inherited: blocked signals, SIGPIPE's
 *                                    disposition, its process group and the terminal's
 *                                    foreground group ("pgrp=own" when it leads its group)
 *   sigcount read                    print "reading", read one line from stdin (on a terminal
 *                                    only its foreground group may) and print "read: LINE"
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXSIG 65

static volatile sig_atomic_t counts[MAXSIG], total;

static void on_signal(int sig)
{
	counts[sig]++;
	total++;
}

static int sig_by_name(const char *name)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"INT", SIGINT},	{"TERM", SIGTERM},   {"HUP", SIGHUP},
		     {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},   {"USR2", SIGUSR2},
		     {"CONT", SIGCONT}, {"WINCH", SIGWINCH}, {"ALRM", SIGALRM}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].name, name))
			return names[i].sig;
	return -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0)
		;
}

static int state(void)
{
	struct sigaction sa;
	sigset_t mask;
	unsigned long bits = 0;
	int tty = open("/dev/tty", O_RDONLY | O_CLOEXEC);
	pid_t fg = tty >= 0 ? tcgetpgrp(tty) : -1;

	sigprocmask(SIG_BLOCK, NULL, &mask);
	for (int s = 1; s < MAXSIG; s++)
		if (sigismember(&mask, s) == 1)
			bits |= 1UL << (s - 1);
	sigaction(SIGPIPE, NULL, &sa);
	printf("blocked=%lx\n", bits);
	printf("sigpipe=%s\n", sa.sa_handler == SIG_IGN	  ? "ignored"
			       : sa.sa_handler == SIG_DFL ? "default"
							  : "handled");
	printf("pgrp=%s\n", getpgrp() == getpid() ? "own" : "inherited");
	printf("foreground=%s\n", tty < 0 ? "no-tty" : fg == getpgrp() ? "yes" : "no");
	return 0;
}

static int read_line(void)
{
	char line[256];

	printf("reading\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("read: %s", line);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	int sigs[16], n = 0;
	long grace;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 2 && !strcmp(argv[1], "state"))
		return state();
	if (argc == 2 && !strcmp(argv[1], "read"))
		return read_line();
	if (argc < 4) {
		fprintf(stderr, "usage: sigcount GRACE_MS READY SIG... | state | read\n");
		return 2;
	}
	grace = atol(argv[1]);
	sigemptyset(&sa.sa_mask);
	for (int i = 3; i < argc && n < 16; i++) {
		int s = sig_by_name(argv[i]);

		if (s < 0) {
			fprintf(stderr, "sigcount: unknown signal %s\n", argv[i]);
			return 2;
		}
		sigaction(s, &sa, NULL);
		sigs[n++] = s;
	}
	alarm(60); /* a test that never signals does not leave it behind */
	if (strcmp(argv[2], "-"))
		close(open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	while (!total)
		pause();
	sleep_ms(grace);
	for (int i = 0; i < n; i++)
		printf("%s %d\n", argv[3 + i], (int)counts[sigs[i]]);
	return 0;
}
