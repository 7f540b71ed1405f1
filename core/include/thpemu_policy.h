/* thpemu_policy.h - THP policy plugins: the versioned C ABI.
 *
 * A policy plugin is a shared object that exports one symbol,
 *
 *     const struct thpemu_policy_v1 thpemu_policy = { .abi_version = THPEMU_POLICY_ABI_VERSION,
 *                                                     .name = "...", .select_orders = ... };
 *
 * and lets a policy author try a THP order-selection idea without editing core/mm: the
 * userspace analogue of Yafang Shao's BPF RFC "mm, bpf: BPF based THP order selection" (2025,
 * its get_suggested_order hook; v6, the struct_ops version, was posted to linux-mm in Aug 2025).
 *
 * Where the hook sits (Linux 6.12): an anonymous write fault reaches
 * mm/memory.c do_anonymous_page -> alloc_anon_folio, which asks mm/huge_memory.c
 * thp_vma_allowable_orders for the orders the per-size settings allow, keeps the ones
 * naturally aligned inside the VMA with every PTE none, and tries them highest first; a PMD
 * fault (mm/huge_memory.c do_huge_pmd_anonymous_page) comes before it. thpemu's core/mm
 * (mm_fault in core/mm/fault.c) asks select_orders at that point, before either allocation:
 * the plugin's list replaces both the PMD decision and alloc_anon_folio's order list.
 *
 * Loading: policy spec key plugin=PATH (thpemu run/sim/ab/replay and THPEMU_POLICY), the
 * --policy-plugin FILE.so option of run and sim (shorthand for the key), or the environment
 * variable THPEMU_POLICY_PLUGIN. A PATH without '/' that is no file in the current directory names
 * an installed plugin: NAME or NAME.so in PREFIX/lib/thpemu/plugins (build/plugins in a build
 * tree), found relative to thpemu itself. Build a plugin against an installed thpemu with
 * `cc -shared -fPIC $(pkg-config --cflags thpemu) -o mine.so mine.c`. thpemu dlopen()s the file
 * with RTLD_NOW|RTLD_LOCAL outside core/mm and checks abi_version; a plugin that cannot be loaded
 * is an error (exit 2) on the command line, and under a bare LD_PRELOAD the program runs under the
 * built-in policy after one stderr line. An optional init(args) runs once after loading (args: the
 * text after '?' in plugin=PATH?ARGS, else NULL); nonzero refuses the plugin.
 *
 * Rules of the hooks (the fault path's rules): they run inside mm_fault with mm's lock held, in
 * the faulting thread (live: a fault handler thread while the program waits). No malloc, no
 * locks, no blocking, no system calls, no I/O, no calls back into thpemu. Keep them short:
 * one call longer than THPEMU_POLICY_OVERTIME_NS (measured on mm's clock, so live only) is
 * reported once and counted (plugin_overtime). State a plugin keeps must be its own and safe
 * for concurrent calls from several handler threads (calls are serialised by mm's lock, but a
 * machine's processes each load their own copy).
 *
 * A plugin may choose any *possible* order (bit set in in->possible_orders), also one the
 * settings do not allow (the plugin is the policy). Anything else is nonsense - an order not
 * possible, > 9, 1, repeated, or a count above max - and the fault takes the built-in decision;
 * the first nonsense is reported (one line) and every one counted (plugin_errors).
 */
#ifndef THPEMU_POLICY_H
#define THPEMU_POLICY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define THPEMU_POLICY_ABI_VERSION  1
#define THPEMU_POLICY_SYMBOL	   "thpemu_policy"
#define THPEMU_POLICY_MAX_ORDER	   9	    /* PMD order (2 MiB) */
#define THPEMU_POLICY_NR_ORDERS	   11	    /* nr_free[0..10] (MAX_ORDER 10, 4 MiB blocks) */
#define THPEMU_POLICY_OVERTIME_NS  50000ULL /* a hook call above this is "overtime" */
#define THPEMU_POLICY_STALL_WINDOW 16	    /* faults in recent_stall_ns */

