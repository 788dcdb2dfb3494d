// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: pools, the memory this host exports to its peers.
 *
 * A pool is registered on an RDMA device the first time a reader
 * connects through that device, with fast registration (IB_WR_REG_MR)
 * posted on the reader's first queue pair, in regions of at most
 * max_fast_reg_page_list_len pages; then the reader is told the regions'
 * addresses and keys (RPAGE_MSG_POOL_ADD); a reader over a transport
 * without memory regions (the loop) is told of the pool alone. Messages
 * to a reader go through its transport (->chan_send). A reader's new
 * channel (its first queue pair) gets every pool, then
 * RPAGE_MSG_POOL_SYNC; pools created later go to every reader that has
 * its table. Each pool has a generation, new for every pool created, so
 * that a reader tells a pool from one created later with the same id.
 * A pool being destroyed is withdrawn from every reader first
 * (RPAGE_MSG_POOL_DEL); each reader acknowledges once none of its reads
 * or writes of the pool is in flight (RPAGE_MSG_POOL_DEL_ACK), or
 * io_timeout_ms passes; then the regions are deregistered, which
 * invalidates their keys, and only then is the memory freed or unpinned.
 *
 * Transports without keys (TCP, loop) reach a pool's pages by its id and
 * generation, inside an access section (rpage_pool_access_begin()): a
 * sleepable RCU read section, kept short, around each copy into or out
 * of the pages. Destroy takes the pool off the table, then waits for
 * every section that might have found it before freeing the memory: so
 * once RPAGE_IOC_POOL_DESTROY returns, no peer reads or writes the pool
 * on any transport, and a process's pages are unpinned then, whatever
 * its readers still hold. Such an access finds a pool without taking a
 * lock (a hash table read under the section).
 *
 * A pool of a file follows it the way a shared mapping of the file
 * would, were the pool's pages mapped: the file's pages are held, and a
 * truncate or hole punch that takes any of them out of the file
 * withdraws the pool (as RPAGE_IOC_POOL_DESTROY would) before the
 * truncating call returns, so that no peer reads or writes a page the
 * file no longer has (an fsnotify mark on the file's inode tells us, in
 * the truncating task: rpage_pool_file_event()).
 *
 * rpage_pools_lock guards the list of pools and orders what each reader
 * is told: the table, additions and withdrawals are queued for each
 * reader under it (struct rpage_chan_msg), and each reader's own work
 * sends its queue, in order, without it. So a reader that never takes a
 * control message (its receive queue empty, a link gone quiet) holds up
 * only its own queue, for io_timeout_ms at most, never another reader,
 * a pool's creation or destruction, or a connection's teardown. Queued
 * messages hold a reference on their pool; its memory goes with the
 * last. The lock also keeps the readers' queue pairs alive while it is
 * held (rpage_pools_barrier()), and is never held across a wait on the
 * network.
 */
#include "rpage-pri.h"

#include <linux/fcntl.h>
#include <linux/fsnotify_backend.h>
#include <linux/hashtable.h>
#include <linux/hugetlb.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/magic.h>
#include <linux/shmem_fs.h>
#include <linux/bsearch.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/srcu.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

/*
 * Fewer pages per region than a device allows keeps messages small. 512
 * pages is a 2 MiB region: a 2 MiB-aligned READ of a pagesize 2M
 * mapping's region is one work request under one key.
 */
#define RPAGE_MR_MAX_PAGES	512

/**
 * struct rpage_pool_reg - a pool registered for one peer on one device
 * @entry: link in the pool's @regs.
 * @dev: the device; a use of it is held.
 * @ppd: the peer's protection domain there, referenced: only that
 *	peer's queue pairs reach the regions.
 * @sgt: the pool's pages, one entry each, mapped for @dev.
 * @mrs: the memory regions, @nr_mrs of them, @mr_bytes each.
 * @nr_mrs: how many.
 * @mr_bytes: bytes per region (the last may cover less).
 */
struct rpage_pool_reg {
	struct list_head entry;
	struct rpage_ibdev *dev;
	struct rpage_pd *ppd;
	struct sg_table sgt;
	struct ib_mr **mrs;
	u32 nr_mrs;
	u64 mr_bytes;
};

/**
 * struct rpage_pool_scope - the peers a scoped pool is announced to
 * @nr: how many, possibly none.
 * @ids: their ids, sorted.
 *
 * Freed once no access section may see it (synchronize_srcu()).
 */
struct rpage_pool_scope {
	u32 nr;
	u32 ids[];
};

/**
 * struct rpage_pool - memory exported to peers
 * @entry: link in rpage_pools.
 * @hnode: link in rpage_pools_hash, while listed.
 * @file_entry: a user pool's link in its owner's @pools.
 * @id: the pool's id.
 * @generation: this incarnation of the pool, never 0 (see
 *	rpage_pool_alloc()).
 * @length: bytes.
 * @flags: RPAGE_POOL_*.
 * @kind: RPAGE_POOL_KERNEL or RPAGE_POOL_USER.
 * @owner: the file a user pool was exported through.
 * @owner_pid: the process that exported a user pool.
 * @file: a file pool's file, held (the file system stays mounted, the
 *	inode in memory); a writable pool's counts as a writable mapping of
 *	it while exported, so that it cannot be sealed against writes.
 * @watch: a file pool's fsnotify mark on its file's inode, referenced;
 *	the mark's event handler compares it, never dereferences it.
 * @pages: the memory, @nr_pages pages; released when the pool is
 *	destroyed (rpage_pool_finish()), not with the last reference.
 * @nr_pages: how many.
 * @regs: its registrations (struct rpage_pool_reg), one per peer and
 *	device, under @reg_lock.
 * @reg_lock: protects @regs and @dead; never held across a wait.
 * @scope: the peers it is announced to and served to, or NULL for every
 *	peer; changed under both rpage_pools_lock and @reg_lock, so read
 *	under either, or in an access section.
 * @dead: withdrawn and deregistered: no registration may be added.
 * @ref: held by the list of pools and by each queued message.
 */
struct rpage_pool {
	struct list_head entry;
	struct hlist_node hnode;
	struct list_head file_entry;
	u64 id;
	u64 generation;
	u64 length;
	u32 flags;
	u32 kind;
	struct rpage_file *owner;
	pid_t owner_pid;
	struct file *file;
	struct fsnotify_mark *watch;
	struct page **pages;
	unsigned long nr_pages;
	struct list_head regs;
	struct mutex reg_lock;		/* see kernel-doc */
	bool dead;
	struct rpage_pool_scope __rcu *scope;
	struct kref ref;
};

/**
 * struct rpage_chan_msg - a pool-table message queued for one reader
 * @entry: link in the reader's channel's @outq.
 * @kind: what to send.
 * @pool: the pool added or withdrawn, referenced; NULL for a sync.
 * @nr_pools: for a sync, how many pools the table had.
 */
struct rpage_chan_msg {
	struct list_head entry;
	enum { RPAGE_CHAN_ADD, RPAGE_CHAN_DEL, RPAGE_CHAN_SYNC } kind;
	struct rpage_pool *pool;
	u32 nr_pools;
};

/**
 * struct rpage_withdrawal - a destroy waiting for the readers' acks
 * @entry: link in rpage_withdrawals.
 * @pool_id: the pool.
 * @generation: its incarnation.
 * @asked: the readers asked, @nr of them; each entry is cleared when
 *	that reader acknowledges (compared only, never dereferenced).
 * @nr: how many.
 * @pending: readers that have not acknowledged yet.
 * @done: completed when @pending reaches zero.
 */
struct rpage_withdrawal {
	struct list_head entry;
	u64 pool_id;
	u64 generation;
	const struct rpage_peer **asked;
	unsigned int nr;
	unsigned int pending;
	struct completion done;
};

/* The group of every file pool's mark; see rpage_pools_init(). */
static struct fsnotify_group *rpage_file_group;

static LIST_HEAD(rpage_withdrawals);
/* Protects rpage_withdrawals; taken in receive completions. */
static DEFINE_SPINLOCK(rpage_withdrawals_lock);

