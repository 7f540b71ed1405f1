/* Taking a snapshot: one pass over a zone's /proc/kpageflags (and /proc/kpagecount) between two
 * reads of
 * /proc/buddyinfo, repeated while buddyinfo moves during the pass (a busy machine allocates and
 * frees while 8 bytes per pfn are read: 0.2 s per million pfns); the pass whose two reads agree,
 * or else the one where they differ least, is kept, and both reads go into the header.
 *
 * The range is the zone's pfns [start_pfn, start_pfn + spanned), widened to start at a multiple
 * of 2^10 pfns and to end at a pageblock boundary (a pool's buddy alignment is its frame
 * number's, so frame 0 must be max-order aligned); what is not the zone's is reserved.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/snapshot.h"

#define TEXT_MAX   (1 << 20) /* zoneinfo of a large NUMA machine fits */
#define CHUNK_PFNS (1 << 16)

struct take {
	const struct snap_take_opts *o;
	struct snap *s;
	char *text;
	char path[256];
	struct snap_zone zones[SNAP_MAX_ZONES];
	unsigned nz;
	uint8_t *best; /* the kept pass's first-pass classes */
	uint64_t best_moved;
	int kpc_fd; /* /proc/kpagecount, or -1: every count 0 */
};

static const char *proc_path(struct take *t, const char *name)
{
	snprintf(t->path, sizeof(t->path), "%s/%s", t->o->proc ? t->o->proc : "/proc", name);
	return t->path;
}

static int read_zones(struct take *t, char *err, size_t errlen)
{
	int rc = snap_read_text(proc_path(t, "zoneinfo"), t->text, TEXT_MAX);

	if (!rc)
		rc = snap_parse_zoneinfo(t->text, t->zones, SNAP_MAX_ZONES, &t->nz);
	if (rc)
		snprintf(err, errlen, "%s: %s", t->path,
			 rc == -EINVAL ? "no zone in it" : strerror(-rc));
	return rc;
}

static void zone_list(const struct take *t, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < t->nz && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d:%s", i ? ", " : "",
					t->zones[i].node, t->zones[i].name);
}

static int pick_zone(struct take *t, char *err, size_t errlen)
{
	const struct snap_zone *z = snap_pick_zone(t->zones, t->nz, t->o->zone);
	char list[512];

	if (!z) {
		zone_list(t, list, sizeof(list));
		snprintf(err, errlen, "no zone '%s' with memory here (zones: %s)",
			 t->o->zone ? t->o->zone : "", list);
		return -ENOENT;
	}
	t->s->h.zone = *z;
	return 0;
}

static int read_buddyinfo(struct take *t, uint64_t out[SNAP_NR_ORDERS], char *err, size_t errlen)
{
	const struct snap_zone *z = &t->s->h.zone;
	int rc = snap_read_text(proc_path(t, "buddyinfo"), t->text, TEXT_MAX);

	if (!rc)
		rc = snap_parse_buddyinfo(t->text, z->node, z->name, out);
	if (rc)
		snprintf(err, errlen, "%s: zone %d:%s: %s", t->path, z->node, z->name,
			 rc == -EINVAL ? "not 11 orders (a MAX_ORDER other than 10)"
				       : strerror(-rc));
	return rc;
}

/* pagetypeinfo is optional (its absence makes every block MOVABLE); a pageblock order other
 * than 9 is not: the pool's pageblocks are 2 MiB. */
static int read_pagetypeinfo(struct take *t, char *err, size_t errlen)
{
	struct snap_header *h = &t->s->h;
	int rc = snap_read_text(proc_path(t, "pagetypeinfo"), t->text, TEXT_MAX);

	if (!rc)
		rc = snap_parse_pagetypeinfo(t->text, h->zone.node, h->zone.name, h->pti_free,
					     h->pti_blocks);
	h->have_pti = rc == 0;
	if (rc == -EINVAL) {
		snprintf(err, errlen, "%s: a pageblock order other than %d", t->path,
			 SNAP_PAGEBLOCK_ORDER);
		return rc;
	}
	return 0;
}

/* Every pfn of the range through kpageflags and kpagecount (kpf: two chunks, the flags and the
 * counts) into first-pass classes; the range's pfns outside the zone are reserved. Returns the
 * pages marked BUDDY, or -errno. */