enum thpemu_advice {
	THPEMU_ADVICE_NONE = 0,	      /* no madvise on the region */
	THPEMU_ADVICE_HUGEPAGE = 1,   /* MADV_HUGEPAGE */
	THPEMU_ADVICE_NOHUGEPAGE = 2, /* MADV_NOHUGEPAGE */
};

/* What a fault looks like to the plugin. Read only; valid during the call. New fields are
 * only ever appended (size says how many bytes are valid; check it before reading a field a
 * later version added). */
struct thpemu_fault_info {
	uint32_t size;		  /* sizeof(struct thpemu_fault_info) of the caller */
	uint32_t advice;	  /* enum thpemu_advice of the region (VMA) */
	uint64_t addr;		  /* faulting address (emulated; 0 when unknown) */
	uint64_t region_start;	  /* the region (VMA) around it; 0/0 when unknown */
	uint64_t region_len;	  /* bytes */
	uint32_t possible_orders; /* bit k: a folio of order k may be mapped here. 0 always;
				   * 9 when the 2 MiB extent is aligned, inside the region and
				   * empty; 2..8 when that block is inside and all its PTEs
				   * are none (write faults of a caller that models mTHP) */
	uint32_t allowed_orders;  /* bit k: the per-size THP settings allow order k for this
				   * region's advice (thp_vma_allowable_orders; 3.x: bit 9) */
	uint32_t nr_free[THPEMU_POLICY_NR_ORDERS]; /* free blocks per order (/proc/buddyinfo) */
	int32_t frag_index_9;	  /* fragmentation index of order 9 x1000 (extfrag_index, 0..1000:
				   * near 0 = failure from lack of memory, near 1000 = from
				   * fragmentation); -1000 when a free order-9 block exists */
	uint64_t recent_stall_ns; /* pressure: the time the last THPEMU_POLICY_STALL_WINDOW
				   * faults of this pool (any outcome) spent in direct
				   * compaction plus direct reclaim (their waits included) */
	uint64_t now_ns;	  /* monotonic time of the pool (virtual in thpemu sim) */
	const char *era;	  /* "linux-3.1" .. "linux-6.1", "modern": the profile's era */
	const char *policy;	  /* the named profile the policy started from, canonical:
				   * "thp-always/always" for the alias "modern-always",
				   * the thp- pair host resolved to for "host" */
	uint32_t write;		  /* 1: write fault */
	uint32_t reserved0;
	uint64_t reserved[8]; /* zero */
};

/* What slowpath may say for a fault's THP allocation. */
enum thpemu_slowpath {
	THPEMU_SLOWPATH_DEFAULT = 0, /* as the policy's defrag setting says */
	THPEMU_SLOWPATH_NONE = 1,    /* no direct compaction or reclaim, no kswapd wake: the
				      * freelists or fall back (GFP_TRANSHUGE_LIGHT) */
	THPEMU_SLOWPATH_DIRECT = 2,  /* direct compaction and reclaim allowed (__GFP_DIRECT_RECLAIM,
				      * as defrag=always for a madvised region) */
};

struct thpemu_policy_v1 {
	uint32_t abi_version; /* THPEMU_POLICY_ABI_VERSION */
	uint32_t flags;	      /* 0 */
	const char *name;     /* short name for reports */
	/* Optional: called once after loading, outside the fault path (malloc, getenv allowed).
	 * args: the text after '?' in plugin=PATH?ARGS, or NULL. Return 0, or nonzero to refuse
	 * the plugin (the load fails). */
	int (*init)(const char *args);
	/* The orders to try for this fault, in that order, written to orders[0..n-1] (n <= max;
	 * max is 10). Returns n (0: an order-0 page at once), or < 0 for no opinion (the built-in
	 * policy decides). Order 0 ends the list (later entries are not tried). An order that
	 * fails to allocate falls through to the next; after the list, order 0. */
	int (*select_orders)(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max);
	/* Optional: may the THP allocation of order `order` for this fault enter the slow path?
	 * Returns enum thpemu_slowpath; anything else is nonsense (counted, default used). */
	int (*slowpath)(const struct thpemu_fault_info *in, unsigned order);
	void *reserved[4]; /* NULL */
};

#ifdef __cplusplus
}
#endif
#endif