/* The last generation given to a pool; see rpage_pool_alloc(). */
static atomic64_t rpage_pool_generation;

/*
 * @peer is done with a withdrawn pool. Only an acknowledgment the pool's
 * withdrawal asked of that reader counts; any other is ignored.
 */
void rpage_pools_acked(struct rpage_peer *peer, u64 pool_id, u64 generation)
{
	struct rpage_withdrawal *w;
	unsigned int i;

	spin_lock_bh(&rpage_withdrawals_lock);
	list_for_each_entry(w, &rpage_withdrawals, entry) {
		if (w->pool_id != pool_id || w->generation != generation)
			continue;
		for (i = 0; i < w->nr; i++) {
			if (w->asked[i] != peer)
				continue;
			w->asked[i] = NULL;
			if (!--w->pending)
				complete(&w->done);
			break;
		}
	}
	spin_unlock_bh(&rpage_withdrawals_lock);
}

/* Protects rpage_pools and their registrations; see the top of the file. */
DEFINE_MUTEX(rpage_pools_lock);
/* The listed pools by id, for transports' accesses (under the section). */
static DEFINE_HASHTABLE(rpage_pools_hash, 8);
/* Accesses of transports to pools' pages: see the top of this file. */
DEFINE_STATIC_SRCU(rpage_pool_srcu);
static LIST_HEAD(rpage_pools);

static void rpage_pool_reg_free(struct rpage_pool_reg *reg)
{
	struct ib_device *ibdev = reg->dev->ibdev;
	u32 i;

	/* Deregistering invalidates the keys peers were given. */
	for (i = 0; reg->mrs && i < reg->nr_mrs; i++)
		if (reg->mrs[i])
			ib_dereg_mr(reg->mrs[i]);
	kvfree(reg->mrs);
	if (reg->sgt.nents)
		ib_dma_unmap_sg(ibdev, reg->sgt.sgl, reg->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
	sg_free_table(&reg->sgt);
	/* Its regions are gone: the domain may go before the device. */
	if (reg->ppd)
		rpage_pd_put(reg->ppd);
	rpage_ibdev_unuse(reg->dev);
	kfree(reg);
}

static int rpage_pool_reg_map(struct rpage_pool *pool,
			      struct rpage_pool_reg *reg,
			      struct rpage_conn *chan)
{
	struct ib_device *ibdev = reg->dev->ibdev;
	unsigned long mr_pages, left;
	struct scatterlist *sg;
	unsigned long i;
	int nents, ret;

	ret = sg_alloc_table(&reg->sgt, pool->nr_pages, GFP_KERNEL);
	if (ret)
		return ret;
	for_each_sg(reg->sgt.sgl, sg, pool->nr_pages, i)
		sg_set_page(sg, pool->pages[i], PAGE_SIZE, 0);
	nents = ib_dma_map_sg(ibdev, reg->sgt.sgl, pool->nr_pages,
			      DMA_BIDIRECTIONAL);
	if (!nents)
		return -ENOMEM;
	reg->sgt.nents = nents;
	/* Regions of whole pages at fixed offsets need unmerged entries. */
	if (nents != pool->nr_pages) {
		pr_warn("pool %llu: %s merged its DMA segments; not supported\n",
			pool->id, dev_name(&ibdev->dev));
		return -EOPNOTSUPP;
	}

	mr_pages = min_t(unsigned long, RPAGE_MR_MAX_PAGES,
			 ibdev->attrs.max_fast_reg_page_list_len);
	if (!mr_pages)
		return -EOPNOTSUPP;
	/*
	 * A power of two, so that regions line up with 2 MiB: a device of
	 * 511 (mlx4) gets 256-page regions, and a 2 MiB READ is two work
	 * requests, not three that straddle at random.
	 */
	mr_pages = rounddown_pow_of_two(mr_pages);
	reg->mr_bytes = (u64)mr_pages << PAGE_SHIFT;
	reg->nr_mrs = DIV_ROUND_UP(pool->nr_pages, mr_pages);
	reg->mrs = kvcalloc(reg->nr_mrs, sizeof(*reg->mrs), GFP_KERNEL);
	if (!reg->mrs)
		return -ENOMEM;

	sg = reg->sgt.sgl;
	left = pool->nr_pages;
	for (i = 0; i < reg->nr_mrs; i++) {
		unsigned long n = min(left, mr_pages), j;
		struct ib_reg_wr wr = {};
		struct ib_mr *mr;

		mr = ib_alloc_mr(reg->ppd->pd, IB_MR_TYPE_MEM_REG, mr_pages);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		reg->mrs[i] = mr;
		if (ib_map_mr_sg(mr, sg, n, NULL, PAGE_SIZE) != n)
			return -EINVAL;
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		wr.wr.opcode = IB_WR_REG_MR;
		wr.mr = mr;
		wr.key = mr->rkey;
		wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ;
		if (pool->flags & RPAGE_POOL_WRITABLE)
			wr.access |= IB_ACCESS_REMOTE_WRITE;
		ret = rpage_conn_post_wait(chan, &wr.wr, rpage_io_timeout_ms,
					   "memory registration");
		if (ret)
			return ret;
		for (j = 0; j < n; j++)
			sg = sg_next(sg);
		left -= n;
	}
	return 0;
}

static int rpage_u32_cmp(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/* Whether @scope (NULL: every peer) has peer @id. */
static bool rpage_scope_has(const struct rpage_pool_scope *scope, u32 id)
{
	return !scope ||
	       bsearch(&id, scope->ids, scope->nr, sizeof(id), rpage_u32_cmp);
}

/* Whether @pool is announced to @peer: under rpage_pools_lock. */
static bool rpage_pool_announced_to(struct rpage_pool *pool,
				    const struct rpage_peer *peer)
{
	return rpage_scope_has(rcu_dereference_protected(pool->scope,
				lockdep_is_held(&rpage_pools_lock)), peer->id);
}

/* The scope of @pool, under its reg_lock. */
static struct rpage_pool_scope *rpage_pool_scope(struct rpage_pool *pool)
{
	return rcu_dereference_protected(pool->scope,
					 lockdep_is_held(&pool->reg_lock));
}

/*
 * Whether @pool may be registered for @peer: under its reg_lock, so
 * that a peer taken out of its scope gets no registration after.
 */
static bool rpage_pool_reg_allowed(struct rpage_pool *pool,
				   const struct rpage_peer *peer)
{
	return !pool->dead && rpage_scope_has(rpage_pool_scope(pool), peer->id);
}

/* The registration of @pool in @ppd, if any; under the pool's reg_lock. */
static struct rpage_pool_reg *rpage_pool_reg_find(struct rpage_pool *pool,
						  struct rpage_pd *ppd)
{
	struct rpage_pool_reg *reg;

	lockdep_assert_held(&pool->reg_lock);
	list_for_each_entry(reg, &pool->regs, entry)
		if (reg->ppd == ppd)
			return reg;
	return NULL;
}

/*
 * What the reader of @chan is told of @pool's regions: their size and a
 * copy of their addresses and keys (*@mrs, kvfree'd by the caller), the
 * pool registered in that reader's domain on @chan's device now if need
 * be. The registration waits for the device (on @chan's queue pair), so
 * it is made outside reg_lock and added after, unless another was made
 * meanwhile, or the pool was withdrawn from the reader (-ENOENT).
 */
static int rpage_pool_regions(struct rpage_pool *pool, struct rpage_conn *chan,
			      struct rpage_rmr **mrs, u32 *nr_mrs, u64 *mr_bytes)
{
	struct rpage_pool_reg *reg, *made = NULL;
	int ret = 0, idx;
	bool allowed;
	u32 i;

	/* A reader's first queue pair is inbound: in its peer's domain. */
	if (WARN_ON_ONCE(!chan->ppd))
		return -EINVAL;
	/* The pages are mapped for the device: not freed meanwhile. */
	idx = srcu_read_lock(&rpage_pool_srcu);
	mutex_lock(&pool->reg_lock);
	allowed = rpage_pool_reg_allowed(pool, chan->peer);
	reg = allowed ? rpage_pool_reg_find(pool, chan->ppd) : NULL;
	if (!reg && allowed) {
		mutex_unlock(&pool->reg_lock);
		made = kzalloc(sizeof(*made), GFP_KERNEL);
		if (!made) {
			srcu_read_unlock(&rpage_pool_srcu, idx);
			return -ENOMEM;
		}
		kref_get(&chan->dev->ref);
		atomic_inc(&chan->dev->users);
		made->dev = chan->dev;
		kref_get(&chan->ppd->ref);
		made->ppd = chan->ppd;
		ret = rpage_pool_reg_map(pool, made, chan);
		if (ret) {
			rpage_pool_reg_free(made);
			srcu_read_unlock(&rpage_pool_srcu, idx);
			return ret;
		}
		mutex_lock(&pool->reg_lock);
		allowed = rpage_pool_reg_allowed(pool, chan->peer);
		reg = allowed ? rpage_pool_reg_find(pool, chan->ppd) : NULL;
		if (!reg && allowed) {
			list_add_tail(&made->entry, &pool->regs);
			reg = made;
			made = NULL;
		}
	}
	if (!reg) {
		ret = -ENOENT;
		goto out;
	}
	*mrs = kvcalloc(reg->nr_mrs, sizeof(**mrs), GFP_KERNEL);
	if (!*mrs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < reg->nr_mrs; i++) {
		(*mrs)[i].iova = reg->mrs[i]->iova;
		(*mrs)[i].rkey = reg->mrs[i]->rkey;
	}
	*nr_mrs = reg->nr_mrs;
	*mr_bytes = reg->mr_bytes;
out:
	mutex_unlock(&pool->reg_lock);
	/* Another's came first, or the pool was withdrawn from the peer. */
	if (made)
		rpage_pool_reg_free(made);
	srcu_read_unlock(&rpage_pool_srcu, idx);
	return ret;
}

/* Sends one control message of @len bytes from @msg on @chan. */
static int rpage_ctl_send(struct rpage_conn *chan, void *msg, u32 len)
{
	return chan->peer->ops->chan_send(chan, msg, len);
}

/*
 * Tells the reader of @chan of @pool: what every transport needs (id,
 * generation, length, flags), with the pool's memory regions if the
 * reader's transport names them, as many messages as they take.
 */
static void rpage_pool_announce(struct rpage_pool *pool, struct rpage_conn *chan)
{
	struct rpage_msg_pool_add *msg = NULL;
	struct rpage_rmr *mrs = NULL;
	u32 first = 0, count, i, nr_mrs = 0;
	u64 mr_bytes = 0;
	int ret = 0;

	if (chan->peer->ops->regions)
		ret = rpage_pool_regions(pool, chan, &mrs, &nr_mrs, &mr_bytes);
	if (ret)
		goto out;
	msg = kzalloc(RPAGE_MSG_MAX, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out;
	}
	do {
		u32 len;

		count = min_t(u32, nr_mrs - first, RPAGE_MSG_MRS_PER_ADD);
		len = sizeof(*msg) + count * sizeof(msg->mrs[0]);
		memset(msg, 0, RPAGE_MSG_MAX);
		msg->hdr.type = cpu_to_le16(RPAGE_MSG_POOL_ADD);
		msg->hdr.length = cpu_to_le32(len);
		msg->pool_id = cpu_to_le64(pool->id);
		msg->generation = cpu_to_le64(pool->generation);
		msg->length = cpu_to_le64(pool->length);
		msg->mr_bytes = cpu_to_le64(mr_bytes);
		/* Whom it is scoped to is this host's business alone. */
		msg->flags = cpu_to_le32(pool->flags & RPAGE_POOL_WRITABLE);
		msg->nr_mrs = cpu_to_le32(nr_mrs);
		msg->first_mr = cpu_to_le32(first);
		msg->count = cpu_to_le32(count);
		for (i = 0; i < count; i++) {
			msg->mrs[i].iova = cpu_to_le64(mrs[first + i].iova);
			msg->mrs[i].rkey = cpu_to_le32(mrs[first + i].rkey);
		}
		ret = rpage_ctl_send(chan, msg, len);
		first += count;
	} while (first < nr_mrs && !ret);
out:
	kfree(msg);
	kvfree(mrs);
	/* A pool withdrawn meanwhile is not announced: nothing to say. */
	if (ret && ret != -ENOENT)
		pr_warn("pool %llu: not announced to peer %s: %d\n", pool->id,
			chan->peer->name, ret);
}

static int rpage_pool_withdraw(struct rpage_pool *pool, struct rpage_conn *chan)
{
	struct rpage_msg_pool_del msg = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_POOL_DEL),
		.hdr.length = cpu_to_le32(sizeof(msg)),
		.pool_id = cpu_to_le64(pool->id),
		.generation = cpu_to_le64(pool->generation),
	};
	int ret;

	ret = rpage_ctl_send(chan, &msg, sizeof(msg));
	/* The keys are invalidated next either way: the reader cannot use them. */
	if (ret)
		pr_warn("pool %llu: withdrawal from peer %s not confirmed: %d\n",
			pool->id, chan->peer->name, ret);
	return ret;
}

