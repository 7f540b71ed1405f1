/* Stall reports (see stall.h): symbolise, group by unique stack pair, print as in 2011.
 *
 * Mirrors mmtests' subreport/stap-dstate-frequency, which read watch-dstate.pl's log, grouped
 * events by unique stack and printed "Time stalled in this event" / "Event count" / one
 * "comm function ms" line per event / the stack. Runs at report time only: it allocates, opens
 * ELF files through the symboliser and sorts.
 */
#include "obs/stall.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "obs/stall_internal.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* ---- Symbol cache: each (ip, exact) is symbolised once per report ------------------------ */

struct sym_ent {
	uintptr_t key; /* ip << 1 | exact; 0 = empty */
	char *text;    /* "function+0xOFF (object+0xADDR) file:line", obs_symbolise */
	char *func;    /* "function" */
};

struct sym_cache {
	size_t cap; /* power of two */
	size_t n;
	struct sym_ent *tab;
};

static int cache_grow(struct sym_cache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256;
	struct sym_ent *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		size_t h;

		if (!c->tab[i].key)
			continue;
		h = (c->tab[i].key * 0x9e3779b97f4a7c15ULL) & (ncap - 1);
		while (nt[h].key)
			h = (h + 1) & (ncap - 1);
		nt[h] = c->tab[i];
	}
	free(c->tab);
	c->tab = nt;
	c->cap = ncap;
	return 0;
}

static const struct sym_ent *cache_get(struct sym_cache *c, uintptr_t ip, bool exact)
{
	uintptr_t key = ((ip << 1) | exact) + 1; /* never 0, the empty marker */
	char buf[512], *text, *func;
	size_t h;

	if ((c->n + 1) * 2 > c->cap && cache_grow(c) < 0)
		return NULL;
	h = (key * 0x9e3779b97f4a7c15ULL) & (c->cap - 1);
	while (c->tab[h].key && c->tab[h].key != key)
		h = (h + 1) & (c->cap - 1);
	if (c->tab[h].key)
		return &c->tab[h];
	/* both or neither: an entry left empty holds nothing cache_free would free again */
	text = strdup(obs_symbolise(ip, exact, buf, sizeof(buf)));
	func = strdup(obs_symbolise_function(ip, exact, buf, sizeof(buf)));
	if (!text || !func) {
		free(text);
		free(func);
		return NULL;
	}
	c->tab[h].key = key;
	c->tab[h].text = text;
	c->tab[h].func = func;
	c->n++;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
	/* false positive (gcc 12 -fanalyzer): the entry keeps both, cache_free frees them */
	return &c->tab[h];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

static void cache_free(struct sym_cache *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		free(c->tab[i].text);
		free(c->tab[i].func);
	}
	free(c->tab);
}

/* The modelled chain of an event: its wait kind's (per-wait events) or its cause's. */
static const char *const *modelled(const struct obs_stall_event *ev)
{
	if (ev->wait != OBS_NO_WAIT)
		return obs_stall_wait_stack((enum mm_wait_kind)ev->wait, ev->background);
	return obs_stall_modelled_stack(ev->cause);
}

static bool is_wait(const struct obs_stall_event *ev)
{
	return ev->wait != OBS_NO_WAIT;
}

/* ---- Per-event view and grouping ------------------------------------------------------ */

struct ev_view {
	const struct obs_stall_event *ev;
	char *key;	      /* everything the grouping compares, as text */
	const char *function; /* the per-event column: app function, syscall, or handler frame */
};

struct group {
	size_t first, n; /* range in the sorted view array */
	uint64_t total_ns;
};

struct report {
	struct sym_cache syms;
	struct ev_view *views;
	size_t nviews;
	struct group *groups;
	size_t ngroups;
	char sysname[32]; /* scratch for syscall names without a table entry */
};

static const char *syscall_label(struct report *r, long nr)
{
	const char *name = obs_syscall_name(nr);

	if (name)
		return name;
	snprintf(r->sysname, sizeof(r->sysname), "syscall_%ld", nr);
	return r->sysname;
}

/* Frame i of a stack as text (NULL on allocation failure). */
static const char *frame_text(struct report *r, const struct obs_stack *st, unsigned i)
{
	const struct sym_ent *e = cache_get(&r->syms, st->ips[i], i == 0 && st->exact_first);

	return e ? e->text : NULL;
}

static const char *frame_func(struct report *r, const struct obs_stack *st, unsigned i)
{
	const struct sym_ent *e = cache_get(&r->syms, st->ips[i], i == 0 && st->exact_first);

	return e ? e->func : NULL;
}

