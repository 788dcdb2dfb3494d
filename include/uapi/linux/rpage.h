/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rpage: remote page faults over RDMA.
 *
 * The ioctl ABI of /dev/rpage. This header is the one contract between
 * rpage.ko and userspace: structures are fixed-width, explicitly padded,
 * and never change once released. The ABI grows by new commands and new
 * feature bits announced by RPAGE_IOC_API.
 *
 * Every file descriptor must complete the RPAGE_IOC_API handshake before
 * any other command; until then other commands fail with EINVAL.
 */
#ifndef _UAPI_LINUX_RPAGE_H
#define _UAPI_LINUX_RPAGE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Path of the misc device, relative to /dev. */
#define RPAGE_DEVICE_NAME	"rpage"

/* The only API version so far. */
#define RPAGE_API		1

/*
 * Feature bits a caller may request in struct rpage_api.features;
 * requesting an unknown bit fails with EINVAL.
 *
 * RPAGE_FEATURE_PEER_REFUSALS: struct rpage_peer_status counts what this
 * host refused of the peer (@refused_msgs, @refused_pools, @refused_qps;
 * reserved, hence zero, on a module without the bit).
 *
 * RPAGE_FEATURE_TRANSPORT: struct rpage_peer_config.transport chooses a
 * peer's transport (RPAGE_TRANSPORT_*), and struct rpage_peer_info
 * .transport reports the one in use. A module without the bit refuses a
 * non-zero @transport with EINVAL (it was reserved) and reports zero.
 *
 * RPAGE_FEATURE_TCP: RPAGE_TRANSPORT_TCP exists; struct rpage_endpoint
 * .transport chooses what an endpoint listens with, and struct
 * rpage_endpoint_info.transport reports it; RPAGE_REJECT_TRANSPORT may
 * be reported. A module without the bit refuses RPAGE_TRANSPORT_TCP and
 * a non-zero endpoint @transport with EINVAL.
 *
 * RPAGE_FEATURE_POOL_PEERS: pools may be scoped to some peers
 * (RPAGE_POOL_SCOPED, RPAGE_IOC_POOL_SET_PEERS, RPAGE_IOC_POOL_GET_PEERS),
 * and struct rpage_peer_status.refused_access counts a peer's accesses
 * of pools not scoped to it. A module without the bit refuses
 * RPAGE_POOL_SCOPED with EINVAL and reports zero in @refused_access.
 *
 * RPAGE_FEATURE_FAULT_LOCKS: struct rpage_fault_stats counts the calls of
 * the fault handler by the lock they came with (@vma_locked,
 * @mmap_locked; reserved, hence zero, on a module without the bit).
 *
 * RPAGE_FEATURE_RECLAIM: the kernel may drop a mapping's clean pages
 * under memory pressure, of the host or of the memory cgroup they are
 * charged to (and with MADV_PAGEOUT), and the next touch reads them
 * again, counted in struct rpage_fault_stats.refetched; RPAGE_PREFETCH_KEEP
 * exists. Without the bit, every page stays until evicted or unmapped
 * (and RPAGE_PREFETCH_KEEP is refused with EINVAL).
 *
 * RPAGE_FEATURE_WRITEBACK: the dirty pages of a mapping of a writable
 * pool are written back to the pool by the kernel's flusher (dirty
 * memory of their cgroup, held to the dirty limits), and by msync(2)
 * and fsync(2), after which reclaim may drop them; counted in struct
 * rpage_fault_stats.written. Without the bit, only eviction writes them
 * back.
 *
 * RPAGE_FEATURE_MAP_TO_END: RPAGE_MAP_TO_END, a mapping to the end of
 * the pool, whatever its length; a module without the bit refuses the
 * flag with EINVAL.
 *
 * RPAGE_FEATURE_EVENTS: the module multicasts events over generic netlink
 * (RPAGE_GENL_NAME, below); without the bit there is no such family.
 */
#define RPAGE_FEATURE_PEER_REFUSALS	(1ULL << 0)
#define RPAGE_FEATURE_TRANSPORT		(1ULL << 1)
#define RPAGE_FEATURE_TCP		(1ULL << 2)
#define RPAGE_FEATURE_POOL_PEERS	(1ULL << 3)
#define RPAGE_FEATURE_FAULT_LOCKS	(1ULL << 4)
#define RPAGE_FEATURE_RECLAIM		(1ULL << 5)
#define RPAGE_FEATURE_WRITEBACK		(1ULL << 6)
#define RPAGE_FEATURE_HUGE		(1ULL << 7)
#define RPAGE_FEATURE_MAP_TO_END	(1ULL << 8)
#define RPAGE_FEATURE_EVENTS		(1ULL << 9)
#define RPAGE_FEATURES_ALL	(RPAGE_FEATURE_PEER_REFUSALS | \
				 RPAGE_FEATURE_TRANSPORT | \
				 RPAGE_FEATURE_TCP | \
				 RPAGE_FEATURE_POOL_PEERS | \
				 RPAGE_FEATURE_FAULT_LOCKS | \
				 RPAGE_FEATURE_RECLAIM | \
				 RPAGE_FEATURE_WRITEBACK | \
				 RPAGE_FEATURE_HUGE | \
				 RPAGE_FEATURE_MAP_TO_END | \
				 RPAGE_FEATURE_EVENTS)

/* Bounds of names and of strings the kernel reports. */
#define RPAGE_NAME_MAX		64

#define RPAGE_IOC_MAGIC		0xE7

/* The port endpoints listen on and peers are reached at by default. */
#define RPAGE_DEFAULT_PORT	7471

/* Command numbers; RPAGE_IOC_API reports them as bits in .ioctls. */
enum {
	_RPAGE_API		= 0x00,
	_RPAGE_DEVICE_LIST	= 0x01,
	_RPAGE_ENDPOINT_ADD	= 0x02,
	_RPAGE_ENDPOINT_DEL	= 0x03,
	_RPAGE_ENDPOINT_LIST	= 0x04,
	_RPAGE_PEER_ADD		= 0x05,
	_RPAGE_PEER_DEL		= 0x06,
	_RPAGE_PEER_LIST	= 0x07,
	_RPAGE_POOL_CREATE	= 0x08,
	_RPAGE_POOL_EXPORT	= 0x09,
	_RPAGE_POOL_DESTROY	= 0x0a,
	_RPAGE_POOL_LIST	= 0x0b,
	_RPAGE_REMOTE_POOL_LIST	= 0x0c,
	_RPAGE_READ		= 0x0d,
	_RPAGE_WRITE		= 0x0e,
	_RPAGE_PEER_STATS	= 0x0f,
	_RPAGE_DEVICE_STATS	= 0x10,
	_RPAGE_MAP		= 0x11,
	_RPAGE_UNMAP		= 0x12,
	_RPAGE_PREFETCH		= 0x13,
	_RPAGE_EVICT		= 0x14,
	_RPAGE_MAP_STATS	= 0x15,
	_RPAGE_PEER_FAULT_STATS	= 0x16,
	_RPAGE_PEER_SET		= 0x17,
	_RPAGE_PEER_STATUS	= 0x18,
	_RPAGE_MAP_ADD		= 0x19,
	_RPAGE_MAP_DEL		= 0x1a,
	_RPAGE_MAP_LIST		= 0x1b,
	_RPAGE_POOL_FILE	= 0x1c,
	_RPAGE_POOL_SET_PEERS	= 0x1d,
	_RPAGE_POOL_GET_PEERS	= 0x1e,
	_RPAGE_MAP_HUGE_STATS	= 0x1f,
};

/**
 * struct rpage_api - the API and feature handshake
 * @api: in: the API version the caller speaks (RPAGE_API).
 *	out: the version the module speaks, also written back when the
 *	call fails with EINVAL because the versions differ.
 * @features: in: feature bits the caller needs; unknown bits fail with
 *	EINVAL. out: every feature bit the module supports.
 * @ioctls: out: bit (1 << nr) set for every supported command number.
 * @reserved: must be zero.
 *
 * Unlike UFFDIO_API, the handshake may be repeated on the same file and
 * changes nothing but the features enabled for that file.
 */
