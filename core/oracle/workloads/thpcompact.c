/* thpcompact: mmtests' THP allocation and compaction stress (gormanm/mmtests,
 * shellpack_src/src/thpcompact/thpcompact.c, run by thpcompact-bench), in the suite's protocol.
 *
 * mmtests' program splits a map size between N threads; each thread on its own, all at once:
 *   1. maps its share (2 MiB aligned), MADV_HUGEPAGE, memset: THPs where the kernel can;
 *   2. munmaps the first 1 MiB of every 2 MiB of it: on a modern kernel a partly unmapped THP is
 *      split at its PMD and queued for deferred split (mm/huge_memory.c deferred_split_folio,
 *      6.12): its unmapped half is freed only when the deferred-split shrinker runs
 *      (deferred_split_scan, under memory pressure), not at munmap;
 *   3. maps a second region of half its share, MADV_HUGEPAGE, not faulted;
 *   4. reads a quarter of its share of a file (mmap + a byte per page): page cache into the holes;
 *   5. waits for every thread, then faults nr_hpages = share / 2 MiB / 2 extents of the second
 *      region, each as thpscale does: a byte, mincore() 256 KiB in (huge or base), memset 2 MiB.
 *
 * What differs here, and why: mmtests writes its file before the run and drops the page cache
 * (echo 3 > drop_caches), so step 4's reads allocate. A guest without a disk has only tmpfs,
 * whose pages cannot be dropped and would be allocated before the holes exist; so each thread
 * writes its quarter (pwrite at its own offset, as mmtests' stripes) after punching and then
 * reads it through a mapping: the page cache is allocated into the holes either way
 * (--file-dir: $ORACLE_DISK with a disk, else $TMPDIR or /tmp). The second regions are one
 * mapping, thread t faulting its own contiguous part, so that the extents are reported as one
 * region; the phase (counters, samples) is step 5.
 *
 * The default --anon is 70 % of MemFree: at the end the process holds half its map size (what
 * munmap left, once split), a quarter as page cache and a half faulted, 1.25 times the map size;
 * a guest's file is on tmpfs, which nothing reclaims without swap, so at 80 % a 512 MiB 6.12
 * guest OOM-killed it on every boot (exit 137 during the faults); at 70 % 6.1 still did on one
 * boot of three (tests/results/2026-12-06-fidelity-suite-2.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl.h"

struct compact_opts {
	const char *total;
	const char *anon_advise;
	const char *file_dir;
	unsigned threads;
	uint64_t interval_ns;
};

struct cthread {
	pthread_t th;
	size_t share;		     /* bytes of this thread's first mapping */
	const struct wl_region *reg; /* the second regions, all threads' */
	struct wl_fault *faults;
	size_t first, n; /* extents [first, first + n) of reg */
	const char *advise;
	int fd;
	off_t off; /* its stripe of the file */
	pthread_barrier_t *init, *go;
	size_t *done;
	char err[160];
	long sum;
};

static void usage(const char *name)
{
	printf(
	    "usage: thpemu-wl %s [--anon SIZE|PCT%%] [--threads N]\n"
	    "       [--anon-advise hugepage|none|nohugepage] [--file-dir DIR] [--interval DUR]\n\n"
	    "mmtests' thpcompact: each thread maps its share of --anon, faults it (THPs),\n"
	    "munmaps the first 1 MiB of every 2 MiB, reads a quarter of its share of a file\n"
	    "(page cache into the holes); then all fault their MADV_HUGEPAGE extents at once,\n"
	    "half the share each.\n"
	    "  --anon         the map size, split between the threads: a size or a percentage\n"
	    "                 of MemFree (default 70%%; percentages only in the guest)\n"
	    "  --threads      threads (default 4)\n"
	    "  --anon-advise  the first mappings' advice (default hugepage, as mmtests)\n"
	    "  --file-dir     where the file goes (default $ORACLE_DISK, $THPEMU_DEVICE_DIR, "
	    "$TMPDIR, /tmp)\n"
	    "  --interval     AnonHugePages sampled this often during the faults (100ms)\n",
	    name);
}

