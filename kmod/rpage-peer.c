// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: peers - the registry of configured hosts, the state of the
 * connections this host opens to each (and how they are rebuilt), the
 * heartbeats that notice a peer gone silent, and the bookkeeping of the
 * connections each peer opens to us.
 *
 * How a peer's channels come up and go down is its transport's
 * (peer->ops; RDMA's queue pairs are in rpage-rdma-peer.c): the state
 * machine, backoff, loss timeout and heartbeat schedule here are every
 * transport's. A peer is connected once its transport's channels are up
 * (for RDMA, every outbound queue pair) and the peer has sent its pool
 * table. When a connection is lost (an rdma_cm event,
 * a failed transfer, a missed heartbeat) the peer goes to reconnecting:
 * the connect work tears the set down at once, so that whatever is in
 * flight is flushed, and connects again after a backoff. Transfers wait
 * for it meanwhile (rpage_peer_wait_connected()), up to the peer's loss
 * timeout: a short outage costs a wait, not an error.
 *
 * Connecting and tearing down run in rpage_wq under peer->lock; the
 * rdma_cm callbacks only advance a connection attempt and report how it
 * ended, since an rdma_cm id cannot be destroyed from its own callback.
 */
#include "rpage-pri.h"

#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

/* A connection set that lived this long was fine: the backoff restarts. */
#define RPAGE_STABLE_MS		10000
/* The backoff grows to this many reconnect delays at most. */
#define RPAGE_BACKOFF_MAX_SHIFT	3

static LIST_HEAD(rpage_peers);
/* Protects rpage_peers; never held across a wait on the network. */
static DEFINE_MUTEX(rpage_peers_lock);
/* Peer ids are never reused while the module is loaded. */
static atomic_t rpage_next_peer_id = ATOMIC_INIT(0);

static const char *const rpage_peer_state_names[] = {
	[RPAGE_PEER_STATE_CONNECTING]	= "connecting",
	[RPAGE_PEER_STATE_CONNECTED]	= "connected",
	[RPAGE_PEER_STATE_RECONNECTING]	= "reconnecting",
	[RPAGE_PEER_STATE_FAILED]	= "failed",
	[RPAGE_PEER_STATE_DELETING]	= "deleting",
};

static void rpage_peer_teardown_inbound(struct rpage_peer *peer,
					struct rpage_ibdev *only_dev);

/*
 * Since when a peer that was connected is unreachable: since its last
 * sign of life, if that is recent enough to be it (heartbeats, when on,
 * make it so: a silent peer is noticed within a few intervals), else
 * since now. The loss timeout counts from there, so that a fault gives
 * up about that long after the peer went quiet, not after we noticed.
 */
static unsigned long rpage_peer_unreachable_since(struct rpage_peer *peer)
{
	unsigned int window_ms = max(READ_ONCE(rpage_heartbeat_ms) *
				     (RPAGE_HEARTBEAT_MISSES + 1),
				     READ_ONCE(rpage_io_timeout_ms)) + 1000;
	unsigned long alive = READ_ONCE(peer->last_alive);

	if (time_after(alive, peer->connected_at) &&
	    time_after(alive, jiffies - msecs_to_jiffies(window_ms)))
		return alive;
	return jiffies;
}

/* A state as events name it: a deleted peer is gone for good. */
static u32 rpage_peer_event_state(enum rpage_peer_state state)
{
	return state == RPAGE_PEER_STATE_DELETING ? RPAGE_PEER_DELETED : state;
}

/*
 * The one place a peer changes state, under its state lock. Whitelisted
 * transitions only: a deleted peer stays deleted, and only an explicit
 * re-add revives a failed one. Logs old -> new and @cause, which is also
 * kept for `rpagectl peer show`. Returns false if not allowed.
 */
static bool rpage_peer_transition(struct rpage_peer *peer,
				  enum rpage_peer_state new, const char *cause)
{
	enum rpage_peer_state old = peer->state;
	bool allowed;

	lockdep_assert_held(&peer->state_lock);
	switch (new) {
	case RPAGE_PEER_STATE_CONNECTED:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_RECONNECTING:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_CONNECTED ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_FAILED:
		allowed = old == RPAGE_PEER_STATE_CONNECTING ||
			  old == RPAGE_PEER_STATE_RECONNECTING;
		break;
	case RPAGE_PEER_STATE_DELETING:
		allowed = old != RPAGE_PEER_STATE_DELETING;
		break;
	default:
		allowed = false;
		break;
	}
	if (!allowed)
		return false;

	if (old != new) {
		/* Read without the lock by rpage_peer_wait_connected(). */
		WRITE_ONCE(peer->state, new);
		peer->state_since = ktime_get_ns();
		if (old == RPAGE_PEER_STATE_CONNECTED) {
			peer->down_since = rpage_peer_unreachable_since(peer);
			atomic64_inc(&peer->reconnects);
		}
		if (new == RPAGE_PEER_STATE_CONNECTED)
			peer->connected_at = jiffies;
		pr_info("peer %s: %s -> %s: %s\n", peer->name,
			rpage_peer_state_names[old], rpage_peer_state_names[new],
			cause);
	} else if (strcmp(peer->cause, cause)) {
		/* Another failed attempt, for another reason. */
		pr_info_ratelimited("peer %s: still %s: %s\n", peer->name,
				    rpage_peer_state_names[new], cause);
	}
	strscpy(peer->cause, cause, sizeof(peer->cause));
	peer->events++;
	wake_up_all(&peer->wait);
	if (old != new)
		rpage_event_peer_state(peer, rpage_peer_event_state(old),
				       rpage_peer_event_state(new), cause);
	return true;
}

static bool rpage_peer_set_state(struct rpage_peer *peer,
				 enum rpage_peer_state new, const char *cause)
{
	bool ret;

	spin_lock(&peer->state_lock);
	ret = rpage_peer_transition(peer, new, cause);
	spin_unlock(&peer->state_lock);
	return ret;
}

/* @peer is being deleted: nothing new may keep it. */
bool rpage_peer_deleted(struct rpage_peer *peer)
{
	return rpage_peer_state(peer) == RPAGE_PEER_STATE_DELETING;
}

/*
 * Under the state lock: when the next connection attempt may start. A
 * set that was lost after working for a while is rebuilt at once (a few
 * milliseconds of jitter aside); one that keeps failing waits the
 * reconnect delay, doubled each time up to 8 times, plus up to half of
 * it at random, so that a failure that repeats costs a reconnect a few
 * seconds rather than a storm, and hosts restarted together do not
 * retry in step.
 */
static unsigned long rpage_peer_backoff(struct rpage_peer *peer)
{
	unsigned int ms = READ_ONCE(rpage_reconnect_delay_ms);
	u64 delay;

	if (!peer->fail_streak)
		return msecs_to_jiffies(get_random_u32_below(ms / 8 + 1));
	delay = (u64)ms << min(peer->fail_streak - 1, RPAGE_BACKOFF_MAX_SHIFT);
	delay += get_random_u32_below(delay / 2 + 1);
	return msecs_to_jiffies(delay);
}

void rpage_peer_note_remote(struct rpage_peer *peer,
			    const struct rpage_hello *hello)
{
	spin_lock(&peer->state_lock);
	peer->remote_node_id = le64_to_cpu(hello->node_id);
	peer->remote_proto = le16_to_cpu(hello->major) << 16 |
			     le16_to_cpu(hello->minor);
	spin_unlock(&peer->state_lock);
}

/*
 * For a transport's connect, once its channels are up: waits for the
 * peer's pool table, without which a transfer would find no pool. 0, or
 * -ETIMEDOUT (said in @cause) after connect_timeout_ms.
 */
int rpage_peer_wait_synced(struct rpage_peer *peer, char *cause, size_t len)
{
	if (rpage_wait_done(&peer->synced,
			    msecs_to_jiffies(rpage_connect_timeout_ms)))
		return 0;
	snprintf(cause, len, "no pool table from the peer within %u ms",
		 rpage_connect_timeout_ms);
	return -ETIMEDOUT;
}

/* The peer's pool table is complete: the attempt may finish. */
void rpage_peer_synced(struct rpage_peer *peer)
{
	complete(&peer->synced);
}

static void rpage_peer_free_rcu(struct rcu_head *rcu)
{
	struct rpage_peer *peer = container_of(rcu, struct rpage_peer, rcu);

	rpage_fault_counters_free(&peer->fault_counters);
	kfree(peer);
}

static void rpage_peer_release(struct kref *ref)
{
	struct rpage_peer *peer = container_of(ref, struct rpage_peer, ref);

	rpage_rpools_clear(peer);
	mutex_destroy(&peer->lock);
	mutex_destroy(&peer->inbound_lock);
	rpage_counters_free(&peer->counters);
	peer->ops->peer_free(peer);
	/* A fault of a mapping just detached may still be counting. */
	call_rcu(&peer->rcu, rpage_peer_free_rcu);
}

void rpage_peer_put(struct rpage_peer *peer)
{
	kref_put(&peer->ref, rpage_peer_release);
}

/*
 * Takes the peer's channels down (what is in flight on them is flushed
 * first); the pool table goes with them.
 */
static void rpage_peer_teardown_outbound(struct rpage_peer *peer)
{
	lockdep_assert_held(&peer->lock);
	peer->ops->close(peer);
	rpage_rpools_clear(peer);
}

/*
 * An outbound connection of @peer is gone (how: @cause): a connected
 * peer starts reconnecting, and its set is torn down right away so that
 * nothing waits on a dead queue pair; an attempt in progress notices by
 * itself. An inbound one ends the connection set it belongs to.
 */
void rpage_peer_conn_lost(struct rpage_conn *conn, const char *fmt, ...)
{
	struct rpage_peer *peer = conn->peer;
	char cause[RPAGE_CAUSE_MAX];
	bool schedule = false;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);

	if (conn->inbound) {
		rpage_peer_inbound_closed(container_of(conn, struct rpage_in_conn,
						       c), cause);
		return;
	}
	spin_lock(&peer->state_lock);
	if (conn->state == RPAGE_CONN_CONNECTED) {
		__rpage_conn_set_state(conn, RPAGE_CONN_CLOSED);
		if (peer->state == RPAGE_PEER_STATE_CONNECTED) {
			if (time_before(jiffies, peer->connected_at +
					msecs_to_jiffies(RPAGE_STABLE_MS)))
				peer->fail_streak++;
			else
				peer->fail_streak = 0;
			peer->next_attempt = jiffies + rpage_peer_backoff(peer);
			schedule = rpage_peer_transition(peer,
							 RPAGE_PEER_STATE_RECONNECTING,
							 cause);
		} else {
			/* The attempt in progress reports this cause. */
			strscpy(peer->cause, cause, sizeof(peer->cause));
		}
	}
	spin_unlock(&peer->state_lock);
	if (schedule)
		mod_delayed_work(rpage_wq, &peer->connect_work, 0);
}

