/* An oracle run: one kernel, one workload, one set of settings, N boots (a seed each), one JSON
 * (core/oracle/README.md, "JSON"). Each boot is a whole machine emulated on one host CPU
 * (TCG, one vCPU when pinned): --jobs of them run side by side, their results handled in boot
 * order. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "oracle/oracle.h"
#include "util/json.h"
#include "util/prog.h"

/* The disk's modules (the virtio transport is built into 6.12, a module on 6.1). */
static const char *const disk_modules[] = {"virtio_pci", "virtio_blk", "vfat",
					   "nls_cp437",	 "nls_ascii",  NULL};

/* vmstat counters a boot's line shows when they moved. */
static const char *const shown[] = {"thp_fault_alloc",
				    "thp_fault_fallback",
				    "compact_stall",
				    "compact_success",
				    "compact_fail",
				    "pgmigrate_success",
				    "thp_collapse_alloc",
				    "thp_split_page",
				    "thp_underused_split_page",
				    "oom_kill",
				    NULL};

struct run {
	const struct oracle_run_cfg *cfg;
	struct oracle_kernel kernel;
	struct oracle_modules modules;
	char dir[PATH_MAX]; /* the run's files: initramfs, disk, console logs */
	char initrd[PATH_MAX];
	char disk[PATH_MAX];
	char oset[2048];
	char qemu_version[128];
	const char *wl_name; /* under /wl */
	const char *args[ORACLE_MAX_ARGS + 1];
	int nargs;
	bool builtin, kvm, made_dir, noted;
	struct oracle_settings settings;
	double huge_pct_min, huge_pct_max, huge_pct_sum;
	int boots_with_faults, boots_ok;
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool kvm_usable(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The workload as the guest runs it: a built-in is /wl/thpemu-wl NAME ARGS. */
static void workload_argv(struct run *run)
{
	const struct oracle_run_cfg *cfg = run->cfg;
	const char *base = strrchr(cfg->workload, '/');

	run->builtin = !base;
	run->nargs = 0;
	if (run->builtin) {
		run->wl_name = "thpemu-wl";
		run->args[run->nargs++] = cfg->workload;
	} else {
		base++;
		run->wl_name = base;
		for (const char *p = base; *p; p++)
			if (!strchr(
				"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
				*p) ||
			    p - base > 60)
				run->wl_name = "program";
	}
	for (int i = 0; i < cfg->nargs && run->nargs < ORACLE_MAX_ARGS; i++)
		run->args[run->nargs++] = cfg->args[i];
	run->args[run->nargs] = NULL;
}

static int prepare_dir(struct run *run, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");

	if (run->cfg->keep) {
		snprintf(run->dir, sizeof(run->dir), "%s", run->cfg->keep);
		return 0;
	}
	snprintf(run->dir, sizeof(run->dir), "%s/thpemu-oracle.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(run->dir)) {
		snprintf(err, errlen, "a run directory in '%s': %s", tmp && *tmp ? tmp : "/tmp",
			 strerror(errno));
		return -errno;
	}
	run->made_dir = true;
	return 0;
}

static int make_disk(struct run *run, char *err, size_t errlen)
{
	int fd;

	oracle_fmt(run->disk, sizeof(run->disk), "%s/disk.img", run->dir);
	fd = open(run->disk, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)run->cfg->disk) < 0) {
		snprintf(err, errlen, "'%s': %s", run->disk, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

/* Kernel, modules, initramfs, disk: everything before the first boot. */
static int prepare(struct run *run, char *err, size_t errlen)
{
	const struct oracle_run_cfg *cfg = run->cfg;
	struct oracle_guest g = {.busybox = cfg->busybox, .snapshot = cfg->snapshot_helper};
	double t0 = now_s();
	int rc;

	rc =
	    oracle_kernel_resolve(cfg->cache, cfg->kernel, cfg->offline, &run->kernel, err, errlen);
	if (rc)
		return rc;
	if (!cfg->quiet)
		printf("oracle: kernel %s%s%s (%s), ready in %.1f s\n",
		       run->kernel.package[0] ? run->kernel.package : run->kernel.vmlinuz,
		       run->kernel.version[0] ? " " : "", run->kernel.version,
		       run->kernel.release[0] ? run->kernel.release : "release unknown",
		       now_s() - t0);
	if (run->kernel.note[0])
		prog_error("oracle", "note: %s", run->kernel.note);
	if (cfg->fetch_only)
		return 0;
	if (cfg->disk) {
		rc = oracle_modules_resolve(&run->kernel, cfg->cache, disk_modules, &run->modules,
					    err, errlen);
		if (rc)
			return rc;
	}
	rc = prepare_dir(run, err, errlen);
	if (rc)
		return rc;
	workload_argv(run);
	g.workload = run->builtin ? cfg->builtin_path : cfg->workload;
	g.workload_name = run->wl_name;
	/* a program does not speak the protocol: the suite takes its snapshot at its start */
	if (!run->builtin && cfg->snapshot_helper && cfg->snapshot_at &&
	    !strcmp(cfg->snapshot_at, "start"))
		g.snapshot_wl = cfg->builtin_path;
	g.modules = cfg->disk ? &run->modules : NULL;
	oracle_fmt(run->initrd, sizeof(run->initrd), "%s/initramfs.cpio", run->dir);
	rc = oracle_initramfs_write(run->initrd, &g, err, errlen);
	if (!rc && cfg->disk)
		rc = make_disk(run, err, errlen);
	return rc;
}

static void boot_cfg(const struct run *run, uint64_t seed, FILE *log, struct oracle_boot_cfg *b)
{
	const struct oracle_run_cfg *cfg = run->cfg;

	*b = (struct oracle_boot_cfg){
	    .qemu = cfg->qemu,
	    .vmlinuz = run->kernel.vmlinuz,
	    .initrd = run->initrd,
	    .mem_mb = cfg->mem >> 20,
	    .smp = cfg->smp,
	    .pinned = cfg->pinned,
	    .kvm = run->kvm,
	    .seed = seed,
	    .oset = run->oset,
	    .workload_name = run->wl_name,
	    .args = run->args,
	    .nargs = run->nargs,
	    .disk = cfg->disk ? run->disk : NULL,
	    .disk_bps = cfg->disk_bps,
	    .snapshot_at = cfg->snapshot_helper ? cfg->snapshot_at : NULL,
	    .kargs = cfg->kargs,
	    .nkargs = cfg->nkargs,
	    .timeout_ns = cfg->timeout_ns,
	    .log = log,
	};
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_config(struct json_w *w, const struct run *run)
{
	const struct oracle_run_cfg *cfg = run->cfg;
	struct oracle_boot_cfg b;
	struct oracle_argv a;
	char err[256], path[256];

	jw_obj_begin(w, "config");
	jw_obj_begin(w, "kernel");
	jw_str(w, "request", cfg->kernel);
	jw_str(w, "package", run->kernel.package[0] ? run->kernel.package : NULL);
	jw_str(w, "version", run->kernel.version[0] ? run->kernel.version : NULL);
	jw_str(w, "release", run->kernel.release[0] ? run->kernel.release : NULL);
	jw_str(w, "note", run->kernel.note[0] ? run->kernel.note : NULL);
	jw_obj_end(w);
	jw_obj_begin(w, "qemu");
	jw_str(w, "version", run->qemu_version);
	jw_str(w, "accel", run->kvm ? "kvm" : "tcg");
	boot_cfg(run, cfg->seed, NULL, &b);
	jw_arr_begin(w, "argv");
	if (!oracle_qemu_argv(&b, &a, err, sizeof(err)))
		for (int i = 0; i < a.argc; i++)
			jw_str(w, NULL, a.argv[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_str(w, "mode", cfg->pinned ? "pinned" : "free");
	jw_u64(w, "mem_bytes", cfg->mem);
	jw_i64(w, "smp", cfg->pinned ? 1 : cfg->smp);
	jw_i64(w, "boots", cfg->boots);
	jw_u64(w, "seed", cfg->seed);
	jw_dbl(w, "timeout_s", (double)cfg->timeout_ns / 1e9, 1);
	jw_obj_begin(w, "workload");
	jw_str(w, "name", run->builtin ? cfg->workload : run->wl_name);
	jw_bool(w, "builtin", run->builtin);
	jw_arr_begin(w, "argv");
	for (int i = 0; i < run->nargs; i++)
		jw_str(w, NULL, run->args[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_arr_begin(w, "settings");
	for (int i = 0; i < run->settings.n; i++) {
		jw_obj_begin(w, NULL);
		jw_str(w, "key", run->settings.s[i].knob->key);
		jw_str(w, "value", run->settings.s[i].value);
		jw_str(w, "origin", oracle_origin_name(run->settings.s[i].origin));
		oracle_knob_path(run->settings.s[i].knob->key, path, sizeof(path));
		jw_str(w, "path", path);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (cfg->disk) {
		jw_obj_begin(w, "disk");
		jw_u64(w, "bytes", cfg->disk);
		jw_u64(w, "write_bps", cfg->disk_bps);
		jw_str(w, "fs", "vfat");
		jw_obj_end(w);
	} else {
		jw_null(w, "disk");
	}
	jw_arr_begin(w, "kernel_args");
	for (int i = 0; i < cfg->nkargs; i++)
		jw_str(w, NULL, cfg->kargs[i]);
	jw_arr_end(w);
	jw_obj_end(w);
}

/* ---- boots ------------------------------------------------------------------------------- */

static const char *boot_status(const struct oracle_result *r, const struct oracle_boot_out *o,
			       char *why, size_t len)
{
	why[0] = '\0';
	switch (o->how) {
	case ORACLE_BOOT_TIMEOUT:
		snprintf(why, len, "no end marker within the timeout (%s)",
			 r->hello ? "init ran" : "the guest never reached init");
		return "timeout";
	case ORACLE_BOOT_INTERRUPTED:
		return "interrupted";
	case ORACLE_BOOT_FAILED:
		return "qemu-failed";
	case ORACLE_BOOT_EXITED:
		snprintf(why, len, "qemu exited before the end marker (%s)",
			 r->hello ? "the guest rebooted or panicked after init"
				  : "the kernel did not reach init");
		return "no-end-marker";
	case ORACLE_BOOT_ENDED:
		break;
	}
	for (size_t i = 0; i < r->nsettings; i++)
		if (strcmp(r->settings[i].value, "ok")) {
			snprintf(why, len, "setting %s: %s in this kernel", r->settings[i].key,
				 r->settings[i].value);
			return "setting-failed";
		}
	if (r->exit_status) {
		snprintf(why, len, "the workload exited with status %d%s", r->exit_status,
			 r->exit_status == 137 ? " (killed: the OOM killer?)" : "");
		return "workload-failed";
	}
	return "ok";
}

static void print_boot(const struct run *run, int i, uint64_t seed, const char *status,
		       const char *why, const struct oracle_result *r,
		       const struct oracle_boot_out *o)
{
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb;
	const struct oracle_snap *a, *b;
	const char *scope = oracle_result_scope(r, &a, &b);

	oracle_result_counts(r, final, &fh, &fb);
	printf("boot %d/%d seed %llu: %s in %.1f s (to init %.1f s, program %.1f s)", i + 1,
	       run->cfg->boots, (unsigned long long)seed, status, o->wall_s, o->to_init_s,
	       o->program_s);
	if (why[0])
		printf(": %s", why);
	printf("\n");
	if (r->next && fh + fb)
		printf("  %zu extents: %zu huge at first touch (%.1f %%), %zu huge at the end\n",
		       r->next, fh, 100.0 * (double)fh / (double)(fh + fb), final[ORACLE_EXT_HUGE]);
	else if (r->next)
		printf("  %zu extents: %zu huge at the end\n", r->next, final[ORACLE_EXT_HUGE]);
	if (scope) {
		bool any = false;

		for (const char *const *n = shown; *n; n++) {
			int64_t d = oracle_snap_delta(a, b, NULL, *n, NULL);

			if (d)
				printf("%s%s %lld", any ? ", " : "  ", *n, (long long)d);
			any |= d != 0;
		}
		printf("%s(%s)\n", any ? " " : "  no THP or compaction activity ", scope);
	}
	fflush(stdout);
}

static void json_boot(struct json_w *w, int i, uint64_t seed, const char *status, const char *why,
		      const struct oracle_result *r, const struct oracle_boot_out *o)
{
	jw_obj_begin(w, NULL);
	jw_i64(w, "index", i);
	jw_u64(w, "seed", seed);
	jw_str(w, "status", status);
	jw_str(w, "error", why[0] ? why : NULL);
	jw_obj_begin(w, "host_time");
	jw_dbl(w, "wall_s", o->wall_s, 3);
	jw_dbl(w, "to_init_s", o->to_init_s, 3);
	jw_dbl(w, "program_s", o->program_s, 3);
	jw_obj_end(w);
	jw_str(w, "qemu_stderr", o->qemu_err[0] ? o->qemu_err : NULL);
	oracle_result_json(w, r);
	jw_obj_end(w);
}

static void tally(struct run *run, const struct oracle_result *r, const char *status)
{
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb;
	double pct;

	run->boots_ok += !strcmp(status, "ok");
	oracle_result_counts(r, final, &fh, &fb);
	if (!(fh + fb))
		return;
	pct = 100.0 * (double)fh / (double)(fh + fb);
	if (!run->boots_with_faults || pct < run->huge_pct_min)
		run->huge_pct_min = pct;
	if (!run->boots_with_faults || pct > run->huge_pct_max)
		run->huge_pct_max = pct;
	run->huge_pct_sum += pct;
	run->boots_with_faults++;
}

/* Linux turns THP off at boot below 512 MiB of RAM (mm/huge_memory.c hugepage_init:
 * transparent_hugepage_flags = 0, khugepaged's defrag and the zero page included), which a
 * 512M guest is once the kernel has taken its share. Say so when the user did not set enabled. */
static void note_thp_off(struct run *run, const struct oracle_result *r)
{
	const char *v = NULL;

	for (size_t i = 0; i < r->nknobs && !v; i++)
		if (!strcmp(r->knobs[i].key, "enabled"))
			v = r->knobs[i].value;
	if (run->noted || !v || !strstr(v, "[never]") ||
	    oracle_settings_get(&run->settings, "enabled"))
		return;
	run->noted = true;
	prog_error("oracle",
		   "note: the guest booted with THP off (enabled %s): Linux disables it below 512 "
		   "MiB of RAM; set --enabled, --defrag and khugepaged/defrag=1",
		   v);
}

/* The boot's memory snapshot into DIR/boot-I.snap: path set, or "" when none arrived whole
 * (the boot's JSON says why) or it could not be written (said on stderr). */
static void save_snapshot(const struct run *run, int i, const struct oracle_result *r, char *path,
			  size_t len)
{
	const char *text;
	size_t n;
	FILE *f;

	path[0] = '\0';
	text = oracle_result_memsnap(r, &n);
	if (!text)
		return;
	oracle_fmt(path, len, "%s/boot-%d.snap", run->dir, i + 1);
	f = fopen(path, "we");
	if (f && fwrite(text, 1, n, f) != n) {
		fclose(f);
		f = NULL;
	}
	if (!f || fclose(f)) {
		prog_error("oracle", "'%s': %s", path, strerror(errno ? errno : EIO));
		path[0] = '\0';
	}
}

/* One boot's qemu, its console into result r and its log file; what oracle_qemu_boot
 * returns. Touches nothing shared: boots of a run may go side by side (boot_worker). */
static int do_boot(const struct run *run, int i, struct oracle_result *r, struct oracle_boot_out *o,
		   char *err, size_t errlen)
{
	uint64_t seed = run->cfg->seed + (uint64_t)i;
	struct oracle_boot_cfg b;
	char logpath[PATH_MAX], diskpath[PATH_MAX];
	FILE *log;
	int rc;

	oracle_fmt(logpath, sizeof(logpath), "%s/boot-%d.log", run->dir, i + 1);
	log = fopen(logpath, "we");
	oracle_result_init(r);
	boot_cfg(run, seed, log, &b);
	/* each boot writes a disk of its own, empty as the run's first (a boot beside it must not
	 * open the same image, nor a later one find the last one's file system) */
	if (b.disk) {
		int fd;

		oracle_fmt(diskpath, sizeof(diskpath), "%s/disk-%d.img", run->dir, i + 1);
		fd = open(diskpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)run->cfg->disk) < 0) {
			snprintf(err, errlen, "'%s': %s", diskpath, strerror(errno));
			if (fd >= 0)
				close(fd);
			if (log)
				fclose(log);
			return -EIO;
		}
		close(fd);
		b.disk = diskpath;
	}
	rc = oracle_qemu_boot(&b, r, o, err, errlen);
	if (b.disk)
		unlink(diskpath);
	if (log)
		fclose(log);
	return rc;
}

/* What follows boot i, in boot order whatever order the boots ended in: its line, its JSON,
 * the tally, its snapshot and the caller's on_boot; r is freed. */
static int after_boot(struct run *run, struct json_w *w, int i, int rc, struct oracle_result *r,
		      const struct oracle_boot_out *o, char *err)
{
	uint64_t seed = run->cfg->seed + (uint64_t)i;
	char why[512], snap[PATH_MAX] = "";
	const char *status;

	if (rc) {
		oracle_result_free(r);
		return rc;
	}
	status = boot_status(r, o, why, sizeof(why));
	if (o->how == ORACLE_BOOT_FAILED)
		snprintf(why, sizeof(why), "%s", err);
	if (!run->cfg->quiet)
		print_boot(run, i, seed, status, why, r, o);
	if (w)
		json_boot(w, i, seed, status, why, r, o);
	tally(run, r, status);
	note_thp_off(run, r);
	if (run->cfg->snapshot_helper)
		save_snapshot(run, i, r, snap, sizeof(snap));
	if (run->cfg->on_boot)
		run->cfg->on_boot(run->cfg->on_boot_arg, i, seed, status, r, snap[0] ? snap : NULL);
	oracle_result_free(r);
	return o->how == ORACLE_BOOT_INTERRUPTED ? -EINTR : 0;
}

/* ---- boots side by side (--jobs) ---------------------------------------------------------- */

struct slot {
	struct oracle_result r;
	struct oracle_boot_out o;
	char err[512];
	int rc;
	bool done;
};

struct pool {
	struct run *run;
	struct slot *slot;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int next;  /* the next boot to start */
	bool stop; /* start no more: interrupted, qemu not set going (do_boot's rc), or the run is
		      over */
};

/* A worker: takes the next boot not started until there are none or the run stops. */
static void *boot_worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		struct slot *s;
		int i;

		pthread_mutex_lock(&p->lock);
		if (oracle_interrupted && !p->stop) {
			p->stop = true;
			pthread_cond_broadcast(&p->cond);
		}
		if (p->stop || p->next >= p->run->cfg->boots) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		i = p->next++;
		pthread_mutex_unlock(&p->lock);
		s = &p->slot[i];
		s->rc = do_boot(p->run, i, &s->r, &s->o, s->err, sizeof(s->err));
		pthread_mutex_lock(&p->lock);
		s->done = true;
		if (s->rc || s->o.how == ORACLE_BOOT_INTERRUPTED)
			p->stop = true;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
}

/* Every boot with up to jobs qemus at once; each boot's results handled (after_boot) in boot
 * order as soon as it and those before it have ended, as one at a time would. A pinned boot's
 * guest counts instructions, not host time (-icount, qemu.c), so its results do not depend on
 * what runs beside it. The first boot that could not be set going or was interrupted ends the run
 * there, as it would one at a time: the boots after it are not reported. */
static int boots_parallel(struct run *run, struct json_w *w, int jobs, int *done, char *err,
			  size_t errlen)
{
	struct pool p = {.run = run};
	pthread_t th[ORACLE_MAX_JOBS];
	int n = 0, rc = 0, i, prc = 0;

	p.slot = calloc((size_t)run->cfg->boots, sizeof(*p.slot));
	if (!p.slot) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (; n < jobs; n++)
		if ((prc = pthread_create(&th[n], NULL, boot_worker, &p)) != 0)
			break;
	if (!n) {
		snprintf(err, errlen, "no thread for a boot: %s", strerror(prc));
		rc = -EAGAIN;
	}
	for (i = 0; i < run->cfg->boots && !rc; i++) {
		struct slot *s = &p.slot[i];

		pthread_mutex_lock(&p.lock);
		while (!s->done && !(p.stop && i >= p.next))
			pthread_cond_wait(&p.cond, &p.lock);
		pthread_mutex_unlock(&p.lock);
		if (!s->done) /* never started: an earlier boot stopped the run */
			break;
		rc = after_boot(run, w, i, s->rc, &s->r, &s->o, s->err);
		if (rc && rc != -EINTR)
			snprintf(err, errlen, "%s", s->err);
		s->done = false; /* handled: its result is freed */
		++*done;
	}
	pthread_mutex_lock(&p.lock);
	p.stop = true;
	pthread_mutex_unlock(&p.lock);
	for (int k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < run->cfg->boots; k++)
		if (p.slot[k].done)
			oracle_result_free(&p.slot[k].r);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	free(p.slot);
	return rc;
}

int oracle_jobs_default(bool pinned)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (!pinned || n < 1)
		return 1;
	return n > ORACLE_MAX_JOBS ? ORACLE_MAX_JOBS : (int)n;
}

static void json_summary(struct json_w *w, const struct run *run, int boots)
{
	jw_obj_begin(w, "summary");
	jw_i64(w, "boots", boots);
	jw_i64(w, "ok", run->boots_ok);
	jw_obj_begin(w, "fault_huge_pct");
	if (run->boots_with_faults) {
		jw_dbl(w, "min", run->huge_pct_min, 1);
		jw_dbl(w, "mean", run->huge_pct_sum / run->boots_with_faults, 1);
		jw_dbl(w, "max", run->huge_pct_max, 1);
	}
	jw_obj_end(w);
	jw_obj_end(w);
}

int oracle_run(const struct oracle_run_cfg *cfg, FILE *json, char *err, size_t errlen)
{
	struct run *run = calloc(1, sizeof(*run));
	struct json_w w;
	int rc, boots = 0, jobs;
	double t0 = now_s();

	if (!run)
		return -ENOMEM;
	run->cfg = cfg;
	run->settings = cfg->settings;
	if (cfg->pinned)
		oracle_settings_pin(&run->settings);
	oracle_settings_encode(&run->settings, run->oset, sizeof(run->oset));
	run->kvm = !cfg->pinned && strcmp(cfg->accel, "tcg") && kvm_usable();
	rc = prepare(run, err, errlen);
	if (rc || cfg->fetch_only)
		goto out_clean;
	oracle_qemu_version(cfg->qemu, run->qemu_version, sizeof(run->qemu_version));
	if (json) {
		jw_init(&w, json, true);
		jw_obj_begin(&w, NULL);
		jw_str(&w, "kind", "oracle");
		jw_i64(&w, "version", 1);
		json_config(&w, run);
		jw_arr_begin(&w, "boots");
	}
	jobs = cfg->jobs ? cfg->jobs : oracle_jobs_default(cfg->pinned);
	if (jobs > cfg->boots)
		jobs = cfg->boots;
	if (jobs > 1) {
		rc = boots_parallel(run, json ? &w : NULL, jobs, &boots, err, errlen);
	} else {
		for (int i = 0; i < cfg->boots && !rc; i++, boots++) {
			struct oracle_boot_out o;
			struct oracle_result r;

			rc = do_boot(run, i, &r, &o, err, errlen);
			rc = after_boot(run, json ? &w : NULL, i, rc, &r, &o, err);
		}
	}
	if (rc == -EINTR) {
		snprintf(err, errlen, "interrupted after %d boot%s", boots, boots == 1 ? "" : "s");
	}
	if (json) {
		jw_arr_end(&w);
		json_summary(&w, run, boots);
		jw_dbl(&w, "wall_s", now_s() - t0, 1);
		jw_obj_end(&w);
		jw_finish(&w);
	}
	if (!cfg->quiet && cfg->boots > 1 && run->boots_with_faults)
		printf("oracle: %d boots, %d ok; huge at first touch %.1f / %.1f / %.1f %% "
		       "(min / mean / max); %.1f s\n",
		       boots, run->boots_ok, run->huge_pct_min,
		       run->huge_pct_sum / run->boots_with_faults, run->huge_pct_max, now_s() - t0);
	if (!rc)
		rc = run->boots_ok == cfg->boots ? 0 : 1;
out_clean:
	if (run->made_dir)
		oracle_rm_rf(run->dir);
	free(run);
	return rc;
}
