/* Private temporary directories of thpemu run and thpemu ab, and the removal of those whose
 * command was killed (see cli.h).
 *
 * A SIGKILLed `thpemu run` leaves its run directory (the processes' statistics and stall files,
 * a couple of hundred files) and the mount point of its private device behind; nothing can run
 * in the killed process to prevent that. So each directory holds `.owner`: the maker's pid, its
 * start time (field 22 of /proc/PID/stat, clock ticks since boot), the boot id and the pid
 * namespace. A later command removes a directory only if it is ours (a directory, not a link,
 * owned by our effective uid, and so is the record) and its maker is provably dead: another boot,
 * or the same boot and pid namespace with no such process, or one that started at another time
 * (the pid was reused), or a zombie (or a dead task not yet gone). A directory without a readable
 * record, or made in another pid namespace, is left alone. A mount under a dead directory (the
 * device of a killed run whose daemon did not unmount) is detached lazily first.
 *
 * TMPDIR itself must be fit for output files (util/outfile.h: writable, sticky if anyone may
 * write it), or a user could swap our directory for a link between two of our steps.
 *
 * Removal is in-process: openat/unlinkat from a descriptor of each directory, O_NOFOLLOW, never
 * crossing into another file system; no shell is ever run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/prog.h"
#include "host/tmpdirs.h"
#include "util/outfile.h"

#define OWNER_FILE ".owner"
#define MAX_DEPTH  32

struct owner {
	long pid;
	unsigned long long start;
	char boot[40];
	char pidns[40];
};

/* ---- small helpers --------------------------------------------------------------------------- */

static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* Up to len - 1 bytes of a small file at dirfd/name (NUL-terminated); bytes read or -errno. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

int tmpdir_proc_start(long pid, unsigned long long *start, char *state)
{
	char path[64], buf[1024], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	n = read_small(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')'); /* the command name may contain anything but ends here */
	if (!p || sscanf(p + 1,
			 " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %llu",
			 state, start) != 2)
		return -EINVAL;
	return 0;
}

static int self_owner(struct owner *o)
{
	char state, buf[64];
	ssize_t n;

	memset(o, 0, sizeof(*o));
	o->pid = getpid();
	if (tmpdir_proc_start(o->pid, &o->start, &state) < 0)
		return -ENOENT;
	if (read_small(AT_FDCWD, "/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%39s", o->boot) != 1)
		return -ENOENT;
	n = readlink("/proc/self/ns/pid", o->pidns, sizeof(o->pidns) - 1);
	if (n <= 0)
		return -ENOENT;
	o->pidns[n] = '\0';
	return 0;
}

/* ---- creating -------------------------------------------------------------------------------- */

static int write_owner(const char *dir)
{
	char path[PATH_MAX + 16], line[256];
	struct owner o;
	int fd, n;

	if (self_owner(&o) < 0)
		return 0; /* no /proc: nothing can be proved later either; the directory works */
	n = snprintf(line, sizeof(line), "thpemu-owner pid=%ld start=%llu boot=%s pidns=%s\n",
		     o.pid, o.start, o.boot, o.pidns);
	snprintf(path, sizeof(path), "%s/" OWNER_FILE, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)n) != n) {
		close(fd);
		return -EIO;
	}
	return close(fd) < 0 ? -errno : 0;
}

int tmpdir_create(const char *prefix, char *dir, size_t len, char *err, size_t errlen)
{
	const char *root = tmp_root();
	int rc;

	/* a TMPDIR anyone may rename things in would let them swap the directory for a link */
	if (outfile_check_dir(root, err, errlen) < 0) {
		char why[PATH_MAX + 200];

		snprintf(why, sizeof(why), "TMPDIR: %s", err);
		snprintf(err, errlen, "%s", why);
		return -EPERM;
	}
	if ((size_t)snprintf(dir, len, "%s/%s.XXXXXX", root, prefix) >= len) {
		snprintf(err, errlen,
			 "cannot create a directory in TMPDIR '%s': the path is too long", root);
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(dir)) {
		rc = -errno;
		snprintf(err, errlen, "cannot create a directory in TMPDIR '%s': %s", root,
			 strerror(-rc));
		return rc;
	}
	rc = write_owner(dir);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write %s/" OWNER_FILE ": %s", dir, strerror(-rc));
		tmpdir_rmtree(dir);
	}
	return rc;
}

/* ---- removing -------------------------------------------------------------------------------- */

static int rm_children(int fd, dev_t dev, int depth);

