/* The report's per-process view: one summary per process of the run (thpemu run's collect()
 * makes them from the statistics files once the program ended), the busiest UFFD_PROCS_MAX kept
 * and the rest counted. Nothing here runs on the fault path.
 */
#include "report/run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"

const char *const uffd_proc_end_names[] = {
#define UFFD_X_NAME(name, help) #name,
    UFFD_PROC_ENDS(UFFD_X_NAME)
#undef UFFD_X_NAME
};

const char *const uffd_proc_end_help[] = {
#define UFFD_X_HELP(name, help) help,
    UFFD_PROC_ENDS(UFFD_X_HELP)
#undef UFFD_X_HELP
};

int uffd_procs_init(struct uffd_proc_list *l, unsigned max)
{
	memset(l, 0, sizeof(*l));
	l->max = max ? max : UFFD_PROCS_MAX;
	l->cap = 2 * l->max; /* full: the busiest half is kept (amortised O(log n) per add) */
	l->v = calloc(l->cap, sizeof(*l->v));
	return l->v ? 0 : -ENOMEM;
}

void uffd_procs_free(struct uffd_proc_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* The program's name: its comm, or (a record without one) exe's basename, else the command
 * line's first word's. */
static void name_of(const struct uffd_stats *st, char *out, size_t len)
{
	const char *s = st->exe[0] ? st->exe : st->cmdline, *base;
	size_t n;

	if (st->comm[0]) {
		s = st->comm;
		n = strnlen(s, sizeof(st->comm));
	} else {
		n = st->exe[0] ? strnlen(s, sizeof(st->exe)) : strcspn(s, " ");
		for (base = s; (base = memchr(s, '/', n)); s = base + 1)
			n -= (size_t)(base + 1 - s);
	}
	n = n < len - 1 ? n : len - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

void uffd_proc_summarise(struct uffd_proc_summary *p, const struct uffd_stats *st)
{
	struct obs_hist *both = malloc(sizeof(*both)); /* ~11 KiB: not on the stack */
	struct obs_hist_summary hs;

	memset(p, 0, sizeof(*p));
	p->pid = st->pid;
	p->ppid = st->ppid;
	name_of(st, p->comm, sizeof(p->comm));
	snprintf(p->cmdline, sizeof(p->cmdline), "%.*s", (int)sizeof(p->cmdline) - 1, st->cmdline);
	p->stepped_aside = st->host.stepped_aside != 0;
	if ((p->stepped_aside || st->state == UFFD_PROC_UNMANAGED) && st->note[0])
		snprintf(p->note, sizeof(p->note), "%.*s", (int)sizeof(p->note) - 1, st->note + 1);
	p->huge = st->faults.lat[OBS_HUGE].count;
	p->faults = p->huge + st->faults.lat[OBS_BASE].count + st->faults.lat[OBS_MTHP].count;
	p->nomem = st->faults.nomem;
	p->stalls = st->host.stalls;
	p->stall_ns = st->host.stall_ns;
	p->anon = st->mem.anon > st->mem.anon_own ? st->mem.anon - st->mem.anon_own : 0;
	p->anon_managed = st->mem.anon_managed;
	if (!both)
		return;
	obs_faults_both(&st->faults, both);
	obs_hist_summarise(both, 1000, &hs);
	p->p50_us = hs.p50;
	p->p99_us = hs.p99;
	p->max_us = hs.max;
	free(both);
}

/* Busiest first: more faults, then more stall time, then the lower pid. */
static int by_busy(const void *x, const void *y)
{
	const struct uffd_proc_summary *a = x, *b = y;

	if (a->faults != b->faults)
		return a->faults < b->faults ? 1 : -1;
	if (a->stall_ns != b->stall_ns)
		return a->stall_ns < b->stall_ns ? 1 : -1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

static int by_pid(const void *x, const void *y)
{
	const struct uffd_proc_summary *a = x, *b = y;

	return (a->pid > b->pid) - (a->pid < b->pid);
}

/* Keep the busiest max, count the others. */
static void keep_busiest(struct uffd_proc_list *l)
{
	if (l->n <= l->max)
		return;
	qsort(l->v, l->n, sizeof(*l->v), by_busy);
	for (unsigned i = l->max; i < l->n; i++) {
		l->omitted++;
		l->omitted_faults += l->v[i].faults;
	}
	l->n = l->max;
}

void uffd_procs_add(struct uffd_proc_list *l, const struct uffd_proc_summary *p)
{
	if (!l->v) { /* out of memory at init: still counted */
		l->omitted++;
		l->omitted_faults += p->faults;
		return;
	}
	if (l->n == l->cap)
		keep_busiest(l);
	l->v[l->n++] = *p;
}

void uffd_procs_finish(struct uffd_proc_list *l)
{
	keep_busiest(l);
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), by_pid);
}

const struct uffd_proc_summary *uffd_procs_find(const struct uffd_proc_list *l, int pid)
{
	struct uffd_proc_summary key = {.pid = pid};

	if (!l || !l->n)
		return NULL;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), by_pid);
}

