/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: differences between the kernel APIs rpage.ko builds against
 * (Debian's 6.1 and 6.12). Every version test lives here, nowhere else.
 */
#ifndef RPAGE_COMPAT_H
#define RPAGE_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>

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

#endif /* RPAGE_COMPAT_H */