static void rpage_peer_connect_work(struct work_struct *work)
{
	struct rpage_peer *peer = container_of(to_delayed_work(work),
					       struct rpage_peer, connect_work);
	char cause[RPAGE_CAUSE_MAX];
	u32 reason = RPAGE_REJECT_NONE;
	long wait;
	int ret;

	mutex_lock(&peer->lock);
	switch (rpage_peer_state(peer)) {
	case RPAGE_PEER_STATE_CONNECTING:
	case RPAGE_PEER_STATE_RECONNECTING:
		break;
	default:
		goto out;
	}

	/* Whatever is left of the last set goes first, backoff or not. */
	rpage_peer_teardown_outbound(peer);
	wait = (long)(READ_ONCE(peer->next_attempt) - jiffies);
	if (wait > 0) {
		mod_delayed_work(rpage_wq, &peer->connect_work, wait);
		goto out;
	}

	ret = peer->ops->connect(peer, &reason, cause, sizeof(cause));
	spin_lock(&peer->state_lock);
	/* A channel lost since it connected fails the attempt. */
	if (!ret && !peer->ops->connected(peer)) {
		ret = -ECONNRESET;
		strscpy(cause, peer->cause, sizeof(cause));
	}
	peer->last_error = ret < 0 ? -ret : 0;
	if (reason != RPAGE_REJECT_NONE)
		peer->last_reject = reason;
	if (!ret) {
		if (rpage_peer_transition(peer, RPAGE_PEER_STATE_CONNECTED,
					  peer->ops->connected_cause))
			atomic64_inc(&peer->counters.connects);
		spin_unlock(&peer->state_lock);
		goto out;
	}
	peer->fail_streak++;
	peer->next_attempt = jiffies + rpage_peer_backoff(peer);
	if (reason != RPAGE_REJECT_NONE)
		atomic64_inc(&peer->counters.rejects);
	/* Retrying cannot fix an incompatible protocol: the operator must. */
	if (reason == RPAGE_REJECT_VERSION &&
	    rpage_peer_transition(peer, RPAGE_PEER_STATE_FAILED, cause)) {
		spin_unlock(&peer->state_lock);
		rpage_peer_teardown_outbound(peer);
		goto out;
	}
	rpage_peer_transition(peer, RPAGE_PEER_STATE_RECONNECTING, cause);
	wait = (long)(peer->next_attempt - jiffies);
	spin_unlock(&peer->state_lock);
	rpage_peer_teardown_outbound(peer);
	mod_delayed_work(rpage_wq, &peer->connect_work, max(wait, 0L));
out:
	mutex_unlock(&peer->lock);
}

