// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: endpoints, the addresses rpage.ko listens on, and the
 * connections peers open to them over RDMA (an endpoint's TCP listener
 * is rpage-tcp.c's).
 *
 * A connection is accepted only from the address of a configured peer,
 * with a hello of a compatible protocol; anything else is refused with a
 * reason the initiator can read, and counted.
 */
#include "rpage-pri.h"

#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/ipv6.h>
#include <rdma/ib_cm.h>

#define RPAGE_LISTEN_BACKLOG	128
#define RPAGE_RELISTEN_DELAY	(2 * HZ)
/*
 * After a device came: how many times the endpoints that found none for
 * their address try again, RPAGE_RELISTEN_DELAY apart (a device learns
 * its addresses after the core announces it).
 */
#define RPAGE_RELISTEN_TRIES	5

/**
 * struct rpage_listener - an endpoint: an address rpage.ko listens on
 * @kind: RPAGE_CM_ENDPOINT.
 * @entry: link in rpage_endpoints.
 * @uaddr: the address, as configured (port filled in).
 * @addr: the same, as a socket address.
 * @lock: protects @cm_id and @state against the relisten work and
 *	device removal.
 * @cm_id: the listening rdma_cm id, NULL while down.
 * @state: RPAGE_ENDPOINT_*.
 * @relisten_work: listens again after the device went away.
 * @transport: what it was asked to listen with, RPAGE_TRANSPORT_*.
 * @tcp: its TCP listener, NULL if it has none.
 * @cnt: connections accepted and refused, over either transport.
 */
struct rpage_listener {
	enum rpage_cm_kind kind;
	struct list_head entry;
	struct rpage_addr uaddr;
	struct sockaddr_storage addr;
	struct mutex lock;		/* see kernel-doc */
	struct rdma_cm_id *cm_id;
	u32 state;
	struct delayed_work relisten_work;
	u32 transport;
	struct rpage_tcp_listener *tcp;
	struct rpage_endpoint_counters cnt;
};

static LIST_HEAD(rpage_endpoints);
/* Protects rpage_endpoints and rpage_endpoints_tries. */
static DEFINE_MUTEX(rpage_endpoints_lock);
static void rpage_endpoints_relisten_fn(struct work_struct *work);
/* Takes up a new device: see rpage_endpoints_device_added(). */
static DECLARE_DELAYED_WORK(rpage_endpoints_relisten, rpage_endpoints_relisten_fn);
static unsigned int rpage_endpoints_tries;

/* Counts a connection refused for @reason (RPAGE_REJECT_*). */
void rpage_endpoint_count_reject(struct rpage_endpoint_counters *c, u32 reason)
{
	switch (reason) {
	case RPAGE_REJECT_UNKNOWN_PEER:
		atomic64_inc(&c->rejected_unknown);
		break;
	case RPAGE_REJECT_VERSION:
		atomic64_inc(&c->rejected_version);
		break;
	default:
		atomic64_inc(&c->rejected_other);
		break;
	}
}

static int rpage_endpoint_reject(struct rdma_cm_id *cm_id, u32 reason)
{
	struct rpage_reject rej = {
		.magic = cpu_to_le32(RPAGE_PROTO_MAGIC),
		.major = cpu_to_le16(RPAGE_PROTO_MAJOR),
		.minor = cpu_to_le16(RPAGE_PROTO_MINOR),
		.reason = cpu_to_le16(reason),
	};
	struct rpage_ibdev *dev = rpage_ibdev_get(cm_id->device);

	if (dev) {
		atomic64_inc(&dev->counters.rejects);
		rpage_ibdev_put(dev);
	}

	rdma_reject(cm_id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
	/* Non-zero: rdma_cm destroys the refused id for us. */
	return 1;
}

static int rpage_endpoint_connect_request(struct rpage_listener *ep,
					  struct rdma_cm_id *cm_id,
					  struct rdma_cm_event *ev)
{
	struct sockaddr_storage src = cm_id->route.addr.dst_addr;
	struct sockaddr *from = (struct sockaddr *)&src;
	struct sockaddr_in6 *src6 = (struct sockaddr_in6 *)&src;
	struct rdma_conn_param param = {};
	struct rpage_hello hello, reply;
	struct rpage_in_conn *in;
	struct rpage_peer *peer;
	u32 reason;
	int ret;

	/*
	 * rdma_cm leaves a link-local source without its scope: it is the
	 * interface the request came in on, for a peer configured on a link.
	 */
	if (src.ss_family == AF_INET6 && !src6->sin6_scope_id &&
	    __ipv6_addr_needs_scope_id(ipv6_addr_type(&src6->sin6_addr)))
		src6->sin6_scope_id = cm_id->route.addr.dev_addr.bound_dev_if;
	reason = rpage_hello_check(ev->param.conn.private_data,
				   ev->param.conn.private_data_len, &hello);
	if (reason == RPAGE_REJECT_VERSION) {
		atomic64_inc(&ep->cnt.rejected_version);
		pr_warn_ratelimited("endpoint %pISpc: refused %pISc: it speaks protocol %u.%u, we speak %u.%u\n",
				    &ep->addr, from, le16_to_cpu(hello.major),
				    le16_to_cpu(hello.minor), RPAGE_PROTO_MAJOR,
				    RPAGE_PROTO_MINOR);
		return rpage_endpoint_reject(cm_id, reason);
	}
	if (reason != RPAGE_REJECT_NONE) {
		atomic64_inc(&ep->cnt.rejected_other);
		pr_warn_ratelimited("endpoint %pISpc: refused %pISc: malformed hello\n",
				    &ep->addr, from);
		return rpage_endpoint_reject(cm_id, reason);
	}

	peer = rpage_peer_find_by_addr(from);
	if (!peer) {
		atomic64_inc(&ep->cnt.rejected_unknown);
		pr_info_ratelimited("endpoint %pISpc: refused %pISc: not a configured peer\n",
				    &ep->addr, from);
		return rpage_endpoint_reject(cm_id, RPAGE_REJECT_UNKNOWN_PEER);
	}

	if (peer->ops != &rpage_rdma_transport) {
		pr_info_ratelimited("endpoint %pISpc: refused %pISc: peer %s is configured with transport %s\n",
				    &ep->addr, from, peer->name, peer->ops->name);
		rpage_peer_put(peer);
		atomic64_inc(&ep->cnt.rejected_other);
		return rpage_endpoint_reject(cm_id, RPAGE_REJECT_TRANSPORT);
	}

	if (!rpage_peer_inbound_room(peer, le16_to_cpu(hello.qp_index))) {
		rpage_peer_put(peer);
		atomic64_inc(&ep->cnt.rejected_other);
		return rpage_endpoint_reject(cm_id, RPAGE_REJECT_NO_RESOURCES);
	}

	in = kzalloc(sizeof(*in), GFP_KERNEL);
	if (!in)
		goto err_peer;
	rpage_conn_init(&in->c, peer, true, le16_to_cpu(hello.qp_index));
	in->c.state = RPAGE_CONN_CONNECTING;
	INIT_LIST_HEAD(&in->entry);
	rpage_pools_channel_init(in);
	if (rpage_conn_create_qp(&in->c, cm_id))
		goto err_conn;
	in->c.cm_id = cm_id;
	/* Control messages come and go on the reader's first queue pair. */
	if (in->c.index == 0 && rpage_conn_setup_recvs(&in->c))
		goto err_qp;
	/* Taken by the queue pair when the accept moves it to RTS. */
	if (rpage_ack_timeout)
		rdma_set_ack_timeout(cm_id, rpage_ack_timeout);

	rpage_hello_init(&reply, in->c.index, le16_to_cpu(hello.nr_qps));
	param.private_data = &reply;
	param.private_data_len = sizeof(reply);
	/*
	 * The request's depths are already ours to give: its
	 * responder_resources are the READs the initiator wants in flight
	 * (it becomes the initiator's max_rd_atomic), its initiator_depth
	 * those it will answer. Swapping them left every reader with one
	 * READ in flight per queue pair.
	 */
	param.responder_resources = min_t(int, ev->param.conn.responder_resources,
					  cm_id->device->attrs.max_qp_rd_atom);
	param.initiator_depth = min_t(int, ev->param.conn.initiator_depth,
				      cm_id->device->attrs.max_qp_init_rd_atom);
	ret = rdma_accept(cm_id, &param);
	/*
	 * Listed only once accepted: from then on others may tear it down,
	 * which waits for this callback to return. A peer being deleted
	 * takes no new connection.
	 */
	if (!ret)
		ret = rpage_peer_inbound_add(peer, in);
	if (ret) {
		/* Non-zero: rdma_cm destroys the id, and we the rest. */
		rpage_conn_abort(&in->c);
		kfree(in);
		rpage_peer_put(peer);
		atomic64_inc(&ep->cnt.rejected_other);
		return ret;
	}
	cm_id->context = &in->c;
	atomic64_inc(&ep->cnt.accepted);
	return 0;

err_qp:
	rpage_conn_abort(&in->c);
err_conn:
	kfree(in);
err_peer:
	rpage_peer_put(peer);
	atomic64_inc(&ep->cnt.rejected_other);
	return rpage_endpoint_reject(cm_id, RPAGE_REJECT_NO_RESOURCES);
}

static int rpage_inbound_event(struct rpage_in_conn *in, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		rpage_peer_inbound_established(in);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL: {
		char why[64];

		snprintf(why, sizeof(why), "%s (status %d)",
			 rdma_event_msg(ev->event), ev->status);
		rpage_peer_inbound_closed(in, why);
		break;
	}
	default:
		break;
	}
	return 0;
}

static void rpage_endpoint_set_down(struct rpage_listener *ep)
{
	ep->state = RPAGE_ENDPOINT_DOWN;
	mod_delayed_work(rpage_wq, &ep->relisten_work, RPAGE_RELISTEN_DELAY);
}

static int rpage_endpoint_cm_handler(struct rdma_cm_id *cm_id,
				     struct rdma_cm_event *ev)
{
	enum rpage_cm_kind *kind = cm_id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rpage_endpoint_connect_request(cm_id->context, cm_id, ev);
	if (!kind)
		return 0;
	if (*kind == RPAGE_CM_CONN)
		return rpage_inbound_event(container_of(cm_id->context,
							struct rpage_in_conn, c),
					   ev);
	/*
	 * The listener's own device went away before the ib_client heard
	 * of it: the relisten work destroys the id, not this callback.
	 */
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		struct rpage_listener *ep = cm_id->context;

		WRITE_ONCE(ep->state, RPAGE_ENDPOINT_DOWN);
		mod_delayed_work(rpage_wq, &ep->relisten_work, 0);
	}
	return 0;
}

