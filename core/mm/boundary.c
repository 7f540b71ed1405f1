/* The environment boundary: locking, time, cost charging, trace points and every other hook.
 *
 * mm/ is pure. Everything that touches the world goes through the hooks of struct mm_env, and
 * every hook call goes through env_of() here: the wrappers below make each optional hook safe to
 * call (NULL lock hooks mean a single-threaded driver, a NULL clock reads as time 0).
 *
 * A shared mm (mm_config.shared) lives in memory mapped at one address in several processes;
 * the function pointers and priv of an environment differ per process (ASLR), so such an mm
 * never reads mm->env: each process binds its own environment with mm_attach() in a small
 * process-global table keyed by the mm pointer (a fork child inherits the table with the rest
 * of the process image, which is right: same code, same priv addresses). A private mm uses
 * mm->env, as before.
 *
 * Lists of frames (the kernel's list_head through struct page) live here too: they are doubly
 * linked through the frame descriptors with sentinel heads.
 */
#include <errno.h>
#include <stdlib.h>

#include <string.h>

#include "mm/internal.h"

/* ---- Which environment: the mm's own, or this process's binding of a shared mm ------------ */

#define MM_MAX_SHARED 4 /* shared mms one process may have attached at once */
#define SLOT_CLAIMED  ((struct mm *)1)

static struct {
	struct mm *mm; /* NULL: free; SLOT_CLAIMED: being filled; else the bound mm */
	struct mm_env env;
	struct mm_hook_state hook; /* the policy plugin this process installed (fault.c) */
} bindings[MM_MAX_SHARED];

/* A shared mm this process has not attached: no lock, no hooks (a bug of the caller). */
static const struct mm_env_ops no_ops;
static const struct mm_env unbound = {.ops = &no_ops};

static const struct mm_env *shared_env(const struct mm *mm)
{
	for (unsigned i = 0; i < MM_MAX_SHARED; i++)
		if (__atomic_load_n(&bindings[i].mm, __ATOMIC_ACQUIRE) == mm)
			return &bindings[i].env;
	return &unbound;
}

static inline const struct mm_env *env_of(const struct mm *mm)
{
	if (__builtin_expect(!mm->cfg.shared, 1))
		return &mm->env;
	return shared_env(mm);
}

static int find_binding(const struct mm *mm)
{
	for (unsigned i = 0; i < MM_MAX_SHARED; i++)
		if (__atomic_load_n(&bindings[i].mm, __ATOMIC_ACQUIRE) == mm)
			return (int)i;
	return -1;
}

