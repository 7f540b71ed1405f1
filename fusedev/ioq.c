/* fusedev device queue: holds FUSE replies for the time the device model says the request
 * takes, like a block driver completing a bio from its interrupt handler (here: a completion
 * thread sleeping until the model's next completion with an absolute CLOCK_MONOTONIC deadline,
 * so lateness never accumulates). Workers only enqueue: they never sleep, so the number of
 * requests in flight is whatever the kernel sends, not the size of libfuse's thread pool.
 * Nothing sleeps holding the lock (the condition wait releases it) and replies are sent
 * outside it.
 */
#include "fusedev.h"
#include "util/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum io_op { IO_WRITE, IO_READ, IO_FSYNC };

struct fdev_io {
	struct devm_req dr; /* the model's view; dr.cookie points back here */
	fuse_req_t req;
	enum io_op op;
	size_t count; /* bytes to report (write) or to return (read) */
	char *buf;    /* read data, owned */
};

#define BATCH 64

uint64_t fdev_ioq_now(const struct fdev *fs)
{
	return clock_now_ns() - fs->q.t0;
}

static void reply(struct fdev *fs, struct fdev_io *io, uint64_t now)
{
	struct fdev_iostats *st = &fs->q.st;
	const struct devm_req *r = &io->dr;
	int err = -r->err;

	obs_hist_record(&st->service, r->t_done - r->t_start);
	obs_hist_record(&st->latency, r->t_done - r->t_arrive);
	obs_hist_record(&st->lag, now > r->t_done ? now - r->t_done : 0);
	if (err == EIO)
		atomic_fetch_add(&st->replies_eio, 1);
	else if (err == ENOSPC)
		atomic_fetch_add(&st->replies_enospc, 1);
	if (err)
		fuse_reply_err(io->req, err);
	else if (io->op == IO_WRITE)
		fuse_reply_write(io->req, io->count);
	else if (io->op == IO_READ)
		fuse_reply_buf(io->req, io->buf, io->count);
	else
		fuse_reply_err(io->req, 0);
	free(io->buf);
	free(io);
}

static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void wait_until(struct fdev_ioq *q, uint64_t t)
{
	struct timespec ts;
	uint64_t abs;

	if (t == UINT64_MAX) {
		pthread_cond_wait(&q->cond, &q->lock);
		return;
	}
	abs = q->t0 + t;
	ts.tv_sec = (time_t)(abs / 1000000000ULL);
	ts.tv_nsec = (long)(abs % 1000000000ULL);
	pthread_cond_timedwait(&q->cond, &q->lock, &ts);
}

/* A device's completion interrupt preempts ordinary work: raise this thread's priority when
 * allowed (root or CAP_SYS_NICE), so a busy host delays replies less. Best effort. */
static void raise_priority(void)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), -10))
		(void)0; /* unprivileged: stay at the default */
}

