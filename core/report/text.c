/* What `thpemu report` prints of a run or a trace (see runs.h): a run's text summary (with its
 * processes, busiest first, when there are several), and the mmtests fault lines ("fault <tid>
 * <huge|base> <latency_us> <sec.usec>", as mmtests' thpscale/thpcompact extractors read them),
 * exact from a fault trace or reconstructed from a run's latency histogram.
 */
#include "report/runs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "obs/trace.h"
#include "util/text.h"

/* What a report or a trace says is echoed escaped: a crafted label cannot drive the terminal. */
#define ESC_LEN 1024

int rd_trace_mmtests(const char *path, FILE *out, char *err, size_t errlen)
{
	struct obs_trace t;
	int rc = obs_trace_load(path, &t, err, errlen);

	if (rc < 0)
		return rc;
	obs_trace_sort(&t);
	for (size_t i = 0; i < t.n; i++) {
		const struct obs_trace_rec *r = &t.recs[i];
		uint64_t when = t.hdr.t0_real_ns + r->t_ns;

		if (r->type != OBS_TR_FAULT)
			continue;
		fprintf(out, "fault %u %s %.0f %llu.%06llu\n", r->tid,
			obs_trace_decision(r) == 0 && !(r->flags & OBS_TRF_HOST_SMALL) ? "huge"
										       : "base",
			(double)r->val / 1000.0, (unsigned long long)(when / 1000000000ULL),
			(unsigned long long)(when / 1000 % 1000000ULL));
	}
	obs_trace_free(&t);
	return 0;
}

int rd_trace_text(const char *path, FILE *out, char *err, size_t errlen)
{
	struct obs_trace t;
	char v[512], pol[512], e[3][ESC_LEN];
	uint64_t huge = 0, span = 0;
	uint32_t tids[64];
	size_t ntid = 0;
	int rc = obs_trace_load(path, &t, err, errlen);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < t.n; i++) {
		const struct obs_trace_rec *r = &t.recs[i];
		size_t k;

		span = obs_trace_effect_ns(r) > span ? obs_trace_effect_ns(r) : span;
		if (r->type != OBS_TR_FAULT)
			continue;
		huge += obs_trace_decision(r) == 0;
		for (k = 0; k < ntid && tids[k] != r->tid; k++)
			;
		if (k == ntid && ntid < 64)
			tids[ntid++] = r->tid;
	}
	fprintf(
	    out, "%s: fault trace of pid %d (%s), policy %s, %.3f s, %s\n",
	    text_escape(path, e[0], ESC_LEN), t.hdr.pid,
	    text_escape(obs_trace_get(&t, "exe", v, sizeof(v)) ? v : "?", e[1], ESC_LEN),
	    text_escape(obs_trace_get(&t, "policy", pol, sizeof(pol)) ? pol : "?", e[2], ESC_LEN),
	    (double)span / 1e9,
	    t.complete ? "complete"
	    : t.cut    ? "truncated: the file ends inside a record (it was cut short: a full "
			 "disk, a write error, a partial copy), no END record"
		       : "incomplete: no END record (the process never reached its exit hook: a "
			 "crash, _exit or a kill; or the file was cut short)");
	fprintf(out,
		"  %zu records: %llu faults (%llu decided huge) from %zu threads, %llu maps, "
		"%llu adopted, %llu releases, %llu advice, %llu remaps; %llu dropped\n",
		t.n, (unsigned long long)t.counts[OBS_TR_FAULT], (unsigned long long)huge, ntid,
		(unsigned long long)t.counts[OBS_TR_MAP],
		(unsigned long long)t.counts[OBS_TR_ADOPT],
		(unsigned long long)t.counts[OBS_TR_RELEASE],
		(unsigned long long)t.counts[OBS_TR_ADVISE],
		(unsigned long long)t.counts[OBS_TR_REMAP], (unsigned long long)t.dropped);
	obs_trace_free(&t);
	return 0;
}

