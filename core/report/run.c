/* The run report: JSON with the keys every thpemu report shares (obs/faults.h) plus a host
 * section (what the real machine did for the emulated decisions), a program section and, for
 * `thpemu run`, the processes; and a short human summary. Written from a record (stats.h): one
 * process's (THPEMU_REPORT, at its exit), a run's merged (`thpemu run`) or a machine's (the named
 * machine's daemon).
 */
#include "report/run.h"

#include <string.h>

#include "io/rqshare.h"
#include "obs/coverage.h"
#include "obs/stall.h"

static const char *const alloc_names[] = {"jemalloc", "none"};

static void report_config(struct json_w *w, const struct config *cfg, const struct uffd_stats *st)
{
	jw_obj_begin(w, "config");
	jw_str(w, "policy", st->policy[0] ? st->policy : cfg->policy_spec);
	jw_u64(w, "pool_bytes", st->pool_bytes ? st->pool_bytes : cfg->pool_bytes);
	jw_u64(w, "handlers", st->handlers);
	jw_u64(w, "staging", cfg->staging);
	/* in effect: pte falls back to thp where the kernel keeps empty page tables */
	jw_str(w, "host_fault", st->host_fault == CONFIG_HOST_FAULT_PTE ? "pte" : "thp");
	jw_bool(w, "host_thp", cfg->host_thp);
	jw_bool(w, "zero_page", cfg->zero_page);
	jw_u64(w, "min_region", cfg->min_region);
	jw_str(w, "fragment", cfg->fragment);
	jw_u64(w, "seed", cfg->seed);
	jw_dbl(w, "stall_threshold_ms", (double)cfg->stall_threshold_ns / 1e6, 3);
	jw_str(w, "allocator", alloc_names[cfg->allocator & 1]);
	if (cfg->trace[0])
		jw_str(w, "trace", cfg->trace);
	jw_obj_end(w);
}

