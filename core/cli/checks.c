/* Checks made before any work starts, beyond each option's own parser (see cli.h): the program
 * a command will run can be found, and whether LD_PRELOAD can reach it (a static binary has no
 * dynamic loader to preload anything); whether this user may open a userfaultfd as the library
 * will; a --fragment recipe applies to a pool of the --pool size; a
 * --device directory exists; no key is given twice in a --policy, --device or --dirty spec (the
 * parsers would silently take the last one; a user reading the line may expect the first).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "policy/plugin.h"
#include "snapshot/snapshot.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00) /* Linux 6.1 */
#endif

/* ---- the program ----------------------------------------------------------------------------- */

/* An executable regular file (what execve could run). */
static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EACCES;
	return access(path, X_OK) < 0 ? -errno : 0;
}

int cli_resolve_program(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	int rc = -ENOENT;

	if (!name || !*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		rc = executable(name);
		if (rc == 0 && out)
			snprintf(out, len, "%s", name);
		return rc;
	}
	if (!path)
		path = "/bin:/usr/bin"; /* execvp's default (glibc) */
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		int r;

		/* an empty entry is the current directory */
		if ((size_t)snprintf(buf, sizeof(buf), "%.*s%s%s", (int)n, p, n ? "/" : "", name) <
		    sizeof(buf)) {
			r = executable(buf);
			if (r == 0) {
				if (out)
					snprintf(out, len, "%s", buf);
				return 0;
			}
			if (r == -EACCES)
				rc = r; /* execvp reports EACCES if that was all it found */
		}
		p += n;
		if (!*p)
			break;
	}
	return rc;
}

int cli_find_program(const char *name)
{
	return cli_resolve_program(name, NULL, 0);
}

/* ---- will LD_PRELOAD reach it ---------------------------------------------------------------- */

/* Does the ELF file on fd ask for a program interpreter (PT_INTERP: the dynamic loader, which
 * is what honours LD_PRELOAD)? 1 yes, 0 no (static), -ENOEXEC not ELF, -errno. */
static int elf_has_interp(int fd)
{
	Elf64_Ehdr eh;
	unsigned char *ph;
	size_t entsz, num;
	int rc = 0;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (eh.e_ident[EI_CLASS] == ELFCLASS32) {
		const Elf32_Ehdr *e32 = (const Elf32_Ehdr *)&eh;

		eh.e_phoff = e32->e_phoff;
		eh.e_phentsize = e32->e_phentsize;
		eh.e_phnum = e32->e_phnum;
	}
	entsz = eh.e_phentsize;
	num = eh.e_phnum;
	if (entsz < sizeof(uint32_t) || num == 0 || num > 4096)
		return num == 0 ? 0 : -ENOEXEC;
	ph = malloc(entsz * num);
	if (!ph)
		return -ENOMEM;
	if (pread(fd, ph, entsz * num, (off_t)eh.e_phoff) != (ssize_t)(entsz * num))
		rc = -ENOEXEC;
	for (size_t i = 0; rc == 0 && i < num; i++) {
		uint32_t type;

		memcpy(&type, ph + i * entsz, sizeof(type)); /* p_type leads both classes */
		if (type == PT_INTERP)
			rc = 1;
	}
	free(ph);
	return rc;
}

int cli_program_static(const char *name, char *path, size_t len)
{
	char buf[PATH_MAX], interp[PATH_MAX];
	int fd, rc = cli_resolve_program(name, path, len);

	if (rc < 0)
		return rc;
	snprintf(buf, sizeof(buf), "%s", path);
	for (int depth = 0; depth < 2; depth++) { /* the program, or its script's interpreter */
		ssize_t n;

		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		n = pread(fd, interp, sizeof(interp) - 1, 0);
		if (n >= 2 && interp[0] == '#' && interp[1] == '!') {
			close(fd);
			interp[n] = '\0';
			n = (ssize_t)strspn(interp + 2, " \t");
			snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(interp + 2 + n, " \t\n"),
				 interp + 2 + n);
			continue;
		}
		rc = elf_has_interp(fd);
		close(fd);
		return rc < 0 ? rc : rc == 0;
	}
	return -ENOEXEC;
}

int cli_userfaultfd_access(char *why, size_t len)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC), e_sys = errno, e_dev, dev;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	e_dev = errno;
	if (dev >= 0) {
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
		e_dev = errno;
		close(dev);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
	}
	snprintf(why, len,
		 "userfaultfd unavailable to uid %u (userfaultfd(2): %s; /dev/userfaultfd: %s): "
		 "needs root, CAP_SYS_PTRACE, access to /dev/userfaultfd or "
		 "vm.unprivileged_userfaultfd=1",
		 (unsigned)geteuid(), strerror(e_sys), strerror(e_dev));
	return -EPERM;
}

/* ---- repeated keys --------------------------------------------------------------------------- */

