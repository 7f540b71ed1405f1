/* A writer of "newc" cpio archives (the initramfs format the kernel unpacks, init/initramfs.c;
 * the format is Documentation/driver-api/early-userspace/buffer-format.rst).
 *
 * Each entry is a 110-byte ASCII header (magic 070701, then thirteen 8-digit hexadecimal fields:
 * inode, mode, uid, gid, nlink, mtime, file size, device major/minor, rdev major/minor, name
 * size with its NUL, checksum 0), the name, NUL-padded to a multiple of 4, then the data, padded
 * to 4. The archive ends with an entry named TRAILER!!!. Every entry is owned by root with mtime
 * 0, so the same inputs give the same bytes (a pinned boot sees the same initramfs).
 *
 * Errors are sticky: the first one is kept and returned by cpio_finish, later calls do nothing.
 */
#ifndef THPEMU_ORACLE_CPIO_H
#define THPEMU_ORACLE_CPIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CPIO_HEADER_LEN 110

struct cpio_w {
	FILE *f;
	uint32_t ino; /* the next inode number */
	uint64_t off; /* bytes written */
	int err;      /* the first error, -errno */
};

void cpio_init(struct cpio_w *w, FILE *f);
/* A directory, a regular file with its data, a regular file copied from src, a symbolic link,
 * a device node (mode with S_IFCHR or S_IFBLK). mode holds the permission bits (and the type for
 * cpio_node). 0 or the sticky error. */
int cpio_dir(struct cpio_w *w, const char *path, unsigned mode);
int cpio_file(struct cpio_w *w, const char *path, unsigned mode, const void *data, size_t len);
int cpio_copy(struct cpio_w *w, const char *path, unsigned mode, const char *src);
int cpio_symlink(struct cpio_w *w, const char *path, const char *target);
int cpio_node(struct cpio_w *w, const char *path, unsigned mode, unsigned major, unsigned minor);
/* Write the trailer and flush. 0, or the first error. */
int cpio_finish(struct cpio_w *w);

#endif
