/* fusedev run-time control and statistics files at the mount root.
 *
 *   .thpemu-control  write "key=value" lines (any device key of `--help`), or "pause",
 *                    "resume", "capacity=SIZE"; read: the current settings, one per line.
 *   .thpemu-stats    read: JSON snapshot (util/json.h) of what the device did: bytes and ops,
 *                    requests in flight and the queue depth now and at most, service time and
 *                    hold time percentiles, injected errors, stalls, GC, and the kernel's own
 *                    view of the connection (/sys/fs/fuse/connections/N: waiting requests).
 *
 * Like nbdkit's control files and sysfs knobs, nothing restarts: requests not yet started get
 * the new settings, and those in service are re-timed (core/io/devmodel.h: devm_set), so a
 * change reaches requests already held. Every value is bounded (devm_help lists the bounds);
 * a bad line fails the write with EINVAL and is logged with what its key accepts. Both files
 * are found by lookup but hidden from readdir.
 */
#include "fusedev.h"
#include "util/json.h"
#include "util/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Apply one line; on a bad one, why says what the key accepts. */
static int apply_line(struct fdev *fs, char *line, char *why, size_t whylen)
{
	char *eq = strchr(line, '=');
	const char *ok;
	uint64_t v;
	int err;

	if (!strcmp(line, "pause")) {
		fdev_ioq_pause(fs);
		return 0;
	}
	if (!strcmp(line, "resume")) {
		fdev_ioq_resume(fs);
		return 0;
	}
	if (!strcmp(line, "dead"))
		return fdev_ioq_set(fs, "dead", "1");
	if (!eq) {
		snprintf(why, whylen, "expected KEY=VALUE, pause, resume or dead");
		return -EINVAL;
	}
	*eq = '\0';
	line = trim(line);
	if (!strcmp(line, "machine")) { /* thpemu run: join its machine (machine.c) */
		err = fdev_machine_join(fs, trim(eq + 1));
		if (err)
			snprintf(why, whylen, "cannot join machine %s: %s", trim(eq + 1),
				 strerror(-err));
		return err ? -EINVAL : 0;
	}
	if (!strcmp(line, "capacity")) {
		if (units_parse_size(trim(eq + 1), &v) == 0) {
			atomic_store(&fs->capacity, v);
			return 0;
		}
		snprintf(why, whylen, "capacity accepts a size");
		return -EINVAL;
	}
	err = fdev_ioq_set(fs, line, trim(eq + 1));
	ok = devm_key_accepted(line);
	if (err == -ENOENT)
		snprintf(why, whylen, "unknown key (the device keys of --help)");
	else if (err && ok)
		snprintf(why, whylen, "%s accepts %s", line, ok);
	else if (err)
		snprintf(why, whylen, "the device refuses it (gc-au needs gc-open, ...)");
	return err ? -EINVAL : 0;
}

int fdev_ctl_apply(struct fdev *fs, const char *text, size_t len)
{
	char *copy = malloc(len + 1), *save = NULL, *line;
	char shown[128], why[160];
	int err = 0;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	for (line = strtok_r(copy, "\n;", &save); line && !err;
	     line = strtok_r(NULL, "\n;", &save)) {
		line = trim(line);
		if (!*line || *line == '#')
			continue;
		snprintf(shown, sizeof(shown), "%s", line); /* apply_line splits it */
		err = apply_line(fs, line, why, sizeof(why));
		if (err)
			fprintf(stderr, "thpemu-fusedev: control: rejected '%s': %s\n", shown, why);
	}
	free(copy);
	return err;
}

static void render_settings(struct fdev *fs, FILE *f)
{
	struct devm_params p;
	struct devm_stats s;
	char *buf = NULL, *save = NULL, *tok;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	fdev_ioq_snapshot(fs, &p, &s);
	fprintf(f, "# thpemu-fusedev: write key=value lines here (pause, resume, any key below)\n");
	fprintf(f, "paused=%d\ncapacity=%llu\n", s.paused ? 1 : 0,
		(unsigned long long)atomic_load(&fs->capacity));
	if (!m)
		return;
	devm_params_format(&p, m);
	fclose(m);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (strncmp(tok, "capacity=", 9) != 0)
			fprintf(f, "%s\n", tok);
	free(buf);
}