static int rpage_endpoint_listen(struct rpage_listener *ep)
{
	struct rdma_cm_id *cm_id;
	int ret;

	lockdep_assert_held(&ep->lock);
	cm_id = rdma_create_id(&init_net, rpage_endpoint_cm_handler, ep,
			       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(cm_id))
		return PTR_ERR(cm_id);
	ret = rdma_bind_addr(cm_id, (struct sockaddr *)&ep->addr);
	if (!ret)
		ret = rdma_listen(cm_id, RPAGE_LISTEN_BACKLOG);
	if (ret) {
		rdma_destroy_id(cm_id);
		return ret;
	}
	ep->cm_id = cm_id;
	WRITE_ONCE(ep->state, RPAGE_ENDPOINT_LISTENING);
	return 0;
}

static void rpage_endpoint_stop(struct rpage_listener *ep)
{
	lockdep_assert_held(&ep->lock);
	if (ep->cm_id) {
		rdma_destroy_id(ep->cm_id);
		ep->cm_id = NULL;
	}
}

/*
 * Under @ep's lock: an automatic endpoint that found no RDMA device for
 * its address when it started, and listens over TCP alone. It takes up
 * RDMA when a device comes (rpage_endpoints_device_added()).
 */
static bool rpage_endpoint_tcp_only_auto(const struct rpage_listener *ep)
{
	lockdep_assert_held(&ep->lock);
	return ep->transport == RPAGE_TRANSPORT_AUTO && ep->tcp && !ep->cm_id &&
	       READ_ONCE(ep->state) != RPAGE_ENDPOINT_DOWN;
}

