/* Compaction's private state, shared by compaction.c (scanners, compact_zone, deferral,
 * kcompactd) and migrate.c (migrate_frames / unmap_and_move). Part of core/mm's internals.
 */
#ifndef THPEMU_MM_COMPACTION_H
#define THPEMU_MM_COMPACTION_H

#include "mm/internal.h"

/* The most frames one isolate_migratepages call takes: COMPACT_CLUSTER_MAX normally, a whole
 * pageblock when the modern scanner finishes a block it failed in. */
#define CC_MIGRATE_MAX MM_HPAGE_NR

/* struct compact_control: one compaction run over the zone. */
struct compact_control {
	int order;			 /* requested order; -1: whole-zone (proactive, /proc) */
	enum mm_migratetype migratetype; /* of the allocation being served */
	enum mm_migrate_mode mode;
	unsigned alloc_flags;  /* watermark of the allocation being served */
	bool direct;	       /* direct compaction (a fault), not kcompactd/proactive */
	bool whole_zone;       /* scan from the zone's ends, not the cached positions */
	bool ignore_skip_hint; /* ignore pageblock skip bits */
	bool finish_pageblock; /* modern: isolate the rest of a block after a failure */
	bool proactive;	       /* proactive compaction: run until the score is low */
	bool contended;	       /* aborted (too many isolated, async; or stale) */
	bool stale;	       /* the model was repaired under it: it holds nothing any more */
	uint32_t migrate_pfn;  /* migrate scanner position (moves up) */
	uint32_t free_pfn;     /* free scanner position (moves down) */
	uint32_t migratepages[CC_MIGRATE_MAX]; /* isolated sources */
	unsigned nr_migratepages;
	/* isolated free targets, linked through ->next, in the order they are used
	 * (migrate.c: 6.12 one list per order, 6.1 and 3.x everything on freelist[0]) */
	uint32_t freelist[MM_MAX_ORDER + 1];
	uint32_t freelist_tail[MM_MAX_ORDER + 1];
	unsigned nr_freepages; /* frames on the target lists */
	uint64_t total_migrate_scanned;
	uint64_t total_free_scanned;
	struct capture_control *capc; /* modern direct compaction: catch a freed block */
	struct fault_ctx *fc;	      /* accounting of the fault (or background actor) */
	unsigned pass;		      /* current migrate_pages pass */
	uint32_t proactive_low;	      /* proactive: stop once the score is at most this */
	/* The fast searches of the free lists (6.12 fast_isolate_freepages,
	 * fast_find_migrateblock): */
	unsigned fast_search_fail; /* failed fast searches since the last success */
	int search_order;	   /* fast_isolate_freepages' round-robin order (the caller sets
				    * it to the order, as compact_zone_order does) */
	uint32_t fast_start_pfn;   /* lowest free pfn fast_find_migrateblock picked: 0 none yet,
				    * MM_NO_PFN once the linear scan restarted from it */
};

/* migrate.c */
int migrate_frames(struct mm *mm, struct compact_control *cc, unsigned *nr_succeeded);
void init_targets(struct compact_control *cc);
void add_target(struct mm *mm, struct compact_control *cc, uint32_t pfn, unsigned order);
uint32_t highest_target(struct mm *mm, const struct compact_control *cc);
uint32_t compaction_alloc(struct mm *mm, struct compact_control *cc);
void release_freepages(struct mm *mm, struct compact_control *cc);
void isolate_freepages(struct mm *mm, struct compact_control *cc);
/* The model was repaired under cc: forget what it held, without touching it. */
void abandon_compaction(struct compact_control *cc);

/* compaction.c */
bool isolate_skips_dirty_writeback(const struct mm *mm, enum mm_migrate_mode mode);

#endif
