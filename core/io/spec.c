/* The two spec strings of the io workload: the dirtier's (--dirty / THPEMU_DIRTY) and the
 * device's (--device / THPEMU_DEVICE), plus the data pattern and the file names on the device.
 *
 * Both specs are comma-separated items, parsed without allocation (the preload library parses
 * them in its constructor) into one line naming the bad item and what is accepted.
 */
#include "io/io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

#define DEFAULT_FILE_SIZE   (1ULL << 20)
#define DEFAULT_DEVICE	    "usb2-stick-2011"
#define DEFAULT_TIMEOUT_NS  (30ULL * NSEC_PER_SEC) /* sd's default SCSI command timeout */
#define DEFAULT_NR_REQUESTS 128			   /* the block layer's nr_requests */
#define DEFAULT_MAX_REQUEST (120ULL << 10)	   /* usb-storage max_sectors (240 sectors) */
#define MAX_REQUEST_LIMIT   (1ULL << 20)

/* ---- splitting ------------------------------------------------------------------------------- */

/* Copy the next comma-separated item of *s into item (bounded); advance *s. Returns false at
 * the end. */
static bool next_item(const char **s, char *item, size_t len)
{
	const char *p = *s, *end;
	size_t n;

	if (!p || !*p)
		return false;
	end = strchr(p, ',');
	n = end ? (size_t)(end - p) : strlen(p);
	if (n >= len)
		n = len - 1;
	memcpy(item, p, n);
	item[n] = '\0';
	*s = end ? end + 1 : p + strlen(p);
	return true;
}

/* Split "key=value" in place; value is NULL for a bare word. */
static char *split_kv(char *item)
{
	char *eq = strchr(item, '=');

	if (!eq)
		return NULL;
	*eq = '\0';
	return eq + 1;
}

static int fail(char *err, size_t errlen, const char *what, const char *item, const char *ok)
{
	snprintf(err, errlen, "%s '%s' (accepted: %s)", what, item, ok);
	return -EINVAL;
}

/* ---- --dirty --------------------------------------------------------------------------------- */

#define DIRTY_ACCEPTED                                                                             \
	"SIZE or total=SIZE, stream, write, read, file=SIZE, rate=RATE, fsync=none|each|end, "     \
	"delete-after, dirty-ratio=PCT, background-ratio=PCT, start=DUR"

static int parse_ratio(const char *v, unsigned *out)
{
	double f;

	if (units_parse_fraction(v, &f) < 0 || f <= 0 || f > 1)
		return -EINVAL;
	*out = (unsigned)(f * 100 + 0.5);
	return *out ? 0 : -EINVAL;
}

