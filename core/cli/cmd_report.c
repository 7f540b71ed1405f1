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
 *
 * Results of `thpemu matrix` (a matrix directory, or its results/NNNN.json files in any number)
 * are grouped by workload and, within each, by policy: the first policy of the matrix is the
 * baseline (A) and every other is compared with it (B) by the same statistics as ab's.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "report/runs.h"
#include "obs/trace.h"

#define CMD	  "report"
#define MAX_FILES 256
#define MAX_WL	  64 /* workloads of a matrix */
#define MAX_POL	  32 /* policies of a matrix */

struct report_args {
	const char *files[MAX_FILES];
	int nfiles;
	bool text, mmtests;
	const char *html, *la, *lb, *workload;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu report FILE... [--text] [--html OUT] [--mmtests] [--a LABEL --b "
	    "LABEL]\n"
	    "                     [--workload NAME]\n"
	    "       thpemu report MATRIX-DIR [...]\n\n"
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
	    "  --a L, --b L    the two series to compare (default: the first two)\n"
	    "  --workload NAME only the runs of this workload of a matrix\n\n"
	    "Matrices (thpemu matrix): a FILE may be a matrix directory (its results/*.json are\n"
	    "read, and cells without a result are listed) or any cell results. Runs are grouped "
	    "by\n"
	    "workload, and in each the matrix's first policy (A) is compared with every other "
	    "(B).\n"
	    "--html of a matrix renders one workload (--workload NAME when there are several).\n\n"
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
		} else if (!strcmp(arg, "--html") || !strcmp(arg, "--a") || !strcmp(arg, "--b") ||
			   !strcmp(arg, "--workload")) {
			if (i + 1 >= argc)
				prog_usage_error(CMD, "%s needs a value", arg);
			if (!strcmp(arg, "--workload"))
				a->workload = argv[++i];
			else if (!strcmp(arg, "--html"))
				a->html = argv[++i];
			else if (!strcmp(arg, "--a"))
				a->la = argv[++i];
			else
				a->lb = argv[++i];
		} else if (!strncmp(arg, "--html=", 7)) {
			a->html = arg + 7;
		} else if (!strncmp(arg, "--workload=", 11)) {
			a->workload = arg + 11;
		} else if (!strncmp(arg, "--a=", 4)) {
			a->la = arg + 4;
		} else if (!strncmp(arg, "--b=", 4)) {
			a->lb = arg + 4;
		} else if (arg[0] == '-' && arg[1]) {
			prog_usage_error(
			    CMD,
			    "unknown option '%s' (accepted: --text, --html, --mmtests, "
			    "--a, --b, --workload)",
			    arg);
		} else if (a->nfiles == MAX_FILES) {
			prog_usage_error(CMD, "at most %d files", MAX_FILES);
		} else {
			a->files[a->nfiles++] = arg;
		}
	}
	if (!a->nfiles)
		prog_usage_error(CMD,
				 "no report given (usage: thpemu report FILE... [--html OUT])");
	if (!!a->la != !!a->lb)
		prog_usage_error(CMD, "--a and --b go together");
	if (a->la && !strcmp(a->la, a->lb))
		prog_usage_error(
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
		prog_error(CMD, "%s", err);
	}
	if (!*said)
		fprintf(stderr,
			"thpemu report: %s has no fault trace: --mmtests lines come from its "
			"latency histogram (thread 0, time 0, latency within 3 %%)\n",
			prog_esc(r->source));
	*said = true;
	rd_mmtests_hist(r, out);
}

static int write_html(const struct report_args *a, struct cli_output *out,
		      const struct rd_run *runs, size_t n, const struct cmp_result *c)
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
	rc = html_report(cli_output_stream(out), runs, n, c, &o);
	if (rc < 0) {
		prog_error(CMD, "--html: '%s': the report could not be made: %s", a->html,
			   strerror(-rc));
		cli_output_discard(out);
		return rc;
	}
	return cli_output_close(out);
}

