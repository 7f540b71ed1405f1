/* Human unit parsing and formatting (see units.h for the conventions). */
#include "util/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct unit {
	const char *name;
	double mult;
};

/* The non-negative decimal number s starts with (no sign), in *v; *end is where it stops. */
static int parse_number(const char *s, double *v, char **end)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtod(s, end);
	if (errno || *end == s || !isfinite(*v) || *v < 0)
		return -EINVAL;
	return 0;
}

/* Parses "<number><suffix>" where suffix is one of table (exact, case-sensitive
 * first, then case-insensitive). An empty suffix is allowed only if bare_ok. */
static int parse_with(const char *s, const struct unit *table, int bare_ok, double *out)
{
	char *end;
	double v;

	if (parse_number(s, &v, &end) < 0)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (!*end) {
		if (!bare_ok && v != 0)
			return -EINVAL;
		*out = v;
		return 0;
	}
	for (const struct unit *u = table; u->name; u++) {
		if (strcmp(end, u->name) == 0) {
			*out = v * u->mult;
			return 0;
		}
	}
	for (const struct unit *u = table; u->name; u++) {
		if (strcasecmp(end, u->name) == 0) {
			*out = v * u->mult;
			return 0;
		}
	}
	return -EINVAL;
}

#define KI 1024.0
#define KD 1000.0

static const struct unit size_units[] = {
    {"B", 1},
    {"k", KI},
    {"K", KI},
    {"KiB", KI},
    {"KB", KD},
    {"M", KI *KI},
    {"MiB", KI *KI},
    {"MB", KD *KD},
    {"G", KI *KI *KI},
    {"GiB", KI *KI *KI},
    {"GB", KD *KD *KD},
    {"T", KI *KI *KI *KI},
    {"TiB", KI *KI *KI *KI},
    {"TB", KD *KD *KD *KD},
    {NULL, 0},
};

int units_parse_size(const char *s, uint64_t *bytes)
{
	double v;

	if (parse_with(s, size_units, 1, &v) < 0 || v >= 18446744073709551615.0)
		return -EINVAL;
	if (v != floor(v))
		v = floor(v + 0.5);
	*bytes = (uint64_t)v;
	return 0;
}

static const struct unit duration_units[] = {
    {"ns", 1},	  {"us", 1e3}, {"µs", 1e3},   {"ms", 1e6},   {"s", 1e9},
    {"sec", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}, {NULL, 0},
};

int units_parse_duration(const char *s, uint64_t *ns)
{
	double v;

	if (parse_with(s, duration_units, 0, &v) < 0 || v >= 1.8e19)
		return -EINVAL;
	*ns = (uint64_t)(v + 0.5);
	return 0;
}

int units_parse_rate(const char *s, uint64_t *bytes_per_s)
{
	char tmp[64];
	size_t n;
	double v, mult = 1;
	int bits = 0;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n + 1);
	if (n > 2 && strcmp(tmp + n - 2, "/s") == 0)
		tmp[n -= 2] = '\0';
	if (n > 3 && strcasecmp(tmp + n - 3, "bit") == 0) {
		tmp[n -= 3] = '\0';
		bits = 1;
	}
	if (bits) {
		static const struct unit bit_units[] = {
		    {"k", KD}, {"K", KD}, {"M", KD * KD}, {"G", KD * KD * KD}, {NULL, 0},
		};
		if (parse_with(tmp, bit_units, 1, &v) < 0)
			return -EINVAL;
		mult = 1.0 / 8;
	} else if (parse_with(tmp, size_units, 1, &v) < 0) {
		return -EINVAL;
	}
	v *= mult;
	if (v >= 1.8e19)
		return -EINVAL;
	*bytes_per_s = (uint64_t)(v + 0.5);
	return 0;
}

int units_parse_ratio(const char *s, double max, double *ratio)
{
	char *end;
	double v;

	if (parse_number(s, &v, &end) < 0)
		return -EINVAL;
	if (*end == '%' && end[1] == '\0')
		v /= 100;
	else if (*end)
		return -EINVAL;
	if (v > max)
		return -EINVAL;
	*ratio = v;
	return 0;
}

int units_parse_fraction(const char *s, double *frac)
{
	return units_parse_ratio(s, 1, frac);
}

int units_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *units_fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned i = 0;

	while (v >= 1024 && i + 1 < sizeof(names) / sizeof(names[0])) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, names[i]);
	return buf;
}

const char *units_fmt_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns < NSEC_PER_USEC)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < NSEC_PER_MSEC)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < NSEC_PER_SEC)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
	return buf;
}

const char *units_fmt_rate(uint64_t bytes_per_s, char *buf, size_t len)
{
	char tmp[32];

	snprintf(buf, len, "%s/s", units_fmt_size(bytes_per_s, tmp, sizeof(tmp)));
	return buf;
}
