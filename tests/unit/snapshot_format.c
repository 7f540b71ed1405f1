/* core/snapshot's file: what is written reads back (header, pageblocks, runs, run-length
 * encoded), and a reader refuses what is not a whole, consistent version-1 snapshot with the
 * line that is wrong. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "snapshot/snapshot.h"

#define NPFN (4 * SNAP_PAGEBLOCK_NR)

/* Two pageblocks' worth of classes and two of free memory: every letter, both free forms. */
static void make(struct snap *s)
{
	struct snap_header *h = &s->h;
	uint8_t *p;

	memset(s, 0, sizeof(*s));
	h->version = SNAP_VERSION;
	snprintf(h->host, sizeof(h->host), "host with space");
	snprintf(h->kernel, sizeof(h->kernel), "6.12.0");
	snprintf(h->date, sizeof(h->date), "2026-12-06T00:00:00Z");
	h->zone = (struct snap_zone){.node = 0,
				     .name = "DMA32",
				     .start_pfn = 1024,
				     .spanned = NPFN,
				     .present = NPFN,
				     .managed = NPFN - 2,
				     .wmark = {10, 12, 14},
				     .free = 0,
				     .pcp = 3};
	h->base_pfn = 1024;
	h->nr_pfns = NPFN;
	h->have_pti = true;
	h->pti_blocks[SNAP_PTI_MOVABLE] = 3;
	h->pti_blocks[SNAP_PTI_UNMOVABLE] = 1;
	h->pti_free[SNAP_PTI_MOVABLE][10] = 1;
	h->buddy_all = true;
	h->attempts = 2;
	s->pfn = malloc(NPFN);
	s->block_mt = calloc(NPFN / SNAP_PAGEBLOCK_NR, 1);
	ASSERT(s->pfn != NULL && s->block_mt != NULL);
	s->block_mt[1] = s->block_mt[2] = s->block_mt[3] = SNAP_MT_MOVABLE;
	p = s->pfn;
	memset(p, SNAP_RESERVED, 2);
	p[2] = SNAP_BYTE(SNAP_FREE, 1);
	p[3] = SNAP_BYTE(SNAP_FREE, SNAP_TAIL);
	memset(p + 4, SNAP_ANON, 4);
	memset(p + 8, SNAP_FILE | SNAP_ACTIVE, 8);
	memset(p + 16, SNAP_FILE, 8);
	memset(p + 24, SNAP_FILE_DIRTY, 8);
	memset(p + 32, SNAP_FILE_WB | SNAP_ACTIVE, 8);
	memset(p + 40, SNAP_SLAB, 8);
	memset(p + 48, SNAP_UNEVICTABLE, 8);
	memset(p + 56, SNAP_HUGE, 8);
	memset(p + 64, SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE), 64); /* an R like any other */
	memset(p + 128, SNAP_KERNEL, 2 * SNAP_PAGEBLOCK_NR - 128);
	p[1024] = SNAP_BYTE(SNAP_FREE, 10);
	memset(p + 1025, SNAP_BYTE(SNAP_FREE, SNAP_TAIL), 1023);
	snap_count(s->pfn, NPFN, h);
}

static char *write_tmp(const struct snap *s)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/snapshot_format.XXXXXX");
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	f = fdopen(fd, "w");
	ASSERT(f != NULL);
	ASSERT_EQ(snap_write(f, s), 0);
	fclose(f);
	return path;
}