/**
 * rpage_peer_wait_connected - waits until @peer may carry a transfer
 * @peer: the peer.
 * @killable: the caller's task waits, and a fatal signal ends the wait.
 * @failed_since: jiffies of the caller's first transport failure, or 0.
 * @before_wait: if set, called once before the first sleep, with @ctx.
 * @ctx: for @before_wait.
 *
 * Returns 0 once the peer is connected (its pool table in place). Gives
 * up with -ENOTCONN when the peer has been unreachable for its loss
 * timeout (counted from when it was last connected, or from
 * @failed_since if that is earlier: a peer that comes back but fails
 * every transfer is no better), at once if that timeout is 0, or when it
 * is deleted or failed for good; -EINTR on a fatal signal.
 */
int rpage_peer_wait_connected(struct rpage_peer *peer, bool killable,
			      unsigned long failed_since,
			      void (*before_wait)(void *ctx), void *ctx)
{
	enum rpage_peer_state state;
	unsigned long since, deadline;
	unsigned int loss, seen;
	long left;

	/*
	 * Connected: no lock. A peer that goes down just after this read is
	 * found so by the transport, whose channel the attempt then takes
	 * (-EAGAIN), and this is asked again; the lock is only for the
	 * figures of a wait.
	 */
	if (READ_ONCE(peer->state) == RPAGE_PEER_STATE_CONNECTED)
		return 0;
	for (;;) {
		spin_lock(&peer->state_lock);
		state = peer->state;
		since = peer->down_since;
		seen = peer->events;
		loss = peer->loss_timeout_ms;
		spin_unlock(&peer->state_lock);

		if (state == RPAGE_PEER_STATE_CONNECTED)
			return 0;
		if (state == RPAGE_PEER_STATE_FAILED ||
		    state == RPAGE_PEER_STATE_DELETING)
			return -ENOTCONN;
		if (failed_since && time_before(failed_since, since))
			since = failed_since;
		deadline = since + msecs_to_jiffies(loss);
		if (!loss || time_after_eq(jiffies, deadline)) {
			atomic64_inc(&peer->lost);
			return -ENOTCONN;
		}
		if (before_wait) {
			before_wait(ctx);
			before_wait = NULL;
		}
		left = deadline - jiffies;
		if (killable) {
			left = wait_event_killable_timeout(peer->wait,
							   READ_ONCE(peer->events) != seen,
							   left);
			if (left < 0)
				return -EINTR;
		} else {
			/* Up to a day (the loss timeout): idle, not hung. */
			wait_event_idle_timeout(peer->wait,
						READ_ONCE(peer->events) != seen,
						left);
		}
	}
}

/*
 * Sends a control message to @peer as its reader; a failed send means
 * the channel is broken, and the peer reconnects.
 */
int rpage_peer_send_ctl(struct rpage_peer *peer, const void *msg, u32 len)
{
	return peer->ops->send_ctl(peer, msg, len);
}

/* The heartbeat interval now; a disabled heartbeat checks back later. */
static unsigned long rpage_heartbeat_interval(void)
{
	unsigned int ms = READ_ONCE(rpage_heartbeat_ms);

	return msecs_to_jiffies(ms ? ms : 1000);
}

/* Heartbeats to a peer we read from, on its transport's channel. */
static void rpage_peer_hb_work(struct work_struct *work)
{
	struct rpage_peer *peer = container_of(to_delayed_work(work),
					       struct rpage_peer, hb_work);

	if (READ_ONCE(rpage_heartbeat_ms) && peer->ops->heartbeat)
		peer->ops->heartbeat(peer);
	if (rpage_peer_state(peer) != RPAGE_PEER_STATE_DELETING)
		mod_delayed_work(rpage_wq, &peer->hb_work,
				 rpage_heartbeat_interval());
}

