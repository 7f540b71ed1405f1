/* mm_check: a consistency checker for tests and debugging (the kernel's CONFIG_DEBUG_VM
 * checks, gathered in one walk). It verifies the buddy invariants (aligned blocks, tails, free
 * counts per order and list), list membership, per-state counts, the page-cache index and the
 * writeback ring. O(frames touched); never called on a fast path.
 *
 * The never-touched max-order blocks [fresh_pfn, fresh_end) (pool.c: init_zone) are free blocks
 * at the tail of their list by definition, their descriptors never written: they are counted as
 * such, not written out first (writing them cost a machine's host 1 GiB of descriptors' worth of
 * page faults at the end of every `thpemu run`, for a pool a short program never touched).
 */
#include <stdarg.h>
#include <stdio.h>

#include "mm/internal.h"

struct check {
	struct mm *mm;
	char *err;
	size_t errlen;
	int code;
	/* what the frame walk found */
	uint32_t buddy_heads, free_pages, isolated, isolated_free, anon, huge, foreign, file, dirty,
	    wb, unmov;
	uint32_t lru[2], indexed, dirty_unqueued;
	uint32_t huge_pte, queued, partial; /* THPs: PTE-mapped frames, queued, partially mapped */
	uint32_t mthp, mthp_folios[MM_HPAGE_ORDER], mthp_partial[MM_HPAGE_ORDER]; /* mTHP frames */
	uint32_t shmem, shmem_huge; /* shared memory frames (shmem.c) */
};

static int fail(struct check *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct check *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (c->code)
		return c->code;
	c->code = code;
	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A free block (buddy or isolated by a free scanner) at pfn: returns its length. */
static uint32_t check_free_block(struct check *c, uint32_t pfn)
{
	struct mm *mm = c->mm;
	const struct mm_frame *f = pfn_frame(mm, pfn);
	unsigned order = frame_order(f);
	uint32_t n;

	if (order == ORDER_TAIL) {
		fail(c, -1, "pfn %u: free tail outside any free block", pfn);
		return 1;
	}
	n = 1U << order;
	if (order > MM_MAX_ORDER || pfn % n || pfn + n > mm->nr_frames) {
		fail(c, -2, "pfn %u: bad free block order %u", pfn, order);
		return 1;
	}
	for (uint32_t i = 1; i < n; i++) {
		const struct mm_frame *t = pfn_frame(mm, pfn + i);

		if (t->state != FS_FREE || frame_order(t) != ORDER_TAIL || (t->flags & FF_ISOLATED))
			fail(c, -3, "pfn %u: frame %u inside free block is not a free tail", pfn,
			     pfn + i);
	}
	if (f->flags & FF_ISOLATED) {
		c->isolated += n;
		c->isolated_free += n;
	} else {
		c->buddy_heads++;
		c->free_pages += n;
	}
	return n;
}

static uint32_t check_huge(struct check *c, uint32_t pfn)
{
	struct mm *mm = c->mm;
	uint64_t owner = pfn_frame(mm, pfn)->owner;

	if (pfn % MM_HPAGE_NR) {
		fail(c, -4, "pfn %u: huge extent not aligned", pfn);
		return 1;
	}
	const struct mm_frame *hf = pfn_frame(mm, pfn);
	uint32_t unmapped = 0;

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfn + i);
		uint8_t allowed = i ? FF_THP_UNMAPPED : FF_THP_MASK;

		if (f->state != FS_HUGE || f->owner != owner + i || (f->flags & ~allowed))
			fail(c, -5, "pfn %u: frame %u of huge extent inconsistent", pfn, pfn + i);
		unmapped += !!(f->flags & FF_THP_UNMAPPED);
	}
	if (unmapped != hf->hnext || unmapped >= MM_HPAGE_NR ||
	    (unmapped && !(hf->flags & FF_THP_PTE)) ||
	    ((hf->flags & FF_THP_PARTIAL) && !(hf->flags & FF_THP_QUEUED)))
		fail(c, -5, "pfn %u: THP with %u unmapped subpages (count %u), flags %#x", pfn,
		     unmapped, hf->hnext, hf->flags);
	c->huge += MM_HPAGE_NR;
	c->huge_pte += (hf->flags & FF_THP_PTE) ? MM_HPAGE_NR : 0;
	c->queued += !!(hf->flags & FF_THP_QUEUED);
	c->partial += !!(hf->flags & FF_THP_PARTIAL);
	return MM_HPAGE_NR;
}

