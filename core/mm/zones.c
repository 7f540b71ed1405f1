/* The zones of a pool that starts from a snapshot of a whole node (DMA, DMA32, Normal, ...).
 *
 * The model. The pool spans every zone's frames; the highest zone is the main zone, the one
 * everything but the zonelist walk speaks of (its watermarks, free area, compaction, kswapd,
 * kcompactd). The zones below it ("lower zones") have their own free lists, free counts,
 * watermarks and lowmem_reserve. A free block is listed in the zone its pfn is in (page_zone),
 * and zone boundaries sit on max-order boundaries, so a buddy merge never crosses one (the
 * kernel's zones meet there too: ZONE_DMA ends at 16 MiB, ZONE_DMA32 at 4 GiB, and
 * mm/mm_init.c find_zone_movable_pfns_for_nodes rounds ZONE_MOVABLE's start up to
 * MAX_ORDER_NR_PAGES). An allocation walks the zonelist, main zone first, then the lower zones
 * highest first (6.12 mm/page_alloc.c build_zonerefs_node, get_page_from_freelist), a lower
 * zone only while its free pages stay above its watermark plus its lowmem_reserve for the main
 * zone's index (__zone_watermark_ok; the reserve is /proc/zoneinfo's "protection" entry,
 * setup_per_zone_lowmem_reserve). That is the path a THP fault or a page-cache page takes from
 * ZONE_DMA on a 512 MiB machine once DMA32 has no free order-9 block.
 *
 * Left out (the lower zones are small): compaction, kswapd's balancing and kcompactd run on the
 * main zone only (the kernel's try_to_compact_pages and kswapd's pgdat_balanced visit every
 * zone of the zonelist / node), a lower zone's watermark is never boosted, and reclaim frees
 * page cache wherever it is (as the node's LRU does) but checks only the main zone's marks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mm/internal.h"

static int zones_check(const struct mm *mm, const struct mm_snapshot_zone *z, unsigned n, char *err,
		       size_t errlen)
{
	if (!n || n > MM_MAX_LOWER_ZONES + 1) {
		snprintf(err, errlen, "%u zones: the pool takes 1 to %u", n,
			 MM_MAX_LOWER_ZONES + 1);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		uint32_t want = i ? z[i - 1].end : 0;

		if (z[i].start != want || z[i].end <= z[i].start ||
		    (i + 1 == n ? z[i].end != mm->nr_frames : z[i].end % (1U << MM_MAX_ORDER))) {
			snprintf(err, errlen,
				 "zone %s: frames %u..%u do not follow on at %u on a %u-frame "
				 "boundary in a pool of %u",
				 z[i].name ? z[i].name : "?", z[i].start, z[i].end, want,
				 1U << MM_MAX_ORDER, mm->nr_frames);
			return -EINVAL;
		}
	}
	return 0;
}

int mm_snapshot_zones(struct mm_snapshot *s, const struct mm_snapshot_zone *z, unsigned n,
		      char *err, size_t errlen)
{
	struct mm *mm = s->mm;
	int ret;

	mm_lock(mm);
	ret = zones_check(mm, z, n, err, errlen);
	if (!ret && (s->next || node_free_pages(mm))) {
		snprintf(err, errlen, "zones come before the runs");
		ret = -EINVAL;
	}
	if (!ret) {
		mm->zone_start_pfn = z[n - 1].start;
		mm->nr_lower = n - 1;
		for (unsigned i = 0; i + 1 < n; i++) {
			const struct mm_snapshot_zone *src = &z[n - 2 - i]; /* highest first */
			struct lower_zone *lz = &mm->lower[i];

			memset(lz, 0, sizeof(*lz));
			snprintf(lz->name, sizeof(lz->name), "%s", src->name ? src->name : "?");
			lz->start = src->start;
			lz->end = src->end;
			for (unsigned w = 0; w < NR_WMARK; w++)
				lz->wmark[w] = src->wmark[w];
			lz->lowmem_reserve = src->lowmem_reserve;
		}
		/* compact_zone (6.12, 6.1) moves a cached migrate position below the zone to its
		 * start; compact_init_migrate_pfn stays 0 (the zone is zeroed and only
		 * __reset_isolation_suitable sets it), so no compaction of a zone above pfn 0 is
		 * whole_zone before the first skip-bit flush */
		mm->compact_cached_migrate_pfn[0] = mm->compact_cached_migrate_pfn[1] =
		    mm->zone_start_pfn;
	}
	mm_unlock(mm);
	return ret;
}
