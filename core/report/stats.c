/* The statistics records of a run's processes (stats.h): their names for the report, reading a
 * record, and merging records into the run's total, census included (a process keeps its own at
 * its largest, the run the largest of them or, on a machine, the largest sum of the processes that
 * lived at once).
 */
#include "report/run.h"
#include "util/sys.h"

#include <fcntl.h>
#include <string.h>

const char *const uffd_host_names[] = {
#define UFFD_X_NAME(name, help) #name,
    UFFD_HOST_COUNTERS(UFFD_X_NAME)
#undef UFFD_X_NAME
};

const char *const uffd_host_help[] = {
#define UFFD_X_HELP(name, help) help,
    UFFD_HOST_COUNTERS(UFFD_X_HELP)
#undef UFFD_X_HELP
};

#define X_NAME(name, help) #name,
#define X_HELP(name, help) help,
const char *const uffd_why_names[] = {UFFD_UNMANAGED_REASONS(X_NAME)};
const char *const uffd_why_help[] = {UFFD_UNMANAGED_REASONS(X_HELP)};
#undef X_NAME
#undef X_HELP

/* Raw system calls: libthpemu.so links this file, and it calls none of the names it exports. */
int uffd_stats_read(const char *path, struct uffd_stats *st)
{
	int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	long n;

	if (fd < 0)
		return -1;
	n = sys_read(fd, st, sizeof(*st));
	sys_close(fd);
	if (n != (ssize_t)sizeof(*st) || st->magic != UFFD_STATS_MAGIC ||
	    st->version != UFFD_STATS_VERSION || st->size != sizeof(*st))
		return -1;
	return 0;
}

static bool host_is_max(const char *name)
{
	return strcmp(name, "latency_max_ns") == 0 || strcmp(name, "bytes_managed_peak") == 0 ||
	       strcmp(name, "collapse_copy_max_ns") == 0;
}

void uffd_stats_merge(struct uffd_stats *dst, const struct uffd_stats *src)
{
	const uint64_t *s = (const uint64_t *)(const void *)&src->host;
	uint64_t *d = (uint64_t *)(void *)&dst->host;

	for (unsigned i = 0; i < UFFD_NR_HOST; i++) {
		if (host_is_max(uffd_host_names[i]))
			d[i] = s[i] > d[i] ? s[i] : d[i];
		else
			d[i] += s[i];
	}
	for (unsigned i = 0; i < MM_STAT_NR; i++)
		dst->vmstat[i] += src->vmstat[i];
	obs_faults_merge(&dst->faults, &src->faults);
	obs_mthp_merge(&dst->mthp, &src->mthp);
	io_stats_merge(&dst->io, &src->io);
	uffd_census_merge(&dst->mem, &src->mem);
	for (uint32_t i = 0; i < src->nstall_recs && i < UFFD_STALL_RECS; i++) {
		if (dst->nstall_recs >= UFFD_STALL_RECS)
			break;
		if (src->stall_recs[i].ready)
			dst->stall_recs[dst->nstall_recs++] = src->stall_recs[i];
	}
	if (!dst->note[0] && src->note[0])
		memcpy(dst->note, src->note, sizeof(dst->note));
	if (!dst->policy[0])
		memcpy(dst->policy, src->policy, sizeof(dst->policy));
	if (!dst->pool_bytes)
		dst->pool_bytes = src->pool_bytes;
	if (!dst->handlers)
		dst->handlers = src->handlers;
	if (!dst->host_fault)
		dst->host_fault = src->host_fault;
	if (!dst->probe.n && src->probe.n) /* the first process's measurement stands for all */
		dst->probe = src->probe;
}

/* ---- the memory census ------------------------------------------------------------------------
 */

void uffd_census_keep_largest(struct uffd_census *c, const struct uffd_unmanaged_map *m)
{
	unsigned i = UFFD_CENSUS_TOP;

	if (!m->anon || m->anon <= c->top[UFFD_CENSUS_TOP - 1].anon)
		return;
	while (i > 0 && c->top[i - 1].anon < m->anon) {
		if (i < UFFD_CENSUS_TOP)
			c->top[i] = c->top[i - 1];
		i--;
	}
	c->top[i] = *m;
}

static uint64_t program(const struct uffd_census *c)
{
	return c->anon > c->anon_own ? c->anon - c->anon_own : 0;
}

/* The figures of one census (not its count of processes, nor its largest mappings). */
static void take_figures(struct uffd_census *dst, const struct uffd_census *src)
{
	dst->vmas = src->vmas;
	dst->rss = src->rss;
	dst->anon = src->anon;
	dst->anon_managed = src->anon_managed;
	dst->anon_own = src->anon_own;
	memcpy(dst->why_anon, src->why_anon, sizeof(dst->why_anon));
}

void uffd_census_merge(struct uffd_census *dst, const struct uffd_census *src)
{
	/* processes that lived one after another never held their largest at once: their sum
	 * would count a build's hundred compilers as one machine's memory. The largest stands
	 * for all here; the host of a machine knows when they lived (uffd_census_peak_words). */
	if (src->processes && (!dst->processes || program(src) > program(dst)))
		take_figures(dst, src);
	dst->processes += src->processes;
	for (unsigned i = 0; i < UFFD_CENSUS_TOP; i++)
		uffd_census_keep_largest(dst, &src->top[i]);
}

uint64_t uffd_census_words_program(const uint64_t *w)
{
	return w[0] > w[2] ? w[0] - w[2] : 0;
}

void uffd_census_peak_words(struct uffd_census *dst, const uint64_t *w)
{
	struct uffd_census c = {0};

	if (uffd_census_words_program(w) <= program(dst))
		return;
	c.anon = w[0];
	c.anon_managed = w[1];
	c.anon_own = w[2];
	for (unsigned i = 0; i < UFFD_WHY_NR; i++)
		c.why_anon[i] = w[3 + i];
	c.rss = dst->rss;
	c.vmas = dst->vmas;
	take_figures(dst, &c);
}