/* An mTHP folio (mthp.c): aligned to its order, every frame FS_MTHP of that order with
 * consecutive owners, only the head queued (and then partially mapped), the unmapped pages
 * counted in the head's hnext, never all of them. Returns its length. */
static uint32_t check_mthp(struct check *c, uint32_t pfn)
{
	struct mm *mm = c->mm;
	const struct mm_frame *hf = pfn_frame(mm, pfn);
	unsigned order = mthp_order(hf);
	uint32_t n = 1U << order, unmapped = 0;

	if (order < MM_MTHP_MIN_ORDER || order >= MM_HPAGE_ORDER || pfn % n ||
	    pfn + n > mm->nr_frames) {
		fail(c, -27, "pfn %u: mTHP frame of order %u not at an aligned folio head", pfn,
		     order);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfn + i);
		uint8_t allowed = i ? FF_THP_UNMAPPED
				    : (uint8_t)(FF_THP_QUEUED | FF_THP_PARTIAL | FF_THP_UNMAPPED);

		if (f->state != FS_MTHP || mthp_order(f) != order || f->owner != hf->owner + i ||
		    (f->flags & ~allowed) || (i && f->hnext))
			fail(c, -28, "pfn %u: frame %u of an order-%u mTHP inconsistent", pfn,
			     pfn + i, order);
		unmapped += !!(f->flags & FF_THP_UNMAPPED);
	}
	if (unmapped != hf->hnext || unmapped >= n ||
	    !!(hf->flags & FF_THP_PARTIAL) != !!(hf->flags & FF_THP_QUEUED) ||
	    (unmapped && !(hf->flags & FF_THP_PARTIAL)) ||
	    ((hf->flags & FF_THP_PARTIAL) && !unmapped))
		fail(c, -28, "pfn %u: order-%u mTHP with %u unmapped pages (count %u), flags %#x",
		     pfn, order, unmapped, hf->hnext, hf->flags);
	c->mthp += n;
	c->mthp_folios[order]++;
	c->queued += !!(hf->flags & FF_THP_QUEUED);
	c->mthp_partial[order] += !!(hf->flags & FF_THP_PARTIAL);
	return n;
}

static void check_file(struct check *c, uint32_t pfn)
{
	struct mm *mm = c->mm;
	const struct mm_frame *f = pfn_frame(mm, pfn);

	c->file++;
	if (!(f->owner & MM_OWNER_FILE_BIT))
		fail(c, -6, "pfn %u: page cache frame without a file owner", pfn);
	if (!(f->flags & FF_GONE) && pc_lookup(mm, f->owner) != pfn)
		fail(c, -7, "pfn %u: page cache frame missing from the index", pfn);
	if (f->flags & FF_DIRTY) {
		c->dirty++;
		if (!(mm->dirty_queued[pfn / 64] & (1ULL << (pfn % 64))))
			c->dirty_unqueued++;
	}
	if (frame_under_wb(f))
		c->wb++;
	if (f->flags & FF_ISOLATED)
		c->isolated++;
	else if (!pc_off_lru(mm))
		c->lru[(f->flags & FF_ACTIVE) ? 1 : 0]++;
}

/* A shmem folio at pfn (its head: the order byte's alignment): every frame FS_SHMEM of the
 * same order, consecutive cookies of one object, each indexed, none isolated. Its length. */
static uint32_t check_shmem(struct check *c, uint32_t pfn)
{
	struct mm *mm = c->mm;
	const struct mm_frame *hf = pfn_frame(mm, pfn);
	unsigned order = frame_order(hf);
	uint32_t n = order <= MM_HPAGE_ORDER ? 1U << order : 1;

	if (order > MM_HPAGE_ORDER || order == 1 || pfn % n || pfn + n > mm->nr_frames ||
	    !MM_OWNER_IS_SHMEM(hf->owner) || MM_OWNER_FILE_INDEX(hf->owner) % n) {
		fail(c, -31, "pfn %u: bad shmem folio (order %u, owner %#llx)", pfn, order,
		     (unsigned long long)hf->owner);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfn + i);

		if (f->state != FS_SHMEM || frame_order(f) != order || f->owner != hf->owner + i ||
		    (f->flags & (FF_ISOLATED | FF_GONE)) || pc_lookup(mm, f->owner) != pfn + i) {
			fail(c, -32, "pfn %u: shmem folio frame %u inconsistent or not indexed",
			     pfn, i);
			return n;
		}
	}
	c->shmem += n;
	if (order == MM_HPAGE_ORDER)
		c->shmem_huge += n;
	return n;
}

