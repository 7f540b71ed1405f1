/* core/machine: the segment of one emulated machine shared by many processes (machine.h) - its
 * creation by the host and attachment by the others, the bump allocator, the robust mm lock
 * with its repair, the process slots, their mailboxes, and the host's reaping of processes that
 * are gone.
 *
 * This runs inside managed programs: system calls go through util/sys.h, never through libc
 * names the preload library interposes; nothing on the lock and mailbox paths allocates. Words
 * other processes read or write are accessed with __atomic builtins (sequentially consistent
 * unless said otherwise); futex words are shared futexes.
 */
#include "machine/machine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/sys.h"

#ifdef MACHINE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#define SEG_PAGE     4096ULL
#define SEG_HUGE     (2ULL << 20)
#define SEG_MAX	     (1ULL << 43) /* 8 TiB: beyond any pool; mmap refuses what does not fit */
#define ALLOC_ALIGN  64
#define REQ_SLICE_NS 10000000ULL /* a waiting requester looks at the slot's state this often */

#define ld(p)	 __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define st(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define cas(p, e, v)                                                                               \
	__atomic_compare_exchange_n((p), (e), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void machine_clear(struct machine *m)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	for (int i = 0; i < MACHINE_MAX_PROCS; i++)
		m->pidfd[i] = -1;
}

