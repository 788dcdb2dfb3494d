// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: reads and writes over TCP, both sides.
 *
 * The reader: one attempt of a transfer (rpage-xfer.c) on one of the
 * peer's data connections, spread by CPU. Pages that follow each other
 * in the caller's array and in the pool share a request (up to
 * RPAGE_MSG_IO_MAX bytes), each with a tag of the connection, as many in
 * flight as the caller's depth and the tags allow. A read's answer is
 * received straight into the caller's pages; a write's pages are sent
 * without a copy. The caller polls for its answers itself for a moment
 * (running the receive path if nobody else is), then sleeps until the
 * receive work completes one of its own requests: an answer wakes the
 * transfer it is for, not every transfer on the connection (many faults
 * share one). No answer for io_timeout_ms reports the
 * connection lost; a transfer that gives up (killed, or the connection
 * broken) abandons its requests under the receive lock, so that an
 * answer arriving later is dropped and never written into its pages.
 *
 * The exporter: each request is checked against the pool it names (its
 * generation, bounds and, for a write, RPAGE_POOL_WRITABLE) - over TCP
 * there are no keys, so this check is all that keeps a peer inside the
 * pools it was told of. A refused request is answered with its reason
 * and counted; a write's data is then read and dropped. The pool's pages
 * are reached inside access sections (rpage_pool_access_begin()), one per
 * check and per piece of a write received, so that a destroy that has
 * returned is the end of every access: a write cut short by it lands no
 * further byte. A read's answer sends a kernel pool's pages without a
 * copy (the socket holds them, and nobody but peers writes them); those
 * of a process or a file are copied when the request is checked, since
 * their owner may write them again once the pool is destroyed.
 */
#include "rpage-tcp.h"
#include "rpage-trace.h"

#include <linux/sched/signal.h>

/* How long a transfer polls for its answers before it sleeps. */
#define RPAGE_TCP_SPIN_NS	(50 * NSEC_PER_USEC)

/**
 * struct rpage_tcp_run - a transfer while it runs over TCP
 * @run: what the core keeps of it.
 * @conn: the data connection of the current attempt, its users held.
 * @q: its queue.
 * @mine: the tags of the requests this transfer has in flight.
 * @inflight: how many.
 * @want_tag: it has nothing in flight and waits for a free tag.
 * @next: the page to consider next.
 */
struct rpage_tcp_run {
	struct rpage_xfer_run run;
	struct rpage_conn *conn;
	struct rpage_tcp_queue *q;
	DECLARE_BITMAP(mine, RPAGE_TCP_TAGS);
	unsigned int inflight;
	bool want_tag;
	unsigned long next;
};

/* The exporter's answer to a refused request, as the reader's errno. */
static int rpage_tcp_status_errno(u32 status)
{
	switch (status) {
	case RPAGE_IO_OK:
		return 0;
	case RPAGE_IO_NO_POOL:
		return -ENOENT;
	case RPAGE_IO_RANGE:
		return -ERANGE;
	case RPAGE_IO_READ_ONLY:
		return -EPERM;
	default:
		return -EPROTO;
	}
}

static void rpage_tcp_tag_put(struct rpage_tcp_queue *q, unsigned int tag)
{
	spin_lock(&q->tags_lock);
	WRITE_ONCE(q->reqs[tag].state, RPAGE_TCP_REQ_FREE);
	__clear_bit(tag, q->tags);
	spin_unlock(&q->tags_lock);
	/* Only the transfers waiting for a tag (the bitmap is their key). */
	rpage_xfer_wake(&q->wait, q->tags);
}

/* A free tag of @q, or -1. */
static int rpage_tcp_tag_get(struct rpage_tcp_queue *q)
{
	unsigned int tag;

	spin_lock(&q->tags_lock);
	tag = find_first_zero_bit(q->tags, RPAGE_TCP_TAGS);
	if (tag < RPAGE_TCP_TAGS)
		__set_bit(tag, q->tags);
	spin_unlock(&q->tags_lock);
	return tag < RPAGE_TCP_TAGS ? tag : -1;
}

