/* fusedev FUSE operations (libfuse3 low-level API, FUSE_USE_VERSION 312).
 *
 * The filesystem half of the slow device: a hierarchical namespace (ns.c) over a data store
 * (store.c). READ/WRITE/FSYNC go through the device queue (ioq.c), which holds their replies;
 * everything else answers at once. Mirrors what a block-backed filesystem looks like from the
 * VFS: fuse_perform_write()/fuse_direct_io() in fs/fuse/file.c wait on our reply exactly as
 * they would on a slow disk's request completion.
 */
#include "fusedev.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define ATTR_TIMEOUT 1.0

struct snap {
	char *buf;
	size_t len;
};

static struct fdev *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static bool special(const struct fdev_inode *i)
{
	return i->kind == FDEV_CTL || i->kind == FDEV_STATS;
}

static void fill_entry(struct fdev *fs, struct fdev_inode *i, struct fuse_entry_param *e)
{
	double t = special(i) ? 0.0 : ATTR_TIMEOUT;

	memset(e, 0, sizeof(*e));
	e->ino = fdev_nodeid(fs, i);
	e->attr_timeout = t;
	e->entry_timeout = t;
	fdev_fill_stat(i, &e->attr);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fdev *fs = userdata;

	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (fs->o.cache == FDEV_CACHE_WRITEBACK && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	conn->max_background = fs->o.max_background;
	conn->congestion_threshold = fs->o.max_background * 3 / 4;
	/* The kernel sends INIT as soon as it mounts: answering it means the mount is live. */
	fdev_ready(fs);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *dir = fdev_ino(fs, parent), *i = NULL;
	struct fuse_entry_param e;

	pthread_mutex_lock(&fs->ns_lock);
	if (dir->kind != FDEV_DIR) {
		pthread_mutex_unlock(&fs->ns_lock);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (dir == fs->root && !strcmp(name, FDEV_CTL_NAME))
		i = fs->ctl;
	else if (dir == fs->root && !strcmp(name, FDEV_STATS_NAME))
		i = fs->stats;
	else
		i = fdev_dir_lookup(dir, name);
	if (i)
		i->nlookup++;
	pthread_mutex_unlock(&fs->ns_lock);
	if (!i) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_entry(fs, i, &e);
	fuse_reply_entry(req, &e);
}

/* Drops n kernel references; frees an inode that has neither names nor references. */
static void forget_one(struct fdev *fs, fuse_ino_t n, uint64_t count)
{
	struct fdev_inode *i = fdev_ino(fs, n);
	bool dead;

	pthread_mutex_lock(&fs->ns_lock);
	i->nlookup = count > i->nlookup ? 0 : i->nlookup - count;
	dead = i->nlookup == 0 && i->nlink == 0 && !special(i) && i != fs->root;
	pthread_mutex_unlock(&fs->ns_lock);
	if (dead)
		fdev_inode_free(fs, i);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t k = 0; k < count; k++)
		forget_one(FS(req), forgets[k].ino, forgets[k].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fdev_inode *i = fdev_ino(FS(req), ino);
	struct stat st;

	fdev_fill_stat(i, &st);
	fuse_reply_attr(req, &st, special(i) ? 0.0 : ATTR_TIMEOUT);
}

static void set_times(struct fdev_inode *i, const struct stat *a, int to_set)
{
	struct timespec now;

	fdev_touch(&now);
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		i->atime = now;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		i->atime = a->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		i->mtime = now;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		i->mtime = a->st_mtim;
	i->ctime = now;
}

static int set_size(struct fdev *fs, struct fdev_inode *i, uint64_t size)
{
	int err;

	if (special(i))
		return 0; /* "echo x > .thpemu-control" truncates first: harmless */
	if (i->kind != FDEV_REG)
		return -EISDIR;
	err = fdev_store_prepare(fs, i);
	if (!err)
		err = fdev_store_truncate(fs, i, size);
	if (!err && fs->mach)
		fdev_machine_truncate(fs, i, size);
	return err;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);
	int err = 0;

	if (to_set & FUSE_SET_ATTR_SIZE)
		err = set_size(fs, i, (uint64_t)attr->st_size);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	pthread_mutex_lock(&i->lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		i->mode = (i->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		i->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		i->gid = attr->st_gid;
	set_times(i, attr, to_set);
	pthread_mutex_unlock(&i->lock);
	op_getattr(req, ino, fi);
}

static bool reserved_name(struct fdev *fs, struct fdev_inode *dir, const char *name)
{
	return dir == fs->root && (!strcmp(name, FDEV_CTL_NAME) || !strcmp(name, FDEV_STATS_NAME));
}

/* Creates name in parent (ns_lock held by the caller). */
static int make_node(struct fdev *fs, fuse_req_t req, struct fdev_inode *dir, const char *name,
		     struct fdev_inode *i)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int err;

	if (dir->kind != FDEV_DIR || dir->nlink == 0)
		return dir->kind != FDEV_DIR ? -ENOTDIR : -ENOENT;
	if (reserved_name(fs, dir, name) || fdev_dir_lookup(dir, name))
		return -EEXIST;
	i->uid = ctx->uid;
	i->gid = ctx->gid;
	fdev_machine_mark(fs, dir, name, i);
	err = fdev_store_mknode(fs, dir, name, i);
	if (err)
		return err;
	err = fdev_dir_add(dir, name, i);
	if (err) {
		fdev_store_unlink(fs, dir, name, i->kind == FDEV_DIR);
		return err;
	}
	if (i->kind == FDEV_DIR) {
		pthread_mutex_lock(&dir->lock);
		dir->nlink++;
		pthread_mutex_unlock(&dir->lock);
	}
	i->nlookup = 1;
	return 0;
}

static struct fdev_inode *new_node(fuse_req_t req, fuse_ino_t parent, const char *name,
				   enum fdev_kind kind, mode_t mode, int *errp)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *dir = fdev_ino(fs, parent);
	struct fdev_inode *i = fdev_inode_new(fs, kind, mode);
	int err;

	if (!i) {
		*errp = -ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&fs->ns_lock);
	err = make_node(fs, req, dir, name, i);
	pthread_mutex_unlock(&fs->ns_lock);
	if (err) {
		fdev_inode_free(fs, i);
		*errp = err;
		return NULL;
	}
	return i;
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fuse_entry_param e;
	struct fdev_inode *i;
	int err;

	i = new_node(req, parent, name, FDEV_DIR, S_IFDIR | (mode & 07777), &err);
	if (!i) {
		fuse_reply_err(req, -err);
		return;
	}
	fill_entry(FS(req), i, &e);
	fuse_reply_entry(req, &e);
}

static void open_flags(struct fdev *fs, struct fdev_inode *i, struct fuse_file_info *fi)
{
	if (special(i)) {
		fi->direct_io = 1; /* contents are generated: never cache them */
		return;
	}
	if (fs->o.cache == FDEV_CACHE_DIRECT)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1; /* the data only ever changes through this mount */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct fdev_inode *i;
	int err;

	i = new_node(req, parent, name, FDEV_REG, S_IFREG | (mode & 07777), &err);
	if (!i) {
		fuse_reply_err(req, -err);
		return;
	}
	open_flags(FS(req), i, fi);
	fill_entry(FS(req), i, &e);
	fuse_reply_create(req, &e, fi);
}

/* mknod(2) of a regular file (the writeback engine creates its files by path, holding no
 * descriptor); devices, FIFOs and sockets have no place on a USB stick model. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fuse_entry_param e;
	struct fdev_inode *i;
	int err;

	if (!S_ISREG(mode)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	i = new_node(req, parent, name, FDEV_REG, S_IFREG | (mode & 07777), &err);
	if (!i) {
		fuse_reply_err(req, -err);
		return;
	}
	fill_entry(FS(req), i, &e);
	fuse_reply_entry(req, &e);
}

static void drop_link(struct fdev_inode *i, struct fdev_inode *dir)
{
	pthread_mutex_lock(&i->lock);
	if (i->kind == FDEV_DIR)
		i->nlink = 0;
	else if (i->nlink)
		i->nlink--;
	fdev_touch(&i->ctime);
	pthread_mutex_unlock(&i->lock);
	if (i->kind == FDEV_DIR) {
		pthread_mutex_lock(&dir->lock);
		dir->nlink--;
		pthread_mutex_unlock(&dir->lock);
	}
}

/* Checks that victim may be removed (or replaced) as `want_dir` says. */
static int removable(struct fdev_inode *victim, bool want_dir)
{
	if (special(victim))
		return -EPERM;
	if (want_dir && victim->kind != FDEV_DIR)
		return -ENOTDIR;
	if (!want_dir && victim->kind == FDEV_DIR)
		return -EISDIR;
	if (want_dir && victim->nents)
		return -ENOTEMPTY;
	return 0;
}

static int remove_name(struct fdev *fs, struct fdev_inode *dir, const char *name, bool is_dir)
{
	struct fdev_inode *i;
	int err;

	if (dir->kind != FDEV_DIR)
		return -ENOTDIR;
	if (reserved_name(fs, dir, name))
		return -EPERM;
	i = fdev_dir_lookup(dir, name);
	if (!i)
		return -ENOENT;
	err = removable(i, is_dir);
	if (!err)
		err = fdev_store_unlink(fs, dir, name, is_dir);
	if (err)
		return err;
	fdev_dir_remove(dir, name);
	drop_link(i, dir);
	return 0;
}

static void op_unlink_common(fuse_req_t req, fuse_ino_t parent, const char *name, bool is_dir)
{
	struct fdev *fs = FS(req);
	int err;

	pthread_mutex_lock(&fs->ns_lock);
	err = remove_name(fs, fdev_ino(fs, parent), name, is_dir);
	pthread_mutex_unlock(&fs->ns_lock);
	fuse_reply_err(req, -err);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	op_unlink_common(req, parent, name, false);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	op_unlink_common(req, parent, name, true);
}

static bool is_ancestor(const struct fdev_inode *a, const struct fdev_inode *d)
{
	for (; d; d = d->parent)
		if (d == a)
			return true;
	return false;
}

static int rename_check(struct fdev *fs, struct fdev_inode *src, struct fdev_inode *dst,
			struct fdev_inode *nd, unsigned flags)
{
	if (special(src))
		return -EPERM;
	if (src->kind == FDEV_DIR && is_ancestor(src, nd))
		return -EINVAL;
	if (!dst)
		return 0;
	if (flags & RENAME_NOREPLACE)
		return -EEXIST;
	return removable(dst, src->kind == FDEV_DIR);
}

static int do_rename(struct fdev *fs, struct fdev_inode *od, const char *on, struct fdev_inode *nd,
		     const char *nn, unsigned flags)
{
	struct fdev_inode *src, *dst;
	int err;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;
	if (od->kind != FDEV_DIR || nd->kind != FDEV_DIR)
		return -ENOTDIR;
	if (reserved_name(fs, od, on) || reserved_name(fs, nd, nn))
		return -EPERM;
	src = fdev_dir_lookup(od, on);
	if (!src)
		return -ENOENT;
	dst = fdev_dir_lookup(nd, nn);
	if (dst == src)
		return 0;
	err = rename_check(fs, src, dst, nd, flags);
	if (!err)
		err = fdev_store_rename(fs, od, on, nd, nn);
	if (err)
		return err;
	if (dst) {
		fdev_dir_remove(nd, nn);
		drop_link(dst, nd);
	}
	fdev_dir_remove(od, on);
	err = fdev_dir_add(nd, nn, src);
	if (err)
		return err;
	if (src->kind == FDEV_DIR && od != nd) {
		pthread_mutex_lock(&od->lock);
		od->nlink--;
		pthread_mutex_unlock(&od->lock);
		pthread_mutex_lock(&nd->lock);
		nd->nlink++;
		pthread_mutex_unlock(&nd->lock);
	}
	return 0;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct fdev *fs = FS(req);
	int err;

	pthread_mutex_lock(&fs->ns_lock);
	err = do_rename(fs, fdev_ino(fs, parent), name, fdev_ino(fs, newparent), newname, flags);
	pthread_mutex_unlock(&fs->ns_lock);
	fuse_reply_err(req, -err);
}

static int open_special(struct fdev *fs, struct fdev_inode *i, struct fuse_file_info *fi)
{
	struct snap *s;

	if (i->kind == FDEV_STATS && (fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->buf = fdev_ctl_render(fs, i->kind, &s->len);
	if (!s->buf) {
		free(s);
		return -ENOMEM;
	}
	fi->fh = (uintptr_t)s;
	return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);
	int err = 0;

	if (i->kind == FDEV_DIR)
		err = -EISDIR;
	else if (special(i))
		err = open_special(fs, i, fi);
	else
		err = fdev_store_prepare(fs, i);
	if (!err && i->kind == FDEV_REG && (fi->flags & O_TRUNC)) {
		err = fdev_store_truncate(fs, i, 0);
		if (!err && fs->mach)
			fdev_machine_truncate(fs, i, 0);
	}
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	open_flags(fs, i, fi);
	fuse_reply_open(req, fi);
}

static void read_special(fuse_req_t req, struct fuse_file_info *fi, size_t size, off_t off)
{
	struct snap *s = (struct snap *)(uintptr_t)fi->fh;

	if (!s || (size_t)off >= s->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > s->len - (size_t)off)
		size = s->len - (size_t)off;
	fuse_reply_buf(req, s->buf + off, size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);
	char *buf;
	ssize_t n;

	if (special(i)) {
		read_special(req, fi, size, off);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fdev_store_read(fs, i, buf, size, (uint64_t)off);
	if (n <= 0 || !fs->o.model_reads) {
		if (n < 0)
			fuse_reply_err(req, (int)-n);
		else
			fuse_reply_buf(req, buf, (size_t)n);
		free(buf);
		return;
	}
	fdev_ioq_read(fs, req, i->dev_base + (uint64_t)off, buf, (size_t)n);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);
	int err;

	if (i->kind == FDEV_CTL) {
		err = fdev_ctl_apply(fs, buf, size);
		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (i->kind != FDEV_REG) {
		fuse_reply_err(req, i->kind == FDEV_DIR ? EISDIR : EPERM);
		return;
	}
	/* Store now, reply when the device model completes the request. */
	err = fdev_store_write(fs, i, buf, size, (uint64_t)off);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	if (fs->mach && fdev_machine_caches(fs, i, fi->flags)) {
		fdev_machine_write(fs, req, i, size, (uint64_t)off);
		return;
	}
	fdev_ioq_write(fs, req, i->dev_base + (uint64_t)off, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fdev_inode *i = fdev_ino(FS(req), ino);

	if (special(i) && fi->fh) {
		struct snap *s = (struct snap *)(uintptr_t)fi->fh;

		free(s->buf);
		free(s);
	}
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);

	if (i->kind != FDEV_REG) {
		fuse_reply_err(req, 0);
		return;
	}
	if (fs->mach && fdev_machine_caches(fs, i, fi ? fi->flags : 0)) {
		fdev_machine_fsync(fs, req, i);
		return;
	}
	fdev_ioq_fsync(fs, req, i->dev_base);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fdev_inode *i = fdev_ino(FS(req), ino);

	if (i->kind != FDEV_DIR)
		fuse_reply_err(req, ENOTDIR);
	else
		fuse_reply_open(req, fi);
}

/* Entry k of directory d: 0 ".", 1 "..", 2 + j = ents[j]. */
static const struct fdev_inode *dirent_at(const struct fdev_inode *d, size_t k, const char **name)
{
	if (k == 0) {
		*name = ".";
		return d;
	}
	if (k == 1) {
		*name = "..";
		return d->parent ? d->parent : d;
	}
	*name = d->ents[k - 2].name;
	return d->ents[k - 2].ino;
}

/* Adds entries from index off, as many as fit; ns_lock held. */
static size_t fill_dir(fuse_req_t req, struct fdev_inode *d, char *buf, size_t size, off_t off)
{
	size_t pos = 0;

	for (size_t k = (size_t)off; k < d->nents + 2; k++) {
		const char *name;
		const struct fdev_inode *i = dirent_at(d, k, &name);
		/* the type never changes (mode's permission bits may, under i->lock) */
		struct stat st = {.st_ino = i->ino,
				  .st_mode = i->kind == FDEV_DIR ? S_IFDIR : S_IFREG};
		size_t need;

		need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(k + 1));
		if (need > size - pos)
			break;
		pos += need;
	}
	return pos;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *d = fdev_ino(fs, ino);
	char *buf = malloc(size ? size : 1);
	size_t n;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&fs->ns_lock);
	n = fill_dir(req, d, buf, size, off);
	pthread_mutex_unlock(&fs->ns_lock);
	fuse_reply_buf(req, buf, n);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fdev *fs = FS(req);
	uint64_t cap = atomic_load(&fs->capacity), used = atomic_load(&fs->used);
	struct statvfs st = {0};

	if (!cap)
		cap = 1ULL << 50; /* unbounded: report 1 PiB */
	st.f_bsize = 4096;
	st.f_frsize = 4096;
	st.f_blocks = cap / 4096;
	st.f_bfree = st.f_bavail = used < cap ? (cap - used) / 4096 : 0;
	st.f_files = 1ULL << 32;
	pthread_mutex_lock(&fs->ns_lock);
	st.f_ffree = st.f_favail = st.f_files - fs->nfiles;
	pthread_mutex_unlock(&fs->ns_lock);
	st.f_namemax = 255;
	fuse_reply_statfs(req, &st);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct fdev *fs = FS(req);
	struct fdev_inode *i = fdev_ino(fs, ino);
	int err;

	if (i->kind != FDEV_REG) {
		fuse_reply_err(req, i->kind == FDEV_DIR ? EISDIR : EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	err = fdev_store_prepare(fs, i);
	if (!err)
		err = fdev_store_fallocate(fs, i, mode, (uint64_t)off, (uint64_t)len);
	fuse_reply_err(req, -err);
}

/* clang-format off */
const struct fuse_lowlevel_ops fdev_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.create = op_create,
	.mknod = op_mknod,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.fallocate = op_fallocate,
};
/* clang-format on */
