// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the fault path - a first touch of a page of a remote mapping
 * reads it from the peer inside the page fault; prefetch and read-ahead
 * read pages before they are touched.
 *
 * A fault claims its absent page by making it busy and reads it with
 * rpage_xfer() on the queue pair of its CPU, polling for the completion
 * itself; other faults on the same page wait for that READ, so a page is
 * read once however many threads touch it. A READ that takes long (past
 * a millisecond of polling, or a peer reconnecting) is waited for without
 * mmap_lock, when the fault allows (FAULT_FLAG_ALLOW_RETRY): the handler
 * drops it and answers VM_FAULT_RETRY, and the retried fault finds the
 * page. A fault that may not wait (FAULT_FLAG_RETRY_NOWAIT) only starts
 * the READ. Prefetch claims every absent page of its range before it
 * returns and reads them from a worker, up to a queue depth of READs at
 * a time, publishing the pages as their READ completes.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait_bit.h>

/* Read-ahead windows, in pages, and the largest stride it follows. */
#define RPAGE_RA_MIN		4
#define RPAGE_RA_MAX		64
#define RPAGE_RA_MAX_STRIDE	64

/* Prefetches without RPAGE_PREFETCH_WAIT, read-ahead, and reads started
 * for FAULT_FLAG_RETRY_NOWAIT faults run here.
 */
static struct workqueue_struct *rpage_prefetch_wq;

/*
 * Pages a prefetch claims and reads at a time: four times its depth,
 * within these. The READs of a chunk drain before the next chunk's
 * start, so a chunk of one depth would idle the queue pair once per
 * round trip; of four, once per four (`make bench`'s prefetch + touch
 * lost 15-20% of its throughput with chunks of one depth).
 */
#define RPAGE_PREFETCH_CHUNK_DEPTHS	4
#define RPAGE_PREFETCH_CHUNK_MIN	1
#define RPAGE_PREFETCH_CHUNK_MAX	RPAGE_PREFETCH_DEPTH_MAX

/**
 * struct rpage_prefetch_chunk - pages of a prefetch claimed together
 * @nr: how many.
 * @index: their indexes in the mapping.
 * @pages: the pages they are read into, once allocated.
 */
struct rpage_prefetch_chunk {
	unsigned long nr;
	unsigned long *index;
	struct page **pages;
};

/**
 * struct rpage_prefetch_run - one prefetch (or read-ahead) of a mapping
 * @work: runs it in the background.
 * @map: the mapping, referenced.
 * @next: the next index it considers.
 * @stride: the distance between the indexes it reads.
 * @left: indexes left to consider from @next.
 * @depth: READs in flight at once.
 * @for_fault: it reads the one page of a fault that could not wait:
 *	neither counted nor marked as prefetched.
 * @killable: run by the caller's task, which a fatal signal ends.
 * @failed: pages whose READ failed, or that were never read.
 * @chunk_max: pages per chunk.
 * @cur: the chunk being read.
 * @ahead: the chunk claimed next: a fault on one of its pages waits for
 *	it, as for @cur; a fault on a page further on reads it itself.
 *
 * A prefetch claims its pages a chunk at a time, as it reaches them, so
 * that what it keeps is bounded (two chunks of pages and bookkeeping,
 * whatever its length) and a fault far ahead of it is not made to wait
 * for every page before its own.
 */
struct rpage_prefetch_run {
	struct work_struct work;
	struct rpage_mapping *map;
	unsigned long next;
	long stride;
	unsigned long left;
	unsigned int depth;
	bool for_fault;
	bool killable;
	atomic_long_t failed;
	unsigned int chunk_max;
	struct rpage_prefetch_chunk cur;
	struct rpage_prefetch_chunk ahead;
};

/**
 * struct rpage_fault_ctx - one call of the fault handler
 * @vmf: the fault.
 * @map: the mapping faulted on.
 * @unlocked: the handler dropped mmap_lock (and took a reference on
 *	@map, which the area may no longer hold): it must return
 *	VM_FAULT_RETRY and touch neither @vmf->vma nor the area again.
 * @counted: a fault answered VM_FAULT_RETRY was counted already (it read
 *	or waited for its page): its latency is recorded now, not on retry.
 */
struct rpage_fault_ctx {
	struct vm_fault *vmf;
	struct rpage_mapping *map;
	bool unlocked;
	bool counted;
};

