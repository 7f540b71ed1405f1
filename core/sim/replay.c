/* Trace replay in virtual time (`thpemu sim --replay FILE`): the faults and memory changes a
 * live run recorded (core/obs/trace.h), replayed against any policy on the same initial pool.
 *
 * The address space is core/addrspace's model, the one the live emulator keeps, with the same
 * rules, so that the same policy makes the same decisions: regions with a live span, per-page
 * states (empty, present, gone, migrating) and per-extent states (empty: a huge candidate; huge;
 * small: a page table), the program's MADV_(NO)HUGEPAGE per extent (split when it covers part of
 * one). This file keeps the region table (by address, and by id for the owner cookies) and applies
 * each record with core/addrspace's rule for it:
 *   MAP      a new region, or a hole of one mapped again (its whole extents empty again)
 *   ADOPT    a region whose RESIDENT pages are present outside the pool
 *   RELEASE  munmap (pages gone, span trimmed) or MADV_DONTNEED (pages empty); a huge extent
 *            released whole goes back as one block (and may take a THP again after DONTNEED),
 *            one released in part is split first
 *   ADVISE   the emulated VMA advice
 *   REMAP    a whole region moved or grown, keeping its pages and cookies
 *   FAULT    on an empty extent: mm_fault with huge_ok; on a small extent's empty page: a base
 *            fault; on a present page or a huge extent: absorbed (this replay populated it
 *            already); outside any region: an orphan. Zero pages (sim_config.zero_page: as the
 *            recording had them, a version 2 trace with zero_page=1): a read first touch may
 *            map one (MM_FAULT_ZERO, MM_FAULT_HUGE_ZERO: no frame); a read of a zero page is
 *            absorbed, a write to one is its first write (mm asked with wp_zero), whatever
 *            the recording decided there
 * A recorded huge decision stands for a touch of the whole extent: when this replay decides
 * base there, the extent's other empty pages are faulted too ("implied"). A recorded host
 * fallback (mm said huge, the host mapped 4 KiB pages) is mirrored when this replay decides
 * huge: split, keeping only the faulting page.
 *
 * Timing. One actor per recorded thread replays that thread's records in order, each no earlier
 * than its recorded time (a fault when mm began deciding it). A thread waits for every change
 * to managed memory recorded before its next record (the program could not have touched a
 * mapping before it existed), and a release for the faults recorded before it on the pages it
 * frees (obs_trace_deps); other faults of other threads never hold a thread up. Costs are the cost
 * table's: virtual latencies are the simulator's, not the live run's.
 *
 * Agreement: every recorded fault this replay served as a first touch is compared, huge versus
 * not, with the live decision. Same policy and no writeback pressure: the decisions depend only
 * on the sequence, which is the same (tests/integration/replay.sh expects >= 99 %).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/as.h"
#include "obs/trace.h"

#define RP_ID_BASE 0x10000000u /* cookie ids: (RP_ID_BASE + id) << 32 | page */

struct rp_region {
	struct as_region as; /* geometry, span, state arrays (one calloc at as.pstate) */
	uint32_t id;
	unsigned migrating;	     /* migrate_anon calls in flight on its pages */
	bool live;		     /* in the sorted table */
	bool dead;		     /* transferred to a successor by a remap */
	struct rp_region *next_dead; /* transferred while a migration held it: freed at the end */
};

struct rp_thread {
	struct sim_task task;
	struct sim_world *w;
	struct sim_replay *rp;
	uint32_t tid;
	const size_t *idx; /* indices of this thread's records, in replay order */
	size_t n;
};

struct sim_replay {
	struct obs_trace tr;
	char path[512];
	struct sim_replay_info info;
	struct obs_trace_plan plan; /* threads, change order, release dependencies */
	struct rp_thread *threads;  /* one actor per plan thread */
	unsigned nthreads;
	/* run state (one run per load) */
	struct rp_region **regions; /* by id */
	uint32_t nregions, regions_cap;
	struct rp_region **sorted; /* live spans, by lo */
	uint32_t nsorted, sorted_cap;
	struct rp_region *dead; /* transferred regions a migration still held */
	size_t changes_done;	/* memory changes applied, in record order: the next one's index */
	struct sim_waitq change_wq;
	struct sim_replay_stats st;
	bool used;
};

