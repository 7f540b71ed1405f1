/* thpemu report: render run, sim and ab reports (and fault traces).
 *
 *   thpemu report FILE... [--text] [--html OUT] [--mmtests] [--a LABEL --b LABEL]
 *
 * Runs are grouped into series by label (an ab report's side labels, else the policy). With
 * two series (or --a/--b naming two) the comparison of `thpemu ab` is computed too. --text
 * (the default) prints each run and the comparison; --html writes the self-contained HTML
 * report; --mmtests prints one line per fault in the format mmtests' thpscale/thpcompact
 * extractors read, "fault <tid> <huge|base> <latency_us> <sec.usec>": exact from a fault trace
 * (a trace file, or the trace a run report names in config.trace), otherwise reconstructed from
 * the report's latency histogram (thread 0, times 0, latencies within 3 %; said on stderr).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/runs.h"
#include "obs/trace.h"

#define CMD	  "report"
#define MAX_FILES 256

struct report_args {
	const char *files[MAX_FILES];
	int nfiles;
	bool text, mmtests;
	const char *html, *la, *lb;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu report FILE... [--text] [--html OUT] [--mmtests] [--a LABEL --b "
	    "LABEL]\n\n"
	    "Renders reports of thpemu run (--report), thpemu sim (--json) and thpemu ab "
	    "(--json),\n"
	    "and fault traces (thpemu run --trace). Runs are grouped by label: an ab report's "
	    "side\n"
	    "labels, otherwise the policy.\n\n"
	    "  --text          a text summary of every run, and the A/B comparison when there are\n"
	    "                  two series (the default output)\n"
	    "  --html OUT      one self-contained HTML file: latency CDFs and tail CDFs, huge %% "
	    "per\n"
	    "                  run, the stall timeline and stall groups with stacks, vmstat, the\n"
	    "                  configuration\n"
	    "  --mmtests       one 'fault <tid> <huge|base> <us> <sec.usec>' line per fault, as\n"
	    "                  mmtests' thpcompact extractors read them: exact from a trace (a "
	    "trace\n"
	    "                  file, or a run report recorded with --trace), else reconstructed "
	    "from\n"
	    "                  the latency histogram (thread 0, time 0, latency within 3 %%)\n"
	    "  --a L, --b L    the two series to compare (default: the first two)\n\n"
	    "--html OUT is checked before any report is read (an existing OUT must be a regular\n"
	    "file of ours with one link, never a symbolic link) and written after.\n"
	    "Exit status: 0; 1 if a file cannot be written; 2 for a bad option, an unreadable "
	    "report\nor an output that cannot be written.\n\n");
	rd_metrics_usage(f);
}

static void parse(int argc, char **argv, struct report_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(arg, "--text")) {
			a->text = true;
		} else if (!strcmp(arg, "--mmtests")) {
			a->mmtests = true;
		} else if (!strcmp(arg, "--html") || !strcmp(arg, "--a") || !strcmp(arg, "--b")) {
			if (i + 1 >= argc)
				cli_usage_error(CMD, "%s needs a value", arg);
			if (!strcmp(arg, "--html"))
				a->html = argv[++i];
			else if (!strcmp(arg, "--a"))
				a->la = argv[++i];
			else
				a->lb = argv[++i];
		} else if (!strncmp(arg, "--html=", 7)) {
			a->html = arg + 7;
		} else if (!strncmp(arg, "--a=", 4)) {
			a->la = arg + 4;
		} else if (!strncmp(arg, "--b=", 4)) {
			a->lb = arg + 4;
		} else if (arg[0] == '-' && arg[1]) {
			cli_usage_error(CMD,
					"unknown option '%s' (accepted: --text, --html, --mmtests, "
					"--a, --b)",
					arg);
		} else if (a->nfiles == MAX_FILES) {
			cli_usage_error(CMD, "at most %d files", MAX_FILES);
		} else {
			a->files[a->nfiles++] = arg;
		}
	}
	if (!a->nfiles)
		cli_usage_error(CMD, "no report given (usage: thpemu report FILE... [--html OUT])");
	if (!!a->la != !!a->lb)
		cli_usage_error(CMD, "--a and --b go together");
	if (a->la && !strcmp(a->la, a->lb))
		cli_usage_error(
		    CMD, "--a and --b name the same series '%s' (two labels to compare)", a->la);
	if (!a->html && !a->mmtests)
		a->text = true;
	if (a->html) {
		cli_check_output(CMD, "--html", a->html);
		for (int i = 0; i < a->nfiles; i++)
			cli_distinct_paths(CMD, "--html", a->html, "a report to read", a->files[i]);
	}
}

/* --mmtests of a run: exact from the trace its report names, else from its histogram. */
static void mmtests_run(const struct rd_run *r, FILE *out, bool *said)
{
	const char *trace = r->root ? rd_str(r->root, "config.trace") : NULL;
	char err[700];

	if (trace && obs_trace_is_trace(trace)) {
		if (rd_trace_mmtests(trace, out, err, sizeof(err)) == 0)
			return;
		cli_error(CMD, "%s", err);
	}
	if (!*said)
		fprintf(stderr,
			"thpemu report: %s has no fault trace: --mmtests lines come from its "
			"latency histogram (thread 0, time 0, latency within 3 %%)\n",
			cli_esc(r->source));
	*said = true;
	rd_mmtests_hist(r, out);
}

