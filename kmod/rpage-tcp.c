// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: TCP as a transport - the same peers, hello, pool table, control
 * messages and heartbeats as over RDMA, on kernel TCP sockets, for hosts
 * without an RDMA device (rpagectl peer add NAME addr A transport tcp).
 * This file holds the connections: framing (rpage-proto.h), sending,
 * the receive path, connecting to a peer, an endpoint's listener and the
 * hello exchange of the connections it accepts; rpage-tcp-xfer.c holds
 * the reads and writes on them.
 *
 * As nvme-tcp does: TCP_NODELAY, no linger, socket allocations that
 * never recurse into I/O, and the task's page fragment never used (a
 * fault may come in the middle of its owner's own send). Every send is
 * MSG_NOSIGNAL: a broken connection must not send SIGPIPE to the process
 * whose fault or ioctl sent on it. A socket's data-ready and
 * state-change callbacks queue the connection's receive work; a
 * transfer waiting for its answers may run the receive path itself
 * first (rpage-tcp-xfer.c), so that a fault on an idle connection is
 * usually resolved without a context switch.
 *
 * Connections are told apart by the hello that opens them: the reader
 * sends one, the exporter answers with its own or refuses. Loss: a
 * socket error or end of file, a frame that breaks the protocol, a send
 * that fails or takes longer than io_timeout_ms, or (with heartbeats on)
 * data left unacknowledged for as long as heartbeats may go missing
 * (TCP_USER_TIMEOUT): the heartbeat keeps data in flight for TCP to
 * notice a silent peer, as its send completing does over RDMA.
 */
#include "rpage-tcp.h"

#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

/*
 * Connections accepted whose hello has not been read yet: per endpoint,
 * and per configured peer (a connection from any other address is
 * closed as soon as it is accepted, so only peers can hold these).
 * A peer opens its connections one after another: more than a few at a
 * time is a peer misbehaving, which must not crowd out the others.
 */
#define RPAGE_TCP_MAX_EMBRYOS	64
#define RPAGE_TCP_PEER_EMBRYOS	4
#define RPAGE_TCP_BACKLOG	128

/*
 * What every send adds: it never waits in the socket (see
 * rpage_tcp_sent()), and a broken connection never raises SIGPIPE.
 */
#define RPAGE_TCP_MSG_FLAGS	(MSG_DONTWAIT | MSG_NOSIGNAL)

/* How long a sender tries for the send lock before it is a long wait. */
#define RPAGE_TCP_SEND_SPIN_NS	(1000 * NSEC_PER_USEC)

/* Receive work of every TCP connection. */
static struct workqueue_struct *rpage_tcp_wq;

static int rpage_sockaddr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* What every socket of the transport is set to; @timeout_ms: I/O bound. */
static void rpage_tcp_sock_setup(struct socket *sock, unsigned int timeout_ms)
{
	struct sock *sk = sock->sk;

	tcp_sock_set_nodelay(sk);
	sock_no_linger(sk);
	lock_sock(sk);
	/* Sends come from faults: reclaim must not wait on I/O for them. */
	sk->sk_allocation = GFP_NOIO;
	sk->sk_use_task_frag = false;
	/* Bounds a blocking connect; sends never wait in the socket. */
	sk->sk_sndtimeo = msecs_to_jiffies(timeout_ms);
	sk->sk_rcvtimeo = msecs_to_jiffies(timeout_ms);
	release_sock(sk);
}

static struct rpage_tcp_queue *rpage_tcp_queue_alloc(struct rpage_conn *conn,
						     struct socket *sock)
{
	struct rpage_tcp_queue *q;

	q = kvzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return NULL;
	q->conn = conn;
	q->sock = sock;
	mutex_init(&q->send_mutex);
	init_waitqueue_head(&q->send_wait);
	mutex_init(&q->rx_mutex);
	init_waitqueue_head(&q->wait);
	spin_lock_init(&q->tags_lock);
	q->rx_phase = RPAGE_TCP_RX_HDR;
	q->rx_want = sizeof(struct rpage_msg_hdr);
	return q;
}

/*
 * Whether a sender may try the socket again: it has room, or something
 * ended the connection.
 */
static bool rpage_tcp_send_may(struct rpage_tcp_queue *q)
{
	struct sock *sk = q->sock->sk;

	return sk_stream_is_writeable(sk) || READ_ONCE(sk->sk_err) ||
	       (READ_ONCE(sk->sk_shutdown) & SEND_SHUTDOWN) || READ_ONCE(q->dead);
}

/**
 * struct rpage_tcp_sending - one frame on its way into a socket
 * @q: the connection.
 * @deadline: when the socket must have taken more of it (io_timeout_ms
 *	without progress ends the connection).
 * @sent: bytes of the frame the socket has taken.
 * @x: the transfer that sends it, told before a wait (rpage_xfer_slow():
 *	a fault lets go of its process's memory map); NULL if none.
 */
struct rpage_tcp_sending {
	struct rpage_tcp_queue *q;
	unsigned long deadline;
	size_t sent;
	struct rpage_xfer *x;
};

/*
 * The socket took @ret bytes (or none: -EAGAIN): waits for room when it
 * took none. Never in the socket's own interruptible wait: a signal a
 * task handles (a VMM's threads get many) would cut the frame short,
 * and a task that waits long in the socket makes those queued behind it
 * look hung. Here only a fatal signal ends the wait (-EINTR), and the
 * sleep is a second at a time. 0 to go on, or -errno.
 */
static int rpage_tcp_sent(struct rpage_tcp_sending *s, int ret)
{
	unsigned int timeout_ms = READ_ONCE(rpage_io_timeout_ms);
	long left;

	if (ret > 0) {
		s->sent += ret;
		s->deadline = jiffies + msecs_to_jiffies(timeout_ms);
		return 0;
	}
	if (ret != -EAGAIN)
		return ret ?: -EIO;
	left = s->deadline - jiffies;
	if (left <= 0)
		return -ETIMEDOUT;
	if (s->x)
		rpage_xfer_slow(s->x);
	left = wait_event_killable_timeout(s->q->send_wait,
					   rpage_tcp_send_may(s->q),
					   min_t(long, left, HZ));
	return left < 0 ? -EINTR : 0;
}

