/* Lock-free log ring (see log.h).
 *
 * Plays the part of printk's lockless ringbuffer for threads that may not take a lock: a
 * bounded multi-producer queue where each slot carries a sequence number. A producer claims
 * position p when slot p's sequence equals p, fills the record and publishes it by setting the
 * sequence to p + 1; the consumer takes it when it sees p + 1 and hands the slot back for lap
 * p + capacity. A full ring drops the new record and counts it.
 */
#include "obs/log.h"

#include "util/units.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOAD(p)         __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

struct obs_log {
	size_t map_len;   /* bytes mapped */
	uint64_t mask;    /* capacity - 1 */
	uint32_t level;   /* highest level kept */
	uint32_t draining; /* a consumer is active */
	uint64_t head;    /* next position producers claim */
	uint64_t tail;    /* next position the consumer reads (consumer-owned) */
	uint64_t dropped; /* records lost to a full ring */
	uint64_t reported_dropped; /* dropped records already reported by obs_log_print */
	struct obs_log_rec recs[];
};

/* The logging thread's tid, cached (gettid is a real syscall, the costliest part of a record).
 * Initial-exec TLS: no allocation on first access inside a preloaded library. A fork child's
 * surviving thread has a new tid, so the atfork hook forgets the cached one. */
static __thread pid_t tls_tid __attribute__((tls_model("initial-exec")));
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void forget_tid(void)
{
	tls_tid = 0;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static pid_t cached_tid(void)
{
	if (!tls_tid)
		tls_tid = (pid_t)syscall(SYS_gettid);
	return tls_tid;
}

static const char *const level_names[OBS_LOG_NLEVELS] = {
	[OBS_LOG_ERR] = "error",
	[OBS_LOG_WARN] = "warning",
	[OBS_LOG_INFO] = "info",
	[OBS_LOG_DEBUG] = "debug",
};

const char *obs_log_level_name(enum obs_log_level l)
{
	return l < OBS_LOG_NLEVELS ? level_names[l] : "?";
}

int obs_log_create(struct obs_log **out, unsigned capacity, enum obs_log_level level)
{
	uint64_t cap = 2;
	size_t len;
	long p;
	struct obs_log *l;

	if (!capacity || capacity > (1U << 24) || level >= OBS_LOG_NLEVELS)
		return -EINVAL;
	pthread_once(&atfork_once, register_atfork);
	while (cap < capacity)
		cap <<= 1;
	len = (sizeof(*l) + cap * sizeof(struct obs_log_rec) + 4095) & ~(size_t)4095;
	/* raw mmap: in the preload library mmap() is the shim's interposed name */
	p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	if (p < 0 && p > -4096)
		return -ENOMEM;
	l = (struct obs_log *)p;
	l->map_len = len;
	l->mask = cap - 1;
	l->level = level;
	for (uint64_t i = 0; i < cap; i++)
		l->recs[i].seq = i;
	*out = l;
	return 0;
}

void obs_log_destroy(struct obs_log *l)
{
	if (l)
		syscall(SYS_munmap, l, l->map_len);
}

void obs_log_set_level(struct obs_log *l, enum obs_log_level level)
{
	__atomic_store_n(&l->level, (uint32_t)level, __ATOMIC_RELAXED);
}

bool obs_log_enabled(const struct obs_log *l, enum obs_log_level level)
{
	return l && (uint32_t)level <= LOAD(&l->level);
}

uint64_t obs_log_dropped(const struct obs_log *l)
{
	return LOAD(&l->dropped);
}

/* Claim a slot; NULL when the ring is full. */
static struct obs_log_rec *claim(struct obs_log *l, uint64_t *pos_out)
{
	uint64_t pos = LOAD(&l->head);

	for (;;) {
		struct obs_log_rec *r = &l->recs[pos & l->mask];
		int64_t dif = (int64_t)(LOAD_ACQ(&r->seq) - pos);

		if (dif == 0) {
			if (__atomic_compare_exchange_n(&l->head, &pos, pos + 1, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				*pos_out = pos;
				return r;
			}
		} else if (dif < 0) {
			return NULL; /* the slot still holds last lap's record: full */
		} else {
			pos = LOAD(&l->head);
		}
	}
}

int obs_log_put(struct obs_log *l, enum obs_log_level level, int code, const char *fmt,
		unsigned nargs, const long long *a)
{
	struct obs_log_rec *r;
	struct timespec ts;
	uint64_t pos;

	if (!obs_log_enabled(l, level))
		return 1;
	r = claim(l, &pos);
	if (!r) {
		__atomic_fetch_add(&l->dropped, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r->t_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	r->fmt = fmt;
	r->tid = (int32_t)cached_tid();
	r->code = code;
	r->level = (uint8_t)level;
	r->nargs = (uint8_t)(nargs > OBS_LOG_MAX_ARGS ? OBS_LOG_MAX_ARGS : nargs);
	for (unsigned i = 0; i < OBS_LOG_MAX_ARGS; i++)
		r->a[i] = i < r->nargs ? a[i] : 0;
	STORE_REL(&r->seq, pos + 1);
	return 0;
}

size_t obs_log_drain(struct obs_log *l, void (*fn)(void *arg, const struct obs_log_rec *r),
		     void *arg)
{
	uint32_t idle = 0;
	size_t n = 0;

	if (!__atomic_compare_exchange_n(&l->draining, &idle, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return 0;
	for (;;) {
		uint64_t pos = l->tail;
		struct obs_log_rec *r = &l->recs[pos & l->mask], copy;

		if (LOAD_ACQ(&r->seq) != pos + 1)
			break; /* empty, or the next record is still being written */
		copy = *r;
		STORE_REL(&r->seq, pos + l->mask + 1);
		l->tail = pos + 1;
		fn(arg, &copy);
		n++;
	}
	STORE_REL(&l->draining, 0);
	return n;
}

const char *obs_log_format(const struct obs_log_rec *r, char *buf, size_t len)
{
	/* the format was checked against long long arguments by OBS_LOG; extra ones are ignored */
	snprintf(buf, len, r->fmt ? r->fmt : "(null)", r->a[0], r->a[1], r->a[2], r->a[3]);
	return buf;
}

struct print_ctx {
	FILE *f;
	unsigned flags;
	uint64_t t0_ns;
};

static void print_one(void *arg, const struct obs_log_rec *r)
{
	const struct print_ctx *c = arg;
	char msg[512];

	obs_log_format(r, msg, sizeof(msg));
	if (c->flags & OBS_LOG_PRINT_VERBOSE) {
		uint64_t t = r->t_ns > c->t0_ns ? r->t_ns - c->t0_ns : 0;

		fprintf(c->f, "thpemu[%d] %" PRIu64 ".%06" PRIu64 " %s: %s (code %d)\n", r->tid,
			t / UINT64_C(1000000000), (t / UINT64_C(1000)) % UINT64_C(1000000),
			obs_log_level_name(r->level), msg, r->code);
	} else {
		fprintf(c->f, "thpemu: %s: %s\n", obs_log_level_name(r->level), msg);
	}
}

size_t obs_log_print(struct obs_log *l, FILE *f, unsigned flags, uint64_t t0_ns)
{
	struct print_ctx c = {f, flags, t0_ns};
	size_t n = obs_log_drain(l, print_one, &c);
	uint64_t dropped = LOAD(&l->dropped), seen = LOAD(&l->reported_dropped);

	/* claim the range (seen, dropped] so concurrent printers never report a loss twice */
	while (seen < dropped &&
	       !__atomic_compare_exchange_n(&l->reported_dropped, &seen, dropped, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (seen < dropped)
		fprintf(f, "thpemu: warning: %" PRIu64 " log records dropped (log ring full)\n",
			dropped - seen);
	return n;
}
