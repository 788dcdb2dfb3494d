// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the data path of RPAGE_IOC_READ and RPAGE_IOC_WRITE.
 *
 * The caller's buffer is pinned and handed to the device page by page
 * (zero copy); one RDMA READ or WRITE per page is posted on the queue
 * pair of the current CPU, as many per doorbell as the send queue has
 * room for, and the caller's own context polls the completion queue:
 * it spins for a short while, then sleeps between polls, until every
 * page is done or no page has completed for io_timeout_ms.
 */
#include "rpage-pri.h"

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* How long the caller busy-polls before it sleeps between polls. */
#define RPAGE_IO_SPIN_NS	(20 * NSEC_PER_USEC)
/* Completions reaped per poll. */
#define RPAGE_IO_BATCH		16

/**
 * struct rpage_io_req - one run of pages to or from one peer
 * @conn: the queue pair the pages go on.
 * @pending: work requests posted and not completed.
 * @status: the first failure a completion reported, 0 if none.
 */
struct rpage_io_req {
	struct rpage_conn *conn;
	atomic_t pending;
	int status;
};

/**
 * struct rpage_io_op - one page of a read or write
 * @cqe: completion entry.
 * @wr: the RDMA work request.
 * @sge: the page, as the device sees it.
 * @req: the run it belongs to.
 * @posted_ns: when its work request was posted.
 */
struct rpage_io_op {
	struct ib_cqe cqe;
	struct ib_rdma_wr wr;
	struct ib_sge sge;
	struct rpage_io_req *req;
	u64 posted_ns;
};

static void rpage_io_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_io_op *op = container_of(wc->wr_cqe, struct rpage_io_op, cqe);
	struct rpage_io_req *req = op->req;
	struct rpage_conn *conn = req->conn;
	bool write = op->wr.wr.opcode == IB_WR_RDMA_WRITE;
	bool failed = wc->status != IB_WC_SUCCESS;
	u64 ns = ktime_get_ns() - op->posted_ns;

	rpage_counters_io(&conn->peer->counters, write, PAGE_SIZE, ns, failed);
	rpage_counters_io(&conn->dev->counters, write, PAGE_SIZE, ns, failed);
	if (failed && !READ_ONCE(req->status))
		WRITE_ONCE(req->status, wc->status == IB_WC_WR_FLUSH_ERR ?
			   -ECONNRESET : -EIO);
	atomic_inc(&req->conn->sq_free);
	/* The owner may free @op once this reaches zero: touch it last. */
	atomic_dec(&req->pending);
}

/*
 * Posts up to @n more work requests, as many as the send queue has room
 * for, with one doorbell.
 */
static unsigned int rpage_io_post(struct rpage_io_req *req,
				  struct rpage_io_op *ops, unsigned int n)
{
	const struct ib_send_wr *bad = NULL;
	unsigned int k = 0, i;
	u64 now;
	int ret;

	while (k < n && atomic_dec_if_positive(&req->conn->sq_free) >= 0)
		k++;
	if (!k)
		return 0;
	now = ktime_get_ns();
	for (i = 0; i < k; i++) {
		ops[i].wr.wr.next = i + 1 < k ? &ops[i + 1].wr.wr : NULL;
		ops[i].posted_ns = now;
	}
	atomic_add(k, &req->pending);
	ret = ib_post_send(req->conn->cm_id->qp, &ops[0].wr.wr, &bad);
	if (ret) {
		/* What was not posted will not complete. */
		for (i = 0; i < k && &ops[i].wr.wr != bad; i++)
			;
		atomic_sub(k - i, &req->pending);
		atomic_add(k - i, &req->conn->sq_free);
		if (!READ_ONCE(req->status))
			WRITE_ONCE(req->status, ret);
		return i;
	}
	return k;
}

/*
 * Runs @n pages on @req's queue pair and waits for all of them. Returns
 * with nothing of them left on the device, whatever happened.
 */
