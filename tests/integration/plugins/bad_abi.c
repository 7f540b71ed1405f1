/* A plugin of a future ABI (plugin.sh: refused, exit 2 / fallback). */
#include "thpemu_policy.h"

static int select_orders(const struct thpemu_fault_info *in, uint8_t *orders, unsigned max)
{
	(void)in;
	(void)orders;
	(void)max;
	return 0;
}

const struct thpemu_policy_v1 thpemu_policy = {
    .abi_version = 99,
    .name = "future",
    .select_orders = select_orders,
};
