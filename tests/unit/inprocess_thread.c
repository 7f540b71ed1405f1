/* core/inprocess/thread.c: emulator threads see every credential change the program makes on itself
 * (PR_SET_KEEPCAPS here: per thread, no privilege needed), including a thread that the program's
 * call raced with before it first ran. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "inprocess/guard.h"
#include "harness.h"

struct emu_thread {
	struct guard_thread gt;
	pthread_t th;
	uint32_t go;   /* futex: the thread may start (late-start test) */
	uint32_t wake; /* futex: the wake function bumps it */
	uint32_t stop; /* futex */
	int keepcaps;  /* PR_GET_KEEPCAPS as the thread saw it before leaving */
	bool late;     /* wait for go before guard_thread_started */
};

static void futex_wait(uint32_t *w, uint32_t v, long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, ms ? &ts : NULL, NULL, 0);
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

static void emu_ping(void *arg)
{
	struct emu_thread *t = arg;

	__atomic_fetch_add(&t->wake, 1, __ATOMIC_RELEASE);
	futex_wake(&t->wake);
}

static void *emu_main(void *arg)
{
	struct emu_thread *t = arg;

	while (t->late && !__atomic_load_n(&t->go, __ATOMIC_ACQUIRE))
		futex_wait(&t->go, 0, 0);
	guard_thread_started(&t->gt);
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		uint32_t v = __atomic_load_n(&t->wake, __ATOMIC_ACQUIRE);

		guard_thread_sync(&t->gt);
		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
			break;
		futex_wait(&t->wake, v, 1000);
	}
	guard_thread_sync(&t->gt);
	t->keepcaps = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);
	guard_thread_leave(&t->gt);
	return NULL;
}

static void emu_stop(struct emu_thread *t)
{
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	emu_ping(t);
	__atomic_store_n(&t->go, 1, __ATOMIC_RELEASE);
	futex_wake(&t->go);
	pthread_join(t->th, NULL);
}

static void *release_later(void *arg)
{
	struct emu_thread *t = arg;
	struct timespec ts = {0, 100 * 1000000L};

	nanosleep(&ts, NULL);
	__atomic_store_n(&t->go, 1, __ATOMIC_RELEASE);
	futex_wake(&t->go);
	return NULL;
}

static int set_keepcaps_everywhere(int on)
{
	long a[5] = {PR_SET_KEEPCAPS, on, 0, 0, 0};

	if (prctl(PR_SET_KEEPCAPS, on, 0, 0, 0) != 0)
		return -errno;
	return guard_cred_replicate(GUARD_CRED_PRCTL, a, NULL, NULL);
}

TEST(a_sleeping_thread_is_woken_and_takes_the_change)
{
	static struct emu_thread t;

	ASSERT_EQ(guard_thread_create(&t.th, &t.gt, emu_ping, &t, emu_main, &t, "emu"), 0);
	ASSERT_EQ(set_keepcaps_everywhere(1), 0);
	emu_stop(&t);
	EXPECT_EQ(t.keepcaps, 1);
}

/* The thread is created, but has not run when the program changes its credentials: it starts
 * with its creator's (unchanged) credentials, so it must still apply the change - a thread that
 * registered itself once running used to record the request as seen without applying it. */
TEST(a_thread_that_had_not_run_yet_takes_the_change)
{
	static struct emu_thread t = {.late = true};
	pthread_t rel;
	unsigned ntids;
	int tids[8];

	ASSERT_EQ(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 0);
	ASSERT_EQ(guard_thread_create(&t.th, &t.gt, emu_ping, &t, emu_main, &t, "emu-late"), 0);
	/* not running yet: registered, but with no thread id to list */
	ntids = guard_thread_tids(tids, 8);
	EXPECT_EQ(ntids, 0);
	ASSERT_EQ(pthread_create(&rel, NULL, release_later, &t), 0);
	EXPECT_EQ(set_keepcaps_everywhere(1), 0); /* waits for the late thread */
	pthread_join(rel, NULL);
	EXPECT_EQ(guard_thread_tids(tids, 8), 1);
	emu_stop(&t);
	EXPECT_EQ(t.keepcaps, 1);
}

/* A call that fails on an emulator thread is counted, and nothing waits for ever. */
TEST(a_change_an_emulator_thread_cannot_make_is_counted)
{
	static struct emu_thread t;
	long a[5] = {PR_SET_KEEPCAPS, 7, 0, 0, 0}; /* EINVAL: only 0 or 1 */

	ASSERT_EQ(guard_thread_create(&t.th, &t.gt, emu_ping, &t, emu_main, &t, "emu"), 0);
	EXPECT_EQ(guard_cred_replicate(GUARD_CRED_PRCTL, a, NULL, NULL), 1);
	emu_stop(&t);
	EXPECT_EQ(t.keepcaps, 0);
}

TEST_MAIN()
