/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: the wire protocol between two hosts running rpage.ko.
 *
 * Over RDMA, every connection is an RC queue pair set up with rdma_cm
 * (over TCP, a socket: see RPAGE_MSG_TCP_HELLO below). The host that
 * reads (the initiator) connects to the exporting host's endpoint with a
 * hello in the connect private data; the exporter answers with its own
 * hello in the accept private data, or refuses with a reject message.
 * All fields are little-endian; reserved bytes are sent as zero and
 * ignored on receipt, so a minor version may give them a meaning.
 *
 * rdma_cm carries at most 56 bytes of private data with a RoCE/IB connect
 * request: the hello stays well under that.
 *
 * The header builds in userspace too, for the rdma-core test peers.
 */
#ifndef RPAGE_PROTO_H
#define RPAGE_PROTO_H

#include <linux/types.h>

#define RPAGE_PROTO_MAGIC	0x31677072	/* "rpg1" on the wire */
/*
 * 2.0 (from 1.0): pools carry a generation, the pool table ends with
 * RPAGE_MSG_POOL_SYNC, and either side may send RPAGE_MSG_HEARTBEAT.
 */
#define RPAGE_PROTO_MAJOR	2
#define RPAGE_PROTO_MINOR	0

/* Largest connect private data every RDMA transport carries. */
#define RPAGE_PROTO_CONNECT_MAX	56

/* No hello flag is defined by protocol 2.0. */
#define RPAGE_HELLO_FLAGS_ALL	0U

/**
 * struct rpage_hello - who is connecting, or who accepted
 * @magic: RPAGE_PROTO_MAGIC.
 * @major: RPAGE_PROTO_MAJOR of the sender; a receiver with another major
 *	refuses the connection with RPAGE_REJECT_VERSION.
 * @minor: RPAGE_PROTO_MINOR of the sender; any minor is compatible.
 * @node_id: the sender's node id (module parameter node_id).
 * @qp_index: which of the initiator's queue pairs to this peer this is,
 *	from 0; echoed in the accept.
 * @nr_qps: how many queue pairs the initiator opens to this peer.
 * @flags: RPAGE_HELLO_* feature flags; see rpage_hello_flags_supported().
 * @reserved: zero.
 */
struct rpage_hello {
	__le32 magic;
	__le16 major;
	__le16 minor;
	__le64 node_id;
	__le16 qp_index;
	__le16 nr_qps;
	__le32 flags;
	__u8 reserved[8];
};

/**
 * struct rpage_reject - why a connection was refused
 * @magic: RPAGE_PROTO_MAGIC.
 * @major: RPAGE_PROTO_MAJOR of the refusing host, so that the initiator
 *	can log which version it should speak.
 * @minor: RPAGE_PROTO_MINOR of the refusing host.
 * @reason: RPAGE_REJECT_* (the same values as the UAPI's).
 * @reserved: zero.
 */
struct rpage_reject {
	__le32 magic;
	__le16 major;
	__le16 minor;
	__le16 reason;
	__u8 reserved[6];
};

/*
 * Control messages travel by SEND/RECV on the first queue pair the
 * reader opened. On a new one, the exporting host sends its pool table:
 * an RPAGE_MSG_POOL_ADD for every pool the reader may read, with the
 * regions' addresses and keys, then one RPAGE_MSG_POOL_SYNC; the reader
 * uses none of the peer's pools before that. Later pools are announced
 * and withdrawn as they come and go; the reader acknowledges a withdrawn
 * pool once nothing of it is in flight any more. Either side sends an
 * RPAGE_MSG_HEARTBEAT now and then: the send completing proves the
 * other side is there, a message or not. A message is at most
 * RPAGE_MSG_MAX bytes; a pool with more memory regions than fit in one
 * RPAGE_MSG_POOL_ADD is sent in several.
 */
#define RPAGE_MSG_MAX		4096

/* Message types (struct rpage_msg_hdr.type). */
enum {
	RPAGE_MSG_POOL_ADD	= 1,
	RPAGE_MSG_POOL_DEL	= 2,
	RPAGE_MSG_POOL_DEL_ACK	= 3,
	RPAGE_MSG_POOL_SYNC	= 4,
	RPAGE_MSG_HEARTBEAT	= 5,
};

/* Pool flags on the wire: the UAPI's RPAGE_POOL_* values. */
#define RPAGE_MSG_POOL_FLAGS_ALL	0x1U

/* Bounds a receiver enforces on what a peer announces. */
#define RPAGE_MSG_MAX_MRS	65536
#define RPAGE_MSG_MR_ALIGN	4096

/**
 * struct rpage_msg_hdr - the start of every control message
 * @type: RPAGE_MSG_*.
 * @reserved0: zero.
 * @length: bytes of the whole message, this header included; equals the
 *	received byte count.
 */
struct rpage_msg_hdr {
	__le16 type;
	__le16 reserved0;
	__le32 length;
};

/**
 * struct rpage_msg_mr - one memory region of a pool
 * @iova: the address to use in RDMA READ and WRITE for the region's
 *	first byte.
 * @rkey: the region's remote key.
 * @reserved: zero.
 */
