/* fragfault, unevictable, mthp: fragment free memory, then fault a region.
 *
 *   1. fill --fill of the free memory (a size, or a percentage of MemFree) with 4 KiB pages
 *      (MADV_NOHUGEPAGE), then free all but one page in every --keep: the kept pages pin their
 *      pageblocks, so a 2 MiB block needs compaction (or is impossible if they cannot move);
 *      --mlock makes the kept pages unevictable (mlock2 MLOCK_ONFAULT: the freed ones are not
 *      faulted back), which compaction skips when vm.compact_unevictable_allowed=0
 *      (mm/compaction.c, isolate_migratepages_block: PageUnevictable);
 *   2. the phase: map --region, advise it (--advise hugepage|none|nohugepage), first-touch each
 *      2 MiB extent as thpscale does (a byte, mincore() 256 KiB in, then the whole extent; with
 *      --touch page a byte per 4 KiB page instead of the memset), sampling AnonHugePages;
 *      then --hold DUR of sampling (kcompactd, khugepaged, a deferred split may act meanwhile);
 *   3. each extent's outcome at the end, the folio orders, the summary.
 *
 * The three names are presets of the same steps: fragfault (--fill 90% --keep 2 --region 128M
 * --advise hugepage), unevictable (the same with --mlock), mthp (--fill 0 --region 64M --advise
 * none --touch page: the per-size enables decide the folio sizes).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl.h"

struct fault_opts {
	const char *fill;
	unsigned keep;
	bool mlock;
	const char *region;
	const char *advise;
	bool per_page;
	uint64_t hold_ns;
	uint64_t seed;
	unsigned samples;
};

static void usage(const char *name)
{
	printf(
	    "usage: thpemu-wl %s [--fill SIZE|PCT%%] [--keep N] [--mlock] [--region SIZE|PCT%%]\n"
	    "       [--advise hugepage|none|nohugepage] [--touch extent|page] [--hold DUR]\n"
	    "       [--samples N] [--seed N]\n\n"
	    "Fill free memory with 4 KiB pages and keep one in N, then first-touch every 2 MiB\n"
	    "extent of a region; print each extent's outcome (core/oracle/README.md).\n"
	    "  --fill     memory to fill, a size or a percentage of MemFree (percentages only in\n"
	    "             the guest); 0: no fragmentation\n"
	    "  --keep N   keep one 4 KiB page in every N of the filler (1: keep all)\n"
	    "  --mlock    make the kept filler pages unevictable (mlock2 MLOCK_ONFAULT)\n"
	    "  --region   the region faulted: a size or a percentage of MemFree\n"
	    "  --advise   madvise of the region before the faults\n"
	    "  --touch    extent: a byte, mincore, memset 2 MiB (thpscale); page: a byte per page\n"
	    "  --hold     keep sampling AnonHugePages this long after the faults (e.g. 5s)\n"
	    "  --samples  AnonHugePages samples during the faults (default 32)\n"
	    "  --seed     which page of each group is kept (default $ORACLE_SEED, else 1)\n",
	    name);
}

static void presets(const char *name, struct fault_opts *o)
{
	*o = (struct fault_opts){
	    .fill = "90%", .keep = 2, .region = "128M", .advise = "hugepage", .samples = 32};
	if (!strcmp(name, "unevictable"))
		o->mlock = true;
	if (!strcmp(name, "mthp")) {
		o->fill = "0";
		o->region = "64M";
		o->advise = "none";
		o->per_page = true;
	}
}

static void parse(const char *name, int argc, char **argv, struct fault_opts *o)
{
	static const struct option lo[] = {{"fill", 1, 0, 'f'},	  {"keep", 1, 0, 'k'},
					   {"mlock", 0, 0, 'l'},  {"region", 1, 0, 'r'},
					   {"advise", 1, 0, 'a'}, {"touch", 1, 0, 't'},
					   {"hold", 1, 0, 'H'},	  {"samples", 1, 0, 'S'},
					   {"seed", 1, 0, 's'},	  {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	int c;

	presets(name, o);
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'f':
			o->fill = optarg;
			break;
		case 'k':
			o->keep = (unsigned)wl_parse_uint("--keep", optarg, 1u << 20);
			break;
		case 'l':
			o->mlock = true;
			break;
		case 'r':
			o->region = optarg;
			break;
		case 'a':
			o->advise = wl_parse_advice("--advise", optarg);
			break;
		case 't':
			if (strcmp(optarg, "extent") && strcmp(optarg, "page"))
				wl_usage("--touch: '%s' is not extent or page", optarg);
			o->per_page = !strcmp(optarg, "page");
			break;
		case 'H':
			if (wl_parse_duration(optarg, &o->hold_ns))
				wl_usage("--hold: '%s' is not a duration (500ms, 5s)", optarg);
			break;
		case 'S':
			o->samples = (unsigned)wl_parse_uint("--samples", optarg, 1024);
			break;
		case 's':
			o->seed = wl_parse_uint("--seed", optarg, UINT64_MAX);
			break;
		}
	}
	if (!o->keep)
		wl_usage("--keep: 0 is not a group size (1 keeps every page)");
}

int wl_fault_main(const char *name, int argc, char **argv)
{
	struct fault_opts o;
	struct wl_region filler, reg;
	struct wl_fault *faults;
	uint64_t memfree, fill, rlen, rng;
	size_t n, every;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	fill = wl_amount("--fill", o.fill, memfree, 0);
	rlen = wl_amount("--region", o.region, memfree, WL_HPAGE);
	o.seed = wl_seed(o.seed);
	rng = o.seed;
	wl_start(name);
	printf("ORACLE info memfree_kb=%llu fill_bytes=%llu keep=%u mlock=%d region_bytes=%llu "
	       "advise=%s touch=%s seed=%llu\n",
	       (unsigned long long)memfree, (unsigned long long)fill, o.keep, o.mlock,
	       (unsigned long long)rlen, o.advise, o.per_page ? "page" : "extent",
	       (unsigned long long)o.seed);
	wl_fill(&filler, fill, o.keep, o.mlock, &rng);
	wl_map(&reg, rlen);
	n = reg.len / WL_HPAGE;
	faults = calloc(n, sizeof(*faults));
	if (!faults)
		wl_die("out of memory");
	every = o.samples ? (n + o.samples - 1) / o.samples : n + 1;
	wl_advise(&reg, o.advise);
	wl_phase_begin();
	for (size_t i = 0; i < n; i++) {
		wl_touch_extent(&reg, i, o.per_page, &faults[i]);
		if ((i + 1) % every == 0 || i + 1 == n)
			wl_sample(&reg);
	}
	wl_sample_for(&reg, o.hold_ns, 100 * 1000 * 1000, false);
	wl_phase_end();
	wl_report_faults(&reg, faults, n);
	free(faults);
	return 0;
}
