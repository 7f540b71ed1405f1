/* The snapshot file (README.md, "The file"): a text header of KEY VALUE... lines, the pageblock
 * types run-length encoded, the pfn classes run-length encoded, "end".
 *
 * Writing goes through stdio. Reading is a stream over a descriptor with a fixed buffer, system
 * calls only and no allocation (the preload library reads in its constructor, where the program's
 * allocator may not be ready and close() is its own interposer): header first, then the
 * sections line by line, each checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "util/sys.h"

/* (here, not in procfs.c: the preload library reads snapshot files and must not link the
 * /proc readers, whose libc calls would reach its own interposers) */
const char *const snap_pti_name[SNAP_PTI_NR] = {"Unmovable",  "Movable", "Reclaimable",
						"HighAtomic", "CMA",	 "Isolate"};

#define MAGIC "thpemu-snapshot"

/* ---- writing -----------------------------------------------------------------------------------
 */

/* A word of the header (host, kernel, date): anything but a visible character becomes '_'. */
static void put_word(FILE *f, const char *key, const char *w)
{
	fprintf(f, "%s ", key);
	if (!*w)
		fputc('-', f);
	for (; *w; w++)
		fputc(*w > ' ' && *w < 127 ? *w : '_', f);
	fputc('\n', f);
}

static void put_orders(FILE *f, const char *key, const uint64_t *v)
{
	fprintf(f, "%s", key);
	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
		fprintf(f, " %" PRIu64, v[o]);
	fputc('\n', f);
}

static void put_pti(FILE *f, const struct snap_header *h)
{
	if (!h->have_pti) {
		fprintf(f, "pagetypeinfo none\n");
		return;
	}
	fprintf(f, "pagetypeinfo-blocks");
	for (unsigned t = 0; t < SNAP_PTI_NR; t++)
		fprintf(f, " %s %" PRIu64, snap_pti_name[t], h->pti_blocks[t]);
	fputc('\n', f);
	for (unsigned t = 0; t < SNAP_PTI_NR; t++) {
		char key[64];

		snprintf(key, sizeof(key), "pagetypeinfo-free %s", snap_pti_name[t]);
		put_orders(f, key, h->pti_free[t]);
	}
}

/* A zone's lines: what zoneinfo said, its watermarks, and (several zones) its lowmem_reserve. */
static void put_zone(FILE *f, const struct snap_zone *z, bool several)
{
	fprintf(f,
		"zone %d %s start %" PRIu64 " spanned %" PRIu64 " present %" PRIu64
		" managed %" PRIu64 " free %" PRIu64 " pcp %" PRIu64 "\n",
		z->node, z->name, z->start_pfn, z->spanned, z->present, z->managed, z->free,
		z->pcp);
	fprintf(f, "watermarks %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", z->wmark[0], z->wmark[1],
		z->wmark[2]);
	if (several)
		fprintf(f, "lowmem-reserve %" PRIu64 "\n", z->lowmem_reserve);
}

static void put_header(FILE *f, const struct snap_header *h)
{
	bool several = h->nzones > 1;

	fprintf(f, "%s %u\n", MAGIC, several ? SNAP_VERSION : 1);
	put_word(f, "host", h->host);
	put_word(f, "kernel", h->kernel);
	put_word(f, "date", h->date);
	fprintf(f, "page-size %u\norders %u\npageblock-order %u\n", SNAP_PAGE_SIZE, SNAP_NR_ORDERS,
		SNAP_PAGEBLOCK_ORDER);
	if (several) {
		fprintf(f, "zones %u\n", h->nzones);
		for (unsigned i = 0; i < h->nzones; i++)
			put_zone(f, &h->zones[i], true);
	} else {
		put_zone(f, &h->zone, false);
	}
	fprintf(f, "range %" PRIu64 " %" PRIu64 "\n", h->base_pfn, h->nr_pfns);
	put_orders(f, "buddyinfo-before", h->buddy_before);
	put_orders(f, "buddyinfo-after", h->buddy_after);
	put_orders(f, "free-blocks", h->free_blocks);
	put_pti(f, h);
	fprintf(f, "classes");
	for (unsigned c = 0; c < SNAP_NR_CLASSES; c++)
		fprintf(f, " %s %" PRIu64, snap_class_name[c], h->classes[c]);
	fprintf(f, "\nfile-active %" PRIu64 "\nbuddy-flags %s\n", h->file_active,
		h->buddy_all ? "all" : "head");
	fprintf(f,
		"migratetypes unmovable %" PRIu64 " movable %" PRIu64 " reclaimable %" PRIu64 "\n",
		h->mt_blocks[SNAP_MT_UNMOVABLE], h->mt_blocks[SNAP_MT_MOVABLE],
		h->mt_blocks[SNAP_MT_RECLAIMABLE]);
	fprintf(f, "migratetype-error free %" PRIu64 " mixed %" PRIu64 "\nattempts %u\n",
		h->mt_free_error, h->mt_mixed, h->attempts);
}

