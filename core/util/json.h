/* A small streaming JSON writer with deterministic output.
 *
 * Every report thpemu writes (sim, run, ab) goes through this writer, so the same
 * inputs give byte-identical files: keys appear in call order, integers are exact,
 * doubles use a fixed number of decimals, NaN and infinities become null.
 * The writer never allocates; it writes to a stdio stream. Errors are sticky and
 * returned by jw_finish().
 */
#ifndef THPEMU_UTIL_JSON_H
#define THPEMU_UTIL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

struct json_w {
	FILE *f;
	int depth;
	bool pretty;
	bool err;
	bool need_comma[JW_MAX_DEPTH];
};

void jw_init(struct json_w *w, FILE *f, bool pretty);
/* key is NULL inside arrays and for the top-level value. */
void jw_obj_begin(struct json_w *w, const char *key);
void jw_obj_end(struct json_w *w);
void jw_arr_begin(struct json_w *w, const char *key);
void jw_arr_end(struct json_w *w);
void jw_str(struct json_w *w, const char *key, const char *v); /* v NULL -> null */
void jw_u64(struct json_w *w, const char *key, uint64_t v);
void jw_i64(struct json_w *w, const char *key, int64_t v);
void jw_dbl(struct json_w *w, const char *key, double v, int decimals);
void jw_bool(struct json_w *w, const char *key, bool v);
void jw_null(struct json_w *w, const char *key);
/* Writes a pre-formatted JSON value verbatim (caller guarantees validity). */
void jw_raw(struct json_w *w, const char *key, const char *json);
/* Terminates the document with a newline. Returns 0 or -EIO. */
int jw_finish(struct json_w *w);

/* Writes s as a JSON string literal (with quotes) to f. */
void json_write_string(FILE *f, const char *s);

#endif
