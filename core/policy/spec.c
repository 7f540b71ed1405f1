/* The policy spec language as the commands and the preload library parse it: core/mm's profiles
 * and keys (mm/mm_policy.h), with `host` (host.c) as one more profile, and its help text.
 */
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

static int fill_host(void *arg, struct mm_policy *p, char *err, size_t errlen)
{
	(void)arg;
	return policy_host(getenv("THPEMU_SYSFS_ROOT"), p, err, errlen);
}

int policy_parse(const char *spec, struct mm_policy *out, char *err, size_t errlen)
{
	static const struct mm_policy_profile host = {.name = "host", .fill = fill_host};

	return mm_policy_parse_ext(spec, &host, out, err, errlen);
}

void policy_help(FILE *f)
{
	char accepted[160];
	const char *name, *help;

	fprintf(f, "Policy: NAME[:KEY=VALUE,...]  e.g. linux-3.1:wb-wait-max=50ms\n");
	fprintf(f, "  profiles:\n");
	fprintf(f,
		"    linux-3.1             mainline 3.1.0: async compaction, reclaim that writes\n"
		"                          dirty pages out, then SYNC compaction that waits on\n"
		"                          writeback and writes pages out\n");
	fprintf(f,
		"    linux-3.1+nostall     Mel Gorman's Nov 2011 patch on 3.1 (Fedora 3.1.x): the\n"
		"                          second compaction is async\n");
	fprintf(
	    f,
	    "    linux-3.2             mainline 3.2: as 3.1, but direct reclaim never writes\n"
	    "                          file pages and skips the zone when compaction could run\n");
	fprintf(f, "    linux-3.2+nostall     Mel's patch on 3.2-rc as queued in -mm: the second\n"
		   "                          compaction is async\n");
	fprintf(
	    f, "    linux-3.3             sync-light second compaction; only sync failures defer;\n"
	       "                          a deferred THP fault skips reclaim\n");
	fprintf(f,
		"    linux-6.1             Debian 12's 6.1 LTS as shipped (enabled=always,\n"
		"                          defrag=madvise); any pair on 6.1 with the keys, e.g.\n"
		"                          linux-6.1:enabled=madvise,defrag=always. No mTHP, no\n"
		"                          underused-THP shrinker, no defrag-mode\n");
	fprintf(f, "    thp-ENABLED/DEFRAG    6.12 with transparent_hugepage/enabled=ENABLED\n"
		   "                          (always|madvise|never) and defrag=DEFRAG\n"
		   "                          (always|defer|defer+madvise|madvise|never), e.g.\n"
		   "                          thp-madvise/madvise; under enabled=madvise only\n"
		   "                          MADV_HUGEPAGE ranges get huge pages\n");
	fprintf(f, "    host                  this machine's own settings, read from sysfs\n"
		   "                          ($THPEMU_SYSFS_ROOT overrides the root /)\n");
	fprintf(f,
		"    aliases: modern-X = thp-always/X (X = always|defer|defer+madvise|madvise),\n"
		"             modern-never = thp-never/madvise; `thpemu policies` lists all\n");
	fprintf(f,
		"  multi-size THP (era=modern, 6.12): hugepages-16kB .. hugepages-1024kB (default "
		"never)\n"
		"  and hugepages-2048kB (default inherit) as the sysfs files; defrag-mode=0|1\n");
	fprintf(f, "  shared memory THP (era=6.1 or modern; 3.x has none): shmem-enabled (default\n"
		   "  never), tmpfs-huge (/dev/shm's huge=, default never) and, 6.12 only,\n"
		   "  shmem-hugepages-16kB .. -2048kB (default never, 2048kB inherit)\n");
	fprintf(
	    f, "  policy plugin (thpemu_policy.h): plugin=PATH[?ARGS]  a shared object that\n"
	       "  chooses each fault's orders (see README \"Policy plugins\"); a PATH without '/'\n"
	       "  that is no file here names an installed plugin (mthp_under_frag,\n"
	       "  huge_big_regions: PREFIX/lib/thpemu/plugins, build/plugins)\n");
	fprintf(f, "  keys:\n");
	for (size_t i = 0; (name = mm_policy_key_doc(i, accepted, sizeof(accepted), &help)); i++)
		fprintf(f, "    %s=%s\n        %s\n", name, accepted, help);
}
