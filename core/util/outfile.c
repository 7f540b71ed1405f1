/* Output files nobody else can redirect (see outfile.h for the rules and the threat).
 *
 * Everything goes through raw system calls (core/util/sys.h): the preload library interposes
 * close() and must leave the program's errno alone, and the same code serves the command.
 */
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "util/sys.h"
#include "util/text.h"

#define ESC_LEN 1024 /* an escaped path in a message (longer ones are cut) */

/* ---- system calls ---------------------------------------------------------------------------- */

static int x_stat(const char *path, struct stat *st, bool follow)
{
	return (int)sys_call4(SYS_newfstatat, AT_FDCWD, path, st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
}

static int x_fstat(int fd, struct stat *st)
{
	return (int)sys_call4(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH);
}

static unsigned x_geteuid(void)
{
	return (unsigned)sys_call0(SYS_geteuid);
}

/* Can we (the effective ids) write and search dir? 0 or -errno. */
static int x_writable(const char *dir)
{
	int rc = (int)sys_call4(SYS_faccessat2, AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS);

	if (rc == -ENOSYS) { /* before Linux 5.8: root may, others are told by open() */
		rc = x_geteuid() == 0 ? 0
				      : (int)sys_call3(SYS_faccessat, AT_FDCWD, dir, W_OK | X_OK);
	}
	return rc;
}

/* May we (the effective ids) write the existing file path? 0 or -errno (root may, unless the
 * file system is read-only, which the directory's check says). */
static int x_writable_file(const char *path)
{
	int rc = (int)sys_call4(SYS_faccessat2, AT_FDCWD, path, W_OK, AT_EACCESS);

	if (rc == -ENOSYS)
		rc = x_geteuid() == 0 ? 0 : (int)sys_call3(SYS_faccessat, AT_FDCWD, path, W_OK);
	return rc;
}

#define CONFIGFS_MAGIC_ 0x62656570
#define FUSECTL_MAGIC_	0x65735543
#define MQUEUE_MAGIC_	0x19800202

/* The name of a pseudo file system, whose "files" are the kernel's interfaces (writing one
 * changes the system or fails half-way), or NULL for a file system that keeps files. */
static const char *pseudo_fs(unsigned long type)
{
	static const struct {
		unsigned long type;
		const char *name;
	} fs[] = {
	    {PROC_SUPER_MAGIC, "proc"},
	    {SYSFS_MAGIC, "sysfs"},
	    {DEBUGFS_MAGIC, "debugfs"},
	    {TRACEFS_MAGIC, "tracefs"},
	    {CGROUP_SUPER_MAGIC, "cgroup"},
	    {CGROUP2_SUPER_MAGIC, "cgroup2"},
	    {SECURITYFS_MAGIC, "securityfs"},
	    {BPF_FS_MAGIC, "bpf"},
	    {PSTOREFS_MAGIC, "pstore"},
	    {EFIVARFS_MAGIC, "efivarfs"},
	    {SELINUX_MAGIC, "selinuxfs"},
	    {SMACK_MAGIC, "smackfs"},
	    {DEVPTS_SUPER_MAGIC, "devpts"},
	    {BINFMTFS_MAGIC, "binfmt_misc"},
	    {NSFS_MAGIC, "nsfs"},
	    {HUGETLBFS_MAGIC, "hugetlbfs"},
	    {CONFIGFS_MAGIC_, "configfs"},
	    {FUSECTL_MAGIC_, "fusectl"},
	    {MQUEUE_MAGIC_, "mqueue"},
	};

	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)(unsigned int)type == fs[i].type)
			return fs[i].name;
	return NULL;
}

/* The pseudo file system path is on, or NULL (also when statfs fails: the checks that follow
 * say why). */
static const char *x_pseudo(const char *path)
{
	struct statfs sf;

	if (sys_call2(SYS_statfs, path, &sf) < 0)
		return NULL;
	return pseudo_fs((unsigned long)sf.f_type);
}

/* ---- messages -------------------------------------------------------------------------------- */

