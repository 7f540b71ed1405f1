/* core/mm under several threads with a pthread mutex environment (what the live emulator does;
 * the TSan build runs this): fault/free threads, a page-cache writer and a flusher completing
 * writeback run together while 3.1 sync compaction waits on writeback with the mm lock
 * released. Checks the lock discipline of every hook, the rule for frees racing with
 * migration, and that nothing is lost. Also the environment of a pool shared by processes
 * (mm_config.shared): placement through meta_alloc and the per-process bindings (mm_attach). */
#include <sys/mman.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"
#include "util/clock.h"
#include "util/rng.h"

#define MIB		 (1ULL << 20)
#define NFAULTERS	 3
#define PAGES_PER_THREAD (24 * 512) /* 24 extents of address space per faulter */

enum page_state { P_EMPTY, P_PENDING, P_LIVE, P_HUGE };

/* The "page tables" of the test program: one entry per 4 KiB page, under one lock (the
 * page-table lock). migrate_anon takes it too, so a page's frame changes only under it. */
struct pagetable {
	pthread_mutex_t lock;
	uint8_t state[NFAULTERS * PAGES_PER_THREAD];
	uint32_t pfn[NFAULTERS * PAGES_PER_THREAD];
	uint64_t moved, refused;
};

static struct pagetable PT = {.lock = PTHREAD_MUTEX_INITIALIZER};

static volatile int stop_flusher;

static int on_migrate(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to)
{
	uint64_t page = owner - 1;
	int ret = 0;

	pthread_mutex_lock(&PT.lock);
	if (PT.state[page] == P_PENDING) {
		ret = -EAGAIN; /* still being installed by its fault */
		PT.refused++;
	} else if (PT.state[page] != P_LIVE || PT.pfn[page] != from) {
		ret = -ENOENT; /* unmapped meanwhile */
	} else {
		PT.pfn[page] = to;
		PT.moved++;
	}
	pthread_mutex_unlock(&PT.lock);
	return ret;
}

struct faulter {
	struct fakeenv *fe;
	unsigned id;
	struct rng rng;
	unsigned huge, base;
};

static void fault_extent(struct faulter *t, uint64_t first)
{
	struct mm_fault_req req = {.owner = first + 1,
				   .extent_owner = first + 1,
				   .huge_ok = true,
				   .advice = MM_VMA_HUGEPAGE,
				   .write = true};
	struct mm_fault_res res;

	pthread_mutex_lock(&PT.lock);
	for (uint32_t i = 0; i < 512; i++)
		PT.state[first + i] = P_PENDING;
	pthread_mutex_unlock(&PT.lock);
	ASSERT_EQ(mm_fault(t->fe->mm, &req, &res, NULL), 0);
	pthread_mutex_lock(&PT.lock);
	if (res.outcome == MM_FAULT_HUGE) {
		PT.state[first] = P_HUGE;
		PT.pfn[first] = res.pfn;
		for (uint32_t i = 1; i < 512; i++)
			PT.state[first + i] = P_EMPTY;
		t->huge++;
	} else {
		PT.state[first] = res.outcome == MM_FAULT_BASE ? P_LIVE : P_EMPTY;
		PT.pfn[first] = res.pfn;
		for (uint32_t i = 1; i < 512; i++)
			PT.state[first + i] = P_EMPTY;
		t->base++;
	}
	pthread_mutex_unlock(&PT.lock);
	/* a few more base pages of a fallen-back extent */
	for (uint32_t i = 1; res.outcome != MM_FAULT_HUGE && i < 48; i++) {
		req.owner = first + i + 1;
		req.huge_ok = false;
		pthread_mutex_lock(&PT.lock);
		PT.state[first + i] = P_PENDING;
		pthread_mutex_unlock(&PT.lock);
		ASSERT_EQ(mm_fault(t->fe->mm, &req, &res, NULL), 0);
		pthread_mutex_lock(&PT.lock);
		PT.state[first + i] = res.outcome == MM_FAULT_BASE ? P_LIVE : P_EMPTY;
		PT.pfn[first + i] = res.pfn;
		pthread_mutex_unlock(&PT.lock);
	}
}

