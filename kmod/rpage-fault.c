// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the fault path - a first touch of a page of a remote mapping
 * reads it from the peer inside the page fault; prefetch and read-ahead
 * read pages before they are touched.
 *
 * The pages are folios in the mapping's page cache (rpage-fs.c). A fault
 * on an absent page puts a new folio there, locked and not up to date,
 * charged to the memory cgroup of the process whose memory it is, and
 * reads it with rpage_xfer() on the queue pair of its CPU, polling for
 * the completion itself; other faults on that page wait for the folio's
 * lock, so a page is read once however many threads touch it, and only
 * the faults on that folio are woken when it arrives. A READ that takes
 * long (past a millisecond of polling, or a peer reconnecting) is waited
 * for without mmap_lock, when the fault allows (FAULT_FLAG_ALLOW_RETRY):
 * the handler drops it and answers VM_FAULT_RETRY, and the retried fault
 * finds the page, as filemap_fault() does for I/O. A fault that may not
 * wait (FAULT_FLAG_RETRY_NOWAIT) only starts the READ: it posts it itself
 * (rpage_xfer_start(); RDMA and loop), the folio unlocked where its
 * completion is polled, or over TCP hands it to a worker. Prefetch puts the
 * absent pages of its range in the page cache a chunk at a time and
 * reads them from a worker, up to a queue depth of READs at a time; each
 * folio is unlocked, up to date, as its READ completes. A folio whose
 * READ failed leaves the page cache, and the next touch reads it again.
 */
#include "rpage-pri.h"
#include "rpage-trace.h"

#include <linux/highmem.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* Read-ahead windows, in pages, and the largest stride it follows. */
#define RPAGE_RA_MIN		4
#define RPAGE_RA_MAX		64
#define RPAGE_RA_MAX_STRIDE	64

/*
 * Prefetches without RPAGE_PREFETCH_WAIT, read-ahead, and the reads of
 * FAULT_FLAG_RETRY_NOWAIT faults that could not post their own run here.
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

/*
 * On an RPAGE_MAP_HUGE mapping a chunk holds whole 2 MiB folios, at
 * least four: a READ each, four in flight (two chunks, 16 MiB, held
 * locked at most).
 */
#define RPAGE_PREFETCH_CHUNK_HUGE	(4 * RPAGE_HUGE_NR)

/**
 * struct rpage_prefetch_chunk - pages of a prefetch claimed together
 * @nr: how many.
 * @index: their indexes in the mapping.
 * @pages: the pages of their folios, locked in the page cache, which the
 *	chunk holds a reference to until their READ ends; a 2 MiB folio's
 *	pages follow each other, from its first.
 * @reclaimed: whether reclaim had dropped each one (it is read again).
 * @left: at the entry of a folio's first page, how many of its pages
 *	have not been reported done: the folio is settled with its last.
 * @failed: at the same entry, whether a READ of one of them failed.
 */
struct rpage_prefetch_chunk {
	unsigned long nr;
	unsigned long *index;
	struct page **pages;
	bool *reclaimed;
	unsigned short *left;
	bool *failed;
};

/**
 * struct rpage_prefetch_run - one prefetch (or read-ahead) of a mapping
 * @work: runs it in the background.
 * @map: the mapping, referenced.
 * @next: the next index it considers.
 * @stride: the distance between the indexes it reads.
 * @left: indexes left to consider from @next.
 * @depth: READs in flight at once.
 * @huge: it reads the absent 2 MiB regions of an RPAGE_MAP_HUGE mapping
 *	whole, each into one folio, as a fault would.
 * @for_fault: it reads the one page of a fault that could not wait:
 *	neither counted nor marked as prefetched.
 * @killable: run by the caller's task, which a fatal signal ends.
 * @failed: pages whose READ failed, or that were never read.
 * @queued: RPAGE_IOC_PREFETCH's: the pages it found absent (its event
 *	says how many it read); 0 for the others.
 * @stopped: why it stopped claiming pages before its end, for the log
 *	(NULL while it has not).
 * @memcg: what its pages are charged to, referenced (NULL: the caller's).
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
	bool huge;
	bool for_fault;
	bool killable;
	atomic_long_t failed;
	unsigned long queued;
	const char *stopped;
	struct mem_cgroup *memcg;
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
 * Puts a new folio of @order for page @index of @map (the first of its
 * pages) in its page cache, locked and not up to date, for the caller to
 * read: charged to @memcg, or where @memcg is NULL to the caller's
 * memory cgroup, with @gfp. Returns the folio with a reference of the
 * caller's, ERR_PTR(-EEXIST) if a page of it is there already (here, or
 * being read), or ERR_PTR(-ENOMEM). A 2 MiB folio is allocated without
 * reclaim or compaction (as THP faults allocate by default): where none
 * is free, the caller takes 4 KiB rather than wait.
 */
static struct folio *rpage_folio_create(struct rpage_mapping *map,
					pgoff_t index, unsigned int order,
					gfp_t gfp, struct mem_cgroup *memcg)
{
	struct mem_cgroup *old;
	struct folio *folio;
	int ret;

	folio = filemap_alloc_folio(order ? GFP_TRANSHUGE_LIGHT | __GFP_NORETRY :
				    gfp, order);
	if (!folio)
		return ERR_PTR(-ENOMEM);
	/* The page cache charges the active cgroup, or the caller's. */
	if (memcg) {
		old = set_active_memcg(memcg);
		ret = filemap_add_folio(map->mapping, folio, index, gfp);
		set_active_memcg(old);
	} else {
		ret = filemap_add_folio(map->mapping, folio, index, gfp);
	}
	if (ret) {
		folio_put(folio);
		return ERR_PTR(ret);
	}
	return folio;
}

/*
 * Ends a READ into @folio (locked, the caller's reference) that failed,
 * or that never ran: the folio leaves the page cache, and the next touch
 * of its page reads it again. A transport that could not get the page
 * back from its device holds a reference of its own: the page is freed
 * when that goes, never reused before.
 */
