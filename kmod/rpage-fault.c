// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the fault path - a first touch of a page of a remote mapping
 * reads it from the peer inside the page fault; prefetch and read-ahead
 * read pages before they are touched.
 *
 * A fault claims its absent page by making it busy, posts one RDMA READ
 * on the queue pair of its CPU and polls for the completion itself (see
 * rpage_io_run()); other faults on the same page wait for that READ, so
 * a page is read once however many threads touch it. Prefetch claims
 * every absent page of its range before it returns and reads them from
 * a worker, up to a queue depth of READs at a time, one READ for each run
 * of adjacent pages (up to RPAGE_IO_MAX_SGE), publishing the pages as
 * their READ completes.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

/* Read-ahead windows, in pages, and the largest stride it follows. */
#define RPAGE_RA_MIN		4
#define RPAGE_RA_MAX		64
#define RPAGE_RA_MAX_STRIDE	64

/* Prefetches without RPAGE_PREFETCH_WAIT, and read-ahead, run here. */
static struct workqueue_struct *rpage_prefetch_wq;

/**
 * struct rpage_fetch - one page a fault reads itself
 * @req: its run on the queue pair.
 * @op: its READ.
 * @sge: the page, as the device sees it.
 *
 * Allocated, not on the stack: if the device never gives the page back,
 * none of it may be reused.
 */
struct rpage_fetch {
	struct rpage_io_req req;
	struct rpage_io_op op;
	struct ib_sge sge;
};

/**
 * struct rpage_prefetch_run - pages claimed for one prefetch
 * @work: runs it in the background.
 * @map: the mapping, referenced.
 * @nr: pages claimed.
 * @depth: READs in flight at once.
 * @failed: pages whose READ failed, or that were never read.
 * @req: the READs' run on the queue pair.
 * @index: the claimed pages' indexes in the mapping.
 * @pages: the pages being read, NULL until allocated.
 * @sges: those pages as the device sees them, once mapped.
 * @ops: their READs; adjacent pages share one.
 */
struct rpage_prefetch_run {
	struct work_struct work;
	struct rpage_mapping *map;
	unsigned long nr;
	unsigned int depth;
	atomic_long_t failed;
	struct rpage_io_req req;
	unsigned long *index;
	struct page **pages;
	struct ib_sge *sges;
	struct rpage_io_op *ops;
};

/* Reads page @index of @map into a new page; 0 and *@pagep, or -errno. */
static int rpage_fetch_page(struct rpage_mapping *map, unsigned long index,
			    struct page **pagep)
{
	struct rpage_peer *peer = map->peer;
	u64 offset = map->pool_offset + ((u64)index << PAGE_SHIFT);
	struct rpage_rpool *rpool;
	struct rpage_fetch *f;
	struct page *page;
	int ret;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	page = alloc_page(GFP_HIGHUSER);
	if (!f || !page) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = rpage_io_begin(peer, &f->req.conn);
	if (ret)
		goto out_free;
	rpool = rpage_rpool_get(peer, map->pool_id, offset, PAGE_SIZE, false);
	if (IS_ERR(rpool)) {
		ret = PTR_ERR(rpool);
		goto out_end;
	}
	if (!rpage_io_map_pages(&f->req, &page, 1, &f->sge)) {
		ret = -ENOMEM;
		goto out_put;
	}
	ret = rpage_io_run(&f->req, &f->op,
			   rpage_io_build(&f->req, rpool, offset, NULL, &f->sge,
					  1, &f->op));
	if (ret == -EDEADLK) {
		/* The device may still write the page: it stays the device's. */
		rpage_io_end(peer);
		rpage_peer_io_failed(peer);
		return -ETIMEDOUT;
	}
	rpage_io_unmap_pages(&f->req, &f->sge, 1);
out_put:
	rpage_rpool_put(peer, rpool);
out_end:
	rpage_io_end(peer);
	if (rpage_io_transport_error(ret))
		rpage_peer_io_failed(peer);
out_free:
	kfree(f);
	if (ret) {
		if (page)
			__free_page(page);
		return ret;
	}
	flush_dcache_page(page);
	*pagep = page;
	return 0;
}

/* Makes page @index of @map hold @page (or be absent if NULL). */
static void rpage_page_publish(struct rpage_mapping *map, unsigned long index,
			       struct page *page, bool prefetched)
{
	if (page) {
		xa_store(&map->pages, index, page, GFP_NOWAIT);
		if (prefetched)
			xa_set_mark(&map->pages, index, RPAGE_MARK_PREFETCHED);
	} else {
		xa_erase(&map->pages, index);
	}
	rpage_map_wake(map);
}

