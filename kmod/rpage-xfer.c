// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the data path. rpage_xfer() moves pages to or from a peer's
 * pools and returns once every page is moved or definitively given up
 * on. It owns everything between a caller's pages and the transport:
 * holding the pools, which pages are left to move, and what a failure
 * means; the peer's transport (struct rpage_transport_ops) moves the
 * pages of one attempt. Its callers (the fault path, prefetch, eviction,
 * the READ and WRITE ioctls) never see a work request or a socket.
 *
 * Failures: a transport failure - an error completion, a flush, no
 * completion for io_timeout_ms, the peer reconnecting - is not the
 * caller's. The transport reports the connection lost (the peer rebuilds
 * its connections), and the pages not yet moved are moved again once the
 * peer is connected, until it has been unreachable for its loss timeout
 * (rpage_peer_wait_connected()). Errors a retry cannot fix (a pool gone
 * or replaced, a range out of bounds, no memory) end the transfer at
 * once. A fatal signal ends a killable one. And if the transport cannot
 * get pages back (a device that keeps work requests), the run stays
 * allocated forever, with the pools it holds.
 */
#include "rpage-pri.h"

#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>

/**
 * rpage_xfer_locate - where page @g of a transfer is
 * @run: the transfer, its pools held.
 * @g: the page's index in the transfer.
 * @rpool: set to the pool it is in.
 * @offset: set to its byte offset in that pool.
 *
 * Transports ask for pages in order mostly: the cursor moves forward.
 */
void rpage_xfer_locate(struct rpage_xfer_run *run, unsigned long g,
		       const struct rpage_rpool **rpool, u64 *offset)
{
	const struct rpage_xfer_range *r;
	unsigned long i;

	if (g < run->range_start) {
		run->range = 0;
		run->range_start = 0;
	}
	while (g >= run->range_start + run->x->ranges[run->range].nr) {
		run->range_start += run->x->ranges[run->range].nr;
		run->range++;
	}
	r = &run->x->ranges[run->range];
	i = g - run->range_start;
	*rpool = run->rpools[run->range];
	*offset = r->offset + ((u64)(r->index ? r->index[i] : i) << PAGE_SHIFT);
}

/* The transport moved pages @first to @first + @nr - 1 of @run. */
void rpage_xfer_moved(struct rpage_xfer_run *run, unsigned long first,
		      unsigned long nr)
{
	struct rpage_xfer *x = run->x;

	bitmap_set(run->finished, first, nr);
	if (x->done)
		x->done(x, first, nr, 0);
}

/*
 * A transfer asleep until its transport has news for it. Transports
 * wait on one queue per connection (many transfers share it); each
 * waiter names what it waits for (its key), and a wake-up for one key
 * wakes only its waiters, as the page cache's folio waits do: an answer
 * wakes the transfer it belongs to, not every transfer of the connection.
 * A wake-up without a key (wake_up_all(): the connection broke) wakes
 * them all.
 */
struct rpage_xfer_waiter {
	struct wait_queue_entry wq;
	const void *key;
};

/* The key of rpage_xfer_wake_one(): any one waiter, whatever it waits for. */
static const char rpage_xfer_anyone;

static int rpage_xfer_wake_fn(struct wait_queue_entry *wq, unsigned int mode,
			      int sync, void *key)
{
	struct rpage_xfer_waiter *w = container_of(wq, struct rpage_xfer_waiter,
						   wq);

	if (key && key != w->key && key != &rpage_xfer_anyone)
		return 0;
	return autoremove_wake_function(wq, mode, sync, key);
}

/**
 * rpage_xfer_wake - wakes the waiters of @key on @wq
 * @wq: a connection's queue of waiting transfers.
 * @key: what happened: the waiters that named it wake. Only compared,
 *	never dereferenced: it may be a transfer that is gone already.
 */
void rpage_xfer_wake(struct wait_queue_head *wq, const void *key)
{
	__wake_up(wq, TASK_NORMAL, 0, (void *)key);
}

/**
 * rpage_xfer_wake_one - wakes one waiter on @wq, whatever its key
 * @wq: a connection's queue of waiting transfers.
 *
 * For news that any one of them can act on for all: an RDMA completion
 * queue's interrupt, which one waiter polls for everyone, the others
 * then woken by key for their own completions.
 */
void rpage_xfer_wake_one(struct wait_queue_head *wq)
{
	__wake_up(wq, TASK_NORMAL, 1, (void *)&rpage_xfer_anyone);
}

/**
 * rpage_xfer_sleep - sleeps once, until rpage_xfer_wake() for @key
 * @wq: the connection's queue of waiting transfers.
 * @key: what the caller waits for (see rpage_xfer_wake()).
 * @ready: whether it happened already; checked once the caller is on
 *	@wq, so that a wake-up between the check and the sleep is never
 *	lost (the caller does not sleep then).
 * @arg: its argument.
 * @timeout: jiffies at most.
 * @killable: a fatal signal ends the sleep.
 *
 * One sleep: woken for @key, woken with everyone (the connection broke),
 * timed out or killed, the caller looks at its state again. Returns the
 * jiffies left of @timeout (0 once it has passed), or -EINTR when killed.
 */