/* "name+0xOFF (libc.so.6+0xADDR) file:line": the object follows the first " (" */
static bool in_libc(const char *text)
{
	const char *p = strstr(text, " (");

	return p && strncmp(p, " (libc.so", 9) == 0;
}

/* The application-side function that faulted: the innermost frame outside libc (a fault in
 * memset is the caller's touch), or the syscall, or failing both the handler's own frame. */
static const char *event_function(struct report *r, const struct obs_stall_event *ev)
{
	const struct obs_stack *app = &ev->app_stack, *h = &ev->handler;

	if (is_wait(ev)) /* Mel's lines name the function that slept (sleep_on_page, ...) */
		return mm_wait_function((enum mm_wait_kind)ev->wait);
	if (ev->own_exit) /* thpemu's exit hook on the program's thread, not the program */
		return "(thpemu exit)";
	if (ev->app == OBS_APP_SYSCALL)
		return obs_syscall_name(ev->syscall_nr) ? obs_syscall_name(ev->syscall_nr)
							: "syscall";
	if (ev->app == OBS_APP_USER && app->nr) {
		for (unsigned i = 0; i < app->nr; i++) {
			const char *t = frame_text(r, app, i);

			if (t && !in_libc(t))
				return frame_func(r, app, i);
		}
		return frame_func(r, app, 0);
	}
	if (h->method == OBS_UNWIND_MODELLED)
		return modelled(ev)[0];
	if (h->nr)
		return frame_func(r, h, 0);
	return "?";
}

static int put_stack(struct report *r, FILE *m, const struct obs_stack *st,
		     const struct obs_stall_event *ev)
{
	if (st->method == OBS_UNWIND_MODELLED) {
		for (const char *const *f = modelled(ev); *f; f++)
			fprintf(m, "%s\n", *f);
		return 0;
	}
	for (unsigned i = 0; i < st->nr; i++) {
		const char *t = frame_text(r, st, i);

		if (!t)
			return -ENOMEM;
		fprintf(m, "%s\n", t);
	}
	return 0;
}

/* How the application stack was obtained ("none" unless the fault was taken in user mode). */
static enum obs_unwind_method app_method(const struct obs_stall_event *ev)
{
	return ev->app == OBS_APP_USER ? (enum obs_unwind_method)ev->app_stack.method
				       : OBS_UNWIND_NONE;
}

/* Key: cause, handler method, app result and method, syscall, then both stacks' frames. */
static char *event_key(struct report *r, const struct obs_stall_event *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return NULL;
	if (is_wait(ev))
		fprintf(m, "%s%s\n", mm_wait_name((enum mm_wait_kind)ev->wait),
			ev->background ? " (kswapd)" : "");
	if (ev->own_exit)
		fputs("thpemu exit\n", m);
	fprintf(m, "%s\n%s\n%s\n%s\n%d\n", mm_cause_chain(ev->cause),
		obs_unwind_method_name(ev->handler.method), obs_app_result_name(ev->app),
		obs_unwind_method_name(app_method(ev)),
		ev->app == OBS_APP_SYSCALL ? ev->syscall_nr : -1);
	err = put_stack(r, m, &ev->handler, ev);
	fputs("--\n", m);
	if (!err && ev->app == OBS_APP_USER)
		err = put_stack(r, m, &ev->app_stack, ev);
	if (fclose(m) != 0 || err) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_view(const void *a, const void *b)
{
	const struct ev_view *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	if (x->ev->t_start_ns != y->ev->t_start_ns)
		return x->ev->t_start_ns < y->ev->t_start_ns ? -1 : 1;
	if (x->ev->tid != y->ev->tid)
		return x->ev->tid < y->ev->tid ? -1 : 1;
	return x->ev->duration_ns < y->ev->duration_ns ? -1
						       : x->ev->duration_ns > y->ev->duration_ns;
}

static int cmp_group(const void *a, const void *b, void *views)
{
	const struct group *x = a, *y = b;
	const struct ev_view *cmp_base = views;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(cmp_base[x->first].key, cmp_base[y->first].key);
}

static int build_views(struct report *r, struct obs_stalls *s)
{
	uint64_t n = LOAD(&s->next);

	if (n > s->capacity)
		n = s->capacity;
	r->views = calloc(n ? n : 1, sizeof(*r->views));
	if (!r->views)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct ev_view *v;

		if (!__atomic_load_n(&s->slots[i].ready, __ATOMIC_ACQUIRE))
			continue; /* reserved but still being written */
		v = &r->views[r->nviews++];
		v->ev = &s->slots[i].ev;
		v->key = event_key(r, v->ev);
		v->function = event_function(r, v->ev);
		if (!v->key || !v->function)
			return -ENOMEM;
	}
	return 0;
}