/* ---- loading ------------------------------------------------------------------------------------
 */

static void info_from_header(struct sim_replay *rp)
{
	struct sim_replay_info *in = &rp->info;
	char v[256];

	if (obs_trace_get(&rp->tr, "policy", v, sizeof(v)))
		snprintf(in->policy, sizeof(in->policy), "%s", v);
	if (obs_trace_get(&rp->tr, "pool_bytes", v, sizeof(v)))
		in->pool_bytes = strtoull(v, NULL, 10);
	if (obs_trace_get(&rp->tr, "fragment", v, sizeof(v)))
		snprintf(in->fragment, sizeof(in->fragment), "%s", v);
	if (obs_trace_get(&rp->tr, "seed", v, sizeof(v)))
		in->seed = strtoull(v, NULL, 10);
	if (obs_trace_get(&rp->tr, "exe", v, sizeof(v)))
		snprintf(in->exe, sizeof(in->exe), "%s", v);
	in->zero_page = obs_trace_zero_pages(&rp->tr);
	in->records = rp->tr.n;
	in->faults = rp->tr.counts[OBS_TR_FAULT];
	in->complete = rp->tr.complete;
	in->dropped = rp->tr.dropped;
	for (size_t i = 0; i < rp->tr.n; i++) {
		uint64_t end = obs_trace_effect_ns(&rp->tr.recs[i]);

		if (end > in->span_ns)
			in->span_ns = end;
		if (rp->tr.recs[i].type == OBS_TR_FAULT &&
		    obs_trace_decision(&rp->tr.recs[i]) == MM_FAULT_HUGE)
			in->faults_huge++;
	}
}

int sim_replay_load(const char *path, struct sim_replay **out, char *err, size_t errlen)
{
	struct sim_replay *rp = calloc(1, sizeof(*rp));
	int rc;

	if (!rp)
		return -ENOMEM;
	snprintf(rp->path, sizeof(rp->path), "%s", path);
	rc = obs_trace_load(path, &rp->tr, err, errlen);
	if (rc)
		goto fail;
	obs_trace_sort(&rp->tr);
	rc = obs_trace_plan(&rp->tr, &rp->plan);
	if (rc == -E2BIG) {
		snprintf(err, errlen,
			 "%s: the trace has more than %u threads (a replay runs at most %u)", path,
			 OBS_TRACE_THREADS_MAX, OBS_TRACE_THREADS_MAX);
		goto fail;
	}
	rp->nthreads = rp->plan.nthreads;
	rp->threads = rc ? NULL : calloc(rp->nthreads + 1, sizeof(*rp->threads));
	if (rc || !rp->threads) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < rp->nthreads; i++) {
		rp->threads[i].tid = rp->plan.threads[i].tid;
		rp->threads[i].idx = rp->plan.threads[i].idx;
		rp->threads[i].n = rp->plan.threads[i].n;
	}
	info_from_header(rp);
	rp->info.threads = rp->nthreads;
	*out = rp;
	return 0;

fail:
	sim_replay_free(rp);
	return rc;
}

uint64_t sim_replay_span_max(const struct sim_replay_info *in)
{
	return SIM_REPLAY_SPAN_BASE_NS + SIM_REPLAY_SPAN_PER_RECORD_NS * (uint64_t)in->records;
}

int sim_replay_configure(struct sim_config *c, unsigned keep, char *err, size_t errlen)
{
	const struct sim_replay_info *in = &c->replay->info;
	char kv[sizeof(in->fragment) + 8], why[512];

	if (!(keep & SIM_REPLAY_KEEP_DURATION) && in->span_ns > sim_replay_span_max(in)) {
		snprintf(
		    err, errlen,
		    "%s spans %.1f h with %zu records: more than a replay covers by default "
		    "(1 h + 1 min per record: %.1f h); give --duration to replay its first part",
		    c->replay->path, in->span_ns / 3600e9, in->records,
		    sim_replay_span_max(in) / 3600e9);
		return -EINVAL;
	}
	if (!(keep & SIM_REPLAY_KEEP_SEED))
		c->seed = in->seed;
	if (!(keep & SIM_REPLAY_KEEP_ZERO_PAGE))
		c->zero_page = in->zero_page;
	if (!(keep & SIM_REPLAY_KEEP_DURATION)) /* every record, and time for the last to end */
		c->duration_ns = in->span_ns + SIM_REPLAY_TAIL_NS;
	c->scenario = &sim_scen_replay;
	sim_params_defaults(c->scenario, &c->params);
	snprintf(kv, sizeof(kv), "init=%s", in->fragment);
	if (in->fragment[0] && sim_params_set(c->scenario, &c->params, kv, why, sizeof(why))) {
		snprintf(err, errlen, "the trace's recipe: %s", why);
		return -EINVAL;
	}
	return 0;
}

