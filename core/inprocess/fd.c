/* The emulator's descriptors: a zone at the top of RLIMIT_NOFILE the program cannot reach.
 *
 * The kernel allocates the lowest free descriptor below the soft limit and refuses dup2/dup3
 * and F_DUPFD at or above it (fs/file.c: alloc_fd, do_dup2 via ksys_dup3, f_dupfd). So a
 * descriptor numbered at or above the soft limit can never be handed to the program by open(2),
 * nor overwritten by its dup2(2). The zone is the top GUARD_FD_ZONE numbers below the hard
 * limit; the program is shown a hard limit lowered by the zone (as valgrind shows its client),
 * so that whatever soft limit it sets stays below the zone. Moving a descriptor up there needs
 * the soft limit raised for the duration of one F_DUPFD_CLOEXEC; a getrlimit of the program in
 * that window is answered with the soft limit it set.
 *
 * Tracking is a small table read without locks (close(2) is async-signal-safe and checks it);
 * writers serialise on a spin lock held only around system calls that cannot block.
 */
#include "inprocess/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/sys.h"

static int zone_on;
static unsigned zone_lo, zone_hi;   /* [lo, hi): hi is the real hard limit */
static int tracked[GUARD_FD_TRACK]; /* fd + 1, 0 = empty */
/* Tracked descriptors a fork child keeps (fd + 1, 0 = empty): those a library the emulator uses
 * holds in its own static state, which the child inherits (libunwind's address-validation pipe).
 * Closing them in the child would leave that state naming closed numbers, and the library would
 * "re-open" them from several threads at once, closing numbers the program reuses meanwhile. */
static int kept[4];
static unsigned ntracked_low;	   /* tracked descriptors below zone_lo */
static int wlock;		   /* writers: tracking table, zone, the soft limit */
static int window;		   /* the soft limit is raised by us (atomic) */
static uint64_t window_soft;	   /* the program's soft limit meanwhile */
static uint64_t nr_open = 1048576; /* fs.nr_open: the most a hard limit can be */
static uint64_t lowered_from;	   /* the program's soft limit before guard_fd_init lowered it */
static int batch; /* the window is a batch's (guard_fd_batch_begin): writers' lock */

struct rlim64 {
	uint64_t cur, max;
};

static long raw_prlimit(int pid, int res, const struct rlim64 *nl, struct rlim64 *ol)
{
	return sys_call4(SYS_prlimit64, pid, res, nl, ol);
}

static void lock(void)
{
	while (__atomic_exchange_n(&wlock, 1, __ATOMIC_ACQUIRE))
		;
}

static void unlock(void)
{
	__atomic_store_n(&wlock, 0, __ATOMIC_RELEASE);
}