/*
 * Claims the absent pages among @nr pages of @map from @first, @stride
 * apart (and inside the mapping), for a prefetch; returns it, NULL if
 * none was absent, or ERR_PTR(-ENOMEM).
 */
static struct rpage_prefetch_run *
rpage_prefetch_claim(struct rpage_mapping *map, unsigned long first, long stride,
		     unsigned long nr, unsigned int depth)
{
	struct rpage_prefetch_run *run;
	unsigned long i, index = first;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return ERR_PTR(-ENOMEM);
	/* The range is the caller's to choose: too large is ENOMEM, no WARN. */
	run->index = kvcalloc(nr, sizeof(*run->index), GFP_KERNEL | __GFP_NOWARN);
	if (!run->index) {
		kfree(run);
		return ERR_PTR(-ENOMEM);
	}
	for (i = 0; i < nr && index < map->nr_pages; i++, index += stride) {
		void *old = xa_cmpxchg(&map->pages, index, NULL,
				       RPAGE_PAGE_BUSY, GFP_KERNEL);

		if (xa_is_err(old))
			break;
		if (!old)
			run->index[run->nr++] = index;
	}
	if (!run->nr) {
		kvfree(run->index);
		kfree(run);
		return NULL;
	}
	kref_get(&map->ref);
	run->map = map;
	run->depth = depth;
	return run;
}

static void rpage_prefetch_free(struct rpage_prefetch_run *run)
{
	rpage_map_put(run->map);
	kvfree(run->ops);
	kvfree(run->sges);
	kvfree(run->pages);
	kvfree(run->index);
	kfree(run);
}

/* Gives up page @i of @run: it becomes absent again. */
static void rpage_prefetch_drop(struct rpage_prefetch_run *run, unsigned long i)
{
	if (run->pages && run->pages[i]) {
		rpage_io_unmap_pages(&run->req, &run->sges[i], 1);
		__free_page(run->pages[i]);
		run->pages[i] = NULL;
	}
	atomic_long_inc(&run->failed);
	rpage_page_publish(run->map, run->index[i], NULL, false);
}

/*
 * A prefetch READ completed (in whichever context polled for it): its
 * pages are here, or absent again.
 */
static void rpage_prefetch_done(struct rpage_io_op *op, int status)
{
	struct rpage_prefetch_run *run = container_of(op->req,
						      struct rpage_prefetch_run,
						      req);
	unsigned int i, end = op->first + op->wr.wr.num_sge;

	for (i = op->first; i < end; i++) {
		if (status) {
			rpage_prefetch_drop(run, i);
			continue;
		}
		rpage_io_unmap_pages(&run->req, &run->sges[i], 1);
		flush_dcache_page(run->pages[i]);
		rpage_page_publish(run->map, run->index[i], run->pages[i], true);
		run->pages[i] = NULL;
	}
	if (!status)
		rpage_fault_count(run->map, RPAGE_FC_PREFETCHED, end - op->first);
}

/*
 * Allocates and maps the first pages of @run, as many as it can; returns
 * how many. Those beyond have no page.
 */
static unsigned int rpage_prefetch_prepare(struct rpage_prefetch_run *run)
{
	unsigned int i, mapped;

	for (i = 0; i < run->nr; i++) {
		run->pages[i] = alloc_page(GFP_HIGHUSER | __GFP_NOWARN);
		if (!run->pages[i])
			break;
	}
	mapped = rpage_io_map_pages(&run->req, run->pages, i, run->sges);
	while (i > mapped) {
		__free_page(run->pages[--i]);
		run->pages[i] = NULL;
	}
	return mapped;
}

