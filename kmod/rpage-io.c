// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the data path of RPAGE_IOC_READ and RPAGE_IOC_WRITE.
 *
 * The caller's buffers are pinned and handed to the device page by page
 * (zero copy); pages of a range that are adjacent in the pool go in one
 * RDMA READ or WRITE, up to RPAGE_IO_MAX_SGE of them. Consecutive ranges
 * to one peer are one batch, posted on the queue pair of the current CPU,
 * as many per doorbell as the send queue has room for, and the caller's
 * own context polls the completion queue:
 * it busy-polls for up to a millisecond, then sleeps between polls,
 * until every page is done or no page has completed for io_timeout_ms.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/*
 * How long the caller busy-polls before it sleeps between polls. While
 * it polls it yields to anything else runnable on its CPU: the device's
 * own work may be what it waits for (rxe's, on a host with few CPUs),
 * and a spin that starves it doubled a fault's time in measurements.
 */
#define RPAGE_IO_SPIN_NS	(1000 * NSEC_PER_USEC)
/* Completions reaped per poll. */
#define RPAGE_IO_BATCH		16

/* Pages, which are counted and traced; not a control message. */
static bool rpage_io_is_data(const struct rpage_io_op *op)
{
	return op->wr.wr.opcode != IB_WR_SEND;
}

static void rpage_io_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpage_io_op *op = container_of(wc->wr_cqe, struct rpage_io_op, cqe);
	struct rpage_io_req *req = op->req;
	struct rpage_conn *conn = req->conn;
	unsigned int pages = op->wr.wr.num_sge;
	bool failed = wc->status != IB_WC_SUCCESS;
	u64 ns = ktime_get_ns() - op->posted_ns;
	int status = 0;

	if (rpage_io_is_data(op)) {
		rpage_counters_io(&conn->peer->counters, req->write, pages, ns,
				  failed);
		rpage_counters_io(&conn->dev->counters, req->write, pages, ns,
				  failed);
		trace_rpage_io_done(conn->peer->id, conn->cm_id->qp->qp_num,
				    req->write, pages, wc->status, ns);
	}
	if (failed) {
		status = wc->status == IB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO;
		if (!READ_ONCE(req->status))
			WRITE_ONCE(req->status, status);
	}
	if (req->complete)
		req->complete(op, status);
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

	while (k < n &&
	       (!req->depth || atomic_read(&req->pending) + k < req->depth) &&
	       atomic_dec_if_positive(&req->conn->sq_free) >= 0)
		k++;
	if (!k)
		return 0;
	if (rpage_io_is_data(&ops[0]))
		trace_rpage_io_post(req->conn->peer->id,
				    req->conn->cm_id->qp->qp_num, req->write,
				    ops[0].wr.remote_addr, k);
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
 * Runs the @n work requests @ops on @req's queue pair and waits for all
 * of them. Returns with nothing of them left on the device, whatever
 * happened.
 */
int rpage_io_run(struct rpage_io_req *req, struct rpage_io_op *ops,
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
			cond_resched();
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
 * Finds the peer's pool @pool_id and holds it for one read or write of
 * @length bytes at @offset: a withdrawal waits until rpage_rpool_put().
 * Fails with the errno the UAPI promises for a bad pool or range.
 */
struct rpage_rpool *rpage_rpool_get(struct rpage_peer *peer, u64 pool_id,
				    u64 offset, u64 length, bool write)
{
	struct rpage_rpool *rpool, *found = ERR_PTR(-ENOENT);

	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id != pool_id || rpool->received != rpool->nr_mrs)
			continue;
		if (offset >= rpool->length || length > rpool->length - offset) {
			found = ERR_PTR(-ERANGE);
		} else if (write && !(rpool->flags & RPAGE_POOL_WRITABLE)) {
			found = ERR_PTR(-EPERM);
		} else {
			rpool->inflight++;
			found = rpool;
		}
		break;
	}
	spin_unlock(&peer->rpools_lock);
	return found;
}

