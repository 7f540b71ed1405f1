/* The class of a pfn from its /proc/kpageflags word, and the free blocks of a range.
 *
 * Flags: include/uapi/linux/kernel-page-flags.h (bits 0-26) and include/linux/
 * kernel-page-flags.h (32-42, "kernel hacking assistances"); what each means and when it is set:
 * Documentation/admin-guide/mm/pagemap.rst and fs/proc/page.c stable_page_flags(). Facts the
 * rules rest on (fs/proc/page.c, 6.12 and 6.18):
 *  - SLAB, LRU, ANON, ACTIVE, DIRTY, WRITEBACK, UNEVICTABLE, MLOCKED and THP are the folio's,
 *    so every page of a THP or a slab carries them; COMPOUND_HEAD / COMPOUND_TAIL mark its
 *    pages, which fixes the folio's order;
 *  - BUDDY: every page of a free block. The head is PageBuddy (its page type); the others
 *    are marked by stable_page_flags()'s "page_count(page) == 0 && is_free_buddy_page(page)"
 *    branch (read in 6.1's source; 6.17 moved it to snapshot_page(), mm/util.c set_ps_flags).
 *    pagemap.rst's "_only_ for the first page" predates that branch; a kernel that marks heads
 *    only is recognised by the counts (take.c), not by its version;
 *  - a pfn without an online memmap reads 0, not NOPAGE (kpage_read); a hole inside an online
 *    section is PG_reserved (init_unavailable_range);
 *  - pages on the per-cpu free lists, and kernel allocations without a page type, have no
 *    flags at all; and neither is mapped. /proc/kpagecount is the mapcount, not the refcount
 *    (6.1 kpagecount_read: page_mapcount, 0 for slab and typed pages; 6.12: the folio's
 *    folio_precise_page_mapcount), so it reads 0 for both: a pcp page (free_unref_page ->
 *    free_pages_prepare, 6.1 and 6.12 mm/page_alloc.c, clears every flag of
 *    PAGE_FLAGS_CHECK_AT_PREP and finds the page unmapped before free_unref_page_commit lists
 *    it) and, say, a vmalloc or pipe page (refcount 1, mapped nowhere in user space) read the
 *    same words. A page without flags that is mapped (a driver's page in a VM_MIXEDMAP) is
 *    kernel memory; the others are SNAP_FLAGLESS, the per-cpu free pages among them.
 */
#include <string.h>

#include "snapshot/snapshot.h"

/* Bit numbers (the kernel's, so the headers need not be installed where this builds). */
enum {
	KPF_DIRTY = 4,
	KPF_LRU = 5,
	KPF_ACTIVE = 6,
	KPF_SLAB = 7,
	KPF_WRITEBACK = 8,
	KPF_BUDDY = 10,
	KPF_ANON = 12,
	KPF_SWAPBACKED = 14,
	KPF_COMPOUND_HEAD = 15,
	KPF_COMPOUND_TAIL = 16,
	KPF_HUGE = 17,
	KPF_UNEVICTABLE = 18,
	KPF_HWPOISON = 19,
	KPF_NOPAGE = 20,
	KPF_THP = 22,
	KPF_IDLE = 25,
	KPF_RESERVED = 32,
	KPF_MLOCKED = 33,
	KPF_ARCH = 38,
	KPF_ARCH_2 = 41,
	KPF_ARCH_3 = 42,
};
#define BIT(n) (1ULL << (n))
/* Bits that say nothing about who owns a page (idle tracking, architecture bits). */
#define KPF_NO_OWNER (BIT(KPF_IDLE) | BIT(KPF_ARCH) | BIT(KPF_ARCH_2) | BIT(KPF_ARCH_3))

const char snap_class_letter[SNAP_NR_CLASSES] = {'F', 'A', 'U', 'C', 'D', 'W',
						 'S', 'K', 'H', 'R', 'Z'};
const char *const snap_class_name[SNAP_NR_CLASSES] = {
    "free", "anon",   "unevictable", "file",	 "file-dirty", "file-writeback",
    "slab", "kernel", "huge",	     "reserved", "flagless"};

