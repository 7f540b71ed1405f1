/* The simulator's report: JSON (byte-identical for identical inputs: no wall-clock time, host
 * names or pointer-dependent ordering) and a human summary. The fault, latency, vmstat and
 * stall sections are written by core/obs, so their keys are the ones `thpemu run` writes.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "util/json.h"
#include "util/units.h"

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? (double)part * 100.0 / (double)whole : 0.0;
}

static void json_wait_stat(struct json_w *w, const char *key, const struct sim_wait_stat *s)
{
	jw_obj_begin(w, key);
	jw_u64(w, "count", s->count);
	jw_dbl(w, "total_ms", ms(s->total_ns), 3);
	jw_dbl(w, "max_ms", ms(s->max_ns), 3);
	jw_u64(w, "over_threshold", s->over);
	jw_obj_end(w);
}

/* Per-iteration results (writeback-cp: alloc's elapsed time and THP fault counts, as mmtests
 * thpavail reports them) and their totals. */
static void json_iterations(struct json_w *w, const struct sim_result *r)
{
	uint64_t total = 0, alloc = 0, fallback = 0;

	jw_arr_begin(w, "iteration_stats");
	for (unsigned i = 0; i < r->niter; i++) {
		const struct sim_iter *it = &r->iter[i];

		jw_obj_begin(w, NULL);
		jw_dbl(w, "start_s", (double)it->start_ns / 1e9, 3);
		jw_dbl(w, "elapsed_s", (double)it->elapsed_ns / 1e9, 3);
		jw_u64(w, "thp_fault_alloc", it->thp_fault_alloc);
		jw_u64(w, "thp_fault_fallback", it->thp_fault_fallback);
		jw_obj_end(w);
		total += it->elapsed_ns;
		alloc += it->thp_fault_alloc;
		fallback += it->thp_fault_fallback;
	}
	jw_arr_end(w);
	jw_obj_begin(w, "iteration_totals");
	jw_dbl(w, "elapsed_s", (double)total / 1e9, 3);
	jw_dbl(w, "elapsed_mean_s", (double)total / 1e9 / r->niter, 3);
	jw_u64(w, "thp_fault_alloc", alloc);
	jw_u64(w, "thp_fault_fallback", fallback);
	jw_obj_end(w);
}

static void json_config(struct json_w *w, const struct sim_result *r)
{
	const struct sim_config *c = &r->cfg;
	const struct sim_scenario *s = c->scenario;
	char *buf = NULL;
	size_t len = 0;
	FILE *mf;

	jw_str(w, "policy", r->policy);
	jw_str(w, "scenario", s->name);
	jw_u64(w, "seed", c->seed);
	jw_u64(w, "pool_bytes", r->pool_bytes);
	jw_str(w, "device", c->device_spec);
	mf = open_memstream(&buf, &len);
	if (mf) {
		devm_params_format(&c->device, mf);
		fclose(mf);
		jw_str(w, "device_params", buf);
		free(buf);
	}
	jw_dbl(w, "duration_s", (double)r->duration_ns / 1e9, 3);
	if (s->runs_to_completion)
		jw_u64(w, "iterations", r->iterations);
	if (r->niter)
		json_iterations(w, r);
	jw_obj_begin(w, "params");
	for (unsigned i = 0; i < s->nparams; i++)
		jw_str(w, s->params[i].key, c->params.s[i]);
	jw_obj_end(w);
	jw_obj_begin(w, "costs_ns");
	for (int i = 0; i < SIM_COST_NR; i++)
		jw_u64(w, sim_cost_key((enum sim_cost)i), c->costs.ns[i]);
	jw_obj_end(w);
}

static void json_efficiency(struct json_w *w, const uint64_t *v)
{
	jw_obj_begin(w, "efficiency");
	/* mmtests: Compaction efficiency, Compact scan efficiency */
	jw_dbl(w, "compaction_pct", pct(v[MM_STAT_COMPACT_SUCCESS], v[MM_STAT_COMPACT_STALL]), 2);
	jw_dbl(w, "scan_pct",
	       pct(v[MM_STAT_COMPACT_MIGRATE_SCANNED], v[MM_STAT_COMPACT_FREE_SCANNED]), 2);
	jw_obj_end(w);
}

