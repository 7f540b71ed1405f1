/* The per-size multi-size THP report section (see mthp.h). The counters are 6.12's
 * transparent_hugepage/hugepages-<size>kB/stats/ (mm/huge_memory.c, mthp_stats); the settings
 * are hugepages-<size>kB/enabled. */
#include "obs/mthp.h"

#include <stdio.h>
#include <string.h>

const char *obs_mthp_setting_name(unsigned setting)
{
	static const char *const names[] = {
	    [MM_THP_SIZE_NEVER] = "never",
	    [MM_THP_SIZE_ALWAYS] = "always",
	    [MM_THP_SIZE_MADVISE] = "madvise",
	    [MM_THP_SIZE_INHERIT] = "inherit",
	};

	return setting < sizeof(names) / sizeof(names[0]) ? names[setting] : "?";
}

void obs_mthp_snapshot(struct obs_mthp *m, const struct mm_policy *p, struct mm *mm)
{
	memset(m, 0, sizeof(*m));
	m->era_has_mthp = p->era == MM_ERA_MODERN;
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_PMD_ORDER; k++) {
		m->setting[k] = (uint8_t)p->hugepages[k];
		if (mm)
			mm_get_mthp_stats(mm, k, &m->st[k]);
	}
}

/* The event counters of one size: summed, whether over snapshots or over processes. */
static void add_events(struct mm_mthp_stats *d, const struct mm_mthp_stats *s)
{
	d->anon_fault_alloc += s->anon_fault_alloc;
	d->anon_fault_fallback += s->anon_fault_fallback;
	d->anon_fault_fallback_charge += s->anon_fault_fallback_charge;
	d->split += s->split;
	d->split_failed += s->split_failed;
	d->split_deferred += s->split_deferred;
}

void obs_mthp_accumulate(struct obs_mthp *dst, const struct obs_mthp *src)
{
	dst->era_has_mthp = src->era_has_mthp;
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_PMD_ORDER; k++) {
		struct mm_mthp_stats *d = &dst->st[k];
		const struct mm_mthp_stats *s = &src->st[k];

		dst->setting[k] = src->setting[k];
		add_events(d, s);
		d->nr_anon = s->nr_anon;
		d->nr_anon_partially_mapped = s->nr_anon_partially_mapped;
	}
}

void obs_mthp_merge(struct obs_mthp *dst, const struct obs_mthp *src)
{
	if (!src->era_has_mthp && !dst->era_has_mthp) {
		bool any = false;

		for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_PMD_ORDER; k++)
			any = any || dst->setting[k];
		if (!any)
			memcpy(dst->setting, src->setting, sizeof(dst->setting));
	} else if (!dst->era_has_mthp) {
		dst->era_has_mthp = 1;
		memcpy(dst->setting, src->setting, sizeof(dst->setting));
	}
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_PMD_ORDER; k++) {
		struct mm_mthp_stats *d = &dst->st[k];
		const struct mm_mthp_stats *s = &src->st[k];

		add_events(d, s);
		d->nr_anon += s->nr_anon;
		d->nr_anon_partially_mapped += s->nr_anon_partially_mapped;
	}
}

static const struct obs_hist *order_hist(const struct obs_faults *f, unsigned k)
{
	return k == OBS_MTHP_PMD_ORDER ? &f->lat[OBS_HUGE] : &f->lat_order[k - OBS_MTHP_MIN_ORDER];
}

void obs_report_mthp(struct json_w *w, const struct obs_mthp *m, const struct obs_faults *f,
		     const char *delivery, double kernel_over_us)
{
	uint64_t pages_mthp = 0, pages = 0;

	if (!m->era_has_mthp)
		return;
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_MAX_ORDER; k++)
		pages_mthp += __atomic_load_n(&order_hist(f, k)->count, __ATOMIC_RELAXED) << k;
	pages = pages_mthp + __atomic_load_n(&f->lat[OBS_BASE].count, __ATOMIC_RELAXED) +
		(__atomic_load_n(&f->lat[OBS_HUGE].count, __ATOMIC_RELAXED) << OBS_MTHP_PMD_ORDER);
	jw_obj_begin(w, "mthp");
	jw_str(w, "delivery", delivery);
	jw_dbl(w, "coverage_pct", pages ? (double)pages_mthp * 100.0 / (double)pages : 0.0, 2);
	jw_obj_begin(w, "sizes");
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_PMD_ORDER; k++) {
		const struct mm_mthp_stats *s = &m->st[k];
		const struct obs_hist *h = order_hist(f, k);
		char key[16];

		snprintf(key, sizeof(key), "%ukB", 4U << k);
		jw_obj_begin(w, key);
		jw_u64(w, "order", k);
		jw_str(w, "setting", obs_mthp_setting_name(m->setting[k]));
		jw_u64(w, "faults", __atomic_load_n(&h->count, __ATOMIC_RELAXED));
		jw_u64(w, "anon_fault_alloc", s->anon_fault_alloc);
		jw_u64(w, "anon_fault_fallback", s->anon_fault_fallback);
		jw_u64(w, "anon_fault_fallback_charge", s->anon_fault_fallback_charge);
		jw_u64(w, "split", s->split);
		jw_u64(w, "split_deferred", s->split_deferred);
		jw_u64(w, "nr_anon", s->nr_anon);
		jw_u64(w, "nr_anon_partially_mapped", s->nr_anon_partially_mapped);
		obs_report_summary(w, "latency_us", h, 0.0);
		if (kernel_over_us >= 0)
			obs_report_summary(w, "kernel_latency_us", h, kernel_over_us);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	jw_obj_end(w);
}

void obs_mthp_text(FILE *out, const char *prefix, const struct obs_mthp *m,
		   const struct obs_faults *f, const char *note)
{
	if (!m->era_has_mthp)
		return;
	for (unsigned k = OBS_MTHP_MIN_ORDER; k <= OBS_MTHP_MAX_ORDER; k++) {
		const struct obs_hist *h = order_hist(f, k);
		struct obs_hist_summary s;

		if (!__atomic_load_n(&h->count, __ATOMIC_RELAXED))
			continue;
		obs_hist_summarise(h, 1000, &s);
		fprintf(out,
			"%smTHP %ukB: %llu faults (alloc %llu, fallback %llu), p50 %.1f us (per "
			"fault%s)\n",
			prefix, 4U << k, (unsigned long long)s.count,
			(unsigned long long)m->st[k].anon_fault_alloc,
			(unsigned long long)m->st[k].anon_fault_fallback, s.p50, note);
	}
}