static void rpage_pool_release(struct kref *ref);

static void rpage_pool_put(struct rpage_pool *pool)
{
	kref_put(&pool->ref, rpage_pool_release);
}

static void rpage_chan_send_work(struct work_struct *work);

/* A reader's control channel, accepted: nothing queued yet. */
void rpage_pools_channel_init(struct rpage_in_conn *in)
{
	spin_lock_init(&in->outq_lock);
	INIT_LIST_HEAD(&in->outq);
	INIT_WORK(&in->send_work, rpage_chan_send_work);
}

/*
 * Queues a message of @kind about @pool (referenced for it) for the
 * reader of @in, under rpage_pools_lock, which orders what every reader
 * is told. False if the channel is closing: the reader will hear
 * nothing more (it rebuilds its table when it connects again).
 */
static bool rpage_chan_queue(struct rpage_in_conn *in, int kind,
			     struct rpage_pool *pool, u32 nr_pools)
{
	struct rpage_chan_msg *m;
	bool queued = false;

	lockdep_assert_held(&rpage_pools_lock);
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return false;
	m->kind = kind;
	m->pool = pool;
	m->nr_pools = nr_pools;
	if (pool)
		kref_get(&pool->ref);
	spin_lock(&in->outq_lock);
	if (!in->outq_closed) {
		list_add_tail(&m->entry, &in->outq);
		queue_work(rpage_wq, &in->send_work);
		queued = true;
	}
	spin_unlock(&in->outq_lock);
	if (!queued) {
		if (pool)
			rpage_pool_put(pool);
		kfree(m);
	}
	return queued;
}

/*
 * Takes the addition of @pool out of @in's queue if it is still there:
 * then the reader never heard of the pool, and its withdrawal needs
 * neither a message nor an acknowledgment (the reader may be stuck on
 * an earlier message, which is no reason to hold up a destroy).
 */
static bool rpage_chan_cancel_add(struct rpage_in_conn *in,
				  struct rpage_pool *pool)
{
	struct rpage_chan_msg *m, *found = NULL;

	spin_lock(&in->outq_lock);
	list_for_each_entry(m, &in->outq, entry) {
		if (m->kind == RPAGE_CHAN_ADD && m->pool == pool) {
			list_del(&m->entry);
			found = m;
			break;
		}
	}
	spin_unlock(&in->outq_lock);
	if (!found)
		return false;
	rpage_pool_put(pool);
	kfree(found);
	return true;
}

static struct rpage_chan_msg *rpage_chan_next(struct rpage_in_conn *in)
{
	struct rpage_chan_msg *m;

	spin_lock(&in->outq_lock);
	m = list_first_entry_or_null(&in->outq, struct rpage_chan_msg, entry);
	if (m)
		list_del(&m->entry);
	spin_unlock(&in->outq_lock);
	return m;
}

/*
 * Done with @m: sent, or dropped with its channel. A withdrawal the
 * reader never got counts as acknowledged: it has no reads of the pool
 * left (its channel is gone) and must not hold up the destroy.
 */