/*
 * Whether the fault may drop mmap_lock to wait: the caller allows a
 * retry (FAULT_FLAG_ALLOW_RETRY), and is not one that wants the lock
 * kept and no wait at all (FAULT_FLAG_RETRY_NOWAIT).
 */
static bool rpage_fault_may_unlock(const struct vm_fault *vmf)
{
	return (vmf->flags & FAULT_FLAG_ALLOW_RETRY) &&
	       !(vmf->flags & FAULT_FLAG_RETRY_NOWAIT);
}

/*
 * Drops mmap_lock before a long wait, as filemap_fault() does for I/O,
 * so that the process's other threads (its mmap()s, its faults, readers
 * of /proc/PID) and its killer never wait for the network. The fault is
 * then answered with VM_FAULT_RETRY and the retried fault finds the page.
 */
static void rpage_fault_unlock(struct rpage_fault_ctx *fc)
{
	if (fc->unlocked || !rpage_fault_may_unlock(fc->vmf))
		return;
	kref_get(&fc->map->ref);
	rpage_release_fault_lock(fc->vmf);
	fc->unlocked = true;
}

static void rpage_fault_xfer_slow(struct rpage_xfer *x)
{
	rpage_fault_unlock(x->priv);
}

/*
 * Reads page @index of @map into a new page for the fault @fc; 0 and
 * *@pagep, or -errno.
 */
static int rpage_fetch_page(struct rpage_fault_ctx *fc, unsigned long index,
			    struct page **pagep)
{
	struct rpage_xfer_range range;
	struct rpage_xfer x;
	struct page *page;
	int ret;

