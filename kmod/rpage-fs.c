// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the inodes whose page caches hold remote mappings' pages.
 *
 * Every remote mapping's pages are folios in the page cache of an inode
 * of its own, on a small internal file system, the way secretmem and
 * guest_memfd keep theirs: the kernel's memory management sees them as
 * file pages (on the LRU, charged as "file" to a memory cgroup, found
 * by rmap, migrated by compaction), and faults, prefetch and eviction
 * use the page cache's own lookups and folio locks. Every file an area
 * of a mapping maps uses the inode's address space: a named mapping's
 * node files from their open on, and for an area of /dev/rpage an
 * anonymous file the area is switched to when it is mapped (as
 * dma_buf_mmap() switches files).
 *
 * Only the mappings hold these inodes (never a file: files are on
 * anon_inodefs or devtmpfs, and hold the mapping), and a mapping goes by
 * this module's code, so no inode, page or super block here outlives
 * the module.
 *
 * The pages are a cache of the peer's pool, as a network file system's
 * are of its server's files: reclaim drops clean ones under memory
 * pressure, the host's or their memory cgroup's (and MADV_PAGEOUT asks
 * for it), leaving the page cache's shadow entry behind, and the next
 * touch reads them again (counted: refetched).
 *
 * Dirty pages: a mapping of a writable pool lives on a super block with
 * a backing device of its own, so its pages are dirtied the way a file
 * system's are (accounted, the writer throttled by balance_dirty_pages(),
 * per memory cgroup with cgroup writeback) and the flusher writes them
 * back to the pool through the transfer core (->writepages), after which
 * reclaim may drop them like clean ones. Reclaim never writes itself (no
 * ->writepage, as XFS): it marks them and wakes the flusher. A mapping
 * of a read-only pool lives on a super block without writeback: its
 * dirty pages are its own, and stay until it goes (as anonymous memory
 * on a host without swap).
 *
 * A mapping whose pages here are all it can ever have (its peer deleted,
 * or pulled to be kept: RPAGE_PREFETCH_KEEP) is made unevictable, as
 * secretmem's address spaces are (rpage_map_keep()).
 */
#include "rpage-pri.h"

#include <linux/anon_inodes.h>
#include <linux/fs.h>
#include <linux/migrate.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/writeback.h>

/* Of the internal file system the mappings' inodes live on. */
#define RPAGE_FS_MAGIC	0x72706d66	/* "rpmf" */

/*
 * Pages written back at once: one transfer (adjacent ones share a WRITE).
 * A folio goes whole, so a batch holds a 2 MiB one.
 */
#define RPAGE_FS_WB_BATCH	RPAGE_HUGE_NR

/* Mappings of read-only pools; of writable ones, with writeback. */
static struct vfsmount *rpage_fs_mnt;
static struct vfsmount *rpage_fs_wb_mnt;

/*
 * An inode goes at its last iput(): nothing is cached here (a mapping's
 * inode is hashed, for writeback, and would otherwise stay on the LRU).
 */
static const struct super_operations rpage_fs_sops = {
	.statfs		= simple_statfs,
	.drop_inode	= generic_delete_inode,
};

static int rpage_fs_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx = init_pseudo(fc, RPAGE_FS_MAGIC);

	if (!ctx)
		return -ENOMEM;
	ctx->ops = &rpage_fs_sops;
	return 0;
}

static struct file_system_type rpage_fs_type = {
	.name		= "rpage-map",
	.init_fs_context = rpage_fs_init_fs_context,
	.kill_sb	= kill_anon_super,
};

/*
 * A read-only pool's mapping: stores dirty its pages for good (no dirty
 * accounting, no flusher); eviction refuses them. Compaction may move a
 * page that nothing holds.
 */
static const struct address_space_operations rpage_fs_aops = {
	.dirty_folio	= noop_dirty_folio,
	.migrate_folio	= filemap_migrate_folio,
};

/**
 * struct rpage_fs_wb - a writeback of a mapping in progress
 * @map: the mapping (see rpage_fs_writepages() for its lifetime).
 * @nr: pages in the batch: every page of each of its folios.
 * @nr_folios: its folios, under writeback and referenced.
 * @err: the first error of a batch, 0 if none.
 * @index: the pages' indexes in the mapping.
 * @pages: the pages.
 * @folios: the folios.
 */
struct rpage_fs_wb {
	struct rpage_mapping *map;
	unsigned int nr;
	unsigned int nr_folios;
	int err;
	unsigned long index[RPAGE_FS_WB_BATCH];
	struct page *pages[RPAGE_FS_WB_BATCH];
	struct folio *folios[RPAGE_FS_WB_BATCH];
};

