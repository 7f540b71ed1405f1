/* Fault traces: header formatting (fault-path safe: no allocation, no stdio) and reading a trace
 * back for replay and reports. The format is described in trace.h.
 */
#include "obs/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sys.h"

static const char *const type_names[OBS_TR_NTYPES] = {
    [OBS_TR_FAULT] = "fault",	    [OBS_TR_MAP] = "map",	  [OBS_TR_ADOPT] = "adopt",
    [OBS_TR_RESIDENT] = "resident", [OBS_TR_RELEASE] = "release", [OBS_TR_ADVISE] = "advise",
    [OBS_TR_REMAP] = "remap",	    [OBS_TR_END] = "end",
};

const char *obs_trace_type_name(unsigned type)
{
	return type < OBS_TR_NTYPES && type_names[type] ? type_names[type] : "unknown";
}

/* Append s to buf at *off, replacing newlines (values are one line each). */
static bool put(char *buf, size_t cap, size_t *off, const char *s, bool value)
{
	for (; *s; s++) {
		if (*off + 1 >= cap)
			return false;
		buf[(*off)++] = value && (*s == '\n' || *s == '\r') ? ' ' : *s;
	}
	return true;
}

size_t obs_trace_header(void *buf, size_t cap, uint64_t t0_mono_ns, uint64_t t0_real_ns,
			int32_t pid, const char *const *keys, const char *const *values,
			unsigned nkv)
{
	struct obs_trace_hdr *h = buf;
	char *text = (char *)buf + sizeof(*h);
	size_t tcap, off = 0, total;

	if (cap < sizeof(*h) + 8)
		return 0;
	tcap = cap - sizeof(*h);
	memset(buf, 0, cap);
	for (unsigned i = 0; i < nkv; i++) {
		if (!put(text, tcap, &off, keys[i], false) || !put(text, tcap, &off, "=", false) ||
		    !put(text, tcap, &off, values[i] ? values[i] : "", true) ||
		    !put(text, tcap, &off, "\n", false))
			return 0;
	}
	total = (sizeof(*h) + off + 1 + 7) & ~(size_t)7; /* at least one NUL */
	if (total > cap)
		return 0;
	memcpy(h->magic, OBS_TRACE_MAGIC, 8);
	h->version = OBS_TRACE_VERSION;
	h->hdr_bytes = (uint32_t)total;
	h->rec_bytes = sizeof(struct obs_trace_rec);
	h->t0_mono_ns = t0_mono_ns;
	h->t0_real_ns = t0_real_ns;
	h->pid = pid;
	return total;
}

static int read_all(int fd, void *buf, size_t len, size_t *got)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (size_t)n;
	}
	*got = off;
	return 0;
}

bool obs_trace_is_trace(const char *path)
{
	char magic[8];
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;

	if (fd < 0)
		return false;
	yes = read_all(fd, magic, sizeof(magic), &got) == 0 && got == sizeof(magic) &&
	      memcmp(magic, OBS_TRACE_MAGIC, 8) == 0;
	sys_close(fd);
	return yes;
}

static int load_header(int fd, const char *path, struct obs_trace *t, char *err, size_t errlen)
{
	size_t got = 0, tlen;
	int rc = read_all(fd, &t->hdr, sizeof(t->hdr), &got);

	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (got < sizeof(t->hdr) || memcmp(t->hdr.magic, OBS_TRACE_MAGIC, 8) != 0) {
		snprintf(err, errlen, "%s: not a thpemu trace (no %s header)", path,
			 OBS_TRACE_MAGIC);
		return -EINVAL;
	}
	if (t->hdr.version < OBS_TRACE_VERSION_MIN || t->hdr.version > OBS_TRACE_VERSION) {
		snprintf(err, errlen,
			 "%s: trace format version %u: this thpemu reads versions %u to %u%s", path,
			 t->hdr.version, OBS_TRACE_VERSION_MIN, OBS_TRACE_VERSION,
			 t->hdr.version > OBS_TRACE_VERSION ? " (a newer thpemu wrote it)" : "");
		return -EINVAL;
	}
	if (t->hdr.rec_bytes != sizeof(struct obs_trace_rec)) {
		snprintf(err, errlen,
			 "%s: trace version %u with %u-byte records (this thpemu reads %zu-byte "
			 "records)",
			 path, t->hdr.version, t->hdr.rec_bytes, sizeof(struct obs_trace_rec));
		return -EINVAL;
	}
	if (t->hdr.hdr_bytes < sizeof(t->hdr) || t->hdr.hdr_bytes > OBS_TRACE_HDR_MAX ||
	    t->hdr.hdr_bytes % 8) {
		snprintf(err, errlen, "%s: corrupt trace header (size %u)", path, t->hdr.hdr_bytes);
		return -EINVAL;
	}
	tlen = t->hdr.hdr_bytes - sizeof(t->hdr);
	t->text = calloc(1, tlen + 1);
	if (!t->text)
		return -ENOMEM;
	rc = read_all(fd, t->text, tlen, &got);
	if (rc == 0 && got < tlen)
		rc = -EINVAL;
	if (rc < 0)
		snprintf(err, errlen, "%s: truncated trace header", path);
	return rc;
}

