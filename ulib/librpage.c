// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librpage: one function per ioctl of /dev/rpage.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>

#include "librpage.h"

#define RPAGE_EXPORT __attribute__((visibility("default")))

static int rpage_ioctl(int fd, unsigned long cmd, void *arg)
{
	if (ioctl(fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

RPAGE_EXPORT const char *rpage_lib_version(void)
{
	return RPAGE_LIB_VERSION;
}

RPAGE_EXPORT int rpage_open(int flags)
{
	int fd = open(RPAGE_DEVICE_PATH, O_RDWR | O_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

RPAGE_EXPORT int rpage_api(int fd, struct rpage_api *api)
{
	return rpage_ioctl(fd, RPAGE_IOC_API, api);
}

RPAGE_EXPORT int rpage_device_list(int fd, struct rpage_device_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_DEVICE_LIST, list);
}
