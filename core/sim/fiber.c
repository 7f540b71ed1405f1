/* Fibers for simulated actors: each actor (a faulting process, the writer, kswapd) runs on its
 * own stack so that a hook called deep inside mm (wait_writeback, migrate_anon) can suspend it
 * at that point and let other actors run in virtual time, the way a process sleeping in
 * wait_on_page_writeback() lets the rest of the machine run (the kernel's context_switch()).
 *
 * Method. Stacks are mmap'ed with a guard page. On x86_64 a switch saves the callee-saved
 * registers, MXCSR and the x87 control word on the old stack and restores them from the new one
 * (no signal-mask syscall, unlike swapcontext); elsewhere ucontext is used. Every switch is
 * announced to the sanitizers (ASan's fiber API keeps its view of stack bounds right, TSan's
 * keeps one clock per fiber), so the ASan and TSan builds run the simulator unmodified. Only one
 * fiber of an engine runs at a time; switching is explicit, never preemptive.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define FIBER_TSAN 1
#endif

#if defined(__x86_64__)
/* fiber_asm_switch(&from->sp, to->sp): push callee-saved state, swap stacks, pop, return. */
void fiber_asm_switch(void **save_sp, void *new_sp);
/* First code on a new stack: rbx holds the fiber, r12 the C entry point. */
void fiber_asm_start(void);
__asm__(".text\n"
	".globl fiber_asm_switch\n"
	".hidden fiber_asm_switch\n"
	".type fiber_asm_switch,@function\n"
	"fiber_asm_switch:\n"
	"	.cfi_startproc\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	subq $8, %rsp\n"
	"	stmxcsr (%rsp)\n"
	"	fnstcw 4(%rsp)\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	ldmxcsr (%rsp)\n"
	"	fldcw 4(%rsp)\n"
	"	addq $8, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size fiber_asm_switch, .-fiber_asm_switch\n"
	".globl fiber_asm_start\n"
	".hidden fiber_asm_start\n"
	".type fiber_asm_start,@function\n"
	"fiber_asm_start:\n"
	"	.cfi_startproc\n"
	"	.cfi_undefined rip\n" /* outermost frame for unwinders */
	"	movq %rbx, %rdi\n"
	"	callq *%r12\n"
	"	ud2\n"
	"	.cfi_endproc\n"
	".size fiber_asm_start, .-fiber_asm_start\n");
#endif

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

int fiber_host_init(struct fiber *host)
{
	host->stack = NULL;
	host->stack_size = 0;
	host->map_size = 0;
	host->bottom = NULL; /* learnt on the first switch away from it (ASan) */
	host->size = 0;
	host->from = NULL;
	host->asan_fake = NULL;
	host->tsan = NULL;
#ifdef FIBER_TSAN
	host->tsan = __tsan_get_current_fiber();
#endif
	return 0;
}

static void fiber_run(struct fiber *f)
{
	fiber_finish_switch(f);
	f->entry(f->entry_arg);
	/* Never returns here: entry ends with fiber_exit_to(). */
	__builtin_trap();
}

#if defined(__x86_64__)
static int fiber_make_context(struct fiber *f)
{
	uint64_t *sp = (uint64_t *)((char *)f->stack + f->stack_size);
	uint32_t csr[2];

	__asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
	/* After the switch pops 8 words and returns, rsp must be 16-byte aligned for the call
	 * in fiber_asm_start. */
	sp -= 2;			   /* alignment padding, keeps the top 16-aligned */
	*--sp = (uint64_t)fiber_asm_start; /* return address of the switch */
	*--sp = 0;			   /* rbp */
	*--sp = (uint64_t)f;		   /* rbx: the fiber */
	*--sp = (uint64_t)fiber_run;	   /* r12: entry */
	*--sp = 0;			   /* r13 */
	*--sp = 0;			   /* r14 */
	*--sp = 0;			   /* r15 */
	*--sp = (uint64_t)csr[0] | ((uint64_t)(csr[1] & 0xffff) << 32); /* MXCSR, x87 CW */
	f->sp = sp;
	return 0;
}