/* Sends @len bytes of @buf, all of them, waiting as rpage_tcp_sent(). */
static int rpage_tcp_send_buf(struct rpage_tcp_sending *s, const void *buf,
			      size_t len, int flags)
{
	while (len) {
		struct kvec iov = { .iov_base = (void *)buf, .iov_len = len };
		struct msghdr msg = { .msg_flags = flags };
		int ret = kernel_sendmsg(s->q->sock, &msg, &iov, 1, len);

		if (ret > 0) {
			buf += ret;
			len -= ret;
		}
		ret = rpage_tcp_sent(s, ret);
		if (ret)
			return ret;
	}
	return 0;
}

/* Sends a whole page, without a copy where the page allows it. */
static int rpage_tcp_send_page(struct rpage_tcp_sending *s, struct page *page,
			       int flags)
{
	size_t off = 0;
	int ret;

	if (!sendpage_ok(page)) {
		void *va = kmap_local_page(page);

		ret = rpage_tcp_send_buf(s, va, PAGE_SIZE, flags);
		kunmap_local(va);
		return ret;
	}
	while (off < PAGE_SIZE) {
		ret = rpage_sock_send_page(s->q->sock, page, off, PAGE_SIZE - off,
					   flags);
		if (ret > 0)
			off += ret;
		ret = rpage_tcp_sent(s, ret);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Takes @q's send_mutex: 0, or -EINTR if killed waiting. The frame
 * before ours is usually a moment from done; but its sender may be
 * waiting for room in a stalled socket, and a fault must not wait so
 * with its process's memory map held: after RPAGE_TCP_SEND_SPIN_NS of
 * trying, @x (if any) is told before the sleep.
 */
static int rpage_tcp_send_lock(struct rpage_tcp_queue *q, struct rpage_xfer *x)
{
	u64 spin_end;

	if (mutex_trylock(&q->send_mutex))
		return 0;
	spin_end = ktime_get_ns() + RPAGE_TCP_SEND_SPIN_NS;
	while (ktime_get_ns() < spin_end) {
		cond_resched();
		if (mutex_trylock(&q->send_mutex))
			return 0;
	}
	if (x)
		rpage_xfer_slow(x);
	return mutex_lock_killable(&q->send_mutex) ? -EINTR : 0;
}

/**
 * rpage_tcp_send - sends one frame on a connection
 * @q: the connection.
 * @frame: the frame's header (or the whole of a message).
 * @len: its bytes.
 * @pages: whole pages that follow it, or NULL.
 * @nr: how many.
 * @x: the transfer the frame is of, or NULL.
 *
 * Waits for the frames before it and for room in the socket, killable
 * (see rpage_tcp_sent()); @x is told before a wait longer than a moment.
 * Returns 0 once the socket has taken all of it; -EINTR if the caller
 * was killed before any of it went, the connection as it was; or another
 * -errno: the frame may be cut short, so the caller reports the
 * connection lost.
 */
int rpage_tcp_send(struct rpage_tcp_queue *q, const void *frame, size_t len,
		   struct page **pages, unsigned int nr, struct rpage_xfer *x)
{
	struct rpage_tcp_sending s = {
		.q = q,
		.deadline = jiffies + msecs_to_jiffies(READ_ONCE(rpage_io_timeout_ms)),
		.x = x,
	};
	unsigned int i;
	int ret;

	if (rpage_tcp_send_lock(q, x))
		return -EINTR;
	if (READ_ONCE(q->dead)) {
		ret = -ECONNRESET;
		goto out;
	}
	ret = rpage_tcp_send_buf(&s, frame, len,
				 RPAGE_TCP_MSG_FLAGS | (nr ? MSG_MORE : 0));
	for (i = 0; !ret && i < nr; i++)
		ret = rpage_tcp_send_page(&s, pages[i], RPAGE_TCP_MSG_FLAGS |
					  (i + 1 < nr ? MSG_MORE : 0));
	/* Killed halfway: the rest of the frame is missing from the stream. */
	if (ret == -EINTR && s.sent)
		ret = -ECONNABORTED;
out:
	mutex_unlock(&q->send_mutex);
	return ret;
}

/*
 * The connection broke (@what, error @err): nothing more is received on
 * it, its waiters leave, and its peer hears that it is lost.
 */
void rpage_tcp_lost(struct rpage_tcp_queue *q, const char *what, int err)
{
	WRITE_ONCE(q->dead, true);
	wake_up_all(&q->wait);
	wake_up_all(&q->send_wait);
	rpage_peer_conn_lost(q->conn, "TCP connection %u: %s (%d)",
			     q->conn->index, what, err);
}

/* Receives up to @len bytes into @buf without waiting: bytes, or -errno. */
int rpage_tcp_recv(struct rpage_tcp_queue *q, void *buf, size_t len)
{
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };
	int ret;

	ret = kernel_recvmsg(q->sock, &msg, &iov, 1, len, MSG_DONTWAIT);
	return ret ?: -ECONNRESET;
}

static void rpage_tcp_rx_reset(struct rpage_tcp_queue *q)
{
	q->rx_phase = RPAGE_TCP_RX_HDR;
	q->rx_have = 0;
	q->rx_want = sizeof(struct rpage_msg_hdr);
}

/* The next @len bytes are the data of the read or write just received. */
void rpage_tcp_rx_expect_data(struct rpage_tcp_queue *q, u32 len)
{
	q->rx_phase = RPAGE_TCP_RX_DATA;
	q->rx_data_have = 0;
	q->rx_data_len = len;
}

static bool rpage_tcp_io_type(u16 type)
{
	return type == RPAGE_MSG_READ_REQ || type == RPAGE_MSG_READ_RESP ||
	       type == RPAGE_MSG_WRITE_REQ || type == RPAGE_MSG_WRITE_RESP;
}

/*
 * A frame's header is in: how much of it to read before acting, which
 * is the whole of a control message, or the fixed part of a read or
 * write (its pages follow). -EPROTO for a length out of bounds.
 */
static int rpage_tcp_rx_hdr(struct rpage_tcp_queue *q)
{
	const struct rpage_msg_hdr *hdr = (const void *)q->rx_buf;
	u32 len = le32_to_cpu(hdr->length);

	if (rpage_tcp_io_type(le16_to_cpu(hdr->type))) {
		if (len < sizeof(struct rpage_msg_io) ||
		    len > sizeof(struct rpage_msg_io) + RPAGE_MSG_IO_MAX)
			return -EPROTO;
		q->rx_want = sizeof(struct rpage_msg_io);
	} else {
		if (len < sizeof(*hdr) || len > RPAGE_MSG_MAX)
			return -EPROTO;
		q->rx_want = len;
	}
	q->rx_phase = RPAGE_TCP_RX_BODY;
	return 0;
}

/* A whole control message, or the fixed part of a read or write, is in. */
static int rpage_tcp_rx_frame(struct rpage_tcp_queue *q)
{
	const struct rpage_msg_hdr *hdr = (const void *)q->rx_buf;
	struct rpage_conn *conn = q->conn;

	rpage_tcp_rx_reset(q);
	if (!conn->inbound)
		rpage_peer_alive(conn->peer);
	if (rpage_tcp_io_type(le16_to_cpu(hdr->type))) {
		memcpy(&q->rx_io, q->rx_buf, sizeof(q->rx_io));
		return conn->inbound ? rpage_tcp_serve_begin(q) :
				       rpage_tcp_answer_begin(q);
	}
	/* Control messages go on the reader's first connection only. */
	if (conn->index != 0)
		return -EPROTO;
	rpage_msg_received(conn, q->rx_buf, le32_to_cpu(hdr->length));
	return 0;
}

/* Part of the data phase, straight into its page (or dropped). */
static int rpage_tcp_rx_data(struct rpage_tcp_queue *q)
{
	u32 off = q->rx_data_have & ~PAGE_MASK;
	u32 n = min_t(u32, PAGE_SIZE - off, q->rx_data_len - q->rx_data_have);
	struct page *page;
	void *va;
	int ret;

	if (q->conn->inbound)
		return rpage_tcp_serve_data(q, off, n);
	page = rpage_tcp_rx_page(q, q->rx_data_have >> PAGE_SHIFT);
	if (!page)
		return rpage_tcp_recv(q, q->rx_buf, min_t(u32, n, sizeof(q->rx_buf)));
	va = kmap_local_page(page);
	ret = rpage_tcp_recv(q, va + off, n);
	kunmap_local(va);
	return ret;
}

/**
 * rpage_tcp_rx - takes what has arrived on a connection, without waiting
 * @q: the connection; the caller holds its @rx_mutex.
 *
 * Returns 0 once nothing more is there, or -errno once the connection
 * broke (it is then reported lost).
 */
int rpage_tcp_rx(struct rpage_tcp_queue *q)
{
	const char *what = "receiving";
	int ret;

	lockdep_assert_held(&q->rx_mutex);
	/* An accepted connection is read once its set has it. */
	if (READ_ONCE(q->dead) ||
	    READ_ONCE(q->conn->state) != RPAGE_CONN_CONNECTED)
		return 0;
	for (;;) {
		/* Lost meanwhile (an answer that could not be sent). */
		if (READ_ONCE(q->dead))
			return -ECONNRESET;
		if (q->rx_phase == RPAGE_TCP_RX_DATA) {
			ret = rpage_tcp_rx_data(q);
			if (ret < 0)
				break;
			q->rx_data_have += ret;
			if (q->rx_data_have < q->rx_data_len)
				continue;
			rpage_tcp_rx_reset(q);
			ret = rpage_tcp_rx_data_done(q);
			if (ret) {
				what = "a read or write the protocol does not allow";
				break;
			}
			continue;
		}
		ret = rpage_tcp_recv(q, q->rx_buf + q->rx_have,
				     q->rx_want - q->rx_have);
		if (ret < 0)
			break;
		q->rx_have += ret;
		if (q->rx_have < q->rx_want)
			continue;
		if (q->rx_phase == RPAGE_TCP_RX_HDR) {
			ret = rpage_tcp_rx_hdr(q);
			what = "a frame of a length out of bounds";
		} else {
			ret = rpage_tcp_rx_frame(q);
			what = "a frame the protocol does not allow";
		}
		if (ret)
			break;
	}
	if (ret == -EAGAIN)
		return 0;
	if (ret == -ECONNRESET)
		what = "closed by the peer";
	rpage_tcp_lost(q, what, ret);
	return ret;
}

static void rpage_tcp_rx_work(struct work_struct *work)
{
	struct rpage_tcp_queue *q = container_of(work, struct rpage_tcp_queue,
						 rx_work);

	mutex_lock(&q->rx_mutex);
	rpage_tcp_rx(q);
	mutex_unlock(&q->rx_mutex);
}

static void rpage_tcp_data_ready(struct sock *sk)
{
	struct rpage_tcp_queue *q;

	read_lock_bh(&sk->sk_callback_lock);
	q = sk->sk_user_data;
	if (q)
		queue_work(rpage_tcp_wq, &q->rx_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Closed or failed: the receive path reads the end, or the error. */
static void rpage_tcp_state_change(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct rpage_tcp_queue *q;

	read_lock_bh(&sk->sk_callback_lock);
	q = sk->sk_user_data;
	if (q) {
		saved = q->saved_state_change;
		queue_work(rpage_tcp_wq, &q->rx_work);
		wake_up_all(&q->send_wait);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

/* Room in the socket: a sender waiting for it goes on. */
static void rpage_tcp_write_space(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct rpage_tcp_queue *q;

	read_lock_bh(&sk->sk_callback_lock);
	q = sk->sk_user_data;
	if (q) {
		saved = q->saved_write_space;
		wake_up_all(&q->send_wait);
	}
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

static void rpage_tcp_callbacks_set(struct rpage_tcp_queue *q)
{
	struct sock *sk = q->sock->sk;

	INIT_WORK(&q->rx_work, rpage_tcp_rx_work);
	write_lock_bh(&sk->sk_callback_lock);
	q->saved_data_ready = sk->sk_data_ready;
	q->saved_state_change = sk->sk_state_change;
	q->saved_write_space = sk->sk_write_space;
	sk->sk_user_data = q;
	sk->sk_data_ready = rpage_tcp_data_ready;
	sk->sk_state_change = rpage_tcp_state_change;
	sk->sk_write_space = rpage_tcp_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	q->callbacks = true;
}

/* After this no callback of the socket reaches @q, nor its work. */
static void rpage_tcp_callbacks_clear(struct rpage_tcp_queue *q)
{
	struct sock *sk = q->sock->sk;

	if (!q->callbacks)
		return;
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = q->saved_data_ready;
	sk->sk_state_change = q->saved_state_change;
	sk->sk_write_space = q->saved_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&q->rx_work);
	q->callbacks = false;
}

/* Breaks the connection: what waits on it gives up, nothing more flows. */
static void rpage_tcp_queue_kill(struct rpage_tcp_queue *q)
{
	WRITE_ONCE(q->dead, true);
	kernel_sock_shutdown(q->sock, SHUT_RDWR);
	wake_up_all(&q->wait);
	wake_up_all(&q->send_wait);
}

/*
 * Tears down the queue of @conn, which is marked closed: once nobody
 * uses the connection any more, its callbacks and receive work are
 * stopped, and the socket released.
 */
static void rpage_tcp_queue_destroy(struct rpage_conn *conn)
{
	struct rpage_tcp_queue *q = conn->tp;

	if (!q)
		return;
	rpage_tcp_queue_kill(q);
	down_write(&conn->users);
	conn->tp = NULL;
	up_write(&conn->users);
	rpage_tcp_callbacks_clear(q);
	sock_release(q->sock);
	kvfree(q);
}

/* An accepted connection being released: what waits on it fails now. */
static void rpage_tcp_chan_break(struct rpage_conn *chan)
{
	if (chan->tp)
		rpage_tcp_queue_kill(chan->tp);
}

/* The other connections of a peer's set, and an accepted one's end. */
static void rpage_tcp_chan_destroy(struct rpage_conn *chan)
{
	rpage_conn_set_state(chan, RPAGE_CONN_CLOSED);
	rpage_tcp_queue_destroy(chan);
}

/*
 * A connection is up: loss is noticed by TCP too when data stays
 * unacknowledged as long as heartbeats may go missing; sends wait up to
 * io_timeout_ms.
 */
static void rpage_tcp_sock_established(struct socket *sock)
{
	unsigned int hb = READ_ONCE(rpage_heartbeat_ms);

	rpage_tcp_sock_setup(sock, rpage_io_timeout_ms);
	if (hb)
		tcp_sock_set_user_timeout(sock->sk, hb * RPAGE_HEARTBEAT_MISSES);
}

/*
 * Receives exactly @len bytes into @buf, waiting until @deadline (in
 * jiffies) at most, however the bytes trickle in: the socket's receive
 * timeout is set to what is left before each wait.
 */
static int rpage_tcp_recv_until(struct socket *sock, void *buf, size_t len,
				unsigned long deadline)
{
	while (len) {
		struct kvec iov = { .iov_base = buf, .iov_len = len };
		struct msghdr msg = {};
		long left = deadline - jiffies;
		int ret;

		if (left <= 0)
			return -ETIMEDOUT;
		lock_sock(sock->sk);
		sock->sk->sk_rcvtimeo = left;
		release_sock(sock->sk);
		ret = kernel_recvmsg(sock, &msg, &iov, 1, len, MSG_WAITALL);
		if (ret == 0)
			return -ECONNRESET;
		if (ret < 0)
			return ret == -EAGAIN ? -ETIMEDOUT : ret;
		buf += ret;
		len -= ret;
	}
	return 0;
}

/*
 * Reads one whole frame of @len bytes at most (a hello), by @deadline:
 * its length, or -errno.
 */
static int rpage_tcp_recv_frame(struct socket *sock, void *buf, size_t len,
				unsigned long deadline)
{
	struct rpage_msg_hdr *hdr = buf;
	u32 flen;
	int ret;

	ret = rpage_tcp_recv_until(sock, hdr, sizeof(*hdr), deadline);
	if (ret)
		return ret;
	flen = le32_to_cpu(hdr->length);
	if (flen < sizeof(*hdr) || flen > len)
		return -EPROTO;
	ret = rpage_tcp_recv_until(sock, buf + sizeof(*hdr), flen - sizeof(*hdr),
				   deadline);
	return ret ?: flen;
}

static void rpage_tcp_hello_frame(struct rpage_msg_tcp_hello *f, u16 index,
				  u16 nr)
{
	memset(f, 0, sizeof(*f));
	f->hdr.type = cpu_to_le16(RPAGE_MSG_TCP_HELLO);
	f->hdr.length = cpu_to_le32(sizeof(*f));
	rpage_hello_init(&f->hello, index, nr);
}

/* Outbound: the connections this host opens to read a peer. */

static int rpage_tcp_peer_init(struct rpage_peer *peer)
{
	unsigned int nr = rpage_peer_nr_channels(), i;
	struct rpage_tcp_peer *tp;

	tp = kzalloc(struct_size(tp, chans, nr), GFP_KERNEL);
	if (!tp)
		return -ENOMEM;
	tp->nr = nr;
	for (i = 0; i < nr; i++)
		rpage_conn_init(&tp->chans[i].c, peer, false, i);
	peer->tp = tp;
	return 0;
}

static void rpage_tcp_peer_free(struct rpage_peer *peer)
{
	kfree(peer->tp);
}

/*
 * Opens connection @index of @peer's set and exchanges hellos; on
 * failure, @cause and *@reason say why, and nothing of it is left.
 */
static int rpage_tcp_chan_connect(struct rpage_peer *peer, unsigned int index,
				  u32 *reason, char *cause, size_t len)
{
	struct rpage_tcp_peer *tp = peer->tp;
	struct rpage_conn *conn = &tp->chans[index].c;
	union {
		struct rpage_msg_hdr hdr;
		struct rpage_msg_tcp_hello hello;
		struct rpage_msg_tcp_reject reject;
	} f;
	struct rpage_tcp_queue *q;
	struct rpage_hello hello;
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, peer->addr.ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &sock);
	if (ret) {
		snprintf(cause, len, "TCP connection %u: no socket: error %d",
			 index, ret);
		return ret;
	}
	q = rpage_tcp_queue_alloc(conn, sock);
	if (!q) {
		sock_release(sock);
		snprintf(cause, len, "TCP connection %u: no memory", index);
		return -ENOMEM;
	}
	rpage_tcp_sock_setup(sock, rpage_connect_timeout_ms);
	rpage_conn_set_state(conn, RPAGE_CONN_CONNECTING);
	ret = kernel_connect(sock, (struct sockaddr *)&peer->addr,
			     rpage_sockaddr_len(&peer->addr), 0);
	/* What a blocking connect says when its send timeout ran out. */
	if (ret == -EINPROGRESS)
		ret = -ETIMEDOUT;
	if (ret) {
		snprintf(cause, len, "connecting TCP connection %u: error %d",
			 index, ret);
		goto err;
	}
	rpage_tcp_hello_frame(&f.hello, index, tp->nr);
	ret = rpage_tcp_send(q, &f.hello, sizeof(f.hello), NULL, 0, NULL);
	if (!ret)
		ret = rpage_tcp_recv_frame(sock, &f, sizeof(f), jiffies +
					   msecs_to_jiffies(rpage_connect_timeout_ms));
	if (ret < 0) {
		snprintf(cause, len, "TCP connection %u: hello: error %d",
			 index, ret);
		goto err;
	}
	if (le16_to_cpu(f.hdr.type) == RPAGE_MSG_TCP_REJECT &&
	    ret == sizeof(f.reject) &&
	    le32_to_cpu(f.reject.reject.magic) == RPAGE_PROTO_MAGIC) {
		*reason = le16_to_cpu(f.reject.reject.reason);
		snprintf(cause, len, "connecting TCP connection %u: refused: %s",
			 index, rpage_reject_name(*reason));
		pr_info_ratelimited("peer %s refused us: %s\n", peer->name,
				    rpage_reject_name(*reason));
		ret = -ECONNREFUSED;
		goto err;
	}
	if (le16_to_cpu(f.hdr.type) != RPAGE_MSG_TCP_HELLO ||
	    ret != sizeof(f.hello))
		*reason = RPAGE_REJECT_BAD_HELLO;
	else
		*reason = rpage_hello_check(&f.hello.hello, sizeof(f.hello.hello),
					    &hello);
	if (*reason != RPAGE_REJECT_NONE) {
		snprintf(cause, len, "TCP connection %u: the peer answered with a %s",
			 index, rpage_reject_name(*reason));
		ret = -EPROTO;
		goto err;
	}
	*reason = RPAGE_REJECT_NONE;
	rpage_peer_note_remote(peer, &hello);
	rpage_tcp_sock_established(sock);
	rpage_tcp_callbacks_set(q);
	conn->tp = q;
	rpage_conn_set_state(conn, RPAGE_CONN_CONNECTED);
	/* What came right after the hello (the pool table) is waiting. */
	queue_work(rpage_tcp_wq, &q->rx_work);
	return 0;

err:
	rpage_conn_set_state(conn, RPAGE_CONN_CLOSED);
	sock_release(sock);
	kvfree(q);
	return ret;
}

/* Connects every connection of the set and waits for the pool table. */
static int rpage_tcp_connect(struct rpage_peer *peer, u32 *reason,
			     char *cause, size_t len)
{
	struct rpage_tcp_peer *tp = peer->tp;
	unsigned int i;
	int ret;

	lockdep_assert_held(&peer->lock);
	reinit_completion(&peer->synced);
	for (i = 0; i < tp->nr; i++) {
		ret = rpage_tcp_chan_connect(peer, i, reason, cause, len);
		if (ret)
			return ret;
	}
	return rpage_peer_wait_synced(peer, cause, len);
}

static u32 rpage_tcp_channels(struct rpage_peer *peer, u32 *up)
{
	struct rpage_tcp_peer *tp = peer->tp;
	unsigned int i;

	lockdep_assert_held(&peer->state_lock);
	*up = 0;
	for (i = 0; i < tp->nr; i++)
		if (tp->chans[i].c.state == RPAGE_CONN_CONNECTED)
			(*up)++;
	return tp->nr;
}

/* Under the peer's state lock: every connection of the set is up. */
static bool rpage_tcp_connected(struct rpage_peer *peer)
{
	u32 up;

	return rpage_tcp_channels(peer, &up) == up;
}

/*
 * Takes the set down: every connection is broken first, so that what
 * waits on any of them leaves at once, then each is released.
 */
static void rpage_tcp_close(struct rpage_peer *peer)
{
	struct rpage_tcp_peer *tp = peer->tp;
	unsigned int i;

	lockdep_assert_held(&peer->lock);
	for (i = 0; i < tp->nr; i++) {
		struct rpage_conn *conn = &tp->chans[i].c;

		rpage_conn_set_state(conn, RPAGE_CONN_CLOSED);
		if (conn->tp)
			rpage_tcp_queue_kill(conn->tp);
	}
	for (i = 0; i < tp->nr; i++)
		rpage_tcp_queue_destroy(&tp->chans[i].c);
}

/*
 * Sends a control message on @conn, which the caller holds; lost if it
 * did not go whole (a caller killed before it went leaves it intact).
 */
static int rpage_tcp_conn_send(struct rpage_conn *conn, const void *msg,
			       u32 len, const char *what)
{
	int ret;

	if (len > RPAGE_MSG_MAX)
		return -EMSGSIZE;
	ret = rpage_tcp_send(conn->tp, msg, len, NULL, 0, NULL);
	if (ret && ret != -EINTR)
		rpage_tcp_lost(conn->tp, what, ret);
	return ret;
}

/* As a reader, on the first connection, where the exporter listens. */
static int rpage_tcp_send_ctl(struct rpage_peer *peer, const void *msg,
			      u32 len)
{
	struct rpage_tcp_peer *tp = peer->tp;
	struct rpage_conn *conn = &tp->chans[0].c;
	int ret;

	if (!rpage_conn_use(conn, true))
		return -ENOTCONN;
	ret = rpage_tcp_conn_send(conn, msg, len, "sending a control message");
	up_read(&conn->users);
	return ret;
}

/* As an exporter, on the reader's first connection to us. */
static int rpage_tcp_chan_send(struct rpage_conn *chan, const void *msg,
			       u32 len)
{
	return rpage_tcp_conn_send(chan, msg, len, "sending the pool table");
}

static void rpage_tcp_send_heartbeat(struct rpage_conn *conn, const char *what)
{
	struct rpage_msg_heartbeat hb = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_HEARTBEAT),
		.hdr.length = cpu_to_le32(sizeof(hb)),
		.seq = cpu_to_le64(++conn->hb_seq),
	};

	rpage_tcp_conn_send(conn, &hb, sizeof(hb), what);
}

static void rpage_tcp_heartbeat(struct rpage_peer *peer)
{
	struct rpage_tcp_peer *tp = peer->tp;
	struct rpage_conn *conn = &tp->chans[0].c;

	if (rpage_conn_use(conn, true)) {
		rpage_tcp_send_heartbeat(conn, "outbound heartbeat");
		up_read(&conn->users);
	}
}

static void rpage_tcp_chan_heartbeat(struct rpage_conn *chan)
{
	rpage_tcp_send_heartbeat(chan, "inbound heartbeat");
}

/* Inbound: an endpoint's listener and the connections it accepts. */

/**
 * struct rpage_tcp_listener - an endpoint's TCP listening socket
 * @sock: the socket.
 * @cnt: the endpoint's counters.
 * @accept_work: accepts what is waiting (queued by the socket).
 * @lock: protects @embryos, @nr_embryos and @closing.
 * @embryos: accepted connections whose hello is being read.
 * @nr_embryos: how many.
 * @closing: the endpoint is going: accept nothing more.
 * @gone: woken when an embryo is done.
 * @saved_data_ready: the socket's callback before ours, which accepted
 *	sockets get back (they are born with the listener's).
 */
struct rpage_tcp_listener {
	struct socket *sock;
	struct rpage_endpoint_counters *cnt;
	struct work_struct accept_work;
	struct mutex lock;		/* see kernel-doc */
	struct list_head embryos;
	unsigned int nr_embryos;
	bool closing;
	wait_queue_head_t gone;
	void (*saved_data_ready)(struct sock *sk);
};

/**
 * struct rpage_tcp_embryo - an accepted connection before its hello
 * @entry: link in the listener's @embryos.
 * @tl: the listener; it waits for every embryo before it goes.
 * @sock: the socket; the connection's, if accepted.
 * @peer: the configured peer its address belongs to, held.
 * @from: that address.
 * @work: reads the hello and accepts or refuses (blocking, bounded by
 *	connect_timeout_ms for the whole hello).
 */
struct rpage_tcp_embryo {
	struct list_head entry;
	struct rpage_tcp_listener *tl;
	struct socket *sock;
	struct rpage_peer *peer;
	struct sockaddr_storage from;
	struct work_struct work;
};

static void rpage_tcp_reject(struct socket *sock, u32 reason)
{
	struct rpage_msg_tcp_reject f = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_TCP_REJECT),
		.hdr.length = cpu_to_le32(sizeof(f)),
		.reject.magic = cpu_to_le32(RPAGE_PROTO_MAGIC),
		.reject.major = cpu_to_le16(RPAGE_PROTO_MAJOR),
		.reject.minor = cpu_to_le16(RPAGE_PROTO_MINOR),
		.reject.reason = cpu_to_le16(reason),
	};

	struct kvec iov = { .iov_base = &f, .iov_len = sizeof(f) };
	struct msghdr msg = { .msg_flags = RPAGE_TCP_MSG_FLAGS };

	/* The initiator learns why if it still listens; nothing waits on it. */
	kernel_sendmsg(sock, &msg, &iov, 1, sizeof(f));
}

