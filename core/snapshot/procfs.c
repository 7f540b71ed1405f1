/* The /proc files a snapshot reads besides kpageflags, as text: zoneinfo (mm/vmstat.c
 * zoneinfo_show_print: a zone's "pages free", watermarks, spanned/present/managed, the per-cpu
 * pagesets' "count:", "start_pfn:"), buddyinfo (frag_show_print: free blocks per order) and
 * pagetypeinfo (pagetypeinfo_showfree_print: free blocks per type and order;
 * pagetypeinfo_showblockcount_print: pageblocks per type, with the type names as column
 * heads). Parsers are pure: text in, numbers out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/snapshot.h"

/* The next line of *s into line (cut to len), advancing *s; false at the end. */
static bool next_line(const char **s, char *line, size_t len)
{
	const char *e;
	size_t n;

	if (!**s)
		return false;
	e = strchr(*s, '\n');
	n = e ? (size_t)(e - *s) : strlen(*s);
	snprintf(line, len, "%.*s", (int)n, *s);
	*s += n + (e ? 1 : 0);
	return true;
}

/* "Node 0, zone   Normal..." : node and zone name; the rest of the line in *rest. */
static bool zone_line(const char *line, int *node, char *name, size_t len, const char **rest)
{
	int off = 0;
	char z[32];

	size_t zl;

	if (sscanf(line, "Node %d, zone %31s%n", node, z, &off) != 2)
		return false;
	zl = strlen(z);
	if (zl && z[zl - 1] == ',') /* pagetypeinfo: "zone      DMA, type ..." */
		z[zl - 1] = '\0';
	snprintf(name, len, "%s", z);
	if (rest)
		*rest = line + off;
	return true;
}

static void zoneinfo_field(struct snap_zone *z, const char *line)
{
	static const char *const keys[] = {"min", "low", "high", "spanned", "present", "managed"};
	char key[32];
	unsigned long long v;

	if (sscanf(line, " pages free %llu", &v) == 1) {
		z->free = v;
		return;
	}
	if (sscanf(line, " count: %llu", &v) == 1) {
		z->pcp += v;
		return;
	}
	if (!strncmp(line + strspn(line, " \t"), "protection: (", 13)) {
		const char *s = strchr(line, '(') + 1;

		z->nprot = 0;
		while (z->nprot < SNAP_MAX_ZIDX) {
			char *end;

			v = strtoull(s, &end, 10);
			if (end == s)
				break;
			z->protection[z->nprot++] = v;
			s = end + strspn(end, ", ");
		}
		return;
	}
	if (sscanf(line, " start_pfn: %llu", &v) == 1) {
		z->start_pfn = v;
		return;
	}
	if (sscanf(line, " %31s %llu", key, &v) != 2)
		return;
	for (unsigned i = 0; i < 3; i++)
		if (!strcmp(key, keys[i]))
			z->wmark[i] = v;
	if (!strcmp(key, keys[3]))
		z->spanned = v;
	else if (!strcmp(key, keys[4]))
		z->present = v;
	else if (!strcmp(key, keys[5]))
		z->managed = v;
}

int snap_parse_zoneinfo(const char *text, struct snap_zone *z, unsigned max, unsigned *nz)
{
	struct snap_zone *cur = NULL;
	char line[256];

	*nz = 0;
	while (next_line(&text, line, sizeof(line))) {
		struct snap_zone n = {0};

		if (zone_line(line, &n.node, n.name, sizeof(n.name), NULL)) {
			if (*nz == max)
				return -E2BIG;
			n.idx = *nz && z[*nz - 1].node == n.node ? z[*nz - 1].idx + 1 : 0;
			z[*nz] = n;
			cur = &z[(*nz)++];
		} else if (cur) {
			zoneinfo_field(cur, line);
		}
	}
	return *nz ? 0 : -EINVAL;
}

/* Up to max numbers after *s; returns how many. */
static unsigned numbers(const char *s, uint64_t *out, unsigned max)
{
	unsigned n = 0;

	while (*s) {
		char *end;
		unsigned long long v;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		v = strtoull(s, &end, 10);
		if (end == s)
			return n;
		if (n < max)
			out[n] = v;
		n++;
		s = end;
	}
	return n;
}

