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

#endif /* RPAGE_COMPAT_H */
