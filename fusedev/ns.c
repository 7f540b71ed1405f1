/* fusedev namespace: inodes and directories of the slow-device filesystem.
 *
 * A hierarchical namespace kept in memory (whatever the data back-end): inodes with FUSE
 * lookup counts, directories as small arrays of entries. An inode lives while it has a name
 * (nlink) or kernel references (nlookup), as in the kernel's iput()/evict() pair; its node id
 * is its address (passthrough_ll's scheme). The control and stats files are children of the
 * root that lookup finds but readdir does not list.
 */
#include "fusedev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fdev_touch(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

struct fdev_inode *fdev_inode_new(struct fdev *fs, enum fdev_kind kind, mode_t mode)
{
	struct fdev_inode *ino = calloc(1, sizeof(*ino));

	if (!ino)
		return NULL;
	pthread_mutex_init(&ino->lock, NULL);
	ino->kind = kind;
	ino->mode = mode;
	ino->uid = getuid();
	ino->gid = getgid();
	ino->nlink = kind == FDEV_DIR ? 2 : 1;
	ino->fd = -1;
	fdev_touch(&ino->mtime);
	ino->atime = ino->ctime = ino->mtime;
	pthread_mutex_lock(&fs->ns_lock);
	ino->ino = fs->next_ino++;
	fs->nfiles++;
	pthread_mutex_unlock(&fs->ns_lock);
	/* 64 GiB apart: each file is its own run of allocation units on the device */
	ino->dev_base = ino->ino << 36;
	return ino;
}

void fdev_inode_free(struct fdev *fs, struct fdev_inode *ino)
{
	if (!ino)
		return;
	if (ino->kind == FDEV_REG && fs->mach)
		fdev_machine_truncate(fs, ino, 0);
	if (ino->kind == FDEV_REG)
		fdev_store_drop(fs, ino);
	for (size_t i = 0; i < ino->nents; i++)
		free(ino->ents[i].name);
	free(ino->ents);
	free(ino->name);
	pthread_mutex_destroy(&ino->lock);
	pthread_mutex_lock(&fs->ns_lock);
	fs->nfiles--;
	pthread_mutex_unlock(&fs->ns_lock);
	free(ino);
}

struct fdev_inode *fdev_ino(struct fdev *fs, fuse_ino_t n)
{
	return n == FUSE_ROOT_ID ? fs->root : (struct fdev_inode *)(uintptr_t)n;
}

fuse_ino_t fdev_nodeid(struct fdev *fs, struct fdev_inode *ino)
{
	return ino == fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)ino;
}

struct fdev_inode *fdev_dir_lookup(struct fdev_inode *dir, const char *name)
{
	for (size_t i = 0; i < dir->nents; i++)
		if (strcmp(dir->ents[i].name, name) == 0)
			return dir->ents[i].ino;
	return NULL;
}

int fdev_dir_add(struct fdev_inode *dir, const char *name, struct fdev_inode *ino)
{
	char *copy = strdup(name), *own = strdup(name);

	if (!copy || !own)
		goto out_nomem;
	if (dir->nents == dir->cap) {
		size_t cap = dir->cap ? dir->cap * 2 : 8;
		struct fdev_dirent *e = realloc(dir->ents, cap * sizeof(*e));

		if (!e)
			goto out_nomem;
		dir->ents = e;
		dir->cap = cap;
	}
	dir->ents[dir->nents++] = (struct fdev_dirent){copy, ino};
	free(ino->name);
	ino->name = own;
	ino->parent = dir;
	return 0;
out_nomem:
	free(copy);
	free(own);
	return -ENOMEM;
}

int fdev_dir_remove(struct fdev_inode *dir, const char *name)
{
	for (size_t i = 0; i < dir->nents; i++) {
		if (strcmp(dir->ents[i].name, name) != 0)
			continue;
		if (dir->ents[i].ino->parent == dir) {
			dir->ents[i].ino->parent = NULL;
			free(dir->ents[i].ino->name);
			dir->ents[i].ino->name = NULL;
		}
		free(dir->ents[i].name);
		dir->ents[i] = dir->ents[--dir->nents];
		return 0;
	}
	return -ENOENT;
}

/* Writes "a/b/c" for ino (root: "."). */
int fdev_path(struct fdev_inode *ino, char *buf, size_t len)
{
	const struct fdev_inode *chain[256];
	size_t n = 0, pos = 0;

	for (const struct fdev_inode *i = ino; i && i->parent; i = i->parent) {
		if (n == 256)
			return -ENAMETOOLONG;
		chain[n++] = i;
	}
	if (n == 0)
		return snprintf(buf, len, ".") >= (int)len ? -ENAMETOOLONG : 1;
	while (n--) {
		int w = snprintf(buf + pos, len - pos, "%s%s", pos ? "/" : "", chain[n]->name);

		if (w < 0 || (size_t)w >= len - pos)
			return -ENAMETOOLONG;
		pos += (size_t)w;
	}
	return (int)pos;
}

int fdev_path_child(struct fdev_inode *dir, const char *name, char *buf, size_t len)
{
	int n = fdev_path(dir, buf, len);

	if (n < 0)
		return n;
	if (snprintf(buf + n, len - (size_t)n, "/%s", name) >= (int)(len - (size_t)n))
		return -ENAMETOOLONG;
	return 0;
}

void fdev_fill_stat(struct fdev_inode *ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&ino->lock);
	st->st_ino = ino->ino;
	st->st_mode = ino->mode;
	st->st_nlink = ino->nlink;
	st->st_uid = ino->uid;
	st->st_gid = ino->gid;
	st->st_size = (off_t)ino->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((ino->allocated + 511) / 512);
	st->st_atim = ino->atime;
	st->st_mtim = ino->mtime;
	st->st_ctim = ino->ctime;
	pthread_mutex_unlock(&ino->lock);
}

int fdev_ns_init(struct fdev *fs)
{
	pthread_mutex_init(&fs->ns_lock, NULL);
	fs->next_ino = 1;
	fs->root = fdev_inode_new(fs, FDEV_DIR, S_IFDIR | 0755);
	fs->ctl = fdev_inode_new(fs, FDEV_CTL, S_IFREG | 0600);
	fs->stats = fdev_inode_new(fs, FDEV_STATS, S_IFREG | 0444);
	if (!fs->root || !fs->ctl || !fs->stats)
		return -ENOMEM;
	return 0;
}

static void free_tree(struct fdev *fs, struct fdev_inode *dir)
{
	for (size_t i = 0; i < dir->nents; i++) {
		struct fdev_inode *c = dir->ents[i].ino;

		if (c->kind == FDEV_DIR)
			free_tree(fs, c);
		else
			fdev_inode_free(fs, c);
	}
	fdev_inode_free(fs, dir);
}

/* At exit: frees what is still named. Unlinked inodes the kernel still referenced were
 * forgotten by the kernel when the session ended, or are leaked with the process. */
void fdev_ns_destroy(struct fdev *fs)
{
	if (fs->root)
		free_tree(fs, fs->root);
	fdev_inode_free(fs, fs->ctl);
	fdev_inode_free(fs, fs->stats);
	fs->root = fs->ctl = fs->stats = NULL;
	pthread_mutex_destroy(&fs->ns_lock);
}
