/* Fragmentation recipes: reproducible initial states of the pool, built with the same
 * allocator the workloads use (deterministic for a seed, via util/rng.h).
 *
 *   thpcompact    mmtests thpcompact's in-process fragmentation: fill memory with (foreign)
 *                 anonymous pages, free the first half of every 2 MiB, fill the holes with clean
 *                 page cache (down to the HIGH watermark); half-full pageblocks become migration
 *                 sources
 *   pagecache:F   clean page cache, fraction F of the pool
 *   dirty:F       dirty page cache (writeback has to clean it before reclaim or migration can)
 *   unmovable:F   scattered unmovable 4 KiB frames, one per randomly chosen pageblock (mixed
 *                 MOVABLE blocks: the fragmentation compaction cannot undo)
 *   anon:F        foreign anonymous 4 KiB frames at random places (migratable, metadata only)
 * Recipe page cache belongs to files with ids from RECIPE_FILE_ID down, so it never collides
 * with a driver's files (which should use small ids).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm/internal.h"
#include "util/rng.h"
#include "util/units.h"

#define RECIPE_FILE_ID ((1ULL << 26) - 1)

struct recipe {
	struct mm *mm;
	struct rng rng;
	void *call;
	uint64_t next_file_id;
	uint64_t foreign_seq;
};

static uint64_t foreign_owner(struct recipe *r)
{
	return MM_OWNER_FOREIGN | (r->foreign_seq++ << MM_HPAGE_ORDER);
}

/* take_page_off_buddy: carve the free frame pfn out of the free block holding it. Returns false
 * if pfn is not free. */
static bool take_frame_off_buddy(struct mm *mm, uint32_t pfn)
{
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) {
		uint32_t head = pfn & ~((1U << o) - 1);
		const struct mm_frame *f = pfn_frame(mm, head);
		unsigned order, mt;

		if (!frame_is_buddy(f) || frame_order(f) < o)
			continue;
		order = frame_order(f);
		mt = frame_list_mt(f);
		del_free_block(mm, head);
		while (order > 0) {
			uint32_t half = 1U << --order;

			if (pfn >= head + half) {
				add_free_block(mm, head, order, mt, false);
				head += half;
			} else {
				add_free_block(mm, head + half, order, mt, false);
			}
		}
		count_event(mm, MM_STAT_PGALLOC, 1);
		return true;
	}
	return false;
}

/* Place one frame of the given state at pfn, or at another free frame of its pageblock. */
static bool place_frame(struct recipe *r, uint32_t pfn, enum frame_state st)
{
	struct mm *mm = r->mm;
	uint32_t block = pageblock_start(pfn);

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		uint32_t p = block + (pfn - block + i) % MM_HPAGE_NR;

		if (mm->nr_free_pages <= wmark_pages(mm, WMARK_MIN) || !take_frame_off_buddy(mm, p))
			continue;
		mark_allocated(mm, p, 0, st, st == FS_ANON ? foreign_owner(r) : 0);
		if (st == FS_ANON)
			mm->nr_foreign++;
		else
			mm->nr_unmovable++;
		return true;
	}
	return false;
}

/* n frames of st at random places (unmovable: a random pageblock each, anywhere in it); a
 * full block is retried elsewhere, a pool at MIN stops the item. */
static int recipe_scatter(struct recipe *r, double frac, enum frame_state st)
{
	struct mm *mm = r->mm;
	uint32_t n = (uint32_t)(frac * mm->nr_frames + 0.5), placed = 0;

	for (uint64_t tries = 0; placed < n && tries < 8ULL * n + 64; tries++) {
		uint32_t pfn = (uint32_t)rng_below(&r->rng, mm->nr_frames);

		if (mm->nr_free_pages <= wmark_pages(mm, WMARK_MIN))
			break;
		placed += place_frame(r, pfn, st);
	}
	return 0;
}

/* Clean or dirty page cache of one recipe file: n pages through the ordinary allocation path
 * (which may reclaim older clean page cache). The lock is dropped around each page; the recipe
 * holds no frame across that (a repair meanwhile leaves it nothing to abandon). */
static int recipe_pagecache(struct recipe *r, uint32_t n, bool dirty)
{
	uint64_t file = r->next_file_id--;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t pfn;
		bool created;
		int ret;

		mm_unlock(r->mm);
		ret =
		    mm_pagecache_get(r->mm, MM_OWNER_FILE(file, i), true, &pfn, &created, r->call);
		if (!ret)
			mm_pagecache_put(r->mm, pfn, dirty);
		mm_lock(r->mm);
		if (ret)
			break;
	}
	return 0;
}

/* thpcompact: fill with foreign anon, free the first half of every pageblock, refill the holes
 * with clean page cache down to HIGH. */
static int recipe_thpcompact(struct recipe *r)
{
	struct mm *mm = r->mm;
	struct fault_ctx fc = {.call = r->call};
	struct alloc_ctx ac = {
	    .order = 0, .mt = MM_MT_MOVABLE, .gfp = GFP_HIGHUSER_MOVABLE, .fc = &fc};
	uint32_t pfn, holes;

	while ((pfn = get_page_from_freelist(mm, &ac, WMARK_LOW)) != MM_NO_PFN) {
		mark_allocated(mm, pfn, 0, FS_ANON, foreign_owner(r));
		mm->nr_foreign++;
	}
	for (pfn = 0; pfn < mm->nr_frames; pfn++) {
		struct mm_frame *f = pfn_frame(mm, pfn);

		if (pfn % MM_HPAGE_NR < MM_HPAGE_NR / 2 && f->state == FS_ANON &&
		    (f->owner & MM_OWNER_FOREIGN) && !(f->flags & FF_ISOLATED))
			frame_free_owned(mm, pfn, NULL);
	}
	holes = mm->nr_free_pages > wmark_pages(mm, WMARK_HIGH)
		    ? mm->nr_free_pages - wmark_pages(mm, WMARK_HIGH)
		    : 0;
	return recipe_pagecache(r, holes, false);
}