void sim_replay_info(const struct sim_replay *rp, struct sim_replay_info *out)
{
	*out = rp->info;
}

static void region_free(struct rp_region *r)
{
	free(r->as.pstate);
	free(r);
}

static void regions_free(struct sim_replay *rp)
{
	for (uint32_t i = 0; i < rp->nregions; i++)
		if (rp->regions[i])
			region_free(rp->regions[i]);
	while (rp->dead) {
		struct rp_region *r = rp->dead;

		rp->dead = r->next_dead;
		region_free(r);
	}
	free(rp->regions);
	free(rp->sorted);
	rp->regions = rp->sorted = NULL;
	rp->nregions = rp->nsorted = rp->regions_cap = rp->sorted_cap = 0;
}

void sim_replay_free(struct sim_replay *rp)
{
	if (!rp)
		return;
	regions_free(rp);
	free(rp->threads);
	obs_trace_plan_free(&rp->plan);
	obs_trace_free(&rp->tr);
	free(rp);
}

/* ---- regions
 * ------------------------------------------------------------------------------------- */

static uint64_t cookie(const struct rp_region *r, uint32_t page)
{
	return (uint64_t)(RP_ID_BASE + r->id) << 32 | page;
}

/* Index of the last live span starting at or below a, or -1. */
static int sorted_find(const struct sim_replay *rp, uintptr_t a)
{
	int lo = 0, hi = (int)rp->nsorted - 1, best = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (rp->sorted[mid]->as.lo <= a) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

static struct rp_region *region_at(const struct sim_replay *rp, uintptr_t a)
{
	int i = sorted_find(rp, a);

	return i >= 0 && a < rp->sorted[i]->as.hi ? rp->sorted[i] : NULL;
}

static bool overlaps(const struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	int i = sorted_find(rp, hi - 1);

	return i >= 0 && rp->sorted[i]->as.hi > lo;
}

static int sorted_insert(struct sim_replay *rp, struct rp_region *r)
{
	int i = sorted_find(rp, r->as.lo);

	if (rp->nsorted == rp->sorted_cap) {
		uint32_t cap = rp->sorted_cap ? rp->sorted_cap * 2 : 64;
		struct rp_region **p = realloc(rp->sorted, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		rp->sorted = p;
		rp->sorted_cap = cap;
	}
	memmove(&rp->sorted[i + 2], &rp->sorted[i + 1],
		(rp->nsorted - (uint32_t)(i + 1)) * sizeof(*rp->sorted));
	rp->sorted[i + 1] = r;
	rp->nsorted++;
	r->live = true;
	return 0;
}

static void sorted_remove(struct sim_replay *rp, struct rp_region *r)
{
	for (uint32_t i = 0; i < rp->nsorted; i++) {
		if (rp->sorted[i] == r) {
			memmove(&rp->sorted[i], &rp->sorted[i + 1],
				(rp->nsorted - i - 1) * sizeof(*rp->sorted));
			rp->nsorted--;
			break;
		}
	}
	r->live = false;
}

/* A region struct for [lo, hi) with a new id (or id_keep for a transfer); not in the table. */
static struct rp_region *region_new(struct sim_replay *rp, uintptr_t base, uintptr_t lo,
				    uintptr_t hi, int64_t id_keep)
{
	struct rp_region *r = calloc(1, sizeof(*r));
	void *mem = NULL;

	/* a large calloc's zero pages are only touched where the replay uses them */
	if (!r || as_region_geometry(&r->as, base, lo, hi) ||
	    !(mem = calloc(1, as_region_meta_size(&r->as)))) {
		free(r);
		return NULL; /* nothing, more pages than a region indexes, or no memory */
	}
	as_region_attach(&r->as, mem);
	r->as.single = true; /* the simulator's one thread */
	if (id_keep >= 0) {
		r->id = (uint32_t)id_keep;
		return r;
	}
	if (rp->nregions == rp->regions_cap) {
		uint32_t cap = rp->regions_cap ? rp->regions_cap * 2 : 64;
		struct rp_region **p = realloc(rp->regions, cap * sizeof(*p));

		if (!p) {
			region_free(r);
			return NULL;
		}
		rp->regions = p;
		rp->regions_cap = cap;
	}
	r->id = rp->nregions;
	rp->regions[rp->nregions++] = r;
	return r;
}

static void trim(struct sim_replay *rp, struct rp_region *r)
{
	uintptr_t lo, hi;

	if (!as_trim_span(&r->as, &lo, &hi)) {
		sorted_remove(rp, r);
		return;
	}
	r->as.lo = lo;
	r->as.hi = hi;
}

/* ---- memory changes -------------------------------------------------------------------------- */

/* core/addrspace's effects: the simulated pool, in the acting thread's time. */
#define RP_AS_ENV(name, w, t)                                                                      \
	struct as_mm_ctx name##_ctx = {(w)->mm, (t)};                                              \
	const struct as_env name = as_mm_env(&name##_ctx)

/* munmap / MADV_DONTNEED on every region [lo, hi) overlaps (uffd_unmap_managed, discard). */
static void op_release(struct sim_world *w, struct sim_task *t, struct sim_replay *rp, uintptr_t lo,
		       uintptr_t hi, bool unmap)
{
	RP_AS_ENV(env, w, t);
	struct rp_region *hit[64];
	unsigned n;

	do { /* in passes of 64 regions, as mapops.c does */
		int i = sorted_find(rp, lo);

		if (i < 0 || rp->sorted[i]->as.hi <= lo)
			i++;
		for (n = 0; i < (int)rp->nsorted && rp->sorted[i]->as.lo < hi && n < 64; i++)
			hit[n++] = rp->sorted[i];
		uintptr_t next = hi;

		for (unsigned k = 0; k < n; k++) {
			struct as_region *r = &hit[k]->as;
			uintptr_t a = lo > r->lo ? lo : r->lo, b = hi < r->hi ? hi : r->hi;
			struct as_counts c = {0};

			as_release(&env, r, as_page_of(r, a), as_page_of(r, b), unmap, &c);
			rp->st.huge_splits += c.huge_splits;
			if (unmap)
				trim(rp, hit[k]);
			next = b;
		}
		lo = next;
	} while (n == 64 && lo < hi);
}

static void op_map(struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	struct rp_region *r = region_at(rp, lo);

	if (r && hi <= r->as.hi) { /* a hole of r mapped again: revive() */
		uint32_t p0 = as_page_of(&r->as, lo), p1 = as_page_of(&r->as, hi);

		if (!as_range_gone(&r->as, p0, p1)) {
			rp->st.map_conflicts++;
			return;
		}
		as_revive(&r->as, p0, p1);
		return;
	}
	if (overlaps(rp, lo, hi)) {
		rp->st.map_conflicts++;
		return;
	}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
	/* false positive (gcc 12 -fanalyzer): rp->regions[] keeps r, regions_free frees it */
	r = region_new(rp, lo, lo, hi, -1);
	if (!r || sorted_insert(rp, r))
		rp->st.map_conflicts++;
	else
		rp->st.regions++;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

static void op_resident(struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	struct rp_region *r = region_at(rp, lo);

	if (!r || hi > r->as.hi)
		return;
	as_resident(&r->as, as_page_of(&r->as, lo), as_page_of(&r->as, hi));
}

static void op_advise(struct sim_replay *rp, uintptr_t lo, uintptr_t hi, uint8_t adv)
{
	int i = sorted_find(rp, lo);

	if (i < 0 || rp->sorted[i]->as.hi <= lo)
		i++;
	for (; i < (int)rp->nsorted && rp->sorted[i]->as.lo < hi; i++)
		as_advise(&rp->sorted[i]->as, lo, hi, adv);
}

/* transfer() of remap.c: the region at old_lo moves to [a, a + len) keeping page indices. */
static void op_remap(struct sim_world *w, struct sim_task *t, struct sim_replay *rp,
		     uintptr_t old_lo, uintptr_t a, uint64_t len)
{
	RP_AS_ENV(env, w, t);
	struct rp_region *r = region_at(rp, old_lo), *s;
	struct as_counts c = {0};
	uint32_t off;

	if (!r || r->as.lo != old_lo || len < MM_PAGE_SIZE ||
	    a < (uintptr_t)as_page_of(&r->as, r->as.lo) * MM_PAGE_SIZE) {
		rp->st.map_conflicts++;
		return;
	}
	off = as_page_of(&r->as, r->as.lo);
	s = region_new(rp, a - (uintptr_t)off * MM_PAGE_SIZE, a, a + len, r->id);
	if (!s) {
		rp->st.map_conflicts++;
		return;
	}
	as_transfer(&env, &r->as, &s->as, &c);
	rp->st.huge_splits += c.huge_splits;
	sorted_remove(rp, r);
	rp->regions[r->id] = s;
	if (r->migrating) { /* its migrator still looks at it (replay_migrate) */
		r->dead = true;
		r->next_dead = rp->dead;
		rp->dead = r;
	} else {
		region_free(r);
	}
	if (overlaps(rp, s->as.lo, s->as.hi) || sorted_insert(rp, s))
		rp->st.map_conflicts++;
}

static void apply_change(struct sim_world *w, struct rp_thread *th, const struct obs_trace_rec *r)
{
	struct sim_replay *rp = th->rp;
	uintptr_t lo = r->addr, hi = r->addr + r->val;

	if (r->type != OBS_TR_REMAP && hi <= lo)
		return; /* an empty range (or one that wraps: obs_trace_load refuses those) */
	switch (r->type) {
	case OBS_TR_MAP:
	case OBS_TR_ADOPT:
		/* pages unmapped while a migration held them become a hole only when the migrator
		 * lets go; a recorded map revived such a hole live (mapops.c: manage_new traces
		 * only a map it managed), so the migrator had let go by then */
		for (struct rp_region *m; (m = region_at(rp, lo)) && m->migrating;)
			sim_sleep(th->task.a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		op_map(rp, lo, hi);
		break;
	case OBS_TR_RESIDENT:
		op_resident(rp, lo, hi);
		break;
	case OBS_TR_RELEASE:
		op_release(w, &th->task, rp, lo, hi, r->flags & OBS_TRF_UNMAP);
		break;
	case OBS_TR_ADVISE:
		op_advise(rp, lo, hi, r->advice & AS_ADV_MASK);
		break;
	case OBS_TR_REMAP:
		op_remap(w, &th->task, rp, r->addr, r->val2, r->val);
		break;
	default:
		break;
	}
}

/* ---- faults ---------------------------------------------------------------------------------- */

/* The first write to a zero page, decided (res): as proc.c's proc_wp_zero, with the replay's
 * rule for a fault served outside the pool (present without a frame, as the live host keeps it:
 * handler.c materialise_wp). */
static void wp_zero_commit(struct sim_world *w, struct sim_task *t, struct as_region *r, uint32_t e,
			   uint32_t p, enum mm_wp_zero wp, const struct mm_fault_res *res)
{
	if (res->zero_split || wp == MM_WP_HUGE_ZERO)
		as_zero_split(r,
			      e); /* 6.12 __split_huge_zero_page_pmd: the rest map the zero page */
	if (res->outcome == MM_FAULT_BASE)
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]); /* wp_page_copy: zeroed */
	as_fault_base(r, p, res->outcome == MM_FAULT_BASE ? res->pfn : MM_NO_PFN, false);
	w->zero.wp_faults++;
}

/* One first touch of page p, or (wp) the first write to the zero page it maps. Returns the
 * outcome, or -1 if mm refused the request. */
static int do_fault(struct sim_world *w, struct rp_thread *th, struct rp_region *rr, uint32_t p,
		    bool huge_ok, bool write, enum mm_wp_zero wp, uintptr_t addr)
{
	struct as_region *r = &rr->as;
	struct sim_task *t = &th->task;
	uint32_t e = as_ext_of(r, as_page_addr(r, p));
	uint32_t first = as_page_of(r, as_ext_addr(r, e));
	/* mTHP candidates of a write (6.12 alloc_anon_folio); they need extent_owner as page 0 */
	uint16_t orders_ok = write && wp == MM_WP_NONE ? as_mthp_orders(r, p) : 0;
	struct mm_fault_req req = {
	    .owner = cookie(rr, p),
	    /* page 0 of the 2 MiB extent by address (the region may start inside it: the
	     * cookie arithmetic is what mm needs, page 0 itself need not be in the region) */
	    .extent_owner = huge_ok	? cookie(rr, first)
			    : orders_ok ? cookie(rr, p) - ((as_page_addr(r, p) / MM_PAGE_SIZE) &
							   (MM_HPAGE_NR - 1))
					: cookie(rr, p),
	    .advice = (enum mm_vma_advice)(as_xadv(r, e) & AS_ADV_MASK),
	    .huge_ok = huge_ok,
	    .write = write,
	    /* zero pages as the recording had them (sim_config.zero_page) */
	    .zero_ok = !write && w->cfg->zero_page,
	    .wp_zero = wp,
	    .orders_ok = orders_ok,
	};
	struct mm_fault_res res;
	uint64_t t0 = task_now(t);

	t->fault_t0 = t0 ? t0 : 1;
	t->fault_wb[0] = t->fault_wb[1] = (struct sim_wait_stat){0};
	if (mm_fault(w->mm, &req, &res, t) != 0) {
		t->fault_t0 = 0;
		return -1;
	}
	t->fault_t0 = 0;
	if (huge_ok) {
		w->extents++;
		w->extents_huge += res.outcome == MM_FAULT_HUGE;
	}
	if (wp != MM_WP_NONE) {
		wp_zero_commit(w, t, r, e, p, wp, &res);
	} else if (res.outcome == MM_FAULT_HUGE) {
		as_fault_huge(r, e, res.pfn);
	} else if (res.outcome == MM_FAULT_ZERO) { /* do_anonymous_page's read: no frame */
		as_fault_zero(r, p, true);
		w->zero.faults++;
	} else if (res.outcome == MM_FAULT_HUGE_ZERO) { /* the huge zero PMD over the extent */
		as_fault_huge_zero(r, e, p);
		w->zero.huge_faults++;
	} else if (res.outcome == MM_FAULT_MTHP) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K] << res.order);
		as_fault_mthp(r, p, res.order, res.pfn, true);
	} else {
		if (res.outcome == MM_FAULT_BASE)
			sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		as_fault_base(r, p, res.outcome == MM_FAULT_BASE ? res.pfn : MM_NO_PFN, true);
	}
	world_record_fault(w, t, &res, task_now(t) - t0, th->tid, addr);
	return (int)res.outcome;
}

