/* The THPEMU_* table (config.h: CONFIG_OPTIONS) and its parsers.
 *
 * Each PARSER of the table is a struct config_parser here: it checks a value's syntax and
 * bounds and stores it in the option's field. The table entries are generated from
 * CONFIG_OPTIONS with the field's offset and size, and a compile-time check per option makes
 * sure the field has the type its parser writes.
 */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "util/text.h"
#include "util/units.h"

typedef int (*config_parse_fn)(const struct config_opt *o, const char *name, const char *val,
			       struct config *cfg, void *field, char *err, size_t errlen);

struct config_parser {
	config_parse_fn parse;
	bool
	    empty_ok; /* "" is a value (no file, no recipe); elsewhere an empty variable is unset */
};

static const char *const config_bool_words[] = {"0",	"1",   "no", "yes", "false",
						"true", "off", "on", NULL};
static const char *const config_alloc_words[] = {"jemalloc", "none", NULL};
static const char *const config_host_fault_words[] = {"thp", "pte", NULL};
static const char *const config_log_words[] = {"quiet", "warn", "info", "debug", NULL};
static const char *const config_auto_words[] = {"auto", NULL};

static int word_index(const char *const *words, const char *v)
{
	for (int i = 0; words && words[i]; i++)
		if (strcmp(words[i], v) == 0)
			return i;
	return -1;
}

/* The value as it may be echoed in a one-line message (util/text.h): escaped, cut if long. */
#define ESC_VAL 512

static int bad(const struct config_opt *o, const char *name, const char *val, const char *why,
	       char *err, size_t errlen)
{
	char v[ESC_VAL];

	text_escape(val, v, sizeof(v));
	if (name[0] == '-')
		snprintf(err, errlen, "%s: '%s' %s (accepted: %s)", name, v, why, o->accepted);
	else
		snprintf(err, errlen, "%s='%s' %s (accepted: %s)", name, v, why, o->accepted);
	return -EINVAL;
}

/* "NAME: 'VALUE': WHY" (or NAME='VALUE': WHY) with a reason from mm or io, which may quote parts
 * of the value: both escaped. */
static int bad_because(const char *name, const char *val, const char *why, char *err, size_t errlen)
{
	char v[ESC_VAL], w[ESC_VAL];

	snprintf(err, errlen, "%s%s'%s': %s", name, name[0] == '-' ? ": " : "=",
		 text_escape(val, v, sizeof(v)), text_escape(why, w, sizeof(w)));
	return -EINVAL;
}

/* A number into a uint64_t or unsigned field (the table's bounds keep it in range). */
static void store_num(const struct config_opt *o, void *field, uint64_t num)
{
	if (o->size == sizeof(uint64_t))
		*(uint64_t *)field = num;
	else
		*(unsigned *)field = (unsigned)num;
}

/* The value as given into a char array field. */
static int store_text(const struct config_opt *o, const char *name, const char *val, void *field,
		      char *err, size_t errlen)
{
	if (strlen(val) >= o->size)
		return bad(o, name, val, "is too long", err, errlen);
	memcpy(field, val, strlen(val) + 1);
	return 0;
}

static int parse_size(const struct config_opt *o, const char *name, const char *val,
		      struct config *cfg, void *field, char *err, size_t errlen)
{
	uint64_t num;

	if (units_parse_size(val, &num) < 0)
		return bad(o, name, val, "is not a size", err, errlen);
	if (num < o->min || num > o->max)
		return bad(o, name, val, "is out of range", err, errlen);
	store_num(o, field, num);
	return 0;
}

static int parse_duration(const struct config_opt *o, const char *name, const char *val,
			  struct config *cfg, void *field, char *err, size_t errlen)
{
	uint64_t num;

	if (units_parse_duration(val, &num) < 0)
		return bad(o, name, val, "is not a duration", err, errlen);
	store_num(o, field, num);
	return 0;
}

/* A non-negative integer within the bounds, or the option's word for 0 ("auto"). */
static int parse_uint(const struct config_opt *o, const char *name, const char *val,
		      struct config *cfg, void *field, char *err, size_t errlen)
{
	uint64_t num = 0;

	if (word_index(o->words, val) == 0) {
		store_num(o, field, 0);
		return 0;
	}
	if (!val[0] || strspn(val, "0123456789") != strlen(val))
		return bad(o, name, val, "is not a non-negative integer", err, errlen);
	if (units_parse_uint(val, o->max, &num) < 0 || num < o->min)
		return bad(o, name, val, "is out of range", err, errlen);
	store_num(o, field, num);
	return 0;
}

/* One of the words: its index, into an enum field. */
static int parse_words(const struct config_opt *o, const char *name, const char *val,
		       struct config *cfg, void *field, char *err, size_t errlen)
{
	int word = word_index(o->words, val);

