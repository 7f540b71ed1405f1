/* Loading a THP policy plugin (see plugin.h and core/include/thpemu_policy.h). */
#include "util/plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int util_plugin_load(const char *spec, struct util_plugin *out, char *why, size_t whylen)
{
	const char *q = strchr(spec, '?');
	size_t len = q ? (size_t)(q - spec) : strlen(spec);
	const struct thpemu_policy_v1 *pl;
	struct stat st;
	const char *e;
	void *h;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len >= sizeof(out->path)) {
		snprintf(why, whylen, "empty or overlong path");
		return -1;
	}
	memcpy(out->path, spec, len);
	out->path[len] = '\0';
	if (stat(out->path, &st) != 0) {
		snprintf(why, whylen, "%s: no such file", out->path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "%s: not a regular file", out->path);
		return -1;
	}
	/* a path without '/' would be searched in the library path: say what we mean */
	h = dlopen(out->path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		e = dlerror();
		snprintf(why, whylen, "%s: not a loadable shared object (%s)", out->path,
			 e ? e : "dlopen failed");
		return -1;
	}
	pl = (const struct thpemu_policy_v1 *)dlsym(h, THPEMU_POLICY_SYMBOL);
	if (!pl) {
		snprintf(why, whylen, "%s: no symbol %s (see thpemu_policy.h)", out->path,
			 THPEMU_POLICY_SYMBOL);
		dlclose(h);
		return -1;
	}
	if (pl->abi_version != THPEMU_POLICY_ABI_VERSION) {
		snprintf(why, whylen, "%s: abi_version %u, this thpemu speaks %d", out->path,
			 pl->abi_version, THPEMU_POLICY_ABI_VERSION);
		dlclose(h);
		return -1;
	}
	if (!pl->select_orders) {
		snprintf(why, whylen, "%s: select_orders is NULL", out->path);
		dlclose(h);
		return -1;
	}
	if (pl->init && pl->init(q ? q + 1 : NULL) != 0) {
		snprintf(why, whylen, "%s: its init refused%s%s", out->path,
			 q ? " the arguments " : "", q ? q + 1 : "");
		dlclose(h);
		return -1;
	}
	out->handle = h;
	out->pl = pl;
	return 0;
}

void util_plugin_unload(struct util_plugin *p)
{
	if (p->handle)
		dlclose(p->handle);
	memset(p, 0, sizeof(*p));
}