/*
 * Request @req ended with @err (the receive path, under @rx_mutex): its
 * transfer hears of it, or, abandoned, its tag is free again.
 */
static void rpage_tcp_req_finish(struct rpage_tcp_queue *q,
				 struct rpage_tcp_req *req, int err)
{
	struct rpage_peer *peer = q->conn->peer;
	u64 ns = ktime_get_ns() - req->sent_ns;
	struct rpage_tcp_run *tr;

	rpage_counters_io(&peer->counters, req->write, req->nr, ns, err != 0);
	trace_rpage_io_done(peer->id, q->conn->index, req->write, req->nr, err,
			    ns);
	if (req->state == RPAGE_TCP_REQ_ABANDONED) {
		rpage_tcp_tag_put(q, req - q->reqs);
		return;
	}
	req->status = err;
	tr = req->tr;
	/*
	 * Pairs with rpage_tcp_reap(): the status and pages before DONE.
	 * Once DONE the transfer may reap it, end and be freed: after this
	 * @tr is only a key, never dereferenced.
	 */
	smp_store_release(&req->state, RPAGE_TCP_REQ_DONE);
	rpage_xfer_wake(&q->wait, tr);
}

/**
 * rpage_tcp_answer_begin - a reader received the header of an answer
 * @q: the connection; its @rx_io holds the header.
 *
 * Returns 0, with the data phase set up for a read's pages; -EPROTO for
 * an answer to no request of ours, or one that does not fit it.
 */
int rpage_tcp_answer_begin(struct rpage_tcp_queue *q)
{
	const struct rpage_msg_io *io = &q->rx_io;
	u16 type = le16_to_cpu(io->hdr.type);
	u32 len = le32_to_cpu(io->hdr.length);
	u32 tag = le32_to_cpu(io->tag);
	u32 status = le32_to_cpu(io->status);
	bool write = type == RPAGE_MSG_WRITE_RESP;
	struct rpage_tcp_req *req;

	if (type != RPAGE_MSG_READ_RESP && type != RPAGE_MSG_WRITE_RESP)
		return -EPROTO;
	if (tag >= RPAGE_TCP_TAGS)
		return -EPROTO;
	req = &q->reqs[tag];
	if (req->state != RPAGE_TCP_REQ_SENT &&
	    req->state != RPAGE_TCP_REQ_ABANDONED)
		return -EPROTO;
	if (req->write != write)
		return -EPROTO;
	if (type == RPAGE_MSG_READ_RESP && status == RPAGE_IO_OK) {
		u32 bytes = req->nr << PAGE_SHIFT;

		if (le32_to_cpu(io->io_length) != bytes ||
		    len != sizeof(*io) + bytes)
			return -EPROTO;
		q->rx_req = req;
		rpage_tcp_rx_expect_data(q, bytes);
		return 0;
	}
	if (len != sizeof(*io) || status > RPAGE_IO_MALFORMED)
		return -EPROTO;
	rpage_tcp_req_finish(q, req, rpage_tcp_status_errno(status));
	return 0;
}

/*
 * Checks a request against this host's pools, in an access section the
 * caller holds: RPAGE_IO_OK with the pool in *@poolp, or why not. Every
 * refusal but a pool that is gone (which a withdrawal in progress
 * explains) is the peer's fault: counted.
 */
