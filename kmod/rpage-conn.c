// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: one RC connection, either direction - its queue pair and
 * completion queues, the receive buffers of a control queue pair, the
 * control messages it sends, its state, and (for the queue pairs this
 * host opens) one connection attempt through rdma_cm.
 *
 * Each host opens its own queue pairs to every peer it reads from (the
 * outbound connections, struct rpage_out_conn, one per CPU up to
 * qps_per_peer) and accepts the peer's queue pairs to it (inbound, struct
 * rpage_in_conn, see rpage-endpoint.c). The first queue pair of a set
 * carries control messages both ways. Whether a connection is lost is
 * decided by its peer (rpage-peer.c); this file only reports why.
 */
#include "rpage-pri.h"

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/kmemleak.h>
#include <linux/sched.h>
#include <linux/slab.h>

/* Bounds on what one connection asks of the device. */
#define RPAGE_SEND_DEPTH	64
#define RPAGE_RECV_DEPTH	8
#define RPAGE_MAX_RD_ATOMIC	16
/* Completions reaped per poll of a directly polled queue. */
#define RPAGE_CONN_POLL_BATCH	16

static const char *const rpage_reject_names[] = {
	[RPAGE_REJECT_NONE]		= "none",
	[RPAGE_REJECT_UNKNOWN_PEER]	= "unknown peer",
	[RPAGE_REJECT_VERSION]		= "incompatible protocol version",
	[RPAGE_REJECT_BAD_HELLO]	= "malformed hello",
	[RPAGE_REJECT_NO_RESOURCES]	= "no resources",
	[RPAGE_REJECT_UNSPECIFIED]	= "unspecified",
	[RPAGE_REJECT_TRANSPORT]	= "configured with another transport",
};

const char *rpage_reject_name(u32 reason)
{
	if (reason < ARRAY_SIZE(rpage_reject_names))
		return rpage_reject_names[reason];
	return "unknown reason";
}

void rpage_conn_init(struct rpage_conn *conn, struct rpage_peer *peer,
		     bool inbound, u16 index)
{
	conn->kind = RPAGE_CM_CONN;
	conn->peer = peer;
	conn->inbound = inbound;
	conn->index = index;
	conn->state = RPAGE_CONN_IDLE;
	spin_lock_init(&conn->recv_lock);
	init_rwsem(&conn->users);
	spin_lock_init(&conn->detached_lock);
	INIT_LIST_HEAD(&conn->detached);
	atomic_set(&conn->async_runs, 0);
	INIT_WORK(&conn->poll_work, rpage_rdma_poll_work_fn);
	init_waitqueue_head(&conn->cq_wait);
}

/*
 * The one place a connection changes state, under its peer's state
 * lock, so that the peer can check all of its connections at once (a
 * peer is never connected with a connection that is not). Returns
 * whether it was connected.
 */
bool __rpage_conn_set_state(struct rpage_conn *conn, enum rpage_conn_state new)
{
	enum rpage_conn_state old = conn->state;

	lockdep_assert_held(&conn->peer->state_lock);
	conn->state = new;
	/* Its transfers asleep stop waiting for a queue pair that is going. */
	if (new == RPAGE_CONN_CLOSED)
		wake_up_all(&conn->cq_wait);
	return old == RPAGE_CONN_CONNECTED;
}

bool rpage_conn_set_state(struct rpage_conn *conn, enum rpage_conn_state new)
{
	struct rpage_peer *peer = conn->peer;
	bool was_up;

	spin_lock(&peer->state_lock);
	was_up = __rpage_conn_set_state(conn, new);
	spin_unlock(&peer->state_lock);
	return was_up;
}

/*
 * Holds @conn's users for reading if it is connected and, with
 * @peer_up, its peer is too: true, and it stays until up_read() of its
 * users; false with nothing held. Teardown marks a connection closed
 * before it waits for its users, so a holder never sees it destroyed.
 */
bool rpage_conn_use(struct rpage_conn *conn, bool peer_up)
{
	down_read(&conn->users);
	if ((peer_up &&
	     rpage_peer_state(conn->peer) != RPAGE_PEER_STATE_CONNECTED) ||
	    READ_ONCE(conn->state) != RPAGE_CONN_CONNECTED) {
		up_read(&conn->users);
		return false;
	}
	return true;
}