struct rpage_api {
	__u32 api;
	__u32 reserved0;
	__u64 features;
	__u64 ioctls;
	__u64 reserved[4];
};

/**
 * struct rpage_device_info - an RDMA device rpage.ko is attached to
 * @name: the ib_device name, NUL-terminated.
 * @node_guid: the node GUID, in host byte order.
 * @index: the ib_device index (as shown by `rdma dev`).
 * @port_count: number of physical ports.
 * @reserved: zero.
 */
struct rpage_device_info {
	char  name[RPAGE_NAME_MAX];
	__u64 node_guid;
	__u32 index;
	__u32 port_count;
	__u64 reserved[4];
};

/**
 * struct rpage_list - the argument of every RPAGE_IOC_*_LIST command
 * @entries: in: user pointer to an array of the command's info struct.
 * @capacity: in: number of entries that fit in @entries.
 * @count: in: must be zero. out: number of objects; may exceed
 *	@capacity, in which case only @capacity entries were written.
 * @reserved: must be zero.
 */
struct rpage_list {
	__u64 entries;
	__u32 capacity;
	__u32 count;
	__u64 reserved[2];
};

/**
 * struct rpage_addr - an IPv4 or IPv6 address and port
 * @family: AF_INET or AF_INET6.
 * @port: the port, in host byte order; 0 means RPAGE_DEFAULT_PORT.
 * @scope_id: the IPv6 scope (interface index) of a link-local address;
 *	must be zero otherwise.
 * @addr: the address in network byte order: 4 bytes for AF_INET (the
 *	other 12 must be zero), 16 for AF_INET6 (not an IPv4-mapped one:
 *	use AF_INET).
 */
struct rpage_addr {
	__u16 family;
	__u16 port;
	__u32 scope_id;
	__u8  addr[16];
};

/**
 * struct rpage_endpoint - add or delete a listening endpoint
 * @addr: the local address to listen on; a wildcard address listens on
 *	every RDMA device (and every interface, over TCP).
 * @transport: what it listens with (RPAGE_FEATURE_TCP; before it,
 *	reserved: zero): RPAGE_TRANSPORT_AUTO listens for TCP connections
 *	on the address's port, and for RDMA ones too if the address has an
 *	RDMA device; RPAGE_TRANSPORT_RDMA only RDMA, RPAGE_TRANSPORT_TCP
 *	only TCP. Delete goes by @addr and wants it zero.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 */
struct rpage_endpoint {
	struct rpage_addr addr;
	__u32 transport;
	__u32 reserved0;
	__u64 reserved[3];
};

/* Endpoint states (struct rpage_endpoint_info.state). */
enum {
	RPAGE_ENDPOINT_LISTENING	= 1,
	/* Its RDMA device went away; it listens again when one returns. */
	RPAGE_ENDPOINT_DOWN		= 2,
};

/**
 * struct rpage_endpoint_info - a listening endpoint
 * @addr: the address it listens on.
 * @state: RPAGE_ENDPOINT_*.
 * @transport: a bit per transport it listens with, 1 << RPAGE_TRANSPORT_*
 *	(RPAGE_FEATURE_TCP; zero on a module without it).
 * @accepted: connections accepted.
 * @rejected_unknown: connections refused: not from a configured peer.
 * @rejected_version: connections refused: incompatible protocol.
 * @rejected_other: connections refused for any other reason.
 * @reserved: zero.
 */
struct rpage_endpoint_info {
	struct rpage_addr addr;
	__u32 state;
	__u32 transport;
	__u64 accepted;
	__u64 rejected_unknown;
	__u64 rejected_version;
	__u64 rejected_other;
	__u64 reserved[4];
};

/*
 * Transports (struct rpage_peer_config.transport, RPAGE_FEATURE_TRANSPORT).
 * RPAGE_TRANSPORT_AUTO picks one for the peer's address when the peer is
 * added: RDMA if the route to it has an RDMA device, else TCP (with
 * RPAGE_FEATURE_TCP; RDMA without it). RPAGE_TRANSPORT_TCP carries the
 * same protocol over kernel TCP sockets: no RDMA device needed, pages
 * copied by the network stack. RPAGE_TRANSPORT_LOOP is this host itself,
 * with no network: its pools are read and written by copying their
 * pages, through the same peer, pool table and fault path as a remote
 * peer's. A host has at most one loop peer; it has no address.
 */
enum {
	RPAGE_TRANSPORT_AUTO	= 0,
	RPAGE_TRANSPORT_RDMA	= 1,
	RPAGE_TRANSPORT_LOOP	= 2,
	RPAGE_TRANSPORT_TCP	= 3,
};

/**
 * struct rpage_peer_config - add or delete a peer
 * @name: the operator's name for the peer, NUL-terminated, made of
 *	[A-Za-z0-9._-]; unique on this host.
 * @addr: where the peer's endpoint listens (add only; delete goes by
 *	@name and wants @addr zero). The address, whatever the port, is
 *	unique on this host: incoming connections are matched to peers by
 *	address alone. Zero for a loop peer.
 * @flags: must be zero.
 * @transport: RPAGE_TRANSPORT_* (add only; zero on delete). Before
 *	RPAGE_FEATURE_TRANSPORT, reserved: must be zero.
 * @reserved: must be zero.
 */
struct rpage_peer_config {
	char  name[RPAGE_NAME_MAX];
	struct rpage_addr addr;
	__u32 flags;
	__u32 transport;
	__u64 reserved[4];
};

/*
 * Peer states (struct rpage_peer_info.state). A peer is connected once
 * every queue pair to it is up and it has sent its pool table; while it
 * is connecting or reconnecting, reads, writes and faults of its pools
 * wait for it, up to its loss timeout (struct rpage_peer_set).
 */
enum {
	RPAGE_PEER_CONNECTING	= 1,
	RPAGE_PEER_CONNECTED	= 2,
	RPAGE_PEER_RECONNECTING	= 3,
	/* The peer refused us for good (incompatible protocol). */
	RPAGE_PEER_FAILED	= 4,
	/* Only in events (RPAGE_EVENT_PEER_STATE): the peer was deleted. */
	RPAGE_PEER_DELETED	= 5,
};

/*
 * How a fault ended: the result field of the tracepoint
 * rpage:rpage_fault_end, which its text output prints by name and
 * bpftrace and perf scripts see as these numbers.
 */
enum {
	/* It read its page from the peer. */
	RPAGE_FAULT_END_FETCHED	= 0,
	/* The page was here already. */
	RPAGE_FAULT_END_MINOR	= 1,
	/* It waited for a READ in flight: another fault's or a prefetch's. */
	RPAGE_FAULT_END_WAITED	= 2,
	/* The page could not be read: SIGBUS. */
	RPAGE_FAULT_END_SIGBUS	= 3,
	/*
	 * Answered VM_FAULT_RETRY: it dropped mmap_lock to wait, or could
	 * not wait at all (FAULT_FLAG_RETRY_NOWAIT); the retried fault ends
	 * again.
	 */
	RPAGE_FAULT_END_RETRY	= 4,
};

/*
 * Why a fault of an RPAGE_MAP_HUGE mapping read 4 KiB where it wanted
 * its 2 MiB region whole, or a prefetch or pull read a region 4 KiB at a
 * time: the index of struct rpage_map_huge_stats.fallbacks, and the
 * cause field of the tracepoint rpage:rpage_huge_fallback.
 */
enum {
	/* The region goes past the end of the mapping. */
	RPAGE_HUGE_FB_TAIL		= 0,
	/*
	 * Huge pages are switched off for the area (MADV_NOHUGEPAGE) or
	 * for the process (PR_SET_THP_DISABLE).
	 */
	RPAGE_HUGE_FB_DISABLED		= 1,
	/*
	 * The area does not hold the region whole, at an address 2 MiB
	 * aligned against its offset.
	 */
	RPAGE_HUGE_FB_UNALIGNED		= 2,
	/* The process maps the region with 4 KiB pages already. */
	RPAGE_HUGE_FB_PTE_TABLE		= 3,
	/* 4 KiB pages of the region are here. */
	RPAGE_HUGE_FB_SMALL_CACHED	= 4,
	/*
	 * No free 2 MiB of memory without reclaim or compaction, or the
	 * memory cgroup's limit.
	 */
	RPAGE_HUGE_FB_NOMEM		= 5,
};