/* The live host refused the huge mapping: the move mapped nothing, so only the faulting page is
 * kept (core/addrspace's fallback rule, as huge_fallback_locked applies it live). */
static void mirror_host_fallback(struct sim_world *w, struct rp_thread *th, struct as_region *r,
				 uint32_t e, uint32_t p)
{
	RP_AS_ENV(env, w, &th->task);
	uint32_t first = as_page_of(r, as_ext_addr(r, e));
	bool mapped[MM_HPAGE_NR] = {false};

	mapped[p - first] = true;
	as_fault_huge_fallback(&env, r, e, as_pfn(r, first), mapped);
	th->rp->st.host_fallbacks++;
}

/* A recorded huge touch that this replay served with 4 KiB pages: the rest of the extent. */
static void implied_touches(struct sim_world *w, struct rp_thread *th, struct rp_region *rr,
			    uint32_t e, bool write)
{
	struct as_region *r = &rr->as;
	uintptr_t ea = as_ext_addr(r, e);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t a = ea + (uintptr_t)i * MM_PAGE_SIZE;
		uint32_t p;

		if (a < r->lo || a >= r->hi || !rr->live)
			continue;
		p = as_page_of(r, a);
		if (as_pstate(r, p) != AS_P_EMPTY || AS_X_STATE(as_xstate(r, e)) == AS_X_ZERO)
			continue; /* mapped, or a read of the huge zero PMD: no fault */
		if (do_fault(w, th, rr, p, false, write, MM_WP_NONE, a) >= 0)
			th->rp->st.implied++;
		sim_charge(th->task.a, w->cfg->costs.ns[SIM_COST_TOUCH_4K]);
	}
}