/*
 * Heartbeats to a peer that reads from us, on its first queue pair: a
 * reader that vanished without a word is noticed, and its connections
 * released.
 */
static void rpage_peer_hb_in_work(struct work_struct *work)
{
	struct rpage_peer *peer = container_of(to_delayed_work(work),
					       struct rpage_peer, hb_in_work);
	struct rpage_in_conn *in, *found = NULL;

	/* A transport without heartbeats has no channel to lose. */
	if (READ_ONCE(rpage_heartbeat_ms) && peer->ops->chan_heartbeat) {
		mutex_lock(&peer->inbound_lock);
		list_for_each_entry(in, &peer->inbound, entry) {
			if (in->c.index != 0 || in->claimed ||
			    READ_ONCE(in->c.state) != RPAGE_CONN_CONNECTED)
				continue;
			/*
			 * Unclaimed: no teardown holds users or waits for it,
			 * so this succeeds. Not a blocking down_read(): a send
			 * that fails takes inbound_lock under users (the
			 * connection is lost: rpage_peer_inbound_closed()), and
			 * lockdep would see the two orders as a cycle.
			 */
			if (down_read_trylock(&in->c.users))
				found = in;
			break;
		}
		mutex_unlock(&peer->inbound_lock);
		if (found) {
			peer->ops->chan_heartbeat(&found->c);
			up_read(&found->c.users);
		}
	}
	if (rpage_peer_state(peer) != RPAGE_PEER_STATE_DELETING)
		mod_delayed_work(rpage_wq, &peer->hb_in_work,
				 rpage_heartbeat_interval());
}

#define RPAGE_MAX_CHANNELS	16

/*
 * How many connections this host opens to a network peer: qps_per_peer,
 * or by default one for control messages and one per CPU.
 */
unsigned int rpage_peer_nr_channels(void)
{
	unsigned int n = rpage_qps_per_peer ? rpage_qps_per_peer :
			 num_online_cpus() + 1;

	return clamp(n, 2U, (unsigned int)RPAGE_MAX_CHANNELS);
}

/*
 * Finds the configured peer an incoming connection from @addr comes
 * from (see rpage_sockaddr_is_peer()); returns a reference or NULL.
 */
struct rpage_peer *rpage_peer_find_by_addr(const struct sockaddr *addr)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (rpage_sockaddr_is_peer((struct sockaddr *)&peer->addr, addr)) {
			kref_get(&peer->ref);
			mutex_unlock(&rpage_peers_lock);
			return peer;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return NULL;
}

/* Finds a configured peer by its id; returns a reference or NULL. */
struct rpage_peer *rpage_peer_get_by_id(u32 id)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (peer->id == id) {
			kref_get(&peer->ref);
			mutex_unlock(&rpage_peers_lock);
			return peer;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return NULL;
}

/* Inbound connections. */

/* Tears down the transport's part of a claimed inbound connection. */
static void rpage_inbound_destroy(struct rpage_in_conn *in)
{
	const struct rpage_transport_ops *ops = in->c.peer->ops;

	if (ops->chan_destroy)
		ops->chan_destroy(&in->c);
}

static void rpage_inbound_release_work(struct work_struct *work)
{
	struct rpage_in_conn *in = container_of(work, struct rpage_in_conn,
						release_work);
	struct rpage_peer *peer = in->c.peer;

	/* Nothing more is sent on it, and no pool operation uses it. */
	rpage_pools_channel_close(in);
	rpage_pools_barrier();
	rpage_inbound_destroy(in);
	kfree(in);
	rpage_peer_put(peer);
}

/*
 * Claims @in for teardown in the work queue; the caller holds the peer's
 * inbound_lock and saw it unclaimed.
 */
static void rpage_inbound_claim(struct rpage_in_conn *in)
{
	lockdep_assert_held(&in->c.peer->inbound_lock);
	in->claimed = true;
	list_del_init(&in->entry);
	rpage_conn_set_state(&in->c, RPAGE_CONN_CLOSED);
	INIT_WORK(&in->release_work, rpage_inbound_release_work);
	queue_work(rpage_wq, &in->release_work);
}

/*
 * Whether @peer may open one more queue pair to us as the @index-th of
 * its connection set; the caller holds inbound_lock. The first of a set
 * releases every older one, so it always may.
 */
static bool rpage_peer_inbound_room_locked(struct rpage_peer *peer, u16 index)
{
	struct rpage_in_conn *in;
	unsigned int n = 0;

	lockdep_assert_held(&peer->inbound_lock);
	if (index == 0)
		return true;
	list_for_each_entry(in, &peer->inbound, entry)
		n++;
	return n < READ_ONCE(rpage_max_inbound_qps);
}

static void rpage_peer_inbound_refused(struct rpage_peer *peer)
{
	atomic64_inc(&peer->refused_qps);
	pr_warn_ratelimited("peer %s: refused a queue pair past max_inbound_qps=%u\n",
			    peer->name, READ_ONCE(rpage_max_inbound_qps));
}

/*
 * Whether @peer may open a queue pair to us as the @index-th of its set,
 * asked before anything is allocated for it; counted and logged if not.
 * rpage_peer_inbound_add() asks again.
 */
bool rpage_peer_inbound_room(struct rpage_peer *peer, u16 index)
{
	bool room;

	mutex_lock(&peer->inbound_lock);
	room = rpage_peer_inbound_room_locked(peer, index);
	mutex_unlock(&peer->inbound_lock);
	if (!room)
		rpage_peer_inbound_refused(peer);
	return room;
}

/*
 * A peer opens a queue pair to us (@in, not yet accepted). Its first
 * queue pair starts a new connection set: the reader has torn down the
 * old one, even if we never heard of it (a link that was down, a reader
 * that rebooted), so every older connection is released now - nothing
 * stale keeps the control channel. Fails if the peer is going away, or
 * has max_inbound_qps open already.
 */
