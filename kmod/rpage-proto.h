/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: the wire protocol between two hosts running rpage.ko.
 *
 * Every connection is an RC queue pair set up with rdma_cm. The host that
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
#define RPAGE_PROTO_MAJOR	1
#define RPAGE_PROTO_MINOR	0

/* Largest connect private data every RDMA transport carries. */
#define RPAGE_PROTO_CONNECT_MAX	56

/* No hello flag is defined by protocol 1.0. */
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
}
#endif /* __KERNEL__ */

#endif /* RPAGE_PROTO_H */
