/* Layout of the stall store, shared by stall.c (recording) and stall_report.c (reporting). */
#ifndef THPEMU_OBS_STALL_INTERNAL_H
#define THPEMU_OBS_STALL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "obs/stall.h"

struct stall_slot {
	uint32_t ready; /* set (release) once ev is complete */
	struct obs_stall_event ev;
};

struct obs_stalls {
	size_t map_len;	       /* bytes mapped, for munmap */
	uint32_t capacity;     /* slots */
	uint32_t kind;	       /* enum obs_stacks_kind */
	uint32_t waits;	       /* 1: per-wait events (obs_stalls_create_waits) */
	uint64_t threshold_ns; /* events shorter than this are not stalls */
	uint64_t next;	       /* slots reserved so far (may exceed capacity) */
	uint64_t count;	       /* stalls seen, stored or not */
	uint64_t total_ns;     /* their summed duration */
	uint64_t dropped;      /* stalls not stored: the store was full */
	uint64_t max_ns;       /* the longest */
	uint64_t background;   /* per-wait: events of kswapd (no fault behind them) */
	struct stall_slot slots[];
};

#endif
