/* writer: a file streamed to a slow disk while THPs are faulted, the shape of the 2011 story
 * (demo/README.md, "seed-2011.sh": usemem stalled in compaction behind a writer copying to a USB
 * stick) on a modern kernel.
 *
 * A writer thread streams --write bytes to a file in --dir ($ORACLE_DISK: the guest's vfat disk,
 * its writes throttled by qemu with --disk-write-rate; else $TMPDIR or /tmp), 1 MiB per write(),
 * then fsync()s it. --delay after it started (its dirty and writeback pages in memory by then),
 * the phase: the main thread maps --region with MADV_HUGEPAGE and first-touches its extents as
 * thpscale does (a byte, mincore() 256 KiB in, memset 2 MiB), each extent's outcome and latency
 * an ORACLE fault line. Then it waits for the writer and reports what it wrote and how long it
 * took. A thread, not a process: under thpemu the emulated memory is the process's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wl.h"

struct writer_opts {
	const char *region, *write, *dir;
	uint64_t delay_ns;
};

struct writer {
	pthread_t th;
	int fd;
	uint64_t len, done, t0, t_end;
	int err;
};

static void usage(const char *name)
{
	printf("usage: thpemu-wl %s [--region SIZE] [--write SIZE] [--dir DIR] [--delay DUR]\n\n"
	       "A writer thread streams a file to --dir (1 MiB writes, then fsync) while the main\n"
	       "thread, --delay after it started, faults a MADV_HUGEPAGE region extent by extent.\n"
	       "  --region    the faulted region (default 64M)\n"
	       "  --write     bytes the writer writes (default 128M)\n"
	       "  --dir       where (default $ORACLE_DISK: the guest's disk, $THPEMU_DEVICE_DIR, "
	       "$TMPDIR, /tmp)\n"
	       "  --delay     from the writer's start to the first fault (default 2s)\n",
	       name);
}

static void parse(const char *name, int argc, char **argv, struct writer_opts *o)
{
	static const struct option lo[] = {{"region", 1, 0, 'r'}, {"write", 1, 0, 'w'},
					   {"dir", 1, 0, 'd'},	  {"delay", 1, 0, 'D'},
					   {"help", 0, 0, 'h'},	  {0, 0, 0, 0}};
	int c;

	*o = (struct writer_opts){.region = "64M", .write = "128M", .delay_ns = 2000000000ULL};
	o->dir = wl_file_dir();
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'r':
			o->region = optarg;
			break;
		case 'w':
			o->write = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'D':
			if (wl_parse_duration(optarg, &o->delay_ns))
				wl_usage("--delay: '%s' is not a duration (2s)", optarg);
			break;
		}
	}
}

static void *writer_main(void *arg)
{
	static char buf[1 << 20];
	struct writer *w = arg;

	memset(buf, 0x5a, sizeof(buf));
	while (w->done < w->len) {
		size_t n =
		    w->len - w->done < sizeof(buf) ? (size_t)(w->len - w->done) : sizeof(buf);
		ssize_t r = write(w->fd, buf, n);

		if (r <= 0) {
			w->err = r < 0 ? errno : EIO;
			break;
		}
		__atomic_add_fetch(&w->done, (uint64_t)r, __ATOMIC_RELAXED);
	}
	if (!w->err && fsync(w->fd) < 0 && errno != EINVAL)
		w->err = errno;
	w->t_end = wl_now_ns();
	return NULL;
}

int wl_writer_main(const char *name, int argc, char **argv)
{
	struct writer_opts o;
	struct writer w = {0};
	struct wl_region reg;
	struct wl_fault *faults;
	char path[4096];
	uint64_t memfree, rlen, at_phase;
	size_t n;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	rlen = wl_amount("--region", o.region, memfree, WL_HPAGE);
	w.len = wl_amount("--write", o.write, memfree, 1 << 20);
	wl_start(name);
	snprintf(path, sizeof(path), "%s/thpemu-wl-writer.%d", o.dir, (int)getpid());
	w.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w.fd < 0)
		wl_die("'%s': %s", path, strerror(errno));
	wl_map(&reg, rlen);
	wl_advise(&reg, "hugepage");
	n = reg.len / WL_HPAGE;
	faults = calloc(n, sizeof(*faults));
	if (!faults)
		wl_die("out of memory");
	printf("ORACLE info memfree_kb=%llu region_bytes=%zu write_bytes=%llu dir=%s "
	       "delay_ms=%.0f\n",
	       (unsigned long long)memfree, reg.len, (unsigned long long)w.len, o.dir,
	       (double)o.delay_ns / 1e6);
	fflush(stdout);
	w.t0 = wl_now_ns();
	if (pthread_create(&w.th, NULL, writer_main, &w))
		wl_die("pthread_create failed");
	wl_sleep_ns(o.delay_ns);
	at_phase = __atomic_load_n(&w.done, __ATOMIC_RELAXED);
	wl_phase_begin();
	wl_sample(&reg);
	for (size_t i = 0; i < n; i++)
		wl_touch_extent(&reg, i, false, &faults[i]);
	wl_sample(&reg);
	wl_phase_end();
	pthread_join(w.th, NULL);
	close(w.fd);
	unlink(path);
	if (w.err)
		wl_die("writing '%s': %s", path, strerror(w.err));
	printf("ORACLE info written_at_phase_bytes=%llu writer_ms=%.1f\n",
	       (unsigned long long)at_phase, (double)(w.t_end - w.t0) / 1e6);
	wl_report_faults(&reg, faults, n);
	free(faults);
	return 0;
}
