/* Policies above core/mm: the spec language as every command and the preload library parse it,
 * and what a policy needs from the machine it runs on.
 *
 * core/mm holds the profiles and the keys (mm/mm_policy.h) and reads nothing but its arguments.
 * Here is what a spec may need beyond that: the `host` profile, this machine's own settings read
 * from sysfs (host.c), and the spec's help text (spec.c); loading a policy plugin is plugin.h.
 * core/config's THPEMU_POLICY parser calls policy_parse, so `thpemu run`, `sim`, `ab`, `matrix`,
 * `machine`, `replay` and every managed process parse a policy the same way.
 */
#ifndef THPEMU_POLICY_POLICY_H
#define THPEMU_POLICY_POLICY_H

#include <stddef.h>
#include <stdio.h>

#include "mm/mm_policy.h"

/* NAME[:KEY=VALUE,...] with NAME one of mm's profiles or `host` (policy_host from the tree under
 * $THPEMU_SYSFS_ROOT, default /). 0, or -EINVAL with a one-line reason in err. */
int policy_parse(const char *spec, struct mm_policy *out, char *err, size_t errlen);

/* The host profile: thp-ENABLED/DEFRAG with this kernel's values of every knob the emulator
 * models, read from root's sys/kernel/mm/transparent_hugepage and proc/sys/vm/defrag_mode
 * (root "" is /). 0, or -errno with a one-line reason naming the file and the value. */
int policy_host(const char *root, struct mm_policy *out, char *err, size_t errlen);

/* The grammar, the profiles and every key (for --help). */
void policy_help(FILE *f);

#endif