static u32 rpage_tcp_check(struct rpage_tcp_queue *q,
			   const struct rpage_msg_io *io, bool write,
			   const struct rpage_pool **poolp)
{
	struct rpage_peer *peer = q->conn->peer;
	u64 offset = le64_to_cpu(io->offset);
	u32 bytes = le32_to_cpu(io->io_length);
	const struct rpage_pool *pool;
	u32 status = RPAGE_IO_OK;
	u64 length;

	*poolp = NULL;
	if (!bytes || bytes > RPAGE_MSG_IO_MAX || !PAGE_ALIGNED(bytes) ||
	    !PAGE_ALIGNED(offset) || io->status) {
		status = RPAGE_IO_MALFORMED;
		goto refused;
	}
	pool = rpage_pool_lookup(le64_to_cpu(io->pool_id),
				 le64_to_cpu(io->generation), peer);
	if (!pool)
		return RPAGE_IO_NO_POOL;
	length = rpage_pool_length(pool);
	if (offset >= length || bytes > length - offset)
		status = RPAGE_IO_RANGE;
	else if (write && !rpage_pool_writable(pool))
		status = RPAGE_IO_READ_ONLY;
	if (status != RPAGE_IO_OK)
		goto refused;
	*poolp = pool;
	return RPAGE_IO_OK;

refused:
	atomic64_inc(&peer->refused_msgs);
	pr_warn_ratelimited("peer %s: refused a TCP %s of pool %llu, %u bytes at %llu: status %u\n",
			    peer->name, write ? "write" : "read",
			    le64_to_cpu(io->pool_id), bytes, offset, status);
	return status;
}

static void rpage_tcp_pages_put(struct page **pages, unsigned int nr)
{
	while (nr)
		put_page(pages[--nr]);
}

/*
 * Checks the read request in @q->rx_io and, if it may be served, takes
 * what its answer sends into @pages (*@nr of them, each held): a kernel
 * pool's own pages, or copies of a process's or a file's, made now.
 * Returns the answer's status; -ENOMEM (nothing held) if no copy could
 * be made.
 */
static int rpage_tcp_read_pages(struct rpage_tcp_queue *q, struct page **pages,
				unsigned int *nr)
{
	const struct rpage_msg_io *io = &q->rx_io;
	u64 offset = le64_to_cpu(io->offset);
	const struct rpage_pool *pool;
	unsigned int n = 0, i;
	struct page *page;
	u32 status;
	int idx;

	*nr = 0;
	idx = rpage_pool_access_begin();
	status = rpage_tcp_check(q, io, false, &pool);
	if (status == RPAGE_IO_OK)
		n = le32_to_cpu(io->io_length) >> PAGE_SHIFT;
	for (i = 0; i < n; i++) {
		page = rpage_pool_page(pool, offset + ((u64)i << PAGE_SHIFT));
		if (rpage_pool_pages_stable(pool)) {
			get_page(page);
			pages[i] = page;
			continue;
		}
		pages[i] = alloc_page(GFP_NOIO | __GFP_NOWARN);
		if (!pages[i]) {
			rpage_pool_access_end(idx);
			rpage_tcp_pages_put(pages, i);
			return -ENOMEM;
		}
		copy_highpage(pages[i], page);
	}
	rpage_pool_access_end(idx);
	*nr = n;
	return status;
}

/*
 * Answers the request in @q->rx_io with @status, and for a read that is
 * served, with @pages (@nr of them, given back after).
 */
static int rpage_tcp_answer(struct rpage_tcp_queue *q, u32 status,
			    struct page **pages, unsigned int nr)
{
	const struct rpage_msg_io *req = &q->rx_io;
	bool read = le16_to_cpu(req->hdr.type) == RPAGE_MSG_READ_REQ;
	struct rpage_msg_io a = {
		.hdr.type = cpu_to_le16(read ? RPAGE_MSG_READ_RESP :
					RPAGE_MSG_WRITE_RESP),
		.hdr.length = cpu_to_le32(sizeof(a) + ((u32)nr << PAGE_SHIFT)),
		.tag = req->tag,
		.status = cpu_to_le32(status),
		.pool_id = req->pool_id,
		.generation = req->generation,
		.offset = req->offset,
		.io_length = req->io_length,
	};
	int ret;