/* ---- report --------------------------------------------------------------------------------- */

static void proc_json(struct json_w *w, const struct uffd_proc_summary *p)
{
	jw_obj_begin(w, NULL);
	jw_i64(w, "pid", p->pid);
	jw_i64(w, "ppid", p->ppid);
	jw_str(w, "comm", p->comm);
	jw_str(w, "cmdline", p->cmdline);
	jw_str(w, "state", uffd_proc_end_names[p->end < UFFD_END_NR ? p->end : 0]);
	if (p->end == UFFD_END_killed)
		jw_i64(w, "signal", p->signal);
	else
		jw_null(w, "signal");
	jw_u64(w, "exec_predecessors", p->execs);
	jw_str(w, "exec_from", p->execs ? p->exec_from : NULL);
	jw_bool(w, "stepped_aside", p->stepped_aside);
	jw_str(w, "note", p->note[0] ? p->note : NULL);
	jw_obj_begin(w, "faults");
	jw_u64(w, "total", p->faults);
	jw_u64(w, "huge", p->huge);
	jw_u64(w, "base", p->faults - p->huge);
	jw_u64(w, "nomem", p->nomem);
	jw_obj_end(w);
	jw_obj_begin(w, "latency_us");
	jw_dbl(w, "p50", p->p50_us, 3);
	jw_dbl(w, "p99", p->p99_us, 3);
	jw_dbl(w, "max", p->max_us, 3);
	jw_obj_end(w);
	jw_obj_begin(w, "stalls");
	jw_u64(w, "count", p->stalls);
	jw_dbl(w, "total_ms", (double)p->stall_ns / 1e6, 3);
	jw_obj_end(w);
	jw_obj_begin(w, "memory"); /* at its largest */
	jw_u64(w, "anon_program_bytes", p->anon);
	jw_u64(w, "anon_managed_bytes", p->anon_managed);
	jw_obj_end(w);
	jw_obj_end(w);
}

void uffd_report_procs_json(struct json_w *w, const struct uffd_proc_list *l)
{
	jw_arr_begin(w, "processes");
	for (unsigned i = 0; i < l->n; i++)
		proc_json(w, &l->v[i]);
	jw_arr_end(w);
}

#define SUMMARY_ROWS 20

void uffd_report_procs_summary(FILE *f, const struct uffd_proc_list *l)
{
	unsigned n = l->n < SUMMARY_ROWS ? l->n : SUMMARY_ROWS;
	struct uffd_proc_summary *top;
	uint64_t more_faults = l->omitted_faults;
	char comm[4 * sizeof(top->comm)];

	if (l->n + l->omitted <= 1)
		return;
	top = malloc((l->n ? l->n : 1) * sizeof(*top));
	if (!top)
		return;
	memcpy(top, l->v, l->n * sizeof(*top));
	qsort(top, l->n, sizeof(*top), by_busy);
	fprintf(f, "thpemu: processes, busiest first:\n");
	fprintf(f, "thpemu: %8s %8s %-16s %-13s %9s %6s %9s %9s %9s %7s %9s\n", "pid", "ppid",
		"comm", "state", "faults", "huge%", "p50 us", "p99 us", "max us", "stalls",
		"stall ms");
	for (unsigned i = 0; i < n; i++) {
		const struct uffd_proc_summary *p = &top[i];

		fprintf(
		    f, "thpemu: %8d %8d %-16s %-13s %9llu %6.1f %9.1f %9.1f %9.1f %7llu %9.1f\n",
		    p->pid, p->ppid, text_escape(p->comm, comm, sizeof(comm)),
		    uffd_proc_end_names[p->end < UFFD_END_NR ? p->end : 0],
		    (unsigned long long)p->faults,
		    p->faults ? 100.0 * (double)p->huge / (double)p->faults : 0.0, p->p50_us,
		    p->p99_us, p->max_us, (unsigned long long)p->stalls, (double)p->stall_ns / 1e6);
	}
	for (unsigned i = n; i < l->n; i++)
		more_faults += top[i].faults;
	if (l->n - n + l->omitted)
		fprintf(f, "thpemu: ... %llu more process%s, %llu faults\n",
			(unsigned long long)(l->n - n + l->omitted),
			l->n - n + l->omitted == 1 ? "" : "es", (unsigned long long)more_faults);
	free(top);
}
