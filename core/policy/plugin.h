/* Loading a THP policy plugin (thpemu_policy.h): dlopen(RTLD_NOW | RTLD_LOCAL), the
 * thpemu_policy symbol, its abi_version, its optional init. core/mm never loads anything: the
 * live emulator (core/live live.c) and the simulator (core/sim world.c) call this and hand the
 * table to mm_set_policy_hook; the CLI calls it to check --policy-plugin / plugin= before any
 * work starts. */
#ifndef THPEMU_POLICY_PLUGIN_H
#define THPEMU_POLICY_PLUGIN_H

#include <stddef.h>

#include "thpemu_policy.h"

struct policy_plugin {
	void *handle;
	const struct thpemu_policy_v1 *pl;
	char path[192]; /* as given, without ?ARGS; a NAME resolved to the file it names */
};

/* spec: PATH[?ARGS] (ARGS go to the plugin's init). A PATH without '/' that is no file in the
 * current directory names an installed plugin: NAME or NAME.so in plugins/ beside thpemu's
 * own objects (build/plugins, PREFIX/lib/thpemu/plugins; e.g. plugin=mthp_under_frag). Returns 0,
 * or -1 with a one-line reason in why ("no such file", "not a loadable shared object: ...", "no
 * symbol thpemu_policy", "abi_version 7, this thpemu speaks 1", ...). */
int policy_plugin_load(const char *spec, struct policy_plugin *out, char *why, size_t whylen);
void policy_plugin_unload(struct policy_plugin *p);

#endif