	if (word < 0)
		return bad(o, name, val, "is not accepted", err, errlen);
	*(int *)field = word;
	return 0;
}

/* config_bool_words alternate false, true. */
static int parse_bool(const struct config_opt *o, const char *name, const char *val,
		      struct config *cfg, void *field, char *err, size_t errlen)
{
	int word = word_index(o->words, val);

	if (word < 0)
		return bad(o, name, val, "is not accepted", err, errlen);
	*(bool *)field = word & 1;
	return 0;
}

/* A file, a directory, or a recipe (mm_fragment checks it against the pool when it applies it,
 * and `thpemu run` before the program starts: cli_run_check_config). */
static int parse_text(const struct config_opt *o, const char *name, const char *val,
		      struct config *cfg, void *field, char *err, size_t errlen)
{
	return store_text(o, name, val, field, err, errlen);
}

/* snapshot:FILE: the file must be a snapshot (its header is read), is kept by its absolute path
 * (a machine's daemon runs in /, a program may change directory), and sizes the pool unless
 * the pool was given (core/snapshot/README.md). */
static int parse_snapshot(const struct config_opt *o, const char *name, const char *val,
			  struct config *cfg, void *field, char *err, size_t errlen)
{
	const char *path = val + strlen(SNAP_PREFIX);
	char abs[PATH_MAX], full[PATH_MAX + 16], why[400];
	uint64_t bytes = 0;
	int rc;

	if (path[0] != '/' && realpath(path, abs))
		path = abs;
	snprintf(full, sizeof(full), "%s%s", SNAP_PREFIX, path);
	rc = snap_recipe_pool(full, &bytes, why, sizeof(why));
	if (rc < 0)
		return bad_because(name, val, why, err, errlen);
	if (!cfg->pool_given &&
	    (bytes < config_opts[CONFIG_POOL].min || bytes > config_opts[CONFIG_POOL].max))
		return bad_because(name, val,
				   "the snapshot's zone is not 8M to 64G: give --pool (a smaller "
				   "pool samples the zone)",
				   err, errlen);
	if (!cfg->pool_given)
		cfg->pool_bytes = bytes;
	return store_text(o, name, full, field, err, errlen);
}

static int parse_recipe(const struct config_opt *o, const char *name, const char *val,
			struct config *cfg, void *field, char *err, size_t errlen)
{
	if (!strncmp(val, SNAP_PREFIX, strlen(SNAP_PREFIX)))
		return parse_snapshot(o, name, val, cfg, field, err, errlen);
	return store_text(o, name, val, field, err, errlen);
}

/* A decimal int from s up to end (exclusive), nothing else. */
static bool parse_int(const char *s, const char *end, int *out)
{
	long v = 0;

	if (s == end)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return false;
	}
	*out = (int)v;
	return true;
}

bool config_rendezvous(const char *val, int *pid, int *fd)
{
	const char *colon = strchr(val, ':');

	return colon && parse_int(val, colon, pid) && *pid > 0 &&
	       parse_int(colon + 1, colon + strlen(colon), fd);
}

/* THPEMU_MACHINE: core/machine's rendezvous ("" = none: a pool of its own). A value that is no
 * rendezvous at all is refused here, with the variable's name, rather than found out at the
 * attach (where it would only make a pool of its own). */
static int parse_rendezvous(const struct config_opt *o, const char *name, const char *val,
			    struct config *cfg, void *field, char *err, size_t errlen)
{
	int pid, fd;

	if (val[0] && !config_rendezvous(val, &pid, &fd))
		return bad(o, name, val, "is not a machine's rendezvous", err, errlen);
	return store_text(o, name, val, field, err, errlen);
}

/* --fs's name as the policy's value (parse_fs accepted it). */
static enum mm_fs fs_named(const char *name)
{
	return !strcmp(name, "ext4")	? MM_FS_EXT4
	       : !strcmp(name, "tmpfs") ? MM_FS_TMPFS
					: MM_FS_VFAT;
}

static int parse_policy(const struct config_opt *o, const char *name, const char *val,
			struct config *cfg, void *field, char *err, size_t errlen)
{
	char why[200];

	if (strlen(val) >= o->size)
		return bad(o, name, val, "is too long", err, errlen);
	if (policy_parse(val, &cfg->policy, why, sizeof(why)) < 0) /* names the bad part */
		return bad_because(name, val, why, err, errlen);
	if (cfg->fs[0]) /* --fs given before --policy still counts */
		cfg->policy.fs = fs_named(cfg->fs);
	return store_text(o, name, val, field, err, errlen);
}