/* The never-touched blocks: how many (max-order blocks), 0 if none are left. */
static uint32_t fresh_blocks(const struct mm *mm)
{
	return mm->fresh_pfn < mm->fresh_end ? (mm->fresh_end - mm->fresh_pfn) >> MM_MAX_ORDER : 0;
}

static void walk_frames(struct check *c)
{
	struct mm *mm = c->mm;

	for (uint32_t pfn = 0; pfn < mm->nr_frames && !c->code;) {
		const struct mm_frame *f = pfn_frame(mm, pfn);

		if (pfn == mm->fresh_pfn &&
		    fresh_blocks(mm)) { /* free max-order blocks, unwritten */
			c->buddy_heads += fresh_blocks(mm);
			c->free_pages += mm->fresh_end - mm->fresh_pfn;
			pfn = mm->fresh_end;
			continue;
		}
		switch (f->state) {
		case FS_FREE:
			pfn += check_free_block(c, pfn);
			continue;
		case FS_HUGE:
			pfn += check_huge(c, pfn);
			continue;
		case FS_MTHP:
			pfn += check_mthp(c, pfn);
			continue;
		case FS_ANON:
			if (f->owner & MM_OWNER_FOREIGN)
				c->foreign++;
			else
				c->anon++;
			if (f->flags & FF_ISOLATED)
				c->isolated++;
			break;
		case FS_FILE:
			check_file(c, pfn);
			break;
		case FS_UNMOVABLE:
			c->unmov++;
			break;
		case FS_SHMEM:
			pfn += check_shmem(c, pfn);
			continue;
		default:
			fail(c, -8, "pfn %u: bad state %u", pfn, f->state);
		}
		pfn++;
	}
}

/* Walk one circular list; verify each entry with ok(). Returns its length. */
static uint32_t walk_list(struct check *c, unsigned sent,
			  bool (*ok)(struct check *, uint32_t, unsigned), unsigned arg)
{
	struct mm *mm = c->mm;
	uint32_t head = sentinel(mm, sent), n = 0, prev = head;

	for (uint32_t p = pfn_frame(mm, head)->next; p != head;
	     prev = p, p = pfn_frame(mm, p)->next) {
		if (p >= mm->nr_frames || pfn_frame(mm, p)->prev != prev || ++n > mm->nr_frames) {
			fail(c, -9, "list %u corrupt near pfn %u", sent, p);
			return n;
		}
		if (!ok(c, p, arg))
			return n;
	}
	return n;
}

static bool free_entry_ok(struct check *c, uint32_t pfn, unsigned sent)
{
	const struct mm_frame *f = pfn_frame(c->mm, pfn);

	if (!frame_is_buddy(f) ||
	    free_list_of(c->mm, pfn, frame_order(f), frame_list_mt(f)) != sent) {
		fail(c, -10, "free list %u holds pfn %u which is not a matching buddy head", sent,
		     pfn);
		return false;
	}
	return true;
}

static bool lru_entry_ok(struct check *c, uint32_t pfn, unsigned active)
{
	const struct mm_frame *f = pfn_frame(c->mm, pfn);

	if (f->state != FS_FILE || (f->flags & FF_ISOLATED) || !!(f->flags & FF_ACTIVE) != active) {
		fail(c, -11, "LRU %u holds pfn %u which does not belong there", active, pfn);
		return false;
	}
	return true;
}

static bool queue_entry_ok(struct check *c, uint32_t pfn, unsigned unused)
{
	const struct mm_frame *f = pfn_frame(c->mm, pfn);

	(void)unused;
	if (!(f->state == FS_HUGE && pfn % MM_HPAGE_NR == 0) &&
	    !(f->state == FS_MTHP && mthp_head(f, pfn) == pfn))
		f = NULL;
	if (!f || !(f->flags & FF_THP_QUEUED)) {
		fail(c, -25, "the split queue holds pfn %u which is not a queued THP head", pfn);
		return false;
	}
	return true;
}