/* Entries of struct rpage_map_huge_stats.fallbacks: room for new causes. */
#define RPAGE_HUGE_FB_MAX		16

/* Why a peer refused a connection (struct rpage_peer_info.last_reject). */
enum {
	RPAGE_REJECT_NONE		= 0,
	RPAGE_REJECT_UNKNOWN_PEER	= 1,
	RPAGE_REJECT_VERSION		= 2,
	RPAGE_REJECT_BAD_HELLO		= 3,
	RPAGE_REJECT_NO_RESOURCES	= 4,
	RPAGE_REJECT_UNSPECIFIED	= 5,
	/* The peer has us configured with another transport. */
	RPAGE_REJECT_TRANSPORT		= 6,
};

/**
 * struct rpage_peer_info - a peer and its connections
 * @name: the peer's name.
 * @addr: the peer's endpoint.
 * @state: RPAGE_PEER_*, of the connections this host opens to the peer.
 * @last_reject: RPAGE_REJECT_*: why the peer last refused a connection.
 * @last_error: the (positive) errno of the last failed connection
 *	attempt, 0 if none.
 * @qps: queue pairs this host opens to the peer.
 * @qps_connected: of those, how many are connected.
 * @qps_inbound: queue pairs the peer has open to this host.
 * @remote_node_id: the peer's node id, 0 until it has been seen.
 * @remote_proto: the peer's protocol version, major << 16 | minor.
 * @id: the peer's handle in struct rpage_iovec; never 0, never reused
 *	while the module is loaded.
 * @connects: connections established to the peer.
 * @rejects: connections the peer refused.
 * @transport: RPAGE_TRANSPORT_RDMA, _TCP or _LOOP: the one in use
 *	(RPAGE_FEATURE_TRANSPORT; zero on a module without it). Over TCP,
 *	the "queue pairs" are TCP connections. A loop
 *	peer has no queue pairs: @qps and @qps_connected are zero, and
 *	@qps_inbound counts its one channel to this host's pools.
 * @reserved0: zero.
 * @reserved: zero.
 */
struct rpage_peer_info {
	char  name[RPAGE_NAME_MAX];
	struct rpage_addr addr;
	__u32 state;
	__u32 last_reject;
	__u32 last_error;
	__u32 qps;
	__u32 qps_connected;
	__u32 qps_inbound;
	__u64 remote_node_id;
	__u32 remote_proto;
	__u32 id;
	__u64 connects;
	__u64 rejects;
	__u32 transport;
	__u32 reserved0;
	__u64 reserved[3];
};

/*
 * Pool flags. A pool is announced to, and readable by, every peer unless
 * it is scoped: then only by the peers RPAGE_IOC_POOL_SET_PEERS names
 * (none until then), and refused to the others as if it did not exist.
 */
#define RPAGE_POOL_WRITABLE	(1U << 0)	/* peers may RDMA WRITE to it */
#define RPAGE_POOL_SCOPED	(1U << 1)	/* RPAGE_FEATURE_POOL_PEERS */
#define RPAGE_POOL_FLAGS_ALL	(RPAGE_POOL_WRITABLE | RPAGE_POOL_SCOPED)

/* Pool kinds (struct rpage_pool_info.kind). */
enum {
	/* Memory rpage.ko allocated; belongs to the host. */
	RPAGE_POOL_KERNEL	= 1,
	/* A process's own memory; goes when its /dev/rpage file closes. */
	RPAGE_POOL_USER		= 2,
	/* The pages of a shared-memory file; belongs to the host. */
	RPAGE_POOL_FILE		= 3,
};

/**
 * struct rpage_pool_create - create a pool of memory rpage.ko allocates
 * @id: the pool's id, unique among this host's pools; not 0.
 * @length: bytes, a non-zero multiple of the page size, at most the
 *	module parameter max_pool_mb.
 * @flags: RPAGE_POOL_*.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 *
 * The memory starts zeroed. It stays until RPAGE_IOC_POOL_DESTROY or
 * module unload.
 */
struct rpage_pool_create {
	__u64 id;
	__u64 length;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[4];
};

/**
 * struct rpage_pool_export - export a range of the caller's memory
 * @id: the pool's id, unique among this host's pools; not 0.
 * @addr: start of the range, page aligned.
 * @length: bytes, a non-zero multiple of the page size, at most the
 *	module parameter max_pool_mb.
 * @flags: RPAGE_POOL_*; RPAGE_POOL_WRITABLE needs writable memory.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 *
 * The range is pinned while exported. The pool belongs to the file it
 * was exported through: closing the file destroys it.
 */
struct rpage_pool_export {
	__u64 id;
	__u64 addr;
	__u64 length;
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[4];
};

/**
 * struct rpage_pool_file - RPAGE_IOC_POOL_FILE: export the pages of a file
 * @id: the pool's id, unique among this host's pools; not 0.
 * @fd: an open file of a shared-memory file system (tmpfs, /dev/shm,
 *	memfd, hugetlbfs): a VMM's guest RAM, say (QEMU's memory-backend-file with
 *	share=on), running or paused. Opened for writing if @flags has
 *	RPAGE_POOL_WRITABLE.
 * @flags: RPAGE_POOL_*.
 * @offset: byte offset in the file, a multiple of the page size.
 * @length: bytes, a non-zero multiple of the page size, at most the
 *	module parameter max_pool_mb; holes are filled with zeroed pages
 *	on tmpfs, and refused with ENXIO on hugetlbfs (which allocates a
 *	huge page at its first touch: preallocate the range).
 * @reserved: must be zero.
 *
 * The pages are held while exported: what the file's users write to
 * them, peers read, and what peers write, they see. A truncate or hole
 * punch that takes pages of the range out of the file withdraws the
 * pool, as RPAGE_IOC_POOL_DESTROY would, before it returns (EBUSY if
 * that happened while the pool was being made).
 * The pool belongs to the host, as a kernel pool does: it stays until
 * RPAGE_IOC_POOL_DESTROY or module unload, the file closed or not.
 * Files of other file systems (on disk, whose pages may be written back
 * and dropped under the pool) are refused with EOPNOTSUPP. Needs
 * CAP_SYS_ADMIN. Errors: EINVAL, EBADF (@fd, or not open for writing
 * for a writable pool), EOPNOTSUPP, ERANGE (beyond the file's end),
 * ENXIO (a hole on hugetlbfs), EEXIST, ENOMEM, EINTR, EPERM.
 */
struct rpage_pool_file {
	__u64 id;
	__s32 fd;
	__u32 flags;
	__u64 offset;
	__u64 length;
	__u64 reserved[4];
};

/**
 * struct rpage_pool_destroy - destroy one of this host's pools
 * @id: the pool. A kernel pool may be destroyed through any file, a user
 *	pool only through the file that exported it.
 * @reserved: must be zero.
 *
 * Peers are told first; their reads and writes in flight finish, later
 * ones fail with ENOENT, and none lands in freed memory.
 */
struct rpage_pool_destroy {
	__u64 id;
	__u64 reserved[3];
};

/* Most peers one pool may be scoped to. */
#define RPAGE_POOL_MAX_PEERS	256

/* struct rpage_pool_peers.flags for RPAGE_IOC_POOL_SET_PEERS. */
/* Every peer again: the pool is no longer scoped (@nr_peers must be 0). */
#define RPAGE_POOL_PEERS_ANY	(1U << 0)
#define RPAGE_POOL_PEERS_FLAGS_ALL	RPAGE_POOL_PEERS_ANY