void rd_mmtests_hist(const struct rd_run *r, FILE *out)
{
	for (int c = RD_HUGE; c <= RD_BASE; c++)
		for (size_t k = 0; k < r->hist[c].n; k++)
			for (uint64_t i = 0; i < r->hist[c].b[k].n; i++)
				fprintf(out, "fault 0 %s %.0f 0.000000\n", rd_class_names[c],
					(double)r->hist[c].b[k].hi / 1000.0);
}

/* The memory census of a run report (live/census.c), when there is one. */
static void rd_memory_text(json_t *root, FILE *out)
{
	static const char *const why[] = {"brk",  "stack", "file",  "shared",
					  "prot", "small", "unseen"};
	double procs = rd_num(root, "memory.processes");

	if (!(procs > 0))
		return;
	fprintf(out, "  memory: %.1f MiB anonymous, %.1f %% managed, thpemu's own %.1f MiB",
		rd_num(root, "memory.anon_program_bytes") / 1048576.0,
		100.0 * rd_num(root, "memory.managed_share"),
		rd_num(root, "memory.anon_thpemu_bytes") / 1048576.0);
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		char path[64];
		double b;

		snprintf(path, sizeof(path), "memory.unmanaged_by_reason.%s", why[i]);
		b = rd_num(root, path);
		if (b >= 1048576.0)
			fprintf(out, "; unmanaged %s %.1f MiB", why[i], b / 1048576.0);
	}
	fputc('\n', out);
}

static const char *str_or(json_t *o, const char *key, const char *def)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : def;
}

/* The processes of a run report (thpemu run: "processes"), busiest first, when it has more
 * than one. */
static void rd_processes_text(json_t *root, FILE *out)
{
	json_t *arr = json_object_get(root, "processes");
	size_t n = json_array_size(arr), shown;
	double omitted = rd_num(root, "program.processes_omitted");
	double more_faults = rd_num(root, "program.processes_omitted_faults");
	json_t **v;

	omitted = omitted > 0 ? omitted : 0;
	more_faults = more_faults > 0 ? more_faults : 0;
	if (n + omitted <= 1 || !(v = malloc(n * sizeof(*v))))
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	qsort(v, n, sizeof(*v), rd_by_faults);
	shown = n < RD_PROCS_SHOWN ? n : RD_PROCS_SHOWN;
	fprintf(out,
		"  processes, busiest first (huge%%: of its faults; p50, p99: latency per "
		"fault):\n  %8s %8s %-16s %-13s %9s %6s %9s %9s %7s %9s\n",
		"pid", "ppid", "comm", "state", "faults", "huge%", "p50 us", "p99 us", "stalls",
		"stall ms");
	for (size_t i = 0; i < shown; i++) {
		double f = rd_num(v[i], "faults.total"), h = rd_num(v[i], "faults.huge");
		char e[2][64];

		fprintf(out, "  %8.0f %8.0f %-16s %-13s %9.0f %6.1f %9.1f %9.1f %7.0f %9.1f\n",
			rd_num(v[i], "pid"), rd_num(v[i], "ppid"),
			text_escape(str_or(v[i], "comm", "?"), e[0], sizeof(e[0])),
			text_escape(str_or(v[i], "state", "?"), e[1], sizeof(e[1])), f,
			f > 0 ? 100.0 * h / f : 0.0, rd_num(v[i], "latency_us.p50"),
			rd_num(v[i], "latency_us.p99"), rd_num(v[i], "stalls.count"),
			rd_num(v[i], "stalls.total_ms"));
	}
	for (size_t i = shown; i < n; i++) {
		double f = rd_num(v[i], "faults.total");

		more_faults += f > 0 ? f : 0;
	}
	if (n - shown + omitted > 0)
		fprintf(out, "  ... %.0f more process%s, %.0f faults\n",
			(double)(n - shown) + omitted,
			(double)(n - shown) + omitted == 1 ? "" : "es", more_faults);
	free(v);
}

/* The order mix of a report with mTHP: faults and 4 KiB pages per folio size, base
 * pages, each mTHP size with activity, 2 MiB, with each size's per-fault latency. */