static void *completer(void *arg)
{
	struct fdev *fs = arg;
	struct fdev_ioq *q = &fs->q;
	struct fdev_io *batch[BATCH];

	block_signals();
	raise_priority();
	pthread_mutex_lock(&q->lock);
	for (;;) {
		uint64_t now = fdev_ioq_now(fs);
		struct devm_req *r;
		unsigned n = 0;

		while (n < BATCH && (r = devm_pop_done(q->dev, now)))
			batch[n++] = r->cookie;
		if (n) {
			pthread_mutex_unlock(&q->lock);
			for (unsigned i = 0; i < n; i++)
				reply(fs, batch[i], now);
			pthread_mutex_lock(&q->lock);
			continue;
		}
		if (q->stop)
			break;
		q->wake_at = devm_next_completion(q->dev);
		wait_until(q, q->wake_at);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int fdev_ioq_start(struct fdev *fs)
{
	struct fdev_ioq *q = &fs->q;
	pthread_condattr_t ca;
	struct devm_params p = fs->o.dev;
	int err;

	p.capacity = 0; /* the filesystem enforces capacity (ENOSPC at write time) */
	obs_hist_init(&q->st.service);
	obs_hist_init(&q->st.latency);
	obs_hist_init(&q->st.lag);
	err = devm_create(&p, fs->o.seed, &q->dev);
	if (err)
		return err;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	q->t0 = clock_now_ns();
	q->wake_at = UINT64_MAX;
	err = -pthread_create(&q->thread, NULL, completer, fs);
	if (err)
		goto out_destroy;
	q->started = true;
	return 0;
out_destroy:
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	devm_destroy(q->dev);
	q->dev = NULL;
	return err;
}

void fdev_ioq_stop(struct fdev *fs)
{
	struct fdev_ioq *q = &fs->q;
	struct devm_req *r;

	if (!q->started)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	/* Whatever is still held has its data stored: complete it now, as the device would if
	 * it were given all the time in the world. */
	devm_resume(q->dev, fdev_ioq_now(fs));
	while ((r = devm_pop_done(q->dev, UINT64_MAX - 1)))
		reply(fs, r->cookie, fdev_ioq_now(fs));
	devm_destroy(q->dev);
	q->dev = NULL;
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	q->started = false;
}

static void submit(struct fdev *fs, fuse_req_t req, enum io_op op, uint64_t off, size_t len,
		   char *buf)
{
	struct fdev_ioq *q = &fs->q;
	struct fdev_io *io = malloc(sizeof(*io)), *due[BATCH];
	struct devm_req *r;
	unsigned n = 0;
	uint64_t now;

	if (!io) {
		free(buf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*io = (struct fdev_io){
	    .dr = {.off = off, .len = len, .write = op != IO_READ, .cookie = io},
	    .req = req,
	    .op = op,
	    .count = len,
	    .buf = buf,
	};
	pthread_mutex_lock(&q->lock);
	now = fdev_ioq_now(fs);
	devm_submit(q->dev, now, &io->dr);
	/* Whatever is already due (an unthrottled device completes at arrival) is replied
	 * here, saving the completion thread's wake-up; the rest waits for it. */
	while (n < BATCH && (r = devm_pop_done(q->dev, now)))
		due[n++] = r->cookie;
	if (devm_next_completion(q->dev) < q->wake_at)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < n; i++)
		reply(fs, due[i], now);
}

void fdev_ioq_write(struct fdev *fs, fuse_req_t req, uint64_t dev_off, size_t len)
{
	submit(fs, req, IO_WRITE, dev_off, len, NULL);
}

void fdev_ioq_read(struct fdev *fs, fuse_req_t req, uint64_t dev_off, char *buf, size_t len)
{
	submit(fs, req, IO_READ, dev_off, len, buf);
}

/* A cache flush: a zero-length write that completes once the medium is free. */
void fdev_ioq_fsync(struct fdev *fs, fuse_req_t req, uint64_t dev_off)
{
	submit(fs, req, IO_FSYNC, dev_off, 0, NULL);
}

void fdev_ioq_pause(struct fdev *fs)
{
	pthread_mutex_lock(&fs->q.lock);
	devm_pause(fs->q.dev, fdev_ioq_now(fs));
	pthread_cond_signal(&fs->q.cond);
	pthread_mutex_unlock(&fs->q.lock);
}

void fdev_ioq_resume(struct fdev *fs)
{
	pthread_mutex_lock(&fs->q.lock);
	devm_resume(fs->q.dev, fdev_ioq_now(fs));
	pthread_cond_signal(&fs->q.cond);
	pthread_mutex_unlock(&fs->q.lock);
}

int fdev_ioq_set(struct fdev *fs, const char *key, const char *value)
{
	int err;

	pthread_mutex_lock(&fs->q.lock);
	err = devm_set(fs->q.dev, fdev_ioq_now(fs), key, value);
	pthread_cond_signal(&fs->q.cond);
	pthread_mutex_unlock(&fs->q.lock);
	return err;
}

void fdev_ioq_snapshot(struct fdev *fs, struct devm_params *p, struct devm_stats *s)
{
	pthread_mutex_lock(&fs->q.lock);
	*p = *devm_params(fs->q.dev);
	devm_get_stats(fs->q.dev, s);
	pthread_mutex_unlock(&fs->q.lock);
}
