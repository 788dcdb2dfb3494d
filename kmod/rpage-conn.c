// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: peers and their RC connections.
 *
 * Each host opens its own queue pairs to every peer it reads from (the
 * outbound connections, one per CPU up to qps_per_peer) and accepts the
 * peer's queue pairs to it (inbound, see rpage-endpoint.c). So both
 * directions are independent: a host's reads only ever use the queue
 * pairs it opened, and the peer state shown is theirs.
 *
 * Connecting and tearing down run in rpage_wq under peer->lock; the
 * rdma_cm callbacks only advance a connection attempt and report how it
 * ended, since an rdma_cm id cannot be destroyed from its own callback.
 */
#include "rpage-pri.h"

#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* Bounds on what one connection asks of the device. */
#define RPAGE_MAX_QPS_PER_PEER	16
#define RPAGE_SEND_DEPTH	64
#define RPAGE_RECV_DEPTH	8
#define RPAGE_MAX_RD_ATOMIC	16

static LIST_HEAD(rpage_peers);
/* Protects rpage_peers; never held across a wait on the network. */
static DEFINE_MUTEX(rpage_peers_lock);
/* Peer ids are never reused while the module is loaded. */
static atomic_t rpage_next_peer_id = ATOMIC_INIT(0);

static const char *const rpage_peer_state_names[] = {
	[RPAGE_PEER_STATE_CONNECTING]	= "connecting",
	[RPAGE_PEER_STATE_CONNECTED]	= "connected",
	[RPAGE_PEER_STATE_RECONNECTING]	= "reconnecting",
	[RPAGE_PEER_STATE_FAILED]	= "failed",
	[RPAGE_PEER_STATE_DELETING]	= "deleting",
};

static const char *const rpage_reject_names[] = {
	[RPAGE_REJECT_NONE]		= "none",
	[RPAGE_REJECT_UNKNOWN_PEER]	= "unknown peer",
	[RPAGE_REJECT_VERSION]		= "incompatible protocol version",
	[RPAGE_REJECT_BAD_HELLO]	= "malformed hello",
	[RPAGE_REJECT_NO_RESOURCES]	= "no resources",
	[RPAGE_REJECT_UNSPECIFIED]	= "unspecified",
};

static const char *rpage_reject_name(u32 reason)
{
	if (reason < ARRAY_SIZE(rpage_reject_names))
		return rpage_reject_names[reason];
	return "unknown reason";
}

/*
 * The one place a peer changes state. Whitelisted transitions only: a
 * deleted peer stays deleted, and only an explicit re-add revives a
 * failed one.
 */
static bool rpage_peer_change_state(struct rpage_peer *peer,
				    enum rpage_peer_state new)
{
	enum rpage_peer_state old;
	bool allowed;

	spin_lock(&peer->state_lock);
	old = peer->state;
	switch (new) {
	case RPAGE_PEER_STATE_CONNECTED:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_RECONNECTING:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_CONNECTED ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_FAILED:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_DELETING:
		allowed = old != RPAGE_PEER_STATE_DELETING;
		break;
	default:
		allowed = false;
		break;
	}
	if (allowed)
		peer->state = new;
	spin_unlock(&peer->state_lock);

	if (allowed && old != new)
		pr_info("peer %s: %s -> %s\n", peer->name,
			rpage_peer_state_names[old], rpage_peer_state_names[new]);
	return allowed;
}

static enum rpage_peer_state rpage_peer_state(struct rpage_peer *peer)
{
	enum rpage_peer_state state;

	spin_lock(&peer->state_lock);
	state = peer->state;
	spin_unlock(&peer->state_lock);
	return state;
}

static void rpage_peer_release(struct kref *ref)
{
	struct rpage_peer *peer = container_of(ref, struct rpage_peer, ref);

	mutex_destroy(&peer->lock);
	mutex_destroy(&peer->inbound_lock);
	rpage_counters_free(&peer->counters);
	rpage_fault_counters_free(&peer->fault_counters);
	kfree(peer->conns);
	kfree(peer);
}

