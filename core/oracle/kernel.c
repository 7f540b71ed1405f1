/* The oracle's kernels: Debian's cloud kernel packages, looked up by series, fetched with
 * `apt-get download` into thpemu's own cache and unpacked there with `dpkg-deb -x`; nothing is
 * installed and the host's /boot is never touched.
 *
 *   CACHE/kernels/PACKAGE_VERSION/   the unpacked package (boot/vmlinuz-REL, lib/modules/REL)
 *   CACHE/kernels/.tmp-*             a fetch in progress (removed when it fails)
 *   CACHE/modules/PACKAGE_VERSION/   modules the guest loads, decompressed (.ko.xz -> .ko)
 *   CACHE/.lock                      flock'ed while fetching, so two runs share one download
 *
 * The package name is never written down: `apt-cache search --names-only` lists the series'
 * packages (the ABI number in the name moves with every security update) and `apt-cache show`
 * gives their versions; the newest by Debian version order is used (dpkg's verrevcmp, below).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle/oracle.h"

#define KERNEL_FLAVOUR "-cloud-amd64-unsigned"

/* ---- Debian version order (dpkg lib/dpkg/version.c: order, verrevcmp) ------------------------ */

static int vorder(int c)
{
	if (isdigit(c))
		return 0;
	if (isalpha(c))
		return c;
	if (c == '~')
		return -1;
	if (c)
		return c + 256;
	return 0;
}

static int verrevcmp(const char *a, const char *b)
{
	while (*a || *b) {
		int first_diff = 0;

		while ((*a && !isdigit((unsigned char)*a)) || (*b && !isdigit((unsigned char)*b))) {
			int ac = vorder((unsigned char)*a), bc = vorder((unsigned char)*b);

			if (ac != bc)
				return ac - bc;
			a++;
			b++;
		}
		while (*a == '0')
			a++;
		while (*b == '0')
			b++;
		while (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			if (!first_diff)
				first_diff = *a - *b;
			a++;
			b++;
		}
		if (isdigit((unsigned char)*a))
			return 1;
		if (isdigit((unsigned char)*b))
			return -1;
		if (first_diff)
			return first_diff;
	}
	return 0;
}

/* Split "[EPOCH:]UPSTREAM[-REVISION]" into its parts (in buf). */
static void version_split(const char *v, char *buf, size_t len, long *epoch, const char **up,
			  const char **rev)
{
	const char *colon = strchr(v, ':');
	char *dash;

	*epoch = colon ? strtol(v, NULL, 10) : 0;
	snprintf(buf, len, "%s", colon ? colon + 1 : v);
	dash = strrchr(buf, '-');
	*up = buf;
	*rev = "";
	if (dash) {
		*dash = '\0';
		*rev = dash + 1;
	}
}

int oracle_deb_vercmp(const char *a, const char *b)
{
	char ba[128], bb[128];
	const char *ua, *ra, *ub, *rb;
	long ea, eb;
	int r;

	version_split(a, ba, sizeof(ba), &ea, &ua, &ra);
	version_split(b, bb, sizeof(bb), &eb, &ub, &rb);
	if (ea != eb)
		return ea < eb ? -1 : 1;
	r = verrevcmp(ua, ub);
	if (!r)
		r = verrevcmp(ra, rb);
	return r < 0 ? -1 : r > 0;
}

/* ---- the cache --------------------------------------------------------------------------- */

int oracle_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int oracle_cache_dir(const char *opt, char *buf, size_t len, char *err, size_t errlen)
{
	const char *env = getenv("THPEMU_ORACLE_CACHE"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n, rc;

	if (opt && *opt)
		n = snprintf(buf, len, "%s", opt);
	else if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (xdg && *xdg == '/')
		n = snprintf(buf, len, "%s/thpemu/oracle", xdg);
	else if (home && *home == '/')
		n = snprintf(buf, len, "%s/.cache/thpemu/oracle", home);
	else
		n = snprintf(buf, len, "/tmp/thpemu-oracle-%u", (unsigned)getuid());
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "cache directory: path too long");
		return -ENAMETOOLONG;
	}
	rc = oracle_mkdir_p(buf, 0700);
	if (rc)
		snprintf(err, errlen, "cache directory '%s': %s", buf, strerror(-rc));
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

