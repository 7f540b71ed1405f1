/* The host of a shared machine: see host.h. Its mm environment is env/host.c. */
#include "host/host.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/rqshare.h"
#include "report/run.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"
#include "util/sys.h"

#define KEEPER_SLICE_NS	  (50 * 1000000ULL)
#define KTHREAD_MAX_SLEEP (100 * 1000000ULL)
#define CHECK_MAX_FRAMES  (1U << 20) /* 4 GiB: mm_check at the end of a run takes ~0.2 s */

static int repair(void *arg)
{
	return mm_repair(arg);
}

/* ---- threads ----------------------------------------------------------------------------------
 */

static bool stopping(struct run_host *h)
{
	return __atomic_load_n(&h->stop, __ATOMIC_ACQUIRE) != 0;
}

static void sleep_on(uint32_t *word, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
	uint32_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);

	sys_futex_wait(word, v, &ts);
}

/* The live processes' memory now (their latest censuses): offered as the machine's peak (each
 * process offers the sum too whenever it publishes a census). */
static void mem_sample(struct run_host *h)
{
	uint64_t sum[MACHINE_SLOT_MEM];

	machine_mem_sum(&h->m, sum);
	machine_mem_offer(&h->m, sum, uffd_census_words_program(sum));
}

void run_host_mem_peak(struct run_host *h, struct uffd_census *mem)
{
	uint64_t peak[MACHINE_SLOT_MEM];

	if (machine_mem_peak(&h->m, peak))
		uffd_census_peak_words(mem, peak);
}

/* A coverage sample if one is due (last: the program ended, its memory is going back: the series
 * ends without a sample); returns the ns until the next. */
static uint64_t coverage_tick(struct run_host *h, bool last)
{
	struct mm_counts c;
	uint64_t now, next;

	mm_get_counts(h->mm, &c);
	now = clock_now_ns();
	pthread_mutex_lock(&h->cov_lock);
	mem_sample(h);
	if (last)
		obs_coverage_close(&h->cov, now);
	else if (now >= obs_coverage_next(&h->cov))
		obs_coverage_sample(&h->cov, now, c.anon_pmd, c.anon);
	next = obs_coverage_next(&h->cov);
	pthread_mutex_unlock(&h->cov_lock);
	return next > now ? next - now : 1;
}

/* kswapd, kcompactd and the proactive compaction timer of the machine. */
static void *kthread_main(void *arg)
{
	struct run_host *h = arg;

	while (!stopping(h)) {
		uint64_t wait = mm_background(h->mm, NULL);

		if (stopping(h))
			break;
		sleep_on(&h->stop, wait && wait < KTHREAD_MAX_SLEEP ? wait : KTHREAD_MAX_SLEEP);
	}
	return NULL;
}

/* khugepaged: a thread of its own (a visit may wait seconds for a process's collapse). A
 * registration does not wake it: with nothing registered it looks again every 100 ms. */
static void *khugepaged_main(void *arg)
{
	struct run_host *h = arg;

	while (!stopping(h)) {
		uint64_t wait = mm_khugepaged(h->mm, NULL);

		if (stopping(h))
			break;
		sleep_on(&h->stop, wait && wait < KTHREAD_MAX_SLEEP ? wait : KTHREAD_MAX_SLEEP);
	}
	return NULL;
}

/* Coverage samples, on a thread of their own so that the kernel threads keep their pace. */
static void *covthread_main(void *arg)
{
	struct run_host *h = arg;

	while (!stopping(h)) {
		uint64_t wait = coverage_tick(h, false);

		if (stopping(h))
			break;
		sleep_on(&h->stop, wait);
	}
	return NULL;
}

void run_host_coverage_start(struct run_host *h)
{
	pthread_mutex_lock(&h->cov_lock);
	obs_coverage_init(&h->cov, clock_now_ns(), RUN_HOST_COV_INTERVAL);
	pthread_mutex_unlock(&h->cov_lock);
}

void run_host_coverage(struct run_host *h, struct obs_coverage *out)
{
	coverage_tick(h, true);
	pthread_mutex_lock(&h->cov_lock);
	memcpy(out, &h->cov, sizeof(*out));
	pthread_mutex_unlock(&h->cov_lock);
}

/* A dead process's shared memory mappings end: a MAP_SHARED anonymous object nobody maps any
 * more goes, with its frames (core/live/shmem.c does the same when a process unmaps it). */
