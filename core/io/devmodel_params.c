/* Device-model parameters: named presets of 2011-era slow devices and "key=value" parsing.
 *
 * The presets are central values of published figures (fusedev/README.md names them per preset),
 * i.e. what a kernel developer reproducing the 2011 "THP stalls on a USB stick" reports would
 * plug in; the keys are the knobs of the service-queue model in devmodel.c. Every key takes
 * human units (util/units.h) and devm_params_format() writes a set back in a form this parser
 * accepts, so a device description round-trips through reports and control files.
 */
#include "io/devmodel.h"
#include "util/units.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB  1000000ULL /* device vendors and benchmarks quote decimal megabytes */
#define MIB (1ULL << 20)
#define MS  NSEC_PER_MSEC
#define US  NSEC_PER_USEC

/*
 * Presets. Bandwidth is sustained sequential write; "setup" is per-command overhead; QD is
 * the number of slots. Sources (full list in fusedev/README.md):
 *  usb2-stick-2011  5 MB/s (range 3-10): Wikipedia "USB flash drive" (fast drives "write at
 *                   about half" of 30 MB/s), a Verbatim Store'n'Go measured 7.73 MB/s (f3write,
 *                   aminebenhariz.com); QD 1: USB BOT runs one command at a time (Wikipedia
 *                   "USB Attached SCSI", devever.net/~hl/usbuas); GC: 4 MiB allocation units,
 *                   2 open (LWN 428584, Linaro FlashCardSurvey), the copy rate calibrated to
 *                   a measured cheap USB 2.0 stick: random 256 KiB writes at 0.51 MB/s on a
 *                   16 GB SanDisk Cruzer Blade, FAT (davidsommers.com, Jul 2012), i.e. ~0.45 s
 *                   of forced GC per scattered write; the model gives 0.53 MB/s.
 *  usb2-stick-fast  15 MB/s: "write at about half" of 30 MB/s; 8 MiB erase blocks (Patriot,
 *                   flashbench results), 4 open AUs.
 *  sd-class4        4 MB/s: SD Association speed class 4 minimum sustained write; busy 250 ms
 *                   (spec maximum, drivers/mmc/core/core.c) every 4 MiB +-100 ms; 0.5 % of
 *                   writes 0.5-1 s (the 3 s Linux write timeout exists because cards exceed
 *                   the spec; freesteel.co.uk 2016 saw 205-407 ms gaps).
 *  sd-class10       10 MB/s: SDA class 10 / U1; busy 200 ms +-100 ms every 8 MiB (4 MB
 *                   segments, LWN 428836; freesteel gaps).
 *  sd-u3            30 MB/s: SDA U3; 100 ms busy every 32 MiB.
 *  sd-a1            10 MB/s + 2 ms per command (A1: 500 write IOPS); 0.2 % of ops 100-250 ms.
 *  usb2-hdd         28 MB/s write, 35 MB/s read (CNet 25-30 MB/s via Wikipedia, AcomData
 *                   "mid-30s"); seek 12 ms + half a 5400 rpm rotation 5.6 ms when a request
 *                   is not within 4 KiB of the previous one (google/slowfs hdd model shape).
 *  sata-hdd-2011    100 MB/s write, 110 MB/s read: a 2009-2011 7200 rpm desktop disk (Tom's
 *                   Hardware, "A Quartet Of 500 GB HDDs Under $60": up to 111.7 MB/s read, WD's
 *                   Caviar Blue the slowest; WD10EALX data sheet: 126 MB/s buffer to disk, max);
 *                   seek 12.7 ms = an estimated 8.5 ms average seek + half a 7200 rpm turn
 *                   4.2 ms, same shape as usb2-hdd; one slot (NCQ reordering not modelled).
 *                   The disk of an mmtests test partition (scenario mel-2011).
 *  nfs-100mbit      11 MB/s (derived: 12.5 MB/s raw minus TCP/RPC overhead); 0.5 ms RTT +
 *                   1 ms server per op; 16 slots (RPC slot table).
 *  nfs-wan          2 MB/s, 40 ms RTT, 8 slots, 1 % of ops +1 s (retransmit); derived.
 *  dead             hangs until resumed (nbdkit pause filter semantics); then as `fast`.
 *  fast             no throttle: measures fusedev's own overhead.
 */
