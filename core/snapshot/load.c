/* A pool that starts from a snapshot: the file streamed into core/mm's mm_snapshot_* calls.
 *
 * Frame f of the pool is pfn base_pfn + f of the snapshot when the pool is the snapshot's size.
 * A smaller pool (--pool) samples it: pool unit i (4 MiB, two pageblocks, the largest buddy
 * block) is snapshot unit floor(i * U_snapshot / U_pool), so every part of the zone is
 * represented in proportion and every free block keeps its order; a larger pool is refused (no
 * memory is invented). Runs are cut at pageblock boundaries (an order-10 free block into two
 * order-9 halves, which mm merges back when both land side by side) and classes become mm's
 * kinds: free; anon -> phantom anon; unevictable -> phantom anon marked unevictable; clean file;
 * dirty or writeback file -> dirty (the pool has nobody to end a writeback it did not start:
 * writeback starts again); slab, kernel, huge, reserved -> unmovable; flagless -> free, one page
 * at a time, merged with its buddies (mm_snapshot_runs merges as __free_one_page does): the
 * per-cpu free pages among them are free to the kernel and go to the buddy allocator at its
 * first drain (drain_all_pages, drain_local_pages -> free_pcppages_bulk -> __free_one_page,
 * 6.1 and 6.12 mm/page_alloc.c; compaction drains at its first check_drain); the pool has no
 * per-cpu lists, so they are free from the start. The kernel allocations among them, which
 * kpageflags and kpagecount cannot tell apart, are freed with them: at most flagless - pcp
 * pages (the header's counts). Watermarks are the zone's (scaled with a sample).
 *
 * System calls only and no allocation: the preload library loads a snapshot in its
 * constructor.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mm/mm.h"
#include "snapshot/snapshot.h"

#define RUNS_BATCH 64

_Static_assert(SNAP_MAX_FILE_ZONES == MM_MAX_LOWER_ZONES + 1, "a file's zones fit a pool");

struct loader {
	struct mm_snapshot ms;
	const struct snap_header *h;
	uint64_t sb, pb; /* pageblocks of the snapshot and of the pool */
	uint64_t su, pu; /* their 2-block units, when sampling */
	bool sample;
	uint64_t j;  /* the pool block the next kept snapshot block fills */
	uint64_t sp; /* the snapshot pfn (from base_pfn) the next run starts at */
	struct mm_snapshot_run buf[RUNS_BATCH];
	unsigned nbuf;
};

static const uint8_t kind_of[SNAP_NR_CLASSES] = {
    [SNAP_FREE] = MM_SNAP_FREE,
    [SNAP_ANON] = MM_SNAP_ANON,
    [SNAP_UNEVICTABLE] = MM_SNAP_UNEVICTABLE,
    [SNAP_FILE] = MM_SNAP_FILE,
    [SNAP_FILE_DIRTY] = MM_SNAP_FILE_DIRTY,
    [SNAP_FILE_WB] = MM_SNAP_FILE_DIRTY,
    [SNAP_SLAB] = MM_SNAP_UNMOVABLE,
    [SNAP_KERNEL] = MM_SNAP_UNMOVABLE,
    [SNAP_HUGE] = MM_SNAP_UNMOVABLE,
    [SNAP_RESERVED] = MM_SNAP_UNMOVABLE,
    [SNAP_FLAGLESS] = MM_SNAP_FREE,
};

/* The snapshot pageblock that pool block j is. */
static uint64_t src_block(const struct loader *l, uint64_t j)
{
	if (!l->sample)
		return j;
	return 2 * ((j / 2) * l->su / l->pu) + (j % 2);
}

static int flush(struct loader *l, char *err, size_t errlen)
{
	int rc = mm_snapshot_runs(&l->ms, l->buf, l->nbuf, err, errlen);

	l->nbuf = 0;
	return rc;
}

static int emit(struct loader *l, const struct snap_run *r, uint64_t pages, char *err,
		size_t errlen)
{
	struct mm_snapshot_run m = {.len = (uint32_t)pages,
				    .kind = kind_of[r->cls],
				    .order = r->order > SNAP_PAGEBLOCK_ORDER ? SNAP_PAGEBLOCK_ORDER
									     : r->order,
				    .active = r->active};
	struct mm_snapshot_run *last = l->nbuf ? &l->buf[l->nbuf - 1] : NULL;

	if (last && last->kind == m.kind && last->order == m.order && last->active == m.active) {
		last->len += m.len;
		return 0;
	}
	if (l->nbuf == RUNS_BATCH) {
		int rc = flush(l, err, errlen);

		if (rc)
			return rc;
	}
	l->buf[l->nbuf++] = m;
	return 0;
}

/* One run of the file, cut at pageblocks; the kept blocks' parts go to the pool. */
static int take_run(struct loader *l, const struct snap_run *r, char *err, size_t errlen)
{
	uint64_t end = l->sp + (r->cls == SNAP_FREE ? r->pages << r->order : r->pages);

	while (l->sp < end) {
		uint64_t k = l->sp / SNAP_PAGEBLOCK_NR, bend = (k + 1) * SNAP_PAGEBLOCK_NR;
		uint64_t seg = (end < bend ? end : bend) - l->sp;
		bool kept = l->j < l->pb && src_block(l, l->j) == k;
		int rc = kept ? emit(l, r, seg, err, errlen) : 0;

		if (rc)
			return rc;
		l->sp += seg;
		if (kept && l->sp == bend)
			l->j++;
	}
	return 0;
}