/*
 * Writes the batch to the pool and ends its folios' writeback. A folio
 * that was not written is dirtied again (it is still under writeback, so
 * nothing truncates it meanwhile): its data is never lost, and the
 * flusher tries again later; the error is the mapping's (fsync reports
 * it). The transfer rides through a peer reconnecting, as a fault's does.
 *
 * Unless nothing can ever take the data: the peer deleted, or the pool
 * withdrawn or replaced (this mapping's incarnation of it gone for
 * good). Dirtied again, its pages would stay dirty forever, and hold
 * every writer of the host or its memory cgroup to the dirty limits
 * forever too. They stay clean instead, in a mapping made unevictable
 * (rpage_map_keep(): its pages are all it can ever have), as a
 * read-only pool's dirty pages stay: the mapping keeps its data until it
 * goes, and fsync reports the error.
 */
static void rpage_fs_wb_flush(struct rpage_fs_wb *wb)
{
	struct rpage_xfer_range range;
	struct rpage_xfer x;
	bool for_good;
	unsigned int i;
	int ret;

	if (!wb->nr)
		return;
	rpage_map_xfer_init(wb->map, &x, &range, true, wb->index, wb->pages,
			    wb->nr);
	ret = rpage_xfer(&x);
	for_good = !x.peer || ret == -ENOENT || ret == -ESTALE;
	rpage_map_xfer_release(&x);
	if (ret) {
		if (!wb->err)
			wb->err = ret;
		mapping_set_error(wb->map->mapping, ret);
	} else {
		rpage_fault_count(wb->map, RPAGE_FC_WRITTEN, wb->nr);
	}
	/*
	 * The pages it leaves clean are the only copy: no eviction may drop
	 * them (a deleted peer's mapping evicts nothing). Told before their
	 * writeback ends, which an eviction waits for before it looks.
	 */
	if (ret == -ENOENT || ret == -ESTALE) {
		WRITE_ONCE(wb->map->pool_lost, ret);
		/* Pairs with the smp_rmb() in rpage_evict(). */
		smp_mb();
	}
	for (i = 0; i < wb->nr_folios; i++) {
		struct folio *folio = wb->folios[i];

		if (ret && !for_good)
			filemap_dirty_folio(wb->map->mapping, folio);
		folio_end_writeback(folio);
	}
	/*
	 * Kept once their writeback ended (keeping takes each folio's lock,
	 * which a truncation holds while it waits for writeback); their
	 * references, held until then, keep reclaim off them meanwhile.
	 */
	if (ret && for_good)
		rpage_map_keep(wb->map);
	for (i = 0; i < wb->nr_folios; i++)
		folio_put(wb->folios[i]);
	wb->nr = 0;
	wb->nr_folios = 0;
}

/*
 * One dirty folio of a writeback (write_cache_pages() locked it and
 * cleared its dirty bit, write-protecting its page table entries, so
 * that a store after this dirties it again): into the batch.
 */
static int rpage_fs_writefolio(struct folio *folio,
			       struct writeback_control *wbc, void *data)
{
	struct rpage_fs_wb *wb = data;
	unsigned long i, nr = folio_nr_pages(folio);

	/* Dirtiness is the folio's: every page of it is written. */
	if (wb->nr + nr > RPAGE_FS_WB_BATCH)
		rpage_fs_wb_flush(wb);
	folio_start_writeback(folio);
	folio_unlock(folio);
	folio_get(folio);
	wb->folios[wb->nr_folios++] = folio;
	for (i = 0; i < nr; i++) {
		wb->index[wb->nr] = folio->index + i;
		wb->pages[wb->nr++] = folio_page(folio, i);
	}
	if (wb->nr == RPAGE_FS_WB_BATCH)
		rpage_fs_wb_flush(wb);
	return 0;
}

/*
 * ->writepages of a writable pool's mapping: the flusher's and fsync's
 * way of writing its dirty pages back. It takes no reference on the
 * mapping: its last one would then end it here, and the inode's eviction
 * would wait for this very writeback. The mapping outlives it instead:
 * the flusher holds the inode under writeback (I_SYNC), which its
 * eviction, the first step of the mapping's release, waits for; fsync
 * holds a file, which holds the mapping.
 */
static int rpage_fs_writepages(struct address_space *mapping,
			       struct writeback_control *wbc)
{
	struct rpage_mapping *map = mapping->host->i_private;
	unsigned int nofs;
	struct rpage_fs_wb *wb;
	int ret;

	wb = kvmalloc(sizeof(*wb), GFP_NOFS);
	if (!wb)
		return -ENOMEM;
	wb->map = map;
	wb->nr = 0;
	wb->nr_folios = 0;
	wb->err = 0;
	/* Its allocations must not wait for writeback of its own pages. */
	nofs = memalloc_nofs_save();
	ret = rpage_write_cache_pages(mapping, wbc, rpage_fs_writefolio, wb);
	rpage_fs_wb_flush(wb);
	memalloc_nofs_restore(nofs);
	ret = ret ?: wb->err;
	kvfree(wb);
	return ret;
}

/* A writable pool's mapping: written back by the flusher. */
static const struct address_space_operations rpage_fs_wb_aops = {
	.dirty_folio	= filemap_dirty_folio,
	.writepages	= rpage_fs_writepages,
	.migrate_folio	= filemap_migrate_folio,
};

