/* The dirtier: a thread that streams files through the emulated page cache, as cp or rsync to a
 * USB stick does, or reads files into it (a source of clean page cache, i.e. fragmentation).
 *
 * Writing mirrors generic_perform_write(): for every page, find or create it in the page cache
 * (grab_cache_page_write_begin), copy the data in, mark it dirty (set_page_dirty); every
 * ratelimit pages, balance_dirty_pages() (Linux 3.2, the state machine of core/io/wbthrottle,
 * shared with the simulator): above the background threshold it wakes the flusher, above the
 * freerun ceiling it pauses the writer so that it dirties no faster than the device cleans,
 * never more than 200 ms at a time. The data is a
 * pattern of (seed, file, offset), so the files on the device can be verified afterwards.
 * Reading mirrors do_generic_file_read(): a page-cache miss allocates the page (locked, so
 * compaction leaves it alone), reads it from the device, and leaves it clean on the LRU.
 *
 * Errors: a page cache that cannot get a frame (the pool is full of program memory) is retried
 * every 20 ms (congestion_wait); a device that is gone (ENOTCONN) or full (ENOSPC) stops the
 * writer, as it would stop cp, and says so in the report.
 */
#include "io/io_internal.h"

#include <errno.h>
#include <string.h>

#include "io/wbthrottle.h"
#include "util/clock.h"

#define RETRY_LOCKED_NS 50000ULL    /* a locked page: lock_page would sleep this long */
#define RETRY_NOMEM_NS	20000000ULL /* congestion_wait(HZ/50) */

/* Sleep up to ns, cut short by io_stop. */
static void nap(struct io *io, uint64_t ns)
{
	uint32_t v = __atomic_load_n(&io->dirtier_wake, __ATOMIC_ACQUIRE);

	if (!io_stopping(io) && ns)
		io_futex_wait(&io->dirtier_wake, v, ns);
}

/* A page-cache page for owner, locked; retries while it is busy or the pool is full. */
static int get_page(struct io *io, uint64_t owner, uint32_t *pfn, bool *created)
{
	for (;;) {
		int rc = mm_pagecache_get(io->mm, owner, true, pfn, created, io->env.call);

		if (rc == 0)
			return 0;
		if (io_stopping(io))
			return -ESHUTDOWN;
		if (rc != -EAGAIN && rc != -ENOMEM)
			return rc;
		io_stat_add(&io->st->pagecache_retries, 1);
		nap(io, rc == -EAGAIN ? RETRY_LOCKED_NS : RETRY_NOMEM_NS);
	}
}

static void count_pending(struct io *io, uint64_t file_id)
{
	struct io_file *f;

	pthread_mutex_lock(&io->files_lock);
	f = io_file_get_locked(io, file_id);
	if (f && f->counted)
		f->pending++;
	pthread_mutex_unlock(&io->files_lock);
}

int io_write_page(struct io *io, uint64_t file_id, uint64_t index)
{
	uint64_t owner = MM_OWNER_FILE(file_id, index);
	uint32_t pfn;
	bool created;
	int rc = get_page(io, owner, &pfn, &created);

	if (rc < 0)
		return rc;
	io_pattern_fill(io_page(io, pfn), io->cfg.seed, file_id, index * IO_PAGE_SIZE,
			IO_PAGE_SIZE);
	if (created) /* before it can be written back (the page turns dirty in put) */
		count_pending(io, file_id);
	mm_pagecache_put(io->mm, pfn, true);
	io_stat_add(&io->st->bytes_dirtied, IO_PAGE_SIZE);
	__atomic_fetch_add(&io->dirtied_new, 1, __ATOMIC_RELAXED);
	return 0;
}

int io_read_page(struct io *io, uint64_t file_id, uint64_t index)
{
	uint64_t owner = MM_OWNER_FILE(file_id, index);
	struct io_req *r;
	uint32_t pfn;
	bool created;
	int rc = get_page(io, owner, &pfn, &created);

	if (rc < 0 || !created) { /* a hit: mark_page_accessed */
		if (rc == 0)
			mm_pagecache_put(io->mm, pfn, false);
		return rc;
	}
	r = io_req_get(io);
	if (!r) {
		rc = -EAGAIN;
	} else {
		r->kind = IOR_READ;
		r->npages = 1;
		r->pfns[0] = pfn;
		r->iov[0].iov_base = io_page(io, pfn);
		r->iov[0].iov_len = IO_PAGE_SIZE;
		r->off = index * IO_PAGE_SIZE;
		r->file = io_file_get(io, file_id, true);
		rc = io_req_run(io, r);
	}
	io_stat_add(&io->st->read_ops, 1);
	if (rc >= 0)
		io_stat_add(&io->st->bytes_read, IO_PAGE_SIZE);
	else
		io_stat_add(&io->st->read_errors, 1);
	mm_pagecache_put(io->mm, pfn, false);
	if (rc < 0) /* !PageUptodate: the page does not stay in the cache */
		mm_pagecache_remove(io->mm, owner);
	return rc < 0 ? rc : 0;
}

/* ---- throttling ------------------------------------------------------------------------------ */