static void read_nr_open(void)
{
	char buf[24];
	long fd = sys_call4(SYS_openat, AT_FDCWD, "/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC, 0);
	long n;
	uint64_t v = 0;

	if (fd < 0)
		return;
	n = sys_read((int)fd, buf, sizeof(buf) - 1);
	sys_close((int)fd);
	for (long i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(buf[i] - '0');
	if (v)
		nr_open = v;
}

/* The zone below a hard limit (none below GUARD_FD_MIN_HARD). Writers' lock held. Descriptors
 * taken in an earlier zone stay where they are (their users hold the number): a zone that moved
 * up leaves them below it, where they are found the slow way. */
static void set_zone(uint64_t hard)
{
	unsigned low = 0;
	bool on = hard >= GUARD_FD_MIN_HARD && hard <= nr_open;

	if (on) {
		zone_hi = (unsigned)hard;
		zone_lo = zone_hi - GUARD_FD_ZONE;
	}
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++) {
		int v = __atomic_load_n(&tracked[i], __ATOMIC_RELAXED);

		low += v && (!on || (unsigned)(v - 1) < zone_lo);
	}
	__atomic_store_n(&ntracked_low, low, __ATOMIC_RELEASE);
	__atomic_store_n(&zone_on, on, __ATOMIC_RELEASE);
}

int guard_fd_init(void)
{
	struct rlim64 cur;
	long rc;

	read_nr_open();
	rc = raw_prlimit(0, RLIMIT_NOFILE, NULL, &cur);
	if (rc < 0)
		return (int)rc;
	lock();
	set_zone(cur.max);
	if (zone_on && cur.cur > zone_lo) { /* the program could reach into it: lower its view */
		struct rlim64 nl = {zone_lo, cur.max};

		rc = raw_prlimit(0, RLIMIT_NOFILE, &nl, NULL);
		if (rc < 0)
			__atomic_store_n(&zone_on, 0, __ATOMIC_RELEASE);
		else
			lowered_from = cur.cur;
	}
	unlock();
	return zone_on ? 0 : (rc < 0 ? (int)rc : -ENOSPC);
}

void guard_fd_fini(void)
{
	struct rlim64 cur;

	lock();
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++)
		if (__atomic_load_n(&tracked[i], __ATOMIC_RELAXED))
			goto out; /* something is held: keep its numbers out of reach */
	if (lowered_from && raw_prlimit(0, RLIMIT_NOFILE, NULL, &cur) == 0) {
		cur.cur = lowered_from < cur.max ? lowered_from : cur.max;
		raw_prlimit(0, RLIMIT_NOFILE, &cur, NULL);
	}
	lowered_from = 0;
	__atomic_store_n(&zone_on, 0, __ATOMIC_RELEASE);
out:
	unlock();
}

void guard_fd_zone(unsigned *lo, unsigned *hi)
{
	bool on = __atomic_load_n(&zone_on, __ATOMIC_ACQUIRE);

	*lo = on ? zone_lo : 0;
	*hi = on ? zone_hi : 0;
}

/* ---- tracking ---------------------------------------------------------------------------------
 */

static bool below_zone(int fd)
{
	return !__atomic_load_n(&zone_on, __ATOMIC_ACQUIRE) || (unsigned)fd < zone_lo;
}

