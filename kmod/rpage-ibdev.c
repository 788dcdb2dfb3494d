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
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#include <net/route.h>

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

static void rpage_ibdev_release(struct kref *ref)
{
	struct rpage_ibdev *dev = container_of(ref, struct rpage_ibdev, ref);

	WARN_ON_ONCE(!list_empty(&dev->pds));
	ib_dealloc_pd(dev->pd);
	mutex_destroy(&dev->pds_lock);
	rpage_counters_free(&dev->counters);
	kfree(dev);
}

/* A reference to the device's rpage state, or NULL once it is removed. */
struct rpage_ibdev *rpage_ibdev_get(struct ib_device *ibdev)
{
	struct rpage_ibdev *dev;

	mutex_lock(&rpage_ibdevs_lock);
	list_for_each_entry(dev, &rpage_ibdevs, entry) {
		if (dev->ibdev == ibdev) {
			kref_get(&dev->ref);
			mutex_unlock(&rpage_ibdevs_lock);
			return dev;
		}
	}
	mutex_unlock(&rpage_ibdevs_lock);
	return NULL;
}

void rpage_ibdev_put(struct rpage_ibdev *dev)
{
	kref_put(&dev->ref, rpage_ibdev_release);
}

/* A queue pair on @dev is gone: drop its use and its reference. */
void rpage_ibdev_unuse(struct rpage_ibdev *dev)
{
	if (atomic_dec_and_test(&dev->users))
		wake_up(&dev->users_wait);
	rpage_ibdev_put(dev);
}

/**
 * rpage_pd_get - the protection domain of a peer's queue pairs on a device,
 *	allocated at its first use
 * @dev: the device.
 * @peer_id: the peer's id.
 *
 * Called by whoever holds a use of @dev (a queue pair being created, a
 * registration being made); the domain is freed with its last
 * reference, which its holders drop before their use of @dev. Returns
 * a reference, or an ERR_PTR.
 */
struct rpage_pd *rpage_pd_get(struct rpage_ibdev *dev, u32 peer_id)
{
	struct rpage_pd *ppd;
	struct ib_pd *pd;

	mutex_lock(&dev->pds_lock);
	list_for_each_entry(ppd, &dev->pds, entry) {
		if (ppd->peer_id == peer_id) {
			kref_get(&ppd->ref);
			goto out;
		}
	}
	ppd = kzalloc(sizeof(*ppd), GFP_KERNEL);
	if (!ppd) {
		ppd = ERR_PTR(-ENOMEM);
		goto out;
	}
	pd = ib_alloc_pd(dev->ibdev, 0);
	if (IS_ERR(pd)) {
		kfree(ppd);
		ppd = ERR_CAST(pd);
		goto out;
	}
	ppd->dev = dev;
	ppd->peer_id = peer_id;
	ppd->pd = pd;
	kref_init(&ppd->ref);
	list_add_tail(&ppd->entry, &dev->pds);
out:
	mutex_unlock(&dev->pds_lock);
	return ppd;
}

/* Called with the device's pds_lock held (kref_put_mutex()); drops it. */
static void rpage_pd_release(struct kref *ref)
{
	struct rpage_pd *ppd = container_of(ref, struct rpage_pd, ref);

	list_del(&ppd->entry);
	mutex_unlock(&ppd->dev->pds_lock);
	/* Its queue pairs and regions are gone: nothing uses it. */
	ib_dealloc_pd(ppd->pd);
	kfree(ppd);
}

void rpage_pd_put(struct rpage_pd *ppd)
{
	kref_put_mutex(&ppd->ref, rpage_pd_release, &ppd->dev->pds_lock);
}

static int rpage_ib_add(struct ib_device *ibdev)
{
	struct rpage_ibdev *dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->ibdev = ibdev;
	INIT_LIST_HEAD(&dev->pds);
	mutex_init(&dev->pds_lock);
	kref_init(&dev->ref);
	atomic_set(&dev->users, 0);
	init_waitqueue_head(&dev->users_wait);
	if (rpage_counters_init(&dev->counters)) {
		kfree(dev);
		return -ENOMEM;
	}
	dev->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(dev->pd)) {
		int ret = PTR_ERR(dev->pd);

		ibdev_warn(ibdev, "rpage: cannot allocate a PD: %d\n", ret);
		rpage_counters_free(&dev->counters);
		kfree(dev);
		return ret;
	}

	mutex_lock(&rpage_ibdevs_lock);
	list_add_tail(&dev->entry, &rpage_ibdevs);
	mutex_unlock(&rpage_ibdevs_lock);

	ib_set_client_data(ibdev, &rpage_ib_client, dev);
	ibdev_info(ibdev, "rpage attached\n");

	/* Whatever waited for a device may find one now. */
	rpage_endpoints_device_added();
	rpage_peers_device_added();
	return 0;
}

