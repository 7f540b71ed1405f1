/* A small single-header test harness (kselftest_harness-like).
 *
 *   #include "harness.h"
 *   TEST(buddy_merges_to_max_order) { ... ASSERT_EQ(a, b); EXPECT(x > 0); }
 *   TEST_MAIN()
 *
 * Each test runs in a forked child with a timeout (HARNESS_TIMEOUT seconds, default 120), so a
 * crash or hang fails that test only. ASSERT_* stops the test, EXPECT_* records and goes on.
 * SKIP(reason) skips the test with the reason printed — except under CI=true, where a skip is a
 * failure (CI machines have root, /dev/userfaultfd and /dev/fuse). The program exits 0 when all
 * ran tests passed, 77 when every test skipped (ctest SKIP_RETURN_CODE), 1 otherwise.
 * Run one test: ./prog NAME.
 */
#ifndef THPEMU_TEST_HARNESS_H
#define THPEMU_TEST_HARNESS_H

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HARNESS_MAX_TESTS 256

struct harness_test {
	const char *name;
	void (*fn)(void);
};

static struct harness_test harness_tests[HARNESS_MAX_TESTS];
static int harness_ntests;
static int harness_failed_here; /* in the child: number of failed expectations */

static inline void harness_register(const char *name, void (*fn)(void))
{
	if (harness_ntests < HARNESS_MAX_TESTS)
		harness_tests[harness_ntests++] = (struct harness_test){name, fn};
}

#define TEST(name)                                                                                 \
	static void name(void);                                                                    \
	__attribute__((constructor)) static void harness_reg_##name(void)                          \
	{                                                                                          \
		harness_register(#name, name);                                                     \
	}                                                                                          \
	static void name(void)

/* A whole file as a NUL-terminated string (free() it); NULL if it cannot be opened. */
static inline char *harness_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = 0;
	fclose(f);
	return buf;
}

static inline bool harness_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
}

#define HARNESS_EXIT_SKIP 77

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "  skip: " __VA_ARGS__);                                           \
		fputc('\n', stderr);                                                               \
		if (harness_in_ci()) {                                                             \
			fprintf(stderr, "  CI=true: a skip is a failure here\n");                  \
			_exit(1);                                                                  \
		}                                                                                  \
		_exit(HARNESS_EXIT_SKIP);                                                          \
	} while (0)

#define HARNESS_FAIL_(stop, ...)                                                                   \
	do {                                                                                       \
		fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                  \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		harness_failed_here++;                                                             \
		if (stop)                                                                          \
			_exit(1);                                                                  \
	} while (0)

#define EXPECT(c)                                                                                  \
	do {                                                                                       \
		if (!(c))                                                                          \
			HARNESS_FAIL_(0, "expected: %s", #c);                                      \
	} while (0)
#define ASSERT(c)                                                                                  \
	do {                                                                                       \
		if (!(c))                                                                          \
			HARNESS_FAIL_(1, "assertion failed: %s", #c);                              \
	} while (0)

#define HARNESS_CMP_(stop, a, op, b)                                                               \
	do {                                                                                       \
		long long ha_ = (long long)(a), hb_ = (long long)(b);                              \
		if (!(ha_ op hb_))                                                                 \
			HARNESS_FAIL_(stop, "%s %s %s: %lld vs %lld", #a, #op, #b, ha_, hb_);      \
	} while (0)

#define ASSERT_EQ(a, b) HARNESS_CMP_(1, a, ==, b)
#define ASSERT_NE(a, b) HARNESS_CMP_(1, a, !=, b)
#define ASSERT_LT(a, b) HARNESS_CMP_(1, a, <, b)
#define ASSERT_LE(a, b) HARNESS_CMP_(1, a, <=, b)
#define ASSERT_GT(a, b) HARNESS_CMP_(1, a, >, b)
#define ASSERT_GE(a, b) HARNESS_CMP_(1, a, >=, b)
#define EXPECT_EQ(a, b) HARNESS_CMP_(0, a, ==, b)
#define EXPECT_NE(a, b) HARNESS_CMP_(0, a, !=, b)
#define EXPECT_LT(a, b) HARNESS_CMP_(0, a, <, b)
#define EXPECT_LE(a, b) HARNESS_CMP_(0, a, <=, b)
#define EXPECT_GT(a, b) HARNESS_CMP_(0, a, >, b)
#define EXPECT_GE(a, b) HARNESS_CMP_(0, a, >=, b)

#define EXPECT_NEAR(a, b, tol)                                                                     \
	do {                                                                                       \
		double ha_ = (a), hb_ = (b), ht_ = (tol);                                          \
		if (!(ha_ - hb_ <= ht_ && hb_ - ha_ <= ht_))                                       \
			HARNESS_FAIL_(0, "%s ~ %s (tol %g): %.9g vs %.9g", #a, #b, ht_, ha_, hb_); \
	} while (0)
#define ASSERT_STREQ(a, b)                                                                         \
	do {                                                                                       \
		const char *ha_ = (a), *hb_ = (b);                                                 \
		if (!ha_ || !hb_ || strcmp(ha_, hb_) != 0)                                         \
			HARNESS_FAIL_(1, "%s == %s: \"%s\" vs \"%s\"", #a, #b,                     \
				      ha_ ? ha_ : "(null)", hb_ ? hb_ : "(null)");                 \
	} while (0)

static inline int harness_run_one(const struct harness_test *t, unsigned timeout)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		alarm(timeout);
		t->fn();
		fflush(NULL);
		_exit(harness_failed_here ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "  killed by signal %d%s\n", WTERMSIG(status),
		WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
	return 1;
}

static inline int harness_main(int argc, char **argv)
{
	const char *to = getenv("HARNESS_TIMEOUT");
	unsigned timeout = to ? (unsigned)atoi(to) : 120;
	int ran = 0, failed = 0, skipped = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < harness_ntests; i++) {
		const struct harness_test *t = &harness_tests[i];
		int rc;

		if (argc > 1) {
			bool want = false;

			for (int a = 1; a < argc; a++)
				want |= strcmp(argv[a], t->name) == 0;
			if (!want)
				continue;
		}
		printf("[ RUN  ] %s\n", t->name);
		rc = harness_run_one(t, timeout);
		ran++;
		if (rc == 0) {
			printf("[  OK  ] %s\n", t->name);
		} else if (rc == HARNESS_EXIT_SKIP) {
			printf("[ SKIP ] %s\n", t->name);
			skipped++;
		} else {
			printf("[ FAIL ] %s\n", t->name);
			failed++;
		}
	}
	printf("%d tests, %d passed, %d failed, %d skipped\n", ran, ran - failed - skipped, failed,
	       skipped);
	if (ran == 0)
		return 1;
	if (failed)
		return 1;
	return skipped == ran ? HARNESS_EXIT_SKIP : 0;
}

#define TEST_MAIN()                                                                                \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		return harness_main(argc, argv);                                                   \
	}

#endif
