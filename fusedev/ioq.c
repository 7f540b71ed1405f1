/* fusedev device queue: holds FUSE replies for the time the device model says the request
 * takes, like a block driver completing a bio from its interrupt handler (here: a completion
 * thread sleeping until the model's next completion with an absolute CLOCK_MONOTONIC deadline,
 * so lateness never accumulates). Workers only enqueue: they never sleep, so the number of
 * requests in flight is whatever the kernel sends, not the size of libfuse's thread pool.
 * Nothing sleeps holding the lock (the condition wait releases it) and replies are sent
 * outside it.
 *
 * A sender that gives up on a held request gets its answer at once (EINTR), while the device
 * goes on serving the request: a medium does not stop writing because its submitter left. The
 * kernel tells us with FUSE_INTERRUPT, and only two senders count as giving up: an io_uring
 * worker (it is interrupted only when its ring cancels the request or its task exits: a thpemu
 * flusher that timed a request out, or that is ending) and a thread with SIGKILL pending (a
 * dying process). Every other sender keeps waiting, as it would on a disk: a program's read
 * or write to the device never returns EINTR because a signal arrived. Without this, the exit
 * of `thpemu run` (its flusher thread's exit waits for its io_uring workers) waited for
 * everything the device still held, 10 s and more for a slow stick.
 */
#include "fusedev.h"
#include "util/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum io_op { IO_WRITE, IO_READ, IO_FSYNC };

/* Who answers the request (q->lock) */
enum io_state {
	IOS_HELD,      /* the completion, when the device model is done with it */
	IOS_ABANDONED, /* on q->abandoned: the completion thread, at once, with EINTR */
	IOS_ANSWERED,  /* answered early; the completion only frees it */
	IOS_DONE,      /* taken off the model: whoever took it answers */
};

struct fdev_io {
	struct devm_req dr; /* the model's view; dr.cookie points back here */
	fuse_req_t req;
	struct fdev *fs;
	enum io_op op;
	enum io_state state;
	struct fdev_io *next_abandoned;
	size_t count; /* bytes to report (write) or to return (read) */
	char *buf;    /* read data, owned */
};

#define BATCH 64

uint64_t fdev_ioq_now(const struct fdev *fs)
{
	return clock_now_ns() - fs->q.t0;
}

/* Answers a request the model has completed (state IOS_DONE), or frees one answered early. */
static void reply(struct fdev *fs, struct fdev_io *io, uint64_t now)
{
	struct fdev_iostats *st = &fs->q.st;
	const struct devm_req *r = &io->dr;
	int err = -r->err;

	obs_hist_record(&st->service, r->t_done - r->t_start);
	obs_hist_record(&st->latency, r->t_done - r->t_arrive);
	obs_hist_record(&st->lag, now > r->t_done ? now - r->t_done : 0);
	if (io->state == IOS_ANSWERED) {
		free(io->buf);
		free(io);
		return;
	}
	/* Waits out an interrupt callback running on another thread; none can start after. */
	fuse_req_interrupt_func(io->req, NULL, NULL);
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

/* Takes up to max completed requests off the model (q->lock held). One that had been
 * abandoned but not answered yet is answered normally now: its completion came first. */
static unsigned take_done(struct fdev_ioq *q, uint64_t now, struct fdev_io **out, unsigned max)
{
	struct devm_req *r;
	unsigned n = 0;

	while (n < max && (r = devm_pop_done(q->dev, now))) {
		struct fdev_io *io = r->cookie;

		if (io->state == IOS_ABANDONED) {
			struct fdev_io **pp = &q->abandoned;

			while (*pp != io)
				pp = &(*pp)->next_abandoned;
			*pp = io->next_abandoned;
		}
		if (io->state != IOS_ANSWERED)
			io->state = IOS_DONE;
		out[n++] = io;
	}
	return n;
}

/* Takes up to max abandoned requests to answer (q->lock held). From here on the completion
 * only frees them, and only their fuse_req_t is used: the io may be freed at any moment. */
static unsigned take_abandoned(struct fdev_ioq *q, fuse_req_t *out, unsigned max)
{
	unsigned n = 0;

	while (n < max && q->abandoned) {
		struct fdev_io *io = q->abandoned;

		q->abandoned = io->next_abandoned;
		io->state = IOS_ANSWERED;
		out[n++] = io->req;
	}
	return n;
}

static void answer_abandoned(struct fdev *fs, fuse_req_t *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		fuse_req_interrupt_func(reqs[i], NULL, NULL);
		fuse_reply_err(reqs[i], EINTR);
	}
	atomic_fetch_add(&fs->q.st.replies_abandoned, n);
}