int rpage_peer_inbound_add(struct rpage_peer *peer, struct rpage_in_conn *in)
{
	struct rpage_in_conn *old, *tmp;
	unsigned int stale = 0;

	mutex_lock(&peer->inbound_lock);
	if (peer->inbound_closed) {
		mutex_unlock(&peer->inbound_lock);
		return -ESHUTDOWN;
	}
	if (!rpage_peer_inbound_room_locked(peer, in->c.index)) {
		mutex_unlock(&peer->inbound_lock);
		rpage_peer_inbound_refused(peer);
		return -EMFILE;
	}
	if (in->c.index == 0) {
		peer->in_session++;
		list_for_each_entry_safe(old, tmp, &peer->inbound, entry) {
			rpage_inbound_claim(old);
			stale++;
		}
	}
	in->session = peer->in_session;
	list_add_tail(&in->entry, &peer->inbound);
	mutex_unlock(&peer->inbound_lock);
	if (stale)
		pr_info("peer %s: opened a new connection set; released %u stale inbound connections\n",
			peer->name, stale);
	return 0;
}

/* An inbound queue pair is established: a reader's first gets our pools. */
void rpage_peer_inbound_established(struct rpage_in_conn *in)
{
	struct rpage_peer *peer = in->c.peer;

	mutex_lock(&peer->inbound_lock);
	if (!in->claimed)
		rpage_conn_set_state(&in->c, RPAGE_CONN_CONNECTED);
	mutex_unlock(&peer->inbound_lock);
	/* A loop peer's channel is on no device. */
	if (in->c.dev)
		atomic64_inc(&in->c.dev->counters.connects);
	if (in->c.index == 0)
		rpage_pools_channel_up();
}

/*
 * An inbound queue pair closed or failed (@why): the connection set it
 * belongs to is over, so all of it is released, unless already claimed.
 */
void rpage_peer_inbound_closed(struct rpage_in_conn *in, const char *why)
{
	struct rpage_peer *peer = in->c.peer;
	struct rpage_in_conn *other, *tmp;
	unsigned int n = 0;
	u32 session;

	mutex_lock(&peer->inbound_lock);
	if (in->claimed) {
		mutex_unlock(&peer->inbound_lock);
		return;
	}
	session = in->session;
	list_for_each_entry_safe(other, tmp, &peer->inbound, entry) {
		if (other->session == session) {
			rpage_inbound_claim(other);
			n++;
		}
	}
	mutex_unlock(&peer->inbound_lock);
	pr_info("peer %s: released %u inbound connections: %s\n", peer->name,
		n, why);
}

/* Takes down the inbound connections of @peer (on @only_dev, if set). */
static void rpage_peer_teardown_inbound(struct rpage_peer *peer,
					struct rpage_ibdev *only_dev)
{
	struct rpage_in_conn *in, *tmp;
	LIST_HEAD(doomed);

	mutex_lock(&peer->inbound_lock);
	if (!only_dev)
		peer->inbound_closed = true;
	list_for_each_entry_safe(in, tmp, &peer->inbound, entry) {
		if (only_dev && in->c.dev != only_dev)
			continue;
		/* From now on a disconnect callback leaves it to us. */
		in->claimed = true;
		rpage_conn_set_state(&in->c, RPAGE_CONN_CLOSED);
		list_move(&in->entry, &doomed);
	}
	mutex_unlock(&peer->inbound_lock);

	if (!list_empty(&doomed))
		rpage_pools_barrier();
	list_for_each_entry_safe(in, tmp, &doomed, entry) {
		list_del_init(&in->entry);
		rpage_pools_channel_close(in);
		rpage_inbound_destroy(in);
		kfree(in);
		rpage_peer_put(peer);
	}
}

/*
 * Every inbound connection that carries a pool table to a reader (the
 * reader's first queue pair, connected and not being torn down; with
 * @synced, only those that have been sent the table), in a kcalloc'ed
 * array of *@nr the caller frees. The caller holds rpage_pools_lock,
 * which keeps them from being destroyed until it drops it (see
 * rpage_pools_barrier()).
 */
struct rpage_in_conn **rpage_channels_collect(unsigned int *nr, bool synced)
{
	struct rpage_in_conn **chans = NULL;
	struct rpage_peer *peer;
	struct rpage_in_conn *in;
	unsigned int max = 0;

	lockdep_assert_held(&rpage_pools_lock);
	*nr = 0;
	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry)
		max++;
	if (max)
		chans = kcalloc(max, sizeof(*chans), GFP_KERNEL);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (!chans)
			break;
		mutex_lock(&peer->inbound_lock);
		list_for_each_entry(in, &peer->inbound, entry) {
			if (in->c.index == 0 && !in->claimed &&
			    READ_ONCE(in->c.state) == RPAGE_CONN_CONNECTED &&
			    (!synced || in->synced)) {
				chans[(*nr)++] = in;
				break;
			}
		}
		mutex_unlock(&peer->inbound_lock);
	}
	mutex_unlock(&rpage_peers_lock);
	return chans;
}

/* Configuration. */

