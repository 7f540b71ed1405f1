/* core/sim cost table: defaults, key=value setting, calibration file parsing and its errors. */
#include "harness.h"
#include "sim/sim.h"

#include <errno.h>
#include <stdlib.h>

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/thpemu-costs.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return NULL;
	}
	fputs(text, f);
	fclose(f);
	return path;
}

TEST(defaults_are_documented_values)
{
	struct sim_costs c;

	sim_costs_defaults(&c);
	EXPECT_EQ(c.ns[SIM_COST_SCAN_PFN], 20);
	EXPECT_EQ(c.ns[SIM_COST_CLEAR_2M], 100000);
	EXPECT_EQ(c.ns[SIM_COST_MIGRATE_PAGE], 5000);
	for (int i = 0; i < SIM_COST_NR; i++) {
		struct sim_costs d = c;

		EXPECT(c.ns[i] > 0);
		/* every key is settable by its own name */
		ASSERT_EQ(sim_costs_set(&d, sim_cost_key((enum sim_cost)i), "3ns"), 0);
		EXPECT_EQ(d.ns[i], 3);
	}
	ASSERT_STREQ(sim_cost_key(SIM_COST_MIGRATE_PAGE), "migrate-page");
}

TEST(set_takes_durations_with_units)
{
	struct sim_costs c;

	sim_costs_defaults(&c);
	ASSERT_EQ(sim_costs_set(&c, "migrate-page", "27us"), 0);
	EXPECT_EQ(c.ns[SIM_COST_MIGRATE_PAGE], 27000);
	ASSERT_EQ(sim_costs_set(&c, "scan-pfn", "12ns"), 0);
	EXPECT_EQ(c.ns[SIM_COST_SCAN_PFN], 12);
	EXPECT_EQ(sim_costs_set(&c, "scan-pfn", "12"), -EINVAL); /* a unit is required */
	EXPECT_EQ(sim_costs_set(&c, "scan-pfn", "fast"), -EINVAL);
	EXPECT_EQ(sim_costs_set(&c, "scan-pfns", "1ns"), -ENOENT);
	EXPECT_EQ(c.ns[SIM_COST_SCAN_PFN], 12);
}

TEST(file_with_comments_and_blanks_applies_all_keys)
{
	struct sim_costs c;
	char err[512] = "";
	char *p = write_tmp("# live emulator, 6.18 VM\n"
			    "\n"
			    "fault = 27us   # uffd wake-up\n"
			    "migrate-page=27us\n"
			    "  clear-4k\t=\t2.5us  \n");

	ASSERT(p);
	sim_costs_defaults(&c);
	ASSERT_EQ(sim_costs_load(&c, p, err, sizeof(err)), 0);
	EXPECT_EQ(c.ns[SIM_COST_FAULT], 27000);
	EXPECT_EQ(c.ns[SIM_COST_MIGRATE_PAGE], 27000);
	EXPECT_EQ(c.ns[SIM_COST_CLEAR_4K], 2500);
	EXPECT_EQ(c.ns[SIM_COST_SCAN_PFN], 20); /* untouched keys keep defaults */
	unlink(p);
}

TEST(errors_name_file_line_and_key_and_change_nothing)
{
	struct sim_costs c, before;
	char err[512] = "", want[128];
	char *p = write_tmp("fault=2us\n# ok\nscan-pfm=3ns\n");

	ASSERT(p);
	sim_costs_defaults(&c);
	before = c;
	EXPECT_EQ(sim_costs_load(&c, p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: unknown key 'scan-pfm' (accepted: fault,", p);
	EXPECT(strncmp(err, want, strlen(want)) == 0);
	EXPECT(strstr(err, "writeout") != NULL);
	EXPECT(strchr(err, '\n') == NULL);
	EXPECT(memcmp(&c, &before, sizeof(c)) == 0); /* all or nothing */
	unlink(p);

	p = write_tmp("clear-2m = 100\n");
	ASSERT(p);
	EXPECT_EQ(sim_costs_load(&c, p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:1: clear-2m: bad duration '100'", p);
	EXPECT(strncmp(err, want, strlen(want)) == 0);
	unlink(p);

	p = write_tmp("fault 2us\n");
	ASSERT(p);
	EXPECT_EQ(sim_costs_load(&c, p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, ":1: expected key=value") != NULL);
	unlink(p);

	EXPECT_EQ(sim_costs_load(&c, "/nonexistent/costs", err, sizeof(err)), -ENOENT);
	EXPECT(strstr(err, "/nonexistent/costs: ") == err);
}

TEST(help_lists_every_key)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	sim_costs_help(f);
	fclose(f);
	for (int i = 0; i < SIM_COST_NR; i++)
		EXPECT(strstr(buf, sim_cost_key((enum sim_cost)i)) != NULL);
	free(buf);
}

TEST_MAIN()