/* Open path and read its header into t: the descriptor, or -errno (t freed, err set). */
static int open_trace(const char *path, struct obs_trace *t, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	memset(t, 0, sizeof(*t));
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	rc = load_header(fd, path, t, err, errlen);
	if (rc < 0) {
		sys_close(fd);
		obs_trace_free(t);
		return rc;
	}
	return fd;
}

/* Keep the records that replay (END noted, unknown types counted). */
static void filter_records(struct obs_trace *t, size_t nread)
{
	for (size_t i = 0; i < nread; i++) {
		struct obs_trace_rec *r = &t->recs[i];

		if (r->type == OBS_TR_END) { /* the exit hook; the process's last moments follow */
			t->complete = true;
			t->dropped = r->val;
			continue;
		}
		if (r->type == 0 || r->type >= OBS_TR_NTYPES) {
			t->bad++;
			continue;
		}
		/* version 1 had no zero pages: what its writers left in the high bits means nothing
		 */
		if (r->type == OBS_TR_FAULT && t->hdr.version < 2)
			r->flags &= (uint8_t) ~(OBS_TRF_DEC_HI | OBS_TRF_WP_ZERO);
		t->counts[r->type]++;
		t->recs[t->n++] = *r;
	}
}

/* A range [a, a + len) a trace may hold: page-aligned, in the user address space. */
static bool range_ok(uint64_t a, uint64_t len)
{
	return a % 4096 == 0 && len % 4096 == 0 && a <= OBS_TRACE_ADDR_MAX &&
	       len <= OBS_TRACE_ADDR_MAX - a;
}

/* Why record r cannot be in a trace, or NULL. *pages gets the pages its range covers. */
static const char *record_error(const struct obs_trace_rec *r, uint64_t *pages)
{
	*pages = 0;
	if (r->t_ns >= OBS_TRACE_TIME_MAX)
		return "its time is beyond 2^62 ns";
	switch (r->type) {
	case OBS_TR_FAULT:
		if (r->val2 >= OBS_TRACE_TIME_MAX)
			return "its decision time is beyond 2^62 ns";
		return r->addr < OBS_TRACE_ADDR_MAX ? NULL : "its address is outside user space";
	case OBS_TR_REMAP:
		if (!range_ok(r->addr, 0) || !range_ok(r->val2, r->val))
			return "its ranges are unaligned, wrap or leave user space";
		break;
	default:
		if (!range_ok(r->addr, r->val))
			return "its range is unaligned, wraps or leaves user space";
		break;
	}
	*pages = r->val / 4096;
	return NULL;
}

/* Refuse what no recording writes and no consumer should be asked to work through. */
static int check_records(const struct obs_trace *t, const char *path, char *err, size_t errlen)
{
	uint64_t pages = 0, budget = OBS_TRACE_PAGES_BASE + OBS_TRACE_PAGES_PER_RECORD * t->n;

	for (size_t i = 0; i < t->n; i++) {
		const struct obs_trace_rec *r = &t->recs[i];
		uint64_t np;
		const char *why = record_error(r, &np);

		if (why) {
			snprintf(err, errlen, "%s: corrupt trace: record %zu (%s): %s", path, i,
				 obs_trace_type_name(r->type), why);
			return -EINVAL;
		}
		pages += np;
		if (pages > budget) {
			snprintf(err, errlen,
				 "%s: corrupt trace: its %zu records change %llu GiB or more of "
				 "memory (a trace holds at most 64 GiB + 2 MiB per record)",
				 path, t->n, (unsigned long long)(pages >> 18));
			return -E2BIG;
		}
	}
	return 0;
}