long rpage_xfer_sleep(struct wait_queue_head *wq, const void *key,
		      bool (*ready)(void *arg), void *arg, long timeout,
		      bool killable)
{
	struct rpage_xfer_waiter w = { .key = key };
	unsigned int state = killable ? TASK_KILLABLE : TASK_UNINTERRUPTIBLE;

	init_wait(&w.wq);
	w.wq.func = rpage_xfer_wake_fn;
	/* Exclusive: rpage_xfer_wake_one() stops at the first it wakes. */
	prepare_to_wait_exclusive(wq, &w.wq, state);
	if (!ready(arg) && !(killable && fatal_signal_pending(current)))
		timeout = schedule_timeout(timeout);
	finish_wait(wq, &w.wq);
	if (killable && fatal_signal_pending(current))
		return -EINTR;
	return timeout;
}

/*
 * Calls the caller's slow hook once, before the first long wait (@ctx is
 * the struct rpage_xfer).
 */
void rpage_xfer_slow(void *ctx)
{
	struct rpage_xfer *x = ctx;

	if (x->slow) {
		x->slow(x);
		x->slow = NULL;
	}
}

/* Holds the pool of every range for an attempt; -errno if one is not fit. */
static int rpage_xfer_hold(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	unsigned int r;

	for (r = 0; r < x->nr_ranges; r++) {
		struct rpage_xfer_range *range = &x->ranges[r];
		u64 pages = range->extent ?: range->nr;
		struct rpage_rpool *rpool;

		rpool = rpage_rpool_get(x->peer, range->pool_id,
					range->generation, range->offset,
					pages << PAGE_SHIFT, x->write);
		if (IS_ERR(rpool))
			return PTR_ERR(rpool);
		run->rpools[r] = rpool;
		/* A retry moves pages of this incarnation or none. */
		range->generation = rpool->generation;
	}
	return 0;
}

static void rpage_xfer_release(struct rpage_xfer_run *run)
{
	unsigned int r;

	for (r = 0; r < run->x->nr_ranges; r++) {
		if (run->rpools[r])
			rpage_rpool_put(run->rpools[r]);
		run->rpools[r] = NULL;
	}
}

/*
 * One attempt, if the peer is connected (-EAGAIN if not), that moves the
 * pages with @move: the transport's xfer_move (waits for them), or its
 * xfer_start (posts them; see rpage_xfer_start()). A transport failure
 * comes back as -EIO, -ECONNRESET or -ETIMEDOUT, unless a pool went away
 * meanwhile (-ENOENT).
 */
static int rpage_xfer_attempt(struct rpage_xfer_run *run,
			      int (*move)(struct rpage_xfer_run *run))
{
	const struct rpage_transport_ops *ops = run->ops;
	struct rpage_xfer *x = run->x;
	unsigned int r;
	int ret;

	/* While the transport holds its channel, the pool table stays. */
	ret = ops->xfer_begin(run);
	if (ret)
		return ret;
	run->range = 0;
	run->range_start = 0;
	/* The pools of another exporter (one reloaded) are not ours. */
	if (x->node_id && x->node_id != READ_ONCE(x->peer->remote_node_id)) {
		ret = -ESTALE;
		goto out;
	}
	ret = rpage_xfer_hold(run);
	if (!ret)
		ret = move(run);
	if (ret == -EIO || ret == -ECONNRESET || ret == -ETIMEDOUT) {
		/* Failed because the pool was withdrawn: that is final. */
		for (r = 0; r < x->nr_ranges; r++)
			if (run->rpools[r] && rpage_rpool_withdrawn(run->rpools[r]))
				ret = -ENOENT;
	}
	/*
	 * Pages the transport kept keep their pools in use too. Work
	 * requests started and left in flight name the pools' memory, not
	 * the pools: they need them no more.
	 */
	if (ret != -EDEADLK)
		rpage_xfer_release(run);
out:
	/* From here on, a run the transport started is its own. */
	ops->xfer_end(run);
	return ret;
}

static bool rpage_xfer_transport_error(int err)
{
	return err == -EAGAIN || err == -EIO || err == -ECONNRESET ||
	       err == -ETIMEDOUT;
}

/*
 * The run of @x on its peer's transport, with the core's part after the
 * transport's: the bitmap of pages moved, then the ranges' pools.
 */
static struct rpage_xfer_run *rpage_xfer_run_alloc(struct rpage_xfer *x)
{
	const struct rpage_transport_ops *ops = x->peer->ops;
	size_t bitmap_size = BITS_TO_LONGS(x->nr_pages) * sizeof(long);
	struct rpage_xfer_run *run;
	void *tail;

	run = ops->run_alloc(x, bitmap_size + x->nr_ranges * sizeof(*run->rpools),
			     &tail);
	if (!run)
		return NULL;
	run->ops = ops;
	run->x = x;
	run->finished = tail;
	run->rpools = tail + bitmap_size;
	return run;
}

