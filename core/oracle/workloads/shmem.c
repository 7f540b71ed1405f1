/* shmem: shared memory THP, first touch of a shared region.
 *
 *   0. optionally fragment free memory first, as fragfault does (--fill, --keep: wl_fill);
 *   1. map --region of shared memory at a 2 MiB aligned address, file offset 0 there (reserve,
 *      then MAP_FIXED over it: huge needs the address and the file index congruent modulo
 *      2 MiB, mm/huge_memory.c thp_vma_suitable_order), of one --kind:
 *        anon   MAP_SHARED|MAP_ANONYMOUS (shmem_zero_setup: anonymous shmem, whose huge is
 *               transparent_hugepage/shmem_enabled and the per-size shmem_enabled, 6.12)
 *        memfd  memfd_create (a file of the internal mount: shmem_enabled)
 *        file   a file in --dir (default /dev/shm: in a guest the tmpfs /init mounts with
 *               `--set tmpfs.huge=MODE`; under thpemu the host's /dev/shm, policy tmpfs-huge)
 *      and advise it (--advise hugepage|none|nohugepage);
 *   2. the phase: first-touch each 2 MiB extent as thpscale does (a byte, mincore() 256 KiB in,
 *      the whole extent; mincore of a shared mapping asks the page cache, so a huge folio reads
 *      resident at once); with --fork a child touches the second half first and exits, then the
 *      parent the first half and reads the child's half (mapping what the child allocated: the
 *      object is shared by two processes);
 *   3. each extent's outcome at the end (pagemap + /proc/kpageflags), the summary with
 *      ShmemHugePages in a guest. Under thpemu the host's frames are not the emulated ones (the
 *      emulator fills a shmem folio's pages one by one, core/live/shmem.c), so the extents are
 *      `unknown` there: the counters (thp_file_alloc, thp_file_fallback) and the first-touch
 *      test carry the comparison.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl.h"

extern int thpemu_active(void) __attribute__((weak));

struct shmem_opts {
	const char *fill;
	unsigned keep;
	const char *kind;
	const char *dir;
	const char *region;
	const char *advise;
	bool fork;
	uint64_t seed;
};

static void usage(const char *name)
{
	printf(
	    "usage: thpemu-wl %s [--kind anon|memfd|file] [--dir DIR] [--region SIZE|PCT%%]\n"
	    "       [--advise hugepage|none|nohugepage] [--fork] [--fill SIZE|PCT%%] [--keep N]\n"
	    "       [--seed N]\n\n"
	    "Map a shared region and first-touch every 2 MiB extent; print each extent's\n"
	    "outcome and the shmem THP counters (core/oracle/README.md).\n"
	    "  --kind     anon: MAP_SHARED|MAP_ANONYMOUS (default); memfd: memfd_create; file:\n"
	    "             a file in --dir\n"
	    "  --dir      the tmpfs of --kind file (default /dev/shm; in a guest give the oracle\n"
	    "             --set tmpfs.huge=MODE, which mounts it)\n"
	    "  --region   the region: a size or a percentage of MemFree (default 64M)\n"
	    "  --advise   madvise of the region before the faults (default none)\n"
	    "  --fork     a child touches the second half first, then the parent the first\n"
	    "             half, and maps the child's\n"
	    "  --fill     fragment first: fill this much free memory with 4 KiB pages and keep\n"
	    "             one in --keep (as fragfault; default 0: none)\n"
	    "  --keep N   keep one 4 KiB page of the filler in every N (default 2)\n"
	    "  --seed     which filler page of each group is kept (default $ORACLE_SEED, else 1)\n",
	    name);
}

static void parse(const char *name, int argc, char **argv, struct shmem_opts *o)
{
	static const struct option lo[] = {
	    {"kind", 1, 0, 'k'}, {"dir", 1, 0, 'd'},  {"region", 1, 0, 'r'}, {"advise", 1, 0, 'a'},
	    {"fork", 0, 0, 'f'}, {"fill", 1, 0, 'F'}, {"keep", 1, 0, 'K'},   {"seed", 1, 0, 's'},
	    {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	int c;

	*o = (struct shmem_opts){.fill = "0",
				 .keep = 2,
				 .kind = "anon",
				 .dir = "/dev/shm",
				 .region = "64M",
				 .advise = "none"};
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'k':
			if (strcmp(optarg, "anon") && strcmp(optarg, "memfd") &&
			    strcmp(optarg, "file"))
				wl_usage("--kind: '%s' is not anon, memfd or file", optarg);
			o->kind = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case 'r':
			o->region = optarg;
			break;
		case 'a':
			o->advise = wl_parse_advice("--advise", optarg);
			break;
		case 'f':
			o->fork = true;
			break;
		case 'F':
			o->fill = optarg;
			break;
		case 'K':
			o->keep = (unsigned)wl_parse_uint("--keep", optarg, 1u << 20);
			break;
		case 's':
			o->seed = wl_parse_uint("--seed", optarg, UINT64_MAX);
			break;
		}
	}
	if (!o->keep)
		wl_usage("--keep: 0 is not a group size (1 keeps every page)");
}

/* The object's descriptor (-1 for anon); path set for a file (unlinked at the end). */
static int open_object(const struct shmem_opts *o, size_t len, char *path, size_t plen)
{
	int fd = -1;

	path[0] = '\0';
	if (!strcmp(o->kind, "anon"))
		return -1;
	if (!strcmp(o->kind, "memfd")) {
		fd = memfd_create("thpemu-wl-shmem", MFD_CLOEXEC);
		if (fd < 0)
			wl_die("memfd_create: %s", strerror(errno));
	} else {
		snprintf(path, plen, "%s/thpemu-wl-shmem.XXXXXX", o->dir);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			wl_die("a file in %s: %s%s", o->dir, strerror(errno),
			       errno == ENOENT
				   ? " (in a guest: --set tmpfs.huge=MODE mounts /dev/shm)"
				   : "");
	}
	if (ftruncate(fd, (off_t)len) < 0)
		wl_die("ftruncate %zu: %s", len, strerror(errno));
	return fd;
}