static void rpage_chan_msg_done(struct rpage_in_conn *in,
				struct rpage_chan_msg *m, bool acked)
{
	if (m->kind == RPAGE_CHAN_DEL && acked)
		rpage_pools_acked(in->c.peer, m->pool->id, m->pool->generation);
	if (m->pool)
		rpage_pool_put(m->pool);
	kfree(m);
}

/* Sends what the reader of @in has queued, in order, unlocked. */
static void rpage_chan_send_work(struct work_struct *work)
{
	struct rpage_in_conn *in = container_of(work, struct rpage_in_conn,
						send_work);
	struct rpage_msg_pool_sync sync = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_POOL_SYNC),
		.hdr.length = cpu_to_le32(sizeof(sync)),
	};
	struct rpage_chan_msg *m;
	bool up, acked;

	while ((m = rpage_chan_next(in))) {
		/* A closing channel sends nothing more. */
		up = READ_ONCE(in->c.state) == RPAGE_CONN_CONNECTED;
		acked = !up;
		switch (m->kind) {
		case RPAGE_CHAN_ADD:
			if (up)
				rpage_pool_announce(m->pool, &in->c);
			break;
		case RPAGE_CHAN_DEL:
			if (up && rpage_pool_withdraw(m->pool, &in->c))
				acked = true;
			break;
		case RPAGE_CHAN_SYNC:
			sync.nr_pools = cpu_to_le32(m->nr_pools);
			/* Failed: the reader times out waiting and connects again. */
			if (up)
				rpage_ctl_send(&in->c, &sync, sizeof(sync));
			break;
		}
		rpage_chan_msg_done(in, m, acked);
	}
}

/*
 * The reader's channel @in is going (claimed, marked closed): nothing
 * more is queued, what is in flight on it is flushed, its work is done,
 * and what was left in its queue is dropped. Then it may be destroyed.
 */
void rpage_pools_channel_close(struct rpage_in_conn *in)
{
	struct rpage_chan_msg *m;

	spin_lock(&in->outq_lock);
	in->outq_closed = true;
	spin_unlock(&in->outq_lock);
	/* A send waiting on the channel fails at once. */
	if (in->c.peer->ops->chan_break)
		in->c.peer->ops->chan_break(&in->c);
	cancel_work_sync(&in->send_work);
	while ((m = rpage_chan_next(in)))
		rpage_chan_msg_done(in, m, true);
}

/*
 * Readers' channels came up: each is queued the pool table, every pool
 * then RPAGE_MSG_POOL_SYNC, so that it knows it has them all; additions
 * and withdrawals queued after follow it.
 */
static void rpage_pools_sync_work_fn(struct work_struct *work)
{
	struct rpage_in_conn **chans;
	struct rpage_pool *pool;
	unsigned int n, i, nr;

	mutex_lock(&rpage_pools_lock);
	chans = rpage_channels_collect(&n, false);
	for (i = 0; i < n; i++) {
		if (chans[i]->synced)
			continue;
		nr = 0;
		list_for_each_entry(pool, &rpage_pools, entry) {
			if (!rpage_pool_announced_to(pool, chans[i]->c.peer))
				continue;
			rpage_chan_queue(chans[i], RPAGE_CHAN_ADD, pool, 0);
			nr++;
		}
		if (rpage_chan_queue(chans[i], RPAGE_CHAN_SYNC, NULL, nr))
			chans[i]->synced = true;
	}
	mutex_unlock(&rpage_pools_lock);
	kfree(chans);
}

static DECLARE_WORK(rpage_pools_sync_work, rpage_pools_sync_work_fn);

void rpage_pools_channel_up(void)
{
	queue_work(rpage_wq, &rpage_pools_sync_work);
}

/*
 * Waits until no pool operation uses a reader's queue pair: called
 * after a connection is claimed for teardown and before it goes.
 */
void rpage_pools_barrier(void)
{
	mutex_lock(&rpage_pools_lock);
	mutex_unlock(&rpage_pools_lock);
}

/*
 * Takes the mark of file pool @pool off its file, before the pages go:
 * an event of the file after this finds no pool of it.
 */
static void rpage_pool_unwatch(struct rpage_pool *pool)
{
	if (!pool->watch)
		return;
	fsnotify_destroy_mark(pool->watch, rpage_file_group);
	fsnotify_put_mark(pool->watch);
	pool->watch = NULL;
}

/* Frees, unpins or lets go of the pages of @pool (what it holds of them). */
static void rpage_pool_free_pages(struct rpage_pool *pool)
{
	unsigned long i;

	if (pool->kind == RPAGE_POOL_USER) {
		unpin_user_pages_dirty_lock(pool->pages, pool->nr_pages,
					    pool->flags & RPAGE_POOL_WRITABLE);
	} else if (pool->kind == RPAGE_POOL_FILE) {
		rpage_pool_unwatch(pool);
		/* Peers' writes are the file's: keep them when it is written out. */
		for (i = 0; i < pool->nr_pages && pool->pages[i]; i++) {
			if (pool->flags & RPAGE_POOL_WRITABLE)
				set_page_dirty_lock(pool->pages[i]);
			put_page(pool->pages[i]);
		}
		if (pool->file) {
			if (pool->flags & RPAGE_POOL_WRITABLE)
				mapping_unmap_writable(pool->file->f_mapping);
			fput(pool->file);
			pool->file = NULL;
		}
	} else {
		for (i = 0; i < pool->nr_pages; i++)
			if (pool->pages[i])
				__free_page(pool->pages[i]);
	}
	memset(pool->pages, 0, pool->nr_pages * sizeof(*pool->pages));
}

/*
 * The structure of @pool, its memory let go of: unpublished, or off the
 * table since its destroy, so that no access section sees its scope.
 */
static void rpage_pool_free_struct(struct rpage_pool *pool)
{
	kfree(rcu_dereference_protected(pool->scope, true));
	kvfree(pool->pages);
	kfree(pool);
}

/* A pool that was never published goes, memory and all. */
static void rpage_pool_free_memory(struct rpage_pool *pool)
{
	rpage_pool_free_pages(pool);
	rpage_pool_free_struct(pool);
}

/*
 * The last reference to a pool that was published: its memory went
 * when it was destroyed (rpage_pool_finish()); the rest goes now.
 */
static void rpage_pool_release(struct kref *ref)
{
	struct rpage_pool *pool = container_of(ref, struct rpage_pool, ref);

	/* Deregistered first: no key a peer was given reaches freed memory. */
	WARN_ON_ONCE(!list_empty(&pool->regs));
	mutex_destroy(&pool->reg_lock);
	rpage_pool_free_struct(pool);
}

/*
 * Queues the withdrawal of @pool for the @n readers of @chans, which were
 * told of it, asking each for an acknowledgment (@w, set up here; the
 * caller waits with rpage_withdrawal_wait()). Under rpage_pools_lock.
 * Reorders @chans.
 */
static void rpage_pool_withdraw_from(struct rpage_pool *pool,
				     struct rpage_withdrawal *w,
				     struct rpage_in_conn **chans,
				     unsigned int n)
{
	unsigned int i, nr = 0;

	lockdep_assert_held(&rpage_pools_lock);
	w->pool_id = pool->id;
	w->generation = pool->generation;
	init_completion(&w->done);
	w->asked = kcalloc(n, sizeof(*w->asked), GFP_KERNEL);
	if (!w->asked)
		n = 0;
	/* Readers its addition has not been sent to yet never heard of it. */
	for (i = 0; i < n; i++)
		if (!rpage_chan_cancel_add(chans[i], pool))
			chans[nr++] = chans[i];
	n = nr;
	/* Asked first: the ack may beat the send's own completion. */
	for (i = 0; i < n; i++)
		w->asked[i] = chans[i]->c.peer;
	w->nr = n;
	w->pending = n;
	spin_lock_bh(&rpage_withdrawals_lock);
	list_add_tail(&w->entry, &rpage_withdrawals);
	spin_unlock_bh(&rpage_withdrawals_lock);
	for (i = 0; i < n; i++)
		if (!rpage_chan_queue(chans[i], RPAGE_CHAN_DEL, pool, 0))
			rpage_pools_acked(chans[i]->c.peer, pool->id,
					  pool->generation);
}