/*
 * Makes the connection of @sock, whose @hello came from @peer, one of
 * the peer's inbound connections: the hello answered, then listed with
 * the peer (which may release it from then on), then up. 0, or a
 * RPAGE_REJECT_* reason (nothing of it is left then but the socket).
 */
static u32 rpage_tcp_accept_hello(struct rpage_peer *peer, struct socket *sock,
				  const struct rpage_hello *hello)
{
	u16 index = le16_to_cpu(hello->qp_index);
	struct rpage_msg_tcp_hello reply;
	struct rpage_tcp_queue *q;
	struct rpage_in_conn *in;

	if (peer->ops != &rpage_tcp_transport) {
		pr_info_ratelimited("peer %s opened a TCP connection but is configured with transport %s\n",
				    peer->name, peer->ops->name);
		return RPAGE_REJECT_TRANSPORT;
	}
	if (!rpage_peer_inbound_room(peer, index))
		return RPAGE_REJECT_NO_RESOURCES;
	in = kzalloc(sizeof(*in), GFP_KERNEL);
	if (!in)
		return RPAGE_REJECT_NO_RESOURCES;
	rpage_conn_init(&in->c, peer, true, index);
	in->c.state = RPAGE_CONN_CONNECTING;
	INIT_LIST_HEAD(&in->entry);
	rpage_pools_channel_init(in);
	q = rpage_tcp_queue_alloc(&in->c, sock);
	if (!q) {
		kfree(in);
		return RPAGE_REJECT_NO_RESOURCES;
	}
	rpage_tcp_hello_frame(&reply, index, le16_to_cpu(hello->nr_qps));
	rpage_tcp_sock_established(sock);
	if (rpage_tcp_send(q, &reply, sizeof(reply), NULL, 0, NULL)) {
		kvfree(q);
		kfree(in);
		return RPAGE_REJECT_UNSPECIFIED;
	}
	/* Not read before it is up: see rpage_tcp_rx(). */
	rpage_tcp_callbacks_set(q);
	in->c.tp = q;
	/* Held so that a release right after listing waits for us. */
	down_read(&in->c.users);
	kref_get(&peer->ref);
	if (rpage_peer_inbound_add(peer, in)) {
		up_read(&in->c.users);
		rpage_tcp_callbacks_clear(q);
		kvfree(q);
		kfree(in);
		rpage_peer_put(peer);
		return RPAGE_REJECT_NO_RESOURCES;
	}
	rpage_peer_inbound_established(in);
	queue_work(rpage_tcp_wq, &q->rx_work);
	up_read(&in->c.users);
	return RPAGE_REJECT_NONE;
}