/* --fs: the policy key fs, as a machine setting. */
static int parse_fs(const struct config_opt *o, const char *name, const char *val,
		    struct config *cfg, void *field, char *err, size_t errlen)
{
	if (strcmp(val, "vfat") && strcmp(val, "ext4") && strcmp(val, "tmpfs"))
		return bad(o, name, val, "is not accepted", err, errlen);
	cfg->policy.fs = fs_named(val);
	return store_text(o, name, val, field, err, errlen);
}

/* --device / --dirty: the io module's parsers name the bad item and what they accept. */
static int parse_device(const struct config_opt *o, const char *name, const char *val,
			struct config *cfg, void *field, char *err, size_t errlen)
{
	char why[400];

	if (strlen(val) >= o->size)
		return bad(o, name, val, "is too long", err, errlen);
	if (io_device_parse(val, &cfg->device, why, sizeof(why)) < 0)
		return bad_because(name, val, why, err, errlen);
	return store_text(o, name, val, field, err, errlen);
}

static int parse_dirty(const struct config_opt *o, const char *name, const char *val,
		       struct config *cfg, void *field, char *err, size_t errlen)
{
	char why[400];

	if (strlen(val) >= o->size)
		return bad(o, name, val, "is too long", err, errlen);
	if (io_dirty_parse(val, &cfg->dirty, why, sizeof(why)) < 0)
		return bad_because(name, val, why, err, errlen);
	return store_text(o, name, val, field, err, errlen);
}

static const struct config_parser config_parse_size = {parse_size, false};
static const struct config_parser config_parse_duration = {parse_duration, false};
static const struct config_parser config_parse_uint = {parse_uint, false};
static const struct config_parser config_parse_words = {parse_words, false};
static const struct config_parser config_parse_bool = {parse_bool, false};
static const struct config_parser config_parse_policy = {parse_policy, false};
static const struct config_parser config_parse_fs = {parse_fs, false};
/* --policy-plugin: the file is checked when it is loaded (core/policy/plugin.c): by the CLI
 * before anything starts, and by each process */
static const struct config_parser config_parse_plugin = {parse_text, false};
static const struct config_parser config_parse_recipe = {parse_recipe, true};
static const struct config_parser config_parse_path = {parse_text, true};
static const struct config_parser config_parse_device = {parse_device, false};
static const struct config_parser config_parse_dirty = {parse_dirty, false};
static const struct config_parser config_parse_rendezvous = {parse_rendezvous, true};

/* The field type each parser writes. */
#define IS_CHARS(f)	     __builtin_types_compatible_p(__typeof__(f), char[sizeof(f)])
#define FIELD_OK_size(f)     (sizeof(f) == sizeof(uint64_t))
#define FIELD_OK_duration(f) __builtin_types_compatible_p(__typeof__(f), uint64_t)
#define FIELD_OK_uint(f)     (sizeof(f) == sizeof(uint64_t) || sizeof(f) == sizeof(unsigned))
#define FIELD_OK_words(f)                                                                          \
	(sizeof(f) == sizeof(int) && !__builtin_types_compatible_p(__typeof__(f), bool))
#define FIELD_OK_bool(f)       __builtin_types_compatible_p(__typeof__(f), bool)
#define FIELD_OK_policy(f)     IS_CHARS(f)
#define FIELD_OK_fs(f)	       IS_CHARS(f)
#define FIELD_OK_plugin(f)     IS_CHARS(f)
#define FIELD_OK_recipe(f)     IS_CHARS(f)
#define FIELD_OK_path(f)       IS_CHARS(f)
#define FIELD_OK_device(f)     IS_CHARS(f)
#define FIELD_OK_dirty(f)      IS_CHARS(f)
#define FIELD_OK_rendezvous(f) IS_CHARS(f)
#define CONFIG_FIELD(field)    (((struct config *)0)->field)

#define CONFIG_X_CHECK(id, cli, metavar, parser, field, ...)                                       \
	_Static_assert(FIELD_OK_##parser(CONFIG_FIELD(field)),                                     \
		       "THPEMU_" #id ": config." #field " is not what parser " #parser " writes");
CONFIG_OPTIONS(CONFIG_X_CHECK)
#undef CONFIG_X_CHECK

#define CONFIG_X_ENTRY(id, cli_, metavar_, parser_, field, def_, min_, max_, words_, flags_,       \
		       accepted_, help_)                                                           \
	[CONFIG_##id] = {.env = "THPEMU_" #id,                                                     \
			 .cli = cli_,                                                              \
			 .metavar = metavar_,                                                      \
			 .parser = &config_parse_##parser_,                                        \
			 .offset = offsetof(struct config, field),                                 \
			 .size = sizeof(CONFIG_FIELD(field)),                                      \
			 .def = def_,                                                              \
			 .min = min_,                                                              \
			 .max = max_,                                                              \
			 .words = words_,                                                          \
			 .flags = flags_,                                                          \
			 .accepted = accepted_,                                                    \
			 .help = help_},
