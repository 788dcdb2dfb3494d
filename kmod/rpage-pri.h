/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: private definitions shared by the files of rpage.ko.
 *
 * Who does what:
 *   rpage-main.c      the misc device, ioctl dispatch, module parameters,
 *                     helpers every file uses
 *   rpage-ibdev.c     the RDMA devices rpage.ko is attached to
 *   rpage-endpoint.c  listening endpoints; accepting inbound connections
 *   rpage-conn.c      one RC connection, either direction: queue pair,
 *                     receive buffers, control sends, its state
 *   rpage-peer.c      peers: registry, state machine, (re)connecting the
 *                     outbound set, heartbeats, inbound bookkeeping
 *   rpage-rpool.c     control messages and the pools peers export to us
 *   rpage-pool.c      the pools this host exports
 *   rpage-xfer.c      the data path: one call moves pages to or from a
 *                     peer's pool, and owns every failure policy
 *   rpage-rdma-xfer.c the RDMA transport's part of it: work requests
 *   rpage-loop.c      the loop transport: this host as its own peer
 *   rpage-tcp.c       the TCP transport: sockets, framing, accepting,
 *                     connecting; rpage-tcp-xfer.c its reads and writes
 *   rpage-io.c        RPAGE_IOC_READ and RPAGE_IOC_WRITE
 *   rpage-map.c       remote mappings, their mmap and eviction
 *   rpage-fault.c     the fault path, prefetch and read-ahead
 *   rpage-stats.c     counters, latency histograms, statistics ioctls
 */
#ifndef RPAGE_PRI_H
#define RPAGE_PRI_H

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/kref.h>
#include <linux/workqueue.h>
#include <linux/socket.h>
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/xarray.h>
#include <linux/mm_types.h>
#include <linux/wait.h>
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
extern unsigned int rpage_max_pool_mb;
extern unsigned int rpage_io_timeout_ms;
extern unsigned int rpage_loss_timeout_ms;
extern unsigned int rpage_heartbeat_ms;
extern unsigned int rpage_ack_timeout;
extern unsigned int rpage_max_remote_pools;
extern unsigned int rpage_max_remote_regions;
extern unsigned int rpage_max_inbound_qps;
extern unsigned int rpage_prefetch_reserve_pct;

/* Heartbeats that may go unanswered before a peer counts as gone. */
#define RPAGE_HEARTBEAT_MISSES	5

/* Connection setup and teardown run here, never in rdma_cm callbacks. */
extern struct workqueue_struct *rpage_wq;

/**
 * struct rpage_file - what one open file of /dev/rpage owns
 * @file: the open file.
 * @lock: protects @features against concurrent handshakes.
 * @api_done: the RPAGE_IOC_API handshake succeeded on this file.
 * @features: the feature bits the handshake enabled.
 * @pools: the pools exported through this file (under rpage_pools_lock);
 *	destroyed when it closes.
 */
struct rpage_file {
	struct file *file;
	struct mutex lock;	/* protects features */
	bool api_done;
	u64 features;
	struct list_head pools;
};

/**
 * struct rpage_counters_pcpu - one CPU's share of struct rpage_counters
 * @reads: pages read.
 * @writes: pages written.
 * @read_bytes: bytes read.
 * @write_bytes: bytes written.
 * @errors: pages whose transfer failed.
 * @latency: post-to-completion time of each page, log2 ns buckets.
 */
struct rpage_counters_pcpu {
	u64 reads;
	u64 writes;
	u64 read_bytes;
	u64 write_bytes;
	u64 errors;
	u64 latency[RPAGE_HIST_BUCKETS];
};

/**
 * struct rpage_counters - what a peer or a device counts
 * @pcpu: the data path's counters, per CPU.
 * @connects: connections established.
 * @rejects: connections refused.
 */
struct rpage_counters {
	struct rpage_counters_pcpu __percpu *pcpu;
	atomic64_t connects;
	atomic64_t rejects;
};

/**
 * struct rpage_ibdev - an RDMA device rpage.ko is attached to
 * @entry: link in the list of attached devices.
 * @ibdev: the device; valid until the ib_client remove callback.
 * @pd: the protection domain of the queue pairs this host opens (a
 *	reader's: nothing of this host's memory is registered in it).
 * @pds: the protection domains of the queue pairs peers opened to this
 *	host, one per peer (struct rpage_pd), under @pds_lock.
 * @pds_lock: protects @pds.
 * @ref: keeps this structure; held by lookups and by @users.
 * @users: queue pairs on the device; removal waits until none is left.
 * @users_wait: where removal waits.
 * @counters: traffic and connections on the device.
 */
struct rpage_ibdev {
	struct list_head entry;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct list_head pds;
	struct mutex pds_lock;		/* see kernel-doc */
	struct kref ref;
	atomic_t users;
	wait_queue_head_t users_wait;
	struct rpage_counters counters;
};

/**
 * struct rpage_pd - the protection domain of one peer's queue pairs on
 *	one device, as the exporter: a pool is registered in the domain of
 *	each peer it is announced to, so that a peer's queue pair reaches
 *	no region registered for another, whatever key it tries.
 * @entry: link in the device's @pds.
 * @dev: the device.
 * @peer_id: the peer's id (never reused while the module is loaded).
 * @pd: the domain.
 * @ref: held by each queue pair and registration in it.
 */
