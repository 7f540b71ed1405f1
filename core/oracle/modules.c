/* Kernel modules for the guest (a disk: virtio_blk, vfat and its code pages; virtio_pci where
 * it is not built in, as on Debian's 6.1): found in the unpacked package, decompressed on the
 * host (6.12 ships .ko.xz; the guest's busybox insmod takes plain .ko), and ordered so that each
 * comes after the modules it depends on.
 *
 * The package has no modules.dep (depmod writes it at install time), so dependencies are read
 * from each module's own .modinfo section, the "depends=" string modpost writes
 * (scripts/mod/modpost.c, add_depends). A module listed in modules.builtin is part of the
 * kernel and skipped.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle/oracle.h"

#define MODINFO_MAX (64u << 20)

static void modname(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < len; i++)
		out[i] = in[i] == '-' ? '_' : in[i];
	out[i] = '\0';
}

/* Is the file name NAME.ko[.xz] (with - and _ the same)? */
static bool is_module_file(const char *file, const char *name)
{
	char a[256];
	size_t n = strlen(name);

	modname(file, a, sizeof(a));
	return !strncmp(a, name, n) && (!strcmp(a + n, ".ko") || !strcmp(a + n, ".ko.xz"));
}

static int find_file(const char *dir, const char *name, char *out, size_t len, int depth)
{
	struct dirent *de;
	DIR *d;
	int rc = -ENOENT;

	if (depth > 8 || !(d = opendir(dir)))
		return -ENOENT;
	while (rc && (de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_name[0] == '.' ||
		    oracle_fmt(sub, sizeof(sub), "%s/%s", dir, de->d_name) < 0)
			continue; /* a path too long is no module of ours */
		if (de->d_type == DT_DIR)
			rc = find_file(sub, name, out, len, depth + 1);
		else if (is_module_file(de->d_name, name)) {
			snprintf(out, len, "%s", sub);
			rc = 0;
		}
	}
	closedir(d);
	return rc;
}

/* Is name in the kernel's modules.builtin ("kernel/drivers/virtio/virtio_pci.ko" lines)? */
static bool builtin(const char *moddir, const char *name)
{
	char path[PATH_MAX], line[512];
	bool found = false;
	FILE *f;

	oracle_fmt(path, sizeof(path), "%s/modules.builtin", moddir);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *base = strrchr(line, '/');

		line[strcspn(line, "\n")] = '\0';
		found = is_module_file(base ? base + 1 : line, name);
	}
	fclose(f);
	return found;
}

static int read_all(const char *path, char **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > MODINFO_MAX) {
		close(fd);
		return -EINVAL;
	}
	*buf = malloc((size_t)st.st_size);
	n = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = (size_t)n;
	return 0;
}

/* The module's "depends=" value (comma separated, maybe empty) into out. */
int oracle_module_depends(const char *ko, char *out, size_t outlen)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *names;
	char *buf = NULL;
	size_t len = 0;
	int rc = read_all(ko, &buf, &len);

	if (rc)
		return rc;
	out[0] = '\0';
	eh = (const Elf64_Ehdr *)buf;
	rc = -EINVAL;
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > len || (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff ||
	    eh->e_shstrndx >= eh->e_shnum)
		goto out_free;
	sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	if (sh[eh->e_shstrndx].sh_offset > len ||
	    sh[eh->e_shstrndx].sh_size > len - sh[eh->e_shstrndx].sh_offset)
		goto out_free;
	names = buf + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *p, *end;

		if (sh[i].sh_name >= sh[eh->e_shstrndx].sh_size ||
		    strcmp(names + sh[i].sh_name, ".modinfo") || sh[i].sh_offset > len ||
		    sh[i].sh_size > len - sh[i].sh_offset)
			continue;
		p = buf + sh[i].sh_offset;
		end = p + sh[i].sh_size;
		rc = 0;
		for (; p < end; p += strnlen(p, (size_t)(end - p)) + 1)
			if (!strncmp(p, "depends=", 8) && memchr(p, '\0', (size_t)(end - p)))
				snprintf(out, outlen, "%s", p + 8);
		break;
	}
