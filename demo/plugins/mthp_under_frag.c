/* Example THP policy plugin (thpemu_policy.h): "64 KiB mTHP under fragmentation, PMD
 * otherwise".
 *
 * What it models: the order choice the BPF THP RFC (2025) gives as its motivating case - when
 * 2 MiB blocks are scarce, asking for one costs a compaction stall and usually falls back to
 * 4 KiB anyway, while a 64 KiB folio (order 4, the arm64 contiguous-PTE size) is still cheap and
 * keeps most of the TLB win. Fragmented means: extfrag_index(9) above THPEMU_PLUGIN_FRAG
 * (x1000, default 500, vm.extfrag_threshold's default) or no free order-9 block. Then the list
 * is 4 (when possible), 0; otherwise 9 (when possible), then 4, then 0. Regions with
 * MADV_NOHUGEPAGE get order 0.
 */
#include <stdint.h>
#include <stdlib.h>

#include "thpemu_policy.h"

static int frag_threshold = 500;

static int init(const char *args)
{
	const char *t = args ? args : getenv("THPEMU_PLUGIN_FRAG");

	if (t && *t)
		frag_threshold = atoi(t);
	return frag_threshold < 0 || frag_threshold > 1000;
}

static int select_orders(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max)
{
	int fragmented = in->frag_index_9 > frag_threshold || in->nr_free[9] + in->nr_free[10] == 0;
	unsigned n = 0;

	if (in->advice == THPEMU_ADVICE_NOHUGEPAGE || max < 2)
		return 0;
	if (!fragmented && (in->possible_orders & (1U << 9)))
		orders[n++] = 9;
	if (in->possible_orders & (1U << 4))
		orders[n++] = 4;
	return (int)n;
}

const struct thpemu_policy_v1 thpemu_policy = {
    .abi_version = THPEMU_POLICY_ABI_VERSION,
    .name = "mthp-under-frag",
    .init = init,
    .select_orders = select_orders,
};
