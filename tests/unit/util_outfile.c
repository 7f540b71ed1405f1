/* Output files nobody else can redirect (core/util/outfile.c) and the escaping of values in
 * messages (core/util/text.c).
 *
 * Attacks are staged as they would happen in /tmp: a sticky world-writable directory where
 * "another user" (uid 65534, by chown; these tests need root for that and skip without it)
 * plants a symbolic link, a hard link, a FIFO or a file of their own where thpemu will write.
 * Every refusal must leave the victim file byte for byte as it was.
 */
#include "harness.h"
#include "util/outfile.h"
#include "util/text.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#define OTHER 65534 /* nobody */

static char base[64];	 /* private to the test */
static char shared[128]; /* base/shared: 01777, like /tmp */
static char victim[128]; /* base/victim: a file of ours that must never change */

static void need_root(void)
{
	if (geteuid() != 0)
		SKIP("needs root (to stage another user's files with chown)");
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (long)strlen(text));
	close(fd);
}

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/thpemu-outfile.XXXXXX");
	ASSERT(mkdtemp(base));
	snprintf(shared, sizeof(shared), "%s/shared", base);
	ASSERT_EQ(mkdir(shared, 0777), 0);
	ASSERT_EQ(chmod(shared, 01777), 0);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	write_text(victim, "precious\n");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void teardown(void)
{
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void expect_victim_intact(void)
{
	char buf[64] = "";
	int fd = open(victim, O_RDONLY);

	ASSERT(fd >= 0);
	EXPECT_EQ(read(fd, buf, sizeof(buf) - 1), 9);
	close(fd);
	EXPECT(strcmp(buf, "precious\n") == 0);
}

/* Both outfile_check and outfile_open refuse path with an error naming it and containing
 * want; the victim is untouched. */
static void expect_refused(const char *path, const char *want)
{
	char err[512] = "", err2[512] = "";
	int rc = outfile_check(path, err, sizeof(err));
	int fd = outfile_open(path, err2, sizeof(err2));

	EXPECT(rc < 0);
	EXPECT(fd < 0);
	if (fd >= 0)
		close(fd);
	EXPECT(strstr(err, path) != NULL);
	EXPECT(strstr(err, want) != NULL);
	EXPECT(strstr(err2, want) != NULL);
	if (!strstr(err, want) || !strstr(err2, want))
		fprintf(stderr, "  check: %s\n  open:  %s\n  wanted: %s\n", err, err2, want);
	expect_victim_intact();
}

/* text_html_escape: the four characters HTML gives meaning to in text and quoted attributes,
 * nothing else; NULL writes nothing. */
TEST(html_escape_of_text_and_attributes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT(f != NULL);
	text_html_escape(f, "a<b> & \"c\" 'd' é");
	text_html_escape(f, NULL);
	ASSERT_EQ(fclose(f), 0);
	EXPECT(strcmp(buf, "a&lt;b&gt; &amp; &quot;c&quot; 'd' é") == 0);
	free(buf);
}

TEST(a_new_file_is_created_ours_and_close_on_exec)
{
	char path[256], err[256];
	struct stat st;
	int fd, saved;

	setup();
	snprintf(path, sizeof(path), "%s/report.json", shared);
	ASSERT_EQ(outfile_check(path, err, sizeof(err)), 0);
	EXPECT_EQ(access(path, F_OK), -1); /* checking creates nothing */
	errno = 12345;
	fd = outfile_open(path, err, sizeof(err));
	saved = errno;
	ASSERT(fd >= 0);
	EXPECT_EQ(saved, 12345); /* the program's errno is left alone */
	EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	ASSERT_EQ(fstat(fd, &st), 0);
	EXPECT(S_ISREG(st.st_mode));
	EXPECT_EQ(st.st_uid, geteuid());
	close(fd);
	teardown();
}

TEST(an_existing_file_of_ours_is_truncated)
{
	char err[256];
	struct stat st;
	int fd;

	setup();
	fd = outfile_open(victim, err, sizeof(err));
	ASSERT(fd >= 0);
	ASSERT_EQ(fstat(fd, &st), 0);
	EXPECT_EQ(st.st_size, 0);
	EXPECT_EQ(write(fd, "new\n", 4), 4);
	close(fd);
	teardown();
}

/* The names in dir other than victim and shared (what an output left behind). */
static int stray_files(const char *dir)
{
	char cmd[300], line[300];
	int n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		n += strcmp(line, "victim\n") && strcmp(line, "shared\n");
	pclose(p);
	return n;
}

TEST(a_whole_output_replaces_the_file_only_once_complete)
{
	char err[512], buf[64] = "";
	struct outfile o;
	struct stat st;
	int fd;

	setup();
	ASSERT_EQ(chmod(victim, 0600), 0);
	ASSERT_EQ(outfile_create(&o, victim, err, sizeof(err)), 0);
	EXPECT(fcntl(o.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT(strstr(o.tmp, "/.victim.thpemu-") != NULL);
	ASSERT_EQ(outfile_write(&o, "new\n", 4, err, sizeof(err)), 0);
	expect_victim_intact(); /* not yet */
	ASSERT_EQ(outfile_commit(&o, err, sizeof(err)), 0);
	fd = open(victim, O_RDONLY);
	ASSERT(fd >= 0);
	EXPECT_EQ(read(fd, buf, sizeof(buf) - 1), 4);
	close(fd);
	EXPECT(strcmp(buf, "new\n") == 0);
	ASSERT_EQ(stat(victim, &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600); /* the destination's permissions */
	EXPECT_EQ(stray_files(base), 0);
	teardown();
}

TEST(an_abandoned_output_leaves_the_file_and_nothing_else)
{
	char err[512];
	struct outfile o;

	setup();
	ASSERT_EQ(outfile_create(&o, victim, err, sizeof(err)), 0);
	ASSERT_EQ(outfile_write(&o, "half", 4, err, sizeof(err)), 0);
	outfile_abort(&o);
	expect_victim_intact();
	EXPECT_EQ(stray_files(base), 0);
	teardown();
}

TEST(a_destination_replaced_meanwhile_by_a_link_is_not_written)
{
	char err[512], path[256];
	struct outfile o;

	need_root();
	setup();
	snprintf(path, sizeof(path), "%s/report.json", shared);
	ASSERT_EQ(outfile_create(&o, path, err, sizeof(err)), 0);
	ASSERT_EQ(outfile_write(&o, "x", 1, err, sizeof(err)), 0);
	ASSERT_EQ(symlink(victim, path), 0); /* planted after the check */
	ASSERT_EQ(lchown(path, OTHER, OTHER), 0);
	EXPECT(outfile_commit(&o, err, sizeof(err)) < 0);
	EXPECT(strstr(err, "symbolic link") != NULL);
	expect_victim_intact();
	unlink(path);
	EXPECT_EQ(stray_files(shared), 0);
	teardown();
}

TEST(pseudo_file_systems_are_refused)
{
	char err[512];
	struct outfile o;

	EXPECT(outfile_check("/proc/version", err, sizeof(err)) < 0);
	EXPECT(strstr(err, "on proc, a pseudo file system") != NULL);
	EXPECT(outfile_check("/sys/kernel/report.json", err, sizeof(err)) < 0);
	EXPECT(strstr(err, "on sysfs") != NULL);
	EXPECT(outfile_create(&o, "/proc/self/report.json", err, sizeof(err)) < 0);
	EXPECT(outfile_check("/dev/null", err, sizeof(err)) == 0); /* the null device still is */
}

TEST(a_streamed_output_is_removed_only_if_still_ours)
{
	char err[256], path[256];
	int fd;

	setup();
	snprintf(path, sizeof(path), "%s/t.trace", base);
	fd = outfile_open(path, err, sizeof(err));
	ASSERT(fd >= 0);
	EXPECT_EQ(outfile_remove(path, fd), 0);
	EXPECT_EQ(access(path, F_OK), -1);
	write_text(path, "someone else's\n"); /* the name is another file now */
	EXPECT_EQ(outfile_remove(path, fd), -ENOENT);
	EXPECT_EQ(access(path, F_OK), 0);
	close(fd);
	teardown();
}

TEST(a_planted_symlink_is_refused_not_followed)
{
	char link[256];

	need_root();
	setup();
	snprintf(link, sizeof(link), "%s/report.json", shared);
	ASSERT_EQ(symlink(victim, link), 0);
	ASSERT_EQ(lchown(link, OTHER, OTHER), 0);
	expect_refused(link, "is a symbolic link");
	/* even our own symlink: the rule is about the file, not who made the link */
	ASSERT_EQ(lchown(link, 0, 0), 0);
	expect_refused(link, "is a symbolic link");
	teardown();
}

TEST(a_dangling_symlink_is_refused_and_nothing_is_created)
{
	char link[256], target[256];

	setup();
	snprintf(link, sizeof(link), "%s/t.trace", shared);
	snprintf(target, sizeof(target), "%s/created-through-the-link", base);
	ASSERT_EQ(symlink(target, link), 0);
	expect_refused(link, "is a symbolic link");
	EXPECT_EQ(access(target, F_OK), -1);
	teardown();
}

TEST(a_hard_link_to_our_file_is_refused)
{
	char hard[256];

	setup();
	snprintf(hard, sizeof(hard), "%s/hard", shared);
	ASSERT_EQ(link(victim, hard), 0);
	expect_refused(hard, "has 2 hard links");
	teardown();
}

TEST(someone_elses_file_is_refused)
{
	char path[256];

	need_root();
	setup();
	snprintf(path, sizeof(path), "%s/theirs.json", shared);
	write_text(path, "theirs\n");
	ASSERT_EQ(chown(path, OTHER, OTHER), 0);
	expect_refused(path, "belongs to uid 65534");
	teardown();
}

TEST(a_fifo_is_refused_without_waiting_for_a_reader)
{
	char path[256];

	setup();
	snprintf(path, sizeof(path), "%s/fifo", shared);
	ASSERT_EQ(mkfifo(path, 0666), 0);
	expect_refused(path, "FIFO"); /* a blocking open would hang the test (timeout) */
	teardown();
}

TEST(the_null_device_discards_other_devices_are_refused)
{
	char err[256];
	int fd;

	setup();
	fd = outfile_open("/dev/null", err, sizeof(err));
	ASSERT(fd >= 0);
	EXPECT_EQ(write(fd, "x", 1), 1);
	close(fd);
	expect_refused("/dev/zero", "is a character device, not a regular file");
	teardown();
}

TEST(directories_and_missing_directories_are_refused)
{
	char path[256];

	setup();
	expect_refused(shared, "is a directory");
	snprintf(path, sizeof(path), "%s/", shared);
	expect_refused(path, "names a directory");
	snprintf(path, sizeof(path), "%s/no/such/r.json", base);
	expect_refused(path, "does not exist");
	snprintf(path, sizeof(path), "%s/r.json", victim);
	expect_refused(path, "is not a directory");
	expect_refused("", "an empty path");
	teardown();
}

TEST(a_world_writable_directory_must_be_sticky)
{
	char dir[256], path[300];

	setup();
	snprintf(dir, sizeof(dir), "%s/open", base);
	ASSERT_EQ(mkdir(dir, 0777), 0);
	ASSERT_EQ(chmod(dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/r.json", dir);
	expect_refused(path, "writable by everyone and not sticky");
	{
		char err[256];

		EXPECT(outfile_check_dir(dir, err, sizeof(err)) < 0);
		ASSERT_EQ(chmod(dir, 01777), 0);
		EXPECT_EQ(outfile_check(path, err, sizeof(err)), 0);
		EXPECT_EQ(outfile_check_dir(dir, err, sizeof(err)), 0);
	}
	teardown();
}

TEST(a_directory_we_cannot_write_is_refused)
{
	char dir[256], path[300];

	setup();
	snprintf(dir, sizeof(dir), "%s/ro", base);
	ASSERT_EQ(mkdir(dir, 0555), 0);
	snprintf(path, sizeof(path), "%s/r.json", dir);
	if (geteuid() == 0) { /* root writes anywhere: be somebody else (this is a child) */
		ASSERT_EQ(chmod(base, 0711), 0);
		ASSERT_EQ(setresgid(OTHER, OTHER, 0), 0);
		ASSERT_EQ(setresuid(OTHER, OTHER, 0), 0);
	}
	expect_refused(path, "is not writable");
	if (setresuid(0, 0, 0) == 0 && setresgid(0, 0, 0) == 0)
		teardown();
}

TEST(someone_elses_directory_symlink_in_a_shared_directory_is_not_followed)
{
	char link[256], path[300], err[512];

	need_root();
	setup();
	/* nobody makes /tmp/shared/results -> our private directory */
	snprintf(link, sizeof(link), "%s/results", shared);
	ASSERT_EQ(symlink(base, link), 0);
	ASSERT_EQ(lchown(link, OTHER, OTHER), 0);
	snprintf(path, sizeof(path), "%s/victim", link);
	expect_refused(path, "belongs to uid 65534 in the shared directory");
	/* the same link made by us is followed (as fs.protected_symlinks would) */
	ASSERT_EQ(lchown(link, 0, 0), 0);
	snprintf(path, sizeof(path), "%s/new.json", link);
	EXPECT_EQ(outfile_check(path, err, sizeof(err)), 0);
	teardown();
}

TEST(fopen_gives_a_stream_on_the_checked_file)
{
	char path[256], err[256], buf[16] = "";
	FILE *f;
	int fd;

	setup();
	snprintf(path, sizeof(path), "%s/out.txt", base);
	f = outfile_fopen(path, err, sizeof(err));
	ASSERT(f != NULL);
	fputs("hello\n", f);
	ASSERT_EQ(fclose(f), 0);
	fd = open(path, O_RDONLY);
	ASSERT(fd >= 0);
	EXPECT_EQ(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	snprintf(path, sizeof(path), "%s/none/out.txt", base);
	EXPECT(outfile_fopen(path, err, sizeof(err)) == NULL);
	EXPECT(strstr(err, "does not exist") != NULL);
	teardown();
}

TEST(a_keep_directory_is_created_private_or_must_be_ours)
{
	char dir[256], link[256], err[512];
	struct stat st;

	need_root();
	setup();
	snprintf(dir, sizeof(dir), "%s/keep", base);
	ASSERT_EQ(outfile_dir(dir, err, sizeof(err)), 0);
	ASSERT_EQ(lstat(dir, &st), 0);
	EXPECT_EQ(st.st_mode & 07777, 0700);
	EXPECT_EQ(outfile_dir(dir, err, sizeof(err)), 0); /* an existing one of ours */
	snprintf(link, sizeof(link), "%s/keep-link", shared);
	ASSERT_EQ(symlink(dir, link), 0);
	EXPECT(outfile_dir(link, err, sizeof(err)) < 0);
	EXPECT(strstr(err, "a symbolic link") != NULL);
	ASSERT_EQ(chown(dir, OTHER, OTHER), 0);
	EXPECT(outfile_dir(dir, err, sizeof(err)) < 0);
	EXPECT(strstr(err, "not ours") != NULL);
	snprintf(dir, sizeof(dir), "%s/a/b", base);
	EXPECT(outfile_dir(dir, err, sizeof(err)) < 0);
	EXPECT(strstr(err, "does not exist") != NULL);
	EXPECT(outfile_dir(victim, err, sizeof(err)) < 0);
	EXPECT(strstr(err, "not a directory") != NULL);
	teardown();
}

TEST(same_names_one_file_whether_or_not_it_exists)
{
	char a[256], b[256];

	setup();
	snprintf(a, sizeof(a), "%s/x.json", base);
	snprintf(b, sizeof(b), "%s/shared/../x.json", base);
	EXPECT(outfile_same(a, b));
	snprintf(b, sizeof(b), "%s/y.json", base);
	EXPECT(!outfile_same(a, b));
	snprintf(b, sizeof(b), "%s/shared/../victim", base);
	EXPECT(outfile_same(victim, b));
	EXPECT(!outfile_same(victim, a));
	teardown();
}

/* ---- text_escape ----------------------------------------------------------------------------- */

static void expect_escaped(const char *in, size_t len, const char *want)
{
	char buf[256];

	text_escape(in, buf, len);
	EXPECT(strcmp(buf, want) == 0);
	if (strcmp(buf, want))
		fprintf(stderr, "  got '%s', wanted '%s'\n", buf, want);
}

TEST(escape_keeps_printable_text_and_utf8)
{
	expect_escaped("/tmp/r.json", 256, "/tmp/r.json");
	expect_escaped("caf\xc3\xa9 \xe2\x80\x93 \xf0\x9f\x98\x80", 256,
		       "caf\xc3\xa9 \xe2\x80\x93 \xf0\x9f\x98\x80");
	expect_escaped("a\\x0ab", 256, "a\\x0ab"); /* idempotent: backslashes stay */
	expect_escaped(NULL, 256, "(null)");
}

TEST(escape_makes_one_line_of_anything)
{
	char buf[64];

	expect_escaped("a\nb", 256, "a\\x0ab");
	expect_escaped("\r\t\x1b[31m\x7f", 256, "\\x0d\\x09\\x1b[31m\\x7f");
	expect_escaped("\xff\xfe", 256, "\\xff\\xfe");		/* not UTF-8 */
	expect_escaped("\xc3", 256, "\\xc3");			/* cut sequence */
	expect_escaped("\xc0\xaf", 256, "\\xc0\\xaf");		/* overlong '/' */
	expect_escaped("\xed\xa0\x80", 256, "\\xed\\xa0\\x80"); /* a surrogate */
	expect_escaped("\xc2\x9b"
		       "1m",
		       256, "\\xc2\\x9b1m"); /* C1 CSI */
	expect_escaped("\xe2\x80\xae"
		       "txt",
		       256, "\\xe2\\x80\\xaetxt"); /* RTL override */
	text_escape("x\ny", buf, sizeof(buf));
	EXPECT(strchr(buf, '\n') == NULL);
	text_escape(buf, buf + 32, 32); /* escaping again changes nothing */
	EXPECT(strcmp(buf, buf + 32) == 0);
}

TEST(escape_cuts_long_values_at_a_character)
{
	expect_escaped("abcdefgh", 9, "abcdefgh");
	expect_escaped("abcdefghi", 9, "abcde...");
	expect_escaped("ab\ncdefgh", 9, "ab..."); /* never half an escape */
	expect_escaped("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 9, "\xc3\xa9\xc3\xa9...");
	expect_escaped("abc", 1, "");
	expect_escaped("abcdef", 3, "");
}

TEST_MAIN()
