/* The environment boundary: locking, time, cost charging and trace points.
 *
 * mm/ is pure. Everything that touches the world goes through the hooks of struct mm_env; these
 * wrappers make each optional hook safe to call (NULL lock hooks mean a single-threaded driver,
 * a NULL clock reads as time 0). Lists of frames (the kernel's list_head through struct page)
 * live here too: they are doubly linked through the frame descriptors with sentinel heads.
 */
#include "mm/internal.h"

void mm_lock(struct mm *mm)
{
	if (mm->env.ops->lock)
		mm->env.ops->lock(mm->env.priv);
}

void mm_unlock(struct mm *mm)
{
	if (mm->env.ops->unlock)
		mm->env.ops->unlock(mm->env.priv);
}

uint64_t mm_now(struct mm *mm, void *call)
{
	return mm->env.ops->now ? mm->env.ops->now(mm->env.priv, call) : 0;
}

void mm_charge(struct mm *mm, void *call, enum mm_cost what, uint64_t n)
{
	if (mm->env.ops->alloc_cost && n)
		mm->env.ops->alloc_cost(mm->env.priv, call, what, n);
}

void mm_trace(struct mm *mm, void *call, enum mm_trace_kind kind, unsigned order, uint64_t a,
	      uint64_t b, uint64_t c, uint64_t d)
{
	struct mm_trace ev = {.kind = kind, .order = order, .a = a, .b = b, .c = c, .d = d};

	if (mm->env.ops->trace)
		mm->env.ops->trace(mm->env.priv, call, &ev);
}

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