/* Tells the caller of every page not moved, in runs, with @err. */
static void rpage_xfer_report(struct rpage_xfer_run *run, int err)
{
	struct rpage_xfer *x = run->x;
	unsigned long first, end;

	if (!x->done)
		return;
	for (first = find_first_zero_bit(run->finished, x->nr_pages);
	     first < x->nr_pages;
	     first = find_next_zero_bit(run->finished, x->nr_pages, end)) {
		end = find_next_bit(run->finished, x->nr_pages, first);
		x->done(x, first, end - first, err);
	}
}

/**
 * rpage_xfer - moves pages to or from a peer's pools
 * @x: what to move; see struct rpage_xfer.
 *
 * Returns 0 once every page is moved. Otherwise: ENOENT (no such pool,
 * or it was withdrawn), ESTALE (the pool was replaced by another of the
 * same id, or its exporter reloaded), ERANGE, EPERM (a write to a
 * read-only pool), ENOTCONN (the peer stayed unreachable past its loss
 * timeout, or is deleted or failed), EINTR, ENOMEM, EOPNOTSUPP (an
 * iWARP device); with a loss timeout of 0, the transport failure itself:
 * ETIMEDOUT or EIO. Pages reported done with an error may hold part of
 * the data. Every page is reported to @x->done exactly once.
 */
int rpage_xfer(struct rpage_xfer *x)
{
	struct rpage_peer *peer = x->peer;
	unsigned long failed_since = 0;
	struct rpage_xfer_run *run;
	bool failed = false;
	int ret;

	if (!x->nr_pages)
		return 0;
	if (!peer) {
		if (x->done)
			x->done(x, 0, x->nr_pages, -ENOTCONN);
		return -ENOTCONN;
	}
	run = rpage_xfer_run_alloc(x);
	if (!run) {
		if (x->done)
			x->done(x, 0, x->nr_pages, -ENOMEM);
		return -ENOMEM;
	}
	for (;;) {
		ret = rpage_peer_wait_connected(peer, x->killable,
						failed ? failed_since : 0,
						rpage_xfer_slow, x);
		if (ret)
			break;
		ret = rpage_xfer_attempt(run, run->ops->xfer_move);
		if (!ret || !rpage_xfer_transport_error(ret))
			break;
		/* A loss timeout of 0 fails at the first transport failure. */
		if (!READ_ONCE(peer->loss_timeout_ms))
			break;
		if (!failed) {
			failed = true;
			failed_since = jiffies;
		}
		if (ret != -EAGAIN)
			atomic64_inc(&peer->retried);
	}
	if (ret == -EDEADLK)
		ret = -ETIMEDOUT;
	else if (ret == -EAGAIN)
		ret = -ENOTCONN;
	else if (ret == -ECONNRESET)
		ret = -EIO;
	if (ret)
		rpage_xfer_report(run, ret);
	if (!run->leaked)
		run->ops->run_free(run);
	return ret;
}

/**
 * rpage_xfer_start - starts moving one page, without waiting for it
 * @x: what to move: one page (a fault's that may not wait), with @x->end
 *	set; @x, its range and its page array stay the caller's until
 *	@x->end is called.
 *
 * Posts the transfer from the caller's context and returns: a fault that
 * may not wait (FAULT_FLAG_RETRY_NOWAIT) puts its READ on the wire
 * itself, with no hop to a worker first. Once the page is moved, or the
 * attempt failed, @x->end is called once, with 0 or -EIO, in whichever
 * context saw the transfer end: the caller's before this returns, or one
 * that polled its completion (another transfer's task, a worker). It
 * must not sleep, nor drop what that context may hold (the last
 * reference to a mapping). One attempt only: no retry and no riding
 * through an outage; a caller whose @x->end gets an error moves the page
 * again with rpage_xfer(), which has both.
 *
 * Returns 0 once @x->end is called or will be. Otherwise nothing was
 * started and @x->end is not called: EAGAIN (the peer not connected,
 * its queue full), EOPNOTSUPP (its transport cannot move pages without
 * waiting), or what rpage_xfer() would have failed with.
 */
int rpage_xfer_start(struct rpage_xfer *x)
{
	struct rpage_peer *peer = x->peer;
	const struct rpage_transport_ops *ops;
	struct rpage_xfer_run *run;
	int ret;

	if (!peer || x->nr_pages != 1 || !x->end)
		return -EINVAL;
	ops = peer->ops;
	if (!ops->xfer_start)
		return -EOPNOTSUPP;
	run = rpage_xfer_run_alloc(x);
	if (!run)
		return -ENOMEM;
	ret = rpage_xfer_attempt(run, ops->xfer_start);
	if (!ret)
		return 0;
	if (ret > 0) {
		x->end(x, 0);
		ret = 0;
	}
	ops->run_free(run);
	return ret;
}

/**
 * rpage_xfer_started_end - a transfer rpage_xfer_start() started ended
 * @run: its run, which the transport frees after this.
 * @status: 0 once every page is moved; else a transport failure.
 */
void rpage_xfer_started_end(struct rpage_xfer_run *run, int status)
{
	run->x->end(run->x, status ? -EIO : 0);
}
