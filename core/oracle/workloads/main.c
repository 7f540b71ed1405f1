/* thpemu-wl: the oracle's workload suite, one program for all (the first argument names the
 * workload). Built twice: static for the guests `thpemu oracle` boots (no libc there), and
 * dynamic for `thpemu run` (a static program cannot be preloaded). See wl.h for the protocol. */
#include <stdio.h>
#include <string.h>

#include "wl.h"

static const struct {
	const char *name;
	int (*main)(const char *name, int argc, char **argv);
	const char *what;
} workloads[] = {
    {"fragfault", wl_fault_main, "fill free memory, keep 1 page in N, fault a THP region"},
    {"unevictable", wl_fault_main, "fragfault with an mlocked (unevictable) filler"},
    {"mthp", wl_fault_main, "fault a region page by page: the per-size enables pick folios"},
    {"thpscale", wl_thpscale_main,
     "mmtests thpscale: half-unmapped 2 MiB, file refill, THP faults"},
    {"thpcompact", wl_thpcompact_main,
     "mmtests thpcompact: threads fragment their shares, then fault THPs at once"},
    {"khugepaged", wl_khugepaged_main, "4 KiB-faulted region, MADV_HUGEPAGE, wait for khugepaged"},
    {"collapse", wl_khugepaged_main, "4 KiB-faulted region, MADV_COLLAPSE per extent"},
    {"shrinker", wl_shrinker_main, "sparse THPs under memory pressure: the THP shrinker"},
    {"writer", wl_writer_main, "THP faults while a thread streams a file to a (slow) disk"},
    {"shmem", wl_shmem_main, "a shared region (anon, memfd, tmpfs file): shmem THP faults"},
};

#define NWL (sizeof(workloads) / sizeof(workloads[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: thpemu-wl WORKLOAD [OPTIONS]   (thpemu-wl WORKLOAD --help)\n\n"
		   "The workloads of `thpemu oracle`: each runs the same in a guest booted on a\n"
		   "real kernel and under `thpemu run`, and prints ORACLE lines "
		   "(core/oracle/README.md).\n\n");
	for (size_t i = 0; i < NWL; i++)
		fprintf(f, "  %-12s %s\n", workloads[i].name, workloads[i].what);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1],
		    "--snapshot-start")) { /* /init's, before a program outside the suite */
		wl_set_name("snapshot");
		wl_snapshot_point("start");
		return 0;
	}
	if (!strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < NWL; i++)
			printf("%s\n", workloads[i].name);
		return 0;
	}
	for (size_t i = 0; i < NWL; i++)
		if (!strcmp(argv[1], workloads[i].name)) {
			wl_set_name(argv[1]);
			return workloads[i].main(argv[1], argc - 1, argv + 1);
		}
	fprintf(stderr, "thpemu-wl: unknown workload '%s' (thpemu-wl --help lists them)\n",
		argv[1]);
	return 2;
}