static int64_t read_kpageflags(struct take *t, int fd, uint64_t *kpf, uint8_t *out, char *err,
			       size_t errlen)
{
	const struct snap_header *h = &t->s->h;
	uint64_t zs = h->zone.start_pfn, ze = zs + h->zone.spanned, buddy = 0;

	for (uint64_t i = 0; i < h->nr_pfns; i += CHUNK_PFNS) {
		uint64_t n = h->nr_pfns - i < CHUNK_PFNS ? h->nr_pfns - i : CHUNK_PFNS;
		ssize_t r = pread(fd, kpf, n * 8, (off_t)((h->base_pfn + i) * 8));

		if (r < 0 || (size_t)r < n * 8) { /* past max_pfn reads short: nothing there */
			if (r < 0) {
				snprintf(err, errlen, "/proc/kpageflags: %s", strerror(errno));
				return -errno;
			}
			memset((char *)kpf + r, 0, n * 8 - (size_t)r);
		}
		if (t->kpc_fd >= 0) {
			r = pread(t->kpc_fd, kpf + CHUNK_PFNS, n * 8,
				  (off_t)((h->base_pfn + i) * 8));
			if (r < 0) {
				snprintf(err, errlen, "/proc/kpagecount: %s", strerror(errno));
				return -errno;
			}
			memset((char *)(kpf + CHUNK_PFNS) + r, 0, n * 8 - (size_t)r);
		}
		snap_kpf_classify(kpf, t->kpc_fd >= 0 ? kpf + CHUNK_PFNS : NULL, n, out + i);
		for (uint64_t j = 0; j < n; j++) {
			uint64_t pfn = h->base_pfn + i + j;

			if (pfn < zs || pfn >= ze)
				out[i + j] = SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE);
			buddy += out[i + j] == SNAP_X_BUDDY;
		}
	}
	return (int64_t)buddy;
}

static uint64_t moved(const uint64_t a[SNAP_NR_ORDERS], const uint64_t b[SNAP_NR_ORDERS])
{
	uint64_t d = 0;

	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
		d += (a[o] > b[o] ? a[o] - b[o] : b[o] - a[o]) << o;
	return d;
}

/* One pass: buddyinfo, kpageflags (and pagetypeinfo), buddyinfo. Keeps it if it is the best
 * yet; returns how many pages buddyinfo moved by, or -errno. */
static int64_t one_pass(struct take *t, int fd, uint64_t *kpf, uint8_t *cls, char *err,
			size_t errlen)
{
	struct snap_header *h = &t->s->h;
	uint64_t before[SNAP_NR_ORDERS], after[SNAP_NR_ORDERS], d;
	int64_t buddy;
	int rc = read_buddyinfo(t, before, err, errlen);

	if (rc)
		return rc;
	buddy = read_kpageflags(t, fd, kpf, cls, err, errlen);
	if (buddy < 0)
		return buddy;
	rc = read_pagetypeinfo(t, err, errlen);
	if (!rc)
		rc = read_buddyinfo(t, after, err, errlen);
	if (rc)
		return rc;
	d = moved(before, after);
	if (!t->best_moved || d < t->best_moved - 1) {
		memcpy(h->buddy_before, before, sizeof(before));
		memcpy(h->buddy_after, after, sizeof(after));
		memcpy(t->best, cls, h->nr_pfns);
		h->buddy_all = snap_buddy_all((uint64_t)buddy, before);
		t->best_moved = d + 1;
	}
	return (int64_t)d;
}