static int robust_mutex_init(pthread_mutex_t *mu)
{
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);

	if (rc)
		return -rc;
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(mu, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

/* /proc/self/comm (the process's name: its main thread's), without the newline. */
static void read_comm(char comm[16])
{
	int fd = sys_openat(AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
	long n;

	memset(comm, 0, 16);
	if (fd < 0)
		return;
	n = sys_read(fd, comm, 15);
	sys_close(fd);
	if (n <= 0)
		comm[0] = 0;
	else if (comm[n - 1] == '\n')
		comm[n - 1] = 0;
}

/* Map fd's first len bytes at MACHINE_BASE, nowhere else: 0, -EEXIST or -errno. */
static int map_at_base(int fd, uint64_t len)
{
	long p = sys_mmap((void *)(uintptr_t)MACHINE_BASE, len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);

	if (sys_is_err(p))
		return (int)p;
	if ((uint64_t)p != MACHINE_BASE) { /* a kernel before 4.17 took the flag as a hint */
		sys_munmap((void *)p, len);
		return -EEXIST;
	}
	/* the emulator's memory: out of core dumps, and told apart by the census ("dd") */
	sys_madvise((void *)p, len, MADV_DONTDUMP);
	return 0;
}

/* ---- the host: create, destroy ------------------------------------------------------------- */

int machine_create(const struct machine_config *cfg, struct machine *out, char *err, size_t errlen)
{
	uint64_t hdr_bytes = align_up(sizeof(struct machine_hdr), SEG_PAGE);
	uint64_t meta, arena, arena_off, size;
	struct machine_hdr *h;
	int fd, rc;

	machine_clear(out);
	if (cfg->meta_bytes > SEG_MAX || cfg->arena_bytes > SEG_MAX) {
		set_err(err, errlen, "machine: %llu + %llu bytes is too large a segment",
			(unsigned long long)cfg->meta_bytes, (unsigned long long)cfg->arena_bytes);
		return -EINVAL;
	}
	meta = align_up(cfg->meta_bytes, SEG_PAGE);
	arena = align_up(cfg->arena_bytes, SEG_PAGE);
	/* the arena starts on a 2 MiB boundary (MACHINE_BASE is one): the gap costs nothing */
	arena_off = arena ? align_up(hdr_bytes + meta, SEG_HUGE) : hdr_bytes + meta;
	size = arena_off + arena;

	fd = sys_memfd_create("thpemu-machine", MFD_CLOEXEC);
	if (fd < 0) {
		set_err(err, errlen, "machine: memfd_create: %s", strerror(-fd));
		return fd;
	}
	rc = sys_ftruncate(fd, (long)size); /* tmpfs is sparse: pages come when first touched */
	if (rc < 0) {
		set_err(err, errlen, "machine: ftruncate to %llu bytes: %s",
			(unsigned long long)size, strerror(-rc));
		sys_close(fd);
		return rc;
	}
	rc = map_at_base(fd, size);
	if (rc < 0) {
		if (rc == -EEXIST)
			set_err(err, errlen,
				"machine: the address 0x%llx is already taken in this process",
				(unsigned long long)MACHINE_BASE);
		else
			set_err(err, errlen, "machine: mmap of %llu bytes at 0x%llx: %s",
				(unsigned long long)size, (unsigned long long)MACHINE_BASE,
				strerror(-rc));
		sys_close(fd);
		return rc;
	}

	h = (struct machine_hdr *)(uintptr_t)MACHINE_BASE;
	h->version = MACHINE_VERSION;
	h->hdr_size = sizeof(*h);
	h->seg_size = size;
	h->base = MACHINE_BASE;
	h->host_pid = sys_getpid();
	h->alloc_off = hdr_bytes;
	h->alloc_end = hdr_bytes + meta;
	h->arena_off = arena_off;
	h->arena_len = arena;
	if (cfg->config) {
		size_t n = strnlen(cfg->config, sizeof(h->config) - 1);

		memcpy(h->config, cfg->config, n);
	}
	rc = robust_mutex_init(&h->mm_lock);
	for (int i = 0; i < MACHINE_MAX_PROCS && !rc; i++)
		rc = robust_mutex_init(&h->slot[i].mbox.lock);
	if (!rc)
		rc = robust_mutex_init(&h->host_alive);
	if (!rc) /* held for the host's life: the kernel marks it when the host dies */
		rc = -pthread_mutex_lock(&h->host_alive);
	if (rc) {
		set_err(err, errlen, "machine: robust shared mutex: %s", strerror(-rc));
		sys_munmap(h, size);
		sys_close(fd);
		return rc;
	}
	/* slot 0 is the host */
	h->slot[0].pid = h->host_pid;
	h->slot[0].ppid = sys_getppid();
	h->slot[0].gen = 1;
	h->slot[0].start_ns = clock_now_ns();
	read_comm(h->slot[0].comm);
	h->slot[0].state = MACHINE_SLOT_LIVE;
	st(&h->magic, MACHINE_MAGIC); /* last: a header with its magic is complete */

	out->hdr = h;
	out->fd = fd;
	out->len = size;
	out->host = true;
	return 0;
}

static void machine_unmap(struct machine *m)
{
	if (m->hdr && m->host) /* unlocked before the unmap: it is on this thread's robust list */
		pthread_mutex_unlock(&m->hdr->host_alive);
	if (m->hdr)
		sys_munmap(m->hdr, m->len);
	if (m->fd >= 0)
		sys_close(m->fd);
	for (int i = 0; i < MACHINE_MAX_PROCS; i++)
		if (m->pidfd[i] >= 0)
			sys_close(m->pidfd[i]);
	machine_clear(m);
}

void machine_destroy(struct machine *m)
{
	machine_unmap(m);
}

void machine_rendezvous(const struct machine *m, char *buf, size_t len)
{
	snprintf(buf, len, "%d:%d", m->hdr->host_pid, m->fd);
}

/* ---- the others: attach, detach ------------------------------------------------------------ */

/* A decimal number up to `end` (exclusive), nothing else. */
static bool parse_num(const char *s, const char *end, int *out)
{
	long v = 0;

	if (s == end)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return false;
	}
	*out = (int)v;
	return true;
}

int machine_attach(const char *rendezvous, struct machine *out, char *err, size_t errlen)
{
	const char *colon = rendezvous ? strchr(rendezvous, ':') : NULL;
	const struct machine_hdr *h = (const struct machine_hdr *)(uintptr_t)MACHINE_BASE;
	char path[64];
	struct stat sb;
	int pid, nfd, fd, rc;

	machine_clear(out);
	if (!colon || !parse_num(rendezvous, colon, &pid) || pid <= 0 ||
	    !parse_num(colon + 1, colon + strlen(colon), &nfd)) {
		set_err(err, errlen, "machine: '%s' is not PID:FD", rendezvous ? rendezvous : "");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, nfd);
	fd = sys_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		if (fd == -ENOENT)
			set_err(err, errlen, "machine: %s: the host is gone", path);
		else
			set_err(err, errlen, "machine: %s: %s", path, strerror(-fd));
		return fd;
	}
	rc = sys_fstat(fd, &sb);
	if (rc < 0) {
		set_err(err, errlen, "machine: fstat %s: %s", path, strerror(-rc));
		sys_close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < sizeof(struct machine_hdr)) {
		set_err(err, errlen, "machine: %s is not a machine segment (%lld bytes)", path,
			(long long)sb.st_size);
		sys_close(fd);
		return -EPROTO;
	}
	rc = map_at_base(fd, (uint64_t)sb.st_size);
	sys_close(fd); /* the mapping keeps the memfd alive */
	if (rc < 0) {
		if (rc == -EEXIST)
			set_err(err, errlen,
				"machine: the address 0x%llx is already taken in this process: "
				"cannot attach",
				(unsigned long long)MACHINE_BASE);
		else
			set_err(err, errlen, "machine: mmap %s at 0x%llx: %s", path,
				(unsigned long long)MACHINE_BASE, strerror(-rc));
		return rc;
	}
	if (ld(&h->magic) != MACHINE_MAGIC || h->version != MACHINE_VERSION ||
	    h->hdr_size != sizeof(*h) || h->base != MACHINE_BASE ||
	    h->seg_size != (uint64_t)sb.st_size) {
		set_err(err, errlen,
			"machine: %s is another build's segment (magic %#llx version %u header "
			"%u bytes base %#llx; this build: version %u header %zu bytes base %#llx)",
			path, (unsigned long long)h->magic, h->version, h->hdr_size,
			(unsigned long long)h->base, MACHINE_VERSION, sizeof(*h),
			(unsigned long long)MACHINE_BASE);
		sys_munmap((void *)h, (size_t)sb.st_size);
		return -EPROTO;
	}
	out->hdr = (struct machine_hdr *)h;
	out->len = (size_t)sb.st_size;
	rc = ld(&h->host_pid) != pid ? -EPROTO : machine_host_gone(out) ? -ENOENT : 0;
	if (rc) {
		if (rc == -EPROTO)
			set_err(err, errlen, "machine: %s is the segment of host pid %d, not of %d",
				path, (int)h->host_pid, pid);
		else
			set_err(err, errlen, "machine: %s: the host is gone", path);
		machine_clear(out);
		sys_munmap((void *)h, (size_t)sb.st_size);
	}
	return rc;
}