/**
 * struct rpage_pool_peers - the peers a pool is scoped to
 * @id: the pool.
 * @peers: a pointer to an array of peer ids (struct rpage_peer_info.id).
 * @nr_peers: SET: entries in @peers, at most RPAGE_POOL_MAX_PEERS.
 *	GET: in: room in @peers; out: how many the pool is scoped to (more
 *	than the room: only the room was filled).
 * @flags: SET: RPAGE_POOL_PEERS_*. GET: must be zero.
 * @reserved: must be zero.
 *
 * RPAGE_IOC_POOL_SET_PEERS scopes the pool to exactly the peers named
 * (sets RPAGE_POOL_SCOPED), or to every peer with RPAGE_POOL_PEERS_ANY.
 * Peers added are announced the pool; peers taken out are withdrawn it as
 * if it were destroyed (their reads and writes in flight finish, or
 * io_timeout_ms passes), their regions deregistered, and refused it
 * from then on: when the call returns, none of them reaches the pool on
 * any transport. Each id must be a configured peer's, once. Needs
 * CAP_SYS_ADMIN; a process's pool only through the file that exported
 * it. Errors: EINVAL, EFAULT, ENOENT (the pool, or a peer), EPERM,
 * ENOMEM.
 *
 * RPAGE_IOC_POOL_GET_PEERS reports them; a pool that is not scoped (see
 * struct rpage_pool_info.flags) reports none. Errors: EINVAL, EFAULT,
 * ENOENT.
 */
struct rpage_pool_peers {
	__u64 id;
	__u64 peers;
	__u32 nr_peers;
	__u32 flags;
	__u64 reserved[4];
};

/**
 * struct rpage_pool_info - one of this host's pools
 * @id: the pool's id.
 * @length: bytes.
 * @flags: RPAGE_POOL_*.
 * @kind: RPAGE_POOL_KERNEL, RPAGE_POOL_USER or RPAGE_POOL_FILE.
 * @owner_pid: for a user pool, the exporting process; 0 otherwise.
 * @reserved0: zero.
 * @reserved: zero.
 */
struct rpage_pool_info {
	__u64 id;
	__u64 length;
	__u32 flags;
	__u32 kind;
	__u32 owner_pid;
	__u32 reserved0;
	__u64 reserved[4];
};

/**
 * struct rpage_remote_pool_info - a pool a connected peer exports to us
 * @peer: the peer's name.
 * @id: the pool's id on that peer.
 * @length: bytes.
 * @flags: RPAGE_POOL_*.
 * @peer_id: the peer's id (struct rpage_peer_info.id).
 * @reserved: zero.
 */
struct rpage_remote_pool_info {
	char  peer[RPAGE_NAME_MAX];
	__u64 id;
	__u64 length;
	__u32 flags;
	__u32 peer_id;
	__u64 reserved[4];
};

/**
 * struct rpage_iovec - one range of a remote read or write
 * @peer_id: the peer (struct rpage_peer_info.id).
 * @reserved0: must be zero.
 * @pool_id: the peer's pool.
 * @offset: byte offset in the pool, a multiple of the page size.
 * @length: bytes, a non-zero multiple of the page size.
 * @addr: the caller's buffer, page aligned.
 */
struct rpage_iovec {
	__u32 peer_id;
	__u32 reserved0;
	__u64 pool_id;
	__u64 offset;
	__u64 length;
	__u64 addr;
};

/* Most ranges, and most bytes, one read or write may carry. */
#define RPAGE_IO_MAX_IOV	1024
#define RPAGE_IO_MAX_BYTES	(64ULL << 20)

/**
 * struct rpage_io - read remote pages into, or write them from, memory
 * @iov: user pointer to @nr_iov struct rpage_iovec.
 * @nr_iov: 1 to RPAGE_IO_MAX_IOV ranges, RPAGE_IO_MAX_BYTES in all.
 * @flags: must be zero.
 * @reserved: must be zero.
 *
 * The call returns when every range has completed, or fails as a whole
 * with the first error. A transport failure (a queue pair in error, no
 * completion for the module parameter io_timeout_ms, the peer
 * reconnecting) is not an error of the call: the pages not yet moved are
 * moved again once the peer is connected, for as long as the peer's loss
 * timeout allows. Errors: ENOENT (unknown peer or pool), ERANGE (beyond
 * the pool), EINVAL (alignment, flags), E2BIG (more than the bounds
 * below), EFAULT (a bad pointer or buffer), EPERM (write to a read-only
 * pool), EBADF (a write through a file not opened for writing), ENOTCONN
 * (the peer stayed unreachable past its loss timeout, or was deleted),
 * ESTALE (the pool was destroyed and created again with the same id
 * while the transfer waited for the peer), EINTR (a fatal signal),
 * ENOMEM, EOPNOTSUPP (the peer is reached through an iWARP device,
 * which rpage does not support yet). With a loss timeout of 0 a transport
 * failure ends the call at once instead: ENOTCONN (not connected),
 * ETIMEDOUT (no page completed for io_timeout_ms) or EIO (the transfer
 * failed). A failed read may have filled part of the buffers; a failed
 * write may have written part of the ranges.
 */
struct rpage_io {
	__u64 iov;
	__u32 nr_iov;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * Latency histograms have log2 buckets of nanoseconds: bucket 0 counts
 * latencies below 2 ns, bucket i (i > 0) those in [2^i, 2^(i+1)) ns, and
 * the last bucket everything from 2^(RPAGE_HIST_BUCKETS - 1) ns up.
 */
#define RPAGE_HIST_BUCKETS	40

/**
 * struct rpage_stats - counters of a peer or an RDMA device
 * @reads: pages read by RDMA READs.
 * @writes: pages written by RDMA WRITEs.
 * @read_bytes: bytes read.
 * @write_bytes: bytes written.
 * @errors: pages whose transfer failed.
 * @connects: connections established (a peer: whole sets it opened; a
 *	device: every queue pair, either direction).
 * @rejects: connections refused (a peer: by the peer; a device: by an
 *	endpoint on it).
 * @reserved: zero.
 * @latency: histogram of the time from posting a page's RDMA READ or
 *	WRITE to its completion, in log2 buckets of nanoseconds.
 */
struct rpage_stats {
	__u64 reads;
	__u64 writes;
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 errors;
	__u64 connects;
	__u64 rejects;
	__u64 reserved[5];
	__u64 latency[RPAGE_HIST_BUCKETS];
};

/**
 * struct rpage_peer_stats - one entry of RPAGE_IOC_PEER_STATS
 * @name: the peer's name.
 * @peer_id: its id.
 * @reserved0: zero.
 * @stats: its counters.
 */
struct rpage_peer_stats {
	char  name[RPAGE_NAME_MAX];
	__u32 peer_id;
	__u32 reserved0;
	struct rpage_stats stats;
};

/**
 * struct rpage_device_stats - one entry of RPAGE_IOC_DEVICE_STATS
 * @name: the RDMA device's name.
 * @index: its ib_device index.
 * @reserved0: zero.
 * @stats: its counters, since rpage.ko attached to it.
 */
struct rpage_device_stats {
	char  name[RPAGE_NAME_MAX];
	__u32 index;
	__u32 reserved0;
	struct rpage_stats stats;
};

/* Remote mapping flags (struct rpage_map.flags). */
/* Read ahead on faults that follow a sequential or strided pattern. */
#define RPAGE_MAP_READAHEAD	(1U << 0)
/*
 * RPAGE_FEATURE_HUGE: 2 MiB pages. The first fault in a 2 MiB region of
 * the mapping (RPAGE_MAP_HUGE_SIZE, counted from the mapping's start)
 * reads the whole region in one transfer, into one 2 MiB folio, which a
 * virtual memory area whose addresses line up with the region (mmap(2)
 * chooses such an address by itself; a MAP_FIXED one must be 2 MiB
 * aligned, as QEMU's align=2M makes it) maps with one page middle
 * directory entry, and KVM with a 2 MiB page. Where that cannot be (see
 * struct rpage_fault_stats.huge_fallbacks), the fault reads 4 KiB as
 * without the flag. The pool offset must be a multiple of
 * RPAGE_MAP_HUGE_SIZE; not with RPAGE_MAP_READAHEAD. EOPNOTSUPP on a
 * kernel without transparent huge pages.
 */
#define RPAGE_MAP_HUGE		(1U << 1)
/*
 * RPAGE_FEATURE_MAP_TO_END: the mapping runs from its offset to the end
 * of the pool, as the peer announces it when the call binds the mapping
 * (after waiting for a peer that is connecting, as every mapping call
 * does); the length must be zero in, and is the mapping's length out. A
 * configuration applied at boot names pools of peers that have not
 * connected yet, whose lengths it cannot look up first.
 */
#define RPAGE_MAP_TO_END	(1U << 2)
#define RPAGE_MAP_FLAGS_ALL	(RPAGE_MAP_READAHEAD | RPAGE_MAP_HUGE | \
				 RPAGE_MAP_TO_END)
