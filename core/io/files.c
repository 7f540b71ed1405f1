/* Files on the device: the open file table of the engine (the inode side of an address_space).
 *
 * A file gets an entry when the writer or reader creates it, or when writeback meets a page of
 * a file it does not know (a fragmentation recipe's dirty page cache: the file is created on
 * demand, pre-sized so that no write extends it). The entry counts the writer's pages that are
 * not yet written back; when the writer is done and none is left the file is *finished*: a line
 * goes to the manifest (complete or failed, with the first error), and with delete-after the
 * file is unlinked and its clean pages dropped from the page cache (truncate_inode_pages). The
 * entry goes away once no request holds it.
 *
 * No descriptor is held here: the device file is created, sized and unlinked by path, and the
 * backend opens it into a registered-file slot of its own when a request needs it (io_internal.h,
 * struct io_file). So the engine never holds more than a few descriptors whatever the workload,
 * and none the program could close, reuse or be written through.
 *
 * Table: IO_MAX_FILES entries that never move (requests point at them) and an index on the
 * file id, open addressing with linear probing and backward-shift deletion, all under
 * files_lock. Lock order: files_lock before the mm lock.
 */
#include "io/io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sys.h"

static unsigned home_of(uint64_t id)
{
	return (unsigned)((id * 0x9e3779b97f4a7c15ULL) >> 40) % IO_INDEX_SIZE;
}

static struct io_file *lookup(struct io *io, uint64_t id)
{
	for (unsigned i = home_of(id);; i = (i + 1) % IO_INDEX_SIZE) {
		uint16_t s = io->index[i];

		if (!s)
			return NULL;
		if (io->files[s - 1].id == id)
			return &io->files[s - 1];
	}
}

/* A new entry for id (not present). Entries never move: requests keep pointers to them. */
static struct io_file *insert(struct io *io, uint64_t id)
{
	struct io_file *f;
	unsigned i;

	if (io->free_file < 0)
		return NULL;
	f = &io->files[io->free_file];
	io->free_file = f->next_free;
	memset(f, 0, sizeof(*f));
	f->id = id;
	f->slot = -1;
	for (i = home_of(id); io->index[i]; i = (i + 1) % IO_INDEX_SIZE)
		;
	io->index[i] = (uint16_t)(f - io->files + 1);
	io->nfiles++;
	return f;
}

/* Free the entry; backward-shift deletion keeps the index's probe chains unbroken. */
static void remove_entry(struct io *io, struct io_file *f)
{
	unsigned slot = (unsigned)(f - io->files + 1), i = home_of(f->id), j;

	while (io->index[i] != slot)
		i = (i + 1) % IO_INDEX_SIZE;
	io->index[i] = 0;
	for (j = i;;) {
		unsigned home;

		j = (j + 1) % IO_INDEX_SIZE;
		if (!io->index[j])
			break;
		home = home_of(io->files[io->index[j] - 1].id);
		/* j moves back to the hole at i unless its home lies cyclically in (i, j] */
		if ((i < j) ? (home <= i || home > j) : (home <= i && home > j)) {
			io->index[i] = io->index[j];
			io->index[j] = 0;
			i = j;
		}
	}
	f->id = 0;
	f->next_free = io->free_file;
	io->free_file = (int)(slot - 1);
	io->nfiles--;
}

void io_files_init(struct io *io)
{
	for (int i = IO_MAX_FILES - 1; i >= 0; i--) {
		io->files[i].id = 0;
		io->files[i].slot = -1;
		io->files[i].next_free = i + 1 < IO_MAX_FILES ? i + 1 : -1;
	}
	io->free_file = 0;
	memset(io->index, 0, sizeof(io->index));
}

/* Device-model address space for a file: a bump allocator that wraps around at the model's
 * capacity, as a log-structured stick would reuse erased blocks. files_lock held. */
static uint64_t dev_alloc(struct io *io, uint64_t bytes)
{
	uint64_t cap = io->cfg.dev.model.capacity, base;

	if (cap && io->dev_next + bytes > cap)
		io->dev_next = 0;
	base = io->dev_next;
	io->dev_next += bytes;
	return base;
}