struct rpage_pd {
	struct list_head entry;
	struct rpage_ibdev *dev;
	u32 peer_id;
	struct ib_pd *pd;
	struct kref ref;
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
 * struct rpage_conn - one RC queue pair to or from a peer: what both
 *	directions share (see struct rpage_out_conn, struct rpage_in_conn)
 * @kind: RPAGE_CM_CONN.
 * @peer: the peer; an inbound connection holds a reference.
 * @cm_id: its rdma_cm id; the queue pair is @cm_id->qp.
 * @dev: the device of @cm_id, referenced while the queue pair exists.
 * @pd: the protection domain of its queue pair: the device's for a
 *	queue pair this host opened, @ppd's for one a peer opened.
 * @ppd: inbound: the peer's protection domain on @dev, referenced.
 * @cq: outbound: the send completion queue, polled by whoever posted
 *	(ib_process_cq_direct()); it interrupts only when asked to by a
 *	transfer going to sleep (rpage_rdma_cq_event()); inbound: the one
 *	completion queue, polled in a work queue (IB_POLL_WORKQUEUE).
 * @cq_wait: outbound: the transfers asleep until @cq has news for them,
 *	each woken by its own completions (keyed by its run), one of them
 *	by @cq's interrupt to poll for all.
 * @recv_cq: outbound: the receive completion queue (control messages).
 * @recvs: the first queue pair of a set: the posted receive buffers.
 * @recv_lock: orders reposting a receive against teardown.
 * @closing: set under @recv_lock before the queue pair is destroyed.
 * @sq_free: send queue slots not taken by work requests in flight.
 * @max_write_sge: scatter/gather entries one RDMA WRITE may gather from.
 * @max_read_sge: entries one RDMA READ may scatter into.
 * @max_sge_bytes: bytes one entry may cover (pages next to each other in
 *	one folio share an entry): what the device's DMA allows.
 * @inbound: the peer opened it (we serve); else we opened it (we read).
 * @index: which of the opener's queue pairs to the peer this is.
 * @state: RPAGE_CONN_*; see rpage_conn_set_state().
 * @users: held for reading by whoever posts work requests on the queue
 *	pair, for writing by its teardown: nothing is posted on a queue
 *	pair being destroyed, and nothing it posted is left behind.
 * @hb_seq: heartbeats sent on it.
 * @detached_lock: protects @detached.
 * @detached: transfers of killed tasks whose work requests are still in
 *	flight on it, and transfers started without waiting
 *	(rpage_xfer_start()): the RDMA transport's runs, which free
 *	themselves.
 * @async_runs: how many of @detached were started without waiting: while
 *	there are any, @cq's interrupt has @poll_work poll for them, as
 *	nobody waits on them.
 * @poll_work: polls @cq for the runs nobody waits on.
 * @tp: the transport's own state of the connection, if it keeps any
 *	there (TCP: its socket, struct rpage_tcp_queue).
 */
struct rpage_conn {
	enum rpage_cm_kind kind;
	struct rpage_peer *peer;
	struct rdma_cm_id *cm_id;
	struct rpage_ibdev *dev;
	struct ib_pd *pd;
	struct rpage_pd *ppd;
	struct ib_cq *cq;
	wait_queue_head_t cq_wait;
	struct ib_cq *recv_cq;
	struct rpage_recv *recvs;
	spinlock_t recv_lock;		/* see kernel-doc */
	bool closing;
	atomic_t sq_free;
	u32 max_write_sge;
	u32 max_read_sge;
	u32 max_sge_bytes;
	bool inbound;
	u16 index;
	enum rpage_conn_state state;
	struct rw_semaphore users;
	u64 hb_seq;
	spinlock_t detached_lock;	/* see kernel-doc */
	struct list_head detached;
	atomic_t async_runs;
	struct work_struct poll_work;
	void *tp;
};

/**
 * struct rpage_out_conn - a queue pair this host opened to read a peer
 * @c: the connection.
 * @error: how the last connection attempt ended, 0 if connected.
 * @event: the rdma_cm event that ended it, or -1.
 * @reject_reason: RPAGE_REJECT_* if the peer refused us.
 * @done: completed when the connection attempt ends.
 */
struct rpage_out_conn {
	struct rpage_conn c;
	int error;
	int event;
	u32 reject_reason;
	struct completion done;
};

/**
 * struct rpage_in_conn - a queue pair a peer opened to read from us
 * @c: the connection.
 * @entry: link in the peer's list of inbound connections.
 * @claimed: whoever set it (under the peer's inbound_lock) tears the
 *	connection down; nobody else touches it after.
 * @synced: the reader's first queue pair: it has been sent the pool
 *	table (under rpage_pools_lock).
 * @session: which connection set of the reader it belongs to: a new
 *	first queue pair starts a set, and ends every older one.
 * @release_work: tears the connection down once claimed.
 * @outq_lock: protects @outq and @outq_closed.
 * @outq: on a reader's first queue pair, the pool-table messages queued
 *	for it (rpage-pool.c), sent in order by @send_work.
 * @outq_closed: the connection is going: nothing more is queued.
 * @send_work: sends @outq, without rpage_pools_lock: a reader slow to
 *	take its messages holds up no other.
 */
struct rpage_in_conn {
	struct rpage_conn c;
	struct list_head entry;
	bool claimed;
	bool synced;
	u32 session;
	struct work_struct release_work;
	spinlock_t outq_lock;		/* see kernel-doc */
	struct list_head outq;
	bool outq_closed;
	struct work_struct send_work;
};

/**
 * struct rpage_recv - a receive buffer for control messages
 * @cqe: completion entry.
 * @conn: the connection it is posted on.
 * @buf: RPAGE_MSG_MAX bytes.
 * @dma: @buf mapped for the device.
 */
struct rpage_recv {
	struct ib_cqe cqe;
	struct rpage_conn *conn;
	void *buf;
	u64 dma;
};

/**
 * struct rpage_rpool - a pool a peer exports to us
 * @entry: link in the peer's @rpools while @listed.
 * @ref: held by the peer's table while listed, and by every transfer
 *	using it: a withdrawn or re-announced pool is freed only once no
 *	transfer uses it any more.
 * @peer: the exporter; whoever holds @ref holds the peer too.
 * @id: the pool's id on the peer.
 * @generation: which incarnation of the pool this is.
 * @length: bytes.
 * @mr_bytes: bytes each of its memory regions covers.
 * @flags: RPAGE_POOL_*.
 * @nr_mrs: memory regions in the pool.
 * @received: how many of @mrs have arrived; usable when all have.
 * @listed: in the peer's table (under rpools_lock).
 * @withdrawn: the peer withdrew it: the last one out acknowledges.
 * @mrs: where each region is: address and key.
 */
struct rpage_rpool {
	struct list_head entry;
	struct kref ref;
	struct rpage_peer *peer;
	u64 id;
	u64 generation;
	u64 length;
	u64 mr_bytes;
	u32 flags;
	u32 nr_mrs;
	u32 received;
	bool listed;
	bool withdrawn;
	struct rpage_rmr {
		u64 iova;
		u32 rkey;
	} *mrs;
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
 * @entry: link in the list of peers (under rpage_peers_lock).
 * @ref: held by the list, inbound connections, mappings and callers.
 * @name: the operator's name for it.
 * @uaddr: its endpoint, as configured.
 * @addr: the same, as a socket address.
 * @lock: serialises connecting and tearing down the outbound
 *	connections; held across a whole connection attempt.
 * @state_lock: protects @state, the connections' states and the fields
 *	reported about them.
 * @state: RPAGE_PEER_STATE_*; see rpage_peer_set_state().
 * @state_since: ktime_get_ns() when it entered @state.
 * @down_since: jiffies since when it is unreachable, as far as known:
 *	what the loss timeout counts from (see rpage_peer_transition()).
 * @last_alive: jiffies of its last sign of life: a completion of ours on
 *	its queue pairs, or a message from it.
 * @connected_at: jiffies when it last became connected.
 * @next_attempt: jiffies before which no connection attempt starts.
 * @fail_streak: connection sets lost or refused in a row; the backoff.
 * @cause: why it last changed state, in words.
 * @wait: woken on every change of @state or of the loss timeout.
 * @events: counts those changes, for waiters to tell one happened.
 * @conns: the outbound connections, @nr_conns of them.
 * @nr_conns: how many queue pairs this host opens to the peer.
 * @connect_work: (re)connects the outbound connections.
 * @synced: completed when the peer's pool table has arrived.
 * @hb_work: heartbeats on the first outbound queue pair.
 * @hb_in_work: heartbeats on the reader's first inbound queue pair.
 * @inbound_lock: protects @inbound, @inbound_closed and @in_session.
 * @inbound: connections the peer opened to us (struct rpage_in_conn).
 * @inbound_closed: the peer is going away: accept no more.
 * @in_session: the newest connection set the peer opened to us.
 * @last_reject: RPAGE_REJECT_* of the last refusal.
 * @last_error: errno of the last failed attempt, 0 if none.
 * @remote_node_id: the peer's node id, from its hello.
 * @remote_proto: the peer's protocol version, major << 16 | minor.
 * @loss_timeout_ms: how long transfers wait for it to come back.
 * @reconnects: times its outbound set was lost.
 * @retried: transfers posted again after a transport failure.
 * @lost: transfers failed after the loss timeout.
 * @refused_msgs: control messages from the peer dropped as malformed or
 *	misdirected.
 * @refused_pools: pools the peer announced past max_remote_pools or
 *	max_remote_regions.
 * @refused_qps: queue pairs the peer opened past max_inbound_qps.
 * @refused_access: its reads and writes of pools not announced to it
 *	(scoped to other peers), over TCP and the loop.
 * @counters: traffic to the peer; its connects are outbound connection
 *	sets established, its rejects outbound attempts the peer refused.
 * @fault_counters: the fault path of every mapping of its pools.
 * @id: the handle userspace names the peer by in reads and writes.
 * @ops: its transport.
 * @tp: the transport's own state of the peer, if it keeps any there.
 * @rpools_lock: protects @rpools and each pool's listing.
 * @rpools: the pools the peer exports to us (struct rpage_rpool).
 * @nr_rpools: how many are on @rpools, under @rpools_lock.
 * @nr_rregions: their memory regions, all told, under @rpools_lock.
 * @acks_lock: protects @acks and @nr_acks.
 * @acks: withdrawals to acknowledge to it (struct rpage_ack), in order.
 * @nr_acks: how many, RPAGE_ACKS_MAX at most.
 * @ack_work: sends @acks; holds a reference on the peer while queued.
 * @rcu: frees it once no fault (under RCU) can still be counting in
 *	@fault_counters through a mapping it was just detached from.
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
	u64 state_since;
	unsigned long down_since;
	unsigned long last_alive;
	unsigned long connected_at;
	unsigned long next_attempt;
	unsigned int fail_streak;
	char cause[RPAGE_CAUSE_MAX];
	wait_queue_head_t wait;
	unsigned int events;
	struct rpage_out_conn *conns;
	unsigned int nr_conns;
	struct delayed_work connect_work;
	struct completion synced;
	struct delayed_work hb_work;
	struct delayed_work hb_in_work;
	struct mutex inbound_lock;	/* see kernel-doc */
	struct list_head inbound;
	bool inbound_closed;
	u32 in_session;
	u32 last_reject;
	u32 last_error;
	u64 remote_node_id;
	u32 remote_proto;
	u32 loss_timeout_ms;
	atomic64_t reconnects;
	atomic64_t retried;
	atomic64_t lost;
	atomic64_t refused_msgs;
	atomic64_t refused_pools;
	atomic64_t refused_qps;
	atomic64_t refused_access;
	struct rpage_counters counters;
	struct rpage_fault_counters_pcpu __percpu *fault_counters;
	u32 id;
	const struct rpage_transport_ops *ops;
	void *tp;
	spinlock_t rpools_lock;		/* see kernel-doc */
	struct list_head rpools;
	u32 nr_rpools;
	u32 nr_rregions;
	spinlock_t acks_lock;		/* see kernel-doc */
	struct list_head acks;
	unsigned int nr_acks;
	struct work_struct ack_work;
	struct rcu_head rcu;
};

/*
 * The causes of a 4 KiB read in an RPAGE_MAP_HUGE mapping this module
 * knows of (RPAGE_HUGE_FB_* in the UAPI header).
 */
#define RPAGE_HUGE_FB_NR	(RPAGE_HUGE_FB_NOMEM + 1)

/* Counters of the fault path (struct rpage_fault_stats), in its order. */
enum rpage_fault_count {
	RPAGE_FC_FAULTS,
	RPAGE_FC_MINOR,
	RPAGE_FC_WAITS,
	RPAGE_FC_PREFETCHED,
	RPAGE_FC_PREFETCH_HITS,
	RPAGE_FC_EVICTED,
	RPAGE_FC_WRITTEN,
	RPAGE_FC_SIGBUS,
	RPAGE_FC_VMA_LOCKED,
	RPAGE_FC_MMAP_LOCKED,
	RPAGE_FC_REFETCHED,
	RPAGE_FC_HUGE_FAULTS,
	RPAGE_FC_HUGE_FALLBACKS,
	RPAGE_FC_HUGE_PREFETCHED,
	/* RPAGE_FC_HUGE_FALLBACKS by cause: + RPAGE_HUGE_FB_*. */
	RPAGE_FC_HUGE_FB,
	RPAGE_FC_NR = RPAGE_FC_HUGE_FB + RPAGE_HUGE_FB_NR,
};

/*
 * 2 MiB folios (RPAGE_MAP_HUGE): their order and pages. The flag is
 * refused where the kernel's PMD is not 2 MiB or it has no THP.
 */
#define RPAGE_HUGE_ORDER	9
#define RPAGE_HUGE_NR		BIT(RPAGE_HUGE_ORDER)

static inline bool rpage_huge_supported(void)
{
#ifdef CONFIG_TRANSPARENT_HUGEPAGE
	return HPAGE_PMD_ORDER == RPAGE_HUGE_ORDER;
#else
	return false;
#endif
}

/**
 * struct rpage_fault_counters_pcpu - one CPU's fault-path counters
 * @count: indexed by enum rpage_fault_count.
 * @latency: time of each fault in rpage, log2 ns buckets.
 */
struct rpage_fault_counters_pcpu {
	u64 count[RPAGE_FC_NR];
	u64 latency[RPAGE_HIST_BUCKETS];
};

/*
 * Most pages one RDMA READ or WRITE carries: pages that follow each other
 * in a region of the pool share a work request, one gather entry each.
 */
#define RPAGE_IO_MAX_SGE	16

/**
 * struct rpage_xfer_range - pages of one pool, for rpage_xfer()
 * @pool_id: the pool's id on the peer.
 * @generation: the incarnation of the pool to use; 0 for the one listed
 *	now, and rpage_xfer() then sets it, so that a retry never moves
 *	pages of another incarnation.
 * @offset: pool byte offset of the range's page 0.
 * @index: page i is at @offset + @index[i] pages; NULL: at i pages.
 * @nr: pages.
 * @extent: pages from @offset that @index may name (the pool must hold
 *	them all); 0: @nr.
 */
struct rpage_xfer_range {
	u64 pool_id;
	u64 generation;
	u64 offset;
	const unsigned long *index;
	unsigned long nr;
	unsigned long extent;
};

struct rpage_xfer;
struct rpage_xfer_run;

/**
 * struct rpage_transport_ops - what a transport does for the core
 * @name: as users name it.
 * @id: RPAGE_TRANSPORT_*, as userspace names it.
 * @regions: the pools it carries come with memory regions (an address
 *	and key each) that the reader's transfers name; a pool announced
 *	over a transport without them names none.
 * @connected_cause: what a peer that connected over it got, in the words
 *	of its state change ("every queue pair up, ...").
 * @peer_init: sets up a peer being added (its channels, not connected).
 *	0 or -ENOMEM.
 * @peer_free: frees what @peer_init set up.
 * @connect: under the peer's lock, brings the peer's channels up and
 *	gets its pool table: 0 once it may carry transfers; else an errno,
 *	with @cause in words and, if the peer refused, *@reason
 *	(RPAGE_REJECT_*).
 * @connected: under the peer's state lock, after @connect: whether every
 *	channel is still up (one lost meanwhile fails the attempt).
 * @close: under the peer's lock, takes the channels down, what is in
 *	flight on them flushed first; the core then clears the pool table.
 * @channels: under the peer's state lock, how many connections this host
 *	opens to the peer (and in *@up, how many are up); NULL: none.
 * @heartbeat: if set, sends one heartbeat to a connected peer; a channel
 *	that does not take it is reported lost.
 * @chan_heartbeat: sends one heartbeat to a reader on @chan, its channel
 *	to this host's pools; with @heartbeat, or neither.
 * @chan_break: makes what waits on @chan, an inbound connection being
 *	released, fail at once (a send to a reader that takes nothing);
 *	NULL if nothing can wait on it.
 * @chan_destroy: tears down an inbound connection of the transport once
 *	it is claimed (see struct rpage_in_conn); NULL if there is nothing
 *	to tear down.
 * @send_ctl: sends a control message to the peer as its reader: 0 once
 *	the peer holds it, -ENOTCONN if not connected, or the transport's
 *	error (the channel is then reported lost).
 * @chan_send: sends a control message to the peer as its exporter, on
 *	@chan, the peer's channel to this host's pools (rpage-pool.c): 0
 *	once the peer holds it, or an error (the channel is then lost).
 * @run_alloc: a run of a transfer on this transport, which embeds a
 *	struct rpage_xfer_run, with @tail bytes more for the core at
 *	*@tailp; NULL without memory. The core fills in its part.
 * @run_free: frees a run (never one the transport set ->leaked on).
 * @xfer_begin: starts an attempt: takes a channel to the peer, while
 *	which the peer's pool table stays as it is. 0, -EAGAIN if the peer
 *	is not connected, or an error a retry cannot fix.
 * @xfer_move: moves the pages of the run not moved yet (the pools held),
 *	telling the core of each with rpage_xfer_moved(); 0 once all are.
 *	A transport failure is -EIO, -ECONNRESET or -ETIMEDOUT (the
 *	transport has reported the connection lost; the core tries again
 *	while the loss timeout allows); -EINTR if the caller was killed;
 *	-EDEADLK if the transport could not get pages back (it set the
 *	run's ->leaked: the pages and the run are never given back); else
 *	an error a retry cannot fix.
 * @xfer_start: instead of @xfer_move, for rpage_xfer_start(): posts the
 *	pages of the run without waiting for them, the pools held. 0: they
 *	are on their way, and the run is the transport's from @xfer_end on:
 *	it calls rpage_xfer_started_end() once they are moved or the
 *	attempt failed, then frees the run. 1: every page is moved already
 *	(the run stays the core's). Else an error, nothing in flight, the
 *	run the core's. NULL: the transport cannot move pages without
 *	waiting for them.
 * @xfer_end: ends the attempt: gives the channel back.
 */
struct rpage_transport_ops {
	const char *name;
	u32 id;
	bool regions;
	const char *connected_cause;
	int (*peer_init)(struct rpage_peer *peer);
	void (*peer_free)(struct rpage_peer *peer);
	int (*connect)(struct rpage_peer *peer, u32 *reason, char *cause,
		       size_t len);
	bool (*connected)(struct rpage_peer *peer);
	void (*close)(struct rpage_peer *peer);
	u32 (*channels)(struct rpage_peer *peer, u32 *up);
	void (*heartbeat)(struct rpage_peer *peer);
	void (*chan_heartbeat)(struct rpage_conn *chan);
	void (*chan_break)(struct rpage_conn *chan);
	void (*chan_destroy)(struct rpage_conn *chan);
	int (*send_ctl)(struct rpage_peer *peer, const void *msg, u32 len);
	int (*chan_send)(struct rpage_conn *chan, const void *msg, u32 len);
	struct rpage_xfer_run *(*run_alloc)(struct rpage_xfer *x, size_t tail,
					    void **tailp);
	void (*run_free)(struct rpage_xfer_run *run);
	int (*xfer_begin)(struct rpage_xfer_run *run);
	int (*xfer_move)(struct rpage_xfer_run *run);
	int (*xfer_start)(struct rpage_xfer_run *run);
	void (*xfer_end)(struct rpage_xfer_run *run);
};

/**
 * struct rpage_xfer - pages to move to or from a peer's pools
 * @peer: the peer, referenced by the caller; NULL: the pages have no
 *	peer any more (a mapping whose peer was deleted), ENOTCONN.
 * @write: RDMA WRITE the pages to the pools; else READ into them.
 * @killable: the caller's task waits: a fatal signal ends the transfer
 *	(-EINTR). Not for workers.
 * @ranges: where the pages go or come from, @nr_ranges of them.
 * @nr_ranges: how many.
 * @pages: the pages of every range, in order.
 * @nr_pages: how many, the sum of the ranges' @nr.
 * @depth: most work requests in flight at once; 0: as the queue allows.
 * @node_id: the exporter's node id the ranges were bound to; 0: any.
 * @done: if set, called (in the caller's context) for pages that are
 *	done: moved (status 0), or given up on with the call's error.
 *	Every page is reported exactly once.
 * @slow: if set, called once (in the caller's context) before the
 *	transfer first waits for long; the fault path drops mmap_lock.
 * @end: for rpage_xfer_start() only: called once when the transfer
 *	ended, with 0 or an errno; see there.
 * @priv: the caller's.
 */
struct rpage_xfer {
	struct rpage_peer *peer;
	bool write;
	bool killable;
	struct rpage_xfer_range *ranges;
	unsigned int nr_ranges;
	struct page **pages;
	unsigned long nr_pages;
	unsigned int depth;
	u64 node_id;
	void (*done)(struct rpage_xfer *x, unsigned long first,
		     unsigned long nr, int status);
	void (*slow)(struct rpage_xfer *x);
	void (*end)(struct rpage_xfer *x, int status);
	void *priv;
};

/**
 * struct rpage_xfer_run - a transfer while it runs: the core's part of
 *	it, embedded in each transport's own
 * @ops: the transport.
 * @x: the caller's description.
 * @finished: a bit per page moved.
 * @rpools: the pool of each range, held during an attempt.
 * @range: the range of the page rpage_xfer_locate() found last.
 * @range_start: the index of that range's first page.
 * @leaked: set by the transport when it cannot get pages back: the run
 *	is never freed.
 */
struct rpage_xfer_run {
	const struct rpage_transport_ops *ops;
	struct rpage_xfer *x;
	unsigned long *finished;
	struct rpage_rpool **rpools;
	unsigned int range;
	unsigned long range_start;
	bool leaked;
};

/**
 * struct rpage_mapping - a remote mapping (RPAGE_IOC_MAP), or the
 *	mapping of a named one (RPAGE_IOC_MAP_ADD, rpage-named.c)
 * @ref: held by its file's table (until RPAGE_IOC_UNMAP or close), by
 *	every virtual memory area mapping it and by prefetches in flight;
 *	for a named one, by the table until RPAGE_IOC_MAP_DEL and by every
 *	open file of its node.
 * @id: its id; the mmap offset is @id << RPAGE_MAP_ID_SHIFT pages (a
 *	named one's node is mapped from offset 0).
 * @owner: the file it was created through; only compared, never used.
 *	NULL for a named one.
 * @inode: its own inode (rpage-fs.c), whose page cache holds its pages,
 *	at their index in the mapping; referenced.
 * @mapping: that page cache: @inode's address space, which every file
 *	an area maps it by uses (rpage_fs_file_new(), a named one's node
 *	files). Every such area is in it, for unmapping pages.
 * @dead: a named one deleted while in use: every fault raises SIGBUS.
 * @prefetched: a prefetch or read-ahead has put pages here: some may
 *	still be marked as prefetched (PG_checked) until a fault maps them.
 * @pool_lost: 0, or the error (ENOENT, ESTALE) a write back of its pages
 *	met because its pool is gone for good: the pages it kept clean then
 *	are the only copy, which an eviction must not drop.
 * @peer: the peer whose pool it maps, referenced; NULL once that peer
 *	is deleted (rpage_maps_peer_deleted()): the pages here stay, the
 *	others can never be read. Read it with rpage_map_peer_get(), or
 *	under RCU.
 * @pool_id: the pool.
 * @pool_generation: the incarnation of the pool it maps.
 * @node_id: the exporter's node id when it was made.
 * @pool_offset: where in the pool the mapping starts, bytes.
 * @pgoff: the mmap offset of its first page on /dev/rpage, in pages: a
 *	cookie only (areas are rebased to offset 0 of their own file).
 * @nr_pages: pages.
 * @flags: RPAGE_MAP_*.
 * @counters: its fault-path counters, per CPU.
 * @ra_lock: protects the read-ahead state below.
 * @ra_last: the index of the last fault.
 * @ra_stride: the distance between the last two faults.
 * @ra_next: the next index read-ahead would queue.
 * @ra_window: pages read-ahead queues next; 0 while no pattern is seen.
 * @rcu: frees it once no lookup (under RCU) can still see it.
 */
struct rpage_mapping {
	struct kref ref;
	u32 id;
	const struct rpage_file *owner;
	struct inode *inode;
	struct address_space *mapping;
	bool dead;
	bool prefetched;
	int pool_lost;
	struct rpage_peer __rcu *peer;
	u64 pool_id;
	u64 pool_generation;
	u64 node_id;
	u64 pool_offset;
	pgoff_t pgoff;
	unsigned long nr_pages;
	u32 flags;
	struct rpage_fault_counters_pcpu __percpu *counters;
	spinlock_t ra_lock;		/* see kernel-doc */
	long ra_last;
	long ra_stride;
	long ra_next;
	unsigned int ra_window;
	struct rcu_head rcu;
};

/* How a fault ended, for its tracepoint: the UAPI's numbers. */
enum rpage_fault_result {
	RPAGE_FAULT_FETCHED	= RPAGE_FAULT_END_FETCHED,
	RPAGE_FAULT_MINOR	= RPAGE_FAULT_END_MINOR,
	RPAGE_FAULT_WAITED	= RPAGE_FAULT_END_WAITED,
	RPAGE_FAULT_SIGBUS	= RPAGE_FAULT_END_SIGBUS,
	RPAGE_FAULT_RETRY	= RPAGE_FAULT_END_RETRY,
};

/* The mmap offset of mapping @id, in pages; ids have 19 bits. */
#define RPAGE_MAP_ID_SHIFT	32
#define RPAGE_MAP_ID_MAX	((1U << 19) - 1)

/* rpage-pool.c: the memory this host exports. */
extern struct mutex rpage_pools_lock;

/* rpage-main.c */

/* A range of whole pages, as every ioctl that moves pages wants it. */
static inline bool rpage_page_range_valid(u64 offset, u64 length)
{
	return length && PAGE_ALIGNED(length) && PAGE_ALIGNED(offset);
}

long rpage_list_answer(void __user *argp, size_t entry_size, struct mutex *lock,
		       u32 (*fill)(void *entries, u32 filled, void *ctx),
		       void *ctx);
int rpage_addr_to_sockaddr(const struct rpage_addr *uaddr,
			   struct sockaddr_storage *ss);
bool rpage_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);
bool rpage_sockaddr_is_peer(const struct sockaddr *peer,
			    const struct sockaddr *from);