/* Reads the first line starting with key from /proc/TID/FILE into buf. */
static bool proc_line(pid_t tid, const char *file, const char *key, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, file);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(buf, (int)len, f))
		found = !strncmp(buf, key, strlen(key));
	fclose(f);
	return found;
}

/* Is SIGKILL in the signal set of /proc/TID/status's line key (SigPnd: the thread's own,
 * ShdPnd: its process's)? */
static bool sigkill_pending(pid_t tid, const char *key)
{
	char line[128];
	unsigned long long set;

	return proc_line(tid, "status", key, line, sizeof(line)) &&
	       sscanf(line + strlen(key), "%llx", &set) == 1 && (set & (1ULL << (SIGKILL - 1)));
}

/* Has the sender of req given up waiting (see the top of the file)? */
static bool sender_gave_up(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	char line[64];

	if (!c || c->pid <= 0)
		return false;
	return proc_line(c->pid, "comm", "iou-wrk-", line, sizeof(line)) ||
	       sigkill_pending(c->pid, "SigPnd:") || sigkill_pending(c->pid, "ShdPnd:");
}

/* libfuse's interrupt callback (FUSE_INTERRUPT for a held request), called with the
 * request's own lock held: it may not answer the request itself, the completion thread does. */
static void on_interrupt(fuse_req_t req, void *data)
{
	struct fdev_io *io = data;
	struct fdev_ioq *q = &io->fs->q;

	if (!sender_gave_up(req))
		return;
	pthread_mutex_lock(&q->lock);
	if (io->state == IOS_HELD) {
		io->state = IOS_ABANDONED;
		io->next_abandoned = q->abandoned;
		q->abandoned = io;
		pthread_cond_signal(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
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
	fuse_req_t gave_up[BATCH];

	block_signals();
	raise_priority();
	pthread_mutex_lock(&q->lock);
	for (;;) {
		uint64_t now = fdev_ioq_now(fs);
		unsigned n = take_done(q, now, batch, BATCH);
		unsigned na = take_abandoned(q, gave_up, BATCH);

		if (n || na) {
			pthread_mutex_unlock(&q->lock);
			answer_abandoned(fs, gave_up, na);
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
	for (;;) {
		struct fdev_io *io;
		unsigned n;

		pthread_mutex_lock(&q->lock);
		n = take_done(q, UINT64_MAX - 1, &io, 1);
		pthread_mutex_unlock(&q->lock);
		if (!n)
			break;
		reply(fs, io, fdev_ioq_now(fs));
	}
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
	unsigned n;
	uint64_t now;

	if (!io) {
		free(buf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*io = (struct fdev_io){
	    .dr = {.off = off, .len = len, .write = op != IO_READ, .cookie = io},
	    .req = req,
	    .fs = fs,
	    .op = op,
	    .state = IOS_HELD,
	    .count = len,
	    .buf = buf,
	};
	/* Before the request is visible to the completion (which may answer it at once), and
	 * outside q->lock (the callback takes it): an interrupt that came first calls it now. */
	fuse_req_interrupt_func(req, on_interrupt, io);
	pthread_mutex_lock(&q->lock);
	now = fdev_ioq_now(fs);
	devm_submit(q->dev, now, &io->dr);
	/* Whatever is already due (an unthrottled device completes at arrival) is replied
	 * here, saving the completion thread's wake-up; the rest waits for it. */
	n = take_done(q, now, due, BATCH);
	if (devm_next_completion(q->dev) < q->wake_at || q->abandoned)
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
