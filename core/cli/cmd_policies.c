/* thpemu policies: list every policy profile with its settings.
 *
 *   thpemu policies [--json] [SPEC...]
 *
 * Without SPEC: every named profile (linux-3.x and the 15 modern sysfs pairs thp-ENABLED/DEFRAG),
 * the aliases with what they mean, and `host` resolved from this machine's sysfs (or why it
 * cannot be). With SPECs: just those, each resolved (an alias or host shows the profile and
 * overrides it stands for). The settings are every key of the spec language (thpemu run --help),
 * so a listed profile is exactly what `--policy NAME` runs.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "policy/policy.h"
#include "util/json.h"

#define CMD "policies"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu policies [--json] [SPEC...]\n\n"
	    "Lists the policy profiles `thpemu run --policy`, `sim` and `ab` accept, with every\n"
	    "setting: the kernel era, transparent_hugepage/enabled and /defrag, the slow path\n"
	    "(second compaction, reclaim, background threads), khugepaged's knobs and the mTHP\n"
	    "sizes. The modern (6.12) profiles are named by their sysfs pair,\n"
	    "thp-ENABLED/DEFRAG, spelled as /sys/kernel/mm/transparent_hugepage/{enabled,defrag}\n"
	    "spell the values: ENABLED = always|madvise|never, DEFRAG =\n"
	    "always|defer|defer+madvise|madvise|never (e.g. thp-madvise/madvise, the usual\n"
	    "distribution setting). The names modern-always|defer|defer+madvise|madvise are\n"
	    "aliases of thp-always/X (enabled=always), modern-never of thp-never/madvise;\n"
	    "reports print the canonical name.\n\n"
	    "`host` is this machine's own settings: enabled, defrag, khugepaged/*, "
	    "shrink_underused,\n"
	    "hugepages-*kB/enabled and /proc/sys/vm/defrag_mode, read when the policy is parsed\n"
	    "(the root / can be replaced by $THPEMU_SYSFS_ROOT, for tests). Files of knobs the\n"
	    "emulator does not model (use_zero_page, shmem_enabled, ...) are not read; a missing\n"
	    "optional file (older kernel) keeps the 6.12 default; a value it cannot model is an\n"
	    "error naming the file and the value.\n\n"
	    "  SPEC     NAME[:KEY=VALUE,...] to show resolved (default: every profile, the\n"
	    "           aliases and host)\n"
	    "  --json   one JSON object: {\"profiles\": [{\"name\", \"kernel\", \"spec\",\n"
	    "           \"aliases\", \"settings\": {KEY: VALUE}}], \"aliases\": [...], \"host\": "
	    "...}\n"
	    "  --help   this text\n\n"
	    "Exit status: 0; 1 a SPEC could not be resolved (host: no THP in this kernel, a\n"
	    "value the emulator cannot model); 2 bad usage.\n");
}

static const char *kernel_of(const struct mm_policy *p)
{
	switch (p->era) {
	case MM_ERA_3_1:
		return "linux-3.1";
	case MM_ERA_3_2:
		return "linux-3.2";
	case MM_ERA_3_3:
		return "linux-3.3";
	case MM_ERA_6_1:
		return "6.1";
	default:
		return "6.12";
	}
}

static void aliases_of(const char *name, char *buf, size_t len)
{
	const char *alias, *canonical;
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; (alias = mm_policy_alias(i, &canonical)) && used < len; i++)
		if (!strcmp(canonical, name))
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 alias);
}

static void text_profile(const char *label, const struct mm_policy *p)
{
	char spec[1024], val[64], aliases[256];
	const char *key;
	bool number;
	int col = 4;

	mm_policy_format(p, spec, sizeof(spec));
	aliases_of(p->name, aliases, sizeof(aliases));
	printf("%s", label);
	if (strcmp(label, spec) && strncmp(label, "thp-ENABLED", 11))
		printf(" = %s", spec);
	printf("  (%s)\n", kernel_of(p));
	if (aliases[0] && !strcmp(label, p->name))
		printf("    aliases: %s\n", aliases);
	printf("   ");
	for (size_t i = 0; (key = mm_policy_key(i, p, val, sizeof(val), &number)); i++) {
		int w = (int)(strlen(key) + strlen(val) + 2);

		if (!strcmp(key, "era"))
			continue;
		if (col + w > 100) {
			printf("\n   ");
			col = 4;
		}
		printf(" %s=%s", key, val);
		col += w;
	}
	printf("\n");
}

static void json_profile(struct json_w *w, const char *jkey, const char *label,
			 const struct mm_policy *p)
{
	char spec[1024], val[64], aliases[256];
	const char *key;
	bool number;

	mm_policy_format(p, spec, sizeof(spec));
	aliases_of(p->name, aliases, sizeof(aliases));
	jw_obj_begin(w, jkey);
	jw_str(w, "name", label);
	jw_str(w, "spec", spec);
	jw_str(w, "kernel", kernel_of(p));
	jw_arr_begin(w, "aliases");
	if (!strcmp(label, p->name)) {
		const char *alias, *canonical;

		for (size_t i = 0; (alias = mm_policy_alias(i, &canonical)); i++)
			if (!strcmp(canonical, p->name))
				jw_str(w, NULL, alias);
	}
	jw_arr_end(w);
	jw_obj_begin(w, "settings");
	for (size_t i = 0; (key = mm_policy_key(i, p, val, sizeof(val), &number)); i++) {
		if (number)
			jw_u64(w, key, strtoull(val, NULL, 10));
		else
			jw_str(w, key, val);
	}
	jw_obj_end(w);
	jw_obj_end(w);
}

static void text_alias_line(const char *alias, const char *canonical)
{
	struct mm_policy p;
	char err[256], e[16], d[16];

	if (policy_parse(canonical, &p, err, sizeof(err)))
		return;
	mm_policy_key(1, &p, e, sizeof(e), NULL);
	mm_policy_key(2, &p, d, sizeof(d), NULL);
	printf("%s = alias of %s (enabled=%s, defrag=%s)\n", alias, canonical, e, d);
}

static int policies_main(int argc, char **argv)
{
	const char *specs[64];
	struct mm_policy p;
	char err[512];
	bool json = false;
	int nspecs = 0, rc = 0;
	struct json_w w;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-')
			prog_usage_error(CMD, "unknown option '%s' (accepted: --json, --help)",
					 argv[i]);
		else if (nspecs == (int)(sizeof(specs) / sizeof(specs[0])))
			prog_usage_error(CMD, "at most 64 SPECs");
		else
			specs[nspecs++] = argv[i];
	}
	/* every SPEC but host is checked before any output */
	for (int i = 0; i < nspecs; i++) {
		if (!strncmp(specs[i], "host", 4) && (!specs[i][4] || specs[i][4] == ':'))
			continue;
		if (policy_parse(specs[i], &p, err, sizeof(err)))
			prog_usage_error(CMD, "%s", err);
	}
	if (json) {
		jw_init(&w, stdout, true);
		jw_obj_begin(&w, NULL);
		jw_arr_begin(&w, "profiles");
	}
	if (nspecs) {
		for (int i = 0; i < nspecs; i++) {
			if (policy_parse(specs[i], &p, err, sizeof(err))) {
				prog_error(CMD, "%s", err);
				rc = 1;
				continue;
			}
			if (json)
				json_profile(&w, NULL, specs[i], &p);
			else
				text_profile(specs[i], &p);
		}
		if (json) {
			jw_arr_end(&w);
			jw_obj_end(&w);
			if (jw_finish(&w))
				rc = 1;
			printf("\n");
		}
		return rc;
	}
	if (!json)
		printf("%-28s %-10s %-8s %-14s %s\n", "PROFILE", "KERNEL", "ENABLED", "DEFRAG",
		       "ALIASES");
	for (const char *const *n = mm_policy_names(); *n; n++) {
		char e[16], d[16], aliases[256];

		if (policy_parse(*n, &p, err, sizeof(err)))
			continue;
		if (json) {
			json_profile(&w, NULL, *n, &p);
			continue;
		}
		mm_policy_key(1, &p, e, sizeof(e), NULL);
		mm_policy_key(2, &p, d, sizeof(d), NULL);
		aliases_of(*n, aliases, sizeof(aliases));
		if (aliases[0])
			printf("%-28s %-10s %-8s %-14s %s\n", *n, kernel_of(&p), e, d, aliases);
		else
			printf("%-28s %-10s %-8s %s\n", *n, kernel_of(&p), e, d);
	}
	if (json) {
		const char *alias, *canonical;
		int hrc;

		jw_arr_end(&w);
		jw_arr_begin(&w, "aliases");
		for (size_t i = 0; (alias = mm_policy_alias(i, &canonical)); i++) {
			jw_obj_begin(&w, NULL);
			jw_str(&w, "alias", alias);
			jw_str(&w, "canonical", canonical);
			jw_obj_end(&w);
		}
		jw_arr_end(&w);
		hrc = policy_parse("host", &p, err, sizeof(err));
		if (hrc) {
			jw_obj_begin(&w, "host");
			jw_str(&w, "error", err);
			jw_obj_end(&w);
		} else {
			json_profile(&w, "host", "host", &p);
		}
		jw_obj_end(&w);
		if (jw_finish(&w))
			rc = 1;
		printf("\n");
		return rc;
	}
	printf("\naliases (yesterday's names; reports print the canonical name):\n");
	{
		const char *alias, *canonical;

		for (size_t i = 0; (alias = mm_policy_alias(i, &canonical)); i++) {
			printf("  ");
			text_alias_line(alias, canonical);
		}
	}
	printf("\nsettings (every key of `thpemu run --help`; the thp-* profiles differ only in\n"
	       "enabled and defrag):\n");
	for (const char *const *n = mm_policy_names(); *n; n++) {
		if (policy_parse(*n, &p, err, sizeof(err)))
			continue;
		if (!strncmp(*n, "thp-", 4)) {
			if (strcmp(*n, "thp-always/always"))
				continue;
			text_profile("thp-ENABLED/DEFRAG", &p);
		} else {
			text_profile(*n, &p);
		}
	}
	printf("\n");
	if (policy_parse("host", &p, err, sizeof(err)))
		printf("host: unavailable: %s\n", prog_esc(err));
	else
		text_profile("host", &p);
	return rc;
}

CLI_COMMAND(policies, "policies", "list the policy profiles, their aliases and host's settings",
	    policies_main)
