// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the /dev/rpage misc device, its ioctl dispatch and the module's
 * init and exit.
 */
#include "rpage-pri.h"

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

static int rpage_open(struct inode *inode, struct file *file)
{
	struct rpage_file *rfile;

	rfile = kzalloc(sizeof(*rfile), GFP_KERNEL);
	if (!rfile)
		return -ENOMEM;
	mutex_init(&rfile->lock);
	file->private_data = rfile;
	return 0;
}

static int rpage_release(struct inode *inode, struct file *file)
{
	struct rpage_file *rfile = file->private_data;

	mutex_destroy(&rfile->lock);
	kfree(rfile);
	return 0;
}

static long rpage_ioctl_api(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_api arg;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved0 || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	if (arg.api != RPAGE_API)
		return -EINVAL;
	if (arg.features & ~RPAGE_FEATURES_ALL)
		return -EINVAL;

	mutex_lock(&rfile->lock);
	rfile->features = arg.features;
	/* Pairs with the smp_load_acquire() in rpage_ioctl(). */
	smp_store_release(&rfile->api_done, true);
	mutex_unlock(&rfile->lock);

	memset(&arg, 0, sizeof(arg));
	arg.api = RPAGE_API;
	arg.features = RPAGE_FEATURES_ALL;
	arg.ioctls = RPAGE_API_IOCTLS;
	if (copy_to_user(argp, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

/**
 * struct rpage_ioctl_desc - one command of /dev/rpage
 * @cmd: the full command number, size and direction included.
 * @handler: what runs it.
 * @before_api: may run before the API handshake.
 */
struct rpage_ioctl_desc {
	unsigned int cmd;
	long (*handler)(struct rpage_file *rfile, void __user *argp);
	bool before_api;
};

static const struct rpage_ioctl_desc rpage_ioctls[] = {
	[_RPAGE_API] = {
		.cmd = RPAGE_IOC_API,
		.handler = rpage_ioctl_api,
		.before_api = true,
	},
	[_RPAGE_DEVICE_LIST] = {
		.cmd = RPAGE_IOC_DEVICE_LIST,
		.handler = rpage_ioctl_device_list,
	},
};

static long rpage_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct rpage_file *rfile = file->private_data;
	const struct rpage_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != RPAGE_IOC_MAGIC || nr >= ARRAY_SIZE(rpage_ioctls))
		return -ENOTTY;
	desc = &rpage_ioctls[nr];
	if (!desc->handler)
		return -ENOTTY;
	/* A known command with another size or direction: a stale header. */
	if (cmd != desc->cmd)
		return -EINVAL;
	/* Pairs with the smp_store_release() in rpage_ioctl_api(). */
	if (!desc->before_api && !smp_load_acquire(&rfile->api_done))
		return -EINVAL;
	return desc->handler(rfile, (void __user *)arg);
}

static const struct file_operations rpage_fops = {
	.owner		= THIS_MODULE,
	.open		= rpage_open,
	.release	= rpage_release,
	.unlocked_ioctl	= rpage_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice rpage_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= RPAGE_DEVICE_NAME,
	.fops	= &rpage_fops,
	.mode	= 0600,
};

static int __init rpage_init(void)
{
	int ret;

	ret = rpage_ibdev_init();
	if (ret)
		return ret;
	ret = misc_register(&rpage_misc);
	if (ret) {
		rpage_ibdev_exit();
		return ret;
	}
	pr_info("version %s, API %d loaded\n", RPAGE_VERSION, RPAGE_API);
	return 0;
}

static void __exit rpage_exit(void)
{
	misc_deregister(&rpage_misc);
	rpage_ibdev_exit();
	pr_info("unloaded\n");
}

module_init(rpage_init);
module_exit(rpage_exit);

MODULE_AUTHOR("The rpage authors");
MODULE_DESCRIPTION("Remote page faults resolved over RDMA");
MODULE_LICENSE("GPL");
MODULE_VERSION(RPAGE_VERSION);