void machine_forked_child(struct machine *m)
{
	m->fd = -1;
	m->host = false;
	for (int i = 0; i < MACHINE_MAX_PROCS; i++)
		m->pidfd[i] = -1;
}

void machine_detach(struct machine *m)
{
	machine_unmap(m);
}

/* ---- room in the segment ------------------------------------------------------------------- */

void *machine_alloc(struct machine *m, size_t len)
{
	struct machine_hdr *h = m->hdr;
	uint64_t cur = ld(&h->alloc_off), off;

	do {
		off = align_up(cur, ALLOC_ALIGN);
		if (off > h->alloc_end || len > h->alloc_end - off)
			return NULL;
	} while (!cas(&h->alloc_off, &cur, off + len));
	return (char *)h + off;
}

uint64_t machine_meta_bytes(uint64_t pool_bytes)
{
	uint64_t frames = (pool_bytes + SEG_PAGE - 1) / SEG_PAGE;

	return align_up(frames * 64 + (1ULL << 20), SEG_PAGE);
}

void *machine_arena(const struct machine *m)
{
	return m->hdr->arena_len ? (char *)m->hdr + m->hdr->arena_off : NULL;
}

void *machine_at(const struct machine *m, uint64_t off)
{
	return off ? (char *)m->hdr + off : NULL;
}

uint64_t machine_off(const struct machine *m, const void *p)
{
	return p ? (uint64_t)((const char *)p - (const char *)m->hdr) : 0;
}

/* ---- the mm lock ---------------------------------------------------------------------------- */

void machine_lock(struct machine *m)
{
	struct machine_hdr *h = m->hdr;
	int rc = pthread_mutex_lock(&h->mm_lock);

	if (rc == 0)
		return;
	if (rc == EOWNERDEAD) {
		/* its owner died holding it, perhaps mid-update: repair the data under the lock;
		 * then the lock is made consistent whatever the repair said, or every later
		 * locker would get ENOTRECOVERABLE */
		int r = m->repair ? m->repair(m->repair_arg) : 0;

		if (r == 0)
			__atomic_add_fetch(&h->repairs, 1, __ATOMIC_SEQ_CST);
		else
			st(&h->tainted, 1);
		pthread_mutex_consistent(&h->mm_lock);
		return;
	}
	st(&h->tainted, 1); /* EINVAL, ENOTRECOVERABLE: the segment is not what it should be */
}

void machine_unlock(struct machine *m)
{
	pthread_mutex_unlock(&m->hdr->mm_lock);
}

bool machine_tainted(const struct machine *m)
{
	return ld(&m->hdr->tainted) != 0;
}

bool machine_host_gone(const struct machine *m)
{
	/* glibc's robust mutex word: the owner's tid, FUTEX_WAITERS, FUTEX_OWNER_DIED. The host
	 * unlocks it at machine_destroy (0); its death leaves FUTEX_OWNER_DIED with no tid. */
	uint32_t w = (uint32_t)__atomic_load_n(&m->hdr->host_alive.__data.__lock, __ATOMIC_ACQUIRE);

	if (m->host)
		return false;
	return (w & FUTEX_TID_MASK) == 0 || (w & FUTEX_OWNER_DIED);
}

/* ---- slots ---------------------------------------------------------------------------------- */

int machine_slot_take(struct machine *m)
{
	char comm[16];

	read_comm(comm); /* before taking one: keep the TAKING window short */
	return machine_slot_take_named(m, comm);
}

