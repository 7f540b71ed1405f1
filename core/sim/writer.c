/* Files through the page cache: a writer dirtying pages, dirty throttling, and the flusher that
 * writes them back to the device.
 *
 * Writer: postmark-like; it keeps a working set of files, deleting a random one and creating a
 * new one of random size (between the scenario's bounds) per transaction, writing it page by
 * page through the page cache (generic_perform_write: find/create the page, copy, mark dirty).
 * Every ratelimit pages it calls balance_dirty_pages(), which wakes background writeback over
 * the background threshold and pauses the writer on 3.2's control line (the state machine of
 * core/io/wbthrottle, the live dirtier's).
 *
 * Flusher: background writeback while dirty pages exceed the background threshold, plus
 * kupdate every dirty_writeback_interval for pages dirtied longer than dirty_expire ago. It
 * takes the dirty files' pages in order (write_cache_pages), or the oldest dirty pages from mm
 * (mm_writeback_begin) for files it does not know, and makes requests of them with the live
 * flusher's queue (core/io/wbqueue): file-contiguous runs of at most max_sectors, at most
 * nr_requests in flight. Pages stay under writeback until their request completes.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_EAGAIN_NS 10000ULL    /* lock_page would sleep this long, roughly */
#define RETRY_NOMEM_NS	20000000ULL /* congestion_wait(HZ/50) */
#define NOMEM_RETRIES	50

/* ---- files ------------------------------------------------------------------------------- */

uint32_t file_new(struct sim_world *w, uint32_t npages)
{
	uint64_t cap = devm_params(w->dev)->capacity, bytes = (uint64_t)npages * MM_PAGE_SIZE;
	struct sim_file *f;

	if (w->nfiles == w->files_cap) {
		uint32_t ncap = w->files_cap ? w->files_cap * 2 : 1024;
		struct sim_file *n = realloc(w->files, ncap * sizeof(*n));

		if (!n)
			return 0;
		w->files = n;
		w->files_cap = ncap;
	}
	if (cap && w->dev_alloc + bytes > cap) /* log-structured: wrap around */
		w->dev_alloc = 0;
	f = &w->files[w->nfiles];
	*f = (struct sim_file){.dev_off = w->dev_alloc, .npages = npages, .live = true};
	w->dev_alloc += bytes;
	return SIM_FILE_ID_BASE + w->nfiles++;
}

struct sim_file *file_get(struct sim_world *w, uint32_t id)
{
	if (id < SIM_FILE_ID_BASE || id - SIM_FILE_ID_BASE >= w->nfiles)
		return NULL;
	return &w->files[id - SIM_FILE_ID_BASE];
}

void file_delete(struct sim_world *w, uint32_t id)
{
	struct sim_file *f = file_get(w, id);

	if (!f || !f->live)
		return;
	mm_pagecache_remove_range(w->mm, MM_OWNER_FILE(id, 0), f->npages);
	f->live = false;
	free(f->dpfn); /* its entry on the dirty list is skipped */
	f->dpfn = NULL;
	f->ndirty = 0;
}

void files_free(struct sim_world *w)
{
	for (uint32_t i = 0; i < w->nfiles; i++)
		free(w->files[i].dpfn);
	free(w->files);
	free(w->dirty_files);
	w->files = NULL;
	w->dirty_files = NULL;
	w->nfiles = 0;
}

static bool dirty_list_push(struct sim_world *w, uint32_t id)
{
	if (w->df_len == w->df_cap) {
		uint32_t cap = w->df_cap ? w->df_cap * 2 : 256;
		uint32_t *n = malloc(cap * sizeof(*n));

		if (!n)
			return false;
		for (uint32_t i = 0; i < w->df_len; i++)
			n[i] = w->dirty_files[(w->df_head + i) % w->df_cap];
		free(w->dirty_files);
		w->dirty_files = n;
		w->df_cap = cap;
		w->df_head = 0;
	}
	w->dirty_files[(w->df_head + w->df_len++) % w->df_cap] = id;
	return true;
}

/* __mark_inode_dirty for a page: remember its frame, queue the file if it is not queued. */
static void file_page_dirtied(struct sim_world *w, uint32_t id, uint32_t index, uint32_t pfn)
{
	struct sim_file *f = file_get(w, id);

	if (!f || index >= f->npages)
		return;
	if (!f->dpfn) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
		/* false positive (gcc 12 -fanalyzer): w->files[] keeps it, files_free frees it */
		f->dpfn = malloc(f->npages * sizeof(*f->dpfn));
		if (!f->dpfn)
			return; /* the fallback (mm_writeback_begin) will find the page */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
		for (uint32_t i = 0; i < f->npages; i++)
			f->dpfn[i] = MM_NO_PFN;
	}
	if (f->dpfn[index] == MM_NO_PFN)
		f->ndirty++;
	f->dpfn[index] = pfn;
	if (!f->on_dirty_list && dirty_list_push(w, id))
		f->on_dirty_list = true;
}