/*
 * Whether @conn is on its way out: closed, or its peer being deleted.
 * Its teardown waits for every holder of its users, so a holder waiting
 * for the device must then flush and wait only the grace period
 * (rpage_flush_grace()), not its own timeout.
 */
bool rpage_conn_going(struct rpage_conn *conn)
{
	return READ_ONCE(conn->state) == RPAGE_CONN_CLOSED ||
	       rpage_peer_state(conn->peer) == RPAGE_PEER_STATE_DELETING;
}

/*
 * Moves the queue pair to the error state: what is in flight on it
 * completes at once, flushed. The caller keeps the queue pair alive
 * (holds @users, or is its teardown).
 */
void rpage_conn_to_error(struct rpage_conn *conn)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	if (conn->cm_id && conn->cm_id->qp)
		ib_modify_qp(conn->cm_id->qp, &attr, IB_QP_STATE);
}

void rpage_hello_init(struct rpage_hello *hello, u16 qp_index, u16 nr_qps)
{
	memset(hello, 0, sizeof(*hello));
	hello->magic = cpu_to_le32(RPAGE_PROTO_MAGIC);
	hello->major = cpu_to_le16(RPAGE_PROTO_MAJOR);
	hello->minor = cpu_to_le16(RPAGE_PROTO_MINOR);
	hello->node_id = cpu_to_le64(rpage_node_id);
	hello->qp_index = cpu_to_le16(qp_index);
	hello->nr_qps = cpu_to_le16(nr_qps);
}

/*
 * Validates a hello a peer sent (@len bytes of private data; transports
 * may pad it). Returns RPAGE_REJECT_NONE and a copy in @hello, or why the
 * connection must be refused.
 */
u32 rpage_hello_check(const void *data, u8 len, struct rpage_hello *hello)
{
	if (!data || len < sizeof(*hello))
		return RPAGE_REJECT_BAD_HELLO;
	memcpy(hello, data, sizeof(*hello));
	if (le32_to_cpu(hello->magic) != RPAGE_PROTO_MAGIC)
		return RPAGE_REJECT_BAD_HELLO;
	if (le16_to_cpu(hello->major) != RPAGE_PROTO_MAJOR)
		return RPAGE_REJECT_VERSION;
	if (!rpage_hello_flags_supported(le32_to_cpu(hello->flags)))
		return RPAGE_REJECT_VERSION;
	if (!le64_to_cpu(hello->node_id) || !le16_to_cpu(hello->nr_qps) ||
	    le16_to_cpu(hello->qp_index) >= le16_to_cpu(hello->nr_qps))
		return RPAGE_REJECT_BAD_HELLO;
	return RPAGE_REJECT_NONE;
}

/*
 * Drops @conn's protection domain, its queue pair gone: a peer's domain
 * goes with its last user, before the device use they hold does.
 */
static void rpage_conn_put_pd(struct rpage_conn *conn)
{
	if (conn->ppd)
		rpage_pd_put(conn->ppd);
	conn->ppd = NULL;
	conn->pd = NULL;
}

/* The completion queues of @conn, each freed the way it was made. */
static void rpage_conn_free_cqs(struct rpage_conn *conn)
{
	if (conn->recv_cq && conn->recv_cq != conn->cq)
		ib_free_cq(conn->recv_cq);
	conn->recv_cq = NULL;
	if (conn->cq) {
		if (conn->inbound)
			ib_free_cq(conn->cq);
		else
			ib_destroy_cq(conn->cq);
		conn->cq = NULL;
	}
}

/*
 * The most bytes one scatter/gather entry of @ibdev's may cover, whole
 * pages: its DMA segment limit, and where it maps through a bounce
 * buffer (swiotlb) that buffer's; a 2 MiB folio is one entry where both
 * allow (software devices: no limit).
 */
static u32 rpage_rdma_sge_bytes(struct ib_device *ibdev)
{
	u64 bytes = ib_dma_max_seg_size(ibdev);

	if (!ib_uses_virt_dma(ibdev))
		bytes = min_t(u64, bytes, dma_max_mapping_size(ibdev->dma_device));
	return max_t(u32, round_down(min_t(u64, bytes, SZ_1G), PAGE_SIZE),
		     PAGE_SIZE);
}

