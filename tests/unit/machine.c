/* core/machine: one machine shared by real processes. The segment (fixed address, sparse,
 * attach by "PID:FD" from a fresh address space and from an exec'd program, -EEXIST, -EPROTO,
 * -ENOENT, the segment of another host than HOSTPID), the host's death (seen by every process,
 * what only it completes ends: a request to it, one to a process it can no longer reap), the
 * robust lock (an owner SIGKILLed holding it: one repair, or a taint, and the lock goes on
 * working), slots (take, leave, reap of a real dead process, reuse), and mailboxes
 * (round trips between processes, a stopped agent, a late answer, a dead agent, a requester
 * killed while waiting). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "machine/machine.h"
#include "util/clock.h"

#define MS 1000000ULL

static struct machine host;
static char err[256];

static void host_create(uint64_t meta, uint64_t arena)
{
	struct machine_config cfg = {.meta_bytes = meta, .arena_bytes = arena};

	err[0] = 0;
	ASSERT_EQ(machine_create(&cfg, &host, err, sizeof(err)), 0);
	ASSERT_EQ((uintptr_t)host.hdr, MACHINE_BASE);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Is anything mapped at addr? (msync: ENOMEM on an unmapped page) */
static bool mapped(uint64_t addr)
{
	return msync((void *)(uintptr_t)addr, 4096, MS_ASYNC) == 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* opendir's own */
}

/* Exit status of child pid (128 + signal when killed). */
static int wait_exit(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void put_int(int fd, int v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		_exit(3);
}

static int get_int(int fd)
{
	int v = -1;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return v;
}

/* fork(), the child dying with its parent (a failed test leaves no agent behind) */
static pid_t spawn(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(9);
	}
	return pid;
}

/* A fork child's own struct machine for the inherited mapping. */
static struct machine child_machine(void)
{
	struct machine c = host;

	machine_forked_child(&c);
	return c;
}

/* ---- the segment ---------------------------------------------------------------------------- */