/* A 2 MiB aligned shared mapping of len, file offset 0 at its start. The reservation is
 * read-only: thpemu manages a private PROT_NONE or read-write reservation as anonymous memory
 * (core/live/mapops.c eligible_shape), and would take the shared mapping over it for one. */
static void map_shared(struct wl_region *r, size_t len, int fd)
{
	char *p = mmap(NULL, len + WL_HPAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	char *a, *m;

	if (p == MAP_FAILED)
		wl_die("reserve %zu bytes: %s", len, strerror(errno));
	a = (char *)(((uintptr_t)p + WL_HPAGE - 1) & ~(WL_HPAGE - 1));
	m = mmap(a, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0);
	if (m == MAP_FAILED)
		wl_die("mmap shared %zu bytes: %s", len, strerror(errno));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + len < p + len + WL_HPAGE)
		munmap(a + len, (size_t)(p + len + WL_HPAGE - (a + len)));
	r->base = a;
	r->len = len;
}

/* The child's half: its faults back to the parent through a pipe. */
static void child_half(const struct wl_region *r, size_t from, size_t n, struct wl_fault *f)
{
	int fds[2], status = 0;
	size_t want = (n - from) * sizeof(*f), got = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		wl_die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		wl_die("fork: %s", strerror(errno));
	if (!pid) {
		const char *p;
		size_t left = want;

		close(fds[0]);
		for (size_t i = from; i < n; i++)
			wl_touch_extent(r, i, false, &f[i]);
		for (p = (const char *)&f[from]; left;) {
			ssize_t w = write(fds[1], p, left);

			if (w <= 0)
				_exit(1);
			p += w;
			left -= (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	while (got < want) {
		ssize_t k = read(fds[0], (char *)&f[from] + got, want - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != want || !WIFEXITED(status) || WEXITSTATUS(status))
		wl_die("the fork child's half: %zu of %zu bytes of results, status %d", got, want,
		       status);
}

int wl_shmem_main(const char *name, int argc, char **argv)
{
	bool emulated = thpemu_active && thpemu_active();
	struct shmem_opts o;
	struct wl_region filler, reg;
	struct wl_fault *faults;
	uint64_t memfree, fill, rlen, rng;
	char path[512];
	size_t n, half;
	int fd;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	fill = wl_amount("--fill", o.fill, memfree, 0);
	rlen = wl_amount("--region", o.region, memfree, WL_HPAGE);
	rlen = (rlen + WL_HPAGE - 1) & ~(WL_HPAGE - 1);
	o.seed = wl_seed(o.seed);
	rng = o.seed;
	wl_start(name);
	printf("ORACLE info memfree_kb=%llu fill_bytes=%llu keep=%u region_bytes=%llu kind=%s "
	       "advise=%s fork=%d seed=%llu\n",
	       (unsigned long long)memfree, (unsigned long long)fill, o.keep,
	       (unsigned long long)rlen, o.kind, o.advise, o.fork, (unsigned long long)o.seed);
	wl_fill(&filler, fill, o.keep, false, &rng);
	fd = open_object(&o, rlen, path, sizeof(path));
	map_shared(&reg, rlen, fd);
	n = reg.len / WL_HPAGE;
	half = o.fork ? n / 2 : n;
	faults = calloc(n, sizeof(*faults));
	if (!faults)
		wl_die("out of memory");
	wl_advise(&reg, o.advise);
	wl_phase_begin();
	if (half < n)
		child_half(&reg, half, n, faults);
	for (size_t i = 0; i < half; i++)
		wl_touch_extent(&reg, i, false, &faults[i]);
	/* map the child's half here too: a read of each page the object has in its page cache */
	for (size_t off = half * WL_HPAGE; off < reg.len; off += WL_PAGE)
		(void)((volatile char *)reg.base)[off];
	wl_phase_end();
	if (emulated) {
		/* the host's frames are not the emulated folios: no extent reading here */
		wl_print_phase();
		wl_print_faults(faults, n);
		for (size_t i = 0; i < n; i++)
			printf("ORACLE extent %zu unknown\n", i);
	} else {
		wl_print_phase();
		wl_print_faults(faults, n);
		wl_print_extents(&reg);
	}
	{
		size_t huge = 0;
		char lat[160];

		for (size_t i = 0; i < n; i++)
			huge += faults[i].huge;
		wl_latency_summary(faults, n, lat, sizeof(lat));
		printf("ORACLE summary extents=%zu huge=%zu base=%zu huge_pct=%.1f %s", n, huge,
		       n - huge, 100.0 * (double)huge / (double)n, lat);
		if (!emulated) /* the machine's, in a guest: /proc/meminfo ShmemHugePages */
			printf(" shmem_huge_kb=%llu",
			       (unsigned long long)wl_meminfo_kb("ShmemHugePages"));
		printf("\n");
	}
	fflush(stdout);
	munmap(reg.base, reg.len);
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
	free(faults);
	return 0;
}
