/* Human units for sizes, durations, rates and fractions.
 *
 * Used by every command-line and THPEMU_* option so that "64M", "20ms", "5MiB/s" and
 * "0.5%" mean the same thing everywhere. Conventions follow dd(1): K, M, G, T and the
 * IEC forms KiB, MiB, GiB, TiB are powers of 1024; KB, MB, GB, TB are powers of 1000.
 * All parsers return 0 or -EINVAL and never print: the caller names the option.
 */
#ifndef THPEMU_UTIL_UNITS_H
#define THPEMU_UTIL_UNITS_H

#include <stdint.h>
#include <stddef.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC  1000000000ULL

/* "4096", "4k", "64M", "1.5G", "2MiB", "10MB". Result in bytes. */
int units_parse_size(const char *s, uint64_t *bytes);

/* "20ms", "1.5s", "500us", "100ns", "2m", "1h". A bare number is rejected
 * (durations must carry a unit), except "0". Result in nanoseconds. */
int units_parse_duration(const char *s, uint64_t *ns);

/* "5M", "5MiB/s", "5MB/s", "40Mbit/s", "512k". Result in bytes per second. */
int units_parse_rate(const char *s, uint64_t *bytes_per_s);

/* A ratio: "0.25", "25%", "1.25", "125%" (a non-negative number, or a percentage of 1), at most
 * max. Result as a ratio ("25%" is 0.25). */
int units_parse_ratio(const char *s, double max, double *ratio);

/* "0.5%", "50%", "0.25" (a fraction), "1". Result as a fraction in [0, 1]. */
int units_parse_fraction(const char *s, double *frac);

/* Non-negative decimal integer with no suffix, at most max. */
int units_parse_uint(const char *s, uint64_t max, uint64_t *out);

/* Formatting for human output: "64.0 MiB", "1.23 s", "5.00 MiB/s". Returns buf. */
const char *units_fmt_size(uint64_t bytes, char *buf, size_t len);
const char *units_fmt_duration(uint64_t ns, char *buf, size_t len);
const char *units_fmt_rate(uint64_t bytes_per_s, char *buf, size_t len);

#endif