static int take_blocks(struct loader *l, struct snap_reader *rd, char *err, size_t errlen)
{
	uint64_t k = 0, j = 0, count;
	uint8_t mt;
	int rc;

	while ((rc = snap_read_blocks(rd, &mt, &count, err, errlen)) > 0) {
		for (; j < l->pb && src_block(l, j) < k + count; j++)
			mm_snapshot_pageblock(&l->ms, (uint32_t)j, (enum mm_migratetype)mt);
		k += count;
	}
	return rc;
}

static int take_runs(struct loader *l, struct snap_reader *rd, char *err, size_t errlen)
{
	struct snap_run r;
	int rc;

	while ((rc = snap_read_run(rd, l->h, &r, err, errlen)) > 0)
		if ((rc = take_run(l, &r, err, errlen)))
			return rc;
	return rc ? rc : flush(l, err, errlen);
}

static int plan(struct loader *l, struct mm *mm, const struct snap_header *h, char *err,
		size_t errlen)
{
	uint64_t frames = mm_nr_frames(mm);

	l->h = h;
	l->sb = h->nr_pfns / SNAP_PAGEBLOCK_NR;
	l->pb = frames / SNAP_PAGEBLOCK_NR;
	if (l->pb > l->sb) {
		snprintf(err, errlen,
			 "the pool (%llu MiB) is larger than the snapshot's zone (%llu MiB): give "
			 "--pool %lluM or less, or no --pool",
			 (unsigned long long)(frames >> 8), (unsigned long long)(h->nr_pfns >> 8),
			 (unsigned long long)(h->nr_pfns >> 8));
		return -EINVAL;
	}
	l->sample = l->pb < l->sb;
	if (l->sample && h->nzones > 1) {
		snprintf(err, errlen,
			 "a snapshot of %u zones loads whole (%llu MiB): give no --pool (a "
			 "snapshot of one zone, --zone, can be sampled)",
			 h->nzones, (unsigned long long)(h->nr_pfns >> 8));
		return -EINVAL;
	}
	l->su = l->sb / 2;
	l->pu = (l->pb + 1) / 2;
	return 0;
}

/* Several zones: each its frames (the first from frame 0, each up to the next one's start, the
 * last to the pool's end), watermarks and lowmem_reserve. */
static int zones(struct loader *l, char *err, size_t errlen)
{
	const struct snap_header *h = l->h;
	struct mm_snapshot_zone z[SNAP_MAX_FILE_ZONES];

	if (h->nzones < 2)
		return 0;
	for (unsigned i = 0; i < h->nzones; i++) {
		const struct snap_zone *s = &h->zones[i];

		z[i] = (struct mm_snapshot_zone){
		    .name = s->name,
		    .start = i ? (uint32_t)(s->start_pfn - h->base_pfn) : 0,
		    .end = i + 1 < h->nzones ? (uint32_t)(h->zones[i + 1].start_pfn - h->base_pfn)
					     : (uint32_t)h->nr_pfns,
		    .wmark = {(uint32_t)s->wmark[0], (uint32_t)s->wmark[1], (uint32_t)s->wmark[2]},
		    .lowmem_reserve = (uint32_t)s->lowmem_reserve};
	}
	return mm_snapshot_zones(&l->ms, z, h->nzones, err, errlen);
}

static void watermarks(const struct loader *l, uint32_t wm[3])
{
	for (unsigned w = 0; w < 3; w++)
		wm[w] = (uint32_t)(l->h->zone.wmark[w] * l->pb / l->sb);
}

static int load(struct mm *mm, struct snap_reader *rd, const struct snap_header *h, char *err,
		size_t errlen)
{
	struct loader l = {0};
	uint32_t wm[3];
	int rc = plan(&l, mm, h, err, errlen);

	if (rc)
		return rc;
	rc = mm_snapshot_begin(mm, &l.ms);
	if (rc) {
		snprintf(err, errlen, "the pool is in use already");
		return rc;
	}
	rc = zones(&l, err, errlen);
	if (!rc)
		rc = take_blocks(&l, rd, err, errlen);
	if (!rc)
		rc = take_runs(&l, rd, err, errlen);
	watermarks(&l, wm);
	if (rc) {
		char scratch[8];

		mm_snapshot_end(&l.ms, NULL, scratch,
				sizeof(scratch)); /* consistent, then destroyed */
		return rc;
	}
	return mm_snapshot_end(&l.ms, wm, err, errlen);
}

int snap_load(struct mm *mm, const char *path, char *err, size_t errlen)
{
	struct snap_reader rd;
	struct snap_header h;
	char why[256];
	int rc = snap_open(&rd, path, &h, err, errlen);

	if (rc)
		return rc;
	why[0] = '\0';
	rc = load(mm, &rd, &h, why, sizeof(why));
	snap_close(&rd);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, why);
	return rc;
}

int snap_recipe_pool(const char *recipe, uint64_t *bytes, char *err, size_t errlen)
{
	struct snap_reader rd;
	struct snap_header h;
	int rc;

	if (!recipe || strncmp(recipe, SNAP_PREFIX, strlen(SNAP_PREFIX)))
		return 0;
	rc = snap_open(&rd, recipe + strlen(SNAP_PREFIX), &h, err, errlen);
	if (rc)
		return rc;
	snap_close(&rd);
	*bytes = h.nr_pfns * SNAP_PAGE_SIZE;
	return 1;
}

int snap_fragment(struct mm *mm, const char *recipe, uint64_t seed, char *err, size_t errlen,
		  void *call)
{
	if (recipe && !strncmp(recipe, SNAP_PREFIX, strlen(SNAP_PREFIX)))
		return snap_load(mm, recipe + strlen(SNAP_PREFIX), err, errlen);
	return mm_fragment(mm, recipe, seed, err, errlen, call);
}