static void rd_order_mix_text(const struct rd_run *r, FILE *out)
{
	const char *delivery = rd_str(r->root, "mthp.delivery");
	char e[64];
	struct rd_order_mix m;

	if (!rd_order_mix(r, &m))
		return;
	fprintf(out,
		"  order mix: mTHP coverage %.2f %% of the anonymous pages faulted; latency per "
		"fault\n",
		rd_num(r->root, "mthp.coverage_pct"));
	if (delivery && !strcmp(delivery, "per-PTE"))
		fprintf(out, "  (mTHP delivery is per-PTE: the host maps a folio with 4 KiB PTEs; "
			     "the order and its cost are the emulated kernel's)\n");
	else
		fprintf(out, "  (mTHP delivery: %s)\n",
			text_escape(delivery ? delivery : "?", e, sizeof(e)));
	fprintf(out, "  %-8s %5s %10s %12s %7s %10s %10s %9s\n", "size", "order", "faults",
		"pages 4k", "mem %", "p50 us", "p99 us", "fallback");
	for (int i = 0; i < RD_ORDERS; i++) {
		char p50[32], p99[32], fall[32] = "-";

		if (!m.shown[i])
			continue;
		if (isnan(m.p50[i]))
			snprintf(p50, sizeof(p50), "-");
		else
			snprintf(p50, sizeof(p50), "%.1f", m.p50[i]);
		if (isnan(m.p99[i]))
			snprintf(p99, sizeof(p99), "-");
		else
			snprintf(p99, sizeof(p99), "%.1f", m.p99[i]);
		if (i) { /* the size's anon_fault_fallback (base pages have none) */
			char path[64];
			double fb;

			snprintf(path, sizeof(path), "mthp.sizes.%s.anon_fault_fallback",
				 rd_order_names[i]);
			fb = rd_num(r->root, path);
			if (isnan(fb))
				snprintf(fall, sizeof(fall), "-");
			else
				snprintf(fall, sizeof(fall), "%.0f", fb);
		}
		fprintf(out, "  %-8s %5d %10.0f %12.0f %7.2f %10s %10s %9s\n", rd_order_names[i],
			rd_order_of(i), m.faults[i], m.pages[i],
			m.total_pages > 0 ? 100.0 * m.pages[i] / m.total_pages : 0.0, p50, p99,
			fall);
	}
}

/* Shared memory under the shmem THP policy (live reports with managed shmem: host.shmem_*,
 * the machine's thp_file_* counters). */
static void rd_shmem_text(const struct rd_run *r, FILE *out)
{
	double faults = rd_num(r->root, "host.shmem_faults");

	if (isnan(faults) || faults <= 0)
		return;
	fprintf(out,
		"  shared memory: %.0f first touches: PMD-size folios %.0f, mTHP %.0f, 4 KiB %.0f, "
		"another process's folio %.0f; %.0f pages filled (delivery per-PTE: a folio's "
		"pages as 4 KiB PTEs)\n",
		faults, rd_num(r->root, "host.shmem_huge"), rd_num(r->root, "host.shmem_mthp"),
		rd_num(r->root, "host.shmem_base"), rd_num(r->root, "host.shmem_cached"),
		rd_num(r->root, "host.shmem_pages"));
	fprintf(out,
		"  vmstat: thp_file_alloc %.0f thp_file_fallback %.0f thp_file_mapped %.0f; "
		"shmem frames at the end %.0f, %.0f of them in PMD-size folios\n",
		rd_num(r->root, "vmstat.thp_file_alloc"),
		rd_num(r->root, "vmstat.thp_file_fallback"),
		rd_num(r->root, "vmstat.thp_file_mapped"), rd_num(r->root, "host.pool.shmem"),
		rd_num(r->root, "host.pool.shmem_huge"));
	/* khugepaged's and MADV_COLLAPSE's counters: anonymous and shmem collapses alike */
	fprintf(out,
		"  collapse: thp_collapse_alloc %.0f thp_collapse_alloc_failed %.0f "
		"khugepaged_pages_collapsed %.0f madv_collapse %.0f\n",
		rd_num(r->root, "vmstat.thp_collapse_alloc"),
		rd_num(r->root, "vmstat.thp_collapse_alloc_failed"),
		rd_num(r->root, "vmstat.khugepaged_pages_collapsed"),
		rd_num(r->root, "vmstat.madv_collapse"));
}