/* A class byte as the file tells it: a free block's order, a file page's list; nothing else. */
static uint8_t file_byte(uint8_t b)
{
	unsigned c = b & SNAP_CLASS_MASK;

	if (c == SNAP_FREE)
		return b;
	return c >= SNAP_FILE && c <= SNAP_FILE_WB ? (uint8_t)(b & (SNAP_CLASS_MASK | SNAP_ACTIVE))
						   : (uint8_t)c;
}

/* The run starting at pfn p (a free run: blocks of one order back to back). */
static uint64_t run_at(const struct snap *s, uint64_t p, struct snap_run *r)
{
	uint8_t b = file_byte(s->pfn[p]);
	uint64_t q = p;

	r->cls = b & SNAP_CLASS_MASK;
	r->active = (b & SNAP_ACTIVE) && r->cls != SNAP_FREE;
	r->order = r->cls == SNAP_FREE ? b >> 4 : 0;
	r->pages = 0;
	if (r->cls == SNAP_FREE) {
		while (q < s->h.nr_pfns && s->pfn[q] == b) {
			q += 1ULL << r->order;
			r->pages++;
		}
		return q;
	}
	while (q < s->h.nr_pfns && file_byte(s->pfn[q]) == b)
		q++;
	r->pages = q - p;
	return q;
}

static void put_run(FILE *f, const struct snap_run *r)
{
	char c = snap_class_letter[r->cls];

	if (r->active)
		c = (char)(c - 'A' + 'a');
	if (r->cls == SNAP_FREE)
		fprintf(f, "F%u %" PRIu64 "\n", r->order, r->pages);
	else
		fprintf(f, "%c %" PRIu64 "\n", c, r->pages);
}

static uint64_t block_lines(const struct snap *s, FILE *f)
{
	uint64_t nb = s->h.nr_pfns / SNAP_PAGEBLOCK_NR, lines = 0;

	for (uint64_t b = 0; b < nb;) {
		uint64_t e = b;

		while (e < nb && s->block_mt[e] == s->block_mt[b])
			e++;
		if (f)
			fprintf(f, "%c %" PRIu64 "\n", snap_mt_letter[s->block_mt[b]], e - b);
		lines++;
		b = e;
	}
	return lines;
}

static uint64_t run_lines(const struct snap *s, FILE *f)
{
	uint64_t lines = 0;
	struct snap_run r;

	for (uint64_t p = 0; p < s->h.nr_pfns; lines++) {
		p = run_at(s, p, &r);
		if (f)
			put_run(f, &r);
	}
	return lines;
}

int snap_write(FILE *f, const struct snap *s)
{
	put_header(f, &s->h);
	fprintf(f, "pageblocks %" PRIu64 "\n", block_lines(s, NULL));
	block_lines(s, f);
	fprintf(f, "runs %" PRIu64 "\n", run_lines(s, NULL));
	run_lines(s, f);
	fprintf(f, "end\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- reading -----------------------------------------------------------------------------------
 */

static int fail(const struct snap_reader *r, int rc, char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "line %u: %s", r->line, why);
	return rc;
}

/* The next line into r->cur. 1, 0 at the end of the file, -errno. */
static int next_line(struct snap_reader *r, char *err, size_t errlen)
{
	size_t n = 0;

	for (;;) {
		char c;

		if (r->pos == r->len) {
			long got = sys_read(r->fd, r->buf, sizeof(r->buf));

			if (got == -EINTR)
				continue;
			if (got < 0)
				return fail(r, (int)got, err, errlen, "cannot be read");
			if (!got && !n)
				return 0;
			if (!got)
				return fail(r, -EINVAL, err, errlen, "the file ends inside a line");
			r->len = (size_t)got;
			r->pos = 0;
		}
		c = r->buf[r->pos++];
		if (c == '\n')
			break;
		if (n + 1 >= sizeof(r->cur))
			return fail(r, -EINVAL, err, errlen, "a line too long");
		r->cur[n++] = c;
	}
	r->cur[n] = '\0';
	r->line++;
	return 1;
}

static bool get_orders(const char *s, uint64_t *v)
{
	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++) {
		char *end;

		v[o] = strtoull(s, &end, 10);
		if (end == s)
			return false;
		s = end;
	}
	return true;
}