static void parse(const char *name, int argc, char **argv, struct compact_opts *o)
{
	static const struct option lo[] = {{"anon", 1, 0, 'a'},
					   {"anon-advise", 1, 0, 'A'},
					   {"file-dir", 1, 0, 'd'},
					   {"threads", 1, 0, 't'},
					   {"interval", 1, 0, 'i'},
					   {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	int c;

	*o = (struct compact_opts){.total = "70%",
				   .anon_advise = "hugepage",
				   .interval_ns = 100 * 1000 * 1000,
				   .threads = 4};
	o->file_dir = wl_file_dir();
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'a':
			o->total = optarg;
			break;
		case 'A':
			o->anon_advise = wl_parse_advice("--anon-advise", optarg);
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

/* Steps 1-4, in the thread; 0 or -1 with t->err. */
static int init_thread(struct cthread *t)
{
	static const char page[WL_PAGE] = {0x5a};
	size_t flen = t->share / 4;
	struct wl_region first;
	char *map;

	wl_map(&first, t->share);
	wl_advise(&first, t->advise);
	memset(first.base, 1, first.len);
	for (char *p = first.base; p + WL_HPAGE / 2 < first.base + first.len; p += WL_HPAGE)
		if (munmap(p, WL_HPAGE / 2) < 0) {
			snprintf(t->err, sizeof(t->err), "munmap: %s", strerror(errno));
			return -1;
		}
	for (size_t done = 0; done < flen; done += WL_PAGE)
		if (pwrite(t->fd, page, WL_PAGE, t->off + (off_t)done) != (ssize_t)WL_PAGE) {
			snprintf(t->err, sizeof(t->err), "writing the file: %s", strerror(errno));
			return -1;
		}
	map = mmap(NULL, flen, PROT_READ, MAP_SHARED, t->fd, t->off);
	if (map == MAP_FAILED) {
		snprintf(t->err, sizeof(t->err), "mapping the file: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < flen; i += WL_PAGE)
		t->sum += map[i];
	return 0;
}

static void *thread_main(void *arg)
{
	struct cthread *t = arg;
	int rc = init_thread(t);

	pthread_barrier_wait(t->init);
	pthread_barrier_wait(t->go);
	if (rc)
		return NULL;
	for (size_t i = t->first; i < t->first + t->n; i++) {
		wl_touch_extent(t->reg, i, false, &t->faults[i]);
		__atomic_add_fetch(t->done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int wl_thpcompact_main(const char *name, int argc, char **argv)
{
	struct compact_opts o;
	struct wl_region reg;
	struct cthread *t;
	struct wl_fault *faults;
	pthread_barrier_t init, go;
	char path[4096];
	uint64_t memfree, total;
	size_t share, per, n, done = 0;
	int fd;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	total = wl_amount("--anon", o.total, memfree, 2 * WL_HPAGE);
	/* mmtests: thread_size = total / threads, 2 MiB aligned; nr_hpages = total / threads /
	 * 2 MiB / 2 */
	share = (size_t)(total / o.threads) & ~(WL_HPAGE - 1);
	per = (size_t)(total / o.threads / WL_HPAGE / 2);
	if (!share || !per)
		wl_usage("--anon: at least %u MiB for %u threads", 4 * o.threads, o.threads);
	wl_start(name);
	snprintf(path, sizeof(path), "%s/thpemu-wl-thpcompact.%d", o.file_dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		wl_die("'%s': %s", path, strerror(errno));
	unlink(path);
	n = per * o.threads;
	wl_map(&reg, n * WL_HPAGE);
	wl_advise(&reg, "hugepage");
	faults = calloc(n, sizeof(*faults));
	t = calloc(o.threads, sizeof(*t));
	if (!faults || !t)
		wl_die("out of memory");
	pthread_barrier_init(&init, NULL, o.threads + 1);
	pthread_barrier_init(&go, NULL, o.threads + 1);
	for (unsigned i = 0; i < o.threads; i++) {
		t[i] = (struct cthread){.share = share,
					.reg = &reg,
					.faults = faults,
					.first = i * per,
					.n = per,
					.advise = o.anon_advise,
					.fd = fd,
					.off = (off_t)(share * i),
					.init = &init,
					.go = &go,
					.done = &done};
		if (pthread_create(&t[i].th, NULL, thread_main, &t[i]))
			wl_die("pthread_create failed");
	}
	pthread_barrier_wait(&init);
	for (unsigned i = 0; i < o.threads; i++)
		if (t[i].err[0])
			wl_die("thread %u: %s", i, t[i].err);
	printf("ORACLE info memfree_kb=%llu anon_bytes=%llu threads=%u share_bytes=%zu "
	       "file_bytes=%zu file_dir=%s region_bytes=%zu anon_advise=%s\n",
	       (unsigned long long)memfree, (unsigned long long)total, o.threads, share,
	       share / 4 * o.threads, o.file_dir, reg.len, o.anon_advise);
	wl_phase_begin();
	wl_sample(&reg);
	pthread_barrier_wait(&go);
	while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n) {
		wl_sleep_ns(o.interval_ns);
		wl_sample(&reg);
	}
	for (unsigned i = 0; i < o.threads; i++)
		pthread_join(t[i].th, NULL);
	wl_sample(&reg);
	wl_phase_end();
	wl_report_faults(&reg, faults, n);
	close(fd);
	free(t);
	free(faults);
	return 0;
}
