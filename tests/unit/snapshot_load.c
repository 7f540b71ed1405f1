/* core/snapshot's loader: a pool of the snapshot's size gets every frame's kind, every free
 * block's order, every pageblock's type and the zone's watermarks; a smaller pool samples it in
 * 4 MiB units; a larger one is refused; --fragment dispatches snapshot:FILE and recipes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "mm/internal.h"
#include "mm_fakeenv.h"
#include "snapshot/snapshot.h"

#define MIB  (1ULL << 20)
#define NPFN 4096

static char path[64];

static void fill(uint8_t *p, uint64_t at, uint64_t n, uint8_t b)
{
	memset(p + at, b, n);
}

static void free_block(uint8_t *p, uint64_t at, unsigned order)
{
	p[at] = SNAP_BYTE(SNAP_FREE, order);
	memset(p + at + 1, SNAP_BYTE(SNAP_FREE, SNAP_TAIL), (1ULL << order) - 1);
}

/* s into a new temporary file, named in path; s freed. */
static void write_to_path(struct snap *s)
{
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/snapshot_load.XXXXXX");
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	f = fdopen(fd, "w");
	ASSERT(f != NULL);
	ASSERT_EQ(snap_write(f, s), 0);
	fclose(f);
	snap_free(s);
}

/* Block 0: every class; 1: kernel; 2-3: an order-10 block; 4: anon; 5: file; 6-7: order 10.
 * With two zones: "DMA" the first 8 MiB (lowmem_reserve 300), "Normal" the rest. */
static void write_snapshot_zones(bool two)
{
	struct snap s = {0};
	uint8_t *p = malloc(NPFN);

	s.h.zone = (struct snap_zone){.name = "Normal", .spanned = NPFN, .wmark = {50, 60, 70}};
	s.h.nr_pfns = NPFN;
	if (two) {
		s.h.nzones = 2;
		s.h.zones[0] = (struct snap_zone){
		    .name = "DMA", .spanned = 2048, .wmark = {10, 12, 14}, .lowmem_reserve = 300};
		s.h.zones[1] = s.h.zone;
		s.h.zones[1].start_pfn = 2048;
		s.h.zones[1].spanned = 2048;
		s.h.zone = s.h.zones[1];
	}
	s.pfn = p;
	s.block_mt = calloc(NPFN / SNAP_PAGEBLOCK_NR, 1);
	ASSERT(p != NULL && s.block_mt != NULL);
	for (unsigned b = 0; b < NPFN / SNAP_PAGEBLOCK_NR; b++)
		s.block_mt[b] = b == 1 ? SNAP_MT_UNMOVABLE : SNAP_MT_MOVABLE;
	fill(p, 0, 2, SNAP_RESERVED);
	free_block(p, 2, 1);
	fill(p, 4, 4, SNAP_ANON);
	fill(p, 8, 8, SNAP_FILE | SNAP_ACTIVE);
	fill(p, 16, 8, SNAP_FILE_DIRTY);
	fill(p, 24, 8, SNAP_FILE_WB);
	fill(p, 32, 8, SNAP_SLAB);
	fill(p, 40, 8, SNAP_UNEVICTABLE);
	fill(p, 48, 8, SNAP_HUGE);
	fill(p, 56, 8, SNAP_KERNEL);
	free_block(p, 64, 6);
	free_block(p, 128, 7);
	free_block(p, 256, 8);
	fill(p, 512, 512, SNAP_KERNEL);
	free_block(p, 1024, 10);
	fill(p, 2048, 512, SNAP_ANON);
	fill(p, 2560, 512, SNAP_FILE);
	free_block(p, 3072, 10);
	snap_count(p, NPFN, &s.h);
	write_to_path(&s);
}

static void write_snapshot(void)
{
	write_snapshot_zones(false);
}

static void load(struct fakeenv *fe, uint64_t bytes, int want)
{
	char err[512] = "";

	ASSERT_EQ(fakeenv_init(fe, "modern-always", bytes, false, err, sizeof(err)), 0);
	EXPECT_EQ(snap_load(fe->mm, path, err, sizeof(err)), want);
	if (want)
		EXPECT(strstr(err, path) != NULL);
	EXPECT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
}