/* "NAME VALUE" pairs in names' order; the first `need` of them required, the rest optional (a
 * later writer's, 0 when absent). */
static bool get_named_min(const char *s, const char *const *names, unsigned n, unsigned need,
			  uint64_t *v)
{
	char name[32];
	unsigned long long x;
	int off;

	for (unsigned i = 0; i < n; i++) {
		if (sscanf(s, " %31s %llu%n", name, &x, &off) != 2 || strcmp(name, names[i])) {
			if (i < need)
				return false;
			v[i] = 0;
			continue;
		}
		v[i] = x;
		s += off;
	}
	return true;
}

static bool get_named(const char *s, const char *const *names, unsigned n, uint64_t *v)
{
	return get_named_min(s, names, n, n, v);
}

/* A zone line: the file's next zone (version 1 has one). */
static bool header_zone(const char *v, struct snap_header *h)
{
	struct snap_zone *z = &h->zones[h->nzones];
	unsigned long long a, b, c, d, e, f;

	if (h->nzones == SNAP_MAX_FILE_ZONES)
		return false;
	h->nzones++;

	if (sscanf(v,
		   "%d %15s start %llu spanned %llu present %llu managed %llu free %llu pcp %llu",
		   &z->node, z->name, &a, &b, &c, &d, &e, &f) != 8)
		return false;
	z->start_pfn = a;
	z->spanned = b;
	z->present = c;
	z->managed = d;
	z->free = e;
	z->pcp = f;
	return true;
}

static bool header_pti_free(const char *v, struct snap_header *h)
{
	char name[32];
	int off;

	if (sscanf(v, "%31s%n", name, &off) != 1)
		return false;
	for (unsigned t = 0; t < SNAP_PTI_NR; t++)
		if (!strcmp(name, snap_pti_name[t]))
			return get_orders(v + off, h->pti_free[t]);
	return true; /* a type of a later kernel */
}

static bool header_numbers(const char *key, const char *v, struct snap_header *h)
{
	static const char *const mts[] = {"unmovable", "movable", "reclaimable"};
	static const char *const errs[] = {"free", "mixed"};
	unsigned long long a, b, c;
	uint64_t e[2];

	struct snap_zone *z = h->nzones ? &h->zones[h->nzones - 1] : NULL;

	if (!strcmp(key, "watermarks")) {
		if (!z || sscanf(v, "%llu %llu %llu", &a, &b, &c) != 3)
			return false;
		z->wmark[0] = a;
		z->wmark[1] = b;
		z->wmark[2] = c;
	} else if (!strcmp(key, "lowmem-reserve")) {
		if (!z || sscanf(v, "%llu", &a) != 1)
			return false;
		z->lowmem_reserve = a;
	} else if (!strcmp(key, "zones")) {
		if (sscanf(v, "%llu", &a) != 1)
			return false;
		h->nzones_declared = (unsigned)a;
	} else if (!strcmp(key, "range")) {
		if (sscanf(v, "%llu %llu", &a, &b) != 2)
			return false;
		h->base_pfn = a;
		h->nr_pfns = b;
	} else if (!strcmp(key, "buddyinfo-before")) {
		return get_orders(v, h->buddy_before);
	} else if (!strcmp(key, "buddyinfo-after")) {
		return get_orders(v, h->buddy_after);
	} else if (!strcmp(key, "free-blocks")) {
		return get_orders(v, h->free_blocks);
	} else if (!strcmp(key, "migratetypes")) {
		return get_named(v, mts, SNAP_MT_NR, h->mt_blocks);
	} else if (!strcmp(key, "migratetype-error")) {
		if (!get_named(v, errs, 2, e))
			return false;
		h->mt_free_error = e[0];
		h->mt_mixed = e[1];
	}
	return true;
}