void rpage_peer_put(struct rpage_peer *peer)
{
	kref_put(&peer->ref, rpage_peer_release);
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
 * Creates the completion queue and queue pair of @conn on the device of
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
	 * the caller polls; everything else, control traffic, completes in
	 * a work queue.
	 */
	if (conn->inbound) {
		conn->cq = ib_alloc_cq(ibdev, conn,
				       RPAGE_SEND_DEPTH + RPAGE_RECV_DEPTH,
				       vector, IB_POLL_WORKQUEUE);
		conn->recv_cq = conn->cq;
	} else {
		conn->cq = ib_alloc_cq(ibdev, conn, RPAGE_SEND_DEPTH, vector,
				       IB_POLL_DIRECT);
		if (!IS_ERR(conn->cq)) {
			conn->recv_cq = ib_alloc_cq(ibdev, conn, RPAGE_RECV_DEPTH,
						    vector, IB_POLL_WORKQUEUE);
			if (IS_ERR(conn->recv_cq)) {
				ib_free_cq(conn->cq);
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
	ret = rdma_create_qp(cm_id, dev->pd, &attr);
	if (ret)
		goto err_cq;
	atomic_set(&conn->sq_free, RPAGE_SEND_DEPTH);
	conn->max_write_sge = max_sge;
	conn->max_read_sge = max_read_sge;
	conn->dev = dev;
	atomic_inc(&dev->users);
	return 0;

err_cq:
	if (conn->recv_cq != conn->cq)
		ib_free_cq(conn->recv_cq);
	ib_free_cq(conn->cq);
	conn->cq = NULL;
	conn->recv_cq = NULL;
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
		.lkey = conn->dev->pd->local_dma_lkey,
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

void rpage_conn_free_recvs(struct rpage_conn *conn)
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
 * The first queue pair a reader opens carries control messages both
 * ways: the pool table to the reader, acknowledgments back.
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

/*
 * Tears one connection down completely: after this no callback runs for
 * it and nothing of it is left on the device. Not from its own callback.
 */
void rpage_conn_destroy(struct rpage_conn *conn)
{
	struct rdma_cm_id *cm_id = conn->cm_id;

	if (!cm_id)
		return;
	if (conn->state == RPAGE_CONN_CONNECTED ||
	    conn->state == RPAGE_CONN_CONNECTING)
		rdma_disconnect(cm_id);
	/* A receive completing now must not repost on a dying queue pair. */
	spin_lock_bh(&conn->recv_lock);
	conn->closing = true;
	spin_unlock_bh(&conn->recv_lock);
	if (cm_id->qp)
		rdma_destroy_qp(cm_id);
	/* Waits for a callback still running on the id. */
	rdma_destroy_id(cm_id);
	conn->cm_id = NULL;
	if (conn->recv_cq && conn->recv_cq != conn->cq)
		ib_free_cq(conn->recv_cq);
	conn->recv_cq = NULL;
	if (conn->cq) {
		ib_free_cq(conn->cq);
		conn->cq = NULL;
	}
	if (conn->dev)
		rpage_conn_free_recvs(conn);
	if (conn->dev) {
		rpage_ibdev_unuse(conn->dev);
		conn->dev = NULL;
	}
	conn->state = RPAGE_CONN_IDLE;
}

static void rpage_conn_attempt_done(struct rpage_conn *conn, int error)
{
	conn->error = error;
	complete(&conn->done);
}

static void rpage_peer_schedule_connect(struct rpage_peer *peer,
					unsigned long delay)
{
	mod_delayed_work(rpage_wq, &peer->connect_work, delay);
}

static unsigned long rpage_reconnect_delay(void)
{
	unsigned int ms = READ_ONCE(rpage_reconnect_delay_ms);

	/* Jitter, so that hosts restarted together do not retry in step. */
	return msecs_to_jiffies(ms + get_random_u32_below(ms / 2 + 1));
}

static void rpage_conn_route_resolved(struct rpage_conn *conn)
{
	struct rpage_peer *peer = conn->peer;
	struct rdma_conn_param param = {};
	struct rpage_hello hello;
	int ret;

	ret = rpage_conn_create_qp(conn, conn->cm_id);
	if (!ret && conn->index == 0)
		ret = rpage_conn_setup_recvs(conn);
	if (ret) {
		rpage_conn_attempt_done(conn, ret);
		return;
	}
	rpage_hello_init(&hello, conn->index, peer->nr_conns);
	param.private_data = &hello;
	param.private_data_len = sizeof(hello);
	param.initiator_depth = min_t(int, RPAGE_MAX_RD_ATOMIC,
				      conn->cm_id->device->attrs.max_qp_init_rd_atom);
	param.responder_resources = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	ret = rdma_connect_locked(conn->cm_id, &param);
	if (ret)
		rpage_conn_attempt_done(conn, ret);
}

static void rpage_conn_established(struct rpage_conn *conn,
				   struct rdma_cm_event *ev)
{
	struct rpage_peer *peer = conn->peer;
	struct rpage_hello hello;
	u32 reason;

	reason = rpage_hello_check(ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &hello);
	if (reason != RPAGE_REJECT_NONE) {
		pr_warn("peer %s: accepted with a %s; disconnecting\n",
			peer->name, rpage_reject_name(reason));
		conn->reject_reason = reason;
		rpage_conn_attempt_done(conn, -EPROTO);
		return;
	}
	spin_lock(&peer->state_lock);
	peer->remote_node_id = le64_to_cpu(hello.node_id);
	peer->remote_proto = le16_to_cpu(hello.major) << 16 |
			     le16_to_cpu(hello.minor);
	spin_unlock(&peer->state_lock);
	conn->state = RPAGE_CONN_CONNECTED;
	atomic64_inc(&conn->dev->counters.connects);
	rpage_conn_attempt_done(conn, 0);
}

static void rpage_conn_rejected(struct rpage_conn *conn,
				struct rdma_cm_event *ev)
{
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
	conn->reject_reason = reason;
	rpage_conn_attempt_done(conn, -ECONNREFUSED);
}

static void rpage_conn_lost(struct rpage_conn *conn, int error)
{
	struct rpage_peer *peer = conn->peer;

	if (conn->state == RPAGE_CONN_CONNECTED) {
		conn->state = RPAGE_CONN_CLOSED;
		/* The work tears down the set and connects it again. */
		if (rpage_peer_change_state(peer, RPAGE_PEER_STATE_RECONNECTING))
			rpage_peer_schedule_connect(peer, 0);
	} else {
		rpage_conn_attempt_done(conn, error);
	}
}

static int rpage_conn_cm_handler(struct rdma_cm_id *cm_id,
				 struct rdma_cm_event *ev)
{
	struct rpage_conn *conn = cm_id->context;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(cm_id, rpage_connect_timeout_ms);
		if (ret)
			rpage_conn_attempt_done(conn, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rpage_conn_route_resolved(conn);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rpage_conn_established(conn, ev);
		break;
	case RDMA_CM_EVENT_REJECTED:
		rpage_conn_rejected(conn, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		rpage_conn_attempt_done(conn, ev->status ? ev->status : -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rpage_conn_lost(conn, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* Normally torn down by the ib_client first; not here. */
		rpage_conn_lost(conn, -ENODEV);
		break;
	default:
		break;
	}
	return 0;
}

/* One attempt to connect @conn; the caller holds peer->lock. */
static int rpage_conn_connect(struct rpage_conn *conn)
{
	struct rpage_peer *peer = conn->peer;
	struct rdma_cm_id *cm_id;
	unsigned long timeout;
	int ret;

	conn->error = 0;
	conn->reject_reason = RPAGE_REJECT_NONE;
	reinit_completion(&conn->done);
	cm_id = rdma_create_id(&init_net, rpage_conn_cm_handler, conn,
			       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return PTR_ERR(cm_id);
	conn->closing = false;
	conn->cm_id = cm_id;
	conn->state = RPAGE_CONN_CONNECTING;

	ret = rdma_resolve_addr(cm_id, NULL, (struct sockaddr *)&peer->addr,
				rpage_connect_timeout_ms);
	if (ret)
		return ret;
	/* Address, route and connect each have that timeout; allow all. */
	timeout = msecs_to_jiffies(3 * rpage_connect_timeout_ms);
	if (!wait_for_completion_timeout(&conn->done, timeout))
		return -ETIMEDOUT;
	return conn->error;
}

static void rpage_rpool_free(struct rpage_rpool *rpool)
{
	kvfree(rpool->mrs);
	kfree(rpool);
}

static void rpage_peer_clear_rpools(struct rpage_peer *peer)
{
	struct rpage_rpool *rpool, *tmp;
	LIST_HEAD(gone);

	spin_lock(&peer->rpools_lock);
	list_splice_init(&peer->rpools, &gone);
	spin_unlock(&peer->rpools_lock);
	list_for_each_entry_safe(rpool, tmp, &gone, entry)
		rpage_rpool_free(rpool);
}

/*
 * Takes the outbound set down. Reads and writes in flight are flushed by
 * moving the queue pairs to the error state, then waited for, so that
 * no one polls a completion queue being freed.
 */
static void rpage_peer_teardown_outbound(struct rpage_peer *peer)
{
	struct ib_qp_attr to_error = { .qp_state = IB_QPS_ERR };
	unsigned int i;

	lockdep_assert_held(&peer->lock);
	for (i = 0; i < peer->nr_conns; i++) {
		struct rpage_conn *conn = &peer->conns[i];

		if (conn->cm_id && conn->cm_id->qp)
			ib_modify_qp(conn->cm_id->qp, &to_error, IB_QP_STATE);
	}
	down_write(&peer->io_rwsem);
	for (i = 0; i < peer->nr_conns; i++)
		rpage_conn_destroy(&peer->conns[i]);
	up_write(&peer->io_rwsem);
	rpage_peer_clear_rpools(peer);
}

static void rpage_peer_connect_work(struct work_struct *work)
{
	struct rpage_peer *peer = container_of(to_delayed_work(work),
					       struct rpage_peer, connect_work);
	u32 reason = RPAGE_REJECT_NONE;
	unsigned int i;
	int ret = 0;

	mutex_lock(&peer->lock);
	switch (rpage_peer_state(peer)) {
	case RPAGE_PEER_STATE_CONNECTING:
	case RPAGE_PEER_STATE_RECONNECTING:
		break;
	default:
		goto out;
	}

	rpage_peer_teardown_outbound(peer);
	for (i = 0; i < peer->nr_conns; i++) {
		ret = rpage_conn_connect(&peer->conns[i]);
		if (ret) {
			reason = peer->conns[i].reject_reason;
			break;
		}
	}

	spin_lock(&peer->state_lock);
	peer->last_error = ret < 0 ? -ret : 0;
	if (reason != RPAGE_REJECT_NONE)
		peer->last_reject = reason;
	spin_unlock(&peer->state_lock);

	if (!ret) {
		if (rpage_peer_change_state(peer, RPAGE_PEER_STATE_CONNECTED))
			atomic64_inc(&peer->counters.connects);
		goto out;
	}
	rpage_peer_teardown_outbound(peer);
	if (reason != RPAGE_REJECT_NONE)
		atomic64_inc(&peer->counters.rejects);
	/* Retrying cannot fix an incompatible protocol: the operator must. */
	if (reason == RPAGE_REJECT_VERSION &&
	    rpage_peer_change_state(peer, RPAGE_PEER_STATE_FAILED))
		goto out;
	if (rpage_peer_change_state(peer, RPAGE_PEER_STATE_RECONNECTING))
		rpage_peer_schedule_connect(peer, rpage_reconnect_delay());
out:
	mutex_unlock(&peer->lock);
}

/* Finds the configured peer at @addr; returns a reference or NULL. */
struct rpage_peer *rpage_peer_find_by_addr(const struct sockaddr *addr)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (rpage_sockaddr_same_host((struct sockaddr *)&peer->addr, addr)) {
			kref_get(&peer->ref);
			mutex_unlock(&rpage_peers_lock);
			return peer;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return NULL;
}

/* Finds a configured peer by its id; returns a reference or NULL. */
struct rpage_peer *rpage_peer_get_by_id(u32 id)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (peer->id == id) {
			kref_get(&peer->ref);
			mutex_unlock(&rpage_peers_lock);
			return peer;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return NULL;
}

/* A read or write failed on the transport: start over with a new set. */
void rpage_peer_io_failed(struct rpage_peer *peer)
{
	if (rpage_peer_change_state(peer, RPAGE_PEER_STATE_RECONNECTING))
		rpage_peer_schedule_connect(peer, 0);
}

static int rpage_peer_pool_add(struct rpage_peer *peer,
			       const struct rpage_msg_pool_add *msg, u32 len)
{
	u64 length = le64_to_cpu(msg->length);
	u64 mr_bytes = le64_to_cpu(msg->mr_bytes);
	u32 nr_mrs = le32_to_cpu(msg->nr_mrs);
	u32 first = le32_to_cpu(msg->first_mr);
	u32 count = le32_to_cpu(msg->count);
	u64 id = le64_to_cpu(msg->pool_id);
	struct rpage_rpool *rpool, *fresh = NULL, *old = NULL;
	u32 i;

	if (len < sizeof(*msg) ||
	    len != sizeof(*msg) + (u64)count * sizeof(msg->mrs[0]) ||
	    !length || length % RPAGE_MSG_MR_ALIGN ||
	    !mr_bytes || mr_bytes % RPAGE_MSG_MR_ALIGN ||
	    !nr_mrs || nr_mrs > RPAGE_MSG_MAX_MRS ||
	    nr_mrs != DIV_ROUND_UP_ULL(length, mr_bytes) ||
	    (u64)first + count > nr_mrs ||
	    !rpage_msg_pool_flags_supported(le32_to_cpu(msg->flags)))
		return -EPROTO;

	if (first == 0) {
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
		if (!fresh)
			return -ENOMEM;
		fresh->mrs = kvcalloc(nr_mrs, sizeof(*fresh->mrs), GFP_KERNEL);
		if (!fresh->mrs) {
			kfree(fresh);
			return -ENOMEM;
		}
		fresh->id = id;
		fresh->length = length;
		fresh->mr_bytes = mr_bytes;
		fresh->flags = le32_to_cpu(msg->flags);
		fresh->nr_mrs = nr_mrs;
	}

	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id == id) {
			old = rpool;
			break;
		}
	}
	if (fresh) {
		/* A pool announced again starts over. */
		if (old)
			list_del(&old->entry);
		list_add_tail(&fresh->entry, &peer->rpools);
		rpool = fresh;
	} else {
		/* The next regions of a pool must follow the ones before. */
		if (!old || old->length != length || old->mr_bytes != mr_bytes ||
		    old->received != first) {
			spin_unlock(&peer->rpools_lock);
			return -EPROTO;
		}
		rpool = old;
		old = NULL;
	}
	for (i = 0; i < count; i++) {
		rpool->mrs[first + i].iova = le64_to_cpu(msg->mrs[i].iova);
		rpool->mrs[first + i].rkey = le32_to_cpu(msg->mrs[i].rkey);
	}
	rpool->received = first + count;
	spin_unlock(&peer->rpools_lock);

	if (old) {
		kvfree(old->mrs);
		kfree(old);
	}
	return 0;
}

/**
 * struct rpage_ack_work - acknowledges a withdrawn pool to its exporter
 * @work: runs rpage_ack_work_fn().
 * @peer: the exporter; a reference is held.
 * @pool_id: the pool.
 */
struct rpage_ack_work {
	struct work_struct work;
	struct rpage_peer *peer;
	u64 pool_id;
};

/**
 * struct rpage_ack_send - an acknowledgment on its way
 * @req: its run on the queue pair.
 * @op: its SEND.
 * @sge: @msg, as the device sees it.
 * @msg: the message.
 *
 * Allocated: if the device never gives the message back, none of it may
 * be reused.
 */
struct rpage_ack_send {
	struct rpage_io_req req;
	struct rpage_io_op op;
	struct ib_sge sge;
	struct rpage_msg_pool_del_ack msg;
};

/*
 * Sends the acknowledgment on the first outbound queue pair (the one the
 * exporter receives control messages on), whose send completions nobody
 * reaps but their poster: rpage_io_run() polls for it as for a READ.
 */
static void rpage_ack_work_fn(struct work_struct *work)
{
	struct rpage_ack_work *aw = container_of(work, struct rpage_ack_work, work);
	struct rpage_peer *peer = aw->peer;
	struct rpage_conn *conn = &peer->conns[0];
	struct rpage_ack_send *ack;
	int ret = 0;
	u64 dma;

	ack = kzalloc(sizeof(*ack), GFP_KERNEL);
	down_read(&peer->io_rwsem);
	if (!ack || READ_ONCE(peer->state) != RPAGE_PEER_STATE_CONNECTED ||
	    !conn->cm_id || conn->state != RPAGE_CONN_CONNECTED)
		goto out;
	ack->msg.hdr.type = cpu_to_le16(RPAGE_MSG_POOL_DEL_ACK);
	ack->msg.hdr.length = cpu_to_le32(sizeof(ack->msg));
	ack->msg.pool_id = cpu_to_le64(aw->pool_id);
	dma = ib_dma_map_single(conn->dev->ibdev, &ack->msg, sizeof(ack->msg),
				DMA_TO_DEVICE);
	if (ib_dma_mapping_error(conn->dev->ibdev, dma))
		goto out;
	ack->sge.addr = dma;
	ack->sge.length = sizeof(ack->msg);
	ack->sge.lkey = conn->dev->pd->local_dma_lkey;
	ack->req.conn = conn;
	rpage_io_build_send(&ack->req, &ack->sge, &ack->op);
	ret = rpage_io_run(&ack->req, &ack->op, 1);
	if (ret == -EDEADLK) {
		/* The device never let go of it: leave it be. */
		up_read(&peer->io_rwsem);
		rpage_peer_io_failed(peer);
		goto out_put;
	}
	ib_dma_unmap_single(conn->dev->ibdev, dma, sizeof(ack->msg),
			    DMA_TO_DEVICE);
out:
	up_read(&peer->io_rwsem);
	kfree(ack);
	/* A SEND that failed left the queue pair in error: reconnect. */
	if (rpage_io_transport_error(ret))
		rpage_peer_io_failed(peer);
out_put:
	rpage_peer_put(peer);
	kfree(aw);
}

static void rpage_peer_ack_pool(struct rpage_peer *peer, u64 pool_id)
{
	struct rpage_ack_work *aw;

	aw = kzalloc(sizeof(*aw), GFP_KERNEL);
	if (!aw)
		return;		/* the exporter stops waiting after a timeout */
	kref_get(&peer->ref);
	aw->peer = peer;
	aw->pool_id = pool_id;
	INIT_WORK(&aw->work, rpage_ack_work_fn);
	queue_work(rpage_wq, &aw->work);
}

/*
 * A read or write is done with @rpool; the last one out of a withdrawn
 * pool acknowledges and frees it.
 */
void rpage_rpool_put(struct rpage_peer *peer, struct rpage_rpool *rpool)
{
	bool last;

	spin_lock(&peer->rpools_lock);
	last = !--rpool->inflight && rpool->withdrawn;
	spin_unlock(&peer->rpools_lock);
	if (last) {
		rpage_peer_ack_pool(peer, rpool->id);
		rpage_rpool_free(rpool);
	}
}

static int rpage_peer_pool_del(struct rpage_peer *peer,
			       const struct rpage_msg_pool_del *msg, u32 len)
{
	struct rpage_rpool *rpool, *idle = NULL;
	u64 id = le64_to_cpu(msg->pool_id);
	bool busy = false;

	if (len != sizeof(*msg))
		return -EPROTO;
	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id == id) {
			list_del(&rpool->entry);
			rpool->withdrawn = true;
			busy = rpool->inflight;
			if (!busy)
				idle = rpool;
			break;
		}
	}
	spin_unlock(&peer->rpools_lock);
	if (idle)
		rpage_rpool_free(idle);
	/* Otherwise the last read or write in flight acknowledges. */
	if (!busy)
		rpage_peer_ack_pool(peer, id);
	return 0;
}

/*
 * A control message from the peer: validated before anything is used,
 * and only in the direction it belongs to (@from_reader: it came on a
 * queue pair the peer opened to read from us).
 */
static int rpage_peer_handle_msg(struct rpage_peer *peer, bool from_reader,
				 const void *buf, u32 len)
{
	const struct rpage_msg_hdr *hdr = buf;
	const struct rpage_msg_pool_del_ack *ack = buf;

	if (len < sizeof(*hdr) || le32_to_cpu(hdr->length) != len)
		return -EPROTO;
	switch (le16_to_cpu(hdr->type)) {
	case RPAGE_MSG_POOL_ADD:
		return from_reader ? -EPROTO : rpage_peer_pool_add(peer, buf, len);
	case RPAGE_MSG_POOL_DEL:
		return from_reader ? -EPROTO : rpage_peer_pool_del(peer, buf, len);
	case RPAGE_MSG_POOL_DEL_ACK:
		if (!from_reader || len != sizeof(*ack))
			return -EPROTO;
		rpage_pools_acked(le64_to_cpu(ack->pool_id));
		return 0;
	default:
		return -EPROTO;
	}
}

void rpage_conn_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_recv *recv = container_of(wc->wr_cqe, struct rpage_recv,
					       cqe);
	struct rpage_conn *conn = recv->conn;
	struct ib_device *ibdev = conn->dev->ibdev;
	int ret;

	/* Flushed: the connection is going down and takes the buffer along. */
	if (wc->status != IB_WC_SUCCESS)
		return;
	ib_dma_sync_single_for_cpu(ibdev, recv->dma, RPAGE_MSG_MAX,
				   DMA_FROM_DEVICE);
	ret = rpage_peer_handle_msg(conn->peer, conn->inbound, recv->buf,
				    min_t(u32, wc->byte_len, RPAGE_MSG_MAX));
	if (ret)
		pr_warn_ratelimited("peer %s: dropped a control message (%d bytes): %d\n",
				    conn->peer->name, wc->byte_len, ret);
	ib_dma_sync_single_for_device(ibdev, recv->dma, RPAGE_MSG_MAX,
				      DMA_FROM_DEVICE);
	/* Fails only when the queue pair is in error: nothing to do then. */
	rpage_conn_post_recv(recv);
}

static u32 rpage_rpools_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_remote_pool_info *infos = entries;
	struct rpage_rpool *rpool;
	struct rpage_peer *peer;
	u32 count = 0;

	list_for_each_entry(peer, &rpage_peers, entry) {
		spin_lock(&peer->rpools_lock);
		list_for_each_entry(rpool, &peer->rpools, entry) {
			if (rpool->received != rpool->nr_mrs)
				continue;
			if (count < filled) {
				struct rpage_remote_pool_info *info = &infos[count];

				strscpy(info->peer, peer->name, sizeof(info->peer));
				info->peer_id = peer->id;
				info->id = rpool->id;
				info->length = rpool->length;
				info->flags = rpool->flags;
			}
			count++;
		}
		spin_unlock(&peer->rpools_lock);
	}
	return count;
}

/**
 * struct rpage_peers_lister - one per-peer list of counters
 * @entry_size: the size of one UAPI entry.
 * @fill_entry: writes @peer's entry at @entry.
 */
struct rpage_peers_lister {
	size_t entry_size;
	void (*fill_entry)(const struct rpage_peer *peer, void *entry);
};

static u32 rpage_peers_list_fill(void *entries, u32 filled, void *ctx)
{
	const struct rpage_peers_lister *lister = ctx;
	struct rpage_peer *peer;
	u32 count = 0;

	list_for_each_entry(peer, &rpage_peers, entry) {
		if (count < filled)
			lister->fill_entry(peer, entries +
					   count * lister->entry_size);
		count++;
	}
	return count;
}

static long rpage_peers_list_answer(void __user *argp,
				    const struct rpage_peers_lister *lister)
{
	return rpage_list_answer(argp, lister->entry_size, &rpage_peers_lock,
				 rpage_peers_list_fill, (void *)lister);
}

static void rpage_peer_stats_entry(const struct rpage_peer *peer, void *entry)
{
	struct rpage_peer_stats *stats = entry;

	strscpy(stats->name, peer->name, sizeof(stats->name));
	stats->peer_id = peer->id;
	rpage_counters_sum(&peer->counters, &stats->stats);
}

long rpage_ioctl_peer_stats(struct rpage_file *rfile, void __user *argp)
{
	static const struct rpage_peers_lister lister = {
		.entry_size = sizeof(struct rpage_peer_stats),
		.fill_entry = rpage_peer_stats_entry,
	};

	return rpage_peers_list_answer(argp, &lister);
}

static void rpage_peer_fault_stats_entry(const struct rpage_peer *peer,
					 void *entry)
{
	struct rpage_peer_fault_stats *stats = entry;

	strscpy(stats->name, peer->name, sizeof(stats->name));
	stats->peer_id = peer->id;
	rpage_fault_counters_sum(peer->fault_counters, &stats->stats);
}

long rpage_ioctl_peer_fault_stats(struct rpage_file *rfile, void __user *argp)
{
	static const struct rpage_peers_lister lister = {
		.entry_size = sizeof(struct rpage_peer_fault_stats),
		.fill_entry = rpage_peer_fault_stats_entry,
	};

	return rpage_peers_list_answer(argp, &lister);
}

long rpage_ioctl_remote_pool_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_remote_pool_info),
				 &rpage_peers_lock, rpage_rpools_fill, NULL);
}