static void agree(struct sim_replay_stats *st, unsigned recorded, int got)
{
	bool rh = recorded == MM_FAULT_HUGE, gh = got == MM_FAULT_HUGE;

	st->compared++;
	if (rh && gh)
		st->huge_huge++;
	else if (rh)
		st->huge_base++;
	else if (gh)
		st->base_huge++;
	else
		st->base_base++;
}

static void replay_fault(struct sim_world *w, struct rp_thread *th, const struct obs_trace_rec *rec)
{
	struct sim_replay *rp = th->rp;
	struct sim_replay_stats *st = &rp->st;
	uintptr_t addr = rec->addr & ~(MM_PAGE_SIZE - 1);
	struct rp_region *rr = region_at(rp, addr);
	unsigned recorded = obs_trace_decision(rec);
	bool write = rec->flags & OBS_TRF_WRITE;
	struct as_region *r;
	uint32_t p, e;
	uint8_t xs;
	int got;

	st->recorded++;
	/* a page being migrated: the fault waits for the migrator, as a live fault waits for the
	 * migrator's wake (handler.c: dispatch_page), and then meets what it left: the page, or a
	 * hole if the program freed the page meanwhile (then this is a first touch) */
	while (rr && AS_P_STATE(as_pstate(&rr->as, as_page_of(&rr->as, addr))) == AS_P_MIGRATING) {
		sim_sleep(th->task.a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		rr = region_at(rp, addr);
	}
	if (!rr) {
		st->orphans++;
		return;
	}
	r = &rr->as;
	p = as_page_of(r, addr);
	e = as_ext_of(r, addr);
	xs = AS_X_STATE(as_xstate(r, e));
	if (xs == AS_X_ZERO || AS_P_STATE(as_pstate(r, p)) == AS_P_ZERO) {
		/* a zero page this replay mapped: a read takes no fault (absorbed), the first
		 * write is a fault of its own (6.12 do_huge_pmd_wp_page / do_wp_page) */
		if (!write) {
			st->absorbed++;
			return;
		}
		do_fault(w, th, rr, p, false, true, xs == AS_X_ZERO ? MM_WP_HUGE_ZERO : MM_WP_ZERO,
			 addr);
		return;
	}
	if (xs == AS_X_HUGE || AS_P_STATE(as_pstate(r, p)) != AS_P_EMPTY) {
		st->absorbed++;
		return;
	}
	if (xs == AS_X_EMPTY) {
		bool cand = !(as_xadv(r, e) & AS_ADV_SPLIT);

		st->cand_mismatch += cand != !!(rec->flags & OBS_TRF_CAND);
		got = do_fault(w, th, rr, p, cand, write, MM_WP_NONE, addr);
		if (got < 0)
			return;
		agree(st, recorded, got);
		if (got == MM_FAULT_HUGE && (rec->flags & OBS_TRF_HOST_SMALL))
			mirror_host_fallback(w, th, r, e, p);
		else if (got != MM_FAULT_HUGE && recorded == MM_FAULT_HUGE)
			implied_touches(w, th, rr, e, write);
		return;
	}
	st->cand_mismatch += !!(rec->flags & OBS_TRF_CAND);
	got = do_fault(w, th, rr, p, false, write, MM_WP_NONE, addr);
	if (got >= 0)
		agree(st, recorded, got);
}

/* The owner's side of migrate_anon for replayed regions: core/addrspace's rules, as migrate.c
 * applies them live. The copy takes migrate-page of virtual time, during which the program may
 * release the page (then mm frees both frames) or move its region (then the successor keeps the
 * page and its frame, and the migration fails). */
int replay_migrate(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t from,
		   uint32_t to)
{
	struct sim_replay *rp = w->replay_state;
	uint32_t id = (uint32_t)(owner >> 32) - RP_ID_BASE, page = (uint32_t)owner;
	struct rp_region *r;
	int rc;

	if (!rp || id >= rp->nregions || !(r = rp->regions[id]))
		return -ENOENT;
	rc = as_migrate_claim(&r->as, page, from);
	if (rc)
		return rc;
	r->migrating++;
	if (t && t->a) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		sim_settle(t->a); /* the program may release or move the page meanwhile */
	}
	r->migrating--;
	rc = as_migrate_freed(&r->as, page);
	if (rc < 0) {
		if (r->live) /* an unmapped page may end the span */
			trim(rp, r);
	} else if (r->dead) {
		as_migrate_cancel(&r->as, page, false);
		rc = -EAGAIN;
	} else {
		as_migrate_commit(&r->as, page, to);
	}
	return rc;
}