static void rpage_tcp_embryo_work(struct work_struct *work)
{
	struct rpage_tcp_embryo *e = container_of(work, struct rpage_tcp_embryo,
						  work);
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(rpage_connect_timeout_ms);
	struct rpage_tcp_listener *tl = e->tl;
	struct rpage_msg_tcp_hello f;
	struct rpage_hello hello;
	struct sock *sk = e->sock->sk;
	u32 reason;
	int ret;

	/*
	 * Born a clone of the listener, callbacks included: without its
	 * own back, data arriving would queue the accept work instead of
	 * waking the hello's reader, who would then sleep its whole timeout.
	 */
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = tl->saved_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	rpage_tcp_sock_setup(e->sock, rpage_connect_timeout_ms);
	ret = rpage_tcp_recv_frame(e->sock, &f, sizeof(f), deadline);
	if (ret != sizeof(f) || le16_to_cpu(f.hdr.type) != RPAGE_MSG_TCP_HELLO)
		reason = RPAGE_REJECT_BAD_HELLO;
	else
		reason = rpage_hello_check(&f.hello, sizeof(f.hello), &hello);
	if (reason == RPAGE_REJECT_VERSION)
		pr_warn_ratelimited("TCP: refused peer %s at %pISc: it speaks protocol %u.%u, we speak %u.%u\n",
				    e->peer->name, &e->from,
				    le16_to_cpu(hello.major),
				    le16_to_cpu(hello.minor), RPAGE_PROTO_MAJOR,
				    RPAGE_PROTO_MINOR);
	else if (reason != RPAGE_REJECT_NONE)
		pr_warn_ratelimited("TCP: refused peer %s at %pISc: malformed or no hello (%d)\n",
				    e->peer->name, &e->from, ret);
	if (reason == RPAGE_REJECT_NONE)
		reason = rpage_tcp_accept_hello(e->peer, e->sock, &hello);
	if (reason != RPAGE_REJECT_NONE) {
		rpage_endpoint_count_reject(tl->cnt, reason);
		rpage_tcp_reject(e->sock, reason);
		sock_release(e->sock);
	} else {
		atomic64_inc(&tl->cnt->accepted);
	}
	rpage_peer_put(e->peer);
	mutex_lock(&tl->lock);
	list_del(&e->entry);
	tl->nr_embryos--;
	wake_up_all(&tl->gone);
	mutex_unlock(&tl->lock);
	kfree(e);
}

