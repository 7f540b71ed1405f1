/* Fuzz target: human units (core/util/units.c), the parsers behind every size, duration, rate,
 * fraction and count option. Whatever a parser accepts must be in range (a fraction in [0, 1])
 * and format without overflowing the caller's buffer. */
#include <math.h>

#include "fuzz.h"
#include "util/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), buf[48];
	uint64_t u;
	double f;

	if (units_parse_size(s, &u) == 0)
		FUZZ_CHECK(strlen(units_fmt_size(u, buf, sizeof(buf))) < sizeof(buf));
	if (units_parse_duration(s, &u) == 0)
		FUZZ_CHECK(strlen(units_fmt_duration(u, buf, sizeof(buf))) < sizeof(buf));
	if (units_parse_rate(s, &u) == 0)
		FUZZ_CHECK(strlen(units_fmt_rate(u, buf, sizeof(buf))) < sizeof(buf));
	if (units_parse_fraction(s, &f) == 0)
		FUZZ_CHECK(f >= 0 && f <= 1);
	if (units_parse_uint(s, 1000, &u) == 0)
		FUZZ_CHECK(u <= 1000);
	(void)units_parse_uint(s, UINT64_MAX, &u);
	free(s);
	return 0;
}