/* err = "'PATH': " + the formatted reason (every %s argument already escaped); returns rc. */
__attribute__((format(printf, 5, 6))) static int refuse(char *err, size_t errlen, const char *path,
							int rc, const char *fmt, ...)
{
	char p[ESC_LEN];
	va_list ap;
	int n;

	if (!errlen)
		return rc;
	n = snprintf(err, errlen, "'%s': ", text_escape(path, p, sizeof(p)));
	if (n < 0 || (size_t)n >= errlen)
		return rc;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

static const char *why(int rc)
{
	const char *d = strerrordesc_np(-rc);

	return d ? d : "error";
}

static const char *kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISLNK(m)  ? "a symbolic link"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
			     : "not a regular file";
}

/* ---- the directory --------------------------------------------------------------------------- */

/* The directory part of path into dir ("." or "/" when there is none); -ENAMETOOLONG, or -EISDIR
 * when path names a directory (ends in '/', "." or ".."). */
static int split(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	if (!slash) {
		strcpy(dir, ".");
		return 0;
	}
	while (n > 1 && path[n - 1] == '/') /* "a//b" */
		n--;
	if (n == 0)
		n = 1; /* "/x": the root */
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return 0;
}

/* May we follow the symbolic link at prefix, whose parent directory is parent? The rule of
 * fs.protected_symlinks (fs/namei.c:may_follow_link): not someone else's link in a sticky
 * world-writable directory, unless the directory's owner made it. */
static int check_link(const char *path, const char *prefix, const char *parent,
		      const struct stat *link, char *err, size_t errlen)
{
	char e1[ESC_LEN], e2[ESC_LEN];
	struct stat pst;

	if (link->st_uid == x_geteuid() || x_stat(parent, &pst, true) < 0)
		return 0; /* our own link; or the walk fails later anyway */
	if (!(pst.st_mode & S_ISVTX) || !(pst.st_mode & S_IWOTH) || link->st_uid == pst.st_uid)
		return 0;
	return refuse(err, errlen, path, -EPERM,
		      "the symbolic link '%s' belongs to uid %u in the shared directory '%s' (not "
		      "followed)",
		      text_escape(prefix, e1, sizeof(e1)), (unsigned)link->st_uid,
		      text_escape(parent, e2, sizeof(e2)));
}

/* Every symbolic link on the way to dir passes check_link. dir is modified and restored. */
static int check_walk(const char *path, char *dir, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir);
	int rc = 0;

	for (size_t i = 1; i <= len && !rc; i++) {
		char saved = dir[i];

		if (i < len && dir[i] != '/')
			continue;
		if (dir[i - 1] == '/') /* "//": no new component */
			continue;
		dir[i] = '\0';
		if (x_stat(dir, &st, false) == 0 && S_ISLNK(st.st_mode)) {
			const char *slash = strrchr(dir, '/');

			if (!slash)
				strcpy(parent, ".");
			else if (slash == dir)
				strcpy(parent, "/");
			else
				snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
			rc = check_link(path, dir, parent, &st, err, errlen);
		}
		dir[i] = saved;
	}
	return rc;
}

/* dir exists, is a directory we can write into, and is sticky if the world can write it. */
static int check_dir(const char *path, char *dir, char *err, size_t errlen)
{
	char e[ESC_LEN];
	struct stat st;
	int rc = check_walk(path, dir, err, errlen);

	if (rc < 0)
		return rc;
	text_escape(dir, e, sizeof(e));
	rc = x_stat(dir, &st, true);
	if (rc == -ENOENT)
		return refuse(err, errlen, path, rc, "the directory '%s' does not exist", e);
	if (rc == -ENOTDIR)
		return refuse(err, errlen, path, rc, "'%s' on its way is not a directory", e);
	if (rc < 0)
		return refuse(err, errlen, path, rc, "the directory '%s': %s", e, why(rc));
	if (!S_ISDIR(st.st_mode))
		return refuse(err, errlen, path, -ENOTDIR, "'%s' is not a directory", e);
	if (x_pseudo(dir))
		return refuse(
		    err, errlen, path, -EINVAL,
		    "the directory '%s' is on %s, a pseudo file system (its files are the "
		    "kernel's interfaces, not files to write output to)",
		    e, x_pseudo(dir));
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		return refuse(err, errlen, path, -EPERM,
			      "the directory '%s' is writable by everyone and not sticky (anyone "
			      "could replace the file)",
			      e);
	rc = x_writable(dir);
	if (rc < 0)
		return refuse(err, errlen, path, rc, "the directory '%s' is not writable (%s)", e,
			      why(rc));
	return 0;
}