static bool same_zone(const char *line, int node, const char *zone, const char **rest)
{
	int n;
	char name[32];

	return zone_line(line, &n, name, sizeof(name), rest) && n == node && !strcmp(name, zone);
}

int snap_parse_buddyinfo(const char *text, int node, const char *zone, uint64_t out[SNAP_NR_ORDERS])
{
	char line[512];
	const char *rest;

	while (next_line(&text, line, sizeof(line)))
		if (same_zone(line, node, zone, &rest))
			return numbers(rest, out, SNAP_NR_ORDERS) == SNAP_NR_ORDERS ? 0 : -EINVAL;
	return -ENOENT;
}

static int pti_type(const char *name)
{
	for (int t = 0; t < SNAP_PTI_NR; t++)
		if (!strcmp(name, snap_pti_name[t]))
			return t;
	return -1;
}

/* "Number of blocks type     Unmovable      Movable ...": the columns' types. */
static unsigned block_columns(const char *line, int *col, unsigned max)
{
	char name[32];
	int off;
	unsigned n = 0;

	line += strlen("Number of blocks type");
	while (n < max && sscanf(line, " %31s%n", name, &off) == 1) {
		col[n++] = pti_type(name);
		line += off;
	}
	return n;
}

static void pti_free_line(const char *rest, uint64_t free[SNAP_PTI_NR][SNAP_NR_ORDERS])
{
	char name[32];
	int off = 0, t;

	if (sscanf(rest, " type %31s%n", name, &off) != 1 || (t = pti_type(name)) < 0)
		return;
	numbers(rest + off, free[t], SNAP_NR_ORDERS);
}

int snap_parse_pagetypeinfo(const char *text, int node, const char *zone,
			    uint64_t free[SNAP_PTI_NR][SNAP_NR_ORDERS],
			    uint64_t blocks[SNAP_PTI_NR])
{
	char line[512];
	const char *rest;
	int col[SNAP_PTI_NR], order = -1;
	unsigned ncol = 0;
	bool found = false;

	memset(free, 0, sizeof(uint64_t) * SNAP_PTI_NR * SNAP_NR_ORDERS);
	memset(blocks, 0, sizeof(uint64_t) * SNAP_PTI_NR);
	while (next_line(&text, line, sizeof(line))) {
		uint64_t v[SNAP_PTI_NR];
		unsigned n;

		if (sscanf(line, "Page block order: %d", &order) == 1)
			continue;
		if (!strncmp(line, "Number of blocks type", 21)) {
			ncol = block_columns(line, col, SNAP_PTI_NR);
			continue;
		}
		if (!same_zone(line, node, zone, &rest))
			continue;
		if (!ncol) {
			pti_free_line(rest, free);
			continue;
		}
		n = numbers(rest, v, SNAP_PTI_NR);
		for (unsigned i = 0; i < n && i < ncol; i++)
			if (col[i] >= 0)
				blocks[col[i]] = v[i];
		found = true;
	}
	if (order < 0)
		return -ENOENT; /* not a pagetypeinfo */
	if (order != SNAP_PAGEBLOCK_ORDER)
		return -EINVAL;
	return found ? 0 : -ENOENT;
}

int snap_read_text(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t r = read(fd, buf + got, len - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r < 0 ? -errno : 0;
			break;
		}
		got += (size_t)r;
	}
	if (!ret && got + 1 >= len)
		ret = -EFBIG;
	buf[got] = '\0';
	close(fd);
	return ret;
}

const struct snap_zone *snap_pick_zone(const struct snap_zone *z, unsigned nz, const char *name)
{
	const struct snap_zone *best = NULL;
	const char *colon = name ? strchr(name, ':') : NULL;
	int node = colon ? atoi(name) : -1;

	if (colon)
		name = colon + 1;
	for (unsigned i = 0; i < nz; i++) {
		if (name ? strcmp(z[i].name, name) || (node >= 0 && z[i].node != node)
			 : !z[i].managed)
			continue;
		if (!best || z[i].managed > best->managed)
			best = &z[i];
	}
	return best;
}
