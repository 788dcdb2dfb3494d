// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: control messages, and the pools peers export to us.
 *
 * Every control message is validated before anything of it is used, and
 * only in the direction it belongs to. A reader keeps the exporter's pool
 * table per peer: the pools it may read, each an incarnation (id and
 * generation) with the address and key of every memory region. A pool
 * is referenced by the table and by each transfer using it, so that a
 * pool withdrawn, or announced again, while transfers use it is freed
 * only after the last one; that one acknowledges a withdrawal.
 */
#include "rpage-pri.h"

#include <linux/slab.h>

static void rpage_rpool_free(struct rpage_rpool *rpool)
{
	kvfree(rpool->mrs);
	kfree(rpool);
}

/*
 * Acknowledgments a peer may have waiting to be sent at once. An
 * exporter that has this many unsent is not reading what it is sent
 * (they go in order on its first connection): the rest are dropped,
 * which costs it only its own wait for them.
 */
#define RPAGE_ACKS_MAX	256

/**
 * struct rpage_ack - a withdrawal to acknowledge to its exporter
 * @entry: link in the peer's @acks.
 * @pool_id: the pool.
 * @generation: its incarnation.
 */
struct rpage_ack {
	struct list_head entry;
	u64 pool_id;
	u64 generation;
};

/* Sends the peer's acknowledgments, one at a time, in order. */
static void rpage_ack_work_fn(struct work_struct *work)
{
	struct rpage_peer *peer = container_of(work, struct rpage_peer,
					       ack_work);
	struct rpage_msg_pool_del_ack msg = {
		.hdr.type = cpu_to_le16(RPAGE_MSG_POOL_DEL_ACK),
		.hdr.length = cpu_to_le32(sizeof(msg)),
	};
	struct rpage_ack *a;

	for (;;) {
		spin_lock(&peer->acks_lock);
		a = list_first_entry_or_null(&peer->acks, struct rpage_ack,
					     entry);
		if (a) {
			list_del(&a->entry);
			peer->nr_acks--;
		}
		spin_unlock(&peer->acks_lock);
		if (!a)
			break;
		msg.pool_id = cpu_to_le64(a->pool_id);
		msg.generation = cpu_to_le64(a->generation);
		kfree(a);
		/* Not connected: the exporter stops waiting after its timeout. */
		rpage_peer_send_ctl(peer, &msg, sizeof(msg));
		cond_resched();
	}
	/* Held while queued (see rpage_peer_ack()). */
	rpage_peer_put(peer);
}

void rpage_peer_acks_init(struct rpage_peer *peer)
{
	spin_lock_init(&peer->acks_lock);
	INIT_LIST_HEAD(&peer->acks);
	INIT_WORK(&peer->ack_work, rpage_ack_work_fn);
}

/*
 * Queues the acknowledgment of pool @pool_id incarnation @generation
 * for @peer, which the caller holds: once per incarnation, and at most
 * RPAGE_ACKS_MAX waiting, so that what an exporter makes us keep and
 * the work it makes us do stay bounded, however it floods us. One work
 * per peer sends them, so that a peer that never reads holds up only
 * its own acknowledgments, never the work of another peer.
 */
static void rpage_peer_ack(struct rpage_peer *peer, u64 pool_id,
			   u64 generation)
{
	struct rpage_ack *a, *e;
	bool queued = false, dup = false;

	a = kmalloc(sizeof(*a), GFP_KERNEL);
	spin_lock(&peer->acks_lock);
	list_for_each_entry(e, &peer->acks, entry) {
		if (e->pool_id == pool_id && e->generation == generation) {
			dup = true;
			break;
		}
	}
	if (a && !dup && peer->nr_acks < RPAGE_ACKS_MAX) {
		a->pool_id = pool_id;
		a->generation = generation;
		list_add_tail(&a->entry, &peer->acks);
		peer->nr_acks++;
		if (queue_work(rpage_wq, &peer->ack_work))
			kref_get(&peer->ref);
		queued = true;
	}
	spin_unlock(&peer->acks_lock);
	if (queued)
		return;
	kfree(a);
	if (dup)
		return;
	atomic64_inc(&peer->refused_msgs);
	pr_warn_ratelimited("peer %s: %u acknowledgments unsent, it reads none: dropped one of pool %llu\n",
			    peer->name, RPAGE_ACKS_MAX, pool_id);
}

static void rpage_rpool_release(struct kref *ref)
{
	struct rpage_rpool *rpool = container_of(ref, struct rpage_rpool, ref);

	if (rpool->withdrawn)
		rpage_peer_ack(rpool->peer, rpool->id, rpool->generation);
	rpage_rpool_free(rpool);
}

