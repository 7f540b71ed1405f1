/* The oracle's line protocol read into one boot's result, and written as JSON (result.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/result.h"
#include "util/json.h"

#define MAX_EXTENTS (1u << 20)

static const char *const ext_names[] = {"none",	 "base",    "mthp",    "huge",
					"mixed", "unknown", "not-seen"};

const char *oracle_ext_name(enum oracle_ext e)
{
	return e <= ORACLE_EXT_NOT_SEEN ? ext_names[e] : "?";
}

void oracle_result_init(struct oracle_result *r)
{
	memset(r, 0, sizeof(*r));
	r->exit_status = -1;
}

void oracle_result_free(struct oracle_result *r)
{
	for (size_t i = 0; i < r->nsnaps; i++)
		free(r->snaps[i].c);
	free(r->snaps);
	free(r->settings);
	free(r->knobs);
	free(r->meminfo);
	free(r->info);
	free(r->summary);
	free(r->ext);
	free(r->anonhuge);
	free(r->memsnap.text);
	oracle_result_init(r);
}

/* Make room for one more element of a growing array. */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
	void *p;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap <= n)
		ncap *= 2;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * size, 0, (ncap - *cap) * size);
	*arr = p;
	*cap = ncap;
	return 0;
}

#define GROW(arr, cap, n) grow((void **)&(arr), &(cap), (n), sizeof(*(arr)))

/* Set key to value in a pair list (a key seen again replaces its value). */
static int pair_set(struct oracle_pair **arr, size_t *n, size_t *cap, const char *key,
		    const char *value)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*arr)[i].key, key))
			break;
	if (i == *n) {
		if (grow((void **)arr, cap, *n, sizeof(**arr)))
			return -ENOMEM;
		(*n)++;
	}
	snprintf((*arr)[i].key, sizeof((*arr)[i].key), "%s", key);
	snprintf((*arr)[i].value, sizeof((*arr)[i].value), "%s", value);
	return 0;
}

/* "K=V K=V ..." into a pair list. */
static int pairs_kv(struct oracle_pair **arr, size_t *n, size_t *cap, char *rest)
{
	char *save;

	for (char *tok = strtok_r(rest, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok)
			continue;
		*eq = '\0';
		if (pair_set(arr, n, cap, tok, eq + 1))
			return -ENOMEM;
	}
	return 0;
}

static struct oracle_snap *snap_get(struct oracle_result *r, const char *tag)
{
	for (size_t i = 0; i < r->nsnaps; i++)
		if (!strcmp(r->snaps[i].tag, tag))
			return &r->snaps[i];
	if (GROW(r->snaps, r->capsnaps, r->nsnaps))
		return NULL;
	snprintf(r->snaps[r->nsnaps].tag, sizeof(r->snaps[0].tag), "%s", tag);
	return &r->snaps[r->nsnaps++];
}

/* "TAG vmstat NAME VALUE" or "TAG mthp SIZE STAT VALUE" */
static int parse_snap(struct oracle_result *r, char *rest)
{
	char *save, *tag = strtok_r(rest, " ", &save), *kind = strtok_r(NULL, " ", &save);
	char *a = strtok_r(NULL, " ", &save), *b = strtok_r(NULL, " ", &save);
	char *c = strtok_r(NULL, " ", &save);
	struct oracle_snap *s;
	struct oracle_counter *ct;

	if (!tag || !kind || !a || !b)
		return 0;
	if (strcmp(kind, "vmstat") && !(!strcmp(kind, "mthp") && c))
		return 0;
	s = snap_get(r, tag);
	if (!s || GROW(s->c, s->cap, s->n))
		return -ENOMEM;
	ct = &s->c[s->n++];
	if (!strcmp(kind, "vmstat")) {
		snprintf(ct->name, sizeof(ct->name), "%s", a);
		ct->size[0] = '\0';
		ct->value = strtoll(b, NULL, 10);
	} else {
		snprintf(ct->size, sizeof(ct->size), "%s", a);
		snprintf(ct->name, sizeof(ct->name), "%s", b);
		ct->value = strtoll(c, NULL, 10);
	}
	return 0;
}

static struct oracle_extent *extent(struct oracle_result *r, const char *idx)
{
	char *end;
	unsigned long i = strtoul(idx, &end, 10);