	ret = rpage_tcp_send(q, &a, sizeof(a), pages, nr, NULL);
	rpage_tcp_pages_put(pages, nr);
	if (ret)
		rpage_tcp_lost(q, "sending an answer", ret);
	return 0;
}

/**
 * rpage_tcp_serve_begin - an exporter received a request's header
 * @q: the connection; its @rx_io holds the header.
 *
 * A read is answered at once; a write's data is received next, into
 * the pool or dropped. Returns 0, or -EPROTO for a frame that cannot be
 * followed (an answer, or a length that contradicts itself).
 */
int rpage_tcp_serve_begin(struct rpage_tcp_queue *q)
{
	const struct rpage_msg_io *io = &q->rx_io;
	u32 len = le32_to_cpu(io->hdr.length);
	u32 bytes = le32_to_cpu(io->io_length);
	struct page *pages[RPAGE_TCP_IO_PAGES];
	const struct rpage_pool *pool;
	unsigned int nr;
	int status, idx;

	switch (le16_to_cpu(io->hdr.type)) {
	case RPAGE_MSG_READ_REQ:
		if (len != sizeof(*io))
			return -EPROTO;
		status = rpage_tcp_read_pages(q, pages, &nr);
		if (status < 0) {
			rpage_tcp_lost(q, "no memory for an answer", status);
			return 0;
		}
		return rpage_tcp_answer(q, status, pages, nr);
	case RPAGE_MSG_WRITE_REQ:
		if (bytes > RPAGE_MSG_IO_MAX || len != sizeof(*io) + bytes)
			return -EPROTO;
		idx = rpage_pool_access_begin();
		q->rx_status = rpage_tcp_check(q, io, true, &pool);
		rpage_pool_access_end(idx);
		if (!bytes)
			return rpage_tcp_rx_data_done(q);
		rpage_tcp_rx_expect_data(q, bytes);
		return 0;
	default:
		return -EPROTO;
	}
}

/**
 * rpage_tcp_serve_data - receives part of a write's data, without waiting
 * @q: an exporter's connection in the data phase of a write.
 * @off: where the part starts in its page.
 * @n: its bytes, to the end of the page at most.
 *
 * Into the pool, in an access section, if the write was accepted and the
 * pool is still there; dropped otherwise, and once the pool is gone the
 * rest of the write is dropped too and answered RPAGE_IO_NO_POOL.
 * Returns bytes received, or -errno.
 */
int rpage_tcp_serve_data(struct rpage_tcp_queue *q, u32 off, u32 n)
{
	const struct rpage_msg_io *io = &q->rx_io;
	const struct rpage_pool *pool = NULL;
	struct page *page;
	void *va;
	int idx, ret;

	idx = rpage_pool_access_begin();
	if (q->rx_status == RPAGE_IO_OK) {
		pool = rpage_pool_lookup(le64_to_cpu(io->pool_id),
					 le64_to_cpu(io->generation),
					 q->conn->peer);
		if (!pool)
			q->rx_status = RPAGE_IO_NO_POOL;
	}
	if (pool) {
		page = rpage_pool_page(pool, le64_to_cpu(io->offset) +
				       (q->rx_data_have & PAGE_MASK));
		va = kmap_local_page(page);
		ret = rpage_tcp_recv(q, va + off, n);
		kunmap_local(va);
	} else {
		ret = rpage_tcp_recv(q, q->rx_buf,
				     min_t(u32, n, sizeof(q->rx_buf)));
	}
	rpage_pool_access_end(idx);
	return ret;
}

/*
 * A reader's page that the data phase's page @index goes to, or NULL to
 * drop it: the answer of a request its transfer abandoned.
 */
struct page *rpage_tcp_rx_page(struct rpage_tcp_queue *q, u32 index)
{
	struct rpage_tcp_req *req = q->rx_req;

	if (req->state == RPAGE_TCP_REQ_ABANDONED)
		return NULL;
	return req->tr->run.x->pages[req->first + index];
}