/* Remove the entry name of directory fd (a subdirectory recursively). */
static int rm_entry(int fd, const char *name, dev_t dev, int depth)
{
	struct stat st;
	int sub, rc;

	if (unlinkat(fd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM) /* EPERM: some file systems' word for a directory */
		return -errno;
	if (depth >= MAX_DEPTH)
		return -ELOOP;
	sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(sub, &st) < 0 || st.st_dev != dev) { /* a mount: never cross into it */
		close(sub);
		return -EBUSY;
	}
	rc = rm_children(sub, dev, depth + 1); /* closes sub */
	if (unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

/* Remove everything in directory fd, which this closes. */
static int rm_children(int fd, dev_t dev, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		int r;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = rm_entry(dirfd(d), de->d_name, dev, depth);
		if (r < 0 && !rc)
			rc = r;
	}
	closedir(d);
	return rc;
}

int tmpdir_rmtree(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int rc;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = rm_children(fd, st.st_dev, 0);
	if (rmdir(dir) < 0 && errno != ENOENT && !rc)
		rc = -errno;
	return rc;
}

/* ---- mounts ---------------------------------------------------------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \\ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Call fn on every mount point that is path or (under) inside it; stops when fn returns true. */
static bool each_mount(const char *path, bool under, bool (*fn)(const char *mp))
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t n = strlen(path);
	char line[2 * PATH_MAX], mp[PATH_MAX];
	bool stop = false;

	while (f && !stop && fgets(line, sizeof(line), f)) {
		/* "id parent maj:min root mountpoint ..." */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		unescape_octal(mp);
		if (!strcmp(mp, path) || (under && !strncmp(mp, path, n) && mp[n] == '/'))
			stop = fn(mp);
	}
	if (f)
		fclose(f);
	return stop;
}

static bool found(const char *mp)
{
	(void)mp;
	return true;
}

bool tmpdir_is_mounted(const char *path)
{
	return each_mount(path, false, found);
}

/* Run argv (no shell) with stderr on /dev/null and wait for it. */
static int run_quietly(char *const argv[])
{
	pid_t pid = fork();
	int status = -1;

	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);

		if (nul >= 0)
			dup2(nul, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

void tmpdir_detach(const char *path)
{
	char *argv[] = {"fusermount3", "-u", "-z", (char *)path, NULL};

	if (umount2(path, MNT_DETACH) < 0)
		run_quietly(argv);
}

static bool detach_one(const char *mp)
{
	tmpdir_detach(mp);
	return false;
}

/* ---- sweeping -------------------------------------------------------------------------------- */

static int parse_owner(const char *text, struct owner *o)
{
	memset(o, 0, sizeof(*o));
	if (sscanf(text, "thpemu-owner pid=%ld start=%llu boot=%39s pidns=%39s", &o->pid, &o->start,
		   o->boot, o->pidns) != 4 ||
	    o->pid <= 0)
		return -EINVAL;
	return 0;
}

/* Is the maker recorded in the directory (open as dirfd) provably dead? */
static bool maker_dead(int dirfd, const struct owner *self)
{
	char text[256], state = '?';
	unsigned long long start;
	struct owner o;
	struct stat st;
	int rc;

	if (fstatat(dirfd, OWNER_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || read_small(dirfd, OWNER_FILE, text, sizeof(text)) <= 0 ||
	    parse_owner(text, &o) < 0)
		return false; /* no record (yet), or not one of ours: leave it */
	if (strcmp(o.boot, self->boot))
		return true; /* made before the last boot */
	if (strcmp(o.pidns, self->pidns))
		return false; /* its pid means nothing here */
	rc = tmpdir_proc_start(o.pid, &start, &state);
	if (rc == -ENOENT)
		return true;
	return rc == 0 && (start != o.start || state == 'Z' || state == 'X');
}

/* PREFIX. followed by mkdtemp's six characters. */
static bool is_candidate(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(name, prefix, n) && name[n] == '.' && strlen(name + n + 1) == 6;
}

static bool sweep_one(const char *root, const char *name, const struct owner *self)
{
	char path[PATH_MAX];
	struct stat st;
	bool dead;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", root, name) >= sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	dead = fstat(fd, &st) == 0 && st.st_uid == geteuid() && maker_dead(fd, self);
	close(fd);
	if (!dead)
		return false;
	each_mount(path, true, detach_one);
	return tmpdir_rmtree(path) == 0;
}

unsigned tmpdir_sweep(const char *prefix)
{
	const char *root = tmp_root();
	DIR *d = opendir(root);
	struct owner self;
	struct dirent *de;
	unsigned removed = 0;

	if (!d)
		return 0;
	if (self_owner(&self) < 0) { /* without /proc nothing can be proved */
		closedir(d);
		return 0;
	}
	while ((de = readdir(d)))
		if (is_candidate(de->d_name, prefix))
			removed += sweep_one(root, de->d_name, &self);
	closedir(d);
	return removed;
}
