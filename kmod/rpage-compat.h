/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: differences between the kernel APIs rpage.ko builds against
 * (Debian's 6.1 and 6.12). Every version test lives here, nowhere else.
 */
#ifndef RPAGE_COMPAT_H
#define RPAGE_COMPAT_H

#include <linux/version.h>

#endif /* RPAGE_COMPAT_H */
