/* Fuzz target: policy spec strings (core/mm/policy.c), NAME[:KEY=VALUE,...] as --policy,
 * THPEMU_POLICY and a trace's header give them. A spec that parses must pass the checks
 * mm_create applies, and its canonical form (what reports record) must parse back to the same
 * policy. */
#include "fuzz.h"
#include "mm/internal.h" /* mm_policy_validate: the check mm_create applies */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), err[512], a[512], b[512];
	struct mm_policy p, q;

	if (mm_policy_parse(s, &p, err, sizeof(err)) == 0) {
		FUZZ_CHECK(mm_policy_validate(&p, err, sizeof(err)) == 0);
		mm_policy_format(&p, a, sizeof(a));
		FUZZ_CHECK(mm_policy_parse(a, &q, err, sizeof(err)) == 0);
		mm_policy_format(&q, b, sizeof(b));
		FUZZ_CHECK(strcmp(a, b) == 0);
	} else {
		FUZZ_CHECK(strlen(err) > 0 && strlen(err) < sizeof(err));
	}
	free(s);
	return 0;
}
