/* The page cache of the emulated device's files: the index (owner -> frame), the LRU lists,
 * dirty and writeback state, and the release of frames whose owner let go while someone else
 * still held them.
 *
 * Mirrors mm/filemap.c (find_get_page / add_to_page_cache_lru, lock_page/unlock_page,
 * delete_from_page_cache with a frame under writeback freed at end_page_writeback),
 * mm/page-writeback.c (set_page_dirty, clear_page_dirty_for_io, test_set_page_writeback,
 * end_page_writeback after an error), mm/swap.c (mark_page_accessed, lru_cache_add) and the
 * putback side of isolate_lru_page. The index lives in mm, like the address_space, so that
 * migration and reclaim keep it right. Dirty frames wait in a FIFO ring in dirtying order: the
 * flusher takes the oldest first (the kernel orders by inode dirtied_when, then page index).
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

/* A file's pages sit in consecutive buckets from a hashed start (the file id's Fibonacci hash,
 * the owner's bits above the 36-bit page index): a file read or written in index order walks
 * the buckets in order, and a big file spreads over every bucket. The bucket order decides
 * nothing but speed. */
static uint32_t *pc_bucket(struct mm *mm, uint64_t owner)
{
	uint64_t start = ((owner >> 36) * 0x9e3779b97f4a7c15ULL) >> 32;

	return &mm->pc_hash[(start + (owner & ((1ULL << 36) - 1))) & mm->pc_hash_mask];
}

/* Buckets and chains hold pfn + 1, 0 ending them: zeroed memory is an empty index, so neither
 * needs writing at creation (a pool's metadata is only touched where it is used). */
uint32_t pc_lookup(struct mm *mm, uint64_t owner)
{
	for (uint32_t p = *pc_bucket(mm, owner); p; p = pfn_frame(mm, p - 1)->hnext)
		if (pfn_frame(mm, p - 1)->owner == owner)
			return p - 1;
	return MM_NO_PFN;
}

void pc_insert(struct mm *mm, uint32_t pfn)
{
	uint32_t *b = pc_bucket(mm, pfn_frame(mm, pfn)->owner);

	pfn_frame(mm, pfn)->hnext = *b;
	*b = pfn + 1;
	mm->pc_used = true;
}

/* The link (bucket or hnext) that holds pfn + 1 in its chain, or the chain's terminating 0. */
static uint32_t *pc_link_to(struct mm *mm, uint32_t pfn)
{
	uint32_t *link = pc_bucket(mm, pfn_frame(mm, pfn)->owner);

	while (*link && *link != pfn + 1)
		link = &pfn_frame(mm, *link - 1)->hnext;
	return link;
}

void pc_delete(struct mm *mm, uint32_t pfn)
{
	uint32_t *link = pc_link_to(mm, pfn);

	if (*link == pfn + 1)
		*link = pfn_frame(mm, pfn)->hnext;
	pfn_frame(mm, pfn)->hnext = 0;
}

/* Put newpfn in place of oldpfn in the index (migration): same owner, same chain. */
void pc_replace(struct mm *mm, uint32_t oldpfn, uint32_t newpfn)
{
	uint32_t *link = pc_link_to(mm, oldpfn);

	if (*link != oldpfn + 1)
		return;
	*link = newpfn + 1;
	pfn_frame(mm, newpfn)->hnext = pfn_frame(mm, oldpfn)->hnext;
	pfn_frame(mm, oldpfn)->hnext = 0;
}

/* tmpfs without swap: its folios are swap-backed, on the anon LRU (6.12 and 6.1
 * include/linux/mm_inline.h folio_is_file_lru), which reclaim never scans without swap
 * (mm/vmscan.c get_scan_count: SCAN_FILE when !can_reclaim_anon_pages): kept off the file LRU,
 * so nothing reclaims them. */
bool pc_off_lru(const struct mm *mm)
{
	return mm->cfg.policy.fs == MM_FS_TMPFS;
}

void lru_add(struct mm *mm, uint32_t pfn)
{
	bool active = pfn_frame(mm, pfn)->flags & FF_ACTIVE;

	if (pc_off_lru(mm))
		return;
	flist_add(mm, sentinel(mm, active ? SENT_LRU_ACTIVE : SENT_LRU_INACTIVE), pfn);
	mm->nr_lru[active]++;
}