/*
 * Without rpage_pools_lock: waits for the readers asked by @w to finish
 * what they have in flight (their acknowledgments) or io_timeout_ms.
 */
static void rpage_withdrawal_wait(struct rpage_pool *pool,
				  struct rpage_withdrawal *w)
{
	if (w->nr && !rpage_wait_done(&w->done,
				      msecs_to_jiffies(rpage_io_timeout_ms)))
		pr_warn("pool %llu: not every reader acknowledged its withdrawal\n",
			pool->id);
	spin_lock_bh(&rpage_withdrawals_lock);
	list_del(&w->entry);
	spin_unlock_bh(&rpage_withdrawals_lock);
	kfree(w->asked);
}

/*
 * Of the @n readers' channels in @chans, keeps those that have been told
 * of @pool (announced, or queued to be); returns how many. Under
 * rpage_pools_lock.
 */
static unsigned int rpage_pool_told(struct rpage_pool *pool,
				    struct rpage_in_conn **chans,
				    unsigned int n)
{
	unsigned int i, nr = 0;

	for (i = 0; i < n; i++)
		if (rpage_pool_announced_to(pool, chans[i]->c.peer))
			chans[nr++] = chans[i];
	return nr;
}

/*
 * Takes @pool off the list and queues its withdrawal for every reader
 * that has the table and was told of it, asking each for an
 * acknowledgment (@w, set up here; the caller passes it to
 * rpage_pool_finish()). The caller holds rpage_pools_lock; a pool with
 * the same id may be created as soon as it drops it (readers tell the
 * two apart by generation).
 */
static void rpage_pool_unlink(struct rpage_pool *pool,
			      struct rpage_withdrawal *w)
{
	struct rpage_in_conn **chans;
	unsigned int n;

	lockdep_assert_held(&rpage_pools_lock);
	list_del(&pool->entry);
	hash_del_rcu(&pool->hnode);
	if (pool->owner)
		list_del_init(&pool->file_entry);
	/* Readers that do not have the table never heard of the pool. */
	chans = rpage_channels_collect(&n, true);
	n = rpage_pool_told(pool, chans, n);
	rpage_pool_withdraw_from(pool, w, chans, n);
	kfree(chans);
}

/*
 * After rpage_pool_unlink(), without rpage_pools_lock: waits for the
 * readers to finish what they have in flight (their acknowledgments) or
 * io_timeout_ms, deregisters the regions, which invalidates their keys,
 * waits for every access that may have found the pool, releases its
 * memory, and drops the list's reference.
 */
static void rpage_pool_finish(struct rpage_pool *pool,
			      struct rpage_withdrawal *w)
{
	struct rpage_pool_reg *reg, *tmp;
	LIST_HEAD(regs);

	rpage_withdrawal_wait(pool, w);
	mutex_lock(&pool->reg_lock);
	pool->dead = true;
	list_splice_init(&pool->regs, &regs);
	mutex_unlock(&pool->reg_lock);
	list_for_each_entry_safe(reg, tmp, &regs, entry) {
		list_del(&reg->entry);
		rpage_pool_reg_free(reg);
	}
	/* Off the table since the unlink: what found it before is done. */
	synchronize_srcu(&rpage_pool_srcu);
	rpage_pool_free_pages(pool);
	pr_info("pool %llu destroyed\n", pool->id);
	rpage_pool_put(pool);
}

static struct rpage_pool *rpage_pool_find(u64 id)
{
	struct rpage_pool *pool;

	list_for_each_entry(pool, &rpage_pools, entry)
		if (pool->id == id)
			return pool;
	return NULL;
}

/**
 * rpage_pool_access_begin - starts an access of a transport to pools
 *
 * Between this and rpage_pool_access_end(), with the index it returned,
 * a pool found with rpage_pool_lookup() keeps its memory, even if it is
 * being destroyed: keep it short (a copy, a receive that does not wait),
 * since a destroy waits for it.
 */
int rpage_pool_access_begin(void)
	__acquires(rpage_pool_access)
{
	return srcu_read_lock(&rpage_pool_srcu);
}

void rpage_pool_access_end(int idx)
	__releases(rpage_pool_access)
{
	srcu_read_unlock(&rpage_pool_srcu, idx);
}

/*
 * Incarnation @generation of pool @id if it is listed and announced to
 * @peer, or NULL: what the loop transport copies pages of, and TCP
 * serves. Within an access section only, which is all the pool is good
 * for. A pool scoped to other peers is refused as if it did not exist,
 * and counted: @peer was never told of it.
 */
const struct rpage_pool *rpage_pool_lookup(u64 id, u64 generation,
					   struct rpage_peer *peer)
{
	struct rpage_pool *pool;

	hash_for_each_possible_rcu(rpage_pools_hash, pool, hnode, id,
				   srcu_read_lock_held(&rpage_pool_srcu)) {
		if (pool->id != id || pool->generation != generation)
			continue;
		if (rpage_scope_has(srcu_dereference(pool->scope,
						     &rpage_pool_srcu), peer->id))
			return pool;
		atomic64_inc(&peer->refused_access);
		pr_warn_ratelimited("peer %s: refused access to pool %llu, not scoped to it\n",
				    peer->name, id);
		return NULL;
	}
	return NULL;
}

/*
 * Whether the pages of @pool change only by its peers' writes: a kernel
 * pool, whose pages nobody else writes and which a held page reference
 * keeps even past its destroy. Those of a process or a file change under
 * their owner, after the destroy too: a copy must be sent, not the page.
 */
bool rpage_pool_pages_stable(const struct rpage_pool *pool)
{
	return pool->kind == RPAGE_POOL_KERNEL;
}

/* The page of @pool at byte @offset, or NULL past its end. */
struct page *rpage_pool_page(const struct rpage_pool *pool, u64 offset)
{
	if (offset >= pool->length)
		return NULL;
	return pool->pages[offset >> PAGE_SHIFT];
}

u64 rpage_pool_length(const struct rpage_pool *pool)
{
	return pool->length;
}

/* Whether peers may write to @pool. */
bool rpage_pool_writable(const struct rpage_pool *pool)
{
	return pool->flags & RPAGE_POOL_WRITABLE;
}

/* What RPAGE_IOC_POOL_CREATE and _EXPORT both require of their argument. */
static int rpage_pool_check(u64 id, u64 length, u32 flags, u32 reserved0,
			    const u64 *reserved, size_t reserved_size)
{
	if (reserved0 || memchr_inv(reserved, 0, reserved_size))
		return -EINVAL;
	if (!id || !length || !PAGE_ALIGNED(length) ||
	    length > (u64)rpage_max_pool_mb << 20 ||
	    (flags & ~RPAGE_POOL_FLAGS_ALL))
		return -EINVAL;
	return 0;
}

static struct rpage_pool *rpage_pool_alloc(u64 id, u64 length, u32 flags,
					   u32 kind)
{
	struct rpage_pool *pool;

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return NULL;
	pool->nr_pages = length >> PAGE_SHIFT;
	pool->pages = kvcalloc(pool->nr_pages, sizeof(*pool->pages),
			       GFP_KERNEL);
	if (!pool->pages) {
		kfree(pool);
		return NULL;
	}
	pool->id = id;
	/*
	 * Unique while the module is loaded, and from a random start so
	 * that a reload does not hand out the generations of before.
	 */
	pool->generation = atomic64_inc_return(&rpage_pool_generation) ?:
			   atomic64_inc_return(&rpage_pool_generation);
	pool->length = length;
	pool->flags = flags;
	pool->kind = kind;
	/* Scoped: announced to none until RPAGE_IOC_POOL_SET_PEERS. */
	if (flags & RPAGE_POOL_SCOPED) {
		struct rpage_pool_scope *none = kzalloc(sizeof(*none),
							GFP_KERNEL);

		if (!none) {
			rpage_pool_free_struct(pool);
			return NULL;
		}
		RCU_INIT_POINTER(pool->scope, none);
	}
	INIT_LIST_HEAD(&pool->regs);
	INIT_LIST_HEAD(&pool->file_entry);
	mutex_init(&pool->reg_lock);
	kref_init(&pool->ref);
	return pool;
}

