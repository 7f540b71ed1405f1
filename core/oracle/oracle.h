/* The real-kernel oracle: boot one of Debian's kernels under qemu, run a workload in it, and
 * collect what the kernel says (core/oracle/README.md).
 *
 *   settings.c  the kernel settings a boot makes (THP sysfs, khugepaged, mTHP, sysctls)
 *   kernel.c    finding, fetching and unpacking kernels into thpemu's cache
 *   modules.c   the modules a guest loads, decompressed and in dependency order
 *   exec.c      running host tools without a shell
 *   guest.c     the guest's /init and the initramfs (cpio.h)
 *   qemu.c      one boot: qemu's command line, its console read until the end marker
 *   run.c       a run: its boots, their results (result.h) and the JSON
 *
 * Functions return 0 or -errno and put a one-line reason in err.
 */
#ifndef THPEMU_ORACLE_H
#define THPEMU_ORACLE_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "oracle/result.h"

/* ---- settings (settings.c) ------------------------------------------------------------------ */

enum oracle_knob_class {
	ORACLE_KNOB_THP, /* applied first: writing enabled resets min_free_kbytes */
	ORACLE_KNOB_MTHP,
	ORACLE_KNOB_KHUGEPAGED,
	ORACLE_KNOB_VM,
	ORACLE_KNOB_KERNEL,
	ORACLE_KNOB_CLASSES
};

struct oracle_knob {
	const char *key;    /* enabled, hugepages-64kB, khugepaged/max_ptes_none, vm.NAME */
	const char *values; /* "a|b|c", or NULL for an integer 0..max */
	uint64_t max;
	enum oracle_knob_class cls;
	const char *since; /* the kernel that introduced it */
};

enum oracle_origin { ORACLE_ORIGIN_USER, ORACLE_ORIGIN_PINNED };

#define ORACLE_MAX_SETTINGS 48

struct oracle_settings {
	struct {
		const struct oracle_knob *knob;
		char value[24];
		enum oracle_origin origin;
	} s[ORACLE_MAX_SETTINGS];
	int n;
};

const struct oracle_knob *oracle_knob(size_t i); /* the table, NULL past its end */
const struct oracle_knob *oracle_knob_find(const char *key);
int oracle_knob_path(const char *key, char *buf, size_t len);
void oracle_settings_init(struct oracle_settings *s);
int oracle_settings_set(struct oracle_settings *s, const char *key, const char *value,
			enum oracle_origin origin, char *err, size_t errlen);
/* "KEY=VALUE,KEY=VALUE" */
int oracle_settings_parse(struct oracle_settings *s, const char *list, char *err, size_t errlen);
const char *oracle_settings_get(const struct oracle_settings *s, const char *key);
/* Add the pinned mode's settings the user did not make. */
void oracle_settings_pin(struct oracle_settings *s);
/* "KEY:VALUE,..." in application order (the kernel command line's OSET). */
int oracle_settings_encode(const struct oracle_settings *s, char *buf, size_t len);
const char *oracle_origin_name(enum oracle_origin o);
/* The key of thpemu's policy language (core/mm/policy.c) that models setting KEY, written with
 * the value in that key's spelling as "key=value" to buf: 0, or -ENOENT when thpemu models no
 * such knob (enabled and defrag are the profile's name, not keys: -ENOENT too). */
int oracle_setting_policy(const char *key, const char *value, char *buf, size_t len);

/* ---- host tools (exec.c) ----------------------------------------------------------------------
 */

struct oracle_cmd {
	char *out; /* stdout (when not sent to a file), NUL-terminated */
	size_t outlen;
	char err[1024]; /* the tail of stderr */
	int status;	/* waitpid's */
};

/* Run argv (PATH searched) in cwd (NULL: here), stdin /dev/null, stdout to out_fd or (out_fd < 0)
 * into c->out. 0 when it exited 0; -ENOENT not found; -ECHILD another status. */
int oracle_cmd_run(const char *const argv[], const char *cwd, int out_fd, struct oracle_cmd *c);
void oracle_cmd_free(struct oracle_cmd *c);
const char *oracle_cmd_why(const struct oracle_cmd *c);
/* snprintf that says whether it all fit: 0, or -ENAMETOOLONG (buf holds what fit). */
__attribute__((format(printf, 3, 4))) int oracle_fmt(char *buf, size_t len, const char *fmt, ...);

/* ---- kernels (kernel.c, modules.c) ------------------------------------------------------------
 */