/* The data phase is over: a write is answered, a read's request done. */
int rpage_tcp_rx_data_done(struct rpage_tcp_queue *q)
{
	if (q->conn->inbound)
		return rpage_tcp_answer(q, q->rx_status, NULL, 0);
	rpage_tcp_req_finish(q, q->rx_req, 0);
	q->rx_req = NULL;
	return 0;
}

/*
 * Sends the request for page @g and the pages after it that are
 * adjacent in the same pool, up to RPAGE_TCP_IO_PAGES. Returns 0 (and
 * moves @tr->next past them), -EBUSY if no tag is free, -EINTR if the
 * caller was killed before the request went, or -ECONNRESET (the
 * connection is then lost).
 */
static int rpage_tcp_issue(struct rpage_tcp_run *tr, unsigned long g)
{
	struct rpage_xfer_run *run = &tr->run;
	struct rpage_xfer *x = run->x;
	struct rpage_tcp_queue *q = tr->q;
	const struct rpage_rpool *rpool, *next_rpool;
	u64 offset, next_offset;
	struct rpage_tcp_req *req;
	struct rpage_msg_io io;
	unsigned int nr = 1;
	int tag, ret;

	rpage_xfer_locate(run, g, &rpool, &offset);
	while (nr < RPAGE_TCP_IO_PAGES && g + nr < x->nr_pages &&
	       !test_bit(g + nr, run->finished)) {
		rpage_xfer_locate(run, g + nr, &next_rpool, &next_offset);
		if (next_rpool != rpool ||
		    next_offset != offset + ((u64)nr << PAGE_SHIFT))
			break;
		nr++;
	}
	tag = rpage_tcp_tag_get(q);
	if (tag < 0)
		return -EBUSY;
	req = &q->reqs[tag];
	req->tr = tr;
	req->first = g;
	req->nr = nr;
	req->write = x->write;
	req->sent_ns = ktime_get_ns();
	/*
	 * The answer may come before the send returns: the receive path
	 * sees the request whole once it sees it sent.
	 */
	smp_store_release(&req->state, RPAGE_TCP_REQ_SENT);
	__set_bit(tag, tr->mine);
	tr->inflight++;
	tr->next = g + nr;

	memset(&io, 0, sizeof(io));
	io.hdr.type = cpu_to_le16(x->write ? RPAGE_MSG_WRITE_REQ :
				  RPAGE_MSG_READ_REQ);
	io.hdr.length = cpu_to_le32(sizeof(io) +
				    (x->write ? nr << PAGE_SHIFT : 0));
	io.tag = cpu_to_le32(tag);
	io.pool_id = cpu_to_le64(rpool->id);
	io.generation = cpu_to_le64(rpool->generation);
	io.offset = cpu_to_le64(offset);
	io.io_length = cpu_to_le32(nr << PAGE_SHIFT);
	trace_rpage_io_post(x->peer->id, q->conn->index, x->write, offset, nr);
	ret = rpage_tcp_send(q, &io, sizeof(io), x->write ? &x->pages[g] : NULL,
			     x->write ? nr : 0, x);
	if (ret == -EINTR) {
		/*
		 * Killed before any of it went: the request never was. Under
		 * the receive lock, as rpage_tcp_abandon(): an answer to it
		 * (a peer's lie) being received keeps the tag until it ends.
		 */
		mutex_lock(&q->rx_mutex);
		if (q->rx_req == req)
			WRITE_ONCE(req->state, RPAGE_TCP_REQ_ABANDONED);
		else
			rpage_tcp_tag_put(q, tag);
		__clear_bit(tag, tr->mine);
		tr->inflight--;
		mutex_unlock(&q->rx_mutex);
		return -EINTR;
	}
	if (ret) {
		rpage_tcp_lost(q, "sending a request", ret);
		return -ECONNRESET;
	}
	return 0;
}

