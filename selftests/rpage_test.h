/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rpage selftests (built on the kernel's
 * kselftest_harness.h).
 */
#ifndef RPAGE_TEST_H
#define RPAGE_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "librpage.h"

/* ioctl(2) that returns the errno it failed with, 0 on success. */
static inline int ioctl_errno(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

/* Opens /dev/rpage and completes the handshake; -errno on failure. */
static inline int rpage_test_open(void)
{
	struct rpage_api api = { .api = RPAGE_API };
	int fd, ret;

	fd = rpage_open(0);
	if (fd < 0)
		return fd;
	ret = rpage_api(fd, &api);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* The loaded module's io_timeout_ms parameter (10 s if unreadable). */
static inline long rpage_test_io_timeout_ms(void)
{
	FILE *f = fopen("/sys/module/rpage/parameters/io_timeout_ms", "r");
	long ms = 10000;

	if (f) {
		if (fscanf(f, "%ld", &ms) != 1)
			ms = 10000;
		fclose(f);
	}
	return ms;
}

#endif /* RPAGE_TEST_H */
