/* core/snapshot's /proc parsers on the text of 6.x kernels (zoneinfo with its per-node stats
 * and pagesets, buddyinfo, pagetypeinfo with and without CMA), the zone it picks, and what it
 * refuses. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "snapshot/snapshot.h"

static const char zoneinfo_txt[] = "Node 0, zone      DMA\n"
				   "  per-node stats\n"
				   "      nr_inactive_anon 12896\n"
				   "  pages free     3840\n"
				   "        boost    0\n"
				   "        min      47\n"
				   "        low      58\n"
				   "        high     69\n"
				   "        spanned  4095\n"
				   "        present  3998\n"
				   "        managed  3840\n"
				   "        protection: (0, 3018, 5322, 5322, 5322)\n"
				   "      nr_free_pages 3840\n"
				   "  pagesets\n"
				   "    cpu: 0\n"
				   "              count: 0\n"
				   "              high:  0\n"
				   "              batch: 1\n"
				   "  node_unreclaimable:  0\n"
				   "  start_pfn:           1\n"
				   "Node 0, zone    DMA32\n"
				   "  pages free     772848\n"
				   "        min      9555\n"
				   "        low      11943\n"
				   "        high     14331\n"
				   "        spanned  1044480\n"
				   "        present  782336\n"
				   "        managed  772848\n"
				   "  pagesets\n"
				   "    cpu: 0\n"
				   "              count: 12\n"
				   "              high:  378\n"
				   "    cpu: 1\n"
				   "              count: 30\n"
				   "  start_pfn:           4096\n"
				   "Node 0, zone   Normal\n"
				   "  pages free     188305\n"
				   "        min      7292\n"
				   "        low      9115\n"
				   "        high     10938\n"
				   "        spanned  5505024\n"
				   "        present  5505024\n"
				   "        managed  589824\n"
				   "  start_pfn:           1048576\n"
				   "Node 0, zone  Movable\n"
				   "  pages free     0\n"
				   "        spanned  0\n"
				   "        present  0\n"
				   "        managed  0\n";

static const char buddyinfo_txt[] =
    "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      "
    "1      3 \n"
    "Node 0, zone    DMA32      0      4      2      2      1      2      0      3      3      "
    "1    753 \n"
    "Node 0, zone   Normal   3037   2810   1548    758    260    119     72     42     22      "
    "3    142 \n";

static const char pagetypeinfo_txt[] =
    "Page block order: 9\n"
    "Pages per block:  512\n"
    "\n"
    "Free pages count per migrate type at order       0      1      2      3      4      5      "
    "6      7      8      9     10 \n"
    "Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      0      "
    "0      0      1      0      0 \n"
    "Node    0, zone   Normal, type    Unmovable    756    829    448    201     70     22     "
    "32     16      9      0      0 \n"
    "Node    0, zone   Normal, type      Movable   2217   1981   1100    556    190     97     "
    "40     24     11      2    142 \n"
    "Node    0, zone   Normal, type  Reclaimable      1      0      0      1      0      0      "
    "0      2      2      1      0 \n"
    "Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      "
    "0      0      0      0      0 \n"
    "\n"
    "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n"
    "Node 0, zone      DMA            1            7            0            0            0 \n"
    "Node 0, zone   Normal           65         1000           87            0            0 \n";

TEST(zoneinfo)
{
	struct snap_zone z[SNAP_MAX_ZONES];
	unsigned n;

	ASSERT_EQ(snap_parse_zoneinfo(zoneinfo_txt, z, SNAP_MAX_ZONES, &n), 0);
	ASSERT_EQ(n, 4);
	EXPECT(!strcmp(z[1].name, "DMA32"));
	EXPECT_EQ(z[1].node, 0);
	EXPECT_EQ(z[1].start_pfn, 4096);
	EXPECT_EQ(z[1].spanned, 1044480);
	EXPECT_EQ(z[1].present, 782336);
	EXPECT_EQ(z[1].managed, 772848);
	EXPECT_EQ(z[1].free, 772848);
	EXPECT_EQ(z[1].wmark[0], 9555);
	EXPECT_EQ(z[1].wmark[1], 11943);
	EXPECT_EQ(z[1].wmark[2], 14331); /* not the pagesets' "high:" */
	EXPECT_EQ(z[1].pcp, 42);
	EXPECT_EQ(z[0].start_pfn, 1);
	EXPECT_EQ(z[0].pcp, 0);
	EXPECT_EQ(z[0].idx, 0);
	EXPECT_EQ(z[1].idx, 1);
	EXPECT_EQ(z[0].nprot, 5);
	EXPECT_EQ(z[0].protection[1], 3018);
	EXPECT_EQ(z[0].protection[2], 5322);
	EXPECT_EQ(snap_parse_zoneinfo(zoneinfo_txt, z, 2, &n), -E2BIG);
	EXPECT_EQ(snap_parse_zoneinfo("nothing\n", z, SNAP_MAX_ZONES, &n), -EINVAL);
}

