/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: private definitions shared by the files of rpage.ko.
 */
#ifndef RPAGE_PRI_H
#define RPAGE_PRI_H

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/kref.h>
#include <linux/workqueue.h>
#include <linux/socket.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <linux/rpage.h>

#include "rpage-compat.h"
#include "rpage-proto.h"

/* Module parameters (rpage-main.c). */
extern u64 rpage_node_id;
extern unsigned int rpage_qps_per_peer;
extern unsigned int rpage_connect_timeout_ms;
extern unsigned int rpage_reconnect_delay_ms;

/* Connection setup and teardown run here, never in rdma_cm callbacks. */
extern struct workqueue_struct *rpage_wq;

/**
 * struct rpage_file - what one open file of /dev/rpage owns
 * @lock: protects @features against concurrent handshakes.
 * @api_done: the RPAGE_IOC_API handshake succeeded on this file.
 * @features: the feature bits the handshake enabled.
 */
struct rpage_file {
	struct mutex lock;	/* protects features */
	bool api_done;
	u64 features;
};

/**
 * struct rpage_ibdev - an RDMA device rpage.ko is attached to
 * @entry: link in the list of attached devices.
 * @ibdev: the device; valid until the ib_client remove callback.
 * @pd: the protection domain every queue pair on the device uses.
 * @ref: keeps this structure; held by lookups and by @users.
 * @users: queue pairs on the device; removal waits until none is left.
 * @users_wait: where removal waits.
 */
struct rpage_ibdev {
	struct list_head entry;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct kref ref;
	atomic_t users;
	wait_queue_head_t users_wait;
};

/*
 * rdma_cm ids of endpoints and of connections share one event handler
 * for the children of a listener; the tag tells their contexts apart.
 */
enum rpage_cm_kind {
	RPAGE_CM_ENDPOINT,
	RPAGE_CM_CONN,
};

/* States of one RC connection (struct rpage_conn.state). */
enum rpage_conn_state {
	RPAGE_CONN_IDLE,
	RPAGE_CONN_CONNECTING,
	RPAGE_CONN_CONNECTED,
	RPAGE_CONN_CLOSED,
};

struct rpage_peer;

/**
 * struct rpage_conn - one RC queue pair to or from a peer
 * @kind: RPAGE_CM_CONN.
 * @peer: the peer; an inbound connection holds a reference.
 * @cm_id: its rdma_cm id; the queue pair is @cm_id->qp.
 * @dev: the device of @cm_id, referenced while the queue pair exists.
 * @cq: the completion queue of both work queues.
 * @inbound: the peer opened it (we serve); else we opened it (we read).
 * @index: which of the opener's queue pairs to the peer this is.
 * @state: RPAGE_CONN_*, changed under the owner's lock.
 * @claimed: inbound: whoever set it (under the peer's inbound_lock)
 *	tears the connection down; nobody else touches it after.
 * @error: outbound: how the connection attempt ended, 0 if connected.
 * @reject_reason: outbound: RPAGE_REJECT_* if the peer refused us.
 * @done: outbound: completed when the connection attempt ends.
 * @entry: inbound: link in the peer's list of inbound connections.
 * @release_work: inbound: tears the connection down after a disconnect.
 */
struct rpage_conn {
	enum rpage_cm_kind kind;
	struct rpage_peer *peer;
	struct rdma_cm_id *cm_id;
	struct rpage_ibdev *dev;
	struct ib_cq *cq;
	bool inbound;
	u16 index;
	enum rpage_conn_state state;
	bool claimed;
	int error;
	u32 reject_reason;
	struct completion done;
	struct list_head entry;
	struct work_struct release_work;
};

/* Peer states: the UAPI's, plus the one only the module sees. */
enum rpage_peer_state {
	RPAGE_PEER_STATE_CONNECTING	= RPAGE_PEER_CONNECTING,
	RPAGE_PEER_STATE_CONNECTED	= RPAGE_PEER_CONNECTED,
	RPAGE_PEER_STATE_RECONNECTING	= RPAGE_PEER_RECONNECTING,
	RPAGE_PEER_STATE_FAILED		= RPAGE_PEER_FAILED,
	RPAGE_PEER_STATE_DELETING,
};