TEST(create_maps_at_the_base_sparse_with_an_aligned_arena)
{
	uint64_t pool = 1ULL << 30, frames = pool / 4096;
	struct machine_config cfg = {.meta_bytes = machine_meta_bytes(pool),
				     .arena_bytes = pool,
				     .config = "THPEMU_POOL=1G\n"};
	struct machine_hdr *h;
	char rv[64], want[64], comm[32] = "";
	struct stat sb;
	blkcnt_t blocks0;
	void *p;
	int fd;

	EXPECT_GE(machine_meta_bytes(pool), frames * 31 + 4096);
	EXPECT_EQ(machine_meta_bytes(pool) % 4096, 0);
	ASSERT_EQ(machine_create(&cfg, &host, err, sizeof(err)), 0);
	h = host.hdr;
	ASSERT_EQ((uintptr_t)h, MACHINE_BASE);
	EXPECT(host.host);
	ASSERT_GE(host.fd, 0);
	EXPECT_EQ(fcntl(host.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	EXPECT_EQ(h->magic, MACHINE_MAGIC);
	EXPECT_EQ(h->version, MACHINE_VERSION);
	EXPECT_EQ(h->hdr_size, sizeof(*h));
	EXPECT_EQ(h->base, MACHINE_BASE);
	EXPECT_EQ(h->host_pid, getpid());
	EXPECT_EQ(h->arena_off % (2 << 20), 0);
	EXPECT_EQ(h->arena_len, pool);
	EXPECT_EQ(h->seg_size, h->arena_off + pool);
	EXPECT_EQ(host.len, h->seg_size);
	EXPECT_GE(h->alloc_off, sizeof(*h));
	EXPECT_GE(h->alloc_end - h->alloc_off, cfg.meta_bytes);
	EXPECT_LE(h->alloc_end, h->arena_off);
	EXPECT_EQ(machine_arena(&host), (char *)h + h->arena_off);
	ASSERT_STREQ(h->config, cfg.config);
	EXPECT_EQ(h->tainted, 0);
	EXPECT(!machine_tainted(&host));
	/* slot 0 is the host */
	fd = open("/proc/self/comm", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_GT(read(fd, comm, sizeof(comm) - 1), 0);
	close(fd);
	comm[strcspn(comm, "\n")] = 0;
	EXPECT_EQ(machine_slot(&host, 0)->state, MACHINE_SLOT_LIVE);
	EXPECT_EQ(machine_slot(&host, 0)->pid, getpid());
	ASSERT_STREQ(machine_slot(&host, 0)->comm, comm);
	EXPECT_EQ(machine_nr_live(&host), 0);
	EXPECT(machine_slot(&host, MACHINE_MAX_PROCS) == NULL);
	EXPECT(machine_slot(&host, -1) == NULL);

	/* sparse: a GiB of arena, only the header touched */
	ASSERT_EQ(fstat(host.fd, &sb), 0);
	EXPECT_EQ((uint64_t)sb.st_size, h->seg_size);
	EXPECT_LT((uint64_t)sb.st_blocks * 512, 1ULL << 20);
	blocks0 = sb.st_blocks;
	((volatile char *)machine_arena(&host))[pool / 2] = 1;
	ASSERT_EQ(fstat(host.fd, &sb), 0);
	EXPECT_LE((uint64_t)(sb.st_blocks - blocks0) * 512, 2 << 20);
	EXPECT_GT(sb.st_blocks, blocks0);

	/* offsets and pointers */
	p = machine_alloc(&host, 100);
	ASSERT(p);
	EXPECT(machine_at(&host, 0) == NULL);
	EXPECT_EQ(machine_off(&host, NULL), 0);
	EXPECT(machine_at(&host, machine_off(&host, p)) == p);

	machine_rendezvous(&host, rv, sizeof(rv));
	snprintf(want, sizeof(want), "%d:%d", getpid(), host.fd);
	ASSERT_STREQ(rv, want);

	fd = host.fd;
	machine_destroy(&host);
	EXPECT(!mapped(MACHINE_BASE));
	EXPECT_EQ(fcntl(fd, F_GETFD), -1);
	EXPECT_EQ(host.fd, -1);
	EXPECT(host.hdr == NULL);
}

static void *alloc_many(void *arg)
{
	char **out = arg;

	for (int i = 0; i < 500; i++)
		out[i] = machine_alloc(&host, 40);
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (char *const *)a, y = (uintptr_t) * (char *const *)b;

	return x < y ? -1 : x > y;
}

TEST(alloc_is_aligned_zeroed_bounded_and_shared)
{
	static char *got[1000];
	pthread_t th[2];
	char *lo, *hi, *p;
	size_t total = 0;

	host_create(64 << 10, 0);
	EXPECT(machine_arena(&host) == NULL);
	lo = (char *)host.hdr + host.hdr->alloc_off;
	hi = (char *)host.hdr + host.hdr->alloc_end;
	/* two threads at once: no block given twice */
	ASSERT_EQ(pthread_create(&th[0], NULL, alloc_many, got), 0);
	ASSERT_EQ(pthread_create(&th[1], NULL, alloc_many, got + 500), 0);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	qsort(got, 1000, sizeof(got[0]), cmp_ptr);
	for (int i = 0; i < 1000; i++) {
		ASSERT(got[i]);
		EXPECT_EQ((uintptr_t)got[i] % 64, 0);
		EXPECT(got[i] >= lo && got[i] + 40 <= hi);
		if (i)
			EXPECT_GE(got[i] - got[i - 1], 64);
	}
	/* zeroed, until the room is used up */
	while ((p = machine_alloc(&host, 1000))) {
		for (int i = 0; i < 1000; i++)
			ASSERT_EQ(p[i], 0);
		memset(p, 0xa5, 1000);
		EXPECT(p + 1000 <= hi);
		total += 1000;
	}
	EXPECT_GT(total, 0);
	EXPECT(machine_alloc(&host, (size_t)-1) == NULL);
}

TEST(alloc_is_one_bump_pointer_for_every_process)
{
	int fds[2];
	pid_t pid;
	char *mine;
	long theirs;

	host_create(1 << 20, 0);
	ASSERT_EQ(pipe(fds), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine();
		char *p = machine_alloc(&c, 128);

		p[0] = 'c';
		put_int(fds[1], (int)machine_off(&c, p));
		_exit(0);
	}
	theirs = get_int(fds[0]);
	ASSERT_EQ(wait_exit(pid), 0);
	ASSERT_GT(theirs, 0);
	EXPECT_EQ(((char *)machine_at(&host, (uint64_t)theirs))[0], 'c');
	mine = machine_alloc(&host, 128);
	ASSERT(mine);
	EXPECT_GE(machine_off(&host, mine), (uint64_t)theirs + 128);
}

TEST(attach_from_a_fresh_address_space)
{
	uint64_t *shared;
	char rv[64];
	pid_t pid;

	host_create(1 << 20, 4 << 20);
	shared = machine_alloc(&host, 64);
	ASSERT(shared);
	shared[0] = 0x1234;
	machine_rendezvous(&host, rv, sizeof(rv));
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine(), a;
		int n0;

		ASSERT_EQ(c.fd, -1);
		ASSERT(!c.host);
		ASSERT_EQ(shared[0], 0x1234);
		machine_detach(&c);
		ASSERT(!mapped(MACHINE_BASE));
		n0 = count_fds();
		ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), 0);
		ASSERT_EQ((uintptr_t)a.hdr, MACHINE_BASE);
		ASSERT_EQ(a.fd, -1);
		ASSERT(!a.host);
		ASSERT_EQ(count_fds(), n0); /* the descriptor was closed: the mapping holds it */
		ASSERT_EQ(a.len, host.len);
		ASSERT_EQ(shared[0], 0x1234);
		shared[1] = 0x5678;
		_exit(0);
	}
	ASSERT_EQ(wait_exit(pid), 0);
	EXPECT_EQ(shared[1], 0x5678);
}

/* Run only from attach_from_an_exec_d_program (MACHINE_TEST_ATTACH set): a new program attaches
 * by the rendezvous string alone (the memfd is close-on-exec: not inherited). */
TEST(helper_attach_in_an_exec_d_program)
{
	const char *rv = getenv("MACHINE_TEST_ATTACH");
	struct machine a;
	uint64_t *shared;

	if (!rv)
		return;
	ASSERT(!mapped(MACHINE_BASE));
	ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), 0);
	shared = machine_at(&a, strtoull(getenv("MACHINE_TEST_OFF"), NULL, 10));
	ASSERT_EQ(shared[0], 0xfeed);
	shared[1] = (uint64_t)getpid();
	machine_detach(&a);
}

