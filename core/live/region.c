/* Region table: the program's managed mappings, the emulated counterpart of its anon VMAs.
 *
 * Each region carries per-page and per-extent state bytes and the emulated frame behind each
 * page (the reverse of the kernel's rmap: mm stores an owner cookie per frame, the region stores
 * the frame per page). Lookups (handlers, by address; the migrate hook, by cookie) take the
 * table's read lock only long enough to find the region and take a reference; the program's
 * munmap/madvise/mremap change a region under its own `busy` write lock. Regions are freed when
 * the last reference goes, so a handler holding one never sees its metadata disappear.
 *
 * All memory here comes from raw mmap: nothing on these paths may call malloc, which an
 * allocator's own mmap call can reach.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <string.h>

#include "util/sys.h"

/* A cookie id is [process slot: 8 bits][generation: 6 bits][cookie slot: 16 bits]; shifted left
 * by 32 in an owner cookie it puts the process slot in bits 54..61 (MACHINE_OWNER_SLOT) and
 * stays below bit 62 (FILE/FOREIGN bits). */
#define CID_SLOT_BITS  16
#define CID_SLOT_MASK  ((1U << CID_SLOT_BITS) - 1)
#define CID_GEN_MASK   0x3fU
#define CID_PROC_SHIFT (MACHINE_OWNER_SLOT_SHIFT - 32)
#define CID_MASK       ((1U << (CID_PROC_SHIFT + 8)) - 1)

static void *meta_alloc(size_t len)
{
	long p = guard_vm_map(len, 0, MAP_NORESERVE, 0);

	return sys_is_err(p) ? NULL : (void *)p;
}

int uffd_table_init(struct uffd_table *t)
{
	pthread_rwlockattr_t a;
	size_t sorted_len = UFFD_REGION_SLOTS * sizeof(*t->sorted);
	size_t slots_len = UFFD_REGION_SLOTS * sizeof(*t->slots);
	size_t cid_len = UFFD_REGION_SLOTS * sizeof(*t->cids);

	memset(t, 0, sizeof(*t));
	t->sorted = meta_alloc(sorted_len);
	t->slots = meta_alloc(slots_len);
	t->cids = meta_alloc(cid_len);
	t->used = meta_alloc(UFFD_REGION_SLOTS);
	if (!t->sorted || !t->slots || !t->cids || !t->used)
		goto unmap_arrays;
	pthread_rwlockattr_init(&a);
	/* the program's munmap must not starve behind a stream of faults */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->lock, &a);
	pthread_rwlockattr_destroy(&a);
	return 0;

unmap_arrays:
	uffd_table_destroy(t);
	return -ENOMEM;
}

