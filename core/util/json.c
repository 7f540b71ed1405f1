/* Streaming JSON writer (see json.h). */
#include "util/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>

void jw_init(struct json_w *w, FILE *f, bool pretty)
{
	w->f = f;
	w->depth = 0;
	w->pretty = pretty;
	w->err = false;
	w->need_comma[0] = false;
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
	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

static void prefix(struct json_w *w, const char *key)
{
	if (w->need_comma[w->depth])
		fputc(',', w->f);
	if (w->depth > 0)
		newline(w);
	w->need_comma[w->depth] = true;
	if (key) {
		json_write_string(w->f, key);
		fputs(w->pretty ? ": " : ":", w->f);
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