int machine_slot_take_named(struct machine *m, const char *name)
{
	struct machine_hdr *h = m->hdr;
	int pid = sys_getpid(), ppid = sys_getppid();
	uint64_t start = clock_now_ns();
	char comm[16] = "";

	strncpy(comm, name, sizeof(comm) - 1);
	for (int i = 1; i < MACHINE_MAX_PROCS; i++) {
		struct machine_slot *s = &h->slot[i];
		uint32_t free_state = MACHINE_SLOT_FREE;

		if (ld(&s->state) != MACHINE_SLOT_FREE ||
		    !cas(&s->state, &free_state, MACHINE_SLOT_TAKING))
			continue;
		__atomic_add_fetch(&h->nslots_live, 1, __ATOMIC_SEQ_CST);
		st(&s->pid, pid); /* first: the host reaps a TAKING slot whose pid is gone */
		st(&s->ppid, ppid);
		st(&s->start_ns, start);
		memcpy(s->comm, comm, sizeof(s->comm));
		for (unsigned k = 0; k < MACHINE_SLOT_MEM; k++)
			st(&s->mem[k], 0);
		__atomic_add_fetch(&s->gen, 1, __ATOMIC_SEQ_CST);
		st(&s->state, MACHINE_SLOT_LIVE);
		return i;
	}
	return -ENOSPC;
}

void machine_slot_leave(struct machine *m, int slot)
{
	struct machine_slot *s;
	uint32_t live = MACHINE_SLOT_LIVE;

	if (slot < 1 || slot >= MACHINE_MAX_PROCS)
		return;
	s = &m->hdr->slot[slot];
	cas(&s->state, &live, MACHINE_SLOT_EXITING);
	/* a requester waiting on the slot looks again now */
	__atomic_add_fetch(&s->mbox.resp_seq, 1, __ATOMIC_SEQ_CST);
	sys_futex_wake_shared(&s->mbox.resp_seq, INT_MAX);
}

const struct machine_slot *machine_slot(const struct machine *m, int slot)
{
	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return NULL;
	return &m->hdr->slot[slot];
}

void machine_slot_set_mem(struct machine *m, int slot, const uint64_t *mem)
{
	if (slot < 1 || slot >= MACHINE_MAX_PROCS)
		return;
	for (unsigned i = 0; i < MACHINE_SLOT_MEM; i++)
		__atomic_store_n(&m->hdr->slot[slot].mem[i], mem[i], __ATOMIC_RELAXED);
}

void machine_mem_sum(const struct machine *m, uint64_t *sum)
{
	memset(sum, 0, MACHINE_SLOT_MEM * sizeof(*sum));
	for (int i = 1; i < MACHINE_MAX_PROCS; i++) {
		const struct machine_slot *s = &m->hdr->slot[i];

		if (ld(&s->state) != MACHINE_SLOT_LIVE)
			continue;
		for (unsigned k = 0; k < MACHINE_SLOT_MEM; k++)
			sum[k] += __atomic_load_n(&s->mem[k], __ATOMIC_RELAXED);
	}
}