/*
 * Creates the completion queues and queue pair of @conn on the device of
 * @cm_id. Runs in an rdma_cm callback (route resolved, or connect
 * request).
 */
int rpage_conn_create_qp(struct rpage_conn *conn, struct rdma_cm_id *cm_id)
{
	struct ib_device *ibdev = cm_id->device;
	int vector = conn->index % ibdev->num_comp_vectors;
	u32 max_sge = clamp_t(u32, ibdev->attrs.max_send_sge, 1,
			      RPAGE_IO_MAX_SGE);
	/* A READ's scatter list may be held to fewer entries than a send's. */
	u32 max_read_sge = clamp_t(u32, ibdev->attrs.max_sge_rd, 1, max_sge);
	struct ib_qp_init_attr attr = {};
	struct rpage_ibdev *dev;
	int ret;

	dev = rpage_ibdev_get(ibdev);
	if (!dev)
		return -ENODEV;
	/*
	 * The reader's sends (its RDMA READs and WRITEs) complete on a queue
	 * the poster polls; everything else, control traffic, completes in
	 * a work queue.
	 */
	if (conn->inbound) {
		conn->cq = ib_alloc_cq(ibdev, conn,
				       RPAGE_SEND_DEPTH + RPAGE_RECV_DEPTH,
				       vector, IB_POLL_WORKQUEUE);
		conn->recv_cq = conn->cq;
	} else {
		/*
		 * Not ib_alloc_cq(): its direct-polled queues may never
		 * interrupt, and a transfer that waits long sleeps until one
		 * does (rpage_rdma_cq_event()). Still only ever polled by
		 * its users, with ib_process_cq_direct(): the core has no
		 * poller of its own for it.
		 */
		struct ib_cq_init_attr cq_attr = {
			.cqe = RPAGE_SEND_DEPTH,
			.comp_vector = vector,
		};

		conn->cq = ib_create_cq(ibdev, rpage_rdma_cq_event, NULL, conn,
					&cq_attr);
		if (!IS_ERR(conn->cq)) {
			conn->recv_cq = ib_alloc_cq(ibdev, conn, RPAGE_RECV_DEPTH,
						    vector, IB_POLL_WORKQUEUE);
			if (IS_ERR(conn->recv_cq)) {
				ib_destroy_cq(conn->cq);
				conn->cq = conn->recv_cq;
			}
		}
	}
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		conn->cq = NULL;
		conn->recv_cq = NULL;
		goto err_dev;
	}
	attr.send_cq = conn->cq;
	attr.recv_cq = conn->recv_cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	attr.cap.max_send_wr = RPAGE_SEND_DEPTH;
	attr.cap.max_recv_wr = RPAGE_RECV_DEPTH;
	/* Contiguous pages share a work request: a gather list of pages. */
	attr.cap.max_send_sge = max_sge;
	attr.cap.max_recv_sge = 1;
	attr.qp_context = conn;
	/*
	 * A peer's queue pairs are in its own domain on this device: the
	 * regions of the pools announced to it are registered there, and
	 * only there (rpage-pool.c).
	 */
	conn->pd = dev->pd;
	if (conn->inbound) {
		conn->ppd = rpage_pd_get(dev, conn->peer->id);
		if (IS_ERR(conn->ppd)) {
			ret = PTR_ERR(conn->ppd);
			conn->ppd = NULL;
			goto err_cq;
		}
		conn->pd = conn->ppd->pd;
	}
	ret = rdma_create_qp(cm_id, conn->pd, &attr);
	if (ret)
		goto err_pd;
	atomic_set(&conn->sq_free, RPAGE_SEND_DEPTH);
	conn->max_write_sge = max_sge;
	conn->max_read_sge = max_read_sge;
	conn->max_sge_bytes = rpage_rdma_sge_bytes(ibdev);
	conn->dev = dev;
	atomic_inc(&dev->users);
	return 0;

err_pd:
	rpage_conn_put_pd(conn);
err_cq:
	rpage_conn_free_cqs(conn);