/*
 * Under @tl's lock: whether an embryo from @peer may start, that is the
 * endpoint is open and neither it nor @peer has all the hellos it may
 * have awaited at once. If not, *@why says which.
 */
static bool rpage_tcp_embryo_room(struct rpage_tcp_listener *tl,
				  struct rpage_peer *peer, const char **why)
{
	struct rpage_tcp_embryo *e;
	unsigned int n = 0;

	lockdep_assert_held(&tl->lock);
	if (tl->closing) {
		*why = "the endpoint is closing";
		return false;
	}
	if (tl->nr_embryos >= RPAGE_TCP_MAX_EMBRYOS) {
		*why = "the endpoint awaits too many hellos";
		return false;
	}
	list_for_each_entry(e, &tl->embryos, entry)
		if (e->peer == peer)
			n++;
	if (n >= RPAGE_TCP_PEER_EMBRYOS) {
		*why = "this peer's earlier hellos are still awaited";
		return false;
	}
	return true;
}

/*
 * A connection just accepted: an address that is no configured peer's
 * is closed at once, having cost nothing but the handshake and this;
 * a peer's gets an embryo, which reads its hello apart, if there is
 * room. 0 if it was taken, or -errno (the caller closes it).
 */
static int rpage_tcp_accept_one(struct rpage_tcp_listener *tl,
				struct socket *sock)
{
	struct sockaddr_storage from = {};
	struct rpage_tcp_embryo *e;
	struct rpage_peer *peer;
	const char *why;
	int ret;