TEST(attach_from_an_exec_d_program)
{
	uint64_t *shared;
	char rv[64], off[32];
	pid_t pid;

	host_create(1 << 20, 0);
	shared = machine_alloc(&host, 64);
	shared[0] = 0xfeed;
	machine_rendezvous(&host, rv, sizeof(rv));
	snprintf(off, sizeof(off), "%llu", (unsigned long long)machine_off(&host, shared));
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		setenv("MACHINE_TEST_ATTACH", rv, 1);
		setenv("MACHINE_TEST_OFF", off, 1);
		execl("/proc/self/exe", "machine", "helper_attach_in_an_exec_d_program",
		      (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(wait_exit(pid), 0);
	EXPECT_NE(shared[1], 0); /* the helper ran (in its harness's forked child) */
	EXPECT_NE(shared[1], (uint64_t)getpid());
}

TEST(attach_and_create_fail_with_eexist_when_the_address_is_taken)
{
	struct machine other;
	struct machine_config cfg = {.meta_bytes = 1 << 20};
	char rv[64];
	pid_t pid;
	int n0;

	host_create(1 << 20, 0);
	machine_rendezvous(&host, rv, sizeof(rv));
	/* the host itself holds the address */
	err[0] = 0;
	EXPECT_EQ(machine_create(&cfg, &other, err, sizeof(err)), -EEXIST);
	EXPECT(strstr(err, "already taken"));
	n0 = count_fds();
	err[0] = 0;
	EXPECT_EQ(machine_attach(rv, &other, err, sizeof(err)), -EEXIST);
	EXPECT(strstr(err, "already taken"));
	EXPECT_EQ(count_fds(), n0);
	EXPECT_EQ(host.hdr->magic, MACHINE_MAGIC);

	/* a process with something else there */
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine(), a;
		void *mine;

		machine_detach(&c);
		mine = mmap((void *)(uintptr_t)(MACHINE_BASE + (1 << 20)), 4096,
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ASSERT(mine != MAP_FAILED);
		*(int *)mine = 42;
		ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), -EEXIST);
		ASSERT_EQ(*(int *)mine, 42); /* untouched */
		ASSERT(!mapped(MACHINE_BASE));
		_exit(0);
	}
	EXPECT_EQ(wait_exit(pid), 0);
}

static void expect_attach_fails(const char *rv, int want)
{
	pid_t pid = spawn();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine(), a;

		machine_detach(&c);
		err[0] = 0;
		ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), want);
		ASSERT(err[0]);
		ASSERT(!mapped(MACHINE_BASE));
		ASSERT(a.hdr == NULL);
		_exit(0);
	}
	EXPECT_EQ(wait_exit(pid), 0);
}

TEST(attach_refuses_another_build_with_eproto)
{
	struct machine_hdr *h;
	char rv[64];
	int small;

	host_create(1 << 20, 0);
	h = host.hdr;
	machine_rendezvous(&host, rv, sizeof(rv));
	h->magic ^= 1;
	expect_attach_fails(rv, -EPROTO);
	h->magic ^= 1;
	h->version++;
	expect_attach_fails(rv, -EPROTO);
	h->version--;
	h->hdr_size += 8;
	expect_attach_fails(rv, -EPROTO);
	h->hdr_size -= 8;
	h->base ^= 1ULL << 40;
	expect_attach_fails(rv, -EPROTO);
	h->base ^= 1ULL << 40;

	/* not a segment at all: a character device, a small file */
	snprintf(rv, sizeof(rv), "%d:%d", getpid(), open("/dev/null", O_RDWR | O_CLOEXEC));
	expect_attach_fails(rv, -EPROTO);
	small = memfd_create("small", MFD_CLOEXEC);
	ASSERT_GE(small, 0);
	ASSERT_EQ(ftruncate(small, 100), 0);
	snprintf(rv, sizeof(rv), "%d:%d", getpid(), small);
	expect_attach_fails(rv, -EPROTO);
}

TEST(attach_parses_pid_colon_fd_and_nothing_else)
{
	static const char *bad[] = {"",	    "12",  "abc:1",	    "1:",   ":3", "1:2x",
				    "-1:3", "0:3", "99999999999:3", "1:2:3"};
	struct machine a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		EXPECT_EQ(machine_attach(bad[i], &a, err, sizeof(err)), -EINVAL);
		EXPECT(err[0]);
	}
	EXPECT_EQ(machine_attach(NULL, &a, NULL, 0), -EINVAL);
	EXPECT(!mapped(MACHINE_BASE));
}