static uint8_t file_class(uint64_t f)
{
	uint8_t c = SNAP_FILE;

	if (f & BIT(KPF_WRITEBACK))
		c = SNAP_FILE_WB;
	else if (f & BIT(KPF_DIRTY))
		c = SNAP_FILE_DIRTY;
	return (f & BIT(KPF_ACTIVE)) ? (uint8_t)(c | SNAP_ACTIVE) : c;
}

/* One page, its folio aside (huge is true for a page of a THP of order >= 9; mapcount is its
 * kpagecount). */
static uint8_t page_class(uint64_t f, uint64_t mapcount, bool huge)
{
	if (f & (BIT(KPF_NOPAGE) | BIT(KPF_RESERVED) | BIT(KPF_HWPOISON)))
		return SNAP_RESERVED;
	if (f & BIT(KPF_BUDDY))
		return SNAP_X_BUDDY;
	if (!(f & ~KPF_NO_OWNER))
		return mapcount ? SNAP_KERNEL : SNAP_X_ZERO;
	if (f & BIT(KPF_SLAB))
		return SNAP_SLAB;
	if (f & BIT(KPF_HUGE))
		return SNAP_HUGE;
	if (f & (BIT(KPF_UNEVICTABLE) | BIT(KPF_MLOCKED)))
		return SNAP_UNEVICTABLE;
	if (f & (BIT(KPF_ANON) | BIT(KPF_SWAPBACKED)))
		return huge && (f & BIT(KPF_ANON)) ? SNAP_HUGE : SNAP_ANON;
	if (f & BIT(KPF_LRU))
		return file_class(f);
	return SNAP_KERNEL;
}

/* The pages of the folio whose head is at i: the head and the tails after it. */
static uint64_t folio_len(const uint64_t *kpf, uint64_t n, uint64_t i)
{
	uint64_t j = i + 1;

	while (j < n && (kpf[j] & BIT(KPF_COMPOUND_TAIL)) && !(kpf[j] & BIT(KPF_COMPOUND_HEAD)))
		j++;
	return j - i;
}

void snap_kpf_classify(const uint64_t *kpf, const uint64_t *kpc, uint64_t n, uint8_t *out)
{
	for (uint64_t i = 0; i < n;) {
		uint64_t len = 1;
		bool huge = false;

		if ((kpf[i] & BIT(KPF_COMPOUND_HEAD)) && (kpf[i] & BIT(KPF_THP))) {
			len = folio_len(kpf, n, i);
			huge = len >= SNAP_PAGEBLOCK_NR;
		}
		for (uint64_t j = i; j < i + len; j++)
			out[j] = page_class(kpf[j], kpc ? kpc[j] : 0, huge);
		i += len;
	}
}

bool snap_buddy_all(uint64_t buddy_pages, const uint64_t buddyinfo[SNAP_NR_ORDERS])
{
	uint64_t blocks = 0, pages = 0;

	for (unsigned o = 0; o < SNAP_NR_ORDERS; o++) {
		blocks += buddyinfo[o];
		pages += buddyinfo[o] << o;
	}
	return (buddy_pages > pages ? buddy_pages - pages : pages - buddy_pages) <=
	       (buddy_pages > blocks ? buddy_pages - blocks : blocks - buddy_pages);
}

static void mark_free(uint8_t *pfn, uint64_t head, unsigned order)
{
	pfn[head] = SNAP_BYTE(SNAP_FREE, order);
	memset(pfn + head + 1, SNAP_BYTE(SNAP_FREE, SNAP_TAIL), (1ULL << order) - 1);
}

/* Every free page marked: each maximal run is the greedy aligned decomposition, the only one
 * in which no two free buddies of one order are left unmerged (__free_one_page's invariant). */
static void resolve_all(uint8_t *pfn, uint64_t n)
{
	for (uint64_t p = 0; p < n;) {
		uint64_t end = p;

		if (pfn[p] != SNAP_X_BUDDY) {
			p++;
			continue;
		}
		while (end < n && pfn[end] == SNAP_X_BUDDY)
			end++;
		while (p < end) {
			unsigned o = SNAP_MAX_ORDER;

			while (o && ((p & ((1ULL << o) - 1)) || p + (1ULL << o) > end))
				o--;
			mark_free(pfn, p, o);
			p += 1ULL << o;
		}
	}
}

