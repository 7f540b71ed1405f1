/* The report's host counters (core/uffd/report.c): core/uffd/README.md lists every one of them
 * with the help text the code carries, so the two cannot drift. */
#include "harness.h"

#include <stdlib.h>

#include "uffd/uffd.h"

TEST(report_readme_lists_host_counters)
{
	const char *src = getenv("THPEMU_SOURCE_DIR");
	char path[1024], line[512], *readme;

	if (!src)
		SKIP("THPEMU_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/core/uffd/README.md", src);
	readme = harness_slurp(path);
	ASSERT(readme != NULL);
	for (unsigned i = 0; i < UFFD_NR_HOST; i++) {
		snprintf(line, sizeof(line), "| `%s` | %s |\n", uffd_host_names[i],
			 uffd_host_help[i]);
		if (!strstr(readme, line))
			fprintf(stderr, "  README.md lacks: %s", line);
		EXPECT(strstr(readme, line) != NULL);
	}
	free(readme);
}

TEST_MAIN()