TEST(attach_to_a_host_that_is_gone_is_enoent)
{
	struct machine a;
	char rv[64] = "";
	int fds[2];
	pid_t pid;

	ASSERT_EQ(pipe(fds), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		host_create(1 << 20, 0);
		machine_rendezvous(&host, rv, sizeof(rv));
		if (write(fds[1], rv, sizeof(rv)) != sizeof(rv))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(read(fds[0], rv, sizeof(rv)), (long)sizeof(rv));
	ASSERT_EQ(wait_exit(pid), 0);
	err[0] = 0;
	EXPECT_EQ(machine_attach(rv, &a, err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "gone"));
	EXPECT(!mapped(MACHINE_BASE));
	/* a live process without that descriptor */
	snprintf(rv, sizeof(rv), "%d:%d", getpid(), 999);
	EXPECT_EQ(machine_attach(rv, &a, err, sizeof(err)), -ENOENT);
}

/* ---- the host's death ----------------------------------------------------------------------- */

/* A host in a child: it creates the machine, sends its rendezvous, then waits for a byte on
 * cmd: 'd' destroys the machine (and waits on), anything else exits. */
static pid_t host_child(char rv[64], int *cmd)
{
	int up[2], down[2];
	pid_t pid;

	ASSERT_EQ(pipe(up), 0);
	ASSERT_EQ(pipe(down), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		char c;

		close(up[0]);
		close(down[1]); /* the parent's end: its close is our EOF */
		host_create(1 << 20, 0);
		if (machine_host_gone(&host))
			_exit(5); /* never for the host itself */
		machine_rendezvous(&host, rv, 64);
		if (write(up[1], rv, 64) != 64)
			_exit(3);
		while (read(down[0], &c, 1) == 1 && c == 'd')
			machine_destroy(&host);
		_exit(0);
	}
	ASSERT_EQ(read(up[0], rv, 64), 64);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	*cmd = down[1];
	return pid;
}

struct host_req {
	struct machine *m;
	pthread_t th;
	int rc;
};

static void *host_req_main(void *arg)
{
	struct host_req *r = arg;

	r->rc = machine_request(r->m, 0, MACHINE_REQ_WRITEOUT, 1, 2, 0, 20000 * MS);
	return NULL;
}

TEST(a_dead_host_is_seen_and_what_only_it_completes_ends)
{
	struct host_req r = {.rc = 1};
	struct machine a;
	char rv[64];
	int cmd, slot, fds[2];
	pid_t h, gone;
	uint64_t t0;

	h = host_child(rv, &cmd);
	ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), 0);
	EXPECT(!machine_host_gone(&a));
	/* a process of the machine that exits without a goodbye: only the host reaps it */
	ASSERT_EQ(pipe(fds), 0);
	gone = spawn();
	ASSERT_GE(gone, 0);
	if (gone == 0) {
		struct machine c = a;

		machine_forked_child(&c);
		put_int(fds[1], machine_slot_take(&c));
		_exit(0);
	}
	slot = get_int(fds[0]);
	ASSERT_GE(slot, 1);
	ASSERT_EQ(wait_exit(gone), 0);
	/* while the host lives, a dead process it has not reaped looks stopped */
	EXPECT_EQ(machine_request(&a, slot, MACHINE_REQ_MIGRATE, 0, 1, 1, 50 * MS), -EBUSY);

	/* a request to the host, waiting when the host is SIGKILLed */
	r.m = &a;
	ASSERT_EQ(pthread_create(&r.th, NULL, host_req_main, &r), 0);
	sleep_ms(50);
	kill(h, SIGKILL);
	ASSERT_EQ(wait_exit(h), 128 + SIGKILL);
	t0 = clock_now_ns();
	pthread_join(r.th, NULL);
	EXPECT_EQ(r.rc, -ENOENT);
	EXPECT_LT(clock_now_ns() - t0, 2000 * MS);
	EXPECT(machine_host_gone(&a));
	/* nobody reaps now: the requester sees the dead process itself, and the host at once */
	t0 = clock_now_ns();
	EXPECT_EQ(machine_request(&a, slot, MACHINE_REQ_MIGRATE, 0, 1, 1, 20000 * MS), -ENOENT);
	EXPECT_EQ(machine_request(&a, 0, MACHINE_REQ_WRITEOUT, 1, 2, 0, 20000 * MS), -ENOENT);
	EXPECT_LT(clock_now_ns() - t0, 1000 * MS);
	/* the lock it never held still works */
	machine_lock(&a);
	machine_unlock(&a);
	EXPECT(!machine_tainted(&a));
	close(cmd);
}

TEST(a_host_that_destroyed_its_machine_is_gone)
{
	struct machine a;
	char rv[64];
	int cmd;
	pid_t h;

	h = host_child(rv, &cmd);
	ASSERT_EQ(machine_attach(rv, &a, err, sizeof(err)), 0);
	EXPECT(!machine_host_gone(&a));
	ASSERT_EQ(write(cmd, "d", 1), 1);
	for (int i = 0; i < 2000 && !machine_host_gone(&a); i++)
		sleep_ms(1);
	EXPECT(machine_host_gone(&a));
	EXPECT_EQ(machine_request(&a, 0, MACHINE_REQ_WRITEOUT, 1, 2, 0, 20000 * MS), -ENOENT);
	machine_detach(&a);
	/* and a new process cannot attach to it */
	EXPECT_EQ(machine_attach(rv, &a, err, sizeof(err)), -ENOENT);
	close(cmd);
	EXPECT_EQ(wait_exit(h), 0);
}

TEST(attach_refuses_the_segment_of_another_host)
{
	struct machine a;
	char rv[64], other[64];
	int cmd, fds[2];
	pid_t h, holder;

	h = host_child(rv, &cmd);
	ASSERT_EQ(pipe(fds), 0);
	/* a process that holds the host's memfd (opened through /proc) under its own pid */
	holder = spawn();
	ASSERT_GE(holder, 0);
	if (holder == 0) {
		char path[64];
		int mine;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)h, strchr(rv, ':') + 1);
		mine = open(path, O_RDWR);
		put_int(fds[1], mine);
		pause();
		_exit(0);
	}
	snprintf(other, sizeof(other), "%d:%d", (int)holder, get_int(fds[0]));
	err[0] = 0;
	EXPECT_EQ(machine_attach(other, &a, err, sizeof(err)), -EPROTO);
	EXPECT(strstr(err, "host pid"));
	EXPECT(!mapped(MACHINE_BASE));
	kill(holder, SIGKILL);
	EXPECT_EQ(wait_exit(holder), 128 + SIGKILL);
	close(cmd);
	EXPECT_EQ(wait_exit(h), 0);
}

/* ---- the lock ------------------------------------------------------------------------------- */

struct model {
	uint64_t a, b; /* the invariant: a == b */
};

static unsigned repair_calls;
static int repair_rc;
static int trylock_in_repair;
static bool broken_seen;

