// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the data path. rpage_xfer() moves pages to or from a peer's
 * pools and returns once every page is moved or definitively given up
 * on. It owns everything between a caller's pages and the wire: which
 * queue pair, holding the pools, building and posting the work requests,
 * polling for their completions, and what a failure means. Its callers
 * (the fault path, prefetch, eviction, the READ and WRITE ioctls) never
 * see a work request.
 *
 * Pages that follow each other in the caller's array and in a region of
 * the pool share one RDMA READ or WRITE (up to RPAGE_IO_MAX_SGE pages).
 * Work requests go on the queue pair of the current CPU, as many per
 * doorbell as the send queue has room for (or the caller's depth), from
 * a window of RPAGE_XFER_SLOTS: the memory a transfer needs does not
 * grow with its pages. The caller's own context polls the completion
 * queue: busy for up to a millisecond, yielding to anything else
 * runnable (the device's own work may be what it waits for), then
 * sleeping between polls.
 *
 * Failures: a transport failure - an error completion, a flush, no
 * completion for io_timeout_ms, the peer reconnecting - is not the
 * caller's. The queue pair is reported lost (the peer rebuilds its
 * connections), and the pages not yet moved are moved again once the
 * peer is connected, until it has been unreachable for its loss timeout
 * (rpage_peer_wait_connected()). Errors a retry cannot fix (a pool gone
 * or replaced, a range out of bounds, no memory) end the transfer at
 * once. A fatal signal ends a killable one. And if the device never
 * gives work requests back, even flushed, the pages they point at stay
 * the device's: they are kept referenced, mapped and untouched forever.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/delay.h>
#include <linux/kmemleak.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

/* How long the poller busy-polls before it sleeps between polls. */
#define RPAGE_XFER_SPIN_NS	(1000 * NSEC_PER_USEC)
/* Completions reaped per poll. */
#define RPAGE_XFER_BATCH	16
/* Work requests one transfer has in flight at most. */
#define RPAGE_XFER_SLOTS	64
/* A killed task's work requests get this long to complete normally. */
#define RPAGE_XFER_KILL_GRACE_MS	50

/* Where a work request of a transfer is. */
enum rpage_xfer_op_state {
	RPAGE_OP_FREE,
	RPAGE_OP_POSTED,
	RPAGE_OP_DONE,
};

/**
 * struct rpage_xfer_op - one work request: pages adjacent in the pool
 * @cqe: completion entry.
 * @wr: the work request.
 * @sge: its pages as the device sees them, @wr.wr.num_sge of them.
 * @run: the transfer it belongs to.
 * @first: the index of its first page in the transfer's pages.
 * @posted_ns: when it was posted.
 * @wc_status: how it completed.
 * @state: enum rpage_xfer_op_state; DONE is set by whoever polled the
 *	completion, the rest by the transfer's owner.
 */
struct rpage_xfer_op {
	struct ib_cqe cqe;
	struct ib_rdma_wr wr;
	struct ib_sge sge[RPAGE_IO_MAX_SGE];
	struct rpage_xfer_run *run;
	unsigned long first;
	u64 posted_ns;
	enum ib_wc_status wc_status;
	int state;
};

/**
 * struct rpage_xfer_run - what a transfer keeps while it runs
 * @x: the caller's description.
 * @conn: the queue pair of the current attempt, its users held.
 * @pending: work requests posted and not completed.
 * @finished: a bit per page moved.
 * @rpools: the pool of each range, held during an attempt.
 * @next: the page to post next.
 * @range: the range @next is in, for rpage_xfer_locate().
 * @range_start: the index of that range's first page.
 * @err: the first failure of the attempt, 0 if none.
 * @leaked: the device kept work requests: the run is never freed.
 * @nr_free: free slots, their indexes in @free.
 * @free: the stack of free slots.
 * @nr_slots: slots in @ops.
 * @ops: the work requests.
 */
struct rpage_xfer_run {
	struct rpage_xfer *x;
	struct rpage_conn *conn;
	atomic_t pending;
	unsigned long *finished;
	struct rpage_rpool **rpools;
	unsigned long next;
	unsigned int range;
	unsigned long range_start;
	int err;
	bool leaked;
	unsigned int nr_free;
	unsigned int free[RPAGE_XFER_SLOTS];
	unsigned int nr_slots;
	struct rpage_xfer_op ops[];
};

static enum dma_data_direction rpage_xfer_dir(bool write)
{
	return write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/*
 * A work request completed, in whichever context polled for it: maybe
 * after its transfer gave up on it (rpage_xfer_abandon()) and its caller,
 * whose request may have been on its stack, returned. So it touches the
 * run, which is then never freed, and never the request.
 */
static void rpage_xfer_op_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_xfer_op *op = container_of(wc->wr_cqe, struct rpage_xfer_op,
						cqe);
	struct rpage_xfer_run *run = op->run;
	struct rpage_conn *conn = run->conn;
	bool write = op->wr.wr.opcode == IB_WR_RDMA_WRITE;
	unsigned int pages = op->wr.wr.num_sge, i;
	bool failed = wc->status != IB_WC_SUCCESS;
	u64 ns = ktime_get_ns() - op->posted_ns;

	rpage_counters_io(&conn->peer->counters, write, pages, ns, failed);
	rpage_counters_io(&conn->dev->counters, write, pages, ns, failed);
	trace_rpage_io_done(conn->peer->id, conn->cm_id->qp->qp_num, write,
			    pages, wc->status, ns);
	for (i = 0; i < pages; i++)
		ib_dma_unmap_page(conn->dev->ibdev, op->sge[i].addr, PAGE_SIZE,
				  rpage_xfer_dir(write));
	if (!failed)
		rpage_peer_alive(conn->peer);
	/* In completion order: the first failure of the queue pair speaks. */
	else
		rpage_peer_conn_lost(conn, "%s completion: %s (status %d) on queue pair %u",
				     write ? "WRITE" : "READ",
				     ib_wc_status_msg(wc->status), wc->status,
				     conn->index);
	op->wc_status = wc->status;
	atomic_inc(&conn->sq_free);
	/* Pairs with rpage_xfer_reap(): it sees @wc_status once it sees DONE. */
	smp_store_release(&op->state, RPAGE_OP_DONE);
	/* The owner may free @run once this reaches zero: touch it last. */
	atomic_dec(&run->pending);
}

/* Where page @g of the transfer is in its pool: address and key. */
static void rpage_xfer_locate(struct rpage_xfer_run *run, unsigned long g,
			      u64 *remote_addr, u32 *rkey)
{
	const struct rpage_xfer_range *r;
	const struct rpage_rpool *rpool;
	unsigned long i;
	u64 offset, mr;

	/* The owner posts pages in order: the cursor mostly moves forward. */
	if (g < run->range_start) {
		run->range = 0;
		run->range_start = 0;
	}
	while (g >= run->range_start + run->x->ranges[run->range].nr) {
		run->range_start += run->x->ranges[run->range].nr;
		run->range++;
	}
	r = &run->x->ranges[run->range];
	rpool = run->rpools[run->range];
	i = g - run->range_start;
	offset = r->offset + ((u64)(r->index ? r->index[i] : i) << PAGE_SHIFT);
	mr = div64_u64(offset, rpool->mr_bytes);
	*remote_addr = rpool->mrs[mr].iova + offset - mr * rpool->mr_bytes;
	*rkey = rpool->mrs[mr].rkey;
}

/* Maps page @g for the device into @sge; false if it cannot be. */
static bool rpage_xfer_map(struct rpage_xfer_run *run, unsigned long g,
			   struct ib_sge *sge)
{
	struct ib_device *ibdev = run->conn->dev->ibdev;
	u64 dma = ib_dma_map_page(ibdev, run->x->pages[g], 0, PAGE_SIZE,
				  rpage_xfer_dir(run->x->write));

	if (ib_dma_mapping_error(ibdev, dma))
		return false;
	sge->addr = dma;
	sge->length = PAGE_SIZE;
	sge->lkey = run->conn->dev->pd->local_dma_lkey;
	return true;
}

/*
 * Builds, in a free slot, the work request that starts at the first page
 * not moved yet from @run->next and takes the pages after it that are
 * adjacent in the pool too. Returns it, or NULL with *@err set when the
 * page cannot be mapped.
 */
static struct rpage_xfer_op *rpage_xfer_build(struct rpage_xfer_run *run,
					      int *err)
{
	struct rpage_xfer *x = run->x;
	unsigned int max_sge = x->write ? run->conn->max_write_sge :
					  run->conn->max_read_sge;
	unsigned long g = run->next;
	struct rpage_xfer_op *op;
	u64 remote_addr, addr;
	u32 rkey, key;

	op = &run->ops[run->free[run->nr_free - 1]];
	memset(&op->wr, 0, sizeof(op->wr));
	if (!rpage_xfer_map(run, g, &op->sge[0])) {
		*err = -ENOMEM;
		return NULL;
	}
	run->nr_free--;
	rpage_xfer_locate(run, g, &remote_addr, &rkey);
	op->run = run;
	op->first = g;
	op->cqe.done = rpage_xfer_op_done;
	op->wr.wr.wr_cqe = &op->cqe;
	op->wr.wr.opcode = x->write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
	op->wr.wr.sg_list = op->sge;
	op->wr.wr.num_sge = 1;
	op->wr.wr.send_flags = IB_SEND_SIGNALED;
	op->wr.remote_addr = remote_addr;
	op->wr.rkey = rkey;
	for (g++; op->wr.wr.num_sge < max_sge && g < x->nr_pages &&
	     !test_bit(g, run->finished); g++) {
		rpage_xfer_locate(run, g, &addr, &key);
		if (key != rkey ||
		    addr != remote_addr + ((u64)op->wr.wr.num_sge << PAGE_SHIFT))
			break;
		if (!rpage_xfer_map(run, g, &op->sge[op->wr.wr.num_sge]))
			break;
		op->wr.wr.num_sge++;
	}
	run->next = g;
	op->state = RPAGE_OP_POSTED;
	return op;
}

/* Gives a slot of a work request never posted back, unmapped. */
static void rpage_xfer_unbuild(struct rpage_xfer_run *run,
			       struct rpage_xfer_op *op)
{
	unsigned int i;

	for (i = 0; i < op->wr.wr.num_sge; i++)
		ib_dma_unmap_page(run->conn->dev->ibdev, op->sge[i].addr,
				  PAGE_SIZE, rpage_xfer_dir(run->x->write));
	op->state = RPAGE_OP_FREE;
	run->free[run->nr_free++] = op - run->ops;
	run->next = min(run->next, op->first);
}

/*
 * Posts as many work requests as there are free slots, send queue room
 * and depth for, with one doorbell. Returns 0, or -ENOMEM, or the error
 * of a post the queue pair refused.
 */
static int rpage_xfer_post(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	struct rpage_conn *conn = run->conn;
	const struct ib_send_wr *bad = NULL;
	struct rpage_xfer_op *op, *first = NULL, *last = NULL;
	unsigned int k = 0;
	int ret = 0;
	u64 now;

	while (run->nr_free) {
		if (x->depth && atomic_read(&run->pending) + k >= x->depth)
			break;
		run->next = find_next_zero_bit(run->finished, x->nr_pages,
					       run->next);
		if (run->next >= x->nr_pages)
			break;
		if (atomic_dec_if_positive(&conn->sq_free) < 0)
			break;
		op = rpage_xfer_build(run, &ret);
		if (!op) {
			atomic_inc(&conn->sq_free);
			break;
		}
		if (last)
			last->wr.wr.next = &op->wr.wr;
		else
			first = op;
		last = op;
		k++;
	}
	if (!k)
		return ret;
	trace_rpage_io_post(conn->peer->id, conn->cm_id->qp->qp_num, x->write,
			    first->wr.remote_addr, k);
	now = ktime_get_ns();
	for (op = first; op; op = op == last ? NULL :
	     container_of(op->wr.wr.next, struct rpage_xfer_op, wr.wr))
		op->posted_ns = now;
	atomic_add(k, &run->pending);
	ret = ib_post_send(conn->cm_id->qp, &first->wr.wr, &bad);
	if (!ret)
		return 0;
	/* What was not posted will not complete: take it back. */
	for (op = bad ? container_of(bad, struct rpage_xfer_op, wr.wr) : NULL;
	     op; op = op == last ? NULL :
	     container_of(op->wr.wr.next, struct rpage_xfer_op, wr.wr)) {
		rpage_xfer_unbuild(run, op);
		atomic_inc(&conn->sq_free);
		atomic_dec(&run->pending);
	}
	rpage_peer_conn_lost(conn, "posting on queue pair %u failed: %d",
			     conn->index, ret);
	return -ECONNRESET;
}

/*
 * Settles the work requests that completed: their pages are moved, and
 * the caller told; or the attempt has failed. Returns how many.
 */
static unsigned int rpage_xfer_reap(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	unsigned int i, n, reaped = 0;

	for (i = 0; i < run->nr_slots; i++) {
		struct rpage_xfer_op *op = &run->ops[i];

		/* Pairs with rpage_xfer_op_done(). */
		if (smp_load_acquire(&op->state) != RPAGE_OP_DONE)
			continue;
		n = op->wr.wr.num_sge;
		if (op->wc_status == IB_WC_SUCCESS) {
			bitmap_set(run->finished, op->first, n);
			if (x->done)
				x->done(x, op->first, n, 0);
		} else if (!run->err) {
			run->err = op->wc_status == IB_WC_WR_FLUSH_ERR ?
				   -ECONNRESET : -EIO;
		}
		op->state = RPAGE_OP_FREE;
		run->free[run->nr_free++] = i;
		reaped++;
	}
	return reaped;
}

/* Calls the caller's slow hook once, before the first long wait. */
static void rpage_xfer_slow(void *ctx)
{
	struct rpage_xfer *x = ctx;

	if (x->slow) {
		x->slow(x);
		x->slow = NULL;
	}
}

/*
 * The device kept work requests even after the flush: their pages stay
 * its, referenced and mapped, and the run that holds them is never freed.
 */
static void rpage_xfer_abandon(struct rpage_xfer_run *run)
{
	unsigned int i, p;

	pr_err("peer %s: %d work requests never completed; their pages are left to the device\n",
	       run->conn->peer->name, atomic_read(&run->pending));
	for (i = 0; i < run->nr_slots; i++) {
		struct rpage_xfer_op *op = &run->ops[i];

		if (READ_ONCE(op->state) != RPAGE_OP_POSTED)
			continue;
		for (p = 0; p < op->wr.wr.num_sge; p++)
			get_page(run->x->pages[op->first + p]);
	}
	run->leaked = true;
	/* On purpose: what the device may still write to must stay. */
	kmemleak_not_leak(run);
}

/*
 * Posts and polls until every page of the attempt is moved, or the
 * attempt failed and nothing of it is left in flight. Returns 0, -EIO or
 * -ECONNRESET (the queue pair failed), -ETIMEDOUT (no completion for
 * io_timeout_ms), -EINTR (killed), -ENOMEM, or -EDEADLK (the device
 * kept work requests).
 */
static int rpage_xfer_poll(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	struct rpage_conn *conn = run->conn;
	unsigned int io_timeout_ms = READ_ONCE(rpage_io_timeout_ms);
	unsigned long progress = jiffies, flush_deadline = 0;
	unsigned long kill_deadline = 0;
	bool stopping = false, timed_out = false, killed = false;
	u64 idle_since = 0;
	int ret = 0;

	for (;;) {
		if (!stopping) {
			ret = rpage_xfer_post(run);
			stopping = ret != 0;
		}
		if (!atomic_read(&run->pending)) {
			/* Every completion is in: settle them before deciding. */
			rpage_xfer_reap(run);
			if (run->err)
				stopping = true;
			if (stopping || find_first_zero_bit(run->finished,
							    x->nr_pages) >= x->nr_pages)
				break;
			/* Nothing posted: the send queue is full of others' work. */
			progress = jiffies;
		}
		if (ib_process_cq_direct(conn->cq, RPAGE_XFER_BATCH) > 0)
			idle_since = 0;
		if (rpage_xfer_reap(run)) {
			/* The timeout is for a stall, not for a long transfer. */
			progress = jiffies;
			idle_since = 0;
			if (run->err)
				stopping = true;
			continue;
		}
		if (!idle_since)
			idle_since = ktime_get_ns();
		if (ktime_get_ns() - idle_since > RPAGE_XFER_SPIN_NS) {
			rpage_xfer_slow(x);
			usleep_range(20, 100);
		} else {
			cond_resched();
		}

		if (x->killable && !killed && fatal_signal_pending(current)) {
			killed = true;
			stopping = true;
			kill_deadline = jiffies +
				msecs_to_jiffies(RPAGE_XFER_KILL_GRACE_MS);
		}
		if (flush_deadline) {
			if (time_after(jiffies, flush_deadline)) {
				rpage_xfer_abandon(run);
				return -EDEADLK;
			}
			continue;
		}
		if (killed && time_after(jiffies, kill_deadline)) {
			/* Flushed, they complete at once; the peer reconnects. */
			rpage_peer_conn_lost(conn, "flushed queue pair %u for a killed task",
					     conn->index);
		} else if (time_after(jiffies, progress +
				      msecs_to_jiffies(io_timeout_ms))) {
			timed_out = true;
			stopping = true;
			rpage_peer_conn_lost(conn, "no completion for %u ms on queue pair %u",
					     io_timeout_ms, conn->index);
		} else {
			continue;
		}
		rpage_conn_to_error(conn);
		flush_deadline = jiffies + msecs_to_jiffies(max(io_timeout_ms, 1000U));
	}
	if (killed)
		return -EINTR;
	if (timed_out)
		return -ETIMEDOUT;
	return run->err ?: ret;
}

/* Holds the pool of every range for an attempt; -errno if one is not fit. */
static int rpage_xfer_hold(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	unsigned int r;

	for (r = 0; r < x->nr_ranges; r++) {
		struct rpage_xfer_range *range = &x->ranges[r];
		u64 pages = range->extent ?: range->nr;
		struct rpage_rpool *rpool;

		rpool = rpage_rpool_get(x->peer, range->pool_id,
					range->generation, range->offset,
					pages << PAGE_SHIFT, x->write);
		if (IS_ERR(rpool))
			return PTR_ERR(rpool);
		run->rpools[r] = rpool;
		/* A retry moves pages of this incarnation or none. */
		range->generation = rpool->generation;
	}
	return 0;
}

static void rpage_xfer_release(struct rpage_xfer_run *run)
{
	unsigned int r;

	for (r = 0; r < run->x->nr_ranges; r++) {
		if (run->rpools[r])
			rpage_rpool_put(run->rpools[r]);
		run->rpools[r] = NULL;
	}
}

/*
 * One attempt on the queue pair for this CPU and direction, if the peer
 * is connected (-EAGAIN if not). A transport failure comes back as -EIO,
 * -ECONNRESET or -ETIMEDOUT, unless a pool went away meanwhile (-ENOENT).
 */
static int rpage_xfer_attempt(struct rpage_xfer_run *run)
{
	struct rpage_xfer *x = run->x;
	struct rpage_conn *conn;
	unsigned int r;
	int ret;

	conn = rpage_peer_use_data_conn(x->peer, x->write);
	if (!conn)
		return -EAGAIN;
	run->conn = conn;
	run->next = 0;
	run->range = 0;
	run->range_start = 0;
	run->err = 0;
	/* iWARP wants a registered sink for READ; rpage uses the DMA lkey. */
	if (rdma_protocol_iwarp(conn->dev->ibdev, conn->cm_id->port_num)) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	/* The pools of another exporter (one reloaded) are not ours. */
	if (x->node_id && x->node_id != READ_ONCE(x->peer->remote_node_id)) {
		ret = -ESTALE;
		goto out;
	}
	ret = rpage_xfer_hold(run);
	if (!ret)
		ret = rpage_xfer_poll(run);
	if (ret == -EIO || ret == -ECONNRESET || ret == -ETIMEDOUT) {
		/* Failed because the pool was withdrawn: that is final. */
		for (r = 0; r < x->nr_ranges; r++)
			if (run->rpools[r] && rpage_rpool_withdrawn(run->rpools[r]))
				ret = -ENOENT;
	}
	/* Pages the device kept keep their pools' keys in use too. */
	if (ret != -EDEADLK)
		rpage_xfer_release(run);
out:
	up_read(&conn->users);
	return ret;
}

static bool rpage_xfer_transport_error(int err)
{
	return err == -EAGAIN || err == -EIO || err == -ECONNRESET ||
	       err == -ETIMEDOUT;
}

/*
 * The run of @x, in one allocation (a fault's is a few hundred bytes):
 * the slots, then the bitmap of pages moved, then the ranges' pools.
 */
static struct rpage_xfer_run *rpage_xfer_run_alloc(struct rpage_xfer *x)
{
	unsigned int slots = min_t(unsigned long, x->nr_pages, RPAGE_XFER_SLOTS);
	size_t ops_size, bitmap_size;
	struct rpage_xfer_run *run;
	unsigned int i;

	if (x->depth)
		slots = min(slots, x->depth);
	ops_size = struct_size(run, ops, slots);
	bitmap_size = BITS_TO_LONGS(x->nr_pages) * sizeof(long);
	run = kvzalloc(ops_size + bitmap_size +
		       x->nr_ranges * sizeof(*run->rpools),
		       GFP_KERNEL | __GFP_NOWARN);
	if (!run)
		return NULL;
	run->finished = (void *)run + ops_size;
	run->rpools = (void *)run->finished + bitmap_size;
	run->x = x;
	run->nr_slots = slots;
	for (i = 0; i < slots; i++)
		run->free[run->nr_free++] = slots - 1 - i;
	return run;
}

/* Tells the caller of every page not moved, in runs, with @err. */
static void rpage_xfer_report(struct rpage_xfer_run *run, int err)
{
	struct rpage_xfer *x = run->x;
	unsigned long first, end;

	if (!x->done)
		return;
	for (first = find_first_zero_bit(run->finished, x->nr_pages);
	     first < x->nr_pages;
	     first = find_next_zero_bit(run->finished, x->nr_pages, end)) {
		end = find_next_bit(run->finished, x->nr_pages, first);
		x->done(x, first, end - first, err);
	}
}

/**
 * rpage_xfer - moves pages to or from a peer's pools
 * @x: what to move; see struct rpage_xfer.
 *
 * Returns 0 once every page is moved. Otherwise: ENOENT (no such pool,
 * or it was withdrawn), ESTALE (the pool was replaced by another of the
 * same id, or its exporter reloaded), ERANGE, EPERM (a write to a
 * read-only pool), ENOTCONN (the peer stayed unreachable past its loss
 * timeout, or is deleted or failed), EINTR, ENOMEM, EOPNOTSUPP (an
 * iWARP device); with a loss timeout of 0, the transport failure itself:
 * ETIMEDOUT or EIO. Pages reported done with an error may hold part of
 * the data. Every page is reported to @x->done exactly once.
 */
int rpage_xfer(struct rpage_xfer *x)
{
	struct rpage_peer *peer = x->peer;
	unsigned long failed_since = 0;
	struct rpage_xfer_run *run;
	bool failed = false;
	int ret;

	if (!x->nr_pages)
		return 0;
	if (!peer) {
		if (x->done)
			x->done(x, 0, x->nr_pages, -ENOTCONN);
		return -ENOTCONN;
	}
	run = rpage_xfer_run_alloc(x);
	if (!run) {
		if (x->done)
			x->done(x, 0, x->nr_pages, -ENOMEM);
		return -ENOMEM;
	}
	for (;;) {
		ret = rpage_peer_wait_connected(peer, x->killable,
						failed ? failed_since : 0,
						rpage_xfer_slow, x);
		if (ret)
			break;
		ret = rpage_xfer_attempt(run);
		if (!ret || !rpage_xfer_transport_error(ret))
			break;
		/* A loss timeout of 0 fails at the first transport failure. */
		if (!READ_ONCE(peer->loss_timeout_ms))
			break;
		if (!failed) {
			failed = true;
			failed_since = jiffies;
		}
		if (ret != -EAGAIN)
			atomic64_inc(&peer->retried);
	}
	if (ret == -EDEADLK)
		ret = -ETIMEDOUT;
	else if (ret == -EAGAIN)
		ret = -ENOTCONN;
	else if (ret == -ECONNRESET)
		ret = -EIO;
	if (ret)
		rpage_xfer_report(run, ret);
	if (!run->leaked)
		kvfree(run);
	return ret;
}
