// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_rogue_exporter: an exporting host that speaks rpage's protocol
 * on rdma-core alone (librdmacm, libibverbs) and misbehaves on command,
 * to show how a reader (rpage.ko) copes with a hostile peer.
 *
 * It listens on ADDR PORT and accepts every queue pair rpage.ko opens to
 * it with a good hello. On each new control queue pair (a reader's
 * first) it announces pool 1, a buffer of its own filled with the test
 * pattern of pool 1 (selftests/rpage_pattern.h) and registered for
 * remote reads, then the end of its pool table: the reader can map and
 * fault pool 1 and check every byte. It then reads commands, one a
 * line, on standard input:
 *
 *   malformed        sends every control message type with wrong
 *                    lengths, counts, ids, flags and directions
 *   flood N          announces N more pools, then withdraws them all
 *                    and counts the acknowledgments
 *   readd US SECS    announces pool 1 again every US microseconds for
 *                    SECS seconds (while the reader faults on it)
 *   acks ADDR PORT SECS QPS
 *                    connects to the reader's own endpoint as a reader
 *                    would, takes its pool table, acknowledges for SECS
 *                    seconds withdrawals nobody asked it for, and opens
 *                    QPS more queue pairs in that set
 *   deaf ADDR PORT SECS
 *                    connects to the reader's own endpoint as a reader
 *                    that never takes a control message (no receive
 *                    posted: every SEND to it is refused, not ready,
 *                    forever) and holds on for SECS seconds or until
 *                    the host gives up on it
 *   keys ADDR PORT POOL
 *                    connects to the reader's own endpoint as a reader
 *                    would, takes its pool table, and if the host told
 *                    it of POOL, keeps the address and key of its first
 *                    region and RDMA READs a page with them
 *   reuse ADDR PORT  the same, then READs a page with the address and
 *                    key kept, whether the host told it of the pool
 *                    this time or not: a pool scoped away from us, or
 *                    scoped to another peer, must not be readable with
 *                    them (the READ fails with a remote access error)
 *   quit
 *
 * and answers each with one line on standard output, for shell tests:
 *
 *   malformed sent 28
 *   flood pools 300 acks 300
 *   readd sent 51234
 *   acks table 2 sent 1500 qps-accepted 7 qps-rejected 33 dels 1
 *   deaf closed-after-ms 3012
 *   keys told 1 read ok
 *   reuse told 0 read failed remote access error
 *
 * Exit status: 0 after quit or end of input, 1 on an error.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/rpage.h>
#include <rdma/rdma_cma.h>

#include "../kmod/rpage-proto.h"
#include "rpage_pattern.h"

#define NODE_ID		0x60a6e
#define POOL_ID		1
#define POOL_GEN	1
#define FLOOD_BASE	1000
/*
 * Receives posted per control queue pair: enough for every
 * acknowledgment of a flood's withdrawals to find a buffer while we are
 * descheduled. One that finds none waits out an RNR timer (655 ms with
 * rdma_cm's min_rnr_timer of 0), and a few of those in a row outlast
 * the reader's control send timeout (its io timeout, 3 s in the test):
 * it reconnects, and the acknowledgments not yet sent are lost (seen
 * once with the host's CPUs busy).
 */
#define NR_RECV		256
#define MAX_CONNS	256
#define PAGE		4096
/* Regions of a pool only ever begun: what a table may be asked to hold. */
#define HUGE_MRS	RPAGE_MSG_MAX_MRS
/* The READs in flight a reader may ask us to answer. */
#define READ_DEPTH	16

/* One queue pair: rpage's to us (inbound), or ours to it. */
struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	uint16_t index;
	bool outbound;
	bool established;
	bool closed;
	/* A reject's reason, for our own connections: -1 if none. */
	int rejected;
};

struct rogue {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	void *pool;
	size_t pool_len;
	struct ibv_mr *pool_mr;
	/* NR_RECV receive buffers per control queue pair, then a send one. */
	uint8_t *bufs;
	struct ibv_mr *bufs_mr;
	struct conn conns[MAX_CONNS];
	/* The control queue pair of the set rpage opened to us, and ours. */
	struct conn *ctl;
	struct conn *out_ctl;
	/* Our connections as a reader post no receive (cmd_deaf). */
	bool deaf;
	uint64_t acks;
	uint64_t dels;
	/* What the reader announced on our own control queue pair. */
	uint64_t table_ids[64];
	uint64_t table_gens[64];
	unsigned int table_len;
	bool table_synced;
	/* cmd_keys: the pool, whether we were told of it, its first region. */
	uint64_t key_pool;
	bool key_told;
	uint64_t key_iova;
	uint32_t key_rkey;
	int timeout_ms;
	struct sockaddr_storage addr;
};

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rpage_rogue_exporter: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint8_t *recv_buf(struct rogue *r, unsigned int slot)
{
	return r->bufs + (size_t)slot * RPAGE_MSG_MAX;
}

