/* fusedev storage back-ends: where the bytes written through the slow device live.
 *
 *   memory   sparse 64 KiB chunks per file, bounded by the capacity (holes read as zeros)
 *   discard  counts bytes and tracks sizes; reads return zeros (throughput runs, no RAM)
 *   writers  memory for programs' files, discard for the files of the writeback engine of the
 *            thpemu machine fusedev joined (thpemu run's private mount: programs read back
 *            what they wrote, the engine's copies of it cost nothing)
 *   DIR      files and directories mirrored into a host directory, so data persists and
 *            a restarted daemon finds it again
 *
 * Data is stored at once; only the reply waits for the device model (fusedev.h). The capacity
 * charge is like a block allocation: the memory store charges whole chunks, the others the
 * logical size. Namespace syscalls of the dir store run under the namespace lock (rare
 * metadata operations, never on the data path).
 */
#include "fusedev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define C FDEV_CHUNK

/* The back-end of ino's data: `writers` keeps programs' files in memory and only the sizes of
 * the machine's writeback engine's own files (fusedev/writers.c), which hold copies. */
static enum fdev_store_kind kind_of(const struct fdev *fs, const struct fdev_inode *ino)
{
	if (fs->o.store == FDEV_STORE_WRITERS)
		return ino->engine ? FDEV_STORE_DISCARD : FDEV_STORE_MEMORY;
	return fs->o.store;
}

const char *fdev_store_name(const struct fdev *fs)
{
	switch (fs->o.store) {
	case FDEV_STORE_MEMORY:
		return "memory";
	case FDEV_STORE_DISCARD:
		return "discard";
	case FDEV_STORE_WRITERS:
		return "writers";
	default:
		return fs->o.store_dir;
	}
}

/* ---- capacity ---- */

static int charge(struct fdev *fs, uint64_t bytes)
{
	uint64_t cap = atomic_load(&fs->capacity);
	uint_fast64_t used = atomic_load(&fs->used);

	do {
		if (cap && (bytes > cap || used > cap - bytes)) {
			atomic_fetch_add(&fs->q.st.fs_enospc, 1);
			return -ENOSPC;
		}
	} while (!atomic_compare_exchange_weak(&fs->used, &used, used + bytes));
	return 0;
}

static void uncharge(struct fdev *fs, uint64_t bytes)
{
	atomic_fetch_sub(&fs->used, bytes);
}

/* Logical-size accounting (discard and dir stores): charge growth of ino->allocated to end. */
static int charge_to(struct fdev *fs, struct fdev_inode *ino, uint64_t end)
{
	int err;

	if (end <= ino->allocated)
		return 0;
	err = charge(fs, end - ino->allocated);
	if (err == 0)
		ino->allocated = end;
	return err;
}

static void set_allocated(struct fdev *fs, struct fdev_inode *ino, uint64_t a)
{
	if (a < ino->allocated)
		uncharge(fs, ino->allocated - a);
	else
		charge(fs, a - ino->allocated); /* truncate up may exceed: statfs shows it */
	ino->allocated = a;
}

static void written(struct fdev_inode *ino, uint64_t end, bool grow)
{
	if (grow && end > ino->size)
		ino->size = end;
	fdev_touch(&ino->mtime);
	ino->ctime = ino->mtime;
}

/* ---- memory store ---- */

static int mem_grow_table(struct fdev_inode *ino, size_t n)
{
	uint8_t **t;

	if (n <= ino->nchunks)
		return 0;
	t = realloc(ino->chunks, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + ino->nchunks, 0, (n - ino->nchunks) * sizeof(*t));
	ino->chunks = t;
	ino->nchunks = n;
	return 0;
}

/* Allocates the chunks covering [off, off + len) (charging the capacity first). */
static int mem_alloc(struct fdev *fs, struct fdev_inode *ino, uint64_t off, uint64_t len)
{
	size_t first = off / C, last = (off + len - 1) / C, missing = 0;
	int err = mem_grow_table(ino, last + 1);

	if (err)
		return err;
	for (size_t i = first; i <= last; i++)
		missing += !ino->chunks[i];
	if (!missing)
		return 0;
	err = charge(fs, (uint64_t)missing * C);
	if (err)
		return err;
	for (size_t i = first; i <= last; i++) {
		if (ino->chunks[i])
			continue;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
		/* false positive (gcc 12 -fanalyzer): ino->chunks[] keeps it (fdev_store_drop) */
		ino->chunks[i] = calloc(1, C);
		if (!ino->chunks[i]) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
			uncharge(fs, (uint64_t)missing * C); /* the ones not allocated */
			return -ENOMEM;
		}
		missing--;
		ino->allocated += C;
	}
	return 0;
}