/* Writers' lock held. */
static int track_locked(int fd)
{
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++) {
		if (__atomic_load_n(&tracked[i], __ATOMIC_RELAXED) == 0) {
			if (below_zone(fd))
				__atomic_fetch_add(&ntracked_low, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&tracked[i], fd + 1, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -EMFILE;
}

static bool is_kept(int fd)
{
	for (unsigned i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (kept[i] == fd + 1)
			return true;
	return false;
}

/* Writers' lock held. */
static bool untrack_locked(int fd)
{
	for (unsigned i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (kept[i] == fd + 1)
			kept[i] = 0;
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++) {
		if (__atomic_load_n(&tracked[i], __ATOMIC_RELAXED) == fd + 1) {
			__atomic_store_n(&tracked[i], 0, __ATOMIC_RELEASE);
			if (below_zone(fd) && ntracked_low)
				__atomic_fetch_sub(&ntracked_low, 1, __ATOMIC_RELAXED);
			return true;
		}
	}
	return false;
}

bool guard_fd_is_ours(int fd)
{
	if (fd < 0)
		return false;
	if (__atomic_load_n(&zone_on, __ATOMIC_ACQUIRE) && (unsigned)fd < zone_lo &&
	    !__atomic_load_n(&ntracked_low, __ATOMIC_ACQUIRE))
		return false;
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++)
		if (__atomic_load_n(&tracked[i], __ATOMIC_ACQUIRE) == fd + 1)
			return true;
	return false;
}

/* The program's soft limit back (a batch's window closes; writers' lock held). */
static void batch_end_locked(void)
{
	struct rlim64 cur;

	if (!batch)
		return;
	if (raw_prlimit(0, RLIMIT_NOFILE, NULL, &cur) == 0) {
		cur.cur = window_soft;
		raw_prlimit(0, RLIMIT_NOFILE, &cur, NULL);
	}
	batch = 0;
	__atomic_store_n(&window, 0, __ATOMIC_RELEASE);
}

void guard_fd_batch_begin(void)
{
	struct rlim64 old, raised;

	lock();
	if (!batch && __atomic_load_n(&zone_on, __ATOMIC_ACQUIRE) &&
	    raw_prlimit(0, RLIMIT_NOFILE, NULL, &old) == 0) {
		window_soft = old.cur;
		__atomic_store_n(&window, 1, __ATOMIC_RELEASE);
		raised.cur = old.max;
		raised.max = old.max;
		if (raw_prlimit(0, RLIMIT_NOFILE, &raised, NULL) == 0)
			batch = 1;
		else
			__atomic_store_n(&window, 0, __ATOMIC_RELEASE);
	}
	unlock();
}

void guard_fd_batch_end(void)
{
	lock();
	batch_end_locked();
	unlock();
}

/* Duplicate fd into the zone (writers' lock held). Returns the new descriptor or -errno. */
static int dup_up_locked(int fd)
{
	struct rlim64 old, raised;
	long nfd, rc;

	if (batch) { /* raised already */
		nfd = sys_call3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, zone_lo);
		goto check;
	}
	rc = raw_prlimit(0, RLIMIT_NOFILE, NULL, &old);
	if (rc < 0)
		return (int)rc;
	window_soft = old.cur;
	__atomic_store_n(&window, 1, __ATOMIC_RELEASE);
	raised.cur = old.max;
	raised.max = old.max;
	rc = raw_prlimit(0, RLIMIT_NOFILE, &raised, NULL);
	nfd = rc < 0 ? rc : sys_call3(SYS_fcntl, fd, F_DUPFD_CLOEXEC, zone_lo);
	if (rc == 0)
		raw_prlimit(0, RLIMIT_NOFILE, &old, NULL);
	__atomic_store_n(&window, 0, __ATOMIC_RELEASE);
check:
	if (nfd >= 0 && (unsigned)nfd >= zone_hi) { /* cannot happen below the hard limit */
		sys_close((int)nfd);
		nfd = -EMFILE;
	}
	return (int)nfd;
}

int guard_fd_own(int fd)
{
	int nfd = -1, rc;

	if (fd < 0)
		return fd;
	lock();
	if (__atomic_load_n(&zone_on, __ATOMIC_ACQUIRE) && (unsigned)fd < zone_lo)
		nfd = dup_up_locked(fd);
	if (nfd >= 0) {
		sys_close(fd);
		fd = nfd;
	}
	/* else: no zone, or it is full: the descriptor stays where it is, tracked all the same */
	rc = track_locked(fd);
	unlock();
	if (rc < 0) {
		sys_close(fd);
		return rc;
	}
	return fd;
}

/* ---- descriptors made while the program runs --------------------------------------------------
 *
 * A descriptor the emulator makes lands in the program's range (the kernel gives the lowest free
 * number) until guard_fd_own moves it up. A program that closes a number it no longer holds
 * (bash closes a pipe's write end twice: EBADF natively) would close the emulator's descriptor
 * if its close came in between, and its next pipe would take the number: the emulator's next
 * read would take the pipe's data. So a making (guard_fd_make_begin .. _end) and a program's
 * close or dup2 onto a number (guard_fd_close_begin .. _end) exclude each other, Dekker's way:
 * each side announces itself, then looks at the other; the maker waits while closes are in
 * flight, a closer steps back and waits while a making is. Both sides are a few system calls
 * long. A thread that interrupted its own close or making (a signal handler) does not wait for
 * itself. A wait is bounded (GUARD_MAKE_WAIT_NS): a closer blocked for seconds (a slow device's
 * flush) delays the emulator no longer than that. */
static int making, closing;	  /* in flight, all threads */
static __thread int self_making;  /* this thread is between make_begin and make_end */
static __thread int self_closing; /* this thread is between close_begin and close_end */

#define GUARD_MAKE_WAIT_NS (2ULL * 1000000000ULL)

/* Wait while *w is non-zero, at most GUARD_MAKE_WAIT_NS: yield first, then sleep 50 us. */
static void wait_clear(const int *w)
{
	uint64_t until = 0;

	for (unsigned spins = 0; __atomic_load_n(w, __ATOMIC_SEQ_CST); spins++) {
		if (spins < 64) {
			sys_call0(SYS_sched_yield);
			continue;
		}
		if (!until)
			until = clock_now_ns() + GUARD_MAKE_WAIT_NS;
		else if (clock_now_ns() > until)
			return;
		struct timespec ts = {0, 50000};
		sys_call2(SYS_nanosleep, &ts, NULL);
	}
}

void guard_fd_make_begin(void)
{
	self_making++;
	__atomic_fetch_add(&making, 1, __ATOMIC_SEQ_CST);
	if (!self_closing)
		wait_clear(&closing);
}

void guard_fd_make_end(void)
{
	__atomic_fetch_sub(&making, 1, __ATOMIC_SEQ_CST);
	self_making--;
}

void guard_fd_close_begin(void)
{
	self_closing++;
	for (;;) {
		__atomic_fetch_add(&closing, 1, __ATOMIC_SEQ_CST);
		if (self_making || !__atomic_load_n(&making, __ATOMIC_SEQ_CST))
			return;
		__atomic_fetch_sub(&closing, 1, __ATOMIC_SEQ_CST);
		wait_clear(&making);
	}
}

void guard_fd_close_end(void)
{
	__atomic_fetch_sub(&closing, 1, __ATOMIC_SEQ_CST);
	self_closing--;
}

int guard_fd_open(const char *path)
{
	long fd;

	guard_fd_make_begin();
	fd = sys_call4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0)
		fd = guard_fd_own((int)fd);
	guard_fd_make_end();
	return (int)fd;
}

