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
#include <linux/rwsem.h>
#include <linux/scatterlist.h>
#include <linux/xarray.h>
#include <linux/mm_types.h>
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
 * @pd: the protection domain every queue pair on the device uses.
 * @ref: keeps this structure; held by lookups and by @users.
 * @users: queue pairs on the device; removal waits until none is left.
 * @users_wait: where removal waits.
 * @counters: traffic and connections on the device.
 */
struct rpage_ibdev {
	struct list_head entry;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct kref ref;
	atomic_t users;
	wait_queue_head_t users_wait;
	struct rpage_counters counters;
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
struct rpage_io_op;

/**
 * struct rpage_conn - one RC queue pair to or from a peer
 * @kind: RPAGE_CM_CONN.
 * @peer: the peer; an inbound connection holds a reference.
 * @cm_id: its rdma_cm id; the queue pair is @cm_id->qp.
 * @dev: the device of @cm_id, referenced while the queue pair exists.
 * @cq: outbound: the send completion queue, polled by the data path
 *	(IB_POLL_DIRECT); inbound: the one completion queue.
 * @recv_cq: outbound: the receive completion queue (control messages).
 * @recvs: outbound, first queue pair: the posted receive buffers.
 * @recv_lock: orders reposting a receive against teardown.
 * @closing: set under @recv_lock before the queue pair is destroyed.
 * @sq_free: send queue slots not taken by work requests in flight.
 * @max_write_sge: outbound: pages one RDMA WRITE may gather.
 * @max_read_sge: outbound: pages one RDMA READ may scatter into.
 * @inbound: the peer opened it (we serve); else we opened it (we read).
 * @index: which of the opener's queue pairs to the peer this is.
 * @state: RPAGE_CONN_*, changed under the owner's lock.
 * @claimed: inbound: whoever set it (under the peer's inbound_lock)
 *	tears the connection down; nobody else touches it after.
 * @synced: inbound, the reader's first queue pair: it has been sent
 *	every pool (under rpage_pools_lock).
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
	struct ib_cq *recv_cq;
	struct rpage_recv *recvs;
	spinlock_t recv_lock;		/* see kernel-doc */
	bool closing;
	atomic_t sq_free;
	u32 max_write_sge;
	u32 max_read_sge;
	bool inbound;
	u16 index;
	enum rpage_conn_state state;
	bool claimed;
	bool synced;
	int error;
	u32 reject_reason;
	struct completion done;
	struct list_head entry;
	struct work_struct release_work;
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
 * @entry: link in the peer's @rpools.
 * @id: the pool's id on the peer.
 * @length: bytes.
 * @mr_bytes: bytes each of its memory regions covers.
 * @flags: RPAGE_POOL_*.
 * @nr_mrs: memory regions in the pool.
 * @received: how many of @mrs have arrived; usable when all have.
 * @inflight: reads and writes using it now (under the peer's
 *	rpools_lock).
 * @withdrawn: the peer withdrew it; it is off the list, and the last
 *	read or write acknowledges and frees it.
 * @mrs: where each region is: address and key.
 */
struct rpage_rpool {
	struct list_head entry;
	u64 id;
	u64 length;
	u64 mr_bytes;
	u32 flags;
	u32 nr_mrs;
	u32 received;
	u32 inflight;
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
 * @counters: traffic to the peer; its connects are outbound connection
 *	sets established, its rejects outbound attempts the peer refused.
 * @fault_counters: the fault path of every mapping of its pools.
 * @id: the handle userspace names the peer by in reads and writes.
 * @io_rwsem: held for reading by every read or write in flight on the
 *	outbound queue pairs, for writing while they are torn down.
 * @rpools_lock: protects @rpools.
 * @rpools: the pools the peer exports to us (struct rpage_rpool).
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
	struct rpage_counters counters;
	struct rpage_fault_counters_pcpu __percpu *fault_counters;
	u32 id;
	struct rw_semaphore io_rwsem;
	spinlock_t rpools_lock;		/* see kernel-doc */
	struct list_head rpools;
};

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
	RPAGE_FC_NR,
};

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
 * struct rpage_io_req - pages in flight on one queue pair for one caller
 * @conn: the queue pair.
 * @write: RDMA WRITEs to the pool, else READs from it.
 * @pending: work requests posted and not completed.
 * @status: the first failure a completion reported, 0 if none.
 * @depth: most work requests in flight at once; 0 for as many as the
 *	send queue holds.
 * @complete: if set, told of each work request as it completes (in the
 *	context of whoever polls the completion queue; must not sleep).
 */