/* Publishes a filled pool: to the list, then to every reader. */
static int rpage_pool_publish(struct rpage_pool *pool, struct rpage_file *owner)
{
	struct rpage_in_conn **chans;
	unsigned int n, i;

	mutex_lock(&rpage_pools_lock);
	if (rpage_pool_find(pool->id)) {
		mutex_unlock(&rpage_pools_lock);
		return -EEXIST;
	}
	list_add_tail(&pool->entry, &rpage_pools);
	hash_add_rcu(rpage_pools_hash, &pool->hnode, pool->id);
	if (owner) {
		pool->owner = owner;
		list_add_tail(&pool->file_entry, &owner->pools);
	}
	/* A reader still being synced gets it with the rest of the table. */
	chans = rpage_channels_collect(&n, true);
	n = rpage_pool_told(pool, chans, n);
	for (i = 0; i < n; i++)
		rpage_chan_queue(chans[i], RPAGE_CHAN_ADD, pool, 0);
	pr_info("pool %llu: %llu bytes%s%s, %s\n", pool->id, pool->length,
		pool->flags & RPAGE_POOL_WRITABLE ? ", writable" : "",
		pool->flags & RPAGE_POOL_SCOPED ? ", scoped" : "",
		pool->kind == RPAGE_POOL_USER ? "exported by a process" :
		pool->kind == RPAGE_POOL_FILE ? "of a file" : "allocated");
	mutex_unlock(&rpage_pools_lock);
	kfree(chans);
	return 0;
}

long rpage_ioctl_pool_create(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_pool_create arg;
	struct rpage_pool *pool;
	unsigned long i;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	ret = rpage_pool_check(arg.id, arg.length, arg.flags, arg.reserved0,
			       arg.reserved, sizeof(arg.reserved));
	if (ret)
		return ret;

	pool = rpage_pool_alloc(arg.id, arg.length, arg.flags, RPAGE_POOL_KERNEL);
	if (!pool)
		return -ENOMEM;
	for (i = 0; i < pool->nr_pages; i++) {
		pool->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO |
					    __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
		if (!pool->pages[i]) {
			rpage_pool_free_memory(pool);
			return -ENOMEM;
		}
		if (fatal_signal_pending(current)) {
			rpage_pool_free_memory(pool);
			return -EINTR;
		}
		cond_resched();
	}
	ret = rpage_pool_publish(pool, NULL);
	if (ret)
		rpage_pool_free_memory(pool);
	return ret;
}

/*
 * Takes the pages of hugetlbfs @file from byte @offset for @pool, each
 * base page of its huge pages held: a huge page is never reclaimed,
 * swapped or migrated while held. hugetlbfs allocates a page at its
 * first touch (or fallocate), and an absent one cannot be held: -ENXIO.
 */
static int rpage_pool_hugetlb_pages(struct rpage_pool *pool,
				    struct file *file, u64 offset)
{
	struct hstate *h = hstate_file(file);
	unsigned long i = 0;

