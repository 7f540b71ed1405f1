/* The mm environment of thpemu-fusedev joined to a machine (fusedev/writers.c): real writers'
 * WRITEs fill and dirty the machine's page cache here, so mm may compact, reclaim or wait on
 * writeback in this process; everything it asks is the machine member's (member.c). priv is a
 * struct env_member. */
#include "env/env.h"

const struct mm_env_ops env_device_ops = {
    .now = env_member_now,
    .lock = env_member_lock,
    .unlock = env_member_unlock,
    .wait_writeback = env_member_wait_writeback,
    .migrate_anon = env_member_migrate_anon,
    .copy_file_page = env_member_copy_file_page,
    .writeout = env_member_writeout,
};
