/* core/inprocess/fd.c: a descriptor the emulator makes while the program runs and the program's
 * close(2) of a number exclude each other (the program closing a number it no longer holds must
 * not close the emulator's descriptor while it still sits in the program's range, nor may the
 * program's next pipe take that number). The preload's close, close_range, dup2 and dup3 run
 * between guard_fd_close_begin and _end, as the "program" threads below do. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "inprocess/guard.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int opened_fd = -2;
static int done;

static void *emulator_opens(void *arg)
{
	(void)arg;
	opened_fd = guard_fd_open("/proc/self/statm");
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A program's close in flight holds the emulator's open back until it is over. */
TEST(open_waits_for_a_close_in_flight)
{
	pthread_t th;

	guard_fd_close_begin();
	ASSERT_EQ(pthread_create(&th, NULL, emulator_opens, NULL), 0);
	sleep_ms(200);
	EXPECT_EQ(__atomic_load_n(&done, __ATOMIC_ACQUIRE), 0);
	guard_fd_close_end();
	ASSERT_EQ(pthread_join(th, NULL), 0);
	EXPECT_EQ(done, 1);
	EXPECT(opened_fd >= 0);
	EXPECT(guard_fd_is_ours(opened_fd));
	guard_fd_close(opened_fd);
}

static void *program_closes(void *arg)
{
	(void)arg;
	guard_fd_close_begin();
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	guard_fd_close_end();
	return NULL;
}

/* ... and a making in flight holds the program's close back. */
TEST(close_waits_for_a_making_in_flight)
{
	pthread_t th;

	guard_fd_make_begin();
	ASSERT_EQ(pthread_create(&th, NULL, program_closes, NULL), 0);
	sleep_ms(200);
	EXPECT_EQ(__atomic_load_n(&done, __ATOMIC_ACQUIRE), 0);
	guard_fd_make_end();
	ASSERT_EQ(pthread_join(th, NULL), 0);
	EXPECT_EQ(done, 1);
}

/* A thread inside its own close (a signal handler that interrupted it calls into the emulator)
 * does not wait for itself: the bounded wait is 2 s, the open here takes far less. */
TEST(a_thread_does_not_wait_for_itself)
{
	uint64_t t0;
	int fd;

	guard_fd_close_begin();
	t0 = now_ns();
	fd = guard_fd_open("/proc/self/statm");
	EXPECT(now_ns() - t0 < 1500000000ULL);
	ASSERT(fd >= 0);
	guard_fd_close(fd);
	guard_fd_close_end();

	guard_fd_make_begin();
	t0 = now_ns();
	guard_fd_close_begin();
	guard_fd_close_end();
	EXPECT(now_ns() - t0 < 1500000000ULL);
	guard_fd_make_end();
}

/* A close that never ends (a thread blocked in a slow device's flush) delays a making by the
 * bound, not for ever. */
TEST(the_wait_is_bounded)
{
	pthread_t th;

	guard_fd_close_begin();
	ASSERT_EQ(pthread_create(&th, NULL, emulator_opens, NULL), 0);
	ASSERT_EQ(pthread_join(th, NULL), 0); /* the harness's timeout fails a hang */
	EXPECT(opened_fd >= 0);
	guard_fd_close(opened_fd);
	guard_fd_close_end();
}

/* The failure itself, raced: the emulator reads statm again and again through descriptors it
 * opens; the program makes pipes, and after closing each write end closes it again, as bash
 * does (through the preload's path: refused when the number is the emulator's). Every byte the
 * program writes is read back by the program, and every statm the emulator reads is one. */
static int stop;
static long bad_emulator_reads, emulator_reads;

static void *emulator_loop(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		char buf[128];
		int fd = guard_fd_open("/proc/self/statm");
		ssize_t n;

		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		guard_fd_close(fd);
		emulator_reads++;
		if (n <= 0 || buf[0] < '0' || buf[0] > '9')
			bad_emulator_reads++;
	}
	return NULL;
}

static void program_close(int fd)
{
	guard_fd_close_begin();
	if (!guard_fd_is_ours(fd))
		close(fd);
	guard_fd_close_end();
}

