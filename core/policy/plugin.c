/* Loading a THP policy plugin (see plugin.h and core/include/thpemu_policy.h). */
#include "policy/plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory of the object this code is in (libthpemu.so in a managed program, else the
 * thpemu executable), into dir. */
static int self_dir(char *dir, size_t len)
{
	Dl_info info;
	char *slash;
	ssize_t n;

	if (dladdr((void *)self_dir, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
	    strlen(info.dli_fname) < len) {
		strcpy(dir, info.dli_fname);
	} else {
		n = readlink("/proc/self/exe", dir, len - 1);
		if (n <= 0)
			return -1;
		dir[n] = '\0';
	}
	slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}

/* A plugin named without a '/' that is not a file in the current directory: NAME or NAME.so
 * among the installed plugins, found relative to thpemu itself as both layouts put them: beside
 * libthpemu.so and the thpemu executable in build/ (build/plugins), lib/thpemu/plugins in an
 * installed tree (beside libthpemu.so, or ../lib/thpemu/plugins from bin/thpemu). */
static void resolve_name(char *path, size_t len)
{
	static const char *const rel[] = {"/plugins/", "/../lib/thpemu/plugins/"};
	static const char *const ext[] = {"", ".so"};
	char dir[4096], cand[4096];
	struct stat st;

	if (strchr(path, '/') || stat(path, &st) == 0 || self_dir(dir, sizeof(dir)) < 0)
		return;
	for (size_t r = 0; r < sizeof(rel) / sizeof(rel[0]); r++)
		for (size_t e = 0; e < sizeof(ext) / sizeof(ext[0]); e++) {
			int n = snprintf(cand, sizeof(cand), "%s%s%s%s", dir, rel[r], path, ext[e]);

			if (n > 0 && (size_t)n < len && stat(cand, &st) == 0 &&
			    S_ISREG(st.st_mode)) {
				memcpy(path, cand, (size_t)n + 1);
				return;
			}
		}
}

int policy_plugin_load(const char *spec, struct policy_plugin *out, char *why, size_t whylen)
{
	const char *q = strchr(spec, '?');
	size_t len = q ? (size_t)(q - spec) : strlen(spec);
	const struct thpemu_policy_v1 *pl;
	char here[sizeof(out->path) + 2];
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
	resolve_name(out->path, sizeof(out->path));
	if (stat(out->path, &st) != 0) {
		snprintf(why, whylen, "%s: no such file%s", out->path,
			 strchr(out->path, '/') ? ""
						: " (nor an installed plugin of that name, "
						  "e.g. mthp_under_frag)");
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "%s: not a regular file", out->path);
		return -1;
	}
	/* a path without '/' would be searched in the library path: say what we mean */
	snprintf(here, sizeof(here), "%s%s", strchr(out->path, '/') ? "" : "./", out->path);
	/* dlmopen into the base namespace is dlopen without the name: libthpemu.so exports dlopen
	 * (core/preload/process.c) and must never call it */
	h = dlmopen(LM_ID_BASE, here, RTLD_NOW | RTLD_LOCAL);
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

void policy_plugin_unload(struct policy_plugin *p)
{
	if (p->handle)
		dlclose(p->handle);
	memset(p, 0, sizeof(*p));
}
