/* Slow-device model: the service-slot queue (see devmodel.h for the method).
 *
 * Models a block device's command queue the way the block layer sees one complete: a request
 * holds one of N slots from its start to its completion; its command overhead runs in the
 * slot and its data transfer on the one shared medium, which also carries flash garbage
 * collection (a write outside the open allocation units forces a copy + erase, LWN 428584),
 * periodic busy stalls (SD "busy" after a block write, drivers/mmc/core/core.c allows 3 s),
 * HDD seeks and a fast burst cache. Completions are ordered like blk_mq_complete_request()
 * would see them: by completion time. Everything is computed when a request starts; nothing
 * here sleeps, allocates after devm_create() or locks.
 */
#include "io/devmodel.h"
#include "util/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct open_au {
	uint64_t au;	  /* allocation-unit index (offset / gc_au_bytes) */
	uint64_t written; /* bytes written into it while open, capped at the AU size */
};

struct devm {
	struct devm_params p;
	struct rng rng;
	struct devm_req *slot[DEVM_MAX_SLOTS]; /* request in service per slot, or NULL */
	unsigned slot_hi;		       /* slots [slot_hi, MAX) have never been used */
	struct devm_req *q_head, *q_tail;      /* FIFO waiting for a slot or for resume */
	struct devm_req *d_head, *d_tail;      /* completed, not yet popped, by t_done */
	uint64_t medium_free; /* time the shared medium finishes its last transfer */
	uint64_t head_pos;    /* end offset of the last request (for seeks) */
	bool head_valid;
	uint64_t stall_bytes; /* written since the last periodic stall */
	uint64_t stall_busy;  /* medium time writing since the last periodic stall */
	struct open_au open[DEVM_MAX_OPEN_AUS]; /* LRU order: [0] least recently written */
	unsigned nopen;
	double burst_level; /* bytes in the burst cache at burst_t */
	uint64_t burst_t;
	uint64_t cycle_origin; /* error-cycle phase 0 */
	uint64_t now;	       /* latest time seen (monotonic guard) */
	bool paused;
	struct devm_stats st;
};

