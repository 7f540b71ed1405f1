/* The emulated physical memory: creating the zone, its frame descriptors, pageblocks, free
 * lists and page-cache index; observation (counts, vmstat counters, fragmentation index).
 *
 * Mirrors the boot-time part of mm/page_alloc.c (free_area_init, memblock_free_all handing every
 * page to the buddy allocator in MAX_ORDER blocks, all pageblocks MOVABLE) and the counters of
 * mm/vmstat.c. All host memory is allocated here, once: nothing later allocates, so every other
 * entry point is safe on a fault-handler thread. The metadata arrays come from the environment
 * (meta_alloc: zeroed, untouched memory) and are written where the pool is used (README.md,
 * "Metadata is written where the pool is used").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mm/internal.h"

#define MM_POOL_MIN (8ULL << 20)
#define MM_POOL_MAX (64ULL << 30)

static int validate_config(const struct mm_config *cfg, char *err, size_t errlen)
{
	if (cfg->pool_bytes < MM_POOL_MIN || cfg->pool_bytes > MM_POOL_MAX) {
		snprintf(err, errlen, "pool size must be between 8M and 64G, got %llu bytes",
			 (unsigned long long)cfg->pool_bytes);
		return -EINVAL;
	}
	if (cfg->extfrag_threshold > 1000) {
		snprintf(err, errlen, "extfrag_threshold must be 0..1000, got %u",
			 cfg->extfrag_threshold);
		return -EINVAL;
	}
	if (cfg->watermark_scale_factor > 3000) {
		snprintf(err, errlen, "watermark_scale_factor must be 1..3000, got %u",
			 cfg->watermark_scale_factor);
		return -EINVAL;
	}
	if (cfg->min_free_kbytes && (cfg->min_free_kbytes * 1024 >= cfg->pool_bytes / 4)) {
		snprintf(err, errlen, "min_free_kbytes must be below a quarter of the pool");
		return -EINVAL;
	}
	return 0;
}

static uint32_t pow2_floor(uint32_t x)
{
	uint32_t p = 1;

	while (p <= x / 2)
		p <<= 1;
	return p;
}

static size_t frames_len(const struct mm *mm)
{
	return ((size_t)mm->nr_frames + NR_SENTINELS) * sizeof(struct mm_frame);
}

/* Every array is zeroed memory that costs nothing until touched: a pool's metadata is written
 * where the pool is used (the page-cache index and chains encode "none" as 0 for that). */
static int alloc_metadata(struct mm *mm)
{
	uint32_t buckets = pow2_floor(mm->nr_frames / 2);

	mm->frames = mm_meta_alloc(mm, frames_len(mm));
	mm->pageblock = mm_meta_alloc(mm, mm->nr_blocks);
	mm->pb_nbuddy = mm_meta_alloc(mm, (size_t)mm->nr_blocks * sizeof(*mm->pb_nbuddy));
	mm->pc_hash = mm_meta_alloc(mm, (size_t)buckets * sizeof(*mm->pc_hash));
	mm->pc_hash_mask = buckets - 1;
	mm->dirty_ring = mm_meta_alloc(mm, (size_t)mm->nr_frames * sizeof(*mm->dirty_ring));
	mm->dirty_queued = mm_meta_alloc(mm, (mm->nr_frames + 63) / 64 * sizeof(uint64_t));
	if (!mm->frames || !mm->pageblock || !mm->pb_nbuddy || !mm->pc_hash || !mm->dirty_ring ||
	    !mm->dirty_queued)
		return -ENOMEM;
	return 0;
}

static void free_metadata(struct mm *mm)
{
	mm_meta_free(mm, mm->frames, frames_len(mm));
	mm_meta_free(mm, mm->pageblock, mm->nr_blocks);
	mm_meta_free(mm, mm->pb_nbuddy, (size_t)mm->nr_blocks * sizeof(*mm->pb_nbuddy));
	mm_meta_free(mm, mm->pc_hash, (size_t)(mm->pc_hash_mask + 1) * sizeof(*mm->pc_hash));
	mm_meta_free(mm, mm->dirty_ring, (size_t)mm->nr_frames * sizeof(*mm->dirty_ring));
	mm_meta_free(mm, mm->dirty_queued, (mm->nr_frames + 63) / 64 * sizeof(uint64_t));
}

/* Descriptors of free frames [pfn, pfn + n): inside a free block. */
void init_free_frames(struct mm *mm, uint32_t pfn, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct mm_frame *f = pfn_frame(mm, pfn + i);

		f->state = FS_FREE;
		f->order = ORDER_TAIL;
		f->hnext = 0;
	}
}