	/* Charged to the faulting process's memory cgroup. */
	page = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT);
	if (!page)
		return -ENOMEM;
	rpage_map_xfer_init(fc->map, &x, &range, false);
	range.index = &index;
	range.nr = 1;
	x.pages = &page;
	x.nr_pages = 1;
	x.killable = true;
	x.slow = rpage_fault_xfer_slow;
	x.priv = fc;
	ret = rpage_xfer(&x);
	rpage_map_xfer_release(&x);
	if (ret) {
		/* The transfer keeps its own reference if the device kept it. */
		put_page(page);
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
 * A prefetch of @nr pages of @map from @first, @stride apart, none
 * claimed yet; NULL without memory. Its bookkeeping is two chunks.
 */
static struct rpage_prefetch_run *rpage_prefetch_alloc(struct rpage_mapping *map,
						       unsigned long first,
						       long stride,
						       unsigned long nr,
						       unsigned int depth)
{
	unsigned int chunk = clamp_t(unsigned int,
				     depth * RPAGE_PREFETCH_CHUNK_DEPTHS,
				     RPAGE_PREFETCH_CHUNK_MIN,
				     RPAGE_PREFETCH_CHUNK_MAX);
	struct rpage_prefetch_run *run;
	void *mem;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return NULL;
	mem = kcalloc(2 * chunk, sizeof(unsigned long) + sizeof(struct page *),
		      GFP_KERNEL);
	if (!mem) {
		kfree(run);
		return NULL;
	}
	run->cur.index = mem;
	run->ahead.index = run->cur.index + chunk;
	run->cur.pages = (struct page **)(run->ahead.index + chunk);
	run->ahead.pages = run->cur.pages + chunk;
	run->chunk_max = chunk;
	kref_get(&map->ref);
	run->map = map;
	run->next = first;
	run->stride = stride;
	run->left = nr;
	run->depth = depth;
	return run;
}

static void rpage_prefetch_free(struct rpage_prefetch_run *run)
{
	rpage_map_put(run->map);
	/* The chunks' arrays are one allocation, from cur.index on. */
	kfree(min(run->cur.index, run->ahead.index));
	kfree(run);
}

/*
 * Claims into @chunk the absent pages among the next ones of @run, up to
 * a chunk of them; returns how many.
 */
static unsigned long rpage_prefetch_claim(struct rpage_prefetch_run *run,
					  struct rpage_prefetch_chunk *chunk)
{
	struct rpage_mapping *map = run->map;
	unsigned long scanned = 0;

	chunk->nr = 0;
	for (; run->left && chunk->nr < run->chunk_max;
	     run->left--, run->next += run->stride) {
		void *old;

		if (run->next >= map->nr_pages) {
			run->left = 0;
			break;
		}
		old = xa_cmpxchg(&map->pages, run->next, NULL, RPAGE_PAGE_BUSY,
				 GFP_KERNEL);
		if (xa_is_err(old)) {
			run->left = 0;
			break;
		}
		if (!old)
			chunk->index[chunk->nr++] = run->next;
		/* A range mostly here already is long to walk. */
		if (!(++scanned % 1024))
			cond_resched();
	}
	return chunk->nr;
}

/* Gives up page @i of @chunk: it becomes absent again. */
static void rpage_prefetch_drop(struct rpage_prefetch_run *run,
				struct rpage_prefetch_chunk *chunk,
				unsigned long i)
{
	if (chunk->pages[i]) {
		put_page(chunk->pages[i]);
		chunk->pages[i] = NULL;
	}
	atomic_long_inc(&run->failed);
	rpage_page_publish(run->map, chunk->index[i], NULL, false);
}

/* Gives up every page of @chunk. */
static void rpage_prefetch_drop_chunk(struct rpage_prefetch_run *run,
				      struct rpage_prefetch_chunk *chunk)
{
	unsigned long i;

	for (i = 0; i < chunk->nr; i++)
		rpage_prefetch_drop(run, chunk, i);
	chunk->nr = 0;
}

/* Pages of a prefetch are done: here, or absent again. */
static void rpage_prefetch_done(struct rpage_xfer *x, unsigned long first,
				unsigned long nr, int status)
{
	struct rpage_prefetch_run *run = x->priv;
	struct rpage_prefetch_chunk *chunk = &run->cur;
	unsigned long i;

	for (i = first; i < first + nr; i++) {
		if (status) {
			rpage_prefetch_drop(run, chunk, i);
			continue;
		}
		flush_dcache_page(chunk->pages[i]);
		rpage_page_publish(run->map, chunk->index[i], chunk->pages[i],
				   !run->for_fault);
		chunk->pages[i] = NULL;
	}
	if (!status && !run->for_fault)
		rpage_fault_count(run->map, RPAGE_FC_PREFETCHED, nr);
}

/*
 * How many of @nr pages a prefetch may take now: what the host has
 * available (free, and page cache it could reclaim) above the reserve
 * of prefetch_reserve_pct. A fault's own page is not speculative and is
 * not held to it.
 */
static unsigned long rpage_prefetch_allowance(struct rpage_prefetch_run *run,
					      unsigned long nr)
{
	unsigned int pct = READ_ONCE(rpage_prefetch_reserve_pct);
	unsigned long reserve;
	long avail;

	if (run->for_fault || !pct)
		return nr;
	reserve = totalram_pages() / 100 * pct;
	avail = si_mem_available();
	if (avail <= 0 || (unsigned long)avail <= reserve)
		return 0;
	return min_t(unsigned long, nr, avail - reserve);
}

/*
 * Allocates the pages of @chunk, charged to the memory cgroup of the
 * process that made the mapping; returns how many it got. A prefetch
 * never makes the kernel kill a process for memory, nor takes the
 * host's reserve: it stops instead. *@low says it stopped for the
 * reserve rather than for a failed allocation.
 */
static unsigned long rpage_prefetch_alloc_pages(struct rpage_prefetch_run *run,
						struct rpage_prefetch_chunk *chunk,
						bool *low)
{
	unsigned long i, nr = rpage_prefetch_allowance(run, chunk->nr);
	struct mem_cgroup *old = set_active_memcg(run->map->memcg);

	for (i = 0; i < nr; i++) {
		chunk->pages[i] = alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT |
					     __GFP_NORETRY | __GFP_NOWARN);
		if (!chunk->pages[i])
			break;
	}
	set_active_memcg(old);
	*low = i == nr && nr < chunk->nr;
	return i;
}

/*
 * Reads the pages of @run->cur; every one is settled when it returns.
 * Returns whether the prefetch goes on: not after a failure (no memory,
 * a kill, the pool or the peer gone), which the pages after it would
 * only meet again; they stay absent, for faults to read.
 */