struct oracle_kernel {
	char request[PATH_MAX]; /* "6.12", or a path */
	char package[128];	/* linux-image-...-cloud-amd64-unsigned, "" for a path */
	char version[64];	/* its Debian version */
	char release[128];	/* the kernel release (lib/modules/RELEASE), "" if unknown */
	char root[PATH_MAX];	/* the unpacked package */
	char vmlinuz[PATH_MAX];
	char moddir[PATH_MAX]; /* "" without modules */
	char config[PATH_MAX]; /* boot/config-RELEASE, "" if absent */
	char note[768];	       /* e.g. apt failed and a cached kernel is used */
};

#define ORACLE_MAX_MODULES 16

struct oracle_modules {
	int n;
	char name[ORACLE_MAX_MODULES][64];
	char path[ORACLE_MAX_MODULES][PATH_MAX];
};

/* The cache: opt, else $THPEMU_ORACLE_CACHE, else $XDG_CACHE_HOME/thpemu/oracle, else
 * ~/.cache/thpemu/oracle; created. */
int oracle_cache_dir(const char *opt, char *buf, size_t len, char *err, size_t errlen);
/* Is request a series (6.12, 6.1) or an existing file? (checked before any work) */
int oracle_kernel_check(const char *request, char *err, size_t errlen);
/* Find (apt-cache), fetch (apt-get download) and unpack (dpkg-deb -x) the newest kernel of a
 * series into the cache, or take a path; offline: the cache only. */
int oracle_kernel_resolve(const char *cache, const char *request, bool offline,
			  struct oracle_kernel *k, char *err, size_t errlen);
int oracle_deb_vercmp(const char *a, const char *b);
int oracle_modules_resolve(const struct oracle_kernel *k, const char *cache,
			   const char *const *want, struct oracle_modules *m, char *err,
			   size_t errlen);
int oracle_module_depends(const char *ko, char *out, size_t outlen);
int oracle_mkdir_p(const char *path, mode_t mode);
int oracle_rm_rf(const char *path);

/* ---- the guest (guest.c) ----------------------------------------------------------------------
 */

struct oracle_guest {
	const char *busybox;	   /* a static busybox */
	const char *workload;	   /* the program file */
	const char *workload_name; /* its name under /wl */
	const struct oracle_modules *modules;
	const char *snapshot; /* the static thpemu-snapshot, or NULL */
	/* the static suite, for a program outside it: /init runs `thpemu-wl --snapshot-start`
	 * before the program (with snapshot only), or NULL */
	const char *snapshot_wl;
};

/* The /init script into buf: its length, or -E2BIG. */
int oracle_init_script(char *buf, size_t len);
int oracle_initramfs_write(const char *out, const struct oracle_guest *g, char *err, size_t errlen);

/* ---- one boot (qemu.c) ------------------------------------------------------------------------
 */

#define ORACLE_MAX_ARGS 24 /* workload arguments: the kernel passes init 32 variables at most */

struct oracle_boot_cfg {
	const char *qemu;
	const char *vmlinuz, *initrd;
	uint64_t mem_mb;
	int smp;
	bool pinned; /* icount, one vCPU, fixed RTC and CPU features */
	bool kvm;
	uint64_t seed;
	const char *oset; /* oracle_settings_encode */
	const char *workload_name;
	const char *const *args; /* the workload's arguments */
	int nargs;
	const char *disk; /* a raw image, or NULL */
	uint64_t disk_bps;
	const char *snapshot_at;  /* OSNAP=: where the workload snapshots memory, or NULL */
	const char *const *kargs; /* more kernel parameters */
	int nkargs;
	uint64_t timeout_ns;
	FILE *log; /* the console, every line (may be NULL) */
};

struct oracle_argv {
	char *argv[96];
	int argc;
	char buf[8192];
	size_t used;
};

struct oracle_boot_out {
	enum {
		ORACLE_BOOT_ENDED,
		ORACLE_BOOT_TIMEOUT,
		ORACLE_BOOT_EXITED,
		ORACLE_BOOT_INTERRUPTED,
		ORACLE_BOOT_FAILED
	} how;
	int qemu_status;    /* waitpid's, when qemu exited by itself */
	double wall_s;	    /* qemu started -> end marker (or kill) */
	double to_init_s;   /* -> ORACLE hello */
	double program_s;   /* ORACLE start -> ORACLE exit, host time */
	char qemu_err[512]; /* the tail of qemu's stderr */
};

/* Check a workload argument can travel on the kernel command line. */
int oracle_arg_check(const char *arg, char *err, size_t errlen);
int oracle_qemu_argv(const struct oracle_boot_cfg *c, struct oracle_argv *a, char *err,
		     size_t errlen);
