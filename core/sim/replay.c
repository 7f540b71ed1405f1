/* Trace replay in virtual time (`thpemu sim --replay FILE`): the faults and memory changes a
 * live run recorded (core/obs/trace.h), replayed against any policy on the same initial pool.
 *
 * The address space is modelled as the live emulator keeps it (core/uffd/region.c, mapops.c,
 * remap.c), so that the same policy makes the same decisions: regions with a live span, per-page
 * states (empty, present, gone) and per-extent states (empty: a huge candidate; huge; small: a
 * page table), the program's MADV_(NO)HUGEPAGE per extent (split when it covers part of one).
 *   MAP      a new region, or a hole of one mapped again (its whole extents empty again)
 *   ADOPT    a region whose RESIDENT pages are present outside the pool
 *   RELEASE  munmap (pages gone, span trimmed) or MADV_DONTNEED (pages empty); a huge extent
 *            released whole goes back as one block (and may take a THP again after DONTNEED),
 *            one released in part is split first
 *   ADVISE   the emulated VMA advice
 *   REMAP    a whole region moved or grown, keeping its pages and cookies
 *   FAULT    on an empty extent: mm_fault with huge_ok; on a small extent's empty page: a base
 *            fault; on a present page or a huge extent: absorbed (this replay populated it
 *            already); outside any region: an orphan
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

#include "obs/trace.h"

#define RP_EMPTY     0
#define RP_PRESENT   1
#define RP_GONE	     2
#define RP_MIGRATING 0x10 /* a migrate_anon call on the page is in flight */
#define RP_FREED     0x20 /* ... and the program released it meanwhile */
#define RX_EMPTY     0
#define RX_HUGE	     1
#define RX_SMALL     2
#define RX_ADV_MASK  0x03
#define RX_ADV_SPLIT 0x80

#define RP_ID_BASE 0x10000000u /* cookie ids: (RP_ID_BASE + id) << 32 | page */

struct rp_region {
	uint32_t id;
	uintptr_t base, ext_base, lo, hi;
	uint32_t npages, nexts;
	uint32_t *pfn1; /* frame + 1 per page (0: none), so that zeroed memory means "none" */
	uint8_t *ps, *xs, *xadv;
	bool live;
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
	size_t changes_done; /* memory changes applied, in record order: the next one's index */
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
		snprintf(err, errlen, "%s: the trace has more than %u threads (a replay runs at most %u)",
			 path, OBS_TRACE_THREADS_MAX, OBS_TRACE_THREADS_MAX);
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
		snprintf(err, errlen,
			 "%s spans %.1f h with %zu records: more than a replay covers by default "
			 "(1 h + 1 min per record: %.1f h); give --duration to replay its first part",
			 c->replay->path, in->span_ns / 3600e9, in->records,
			 sim_replay_span_max(in) / 3600e9);
		return -EINVAL;
	}
	if (!(keep & SIM_REPLAY_KEEP_SEED))
		c->seed = in->seed;
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

