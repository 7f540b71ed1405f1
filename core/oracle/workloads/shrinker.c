/* shrinker: the THP shrinker splitting underused huge pages under memory pressure (6.12,
 * dafff3f4c850 "mm: split underused THPs").
 *
 *   1. map --region, MADV_HUGEPAGE, and write --touch-pages 4 KiB pages of every extent (the
 *      first extent's byte faults a THP; the rest of it stays zero);
 *   2. the phase: press on memory with a filler of 4 KiB pages (MADV_NOHUGEPAGE) grown 1 MiB
 *      at a time up to --pressure (a size, or a percentage of MemFree after step 1), sampling
 *      AnonHugePages of the region, then --hold of sampling. Reclaim calls the deferred-split
 *      shrinker (mm/huge_memory.c, deferred_split_scan), which splits a THP that
 *      thp_underused() finds mostly zero: more than khugepaged/max_ptes_none zero-filled
 *      subpages, never at the default 511 (it returns false at once), and only with
 *      transparent_hugepage/shrink_underused=1. Set khugepaged/max_ptes_none below 511.
 *
 * The default pressure is more than fits (MemFree and half the region): with no swap in the
 * guest nothing but the split THPs' zero subpages can be freed, so the workload either sees
 * them split or is ended by the OOM killer (its exit status, 137, says so).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl.h"

struct shr_opts {
	const char *region;
	const char *pressure;
	unsigned touch_pages;
	uint64_t hold_ns;
};

static void usage(const char *name)
{
	printf(
	    "usage: thpemu-wl %s [--region SIZE|PCT%%] [--touch-pages N] [--pressure SIZE|PCT%%]\n"
	    "       [--hold DUR]\n\n"
	    "Sparsely written THPs, then memory pressure: does the shrinker split them?\n"
	    "  --region       the THP region (default 128M)\n"
	    "  --touch-pages  4 KiB pages written per 2 MiB extent (default 1)\n"
	    "  --pressure     filler grown to this, a size or a percentage of MemFree after the\n"
	    "                 region is faulted (default: MemFree and half the region, more\n"
	    "                 than fits unless underused THPs are split; in the guest only)\n"
	    "  --hold         sampling after the pressure (default 2s)\n",
	    name);
}

static void parse(const char *name, int argc, char **argv, struct shr_opts *o)
{
	static const struct option lo[] = {{"region", 1, 0, 'r'},      {"pressure", 1, 0, 'p'},
					   {"touch-pages", 1, 0, 't'}, {"hold", 1, 0, 'H'},
					   {"help", 0, 0, 'h'},	       {0, 0, 0, 0}};
	int c;

	*o = (struct shr_opts){.region = "128M", .touch_pages = 1, .hold_ns = 2000000000ULL};
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'r':
			o->region = optarg;
			break;
		case 'p':
			o->pressure = optarg;
			break;
		case 't':
			o->touch_pages = (unsigned)wl_parse_uint("--touch-pages", optarg, 512);
			break;
		case 'H':
			if (wl_parse_duration(optarg, &o->hold_ns))
				wl_usage("--hold: '%s' is not a duration (2s)", optarg);
			break;
		}
	}
	if (!o->touch_pages)
		wl_usage("--touch-pages: at least 1");
}

int wl_shrinker_main(const char *name, int argc, char **argv)
{
	struct wl_region reg, filler;
	struct shr_opts o;
	uint64_t rlen, plen, memfree;
	size_t n, huge_before, final_huge, every;

	parse(name, argc, argv, &o);
	rlen = wl_amount("--region", o.region, wl_meminfo_kb("MemFree"), WL_HPAGE);
	wl_start(name);
	wl_map(&reg, rlen);
	n = reg.len / WL_HPAGE;
	wl_advise(&reg, "hugepage");
	for (size_t i = 0; i < n; i++)
		for (unsigned p = 0; p < o.touch_pages; p++)
			reg.base[i * WL_HPAGE +
				 (size_t)p * (WL_HPAGE / o.touch_pages / WL_PAGE) * WL_PAGE] = 1;
	huge_before = wl_anonhuge_kb(&reg) / 2048;
	memfree = wl_meminfo_kb("MemFree");
	if (!o.pressure) {
		wl_check_relative("--pressure (its default)", true);
		plen = memfree * 1024 + reg.len / 2;
	} else {
		plen = wl_amount("--pressure", o.pressure, memfree, 0);
	}
	printf("ORACLE info region_bytes=%zu touch_pages=%u memfree_kb=%llu pressure_bytes=%llu "
	       "huge_before=%zu\n",
	       reg.len, o.touch_pages, (unsigned long long)memfree, (unsigned long long)plen,
	       huge_before);
	wl_map(&filler, plen ? plen : WL_HPAGE);
	wl_advise(&filler, "nohugepage");
	every = plen / 64 > (1 << 20) ? plen / 64 : 1 << 20;
	wl_phase_begin();
	wl_sample(&reg);
	for (size_t off = 0; off < plen; off += WL_PAGE) {
		filler.base[off] = 1;
		if ((off + WL_PAGE) % every == 0)
			wl_sample(&reg);
	}
	wl_sample_for(&reg, o.hold_ns, 200 * 1000 * 1000, false);
	wl_phase_end();
	wl_print_phase();
	final_huge = wl_print_extents(&reg);
	printf("ORACLE summary extents=%zu huge_before=%zu final_huge=%zu split=%zu "
	       "anonhuge_kb=%llu\n",
	       n, huge_before, final_huge, huge_before > final_huge ? huge_before - final_huge : 0,
	       (unsigned long long)wl_anonhuge_kb(&reg));
	fflush(stdout);
	return 0;
}
