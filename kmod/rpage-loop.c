// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the loop transport - this host as its own peer, with no network
 * (rpagectl peer add NAME transport loop), the way nvme-loop serves a
 * target's namespaces to the same host.
 *
 * Everything above the transport is what a remote peer gets: the peer's
 * state machine, its pool table, the withdrawal handshake, rpage_xfer()
 * and the fault path. The exporter's side is a channel like a reader's
 * first queue pair (struct rpage_in_conn on the peer's inbound list), so
 * the pool table reaches the reader through rpage-pool.c's queue and
 * rpage_msg_received(); messages each way are handed over in the
 * sender's context instead of sent. Pools are announced without memory
 * regions, and a transfer copies pages between the caller's and those of
 * the listed pool, each copy in an access section of the pool: a destroy
 * waits for a copy under way, and no copy touches the pool after it.
 *
 * The peer's one "connection" is @reader below: up from a connect to the
 * next close, and held for reading by everyone who delivers a message to
 * the reader or moves pages, so that a close waits for them and nothing
 * reaches a pool table once it is cleared. Nothing can be lost in
 * between, so there are no heartbeats.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/highmem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

/* Pages a transfer copies between two looks for a reason to stop. */
#define RPAGE_LOOP_BATCH	32

/**
 * struct rpage_loop - a loop peer's transport state (peer->tp)
 * @reader: the reader's side: its state is the connection's, its users
 *	are those of the connection (see the top of the file).
 * @chan: the exporter's channel to the reader while connected; set and
 *	cleared under the peer's lock, read under @reader's users.
 */
struct rpage_loop {
	struct rpage_conn reader;
	struct rpage_in_conn *chan;
};

/**
 * struct rpage_loop_run - a transfer while it runs over the loop
 * @run: what the core keeps of it.
 * @lp: the loop, its @reader users held during an attempt.
 */
struct rpage_loop_run {
	struct rpage_xfer_run run;
	struct rpage_loop *lp;
};

static int rpage_loop_peer_init(struct rpage_peer *peer)
{
	struct rpage_loop *lp;

	lp = kzalloc(sizeof(*lp), GFP_KERNEL);
	if (!lp)
		return -ENOMEM;
	rpage_conn_init(&lp->reader, peer, false, 0);
	peer->tp = lp;
	return 0;
}

static void rpage_loop_peer_free(struct rpage_peer *peer)
{
	kfree(peer->tp);
}

/*
 * Opens the exporter's channel to the reader, which queues it the pool
 * table, and waits for the table to arrive, as a remote peer's connect
 * does.
 */
static int rpage_loop_connect(struct rpage_peer *peer, u32 *reason,
			      char *cause, size_t len)
{
	struct rpage_loop *lp = peer->tp;
	struct rpage_in_conn *in;
	int ret;

	lockdep_assert_held(&peer->lock);
	reinit_completion(&peer->synced);
	in = kzalloc(sizeof(*in), GFP_KERNEL);
	if (!in) {
		snprintf(cause, len, "no memory for the loop channel");
		return -ENOMEM;
	}
	rpage_conn_init(&in->c, peer, true, 0);
	rpage_pools_channel_init(in);
	/* The channel holds the peer, as an accepted queue pair does. */
	kref_get(&peer->ref);
	ret = rpage_peer_inbound_add(peer, in);
	if (ret) {
		rpage_peer_put(peer);
		kfree(in);
		snprintf(cause, len, "opening the loop channel: error %d", ret);
		return ret;
	}
	WRITE_ONCE(lp->chan, in);

	spin_lock(&peer->state_lock);
	peer->remote_node_id = rpage_node_id;
	peer->remote_proto = RPAGE_PROTO_MAJOR << 16 | RPAGE_PROTO_MINOR;
	__rpage_conn_set_state(&lp->reader, RPAGE_CONN_CONNECTED);
	spin_unlock(&peer->state_lock);

	rpage_peer_inbound_established(in);
	return rpage_peer_wait_synced(peer, cause, len);
}

static bool rpage_loop_connected(struct rpage_peer *peer)
{
	struct rpage_loop *lp = peer->tp;

	lockdep_assert_held(&peer->state_lock);
	return lp->reader.state == RPAGE_CONN_CONNECTED;
}

/*
 * Takes the loop down: once no delivery or transfer is left on it, the
 * core clears the pool table, and the exporter's channel is released
 * with what it had queued for the reader.
 */
static void rpage_loop_close(struct rpage_peer *peer)
{
	struct rpage_loop *lp = peer->tp;

	lockdep_assert_held(&peer->lock);
	rpage_conn_set_state(&lp->reader, RPAGE_CONN_CLOSED);
	down_write(&lp->reader.users);
	up_write(&lp->reader.users);
	/* Only a close claims it: nobody else knows it has no queue pair. */
	if (lp->chan) {
		rpage_peer_inbound_closed(lp->chan, "the loop peer closed");
		WRITE_ONCE(lp->chan, NULL);
	}
}

/*
 * Hands a control message over to the other side, in the sender's
 * context: with @chan NULL, the reader's to the exporter's receive path;
 * else the exporter's on @chan to the reader's, if @chan is the channel
 * of the loop that is up now (one released by an earlier close must not
 * reach the table of a later connect).
 */
static int rpage_loop_hand_over(struct rpage_loop *lp, struct rpage_conn *chan,
				const void *msg, u32 len)
{
	struct rpage_in_conn *cur;
	int ret = 0;

	if (len > RPAGE_MSG_MAX)
		return -EMSGSIZE;
	/* The pool table arrives while the peer is still connecting. */
	if (!rpage_conn_use(&lp->reader, false))
		return -ENOTCONN;
	cur = READ_ONCE(lp->chan);
	if (!cur || (chan && chan != &cur->c))
		ret = -ENOTCONN;
	else
		rpage_msg_received(chan ? &lp->reader : &cur->c, msg, len);
	up_read(&lp->reader.users);
	return ret;
}

static int rpage_loop_send_ctl(struct rpage_peer *peer, const void *msg,
			       u32 len)
{
	return rpage_loop_hand_over(peer->tp, NULL, msg, len);
}

static int rpage_loop_chan_send(struct rpage_conn *chan, const void *msg,
				u32 len)
{
	return rpage_loop_hand_over(chan->peer->tp, chan, msg, len);
}

/* The run of @x, with the core's @tail bytes after it (*@tailp). */
static struct rpage_xfer_run *rpage_loop_run_alloc(struct rpage_xfer *x,
						   size_t tail, void **tailp)
{
	struct rpage_loop_run *lr;

	lr = kvzalloc(sizeof(*lr) + tail, GFP_KERNEL | __GFP_NOWARN);
	if (!lr)
		return NULL;
	*tailp = lr + 1;
	return &lr->run;
}

static void rpage_loop_run_free(struct rpage_xfer_run *run)
{
	kvfree(container_of(run, struct rpage_loop_run, run));
}

/* Takes the loop for an attempt, if it is up (-EAGAIN if not). */
static int rpage_loop_xfer_begin(struct rpage_xfer_run *run)
{
	struct rpage_loop_run *lr = container_of(run, struct rpage_loop_run, run);

	lr->lp = run->x->peer->tp;
	return rpage_conn_use(&lr->lp->reader, true) ? 0 : -EAGAIN;
}

/*
 * Copies page @g of the run to or from this host's pool behind it, in
 * an access section: a pool that is destroyed is never touched once its
 * destroy has returned. 0, or -ENOENT if the pool is no longer listed
 * (destroyed, or another incarnation), -ERANGE if it is too short.
 */
static int rpage_loop_copy(struct rpage_loop_run *lr, unsigned long g)
{
	const struct rpage_rpool *rpool;
	const struct rpage_pool *pool;
	struct rpage_xfer *x = lr->run.x;
	struct rpage_peer *peer = x->peer;
	struct page *page = NULL;
	u64 offset, start, ns;
	int idx;

	rpage_xfer_locate(&lr->run, g, &rpool, &offset);
	idx = rpage_pool_access_begin();
	pool = rpage_pool_lookup(rpool->id, rpool->generation, peer);
	/* The table said the range fits; the pool itself has the last word. */
	if (pool)
		page = rpage_pool_page(pool, offset);
	if (!page) {
		rpage_pool_access_end(idx);
		return pool ? -ERANGE : -ENOENT;
	}
	start = ktime_get_ns();
	trace_rpage_io_post(peer->id, 0, x->write, offset, 1);
	if (x->write)
		copy_highpage(page, x->pages[g]);
	else
		copy_highpage(x->pages[g], page);
	rpage_pool_access_end(idx);
	ns = ktime_get_ns() - start;
	trace_rpage_io_done(peer->id, 0, x->write, 1, 0, ns);
	rpage_counters_io(&peer->counters, x->write, 1, ns, false);
	return 0;
}

/*
 * Copies every page not moved yet, in the caller's context; a killed
 * caller stops between two batches.
 */
static int rpage_loop_xfer_move(struct rpage_xfer_run *run)
{
	struct rpage_loop_run *lr = container_of(run, struct rpage_loop_run, run);
	struct rpage_xfer *x = run->x;
	unsigned long g, n = 0;
	int ret;

	for_each_clear_bit(g, run->finished, x->nr_pages) {
		if (n && !(n % RPAGE_LOOP_BATCH)) {
			if (x->killable && fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
		ret = rpage_loop_copy(lr, g);
		if (ret)
			return ret;
		rpage_xfer_moved(run, g, 1);
		n++;
	}
	return 0;
}

/*
 * A copy never waits for a network: a transfer that may not wait
 * (rpage_xfer_start()) is done at once, in the caller's context.
 */
static int rpage_loop_xfer_start(struct rpage_xfer_run *run)
{
	int ret = rpage_loop_xfer_move(run);

	return ret ?: 1;
}

/* Gives the loop back. */
static void rpage_loop_xfer_end(struct rpage_xfer_run *run)
{
	struct rpage_loop_run *lr = container_of(run, struct rpage_loop_run, run);

	up_read(&lr->lp->reader.users);
}

const struct rpage_transport_ops rpage_loop_transport = {
	.name		= "loop",
	.id		= RPAGE_TRANSPORT_LOOP,
	.regions	= false,
	.connected_cause = "this host's pool table listed",
	.peer_init	= rpage_loop_peer_init,
	.peer_free	= rpage_loop_peer_free,
	.connect	= rpage_loop_connect,
	.connected	= rpage_loop_connected,
	.close		= rpage_loop_close,
	.send_ctl	= rpage_loop_send_ctl,
	.chan_send	= rpage_loop_chan_send,
	.run_alloc	= rpage_loop_run_alloc,
	.run_free	= rpage_loop_run_free,
	.xfer_begin	= rpage_loop_xfer_begin,
	.xfer_move	= rpage_loop_xfer_move,
	.xfer_start	= rpage_loop_xfer_start,
	.xfer_end	= rpage_loop_xfer_end,
};