	ret = kernel_getpeername(sock, (struct sockaddr *)&from);
	if (ret < 0)
		return ret;
	peer = rpage_peer_find_by_addr((struct sockaddr *)&from);
	if (!peer) {
		rpage_endpoint_count_reject(tl->cnt, RPAGE_REJECT_UNKNOWN_PEER);
		pr_info_ratelimited("TCP: refused %pISc: not a configured peer\n",
				    &from);
		/* A peer configured on one side only learns why, if it reads. */
		rpage_tcp_reject(sock, RPAGE_REJECT_UNKNOWN_PEER);
		return -EPERM;
	}
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	mutex_lock(&tl->lock);
	if (!e || !rpage_tcp_embryo_room(tl, peer, &why)) {
		mutex_unlock(&tl->lock);
		atomic64_inc(&tl->cnt->rejected_other);
		pr_warn_ratelimited("TCP: refused peer %s at %pISc: %s\n",
				    peer->name, &from, e ? why : "no memory");
		rpage_peer_put(peer);
		kfree(e);
		return -EBUSY;
	}
	e->tl = tl;
	e->sock = sock;
	e->peer = peer;
	e->from = from;
	INIT_WORK(&e->work, rpage_tcp_embryo_work);
	list_add_tail(&e->entry, &tl->embryos);
	tl->nr_embryos++;
	mutex_unlock(&tl->lock);
	queue_work(rpage_wq, &e->work);
	return 0;
}