static int mem_write(struct fdev *fs, struct fdev_inode *ino, const char *buf, size_t len,
		     uint64_t off)
{
	int err = mem_alloc(fs, ino, off, len);

	if (err)
		return err;
	for (size_t done = 0; done < len;) {
		uint64_t pos = off + done;
		size_t in = pos % C, n = C - in < len - done ? C - in : len - done;

		memcpy(ino->chunks[pos / C] + in, buf + done, n);
		done += n;
	}
	return 0;
}

static void mem_read(struct fdev_inode *ino, char *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		uint64_t pos = off + done;
		size_t idx = pos / C, in = pos % C, n = C - in < len - done ? C - in : len - done;

		if (idx < ino->nchunks && ino->chunks[idx])
			memcpy(buf + done, ino->chunks[idx] + in, n);
		else
			memset(buf + done, 0, n);
		done += n;
	}
}

static void mem_free_chunk(struct fdev *fs, struct fdev_inode *ino, size_t i)
{
	if (!ino->chunks[i])
		return;
	free(ino->chunks[i]);
	ino->chunks[i] = NULL;
	ino->allocated -= C;
	uncharge(fs, C);
}

/* Zeroes [off, end) and frees the chunks it covers completely. */
static void mem_punch(struct fdev *fs, struct fdev_inode *ino, uint64_t off, uint64_t end)
{
	while (off < end) {
		size_t idx = off / C, in = off % C;
		uint64_t n = C - in < end - off ? C - in : end - off;

		if (idx >= ino->nchunks)
			break;
		if (n == C)
			mem_free_chunk(fs, ino, idx);
		else if (ino->chunks[idx])
			memset(ino->chunks[idx] + in, 0, n);
		off += n;
	}
}

static void mem_truncate(struct fdev *fs, struct fdev_inode *ino, uint64_t size)
{
	uint64_t end = (uint64_t)ino->nchunks * C;

	if (size < end)
		mem_punch(fs, ino, size, end);
}

/* ---- dir store ---- */

static int dir_open_file(struct fdev *fs, struct fdev_inode *ino, int flags)
{
	char path[4096];
	int n = fdev_path(ino, path, sizeof(path)), fd;

	if (n < 0)
		return n;
	fd = openat(fs->store_root, path, O_RDWR | O_CLOEXEC | flags, 0644);
	return fd < 0 ? -errno : fd;
}

int fdev_store_prepare(struct fdev *fs, struct fdev_inode *ino)
{
	int fd = 0;

	if (fs->o.store != FDEV_STORE_DIR || ino->kind != FDEV_REG)
		return 0;
	pthread_mutex_lock(&fs->ns_lock);
	pthread_mutex_lock(&ino->lock);
	if (ino->fd < 0) {
		fd = ino->parent ? dir_open_file(fs, ino, 0) : -ENOENT;
		if (fd >= 0)
			ino->fd = fd;
	}
	pthread_mutex_unlock(&ino->lock);
	pthread_mutex_unlock(&fs->ns_lock);
	return fd < 0 ? fd : 0;
}

static int dir_write(struct fdev *fs, struct fdev_inode *ino, const char *buf, size_t len,
		     uint64_t off)
{
	int fd = ino->fd;
	ssize_t w;

	if (fd < 0)
		return -EIO;
	pthread_mutex_unlock(&ino->lock); /* host I/O outside our lock */
	w = pwrite(fd, buf, len, (off_t)off);
	pthread_mutex_lock(&ino->lock);
	if (w < 0)
		return -errno;
	return (size_t)w == len ? 0 : -EIO;
}

static ssize_t dir_read(struct fdev_inode *ino, char *buf, size_t len, uint64_t off)
{
	int fd = ino->fd;
	ssize_t r;

	if (fd < 0)
		return -EIO;
	pthread_mutex_unlock(&ino->lock);
	r = pread(fd, buf, len, (off_t)off);
	pthread_mutex_lock(&ino->lock);
	if (r < 0)
		return -errno;
	memset(buf + r, 0, len - (size_t)r); /* within our size: a hole at the end */
	return (ssize_t)len;
}

