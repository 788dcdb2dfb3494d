// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_rogue_peer: connect to an rpage.ko endpoint the way a foreign host
 * would, using only rdma-core (librdmacm), and report how it answered.
 *
 * rpage.ko's own initiator always sends a well-formed hello, so it cannot
 * show how an endpoint treats anything else. This peer can lie about its
 * protocol version, node id and flags, and can send a bad magic or a
 * truncated hello. It prints a single line on stdout for shell tests to
 * grep:
 *
 *	accepted node_id 0x1 proto 2.0 reads_in_flight 16
 *	rejected reason version proto 2.0
 *	rejected status 8
 *
 * Exit status: 0 accepted; 1 error, meaning we learned nothing about the
 * endpoint; 2 rejected with an rpage reject message; 3 rejected without
 * one (nothing listening on the port, or a listener that is not rpage).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/rpage.h>
#include <rdma/rdma_cma.h>

#include "../kmod/rpage-proto.h"

enum {
	EXIT_ACCEPTED		= 0,
	EXIT_ERROR		= 1,
	EXIT_REJECTED		= 2,
	EXIT_REJECTED_FOREIGN	= 3,
};

/*
 * The IB CM reject reason of a reject the remote consumer sent itself with
 * rdma_reject() (IBTA table 112). The kernel's ib_cm.h is not userspace
 * API, so it is spelled out here.
 */
#define IB_CM_REJ_CONSUMER_DEFINED	28

#define DEFAULT_TIMEOUT_S	10
/* Keeps the timeout in milliseconds well inside an int for poll(). */
#define MAX_TIMEOUT_S		86400
#define DEFAULT_NODE_ID		0x7e57
/*
 * The RDMA READs this initiator asks to have in flight, as rpage's own
 * does; the accept decides how many it gets (its QP's max_rd_atomic).
 */
#define READ_DEPTH		16

struct options {
	const char *addr;
	unsigned int port;
	int timeout_ms;
	uint16_t major;
	uint16_t minor;
	uint64_t node_id;
	uint32_t flags;
	bool bad_magic;
	size_t hello_len;
};

struct peer {
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int timeout_ms;
};

static void __attribute__((format(printf, 2, 3)))
report(const char *level, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: rpage_rogue_peer [options] ADDR [PORT]\n"
		"\n"
		"Connect to the rpage endpoint at ADDR (port %u by default) with\n"
		"an rpage hello, possibly a malformed one, and print how the\n"
		"endpoint answered on one line.\n"
		"\n"
		"  -M MAJOR   protocol major version to claim (default %u)\n"
		"  -m MINOR   protocol minor version to claim (default %u)\n"
		"  -n NODE    node id to claim (default 0x%x)\n"
		"  -f FLAGS   hello flags to send (default 0)\n"
		"  -x         send a bad magic\n"
		"  -s BYTES   send only the first BYTES (0-%zu) of the hello\n"
		"  -t SECS    give up on any step after SECS seconds (default %d)\n"
		"  -h         show this help\n"
		"\n"
		"Exit status: 0 accepted, 1 error, 2 rejected with an rpage\n"
		"reject message, 3 rejected without one.\n",
		RPAGE_DEFAULT_PORT, RPAGE_PROTO_MAJOR, RPAGE_PROTO_MINOR,
		DEFAULT_NODE_ID, sizeof(struct rpage_hello), DEFAULT_TIMEOUT_S);
}

/* Any base strtoull() takes, but no sign, blanks or trailing junk. */
static bool parse_uint(const char *s, uint64_t max, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return false;
	*val = v;
	return true;
}

