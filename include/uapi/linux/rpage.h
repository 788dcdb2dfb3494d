/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rpage: remote page faults over RDMA.
 *
 * The ioctl ABI of /dev/rpage. This header is the one contract between
 * rpage.ko and userspace: structures are fixed-width, explicitly padded,
 * and never change once released. The ABI grows by new commands and new
 * feature bits announced by RPAGE_IOC_API.
 *
 * Every file descriptor must complete the RPAGE_IOC_API handshake before
 * any other command; until then other commands fail with EINVAL.
 */
#ifndef _UAPI_LINUX_RPAGE_H
#define _UAPI_LINUX_RPAGE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Path of the misc device, relative to /dev. */
#define RPAGE_DEVICE_NAME	"rpage"

/* The only API version so far. */
#define RPAGE_API		1

/*
 * Feature bits a caller may request in struct rpage_api.features. None
 * are defined by API 1 yet; requesting an unknown bit fails with EINVAL.
 */
#define RPAGE_FEATURES_ALL	0ULL

/* Bounds of names and of strings the kernel reports. */
#define RPAGE_NAME_MAX		64

#define RPAGE_IOC_MAGIC		0xE7

/* Command numbers; RPAGE_IOC_API reports them as bits in .ioctls. */
enum {
	_RPAGE_API		= 0x00,
	_RPAGE_DEVICE_LIST	= 0x01,
};

/**
 * struct rpage_api - the API and feature handshake
 * @api: in: the API version the caller speaks (RPAGE_API).
 *	out: the version the module speaks.
 * @features: in: feature bits the caller needs; unknown bits fail with
 *	EINVAL. out: every feature bit the module supports.
 * @ioctls: out: bit (1 << nr) set for every supported command number.
 * @reserved: must be zero.
 *
 * Unlike UFFDIO_API, the handshake may be repeated on the same file and
 * changes nothing but the features enabled for that file.
 */
struct rpage_api {
	__u32 api;
	__u32 reserved0;
	__u64 features;
	__u64 ioctls;
	__u64 reserved[4];
};

/**
 * struct rpage_device_info - an RDMA device rpage.ko is attached to
 * @name: the ib_device name, NUL-terminated.
 * @node_guid: the node GUID, in host byte order.
 * @index: the ib_device index (as shown by `rdma dev`).
 * @port_count: number of physical ports.
 * @reserved: zero.
 */
struct rpage_device_info {
	char  name[RPAGE_NAME_MAX];
	__u64 node_guid;
	__u32 index;
	__u32 port_count;
	__u64 reserved[4];
};

/**
 * struct rpage_device_list - list the RDMA devices rpage.ko tracks
 * @devices: in: user pointer to an array of struct rpage_device_info.
 * @capacity: in: number of entries that fit in @devices.
 * @count: out: number of devices tracked; may exceed @capacity, in which
 *	case only @capacity entries were written.
 * @reserved: must be zero.
 */
struct rpage_device_list {
	__u64 devices;
	__u32 capacity;
	__u32 count;
	__u64 reserved[2];
};

#define RPAGE_IOC_API \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_API, struct rpage_api)
#define RPAGE_IOC_DEVICE_LIST \
	_IOWR(RPAGE_IOC_MAGIC, _RPAGE_DEVICE_LIST, struct rpage_device_list)

#define RPAGE_API_IOCTLS \
	((1ULL << _RPAGE_API) | (1ULL << _RPAGE_DEVICE_LIST))

#endif /* _UAPI_LINUX_RPAGE_H */
