/* Pageblock migratetypes of a snapshot.
 *
 * No file gives a pageblock's type: /proc/pagetypeinfo has only the number of blocks of each
 * type per zone and the free blocks per type and order (/sys/kernel/debug/page_owner needs a
 * kernel booted with page_owner=on, which a production machine or a stock guest is not). So the
 * types are inferred, to match those counts:
 *
 *  1. how many: pagetypeinfo's counts (HIGHATOMIC counted as UNMOVABLE, CMA and ISOLATE as
 *     MOVABLE: the pool has neither), scaled to the blocks that are not holes (no page there, or
 *     not the zone's: pagetypeinfo_showblockcount_print skips them, pfn_to_online_page or
 *     page_zone failing);
 *  2. which: the blocks with the most kernel and slab pages are not MOVABLE (an unmovable
 *     allocation takes its own type's blocks first, and steals whole blocks when it falls back:
 *     mm/page_alloc.c __rmqueue_fallback); of those the most slab-heavy are RECLAIMABLE
 *     (reclaimable slab caches are the bulk of slab on most machines) and the rest UNMOVABLE;
 *  3. then swaps of two blocks' types while they bring the free pages per type and order closer
 *     to pagetypeinfo's (a block without free pages is swapped in by its classes). Since 6.10 a
 * free block sits on its pageblock's list (move_freepages_block moves a block's free pages with its
 * type), so there those counts constrain the types exactly; before, free pages can sit on another
 * type's list.
 *
 * The error is in the header: free pages per type and order that still differ from
 * pagetypeinfo's (mt_free_error, half the L1 distance in pages: each misplaced page counts
 * once), and pages whose class disagrees with their block's type (mt_mixed: kernel or slab
 * pages in MOVABLE blocks, movable pages in the others), which real zones have too.
 * Holes are UNMOVABLE: nothing moves there, and the pool's scanners pass them as an UNMOVABLE
 * block (the kernel skips a hole: pageblock_pfn_to_page).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"

#define SWAP_ROUNDS 512 /* bound on step 3 */
#define SWAP_CAND   8	/* best single moves looked at per side */

const char snap_mt_letter[SNAP_MT_NR] = {'U', 'M', 'R'};

struct block {
	uint64_t idx;
	uint32_t kernel, slab, movable, holes;
	uint32_t free[SNAP_NR_ORDERS]; /* free blocks headed here */
	bool has_free;
};

struct infer {
	struct block *b;
	uint64_t nb;
	uint8_t *mt;				  /* per block of the range */
	int64_t want[SNAP_MT_NR][SNAP_NR_ORDERS]; /* pagetypeinfo's free blocks, folded */
	int64_t have[SNAP_MT_NR][SNAP_NR_ORDERS]; /* the assignment's */
	uint64_t target[SNAP_MT_NR];
};

static void block_stats(const uint8_t *pfn, uint64_t idx, struct block *b)
{
	memset(b, 0, sizeof(*b));
	b->idx = idx;
	for (uint64_t p = idx * SNAP_PAGEBLOCK_NR; p < (idx + 1) * SNAP_PAGEBLOCK_NR; p++) {
		unsigned c = pfn[p] & SNAP_CLASS_MASK, hi = pfn[p] >> 4;

		if (c == SNAP_KERNEL || c == SNAP_FLAGLESS)
			b->kernel++;
		else if (c == SNAP_SLAB)
			b->slab++;
		else if (c == SNAP_RESERVED)
			b->holes += hi == SNAP_HOLE;
		else if (c != SNAP_FREE)
			b->movable++;
		else if (hi != SNAP_TAIL) {
			b->free[hi]++;
			b->has_free = true;
		}
	}
}

static unsigned fold(unsigned pti)
{
	if (pti == SNAP_PTI_UNMOVABLE || pti == SNAP_PTI_HIGHATOMIC)
		return SNAP_MT_UNMOVABLE;
	return pti == SNAP_PTI_RECLAIMABLE ? SNAP_MT_RECLAIMABLE : SNAP_MT_MOVABLE;
}