/* Inbound connections: state kept on the peer for `rpagectl peer show`. */
void rpage_peer_inbound_established(struct rpage_conn *conn)
{
	mutex_lock(&conn->peer->inbound_lock);
	if (conn->state == RPAGE_CONN_CONNECTING)
		conn->state = RPAGE_CONN_CONNECTED;
	mutex_unlock(&conn->peer->inbound_lock);
	atomic64_inc(&conn->dev->counters.connects);
	/* The reader's first queue pair carries our pool table to it. */
	if (conn->index == 0)
		rpage_pools_channel_up();
}

/*
 * Every inbound connection that carries a pool table to a reader (the
 * reader's first queue pair, connected and not being torn down), in a
 * kcalloc'ed array of *@nr the caller frees. The caller holds
 * rpage_pools_lock, which keeps them from being destroyed until it drops
 * it (see rpage_pools_barrier()).
 */
struct rpage_conn **rpage_channels_collect(unsigned int *nr)
{
	struct rpage_conn **chans = NULL;
	struct rpage_peer *peer;
	struct rpage_conn *conn;
	unsigned int max = 0;

	lockdep_assert_held(&rpage_pools_lock);
	*nr = 0;
	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry)
		max++;
	if (max)
		chans = kcalloc(max, sizeof(*chans), GFP_KERNEL);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (!chans)
			break;
		mutex_lock(&peer->inbound_lock);
		list_for_each_entry(conn, &peer->inbound, entry) {
			if (conn->index == 0 && !conn->claimed &&
			    conn->state == RPAGE_CONN_CONNECTED) {
				chans[(*nr)++] = conn;
				break;
			}
		}
		mutex_unlock(&peer->inbound_lock);
	}
	mutex_unlock(&rpage_peers_lock);
	return chans;
}