/*
 * Takes the requests the receive path completed: pages moved are told
 * to the core, tags freed. Returns the first error among them, or 0.
 */
static int rpage_tcp_reap(struct rpage_tcp_run *tr)
{
	struct rpage_tcp_queue *q = tr->q;
	unsigned int tag;
	int err = 0;

	for_each_set_bit(tag, tr->mine, RPAGE_TCP_TAGS) {
		struct rpage_tcp_req *req = &q->reqs[tag];

		/* Pairs with rpage_tcp_req_finish(). */
		if (smp_load_acquire(&req->state) != RPAGE_TCP_REQ_DONE)
			continue;
		if (!req->status)
			rpage_xfer_moved(&tr->run, req->first, req->nr);
		else if (!err)
			err = req->status;
		__clear_bit(tag, tr->mine);
		tr->inflight--;
		rpage_tcp_tag_put(q, tag);
	}
	return err;
}

/*
 * Gives up on the requests still in flight: under the receive lock, so
 * that no answer is being written into their pages, each is marked
 * abandoned (its answer is dropped when it comes) or, done, freed.
 */
static void rpage_tcp_abandon(struct rpage_tcp_run *tr)
{
	struct rpage_tcp_queue *q = tr->q;
	unsigned int tag;

	if (!tr->inflight)
		return;
	mutex_lock(&q->rx_mutex);
	for_each_set_bit(tag, tr->mine, RPAGE_TCP_TAGS) {
		struct rpage_tcp_req *req = &q->reqs[tag];

		if (req->state == RPAGE_TCP_REQ_DONE)
			rpage_tcp_tag_put(q, tag);
		else
			WRITE_ONCE(req->state, RPAGE_TCP_REQ_ABANDONED);
		__clear_bit(tag, tr->mine);
	}
	tr->inflight = 0;
	mutex_unlock(&q->rx_mutex);
}

/*
 * Whether something the transfer waits for happened: one of its requests
 * is done (or, waiting for a tag, one is free), or the connection broke.
 */
static bool rpage_tcp_progress(void *arg)
{
	struct rpage_tcp_run *tr = arg;
	struct rpage_tcp_queue *q = tr->q;
	unsigned int tag;

	if (READ_ONCE(q->dead))
		return true;
	if (tr->want_tag)
		return find_first_zero_bit(q->tags, RPAGE_TCP_TAGS) <
		       RPAGE_TCP_TAGS;
	for_each_set_bit(tag, tr->mine, RPAGE_TCP_TAGS) {
		/* Pairs with rpage_tcp_req_finish(). */
		if (smp_load_acquire(&q->reqs[tag].state) == RPAGE_TCP_REQ_DONE)
			return true;
	}
	return false;
}

/*
 * Waits until one of the transfer's requests is done (or, with
 * @want_tag and none in flight, a tag is free): polling a moment,
 * running the receive path itself if nobody else is, then asleep until
 * woken for it (a second at a time, the caller told first).
 * 0; -ECONNRESET if the connection broke; -EINTR if a killable caller
 * was killed; -ETIMEDOUT after io_timeout_ms with nothing (the
 * connection is then reported lost).
 */
