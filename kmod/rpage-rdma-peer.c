// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: RDMA as a transport - a peer's connection set, the outbound
 * queue pairs this host opens to a peer it reads from: brought up and
 * taken down for the core's state machine (rpage-peer.c), heartbeats and
 * control messages sent on them, and the ops table that makes RDMA a
 * transport (its transfers are in rpage-rdma-xfer.c).
 */
#include "rpage-pri.h"

#include <linux/slab.h>

/* The queue pairs of a peer being added. */
static int rpage_rdma_peer_init(struct rpage_peer *peer)
{
	unsigned int i;

	/* One for control and WRITEs, then READs spread over the rest. */
	peer->nr_conns = rpage_peer_nr_channels();
	peer->conns = kcalloc(peer->nr_conns, sizeof(*peer->conns), GFP_KERNEL);
	if (!peer->conns)
		return -ENOMEM;
	for (i = 0; i < peer->nr_conns; i++) {
		rpage_conn_init(&peer->conns[i].c, peer, false, i);
		init_completion(&peer->conns[i].done);
	}
	return 0;
}

static void rpage_rdma_peer_free(struct rpage_peer *peer)
{
	kfree(peer->conns);
}

/* Words for how connecting queue pair @oc failed with @err. */
static void rpage_rdma_attempt_cause(struct rpage_out_conn *oc, int err,
				     char *buf, size_t len)
{
	if (oc->reject_reason != RPAGE_REJECT_NONE)
		snprintf(buf, len, "connecting queue pair %u: refused: %s",
			 oc->c.index, rpage_reject_name(oc->reject_reason));
	else if (oc->event >= 0)
		snprintf(buf, len, "connecting queue pair %u: %s (%d)",
			 oc->c.index, rdma_event_msg(oc->event), err);
	else
		snprintf(buf, len, "connecting queue pair %u: error %d",
			 oc->c.index, err);
}

/* Connects every queue pair of the set and waits for the pool table. */
static int rpage_rdma_connect(struct rpage_peer *peer, u32 *reason,
			      char *cause, size_t len)
{
	unsigned int i;
	int ret;

	reinit_completion(&peer->synced);
	for (i = 0; i < peer->nr_conns; i++) {
		ret = rpage_out_conn_connect(&peer->conns[i]);
		if (ret) {
			*reason = peer->conns[i].reject_reason;
			rpage_rdma_attempt_cause(&peer->conns[i], ret, cause, len);
			return ret;
		}
	}
	return rpage_peer_wait_synced(peer, cause, len);
}

/* Under the peer's state lock: the queue pairs, and how many are up. */
static u32 rpage_rdma_channels(struct rpage_peer *peer, u32 *up)
{
	unsigned int i;

	lockdep_assert_held(&peer->state_lock);
	*up = 0;
	for (i = 0; i < peer->nr_conns; i++)
		if (peer->conns[i].c.state == RPAGE_CONN_CONNECTED)
			(*up)++;
	return peer->nr_conns;
}

/* Under the peer's state lock: every queue pair of the set is still up. */
static bool rpage_rdma_connected(struct rpage_peer *peer)
{
	u32 up;

	return rpage_rdma_channels(peer, &up) == up;
}

/*
 * Takes the set down. What is in flight on any of its queue pairs is
 * flushed first, all at once, then each is destroyed once its posters
 * are done with it.
 */
static void rpage_rdma_close(struct rpage_peer *peer)
{
	unsigned int i;

	lockdep_assert_held(&peer->lock);
	for (i = 0; i < peer->nr_conns; i++) {
		struct rpage_conn *conn = &peer->conns[i].c;

		rpage_conn_set_state(conn, RPAGE_CONN_CLOSED);
		rpage_conn_to_error(conn);
	}
	for (i = 0; i < peer->nr_conns; i++)
		rpage_conn_destroy(&peer->conns[i].c);
}

/*
 * The outbound queue pair @index (modulo the set) of a connected @peer,
 * with its users held for reading (rpage_conn_use()). NULL if the peer
 * or that queue pair is not connected.
 */