static void rpage_inbound_release_work(struct work_struct *work)
{
	struct rpage_conn *conn = container_of(work, struct rpage_conn,
					       release_work);
	struct rpage_peer *peer = conn->peer;

	rpage_pools_barrier();
	rpage_conn_destroy(conn);
	kfree(conn);
	rpage_peer_put(peer);
}

/*
 * The peer closed an inbound connection (or it failed): unless the peer
 * is being torn down by us already, release it from the work queue.
 */
void rpage_peer_inbound_closed(struct rpage_conn *conn)
{
	struct rpage_peer *peer = conn->peer;
	bool ours = false;

	mutex_lock(&peer->inbound_lock);
	if (!conn->claimed) {
		conn->claimed = true;
		list_del_init(&conn->entry);
		conn->state = RPAGE_CONN_CLOSED;
		ours = true;
	}
	mutex_unlock(&peer->inbound_lock);
	if (ours) {
		INIT_WORK(&conn->release_work, rpage_inbound_release_work);
		queue_work(rpage_wq, &conn->release_work);
	}
}

/* Takes down the inbound connections of @peer (on @only_dev, if set). */
static void rpage_peer_teardown_inbound(struct rpage_peer *peer,
					struct rpage_ibdev *only_dev)
{
	struct rpage_conn *conn, *tmp;
	LIST_HEAD(doomed);