err_dev:
	rpage_ibdev_put(dev);
	return ret;
}

static int rpage_conn_post_recv(struct rpage_recv *recv)
{
	struct rpage_conn *conn = recv->conn;
	struct ib_sge sge = {
		.addr = recv->dma,
		.length = RPAGE_MSG_MAX,
		.lkey = conn->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &recv->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret = -ESHUTDOWN;

	spin_lock_bh(&conn->recv_lock);
	if (!conn->closing)
		ret = ib_post_recv(conn->cm_id->qp, &wr, NULL);
	spin_unlock_bh(&conn->recv_lock);
	return ret;
}

static void rpage_conn_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_recv *recv = container_of(wc->wr_cqe, struct rpage_recv,
					       cqe);
	struct rpage_conn *conn = recv->conn;
	struct ib_device *ibdev = conn->dev->ibdev;

	if (wc->status != IB_WC_SUCCESS) {
		/* Flushed: the queue pair is going down for a reason of its own. */
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			rpage_peer_conn_lost(conn, "control message receive: %s (status %d)",
					     ib_wc_status_msg(wc->status),
					     wc->status);
		return;
	}
	ib_dma_sync_single_for_cpu(ibdev, recv->dma, RPAGE_MSG_MAX,
				   DMA_FROM_DEVICE);
	if (!conn->inbound)
		rpage_peer_alive(conn->peer);
	rpage_msg_received(conn, recv->buf,
			   min_t(u32, wc->byte_len, RPAGE_MSG_MAX));
	ib_dma_sync_single_for_device(ibdev, recv->dma, RPAGE_MSG_MAX,
				      DMA_FROM_DEVICE);
	/* Fails only when the queue pair is in error: nothing to do then. */
	rpage_conn_post_recv(recv);
}

static void rpage_conn_free_recvs(struct rpage_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int i;

	if (!conn->recvs)
		return;
	for (i = 0; i < RPAGE_RECV_DEPTH; i++) {
		struct rpage_recv *recv = &conn->recvs[i];

		if (!recv->buf)
			continue;
		if (recv->dma)
			ib_dma_unmap_single(ibdev, recv->dma, RPAGE_MSG_MAX,
					    DMA_FROM_DEVICE);
		kfree(recv->buf);
	}
	kfree(conn->recvs);
	conn->recvs = NULL;
}

/*
 * The first queue pair of a set carries control messages both ways: the
 * pool table to the reader, acknowledgments back, heartbeats both ways.
 */
int rpage_conn_setup_recvs(struct rpage_conn *conn)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned int i;
	int ret;

	conn->recvs = kcalloc(RPAGE_RECV_DEPTH, sizeof(*conn->recvs), GFP_KERNEL);
	if (!conn->recvs)
		return -ENOMEM;
	for (i = 0; i < RPAGE_RECV_DEPTH; i++) {
		struct rpage_recv *recv = &conn->recvs[i];
		u64 dma;

		recv->conn = conn;
		recv->cqe.done = rpage_conn_recv_done;
		recv->buf = kmalloc(RPAGE_MSG_MAX, GFP_KERNEL);
		if (!recv->buf)
			return -ENOMEM;
		dma = ib_dma_map_single(ibdev, recv->buf, RPAGE_MSG_MAX,
					DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(ibdev, dma))
			return -ENOMEM;
		recv->dma = dma;
		ret = rpage_conn_post_recv(recv);
		if (ret)
			return ret;
	}
	return 0;
}

/* Frees the queue pair and what goes with it; the rdma_cm id stays. */
static void rpage_conn_free_qp(struct rpage_conn *conn)
{
	/* A receive completing now must not repost on a dying queue pair. */
	spin_lock_bh(&conn->recv_lock);
	conn->closing = true;
	spin_unlock_bh(&conn->recv_lock);
	if (conn->cm_id && conn->cm_id->qp)
		rdma_destroy_qp(conn->cm_id);
}

/* Frees the completion queues, receive buffers and device use. */
static void rpage_conn_free_rest(struct rpage_conn *conn)
{
	rpage_conn_free_cqs(conn);
	if (conn->dev) {
		rpage_conn_free_recvs(conn);
		rpage_conn_put_pd(conn);
		rpage_ibdev_unuse(conn->dev);
		conn->dev = NULL;
	}
}

