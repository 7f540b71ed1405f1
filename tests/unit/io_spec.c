/* core/io specs: the dirtier's (--dirty) and the device's (--device) grammar, defaults and
 * errors; the data pattern and the file names the verifier relies on. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "io/io.h"

static int dparse(const char *s, struct io_dirty_spec *d, char *err)
{
	return io_dirty_parse(s, d, err, 256);
}

TEST(dirty_examples_from_the_docs)
{
	struct io_dirty_spec d;
	char err[256];

	ASSERT_EQ(dparse("stream,file=64K,rate=20M,fsync=each,delete-after", &d, err), 0);
	EXPECT(d.stream);
	EXPECT_EQ(d.mode, IO_DIRTY_WRITE);
	EXPECT_EQ(d.file_size, 64 << 10);
	EXPECT_EQ(d.rate, 20 << 20);
	EXPECT_EQ(d.fsync, IO_FSYNC_EACH);
	EXPECT(d.delete_after);
	EXPECT_EQ(d.dirty_ratio, 20);
	EXPECT_EQ(d.background_ratio, 10);

	ASSERT_EQ(dparse("total=512M,file=1G", &d, err), 0);
	EXPECT(!d.stream);
	EXPECT_EQ(d.total, 512ULL << 20);
	EXPECT_EQ(d.file_size, 512ULL << 20); /* one file, clipped to the total */

	ASSERT_EQ(dparse("512M", &d, err), 0); /* a bare size is the total */
	EXPECT_EQ(d.total, 512ULL << 20);
	EXPECT_EQ(d.file_size, 1 << 20);
	EXPECT_EQ(d.fsync, IO_FSYNC_NONE);

	ASSERT_EQ(dparse("read,total=256M,file=2M,rate=5MB/s,start=2s", &d, err), 0);
	EXPECT_EQ(d.mode, IO_DIRTY_READ);
	EXPECT_EQ(d.rate, 5000000);
	EXPECT_EQ(d.start_ns, 2000000000ULL);

	ASSERT_EQ(dparse("stream,dirty-ratio=40%,background-ratio=0.05", &d, err), 0);
	EXPECT_EQ(d.dirty_ratio, 40);
	EXPECT_EQ(d.background_ratio, 5);
	ASSERT_EQ(dparse("10M,file=5000", &d, err), 0);
	EXPECT_EQ(d.file_size, 8192); /* whole pages */
}

TEST(dirty_errors_name_the_item_and_the_accepted_forms)
{
	struct io_dirty_spec d;
	char err[256];

	ASSERT_EQ(dparse("stream,fsync=sometimes", &d, err), -EINVAL);
	EXPECT(strstr(err, "fsync=sometimes") && strstr(err, "fsync=none|each|end"));
	ASSERT_EQ(dparse("stream,turbo", &d, err), -EINVAL);
	EXPECT(strstr(err, "unknown item 'turbo'") && strstr(err, "accepted:"));
	ASSERT_EQ(dparse("file=64K", &d, err), -EINVAL);
	EXPECT(strstr(err, "total size or 'stream'"));
	ASSERT_EQ(dparse("stream,total=1G", &d, err), -EINVAL);
	EXPECT(strstr(err, "exclude"));
	ASSERT_EQ(dparse("1G,file=1", &d, err), -EINVAL);
	ASSERT_EQ(dparse("1G,rate=fast", &d, err), -EINVAL);
	EXPECT(strstr(err, "rate=fast"));
	ASSERT_EQ(dparse("1G,dirty-ratio=10%,background-ratio=20%", &d, err), -EINVAL);
	EXPECT(strstr(err, "background-ratio"));
	ASSERT_EQ(dparse("read,1G,fsync=each", &d, err), -EINVAL);
	ASSERT_EQ(dparse("", &d, err), -EINVAL);
	ASSERT_EQ(dparse("0", &d, err), -EINVAL);
}

TEST(dirty_format_round_trips)
{
	struct io_dirty_spec a, b;
	char err[256], buf[512];

	ASSERT_EQ(dparse("stream,file=64K,rate=20M,fsync=each,delete-after,start=1s", &a, err), 0);
	io_dirty_format(&a, buf, sizeof(buf));
	ASSERT_EQ(io_dirty_parse(buf, &b, err, sizeof(err)), 0);
	EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
	ASSERT_EQ(dparse("read,3M", &a, err), 0);
	io_dirty_format(&a, buf, sizeof(buf));
	ASSERT_EQ(io_dirty_parse(buf, &b, err, sizeof(err)), 0);
	EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0);
}

