/* Example THP policy plugin (thpemu_policy.h): "huge only for regions of at least N MiB while
 * more than X free order-9 blocks remain".
 *
 * What it models: a policy that spends the scarce 2 MiB blocks on the mappings that gain most
 * from them (large heaps, not small arenas and thread stacks) and stops handing them out before
 * the last ones go, so that compaction does not have to make more - the kind of per-workload
 * rule the BPF THP RFC (2025) wants to let a policy author try without a kernel build.
 *
 * Parameters, read once at load time (init): THPEMU_PLUGIN_MIN_MIB (N, default 64) and
 * THPEMU_PLUGIN_MIN_FREE9 (X, default 0), or the spec's plugin=PATH?N:X (':' because a policy
 * spec separates its keys with ','). A fault in a smaller region, or with X or fewer free
 * order-9 blocks (an order-10 block counts as two), gets order 0; otherwise order 9 when the
 * extent is possible, else the built-in decision (no opinion).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "thpemu_policy.h"

static uint64_t min_bytes = 64ULL << 20;
static uint64_t min_free9;

static int init(const char *args)
{
	const char *n = getenv("THPEMU_PLUGIN_MIN_MIB"), *x = getenv("THPEMU_PLUGIN_MIN_FREE9");
	unsigned long long a, b;

	if (args) {
		if (sscanf(args, "%llu:%llu", &a, &b) != 2)
			return -1;
		min_bytes = a << 20;
		min_free9 = b;
		return 0;
	}
	if (n && *n)
		min_bytes = strtoull(n, NULL, 10) << 20;
	if (x && *x)
		min_free9 = strtoull(x, NULL, 10);
	return 0;
}

static int select_orders(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max)
{
	uint64_t free9 = in->nr_free[9] + 2ULL * in->nr_free[10];

	if (max < 1)
		return -1;
	if (in->region_len < min_bytes || free9 <= min_free9)
		return 0; /* a 4 KiB page at once */
	if (!(in->possible_orders & (1U << 9)))
		return -1;
	orders[0] = 9;
	return 1;
}

const struct thpemu_policy_v1 thpemu_policy = {
    .abi_version = THPEMU_POLICY_ABI_VERSION,
    .name = "huge-big-regions",
    .init = init,
    .select_orders = select_orders,
};
