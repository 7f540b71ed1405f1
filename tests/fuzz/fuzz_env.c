/* Fuzz target: the values of the THPEMU_* variables (core/config), each parsed by
 * config_opt_parse as the preload library parses its environment. The first byte picks the
 * variable (its index in the table), the rest is the value. A refusal names the variable. */
#include "fuzz.h"
#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg;
	const struct config_opt *o;
	char err[1024], *v;

	if (size < 1)
		return 0;
	o = &config_opts[data[0] % CONFIG_NR];
	v = fuzz_str(data + 1, size - 1);
	config_defaults(&cfg);
	err[0] = '\0';
	if (config_opt_parse(o, NULL, v, &cfg, err, sizeof(err)) != 0)
		FUZZ_CHECK(strncmp(err, o->env, strlen(o->env)) == 0);
	free(v);
	return 0;
}