int obs_trace_load(const char *path, struct obs_trace *t, char *err, size_t errlen)
{
	int fd = open_trace(path, t, err, errlen);
	struct stat sb;
	size_t cap, got = 0;
	int rc;

	if (fd < 0)
		return fd;
	rc = fstat(fd, &sb) < 0 ? -errno : 0;
	cap = rc == 0 && sb.st_size > (off_t)t->hdr.hdr_bytes
		  ? ((size_t)sb.st_size - t->hdr.hdr_bytes) / sizeof(struct obs_trace_rec)
		  : 0;
	t->recs = rc ? NULL : malloc((cap ? cap : 1) * sizeof(*t->recs));
	if (rc == 0)
		rc = t->recs ? read_all(fd, t->recs, cap * sizeof(*t->recs), &got) : -ENOMEM;
	sys_close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		obs_trace_free(t);
		return rc;
	}
	t->cut = got % sizeof(*t->recs) != 0 ||
		 (sb.st_size > (off_t)t->hdr.hdr_bytes &&
		  ((size_t)sb.st_size - t->hdr.hdr_bytes) % sizeof(*t->recs) != 0);
	filter_records(t, got / sizeof(*t->recs));
	rc = check_records(t, path, err, errlen);
	if (rc < 0)
		obs_trace_free(t);
	return rc;
}

int obs_trace_load_header(const char *path, struct obs_trace *t, char *err, size_t errlen)
{
	int fd = open_trace(path, t, err, errlen);

	if (fd < 0)
		return fd;
	sys_close(fd);
	return 0;
}

void obs_trace_free(struct obs_trace *t)
{
	free(t->text);
	free(t->recs);
	t->text = NULL;
	t->recs = NULL;
	t->n = 0;
}