static int build_groups(struct report *r)
{
	qsort(r->views, r->nviews, sizeof(*r->views), cmp_view);
	r->groups = calloc(r->nviews ? r->nviews : 1, sizeof(*r->groups));
	if (!r->groups)
		return -ENOMEM;
	for (size_t i = 0; i < r->nviews; i++) {
		struct group *g = r->ngroups ? &r->groups[r->ngroups - 1] : NULL;

		if (!g || strcmp(r->views[g->first].key, r->views[i].key) != 0) {
			g = &r->groups[r->ngroups++];
			g->first = i;
		}
		g->n++;
		g->total_ns += r->views[i].ev->duration_ns;
	}
	qsort_r(r->groups, r->ngroups, sizeof(*r->groups), cmp_group, r->views);
	return 0;
}

static void report_free(struct report *r)
{
	for (size_t i = 0; i < r->nviews; i++)
		free(r->views[i].key);
	free(r->views);
	free(r->groups);
	cache_free(&r->syms);
}

static int report_build(struct report *r, struct obs_stalls *s)
{
	int err;

	memset(r, 0, sizeof(*r));
	err = build_views(r, s);
	if (!err)
		err = build_groups(r);
	return err;
}

/* ---- JSON ----------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void json_stack(struct json_w *w, struct report *r, const char *key,
		       const struct obs_stack *st, const struct obs_stall_event *ev, bool include)
{
	jw_arr_begin(w, key);
	if (include && st->method == OBS_UNWIND_MODELLED) {
		for (const char *const *f = modelled(ev); *f; f++)
			jw_str(w, NULL, *f);
	} else if (include) {
		for (unsigned i = 0; i < st->nr; i++)
			jw_str(w, NULL, frame_text(r, st, i));
	}
	jw_arr_end(w);
}

static void json_comms(struct json_w *w, const struct report *r, const struct group *g)
{
	jw_arr_begin(w, "comms");
	for (size_t i = g->first; i < g->first + g->n; i++) {
		bool seen = false;

		for (size_t j = g->first; j < i && !seen; j++)
			seen = strcmp(r->views[j].ev->comm, r->views[i].ev->comm) == 0;
		if (!seen)
			jw_str(w, NULL, r->views[i].ev->comm);
	}
	jw_arr_end(w);
}

static void json_group(struct json_w *w, struct report *r, const struct group *g)
{
	const struct obs_stall_event *ev = r->views[g->first].ev;

	jw_obj_begin(w, NULL);
	jw_dbl(w, "total_ms", ms(g->total_ns), 3);
	jw_u64(w, "count", g->n);
	jw_arr_begin(w, "events_ms");
	for (size_t i = g->first; i < g->first + g->n; i++)
		jw_dbl(w, NULL, ms(r->views[i].ev->duration_ns), 3);
	jw_arr_end(w);
	/* when each began: CLOCK_MONOTONIC seconds live (program.start_mono_s is the run's
	 * start), virtual seconds in the simulator */
	jw_arr_begin(w, "events_t_s");
	for (size_t i = g->first; i < g->first + g->n; i++)
		jw_dbl(w, NULL, (double)r->views[i].ev->t_start_ns / 1e9, 6);
	jw_arr_end(w);
	if (is_wait(ev)) {
		jw_str(w, "kind", mm_wait_name((enum mm_wait_kind)ev->wait));
		jw_bool(w, "background", ev->background);
	}
	jw_str(w, "cause", mm_cause_chain(ev->cause));
	jw_str(w, "function", r->views[g->first].function);
	json_comms(w, r, g);
	jw_str(w, "unwind", obs_unwind_method_name(ev->handler.method));
	jw_str(w, "app", obs_app_result_name(ev->app));
	jw_str(w, "app_unwind", obs_unwind_method_name(app_method(ev)));
	if (ev->app == OBS_APP_SYSCALL)
		jw_str(w, "syscall", syscall_label(r, ev->syscall_nr));
	else
		jw_null(w, "syscall");
	json_stack(w, r, "handler_stack", &ev->handler, ev, true);
	json_stack(w, r, "app_stack", &ev->app_stack, ev, ev->app == OBS_APP_USER);
	if (ev->own_exit) /* the program's thread, in thpemu's exit hook: not the program's code */
		jw_bool(w, "thpemu_exit", true);
	if (ev->waited_on[0]) /* live, on a shared machine: whose page the longest wait was on */
		jw_str(w, "waited_on", ev->waited_on);
	jw_obj_end(w);
}

