/* Host tools run without a shell (core/oracle/exec.c): output captured or sent to a file, the
 * tail of stderr kept for the message, statuses told apart. */
#include "harness.h"
#include "oracle/oracle.h"

#include <errno.h>
#include <fcntl.h>

TEST(stdout_is_captured)
{
	const char *argv[] = {"echo", "hello", "world", NULL};
	struct oracle_cmd c;

	ASSERT_EQ(oracle_cmd_run(argv, NULL, -1, &c), 0);
	ASSERT_STREQ(c.out, "hello world\n");
	EXPECT_EQ(c.outlen, 12);
	oracle_cmd_free(&c);
}

TEST(statuses_and_reasons)
{
	const char *f[] = {"false", NULL};
	const char *missing[] = {"thpemu-no-such-program", NULL};
	const char *err[] = {"sh", "-c", "echo first >&2; echo 'why it failed' >&2; exit 3", NULL};
	struct oracle_cmd c;

	EXPECT_EQ(oracle_cmd_run(f, NULL, -1, &c), -ECHILD);
	ASSERT_STREQ(oracle_cmd_why(&c), "exit status 1");
	oracle_cmd_free(&c);
	EXPECT_EQ(oracle_cmd_run(missing, NULL, -1, &c), -ENOENT);
	oracle_cmd_free(&c);
	EXPECT_EQ(oracle_cmd_run(err, NULL, -1, &c), -ECHILD);
	ASSERT_STREQ(oracle_cmd_why(&c), "why it failed");
	oracle_cmd_free(&c);
}

TEST(stdout_to_a_file_in_a_directory)
{
	const char *argv[] = {"pwd", NULL};
	char path[] = "/tmp/oracle_exec_XXXXXX", buf[64] = "";
	int fd = mkstemp(path);
	struct oracle_cmd c;

	ASSERT(fd >= 0);
	ASSERT_EQ(oracle_cmd_run(argv, "/", fd, &c), 0);
	EXPECT(!c.out);
	ASSERT_EQ(pread(fd, buf, sizeof(buf) - 1, 0), 2);
	ASSERT_STREQ(buf, "/\n");
	oracle_cmd_free(&c);
	close(fd);
	unlink(path);
}

TEST(fmt_says_when_it_did_not_fit)
{
	char buf[8];

	EXPECT_EQ(oracle_fmt(buf, sizeof(buf), "%s", "1234567"), 0);
	EXPECT_EQ(oracle_fmt(buf, sizeof(buf), "%s", "12345678"), -ENAMETOOLONG);
	ASSERT_STREQ(buf, "1234567");
}

TEST_MAIN()