static struct rpage_peer *rpage_peer_alloc(const struct rpage_peer_config *cfg,
					   const struct sockaddr_storage *addr,
					   const struct rpage_transport_ops *ops)
{
	struct rpage_peer *peer;

	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return NULL;
	peer->ops = ops;
	if (rpage_counters_init(&peer->counters) ||
	    rpage_fault_counters_init(&peer->fault_counters) ||
	    peer->ops->peer_init(peer)) {
		rpage_fault_counters_free(&peer->fault_counters);
		rpage_counters_free(&peer->counters);
		kfree(peer);
		return NULL;
	}
	kref_init(&peer->ref);
	strscpy(peer->name, cfg->name, sizeof(peer->name));
	peer->uaddr = cfg->addr;
	if (peer->uaddr.family && !peer->uaddr.port)
		peer->uaddr.port = RPAGE_DEFAULT_PORT;
	peer->addr = *addr;
	mutex_init(&peer->lock);
	spin_lock_init(&peer->state_lock);
	peer->state = RPAGE_PEER_STATE_CONNECTING;
	peer->state_since = ktime_get_ns();
	peer->down_since = jiffies;
	peer->last_alive = jiffies;
	peer->next_attempt = jiffies;
	strscpy(peer->cause, "added", sizeof(peer->cause));
	init_waitqueue_head(&peer->wait);
	peer->loss_timeout_ms = READ_ONCE(rpage_loss_timeout_ms);
	INIT_DELAYED_WORK(&peer->connect_work, rpage_peer_connect_work);
	init_completion(&peer->synced);
	INIT_DELAYED_WORK(&peer->hb_work, rpage_peer_hb_work);
	INIT_DELAYED_WORK(&peer->hb_in_work, rpage_peer_hb_in_work);
	mutex_init(&peer->inbound_lock);
	INIT_LIST_HEAD(&peer->inbound);
	peer->id = atomic_inc_return(&rpage_next_peer_id);
	spin_lock_init(&peer->rpools_lock);
	INIT_LIST_HEAD(&peer->rpools);
	rpage_peer_acks_init(peer);
	return peer;
}

/*
 * The transport @cfg asks for, or NULL if there is no such transport.
 * Automatic is RDMA if the route to @addr leaves through a device with an
 * RDMA device on it, TCP if through one without; an address with no
 * route yet keeps RDMA, as before there was a choice.
 */
static const struct rpage_transport_ops *
rpage_peer_transport(const struct rpage_peer_config *cfg,
		     const struct sockaddr_storage *addr)
{
	switch (cfg->transport) {
	case RPAGE_TRANSPORT_AUTO:
		if (rpage_route_has_rdma((const struct sockaddr *)addr) == 0)
			return &rpage_tcp_transport;
		return &rpage_rdma_transport;
	case RPAGE_TRANSPORT_RDMA:
		return &rpage_rdma_transport;
	case RPAGE_TRANSPORT_TCP:
		return &rpage_tcp_transport;
	case RPAGE_TRANSPORT_LOOP:
		return &rpage_loop_transport;
	default:
		return NULL;
	}
}

/*
 * Whether @other stands in the way of @peer being added: a peer of the
 * same name, of the same host address (incoming connections are matched
 * by it), or a second loop peer.
 */
static bool rpage_peer_clashes(const struct rpage_peer *peer,
			       const struct rpage_peer *other)
{
	if (!strcmp(other->name, peer->name))
		return true;
	if (peer->ops == &rpage_loop_transport)
		return other->ops == &rpage_loop_transport;
	return rpage_sockaddr_same_host((struct sockaddr *)&other->addr,
					(struct sockaddr *)&peer->addr);
}

long rpage_ioctl_peer_add(struct rpage_file *rfile, void __user *argp)
{
	const struct rpage_transport_ops *ops;
	struct rpage_peer_config cfg;
	struct sockaddr_storage addr = {};
	struct rpage_peer *peer, *other;
	u32 up, nr;
	int ret;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)))
		return -EINVAL;
	if (!rpage_name_valid(cfg.name))
		return -EINVAL;
	if (cfg.transport == RPAGE_TRANSPORT_LOOP) {
		/* This host is reached without an address. */
		if (memchr_inv(&cfg.addr, 0, sizeof(cfg.addr)))
			return -EINVAL;
	} else {
		ret = rpage_addr_to_sockaddr(&cfg.addr, &addr);
		if (ret)
			return ret;
	}
	ops = rpage_peer_transport(&cfg, &addr);
	if (!ops)
		return -EINVAL;

	peer = rpage_peer_alloc(&cfg, &addr, ops);
	if (!peer)
		return -ENOMEM;
	/* For the log: counted under the state lock, as peer show does. */
	spin_lock(&peer->state_lock);
	nr = ops->channels ? ops->channels(peer, &up) : 0;
	spin_unlock(&peer->state_lock);

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(other, &rpage_peers, entry) {
		if (rpage_peer_clashes(peer, other)) {
			mutex_unlock(&rpage_peers_lock);
			rpage_peer_put(peer);
			return -EEXIST;
		}
	}
	list_add_tail(&peer->entry, &rpage_peers);
	/* Before its first attempt can change its state. */
	rpage_event_peer_state(peer, 0, RPAGE_PEER_CONNECTING, "added");
	mod_delayed_work(rpage_wq, &peer->connect_work, 0);
	mod_delayed_work(rpage_wq, &peer->hb_work, rpage_heartbeat_interval());
	mod_delayed_work(rpage_wq, &peer->hb_in_work, rpage_heartbeat_interval());
	mutex_unlock(&rpage_peers_lock);
	if (ops == &rpage_loop_transport)
		pr_info("peer %s added (this host, over the loop; loss timeout %u ms)\n",
			peer->name, peer->loss_timeout_ms);
	else
		pr_info("peer %s added (%pISpc over %s, %u connections, loss timeout %u ms)\n",
			peer->name, &peer->addr, ops->name, nr,
			peer->loss_timeout_ms);
	return 0;
}