void io_file_path(const struct io *io, uint64_t file_id, char *buf, size_t len)
{
	char name[64];

	io_file_name(file_id, name, sizeof(name));
	snprintf(buf, len, "%s/%s", io->dir, name);
}

/* Create the file's device file (by path: no descriptor) and make sure it covers npages
 * without extending writes. 0 or -errno. */
static int make_presized(struct io *io, uint64_t id, uint64_t npages)
{
	char path[IO_PATH_MAX];

	io_file_path(io, id, path, sizeof(path));
	if (mknodat(AT_FDCWD, path, S_IFREG | 0644, 0) < 0 && errno != EEXIST)
		return -errno;
	/* raw: the preload interposes truncate(2) (a shmem file's frames), and this runs inside it
	 */
	return sys_truncate(path, (long)(npages * IO_PAGE_SIZE));
}

int io_file_create(struct io *io, uint64_t file_id, uint64_t npages)
{
	struct io_file *f;
	int rc = 0;

	if (io->dir[0]) {
		rc = make_presized(io, file_id, npages);
		if (rc < 0) {
			enum io_err_class cls = io_err_class(rc);

			/* the device refused the file (gone, full, failing): counted like a failed
			 * write; anything else (a path, a limit of ours) is not the device's */
			if (cls == IO_ERR_EIO || cls == IO_ERR_ENOSPC || cls == IO_ERR_DISCONNECTED)
				io_count_error(io, rc, 0);
			io_stat_add(&io->st->files_failed, 1);
			return rc;
		}
	}
	pthread_mutex_lock(&io->files_lock);
	f = lookup(io, file_id);
	if (!f)
		f = insert(io, file_id);
	if (!f) {
		io_note(io, "more than %d files with pages in flight: file refused", IO_MAX_FILES);
		pthread_mutex_unlock(&io->files_lock);
		return -ENFILE;
	}
	f->err = 0;
	f->npages = npages;
	f->counted = true;
	f->dev_base = dev_alloc(io, npages * IO_PAGE_SIZE);
	f->refs++; /* the writer's, dropped by io_file_written */
	pthread_mutex_unlock(&io->files_lock);
	return 0;
}

/* A file of unknown size met by writeback (or a reader on a file it did not create). */
static struct io_file *adopt_unknown(struct io *io, uint64_t id)
{
	struct io_file *f = insert(io, id);
	uint64_t npages = IO_FILE_RESERVE / IO_PAGE_SIZE;

	if (!f)
		return NULL;
	f->npages = npages;
	f->dev_base = dev_alloc(io, IO_FILE_RESERVE);
	if (io->dir[0])
		f->err = make_presized(io, id, npages);
	return f;
}

struct io_file *io_file_get_locked(struct io *io, uint64_t file_id)
{
	return lookup(io, file_id);
}

int io_file_cover(struct io *io, struct io_file *f, uint64_t end_page)
{
	uint64_t want =
	    (end_page * IO_PAGE_SIZE + IO_FILE_RESERVE - 1) / IO_FILE_RESERVE * IO_FILE_RESERVE;
	int rc = 0;

	pthread_mutex_lock(&io->files_lock);
	if (end_page > f->npages) {
		char path[IO_PATH_MAX];

		io_file_path(io, f->id, path, sizeof(path));
		if (io->dir[0] && !f->err)
			rc = sys_truncate(path, (long)want);
		if (rc >= 0)
			f->npages = want / IO_PAGE_SIZE;
	}
	pthread_mutex_unlock(&io->files_lock);
	return rc;
}

struct io_file *io_file_get(struct io *io, uint64_t file_id, bool create_unknown)
{
	struct io_file *f;

	pthread_mutex_lock(&io->files_lock);
	f = lookup(io, file_id);
	if (!f && create_unknown)
		f = adopt_unknown(io, file_id);
	if (f)
		f->refs++;
	pthread_mutex_unlock(&io->files_lock);
	return f;
}