/**
 * rpage_fs_fsync - msync(MS_SYNC) and fsync() of a mapping's file
 * @file: an area's file of /dev/rpage, or a named mapping's node.
 * @start: first byte.
 * @end: last byte.
 * @datasync: unused: there is no metadata.
 *
 * Writes the range's dirty pages back to the pool and waits for them; 0,
 * or the error of a writeback since the file last asked. A read-only
 * pool's mapping has no writeback: its dirty pages stay, and it returns 0
 * (as tmpfs does).
 */
int rpage_fs_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	return file_write_and_wait_range(file, start, end);
}

static int rpage_fs_file_release(struct inode *inode, struct file *file)
{
	rpage_map_put(file->private_data);
	return 0;
}

/* The files areas of /dev/rpage map: they hold the module and the mapping. */
static const struct file_operations rpage_fs_file_fops = {
	.owner		= THIS_MODULE,
	.release	= rpage_fs_file_release,
	.fsync		= rpage_fs_fsync,
};

/**
 * rpage_fs_inode_new - an inode whose page cache holds @map's pages
 * @map: a new mapping, its size set.
 * @writable: its pool is writable: its dirty pages are written back.
 *
 * Returns the inode with one reference, or an ERR_PTR(). It is on no
 * list of its super block (alloc_anon_inode()), so that drop_caches
 * never sees it (a kept mapping's pages must stay), and is freed with
 * its pages at its last iput(). A written-back one is on its backing
 * device's lists of dirty inodes while it has dirty pages.
 */
struct inode *rpage_fs_inode_new(struct rpage_mapping *map, bool writable)
{
	struct vfsmount *mnt = writable ? rpage_fs_wb_mnt : rpage_fs_mnt;
	struct inode *inode = alloc_anon_inode(mnt->mnt_sb);

	if (IS_ERR(inode))
		return inode;
	/* A regular file, as secretmem's: truncation helpers want one. */
	inode->i_mode = S_IFREG | 0600;
	inode->i_private = map;
	i_size_write(inode, (loff_t)map->nr_pages << PAGE_SHIFT);
	/* Its folios may be 2 MiB (rpage_fault_huge()), or 4 KiB. */
	if (map->flags & RPAGE_MAP_HUGE)
		mapping_set_large_folios(inode->i_mapping);
	if (!writable) {
		inode->i_mapping->a_ops = &rpage_fs_aops;
		return inode;
	}
	inode->i_mapping->a_ops = &rpage_fs_wb_aops;
	/*
	 * alloc_anon_inode() marks an inode dirty for good, so that it never
	 * joins a list of dirty inodes, and leaves it unhashed, which
	 * __mark_inode_dirty() skips too: this one is written back. Nobody
	 * else has it yet. Hashed for real, by its number, not with
	 * inode_fake_hash(): eviction leaves a fake hash in place, and the
	 * next inode made in this memory of the kernel's shared inode cache
	 * (a pipe's) would look hashed, and never be freed.
	 */
	inode->i_state = 0;
	insert_inode_hash(inode);
	return inode;
}

/**
 * rpage_fs_file_new - a file of @map's pages, for an area of /dev/rpage
 * @map: a mapping with its inode.
 *
 * An anonymous file whose address space is @map's, as a named mapping's
 * node files are: the area mapping it holds it, and it holds the module
 * and @map (which holds the inode) for as long as anyone holds it.
 * Returns it, or an ERR_PTR().
 */
struct file *rpage_fs_file_new(struct rpage_mapping *map)
{
	struct file *file;

	file = anon_inode_getfile("[rpage-map]", &rpage_fs_file_fops, map,
				  O_RDWR);
	if (IS_ERR(file))
		return file;
	kref_get(&map->ref);
	file->f_mapping = map->mapping;
	return file;
}

int rpage_fs_init(void)
{
	struct super_block *sb;
	int ret;

	rpage_fs_mnt = kern_mount(&rpage_fs_type);
	if (IS_ERR(rpage_fs_mnt))
		return PTR_ERR(rpage_fs_mnt);
	rpage_fs_wb_mnt = kern_mount(&rpage_fs_type);
	if (IS_ERR(rpage_fs_wb_mnt)) {
		ret = PTR_ERR(rpage_fs_wb_mnt);
		goto err;
	}
	/*
	 * The writable pools' super block gets a backing device of its own
	 * (rpage-map-N in /sys/class/bdi): a flusher, dirty limits, and
	 * writeback per memory cgroup, so that a cgroup's dirty pages are
	 * held to its share of memory. Nothing uses the super block yet.
	 */
	sb = rpage_fs_wb_mnt->mnt_sb;
	ret = super_setup_bdi(sb);
	if (ret) {
		kern_unmount(rpage_fs_wb_mnt);
		goto err;
	}
	sb->s_iflags |= SB_I_CGROUPWB;
	return 0;
err:
	kern_unmount(rpage_fs_mnt);
	return ret;
}

/* Every mapping is gone: each one's inode went with its last reference. */
void rpage_fs_exit(void)
{
	kern_unmount(rpage_fs_wb_mnt);
	kern_unmount(rpage_fs_mnt);
}