/*
 * Undoes a connection refused in its own connect-request callback, whose
 * rdma_cm id rdma_cm destroys itself: nothing of it was ever used.
 */
void rpage_conn_abort(struct rpage_conn *conn)
{
	rpage_conn_free_qp(conn);
	conn->cm_id = NULL;
	rpage_conn_free_rest(conn);
	rpage_conn_set_state(conn, RPAGE_CONN_IDLE);
}

/*
 * Tears one connection down completely: after this nothing is posted on
 * it, no callback runs for it and nothing of it is left on the device.
 * Also undoes a half-built one. Not from its own rdma_cm callback.
 */
void rpage_conn_destroy(struct rpage_conn *conn)
{
	struct rdma_cm_id *cm_id = conn->cm_id;
	bool was_up;

	if (!cm_id)
		return;
	was_up = rpage_conn_set_state(conn, RPAGE_CONN_CLOSED);
	if (was_up)
		rdma_disconnect(cm_id);
	/* What is in flight completes flushed; its posters see it and go. */
	rpage_conn_to_error(conn);
	/* Once they are gone, none comes back: it is closed (see users). */
	down_write(&conn->users);
	/* Killed tasks' work requests complete (flushed) before it goes. */
	rpage_rdma_conn_drain(conn);
	rpage_conn_free_qp(conn);
	up_write(&conn->users);
	/*
	 * Waits for a callback still running on the id, so not under users:
	 * rdma_cm runs our callbacks under its handler mutex, they take
	 * inbound_lock, and a poster whose send fails takes inbound_lock
	 * under users.
	 */
	rdma_destroy_id(cm_id);
	conn->cm_id = NULL;
	rpage_conn_free_rest(conn);
	rpage_conn_set_state(conn, RPAGE_CONN_IDLE);
}

/**
 * struct rpage_ctl_wait - a control work request waited for
 * @cqe: completion entry.
 * @done: set when it completed; the rest is then valid.
 * @status: its work completion status.
 * @sge: the message it sends, if any.
 * @dma: the message's mapping, 0 if none.
 * @len: the message's length.
 * @buf: a copy of the message, which must outlive the device's use.
 *
 * Allocated: if the device never gives it back, none of it is reused.
 */
struct rpage_ctl_wait {
	struct ib_cqe cqe;
	struct completion done;
	enum ib_wc_status status;
	struct ib_sge sge;
	u64 dma;
	u32 len;
	u8 buf[];
};

static void rpage_ctl_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_ctl_wait *wait = container_of(wc->wr_cqe,
						   struct rpage_ctl_wait, cqe);
	struct rpage_conn *conn = cq->cq_context;

	wait->status = wc->status;
	if (!conn->inbound) {
		atomic_inc(&conn->sq_free);
		if (wc->status == IB_WC_SUCCESS)
			rpage_peer_alive(conn->peer);
	}
	complete(&wait->done);
}

/* How often a sleeping control request looks whether its queue pair closed. */
#define RPAGE_CTL_CLOSED_CHECK_MS	100

/*
 * Waits up to @timeout jiffies for @wait: on a directly polled queue by
 * polling it (whatever else completes there is handed to its owner), on
 * the others by sleeping. With @until_closed, gives up as well once the
 * connection is going (rpage_conn_going()): its teardown waits for this
 * caller, who must then flush its request rather than wait out
 * @timeout. True if it completed.
 */
static bool rpage_ctl_wait_for(struct rpage_conn *conn,
			       struct rpage_ctl_wait *wait,
			       unsigned long timeout, bool until_closed)
{
	unsigned long deadline = jiffies + timeout, slice;

	while (!completion_done(&wait->done)) {
		if (until_closed && rpage_conn_going(conn))
			return false;
		if (time_after(jiffies, deadline))
			return false;
		if (conn->inbound) {
			slice = min(deadline - jiffies + 1,
				    msecs_to_jiffies(RPAGE_CTL_CLOSED_CHECK_MS));
			/* Consumes the completion: completion_done() is false after. */
			if (wait_for_completion_timeout(&wait->done, slice))
				return true;
			continue;
		}
		if (ib_process_cq_direct(conn->cq, RPAGE_CONN_POLL_BATCH) > 0)
			continue;
		usleep_range(50, 200);
	}
	return true;
}