void lru_del(struct mm *mm, uint32_t pfn)
{
	if (pc_off_lru(mm))
		return;
	flist_del(mm, pfn);
	mm->nr_lru[(pfn_frame(mm, pfn)->flags & FF_ACTIVE) ? 1 : 0]--;
}

/* mark_page_accessed: inactive,unreferenced -> inactive,referenced -> active,unreferenced ->
 * active,referenced. Frames off the LRU (isolated) only get the referenced bit. */
static void mark_page_accessed(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (!(f->flags & FF_ACTIVE) && (f->flags & FF_REFERENCED) && !(f->flags & FF_ISOLATED)) {
		lru_del(mm, pfn);
		f->flags = (uint8_t)((f->flags | FF_ACTIVE) & ~FF_REFERENCED);
		lru_add(mm, pfn);
		return;
	}
	f->flags |= FF_REFERENCED;
}

static bool dirty_queued(const struct mm *mm, uint32_t pfn)
{
	return mm->dirty_queued[pfn / 64] & (1ULL << (pfn % 64));
}

static void set_dirty_queued(struct mm *mm, uint32_t pfn, bool on)
{
	if (on) {
		mm->dirty_queued[pfn / 64] |= 1ULL << (pfn % 64);
		mm->dq_used = true;
	} else {
		mm->dirty_queued[pfn / 64] &= ~(1ULL << (pfn % 64));
	}
}

static void ring_push(struct mm *mm, uint32_t pfn)
{
	mm->dirty_ring[(mm->ring_head + mm->ring_len) % mm->nr_frames] = pfn;
	mm->ring_len++;
	set_dirty_queued(mm, pfn, true);
}

static uint32_t ring_pop(struct mm *mm)
{
	uint32_t pfn = mm->dirty_ring[mm->ring_head];

	mm->ring_head = (mm->ring_head + 1) % mm->nr_frames;
	mm->ring_len--;
	set_dirty_queued(mm, pfn, false);
	return pfn;
}

static bool queue_wanted(struct mm *mm, uint32_t pfn)
{
	const struct mm_frame *f = pfn_frame(mm, pfn);

	return f->state == FS_FILE && (f->flags & FF_DIRTY) && !dirty_queued(mm, pfn);
}

/* mm_repair: the ring keeps its dirty frames in their order, each once (entries of frames
 * cleaned or freed since are dropped, as mm_writeback_begin would skip them), and every dirty
 * frame it lacks is appended in pfn order. */
void pc_rebuild_ring(struct mm *mm)
{
	uint32_t n = mm->nr_frames, len = mm->ring_len < n ? mm->ring_len : n;
	uint32_t head = mm->ring_head < n ? mm->ring_head : 0, kept = 0;

	memset(mm->dirty_queued, 0, (n + 63) / 64 * sizeof(uint64_t));
	for (uint32_t i = 0; i < len; i++) {
		uint32_t pfn = mm->dirty_ring[(head + i) % n];

		if (pfn >= n || !queue_wanted(mm, pfn))
			continue;
		mm->dirty_ring[(head + kept++) % n] = pfn;
		set_dirty_queued(mm, pfn, true);
	}
	mm->ring_head = head;
	mm->ring_len = kept;
	for (uint32_t pfn = 0; pfn < n && mm->ring_len < mm->nr_file_dirty; pfn++)
		if (!(pfn >= mm->fresh_pfn && pfn < mm->fresh_end) && queue_wanted(mm, pfn))
			ring_push(mm, pfn);
}

/* set_page_dirty: count it and queue it for the flusher unless it already has a ring entry. */
void set_page_dirty(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	/* tmpfs: shmem_aops.dirty_folio = noop_dirty_folio (6.12 and 6.1 mm/shmem.c): no dirty
	 * accounting, no writeback, nothing for balance_dirty_pages or fsync (noop_fsync) */
	if ((f->flags & FF_DIRTY) || mm->cfg.policy.fs == MM_FS_TMPFS)
		return;
	f->flags |= FF_DIRTY;
	mm->nr_file_dirty++;
	if (!dirty_queued(mm, pfn))
		ring_push(mm, pfn);
}

static void clear_page_dirty(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (!(f->flags & FF_DIRTY))
		return;
	f->flags &= (uint8_t)~FF_DIRTY;
	mm->nr_file_dirty--;
}