	if (end == idx || *end || i >= MAX_EXTENTS)
		return NULL;
	while (r->next <= i) {
		if (GROW(r->ext, r->capext, r->next))
			return NULL;
		r->ext[r->next] = (struct oracle_extent){
		    .fault = -1, .final = ORACLE_EXT_NOT_SEEN, .collapse_rc = 1};
		r->next++;
	}
	return &r->ext[i];
}

static int parse_extent_line(struct oracle_result *r, const char *verb, char *rest)
{
	char *save, *idx = strtok_r(rest, " ", &save), *a = strtok_r(NULL, " ", &save);
	char *b = strtok_r(NULL, " ", &save), *c = strtok_r(NULL, " ", &save);
	struct oracle_extent *e;

	if (!idx || !a || !(e = extent(r, idx)))
		return 0;
	if (!strcmp(verb, "fault")) {
		e->fault = !strcmp(a, "huge");
		e->fault_us = b ? strtod(b, NULL) : 0;
	} else if (!strcmp(verb, "extent")) {
		e->final = ORACLE_EXT_UNKNOWN;
		for (int k = 0; k < ORACLE_EXT_NOT_SEEN; k++)
			if (!strcmp(a, ext_names[k]))
				e->final = (enum oracle_ext)k;
	} else if (b) { /* collapse I RC ERRNO US */
		e->collapse_rc = atoi(a);
		snprintf(e->collapse_errno, sizeof(e->collapse_errno), "%s", b);
		e->collapse_us = c ? strtod(c, NULL) : 0;
	}
	return 0;
}

/* A line of the console kept, cut to the tail's width (a console line can be any length). */
static void keep_tail(struct oracle_result *r, const char *line)
{
	size_t n = strnlen(line, sizeof(r->tail[0]) - 1);

	memcpy(r->tail[r->tail_next], line, n);
	r->tail[r->tail_next][n] = '\0';
	r->tail_next = (r->tail_next + 1) % ORACLE_TAIL_LINES;
	if (r->ntail < ORACLE_TAIL_LINES)
		r->ntail++;
}

/* The first word of rest (cut off), the rest after it. */
static char *word(char **rest)
{
	char *w = *rest, *sp = strchr(w, ' ');

	if (sp) {
		*sp = '\0';
		*rest = sp + 1;
	} else {
		*rest = w + strlen(w);
	}
	return w;
}

static int parse_init(struct oracle_result *r, const char *verb, char *rest)
{
	if (!strcmp(verb, "hello"))
		r->hello = atoi(rest);
	else if (!strcmp(verb, "kernel"))
		snprintf(r->kernel, sizeof(r->kernel), "%s", rest);
	else if (!strcmp(verb, "uptime"))
		r->uptime_init = strtod(rest, NULL);
	else if (!strcmp(verb, "start")) {
		r->started = true;
		r->uptime_start = strtod(rest, NULL);
	} else if (!strcmp(verb, "exit")) {
		char *end;

		r->exited = true;
		r->exit_status = (int)strtol(rest, &end, 10);
		r->uptime_exit = strtod(end, NULL);
	} else if (!strcmp(verb, "end"))
		r->ended = true;
	else if (!strcmp(verb, "disk") || !strcmp(verb, "disk-error"))
		snprintf(r->disk, sizeof(r->disk), "%s%s", verb[4] ? "error: " : "", rest);
	else if (!strcmp(verb, "setting") || !strcmp(verb, "knob") || !strcmp(verb, "meminfo")) {
		char *key = word(&rest);

		if (!*key)
			return 0;
		if (verb[0] == 's')
			return pair_set(&r->settings, &r->nsettings, &r->capsettings, key, rest);
		if (verb[0] == 'k')
			return pair_set(&r->knobs, &r->nknobs, &r->capknobs, key, rest);
		return pair_set(&r->meminfo, &r->nmeminfo, &r->capmeminfo, key, rest);
	} else
		return 1;
	return 0;
}

uint64_t oracle_fnv1a64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static void memsnap_bad(struct oracle_memsnap *m, const char *why)
{
	m->state = ORACLE_MEMSNAP_BAD;
	snprintf(m->why, sizeof(m->why), "%s", why);
}