/* Reads the pages @run claimed; every claim is settled when it returns. */
static void rpage_prefetch_execute(struct rpage_prefetch_run *run)
{
	struct rpage_mapping *map = run->map;
	struct rpage_peer *peer = map->peer;
	struct rpage_rpool *rpool;
	unsigned int i, nr_ops, ready = 0;
	int ret;

	run->ops = kvcalloc(run->nr, sizeof(*run->ops), GFP_KERNEL | __GFP_NOWARN);
	run->sges = kvcalloc(run->nr, sizeof(*run->sges),
			     GFP_KERNEL | __GFP_NOWARN);
	run->pages = kvcalloc(run->nr, sizeof(*run->pages),
			      GFP_KERNEL | __GFP_NOWARN);
	if (!run->ops || !run->sges || !run->pages ||
	    rpage_io_begin(peer, &run->req.conn))
		goto settle;
	rpool = rpage_rpool_get(peer, map->pool_id, map->pool_offset,
				(u64)map->nr_pages << PAGE_SHIFT, false);
	if (IS_ERR(rpool)) {
		rpage_io_end(peer);
		goto settle;
	}
	ready = rpage_prefetch_prepare(run);
	run->req.depth = run->depth;
	run->req.complete = rpage_prefetch_done;
	nr_ops = rpage_io_build(&run->req, rpool, map->pool_offset, run->index,
				run->sges, ready, run->ops);
	ret = rpage_io_run(&run->req, run->ops, nr_ops);
	if (ret == -EDEADLK) {
		/* The pages the device still has are its; they are absent. */
		for (i = 0; i < ready; i++)
			if (run->pages[i])
				rpage_page_publish(map, run->index[i], NULL, false);
		run->pages = NULL;
		run->sges = NULL;
		run->ops = NULL;
	} else {
		/* Pages a failure kept from being posted are still mapped. */
		for (i = 0; i < ready; i++)
			if (run->pages[i])
				rpage_prefetch_drop(run, i);
		rpage_rpool_put(peer, rpool);
	}
	rpage_io_end(peer);
	if (ret == -EDEADLK || rpage_io_transport_error(ret))
		rpage_peer_io_failed(peer);
settle:
	for (i = ready; i < run->nr; i++)
		rpage_prefetch_drop(run, i);
}

static void rpage_prefetch_work_fn(struct work_struct *work)
{
	struct rpage_prefetch_run *run = container_of(work,
						      struct rpage_prefetch_run,
						      work);

	rpage_prefetch_execute(run);
	rpage_prefetch_free(run);
}

/* Queues @run in the background. */
static void rpage_prefetch_queue(struct rpage_prefetch_run *run)
{
	INIT_WORK(&run->work, rpage_prefetch_work_fn);
	queue_work(rpage_prefetch_wq, &run->work);
}

long rpage_ioctl_prefetch(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_prefetch_run *run;
	struct rpage_mapping *map;
	struct rpage_prefetch arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~RPAGE_PREFETCH_FLAGS_ALL ||
	    arg.depth > RPAGE_PREFETCH_DEPTH_MAX ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)) ||
	    !rpage_page_range_valid(arg.offset, arg.length))
		return -EINVAL;
	map = rpage_map_get_range(rfile, arg.map_id, arg.offset, arg.length);
	if (IS_ERR(map))
		return PTR_ERR(map);
	run = rpage_prefetch_claim(map, arg.offset >> PAGE_SHIFT, 1,
				   arg.length >> PAGE_SHIFT,
				   arg.depth ?: RPAGE_PREFETCH_DEPTH_DEFAULT);
	if (IS_ERR(run)) {
		rpage_map_put(map);
		return PTR_ERR(run);
	}
	arg.queued = 0;
	arg.failed = 0;
	if (!run)
		goto out;
	arg.queued = run->nr;
	if (arg.flags & RPAGE_PREFETCH_WAIT) {
		rpage_prefetch_execute(run);
		arg.failed = atomic_long_read(&run->failed);
		rpage_prefetch_free(run);
	} else {
		rpage_prefetch_queue(run);
	}
out:
	rpage_map_put(map);
	return copy_to_user(argp, &arg, sizeof(arg)) ? -EFAULT : 0;
}

/*
 * Read-ahead: a fault at @index that continues the stride of the last
 * faults reads the next window of pages along it, a window that doubles
 * each time the pattern holds, up to RPAGE_RA_MAX pages.
 */
static void rpage_readahead(struct rpage_mapping *map, unsigned long index)
{
	struct rpage_prefetch_run *run;
	long at = index, next = 0, stride;
	unsigned int window = 0;

	if (!(map->flags & RPAGE_MAP_READAHEAD))
		return;
	spin_lock(&map->ra_lock);
	stride = at - map->ra_last;
	if (stride && stride == map->ra_stride) {
		/* Refill when the fault gets within half a window of the end. */
		if ((map->ra_next - at) / stride <= (long)map->ra_window / 2) {
			window = clamp(map->ra_window * 2, RPAGE_RA_MIN,
				       RPAGE_RA_MAX);
			if ((map->ra_next - at) / stride <= 0)
				map->ra_next = at + stride;
			next = map->ra_next;
			map->ra_window = window;
			map->ra_next += stride * window;
		}
	} else {
		map->ra_stride = abs(stride) <= RPAGE_RA_MAX_STRIDE ? stride : 0;
		map->ra_window = 0;
		map->ra_next = at + stride;
	}
	map->ra_last = at;
	spin_unlock(&map->ra_lock);

	if (!window || next < 0 || next >= (long)map->nr_pages)
		return;
	run = rpage_prefetch_claim(map, next, stride, window, window);
	if (!IS_ERR_OR_NULL(run))
		rpage_prefetch_queue(run);
}