/* Free an allocated frame whose owner is done with it, with the per-state accounting. */
void frame_free_owned(struct mm *mm, uint32_t pfn, struct capture_control *capc)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	switch (f->state) {
	case FS_ANON:
		if (f->owner & MM_OWNER_FOREIGN)
			mm->nr_foreign--;
		else
			mm->nr_anon--;
		break;
	case FS_FILE:
		mm->nr_file--;
		break;
	case FS_UNMOVABLE:
		mm->nr_unmovable--;
		break;
	default:
		break;
	}
	free_frames(mm, pfn, 0, capc);
}

/* A frame whose owner let go (FF_GONE) is freed once nobody holds it: not locked, not
 * isolated, not under writeback. Returns true if it was freed. */
bool release_if_gone(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (!(f->flags & FF_GONE) || (f->flags & (FF_LOCKED | FF_ISOLATED)) || frame_under_wb(f))
		return false;
	if (f->state == FS_FILE)
		lru_del(mm, pfn);
	frame_free_owned(mm, pfn, NULL);
	return true;
}

/* putback_lru_page: an isolated frame goes back where it belongs (or is freed if its owner let
 * go meanwhile). */
void putback_frame(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	f->flags &= (uint8_t) ~(FF_ISOLATED | FF_MIGRATING);
	mm->nr_isolated--;
	if (f->flags & FF_GONE) {
		if (f->state != FS_FILE || !frame_under_wb(f))
			frame_free_owned(mm, pfn, NULL);
		else
			lru_add(mm, pfn); /* freed by mm_writeback_end */
		return;
	}
	if (f->state == FS_FILE)
		lru_add(mm, pfn);
}

/* A new page-cache page: __page_cache_alloc(mapping_gfp_mask(mapping)). A regular file's mapping
 * is GFP_HIGHUSER_MOVABLE (fs/inode.c inode_init_always); a block device's is GFP_USER, without
 * __GFP_MOVABLE, so its pages are MIGRATE_UNMOVABLE (allocflags_to_migratetype): 3.1
 * fs/block_dev.c bdget and 6.x block/bdev.c bdev_alloc, mapping_set_gfp_mask(&inode->i_data,
 * GFP_USER). The model's gfp bits have no __GFP_MOVABLE: the migratetype carries it. */
static int pagecache_create(struct mm *mm, uint64_t owner, bool bdev, uint32_t *pfn, void *call)
{
	struct fault_ctx fc; /* the fast path reads only its call: zeroed for the slow one */
	struct alloc_ctx ac = {
	    .order = 0,
	    .mt = bdev ? MM_MT_UNMOVABLE : MM_MT_MOVABLE,
	    .gfp = GFP_HIGHUSER_MOVABLE,
	    .fc = &fc,
	};
	uint64_t unlocks = mm->unlocks;
	uint32_t p, raced = MM_NO_PFN;

	fc.call = call;
	p = alloc_base_page_fast(mm, &ac);
	if (p == MM_NO_PFN) {
		fc = (struct fault_ctx){.call = call};
		p = alloc_base_page_slow(mm, &ac, false);
	}
	if (p == MM_NO_PFN)
		return -ENOMEM;
	/* reclaim may have dropped the lock (and the pool may have been repaired meanwhile: p
	 * was taken after that, and the index lookup is as good as any); if it did not, nobody
	 * else ran and owner is still absent (the allocation only ever takes pages out) */
	if (mm->unlocks != unlocks)
		raced = pc_lookup(mm, owner);
	if (raced != MM_NO_PFN) {
		free_frames(mm, p, 0, NULL);
		*pfn = raced;
		return -EEXIST;
	}
	mark_allocated(mm, p, 0, FS_FILE, owner);
	pfn_frame(mm, p)->flags = FF_LOCKED;
	pc_insert(mm, p);
	lru_add(mm, p);
	mm->nr_file++;
	*pfn = p;
	return 0;
}