static void rpage_folio_drop(struct rpage_mapping *map, struct folio *folio)
{
	rpage_folio_truncate(map->mapping, folio);
	folio_unlock(folio);
	folio_put(folio);
}

/* Whether page @index of @map is in its page cache: here, or being read. */
static bool rpage_page_cached(struct rpage_mapping *map, pgoff_t index)
{
	void *entry = xa_load(&map->mapping->i_pages, index);

	return entry && !xa_is_value(entry);
}

/*
 * Whether page @index of @map is absent because reclaim dropped it: the
 * page cache keeps a shadow entry in its place (workingset.c).
 */
static bool rpage_page_reclaimed(struct rpage_mapping *map, pgoff_t index)
{
	return xa_is_value(xa_load(&map->mapping->i_pages, index));
}

/*
 * Reads every page of @folio (locked, new) of @map, in one transfer: for
 * the fault @fc (whose long wait drops mmap_lock, and which a fatal
 * signal ends), or for a worker (@fc NULL). 0, or -errno.
 */
static int rpage_read_folio(struct rpage_mapping *map,
			    struct rpage_fault_ctx *fc, struct folio *folio)
{
	unsigned long i, nr = folio_nr_pages(folio), one_index;
	unsigned long *index = &one_index;
	struct rpage_xfer_range range;
	struct page *one_page, **pages = &one_page;
	struct rpage_xfer x;
	int ret;

	if (nr > 1) {
		index = kmalloc_array(nr, sizeof(*index) + sizeof(*pages),
				      GFP_KERNEL);
		if (!index)
			return -ENOMEM;
		pages = (struct page **)(index + nr);
	}
	for (i = 0; i < nr; i++) {
		index[i] = folio->index + i;
		pages[i] = folio_page(folio, i);
	}
	rpage_map_xfer_init(map, &x, &range, false, index, pages, nr);
	if (fc) {
		x.killable = true;
		x.slow = rpage_fault_xfer_slow;
		x.priv = fc;
	}
	ret = rpage_xfer(&x);
	rpage_map_xfer_release(&x);
	if (nr > 1)
		kfree(index);
	return ret;
}

/*
 * A prefetch of @nr pages of @map from @first, @stride apart, none
 * claimed yet, charged to @memcg (referenced now; NULL: the caller's);
 * NULL without memory. Its bookkeeping is two chunks.
 */
static struct rpage_prefetch_run *rpage_prefetch_alloc(struct rpage_mapping *map,
						       unsigned long first,
						       long stride,
						       unsigned long nr,
						       unsigned int depth,
						       struct mem_cgroup *memcg)
{
	unsigned int chunk = clamp_t(unsigned int,
				     depth * RPAGE_PREFETCH_CHUNK_DEPTHS,
				     RPAGE_PREFETCH_CHUNK_MIN,
				     RPAGE_PREFETCH_CHUNK_MAX);
	/* Not for the one page of a fault (@nr 0): see rpage_fault_start_read(). */
	bool huge = (map->flags & RPAGE_MAP_HUGE) && stride == 1 && nr;
	struct rpage_prefetch_run *run;
	void *mem;

	if (huge)
		chunk = max_t(unsigned int, round_up(chunk, RPAGE_HUGE_NR),
			      RPAGE_PREFETCH_CHUNK_HUGE);
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return NULL;
	mem = kvcalloc(2 * chunk, sizeof(unsigned long) + sizeof(struct page *) +
		       sizeof(unsigned short) + 2 * sizeof(bool), GFP_KERNEL);
	if (!mem) {
		kfree(run);
		return NULL;
	}
	run->cur.index = mem;
	run->ahead.index = run->cur.index + chunk;
	run->cur.pages = (struct page **)(run->ahead.index + chunk);
	run->ahead.pages = run->cur.pages + chunk;
	run->cur.left = (unsigned short *)(run->ahead.pages + chunk);
	run->ahead.left = run->cur.left + chunk;
	run->cur.reclaimed = (bool *)(run->ahead.left + chunk);
	run->ahead.reclaimed = run->cur.reclaimed + chunk;
	run->cur.failed = run->ahead.reclaimed + chunk;
	run->ahead.failed = run->cur.failed + chunk;
	run->chunk_max = chunk;
	run->huge = huge;
	kref_get(&map->ref);
	run->map = map;
	if (memcg)
		css_get(&memcg->css);
	run->memcg = memcg;
	run->next = first;
	run->stride = stride;
	run->left = nr;
	run->depth = depth;
	return run;
}

