/* The live emulator as the live_* unit tests start it: in-process, on a real userfaultfd, with
 * three handler threads, two staged THPs and nothing printed. Where no userfaultfd can be had
 * (neither root, CAP_SYS_PTRACE, vm.unprivileged_userfaultfd nor /dev/userfaultfd) the test is
 * skipped; any other failure to start fails it.
 *
 *   struct uffd_live *lv = live_mk("modern-always", "256M");
 *   char *p = live_map(lv, 4 * MB);
 *   ...
 *   uffd_live_destroy(lv);
 *
 * A test that needs more (khugepaged off, a trace, a stall threshold) fills a config with
 * live_config, changes it and calls live_start.
 */
#ifndef THPEMU_TESTS_LIVE_FIXTURE_H
#define THPEMU_TESTS_LIVE_FIXTURE_H

#include "harness.h"

#include <sys/mman.h>

#include "live/uffd_internal.h"
#include "util/sys.h"

#define MB (1UL << 20)
#define HP (2UL << 20)
#define PG 4096UL

/* One of lv's host counters (struct uffd_host_stats). */
#define HOST(lv, f) __atomic_load_n(&(lv)->stats->host.f, __ATOMIC_RELAXED)

/* The tests' configuration: policy (a profile, or PROFILE:KEY=VALUE,...) and pool (a size) as
 * THPEMU_POLICY and THPEMU_POOL take them. */
static inline void live_config(struct config *cfg, const char *policy, const char *pool)
{
	char err[512] = "";

	config_defaults(cfg);
	ASSERT_EQ(config_opt_parse(config_opt_by_env("THPEMU_POLICY"), NULL, policy, cfg, err,
				   sizeof(err)),
		  0);
	ASSERT_EQ(
	    config_opt_parse(config_opt_by_env("THPEMU_POOL"), NULL, pool, cfg, err, sizeof(err)),
	    0);
	cfg->handlers = 3;
	cfg->staging = 2;
	cfg->log = CONFIG_LOG_QUIET;
	/* a touch is a first touch that takes a frame, read or write (the tests count them);
	 * the zero pages' tests turn them on */
	cfg->zero_page = false;
}

/* An emulator running cfg (skips without a userfaultfd). */
static inline struct uffd_live *live_start(const struct config *cfg)
{
	struct uffd_live *lv = NULL;
	char err[512] = "";

	if (uffd_live_create(cfg, &lv, err, sizeof(err)) < 0) {
		if (strstr(err, "userfaultfd unavailable"))
			SKIP("%s", err);
		fprintf(stderr, "  create: %s\n", err);
		ASSERT(0);
	}
	return lv;
}

/* An emulator with the tests' configuration. */
static inline struct uffd_live *live_mk(const char *policy, const char *pool)
{
	struct config cfg;

	live_config(&cfg, policy, pool);
	return live_start(&cfg);
}

/* A private anonymous read-write mapping of len bytes made through the emulator's mmap, as the
 * program's would be; one of 2 MiB or more starts on a 2 MiB boundary. */
static inline char *live_map(struct uffd_live *lv, size_t len)
{
	long p =
	    uffd_mmap(lv, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT(!sys_is_err(p));
	if (len >= HP)
		ASSERT_EQ((uintptr_t)p % HP, 0);
	return (char *)p;
}

/* The emulated pool's page counts. */
static inline struct mm_counts live_counts(struct uffd_live *lv)
{
	struct mm_counts c;

	mm_get_counts(lv->mm, &c);
	return c;
}

#endif