/*
 * Posts @wr, of @wait, on @conn's queue pair and waits for it; the caller
 * holds @users and saw the connection up. A request that does not
 * complete in @timeout_ms is flushed by moving the queue pair to the
 * error state. Any failure ends the connection, and is reported as its
 * cause, @what first: so that the cause logged is this one, not the
 * flush it leads to. Returns 0, -EIO (it failed), -ECONNRESET (flushed),
 * -ETIMEDOUT (no completion in time), or -EDEADLK: the device never
 * gave it back, and @wait stays its.
 */
static int rpage_ctl_post(struct rpage_conn *conn, struct rpage_ctl_wait *wait,
			  struct ib_send_wr *wr, unsigned int timeout_ms,
			  const char *what)
{
	int ret;

	init_completion(&wait->done);
	wait->cqe.done = rpage_ctl_done;
	wait->status = IB_WC_SUCCESS;
	wr->wr_cqe = &wait->cqe;
	wr->send_flags |= IB_SEND_SIGNALED;
	/* The data path shares the reader's send queue: take a slot. */
	if (!conn->inbound) {
		unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);

		while (atomic_dec_if_positive(&conn->sq_free) < 0) {
			if (time_after(jiffies, deadline)) {
				rpage_peer_conn_lost(conn, "%s: send queue full for %u ms",
						     what, timeout_ms);
				return -ETIMEDOUT;
			}
			if (ib_process_cq_direct(conn->cq, RPAGE_CONN_POLL_BATCH) <= 0)
				usleep_range(50, 200);
		}
	}
	ret = ib_post_send(conn->cm_id->qp, wr, NULL);
	if (ret) {
		if (!conn->inbound)
			atomic_inc(&conn->sq_free);
		rpage_peer_conn_lost(conn, "%s: posting failed: %d", what, ret);
		return ret;
	}
	if (!rpage_ctl_wait_for(conn, wait, msecs_to_jiffies(timeout_ms), true)) {
		/* Timed out, unless the connection is going anyway. */
		ret = rpage_conn_going(conn) ? -ECONNRESET : -ETIMEDOUT;
		if (ret == -ETIMEDOUT)
			rpage_peer_conn_lost(conn, "%s: no completion for %u ms",
					     what, timeout_ms);
		rpage_conn_to_error(conn);
		if (!rpage_ctl_wait_for(conn, wait, rpage_flush_grace(timeout_ms),
					false)) {
			pr_err("peer %s: a control request never completed\n",
			       conn->peer->name);
			/* On purpose: the device may still use it. */
			kmemleak_not_leak(wait);
			return -EDEADLK;
		}
		return ret;
	}
	if (wait->status == IB_WC_SUCCESS)
		return 0;
	rpage_peer_conn_lost(conn, "%s: %s (status %d)", what,
			     ib_wc_status_msg(wait->status), wait->status);
	return wait->status == IB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO;
}

/*
 * Posts a control work request without a message of its own (a memory
 * registration) and waits for it; see rpage_ctl_post().
 */
int rpage_conn_post_wait(struct rpage_conn *conn, struct ib_send_wr *wr,
			 unsigned int timeout_ms, const char *what)
{
	struct rpage_ctl_wait *wait;
	int ret;

	wait = kzalloc(sizeof(*wait), GFP_KERNEL);
	if (!wait)
		return -ENOMEM;
	ret = rpage_ctl_post(conn, wait, wr, timeout_ms, what);
	if (ret == -EDEADLK)
		return -ETIMEDOUT;	/* @wait stays: the device owns it */
	kfree(wait);
	return ret;
}

/*
 * Sends the control message @msg of @len bytes on @conn and waits for the
 * send to complete: once it has, the peer's queue pair holds it. The
 * caller holds @users and saw the connection up. Errors as
 * rpage_ctl_post(), which reports them with @what.
 */