void uffd_table_destroy(struct uffd_table *t)
{
	for (unsigned i = 0; t->slots && t->used && i < UFFD_REGION_SLOTS; i++) {
		if (t->used[i] && t->slots[i].meta)
			guard_vm_unmap(t->slots[i].meta, t->slots[i].meta_len);
	}
	if (t->sorted)
		guard_vm_unmap(t->sorted, UFFD_REGION_SLOTS * sizeof(*t->sorted));
	if (t->slots)
		guard_vm_unmap(t->slots, UFFD_REGION_SLOTS * sizeof(*t->slots));
	if (t->cids)
		guard_vm_unmap(t->cids, UFFD_REGION_SLOTS * sizeof(*t->cids));
	if (t->used)
		guard_vm_unmap(t->used, UFFD_REGION_SLOTS);
	if (t->sorted || t->slots)
		pthread_rwlock_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* Index of the last region with lo <= addr, or -1 (caller holds the lock). */
static int sorted_find(const struct uffd_table *t, uintptr_t addr)
{
	int lo = 0, hi = (int)t->n - 1, ans = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (t->sorted[mid]->lo <= addr) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static void region_ref(struct uffd_region *r)
{
	__atomic_fetch_add(&r->refs, 1, __ATOMIC_RELAXED);
}

struct uffd_region *uffd_region_get(struct uffd_table *t, uintptr_t addr)
{
	struct uffd_region *r = NULL;
	int i;

	pthread_rwlock_rdlock(&t->lock);
	i = sorted_find(t, addr);
	if (i >= 0 && addr < t->sorted[i]->hi) {
		r = t->sorted[i];
		region_ref(r);
	}
	pthread_rwlock_unlock(&t->lock);
	return r;
}

struct uffd_region *uffd_region_by_cookie(struct uffd_table *t, uint64_t owner)
{
	uint32_t cid = (uint32_t)(owner >> 32) & CID_MASK;
	struct uffd_cid_slot *c = &t->cids[cid & CID_SLOT_MASK];
	struct uffd_region *r = NULL;

	if (owner & (MM_OWNER_FOREIGN | MM_OWNER_FILE_BIT))
		return NULL;
	if ((cid >> CID_PROC_SHIFT) != t->proc_slot) /* another process's page */
		return NULL;
	pthread_rwlock_rdlock(&t->lock);
	if (c->r && c->gen == ((cid >> CID_SLOT_BITS) & CID_GEN_MASK)) {
		r = c->r;
		region_ref(r);
	}
	pthread_rwlock_unlock(&t->lock);
	return r;
}

unsigned uffd_regions_overlapping(struct uffd_table *t, uintptr_t lo, uintptr_t hi,
				  struct uffd_region **out, unsigned max)
{
	unsigned n = 0;
	int i;

	pthread_rwlock_rdlock(&t->lock);
	i = sorted_find(t, lo);
	if (i < 0)
		i = 0;
	for (; i < (int)t->n && n < max; i++) {
		struct uffd_region *r = t->sorted[i];

		if (r->lo >= hi)
			break;
		if (r->hi <= lo)
			continue;
		region_ref(r);
		out[n++] = r;
	}
	pthread_rwlock_unlock(&t->lock);
	return n;
}

/* Free a dead region's slot and metadata (table lock held for writing). */
static void region_free_locked(struct uffd_table *t, struct uffd_region *r)
{
	struct uffd_cid_slot *c = &t->cids[r->cid & CID_SLOT_MASK];
	unsigned slot = (unsigned)(r - t->slots);

	if (c->r == r) {
		c->r = NULL;
		c->gen = (uint16_t)((c->gen + 1) & CID_GEN_MASK);
		if (!c->gen)
			c->gen = 1;
	}
	if (r->meta)
		guard_vm_unmap(r->meta, r->meta_len);
	pthread_rwlock_destroy(&r->busy);
	memset(r, 0, sizeof(*r));
	t->used[slot] = 0;
}

void uffd_region_put(struct uffd_table *t, struct uffd_region *r)
{
	if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_rwlock_wrlock(&t->lock);
	region_free_locked(t, r);
	pthread_rwlock_unlock(&t->lock);
}

static int slot_alloc_locked(struct uffd_table *t)
{
	for (unsigned k = 0; k < UFFD_REGION_SLOTS; k++) {
		unsigned i = (t->hint + k) % UFFD_REGION_SLOTS;

		if (!t->used[i]) {
			t->used[i] = 1;
			t->hint = i + 1;
			return (int)i;
		}
	}
	return -ENOSPC;
}

static int cid_alloc_locked(struct uffd_table *t, struct uffd_region *r, uint32_t *cid)
{
	struct uffd_cid_slot *c = t->cids;

	for (unsigned k = 0; k < UFFD_REGION_SLOTS; k++) {
		unsigned i = (t->cid_hint + k) % UFFD_REGION_SLOTS;

		if (!c[i].r) {
			if (!c[i].gen)
				c[i].gen = 1; /* cid 0 means "none" */
			c[i].r = r;
			t->cid_hint = i + 1;
			*cid = (t->proc_slot << CID_PROC_SHIFT) |
			       ((uint32_t)c[i].gen << CID_SLOT_BITS) | i;
			return 0;
		}
	}
	return -ENOSPC;
}

/* The four state arrays (core/addrspace's layout) in one mapping. */
static int region_meta_init(struct uffd_region *r)
{
	r->meta_len = (as_region_meta_size(&r->as) + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
	r->meta = meta_alloc(r->meta_len);
	if (!r->meta)
		return -ENOMEM;
	as_region_attach(&r->as, r->meta);
	return 0;
}

/* Insert r into the sorted array; -EEXIST if its span overlaps a neighbour's. */
static int sorted_insert_locked(struct uffd_table *t, struct uffd_region *r)
{
	int i = sorted_find(t, r->lo);

	if (i >= 0 && t->sorted[i]->hi > r->lo)
		return -EEXIST;
	if (i + 1 < (int)t->n && t->sorted[i + 1]->lo < r->hi)
		return -EEXIST;
	memmove(&t->sorted[i + 2], &t->sorted[i + 1], (t->n - (unsigned)(i + 1)) * sizeof(r));
	t->sorted[i + 1] = r;
	t->n++;
	return 0;
}

static void sorted_remove_locked(struct uffd_table *t, struct uffd_region *r)
{
	for (unsigned i = 0; i < t->n; i++) {
		if (t->sorted[i] == r) {
			memmove(&t->sorted[i], &t->sorted[i + 1], (t->n - i - 1) * sizeof(r));
			t->n--;
			return;
		}
	}
}

int uffd_region_create(struct uffd_table *t, uintptr_t lo, uintptr_t hi, int prot,
		       uint32_t keep_cid, bool insert, struct uffd_region **out)
{
	pthread_rwlockattr_t a;
	struct uffd_region *r;
	int slot, rc;

	pthread_rwlock_wrlock(&t->lock);
	slot = slot_alloc_locked(t);
	if (slot < 0) {
		rc = slot;
		goto unlock;
	}
	r = &t->slots[slot];
	memset(r, 0, sizeof(*r));
	rc = as_region_geometry(&r->as, lo, lo, hi);
	if (rc < 0)
		goto free_slot;
	r->prot = prot;
	r->refs = 1; /* the table's */
	rc = region_meta_init(r);
	if (rc < 0)
		goto free_slot;
	if (keep_cid) {
		r->cid = keep_cid;
		t->cids[keep_cid & CID_SLOT_MASK].r = r;
	} else {
		rc = cid_alloc_locked(t, r, &r->cid);
		if (rc < 0)
			goto free_meta;
	}
	if (insert) {
		rc = sorted_insert_locked(t, r);
		if (rc < 0)
			goto free_cid;
	} else {
		r->dead = 1; /* not findable until uffd_region_insert */
	}
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&r->busy, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_rwlock_unlock(&t->lock);
	*out = r;
	return 0;

free_cid:
	if (!keep_cid)
		t->cids[r->cid & CID_SLOT_MASK].r = NULL;
free_meta:
	guard_vm_unmap(r->meta, r->meta_len);
free_slot:
	memset(r, 0, sizeof(*r));
	t->used[slot] = 0;
unlock:
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

int uffd_region_insert(struct uffd_table *t, struct uffd_region *r)
{
	int rc;

	pthread_rwlock_wrlock(&t->lock);
	rc = sorted_insert_locked(t, r);
	if (rc == 0)
		__atomic_store_n(&r->dead, 0, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

void uffd_region_discard(struct uffd_table *t, struct uffd_region *r)
{
	uffd_region_put(t, r);
}

bool uffd_table_overlaps(struct uffd_table *t, uintptr_t lo, uintptr_t hi)
{
	bool hit = false;
	int i;

	pthread_rwlock_rdlock(&t->lock);
	i = sorted_find(t, hi - 1);
	if (i >= 0 && t->sorted[i]->hi > lo)
		hit = true;
	pthread_rwlock_unlock(&t->lock);
	return hit;
}

void uffd_region_remove(struct uffd_table *t, struct uffd_region *r)
{
	bool was_live;

	pthread_rwlock_wrlock(&t->lock);
	was_live = !r->dead;
	if (was_live) {
		sorted_remove_locked(t, r);
		__atomic_store_n(&r->dead, 1, __ATOMIC_RELEASE);
	}
	pthread_rwlock_unlock(&t->lock);
	if (was_live)
		uffd_region_put(t, r); /* the table's reference */
}

void uffd_region_trim(struct uffd_table *t, struct uffd_region *r)
{
	uintptr_t lo, hi;

	if (!as_trim_span(&r->as, &lo, &hi)) {
		uffd_region_remove(t, r);
		return;
	}
	pthread_rwlock_wrlock(&t->lock);
	r->lo = lo;
	r->hi = hi;
	pthread_rwlock_unlock(&t->lock);
}