static int passes(struct take *t, char *err, size_t errlen)
{
	unsigned max = t->o->max_attempts ? t->o->max_attempts : 3;
	uint64_t *kpf = malloc(2 * CHUNK_PFNS * 8);
	uint8_t *cls = malloc(t->s->h.nr_pfns);
	int fd, rc = 0;

	/* the same CONFIG_PROC_PAGE_MONITOR as kpageflags; a made-up /proc may lack it */
	t->kpc_fd = open(proc_path(t, "kpagecount"), O_RDONLY | O_CLOEXEC);
	fd = open(proc_path(t, "kpageflags"), O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", t->path, strerror(errno));
	} else if (!kpf || !cls) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory for %llu pfns",
			 (unsigned long long)t->s->h.nr_pfns);
	}
	for (unsigned a = 0; !rc && a < max; a++) {
		int64_t d = one_pass(t, fd, kpf, cls, err, errlen);

		t->s->h.attempts = a + 1;
		if (d <= 0) {
			rc = (int)d;
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	if (t->kpc_fd >= 0)
		close(t->kpc_fd);
	free(kpf);
	free(cls);
	return rc;
}

static void identify(struct snap_header *h)
{
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;

	h->version = h->nzones > 1 ? SNAP_VERSION : 1;
	h->page_size = SNAP_PAGE_SIZE;
	if (!uname(&u)) {
		snprintf(h->host, sizeof(h->host), "%s", u.nodename);
		snprintf(h->kernel, sizeof(h->kernel), "%s", u.release);
	}
	if (gmtime_r(&now, &tm))
		strftime(h->date, sizeof(h->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int set_range(struct snap *s, char *err, size_t errlen)
{
	struct snap_header *h = &s->h;
	uint64_t end = h->zone.start_pfn + h->zone.spanned;

	h->base_pfn = h->zone.start_pfn & ~((1ULL << SNAP_MAX_ORDER) - 1);
	end = (end + SNAP_PAGEBLOCK_NR - 1) & ~(uint64_t)(SNAP_PAGEBLOCK_NR - 1);
	h->nr_pfns = end - h->base_pfn;
	s->pfn = calloc(h->nr_pfns ? h->nr_pfns : 1, 1);
	s->block_mt = calloc(h->nr_pfns / SNAP_PAGEBLOCK_NR + 1, 1);
	if (!s->pfn || !s->block_mt) {
		snprintf(err, errlen, "out of memory for %llu pfns",
			 (unsigned long long)h->nr_pfns);
		return -ENOMEM;
	}
	return 0;
}

/* The passes over the zone in t->s->h.zone, and what they give: classes, free blocks, types. */
static int take_zone(struct take *t, char *err, size_t errlen)
{
	struct snap *s = t->s;
	struct snap_header *h = &s->h;
	int rc = set_range(s, err, errlen);

	if (rc)
		return rc;
	t->best = s->pfn;
	t->best_moved = 0;
	rc = passes(t, err, errlen);
	if (rc)
		return rc;
	snap_resolve(s->pfn, h->nr_pfns, h->buddy_all, h->buddy_before);
	snap_count(s->pfn, h->nr_pfns, h);
	rc = snap_mtype_infer(s->pfn, h->nr_pfns, h, s->block_mt);
	if (rc)
		snprintf(err, errlen, "out of memory for the pageblocks");
	h->nzones = 1;
	h->zones[0] = h->zone;
	return rc;
}

/* "all", "N:all": every populated zone of a node. */
static bool all_zones(const char *spec, int *node)
{
	const char *colon = spec ? strchr(spec, ':') : NULL;

	*node = colon ? atoi(spec) : -1;
	return spec && !strcmp(colon ? colon + 1 : spec, "all");
}

/* The node's populated zones into z[] (pfn order: zoneinfo lists a node's zones by index);
 * node -1: the node of the zone with the most managed pages. */
static int node_zones(struct take *t, int node, struct snap_zone *z, unsigned *n, char *err,
		      size_t errlen)
{
	const struct snap_zone *big = snap_pick_zone(t->zones, t->nz, NULL);

	*n = 0;
	if (node < 0 && big)
		node = big->node;
	for (unsigned i = 0; i < t->nz; i++) {
		if (t->zones[i].node != node || !t->zones[i].managed)
			continue;
		if (*n == SNAP_MAX_FILE_ZONES) {
			snprintf(err, errlen, "node %d has more than %d zones with memory", node,
				 SNAP_MAX_FILE_ZONES);
			return -E2BIG;
		}
		z[(*n)++] = t->zones[i];
	}
	if (!*n) {
		snprintf(err, errlen, "no node %d with memory here", node);
		return -ENOENT;
	}
	for (unsigned i = 1; i < *n; i++)
		if (z[i].start_pfn % (1ULL << SNAP_MAX_ORDER) ||
		    z[i].start_pfn < z[i - 1].start_pfn + z[i - 1].spanned) {
			snprintf(err, errlen,
				 "zone %d:%s starts at pfn %llu, not on a 4 MiB boundary after the "
				 "zone below it: take one zone (--zone)",
				 node, z[i].name, (unsigned long long)z[i].start_pfn);
			return -EINVAL;
		}
	for (unsigned i = 0; i < *n; i++) /* lowmem_reserve[the highest zone's index] */
		z[i].lowmem_reserve =
		    z[*n - 1].idx < z[i].nprot ? z[i].protection[z[*n - 1].idx] : 0;
	return 0;
}

static void add_orders(uint64_t *to, const uint64_t *v)
{
	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
		to[o] += v[o];
}

/* The zones' snapshots as one: the range from the lowest's start to the highest's end, each
 * pfn and pageblock its zone's (pfns of none reserved), the header's counts summed over the
 * zones (buddyinfo as the sum of the zones' lines). */
static int merge(struct snap *s, struct snap *part, unsigned n, char *err, size_t errlen)
{
	struct snap_header *h = &s->h;
	const struct snap_header *top = &part[n - 1].h;
	uint64_t base = part[0].h.base_pfn, end = top->base_pfn + top->nr_pfns;

	memset(s, 0, sizeof(*s));
	*h = *top;
	memset(h->buddy_before, 0, sizeof(h->buddy_before));
	memset(h->buddy_after, 0, sizeof(h->buddy_after));
	memset(h->pti_blocks, 0, sizeof(h->pti_blocks));
	memset(h->pti_free, 0, sizeof(h->pti_free));
	memset(h->mt_blocks, 0, sizeof(h->mt_blocks));
	h->mt_free_error = h->mt_mixed = 0;
	h->base_pfn = base;
	h->nr_pfns = end - base;
	h->nzones = n;
	s->pfn = malloc(h->nr_pfns);
	s->block_mt = calloc(h->nr_pfns / SNAP_PAGEBLOCK_NR + 1, 1);
	if (!s->pfn || !s->block_mt) {
		snprintf(err, errlen, "out of memory for %llu pfns",
			 (unsigned long long)h->nr_pfns);
		return -ENOMEM;
	}
	memset(s->pfn, SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE), h->nr_pfns);
	for (unsigned k = 0; k < n; k++) {
		const struct snap_header *p = &part[k].h;
		uint64_t zs = p->zone.start_pfn, ze = zs + p->zone.spanned;
		uint64_t from = k ? zs : p->base_pfn, to = p->base_pfn + p->nr_pfns;

		h->zones[k] = p->zone;
		memcpy(s->pfn + (zs - base), part[k].pfn + (zs - p->base_pfn), ze - zs);
		for (uint64_t b = from; b < to; b += SNAP_PAGEBLOCK_NR)
			s->block_mt[(b - base) / SNAP_PAGEBLOCK_NR] =
			    part[k].block_mt[(b - p->base_pfn) / SNAP_PAGEBLOCK_NR];
		add_orders(h->buddy_before, p->buddy_before);
		add_orders(h->buddy_after, p->buddy_after);
		for (unsigned ty = 0; ty < SNAP_PTI_NR; ty++) {
			h->pti_blocks[ty] += p->pti_blocks[ty];
			add_orders(h->pti_free[ty], p->pti_free[ty]);
		}
		h->have_pti = h->have_pti && p->have_pti;
		h->mt_free_error += p->mt_free_error;
		h->mt_mixed += p->mt_mixed;
		if (p->attempts > h->attempts)
			h->attempts = p->attempts;
	}
	snap_count(s->pfn, h->nr_pfns, h);
	for (uint64_t b = 0; b < h->nr_pfns / SNAP_PAGEBLOCK_NR; b++)
		h->mt_blocks[s->block_mt[b]]++;
	return 0;
}

static int take_all(struct take *t, int node, char *err, size_t errlen)
{
	struct snap_zone z[SNAP_MAX_FILE_ZONES];
	struct snap part[SNAP_MAX_FILE_ZONES];
	struct snap *whole = t->s;
	unsigned n, done = 0;
	int rc = node_zones(t, node, z, &n, err, errlen);

	memset(part, 0, sizeof(part));
	for (; !rc && done < n; done++) {
		t->s = &part[done];
		part[done].h.zone = z[done];
		rc = take_zone(t, err, errlen);
	}
	t->s = whole;
	if (!rc)
		rc = merge(whole, part, n, err, errlen);
	for (unsigned k = 0; k < done; k++)
		snap_free(&part[k]);
	return rc;
}

static int take(struct take *t, char *err, size_t errlen)
{
	int node, rc;

	if (sysconf(_SC_PAGESIZE) != SNAP_PAGE_SIZE) {
		snprintf(err, errlen, "pages of %ld bytes: the pool's are 4096",
			 sysconf(_SC_PAGESIZE));
		return -EINVAL;
	}
	rc = read_zones(t, err, errlen);
	if (!rc && all_zones(t->o->zone, &node))
		rc = take_all(t, node, err, errlen);
	else if (!rc && !(rc = pick_zone(t, err, errlen)))
		rc = take_zone(t, err, errlen);
	identify(&t->s->h);
	return rc;
}

int snap_take(const struct snap_take_opts *o, struct snap *s, char *err, size_t errlen)
{
	struct take t = {.o = o, .s = s};
	int rc;

	memset(s, 0, sizeof(*s));
	t.text = malloc(TEXT_MAX);
	if (!t.text) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = take(&t, err, errlen);
	free(t.text);
	if (rc)
		snap_free(s);
	return rc;
}

void snap_free(struct snap *s)
{
	free(s->pfn);
	free(s->block_mt);
	s->pfn = s->block_mt = NULL;
}