/* ---- the file -------------------------------------------------------------------------------- */

/* /dev/null: writing there discards the output, which is what anyone who names it wants. */
static bool is_null_device(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* An existing file we may overwrite: regular, ours, one link; or the null device. */
static int check_file(const char *path, const struct stat *st, char *err, size_t errlen)
{
	unsigned euid = x_geteuid();

	if (is_null_device(st))
		return 0;
	if (S_ISLNK(st->st_mode))
		return refuse(err, errlen, path, -ELOOP, "is a symbolic link (not followed)");
	if (!S_ISREG(st->st_mode))
		return refuse(err, errlen, path, S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL,
			      "is %s, not a regular file", kind(st->st_mode));
	if (st->st_uid != euid)
		return refuse(err, errlen, path, -EPERM, "belongs to uid %u, not to us (uid %u)",
			      (unsigned)st->st_uid, euid);
	if (st->st_nlink != 1)
		return refuse(err, errlen, path, -EMLINK,
			      "has %lu hard links (another name may be someone else's)",
			      (unsigned long)st->st_nlink);
	return 0;
}

static int check_path(const char *path, char *dir, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (!path || !*path)
		return refuse(err, errlen, "", -ENOENT, "an empty path");
	if (strlen(path) >= PATH_MAX)
		return refuse(err, errlen, path, -ENAMETOOLONG, "is too long");
	if (x_stat(path, &st, false) == 0 && is_null_device(&st))
		return 0;
	rc = split(path, dir, PATH_MAX);
	if (rc == -EISDIR)
		return refuse(err, errlen, path, rc, "names a directory, not a file");
	if (rc < 0)
		return refuse(err, errlen, path, rc, "is too long");
	rc = check_dir(path, dir, err, errlen);
	if (rc < 0)
		return rc;
	rc = x_stat(path, &st, false);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return refuse(err, errlen, path, rc, "%s", why(rc));
	rc = check_file(path, &st, err, errlen);
	if (rc == 0 && x_pseudo(path)) /* a file mounted there from a pseudo file system */
		return refuse(err, errlen, path, -EINVAL,
			      "is on %s, a pseudo file system, not a file", x_pseudo(path));
	if (rc == 0 && (rc = x_writable_file(path)) < 0)
		return refuse(err, errlen, path, rc, "is not writable (%s)", why(rc));
	return rc;
}

int outfile_check_dir(const char *dir, char *err, size_t errlen)
{
	char buf[PATH_MAX];

	if (!dir || !*dir)
		return refuse(err, errlen, "", -ENOENT, "an empty path");
	if (strlen(dir) >= sizeof(buf))
		return refuse(err, errlen, dir, -ENAMETOOLONG, "is too long");
	strcpy(buf, dir);
	return check_dir(dir, buf, err, errlen);
}

int outfile_check(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	return check_path(path, dir, err, errlen);
}

/* The checks again, through the descriptor, then blocking mode and truncation. */
static int settle(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	long fl;
	int rc = x_fstat(fd, &st);

	if (rc < 0)
		return refuse(err, errlen, path, rc, "%s", why(rc));
	rc = check_file(path, &st, err, errlen);
	if (rc < 0)
		return rc;
	fl = sys_call3(SYS_fcntl, fd, F_GETFL, 0);
	if (fl >= 0)
		fl = sys_call3(SYS_fcntl, fd, F_SETFL, fl & ~O_NONBLOCK);
	if (fl >= 0 && is_null_device(&st))
		return 0;
	rc = fl < 0 ? (int)fl : (int)sys_call2(SYS_ftruncate, fd, 0);
	if (rc < 0)
		return refuse(err, errlen, path, rc, "%s", why(rc));
	return 0;
}

int outfile_open(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int fd, rc = check_path(path, dir, err, errlen);

	if (rc < 0)
		return rc;
	fd = (int)sys_call4(SYS_openat, AT_FDCWD, path,
			    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
			    0666);
	if (fd == -ELOOP)
		return refuse(err, errlen, path, fd, "is a symbolic link (not followed)");
	if (fd == -ENXIO) /* a FIFO nobody reads (O_NONBLOCK): never wait for one */
		return refuse(err, errlen, path, fd, "is a FIFO, not a regular file");
	if (fd < 0)
		return refuse(err, errlen, path, fd, "cannot be written (%s)", why(fd));
	rc = settle(fd, path, err, errlen);
	if (rc < 0) {
		sys_close(fd);
		return rc;
	}
	return fd;
}

FILE *outfile_fopen(const char *path, char *err, size_t errlen)
{
	int fd = outfile_open(path, err, errlen);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		refuse(err, errlen, path, -ENOMEM, "out of memory");
		sys_close(fd);
	}
	return f;
}