/*
 * Finds page @index of @map here, takes a reference for the fault and
 * says whether prefetch brought it; or claims it if absent. Returns the
 * page, NULL if claimed, or RPAGE_PAGE_BUSY if it is busy.
 */
static void *rpage_page_lookup(struct rpage_mapping *map, unsigned long index,
			       bool *prefetched)
{
	XA_STATE(xas, &map->pages, index);
	void *entry;

	do {
		xas_lock(&xas);
		entry = xas_load(&xas);
		if (!entry) {
			xas_store(&xas, RPAGE_PAGE_BUSY);
		} else if (!xa_is_value(entry)) {
			get_page(entry);
			*prefetched = xas_get_mark(&xas, RPAGE_MARK_PREFETCHED);
			if (*prefetched)
				xas_clear_mark(&xas, RPAGE_MARK_PREFETCHED);
		}
		xas_unlock(&xas);
	} while (xas_nomem(&xas, GFP_KERNEL));
	if (xas_error(&xas))
		return ERR_PTR(xas_error(&xas));
	return entry;
}

/* Makes page @index of @map here; returns how. */
static enum rpage_fault_result rpage_fault_page(struct rpage_mapping *map,
						unsigned long index,
						struct page **pagep, int *err)
{
	bool waited = false, prefetched = false;
	struct page *page;
	void *entry;

	rpage_readahead(map, index);
	for (;;) {
		entry = rpage_page_lookup(map, index, &prefetched);
		if (IS_ERR(entry)) {
			*err = PTR_ERR(entry);
			return RPAGE_FAULT_SIGBUS;
		}
		if (entry != RPAGE_PAGE_BUSY)
			break;
		waited = true;
		if (wait_var_event_killable(map, xa_load(&map->pages, index) !=
					    RPAGE_PAGE_BUSY)) {
			*err = -EINTR;
			return RPAGE_FAULT_SIGBUS;
		}
	}
	if (entry) {
		*pagep = entry;
		if (prefetched)
			rpage_fault_count(map, RPAGE_FC_PREFETCH_HITS, 1);
		return waited ? RPAGE_FAULT_WAITED : RPAGE_FAULT_MINOR;
	}

	/* Claimed: this fault reads the page. */
	*err = rpage_fetch_page(map, index, &page);
	if (*err) {
		rpage_page_publish(map, index, NULL, false);
		return RPAGE_FAULT_SIGBUS;
	}
	/* One reference for the mapping's table, one for the page table. */
	get_page(page);
	rpage_page_publish(map, index, page, false);
	*pagep = page;
	return RPAGE_FAULT_FETCHED;
}

vm_fault_t rpage_vm_fault(struct vm_fault *vmf)
{
	struct rpage_mapping *map = vmf->vma->vm_private_data;
	unsigned long index = vmf->pgoff - map->pgoff;
	enum rpage_fault_result result;
	u64 begin = ktime_get_ns();
	vm_fault_t ret = 0;
	int err = 0;

	trace_rpage_fault_begin(map->id, index, vmf->address,
				vmf->flags & FAULT_FLAG_WRITE);
	if (index >= map->nr_pages) {
		result = RPAGE_FAULT_SIGBUS;
		err = -ERANGE;
	} else {
		result = rpage_fault_page(map, index, &vmf->page, &err);
	}
	switch (result) {
	case RPAGE_FAULT_FETCHED:
		rpage_fault_count(map, RPAGE_FC_FAULTS, 1);
		ret = VM_FAULT_MAJOR;
		break;
	case RPAGE_FAULT_MINOR:
		rpage_fault_count(map, RPAGE_FC_MINOR, 1);
		break;
	case RPAGE_FAULT_WAITED:
		rpage_fault_count(map, RPAGE_FC_WAITS, 1);
		break;
	case RPAGE_FAULT_SIGBUS:
		if (err == -ENOMEM) {
			ret = VM_FAULT_OOM;
			break;
		}
		/* A fatal signal ends the process anyway: not rpage's SIGBUS. */
		if (err != -EINTR)
			rpage_fault_count(map, RPAGE_FC_SIGBUS, 1);
		ret = VM_FAULT_SIGBUS;
		break;
	}
	rpage_fault_count_latency(map, ktime_get_ns() - begin);
	trace_rpage_fault_end(map->id, index, result, ktime_get_ns() - begin);
	return ret;
}

int rpage_fault_init(void)
{
	rpage_prefetch_wq = alloc_workqueue("rpage_prefetch", WQ_UNBOUND, 0);
	return rpage_prefetch_wq ? 0 : -ENOMEM;
}

void rpage_fault_exit(void)
{
	destroy_workqueue(rpage_prefetch_wq);
}
