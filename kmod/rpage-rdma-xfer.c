// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the RDMA transport's data path - one attempt of a transfer
 * (rpage-xfer.c) on a queue pair: RDMA READs and WRITEs straight between
 * the caller's pages and the peer's registered pool memory.
 *
 * Pages that follow each other in the caller's array and in a region of
 * the pool share one RDMA READ or WRITE, and those of them next to each
 * other in one folio share one scatter/gather entry (up to
 * RPAGE_IO_MAX_SGE entries): a 2 MiB folio read from a 2 MiB region of
 * the pool is one work request with one entry.
 * Work requests go on the queue pair of the current CPU, as many per
 * doorbell as the send queue has room for (or the caller's depth), from
 * a window of RPAGE_XFER_SLOTS: the memory a transfer needs does not
 * grow with its pages. The caller's own context polls the completion
 * queue: busy for up to a millisecond, yielding to anything else
 * runnable (the device's own work may be what it waits for); then it
 * asks the queue to interrupt and sleeps. Whoever polls a completion
 * wakes the transfer it belongs to, and only that one; the interrupt
 * wakes one sleeper, which polls for them all (rpage_rdma_cq_event()).
 * A queue nobody sleeps on never interrupts: the fast path pays for no
 * interrupt and no context switch.
 *
 * An error completion, a flush or no completion for io_timeout_ms
 * reports the queue pair lost (the peer rebuilds its connections) and
 * ends the attempt; the core decides whether to try again. If the device
 * never gives work requests back, even flushed, the pages they point at
 * stay the device's: they are kept referenced, mapped and untouched
 * forever, and so is the run.
 *
 * A task killed while its work requests are in flight does not wait for
 * them past a short grace, nor does it take the queue pair down (which
 * would cost every other user of the peer a reconnect): it leaves them
 * to complete, its run detached (rpage_rdma_detach()), the pages they
 * point at referenced until then; whoever polls their completions
 * settles them, and the last frees the run. A queue pair being torn
 * down polls for those still in flight before it goes.
 *
 * A transfer started without waiting (rpage_xfer_start(): the READ of a
 * fault that may not wait) is detached from the start: posted by the
 * faulting task, which then goes; whoever polls its completion ends it.
 * As nobody may be polling, the queue is asked to interrupt, and while
 * such runs are in flight its interrupt has a worker poll
 * (rpage_rdma_poll_work_fn()).
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
/*
 * A sleeping poller looks at its deadlines at least this often: a second,
 * as over TCP, so that a long io_timeout_ms is no hung task. Nothing else
 * needs the timer: its own completions, a failed queue pair's flushed
 * ones and the interrupt it asked for wake it, and a closed connection
 * wakes everyone. A shorter one woke a transfer that waited long (on a
 * slow or loaded host) for nothing, once per period.
 */
#define RPAGE_XFER_SLEEP_MAX	HZ
/* Work requests one transfer has in flight at most. */
#define RPAGE_XFER_SLOTS	64
/* A killed task's work requests get this long to complete normally. */
#define RPAGE_XFER_KILL_GRACE_MS	50

/* Where a work request of a transfer is. */
enum rpage_rdma_op_state {
	RPAGE_OP_FREE,
	RPAGE_OP_POSTED,
	RPAGE_OP_DONE,
};

/**
 * struct rpage_rdma_op - one work request: pages adjacent in the pool
 * @cqe: completion entry.
 * @wr: the work request.
 * @sge: its pages as the device sees them, @wr.wr.num_sge entries, each
 *	of pages next to each other in one folio.
 * @run: the transfer it belongs to.
 * @first: the index of its first page in the transfer's pages.
 * @nr_pages: how many pages it moves, from @first on.
 * @posted_ns: when it was posted.
 * @wc_status: how it completed.
 * @state: enum rpage_rdma_op_state; DONE is set by whoever polled the
 *	completion, the rest by the transfer's owner.
 */
struct rpage_rdma_op {
	struct ib_cqe cqe;
	struct ib_rdma_wr wr;
	struct ib_sge sge[RPAGE_IO_MAX_SGE];
	struct rpage_rdma_run *run;
	unsigned long first;
	unsigned long nr_pages;
	u64 posted_ns;
	enum ib_wc_status wc_status;
	int state;
};

/**
 * struct rpage_rdma_run - a transfer while it runs over RDMA
 * @run: what the core keeps of it.
 * @conn: the queue pair of the current attempt, its users held.
 * @lock: orders a work request completing against the run detaching.
 * @detached: its task was killed and left its work requests in flight,
 *	or it was started without waiting: the run frees itself once they
 *	and the task are done with it.
 * @async: started without waiting (rpage_rdma_xfer_start()): its end is
 *	told to the core.
 * @entry: a detached run's link in its queue pair's @detached list.
 * @kept: a detached run's pages, by slot: RPAGE_IO_MAX_SGE each, the
 *	first page of each entry (which holds its folio), held until the
 *	slot's work request completes.
 * @pending: work requests posted and not completed, and one more for
 *	the task while the run is detached.
 * @next: the page to post next.
 * @err: the first failure of the attempt, 0 if none.
 * @slept: the attempt slept on its queue pair's completions.
 * @nr_free: free slots, their indexes in @free.
 * @free: the stack of free slots.
 * @nr_slots: slots in @ops.
 * @ops: the work requests.
 */
struct rpage_rdma_run {
	struct rpage_xfer_run run;
	struct rpage_conn *conn;
	spinlock_t lock;		/* see kernel-doc */
	bool detached;
	bool async;
	struct list_head entry;
	struct page **kept;
	atomic_t pending;
	unsigned long next;
	int err;
	bool slept;
	unsigned int nr_free;
	unsigned int free[RPAGE_XFER_SLOTS];
	unsigned int nr_slots;
	struct rpage_rdma_op ops[];
};

static enum dma_data_direction rpage_rdma_dir(bool write)
{
	return write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/* A detached run nobody uses any more goes (its pages were given back). */
static void rpage_rdma_detached_free(struct rpage_rdma_run *rr)
{
	struct rpage_conn *conn = rr->conn;

	spin_lock(&conn->detached_lock);
	list_del(&rr->entry);
	spin_unlock(&conn->detached_lock);
	kfree(rr->kept);
	kvfree(rr);
}

/*
 * A run started without waiting ended: all its work requests completed
 * (with @failed if one did not succeed), or its queue pair's teardown
 * gave up on them. The core is told, and the run goes.
 */
static void rpage_rdma_async_end(struct rpage_rdma_run *rr, bool failed)
{
	struct rpage_conn *conn = rr->conn;

	rpage_xfer_started_end(&rr->run, failed ? -EIO : 0);
	atomic_dec(&conn->async_runs);
	rpage_rdma_detached_free(rr);
}

/* Whether a work request of @rr completed with an error. */
static bool rpage_rdma_any_failed(struct rpage_rdma_run *rr)
{
	unsigned int i;

	for (i = 0; i < rr->nr_slots; i++)
		if (rr->ops[i].state == RPAGE_OP_DONE &&
		    rr->ops[i].wc_status != IB_WC_SUCCESS)
			return true;
	return false;
}

/*
 * A work request completed, in whichever context polled for it: maybe
 * after its transfer gave up on it (rpage_rdma_abandon()) and its caller,
 * whose request may have been on its stack, returned. So it touches the
 * run, which is then never freed, and never the request; or after its
 * task detached the run, whose last completion frees it.
 */
static void rpage_rdma_op_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_rdma_op *op = container_of(wc->wr_cqe, struct rpage_rdma_op,
						cqe);
	struct rpage_rdma_run *rr = op->run;
	struct rpage_conn *conn = rr->conn;
	bool write = op->wr.wr.opcode == IB_WR_RDMA_WRITE;
	unsigned int pages = op->nr_pages, i;
	bool failed = wc->status != IB_WC_SUCCESS;
	u64 ns = ktime_get_ns() - op->posted_ns;
	bool detached;

	rpage_counters_io(&conn->peer->counters, write, pages, ns, failed);
	rpage_counters_io(&conn->dev->counters, write, pages, ns, failed);
	trace_rpage_io_done(conn->peer->id, conn->cm_id->qp->qp_num, write,
			    pages, wc->status, ns);
	for (i = 0; i < op->wr.wr.num_sge; i++)
		ib_dma_unmap_page(conn->dev->ibdev, op->sge[i].addr,
				  op->sge[i].length, rpage_rdma_dir(write));
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
	spin_lock(&rr->lock);
	detached = rr->detached;
	if (detached) {
		for (i = 0; i < op->wr.wr.num_sge; i++)
			put_page(rr->kept[(op - rr->ops) * RPAGE_IO_MAX_SGE + i]);
	}
	/* Pairs with rpage_rdma_reap(): it sees @wc_status once it sees DONE. */
	smp_store_release(&op->state, RPAGE_OP_DONE);
	spin_unlock(&rr->lock);
	/*
	 * The owner may free @run once this reaches zero: touch it last.
	 * A detached run holds one for its task: the last one out frees it.
	 */
	if (atomic_dec_and_test(&rr->pending) && detached) {
		if (rr->async)
			rpage_rdma_async_end(rr, rpage_rdma_any_failed(rr));
		else
			rpage_rdma_detached_free(rr);
	}
	/*
	 * Its owner may be asleep (rpage_rdma_wait()): @rr is its key, only
	 * compared. @conn outlives this: whoever polls holds it.
	 * Pairs with the barrier of the sleeper's prepare_to_wait.
	 */
	if (wq_has_sleeper(&conn->cq_wait))
		rpage_xfer_wake(&conn->cq_wait, rr);
}

/**
 * rpage_rdma_cq_event - a send queue's interrupt
 * @cq: an outbound connection's send completion queue.
 * @ctx: the connection.
 *
 * A transfer going to sleep asks for one, and so does one started
 * without waiting; it comes once: any completion after the request. Any
 * context (a device's hard interrupt): it only wakes one sleeper, which
 * polls for everyone and wakes each owner of a completion it finds (the
 * others sleep on), and, while transfers nobody waits for are in
 * flight, has a worker poll for them.
 */
void rpage_rdma_cq_event(struct ib_cq *cq, void *ctx)
{
	struct rpage_conn *conn = ctx;

	rpage_xfer_wake_one(&conn->cq_wait);
	/* Transfers nobody waits for: a worker polls for them. */
	if (atomic_read(&conn->async_runs))
		queue_work(system_highpri_wq, &conn->poll_work);
}

/* Where page @g of the transfer is in its pool: address and key. */
static void rpage_rdma_locate(struct rpage_rdma_run *rr, unsigned long g,
			      u64 *remote_addr, u32 *rkey)
{
	const struct rpage_rpool *rpool;
	u64 offset, mr;

	rpage_xfer_locate(&rr->run, g, &rpool, &offset);
	mr = div64_u64(offset, rpool->mr_bytes);
	*remote_addr = rpool->mrs[mr].iova + offset - mr * rpool->mr_bytes;
	*rkey = rpool->mrs[mr].rkey;
}

/*
 * Maps @nr pages from page @g for the device into @sge, one entry: they
 * are next to each other in one folio. False if they cannot be.
 */
static bool rpage_rdma_map(struct rpage_rdma_run *rr, unsigned long g,
			   unsigned long nr, struct ib_sge *sge)
{
	struct ib_device *ibdev = rr->conn->dev->ibdev;
	u64 dma = ib_dma_map_page(ibdev, rr->run.x->pages[g], 0,
				  nr << PAGE_SHIFT,
				  rpage_rdma_dir(rr->run.x->write));

	if (ib_dma_mapping_error(ibdev, dma))
		return false;
	sge->addr = dma;
	sge->length = nr << PAGE_SHIFT;
	sge->lkey = rr->conn->pd->local_dma_lkey;
	return true;
}

/*
 * Whether page @g of @rr's transfer can follow in a work request whose
 * @done pages are at @remote_addr under @rkey: not moved yet, and next
 * in the pool.
 */
static bool rpage_rdma_follows(struct rpage_rdma_run *rr, unsigned long g,
			       unsigned long done, u64 remote_addr, u32 rkey)
{
	u64 addr;
	u32 key;

	if (g >= rr->run.x->nr_pages || test_bit(g, rr->run.finished))
		return false;
	rpage_rdma_locate(rr, g, &addr, &key);
	return key == rkey && addr == remote_addr + ((u64)done << PAGE_SHIFT);
}

/*
 * Builds, in a free slot, the work request that starts at the first page
 * not moved yet from @rr->next and takes the pages after it that are
 * adjacent in the pool too: one scatter/gather entry for each run of
 * them next to each other in one folio. Returns it, or NULL with *@err
 * set when the page cannot be mapped.
 */
static struct rpage_rdma_op *rpage_rdma_build(struct rpage_rdma_run *rr,
					      int *err)
{
	struct rpage_xfer *x = rr->run.x;
	unsigned int max_sge = x->write ? rr->conn->max_write_sge :
					  rr->conn->max_read_sge;
	unsigned long g = rr->next, n, max_n;
	unsigned long max_pages = rr->conn->max_sge_bytes >> PAGE_SHIFT;
	struct rpage_rdma_op *op;
	u64 remote_addr;
	u32 rkey;

	op = &rr->ops[rr->free[rr->nr_free - 1]];
	memset(&op->wr, 0, sizeof(op->wr));
	op->nr_pages = 0;
	rpage_rdma_locate(rr, g, &remote_addr, &rkey);
	while (op->wr.wr.num_sge < max_sge &&
	       (!op->nr_pages ||
		rpage_rdma_follows(rr, g, op->nr_pages, remote_addr, rkey))) {
		struct folio *folio = page_folio(x->pages[g]);
		unsigned long idx = folio_page_idx(folio, x->pages[g]);

		/* The pages of its folio after it, as far as they go on. */
		max_n = min(max_pages, folio_nr_pages(folio) - idx);
		for (n = 1; n < max_n &&
		     rpage_rdma_follows(rr, g + n, op->nr_pages + n,
					remote_addr, rkey) &&
		     x->pages[g + n] == folio_page(folio, idx + n); n++)
			;
		if (!rpage_rdma_map(rr, g, n, &op->sge[op->wr.wr.num_sge]))
			break;
		op->wr.wr.num_sge++;
		op->nr_pages += n;
		g += n;
	}
	if (!op->nr_pages) {
		*err = -ENOMEM;
		return NULL;
	}
	rr->nr_free--;
	op->run = rr;
	op->first = rr->next;
	op->cqe.done = rpage_rdma_op_done;
	op->wr.wr.wr_cqe = &op->cqe;
	op->wr.wr.opcode = x->write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
	op->wr.wr.sg_list = op->sge;
	op->wr.wr.send_flags = IB_SEND_SIGNALED;
	op->wr.remote_addr = remote_addr;
	op->wr.rkey = rkey;
	rr->next = g;
	op->state = RPAGE_OP_POSTED;
	return op;
}

/* Gives a slot of a work request never posted back, unmapped. */
static void rpage_rdma_unbuild(struct rpage_rdma_run *rr,
			       struct rpage_rdma_op *op)
{
	unsigned int i;

	for (i = 0; i < op->wr.wr.num_sge; i++)
		ib_dma_unmap_page(rr->conn->dev->ibdev, op->sge[i].addr,
				  op->sge[i].length,
				  rpage_rdma_dir(rr->run.x->write));
	op->state = RPAGE_OP_FREE;
	rr->free[rr->nr_free++] = op - rr->ops;
	rr->next = min(rr->next, op->first);
}

/*
 * Posts as many work requests as there are free slots, send queue room
 * and depth for, with one doorbell. Returns 0, or -ENOMEM, or the error
 * of a post the queue pair refused.
 */
static int rpage_rdma_post(struct rpage_rdma_run *rr)
{
	struct rpage_xfer *x = rr->run.x;
	struct rpage_conn *conn = rr->conn;
	const struct ib_send_wr *bad = NULL;
	struct rpage_rdma_op *op, *first = NULL, *last = NULL;
	unsigned int k = 0;
	int ret = 0;
	u64 now;

	while (rr->nr_free) {
		if (x->depth && atomic_read(&rr->pending) + k >= x->depth)
			break;
		rr->next = find_next_zero_bit(rr->run.finished, x->nr_pages,
					      rr->next);
		if (rr->next >= x->nr_pages)
			break;
		if (atomic_dec_if_positive(&conn->sq_free) < 0)
			break;
		op = rpage_rdma_build(rr, &ret);
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
	     container_of(op->wr.wr.next, struct rpage_rdma_op, wr.wr))
		op->posted_ns = now;
	atomic_add(k, &rr->pending);
	ret = ib_post_send(conn->cm_id->qp, &first->wr.wr, &bad);
	if (!ret)
		return 0;
	/* What was not posted will not complete: take it back. */
	for (op = bad ? container_of(bad, struct rpage_rdma_op, wr.wr) : NULL;
	     op; op = op == last ? NULL :
	     container_of(op->wr.wr.next, struct rpage_rdma_op, wr.wr)) {
		rpage_rdma_unbuild(rr, op);
		atomic_inc(&conn->sq_free);
		atomic_dec(&rr->pending);
	}
	rpage_peer_conn_lost(conn, "posting on queue pair %u failed: %d",
			     conn->index, ret);
	return -ECONNRESET;
}

/*
 * Settles the work requests that completed: their pages are moved, and
 * the caller told; or the attempt has failed. Returns how many.
 */
static unsigned int rpage_rdma_reap(struct rpage_rdma_run *rr)
{
	unsigned int i, n, reaped = 0;

	for (i = 0; i < rr->nr_slots; i++) {
		struct rpage_rdma_op *op = &rr->ops[i];

		/* Pairs with rpage_rdma_op_done(). */
		if (smp_load_acquire(&op->state) != RPAGE_OP_DONE)
			continue;
		n = op->nr_pages;
		if (op->wc_status == IB_WC_SUCCESS) {
			rpage_xfer_moved(&rr->run, op->first, n);
		} else if (!rr->err) {
			rr->err = op->wc_status == IB_WC_WR_FLUSH_ERR ?
				   -ECONNRESET : -EIO;
		}
		op->state = RPAGE_OP_FREE;
		rr->free[rr->nr_free++] = i;
		reaped++;
	}
	return reaped;
}

/*
 * The device kept work requests even after the flush: their pages stay
 * its, referenced and mapped, and the run that holds them is never freed.
 */
static void rpage_rdma_abandon(struct rpage_rdma_run *rr)
{
	unsigned long g;
	unsigned int i, s;

	pr_err("peer %s: %d work requests never completed; their pages are left to the device\n",
	       rr->conn->peer->name, atomic_read(&rr->pending));
	for (i = 0; i < rr->nr_slots; i++) {
		struct rpage_rdma_op *op = &rr->ops[i];

		if (READ_ONCE(op->state) != RPAGE_OP_POSTED)
			continue;
		/* A page of each entry: it holds the entry's folio. */
		for (s = 0, g = op->first; s < op->wr.wr.num_sge;
		     g += op->sge[s++].length >> PAGE_SHIFT)
			get_page(rr->run.x->pages[g]);
	}
	rr->run.leaked = true;
	/* On purpose: what the device may still write to must stay. */
	kmemleak_not_leak(rr);
}

/*
 * Holds, in @rr->kept, the pages its work requests in flight point at,
 * and marks it detached: from then on each completion gives its pages
 * back. A work request completed already holds none.
 */
static void rpage_rdma_keep_posted(struct rpage_rdma_run *rr)
{
	struct rpage_xfer *x = rr->run.x;
	unsigned long g;
	unsigned int i, s;

	spin_lock(&rr->lock);
	for (i = 0; i < rr->nr_slots; i++) {
		struct rpage_rdma_op *op = &rr->ops[i];

		if (op->state != RPAGE_OP_POSTED)
			continue;
		for (s = 0, g = op->first; s < op->wr.wr.num_sge;
		     g += op->sge[s++].length >> PAGE_SHIFT) {
			get_page(x->pages[g]);
			rr->kept[i * RPAGE_IO_MAX_SGE + s] = x->pages[g];
		}
	}
	rr->detached = true;
	spin_unlock(&rr->lock);
}

/* Room in @rr->kept for a page of each entry of each slot; false without. */
static bool rpage_rdma_kept_alloc(struct rpage_rdma_run *rr)
{
	rr->kept = kcalloc(rr->nr_slots * RPAGE_IO_MAX_SGE, sizeof(*rr->kept),
			   GFP_KERNEL | __GFP_NOWARN);
	return rr->kept;
}

/*
 * The task of @rr was killed with work requests in flight: it leaves
 * them to complete without it. The pages they point at are held until
 * each completes, and the run is freed by the last of them or by the
 * task's rpage_rdma_run_free(), whichever comes last; the queue pair
 * goes on serving everyone else. False (nothing changed) without the
 * memory for it.
 */
static bool rpage_rdma_detach(struct rpage_rdma_run *rr)
{
	struct rpage_conn *conn = rr->conn;

	if (!rpage_rdma_kept_alloc(rr))
		return false;
	/* The task's own count, until rpage_rdma_run_free(). */
	atomic_inc(&rr->pending);
	spin_lock(&conn->detached_lock);
	list_add_tail(&rr->entry, &conn->detached);
	spin_unlock(&conn->detached_lock);
	rpage_rdma_keep_posted(rr);
	return true;
}

/**
 * rpage_rdma_conn_drain - settles the killed tasks' work requests
 * @conn: a queue pair being torn down, in error, its users all gone.
 *
 * Polls its completion queue for the work requests of detached runs,
 * flushed by now, for the flush's grace at most: those the device keeps
 * past it are left to it, with their pages and runs, for good (a run
 * started without waiting is ended as failed, its pages still held).
 * Then nothing is left for its interrupt's worker to poll.
 */
void rpage_rdma_conn_drain(struct rpage_conn *conn)
{
	unsigned long deadline = jiffies +
		rpage_flush_grace(READ_ONCE(rpage_io_timeout_ms));
	struct rpage_rdma_run *rr, *tmp;
	LIST_HEAD(kept);
	bool left;

	for (;;) {
		spin_lock(&conn->detached_lock);
		left = !list_empty(&conn->detached);
		spin_unlock(&conn->detached_lock);
		if (!left || !conn->cq)
			break;
		if (ib_process_cq_direct(conn->cq, RPAGE_XFER_BATCH) > 0)
			continue;
		if (time_after(jiffies, deadline))
			break;
		usleep_range(100, 1000);
	}
	spin_lock(&conn->detached_lock);
	/* The queue pair may be made again: they are its no more. */
	list_splice_init(&conn->detached, &kept);
	spin_unlock(&conn->detached_lock);
	list_for_each_entry_safe(rr, tmp, &kept, entry) {
		pr_err("peer %s: %d work requests of a %s never completed; their pages are left to the device\n",
		       conn->peer->name, atomic_read(&rr->pending) - !rr->async,
		       rr->async ? "transfer nobody waited for" : "killed task");
		/* On purpose: what the device may still write to must stay. */
		kmemleak_not_leak(rr);
		kmemleak_not_leak(rr->kept);
		INIT_LIST_HEAD(&rr->entry);
		if (rr->async) {
			/* Its caller reads the page again, into another. */
			rpage_xfer_started_end(&rr->run, -EIO);
			atomic_dec(&conn->async_runs);
		}
	}
	cancel_work_sync(&conn->poll_work);
}

/*
 * Asks @conn's send queue to interrupt at its next completion; true if
 * completions came already, which nobody polled yet (no interrupt for
 * them: the caller polls instead).
 */
static bool rpage_rdma_cq_arm(struct rpage_conn *conn)
{
	return ib_req_notify_cq(conn->cq, IB_CQ_NEXT_COMP |
				IB_CQ_REPORT_MISSED_EVENTS) > 0;
}

/**
 * rpage_rdma_poll_work_fn - polls a send queue for transfers nobody waits for
 * @work: the &rpage_conn.poll_work of an outbound connection.
 *
 * Queued by the queue's interrupt while transfers started without waiting
 * are in flight on it; polls everything there, as any poller does, and
 * asks for the next interrupt while such transfers are left. Cancelled
 * by the connection's teardown (rpage_rdma_conn_drain()) before its
 * queue goes, once none is left.
 */
void rpage_rdma_poll_work_fn(struct work_struct *work)
{
	struct rpage_conn *conn = container_of(work, struct rpage_conn,
					       poll_work);

	do {
		while (ib_process_cq_direct(conn->cq, RPAGE_XFER_BATCH) > 0)
			cond_resched();
	} while (atomic_read(&conn->async_runs) && rpage_rdma_cq_arm(conn));
}

/*
 * Whether @arg (a run) may stop sleeping: a completion of its own is in
 * (someone else polled it), or its send queue has completions nobody
 * polled yet. Else the queue is asked to interrupt at the next one: the
 * caller is on the queue's sleepers already, so none is missed.
 */
static bool rpage_rdma_ready(void *arg)
{
	struct rpage_rdma_run *rr = arg;
	unsigned int i;

	for (i = 0; i < rr->nr_slots; i++) {
		/* Pairs with rpage_rdma_op_done(). */
		if (smp_load_acquire(&rr->ops[i].state) == RPAGE_OP_DONE)
			return true;
	}
	return rpage_rdma_cq_arm(rr->conn);
}

/*
 * Sleeps until a completion of @rr is polled, by anyone, or its send
 * queue interrupts, or @deadline passes (RPAGE_XFER_SLEEP_MAX at most:
 * the caller looks at the queue pair's state again). With nothing of its
 * own in flight (the send queue is full of others' work) nothing would
 * wake it: it naps briefly instead.
 */
static void rpage_rdma_wait(struct rpage_rdma_run *rr, unsigned long deadline,
			    bool killable)
{
	long timeout = (long)(deadline - jiffies);

	if (!atomic_read(&rr->pending)) {
		usleep_range(20, 100);
		return;
	}
	timeout = clamp_t(long, timeout, 1, RPAGE_XFER_SLEEP_MAX);
	rr->slept = true;
	rpage_xfer_sleep(&rr->conn->cq_wait, rr, rpage_rdma_ready, rr, timeout,
			 killable);
}

/*
 * @rr slept on its queue pair's completions, and may have been the one
 * the interrupt woke to poll for everyone (the queue interrupts once per
 * request): if others still sleep, it asks for the next interrupt on
 * their behalf before it goes, or wakes one of them if completions came
 * meanwhile.
 */
static void rpage_rdma_pass_on(struct rpage_rdma_run *rr)
{
	struct rpage_conn *conn = rr->conn;

	if (rr->slept && wq_has_sleeper(&conn->cq_wait) &&
	    rpage_rdma_cq_arm(conn))
		rpage_xfer_wake_one(&conn->cq_wait);
}

/*
 * Posts and polls until every page of the attempt is moved, or the
 * attempt failed and nothing of it is left in flight. Returns 0, -EIO or
 * -ECONNRESET (the queue pair failed), -ETIMEDOUT (no completion for
 * io_timeout_ms), -EINTR (killed), -ENOMEM, or -EDEADLK (the device
 * kept work requests).
 */
static int rpage_rdma_poll(struct rpage_rdma_run *rr)
{
	struct rpage_xfer *x = rr->run.x;
	struct rpage_conn *conn = rr->conn;
	unsigned int io_timeout_ms = READ_ONCE(rpage_io_timeout_ms);
	unsigned long progress = jiffies, flush_deadline = 0;
	unsigned long kill_deadline = 0;
	bool stopping = false, timed_out = false, killed = false;
	u64 idle_since = 0;
	int ret = 0;

	for (;;) {
		if (!stopping) {
			ret = rpage_rdma_post(rr);
			stopping = ret != 0;
		}
		if (!atomic_read(&rr->pending)) {
			/* Every completion is in: settle them before deciding. */
			rpage_rdma_reap(rr);
			if (rr->err)
				stopping = true;
			if (stopping || find_first_zero_bit(rr->run.finished,
							    x->nr_pages) >= x->nr_pages)
				break;
			/* Nothing posted: the send queue is full of others' work. */
			progress = jiffies;
		}
		if (ib_process_cq_direct(conn->cq, RPAGE_XFER_BATCH) > 0)
			idle_since = 0;
		if (rpage_rdma_reap(rr)) {
			/* The timeout is for a stall, not for a long transfer. */
			progress = jiffies;
			idle_since = 0;
			if (rr->err)
				stopping = true;
			continue;
		}
		if (!idle_since)
			idle_since = ktime_get_ns();
		if (ktime_get_ns() - idle_since > RPAGE_XFER_SPIN_NS) {
			rpage_xfer_slow(x);
			/* Killed, it sleeps out its grace: the signal stays. */
			rpage_rdma_wait(rr, flush_deadline ?: killed ?
					kill_deadline : progress +
					msecs_to_jiffies(io_timeout_ms),
					x->killable && !killed);
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
				rpage_rdma_abandon(rr);
				return -EDEADLK;
			}
			continue;
		}
		if (killed && time_after(jiffies, kill_deadline)) {
			/* Its work requests complete without it. */
			if (rpage_rdma_detach(rr))
				return -EINTR;
			/* Flushed, they complete at once; the peer reconnects. */
			rpage_peer_conn_lost(conn, "flushed queue pair %u for a killed task",
					     conn->index);
		} else if (time_after(jiffies, progress +
				      msecs_to_jiffies(io_timeout_ms))) {
			timed_out = true;
			stopping = true;
			rpage_peer_conn_lost(conn, "no completion for %u ms on queue pair %u",
					     io_timeout_ms, conn->index);
		} else if (rpage_conn_going(conn)) {
			/*
			 * Lost by another's failure, or its peer deleted: its
			 * teardown waits for this holder, so the flush's grace
			 * starts now, not once io_timeout_ms has passed.
			 */
			stopping = true;
		} else {
			continue;
		}
		rpage_conn_to_error(conn);
		flush_deadline = jiffies + rpage_flush_grace(io_timeout_ms);
	}
	if (killed)
		return -EINTR;
	if (timed_out)
		return -ETIMEDOUT;
	return rr->err ?: ret;
}

/*
 * Takes the queue pair for this CPU and direction, if the peer is
 * connected (-EAGAIN if not): while it is held, the peer's pool table
 * stays as it is.
 */
int rpage_rdma_xfer_begin(struct rpage_xfer_run *run)
{
	struct rpage_rdma_run *rr = container_of(run, struct rpage_rdma_run, run);
	struct rpage_conn *conn;

	conn = rpage_peer_use_data_conn(run->x->peer, run->x->write);
	if (!conn)
		return -EAGAIN;
	rr->conn = conn;
	rr->next = 0;
	rr->err = 0;
	/* iWARP wants a registered sink for READ; rpage uses the DMA lkey. */
	if (rdma_protocol_iwarp(conn->dev->ibdev, conn->cm_id->port_num)) {
		up_read(&conn->users);
		return -EOPNOTSUPP;
	}
	return 0;
}

int rpage_rdma_xfer_move(struct rpage_xfer_run *run)
{
	struct rpage_rdma_run *rr = container_of(run, struct rpage_rdma_run, run);
	int ret;

	rr->slept = false;
	ret = rpage_rdma_poll(rr);
	rpage_rdma_pass_on(rr);
	return ret;
}

/*
 * Posts the run's page (rpage_xfer_start()) and leaves it to complete,
 * detached: the pages it points at are held until it does, its end told
 * by whoever polls the completion, or by the queue pair's teardown. The
 * run holds one more count (its starter's) until rpage_rdma_xfer_end().
 */
int rpage_rdma_xfer_start(struct rpage_xfer_run *run)
{
	struct rpage_rdma_run *rr = container_of(run, struct rpage_rdma_run, run);
	struct rpage_conn *conn = rr->conn;
	int ret;

	if (!rpage_rdma_kept_alloc(rr))
		return -ENOMEM;
	/* Before the post: its completion never finds the run at zero. */
	atomic_inc(&rr->pending);
	rr->async = true;
	atomic_inc(&conn->async_runs);
	spin_lock(&conn->detached_lock);
	list_add_tail(&rr->entry, &conn->detached);
	spin_unlock(&conn->detached_lock);
	ret = rpage_rdma_post(rr);
	/* Its one page not posted: the send queue is full. */
	if (!ret && rr->next < run->x->nr_pages)
		ret = -EAGAIN;
	if (ret) {
		/* Nothing of it is in flight: it is the core's again. */
		spin_lock(&conn->detached_lock);
		list_del_init(&rr->entry);
		spin_unlock(&conn->detached_lock);
		atomic_dec(&conn->async_runs);
		rr->async = false;
		atomic_dec(&rr->pending);
		kfree(rr->kept);
		rr->kept = NULL;
		return ret;
	}
	rpage_rdma_keep_posted(rr);
	/* Nobody may poll: the queue interrupts, or it has news already. */
	if (rpage_rdma_cq_arm(conn))
		queue_work(system_highpri_wq, &conn->poll_work);
	return 0;
}

void rpage_rdma_xfer_end(struct rpage_xfer_run *run)
{
	struct rpage_rdma_run *rr = container_of(run, struct rpage_rdma_run, run);
	struct rpage_conn *conn = rr->conn;

	/* Started without waiting: the starter's count goes, maybe the last. */
	if (rr->async && atomic_dec_and_test(&rr->pending))
		rpage_rdma_async_end(rr, rpage_rdma_any_failed(rr));
	up_read(&conn->users);
}

/*
 * The run of @x, in one allocation (a fault's is a few hundred bytes):
 * the slots, then the core's @tail bytes (*@tailp).
 */
struct rpage_xfer_run *rpage_rdma_run_alloc(struct rpage_xfer *x, size_t tail,
					    void **tailp)
{
	unsigned int slots = min_t(unsigned long, x->nr_pages, RPAGE_XFER_SLOTS);
	struct rpage_rdma_run *rr;
	size_t size;
	unsigned int i;

	if (x->depth)
		slots = min(slots, x->depth);
	size = struct_size(rr, ops, slots);
	rr = kvzalloc(size + tail, GFP_KERNEL | __GFP_NOWARN);
	if (!rr)
		return NULL;
	*tailp = (void *)rr + size;
	spin_lock_init(&rr->lock);
	INIT_LIST_HEAD(&rr->entry);
	rr->nr_slots = slots;
	for (i = 0; i < slots; i++)
		rr->free[rr->nr_free++] = slots - 1 - i;
	return &rr->run;
}

void rpage_rdma_run_free(struct rpage_xfer_run *run)
{
	struct rpage_rdma_run *rr = container_of(run, struct rpage_rdma_run, run);

	/* Detached: the task's count goes; its last completion may be out. */
	if (rr->detached) {
		if (atomic_dec_and_test(&rr->pending))
			rpage_rdma_detached_free(rr);
		return;
	}
	kvfree(rr);
}