struct rpage_msg_mr {
	__le64 iova;
	__le32 rkey;
	__le32 reserved;
};

/**
 * struct rpage_msg_pool_add - a pool the reader may use, or more of it
 * @hdr: type RPAGE_MSG_POOL_ADD.
 * @pool_id: the pool's id on the exporting host.
 * @generation: this incarnation of the pool, never 0: a pool destroyed
 *	and created again with the same id has another generation, so
 *	that a reader's mapping of the old one never reads the new one.
 * @length: the pool's bytes, a non-zero multiple of RPAGE_MSG_MR_ALIGN.
 * @mr_bytes: bytes each region covers, a multiple of RPAGE_MSG_MR_ALIGN;
 *	region i covers pool bytes [i * @mr_bytes, (i + 1) * @mr_bytes),
 *	the last one less if the length says so.
 * @flags: RPAGE_POOL_* of the pool; see rpage_msg_pool_flags_supported().
 * @nr_mrs: regions in the whole pool, at most RPAGE_MSG_MAX_MRS.
 * @first_mr: index of @mrs[0] among them. The message with @first_mr 0
 *	(re)starts the pool; the pool is usable once all have arrived.
 * @count: entries in @mrs.
 * @reserved: zero.
 * @mrs: regions @first_mr to @first_mr + @count - 1.
 *
 * A transport whose transfers name no regions (the loop transport, which
 * copies pages on the host itself) announces a pool in one message with
 * @mr_bytes, @nr_mrs, @first_mr and @count all zero; a reader takes that
 * form only from such a transport, and over RDMA only the other.
 */
struct rpage_msg_pool_add {
	struct rpage_msg_hdr hdr;
	__le64 pool_id;
	__le64 generation;
	__le64 length;
	__le64 mr_bytes;
	__le32 flags;
	__le32 nr_mrs;
	__le32 first_mr;
	__le32 count;
	__u8 reserved[8];
	struct rpage_msg_mr mrs[];
};

/**
 * struct rpage_msg_pool_del - a pool the reader may no longer use
 * @hdr: type RPAGE_MSG_POOL_DEL.
 * @pool_id: the pool's id; its keys are invalidated right after.
 * @generation: the incarnation withdrawn; a reader ignores the message
 *	for any other.
 */
struct rpage_msg_pool_del {
	struct rpage_msg_hdr hdr;
	__le64 pool_id;
	__le64 generation;
};

/**
 * struct rpage_msg_pool_del_ack - the reader is done with a pool
 * @hdr: type RPAGE_MSG_POOL_DEL_ACK, from the reader to the exporter.
 * @pool_id: the pool of an RPAGE_MSG_POOL_DEL; the reader sends it once
 *	no read or write of the pool is in flight, so the exporter can
 *	invalidate the keys without failing any of them.
 * @generation: as in the RPAGE_MSG_POOL_DEL.
 */
struct rpage_msg_pool_del_ack {
	struct rpage_msg_hdr hdr;
	__le64 pool_id;
	__le64 generation;
};

/**
 * struct rpage_msg_pool_sync - the pool table is complete
 * @hdr: type RPAGE_MSG_POOL_SYNC, from the exporter, once after the
 *	RPAGE_MSG_POOL_ADD of every pool on a new control queue pair.
 * @nr_pools: how many pools the table holds.
 * @reserved: zero.
 *
 * The reader counts a peer connected only from here on: a fault after a
 * reconnect never finds the table half filled.
 */
struct rpage_msg_pool_sync {
	struct rpage_msg_hdr hdr;
	__le32 nr_pools;
	__u8 reserved[4];
};

/**
 * struct rpage_msg_heartbeat - either side is alive
 * @hdr: type RPAGE_MSG_HEARTBEAT.
 * @seq: the sender's count of heartbeats, for the curious.
 *
 * Nothing answers it: the sender learns what it needs from its own send
 * completing (the peer's queue pair took the message) or not.
 */
struct rpage_msg_heartbeat {
	struct rpage_msg_hdr hdr;
	__le64 seq;
};

/*
 * Over TCP, each connection is a byte stream of frames, each a message
 * that starts with a struct rpage_msg_hdr whose @length covers the whole
 * frame (data included). The initiator's first frame is an
 * RPAGE_MSG_TCP_HELLO; the exporter answers with its own, or with an
 * RPAGE_MSG_TCP_REJECT and closes. Then the control messages above go on
 * the reader's first connection as over RDMA (a pool is announced in the
 * form without regions: there are no keys), and reads and writes on any
 * connection: RPAGE_MSG_READ_REQ, answered by an RPAGE_MSG_READ_RESP
 * carrying the pages; RPAGE_MSG_WRITE_REQ carrying them, answered by an
 * RPAGE_MSG_WRITE_RESP. Requests carry a tag, so several are in flight
 * on one connection; answers may come in any order. The exporter checks
 * each request against the pool it names: its generation, bounds and
 * (for a write) RPAGE_POOL_WRITABLE.
 */