/* A transfer is done with @rpool (process context). */
void rpage_rpool_put(struct rpage_rpool *rpool)
{
	kref_put(&rpool->ref, rpage_rpool_release);
}

/* Whether the peer withdrew @rpool, which the caller holds. */
bool rpage_rpool_withdrawn(struct rpage_rpool *rpool)
{
	return READ_ONCE(rpool->withdrawn);
}

/*
 * Finds the peer's pool @pool_id and holds it for one transfer of
 * @length bytes at @offset. With @generation, only that incarnation
 * will do. Fails with the errno the UAPI promises: ENOENT (no such
 * pool), ESTALE (another incarnation of it), ERANGE, EPERM.
 */
struct rpage_rpool *rpage_rpool_get(struct rpage_peer *peer, u64 pool_id,
				    u64 generation, u64 offset, u64 length,
				    bool write)
{
	struct rpage_rpool *rpool, *found = ERR_PTR(-ENOENT);

	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id != pool_id || rpool->received != rpool->nr_mrs)
			continue;
		if (generation && rpool->generation != generation) {
			found = ERR_PTR(-ESTALE);
		} else if (offset >= rpool->length ||
			   length > rpool->length - offset) {
			found = ERR_PTR(-ERANGE);
		} else if (write && !(rpool->flags & RPAGE_POOL_WRITABLE)) {
			found = ERR_PTR(-EPERM);
		} else {
			kref_get(&rpool->ref);
			found = rpool;
		}
		break;
	}
	spin_unlock(&peer->rpools_lock);
	return found;
}

/* Takes @rpool off its peer's table; the caller holds rpools_lock. */
static void rpage_rpool_unlist(struct rpage_rpool *rpool)
{
	struct rpage_peer *peer = rpool->peer;

	lockdep_assert_held(&peer->rpools_lock);
	list_del_init(&rpool->entry);
	WRITE_ONCE(rpool->listed, false);
	peer->nr_rpools--;
	peer->nr_rregions -= rpool->nr_mrs;
}

/* The listed pool @id of @peer, or NULL; the caller holds rpools_lock. */
static struct rpage_rpool *rpage_rpool_find_locked(struct rpage_peer *peer,
						   u64 id)
{
	struct rpage_rpool *rpool;

	lockdep_assert_held(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry)
		if (rpool->id == id)
			return rpool;
	return NULL;
}

/*
 * Whether @peer's table has room for a pool of @nr_mrs regions in place
 * of @old (NULL: in addition); the caller holds rpools_lock. Asked before
 * allocating, so that a refused announcement costs no memory, and again
 * before listing.
 */
static bool rpage_rpool_room(struct rpage_peer *peer,
			     const struct rpage_rpool *old, u32 nr_mrs)
{
	u64 pools = peer->nr_rpools + (old ? 0 : 1);
	u64 regions = (u64)peer->nr_rregions + nr_mrs -
		      (old ? old->nr_mrs : 0);

	lockdep_assert_held(&peer->rpools_lock);
	return pools <= READ_ONCE(rpage_max_remote_pools) &&
	       regions <= READ_ONCE(rpage_max_remote_regions);
}

/* Counts and logs a pool refused for want of room; -EDQUOT. */
static int rpage_rpool_refuse(struct rpage_peer *peer, u64 id, u32 nr_mrs)
{
	atomic64_inc(&peer->refused_pools);
	pr_warn_ratelimited("peer %s: refused pool %llu of %u regions: over max_remote_pools=%u or max_remote_regions=%u\n",
			    peer->name, id, nr_mrs,
			    READ_ONCE(rpage_max_remote_pools),
			    READ_ONCE(rpage_max_remote_regions));
	return -EDQUOT;
}

/*
 * The peer's connection set is gone, and its pool table with it: the
 * next set brings a new one. Transfers holding a pool keep it until
 * they are done with it.
 */
void rpage_rpools_clear(struct rpage_peer *peer)
{
	struct rpage_rpool *rpool, *tmp;
	LIST_HEAD(gone);

	spin_lock(&peer->rpools_lock);
	list_for_each_entry_safe(rpool, tmp, &peer->rpools, entry) {
		rpage_rpool_unlist(rpool);
		list_add_tail(&rpool->entry, &gone);
	}
	spin_unlock(&peer->rpools_lock);
	list_for_each_entry_safe(rpool, tmp, &gone, entry) {
		/* A pool never received whole was never announced either. */
		if (rpool->received == rpool->nr_mrs)
			rpage_event_rpool(peer, rpool->id, rpool->length,
					  rpool->generation, "disconnected");
		list_del_init(&rpool->entry);
		rpage_rpool_put(rpool);
	}
}