const struct config_opt config_opts[CONFIG_NR] = {CONFIG_OPTIONS(CONFIG_X_ENTRY)};
#undef CONFIG_X_ENTRY

int config_opt_parse(const struct config_opt *o, const char *name, const char *val,
		     struct config *cfg, char *err, size_t errlen)
{
	int rc = o->parser->parse(o, name ? name : o->env, val, cfg, (char *)cfg + o->offset, err,
				  errlen);

	if (!rc && o == &config_opts[CONFIG_POOL])
		cfg->pool_given = true;
	return rc;
}

void config_defaults(struct config *cfg)
{
	char err[512];

	memset(cfg, 0, sizeof(*cfg));
	for (unsigned i = 0; i < CONFIG_NR; i++)
		if (config_opts[i].def[0])
			config_opt_parse(&config_opts[i], NULL, config_opts[i].def, cfg, err,
					 sizeof(err));
	cfg->pool_given = false;
}

int config_apply(struct config *cfg, const char *const vals[CONFIG_NR], char *err, size_t errlen)
{
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const struct config_opt *o = &config_opts[i];
		const char *v = vals[i];
		int rc;

		if (!v || (!v[0] && !o->parser->empty_ok))
			continue;
		rc = config_opt_parse(o, NULL, v, cfg, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int config_from_env(struct config *cfg, char *err, size_t errlen)
{
	const char *vals[CONFIG_NR];

	config_defaults(cfg);
	for (unsigned i = 0; i < CONFIG_NR; i++)
		vals[i] = getenv(config_opts[i].env);
	return config_apply(cfg, vals, err, errlen);
}

void config_env_save(char *saved[CONFIG_NR])
{
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const char *v = getenv(config_opts[i].env);

		saved[i] = v ? strdup(v) : NULL;
	}
}

int config_inherit(struct config *cfg, const char *const given[CONFIG_NR],
		   char *const saved[CONFIG_NR], char *err, size_t errlen)
{
	const char *vals[CONFIG_NR];

	for (unsigned i = 0; i < CONFIG_NR; i++)
		vals[i] = given[i] ? NULL : saved[i];
	return config_apply(cfg, vals, err, errlen);
}

const char *config_plugin(const struct config *cfg)
{
	return cfg->policy.plugin[0] ? cfg->policy.plugin : cfg->policy_plugin;
}

const struct config_opt *config_opt_by_cli(const char *cli)
{
	for (unsigned i = 0; i < CONFIG_NR; i++)
		if (config_opts[i].cli && strcmp(config_opts[i].cli, cli) == 0)
			return &config_opts[i];
	return NULL;
}

const struct config_opt *config_opt_by_env(const char *env)
{
	for (unsigned i = 0; i < CONFIG_NR; i++)
		if (strcmp(config_opts[i].env, env) == 0)
			return &config_opts[i];
	return NULL;
}

void config_help(FILE *f, bool markdown)
{
	if (markdown)
		fprintf(f, "| Variable | `thpemu run` | Default | Accepted | Meaning |\n"
			   "|---|---|---|---|---|\n");
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const struct config_opt *o = &config_opts[i];

		if (o->flags & CONFIG_INTERNAL && !markdown)
			continue;
		if (markdown) {
			fprintf(f, "| `%s` | %s%s%s | `%s` | %s | %s |\n", o->env,
				o->cli ? "`" : "", o->cli ? o->cli : "", o->cli ? "`" : "",
				o->def[0] ? o->def : "(none)", o->accepted, o->help);
			continue;
		}
		fprintf(f, "  %-24s %-22s %s", o->env, o->cli ? o->cli : "", o->help);
		if (o->def[0])
			fprintf(f, " [%s]", o->def);
		fputc('\n', f);
	}
}

void config_io(const struct config *c, struct io_config *ic)
{
	char err[512];

	memset(ic, 0, sizeof(*ic));
	if (c->device_spec[0])
		ic->dev = c->device;
	else
		io_device_parse("none", &ic->dev, err, sizeof(err));
	if (c->device_dir[0])
		snprintf(ic->dir, sizeof(ic->dir), "%s", c->device_dir);
	else if (ic->dev.kind == IO_DEV_PATH)
		snprintf(ic->dir, sizeof(ic->dir), "%s", ic->dev.path);
	ic->dirty = c->dirty_spec[0] != '\0';
	ic->dspec = c->dirty;
	ic->seed = c->seed;
	/* 3.1-3.3 allocate requests from the block layer's request_list and sleep in
	 * get_request_wait when it is full (block/blk-core.c, 3.2); 6.x's blk-mq has no such
	 * list (blk_mq_get_tag, block/blk-mq-tag.c, 6.12): the engine's own bound stays */
	ic->rq_3x = c->policy.era < MM_ERA_6_1;
}