void machine_mem_offer(struct machine *m, const uint64_t *sum, uint64_t score)
{
	struct machine_hdr *h = m->hdr;

	if (score <= __atomic_load_n(&h->mem_peak_score, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&h->mem_lock, 1, __ATOMIC_ACQUIRE))
		return;
	if (score > h->mem_peak_score) {
		for (unsigned k = 0; k < MACHINE_SLOT_MEM; k++)
			__atomic_store_n(&h->mem_peak[k], sum[k], __ATOMIC_RELAXED);
		__atomic_store_n(&h->mem_peak_score, score, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&h->mem_lock, 0, __ATOMIC_RELEASE);
}

uint64_t machine_mem_peak(const struct machine *m, uint64_t *peak)
{
	const struct machine_hdr *h = m->hdr;

	for (unsigned k = 0; k < MACHINE_SLOT_MEM; k++)
		peak[k] = __atomic_load_n(&h->mem_peak[k], __ATOMIC_RELAXED);
	return __atomic_load_n(&h->mem_peak_score, __ATOMIC_RELAXED);
}

unsigned machine_nr_live(const struct machine *m)
{
	unsigned n = 0;

	for (int i = 1; i < MACHINE_MAX_PROCS; i++)
		n += ld(&m->hdr->slot[i].state) == MACHINE_SLOT_LIVE;
	return n;
}

/* ---- mailboxes ------------------------------------------------------------------------------ */

static void futex_wait_ns(uint32_t *word, uint32_t val, uint64_t rel_ns)
{
	struct timespec ts = {(time_t)(rel_ns / 1000000000ULL), (long)(rel_ns % 1000000000ULL)};

	sys_futex_wait_shared(word, val, rel_ns ? &ts : NULL);
}

static uint64_t answer_word(uint32_t tag, int rc)
{
	return (uint64_t)tag << 32 | (uint32_t)rc;
}

/* Answer request `tag` with rc (the agent, or the host for an agent that is gone). */
static void mbox_answer(struct machine_mailbox *mb, uint32_t tag, int rc)
{
	st(&mb->answer, answer_word(tag, rc));
	__atomic_add_fetch(&mb->resp_seq, 1, __ATOMIC_SEQ_CST);
	sys_futex_wake_shared(&mb->resp_seq, INT_MAX);
}

/* Is request `tag` answered? Then *rc is the answer. */
static bool mbox_answered(struct machine_mailbox *mb, uint32_t tag, int *rc)
{
	uint64_t a = ld(&mb->answer);

	if ((uint32_t)(a >> 32) != tag)
		return false;
	*rc = (int32_t)(uint32_t)a;
	return true;
}

/* Take back request `tag` if no agent took it. */
static bool mbox_withdraw(struct machine_mailbox *mb, uint32_t tag)
{
	uint32_t t = tag;

	return cas(&mb->req_seq, &t, tag + 1);
}

/* The mailbox's lock, waiting until deadline (CLOCK_MONOTONIC ns) at most: 0 or -EBUSY. */
static int mbox_lock(struct machine_mailbox *mb, uint64_t deadline)
{
	uint64_t now = clock_now_ns(),
		 abs = clock_realtime_ns() + (deadline > now ? deadline - now : 0);
	struct timespec ts = {(time_t)(abs / 1000000000ULL), (long)(abs % 1000000000ULL)};
	int rc = pthread_mutex_timedlock(&mb->lock, &ts);

	if (rc == EOWNERDEAD) {
		/* the previous requester died waiting: the mailbox holds nothing to repair (a
		 * request it left pending is withdrawn by the next one) */
		pthread_mutex_consistent(&mb->lock);
#ifdef MACHINE_TSAN
		/* TSan's timedlock interceptor records a lock only when it returned 0 */
		__tsan_mutex_pre_lock(&mb->lock, __tsan_mutex_try_lock);
		__tsan_mutex_post_lock(&mb->lock, __tsan_mutex_try_lock, 0);
#endif
		return 0;
	}
	return rc == 0 ? 0 : -EBUSY;
}

/* Is slot's process gone with nobody to reap it? Only the host reaps (machine_reap): once it is
 * gone itself, a requester looks for the process (kill 0: no descriptor in the program's
 * process; a zombie still counts, its parent reaps it), or would ask a dead process again and
 * again, each time until its timeout. The host's own slot 0 is gone with the host. */
static bool slot_gone_unreaped(const struct machine *m, int slot)
{
	if (!machine_host_gone(m))
		return false;
	return slot == 0 || sys_call2(SYS_kill, ld(&m->hdr->slot[slot].pid), 0) == -ESRCH;
}

/* One request. The answer is awaited until deadline; with `taken` set, only until the agent
 * took it, and then for as long as the slot's process is there. */
static int request(struct machine *m, int slot, uint32_t op, uint64_t owner, uint32_t from,
		   uint32_t to, uint64_t timeout_ns, bool taken_then_wait, uint64_t *reply)
{
	uint64_t deadline = clock_now_ns() + (timeout_ns < (1ULL << 62) ? timeout_ns : 1ULL << 62);
	struct machine_slot *s;
	struct machine_mailbox *mb;
	uint32_t gen, cur, tag;
	int rc;

	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return -EINVAL;
	s = &m->hdr->slot[slot];
	mb = &s->mbox;
	gen = ld(&s->gen);
	if (ld(&s->state) != MACHINE_SLOT_LIVE || slot_gone_unreaped(m, slot))
		return -ENOENT;
	rc = mbox_lock(mb, deadline);
	if (rc)
		return rc;
	if (ld(&s->state) != MACHINE_SLOT_LIVE || ld(&s->gen) != gen) {
		pthread_mutex_unlock(&mb->lock);
		return -ENOENT;
	}
	/* a request left pending by a requester that died is taken back first */
	cur = ld(&mb->req_seq);
	while ((cur & 1) && !cas(&mb->req_seq, &cur, cur + 1))
		;
	if (cur & 1)
		cur++;
	st(&mb->op, op);
	st(&mb->owner, owner);
	st(&mb->from, from);
	st(&mb->to, to);
	st(&mb->requester, sys_getpid());
	/* publish: req_seq is even here (kicks add 2 to an idle mailbox: retry on them) */
	while (!cas(&mb->req_seq, &cur, cur + 1))
		;
	tag = cur + 1;
	sys_futex_wake_shared(&mb->req_seq, INT_MAX);

	for (;;) {
		uint32_t seen = ld(&mb->resp_seq), state;
		uint64_t now;

		if (mbox_answered(mb, tag, &rc)) {
			if (reply)
				*reply = ld(&mb->reply);
			break;
		}
		state = ld(&s->state);
		if (ld(&s->gen) != gen || slot_gone_unreaped(m, slot) ||
		    (state != MACHINE_SLOT_LIVE && state != MACHINE_SLOT_EXITING)) {
			/* gone: reaped, or being reaped */
			if (mbox_withdraw(mb, tag) || !mbox_answered(mb, tag, &rc))
				rc = -ENOENT;
			break;
		}
		if (state == MACHINE_SLOT_EXITING && mbox_withdraw(mb, tag)) {
			rc = -ENOENT; /* said goodbye before taking it */
			break;
		}
		now = clock_now_ns();
		if (now >= deadline) {
			/* withdrawn, or taken and not answered: its answer, if it ever comes,
			 * carries a tag no later request has */
			if (mbox_withdraw(mb, tag)) {
				rc = -EBUSY;
				break;
			}
			if (!taken_then_wait) {
				if (!mbox_answered(mb, tag, &rc))
					rc = -EBUSY;
				break;
			}
			deadline = now + (1ULL << 62); /* taken: wait while the process is there */
			continue;
		}
		futex_wait_ns(&mb->resp_seq, seen,
			      deadline - now < REQ_SLICE_NS ? deadline - now : REQ_SLICE_NS);
	}
	pthread_mutex_unlock(&mb->lock);
	return rc;
}

int machine_request(struct machine *m, int slot, uint32_t op, uint64_t owner, uint32_t from,
		    uint32_t to, uint64_t timeout_ns)
{
	return request(m, slot, op, owner, from, to, timeout_ns, false, NULL);
}

int machine_request_long(struct machine *m, int slot, uint32_t op, uint64_t owner, uint32_t from,
			 uint32_t to, uint64_t take_timeout_ns, uint64_t *reply)
{
	return request(m, slot, op, owner, from, to, take_timeout_ns, true, reply);
}

bool machine_serve_wait(struct machine *m, int slot, const uint32_t *stop, uint64_t timeout_ns,
			uint32_t *op, uint64_t *owner, uint32_t *from, uint32_t *to)
{
	uint64_t deadline =
	    timeout_ns ? clock_now_ns() + (timeout_ns < (1ULL << 62) ? timeout_ns : 1ULL << 62) : 0;
	struct machine_slot *s;
	struct machine_mailbox *mb;

	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return false;
	s = &m->hdr->slot[slot];
	mb = &s->mbox;
	for (;;) {
		uint32_t r;
		uint64_t rel = 0;

		/* the word first, then stop: a kick sets stop before it changes the word, so either
		 * this reads the changed word and then sees stop, or the word changes after this
		 * read and the futex wait below returns at once (read the other way round, a kick
		 * between the two reads was lost: the wait slept on the changed word for ever) */
		r = ld(&mb->req_seq);
		if ((stop && ld(stop)) || ld(&s->state) != MACHINE_SLOT_LIVE)
			return false;
		if (r & 1) {
			uint32_t o = ld(&mb->op), f = ld(&mb->from), t = ld(&mb->to);
			uint64_t ow = ld(&mb->owner);

			/* the fields are the request's if it is still pending when taken: a new
			 * request is only written after this one was taken or withdrawn */
			if (!cas(&mb->req_seq, &r, r + 1))
				continue;
			st(&mb->claimed, r);
			*op = o;
			*owner = ow;
			*from = f;
			*to = t;
			return true;
		}
		if (deadline) {
			uint64_t now = clock_now_ns();

			if (now >= deadline)
				return false;
			rel = deadline - now;
		}
		futex_wait_ns(&mb->req_seq, r, rel);
	}
}

void machine_serve_done(struct machine *m, int slot, int rc)
{
	struct machine_mailbox *mb;

	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return;
	mb = &m->hdr->slot[slot].mbox;
	mbox_answer(mb, ld(&mb->claimed), rc);
}

void machine_serve_reply(struct machine *m, int slot, int rc, uint64_t reply)
{
	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return;
	st(&m->hdr->slot[slot].mbox.reply, reply);
	machine_serve_done(m, slot, rc);
}

void machine_serve_kick(struct machine *m, int slot)
{
	struct machine_mailbox *mb;
	uint32_t r;

	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return;
	mb = &m->hdr->slot[slot].mbox;
	/* change the futex word, or a kick just before the agent sleeps would be lost; an idle
	 * mailbox stays idle (even) */
	r = ld(&mb->req_seq);
	if (!(r & 1))
		cas(&mb->req_seq, &r, r + 2);
	sys_futex_wake_shared(&mb->req_seq, INT_MAX);
}

/* ---- reaping (the host) --------------------------------------------------------------------- */

/* Has process pid exited? (pidfd: readable once it has; a zombie counts as gone) */
static bool pidfd_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	struct timespec zero = {0, 0};

	return sys_ppoll(&p, 1, &zero) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

static bool pid_gone(int pid)
{
	int fd = sys_pidfd_open(pid, 0);
	bool gone;

	if (fd == -ESRCH)
		return true;
	if (fd < 0)
		return false; /* cannot tell now (EMFILE...): look again next time */
	gone = pidfd_exited(fd);
	sys_close(fd);
	return gone;
}

static void drop_pidfd(struct machine *m, int i)
{
	if (m->pidfd[i] >= 0)
		sys_close(m->pidfd[i]);
	m->pidfd[i] = -1;
	m->pidfd_gen[i] = 0;
}

/* Is the process of LIVE slot i (generation gen) gone? The pidfd is opened the first time the
 * slot is seen with this generation and kept: a pid reused later cannot fool it. */
static bool slot_gone(struct machine *m, int i, uint32_t gen)
{
	struct machine_slot *s = &m->hdr->slot[i];

	if (m->pidfd[i] < 0 || m->pidfd_gen[i] != gen) {
		int fd;

		drop_pidfd(m, i);
		fd = sys_pidfd_open(ld(&s->pid), 0);
		if (fd == -ESRCH)
			return ld(&s->gen) == gen;
		if (fd < 0)
			return false;
		if (ld(&s->gen) != gen || ld(&s->state) != MACHINE_SLOT_LIVE) {
			sys_close(fd); /* the slot changed hands while we looked */
			return false;
		}
		m->pidfd[i] = fd;
		m->pidfd_gen[i] = gen;
	}
	return pidfd_exited(m->pidfd[i]);
}

/* Fail what the slot's agent will never answer: a request it took, and one still pending. */
static void fail_requests(struct machine_mailbox *mb)
{
	uint32_t claimed = ld(&mb->claimed), r;
	int rc;

	if (claimed && !mbox_answered(mb, claimed, &rc))
		mbox_answer(mb, claimed, -ENOENT);
	r = ld(&mb->req_seq);
	if ((r & 1) && mbox_withdraw(mb, r))
		mbox_answer(mb, r, -ENOENT);
}

unsigned machine_reap(struct machine *m, void (*release)(void *arg, int slot), void *arg)
{
	struct machine_hdr *h = m->hdr;
	unsigned n = 0;

	for (int i = 1; i < MACHINE_MAX_PROCS; i++) {
		struct machine_slot *s = &h->slot[i];
		uint32_t state = ld(&s->state), gen = ld(&s->gen);
		bool gone;
		int pid;

		switch (state) {
		case MACHINE_SLOT_LIVE:
			gone = slot_gone(m, i, gen);
			break;
		case MACHINE_SLOT_TAKING:
			pid = ld(&s->pid); /* 0 until the taker wrote it (reaping cleared it) */
			gone = pid && pid_gone(pid);
			break;
		case MACHINE_SLOT_EXITING:
		case MACHINE_SLOT_DEAD:
			gone = true;
			break;
		default:
			drop_pidfd(m, i);
			continue;
		}
		if (!gone || !cas(&s->state, &state, MACHINE_SLOT_DEAD))
			continue;
		fail_requests(&s->mbox);
		if (release)
			release(arg, i);
		st(&s->pid, 0);
		st(&s->ppid, 0);
		st(&s->start_ns, 0);
		memset(s->comm, 0, sizeof(s->comm));
		for (unsigned k = 0; k < MACHINE_SLOT_MEM; k++)
			st(&s->mem[k], 0);
		drop_pidfd(m, i);
		__atomic_sub_fetch(&h->nslots_live, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&h->reaped, 1, __ATOMIC_SEQ_CST);
		st(&s->state, MACHINE_SLOT_FREE); /* last: free for the next taker */
		n++;
	}
	return n;
}

/* ---- who dirtied a file ------------------------------------------------------------------------
 */

static unsigned file_home(uint64_t file_id)
{
	return (unsigned)((file_id * 0x9e3779b97f4a7c15ULL) >> 54) % MACHINE_FILES;
}

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	for (; src && src[n] && n + 1 < len; n++)
		dst[n] = src[n];
	dst[n] = '\0';
}

