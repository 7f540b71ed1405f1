/* The built-in scenarios and their parameters (--opt KEY=VALUE), with the same unit syntax as
 * every other thpemu option (util/units.h).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/units.h"

extern const struct sim_scenario sim_scen_seed2011;
extern const struct sim_scenario sim_scen_seed2011_long;
extern const struct sim_scenario sim_scen_mel2011;
extern const struct sim_scenario sim_scen_thpcompact;
extern const struct sim_scenario sim_scen_thpchallenge;
extern const struct sim_scenario sim_scen_writebackcp;

static const struct sim_scenario *const scenarios[] = {
    &sim_scen_seed2011,
    &sim_scen_seed2011_long,
    &sim_scen_mel2011,
    &sim_scen_thpcompact,
    &sim_scen_thpchallenge,
    &sim_scen_writebackcp,
    NULL,
};

const struct sim_scenario *const *sim_scenarios(void)
{
	return scenarios;
}

const struct sim_scenario *sim_scenario_find(const char *name)
{
	for (unsigned i = 0; scenarios[i]; i++)
		if (strcmp(scenarios[i]->name, name) == 0)
			return scenarios[i];
	return NULL;
}

static int parse_bool(const char *v, uint64_t *out)
{
	static const char *const yes[] = {"1", "yes", "on", "true"};
	static const char *const no[] = {"0", "no", "off", "false"};

	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

#define SIM_STR(x)  #x
#define SIM_XSTR(x) SIM_STR(x)

static const char *type_hint(enum sim_param_type t)
{
	switch (t) {
	case SIM_P_SIZE:
		return "a size, e.g. 64M";
	case SIM_P_DURATION:
		return "a duration with unit, e.g. 500ms";
	case SIM_P_COUNT:
		return "a non-negative integer";
	case SIM_P_ACTORS:
		return "a count from 0 to " SIM_XSTR(SIM_MAX_ACTORS);
	case SIM_P_FRACTION:
		return "a fraction, e.g. 0.2 or 20%";
	case SIM_P_RATIO:
		return "a ratio, e.g. 0.5, 1.25 or 125% (at most 100)";
	case SIM_P_BOOL:
		return "0/1, yes/no or on/off";
	case SIM_P_STRING:
		break;
	}
	return "text";
}

/* Parse value for parameter i into p. */
static int param_parse(const struct sim_param_def *d, unsigned i, struct sim_params *p,
		       const char *v)
{
	int rc = 0;

	if (strlen(v) >= SIM_PARAM_STR)
		return -EINVAL;
	switch (d->type) {
	case SIM_P_SIZE:
		rc = units_parse_size(v, &p->u[i]);
		break;
	case SIM_P_DURATION:
		rc = units_parse_duration(v, &p->u[i]);
		break;
	case SIM_P_COUNT:
		rc = units_parse_uint(v, 1000000000ULL, &p->u[i]);
		break;
	case SIM_P_ACTORS:
		rc = units_parse_uint(v, SIM_MAX_ACTORS, &p->u[i]);
		break;
	case SIM_P_FRACTION:
		rc = units_parse_fraction(v, &p->f[i]);
		break;
	case SIM_P_RATIO:
		rc = units_parse_ratio(v, 100, &p->f[i]); /* at most 10000% */
		break;
	case SIM_P_BOOL:
		rc = parse_bool(v, &p->u[i]);
		break;
	case SIM_P_STRING:
		break;
	}
	if (rc == 0)
		snprintf(p->s[i], SIM_PARAM_STR, "%s", v);
	return rc;
}

void sim_params_defaults(const struct sim_scenario *s, struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < s->nparams; i++)
		param_parse(&s->params[i], i, p, s->params[i].def);
}

static void accepted_keys(const struct sim_scenario *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < s->nparams && off < len; i++)
		off +=
		    (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", s->params[i].key);
}

int sim_params_set(const struct sim_scenario *s, struct sim_params *p, const char *kv, char *err,
		   size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char keys[512];
	size_t klen;

	accepted_keys(s, keys, sizeof(keys));
	if (!eq) {
		snprintf(err, errlen, "expected KEY=VALUE, got '%s' (keys of %s: %s)", kv, s->name,
			 keys);
		return -EINVAL;
	}
	klen = (size_t)(eq - kv);
	for (unsigned i = 0; i < s->nparams; i++) {
		const struct sim_param_def *d = &s->params[i];

		if (strlen(d->key) != klen || strncmp(d->key, kv, klen) != 0)
			continue;
		if (param_parse(d, i, p, eq + 1) == 0)
			return 0;
		snprintf(err, errlen, "%s: bad value '%s' (%s)", d->key, eq + 1,
			 type_hint(d->type));
		return -EINVAL;
	}
	snprintf(err, errlen, "unknown key '%.*s' for scenario %s (accepted: %s)", (int)klen, kv,
		 s->name, keys);
	return -EINVAL;
}

static unsigned param_index(const struct sim_scenario *s, const char *key)
{
	for (unsigned i = 0; i < s->nparams; i++)
		if (strcmp(s->params[i].key, key) == 0)
			return i;
	return SIM_MAX_PARAMS; /* a programming error: scenarios only ask for their own keys */
}

uint64_t sim_param_u(const struct sim_world *w, const char *key)
{
	unsigned i = param_index(w->cfg->scenario, key);

	return i < SIM_MAX_PARAMS ? w->cfg->params.u[i] : 0;
}

double sim_param_f(const struct sim_world *w, const char *key)
{
	unsigned i = param_index(w->cfg->scenario, key);

	return i < SIM_MAX_PARAMS ? w->cfg->params.f[i] : 0;
}

const char *sim_param_s(const struct sim_world *w, const char *key)
{
	unsigned i = param_index(w->cfg->scenario, key);

	return i < SIM_MAX_PARAMS ? w->cfg->params.s[i] : "";
}

void sim_scenarios_help(FILE *f)
{
	char pool[32], dur[32];

	for (unsigned i = 0; scenarios[i]; i++) {
		const struct sim_scenario *s = scenarios[i];

		fprintf(f, "  %s: %s\n    defaults: --pool %s --duration %s", s->name, s->summary,
			units_fmt_size(s->pool_bytes, pool, sizeof(pool)),
			units_fmt_duration(s->duration_ns, dur, sizeof(dur)));
		if (s->device)
			fprintf(f, " --device %s", s->device);
		if (s->fs_set)
			fprintf(f, " --fs %s",
				s->fs == MM_FS_EXT4    ? "ext4"
				: s->fs == MM_FS_TMPFS ? "tmpfs"
						       : "vfat");
		fputc('\n', f);
		for (unsigned k = 0; k < s->nparams; k++)
			fprintf(f, "    --opt %s=%s\n        %s\n", s->params[k].key,
				s->params[k].def, s->params[k].help);
	}
}