	mutex_lock(&peer->inbound_lock);
	list_for_each_entry_safe(conn, tmp, &peer->inbound, entry) {
		if (conn->claimed || (only_dev && conn->dev != only_dev))
			continue;
		/* From now on a disconnect callback leaves it to us. */
		conn->claimed = true;
		list_move(&conn->entry, &doomed);
	}
	mutex_unlock(&peer->inbound_lock);

	if (!list_empty(&doomed))
		rpage_pools_barrier();
	list_for_each_entry_safe(conn, tmp, &doomed, entry) {
		list_del_init(&conn->entry);
		rpage_conn_destroy(conn);
		kfree(conn);
		rpage_peer_put(peer);
	}
}

static bool rpage_peer_name_valid(const char *name)
{
	size_t len = strnlen(name, RPAGE_NAME_MAX);
	size_t i;

	if (!len || len == RPAGE_NAME_MAX)
		return false;
	/* ASCII only: the kernel's isalnum() takes Latin-1 letters too. */
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

static unsigned int rpage_peer_nr_qps(void)
{
	unsigned int n = rpage_qps_per_peer ? rpage_qps_per_peer :
			 num_online_cpus();

	return clamp(n, 1U, (unsigned int)RPAGE_MAX_QPS_PER_PEER);
}

static struct rpage_peer *rpage_peer_alloc(const struct rpage_peer_config *cfg,
					   const struct sockaddr_storage *addr)
{
	struct rpage_peer *peer;
	unsigned int i;

	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return NULL;
	peer->nr_conns = rpage_peer_nr_qps();
	peer->conns = kcalloc(peer->nr_conns, sizeof(*peer->conns), GFP_KERNEL);
	if (!peer->conns || rpage_counters_init(&peer->counters) ||
	    rpage_fault_counters_init(&peer->fault_counters)) {
		rpage_counters_free(&peer->counters);
		kfree(peer->conns);
		kfree(peer);
		return NULL;
	}
	kref_init(&peer->ref);
	strscpy(peer->name, cfg->name, sizeof(peer->name));
	peer->uaddr = cfg->addr;
	if (!peer->uaddr.port)
		peer->uaddr.port = RPAGE_DEFAULT_PORT;
	peer->addr = *addr;
	mutex_init(&peer->lock);
	spin_lock_init(&peer->state_lock);
	peer->state = RPAGE_PEER_STATE_CONNECTING;
	INIT_DELAYED_WORK(&peer->connect_work, rpage_peer_connect_work);
	mutex_init(&peer->inbound_lock);
	INIT_LIST_HEAD(&peer->inbound);
	peer->id = atomic_inc_return(&rpage_next_peer_id);
	init_rwsem(&peer->io_rwsem);
	spin_lock_init(&peer->rpools_lock);
	INIT_LIST_HEAD(&peer->rpools);
	for (i = 0; i < peer->nr_conns; i++) {
		struct rpage_conn *conn = &peer->conns[i];

		conn->kind = RPAGE_CM_CONN;
		conn->peer = peer;
		conn->index = i;
		spin_lock_init(&conn->recv_lock);
		init_completion(&conn->done);
		INIT_LIST_HEAD(&conn->entry);
	}
	return peer;
}

long rpage_ioctl_peer_add(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_peer_config cfg;
	struct sockaddr_storage addr;
	struct rpage_peer *peer, *other;
	int ret;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || cfg.reserved0 ||
	    memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)))
		return -EINVAL;
	if (!rpage_peer_name_valid(cfg.name))
		return -EINVAL;
	ret = rpage_addr_to_sockaddr(&cfg.addr, &addr);
	if (ret)
		return ret;

	peer = rpage_peer_alloc(&cfg, &addr);
	if (!peer)
		return -ENOMEM;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(other, &rpage_peers, entry) {
		if (!strcmp(other->name, peer->name) ||
		    rpage_sockaddr_same_host((struct sockaddr *)&other->addr,
					     (struct sockaddr *)&addr)) {
			mutex_unlock(&rpage_peers_lock);
			rpage_peer_put(peer);
			return -EEXIST;
		}
	}
	list_add_tail(&peer->entry, &rpage_peers);
	rpage_peer_schedule_connect(peer, 0);
	mutex_unlock(&rpage_peers_lock);
	pr_info("peer %s added (%pISpc, %u queue pairs)\n", peer->name,
		&peer->addr, peer->nr_conns);
	return 0;
}