enum {
	RPAGE_MSG_TCP_HELLO	= 16,
	RPAGE_MSG_TCP_REJECT	= 17,
	RPAGE_MSG_READ_REQ	= 18,
	RPAGE_MSG_READ_RESP	= 19,
	RPAGE_MSG_WRITE_REQ	= 20,
	RPAGE_MSG_WRITE_RESP	= 21,
};

/* Most bytes one read or write request moves, and their unit. */
#define RPAGE_MSG_IO_MAX	65536
#define RPAGE_MSG_IO_ALIGN	4096

/* How a read or write request ended (struct rpage_msg_io.status). */
enum {
	RPAGE_IO_OK		= 0,
	RPAGE_IO_NO_POOL	= 1,	/* no such pool, or another generation */
	RPAGE_IO_RANGE		= 2,	/* not within the pool */
	RPAGE_IO_READ_ONLY	= 3,	/* a write to a pool not writable */
	RPAGE_IO_MALFORMED	= 4,	/* a length or offset out of rule */
};

/**
 * struct rpage_msg_tcp_hello - a TCP connection's first frame, each way
 * @hdr: type RPAGE_MSG_TCP_HELLO.
 * @hello: as in the connect and accept private data over RDMA.
 */
struct rpage_msg_tcp_hello {
	struct rpage_msg_hdr hdr;
	struct rpage_hello hello;
};

/**
 * struct rpage_msg_tcp_reject - the exporter refuses a TCP connection
 * @hdr: type RPAGE_MSG_TCP_REJECT; the exporter closes after it.
 * @reject: why, as over RDMA.
 */
struct rpage_msg_tcp_reject {
	struct rpage_msg_hdr hdr;
	struct rpage_reject reject;
};

/**
 * struct rpage_msg_io - a read or write request over TCP, or its answer
 * @hdr: RPAGE_MSG_READ_REQ or RPAGE_MSG_WRITE_RESP: @length is this
 *	struct; RPAGE_MSG_WRITE_REQ, and RPAGE_MSG_READ_RESP with @status
 *	RPAGE_IO_OK: this struct and then the @io_length bytes.
 * @tag: the reader's name for the request, echoed in its answer; at most
 *	one request of a tag is in flight on a connection.
 * @status: in an answer, RPAGE_IO_*; zero in a request.
 * @pool_id: the exporter's pool.
 * @generation: the incarnation of the pool the reader means.
 * @offset: where in the pool, a multiple of RPAGE_MSG_IO_ALIGN.
 * @io_length: bytes, a non-zero multiple of RPAGE_MSG_IO_ALIGN, at most
 *	RPAGE_MSG_IO_MAX; echoed in the answer.
 * @reserved: zero.
 */
struct rpage_msg_io {
	struct rpage_msg_hdr hdr;
	__le32 tag;
	__le32 status;
	__le64 pool_id;
	__le64 generation;
	__le64 offset;
	__le32 io_length;
	__u8 reserved[4];
};

/* How many regions one RPAGE_MSG_POOL_ADD carries at most. */
#define RPAGE_MSG_MRS_PER_ADD \
	((RPAGE_MSG_MAX - sizeof(struct rpage_msg_pool_add)) / \
	 sizeof(struct rpage_msg_mr))

static inline bool rpage_msg_pool_flags_supported(__u32 flags)
{
	return !(flags & ~RPAGE_MSG_POOL_FLAGS_ALL);
}

static inline bool rpage_hello_flags_supported(__u32 flags)
{
	return !(flags & ~RPAGE_HELLO_FLAGS_ALL);
}

#ifdef __KERNEL__
#include <linux/build_bug.h>

static inline void rpage_proto_build_checks(void)
{
	BUILD_BUG_ON(sizeof(struct rpage_hello) != 32);
	BUILD_BUG_ON(sizeof(struct rpage_hello) > RPAGE_PROTO_CONNECT_MAX);
	BUILD_BUG_ON(sizeof(struct rpage_reject) != 16);
	BUILD_BUG_ON(sizeof(struct rpage_msg_hdr) != 8);
	BUILD_BUG_ON(sizeof(struct rpage_msg_mr) != 16);
	BUILD_BUG_ON(sizeof(struct rpage_msg_pool_add) != 64);
	BUILD_BUG_ON(sizeof(struct rpage_msg_pool_del) != 24);
	BUILD_BUG_ON(sizeof(struct rpage_msg_pool_del_ack) != 24);
	BUILD_BUG_ON(sizeof(struct rpage_msg_pool_sync) != 16);
	BUILD_BUG_ON(sizeof(struct rpage_msg_heartbeat) != 16);
	BUILD_BUG_ON(sizeof(struct rpage_msg_tcp_hello) != 40);
	BUILD_BUG_ON(sizeof(struct rpage_msg_tcp_reject) != 24);
	BUILD_BUG_ON(sizeof(struct rpage_msg_io) != 48);
	/* Whom a pool is scoped to is not said on the wire. */
	BUILD_BUG_ON(RPAGE_MSG_POOL_FLAGS_ALL != RPAGE_POOL_WRITABLE);
}
#endif /* __KERNEL__ */

#endif /* RPAGE_PROTO_H */