static char *write_text(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/snapshot_format.XXXXXX");
	fd = mkstemp(path);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

TEST(round_trip)
{
	struct snap s;
	struct snap_reader r;
	struct snap_header h;
	struct snap_run run;
	char err[256], *path;
	uint8_t mt;
	uint64_t count, blocks = 0, pfn = 0, nruns = 0;
	int rc;

	make(&s);
	path = write_tmp(&s);
	ASSERT_EQ(snap_open(&r, path, &h, err, sizeof(err)), 0);
	EXPECT(!strcmp(h.host, "host_with_space"));
	EXPECT(!strcmp(h.kernel, "6.12.0"));
	EXPECT(!strcmp(h.zone.name, "DMA32"));
	EXPECT_EQ(h.zone.start_pfn, 1024);
	EXPECT_EQ(h.zone.managed, NPFN - 2);
	EXPECT_EQ(h.zone.pcp, 3);
	EXPECT_EQ(h.zone.wmark[2], 14);
	EXPECT_EQ(h.base_pfn, 1024);
	EXPECT_EQ(h.nr_pfns, NPFN);
	EXPECT(h.have_pti);
	EXPECT_EQ(h.pti_blocks[SNAP_PTI_MOVABLE], 3);
	EXPECT_EQ(h.pti_free[SNAP_PTI_MOVABLE][10], 1);
	EXPECT_EQ(h.free_blocks[1], 1);
	EXPECT_EQ(h.free_blocks[10], 1);
	EXPECT_EQ(h.classes[SNAP_RESERVED], 66);
	EXPECT_EQ(h.file_active, 16);
	EXPECT(h.buddy_all);
	EXPECT_EQ(h.attempts, 2);
	while ((rc = snap_read_blocks(&r, &mt, &count, err, sizeof(err))) > 0) {
		EXPECT_EQ(mt, blocks ? SNAP_MT_MOVABLE : SNAP_MT_UNMOVABLE);
		blocks += count;
	}
	ASSERT_EQ(rc, 0);
	EXPECT_EQ(blocks, 4);
	while ((rc = snap_read_run(&r, &h, &run, err, sizeof(err))) > 0) {
		uint64_t pages = run.cls == SNAP_FREE ? run.pages << run.order : run.pages;

		for (uint64_t i = 0; i < pages; i++) {
			uint8_t b = s.pfn[pfn + i];

			EXPECT_EQ(b & SNAP_CLASS_MASK, run.cls);
			if (run.cls >= SNAP_FILE && run.cls <= SNAP_FILE_WB)
				EXPECT_EQ(!!(b & SNAP_ACTIVE), run.active);
		}
		if (run.cls == SNAP_FREE)
			EXPECT_EQ(s.pfn[pfn] >> 4, run.order);
		pfn += pages;
		nruns++;
	}
	ASSERT_EQ(rc, 0);
	EXPECT_EQ(pfn, NPFN);
	EXPECT_EQ(nruns, 13); /* R F1 A c C D w S U H R K F10: the two R runs differ in between */
	snap_close(&r);
	unlink(path);
	snap_free(&s);
}

static void refused(const char *text, const char *want)
{
	struct snap_reader r;
	struct snap_header h;
	struct snap_run run;
	char err[256] = "", *path = write_text(text);
	uint8_t mt;
	uint64_t count;
	int rc = snap_open(&r, path, &h, err, sizeof(err));

	if (!rc) {
		while ((rc = snap_read_blocks(&r, &mt, &count, err, sizeof(err))) > 0)
			;
		if (!rc)
			while ((rc = snap_read_run(&r, &h, &run, err, sizeof(err))) > 0)
				;
		snap_close(&r);
	}
	EXPECT_LT(rc, 0);
	if (!strstr(err, want))
		fprintf(stderr, "  wanted '%s' in '%s'\n", want, err);
	EXPECT(strstr(err, want) != NULL);
	unlink(path);
}

#define HEAD                                                                                       \
	"thpemu-snapshot 1\nzone 0 Normal start 0 spanned 1024 present 1024 managed 1024 free 0 "  \
	"pcp 0\nrange 0 1024\nnew-key later versions may add this\n"

TEST(refusals)
{
	refused("", "empty");
	refused("hello\n", "not a thpemu snapshot");
	refused("thpemu-snapshot 3\n", "version 3");
	refused("thpemu-snapshot 1\nzone 0 DMA start 0 spanned 512 present 512 managed 512 free 0 "
		"pcp 0\nzone 0 Normal start 512 spanned 512 present 512 managed 512 free 0 pcp 0\n"
		"range 0 1024\npageblocks 1\n",
		"version 1 holds one zone");
	refused("thpemu-snapshot 2\nzones 2\nzone 0 DMA start 0 spanned 512 present 512 managed "
		"512 free 0 pcp 0\nrange 0 1024\npageblocks 1\n",
		"the count");
	refused("thpemu-snapshot 2\nzones 2\nzone 0 Normal start 512 spanned 512 present 512 "
		"managed 512 free 0 pcp 0\nzone 0 DMA start 0 spanned 512 present 512 managed 512 "
		"free 0 pcp 0\nrange 0 1024\npageblocks 1\n",
		"out of pfn order");
	refused("thpemu-snapshot 1\npage-size 16384\n", "line 2");
	refused("thpemu-snapshot 1\nrange 0 1024\npageblocks 1\n", "no zone");
	refused(HEAD "pageblocks 1\nM 3\nruns 1\nK 1024\nend\n", "line 6: not a pageblock");
	refused(HEAD "pageblocks 1\nM 1\nruns 1\nK 1024\nend\n", "do not cover the range");
	refused(HEAD "pageblocks 1\nX 2\n", "other than U, M, R");
	refused(HEAD "pageblocks 1\nM 2\nruns 2\nK 1\nF1 2\nend\n", "misaligned");
	refused(HEAD "pageblocks 1\nM 2\nruns 1\nQ 1024\nend\n", "not a run");
	refused(HEAD "pageblocks 1\nM 2\nruns 1\na 1024\nend\n", "not a run"); /* active anon */
	refused(HEAD "pageblocks 1\nM 2\nruns 1\nK 1000\nend\n", "do not cover");
	refused(HEAD "pageblocks 1\nM 2\nruns 1\nK 1024\n", "ends before 'end'");
	refused(HEAD "pageblocks 1\nM 2\nruns 1\nF11 1\nend\n", "F<order 0..10>");
	refused(HEAD "pageblocks 1\nM 2\nruns 1\nK 1024\nend", "ends inside a line");
	refused("thpemu-snapshot 1\nzone 0 Normal\n", "cannot read");
}

TEST(accepted_minimal)
{
	struct snap_reader r;
	struct snap_header h;
	struct snap_run run;
	char err[256],
	    *path = write_text(HEAD "pageblocks 2\nM 1\nU 1\nruns 2\nF9 1\nK 512\nend\n");
	uint8_t mt;
	uint64_t count;
	int rc;

	ASSERT_EQ(snap_open(&r, path, &h, err, sizeof(err)), 0);
	EXPECT(!h.have_pti);
	while ((rc = snap_read_blocks(&r, &mt, &count, err, sizeof(err))) > 0)
		;
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(snap_read_run(&r, &h, &run, err, sizeof(err)), 1);
	EXPECT_EQ(run.cls, SNAP_FREE);
	EXPECT_EQ(run.order, 9);
	EXPECT_EQ(run.pages, 1);
	ASSERT_EQ(snap_read_run(&r, &h, &run, err, sizeof(err)), 1);
	EXPECT_EQ(run.cls, SNAP_KERNEL);
	EXPECT_EQ(run.pages, 512);
	EXPECT_EQ(snap_read_run(&r, &h, &run, err, sizeof(err)), 0);
	snap_close(&r);
	unlink(path);
}

TEST_MAIN()