static void report_program(struct json_w *w, const struct uffd_program_info *prog)
{
	jw_obj_begin(w, "program");
	if (prog->argv) {
		jw_arr_begin(w, "argv");
		for (char *const *a = prog->argv; *a; a++)
			jw_str(w, NULL, *a);
		jw_arr_end(w);
	} else {
		jw_str(w, "cmdline", prog->cmdline);
	}
	if (prog->exit_status >= 0)
		jw_i64(w, "exit_status", prog->exit_status);
	else
		jw_null(w, "exit_status");
	jw_dbl(w, "wall_s", prog->wall_s, 3);
	jw_dbl(w, "start_mono_s", prog->start_mono_s, 6);
	jw_u64(w, "processes", prog->processes);
	jw_u64(w, "unmanaged_processes", prog->unmanaged);
	jw_u64(w, "stepped_aside_processes", prog->stepped_aside);
	if (prog->aside) { /* thpemu run: which programs, and why */
		jw_arr_begin(w, "unmanaged");
		for (unsigned i = 0; i < prog->naside; i++) {
			jw_obj_begin(w, NULL);
			jw_i64(w, "pid", prog->aside[i].pid);
			jw_str(w, "comm", prog->aside[i].comm);
			jw_str(w, "how",
			       prog->aside[i].stepped_aside ? "stepped_aside" : "unmanaged");
			jw_str(w, "why", prog->aside[i].why);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_u64(w, "no_clean_exit", prog->no_clean_exit);
	if (prog->procs) {
		jw_u64(w, "processes_listed", prog->procs->n);
		jw_u64(w, "processes_omitted", prog->procs->omitted);
		jw_u64(w, "processes_omitted_faults", prog->procs->omitted_faults);
	}
	if (prog->machine_json)
		jw_raw(w, "machine", prog->machine_json);
	jw_obj_end(w);
}

/* The shared "stalls" section (obs/stall.h): this process's captured events (stacks), the
 * launcher's merge of every process's, or, when no process left captured events (it crashed
 * before its exit hook), the handlers' records grouped by cause with modelled call chains. */
static void report_stalls(struct json_w *w, const struct config *cfg, const struct uffd_stats *st,
			  const struct uffd_program_info *prog)
{
	if (prog->stalls && obs_report_stalls_pair(w, prog->stalls, prog->waits) == 0)
		return;
	if (prog->stalls_json) {
		jw_raw(w, "stalls", prog->stalls_json);
		return;
	}
	uint32_t n = st->nstall_recs < UFFD_STALL_RECS ? st->nstall_recs : UFFD_STALL_RECS;
	struct obs_stalls *s;

	if (obs_stalls_create(&s, n ? n : 1, cfg->stall_threshold_ns, OBS_STACKS_MODELLED) < 0) {
		jw_obj_begin(w, "stalls");
		jw_u64(w, "count", st->host.stalls);
		jw_obj_end(w);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct uffd_stall_rec *sr = &st->stall_recs[i];

		if (__atomic_load_n(&sr->ready, __ATOMIC_ACQUIRE))
			obs_stalls_add_modelled(s, sr->t_start_ns, sr->duration_ns,
						(enum mm_cause)sr->cause, sr->comm, sr->tid,
						sr->addr);
	}
	obs_report_stalls_pair(w, s, NULL); /* no per-wait events survive a crash */
	obs_stalls_destroy(s);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void report_io_errors(struct json_w *w, const struct io_stats *io)
{
	jw_obj_begin(w, "errors");
	jw_u64(w, "eio", io->err_eio);
	jw_u64(w, "enospc", io->err_enospc);
	jw_u64(w, "disconnected", io->err_disconnected);
	jw_u64(w, "timeout", io->err_timeout);
	jw_u64(w, "other", io->err_other);
	jw_obj_end(w);
	jw_u64(w, "pages_failed", io->pages_failed);
	jw_u64(w, "cancels", io->cancels);
	jw_u64(w, "abandoned", io->abandoned);
	jw_u64(w, "fsyncs", io->fsyncs);
	jw_u64(w, "fsync_errors", io->fsync_errors);
}

static void report_io_files(struct json_w *w, const struct io_stats *io)
{
	jw_obj_begin(w, "files");
	jw_u64(w, "created", io->files_created);
	jw_u64(w, "complete", io->files_complete);
	jw_u64(w, "failed", io->files_failed);
	jw_u64(w, "deleted", io->files_deleted);
	jw_obj_end(w);
}

static void report_io_latency(struct json_w *w, const struct io_stats *io)
{
	struct obs_hist_summary s;

	obs_hist_summarise(&io->wb_lat, 1000000, &s);
	jw_obj_begin(w, "write_latency_ms");
	jw_u64(w, "count", s.count);
	jw_dbl(w, "p50", s.p50, 3);
	jw_dbl(w, "p99", s.p99, 3);
	jw_dbl(w, "max", s.max, 3);
	jw_obj_end(w);
}

/* One waiter kind's sleeps for a request of the 3.x list. */
static void report_io_wait(struct json_w *w, const char *key, const struct io_stats *io, int who)
{
	jw_obj_begin(w, key);
	jw_u64(w, "count", io->rq_waits[who]);
	jw_dbl(w, "total_ms", ms(io->rq_wait_ns[who]), 3);
	jw_dbl(w, "max_ms", ms(io->rq_wait_max_ns[who]), 3);
	jw_u64(w, "over_threshold", io->rq_waits_1s[who]); /* sleeps of 1 s or more */
	jw_obj_end(w);
}

/* The 3.x request list (block/blk-core.c get_request_wait), as the simulator's requests_3x:
 * write requests at most allocated at once, sleeps of writeout callers (compaction, reclaim),
 * of real writers (an fsync's writeback through thpemu-fusedev) and of the flusher. */
static void report_io_requests(struct json_w *w, const struct io_stats *io)
{
	if (!io->rq_active)
		return;
	jw_obj_begin(w, "requests_3x");
	jw_u64(w, "write_allocated", io->rq_allocated);
	jw_u64(w, "write_allocated_max", io->rq_allocated_max);
	jw_u64(w, "write_beyond_limit", io->rq_beyond);
	jw_u64(w, "refused", io->rq_refused);
	jw_u64(w, "congested_on", io->rq_congested_on);
	report_io_wait(w, "writers_waited", io, RQS_WRITEOUT);
	report_io_wait(w, "real_writers_waited", io, RQS_WRITER);
	report_io_wait(w, "flusher_waited", io, RQS_FLUSHER);
	jw_obj_end(w);
}

/* "io": the slow device and the dirtier (core/io) of the process that ran them. */
static void report_io(struct json_w *w, const struct config *cfg, const struct uffd_stats *st,
		      const struct uffd_program_info *prog)
{
	const struct io_stats *io = &st->io;

	jw_obj_begin(w, "io");
	jw_bool(w, "active", io->active != 0);
	jw_str(w, "device", cfg->device_spec[0] ? cfg->device_spec : NULL);
	jw_str(w, "dirty", cfg->dirty_spec[0] ? cfg->dirty_spec : NULL);
	jw_str(w, "preset", io->model[0] ? io->model : NULL);
	jw_str(w, "target", io->device[0] ? io->device : NULL);
	jw_bool(w, "in_process_fallback", io->in_process != 0);
	jw_bool(w, "odirect", io->odirect != 0);
	jw_u64(w, "bytes_dirtied", io->bytes_dirtied);
	jw_u64(w, "bytes_written", io->bytes_written);
	jw_u64(w, "writeback_ops", io->writeback_ops);
	jw_u64(w, "pages_submitted", io->pages_submitted);
	jw_u64(w, "writeout_pages", io->writeout_pages);
	jw_u64(w, "inflight_max", io->inflight_max);
	report_io_errors(w, io);
	report_io_files(w, io);
	jw_dbl(w, "dirty_throttle_ms", ms(io->throttle_ns), 3);
	jw_u64(w, "throttles", io->throttles);
	jw_dbl(w, "throttle_max_ms", ms(io->throttle_max_ns), 3);
	jw_u64(w, "dirty_max_pages", io->dirty_max_pages);
	jw_u64(w, "pagecache_retries", io->pagecache_retries);
	jw_u64(w, "bytes_read", io->bytes_read);
	jw_u64(w, "read_errors", io->read_errors);
	jw_u64(w, "pagecache_copies", io->copies);
	jw_u64(w, "dropped_dirty_pages", io->dropped_dirty);
	jw_u64(w, "unfinished_at_exit", io->unfinished_at_exit);
	report_io_latency(w, io);
	report_io_requests(w, io);
	jw_str(w, "note", io->note[0] ? io->note : NULL);
	if (prog->device_json)
		jw_raw(w, "device_info", prog->device_json);
	jw_obj_end(w);
}

static void report_host(struct json_w *w, const struct uffd_stats *st)
{
	const uint64_t *h = (const uint64_t *)(const void *)&st->host;

	jw_obj_begin(w, "host");
	for (unsigned i = 0; i < UFFD_NR_HOST; i++)
		jw_u64(w, uffd_host_names[i], h[i]);
	jw_str(w, "note", st->note[0] ? st->note + 1 : NULL);
	jw_obj_begin(w, "pool");
	jw_u64(w, "frames", st->counts.nr_frames);
	jw_u64(w, "free", st->counts.free);
	jw_u64(w, "anon", st->counts.anon);
	jw_u64(w, "anon_huge", st->counts.anon_huge);
	jw_u64(w, "file", st->counts.file);
	jw_u64(w, "shmem", st->counts.shmem);
	jw_u64(w, "shmem_huge", st->counts.shmem_huge);
	jw_u64(w, "free_blocks_order9", st->counts.free_blocks_order9);
	jw_u64(w, "anon_pmd", st->counts.anon_pmd);
	jw_u64(w, "min_free_kbytes", st->counts.min_free_kbytes);
	jw_obj_begin(w, "watermarks"); /* pages, boost included (mm_counts) */
	jw_u64(w, "min", st->counts.wmark_min);
	jw_u64(w, "low", st->counts.wmark_low);
	jw_u64(w, "high", st->counts.wmark_high);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* The program's anonymous memory (thpemu's own left out). */
static uint64_t program_anon(const struct uffd_census *c)
{
	return c->anon > c->anon_own ? c->anon - c->anon_own : 0;
}

static void report_memory(struct json_w *w, const struct uffd_stats *st)
{
	const struct uffd_census *c = &st->mem;
	char addr[24];

	jw_obj_begin(w, "memory");
	jw_u64(w, "processes", c->processes);
	jw_u64(w, "rss_bytes", c->rss);
	jw_u64(w, "anon_bytes", c->anon);
	jw_u64(w, "anon_thpemu_bytes", c->anon_own);
	jw_u64(w, "anon_program_bytes", program_anon(c));
	jw_u64(w, "anon_managed_bytes", c->anon_managed);
	jw_dbl(w, "managed_share", share(c->anon_managed, program_anon(c)), 4);
	jw_obj_begin(w, "unmanaged_by_reason");
	for (unsigned i = 0; i < UFFD_WHY_NR; i++)
		jw_u64(w, uffd_why_names[i], c->why_anon[i]);
	jw_obj_end(w);
	jw_arr_begin(w, "largest_unmanaged");
	for (unsigned i = 0; i < UFFD_CENSUS_TOP && c->top[i].anon; i++) {
		const struct uffd_unmanaged_map *m = &c->top[i];

		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)m->start);
		jw_obj_begin(w, NULL);
		jw_i64(w, "pid", m->pid);
		jw_str(w, "start", addr);
		jw_u64(w, "size_bytes", m->size);
		jw_u64(w, "anon_bytes", m->anon);
		jw_str(w, "name", m->name);
		jw_str(w, "reason", uffd_why_names[m->why < UFFD_WHY_NR ? m->why : 0]);
		jw_str(w, "why", uffd_why_help[m->why < UFFD_WHY_NR ? m->why : 0]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void report_probe_q(struct json_w *w, const char *key, const uint64_t q[UFFD_PROBE_Q])
{
	static const char *const names[UFFD_PROBE_Q] = {"min", "p10", "p50", "p90",
							"p99", "max", "mean"};

	jw_obj_begin(w, key);
	for (unsigned i = 0; i < UFFD_PROBE_Q; i++)
		jw_dbl(w, names[i], (double)q[i] / 1000.0, 3);
	jw_obj_end(w);
}

/* "uffd_probe": the start-up round trip (core/live/probe.c); "kernel_latency_us": latency_us net of
 * the emulation, i.e. less the probe's median handler service time (a bare UFFDIO_COPY answer):
 * what the emulated kernel's own work cost (decision, compaction, reclaim, waits, clears,
 * copies). The faulting thread saw latency_us + (round trip - service); a native kernel's
 * fault has no round trip, so thread-side minus round trip is latency_us - service. Without a
 * probe (overhead_us 0) kernel_latency_us equals latency_us. */
static void report_kernel_latency(struct json_w *w, const struct uffd_stats *st)
{
	const struct uffd_probe *pr = &st->probe;
	double over = pr->n ? (double)pr->svc_ns[2] / 1000.0 : 0.0;
	struct obs_hist both;

	jw_obj_begin(w, "uffd_probe");
	jw_u64(w, "probes", pr->n);
	report_probe_q(w, "round_trip_us", pr->rt_ns);
	report_probe_q(w, "service_us", pr->svc_ns);
	jw_obj_end(w);
	obs_faults_both(&st->faults, &both);
	jw_obj_begin(w, "kernel_latency_us");
	jw_dbl(w, "overhead_us", over, 3);
	obs_report_summary(w, "huge", &st->faults.lat[OBS_HUGE], over);
	obs_report_summary(w, "base", &st->faults.lat[OBS_BASE], over);
	obs_report_summary(w, "mthp", &st->faults.lat[OBS_MTHP], over);
	obs_report_summary(w, "both", &both, over);
	jw_obj_end(w);
}

/* The emulation's overhead subtracted for kernel_latency_us (see above). */
static double kernel_overhead_us(const struct uffd_stats *st)
{
	return st->probe.n ? (double)st->probe.svc_ns[2] / 1000.0 : 0.0;
}

int uffd_report_json(FILE *f, const struct config *cfg, const struct uffd_stats *st,
		     const struct uffd_program_info *prog)
{
	struct json_w w;

	jw_init(&w, f, true);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "kind", "run");
	jw_str(&w, "version", THPEMU_VERSION);
	report_config(&w, cfg, st);
	report_program(&w, prog);
	obs_report_faults(&w, &st->faults);
	report_kernel_latency(&w, st);
	obs_report_vmstat(&w, st->vmstat);
	obs_report_mthp(&w, &st->mthp, &st->faults, "per-PTE", kernel_overhead_us(st));
	report_stalls(&w, cfg, st, prog);
	report_io(&w, cfg, st, prog);
	report_host(&w, st);
	report_memory(&w, st);
	if (prog->coverage)
		obs_report_coverage(&w, prog->coverage);
	if (prog->procs)
		uffd_report_procs_json(&w, prog->procs);
	if (prog->more_json)
		prog->more_json(&w, prog->more_arg);
	jw_obj_end(&w);
	return jw_finish(&w);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

#define MANAGED_SHARE_WARN 0.5		 /* warn when less of the program's memory is managed */
#define MANAGED_WARN_MIN   (16ULL << 20) /* ... and there is this much of it */

static void report_memory_summary(FILE *f, const struct uffd_census *c)
{
	uint64_t prog = program_anon(c);
	unsigned most = 0;

	if (!c->processes)
		return;
	fprintf(
	    f,
	    "thpemu: memory at its largest: %.1f MiB anonymous, %.1f MiB of it managed (%.1f%%), "
	    "thpemu's own %.1f MiB",
	    (double)prog / 1048576.0, (double)c->anon_managed / 1048576.0,
	    100.0 * share(c->anon_managed, prog), (double)c->anon_own / 1048576.0);
	if (c->top[0].anon)
		fprintf(f, "; largest unmanaged %.1f MiB %s%s(%s)",
			(double)c->top[0].anon / 1048576.0, c->top[0].name,
			c->top[0].name[0] ? " " : "", uffd_why_names[c->top[0].why]);
	fputc('\n', f);
	(void)most;
	uffd_memory_warning(f, c, MANAGED_WARN_MIN);
}

bool uffd_memory_warning(FILE *f, const struct uffd_census *c, uint64_t min_bytes)
{
	uint64_t prog = program_anon(c);
	unsigned most = 0;

	if (!c->processes || prog < min_bytes || share(c->anon_managed, prog) >= MANAGED_SHARE_WARN)
		return false;
	for (unsigned i = 1; i < UFFD_WHY_NR; i++)
		most = c->why_anon[i] > c->why_anon[most] ? i : most;
	fprintf(f,
		"thpemu: warning: only %.1f%% of the program's anonymous memory is managed; most "
		"of the rest (%.1f MiB) is %s\n",
		100.0 * share(c->anon_managed, prog), (double)c->why_anon[most] / 1048576.0,
		uffd_why_help[most]);
	return true;
}

/* Is this note one of the unmanaged programs' reasons, said already? */
static bool note_listed(const struct uffd_program_info *prog, const char *note)
{
	for (unsigned i = 0; prog->aside && i < prog->naside; i++)
		if (!strncmp(prog->aside[i].why, note, sizeof(prog->aside[i].why) - 1))
			return true;
	return false;
}

/* The summary's first line, then one line per program that ran unmanaged or was stepped aside
 * from, and why (the first UFFD_ASIDE_MAX). True if no process was managed at all: the program
 * ran as it would without thpemu, and says so instead of figures. */
static bool summary_unmanaged(FILE *f, const struct uffd_stats *st,
			      const struct uffd_program_info *prog)
{
	const char *policy = st->policy[0]	 ? st->policy
			     : prog->policy_spec ? prog->policy_spec
						 : "?";
	unsigned listed = prog->aside ? prog->naside : 0;
	unsigned all = prog->unmanaged + prog->stepped_aside;

	if (!prog->processes && prog->unmanaged)
		fprintf(f,
			"thpemu: the program ran UNMANAGED: 0 processes managed, %u unmanaged; "
			"policy %s not applied, wall %.2f s\n",
			prog->unmanaged,
			prog->policy_spec && prog->policy_spec[0] ? prog->policy_spec : policy,
			prog->wall_s);
	else
		fprintf(
		    f, "thpemu: %u process%s managed (%u unmanaged%s), policy %s, wall %.2f s\n",
		    prog->processes, prog->processes == 1 ? "" : "es", prog->unmanaged,
		    prog->stepped_aside ? ", some stepped aside from" : "", policy, prog->wall_s);
	for (unsigned i = 0; i < listed; i++)
		fprintf(f, "thpemu: %s: pid %d (%s): %s\n",
			prog->aside[i].stepped_aside ? "stepped aside" : "ran unmanaged",
			prog->aside[i].pid, prog->aside[i].comm, prog->aside[i].why);
	if (all > listed && listed)
		fprintf(f, "thpemu: ... and %u more not managed to the end\n", all - listed);
	return !prog->processes && prog->unmanaged;
}

void uffd_report_summary(FILE *f, const struct uffd_stats *st, const struct uffd_program_info *prog)
{
	struct obs_hist_summary hs, bs;
	const struct uffd_host_stats *h = &st->host;
	uint64_t total;

	obs_hist_summarise(&st->faults.lat[OBS_HUGE], 1000, &hs);
	obs_hist_summarise(&st->faults.lat[OBS_BASE], 1000, &bs);
	total = hs.count + bs.count + st->faults.lat[OBS_MTHP].count;
	if (summary_unmanaged(f, st, prog)) { /* nothing managed: no figure would mean anything */
		if (st->note[0] && !note_listed(prog, st->note + 1))
			fprintf(f, "thpemu: note: %s\n", st->note + 1);
		return;
	}
	fprintf(f,
		"thpemu: %llu faults: huge %llu (%.1f%% of faults), base %llu, mTHP %llu, outside "
		"the pool "
		"%llu\n",
		(unsigned long long)total, (unsigned long long)hs.count, pct(hs.count, total),
		(unsigned long long)bs.count, (unsigned long long)st->faults.lat[OBS_MTHP].count,
		(unsigned long long)st->faults.nomem);
	obs_mthp_text(f, "thpemu: ", &st->mthp, &st->faults, "; delivered as 4 KiB PTEs");
	fprintf(
	    f,
	    "thpemu: service latency per fault, us: huge p50 %.1f p99 %.1f max %.1f; base p50 %.1f "
	    "p99 %.1f max %.1f; stalls %llu\n",
	    hs.p50, hs.p99, hs.max, bs.p50, bs.p99, bs.max, (unsigned long long)h->stalls);
	if (st->probe.n) {
		double over = (double)st->probe.svc_ns[2] / 1000.0;

		fprintf(
		    f,
		    "thpemu: bare userfaultfd round trip us: p50 %.1f (p10 %.1f, p90 %.1f) over "
		    "%u probes, of which service %.1f; kernel latency per fault, us (service less "
		    "%.1f): "
		    "huge p50 %.1f p99 %.1f; base p50 %.1f p99 %.1f\n",
		    (double)st->probe.rt_ns[2] / 1000.0, (double)st->probe.rt_ns[1] / 1000.0,
		    (double)st->probe.rt_ns[3] / 1000.0, st->probe.n, over, over,
		    hs.count && hs.p50 > over ? hs.p50 - over : 0.0,
		    hs.count && hs.p99 > over ? hs.p99 - over : 0.0,
		    bs.count && bs.p50 > over ? bs.p50 - over : 0.0,
		    bs.count && bs.p99 > over ? bs.p99 - over : 0.0);
	}
	fprintf(f,
		"thpemu: host: real PMD %llu of %llu huge, %llu anon migrations, %llu staging "
		"misses, %llu THP-less chunks, %llu uffd errors\n",
		(unsigned long long)h->real_pmd_faults, (unsigned long long)hs.count,
		(unsigned long long)h->anon_migrations, (unsigned long long)h->staging_misses,
		(unsigned long long)h->host_thp_unavailable, (unsigned long long)h->uffd_errors);
	if (st->io.active)
		fprintf(f,
			"thpemu: io: %s%s, %.1f MiB dirtied, %.1f MiB written in %llu writes, "
			"%llu write errors, throttled %.0f ms%s%s\n",
			st->io.in_process ? "in-process model " : "", st->io.model,
			(double)st->io.bytes_dirtied / 1048576.0,
			(double)st->io.bytes_written / 1048576.0,
			(unsigned long long)st->io.writeback_ops,
			(unsigned long long)(st->io.err_eio + st->io.err_enospc +
					     st->io.err_disconnected + st->io.err_timeout +
					     st->io.err_other),
			ms(st->io.throttle_ns), st->io.note[0] ? "; " : "", st->io.note);
	if (prog->coverage)
		fprintf(f,
			"thpemu: AnonHugePages coverage (%% of managed anon memory): end %.1f%%, "
			"time-weighted %.1f%%; "
			"watermarks min %u low %u high %u pages\n",
			obs_coverage_end_pct(prog->coverage), obs_coverage_tw_pct(prog->coverage),
			st->counts.wmark_min, st->counts.wmark_low, st->counts.wmark_high);
	report_memory_summary(f, &st->mem);
	if (prog->procs)
		uffd_report_procs_summary(f, prog->procs);
	if (st->note[0] && !note_listed(prog, st->note + 1))
		fprintf(f, "thpemu: note: %s\n", st->note + 1);
	if (prog->no_clean_exit)
		fprintf(f,
			"thpemu: %u process%s ended without running exit handlers (_exit or a "
			"crash): their counters are as last updated\n",
			prog->no_clean_exit, prog->no_clean_exit == 1 ? "" : "es");
}