int rpage_conn_send(struct rpage_conn *conn, const void *msg, u32 len,
		    unsigned int timeout_ms, const char *what)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	struct ib_send_wr wr = {};
	struct rpage_ctl_wait *wait;
	int ret;

	if (len > RPAGE_MSG_MAX)
		return -EMSGSIZE;
	wait = kzalloc(struct_size(wait, buf, len), GFP_KERNEL);
	if (!wait)
		return -ENOMEM;
	memcpy(wait->buf, msg, len);
	wait->len = len;
	wait->dma = ib_dma_map_single(ibdev, wait->buf, len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(ibdev, wait->dma)) {
		kfree(wait);
		return -ENOMEM;
	}
	wait->sge.addr = wait->dma;
	wait->sge.length = len;
	wait->sge.lkey = conn->pd->local_dma_lkey;
	wr.opcode = IB_WR_SEND;
	wr.sg_list = &wait->sge;
	wr.num_sge = 1;
	ret = rpage_ctl_post(conn, wait, &wr, timeout_ms, what);
	/* The device may still read the message: it keeps it. */
	if (ret == -EDEADLK)
		return -ETIMEDOUT;
	ib_dma_unmap_single(ibdev, wait->dma, len, DMA_TO_DEVICE);
	kfree(wait);
	return ret;
}

/*
 * Sends a heartbeat on @conn and says whether the peer took it: a send
 * that completes means the peer's queue pair is there and has a receive
 * posted. One that has not completed after RPAGE_HEARTBEAT_MISSES
 * intervals, or that fails, ends the connection (rpage_conn_send()
 * reports why: "outbound heartbeat: no completion for 25000 ms").
 */
void rpage_conn_heartbeat(struct rpage_conn *conn, const char *what)
{
	unsigned int ms = READ_ONCE(rpage_heartbeat_ms);
	struct rpage_msg_heartbeat hb = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_HEARTBEAT),
		.hdr.length = cpu_to_le32(sizeof(hb)),
		.seq = cpu_to_le64(++conn->hb_seq),
	};

	rpage_conn_send(conn, &hb, sizeof(hb), ms * RPAGE_HEARTBEAT_MISSES, what);
}

static void rpage_out_conn_attempt_done(struct rpage_out_conn *oc, int error,
					int event)
{
	oc->error = error;
	oc->event = event;
	complete(&oc->done);
}

static void rpage_out_conn_route_resolved(struct rpage_out_conn *oc)
{
	struct rpage_conn *conn = &oc->c;
	struct rdma_conn_param param = {};
	struct rpage_hello hello;
	int ret;

	ret = rpage_conn_create_qp(conn, conn->cm_id);
	if (!ret && conn->index == 0)
		ret = rpage_conn_setup_recvs(conn);
	if (ret) {
		rpage_out_conn_attempt_done(oc, ret, -1);
		return;
	}
	rpage_hello_init(&hello, conn->index, conn->peer->nr_conns);
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.initiator_depth = min_t(int, RPAGE_MAX_RD_ATOMIC,
				      conn->cm_id->device->attrs.max_qp_init_rd_atom);
	param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	ret = rdma_connect_locked(conn->cm_id, &param);
	if (ret)
		rpage_out_conn_attempt_done(oc, ret, -1);
}

static void rpage_out_conn_established(struct rpage_out_conn *oc,
				       struct rdma_cm_event *ev)
{
	struct rpage_conn *conn = &oc->c;
	struct rpage_hello hello;
	u32 reason;

	reason = rpage_hello_check(ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &hello);
	if (reason != RPAGE_REJECT_NONE) {
		pr_warn("peer %s: accepted with a %s; disconnecting\n",
			conn->peer->name, rpage_reject_name(reason));
		oc->reject_reason = reason;
		rpage_out_conn_attempt_done(oc, -EPROTO, ev->event);
		return;
	}
	rpage_peer_note_remote(conn->peer, &hello);
	rpage_conn_set_state(conn, RPAGE_CONN_CONNECTED);
	atomic64_inc(&conn->dev->counters.connects);
	rpage_out_conn_attempt_done(oc, 0, ev->event);
}