static int parse_options(int argc, char **argv, struct options *opts)
{
	uint64_t val;
	int c;

	while ((c = getopt(argc, argv, "hxM:m:n:f:s:t:")) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'x':
			opts->bad_magic = true;
			break;
		case 'M':
			if (!parse_uint(optarg, UINT16_MAX, &val))
				goto bad_value;
			opts->major = val;
			break;
		case 'm':
			if (!parse_uint(optarg, UINT16_MAX, &val))
				goto bad_value;
			opts->minor = val;
			break;
		case 'n':
			if (!parse_uint(optarg, UINT64_MAX, &val))
				goto bad_value;
			opts->node_id = val;
			break;
		case 'f':
			if (!parse_uint(optarg, UINT32_MAX, &val))
				goto bad_value;
			opts->flags = val;
			break;
		case 's':
			if (!parse_uint(optarg, sizeof(struct rpage_hello),
					&val))
				goto bad_value;
			opts->hello_len = val;
			break;
		case 't':
			if (!parse_uint(optarg, MAX_TIMEOUT_S, &val) || !val)
				goto bad_value;
			opts->timeout_ms = val * 1000;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}

	if (optind >= argc || argc - optind > 2) {
		usage(stderr);
		return -1;
	}
	opts->addr = argv[optind];
	if (optind + 1 < argc) {
		if (!parse_uint(argv[optind + 1], UINT16_MAX, &val) || !val) {
			report("error", "bad port '%s'", argv[optind + 1]);
			return -1;
		}
		opts->port = val;
	}
	return 0;

bad_value:
	report("error", "bad value '%s' for -%c", optarg, c);
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * rdma_get_cm_event() on a blocking channel waits for as long as the
 * kernel takes, and an endpoint that never answers must not hang a test:
 * the channel is non-blocking and every wait polls it against a deadline.
 */
static int peer_get_event(struct peer *p, struct rdma_cm_event **event)
{
	int64_t deadline = now_ms() + p->timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = p->channel->fd, .events = POLLIN };
		int64_t left;

		if (!rdma_get_cm_event(p->channel, event))
			return 0;
		if (errno != EAGAIN)
			return -errno;
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
}

static void report_wait_error(const char *level, const char *what,
			      struct peer *p, int err)
{
	if (err == -ETIMEDOUT)
		report(level, "%s: no answer within %d s", what,
		       p->timeout_ms / 1000);
	else
		report(level, "%s: waiting for an event: %s", what,
		       strerror(-err));
}

/* Reports an event that ends a step unsuccessfully. */
static void report_event(const char *level, const char *what,
			 const struct rdma_cm_event *event)
{
	/* Errors carry a negative errno, rejects a transport's reason. */
	if (event->status < 0)
		report(level, "%s: %s (%s)", what, rdma_event_str(event->event),
		       strerror(-event->status));
	else
		report(level, "%s: %s (status %d)", what,
		       rdma_event_str(event->event), event->status);
}

/* Waits for @expected; anything else means step @what failed. */
static int peer_expect(struct peer *p, enum rdma_cm_event_type expected,
		       const char *what, const char *level)
{
	struct rdma_cm_event *event;
	int ret;

	ret = peer_get_event(p, &event);
	if (ret) {
		report_wait_error(level, what, p, ret);
		return ret;
	}
	if (event->event != expected) {
		report_event(level, what, event);
		ret = -EPROTO;
	}
	rdma_ack_cm_event(event);
	return ret;
}

/*
 * Done before anything RDMA so that a typo in ADDR is reported as such
 * even on a host without RDMA devices.
 */