/* ---- matrices ------------------------------------------------------------------------------ */

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* NNNN.json names of DIR/SUB, sorted (cell order); *n of them. */
static char **cell_files(const char *dir, const char *sub, size_t *n)
{
	char path[4200], **v = NULL;
	DIR *d;
	struct dirent *e;

	*n = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (!(d = opendir(path)))
		return NULL;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char **nv;

		if (len != 9 || strspn(e->d_name, "0123456789") != 4 ||
		    strcmp(e->d_name + 4, ".json"))
			continue;
		if (!(nv = realloc(v, (*n + 1) * sizeof(*v))))
			break;
		v = nv;
		v[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof(*v), by_name);
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A matrix directory: every result read; the cells without one said (on out). */
static void load_matrix_dir(const char *dir, struct rd_run **runs, size_t *n, FILE *out)
{
	size_t nc, nr, missing = 0;
	char **cells = cell_files(dir, "cells", &nc), **res = cell_files(dir, "results", &nr);
	char path[4200], err[700];

	if (!cells)
		prog_usage_error(
		    CMD, "'%s' is a directory but not a thpemu matrix (no cells/ in it)", dir);
	if (nc) { /* a matrix of thpemu fidelity comparisons holds no run to compare */
		json_t *c;

		snprintf(path, sizeof(path), "%s/cells/%s", dir, cells[0]);
		c = json_load_file(path, 0, NULL);
		if (json_object_get(c, "fidelity"))
			prog_usage_error(CMD,
					 "'%s' is a matrix of thpemu fidelity cells: each result "
					 "is a fidelity table (results/NNNN.json, its text "
					 "logs/NNNN.out), not a run to compare",
					 dir);
		json_decref(c);
	}
	for (size_t i = 0; i < nr; i++) {
		snprintf(path, sizeof(path), "%s/results/%s", dir, res[i]);
		if (rd_load(path, runs, n, err, sizeof(err)) < 0)
			prog_usage_error(CMD, "%s", err);
	}
	for (size_t i = 0; i < nc; i++) {
		json_t *c;

		if (res && bsearch(&cells[i], res, nr, sizeof(*res), by_name))
			continue;
		snprintf(path, sizeof(path), "%s/cells/%s", dir, cells[i]);
		c = json_load_file(path, 0, NULL);
		fprintf(out,
			"matrix %s: cell %.4s has no result (policy %s, workload %s, run %lld)\n",
			prog_esc(dir), cells[i], prog_esc(rd_str(c, "policy.label") ?: "?"),
			prog_esc(rd_str(c, "workload.name") ?: "?"),
			(long long)json_integer_value(json_object_get(c, "run")));
		json_decref(c);
		missing++;
	}
	fprintf(out, "matrix %s: %zu of %zu cells have a result\n", prog_esc(dir), nc - missing,
		nc);
	free_names(cells, nc);
	free_names(res, nr);
}

static const char *workload_of(const struct rd_run *r)
{
	return r->root ? rd_str(r->root, "matrix.workload.name") : NULL;
}

/* The workloads of the runs, in order of first appearance. */
static size_t workloads(const struct rd_run *runs, size_t n, const char **out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const char *w = workload_of(&runs[i]);
		size_t j;

		for (j = 0; w && j < k && strcmp(out[j], w); j++)
			;
		if (w && j == k && k < MAX_WL)
			out[k++] = w;
	}
	return k;
}

/* The runs of workload w (shallow copies: owned by runs). */
static size_t runs_of(const struct rd_run *runs, size_t n, const char *w, struct rd_run *sub)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const char *wi = workload_of(&runs[i]);

		if (wi && !strcmp(wi, w))
			sub[k++] = runs[i];
	}
	return k;
}

/* Per workload: the baseline policy against each other one (or --a against --b). */
static void matrix_text(const struct report_args *a, const struct rd_run *runs, size_t n)
{
	const char *wl[MAX_WL], *lab[MAX_POL];
	size_t nw = workloads(runs, n, wl);
	struct rd_run *sub = calloc(n ? n : 1, sizeof(*sub));

	if (!sub)
		return;
	for (size_t w = 0; w < nw; w++) {
		size_t k = runs_of(runs, n, wl[w], sub), nl = rd_labels(sub, k, lab, MAX_POL);
		json_t *cmd = json_object_get(
		    json_object_get(json_object_get(sub[0].root, "matrix"), "workload"), "command");
		size_t i;
		json_t *v;

		printf("\n==== workload %s:", prog_esc(wl[w]));
		json_array_foreach(cmd, i, v) printf(" %s", prog_esc(json_string_value(v) ?: ""));
		printf("\n     %zu runs of %zu policies:", k, nl);
		for (size_t j = 0; j < nl; j++)
			printf("%s %s", j ? "," : "", prog_esc(lab[j]));
		printf("\n");
		if (nl < 2)
			printf("\none policy only: nothing to compare\n");
		for (size_t j = 1; j < nl; j++) {
			const char *la = a->la ? a->la : lab[0], *lb = a->la ? a->lb : lab[j];
			struct cmp_result c;

			if (a->la && j > 1)
				break;
			if (cmp_compute(sub, k, la, lb, 10000, 1, &c) < 0)
				break;
			printf("\nworkload %s: A = %s (%zu runs), B = %s (%zu runs)\n\n",
			       prog_esc(wl[w]), prog_esc(c.label_a), c.runs_a, prog_esc(c.label_b),
			       c.runs_b);
			cmp_text(stdout, &c);
			cmp_free(&c);
		}
	}
	free(sub);
}

