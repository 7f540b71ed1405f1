/* Streaming JSON writer (see json.h). */
#include "util/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void jw_init_layout(struct json_w *w, FILE *f, int layout)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->indent = layout > 0 ? layout : 0;
	w->comma = layout == JW_LINE ? ", " : ",";
	w->colon = layout == JW_COMPACT ? ":" : ": ";
}

void jw_init(struct json_w *w, FILE *f, bool pretty)
{
	jw_init_layout(w, f, pretty ? 2 : JW_COMPACT);
}

void json_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void newline(struct json_w *w)
{
	if (!w->indent)
		return;
	fputc('\n', w->f);
	fprintf(w->f, "%*s", w->depth * w->indent, "");
}

static void prefix(struct json_w *w, const char *key)
{
	if (w->need_comma[w->depth])
		fputs(w->comma, w->f);
	if (w->depth > 0)
		newline(w);
	w->need_comma[w->depth] = true;
	if (key) {
		json_write_string(w->f, key);
		fputs(w->colon, w->f);
	}
}

static void open_(struct json_w *w, const char *key, char c)
{
	prefix(w, key);
	fputc(c, w->f);
	if (w->depth + 1 >= JW_MAX_DEPTH) {
		w->err = true;
		return;
	}
	w->depth++;
	w->need_comma[w->depth] = false;
}

static void close__(struct json_w *w, char c)
{
	bool had = w->need_comma[w->depth];

	if (w->depth == 0) {
		w->err = true;
		return;
	}
	w->depth--;
	if (had)
		newline(w);
	fputc(c, w->f);
}

void jw_obj_begin(struct json_w *w, const char *key)
{
	open_(w, key, '{');
}

void jw_obj_end(struct json_w *w)
{
	close__(w, '}');
}

void jw_arr_begin(struct json_w *w, const char *key)
{
	open_(w, key, '[');
}

void jw_arr_end(struct json_w *w)
{
	close__(w, ']');
}

void jw_str(struct json_w *w, const char *key, const char *v)
{
	prefix(w, key);
	if (v)
		json_write_string(w->f, v);
	else
		fputs("null", w->f);
}

void jw_u64(struct json_w *w, const char *key, uint64_t v)
{
	prefix(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

void jw_i64(struct json_w *w, const char *key, int64_t v)
{
	prefix(w, key);
	fprintf(w->f, "%" PRId64, v);
}

void jw_dbl(struct json_w *w, const char *key, double v, int decimals)
{
	prefix(w, key);
	if (!isfinite(v))
		fputs("null", w->f);
	else if (v == 0) /* avoid "-0.000" */
		fprintf(w->f, "%.*f", decimals, 0.0);
	else
		fprintf(w->f, "%.*f", decimals, v);
}

void jw_real(struct json_w *w, const char *key, double v, int digits)
{
	char buf[64], *e, *from, *to;
	int n;

	prefix(w, key);
	if (!isfinite(v)) {
		fputs("null", w->f);
		return;
	}
	n = snprintf(buf, sizeof(buf) - 2, "%.*g", digits > 0 ? digits : 17, v);
	if (n < 0 || n >= (int)sizeof(buf) - 2) {
		w->err = true;
		return;
	}
	if (!strchr(buf, '.') && !strchr(buf, 'e'))
		strcat(buf, ".0");
	e = strchr(buf, 'e');
	if (e) { /* "1e+06" -> "1e6", "1e-07" -> "1e-7" */
		to = e[1] == '-' ? e + 2 : e + 1;
		for (from = e + 2; *from == '0' && from[1]; from++)
			;
		memmove(to, from, strlen(from) + 1);
	}
	fputs(buf, w->f);
}

void jw_bool(struct json_w *w, const char *key, bool v)
{
	prefix(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct json_w *w, const char *key)
{
	prefix(w, key);
	fputs("null", w->f);
}

void jw_raw(struct json_w *w, const char *key, const char *json)
{
	prefix(w, key);
	fputs(json, w->f);
}

int jw_finish(struct json_w *w)
{
	fputc('\n', w->f);
	if (w->depth != 0)
		w->err = true;
	if (fflush(w->f) != 0 || ferror(w->f))
		w->err = true;
	return w->err ? -EIO : 0;
}

int jw_mem_open(struct json_w *w, int layout)
{
	FILE *f;

	jw_init_layout(w, NULL, layout);
	f = open_memstream(&w->mem, &w->memlen);
	if (!f)
		return -ENOMEM;
	w->f = f;
	return 0;
}

char *jw_mem_close(struct json_w *w)
{
	bool bad = w->err || w->depth != 0 || ferror(w->f);

	if (fclose(w->f) != 0 || bad) {
		free(w->mem);
		w->mem = NULL;
	}
	w->f = NULL;
	return w->mem;
}