static void regions_free(struct sim_replay *rp)
{
	for (uint32_t i = 0; i < rp->nregions; i++) {
		if (!rp->regions[i])
			continue;
		free(rp->regions[i]->pfn1);
		free(rp->regions[i]);
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

static uint32_t page_of(const struct rp_region *r, uintptr_t a)
{
	return (uint32_t)((a - r->base) / MM_PAGE_SIZE);
}

static uint32_t ext_of(const struct rp_region *r, uintptr_t a)
{
	return (uint32_t)((a - r->ext_base) / MM_HPAGE_SIZE);
}

static uintptr_t ext_addr(const struct rp_region *r, uint32_t e)
{
	return r->ext_base + (uintptr_t)e * MM_HPAGE_SIZE;
}

static bool ext_inside(const struct rp_region *r, uint32_t e)
{
	uintptr_t a = ext_addr(r, e);

	return a >= r->lo && a + MM_HPAGE_SIZE <= r->hi;
}

static uint64_t cookie(const struct rp_region *r, uint32_t page)
{
	return (uint64_t)(RP_ID_BASE + r->id) << 32 | page;
}

static uint32_t pfn_at(const struct rp_region *r, uint32_t p)
{
	return r->pfn1[p] - 1; /* 0 - 1 = MM_NO_PFN */
}

static void pfn_set(struct rp_region *r, uint32_t p, uint32_t pfn)
{
	r->pfn1[p] = pfn + 1;
}

/* The per-page and per-extent arrays, zeroed (no frame, RP_EMPTY, default advice): a large
 * allocation's zero pages are only touched where the replay uses them. */
static int region_arrays(struct rp_region *r)
{
	size_t np = r->npages, nx = r->nexts;
	uint8_t *mem = calloc(1, np * sizeof(uint32_t) + np + 2 * nx);

	_Static_assert(RP_EMPTY == 0 && MM_NO_PFN + 1 == 0, "zeroed arrays are empty pages");
	if (!mem)
		return -ENOMEM;
	r->pfn1 = (uint32_t *)(void *)mem;
	r->ps = mem + np * sizeof(uint32_t);
	r->xs = r->ps + np;
	r->xadv = r->xs + nx;
	return 0;
}

/* Index of the last live span starting at or below a, or -1. */
static int sorted_find(const struct sim_replay *rp, uintptr_t a)
{
	int lo = 0, hi = (int)rp->nsorted - 1, best = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (rp->sorted[mid]->lo <= a) {
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

	return i >= 0 && a < rp->sorted[i]->hi ? rp->sorted[i] : NULL;
}

static bool overlaps(const struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	int i = sorted_find(rp, hi - 1);

	return i >= 0 && rp->sorted[i]->hi > lo;
}

static int sorted_insert(struct sim_replay *rp, struct rp_region *r)
{
	int i = sorted_find(rp, r->lo);

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
	struct rp_region *r;

	if (hi <= lo || lo < base || (hi - base) / MM_PAGE_SIZE > UINT32_MAX)
		return NULL; /* nothing, or more pages than a region indexes */
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->base = base;
	r->ext_base = base & ~(MM_HPAGE_SIZE - 1);
	r->lo = lo;
	r->hi = hi;
	r->npages = (uint32_t)((hi - base) / MM_PAGE_SIZE);
	r->nexts = (uint32_t)((hi - r->ext_base + MM_HPAGE_SIZE - 1) / MM_HPAGE_SIZE);
	if (region_arrays(r)) {
		free(r);
		return NULL;
	}
	for (uint32_t e = 0; e < r->nexts; e++)
		r->xs[e] = ext_inside(r, e) ? RX_EMPTY : RX_SMALL;
	if (id_keep >= 0) {
		r->id = (uint32_t)id_keep;
		return r;
	}
	if (rp->nregions == rp->regions_cap) {
		uint32_t cap = rp->regions_cap ? rp->regions_cap * 2 : 64;
		struct rp_region **p = realloc(rp->regions, cap * sizeof(*p));

		if (!p) {
			free(r->pfn1);
			free(r);
			return NULL;
		}
		rp->regions = p;
		rp->regions_cap = cap;
	}
	r->id = rp->nregions;
	rp->regions[rp->nregions++] = r;
	return r;
}

static void recompute_extents(struct rp_region *r, uint32_t e0, uint32_t e1)
{
	for (uint32_t e = e0; e <= e1 && e < r->nexts; e++) {
		uint8_t want = RX_SMALL;

		if (r->xs[e] == RX_HUGE)
			continue;
		if (ext_inside(r, e)) {
			uint32_t p = page_of(r, ext_addr(r, e));

			want = RX_EMPTY;
			for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
				if (r->ps[p + i] != RP_EMPTY) {
					want = RX_SMALL;
					break;
				}
			}
		}
		r->xs[e] = want;
	}
}

static void trim(struct sim_replay *rp, struct rp_region *r)
{
	uint32_t p0 = page_of(r, r->lo), p1 = page_of(r, r->hi);

	while (p0 < p1 && (r->ps[p0] & 0x0f) == RP_GONE)
		p0++;
	while (p1 > p0 && (r->ps[p1 - 1] & 0x0f) == RP_GONE)
		p1--;
	if (p0 == p1) {
		sorted_remove(rp, r);
		return;
	}
	r->lo = r->base + (uintptr_t)p0 * MM_PAGE_SIZE;
	r->hi = r->base + (uintptr_t)p1 * MM_PAGE_SIZE;
}

/* ---- memory changes -------------------------------------------------------------------------- */

static void free_frame(struct sim_world *w, struct sim_task *t, struct rp_region *r, uint32_t p)
{
	if (r->ps[p] & RP_MIGRATING) {
		r->ps[p] |= RP_FREED; /* the migrator sees it and mm frees both frames */
	} else if (pfn_at(r, p) != MM_NO_PFN) {
		mm_anon_free(w->mm, pfn_at(r, p), 0, t);
	}
	pfn_set(r, p, MM_NO_PFN);
}

/* release_extent() of mapops.c. */
static void release_extent(struct sim_world *w, struct sim_task *t, struct sim_replay *rp,
			   struct rp_region *r, uint32_t e, uint32_t p0, uint32_t p1, bool unmap)
{
	uintptr_t ea = ext_addr(r, e);
	bool whole = ext_inside(r, e) && ea >= r->base && page_of(r, ea) >= p0 &&
		     page_of(r, ea) + MM_HPAGE_NR <= p1;
	uint32_t ep;

	switch (r->xs[e]) {
	case RX_HUGE:
		ep = page_of(r, ea);
		if (!whole) {
			mm_anon_split(w->mm, pfn_at(r, ep));
			r->xs[e] = RX_SMALL;
			rp->st.huge_splits++;
			return;
		}
		mm_anon_free(w->mm, pfn_at(r, ep), MM_HPAGE_ORDER, t);
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
			pfn_set(r, ep + i, MM_NO_PFN);
			r->ps[ep + i] = unmap ? RP_GONE : RP_EMPTY;
		}
		r->xs[e] = unmap ? RX_SMALL : RX_EMPTY;
		return;
	case RX_EMPTY:
		if (unmap)
			r->xs[e] = RX_SMALL;
		return;
	default:
		return;
	}
}

static void release_range(struct sim_world *w, struct sim_task *t, struct sim_replay *rp,
			  struct rp_region *r, uintptr_t a0, uintptr_t a1, bool unmap)
{
	uint32_t p0 = page_of(r, a0), p1 = page_of(r, a1);

	if (p0 >= p1)
		return;
	for (uint32_t e = ext_of(r, a0); e <= ext_of(r, a1 - 1); e++)
		release_extent(w, t, rp, r, e, p0, p1, unmap);
	for (uint32_t p = p0; p < p1; p++) {
		uint8_t s = r->ps[p] & 0x0f;

		if (s == RP_GONE)
			continue;
		if (s == RP_PRESENT)
			free_frame(w, t, r, p);
		r->ps[p] = (uint8_t)((unmap ? RP_GONE : RP_EMPTY) |
				     (r->ps[p] & (RP_MIGRATING | RP_FREED)));
	}
	if (unmap)
		trim(rp, r);
}

static void op_release(struct sim_world *w, struct sim_task *t, struct sim_replay *rp, uintptr_t lo,
		       uintptr_t hi, bool unmap)
{
	struct rp_region *hit[64];
	unsigned n;

	do { /* in passes of 64 regions, as mapops.c does */
		int i = sorted_find(rp, lo);

		if (i < 0 || rp->sorted[i]->hi <= lo)
			i++;
		for (n = 0; i < (int)rp->nsorted && rp->sorted[i]->lo < hi && n < 64; i++)
			hit[n++] = rp->sorted[i];
		uintptr_t next = hi;

		for (unsigned k = 0; k < n; k++) {
			struct rp_region *r = hit[k];
			uintptr_t a = lo > r->lo ? lo : r->lo, b = hi < r->hi ? hi : r->hi;

			release_range(w, t, rp, r, a, b, unmap);
			next = b;
		}
		lo = next;
	} while (n == 64 && lo < hi);
}

static void op_map(struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	struct rp_region *r = region_at(rp, lo);

	if (r && hi <= r->hi) { /* a hole of r mapped again: revive() */
		uint32_t p0 = page_of(r, lo), p1 = page_of(r, hi);

		for (uint32_t p = p0; p < p1; p++) {
			if ((r->ps[p] & 0x0f) != RP_GONE) {
				rp->st.map_conflicts++;
				return;
			}
		}
		for (uint32_t p = p0; p < p1; p++)
			r->ps[p] = RP_EMPTY;
		for (uint32_t e = ext_of(r, lo); e <= ext_of(r, hi - 1); e++) {
			uintptr_t ea = ext_addr(r, e);

			if (ea >= lo && ea + MM_HPAGE_SIZE <= hi && ext_inside(r, e)) {
				r->xs[e] = RX_EMPTY;
				r->xadv[e] = MM_VMA_DEFAULT;
			}
		}
		return;
	}
	if (overlaps(rp, lo, hi)) {
		rp->st.map_conflicts++;
		return;
	}
	r = region_new(rp, lo, lo, hi, -1);
	if (!r || sorted_insert(rp, r))
		rp->st.map_conflicts++;
	else
		rp->st.regions++;
}

static void op_resident(struct sim_replay *rp, uintptr_t lo, uintptr_t hi)
{
	struct rp_region *r = region_at(rp, lo);

	if (!r || hi > r->hi)
		return;
	for (uint32_t p = page_of(r, lo); p < page_of(r, hi); p++)
		r->ps[p] = RP_PRESENT; /* outside the pool: no frame */
	recompute_extents(r, ext_of(r, lo), ext_of(r, hi - 1));
}

static void op_advise(struct sim_replay *rp, uintptr_t lo, uintptr_t hi, uint8_t adv)
{
	int i = sorted_find(rp, lo);

	if (i < 0 || rp->sorted[i]->hi <= lo)
		i++;
	for (; i < (int)rp->nsorted && rp->sorted[i]->lo < hi; i++) {
		struct rp_region *r = rp->sorted[i];
		uintptr_t x = lo > r->lo ? lo : r->lo, y = hi < r->hi ? hi : r->hi;

		if (x >= y)
			continue;
		for (uint32_t e = ext_of(r, x); e <= ext_of(r, y - 1); e++) {
			uintptr_t ea = ext_addr(r, e);
			bool whole = ea >= lo && ea + MM_HPAGE_SIZE <= hi;
			uint8_t old = r->xadv[e];

			r->xadv[e] = (uint8_t)(adv | (whole ? (old & RX_ADV_SPLIT) : RX_ADV_SPLIT));
		}
	}
}

/* transfer() of remap.c: the region at old_lo moves to [a, a + len) keeping page indices. */
static void op_remap(struct sim_world *w, struct sim_replay *rp, uintptr_t old_lo, uintptr_t a,
		     uint64_t len)
{
	struct rp_region *r = region_at(rp, old_lo), *s;
	uint32_t off, n_old, n_new;
	intptr_t delta;
	bool same_phase;

	if (!r || r->lo != old_lo || len < MM_PAGE_SIZE ||
	    a < (uintptr_t)page_of(r, r->lo) * MM_PAGE_SIZE) {
		rp->st.map_conflicts++;
		return;
	}
	off = page_of(r, r->lo);
	n_old = (uint32_t)((r->hi - r->lo) / MM_PAGE_SIZE);
	n_new = (uint32_t)(len / MM_PAGE_SIZE);
	delta = (intptr_t)(a - r->lo);
	same_phase = (delta & (intptr_t)(MM_HPAGE_SIZE - 1)) == 0;
	s = region_new(rp, a - (uintptr_t)off * MM_PAGE_SIZE, a, a + len, r->id);
	if (!s) {
		rp->st.map_conflicts++;
		return;
	}
	for (uint32_t q = 0; q < off; q++)
		s->ps[q] = RP_GONE;
	for (uint32_t q = off; q < off + n_old && q < off + n_new; q++) {
		s->ps[q] = r->ps[q];
		pfn_set(s, q, pfn_at(r, q));
	}
	for (uint32_t e = 0; e < s->nexts; e++)
		s->xs[e] = RX_SMALL;
	for (uint32_t e = 0; e < r->nexts; e++) {
		uintptr_t ea = ext_addr(r, e);

		if (r->xs[e] != RX_HUGE)
			continue;
		if (same_phase && ext_inside(s, ext_of(s, ea + (uintptr_t)delta))) {
			s->xs[ext_of(s, ea + (uintptr_t)delta)] = RX_HUGE;
			s->xadv[ext_of(s, ea + (uintptr_t)delta)] = r->xadv[e];
		} else {
			mm_anon_split(w->mm, pfn_at(r, page_of(r, ea)));
			rp->st.huge_splits++;
		}
	}
	for (uint32_t e = 0; e < s->nexts; e++)
		if (s->xs[e] != RX_HUGE)
			recompute_extents(s, e, e);
	sorted_remove(rp, r);
	rp->regions[r->id] = s;
	free(r->pfn1);
	free(r);
	if (overlaps(rp, s->lo, s->hi) || sorted_insert(rp, s))
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
		op_map(rp, lo, hi);
		break;
	case OBS_TR_RESIDENT:
		op_resident(rp, lo, hi);
		break;
	case OBS_TR_RELEASE:
		op_release(w, &th->task, rp, lo, hi, r->flags & OBS_TRF_UNMAP);
		break;
	case OBS_TR_ADVISE:
		op_advise(rp, lo, hi, r->advice & RX_ADV_MASK);
		break;
	case OBS_TR_REMAP:
		op_remap(w, rp, r->addr, r->val2, r->val);
		break;
	default:
		break;
	}
}