/* One quantum of 4 base64 characters into 1..3 bytes; -1 when it is not base64 ('=' only at
 * the end: "xx==" or "xxx="). */
static int b64_quantum(const char *q, unsigned char out[3])
{
	int v[4], pad = q[3] == '=' ? (q[2] == '=' ? 2 : 1) : 0;

	for (int k = 0; k < 4 - pad; k++)
		if ((v[k] = b64_value(q[k])) < 0)
			return -1;
	for (int k = 4 - pad; k < 4; k++)
		v[k] = 0;
	out[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
	out[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
	out[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	return 3 - pad;
}

/* One "S" line: whole quanta; a padded quantum ends the text. */
static int memsnap_data(struct oracle_memsnap *m, const char *b)
{
	size_t n = strlen(b);

	if (m->state != ORACLE_MEMSNAP_OPEN)
		return 0;
	if (n % 4 || m->padded) {
		memsnap_bad(m, "a data line that is not whole base64 (the console mangled it?)");
		return 0;
	}
	if (GROW(m->text, m->cap, m->len + n / 4 * 3 + 1))
		return -ENOMEM;
	for (size_t i = 0; i < n; i += 4) {
		unsigned char out[3];
		int k = m->padded ? -1 : b64_quantum(b + i, out);

		if (k < 0) {
			memsnap_bad(m, "a data line that is not base64 (the console mangled it?)");
			return 0;
		}
		memcpy(m->text + m->len, out, (size_t)k);
		m->len += (size_t)k;
		m->padded = k < 3;
	}
	m->text[m->len] = '\0';
	return 0;
}

/* "begin POINT", "end BYTES FNV", "failed WHY" */
static int parse_memsnap(struct oracle_result *r, char *rest)
{
	struct oracle_memsnap *m = &r->memsnap;
	char *what = word(&rest), *end;
	unsigned long long bytes, sum;
	char why[sizeof(m->why)];

	if (!strcmp(what, "begin")) {
		m->state = ORACLE_MEMSNAP_OPEN;
		m->len = 0;
		m->padded = false;
		if (m->text)
			m->text[0] = '\0';
		m->why[0] = '\0';
		snprintf(m->point, sizeof(m->point), "%s", word(&rest));
	} else if (!strcmp(what, "failed")) {
		snprintf(why, sizeof(why), "in the guest: %s", rest);
		memsnap_bad(m, why);
	} else if (!strcmp(what, "end")) {
		if (m->state != ORACLE_MEMSNAP_OPEN) {
			if (m->state == ORACLE_MEMSNAP_NONE)
				memsnap_bad(m, "an end without a begin");
			return 0;
		}
		bytes = strtoull(rest, &end, 10);
		sum = strtoull(end, &end, 16);
		if (bytes != m->len) {
			snprintf(why, sizeof(why),
				 "%zu bytes arrived of %llu (console lines lost?)", m->len, bytes);
			memsnap_bad(m, why);
		} else if (sum != oracle_fnv1a64(m->text, m->len)) {
			memsnap_bad(m, "its checksum does not match (the console mangled a line?)");
		} else {
			m->state = ORACLE_MEMSNAP_OK;
		}
	} else {
		return 1;
	}
	return 0;
}

static int parse_workload(struct oracle_result *r, const char *verb, char *rest)
{
	if (!strcmp(verb, "wl")) {
		char *name = word(&rest);

		snprintf(r->workload, sizeof(r->workload), "%s", name);
		r->wl_protocol = atoi(rest);
	} else if (!strcmp(verb, "info"))
		return pairs_kv(&r->info, &r->ninfo, &r->capinfo, rest);
	else if (!strcmp(verb, "summary"))
		return pairs_kv(&r->summary, &r->nsummary, &r->capsummary, rest);
	else if (!strcmp(verb, "snap"))
		return parse_snap(r, rest);
	else if (!strcmp(verb, "S"))
		return memsnap_data(&r->memsnap, rest);
	else if (!strcmp(verb, "snapshot"))
		return parse_memsnap(r, rest);
	else if (!strcmp(verb, "fault") || !strcmp(verb, "extent") || !strcmp(verb, "collapse"))
		return parse_extent_line(r, verb, rest);
	else if (!strcmp(verb, "anonhuge")) {
		char *end;
		double ms = strtod(rest, &end);

		if (end == rest || GROW(r->anonhuge, r->capanonhuge, r->nanonhuge))
			return end == rest ? 0 : -ENOMEM;
		r->anonhuge[r->nanonhuge].ms = ms;
		r->anonhuge[r->nanonhuge++].kb = strtoull(end, NULL, 10);
	} else if (!strcmp(verb, "order")) {
		char *end;
		unsigned long o = strtoul(rest, &end, 10);

		if (end != rest && o < 10) {
			r->orders[o] = strtoull(end, NULL, 10);
			r->have_orders = true;
		}
	} else if (!strcmp(verb, "error")) {
		if (r->nerrors < 4)
			snprintf(r->errors[r->nerrors++], sizeof(r->errors[0]), "%s", rest);
	} else
		return 1;
	return 0;
}

int oracle_result_line(struct oracle_result *r, const char *line)
{
	char buf[1024], *rest, *verb;
	const char *tag;
	size_t n = strlen(line);
	int rc;

	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	/* the firmware's terminal sequences may precede the first line on the same line */
	tag = memmem(line, n, "ORACLE ", 7);
	if (tag && tag != line && memchr(line, '\x1b', (size_t)(tag - line))) {
		n -= (size_t)(tag - line);
		line = tag;
	}
	if (n < 7 || strncmp(line, "ORACLE ", 7)) {
		if (n) {
			snprintf(buf, sizeof(buf), "%.*s", (int)n, line);
			keep_tail(r, buf);
		}
		return 0;
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)(n - 7), line + 7);
	rest = buf;
	verb = word(&rest);
	r->protocol_lines++;
	rc = parse_init(r, verb, rest);
	if (rc == 1)
		rc = parse_workload(r, verb, rest);
	if (rc == 1) {
		r->unknown_lines++;
		rc = 0;
	}
	return rc < 0 ? rc : 1;
}

int oracle_result_text(struct oracle_result *r, const char *text)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		char line[1024];
		int rc;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 text);
		rc = oracle_result_line(r, line);
		if (rc < 0)
			return rc;
		text += n + (nl ? 1 : 0);
	}
	return 0;
}