u16 rpage_sockaddr_port(const struct sockaddr *sa);
bool rpage_name_valid(const char *name);
unsigned long rpage_wait_done(struct completion *done, unsigned long timeout);

/*
 * How long work requests of a queue pair moved to the error state may
 * take to come back before their memory is left to the device for good:
 * the @timeout_ms the caller waited for them, at least a second, but
 * never more than RPAGE_FLUSH_GRACE_MAX_MS. A teardown waits for every
 * holder of the queue pair (an uninterruptible down_write), so this
 * bounds how long it sleeps, under the hung task reports' 120 s,
 * whatever io_timeout_ms is.
 */
#define RPAGE_FLUSH_GRACE_MAX_MS	30000U
static inline unsigned long rpage_flush_grace(unsigned int timeout_ms)
{
	return msecs_to_jiffies(clamp(timeout_ms, 1000U, RPAGE_FLUSH_GRACE_MAX_MS));
}

/* rpage-ibdev.c */
int rpage_ibdev_init(void);
void rpage_ibdev_exit(void);
struct rpage_ibdev *rpage_ibdev_get(struct ib_device *ibdev);
void rpage_ibdev_put(struct rpage_ibdev *dev);
void rpage_ibdev_unuse(struct rpage_ibdev *dev);
struct rpage_pd *rpage_pd_get(struct rpage_ibdev *dev, u32 peer_id);
void rpage_pd_put(struct rpage_pd *ppd);
long rpage_ioctl_device_list(struct rpage_file *rfile, void __user *argp);
int rpage_route_has_rdma(const struct sockaddr *addr);

