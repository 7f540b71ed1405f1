/* What thpemu oracle and thpemu fidelity share: the boot options, parsed and checked once, and
 * the question whether a workload is the suite's. */
#include <stdio.h>
#include <string.h>

#include "oracle/oracle.h"
#include "util/units.h"

int oracle_opt_uint(const char *opt, const char *v, uint64_t min, uint64_t max, uint64_t *n,
		    char *err, size_t errlen)
{
	if (units_parse_uint(v, max, n) || *n < min) {
		snprintf(err, errlen, "%s: '%s' is not an integer %llu..%llu", opt, v,
			 (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 0;
}

/* "128M", "4G": a bound of --mem as the message gives it. */
static void size_word(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ULL << 30) && !(b % (1ULL << 30)))
		snprintf(buf, len, "%lluG", (unsigned long long)(b >> 30));
	else
		snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
}

int oracle_boot_opt(struct oracle_boot_opts *o, int argc, char **argv, int *i, char *err,
		    size_t errlen)
{
	static const char *const with_value[] = {
	    "--kernel",		 "--mem",  "--mode",	"--smp",
	    "--boots",		 "--jobs", "--seed",	"--timeout",
	    "--cache",		 "--qemu", "--busybox", "--disk",
	    "--disk-write-rate", NULL};
	struct oracle_run_cfg *c = o->cfg;
	const char *a = argv[*i], *v = NULL;
	uint64_t n;
	int k;

	if (!strcmp(a, "--offline")) {
		c->offline = true;
		return 1;
	}
	for (k = 0; with_value[k] && strcmp(a, with_value[k]); k++)
		;
	if (!with_value[k])
		return 0;
	if (*i + 1 >= argc) {
		snprintf(err, errlen, "%s needs a value (see thpemu %s --help)", a, o->cmd);
		return -1;
	}
	v = argv[++*i];
	if (!strcmp(a, "--kernel")) {
		c->kernel = v;
		if (o->series_only && strcmp(v, "6.12") && strcmp(v, "6.1")) {
			snprintf(err, errlen,
				 "--kernel: '%s' is not 6.12 or 6.1 (the kernels thpemu has "
				 "profiles of)",
				 v);
			return -1;
		}
	} else if (!strcmp(a, "--mem")) {
		if (units_parse_size(v, &c->mem) || c->mem < o->mem_min || c->mem > o->mem_max ||
		    c->mem % (1 << 20)) {
			char lo[24], hi[24];

			size_word(o->mem_min, lo, sizeof(lo));
			size_word(o->mem_max, hi, sizeof(hi));
			snprintf(err, errlen, "--mem: '%s' is not a size %s..%s in MiB", v, lo, hi);
			return -1;
		}
	} else if (!strcmp(a, "--mode")) {
		o->mode = v;
		if (strcmp(v, "pinned") && strcmp(v, "free")) {
			snprintf(err, errlen, "--mode: '%s' is not pinned or free", v);
			return -1;
		}
	} else if (!strcmp(a, "--smp")) {
		if (oracle_opt_uint(a, v, 1, 16, &n, err, errlen))
			return -1;
		c->smp = (int)n;
	} else if (!strcmp(a, "--boots")) {
		if (oracle_opt_uint(a, v, 1, (uint64_t)o->boots_max, &n, err, errlen))
			return -1;
		c->boots = (int)n;
	} else if (!strcmp(a, "--jobs")) {
		if (oracle_opt_uint(a, v, 1, ORACLE_MAX_JOBS, &n, err, errlen))
			return -1;
		c->jobs = (int)n;
	} else if (!strcmp(a, "--seed")) {
		if (oracle_opt_uint(a, v, 1, 1ULL << 40, &c->seed, err, errlen))
			return -1;
	} else if (!strcmp(a, "--timeout")) {
		if (units_parse_duration(v, &c->timeout_ns) || c->timeout_ns < 1000000000ULL) {
			snprintf(err, errlen, "--timeout: '%s' is not a duration of at least 1s",
				 v);
			return -1;
		}
	} else if (!strcmp(a, "--cache")) {
		o->cache = v;
	} else if (!strcmp(a, "--qemu")) {
		c->qemu = v;
	} else if (!strcmp(a, "--disk")) {
		if (units_parse_size(v, &c->disk) || c->disk < (16ULL << 20) ||
		    c->disk > (64ULL << 30)) {
			snprintf(err, errlen, "--disk: '%s' is not a size 16M..64G", v);
			return -1;
		}
	} else if (!strcmp(a, "--disk-write-rate")) {
		if (units_parse_rate(v, &c->disk_bps) || !c->disk_bps) {
			snprintf(err, errlen, "--disk-write-rate: '%s' is not a rate (3MB/s)", v);
			return -1;
		}
	} else {
		c->busybox = v;
	}
	return 1;
}

bool oracle_builtin_workload(const char *wl, const char *name)
{
	const char *argv[] = {wl, "--list", NULL};
	struct oracle_cmd c;
	bool found = false;

	if (!oracle_cmd_run(argv, NULL, -1, &c) && c.out)
		for (char *save, *l = strtok_r(c.out, "\n", &save); l && !found;
		     l = strtok_r(NULL, "\n", &save))
			found = !strcmp(l, name);
	oracle_cmd_free(&c);
	return found;
}
