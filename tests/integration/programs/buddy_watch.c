/* /proc/buddyinfo read again and again (every 2 ms) until SIGTERM or SIGINT (or its parent's
 * end, or 10 minutes), then once more:
 * the least and the most free blocks of each order it showed, per zone and per node (the node's
 * zones summed in each read), as tests/unit/snapshot_take's watcher keeps them during a pass. On
 * stdout, at the end, one line per zone and bound, orders 0..10:
 *   NODE ZONE lo|hi N0 N1 ... N10
 * with ZONE "all" for a node's sum, then "reads N". integration/snapshot runs it beside a
 * snapshot pass: buddyinfo's first and last reads alone miss a count that left their range and
 * came back while other programs allocated and freed. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "snapshot/snapshot.h"

#define ORDERS	 SNAP_NR_ORDERS
#define MAX_ROWS (2 * SNAP_MAX_ZONES) /* zones and nodes */

struct row {
	int node;
	char zone[16];
	uint64_t lo[ORDERS], hi[ORDERS];
	unsigned seen; /* reads that had it */
};

static struct row rows[MAX_ROWS];
static unsigned nrows;
static volatile sig_atomic_t stop;
static struct snap_zone zones[SNAP_MAX_ZONES]; /* zoneinfo's: every zone buddyinfo may list */
static unsigned nzones;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static struct row *row_of(int node, const char *zone)
{
	for (unsigned i = 0; i < nrows; i++)
		if (rows[i].node == node && !strcmp(rows[i].zone, zone))
			return &rows[i];
	if (nrows == MAX_ROWS)
		return NULL;
	rows[nrows].node = node;
	snprintf(rows[nrows].zone, sizeof(rows[nrows].zone), "%s", zone);
	return &rows[nrows++];
}

static void note(struct row *r, const uint64_t *b)
{
	if (!r)
		return;
	for (unsigned o = 0; o < ORDERS; o++) {
		r->lo[o] = !r->seen || b[o] < r->lo[o] ? b[o] : r->lo[o];
		r->hi[o] = !r->seen || b[o] > r->hi[o] ? b[o] : r->hi[o];
	}
	r->seen++;
}

/* One read: every zone's line (the snapshot's own parser, core/snapshot/procfs.c), and each
 * node's sum. */
static int read_once(void)
{
	static char text[64 * 1024];
	uint64_t sum[SNAP_MAX_ZONES][ORDERS];
	int sum_node[SNAP_MAX_ZONES];
	unsigned nsum = 0;

	if (snap_read_text("/proc/buddyinfo", text, sizeof(text)) < 0)
		return -1;
	for (unsigned z = 0; z < nzones; z++) {
		uint64_t b[ORDERS];
		unsigned s;

		if (snap_parse_buddyinfo(text, zones[z].node, zones[z].name, b) < 0)
			continue; /* not populated: buddyinfo lists no line for it */
		note(row_of(zones[z].node, zones[z].name), b);
		for (s = 0; s < nsum && sum_node[s] != zones[z].node; s++)
			;
		if (s == nsum) {
			sum_node[nsum++] = zones[z].node;
			memset(sum[s], 0, sizeof(sum[s]));
		}
		for (unsigned k = 0; k < ORDERS; k++)
			sum[s][k] += b[k];
	}
	for (unsigned s = 0; s < nsum; s++)
		note(row_of(sum_node[s], "all"), sum[s]);
	return 0;
}

static void print_bound(const struct row *r, const char *which, const uint64_t *v)
{
	printf("%d %s %s", r->node, r->zone, which);
	for (unsigned o = 0; o < ORDERS; o++)
		printf(" %llu", (unsigned long long)v[o]);
	printf("\n");
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_stop};
	struct timespec tick = {0, 2 * 1000 * 1000};
	unsigned reads = 0;
	time_t end = time(NULL) + 600;

	static char info[1 << 20];

	if (snap_read_text("/proc/zoneinfo", info, sizeof(info)) < 0 ||
	    snap_parse_zoneinfo(info, zones, SNAP_MAX_ZONES, &nzones) < 0) {
		fprintf(stderr, "buddy_watch: cannot read /proc/zoneinfo\n");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* never left behind by a test that failed */
	for (;;) {
		int last = stop || time(NULL) >= end; /* stopped: one more read, after the pass */

		if (read_once() == 0)
			reads++;
		if (last)
			break;
		nanosleep(&tick, NULL);
	}
	for (unsigned i = 0; i < nrows; i++) {
		print_bound(&rows[i], "lo", rows[i].lo);
		print_bound(&rows[i], "hi", rows[i].hi);
	}
	printf("reads %u\n", reads);
	return reads ? 0 : 1;
}