/*
 * Under @ep's lock: a down endpoint listens again, and an automatic one
 * that listens over TCP alone takes up RDMA, if a device serves its
 * address now. Returns 0, or why it could not.
 */
static int rpage_endpoint_relisten(struct rpage_listener *ep)
{
	int ret = 0;

	lockdep_assert_held(&ep->lock);
	if (READ_ONCE(ep->state) == RPAGE_ENDPOINT_DOWN) {
		rpage_endpoint_stop(ep);
		ret = rpage_endpoint_listen(ep);
		if (ret)
			rpage_endpoint_set_down(ep);
		else
			pr_info("endpoint %pISpc: listening again\n", &ep->addr);
	} else if (rpage_endpoint_tcp_only_auto(ep)) {
		ret = rpage_endpoint_listen(ep);
		/* A device that does not serve this address changes nothing. */
		if (!ret)
			pr_info("endpoint %pISpc: listening over RDMA and TCP\n",
				&ep->addr);
	}
	return ret;
}

static void rpage_endpoint_relisten_work(struct work_struct *work)
{
	struct rpage_listener *ep = container_of(to_delayed_work(work),
						 struct rpage_listener,
						 relisten_work);

	mutex_lock(&ep->lock);
	rpage_endpoint_relisten(ep);
	mutex_unlock(&ep->lock);
}