int cli_repeated_key(const char *list, char *key, size_t len)
{
	const char *a = list;

	while (*a) {
		size_t na = strcspn(a, ",="), ta = strcspn(a, ",");

		for (const char *b = a + ta; *b == ','; b += strcspn(b, ",")) {
			size_t nb = strcspn(++b, ",=");

			if (na && nb == na && !strncmp(a, b, na)) {
				snprintf(key, len, "%.*s", (int)na, a);
				return 1;
			}
		}
		a += ta;
		if (*a == ',')
			a++;
	}
	return 0;
}

/* "--KEY" for run, "SIDE KEY=" for an ab side (--a, --b). */
static const char *key_name(const char *side, const char *key, char *buf, size_t len)
{
	if (side)
		snprintf(buf, len, "%s %s=", side, key);
	else
		snprintf(buf, len, "--%s", key);
	return buf;
}

/* The KEY=VALUE part of a policy or device spec: after "NAME:". */
static const char *spec_keys(const char *spec)
{
	const char *p = strchr(spec, ':');

	return p ? p + 1 : "";
}

static int check_repeats(const struct config *cfg, const char *side, char *err, size_t errlen)
{
	const struct {
		const char *opt, *spec, *keys;
	} specs[] = {
	    {"policy", cfg->policy_spec, spec_keys(cfg->policy_spec)},
	    {"device", cfg->device_spec, spec_keys(cfg->device_spec)},
	    {"dirty", cfg->dirty_spec, cfg->dirty_spec},
	};
	char key[64], name[64];

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (cli_repeated_key(specs[i].keys, key, sizeof(key))) {
			snprintf(err, errlen, "%s: '%s' is given twice in '%s'; give each key once",
				 key_name(side, specs[i].opt, name, sizeof(name)), key,
				 specs[i].spec);
			return -EINVAL;
		}
	return 0;
}

/* ---- run's configuration --------------------------------------------------------------------- */

/* A recipe is checked the way the library will apply it: on a pool of the same size. */
static int check_recipe(const struct config *cfg, const char *side, char *err, size_t errlen)
{
	struct mm_config mc = {.pool_bytes = cfg->pool_bytes, .policy = cfg->policy};
	struct mm_env_ops ops = {0};
	struct mm_env env = {.ops = &ops};
	char why[256], name[64];
	struct mm *mm;
	int rc;

	if (!cfg->fragment[0])
		return 0;
	if (mm_create(&mc, &env, &mm, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", key_name(side, "pool", name, sizeof(name)), why);
		return -EINVAL;
	}
	rc = snap_fragment(mm, cfg->fragment, cfg->seed, why, sizeof(why), NULL);
	mm_destroy(mm);
	if (rc < 0) {
		snprintf(err, errlen, "%s: '%s': %s",
			 key_name(side, "fragment", name, sizeof(name)), cfg->fragment, why);
		return -EINVAL;
	}
	return 0;
}

/* A device directory must be one (a preset or none is mounted or modelled later). */
static int check_device_dir(const struct config *cfg, const char *side, char *err, size_t errlen)
{
	struct stat st;
	char name[64];

	if (!cfg->device_spec[0] || cfg->device.kind != IO_DEV_PATH ||
	    (stat(cfg->device.path, &st) == 0 && S_ISDIR(st.st_mode)))
		return 0;
	snprintf(err, errlen,
		 "%s: '%s' is not a directory (accepted: none, a preset, or a directory)",
		 key_name(side, "device", name, sizeof(name)), cfg->device.path);
	return -EINVAL;
}

int cli_check_plugin(const char *name, const char *spec, char *err, size_t errlen)
{
	struct policy_plugin p;
	char why[400];

	if (!spec || !*spec)
		return 0;
	if (policy_plugin_load(spec, &p, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s (a shared object exporting thpemu_policy, ABI %d)",
			 name, why, THPEMU_POLICY_ABI_VERSION);
		return -EINVAL;
	}
	policy_plugin_unload(&p);
	return 0;
}

/* The policy plugin the program's processes will load (config_plugin): the policy's plugin=
 * key, else --policy-plugin. */
static int check_plugin(const struct config *cfg, const char *side, char *err, size_t errlen)
{
	char name[64];

	return cli_check_plugin(
	    key_name(side, cfg->policy.plugin[0] ? "policy" : "policy-plugin", name, sizeof(name)),
	    config_plugin(cfg), err, errlen);
}

int cli_run_check_config(const struct config *cfg, const char *side, char *err, size_t errlen)
{
	int rc = check_repeats(cfg, side, err, errlen);

	if (rc == 0)
		rc = check_device_dir(cfg, side, err, errlen);
	if (rc == 0)
		rc = check_plugin(cfg, side, err, errlen);
	return rc < 0 ? rc : check_recipe(cfg, side, err, errlen);
}