/* Stops and disconnects a peer already unlinked from rpage_peers. */
static void rpage_peer_shutdown(struct rpage_peer *peer)
{
	rpage_peer_change_state(peer, RPAGE_PEER_STATE_DELETING);
	cancel_delayed_work_sync(&peer->connect_work);
	mutex_lock(&peer->lock);
	rpage_peer_teardown_outbound(peer);
	mutex_unlock(&peer->lock);
	rpage_peer_teardown_inbound(peer, NULL);
	/* A disconnect seen before the teardown may have queued it again. */
	cancel_delayed_work_sync(&peer->connect_work);
	pr_info("peer %s deleted\n", peer->name);
	rpage_peer_put(peer);
}

long rpage_ioctl_peer_del(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_peer_config cfg;
	struct rpage_peer *peer;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || cfg.reserved0 ||
	    memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)) ||
	    memchr_inv(&cfg.addr, 0, sizeof(cfg.addr)))
		return -EINVAL;
	if (!rpage_peer_name_valid(cfg.name))
		return -EINVAL;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (!strcmp(peer->name, cfg.name)) {
			list_del(&peer->entry);
			mutex_unlock(&rpage_peers_lock);
			rpage_peer_shutdown(peer);
			return 0;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return -ENOENT;
}

static void rpage_peer_fill_info(struct rpage_peer_info *info,
				 struct rpage_peer *peer)
{
	struct rpage_conn *conn;
	unsigned int i;

