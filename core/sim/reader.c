/* Reading files through the page cache, and fio's random reader (mmtests'
 * fio-random-reader-inefficient: 4 KiB synchronous reads, file_service_type=random:16).
 *
 * A read of a page not in the page cache allocates it (which may reclaim), keeps it locked
 * while the device reads it (the reader waits for the request, behind whatever is queued at
 * the device), then copies it out: filemap_read() through a cache miss. A hit only copies.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

#define READS_PER_FILE 16 /* file_service_type=random:16 */

int file_read_page(struct sim_world *w, struct sim_task *t, uint32_t id, uint32_t index,
		   bool from_device)
{
	struct sim_io *io;
	uint32_t pfn;
	bool created;
	uint64_t t0;
	int rc;

	rc = file_get_page(w, t, MM_OWNER_FILE(id, index), &pfn, &created, &w->reader.eagain,
			   &w->reader.nomem);
	if (rc)
		return rc;
	if (created && from_device) {
		w->reader.misses++;
		sim_settle(t->a);
		t0 = sim_now(w->e);
		rc = dev_submit(w, t, SIO_READ, dev_offset_of(w, MM_OWNER_FILE(id, index)), NULL, 1,
				true, &io);
		if (rc == 0) {
			while (!io->done)
				sim_wait(t->a, &io->done_wq, SIM_NO_TIMEOUT);
			dev_io_release(w, io);
		}
		w->reader.read_ns += sim_now(w->e) - t0;
	}
	sim_charge(t->a, w->cfg->costs.ns[SIM_COST_COPY_4K]);
	mm_pagecache_put(w->mm, pfn, false);
	return 0;
}

struct reader {
	struct sim_task task;
	struct sim_world *w;
	uint32_t first_id, nfiles;
};

static void reader_fn(struct sim_actor *a, void *arg)
{
	struct reader *r = arg;
	struct sim_world *w = r->w;

	for (;;) {
		uint32_t id = r->first_id + (uint32_t)rng_below(&w->rng, r->nfiles);
		uint32_t npages = w->files[id - SIM_FILE_ID_BASE].npages;

		for (int i = 0; i < READS_PER_FILE; i++) {
			file_read_page(w, &r->task, id, (uint32_t)rng_below(&w->rng, npages), true);
			w->reader.reads++;
		}
		sim_settle(a);
	}
}

struct readers {
	unsigned n;
	struct reader r[];
};

int readers_spawn(struct sim_world *w, unsigned n, uint32_t first_id, uint32_t nfiles,
		  uint64_t start)
{
	struct readers *rs;
	char name[16];
	int rc = 0;

	if (n == 0 || nfiles == 0)
		return 0;
	rs = calloc(1, sizeof(*rs) + n * sizeof(rs->r[0]));
	if (!rs)
		return -ENOMEM;
	rs->n = n;
	w->reader_state = rs;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		rs->r[i] = (struct reader){.w = w, .first_id = first_id, .nfiles = nfiles};
		snprintf(name, sizeof(name), "fio-%u", i);
		rc = world_spawn(w, &rs->r[i].task, name, start, reader_fn, &rs->r[i]);
	}
	return rc;
}

void readers_free(struct sim_world *w)
{
	free(w->reader_state);
	w->reader_state = NULL;
}
