/* khugepaged, collapse: huge pages made after the fact.
 *
 * Both fault a --region with 4 KiB pages first (MADV_NOHUGEPAGE while touching every page), after
 * an optional fragmenting filler (--fill, --keep as fragfault), then MADV_HUGEPAGE it: that
 * clears VM_NOHUGEPAGE and registers the mm with khugepaged (mm/khugepaged.c,
 * khugepaged_enter_vma from hugepage_madvise).
 *
 *   khugepaged  the phase waits up to --wait, sampling AnonHugePages every --interval, and ends
 *               early once the whole region is huge. khugepaged's pace is its knobs': set
 *               khugepaged/scan_sleep_millisecs and alloc_sleep_millisecs (10 s and 60 s by
 *               default) for a short test.
 *   collapse    the phase is MADV_COLLAPSE of each extent in turn (6.1+, mm/khugepaged.c
 *               madvise_collapse): its return value and errno per extent, and its time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "wl.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

struct kh_opts {
	const char *fill;
	unsigned keep;
	const char *region;
	uint64_t wait_ns;
	uint64_t interval_ns;
	uint64_t seed;
};

static void usage(const char *name)
{
	printf("usage: thpemu-wl %s [--region SIZE|PCT%%] [--fill SIZE|PCT%%] [--keep N]%s\n\n"
	       "Fault a region with 4 KiB pages, MADV_HUGEPAGE it, then %s.\n"
	       "  --region    the region (default 64M)\n"
	       "  --fill      fragment first, as fragfault (default 0)\n"
	       "  --keep N    keep one filler page in N (default 2)\n"
	       "%s"
	       "  --seed      which filler pages are kept (default $ORACLE_SEED, else 1)\n",
	       name, strcmp(name, "collapse") ? " [--wait DUR] [--interval DUR]" : "",
	       strcmp(name, "collapse") ? "wait for khugepaged to collapse it"
					: "MADV_COLLAPSE each 2 MiB extent",
	       strcmp(name, "collapse")
		   ? "  --wait      the longest wait (default 20s)\n"
		     "  --interval  AnonHugePages sampled this often (default 500ms)\n"
		   : "");
}

static void parse(const char *name, int argc, char **argv, struct kh_opts *o)
{
	static const struct option lo[] = {
	    {"region", 1, 0, 'r'},   {"fill", 1, 0, 'f'}, {"keep", 1, 0, 'k'}, {"wait", 1, 0, 'w'},
	    {"interval", 1, 0, 'i'}, {"seed", 1, 0, 's'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	int c;

	*o = (struct kh_opts){.fill = "0",
			      .keep = 2,
			      .region = "64M",
			      .wait_ns = 20 * 1000000000ULL,
			      .interval_ns = 500 * 1000000ULL};
	while ((c = wl_getopt(name, argc, argv, lo, usage)) != -1) {
		switch (c) {
		case 'r':
			o->region = optarg;
			break;
		case 'f':
			o->fill = optarg;
			break;
		case 'k':
			o->keep = (unsigned)wl_parse_uint("--keep", optarg, 1u << 20);
			break;
		case 'w':
			if (wl_parse_duration(optarg, &o->wait_ns))
				wl_usage("--wait: '%s' is not a duration (20s)", optarg);
			break;
		case 'i':
			if (wl_parse_duration(optarg, &o->interval_ns) || !o->interval_ns)
				wl_usage("--interval: '%s' is not a duration (500ms)", optarg);
			break;
		case 's':
			o->seed = wl_parse_uint("--seed", optarg, UINT64_MAX);
			break;
		}
	}
	if (!o->keep)
		wl_usage("--keep: 0 is not a group size");
}

/* khugepaged: wait and sample. The phase's end time, in ms, once all was huge (or -1). */
static double wait_collapse(const struct kh_opts *o, const struct wl_region *reg)
{
	wl_sample(reg);
	return wl_sample_for(reg, o->wait_ns, o->interval_ns, true);
}

struct collapse_rec {
	int rc, err;
	uint64_t ns;
};

static void madv_collapse(const struct wl_region *reg, struct collapse_rec *c, size_t n)
{
	wl_sample(reg);
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = wl_now_ns();

		c[i].rc = madvise(reg->base + i * WL_HPAGE, WL_HPAGE, MADV_COLLAPSE);
		c[i].err = c[i].rc ? errno : 0;
		c[i].ns = wl_now_ns() - t0;
	}
	wl_sample(reg);
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0:
		return "0";
	case ENOMEM:
		return "ENOMEM";
	case EBUSY:
		return "EBUSY";
	case EAGAIN:
		return "EAGAIN";
	case EINVAL:
		return "EINVAL";
	case EPERM:
		return "EPERM";
	default:
		return "other";
	}
}

int wl_khugepaged_main(const char *name, int argc, char **argv)
{
	bool collapse = !strcmp(name, "collapse");
	struct collapse_rec *c = NULL;
	struct wl_region filler, reg;
	uint64_t memfree, fill, rlen, rng;
	size_t n, final_huge, ok = 0;
	double all_huge_ms = -1;
	struct kh_opts o;

	parse(name, argc, argv, &o);
	memfree = wl_meminfo_kb("MemFree");
	fill = wl_amount("--fill", o.fill, memfree, 0);
	rlen = wl_amount("--region", o.region, memfree, WL_HPAGE);
	o.seed = wl_seed(o.seed);
	rng = o.seed;
	wl_start(name);
	wl_fill(&filler, fill, o.keep, false, &rng);
	wl_map(&reg, rlen);
	n = reg.len / WL_HPAGE;
	printf("ORACLE info memfree_kb=%llu fill_bytes=%llu keep=%u region_bytes=%zu seed=%llu\n",
	       (unsigned long long)memfree, (unsigned long long)fill, o.keep, reg.len,
	       (unsigned long long)o.seed);
	wl_advise(&reg, "nohugepage");
	for (size_t off = 0; off < reg.len; off += WL_PAGE)
		reg.base[off] = 1;
	wl_advise(&reg, "hugepage");
	if (collapse && !(c = calloc(n, sizeof(*c))))
		wl_die("out of memory");
	wl_phase_begin();
	if (collapse)
		madv_collapse(&reg, c, n);
	else
		all_huge_ms = wait_collapse(&o, &reg);
	wl_phase_end();
	wl_print_phase();
	for (size_t i = 0; collapse && i < n; i++) {
		ok += c[i].rc == 0;
		printf("ORACLE collapse %zu %d %s %.1f\n", i, c[i].rc, errno_name(c[i].err),
		       (double)c[i].ns / 1e3);
	}
	final_huge = wl_print_extents(&reg);
	printf("ORACLE summary extents=%zu final_huge=%zu anonhuge_kb=%llu", n, final_huge,
	       (unsigned long long)wl_anonhuge_kb(&reg));
	if (collapse)
		printf(" collapsed=%zu failed=%zu\n", ok, n - ok);
	else
		printf(" all_huge_ms=%.0f\n", all_huge_ms);
	fflush(stdout);
	free(c);
	return 0;
}
