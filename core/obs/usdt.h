/* USDT probes (provider "thpemu") for perf, bpftrace, bcc and SystemTap.
 *
 * THPEMU_PROBE(name, args...) expands to systemtap's STAP_PROBEV from <sys/sdt.h> (Debian's
 * systemtap-sdt-dev): one nop instruction at the probe site plus an ELF note
 * (.note.stapsdt) naming the probe and where each argument lives. Unattached, the nop is the
 * whole cost; the arguments are only made available in registers or memory the compiler
 * already has (no semaphores are used, so nothing is tested at run time). A tracer that
 * attaches turns the nop into a breakpoint.
 *
 * Built with -DTHPEMU_USDT=OFF, or without <sys/sdt.h>, every THPEMU_PROBE compiles to nothing
 * (the arguments are not evaluated). core/CMakeLists.txt defines THPEMU_HAVE_SDT when the
 * probes are in.
 *
 * The probes (arguments in order; see demo/bpftrace/README.md for the full table):
 *   fault_begin(addr, write, tid)                     core/live/handler.c
 *   fault_end(addr, decision, order, latency_ns, tid) decision: 0 huge, 1 base, 2 nomem, 3 mthp
 *   compaction_begin(mode, order, migrate_pfn, free_pfn)   core/env/live.c (mm's trace hook)
 *   compaction_end(status, order, migrate_pfn, free_pfn)
 *   compaction_deferred(order, considered, defer_shift)   compaction_deferred() said skip
 *   defer_compaction(order, considered, defer_shift)      defer_compaction() after a failure
 *   migrate_pages(nr_migrated, nr_failed)
 *   migrate_page(src_pfn, dst_pfn, owner, rc, kind)   kind 0 program page, 1 page-cache page
 *   wb_wait_begin(pfn, owner), wb_wait_end(pfn, rc, ns)
 *   reclaim(addr, nr_reclaimed, reclaim_ns)          a fault's direct reclaim, at fault end
 *   wait(kind, ns, pfn, background)                   every blocking wait of the emulated kernel
 *   collapse(addr, rc)                                core/live/collapse.c: khugepaged or
 *                                                     MADV_COLLAPSE
 *   split(head_pfn, extent_owner, rc)                 the THP shrinker's underused split
 *   stall(duration_ns, cause, addr, tid, wait)        core/obs/stall.c, every recorded stall
 */
#ifndef THPEMU_OBS_USDT_H
#define THPEMU_OBS_USDT_H

#if defined(THPEMU_HAVE_SDT) && THPEMU_HAVE_SDT
#ifndef SDT_USE_VARIADIC
#define SDT_USE_VARIADIC 1 /* STAP_PROBEV */
#endif
#include <sys/sdt.h>
#define THPEMU_PROBE(name, ...) STAP_PROBEV(thpemu, name, __VA_ARGS__)
#else
#define THPEMU_PROBE(name, ...) ((void)0) /* arguments not evaluated */
#endif

#endif
