/* core/policy/plugin.c: loading a policy plugin - the example plugins built in
 * $THPEMU_BUILD_DIR/plugins load, run their init with ARGS and answer; a missing file, a file
 * that is not a shared object, an unknown plugin name and a refused init each give a one-line
 * reason and no handle (names that resolve: tests/integration/install.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "policy/plugin.h"

static const char *build_dir(void)
{
	const char *d = getenv("THPEMU_BUILD_DIR");

	ASSERT(d != NULL && *d);
	return d;
}

TEST(example_plugin_loads_and_answers)
{
	struct policy_plugin p;
	char spec[512], why[400];
	struct thpemu_fault_info in = {.size = sizeof(in), .region_len = 8ULL << 20};
	uint8_t orders[10];

	snprintf(spec, sizeof(spec), "%s/plugins/huge_big_regions.so?4:0", build_dir());
	ASSERT_EQ(policy_plugin_load(spec, &p, why, sizeof(why)), 0);
	ASSERT(p.pl != NULL);
	ASSERT_STREQ(p.pl->name, "huge-big-regions");
	ASSERT(strstr(spec, p.path) == spec && !strchr(p.path, '?'));
	/* N = 4 MiB, X = 0: an 8 MiB region with a free 2 MiB block and a possible PMD is huge */
	in.possible_orders = 1U | 1U << 9;
	in.nr_free[9] = 1;
	EXPECT_EQ(p.pl->select_orders(&in, orders, 10), 1);
	EXPECT_EQ(orders[0], 9);
	in.nr_free[9] = 0; /* no free block left: order 0 */
	EXPECT_EQ(p.pl->select_orders(&in, orders, 10), 0);
	policy_plugin_unload(&p);
	EXPECT(p.handle == NULL);
}

TEST(failures_say_why)
{
	struct policy_plugin p;
	char spec[512], why[400];
	FILE *f;

	EXPECT_EQ(policy_plugin_load("/nonexistent/x.so", &p, why, sizeof(why)), -1);
	EXPECT(strstr(why, "no such file") != NULL);
	EXPECT(p.pl == NULL);
	/* a bare name is looked up among the installed plugins; none of that name: said so */
	EXPECT_EQ(policy_plugin_load("no_such_plugin_xyz", &p, why, sizeof(why)), -1);
	EXPECT(strstr(why, "nor an installed plugin") != NULL);
	EXPECT(p.pl == NULL);
	snprintf(spec, sizeof(spec), "%s/util_plugin_text.so", build_dir());
	f = fopen(spec, "w");
	ASSERT(f != NULL);
	fputs("not an ELF file\n", f);
	fclose(f);
	EXPECT_EQ(policy_plugin_load(spec, &p, why, sizeof(why)), -1);
	EXPECT(strstr(why, "not a loadable shared object") != NULL);
	remove(spec);
	snprintf(spec, sizeof(spec), "%s/plugins/huge_big_regions.so?nonsense", build_dir());
	EXPECT_EQ(policy_plugin_load(spec, &p, why, sizeof(why)), -1);
	EXPECT(strstr(why, "init refused") != NULL);
	EXPECT(p.handle == NULL);
}

TEST_MAIN()
