// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: remote mappings - their lifetime, mmap and eviction.
 *
 * A mapping is a window on a peer's pool, owned by the /dev/rpage file
 * it was created through. Its pages are folios in the page cache of an
 * inode of its own (rpage-fs.c), at their index in the mapping: absent,
 * locked and not up to date while a READ fills them, up to date once
 * here. Areas are mmap()ed from /dev/rpage at a fake offset (the
 * mapping's id in the high bits, as DRM does) and switched to a file of
 * that inode, so that the kernel's own unmap_mapping_range() and rmap
 * find every area of every process that maps a page when the page must
 * go. The fault path is in rpage-fault.c.
 */
#include "rpage-pri.h"

#include <linux/file.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pagevec.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* Every mapping on the host, by id. */
static DEFINE_XARRAY_ALLOC1(rpage_maps);
static u32 rpage_maps_next;

/**
 * rpage_map_folio_ready - a READ filled @folio of @map: it is up to date
 * @map: the mapping.
 * @folio: a folio of its page cache, locked by the caller, which read it.
 *
 * Returns false if @map was deleted by force meanwhile: then the caller
 * truncates @folio rather than map it. Either this sees the mapping dead,
 * or rpage_map_kill() sees the folio up to date and waits for its lock,
 * which the caller holds until the folio is mapped.
 */
bool rpage_map_folio_ready(struct rpage_mapping *map, struct folio *folio)
{
	flush_dcache_folio(folio);
	folio_mark_uptodate(folio);
	/* Pairs with the one in rpage_map_kill(). */
	smp_mb();
	return !READ_ONCE(map->dead);
}

/*
 * Drops @map's reference to its peer, if it still has one: from then on
 * its pages here are all it has (see rpage_maps_peer_deleted()).
 */
static void rpage_map_detach(struct rpage_mapping *map)
{
	struct rpage_peer *peer;

	/* A deletion and the inserter that raced it may both get here. */
	peer = unrcu_pointer(xchg(&map->peer, RCU_INITIALIZER(NULL)));
	if (peer)
		rpage_peer_put(peer);
}

/* @map's peer, referenced; NULL if it was deleted. */
struct rpage_peer *rpage_map_peer_get(struct rpage_mapping *map)
{
	struct rpage_peer *peer;

	rcu_read_lock();
	peer = rcu_dereference(map->peer);
	if (peer && !kref_get_unless_zero(&peer->ref))
		peer = NULL;
	rcu_read_unlock();
	return peer;
}

/*
 * @peer is being deleted (it is RPAGE_PEER_STATE_DELETING already): no
 * mapping keeps it. A mapping whose pages are all here (pulled) goes on
 * working without it, and the peer's memory is freed; in the others, a
 * fault on a page not here raises SIGBUS, as it would have anyway. The
 * pages here stay from now on: reclaim could not give them back.
 */
void rpage_maps_peer_deleted(struct rpage_peer *peer)
{
	XA_STATE(xas, &rpage_maps, 0);
	struct rpage_mapping *map;

	rcu_read_lock();
	xas_for_each(&xas, map, ULONG_MAX) {
		if (xas_retry(&xas, map))
			continue;
		if (rcu_access_pointer(map->peer) != peer ||
		    !kref_get_unless_zero(&map->ref))
			continue;
		xas_pause(&xas);
		rcu_read_unlock();
		/* Its pages here are all it will ever have. */
		rpage_map_keep(map);
		rpage_map_detach(map);
		rpage_map_put(map);
		cond_resched();
		rcu_read_lock();
	}
	rcu_read_unlock();
}

/* Folios of a mapping's page cache walked before a break. */
#define RPAGE_MAP_WALK_BATCH	1024

static void rpage_map_release(struct kref *ref)
{
	struct rpage_mapping *map = container_of(ref, struct rpage_mapping, ref);

	/*
	 * The pages go with the inode, dirty ones unwritten. First: the
	 * inode's eviction waits for a writeback of it in progress, which
	 * uses the mapping whole (rpage_fs_writepages()).
	 */
	if (map->inode)
		iput(map->inode);
	rpage_fault_counters_free(&map->counters);
	rpage_map_detach(map);
	/* rpage_map_get() may still be looking at it, under RCU. */
	kfree_rcu(map, rcu);
}

void rpage_map_put(struct rpage_mapping *map)
{
	kref_put(&map->ref, rpage_map_release);
}

/*
 * The mapping @id created through @rfile (or, with @named, a named one,
 * which belongs to the host), referenced; NULL if none.
 */
struct rpage_mapping *rpage_map_get(const struct rpage_file *rfile, u64 id,
				    bool named)
{
	struct rpage_mapping *map;

	if (!id || id > RPAGE_MAP_ID_MAX)
		return NULL;
	rcu_read_lock();
	map = xa_load(&rpage_maps, id);
	if (map && ((map->owner != rfile && !(named && !map->owner)) ||
		    !kref_get_unless_zero(&map->ref)))
		map = NULL;
	rcu_read_unlock();
	return map;
}

/*
 * The mapping @id of @rfile, referenced, for work on @length bytes at
 * @offset: ERR_PTR(-ENOENT) if there is none, ERR_PTR(-ERANGE) if the
 * range is not inside it.
 */
struct rpage_mapping *rpage_map_get_range(const struct rpage_file *rfile,
					  u64 id, u64 offset, u64 length)
{
	struct rpage_mapping *map = rpage_map_get(rfile, id, true);
	u64 size;

	if (!map)
		return ERR_PTR(-ENOENT);
	size = (u64)map->nr_pages << PAGE_SHIFT;
	if (offset >= size || length > size - offset) {
		rpage_map_put(map);
		return ERR_PTR(-ERANGE);
	}
	return map;
}

int rpage_map_check(const struct rpage_map *arg)
{
	if (arg->flags & ~RPAGE_MAP_FLAGS_ALL ||
	    memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;
	/* To the end: the length is the pool's, known once it is bound. */
	if (arg->flags & RPAGE_MAP_TO_END) {
		if (arg->length || !PAGE_ALIGNED(arg->offset))
			return -EINVAL;
	} else if (!rpage_page_range_valid(arg->offset, arg->length)) {
		return -EINVAL;
	}
	if (arg->length > RPAGE_MAP_MAX_BYTES)
		return -E2BIG;
	if (arg->flags & RPAGE_MAP_HUGE) {
		/* Read-ahead reads 4 KiB pages: it would defeat the regions. */
		if (arg->flags & RPAGE_MAP_READAHEAD ||
		    !IS_ALIGNED(arg->offset, RPAGE_MAP_HUGE_SIZE))
			return -EINVAL;
		if (!rpage_huge_supported())
			return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * A new mapping of @arg (checked) with one reference, not yet in the
 * table, bound to the pool as the peer announces it now; or an
 * ERR_PTR(). With RPAGE_MAP_TO_END, @arg->length becomes the length
 * bound.
 */
struct rpage_mapping *rpage_map_new(struct rpage_map *arg)
{
	struct rpage_mapping *map;
	struct rpage_rpool *rpool;
	struct rpage_peer *peer;
	bool writable;
	int ret;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	peer = rpage_peer_get_by_id(arg->peer_id);
	if (!peer) {
		kfree(map);
		return ERR_PTR(-ENOENT);
	}
	/* The mapping's reference; this call uses it until it returns. */
	RCU_INIT_POINTER(map->peer, peer);
	kref_init(&map->ref);
	spin_lock_init(&map->ra_lock);
	map->pool_id = arg->pool_id;
	map->pool_offset = arg->offset;
	/* What the mapping is; RPAGE_MAP_TO_END only said how to make it. */
	map->flags = arg->flags & ~RPAGE_MAP_TO_END;
	ret = rpage_fault_counters_init(&map->counters);
	if (ret)
		goto err;

	/*
	 * The pool must be there now (a peer reconnecting is waited for):
	 * the mapping is bound to this incarnation of it, and to this
	 * exporter, so that it never reads a pool created later in its
	 * place.
	 */
	ret = rpage_peer_wait_connected(peer, true, 0, NULL, NULL);
	if (ret)
		goto err;
	rpool = rpage_rpool_get(peer, arg->pool_id, 0, arg->offset,
				arg->length, false);
	if (IS_ERR(rpool)) {
		ret = PTR_ERR(rpool);
		goto err;
	}
	map->pool_generation = rpool->generation;
	map->node_id = READ_ONCE(peer->remote_node_id);
	/* A writable pool's dirty pages are written back to it. */
	writable = rpool->flags & RPAGE_POOL_WRITABLE;
	if (arg->flags & RPAGE_MAP_TO_END)
		arg->length = rpool->length - arg->offset;
	rpage_rpool_put(rpool);
	/*
	 * The pool's rest, as rpage_map_check() checks a length given: a
	 * pool's length is checked when it is announced, but not to this.
	 */
	if (arg->flags & RPAGE_MAP_TO_END &&
	    (arg->length > RPAGE_MAP_MAX_BYTES || !PAGE_ALIGNED(arg->length))) {
		ret = arg->length > RPAGE_MAP_MAX_BYTES ? -E2BIG : -EINVAL;
		goto err;
	}
	map->nr_pages = arg->length >> PAGE_SHIFT;
	map->inode = rpage_fs_inode_new(map, writable);
	if (IS_ERR(map->inode)) {
		ret = PTR_ERR(map->inode);
		map->inode = NULL;
		goto err;
	}
	map->mapping = map->inode->i_mapping;
	return map;

err:
	rpage_map_put(map);
	return ERR_PTR(ret);
}

/*
 * Lists @map under a new id, with a reference of the table's own; the
 * caller still holds its own.
 */
int rpage_map_insert(struct rpage_mapping *map)
{
	struct rpage_peer *peer;
	u32 id;
	int ret;

	kref_get(&map->ref);
	ret = xa_alloc_cyclic(&rpage_maps, &id, map,
			      XA_LIMIT(1, RPAGE_MAP_ID_MAX), &rpage_maps_next,
			      GFP_KERNEL);
	if (ret < 0) {
		rpage_map_put(map);
		return ret;
	}
	map->id = id;
	/*
	 * A deletion of the peer that did not see it in the table: the peer
	 * is deleting by then (its state is set before it looks), so this
	 * sees it. Pairs with the barrier in rpage_peer_shutdown().
	 */
	smp_mb();
	peer = rpage_map_peer_get(map);
	if (peer) {
		if (rpage_peer_deleted(peer))
			rpage_map_detach(map);
		rpage_peer_put(peer);
	}
	return 0;
}

/* Takes @map out of the table, if it is still there; drops that reference. */
void rpage_map_remove(struct rpage_mapping *map)
{
	if (xa_cmpxchg(&rpage_maps, map->id, map, NULL, 0) == map)
		rpage_map_put(map);
}

long rpage_ioctl_map(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_mapping *map;
	struct rpage_map arg;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	ret = rpage_map_check(&arg);
	if (ret)
		return ret;
	map = rpage_map_new(&arg);
	if (IS_ERR(map))
		return PTR_ERR(map);
	map->owner = rfile;
	/*
	 * Once in the table the mapping is its file's, and an UNMAP of its
	 * id (ids are predictable) may drop the table's reference at once:
	 * this call keeps one of its own until it has answered.
	 */
	ret = rpage_map_insert(map);
	if (ret)
		goto out;
	map->pgoff = (pgoff_t)map->id << RPAGE_MAP_ID_SHIFT;

	arg.map_id = map->id;
	arg.mmap_offset = (u64)map->pgoff << PAGE_SHIFT;
	if (copy_to_user(argp, &arg, sizeof(arg))) {
		/* Unless an UNMAP took it out already: then it is done. */
		rpage_map_remove(map);
		ret = -EFAULT;
	}
out:
	rpage_map_put(map);
	return ret;
}

/* Takes mapping @id out of the table if @rfile owns it; returns it. */
static struct rpage_mapping *rpage_map_unlink(const struct rpage_file *rfile,
					      unsigned long id)
{
	struct rpage_mapping *map;

	xa_lock(&rpage_maps);
	map = xa_load(&rpage_maps, id);
	if (map && map->owner == rfile)
		__xa_erase(&rpage_maps, id);
	else
		map = NULL;
	xa_unlock(&rpage_maps);
	return map;
}

long rpage_ioctl_unmap(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_mapping *map;
	struct rpage_unmap arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	if (!arg.map_id || arg.map_id > RPAGE_MAP_ID_MAX)
		return -ENOENT;
	map = rpage_map_unlink(rfile, arg.map_id);
	if (!map)
		return -ENOENT;
	/* Areas still mapping it keep it until they are unmapped. */
	rpage_map_put(map);
	return 0;
}

/* The file is closing: no area maps anything of it any more. */
void rpage_maps_file_release(struct rpage_file *rfile)
{
	struct rpage_mapping *map;
	unsigned long id;

	xa_for_each(&rpage_maps, id, map) {
		map = rpage_map_unlink(rfile, id);
		if (map)
			rpage_map_put(map);
	}
}

/*
 * RPAGE_IOC_MAP_STATS and RPAGE_IOC_MAP_HUGE_STATS: an argument of @size
 * bytes at @argp that starts as struct rpage_map_stats does (the mapping,
 * reserved words), which @fill completes with the mapping's counters.
 */
static long rpage_map_stats_ioctl(struct rpage_file *rfile, void __user *argp,
				  void *arg, size_t size,
				  void (*fill)(struct rpage_mapping *map, void *arg))
{
	struct rpage_map_stats *head = arg;
	struct rpage_mapping *map;

	BUILD_BUG_ON(offsetof(struct rpage_map_huge_stats, map_id) !=
		     offsetof(struct rpage_map_stats, map_id) ||
		     offsetof(struct rpage_map_huge_stats, reserved) !=
		     offsetof(struct rpage_map_stats, reserved) ||
		     sizeof_field(struct rpage_map_huge_stats, reserved) !=
		     sizeof_field(struct rpage_map_stats, reserved));
	if (copy_from_user(arg, argp, size))
		return -EFAULT;
	if (memchr_inv(head->reserved, 0, sizeof(head->reserved)))
		return -EINVAL;
	map = rpage_map_get(rfile, head->map_id, true);
	if (!map)
		return -ENOENT;
	fill(map, arg);
	rpage_map_put(map);
	return copy_to_user(argp, arg, size) ? -EFAULT : 0;
}

static void rpage_map_stats_fill(struct rpage_mapping *map, void *arg)
{
	rpage_fault_counters_sum(map->counters,
				 &((struct rpage_map_stats *)arg)->stats);
}

static void rpage_map_huge_stats_fill(struct rpage_mapping *map, void *arg)
{
	rpage_fault_counters_sum_huge(map->counters,
				      ((struct rpage_map_huge_stats *)arg)->fallbacks);
}

long rpage_ioctl_map_stats(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_map_stats arg;

	return rpage_map_stats_ioctl(rfile, argp, &arg, sizeof(arg),
				     rpage_map_stats_fill);
}

long rpage_ioctl_map_huge_stats(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_map_huge_stats arg;

	return rpage_map_stats_ioctl(rfile, argp, &arg, sizeof(arg),
				     rpage_map_huge_stats_fill);
}

static void rpage_vm_open(struct vm_area_struct *vma)
{
	struct rpage_mapping *map = vma->vm_private_data;

	/* fork, or a split by munmap or mprotect of part of the area. */
	kref_get(&map->ref);
}

static void rpage_vm_close(struct vm_area_struct *vma)
{
	rpage_map_put(vma->vm_private_data);
}

static const struct vm_operations_struct rpage_vm_ops = {
	.open	= rpage_vm_open,
	.close	= rpage_vm_close,
	.fault	= rpage_vm_fault,
	.map_pages = rpage_vm_map_pages,
};

int rpage_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rpage_file *rfile = file->private_data;
	struct rpage_mapping *map;
	struct file *map_file;
	pgoff_t first;

	/* Pairs with the smp_store_release() in rpage_ioctl_api(). */
	if (!smp_load_acquire(&rfile->api_done))
		return -EINVAL;
	/* Private (copy-on-write) mappings of remote pages are not offered. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	/* Named mappings are mapped through their own node only. */
	map = rpage_map_get(rfile, vma->vm_pgoff >> RPAGE_MAP_ID_SHIFT, false);
	if (!map)
		return -EINVAL;
	first = vma->vm_pgoff - map->pgoff;
	if (first >= map->nr_pages || vma_pages(vma) > map->nr_pages - first) {
		rpage_map_put(map);
		return -EINVAL;
	}
	/*
	 * The area maps a file of the mapping's own, from its page @first:
	 * its pages are that file's page cache, so rmap, unmapping and fault
	 * indexes all go by the file (as dma_buf_mmap() switches files).
	 */
	map_file = rpage_fs_file_new(map);
	if (IS_ERR(map_file)) {
		rpage_map_put(map);
		return PTR_ERR(map_file);
	}
	vma_set_file(vma, map_file);
	fput(map_file);
	vma->vm_pgoff = first;
	rpage_map_vma_init(vma, map);
	return 0;
}

/* @vma maps pages of @map, and takes the caller's reference to it. */
void rpage_map_vma_init(struct vm_area_struct *vma, struct rpage_mapping *map)
{
	/*
	 * The area cannot grow past the mapping (mremap), is left out of
	 * core dumps (which would fetch every page) and, being special, of
	 * mlock and khugepaged: its pages stay as long as the mapping keeps
	 * them (reclaim may drop clean ones unless it is kept:
	 * rpage_map_keep()). They are base pages, or 2 MiB folios of an
	 * RPAGE_MAP_HUGE mapping, which the fault path brings in itself
	 * (VM_DONTEXPAND does not keep core mm from mapping them by PMD).
	 */
	rpage_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &rpage_vm_ops;
	vma->vm_private_data = map;
}

/*
 * Locks each folio of @map that is up to date, one at a time, and drops
 * it from the page cache with @truncate: taking the lock waits for
 * whoever holds it (a fault mapping it, fault-around, reclaim deciding
 * on it, an eviction). A folio whose reference cannot be taken is being
 * frozen (freed, or moved by compaction: a new folio takes its slot), so
 * the slot is read again, as the page cache's own lookups do.
 */
static void rpage_map_lock_each(struct rpage_mapping *map, bool truncate)
{
	XA_STATE(xas, &map->mapping->i_pages, 0);
	struct folio *folio;
	unsigned int n = 0;

	rcu_read_lock();
	xas_for_each(&xas, folio, ULONG_MAX) {
		if (xas_retry(&xas, folio) || xa_is_value(folio))
			continue;
		if (!folio_test_uptodate(folio))
			continue;
		if (!folio_try_get(folio)) {
			xas_reset(&xas);
			continue;
		}
		if (unlikely(folio != xas_reload(&xas))) {
			folio_put(folio);
			xas_reset(&xas);
			continue;
		}
		xas_pause(&xas);
		rcu_read_unlock();
		folio_lock(folio);
		if (truncate)
			rpage_folio_truncate(map->mapping, folio);
		folio_unlock(folio);
		folio_put(folio);
		if (!(++n % RPAGE_MAP_WALK_BATCH))
			cond_resched();
		rcu_read_lock();
	}
	rcu_read_unlock();
}

/**
 * rpage_map_kill - makes every access to @map from now on fault and fail
 * @map: a mapping whose every page must leave every page table now (a
 *	named mapping deleted by force).
 *
 * A fault maps a folio under its lock, having checked that the mapping
 * lives, and so does one that read it (rpage_map_folio_ready()). Once
 * the mapping is dead, each folio that is up to date is locked (which
 * waits for a fault that is mapping it) and leaves the page cache, which
 * unmaps it: fault-around, which maps folios under their lock if they
 * are still in the page cache, finds none of them. A fault that locks a
 * folio later finds the mapping dead; a READ still in flight finds it
 * dead when it ends, and its folio leaves the page cache too. The last
 * zap is for nothing but certainty. After this, no page of @map is in
 * any page table and none comes back; its memory is freed now, not when
 * the mapping goes.
 */
void rpage_map_kill(struct rpage_mapping *map)
{
	WRITE_ONCE(map->dead, true);
	/* Pairs with the one in rpage_map_folio_ready(). */
	smp_mb();
	rpage_map_lock_each(map, true);
	unmap_mapping_range(map->mapping, 0, 0, 1);
}

/**
 * rpage_map_keep - reclaim no longer drops @map's pages
 * @map: a mapping whose pages here must stay: they cannot, or need not,
 *	be read again (its peer deleted; a pull, RPAGE_PREFETCH_KEEP).
 *
 * The address space becomes unevictable, as secretmem's are. Reclaim
 * checks that under the folio's lock, so taking each folio's lock once
 * afterwards waits out a reclaimer that decided on it before: once this
 * returns, every page here stays, and a page such a reclaimer dropped
 * meanwhile is absent (a pull reads it again; without a peer, it is
 * lost as a page never read is). Pages on the LRU already are moved to
 * the unevictable list as reclaim meets them.
 */
void rpage_map_keep(struct rpage_mapping *map)
{
	if (mapping_unevictable(map->mapping))
		return;
	mapping_set_unevictable(map->mapping);
	/* Seen by reclaim on every CPU before it locks another folio. */
	smp_mb__after_atomic();
	rpage_map_lock_each(map, false);
}

/**
 * rpage_map_pages_cached - pages of @map in its page cache
 * @map: the mapping.
 * @first: the first index counted.
 * @last: the last one.
 * @uptodate: only pages here (up to date), not those being read.
 *
 * A snapshot: pages may come and go while it counts.
 */
unsigned long rpage_map_pages_cached(struct rpage_mapping *map, pgoff_t first,
				     pgoff_t last, bool uptodate)
{
	XA_STATE(xas, &map->mapping->i_pages, first);
	unsigned long nr = 0, n = 0;
	struct folio *folio;

	rcu_read_lock();
	xas_for_each(&xas, folio, last) {
		if (xas_retry(&xas, folio) || xa_is_value(folio))
			continue;
		/* Its pages in the range: a 2 MiB folio's may start before. */
		if (!uptodate || folio_test_uptodate(folio))
			nr += min_t(pgoff_t, folio->index + folio_nr_pages(folio),
				    last + 1) - max_t(pgoff_t, folio->index, first);
		if (++n % RPAGE_MAP_WALK_BATCH || !need_resched())
			continue;
		xas_pause(&xas);
		rcu_read_unlock();
		cond_resched();
		rcu_read_lock();
	}
	rcu_read_unlock();
	return nr;
}

/*
 * Eviction. Every folio here in the range is locked, so that faults
 * wait; its mappings are zapped, which moves the dirty bits of the page
 * tables to the folios; dirty ones are written back; then the folios
 * leave the page cache. On failure every one stays as it was. A folio
 * whose READ is in flight is left alone. A folio goes whole: a 2 MiB
 * one partly in the range takes the range out to its ends (never a part
 * of it truncated, which would zero the rest).
 */
struct rpage_evict_batch {
	struct rpage_mapping *map;
	unsigned long nr;
	unsigned long nr_pages;
	unsigned long nr_dirty;
	struct folio **folios;
};

/* Ends an eviction: truncates the folios of @b, or leaves them. */
static void rpage_evict_settle(struct rpage_evict_batch *b, bool drop)
{
	unsigned long i;

	for (i = 0; i < b->nr; i++) {
		struct folio *folio = b->folios[i];

		if (drop)
			rpage_folio_truncate(b->map->mapping, folio);
		folio_unlock(folio);
		folio_put(folio);
		if (!((i + 1) % RPAGE_MAP_WALK_BATCH))
			cond_resched();
	}
}

/*
 * Takes @folio (referenced) into @b, locked, if it is still an up to
 * date folio of the mapping; drops it otherwise. -EINTR if a fatal
 * signal came while it waited for the lock (another eviction's write).
 */
static int rpage_evict_take(struct rpage_evict_batch *b, struct folio *folio)
{
	int ret = 0;

	if (folio_test_uptodate(folio)) {
		ret = folio_lock_killable(folio);
		if (!ret && folio->mapping == b->map->mapping &&
		    folio_test_uptodate(folio)) {
			b->folios[b->nr++] = folio;
			b->nr_pages += folio_nr_pages(folio);
			return 0;
		}
		if (!ret)
			folio_unlock(folio);
	}
	folio_put(folio);
	return ret;
}

/*
 * Locks into @b the folios of [@first, @last] that are up to date; 0 or
 * -EINTR, with what it took still in @b.
 */
static int rpage_evict_claim(struct rpage_evict_batch *b, pgoff_t first,
			     pgoff_t last)
{
	struct folio_batch fbatch;
	unsigned int i;
	int ret = 0;

	folio_batch_init(&fbatch);
	while (filemap_get_folios(b->map->mapping, &first, last, &fbatch)) {
		/* In index order, as every eviction locks them. */
		for (i = 0; i < folio_batch_count(&fbatch); i++) {
			if (ret)
				folio_put(fbatch.folios[i]);
			else
				ret = rpage_evict_take(b, fbatch.folios[i]);
		}
		/* Each reference was taken over, or dropped: empty it. */
		folio_batch_init(&fbatch);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}

/*
 * Describes a transfer of @nr pages of @map to @x: its peer (referenced
 * until rpage_map_xfer_release(); NULL once deleted, and the transfer
 * then fails), and in @range its pool as mapped (this incarnation
 * only); the pages are @pages, at indexes @index in the mapping.
 */
void rpage_map_xfer_init(struct rpage_mapping *map, struct rpage_xfer *x,
			 struct rpage_xfer_range *range, bool write,
			 const unsigned long *index, struct page **pages,
			 unsigned long nr)
{
	*range = (struct rpage_xfer_range) {
		.pool_id = map->pool_id,
		.generation = map->pool_generation,
		.offset = map->pool_offset,
		.extent = map->nr_pages,
		.index = index,
		.nr = nr,
	};
	*x = (struct rpage_xfer) {
		.peer = rpage_map_peer_get(map),
		.write = write,
		.ranges = range,
		.nr_ranges = 1,
		.pages = pages,
		.nr_pages = nr,
		.node_id = map->node_id,
	};
}

void rpage_map_xfer_release(struct rpage_xfer *x)
{
	if (x->peer)
		rpage_peer_put(x->peer);
}

/*
 * Writes back every page of the dirty folios of @b to the pool (their
 * dirtiness is the folio's); counts them in @b->nr_dirty.
 */
static int rpage_evict_write(struct rpage_evict_batch *b)
{
	struct rpage_xfer_range range;
	unsigned long i, j, n = 0;
	struct rpage_xfer x;
	unsigned long *index;
	struct page **pages;
	int ret;

	for (i = 0; i < b->nr; i++)
		if (folio_test_dirty(b->folios[i]))
			b->nr_dirty += folio_nr_pages(b->folios[i]);
	if (!b->nr_dirty)
		return 0;
	index = kvcalloc(b->nr_dirty, sizeof(*index), GFP_KERNEL | __GFP_NOWARN);
	pages = kvcalloc(b->nr_dirty, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
	if (!index || !pages) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->nr; i++) {
		struct folio *folio = b->folios[i];

		if (!folio_test_dirty(folio))
			continue;
		for (j = 0; j < folio_nr_pages(folio); j++) {
			index[n] = folio->index + j;
			pages[n++] = folio_page(folio, j);
		}
	}
	rpage_map_xfer_init(b->map, &x, &range, true, index, pages, n);
	x.killable = true;
	ret = rpage_xfer(&x);
	rpage_map_xfer_release(&x);
	if (ret == -EPERM)
		ret = -EROFS;
out:
	kvfree(index);
	kvfree(pages);
	return ret;
}

static int rpage_evict(struct rpage_mapping *map, unsigned long first,
		       unsigned long nr, struct rpage_evict *arg)
{
	struct rpage_evict_batch b = { .map = map };
	pgoff_t start, end;
	unsigned long i;
	int ret = 0;

	/*
	 * The range is the caller's to choose: too large is ENOMEM, no WARN.
	 * Each folio has a page in the range: no more folios than pages.
	 */
	b.folios = kvcalloc(nr, sizeof(*b.folios), GFP_KERNEL | __GFP_NOWARN);
	if (!b.folios)
		return -ENOMEM;
	ret = rpage_evict_claim(&b, first, first + nr - 1);
	if (ret || !b.nr) {
		rpage_evict_settle(&b, false);
		goto out;
	}
	/*
	 * A write back of them in progress may find the pool gone, and leave
	 * them clean as the only copy: it ends first, and says so first.
	 */
	for (i = 0; i < b.nr; i++)
		folio_wait_writeback(b.folios[i]);
	/* Pairs with the smp_mb() in rpage_fs_wb_flush(). */
	smp_rmb();
	ret = READ_ONCE(map->pool_lost);
	if (ret) {
		rpage_evict_settle(&b, false);
		goto out;
	}
	/*
	 * A fault maps a folio under its lock: with every lock taken, those
	 * mappings are in place, the zap takes them all down, and none comes
	 * back while the locks are held. Out to the ends of the folios.
	 */
	start = min_t(pgoff_t, first, b.folios[0]->index);
	end = max_t(pgoff_t, first + nr, folio_next_index(b.folios[b.nr - 1]));
	unmap_mapping_range(map->mapping, (loff_t)start << PAGE_SHIFT,
			    (loff_t)(end - start) << PAGE_SHIFT, 1);
	ret = rpage_evict_write(&b);
	/* All or nothing: a page not written back stays. */
	rpage_evict_settle(&b, !ret);
	if (!ret) {
		arg->evicted = b.nr_pages;
		arg->written = b.nr_dirty;
		rpage_fault_count(map, RPAGE_FC_EVICTED, b.nr_pages);
		rpage_fault_count(map, RPAGE_FC_WRITTEN, b.nr_dirty);
	}
out:
	kvfree(b.folios);
	return ret;
}

long rpage_ioctl_evict(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_mapping *map;
	struct rpage_evict arg;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.reserved0 ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)) ||
	    !rpage_page_range_valid(arg.offset, arg.length))
		return -EINVAL;
	map = rpage_map_get_range(rfile, arg.map_id, arg.offset, arg.length);
	if (IS_ERR(map))
		return PTR_ERR(map);
	arg.evicted = 0;
	arg.written = 0;
	/* Without its peer, no page evicted could ever be read again. */
	if (!rcu_access_pointer(map->peer))
		ret = -ENOTCONN;
	else
		ret = rpage_evict(map, arg.offset >> PAGE_SHIFT,
				  arg.length >> PAGE_SHIFT, &arg);
	rpage_map_put(map);
	if (!ret && copy_to_user(argp, &arg, sizeof(arg)))
		ret = -EFAULT;
	return ret;
}