/* rpage-conn.c */
void rpage_conn_init(struct rpage_conn *conn, struct rpage_peer *peer,
		     bool inbound, u16 index);
int rpage_conn_create_qp(struct rpage_conn *conn, struct rdma_cm_id *cm_id);
int rpage_conn_setup_recvs(struct rpage_conn *conn);
void rpage_conn_destroy(struct rpage_conn *conn);
void rpage_conn_abort(struct rpage_conn *conn);
bool __rpage_conn_set_state(struct rpage_conn *conn, enum rpage_conn_state new);
bool rpage_conn_set_state(struct rpage_conn *conn, enum rpage_conn_state new);
void rpage_conn_to_error(struct rpage_conn *conn);
bool rpage_conn_use(struct rpage_conn *conn, bool peer_up);
bool rpage_conn_going(struct rpage_conn *conn);
int rpage_conn_post_wait(struct rpage_conn *conn, struct ib_send_wr *wr,
			 unsigned int timeout_ms, const char *what);
int rpage_conn_send(struct rpage_conn *conn, const void *msg, u32 len,
		    unsigned int timeout_ms, const char *what);
void rpage_conn_heartbeat(struct rpage_conn *conn, const char *what);
int rpage_out_conn_connect(struct rpage_out_conn *oc);
void rpage_hello_init(struct rpage_hello *hello, u16 qp_index, u16 nr_qps);
u32 rpage_hello_check(const void *data, u8 len, struct rpage_hello *hello);
const char *rpage_reject_name(u32 reason);