#define RPAGE_MAP_HUGE_SIZE	(2ULL << 20)

/* Most bytes one remote mapping covers: 2^32 pages. */
#define RPAGE_MAP_MAX_BYTES	(1ULL << 44)

/**
 * struct rpage_map - create a remote mapping of a peer's pool
 * @peer_id: in: the peer (struct rpage_peer_info.id).
 * @flags: in: RPAGE_MAP_*.
 * @pool_id: in: the peer's pool; it must be known (announced) now.
 * @offset: in: byte offset in the pool, a multiple of the page size.
 * @length: in: bytes, a non-zero multiple of the page size, within the
 *	pool, at most RPAGE_MAP_MAX_BYTES (E2BIG); zero with
 *	RPAGE_MAP_TO_END. out: the mapping's length.
 * @map_id: out: the mapping's id, never 0.
 * @mmap_offset: out: the offset to pass to mmap(2) on the same file,
 *	with MAP_SHARED and a length of at most @length (a part of the
 *	mapping may be mapped at @mmap_offset + its offset).
 * @reserved: must be zero.
 *
 * The mapping belongs to the file: it is destroyed by RPAGE_IOC_UNMAP or
 * when the file closes, and virtual memory areas mapping it keep it
 * until they are unmapped. Every page starts absent; the first touch of
 * a page reads it from the peer inside the page fault, and from then on
 * the page is local and writable (post-copy). The mapping is bound to
 * the pool as it is now: if the peer destroys it, or destroys it and
 * creates another pool with the same id, the mapping never reads the
 * new one. The pages are the page cache of an inode of the mapping's own:
 * a page a fault reads is charged, as file memory, to the memory cgroup
 * of the process whose memory it is (the one whose page tables it fills,
 * also when another task faults it in, as KVM's asynchronous page faults
 * do), and stays charged while the mapping holds it. A fault
 * waits out a transport failure (see struct rpage_io)
 * without holding the process's mmap lock; pages that cannot be read
 * (pool gone or replaced, peer unreachable past its loss timeout, peer
 * deleted) raise SIGBUS; pages already here stay.
 *
 * Errors: EINVAL (flags, reserved fields, alignment), E2BIG (too long),
 * ENOENT (unknown peer, or the pool is not announced by the peer), ERANGE
 * (beyond the pool), ENOTCONN (the peer, reconnecting, stayed unreachable
 * past its loss timeout, or was deleted), EINTR (a fatal signal while
 * waiting for it), ENOSPC (no mapping id left), ENOMEM, EFAULT.
 */
struct rpage_map {
	__u32 peer_id;
	__u32 flags;
	__u64 pool_id;
	__u64 offset;
	__u64 length;
	__u64 map_id;
	__u64 mmap_offset;
	__u64 reserved[4];
};

/**
 * struct rpage_unmap - destroy a remote mapping
 * @map_id: the mapping, created through this file.
 * @reserved: must be zero.
 *
 * The id stops naming the mapping at once; areas still mapped keep
 * their pages until munmap(2). Local changes still dirty then are not
 * written back: on a writable pool, msync(2) or evict first to keep
 * them (the flusher writes dirty pages back meanwhile).
 */
struct rpage_unmap {
	__u64 map_id;
	__u64 reserved[3];
};

/*
 * Fields marked "out" below are written by the call and ignored on
 * input, so a structure may be reused for the next call.
 */

/* Prefetch queue depth when struct rpage_prefetch.depth is 0, and most. */
#define RPAGE_PREFETCH_DEPTH_DEFAULT	32
#define RPAGE_PREFETCH_DEPTH_MAX	256

/* Prefetch flags (struct rpage_prefetch.flags). */
/* Return only once every page of the range has arrived (or failed). */
#define RPAGE_PREFETCH_WAIT	(1U << 0)
#define RPAGE_PREFETCH_KEEP	(1U << 1)	/* RPAGE_FEATURE_RECLAIM */
#define RPAGE_PREFETCH_FLAGS_ALL	(RPAGE_PREFETCH_WAIT | RPAGE_PREFETCH_KEEP)

/**
 * struct rpage_prefetch - fetch a range of a mapping ahead of use
 * @map_id: in: the mapping, created through this file.
 * @flags: in: RPAGE_PREFETCH_*.
 * @depth: in: READs in flight at once; 0 for the default, at most
 *	RPAGE_PREFETCH_DEPTH_MAX.
 * @offset: in: byte offset in the mapping, a multiple of the page size.
 * @length: in: bytes, a non-zero multiple of the page size, within the
 *	mapping.
 * @queued: out: pages of the range absent when the call was made; pages
 *	here or being fetched are skipped.
 * @failed: out: with RPAGE_PREFETCH_WAIT, pages that could not be read
 *	(a later touch retries them); 0 otherwise.
 * @reserved: must be zero.
 *
 * The prefetch claims the absent pages of the range as it reaches them,
 * four times @depth pages (at most 256) at a time, one such chunk ahead
 * of the one it reads; the first two are claimed before the call
 * returns. A fault on a claimed page waits for the prefetch's READ
 * instead of issuing its own; a fault on a page further on reads it
 * itself, without waiting for the pages before it. Without
 * RPAGE_PREFETCH_WAIT the READs run in the background. The pages are
 * charged to the memory cgroup of the caller of this call;
 * when memory runs out (of the host or of that cgroup) the prefetch
 * stops, without making the kernel kill a process, logs how many pages
 * it left, and those stay absent. A failed transfer stops it too. Like
 * faults, a prefetch waits out a transport failure, up to the peer's
 * loss timeout; pages it could not read are absent again (and, with
 * RPAGE_PREFETCH_WAIT, counted in @failed).
 *
 * On an RPAGE_MAP_HUGE mapping the range is taken out to whole 2 MiB
 * regions (@queued counts them), and each region none of whose pages is
 * here is read into one 2 MiB folio, as its first fault would read it,
 * for faults to map with one PMD entry (struct
 * rpage_fault_stats.huge_prefetched); a chunk is then at least four
 * regions. A region with 4 KiB pages here, or for which no 2 MiB of
 * memory is free, is read 4 KiB at a time (huge_fallbacks).
 *
 * RPAGE_PREFETCH_KEEP, before anything is read, makes every page of the
 * mapping stay from then on until evicted or unmapped, as pages did
 * before RPAGE_FEATURE_RECLAIM: reclaim no longer drops them. With it a
 * whole mapping prefetched needs its peer no more (rpagectl map pull).
 * Deleting the mapping's peer does the same for the pages that are here.
 *
 * Errors: EINVAL (flags, depth, reserved fields, alignment), ENOENT
 * (unknown mapping), ERANGE (beyond the mapping), ENOTCONN (pages are
 * missing and the mapping's peer was deleted), ENOMEM, EFAULT; with
 * RPAGE_PREFETCH_WAIT also EINTR (a fatal signal; pages already read
 * stay).
 */
struct rpage_prefetch {
	__u64 map_id;
	__u32 flags;
	__u32 depth;
	__u64 offset;
	__u64 length;
	__u64 queued;
	__u64 failed;
	__u64 reserved[4];
};

/**
 * struct rpage_evict - write back and drop a range of a mapping
 * @map_id: in: the mapping, created through this file.
 * @flags: in: must be zero.
 * @reserved0: must be zero.
 * @offset: in: byte offset in the mapping, a multiple of the page size.
 * @length: in: bytes, a non-zero multiple of the page size, within the
 *	mapping.
 * @evicted: out: pages dropped.
 * @written: out: of those, the dirty ones written back first.
 * @reserved: must be zero.
 *
 * Dirty pages are written back to the pool with RDMA WRITEs, then every
 * page of the range is dropped from every process mapping it, so that
 * the next touch reads it from the peer again. Pages being fetched are
 * left alone. All or nothing: if a dirty page cannot be written back, no
 * page is dropped. A transport failure is waited out as for a fault.
 *
 * Errors: EINVAL (flags, reserved fields, alignment), ENOENT (unknown
 * mapping, or its pool is gone), ESTALE (the peer destroyed the pool and
 * created another with the same id: nothing is written to it); once a
 * write back (the flusher's, msync's) found the pool gone or replaced,
 * every eviction fails so, as the pages it kept here are their only
 * copy; ERANGE
 * (beyond the mapping), EROFS (a read-only pool), ENOTCONN (the peer
 * stayed unreachable past its loss timeout, or was deleted: a mapping
 * whose peer was deleted evicts nothing, since no page it dropped could
 * be read again), EINTR (a fatal signal), ENOMEM, EFAULT; with a loss
 * timeout of 0, ETIMEDOUT or EIO as for struct rpage_io.
 */