/* ---- directories ----------------------------------------------------------------------------- */

static int check_own_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int rc = x_stat(path, &st, false);

	if (rc < 0)
		return refuse(err, errlen, path, rc, "%s", why(rc));
	if (!S_ISDIR(st.st_mode))
		return refuse(err, errlen, path, -ENOTDIR, "is %s, not a directory",
			      kind(st.st_mode));
	if (st.st_uid != x_geteuid())
		return refuse(err, errlen, path, -EPERM,
			      "is a directory of uid %u, not ours (uid %u)", (unsigned)st.st_uid,
			      x_geteuid());
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		return refuse(err, errlen, path, -EPERM,
			      "is writable by everyone and not sticky (anyone could replace what "
			      "is written there)");
	rc = x_writable(path);
	if (rc < 0)
		return refuse(err, errlen, path, rc, "is not writable (%s)", why(rc));
	return 0;
}

int outfile_dir(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX], full[PATH_MAX];
	size_t n = path ? strlen(path) : 0;
	int rc;

	if (!n)
		return refuse(err, errlen, "", -ENOENT, "an empty path");
	if (n >= PATH_MAX - 2)
		return refuse(err, errlen, path, -ENAMETOOLONG, "is too long");
	while (n > 1 && path[n - 1] == '/') /* "keep/" is "keep" */
		n--;
	snprintf(full, sizeof(full), "%.*s", (int)n, path);
	rc = split(full, dir, sizeof(dir));
	if (rc == 0)
		rc = check_dir(path, dir, err, errlen);
	else if (rc == -EISDIR) /* ".", "..", "/": an existing directory */
		rc = 0;
	if (rc < 0)
		return rc;
	rc = (int)sys_call3(SYS_mkdirat, AT_FDCWD, full, 0700);
	if (rc == 0 || rc == -EEXIST)
		return check_own_dir(full, err, errlen);
	return refuse(err, errlen, path, rc, "cannot be created (%s)", why(rc));
}

/* dev/ino of path if it exists, else the resolved directory and the name. */
static void identity(const char *path, struct stat *st, char *where, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');

	where[0] = '\0';
	if (x_stat(path, st, true) == 0)
		return;
	st->st_ino = 0;
	if (split(path, dir, sizeof(dir)) < 0 || !realpath(dir, real))
		snprintf(where, len, "%s", path);
	else
		snprintf(where, len, "%s/%s", real, slash ? slash + 1 : path);
}

int outfile_same(const char *a, const char *b)
{
	char wa[2 * PATH_MAX], wb[2 * PATH_MAX];
	struct stat sa, sb;

	identity(a, &sa, wa, sizeof(wa));
	identity(b, &sb, wb, sizeof(wb));
	if (sa.st_ino && sb.st_ino)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return !sa.st_ino && !sb.st_ino && !strcmp(wa, wb);
}

/* ---- whole outputs: a temporary file renamed into place ------------------------------------- */

/* DIR/.NAME.thpemu-XXXXXXXX: hidden, named after what it will become, random (getrandom, else
 * the clock) so that nobody can plant it in advance. */
static int tmp_name(struct outfile *o, const char *dir, unsigned attempt)
{
	const char *slash = strrchr(o->path, '/'), *base = slash ? slash + 1 : o->path;
	uint64_t r = 0;
	int n;

	if (sys_call3(SYS_getrandom, &r, sizeof(r), GRND_NONBLOCK) != (long)sizeof(r)) {
		struct timespec ts;

		sys_call2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
		r = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec ^
		    ((uint64_t)sys_call0(SYS_getpid) << 32) ^ attempt;
	}
	n = snprintf(o->tmp, sizeof(o->tmp), "%s/.%.200s.thpemu-%08x", dir, base, (unsigned)r);
	return n > 0 && (size_t)n < sizeof(o->tmp) ? 0 : -ENAMETOOLONG;
}