static int lookup(const struct options *opts, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char port[8];
	int ret;

	snprintf(port, sizeof(port), "%u", opts->port);
	ret = getaddrinfo(opts->addr, port, &hints, &ai);
	if (ret) {
		report("error", "%s: %s", opts->addr,
		       ret == EAI_SYSTEM ? strerror(errno) : gai_strerror(ret));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static int peer_resolve(struct peer *p, const struct options *opts,
			struct sockaddr_storage *dst)
{
	if (rdma_resolve_addr(p->id, NULL, (struct sockaddr *)dst,
			      p->timeout_ms)) {
		report("error", "rdma_resolve_addr %s: %s", opts->addr,
		       strerror(errno));
		return -1;
	}
	if (peer_expect(p, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving address",
			"error"))
		return -1;

	if (rdma_resolve_route(p->id, p->timeout_ms)) {
		report("error", "rdma_resolve_route: %s", strerror(errno));
		return -1;
	}
	if (peer_expect(p, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving route",
			"error"))
		return -1;
	return 0;
}

/*
 * The peer never moves data, but with a QP the CM completes the full
 * REQ/REP/RTU exchange and an accept arrives as ESTABLISHED, just as it
 * does for rpage.ko's own initiator; without one the endpoint would see a
 * connection that never gets established.
 */
static int peer_create_qp(struct peer *p)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	p->pd = ibv_alloc_pd(p->id->verbs);
	if (!p->pd) {
		report("error", "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	p->cq = ibv_create_cq(p->id->verbs, 2, NULL, NULL, 0);
	if (!p->cq) {
		report("error", "ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	attr.send_cq = p->cq;
	attr.recv_cq = p->cq;
	if (rdma_create_qp(p->id, p->pd, &attr)) {
		report("error", "rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static const char *reject_reason_name(unsigned int reason, char *buf,
				      size_t len)
{
	switch (reason) {
	case RPAGE_REJECT_UNKNOWN_PEER:
		return "unknown-peer";
	case RPAGE_REJECT_VERSION:
		return "version";
	case RPAGE_REJECT_BAD_HELLO:
		return "bad-hello";
	case RPAGE_REJECT_NO_RESOURCES:
		return "no-resources";
	case RPAGE_REJECT_UNSPECIFIED:
		return "unspecified";
	}
	snprintf(buf, len, "%u", reason);
	return buf;
}

/*
 * librdmacm has no rdma_consumer_reject_data(); this mirrors the kernel's.
 * Only a reject the listener sent itself carries its private data: one
 * the CM made up (no listener on the port, a timeout) carries none, and
 * whatever bytes come with it are not the listener's.
 */
static const void *consumer_reject_data(const struct rdma_cm_id *id,
					const struct rdma_cm_event *event,
					size_t *len)
{
	bool consumer;

	if (id->verbs &&
	    id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		consumer = event->status == -ECONNREFUSED;
	else
		consumer = event->status == IB_CM_REJ_CONSUMER_DEFINED;

	if (!consumer || !event->param.conn.private_data) {
		*len = 0;
		return NULL;
	}
	*len = event->param.conn.private_data_len;
	return event->param.conn.private_data;
}

static int report_reject(const struct peer *p,
			 const struct rdma_cm_event *event)
{
	struct rpage_reject rej;
	const void *data;
	char buf[16];
	size_t len;

	/* IB pads the reject's private data to 148 bytes: only a floor. */
	data = consumer_reject_data(p->id, event, &len);
	if (data && len >= sizeof(rej)) {
		memcpy(&rej, data, sizeof(rej));
		if (le32toh(rej.magic) == RPAGE_PROTO_MAGIC) {
			printf("rejected reason %s proto %u.%u\n",
			       reject_reason_name(le16toh(rej.reason), buf,
						  sizeof(buf)),
			       le16toh(rej.major), le16toh(rej.minor));
			return EXIT_REJECTED;
		}
	}
	printf("rejected status %d\n", event->status);
	return EXIT_REJECTED_FOREIGN;
}

static int report_accept(const struct peer *p, const struct rdma_cm_event *event)
{
	const struct rdma_conn_param *conn = &event->param.conn;
	struct ibv_qp_init_attr init_attr;
	struct ibv_qp_attr attr;
	struct rpage_hello hello;

	/* IB pads the accept's private data to 196 bytes: only a floor. */
	if (!conn->private_data || conn->private_data_len < sizeof(hello)) {
		report("error", "accepted with %u bytes of private data, too short for an rpage hello",
		       conn->private_data ? conn->private_data_len : 0);
		return EXIT_ERROR;
	}
	memcpy(&hello, conn->private_data, sizeof(hello));
	if (le32toh(hello.magic) != RPAGE_PROTO_MAGIC) {
		report("error", "accepted with bad hello magic 0x%08x",
		       le32toh(hello.magic));
		return EXIT_ERROR;
	}
	if (ibv_query_qp(p->id->qp, &attr, IBV_QP_MAX_QP_RD_ATOMIC, &init_attr)) {
		report("error", "ibv_query_qp: %s", strerror(errno));
		return EXIT_ERROR;
	}
	printf("accepted node_id 0x%llx proto %u.%u reads_in_flight %u\n",
	       (unsigned long long)le64toh(hello.node_id),
	       le16toh(hello.major), le16toh(hello.minor), attr.max_rd_atomic);
	return EXIT_ACCEPTED;
}

/*
 * The outcome is already reported: a failure to disconnect cleanly is
 * worth a warning but does not change what the endpoint answered.
 */
static void peer_disconnect(struct peer *p)
{
	/* Fails harmlessly if the endpoint disconnected first. */
	if (rdma_disconnect(p->id))
		report("warning", "rdma_disconnect: %s", strerror(errno));
	peer_expect(p, RDMA_CM_EVENT_DISCONNECTED, "disconnecting", "warning");
}

static int peer_connect(struct peer *p, const struct options *opts)
{
	struct rpage_hello hello = {
		.magic = htole32(opts->bad_magic ?
				 /* what a peer that forgot le32 would send */
				 htobe32(RPAGE_PROTO_MAGIC) :
				 RPAGE_PROTO_MAGIC),
		.major = htole16(opts->major),
		.minor = htole16(opts->minor),
		.node_id = htole64(opts->node_id),
		.qp_index = htole16(0),
		.nr_qps = htole16(1),
		.flags = htole32(opts->flags),
	};
	/*
	 * Over IB and RoCE the CM pads connect private data to 56 bytes with
	 * zeros, so the endpoint sees a truncated hello as a zero-filled one;
	 * only iWARP delivers the short length itself.
	 */
	struct rdma_conn_param param = {
		.private_data = opts->hello_len ? &hello : NULL,
		.private_data_len = opts->hello_len,
		.responder_resources = 1,
		.initiator_depth = READ_DEPTH,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *event;
	int ret;

	if (rdma_connect(p->id, &param)) {
		report("error", "rdma_connect: %s", strerror(errno));
		return EXIT_ERROR;
	}
	ret = peer_get_event(p, &event);
	if (ret) {
		report_wait_error("error", "connecting", p, ret);
		return EXIT_ERROR;
	}

	switch (event->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ret = report_accept(p, event);
		rdma_ack_cm_event(event);
		/* Leave the endpoint without a half-open connection. */
		peer_disconnect(p);
		return ret;
	case RDMA_CM_EVENT_REJECTED:
		/* The reject data lives in @event: read it before the ack. */
		ret = report_reject(p, event);
		rdma_ack_cm_event(event);
		return ret;
	default:
		report_event("error", "connecting", event);
		rdma_ack_cm_event(event);
		return EXIT_ERROR;
	}
}

static int peer_run(struct peer *p, const struct options *opts)
{
	struct sockaddr_storage dst = { 0 };
	int flags;

	if (lookup(opts, &dst))
		return EXIT_ERROR;

	p->channel = rdma_create_event_channel();
	if (!p->channel) {
		report("error", "rdma_create_event_channel: %s", strerror(errno));
		return EXIT_ERROR;
	}
	flags = fcntl(p->channel->fd, F_GETFL);
	if (flags < 0 ||
	    fcntl(p->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		report("error", "making the event channel non-blocking: %s",
		       strerror(errno));
		return EXIT_ERROR;
	}
	if (rdma_create_id(p->channel, &p->id, NULL, RDMA_PS_TCP)) {
		report("error", "rdma_create_id: %s", strerror(errno));
		return EXIT_ERROR;
	}
	if (peer_resolve(p, opts, &dst) || peer_create_qp(p))
		return EXIT_ERROR;
	return peer_connect(p, opts);
}

/* Tears down whatever peer_run() got as far as setting up. */
static void peer_destroy(struct peer *p)
{
	if (p->id && p->id->qp)
		rdma_destroy_qp(p->id);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->id)
		rdma_destroy_id(p->id);
	if (p->channel)
		rdma_destroy_event_channel(p->channel);
}

int main(int argc, char **argv)
{
	struct options opts = {
		.port = RPAGE_DEFAULT_PORT,
		.timeout_ms = DEFAULT_TIMEOUT_S * 1000,
		.major = RPAGE_PROTO_MAJOR,
		.minor = RPAGE_PROTO_MINOR,
		.node_id = DEFAULT_NODE_ID,
		.hello_len = sizeof(struct rpage_hello),
	};
	struct peer p = { 0 };
	int ret;

	if (parse_options(argc, argv, &opts))
		return EXIT_ERROR;
	p.timeout_ms = opts.timeout_ms;
	ret = peer_run(&p, &opts);
	peer_destroy(&p);
	return ret;
}
