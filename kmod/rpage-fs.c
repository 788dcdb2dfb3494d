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
 * touch reads them again (counted: refetched). Dirty ones stay, since
 * no writeback writes them (no ->writepage: reclaim keeps them active).
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

/* Of the internal file system the mappings' inodes live on. */
#define RPAGE_FS_MAGIC	0x72706d66	/* "rpmf" */

static struct vfsmount *rpage_fs_mnt;

static int rpage_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, RPAGE_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type rpage_fs_type = {
	.name		= "rpage-map",
	.init_fs_context = rpage_fs_init_fs_context,
	.kill_sb	= kill_anon_super,
};

/*
 * Pages stores through a mapping dirtied are written back by eviction
 * only (rpage-map.c): no dirty accounting, no flusher. Compaction may
 * move a page that nothing holds.
 */
static const struct address_space_operations rpage_fs_aops = {
	.dirty_folio	= noop_dirty_folio,
	.migrate_folio	= filemap_migrate_folio,
};

static int rpage_fs_file_release(struct inode *inode, struct file *file)
{
	rpage_map_put(file->private_data);
	return 0;
}

/* The files areas of /dev/rpage map: they hold the module and the mapping. */
static const struct file_operations rpage_fs_file_fops = {
	.owner		= THIS_MODULE,
	.release	= rpage_fs_file_release,
};

/**
 * rpage_fs_inode_new - an inode whose page cache holds @map's pages
 * @map: a new mapping, its size set.
 *
 * Returns the inode with one reference, or an ERR_PTR(). It is on no
 * list of its super block (alloc_anon_inode()), so that drop_caches
 * never sees it, and is freed with its pages at its last iput().
 */
struct inode *rpage_fs_inode_new(struct rpage_mapping *map)
{
	struct inode *inode = alloc_anon_inode(rpage_fs_mnt->mnt_sb);

	if (IS_ERR(inode))
		return inode;
	/* A regular file, as secretmem's: truncation helpers want one. */
	inode->i_mode = S_IFREG | 0600;
	inode->i_mapping->a_ops = &rpage_fs_aops;
	i_size_write(inode, (loff_t)map->nr_pages << PAGE_SHIFT);
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
	rpage_fs_mnt = kern_mount(&rpage_fs_type);
	return PTR_ERR_OR_ZERO(rpage_fs_mnt);
}

/* Every mapping is gone: each one's inode went with its last reference. */
void rpage_fs_exit(void)
{
	kern_unmount(rpage_fs_mnt);
}