static bool step_is_compaction(unsigned s)
{
	return s == MM_STEP_COMPACT_ASYNC || s == MM_STEP_COMPACT_SYNC_LIGHT ||
	       s == MM_STEP_COMPACT_SYNC;
}

/* "slowpath": {step: {count, results: {...}}}, "huge_from": {step: n} */
static void json_steps(struct json_w *w, const struct sim_steps *st)
{
	jw_obj_begin(w, "slowpath");
	for (unsigned s = 0; s < MM_STEP_NR; s++) {
		if (!st->count[s])
			continue;
		jw_obj_begin(w, mm_step_name((enum mm_step)s));
		jw_u64(w, "count", st->count[s]);
		jw_obj_begin(w, "results");
		for (unsigned r = 0; r < SIM_STEP_RESULTS; r++) {
			char key[16];

			if (!st->result[s][r])
				continue;
			if (step_is_compaction(s))
				jw_u64(w, mm_compact_result_name((enum mm_compact_result)r),
				       st->result[s][r]);
			else if (r <= 1)
				jw_u64(w, r ? "success" : "failure", st->result[s][r]);
			else {
				snprintf(key, sizeof(key), "%u", r);
				jw_u64(w, key, st->result[s][r]);
			}
		}
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	/* per attempt: direct compaction before direct reclaim, and after it (3.1: sync;
	 * 3.1+nostall: async; 3.3: sync-light) */
	jw_obj_begin(w, "direct_compaction");
	jw_obj_begin(w, "first");
	jw_u64(w, "runs", st->first_runs);
	jw_u64(w, "success", st->first_success);
	jw_dbl(w, "success_pct", pct(st->first_success, st->first_runs), 2);
	jw_obj_end(w);
	jw_obj_begin(w, "second");
	jw_u64(w, "runs", st->second_runs);
	jw_u64(w, "success", st->second_success);
	jw_dbl(w, "success_pct", pct(st->second_success, st->second_runs), 2);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_begin(w, "huge_from");
	for (unsigned s = 0; s < MM_STEP_NR; s++)
		if (st->huge_from[s])
			jw_u64(w, mm_step_name((enum mm_step)s), st->huge_from[s]);
	jw_obj_end(w);
}

static void json_io(struct json_w *w, const struct sim_result *r)
{
	const struct sim_flusher *fl = &r->fl;
	const struct devm_stats *d = &r->dev;

	jw_obj_begin(w, "writeback");
	jw_u64(w, "pages_written", r->writer.pages);
	jw_u64(w, "files_created", r->writer.files_created);
	jw_u64(w, "files_deleted", r->writer.files_deleted);
	jw_u64(w, "pages_submitted", fl->pages_submitted);
	jw_u64(w, "pages_completed", fl->pages_done);
	jw_u64(w, "requests", fl->reqs);
	jw_u64(w, "writeout_pages", fl->writeout_pages);
	/* reclaim/compaction throttle naps (congestion_wait, wait_iff_congested that slept) */
	jw_u64(w, "congestion_naps", fl->throttles);
	jw_dbl(w, "congestion_nap_ms", ms(fl->throttle_ns), 3);
	jw_u64(w, "errors", fl->errors);
	jw_u64(w, "bandwidth_estimate_bps", fl->bw.bw);
	jw_u64(w, "throttles", r->writer.throttle.throttles);
	jw_dbl(w, "throttle_ms", ms(r->writer.throttle.throttle_ns), 3);
	jw_dbl(w, "throttle_max_ms", ms(r->writer.throttle.throttle_max_ns), 3);
	jw_obj_end(w);
	jw_obj_begin(w, "reads");
	jw_u64(w, "reads", r->reader.reads);
	jw_u64(w, "misses", r->reader.misses);
	jw_dbl(w, "device_ms", ms(r->reader.read_ns), 3);
	jw_obj_end(w);
	jw_obj_begin(w, "io_scheduler"); /* core/io/iosched: the policy's iosched */
	jw_str(w, "scheduler", ios_kind_name(r->elv.kind));
	jw_u64(w, "requests", r->elv.requests);
	jw_u64(w, "merged", r->elv.merged);
	jw_u64(w, "dispatched", r->elv.dispatched);
	jw_u64(w, "expired_first", r->elv.expired);
	jw_u64(w, "queue_max", r->elv.queue_max);
	if (r->elv.kind == IOS_CFQ) {
		jw_u64(w, "slices", r->elv.slices);
		jw_u64(w, "preempted", r->elv.preempted);
	}
	/* 3.x request allocation (block/blk-core.c get_request_wait): write requests at most
	 * allocated at once, sleeps of actors (writeout, pageout) and of the flusher */
	if (r->rq_model) {
		jw_obj_begin(w, "requests_3x");
		jw_u64(w, "write_allocated_max", r->rq.count_max[RQL_ASYNC]);
		jw_u64(w, "write_beyond_limit", r->rq.batched[RQL_ASYNC]);
		jw_u64(w, "refused", r->rq.refused[RQL_ASYNC]);
		jw_u64(w, "congested_on", r->rq.congested_on[RQL_ASYNC]);
		json_wait_stat(w, "writers_waited", &r->rq_wait);
		json_wait_stat(w, "flusher_waited", &r->fl.rq_wait);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	jw_obj_begin(w, "device_stats");
	jw_u64(w, "bytes_written", d->bytes_written);
	jw_u64(w, "bytes_read", d->bytes_read);
	jw_u64(w, "ops_written", d->ops_written);
	jw_u64(w, "ops_read", d->ops_read);
	jw_u64(w, "in_flight", d->in_flight);
	jw_u64(w, "queue_max", d->queue_max);
	jw_dbl(w, "busy_ms", ms(d->busy_ns), 3);
	jw_u64(w, "stalls", d->stalls);
	jw_u64(w, "gc_events", d->gc_events);
	jw_u64(w, "errors", d->errors_injected + d->errors_enospc);
	jw_obj_end(w);
}

static void json_pool_end(struct json_w *w, const struct mm_counts *c)
{
	jw_obj_begin(w, "pool_end");
	jw_u64(w, "frames", c->nr_frames);
	jw_u64(w, "free", c->free);
	jw_u64(w, "free_2m_blocks", c->free_blocks_order9);
	jw_u64(w, "anon", c->anon);
	jw_u64(w, "anon_huge", c->anon_huge);
	jw_u64(w, "foreign", c->foreign);
	jw_u64(w, "file", c->file);
	jw_u64(w, "file_dirty", c->file_dirty);
	jw_u64(w, "file_writeback", c->file_writeback);
	jw_u64(w, "unmovable", c->unmovable);
	jw_u64(w, "anon_pmd", c->anon_pmd);
	jw_u64(w, "min_free_kbytes", c->min_free_kbytes);
	jw_obj_begin(w, "watermarks"); /* pages, boost included (mm_counts) */
	jw_u64(w, "min", c->wmark_min);
	jw_u64(w, "low", c->wmark_low);
	jw_u64(w, "high", c->wmark_high);
	jw_obj_end(w);
	jw_obj_end(w);
}

static void json_replay(struct json_w *w, const struct sim_result *r)
{
	const struct sim_replay_stats *s = &r->replay;
	const struct sim_replay_info *in = &r->replay_info;
	uint64_t same = s->huge_huge + s->base_base;

	jw_obj_begin(w, "replay");
	jw_str(w, "trace", r->replay_path);
	jw_str(w, "recorded_policy", in->policy);
	jw_str(w, "recorded_exe", in->exe);
	jw_u64(w, "records", in->records);
	jw_bool(w, "complete", in->complete);
	jw_u64(w, "dropped", in->dropped);
	jw_u64(w, "threads", in->threads);
	jw_u64(w, "faults_recorded", s->recorded);
	jw_u64(w, "compared", s->compared);
	jw_u64(w, "same", same);
	jw_dbl(w, "agreement_pct", pct(same, s->compared), 2);
	jw_u64(w, "huge_to_base", s->huge_base);
	jw_u64(w, "base_to_huge", s->base_huge);
	jw_dbl(w, "recorded_huge_pct", pct(s->huge_huge + s->huge_base, s->compared), 2);
	jw_dbl(w, "replayed_huge_pct", pct(s->huge_huge + s->base_huge, s->compared), 2);
	jw_u64(w, "absorbed", s->absorbed);
	jw_u64(w, "orphans", s->orphans);
	jw_u64(w, "implied", s->implied);
	jw_u64(w, "host_fallbacks", s->host_fallbacks);
	jw_u64(w, "candidate_mismatches", s->cand_mismatch);
	jw_u64(w, "map_conflicts", s->map_conflicts);
	jw_u64(w, "regions", s->regions);
	jw_obj_end(w);
}

int sim_report_json(const struct sim_result *r, FILE *f, bool pretty)
{
	struct json_w w;

	jw_init(&w, f, pretty);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "thpemu", "sim");
	jw_str(&w, "version", THPEMU_VERSION);
	json_config(&w, r);
	if (r->has_replay)
		json_replay(&w, r);
	obs_report_faults(&w, &r->faults);
	/* mmtests' "Percentage huge": 2 MiB extents first touched while THP-eligible */
	jw_obj_begin(&w, "extents");
	jw_u64(&w, "total", r->extents);
	jw_u64(&w, "huge", r->extents_huge);
	jw_dbl(&w, "huge_pct", pct(r->extents_huge, r->extents), 2);
	jw_obj_end(&w);
	/* zero pages (proc.c): only a run that read memory first has the section, so the reports
	 * of programs that never do stay as they were */
	if (r->zero.faults || r->zero.huge_faults || r->zero.wp_faults) {
		jw_obj_begin(&w, "zero_pages");
		jw_u64(&w, "zero_faults", r->zero.faults);
		jw_u64(&w, "huge_zero_faults", r->zero.huge_faults);
		jw_u64(&w, "zero_wp_faults", r->zero.wp_faults);
		jw_obj_end(&w);
	}
	/* faults still in service when the run ended: not in the sections above */
	jw_obj_begin(&w, "faults_unfinished");
	jw_u64(&w, "count", r->unfinished);
	jw_dbl(&w, "longest_ms", ms(r->unfinished_max_ns), 3);
	jw_obj_end(&w);
	/* every completed wait of every actor (faults, writers, kswapd), by where it happened */
	jw_obj_begin(&w, "writeback_waits_by_path");
	json_wait_stat(&w, "compaction", &r->wb_compact);
	json_wait_stat(&w, "reclaim", &r->wb_reclaim);
	jw_obj_begin(&w, "in_faults"); /* inside completed faults: sums to writeback_waits */
	json_wait_stat(&w, "compaction", &r->fault_wb[0]);
	json_wait_stat(&w, "reclaim", &r->fault_wb[1]);
	jw_obj_end(&w);
	jw_obj_end(&w);
	json_steps(&w, &r->steps);
	obs_report_vmstat(&w, r->vmstat);
	obs_report_mthp(&w, &r->mthp, &r->faults, "model", -1.0);
	json_efficiency(&w, r->vmstat);
	obs_report_stalls_pair(&w, r->stalls, r->waits);
	json_io(&w, r);
	json_pool_end(&w, &r->end);
	obs_report_coverage(&w, &r->cov);
	jw_obj_begin(&w, "engine");
	jw_u64(&w, "events", r->eng.events);
	jw_u64(&w, "context_switches", r->eng.switches);
	jw_u64(&w, "actors", r->eng.actors);
	jw_obj_end(&w);
	jw_obj_end(&w);
	return jw_finish(&w);
}

static void text_latency(FILE *f, const char *name, const struct obs_hist *h)
{
	struct obs_hist_summary s;

	obs_hist_summarise(h, 1000, &s);
	fprintf(f, "  %-5s %10llu  mean %10.1f  p50 %10.1f  p99 %11.1f  max %12.1f\n", name,
		(unsigned long long)s.count, s.mean, s.p50, s.p99, s.max);
}

static void text_iterations(FILE *f, const struct sim_result *r)
{
	uint64_t total = 0, alloc = 0, fallback = 0;

	if (!r->niter)
		return;
	fprintf(f, "\niteration  elapsed (s)  thp_fault_alloc  thp_fault_fallback\n");
	for (unsigned i = 0; i < r->niter; i++) {
		const struct sim_iter *it = &r->iter[i];

		fprintf(f, "%9u  %11.2f  %15llu  %18llu\n", i + 1, (double)it->elapsed_ns / 1e9,
			(unsigned long long)it->thp_fault_alloc,
			(unsigned long long)it->thp_fault_fallback);
		total += it->elapsed_ns;
		alloc += it->thp_fault_alloc;
		fallback += it->thp_fault_fallback;
	}
	fprintf(f, "    total  %11.2f  %15llu  %18llu   (mean elapsed %.2f s)\n",
		(double)total / 1e9, (unsigned long long)alloc, (unsigned long long)fallback,
		(double)total / 1e9 / r->niter);
}

void sim_report_text(const struct sim_result *r, FILE *f)
{
	const uint64_t *v = r->vmstat;
	struct sim_summary s;
	char a[32], b[32];

	sim_result_summary(r, &s);
	fprintf(f, "thpemu sim: %s, policy %s, seed %llu, pool %s, device %s, %s virtual\n",
		r->cfg.scenario->name, r->policy, (unsigned long long)r->cfg.seed,
		units_fmt_size(r->pool_bytes, a, sizeof(a)), r->cfg.device_spec,
		units_fmt_duration(r->duration_ns, b, sizeof(b)));
	if (r->has_replay) {
		const struct sim_replay_stats *rs = &r->replay;

		fprintf(f,
			"replay of %s (recorded under %s, %u threads%s): %llu fault records, "
			"%llu compared, agreement %.2f %% (huge->base %llu, base->huge %llu), "
			"absorbed %llu, orphans %llu, implied %llu\n",
			r->replay_path, r->replay_info.policy, r->replay_info.threads,
			r->replay_info.complete ? "" : ", truncated",
			(unsigned long long)rs->recorded, (unsigned long long)rs->compared,
			pct(rs->huge_huge + rs->base_base, rs->compared),
			(unsigned long long)rs->huge_base, (unsigned long long)rs->base_huge,
			(unsigned long long)rs->absorbed, (unsigned long long)rs->orphans,
			(unsigned long long)rs->implied);
	}
	text_iterations(f, r);
	fprintf(f, "\nfaults %llu: huge %llu (%.2f %%), base %llu, mTHP %llu, nomem %llu\n",
		(unsigned long long)s.faults, (unsigned long long)s.huge, s.huge_pct,
		(unsigned long long)s.base, (unsigned long long)s.mthp,
		(unsigned long long)s.nomem);
	fprintf(f, "2 MiB extents first touched: %llu, huge %llu (%.2f %%)\n",
		(unsigned long long)r->extents, (unsigned long long)r->extents_huge,
		pct(r->extents_huge, r->extents));
	if (r->zero.faults || r->zero.huge_faults || r->zero.wp_faults)
		fprintf(f,
			"zero pages: %llu read first touches mapped the zero page, %llu the huge "
			"zero page; %llu first writes to them\n",
			(unsigned long long)r->zero.faults, (unsigned long long)r->zero.huge_faults,
			(unsigned long long)r->zero.wp_faults);
	fprintf(f, "latency (us):\n");
	text_latency(f, "huge", &r->faults.lat[OBS_HUGE]);
	text_latency(f, "base", &r->faults.lat[OBS_BASE]);
	text_latency(f, "mthp", &r->faults.lat[OBS_MTHP]);
	obs_mthp_text(f, "", &r->mthp, &r->faults, "; modelled");
	fprintf(f,
		"AnonHugePages coverage: end %.2f %%, time-weighted %.2f %%; watermarks min %u "
		"low %u high %u pages (min_free_kbytes %llu)\n",
		obs_coverage_end_pct(&r->cov), obs_coverage_tw_pct(&r->cov), r->end.wmark_min,
		r->end.wmark_low, r->end.wmark_high, (unsigned long long)r->end.min_free_kbytes);
	if (r->unfinished)
		fprintf(f, "faults still in service at the end: %llu, the longest for %.1f ms\n",
			(unsigned long long)r->unfinished, ms(r->unfinished_max_ns));
	fprintf(f, "\nwriteback waits in completed faults: %llu, %.1f ms total, longest %.1f ms\n",
		(unsigned long long)s.wb_waits, ms(s.wb_wait_ns), ms(s.wb_wait_max_ns));
	fprintf(f,
		"all writeback waits: in compaction %llu (%.1f ms, longest %.1f ms, %llu >= %s), "
		"in direct reclaim %llu (%.1f ms, longest %.1f ms, %llu >= %s)\n",
		(unsigned long long)r->wb_compact.count, ms(r->wb_compact.total_ns),
		ms(r->wb_compact.max_ns), (unsigned long long)r->wb_compact.over,
		units_fmt_duration(r->cfg.stall_threshold_ns, a, sizeof(a)),
		(unsigned long long)r->wb_reclaim.count, ms(r->wb_reclaim.total_ns),
		ms(r->wb_reclaim.max_ns), (unsigned long long)r->wb_reclaim.over,
		units_fmt_duration(r->cfg.stall_threshold_ns, b, sizeof(b)));
	fprintf(f,
		"compaction: stall %llu success %llu fail %llu (efficiency %.1f %%), "
		"pgmigrate success %llu fail %llu\n",
		(unsigned long long)v[MM_STAT_COMPACT_STALL],
		(unsigned long long)v[MM_STAT_COMPACT_SUCCESS],
		(unsigned long long)v[MM_STAT_COMPACT_FAIL],
		pct(v[MM_STAT_COMPACT_SUCCESS], v[MM_STAT_COMPACT_STALL]),
		(unsigned long long)v[MM_STAT_PGMIGRATE_SUCCESS],
		(unsigned long long)v[MM_STAT_PGMIGRATE_FAIL]);
	fprintf(f,
		"writeback: %llu pages written by the writer, %llu completed, %llu written out "
		"singly (->writepage from compaction or direct reclaim), writer throttled %.1f s\n",
		(unsigned long long)r->writer.pages, (unsigned long long)r->fl.pages_done,
		(unsigned long long)r->fl.writeout_pages,
		(double)r->writer.throttle.throttle_ns / 1e9);
	fprintf(
	    f,
	    "\nper-wait stall events (single waits) >= %s: %llu, %.1f ms total, longest %.1f ms\n",
	    units_fmt_duration(r->cfg.stall_threshold_ns, a, sizeof(a)),
	    (unsigned long long)s.wait_stalls, ms(s.wait_stall_ns), ms(s.wait_stall_max_ns));
	fprintf(f, "per-fault stalls (whole faults) >= %s: %llu, longest %.1f ms\n",
		units_fmt_duration(r->cfg.stall_threshold_ns, a, sizeof(a)),
		(unsigned long long)s.stalls, ms(s.stall_max_ns));
	if (s.stalls || s.wait_stalls) {
		fputc('\n', f);
		obs_report_stalls_text_pair(f, r->stalls, r->waits);
	}
}