static int pagecache_get(struct mm *mm, uint64_t owner, bool create, bool bdev, uint32_t *pfn,
			 bool *created, void *call)
{
	uint32_t p;
	int ret = 0;

	if (!(owner & MM_OWNER_FILE_BIT))
		return -EINVAL;
	mm_lock(mm);
	p = pc_lookup(mm, owner);
	if (p == MM_NO_PFN && create) {
		ret = pagecache_create(mm, owner, bdev, &p, call);
		if (ret == 0) {
			*pfn = p;
			*created = true;
			goto out_unlock;
		}
		if (ret != -EEXIST)
			goto out_unlock;
		ret = 0;
	}
	if (p == MM_NO_PFN) {
		ret = -ENOENT;
	} else if (pfn_frame(mm, p)->flags & (FF_LOCKED | FF_MIGRATING)) {
		ret = -EAGAIN;
	} else {
		pfn_frame(mm, p)->flags |= FF_LOCKED;
		*pfn = p;
		*created = false;
	}
out_unlock:
	mm_unlock(mm);
	return ret;
}

int mm_pagecache_get(struct mm *mm, uint64_t owner, bool create, uint32_t *pfn, bool *created,
		     void *call)
{
	return pagecache_get(mm, owner, create, false, pfn, created, call);
}

int mm_pagecache_get_bdev(struct mm *mm, uint64_t owner, bool create, uint32_t *pfn, bool *created,
			  void *call)
{
	return pagecache_get(mm, owner, create, true, pfn, created, call);
}

int mm_pagecache_peek(struct mm *mm, uint64_t owner, uint32_t *pfn)
{
	uint32_t p;
	int ret = -ENOENT;

	if (!(owner & MM_OWNER_FILE_BIT))
		return -EINVAL;
	mm_lock(mm);
	p = pc_lookup(mm, owner);
	if (p != MM_NO_PFN) {
		const struct mm_frame *f = pfn_frame(mm, p);

		ret = ((f->flags & FF_DIRTY) ? MM_PC_DIRTY : 0) |
		      (frame_under_wb(f) ? MM_PC_WRITEBACK : 0);
		*pfn = p;
	}
	mm_unlock(mm);
	return ret;
}

void mm_pagecache_put(struct mm *mm, uint32_t pfn, bool dirtied)
{
	struct mm_frame *f;

	mm_lock(mm);
	if (pfn >= mm->nr_frames)
		goto out_unlock;
	f = pfn_frame(mm, pfn);
	if (f->state != FS_FILE || !(f->flags & FF_LOCKED))
		goto out_unlock;
	f->flags &= (uint8_t)~FF_LOCKED;
	if (f->flags & FF_GONE) {
		release_if_gone(mm, pfn);
		goto out_unlock;
	}
	if (dirtied)
		set_page_dirty(mm, pfn);
	mark_page_accessed(mm, pfn);
out_unlock:
	mm_unlock(mm);
}

/* Page-cache frames freed one after another whose frames are consecutive and ascending, not yet
 * given to the buddy: nothing else frees or allocates until they go (run_flush), so they go as
 * one run (free_plain_blocks) and leave the buddy as the frees one by one would. */
struct free_run {
	uint32_t pfn, n;
};

static void run_flush(struct mm *mm, struct free_run *run)
{
	if (run->n)
		free_plain_blocks(mm, run->pfn, run->pfn + run->n);
	run->n = 0;
}

/* delete_from_page_cache of owner's page, if cached (lock held; 3.x mm/truncate.c
 * truncate_inode_pages_range page by page, 6.12 delete_from_page_cache_batch): pc_lookup and
 * pc_delete in one walk of its chain (the link to the first frame of owner's is the one pc_delete
 * finds). With run, a page release_if_gone would free joins the run (off the LRU and counted now).
 */
static void pagecache_remove_locked(struct mm *mm, uint64_t owner, struct free_run *run)
{
	uint32_t *link = pc_bucket(mm, owner), p;
	struct mm_frame *f;

	while (*link && pfn_frame(mm, *link - 1)->owner != owner)
		link = &pfn_frame(mm, *link - 1)->hnext;
	if (!*link)
		return;
	p = *link - 1;
	f = pfn_frame(mm, p);
	*link = f->hnext;
	f->hnext = 0;
	clear_page_dirty(mm, p); /* truncation cancels dirty data */
	f->flags |= FF_GONE;
	if (run && f->state == FS_FILE && !(f->flags & (FF_LOCKED | FF_ISOLATED)) &&
	    !frame_under_wb(f)) {
		/* release_if_gone -> lru_del, frame_free_owned, the free deferred */
		lru_del(mm, p);
		mm->nr_file--;
		if (run->n && p != run->pfn + run->n)
			run_flush(mm, run);
		if (!run->n)
			run->pfn = p;
		run->n++;
		return;
	}
	if (run)
		run_flush(mm, run); /* whatever is freed next goes after the run */
	release_if_gone(mm, p);
}

