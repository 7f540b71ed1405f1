/* Values read or built with jansson, written through the one JSON writer (util/json.h).
 *
 * The commands read reports with jansson and write some of what they read again: an ab report
 * embeds each run's report, a matrix result is the run's report with the cell's facts, the
 * device's statistics and the processes' stall events go into the run report. jansson parses
 * and edits; util/json.h writes, here as jansson's dumper did (json_dumps with JSON_COMPACT, no
 * flag or JSON_INDENT(n), JSON_SORT_KEYS and JSON_REAL_PRECISION(digits)), so those texts keep
 * their bytes: members in their order (or sorted by key), integers exact, reals with digits
 * significant digits (jw_real).
 */
#include "report/runs.h"

#include <stdlib.h>
#include <string.h>

static int by_key(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void write_object(struct json_w *w, const char *key, const json_t *v, int digits, bool sort)
{
	size_t n = json_object_size(v), i = 0;
	const char **keys = sort && n > 1 ? malloc(n * sizeof(*keys)) : NULL;
	const char *k;
	json_t *m;

	jw_obj_begin(w, key);
	if (keys) {
		json_object_foreach((json_t *)v, k, m)
		{
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), by_key);
		for (i = 0; i < n; i++)
			rd_jw_value(w, keys[i], json_object_get(v, keys[i]), digits, sort);
		free(keys);
	} else {
		if (sort && n > 1) /* out of memory: the document is not what was asked for */
			w->err = true;
		json_object_foreach((json_t *)v, k, m)
		{
			rd_jw_value(w, k, m, digits, sort);
		}
	}
	jw_obj_end(w);
}

void rd_jw_value(struct json_w *w, const char *key, const json_t *v, int digits, bool sort)
{
	if (!v) {
		jw_null(w, key);
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		write_object(w, key, v, digits, sort);
		break;
	case JSON_ARRAY:
		jw_arr_begin(w, key);
		for (size_t i = 0; i < json_array_size(v); i++)
			rd_jw_value(w, NULL, json_array_get(v, i), digits, sort);
		jw_arr_end(w);
		break;
	case JSON_STRING:
		jw_str(w, key, json_string_value(v));
		break;
	case JSON_INTEGER:
		jw_i64(w, key, (int64_t)json_integer_value(v));
		break;
	case JSON_REAL:
		jw_real(w, key, json_real_value(v), digits);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		jw_bool(w, key, json_is_true(v));
		break;
	case JSON_NULL:
		jw_null(w, key);
		break;
	}
}

char *rd_json_text(const json_t *v, int layout, int digits, bool sort)
{
	struct json_w w;

	if (!v || jw_mem_open(&w, layout) < 0)
		return NULL;
	rd_jw_value(&w, NULL, v, digits, sort);
	return jw_mem_close(&w);
}