/* ---- the actors --------------------------------------------------------------------------------
 */

static void wait_until(struct sim_task *t, uint64_t when)
{
	uint64_t now = task_now(t);

	if (when > now)
		sim_sleep(t->a, when - now);
}

static void thread_fn(struct sim_actor *a, void *arg)
{
	struct rp_thread *th = arg;
	struct sim_replay *rp = th->rp;
	struct sim_world *w = th->w;

	for (size_t k = 0; k < th->n; k++) {
		size_t i = th->idx[k];
		const struct obs_trace_rec *rec = &rp->tr.recs[i];

		wait_until(&th->task, obs_trace_effect_ns(rec));
		/* every change recorded before this record has happened; a release waits for the
		 * faults recorded before it on the pages it frees */
		while (rp->changes_done < rp->plan.next_change[i] || rp->plan.release_pending[i])
			sim_wait(a, &rp->change_wq, SIM_NO_TIMEOUT);
		if (rec->type == OBS_TR_FAULT) {
			replay_fault(w, th, rec);
			if (rp->plan.fault_before[i] != UINT32_MAX) {
				rp->plan.release_pending[rp->plan.fault_before[i]]--;
				sim_wake_all(w->e, &rp->change_wq);
			}
		} else {
			apply_change(w, th, rec);
			rp->changes_done++;
			sim_wake_all(w->e, &rp->change_wq);
		}
		sim_charge(a, w->cfg->costs.ns[SIM_COST_TOUCH_4K]);
		sim_settle(a);
	}
	if (++rp->st.threads_done == rp->nthreads) {
		w->finished = true;
		sim_stop(w->e);
	}
}