	strscpy(info->name, peer->name, sizeof(info->name));
	info->addr = peer->uaddr;
	spin_lock(&peer->state_lock);
	info->state = peer->state == RPAGE_PEER_STATE_DELETING ?
		      RPAGE_PEER_RECONNECTING : peer->state;
	info->last_reject = peer->last_reject;
	info->last_error = peer->last_error;
	info->remote_node_id = peer->remote_node_id;
	info->remote_proto = peer->remote_proto;
	spin_unlock(&peer->state_lock);
	info->qps = peer->nr_conns;
	for (i = 0; i < peer->nr_conns; i++)
		if (READ_ONCE(peer->conns[i].state) == RPAGE_CONN_CONNECTED)
			info->qps_connected++;
	mutex_lock(&peer->inbound_lock);
	list_for_each_entry(conn, &peer->inbound, entry)
		if (conn->state == RPAGE_CONN_CONNECTED)
			info->qps_inbound++;
	mutex_unlock(&peer->inbound_lock);
	info->connects = atomic64_read(&peer->counters.connects);
	info->rejects = atomic64_read(&peer->counters.rejects);
	info->id = peer->id;
}

static u32 rpage_peers_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_peer_info *infos = entries;
	struct rpage_peer *peer;
	u32 count = 0;

	list_for_each_entry(peer, &rpage_peers, entry) {
		if (count < filled)
			rpage_peer_fill_info(&infos[count], peer);
		count++;
	}
	return count;
}