int oracle_rm_rf(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* flock the cache while fetching: the descriptor, or -errno. */
static int cache_lock(const char *cache)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/.lock", cache);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			close(fd);
			return -errno;
		}
	return fd;
}

/* ---- looking a series up ------------------------------------------------------------------ */

static bool is_series(const char *s)
{
	const char *dot = strchr(s, '.');

	if (!dot || dot == s || !dot[1])
		return false;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p) && p != dot)
			return false;
	return true;
}

int oracle_kernel_check(const char *request, char *err, size_t errlen)
{
	struct stat st;

	if (is_series(request))
		return 0;
	if (strchr(request, '/') && stat(request, &st) == 0 && S_ISREG(st.st_mode))
		return 0;
	snprintf(err, errlen,
		 "--kernel: '%s' is neither a series (6.12, 6.1: Debian's newest "
		 "linux-image-SERIES.*%s) nor an existing kernel image (a path to a vmlinuz)",
		 request, KERNEL_FLAVOUR);
	return -EINVAL;
}

/* Does name belong to series ("linux-image-6.1.0-57-cloud-amd64-unsigned" to 6.1, not 6.12)? */
static bool package_of_series(const char *name, const char *series)
{
	size_t n = strlen(series), ln = strlen(name), lf = strlen(KERNEL_FLAVOUR);

	if (strncmp(name, "linux-image-", 12) || strncmp(name + 12, series, n))
		return false;
	if (name[12 + n] != '.' && name[12 + n] != '-')
		return false;
	return ln > lf && !strcmp(name + ln - lf, KERNEL_FLAVOUR);
}

/* The newest package of the series and its version, from one `apt-cache search --full` (the
 * matching packages' records: Package and Version lines). */
static int apt_lookup(const char *series, char *pkg, size_t plen, char *ver, size_t vlen, char *err,
		      size_t errlen)
{
	char re[128], cur[128] = "";
	const char *argv[] = {"apt-cache", "search", "--names-only", "--full", re, NULL};
	struct oracle_cmd c;
	int rc;

	snprintf(re, sizeof(re), "^linux-image-%s[.-].*%s$", series, KERNEL_FLAVOUR);
	rc = oracle_cmd_run(argv, NULL, -1, &c);
	if (rc) {
		snprintf(err, errlen, "apt-cache search: %s",
			 rc == -ENOENT ? "not found (not a Debian system?)" : oracle_cmd_why(&c));
		oracle_cmd_free(&c);
		return rc;
	}
	pkg[0] = ver[0] = '\0';
	for (char *save, *l = strtok_r(c.out ? c.out : "", "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "Package: ", 9))
			snprintf(cur, sizeof(cur), "%s", l + 9);
		else if (!strncmp(l, "Version: ", 9) && package_of_series(cur, series) &&
			 (!ver[0] || oracle_deb_vercmp(l + 9, ver) > 0)) {
			snprintf(pkg, plen, "%s", cur);
			snprintf(ver, vlen, "%s", l + 9);
		}
	}
	oracle_cmd_free(&c);
	if (!pkg[0]) {
		snprintf(err, errlen,
			 "no Debian package linux-image-%s.*%s (apt-cache search found none; is "
			 "the archive in the sources, apt-get update?)",
			 series, KERNEL_FLAVOUR);
		return -ENOENT;
	}
	return 0;
}

/* The newest kernel of the series already in the cache (for --offline, or apt unavailable). */
static int cache_lookup(const char *cache, const char *series, char *pkg, size_t plen, char *ver,
			size_t vlen)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/kernels", cache);
	d = opendir(dir);
	if (!d)
		return -ENOENT;
	pkg[0] = ver[0] = '\0';
	while ((de = readdir(d))) {
		char name[256], *us;

		snprintf(name, sizeof(name), "%s", de->d_name);
		us = strchr(name, '_');
		if (!us || name[0] == '.')
			continue;
		*us = '\0';
		if (package_of_series(name, series) &&
		    (!ver[0] || oracle_deb_vercmp(us + 1, ver) > 0)) {
			oracle_fmt(pkg, plen, "%s", name);
			snprintf(ver, vlen, "%s", us + 1);
		}
	}
	closedir(d);
	return pkg[0] ? 0 : -ENOENT;
}