/* Stops and disconnects a peer already unlinked from rpage_peers. */
static void rpage_peer_shutdown(struct rpage_peer *peer)
{
	/* Wakes every transfer waiting for the peer: they fail now. */
	rpage_peer_set_state(peer, RPAGE_PEER_STATE_DELETING, "deleted");
	/*
	 * Pairs with the barrier in rpage_map_insert(): a mapping made now
	 * is either seen here or sees the state, and lets the peer go.
	 */
	smp_mb();
	rpage_maps_peer_deleted(peer);
	cancel_delayed_work_sync(&peer->connect_work);
	cancel_delayed_work_sync(&peer->hb_work);
	cancel_delayed_work_sync(&peer->hb_in_work);
	mutex_lock(&peer->lock);
	rpage_peer_teardown_outbound(peer);
	mutex_unlock(&peer->lock);
	rpage_peer_teardown_inbound(peer, NULL);
	/* Its queue pairs are gone: so go the regions registered for it. */
	rpage_pools_peer_removed(peer->id);
	/* A disconnect seen before the teardown may have queued it again. */
	cancel_delayed_work_sync(&peer->connect_work);
	pr_info("peer %s deleted\n", peer->name);
	rpage_peer_put(peer);
}

/* Unlinks the peer called @name; returns it (the list's reference) or NULL. */
static struct rpage_peer *rpage_peer_unlink(const char *name)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (!strcmp(peer->name, name)) {
			list_del(&peer->entry);
			mutex_unlock(&rpage_peers_lock);
			return peer;
		}
	}
	mutex_unlock(&rpage_peers_lock);
	return NULL;
}

long rpage_ioctl_peer_del(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_peer_config cfg;
	struct rpage_peer *peer;

	if (copy_from_user(&cfg, argp, sizeof(cfg)))
		return -EFAULT;
	if (cfg.flags || cfg.transport ||
	    memchr_inv(cfg.reserved, 0, sizeof(cfg.reserved)) ||
	    memchr_inv(&cfg.addr, 0, sizeof(cfg.addr)))
		return -EINVAL;
	if (!rpage_name_valid(cfg.name))
		return -EINVAL;
	peer = rpage_peer_unlink(cfg.name);
	if (!peer)
		return -ENOENT;
	rpage_peer_shutdown(peer);
	return 0;
}

long rpage_ioctl_peer_set(struct rpage_file *rfile, void __user *argp)
{
	struct rpage_peer_set arg;
	struct rpage_peer *peer;
	long ret = -ENOENT;

	if (copy_from_user(&arg, argp, sizeof(arg)))
		return -EFAULT;
	if (!arg.mask || arg.mask & ~RPAGE_PEER_SET_ALL ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)) ||
	    !rpage_name_valid(arg.name))
		return -EINVAL;
	if (arg.mask & RPAGE_PEER_SET_LOSS_TIMEOUT &&
	    arg.loss_timeout_ms > RPAGE_LOSS_TIMEOUT_MAX_MS)
		return -EINVAL;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (strcmp(peer->name, arg.name))
			continue;
		spin_lock(&peer->state_lock);
		if (arg.mask & RPAGE_PEER_SET_LOSS_TIMEOUT)
			peer->loss_timeout_ms = arg.loss_timeout_ms;
		/* Waiting transfers look at their deadline again. */
		peer->events++;
		spin_unlock(&peer->state_lock);
		wake_up_all(&peer->wait);
		pr_info("peer %s: loss timeout %u ms\n", peer->name,
			arg.loss_timeout_ms);
		ret = 0;
		break;
	}
	mutex_unlock(&rpage_peers_lock);
	return ret;
}

/* The state userspace is told: a peer being deleted is no more connected. */
static u32 rpage_peer_uapi_state(enum rpage_peer_state state)
{
	return state == RPAGE_PEER_STATE_DELETING ? RPAGE_PEER_RECONNECTING :
						    state;
}

static void rpage_peer_fill_info(struct rpage_peer *peer, void *entry)
{
	struct rpage_peer_info *info = entry;
	struct rpage_in_conn *in;

	strscpy(info->name, peer->name, sizeof(info->name));
	info->addr = peer->uaddr;
	spin_lock(&peer->state_lock);
	info->state = rpage_peer_uapi_state(peer->state);
	info->last_reject = peer->last_reject;
	info->last_error = peer->last_error;
	info->remote_node_id = peer->remote_node_id;
	info->remote_proto = peer->remote_proto;
	if (peer->ops->channels)
		info->qps = peer->ops->channels(peer, &info->qps_connected);
	spin_unlock(&peer->state_lock);
	mutex_lock(&peer->inbound_lock);
	list_for_each_entry(in, &peer->inbound, entry)
		if (READ_ONCE(in->c.state) == RPAGE_CONN_CONNECTED)
			info->qps_inbound++;
	mutex_unlock(&peer->inbound_lock);
	info->connects = atomic64_read(&peer->counters.connects);
	info->rejects = atomic64_read(&peer->counters.rejects);
	info->id = peer->id;
	info->transport = peer->ops->id;
}

static void rpage_peer_fill_status(struct rpage_peer *peer, void *entry)
{
	struct rpage_peer_status *st = entry;

	strscpy(st->name, peer->name, sizeof(st->name));
	st->peer_id = peer->id;
	spin_lock(&peer->state_lock);
	st->state = rpage_peer_uapi_state(peer->state);
	st->loss_timeout_ms = peer->loss_timeout_ms;
	st->state_ms = div_u64(ktime_get_ns() - peer->state_since,
			       NSEC_PER_MSEC);
	strscpy(st->cause, peer->cause, sizeof(st->cause));
	spin_unlock(&peer->state_lock);
	st->reconnects = atomic64_read(&peer->reconnects);
	st->retried = atomic64_read(&peer->retried);
	st->lost = atomic64_read(&peer->lost);
	st->refused_msgs = atomic64_read(&peer->refused_msgs);
	st->refused_pools = atomic64_read(&peer->refused_pools);
	st->refused_qps = atomic64_read(&peer->refused_qps);
	st->refused_access = atomic64_read(&peer->refused_access);
}