/* ---- queries ------------------------------------------------------------------------------ */

const struct oracle_snap *oracle_result_snap(const struct oracle_result *r, const char *tag)
{
	for (size_t i = 0; i < r->nsnaps; i++)
		if (!strcmp(r->snaps[i].tag, tag))
			return &r->snaps[i];
	return NULL;
}

static const struct oracle_counter *counter(const struct oracle_snap *s, const char *size,
					    const char *name)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->c[i].name, name) && !strcmp(s->c[i].size, size ? size : ""))
			return &s->c[i];
	return NULL;
}

int64_t oracle_snap_delta(const struct oracle_snap *a, const struct oracle_snap *b,
			  const char *size, const char *name, bool *found)
{
	const struct oracle_counter *x = counter(a, size, name), *y = counter(b, size, name);

	if (found)
		*found = x && y;
	return x && y ? y->value - x->value : 0;
}

const char *oracle_result_scope(const struct oracle_result *r, const struct oracle_snap **begin,
				const struct oracle_snap **end)
{
	static const char *const scopes[][3] = {{"phase", "phase-begin", "phase-end"},
						{"program", "program-begin", "program-end"}};

	for (size_t i = 0; i < 2; i++) {
		const struct oracle_snap *a = oracle_result_snap(r, scopes[i][1]);
		const struct oracle_snap *b = oracle_result_snap(r, scopes[i][2]);

		if (a && b) {
			*begin = a;
			*end = b;
			return scopes[i][0];
		}
	}
	*begin = *end = NULL;
	return NULL;
}

void oracle_result_counts(const struct oracle_result *r, size_t final[ORACLE_EXT_NOT_SEEN + 1],
			  size_t *fault_huge, size_t *fault_base)
{
	memset(final, 0, sizeof(size_t) * (ORACLE_EXT_NOT_SEEN + 1));
	*fault_huge = *fault_base = 0;
	for (size_t i = 0; i < r->next; i++) {
		final[r->ext[i].final]++;
		*fault_huge += r->ext[i].fault == 1;
		*fault_base += r->ext[i].fault == 0;
	}
}