/**
 * struct rpage_peer - a remote host, as the operator configured it
 * @entry: link in the list of peers (under rpage_config_lock).
 * @ref: held by the list, inbound connections and list readers.
 * @name: the operator's name for it.
 * @uaddr: its endpoint, as configured.
 * @addr: the same, as a socket address.
 * @lock: serialises connecting and tearing down the outbound
 *	connections; held across a whole connection attempt.
 * @state_lock: protects @state and the fields reported about it.
 * @state: RPAGE_PEER_STATE_*; see rpage_peer_change_state().
 * @conns: the outbound connections, @nr_conns of them.
 * @nr_conns: how many queue pairs this host opens to the peer.
 * @connect_work: (re)connects the outbound connections.
 * @inbound_lock: protects @inbound; never held across a wait.
 * @inbound: connections the peer opened to us.
 * @last_reject: RPAGE_REJECT_* of the last refusal.
 * @last_error: errno of the last failed attempt, 0 if none.
 * @remote_node_id: the peer's node id, from its hello.
 * @remote_proto: the peer's protocol version, major << 16 | minor.
 * @connects: outbound connection sets established.
 * @rejects: outbound attempts the peer refused.
 */
struct rpage_peer {
	struct list_head entry;
	struct kref ref;
	char name[RPAGE_NAME_MAX];
	struct rpage_addr uaddr;
	struct sockaddr_storage addr;
	struct mutex lock;		/* see kernel-doc */
	spinlock_t state_lock;		/* see kernel-doc */
	enum rpage_peer_state state;
	struct rpage_conn *conns;
	unsigned int nr_conns;
	struct delayed_work connect_work;
	struct mutex inbound_lock;	/* see kernel-doc */
	struct list_head inbound;
	u32 last_reject;
	u32 last_error;
	u64 remote_node_id;
	u32 remote_proto;
	atomic64_t connects;
	atomic64_t rejects;
};

/* rpage-main.c */
int rpage_list_begin(void __user *argp, struct rpage_list *arg);
int rpage_list_end(void __user *argp, struct rpage_list *arg,
		   const void *entries, size_t entry_size, u32 filled, u32 count);
int rpage_addr_to_sockaddr(const struct rpage_addr *uaddr,
			   struct sockaddr_storage *ss);
bool rpage_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);
u16 rpage_sockaddr_port(const struct sockaddr *sa);

/* rpage-ibdev.c */
int rpage_ibdev_init(void);
void rpage_ibdev_exit(void);
struct rpage_ibdev *rpage_ibdev_get(struct ib_device *ibdev);
void rpage_ibdev_put(struct rpage_ibdev *dev);
void rpage_ibdev_unuse(struct rpage_ibdev *dev);
long rpage_ioctl_device_list(struct rpage_file *rfile, void __user *argp);

/* rpage-conn.c */
int rpage_conn_create_qp(struct rpage_conn *conn, struct rdma_cm_id *cm_id);
void rpage_conn_destroy(struct rpage_conn *conn);
void rpage_hello_init(struct rpage_hello *hello, u16 qp_index, u16 nr_qps);
u32 rpage_hello_check(const void *data, u8 len, struct rpage_hello *hello);
struct rpage_peer *rpage_peer_find_by_addr(const struct sockaddr *addr);
void rpage_peer_put(struct rpage_peer *peer);
void rpage_peer_inbound_established(struct rpage_conn *conn);
void rpage_peer_inbound_closed(struct rpage_conn *conn);
void rpage_peers_device_removed(struct rpage_ibdev *dev);
void rpage_peers_device_added(void);
void rpage_peers_exit(void);
long rpage_ioctl_peer_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_list(struct rpage_file *rfile, void __user *argp);

/* rpage-endpoint.c */
void rpage_endpoints_device_removed(struct rpage_ibdev *dev);
void rpage_endpoints_device_added(void);
void rpage_endpoints_exit(void);
long rpage_ioctl_endpoint_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_list(struct rpage_file *rfile, void __user *argp);

#endif /* RPAGE_PRI_H */