TEST(a_stale_close_never_takes_the_emulators_descriptor)
{
	pthread_t th;
	uint64_t until;
	long lost = 0, rounds = 0;

	guard_fd_init(); /* the zone, as in a preloaded program */
	ASSERT_EQ(pthread_create(&th, NULL, emulator_loop, NULL), 0);
	until = now_ns() + 1500000000ULL;
	while (now_ns() < until) {
		int p[2];
		char c = 0;

		ASSERT_EQ(pipe(p), 0);
		ASSERT_EQ(write(p[1], "x", 1), 1);
		program_close(p[1]);
		program_close(p[1]); /* stale: EBADF natively, or (raced) the emulator's number */
		if (read(p[0], &c, 1) != 1 || c != 'x')
			lost++;
		program_close(p[0]);
		rounds++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(pthread_join(th, NULL), 0);
	printf("# %ld program rounds, %ld emulator reads\n", rounds, emulator_reads);
	EXPECT_EQ(lost, 0);
	EXPECT_EQ(bad_emulator_reads, 0);
	EXPECT(rounds > 0 && emulator_reads > 0);
}

/* The process's RLIMIT_NOFILE as the kernel holds it (prlimit64 itself, no library in between). */
static struct rlimit raw_nofile(void)
{
	struct rlimit r = {0, 0};

	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &r) != 0)
		r.rlim_cur = r.rlim_max = 0;
	return r;
}

/* Start-up's descriptors move to the zone under one raise of the soft limit (guard_fd_batch_*):
 * the kernel's soft limit is raised to the hard one for the whole batch (not per descriptor),
 * they land above the program's soft limit, the program is shown its own limit meanwhile and has
 * it back afterwards; a fork child ends its parent's batch (the parent's stays); a setrlimit of
 * the program inside a batch ends it and stays. */
TEST(a_batch_moves_descriptors_under_one_raise)
{
	struct rlimit real, seen, want, after, raw;
	int a, b, c, status;
	pid_t pid;

	if (guard_fd_init() < 0) {
		printf("# no descriptor zone here (hard limit too low): skipped\n");
		return;
	}
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &real), 0); /* not interposed here: the raw limit */
	ASSERT(real.rlim_cur > 3);
	ASSERT(real.rlim_cur < real.rlim_max); /* guard_fd_init left the zone above it */
	guard_fd_batch_begin();
	raw = raw_nofile();
	EXPECT_EQ(raw.rlim_cur, real.rlim_max); /* raised once, at the start */
	a = guard_fd_own(dup(0));
	raw = raw_nofile();
	EXPECT_EQ(raw.rlim_cur, real.rlim_max); /* still raised between two moves */
	b = guard_fd_own(dup(0));
	ASSERT(a >= 0 && b >= 0);
	EXPECT((rlim_t)a >= real.rlim_cur && (rlim_t)b >= real.rlim_cur);
	EXPECT(guard_fd_is_ours(a) && guard_fd_is_ours(b));
	raw = raw_nofile();
	EXPECT_EQ(raw.rlim_cur, real.rlim_max);
	ASSERT_EQ(guard_prlimit(0, RLIMIT_NOFILE, NULL, &seen), 0);
	EXPECT_EQ(seen.rlim_cur, real.rlim_cur); /* the program's view: its own limit */

	/* a fork child (atfork: prepare, then child/parent) has the program's soft limit back */
	guard_fd_fork_prepare();
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		guard_fd_fork_child();
		raw = raw_nofile();
		_exit(raw.rlim_cur == real.rlim_cur ? 0 : 1);
	}
	guard_fd_fork_parent();
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	raw = raw_nofile();
	EXPECT_EQ(raw.rlim_cur, real.rlim_max); /* the parent's batch goes on */

	guard_fd_batch_end();
	raw = raw_nofile();
	EXPECT_EQ(raw.rlim_cur, real.rlim_cur);
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
	EXPECT_EQ(after.rlim_cur, real.rlim_cur);

	guard_fd_batch_begin();
	want.rlim_cur = real.rlim_cur - 1;
	want.rlim_max = seen.rlim_max; /* the program's view of the hard limit */
	EXPECT_EQ(guard_prlimit(0, RLIMIT_NOFILE, &want, NULL), 0);
	c = guard_fd_own(dup(0)); /* moved the single way: the batch is over */
	EXPECT(c >= 0 && (rlim_t)c >= real.rlim_cur && guard_fd_is_ours(c));
	guard_fd_batch_end();
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
	EXPECT_EQ(after.rlim_cur, want.rlim_cur);

	want.rlim_cur = real.rlim_cur;
	EXPECT_EQ(guard_prlimit(0, RLIMIT_NOFILE, &want, NULL), 0);
	guard_fd_close(a);
	guard_fd_close(b);
	guard_fd_close(c);
}

TEST_MAIN()
