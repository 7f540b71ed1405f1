/* The in-process backend: with no device (--device none, or no FUSE), the device model of
 * core/io/devmodel stands in, in real time. A request is handed to the model at submission and
 * completes when the model says the device would have finished it; the flusher sleeps until the
 * next such moment (or a kick). Written data is dropped, reads return zeros: what matters here
 * is how long pages stay under writeback, not where their bytes go.
 *
 * The model is driven by the flusher thread only (it is not thread-safe and needs no lock).
 * A paused or "dead" model never completes anything: the engine's timeout then ends the pages.
 */
#include "io/io_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

struct model_be {
	struct devm *m;
	uint64_t t0;   /* real time of the model's power-on */
	uint32_t kick; /* futex word: bumped by kicks */
	uint32_t seen; /* the kick count the flusher last saw */
};

static struct model_be *MB(struct io *io)
{
	return io->be_priv;
}

static uint64_t mnow(const struct model_be *b)
{
	return clock_now_ns() - b->t0;
}

static int mb_submit(struct io *io, struct io_req *r)
{
	struct model_be *b = MB(io);
	uint64_t base = r->file ? r->file->dev_base : 0;

	memset(&r->dreq, 0, sizeof(r->dreq));
	r->dreq.off = base + r->off;
	r->dreq.len = (uint64_t)r->npages * IO_PAGE_SIZE;
	r->dreq.write = r->kind != IOR_READ;
	r->dreq.cookie = r;
	devm_submit(b->m, mnow(b), &r->dreq);
	return 0;
}

static void mb_cancel(struct io *io, struct io_req *r)
{
	/* a modelled request cannot be taken back from the device queue: the engine abandons it */
}

static void reap(struct io *io, struct model_be *b)
{
	struct devm_req *d;

	while ((d = devm_pop_done(b->m, mnow(b)))) {
		struct io_req *r = d->cookie;
		int res = d->err ? d->err : (int)d->len;

		if (!d->err && r->kind == IOR_READ)
			for (unsigned i = 0; i < r->npages; i++)
				memset(r->iov[i].iov_base, 0, IO_PAGE_SIZE);
		if (r->kind == IOR_FSYNC && !d->err)
			res = 0;
		io_complete(io, r, res);
	}
}

static void mb_wait(struct io *io, uint64_t timeout_ns)
{
	struct model_be *b = MB(io);
	uint64_t next = devm_next_completion(b->m), now = mnow(b);
	uint32_t k = __atomic_load_n(&b->kick, __ATOMIC_ACQUIRE);

	reap(io, b);
	if (next != UINT64_MAX && next > now && next - now < timeout_ns)
		timeout_ns = next - now;
	else if (next != UINT64_MAX && next <= now)
		timeout_ns = 0;
	if (timeout_ns && k == b->seen)
		io_futex_wait(&b->kick, k, timeout_ns);
	b->seen = __atomic_load_n(&b->kick, __ATOMIC_ACQUIRE);
	reap(io, b);
}

static void mb_kick(struct io *io)
{
	struct model_be *b = MB(io);

	__atomic_fetch_add(&b->kick, 1, __ATOMIC_RELEASE);
	io_futex_wake_all(&b->kick);
}

static void mb_destroy(struct io *io)
{
	struct model_be *b = MB(io);

	if (!b)
		return;
	devm_destroy(b->m);
	io_unmap(b, sizeof(*b));
	io->be_priv = NULL;
}

static void mb_forget(struct io *io, struct io_file *f)
{
	/* modelled files are never open anywhere */
}

static const struct io_backend_ops model_ops = {
    .name = "model",
    .submit = mb_submit,
    .cancel = mb_cancel,
    .wait = mb_wait,
    .kick = mb_kick,
    .forget = mb_forget,
    .destroy = mb_destroy,
};

int io_model_backend_init(struct io *io, char *err, size_t errlen)
{
	struct model_be *b = io_map(sizeof(*b)); /* handlers kick through it */
	int rc;

	if (!b)
		return -ENOMEM;
	rc = devm_create(&io->cfg.dev.model, io->cfg.seed, &b->m);
	if (rc < 0) {
		snprintf(err, errlen, "device model '%s': %s", io->cfg.dev.model.name,
			 strerror(-rc));
		io_unmap(b, sizeof(*b));
		return rc;
	}
	b->t0 = clock_now_ns();
	io->be = &model_ops;
	io->be_priv = b;
	return 0;
}

/* For the report: the model's own statistics (after io_stop). */
int io_model_stats(struct io *io, struct devm_stats *s)
{
	if (io->be != &model_ops || !io->be_priv)
		return -ENODEV;
	devm_get_stats(MB(io)->m, s);
	return 0;
}