struct rpage_io_req {
	struct rpage_conn *conn;
	bool write;
	atomic_t pending;
	int status;
	unsigned int depth;
	void (*complete)(struct rpage_io_op *op, int status);
};

/**
 * struct rpage_io_op - one work request: pages adjacent in the pool, or
 *	a control message
 * @cqe: completion entry.
 * @wr: the work request; its gather list is the caller's, one entry per
 *	page, @wr.wr.num_sge pages (or the message).
 * @req: the run it belongs to.
 * @posted_ns: when it was posted.
 * @first: the index of its first page in the caller's arrays.
 */
struct rpage_io_op {
	struct ib_cqe cqe;
	struct ib_rdma_wr wr;
	struct rpage_io_req *req;
	u64 posted_ns;
	unsigned int first;
};

/**
 * struct rpage_mapping - a remote mapping (RPAGE_IOC_MAP)
 * @ref: held by its file's table (until RPAGE_IOC_UNMAP or close), by
 *	every virtual memory area mapping it and by prefetches in flight.
 * @id: its id; the mmap offset is @id << RPAGE_MAP_ID_SHIFT pages.
 * @owner: the file it was created through; only compared, never used.
 * @f_mapping: the address space of that file, for unmapping pages.
 * @peer: the peer whose pool it maps, referenced.
 * @pool_id: the pool.
 * @pool_offset: where in the pool the mapping starts, bytes.
 * @pgoff: the page offset of its first page in @f_mapping.
 * @nr_pages: pages.
 * @flags: RPAGE_MAP_*.
 * @pages: its pages by index: absent (NULL), here (a struct page, holding
 *	a reference) or busy being fetched or evicted (RPAGE_PAGE_BUSY).
 * @counters: its fault-path counters, per CPU.
 * @ra_lock: protects the read-ahead state below.
 * @ra_last: the index of the last fault.
 * @ra_stride: the distance between the last two faults.
 * @ra_next: the next index read-ahead would queue.
 * @ra_window: pages read-ahead queues next; 0 while no pattern is seen.
 */
struct rpage_mapping {
	struct kref ref;
	u32 id;
	const struct rpage_file *owner;
	struct address_space *f_mapping;
	struct rpage_peer *peer;
	u64 pool_id;
	u64 pool_offset;
	pgoff_t pgoff;
	unsigned long nr_pages;
	u32 flags;
	struct xarray pages;
	struct rpage_fault_counters_pcpu __percpu *counters;
	spinlock_t ra_lock;		/* see kernel-doc */
	long ra_last;
	long ra_stride;
	long ra_next;
	unsigned int ra_window;
};

/* How a fault ended, for its tracepoint. */
enum rpage_fault_result {
	RPAGE_FAULT_FETCHED,
	RPAGE_FAULT_MINOR,
	RPAGE_FAULT_WAITED,
	RPAGE_FAULT_SIGBUS,
};

/* The mmap offset of mapping @id, in pages; ids have 19 bits. */
#define RPAGE_MAP_ID_SHIFT	32
#define RPAGE_MAP_ID_MAX	((1U << 19) - 1)

/* A page of a mapping being fetched or evicted: faults on it wait. */
#define RPAGE_PAGE_BUSY		xa_mk_value(1)
/* A page prefetch brought in and no fault has used yet. */
#define RPAGE_MARK_PREFETCHED	XA_MARK_0

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