static int write_html(const struct report_args *a, FILE *f, const struct rd_run *runs, size_t n,
		      const struct cmp_result *c)
{
	char title[400], sub[2000];
	size_t off = 0;
	struct html_opts o = {title, sub, NULL};
	int rc;

	if (c)
		snprintf(title, sizeof(title), "thpemu report: %s vs %s", c->label_a, c->label_b);
	else
		snprintf(title, sizeof(title), "thpemu report: %s", n ? runs[0].label : "");
	for (int i = 0; i < a->nfiles && off < sizeof(sub); i++)
		off += (size_t)snprintf(sub + off, sizeof(sub) - off, "%s%s", i ? " " : "",
					a->files[i]);
	rc = html_report_file(f, runs, n, c, &o);
	if (rc < 0)
		cli_error(CMD, "--html: error writing '%s': %s", a->html, strerror(-rc));
	return rc;
}

static int report_main(int argc, char **argv)
{
	struct report_args a = {0};
	struct rd_run *runs = NULL;
	struct cmp_result c, *cmp = NULL;
	const char *labels[8];
	size_t n = 0, nl;
	bool said = false;
	int rc = 0;
	char err[700];
	FILE *html = NULL;

	parse(argc, argv, &a);
	for (int i = 0; i < a.nfiles; i++) {
		if (obs_trace_is_trace(a.files[i])) {
			if (a.mmtests && rd_trace_mmtests(a.files[i], stdout, err, sizeof(err)) < 0)
				cli_usage_error(CMD, "%s", err);
			if (a.text && !a.mmtests &&
			    rd_trace_text(a.files[i], stdout, err, sizeof(err)) < 0)
				cli_usage_error(CMD, "%s", err);
			continue;
		}
		if (rd_load(a.files[i], &runs, &n, err, sizeof(err)) < 0)
			cli_usage_error(CMD, "%s", err);
	}
	nl = rd_labels(runs, n, labels, 8);
	if (a.la && a.lb) {
		bool fa = false, fb = false;

		for (size_t i = 0; i < nl; i++) {
			fa |= !strcmp(labels[i], a.la);
			fb |= !strcmp(labels[i], a.lb);
		}
		if (!fa || !fb)
			cli_usage_error(CMD, "--a/--b: no runs labelled '%s'", fa ? a.lb : a.la);
	}
	if (a.html) /* every input read and every label found: now the output */
		html = cli_open_output(CMD, "--html", a.html);
	if ((a.la || nl == 2) && cmp_compute(runs, n, a.la ? a.la : labels[0],
					     a.lb ? a.lb : labels[1], 10000, 1, &c) == 0)
		cmp = &c;
	if (a.mmtests)
		for (size_t i = 0; i < n; i++)
			if (runs[i].ok && !runs[i].warmup)
				mmtests_run(&runs[i], stdout, &said);
	if (a.text) {
		for (size_t i = 0; i < n; i++)
			rd_run_text(&runs[i], stdout);
		if (cmp) {
			printf("\nA = %s (%zu runs), B = %s (%zu runs)\n\n", cli_esc(cmp->label_a),
			       cmp->runs_a, cli_esc(cmp->label_b), cmp->runs_b);
			cmp_text(stdout, cmp);
		}
	}
	if (html && write_html(&a, html, runs, n, cmp) < 0)
		rc = 1;
	if (cmp)
		cmp_free(cmp);
	for (size_t i = 0; i < n; i++)
		rd_run_free(&runs[i]);
	free(runs);
	return rc;
}

CLI_COMMAND(report, "report", "render run, sim and ab reports: text, HTML, mmtests fault lines",
	    report_main)