int outfile_create(struct outfile *o, const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;
	int fd = -EEXIST, rc = check_path(path, dir, err, errlen);

	o->fd = -1;
	o->tmp[0] = '\0';
	o->mode = -1;
	if (rc < 0)
		return rc;
	snprintf(o->path, sizeof(o->path), "%s", path); /* fits: check_path checked its length */
	if (x_stat(path, &st, false) == 0 && is_null_device(&st)) {
		fd = (int)sys_call4(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC | O_NOCTTY, 0);
		if (fd < 0)
			return refuse(err, errlen, path, fd, "cannot be written (%s)", why(fd));
		o->fd = fd;
		return 0;
	}
	if (x_stat(path, &st, false) == 0) /* replaced by a file with its permissions */
		o->mode = (int)(st.st_mode & 0777);
	for (unsigned i = 0; i < 64 && fd == -EEXIST; i++) {
		fd = tmp_name(o, dir, i);
		if (fd == 0)
			fd = (int)sys_call4(SYS_openat, AT_FDCWD, o->tmp,
					    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
						O_NOCTTY,
					    o->mode >= 0 ? (unsigned)o->mode | 0200 : 0666);
	}
	if (fd < 0) {
		o->tmp[0] = '\0';
		return refuse(err, errlen, path, fd, "cannot be written (%s)", why(fd));
	}
	o->fd = fd;
	return 0;
}

int outfile_write(struct outfile *o, const void *buf, size_t len, char *err, size_t errlen)
{
	const char *p = buf;

	while (len) {
		long n = sys_write(o->fd, p, len);

		if (n == -EINTR)
			continue;
		if (n == 0)
			n = -EIO;
		if (n < 0)
			return refuse(err, errlen, o->path, (int)n, "cannot be written (%s)",
				      why((int)n));
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The destination may still be replaced: absent, or a file of ours (as check_file says). */
static int still_ours(const struct outfile *o, char *err, size_t errlen)
{
	struct stat st;
	int rc = x_stat(o->path, &st, false);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return refuse(err, errlen, o->path, rc, "%s", why(rc));
	return check_file(o->path, &st, err, errlen);
}

int outfile_commit(struct outfile *o, char *err, size_t errlen)
{
	int rc, fd = o->fd;

	o->fd = -1;
	if (!o->tmp[0]) { /* the null device */
		rc = fd >= 0 ? sys_close(fd) : 0;
		return rc < 0 ? refuse(err, errlen, o->path, rc, "cannot be written (%s)", why(rc))
			      : 0;
	}
	rc = (int)sys_call1(SYS_fsync, fd);
	if (rc == 0 && o->mode >= 0)
		rc = (int)sys_call2(SYS_fchmod, fd, o->mode);
	if (sys_close(fd) < 0 && rc == 0)
		rc = -EIO;
	if (rc < 0) {
		refuse(err, errlen, o->path, rc, "cannot be written (%s)", why(rc));
	} else if ((rc = still_ours(o, err, errlen)) == 0) {
		rc = (int)sys_call4(SYS_renameat, AT_FDCWD, o->tmp, AT_FDCWD, o->path);
		if (rc < 0)
			refuse(err, errlen, o->path, rc, "cannot be put in place (%s)", why(rc));
	}
	if (rc < 0)
		sys_call3(SYS_unlinkat, AT_FDCWD, o->tmp, 0);
	o->tmp[0] = '\0';
	return rc;
}

void outfile_abort(struct outfile *o)
{
	if (o->fd >= 0)
		sys_close(o->fd);
	o->fd = -1;
	if (o->tmp[0])
		sys_call3(SYS_unlinkat, AT_FDCWD, o->tmp, 0);
	o->tmp[0] = '\0';
}

int outfile_remove(const char *path, int fd)
{
	struct stat a, b;

	if (x_fstat(fd, &a) < 0 || x_stat(path, &b, false) < 0 || !S_ISREG(a.st_mode) ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -ENOENT; /* not ours any more (or the null device): left alone */
	return (int)sys_call3(SYS_unlinkat, AT_FDCWD, path, 0);
}