/* Step 1: how many blocks of each type, scaled to nb. */
static void targets(struct infer *in, const struct snap_header *h)
{
	uint64_t t[SNAP_MT_NR] = {0}, total = 0;

	for (unsigned p = 0; p < SNAP_PTI_NR; p++) {
		t[fold(p)] += h->pti_blocks[p];
		total += h->pti_blocks[p];
		for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
			in->want[fold(p)][o] += (int64_t)h->pti_free[p][o];
	}
	if (!total)
		total = t[SNAP_MT_MOVABLE] = 1;
	in->target[SNAP_MT_UNMOVABLE] = (t[SNAP_MT_UNMOVABLE] * in->nb + total / 2) / total;
	in->target[SNAP_MT_RECLAIMABLE] = (t[SNAP_MT_RECLAIMABLE] * in->nb + total / 2) / total;
	if (in->target[SNAP_MT_UNMOVABLE] > in->nb)
		in->target[SNAP_MT_UNMOVABLE] = in->nb;
	if (in->target[SNAP_MT_RECLAIMABLE] > in->nb - in->target[SNAP_MT_UNMOVABLE])
		in->target[SNAP_MT_RECLAIMABLE] = in->nb - in->target[SNAP_MT_UNMOVABLE];
	in->target[SNAP_MT_MOVABLE] =
	    in->nb - in->target[SNAP_MT_UNMOVABLE] - in->target[SNAP_MT_RECLAIMABLE];
}

static int by_unmovable(const void *x, const void *y)
{
	const struct block *a = x, *b = y;
	uint32_t ka = a->kernel + a->slab, kb = b->kernel + b->slab;

	if (ka != kb)
		return ka > kb ? -1 : 1;
	return a->idx < b->idx ? -1 : 1;
}

/* slab / (kernel + slab), compared without division. */
static int by_slab_share(const void *x, const void *y)
{
	const struct block *a = x, *b = y;
	uint64_t l = (uint64_t)a->slab * (b->kernel + b->slab);
	uint64_t r = (uint64_t)b->slab * (a->kernel + a->slab);

	if (l != r)
		return l > r ? -1 : 1;
	return a->idx < b->idx ? -1 : 1;
}

static int by_index(const void *x, const void *y)
{
	const struct block *a = x, *b = y;

	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Step 2. */
static void assign_by_class(struct infer *in)
{
	uint64_t nonmov = in->target[SNAP_MT_UNMOVABLE] + in->target[SNAP_MT_RECLAIMABLE];

	qsort(in->b, in->nb, sizeof(*in->b), by_unmovable);
	qsort(in->b, nonmov, sizeof(*in->b), by_slab_share);
	for (uint64_t i = 0; i < in->nb; i++) {
		uint8_t mt = SNAP_MT_MOVABLE;

		if (i < in->target[SNAP_MT_RECLAIMABLE])
			mt = SNAP_MT_RECLAIMABLE;
		else if (i < nonmov)
			mt = SNAP_MT_UNMOVABLE;
		in->mt[in->b[i].idx] = mt;
	}
	qsort(in->b, in->nb, sizeof(*in->b), by_index);
}

static void tally(struct infer *in)
{
	memset(in->have, 0, sizeof(in->have));
	for (uint64_t i = 0; i < in->nb; i++)
		for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
			in->have[in->mt[in->b[i].idx]][o] += in->b[i].free[o];
}

static int64_t cell(const struct infer *in, unsigned t, unsigned o, int64_t d)
{
	int64_t v = in->have[t][o] + d - in->want[t][o];

	return (v < 0 ? -v : v) << o;
}

/* The change of the error if block a (type ta) became type tb and block b (type tb, may be
 * NULL) type ta. */
static int64_t swap_delta(const struct infer *in, const struct block *a, const struct block *b,
			  unsigned ta, unsigned tb)
{
	int64_t d = 0;

	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++) {
		int64_t m = (int64_t)a->free[o] - (b ? (int64_t)b->free[o] : 0);

		if (!m)
			continue;
		d += cell(in, ta, o, -m) - cell(in, ta, o, 0);
		d += cell(in, tb, o, m) - cell(in, tb, o, 0);
	}
	return d;
}

/* How well block b fits type u by its classes (higher: better). */
static int64_t class_fit(const struct block *b, unsigned u)
{
	int64_t k = (int64_t)b->kernel + b->slab;

	return u == SNAP_MT_MOVABLE ? -k : k;
}

