/* A lock-free, allocation-free log ring for threads that must not call stdio or malloc.
 *
 * Handler threads (and signal handlers) log fixed-size records: time, level, a code, up to four
 * integers and a static printf format that uses only 64-bit integer conversions (%lld, %llu,
 * %llx, or PRId64/PRIu64/PRIx64). A thread outside the fault path, or the exit path, drains the
 * ring and prints. The kernel's analogue is printk's lockless ringbuffer: writers never wait;
 * when the ring is full a record is dropped and counted, never blocking the writer.
 *
 * Multi-producer, single-consumer at a time (bounded queue with per-slot sequence numbers).
 *
 *   OBS_LOG(ring, OBS_LOG_WARN, -err, "UFFDIO_COPY failed at %#llx: errno %lld", addr, -err);
 *
 * The macro checks the format against its arguments (cast to long long) at compile time.
 */
#ifndef THPEMU_OBS_LOG_H
#define THPEMU_OBS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum obs_log_level {
	OBS_LOG_ERR,
	OBS_LOG_WARN,
	OBS_LOG_INFO,
	OBS_LOG_DEBUG,
	OBS_LOG_NLEVELS,
};
const char *obs_log_level_name(enum obs_log_level l);

#define OBS_LOG_MAX_ARGS 4

struct obs_log_rec {
	uint64_t seq;      /* slot sequence (ring bookkeeping) */
	uint64_t t_ns;     /* CLOCK_MONOTONIC when logged */
	const char *fmt;   /* static format, 64-bit integer conversions only */
	long long a[OBS_LOG_MAX_ARGS]; /* its arguments; unused ones are 0 */
	int32_t tid;       /* logging thread */
	int32_t code;      /* caller's code (an errno, an event number...) */
	uint8_t level;     /* enum obs_log_level */
	uint8_t nargs;     /* arguments used */
};

struct obs_log;

/* A ring of capacity records (rounded up to a power of two, at least 2) keeping records at or
 * below `level`. Memory comes from mmap, not malloc. Returns 0, -EINVAL or -ENOMEM. */
int obs_log_create(struct obs_log **out, unsigned capacity, enum obs_log_level level);
void obs_log_destroy(struct obs_log *l);
void obs_log_set_level(struct obs_log *l, enum obs_log_level level);
bool obs_log_enabled(const struct obs_log *l, enum obs_log_level level);
/* Records lost because the ring was full. */
uint64_t obs_log_dropped(const struct obs_log *l);

/* Append a record (lock-free, allocation-free, async-signal-safe). a holds nargs values.
 * Returns 0, 1 (level filtered out) or -ENOSPC (ring full: dropped and counted). */
int obs_log_put(struct obs_log *l, enum obs_log_level level, int code, const char *fmt,
		unsigned nargs, const long long *a);

/* Consumer side: hand every available record, oldest first, to fn. Only one drain runs at a
 * time; a concurrent call returns 0 at once. Returns the number of records consumed. */
size_t obs_log_drain(struct obs_log *l, void (*fn)(void *arg, const struct obs_log_rec *r),
		     void *arg);
/* The record's message (its format applied to its arguments) into buf. Returns buf. */
const char *obs_log_format(const struct obs_log_rec *r, char *buf, size_t len);

#define OBS_LOG_PRINT_VERBOSE 1U /* prefix time since `t0_ns`, tid and code */
/* Drain and print "thpemu: LEVEL: message" lines to f (and a line saying how many records were
 * dropped since the last print). Returns the number of records printed. */
size_t obs_log_print(struct obs_log *l, FILE *f, unsigned flags, uint64_t t0_ns);

/* ---- The logging macro ---------------------------------------------------------------- */

static inline __attribute__((format(printf, 1, 2))) void obs_log_fmt_check_(const char *fmt, ...)
{
	(void)fmt;
}

#define OBS_LOG_N_(_0, _1, _2, _3, _4, N, ...) N
#define OBS_LOG_NARGS_(...) OBS_LOG_N_(_0, ##__VA_ARGS__, 4, 3, 2, 1, 0)
#define OBS_LOG_C0_()
#define OBS_LOG_C1_(a) , (long long)(a)
#define OBS_LOG_C2_(a, b) , (long long)(a), (long long)(b)
#define OBS_LOG_C3_(a, b, c) , (long long)(a), (long long)(b), (long long)(c)
#define OBS_LOG_C4_(a, b, c, d) , (long long)(a), (long long)(b), (long long)(c), (long long)(d)
#define OBS_LOG_CAT__(a, b) a##b
#define OBS_LOG_CAT_(a, b) OBS_LOG_CAT__(a, b)
/* ", (long long)(x), ..." for each argument, nothing for none */
#define OBS_LOG_CASTS_(...)                                                                        \
	OBS_LOG_CAT_(OBS_LOG_CAT_(OBS_LOG_C, OBS_LOG_NARGS_(__VA_ARGS__)), _)(__VA_ARGS__)

#define OBS_LOG(ring, level, code, fmt, ...)                                                 \
	do {                                                                                 \
		if (obs_log_enabled((ring), (level))) {                                      \
			long long obs_log_a_[OBS_LOG_MAX_ARGS + 1] = {                       \
				0 OBS_LOG_CASTS_(__VA_ARGS__)};                              \
			if (0)                                                               \
				obs_log_fmt_check_(fmt OBS_LOG_CASTS_(__VA_ARGS__));         \
			obs_log_put((ring), (level), (code), (fmt),                          \
				    OBS_LOG_NARGS_(__VA_ARGS__), obs_log_a_ + 1);            \
		}                                                                            \
	} while (0)

#endif