static int rpage_tcp_wait(struct rpage_tcp_run *tr, bool want_tag)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(rpage_io_timeout_ms);
	u64 spin_end = ktime_get_ns() + RPAGE_TCP_SPIN_NS;
	struct rpage_tcp_queue *q = tr->q;
	bool killable = tr->run.x->killable;
	long left;

	tr->want_tag = want_tag;
	for (;;) {
		if (mutex_trylock(&q->rx_mutex)) {
			rpage_tcp_rx(q);
			mutex_unlock(&q->rx_mutex);
		}
		if (rpage_tcp_progress(tr))
			return READ_ONCE(q->dead) ? -ECONNRESET : 0;
		if (killable && fatal_signal_pending(current))
			return -EINTR;
		if (ktime_get_ns() < spin_end) {
			cpu_relax();
			continue;
		}
		left = deadline - jiffies;
		if (left <= 0)
			break;
		/*
		 * The caller is told before it sleeps (the fault path lets
		 * go of the process's memory map, as filemap_fault() does
		 * before it waits for I/O). A second at a time: a long
		 * io_timeout_ms is no hung task.
		 */
		rpage_xfer_slow(tr->run.x);
		left = min_t(long, left, HZ);
		/* Keyed: a tag's waiters by the tag bitmap, the rest by run. */
		left = rpage_xfer_sleep(&q->wait, want_tag ? (void *)q->tags : tr,
					rpage_tcp_progress, tr, left, killable);
		if (left < 0)
			return -EINTR;
	}
	rpage_tcp_lost(q, "no answer", -ETIMEDOUT);
	return -ETIMEDOUT;
}

/* The run of @x, with the core's @tail bytes after it (*@tailp). */
struct rpage_xfer_run *rpage_tcp_run_alloc(struct rpage_xfer *x, size_t tail,
					   void **tailp)
{
	struct rpage_tcp_run *tr;

	tr = kvzalloc(sizeof(*tr) + tail, GFP_KERNEL | __GFP_NOWARN);
	if (!tr)
		return NULL;
	*tailp = tr + 1;
	return &tr->run;
}

void rpage_tcp_run_free(struct rpage_xfer_run *run)
{
	kvfree(container_of(run, struct rpage_tcp_run, run));
}

/*
 * Takes a data connection for an attempt (-EAGAIN if it is not up):
 * the first carries control messages, the rest are spread by CPU.
 */
int rpage_tcp_xfer_begin(struct rpage_xfer_run *run)
{
	struct rpage_tcp_run *tr = container_of(run, struct rpage_tcp_run, run);
	struct rpage_tcp_peer *tp = run->x->peer->tp;
	unsigned int i = 1 + raw_smp_processor_id() % (tp->nr - 1);
	struct rpage_conn *conn = &tp->chans[i].c;

	if (!rpage_conn_use(conn, true))
		return -EAGAIN;
	tr->conn = conn;
	tr->q = conn->tp;
	return 0;
}

/*
 * Moves every page not moved yet: requests go out while the depth and
 * the tags allow, answers are taken as they come. A refused request
 * ends the attempt once those in flight are in; a broken connection, a
 * timeout or a kill at once.
 */
int rpage_tcp_xfer_move(struct rpage_xfer_run *run)
{
	struct rpage_tcp_run *tr = container_of(run, struct rpage_tcp_run, run);
	struct rpage_xfer *x = run->x;
	unsigned int depth = x->depth ? min_t(unsigned int, x->depth,
					       RPAGE_TCP_TAGS) : RPAGE_TCP_TAGS;
	unsigned long g;
	int err = 0, ret;

	tr->next = 0;
	for (;;) {
		bool no_tag = false;

		while (!err && tr->inflight < depth) {
			g = find_next_zero_bit(run->finished, x->nr_pages,
					       tr->next);
			if (g >= x->nr_pages)
				break;
			ret = rpage_tcp_issue(tr, g);
			if (ret == -EBUSY) {
				no_tag = true;
				break;
			}
			if (ret)
				err = ret;
		}
		if (!tr->inflight && (err || !no_tag))
			break;
		ret = rpage_tcp_wait(tr, !tr->inflight);
		if (ret) {
			rpage_tcp_abandon(tr);
			return err ?: ret;
		}
		ret = rpage_tcp_reap(tr);
		if (ret && !err)
			err = ret;
	}
	return err;
}

/* Gives the connection back. */
void rpage_tcp_xfer_end(struct rpage_xfer_run *run)
{
	struct rpage_tcp_run *tr = container_of(run, struct rpage_tcp_run, run);

	rpage_tcp_abandon(tr);
	up_read(&tr->conn->users);
}