/* The SWAP_CAND blocks of type t with free pages whose single move to u helps most (or hurts
 * least), and the block without free pages that fits u best by its classes (its move changes
 * nothing on the free lists). */
static unsigned candidates(const struct infer *in, unsigned t, unsigned u, uint64_t *out)
{
	int64_t best[SWAP_CAND], fit = 0;
	unsigned n = 0;
	uint64_t idle = UINT64_MAX;

	for (uint64_t i = 0; i < in->nb; i++) {
		const struct block *b = &in->b[i];
		int64_t d;
		unsigned k;

		if (in->mt[b->idx] != t)
			continue;
		if (!b->has_free) {
			if (idle == UINT64_MAX || class_fit(b, u) > fit) {
				idle = i;
				fit = class_fit(b, u);
			}
			continue;
		}
		d = swap_delta(in, b, NULL, t, u);
		if (n == SWAP_CAND && d >= best[n - 1])
			continue;
		k = n < SWAP_CAND ? n++ : n - 1;
		for (; k > 0 && best[k - 1] > d; k--) {
			best[k] = best[k - 1];
			out[k] = out[k - 1];
		}
		best[k] = d;
		out[k] = i;
	}
	if (idle != UINT64_MAX)
		out[n++] = idle;
	return n;
}

/* Step 3: one best swap of two types' blocks, if it lowers the error. */
static bool improve(struct infer *in)
{
	int64_t best = 0;
	uint64_t ba = 0, bb = 0;

	for (unsigned t = 0; t < SNAP_MT_NR; t++)
		for (unsigned u = t + 1; u < SNAP_MT_NR; u++) {
			uint64_t ca[SWAP_CAND + 1], cb[SWAP_CAND + 1];
			unsigned na = candidates(in, t, u, ca), nb = candidates(in, u, t, cb);

			for (unsigned i = 0; i < na; i++)
				for (unsigned j = 0; j < nb; j++) {
					int64_t d =
					    swap_delta(in, &in->b[ca[i]], &in->b[cb[j]], t, u);

					if (d < best) {
						best = d;
						ba = ca[i];
						bb = cb[j];
					}
				}
		}
	if (!best)
		return false;
	{
		uint8_t t = in->mt[in->b[ba].idx];

		in->mt[in->b[ba].idx] = in->mt[in->b[bb].idx];
		in->mt[in->b[bb].idx] = t;
	}
	tally(in);
	return true;
}

static void errors(struct infer *in, struct snap_header *h)
{
	uint64_t err = 0, mixed = 0;

	for (unsigned t = 0; t < SNAP_MT_NR; t++)
		for (unsigned o = 0; o < SNAP_NR_ORDERS; o++)
			err += (uint64_t)cell(in, t, o, 0);
	memset(h->mt_blocks, 0, sizeof(h->mt_blocks));
	for (uint64_t i = 0; i < in->nb; i++) {
		const struct block *b = &in->b[i];
		unsigned t = in->mt[b->idx];

		h->mt_blocks[t]++;
		mixed += t == SNAP_MT_MOVABLE ? b->kernel + b->slab : b->movable;
	}
	h->mt_free_error = h->have_pti ? err / 2 : 0;
	h->mt_mixed = mixed;
}

int snap_mtype_infer(const uint8_t *pfn, uint64_t n, struct snap_header *h, uint8_t *mt)
{
	struct infer in = {.mt = mt};
	uint64_t nblocks = n / SNAP_PAGEBLOCK_NR;

	in.b = calloc(nblocks ? nblocks : 1, sizeof(*in.b));
	if (!in.b)
		return -ENOMEM;
	for (uint64_t i = 0; i < nblocks; i++) {
		block_stats(pfn, i, &in.b[in.nb]);
		mt[i] = SNAP_MT_UNMOVABLE; /* a hole */
		if (in.b[in.nb].holes < SNAP_PAGEBLOCK_NR)
			in.nb++;
	}
	if (h->have_pti) {
		targets(&in, h);
		assign_by_class(&in);
		tally(&in);
		for (unsigned r = 0; r < SWAP_ROUNDS && improve(&in); r++)
			;
	} else {
		for (uint64_t i = 0; i < in.nb; i++)
			mt[in.b[i].idx] = SNAP_MT_MOVABLE;
		tally(&in);
	}
	errors(&in, h);
	free(in.b);
	return 0;
}