/* Drop the file's clean pages from the page cache (truncate) and unlink it. files_lock held. */
static void delete_locked(struct io *io, struct io_file *f)
{
	char path[IO_PATH_MAX];

	for (uint64_t i = 0; i < f->npages; i++)
		mm_pagecache_remove(io->mm, MM_OWNER_FILE(f->id, i));
	if (io->dir[0]) {
		io_file_path(io, f->id, path, sizeof(path));
		unlink(path);
	}
	f->deleted = true;
	io_stat_add(&io->st->files_deleted, 1);
}

/* A manifest line goes to the device like any other write, through the flusher: a write(2)
 * here would block this thread behind everything queued at a slow device. files_lock held. */
static void manifest_line(struct io *io, struct io_file *f)
{
	char name[64];
	struct io_req *r;
	int n;

	if (!io->dir[0] || f->id < IO_WRITER_ID_BASE || f->id >= IO_READER_ID_BASE)
		return;
	r = io_req_get(io);
	if (!r) {
		io_note(io, "no request free for a manifest line: the manifest is incomplete");
		return;
	}
	io_file_name(f->id, name, sizeof(name));
	n = snprintf(r->meta, sizeof(r->meta), "%s %llu %s %d\n", name,
		     (unsigned long long)(f->npages * IO_PAGE_SIZE),
		     f->failed ? "failed" : "complete", -f->first_err);
	r->kind = IOR_META;
	r->meta_len = (uint16_t)n;
	r->off = io->manifest_off;
	io->manifest_off += (uint64_t)n;
	__atomic_fetch_add(&io->meta_pending, 1, __ATOMIC_RELAXED);
	io_req_queue(io, r);
}

/* Finished (writer done, nothing pending): account once, delete if asked, free the entry when
 * nobody holds it. files_lock held. */
static void maybe_retire(struct io *io, struct io_file *f)
{
	if (f->counted && f->writer_done && !f->pending && !f->finished) {
		f->finished = true;
		io_stat_add(f->failed ? &io->st->files_failed : &io->st->files_complete, 1);
		manifest_line(io, f);
		if (f->delete_after && !f->deleted)
			delete_locked(io, f);
	}
	if (f->refs || !f->finished || f->sync_waiters)
		return;
	if (f->slot >= 0)
		io->be->forget(io, f);
	remove_entry(io, f);
}

void io_file_put(struct io *io, struct io_file *f)
{
	pthread_mutex_lock(&io->files_lock);
	f->refs--;
	maybe_retire(io, f);
	pthread_mutex_unlock(&io->files_lock);
}

void io_file_pages_done(struct io *io, struct io_file *f, unsigned npages, unsigned nfailed,
			int err)
{
	pthread_mutex_lock(&io->files_lock);
	if (f->counted)
		f->pending -= npages < f->pending ? npages : f->pending;
	f->written += npages - nfailed;
	f->failed += nfailed;
	if (nfailed && !f->first_err)
		f->first_err = err;
	maybe_retire(io, f);
	pthread_mutex_unlock(&io->files_lock);
	__atomic_fetch_add(&io->progress, 1, __ATOMIC_RELEASE);
	io_futex_wake_all(&io->progress);
}

void io_file_written(struct io *io, uint64_t file_id)
{
	struct io_file *f;

	pthread_mutex_lock(&io->files_lock);
	f = lookup(io, file_id);
	if (f) {
		f->writer_done = true;
		f->delete_after = io->cfg.dspec.delete_after;
		f->refs--;
		maybe_retire(io, f);
	}
	pthread_mutex_unlock(&io->files_lock);
}

void io_file_delete(struct io *io, uint64_t file_id)
{
	struct io_file *f;

	pthread_mutex_lock(&io->files_lock);
	f = lookup(io, file_id);
	if (f && !f->deleted) {
		f->delete_after = true;
		if (f->finished)
			delete_locked(io, f);
	}
	pthread_mutex_unlock(&io->files_lock);
}
