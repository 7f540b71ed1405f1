/* userfaultfd ioctls and opening the descriptor.
 *
 * Thin wrappers over UFFDIO_{COPY,ZEROPAGE,MOVE,WAKE,WRITEPROTECT,REGISTER,UNREGISTER} issued as
 * raw system calls (no errno, no libc state): each returns 0 or -errno and, where the kernel
 * reports partial progress, the bytes done. Callers classify the errors (handler.c, migrate.c).
 *
 * Opening follows fs/userfaultfd.c: the userfaultfd(2) system call without
 * UFFD_USER_MODE_ONLY needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1; otherwise
 * /dev/userfaultfd (USERFAULTFD_IOC_NEW, Linux 6.1+) works for whoever may open that node.
 * USER_MODE_ONLY is not an option: unmodified programs let the kernel write into fresh memory
 * (read(2) into a new buffer), and those faults must be served too.
 *
 * The descriptor is opened blocking: the one idle handler that listens blocks in read(2) as a
 * bare handler does, and every other read is a non-blocking preadv2(RWF_NOWAIT)
 * (userfaultfd_read_iter honours IOCB_NOWAIT). A kernel whose userfaultfd refuses RWF_NOWAIT
 * (EOPNOTSUPP: before its ->read_iter) gets an O_NONBLOCK descriptor and waits in epoll
 * (live.c: the wait modes).
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "util/sys.h"

int uffd_io_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake, int64_t *done)
{
	struct uffdio_copy c = {
	    .dst = dst,
	    .src = (uintptr_t)src,
	    .len = len,
	    .mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
	};
	int rc = sys_ioctl(fd, UFFDIO_COPY, &c);

	if (done)
		*done = c.copy > 0 ? c.copy : 0;
	if (rc == -EAGAIN && c.copy < 0)
		rc = (int)c.copy; /* nothing copied: the real reason */
	return rc;
}

int uffd_io_zeropage(int fd, uintptr_t dst, size_t len)
{
	return uffd_io_zeropage_mode(fd, dst, len, 0);
}

int uffd_io_zeropage_mode(int fd, uintptr_t dst, size_t len, uint64_t mode)
{
	struct uffdio_zeropage z = {.range = {.start = dst, .len = len}, .mode = mode};

	return sys_ioctl(fd, UFFDIO_ZEROPAGE, &z);
}

int uffd_io_move(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *done)
{
	struct uffdio_move m = {.dst = dst, .src = src, .len = len, .mode = mode};
	int rc = sys_ioctl(fd, UFFDIO_MOVE, &m);

	if (done)
		*done = m.move > 0 ? m.move : 0;
	if (rc == -EAGAIN && m.move < 0)
		rc = (int)m.move;
	return rc;
}

int uffd_io_move_all(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, size_t *moved)
{
	size_t off = 0;
	int rc = 0;

	for (int tries = 0; tries < 64 && off < len; tries++) {
		int64_t done = 0;

		rc = uffd_io_move(fd, dst + off, src + off, len - off, mode, &done);
		if (rc == 0) {
			off = len;
			break;
		}
		off += (size_t)done;
		if (rc != -EAGAIN)
			break;
	}
	*moved = off;
	return off >= len ? 0 : rc;
}

long uffd_io_read(int fd, struct uffd_msg *msg, bool nowait)
{
	struct iovec iov = {msg, sizeof(*msg)};

	if (!nowait)
		return sys_read(fd, msg, sizeof(*msg));
	/* offset -1: the file position, as read(2) (pos_from_hilo: the high half is ignored on
	 * 64-bit) */
	return sys_call6(SYS_preadv2, fd, (long)&iov, 1, -1, 0, RWF_NOWAIT);
}

bool uffd_io_nowait_reads(int fd)
{
	struct uffd_msg msg;

	return uffd_io_read(fd, &msg, true) == -EAGAIN; /* nothing is registered yet */
}

int uffd_io_wake(int fd, uintptr_t start, size_t len)
{
	struct uffdio_range r = {.start = start, .len = len};

	return sys_ioctl(fd, UFFDIO_WAKE, &r);
}