static int claim_binding(void)
{
	for (unsigned i = 0; i < MM_MAX_SHARED; i++) {
		struct mm *expect = NULL;

		if (__atomic_compare_exchange_n(&bindings[i].mm, &expect, SLOT_CLAIMED, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return (int)i;
	}
	return -1;
}

int mm_attach(struct mm *mm, const struct mm_env *env)
{
	int i;

	if (!mm || !env || !env->ops || !mm->cfg.shared)
		return -EINVAL;
	i = find_binding(mm);
	if (i < 0)
		i = claim_binding();
	if (i < 0)
		return -ENOSPC;
	bindings[i].env = *env;
	__atomic_store_n(&bindings[i].mm, mm, __ATOMIC_RELEASE);
	return 0;
}

struct mm_hook_state *mm_hook_state(struct mm *mm)
{
	int i;

	if (__builtin_expect(!mm->cfg.shared, 1))
		return &mm->hook_st;
	i = find_binding(mm);
	return i < 0 ? NULL : &bindings[i].hook;
}

void mm_detach(struct mm *mm)
{
	int i = mm ? find_binding(mm) : -1;

	if (i >= 0) {
		memset(&bindings[i].hook, 0, sizeof(bindings[i].hook));
		__atomic_store_n(&bindings[i].mm, NULL, __ATOMIC_RELEASE);
	}
}

/* ---- Metadata memory ------------------------------------------------------------------------ */

/* meta_alloc, or calloc without one; what meta_alloc gave goes back through meta_free (or
 * nowhere when it is NULL: memory carved from a segment that goes away whole). */
void *env_meta_alloc(const struct mm_env *env, size_t len)
{
	if (env->ops->meta_alloc)
		return env->ops->meta_alloc(env->priv, len);
	return calloc(1, len);
}

void env_meta_free(const struct mm_env *env, void *p, size_t len)
{
	if (!p)
		return;
	if (!env->ops->meta_alloc)
		free(p);
	else if (env->ops->meta_free)
		env->ops->meta_free(env->priv, p, len);
}

void *mm_meta_alloc(struct mm *mm, size_t len)
{
	return env_meta_alloc(env_of(mm), len);
}

void mm_meta_free(struct mm *mm, void *p, size_t len)
{
	env_meta_free(env_of(mm), p, len);
}

/* ---- The lock, the clock, costs, trace points ------------------------------------------------ */

/* mm_lock and mm_unlock (internal.h) when the mm may have a lock; mm_unlock has counted. */
void mm_lock_env(struct mm *mm)
{
	const struct mm_env *e = env_of(mm);

	if (e->ops->lock)
		e->ops->lock(e->priv);
}

void mm_unlock_env(struct mm *mm)
{
	const struct mm_env *e = env_of(mm);

	if (e->ops->unlock)
		e->ops->unlock(e->priv);
}

uint64_t mm_now(struct mm *mm, void *call)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->now ? e->ops->now(e->priv, call) : 0;
}

void mm_charge(struct mm *mm, void *call, enum mm_cost what, uint64_t n)
{
	const struct mm_env *e = env_of(mm);

	if (e->ops->alloc_cost && n)
		e->ops->alloc_cost(e->priv, call, what, n);
}

void mm_trace(struct mm *mm, void *call, enum mm_trace_kind kind, unsigned order, uint64_t a,
	      uint64_t b, uint64_t c, uint64_t d)
{
	const struct mm_env *e = env_of(mm);
	struct mm_trace ev = {.kind = kind, .order = order, .a = a, .b = b, .c = c, .d = d};

	if (e->ops->trace)
		e->ops->trace(e->priv, call, &ev);
}

/* ---- [unlocked] hooks: the caller has released the lock ------------------------------------ */

bool mm_has_wait_writeback(struct mm *mm)
{
	return env_of(mm)->ops->wait_writeback;
}

bool mm_has_writeout(struct mm *mm)
{
	return env_of(mm)->ops->writeout;
}

int mm_hook_wait_writeback(struct mm *mm, void *call, uint32_t pfn, uint64_t timeout_ns)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->wait_writeback ? e->ops->wait_writeback(e->priv, call, pfn, timeout_ns)
				      : -ETIMEDOUT;
}

int mm_hook_throttle(struct mm *mm, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
		     bool iff_congested)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->throttle ? e->ops->throttle(e->priv, call, kind, timeout_ns, iff_congested)
				: 0;
}

void mm_hook_waited(struct mm *mm, void *call, const struct mm_wait *w)
{
	const struct mm_env *e = env_of(mm);

	if (e->ops->waited)
		e->ops->waited(e->priv, call, w);
}

bool mm_hook_congested(struct mm *mm, void *call)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->congested && e->ops->congested(e->priv, call);
}

int mm_hook_writeout(struct mm *mm, void *call, uint64_t owner, uint32_t pfn)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->writeout ? e->ops->writeout(e->priv, call, owner, pfn) : -EBUSY;
}

int mm_hook_migrate_anon(struct mm *mm, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->migrate_anon ? e->ops->migrate_anon(e->priv, call, owner, from, to) : 0;
}

bool mm_has_migrate_anon_batch(struct mm *mm)
{
	return env_of(mm)->ops->migrate_anon_batch != NULL;
}

void mm_hook_migrate_anon_batch(struct mm *mm, void *call, unsigned n, const uint64_t *owner,
				const uint32_t *from, const uint32_t *to, int *ret)
{
	const struct mm_env *e = env_of(mm);

	e->ops->migrate_anon_batch(e->priv, call, n, owner, from, to, ret);
}

int mm_hook_copy_file_page(struct mm *mm, void *call, uint64_t owner, uint32_t from, uint32_t to)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->copy_file_page ? e->ops->copy_file_page(e->priv, call, owner, from, to) : 0;
}

uint64_t mm_hook_clear_huge(struct mm *mm, void *call, uint32_t head, uint64_t extent_owner)
{
	const struct mm_env *e = env_of(mm);

	return e->ops->clear_huge ? e->ops->clear_huge(e->priv, call, head, extent_owner) : 0;
}

