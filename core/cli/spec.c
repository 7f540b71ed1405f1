/* A run configuration as `thpemu ab` sides and `thpemu matrix` policies spell it: a comma list
 * of `thpemu run` options without their dashes (policy=linux-3.1,device=usb2-stick-2011,
 * dirty=total=16M,file=2M,pool=96M) and label=NAME. A piece that does not start with a known
 * key continues the previous value, so values may contain commas. Each value is checked as
 * `thpemu run` would check it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spec.h"
#include "config/config.h"

static const struct config_opt *spec_key(const char *item, size_t *klen)
{
	const char *eq = strchr(item, '=');
	char name[64];

	if (!eq || eq == item || (size_t)(eq - item) + 3 > sizeof(name))
		return NULL;
	snprintf(name, sizeof(name), "--%.*s", (int)(eq - item), item);
	*klen = (size_t)(eq - item);
	return config_opt_by_cli(name);
}

static bool is_label(const char *item)
{
	return !strncmp(item, "label=", 6);
}

static bool starts_item(const char *piece)
{
	size_t k;

	return is_label(piece) || spec_key(piece, &k);
}

static void keys_list(char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, "label");

	for (unsigned i = 0; i < CONFIG_NR && off < len; i++)
		if (config_opts[i].cli && strcmp(config_opts[i].cli, "--trace"))
			off +=
			    (size_t)snprintf(buf + off, len - off, ", %s", config_opts[i].cli + 2);
}

/* "word=..." with a key-like word: a continuation that may have been meant as an item. */
static bool looks_like_item(const char *piece)
{
	const char *eq = strchr(piece, '=');

	if (!eq || eq == piece)
		return false;
	for (const char *c = piece; c < eq; c++)
		if (!(*c == '-' || *c == '_' || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

/* An item's value failed to parse: if it absorbed a "key=value" continuation and parses
 * without it, the user meant that as an item with an unknown key; say so. */
static void blame_continuation(const char *cmd, const char *opt, const struct config_opt *o,
			       const char *item, size_t klen, const char *keys)
{
	char head[1024], err[600];
	struct config cfg;
	const char *c = item + klen + 1;

	config_defaults(&cfg);
	while ((c = strchr(c, ','))) {
		c++;
		if (!looks_like_item(c))
			continue;
		snprintf(head, sizeof(head), "%.*s", (int)(c - 1 - (item + klen + 1)),
			 item + klen + 1);
		if (config_opt_parse(o, o->env, head, &cfg, err, sizeof(err)) == 0)
			prog_usage_error(cmd, "%s: unknown key in '%.*s' (accepted: %s)", opt,
					 (int)strcspn(c, ","), c, keys);
	}
}

/* A key given twice is an error: run would take the last, a reader may expect the first. */
static void check_duplicates(const char *cmd, const char *opt, char *const *items, int n)
{
	for (int i = 0; i < n; i++) {
		size_t ki = strcspn(items[i], "=");

		for (int j = 0; j < i; j++)
			if (strcspn(items[j], "=") == ki && !strncmp(items[i], items[j], ki))
				prog_usage_error(cmd,
						 "%s: '%.*s' is given twice ('%s' and '%s'); give "
						 "each key once",
						 opt, (int)ki, items[i], items[j], items[i]);
	}
}

/* A label names a side in text, JSON and HTML: printable, not empty, not too long. */
static void check_label(const char *cmd, const char *opt, const char *label)
{
	if (!*label)
		prog_usage_error(cmd, "%s: an empty label= (a name such as label=thp)", opt);
	if (strlen(label) > CLI_SPEC_LABEL)
		prog_usage_error(cmd, "%s: label '%.40s...' is longer than %d characters", opt,
				 label, CLI_SPEC_LABEL);
	for (const unsigned char *c = (const unsigned char *)label; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			prog_usage_error(cmd,
					 "%s: label '%s' has a control character (a printable "
					 "name, e.g. label=thp)",
					 opt, label);
}

/* Split SPEC into items and check each value as `thpemu run` would. */
void cli_side_parse(const char *cmd, const char *opt, const char *spec, struct cli_side *s)
{
	char buf[1024], *items[CLI_SPEC_ITEMS], err[600], keys[600];
	int n = 0;
	struct config cfg;

	if (strlen(spec) >= sizeof(buf))
		prog_usage_error(cmd, "%s: the spec is too long", opt);
	snprintf(s->spec, sizeof(s->spec), "%s", spec);
	snprintf(buf, sizeof(buf), "%s", spec);
	config_defaults(&cfg);
	keys_list(keys, sizeof(keys));
	for (char *p = buf, *piece; (piece = strsep(&p, ","));) {
		if (!*piece)
			continue;
		if (starts_item(piece)) {
			if (n == CLI_SPEC_ITEMS)
				prog_usage_error(cmd, "%s: at most %d items", opt, CLI_SPEC_ITEMS);
			items[n++] = piece;
		} else if (n) {
			piece[-1] = ','; /* part of the previous value */
		} else {
			prog_usage_error(
			    cmd, "%s: '%s' is not KEY=VALUE with a known key (accepted: %s)", opt,
			    piece, keys);
		}
	}
	if (!n)
		prog_usage_error(cmd, "%s: an empty spec (e.g. policy=linux-3.1)", opt);
	check_duplicates(cmd, opt, items, n);
	for (int i = 0; i < n; i++) {
		size_t klen = 0;
		const struct config_opt *o = spec_key(items[i], &klen);
		char name[64];

		if (is_label(items[i])) {
			check_label(cmd, opt, items[i] + 6);
			snprintf(s->label, sizeof(s->label), "%s", items[i] + 6);
			continue;
		}
		if (!o || !strcmp(o->cli, "--trace"))
			prog_usage_error(cmd, "%s: unknown key in '%s' (accepted: %s)", opt,
					 items[i], keys);
		snprintf(name, sizeof(name), "%s %s=", opt, o->cli + 2);
		if (config_opt_parse(o, name, items[i] + klen + 1, &cfg, err, sizeof(err)) < 0) {
			blame_continuation(cmd, opt, o, items[i], klen, keys);
			prog_usage_error(cmd, "%s", err);
		}
		if (!s->label[0] && o == &config_opts[CONFIG_POLICY])
			snprintf(s->label, sizeof(s->label), "%s", items[i] + klen + 1);
		s->argv[s->argc++] = strdup(o->cli);
		s->argv[s->argc++] = strdup(items[i] + klen + 1);
	}
	if (cli_run_check_config(&cfg, opt, err, sizeof(err)) < 0) /* what each run would refuse */
		prog_usage_error(cmd, "%s", err);
}

uint64_t cli_run_seed(const char *cmd, const char *val)
{
	struct config cfg;
	char err[600];

	config_defaults(&cfg);
	if (config_opt_parse(&config_opts[CONFIG_SEED], "--seed", val, &cfg, err, sizeof(err)) < 0)
		prog_usage_error(cmd, "%s", err);
	return cfg.seed;
}