static bool rpage_prefetch_read_chunk(struct rpage_prefetch_run *run)
{
	struct rpage_prefetch_chunk *chunk = &run->cur;
	struct rpage_xfer_range range;
	unsigned long i, ready;
	struct rpage_xfer x;
	bool low;
	int ret = 0;

	ready = rpage_prefetch_alloc_pages(run, chunk, &low);
	if (ready) {
		rpage_map_xfer_init(run->map, &x, &range, false);
		range.index = chunk->index;
		range.nr = ready;
		x.pages = chunk->pages;
		x.nr_pages = ready;
		x.depth = run->depth;
		x.killable = run->killable;
		x.done = rpage_prefetch_done;
		x.priv = run;
		ret = rpage_xfer(&x);
		rpage_map_xfer_release(&x);
	}
	if (ready < chunk->nr) {
		pr_info_ratelimited("mapping %u: prefetch stopped, %s, with %lu pages left unfetched\n",
				    run->map->id, low ?
				    "memory down to prefetch_reserve_pct" :
				    "out of memory",
				    chunk->nr - ready + run->ahead.nr + run->left);
		for (i = ready; i < chunk->nr; i++)
			rpage_prefetch_drop(run, chunk, i);
		ret = -ENOMEM;
	}
	chunk->nr = 0;
	return !ret;
}

/*
 * Claims the first chunks of @run: what is claimed before the ioctl
 * returns, so that touching the first pages right after waits for the
 * prefetch. Returns whether anything was claimed.
 */
static bool rpage_prefetch_start(struct rpage_prefetch_run *run)
{
	rpage_prefetch_claim(run, &run->cur);
	rpage_prefetch_claim(run, &run->ahead);
	return run->cur.nr || run->ahead.nr;
}