static void release_shmem(struct run_host *h, int slot)
{
	uint32_t ids[MACHINE_SHMEM_OBJECTS];
	unsigned n;

	machine_lock(&h->m);
	n = machine_shmem_slot_gone(h->m.hdr->shmem, slot, ids, MACHINE_SHMEM_OBJECTS);
	machine_unlock(&h->m);
	for (unsigned i = 0; i < n; i++) {
		h->frames_back += mm_shmem_release(h->mm, ids[i]);
		machine_lock(&h->m);
		machine_shmem_released(h->m.hdr->shmem, ids[i]);
		machine_unlock(&h->m);
	}
}

static void release_slot(void *arg, int slot)
{
	struct run_host *h = arg;
	void (*seen)(void *, int) = __atomic_load_n(&h->on_reap, __ATOMIC_ACQUIRE);

	if (seen) /* the slot still says whose it was */
		seen(h->on_reap_arg, slot);
	mm_khugepaged_exit(h->mm, (uint32_t)slot); /* khugepaged_exit, if it did not say so */
	h->frames_back += mm_release_owners(h->mm, MACHINE_OWNER_SLOT_MASK,
					    (uint64_t)slot << MACHINE_OWNER_SLOT_SHIFT);
	release_shmem(h, slot);
}

/* A writeout whose requester took a request of the machine's 3.x list (it is published only
 * once the engine runs): the engine frees it at the write's completion, or at once when the
 * page is not written out (-EAGAIN: the requester must not free it again). */
static int writeout_held(struct run_host *h, uint64_t owner, uint32_t pfn)
{
	int rc = io_writeout_held(h->io, owner, pfn);

	return rc == -EBUSY ? -EAGAIN : rc;
}

/* At most this many records made a turn of the keeper (about 0.3 ms each on ext4): reaping and
 * the machine's requests wait no longer. */
#define SPARES_PER_TURN 4

/* The missing records made again (run_host_spares). Each under a temporary name, sized, then
 * renamed into place: a process never claims a file shorter than its record. A run shorter than
 * a keeper tick, or of a single process so far, makes none (each costs an inode, and an unlink at
 * the end). */
