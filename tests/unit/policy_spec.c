/* core/policy/spec.c: the spec language as the commands parse it - mm's profiles and keys, plus
 * host; an unknown profile lists host with mm's; the help lists every profile and every key. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "policy/policy.h"

TEST(mm_profiles_parse_as_in_mm)
{
	static const char *const specs[] = {"linux-3.1", "linux-3.2+nostall:wb-wait-max=50ms",
					    "modern-madvise", "thp-never/defer:khugepaged=no"};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct mm_policy a, b;
		char err[512], fa[512], fb[512];

		ASSERT_EQ(policy_parse(specs[i], &a, err, sizeof(err)), 0);
		ASSERT_EQ(mm_policy_parse(specs[i], &b, err, sizeof(err)), 0);
		mm_policy_format(&a, fa, sizeof(fa));
		mm_policy_format(&b, fb, sizeof(fb));
		EXPECT(strcmp(fa, fb) == 0);
	}
}

TEST(errors_are_mms_and_name_host)
{
	struct mm_policy p;
	char err[1024];

	EXPECT_EQ(policy_parse("linux-2.6", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown profile 'linux-2.6'") != NULL);
	EXPECT(strstr(err, "linux-3.2+nostall|") != NULL);
	EXPECT(strstr(err, "thp-ENABLED/DEFRAG|host") != NULL);
	EXPECT_EQ(policy_parse("linux-3.1:wb-wait-max=soon", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "wb-wait-max") != NULL);
	/* host's own error (no THP under this root), the same with keys after it */
	setenv("THPEMU_SYSFS_ROOT", "/nonexistent", 1);
	EXPECT_EQ(policy_parse("host:khugepaged=no", &p, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "policy host: cannot read /nonexistent/") != NULL);
}

TEST(help_lists_every_profile_and_key)
{
	char *buf = NULL, accepted[160], line[256];
	const char *name;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT(f != NULL);
	policy_help(f);
	fclose(f);
	for (const char *const *n = mm_policy_names(); *n; n++)
		if (strncmp(*n, "thp-", 4))
			EXPECT(strstr(buf, *n) != NULL);
	EXPECT(strstr(buf, "thp-ENABLED/DEFRAG") != NULL);
	EXPECT(strstr(buf, "    host ") != NULL);
	for (size_t i = 0; (name = mm_policy_key_doc(i, accepted, sizeof(accepted), NULL)); i++) {
		snprintf(line, sizeof(line), "    %s=%s\n", name, accepted);
		EXPECT(strstr(buf, line) != NULL);
	}
	EXPECT(strstr(buf, "wb-wait-max=DURATION") != NULL);
	EXPECT(strstr(buf, "second-compaction=none|async|sync-light|sync") != NULL);
	free(buf);
}

TEST_MAIN()