static int dirty_key(struct io_dirty_spec *s, const char *k, const char *v, bool *have_total)
{
	if (!strcmp(k, "total")) {
		*have_total = true;
		return units_parse_size(v, &s->total) || !s->total ? -EINVAL : 0;
	}
	if (!strcmp(k, "file"))
		return units_parse_size(v, &s->file_size) || s->file_size < IO_PAGE_SIZE ? -EINVAL
											 : 0;
	if (!strcmp(k, "rate"))
		return units_parse_rate(v, &s->rate);
	if (!strcmp(k, "start"))
		return units_parse_duration(v, &s->start_ns);
	if (!strcmp(k, "dirty-ratio"))
		return parse_ratio(v, &s->dirty_ratio);
	if (!strcmp(k, "background-ratio"))
		return parse_ratio(v, &s->background_ratio);
	if (!strcmp(k, "mode") && (!strcmp(v, "write") || !strcmp(v, "read"))) {
		s->mode = !strcmp(v, "read") ? IO_DIRTY_READ : IO_DIRTY_WRITE;
		return 0;
	}
	if (!strcmp(k, "fsync")) {
		if (!strcmp(v, "none"))
			s->fsync = IO_FSYNC_NONE;
		else if (!strcmp(v, "each"))
			s->fsync = IO_FSYNC_EACH;
		else if (!strcmp(v, "end"))
			s->fsync = IO_FSYNC_END;
		else
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

static int dirty_word(struct io_dirty_spec *s, const char *w, bool *have_total)
{
	if (!strcmp(w, "stream"))
		s->stream = true;
	else if (!strcmp(w, "read"))
		s->mode = IO_DIRTY_READ;
	else if (!strcmp(w, "write"))
		s->mode = IO_DIRTY_WRITE;
	else if (!strcmp(w, "delete-after"))
		s->delete_after = true;
	else if (units_parse_size(w, &s->total) == 0 && s->total)
		*have_total = true;
	else
		return -ENOENT;
	return 0;
}

static void dirty_defaults(struct io_dirty_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->mode = IO_DIRTY_WRITE;
	s->file_size = DEFAULT_FILE_SIZE;
	s->fsync = IO_FSYNC_NONE;
	s->dirty_ratio = 20;
	s->background_ratio = 10;
}

/* Cross-item rules once every item is known. */
static int dirty_check(struct io_dirty_spec *s, bool have_total, char *err, size_t errlen)
{
	if (s->stream && have_total) {
		snprintf(err, errlen, "'stream' and a total size exclude each other (accepted: %s)",
			 DIRTY_ACCEPTED);
		return -EINVAL;
	}
	if (!s->stream && !have_total) {
		snprintf(err, errlen, "needs a total size or 'stream' (accepted: %s)",
			 DIRTY_ACCEPTED);
		return -EINVAL;
	}
	if (s->background_ratio >= s->dirty_ratio) {
		snprintf(err, errlen, "background-ratio (%u%%) must be below dirty-ratio (%u%%)",
			 s->background_ratio, s->dirty_ratio);
		return -EINVAL;
	}
	s->file_size = (s->file_size + IO_PAGE_SIZE - 1) & ~(uint64_t)(IO_PAGE_SIZE - 1);
	if (!s->stream && s->file_size > s->total)
		s->file_size = (s->total + IO_PAGE_SIZE - 1) & ~(uint64_t)(IO_PAGE_SIZE - 1);
	if (s->mode == IO_DIRTY_READ && (s->fsync != IO_FSYNC_NONE || s->delete_after)) {
		snprintf(err, errlen, "fsync= and delete-after apply to writing, not 'read'");
		return -EINVAL;
	}
	return 0;
}

int io_dirty_parse(const char *spec, struct io_dirty_spec *out, char *err, size_t errlen)
{
	struct io_dirty_spec s;
	bool have_total = false;
	const char *p = spec;
	char item[128];

	dirty_defaults(&s);
	if (!spec || !*spec)
		return fail(err, errlen, "empty spec", "", DIRTY_ACCEPTED);
	while (next_item(&p, item, sizeof(item))) {
		char orig[128], *v;
		int rc;

		strcpy(orig, item);
		v = split_kv(item);
		rc = v ? dirty_key(&s, item, v, &have_total) : dirty_word(&s, item, &have_total);
		if (rc == -ENOENT)
			return fail(err, errlen, "unknown item", orig, DIRTY_ACCEPTED);
		if (rc < 0)
			return fail(err, errlen, "bad value in", orig, DIRTY_ACCEPTED);
	}
	if (dirty_check(&s, have_total, err, errlen) < 0)
		return -EINVAL;
	*out = s;
	return 0;
}

void io_dirty_format(const struct io_dirty_spec *s, char *buf, size_t len)
{
	static const char *const fs[] = {"none", "each", "end"};
	char total[32];

	if (s->stream)
		snprintf(total, sizeof(total), "stream");
	else
		snprintf(total, sizeof(total), "total=%llu", (unsigned long long)s->total);
	snprintf(buf, len,
		 "%s,%s,file=%llu,rate=%llu,fsync=%s%s,dirty-ratio=%u%%,background-ratio=%u%%,"
		 "start=%lluns",
		 s->mode == IO_DIRTY_READ ? "read" : "write", total,
		 (unsigned long long)s->file_size, (unsigned long long)s->rate, fs[s->fsync],
		 s->delete_after ? ",delete-after" : "", s->dirty_ratio, s->background_ratio,
		 (unsigned long long)s->start_ns);
}

void io_dirty_help(FILE *f)
{
	fprintf(
	    f,
	    "  SIZE | total=SIZE   write (or read) this much in all, e.g. 512M\n"
	    "  stream              keep going until the program exits\n"
	    "  write | read        stream files to the device through the page cache (dirty\n"
	    "                      pages, writeback; default) or read them (clean page cache)\n"
	    "  file=SIZE           bytes per file (default 1M; 64K for many small files, 1G for\n"
	    "                      one large one)\n"
	    "  rate=RATE           at most this many bytes/s (default: as fast as throttling "
	    "allows)\n"
	    "  fsync=none|each|end fsync after no file, every file, or the last (default none)\n"
	    "  delete-after        delete each file once it is complete on the device\n"
	    "  dirty-ratio=PCT     vm.dirty_ratio of dirtyable pool memory (default 20%%)\n"
	    "  background-ratio=PCT vm.dirty_background_ratio (default 10%%)\n"
	    "  start=DUR           begin this long after the program started (default 0)\n"
	    "  e.g. stream,file=64K,rate=20M,fsync=each,delete-after   or   total=512M,file=1G\n");
}

/* ---- --device -------------------------------------------------------------------------------- */

static void preset_list(char *buf, size_t len)
{
	const char *const *n = devm_preset_names();
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; n[i] && off + 1 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", n[i]);
}

static int device_engine_key(struct io_device_spec *d, const char *k, const char *v)
{
	uint64_t u;

	if (!strcmp(k, "timeout")) {
		if (units_parse_duration(v, &u) < 0 || u < 100 * NSEC_PER_MSEC)
			return -EINVAL;
		d->timeout_ns = u;
		return 0;
	}
	if (!strcmp(k, "nr-requests")) {
		if (units_parse_uint(v, 1024, &u) < 0 || u < 1)
			return -EINVAL;
		d->nr_requests = (unsigned)u;
		return 0;
	}
	if (!strcmp(k, "max-request")) {
		if (units_parse_size(v, &u) < 0 || u < IO_PAGE_SIZE || u > MAX_REQUEST_LIMIT ||
		    u % IO_PAGE_SIZE)
			return -EINVAL;
		d->max_request = u;
		return 0;
	}
	return -ENOENT;
}

/* Remember a device-model override for fusedev (--set KEY=VALUE) and the report. */
static void add_override(struct io_device_spec *d, const char *k, const char *v)
{
	size_t off = strlen(d->overrides);

	snprintf(d->overrides + off, sizeof(d->overrides) - off, "%s%s=%s", off ? "," : "", k, v);
}

static int device_keys(struct io_device_spec *d, const char *p, char *err, size_t errlen)
{
	char item[128];

	while (next_item(&p, item, sizeof(item))) {
		char orig[128], *v;
		int rc;

		strcpy(orig, item);
		v = split_kv(item);
		if (!v)
			return fail(err, errlen, "expected KEY=VALUE, got", orig,
				    "timeout=DUR, nr-requests=N, max-request=SIZE or a device key "
				    "(see --help)");
		rc = device_engine_key(d, item, v);
		if (rc == -ENOENT) {
			rc = devm_params_set(&d->model, item, v);
			if (rc == 0)
				add_override(d, item, v);
		}
		if (rc == -ENOENT)
			return fail(
			    err, errlen, "unknown device key in", orig,
			    "timeout, nr-requests, max-request, bandwidth, latency, jitter, "
			    "slots, error-rate, capacity, ... (see --help)");
		if (rc < 0)
			return fail(err, errlen, "bad value in", orig,
				    devm_key_accepted(item) ?: "see the device keys in --help");
	}
	return 0;
}

int io_device_parse(const char *spec, struct io_device_spec *out, char *err, size_t errlen)
{
	struct io_device_spec d;
	const char *colon = spec ? strchr(spec, ':') : NULL;
	size_t nlen = colon ? (size_t)(colon - spec) : (spec ? strlen(spec) : 0);
	char name[256], presets[256], why[128];

	memset(&d, 0, sizeof(d));
	d.timeout_ns = DEFAULT_TIMEOUT_NS;
	d.nr_requests = DEFAULT_NR_REQUESTS;
	d.max_request = DEFAULT_MAX_REQUEST;
	preset_list(presets, sizeof(presets));
	if (!nlen || nlen >= sizeof(name)) {
		snprintf(err, errlen,
			 "'%s' is not a device (accepted: none, a directory, or a "
			 "preset: %s)",
			 spec ? spec : "", presets);
		return -EINVAL;
	}
	memcpy(name, spec, nlen);
	name[nlen] = '\0';
	if (!strcmp(name, "none")) {
		d.kind = IO_DEV_NONE;
		devm_preset(DEFAULT_DEVICE, &d.model);
	} else if (name[0] == '/' || name[0] == '.') {
		d.kind = IO_DEV_PATH;
		strcpy(d.path, name);
		devm_preset(DEFAULT_DEVICE, &d.model);
	} else if (devm_preset(name, &d.model) == 0) {
		d.kind = IO_DEV_PRESET;
	} else {
		snprintf(err, errlen,
			 "unknown preset '%s' (accepted: none, a directory, or a "
			 "preset: %s)",
			 name, presets);
		return -EINVAL;
	}
	if (colon && device_keys(&d, colon + 1, err, errlen) < 0)
		return -EINVAL;
	if (devm_params_check(&d.model, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "'%s': %s", spec, why);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

void io_device_help(FILE *f)
{
	fprintf(
	    f,
	    "  none[:KEY=VALUE,...]    no device: the device model (default %s) delays\n"
	    "                          writeback in-process\n"
	    "  PRESET[:KEY=VALUE,...]  thpemu-fusedev on a private temporary mount\n"
	    "  DIR[:KEY=VALUE,...]     a directory of a mounted filesystem (starts with / or .)\n"
	    "  keys of the writeback engine: timeout=DUR (cancel a request after it, default "
	    "30s),\n"
	    "    nr-requests=N (in flight, default %u), max-request=SIZE (default 120K)\n"
	    "  and of the device model (fusedev --set, and the in-process model):\n",
	    DEFAULT_DEVICE, DEFAULT_NR_REQUESTS);
	devm_help(f);
}

/* ---- pattern and names ----------------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t pattern_word(uint64_t key, uint64_t word)
{
	return mix64(key + word * 0x9e3779b97f4a7c15ULL);
}

static uint64_t pattern_key(uint64_t seed, uint64_t file_id)
{
	return mix64(seed ^ mix64(file_id + 0x632be59bd9b4e019ULL));
}

void io_pattern_fill(void *buf, uint64_t seed, uint64_t file_id, uint64_t off, size_t len)
{
	uint64_t key = pattern_key(seed, file_id), w0 = off / 8;
	uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = pattern_word(key, w0 + i);
}

size_t io_pattern_check(const void *buf, uint64_t seed, uint64_t file_id, uint64_t off, size_t len)
{
	uint64_t key = pattern_key(seed, file_id), w0 = off / 8;
	const uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		if (p[i] != pattern_word(key, w0 + i))
			return i * 8;
	return len;
}

void io_file_name(uint64_t file_id, char *buf, size_t len)
{
	if (file_id >= IO_WRITER_ID_BASE && file_id < IO_READER_ID_BASE)
		snprintf(buf, len, "w%08llu.dat", (unsigned long long)file_id);
	else if (file_id >= IO_READER_ID_BASE && file_id < 2 * IO_READER_ID_BASE)
		snprintf(buf, len, "r%08llu.dat",
			 (unsigned long long)(file_id - IO_READER_ID_BASE));
	else
		snprintf(buf, len, "f%llu.dat", (unsigned long long)file_id);
}

int io_file_id_of(const char *name, uint64_t *file_id)
{
	char *end;
	unsigned long long v;

	if (name[0] != 'w' && name[0] != 'r' && name[0] != 'f')
		return -EINVAL;
	v = strtoull(name + 1, &end, 10);
	if (end == name + 1 || strcmp(end, ".dat"))
		return -EINVAL;
	*file_id = name[0] == 'r' ? v + IO_READER_ID_BASE : v;
	return 0;
}
