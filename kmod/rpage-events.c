// SPDX-License-Identifier: GPL-2.0
/*
 * rpage's events: the generic netlink family "rpage" multicasts what
 * changes on this host (peer states, pools announced and gone, named
 * mappings, background prefetches ending) to its "events" group, which
 * `rpagectl monitor` reads, as `ip monitor` reads rtnetlink's. The family
 * has no commands: a listener reads the state to start from with the
 * list ioctls.
 *
 * Events are sent from wherever the change is made, some of them under a
 * spinlock: each message is allocated with GFP_ATOMIC and dropped if that
 * fails or nobody listens. A listener that misses some learns it from its
 * socket (ENOBUFS), as with every netlink multicast, and reads the state
 * again. The family lives in the initial network namespace only, as rpage
 * does.
 */

#include "rpage-pri.h"

#include <linux/ktime.h>
#include <net/genetlink.h>

enum {
	RPAGE_MCGRP_EVENTS,
};

static const struct genl_multicast_group rpage_genl_mcgrps[] = {
	[RPAGE_MCGRP_EVENTS] = {
		.name = RPAGE_GENL_MCGRP_EVENTS,
		/* Peer names and causes are the operator's business. */
		.flags = GENL_MCAST_CAP_NET_ADMIN,
	},
};

static struct genl_family rpage_genl_family __ro_after_init = {
	.name		= RPAGE_GENL_NAME,
	.version	= RPAGE_GENL_VERSION,
	.maxattr	= RPAGE_EA_MAX,
	.module		= THIS_MODULE,
	.mcgrps		= rpage_genl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(rpage_genl_mcgrps),
	.resv_start_op	= RPAGE_EVENT_MAX + 1,
};

/* Set once the family is registered: events before (or after) go nowhere. */
static bool rpage_events_up;

/*
 * Whether anyone listens: an event whose figures cost something to
 * gather (a walk of a mapping's pages) is only made then.
 */
bool rpage_events_wanted(void)
{
	return READ_ONCE(rpage_events_up) &&
	       genl_has_listeners(&rpage_genl_family, &init_net,
				  RPAGE_MCGRP_EVENTS);
}

/*
 * A new event message of @cmd with its time, or NULL (no listener, no
 * memory); *@hdr is where rpage_event_send() closes it.
 */
static struct sk_buff *rpage_event_new(u8 cmd, void **hdr)
{
	struct sk_buff *skb;

	if (!rpage_events_wanted())
		return NULL;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_ATOMIC);
	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &rpage_genl_family, 0, cmd);
	if (!*hdr ||
	    nla_put_u64_64bit(skb, RPAGE_EA_TIME_NS, ktime_get_real_ns(),
			      RPAGE_EA_PAD)) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

/* Sends @skb, whose attributes were put with @err (0: all fitted). */
static void rpage_event_send(struct sk_buff *skb, void *hdr, int err)
{
	if (err) {
		/* NLMSG_GOODSIZE holds every event: a bug, not a loss. */
		WARN_ON_ONCE(1);
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	genlmsg_multicast(&rpage_genl_family, skb, 0, RPAGE_MCGRP_EVENTS,
			  GFP_ATOMIC);
}

static int rpage_event_put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, RPAGE_EA_PAD);
}

static int rpage_event_put_peer(struct sk_buff *skb,
				const struct rpage_peer *peer)
{
	return nla_put_u32(skb, RPAGE_EA_PEER_ID, peer->id) ?:
	       nla_put_string(skb, RPAGE_EA_PEER_NAME, peer->name);
}

void rpage_event_peer_state(const struct rpage_peer *peer, u32 old, u32 new,
			    const char *cause)
{
	struct sk_buff *skb;
	void *hdr;

	skb = rpage_event_new(RPAGE_EVENT_PEER_STATE, &hdr);
	if (!skb)
		return;
	rpage_event_send(skb, hdr,
			 rpage_event_put_peer(skb, peer) ?:
			 nla_put_u32(skb, RPAGE_EA_OLD_STATE, old) ?:
			 nla_put_u32(skb, RPAGE_EA_STATE, new) ?:
			 nla_put_string(skb, RPAGE_EA_CAUSE, cause));
}

void rpage_event_rpool(const struct rpage_peer *peer, u64 pool_id,
		       u64 length, u64 generation, const char *gone)
{
	struct sk_buff *skb;
	void *hdr;

	skb = rpage_event_new(gone ? RPAGE_EVENT_POOL_DEL : RPAGE_EVENT_POOL_ADD,
			      &hdr);
	if (!skb)
		return;
	rpage_event_send(skb, hdr,
			 rpage_event_put_peer(skb, peer) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_POOL_ID, pool_id) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_POOL_LENGTH, length) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_POOL_GENERATION,
					     generation) ?:
			 (gone ? nla_put_string(skb, RPAGE_EA_CAUSE, gone) : 0));
}

void rpage_event_map_add(const char *name, u64 map_id,
			 const struct rpage_peer *peer, u64 pool_id,
			 u64 offset, u64 length)
{
	struct sk_buff *skb;
	void *hdr;

	skb = rpage_event_new(RPAGE_EVENT_MAP_ADD, &hdr);
	if (!skb)
		return;
	rpage_event_send(skb, hdr,
			 nla_put_string(skb, RPAGE_EA_MAP_NAME, name) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_ID, map_id) ?:
			 (peer ? rpage_event_put_peer(skb, peer) : 0) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_POOL_ID, pool_id) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_OFFSET, offset) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_LENGTH, length));
}

void rpage_event_map_del(const char *name, u64 map_id)
{
	struct sk_buff *skb;
	void *hdr;

	skb = rpage_event_new(RPAGE_EVENT_MAP_DEL, &hdr);
	if (!skb)
		return;
	rpage_event_send(skb, hdr,
			 nla_put_string(skb, RPAGE_EA_MAP_NAME, name) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_ID, map_id));
}

void rpage_event_prefetch_end(u64 map_id, u64 pages, u64 failed, u64 local,
			      u64 map_pages, const char *stopped)
{
	struct sk_buff *skb;
	void *hdr;

	skb = rpage_event_new(RPAGE_EVENT_PREFETCH_END, &hdr);
	if (!skb)
		return;
	rpage_event_send(skb, hdr,
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_ID, map_id) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_PAGES, pages) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_FAILED, failed) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_LOCAL, local) ?:
			 rpage_event_put_u64(skb, RPAGE_EA_MAP_PAGES, map_pages) ?:
			 (stopped ? nla_put_string(skb, RPAGE_EA_CAUSE, stopped) :
				    0));
}

int rpage_events_init(void)
{
	int ret = genl_register_family(&rpage_genl_family);

	if (!ret)
		WRITE_ONCE(rpage_events_up, true);
	return ret;
}

void rpage_events_exit(void)
{
	WRITE_ONCE(rpage_events_up, false);
	genl_unregister_family(&rpage_genl_family);
}