/* ---- fetching and unpacking --------------------------------------------------------------- */

/* The one *.deb apt-get left in dir. */
static int find_deb(const char *dir, char *out, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = -ENOENT;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 4 && !strcmp(de->d_name + n - 4, ".deb")) {
			oracle_fmt(out, len, "%s/%s", dir, de->d_name);
			rc = 0;
			break;
		}
	}
	closedir(d);
	return rc;
}

static int fetch(const char *cache, const char *pkg, const char *ver, const char *dest, char *err,
		 size_t errlen)
{
	char tmp[PATH_MAX], deb[PATH_MAX], tree[PATH_MAX], spec[256];
	const char *get[] = {"apt-get", "download", spec, NULL};
	const char *unpack[] = {"dpkg-deb", "-x", deb, tree, NULL};
	struct oracle_cmd c;
	int rc;

	snprintf(spec, sizeof(spec), "%s=%s", pkg, ver);
	snprintf(tmp, sizeof(tmp), "%s/kernels/.tmp-%d", cache, (int)getpid());
	oracle_fmt(tree, sizeof(tree), "%s/tree", tmp);
	oracle_rm_rf(tmp);
	rc = oracle_mkdir_p(tmp, 0755);
	if (rc) {
		snprintf(err, errlen, "'%s': %s", tmp, strerror(-rc));
		return rc;
	}
	rc = oracle_cmd_run(get, tmp, -1, &c);
	if (rc) {
		snprintf(err, errlen, "apt-get download %s: %s", spec,
			 rc == -ENOENT ? "apt-get not found" : oracle_cmd_why(&c));
		goto out_free;
	}
	oracle_cmd_free(&c);
	rc = find_deb(tmp, deb, sizeof(deb));
	if (rc) {
		snprintf(err, errlen, "apt-get download %s left no .deb", spec);
		goto out_rm;
	}
	rc = oracle_cmd_run(unpack, NULL, -1, &c);
	if (rc) {
		snprintf(err, errlen, "dpkg-deb -x %s: %s", deb, oracle_cmd_why(&c));
		goto out_free;
	}
	if (rename(tree, dest) < 0) {
		rc = -errno;
		snprintf(err, errlen, "'%s': %s", dest, strerror(errno));
	}
out_free:
	oracle_cmd_free(&c);
out_rm:
	oracle_rm_rf(tmp);
	return rc;
}

/* boot/vmlinuz-REL and lib/modules/REL of an unpacked package. */
static int locate(struct oracle_kernel *k, const char *root, char *err, size_t errlen)
{
	char boot[PATH_MAX];
	struct dirent *de;
	DIR *d;

	oracle_fmt(boot, sizeof(boot), "%s/boot", root);
	d = opendir(boot);
	if (!d) {
		snprintf(err, errlen, "'%s': %s", boot, strerror(errno));
		return -ENOENT;
	}
	k->vmlinuz[0] = '\0';
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "vmlinuz-", 8)) {
			snprintf(k->release, sizeof(k->release), "%s", de->d_name + 8);
			oracle_fmt(k->vmlinuz, sizeof(k->vmlinuz), "%s/%s", boot, de->d_name);
		}
	closedir(d);
	if (!k->vmlinuz[0]) {
		snprintf(err, errlen, "'%s' holds no vmlinuz-*", boot);
		return -ENOENT;
	}
	snprintf(k->root, sizeof(k->root), "%s", root);
	oracle_fmt(k->moddir, sizeof(k->moddir), "%s/lib/modules/%s", root, k->release);
	oracle_fmt(k->config, sizeof(k->config), "%s/config-%s", boot, k->release);
	if (access(k->moddir, R_OK) < 0)
		k->moddir[0] = '\0';
	if (access(k->config, R_OK) < 0)
		k->config[0] = '\0';
	return 0;
}