static int repair(void *arg)
{
	struct model *md = arg;

	repair_calls++;
	trylock_in_repair = pthread_mutex_trylock(&host.hdr->mm_lock);
	broken_seen = md->a != md->b;
	md->b = md->a;
	return repair_rc;
}

/* A child takes the lock, breaks the invariant half way and is SIGKILLed. */
static void die_holding_the_lock(struct model *md)
{
	int fds[2];
	pid_t pid;

	ASSERT_EQ(pipe(fds), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine();

		machine_lock(&c);
		md->a++;
		put_int(fds[1], 1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(get_int(fds[0]), 1);
	kill(pid, SIGKILL);
	ASSERT_EQ(wait_exit(pid), 128 + SIGKILL);
	close(fds[0]);
	close(fds[1]);
}

static int lock_in_a_child(void)
{
	pid_t pid = spawn();

	if (pid == 0) {
		struct machine c = child_machine();

		machine_lock(&c);
		machine_unlock(&c);
		_exit(machine_tainted(&c) ? 2 : 0);
	}
	return wait_exit(pid);
}

TEST(an_owner_killed_holding_the_lock_is_repaired_once)
{
	struct model *md;

	host_create(1 << 20, 0);
	md = machine_alloc(&host, sizeof(*md));
	host.repair = repair;
	host.repair_arg = md;
	die_holding_the_lock(md);
	machine_lock(&host);
	EXPECT_EQ(repair_calls, 1);
	EXPECT(broken_seen);
	EXPECT_EQ(trylock_in_repair, EBUSY); /* it ran with the lock held */
	EXPECT_EQ(md->a, md->b);
	EXPECT_EQ(host.hdr->repairs, 1);
	EXPECT(!machine_tainted(&host));
	machine_unlock(&host);
	/* and the lock goes on working: here, in another process, with no second repair */
	machine_lock(&host);
	machine_unlock(&host);
	EXPECT_EQ(lock_in_a_child(), 0);
	ASSERT_EQ(pthread_mutex_trylock(&host.hdr->mm_lock), 0);
	pthread_mutex_unlock(&host.hdr->mm_lock);
	EXPECT_EQ(repair_calls, 1);
	EXPECT_EQ(host.hdr->repairs, 1);
	/* a second death, a second repair */
	die_holding_the_lock(md);
	machine_lock(&host);
	machine_unlock(&host);
	EXPECT_EQ(repair_calls, 2);
	EXPECT_EQ(host.hdr->repairs, 2);
	/* no repair hook: nothing to repair, the lock is made consistent */
	host.repair = NULL;
	die_holding_the_lock(md);
	machine_lock(&host);
	machine_unlock(&host);
	EXPECT_EQ(repair_calls, 2);
	EXPECT_EQ(host.hdr->repairs, 3);
	EXPECT(!machine_tainted(&host));
	EXPECT_EQ(lock_in_a_child(), 0);
}

TEST(a_repair_that_fails_taints_and_the_lock_stays_usable)
{
	struct model *md;

	host_create(1 << 20, 0);
	md = machine_alloc(&host, sizeof(*md));
	host.repair = repair;
	host.repair_arg = md;
	repair_rc = -EIO;
	EXPECT_EQ(lock_in_a_child(), 0);
	die_holding_the_lock(md);
	machine_lock(&host);
	EXPECT_EQ(repair_calls, 1);
	EXPECT(machine_tainted(&host));
	EXPECT_EQ(host.hdr->repairs, 0);
	machine_unlock(&host);
	ASSERT_EQ(pthread_mutex_trylock(&host.hdr->mm_lock), 0); /* not ENOTRECOVERABLE */
	pthread_mutex_unlock(&host.hdr->mm_lock);
	EXPECT_EQ(lock_in_a_child(), 2); /* usable, and the child sees the taint */
	EXPECT_EQ(repair_calls, 1);
}

/* ---- slots ---------------------------------------------------------------------------------- */

static int released[1024];
static unsigned nreleased;

static void release(void *arg, int slot)
{
	int *magic = arg;

	if (*magic == 77 && nreleased < 1024)
		released[nreleased++] = slot;
}

/* A child that takes a slot (named comm), reports it and waits to be killed; leave: say goodbye
 * first. Returns the pid; *slot gets the child's slot. */
static pid_t slot_child(const char *comm, bool leave, int *slot)
{
	int fds[2];
	pid_t pid;

	ASSERT_EQ(pipe(fds), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine();
		int s;

		prctl(PR_SET_NAME, comm);
		s = machine_slot_take(&c);
		if (leave)
			machine_slot_leave(&c, s);
		put_int(fds[1], s);
		pause();
		_exit(0);
	}
	*slot = get_int(fds[0]);
	close(fds[0]);
	close(fds[1]);
	return pid;
}

TEST(slots_of_real_processes_are_taken_reaped_and_reused)
{
	const struct machine_slot *s;
	int magic = 77, sa, sb;
	uint64_t t0 = clock_now_ns();
	unsigned n = 0;
	pid_t a, b;

	host_create(1 << 20, 0);
	a = slot_child("slot-kid-a", false, &sa);
	ASSERT_EQ(sa, 1);
	s = machine_slot(&host, sa);
	EXPECT_EQ(s->state, MACHINE_SLOT_LIVE);
	EXPECT_EQ(s->pid, a);
	EXPECT_EQ(s->ppid, getpid());
	ASSERT_STREQ(s->comm, "slot-kid-a");
	EXPECT_GT(s->start_ns, t0);
	EXPECT_EQ(s->gen, 1);
	EXPECT_EQ(machine_nr_live(&host), 1);
	EXPECT_EQ(host.hdr->nslots_live, 1);
	/* alive: never reaped */
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(machine_reap(&host, release, &magic), 0);
	EXPECT_EQ(nreleased, 0);
	/* gone (a zombie: not waited for yet) */
	kill(a, SIGKILL);
	for (int i = 0; i < 2000 && !n; i++, sleep_ms(1))
		n = machine_reap(&host, release, &magic);
	EXPECT_EQ(n, 1);
	ASSERT_EQ(nreleased, 1);
	EXPECT_EQ(released[0], sa);
	EXPECT_EQ(s->state, MACHINE_SLOT_FREE);
	EXPECT_EQ(s->pid, 0);
	EXPECT_EQ(host.hdr->reaped, 1);
	EXPECT_EQ(machine_nr_live(&host), 0);
	EXPECT_EQ(host.hdr->nslots_live, 0);
	EXPECT_EQ(machine_reap(&host, release, &magic), 0);
	EXPECT_EQ(wait_exit(a), 128 + SIGKILL);

	/* the slot again, for a process that says goodbye while alive */
	b = slot_child("slot-kid-b", true, &sb);
	EXPECT_EQ(sb, sa);
	EXPECT_EQ(s->gen, 2);
	EXPECT_EQ(s->pid, b);
	EXPECT_EQ(s->state, MACHINE_SLOT_EXITING);
	EXPECT_EQ(machine_nr_live(&host), 0);
	EXPECT_EQ(machine_reap(&host, release, &magic), 1);
	ASSERT_EQ(nreleased, 2);
	EXPECT_EQ(released[1], sb);
	EXPECT_EQ(s->state, MACHINE_SLOT_FREE);
	EXPECT_EQ(host.hdr->reaped, 2);
	kill(b, SIGKILL);
	EXPECT_EQ(wait_exit(b), 128 + SIGKILL);
}

TEST(every_slot_can_be_taken_then_enospc)
{
	int magic = 77;
	pid_t pid;

	host_create(1 << 20, 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct machine c = child_machine();

		for (int i = 1; i < MACHINE_MAX_PROCS; i++)
			ASSERT_EQ(machine_slot_take(&c), i);
		ASSERT_EQ(machine_slot_take(&c), -ENOSPC);
		ASSERT_EQ(machine_nr_live(&c), MACHINE_MAX_PROCS - 1);
		_exit(0);
	}
	ASSERT_EQ(wait_exit(pid), 0);
	EXPECT_EQ(machine_reap(&host, release, &magic), MACHINE_MAX_PROCS - 1);
	EXPECT_EQ(nreleased, MACHINE_MAX_PROCS - 1);
	for (unsigned i = 0; i < nreleased; i++)
		EXPECT_EQ(released[i], (int)i + 1);
	EXPECT_EQ(machine_nr_live(&host), 0);
	EXPECT_EQ(host.hdr->nslots_live, 0);
	EXPECT_EQ(machine_slot_take(&host), 1);
}

/* ---- mailboxes ------------------------------------------------------------------------------ */

#define OP_ECHO_NEG 2 /* answer -to */

struct agent_ctl {
	uint32_t stop;
	uint32_t bad; /* the agent saw something wrong */
	uint32_t nserved;
	uint32_t served[64]; /* `from` of the first requests served */
	uint32_t slow_from;  /* a request with this `from` is answered after slow_ms */
	uint32_t slow_ms;
	uint32_t die_from; /* a request with this `from` kills the agent's process */
};

static struct agent_ctl *ctl;
static struct machine agent_m;
static int agent_slot;

static int agent_answer(uint32_t op, uint64_t owner, uint32_t from, uint32_t to)
{
	if (op == OP_ECHO_NEG)
		return -(int)to;
	return (int)(from * 3 + to) ^ (int)(owner & 0xff);
}

static void *agent_main(void *arg)
{
	uint32_t op, from, to;
	uint64_t owner;

	while (machine_serve_wait(&agent_m, agent_slot, &ctl->stop, 0, &op, &owner, &from, &to)) {
		uint32_t n = __atomic_fetch_add(&ctl->nserved, 1, __ATOMIC_SEQ_CST);
		const struct machine_slot *s = machine_slot(&agent_m, agent_slot);

		if (n < 64)
			__atomic_store_n(&ctl->served[n], from, __ATOMIC_SEQ_CST);
		if (s->mbox.requester <= 0 || (op != MACHINE_REQ_MIGRATE && op != OP_ECHO_NEG))
			__atomic_store_n(&ctl->bad, 1, __ATOMIC_SEQ_CST);
		if (from && from == ctl->die_from)
			kill(getpid(), SIGKILL);
		if (from && from == ctl->slow_from)
			sleep_ms(ctl->slow_ms);
		machine_serve_done(&agent_m, agent_slot, agent_answer(op, owner, from, to));
	}
	return NULL;
}

/* A child with a slot and an agent thread; returns its pid and slot. It exits when ctl->stop
 * is set and its agent kicked: 0 if its agent saw nothing wrong. */
static pid_t agent_child(int *slot)
{
	int fds[2];
	pid_t pid;

	ASSERT_EQ(pipe(fds), 0);
	pid = spawn();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		pthread_t th;

		agent_m = child_machine();
		agent_slot = machine_slot_take(&agent_m);
		if (agent_slot < 0 || pthread_create(&th, NULL, agent_main, NULL))
			_exit(4);
		put_int(fds[1], agent_slot);
		pthread_join(th, NULL);
		machine_slot_leave(&agent_m, agent_slot);
		_exit(__atomic_load_n(&ctl->bad, __ATOMIC_SEQ_CST) ? 5 : 0);
	}
	*slot = get_int(fds[0]);
	close(fds[0]);
	close(fds[1]);
	return pid;
}

static void stop_agent(pid_t pid, int slot)
{
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_SEQ_CST);
	machine_serve_kick(&host, slot);
	EXPECT_EQ(wait_exit(pid), 0);
}

