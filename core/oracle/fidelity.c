/* The fidelity table (fidelity.h): samples, their statistics, verdicts, flips, text and JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/fidelity.h"
#include "util/json.h"
#include "util/text.h"

/* Where each row comes from. Both sides run the same workload binary printing the same lines
 * (core/oracle/workloads): the huge % from its "fault" lines (thpscale's test: mincore 256 KiB
 * into the extent right after its first byte) and "extent" lines (pagemap + /proc/kpageflags
 * at the end); the counters from its "snap phase-begin/-end vmstat" lines, which in a guest
 * are /proc/vmstat and under thpemu run the emulated machine's counters (thpemu_vmstat(),
 * core/preload/api.c: core/mm's mm_stat_names, the kernel's names). Kernel functions are
 * 6.12's; 6.1 counts in the same places. */
const struct fid_row fid_rows[FID_NROWS] = {
    {"huge_fault_pct", "huge % at first touch", FID_PCT,
     "fault lines in the guest: mincore 256 KiB in saw the page resident",
     "fault lines under thpemu run: the same test on the memory thpemu mapped", false, NULL, NULL},
    {"huge_final_pct", "huge % at the end", FID_PCT,
     "extent lines: one PFN-aligned order-9 folio (pagemap + /proc/kpageflags)",
     "extent lines on the host: the real PMD thpemu mapped for each huge decision "
     "(the run's host.huge_not_pmd counts those the host could not map)",
     false, NULL, NULL},
    {"thp_fault_alloc", "thp_fault_alloc", FID_COUNTER,
     "mm/huge_memory.c __do_huge_pmd_anonymous_page, count_vm_event(THP_FAULT_ALLOC)",
     "core/mm/fault.c do_huge_pmd_anonymous_page, MM_STAT_THP_FAULT_ALLOC", false, NULL, NULL},
    {"thp_fault_fallback", "thp_fault_fallback", FID_COUNTER,
     "mm/huge_memory.c do_huge_pmd_anonymous_page: no folio, THP_FAULT_FALLBACK",
     "core/mm/fault.c do_huge_pmd_anonymous_page, MM_STAT_THP_FAULT_FALLBACK", false, NULL, NULL},
    {"compact_stall", "compact_stall", FID_COUNTER,
     "mm/page_alloc.c __alloc_pages_direct_compact, COMPACTSTALL",
     "core/mm/slowpath.c compact_outcome, MM_STAT_COMPACT_STALL", false, NULL, NULL},
    {"compact_success", "compact_success", FID_COUNTER,
     "mm/page_alloc.c __alloc_pages_direct_compact: a page after compaction, COMPACTSUCCESS",
     "core/mm/slowpath.c compact_outcome, MM_STAT_COMPACT_SUCCESS", false, NULL, NULL},
    {"compact_fail", "compact_fail", FID_COUNTER,
     "mm/page_alloc.c __alloc_pages_direct_compact: none, COMPACTFAIL",
     "core/mm/slowpath.c compact_outcome, MM_STAT_COMPACT_FAIL", false, NULL, NULL},
    {"pgmigrate_success", "pgmigrate_success", FID_COUNTER,
     "mm/migrate.c migrate_pages, PGMIGRATE_SUCCESS (compaction's and any other migration)",
     "core/mm/migrate.c, MM_STAT_PGMIGRATE_SUCCESS", false, NULL, NULL},
    {"compact_migrate_scanned", "compact_migrate_scanned", FID_COUNTER,
     "mm/compaction.c isolate_migratepages_block, COMPACTMIGRATE_SCANNED (direct and "
     "kcompactd)",
     "core/mm/compaction.c compact_zone, MM_STAT_COMPACT_MIGRATE_SCANNED (direct and "
     "kcompactd)",
     false, NULL, NULL},
    {"compact_free_scanned", "compact_free_scanned", FID_COUNTER,
     "mm/compaction.c isolate_freepages_block, COMPACTFREE_SCANNED (direct and kcompactd)",
     "core/mm/compaction.c compact_zone, MM_STAT_COMPACT_FREE_SCANNED (direct and kcompactd)",
     false, NULL, NULL},
    /* shared memory THP: in the table where a value is non-zero (the shmem workload) */
    {"thp_file_alloc", "thp_file_alloc", FID_COUNTER,
     "mm/shmem.c shmem_get_folio_gfp: a PMD-size folio allocated, THP_FILE_ALLOC",
     "core/mm/shmem.c mm_shmem_fault, MM_STAT_THP_FILE_ALLOC", true, NULL, NULL},
    {"thp_file_fallback", "thp_file_fallback", FID_COUNTER,
     "mm/shmem.c shmem_alloc_and_add_folio: no PMD-size folio, THP_FILE_FALLBACK",
     "core/mm/shmem.c mm_shmem_fault, MM_STAT_THP_FILE_FALLBACK", true, NULL, NULL},
    {"thp_file_mapped", "thp_file_mapped", FID_COUNTER,
     "mm/memory.c do_set_pmd: a PMD maps a file THP, THP_FILE_MAPPED",
     "core/mm/shmem.c mm_shmem_fault: a PMD-size folio allocated where a PMD fits, "
     "MM_STAT_THP_FILE_MAPPED",
     true, NULL, NULL},
/* multi-size THP, per size (6.12 transparent_hugepage/hugepages-<size>kB/stats/; in the
 * guest read from sysfs, under thpemu from thpemu_mthp_stats(), core/preload/api.c): in the
 * table where a value is non-zero (the mthp and shmem workloads) */
#define MROW(sz, stat, real, emu)                                                                  \
	{                                                                                          \
		"mthp_" sz "_" stat, sz " " stat, FID_COUNTER, real, emu, true, sz, stat           \
	}
#define ANON_REAL  "mm/memory.c alloc_anon_folio, count_mthp_stat"
#define SHMEM_REAL "mm/shmem.c shmem_alloc_and_add_folio, count_mthp_stat"
#define MTHP_ROWS(sz)                                                                              \
	MROW(sz, "anon_fault_alloc", ANON_REAL, "core/mm/mthp.c, MTHP_EV_ANON_FAULT_ALLOC"),       \
	    MROW(sz, "anon_fault_fallback", ANON_REAL,                                             \
		 "core/mm/mthp.c, MTHP_EV_ANON_FAULT_FALLBACK"),                                   \
	    MROW(sz, "shmem_alloc", SHMEM_REAL, "core/mm/shmem.c, MTHP_EV_SHMEM_ALLOC"),           \
	    MROW(sz, "shmem_fallback", SHMEM_REAL, "core/mm/shmem.c, MTHP_EV_SHMEM_FALLBACK")
    MTHP_ROWS("16kB"),
    MTHP_ROWS("32kB"),
    MTHP_ROWS("64kB"),
    MTHP_ROWS("128kB"),
    MTHP_ROWS("256kB"),
    MTHP_ROWS("512kB"),
    MTHP_ROWS("1024kB"),
#undef MTHP_ROWS
#undef SHMEM_REAL
#undef ANON_REAL
#undef MROW
};

