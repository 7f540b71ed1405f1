/* Request allocation of the 3.x block layer (see rqlist.h; block/blk-core.c get_request,
 * get_request_wait, freed_request, ioc_batching, blk_queue_congestion_threshold). Pure. */
#include "io/rqlist.h"

#include <string.h>

void rql_init(struct rql *l, unsigned nr_requests)
{
	unsigned nr = nr_requests ? nr_requests : RQL_NR_REQUESTS;
	int on, off;

	memset(l, 0, sizeof(*l));
	l->nr_requests = nr;
	l->nr_batching = RQL_BATCH_REQ;
	l->batch_time_ns = RQL_BATCH_TIME_NS;
	/* blk_queue_congestion_threshold() */
	on = (int)nr - (int)(nr / 8) + 1;
	if (on > (int)nr)
		on = (int)nr;
	off = (int)nr - (int)(nr / 8) - (int)(nr / 16) - 1;
	if (off < 1)
		off = 1;
	l->congestion_on = (unsigned)on;
	l->congestion_off = (unsigned)off;
}

bool rql_batching(const struct rql *l, const struct rql_ioc *ioc, uint64_t now)
{
	if (!ioc)
		return false;
	/* time_before(jiffies, last_waited + BLK_BATCH_TIME) */
	return ioc->nr_batch == l->nr_batching ||
	       (ioc->nr_batch > 0 && now < ioc->last_waited + l->batch_time_ns);
}

static void set_batching(const struct rql *l, struct rql_ioc *ioc, uint64_t now)
{
	if (!ioc || rql_batching(l, ioc, now))
		return;
	ioc->nr_batch = l->nr_batching;
	ioc->last_waited = now;
}

static void set_congested(struct rql *l, enum rql_dir d)
{
	if (!l->congested[d])
		l->st.congested_on[d]++;
	l->congested[d] = true;
}

bool rql_get(struct rql *l, enum rql_dir d, struct rql_ioc *ioc, uint64_t now)
{
	unsigned c = l->count[d];
	struct rql_ioc *bioc = NULL; /* get_request looks at the io_context only near full */
	bool beyond = false;

	if (c + 1 >= l->congestion_on) {
		if (c + 1 >= l->nr_requests) {
			bioc = ioc;
			/* the queue fills with this one: its task may complete a batch */
			if (!l->full[d]) {
				set_batching(l, bioc, now);
				l->full[d] = true;
			} else if (!rql_batching(l, bioc, now)) {
				l->st.refused[d]++;
				return false;
			}
			beyond = c + 1 > l->nr_requests;
		}
		set_congested(l, d);
	}
	/* batchers may go 50 % over nr_requests, nobody further */
	if (c >= 3 * l->nr_requests / 2) {
		l->st.refused[d]++;
		return false;
	}
	l->count[d] = c + 1;
	if (l->count[d] > l->st.count_max[d])
		l->st.count_max[d] = l->count[d];
	l->st.allocated[d]++;
	l->st.batched[d] += beyond;
	/* below nr_requests an allocation does not count against a batch */
	if (rql_batching(l, bioc, now))
		bioc->nr_batch--;
	return true;
}

void rql_wait(struct rql *l, enum rql_dir d, struct rql_waiter *w)
{
	w->next = NULL;
	w->queued = true;
	if (l->tail[d])
		l->tail[d]->next = w;
	else
		l->head[d] = w;
	l->tail[d] = w;
}

static void unlink_waiter(struct rql *l, enum rql_dir d, struct rql_waiter *w)
{
	struct rql_waiter *prev = NULL;

	for (struct rql_waiter *p = l->head[d]; p; prev = p, p = p->next) {
		if (p != w)
			continue;
		if (prev)
			prev->next = p->next;
		else
			l->head[d] = p->next;
		if (l->tail[d] == p)
			l->tail[d] = prev;
		break;
	}
	w->next = NULL;
	w->queued = false;
}

void rql_woken(struct rql *l, enum rql_dir d, struct rql_waiter *w, struct rql_ioc *ioc,
	       uint64_t now)
{
	set_batching(l, ioc, now);
	if (w->queued)
		unlink_waiter(l, d, w);
}

struct rql_waiter *rql_put(struct rql *l, enum rql_dir d, bool *uncongested)
{
	struct rql_waiter *w = NULL;

	if (l->count[d] > 0)
		l->count[d]--;
	*uncongested = l->count[d] < l->congestion_off;
	if (*uncongested)
		l->congested[d] = false;
	if (l->count[d] + 1 <= l->nr_requests) {
		w = l->head[d];
		if (w)
			unlink_waiter(l, d, w);
		l->full[d] = false;
	}
	return w;
}

bool rql_congested(const struct rql *l, enum rql_dir d)
{
	return l->congested[d];
}
