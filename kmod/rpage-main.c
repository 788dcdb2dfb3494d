// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the /dev/rpage misc device, its ioctl dispatch and the module's
 * init and exit.
 */
#include "rpage-pri.h"

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/random.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/ipv6.h>

/*
 * A module parameter that must lie in [min, max]: a value out of range
 * refuses the load, or the write to /sys/module/rpage/parameters.
 */
struct rpage_uint_param {
	unsigned int *var;
	unsigned int min;
	unsigned int max;
};

static int rpage_uint_param_set(const char *val, const struct kernel_param *kp)
{
	const struct rpage_uint_param *p = kp->arg;
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (v < p->min || v > p->max) {
		pr_err("%s=%u: out of range [%u, %u]\n", kp->name, v, p->min,
		       p->max);
		return -EINVAL;
	}
	WRITE_ONCE(*p->var, v);
	return 0;
}

static int rpage_uint_param_get(char *buf, const struct kernel_param *kp)
{
	const struct rpage_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*p->var));
}

static const struct kernel_param_ops rpage_uint_param_ops = {
	.set = rpage_uint_param_set,
	.get = rpage_uint_param_get,
};

#define rpage_uint_param(name, variable, lo, hi, perm)			\
	static struct rpage_uint_param rpage_param_##name = {		\
		.var = &(variable), .min = (lo), .max = (hi),		\
	};								\
	module_param_cb(name, &rpage_uint_param_ops, &rpage_param_##name, perm)

u64 rpage_node_id;
module_param_named(node_id, rpage_node_id, ullong, 0444);
MODULE_PARM_DESC(node_id, "This host's node id, sent to peers (0: random at load)");

unsigned int rpage_qps_per_peer;
rpage_uint_param(qps_per_peer, rpage_qps_per_peer, 0, 16, 0444);
MODULE_PARM_DESC(qps_per_peer, "Queue pairs opened to each peer: the first for control messages and WRITEs, the others for READs (0: one per online CPU, plus one); 2 to 16");

unsigned int rpage_connect_timeout_ms = 5000;
rpage_uint_param(connect_timeout_ms, rpage_connect_timeout_ms, 100, 600000, 0644);
MODULE_PARM_DESC(connect_timeout_ms, "How long one connection attempt may take, in ms (100 to 600000)");

unsigned int rpage_reconnect_delay_ms = 1000;
rpage_uint_param(reconnect_delay_ms, rpage_reconnect_delay_ms, 10, 600000, 0644);
MODULE_PARM_DESC(reconnect_delay_ms, "Delay before reconnecting to a peer after a failure, in ms: doubled for each failure in a row, up to 8 times, plus up to half of it at random (10 to 600000)");

unsigned int rpage_max_pool_mb = 1024;
module_param_named(max_pool_mb, rpage_max_pool_mb, uint, 0644);
MODULE_PARM_DESC(max_pool_mb, "Largest pool that may be created or exported, in MiB");

unsigned int rpage_io_timeout_ms = 10000;
rpage_uint_param(io_timeout_ms, rpage_io_timeout_ms, 100, 3600000, 0644);
MODULE_PARM_DESC(io_timeout_ms, "How long a remote read or write may go without progress before its queue pair counts as failed, in ms (100 to 3600000)");

/*
 * A minute: longer than a switch reboot, an RDMA device reset or a
 * module reload on the peer take, short enough that a VMM whose peer
 * is really gone hears of it while someone still looks.
 */
unsigned int rpage_loss_timeout_ms = 60000;
rpage_uint_param(loss_timeout_ms, rpage_loss_timeout_ms, 0,
		 RPAGE_LOSS_TIMEOUT_MAX_MS, 0644);
MODULE_PARM_DESC(loss_timeout_ms, "Loss timeout of new peers: how long transfers wait for an unreachable peer before they fail, in ms (0: fail at once; at most a day)");

unsigned int rpage_heartbeat_ms = 5000;
rpage_uint_param(heartbeat_ms, rpage_heartbeat_ms, 0, 600000, 0644);
MODULE_PARM_DESC(heartbeat_ms, "Interval of the heartbeats sent to each peer, in ms; a peer that takes none for 5 intervals counts as gone (0: off)");

/*
 * 2^15 * 4.096 us, 134 ms: a lost packet costs a READ that long, and a
 * peer gone silent fails the queue pair after 8 tries, about a second,
 * rather than the 17 s of rdma_cm's default for RoCE.
 */
unsigned int rpage_ack_timeout = 15;
rpage_uint_param(ack_timeout, rpage_ack_timeout, 0, 31, 0644);
MODULE_PARM_DESC(ack_timeout, "RC local ACK timeout of the queue pairs, as 4.096 us * 2^N (0: rdma_cm's default)");

/*
 * What one peer may make this host hold: its pool table (pools, and
 * memory regions at 16 bytes each: 8 MiB, a terabyte of pools in 2 MiB
 * regions) and its queue pairs to us (a reader opens at most 16 per
 * connection set; twice that leaves room for a set replacing another).
 */
unsigned int rpage_max_remote_pools = 256;
rpage_uint_param(max_remote_pools, rpage_max_remote_pools, 1, 65536, 0644);
MODULE_PARM_DESC(max_remote_pools, "Pools one peer may announce to this host; more are refused and counted (1 to 65536)");

unsigned int rpage_max_remote_regions = 524288;
rpage_uint_param(max_remote_regions, rpage_max_remote_regions, 1,
		 16 * 1024 * 1024, 0644);
MODULE_PARM_DESC(max_remote_regions, "Memory regions of all the pools of one peer this host keeps; pools past that are refused and counted (1 to 16M)");

unsigned int rpage_max_inbound_qps = 32;
rpage_uint_param(max_inbound_qps, rpage_max_inbound_qps, 2, 1024, 0644);
MODULE_PARM_DESC(max_inbound_qps, "Queue pairs one peer may have open to this host; more are refused and counted (2 to 1024)");

/*
 * What a prefetch leaves the rest of the host. Its pages cannot be
 * reclaimed, so a prefetch that took memory down to the allocator's
 * last watermark would leave the host to thrash on its own page cache
 * and starve its network stack (a TCG guest with 1.5 GiB stopped
 * answering its peer's heartbeats that way). 3% is 30 MiB of a GiB,
 * 7.5 GiB of 256 GiB.
 */
unsigned int rpage_prefetch_reserve_pct = 3;
rpage_uint_param(prefetch_reserve_pct, rpage_prefetch_reserve_pct, 0, 50, 0644);
MODULE_PARM_DESC(prefetch_reserve_pct, "Memory a prefetch or read-ahead leaves to the rest of the host, in percent of RAM: it stops once the memory available (MemAvailable) falls below that (0 to 50; 0: only when an allocation fails)");

struct workqueue_struct *rpage_wq;

/**
 * rpage_list_answer - answers a *_LIST command
 * @argp: the user's struct rpage_list.
 * @entry_size: size of one info entry.
 * @lock: protects what @fill walks; held while it runs.
 * @fill: writes the first @filled entries to @entries (none when
 *	@entries is NULL) and returns how many objects there are.
 * @ctx: passed to @fill.
 */
long rpage_list_answer(void __user *argp, size_t entry_size, struct mutex *lock,
		       u32 (*fill)(void *entries, u32 filled, void *ctx),
		       void *ctx)
{
	void *entries = NULL;
	struct rpage_list arg;
	u32 count, filled;
	long ret = 0;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.count || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	if (arg.capacity && !arg.entries)
		return -EFAULT;

	mutex_lock(lock);
	filled = min(fill(NULL, 0, ctx), arg.capacity);
	if (filled) {
		entries = kcalloc(filled, entry_size, GFP_KERNEL);
		if (!entries) {
			mutex_unlock(lock);
			return -ENOMEM;
		}
	}
	count = fill(entries, filled, ctx);
	mutex_unlock(lock);

	if (filled && copy_to_user(u64_to_user_ptr(arg.entries), entries,
				   array_size(filled, entry_size)))
		ret = -EFAULT;
	kfree(entries);
	if (ret)
		return ret;
	arg.count = count;
	if (copy_to_user(argp, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

int rpage_addr_to_sockaddr(const struct rpage_addr *uaddr,
			   struct sockaddr_storage *ss)
{
	u16 port = uaddr->port ? uaddr->port : RPAGE_DEFAULT_PORT;

	memset(ss, 0, sizeof(*ss));
	switch (uaddr->family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (uaddr->scope_id || memchr_inv(uaddr->addr + 4, 0, 12))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, uaddr->addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_scope_id = uaddr->scope_id;
		memcpy(&sin6->sin6_addr, uaddr->addr, 16);
		/* One spelling per host: v4-mapped addresses come as AF_INET. */
		if (ipv6_addr_v4mapped(&sin6->sin6_addr))
			return -EINVAL;
		if (uaddr->scope_id &&
		    !(ipv6_addr_type(&sin6->sin6_addr) & IPV6_ADDR_LINKLOCAL))
			return -EINVAL;
		return 0;
	}
	default:
		return -EINVAL;
	}
}

u16 rpage_sockaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

/* A name of a peer: 1 to RPAGE_NAME_MAX - 1 of [A-Za-z0-9._-]. */
bool rpage_name_valid(const char *name)
{
	size_t len = strnlen(name, RPAGE_NAME_MAX);
	size_t i;

	if (!len || len == RPAGE_NAME_MAX)
		return false;
	/* ASCII only: the kernel's isalnum() takes Latin-1 letters too. */
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

/* Same family and address; ports differ between a peer's two roles. */
bool rpage_sockaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
				       &((const struct sockaddr_in6 *)b)->sin6_addr);
	return false;
}

/**
 * rpage_sockaddr_is_peer - whether a connection from @from is from @peer
 * @peer: a peer's address, as configured.
 * @from: where an incoming connection comes from; for a link-local IPv6
 *	address, its scope is the interface it arrived on.
 *
 * The host part only. An IPv4 address arriving as IPv4-mapped IPv6 (on
 * an endpoint listening on ::) is that IPv4 address; a link-local IPv6
 * address configured with its link (fe80::1%eth0) is that host on that
 * link only: the same address on another link is another host.
 */
bool rpage_sockaddr_is_peer(const struct sockaddr *peer,
			    const struct sockaddr *from)
{
	const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)peer;
	const struct sockaddr_in6 *f6 = (const struct sockaddr_in6 *)from;
	struct sockaddr_in v4 = { .sin_family = AF_INET };

	if (from->sa_family == AF_INET6 && ipv6_addr_v4mapped(&f6->sin6_addr)) {
		v4.sin_addr.s_addr = f6->sin6_addr.s6_addr32[3];
		from = (const struct sockaddr *)&v4;
	}
	if (!rpage_sockaddr_same_host(peer, from))
		return false;
	if (peer->sa_family == AF_INET6 && p6->sin6_scope_id &&
	    __ipv6_addr_needs_scope_id(ipv6_addr_type(&p6->sin6_addr)))
		return f6->sin6_scope_id == p6->sin6_scope_id;
	return true;
}

/*
 * wait_for_completion_timeout() for a wait on a peer, which the module's
 * parameters let last up to an hour: slept in slices of a second, so
 * that the task, which wakes between them, is not reported as hung (and
 * a host with hung_task_panic set is not brought down) while it waits
 * as long as it was told to. Returns what wait_for_completion_timeout()
 * would: 0 if @done did not complete in @timeout, else jiffies left.
 */
unsigned long rpage_wait_done(struct completion *done, unsigned long timeout)
{
	unsigned long slice, left;

	for (;;) {
		slice = min_t(unsigned long, timeout, HZ);
		left = wait_for_completion_timeout(done, slice);
		if (left)
			return timeout - slice + left;
		timeout -= slice;
		if (!timeout)
			return 0;
	}
}

static int rpage_open(struct inode *inode, struct file *file)
{
	struct rpage_file *rfile;

	rfile = kzalloc(sizeof(*rfile), GFP_KERNEL);
	if (!rfile)
		return -ENOMEM;
	mutex_init(&rfile->lock);
	INIT_LIST_HEAD(&rfile->pools);
	rfile->file = file;
	file->private_data = rfile;
	return 0;
}

static int rpage_release(struct inode *inode, struct file *file)
{
	struct rpage_file *rfile = file->private_data;

	/* What the process exported goes with its file (or its death). */
	rpage_pools_file_release(rfile);
	rpage_maps_file_release(rfile);
	mutex_destroy(&rfile->lock);
	kfree(rfile);
	return 0;
}

static long rpage_ioctl_api(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_api __user *uarg = argp;
	struct rpage_api arg;
	u64 requested;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved0 || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	if (arg.api != RPAGE_API) {
		/* Tell the caller which version to speak instead. */
		if (put_user(RPAGE_API, &uarg->api))
			return -EFAULT;
		return -EINVAL;
	}
	if (arg.features & ~RPAGE_FEATURES_ALL)
		return -EINVAL;
	requested = arg.features;

	/* Answer first: a handshake the caller never saw must not count. */
	memset(&arg, 0, sizeof(arg));
	arg.api = RPAGE_API;
	arg.features = RPAGE_FEATURES_ALL;
	/* 2 MiB pages need the kernel's transparent huge pages. */
	if (!rpage_huge_supported())
		arg.features &= ~RPAGE_FEATURE_HUGE;
	arg.ioctls = RPAGE_API_IOCTLS;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;

	mutex_lock(&rfile->lock);
	rfile->features = requested;
	/* Pairs with the smp_load_acquire() in rpage_ioctl(). */
	smp_store_release(&rfile->api_done, true);
	mutex_unlock(&rfile->lock);
	return 0;
}

/**
 * struct rpage_ioctl_desc - one command of /dev/rpage
 * @cmd: the full command number, size and direction included.
 * @handler: what runs it.
 * @before_api: may run before the API handshake.
 * @admin: changes host-wide configuration: needs CAP_SYS_ADMIN in the
 *	initial user namespace.
 */
struct rpage_ioctl_desc {
	unsigned int cmd;
	long (*handler)(struct rpage_file *rfile, void __user *argp);
	bool before_api;
	bool admin;
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
	[_RPAGE_ENDPOINT_ADD] = {
		.cmd = RPAGE_IOC_ENDPOINT_ADD,
		.handler = rpage_ioctl_endpoint_add,
		.admin = true,
	},
	[_RPAGE_ENDPOINT_DEL] = {
		.cmd = RPAGE_IOC_ENDPOINT_DEL,
		.handler = rpage_ioctl_endpoint_del,
		.admin = true,
	},
	[_RPAGE_ENDPOINT_LIST] = {
		.cmd = RPAGE_IOC_ENDPOINT_LIST,
		.handler = rpage_ioctl_endpoint_list,
	},
	[_RPAGE_PEER_ADD] = {
		.cmd = RPAGE_IOC_PEER_ADD,
		.handler = rpage_ioctl_peer_add,
		.admin = true,
	},
	[_RPAGE_PEER_DEL] = {
		.cmd = RPAGE_IOC_PEER_DEL,
		.handler = rpage_ioctl_peer_del,
		.admin = true,
	},
	[_RPAGE_PEER_LIST] = {
		.cmd = RPAGE_IOC_PEER_LIST,
		.handler = rpage_ioctl_peer_list,
	},
	[_RPAGE_POOL_CREATE] = {
		.cmd = RPAGE_IOC_POOL_CREATE,
		.handler = rpage_ioctl_pool_create,
		.admin = true,
	},
	[_RPAGE_POOL_EXPORT] = {
		.cmd = RPAGE_IOC_POOL_EXPORT,
		.handler = rpage_ioctl_pool_export,
		.admin = true,
	},
	[_RPAGE_POOL_DESTROY] = {
		.cmd = RPAGE_IOC_POOL_DESTROY,
		.handler = rpage_ioctl_pool_destroy,
		.admin = true,
	},
	[_RPAGE_POOL_LIST] = {
		.cmd = RPAGE_IOC_POOL_LIST,
		.handler = rpage_ioctl_pool_list,
	},
	[_RPAGE_REMOTE_POOL_LIST] = {
		.cmd = RPAGE_IOC_REMOTE_POOL_LIST,
		.handler = rpage_ioctl_remote_pool_list,
	},
	[_RPAGE_READ] = {
		.cmd = RPAGE_IOC_READ,
		.handler = rpage_ioctl_read,
	},
	[_RPAGE_WRITE] = {
		.cmd = RPAGE_IOC_WRITE,
		.handler = rpage_ioctl_write,
	},
	[_RPAGE_PEER_STATS] = {
		.cmd = RPAGE_IOC_PEER_STATS,
		.handler = rpage_ioctl_peer_stats,
	},
	[_RPAGE_DEVICE_STATS] = {
		.cmd = RPAGE_IOC_DEVICE_STATS,
		.handler = rpage_ioctl_device_stats,
	},
	[_RPAGE_MAP] = {
		.cmd = RPAGE_IOC_MAP,
		.handler = rpage_ioctl_map,
	},
	[_RPAGE_UNMAP] = {
		.cmd = RPAGE_IOC_UNMAP,
		.handler = rpage_ioctl_unmap,
	},
	[_RPAGE_PREFETCH] = {
		.cmd = RPAGE_IOC_PREFETCH,
		.handler = rpage_ioctl_prefetch,
	},
	[_RPAGE_EVICT] = {
		.cmd = RPAGE_IOC_EVICT,
		.handler = rpage_ioctl_evict,
	},
	[_RPAGE_MAP_STATS] = {
		.cmd = RPAGE_IOC_MAP_STATS,
		.handler = rpage_ioctl_map_stats,
	},
	[_RPAGE_MAP_HUGE_STATS] = {
		.cmd = RPAGE_IOC_MAP_HUGE_STATS,
		.handler = rpage_ioctl_map_huge_stats,
	},
	[_RPAGE_PEER_FAULT_STATS] = {
		.cmd = RPAGE_IOC_PEER_FAULT_STATS,
		.handler = rpage_ioctl_peer_fault_stats,
	},
	[_RPAGE_PEER_SET] = {
		.cmd = RPAGE_IOC_PEER_SET,
		.handler = rpage_ioctl_peer_set,
		.admin = true,
	},
	[_RPAGE_PEER_STATUS] = {
		.cmd = RPAGE_IOC_PEER_STATUS,
		.handler = rpage_ioctl_peer_status,
	},
	[_RPAGE_MAP_ADD] = {
		.cmd = RPAGE_IOC_MAP_ADD,
		.handler = rpage_ioctl_map_add,
		.admin = true,
	},
	[_RPAGE_MAP_DEL] = {
		.cmd = RPAGE_IOC_MAP_DEL,
		.handler = rpage_ioctl_map_del,
		.admin = true,
	},
	[_RPAGE_MAP_LIST] = {
		.cmd = RPAGE_IOC_MAP_LIST,
		.handler = rpage_ioctl_map_list,
	},
	[_RPAGE_POOL_FILE] = {
		.cmd = RPAGE_IOC_POOL_FILE,
		.handler = rpage_ioctl_pool_file,
		.admin = true,
	},
	[_RPAGE_POOL_SET_PEERS] = {
		.cmd = RPAGE_IOC_POOL_SET_PEERS,
		.handler = rpage_ioctl_pool_set_peers,
		.admin = true,
	},
	[_RPAGE_POOL_GET_PEERS] = {
		.cmd = RPAGE_IOC_POOL_GET_PEERS,
		.handler = rpage_ioctl_pool_get_peers,
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
	if (desc->admin && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return desc->handler(rfile, (void __user *)arg);
}

static const struct file_operations rpage_fops = {
	.owner		= THIS_MODULE,
	.open		= rpage_open,
	.release	= rpage_release,
	.unlocked_ioctl	= rpage_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= rpage_mmap,
	/*
	 * An address whose 2 MiB alignment matches the offset's, so that a
	 * 2 MiB region of an RPAGE_MAP_HUGE mapping lines up with a PMD.
	 */
	.get_unmapped_area = thp_get_unmapped_area,
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

	rpage_proto_build_checks();
	/* The first queue pair carries control and WRITEs, the rest READs. */
	if (rpage_qps_per_peer == 1) {
		pr_err("qps_per_peer=1: out of range: 0 (one per online CPU, plus one) or [2, 16]\n");
		return -EINVAL;
	}
	while (!rpage_node_id)
		rpage_node_id = get_random_u64();

	/* First in, last out: every part of the module sends events. */
	ret = rpage_events_init();
	if (ret)
		return ret;
	ret = rpage_pools_init();
	if (ret)
		goto err_events;
	rpage_wq = alloc_workqueue("rpage", WQ_MEM_RECLAIM, 0);
	if (!rpage_wq) {
		ret = -ENOMEM;
		goto err_pools;
	}
	ret = rpage_fs_init();
	if (ret)
		goto err_wq;
	ret = rpage_fault_init();
	if (ret)
		goto err_fs;
	ret = rpage_named_init();
	if (ret)
		goto err_fault;
	ret = rpage_tcp_init();
	if (ret)
		goto err_named;
	ret = rpage_ibdev_init();
	if (ret)
		goto err_tcp;
	ret = misc_register(&rpage_misc);
	if (ret)
		goto err_ibdev;
	pr_info("version %s, API %d, protocol %d.%d, node id %#llx loaded\n",
		RPAGE_VERSION, RPAGE_API, RPAGE_PROTO_MAJOR, RPAGE_PROTO_MINOR,
		rpage_node_id);
	return 0;

err_ibdev:
	rpage_ibdev_exit();
err_tcp:
	rpage_tcp_exit();
err_named:
	rpage_named_exit();
err_fault:
	rpage_fault_exit();
err_fs:
	rpage_fs_exit();
err_wq:
	destroy_workqueue(rpage_wq);
err_pools:
	rpage_pools_exit();
err_events:
	rpage_events_exit();
	return ret;
}

static void __exit rpage_exit(void)
{
	misc_deregister(&rpage_misc);
	/*
	 * No more ioctls: take down the configuration, then the devices.
	 * Peers first: a background prefetch waiting for one to come back
	 * then fails at once, and the prefetches end.
	 */
	rpage_peers_exit();
	rpage_fault_exit();
	/* After the prefetches: one may hold a named mapping to the end. */
	rpage_named_exit();
	/* After every mapping: each one's inode is on its file system. */
	rpage_fs_exit();
	rpage_endpoints_exit();
	rpage_pools_exit();
	rpage_ibdev_exit();
	rpage_tcp_exit();
	destroy_workqueue(rpage_wq);
	/* Peers are freed after a grace period, by this module's code. */
	rcu_barrier();
	rpage_events_exit();
	pr_info("unloaded\n");
}

module_init(rpage_init);
module_exit(rpage_exit);

MODULE_AUTHOR("The rpage authors");
MODULE_DESCRIPTION("Remote page faults resolved over RDMA or TCP");
MODULE_LICENSE("GPL");
MODULE_VERSION(RPAGE_VERSION);