/*
 * The endpoints take up a device that came, one after another in the
 * order they were added, as when they were added: where two would
 * listen on one port of it (an endpoint on the loopback address binds
 * to a device's port as well), the one added first gets it, the same
 * one every time, and not whichever worker ran first. One that found no
 * device for its address yet tries again a few times.
 */
static void rpage_endpoints_relisten_fn(struct work_struct *work)
{
	struct rpage_listener *ep;
	bool again = false;

	mutex_lock(&rpage_endpoints_lock);
	list_for_each_entry(ep, &rpage_endpoints, entry) {
		mutex_lock(&ep->lock);
		if (rpage_endpoint_relisten(ep) == -ENODEV &&
		    rpage_endpoint_tcp_only_auto(ep))
			again = true;
		mutex_unlock(&ep->lock);
	}
	if (again && rpage_endpoints_tries && --rpage_endpoints_tries)
		mod_delayed_work(rpage_wq, &rpage_endpoints_relisten,
				 RPAGE_RELISTEN_DELAY);
	mutex_unlock(&rpage_endpoints_lock);
}

static bool rpage_endpoint_same(const struct rpage_listener *ep,
				const struct sockaddr_storage *addr)
{
	return rpage_sockaddr_same_host((struct sockaddr *)&ep->addr,
					(struct sockaddr *)addr) &&
	       rpage_sockaddr_port((struct sockaddr *)&ep->addr) ==
	       rpage_sockaddr_port((struct sockaddr *)addr);
}