/* balance_dirty_pages(): pause while dirty + writeback pages are above the freerun ceiling. */
static void balance_dirty_pages(struct io *io, uint64_t dirtied)
{
	struct wbt_stats st = {0};
	struct wbt_bdp b;
	struct wbt_step s;

	wbt_bdp_start(&b, dirtied);
	do {
		struct mm_counts c;

		mm_get_counts(io->mm, &c);
		s = wbt_bdp_step(&io->wbp, &b, (uint64_t)c.free + c.file, c.file_dirty,
				 c.file_writeback, __atomic_load_n(&io->bw_bps, __ATOMIC_RELAXED));
		io_stat_max(&io->st->dirty_max_pages, b.nr);
		if (s.kick)
			io->be->kick(io);
		if (!s.pause_ns || io_stopping(io))
			break;
		nap(io, s.pause_ns);
	} while (wbt_bdp_paused(&b, s.pause_ns, &st));
	if (st.throttles) {
		io_stat_add(&io->st->throttles, st.throttles);
		io_stat_add(&io->st->throttle_ns, st.throttle_ns);
		io_stat_max(&io->st->throttle_max_ns, st.throttle_max_ns);
	}
}

/* rate=: a page may go at most at *next; advance it by one page's share of the rate. */
static void rate_limit(struct io *io, uint64_t *next)
{
	uint64_t rate = io->cfg.dspec.rate, now;

	if (!rate)
		return;
	now = clock_now_ns();
	if (*next < now)
		*next = now;
	else
		nap(io, *next - now);
	*next += IO_PAGE_SIZE * 1000000000ULL / rate;
}

/* The writer stops on errors cp would stop on. */
static bool device_unusable(struct io *io, int rc)
{
	if (rc == -ENOTCONN || rc == -ECONNABORTED || rc == -ENOSPC || rc == -ENFILE) {
		io_note(io, "the writer stopped: %s", strerrordesc_np(-rc));
		return true;
	}
	return __atomic_load_n(&io->st->err_disconnected, __ATOMIC_RELAXED) != 0;
}

/* ---- the workloads --------------------------------------------------------------------------- */

static int write_file(struct io *io, uint64_t id, uint64_t npages, uint64_t *next)
{
	uint64_t dirtied = 0;
	int rc = io_file_create(io, id, npages);

	if (rc < 0)
		return rc;
	io_stat_add(&io->st->files_created, 1);
	for (uint64_t i = 0; i < npages && !io_stopping(io); i++) {
		rc = io_write_page(io, id, i);
		if (rc < 0)
			break;
		rate_limit(io, next);
		if (++dirtied >= WBT_RATELIMIT_PAGES) {
			guard_thread_sync(&io->dirtier_gt);
			balance_dirty_pages(io, dirtied);
			dirtied = 0;
		}
	}
	io_file_written(io, id);
	if (rc == 0 && io->cfg.dspec.fsync == IO_FSYNC_EACH && !io_stopping(io))
		io_file_sync(io, id);
	return rc == -ESHUTDOWN ? 0 : rc;
}

static void writer(struct io *io)
{
	const struct io_dirty_spec *s = &io->cfg.dspec;
	uint64_t left = s->total, id = IO_WRITER_ID_BASE, next = 0;

	while (!io_stopping(io) && (s->stream || left)) {
		uint64_t bytes = s->stream || left > s->file_size ? s->file_size : left;
		int rc = write_file(io, id++, (bytes + IO_PAGE_SIZE - 1) / IO_PAGE_SIZE, &next);

		if (rc < 0 && device_unusable(io, rc))
			break;
		if (device_unusable(io, 0))
			break;
		left -= s->stream ? 0 : bytes;
	}
	if (s->fsync == IO_FSYNC_END && !io_stopping(io)) {
		if (io_sync_all(io, UINT64_MAX / 2) < 0)
			io_stat_add(&io->st->fsync_errors, 1);
		io_stat_add(&io->st->fsyncs, 1);
	}
}

static void reader(struct io *io)
{
	const struct io_dirty_spec *s = &io->cfg.dspec;
	uint64_t left = s->total, id = IO_READER_ID_BASE, next = 0;

	while (!io_stopping(io) && (s->stream || left)) {
		uint64_t bytes = s->stream || left > s->file_size ? s->file_size : left;
		uint64_t npages = (bytes + IO_PAGE_SIZE - 1) / IO_PAGE_SIZE;
		int rc = io_file_create(io, id, npages);

		if (rc < 0) {
			device_unusable(io, rc);
			break;
		}
		for (uint64_t i = 0; i < npages && !io_stopping(io); i++) {
			if (i % WBT_RATELIMIT_PAGES == 0)
				guard_thread_sync(&io->dirtier_gt);
			if (io_read_page(io, id, i) == -ESHUTDOWN)
				break;
			rate_limit(io, &next);
		}
		io_file_written(io, id);
		id++;
		left -= s->stream ? 0 : bytes;
	}
}

void *io_dirtier_main(void *arg)
{
	struct io *io = arg;

	io_block_signals_and_init(io);
	guard_thread_started(&io->dirtier_gt);
	if (io->cfg.dspec.start_ns) {
		uint64_t end = clock_now_ns() + io->cfg.dspec.start_ns, now;

		while (!io_stopping(io) && (now = clock_now_ns()) < end)
			nap(io, end - now);
	}
	if (io->cfg.dspec.mode == IO_DIRTY_READ)
		reader(io);
	else
		writer(io);
	guard_thread_leave(&io->dirtier_gt);
	io_dirtier_returns(io);
	return NULL;
}