/* ---- faults ---------------------------------------------------------------------------------- */

/* One first touch of page p. Returns the outcome, or -1 if mm refused the request. */
static int do_fault(struct sim_world *w, struct rp_thread *th, struct rp_region *r, uint32_t p,
		    bool huge_ok, bool write, uintptr_t addr)
{
	struct sim_task *t = &th->task;
	uint32_t e = ext_of(r, r->base + (uintptr_t)p * MM_PAGE_SIZE);
	uint32_t first = page_of(r, ext_addr(r, e));
	struct mm_fault_req req = {
	    .owner = cookie(r, p),
	    .extent_owner = cookie(r, huge_ok ? first : p),
	    .advice = (enum mm_vma_advice)(r->xadv[e] & RX_ADV_MASK),
	    .huge_ok = huge_ok,
	    .write = write,
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
	if (res.outcome == MM_FAULT_HUGE) {
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
			pfn_set(r, first + i, res.pfn + i);
			r->ps[first + i] = RP_PRESENT;
		}
		r->xs[e] = RX_HUGE;
	} else {
		if (res.outcome == MM_FAULT_BASE)
			sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		pfn_set(r, p, res.outcome == MM_FAULT_BASE ? res.pfn : MM_NO_PFN);
		r->ps[p] = RP_PRESENT;
		r->xs[e] = RX_SMALL;
	}
	world_record_fault(w, t, &res, task_now(t) - t0, th->tid, addr);
	return (int)res.outcome;
}