void guard_fd_fork_prepare(void)
{
	lock();
}

void guard_fd_fork_parent(void)
{
	unlock();
}

void guard_fd_fork_child(void)
{
	/* closes and makings in flight were the parent's other threads': none is in the child (the
	 * forking thread is in neither: fork is not called from inside them) */
	__atomic_store_n(&making, self_making, __ATOMIC_SEQ_CST);
	__atomic_store_n(&closing, self_closing, __ATOMIC_SEQ_CST);
	/* the holder, if any, is not in the child: after a prepare it was the forking thread; after
	 * a raw clone a thread of the parent may have been in dup_up_locked with the soft limit
	 * raised, which the child gives back */
	if (__atomic_load_n(&window, __ATOMIC_ACQUIRE)) {
		struct rlim64 cur;

		if (raw_prlimit(0, RLIMIT_NOFILE, NULL, &cur) == 0) {
			cur.cur = window_soft;
			raw_prlimit(0, RLIMIT_NOFILE, &cur, NULL);
		}
		__atomic_store_n(&window, 0, __ATOMIC_RELEASE);
	}
	batch = 0;
	unlock();
}

void guard_fd_close(int fd)
{
	if (fd < 0)
		return;
	lock();
	untrack_locked(fd);
	unlock();
	sys_close(fd);
}

void guard_fd_close_all(void)
{
	lock();
	for (unsigned i = 0; i < GUARD_FD_TRACK; i++) {
		int v = __atomic_load_n(&tracked[i], __ATOMIC_RELAXED);

		if (v && !is_kept(v - 1)) {
			__atomic_store_n(&tracked[i], 0, __ATOMIC_RELEASE);
			if (below_zone(v - 1) && ntracked_low)
				__atomic_fetch_sub(&ntracked_low, 1, __ATOMIC_RELAXED);
			sys_close(v - 1);
		}
	}
	unlock();
}

void guard_fd_keep_across_fork(int fd)
{
	lock();
	for (unsigned i = 0; i < sizeof(kept) / sizeof(kept[0]) && fd >= 0; i++)
		if (!kept[i]) {
			kept[i] = fd + 1;
			break;
		}
	unlock();
}