/* A kernel given as a path: a vmlinuz, with modules where a package would have them
 * (DIR/boot/vmlinuz-REL beside DIR/lib/modules/REL). */
static int resolve_path(struct oracle_kernel *k, const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX], *slash, *base;

	if (!realpath(path, buf)) {
		snprintf(err, errlen, "--kernel: '%s': %s", path, strerror(errno));
		return -errno;
	}
	snprintf(k->vmlinuz, sizeof(k->vmlinuz), "%s", buf);
	base = strrchr(buf, '/') + 1;
	k->release[0] = k->moddir[0] = k->config[0] = '\0';
	if (!strncmp(base, "vmlinuz-", 8)) {
		char rel[256];

		snprintf(rel, sizeof(rel), "%s", base + 8);
		slash = base - 1;
		*slash = '\0';
		slash = strrchr(buf, '/');
		if (slash && !strcmp(slash, "/boot")) {
			*slash = '\0';
			oracle_fmt(k->release, sizeof(k->release), "%s", rel);
			oracle_fmt(k->moddir, sizeof(k->moddir), "%s/lib/modules/%s", buf, rel);
			if (access(k->moddir, R_OK) < 0)
				k->moddir[0] = '\0';
			snprintf(k->root, sizeof(k->root), "%s", buf);
		}
	}
	return 0;
}

int oracle_kernel_resolve(const char *cache, const char *request, bool offline,
			  struct oracle_kernel *k, char *err, size_t errlen)
{
	char dest[PATH_MAX], kdir[PATH_MAX], aerr[512] = "";
	struct stat st;
	int rc, lock;

	memset(k, 0, sizeof(*k));
	snprintf(k->request, sizeof(k->request), "%s", request);
	if (!is_series(request))
		return resolve_path(k, request, err, errlen);
	rc = offline ? -ENOENT
		     : apt_lookup(request, k->package, sizeof(k->package), k->version,
				  sizeof(k->version), aerr, sizeof(aerr));
	if (rc && cache_lookup(cache, request, k->package, sizeof(k->package), k->version,
			       sizeof(k->version))) {
		snprintf(err, errlen, "--kernel %s: %s", request,
			 offline ? "no kernel of this series in the cache (--offline)" : aerr);
		return rc ? rc : -ENOENT;
	}
	if (rc && !offline) /* offline asked for the cache: nothing to note */
		snprintf(k->note, sizeof(k->note), "%s; using the cached %s %s", aerr, k->package,
			 k->version);
	snprintf(dest, sizeof(dest), "%s/kernels/%s_%s", cache, k->package, k->version);
	if (stat(dest, &st) < 0) {
		lock = cache_lock(cache);
		if (lock < 0) {
			snprintf(err, errlen, "cache lock in '%s': %s", cache, strerror(-lock));
			return lock;
		}
		snprintf(kdir, sizeof(kdir), "%s/kernels", cache);
		rc = oracle_mkdir_p(kdir, 0755);
		if (rc)
			snprintf(err, errlen, "'%s': %s", kdir, strerror(-rc));
		else if (stat(dest, &st) < 0) /* not fetched by another run meanwhile */
			rc = fetch(cache, k->package, k->version, dest, err, errlen);
		close(lock);
		if (rc)
			return rc;
	}
	return locate(k, dest, err, errlen);
}