void file_written_out(struct sim_world *w, uint64_t owner)
{
	struct sim_file *f = file_get(w, (uint32_t)MM_OWNER_FILE_ID(owner));
	uint64_t index = MM_OWNER_FILE_INDEX(owner);

	if (f && f->dpfn && index < f->npages && f->dpfn[index] != MM_NO_PFN) {
		f->dpfn[index] = MM_NO_PFN;
		f->ndirty--;
	}
}

/* Find or create a page-cache page, retrying as the kernel would sleep. 0 or -ENOMEM. */
int file_get_page(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t *pfn,
		  bool *created, uint64_t *eagain, uint64_t *nomem)
{
	const struct sim_file *f = file_get(w, (uint32_t)MM_OWNER_FILE_ID(owner));
	bool bdev = f && f->bdev;

	for (unsigned tries = 0;;) {
		int rc = bdev ? mm_pagecache_get_bdev(w->mm, owner, true, pfn, created, t)
			      : mm_pagecache_get(w->mm, owner, true, pfn, created, t);

		if (rc == 0)
			return 0;
		if (rc == -EAGAIN) {
			(*eagain)++;
			sim_sleep(t->a, RETRY_EAGAIN_NS);
			continue;
		}
		(*nomem)++;
		if (++tries >= NOMEM_RETRIES)
			return -ENOMEM;
		sim_sleep(t->a, RETRY_NOMEM_NS);
	}
}

int file_write_page(struct sim_world *w, struct sim_task *t, uint32_t id, uint32_t index)
{
	uint32_t pfn;
	bool created;
	int rc;

	t->writing = true; /* generic_file_aio_write: current->backing_dev_info is the stick's */
	rc = file_get_page(w, t, MM_OWNER_FILE(id, index), &pfn, &created, &w->writer.eagain,
			   &w->writer.nomem);
	t->writing = false;
	if (rc)
		return rc;
	sim_charge(t->a, w->cfg->costs.ns[SIM_COST_COPY_4K]);
	mm_pagecache_put(w->mm, pfn, true);
	file_page_dirtied(w, id, index, pfn);
	w->writer.pages++;
	return 0;
}

/* ---- flusher ------------------------------------------------------------------------------ */

void flusher_init(struct sim_world *w, unsigned max_inflight, unsigned req_pages)
{
	const struct devm_params *dp = devm_params(w->dev);
	struct sim_flusher *fl = &w->fl;

	wbm_age_init(&fl->age, 1000000000ULL);
	wbm_bw_init(&fl->bw, sim_now(w->e), dp->write_bw ? dp->write_bw : 100ULL << 20);
	if (req_pages > SIM_IO_MAX_PAGES)
		req_pages = SIM_IO_MAX_PAGES;
	/* 3.x: requests come from the block layer's request list, shared with every writer
	 * (core/io/rqlist); the 6.x eras (6.1 and 6.12, blk-mq: tags are not modelled) keep the
	 * flusher's own bound */
	w->rq_model = w->mmcfg.policy.era < MM_ERA_6_1;
	rql_init(&w->rl, max_inflight);
	fl->rq_sleeping = fl->rq_retry = false;
	wbq_init(&fl->q, w->rq_model ? WBQ_UNBOUNDED : max_inflight, req_pages, fl->q_pfn,
		 fl->q_owner, SIM_FLUSHER_QUEUE);
	w->elv_max_pages = fl->q.max_pages; /* the scheduler merges up to max_sectors too */
}

static void thresholds(struct sim_world *w, struct mm_counts *c, struct wbm_thresh *th)
{
	mm_get_counts(w->mm, c);
	wbm_thresholds(&w->fl.p, (uint64_t)c->free + c->file, th);
}

/* Submit the queued pages as requests, as far as nr_requests allow (3.x: until the flusher has
 * to sleep in get_request_wait, its run left queued). */
static void submit_queued(struct sim_world *w)
{
	struct wbq *q = &w->fl.q;
	unsigned n;

	while (!w->fl.rq_sleeping && (n = wbq_next(q))) {
		const uint32_t *pfns = q->pfn + q->head;
		int rc = dev_submit(w, NULL, SIO_WRITEBACK, dev_offset_of(w, q->owner[q->head]),
				    pfns, n, !w->fl.rq_retry, NULL);

		if (rc == -EAGAIN)
			return; /* asleep for a request: the run stays at the head */
		w->fl.rq_retry = false;
		wbq_take(q, n);
		if (rc == 0) {
			w->fl.reqs++;
			continue;
		}
		for (unsigned k = 0; k < n; k++) /* no memory for the request: fail it */
			mm_writeback_end(w->mm, pfns[k], -ENOMEM);
		wbq_done(q, 1);
	}
}