/* One header line; unknown keys are skipped (a later version 1 writer may add some). */
static bool header_line(const char *key, const char *v, struct snap_header *h)
{
	unsigned long long a;

	if (!strcmp(key, "host"))
		snprintf(h->host, sizeof(h->host), "%s", v);
	else if (!strcmp(key, "kernel"))
		snprintf(h->kernel, sizeof(h->kernel), "%s", v);
	else if (!strcmp(key, "date"))
		snprintf(h->date, sizeof(h->date), "%s", v);
	else if (!strcmp(key, "page-size"))
		return sscanf(v, "%llu", &a) == 1 && a == SNAP_PAGE_SIZE;
	else if (!strcmp(key, "orders"))
		return sscanf(v, "%llu", &a) == 1 && a == SNAP_NR_ORDERS;
	else if (!strcmp(key, "pageblock-order"))
		return sscanf(v, "%llu", &a) == 1 && a == SNAP_PAGEBLOCK_ORDER;
	else if (!strcmp(key, "zone"))
		return header_zone(v, h);
	else if (!strcmp(key, "pagetypeinfo-blocks"))
		return (h->have_pti = get_named(v, snap_pti_name, SNAP_PTI_NR, h->pti_blocks));
	else if (!strcmp(key, "pagetypeinfo-free"))
		return header_pti_free(v, h);
	else if (!strcmp(key, "classes"))
		return get_named_min(v, snap_class_name, SNAP_NR_CLASSES, SNAP_FLAGLESS,
				     h->classes); /* flagless: a later writer's */
	else if (!strcmp(key, "file-active"))
		return sscanf(v, "%llu", &a) == 1 && ((h->file_active = a), true);
	else if (!strcmp(key, "buddy-flags"))
		h->buddy_all = !strcmp(v, "all");
	else if (!strcmp(key, "attempts"))
		return sscanf(v, "%llu", &a) == 1 && ((h->attempts = (unsigned)a), true);
	else
		return header_numbers(key, v, h);
	return true;
}

/* The zones (version 1: one; version 2: as many as "zones" says, up to SNAP_MAX_FILE_ZONES, in
 * pfn order, each within the range); `zone` becomes the highest. */
static int check_zones(const struct snap_reader *r, struct snap_header *h, char *err, size_t errlen)
{
	uint64_t end = h->base_pfn + h->nr_pfns, prev = h->base_pfn;

	if (h->version == 1 ? h->nzones != 1 : !h->nzones || h->nzones != h->nzones_declared)
		return fail(r, -EINVAL, err, errlen,
			    h->version == 1 ? "version 1 holds one zone"
					    : "the zone lines are not the count \"zones\" gives "
					      "(at most 4)");
	for (unsigned i = 0; i < h->nzones; i++) {
		const struct snap_zone *z = &h->zones[i];

		if (!z->name[0] || z->start_pfn < prev || z->start_pfn + z->spanned > end)
			return fail(r, -EINVAL, err, errlen,
				    "a zone outside the range, or zones out of pfn order");
		prev = z->start_pfn + z->spanned;
	}
	h->zone = h->zones[h->nzones - 1];
	return 0;
}

static int check_header(const struct snap_reader *r, struct snap_header *h, char *err,
			size_t errlen)
{
	if (!h->nr_pfns || h->base_pfn % (1ULL << SNAP_MAX_ORDER) ||
	    h->nr_pfns % SNAP_PAGEBLOCK_NR || !h->nzones)
		return fail(r, -EINVAL, err, errlen,
			    "no zone, or no range of whole pageblocks from a max-order boundary");
	return check_zones(r, h, err, errlen);
}

static int magic(struct snap_reader *r, struct snap_header *h, char *err, size_t errlen)
{
	unsigned v;
	int rc = next_line(r, err, errlen);

	if (rc <= 0)
		return rc ? rc : fail(r, -EINVAL, err, errlen, "empty: not a snapshot");
	if (sscanf(r->cur, MAGIC " %u", &v) != 1)
		return fail(r, -EINVAL, err, errlen, "not a thpemu snapshot");
	if (v < 1 || v > SNAP_VERSION) {
		snprintf(err, errlen,
			 "line 1: snapshot format version %u (this thpemu reads 1 to %d)", v,
			 SNAP_VERSION);
		return -EINVAL;
	}
	h->version = v;
	return 0;
}

int snap_read_header(struct snap_reader *r, struct snap_header *h, char *err, size_t errlen)
{
	unsigned long long n;
	int rc;

	memset(h, 0, sizeof(*h));
	r->line = 0;
	r->len = r->pos = 0;
	rc = magic(r, h, err, errlen);
	if (rc)
		return rc;
	while ((rc = next_line(r, err, errlen)) > 0) {
		char key[32];
		int off = 0;

		if (sscanf(r->cur, "pageblocks %llu", &n) == 1) {
			r->blocks_left = h->nr_blocks = n;
			r->blocks_want = h->nr_pfns / SNAP_PAGEBLOCK_NR;
			r->blocks_seen = 0;
			return check_header(r, h, err, errlen);
		}
		if (sscanf(r->cur, "%31s %n", key, &off) != 1 || !off)
			return fail(r, -EINVAL, err, errlen, "not a KEY VALUE line");
		if (!header_line(key, r->cur + off, h))
			return fail(r, -EINVAL, err, errlen, "a value this thpemu cannot read");
	}
	return rc ? rc : fail(r, -EINVAL, err, errlen, "the file ends in its header");
}