/* memblock_free_all: every frame goes to the buddy allocator in the largest aligned blocks,
 * in pfn order. The max-order blocks are only counted here; their descriptors are written
 * when first reached (materialise_free), which puts them on the list exactly where they would
 * have been. What is left over at the end (a pool of an odd number of pageblocks) is written
 * now. */
static void init_zone(struct mm *mm)
{
	uint32_t full = mm->nr_frames & ~((1U << MM_MAX_ORDER) - 1), nfull = full >> MM_MAX_ORDER;

	for (unsigned i = 0; i < NR_SENTINELS; i++) {
		struct mm_frame *s = pfn_frame(mm, sentinel(mm, i));

		s->state = FS_SENTINEL;
		flist_init(mm, sentinel(mm, i));
	}
	for (uint32_t b = 0; b < mm->nr_blocks; b++)
		mm->pageblock[b] = MM_MT_MOVABLE;
	mm->fresh_pfn = 0;
	mm->fresh_end = full;
	mm->nr_free[MM_MAX_ORDER] += nfull;
	mm->nr_free_mt[MM_MAX_ORDER][MM_MT_MOVABLE] += nfull;
	mm->nr_free_pages += full;
	for (uint32_t pfn = full; pfn < mm->nr_frames;) {
		unsigned order = MM_MAX_ORDER;

		while (pfn + (1U << order) > mm->nr_frames || (pfn & ((1U << order) - 1)))
			order--;
		init_free_frames(mm, pfn, 1U << order);
		add_free_block(mm, pfn, order, MM_MT_MOVABLE, true);
		pfn += 1U << order;
	}
	mm->compact_cached_migrate_pfn[0] = mm->compact_cached_migrate_pfn[1] = 0;
	mm->compact_cached_free_pfn = pageblock_start(mm->nr_frames - 1);
	mm->compact_init_migrate_pfn = 0;
	/* zeroed, as a zone's is: only __reset_isolation_suitable sets it (mm/compaction.c,
	 * 6.12), so until the first reset fast_isolate_freepages takes every search for the start
	 * of a scan (cc->free_pfn >= compact_init_free_pfn) */
	mm->compact_init_free_pfn = 0;
}

/* The pool descriptor itself: calloc, or for a shared pool meta_alloc (shared memory at one
 * address in every process), bound to env for the calling process. */
static int alloc_descriptor(const struct mm_config *cfg, const struct mm_env *env, struct mm **out)
{
	struct mm *mm = cfg->shared ? env_meta_alloc(env, sizeof(*mm)) : calloc(1, sizeof(*mm));
	int ret;

	*out = mm;
	if (!mm)
		return -ENOMEM;
	mm->cfg.shared = cfg->shared;
	if (!cfg->shared) {
		mm->env = *env;
		return 0;
	}
	ret = mm_attach(mm, env);
	if (ret) {
		env_meta_free(env, mm, sizeof(*mm));
		*out = NULL;
	}
	return ret;
}

static void free_descriptor(struct mm *mm)
{
	if (!mm->cfg.shared) {
		free(mm);
		return;
	}
	mm_meta_free(mm, mm, sizeof(*mm)); /* through this process's binding, not *mm */
	mm_detach(mm);
}

int mm_create(const struct mm_config *cfg, const struct mm_env *env, struct mm **out, char *err,
	      size_t errlen)
{
	struct mm *mm;
	int ret;

	*out = NULL;
	if (!env || !env->ops) {
		snprintf(err, errlen, "no environment given");
		return -EINVAL;
	}
	ret = validate_config(cfg, err, errlen);
	if (!ret)
		ret = mm_policy_validate(&cfg->policy, err, errlen);
	if (ret)
		return ret;
	ret = alloc_descriptor(cfg, env, &mm);
	if (ret) {
		snprintf(err, errlen, "%s",
			 ret == -ENOSPC ? "too many shared pools attached in this process"
					: "out of memory for the pool descriptor");
		return ret;
	}
	mm->cfg = *cfg;
	if (!mm->cfg.extfrag_threshold)
		mm->cfg.extfrag_threshold = 500;
	if (!mm->cfg.watermark_scale_factor)
		mm->cfg.watermark_scale_factor = 10;
	mm->nr_blocks = (uint32_t)(cfg->pool_bytes / MM_HPAGE_SIZE);
	mm->nr_frames = mm->nr_blocks * MM_HPAGE_NR;
	ret = alloc_metadata(mm);
	if (ret) {
		snprintf(err, errlen, "out of memory for the metadata of %u frames", mm->nr_frames);
		goto out_free_metadata;
	}
	init_zone(mm);
	setup_watermarks(mm);
	mm->huge_zero_pfn = MM_NO_PFN; /* allocated at its first use (fault.c) */
	*out = mm;
	return 0;

out_free_metadata:
	free_metadata(mm);
	free_descriptor(mm);
	return ret;
}