struct rpage_evict {
	__u64 map_id;
	__u32 flags;
	__u32 reserved0;
	__u64 offset;
	__u64 length;
	__u64 evicted;
	__u64 written;
	__u64 reserved[4];
};

/**
 * struct rpage_fault_stats - what the fault path of a mapping or peer did
 * @faults: faults that read their page from the peer with their own READ.
 * @minor_faults: faults that found their page already here. A page here
 *	that a fault maps around its own (fault-around) takes no fault.
 * @waits: faults that waited for a READ of their page already in flight
 *	(another fault's or a prefetch's).
 * @prefetched: pages read by prefetch or read-ahead.
 * @prefetch_hits: prefetched pages a fault found: its own (also counted
 *	in @minor_faults or @waits), or one that fault-around mapped
 *	beside it.
 * @evicted: pages evicted.
 * @written: dirty pages written back, by eviction or by writeback
 *	(the flusher, msync(2), fsync(2)) on a writable pool.
 * @sigbus: faults answered with SIGBUS.
 * @vma_locked: calls of the fault handler under the per-VMA lock (user
 *	faults on kernels that have it, 6.5 on; RPAGE_FEATURE_FAULT_LOCKS).
 * @mmap_locked: calls of the fault handler under mmap_lock: every one on
 *	kernels without per-VMA locks; otherwise get_user_pages() (KVM),
 *	the kernel's own accesses, and a fault retried after it waited
 *	without its lock (RPAGE_FEATURE_FAULT_LOCKS).
 * @refetched: pages read again, by a fault or a prefetch, after reclaim
 *	dropped them (RPAGE_FEATURE_RECLAIM); also counted in @faults or
 *	@prefetched. A lower bound: the kernel forgets pages it dropped
 *	long ago (their shadow entries) under memory pressure.
 * @huge_faults: faults that read a whole 2 MiB region into one folio
 *	(RPAGE_MAP_HUGE; RPAGE_FEATURE_HUGE); also counted in @faults.
 * @huge_fallbacks: faults of an RPAGE_MAP_HUGE mapping that read 4 KiB
 *	instead: the region ends past the mapping, the area does not line
 *	up with it or has huge pages switched off (MADV_NOHUGEPAGE,
 *	PR_SET_THP_DISABLE), the region is mapped with 4 KiB pages in the
 *	process already or has 4 KiB pages here, or no 2 MiB of memory
 *	could be had; RPAGE_IOC_MAP_HUGE_STATS counts them by cause, and the
 *	tracepoint rpage:rpage_huge_fallback names each. Also the regions
 *	a prefetch or pull read 4 KiB at a time for one of the last two
 *	reasons.
 * @huge_prefetched: 2 MiB regions a prefetch or pull (RPAGE_MAP_HUGE)
 *	read whole into one folio, as a fault would have; their pages are
 *	also counted in @prefetched.
 * @reserved: zero.
 * @latency: histogram of every fault's time in rpage, from entry to the
 *	page being ready, log2 buckets of nanoseconds.
 */
struct rpage_fault_stats {
	__u64 faults;
	__u64 minor_faults;
	__u64 waits;
	__u64 prefetched;
	__u64 prefetch_hits;
	__u64 evicted;
	__u64 written;
	__u64 sigbus;
	__u64 vma_locked;
	__u64 mmap_locked;
	__u64 refetched;
	__u64 huge_faults;
	__u64 huge_fallbacks;
	__u64 huge_prefetched;
	__u64 reserved[2];
	__u64 latency[RPAGE_HIST_BUCKETS];
};

/**
 * struct rpage_map_stats - RPAGE_IOC_MAP_STATS
 * @map_id: in: the mapping, created through this file.
 * @reserved: must be zero.
 * @stats: out: its counters.
 */
struct rpage_map_stats {
	__u64 map_id;
	__u64 reserved[3];
	struct rpage_fault_stats stats;
};

/**
 * struct rpage_map_huge_stats - RPAGE_IOC_MAP_HUGE_STATS
 * @map_id: in: the mapping, as for RPAGE_IOC_MAP_STATS.
 * @reserved: must be zero.
 * @fallbacks: out: what struct rpage_fault_stats.huge_fallbacks counts,
 *	by cause (RPAGE_HUGE_FB_*); a cause this module does not know of
 *	stays 0. Zero for a mapping without RPAGE_MAP_HUGE.
 *
 * RPAGE_FEATURE_HUGE.
 */
struct rpage_map_huge_stats {
	__u64 map_id;
	__u64 reserved[3];
	__u64 fallbacks[RPAGE_HUGE_FB_MAX];
};

/**
 * struct rpage_peer_fault_stats - one entry of RPAGE_IOC_PEER_FAULT_STATS
 * @name: the peer's name.
 * @peer_id: its id.
 * @reserved0: zero.
 * @stats: the counters of every mapping of its pools, past and present.
 */
struct rpage_peer_fault_stats {
	char  name[RPAGE_NAME_MAX];
	__u32 peer_id;
	__u32 reserved0;
	struct rpage_fault_stats stats;
};

/* What RPAGE_IOC_PEER_SET changes (struct rpage_peer_set.mask). */
#define RPAGE_PEER_SET_LOSS_TIMEOUT	(1U << 0)
#define RPAGE_PEER_SET_ALL		RPAGE_PEER_SET_LOSS_TIMEOUT

/* The longest loss timeout: a day. */
#define RPAGE_LOSS_TIMEOUT_MAX_MS	(24U * 3600 * 1000)

/**
 * struct rpage_peer_set - change the settings of a peer
 * @name: the peer's name.
 * @mask: RPAGE_PEER_SET_* bits, at least one: which fields below apply.
 * @loss_timeout_ms: how long the peer may stay unreachable (not
 *	connected, or failing every transfer) before the reads, writes,
 *	faults, prefetches and evictions waiting for it fail; at most
 *	RPAGE_LOSS_TIMEOUT_MAX_MS. 0 fails them at the first transport
 *	failure. A new peer takes the module parameter loss_timeout_ms.
 * @reserved: must be zero.
 *
 * Errors: EINVAL (mask, reserved fields, name, a value out of range),
 * ENOENT (no such peer), EPERM (needs CAP_SYS_ADMIN).
 */
struct rpage_peer_set {
	char  name[RPAGE_NAME_MAX];
	__u32 mask;
	__u32 loss_timeout_ms;
	__u64 reserved[6];
};

/* The longest text of struct rpage_peer_status.cause, NUL included. */
#define RPAGE_CAUSE_MAX		128

/**
 * struct rpage_peer_status - one entry of RPAGE_IOC_PEER_STATUS: how the
 *	connection to a peer fares
 * @name: the peer's name.
 * @peer_id: its id (struct rpage_peer_info.id).
 * @state: RPAGE_PEER_*, as in struct rpage_peer_info.
 * @loss_timeout_ms: its loss timeout (struct rpage_peer_set).
 * @reserved0: zero.
 * @state_ms: milliseconds since the peer entered @state.
 * @reconnects: times its connections were lost (the peer went from
 *	connected to reconnecting).
 * @retried: transfers to it posted again after a transport failure,
 *	which their callers never saw.
 * @lost: transfers failed because it stayed unreachable past its loss
 *	timeout.
 * @cause: why it last changed state, in words, NUL-terminated: a work
 *	completion status, an rdma_cm event, an errno, "no completion for N
 *	ms", a missed heartbeat, a refusal.
 * @refused_msgs: control messages from the peer that were dropped:
 *	malformed, sent in the wrong direction, or over a limit
 *	(RPAGE_FEATURE_PEER_REFUSALS).
 * @refused_pools: pools the peer announced past this host's limits on
 *	remote pools and regions per peer (module parameters
 *	max_remote_pools and max_remote_regions): not usable here until
 *	others are withdrawn and the peer announces them again.
 * @refused_qps: queue pairs the peer opened to this host past the
 *	module parameter max_inbound_qps.
 * @refused_access: the peer's reads and writes over TCP or the loop of
 *	pools not scoped to it (RPAGE_FEATURE_POOL_PEERS). Over RDMA such
 *	an access cannot happen: the pool's regions are registered only
 *	for the peers it is scoped to, and another peer's read fails on
 *	its own side (a remote access error there).
 */