/* ---- the program's side --------------------------------------------------------------------- */

/* The tracked descriptors in [lo, hi], ascending; returns how many. */
static unsigned tracked_in(unsigned lo, unsigned hi, unsigned *out)
{
	unsigned n = 0;

	for (unsigned i = 0; i < GUARD_FD_TRACK; i++) {
		int v = __atomic_load_n(&tracked[i], __ATOMIC_ACQUIRE);
		unsigned fd = (unsigned)v - 1, j;

		if (!v || fd < lo || fd > hi)
			continue;
		for (j = n; j > 0 && out[j - 1] > fd; j--)
			out[j] = out[j - 1];
		out[j] = fd;
		n++;
	}
	return n;
}

long guard_close_range(unsigned lo, unsigned hi, unsigned flags)
{
	unsigned ours[GUARD_FD_TRACK], n, from = lo;
	long rc = 0;

	if (flags & ~(unsigned)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC))
		return -EINVAL;
	if (lo > hi)
		return -EINVAL;
	/* CLOSE_RANGE_UNSHARE gives the calling thread a copy of the table first: the emulator's
	 * threads keep theirs, so the copy may lose the emulator's numbers. */
	if (flags & CLOSE_RANGE_UNSHARE)
		return sys_call3(SYS_close_range, lo, hi, flags);
	n = tracked_in(lo, hi, ours);
	for (unsigned i = 0; i <= n && rc == 0; i++) {
		unsigned to = i < n ? ours[i] : hi;

		if (i < n && to == from) { /* ours at the start of what is left */
			from = to + 1;
			continue;
		}
		if (i < n)
			to--;
		if (from <= to && from <= hi)
			rc = sys_call3(SYS_close_range, from, to, flags);
		if (i < n)
			from = ours[i] + 1;
		if (from == 0) /* wrapped past UINT_MAX */
			break;
	}
	return rc;
}

int guard_prlimit(int pid, int resource, const struct rlimit *new_lim, struct rlimit *old_lim)
{
	struct rlim64 cur, nl;
	long rc;

	if (resource != RLIMIT_NOFILE || (pid != 0 && pid != sys_getpid()) ||
	    !__atomic_load_n(&zone_on, __ATOMIC_ACQUIRE))
		return (int)raw_prlimit(pid, resource, (const struct rlim64 *)(const void *)new_lim,
					(struct rlim64 *)(void *)old_lim);
	if (new_lim && new_lim->rlim_cur > new_lim->rlim_max)
		return -EINVAL;
	if (new_lim) {
		lock(); /* only a change serialises with dup_up_locked: a get may run in a handler
			 */
		batch_end_locked(); /* the change applies to the program's own limit */
	}
	rc = raw_prlimit(0, RLIMIT_NOFILE, NULL, &cur);
	if (rc == 0 && new_lim) {
		nl.cur = new_lim->rlim_cur;
		nl.max = new_lim->rlim_max;
		if (nl.max <= nr_open - GUARD_FD_ZONE)
			nl.max += GUARD_FD_ZONE; /* the zone stays above what the program may use */
		else if (nl.max <= nr_open)
			nl.max = nr_open;
		rc = raw_prlimit(0, RLIMIT_NOFILE, &nl, NULL);
		if (rc == 0)
			set_zone(nl.max);
	}
	if (new_lim)
		unlock();
	if (rc < 0)
		return (int)rc;
	if (old_lim) {
		old_lim->rlim_cur =
		    __atomic_load_n(&window, __ATOMIC_ACQUIRE) ? window_soft : cur.cur;
		old_lim->rlim_max = cur.max > GUARD_FD_ZONE ? cur.max - GUARD_FD_ZONE : cur.max;
		if (old_lim->rlim_cur > old_lim->rlim_max)
			old_lim->rlim_cur = old_lim->rlim_max;
	}
	return 0;
}
