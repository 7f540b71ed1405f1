/* The newc cpio writer (core/oracle/cpio.c): read back by a reader written from the format's
 * description, byte-identical for the same inputs, errors sticky. */
#include "harness.h"
#include "oracle/cpio.h"

#include <errno.h>
#include <sys/stat.h>

struct entry {
	char name[256];
	unsigned mode, nlink, rmajor, rminor, mtime, uid;
	size_t size;
	const unsigned char *data;
};

static unsigned hex8(const unsigned char *p)
{
	char buf[9];

	memcpy(buf, p, 8);
	buf[8] = '\0';
	return (unsigned)strtoul(buf, NULL, 16);
}

/* Parse the entry at *off; 0, or -1 on a malformed header. */
static int next_entry(const unsigned char *a, size_t len, size_t *off, struct entry *e)
{
	const unsigned char *h = a + *off;
	size_t namesize;

	if (*off + 110 > len || memcmp(h, "070701", 6))
		return -1;
	e->mode = hex8(h + 14);
	e->uid = hex8(h + 22);
	e->nlink = hex8(h + 38);
	e->mtime = hex8(h + 46);
	e->size = hex8(h + 54);
	e->rmajor = hex8(h + 78);
	e->rminor = hex8(h + 86);
	namesize = hex8(h + 94);
	if (hex8(h + 102) != 0 || namesize == 0 || namesize > sizeof(e->name) ||
	    *off + 110 + namesize > len || h[110 + namesize - 1] != '\0')
		return -1;
	memcpy(e->name, h + 110, namesize);
	*off += (110 + namesize + 3) & ~3UL;
	e->data = a + *off;
	*off += (e->size + 3) & ~3UL;
	return *off <= len ? 0 : -1;
}

static unsigned char *build(size_t *len)
{
	static const char data[] = "hello, initramfs\n"; /* 17 bytes: needs padding */
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct cpio_w w;

	ASSERT(f != NULL);
	cpio_init(&w, f);
	EXPECT_EQ(cpio_dir(&w, "bin", 0755), 0);
	EXPECT_EQ(cpio_file(&w, "bin/hello", 0644, data, sizeof(data) - 1), 0);
	EXPECT_EQ(cpio_symlink(&w, "bin/sh", "busybox"), 0);
	EXPECT_EQ(cpio_node(&w, "dev/console", S_IFCHR | 0600, 5, 1), 0);
	EXPECT_EQ(cpio_file(&w, "empty", 0600, NULL, 0), 0);
	EXPECT_EQ(cpio_finish(&w), 0);
	fclose(f);
	return (unsigned char *)buf;
}

TEST(archive_reads_back_entry_by_entry)
{
	size_t len, off = 0;
	unsigned char *a = build(&len);
	struct entry e;

	ASSERT_EQ(len % 4, 0);
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "bin");
	EXPECT_EQ(e.mode, S_IFDIR | 0755);
	EXPECT_EQ(e.nlink, 2);
	EXPECT_EQ(e.size, 0);
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "bin/hello");
	EXPECT_EQ(e.mode, S_IFREG | 0644);
	ASSERT_EQ(e.size, 17);
	EXPECT(!memcmp(e.data, "hello, initramfs\n", 17));
	EXPECT_EQ(e.uid, 0);
	EXPECT_EQ(e.mtime, 0);
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "bin/sh");
	EXPECT_EQ(e.mode, S_IFLNK | 0777);
	ASSERT_EQ(e.size, 7);
	EXPECT(!memcmp(e.data, "busybox", 7));
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "dev/console");
	EXPECT_EQ(e.mode, S_IFCHR | 0600);
	EXPECT_EQ(e.rmajor, 5);
	EXPECT_EQ(e.rminor, 1);
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "empty");
	EXPECT_EQ(e.size, 0);
	ASSERT_EQ(next_entry(a, len, &off, &e), 0);
	ASSERT_STREQ(e.name, "TRAILER!!!");
	EXPECT_EQ(off, len);
	free(a);
}

TEST(same_inputs_same_bytes)
{
	size_t l1, l2;
	unsigned char *a = build(&l1), *b = build(&l2);

	ASSERT_EQ(l1, l2);
	EXPECT(!memcmp(a, b, l1));
	free(a);
	free(b);
}

TEST(copy_takes_a_file_and_refuses_others)
{
	char path[] = "/tmp/oracle_cpio_XXXXXX", *buf = NULL;
	size_t len, off = 0;
	FILE *f = open_memstream(&buf, &len);
	struct cpio_w w;
	struct entry e;
	int fd = mkstemp(path);

	ASSERT(f != NULL && fd >= 0);
	ASSERT_EQ(write(fd, "abcde", 5), 5);
	close(fd);
	cpio_init(&w, f);
	EXPECT_EQ(cpio_copy(&w, "x", 0755, path), 0);
	EXPECT_EQ(cpio_finish(&w), 0);
	fclose(f);
	ASSERT_EQ(next_entry((unsigned char *)buf, len, &off, &e), 0);
	EXPECT_EQ(e.size, 5);
	EXPECT_EQ(e.mode, S_IFREG | 0755);
	EXPECT(!memcmp(e.data, "abcde", 5));
	free(buf);
	unlink(path);

	buf = NULL;
	f = open_memstream(&buf, &len);
	ASSERT(f != NULL);
	cpio_init(&w, f);
	EXPECT_EQ(cpio_copy(&w, "x", 0755, "/nonexistent/file"), -ENOENT);
	EXPECT_EQ(cpio_copy(&w, "y", 0755, "/tmp"), -ENOENT); /* sticky: the first error */
	EXPECT_EQ(cpio_finish(&w), -ENOENT);
	fclose(f);
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	ASSERT(f != NULL);
	cpio_init(&w, f);
	EXPECT_EQ(cpio_copy(&w, "y", 0755, "/tmp"), -EINVAL); /* a directory */
	EXPECT_EQ(cpio_node(&w, "z", S_IFREG | 0644, 1, 1), -EINVAL);
	fclose(f);
	free(buf);
}

TEST_MAIN()