void machine_file_note(struct machine *m, uint64_t file_id, int pid, const char *comm,
		       const char *path)
{
	struct machine_file *t = m->hdr->files;

	if (!file_id)
		return;
	for (unsigned k = 0, i = file_home(file_id); k < MACHINE_FILES;
	     k++, i = (i + 1) % MACHINE_FILES) {
		uint64_t cur = __atomic_load_n(&t[i].file_id, __ATOMIC_ACQUIRE);

		if (cur != file_id && cur != 0)
			continue;
		if (cur == 0 &&
		    !__atomic_compare_exchange_n(&t[i].file_id, &cur, file_id, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
		    cur != file_id)
			continue; /* another file took this entry first */
		__atomic_store_n(&t[i].pid, pid, __ATOMIC_RELAXED);
		copy_name(t[i].comm, sizeof(t[i].comm), comm);
		copy_name(t[i].path, sizeof(t[i].path), path);
		return;
	}
}

bool machine_file_who(const struct machine *m, uint64_t file_id, struct machine_file *out)
{
	const struct machine_file *t = m->hdr->files;

	if (!file_id)
		return false;
	for (unsigned k = 0, i = file_home(file_id); k < MACHINE_FILES;
	     k++, i = (i + 1) % MACHINE_FILES) {
		uint64_t cur = __atomic_load_n(&t[i].file_id, __ATOMIC_ACQUIRE);

		if (!cur)
			return false;
		if (cur == file_id) {
			*out = t[i];
			out->comm[sizeof(out->comm) - 1] = '\0';
			out->path[sizeof(out->path) - 1] = '\0';
			return true;
		}
	}
	return false;
}

/* ---- shared memory objects ----------------------------------------------------------------- */

static bool shmem_mapped(const struct machine_shmem *o)
{
	for (unsigned i = 0; i < MACHINE_MAX_PROCS / 64; i++)
		if (o->mappers[i])
			return true;
	return false;
}

static void shmem_bit(struct machine_shmem *o, int slot, bool on)
{
	uint64_t bit = 1ULL << ((unsigned)slot % 64);

	if (slot < 0 || slot >= MACHINE_MAX_PROCS)
		return;
	if (on)
		o->mappers[slot / 64] |= bit;
	else
		o->mappers[slot / 64] &= ~bit;
}

int machine_shmem_get(struct machine_shmem *tab, uint64_t dev, uint64_t ino, bool anon, int slot)
{
	int free = -1;

	for (int i = 0; i < MACHINE_SHMEM_OBJECTS; i++) {
		struct machine_shmem *o = &tab[i];

		if (o->state == MACHINE_SHMEM_FREE && free < 0)
			free = i;
		if (!anon && o->state == MACHINE_SHMEM_LIVE && !o->anon && o->dev == dev &&
		    o->ino == ino) {
			shmem_bit(o, slot, true);
			return i + 1;
		}
	}
	if (free < 0)
		return -ENOSPC;
	memset(&tab[free], 0, sizeof(tab[free]));
	tab[free].state = MACHINE_SHMEM_LIVE;
	tab[free].anon = anon;
	tab[free].dev = dev;
	tab[free].ino = ino;
	shmem_bit(&tab[free], slot, true);
	return free + 1;
}

int machine_shmem_find(const struct machine_shmem *tab, uint64_t dev, uint64_t ino)
{
	for (int i = 0; i < MACHINE_SHMEM_OBJECTS; i++)
		if (tab[i].state == MACHINE_SHMEM_LIVE && !tab[i].anon && tab[i].dev == dev &&
		    tab[i].ino == ino)
			return i + 1;
	return 0;
}

void machine_shmem_map(struct machine_shmem *tab, uint32_t id, int slot)
{
	if (id >= 1 && id <= MACHINE_SHMEM_OBJECTS && tab[id - 1].state == MACHINE_SHMEM_LIVE)
		shmem_bit(&tab[id - 1], slot, true);
}

bool machine_shmem_unmap(struct machine_shmem *tab, uint32_t id, int slot)
{
	struct machine_shmem *o;

	if (id < 1 || id > MACHINE_SHMEM_OBJECTS)
		return false;
	o = &tab[id - 1];
	if (o->state != MACHINE_SHMEM_LIVE)
		return false;
	shmem_bit(o, slot, false);
	if (!o->anon || shmem_mapped(o))
		return false;
	o->state = MACHINE_SHMEM_RELEASING;
	return true;
}

void machine_shmem_released(struct machine_shmem *tab, uint32_t id)
{
	if (id >= 1 && id <= MACHINE_SHMEM_OBJECTS)
		memset(&tab[id - 1], 0, sizeof(tab[id - 1]));
}

unsigned machine_shmem_slot_gone(struct machine_shmem *tab, int slot, uint32_t *ids, unsigned max)
{
	unsigned n = 0;

	for (uint32_t i = 1; i <= MACHINE_SHMEM_OBJECTS && n < max; i++)
		if (machine_shmem_unmap(tab, i, slot))
			ids[n++] = i;
	return n;
}