/* clang-format off */
static const struct devm_params presets[] = {
	{
		.name = "usb2-stick-2011",
		.write_bw = 5 * MB, .read_bw = 15 * MB,
		.setup_ns = 1 * MS, .read_setup_ns = 500 * US,
		.jitter = 0.20, .slots = 1,
		.gc_au_bytes = 4 * MIB, .gc_open_aus = 2, .gc_copy_bw = 9 * MB,
		.gc_erase_ns = 2 * MS,
	},
	{
		.name = "usb2-stick-fast",
		.write_bw = 15 * MB, .read_bw = 30 * MB,
		.setup_ns = 500 * US, .read_setup_ns = 300 * US,
		.jitter = 0.10, .slots = 1,
		.gc_au_bytes = 8 * MIB, .gc_open_aus = 4, .gc_copy_bw = 15 * MB,
		.gc_erase_ns = 2 * MS,
	},
	{
		.name = "sd-class4",
		.write_bw = 4 * MB, .read_bw = 10 * MB,
		.setup_ns = 2 * MS, .read_setup_ns = 1 * MS,
		.jitter = 0.20, .slots = 1,
		.stall_every_bytes = 4 * MIB, .stall_for_ns = 250 * MS, .stall_jitter_ns = 100 * MS,
		.tail_rate = 0.005, .tail_min_ns = 500 * MS, .tail_max_ns = 1000 * MS,
	},
	{
		.name = "sd-class10",
		.write_bw = 10 * MB, .read_bw = 20 * MB,
		.setup_ns = 1 * MS, .read_setup_ns = 500 * US,
		.jitter = 0.15, .slots = 1,
		.stall_every_bytes = 8 * MIB, .stall_for_ns = 200 * MS, .stall_jitter_ns = 100 * MS,
	},
	{
		.name = "sd-u3",
		.write_bw = 30 * MB, .read_bw = 60 * MB,
		.setup_ns = 500 * US, .read_setup_ns = 300 * US,
		.jitter = 0.10, .slots = 1,
		.stall_every_bytes = 32 * MIB, .stall_for_ns = 100 * MS,
	},
	{
		.name = "sd-a1",
		.write_bw = 10 * MB, .read_bw = 20 * MB,
		.setup_ns = 2 * MS, .read_setup_ns = 650 * US,
		.jitter = 0.15, .slots = 1,
		.tail_rate = 0.002, .tail_min_ns = 100 * MS, .tail_max_ns = 250 * MS,
	},
	{
		.name = "usb2-hdd",
		.write_bw = 28 * MB, .read_bw = 35 * MB,
		.setup_ns = 200 * US, .read_setup_ns = 200 * US,
		.jitter = 0.10, .slots = 1,
		.seek_ns = 17600 * US, .seek_window = 4096,
	},
	{
		.name = "sata-hdd-2011",
		.write_bw = 100 * MB, .read_bw = 110 * MB,
		.setup_ns = 200 * US, .read_setup_ns = 200 * US,
		.jitter = 0.10, .slots = 1,
		.seek_ns = 12700 * US, .seek_window = 4096,
	},
	{
		.name = "nfs-100mbit",
		.write_bw = 11 * MB, .read_bw = 11 * MB,
		.setup_ns = 1500 * US, .read_setup_ns = 1500 * US,
		.jitter = 0.30, .slots = 16,
	},
	{
		.name = "nfs-wan",
		.write_bw = 2 * MB, .read_bw = 2 * MB,
		.setup_ns = 40 * MS, .read_setup_ns = 40 * MS,
		.jitter = 0.50, .slots = 8,
		.tail_rate = 0.01, .tail_min_ns = 1000 * MS, .tail_max_ns = 1000 * MS,
	},
	{
		.name = "dead",
		.slots = 1, .dead = true,
	},
	{
		.name = "fast",
		.slots = DEVM_MAX_SLOTS,
	},
};
/* clang-format on */

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