static void hist_json(struct json_w *w, const char *key, const struct obs_hist *h)
{
	struct obs_hist_summary s;

	obs_hist_summarise(h, 1000, &s);
	jw_obj_begin(w, key);
	jw_u64(w, "count", s.count);
	jw_dbl(w, "mean", s.mean, 1);
	jw_dbl(w, "p50", s.p50, 1);
	jw_dbl(w, "p90", s.p90, 1);
	jw_dbl(w, "p99", s.p99, 1);
	jw_dbl(w, "max", s.max, 1);
	jw_obj_end(w);
}

/* The FUSE connection of our mount: /sys/fs/fuse/connections/<minor> (anonymous device). */
static int conn_id(struct fdev *fs)
{
	char line[4096], mnt[4096];
	unsigned maj, min;
	int id = -1;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &maj, &min, mnt) != 3)
			continue;
		if (strcmp(mnt, fs->o.mountpoint) == 0 && maj == 0)
			id = (int)min; /* the last mount on that path is ours */
	}
	fclose(f);
	return id;
}

static long read_sys(int id, const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%d/%s", id, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void opt_u64(struct json_w *w, const char *key, long v)
{
	if (v < 0)
		jw_null(w, key);
	else
		jw_u64(w, key, (uint64_t)v);
}

static void kernel_json(struct fdev *fs, struct json_w *w)
{
	int id = conn_id(fs);

	jw_obj_begin(w, "kernel");
	opt_u64(w, "connection", id);
	opt_u64(w, "waiting", id >= 0 ? read_sys(id, "waiting") : -1);
	opt_u64(w, "max_background", id >= 0 ? read_sys(id, "max_background") : -1);
	opt_u64(w, "congestion_threshold", id >= 0 ? read_sys(id, "congestion_threshold") : -1);
	jw_obj_end(w);
}

static void device_json(struct json_w *w, const struct devm_stats *s)
{
	jw_u64(w, "bytes_written", s->bytes_written);
	jw_u64(w, "bytes_read", s->bytes_read);
	jw_u64(w, "ops_written", s->ops_written);
	jw_u64(w, "ops_read", s->ops_read);
	jw_u64(w, "in_flight", s->in_flight);
	jw_u64(w, "queued", s->queued);
	jw_u64(w, "queue_depth_max", s->queue_max);
	jw_bool(w, "paused", s->paused);
	jw_u64(w, "errors_injected", s->errors_injected);
	jw_u64(w, "stalls", s->stalls);
	jw_dbl(w, "stall_ms", s->stall_ns / 1e6, 3);
	jw_u64(w, "gc_events", s->gc_events);
	jw_dbl(w, "gc_ms", s->gc_ns / 1e6, 3);
	jw_u64(w, "seeks", s->seeks);
	jw_u64(w, "tails", s->tails);
	jw_dbl(w, "busy_ms", s->busy_ns / 1e6, 3);
}

static void render_stats(struct fdev *fs, FILE *f)
{
	struct fdev_iostats *st = &fs->q.st;
	struct devm_params p;
	struct devm_stats s;
	struct json_w w;
	uint64_t up = fdev_ioq_now(fs);

	fdev_ioq_snapshot(fs, &p, &s);
	jw_init(&w, f, true);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "device", p.name);
	jw_dbl(&w, "uptime_s", up / 1e9, 3);
	device_json(&w, &s);
	jw_u64(&w, "replies_eio", atomic_load(&st->replies_eio));
	jw_u64(&w, "replies_abandoned", atomic_load(&st->replies_abandoned));
	jw_u64(&w, "enospc", atomic_load(&st->fs_enospc));
	jw_dbl(&w, "write_mb_per_s", up ? s.bytes_written / (up / 1e9) / 1e6 : 0, 3);
	hist_json(&w, "service_time_us", &st->service);
	hist_json(&w, "held_us", &st->latency);
	hist_json(&w, "reply_lag_us", &st->lag);
	jw_obj_begin(&w, "store");
	jw_str(&w, "kind", fdev_store_name(fs));
	jw_u64(&w, "used_bytes", atomic_load(&fs->used));
	jw_u64(&w, "capacity_bytes", atomic_load(&fs->capacity));
	jw_obj_end(&w);
	kernel_json(fs, &w);
	jw_obj_end(&w);
	jw_finish(&w);
}

char *fdev_ctl_render(struct fdev *fs, enum fdev_kind kind, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	if (kind == FDEV_STATS)
		render_stats(fs, f);
	else
		render_settings(fs, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
