/* A program to look at with a debugger: it maps 8 MiB (a mapping the emulator manages), touches
 * none of it, and calls stop_here(p) with p inside it; a debugger stopped there reads and writes
 * *p (natively: 0, then what it wrote); the program then prints what it finds at p. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

__attribute__((noinline)) void stop_here(volatile uint64_t *p);

__attribute__((noinline)) void stop_here(volatile uint64_t *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
	uint64_t *p =
	    mmap(NULL, 8UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 1;
	p += (4UL << 20) / sizeof(*p); /* in the middle, never touched */
	stop_here(p);
	printf("value at p: %llu\n", (unsigned long long)*p);
	return 0;
}