/* The file at the head of the dirty list that still has pages to submit (b_dirty), dropping
 * the ones deleted or fully submitted; NULL when there is none. */
static struct sim_file *dirty_head(struct sim_world *w)
{
	while (w->df_len > 0) {
		struct sim_file *f = file_get(w, w->dirty_files[w->df_head]);

		if (f->live && f->ndirty > 0)
			return f;
		w->df_head = (w->df_head + 1) % w->df_cap;
		w->df_len--;
		f->on_dirty_list = false;
		f->wb_index = 0;
	}
	return NULL;
}

/* write_cache_pages for one request: from the file's writeback index (wrapping once), move its
 * next run of consecutive dirty pages, at most max, to writeback. Returns how many; *first is
 * the index of the first. */
static unsigned take_run(struct sim_world *w, struct sim_file *f, unsigned max, uint32_t *pfns,
			 uint32_t *first)
{
	unsigned n = 0;
	uint32_t i;

	for (i = f->wb_index; i < f->npages && f->dpfn[i] == MM_NO_PFN; i++)
		;
	if (i == f->npages)
		for (i = 0; i < f->npages && f->dpfn[i] == MM_NO_PFN; i++)
			;
	*first = i;
	if (i == f->npages) { /* nothing left after all: never loop on a stale count */
		f->ndirty = 0;
		return 0;
	}
	for (; i < f->npages && n < max && f->dpfn[i] != MM_NO_PFN; i++) {
		uint32_t pfn = f->dpfn[i];

		f->dpfn[i] = MM_NO_PFN;
		f->ndirty--;
		if (mm_writeback_begin_one(w->mm, pfn) != 0)
			break; /* no longer dirty (written out): the run ends here */
		pfns[n++] = pfn;
	}
	f->wb_index = i;
	return n;
}

/* Queue the dirty files' next run of pages. Returns how many; 0 when no known file has dirty
 * pages left. */
static unsigned writeback_head_file(struct sim_world *w, unsigned max)
{
	uint32_t pfns[SIM_IO_MAX_PAGES], first;
	uint64_t owners[SIM_IO_MAX_PAGES];
	struct sim_file *f;
	unsigned n;

	while ((f = dirty_head(w))) {
		n = take_run(w, f, max, pfns, &first);
		if (n == 0)
			continue;
		for (unsigned k = 0; k < n; k++)
			owners[k] =
			    MM_OWNER_FILE(SIM_FILE_ID_BASE + (uint32_t)(f - w->files), first + k);
		wbq_push(&w->fl.q, pfns, owners, n);
		return n;
	}
	return 0;
}

void flusher_kick(struct sim_world *w)
{
	struct sim_flusher *fl = &w->fl;
	uint32_t pfns[SIM_IO_MAX_PAGES];
	uint64_t owners[SIM_IO_MAX_PAGES], want, expired;
	struct mm_counts c;
	struct wbm_thresh th;

	if (!w->mm || fl->rq_sleeping) /* asleep in get_request_wait */
		return;
	submit_queued(w); /* pages left over when nr_requests were in flight */
	thresholds(w, &c, &th);
	expired = wbm_age_expired(&fl->age, sim_now(w->e), c.file_dirty, fl->p.expire_ns);
	want = wbm_flush_want(&th, c.file_dirty, expired);
	while (want > 0 && !fl->rq_sleeping && !wbq_congested(&fl->q) &&
	       wbq_room(&fl->q) >= fl->q.max_pages) {
		unsigned max = want < fl->q.max_pages ? (unsigned)want : fl->q.max_pages;
		unsigned n = writeback_head_file(w, max);

		if (n == 0) {
			/* dirty pages of files nobody queued (recipes): oldest first from mm */
			n = mm_writeback_begin(w->mm, max, pfns, owners);
			if (n == 0)
				break;
			wbq_push(&fl->q, pfns, owners, n);
		}
		submit_queued(w);
		fl->pages_submitted += n;
		want -= n < want ? n : want;
	}
}

void flusher_io_done(struct sim_world *w, struct sim_io *io)
{
	struct sim_flusher *fl = &w->fl;

	wbq_done(&fl->q, io->nwb);
	/* 3.x: the request list woke them (device.c rq_free) */
	if (!w->rq_model && io->nwb && !wbq_congested(&fl->q))
		sim_wake_all(w->e, &fl->congest_wq);
	fl->pages_done += io->npages;
	if (io->req.err)
		fl->errors++;
	fl->bytes_done += io->req.len;
	wbm_bw_update(&fl->bw, sim_now(w->e), fl->bytes_done);
	flusher_kick(w);
}