/* rpage-peer.c */
unsigned int rpage_peer_nr_channels(void);
struct rpage_peer *rpage_peer_find_by_addr(const struct sockaddr *addr);
struct rpage_peer *rpage_peer_get_by_id(u32 id);
void rpage_peer_put(struct rpage_peer *peer);
bool rpage_peer_deleted(struct rpage_peer *peer);
void rpage_peer_note_remote(struct rpage_peer *peer,
			    const struct rpage_hello *hello);
__printf(2, 3)
void rpage_peer_conn_lost(struct rpage_conn *conn, const char *fmt, ...);

/* @peer just showed a sign of life (cheap: the data path calls it). */
static inline void rpage_peer_alive(struct rpage_peer *peer)
{
	unsigned long now = jiffies;

	if (READ_ONCE(peer->last_alive) != now)
		WRITE_ONCE(peer->last_alive, now);
}

/* @peer's state now, unlocked: it may change at once. */
static inline enum rpage_peer_state rpage_peer_state(struct rpage_peer *peer)
{
	return READ_ONCE(peer->state);
}

void rpage_peer_synced(struct rpage_peer *peer);
int rpage_peer_wait_synced(struct rpage_peer *peer, char *cause, size_t len);
int rpage_peer_wait_connected(struct rpage_peer *peer, bool killable,
			      unsigned long failed_since,
			      void (*before_wait)(void *ctx), void *ctx);