/* Reads what @run claims, a chunk at a time, one claimed ahead. */
static void rpage_prefetch_execute(struct rpage_prefetch_run *run)
{
	while (run->cur.nr || run->ahead.nr) {
		if (run->cur.nr && !rpage_prefetch_read_chunk(run))
			break;
		swap(run->cur, run->ahead);
		rpage_prefetch_claim(run, &run->ahead);
	}
	/* Stopped early: what is claimed goes back, the rest stays absent. */
	rpage_prefetch_drop_chunk(run, &run->cur);
	rpage_prefetch_drop_chunk(run, &run->ahead);
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

/* Pages of @map in [@first, @first + @nr) that are absent now. */
static unsigned long rpage_pages_absent(struct rpage_mapping *map,
					unsigned long first, unsigned long nr)
{
	unsigned long index, absent = nr;
	void *entry;

	xa_for_each_range(&map->pages, index, entry, first, first + nr - 1) {
		absent--;
		if (!(absent % 1024))
			cond_resched();
	}
	return absent;
}

long rpage_ioctl_prefetch(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_prefetch_run *run;
	struct rpage_mapping *map;
	struct rpage_prefetch arg;
	unsigned long first, nr;
	long ret = 0;

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
	first = arg.offset >> PAGE_SHIFT;
	nr = arg.length >> PAGE_SHIFT;
	arg.failed = 0;
	arg.queued = rpage_pages_absent(map, first, nr);
	if (!arg.queued)
		goto out;
	/* The pages not here have nowhere to come from any more. */
	if (!rcu_access_pointer(map->peer)) {
		ret = -ENOTCONN;
		goto out;
	}
	run = rpage_prefetch_alloc(map, first, 1, nr,
				   arg.depth ?: RPAGE_PREFETCH_DEPTH_DEFAULT);
	if (!run) {
		ret = -ENOMEM;
		goto out;
	}
	if (!rpage_prefetch_start(run)) {
		rpage_prefetch_free(run);
		goto out;
	}
	if (arg.flags & RPAGE_PREFETCH_WAIT) {
		run->killable = true;
		rpage_prefetch_execute(run);
		arg.failed = atomic_long_read(&run->failed);
		rpage_prefetch_free(run);
		if (fatal_signal_pending(current))
			ret = -EINTR;
	} else {
		rpage_prefetch_queue(run);
	}
out:
	rpage_map_put(map);
	if (!ret && copy_to_user(argp, &arg, sizeof(arg)))
		ret = -EFAULT;
	return ret;
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
	run = rpage_prefetch_alloc(map, next, stride, window, window);
	if (!run)
		return;
	if (rpage_prefetch_start(run))
		rpage_prefetch_queue(run);
	else
		rpage_prefetch_free(run);
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

/*
 * A fault that may not wait (FAULT_FLAG_RETRY_NOWAIT: KVM's asynchronous
 * page faults, GUP with FOLL_NOWAIT) claimed page @index: its READ runs
 * in the background, and the fault is retried once the page is here.
 */
static void rpage_fault_start_read(struct rpage_mapping *map,
				   unsigned long index)
{
	struct rpage_prefetch_run *run = rpage_prefetch_alloc(map, index, 1, 0, 1);

	if (!run) {
		/* The next fault on it reads it. */
		rpage_page_publish(map, index, NULL, false);
		return;
	}
	/* The fault claimed the page already. */
	run->cur.index[0] = index;
	run->cur.nr = 1;
	run->for_fault = true;
	rpage_prefetch_queue(run);
}

/*
 * Waits for busy page @index of @map to settle, without mmap_lock when
 * the fault allows. Returns RPAGE_FAULT_RETRY to have the fault retried,
 * 0 to look again, or RPAGE_FAULT_SIGBUS (killed, the lock held).
 */
static int rpage_fault_wait(struct rpage_fault_ctx *fc, unsigned long index,
			    int *err)
{
	struct rpage_mapping *map = fc->map;

	if (fc->vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return RPAGE_FAULT_RETRY;
	rpage_fault_unlock(fc);
	if (wait_var_event_killable(map, xa_load(&map->pages, index) !=
				    RPAGE_PAGE_BUSY)) {
		*err = -EINTR;
		return fc->unlocked ? RPAGE_FAULT_RETRY : RPAGE_FAULT_SIGBUS;
	}
	return fc->unlocked ? RPAGE_FAULT_RETRY : 0;
}

/* Makes page @index of the mapping here for fault @fc; returns how. */
/*
 * Locks @page, which the fault holds, found at @index of @map, for the
 * fault to return it locked (VM_FAULT_LOCKED): core mm maps it and only
 * then unlocks it. An eviction takes the same lock before it zaps the
 * page's mappings and drops it, so it either waits for that mapping and
 * zaps it, or drops the page before the fault locks it - and then the
 * page is no longer at @index, which the fault checks under the lock.
 * Returns 0 with the page locked, -EAGAIN if it left @index (the fault
 * looks again), or -EWOULDBLOCK for a fault that may not wait.
 */
static int rpage_fault_lock_page(struct rpage_fault_ctx *fc, struct page *page,
				 unsigned long index)
{
	if (!trylock_page(page)) {
		if (fc->vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
			return -EWOULDBLOCK;
		/* Held only while an eviction zaps or a fault maps: short. */
		lock_page(page);
	}
	if (xa_load(&fc->map->pages, index) != page) {
		unlock_page(page);
		return -EAGAIN;
	}
	/* Deleted by force meanwhile: see rpage_map_kill(). */
	if (READ_ONCE(fc->map->dead)) {
		unlock_page(page);
		return -ENXIO;
	}
	return 0;
}

static enum rpage_fault_result rpage_fault_page(struct rpage_fault_ctx *fc,
						unsigned long index, int *err)
{
	struct rpage_mapping *map = fc->map;
	bool waited = false, prefetched = false;
	struct page *page;
	void *entry;
	int ret;

	rpage_readahead(map, index);
again:
	for (;;) {
		entry = rpage_page_lookup(map, index, &prefetched);
		if (IS_ERR(entry)) {
			*err = PTR_ERR(entry);
			return RPAGE_FAULT_SIGBUS;
		}
		if (entry != RPAGE_PAGE_BUSY)
			break;
		waited = true;
		ret = rpage_fault_wait(fc, index, err);
		if (ret) {
			if (ret == RPAGE_FAULT_RETRY && !*err) {
				rpage_fault_count(map, RPAGE_FC_WAITS, 1);
				fc->counted = true;
			}
			return ret;
		}
	}
	if (entry) {
		page = entry;
		ret = rpage_fault_lock_page(fc, page, index);
		if (ret) {
			put_page(page);
			if (ret == -EAGAIN)
				goto again;
			if (ret == -ENXIO) {
				*err = ret;
				return RPAGE_FAULT_SIGBUS;
			}
			return RPAGE_FAULT_RETRY;
		}
		fc->vmf->page = page;
		if (prefetched)
			rpage_fault_count(map, RPAGE_FC_PREFETCH_HITS, 1);
		return waited ? RPAGE_FAULT_WAITED : RPAGE_FAULT_MINOR;
	}

	/* Claimed: this fault reads the page. */
	if (fc->vmf->flags & FAULT_FLAG_RETRY_NOWAIT) {
		rpage_fault_start_read(map, index);
		rpage_fault_count(map, RPAGE_FC_FAULTS, 1);
		fc->counted = true;
		return RPAGE_FAULT_RETRY;
	}
	*err = rpage_fetch_page(fc, index, &page);
	if (*err) {
		rpage_page_publish(map, index, NULL, false);
		/* Without the lock, the retried fault reports it. */
		return fc->unlocked ? RPAGE_FAULT_RETRY : RPAGE_FAULT_SIGBUS;
	}
	rpage_fault_count(map, RPAGE_FC_FAULTS, 1);
	fc->counted = true;
	if (fc->unlocked) {
		/* The mapping's table holds the page; the retry maps it. */
		rpage_page_publish(map, index, page, false);
		return RPAGE_FAULT_RETRY;
	}
	/*
	 * One reference for the mapping's table, one for the page table;
	 * locked before anyone can see it (see rpage_fault_lock_page()).
	 */
	get_page(page);
	lock_page(page);
	rpage_page_publish(map, index, page, false);
	/*
	 * Pairs with rpage_map_kill(): it either sees the page in the table
	 * (and waits for its lock before it zaps), or the fault sees it dead.
	 */
	smp_mb();
	if (READ_ONCE(map->dead)) {
		unlock_page(page);
		put_page(page);
		*err = -ENXIO;
		return RPAGE_FAULT_SIGBUS;
	}
	fc->vmf->page = page;
	return RPAGE_FAULT_FETCHED;
}

vm_fault_t rpage_vm_fault(struct vm_fault *vmf)
{
	struct rpage_mapping *map = vmf->vma->vm_private_data;
	struct rpage_fault_ctx fc = { .vmf = vmf, .map = map };
	unsigned long index = vmf->pgoff - map->pgoff;
	enum rpage_fault_result result;
	u64 begin = ktime_get_ns();
	bool counted = true;
	vm_fault_t ret = 0;
	int err = 0;

	trace_rpage_fault_begin(map->id, index, vmf->address,
				vmf->flags & FAULT_FLAG_WRITE);
	if (index >= map->nr_pages) {
		result = RPAGE_FAULT_SIGBUS;
		err = -ERANGE;
	} else if (READ_ONCE(map->dead)) {
		/* A named mapping deleted by force: see rpage-named.c. */
		result = RPAGE_FAULT_SIGBUS;
		err = -ENXIO;
	} else {
		result = rpage_fault_page(&fc, index, &err);
	}
	switch (result) {
	case RPAGE_FAULT_FETCHED:
		ret = VM_FAULT_MAJOR | VM_FAULT_LOCKED;
		break;
	case RPAGE_FAULT_MINOR:
		/* A retried fault finding its page was counted the first time. */
		if (vmf->flags & FAULT_FLAG_TRIED)
			counted = false;
		else
			rpage_fault_count(map, RPAGE_FC_MINOR, 1);
		ret = VM_FAULT_LOCKED;
		break;
	case RPAGE_FAULT_WAITED:
		rpage_fault_count(map, RPAGE_FC_WAITS, 1);
		ret = VM_FAULT_LOCKED;
		break;
	case RPAGE_FAULT_RETRY:
		counted = fc.counted;
		ret = VM_FAULT_RETRY;
		break;
	case RPAGE_FAULT_SIGBUS:
		if (err == -ENOMEM) {
			ret = VM_FAULT_OOM;
			break;
		}
		/* A fatal signal ends the process anyway: not rpage's SIGBUS. */
		if (err != -EINTR)
			rpage_fault_count(map, RPAGE_FC_SIGBUS, 1);
		else
			counted = false;
		ret = VM_FAULT_SIGBUS;
		break;
	}
	if (counted)
		rpage_fault_count_latency(map, ktime_get_ns() - begin);
	trace_rpage_fault_end(map->id, index, result, err,
			      ktime_get_ns() - begin);
	/* The area may be gone: only the reference taken to unlock holds @map. */
	if (fc.unlocked)
		rpage_map_put(map);
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