/* Boot, feeding every console line to r, until the end marker, a timeout, qemu's exit or
 * oracle_interrupted. 0, or -errno when qemu could not be started. */
int oracle_qemu_boot(const struct oracle_boot_cfg *c, struct oracle_result *r,
		     struct oracle_boot_out *out, char *err, size_t errlen);
/* The qemu's version line ("QEMU emulator version 7.2.19 ..."), or "" */
void oracle_qemu_version(const char *qemu, char *buf, size_t len);

/* Set by a SIGINT/SIGTERM handler: the boot in progress is stopped, the run ends. */
extern volatile sig_atomic_t oracle_interrupted;

/* ---- a run (run.c) ----------------------------------------------------------------------------
 */

struct oracle_run_cfg {
	const char *cache;
	const char *kernel; /* series or path */
	bool offline;
	const char *qemu;
	const char *busybox;
	const char *workload;	  /* a built-in name or a path */
	const char *builtin_path; /* thpemu-wl-static, for a built-in (and, with snapshot_helper,
				   * to take a program's snapshot at its start) */
	const char *const *args;
	int nargs;
	struct oracle_settings settings;
	uint64_t mem;
	int smp;
	bool pinned;
	const char *accel; /* tcg, kvm, auto */
	int boots;
	/* Boots side by side, 1..ORACLE_MAX_JOBS; 0: oracle_jobs_default. Their results are
	 * handled in boot order (the line, the JSON, on_boot), the same as one at a time. */
	int jobs;
	uint64_t seed;
	uint64_t timeout_ns;
	uint64_t disk;	   /* bytes, 0: none */
	uint64_t disk_bps; /* 0: unthrottled */
	const char *const *kargs;
	int nkargs;
	const char *keep; /* directory for logs and the initramfs, or NULL */
	bool quiet;
	bool fetch_only;
	/* The machine's memory: the static thpemu-snapshot goes into the initramfs and the
	 * workload runs it at snapshot_at ("start" or "phase"); each boot's text is written to
	 * DIR/boot-I.snap (I from 1; DIR: keep, else the run's temporary directory). */
	const char *snapshot_helper;
	const char *snapshot_at;
	/* Called after each boot with its result (still whole) and its snapshot file (NULL when
	 * none arrived whole); status is the boot's (ok, workload-failed, ...). */
	void (*on_boot)(void *arg, int index, uint64_t seed, const char *status,
			const struct oracle_result *r, const char *snapshot);
	void *on_boot_arg;
};

#define ORACLE_MAX_JOBS 64

/* --jobs by default: the online CPUs when pinned (a pinned guest counts instructions, so a
 * boot beside another gives the same results); 1 in free mode (real time: a boot beside
 * another would see a slower machine). */
int oracle_jobs_default(bool pinned);

/* Run it all, writing the JSON to json (may be NULL) and a line per boot to stdout.
 * 0 all boots ended with the workload's status 0; 1 otherwise (the JSON says why); -errno
 * before any boot (err set). */
int oracle_run(const struct oracle_run_cfg *cfg, FILE *json, char *err, size_t errlen);

/* ---- the boot options of thpemu oracle and thpemu fidelity (bootopt.c) ------------------------
 */

/* What the two commands share: --kernel, --mem, --mode, --smp, --boots, --jobs, --seed,
 * --timeout, --cache, --qemu, --busybox, --offline. What differs between them is a bound. */
struct oracle_boot_opts {
	const char *cmd;	    /* "oracle", "fidelity": for "see thpemu CMD --help" */
	struct oracle_run_cfg *cfg; /* the values go here */
	const char *mode;	    /* --mode as given (pinned, free), NULL when not */
	const char *cache;	    /* --cache as given, NULL when not */
	uint64_t mem_min, mem_max;  /* --mem bounds, whole MiB */
	int boots_max;
	bool series_only; /* --kernel takes 6.12 or 6.1 only (the kernels thpemu has profiles of) */
};

/* argv[*i] when it is one of the shared options: its value taken (*i moves past it) and
 * checked. 1: taken; 0: not one of them (nothing moved); -1: bad, err is the one-line
 * message naming the option and what it accepts. */
int oracle_boot_opt(struct oracle_boot_opts *o, int argc, char **argv, int *i, char *err,
		    size_t errlen);
/* Is name one of the suite's workloads? (asks the program itself: wl --list) */
bool oracle_builtin_workload(const char *wl, const char *name);
/* v as an integer min..max into *n: 0, or -1 with "OPT: 'V' is not an integer MIN..MAX". */
int oracle_opt_uint(const char *opt, const char *v, uint64_t min, uint64_t max, uint64_t *n,
		    char *err, size_t errlen);

#endif
