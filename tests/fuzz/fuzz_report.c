/* Fuzz target: what `thpemu report` and `thpemu ab` read (core/report/runs.c, jansson): a run,
 * sim or ab report, or a fault trace, rendered every way the report command renders it: the
 * text summary, the A/B comparison when there are two series, the --mmtests lines and the
 * HTML page (all into /dev/null). */
#include "report/runs.h"
#include "fuzz.h"
#include "obs/trace.h"

#define RESAMPLES 200 /* the command's 10000 exercise the same code, slower */
/* --mmtests from a histogram prints one line per fault it counts (up to RD_FAULTS_MAX): the
 * output the input asks for, not work the reader could bound. Rendered below this many. */
#define MMTESTS_LINES_MAX (1u << 20)

static bool mmtests_small(const struct rd_run *r)
{
	return r->hist[RD_HUGE].total + r->hist[RD_BASE].total <= MMTESTS_LINES_MAX;
}

static void render(struct rd_run *runs, size_t n)
{
	const char *labels[8];
	size_t nl = rd_labels(runs, n, labels, 8);
	struct cmp_result c, *cmp = NULL;
	struct html_opts o = {"fuzz", "fuzz", NULL};

	if (nl == 2 && cmp_compute(runs, n, labels[0], labels[1], RESAMPLES, 1, &c) == 0)
		cmp = &c;
	for (size_t i = 0; i < n; i++) {
		rd_run_text(&runs[i], fuzz_null());
		if (runs[i].ok && !runs[i].warmup && mmtests_small(&runs[i]))
			rd_mmtests_hist(&runs[i], fuzz_null());
	}
	if (cmp)
		cmp_text(fuzz_null(), cmp);
	FUZZ_CHECK(html_report(fuzz_null(), runs, n, cmp, &o) == 0);
	if (cmp)
		cmp_free(cmp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	struct rd_run *runs = NULL;
	size_t n = 0;
	char err[1024];

	if (obs_trace_is_trace(path)) {
		(void)rd_trace_text(path, fuzz_null(), err, sizeof(err));
		(void)rd_trace_mmtests(path, fuzz_null(), err, sizeof(err));
		return 0;
	}
	if (rd_load(path, &runs, &n, err, sizeof(err)) == 0)
		render(runs, n);
	for (size_t i = 0; i < n; i++)
		rd_run_free(&runs[i]);
	free(runs);
	return 0;
}
