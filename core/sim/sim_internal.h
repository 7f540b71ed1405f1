/* Internal declarations of core/sim shared between its files (not for other modules). */
#ifndef THPEMU_SIM_INTERNAL_H
#define THPEMU_SIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <ucontext.h>

#include "sim/sim.h"

/* ---- fiber.c: stacks and context switches ------------------------------------------------ */

struct fiber {
#if defined(__x86_64__)
	void *sp; /* saved stack pointer while switched away */
#else
	ucontext_t ctx;
#endif
	void *stack;	    /* usable stack (above the guard page); NULL for the host thread */
	size_t stack_size;  /* usable bytes */
	size_t map_size;    /* bytes mapped including the guard page */
	const void *bottom; /* stack bounds announced to ASan; for the host learnt on first use */
	size_t size;
	struct fiber *from;    /* the fiber that last switched to this one */
	void *asan_fake;       /* ASan fake-stack handle saved while switched away */
	void *tsan;	       /* TSan fiber context */
	void (*entry)(void *); /* first function run on the stack; must end with fiber_exit_to */
	void *entry_arg;
};

/* Describe the calling thread's own stack (the scheduler's). */
int fiber_host_init(struct fiber *host);
/* Map a stack of stack_size bytes plus a guard page and prepare entry(arg) to run on it. */
int fiber_create(struct fiber *f, size_t stack_size, void (*entry)(void *), void *arg);
/* Unmap the stack of a fiber that is not running (finished or abandoned). */
void fiber_destroy(struct fiber *f);
/* Save the running context in from and continue in to; returns when someone switches back. */
void fiber_switch(struct fiber *from, struct fiber *to);
/* Leave a finished fiber for good. */
__attribute__((noreturn)) void fiber_exit_to(struct fiber *from, struct fiber *to);
void fiber_finish_switch(struct fiber *to);

#endif