TEST(frame_for_frame)
{
	struct fakeenv fe;
	struct mm_counts c;

	write_snapshot();
	load(&fe, 16 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 2 + 64 + 128 + 256 + 2048);
	EXPECT_EQ(c.nr_free[1], 1);
	EXPECT_EQ(c.nr_free[6], 1);
	EXPECT_EQ(c.nr_free[7], 1);
	EXPECT_EQ(c.nr_free[8], 1);
	EXPECT_EQ(c.nr_free[10], 2);
	EXPECT_EQ(c.foreign, 4 + 8 + 512);
	EXPECT_EQ(c.file, 24 + 512);
	EXPECT_EQ(c.file_dirty, 16);
	EXPECT_EQ(c.unmovable, 2 + 8 + 8 + 8 + 512);
	EXPECT_EQ(c.wmark_min, 50);
	EXPECT_EQ(c.wmark_high, 70);
	EXPECT_EQ(fe.mm->nr_lru[1], 8); /* the active file pages */
	EXPECT_EQ(pageblock_mt(fe.mm, 512), MM_MT_UNMOVABLE);
	EXPECT_EQ(pageblock_mt(fe.mm, 1024), MM_MT_MOVABLE);
	EXPECT_EQ(pfn_frame(fe.mm, 2048)->state, FS_ANON);
	EXPECT_EQ(pfn_frame(fe.mm, 2560)->state, FS_FILE);
	fakeenv_destroy(&fe);
	unlink(path);
}

/* 8 MiB of 16: units 0 and 2 (blocks 0, 1, 4, 5); 12 MiB: units 0, 1, 2. */
TEST(smaller_pool_samples)
{
	struct fakeenv fe;
	struct mm_counts c;

	write_snapshot();
	load(&fe, 8 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 2 + 64 + 128 + 256);
	EXPECT_EQ(c.nr_free[10], 0);
	EXPECT_EQ(pfn_frame(fe.mm, 1024)->state, FS_ANON);
	EXPECT_EQ(pfn_frame(fe.mm, 1536)->state, FS_FILE);
	EXPECT_EQ(pageblock_mt(fe.mm, 512), MM_MT_UNMOVABLE);
	EXPECT_EQ(c.wmark_min, 25);
	fakeenv_destroy(&fe);
	load(&fe, 12 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.nr_free[10], 1);
	EXPECT_EQ(pfn_frame(fe.mm, 2048)->state, FS_ANON);
	fakeenv_destroy(&fe);
	/* 14 MiB: the last unit has one block, the first half of an order-10 block */
	load(&fe, 14 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.nr_free[10], 1);
	EXPECT_EQ(c.nr_free[9], 1);
	fakeenv_destroy(&fe);
	unlink(path);
}

/* Flagless pages (per-cpu free pages among them) load free, one page at a time merged with
 * their buddies as the kernel's first drain would (free_pcppages_bulk -> __free_one_page): two
 * beside an order-1 block make an order-2 block, two alone an order-1 block, one between
 * kernel pages stays order 0. */
TEST(flagless_pages_load_free)
{
	struct snap s = {0};
	struct fakeenv fe;
	struct mm_counts c;
	uint8_t *p = malloc(NPFN);

	s.h.zone = (struct snap_zone){.name = "Normal", .spanned = NPFN, .wmark = {50, 60, 70}};
	s.h.nr_pfns = NPFN;
	s.pfn = p;
	s.block_mt = calloc(NPFN / SNAP_PAGEBLOCK_NR, 1);
	ASSERT(p != NULL && s.block_mt != NULL);
	fill(p, 0, NPFN, SNAP_KERNEL);
	fill(p, 0, 2, SNAP_FLAGLESS);
	free_block(p, 2, 1);
	fill(p, 8, 1, SNAP_FLAGLESS);
	fill(p, 10, 2, SNAP_FLAGLESS);
	snap_count(p, NPFN, &s.h);
	EXPECT_EQ(s.h.classes[SNAP_FLAGLESS], 5);
	write_to_path(&s);
	load(&fe, 16 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 7);
	EXPECT_EQ(c.nr_free[2], 1);
	EXPECT_EQ(c.nr_free[1], 1);
	EXPECT_EQ(c.nr_free[0], 1);
	EXPECT_EQ(frame_order(pfn_frame(fe.mm, 0)), 2);
	EXPECT_EQ(frame_order(pfn_frame(fe.mm, 10)), 1);
	EXPECT_EQ(c.unmovable, NPFN - 7);
	fakeenv_destroy(&fe);
	unlink(path);
}