/* munmap of an extent: every page's frame goes back, under the page-table lock. */
static void unmap_extent(struct faulter *t, uint64_t first)
{
	pthread_mutex_lock(&PT.lock);
	if (PT.state[first] == P_HUGE)
		mm_anon_free(t->fe->mm, PT.pfn[first], MM_HPAGE_ORDER, NULL);
	for (uint32_t i = 0; i < 512; i++) {
		if (PT.state[first + i] == P_LIVE)
			mm_anon_free(t->fe->mm, PT.pfn[first + i], 0, NULL);
		PT.state[first + i] = P_EMPTY;
	}
	pthread_mutex_unlock(&PT.lock);
}

static void *faulter_main(void *arg)
{
	struct faulter *t = arg;
	uint64_t base = (uint64_t)t->id * PAGES_PER_THREAD;

	bool mapped[PAGES_PER_THREAD / 512] = {0};

	for (int round = 0; round < 4; round++) {
		for (uint32_t e = 0; e < PAGES_PER_THREAD / 512; e++) {
			if (!mapped[e])
				fault_extent(t, base + e * 512);
			mapped[e] = true;
		}
		for (uint32_t e = (uint32_t)rng_below(&t->rng, 2); e < PAGES_PER_THREAD / 512;
		     e += 2) {
			unmap_extent(t, base + e * 512);
			mapped[e] = false;
		}
	}
	for (uint32_t e = 0; e < PAGES_PER_THREAD / 512; e++)
		unmap_extent(t, base + e * 512);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct fakeenv *fe = arg;

	for (uint32_t i = 0; i < 6000; i++) {
		uint32_t pfn;
		bool created;
		int ret;

		while ((ret = mm_pagecache_get(fe->mm, MM_OWNER_FILE(1, i % 3000), true, &pfn,
					       &created, NULL)) == -EAGAIN)
			sched_yield();
		if (ret == 0)
			mm_pagecache_put(fe->mm, pfn, i % 3 == 0);
	}
	return NULL;
}

/* The flusher: starts writeback of dirty pages; each sweep completes every writeback in the
 * pool (its own, the pages placed at set-up, and those sync compaction wrote out through the
 * writeout hook). */
static void *flusher_main(void *arg)
{
	struct fakeenv *fe = arg;
	uint32_t pfns[16];
	uint64_t owners[16];

	uint64_t t0 = clock_now_ns();

	while (!__atomic_load_n(&stop_flusher, __ATOMIC_ACQUIRE)) {
		mm_writeback_begin(fe->mm, 16, pfns, owners);
		sched_yield();
		/* a slow device at first: nothing completes until compaction has waited on a
		 * few pages (or 200 ms passed), so the waits this test is about happen */
		if (__atomic_load_n(&fe->n_wait, __ATOMIC_RELAXED) < 3 &&
		    clock_now_ns() - t0 < 200 * 1000000ULL)
			continue;
		for (uint32_t p = 0; p < fe->nr_frames; p++)
			if (mm_frame_under_writeback(fe->mm, p))
				mm_writeback_end(fe->mm, p, 0);
	}
	return NULL;
}

