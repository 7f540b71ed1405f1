/* A writer of newc cpio archives: the initramfs of an oracle boot (see cpio.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle/cpio.h"

void cpio_init(struct cpio_w *w, FILE *f)
{
	w->f = f;
	w->ino = 1;
	w->off = 0;
	w->err = 0;
}

static void put(struct cpio_w *w, const void *p, size_t len)
{
	if (w->err || !len)
		return;
	if (fwrite(p, 1, len, w->f) != len)
		w->err = errno ? -errno : -EIO;
	else
		w->off += len;
}

static void pad4(struct cpio_w *w)
{
	static const char zeros[4];

	put(w, zeros, (4 - w->off % 4) % 4);
}

/* The header and the padded name of an entry whose data (size bytes) follows. */
static void header(struct cpio_w *w, const char *path, unsigned mode, uint64_t size,
		   unsigned rmajor, unsigned rminor)
{
	char h[CPIO_HEADER_LEN + 1];
	size_t namesize = strlen(path) + 1;

	if (w->err)
		return;
	if (size > UINT32_MAX || namesize > 4096) {
		w->err = -EFBIG;
		return;
	}
	snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08zX%08X",
		 w->ino++, mode, 0u, 0u, S_ISDIR(mode) ? 2u : 1u, 0u, (unsigned)size, 0u, 0u,
		 rmajor, rminor, namesize, 0u);
	put(w, h, CPIO_HEADER_LEN);
	put(w, path, namesize);
	pad4(w);
}

int cpio_dir(struct cpio_w *w, const char *path, unsigned mode)
{
	header(w, path, S_IFDIR | (mode & 07777), 0, 0, 0);
	return w->err;
}

int cpio_file(struct cpio_w *w, const char *path, unsigned mode, const void *data, size_t len)
{
	header(w, path, S_IFREG | (mode & 07777), len, 0, 0);
	put(w, data, len);
	pad4(w);
	return w->err;
}

/* The data of an open file, exactly size bytes (a file that changed size is an error). */
static void put_fd(struct cpio_w *w, int fd, uint64_t size)
{
	char buf[65536];
	uint64_t done = 0;

	while (!w->err && done < size) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->err = n < 0 ? -errno : -EIO;
			return;
		}
		if ((uint64_t)n > size - done)
			n = (ssize_t)(size - done);
		put(w, buf, (size_t)n);
		done += (uint64_t)n;
	}
}

int cpio_copy(struct cpio_w *w, const char *path, unsigned mode, const char *src)
{
	struct stat st;
	int fd;

	if (w->err)
		return w->err;
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		w->err = -errno;
		return w->err;
	}
	if (fstat(fd, &st) < 0) {
		w->err = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		w->err = -EINVAL;
	} else {
		header(w, path, S_IFREG | (mode & 07777), (uint64_t)st.st_size, 0, 0);
		put_fd(w, fd, (uint64_t)st.st_size);
		pad4(w);
	}
	close(fd);
	return w->err;
}

int cpio_symlink(struct cpio_w *w, const char *path, const char *target)
{
	size_t len = strlen(target);

	header(w, path, S_IFLNK | 0777, len, 0, 0);
	put(w, target, len);
	pad4(w);
	return w->err;
}

int cpio_node(struct cpio_w *w, const char *path, unsigned mode, unsigned major, unsigned minor)
{
	if (!S_ISCHR(mode) && !S_ISBLK(mode) && !w->err)
		w->err = -EINVAL;
	header(w, path, mode, 0, major, minor);
	return w->err;
}

int cpio_finish(struct cpio_w *w)
{
	w->ino = 0;
	header(w, "TRAILER!!!", 0, 0, 0, 0);
	if (!w->err && fflush(w->f))
		w->err = errno ? -errno : -EIO;
	return w->err;
}
