/* Fuzz target: the --dirty and --device specs (core/io/spec.c, THPEMU_DIRTY/THPEMU_DEVICE) and
 * the simulator's --device (core/sim/run.c), both over the device model's keys
 * (core/io/devmodel_params.c). A dirty spec that parses formats to a canonical spec that parses
 * back to the same; a device spec that parses gives a model devm_create accepts, whose formatted
 * keys parse back to the same model. */
#include "fuzz.h"
#include "io/io.h"
#include "sim/sim.h"

static void check_model(const struct devm_params *p)
{
	struct devm_params q;
	struct devm *m;
	char *a = NULL, *b = NULL, *save = NULL;
	size_t alen = 0, blen = 0;
	FILE *f;

	FUZZ_CHECK(devm_create(p, 1, &m) == 0);
	devm_destroy(m);
	f = open_memstream(&a, &alen);
	FUZZ_CHECK(f);
	devm_params_format(p, f);
	fclose(f);
	q = *p;
	FUZZ_CHECK(devm_preset("fast", &q) == 0);
	for (char *tok = strtok_r(a, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		FUZZ_CHECK(devm_params_set_kv(&q, tok) == 0);
	f = open_memstream(&b, &blen);
	FUZZ_CHECK(f);
	devm_params_format(&q, f);
	fclose(f);
	free(a);
	a = NULL;
	f = open_memstream(&a, &alen);
	FUZZ_CHECK(f);
	devm_params_format(p, f);
	fclose(f);
	FUZZ_CHECK(strcmp(a, b) == 0);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), err[512], a[512], b[512];
	struct io_dirty_spec d, d2;
	struct io_device_spec dev;
	struct devm_params p;

	if (io_dirty_parse(s, &d, err, sizeof(err)) == 0) {
		io_dirty_format(&d, a, sizeof(a));
		FUZZ_CHECK(io_dirty_parse(a, &d2, err, sizeof(err)) == 0);
		io_dirty_format(&d2, b, sizeof(b));
		FUZZ_CHECK(strcmp(a, b) == 0);
	}
	if (io_device_parse(s, &dev, err, sizeof(err)) == 0)
		check_model(&dev.model);
	if (sim_device_parse(s, &p, err, sizeof(err)) == 0)
		check_model(&p);
	free(s);
	return 0;
}
