/* thpscale: mmtests' thpscale pattern (shellpack_src/src/thpscale/thpscale.c), fragmentation
 * made inside the process:
 *
 *   1. map --anon (a size or a percentage of MemFree), touch it all, then munmap the first
 *      half of every aligned 2 MiB: half-full pageblocks. The anon memory is touched with
 *      4 KiB pages (--anon-advise nohugepage, the default): a THP partly unmapped would be
 *      split at once by 3.x (split_huge_page) but only queued on 6.12 (deferred_split_folio,
 *      its 512 frames staying allocated until the shrinker runs), so huge-backed holes would
 *      not be holes on a modern kernel;
 *   2. write a file of half the holes' size (--file-dir: $ORACLE_DISK when the guest has a
 *      disk, else $TMPDIR or /tmp): its page-cache pages land in the holes (an order-0
 *      allocation splits the smallest free block first, mm/page_alloc.c __rmqueue_smallest);
 *   3. the phase: map a region of half the holes' size, MADV_HUGEPAGE, and --threads threads
 *      first-touch its extents (thread t takes extents t, t + T, ...), each as thpscale does:
 *      a byte, mincore() 256 KiB in, memset 2 MiB.
 *
 * The proportions are mmtests': anon 80 % of memory, a file of a quarter of it, THP faults of a
 * quarter (nr_hpages = total / threads / 2 MiB / 2). The default --anon is 90 % of MemFree, as
 * the guest has nothing else in memory: what --anon leaves free is unfragmented.
 *
 * thpcompact.c is mmtests' thpcompact: every thread fragments its own share.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "wl.h"

struct scale_opts {
	const char *anon;
	const char *anon_advise;
	const char *file_dir;
	unsigned threads;
	uint64_t interval_ns;
};

struct worker {
	pthread_t th;
	const struct wl_region *reg;
	struct wl_fault *faults;
	size_t first, step, n;
	pthread_barrier_t *bar;
	size_t *done; /* extents touched, all workers */
};

static void usage(const char *name)
{
	printf(
	    "usage: thpemu-wl %s [--anon SIZE|PCT%%] [--anon-advise nohugepage|none|hugepage]\n"
	    "       [--file-dir DIR] [--threads N] [--interval DUR]\n\n"
	    "mmtests' thpscale: half of every 2 MiB of an anonymous mapping unmapped, half the\n"
	    "holes refilled with a file's page cache, then THP faults of the other half's size.\n"
	    "  --anon         the fragmented mapping: a size or a percentage of MemFree (default\n"
	    "                 90%%; percentages only in the guest)\n"
	    "  --anon-advise  how it is touched (default nohugepage: 4 KiB pages, real holes)\n"
	    "  --file-dir     where the file goes (default $ORACLE_DISK, $THPEMU_DEVICE_DIR, "
	    "$TMPDIR, /tmp)\n"
	    "  --threads      threads faulting the region (default 1)\n"
	    "  --interval     AnonHugePages sampled this often during the faults (100ms)\n",
	    name);
}

static void parse(const char *name, int argc, char **argv, struct scale_opts *o)
{
	static const struct option lo[] = {{"anon", 1, 0, 'a'},
					   {"anon-advise", 1, 0, 'A'},
					   {"file-dir", 1, 0, 'd'},
					   {"threads", 1, 0, 't'},
					   {"interval", 1, 0, 'i'},
					   {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	int c;

	*o = (struct scale_opts){.anon = "90%",
				 .anon_advise = "nohugepage",
				 .interval_ns = 100 * 1000 * 1000,
				 .threads = 1};
	o->file_dir = wl_file_dir();
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'a':
			o->anon = optarg;
			break;
		case 'A':
			if (strcmp(optarg, "hugepage") && strcmp(optarg, "none") &&
			    strcmp(optarg, "nohugepage"))
				wl_usage("--anon-advise: '%s' is not nohugepage, none or hugepage",
					 optarg);
			o->anon_advise = optarg;
			break;
		case 'd':
			o->file_dir = optarg;
			break;
		case 't':
			o->threads = (unsigned)wl_parse_uint("--threads", optarg, 64);
			break;
		case 'i':
			if (wl_parse_duration(optarg, &o->interval_ns) || !o->interval_ns)
				wl_usage("--interval: '%s' is not a duration (100ms)", optarg);
			break;
		}
	}
	if (!o->threads)
		wl_usage("--threads: at least 1");
}