static int rpage_endpoint_parse(void __user *argp, struct rpage_listener *ep)
{
	struct rpage_endpoint cfg;
	int ret;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	if (cfg.reserved0 || memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)))
		return -EINVAL;
	switch (cfg.transport) {
	case RPAGE_TRANSPORT_AUTO:
	case RPAGE_TRANSPORT_RDMA:
	case RPAGE_TRANSPORT_TCP:
		break;
	default:
		return -EINVAL;
	}
	ep->transport = cfg.transport;
	ret = rpage_addr_to_sockaddr(&cfg.addr, &ep->addr);
	if (ret)
		return ret;
	ep->uaddr = cfg.addr;
	if (!ep->uaddr.port)
		ep->uaddr.port = RPAGE_DEFAULT_PORT;
	return 0;
}

/*
 * Listens as @ep->transport says. Automatic listens with whichever of
 * RDMA (if the address has an RDMA device) and TCP (if its port is
 * free) can, and fails only if neither can; the log says which.
 */
static int rpage_endpoint_start(struct rpage_listener *ep)
{
	int rdma_err = 0, tcp_err = 0;

	if (ep->transport != RPAGE_TRANSPORT_TCP) {
		mutex_lock(&ep->lock);
		rdma_err = rpage_endpoint_listen(ep);
		mutex_unlock(&ep->lock);
		if (rdma_err && ep->transport == RPAGE_TRANSPORT_RDMA)
			return rdma_err;
	}
	if (ep->transport != RPAGE_TRANSPORT_RDMA) {
		ep->tcp = rpage_tcp_listen(&ep->addr, &ep->cnt);
		if (IS_ERR(ep->tcp)) {
			tcp_err = PTR_ERR(ep->tcp);
			ep->tcp = NULL;
			if (ep->transport == RPAGE_TRANSPORT_TCP || rdma_err)
				return tcp_err;
		}
		WRITE_ONCE(ep->state, RPAGE_ENDPOINT_LISTENING);
	}
	if (ep->tcp && ep->cm_id)
		pr_info("endpoint %pISpc: listening over RDMA and TCP\n", &ep->addr);
	else if (ep->transport == RPAGE_TRANSPORT_AUTO)
		pr_info("endpoint %pISpc: listening over %s only (%s: error %d)\n",
			&ep->addr, ep->tcp ? "TCP" : "RDMA",
			ep->tcp ? "RDMA" : "TCP", ep->tcp ? rdma_err : tcp_err);
	else
		pr_info("endpoint %pISpc: listening over %s\n", &ep->addr,
			ep->tcp ? "TCP" : "RDMA");
	return 0;
}

long rpage_ioctl_endpoint_add(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_listener *ep, *other;
	int ret;

	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return -ENOMEM;
	ret = rpage_endpoint_parse(argp, ep);
	if (ret)
		goto err_free;
	ep->kind = RPAGE_CM_ENDPOINT;
	mutex_init(&ep->lock);
	INIT_DELAYED_WORK(&ep->relisten_work, rpage_endpoint_relisten_work);

	mutex_lock(&rpage_endpoints_lock);
	list_for_each_entry(other, &rpage_endpoints, entry) {
		if (rpage_endpoint_same(other, &ep->addr)) {
			ret = -EEXIST;
			goto err_unlock;
		}
	}
	ret = rpage_endpoint_start(ep);
	if (ret)
		goto err_unlock;
	list_add_tail(&ep->entry, &rpage_endpoints);
	mutex_unlock(&rpage_endpoints_lock);
	return 0;

err_unlock:
	mutex_unlock(&rpage_endpoints_lock);
	mutex_destroy(&ep->lock);
err_free:
	kfree(ep);
	return ret;
}

static void rpage_endpoint_free(struct rpage_listener *ep)
{
	if (ep->tcp)
		rpage_tcp_unlisten(ep->tcp);
	cancel_delayed_work_sync(&ep->relisten_work);
	mutex_lock(&ep->lock);
	/* Keeps a removal callback from scheduling it again. */
	ep->state = RPAGE_ENDPOINT_LISTENING;
	rpage_endpoint_stop(ep);
	mutex_unlock(&ep->lock);
	cancel_delayed_work_sync(&ep->relisten_work);
	pr_info("endpoint %pISpc: deleted\n", &ep->addr);
	mutex_destroy(&ep->lock);
	kfree(ep);
}

