/* The simulator's cost table: what each modelled piece of kernel work costs in virtual time.
 *
 * mm charges its own work in units (enum mm_cost: pfns scanned, pages isolated, buddy
 * operations, ...) through the alloc_cost hook; the simulator's hooks charge the real work of a
 * decision (migrating a page: unmap, TLB flush, copy, remap; zeroing a huge page) and the
 * program's own time. Defaults are kernel-like: published measurements where there are any,
 * estimates otherwise (core/sim/README.md names the source of each); a calibration file
 * (--costs FILE) overrides them, e.g. with the costs measured for the live userfaultfd emulator.
 */
#include "sim/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

struct cost_def {
	const char *key;
	uint64_t def_ns;
	const char *what;
	const char *source;
};

static const struct cost_def cost_defs[SIM_COST_NR] = {
    [SIM_COST_FAULT] = {"fault", 1000, "fixed service overhead of every fault",
			"[E] kernel anonymous fault entry/exit; live uffd: 25-30us wake-up"},
    [SIM_COST_BUDDY_OP] = {"buddy-op", 100, "one buddy allocation or free", "[E]"},
    [SIM_COST_SCAN_PFN] = {"scan-pfn", 20, "one pfn examined by a compaction scanner",
			   "kernel ref. s7 [E]: 10-50ns"},
    [SIM_COST_ISOLATE] = {"isolate", 100, "one page isolated from the LRU or free list", "[E]"},
    [SIM_COST_RECLAIM_PAGE] = {"reclaim-page", 500, "one page scanned by direct reclaim", "[E]"},
    [SIM_COST_MIGRATE_PAGE] = {"migrate-page", 5000,
			       "migrate one anon page (unmap, TLB flush, copy, remap)",
			       "kernel ref. s7 [E]: 2-10us, dominated by unmap+TLB flush (HY)"},
    [SIM_COST_COPY_4K] = {"copy-4k", 500, "copy 4 KiB (page-cache migration, write/read)",
			  "kernel ref. s7 [E]: 0.3-1us"},
    [SIM_COST_CLEAR_2M] = {"clear-2m", 100000, "zero a 2 MiB huge page",
			   "kernel ref. s7: ~100us Intel Core i5 (LY), 85-170us Genoa (AZ)"},
    [SIM_COST_CLEAR_4K] = {"clear-4k", 200, "zero a 4 KiB page on a base fault", "clear-2m / 512"},
    [SIM_COST_TOUCH_4K] = {"touch-4k", 400, "program writes one faulted 4 KiB page",
			   "[E] memset at ~10 GB/s; not part of fault latency"},
    [SIM_COST_WRITEOUT] = {"writeout", 10000, "->writepage submission of one dirty page",
			   "[E]; the wait for the device is modelled, not charged"},
};

void sim_costs_defaults(struct sim_costs *c)
{
	for (int i = 0; i < SIM_COST_NR; i++)
		c->ns[i] = cost_defs[i].def_ns;
}

const char *sim_cost_key(enum sim_cost k)
{
	return (unsigned)k < SIM_COST_NR ? cost_defs[k].key : "?";
}

int sim_costs_set(struct sim_costs *c, const char *key, const char *value)
{
	uint64_t ns;

	for (int i = 0; i < SIM_COST_NR; i++) {
		if (strcmp(key, cost_defs[i].key) != 0)
			continue;
		if (units_parse_duration(value, &ns) < 0)
			return -EINVAL;
		c->ns[i] = ns;
		return 0;
	}
	return -ENOENT;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

static void accepted_keys(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < SIM_COST_NR && off < len; i++)
		off +=
		    (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", cost_defs[i].key);
}

/* Parse one line; 0 when it was applied or empty, else -errno with err filled. */
static int load_line(struct sim_costs *c, char *line, const char *where, char *err, size_t errlen)
{
	char *hash = strchr(line, '#'), *eq, *key, *val;
	char keys[256];
	int rc;

	if (hash)
		*hash = '\0';
	line = trim(line);
	if (!*line)
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		snprintf(err, errlen, "%s: expected key=value, got '%s'", where, line);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	rc = sim_costs_set(c, key, val);
	if (rc == -ENOENT) {
		accepted_keys(keys, sizeof(keys));
		snprintf(err, errlen, "%s: unknown key '%s' (accepted: %s)", where, key, keys);
	} else if (rc < 0) {
		snprintf(err, errlen,
			 "%s: %s: bad duration '%s' (a number with a unit: ns, us, ms, s)", where,
			 key, val);
	}
	return rc < 0 ? -EINVAL : 0;
}

int sim_costs_load(struct sim_costs *c, const char *path, char *err, size_t errlen)
{
	struct sim_costs tmp = *c;
	char line[512], where[300];
	unsigned lineno = 0;
	int rc = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s: line too long", where);
			rc = -EINVAL;
			break;
		}
		rc = load_line(&tmp, line, where, err, errlen);
		if (rc)
			break;
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
	}
	fclose(f);
	if (!rc)
		*c = tmp;
	return rc;
}

void sim_costs_help(FILE *f)
{
	char buf[32];

	for (int i = 0; i < SIM_COST_NR; i++)
		fprintf(f, "  %-13s %-9s %s\n  %-13s %-9s   (%s)\n", cost_defs[i].key,
			units_fmt_duration(cost_defs[i].def_ns, buf, sizeof(buf)),
			cost_defs[i].what, "", "", cost_defs[i].source);
}