TEST(device_forms)
{
	struct io_device_spec d;
	char err[256];

	ASSERT_EQ(io_device_parse("usb2-stick-2011", &d, err, sizeof(err)), 0);
	EXPECT_EQ(d.kind, IO_DEV_PRESET);
	ASSERT_STREQ(d.model.name, "usb2-stick-2011");
	EXPECT_EQ(d.timeout_ns, 30000000000ULL);
	EXPECT_EQ(d.nr_requests, 128);
	EXPECT_EQ(d.max_request, 120 << 10);
	EXPECT_EQ(d.overrides[0], '\0');

	ASSERT_EQ(io_device_parse("none", &d, err, sizeof(err)), 0);
	EXPECT_EQ(d.kind, IO_DEV_NONE);
	ASSERT_STREQ(d.model.name, "usb2-stick-2011");

	ASSERT_EQ(io_device_parse("/mnt/stick:timeout=5s,nr-requests=8", &d, err, sizeof(err)), 0);
	EXPECT_EQ(d.kind, IO_DEV_PATH);
	ASSERT_STREQ(d.path, "/mnt/stick");
	EXPECT_EQ(d.timeout_ns, 5000000000ULL);
	EXPECT_EQ(d.nr_requests, 8);

	ASSERT_EQ(io_device_parse("sd-class4:bandwidth=2M,error-rate=0.1,max-request=64K", &d, err,
				  sizeof(err)),
		  0);
	EXPECT_EQ(d.model.write_bw, 2 << 20);
	EXPECT_NEAR(d.model.error_rate, 0.1, 1e-9);
	EXPECT_EQ(d.max_request, 64 << 10);
	ASSERT_STREQ(d.overrides, "bandwidth=2M,error-rate=0.1"); /* what fusedev gets */

	ASSERT_EQ(io_device_parse("none:preset=sd-class10", &d, err, sizeof(err)), 0);
	ASSERT_STREQ(d.model.name, "sd-class10");
}

TEST(device_errors)
{
	struct io_device_spec d;
	char err[256];

	ASSERT_EQ(io_device_parse("floppy", &d, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown preset 'floppy'") && strstr(err, "usb2-stick-2011") &&
	       strstr(err, "none"));
	ASSERT_EQ(io_device_parse("usb2-stick-2011:warp=9", &d, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "warp=9"));
	ASSERT_EQ(io_device_parse("usb2-stick-2011:timeout=1ms", &d, err, sizeof(err)), -EINVAL);
	ASSERT_EQ(io_device_parse("usb2-stick-2011:max-request=5000", &d, err, sizeof(err)),
		  -EINVAL);
	ASSERT_EQ(io_device_parse("usb2-stick-2011:bandwidth", &d, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "KEY=VALUE"));
	ASSERT_EQ(io_device_parse("", &d, err, sizeof(err)), -EINVAL);
}

TEST(pattern_depends_on_seed_file_and_offset)
{
	static uint64_t a[512], b[512];

	io_pattern_fill(a, 7, 3, 8192, sizeof(a));
	EXPECT_EQ(io_pattern_check(a, 7, 3, 8192, sizeof(a)), sizeof(a));
	EXPECT_EQ(io_pattern_check(a, 8, 3, 8192, sizeof(a)), 0);
	EXPECT_EQ(io_pattern_check(a, 7, 4, 8192, sizeof(a)), 0);
	EXPECT_EQ(io_pattern_check(a, 7, 3, 4096, sizeof(a)), 0);
	/* any block can be regenerated alone: the second half equals a fill at its offset */
	io_pattern_fill(b, 7, 3, 8192 + 2048, 2048);
	EXPECT_EQ(memcmp(b, (char *)a + 2048, 2048), 0);
	a[100] ^= 1;
	EXPECT_EQ(io_pattern_check(a, 7, 3, 8192, sizeof(a)), 800);
	memset(b, 0, sizeof(b));
	EXPECT_EQ(io_pattern_check(b, 7, 3, 0, sizeof(b)), 0); /* zeros never pass */
}

TEST(file_names_round_trip)
{
	char name[64];
	uint64_t id;

	io_file_name(12, name, sizeof(name));
	ASSERT_STREQ(name, "w00000012.dat");
	ASSERT_EQ(io_file_id_of(name, &id), 0);
	EXPECT_EQ(id, 12);
	io_file_name(IO_READER_ID_BASE + 5, name, sizeof(name));
	ASSERT_STREQ(name, "r00000005.dat");
	ASSERT_EQ(io_file_id_of(name, &id), 0);
	EXPECT_EQ(id, IO_READER_ID_BASE + 5);
	io_file_name((1ULL << 26) - 1, name, sizeof(name));
	ASSERT_EQ(io_file_id_of(name, &id), 0);
	EXPECT_EQ(id, (1ULL << 26) - 1);
	EXPECT_EQ(io_file_id_of("MANIFEST", &id), -EINVAL);
	EXPECT_EQ(io_file_id_of("w12.txt", &id), -EINVAL);
}

TEST_MAIN()