struct rpage_conn *rpage_peer_use_conn(struct rpage_peer *peer,
				       unsigned int index)
{
	struct rpage_conn *conn = &peer->conns[index % peer->nr_conns].c;

	return rpage_conn_use(conn, true) ? conn : NULL;
}

/*
 * The queue pair a transfer uses, with its users held as by
 * rpage_peer_use_conn(). READs go to queue pairs 1 and up, spread by CPU;
 * WRITEs share the first with the control messages and heartbeats, so
 * that a queue pair that carries READs is never sent an acknowledgment.
 * RC requires a requester to ignore an ACK for a request it already saw
 * acknowledged, but rxe in 6.12 takes one that arrives between two
 * packets of a READ response (a lost ACK retransmitted, or reordered) as
 * the end of that response: it completes the READ as successful with
 * part of its data missing. A READ-only queue pair is only ever answered
 * with READ responses and with NAKs it cannot have seen before.
 */
struct rpage_conn *rpage_peer_use_data_conn(struct rpage_peer *peer,
					    bool write)
{
	unsigned int cpu = raw_smp_processor_id();

	if (write || peer->nr_conns < 2)
		return rpage_peer_use_conn(peer, 0);
	return rpage_peer_use_conn(peer, 1 + cpu % (peer->nr_conns - 1));
}

/*
 * Sends a control message to @peer as a reader (on the first outbound
 * queue pair, where the exporter listens for them). A failed send means
 * the queue pair is broken: the peer reconnects.
 */
static int rpage_rdma_send_ctl(struct rpage_peer *peer, const void *msg, u32 len)
{
	struct rpage_conn *conn;
	int ret;

	conn = rpage_peer_use_conn(peer, 0);
	if (!conn)
		return -ENOTCONN;
	ret = rpage_conn_send(conn, msg, len, rpage_io_timeout_ms,
			      "control message SEND");
	up_read(&conn->users);
	return ret;
}

/*
 * Sends a message of this host's pool table on @chan, the first queue
 * pair the reader opened to us; failing, it breaks the connection set.
 */
static int rpage_rdma_chan_send(struct rpage_conn *chan, const void *msg,
				u32 len)
{
	return rpage_conn_send(chan, msg, len, rpage_io_timeout_ms,
			       "pool table SEND");
}

/* A heartbeat to a reader, on the first queue pair it opened to us. */
static void rpage_rdma_chan_heartbeat(struct rpage_conn *chan)
{
	rpage_conn_heartbeat(chan, "inbound heartbeat");
}

/* A heartbeat to a peer we read from, on the first queue pair. */
static void rpage_rdma_heartbeat(struct rpage_peer *peer)
{
	struct rpage_conn *conn = rpage_peer_use_conn(peer, 0);

	if (conn) {
		rpage_conn_heartbeat(conn, "outbound heartbeat");
		up_read(&conn->users);
	}
}

const struct rpage_transport_ops rpage_rdma_transport = {
	.name		= "rdma",
	.id		= RPAGE_TRANSPORT_RDMA,
	.regions	= true,
	.connected_cause = "every queue pair up, pool table received",
	.peer_init	= rpage_rdma_peer_init,
	.peer_free	= rpage_rdma_peer_free,
	.connect	= rpage_rdma_connect,
	.connected	= rpage_rdma_connected,
	.close		= rpage_rdma_close,
	.channels	= rpage_rdma_channels,
	.heartbeat	= rpage_rdma_heartbeat,
	.chan_heartbeat	= rpage_rdma_chan_heartbeat,
	.chan_break	= rpage_conn_to_error,
	.chan_destroy	= rpage_conn_destroy,
	.send_ctl	= rpage_rdma_send_ctl,
	.chan_send	= rpage_rdma_chan_send,
	.run_alloc	= rpage_rdma_run_alloc,
	.run_free	= rpage_rdma_run_free,
	.xfer_begin	= rpage_rdma_xfer_begin,
	.xfer_move	= rpage_rdma_xfer_move,
	.xfer_start	= rpage_rdma_xfer_start,
	.xfer_end	= rpage_rdma_xfer_end,
};
