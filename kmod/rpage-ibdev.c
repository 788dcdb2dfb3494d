// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the RDMA devices rpage.ko is attached to, followed through an
 * ib_client as they are registered and removed (hot-unplug, or
 * `rdma link delete` of a soft device).
 */
#include "rpage-pri.h"

#include <linux/list.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

static LIST_HEAD(rpage_ibdevs);
/* Protects rpage_ibdevs. */
static DEFINE_MUTEX(rpage_ibdevs_lock);

static int rpage_ib_add(struct ib_device *ibdev);
static void rpage_ib_remove(struct ib_device *ibdev, void *client_data);

static struct ib_client rpage_ib_client = {
	.name	= "rpage",
	.add	= rpage_ib_add,
	.remove	= rpage_ib_remove,
};

static int rpage_ib_add(struct ib_device *ibdev)
{
	struct rpage_ibdev *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;

	mutex_lock(&rpage_ibdevs_lock);
	list_add_tail(&dev->entry, &rpage_ibdevs);
	mutex_unlock(&rpage_ibdevs_lock);

	ib_set_client_data(ibdev, &rpage_ib_client, dev);
	ibdev_info(ibdev, "rpage attached\n");
	return 0;
}

static void rpage_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct rpage_ibdev *dev = client_data;

	mutex_lock(&rpage_ibdevs_lock);
	list_del(&dev->entry);
	mutex_unlock(&rpage_ibdevs_lock);

	ibdev_info(ibdev, "rpage detached\n");
	kfree(dev);
}

static void rpage_ibdev_fill_info(struct rpage_device_info *info,
				  struct ib_device *ibdev)
{
	strscpy(info->name, dev_name(&ibdev->dev), sizeof(info->name));
	info->node_guid = be64_to_cpu(ibdev->node_guid);
	info->index = ibdev->index;
	info->port_count = rdma_end_port(ibdev) - rdma_start_port(ibdev) + 1;
}

long rpage_ioctl_device_list(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_device_list arg;
	struct rpage_device_info *infos = NULL;
	struct rpage_ibdev *dev;
	u32 count = 0, filled;
	long ret = 0;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.count || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	if (arg.capacity && !arg.devices)
		return -EFAULT;

	mutex_lock(&rpage_ibdevs_lock);
	list_for_each_entry(dev, &rpage_ibdevs, entry)
		count++;
	filled = min(count, arg.capacity);
	if (filled) {
		infos = kcalloc(filled, sizeof(*infos), GFP_KERNEL);
		if (!infos) {
			mutex_unlock(&rpage_ibdevs_lock);
			return -ENOMEM;
		}
	}
	count = 0;
	list_for_each_entry(dev, &rpage_ibdevs, entry) {
		if (count < filled)
			rpage_ibdev_fill_info(&infos[count], dev->ibdev);
		count++;
	}
	mutex_unlock(&rpage_ibdevs_lock);

	if (filled && copy_to_user(u64_to_user_ptr(arg.devices), infos,
				   array_size(filled, sizeof(*infos))))
		ret = -EFAULT;
	kfree(infos);
	if (ret)
		return ret;

	arg.count = count;
	if (copy_to_user(argp, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

int rpage_ibdev_init(void)
{
	return ib_register_client(&rpage_ib_client);
}

void rpage_ibdev_exit(void)
{
	/* Calls rpage_ib_remove() for every device still attached. */
	ib_unregister_client(&rpage_ib_client);
}