/* Takes each connection waiting to be accepted. */
static void rpage_tcp_accept_work(struct work_struct *work)
{
	struct rpage_tcp_listener *tl = container_of(work,
						     struct rpage_tcp_listener,
						     accept_work);
	struct socket *sock;

	while (!kernel_accept(tl->sock, &sock, O_NONBLOCK)) {
		if (rpage_tcp_accept_one(tl, sock))
			sock_release(sock);
		cond_resched();
	}
}

static void rpage_tcp_listen_data_ready(struct sock *sk)
{
	void (*saved)(struct sock *sk) = NULL;
	struct rpage_tcp_listener *tl;

	read_lock_bh(&sk->sk_callback_lock);
	tl = sk->sk_user_data;
	if (tl && sk->sk_state == TCP_LISTEN)
		queue_work(rpage_wq, &tl->accept_work);
	else if (tl)
		/* An accepted socket its embryo work has not set up yet. */
		saved = tl->saved_data_ready;
	read_unlock_bh(&sk->sk_callback_lock);
	if (saved)
		saved(sk);
}

/**
 * rpage_tcp_listen - listens for TCP connections for an endpoint
 * @addr: the endpoint's address and port.
 * @counters: the endpoint's counters, which outlive the listener.
 *
 * Returns the listener, or an ERR_PTR.
 */