int rpage_peer_send_ctl(struct rpage_peer *peer, const void *msg, u32 len);
bool rpage_peer_inbound_room(struct rpage_peer *peer, u16 index);
int rpage_peer_inbound_add(struct rpage_peer *peer, struct rpage_in_conn *in);
void rpage_peer_inbound_established(struct rpage_in_conn *in);
void rpage_peer_inbound_closed(struct rpage_in_conn *in, const char *why);
struct rpage_in_conn **rpage_channels_collect(unsigned int *nr, bool synced);
void rpage_peers_device_removed(struct rpage_ibdev *dev);
void rpage_peers_device_added(void);
void rpage_peers_exit(void);
long rpage_ioctl_peer_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_list(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_set(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_peer_status(struct rpage_file *rfile, void __user *argp);
long rpage_peers_list_answer(void __user *argp, size_t entry_size,
			     void (*fill_entry)(struct rpage_peer *peer,
						void *entry));
long rpage_peers_list_walk(void __user *argp, size_t entry_size,
			   u32 (*fill_entries)(struct rpage_peer *peer,
					       void *entries, u32 filled,
					       u32 count));

/* rpage-rpool.c */
void rpage_msg_received(struct rpage_conn *conn, const void *buf, u32 len);
struct rpage_rpool *rpage_rpool_get(struct rpage_peer *peer, u64 pool_id,
				    u64 generation, u64 offset, u64 length,
				    bool write);
void rpage_rpool_put(struct rpage_rpool *rpool);
bool rpage_rpool_withdrawn(struct rpage_rpool *rpool);
void rpage_rpools_clear(struct rpage_peer *peer);
void rpage_peer_acks_init(struct rpage_peer *peer);
long rpage_ioctl_remote_pool_list(struct rpage_file *rfile, void __user *argp);

/* rpage-pool.c */
void rpage_pools_channel_init(struct rpage_in_conn *in);
void rpage_pools_channel_up(void);
void rpage_pools_channel_close(struct rpage_in_conn *in);
void rpage_pools_barrier(void);
void rpage_pools_acked(struct rpage_peer *peer, u64 pool_id, u64 generation);
struct rpage_pool;
int rpage_pool_access_begin(void);
void rpage_pool_access_end(int idx);
const struct rpage_pool *rpage_pool_lookup(u64 id, u64 generation,
					   struct rpage_peer *peer);
bool rpage_pool_pages_stable(const struct rpage_pool *pool);
struct page *rpage_pool_page(const struct rpage_pool *pool, u64 offset);
u64 rpage_pool_length(const struct rpage_pool *pool);
bool rpage_pool_writable(const struct rpage_pool *pool);
void rpage_pools_device_removed(struct rpage_ibdev *dev);
void rpage_pools_peer_removed(u32 peer_id);
void rpage_pools_file_release(struct rpage_file *rfile);
int rpage_pools_init(void);
void rpage_pools_exit(void);
long rpage_ioctl_pool_create(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_export(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_destroy(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_list(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_set_peers(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_get_peers(struct rpage_file *rfile, void __user *argp);

/* rpage-stats.c */
int rpage_counters_init(struct rpage_counters *c);
void rpage_counters_free(struct rpage_counters *c);
void rpage_counters_io(struct rpage_counters *c, bool write,
		       unsigned int pages, u64 ns, bool failed);
void rpage_counters_sum(const struct rpage_counters *c, struct rpage_stats *out);
long rpage_ioctl_peer_stats(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_device_stats(struct rpage_file *rfile, void __user *argp);

int rpage_fault_counters_init(struct rpage_fault_counters_pcpu __percpu **c);
void rpage_fault_counters_free(struct rpage_fault_counters_pcpu __percpu **c);
void rpage_fault_count(struct rpage_mapping *map, enum rpage_fault_count what,
		       u64 n);
void rpage_fault_count_latency(struct rpage_mapping *map, u64 ns);
void rpage_fault_counters_sum_huge(struct rpage_fault_counters_pcpu __percpu *c,
				   u64 fallbacks[RPAGE_HUGE_FB_MAX]);
void rpage_fault_counters_sum(struct rpage_fault_counters_pcpu __percpu *c,
			      struct rpage_fault_stats *out);
long rpage_ioctl_peer_fault_stats(struct rpage_file *rfile, void __user *argp);

/* rpage-xfer.c */
int rpage_xfer(struct rpage_xfer *x);
int rpage_xfer_start(struct rpage_xfer *x);
void rpage_xfer_started_end(struct rpage_xfer_run *run, int status);
void rpage_xfer_locate(struct rpage_xfer_run *run, unsigned long g,
		       const struct rpage_rpool **rpool, u64 *offset);
void rpage_xfer_moved(struct rpage_xfer_run *run, unsigned long first,
		      unsigned long nr);
void rpage_xfer_slow(void *ctx);
void rpage_xfer_wake(struct wait_queue_head *wq, const void *key);
void rpage_xfer_wake_one(struct wait_queue_head *wq);
long rpage_xfer_sleep(struct wait_queue_head *wq, const void *key,
		      bool (*ready)(void *arg), void *arg, long timeout,
		      bool killable);

/* rpage-rdma-peer.c */
extern const struct rpage_transport_ops rpage_rdma_transport;
struct rpage_conn *rpage_peer_use_conn(struct rpage_peer *peer,
				       unsigned int index);
struct rpage_conn *rpage_peer_use_data_conn(struct rpage_peer *peer,
					    bool write);

/* rpage-loop.c */
extern const struct rpage_transport_ops rpage_loop_transport;

/* rpage-tcp.c, rpage-tcp-xfer.c */
extern const struct rpage_transport_ops rpage_tcp_transport;
struct rpage_tcp_listener;
struct rpage_endpoint_counters;
int rpage_tcp_init(void);
void rpage_tcp_exit(void);
struct rpage_tcp_listener *
rpage_tcp_listen(const struct sockaddr_storage *addr,
		 struct rpage_endpoint_counters *counters);
void rpage_tcp_unlisten(struct rpage_tcp_listener *tl);

/* rpage-rdma-xfer.c */
struct rpage_xfer_run *rpage_rdma_run_alloc(struct rpage_xfer *x, size_t tail,
					    void **tailp);
void rpage_rdma_run_free(struct rpage_xfer_run *run);
int rpage_rdma_xfer_begin(struct rpage_xfer_run *run);
int rpage_rdma_xfer_start(struct rpage_xfer_run *run);
int rpage_rdma_xfer_move(struct rpage_xfer_run *run);
void rpage_rdma_xfer_end(struct rpage_xfer_run *run);
void rpage_rdma_conn_drain(struct rpage_conn *conn);
void rpage_rdma_cq_event(struct ib_cq *cq, void *ctx);
void rpage_rdma_poll_work_fn(struct work_struct *work);

/* rpage-io.c */
long rpage_ioctl_read(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_write(struct rpage_file *rfile, void __user *argp);

/* rpage-map.c */
long rpage_ioctl_map(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_unmap(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_evict(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_stats(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_huge_stats(struct rpage_file *rfile, void __user *argp);
struct rpage_mapping *rpage_map_get(const struct rpage_file *rfile, u64 id,
				    bool named);
/* rpage-events.c: events over generic netlink (see the UAPI header). */
int rpage_events_init(void);
void rpage_events_exit(void);
bool rpage_events_wanted(void);
void rpage_event_peer_state(const struct rpage_peer *peer, u32 old, u32 new,
			    const char *cause);
void rpage_event_rpool(const struct rpage_peer *peer, u64 pool_id,
		       u64 length, u64 generation, const char *gone);
void rpage_event_map_add(const char *name, u64 map_id,
			 const struct rpage_peer *peer, u64 pool_id,
			 u64 offset, u64 length);
void rpage_event_map_del(const char *name, u64 map_id);
void rpage_event_prefetch_end(u64 map_id, u64 pages, u64 failed, u64 local,
			      u64 map_pages, const char *stopped);

struct rpage_mapping *rpage_map_new(struct rpage_map *arg);
int rpage_map_insert(struct rpage_mapping *map);
void rpage_map_remove(struct rpage_mapping *map);
void rpage_map_kill(struct rpage_mapping *map);
void rpage_map_keep(struct rpage_mapping *map);
void rpage_map_vma_init(struct vm_area_struct *vma, struct rpage_mapping *map);
int rpage_map_check(const struct rpage_map *arg);
struct rpage_mapping *rpage_map_get_range(const struct rpage_file *rfile,
					  u64 id, u64 offset, u64 length);
void rpage_map_put(struct rpage_mapping *map);
void rpage_maps_file_release(struct rpage_file *rfile);
int rpage_mmap(struct file *file, struct vm_area_struct *vma);
bool rpage_map_folio_ready(struct rpage_mapping *map, struct folio *folio);
unsigned long rpage_map_pages_cached(struct rpage_mapping *map, pgoff_t first,
				     pgoff_t last, bool uptodate);
struct rpage_peer *rpage_map_peer_get(struct rpage_mapping *map);
void rpage_maps_peer_deleted(struct rpage_peer *peer);
void rpage_map_xfer_init(struct rpage_mapping *map, struct rpage_xfer *x,
			 struct rpage_xfer_range *range, bool write,
			 const unsigned long *index, struct page **pages,
			 unsigned long nr);
void rpage_map_xfer_release(struct rpage_xfer *x);

/* rpage-fs.c */
int rpage_fs_init(void);
void rpage_fs_exit(void);
struct inode *rpage_fs_inode_new(struct rpage_mapping *map, bool writable);
int rpage_fs_fsync(struct file *file, loff_t start, loff_t end, int datasync);
struct file *rpage_fs_file_new(struct rpage_mapping *map);

/* rpage-named.c */
int rpage_named_init(void);
void rpage_named_exit(void);
long rpage_ioctl_pool_file(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_list(struct rpage_file *rfile, void __user *argp);

/* rpage-fault.c */
int rpage_fault_init(void);
void rpage_fault_exit(void);
vm_fault_t rpage_vm_fault(struct vm_fault *vmf);
vm_fault_t rpage_vm_map_pages(struct vm_fault *vmf, pgoff_t start_pgoff,
			      pgoff_t end_pgoff);
long rpage_ioctl_prefetch(struct rpage_file *rfile, void __user *argp);

/* rpage-endpoint.c */

/**
 * struct rpage_endpoint_counters - what an endpoint did with connections
 * @accepted: accepted.
 * @rejected_unknown: refused: not from a configured peer.
 * @rejected_version: refused: incompatible protocol.
 * @rejected_other: refused for any other reason.
 */
struct rpage_endpoint_counters {
	atomic64_t accepted;
	atomic64_t rejected_unknown;
	atomic64_t rejected_version;
	atomic64_t rejected_other;
};

void rpage_endpoint_count_reject(struct rpage_endpoint_counters *c,
				 u32 reason);
void rpage_endpoints_device_removed(struct rpage_ibdev *dev);
void rpage_endpoints_device_added(void);
void rpage_endpoints_exit(void);
long rpage_ioctl_endpoint_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_list(struct rpage_file *rfile, void __user *argp);

#endif /* RPAGE_PRI_H */