long rpage_ioctl_peer_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_peer_info),
				 &rpage_peers_lock, rpage_peers_fill, NULL);
}

/*
 * @dev is going away: take every queue pair on it down now, before the
 * device is, and let the outbound sets reconnect on what remains.
 */
void rpage_peers_device_removed(struct rpage_ibdev *dev)
{
	struct rpage_peer **peers;
	struct rpage_peer *peer;
	unsigned int n = 0, i;
	bool hit;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry)
		n++;
	peers = kcalloc(n, sizeof(*peers), GFP_KERNEL | __GFP_NOFAIL);
	n = 0;
	list_for_each_entry(peer, &rpage_peers, entry) {
		kref_get(&peer->ref);
		peers[n++] = peer;
	}
	mutex_unlock(&rpage_peers_lock);

	for (i = 0; i < n; i++) {
		unsigned int c;

		peer = peers[i];
		mutex_lock(&peer->lock);
		hit = false;
		for (c = 0; c < peer->nr_conns; c++)
			hit |= peer->conns[c].dev == dev;
		if (hit) {
			rpage_peer_teardown_outbound(peer);
			if (rpage_peer_change_state(peer, RPAGE_PEER_STATE_RECONNECTING))
				rpage_peer_schedule_connect(peer, rpage_reconnect_delay());
		}
		mutex_unlock(&peer->lock);
		rpage_peer_teardown_inbound(peer, dev);
		rpage_peer_put(peer);
	}
	kfree(peers);
}

/* A device arrived: peers waiting to reconnect may try at once. */
void rpage_peers_device_added(void)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry)
		if (rpage_peer_state(peer) == RPAGE_PEER_STATE_RECONNECTING)
			rpage_peer_schedule_connect(peer, 0);
	mutex_unlock(&rpage_peers_lock);
}

void rpage_peers_exit(void)
{
	struct rpage_peer *peer;

	for (;;) {
		mutex_lock(&rpage_peers_lock);
		peer = list_first_entry_or_null(&rpage_peers, struct rpage_peer,
						entry);
		if (peer)
			list_del(&peer->entry);
		mutex_unlock(&rpage_peers_lock);
		if (!peer)
			break;
		rpage_peer_shutdown(peer);
	}
	/* Inbound connections released by their own disconnects. */
	flush_workqueue(rpage_wq);
}