/*
 * Maps @nr @pages for the device into the gather entries @sges, one per
 * page; returns how many it mapped, all of them unless mapping failed.
 */
unsigned int rpage_io_map_pages(struct rpage_io_req *req, struct page **pages,
				unsigned int nr, struct ib_sge *sges)
{
	struct ib_device *ibdev = req->conn->dev->ibdev;
	enum dma_data_direction dir = req->write ? DMA_TO_DEVICE :
						   DMA_FROM_DEVICE;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		u64 dma = ib_dma_map_page(ibdev, pages[i], 0, PAGE_SIZE, dir);

		if (ib_dma_mapping_error(ibdev, dma))
			break;
		sges[i].addr = dma;
		sges[i].length = PAGE_SIZE;
		sges[i].lkey = req->conn->dev->pd->local_dma_lkey;
	}
	return i;
}

/* Undoes rpage_io_map_pages() of @nr pages. */
void rpage_io_unmap_pages(struct rpage_io_req *req, const struct ib_sge *sges,
			  unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		ib_dma_unmap_page(req->conn->dev->ibdev, sges[i].addr, PAGE_SIZE,
				  req->write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
}

/* Where the page at @offset of @rpool, which the caller holds, is. */
static void rpage_rpool_locate(const struct rpage_rpool *rpool, u64 offset,
			       u64 *remote_addr, u32 *rkey)
{
	u64 mr = div64_u64(offset, rpool->mr_bytes);

	*remote_addr = rpool->mrs[mr].iova + offset - mr * rpool->mr_bytes;
	*rkey = rpool->mrs[mr].rkey;
}

/* Makes @op a signalled work request of @req, of one entry, @sge. */
static void rpage_io_op_init(struct rpage_io_op *op, struct rpage_io_req *req,
			     enum ib_wr_opcode opcode, struct ib_sge *sge)
{
	memset(op, 0, sizeof(*op));
	op->req = req;
	op->cqe.done = rpage_io_done;
	op->wr.wr.wr_cqe = &op->cqe;
	op->wr.wr.opcode = opcode;
	op->wr.wr.sg_list = sge;
	op->wr.wr.num_sge = 1;
	op->wr.wr.send_flags = IB_SEND_SIGNALED;
}

/*
 * Makes @op SEND the control message mapped at @sge on @req's queue pair,
 * for rpage_io_run() to post and poll for; it is not counted as data.
 */
void rpage_io_build_send(struct rpage_io_req *req, struct ib_sge *sge,
			 struct rpage_io_op *op)
{
	rpage_io_op_init(op, req, IB_WR_SEND, sge);
}

/*
 * Builds the work requests that move @nr mapped pages (@sges) to or from
 * @rpool, page i at @offset plus @index[i] pages (plus i pages without
 * @index), after the @n requests already in @ops. A page joins the work
 * request before it (the last of those @n, too) when it follows that
 * request's last page in the same region of the pool, its gather entry
 * follows that request's last one, and the request has room; so a run
 * of adjacent pages costs one READ or WRITE, not one per page. The
 * requests it starts count their first page from @first_page. Returns
 * how many of @ops are filled now.
 */
static unsigned int
rpage_io_build_more(struct rpage_io_req *req, const struct rpage_rpool *rpool,
		    u64 offset, const unsigned long *index, struct ib_sge *sges,
		    unsigned int nr, struct rpage_io_op *ops, unsigned int n,
		    unsigned int first_page)
{
	unsigned int max_sge = req->write ? req->conn->max_write_sge :
					    req->conn->max_read_sge;
	struct rpage_io_op *op = n ? &ops[n - 1] : NULL;
	unsigned int i;
	u64 remote_addr;
	u32 rkey;

	for (i = 0; i < nr; i++) {
		rpage_rpool_locate(rpool, offset + ((u64)(index ? index[i] : i) <<
						    PAGE_SHIFT),
				   &remote_addr, &rkey);
		if (op && op->wr.wr.num_sge < max_sge &&
		    op->wr.wr.sg_list + op->wr.wr.num_sge == &sges[i] &&
		    op->wr.rkey == rkey && remote_addr == op->wr.remote_addr +
		    ((u64)op->wr.wr.num_sge << PAGE_SHIFT)) {
			op->wr.wr.num_sge++;
			continue;
		}
		op = &ops[n++];
		rpage_io_op_init(op, req, req->write ? IB_WR_RDMA_WRITE :
				 IB_WR_RDMA_READ, &sges[i]);
		op->first = first_page + i;
		op->wr.remote_addr = remote_addr;
		op->wr.rkey = rkey;
	}
	return n;
}

/*
 * Builds the work requests of @nr pages into @ops, which has room for
 * @nr: see rpage_io_build_more(). Returns how many it filled.
 */
unsigned int rpage_io_build(struct rpage_io_req *req,
			    const struct rpage_rpool *rpool, u64 offset,
			    const unsigned long *index, struct ib_sge *sges,
			    unsigned int nr, struct rpage_io_op *ops)
{
	return rpage_io_build_more(req, rpool, offset, index, sges, nr, ops,
				   0, 0);
}

/*
 * Takes the peer's queue pair for this CPU for one read or write, with
 * the peer's io_rwsem held for reading until rpage_io_end(). Fails with
 * ENOTCONN when the peer is not connected.
 */
int rpage_io_begin(struct rpage_peer *peer, struct rpage_conn **connp)
{
	struct rpage_conn *conn;

	down_read(&peer->io_rwsem);
	conn = &peer->conns[raw_smp_processor_id() % peer->nr_conns];
	if (READ_ONCE(peer->state) != RPAGE_PEER_STATE_CONNECTED ||
	    !conn->cm_id || conn->state != RPAGE_CONN_CONNECTED) {
		up_read(&peer->io_rwsem);
		return -ENOTCONN;
	}
	/* iWARP wants a registered sink for READ; rpage uses the DMA lkey. */
	if (rdma_protocol_iwarp(conn->dev->ibdev, conn->cm_id->port_num)) {
		up_read(&peer->io_rwsem);
		return -EOPNOTSUPP;
	}
	*connp = conn;
	return 0;
}

void rpage_io_end(struct rpage_peer *peer)
{
	up_read(&peer->io_rwsem);
}

/* Whether @err says the peer's connections must be rebuilt. */
bool rpage_io_transport_error(int err)
{
	return err == -EIO || err == -ECONNRESET || err == -ETIMEDOUT;
}

/*
 * Pins the caller's buffer of @iov into @pages, as few calls as it
 * takes; *@pinned says how far it got. This runs before the peer's
 * io_rwsem is taken: the buffer may be an rpage mapping, whose faults
 * take it too.
 */
static int rpage_io_pin(const struct rpage_iovec *iov, bool write,
			struct page **pages, unsigned long *pinned)
{
	unsigned long nr = iov->length >> PAGE_SHIFT;
	long got;

	for (*pinned = 0; *pinned < nr; *pinned += got) {
		got = pin_user_pages_fast(iov->addr + (*pinned << PAGE_SHIFT),
					  nr - *pinned, write ? 0 : FOLL_WRITE,
					  pages + *pinned);
		if (got <= 0)
			return -EFAULT;
	}
	return 0;
}

/*
 * Builds the work requests of @nr_iov ranges, held in @rpools, whose
 * mapped pages follow each other in @sges; adjacent pages share a
 * request across ranges too. Returns how many of @ops it filled.
 */
static unsigned int
rpage_io_build_ranges(struct rpage_io_req *req, struct rpage_rpool **rpools,
		      const struct rpage_iovec *iovs, unsigned int nr_iov,
		      struct ib_sge *sges, struct rpage_io_op *ops)
{
	unsigned int i, n = 0, first = 0;

	for (i = 0; i < nr_iov; i++) {
		n = rpage_io_build_more(req, rpools[i], iovs[i].offset, NULL,
					sges + first,
					iovs[i].length >> PAGE_SHIFT, ops, n,
					first);
		first += iovs[i].length >> PAGE_SHIFT;
	}
	return n;
}

/*
 * Ranges to one peer, transferred together so that their READs or WRITEs
 * are in flight at once: pin every buffer, hold every pool, post, wait,
 * release.
 */
static int rpage_io_batch(struct rpage_peer *peer,
			  const struct rpage_iovec *iovs, unsigned int nr_iov,
			  bool write)
{
	struct rpage_io_req req = { .write = write };
	unsigned int i, nr = 0, n, held, mapped;
	struct rpage_rpool **rpools;
	unsigned long pinned = 0;
	struct rpage_io_op *ops;
	struct page **pages;
	struct ib_sge *sges;
	int ret;

	for (i = 0; i < nr_iov; i++)
		nr += iovs[i].length >> PAGE_SHIFT;
	ops = kvcalloc(nr, sizeof(*ops), GFP_KERNEL);
	sges = kvcalloc(nr, sizeof(*sges), GFP_KERNEL);
	pages = kvcalloc(nr, sizeof(*pages), GFP_KERNEL);
	rpools = kvcalloc(nr_iov, sizeof(*rpools), GFP_KERNEL);
	if (!ops || !sges || !pages || !rpools) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < nr_iov; i++) {
		unsigned long got;

		ret = rpage_io_pin(&iovs[i], write, pages + pinned, &got);
		pinned += got;
		if (ret)
			goto out_unpin;
	}
	ret = rpage_io_begin(peer, &req.conn);
	if (ret)
		goto out_unpin;
	for (held = 0; held < nr_iov; held++) {
		rpools[held] = rpage_rpool_get(peer, iovs[held].pool_id,
					       iovs[held].offset,
					       iovs[held].length, write);
		if (IS_ERR(rpools[held])) {
			ret = PTR_ERR(rpools[held]);
			goto out_put;
		}
	}
	mapped = rpage_io_map_pages(&req, pages, nr, sges);
	if (mapped < nr) {
		ret = -ENOMEM;
	} else {
		n = rpage_io_build_ranges(&req, rpools, iovs, nr_iov, sges, ops);
		ret = rpage_io_run(&req, ops, n);
	}
	if (ret == -EDEADLK) {
		/* Pages the device may still write to are never given back. */
		rpage_io_end(peer);
		return -ETIMEDOUT;
	}
	rpage_io_unmap_pages(&req, sges, mapped);
	if (mapped == nr) {
		/* A read wrote into the pages: the page cache must know. */
		unpin_user_pages_dirty_lock(pages, pinned, !write);
		pinned = 0;
	}
out_put:
	while (held)
		rpage_rpool_put(peer, rpools[--held]);
	rpage_io_end(peer);
out_unpin:
	if (pinned)
		unpin_user_pages(pages, pinned);
out_free:
	kvfree(rpools);
	kvfree(ops);
	kvfree(sges);
	kvfree(pages);
	return ret;
}

static int rpage_io_check_iov(const struct rpage_iovec *iov)
{
	if (iov->reserved0 || !rpage_page_range_valid(iov->offset, iov->length) ||
	    !PAGE_ALIGNED(iov->addr))
		return -EINVAL;
	return 0;
}

static long rpage_io(void __user *argp, bool write)
{
	struct rpage_iovec *iovs;
	struct rpage_io arg;
	u64 total = 0;
	u32 i, run;
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

	for (i = 0; i < arg.nr_iov; i += run) {
		struct rpage_peer *peer = rpage_peer_get_by_id(iovs[i].peer_id);

		if (!peer) {
			ret = -ENOENT;
			goto out;
		}
		for (run = 1; i + run < arg.nr_iov &&
		     iovs[i + run].peer_id == iovs[i].peer_id; run++)
			;
		ret = rpage_io_batch(peer, &iovs[i], run, write);
		if (rpage_io_transport_error(ret))
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