static void spares_top_up(struct run_host *h)
{
	char path[sizeof(h->spare_dir) + 32], tmp[sizeof(h->spare_dir) + 32];
	uint64_t from = __atomic_load_n(&h->spares_from_ns, __ATOMIC_ACQUIRE);
	unsigned made = 0;
	int64_t live;

	if (!from || clock_now_ns() < from)
		return;
	/* a run that has had one process so far (no fork, no exec: live and reaped together)
	 * would claim none */
	live = (int64_t)__atomic_load_n(&h->m.hdr->nslots_live, __ATOMIC_ACQUIRE) -
	       (int64_t)h->spare_slots0;
	if (live + (int64_t)h->reaped < 2) /* none of the run's processes is reaped before it */
		return;
	snprintf(tmp, sizeof(tmp), "%s/.spare-new", h->spare_dir);
	for (unsigned k = 0; k < UFFD_STATS_SPARES && made < SPARES_PER_TURN; k++) {
		int fd;

		snprintf(path, sizeof(path), UFFD_STATS_SPARE_FMT, h->spare_dir, k);
		if (faccessat(AT_FDCWD, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return;
		if (ftruncate(fd, (off_t)UFFD_STATS_FILE_LEN) < 0 || rename(tmp, path) < 0) {
			close(fd);
			unlink(tmp);
			return;
		}
		close(fd);
		made++;
	}
}

void run_host_spares(struct run_host *h, const char *dir)
{
	if (snprintf(h->spare_dir, sizeof(h->spare_dir), "%s", dir) >= (int)sizeof(h->spare_dir))
		return;
	/* the machine's own before the program starts (read again by the keeper, once enabled) */
	h->spare_slots0 = __atomic_load_n(&h->m.hdr->nslots_live, __ATOMIC_ACQUIRE);
	__atomic_store_n(&h->spares_from_ns, clock_now_ns() + KEEPER_SLICE_NS, __ATOMIC_RELEASE);
}

/* Requests to the machine itself (slot 0: writeout), and the reaping of dead processes. */
static void *keeper_main(void *arg)
{
	struct run_host *h = arg;

	while (!stopping(h)) {
		uint64_t owner;
		uint32_t op, from, to;

		while (machine_serve_wait(&h->m, 0, &h->stop, KEEPER_SLICE_NS, &op, &owner, &from,
					  &to)) {
			int rc = -EINVAL;

			if (op == MACHINE_REQ_WRITEOUT && to == MACHINE_WRITEOUT_HELD)
				rc = writeout_held(h, owner, from);
			else if (op == MACHINE_REQ_WRITEOUT)
				rc = h->io ? io_writeout(h->io, owner, from) : -EBUSY;
			machine_serve_done(&h->m, 0, rc);
		}
		h->reaped += machine_reap(&h->m, release_slot, h);
		spares_top_up(h);
	}
	return NULL;
}

/* ---- io ----------------------------------------------------------------------------------------
 */

/* The machine's writeback engine and dirtier. A device that cannot be used degrades to the
 * in-process model (the note says why); io that cannot start at all leaves the machine without
 * writeback, as a process did before. */
static void io_start_host(struct run_host *h, const struct config *cfg)
{
	struct io_env env = {
	    .mm = h->mm, .wq = h->wq, .stats = &h->io_stats, .arena = machine_arena(&h->m)};
	struct io_config ic;
	char err[320] = "", why[640] = "";
	int rc;

	if (!cfg->device_spec[0] && !cfg->dirty_spec[0])
		return;
	config_io(cfg, &ic);
	if (ic.rq_3x) { /* one request list for the machine's device queue: every process's */
		env.rqs = machine_alloc(&h->m, sizeof(*env.rqs));
		if (env.rqs)
			rqs_init(env.rqs, ic.dev.nr_requests);
	}
	if (ic.dev.kind == IO_DEV_PRESET && !ic.dir[0])
		snprintf(why, sizeof(why),
			 "no mount for device %s: the in-process device model stands in",
			 ic.dev.model.name);
	rc = io_create(&ic, &env, &h->io, err, sizeof(err));
	if (rc < 0 && ic.dir[0]) {
		snprintf(why, sizeof(why),
			 "device %.200s unusable (%.200s): the in-process device model stands in",
			 ic.dir, err);
		ic.dir[0] = '\0';
		rc = io_create(&ic, &env, &h->io, err, sizeof(err));
	}
	if (rc == 0)
		rc = io_start(h->io);
	if (rc < 0) {
		snprintf(why, sizeof(why), "io could not start (%.200s): no dirtier, no writeback",
			 err[0] ? err : strerror(-rc));
		io_destroy(h->io);
		h->io = NULL;
	}
	__atomic_store_n(&h->member.io, h->io, __ATOMIC_RELEASE); /* the env's writeback engine */
	if (h->io && io_rqs(h->io) == env.rqs && env.rqs) /* processes find it from now on */
		__atomic_store_n(&h->m.hdr->rqs_off, machine_off(&h->m, env.rqs), __ATOMIC_RELEASE);
	if (why[0]) /* the note keeps its head */
		snprintf(h->io_stats.note, sizeof(h->io_stats.note), "%.*s",
			 (int)sizeof(h->io_stats.note) - 1, why);
	if (why[0] && cfg->log != CONFIG_LOG_QUIET)
		fprintf(stderr, "thpemu: %s\n", why);
}

/* ---- life cycle ---------------------------------------------------------------------------------
 */

static int make_pool(struct run_host *h, const struct config *cfg, char *err, size_t errlen)
{
	struct mm_config mc = {
	    .pool_bytes = cfg->pool_bytes, .policy = cfg->policy, .shared = true};
	int rc;

	h->member = (struct env_member){.m = &h->m, .arena = machine_arena(&h->m)};
	h->env.ops = &env_host_ops;
	h->env.priv = &h->member;
	h->wq = machine_alloc(&h->m, sizeof(*h->wq));
	if (!h->wq) {
		snprintf(err, errlen, "machine: no room for the wait queues");
		return -ENOMEM;
	}
	waitq_init_shared(h->wq);
	h->member.wq = h->wq;
	rc = mm_create(&mc, &h->env, &h->mm, err, errlen);
	if (rc < 0)
		return rc;
	h->member.mm = h->mm;
	h->m.repair = repair;
	h->m.repair_arg = h->mm;
	if (cfg->fragment[0]) {
		rc = snap_fragment(h->mm, cfg->fragment, cfg->seed, err, errlen, NULL);
		if (rc < 0)
			return rc;
	}
	h->m.hdr->waitq_off = machine_off(&h->m, h->wq);
	__atomic_store_n(&h->m.hdr->mm_off, machine_off(&h->m, h->mm), __ATOMIC_RELEASE);
	return 0;
}

int run_host_start(struct run_host *h, const struct config *cfg, char *err, size_t errlen)
{
	struct machine_config mc = {.meta_bytes = machine_meta_bytes(cfg->pool_bytes),
				    .arena_bytes = cfg->pool_bytes};
	char rdv[64];
	int rc;

	memset(h, 0, sizeof(*h));
	rc = machine_create(&mc, &h->m, err, errlen);
	if (rc < 0)
		return rc;
	pthread_mutex_init(&h->cov_lock, NULL);
	rc = make_pool(h, cfg, err, errlen);
	if (rc < 0)
		goto fail;
	run_host_coverage_start(h);
	io_start_host(h, cfg);
	rc = -pthread_create(&h->kthread, NULL, kthread_main, h);
	h->kthread_started = rc == 0;
	if (rc == 0)
		rc = -pthread_create(&h->keeper, NULL, keeper_main, h);
	h->keeper_started = rc == 0;
	if (rc == 0)
		rc = -pthread_create(&h->covthread, NULL, covthread_main, h);
	h->covthread_started = rc == 0;
	if (rc == 0)
		rc = -pthread_create(&h->khugepaged, NULL, khugepaged_main, h);
	h->khugepaged_started = rc == 0;
	if (rc < 0) {
		snprintf(err, errlen, "machine: cannot start its threads: %s", strerror(-rc));
		goto fail;
	}
	machine_rendezvous(&h->m, rdv, sizeof(rdv));
	setenv("THPEMU_MACHINE", rdv, 1);
	return 0;

fail:
	run_host_destroy(h);
	return rc;
}

static void stop_threads(struct run_host *h)
{
	__atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
	sys_futex_wake(&h->stop, 1 << 20);
	machine_serve_kick(&h->m, 0);
	if (h->kthread_started)
		pthread_join(h->kthread, NULL);
	if (h->keeper_started)
		pthread_join(h->keeper, NULL);
	if (h->covthread_started)
		pthread_join(h->covthread, NULL);
	if (h->khugepaged_started)
		pthread_join(h->khugepaged, NULL);
	h->kthread_started = h->keeper_started = h->covthread_started = false;
	h->khugepaged_started = false;
}

void run_host_stop(struct run_host *h, uint64_t drain_ns)
{
	if (h->io)
		io_stop(h->io, drain_ns);
	stop_threads(h);
	/* the processes are gone: what they held goes back, so the pool's accounts close */
	h->reaped += machine_reap(&h->m, release_slot, h);
}

void run_host_stats(struct run_host *h, uint64_t *vmstat, struct mm_counts *counts,
		    struct io_stats *io)
{
	mm_get_stats(h->mm, vmstat);
	mm_get_counts(h->mm, counts);
	io_stats_copy(io, &h->io_stats);
}

int run_host_check(struct run_host *h, char *why, size_t len)
{
	if (machine_tainted(&h->m)) {
		snprintf(why, len, "the model was damaged by a process that died holding its lock");
		return -EUCLEAN;
	}
	/* mm_check reads every frame descriptor the pool has used (seconds for a well-used 64 GiB
	 * pool): above CHECK_MAX_FRAMES only a machine that was repaired is checked */
	if (mm_nr_frames(h->mm) > CHECK_MAX_FRAMES && !h->m.hdr->repairs)
		return 1;
	return mm_check(h->mm, why, len);
}

void run_host_destroy(struct run_host *h)
{
	if (h->io)
		io_stop(h->io, 0);
	stop_threads(h);
	__atomic_store_n(&h->member.io, NULL, __ATOMIC_RELEASE);
	io_destroy(h->io);
	h->io = NULL;
	if (h->mm)
		mm_detach(h->mm);
	h->mm = NULL;
	machine_destroy(&h->m);
}

void run_host_writers_json(struct json_w *jw, const char *key, const struct machine_writers *w)
{
	jw_obj_begin(jw, key);
	jw_u64(jw, "pages_dirtied", w->pages_dirtied);
	jw_u64(jw, "bytes", w->bytes);
	jw_u64(jw, "pages_skipped", w->skipped);
	jw_u64(jw, "throttles", w->throttles);
	jw_u64(jw, "throttle_ns", w->throttle_ns);
	jw_u64(jw, "fsyncs", w->fsyncs);
	jw_u64(jw, "fsync_timeouts", w->fsync_timeouts);
	jw_u64(jw, "dirty_max", w->dirty_max);
	jw_u64(jw, "writeback_max", w->writeback_max);
	jw_obj_end(jw);
}
