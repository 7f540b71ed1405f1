/* Values read with jansson and written again through util/json.h (core/report/jvalue.c): the text
 * is jansson's own json_dumps output, byte for byte, for every flag thpemu used with it (compact,
 * one line, indented, sorted keys, real precision), on a document of every kind of value and on a
 * run report as the writer makes it; a string with control characters keeps its value. */
#include "harness.h"

#include <jansson.h>
#include <stdlib.h>

#include "report/run.h"
#include "report/runs.h"

static const char doc[] =
    "{\"kind\": \"run\", \"z\": 1, \"a\": [1, -2, 9223372036854775807, 0.0, -0.0, 3.0, 0.5,"
    " 12.3456789012345678, 1234567.0, 1.5e-7, 1e21, 2.5e-10, 1e300, 100000000000000000000.0,"
    " 123456789012.345],"
    " \"s\": \"caf\\u00e9 \\\"quoted\\\" back\\\\slash /slash \\u2603\","
    " \"t\": true, \"f\": false, \"n\": null, \"e\": {}, \"ea\": [],"
    " \"nested\": {\"y\": [[], [{}], {\"b\": 2, \"a\": 1}], \"x\": {\"k\": \"v\"}}}";

/* (layout, digits, sort) and the json_dumps flags they stand for */
static const struct {
	int layout, digits;
	bool sort;
	size_t flags;
} modes[] = {
    {JW_COMPACT, 12, false, JSON_COMPACT | JSON_REAL_PRECISION(12)},
    {JW_COMPACT, 0, false, JSON_COMPACT},
    {JW_LINE, 12, false, JSON_REAL_PRECISION(12)},
    {1, 12, true, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(12)},
    {2, 10, false, JSON_INDENT(2) | JSON_REAL_PRECISION(10)},
    {2, 6, false, JSON_INDENT(2) | JSON_REAL_PRECISION(6)},
    {4, 3, true, JSON_INDENT(4) | JSON_SORT_KEYS | JSON_REAL_PRECISION(3)},
};

static void same_as_jansson(json_t *v)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *ours = rd_json_text(v, modes[i].layout, modes[i].digits, modes[i].sort);
		char *theirs = json_dumps(v, modes[i].flags);

		ASSERT(ours != NULL && theirs != NULL);
		if (strcmp(ours, theirs))
			fprintf(stderr, "  mode %zu:\n  ours:   %.400s\n  theirs: %.400s\n", i,
				ours, theirs);
		EXPECT(strcmp(ours, theirs) == 0);
		free(ours);
		free(theirs);
	}
}

TEST(every_kind_of_value_as_jansson_wrote_it)
{
	json_error_t je;
	json_t *v = json_loads(doc, 0, &je);

	ASSERT(v != NULL);
	same_as_jansson(v);
	json_decref(v);
	EXPECT(rd_json_text(NULL, JW_COMPACT, 12, false) == NULL);
}

TEST(a_run_report_as_jansson_wrote_it)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));
	struct uffd_program_info prog = {.exit_status = 0, .wall_s = 1.25, .processes = 1};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct config cfg;
	json_t *v;

	ASSERT(st && f);
	config_defaults(&cfg);
	obs_faults_init(&st->faults);
	for (unsigned i = 0; i < 200; i++)
		obs_hist_record(&st->faults.lat[i % 3 ? OBS_BASE : OBS_HUGE], 1000 + 997 * i);
	st->vmstat[0] = 12345;
	st->host.messages = 200;
	ASSERT_EQ(uffd_report_json(f, &cfg, st, &prog), 0);
	fclose(f);
	v = json_loads(buf, 0, NULL);
	ASSERT(v != NULL);
	same_as_jansson(v);
	json_decref(v);
	free(buf);
	free(st);
}

/* jansson wrote \b, \f and \u001B; the one writer \u0008, \u000c and \u001b: the same string. */
TEST(control_characters_keep_their_value)
{
	json_t *v = json_pack("{s:s}", "s", "a\b\f\x1b\x7f\t\n\r\"z");
	json_t *back;
	char *text;

	ASSERT(v != NULL);
	text = rd_json_text(v, JW_COMPACT, 12, false);
	ASSERT(text != NULL);
	ASSERT_STREQ(text, "{\"s\":\"a\\u0008\\u000c\\u001b\x7f\\t\\n\\r\\\"z\"}");
	back = json_loads(text, 0, NULL);
	ASSERT(back != NULL);
	EXPECT(json_equal(v, back));
	json_decref(back);
	json_decref(v);
	free(text);
}

TEST_MAIN()