static int rpage_rpool_add(struct rpage_peer *peer,
			   const struct rpage_msg_pool_add *msg, u32 len)
{
	u64 length = le64_to_cpu(msg->length);
	u64 mr_bytes = le64_to_cpu(msg->mr_bytes);
	u32 nr_mrs = le32_to_cpu(msg->nr_mrs);
	u32 first = le32_to_cpu(msg->first_mr);
	u32 count = le32_to_cpu(msg->count);
	u64 id = le64_to_cpu(msg->pool_id);
	u64 generation = le64_to_cpu(msg->generation);
	struct rpage_rpool *rpool, *fresh = NULL, *old = NULL;
	bool whole;
	u32 i;

	if (len < sizeof(*msg) ||
	    len != sizeof(*msg) + (u64)count * sizeof(msg->mrs[0]) ||
	    !generation ||
	    !length || length % RPAGE_MSG_MR_ALIGN ||
	    !rpage_msg_pool_flags_supported(le32_to_cpu(msg->flags)))
		return -EPROTO;
	if (peer->ops->regions) {
		if (!mr_bytes || mr_bytes % RPAGE_MSG_MR_ALIGN ||
		    !nr_mrs || nr_mrs > RPAGE_MSG_MAX_MRS ||
		    nr_mrs != DIV_ROUND_UP_ULL(length, mr_bytes) ||
		    (u64)first + count > nr_mrs)
			return -EPROTO;
	} else if (mr_bytes || nr_mrs || first || count) {
		/* A transport without regions is never told of any. */
		return -EPROTO;
	}

	if (first == 0) {
		spin_lock(&peer->rpools_lock);
		old = rpage_rpool_find_locked(peer, id);
		if (!rpage_rpool_room(peer, old, nr_mrs)) {
			spin_unlock(&peer->rpools_lock);
			return rpage_rpool_refuse(peer, id, nr_mrs);
		}
		spin_unlock(&peer->rpools_lock);
		old = NULL;
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
		if (!fresh)
			return -ENOMEM;
		if (nr_mrs)
			fresh->mrs = kvcalloc(nr_mrs, sizeof(*fresh->mrs),
					      GFP_KERNEL);
		if (nr_mrs && !fresh->mrs) {
			kfree(fresh);
			return -ENOMEM;
		}
		kref_init(&fresh->ref);
		fresh->peer = peer;
		fresh->id = id;
		fresh->generation = generation;
		fresh->length = length;
		fresh->mr_bytes = mr_bytes;
		fresh->flags = le32_to_cpu(msg->flags);
		fresh->nr_mrs = nr_mrs;
		fresh->listed = true;
	}

	spin_lock(&peer->rpools_lock);
	old = rpage_rpool_find_locked(peer, id);
	if (fresh) {
		/* The table may have changed since the first look. */
		if (!rpage_rpool_room(peer, old, nr_mrs)) {
			spin_unlock(&peer->rpools_lock);
			rpage_rpool_free(fresh);
			return rpage_rpool_refuse(peer, id, nr_mrs);
		}
		/* A pool announced again starts over; users keep the old one. */
		if (old)
			rpage_rpool_unlist(old);
		list_add_tail(&fresh->entry, &peer->rpools);
		peer->nr_rpools++;
		peer->nr_rregions += nr_mrs;
		rpool = fresh;
	} else {
		/* The next regions of a pool must follow the ones before. */
		if (!old || old->generation != generation ||
		    old->length != length || old->mr_bytes != mr_bytes ||
		    old->received != first) {
			spin_unlock(&peer->rpools_lock);
			return -EPROTO;
		}
		rpool = old;
		old = NULL;
	}
	/* Whole before this message: a fresh pool never is. */
	whole = !fresh && rpool->received == rpool->nr_mrs;
	for (i = 0; i < count; i++) {
		rpool->mrs[first + i].iova = le64_to_cpu(msg->mrs[i].iova);
		rpool->mrs[first + i].rkey = le32_to_cpu(msg->mrs[i].rkey);
	}
	rpool->received = first + count;
	/* This message made it whole: it can be mapped from now on. */
	whole = !whole && rpool->received == rpool->nr_mrs;
	spin_unlock(&peer->rpools_lock);

	if (old) {
		if (old->received == old->nr_mrs)
			rpage_event_rpool(peer, id, old->length, old->generation,
					  "replaced");
		rpage_rpool_put(old);
	}
	if (whole)
		rpage_event_rpool(peer, id, length, generation, NULL);
	return 0;
}