struct rpage_peer_status {
	char  name[RPAGE_NAME_MAX];
	__u32 peer_id;
	__u32 state;
	__u32 loss_timeout_ms;
	__u32 reserved0;
	__u64 state_ms;
	__u64 reconnects;
	__u64 retried;
	__u64 lost;
	char  cause[RPAGE_CAUSE_MAX];
	__u64 refused_msgs;
	__u64 refused_pools;
	__u64 refused_qps;
	__u64 refused_access;
};

/*
 * Named mappings: remote mappings that belong to the host, like peers,
 * each with a device node /dev/rpage-map/NAME that any process its
 * owner, group and mode allow may open and mmap(2) (MAP_SHARED, from
 * offset 0), as QEMU's memory-backend-file does with a path. Every
 * process that maps a named mapping shares its pages. They are made and
 * removed with RPAGE_IOC_MAP_ADD and RPAGE_IOC_MAP_DEL, or when the module
 * unloads; RPAGE_IOC_MAP_STATS, RPAGE_IOC_PREFETCH and RPAGE_IOC_EVICT
 * take their map_id from any /dev/rpage file.
 */

/* Where the device nodes of named mappings are, under /dev. */
#define RPAGE_MAP_NODE_DIR	"rpage-map"

/**
 * struct rpage_map_add - RPAGE_IOC_MAP_ADD: make a named mapping
 * @name: in: its name, 1 to RPAGE_NAME_MAX - 1 of [A-Za-z0-9._-],
 *	NUL-terminated, not "." or ".."; the node is
 *	/dev/rpage-map/@name.
 * @peer_id: in: the peer (struct rpage_peer_info.id).
 * @flags: in: RPAGE_MAP_*.
 * @pool_id: in: the peer's pool, which must be announced now.
 * @offset: in: byte offset in the pool, a multiple of the page size.
 * @length: in: bytes, a non-zero multiple of the page size, within the
 *	pool, at most RPAGE_MAP_MAX_BYTES; the size lseek(2) reports. Zero
 *	with RPAGE_MAP_TO_END; out: the mapping's length.
 * @uid: in: owner of the device node.
 * @gid: in: group of the device node.
 * @mode: in: permission bits of the device node, at most 0777.
 * @reserved0: must be zero.
 * @map_id: out: its id, for RPAGE_IOC_MAP_STATS, RPAGE_IOC_PREFETCH and
 *	RPAGE_IOC_EVICT.
 * @reserved: must be zero.
 *
 * The pages behave as those of struct rpage_map: absent at first, read
 * in the first fault on each, shared by every process that maps the
 * node. Needs CAP_SYS_ADMIN. Errors: as RPAGE_IOC_MAP, and EINVAL (name,
 * mode), EEXIST (the name is taken), EPERM, ENOSPC (no device minor
 * left).
 */
struct rpage_map_add {
	char  name[RPAGE_NAME_MAX];
	__u32 peer_id;
	__u32 flags;
	__u64 pool_id;
	__u64 offset;
	__u64 length;
	__u32 uid;
	__u32 gid;
	__u32 mode;
	__u32 reserved0;
	__u64 map_id;
	__u64 reserved[4];
};

/* struct rpage_map_del.flags: delete even if in use. */
#define RPAGE_MAP_DEL_FORCE	(1U << 0)
#define RPAGE_MAP_DEL_FLAGS_ALL	RPAGE_MAP_DEL_FORCE

/**
 * struct rpage_map_del - RPAGE_IOC_MAP_DEL: remove a named mapping
 * @name: the mapping.
 * @flags: RPAGE_MAP_DEL_*.
 * @reserved0: must be zero.
 * @reserved: must be zero.
 *
 * The node goes at once. A mapping some process has open or mapped is
 * EBUSY, unless RPAGE_MAP_DEL_FORCE: then every access to a page of it
 * from then on raises SIGBUS, in every process, and its pages go when
 * the last area mapping it does. Local changes still dirty then are
 * not written back: fsync(2) the node or evict first to keep them.
 * Needs CAP_SYS_ADMIN. Errors: EINVAL,
 * ENOENT, EBUSY, EPERM.
 */
struct rpage_map_del {
	char  name[RPAGE_NAME_MAX];
	__u32 flags;
	__u32 reserved0;
	__u64 reserved[3];
};

/**
 * struct rpage_map_info - one entry of RPAGE_IOC_MAP_LIST
 * @name: the named mapping.
 * @peer: its peer's name; empty once that peer is deleted (the mapping
 *	then keeps only the pages it has).
 * @peer_id: its peer's id; 0 once that peer is deleted.
 * @flags: RPAGE_MAP_*.
 * @pool_id: the peer's pool.
 * @offset: where in the pool it starts, bytes.
 * @length: bytes.
 * @map_id: its id.
 * @pages_local: pages fetched and here: the mapping needs its peer only
 *	for the others.
 * @users: open files and mapped areas that hold it, and calls under way.
 * @uid: owner of its node.
 * @gid: group of its node.
 * @mode: permission bits of its node.
 * @reserved: zero.
 */
struct rpage_map_info {
	char  name[RPAGE_NAME_MAX];
	char  peer[RPAGE_NAME_MAX];
	__u32 peer_id;
	__u32 flags;
	__u64 pool_id;
	__u64 offset;
	__u64 length;
	__u64 map_id;
	__u64 pages_local;
	__u32 users;
	__u32 uid;
	__u32 gid;
	__u32 mode;
	__u64 reserved[4];
};

#define RPAGE_IOC_API \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_API, struct rpage_api)
#define RPAGE_IOC_DEVICE_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_DEVICE_LIST, struct rpage_list)
#define RPAGE_IOC_ENDPOINT_ADD \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_ENDPOINT_ADD, struct rpage_endpoint)
#define RPAGE_IOC_ENDPOINT_DEL \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_ENDPOINT_DEL, struct rpage_endpoint)
#define RPAGE_IOC_ENDPOINT_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_ENDPOINT_LIST, struct rpage_list)
#define RPAGE_IOC_PEER_ADD \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_PEER_ADD, struct rpage_peer_config)
#define RPAGE_IOC_PEER_DEL \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_PEER_DEL, struct rpage_peer_config)
#define RPAGE_IOC_PEER_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PEER_LIST, struct rpage_list)

#define RPAGE_IOC_POOL_CREATE \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_POOL_CREATE, struct rpage_pool_create)
#define RPAGE_IOC_POOL_EXPORT \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_POOL_EXPORT, struct rpage_pool_export)
#define RPAGE_IOC_POOL_DESTROY \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_POOL_DESTROY, struct rpage_pool_destroy)
#define RPAGE_IOC_POOL_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_POOL_LIST, struct rpage_list)
#define RPAGE_IOC_REMOTE_POOL_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_REMOTE_POOL_LIST, struct rpage_list)
#define RPAGE_IOC_READ \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_READ, struct rpage_io)
#define RPAGE_IOC_WRITE \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_WRITE, struct rpage_io)

#define RPAGE_IOC_PEER_STATS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PEER_STATS, struct rpage_list)
#define RPAGE_IOC_DEVICE_STATS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_DEVICE_STATS, struct rpage_list)