/* The live host refused the huge mapping: keep only the faulting page, as huge_fallback_locked
 * does (the move mapped nothing). */
static void mirror_host_fallback(struct sim_world *w, struct rp_thread *th, struct rp_region *r,
				 uint32_t e, uint32_t p)
{
	uint32_t first = page_of(r, ext_addr(r, e));
	uint32_t head = pfn_at(r, first);

	if (mm_anon_split(w->mm, head) != 0)
		return;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (first + i == p)
			continue;
		mm_anon_free(w->mm, head + i, 0, &th->task);
		pfn_set(r, first + i, MM_NO_PFN);
		r->ps[first + i] = RP_EMPTY;
	}
	r->xs[e] = RX_SMALL;
	th->rp->st.host_fallbacks++;
}

/* A recorded huge touch that this replay served with 4 KiB pages: the rest of the extent. */
static void implied_touches(struct sim_world *w, struct rp_thread *th, struct rp_region *r,
			    uint32_t e, bool write)
{
	uintptr_t ea = ext_addr(r, e);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uintptr_t a = ea + (uintptr_t)i * MM_PAGE_SIZE;
		uint32_t p;

		if (a < r->lo || a >= r->hi || !r->live)
			continue;
		p = page_of(r, a);
		if (r->ps[p] != RP_EMPTY)
			continue;
		if (do_fault(w, th, r, p, false, write, a) >= 0)
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
	struct rp_region *r = region_at(rp, addr);
	unsigned recorded = obs_trace_decision(rec);
	bool write = rec->flags & OBS_TRF_WRITE;
	uint32_t p, e;
	int got;

	st->recorded++;
	if (!r) {
		st->orphans++;
		return;
	}
	p = page_of(r, addr);
	e = ext_of(r, addr);
	if (r->xs[e] == RX_HUGE || (r->ps[p] & 0x0f) != RP_EMPTY) {
		st->absorbed++;
		return;
	}
	if (r->xs[e] == RX_EMPTY) {
		bool cand = !(r->xadv[e] & RX_ADV_SPLIT);

		st->cand_mismatch += cand != !!(rec->flags & OBS_TRF_CAND);
		got = do_fault(w, th, r, p, cand, write, addr);
		if (got < 0)
			return;
		agree(st, recorded, got);
		if (got == MM_FAULT_HUGE && (rec->flags & OBS_TRF_HOST_SMALL))
			mirror_host_fallback(w, th, r, e, p);
		else if (got != MM_FAULT_HUGE && recorded == MM_FAULT_HUGE)
			implied_touches(w, th, r, e, write);
		return;
	}
	st->cand_mismatch += !!(rec->flags & OBS_TRF_CAND);
	got = do_fault(w, th, r, p, false, write, addr);
	if (got >= 0)
		agree(st, recorded, got);
}