static void kupdate_event(struct sim_engine *e, void *arg)
{
	struct sim_world *w = arg;

	flusher_kick(w);
	sim_at(e, sim_now(e) + w->fl.p.interval_ns, kupdate_event, w);
}

void flusher_start_kupdate(struct sim_world *w)
{
	sim_at(w->e, sim_now(w->e) + w->fl.p.interval_ns, kupdate_event, w);
}

/* ---- dirty throttling ----------------------------------------------------------------------- */

void balance_dirty_pages(struct sim_world *w, struct sim_task *t, uint64_t dirtied)
{
	struct wbt_bdp b;
	struct wbt_step s;

	sim_settle(t->a);
	wbm_age_dirtied(&w->fl.age, sim_now(w->e), dirtied);
	wbt_bdp_start(&b, dirtied);
	do {
		struct mm_counts c;

		mm_get_counts(w->mm, &c);
		/* the bandwidth estimate only moves on completions, never inside flusher_kick */
		s = wbt_bdp_step(&w->fl.p, &b, (uint64_t)c.free + c.file, c.file_dirty,
				 c.file_writeback, w->fl.bw.bw);
		if (s.kick)
			flusher_kick(w);
		if (!s.pause_ns)
			return;
		sim_sleep(t->a, s.pause_ns);
	} while (wbt_bdp_paused(&b, s.pause_ns, &w->writer.throttle));
}

/* ---- the writer -------------------------------------------------------------------------------
 */

struct writer {
	struct sim_task task;
	struct sim_world *w;
	uint32_t *live; /* ids of the working set */
	uint32_t nlive, cap;
	uint64_t set_pages; /* pages of the working set, at most keep_pages */
	uint64_t keep_pages;
	uint64_t min_pages, max_pages;
};

static void writer_transaction(struct writer *wr, uint64_t *dirtied)
{
	struct sim_world *w = wr->w;
	struct sim_task *t = &wr->task;
	uint32_t npages, id;

	npages = (uint32_t)(wr->min_pages + rng_below(&w->rng, wr->max_pages - wr->min_pages + 1));
	while (wr->nlive > 0 && (wr->set_pages + npages > wr->keep_pages || wr->nlive == wr->cap)) {
		uint32_t victim = (uint32_t)rng_below(&w->rng, wr->nlive);
		struct sim_file *f = &w->files[wr->live[victim] - SIM_FILE_ID_BASE];

		wr->set_pages -= f->npages;
		file_delete(w, wr->live[victim]);
		wr->live[victim] = wr->live[--wr->nlive];
		w->writer.files_deleted++;
	}
	id = file_new(w, npages);
	if (!id) {
		sim_sleep(t->a, RETRY_NOMEM_NS);
		return;
	}
	wr->live[wr->nlive++] = id;
	wr->set_pages += npages;
	w->writer.files_created++;
	for (uint32_t i = 0; i < npages; i++) {
		if (file_write_page(w, t, id, i) == 0)
			(*dirtied)++;
		if (*dirtied >= WBT_RATELIMIT_PAGES) {
			balance_dirty_pages(w, t, *dirtied);
			*dirtied = 0;
		}
	}
}

static void writer_fn(struct sim_actor *a, void *arg)
{
	struct writer *wr = arg;
	uint64_t dirtied = 0;

	(void)a;
	while (!wr->w->writer_stop_ns || sim_now(wr->w->e) < wr->w->writer_stop_ns)
		writer_transaction(wr, &dirtied);
}

int writer_spawn(struct sim_world *w)
{
	struct writer *wr = calloc(1, sizeof(*wr));
	uint64_t fmin = sim_param_u(w, "file-min"), fmax = sim_param_u(w, "file-max");

	if (!wr)
		return -ENOMEM;
	wr->w = w;
	wr->keep_pages = (uint64_t)(sim_param_f(w, "writer-set") * mm_nr_frames(w->mm));
	wr->min_pages = (fmin + MM_PAGE_SIZE - 1) / MM_PAGE_SIZE;
	wr->max_pages = (fmax + MM_PAGE_SIZE - 1) / MM_PAGE_SIZE;
	if (wr->min_pages == 0)
		wr->min_pages = 1;
	if (wr->max_pages < wr->min_pages)
		wr->max_pages = wr->min_pages;
	wr->cap = (uint32_t)(wr->keep_pages / wr->min_pages + 1);
	wr->live = calloc(wr->cap, sizeof(*wr->live));
	if (!wr->live) {
		free(wr);
		return -ENOMEM;
	}
	w->writer_state = wr;
	return world_spawn(w, &wr->task, "postmark", sim_now(w->e), writer_fn, wr);
}

void writer_free(struct sim_world *w)
{
	struct writer *wr = w->writer_state;

	if (!wr)
		return;
	free(wr->live);
	free(wr);
	w->writer_state = NULL;
}