static void rpage_prefetch_free(struct rpage_prefetch_run *run)
{
	mem_cgroup_put(run->memcg);
	rpage_map_put(run->map);
	/* The chunks' arrays are one allocation, from cur.index on. */
	kvfree(min(run->cur.index, run->ahead.index));
	kfree(run);
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
 * Adds @folio, new in the page cache at @index with its pages absent
 * until now (@reclaimed: dropped by reclaim), to @chunk: every page of
 * it, for one READ each.
 */
static void rpage_prefetch_add(struct rpage_prefetch_chunk *chunk,
			       struct folio *folio, pgoff_t index,
			       bool reclaimed)
{
	unsigned long i, nr = folio_nr_pages(folio);

	chunk->left[chunk->nr] = nr;
	chunk->failed[chunk->nr] = false;
	for (i = 0; i < nr; i++) {
		chunk->reclaimed[chunk->nr] = reclaimed;
		chunk->index[chunk->nr] = index + i;
		chunk->pages[chunk->nr++] = folio_page(folio, i);
	}
}

/*
 * Page @index of RPAGE_MAP_HUGE mapping @map is read 4 KiB at a time,
 * for @cause (RPAGE_HUGE_FB_*): counted, in all and by cause, and traced.
 */
static void rpage_huge_fallback(struct rpage_mapping *map, pgoff_t index,
				int cause)
{
	trace_rpage_huge_fallback(map->id, index, cause);
	rpage_fault_count(map, RPAGE_FC_HUGE_FALLBACKS, 1);
	rpage_fault_count(map, RPAGE_FC_HUGE_FB + cause, 1);
}

/* What rpage_prefetch_claim_region() did with a 2 MiB region. */
enum rpage_prefetch_region {
	RPAGE_PREFETCH_REGION_SMALL,	/* nothing: take its pages one by one */
	RPAGE_PREFETCH_REGION_DONE,	/* claimed whole, or all of it here */
	RPAGE_PREFETCH_REGION_STOP,	/* the chunk (or memory) is full */
};

/*
 * Claims into @chunk the 2 MiB region of an RPAGE_MAP_HUGE mapping that
 * starts at @run->next, @allowed pages in all being the chunk's
 * allowance: one folio for the whole region, where none of it is here,
 * as its first fault would have read it; that folio is PMD-mapped by
 * the faults after. A region with 4 KiB pages here already, or for
 * which no 2 MiB of memory can be had, is taken 4 KiB at a time
 * (counted as a fallback, as a fault's), and so is the tail past the
 * mapping's last whole region.
 */
static enum rpage_prefetch_region
rpage_prefetch_claim_region(struct rpage_prefetch_run *run,
			    struct rpage_prefetch_chunk *chunk,
			    unsigned long allowed, gfp_t gfp)
{
	struct rpage_mapping *map = run->map;
	pgoff_t base = run->next, last = base + RPAGE_HUGE_NR - 1;
	unsigned long here;
	struct folio *folio;
	int cause;
	void *entry;

	if (run->left < RPAGE_HUGE_NR || last >= map->nr_pages)
		return RPAGE_PREFETCH_REGION_SMALL;
	here = rpage_map_pages_cached(map, base, last, false);
	if (here == RPAGE_HUGE_NR)
		return RPAGE_PREFETCH_REGION_DONE;
	if (chunk->nr + RPAGE_HUGE_NR > run->chunk_max)
		return RPAGE_PREFETCH_REGION_STOP;
	if (chunk->nr + RPAGE_HUGE_NR > allowed) {
		run->stopped = "memory down to prefetch_reserve_pct";
		return RPAGE_PREFETCH_REGION_STOP;
	}
	cause = RPAGE_HUGE_FB_SMALL_CACHED;
	if (!here) {
		/* A shadow: reclaim dropped the region (a multi-index one). */
		entry = xa_load(&map->mapping->i_pages, base);
		folio = rpage_folio_create(map, base, RPAGE_HUGE_ORDER, gfp,
					   run->memcg);
		if (!IS_ERR(folio)) {
			rpage_prefetch_add(chunk, folio, base, xa_is_value(entry));
			return RPAGE_PREFETCH_REGION_DONE;
		}
		/* A fault took a page of it meanwhile: its own fallback. */
		if (PTR_ERR(folio) == -EEXIST)
			return RPAGE_PREFETCH_REGION_SMALL;
		cause = RPAGE_HUGE_FB_NOMEM;
	}
	rpage_huge_fallback(map, base, cause);
	return RPAGE_PREFETCH_REGION_SMALL;
}

/*
 * Claims into @chunk the absent pages among the next ones of @run, up to
 * a chunk of them: each gets a folio in the page cache, locked until its
 * READ ends. Returns how many. A prefetch never makes the kernel kill a
 * process for memory, nor takes the host's reserve: it stops claiming
 * instead (@run->stopped says why), and reads what it claimed.
 */
static unsigned long rpage_prefetch_claim(struct rpage_prefetch_run *run,
					  struct rpage_prefetch_chunk *chunk)
{
	struct rpage_mapping *map = run->map;
	gfp_t gfp = mapping_gfp_mask(map->mapping) | __GFP_NORETRY |
		    __GFP_NOWARN;
	unsigned long scanned = 0, allowed;

	chunk->nr = 0;
	if (!run->left)
		return 0;
	allowed = rpage_prefetch_allowance(run, run->chunk_max);
	for (; run->left && chunk->nr < run->chunk_max;
	     run->left--, run->next += run->stride) {
		struct folio *folio;
		void *entry;

		if (run->next >= map->nr_pages) {
			run->left = 0;
			break;
		}
		/* A range mostly here already is long to walk. */
		if (!(++scanned % 1024))
			cond_resched();
		if (run->huge && IS_ALIGNED(run->next, RPAGE_HUGE_NR)) {
			switch (rpage_prefetch_claim_region(run, chunk, allowed,
							    gfp)) {
			case RPAGE_PREFETCH_REGION_STOP:
				return chunk->nr;
			case RPAGE_PREFETCH_REGION_DONE:
				/* The loop's step takes it past the last page. */
				run->left -= RPAGE_HUGE_NR - 1;
				run->next += RPAGE_HUGE_NR - 1;
				continue;
			case RPAGE_PREFETCH_REGION_SMALL:
				break;
			}
		}
		/* Here or being read: skipped; a shadow: reclaim dropped it. */
		entry = xa_load(&map->mapping->i_pages, run->next);
		if (entry && !xa_is_value(entry))
			continue;
		if (chunk->nr >= allowed) {
			run->stopped = "memory down to prefetch_reserve_pct";
			break;
		}
		folio = rpage_folio_create(map, run->next, 0, gfp, run->memcg);
		if (IS_ERR(folio)) {
			if (PTR_ERR(folio) == -EEXIST)
				continue;
			run->stopped = "out of memory";
			atomic_long_inc(&run->failed);
			break;
		}
		rpage_prefetch_add(chunk, folio, run->next, xa_is_value(entry));
	}
	return chunk->nr;
}

/*
 * Gives up the folio whose first page is entry @i of @chunk: its pages
 * become absent again.
 */
static void rpage_prefetch_drop(struct rpage_prefetch_run *run,
				struct rpage_prefetch_chunk *chunk,
				unsigned long i)
{
	struct folio *folio = page_folio(chunk->pages[i]);
	unsigned long j, nr = folio_nr_pages(folio);

	rpage_folio_drop(run->map, folio);
	for (j = i; j < i + nr; j++)
		chunk->pages[j] = NULL;
	atomic_long_add(nr, &run->failed);
}

/* Gives up every folio of @chunk not settled yet. */
static void rpage_prefetch_drop_chunk(struct rpage_prefetch_run *run,
				      struct rpage_prefetch_chunk *chunk)
{
	unsigned long i;

	for (i = 0; i < chunk->nr; i++)
		if (chunk->pages[i])
			rpage_prefetch_drop(run, chunk, i);
	chunk->nr = 0;
}

/*
 * Pages of a prefetch are done; a folio is settled with its last page:
 * here, or absent again if a READ of any of its pages failed. The
 * transfer reports its pages one call at a time, from its own task.
 */
static void rpage_prefetch_done(struct rpage_xfer *x, unsigned long first,
				unsigned long nr, int status)
{
	struct rpage_prefetch_run *run = x->priv;
	struct rpage_prefetch_chunk *chunk = &run->cur;
	unsigned long i, j, head, refetched = 0;

	for (i = first; i < first + nr; i++) {
		struct folio *folio = page_folio(chunk->pages[i]);

		/* The entry of the folio's first page. */
		head = i - (chunk->index[i] - folio->index);
		if (status)
			chunk->failed[head] = true;
		if (--chunk->left[head])
			continue;
		if (chunk->failed[head] ||
		    !rpage_map_folio_ready(run->map, folio)) {
			rpage_prefetch_drop(run, chunk, head);
			continue;
		}
		for (j = head; j < head + folio_nr_pages(folio); j++) {
			refetched += chunk->reclaimed[j];
			chunk->pages[j] = NULL;
		}
		/*
		 * Until a fault maps it: a prefetch hit (see
		 * rpage_fault_prefetch_hit()).
		 */
		if (!run->for_fault) {
			if (!READ_ONCE(run->map->prefetched))
				WRITE_ONCE(run->map->prefetched, true);
			folio_set_checked(folio);
			if (folio_test_large(folio))
				rpage_fault_count(run->map,
						  RPAGE_FC_HUGE_PREFETCHED, 1);
		}
		folio_unlock(folio);
		folio_put(folio);
	}
	if (!status && !run->for_fault) {
		rpage_fault_count(run->map, RPAGE_FC_PREFETCHED, nr);
		if (refetched)
			rpage_fault_count(run->map, RPAGE_FC_REFETCHED,
					  refetched);
	}
}

/*
 * Reads the pages of @run->cur; every one is settled when it returns.
 * Returns whether the prefetch goes on: not after a failure (a kill, the
 * pool or the peer gone), which the pages after it would only meet
 * again; they stay absent, for faults to read.
 */
static bool rpage_prefetch_read_chunk(struct rpage_prefetch_run *run)
{
	struct rpage_prefetch_chunk *chunk = &run->cur;
	struct rpage_xfer_range range;
	struct rpage_xfer x;
	int ret;

	rpage_map_xfer_init(run->map, &x, &range, false, chunk->index,
			    chunk->pages, chunk->nr);
	x.depth = run->depth;
	x.killable = run->killable;
	x.done = rpage_prefetch_done;
	x.priv = run;
	ret = rpage_xfer(&x);
	rpage_map_xfer_release(&x);
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
	if (run->stopped)
		pr_info_ratelimited("mapping %u: prefetch stopped, %s, with %lu pages left unfetched\n",
				    run->map->id, run->stopped,
				    run->cur.nr + run->ahead.nr + run->left);
	/* Stopped early: what is claimed goes back, the rest stays absent. */
	rpage_prefetch_drop_chunk(run, &run->cur);
	rpage_prefetch_drop_chunk(run, &run->ahead);
}

/*
 * The end of a prefetch RPAGE_IOC_PREFETCH asked for (a pull), as an
 * event, for those who wait on events rather than poll the mapping.
 */
static void rpage_prefetch_report(struct rpage_prefetch_run *run)
{
	struct rpage_mapping *map = run->map;

	/* Read-ahead and a fault's own runs have nothing queued to report. */
	if (!run->queued || !rpage_events_wanted())
		return;
	rpage_event_prefetch_end(map->id, run->queued,
				 atomic_long_read(&run->failed),
				 rpage_map_pages_cached(map, 0, map->nr_pages - 1,
							true),
				 map->nr_pages, run->stopped);
}

static void rpage_prefetch_work_fn(struct work_struct *work)
{
	struct rpage_prefetch_run *run = container_of(work,
						      struct rpage_prefetch_run,
						      work);

	rpage_prefetch_execute(run);
	rpage_prefetch_report(run);
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
	struct mem_cgroup *memcg;
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
	/* Whole regions, as a fault reads them (the tail past them: 4 KiB). */
	if (map->flags & RPAGE_MAP_HUGE) {
		unsigned long end = min_t(unsigned long,
					  round_up(first + nr, RPAGE_HUGE_NR),
					  map->nr_pages);

		first = round_down(first, RPAGE_HUGE_NR);
		nr = end - first;
	}
	arg.failed = 0;
	/*
	 * Kept before any is read, so that none read now is dropped, and
	 * whether any is missing or not (the pages here stay too).
	 */
	if (arg.flags & RPAGE_PREFETCH_KEEP)
		rpage_map_keep(map);
	arg.queued = nr - rpage_map_pages_cached(map, first, first + nr - 1,
						 false);
	if (!arg.queued)
		goto out;
	/* The pages not here have nowhere to come from any more. */
	if (!rcu_access_pointer(map->peer)) {
		ret = -ENOTCONN;
		goto out;
	}
	/* The pages are the caller's: charged to its cgroup, from a worker too. */
	memcg = get_mem_cgroup_from_mm(current->mm);
	run = rpage_prefetch_alloc(map, first, 1, nr,
				   arg.depth ?: RPAGE_PREFETCH_DEPTH_DEFAULT,
				   memcg);
	mem_cgroup_put(memcg);
	if (!run) {
		ret = -ENOMEM;
		goto out;
	}
	run->queued = arg.queued;
	if (!rpage_prefetch_start(run)) {
		rpage_prefetch_free(run);
		goto out;
	}
	if (arg.flags & RPAGE_PREFETCH_WAIT) {
		run->killable = true;
		rpage_prefetch_execute(run);
		rpage_prefetch_report(run);
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
 * The memory cgroup of @mm, referenced, when the caller is not in @mm
 * (KVM's asynchronous page fault worker, GUP of another process): what
 * a fault's pages are charged to. NULL for the caller's own.
 */
static struct mem_cgroup *rpage_fault_memcg(struct mm_struct *mm)
{
	return current->mm == mm ? NULL : get_mem_cgroup_from_mm(mm);
}

/*
 * Read-ahead: a fault at @index, in @mm, that continues the stride of
 * the last faults reads the next window of pages along it, a window
 * that doubles each time the pattern holds, up to RPAGE_RA_MAX pages.
 */
static void rpage_readahead(struct rpage_mapping *map, unsigned long index,
			    struct mm_struct *mm)
{
	struct rpage_prefetch_run *run;
	long at = index, next = 0, stride;
	struct mem_cgroup *memcg;
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
	/* Its pages are the faulting process's, as the fault's own are. */
	memcg = get_mem_cgroup_from_mm(mm);
	run = rpage_prefetch_alloc(map, next, stride, window, window, memcg);
	mem_cgroup_put(memcg);
	if (!run)
		return;
	if (rpage_prefetch_start(run))
		rpage_prefetch_queue(run);
	else
		rpage_prefetch_free(run);
}

/**
 * struct rpage_fault_async - the READ of a fault that may not wait, which
 *	the fault posted and left
 * @x: the transfer.
 * @range: its one range.
 * @map: the mapping, referenced.
 * @page: the page of the folio read into, locked, referenced.
 * @index: its index in the mapping.
 * @work: drops the last reference to @map, where the READ's end cannot.
 */
struct rpage_fault_async {
	struct rpage_xfer x;
	struct rpage_xfer_range range;
	struct rpage_mapping *map;
	struct page *page;
	unsigned long index;
	struct work_struct work;
};

static void rpage_fault_async_free_fn(struct work_struct *work)
{
	struct rpage_fault_async *fa = container_of(work, struct rpage_fault_async,
						    work);

	rpage_map_put(fa->map);
	kfree(fa);
}

/*
 * The READ a fault posted ended, in the context that polled its
 * completion (another transfer's task, a worker) or the fault's own: the
 * folio is unlocked up to date, or leaves the page cache, and the retried
 * fault reads it with rpage_xfer(), riding through an outage as every
 * fault does. Nothing here sleeps. The last reference to the mapping
 * (its inode, its pages) is dropped by a worker, never in a poller that
 * may be in the middle of another transfer on the queue pair.
 */
static void rpage_fault_async_end(struct rpage_xfer *x, int status)
{
	struct rpage_fault_async *fa = x->priv;
	struct rpage_mapping *map = fa->map;
	struct folio *folio = page_folio(fa->page);

	if (status || !rpage_map_folio_ready(map, folio)) {
		rpage_folio_drop(map, folio);
	} else {
		folio_unlock(folio);
		folio_put(folio);
	}
	if (refcount_dec_not_one(&map->ref.refcount)) {
		kfree(fa);
		return;
	}
	INIT_WORK(&fa->work, rpage_fault_async_free_fn);
	queue_work(rpage_prefetch_wq, &fa->work);
}

/*
 * Posts the READ of page @index into @folio (new, locked) from the fault
 * itself, and leaves it: true if it is on its way. False if it could not
 * be started without waiting (the peer reconnecting, its queue full, a
 * transport that waits for every page): nothing changed.
 */
static bool rpage_fault_post_read(struct rpage_mapping *map,
				  struct folio *folio, pgoff_t index)
{
	struct rpage_fault_async *fa;
	struct rpage_peer *peer;
	int ret;

	fa = kmalloc(sizeof(*fa), GFP_KERNEL);
	if (!fa)
		return false;
	fa->index = index;
	fa->page = folio_page(folio, 0);
	rpage_map_xfer_init(map, &fa->x, &fa->range, false, &fa->index,
			    &fa->page, 1);
	fa->x.end = rpage_fault_async_end;
	fa->x.priv = fa;
	kref_get(&map->ref);
	fa->map = map;
	/* The READ may end, and @fa go, before the call returns. */
	peer = fa->x.peer;
	ret = rpage_xfer_start(&fa->x);
	if (peer)
		rpage_peer_put(peer);
	if (!ret)
		return true;
	rpage_map_put(map);
	kfree(fa);
	return false;
}

/**
 * struct rpage_folio_read - a 2 MiB folio a fault that may not wait put
 *	in the page cache, read by a worker
 * @work: the worker's.
 * @map: the mapping, referenced.
 * @folio: the folio, locked, referenced.
 */
struct rpage_folio_read {
	struct work_struct work;
	struct rpage_mapping *map;
	struct folio *folio;
};

static void rpage_folio_read_fn(struct work_struct *work)
{
	struct rpage_folio_read *r = container_of(work, struct rpage_folio_read,
						  work);

	if (rpage_read_folio(r->map, NULL, r->folio) ||
	    !rpage_map_folio_ready(r->map, r->folio)) {
		/* The next fault reads it again. */
		rpage_folio_drop(r->map, r->folio);
	} else {
		folio_unlock(r->folio);
		folio_put(r->folio);
	}
	rpage_map_put(r->map);
	kfree(r);
}

/*
 * A fault that may not wait (FAULT_FLAG_RETRY_NOWAIT: KVM's asynchronous
 * page faults, GUP with FOLL_NOWAIT) put @folio, locked, at @index: it
 * posts the READ itself where the transport can start one without
 * waiting (RDMA, loop; a 4 KiB folio); else the READ runs in a worker.
 * Either takes the folio over, and the fault is retried once the page is
 * here. A 2 MiB folio is read whole by a worker: the vCPU runs on
 * meanwhile, and KVM's retry maps the region with one PMD.
 */
static void rpage_fault_start_read(struct rpage_mapping *map,
				   struct folio *folio, pgoff_t index)
{
	struct rpage_prefetch_run *run;
	struct rpage_folio_read *r;

	if (folio_test_large(folio)) {
		r = kmalloc(sizeof(*r), GFP_KERNEL);
		if (!r) {
			rpage_folio_drop(map, folio);
			return;
		}
		kref_get(&map->ref);
		r->map = map;
		r->folio = folio;
		INIT_WORK(&r->work, rpage_folio_read_fn);
		queue_work(rpage_prefetch_wq, &r->work);
		return;
	}
	if (rpage_fault_post_read(map, folio, index))
		return;

	run = rpage_prefetch_alloc(map, index, 1, 0, 1, NULL);
	if (!run) {
		/* The next fault on it reads it. */
		rpage_folio_drop(map, folio);
		return;
	}
	rpage_prefetch_add(&run->cur, folio, index, false);
	run->for_fault = true;
	rpage_prefetch_queue(run);
}

/*
 * A fault read its page, again if reclaim had dropped it; @huge: a whole
 * 2 MiB region.
 */
static void rpage_fault_count_read(struct rpage_mapping *map, bool reclaimed,
				   bool huge)
{
	rpage_fault_count(map, RPAGE_FC_FAULTS, 1);
	if (huge)
		rpage_fault_count(map, RPAGE_FC_HUGE_FAULTS, 1);
	if (reclaimed)
		rpage_fault_count(map, RPAGE_FC_REFETCHED,
				  huge ? RPAGE_HUGE_NR : 1);
}

/*
 * Fault @fc holds @folio (new, locked) at @index: it reads it, or with
 * FAULT_FLAG_RETRY_NOWAIT has it read in the background. Returns how
 * the fault ends; with RPAGE_FAULT_FETCHED, @fc->vmf->page is the
 * folio's page, locked, for core mm to map.
 */
static enum rpage_fault_result rpage_fault_read(struct rpage_fault_ctx *fc,
						struct folio *folio,
						pgoff_t index, bool reclaimed,
						int *err)
{
	struct rpage_mapping *map = fc->map;
	bool huge = folio_test_large(folio);

	if (fc->vmf->flags & FAULT_FLAG_RETRY_NOWAIT) {
		rpage_fault_start_read(map, folio, index);
		rpage_fault_count_read(map, reclaimed, huge);
		fc->counted = true;
		return RPAGE_FAULT_RETRY;
	}
	*err = rpage_read_folio(map, fc, folio);
	if (!*err && !rpage_map_folio_ready(map, folio))
		/* Deleted by force meanwhile: see rpage_map_kill(). */
		*err = -ENXIO;
	if (*err) {
		rpage_folio_drop(map, folio);
		/* Without the lock, the retried fault reports it. */
		return fc->unlocked ? RPAGE_FAULT_RETRY : RPAGE_FAULT_SIGBUS;
	}
	rpage_fault_count_read(map, reclaimed, huge);
	fc->counted = true;
	if (fc->unlocked) {
		/* The page cache holds the page; the retry maps it. */
		folio_unlock(folio);
		folio_put(folio);
		return RPAGE_FAULT_RETRY;
	}
	fc->vmf->page = folio_file_page(folio, index);
	return RPAGE_FAULT_FETCHED;
}

/*
 * Waits for @folio (referenced), locked by someone else: a READ in
 * flight, a fault mapping it, an eviction. Without mmap_lock when the
 * fault allows: then it answers RPAGE_FAULT_RETRY, and the retried fault
 * finds the page. Returns 0 with the folio locked, RPAGE_FAULT_RETRY or
 * RPAGE_FAULT_SIGBUS (killed); the folio's reference is dropped unless
 * it returns 0.
 */
static int rpage_fault_wait(struct rpage_fault_ctx *fc, struct folio *folio,
			    int *err)
{
	if (fc->vmf->flags & FAULT_FLAG_RETRY_NOWAIT) {
		folio_put(folio);
		return RPAGE_FAULT_RETRY;
	}
	rpage_fault_unlock(fc);
	if (fc->unlocked) {
		if (folio_wait_locked_killable(folio))
			*err = -EINTR;
		folio_put(folio);
		return RPAGE_FAULT_RETRY;
	}
	if (folio_lock_killable(folio)) {
		folio_put(folio);
		*err = -EINTR;
		return RPAGE_FAULT_SIGBUS;
	}
	return 0;
}

/*
 * A fault maps @folio (up to date) of @map: if a prefetch or read-ahead
 * read it and no fault has mapped it since, that is a prefetch hit. The
 * mark is taken atomically: two faults mapping the page at once (one
 * through fault-around) count it once.
 */
static void rpage_fault_prefetch_hit(struct rpage_mapping *map,
				     struct folio *folio)
{
	if (folio_test_checked(folio) &&
	    test_and_clear_bit(PG_checked, &folio->flags))
		rpage_fault_count(map, RPAGE_FC_PREFETCH_HITS, 1);
}

/*
 * Why page @index's 2 MiB region cannot be one folio that the fault's
 * area maps with a PMD (RPAGE_HUGE_FB_*), or -1 if it can.
 */
static int rpage_fault_huge_cause(struct rpage_fault_ctx *fc, pgoff_t index)
{
	struct vm_fault *vmf = fc->vmf;
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t base = round_down(index, RPAGE_HUGE_NR);
	unsigned long haddr = ALIGN_DOWN(vmf->address, RPAGE_MAP_HUGE_SIZE);

	if (base + RPAGE_HUGE_NR > fc->map->nr_pages)
		return RPAGE_HUGE_FB_TAIL;
	if ((vma->vm_flags & VM_NOHUGEPAGE) ||
	    test_bit(MMF_DISABLE_THP, &vma->vm_mm->flags))
		return RPAGE_HUGE_FB_DISABLED;
	if (!IS_ALIGNED((vma->vm_start >> PAGE_SHIFT) - vma->vm_pgoff,
			RPAGE_HUGE_NR) ||
	    haddr < vma->vm_start || haddr + RPAGE_MAP_HUGE_SIZE > vma->vm_end)
		return RPAGE_HUGE_FB_UNALIGNED;
	/* A snapshot: finish_fault() has the last word under the lock. */
	if (!pmd_none(READ_ONCE(*vmf->pmd)))
		return RPAGE_HUGE_FB_PTE_TABLE;
	if (filemap_range_has_page(fc->map->mapping, (loff_t)base << PAGE_SHIFT,
				   ((loff_t)(base + RPAGE_HUGE_NR) << PAGE_SHIFT) - 1))
		return RPAGE_HUGE_FB_SMALL_CACHED;
	return -1;
}

/*
 * A fault of an RPAGE_MAP_HUGE mapping on page @index, absent: puts a 2
 * MiB folio for the page's region in the page cache, locked, charged to
 * @memcg, for the fault to read whole; or says why 4 KiB must do
 * (counted, and its tracepoint). core mm maps the folio with one PMD
 * (finish_fault(), do_set_pmd()) where the area lines up with the region
 * and no page table is there yet: these are checked first, so that a
 * folio is 2 MiB only where it will be mapped so (a 2 MiB read for a
 * 4 KiB mapping would be waste). Returns the folio, NULL for 4 KiB, or
 * ERR_PTR(-EEXIST) when another folio took a page of the region
 * meanwhile (the caller looks again).
 */
static struct folio *rpage_fault_huge_folio(struct rpage_fault_ctx *fc,
					    pgoff_t index,
					    struct mem_cgroup *memcg)
{
	struct folio *folio;
	int cause = rpage_fault_huge_cause(fc, index);

	if (cause < 0) {
		folio = rpage_folio_create(fc->map, round_down(index, RPAGE_HUGE_NR),
					   RPAGE_HUGE_ORDER, fc->vmf->gfp_mask,
					   memcg);
		if (!IS_ERR(folio) || PTR_ERR(folio) == -EEXIST)
			return folio;
		cause = RPAGE_HUGE_FB_NOMEM;
	}
	rpage_huge_fallback(fc->map, index, cause);
	return NULL;
}

static enum rpage_fault_result rpage_fault_page(struct rpage_fault_ctx *fc,
						pgoff_t index, int *err)
{
	struct rpage_mapping *map = fc->map;
	struct vm_fault *vmf = fc->vmf;
	struct mem_cgroup *memcg;
	struct folio *folio;
	bool waited = false;
	bool reclaimed;
	int ret;

	rpage_readahead(map, index, vmf->vma->vm_mm);
again:
	folio = rpage_filemap_get_folio(map->mapping, index);
	if (!folio) {
		reclaimed = rpage_page_reclaimed(map, index);
		memcg = rpage_fault_memcg(vmf->vma->vm_mm);
		folio = NULL;
		if (map->flags & RPAGE_MAP_HUGE)
			folio = rpage_fault_huge_folio(fc, index, memcg);
		if (!folio)
			folio = rpage_folio_create(map, index, 0, vmf->gfp_mask,
						   memcg);
		mem_cgroup_put(memcg);
		if (IS_ERR(folio)) {
			/* Another fault or a prefetch put it there first. */
			if (PTR_ERR(folio) == -EEXIST)
				goto again;
			*err = PTR_ERR(folio);
			return RPAGE_FAULT_SIGBUS;
		}
		/* This fault reads the page. */
		return rpage_fault_read(fc, folio, index, reclaimed, err);
	}
	if (!folio_trylock(folio)) {
		/* Not up to date: a READ is in flight, which this waits for. */
		bool reading = !folio_test_uptodate(folio);

		ret = rpage_fault_wait(fc, folio, err);
		if (reading && !*err) {
			waited = true;
			if (ret == RPAGE_FAULT_RETRY) {
				rpage_fault_count(map, RPAGE_FC_WAITS, 1);
				fc->counted = true;
			}
		} else if (!*err && ret == RPAGE_FAULT_RETRY && fc->unlocked) {
			/*
			 * Up to date, locked a moment by fault-around, reclaim
			 * or an eviction: a minor fault, counted now, as its
			 * retry is not.
			 */
			rpage_fault_count(map, RPAGE_FC_MINOR, 1);
			fc->counted = true;
		}
		if (ret)
			return ret;
	}
	/* Evicted, or its READ failed: it left the page cache. */
	if (folio->mapping != map->mapping) {
		folio_unlock(folio);
		folio_put(folio);
		goto again;
	}
	/* Deleted by force meanwhile: see rpage_map_kill(). */
	if (READ_ONCE(map->dead)) {
		folio_unlock(folio);
		folio_put(folio);
		*err = -ENXIO;
		return RPAGE_FAULT_SIGBUS;
	}
	/*
	 * Every folio is locked from its creation until it is up to date or
	 * gone; one that is not would be a READ's left behind: read it.
	 */
	if (!folio_test_uptodate(folio))
		return rpage_fault_read(fc, folio, index, false, err);
	rpage_fault_prefetch_hit(map, folio);
	vmf->page = folio_file_page(folio, index);
	return waited ? RPAGE_FAULT_WAITED : RPAGE_FAULT_MINOR;
}

/*
 * The prefetch hits among pages @first to @last of @map once fault-around
 * has mapped them: still marked as prefetched, and mapped now. Counted
 * after, not before: a folio whose READ ended (and lock went) between a
 * count and filemap_map_pages() would be mapped uncounted, and never
 * fault. A fault that maps a marked folio itself counts it under the
 * folio's lock, before it is mapped; the mark's atomic clear counts each
 * page once, whoever sees it first.
 */
static void rpage_map_pages_prefetch_hits(struct rpage_mapping *map,
					  pgoff_t first, pgoff_t last)
{
	XA_STATE(xas, &map->mapping->i_pages, first);
	struct folio *folio;

	rcu_read_lock();
	xas_for_each(&xas, folio, last) {
		if (xas_retry(&xas, folio) || xa_is_value(folio))
			continue;
		/*
		 * Its flags are its own only while referenced and still here:
		 * a freed page's bit could be another owner's.
		 */
		if (!folio_try_get(folio))
			continue;
		if (folio == xas_reload(&xas) && folio_mapped(folio))
			rpage_fault_prefetch_hit(map, folio);
		folio_put(folio);
	}
	rcu_read_unlock();
}

/* Which lock the fault handler was called with: see rpage_vm_map_pages(). */
static void rpage_fault_count_lock(struct rpage_mapping *map,
				   const struct vm_fault *vmf)
{
	rpage_fault_count(map, rpage_fault_vma_locked(vmf) ?
			  RPAGE_FC_VMA_LOCKED : RPAGE_FC_MMAP_LOCKED, 1);
}

/*
 * Fault-around (->map_pages). Before calling ->fault on a read fault,
 * core mm maps the pages around the faulting address that are in the
 * page cache, up to date and unlocked (filemap_map_pages(): no I/O, no
 * sleep, under RCU). Having it is also what lets 6.12 call ->fault under
 * the per-VMA lock rather than retry every fault under mmap_lock
 * (vmf_can_call_fault()). A fault whose own page it maps (the page was
 * here) never reaches ->fault, so it is counted here, as ->fault would
 * have: a minor fault, its latency, its tracepoints. The neighbours it
 * maps take no fault at all; a prefetched one among them is a prefetch
 * hit (it will not fault when touched).
 */
vm_fault_t rpage_vm_map_pages(struct vm_fault *vmf, pgoff_t start_pgoff,
			      pgoff_t end_pgoff)
{
	struct rpage_mapping *map = vmf->vma->vm_private_data;
	u64 begin, ns;
	vm_fault_t ret;

	/*
	 * Deleted by force: ->fault answers. A mapping killed meanwhile has
	 * no page left to map (rpage_map_kill() takes them out of the page
	 * cache). Read-ahead follows the faults, every one of them, and
	 * cannot be started from here (under RCU, on 6.12): its mappings
	 * fault page by page, under the per-VMA lock all the same.
	 */
	if (READ_ONCE(map->dead) || (map->flags & RPAGE_MAP_READAHEAD))
		return 0;
	/*
	 * A fault whose own page is not here is about to read it: around
	 * it, the pages here are the ones this process's faults brought in,
	 * mapped already, and a walk over them (a reference and the lock of
	 * each) would only add to the fault's time. Where the page is here
	 * (a prefetch, another process, the retry of a fault that waited),
	 * its neighbours likely are too, and unmapped.
	 */
	if (!rpage_page_cached(map, vmf->pgoff))
		return 0;
	begin = ktime_get_ns();
	ret = filemap_map_pages(vmf, start_pgoff, end_pgoff);
	if (READ_ONCE(map->prefetched))
		rpage_map_pages_prefetch_hits(map, start_pgoff, end_pgoff);
	if (!(ret & VM_FAULT_NOPAGE))
		return ret;
	trace_rpage_fault_begin(map->id, vmf->pgoff, vmf->address,
				vmf->flags & FAULT_FLAG_WRITE);
	rpage_fault_count_lock(map, vmf);
	ns = ktime_get_ns() - begin;
	/* A retried fault finding its page was counted the first time. */
	if (!(vmf->flags & FAULT_FLAG_TRIED)) {
		rpage_fault_count(map, RPAGE_FC_MINOR, 1);
		rpage_fault_count_latency(map, ns);
	}
	trace_rpage_fault_end(map->id, vmf->pgoff, RPAGE_FAULT_MINOR, 0, ns);
	return ret;
}

vm_fault_t rpage_vm_fault(struct vm_fault *vmf)
{
	struct rpage_mapping *map = vmf->vma->vm_private_data;
	struct rpage_fault_ctx fc = { .vmf = vmf, .map = map };
	pgoff_t index = vmf->pgoff;
	enum rpage_fault_result result;
	u64 begin = ktime_get_ns(), ns;
	bool counted = true;
	vm_fault_t ret = 0;
	int err = 0;

	trace_rpage_fault_begin(map->id, index, vmf->address,
				vmf->flags & FAULT_FLAG_WRITE);
	rpage_fault_count_lock(map, vmf);
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
		/*
		 * Counted now: its retry must say it was tried, and 6.12 sets
		 * FAULT_FLAG_TRIED on the retry of a fault taken under the
		 * VMA lock only when the first attempt was major (as
		 * filemap_fault() answers after I/O).
		 */
		ret = VM_FAULT_RETRY | (counted ? VM_FAULT_MAJOR : 0);
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
	/*
	 * One reading of the clock for both: a tracepoint's arguments are
	 * computed whether it is enabled or not, and a clock read is not
	 * free everywhere (an emulated HPET costs a microsecond or more).
	 */
	ns = ktime_get_ns() - begin;
	if (counted)
		rpage_fault_count_latency(map, ns);
	trace_rpage_fault_end(map->id, index, result, err, ns);
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
