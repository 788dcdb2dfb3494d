// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: named mappings - remote mappings that belong to the host, each
 * with a device node, /dev/rpage-map/NAME.
 *
 * A VMM takes guest RAM from a path: QEMU's memory-backend-file opens it
 * and maps it MAP_SHARED from offset 0, and asks its size with lseek().
 * A named mapping is that path. Like a device-dax node, every open of it
 * shares one address space (the mapping's own inode, rpage-fs.c), so
 * that every process mapping it sees one copy of each
 * page and an eviction unmaps the page from all of them; the mapping's
 * liveness is checked at open, at mmap and at every fault. The node's
 * owner, group and mode say which VMM may open it, so an operator can
 * hand one VM one pool without handing it /dev/rpage.
 *
 * The pages themselves are a struct rpage_mapping's, as for the mappings
 * of RPAGE_IOC_MAP: the fault path (rpage-fault.c) serves both alike.
 */
#include "rpage-pri.h"

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* Named mappings at most at once. */
#define RPAGE_NAMED_MAX		4096
/*
 * Their minors, handed out in turn from all of them (MINORBITS): a minor
 * comes back only after a million more mappings, so that a stale copy
 * of a deleted node (libvirt makes its VMs' /dev with mknod) does not
 * open the next mapping made.
 */
#define RPAGE_NAMED_MINORS	(MINORMASK + 1)

/**
 * struct rpage_named - a named mapping and its device node
 * @dev: its device; frees the structure when the last reference goes.
 * @entry: link in rpage_named_list.
 * @map: the mapping, referenced until RPAGE_IOC_MAP_DEL.
 * @uid: owner of the node.
 * @gid: group of the node.
 * @mode: permission bits of the node.
 */
struct rpage_named {
	struct device dev;
	struct list_head entry;
	struct rpage_mapping *map;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
};

/* Protects rpage_named_list, rpage_named_nr and rpage_named_minors. */
static DEFINE_MUTEX(rpage_named_lock);
static LIST_HEAD(rpage_named_list);
static unsigned int rpage_named_nr;
/* The named mappings by minor, for open(); and the next minor to try. */
static DEFINE_XARRAY_ALLOC(rpage_named_minors);
static u32 rpage_named_next_minor;
static dev_t rpage_named_devt;
static struct cdev rpage_named_cdev;

static struct class rpage_named_class = {
	.name		= RPAGE_MAP_NODE_DIR,
};

char *rpage_named_devnode(const struct device *dev, umode_t *mode,
			  kuid_t *uid, kgid_t *gid)
{
	const struct rpage_named *n = container_of(dev, struct rpage_named, dev);

	if (mode)
		*mode = n->mode;
	if (uid)
		*uid = n->uid;
	if (gid)
		*gid = n->gid;
	return kasprintf(GFP_KERNEL, RPAGE_MAP_NODE_DIR "/%s", dev_name(dev));
}

static void rpage_named_release(struct device *dev)
{
	kfree(container_of(dev, struct rpage_named, dev));
}

static const struct device_type rpage_named_type = {
	.name		= "rpage-map",
	.devnode	= rpage_named_devnode_cb,
	.release	= rpage_named_release,
};

/* Node files: open, mmap, lseek. */

static int rpage_named_open(struct inode *inode, struct file *file)
{
	struct rpage_mapping *map = NULL;
	struct rpage_named *n;

	mutex_lock(&rpage_named_lock);
	n = xa_load(&rpage_named_minors, iminor(inode));
	if (n && !READ_ONCE(n->map->dead)) {
		map = n->map;
		kref_get(&map->ref);
	}
	mutex_unlock(&rpage_named_lock);
	if (!map)
		return -ENXIO;
	file->private_data = map;
	/* One address space for every open, whatever inode it came by. */
	file->f_mapping = map->mapping;
	return 0;
}

static int rpage_named_file_release(struct inode *inode, struct file *file)
{
	rpage_map_put(file->private_data);
	return 0;
}

static int rpage_named_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct rpage_mapping *map = file->private_data;

	if (READ_ONCE(map->dead))
		return -ENXIO;
	/* Private (copy-on-write) mappings of remote pages are not offered. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff >= map->nr_pages ||
	    vma_pages(vma) > map->nr_pages - vma->vm_pgoff)
		return -EINVAL;
	kref_get(&map->ref);
	rpage_map_vma_init(vma, map);
	return 0;
}

/* The size, as QEMU asks it of a character device: lseek(SEEK_END). */
static loff_t rpage_named_llseek(struct file *file, loff_t offset, int whence)
{
	struct rpage_mapping *map = file->private_data;

	return fixed_size_llseek(file, offset, whence,
				 (loff_t)map->nr_pages << PAGE_SHIFT);
}

static const struct file_operations rpage_named_fops = {
	.owner		= THIS_MODULE,
	.open		= rpage_named_open,
	.release	= rpage_named_file_release,
	.mmap		= rpage_named_mmap,
	/*
	 * An address whose 2 MiB alignment matches the offset's, so that a
	 * 2 MiB region of an RPAGE_MAP_HUGE mapping lines up with a PMD.
	 */
	.get_unmapped_area = thp_get_unmapped_area,
	.llseek		= rpage_named_llseek,
	.fsync		= rpage_fs_fsync,
};

/* Making and removing them. */

static struct rpage_named *rpage_named_find(const char *name)
{
	struct rpage_named *n;

	lockdep_assert_held(&rpage_named_lock);
	list_for_each_entry(n, &rpage_named_list, entry)
		if (!strcmp(dev_name(&n->dev), name))
			return n;
	return NULL;
}

static bool rpage_named_name_valid(const char *name)
{
	return rpage_name_valid(name) && strcmp(name, ".") && strcmp(name, "..");
}

/*
 * Checks what RPAGE_IOC_MAP_ADD asks beyond a mapping's own arguments,
 * which it puts in @m for rpage_map_check() and rpage_map_new().
 */
static int rpage_named_check(const struct rpage_map_add *arg,
			     struct rpage_map *m)
{
	if (!rpage_named_name_valid(arg->name) || arg->mode & ~0777U ||
	    arg->reserved0 || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;
	*m = (struct rpage_map) {
		.peer_id = arg->peer_id, .flags = arg->flags,
		.pool_id = arg->pool_id, .offset = arg->offset,
		.length = arg->length,
	};
	return rpage_map_check(m);
}

/* Frees @n before it was ever added as a device. */
static void rpage_named_abort(struct rpage_named *n)
{
	rpage_map_put(n->map);
	put_device(&n->dev);
}

long rpage_ioctl_map_add(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_map_add __user *uarg = argp;
	struct rpage_map_add arg;
	struct rpage_peer *peer;
	struct rpage_named *n;
	struct rpage_map m;
	kuid_t uid;
	kgid_t gid;
	u32 minor;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	ret = rpage_named_check(&arg, &m);
	if (ret)
		return ret;
	uid = make_kuid(current_user_ns(), arg.uid);
	gid = make_kgid(current_user_ns(), arg.gid);
	if (!uid_valid(uid) || !gid_valid(gid))
		return -EINVAL;

	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return -ENOMEM;
	device_initialize(&n->dev);
	n->dev.class = &rpage_named_class;
	n->dev.type = &rpage_named_type;
	INIT_LIST_HEAD(&n->entry);
	n->uid = uid;
	n->gid = gid;
	n->mode = arg.mode;
	ret = dev_set_name(&n->dev, "%s", arg.name);
	if (ret) {
		put_device(&n->dev);
		return ret;
	}
	n->map = rpage_map_new(&m);
	if (IS_ERR(n->map)) {
		ret = PTR_ERR(n->map);
		n->map = NULL;
		put_device(&n->dev);
		return ret;
	}

	mutex_lock(&rpage_named_lock);
	if (rpage_named_find(arg.name)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	if (rpage_named_nr >= RPAGE_NAMED_MAX) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	ret = xa_alloc_cyclic(&rpage_named_minors, &minor, n,
			      XA_LIMIT(0, RPAGE_NAMED_MINORS - 1),
			      &rpage_named_next_minor, GFP_KERNEL);
	if (ret < 0)
		goto err_unlock;
	n->dev.devt = MKDEV(MAJOR(rpage_named_devt), minor);
	ret = rpage_map_insert(n->map);
	if (ret)
		goto err_minor;
	ret = device_add(&n->dev);
	if (ret)
		goto err_table;
	list_add_tail(&n->entry, &rpage_named_list);
	rpage_named_nr++;
	arg.map_id = n->map->id;
	peer = rpage_map_peer_get(n->map);
	pr_info("map %s: peer %s pool %llu, %llu bytes at %llu, node /dev/%s/%s\n",
		arg.name, peer ? peer->name : "(deleted)", arg.pool_id,
		m.length, arg.offset, RPAGE_MAP_NODE_DIR, arg.name);
	rpage_event_map_add(arg.name, arg.map_id, peer, arg.pool_id,
			    arg.offset, m.length);
	if (peer)
		rpage_peer_put(peer);
	/*
	 * From here on a MAP_DEL may free @n at any time: nothing of it is
	 * touched after the unlock.
	 */
	mutex_unlock(&rpage_named_lock);
	/* Made; a caller that cannot read these finds them in the list. */
	if (put_user(arg.map_id, &uarg->map_id) ||
	    put_user(m.length, &uarg->length))
		return -EFAULT;
	return 0;

err_table:
	rpage_map_remove(n->map);
err_minor:
	xa_erase(&rpage_named_minors, minor);
err_unlock:
	mutex_unlock(&rpage_named_lock);
	rpage_named_abort(n);
	return ret;
}

/*
 * Takes @n down: no new open, no node; with @force, every fault from
 * now on raises SIGBUS and every page goes from every process's page
 * tables. The caller took it off the list and holds rpage_named_lock.
 */
static void rpage_named_remove(struct rpage_named *n, bool force)
{
	struct rpage_mapping *map = n->map;

	lockdep_assert_held(&rpage_named_lock);
	xa_erase(&rpage_named_minors, MINOR(n->dev.devt));
	rpage_named_nr--;
	/* The next access to any page faults, and finds it dead. */
	if (force)
		rpage_map_kill(map);
	rpage_map_remove(map);
	device_del(&n->dev);
	pr_info("map %s: deleted%s\n", dev_name(&n->dev),
		force ? " by force" : "");
	rpage_event_map_del(dev_name(&n->dev), map->id);
	rpage_map_put(map);
	put_device(&n->dev);
}

/*
 * Its open files, mapped areas and calls under way: every reference but
 * the table's and this list's.
 */
static unsigned int rpage_named_users(const struct rpage_named *n)
{
	return kref_read(&n->map->ref) - 2;
}

long rpage_ioctl_map_del(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_map_del arg;
	struct rpage_named *n;
	bool force;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~RPAGE_MAP_DEL_FLAGS_ALL || arg.reserved0 ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)) ||
	    !rpage_named_name_valid(arg.name))
		return -EINVAL;
	force = arg.flags & RPAGE_MAP_DEL_FORCE;

	mutex_lock(&rpage_named_lock);
	n = rpage_named_find(arg.name);
	if (!n) {
		mutex_unlock(&rpage_named_lock);
		return -ENOENT;
	}
	/* Opens take their reference under the lock: no new user slips in. */
	if (!force && rpage_named_users(n)) {
		mutex_unlock(&rpage_named_lock);
		return -EBUSY;
	}
	list_del(&n->entry);
	rpage_named_remove(n, force);
	mutex_unlock(&rpage_named_lock);
	return 0;
}