static void setup_agent_ctl(void)
{
	host_create(1 << 20, 0);
	ctl = machine_alloc(&host, sizeof(*ctl));
	ASSERT(ctl);
}

static void requests(struct machine *m, int slot, unsigned n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t from = seed + i * 7, to = i * 13 + 1;
		uint64_t owner = ((uint64_t)i << 20) | (i & 0xff);
		int want = agent_answer(MACHINE_REQ_MIGRATE, owner, from, to);

		ASSERT_EQ(machine_request(m, slot, MACHINE_REQ_MIGRATE, owner, from, to, 5000 * MS),
			  want);
		if (i % 50 == 0)
			ASSERT_EQ(machine_request(m, slot, OP_ECHO_NEG, 0, 0, i + 1, 5000 * MS),
				  -(int)(i + 1));
	}
}

TEST(mailbox_round_trips_between_processes)
{
	int slot;
	pid_t agent, other;
	uint64_t t0;

	setup_agent_ctl();
	agent = agent_child(&slot);
	ASSERT_GE(slot, 1);
	/* a second requester process at the same time as this one */
	other = spawn();
	ASSERT_GE(other, 0);
	if (other == 0) {
		struct machine c = child_machine();

		requests(&c, slot, 1000, 100000);
		_exit(0);
	}
	t0 = clock_now_ns();
	requests(&host, slot, 1000, 1);
	EXPECT_EQ(wait_exit(other), 0);
	printf("  %u requests from 2 processes in %.1f ms\n", ctl->nserved,
	       (double)(clock_now_ns() - t0) / 1e6);
	EXPECT_EQ(ctl->nserved, 2000 + 2 * 20);
	EXPECT_EQ(machine_slot(&host, slot)->mbox.requester != 0, 1);
	stop_agent(agent, slot); /* kick wakes an agent waiting with no timeout */
	EXPECT_EQ(ctl->bad, 0);
}

