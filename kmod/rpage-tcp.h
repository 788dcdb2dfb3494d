/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: the TCP transport's own definitions, shared by rpage-tcp.c
 * (sockets, framing, connecting and accepting) and rpage-tcp-xfer.c
 * (reads and writes, both sides).
 */
#ifndef RPAGE_TCP_H
#define RPAGE_TCP_H

#include "rpage-pri.h"

#include <linux/net.h>

/* Requests one connection has in flight at most: its tags. */
#define RPAGE_TCP_TAGS		64
/* Pages one request moves at most. */
#define RPAGE_TCP_IO_PAGES	(RPAGE_MSG_IO_MAX / PAGE_SIZE)

/* Where a reader's request is (struct rpage_tcp_req.state). */
enum rpage_tcp_req_state {
	RPAGE_TCP_REQ_FREE,
	RPAGE_TCP_REQ_SENT,
	RPAGE_TCP_REQ_DONE,
	/* Its transfer gave up on it: the answer is read and dropped. */
	RPAGE_TCP_REQ_ABANDONED,
};

struct rpage_tcp_run;

/**
 * struct rpage_tcp_req - a read or write request of a reader, by tag
 * @tr: its transfer, while SENT (its pages are received into); once
 *	DONE only the key of its wake-up; never touched once ABANDONED.
 * @first: the index of its first page in the transfer.
 * @nr: pages.
 * @write: a write.
 * @state: enum rpage_tcp_req_state. The transfer sets SENT, and reaps
 *	DONE; the receive path sets DONE, and frees an ABANDONED one when
 *	its answer has been read; abandoning takes the queue's @rx_mutex.
 * @status: 0 or -errno, once DONE.
 * @sent_ns: when it was sent.
 */
struct rpage_tcp_req {
	struct rpage_tcp_run *tr;
	unsigned long first;
	unsigned int nr;
	bool write;
	int state;
	int status;
	u64 sent_ns;
};

/* What the receive path reads next (struct rpage_tcp_queue.rx_phase). */
enum rpage_tcp_rx_phase {
	RPAGE_TCP_RX_HDR,	/* a frame's struct rpage_msg_hdr */
	RPAGE_TCP_RX_BODY,	/* the rest of a message, or of an io header */
	RPAGE_TCP_RX_DATA,	/* the pages of a read answer or a write */
};

/**
 * struct rpage_tcp_queue - one TCP connection, either direction: the
 *	transport's state of a struct rpage_conn (its @tp)
 * @conn: the connection it serves.
 * @sock: the socket.
 * @send_mutex: one frame at a time on the socket.
 * @send_wait: a sender waiting for room in the socket.
 * @rx_mutex: one receiver at a time: the receive work, or a transfer
 *	that polls for its answers itself.
 * @rx_work: receives what arrived (queued by the socket's callbacks).
 * @wait: transfers waiting for answers or for a free tag, each woken
 *	only for its own (rpage_xfer_sleep(): keyed by run, or by @tags).
 * @dead: the connection is broken or being closed; nothing more arrives.
 * @callbacks: the socket's callbacks are ours.
 * @tags_lock: protects @tags.
 * @tags: tags in use (a reader's requests).
 * @reqs: a reader's requests, by tag.
 * @rx_phase: enum rpage_tcp_rx_phase.
 * @rx_have: bytes of @rx_buf received of @rx_want.
 * @rx_want: bytes of @rx_buf the current phase wants.
 * @rx_data_have: bytes of the data phase received.
 * @rx_data_len: bytes of the data phase.
 * @rx_req: a reader's request whose pages arrive now.
 * @rx_status: an exporter's answer to the write being received: its
 *	bytes go to the pool while it is RPAGE_IO_OK, and are dropped
 *	otherwise.
 * @rx_io: the read or write frame being received.
 * @saved_data_ready: the socket's callbacks before ours.
 * @saved_state_change: ditto.
 * @saved_write_space: ditto.
 * @rx_buf: the frame being received (a whole control message).
 */
struct rpage_tcp_queue {
	struct rpage_conn *conn;
	struct socket *sock;
	struct mutex send_mutex;	/* see kernel-doc */
	wait_queue_head_t send_wait;
	struct mutex rx_mutex;		/* see kernel-doc */
	struct work_struct rx_work;
	wait_queue_head_t wait;
	bool dead;
	bool callbacks;
	spinlock_t tags_lock;		/* see kernel-doc */
	DECLARE_BITMAP(tags, RPAGE_TCP_TAGS);
	struct rpage_tcp_req reqs[RPAGE_TCP_TAGS];
	enum rpage_tcp_rx_phase rx_phase;
	u32 rx_have;
	u32 rx_want;
	u32 rx_data_have;
	u32 rx_data_len;
	struct rpage_tcp_req *rx_req;
	u32 rx_status;
	struct rpage_msg_io rx_io;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	u8 rx_buf[RPAGE_MSG_MAX] __aligned(8);
};

/* rpage-tcp.c */
int rpage_tcp_send(struct rpage_tcp_queue *q, const void *frame, size_t len,
		   struct page **pages, unsigned int nr, struct rpage_xfer *x);
int rpage_tcp_rx(struct rpage_tcp_queue *q);
int rpage_tcp_recv(struct rpage_tcp_queue *q, void *buf, size_t len);
void rpage_tcp_rx_expect_data(struct rpage_tcp_queue *q, u32 len);
void rpage_tcp_lost(struct rpage_tcp_queue *q, const char *what, int err);

/* rpage-tcp-xfer.c */
int rpage_tcp_serve_begin(struct rpage_tcp_queue *q);
int rpage_tcp_answer_begin(struct rpage_tcp_queue *q);
int rpage_tcp_serve_data(struct rpage_tcp_queue *q, u32 off, u32 n);
struct page *rpage_tcp_rx_page(struct rpage_tcp_queue *q, u32 index);
int rpage_tcp_rx_data_done(struct rpage_tcp_queue *q);
struct rpage_xfer_run *rpage_tcp_run_alloc(struct rpage_xfer *x, size_t tail,
					   void **tailp);
void rpage_tcp_run_free(struct rpage_xfer_run *run);
int rpage_tcp_xfer_begin(struct rpage_xfer_run *run);
int rpage_tcp_xfer_move(struct rpage_xfer_run *run);
void rpage_tcp_xfer_end(struct rpage_xfer_run *run);

/**
 * struct rpage_tcp_chan - a connection this host opens to a TCP peer
 * @c: the connection; its @tp is the queue while one exists.
 */
struct rpage_tcp_chan {
	struct rpage_conn c;
};

/**
 * struct rpage_tcp_peer - a TCP peer's transport state (peer->tp)
 * @nr: connections this host opens to it: the first for control
 *	messages, the rest for reads and writes.
 * @chans: them.
 */
struct rpage_tcp_peer {
	unsigned int nr;
	struct rpage_tcp_chan chans[];
};

#endif /* RPAGE_TCP_H */