static void json_counts(struct json_w *w, struct obs_stalls *s, size_t stored)
{
	jw_dbl(w, "threshold_ms", ms(s->threshold_ns), 3);
	jw_u64(w, "count", LOAD(&s->count));
	jw_dbl(w, "total_ms", ms(LOAD(&s->total_ns)), 3);
	jw_u64(w, "stored", stored);
	jw_u64(w, "dropped", LOAD(&s->dropped));
	jw_str(w, "stacks", s->kind == OBS_STACKS_MODELLED ? "modelled" : "captured");
}

int obs_report_stalls(struct json_w *w, struct obs_stalls *s)
{
	struct report r;
	int err = report_build(&r, s);

	jw_obj_begin(w, "stalls");
	json_counts(w, s, err ? 0 : r.nviews);
	jw_arr_begin(w, "groups");
	for (size_t i = 0; !err && i < r.ngroups; i++)
		json_group(w, &r, &r.groups[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	report_free(&r);
	return err;
}

/* ---- Text (the 2011 format) ------------------------------------------------------------- */

static int ms_int(uint64_t ns)
{
	uint64_t v = ns / 1000000ULL;

	return v > INT32_MAX ? INT32_MAX : (int)v;
}

static void text_stack(FILE *f, struct report *r, const struct obs_stack *st,
		       const struct obs_stall_event *ev)
{
	if (st->method == OBS_UNWIND_MODELLED) {
		for (const char *const *fn = modelled(ev); *fn; fn++)
			fprintf(f, "  %s\n", *fn);
		return;
	}
	for (unsigned i = 0; i < st->nr; i++) {
		const char *t = frame_text(r, st, i); /* NULL when out of memory */

		fprintf(f, "  %s\n", t ? t : "??");
	}
}

static void text_app(FILE *f, struct report *r, const struct obs_stall_event *ev)
{
	switch (ev->app) {
	case OBS_APP_USER:
		fprintf(f, "app stack (user-mode fault, %s):\n",
			obs_unwind_method_name(ev->app_stack.method));
		text_stack(f, r, &ev->app_stack, ev);
		break;
	case OBS_APP_SYSCALL:
		fprintf(f, "app: kernel-mode fault inside %s(2)\n",
			syscall_label(r, ev->syscall_nr));
		break;
	case OBS_APP_NONE:
		/* live, a fault of a program thread: say that it has none, and why */
		if (ev->handler.method != OBS_UNWIND_MODELLED && !ev->background)
			fprintf(f,
				"app stack: none (the thread was not asked while the fault was in "
				"service)\n");
		break;
	default:
		fprintf(f, "app stack: %s\n", obs_app_result_name(ev->app));
	}
	if (ev->own_exit)
		fprintf(f, "note: taken on the program's thread by thpemu's exit hook (writing its "
			   "reports), not by the program's code\n");
}

static void text_group(FILE *f, struct report *r, const struct group *g)
{
	const struct obs_stall_event *ev = r->views[g->first].ev;

	fprintf(f, "Time stalled in this event: %8d ms\n", ms_int(g->total_ns));
	fprintf(f, "Event count: %8d\n", (int)g->n);
	for (size_t i = g->first; i < g->first + g->n; i++)
		fprintf(f, "%-20s %-20s %6d ms\n",
			r->views[i].ev->comm[0] ? r->views[i].ev->comm : "?", r->views[i].function,
			ms_int(r->views[i].ev->duration_ns));
	if (is_wait(ev))
		fprintf(f, "wait: %s%s\n", mm_wait_name((enum mm_wait_kind)ev->wait),
			ev->background ? " (kswapd: background, no fault behind it)" : "");
	fprintf(f, "cause: %s\n", mm_cause_chain(ev->cause));
	if (ev->waited_on[0])
		fprintf(f, "waited on: %s\n", ev->waited_on);
	fprintf(f, "handler stack (%s):\n", obs_unwind_method_name(ev->handler.method));
	text_stack(f, r, &ev->handler, ev);
	text_app(f, r, ev);
	fputc('\n', f);
}

int obs_report_stalls_text(FILE *f, struct obs_stalls *s)
{
	struct report r;
	int err = report_build(&r, s);

	fprintf(f, "Stalls of at least %d ms: %" PRIu64 " events, %d ms in total",
		ms_int(s->threshold_ns), LOAD(&s->count), ms_int(LOAD(&s->total_ns)));
	if (LOAD(&s->dropped))
		fprintf(f, " (%" PRIu64 " not stored: store full)", LOAD(&s->dropped));
	fprintf(f, "; stacks %s\n\n", s->kind == OBS_STACKS_MODELLED ? "modelled" : "captured");
	for (size_t i = 0; !err && i < r.ngroups; i++)
		text_group(f, &r, &r.groups[i]);
	report_free(&r);
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

/* ---- Both metrics: per-wait events and per-fault stalls ------------------------------------ */

/* "faults" / "waits" summary counts; s may be NULL (nothing recorded). */
static void json_summary(struct json_w *w, struct obs_stalls *s, uint64_t threshold_ns,
			 size_t stored)
{
	jw_dbl(w, "threshold_ms", ms(s ? s->threshold_ns : threshold_ns), 3);
	jw_u64(w, "count", s ? LOAD(&s->count) : 0);
	jw_dbl(w, "total_ms", ms(s ? LOAD(&s->total_ns) : 0), 3);
	jw_dbl(w, "max_ms", ms(s ? LOAD(&s->max_ns) : 0), 3);
	jw_u64(w, "stored", stored);
	jw_u64(w, "dropped", s ? LOAD(&s->dropped) : 0);
}

int obs_report_stalls_pair(struct json_w *w, struct obs_stalls *faults, struct obs_stalls *waits)
{
	struct report rf, rw;
	int errf = report_build(&rf, faults), errw = 0;

	memset(&rw, 0, sizeof(rw));
	if (waits)
		errw = report_build(&rw, waits);
	jw_obj_begin(w, "stalls");
	json_counts(w, faults, errf ? 0 : rf.nviews); /* the per-fault keys, as before */
	jw_arr_begin(w, "groups");
	for (size_t i = 0; !errf && i < rf.ngroups; i++)
		json_group(w, &rf, &rf.groups[i]);
	jw_arr_end(w);
	jw_obj_begin(w, "faults");
	json_summary(w, faults, 0, errf ? 0 : rf.nviews);
	jw_obj_end(w);
	jw_obj_begin(w, "waits");
	json_summary(w, waits, faults->threshold_ns, errw ? 0 : rw.nviews);
	jw_u64(w, "background", waits ? LOAD(&waits->background) : 0);
	jw_str(w, "stacks",
	       (waits ? waits->kind : faults->kind) == OBS_STACKS_MODELLED ? "modelled"
									   : "captured");
	jw_arr_begin(w, "groups");
	for (size_t i = 0; !errw && i < rw.ngroups; i++)
		json_group(w, &rw, &rw.groups[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
	report_free(&rf);
	report_free(&rw);
	return errf ? errf : errw;
}

int obs_report_stalls_text_pair(FILE *f, struct obs_stalls *faults, struct obs_stalls *waits)
{
	struct report r;
	int err = 0;

	memset(&r, 0, sizeof(r));
	if (waits) {
		err = report_build(&r, waits);
		fprintf(f,
			"Per-wait stall events (each single blocking wait of at least %d ms: "
			"writeback wait, writeout, congestion nap; as Mel Gorman's 2011 monitor "
			"counted them): %" PRIu64 " events, %d ms in total, longest %d ms",
			ms_int(waits->threshold_ns), LOAD(&waits->count),
			ms_int(LOAD(&waits->total_ns)), ms_int(LOAD(&waits->max_ns)));
		if (LOAD(&waits->background))
			fprintf(f, ", %" PRIu64 " of them kswapd's", LOAD(&waits->background));
		if (LOAD(&waits->dropped))
			fprintf(f, " (%" PRIu64 " not stored: store full)", LOAD(&waits->dropped));
		fprintf(f, "; stacks %s\n\n",
			waits->kind == OBS_STACKS_MODELLED ? "modelled" : "captured");
		for (size_t i = 0; !err && i < r.ngroups; i++)
			text_group(f, &r, &r.groups[i]);
		report_free(&r);
	} else {
		fprintf(f, "Per-wait stall events: none recorded (no per-wait store)\n\n");
	}
	fprintf(f,
		"Per-fault view (a fault whose whole service took at least %d ms is one stall, "
		"however many waits it held):\n",
		ms_int(faults->threshold_ns));
	if (!err)
		err = obs_report_stalls_text(f, faults);
	if (!err && ferror(f))
		err = -EIO;
	return err;
}