void rd_run_text(const struct rd_run *r, FILE *out)
{
	static const char *const cls[] = {"huge", "base", "both"};
	char e[3][ESC_LEN];

	fprintf(out, "%s: %s%s, %s\n", text_escape(r->source, e[0], ESC_LEN),
		text_escape(r->label, e[1], ESC_LEN), r->warmup ? " (warm-up)" : "",
		r->ok ? "ok" : text_escape(r->note, e[2], ESC_LEN));
	if (!r->root)
		return;
	fprintf(out,
		"  faults %.0f: huge %.0f (%.2f %% of faults), base %.0f; stalls %.0f (%.1f ms); "
		"writeback waits %.0f (%.1f ms)\n",
		rd_num(r->root, "faults.total"), rd_num(r->root, "faults.huge"),
		rd_num(r->root, "faults.huge_pct"), rd_num(r->root, "faults.base"),
		rd_num(r->root, "stalls.count"), rd_num(r->root, "stalls.total_ms"),
		rd_num(r->root, "writeback_waits.count"),
		rd_num(r->root, "writeback_waits.total_ms"));
	if (!isnan(rd_num(r->root, "stalls.waits.count"))) /* both stall metrics (obs/stall.h) */
		fprintf(
		    out,
		    "  stalls >= %.0f ms: per-wait events %.0f (%.1f ms, longest %.1f ms), "
		    "per-fault stalls %.0f (%.1f ms, longest %.1f ms)\n",
		    rd_num(r->root, "stalls.waits.threshold_ms"),
		    rd_num(r->root, "stalls.waits.count"), rd_num(r->root, "stalls.waits.total_ms"),
		    rd_num(r->root, "stalls.waits.max_ms"), rd_num(r->root, "stalls.count"),
		    rd_num(r->root, "stalls.total_ms"), rd_num(r->root, "stalls.faults.max_ms"));
	if (!isnan(rd_num(r->root, "coverage.end_pct")))
		fprintf(out,
			"  AnonHugePages coverage (%% of managed anon memory): end %.2f %%, "
			"time-weighted %.2f %%\n",
			rd_num(r->root, "coverage.end_pct"),
			rd_num(r->root, "coverage.time_weighted_pct"));
	rd_memory_text(r->root, out);
	for (int c = 0; c < 3; c++) {
		char p[4][48];

		snprintf(p[0], sizeof(p[0]), "latency_us.%s.p50", cls[c]);
		snprintf(p[1], sizeof(p[1]), "latency_us.%s.p99", cls[c]);
		snprintf(p[2], sizeof(p[2]), "latency_us.%s.max", cls[c]);
		snprintf(p[3], sizeof(p[3]), "latency_us.%s.count", cls[c]);
		fprintf(out,
			"  %-4s latency per fault, us: p50 %.1f p99 %.1f max %.1f (%.0f faults)\n",
			cls[c], rd_num(r->root, p[0]), rd_num(r->root, p[1]), rd_num(r->root, p[2]),
			rd_num(r->root, p[3]));
		/* live reports: the same faults net of the emulation (the start-up probe) */
		char k[3][56];

		for (int q = 0; q < 3; q++)
			snprintf(k[q], sizeof(k[q]), "kernel_%.47s", p[q]);
		if (rd_num(r->root, p[3]) > 0 && !isnan(rd_num(r->root, k[0])))
			fprintf(
			    out,
			    "       net of the emulation (kernel_latency_us): p50 %.1f p99 %.1f "
			    "max %.1f\n",
			    rd_num(r->root, k[0]), rd_num(r->root, k[1]), rd_num(r->root, k[2]));
	}
	rd_order_mix_text(r, out);
	rd_shmem_text(r, out);
	rd_processes_text(r->root, out);
}