static void stop_now(struct sim_engine *e, void *arg)
{
	sim_stop(e);
}

static int replay_start(struct sim_world *w, char *err, size_t errlen)
{
	struct sim_replay *rp = (struct sim_replay *)w->cfg->replay;
	int rc;

	if (!rp) {
		snprintf(err, errlen,
			 "the replay scenario needs a trace (thpemu sim --replay FILE)");
		return -EINVAL;
	}
	if (rp->used) {
		snprintf(err, errlen, "a loaded trace replays once (load it again)");
		return -EINVAL;
	}
	rp->used = true;
	w->replay_state = rp;
	sim_waitq_init(&rp->change_wq);
	rc = world_apply_recipe(w, sim_param_s(w, "init"), err, errlen);
	if (rc)
		return rc;
	if (rp->nthreads == 0) { /* nothing to replay: end now, not at the run's guard */
		w->finished = true;
		return sim_at(w->e, sim_now(w->e), stop_now, NULL);
	}
	for (unsigned i = 0; i < rp->nthreads && rc == 0; i++) {
		struct rp_thread *th = &rp->threads[i];
		char comm[16];

		snprintf(comm, sizeof(comm), "replay-%u", th->tid);
		th->w = w;
		th->rp = rp;
		rc = world_spawn(w, &th->task, comm, 0, thread_fn, th);
	}
	return rc;
}

void replay_collect(struct sim_world *w, struct sim_result *r)
{
	struct sim_replay *rp = w->replay_state;

	if (!rp)
		return;
	r->has_replay = true;
	r->replay = rp->st;
	r->replay_info = rp->info;
	snprintf(r->replay_path, sizeof(r->replay_path), "%s", rp->path);
	regions_free(rp);
	w->replay_state = NULL;
}

static const struct sim_param_def params[] = {
    {"init", SIM_P_STRING, "", "initial pool state (default: the trace's --fragment recipe)"},
};

const struct sim_scenario sim_scen_replay = {
    .name = "replay",
    .summary = "a recorded fault trace (thpemu run --trace), replayed: thpemu sim --replay FILE",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 3600ULL * 1000000000ULL,
    .params = params,
    .nparams = sizeof(params) / sizeof(params[0]),
    .start = replay_start,
    .runs_to_completion = true,
};