/* The owner's side of migrate_anon for replayed regions (proc_migrate's rules). */
int replay_migrate(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t from,
		   uint32_t to)
{
	struct sim_replay *rp = w->replay_state;
	uint32_t id = (uint32_t)(owner >> 32) - RP_ID_BASE, page = (uint32_t)owner;
	struct rp_region *r;

	if (!rp || id >= rp->nregions || !(r = rp->regions[id]) || page >= r->npages ||
	    pfn_at(r, page) != from || (r->ps[page] & 0x0f) != RP_PRESENT)
		return -ENOENT;
	if (r->xs[ext_of(r, r->base + (uintptr_t)page * MM_PAGE_SIZE)] == RX_HUGE ||
	    (r->ps[page] & RP_MIGRATING))
		return -EBUSY;
	r->ps[page] |= RP_MIGRATING;
	if (t && t->a) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		sim_settle(t->a); /* the program may release or move the page meanwhile */
	}
	r = id < rp->nregions ? rp->regions[id] : NULL; /* a remap replaces the struct */
	if (!r || page >= r->npages)
		return -ENOENT;
	if (r->ps[page] & RP_FREED) {
		r->ps[page] &= (uint8_t) ~(RP_MIGRATING | RP_FREED);
		return -ENOENT; /* mm frees both frames */
	}
	r->ps[page] &= (uint8_t)~RP_MIGRATING;
	if (pfn_at(r, page) != from)
		return -ENOENT;
	pfn_set(r, page, to);
	return 0;
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