void mm_destroy(struct mm *mm)
{
	if (!mm)
		return;
	free_metadata(mm);
	free_descriptor(mm);
}

uint32_t mm_nr_frames(const struct mm *mm)
{
	return mm->nr_frames;
}

double mm_metadata_bytes_per_frame(const struct mm *mm)
{
	double bytes = (double)(mm->nr_frames + NR_SENTINELS) * sizeof(struct mm_frame);

	bytes += mm->nr_blocks;						/* pageblock flags */
	bytes += (double)mm->nr_blocks * sizeof(*mm->pb_nbuddy);	/* buddies per block */
	bytes += (double)(mm->pc_hash_mask + 1) * sizeof(*mm->pc_hash); /* page-cache index */
	bytes += (double)mm->nr_frames * sizeof(*mm->dirty_ring);	/* writeback FIFO */
	bytes += (double)((mm->nr_frames + 63) / 64) * sizeof(uint64_t);
	return bytes / mm->nr_frames;
}

const struct mm_policy *mm_policy(const struct mm *mm)
{
	return &mm->cfg.policy;
}

void mm_get_counts(struct mm *mm, struct mm_counts *c)
{
	mm_lock(mm);
	memset(c, 0, sizeof(*c));
	c->nr_frames = mm->nr_frames;
	c->free = node_free_pages(mm);
	c->anon = mm->nr_anon;
	c->anon_huge = mm->nr_anon_huge;
	c->foreign = mm->nr_foreign;
	c->file = mm->nr_file;
	c->file_dirty = mm->nr_file_dirty;
	c->file_writeback = mm->nr_file_writeback;
	c->unmovable = mm->nr_unmovable;
	c->isolated = mm->nr_isolated;
	c->wmark_min = wmark_pages(mm, WMARK_MIN);
	c->wmark_low = wmark_pages(mm, WMARK_LOW);
	c->wmark_high = wmark_pages(mm, WMARK_HIGH);
	c->min_free_kbytes = mm->min_free_kbytes;
	c->anon_pmd = mm->nr_anon_huge - mm->nr_huge_pte;
	c->split_queue = mm->nr_split_queue;
	c->anon_partially_mapped = mm->nr_partially_mapped;
	c->khugepaged_mms = mm->khp.nr;
	c->anon_mthp = mm->nr_anon_mthp;
	/* A shmem folio entering the page cache counts in both NR_FILE_PAGES and NR_SHMEM (6.12
	 * mm/shmem.c shmem_add_to_page_cache: __lruvec_stat_mod_folio(folio, NR_FILE_PAGES, nr)
	 * and (folio, NR_SHMEM, nr); 6.1 the same function; 3.1 __inc_zone_page_state(page,
	 * NR_FILE_PAGES) and (page, NR_SHMEM)). With fs=tmpfs the machine's files are tmpfs
	 * files, so their page cache is shmem too; mm->nr_shmem counts the objects' frames
	 * (FS_SHMEM) and mm->nr_file the page cache (FS_FILE), each frame once. */
	c->shmem = mm->nr_shmem + (mm->cfg.policy.fs == MM_FS_TMPFS ? mm->nr_file : 0);
	c->shmem_huge = mm->nr_shmem_huge;
	c->file_pages = mm->nr_file + mm->nr_shmem;
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) { /* every zone's, as buddyinfo summed */
		c->nr_free[o] = mm->nr_free[o];
		for (unsigned z = 0; z < mm->nr_lower; z++)
			c->nr_free[o] += mm->lower[z].area.nr_free[o];
		if (o >= MM_HPAGE_ORDER)
			c->free_blocks_order9 += c->nr_free[o] << (o - MM_HPAGE_ORDER);
	}
	mm_unlock(mm);
}

void mm_get_stats(struct mm *mm, uint64_t out[MM_STAT_NR])
{
	mm_lock(mm);
	memcpy(out, mm->stats, sizeof(mm->stats));
	mm_unlock(mm);
}

int mm_fragmentation_index(struct mm *mm, unsigned order)
{
	int idx;

	if (order > MM_MAX_ORDER)
		return -EINVAL;
	mm_lock(mm);
	idx = fragmentation_index(mm, order);
	mm_unlock(mm);
	return idx;
}