static int rpage_io_run(struct rpage_io_req *req, struct rpage_io_op *ops,
			unsigned int n)
{
	struct ib_qp_attr to_error = { .qp_state = IB_QPS_ERR };
	unsigned long deadline = jiffies + msecs_to_jiffies(rpage_io_timeout_ms);
	unsigned int posted = 0;
	bool timed_out = false;
	u64 idle_since = 0;

	atomic_set(&req->pending, 0);
	req->status = 0;
	while (posted < n || atomic_read(&req->pending)) {
		if (posted < n && !READ_ONCE(req->status) && !timed_out)
			posted += rpage_io_post(req, ops + posted, n - posted);
		/* After a failure, only wait for what was posted. */
		if (READ_ONCE(req->status) || timed_out)
			n = posted;
		if (ib_process_cq_direct(req->conn->cq, RPAGE_IO_BATCH) > 0) {
			/* The timeout is for a stall, not for a long transfer. */
			if (!timed_out)
				deadline = jiffies + msecs_to_jiffies(rpage_io_timeout_ms);
			idle_since = 0;
			continue;
		}
		if (!idle_since)
			idle_since = ktime_get_ns();
		if (ktime_get_ns() - idle_since > RPAGE_IO_SPIN_NS)
			usleep_range(20, 100);
		else
			cpu_relax();
		if (time_after(jiffies, deadline)) {
			if (timed_out) {
				/* The device never flushed: the pages stay its. */
				pr_err("peer %s: %d requests never completed\n",
				       req->conn->peer->name,
				       atomic_read(&req->pending));
				return -EDEADLK;
			}
			/* Flush what is in flight: it completes in error. */
			timed_out = true;
			ib_modify_qp(req->conn->cm_id->qp, &to_error, IB_QP_STATE);
			deadline = jiffies + msecs_to_jiffies(rpage_io_timeout_ms);
		}
	}
	if (timed_out)
		return -ETIMEDOUT;
	return req->status;
}

/*
 * Fills in where each page of @iov goes on the peer, and holds the pool
 * in @held; fails with the errno the UAPI promises for a bad pool or
 * range.
 */
static int rpage_io_resolve(struct rpage_peer *peer, const struct rpage_iovec *iov,
			    bool write, struct rpage_io_op *ops,
			    struct rpage_rpool **held)
{
	struct rpage_rpool *rpool;
	unsigned long i, nr = iov->length >> PAGE_SHIFT;
	int ret = -ENOENT;

	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id != iov->pool_id || rpool->received != rpool->nr_mrs)
			continue;
		if (iov->offset >= rpool->length ||
		    iov->length > rpool->length - iov->offset) {
			ret = -ERANGE;
		} else if (write && !(rpool->flags & RPAGE_POOL_WRITABLE)) {
			ret = -EPERM;
		} else {
			for (i = 0; i < nr; i++) {
				u64 off = iov->offset + (i << PAGE_SHIFT);
				u64 mr = div64_u64(off, rpool->mr_bytes);

				ops[i].wr.remote_addr = rpool->mrs[mr].iova +
							off - mr * rpool->mr_bytes;
				ops[i].wr.rkey = rpool->mrs[mr].rkey;
			}
			/* A withdrawal waits for this before it is acknowledged. */
			rpool->inflight++;
			*held = rpool;
			ret = 0;
		}
		break;
	}
	spin_unlock(&peer->rpools_lock);
	return ret;
}

