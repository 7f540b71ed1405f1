/* A small streaming JSON writer with deterministic output: thpemu's one JSON writer.
 *
 * Every JSON text thpemu makes goes through it: the reports (sim, run, ab, the machine's), the
 * fragments they embed, the device's statistics, the machine's status, and what the commands
 * write again after reading it with jansson (core/report: rd_jw_value). It is the one because it
 * is the one every part can use: it needs no library (the preloaded libthpemu.so and
 * thpemu-fusedev link no jansson), never allocates unless asked to write to memory, and gives
 * byte-identical files for the same inputs: keys appear in call order, integers are exact,
 * doubles use a fixed number of decimals (jw_dbl) or significant digits (jw_real), NaN and
 * infinities become null. It writes to a stdio stream; errors are sticky and returned by
 * jw_finish().
 */
#ifndef THPEMU_UTIL_JSON_H
#define THPEMU_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

/* Layouts (jw_init_layout): JW_COMPACT {"a":1,"b":[2]}; JW_LINE {"a": 1, "b": [2]}, one line;
 * a number n > 0 one member a line, indented n spaces a level. They are jansson's three
 * (JSON_COMPACT, no flag, JSON_INDENT(n)), so that text jansson wrote keeps its bytes. */
#define JW_COMPACT 0
#define JW_LINE	   (-1)

struct json_w {
	FILE *f;
	int depth;
	int indent;	   /* spaces a level (one member a line), 0: one line */
	const char *comma; /* between members: "," or ", " */
	const char *colon; /* between a key and its value: ":" or ": " */
	bool err;
	bool need_comma[JW_MAX_DEPTH];
	char *mem; /* jw_mem_open: the text so far */
	size_t memlen;
};

/* pretty: indented 2 spaces a level; else JW_COMPACT. */
void jw_init(struct json_w *w, FILE *f, bool pretty);
void jw_init_layout(struct json_w *w, FILE *f, int layout);
/* key is NULL inside arrays and for the top-level value. */
void jw_obj_begin(struct json_w *w, const char *key);
void jw_obj_end(struct json_w *w);
void jw_arr_begin(struct json_w *w, const char *key);
void jw_arr_end(struct json_w *w);
void jw_str(struct json_w *w, const char *key, const char *v); /* v NULL -> null */
void jw_u64(struct json_w *w, const char *key, uint64_t v);
void jw_i64(struct json_w *w, const char *key, int64_t v);
/* v with a fixed number of decimals ("0.500"). */
void jw_dbl(struct json_w *w, const char *key, double v, int decimals);
/* v with at most digits significant digits (0: 17), as jansson writes a real: "%.*g", a ".0"
 * added to a whole number so that it reads back as a real, the exponent without '+' or leading
 * zeros (0.5, 3.0, 1.5e-7, 1e21). */
void jw_real(struct json_w *w, const char *key, double v, int digits);
void jw_bool(struct json_w *w, const char *key, bool v);
void jw_null(struct json_w *w, const char *key);
/* Writes a pre-formatted JSON value verbatim (caller guarantees validity). */
void jw_raw(struct json_w *w, const char *key, const char *json);
/* Terminates the document with a newline. Returns 0 or -EIO. */
int jw_finish(struct json_w *w);

/* A value written to memory, to embed (jw_raw) or send: jw_mem_open starts it in a layout of
 * jw_init_layout (0, or -ENOMEM); jw_mem_close returns its text (malloc'd, without a newline), or
 * NULL if memory ran out or the value was left open. */
int jw_mem_open(struct json_w *w, int layout);
char *jw_mem_close(struct json_w *w);

/* Writes s as a JSON string literal (with quotes) to f. */
void json_write_string(FILE *f, const char *s);

#endif