static void rpage_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct rpage_ibdev *dev = client_data;

	mutex_lock(&rpage_ibdevs_lock);
	list_del(&dev->entry);
	mutex_unlock(&rpage_ibdevs_lock);

	/*
	 * Every rdma_cm id and queue pair on the device goes before the
	 * device does; connections then retry on whatever device is left.
	 */
	rpage_endpoints_device_removed(dev);
	rpage_peers_device_removed(dev);
	rpage_pools_device_removed(dev);
	/* Inbound connections a disconnect already queued for release. */
	wait_event(dev->users_wait, !atomic_read(&dev->users));

	ibdev_info(ibdev, "rpage detached\n");
	rpage_ibdev_put(dev);
}

static void rpage_ibdev_fill_info(struct rpage_device_info *info,
				  struct ib_device *ibdev)
{
	strscpy(info->name, dev_name(&ibdev->dev), sizeof(info->name));
	info->node_guid = be64_to_cpu(ibdev->node_guid);
	info->index = ibdev->index;
	info->port_count = rdma_end_port(ibdev) - rdma_start_port(ibdev) + 1;
}

static u32 rpage_ibdev_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_device_info *infos = entries;
	struct rpage_ibdev *dev;
	u32 count = 0;

	list_for_each_entry(dev, &rpage_ibdevs, entry) {
		if (count < filled)
			rpage_ibdev_fill_info(&infos[count], dev->ibdev);
		count++;
	}
	return count;
}

long rpage_ioctl_device_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_device_info),
				 &rpage_ibdevs_lock, rpage_ibdev_fill, NULL);
}

static u32 rpage_ibdev_stats_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_device_stats *stats = entries;
	struct rpage_ibdev *dev;
	u32 count = 0;

	list_for_each_entry(dev, &rpage_ibdevs, entry) {
		if (count < filled) {
			strscpy(stats[count].name, dev_name(&dev->ibdev->dev),
				sizeof(stats[count].name));
			stats[count].index = dev->ibdev->index;
			rpage_counters_sum(&dev->counters, &stats[count].stats);
		}
		count++;
	}
	return count;
}

long rpage_ioctl_device_stats(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_device_stats),
				 &rpage_ibdevs_lock, rpage_ibdev_stats_fill, NULL);
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

/*
 * The network device a connection to @addr goes out of, referenced, or an
 * ERR_PTR if there is no route. For an address of this host, the device
 * that has the address (its route goes through the loopback device).
 */
static struct net_device *rpage_route_dev(const struct sockaddr *addr)
{
	struct net_device *ndev = NULL;

	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;
		struct flowi4 fl4 = { .daddr = sin->sin_addr.s_addr };
		struct rtable *rt = ip_route_output_key(&init_net, &fl4);

		if (IS_ERR(rt))
			return ERR_CAST(rt);
		if (rt->rt_type == RTN_LOCAL)
			ndev = ip_dev_find(&init_net, sin->sin_addr.s_addr);
		if (!ndev) {
			ndev = rt->dst.dev;
			dev_hold(ndev);
		}
		ip_rt_put(rt);
		return ndev;
	}
	if (IS_ENABLED(CONFIG_IPV6) && addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)addr;
		struct flowi6 fl6 = {
			.daddr = sin6->sin6_addr,
			.flowi6_oif = sin6->sin6_scope_id,
		};
		struct dst_entry *dst = ip6_route_output(&init_net, NULL, &fl6);
		int err = dst->error;

		if (!err) {
			rcu_read_lock();
			ndev = ipv6_dev_find(&init_net, &sin6->sin6_addr, NULL);
			if (!ndev)
				ndev = dst->dev;
			dev_hold(ndev);
			rcu_read_unlock();
		}
		dst_release(dst);
		return err ? ERR_PTR(err) : ndev;
	}
	return ERR_PTR(-EAFNOSUPPORT);
}

/*
 * Whether the route to @addr leaves through a network device that has an
 * RDMA device on it: 1 or 0; -errno if there is no route to it.
 */
int rpage_route_has_rdma(const struct sockaddr *addr)
{
	struct net_device *ndev = rpage_route_dev(addr);
	struct ib_device *ibdev;

	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_UNKNOWN);
	dev_put(ndev);
	if (!ibdev)
		return 0;
	ib_device_put(ibdev);
	return 1;
}