/* One zone's free lists (zi -1: the main zone) against its counters; adds to the totals. */
static void check_free_area(struct check *c, int zi, uint32_t *heads, uint32_t *pages)
{
	struct mm *mm = c->mm;
	const struct free_area *fa = zi < 0 ? &mm->area : &mm->lower[zi].area;
	uint32_t zpages = 0;

	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) {
		uint32_t per_order = 0;

		for (unsigned mt = 0; mt < MM_MT_NR; mt++) {
			unsigned sent =
			    zi < 0 ? SENT_FREE(o, mt) : SENT_LOWER_FREE((unsigned)zi, o, mt);
			uint32_t n = walk_list(c, sent, free_entry_ok, sent);

			if (zi < 0 && o == MM_MAX_ORDER &&
			    mt == MM_MT_MOVABLE) /* after its linked entries */
				n += fresh_blocks(mm);

			if (n != fa->nr_free_mt[o][mt])
				fail(c, -12, "order %u mt %u: %u blocks listed, counter says %u", o,
				     mt, n, fa->nr_free_mt[o][mt]);
			per_order += n;
		}
		if (per_order != fa->nr_free[o])
			fail(c, -13, "order %u: %u blocks listed, nr_free says %u", o, per_order,
			     fa->nr_free[o]);
		*heads += per_order;
		zpages += per_order << o;
	}
	if (zpages != fa->nr_free_pages)
		fail(c, -14, "free pages of zone %d: lists %u, counter %u", zi, zpages,
		     fa->nr_free_pages);
	*pages += zpages;
}

static void check_lists(struct check *c)
{
	struct mm *mm = c->mm;
	uint32_t heads = 0, pages = 0;

	for (int zi = -1; zi < (int)mm->nr_lower; zi++)
		check_free_area(c, zi, &heads, &pages);
	if (heads != c->buddy_heads || pages != c->free_pages)
		fail(c, -14, "free pages: lists %u, frames %u, counter %u", pages, c->free_pages,
		     node_free_pages(mm));
	for (unsigned a = 0; a < 2; a++) {
		uint32_t n = walk_list(c, a ? SENT_LRU_ACTIVE : SENT_LRU_INACTIVE, lru_entry_ok, a);

		if (n != c->lru[a] || n != mm->nr_lru[a])
			fail(c, -15, "LRU %u: listed %u, frames %u, counter %u", a, n, c->lru[a],
			     mm->nr_lru[a]);
	}
	if (walk_list(c, SENT_SPLIT_QUEUE, queue_entry_ok, 0) != c->queued)
		fail(c, -26, "the split queue does not list the %u queued THPs", c->queued);
}

static void check_index(struct check *c)
{
	struct mm *mm = c->mm;
	uint32_t queued = 0;

	/* never inserted into, never queued: zeroed memory, an empty index and an empty bitmap
	 * (a machine's 512 KiB of buckets, read, would be 128 shmem pages allocated at the end
	 * of every run without page-cache activity) */
	for (uint32_t b = 0; mm->pc_used && b <= mm->pc_hash_mask; b++) {
		for (uint32_t q = mm->pc_hash[b]; q; q = pfn_frame(mm, q - 1)->hnext) {
			uint32_t p = q - 1;
			const struct mm_frame *f = pfn_frame(mm, p);

			if (p >= mm->nr_frames || (f->state != FS_FILE && f->state != FS_SHMEM) ||
			    (f->flags & FF_GONE) || ++c->indexed > mm->nr_frames) {
				fail(c, -16, "page-cache index bucket %u holds a bad pfn %u", b, p);
				return;
			}
		}
	}
	for (uint32_t w = 0; mm->dq_used && w < (mm->nr_frames + 63) / 64; w++)
		queued += (uint32_t)__builtin_popcountll(mm->dirty_queued[w]);
	if (queued != mm->ring_len)
		fail(c, -17, "writeback ring holds %u entries, %u frames marked queued",
		     mm->ring_len, queued);
	if (c->dirty_unqueued)
		fail(c, -18, "%u dirty frames are not queued for writeback", c->dirty_unqueued);
}