/* A file of an older writer (its classes line without "flagless", no Z runs) loads as before. */
TEST(older_file_loads_as_before)
{
	struct fakeenv fe;
	struct mm_counts c;
	char buf[1 << 16], *q;
	ssize_t n;
	int fd;

	write_snapshot();
	fd = open(path, O_RDWR);
	ASSERT(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	ASSERT(n > 0 && n < (ssize_t)sizeof(buf) - 1);
	buf[n] = '\0';
	q = strstr(buf, " flagless 0\n");
	ASSERT(q != NULL);
	memmove(q, q + strlen(" flagless 0"), strlen(q + strlen(" flagless 0")) + 1);
	ASSERT_EQ(ftruncate(fd, 0), 0);
	ASSERT_EQ(pwrite(fd, buf, strlen(buf), 0), (ssize_t)strlen(buf));
	close(fd);
	load(&fe, 16 * MIB, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 2 + 64 + 128 + 256 + 2048);
	EXPECT_EQ(c.nr_free[10], 2);
	EXPECT_EQ(c.unmovable, 2 + 8 + 8 + 8 + 512);
	fakeenv_destroy(&fe);
	unlink(path);
}

TEST(refusals)
{
	struct fakeenv fe;
	char err[512];

	write_snapshot();
	load(&fe, 32 * MIB, -EINVAL); /* larger than the snapshot */
	fakeenv_destroy(&fe);
	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fragment(fe.mm, "anon:1%", 1, err, sizeof(err), NULL), 0);
	EXPECT_EQ(snap_load(fe.mm, path, err, sizeof(err)), -EBUSY); /* not a new pool */
	EXPECT(strstr(err, "in use") != NULL);
	EXPECT_EQ(snap_load(fe.mm, "/nonexistent/snap", err, sizeof(err)), -ENOENT);
	fakeenv_destroy(&fe);
	unlink(path);
}

/* A file of two zones (version 2) loads whole: each zone its free blocks, watermarks and
 * lowmem_reserve; the counts are both zones'; a sample is refused. */
TEST(two_zones)
{
	struct fakeenv fe;
	struct mm_counts c;
	char head[32] = "";
	FILE *f;

	write_snapshot_zones(true);
	f = fopen(path, "r");
	ASSERT(f != NULL);
	EXPECT(fgets(head, sizeof(head), f) != NULL);
	fclose(f);
	EXPECT_EQ(strcmp(head, "thpemu-snapshot 2\n"), 0);
	load(&fe, 16 * MIB, 0);
	EXPECT_EQ(fe.mm->nr_lower, 1);
	EXPECT_EQ(fe.mm->zone_start_pfn, 2048);
	EXPECT_EQ(fe.mm->lower[0].lowmem_reserve, 300);
	EXPECT_EQ(fe.mm->lower[0].wmark[0], 10);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free_pages, 2 + 64 + 128 + 256 + 1024);
	EXPECT_EQ(fe.mm->nr_free_pages, 1024);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 2 + 64 + 128 + 256 + 2048);
	EXPECT_EQ(c.nr_free[10], 2);
	EXPECT_EQ(c.wmark_min, 50);
	fakeenv_destroy(&fe);
	load(&fe, 8 * MIB, -EINVAL);
	fakeenv_destroy(&fe);
	unlink(path);
}

TEST(fragment_dispatch)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[512], recipe[128];
	uint64_t bytes = 7;

	write_snapshot();
	snprintf(recipe, sizeof(recipe), "%s%s", SNAP_PREFIX, path);
	EXPECT_EQ(snap_recipe_pool("thpcompact", &bytes, err, sizeof(err)), 0);
	EXPECT_EQ(bytes, 7);
	EXPECT_EQ(snap_recipe_pool(recipe, &bytes, err, sizeof(err)), 1);
	EXPECT_EQ(bytes, 16 * MIB);
	EXPECT_LT(snap_recipe_pool("snapshot:/nonexistent", &bytes, err, sizeof(err)), 0);
	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(snap_fragment(fe.mm, recipe, 1, err, sizeof(err), NULL), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.nr_free[10], 2);
	fakeenv_destroy(&fe);
	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(snap_fragment(fe.mm, "unmovable:1%", 1, err, sizeof(err), NULL), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_GT(c.unmovable, 0);
	fakeenv_destroy(&fe);
	unlink(path);
}

TEST_MAIN()