/* --workload NAME: keep only its runs (the others freed). */
static void keep_workload(const char *w, struct rd_run *runs, size_t *n)
{
	const char *wl[MAX_WL];
	size_t nw = workloads(runs, *n, wl), k = 0;
	char names[1000];
	size_t off = 0;
	bool found = false;

	for (size_t i = 0; i < nw; i++) {
		found |= !strcmp(wl[i], w);
		if (off < sizeof(names))
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						i ? ", " : "", wl[i]);
	}
	if (!nw)
		prog_usage_error(CMD, "--workload: no thpemu matrix results given");
	if (!found)
		prog_usage_error(CMD, "--workload: no runs of '%s' (accepted: %s)", w, names);
	for (size_t i = 0; i < *n; i++) {
		const char *rw = workload_of(&runs[i]);

		if (rw && !strcmp(rw, w))
			runs[k++] = runs[i];
		else
			rd_run_free(&runs[i]);
	}
	*n = k;
}

static int report_main(int argc, char **argv)
{
	struct report_args a = {0};
	struct rd_run *runs = NULL;
	struct cmp_result c, *cmp = NULL;
	const char *labels[MAX_POL], *la, *lb;
	size_t n = 0, nl, nmatrix = 0, mlen = 0;
	char *mbuf = NULL; /* what the matrix directories lack: said once every check passed */
	FILE *mf = NULL;
	bool said = false;
	int rc = 0;
	char err[700];
	struct cli_output *html = NULL;

	parse(argc, argv, &a);
	for (int i = 0; i < a.nfiles; i++) {
		if (obs_trace_is_trace(a.files[i])) {
			if (a.mmtests && rd_trace_mmtests(a.files[i], stdout, err, sizeof(err)) < 0)
				prog_usage_error(CMD, "%s", err);
			if (a.text && !a.mmtests &&
			    rd_trace_text(a.files[i], stdout, err, sizeof(err)) < 0)
				prog_usage_error(CMD, "%s", err);
			continue;
		}
		if (is_dir(a.files[i])) {
			if (!mf && !(mf = open_memstream(&mbuf, &mlen)))
				prog_usage_error(CMD, "out of memory");
			load_matrix_dir(a.files[i], &runs, &n, mf);
			continue;
		}
		if (rd_load(a.files[i], &runs, &n, err, sizeof(err)) < 0)
			prog_usage_error(CMD, "%s", err);
	}
	for (size_t i = 0; i < n; i++)
		nmatrix += workload_of(&runs[i]) != NULL;
	if (nmatrix && nmatrix != n)
		prog_usage_error(CMD, "thpemu matrix results and other reports given together "
				      "(compare one kind at a time)");
	if (a.workload)
		keep_workload(a.workload, runs, &n);
	if (nmatrix && a.html && workloads(runs, n, labels) > 1)
		prog_usage_error(CMD, "--html: the matrix has several workloads; name one with "
				      "--workload NAME");
	nl = rd_labels(runs, n, labels, MAX_POL);
	if (a.la && a.lb) {
		bool fa = false, fb = false;

		for (size_t i = 0; i < nl; i++) {
			fa |= !strcmp(labels[i], a.la);
			fb |= !strcmp(labels[i], a.lb);
		}
		if (!fa || !fb)
			prog_usage_error(CMD, "--a/--b: no runs labelled '%s'", fa ? a.lb : a.la);
	}
	if (a.html) { /* every input read and every label found: now the output */
		html = cli_output_open(CMD, "--html", a.html);
		cli_sigpipe_ignore(); /* a reader of the text going away cannot cost the HTML */
	}
	if (mf && fclose(mf) == 0 && mbuf)
		fputs(mbuf, a.text ? stdout : stderr);
	free(mbuf);
	/* a matrix: the HTML compares the baseline with the first other policy */
	la = a.la ? a.la : labels[0];
	lb = a.lb ? a.lb : labels[1];
	if ((a.la || nl == 2 || (nmatrix && nl > 2 && a.html)) &&
	    cmp_compute(runs, n, la, lb, 10000, 1, &c) == 0)
		cmp = &c;
	if (a.mmtests)
		for (size_t i = 0; i < n; i++)
			if (runs[i].ok && !runs[i].warmup)
				mmtests_run(&runs[i], stdout, &said);
	if (a.text && nmatrix) {
		matrix_text(&a, runs, n);
	} else if (a.text) {
		for (size_t i = 0; i < n; i++)
			rd_run_text(&runs[i], stdout);
		if (cmp) {
			printf("\nA = %s (%zu runs), B = %s (%zu runs)\n\n", prog_esc(cmp->label_a),
			       cmp->runs_a, prog_esc(cmp->label_b), cmp->runs_b);
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
	return html ? cli_stdout_end(rc) : rc;
}

CLI_COMMAND(report, "report", "render run, sim and ab reports: text, HTML, mmtests fault lines",
	    report_main)
