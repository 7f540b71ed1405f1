/* Fuzz target: the oracle's line protocol (core/oracle/result.c), what a guest's console and a
 * workload's stdout feed it, then the boot's JSON and its queries. Counts stay within what was
 * read: no more extents than the largest index seen plus one, every extent counted once. */
#include "fuzz.h"
#include "oracle/result.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb, sum = 0;
	const struct oracle_snap *a, *b;
	struct oracle_result r;
	struct json_w w;

	oracle_result_init(&r);
	if (oracle_result_text(&r, s) == 0) {
		oracle_result_counts(&r, final, &fh, &fb);
		for (int k = 0; k <= ORACLE_EXT_NOT_SEEN; k++)
			sum += final[k];
		FUZZ_CHECK(sum == r.next);
		FUZZ_CHECK(fh + fb <= r.next);
		if (oracle_result_scope(&r, &a, &b))
			FUZZ_CHECK(a && b);
		jw_init(&w, fuzz_null(), true);
		jw_obj_begin(&w, NULL);
		oracle_result_json(&w, &r);
		jw_obj_end(&w);
		FUZZ_CHECK(jw_finish(&w) == 0);
	}
	oracle_result_free(&r);
	free(s);
	return 0;
}