#define RPAGE_IOC_MAP \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_MAP, struct rpage_map)
#define RPAGE_IOC_UNMAP \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_UNMAP, struct rpage_unmap)
#define RPAGE_IOC_PREFETCH \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PREFETCH, struct rpage_prefetch)
#define RPAGE_IOC_EVICT \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_EVICT, struct rpage_evict)
#define RPAGE_IOC_MAP_STATS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_MAP_STATS, struct rpage_map_stats)
#define RPAGE_IOC_PEER_FAULT_STATS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PEER_FAULT_STATS, struct rpage_list)
#define RPAGE_IOC_PEER_SET \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_PEER_SET, struct rpage_peer_set)
#define RPAGE_IOC_PEER_STATUS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PEER_STATUS, struct rpage_list)

#define RPAGE_IOC_MAP_ADD \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_MAP_ADD, struct rpage_map_add)
#define RPAGE_IOC_MAP_DEL \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_MAP_DEL, struct rpage_map_del)
#define RPAGE_IOC_MAP_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_MAP_LIST, struct rpage_list)
#define RPAGE_IOC_POOL_FILE \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_POOL_FILE, struct rpage_pool_file)
#define RPAGE_IOC_POOL_SET_PEERS \
	_IOW(RPAGE_IOC_MAGIC, _RPAGE_POOL_SET_PEERS, struct rpage_pool_peers)
#define RPAGE_IOC_POOL_GET_PEERS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_POOL_GET_PEERS, struct rpage_pool_peers)
#define RPAGE_IOC_MAP_HUGE_STATS \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_MAP_HUGE_STATS, struct rpage_map_huge_stats)

/*
 * Events (RPAGE_FEATURE_EVENTS): what changes on the host, as it
 * happens, multicast by the generic netlink family RPAGE_GENL_NAME in its
 * group RPAGE_GENL_MCGRP_EVENTS (resolve both with the controller's
 * CTRL_CMD_GETFAMILY, as `genl ctrl get name rpage` does); joining the
 * group needs CAP_NET_ADMIN. Each event is one message: its genlmsghdr
 * .cmd is an RPAGE_EVENT_*, its attributes RPAGE_EA_*, those named below
 * for it (a listener skips any it does not know: later versions add
 * some, never change one). The family has no commands: the state to
 * start from is read with the list ioctls, and a listener that falls
 * behind loses events (recv(2) fails with ENOBUFS) and reads it again.
 *
 * RPAGE_EVENT_PEER_STATE: a peer changed state (added: from 0; deleted:
 *	to RPAGE_PEER_DELETED). PEER_ID, PEER_NAME, OLD_STATE, STATE (both
 *	RPAGE_PEER_*), CAUSE (as `rpagectl peer show` gives it), TIME_NS.
 * RPAGE_EVENT_POOL_ADD: a connected peer announced a pool (whole: it can
 *	be mapped now). PEER_ID, PEER_NAME, POOL_ID, POOL_LENGTH,
 *	POOL_GENERATION, TIME_NS.
 * RPAGE_EVENT_POOL_DEL: a peer's pool is gone from its table: withdrawn
 *	by the peer, or with the peer's connections (CAUSE says which). The
 *	attributes of RPAGE_EVENT_POOL_ADD, and CAUSE.
 * RPAGE_EVENT_MAP_ADD: a named mapping was made. MAP_NAME, MAP_ID,
 *	PEER_ID, PEER_NAME, POOL_ID, MAP_OFFSET, MAP_LENGTH, TIME_NS.
 * RPAGE_EVENT_MAP_DEL: a named mapping was deleted. MAP_NAME, MAP_ID,
 *	TIME_NS.
 * RPAGE_EVENT_PREFETCH_END: a prefetch of a mapping (RPAGE_IOC_PREFETCH,
 *	named or not: `rpagectl map pull`) is over. MAP_ID, PAGES (it claimed), FAILED
 *	(pages it could not read), LOCAL (the mapping's pages here now) and
 *	MAP_PAGES (all of them; a mapping with LOCAL == MAP_PAGES needs its
 *	peer no more), CAUSE if it stopped early (as the kernel log says
 *	it), TIME_NS.
 *
 * TIME_NS is CLOCK_REALTIME, in nanoseconds.
 */
#define RPAGE_GENL_NAME		"rpage"
#define RPAGE_GENL_VERSION	1
#define RPAGE_GENL_MCGRP_EVENTS	"events"

enum {
	RPAGE_EVENT_UNSPEC,
	RPAGE_EVENT_PEER_STATE,
	RPAGE_EVENT_POOL_ADD,
	RPAGE_EVENT_POOL_DEL,
	RPAGE_EVENT_MAP_ADD,
	RPAGE_EVENT_MAP_DEL,
	RPAGE_EVENT_PREFETCH_END,
	__RPAGE_EVENT_MAX,
};

#define RPAGE_EVENT_MAX		(__RPAGE_EVENT_MAX - 1)

/* Event attributes: the netlink type of each. */
enum {
	RPAGE_EA_UNSPEC,
	RPAGE_EA_PAD,			/* padding of the 64-bit ones */
	RPAGE_EA_TIME_NS,		/* u64 */
	RPAGE_EA_PEER_ID,		/* u32 */
	RPAGE_EA_PEER_NAME,		/* NUL-terminated string */
	RPAGE_EA_OLD_STATE,		/* u32 */
	RPAGE_EA_STATE,			/* u32 */
	RPAGE_EA_CAUSE,			/* NUL-terminated string */
	RPAGE_EA_POOL_ID,		/* u64 */
	RPAGE_EA_POOL_LENGTH,		/* u64, bytes */
	RPAGE_EA_POOL_GENERATION,	/* u64 */
	RPAGE_EA_MAP_NAME,		/* NUL-terminated string */
	RPAGE_EA_MAP_ID,		/* u64 */
	RPAGE_EA_MAP_OFFSET,		/* u64, bytes */
	RPAGE_EA_MAP_LENGTH,		/* u64, bytes */
	RPAGE_EA_PAGES,			/* u64 */
	RPAGE_EA_FAILED,		/* u64, pages */
	RPAGE_EA_LOCAL,			/* u64, pages */
	RPAGE_EA_MAP_PAGES,		/* u64 */
	__RPAGE_EA_MAX,
};

#define RPAGE_EA_MAX		(__RPAGE_EA_MAX - 1)

#define RPAGE_API_IOCTLS \
	((1ULL << _RPAGE_API) | (1ULL << _RPAGE_DEVICE_LIST) | \
	 (1ULL << _RPAGE_ENDPOINT_ADD) | (1ULL << _RPAGE_ENDPOINT_DEL) | \
	 (1ULL << _RPAGE_ENDPOINT_LIST) | (1ULL << _RPAGE_PEER_ADD) | \
	 (1ULL << _RPAGE_PEER_DEL) | (1ULL << _RPAGE_PEER_LIST) | \
	 (1ULL << _RPAGE_POOL_CREATE) | (1ULL << _RPAGE_POOL_EXPORT) | \
	 (1ULL << _RPAGE_POOL_DESTROY) | (1ULL << _RPAGE_POOL_LIST) | \
	 (1ULL << _RPAGE_REMOTE_POOL_LIST) | (1ULL << _RPAGE_READ) | \
	 (1ULL << _RPAGE_WRITE) | (1ULL << _RPAGE_PEER_STATS) | \
	 (1ULL << _RPAGE_DEVICE_STATS) | (1ULL << _RPAGE_MAP) | \
	 (1ULL << _RPAGE_UNMAP) | (1ULL << _RPAGE_PREFETCH) | \
	 (1ULL << _RPAGE_EVICT) | (1ULL << _RPAGE_MAP_STATS) | \
	 (1ULL << _RPAGE_PEER_FAULT_STATS) | (1ULL << _RPAGE_PEER_SET) | \
	 (1ULL << _RPAGE_PEER_STATUS) | (1ULL << _RPAGE_MAP_ADD) | \
	 (1ULL << _RPAGE_MAP_DEL) | (1ULL << _RPAGE_MAP_LIST) | \
	 (1ULL << _RPAGE_POOL_FILE) | (1ULL << _RPAGE_POOL_SET_PEERS) | \
	 (1ULL << _RPAGE_POOL_GET_PEERS) | (1ULL << _RPAGE_MAP_HUGE_STATS))

#endif /* _UAPI_LINUX_RPAGE_H */