static void rpage_out_conn_rejected(struct rpage_out_conn *oc,
				    struct rdma_cm_event *ev)
{
	struct rpage_conn *conn = &oc->c;
	const struct rpage_reject *rej = NULL;
	u32 reason = RPAGE_REJECT_UNSPECIFIED;
	u8 len = 0;

	/* NULL unless the peer's rdma_cm refused us with data of its own. */
	rej = rdma_consumer_reject_data(conn->cm_id, ev, &len);
	if (rej && len >= sizeof(*rej) &&
	    le32_to_cpu(rej->magic) == RPAGE_PROTO_MAGIC) {
		reason = le16_to_cpu(rej->reason);
		if (reason == RPAGE_REJECT_VERSION)
			pr_warn_ratelimited("peer %s refused us: it speaks protocol %u.%u, we speak %u.%u\n",
					    conn->peer->name,
					    le16_to_cpu(rej->major),
					    le16_to_cpu(rej->minor),
					    RPAGE_PROTO_MAJOR, RPAGE_PROTO_MINOR);
		else
			pr_info_ratelimited("peer %s refused us: %s\n",
					    conn->peer->name,
					    rpage_reject_name(reason));
	}
	oc->reject_reason = reason;
	rpage_out_conn_attempt_done(oc, -ECONNREFUSED, ev->event);
}

/*
 * An event that ends the connection: during an attempt, the attempt;
 * once connected, the connection, which the peer then rebuilds.
 */
static void rpage_out_conn_ended(struct rpage_out_conn *oc,
				 struct rdma_cm_event *ev, int error)
{
	struct rpage_conn *conn = &oc->c;

	if (READ_ONCE(conn->state) == RPAGE_CONN_CONNECTED)
		rpage_peer_conn_lost(conn, "%s (status %d) on queue pair %u",
				     rdma_event_msg(ev->event), ev->status,
				     conn->index);
	else
		rpage_out_conn_attempt_done(oc, error, ev->event);
}

static int rpage_out_conn_cm_handler(struct rdma_cm_id *cm_id,
				     struct rdma_cm_event *ev)
{
	struct rpage_out_conn *oc = cm_id->context;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(cm_id, rpage_connect_timeout_ms);
		if (ret)
			rpage_out_conn_attempt_done(oc, ret, ev->event);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rpage_out_conn_route_resolved(oc);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rpage_out_conn_established(oc, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rpage_out_conn_rejected(oc, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		rpage_out_conn_ended(oc, ev, ev->status ? ev->status : -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rpage_out_conn_ended(oc, ev, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_ADDR_CHANGE:
		/* Our address moved: the route the queue pair uses is stale. */
		rpage_out_conn_ended(oc, ev, -ENETUNREACH);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* Normally torn down by the ib_client first. */
		rpage_out_conn_ended(oc, ev, -ENODEV);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * One attempt to connect @oc; the caller holds the peer's lock. Returns
 * 0 once established, else -errno with oc->event and oc->reject_reason
 * saying how it ended.
 */
int rpage_out_conn_connect(struct rpage_out_conn *oc)
{
	struct rpage_conn *conn = &oc->c;
	struct rpage_peer *peer = conn->peer;
	struct rdma_cm_id *cm_id;
	unsigned long timeout;
	int ret;

	oc->error = 0;
	oc->event = -1;
	oc->reject_reason = RPAGE_REJECT_NONE;
	reinit_completion(&oc->done);
	cm_id = rdma_create_id(&init_net, rpage_out_conn_cm_handler, oc,
			       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return PTR_ERR(cm_id);
	if (rpage_ack_timeout)
		rdma_set_ack_timeout(cm_id, rpage_ack_timeout);
	conn->closing = false;
	conn->cm_id = cm_id;
	rpage_conn_set_state(conn, RPAGE_CONN_CONNECTING);

	ret = rdma_resolve_addr(cm_id, NULL, (struct sockaddr *)&peer->addr,
				rpage_connect_timeout_ms);
	if (ret)
		return ret;
	/* Address, route and connect each have that timeout; allow all. */
	timeout = msecs_to_jiffies(3 * rpage_connect_timeout_ms);
	if (!rpage_wait_done(&oc->done, timeout))
		return -ETIMEDOUT;
	return oc->error;
}