/* The send buffer follows the receive buffers of both control QPs. */
static uint8_t *send_buf(struct rogue *r)
{
	return recv_buf(r, 2 * NR_RECV);
}

static struct conn *conn_new(struct rogue *r)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (!r->conns[i].id)
			return memset(&r->conns[i], 0, sizeof(r->conns[i]));
	fail("more than %d queue pairs", MAX_CONNS);
	return NULL;
}

static void conn_free(struct rogue *r, struct conn *c)
{
	if (r->ctl == c)
		r->ctl = NULL;
	if (r->out_ctl == c)
		r->out_ctl = NULL;
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	rdma_destroy_id(c->id);
	memset(c, 0, sizeof(*c));
}

/* The PD, the pool and the buffers, on the device of the first QP. */
static int rogue_setup_device(struct rogue *r, struct ibv_context *verbs)
{
	size_t bufs_len = (2 * NR_RECV + 1) * (size_t)RPAGE_MSG_MAX;

	if (r->pd)
		return verbs == r->verbs ? 0 : -1;
	r->verbs = verbs;
	r->pd = ibv_alloc_pd(verbs);
	if (!r->pd) {
		fail("ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	r->pool_mr = ibv_reg_mr(r->pd, r->pool, r->pool_len,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	r->bufs = calloc(1, bufs_len);
	if (!r->pool_mr || !r->bufs) {
		fail("registering the pool: %s", strerror(errno));
		return -1;
	}
	r->bufs_mr = ibv_reg_mr(r->pd, r->bufs, bufs_len, IBV_ACCESS_LOCAL_WRITE);
	if (!r->bufs_mr) {
		fail("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int conn_create_qp(struct rogue *r, struct conn *c)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 8,
			.max_recv_wr = NR_RECV,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	if (rogue_setup_device(r, c->id->verbs))
		return -1;
	c->cq = ibv_create_cq(c->id->verbs, NR_RECV + 8, NULL, NULL, 0);
	if (!c->cq) {
		fail("ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	attr.send_cq = c->cq;
	attr.recv_cq = c->cq;
	if (rdma_create_qp(c->id, r->pd, &attr)) {
		fail("rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int post_recv(struct rogue *r, struct conn *c, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)recv_buf(r, slot),
		.length = RPAGE_MSG_MAX,
		.lkey = r->bufs_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
}

static int post_recvs(struct rogue *r, struct conn *c)
{
	unsigned int base = c->outbound ? NR_RECV : 0;

	for (unsigned int i = 0; i < NR_RECV; i++)
		if (post_recv(r, c, base + i)) {
			fail("ibv_post_recv: %s", strerror(errno));
			return -1;
		}
	return 0;
}

/* What a reader or an exporter sent us on a control queue pair. */
static void handle_msg(struct rogue *r, struct conn *c, const uint8_t *buf,
		       uint32_t len)
{
	const struct rpage_msg_hdr *hdr = (const void *)buf;
	const struct rpage_msg_pool_add *add = (const void *)buf;

	if (len < sizeof(*hdr))
		return;
	switch (le16toh(hdr->type)) {
	case RPAGE_MSG_POOL_DEL_ACK:
		r->acks++;
		break;
	case RPAGE_MSG_POOL_DEL:
		r->dels++;
		break;
	case RPAGE_MSG_POOL_ADD:
		if (c->outbound && len >= sizeof(*add) && !add->first_mr &&
		    r->table_len < sizeof(r->table_ids) / sizeof(r->table_ids[0])) {
			r->table_ids[r->table_len] = le64toh(add->pool_id);
			r->table_gens[r->table_len++] = le64toh(add->generation);
		}
		if (c->outbound && r->key_pool &&
		    le64toh(add->pool_id) == r->key_pool && !add->first_mr &&
		    le32toh(add->count) &&
		    len >= sizeof(*add) + sizeof(add->mrs[0])) {
			r->key_told = true;
			r->key_iova = le64toh(add->mrs[0].iova);
			r->key_rkey = le32toh(add->mrs[0].rkey);
		}
		break;
	case RPAGE_MSG_POOL_SYNC:
		if (c->outbound)
			r->table_synced = true;
		break;
	}
}

/*
 * Takes what completed on @c: messages (counted, their buffer posted
 * again) and our one send. Returns 1 once the send has completed, 0 if
 * not yet, -1 on an error.
 */
static int conn_poll(struct rogue *r, struct conn *c)
{
	struct ibv_wc wc[8];
	int n, sent = 0;

	if (!c || !c->cq)
		return 0;
	n = ibv_poll_cq(c->cq, 8, wc);
	if (n < 0) {
		fail("ibv_poll_cq: %d", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				fail("completion error on queue pair %u: %s",
				     c->index, ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (wc[i].opcode == IBV_WC_SEND) {
			sent = 1;
			continue;
		}
		handle_msg(r, c, recv_buf(r, wc[i].wr_id), wc[i].byte_len);
		if (post_recv(r, c, wc[i].wr_id))
			return -1;
	}
	return sent;
}

static int send_on(struct rogue *r, struct conn *c, const void *msg, uint32_t len);

static int send_table(struct rogue *r, struct conn *c)
{
	struct {
		struct rpage_msg_pool_add add;
		struct rpage_msg_mr mr;
	} a = {
		.add = {
			.hdr.type = htole16(RPAGE_MSG_POOL_ADD),
			.hdr.length = htole32(sizeof(a)),
			.pool_id = htole64(POOL_ID),
			.generation = htole64(POOL_GEN),
			.length = htole64(r->pool_len),
			.mr_bytes = htole64(r->pool_len),
			.nr_mrs = htole32(1),
			.count = htole32(1),
		},
		.mr = {
			.iova = htole64((uintptr_t)r->pool),
			.rkey = htole32(r->pool_mr->rkey),
		},
	};
	struct rpage_msg_pool_sync sync = {
		.hdr.type = htole16(RPAGE_MSG_POOL_SYNC),
		.hdr.length = htole32(sizeof(sync)),
		.nr_pools = htole32(1),
	};

	return send_on(r, c, &a, sizeof(a)) || send_on(r, c, &sync, sizeof(sync));
}

static void hello_init(struct rpage_hello *h, uint16_t index, uint16_t nr)
{
	*h = (struct rpage_hello) {
		.magic = htole32(RPAGE_PROTO_MAGIC),
		.major = htole16(RPAGE_PROTO_MAJOR),
		.minor = htole16(RPAGE_PROTO_MINOR),
		.node_id = htole64(NODE_ID),
		.qp_index = htole16(index),
		.nr_qps = htole16(nr),
	};
}

/* rpage.ko opens a queue pair to us: accept any good hello. */
static void on_connect_request(struct rogue *r, struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *req = &ev->param.conn;
	struct rdma_conn_param param = { 0 };
	struct rpage_hello hello, reply;
	struct conn *c;

	if (!req->private_data || req->private_data_len < sizeof(hello)) {
		rdma_reject(ev->id, NULL, 0);
		return;
	}
	memcpy(&hello, req->private_data, sizeof(hello));
	c = conn_new(r);
	if (!c) {
		rdma_reject(ev->id, NULL, 0);
		return;
	}
	c->id = ev->id;
	c->index = le16toh(hello.qp_index);
	c->rejected = -1;
	ev->id->context = c;
	if (conn_create_qp(r, c) || (c->index == 0 && post_recvs(r, c))) {
		rdma_reject(ev->id, NULL, 0);
		conn_free(r, c);
		return;
	}
	hello_init(&reply, c->index, le16toh(hello.nr_qps));
	param.private_data = &reply;
	param.private_data_len = sizeof(reply);
	param.responder_resources = req->responder_resources < READ_DEPTH ?
				    req->responder_resources : READ_DEPTH;
	param.initiator_depth = 1;
	param.rnr_retry_count = 7;
	if (rdma_accept(ev->id, &param)) {
		fail("rdma_accept: %s", strerror(errno));
		conn_free(r, c);
	}
}

/* Handles one rdma_cm event; returns the connection it concerned. */
static struct conn *handle_event(struct rogue *r, struct rdma_cm_event *ev)
{
	struct conn *c = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_connect_request(r, ev);
		return NULL;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!c)
			return NULL;
		c->established = true;
		/* A new set from the reader: the table goes on its first. */
		if (!c->outbound && c->index == 0) {
			r->ctl = c;
			if (send_table(r, c) == 0) {
				printf("table sent\n");
				fflush(stdout);
			}
		}
		return c;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return c;
	case RDMA_CM_EVENT_REJECTED:
		if (c && c->outbound) {
			const struct rpage_reject *rej = ev->param.conn.private_data;

			c->rejected = 0;
			if (rej && ev->param.conn.private_data_len >= sizeof(*rej) &&
			    le32toh(rej->magic) == RPAGE_PROTO_MAGIC)
				c->rejected = le16toh(rej->reason);
		}
		/* fall through */
	default:
		if (c)
			c->closed = true;
		return c;
	}
}

/*
 * One round of everything: rdma_cm events, and the completions of both
 * control queue pairs. Waits up to @wait_ms for an event first. Returns
 * the connection the last event concerned, if any.
 */
static struct conn *pump(struct rogue *r, int wait_ms)
{
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev, copy;
	struct conn *c = NULL;

	if (wait_ms)
		poll(&pfd, 1, wait_ms);
	while (!rdma_get_cm_event(r->ch, &ev)) {
		copy = *ev;
		/* Connect requests need the event's private data. */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
		    ev->event == RDMA_CM_EVENT_REJECTED) {
			c = handle_event(r, ev);
			rdma_ack_cm_event(ev);
		} else {
			rdma_ack_cm_event(ev);
			c = handle_event(r, &copy);
		}
	}
	if (conn_poll(r, r->ctl) < 0 && r->ctl)
		r->ctl->closed = true;
	if (conn_poll(r, r->out_ctl) < 0 && r->out_ctl)
		r->out_ctl->closed = true;
	/* Closed ones go once nothing refers to them any more. */
	for (int i = 0; i < MAX_CONNS; i++)
		if (r->conns[i].id && r->conns[i].closed &&
		    !r->conns[i].outbound)
			conn_free(r, &r->conns[i]);
	return c;
}

/* Sends @msg on @c and waits for the send to complete. */
static int send_on(struct rogue *r, struct conn *c, const void *msg, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(r),
		.length = len,
		.lkey = r->bufs_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int64_t deadline = now_us() + (int64_t)r->timeout_ms * 1000;
	struct ibv_send_wr *bad;
	int ret;

	if (!c || c->closed || len > RPAGE_MSG_MAX)
		return -1;
	memcpy(send_buf(r), msg, len);
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		fail("ibv_post_send: %s", strerror(errno));
		return -1;
	}
	while ((ret = conn_poll(r, c)) == 0) {
		if (now_us() > deadline) {
			fail("a send did not complete in %d ms", r->timeout_ms);
			return -1;
		}
	}
	if (ret < 0)
		c->closed = true;
	return ret < 0 ? -1 : 0;
}

static int send_ctl(struct rogue *r, const void *msg, uint32_t len)
{
	if (!r->ctl) {
		fail("no control queue pair from the reader");
		return -1;
	}
	return send_on(r, r->ctl, msg, len);
}

/* A POOL_ADD of one region of @len bytes, for the malformed variants. */
struct one_add {
	struct rpage_msg_pool_add add;
	struct rpage_msg_mr mr;
};

static void one_add_init(struct rogue *r, struct one_add *a, uint64_t id)
{
	*a = (struct one_add) {
		.add = {
			.hdr.type = htole16(RPAGE_MSG_POOL_ADD),
			.hdr.length = htole32(sizeof(*a)),
			.pool_id = htole64(id),
			.generation = htole64(POOL_GEN),
			.length = htole64(PAGE),
			.mr_bytes = htole64(PAGE),
			.nr_mrs = htole32(1),
			.count = htole32(1),
		},
		.mr = {
			.iova = htole64((uintptr_t)r->pool),
			.rkey = htole32(r->pool_mr->rkey),
		},
	};
}

enum add_fault {
	ADD_SHORT, ADD_COUNT, ADD_GEN0, ADD_LEN0, ADD_LEN_ODD, ADD_MRB0,
	ADD_MRB_ODD, ADD_NR0, ADD_NR_HUGE, ADD_NR_WRONG, ADD_PAST_END,
	ADD_FLAGS, ADD_NEXT_UNKNOWN, ADD_NEXT_GEN, ADD_NEXT_GAP,
	ADD_NO_REGIONS, ADD_FAULTS,
};

static uint32_t bad_add(struct rogue *r, struct one_add *a, enum add_fault f)
{
	uint32_t len = sizeof(*a);

	one_add_init(r, a, 500 + f);
	switch (f) {
	case ADD_SHORT:
		len = sizeof(a->add) - 8;
		break;
	case ADD_COUNT:
		a->add.count = htole32(2);
		break;
	case ADD_GEN0:
		a->add.generation = 0;
		break;
	case ADD_LEN0:
		a->add.length = 0;
		break;
	case ADD_LEN_ODD:
		a->add.length = htole64(PAGE + 1);
		break;
	case ADD_MRB0:
		a->add.mr_bytes = 0;
		break;
	case ADD_MRB_ODD:
		a->add.mr_bytes = htole64(PAGE - 8);
		break;
	case ADD_NR0:
		a->add.nr_mrs = 0;
		break;
	case ADD_NR_HUGE:
		a->add.nr_mrs = htole32(RPAGE_MSG_MAX_MRS + 1);
		a->add.length = htole64((uint64_t)PAGE * (RPAGE_MSG_MAX_MRS + 1));
		break;
	case ADD_NR_WRONG:
		a->add.nr_mrs = htole32(2);
		break;
	case ADD_PAST_END:
		a->add.first_mr = htole32(1);
		break;
	case ADD_FLAGS:
		a->add.flags = htole32(0x80000000);
		break;
	case ADD_NEXT_UNKNOWN:
		/* The second region of a pool never begun. */
		a->add.length = htole64(2 * PAGE);
		a->add.nr_mrs = htole32(2);
		a->add.first_mr = htole32(1);
		break;
	case ADD_NEXT_GEN:
		/* Pool 1's second region, of another generation. */
		a->add.pool_id = htole64(POOL_ID);
		a->add.generation = htole64(POOL_GEN + 1);
		a->add.length = htole64(r->pool_len);
		a->add.mr_bytes = htole64(r->pool_len);
		a->add.nr_mrs = htole32(1);
		a->add.first_mr = htole32(1);
		a->add.count = 0;
		len = sizeof(a->add);
		break;
	case ADD_NEXT_GAP:
		/* Regions 2.. of a pool whose region 1 never came. */
		a->add.length = htole64(4 * PAGE);
		a->add.nr_mrs = htole32(4);
		a->add.first_mr = htole32(2);
		break;
	case ADD_NO_REGIONS:
		/* A loop transport's announcement: never over RDMA. */
		a->add.mr_bytes = 0;
		a->add.nr_mrs = 0;
		a->add.count = 0;
		len = sizeof(a->add);
		break;
	case ADD_FAULTS:
		break;
	}
	/* The header tells the truth: what is wrong is inside. */
	a->add.hdr.length = htole32(len);
	return len;
}

/*
 * Every control message type, wrong: each must be dropped, counted and
 * logged by the reader, which stays connected and keeps pool 1.
 */
static int cmd_malformed(struct rogue *r)
{
	struct rpage_msg_hdr hdr = { .type = htole16(RPAGE_MSG_HEARTBEAT) };
	struct rpage_msg_heartbeat hb = {
		.hdr.type = htole16(RPAGE_MSG_HEARTBEAT),
		.hdr.length = htole32(sizeof(hb)),
	};
	struct rpage_msg_pool_del del = {
		.hdr.type = htole16(RPAGE_MSG_POOL_DEL),
		.hdr.length = htole32(sizeof(del) - 1),
	};
	struct rpage_msg_pool_del_ack ack = {
		.hdr.type = htole16(RPAGE_MSG_POOL_DEL_ACK),
		.hdr.length = htole32(sizeof(ack)),
		.pool_id = htole64(POOL_ID),
		.generation = htole64(POOL_GEN),
	};
	struct rpage_msg_pool_sync sync = {
		.hdr.type = htole16(RPAGE_MSG_POOL_SYNC),
		.hdr.length = htole32(sizeof(sync) + 8),
	};
	uint8_t big[64] = { 0 };
	static const uint16_t unknown_types[] = { 0, 6, 0x7fff, 0xffff };
	unsigned int sent = 0;
	struct one_add a;
	uint32_t len;

	/* Shorter than a header, and a header whose length lies. */
	if (send_ctl(r, &hdr, 4))
		return -1;
	sent++;
	hdr.length = htole32(sizeof(hdr) + 1);
	if (send_ctl(r, &hdr, sizeof(hdr)))
		return -1;
	sent++;
	for (unsigned int i = 0; i < sizeof(unknown_types) / sizeof(unknown_types[0]); i++) {
		struct rpage_msg_hdr *h = (void *)big;

		h->type = htole16(unknown_types[i]);
		h->length = htole32(sizeof(big));
		if (send_ctl(r, big, sizeof(big)))
			return -1;
		sent++;
	}
	for (int f = 0; f < ADD_FAULTS; f++) {
		len = bad_add(r, &a, f);
		if (send_ctl(r, &a, len))
			return -1;
		sent++;
	}
	/* The other types, too long or too short by a byte or more. */
	if (send_ctl(r, &del, sizeof(del) - 1))
		return -1;
	sent++;
	memset(big, 0, sizeof(big));
	memcpy(big, &sync, sizeof(sync));
	if (send_ctl(r, big, sizeof(sync) + 8))
		return -1;
	sent++;
	hb.hdr.length = htole32(sizeof(hb) + 8);
	memset(big, 0, sizeof(big));
	memcpy(big, &hb, sizeof(hb));
	if (send_ctl(r, big, sizeof(hb) + 8))
		return -1;
	sent++;
	/* An acknowledgment goes from a reader to an exporter, never back. */
	if (send_ctl(r, &ack, sizeof(ack)))
		return -1;
	sent++;
	printf("malformed sent %u\n", sent);
	return 0;
}

/* Waits up to the timeout, pumping, until @done says so. */
static bool pump_until(struct rogue *r, bool (*done)(struct rogue *r, uint64_t arg),
		       uint64_t arg)
{
	int64_t deadline = now_us() + (int64_t)r->timeout_ms * 1000;

	while (!done(r, arg)) {
		if (now_us() > deadline)
			return false;
		pump(r, 1);
	}
	return true;
}

static bool acks_reached(struct rogue *r, uint64_t want)
{
	return r->acks >= want;
}

/*
 * @n pools the reader has no room for: one region each, and every tenth
 * the first region of a pool of RPAGE_MSG_MAX_MRS; then each withdrawn.
 * The reader acknowledges every withdrawal, of a pool it refused too.
 */
static int cmd_flood(struct rogue *r, unsigned int n)
{
	struct rpage_msg_pool_del del = {
		.hdr.type = htole16(RPAGE_MSG_POOL_DEL),
		.hdr.length = htole32(sizeof(del)),
		.generation = htole64(POOL_GEN),
	};
	uint64_t acks = r->acks;
	struct one_add a;

	for (unsigned int i = 0; i < n; i++) {
		one_add_init(r, &a, FLOOD_BASE + i);
		if (i % 10 == 9) {
			a.add.nr_mrs = htole32(HUGE_MRS);
			a.add.length = htole64((uint64_t)HUGE_MRS * PAGE);
		}
		if (send_ctl(r, &a, sizeof(a)))
			return -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		del.pool_id = htole64(FLOOD_BASE + i);
		if (send_ctl(r, &del, sizeof(del)))
			return -1;
	}
	pump_until(r, acks_reached, acks + n);
	printf("flood pools %u acks %llu\n", n,
	       (unsigned long long)(r->acks - acks));
	return 0;
}

/* Pool 1 announced again and again, as it is, while the reader uses it. */
static int cmd_readd(struct rogue *r, unsigned int us, unsigned int secs)
{
	int64_t end = now_us() + (int64_t)secs * 1000000, next = now_us();
	unsigned long long sent = 0;
	struct one_add a;

	one_add_init(r, &a, POOL_ID);
	a.add.length = htole64(r->pool_len);
	a.add.mr_bytes = htole64(r->pool_len);
	while (now_us() < end) {
		if (now_us() >= next) {
			if (send_ctl(r, &a, sizeof(a)))
				return -1;
			sent++;
			next += us;
		}
		pump(r, 0);
	}
	printf("readd sent %llu\n", sent);
	return 0;
}

/* Resolves and connects @c to @dst with a hello as queue pair @index of @nr. */
static int out_connect(struct rogue *r, struct conn *c,
		       struct sockaddr_storage *dst, uint16_t index, uint16_t nr)
{
	struct rpage_hello hello;
	struct rdma_conn_param param = {
		.private_data = &hello,
		.private_data_len = sizeof(hello),
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	int64_t deadline;
	struct sockaddr_storage src = r->addr;

	hello_init(&hello, index, nr);
	c->outbound = true;
	c->index = index;
	c->rejected = -1;
	if (rdma_create_id(r->ch, &c->id, c, RDMA_PS_TCP)) {
		fail("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&src,
			      (struct sockaddr *)dst, r->timeout_ms)) {
		fail("rdma_resolve_addr: %s", strerror(errno));
		return -1;
	}
	deadline = now_us() + (int64_t)r->timeout_ms * 1000;
	while (pump(r, 1) != c)
		if (now_us() > deadline)
			return -1;
	if (c->closed || rdma_resolve_route(c->id, r->timeout_ms))
		return -1;
	while (pump(r, 1) != c)
		if (now_us() > deadline)
			return -1;
	if (c->closed || conn_create_qp(r, c) ||
	    (index == 0 && !r->deaf && post_recvs(r, c)))
		return -1;
	if (index == 0)
		r->out_ctl = c;
	if (rdma_connect(c->id, &param)) {
		fail("rdma_connect: %s", strerror(errno));
		return -1;
	}
	while (!c->established && !c->closed) {
		if (now_us() > deadline)
			return -1;
		pump(r, 1);
	}
	return c->established ? 0 : -1;
}

/* @addr @port (IPv4), into @dst. */
static int resolve_addr(const char *addr, const char *port,
			struct sockaddr_storage *dst)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		fail("bad address %s port %s", addr, port);
		return -1;
	}
	memcpy(dst, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static bool table_synced(struct rogue *r, uint64_t unused)
{
	return r->table_synced;
}

/*
 * As a reader of the host under test: take its pool table, then for
 * @secs seconds acknowledge withdrawals it never asked of us (its pools
 * and made-up ones) while it may withdraw pools from its good readers,
 * and try to open @qps more queue pairs than a set has.
 */
static int cmd_acks(struct rogue *r, const char *addr, const char *port,
		    unsigned int secs, unsigned int qps)
{
	struct rpage_msg_pool_del_ack ack = {
		.hdr.type = htole16(RPAGE_MSG_POOL_DEL_ACK),
		.hdr.length = htole32(sizeof(ack)),
	};
	unsigned int accepted = 0, rejected = 0, sent = 0;
	struct sockaddr_storage dst = { 0 };
	struct conn *ctl, *c;
	int64_t end;
	int ret = -1;

	if (resolve_addr(addr, port, &dst))
		return -1;
	r->table_len = 0;
	r->table_synced = false;
	r->dels = 0;
	ctl = conn_new(r);
	if (!ctl || out_connect(r, ctl, &dst, 0, qps + 1)) {
		fail("connecting to %s port %s as a reader", addr, port);
		goto out;
	}
	if (!pump_until(r, table_synced, 0)) {
		fail("no pool table from %s", addr);
		goto out;
	}
	for (unsigned int i = 1; i <= qps; i++) {
		c = conn_new(r);
		if (!c)
			goto out;
		if (out_connect(r, c, &dst, i, qps + 1) == 0)
			accepted++;
		else if (c->rejected == RPAGE_REJECT_NO_RESOURCES)
			rejected++;
		else
			fail("queue pair %u: neither accepted nor refused for want of room", i);
	}
	end = now_us() + (int64_t)secs * 1000000;
	for (uint64_t n = 0; now_us() < end; n++) {
		/* Pools of the table, then made-up ones, in turn. */
		if (r->table_len && n % 2 == 0) {
			unsigned int t = (n / 2) % r->table_len;

			ack.pool_id = htole64(r->table_ids[t]);
			ack.generation = htole64(r->table_gens[t]);
		} else {
			ack.pool_id = htole64(n * 7919 % 100000);
			ack.generation = htole64(n);
		}
		if (send_on(r, ctl, &ack, sizeof(ack)))
			goto out;
		sent++;
		pump(r, 0);
		usleep(1000);
	}
	printf("acks table %u sent %u qps-accepted %u qps-rejected %u dels %llu\n",
	       r->table_len, sent, accepted, rejected,
	       (unsigned long long)r->dels);
	ret = 0;
out:
	for (int i = 0; i < MAX_CONNS; i++) {
		c = &r->conns[i];
		if (c->id && c->outbound) {
			if (c->established)
				rdma_disconnect(c->id);
			conn_free(r, c);
		}
	}
	return ret;
}

/*
 * As a reader of the host under test that never takes a control message:
 * its pool table can never be sent. Holds on for @secs seconds, or until
 * the host closes the connection, and says after how long it did (-1:
 * it did not).
 */
static int cmd_deaf(struct rogue *r, const char *addr, const char *port,
		    unsigned int secs)
{
	struct sockaddr_storage dst = { 0 };
	int64_t start, end, closed_ms = -1;
	struct conn *c;
	int ret = -1;

	if (resolve_addr(addr, port, &dst))
		return -1;
	r->deaf = true;
	c = conn_new(r);
	if (!c || out_connect(r, c, &dst, 0, 1)) {
		fail("connecting to %s port %s as a reader", addr, port);
		goto out;
	}
	start = now_us();
	end = start + (int64_t)secs * 1000000;
	while (now_us() < end && !c->closed)
		pump(r, 100);
	if (c->closed)
		closed_ms = (now_us() - start) / 1000;
	printf("deaf closed-after-ms %lld\n", (long long)closed_ms);
	ret = 0;
out:
	r->deaf = false;
	if (c && c->id) {
		if (c->established && !c->closed)
			rdma_disconnect(c->id);
		conn_free(r, c);
	}
	return ret;
}

/* The READ's work request id: no receive slot has it. */
#define READ_WR_ID	UINT64_MAX

/*
 * RDMA READs one page at @iova with @rkey on @c into the send buffer,
 * taking the control messages that arrive meanwhile. Returns the READ's
 * completion status, or -1 if it never completed.
 */
static int read_page(struct rogue *r, struct conn *c, uint64_t iova,
		     uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(r),
		.length = PAGE,
		.lkey = r->bufs_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = READ_WR_ID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = iova, .rkey = rkey },
	};
	int64_t deadline = now_us() + (int64_t)r->timeout_ms * 1000;
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int n;

	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		fail("ibv_post_send: %s", strerror(errno));
		return -1;
	}
	while (now_us() < deadline) {
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			return -1;
		if (!n) {
			usleep(100);
			continue;
		}
		if (wc.wr_id == READ_WR_ID)
			return wc.status;
		/* A receive: flushed once the READ broke the queue pair. */
		if (wc.status == IBV_WC_SUCCESS) {
			handle_msg(r, c, recv_buf(r, wc.wr_id), wc.byte_len);
			post_recv(r, c, wc.wr_id);
		}
	}
	fail("the READ did not complete in %d ms", r->timeout_ms);
	return -1;
}

/*
 * cmd_keys (@reuse false) and cmd_reuse: as a reader of the host under
 * test, take its pool table, and READ a page of pool @pool with the
 * first region's address and key: those it was told now (keys), or those
 * kept from the last keys (reuse).
 */
static int cmd_keys(struct rogue *r, const char *addr, const char *port,
		    uint64_t pool, bool reuse)
{
	struct sockaddr_storage dst = { 0 };
	uint64_t iova = r->key_iova;
	uint32_t rkey = r->key_rkey;
	const char *what = reuse ? "reuse" : "keys";
	struct conn *c;
	int ret = -1, status = -2;

	if (resolve_addr(addr, port, &dst))
		return -1;
	if (reuse && !r->key_pool) {
		fail("reuse: no keys kept (keys first)");
		return -1;
	}
	r->key_pool = pool;
	r->key_told = false;
	r->table_len = 0;
	r->table_synced = false;
	c = conn_new(r);
	if (!c || out_connect(r, c, &dst, 0, 1)) {
		fail("connecting to %s port %s as a reader", addr, port);
		goto out;
	}
	if (!pump_until(r, table_synced, 0)) {
		fail("no pool table from %s", addr);
		goto out;
	}
	if (!reuse) {
		iova = r->key_iova;
		rkey = r->key_rkey;
	}
	if (reuse || r->key_told)
		status = read_page(r, c, iova, rkey);
	printf("%s told %d read %s%s\n", what, r->key_told,
	       status == -2 ? "none" : status == IBV_WC_SUCCESS ? "ok" : "failed ",
	       status == -2 || status == IBV_WC_SUCCESS ? "" :
	       status < 0 ? "no completion" :
	       ibv_wc_status_str((enum ibv_wc_status)status));
	ret = 0;
out:
	if (c && c->id) {
		if (c->established && !c->closed)
			rdma_disconnect(c->id);
		conn_free(r, c);
	}
	/* What reuse reads: the keys of the last keys, told or not since. */
	if (!reuse && !r->key_told)
		r->key_pool = 0;
	return ret;
}

static int run_command(struct rogue *r, char *line)
{
	char *argv[6] = { 0 };
	int argc = 0;
	char *save = NULL;
	int ret;

	for (char *t = strtok_r(line, " \t\n", &save); t && argc < 6;
	     t = strtok_r(NULL, " \t\n", &save))
		argv[argc++] = t;
	if (!argc)
		return 0;
	if (!strcmp(argv[0], "quit"))
		return 1;
	if (!strcmp(argv[0], "malformed") && argc == 1)
		ret = cmd_malformed(r);
	else if (!strcmp(argv[0], "flood") && argc == 2)
		ret = cmd_flood(r, strtoul(argv[1], NULL, 0));
	else if (!strcmp(argv[0], "readd") && argc == 3)
		ret = cmd_readd(r, strtoul(argv[1], NULL, 0),
				strtoul(argv[2], NULL, 0));
	else if (!strcmp(argv[0], "deaf") && argc == 4)
		ret = cmd_deaf(r, argv[1], argv[2], strtoul(argv[3], NULL, 0));
	else if (!strcmp(argv[0], "keys") && argc == 4)
		ret = cmd_keys(r, argv[1], argv[2], strtoull(argv[3], NULL, 0),
			       false);
	else if (!strcmp(argv[0], "reuse") && argc == 3)
		ret = cmd_keys(r, argv[1], argv[2], r->key_pool, true);
	else if (!strcmp(argv[0], "acks") && argc == 5)
		ret = cmd_acks(r, argv[1], argv[2], strtoul(argv[3], NULL, 0),
			       strtoul(argv[4], NULL, 0));
	else {
		fail("unknown command: %s", argv[0]);
		ret = -1;
	}
	if (ret)
		printf("%s failed\n", argv[0]);
	fflush(stdout);
	return ret ? -1 : 0;
}

static int rogue_listen(struct rogue *r, const char *addr, const char *port)
{
	int flags;

	if (resolve_addr(addr, port, &r->addr))
		return -1;
	r->ch = rdma_create_event_channel();
	if (!r->ch) {
		fail("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	flags = fcntl(r->ch->fd, F_GETFL);
	if (flags < 0 || fcntl(r->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	if (rdma_create_id(r->ch, &r->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(r->listen, (struct sockaddr *)&r->addr) ||
	    rdma_listen(r->listen, 64)) {
		fail("listening on %s port %s: %s", addr, port, strerror(errno));
		return -1;
	}
	printf("listening %s %s\n", addr, port);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct rogue r = { .timeout_ms = 30000 };
	char line[256];
	size_t fill = 0;
	int ret = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: rpage_rogue_exporter ADDR PORT POOL_BYTES\n"
			"then commands on standard input (see the source)\n");
		return 1;
	}
	r.pool_len = strtoull(argv[3], NULL, 0);
	if (!r.pool_len || r.pool_len % PAGE) {
		fail("POOL_BYTES must be a non-zero multiple of %d", PAGE);
		return 1;
	}
	r.pool = mmap(NULL, r.pool_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r.pool == MAP_FAILED)
		return 1;
	rpage_pattern_fill(r.pool, r.pool_len, POOL_ID, 0, 0);
	if (rogue_listen(&r, argv[1], argv[2]))
		return 1;
	if (fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK) < 0)
		return 1;

	for (;;) {
		ssize_t n = read(0, line + fill, sizeof(line) - 1 - fill);
		char *nl;

		if (n == 0)
			break;
		if (n > 0)
			fill += n;
		line[fill] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			ret = run_command(&r, line);
			memmove(line, nl + 1, fill - (nl + 1 - line) + 1);
			fill -= nl + 1 - line;
			if (ret)
				goto out;
		}
		if (fill == sizeof(line) - 1) {
			fail("command too long");
			ret = -1;
			break;
		}
		pump(&r, 5);
	}
out:
	printf("done\n");
	fflush(stdout);
	return ret < 0 ? 1 : 0;
}