static u32 rpage_named_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_map_info *infos = entries;
	struct rpage_named *n;
	u32 count = 0;

	list_for_each_entry(n, &rpage_named_list, entry) {
		if (count < filled) {
			struct rpage_map_info *info = &infos[count];
			struct rpage_mapping *map = n->map;
			struct rpage_peer *peer;

			strscpy(info->name, dev_name(&n->dev), sizeof(info->name));
			/* A deleted peer: no name, id 0. */
			rcu_read_lock();
			peer = rcu_dereference(map->peer);
			if (peer) {
				strscpy(info->peer, peer->name,
					sizeof(info->peer));
				info->peer_id = peer->id;
			}
			rcu_read_unlock();
			info->flags = map->flags;
			info->pool_id = map->pool_id;
			info->offset = map->pool_offset;
			info->length = (u64)map->nr_pages << PAGE_SHIFT;
			info->map_id = map->id;
			info->pages_local =
				rpage_map_pages_cached(map, 0,
						       map->nr_pages - 1, true);
			info->users = rpage_named_users(n);
			info->uid = from_kuid_munged(current_user_ns(), n->uid);
			info->gid = from_kgid_munged(current_user_ns(), n->gid);
			info->mode = n->mode;
		}
		count++;
	}
	return count;
}

long rpage_ioctl_map_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_map_info),
				 &rpage_named_lock, rpage_named_fill, NULL);
}

