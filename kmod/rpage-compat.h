/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: differences between the kernel APIs rpage.ko builds against
 * (Debian's 6.1 and 6.12). Every version test lives here, nowhere else.
 */
#ifndef RPAGE_COMPAT_H
#define RPAGE_COMPAT_H

#include <linux/version.h>
#include <linux/hugetlb.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/net.h>
#include <linux/bvec.h>
#include <linux/uio.h>
#include <linux/writeback.h>

/* 6.3 made vm_flags read-only outside the helpers. */
static inline void rpage_vm_flags_set(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * Drops what a fault handler holds of the process's memory map before a
 * long wait (FAULT_FLAG_ALLOW_RETRY): 6.5 added per-VMA locks and the
 * helper that drops whichever lock the fault came in with.
 */
static inline void rpage_release_fault_lock(struct vm_fault *vmf)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	release_fault_lock(vmf);
#else
	mmap_read_unlock(vmf->vma->vm_mm);
#endif
}

/* Whether a fault came with the per-VMA lock rather than mmap_lock (6.4). */
static inline bool rpage_fault_vma_locked(const struct vm_fault *vmf)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	return vmf->flags & FAULT_FLAG_VMA_LOCK;
#else
	return false;
#endif
}

/*
 * Where a named mapping's node goes (rpage-named.c), as the device_type's
 * devnode callback, whose device 6.2 made const.
 */
struct device;
char *rpage_named_devnode(const struct device *dev, umode_t *mode,
			  kuid_t *uid, kgid_t *gid);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define rpage_named_devnode_cb rpage_named_devnode
#else
static inline char *rpage_named_devnode_cb(struct device *dev, umode_t *mode,
					   kuid_t *uid, kgid_t *gid)
{
	return rpage_named_devnode(dev, mode, uid, gid);
}
#endif

/*
 * The huge page of hugetlbfs @mapping that holds huge page @hidx of the
 * file, referenced, or NULL where the file has none yet: 6.7 moved
 * hugetlbfs's page cache from huge-page to base-page indexes, and 6.4
 * made the lookup return an ERR_PTR for nothing.
 */
static inline struct folio *
rpage_hugetlb_folio_get(struct hstate *h, struct address_space *mapping,
			pgoff_t hidx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	struct folio *folio = filemap_get_folio(mapping,
						hidx << huge_page_order(h));

	return IS_ERR(folio) ? NULL : folio;
#else
	return filemap_get_folio(mapping, hidx);
#endif
}

/*
 * The folio at @index of @mapping, referenced, or NULL: 6.4 made the
 * lookup return an ERR_PTR for nothing.
 */
static inline struct folio *rpage_filemap_get_folio(struct address_space *mapping,
						    pgoff_t index)
{
	struct folio *folio = filemap_get_folio(mapping, index);

	return IS_ERR(folio) ? NULL : folio;
}

/*
 * Truncates locked @folio out of @mapping (a regular file's), once its
 * writeback is over, unmapping it first if it is mapped: what
 * truncate_inode_folio() does, which
 * modules reach through the error-removal helper, a folio's since 6.7.
 */
static inline int rpage_folio_truncate(struct address_space *mapping,
				       struct folio *folio)
{
	/* Never out of the page cache while its WRITE reads it. */
	folio_wait_writeback(folio);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	return generic_error_remove_folio(mapping, folio);
#else
	return generic_error_remove_page(mapping, &folio->page);
#endif
}

/*
 * write_cache_pages() with a callback of folios: its callback took a
 * page before 6.3.
 */
typedef int (*rpage_writefolio_t)(struct folio *folio,
				  struct writeback_control *wbc, void *data);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
static inline int rpage_write_cache_pages(struct address_space *mapping,
					  struct writeback_control *wbc,
					  rpage_writefolio_t fn, void *data)
{
	return write_cache_pages(mapping, wbc, fn, data);
}
#else
struct rpage_write_cache {
	rpage_writefolio_t fn;
	void *data;
};

static inline int rpage_write_cache_page(struct page *page,
					 struct writeback_control *wbc,
					 void *data)
{
	struct rpage_write_cache *w = data;

	return w->fn(page_folio(page), wbc, w->data);
}

static inline int rpage_write_cache_pages(struct address_space *mapping,
					  struct writeback_control *wbc,
					  rpage_writefolio_t fn, void *data)
{
	struct rpage_write_cache w = { .fn = fn, .data = data };

	return write_cache_pages(mapping, wbc, rpage_write_cache_page, &w);
}
#endif

/*
 * Sends @len bytes of @page from @offset on @sock without copying them:
 * the socket takes a reference on the page until it is acknowledged.
 * 6.5 replaced ->sendpage with MSG_SPLICE_PAGES. Returns the bytes
 * taken, or -errno.
 */
static inline int rpage_sock_send_page(struct socket *sock, struct page *page,
				       int offset, size_t len, int flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES };
	struct bio_vec bvec;

	bvec_set_page(&bvec, page, len, offset);
	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, &bvec, 1, len);
	return sock_sendmsg(sock, &msg);
#else
	return kernel_sendpage(sock, page, offset, len, flags);
#endif
}

#endif /* RPAGE_COMPAT_H */