/**
 * struct rpage_peers_lister - a list answer built from every peer
 * @entry_size: the size of one UAPI entry.
 * @fill_entry: one entry per peer: writes @peer's at @entry; or
 * @fill_entries: any number per peer: writes @peer's into @entries from
 *	index @count on (those below @filled) and returns the new count.
 */
struct rpage_peers_lister {
	size_t entry_size;
	void (*fill_entry)(struct rpage_peer *peer, void *entry);
	u32 (*fill_entries)(struct rpage_peer *peer, void *entries, u32 filled,
			    u32 count);
};

static u32 rpage_peers_list_fill(void *entries, u32 filled, void *ctx)
{
	const struct rpage_peers_lister *lister = ctx;
	struct rpage_peer *peer;
	u32 count = 0;

	list_for_each_entry(peer, &rpage_peers, entry) {
		if (lister->fill_entries) {
			count = lister->fill_entries(peer, entries, filled, count);
			continue;
		}
		if (count < filled)
			lister->fill_entry(peer, entries +
					   count * lister->entry_size);
		count++;
	}
	return count;
}

/* Answers a *_LIST command with one entry per peer, filled by @fill_entry. */
long rpage_peers_list_answer(void __user *argp, size_t entry_size,
			     void (*fill_entry)(struct rpage_peer *peer,
						void *entry))
{
	struct rpage_peers_lister lister = {
		.entry_size = entry_size,
		.fill_entry = fill_entry,
	};

	return rpage_list_answer(argp, entry_size, &rpage_peers_lock,
				 rpage_peers_list_fill, &lister);
}

/* Answers a *_LIST command with the entries @fill_entries gives per peer. */
long rpage_peers_list_walk(void __user *argp, size_t entry_size,
			   u32 (*fill_entries)(struct rpage_peer *peer,
					       void *entries, u32 filled,
					       u32 count))
{
	struct rpage_peers_lister lister = {
		.entry_size = entry_size,
		.fill_entries = fill_entries,
	};

	return rpage_list_answer(argp, entry_size, &rpage_peers_lock,
				 rpage_peers_list_fill, &lister);
}

long rpage_ioctl_peer_list(struct rpage_file *rfile, void __user *argp)
{
	return rpage_peers_list_answer(argp, sizeof(struct rpage_peer_info),
				       rpage_peer_fill_info);
}

long rpage_ioctl_peer_status(struct rpage_file *rfile, void __user *argp)
{
	return rpage_peers_list_answer(argp, sizeof(struct rpage_peer_status),
				       rpage_peer_fill_status);
}

/* Every configured peer, referenced, in a kcalloc'ed array of *@nr. */
static struct rpage_peer **rpage_peers_grab(unsigned int *nr)
{
	struct rpage_peer **peers;
	struct rpage_peer *peer;
	unsigned int n = 0;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry)
		n++;
	peers = kcalloc(n, sizeof(*peers), GFP_KERNEL | __GFP_NOFAIL);
	n = 0;
	list_for_each_entry(peer, &rpage_peers, entry) {
		kref_get(&peer->ref);
		peers[n++] = peer;
	}
	mutex_unlock(&rpage_peers_lock);
	*nr = n;
	return peers;
}

/*
 * @dev is going away: take every queue pair on it down now, before the
 * device is, and let the outbound sets reconnect on what remains.
 */
void rpage_peers_device_removed(struct rpage_ibdev *dev)
{
	char cause[RPAGE_CAUSE_MAX];
	struct rpage_peer **peers;
	struct rpage_peer *peer;
	unsigned int n, i, c;
	bool hit;

	snprintf(cause, sizeof(cause), "RDMA device %s removed",
		 dev_name(&dev->ibdev->dev));
	peers = rpage_peers_grab(&n);
	for (i = 0; i < n; i++) {
		peer = peers[i];
		mutex_lock(&peer->lock);
		hit = false;
		for (c = 0; c < peer->nr_conns; c++)
			hit |= peer->conns[c].c.dev == dev;
		if (hit) {
			rpage_peer_teardown_outbound(peer);
			spin_lock(&peer->state_lock);
			peer->next_attempt = jiffies + rpage_peer_backoff(peer);
			hit = rpage_peer_transition(peer, RPAGE_PEER_STATE_RECONNECTING,
						    cause);
			spin_unlock(&peer->state_lock);
			if (hit)
				mod_delayed_work(rpage_wq, &peer->connect_work,
						 msecs_to_jiffies(rpage_reconnect_delay_ms));
		}
		mutex_unlock(&peer->lock);
		rpage_peer_teardown_inbound(peer, dev);
		rpage_peer_put(peer);
	}
	kfree(peers);
}

/* A device arrived: peers waiting to reconnect may try at once. */
void rpage_peers_device_added(void)
{
	struct rpage_peer *peer;

	mutex_lock(&rpage_peers_lock);
	list_for_each_entry(peer, &rpage_peers, entry) {
		if (rpage_peer_state(peer) != RPAGE_PEER_STATE_RECONNECTING)
			continue;
		WRITE_ONCE(peer->next_attempt, jiffies);
		mod_delayed_work(rpage_wq, &peer->connect_work, 0);
	}
	mutex_unlock(&rpage_peers_lock);
}

void rpage_peers_exit(void)
{
	struct rpage_peer *peer;

	for (;;) {
		mutex_lock(&rpage_peers_lock);
		peer = list_first_entry_or_null(&rpage_peers, struct rpage_peer,
						entry);
		if (peer)
			list_del(&peer->entry);
		mutex_unlock(&rpage_peers_lock);
		if (!peer)
			break;
		rpage_peer_shutdown(peer);
	}
	/* Inbound connections released by their own disconnects. */
	flush_workqueue(rpage_wq);
}