int devm_create(const struct devm_params *p, uint64_t seed, struct devm **out)
{
	struct devm *m;

	if (devm_params_check(p, NULL, 0) < 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->p = *p;
	m->paused = p->dead;
	rng_seed(&m->rng, seed);
	*out = m;
	return 0;
}

void devm_destroy(struct devm *m)
{
	free(m);
}

/* ---- service-time components (all computed when a request starts) ---- */

static uint64_t ns_round(double ns)
{
	return ns <= 0 ? 0 : (uint64_t)llround(ns);
}

/* Lognormal factor with mean 1 and relative sd `jitter`. */
static double jitter_factor(struct devm *m)
{
	double s2, f;

	if (m->p.jitter <= 0)
		return 1.0;
	s2 = log1p(m->p.jitter * m->p.jitter);
	f = exp(-s2 / 2 + sqrt(s2) * rng_normal(&m->rng));
	return f < DEVM_JITTER_MAX ? f : DEVM_JITTER_MAX; /* beyond: 3e-5 of draws at jitter 1 */
}

static double xfer_ns(uint64_t len, uint64_t bw)
{
	return bw ? (double)len * 1e9 / (double)bw : 0;
}

/* Write transfer time through the burst cache, which fills at burst_bw while draining to the
 * media at write_bw; once full, data goes in at the drain rate. */
static double burst_write_ns(struct devm *m, uint64_t t, uint64_t len)
{
	const struct devm_params *p = &m->p;
	double drain = (double)p->write_bw / 1e9; /* bytes per ns */
	double fill = (double)p->burst_bw / 1e9;
	double space, t_fill, b_fill, d;

	if (t > m->burst_t)
		m->burst_level -= (double)(t - m->burst_t) * drain;
	if (m->burst_level < 0)
		m->burst_level = 0;
	space = (double)p->burst_bytes - m->burst_level;
	t_fill = space > 0 ? space / (fill - drain) : 0;
	b_fill = fill * t_fill;
	if ((double)len <= b_fill) {
		d = (double)len / fill;
		m->burst_level += (double)len - d * drain;
	} else {
		d = t_fill + ((double)len - b_fill) / drain;
		m->burst_level = (double)p->burst_bytes;
	}
	m->burst_t = t + ns_round(d);
	return d;
}

static double media_ns(struct devm *m, const struct devm_req *r, uint64_t t)
{
	const struct devm_params *p = &m->p;

	if (!r->write)
		return xfer_ns(r->len, p->read_bw);
	if (p->write_bw && p->burst_bytes && p->burst_bw > p->write_bw)
		return burst_write_ns(m, t, r->len);
	return xfer_ns(r->len, p->write_bw);
}

static uint64_t seek_cost(struct devm *m, const struct devm_req *r)
{
	uint64_t dist;
	bool seek;

	if (!m->p.seek_ns) {
		m->head_pos = r->off + r->len;
		return 0;
	}
	dist = r->off > m->head_pos ? r->off - m->head_pos : m->head_pos - r->off;
	seek = m->head_valid && dist > m->p.seek_window;
	m->head_pos = r->off + r->len;
	m->head_valid = true;
	if (!seek)
		return 0;
	m->st.seeks++;
	return m->p.seek_ns;
}

/* Evicts the least recently written open AU; a partly written one must be merged: copy its
 * unwritten remainder from the old location and erase (a fully written AU closes for free). */
static uint64_t gc_evict(struct devm *m)
{
	const struct devm_params *p = &m->p;
	uint64_t left = p->gc_au_bytes - m->open[0].written, cost = 0;

	if (left) {
		cost = ns_round(xfer_ns(left, p->gc_copy_bw)) + p->gc_erase_ns;
		m->st.gc_events++;
		m->st.gc_ns += cost;
	}
	memmove(&m->open[0], &m->open[1], (m->nopen - 1) * sizeof(m->open[0]));
	m->nopen--;
	return cost;
}

/* Records n bytes written into AU `au`, returns the forced-GC cost. */
static uint64_t gc_touch(struct devm *m, uint64_t au, uint64_t n)
{
	struct open_au cur = {au, 0};
	uint64_t cost = 0;
	unsigned i;

	for (i = 0; i < m->nopen; i++)
		if (m->open[i].au == au)
			break;
	if (i < m->nopen) {
		cur = m->open[i];
		memmove(&m->open[i], &m->open[i + 1], (m->nopen - i - 1) * sizeof(m->open[0]));
		m->nopen--;
	}
	while (m->nopen && m->nopen >= m->p.gc_open_aus)
		cost += gc_evict(m);
	cur.written += n;
	if (cur.written > m->p.gc_au_bytes)
		cur.written = m->p.gc_au_bytes;
	m->open[m->nopen++] = cur;
	return cost;
}

static uint64_t gc_cost(struct devm *m, const struct devm_req *r)
{
	uint64_t au_sz = m->p.gc_au_bytes, pos = r->off, end = r->off + r->len, cost = 0;

	if (!au_sz || !r->write)
		return 0;
	while (pos < end) {
		uint64_t au = pos / au_sz, lim = (au + 1) * au_sz;
		uint64_t n = (end < lim ? end : lim) - pos;

		cost += gc_touch(m, au, n);
		pos += n;
	}
	return cost;
}

static uint64_t one_stall(struct devm *m)
{
	const struct devm_params *p = &m->p;
	int64_t d = (int64_t)p->stall_for_ns;

	if (p->stall_jitter_ns)
		d += (int64_t)rng_below(&m->rng, 2 * p->stall_jitter_ns + 1) -
		     (int64_t)p->stall_jitter_ns;
	if (d < 0)
		d = 0;
	m->st.stalls++;
	m->st.stall_ns += (uint64_t)d;
	return (uint64_t)d;
}

/* Periodic busy stalls charged to the write that crosses the threshold (the SD card holds
 * "busy" after the block write that triggered its housekeeping). */
static uint64_t stall_cost(struct devm *m, const struct devm_req *r, uint64_t busy)
{
	const struct devm_params *p = &m->p;
	uint64_t cost = 0;

	if (!r->write || !p->stall_for_ns)
		return 0;
	if (p->stall_every_bytes) {
		m->stall_bytes += r->len;
		while (m->stall_bytes >= p->stall_every_bytes) {
			m->stall_bytes -= p->stall_every_bytes;
			cost += one_stall(m);
		}
	} else if (p->stall_every_ns) {
		m->stall_busy += busy;
		while (m->stall_busy >= p->stall_every_ns) {
			m->stall_busy -= p->stall_every_ns;
			cost += one_stall(m);
		}
	}
	return cost;
}

static uint64_t tail_cost(struct devm *m)
{
	const struct devm_params *p = &m->p;

	if (p->tail_rate <= 0 || rng_unit(&m->rng) >= p->tail_rate)
		return 0;
	m->st.tails++;
	return p->tail_min_ns + rng_below(&m->rng, p->tail_max_ns - p->tail_min_ns + 1);
}

static bool in_error_time(const struct devm *m, uint64_t t)
{
	const struct devm_params *p = &m->p;

	if (p->err_win_len_ns && t >= p->err_win_start_ns &&
	    t - p->err_win_start_ns < p->err_win_len_ns)
		return true;
	if (p->err_down_ns && t >= m->cycle_origin) {
		uint64_t phase = (t - m->cycle_origin) % (p->err_up_ns + p->err_down_ns);

		return phase >= p->err_up_ns;
	}
	return false;
}

static int error_for(struct devm *m, const struct devm_req *r, uint64_t t)
{
	const struct devm_params *p = &m->p;
	bool eio = in_error_time(m, t);

	if (p->error_rate > 0 && rng_unit(&m->rng) < p->error_rate)
		eio = true;
	if (eio)
		m->st.errors_injected++;
	return eio ? -EIO : 0;
}

/* ---- the queue ---- */

/* Starts r in slot i at time t and computes when it completes. */
static void start(struct devm *m, unsigned i, struct devm_req *r, uint64_t t)
{
	const struct devm_params *p = &m->p;
	double f = jitter_factor(m);
	uint64_t setup = ns_round(f * (double)(r->write ? p->setup_ns : p->read_setup_ns));
	uint64_t x0, x1, busy;

	m->slot[i] = r;
	if (i >= m->slot_hi)
		m->slot_hi = i + 1;
	r->t_start = t;
	if (r->write && p->capacity && (r->off > p->capacity || r->len > p->capacity - r->off)) {
		r->err = -ENOSPC;
		m->st.errors_enospc++;
		r->t_done = t + setup;
		return;
	}
	r->err = error_for(m, r, t);
	x0 = t + setup > m->medium_free ? t + setup : m->medium_free;
	busy = ns_round(f * media_ns(m, r, x0)) + seek_cost(m, r);
	busy += gc_cost(m, r);
	busy += stall_cost(m, r, busy);
	x1 = x0 + (busy < DEVM_BUSY_MAX_NS ? busy : DEVM_BUSY_MAX_NS);
	m->st.busy_ns += x1 - x0;
	m->medium_free = x1;
	r->t_done = x1 + tail_cost(m);
}

static int free_slot(const struct devm *m)
{
	for (unsigned i = 0; i < m->p.slots; i++)
		if (!m->slot[i])
			return (int)i;
	return -1;
}

/* Starts queued requests in free slots at time t (unless paused). */
static void fill(struct devm *m, uint64_t t)
{
	int i;

	while (!m->paused && m->q_head && (i = free_slot(m)) >= 0) {
		struct devm_req *r = m->q_head;

		m->q_head = r->next;
		if (!m->q_head)
			m->q_tail = NULL;
		r->next = NULL;
		m->st.queued--;
		start(m, (unsigned)i, r, t > r->t_arrive ? t : r->t_arrive);
	}
}

static int earliest_slot(const struct devm *m)
{
	int best = -1;

	for (unsigned i = 0; i < m->slot_hi; i++)
		if (m->slot[i] && (best < 0 || m->slot[i]->t_done < m->slot[best]->t_done))
			best = (int)i;
	return best;
}

static void account_done(struct devm *m, const struct devm_req *r)
{
	m->st.in_flight--;
	if (r->err)
		return;
	if (r->write) {
		m->st.bytes_written += r->len;
		m->st.ops_written++;
	} else {
		m->st.bytes_read += r->len;
		m->st.ops_read++;
	}
}

/* Moves every request completing by `now` to the done list, in completion order, starting
 * queued requests in the slots they free at the moment they free. */
static void advance(struct devm *m, uint64_t now)
{
	int i;

	if (now < m->now)
		now = m->now;
	m->now = now;
	while ((i = earliest_slot(m)) >= 0 && m->slot[i]->t_done <= now) {
		struct devm_req *r = m->slot[i];

		m->slot[i] = NULL;
		r->next = NULL;
		if (m->d_tail)
			m->d_tail->next = r;
		else
			m->d_head = r;
		m->d_tail = r;
		account_done(m, r);
		fill(m, r->t_done);
	}
}

void devm_submit(struct devm *m, uint64_t now, struct devm_req *r)
{
	int i;

	advance(m, now);
	r->t_arrive = m->now;
	r->t_start = r->t_done = 0;
	r->err = 0;
	r->next = NULL;
	m->st.in_flight++;
	if (m->st.in_flight > m->st.queue_max)
		m->st.queue_max = m->st.in_flight;
	if (!m->paused && !m->q_head && (i = free_slot(m)) >= 0) {
		start(m, (unsigned)i, r, m->now);
		return;
	}
	if (m->q_tail)
		m->q_tail->next = r;
	else
		m->q_head = r;
	m->q_tail = r;
	m->st.queued++;
}

uint64_t devm_next_completion(const struct devm *m)
{
	int i;

	if (m->d_head)
		return m->d_head->t_done;
	i = earliest_slot(m);
	return i < 0 ? UINT64_MAX : m->slot[i]->t_done;
}

struct devm_req *devm_pop_done(struct devm *m, uint64_t now)
{
	struct devm_req *r;

	advance(m, now);
	r = m->d_head;
	if (!r)
		return NULL;
	m->d_head = r->next;
	if (!m->d_head)
		m->d_tail = NULL;
	r->next = NULL;
	return r;
}

void devm_pause(struct devm *m, uint64_t now)
{
	advance(m, now);
	m->paused = true;
}

void devm_resume(struct devm *m, uint64_t now)
{
	advance(m, now);
	m->paused = false;
	m->p.dead = false;
	fill(m, m->now);
}

bool devm_paused(const struct devm *m)
{
	return m->paused;
}

/* Keys whose value is relative to the moment they are applied. */
static int set_timed(struct devm *m, struct devm_params *np, const char *key)
{
	if (!strcmp(key, "error-window") && np->err_win_len_ns)
		np->err_win_start_ns += m->now;
	if (!strcmp(key, "error-cycle"))
		m->cycle_origin = m->now;
	return 0;
}

/* What request r costs under the current parameters, without the one-off charges already
 * drawn for it (GC, stalls, seeks, tails, jitter): command overhead and transfer. */
static double plain_cost_ns(const struct devm *m, const struct devm_req *r)
{
	const struct devm_params *p = &m->p;
	double setup = (double)(r->write ? p->setup_ns : p->read_setup_ns);

	if (r->err == -ENOSPC)
		return setup;
	return setup + xfer_ns(r->len, r->write ? p->write_bw : p->read_bw);
}

/* The parameters changed at m->now: what is left of each request in service (the share of its
 * time not yet elapsed) now costs that share of what the request costs under the new
 * parameters, the requests following each other on the medium in their completion order. */
static void retime(struct devm *m)
{
	uint64_t t = m->now;
	bool done[DEVM_MAX_SLOTS] = {false};

	for (;;) {
		struct devm_req *r;
		double left, cost;
		int i = -1;

		for (unsigned k = 0; k < m->slot_hi; k++)
			if (m->slot[k] && !done[k] &&
			    (i < 0 || m->slot[k]->t_done < m->slot[i]->t_done))
				i = (int)k;
		if (i < 0)
			break;
		done[i] = true;
		r = m->slot[i];
		left = r->t_done <= r->t_start || m->now <= r->t_start
			   ? 1.0
			   : (double)(r->t_done - m->now) / (double)(r->t_done - r->t_start);
		cost = left * plain_cost_ns(m, r);
		if (cost > (double)DEVM_BUSY_MAX_NS)
			cost = (double)DEVM_BUSY_MAX_NS;
		m->st.busy_ns -=
		    r->t_done - m->now < m->st.busy_ns ? r->t_done - m->now : m->st.busy_ns;
		t += ns_round(cost);
		m->st.busy_ns += ns_round(cost);
		r->t_done = t;
	}
	if (t > m->now || m->medium_free > m->now)
		m->medium_free = t;
}

/* Do a and b time requests differently? (Not: the name, errors, capacity, dead.) */
static bool timing_changed(const struct devm_params *a, const struct devm_params *b)
{
	struct devm_params x = *a, y = *b;

	memcpy(y.name, x.name, sizeof(x.name));
	y.error_rate = x.error_rate;
	y.err_win_start_ns = x.err_win_start_ns;
	y.err_win_len_ns = x.err_win_len_ns;
	y.err_up_ns = x.err_up_ns;
	y.err_down_ns = x.err_down_ns;
	y.capacity = x.capacity;
	y.dead = x.dead;
	return memcmp(&x, &y, sizeof(x)) != 0;
}

int devm_set(struct devm *m, uint64_t now, const char *key, const char *value)
{
	struct devm_params np = m->p;
	bool retimed;
	int err;

	advance(m, now);
	err = devm_params_set(&np, key, value);
	if (err < 0)
		return err;
	if (devm_params_check(&np, NULL, 0) < 0)
		return -EINVAL;
	set_timed(m, &np, key);
	retimed = timing_changed(&m->p, &np);
	m->p = np;
	if (retimed)
		retime(m);
	if (!strcmp(key, "dead"))
		m->paused = np.dead;
	else if (np.dead)
		m->paused = true;
	fill(m, m->now);
	return 0;
}

const struct devm_params *devm_params(const struct devm *m)
{
	return &m->p;
}

void devm_get_stats(const struct devm *m, struct devm_stats *s)
{
	*s = m->st;
	s->paused = m->paused;
}
