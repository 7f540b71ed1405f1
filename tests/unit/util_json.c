/* The JSON writer (core/util/json.c): deterministic and escaped; its three layouts, which are
 * jansson's (report_jvalue compares them with jansson's own output); reals as jansson writes
 * them; values written to memory. */
#include "harness.h"
#include "util/json.h"

#include <stdlib.h>

TEST(json_is_deterministic_and_escaped)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_w w;

	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "s", "a\"b\n");
	jw_u64(&w, "n", 18446744073709551615ULL);
	jw_dbl(&w, "d", 1.0 / 3, 3);
	jw_dbl(&w, "nan", 0.0 / 0.0, 3);
	jw_arr_begin(&w, "a");
	jw_i64(&w, NULL, -1);
	jw_bool(&w, NULL, true);
	jw_arr_end(&w);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(f);
	ASSERT_STREQ(buf, "{\"s\":\"a\\\"b\\n\",\"n\":18446744073709551615,\"d\":0.333,"
			  "\"nan\":null,\"a\":[-1,true]}\n");
	free(buf);
}

/* The same document in each layout. */
static char *doc(int layout)
{
	struct json_w w;

	if (jw_mem_open(&w, layout) < 0)
		return NULL;
	jw_obj_begin(&w, NULL);
	jw_u64(&w, "a", 1);
	jw_arr_begin(&w, "b");
	jw_str(&w, NULL, "x");
	jw_obj_begin(&w, NULL);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_arr_begin(&w, "c");
	jw_arr_end(&w);
	jw_obj_end(&w);
	return jw_mem_close(&w);
}

TEST(json_layouts)
{
	const struct {
		int layout;
		const char *want;
	} t[] = {
	    {JW_COMPACT, "{\"a\":1,\"b\":[\"x\",{}],\"c\":[]}"},
	    {JW_LINE, "{\"a\": 1, \"b\": [\"x\", {}], \"c\": []}"},
	    {1, "{\n \"a\": 1,\n \"b\": [\n  \"x\",\n  {}\n ],\n \"c\": []\n}"},
	    {2, "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    {}\n  ],\n  \"c\": []\n}"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *s = doc(t[i].layout);

		ASSERT(s != NULL);
		ASSERT_STREQ(s, t[i].want);
		free(s);
	}
}

static char *real(double v, int digits)
{
	struct json_w w;

	if (jw_mem_open(&w, JW_COMPACT) < 0)
		return NULL;
	jw_real(&w, NULL, v, digits);
	return jw_mem_close(&w);
}

TEST(json_reals_as_jansson_writes_them)
{
	const struct {
		double v;
		int digits;
		const char *want;
	} t[] = {
	    {0.0, 12, "0.0"},
	    {-0.0, 12, "-0.0"},
	    {3.0, 12, "3.0"},
	    {0.5, 12, "0.5"},
	    {1.0 / 3, 6, "0.333333"},
	    {12.3456789, 6, "12.3457"},
	    {1234567.0, 6, "1.23457e6"},
	    {1.5e-7, 12, "1.5e-7"},
	    {1e21, 12, "1e21"},
	    {2.5e-10, 12, "2.5e-10"},
	    {1e100, 12, "1e100"},
	    {0.1, 0, "0.10000000000000001"},
	    {100.0, 2, "1e2"},
	    {1.0 / 0.0, 12, "null"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *s = real(t[i].v, t[i].digits);

		ASSERT(s != NULL);
		ASSERT_STREQ(s, t[i].want);
		free(s);
	}
}

TEST(json_in_memory_is_whole_or_nothing)
{
	struct json_w w;
	char *s;

	ASSERT_EQ(jw_mem_open(&w, JW_COMPACT), 0);
	jw_obj_begin(&w, NULL);
	jw_u64(&w, "n", 7);
	EXPECT(jw_mem_close(&w) == NULL); /* left open */
	ASSERT_EQ(jw_mem_open(&w, JW_COMPACT), 0);
	jw_obj_begin(&w, NULL);
	jw_obj_end(&w);
	jw_obj_end(&w); /* one end too many */
	EXPECT(jw_mem_close(&w) == NULL);
	ASSERT_EQ(jw_mem_open(&w, JW_LINE), 0);
	jw_str(&w, NULL, "top");
	s = jw_mem_close(&w);
	ASSERT(s != NULL);
	ASSERT_STREQ(s, "\"top\""); /* no newline: text to embed */
	free(s);
}

TEST_MAIN()