static bool served(uint32_t from)
{
	uint32_t n = __atomic_load_n(&ctl->nserved, __ATOMIC_SEQ_CST);

	for (uint32_t i = 0; i < n && i < 64; i++)
		if (__atomic_load_n(&ctl->served[i], __ATOMIC_SEQ_CST) == from)
			return true;
	return false;
}

TEST(a_stopped_agent_makes_a_request_ebusy_and_a_late_answer_is_not_taken)
{
	uint64_t t0, dt;
	int slot, status, rc;
	pid_t agent;

	setup_agent_ctl();
	agent = agent_child(&slot);
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 1, 1, 5000 * MS), -1);

	/* stopped: no answer within the timeout; the request is withdrawn */
	kill(agent, SIGSTOP);
	ASSERT_EQ(waitpid(agent, &status, WUNTRACED), agent);
	ASSERT(WIFSTOPPED(status));
	t0 = clock_now_ns();
	rc = machine_request(&host, slot, OP_ECHO_NEG, 0, 2, 2, 100 * MS);
	dt = clock_now_ns() - t0;
	EXPECT_EQ(rc, -EBUSY);
	EXPECT_GE(dt, 100 * MS);
	EXPECT_LT(dt, 1000 * MS);
	kill(agent, SIGCONT);
	sleep_ms(50); /* time for the agent to take it, were it still there */
	EXPECT(!served(2));
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 3, 3, 5000 * MS), -3);
	EXPECT(!served(2)); /* withdrawn before the agent could take it: never served */

	/* taken, then answered late: that answer is not the next request's */
	ctl->slow_from = 5;
	ctl->slow_ms = 300;
	t0 = clock_now_ns();
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 5, 5, 100 * MS), -EBUSY);
	EXPECT_LT(clock_now_ns() - t0, 1000 * MS);
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 6, 6, 5000 * MS), -6);
	EXPECT(served(5));
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 7, 7, 5000 * MS), -7);
	stop_agent(agent, slot);
}

struct reaper {
	pthread_t th;
	uint32_t stop;
	int magic;
};

static void *reaper_main(void *arg)
{
	struct reaper *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
		machine_reap(&host, release, &r->magic);
		sleep_ms(5);
	}
	return NULL;
}