/* Undoes rpage_io_map(): @pinned pages, those of them mapped. */
static void rpage_io_release_pages(struct ib_device *ibdev,
				   struct rpage_io_op *ops, struct page **pages,
				   unsigned long pinned, bool write)
{
	unsigned long i;

	for (i = 0; i < pinned && ops[i].sge.addr; i++)
		ib_dma_unmap_page(ibdev, ops[i].sge.addr, PAGE_SIZE,
				  write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
	/* A read wrote into the pages: the page cache must know. */
	unpin_user_pages_dirty_lock(pages, pinned, !write);
}

/*
 * Pins the caller's buffer of @iov into @pages, as few calls as it
 * takes, and maps it into @ops; *@pinned says how far it got.
 */
static int rpage_io_map(struct rpage_conn *conn, const struct rpage_iovec *iov,
			bool write, struct rpage_io_op *ops,
			struct page **pages, unsigned long *pinned)
{
	struct ib_device *ibdev = conn->dev->ibdev;
	unsigned long i, nr = iov->length >> PAGE_SHIFT;
	long got;

	for (*pinned = 0; *pinned < nr; *pinned += got) {
		got = pin_user_pages_fast(iov->addr + (*pinned << PAGE_SHIFT),
					  nr - *pinned, write ? 0 : FOLL_WRITE,
					  pages + *pinned);
		if (got <= 0)
			return -EFAULT;
	}
	for (i = 0; i < nr; i++) {
		struct rpage_io_op *op = &ops[i];
		u64 dma;

		dma = ib_dma_map_page(ibdev, pages[i], 0, PAGE_SIZE,
				      write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(ibdev, dma))
			return -ENOMEM;
		op->sge.addr = dma;
		op->sge.length = PAGE_SIZE;
		op->sge.lkey = conn->dev->pd->local_dma_lkey;
		op->cqe.done = rpage_io_done;
		op->wr.wr.wr_cqe = &op->cqe;
		op->wr.wr.opcode = write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
		op->wr.wr.sg_list = &op->sge;
		op->wr.wr.num_sge = 1;
		op->wr.wr.send_flags = IB_SEND_SIGNALED;
	}
	return 0;
}

/* One range: resolve, pin, transfer, release. */
static int rpage_io_one(struct rpage_peer *peer, const struct rpage_iovec *iov,
			bool write)
{
	unsigned long nr = iov->length >> PAGE_SHIFT;
	struct rpage_rpool *rpool = NULL;
	struct rpage_io_req req = {};
	unsigned long pinned = 0;
	struct rpage_io_op *ops;
	struct rpage_conn *conn;
	struct page **pages;
	int ret;

	ops = kvcalloc(nr, sizeof(*ops), GFP_KERNEL);
	pages = kvcalloc(nr, sizeof(*pages), GFP_KERNEL);
	if (!ops || !pages) {
		kvfree(ops);
		kvfree(pages);
		return -ENOMEM;
	}

	down_read(&peer->io_rwsem);
	conn = &peer->conns[raw_smp_processor_id() % peer->nr_conns];
	if (READ_ONCE(peer->state) != RPAGE_PEER_STATE_CONNECTED ||
	    !conn->cm_id || conn->state != RPAGE_CONN_CONNECTED) {
		ret = -ENOTCONN;
		goto out;
	}
	/* iWARP wants a registered sink for READ; rpage uses the DMA lkey. */
	if (rdma_protocol_iwarp(conn->dev->ibdev, conn->cm_id->port_num)) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	ret = rpage_io_resolve(peer, iov, write, ops, &rpool);
	if (ret)
		goto out;
	req.conn = conn;
	ret = rpage_io_map(conn, iov, write, ops, pages, &pinned);
	if (!ret) {
		unsigned int i;

		for (i = 0; i < nr; i++)
			ops[i].req = &req;
		ret = rpage_io_run(&req, ops, nr);
	}
	/* Pages the device may still write to are never given back. */
	if (ret != -EDEADLK) {
		rpage_io_release_pages(conn->dev->ibdev, ops, pages, pinned,
				       write);
		rpage_rpool_put(peer, rpool);
	}
out:
	up_read(&peer->io_rwsem);
	if (ret != -EDEADLK) {
		kvfree(ops);
		kvfree(pages);
	} else {
		ret = -ETIMEDOUT;
	}
	return ret;
}

static int rpage_io_check_iov(const struct rpage_iovec *iov)
{
	if (iov->reserved0 || !iov->length || !PAGE_ALIGNED(iov->length) ||
	    !PAGE_ALIGNED(iov->offset) || !PAGE_ALIGNED(iov->addr))
		return -EINVAL;
	return 0;
}

static long rpage_io(void __user *argp, bool write)
{
	struct rpage_iovec *iovs;
	struct rpage_io arg;
	u64 total = 0;
	u32 i;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)) ||
	    !arg.nr_iov)
		return -EINVAL;
	if (arg.nr_iov > RPAGE_IO_MAX_IOV)
		return -E2BIG;
	iovs = memdup_user(u64_to_user_ptr(arg.iov),
			   array_size(arg.nr_iov, sizeof(*iovs)));
	if (IS_ERR(iovs))
		return PTR_ERR(iovs);

	for (i = 0; i < arg.nr_iov; i++) {
		ret = rpage_io_check_iov(&iovs[i]);
		if (ret)
			goto out;
		total += iovs[i].length;
		if (iovs[i].length > RPAGE_IO_MAX_BYTES ||
		    total > RPAGE_IO_MAX_BYTES) {
			ret = -E2BIG;
			goto out;
		}
	}

	for (i = 0; i < arg.nr_iov; i++) {
		struct rpage_peer *peer = rpage_peer_get_by_id(iovs[i].peer_id);

		if (!peer) {
			ret = -ENOENT;
			goto out;
		}
		ret = rpage_io_one(peer, &iovs[i], write);
		/* A transport failure: the connection set must be rebuilt. */
		if (ret == -EIO || ret == -ECONNRESET || ret == -ETIMEDOUT)
			rpage_peer_io_failed(peer);
		rpage_peer_put(peer);
		if (ret == -ECONNRESET)
			ret = -EIO;
		if (ret)
			goto out;
	}
	ret = 0;
out:
	kfree(iovs);
	return ret;
}

long rpage_ioctl_read(struct rpage_file *rfile, void __user *argp)
{
	return rpage_io(argp, false);
}

long rpage_ioctl_write(struct rpage_file *rfile, void __user *argp)
{
	return rpage_io(argp, true);
}