int snap_read_blocks(struct snap_reader *r, uint8_t *mt, uint64_t *count, char *err, size_t errlen)
{
	unsigned long long n;
	char c;
	int rc;

	if (!r->blocks_left) {
		rc = next_line(r, err, errlen);
		if (rc > 0 && r->blocks_seen != r->blocks_want)
			return fail(r, -EINVAL, err, errlen,
				    "the pageblocks do not cover the range");
		if (rc > 0 && sscanf(r->cur, "runs %llu", &n) == 1) {
			r->runs_left = n;
			r->pfns = 0;
			return 0;
		}
		return rc < 0 ? rc : fail(r, -EINVAL, err, errlen, "expected 'runs N'");
	}
	rc = next_line(r, err, errlen);
	if (rc <= 0)
		return rc ? rc : fail(r, -EINVAL, err, errlen, "the pageblocks end early");
	r->blocks_left--;
	if (sscanf(r->cur, "%c %llu", &c, &n) != 2 || !n || n > r->blocks_want - r->blocks_seen)
		return fail(r, -EINVAL, err, errlen,
			    "not a pageblock line (TYPE COUNT) in the range");
	r->blocks_seen += n;
	for (uint8_t t = 0; t < SNAP_MT_NR; t++)
		if (c == snap_mt_letter[t]) {
			*mt = t;
			*count = n;
			return 1;
		}
	return fail(r, -EINVAL, err, errlen, "a pageblock type other than U, M, R");
}

static int class_of(char c, struct snap_run *run)
{
	run->active = c >= 'a' && c <= 'z';
	if (run->active)
		c = (char)(c - 'a' + 'A');
	for (uint8_t k = 0; k < SNAP_NR_CLASSES; k++)
		if (c == snap_class_letter[k]) {
			run->cls = k;
			return run->active && (k < SNAP_FILE || k > SNAP_FILE_WB) ? -1 : 0;
		}
	return -1;
}

static int parse_run(struct snap_reader *r, const struct snap_header *h, struct snap_run *run,
		     char *err, size_t errlen)
{
	unsigned long long n;
	unsigned order = 0;
	uint64_t pages;

	if (class_of(r->cur[0], run))
		return fail(r, -EINVAL, err, errlen, "not a run (F<order>|A|U|C|D|W|S|K|H|R|Z N)");
	if (run->cls == SNAP_FREE &&
	    (sscanf(r->cur + 1, "%u %llu", &order, &n) != 2 || order > SNAP_MAX_ORDER))
		return fail(r, -EINVAL, err, errlen, "a free run is F<order 0..10> BLOCKS");
	if (run->cls != SNAP_FREE && sscanf(r->cur + 1, " %llu", &n) != 1)
		return fail(r, -EINVAL, err, errlen, "a run is CLASS PAGES");
	run->order = (uint8_t)order;
	run->pages = n;
	pages = run->cls == SNAP_FREE ? (uint64_t)n << order : n;
	if (!n || pages > h->nr_pfns - r->pfns ||
	    (run->cls == SNAP_FREE && (h->base_pfn + r->pfns) % (1ULL << order)))
		return fail(r, -EINVAL, err, errlen,
			    "the run is empty, misaligned or past the range");
	r->pfns += pages;
	return 1;
}

int snap_read_run(struct snap_reader *r, const struct snap_header *h, struct snap_run *run,
		  char *err, size_t errlen)
{
	int rc = next_line(r, err, errlen);

	if (rc <= 0)
		return rc ? rc : fail(r, -EINVAL, err, errlen, "the file ends before 'end'");
	if (!r->runs_left) {
		if (strcmp(r->cur, "end"))
			return fail(r, -EINVAL, err, errlen, "expected 'end'");
		if (r->pfns != h->nr_pfns)
			return fail(r, -EINVAL, err, errlen, "the runs do not cover the range");
		return 0;
	}
	r->runs_left--;
	return parse_run(r, h, run, err, errlen);
}

int snap_open(struct snap_reader *r, const char *path, struct snap_header *h, char *err,
	      size_t errlen)
{
	char why[200];
	int rc;

	memset(r, 0, offsetof(struct snap_reader, buf));
	r->fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (r->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r->fd));
		return r->fd;
	}
	rc = snap_read_header(r, h, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, why);
		snap_close(r);
	}
	return rc;
}

void snap_close(struct snap_reader *r)
{
	if (r->fd >= 0)
		sys_close(r->fd);
	r->fd = -1;
}