int rpage_named_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&rpage_named_devt, 0, RPAGE_NAMED_MINORS,
				  RPAGE_MAP_NODE_DIR);
	if (ret)
		return ret;
	cdev_init(&rpage_named_cdev, &rpage_named_fops);
	rpage_named_cdev.owner = THIS_MODULE;
	ret = cdev_add(&rpage_named_cdev, rpage_named_devt, RPAGE_NAMED_MINORS);
	if (ret)
		goto err_region;
	ret = class_register(&rpage_named_class);
	if (ret)
		goto err_cdev;
	return 0;

err_cdev:
	cdev_del(&rpage_named_cdev);
err_region:
	unregister_chrdev_region(rpage_named_devt, RPAGE_NAMED_MINORS);
	return ret;
}

/*
 * The module is going: no file of a node is open (each holds the
 * module), so no area maps one either; every named mapping goes.
 */
void rpage_named_exit(void)
{
	struct rpage_named *n, *tmp;

	mutex_lock(&rpage_named_lock);
	list_for_each_entry_safe(n, tmp, &rpage_named_list, entry) {
		list_del(&n->entry);
		rpage_named_remove(n, false);
	}
	mutex_unlock(&rpage_named_lock);
	class_unregister(&rpage_named_class);
	cdev_del(&rpage_named_cdev);
	unregister_chrdev_region(rpage_named_devt, RPAGE_NAMED_MINORS);
}