void fid_sample_from_result(const struct oracle_result *r, struct fid_sample *s, bool program)
{
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb;
	const struct oracle_snap *a, *b;
	const char *scope;

	memset(s, 0, sizeof(*s));
	oracle_result_counts(r, final, &fh, &fb);
	if (fh + fb) {
		s->v[0] = 100.0 * (double)fh / (double)(fh + fb);
		s->have[0] = true;
	}
	if (r->next && final[ORACLE_EXT_UNKNOWN] == 0 && final[ORACLE_EXT_NOT_SEEN] < r->next) {
		s->v[1] = 100.0 * (double) final[ORACLE_EXT_HUGE] / (double)r->next;
		s->have[1] = true;
	}
	scope = oracle_result_scope(r, &a, &b);
	if (!scope || strcmp(scope, program ? "program" : "phase"))
		return;
	for (int i = 0; i < FID_NROWS; i++) {
		bool found;
		int64_t d;

		if (fid_rows[i].kind != FID_COUNTER)
			continue;
		d = fid_rows[i].size
			? oracle_snap_delta(a, b, fid_rows[i].size, fid_rows[i].stat, &found)
			: oracle_snap_delta(a, b, NULL, fid_rows[i].key, &found);
		s->v[i] = (double)d;
		s->have[i] = found;
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void fid_stat(const struct fid_sample *s, int n, int row, struct fid_stat *st)
{
	double v[FID_MAX_SAMPLES];
	int m = 0;

	memset(st, 0, sizeof(*st));
	for (int i = 0; i < n && m < FID_MAX_SAMPLES; i++)
		if (s[i].have[row])
			v[m++] = s[i].v[row];
	st->n = m;
	if (!m)
		return;
	qsort(v, (size_t)m, sizeof(v[0]), cmp_dbl);
	st->min = v[0];
	st->max = v[m - 1];
	st->median = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
	for (int i = 1; i < m && fid_rows[row].kind == FID_PCT; i++)
		st->bimodal |= v[i] - v[i - 1] > FID_BIMODAL_GAP;
}

const char *fid_verdict_name(enum fid_verdict v)
{
	static const char *const names[] = {"n/a", "close", "in range", "OFF"};

	return (unsigned)v <= FID_OFF ? names[v] : "?";
}

enum fid_verdict fid_verdict(enum fid_kind kind, const struct fid_stat *real,
			     const struct fid_stat *emu)
{
	double m = emu->median;
	bool inside = m >= real->min && m <= real->max;

	if (!real->n || !emu->n)
		return FID_NA;
	if (kind == FID_PCT) {
		if (fabs(m - real->median) <= FID_PCT_POINTS)
			return FID_CLOSE;
		return real->bimodal && inside ? FID_INRANGE : FID_OFF;
	}
	if (fabs(m - real->median) <= FID_COUNTER_REL * fabs(real->median))
		return FID_CLOSE;
	return inside ? FID_INRANGE : FID_OFF;
}

int fid_direction(enum fid_kind kind, double x, double y)
{
	double d = y - x;
	double tol = kind == FID_PCT ? FID_PCT_POINTS : FID_COUNTER_REL * fmax(fabs(x), fabs(y));

	if (fabs(d) <= tol)
		return 0;
	return d > 0 ? 1 : -1;
}

static bool side_nonzero(const struct fid_side *s, int row)
{
	for (int i = 0; i < s->n; i++)
		if (s->s[i].have[row] && s->s[i].v[row] != 0)
			return true;
	return false;
}

void fid_build(struct fid_table *t)
{
	t->nflips = 0;
	for (int i = 0; i < FID_NROWS; i++) {
		t->shown[i] = !fid_rows[i].optional;
		for (int k = 0; k < t->nset && !t->shown[i]; k++)
			t->shown[i] =
			    side_nonzero(&t->set[k].real, i) || side_nonzero(&t->set[k].emu, i);
	}
	for (int k = 0; k < t->nset; k++) {
		struct fid_setting *s = &t->set[k];

		for (int i = 0; i < FID_NROWS; i++) {
			fid_stat(s->real.s, s->real.n, i, &s->rs[i]);
			fid_stat(s->emu.s, s->emu.n, i, &s->es[i]);
			s->verdict[i] = fid_verdict(fid_rows[i].kind, &s->rs[i], &s->es[i]);
		}
	}
	for (int i = 0; i < FID_NROWS; i++)
		for (int a = 0; a < t->nset && t->shown[i]; a++)
			for (int b = a + 1; b < t->nset; b++) {
				const struct fid_setting *x = &t->set[a], *y = &t->set[b];
				int dr, de;

				if (!x->rs[i].n || !y->rs[i].n || !x->es[i].n || !y->es[i].n)
					continue;
				dr = fid_direction(fid_rows[i].kind, x->rs[i].median,
						   y->rs[i].median);
				de = fid_direction(fid_rows[i].kind, x->es[i].median,
						   y->es[i].median);
				if (dr * de >= 0 || t->nflips == FID_MAX_FLIPS)
					continue;
				t->flips[t->nflips++] = (struct fid_flip){
				    .row = i,
				    .a = a,
				    .b = b,
				    .real_delta = y->rs[i].median - x->rs[i].median,
				    .emu_delta = y->es[i].median - x->es[i].median};
			}
}

void fid_tally(const struct fid_table *t, int counts[FID_OFF + 1])
{
	memset(counts, 0, sizeof(int) * (FID_OFF + 1));
	for (int k = 0; k < t->nset; k++)
		for (int i = 0; i < FID_NROWS; i++)
			if (t->shown[i])
				counts[t->set[k].verdict[i]]++;
}

/* ---- text ------------------------------------------------------------------------------- */

static void fmt_num(char *buf, size_t len, enum fid_kind kind, double v)
{
	if (kind == FID_PCT)
		snprintf(buf, len, "%.1f", v);
	else if (fabs(v - rint(v)) < 1e-9)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.1f", v);
}

static void fmt_stat(char *buf, size_t len, enum fid_kind kind, const struct fid_stat *st)
{
	char a[24], b[24], c[24];

	if (!st->n) {
		snprintf(buf, len, "-");
		return;
	}
	fmt_num(a, sizeof(a), kind, st->min);
	fmt_num(b, sizeof(b), kind, st->median);
	fmt_num(c, sizeof(c), kind, st->max);
	snprintf(buf, len, "%s / %s / %s", a, b, c);
}

static int side_ok(const struct fid_side *s)
{
	int ok = 0;

	for (int i = 0; i < s->n; i++)
		ok += !strcmp(s->status[i], "ok");
	return ok;
}

static void text_side_notes(FILE *f, const char *what, const struct fid_side *s)
{
	for (int i = 0; i < s->n; i++) {
		if (strcmp(s->status[i], "ok"))
			fprintf(f, "  %s seed %llu: %s\n", what, (unsigned long long)s->seed[i],
				s->status[i]);
		if (s->note[i][0])
			fprintf(f, "  %s seed %llu: %s\n", what, (unsigned long long)s->seed[i],
				s->note[i]);
	}
}

void fid_text(FILE *f, const struct fid_table *t)
{
	int counts[FID_OFF + 1];

	fprintf(f, "fidelity: %s, %llu MiB, %s mode, memory snapshot at the %s\n", t->kernel,
		(unsigned long long)(t->mem_bytes >> 20), t->mode,
		!strcmp(t->at, "start") ? "workload's start" : "workload's phase");
	if (t->command[0])
		fprintf(f, "command:  %s\n", t->command);
	fprintf(f, "workload: %s\n", t->workload);
	fprintf(f, "thpemu:   %s\n", t->emu_cmd);
	for (int k = 0; k < t->nset; k++) {
		const struct fid_setting *s = &t->set[k];

		fprintf(f, "\n%s (thpemu %s): real %d of %d boots ok, thpemu %d of %d runs ok\n",
			s->name, s->policy, side_ok(&s->real), s->real.n, side_ok(&s->emu),
			s->emu.n);
		fprintf(f, "  %-26s %-26s %-26s %s\n", "", "real min / median / max",
			"thpemu min / median / max", "verdict");
		for (int i = 0; i < FID_NROWS; i++) {
			char r[80], e[80];

			if (!t->shown[i])
				continue;
			fmt_stat(r, sizeof(r), fid_rows[i].kind, &s->rs[i]);
			fmt_stat(e, sizeof(e), fid_rows[i].kind, &s->es[i]);
			fprintf(f, "  %-26s %-26s %-26s %s%s\n", fid_rows[i].label, r, e,
				fid_verdict_name(s->verdict[i]),
				fid_rows[i].kind == FID_PCT && s->rs[i].bimodal ? " (real bimodal)"
										: "");
		}
		text_side_notes(f, "real", &s->real);
		text_side_notes(f, "thpemu", &s->emu);
	}
	fprintf(f, "\n");
	if (t->nset > 1 && !t->nflips)
		fprintf(f, "no opposite moves between settings\n");
	for (int i = 0; i < t->nflips; i++) {
		const struct fid_flip *x = &t->flips[i];
		enum fid_kind kind = fid_rows[x->row].kind;
		char r[32], e[32];

		fmt_num(r, sizeof(r), kind, x->real_delta);
		fmt_num(e, sizeof(e), kind, x->emu_delta);
		fprintf(f, "OPPOSITE: %s from %s to %s: real %s%s, thpemu %s%s\n",
			fid_rows[x->row].label, t->set[x->a].name, t->set[x->b].name,
			x->real_delta > 0 ? "+" : "", r, x->emu_delta > 0 ? "+" : "", e);
	}
	fid_tally(t, counts);
	fprintf(f,
		"verdicts: %d close, %d in range, %d OFF, %d n/a (huge %%: within %.0f points "
		"of the real median, or inside the real range where the real boots are "
		"bimodal; counters: within %.0f %% of the real median or inside the real "
		"range)\n",
		counts[FID_CLOSE], counts[FID_INRANGE], counts[FID_OFF], counts[FID_NA],
		FID_PCT_POINTS, FID_COUNTER_REL * 100);
}

/* ---- HTML ------------------------------------------------------------------------------- */

static void html_side_notes(FILE *f, const char *what, const struct fid_side *s)
{
	for (int i = 0; i < s->n; i++) {
		if (!strcmp(s->status[i], "ok") && !s->note[i][0])
			continue;
		fprintf(f, "<li>%s seed %llu: ", what, (unsigned long long)s->seed[i]);
		text_html_escape(f, s->status[i]);
		if (s->note[i][0]) {
			fputs(", ", f);
			text_html_escape(f, s->note[i]);
		}
		fputs("</li>\n", f);
	}
}

void fid_html(FILE *f, const struct fid_table *t)
{
	static const char *const cls[] = {"na", "close", "range", "off"};
	int counts[FID_OFF + 1];

	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>thpemu fidelity: ", f);
	text_html_escape(f, t->kernel);
	fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}"
	      "table{border-collapse:collapse;margin:0.5em 0 1em}"
	      "td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}"
	      "td:first-child,th:first-child{text-align:left}"
	      ".close{background:#d8f0d8}.range{background:#eef5cc}.off{background:#f5c6c6}"
	      ".na{color:#888}code{font-size:90%}</style></head><body>\n<h1>thpemu fidelity: ",
	      f);
	text_html_escape(f, t->kernel);
	fprintf(f, ", %llu MiB, %s mode</h1>\n<p>", (unsigned long long)(t->mem_bytes >> 20),
		t->mode);
	fputs("Memory snapshot at the workload's ", f);
	text_html_escape(f, t->at);
	fputs(".<br>Command: <code>", f);
	text_html_escape(f, t->command);
	fputs("</code><br>Workload: <code>", f);
	text_html_escape(f, t->workload);
	fputs("</code><br>thpemu: <code>", f);
	text_html_escape(f, t->emu_cmd);
	fputs("</code></p>\n", f);
	for (int k = 0; k < t->nset; k++) {
		const struct fid_setting *s = &t->set[k];

		fputs("<h2>", f);
		text_html_escape(f, s->name);
		fputs(" (thpemu <code>", f);
		text_html_escape(f, s->policy);
		fprintf(f,
			"</code>)</h2>\n<p>real %d of %d boots ok, thpemu %d of %d runs ok</p>\n",
			side_ok(&s->real), s->real.n, side_ok(&s->emu), s->emu.n);
		fputs("<table><tr><th></th><th>real min / median / max</th>"
		      "<th>thpemu min / median / max</th><th>verdict</th></tr>\n",
		      f);
		for (int i = 0; i < FID_NROWS; i++) {
			char r[80], e[80];

			if (!t->shown[i])
				continue;
			fmt_stat(r, sizeof(r), fid_rows[i].kind, &s->rs[i]);
			fmt_stat(e, sizeof(e), fid_rows[i].kind, &s->es[i]);
			fprintf(f, "<tr class=\"%s\"><td title=\"", cls[s->verdict[i]]);
			fputs("real: ", f);
			text_html_escape(f, fid_rows[i].real);
			fputs("; thpemu: ", f);
			text_html_escape(f, fid_rows[i].emu);
			fprintf(f, "\">%s</td><td>%s</td><td>%s</td><td>%s%s</td></tr>\n",
				fid_rows[i].label, r, e, fid_verdict_name(s->verdict[i]),
				fid_rows[i].kind == FID_PCT && s->rs[i].bimodal ? " (real bimodal)"
										: "");
		}
		fputs("</table>\n<ul>\n", f);
		html_side_notes(f, "real", &s->real);
		html_side_notes(f, "thpemu", &s->emu);
		fputs("</ul>\n", f);
	}
	fputs("<h2>Opposite moves</h2>\n<ul>\n", f);
	if (!t->nflips)
		fputs("<li>none</li>\n", f);
	for (int i = 0; i < t->nflips; i++) {
		const struct fid_flip *x = &t->flips[i];
		char r[32], e[32];

		fmt_num(r, sizeof(r), fid_rows[x->row].kind, x->real_delta);
		fmt_num(e, sizeof(e), fid_rows[x->row].kind, x->emu_delta);
		fprintf(f, "<li class=\"off\">%s from ", fid_rows[x->row].label);
		text_html_escape(f, t->set[x->a].name);
		fputs(" to ", f);
		text_html_escape(f, t->set[x->b].name);
		fprintf(f, ": real %s%s, thpemu %s%s</li>\n", x->real_delta > 0 ? "+" : "", r,
			x->emu_delta > 0 ? "+" : "", e);
	}
	fid_tally(t, counts);
	fprintf(f,
		"</ul>\n<p>Verdicts: %d close, %d in range, %d OFF, %d n/a. Huge %%: within %.0f "
		"points of the real median, or inside the real range where the real boots are "
		"bimodal; counters: within %.0f %% of the real median or inside the real "
		"range.</p>\n</body></html>\n",
		counts[FID_CLOSE], counts[FID_INRANGE], counts[FID_OFF], counts[FID_NA],
		FID_PCT_POINTS, FID_COUNTER_REL * 100);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_stat(struct json_w *w, const char *key, const struct fid_stat *st)
{
	jw_obj_begin(w, key);
	jw_i64(w, "n", st->n);
	if (st->n) {
		jw_real(w, "min", st->min, 6);
		jw_real(w, "median", st->median, 6);
		jw_real(w, "max", st->max, 6);
		jw_bool(w, "bimodal", st->bimodal);
	}
	jw_obj_end(w);
}

static void json_side(struct json_w *w, const char *key, const struct fid_side *s)
{
	jw_arr_begin(w, key);
	for (int i = 0; i < s->n; i++) {
		jw_obj_begin(w, NULL);
		jw_u64(w, "seed", s->seed[i]);
		jw_str(w, "status", s->status[i]);
		jw_str(w, "note", s->note[i][0] ? s->note[i] : NULL);
		jw_obj_begin(w, "values");
		for (int r = 0; r < FID_NROWS; r++)
			if (s->s[i].have[r])
				jw_real(w, fid_rows[r].key, s->s[i].v[r], 6);
			else
				jw_null(w, fid_rows[r].key);
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void fid_json(struct json_w *w, const struct fid_table *t)
{
	int counts[FID_OFF + 1];

	jw_obj_begin(w, NULL);
	jw_str(w, "kind", "fidelity");
	jw_i64(w, "version", 1);
	jw_obj_begin(w, "config");
	jw_str(w, "command", t->command[0] ? t->command : NULL);
	jw_str(w, "kernel", t->kernel);
	jw_u64(w, "mem_bytes", t->mem_bytes);
	jw_str(w, "mode", t->mode);
	jw_str(w, "snapshot_at", t->at);
	jw_str(w, "workload", t->workload);
	jw_str(w, "thpemu", t->emu_cmd);
	jw_obj_begin(w, "tolerances");
	jw_real(w, "pct_points", FID_PCT_POINTS, 6);
	jw_real(w, "bimodal_gap_points", FID_BIMODAL_GAP, 6);
	jw_real(w, "counter_rel", FID_COUNTER_REL, 6);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_arr_begin(w, "rows");
	for (int i = 0; i < FID_NROWS; i++) {
		jw_obj_begin(w, NULL);
		jw_str(w, "key", fid_rows[i].key);
		jw_str(w, "kind", fid_rows[i].kind == FID_PCT ? "pct" : "counter");
		jw_str(w, "real", fid_rows[i].real);
		jw_str(w, "thpemu", fid_rows[i].emu);
		jw_bool(w, "shown", t->shown[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_arr_begin(w, "settings");
	for (int k = 0; k < t->nset; k++) {
		const struct fid_setting *s = &t->set[k];

		jw_obj_begin(w, NULL);
		jw_str(w, "name", s->name);
		jw_str(w, "policy", s->policy);
		jw_obj_begin(w, "table");
		for (int i = 0; i < FID_NROWS; i++) {
			jw_obj_begin(w, fid_rows[i].key);
			json_stat(w, "real", &s->rs[i]);
			json_stat(w, "thpemu", &s->es[i]);
			jw_str(w, "verdict", fid_verdict_name(s->verdict[i]));
			jw_obj_end(w);
		}
		jw_obj_end(w);
		json_side(w, "real", &s->real);
		json_side(w, "thpemu", &s->emu);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_arr_begin(w, "opposite_moves");
	for (int i = 0; i < t->nflips; i++) {
		jw_obj_begin(w, NULL);
		jw_str(w, "row", fid_rows[t->flips[i].row].key);
		jw_str(w, "from", t->set[t->flips[i].a].name);
		jw_str(w, "to", t->set[t->flips[i].b].name);
		jw_real(w, "real_delta", t->flips[i].real_delta, 6);
		jw_real(w, "thpemu_delta", t->flips[i].emu_delta, 6);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	fid_tally(t, counts);
	jw_obj_begin(w, "verdicts");
	for (int v = 0; v <= FID_OFF; v++)
		jw_i64(w, fid_verdict_name((enum fid_verdict)v), counts[v]);
	jw_obj_end(w);
	jw_obj_end(w);
}