/* ---- dispatch ---- */

int fdev_store_write(struct fdev *fs, struct fdev_inode *ino, const char *buf, size_t len,
		     uint64_t off)
{
	int err;

	if (len == 0)
		return 0;
	if (off + len < off)
		return -EFBIG;
	pthread_mutex_lock(&ino->lock);
	switch (kind_of(fs, ino)) {
	case FDEV_STORE_MEMORY:
		err = mem_write(fs, ino, buf, len, off);
		break;
	case FDEV_STORE_DISCARD:
		err = charge_to(fs, ino, off + len);
		break;
	default:
		err = charge_to(fs, ino, off + len);
		if (!err)
			err = dir_write(fs, ino, buf, len, off);
		break;
	}
	if (!err)
		written(ino, off + len, true);
	pthread_mutex_unlock(&ino->lock);
	return err;
}

ssize_t fdev_store_read(struct fdev *fs, struct fdev_inode *ino, char *buf, size_t len,
			uint64_t off)
{
	ssize_t n;

	pthread_mutex_lock(&ino->lock);
	if (off >= ino->size) {
		n = 0;
		goto out_unlock;
	}
	if (len > ino->size - off)
		len = ino->size - off;
	n = (ssize_t)len;
	if (kind_of(fs, ino) == FDEV_STORE_MEMORY)
		mem_read(ino, buf, len, off);
	else if (kind_of(fs, ino) == FDEV_STORE_DISCARD)
		memset(buf, 0, len);
	else
		n = dir_read(ino, buf, len, off);
	fdev_touch(&ino->atime);
out_unlock:
	pthread_mutex_unlock(&ino->lock);
	return n;
}

int fdev_store_truncate(struct fdev *fs, struct fdev_inode *ino, uint64_t size)
{
	int err = 0;

	pthread_mutex_lock(&ino->lock);
	if (kind_of(fs, ino) == FDEV_STORE_MEMORY) {
		mem_truncate(fs, ino, size);
	} else {
		if (kind_of(fs, ino) == FDEV_STORE_DIR &&
		    (ino->fd < 0 || ftruncate(ino->fd, (off_t)size)))
			err = ino->fd < 0 ? -EIO : -errno;
		if (!err)
			set_allocated(fs, ino, size);
	}
	if (!err) {
		ino->size = size;
		written(ino, size, false);
	}
	pthread_mutex_unlock(&ino->lock);
	return err;
}

static int falloc_alloc(struct fdev *fs, struct fdev_inode *ino, int mode, uint64_t off,
			uint64_t len)
{
	int err;

	if (kind_of(fs, ino) == FDEV_STORE_MEMORY)
		err = mem_alloc(fs, ino, off, len);
	else
		err = charge_to(fs, ino, off + len);
	if (!err && kind_of(fs, ino) == FDEV_STORE_DIR &&
	    fallocate(ino->fd, mode, (off_t)off, (off_t)len))
		err = -errno;
	if (!err)
		written(ino, off + len, !(mode & FALLOC_FL_KEEP_SIZE));
	return err;
}

static int falloc_punch(struct fdev *fs, struct fdev_inode *ino, int mode, uint64_t off,
			uint64_t len)
{
	if (kind_of(fs, ino) == FDEV_STORE_MEMORY)
		mem_punch(fs, ino, off, off + len);
	else if (kind_of(fs, ino) == FDEV_STORE_DIR &&
		 fallocate(ino->fd, mode, (off_t)off, (off_t)len))
		return -errno;
	written(ino, off + len, false);
	return 0;
}

int fdev_store_fallocate(struct fdev *fs, struct fdev_inode *ino, int mode, uint64_t off,
			 uint64_t len)
{
	int err;

	if (len == 0 || off + len < off)
		return -EINVAL;
	pthread_mutex_lock(&ino->lock);
	if (kind_of(fs, ino) == FDEV_STORE_DIR && ino->fd < 0)
		err = -EIO;
	else if ((mode & ~FALLOC_FL_KEEP_SIZE) == 0)
		err = falloc_alloc(fs, ino, mode, off, len);
	else if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		err = falloc_punch(fs, ino, mode, off, len);
	else
		err = -EOPNOTSUPP;
	pthread_mutex_unlock(&ino->lock);
	return err;
}