long rpage_ioctl_endpoint_del(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_listener key = {}, *ep;
	int ret;

	ret = rpage_endpoint_parse(argp, &key);
	if (ret)
		return ret;
	if (key.transport)
		return -EINVAL;

	mutex_lock(&rpage_endpoints_lock);
	list_for_each_entry(ep, &rpage_endpoints, entry) {
		if (rpage_endpoint_same(ep, &key.addr)) {
			list_del(&ep->entry);
			mutex_unlock(&rpage_endpoints_lock);
			rpage_endpoint_free(ep);
			return 0;
		}
	}
	mutex_unlock(&rpage_endpoints_lock);
	return -ENOENT;
}

static u32 rpage_endpoints_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_endpoint_info *infos = entries;
	struct rpage_listener *ep;
	u32 count = 0;

	list_for_each_entry(ep, &rpage_endpoints, entry) {
		if (count < filled) {
			struct rpage_endpoint_info *info = &infos[count];

			info->addr = ep->uaddr;
			info->state = READ_ONCE(ep->state);
			info->transport = (ep->cm_id ? 1U << RPAGE_TRANSPORT_RDMA : 0) |
					  (ep->tcp ? 1U << RPAGE_TRANSPORT_TCP : 0);
			info->accepted = atomic64_read(&ep->cnt.accepted);
			info->rejected_unknown = atomic64_read(&ep->cnt.rejected_unknown);
			info->rejected_version = atomic64_read(&ep->cnt.rejected_version);
			info->rejected_other = atomic64_read(&ep->cnt.rejected_other);
		}
		count++;
	}
	return count;
}

long rpage_ioctl_endpoint_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_endpoint_info),
				 &rpage_endpoints_lock, rpage_endpoints_fill,
				 NULL);
}

/* Listeners bound to @dev go down now, and listen again when they can. */
void rpage_endpoints_device_removed(struct rpage_ibdev *dev)
{
	struct rpage_listener *ep;

	mutex_lock(&rpage_endpoints_lock);
	list_for_each_entry(ep, &rpage_endpoints, entry) {
		mutex_lock(&ep->lock);
		if (ep->cm_id && ep->cm_id->device == dev->ibdev) {
			rpage_endpoint_stop(ep);
			rpage_endpoint_set_down(ep);
			pr_info("endpoint %pISpc: down, its RDMA device went away\n",
				&ep->addr);
		}
		mutex_unlock(&ep->lock);
	}
	mutex_unlock(&rpage_endpoints_lock);
}

/*
 * Listeners that lack RDMA try it: the new device may serve them. From a
 * worker (rpage_endpoints_relisten_fn()): the device is being
 * registered, and the rdma_cm may not know it yet.
 */
void rpage_endpoints_device_added(void)
{
	mutex_lock(&rpage_endpoints_lock);
	rpage_endpoints_tries = RPAGE_RELISTEN_TRIES;
	mod_delayed_work(rpage_wq, &rpage_endpoints_relisten, 0);
	mutex_unlock(&rpage_endpoints_lock);
}

void rpage_endpoints_exit(void)
{
	struct rpage_listener *ep;

	/*
	 * A device that comes after this finds no endpoint: the walk does
	 * nothing then and queues itself no more.
	 */
	cancel_delayed_work_sync(&rpage_endpoints_relisten);
	for (;;) {
		mutex_lock(&rpage_endpoints_lock);
		ep = list_first_entry_or_null(&rpage_endpoints,
					      struct rpage_listener, entry);
		if (ep)
			list_del(&ep->entry);
		mutex_unlock(&rpage_endpoints_lock);
		if (!ep)
			break;
		rpage_endpoint_free(ep);
	}
}