void mm_pagecache_remove(struct mm *mm, uint64_t owner)
{
	mm_lock(mm);
	pagecache_remove_locked(mm, owner, NULL);
	mm_unlock(mm);
}

void mm_pagecache_remove_range(struct mm *mm, uint64_t owner, uint32_t n)
{
	struct free_run run = {0};

	mm_lock(mm);
	for (uint32_t i = 0; i < n; i++)
		pagecache_remove_locked(mm, owner + i, &run);
	run_flush(mm, &run);
	mm_unlock(mm);
}

/* test_set_page_writeback after clear_page_dirty_for_io. */
void start_writeback(struct mm *mm, uint32_t pfn)
{
	clear_page_dirty(mm, pfn);
	frame_set_wb(pfn_frame(mm, pfn), true);
	mm->nr_file_writeback++;
}

unsigned mm_writeback_begin(struct mm *mm, unsigned max, uint32_t *pfns, uint64_t *owners)
{
	unsigned n = 0;
	uint32_t budget;

	mm_lock(mm);
	budget = mm->ring_len;
	while (n < max && budget--) {
		uint32_t pfn = ring_pop(mm);
		struct mm_frame *f = pfn_frame(mm, pfn);

		if (f->state != FS_FILE || !(f->flags & FF_DIRTY))
			continue; /* cleaned or freed since it was queued */
		if ((f->flags & FF_LOCKED) || frame_under_wb(f)) {
			ring_push(mm, pfn); /* being written to, or still in flight: later */
			continue;
		}
		start_writeback(mm, pfn);
		pfns[n] = pfn;
		owners[n] = f->owner;
		n++;
	}
	mm_unlock(mm);
	return n;
}

int mm_writeback_begin_one(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f;
	int ret = -EBUSY;

	mm_lock(mm);
	if (pfn < mm->nr_frames) {
		f = pfn_frame(mm, pfn);
		if (f->state == FS_FILE && (f->flags & FF_DIRTY) && !(f->flags & FF_LOCKED) &&
		    !frame_under_wb(f)) {
			start_writeback(mm, pfn);
			ret = 0;
		}
	}
	mm_unlock(mm);
	return ret;
}

/* end_page_writeback's TestClearPageReclaim + rotate_reclaimable_page (mm/swap.c): a page
 * reclaim wanted gone, clean now and idle on the inactive list, moves to its tail, where reclaim
 * takes it next. */
static void rotate_reclaimable_page(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	f->order = (uint8_t)(f->order & ~ORDER_RECLAIM);
	if ((f->flags & (FF_LOCKED | FF_DIRTY | FF_ACTIVE | FF_ISOLATED | FF_GONE)) ||
	    pc_off_lru(mm))
		return;
	flist_del(mm, pfn);
	flist_add_tail(mm, sentinel(mm, SENT_LRU_INACTIVE), pfn);
	count_event(mm, MM_STAT_PGROTATED, 1);
}

void mm_writeback_end(struct mm *mm, uint32_t pfn, int err)
{
	struct mm_frame *f;

	mm_lock(mm);
	if (pfn >= mm->nr_frames)
		goto out_unlock;
	f = pfn_frame(mm, pfn);
	if (f->state != FS_FILE || !frame_under_wb(f))
		goto out_unlock;
	frame_set_wb(f, false);
	mm->nr_file_writeback--;
	if (err) {
		f->flags |= FF_ERROR;
		count_event(mm, MM_STAT_PGWB_ERROR, 1);
	}
	if (f->order & ORDER_RECLAIM)
		rotate_reclaimable_page(mm, pfn);
	release_if_gone(mm, pfn);
out_unlock:
	mm_unlock(mm);
}

bool mm_frame_under_writeback(const struct mm *mm, uint32_t pfn)
{
	return pfn < mm->nr_frames && frame_under_wb(&mm->frames[pfn]);
}

uint64_t mm_frame_owner_peek(const struct mm *mm, uint32_t pfn)
{
	return pfn < mm->nr_frames ? __atomic_load_n(&mm->frames[pfn].owner, __ATOMIC_RELAXED) : 0;
}