struct rpage_tcp_listener *
rpage_tcp_listen(const struct sockaddr_storage *addr,
		 struct rpage_endpoint_counters *counters)
{
	struct rpage_tcp_listener *tl;
	struct sock *sk;
	int ret;

	tl = kzalloc(sizeof(*tl), GFP_KERNEL);
	if (!tl)
		return ERR_PTR(-ENOMEM);
	tl->cnt = counters;
	INIT_WORK(&tl->accept_work, rpage_tcp_accept_work);
	mutex_init(&tl->lock);
	INIT_LIST_HEAD(&tl->embryos);
	init_waitqueue_head(&tl->gone);
	ret = sock_create_kern(&init_net, addr->ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &tl->sock);
	if (ret)
		goto err_free;
	sk = tl->sock->sk;
	sock_set_reuseaddr(sk);
	ret = kernel_bind(tl->sock, (struct sockaddr *)addr,
			  rpage_sockaddr_len(addr));
	if (ret)
		goto err_sock;
	write_lock_bh(&sk->sk_callback_lock);
	tl->saved_data_ready = sk->sk_data_ready;
	sk->sk_user_data = tl;
	sk->sk_data_ready = rpage_tcp_listen_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	ret = kernel_listen(tl->sock, RPAGE_TCP_BACKLOG);
	if (ret)
		goto err_sock;
	return tl;

err_sock:
	sock_release(tl->sock);
err_free:
	mutex_destroy(&tl->lock);
	kfree(tl);
	return ERR_PTR(ret);
}

/*
 * Stops listening: connections whose hello is awaited are cut and waited
 * for; those accepted already stay, as an RDMA endpoint's do.
 */
void rpage_tcp_unlisten(struct rpage_tcp_listener *tl)
{
	struct sock *sk = tl->sock->sk;
	struct rpage_tcp_embryo *e;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	write_unlock_bh(&sk->sk_callback_lock);
	kernel_sock_shutdown(tl->sock, SHUT_RDWR);
	cancel_work_sync(&tl->accept_work);
	mutex_lock(&tl->lock);
	tl->closing = true;
	list_for_each_entry(e, &tl->embryos, entry)
		kernel_sock_shutdown(e->sock, SHUT_RDWR);
	mutex_unlock(&tl->lock);
	wait_event(tl->gone, !READ_ONCE(tl->nr_embryos));
	/* The last embryo may still hold the lock it woke us under. */
	mutex_lock(&tl->lock);
	mutex_unlock(&tl->lock);
	sock_release(tl->sock);
	mutex_destroy(&tl->lock);
	kfree(tl);
}

int rpage_tcp_init(void)
{
	/* Faults wait on it: it must make progress under memory pressure. */
	rpage_tcp_wq = alloc_workqueue("rpage_tcp", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				       0);
	return rpage_tcp_wq ? 0 : -ENOMEM;
}

void rpage_tcp_exit(void)
{
	destroy_workqueue(rpage_tcp_wq);
}

const struct rpage_transport_ops rpage_tcp_transport = {
	.name		= "tcp",
	.id		= RPAGE_TRANSPORT_TCP,
	.regions	= false,
	.connected_cause = "every TCP connection up, pool table received",
	.peer_init	= rpage_tcp_peer_init,
	.peer_free	= rpage_tcp_peer_free,
	.connect	= rpage_tcp_connect,
	.connected	= rpage_tcp_connected,
	.close		= rpage_tcp_close,
	.channels	= rpage_tcp_channels,
	.heartbeat	= rpage_tcp_heartbeat,
	.chan_heartbeat	= rpage_tcp_chan_heartbeat,
	.chan_break	= rpage_tcp_chan_break,
	.chan_destroy	= rpage_tcp_chan_destroy,
	.send_ctl	= rpage_tcp_send_ctl,
	.chan_send	= rpage_tcp_chan_send,
	.run_alloc	= rpage_tcp_run_alloc,
	.run_free	= rpage_tcp_run_free,
	.xfer_begin	= rpage_tcp_xfer_begin,
	.xfer_move	= rpage_tcp_xfer_move,
	.xfer_end	= rpage_tcp_xfer_end,
};