static const char *pair_get(const struct oracle_pair *p, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].key, key))
			return p[i].value;
	return NULL;
}

const char *oracle_result_memsnap(const struct oracle_result *r, size_t *len)
{
	if (r->memsnap.state != ORACLE_MEMSNAP_OK)
		return NULL;
	*len = r->memsnap.len;
	return r->memsnap.text ? r->memsnap.text : "";
}

const char *oracle_result_value(const struct oracle_result *r, const char *key)
{
	const char *v = pair_get(r->summary, r->nsummary, key);

	return v ? v : pair_get(r->info, r->ninfo, key);
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* A value that reads as a JSON number is written as one, anything else as a string. */
static void json_value(struct json_w *w, const char *key, const char *v)
{
	char *end;
	double d;

	if (!*v || isspace((unsigned char)*v) || *v == '+' ||
	    (v[0] == '0' && isdigit((unsigned char)v[1]))) {
		jw_str(w, key, v);
		return;
	}
	d = strtod(v, &end);
	if (*end || end == v || strchr(v, 'x') || strchr(v, 'X') || strchr(v, 'n') ||
	    strchr(v, 'N') || strchr(v, 'e') || strchr(v, 'E'))
		jw_str(w, key, v);
	else if (!strchr(v, '.'))
		jw_i64(w, key, strtoll(v, NULL, 10));
	else
		jw_dbl(w, key, d, 3);
}

static void json_pairs(struct json_w *w, const char *key, const struct oracle_pair *p, size_t n,
		       bool typed)
{
	jw_obj_begin(w, key);
	for (size_t i = 0; i < n; i++)
		if (typed)
			json_value(w, p[i].key, p[i].value);
		else
			jw_str(w, p[i].key, p[i].value);
	jw_obj_end(w);
}

static void json_vmstat(struct json_w *w, const char *key, const struct oracle_snap *a,
			const struct oracle_snap *b)
{
	jw_obj_begin(w, key);
	for (size_t i = 0; a && b && i < a->n; i++) {
		bool found;
		int64_t d;

		if (a->c[i].size[0])
			continue;
		d = oracle_snap_delta(a, b, NULL, a->c[i].name, &found);
		if (found)
			jw_i64(w, a->c[i].name, d);
	}
	jw_obj_end(w);
}

static void json_mthp(struct json_w *w, const struct oracle_snap *a, const struct oracle_snap *b)
{
	char cur[16] = "";

	jw_obj_begin(w, "mthp");
	for (size_t i = 0; a && b && i < a->n; i++) {
		const struct oracle_counter *c = &a->c[i];
		bool found;
		int64_t d;

		if (!c->size[0])
			continue;
		d = oracle_snap_delta(a, b, c->size, c->name, &found);
		if (!found)
			continue;
		if (strcmp(cur, c->size)) {
			if (cur[0])
				jw_obj_end(w);
			snprintf(cur, sizeof(cur), "%s", c->size);
			jw_obj_begin(w, cur);
		}
		/* nr_anon and nr_anon_partially_mapped are gauges: their value at the end */
		if (!strncmp(c->name, "nr_", 3))
			jw_i64(w, c->name, counter(b, c->size, c->name)->value);
		else
			jw_i64(w, c->name, d);
	}
	if (cur[0])
		jw_obj_end(w);
	jw_obj_end(w);
}

static void json_extents(struct json_w *w, const struct oracle_result *r)
{
	jw_arr_begin(w, "extents");
	for (size_t i = 0; i < r->next; i++) {
		const struct oracle_extent *e = &r->ext[i];

		jw_obj_begin(w, NULL);
		jw_u64(w, "i", i);
		if (e->fault >= 0) {
			jw_str(w, "fault", e->fault ? "huge" : "base");
			jw_dbl(w, "fault_us", e->fault_us, 1);
		} else {
			jw_null(w, "fault");
		}
		jw_str(w, "final", oracle_ext_name(e->final));
		if (e->collapse_rc != 1) {
			jw_i64(w, "collapse_rc", e->collapse_rc);
			jw_str(w, "collapse_errno", e->collapse_errno);
			jw_dbl(w, "collapse_us", e->collapse_us, 1);
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void json_counts(struct json_w *w, const struct oracle_result *r)
{
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb;

	oracle_result_counts(r, final, &fh, &fb);
	jw_obj_begin(w, "counts");
	jw_u64(w, "extents", r->next);
	jw_u64(w, "fault_huge", fh);
	jw_u64(w, "fault_base", fb);
	if (fh + fb)
		jw_dbl(w, "fault_huge_pct", 100.0 * (double)fh / (double)(fh + fb), 1);
	else
		jw_null(w, "fault_huge_pct");
	jw_obj_begin(w, "final");
	for (int k = 0; k <= ORACLE_EXT_NOT_SEEN; k++)
		if (final[k])
			jw_u64(w, oracle_ext_name((enum oracle_ext)k), final[k]);
	jw_obj_end(w);
	jw_obj_end(w);
}

static void json_lists(struct json_w *w, const struct oracle_result *r)
{
	jw_arr_begin(w, "anonhuge");
	for (size_t i = 0; i < r->nanonhuge; i++) {
		jw_obj_begin(w, NULL);
		jw_dbl(w, "t_ms", r->anonhuge[i].ms, 3);
		jw_u64(w, "kb", r->anonhuge[i].kb);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_begin(w, "orders");
	for (unsigned o = 0; r->have_orders && o < 10; o++)
		if (r->orders[o]) {
			char k[4];

			snprintf(k, sizeof(k), "%u", o);
			jw_u64(w, k, r->orders[o]);
		}
	jw_obj_end(w);
	jw_arr_begin(w, "errors");
	for (int i = 0; i < r->nerrors; i++)
		jw_str(w, NULL, r->errors[i]);
	jw_arr_end(w);
	jw_arr_begin(w, "console_tail");
	for (int i = 0; i < r->ntail; i++)
		jw_str(
		    w, NULL,
		    r->tail[(r->tail_next - r->ntail + i + ORACLE_TAIL_LINES) % ORACLE_TAIL_LINES]);
	jw_arr_end(w);
}

static void json_memsnap(struct json_w *w, const struct oracle_memsnap *m)
{
	static const char *const states[] = {"none", "incomplete", "ok", "bad"};

	if (m->state == ORACLE_MEMSNAP_NONE) {
		jw_null(w, "memory_snapshot");
		return;
	}
	jw_obj_begin(w, "memory_snapshot");
	jw_str(w, "point", m->point[0] ? m->point : NULL);
	jw_str(w, "status", states[m->state]);
	jw_u64(w, "bytes", m->len);
	jw_str(w, "error", m->state == ORACLE_MEMSNAP_BAD ? m->why : NULL);
	jw_obj_end(w);
}

void oracle_result_json(struct json_w *w, const struct oracle_result *r)
{
	const struct oracle_snap *a, *b;
	const char *scope = oracle_result_scope(r, &a, &b);

	jw_str(w, "kernel_release", r->kernel[0] ? r->kernel : NULL);
	jw_str(w, "workload_name", r->workload[0] ? r->workload : NULL);
	if (r->exited)
		jw_i64(w, "exit_status", r->exit_status);
	else
		jw_null(w, "exit_status");
	jw_obj_begin(w, "guest_time");
	jw_dbl(w, "uptime_at_init_s", r->uptime_init, 3);
	if (r->started && r->exited)
		jw_dbl(w, "program_s", r->uptime_exit - r->uptime_start, 3);
	else
		jw_null(w, "program_s");
	jw_obj_end(w);
	json_pairs(w, "settings_applied", r->settings, r->nsettings, false);
	json_pairs(w, "knobs", r->knobs, r->nknobs, false);
	json_pairs(w, "meminfo_kb", r->meminfo, r->nmeminfo, true);
	jw_str(w, "disk", r->disk[0] ? r->disk : NULL);
	json_memsnap(w, &r->memsnap);
	jw_str(w, "counters_scope", scope);
	json_vmstat(w, "vmstat", a, b);
	json_vmstat(w, "vmstat_program", oracle_result_snap(r, "program-begin"),
		    oracle_result_snap(r, "program-end"));
	json_mthp(w, a, b);
	json_pairs(w, "info", r->info, r->ninfo, true);
	json_pairs(w, "summary", r->summary, r->nsummary, true);
	json_counts(w, r);
	json_extents(w, r);
	json_lists(w, r);
}