struct rpage_peer *rpage_peer_get_by_id(u32 id);
struct rpage_conn **rpage_channels_collect(unsigned int *nr);
void rpage_peer_io_failed(struct rpage_peer *peer);
long rpage_ioctl_remote_pool_list(struct rpage_file *rfile, void __user *argp);
void rpage_conn_recv_done(struct ib_cq *cq, struct ib_wc *wc);
int rpage_conn_setup_recvs(struct rpage_conn *conn);
void rpage_conn_free_recvs(struct rpage_conn *conn);
void rpage_rpool_put(struct rpage_peer *peer, struct rpage_rpool *rpool);

/* rpage-pool.c */
void rpage_pools_channel_up(void);
void rpage_pools_barrier(void);
void rpage_pools_acked(u64 pool_id);
void rpage_pools_device_removed(struct rpage_ibdev *dev);
void rpage_pools_file_release(struct rpage_file *rfile);
void rpage_pools_exit(void);
long rpage_ioctl_pool_create(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_export(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_destroy(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_pool_list(struct rpage_file *rfile, void __user *argp);

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
void rpage_fault_counters_sum(struct rpage_fault_counters_pcpu __percpu *c,
			      struct rpage_fault_stats *out);
long rpage_ioctl_peer_fault_stats(struct rpage_file *rfile, void __user *argp);

/* rpage-io.c */
long rpage_ioctl_read(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_write(struct rpage_file *rfile, void __user *argp);
int rpage_io_begin(struct rpage_peer *peer, struct rpage_conn **connp);
void rpage_io_end(struct rpage_peer *peer);
struct rpage_rpool *rpage_rpool_get(struct rpage_peer *peer, u64 pool_id,
				    u64 offset, u64 length, bool write);
unsigned int rpage_io_map_pages(struct rpage_io_req *req, struct page **pages,
				unsigned int nr, struct ib_sge *sges);
void rpage_io_unmap_pages(struct rpage_io_req *req, const struct ib_sge *sges,
			  unsigned int nr);
unsigned int rpage_io_build(struct rpage_io_req *req,
			    const struct rpage_rpool *rpool, u64 offset,
			    const unsigned long *index, struct ib_sge *sges,
			    unsigned int nr, struct rpage_io_op *ops);
void rpage_io_build_send(struct rpage_io_req *req, struct ib_sge *sge,
			 struct rpage_io_op *op);
int rpage_io_run(struct rpage_io_req *req, struct rpage_io_op *ops,
		 unsigned int n);
bool rpage_io_transport_error(int err);

/* rpage-map.c */
long rpage_ioctl_map(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_unmap(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_evict(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_map_stats(struct rpage_file *rfile, void __user *argp);
struct rpage_mapping *rpage_map_get(const struct rpage_file *rfile, u64 id);
struct rpage_mapping *rpage_map_get_range(const struct rpage_file *rfile,
					  u64 id, u64 offset, u64 length);
void rpage_map_put(struct rpage_mapping *map);
void rpage_maps_file_release(struct rpage_file *rfile);
int rpage_mmap(struct file *file, struct vm_area_struct *vma);
void rpage_map_wake(struct rpage_mapping *map);

/* rpage-fault.c */
int rpage_fault_init(void);
void rpage_fault_exit(void);
vm_fault_t rpage_vm_fault(struct vm_fault *vmf);
long rpage_ioctl_prefetch(struct rpage_file *rfile, void __user *argp);

/* rpage-endpoint.c */
void rpage_endpoints_device_removed(struct rpage_ibdev *dev);
void rpage_endpoints_device_added(void);
void rpage_endpoints_exit(void);
long rpage_ioctl_endpoint_add(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_del(struct rpage_file *rfile, void __user *argp);
long rpage_ioctl_endpoint_list(struct rpage_file *rfile, void __user *argp);

#endif /* RPAGE_PRI_H */