static int rpage_rpool_del(struct rpage_peer *peer,
			   const struct rpage_msg_pool_del *msg, u32 len)
{
	u64 generation = le64_to_cpu(msg->generation);
	u64 id = le64_to_cpu(msg->pool_id);
	struct rpage_rpool *rpool, *found = NULL;

	if (len != sizeof(*msg))
		return -EPROTO;
	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->id == id && rpool->generation == generation) {
			rpage_rpool_unlist(rpool);
			WRITE_ONCE(rpool->withdrawn, true);
			found = rpool;
			break;
		}
	}
	spin_unlock(&peer->rpools_lock);
	if (found) {
		if (found->received == found->nr_mrs)
			rpage_event_rpool(peer, id, found->length, generation,
					  "withdrawn");
		/* The last transfer out acknowledges; maybe this. */
		rpage_rpool_put(found);
	} else {
		/* Never had it: nothing to wait for. */
		rpage_peer_ack(peer, id, generation);
	}
	return 0;
}

static int rpage_rpool_sync(struct rpage_peer *peer,
			    const struct rpage_msg_pool_sync *msg, u32 len)
{
	if (len != sizeof(*msg))
		return -EPROTO;
	rpage_peer_synced(peer);
	return 0;
}

static const char *const rpage_msg_names[] = {
	[RPAGE_MSG_POOL_ADD]	= "POOL_ADD",
	[RPAGE_MSG_POOL_DEL]	= "POOL_DEL",
	[RPAGE_MSG_POOL_DEL_ACK] = "POOL_DEL_ACK",
	[RPAGE_MSG_POOL_SYNC]	= "POOL_SYNC",
	[RPAGE_MSG_HEARTBEAT]	= "HEARTBEAT",
};

/*
 * A control message from the peer, on @conn: @from_reader when the peer
 * opened @conn to read from us.
 */
static int rpage_msg_dispatch(struct rpage_conn *conn, const void *buf, u32 len)
{
	const struct rpage_msg_pool_del_ack *ack = buf;
	const struct rpage_msg_hdr *hdr = buf;
	struct rpage_peer *peer = conn->peer;
	bool from_reader = conn->inbound;

	if (len < sizeof(*hdr) || le32_to_cpu(hdr->length) != len)
		return -EPROTO;
	switch (le16_to_cpu(hdr->type)) {
	case RPAGE_MSG_POOL_ADD:
		return from_reader ? -EPROTO : rpage_rpool_add(peer, buf, len);
	case RPAGE_MSG_POOL_DEL:
		return from_reader ? -EPROTO : rpage_rpool_del(peer, buf, len);
	case RPAGE_MSG_POOL_SYNC:
		return from_reader ? -EPROTO : rpage_rpool_sync(peer, buf, len);
	case RPAGE_MSG_POOL_DEL_ACK:
		if (!from_reader || len != sizeof(*ack))
			return -EPROTO;
		rpage_pools_acked(peer, le64_to_cpu(ack->pool_id),
				  le64_to_cpu(ack->generation));
		return 0;
	case RPAGE_MSG_HEARTBEAT:
		/* Its sender learns what it needs from the send completing. */
		return len == sizeof(struct rpage_msg_heartbeat) ? 0 : -EPROTO;
	default:
		return -EPROTO;
	}
}

void rpage_msg_received(struct rpage_conn *conn, const void *buf, u32 len)
{
	const struct rpage_msg_hdr *hdr = buf;
	u16 type = len >= sizeof(*hdr) ? le16_to_cpu(hdr->type) : 0;
	int ret;

	ret = rpage_msg_dispatch(conn, buf, len);
	/* A pool over the limits is counted as such, not as malformed. */
	if (ret && ret != -EDQUOT)
		atomic64_inc(&conn->peer->refused_msgs);
	if (ret)
		pr_warn_ratelimited("peer %s: dropped a control message (%s, %u bytes): %d\n",
				    conn->peer->name,
				    type < ARRAY_SIZE(rpage_msg_names) &&
				    rpage_msg_names[type] ? rpage_msg_names[type] :
				    "unknown type", len, ret);
}

/* Lists @peer's pools into @entries from @count on; returns the new count. */
static u32 rpage_rpools_fill(struct rpage_peer *peer, void *entries, u32 filled,
			     u32 count)
{
	struct rpage_remote_pool_info *infos = entries;
	struct rpage_rpool *rpool;

	spin_lock(&peer->rpools_lock);
	list_for_each_entry(rpool, &peer->rpools, entry) {
		if (rpool->received != rpool->nr_mrs)
			continue;
		if (count < filled) {
			struct rpage_remote_pool_info *info = &infos[count];

			strscpy(info->peer, peer->name, sizeof(info->peer));
			info->peer_id = peer->id;
			info->id = rpool->id;
			info->length = rpool->length;
			info->flags = rpool->flags;
		}
		count++;
	}
	spin_unlock(&peer->rpools_lock);
	return count;
}

long rpage_ioctl_remote_pool_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_peers_list_walk(argp, sizeof(struct rpage_remote_pool_info),
				     rpage_rpools_fill);
}
