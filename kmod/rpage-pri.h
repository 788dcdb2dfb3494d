/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpage: private definitions shared by the files of rpage.ko.
 */
#ifndef RPAGE_PRI_H
#define RPAGE_PRI_H

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/types.h>
#include <linux/mutex.h>
#include <rdma/ib_verbs.h>

#include <linux/rpage.h>

#include "rpage-compat.h"

/**
 * struct rpage_file - what one open file of /dev/rpage owns
 * @lock: protects @features against concurrent handshakes.
 * @api_done: the RPAGE_IOC_API handshake succeeded on this file.
 * @features: the feature bits the handshake enabled.
 */
struct rpage_file {
	struct mutex lock;	/* protects features */
	bool api_done;
	u64 features;
};

/**
 * struct rpage_ibdev - an RDMA device rpage.ko is attached to
 * @entry: link in the list of attached devices.
 * @ibdev: the device; valid until the ib_client remove callback.
 */
struct rpage_ibdev {
	struct list_head entry;
	struct ib_device *ibdev;
};

/* rpage-ibdev.c */
int rpage_ibdev_init(void);
void rpage_ibdev_exit(void);
long rpage_ioctl_device_list(struct rpage_file *rfile, void __user *argp);

#endif /* RPAGE_PRI_H */