/* The inode is going away: release its data and capacity. */
void fdev_store_drop(struct fdev *fs, struct fdev_inode *ino)
{
	for (size_t i = 0; i < ino->nchunks; i++)
		mem_free_chunk(fs, ino, i);
	free(ino->chunks);
	ino->chunks = NULL;
	ino->nchunks = 0;
	if (ino->allocated)
		uncharge(fs, ino->allocated);
	ino->allocated = 0;
	if (ino->fd >= 0)
		close(ino->fd);
	ino->fd = -1;
}

/* ---- namespace mirroring (dir store) ---- */

int fdev_store_mknode(struct fdev *fs, struct fdev_inode *dir, const char *name,
		      struct fdev_inode *ino)
{
	char path[4096];
	int err, fd;

	if (fs->o.store != FDEV_STORE_DIR)
		return 0;
	err = fdev_path_child(dir, name, path, sizeof(path));
	if (err)
		return err;
	if (ino->kind == FDEV_DIR)
		return mkdirat(fs->store_root, path, 0755) ? -errno : 0;
	fd = openat(fs->store_root, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ino->fd = fd;
	return 0;
}

int fdev_store_unlink(struct fdev *fs, struct fdev_inode *dir, const char *name, bool is_dir)
{
	char path[4096];
	int err;

	if (fs->o.store != FDEV_STORE_DIR)
		return 0;
	err = fdev_path_child(dir, name, path, sizeof(path));
	if (err)
		return err;
	return unlinkat(fs->store_root, path, is_dir ? AT_REMOVEDIR : 0) ? -errno : 0;
}

int fdev_store_rename(struct fdev *fs, struct fdev_inode *od, const char *on, struct fdev_inode *nd,
		      const char *nn)
{
	char op[4096], np[4096];
	int err;

	if (fs->o.store != FDEV_STORE_DIR)
		return 0;
	err = fdev_path_child(od, on, op, sizeof(op));
	if (!err)
		err = fdev_path_child(nd, nn, np, sizeof(np));
	if (err)
		return err;
	return renameat(fs->store_root, op, fs->store_root, np) ? -errno : 0;
}

/* ---- open / scan ---- */

int fdev_store_open(struct fdev *fs)
{
	fs->store_root = -1;
	if (fs->o.store != FDEV_STORE_DIR)
		return 0;
	fs->store_root = open(fs->o.store_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fs->store_root < 0 ? -errno : 0;
}

void fdev_store_close(struct fdev *fs)
{
	if (fs->store_root >= 0)
		close(fs->store_root);
	fs->store_root = -1;
}

static int scan_dir(struct fdev *fs, struct fdev_inode *dir, int dfd);

static int scan_entry(struct fdev *fs, struct fdev_inode *dir, int dfd, const char *name)
{
	struct fdev_inode *ino;
	struct stat st;
	int err = 0, sub;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 0; /* not representable here: left alone */
	ino = fdev_inode_new(fs, S_ISDIR(st.st_mode) ? FDEV_DIR : FDEV_REG,
			     st.st_mode & (S_IFMT | 07777));
	if (!ino)
		return -ENOMEM;
	ino->size = (uint64_t)st.st_size;
	ino->mtime = st.st_mtim;
	ino->ctime = st.st_ctim;
	ino->atime = st.st_atim;
	if (ino->kind == FDEV_REG && charge_to(fs, ino, ino->size))
		ino->allocated = ino->size; /* over capacity already: keep the data visible */
	err = fdev_dir_add(dir, name, ino);
	if (err) {
		fdev_inode_free(fs, ino);
		return err;
	}
	if (ino->kind == FDEV_DIR) {
		dir->nlink++;
		sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			return -errno;
		err = scan_dir(fs, ino, sub);
	}
	return err;
}

static int scan_dir(struct fdev *fs, struct fdev_inode *dir, int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int err = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (dir == fs->root &&
		     (!strcmp(de->d_name, FDEV_CTL_NAME) || !strcmp(de->d_name, FDEV_STATS_NAME))))
			continue;
		err = scan_entry(fs, dir, dfd, de->d_name);
	}
	closedir(d);
	return err;
}

/* Dir store: makes what is already in the directory visible (persistence across restarts). */
int fdev_store_scan(struct fdev *fs)
{
	int dfd;

	if (fs->o.store != FDEV_STORE_DIR)
		return 0;
	dfd = dup(fs->store_root);
	if (dfd < 0)
		return -errno;
	return scan_dir(fs, fs->root, dfd);
}
