/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * librpage: thin wrappers around the ioctls of /dev/rpage.
 *
 * Every call that can fail returns 0 (or a non-negative value where
 * documented) on success and a negative errno value on failure; errno is
 * left as the failing system call set it. The library keeps no state of
 * its own: the file descriptor is the caller's.
 */
#ifndef LIBRPAGE_H
#define LIBRPAGE_H

#include <linux/rpage.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The path rpage_open() opens. */
#define RPAGE_DEVICE_PATH "/dev/" RPAGE_DEVICE_NAME

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *rpage_lib_version(void);

/* Open /dev/rpage with O_RDWR | O_CLOEXEC | @flags; returns an fd. */
int rpage_open(int flags);

/* RPAGE_IOC_API: the handshake every fd must complete first. */
int rpage_api(int fd, struct rpage_api *api);

/* RPAGE_IOC_DEVICE_LIST: the RDMA devices the module is attached to. */
int rpage_device_list(int fd, struct rpage_device_list *list);

#ifdef __cplusplus
}
#endif

#endif /* LIBRPAGE_H */