static const char *const preset_names[] = {
    "usb2-stick-2011", "usb2-stick-fast", "sd-class4", "sd-class10", "sd-u3", "sd-a1", "usb2-hdd",
    "sata-hdd-2011",   "nfs-100mbit",	  "nfs-wan",   "dead",	     "fast",  NULL,
};

_Static_assert(sizeof(preset_names) / sizeof(preset_names[0]) == NPRESETS + 1,
	       "preset_names must list every preset");

const char *const *devm_preset_names(void)
{
	return preset_names;
}

int devm_preset(const char *name, struct devm_params *p)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < NPRESETS; i++) {
		if (strcmp(presets[i].name, name) == 0) {
			*p = presets[i];
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- keys ---- */

enum key_type {
	K_RATE,	  /* uint64_t bytes/s */
	K_DUR,	  /* uint64_t ns */
	K_SIZE,	  /* uint64_t bytes */
	K_FRAC,	  /* double in [0, 1] */
	K_SLOTS,  /* unsigned 1..DEVM_MAX_SLOTS */
	K_AUS,	  /* unsigned 1..DEVM_MAX_OPEN_AUS */
	K_BOOL,	  /* bool */
	K_NAME,	  /* char[32] */
	K_EVERY,  /* size (stall_every_bytes) or duration (stall_every_ns) */
	K_WINDOW, /* "[START+]LEN" -> err_win_start_ns/err_win_len_ns */
	K_CYCLE,  /* "UP/DOWN" -> err_up_ns/err_down_ns */
	K_RANGE,  /* "DUR" or "MIN-MAX" -> tail_min_ns/tail_max_ns */
	K_PRESET, /* replaces everything */
};

struct key {
	const char *name;
	enum key_type type;
	size_t off; /* of the field in struct devm_params */
	bool alias; /* not written by devm_params_format */
	const char *help;
	uint64_t lo, hi; /* K_RATE, K_DUR, K_SIZE, K_RANGE, K_WINDOW, K_CYCLE: bounds; 0 = none */
	bool zero_ok;	 /* ... and 0 besides them (off, unthrottled) */
	const char *accepted;
};

#define F(field) offsetof(struct devm_params, field)

/* Bounds (the control file changes a running device: no value may wedge it). Rates: 10 KB/s at
 * least, so one 1 MiB request takes under two minutes; durations a request is charged: 10 s
 * (SD's busy limit is 250 ms, Linux's mmc driver allows 3 s), 60 s for a tail (NFS's major
 * retransmit timeout); windows and cycles: a year. Any combination is capped in devmodel.c
 * (DEVM_BUSY_MAX_NS). */
#define KB    1000ULL
#define SEC   NSEC_PER_SEC
#define YEAR  (365ULL * 86400 * SEC)
#define RATE  10 * KB, 1000000 * MB, true, "0 (unthrottled) or 10KB/s..1TB/s"
#define SETUP 0, 10 * SEC, false, "0..10s"

/* clang-format off */
static const struct key keys[] = {
	{"preset", K_PRESET, 0, true, "NAME: start over from a preset", 0, 0, false, "a preset name"},
	{"name", K_NAME, F(name), false, "label shown in reports", 0, 0, false,
	 "up to 31 characters, no spaces or '='"},
	{"bandwidth", K_RATE, F(write_bw), false, "RATE: media write rate (0 = unthrottled)", RATE},
	{"write-bandwidth", K_RATE, F(write_bw), true, "alias of bandwidth", RATE},
	{"read-bandwidth", K_RATE, F(read_bw), false, "RATE: read rate (0 = unthrottled)", RATE},
	{"latency", K_DUR, F(setup_ns), false, "DUR: per-write command overhead", SETUP},
	{"setup", K_DUR, F(setup_ns), true, "alias of latency", SETUP},
	{"read-latency", K_DUR, F(read_setup_ns), false, "DUR: per-read command overhead", SETUP},
	{"jitter", K_FRAC, F(jitter), false, "PCT: relative sd of a lognormal factor on service time",
	 0, 0, false, "0..100% or 0..1"},
	{"slots", K_SLOTS, F(slots), false, "N: command queue depth", 0, 0, false, "1..64"},
	{"seek", K_DUR, F(seek_ns), false, "DUR: charged for a non-sequential request", SETUP},
	{"seek-window", K_SIZE, F(seek_window), false, "SIZE: distance still counted sequential",
	 0, 0, false, "a size"},
	{"stall-every", K_EVERY, 0, false, "SIZE|DUR: busy stall every SIZE written or DUR busy",
	 0, 0, true, "0 (off), 64K..1T written or 10ms..1h busy"},
	{"stall-for", K_DUR, F(stall_for_ns), false, "DUR: busy stall length", SETUP},
	{"stall-jitter", K_DUR, F(stall_jitter_ns), false, "DUR: +- uniform on the stall length",
	 SETUP},
	{"tail-rate", K_FRAC, F(tail_rate), false, "PCT: share of requests with a tail delay",
	 0, 0, false, "0..100% or 0..1"},
	{"tail-latency", K_RANGE, 0, false, "DUR|MIN-MAX: the tail delay", 0, 60 * SEC, false,
	 "DUR or MIN-MAX, 0..60s"},
	{"gc-au", K_SIZE, F(gc_au_bytes), false, "SIZE: flash allocation unit (0 = no GC model)",
	 64 << 10, 1ULL << 30, true, "0 (no GC) or 64K..1G"},
	{"gc-open", K_AUS, F(gc_open_aus), false, "N: open allocation units", 0, 0, false,
	 "0..16 (1..16 with gc-au)"},
	{"gc-copy-bandwidth", K_RATE, F(gc_copy_bw), false, "RATE: GC copy rate", RATE},
	{"gc-erase", K_DUR, F(gc_erase_ns), false, "DUR: erase time per forced GC", SETUP},
	{"burst", K_SIZE, F(burst_bytes), false, "SIZE: fast cache in front (0 = none)", 0, 0, false,
	 "a size"},
	{"burst-bandwidth", K_RATE, F(burst_bw), false, "RATE: write rate into the cache", RATE},
	{"error-rate", K_FRAC, F(error_rate), false, "P|PCT: probability a request fails EIO",
	 0, 0, false, "0..100% or 0..1"},
	{"error-window", K_WINDOW, 0, false, "[AFTER+]LEN: every request fails EIO in the window",
	 0, YEAR, false, "[AFTER+]LEN, durations up to a year"},
	{"error-cycle", K_CYCLE, 0, false, "UP/DOWN: works UP, fails DOWN, repeating",
	 0, YEAR, false, "UP/DOWN, durations up to a year, UP > 0"},
	{"capacity", K_SIZE, F(capacity), false, "SIZE: writes beyond fail ENOSPC (0 = unbounded)",
	 0, 0, false, "a size"},
	{"dead", K_BOOL, F(dead), false, "0|1: device hangs (paused) until resumed", 0, 0, false,
	 "0 or 1"},
};
/* clang-format on */

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const struct key *key_find(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on") || !*s)
		*out = true;
	else if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

/* Splits "A<sep>B" into two durations; without sep, returns the whole as *b and *a = 0
 * when one_ok (else -EINVAL). */
static int parse_dur_pair(const char *s, char sep, bool one_ok, uint64_t *a, uint64_t *b)
{
	char buf[64];
	char *mid;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	mid = strchr(buf, sep);
	if (!mid) {
		if (!one_ok)
			return -EINVAL;
		*a = 0;
		return units_parse_duration(buf, b);
	}
	*mid++ = '\0';
	if (units_parse_duration(buf, a) < 0 || units_parse_duration(mid, b) < 0)
		return -EINVAL;
	return 0;
}

/* Within the key's bounds (or 0 where that means off)? */
static bool in_bounds(const struct key *k, uint64_t v)
{
	if (v == 0 && k->zero_ok)
		return true;
	return (!k->lo || v >= k->lo) && (!k->hi || v <= k->hi);
}

static int parse_every(struct devm_params *p, const char *v)
{
	uint64_t x;

	if (units_parse_size(v, &x) == 0) {
		if (x && (x < (64ULL << 10) || x > (1ULL << 40)))
			return -EINVAL;
		p->stall_every_bytes = x;
		p->stall_every_ns = 0;
		return 0;
	}
	if (units_parse_duration(v, &x) == 0) {
		if (x && (x < 10 * MS || x > 3600 * SEC))
			return -EINVAL;
		p->stall_every_ns = x;
		p->stall_every_bytes = 0;
		return 0;
	}
	return -EINVAL;
}

static int parse_range(struct devm_params *p, const struct key *k, const char *v)
{
	uint64_t lo, hi;

	if (parse_dur_pair(v, '-', true, &lo, &hi) < 0)
		return -EINVAL;
	if (!strchr(v, '-'))
		lo = hi;
	if (lo > hi || !in_bounds(k, hi))
		return -EINVAL;
	p->tail_min_ns = lo;
	p->tail_max_ns = hi;
	return 0;
}

/* error-window [AFTER+]LEN and error-cycle UP/DOWN, each duration within the key's bounds. */
static int parse_pair(struct devm_params *p, const struct key *k, const char *v)
{
	bool win = k->type == K_WINDOW;
	uint64_t a, b;

	if (parse_dur_pair(v, win ? '+' : '/', win, &a, &b) < 0 || !in_bounds(k, a) ||
	    !in_bounds(k, b))
		return -EINVAL;
	if (win) {
		p->err_win_start_ns = a;
		p->err_win_len_ns = b;
	} else {
		p->err_up_ns = a;
		p->err_down_ns = b;
	}
	return 0;
}

static int set_u64_typed(enum key_type t, const char *v, uint64_t *out)
{
	switch (t) {
	case K_RATE:
		return units_parse_rate(v, out);
	case K_DUR:
		return units_parse_duration(v, out);
	case K_SIZE:
		return units_parse_size(v, out);
	default:
		return -EINVAL;
	}
}

static int set_simple(struct devm_params *p, const struct key *k, const char *v)
{
	char *field = (char *)p + k->off;
	uint64_t u;

	switch (k->type) {
	case K_RATE:
	case K_DUR:
	case K_SIZE:
		if (set_u64_typed(k->type, v, &u) < 0 || !in_bounds(k, u))
			return -EINVAL;
		*(uint64_t *)field = u;
		return 0;
	case K_FRAC:
		return units_parse_fraction(v, (double *)field);
	case K_SLOTS:
	case K_AUS: /* gc-open=0 only makes sense with gc-au=0 (checked by devm_create) */
		if (units_parse_uint(v, k->type == K_SLOTS ? DEVM_MAX_SLOTS : DEVM_MAX_OPEN_AUS,
				     &u) < 0 ||
		    (u == 0 && k->type == K_SLOTS))
			return -EINVAL;
		*(unsigned *)field = (unsigned)u;
		return 0;
	case K_BOOL:
		return parse_bool(v, (bool *)field);
	case K_NAME:
		if (strlen(v) >= sizeof(p->name) || strpbrk(v, " \t\n="))
			return -EINVAL;
		strcpy(p->name, v);
		return 0;
	default:
		return -EINVAL;
	}
}

static int set_key(struct devm_params *p, const struct key *k, const char *v)
{
	switch (k->type) {
	case K_PRESET:
		return devm_preset(v, p);
	case K_EVERY:
		return parse_every(p, v);
	case K_WINDOW:
	case K_CYCLE:
		return parse_pair(p, k, v);
	case K_RANGE:
		return parse_range(p, k, v);
	default:
		return set_simple(p, k, v);
	}
}

int devm_params_set(struct devm_params *p, const char *key, const char *value)
{
	const struct key *k;
	struct devm_params tmp;
	int err;

	if (!key || !value)
		return -EINVAL;
	k = key_find(key);
	if (!k)
		return -ENOENT;
	tmp = *p;
	err = set_key(&tmp, k, value);
	if (err < 0)
		return -EINVAL;
	*p = tmp;
	return 0;
}

const char *devm_key_accepted(const char *key)
{
	const struct key *k = key ? key_find(key) : NULL;

	return k ? k->accepted : NULL;
}

int devm_params_check(const struct devm_params *p, char *err, size_t errlen)
{
	const char *why = NULL;

	if (p->slots < 1 || p->slots > DEVM_MAX_SLOTS)
		why = "slots must be 1..64";
	else if (p->gc_au_bytes && (p->gc_open_aus < 1 || p->gc_open_aus > DEVM_MAX_OPEN_AUS))
		why = "gc-au needs gc-open 1..16";
	else if (p->tail_min_ns > p->tail_max_ns)
		why = "tail-latency's minimum is above its maximum";
	else if (!(p->jitter >= 0 && p->jitter <= 1) ||
		 !(p->error_rate >= 0 && p->error_rate <= 1) ||
		 !(p->tail_rate >= 0 && p->tail_rate <= 1))
		why = "jitter, tail-rate and error-rate are fractions 0..1";
	else if (p->err_down_ns && !p->err_up_ns)
		why = "error-cycle needs UP > 0";
	if (why && err)
		snprintf(err, errlen, "%s", why);
	return why ? -EINVAL : 0;
}

int devm_params_set_kv(struct devm_params *p, const char *kv)
{
	char key[64];
	const char *eq;
	size_t n;

	if (!kv)
		return -EINVAL;
	eq = strchr(kv, '=');
	n = eq ? (size_t)(eq - kv) : strlen(kv);
	if (n == 0 || n >= sizeof(key))
		return -ENOENT;
	memcpy(key, kv, n);
	key[n] = '\0';
	return devm_params_set(p, key, eq ? eq + 1 : "");
}

void devm_help(FILE *f)
{
	fprintf(f, "device presets:");
	for (size_t i = 0; i < NPRESETS; i++)
		fprintf(f, " %s", presets[i].name);
	fprintf(f,
		"\ndevice keys (key=value; RATE 5M|5MB/s|40Mbit/s, DUR 5ms, SIZE 4M, PCT 20%%):\n");
	for (size_t i = 0; i < NKEYS; i++)
		fprintf(f, "  %-18s %s [%s]\n", keys[i].name, keys[i].help, keys[i].accepted);
}

static void format_key(const struct devm_params *p, const struct key *k, FILE *f)
{
	const char *field = (const char *)p + k->off;

	switch (k->type) {
	case K_RATE:
	case K_SIZE:
		fprintf(f, "%s=%" PRIu64, k->name, *(const uint64_t *)field);
		break;
	case K_DUR:
		fprintf(f, "%s=%" PRIu64 "ns", k->name, *(const uint64_t *)field);
		break;
	case K_FRAC:
		fprintf(f, "%s=%.17g", k->name, *(const double *)field);
		break;
	case K_SLOTS:
	case K_AUS:
		fprintf(f, "%s=%u", k->name, *(const unsigned *)field);
		break;
	case K_BOOL:
		fprintf(f, "%s=%d", k->name, *(const bool *)field ? 1 : 0);
		break;
	case K_NAME:
		fprintf(f, "%s=%s", k->name, p->name);
		break;
	case K_EVERY:
		if (p->stall_every_ns)
			fprintf(f, "%s=%" PRIu64 "ns", k->name, p->stall_every_ns);
		else
			fprintf(f, "%s=%" PRIu64, k->name, p->stall_every_bytes);
		break;
	case K_WINDOW:
		fprintf(f, "%s=%" PRIu64 "ns+%" PRIu64 "ns", k->name, p->err_win_start_ns,
			p->err_win_len_ns);
		break;
	case K_CYCLE:
		fprintf(f, "%s=%" PRIu64 "ns/%" PRIu64 "ns", k->name, p->err_up_ns, p->err_down_ns);
		break;
	case K_RANGE:
		fprintf(f, "%s=%" PRIu64 "ns-%" PRIu64 "ns", k->name, p->tail_min_ns,
			p->tail_max_ns);
		break;
	case K_PRESET:
		break;
	}
}

void devm_params_format(const struct devm_params *p, FILE *f)
{
	bool first = true;

	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].alias)
			continue;
		if (!first)
			fputc(' ', f);
		format_key(p, &keys[i], f);
		first = false;
	}
}