static void fiber_jump(struct fiber *from, struct fiber *to)
{
	fiber_asm_switch(&from->sp, to->sp);
}
#else
/* makecontext passes int arguments only: the fiber pointer travels split in two halves. */
static void fiber_trampoline(unsigned hi, unsigned lo)
{
	fiber_run((struct fiber *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}

/* getcontext() returns twice: keep it away from the caller's locals. */
__attribute__((noinline)) static int fiber_make_context(struct fiber *f)
{
	uintptr_t p = (uintptr_t)f;

	if (getcontext(&f->ctx) != 0)
		return -errno;
	f->ctx.uc_stack.ss_sp = f->stack;
	f->ctx.uc_stack.ss_size = f->stack_size;
	f->ctx.uc_link = NULL;
	makecontext(&f->ctx, (void (*)(void))fiber_trampoline, 2, (unsigned)(p >> 32),
		    (unsigned)(p & 0xffffffffu));
	return 0;
}

static void fiber_jump(struct fiber *from, struct fiber *to)
{
	swapcontext(&from->ctx, &to->ctx);
}
#endif

int fiber_create(struct fiber *f, size_t stack_size, void (*entry)(void *), void *arg)
{
	size_t pg = page_size();
	void *map;

	stack_size = (stack_size + pg - 1) & ~(pg - 1);
	map = mmap(NULL, stack_size + pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (map == MAP_FAILED)
		return -ENOMEM;
	if (mprotect(map, pg, PROT_NONE) != 0) /* guard page below the stack */
		goto out_unmap;
	f->stack = (char *)map + pg;
	f->stack_size = stack_size;
	f->map_size = stack_size + pg;
	f->bottom = f->stack;
	f->size = stack_size;
	f->from = NULL;
	f->entry = entry;
	f->entry_arg = arg;
	f->asan_fake = NULL;
	if (fiber_make_context(f) != 0)
		goto out_unmap;
	f->tsan = NULL;
#ifdef FIBER_TSAN
	f->tsan = __tsan_create_fiber(0);
#endif
	return 0;

out_unmap:
	munmap(map, stack_size + pg);
	f->stack = NULL;
	return -ENOMEM;
}

void fiber_destroy(struct fiber *f)
{
	if (!f->stack)
		return;
#ifdef FIBER_TSAN
	if (f->tsan)
		__tsan_destroy_fiber(f->tsan);
#endif
#ifdef FIBER_ASAN
	/* frames a fiber never returned from (it was switched away from for good) leave their
	 * redzones poisoned; a later stack mapped at the same address would inherit them */
	__asan_unpoison_memory_region(f->stack, f->stack_size);
#endif
	munmap((char *)f->stack - (f->map_size - f->stack_size), f->map_size);
	f->stack = NULL;
}

/* Called first thing on the stack just switched to. */
void fiber_finish_switch(struct fiber *to)
{
#ifdef FIBER_ASAN
	const void *bottom = NULL;
	size_t size = 0;

	__sanitizer_finish_switch_fiber(to->asan_fake, &bottom, &size);
	if (to->from && !to->from->bottom) {
		to->from->bottom = bottom;
		to->from->size = size;
	}
#else
	(void)to;
#endif
}

static void fiber_announce(struct fiber *from, struct fiber *to, bool from_exits)
{
	to->from = from;
#ifdef FIBER_ASAN
	__sanitizer_start_switch_fiber(from_exits ? NULL : &from->asan_fake, to->bottom, to->size);
#else
	(void)from_exits;
#endif
#ifdef FIBER_TSAN
	__tsan_switch_to_fiber(to->tsan, 0);
#endif
}

void fiber_switch(struct fiber *from, struct fiber *to)
{
	fiber_announce(from, to, false);
	fiber_jump(from, to);
	fiber_finish_switch(from);
}

void fiber_exit_to(struct fiber *from, struct fiber *to)
{
	fiber_announce(from, to, true);
	fiber_jump(from, to);
	__builtin_trap(); /* nobody switches back to a finished fiber */
}
