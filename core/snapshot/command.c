/* thpemu snapshot, and the static thpemu-snapshot a guest runs: the same command.
 *
 *   thpemu snapshot [-o FILE] [--zone [NODE:]NAME|[NODE:]all] [--quiet]
 *
 * Checked before any work (one line, exit 2): the options, that /proc/kpageflags can be read
 * (root), the output file (util/outfile.h: written beside it and renamed in place), the zone.
 * A failure of the pass itself or of the write exits 1. Only libc and core/util's system-call
 * helpers: the static build links nothing else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/snapshot.h"
#include "util/outfile.h"
#include "util/prog.h"

#define CMD "snapshot"

struct opts {
	const char *out; /* NULL or "-": stdout */
	const char *zone;
	bool quiet;
};

static void usage(FILE *f, const char *prog)
{
	fprintf(
	    f,
	    "usage: %s [-o FILE] [--zone [NODE:]NAME|[NODE:]all] [--quiet]\n\n"
	    "Write a snapshot of this machine's physical memory: every page of one zone with\n"
	    "its class (free with its buddy order, anon, unevictable, file clean/dirty/writeback,\n"
	    "slab, kernel, huge, reserved) from /proc/kpageflags, every pageblock's migratetype\n"
	    "(inferred to match /proc/pagetypeinfo), the zone's watermarks (/proc/zoneinfo) and\n"
	    "/proc/buddyinfo as read before and after the pass. Needs root. A pool starts from\n"
	    "it with --fragment snapshot:FILE (thpemu run, thpemu machine start) or\n"
	    "--opt init=snapshot:FILE (thpemu sim); its size is the zone's unless --pool says\n"
	    "otherwise (smaller: the zone sampled in 4 MiB units).\n\n"
	    "  -o, --output FILE      write it there (default, or '-': standard output)\n"
	    "  --zone [NODE:]NAME     the zone (default: the one with the most managed pages)\n"
	    "  --zone [NODE:]all      every zone with memory of the node (default node: the\n"
	    "                         largest zone's), as one pool that allocates from each\n"
	    "                         zone as the kernel does (loads whole: no --pool)\n"
	    "  --quiet                no summary on standard error\n\n"
	    "The file is text, run-length encoded (format: core/snapshot/README.md).\n\n"
	    "Exit status: 0 done; 2 a bad option, no such zone, not root, an output that\n"
	    "cannot be written; 1 the pass or the write failed.\n",
	    prog);
}

static const char *value(int argc, char **argv, int *i, const char *eq, const char *name)
{
	if (eq)
		return eq + 1;
	if (*i + 1 >= argc)
		prog_usage_error(CMD, "%s needs a value", name);
	return argv[++*i];
}

static void parse(int argc, char **argv, const char *prog, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
		char name[32];

		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, prog);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("%s %s\n", prog, THPEMU_VERSION);
			exit(0);
		} else if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
			o->out = value(argc, argv, &i, eq, name);
		} else if (!strcmp(name, "--zone")) {
			o->zone = value(argc, argv, &i, eq, name);
		} else if (!strcmp(a, "--quiet")) {
			o->quiet = true;
		} else {
			prog_usage_error(CMD, "unknown option or argument '%s' (see '%s --help')",
					 a, prog);
		}
	}
	if (o->out && !o->out[0])
		prog_usage_error(CMD, "-o: an empty path");
	if (o->zone && !o->zone[0])
		prog_usage_error(CMD, "--zone: an empty name");
}

static void summary(const struct snap_header *h)
{
	uint64_t d = 0, moved = 0;

	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++) {
		uint64_t a = h->free_blocks[o], b = h->buddy_before[o], c = h->buddy_after[o];

		d += (a > b ? a - b : b - a) << o;
		moved += (b > c ? b - c : c - b) << o;
	}
	fprintf(stderr,
		"thpemu snapshot: zone%s %d:%s of %s (%s): %llu MiB, %llu free pages; free "
		"blocks ",
		h->nzones > 1 ? "s up to" : "", h->zone.node, h->zone.name, h->host, h->kernel,
		(unsigned long long)(h->nr_pfns >> 8), (unsigned long long)h->classes[SNAP_FREE]);
	if (!d)
		fprintf(stderr, "as buddyinfo says");
	else
		fprintf(stderr, "%llu pages off buddyinfo (which moved %llu pages during the pass)",
			(unsigned long long)d, (unsigned long long)moved);
	fprintf(stderr, "; %u pass%s\n", h->attempts, h->attempts == 1 ? "" : "es");
}

static int write_file(const struct opts *o, struct outfile *of, const struct snap *s)
{
	char *buf = NULL, err[600] = "out of memory";
	size_t len = 0;
	FILE *f = o->out ? open_memstream(&buf, &len) : stdout;
	int rc = f ? snap_write(f, s) : -ENOMEM;

	if (!o->out) {
		rc = fflush(stdout) || rc ? -EIO : 0;
		if (rc)
			prog_error(CMD, "standard output: %s", strerror(errno));
		return rc;
	}
	if (f && fclose(f) && !rc)
		rc = -ENOMEM;
	if (!rc)
		rc = outfile_write(of, buf, len, err, sizeof(err));
	if (rc)
		outfile_abort(of);
	else
		rc = outfile_commit(of, err, sizeof(err));
	if (rc)
		prog_error(CMD, "-o: %s", err);
	free(buf);
	return rc;
}

int snap_command(int argc, char **argv, const char *prog)
{
	struct opts o = {0};
	struct snap_take_opts to = {0};
	struct outfile of = {.fd = -1};
	struct snap s;
	char err[600];
	int rc;

	parse(argc, argv, prog, &o);
	if (o.out && !strcmp(o.out, "-"))
		o.out = NULL;
	if (access("/proc/kpageflags", R_OK))
		prog_usage_error(CMD, "/proc/kpageflags: %s (a snapshot needs root)",
				 strerror(errno));
	if (o.out && outfile_create(&of, o.out, err, sizeof(err)))
		prog_usage_error(CMD, "-o: %s", err);
	to.zone = o.zone;
	rc = snap_take(&to, &s, err, sizeof(err));
	if (rc) {
		if (o.out)
			outfile_abort(&of);
		if (rc == -ENOENT)
			prog_usage_error(CMD, "--zone: %s", err);
		prog_error(CMD, "%s", err);
		return 1;
	}
	rc = write_file(&o, &of, &s);
	if (!rc && !o.quiet)
		summary(&s.h);
	snap_free(&s);
	return rc ? 1 : 0;
}
