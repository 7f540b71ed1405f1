/* A plugin that always answers order 1 (never an anonymous size): every fault takes the
 * built-in decision, counted in plugin_errors, the first reported (plugin.sh). */
#include "thpemu_policy.h"

static int select_orders(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max)
{
	(void)in;
	(void)max;
	orders[0] = 1;
	return 1;
}

const struct thpemu_policy_v1 thpemu_policy = {
    .abi_version = THPEMU_POLICY_ABI_VERSION,
    .name = "nonsense",
    .select_orders = select_orders,
};