int uffd_io_register(int fd, uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
	    .range = {.start = start, .len = len},
	    .mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return sys_ioctl(fd, UFFDIO_REGISTER, &reg);
}

int uffd_register_managed(const struct uffd_live *lv, uintptr_t start, size_t len)
{
	struct uffdio_register reg = {
	    .range = {.start = start, .len = len},
	    .mode = UFFDIO_REGISTER_MODE_MISSING | (lv->zero_wp ? UFFDIO_REGISTER_MODE_WP : 0),
	};

	return sys_ioctl(lv->uffd, UFFDIO_REGISTER, &reg);
}

int uffd_io_copy_wp(int fd, uintptr_t dst, const void *src)
{
	struct uffdio_copy c = {
	    .dst = dst,
	    .src = (uintptr_t)src,
	    .len = UFFD_PAGE_SIZE,
	    .mode = UFFDIO_COPY_MODE_WP | UFFDIO_COPY_MODE_DONTWAKE,
	};
	int rc = sys_ioctl(fd, UFFDIO_COPY, &c);

	if (rc == -EAGAIN && c.copy < 0)
		rc = (int)c.copy;
	return rc;
}

int uffd_io_unprotect(int fd, uintptr_t start, size_t len)
{
	return uffd_io_unprotect_mode(fd, start, len, 0);
}

int uffd_io_unprotect_mode(int fd, uintptr_t start, size_t len, uint64_t mode)
{
	struct uffdio_writeprotect w = {.range = {.start = start, .len = len}, .mode = mode};

	return sys_ioctl(fd, UFFDIO_WRITEPROTECT, &w);
}

int uffd_io_protect(int fd, uintptr_t start, size_t len)
{
	struct uffdio_writeprotect w = {.range = {.start = start, .len = len},
					.mode = UFFDIO_WRITEPROTECT_MODE_WP};

	return sys_ioctl(fd, UFFDIO_WRITEPROTECT, &w);
}

int uffd_io_unregister(int fd, uintptr_t start, size_t len)
{
	struct uffdio_range r = {.start = start, .len = len};

	return sys_ioctl(fd, UFFDIO_UNREGISTER, &r);
}

int uffd_page_resident(uintptr_t addr)
{
	unsigned char v = 0;
	int rc = (int)sys_call3(SYS_mincore, addr & ~(UFFD_PAGE_SIZE - 1), UFFD_PAGE_SIZE, &v);

	return rc < 0 ? rc : (v & 1);
}

static int open_fd_raw(char *err, size_t errlen)
{
	int flags = O_CLOEXEC; /* blocking: see the top of this file */
	int fd = (int)sys_call1(SYS_userfaultfd, flags);
	int dev, sys_err = fd;

	if (fd >= 0)
		return fd;
	dev = (int)sys_call4(SYS_openat, AT_FDCWD, "/dev/userfaultfd", O_RDWR | O_CLOEXEC, 0);
	if (dev >= 0) {
		fd = sys_ioctl(dev, USERFAULTFD_IOC_NEW, (void *)(long)flags);
		sys_close(dev);
		if (fd >= 0)
			return fd;
	} else {
		fd = dev;
	}
	snprintf(err, errlen,
		 "userfaultfd unavailable (userfaultfd(2): %s; /dev/userfaultfd: %s): needs root, "
		 "CAP_SYS_PTRACE, access to /dev/userfaultfd or vm.unprivileged_userfaultfd=1",
		 strerror(-sys_err), strerror(-fd));
	return fd;
}

int uffd_open_fd(uint64_t features, uint64_t *granted, char *err, size_t errlen)
{
	struct uffdio_api api = {.api = UFFD_API, .features = features};
	int fd = open_fd_raw(err, errlen);
	int rc;

	if (fd < 0)
		return fd;
	rc = sys_ioctl(fd, UFFDIO_API, &api);
	if (rc < 0) {
		snprintf(err, errlen,
			 "UFFDIO_API with UFFD_FEATURE_MOVE failed (%s): Linux 6.8 or "
			 "later is needed",
			 strerror(-rc));
		sys_close(fd);
		return rc;
	}
	if (granted)
		*granted = api.features;
	return fd;
}