const char *obs_trace_get(const struct obs_trace *t, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	for (const char *line = t->text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t llen = nl ? (size_t)(nl - line) : strlen(line);

		if (llen > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
			size_t vlen = llen - klen - 1;

			if (vlen >= len)
				vlen = len - 1;
			memcpy(buf, line + klen + 1, vlen);
			buf[vlen] = '\0';
			return buf;
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

bool obs_trace_zero_pages(const struct obs_trace *t)
{
	char v[8];

	return t->hdr.version >= 2 && obs_trace_get(t, "zero_page", v, sizeof(v)) &&
	       !strcmp(v, "1");
}

/* Merge sort by effect time, stable (qsort is not). */
static void merge_sort(struct obs_trace_rec *a, struct obs_trace_rec *tmp, size_t n)
{
	size_t h = n / 2, i = 0, j = h, k = 0;

	if (n < 2)
		return;
	merge_sort(a, tmp, h);
	merge_sort(a + h, tmp, n - h);
	while (i < h && j < n)
		tmp[k++] =
		    obs_trace_effect_ns(&a[j]) < obs_trace_effect_ns(&a[i]) ? a[j++] : a[i++];
	while (i < h)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, n * sizeof(*a));
}

void obs_trace_sort(struct obs_trace *t)
{
	struct obs_trace_rec *tmp = malloc((t->n ? t->n : 1) * sizeof(*tmp));

	if (!tmp)
		return; /* file order is nearly replay order; better than nothing */
	merge_sort(t->recs, tmp, t->n);
	free(tmp);
}

/* ---- replay dependencies ------------------------------------------------------------------------
 */

#define DEP_NONE UINT32_MAX

struct dep_map {
	uint64_t *keys; /* page or extent address | 1 (0 = empty) */
	uint32_t *vals;
	size_t mask;
};

static size_t dep_slot(const struct dep_map *m, uint64_t key)
{
	size_t h = (size_t)((key >> 12) * 0x9e3779b97f4a7c15ULL) & m->mask;

	while (m->keys[h] && m->keys[h] != key)
		h = (h + 1) & m->mask;
	return h;
}

static void dep_put(struct dep_map *m, uint64_t key, uint32_t val)
{
	size_t h = dep_slot(m, key);

	m->keys[h] = key;
	m->vals[h] = val;
}

static uint32_t dep_get(const struct dep_map *m, uint64_t key)
{
	size_t h = dep_slot(m, key);

	return m->keys[h] ? m->vals[h] : DEP_NONE;
}

static void dep_claim(uint32_t j, uint32_t i, uint32_t *before, uint32_t *pending)
{
	if (j == DEP_NONE || before[j] != DEP_NONE)
		return;
	before[j] = i;
	pending[i]++;
}

/* The faults recorded on [lo, hi) (a huge one by its extent) precede release i. A range with
 * more pages than the map has slots is matched slot by slot instead of page by page. */
static void release_deps(const struct dep_map *m, uint64_t lo, uint64_t hi, uint32_t i,
			 uint32_t *before, uint32_t *pending)
{
	const uint64_t ext = 2ULL << 20;

	if ((hi - lo) / 4096 > m->mask) {
		for (size_t h = 0; h <= m->mask; h++) {
			uint64_t k = m->keys[h], a = k & ~3ULL;
			bool hit = (k & 1) ? a < hi && a + ext > lo : (k & 2) && a >= lo && a < hi;

			if (hit)
				dep_claim(m->vals[h], i, before, pending);
		}
		return;
	}
	for (uint64_t a = lo & ~(ext - 1); a < hi; a += ext)
		dep_claim(dep_get(m, a | 1), i, before, pending);
	for (uint64_t a = lo; a < hi; a += 4096)
		dep_claim(dep_get(m, a | 2), i, before, pending);
}

int obs_trace_deps(const struct obs_trace *t, uint32_t **before_out, uint32_t **pending_out)
{
	size_t cap = 16;
	struct dep_map m;
	uint32_t *before, *pending;

	if (t->n >= DEP_NONE)
		return -E2BIG;
	while (cap < 2 * t->counts[OBS_TR_FAULT] + 16)
		cap *= 2;
	m.mask = cap - 1;
	m.keys = calloc(cap, sizeof(*m.keys));
	/* read only where keys[] is set; zeroed all the same, for gcc -fanalyzer cannot tell */
	m.vals = calloc(cap, sizeof(*m.vals));
	before = malloc((t->n + 1) * sizeof(*before));
	pending = calloc(t->n + 1, sizeof(*pending));
	if (!m.keys || !m.vals || !before || !pending) {
		free(m.keys);
		free(m.vals);
		free(before);
		free(pending);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct obs_trace_rec *r = &t->recs[i];
		uint64_t page = r->addr & ~4095ULL, ext = r->addr & ~((2ULL << 20) - 1);

		before[i] = DEP_NONE;
		if (r->type == OBS_TR_FAULT) {
			/* a huge touch covers its extent: keyed by the extent */
			if (obs_trace_decision(r) == 0)
				dep_put(&m, ext | 1, (uint32_t)i);
			else
				dep_put(&m, page | 2, (uint32_t)i);
		} else if (r->type == OBS_TR_RELEASE) {
			release_deps(&m, r->addr, r->addr + r->val, (uint32_t)i, before, pending);
		}
	}
	free(m.keys);
	free(m.vals);
	*before_out = before;
	*pending_out = pending;
	return 0;
}

/* ---- replay plan ------------------------------------------------------------------------------
 */

static int plan_push(struct obs_trace_thread *th, size_t i)
{
	if (th->n == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 256;
		size_t *p = realloc(th->idx, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		th->idx = p;
		th->cap = cap;
	}
	th->idx[th->n++] = i;
	return 0;
}

#define TID_SLOTS (2 * OBS_TRACE_THREADS_MAX) /* a power of two, at most half full */

/* The plan's thread for tid, added if new; NULL (rc set) past the limit or out of memory.
 * slots maps a tid hash to 1 + the thread's index (0: empty). */
static struct obs_trace_thread *plan_thread(struct obs_trace_plan *p, uint32_t *slots, uint32_t tid,
					    int *rc)
{
	size_t h = (size_t)((tid * 0x9e3779b97f4a7c15ULL) >> 40) & (TID_SLOTS - 1);
	struct obs_trace_thread *th;

	for (; slots[h]; h = (h + 1) & (TID_SLOTS - 1))
		if (p->threads[slots[h] - 1].tid == tid)
			return &p->threads[slots[h] - 1];
	if (p->nthreads == OBS_TRACE_THREADS_MAX) {
		*rc = -E2BIG;
		return NULL;
	}
	if (p->nthreads % 16 == 0) {
		th = realloc(p->threads, (p->nthreads + 16) * sizeof(*th));
		if (!th) {
			*rc = -ENOMEM;
			return NULL;
		}
		p->threads = th;
	}
	th = &p->threads[p->nthreads++];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	slots[h] = p->nthreads;
	return th;
}

int obs_trace_plan(const struct obs_trace *t, struct obs_trace_plan *p)
{
	uint32_t *slots = calloc(TID_SLOTS, sizeof(*slots));
	size_t changes = 0;
	int rc = 0;

	memset(p, 0, sizeof(*p));
	p->next_change = malloc((t->n + 1) * sizeof(*p->next_change));
	if (!p->next_change || !slots) {
		free(slots);
		free(p->next_change);
		p->next_change = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n && rc == 0; i++) {
		struct obs_trace_thread *th = plan_thread(p, slots, t->recs[i].tid, &rc);

		if (th)
			rc = plan_push(th, i);
		p->next_change[i] = changes;
		changes += t->recs[i].type != OBS_TR_FAULT;
	}
	free(slots);
	p->next_change[t->n] = changes;
	if (rc == 0)
		rc = obs_trace_deps(t, &p->fault_before, &p->release_pending);
	if (rc)
		obs_trace_plan_free(p);
	return rc;
}

void obs_trace_plan_free(struct obs_trace_plan *p)
{
	for (unsigned i = 0; i < p->nthreads; i++)
		free(p->threads[i].idx);
	free(p->threads);
	free(p->next_change);
	free(p->fault_before);
	free(p->release_pending);
	memset(p, 0, sizeof(*p));
}