static int parse_fraction(const char *item, const char *arg, double *frac, char *err, size_t errlen)
{
	if (units_parse_fraction(arg, frac) || *frac > 1.0) {
		snprintf(err, errlen, "recipe item '%s': the fraction must be like 60%% or 0.6",
			 item);
		return -EINVAL;
	}
	return 0;
}

static int apply_item(struct recipe *r, const char *item, char *err, size_t errlen)
{
	const char *colon = strchr(item, ':');
	size_t nlen = colon ? (size_t)(colon - item) : strlen(item);
	double frac = 0;

	if (!colon && !strcmp(item, "thpcompact"))
		return recipe_thpcompact(r);
	if (colon && parse_fraction(item, colon + 1, &frac, err, errlen))
		return -EINVAL;
	if (colon && nlen == 9 && !strncmp(item, "pagecache", 9))
		return recipe_pagecache(r, (uint32_t)(frac * r->mm->nr_frames + 0.5), false);
	if (colon && nlen == 5 && !strncmp(item, "dirty", 5))
		return recipe_pagecache(r, (uint32_t)(frac * r->mm->nr_frames + 0.5), true);
	if (colon && nlen == 9 && !strncmp(item, "unmovable", 9))
		return recipe_scatter(r, frac, FS_UNMOVABLE);
	if (colon && nlen == 4 && !strncmp(item, "anon", 4))
		return recipe_scatter(r, frac, FS_ANON);
	snprintf(err, errlen,
		 "recipe item '%s' unknown (accepted: thpcompact, pagecache:F, "
		 "dirty:F, unmovable:F, anon:F)",
		 item);
	return -EINVAL;
}

/* Parse the whole recipe first, so a bad item changes nothing. */
static int check_recipe(const char *recipe, char *err, size_t errlen)
{
	char item[128];

	for (const char *s = recipe; *s;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *colon;
		double frac;

		if (len == 0 || len >= sizeof(item) || (end && !end[1])) {
			snprintf(err, errlen, "recipe: empty or overlong item in '%s'", recipe);
			return -EINVAL;
		}
		memcpy(item, s, len);
		item[len] = '\0';
		colon = strchr(item, ':');
		if (colon && parse_fraction(item, colon + 1, &frac, err, errlen))
			return -EINVAL;
		if (strcmp(item, "thpcompact") &&
		    (!colon || (strncmp(item, "pagecache:", 10) && strncmp(item, "dirty:", 6) &&
				strncmp(item, "unmovable:", 10) && strncmp(item, "anon:", 5)))) {
			snprintf(err, errlen,
				 "recipe item '%s' unknown (accepted: thpcompact, "
				 "pagecache:F, dirty:F, unmovable:F, anon:F)",
				 item);
			return -EINVAL;
		}
		s = end ? end + 1 : s + len;
	}
	return 0;
}

int mm_fragment(struct mm *mm, const char *recipe, uint64_t seed, char *err, size_t errlen,
		void *call)
{
	struct recipe r = {.mm = mm, .call = call, .next_file_id = RECIPE_FILE_ID};
	char item[128];
	int ret;

	if (!recipe)
		recipe = "";
	ret = check_recipe(recipe, err, errlen);
	if (ret)
		return ret;
	rng_seed(&r.rng, seed);
	mm_lock(mm);
	materialise_all(mm); /* recipes scan and place frames anywhere in the pool */
	r.foreign_seq = mm->stats[MM_STAT_PGALLOC];
	for (const char *s = recipe; *s && !ret;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);

		memcpy(item, s, len);
		item[len] = '\0';
		ret = apply_item(&r, item, err, errlen);
		s = end ? end + 1 : s + len;
	}
	mm_unlock(mm);
	return ret;
}

static void debug_place_file(struct mm *mm, uint32_t pfn, enum mm_debug_kind kind, uint64_t owner)
{
	mark_allocated(mm, pfn, 0, FS_FILE, owner);
	pc_insert(mm, pfn);
	lru_add(mm, pfn);
	mm->nr_file++;
	if (kind == DBG_FILE_CLEAN)
		return;
	set_page_dirty(mm, pfn);
	if (kind == DBG_FILE_WRITEBACK)
		start_writeback(mm, pfn);
}

int mm_debug_place(struct mm *mm, uint32_t pfn, enum mm_debug_kind kind, uint64_t owner)
{
	int ret = 0;

	mm_lock(mm);
	materialise_all(mm);
	if (pfn >= mm->nr_frames || !take_frame_off_buddy(mm, pfn)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	switch (kind) {
	case DBG_ANON:
	case DBG_FOREIGN:
		mark_allocated(mm, pfn, 0, FS_ANON,
			       kind == DBG_FOREIGN ? owner | MM_OWNER_FOREIGN : owner);
		if (kind == DBG_FOREIGN)
			mm->nr_foreign++;
		else
			mm->nr_anon++;
		break;
	case DBG_UNMOVABLE:
		mark_allocated(mm, pfn, 0, FS_UNMOVABLE, 0);
		mm->nr_unmovable++;
		break;
	default:
		debug_place_file(mm, pfn, kind, owner);
		break;
	}
out_unlock:
	mm_unlock(mm);
	return ret;
}
