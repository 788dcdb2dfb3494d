// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: RPAGE_IOC_READ and RPAGE_IOC_WRITE.
 *
 * The caller's buffers are pinned and handed to rpage_xfer() page by
 * page (zero copy). Consecutive ranges to one peer are one transfer, so
 * that their READs or WRITEs are in flight together.
 */
#include "rpage-pri.h"

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/*
 * Pins the caller's buffer of @iov into @pages, as few calls as it
 * takes; *@pinned says how far it got. This runs before any transfer:
 * the buffer may be an rpage mapping, whose faults transfer too.
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

/* Ranges to one peer: pin every buffer, transfer, unpin. */
static int rpage_io_batch(struct rpage_peer *peer,
			  const struct rpage_iovec *iovs, unsigned int nr_iov,
			  bool write)
{
	struct rpage_xfer x = {
		.peer = peer,
		.write = write,
		.killable = true,
		.nr_ranges = nr_iov,
	};
	unsigned long pinned = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < nr_iov; i++)
		x.nr_pages += iovs[i].length >> PAGE_SHIFT;
	x.pages = kvcalloc(x.nr_pages, sizeof(*x.pages), GFP_KERNEL);
	x.ranges = kcalloc(nr_iov, sizeof(*x.ranges), GFP_KERNEL);
	if (!x.pages || !x.ranges) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < nr_iov; i++) {
		unsigned long got;

		x.ranges[i].pool_id = iovs[i].pool_id;
		x.ranges[i].offset = iovs[i].offset;
		x.ranges[i].nr = iovs[i].length >> PAGE_SHIFT;
		ret = rpage_io_pin(&iovs[i], write, x.pages + pinned, &got);
		pinned += got;
		if (ret)
			goto out_unpin;
	}
	ret = rpage_xfer(&x);
	/* A read wrote into the pages: the page cache must know. */
	unpin_user_pages_dirty_lock(x.pages, pinned, !write);
	pinned = 0;
out_unpin:
	if (pinned)
		unpin_user_pages(x.pages, pinned);
out_free:
	kfree(x.ranges);
	kvfree(x.pages);
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
		rpage_peer_put(peer);
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
	/* Whoever may write pools may write the peers' memory: an O_RDONLY file may not. */
	if (!(rfile->file->f_mode & FMODE_WRITE))
		return -EBADF;
	return rpage_io(argp, true);
}
