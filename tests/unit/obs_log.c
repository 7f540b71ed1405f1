/* Lock-free log ring (core/obs/log.c): formatting through the checked macro, level filtering,
 * FIFO order, drops counted when full, and concurrent producers with a concurrent consumer. */
#include "harness.h"
#include "obs/log.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>

static struct obs_log *lg;

struct collect {
	char text[64][128];
	int n;
};

static void collect_one(void *arg, const struct obs_log_rec *r)
{
	struct collect *c = arg;

	if (c->n < 64)
		obs_log_format(r, c->text[c->n++], sizeof(c->text[0]));
}

TEST(records_format_in_order_with_their_arguments)
{
	struct collect c = {0};

	ASSERT_EQ(obs_log_create(&lg, 16, OBS_LOG_INFO), 0);
	OBS_LOG(lg, OBS_LOG_WARN, -14, "UFFDIO_COPY at %#llx failed: errno %lld", 0x7f0000001000ULL, 14);
	OBS_LOG(lg, OBS_LOG_INFO, 0, "no arguments");
	OBS_LOG(lg, OBS_LOG_INFO, 0, "%lld %lld %lld %lld", -1, 2, 3, 4);
	OBS_LOG(lg, OBS_LOG_DEBUG, 0, "filtered out %lld", 1); /* above the ring's level */
	EXPECT_EQ(obs_log_drain(lg, collect_one, &c), 3);
	ASSERT_EQ(c.n, 3);
	ASSERT_STREQ(c.text[0], "UFFDIO_COPY at 0x7f0000001000 failed: errno 14");
	ASSERT_STREQ(c.text[1], "no arguments");
	ASSERT_STREQ(c.text[2], "-1 2 3 4");
	EXPECT_EQ(obs_log_drain(lg, collect_one, &c), 0);
	obs_log_set_level(lg, OBS_LOG_DEBUG);
	EXPECT(obs_log_enabled(lg, OBS_LOG_DEBUG));
	EXPECT(!obs_log_enabled(NULL, OBS_LOG_ERR));
	obs_log_destroy(lg);
	EXPECT_EQ(obs_log_create(&lg, 0, OBS_LOG_INFO), -EINVAL);
}

TEST(full_ring_drops_and_counts)
{
	char buf[4096];
	FILE *m;
	long long v;

	ASSERT_EQ(obs_log_create(&lg, 4, OBS_LOG_DEBUG), 0);
	for (v = 0; v < 6; v++)
		OBS_LOG(lg, OBS_LOG_ERR, 5, "record %lld", v);
	EXPECT_EQ(obs_log_dropped(lg), 2);
	m = fmemopen(buf, sizeof(buf), "w");
	ASSERT(m != NULL);
	EXPECT_EQ(obs_log_print(lg, m, 0, 0), 4);
	fclose(m);
	ASSERT_STREQ(buf, "thpemu: error: record 0\nthpemu: error: record 1\n"
			  "thpemu: error: record 2\nthpemu: error: record 3\n"
			  "thpemu: warning: 2 log records dropped (log ring full)\n");
	/* the ring is usable again, laps wrap, and a loss is reported once */
	OBS_LOG(lg, OBS_LOG_INFO, 7, "after %lld", 1);
	m = fmemopen(buf, sizeof(buf), "w");
	EXPECT_EQ(obs_log_print(lg, m, OBS_LOG_PRINT_VERBOSE, 0), 1);
	fclose(m);
	EXPECT(strstr(buf, " info: after 1 (code 7)\n") != NULL);
	EXPECT(strncmp(buf, "thpemu[", 7) == 0);
	EXPECT(strstr(buf, "dropped") == NULL);
	obs_log_destroy(lg);
}

static int32_t last_tid;

static void take_tid(void *arg, const struct obs_log_rec *r)
{
	last_tid = r->tid;
}

TEST(records_carry_the_logging_thread_even_after_fork)
{
	pid_t child;
	int status;

	ASSERT_EQ(obs_log_create(&lg, 8, OBS_LOG_INFO), 0);
	OBS_LOG(lg, OBS_LOG_INFO, 0, "parent");
	obs_log_drain(lg, take_tid, NULL);
	EXPECT_EQ(last_tid, (int32_t)syscall(SYS_gettid));
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		OBS_LOG(lg, OBS_LOG_INFO, 0, "child");
		obs_log_drain(lg, take_tid, NULL);
		_exit(last_tid == (int32_t)syscall(SYS_gettid) ? 0 : 1);
	}
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	obs_log_destroy(lg);
}

#define PRODUCERS 4
#define PER_PRODUCER 50000

static int producers_done;

static void *producer(void *arg)
{
	long long id = (long long)(intptr_t)arg;

	for (long long i = 0; i < PER_PRODUCER; i++)
		OBS_LOG(lg, OBS_LOG_INFO, 0, "p%lld #%lld", id, i);
	__atomic_fetch_add(&producers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct tally {
	long long next[PRODUCERS]; /* next sequence number expected per producer */
	long long got;
	int out_of_order;
};

static void check_one(void *arg, const struct obs_log_rec *r)
{
	struct tally *t = arg;
	long long id = r->a[0], seq = r->a[1];

	if (id < 0 || id >= PRODUCERS || seq < t->next[id])
		t->out_of_order++;
	else
		t->next[id] = seq + 1;
	t->got++;
}

TEST(concurrent_producers_lose_nothing_they_were_not_told_about)
{
	pthread_t t[PRODUCERS];
	struct tally tally = {{0}, 0, 0};

	ASSERT_EQ(obs_log_create(&lg, 1024, OBS_LOG_INFO), 0);
	for (intptr_t i = 0; i < PRODUCERS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, producer, (void *)i), 0);
	/* drain while they produce, then once more after they finish */
	while (__atomic_load_n(&producers_done, __ATOMIC_ACQUIRE) < PRODUCERS)
		obs_log_drain(lg, check_one, &tally);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	obs_log_drain(lg, check_one, &tally);
	printf("  consumed %lld, dropped %llu\n", tally.got,
	       (unsigned long long)obs_log_dropped(lg));
	EXPECT_EQ(tally.out_of_order, 0);
	EXPECT_EQ(tally.got + (long long)obs_log_dropped(lg), (long long)PRODUCERS * PER_PRODUCER);
	EXPECT_GT(tally.got, 0);
	obs_log_destroy(lg);
}

TEST_MAIN()