	while (i < pool->nr_pages) {
		u64 pos = offset + ((u64)i << PAGE_SHIFT);
		struct folio *folio;
		unsigned long sub;

		folio = rpage_hugetlb_folio_get(h, file->f_mapping,
						pos >> huge_page_shift(h));
		if (!folio)
			return -ENXIO;
		sub = (pos & ~huge_page_mask(h)) >> PAGE_SHIFT;
		for (; sub < folio_nr_pages(folio) && i < pool->nr_pages;
		     sub++, i++) {
			pool->pages[i] = folio_page(folio, sub);
			get_page(pool->pages[i]);
		}
		folio_put(folio);
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/*
 * Takes the pages of @file from byte @offset for @pool, holding each:
 * a shared-memory file's pages stay where they are while held (no
 * writeback, and reclaim and migration skip a page with an extra
 * reference).
 */
static int rpage_pool_file_pages(struct rpage_pool *pool, struct file *file,
				 u64 offset)
{
	struct address_space *mapping = file->f_mapping;
	pgoff_t first = offset >> PAGE_SHIFT;
	unsigned long i;

	for (i = 0; i < pool->nr_pages; i++) {
		struct page *page;

		page = shmem_read_mapping_page_gfp(mapping, first + i,
						   GFP_KERNEL | __GFP_NOWARN);
		if (IS_ERR(page))
			return PTR_ERR(page);
		pool->pages[i] = page;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/* The seals of a memfd on tmpfs or hugetlbfs (@magic), F_SEAL_*. */
static unsigned int rpage_file_seals(struct file *file, unsigned long magic)
{
	struct inode *inode = file_inode(file);

	if (magic == HUGETLBFS_MAGIC)
		return READ_ONCE(HUGETLBFS_I(inode)->seals);
	return READ_ONCE(SHMEM_I(inode)->seals);
}

/*
 * A writable pool of @file writes it the way a shared writable mapping
 * does, and is counted as one while exported (as mmap() counts it):
 * a file sealed with F_SEAL_WRITE is refused (-EPERM), and so is one
 * sealed with F_SEAL_FUTURE_WRITE, which refuses new writable mappings;
 * F_SEAL_WRITE cannot be added while the pool lives (fcntl() says
 * EBUSY). Counted until the pool lets go of the file.
 */
static int rpage_pool_file_writable(struct rpage_pool *pool, struct file *file,
				    unsigned long magic)
{
	int ret;

	ret = mapping_map_writable(file->f_mapping);
	if (ret)
		return ret;
	if (rpage_file_seals(file, magic) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) {
		mapping_unmap_writable(file->f_mapping);
		return -EPERM;
	}
	return 0;
}

/*
 * Whether every page of file pool @pool is still its file's: a page
 * truncated or punched out of the file has left its mapping (held by the
 * pool, it is not written to swap or migrated, which would move it
 * too). Under rpage_pools_lock, the pool listed: its pages stay.
 */
static bool rpage_pool_file_intact(const struct rpage_pool *pool,
				   const struct address_space *mapping)
{
	unsigned long i;

	lockdep_assert_held(&rpage_pools_lock);
	for (i = 0; i < pool->nr_pages; i++) {
		if (READ_ONCE(page_folio(pool->pages[i])->mapping) != mapping)
			return false;
		if (!(i % 4096))
			cond_resched();
	}
	return true;
}

/*
 * The file of @watch was modified: if that took pages out of it, its
 * pool is withdrawn from every peer, here, before the call that took
 * them returns. Also called once a pool is published, for what happened
 * while it was being made. Each event checks every page of the pool (a
 * write(2) to the file is an event too; a VMM's guest RAM is written
 * through its mapping, which makes none). True if it withdrew the pool.
 */
static bool rpage_pool_file_check(struct fsnotify_mark *watch)
{
	struct rpage_withdrawal w;
	struct rpage_pool *pool;
	bool found = false;

	mutex_lock(&rpage_pools_lock);
	list_for_each_entry(pool, &rpage_pools, entry) {
		if (pool->watch == watch) {
			found = !rpage_pool_file_intact(pool,
							pool->file->f_mapping);
			break;
		}
	}
	if (found)
		rpage_pool_unlink(pool, &w);
	mutex_unlock(&rpage_pools_lock);
	if (!found)
		return false;
	pr_warn("pool %llu: its file was truncated or punched under it: withdrawn from every peer\n",
		pool->id);
	rpage_pool_finish(pool, &w);
	return true;
}

static int rpage_pool_file_event(struct fsnotify_mark *mark, u32 mask,
				 struct inode *inode, struct inode *dir,
				 const struct qstr *name, u32 cookie)
{
	rpage_pool_file_check(mark);
	return 0;
}

/* Once no event handler may see it: the pool let go of it before. */
static void rpage_pool_watch_free(struct fsnotify_mark *mark)
{
	kfree(mark);
}

static const struct fsnotify_ops rpage_file_fsnotify_ops = {
	.handle_inode_event = rpage_pool_file_event,
	.free_mark = rpage_pool_watch_free,
};

/*
 * Holds @file for @pool and puts a mark on its inode: the file's
 * truncates, hole punches and writes (FS_MODIFY) are then checked
 * against the pool. The pool's reference on the mark keeps it in memory
 * even if fsnotify takes it off the inode first.
 */
static int rpage_pool_watch_file(struct rpage_pool *pool, struct file *file)
{
	struct fsnotify_mark *watch;
	int ret;

	watch = kzalloc(sizeof(*watch), GFP_KERNEL);
	if (!watch)
		return -ENOMEM;
	fsnotify_init_mark(watch, rpage_file_group);
	watch->mask = FS_MODIFY;
	ret = fsnotify_add_inode_mark(watch, file_inode(file), 0);
	if (ret) {
		fsnotify_put_mark(watch);
		return ret;
	}
	pool->file = get_file(file);
	pool->watch = watch;
	return 0;
}

long rpage_ioctl_pool_file(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_pool_file arg;
	struct rpage_pool *pool;
	struct file *file;
	unsigned long magic;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	ret = rpage_pool_check(arg.id, arg.length, arg.flags, 0, arg.reserved,
			       sizeof(arg.reserved));
	if (ret)
		return ret;
	if (!PAGE_ALIGNED(arg.offset) || arg.offset + arg.length < arg.offset)
		return -EINVAL;
	file = fget(arg.fd);
	if (!file)
		return -EBADF;
	if ((arg.flags & RPAGE_POOL_WRITABLE) && !(file->f_mode & FMODE_WRITE)) {
		ret = -EBADF;
		goto out;
	}
	/*
	 * tmpfs, memfd and hugetlbfs only: a file on disk could have its
	 * pages written back and dropped from under the pool.
	 */
	magic = file_inode(file)->i_sb->s_magic;
	if ((magic != TMPFS_MAGIC && magic != HUGETLBFS_MAGIC) ||
	    !S_ISREG(file_inode(file)->i_mode)) {
		ret = -EOPNOTSUPP;
		goto out;
	}
	if (arg.offset + arg.length > (u64)i_size_read(file_inode(file))) {
		ret = -ERANGE;
		goto out;
	}
	pool = rpage_pool_alloc(arg.id, arg.length, arg.flags, RPAGE_POOL_FILE);
	if (!pool) {
		ret = -ENOMEM;
		goto out;
	}
	if (arg.flags & RPAGE_POOL_WRITABLE) {
		ret = rpage_pool_file_writable(pool, file, magic);
		if (ret)
			goto free;
	}
	/* Watched first: what the file loses from here on is seen. */
	ret = rpage_pool_watch_file(pool, file);
	if (ret) {
		if (arg.flags & RPAGE_POOL_WRITABLE)
			mapping_unmap_writable(file->f_mapping);
		goto free;
	}
	if (magic == HUGETLBFS_MAGIC)
		ret = rpage_pool_hugetlb_pages(pool, file, arg.offset);
	else
		ret = rpage_pool_file_pages(pool, file, arg.offset);
	if (!ret)
		ret = rpage_pool_publish(pool, NULL);
	if (ret)
		goto free;
	/* Events before it was listed found no pool to withdraw. */
	if (rpage_pool_file_check(pool->watch))
		ret = -EBUSY;
	goto out;
free:
	rpage_pool_free_memory(pool);
out:
	fput(file);
	return ret;
}

/* Pins @nr pages at @start for as long as they are exported. */
static int rpage_pool_pin(struct rpage_pool *pool, unsigned long start)
{
	unsigned int gup = FOLL_LONGTERM | FOLL_WRITE;
	unsigned long done = 0;
	long got;

retry:
	while (done < pool->nr_pages) {
		got = pin_user_pages_fast(start + (done << PAGE_SHIFT),
					  min_t(unsigned long,
						pool->nr_pages - done, INT_MAX),
					  gup, pool->pages + done);
		if (got <= 0)
			break;
		done += got;
	}
	if (done == pool->nr_pages)
		return 0;
	unpin_user_pages(pool->pages, done);
	memset(pool->pages, 0, done * sizeof(*pool->pages));
	/*
	 * Pinning for write breaks copy-on-write, so that the pool is the
	 * process's memory; read-only memory can only be exported read-only.
	 */
	if ((gup & FOLL_WRITE) && !(pool->flags & RPAGE_POOL_WRITABLE)) {
		gup &= ~FOLL_WRITE;
		done = 0;
		goto retry;
	}
	return -EFAULT;
}

long rpage_ioctl_pool_export(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_pool_export arg;
	struct rpage_pool *pool;
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	ret = rpage_pool_check(arg.id, arg.length, arg.flags, arg.reserved0,
			       arg.reserved, sizeof(arg.reserved));
	if (ret)
		return ret;
	if (!PAGE_ALIGNED(arg.addr) || arg.addr + arg.length < arg.addr)
		return -EINVAL;

	pool = rpage_pool_alloc(arg.id, arg.length, arg.flags, RPAGE_POOL_USER);
	if (!pool)
		return -ENOMEM;
	ret = rpage_pool_pin(pool, arg.addr);
	if (ret) {
		rpage_pool_free_struct(pool);
		return ret;
	}
	pool->owner_pid = task_tgid_nr(current);
	ret = rpage_pool_publish(pool, rfile);
	if (ret)
		rpage_pool_free_memory(pool);
	return ret;
}

long rpage_ioctl_pool_destroy(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_withdrawal w;
	struct rpage_pool_destroy arg;
	struct rpage_pool *pool;
	int ret = 0;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;

	mutex_lock(&rpage_pools_lock);
	pool = rpage_pool_find(arg.id);
	if (!pool)
		ret = -ENOENT;
	else if (pool->owner && pool->owner != rfile)
		ret = -EPERM;
	else
		rpage_pool_unlink(pool, &w);
	mutex_unlock(&rpage_pools_lock);
	if (!ret)
		rpage_pool_finish(pool, &w);
	return ret;
}

static u32 rpage_pools_fill(void *entries, u32 filled, void *ctx)
{
	struct rpage_pool_info *infos = entries;
	struct rpage_pool *pool;
	u32 count = 0;

	list_for_each_entry(pool, &rpage_pools, entry) {
		if (count < filled) {
			infos[count].id = pool->id;
			infos[count].length = pool->length;
			infos[count].flags = pool->flags;
			infos[count].kind = pool->kind;
			infos[count].owner_pid = pool->owner_pid;
		}
		count++;
	}
	return count;
}

long rpage_ioctl_pool_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_list_answer(argp, sizeof(struct rpage_pool_info),
				 &rpage_pools_lock, rpage_pools_fill, NULL);
}

/*
 * Destroys the first pool of @list (rpage_pools, or a file's @pools, as
 * @by_file says) that there is; false once there is none. One at a time,
 * since a destroy waits for the readers without the lock.
 */
static bool rpage_pools_destroy_first(struct list_head *list, bool by_file)
{
	struct rpage_withdrawal w;
	struct rpage_pool *pool;

	mutex_lock(&rpage_pools_lock);
	if (list_empty(list)) {
		mutex_unlock(&rpage_pools_lock);
		return false;
	}
	pool = by_file ? list_first_entry(list, struct rpage_pool, file_entry) :
			 list_first_entry(list, struct rpage_pool, entry);
	rpage_pool_unlink(pool, &w);
	mutex_unlock(&rpage_pools_lock);
	rpage_pool_finish(pool, &w);
	return true;
}

/* The file a process exported pools through is closing. */
void rpage_pools_file_release(struct rpage_file *rfile)
{
	while (rpage_pools_destroy_first(&rfile->pools, true))
		;
}

/* Frees the registrations of @regs (taken off their pools). */
static void rpage_pool_regs_free(struct list_head *regs)
{
	struct rpage_pool_reg *reg, *tmp;

	list_for_each_entry_safe(reg, tmp, regs, entry) {
		list_del(&reg->entry);
		rpage_pool_reg_free(reg);
	}
}

/*
 * Deregisters every pool's regions on @dev, or in peer @peer_id's
 * domains (@dev NULL). Pools being destroyed are off the list: their
 * destroy frees their registrations soon, and a device's removal waits
 * for it.
 */
static void rpage_pools_drop_regs(struct rpage_ibdev *dev, u32 peer_id)
{
	struct rpage_pool_reg *reg, *tmp;
	struct rpage_pool *pool;

	LIST_HEAD(regs);

	mutex_lock(&rpage_pools_lock);
	list_for_each_entry(pool, &rpage_pools, entry) {
		mutex_lock(&pool->reg_lock);
		list_for_each_entry_safe(reg, tmp, &pool->regs, entry)
			if (dev ? reg->dev == dev : reg->ppd->peer_id == peer_id)
				list_move(&reg->entry, &regs);
		mutex_unlock(&pool->reg_lock);
	}
	mutex_unlock(&rpage_pools_lock);
	rpage_pool_regs_free(&regs);
}

/* @dev is going away: its registrations go first. */
void rpage_pools_device_removed(struct rpage_ibdev *dev)
{
	rpage_pools_drop_regs(dev, 0);
}

/* Peer @peer_id is deleted: nothing registered for it is left. */
void rpage_pools_peer_removed(u32 peer_id)
{
	rpage_pools_drop_regs(NULL, peer_id);
}

/*
 * The scope RPAGE_IOC_POOL_SET_PEERS asks for, in *@scopep (NULL: every
 * peer): each id a configured peer's, once.
 */
static int rpage_pool_scope_from_user(const struct rpage_pool_peers *arg,
				      struct rpage_pool_scope **scopep)
{
	struct rpage_pool_scope *scope;
	struct rpage_peer *peer;
	u32 i;

	*scopep = NULL;
	if (arg->flags & RPAGE_POOL_PEERS_ANY)
		return arg->nr_peers ? -EINVAL : 0;
	scope = kzalloc(struct_size(scope, ids, arg->nr_peers), GFP_KERNEL);
	if (!scope)
		return -ENOMEM;
	scope->nr = arg->nr_peers;
	if (copy_from_user(scope->ids, u64_to_user_ptr(arg->peers),
			   array_size(arg->nr_peers, sizeof(u32)))) {
		kfree(scope);
		return -EFAULT;
	}
	sort(scope->ids, scope->nr, sizeof(u32), rpage_u32_cmp, NULL);
	for (i = 0; i < scope->nr; i++) {
		if (i && scope->ids[i] == scope->ids[i - 1]) {
			kfree(scope);
			return -EINVAL;
		}
		peer = rpage_peer_get_by_id(scope->ids[i]);
		if (!peer) {
			kfree(scope);
			return -ENOENT;
		}
		rpage_peer_put(peer);
	}
	*scopep = scope;
	return 0;
}

/*
 * RPAGE_IOC_POOL_SET_PEERS. Under rpage_pools_lock the scope changes
 * and each reader with the table is told what changed for it, in order
 * with everything else it is told: an addition for a peer let in, a
 * withdrawal for a peer taken out. Then, unlocked, the withdrawals are
 * waited for like a destroy's, the regions registered for the peers
 * taken out are deregistered (no new one is made: the registration
 * checks the scope under reg_lock), and every access section that may
 * have seen the old scope is waited for.
 */
long rpage_ioctl_pool_set_peers(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_pool_scope *scope, *old;
	struct rpage_pool_reg *reg, *tmp;
	struct rpage_withdrawal w = {};
	struct rpage_in_conn **chans;
	struct rpage_pool_peers arg;
	unsigned int n, i, nr_out = 0;
	struct rpage_pool *pool;
	bool was, now;
	LIST_HEAD(regs);
	int ret;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~RPAGE_POOL_PEERS_FLAGS_ALL ||
	    arg.nr_peers > RPAGE_POOL_MAX_PEERS ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	ret = rpage_pool_scope_from_user(&arg, &scope);
	if (ret)
		return ret;

	mutex_lock(&rpage_pools_lock);
	pool = rpage_pool_find(arg.id);
	if (!pool || (pool->owner && pool->owner != rfile)) {
		mutex_unlock(&rpage_pools_lock);
		kfree(scope);
		return pool ? -EPERM : -ENOENT;
	}
	chans = rpage_channels_collect(&n, true);
	mutex_lock(&pool->reg_lock);
	old = rpage_pool_scope(pool);
	rcu_assign_pointer(pool->scope, scope);
	if (scope)
		pool->flags |= RPAGE_POOL_SCOPED;
	else
		pool->flags &= ~RPAGE_POOL_SCOPED;
	mutex_unlock(&pool->reg_lock);
	/* Peers let in are told of it; those taken out, at the front. */
	for (i = 0; i < n; i++) {
		struct rpage_in_conn *in = chans[i];

		was = rpage_scope_has(old, in->c.peer->id);
		now = rpage_scope_has(scope, in->c.peer->id);
		if (!was && now) {
			rpage_chan_queue(in, RPAGE_CHAN_ADD, pool, 0);
		} else if (was && !now) {
			chans[i] = chans[nr_out];
			chans[nr_out++] = in;
		}
	}
	if (nr_out)
		rpage_pool_withdraw_from(pool, &w, chans, nr_out);
	/* Held: it may be destroyed meanwhile, not freed. */
	kref_get(&pool->ref);
	pr_info("pool %llu: scoped to %s\n", pool->id,
		scope ? "some peers" : "every peer");
	mutex_unlock(&rpage_pools_lock);
	kfree(chans);

	if (nr_out)
		rpage_withdrawal_wait(pool, &w);
	mutex_lock(&pool->reg_lock);
	list_for_each_entry_safe(reg, tmp, &pool->regs, entry)
		if (!rpage_scope_has(rpage_pool_scope(pool), reg->ppd->peer_id))
			list_move(&reg->entry, &regs);
	mutex_unlock(&pool->reg_lock);
	rpage_pool_regs_free(&regs);
	/* No access section still sees the old scope. */
	synchronize_srcu(&rpage_pool_srcu);
	kfree(old);
	rpage_pool_put(pool);
	return 0;
}

long rpage_ioctl_pool_get_peers(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_pool_peers __user *uarg = argp;
	const struct rpage_pool_scope *scope;
	struct rpage_pool_peers arg;
	struct rpage_pool *pool;
	u32 *ids = NULL, nr = 0;
	int ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	mutex_lock(&rpage_pools_lock);
	pool = rpage_pool_find(arg.id);
	if (!pool) {
		ret = -ENOENT;
		goto unlock;
	}
	scope = rcu_dereference_protected(pool->scope,
					  lockdep_is_held(&rpage_pools_lock));
	if (scope && scope->nr) {
		nr = scope->nr;
		ids = kmemdup(scope->ids, array_size(nr, sizeof(u32)),
			      GFP_KERNEL);
		if (!ids)
			ret = -ENOMEM;
	}
unlock:
	mutex_unlock(&rpage_pools_lock);
	if (ret)
		return ret;
	if (copy_to_user(u64_to_user_ptr(arg.peers), ids,
			 array_size(min(nr, arg.nr_peers), sizeof(u32))) ||
	    put_user(nr, &uarg->nr_peers))
		ret = -EFAULT;
	kfree(ids);
	return ret;
}

int rpage_pools_init(void)
{
	atomic64_set(&rpage_pool_generation, get_random_u64());
	/* Several pools may be of one file: a mark each. */
	rpage_file_group = fsnotify_alloc_group(&rpage_file_fsnotify_ops,
						FSNOTIFY_GROUP_DUPS);
	return PTR_ERR_OR_ZERO(rpage_file_group);
}

/* Module unload: every file is closed, so only kernel pools are left. */
void rpage_pools_exit(void)
{
	cancel_work_sync(&rpage_pools_sync_work);
	while (rpage_pools_destroy_first(&rpage_pools, false))
		;
	fsnotify_put_group(rpage_file_group);
	/* Marks are freed by a work of fsnotify's, with this module's code. */
	fsnotify_wait_marks_destroyed();
}