void mm_hook_clear_folio(struct mm *mm, void *call, uint32_t head, unsigned order, uint64_t owner)
{
	const struct mm_env *e = env_of(mm);

	if (e->ops->clear_folio)
		e->ops->clear_folio(e->priv, call, head, order, owner);
}

int mm_hook_khugepaged_scan(struct mm *mm, void *call, uint32_t as_id, uint64_t *addr,
			    unsigned budget, bool *done)
{
	const struct mm_env *e = env_of(mm);

	if (!e->ops->khugepaged_scan)
		return -ENOENT;
	return e->ops->khugepaged_scan(e->priv, call, as_id, addr, budget, done);
}

bool mm_has_khugepaged_scan(struct mm *mm)
{
	return env_of(mm)->ops && env_of(mm)->ops->khugepaged_scan;
}

int mm_hook_split_underused(struct mm *mm, void *call, uint64_t extent_owner, uint32_t head)
{
	const struct mm_env *e = env_of(mm);

	if (!e->ops->split_underused)
		return 0;
	return e->ops->split_underused(e->priv, call, extent_owner, head);
}

/* Around an [unlocked] hook: the epoch before, and whether mm_repair ran meanwhile. */
uint64_t mm_unlock_for_hook(struct mm *mm)
{
	uint64_t epoch = mm->epoch;

	mm_unlock(mm);
	return epoch;
}

bool mm_relock_after_hook(struct mm *mm, uint64_t epoch)
{
	mm_lock(mm);
	return mm->epoch == epoch;
}

/* ---- Lists ------------------------------------------------------------------------------- */

void flist_init(struct mm *mm, uint32_t head)
{
	mm->frames[head].next = head;
	mm->frames[head].prev = head;
}

static void flist_insert(struct mm *mm, uint32_t pfn, uint32_t prev, uint32_t next)
{
	mm->frames[pfn].prev = prev;
	mm->frames[pfn].next = next;
	mm->frames[prev].next = pfn;
	mm->frames[next].prev = pfn;
}

void flist_add(struct mm *mm, uint32_t head, uint32_t pfn)
{
	flist_insert(mm, pfn, head, mm->frames[head].next);
}

void flist_add_tail(struct mm *mm, uint32_t head, uint32_t pfn)
{
	flist_insert(mm, pfn, mm->frames[head].prev, head);
}

/* Turn the circular list so that pfn is its first (or last) entry, the order otherwise kept:
 * the head moves to just before (after) pfn. */
void flist_rotate_first(struct mm *mm, uint32_t head, uint32_t pfn)
{
	if (mm->frames[head].next == pfn)
		return;
	flist_del(mm, head);
	flist_insert(mm, head, mm->frames[pfn].prev, pfn);
}

void flist_rotate_last(struct mm *mm, uint32_t head, uint32_t pfn)
{
	if (mm->frames[head].prev == pfn)
		return;
	flist_del(mm, head);
	flist_insert(mm, head, pfn, mm->frames[pfn].next);
}

void flist_cut(struct mm *mm, uint32_t first, uint32_t last)
{
	uint32_t before = mm->frames[first].prev, after = mm->frames[last].next;

	mm->frames[before].next = after;
	mm->frames[after].prev = before;
	mm->frames[first].prev = mm->frames[last].next = MM_NO_PFN;
}

void flist_splice(struct mm *mm, uint32_t head, uint32_t first, uint32_t last)
{
	uint32_t next = mm->frames[head].next;

	mm->frames[first].prev = head;
	mm->frames[last].next = next;
	mm->frames[head].next = first;
	mm->frames[next].prev = last;
}

void flist_del(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = &mm->frames[pfn];

	mm->frames[f->prev].next = f->next;
	mm->frames[f->next].prev = f->prev;
	f->next = f->prev = MM_NO_PFN;
}

void fault_step(struct fault_ctx *fc, enum mm_step step, unsigned result)
{
	struct mm_fault_rec *rec = fc ? fc->rec : NULL;

	if (!rec || rec->nsteps >= MM_FAULT_MAX_STEPS)
		return;
	rec->steps[rec->nsteps].step = (uint8_t)step;
	rec->steps[rec->nsteps].result = (uint8_t)result;
	rec->nsteps++;
}