TEST(threads_fault_free_write_and_flush_concurrently)
{
	struct fakeenv fe;
	struct faulter t[NFAULTERS];
	pthread_t th[NFAULTERS + 2];
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1:async-failure-defers=no", 32 * MIB, true, err,
			       sizeof(err)),
		  0);
	fe.on_migrate = on_migrate;
	ASSERT_EQ(mm_fragment(fe.mm, "anon:15%,pagecache:25%", 3, err, sizeof(err), NULL), 0);
	for (uint32_t b = 0; b < fe.nr_frames / 512; b++)
		mm_debug_place(fe.mm, b * 512 + 200, DBG_FILE_WRITEBACK, MM_OWNER_FILE(2, b));
	for (unsigned i = 0; i < NFAULTERS; i++) {
		t[i] = (struct faulter){.fe = &fe, .id = i};
		rng_seed(&t[i].rng, i + 1);
		ASSERT_EQ(pthread_create(&th[i], NULL, faulter_main, &t[i]), 0);
	}
	ASSERT_EQ(pthread_create(&th[NFAULTERS], NULL, writer_main, &fe), 0);
	ASSERT_EQ(pthread_create(&th[NFAULTERS + 1], NULL, flusher_main, &fe), 0);
	for (unsigned i = 0; i <= NFAULTERS; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&stop_flusher, 1, __ATOMIC_RELEASE);
	pthread_join(th[NFAULTERS + 1], NULL);

	mm_get_stats(fe.mm, st);
	mm_get_counts(fe.mm, &c);
	printf("  huge %u+%u+%u, waits %llu, program pages moved %llu (refused %llu), "
	       "pgmigrate %llu\n",
	       t[0].huge, t[1].huge, t[2].huge, (unsigned long long)fe.n_wait,
	       (unsigned long long)PT.moved, (unsigned long long)PT.refused,
	       (unsigned long long)st[MM_STAT_PGMIGRATE_SUCCESS]);
	EXPECT_EQ(fe.n_lock_violations, 0);
	EXPECT_GT(fe.n_wait, 0);
	EXPECT_EQ(st[MM_STAT_COMPACT_WB_WAIT] + st[MM_STAT_RECLAIM_WB_WAIT], fe.n_wait);
	EXPECT_GT(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_EQ(c.anon, 0); /* every program frame came back */
	if (c.anon) {
		unsigned shown = 0;

		fprintf(stderr, "  now nr_anon %u huge %u (counts said %u / %u)\n", fe.mm->nr_anon,
			fe.mm->nr_anon_huge, c.anon, c.anon_huge);
		for (uint32_t p = 0; p < fe.nr_frames && shown < 8; p++) {
			const struct mm_frame *f = pfn_frame(fe.mm, p);

			if (f->state != FS_ANON || (f->owner & MM_OWNER_FOREIGN))
				continue;
			shown++;
			fprintf(stderr,
				"  leaked pfn %u owner %llu flags %x: page state %u pfn %u\n", p,
				(unsigned long long)f->owner, f->flags, PT.state[f->owner - 1],
				PT.pfn[f->owner - 1]);
		}
	}
	EXPECT_EQ(c.isolated, 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* ---- A pool shared by processes -------------------------------------------------------------- */

/* Metadata from one MAP_SHARED segment (a bump allocator, nothing released), as the machine
 * segment gives it: every process that forks after mm_create sees the same pool. */
struct segment {
	uint8_t *base;
	size_t len, used;
	unsigned nallocs, nfrees;
};

static void *seg_alloc(void *priv, size_t len)
{
	struct fakeenv *fe = priv;
	struct segment *sg = fe->user;
	void *p;

	len = (len + 63) & ~(size_t)63;
	if (sg->used + len > sg->len)
		return NULL;
	p = sg->base + sg->used;
	sg->used += len;
	sg->nallocs++;
	return p;
}

static void seg_free(void *priv, void *p, size_t len)
{
	struct fakeenv *fe = priv;
	struct segment *sg = fe->user;

	(void)p;
	(void)len;
	sg->nfrees++;
}

static int create_shared(struct fakeenv *fe, struct mm_env_ops *ops, struct mm **mm)
{
	struct mm_config cfg = {.pool_bytes = 16 * MIB, .shared = true};
	struct mm_env env = {.ops = ops, .priv = fe};
	char err[256];
	int ret = mm_policy_parse("linux-3.2", &cfg.policy, err, sizeof(err));

	*mm = NULL; /* a policy that does not parse creates nothing */
	if (!ret)
		ret = mm_create(&cfg, &env, mm, err, sizeof(err));
	fe->mm = *mm;
	return ret;
}

/* Faults served by a fork child that bound its own environment land in the one pool (the
 * parent sees them), and the child's hooks run with the child's priv, never the creator's. */
TEST(shared_pool_served_by_a_forked_child_with_its_own_env)
{
	struct segment sg = {.len = 8 * MIB};
	struct fakeenv parent = {0};
	struct mm_env_ops ops = fe_ops_single;
	struct mm_counts c;
	struct mm *mm;
	char err[256];
	int status;
	pid_t pid;

	sg.base = mmap(NULL, sg.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT(sg.base != MAP_FAILED);
	ops.meta_alloc = seg_alloc;
	ops.meta_free = NULL;
	parent.user = &sg;
	ASSERT_EQ(create_shared(&parent, &ops, &mm), 0);
	EXPECT((uint8_t *)mm >= sg.base && (uint8_t *)mm < sg.base + sg.len);
	EXPECT(mm->env.ops == NULL); /* never stored in the shared struct */
	EXPECT_EQ(sg.nallocs, 7);    /* the struct and its six arrays */
	pid = fork();
	ASSERT(pid >= 0);
	if (pid == 0) {
		struct fakeenv child = {.mm = mm, .user = &sg};
		struct mm_env env = {.ops = &ops, .priv = &child};
		struct mm_fault_req req = {.huge_ok = true, .write = true};
		struct mm_fault_res res;
		int bad = mm_attach(mm, &env) != 0;

		for (unsigned i = 0; i < 3; i++) {
			req.owner = req.extent_owner = 0x100000ULL * (i + 1);
			bad |= mm_fault(mm, &req, &res, NULL) || res.outcome != MM_FAULT_HUGE;
		}
		_exit(bad || child.n_clear != 3 ? 1 : 0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(parent.n_clear, 0);
	mm_get_counts(mm, &c);
	EXPECT_EQ(c.anon_huge, 3 * 512);
	ASSERT_EQ(mm_check(mm, err, sizeof(err)), 0);
	mm_destroy(mm); /* meta_free is NULL: nothing is released, the segment goes whole */
	EXPECT_EQ(sg.nfrees, 0);
	munmap(sg.base, sg.len);
}

/* Bindings: only shared pools take one, at most four per process; destroying a pool frees its
 * struct and arrays through the binding's meta_free and releases the binding. */
TEST(shared_bindings_table)
{
	struct segment sg = {.len = 64 * MIB};
	struct fakeenv fe[5] = {0};
	struct mm_env_ops ops = fe_ops_single;
	struct mm_env env = {.ops = &ops, .priv = &fe[0]};
	struct mm *mm[5], *priv_mm;
	char err[256];

	sg.base = mmap(NULL, sg.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT(sg.base != MAP_FAILED);
	ops.meta_alloc = seg_alloc;
	ops.meta_free = seg_free;
	for (unsigned i = 0; i < 5; i++)
		fe[i].user = &sg;
	for (unsigned i = 0; i < 4; i++)
		ASSERT_EQ(create_shared(&fe[i], &ops, &mm[i]), 0);
	EXPECT_EQ(create_shared(&fe[4], &ops, &mm[4]), -ENOSPC);
	EXPECT(mm[4] == NULL);
	EXPECT_EQ(sg.nfrees, 1); /* the struct it had allocated */
	ASSERT_EQ(fakeenv_init(&fe[4], "linux-3.2", 16 * MIB, false, err, sizeof(err)), 0);
	priv_mm = fe[4].mm;
	EXPECT_EQ(mm_attach(priv_mm, &env), -EINVAL);
	fakeenv_destroy(&fe[4]);
	EXPECT_EQ(mm_attach(mm[0], &env), 0); /* re-binding replaces */
	mm_destroy(mm[1]);
	EXPECT_EQ(sg.nfrees, 1 + 7);
	fe[4].user = &sg;
	ASSERT_EQ(create_shared(&fe[4], &ops, &mm[4]), 0);
	mm_detach(mm[2]);
	EXPECT_EQ(mm_attach(mm[2], &env), 0);
	for (unsigned i = 0; i < 5; i++)
		if (i != 1)
			ASSERT_EQ(mm_check(mm[i], err, sizeof(err)), 0);
	munmap(sg.base, sg.len);
}

TEST_MAIN()