out_free:
	free(buf);
	return rc;
}

/* A plain .ko for the module file: itself, or its decompression in the cache. */
static int plain_ko(const char *file, const char *outdir, const char *name, char *out, size_t len,
		    char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	const char *argv[] = {"xz", "-dc", file, NULL};
	struct oracle_cmd c;
	size_t n = strlen(file);
	int fd, rc;

	if (n < 3 || strcmp(file + n - 3, ".xz")) {
		snprintf(out, len, "%s", file);
		return 0;
	}
	snprintf(out, len, "%s/%s.ko", outdir, name);
	if (access(out, R_OK) == 0)
		return 0;
	oracle_fmt(tmp, sizeof(tmp), "%s.tmp-%d", out, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "'%s': %s", tmp, strerror(errno));
		return -errno;
	}
	rc = oracle_cmd_run(argv, NULL, fd, &c);
	close(fd);
	if (rc)
		snprintf(err, errlen, "xz -dc %s: %s", file,
			 rc == -ENOENT ? "xz not found (apt-get install xz-utils)"
				       : oracle_cmd_why(&c));
	oracle_cmd_free(&c);
	if (!rc && rename(tmp, out) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static bool listed(const struct oracle_modules *m, const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name))
			return true;
	return false;
}

static int add(const struct oracle_kernel *k, const char *outdir, const char *want,
	       struct oracle_modules *m, int depth, char *err, size_t errlen)
{
	char name[64], file[PATH_MAX], ko[PATH_MAX], deps[512];
	int rc;

	modname(want, name, sizeof(name));
	if (listed(m, name) || builtin(k->moddir, name))
		return 0;
	if (depth > 8 || m->n == ORACLE_MAX_MODULES) {
		snprintf(err, errlen, "module %s: dependencies too deep or too many", name);
		return -ELOOP;
	}
	if (find_file(k->moddir, name, file, sizeof(file), 0)) {
		snprintf(err, errlen, "module %s: neither built into %s nor in '%s'", name,
			 k->release, k->moddir);
		return -ENOENT;
	}
	rc = plain_ko(file, outdir, name, ko, sizeof(ko), err, errlen);
	if (rc)
		return rc;
	rc = oracle_module_depends(ko, deps, sizeof(deps));
	if (rc) {
		snprintf(err, errlen, "module %s: '%s' is not a kernel module", name, ko);
		return rc;
	}
	for (char *save, *d = strtok_r(deps, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
		rc = add(k, outdir, d, m, depth + 1, err, errlen);
		if (rc)
			return rc;
	}
	snprintf(m->name[m->n], sizeof(m->name[0]), "%s", name);
	snprintf(m->path[m->n], sizeof(m->path[0]), "%s", ko);
	m->n++;
	return 0;
}

int oracle_modules_resolve(const struct oracle_kernel *k, const char *cache,
			   const char *const *want, struct oracle_modules *m, char *err,
			   size_t errlen)
{
	char outdir[PATH_MAX];
	int rc;

	m->n = 0;
	if (!k->moddir[0]) {
		snprintf(err, errlen,
			 "kernel '%s' comes without modules (lib/modules/RELEASE beside "
			 "boot/): a disk needs virtio_blk and vfat",
			 k->vmlinuz);
		return -ENOENT;
	}
	snprintf(outdir, sizeof(outdir), "%s/modules/%s_%s", cache,
		 k->package[0] ? k->package : "path", k->package[0] ? k->version : k->release);
	rc = oracle_mkdir_p(outdir, 0755);
	if (rc) {
		snprintf(err, errlen, "'%s': %s", outdir, strerror(-rc));
		return rc;
	}
	for (; *want; want++) {
		rc = add(k, outdir, *want, m, 0, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}