static void check_counts(struct check *c)
{
	struct mm *mm = c->mm;

	if (c->huge_pte != mm->nr_huge_pte || c->queued != mm->nr_split_queue ||
	    c->partial != mm->nr_partially_mapped)
		fail(c, -24,
		     "PTE-mapped THP frames %u, queued %u, partial %u; counters %u / %u / %u",
		     c->huge_pte, c->queued, c->partial, mm->nr_huge_pte, mm->nr_split_queue,
		     mm->nr_partially_mapped);
	if (c->anon + c->huge + c->mthp != mm->nr_anon || c->huge != mm->nr_anon_huge ||
	    c->mthp != mm->nr_anon_mthp)
		fail(c, -19, "anon frames %u (+%u huge, +%u mTHP), counters %u / %u / %u", c->anon,
		     c->huge, c->mthp, mm->nr_anon, mm->nr_anon_huge, mm->nr_anon_mthp);
	for (unsigned o = MM_MTHP_MIN_ORDER; o < MM_HPAGE_ORDER; o++)
		if (c->mthp_folios[o] != mm->nr_mthp[o] ||
		    c->mthp_partial[o] != mm->nr_mthp_partial[o])
			fail(c, -29, "order-%u mTHPs %u (%u partially mapped), counters %u / %u", o,
			     c->mthp_folios[o], c->mthp_partial[o], mm->nr_mthp[o],
			     mm->nr_mthp_partial[o]);
	if (c->foreign != mm->nr_foreign || c->unmov != mm->nr_unmovable)
		fail(c, -20, "foreign %u unmovable %u, counters %u / %u", c->foreign, c->unmov,
		     mm->nr_foreign, mm->nr_unmovable);
	if (c->file != mm->nr_file || c->dirty != mm->nr_file_dirty ||
	    c->wb != mm->nr_file_writeback)
		fail(c, -21, "file %u dirty %u writeback %u, counters %u / %u / %u", c->file,
		     c->dirty, c->wb, mm->nr_file, mm->nr_file_dirty, mm->nr_file_writeback);
	if (c->shmem != mm->nr_shmem || c->shmem_huge != mm->nr_shmem_huge)
		fail(c, -33, "shmem frames %u (%u in PMD-size folios), counters %u / %u", c->shmem,
		     c->shmem_huge, mm->nr_shmem, mm->nr_shmem_huge);
	if (c->isolated != mm->nr_isolated || c->isolated_free != mm->nr_isolated_free)
		fail(c, -22, "isolated frames %u (%u free), counters %u / %u", c->isolated,
		     c->isolated_free, mm->nr_isolated, mm->nr_isolated_free);
	if (c->free_pages + c->isolated_free + c->anon + c->huge + c->mthp + c->foreign + c->file +
		c->unmov + c->shmem !=
	    mm->nr_frames)
		fail(c, -23, "frames lost or duplicated: %u accounted of %u",
		     c->free_pages + c->isolated_free + c->anon + c->huge + c->mthp + c->foreign +
			 c->file + c->unmov + c->shmem,
		     mm->nr_frames);
}

/* The free scanner's per-pageblock buddy counts agree with the frames (never-touched blocks:
 * none linked yet). No block of a lower zone is marked skipped: compaction runs on the main
 * zone only (zones.c), so the skip-bit flush, which clears the main zone's, clears all there
 * are. (6.12 and 6.1 mm/compaction.c reset_isolation_suitable walks every populated zone of
 * the node, each behind its own compact_blockskip_flush: a zone compaction never visits has
 * neither bits nor a request.) */
static void check_block_buddies(struct check *c)
{
	struct mm *mm = c->mm;

	for (uint32_t b = 0; b < mm->nr_blocks && !c->code; b++) {
		uint32_t start = b << MM_PAGEBLOCK_ORDER, end = start + MM_HPAGE_NR, n = 0;

		if (start < mm->zone_start_pfn && pageblock_skip(mm, start)) {
			fail(c, -34, "pageblock %u of a lower zone marked skipped", b);
			break;
		}

		if (end > mm->nr_frames)
			end = mm->nr_frames;
		if (!(start >= mm->fresh_pfn && start < mm->fresh_end))
			for (uint32_t pfn = start; pfn < end; pfn++)
				n += frame_is_buddy(pfn_frame(mm, pfn));
		if (n != mm->pb_nbuddy[b])
			fail(c, -31, "pageblock %u: %u buddy heads, counted %u", b, n,
			     mm->pb_nbuddy[b]);
	}
}

int mm_check(struct mm *mm, char *err, size_t errlen)
{
	struct check c = {.mm = mm, .err = err, .errlen = errlen};

	mm_lock(mm);
	if (mm->fresh_pfn < mm->fresh_end && (mm->fresh_pfn | mm->fresh_end) % (1U << MM_MAX_ORDER))
		fail(&c, -30, "never-touched blocks [%u, %u) not max-order aligned", mm->fresh_pfn,
		     mm->fresh_end);
	walk_frames(&c);
	if (!c.code)
		check_lists(&c);
	if (!c.code)
		check_index(&c);
	if (!c.code)
		check_counts(&c);
	if (!c.code)
		check_block_buddies(&c);
	mm_unlock(mm);
	if (!c.code && err && errlen)
		err[0] = '\0';
	return c.code;
}