/* munmap the first 1 MiB of every 2 MiB: the holes. */
static size_t punch(const struct wl_region *anon)
{
	size_t n = anon->len / WL_HPAGE;

	memset(anon->base, 1, anon->len);
	for (size_t i = 0; i < n; i++)
		if (munmap(anon->base + i * WL_HPAGE, WL_HPAGE / 2) < 0)
			wl_die("munmap: %s", strerror(errno));
	return n * (WL_HPAGE / 2);
}

/* Write len bytes to a new file in dir: page cache in the holes. Unlinked at once (the pages
 * stay while it is open). */
static int refill(const char *dir, size_t len)
{
	static char buf[1 << 20];
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/thpemu-wl-thpscale.%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		wl_die("'%s': %s", path, strerror(errno));
	unlink(path);
	memset(buf, 0x5a, sizeof(buf));
	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t w = write(fd, buf, n);

		if (w <= 0)
			wl_die("writing '%s': %s", path, w < 0 ? strerror(errno) : "short write");
		done += (size_t)w;
	}
	if (fdatasync(fd) < 0 && errno != EINVAL)
		wl_die("fdatasync '%s': %s", path, strerror(errno));
	return fd;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->bar);
	for (size_t i = w->first; i < w->n; i += w->step) {
		wl_touch_extent(w->reg, i, false, &w->faults[i]);
		__atomic_add_fetch(w->done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int wl_thpscale_main(const char *name, int argc, char **argv)
{
	struct scale_opts o;
	struct wl_region anon, reg;
	struct worker *w;
	struct wl_fault *faults;
	pthread_barrier_t bar;
	uint64_t memfree, alen;
	size_t holes, n, done = 0;
	int fd;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	alen = wl_amount("--anon", o.anon, memfree, 2 * WL_HPAGE);
	wl_start(name);
	wl_map(&anon, alen);
	wl_advise(&anon, o.anon_advise);
	holes = punch(&anon);
	fd = refill(o.file_dir, holes / 2);
	wl_map(&reg, holes / 2);
	n = reg.len / WL_HPAGE;
	printf("ORACLE info memfree_kb=%llu anon_bytes=%zu holes_bytes=%zu file_bytes=%zu "
	       "file_dir=%s region_bytes=%zu threads=%u\n",
	       (unsigned long long)memfree, anon.len, holes, holes / 2, o.file_dir, reg.len,
	       o.threads);
	faults = calloc(n, sizeof(*faults));
	w = calloc(o.threads, sizeof(*w));
	if (!faults || !w)
		wl_die("out of memory");
	wl_advise(&reg, "hugepage");
	pthread_barrier_init(&bar, NULL, o.threads + 1);
	for (unsigned t = 0; t < o.threads; t++) {
		w[t] = (struct worker){.reg = &reg,
				       .faults = faults,
				       .first = t,
				       .step = o.threads,
				       .n = n,
				       .bar = &bar,
				       .done = &done};
		if (pthread_create(&w[t].th, NULL, worker_main, &w[t]))
			wl_die("pthread_create failed");
	}
	wl_phase_begin();
	wl_sample(&reg);
	pthread_barrier_wait(&bar);
	while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n) {
		wl_sleep_ns(o.interval_ns);
		wl_sample(&reg);
	}
	for (unsigned t = 0; t < o.threads; t++)
		pthread_join(w[t].th, NULL);
	wl_sample(&reg);
	wl_phase_end();
	wl_report_faults(&reg, faults, n);
	close(fd);
	free(w);
	free(faults);
	return 0;
}
