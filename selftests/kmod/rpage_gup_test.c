// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_gup_test: faults in a page of the calling process the way KVM
 * does, for rpage's selftests (built with them, never installed).
 *
 * A KVM vCPU that touches guest memory not yet mapped asks for the page
 * with get_user_pages_unlocked(FOLL_NOWAIT) first: the fault then carries
 * FAULT_FLAG_RETRY_NOWAIT, must not sleep, and GUP returns no page if the
 * page is not at hand, while the vCPU runs something else (an
 * asynchronous page fault) and asks again later. No user space access
 * takes that path, so rpage's handling of it is reached only from here.
 *
 * /dev/rpage_gup_test takes one ioctl, RPAGE_GUP_TEST_FAULT: get the
 * page at @addr of the caller's memory, with FOLL_NOWAIT and/or
 * FOLL_WRITE as asked; say what GUP returned, how long it took, and the
 * first bytes of the page at @addr if it got the page.
 */
#include <linux/bits.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/uaccess.h>

/**
 * struct rpage_gup_test_fault - RPAGE_GUP_TEST_FAULT's argument
 * @addr: in: the address in the caller's memory.
 * @flags: in: RPAGE_GUP_TEST_NOWAIT, RPAGE_GUP_TEST_WRITE.
 * @result: out: what get_user_pages_unlocked() returned (1: the page).
 * @ns: out: how long it took.
 * @head: out: the 64 bytes at @addr, if the page was got.
 */
struct rpage_gup_test_fault {
	__u64 addr;
	__u32 flags;
	__s32 result;
	__u64 ns;
	__u8 head[64];
};

#define RPAGE_GUP_TEST_NOWAIT	BIT(0)
#define RPAGE_GUP_TEST_WRITE	BIT(1)
#define RPAGE_GUP_TEST_FAULT	_IOWR('r', 0xf0, struct rpage_gup_test_fault)

static long rpage_gup_test_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	struct rpage_gup_test_fault f;
	unsigned int gup_flags = 0;
	struct page *page;
	u64 t0;
	void *va;

	if (cmd != RPAGE_GUP_TEST_FAULT)
		return -ENOTTY;
	if (copy_from_user(&f, (void __user *)arg, sizeof(f)))
		return -EFAULT;
	if (f.flags & ~(RPAGE_GUP_TEST_NOWAIT | RPAGE_GUP_TEST_WRITE) ||
	    offset_in_page(f.addr) > PAGE_SIZE - sizeof(f.head))
		return -EINVAL;
	if (f.flags & RPAGE_GUP_TEST_NOWAIT)
		gup_flags |= FOLL_NOWAIT;
	if (f.flags & RPAGE_GUP_TEST_WRITE)
		gup_flags |= FOLL_WRITE;
	t0 = ktime_get_ns();
	f.result = get_user_pages_unlocked(f.addr & PAGE_MASK, 1, &page,
					   gup_flags);
	f.ns = ktime_get_ns() - t0;
	memset(f.head, 0, sizeof(f.head));
	if (f.result == 1) {
		va = kmap_local_page(page);
		memcpy(f.head, va + offset_in_page(f.addr), sizeof(f.head));
		kunmap_local(va);
		put_page(page);
	}
	return copy_to_user((void __user *)arg, &f, sizeof(f)) ? -EFAULT : 0;
}

static const struct file_operations rpage_gup_test_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= rpage_gup_test_ioctl,
};

static struct miscdevice rpage_gup_test_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "rpage_gup_test",
	.fops	= &rpage_gup_test_fops,
	.mode	= 0600,
};

module_misc_device(rpage_gup_test_dev);

MODULE_DESCRIPTION("rpage selftests: faults taken as KVM takes them");
MODULE_LICENSE("GPL");