/* Heads only: the largest order a head at p can have, its tails all without flags. */
static unsigned head_room(const uint8_t *pfn, uint64_t n, uint64_t p)
{
	unsigned o = 0;

	while (o < SNAP_MAX_ORDER && !(p & ((2ULL << o) - 1)) && p + (2ULL << o) <= n) {
		uint64_t q;

		for (q = p + (1ULL << o); q < p + (2ULL << o); q++)
			if (pfn[q] != SNAP_X_ZERO)
				return o;
		o++;
	}
	return o;
}

/* Heads only: a head's order is at most its room, and which heads have which order is not in
 * kpageflags. Orders go from the highest down to the heads with the least room that can take
 * them (an exact fit is the likeliest; any choice keeps the rest feasible), in pfn order, as
 * many as buddyinfo counts. One cursor per room: O(11 n). */
static uint64_t resolve_heads(uint8_t *pfn, uint64_t n, const uint64_t want[SNAP_NR_ORDERS])
{
	uint64_t cursor[SNAP_NR_ORDERS] = {0}, left = 0;

	for (uint64_t p = 0; p < n; p++)
		if (pfn[p] == SNAP_X_BUDDY)
			pfn[p] = SNAP_BYTE(SNAP_X_BUDDY, head_room(pfn, n, p));
	for (int o = SNAP_MAX_ORDER; o >= 0; o--) {
		uint64_t need = want[o];

		for (unsigned room = (unsigned)o; room <= SNAP_MAX_ORDER && need; room++) {
			uint64_t *p = &cursor[room];

			for (; *p < n && need; (*p)++)
				if (pfn[*p] == SNAP_BYTE(SNAP_X_BUDDY, room)) {
					mark_free(pfn, *p, (unsigned)o);
					need--;
				}
		}
	}
	for (uint64_t p = 0; p < n; p++)
		if ((pfn[p] & SNAP_CLASS_MASK) == SNAP_X_BUDDY) {
			mark_free(pfn, p, 0); /* buddyinfo moved meanwhile: the head at least */
			left++;
		}
	return left;
}

/* Pages without flags: a whole pageblock of them (or of holes) is memory the kernel has no
 * page for there (an offline section, memory not initialised yet: pagetypeinfo does not count
 * the block either), anything else flagless (per-cpu free pages and kernel memory). */
static void resolve_zero(uint8_t *pfn, uint64_t n)
{
	const uint8_t hole = SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE);

	for (uint64_t b = 0; b < n; b += SNAP_PAGEBLOCK_NR) {
		uint64_t zero = 0;

		for (uint64_t p = b; p < b + SNAP_PAGEBLOCK_NR; p++)
			zero += pfn[p] == SNAP_X_ZERO || pfn[p] == hole;
		for (uint64_t p = b; p < b + SNAP_PAGEBLOCK_NR; p++)
			if (pfn[p] == SNAP_X_ZERO)
				pfn[p] = zero == SNAP_PAGEBLOCK_NR ? hole : SNAP_FLAGLESS;
	}
}

uint64_t snap_resolve(uint8_t *pfn, uint64_t n, bool buddy_all, const uint64_t want[SNAP_NR_ORDERS])
{
	uint64_t left = 0;

	if (buddy_all)
		resolve_all(pfn, n);
	else
		left = resolve_heads(pfn, n, want);
	resolve_zero(pfn, n);
	return left;
}

void snap_count(const uint8_t *pfn, uint64_t n, struct snap_header *h)
{
	memset(h->classes, 0, sizeof(h->classes));
	memset(h->free_blocks, 0, sizeof(h->free_blocks));
	h->file_active = 0;
	for (uint64_t p = 0; p < n; p++) {
		unsigned c = pfn[p] & SNAP_CLASS_MASK, hi = pfn[p] >> 4;

		if (c >= SNAP_NR_CLASSES)
			continue;
		h->classes[c]++;
		if (c == SNAP_FREE && hi != SNAP_TAIL)
			h->free_blocks[hi]++;
		else if (c >= SNAP_FILE && c <= SNAP_FILE_WB && (pfn[p] & SNAP_ACTIVE))
			h->file_active++;
	}
}