TEST(a_request_to_a_process_that_is_gone_is_enoent)
{
	struct reaper r = {.magic = 77};
	int quiet, busy, slot;
	pid_t mute, dying;
	uint64_t t0, dt;

	setup_agent_ctl();
	EXPECT_EQ(machine_request(&host, 200, MACHINE_REQ_MIGRATE, 0, 0, 0, MS), -ENOENT);
	EXPECT_EQ(machine_request(&host, MACHINE_MAX_PROCS, MACHINE_REQ_MIGRATE, 0, 0, 0, MS),
		  -EINVAL);
	mute = slot_child("mute", false, &quiet); /* a slot, no agent */
	ctl->die_from = 9;
	dying = agent_child(&busy); /* an agent that dies serving `from` 9 */
	ASSERT_EQ(pthread_create(&r.th, NULL, reaper_main, &r), 0);

	/* pending when the process dies: the host fails it */
	kill(mute, SIGKILL);
	t0 = clock_now_ns();
	EXPECT_EQ(machine_request(&host, quiet, MACHINE_REQ_MIGRATE, 0, 1, 1, 10000 * MS), -ENOENT);
	dt = clock_now_ns() - t0;
	EXPECT_LT(dt, 2000 * MS);
	/* taken by an agent whose process dies before answering */
	t0 = clock_now_ns();
	EXPECT_EQ(machine_request(&host, busy, MACHINE_REQ_MIGRATE, 0, 9, 9, 10000 * MS), -ENOENT);
	dt = clock_now_ns() - t0;
	EXPECT_LT(dt, 2000 * MS);
	EXPECT(served(9));
	EXPECT_EQ(wait_exit(dying), 128 + SIGKILL);
	EXPECT_EQ(wait_exit(mute), 128 + SIGKILL);
	/* both reaped, and a request now fails at once */
	for (int i = 0; i < 2000 && machine_nr_live(&host); i++)
		sleep_ms(1);
	__atomic_store_n(&r.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(r.th, NULL);
	EXPECT_EQ(machine_nr_live(&host), 0);
	EXPECT_EQ(nreleased, 2);
	EXPECT_EQ(machine_request(&host, busy, MACHINE_REQ_MIGRATE, 0, 1, 1, 10000 * MS), -ENOENT);
	slot = machine_slot_take(&host);
	EXPECT(slot == quiet || slot == busy);
}

TEST(a_requester_killed_while_waiting_leaves_the_mailbox_usable)
{
	const struct machine_mailbox *mb;
	int slot, status;
	pid_t agent, req;

	setup_agent_ctl();
	agent = agent_child(&slot);
	mb = &machine_slot(&host, slot)->mbox;
	kill(agent, SIGSTOP);
	ASSERT_EQ(waitpid(agent, &status, WUNTRACED), agent);
	req = spawn();
	ASSERT_GE(req, 0);
	if (req == 0) {
		struct machine c = child_machine();

		machine_request(&c, slot, OP_ECHO_NEG, 0, 9, 9, 30000 * MS);
		_exit(0);
	}
	for (int i = 0; i < 2000 && !(__atomic_load_n(&mb->req_seq, __ATOMIC_SEQ_CST) & 1); i++)
		sleep_ms(1);
	ASSERT(__atomic_load_n(&mb->req_seq, __ATOMIC_SEQ_CST) & 1); /* its request is pending */
	kill(req, SIGKILL);
	EXPECT_EQ(wait_exit(req), 128 + SIGKILL);
	kill(agent, SIGCONT);
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 10, 10, 5000 * MS), -10);
	EXPECT_EQ(machine_request(&host, slot, OP_ECHO_NEG, 0, 11, 11, 5000 * MS), -11);
	ASSERT_EQ(pthread_mutex_trylock((pthread_mutex_t *)&mb->lock), 0);
	pthread_mutex_unlock((pthread_mutex_t *)&mb->lock);
	stop_agent(agent, slot);
}

static void *serve_forever(void *arg)
{
	uint32_t op, from, to;
	uint64_t owner;

	*(bool *)arg = machine_serve_wait(&host, 0, &ctl->stop, 0, &op, &owner, &from, &to);
	return NULL;
}

TEST(serve_wait_times_out_and_sees_stop_and_kicks)
{
	uint32_t op, from, to;
	uint64_t owner, t0, dt;
	bool got = true;
	pthread_t th;

	setup_agent_ctl();
	t0 = clock_now_ns();
	EXPECT(!machine_serve_wait(&host, 0, &ctl->stop, 30 * MS, &op, &owner, &from, &to));
	dt = clock_now_ns() - t0;
	EXPECT_GE(dt, 30 * MS);
	EXPECT_LT(dt, 1000 * MS);
	/* a kick with stop set ends a wait with no timeout, however the two interleave */
	for (int i = 0; i < 200; i++) {
		__atomic_store_n(&ctl->stop, 0, __ATOMIC_SEQ_CST);
		got = true;
		ASSERT_EQ(pthread_create(&th, NULL, serve_forever, &got), 0);
		if (i % 2)
			sleep_ms(1);
		__atomic_store_n(&ctl->stop, 1, __ATOMIC_SEQ_CST);
		machine_serve_kick(&host, 0);
		pthread_join(th, NULL);
		ASSERT(!got);
	}
	/* a kick changes the word the agent sleeps on (a kick just before it sleeps is not lost)
	 * and leaves an idle mailbox idle */
	{
		const struct machine_mailbox *mb = &machine_slot(&host, 0)->mbox;
		uint32_t r = __atomic_load_n(&mb->req_seq, __ATOMIC_SEQ_CST);

		machine_serve_kick(&host, 0);
		EXPECT_NE(__atomic_load_n(&mb->req_seq, __ATOMIC_SEQ_CST), r);
		EXPECT_EQ(__atomic_load_n(&mb->req_seq, __ATOMIC_SEQ_CST) & 1, 0);
		EXPECT_EQ(machine_request(&host, 0, OP_ECHO_NEG, 0, 0, 0, 20 * MS), -EBUSY);
		EXPECT(!machine_serve_wait(&host, 0, NULL, 1 * MS, &op, &owner, &from, &to));
	}
	/* a slot that is not LIVE has nothing to serve */
	EXPECT(!machine_serve_wait(&host, 5, NULL, 0, &op, &owner, &from, &to));
}

TEST_MAIN()