TEST(pick_zone)
{
	struct snap_zone z[SNAP_MAX_ZONES];
	unsigned n;

	ASSERT_EQ(snap_parse_zoneinfo(zoneinfo_txt, z, SNAP_MAX_ZONES, &n), 0);
	ASSERT(snap_pick_zone(z, n, NULL) != NULL);
	EXPECT(!strcmp(snap_pick_zone(z, n, NULL)->name, "DMA32")); /* the most managed pages */
	EXPECT(!strcmp(snap_pick_zone(z, n, "Normal")->name, "Normal"));
	EXPECT(!strcmp(snap_pick_zone(z, n, "0:DMA")->name, "DMA"));
	EXPECT(snap_pick_zone(z, n, "1:DMA") == NULL);
	EXPECT(snap_pick_zone(z, n, "HighMem") == NULL);
}

TEST(buddyinfo)
{
	uint64_t v[SNAP_NR_ORDERS];

	ASSERT_EQ(snap_parse_buddyinfo(buddyinfo_txt, 0, "Normal", v), 0);
	EXPECT_EQ(v[0], 3037);
	EXPECT_EQ(v[10], 142);
	ASSERT_EQ(snap_parse_buddyinfo(buddyinfo_txt, 0, "DMA32", v), 0);
	EXPECT_EQ(v[1], 4);
	EXPECT_EQ(v[10], 753);
	EXPECT_EQ(snap_parse_buddyinfo(buddyinfo_txt, 1, "DMA32", v), -ENOENT);
	EXPECT_EQ(snap_parse_buddyinfo("Node 0, zone DMA 1 2 3\n", 0, "DMA", v), -EINVAL);
	EXPECT_EQ(
	    snap_parse_buddyinfo("Node 0, zone DMA 1 2 3 4 5 6 7 8 9 10 11 12\n", 0, "DMA", v),
	    -EINVAL); /* a MAX_ORDER other than 10 */
}

TEST(pagetypeinfo)
{
	uint64_t free[SNAP_PTI_NR][SNAP_NR_ORDERS], blocks[SNAP_PTI_NR];

	ASSERT_EQ(snap_parse_pagetypeinfo(pagetypeinfo_txt, 0, "Normal", free, blocks), 0);
	EXPECT_EQ(blocks[SNAP_PTI_UNMOVABLE], 65);
	EXPECT_EQ(blocks[SNAP_PTI_MOVABLE], 1000);
	EXPECT_EQ(blocks[SNAP_PTI_RECLAIMABLE], 87);
	EXPECT_EQ(blocks[SNAP_PTI_CMA], 0); /* no CMA column: none */
	EXPECT_EQ(free[SNAP_PTI_UNMOVABLE][0], 756);
	EXPECT_EQ(free[SNAP_PTI_MOVABLE][10], 142);
	EXPECT_EQ(free[SNAP_PTI_RECLAIMABLE][9], 1);
	ASSERT_EQ(snap_parse_pagetypeinfo(pagetypeinfo_txt, 0, "DMA", free, blocks), 0);
	EXPECT_EQ(blocks[SNAP_PTI_MOVABLE], 7);
	EXPECT_EQ(free[SNAP_PTI_UNMOVABLE][8], 1);
	EXPECT_EQ(free[SNAP_PTI_MOVABLE][8], 0);
	EXPECT_EQ(snap_parse_pagetypeinfo(pagetypeinfo_txt, 0, "DMA32", free, blocks), -ENOENT);
	EXPECT_EQ(snap_parse_pagetypeinfo("Page block order: 10\n", 0, "DMA", free, blocks),
		  -EINVAL);
}

/* A CMA column in the blocks table lands in its own slot. */
TEST(pagetypeinfo_cma_column)
{
	static const char t[] =
	    "Page block order: 9\n"
	    "Number of blocks type     Unmovable      Movable  Reclaimable   "
	    "HighAtomic          CMA      Isolate \n"
	    "Node 0, zone   Normal            3           10            2       "
	    "     1            4            0 \n";
	uint64_t free[SNAP_PTI_NR][SNAP_NR_ORDERS], blocks[SNAP_PTI_NR];

	ASSERT_EQ(snap_parse_pagetypeinfo(t, 0, "Normal", free, blocks), 0);
	EXPECT_EQ(blocks[SNAP_PTI_HIGHATOMIC], 1);
	EXPECT_EQ(blocks[SNAP_PTI_CMA], 4);
	EXPECT_EQ(blocks[SNAP_PTI_ISOLATE], 0);
}

TEST_MAIN()
