/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * librpage: thin wrappers around the ioctls of /dev/rpage.
 *
 * Every call that can fail returns 0 (or a non-negative value where
 * documented) on success and a negative errno value on failure; errno is
 * left as the failing system call set it. The library keeps no state of
 * its own: the file descriptor is the caller's. Threads may share one:
 * each call is one system call (two for rpage_map() and rpage_unmap(),
 * and the fetches of rpage_list_all()), and the module serializes what
 * must be.
 */
#ifndef LIBRPAGE_H
#define LIBRPAGE_H

#include <stddef.h>
#include <linux/rpage.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The path rpage_open() opens. */
#define RPAGE_DEVICE_PATH "/dev/" RPAGE_DEVICE_NAME

/*
 * A buffer of this size holds any address rpage_addr_format() writes:
 * an IPv6 address, '%', an interface name and the NUL.
 */
#define RPAGE_ADDR_STRLEN 64

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *rpage_lib_version(void);

/* Open /dev/rpage with O_RDWR | O_CLOEXEC | @flags; returns an fd. */
int rpage_open(int flags);

/* RPAGE_IOC_API: the handshake every fd must complete first. */
int rpage_api(int fd, struct rpage_api *api);

/*
 * RPAGE_IOC_DEVICE_LIST: the RDMA devices the module is attached to;
 * @list->entries points to struct rpage_device_info[].
 */
int rpage_device_list(int fd, struct rpage_list *list);

/* RPAGE_IOC_ENDPOINT_ADD, _DEL: listen, or stop listening, on an address. */
int rpage_endpoint_add(int fd, const struct rpage_endpoint *ep);
int rpage_endpoint_del(int fd, const struct rpage_endpoint *ep);

/* RPAGE_IOC_ENDPOINT_LIST: entries are struct rpage_endpoint_info. */
int rpage_endpoint_list(int fd, struct rpage_list *list);

/* RPAGE_IOC_PEER_ADD, _DEL: configure or remove a peer (by name). */
int rpage_peer_add(int fd, const struct rpage_peer_config *peer);
int rpage_peer_del(int fd, const struct rpage_peer_config *peer);

/* RPAGE_IOC_PEER_LIST: entries are struct rpage_peer_info. */
int rpage_peer_list(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_POOL_CREATE: a pool of zeroed memory the module allocates;
 * it belongs to the host and stays until destroyed.
 */
int rpage_pool_create(int fd, const struct rpage_pool_create *pool);

/*
 * RPAGE_IOC_POOL_EXPORT: a pool of the caller's own memory, pinned while
 * exported; it belongs to @fd and goes when the file is closed.
 */
int rpage_pool_export(int fd, const struct rpage_pool_export *pool);

/* RPAGE_IOC_POOL_DESTROY: remove one of this host's pools (by id). */
int rpage_pool_destroy(int fd, const struct rpage_pool_destroy *pool);

/* RPAGE_IOC_POOL_LIST: entries are struct rpage_pool_info. */
int rpage_pool_list(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_REMOTE_POOL_LIST: the pools connected peers export to this
 * host; entries are struct rpage_remote_pool_info.
 */
int rpage_remote_pool_list(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_READ, _WRITE: copy pages of peers' pools into, or from,
 * page-aligned buffers of the caller, by RDMA; @io->iov points to
 * struct rpage_iovec[]. Returns when every range is done, or fails as a
 * whole.
 */
int rpage_read(int fd, const struct rpage_io *io);
int rpage_write(int fd, const struct rpage_io *io);

/*
 * RPAGE_IOC_PEER_STATS, RPAGE_IOC_DEVICE_STATS: the counters and latency
 * histogram of every peer, or of every attached RDMA device; entries are
 * struct rpage_peer_stats, or struct rpage_device_stats.
 */
int rpage_peer_stats(int fd, struct rpage_list *list);
int rpage_device_stats(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_MAP: a remote mapping of a range of a peer's pool, owned by
 * @fd; fills @map->map_id and @map->mmap_offset, the offset to mmap(2)
 * @fd at with MAP_SHARED. Its pages are read from the peer on first
 * touch.
 */
int rpage_map_create(int fd, struct rpage_map *map);

/*
 * RPAGE_IOC_UNMAP: destroy a mapping (by id); areas still mapped keep
 * working until munmap(2). Local changes are not written back.
 */
int rpage_map_destroy(int fd, const struct rpage_unmap *unmap);

/*
 * rpage_map_create(), then mmap(2) of the whole mapping, read and
 * write, MAP_SHARED; the address goes to *@addr. If mmap fails, the
 * mapping is destroyed again and mmap's -errno returned.
 */
int rpage_map(int fd, struct rpage_map *map, void **addr);

/*
 * munmap(2) of the @map->length bytes at @addr, then rpage_map_destroy()
 * of @map->map_id: the pair that undoes rpage_map(). Both are done; the
 * first failure is returned.
 */
int rpage_unmap(int fd, const struct rpage_map *map, void *addr);

/*
 * RPAGE_IOC_PREFETCH: read a range of a mapping ahead of its use, in
 * the background or, with RPAGE_PREFETCH_WAIT, before returning.
 */
int rpage_map_prefetch(int fd, struct rpage_prefetch *pf);

/*
 * RPAGE_IOC_EVICT: write a range's dirty pages back to the pool and
 * drop its pages, so that the next touch reads them again.
 */
int rpage_map_evict(int fd, struct rpage_evict *ev);

/*
 * RPAGE_IOC_MAP_STATS, RPAGE_IOC_PEER_FAULT_STATS: the fault-path
 * counters and latency histogram of one mapping, or of every peer (all
 * mappings of its pools); the list's entries are struct
 * rpage_peer_fault_stats.
 */
int rpage_map_stats(int fd, struct rpage_map_stats *st);
int rpage_peer_fault_stats(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_MAP_HUGE_STATS: the 4 KiB reads of a 2 MiB mapping
 * (RPAGE_MAP_HUGE) by cause, RPAGE_HUGE_FB_*.
 */
int rpage_map_huge_stats(int fd, struct rpage_map_huge_stats *st);

/*
 * RPAGE_IOC_PEER_SET: change settings of a peer (by name), those whose
 * bits @set->mask has: its loss timeout.
 */
int rpage_peer_set(int fd, const struct rpage_peer_set *set);

/*
 * RPAGE_IOC_PEER_STATUS: how the connection to every peer fares (time in
 * state, why it last changed, reconnects, transfers retried and lost);
 * entries are struct rpage_peer_status.
 */
int rpage_peer_status(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_MAP_ADD, RPAGE_IOC_MAP_DEL, RPAGE_IOC_MAP_LIST: named
 * mappings, which belong to the host and appear as device nodes
 * /dev/rpage-map/NAME; @add->map_id is filled in; the list's entries are
 * struct rpage_map_info.
 */
int rpage_map_add(int fd, struct rpage_map_add *add);
int rpage_map_del(int fd, const struct rpage_map_del *del);
int rpage_map_list(int fd, struct rpage_list *list);

/*
 * RPAGE_IOC_POOL_FILE: the pages of a shared-memory file (tmpfs, memfd),
 * such as a VMM's guest RAM, as a pool that belongs to the host.
 */
int rpage_pool_file(int fd, const struct rpage_pool_file *pf);

/*
 * RPAGE_IOC_POOL_SET_PEERS, RPAGE_IOC_POOL_GET_PEERS: the peers a pool
 * is announced to and served to (RPAGE_FEATURE_POOL_PEERS); GET fills
 * @pp->peers up to @pp->nr_peers and sets @pp->nr_peers to how many.
 */
int rpage_pool_set_peers(int fd, const struct rpage_pool_peers *pp);
int rpage_pool_get_peers(int fd, struct rpage_pool_peers *pp);

/*
 * The latency below which @pct percent (0 < @pct <= 100) of the counts
 * of the log2 histogram @hist (@buckets buckets, 1 to 64, laid out as
 * struct rpage_stats.latency) fall, as the upper bound of the bucket
 * where that percentile lies: 2^(i+1) ns for bucket i, 2^i ns for the
 * last, open-ended bucket. No system call. -ENODATA for an empty
 * histogram, -EINVAL for a bad argument, -EOVERFLOW if the counts add
 * up to more than 2^64-1.
 */
int rpage_hist_percentile(const __u64 *hist, unsigned int buckets, double pct,
			  __u64 *ns);

/*
 * Fill @out from an IPv4 or IPv6 literal, such as "192.0.2.1", "2001:db8::1"
 * or "fe80::1%eth0" (a scope, by interface name or index, only on a
 * link-local address), and @port. No system call but the interface name
 * lookup. -EINVAL on bad text, -ENODEV for an unknown interface.
 */
int rpage_addr_parse(const char *text, __u16 port, struct rpage_addr *out);

/*
 * Write @a's address, without its port, to @buf: "192.0.2.1",
 * "2001:db8::1", "fe80::1%eth0" (the scope's interface name, or its index
 * when it has no name). -EINVAL for an unknown family, -ENOSPC when
 * @len is too small (RPAGE_ADDR_STRLEN always suffices).
 */
int rpage_addr_format(const struct rpage_addr *a, char *buf, size_t len);

/*
 * (1.5) A whole list: calls @list_fn (rpage_peer_list, rpage_map_list,
 * ...: any RPAGE_IOC_*_LIST call) with room for every entry, growing it
 * while the list grows between calls, into a new array of @entry_size
 * bytes an entry (the struct the list's entries are) at *@entries,
 * which the caller frees (NULL when the list is empty). Returns the
 * number of entries, or a negative errno (*@entries NULL then).
 */
int rpage_list_all(int fd, int (*list_fn)(int, struct rpage_list *),
		   size_t entry_size, void **entries);

/*
 * (1.5) The peer called @name, into @info: 0, -ENOENT if there is none,
 * or another negative errno.
 */
int rpage_peer_find(int fd, const char *name, struct rpage_peer_info *info);

/*
 * (1.5) The names rpagectl prints for the values of the UAPI's enums:
 * a peer's state (RPAGE_PEER_*: "connecting", "connected",
 * "reconnecting", "failed"), a transport (RPAGE_TRANSPORT_*: "auto",
 * "rdma", "loop", "tcp"), why a peer refused a connection
 * (RPAGE_REJECT_*: "none", "unknown-peer", "version", "bad-hello",
 * "no-resources", "unspecified", "transport"), an endpoint's state
 * (RPAGE_ENDPOINT_*: "listening", "down") and a pool's kind
 * (RPAGE_POOL_KERNEL, _USER, _FILE: "kernel", "user", "file"). NULL for
 * a value this library does not know (a newer module's).
 */
const char *rpage_peer_state_name(__u32 state);
const char *rpage_transport_name(__u32 transport);
const char *rpage_reject_name(__u32 reason);
const char *rpage_endpoint_state_name(__u32 state);
const char *rpage_pool_kind_name(__u32 kind);

/*
 * (1.6) Why a 2 MiB mapping read 4 KiB (RPAGE_HUGE_FB_*, the index of
 * struct rpage_map_huge_stats.fallbacks): "tail", "disabled",
 * "unaligned", "pte_table", "small_cached", "nomem", as the tracepoint
 * rpage:rpage_huge_fallback prints them; NULL for one this library does
 * not know.
 */
const char *rpage_huge_fallback_name(__u32 cause);

/*
 * (1.7) Events (RPAGE_FEATURE_EVENTS; see "Events" in <linux/rpage.h>):
 * one event as rpage_events_read() gives it. @type is RPAGE_EVENT_*;
 * @present has bit (1ULL << RPAGE_EA_x) set for each attribute the
 * module sent, and the fields of the others are zero. States are
 * RPAGE_PEER_* (rpage_peer_state_name(); @old_state 0 for a peer just
 * added, @state RPAGE_PEER_DELETED for one deleted).
 */
struct rpage_event {
	__u32 type;
	__u32 peer_id;
	__u64 present;
	__u64 time_ns;
	__u32 old_state;
	__u32 state;
	char  peer[RPAGE_NAME_MAX];
	char  map[RPAGE_NAME_MAX];
	char  cause[RPAGE_CAUSE_MAX];
	__u64 pool_id;
	__u64 pool_length;
	__u64 pool_generation;
	__u64 map_id;
	__u64 map_offset;
	__u64 map_length;
	__u64 pages;
	__u64 failed;
	__u64 local;
	__u64 map_pages;
	__u64 reserved[8];
};

/*
 * (1.7) A socket that receives rpage's events (a generic netlink socket
 * in the family's event group, close-on-exec; @flags may add
 * SOCK_NONBLOCK): its fd, or -ENOENT if rpage.ko is not loaded or has no
 * events, -EPERM without CAP_NET_ADMIN, or another negative errno. The
 * fd may be poll(2)ed; it hears nothing more once the module is unloaded
 * (open another after it is loaded again).
 */
int rpage_events_open(int flags);

/*
 * (1.7) The next event of @fd into @ev, waiting for one unless the socket
 * is non-blocking: 0, -EAGAIN (none yet), -ENOBUFS (the socket's
 * buffer overflowed and events were lost: read the state again with the
 * list calls, then go on reading), -EPROTO (a message that is no event),
 * or another negative errno.
 */
int rpage_events_read(int fd, struct rpage_event *ev);

/* (1.7) The name of an RPAGE_EVENT_*: "peer_state", "pool_add",
 * "pool_del", "map_add", "map_del", "prefetch_end"; NULL if unknown. */
const char *rpage_event_name(__u32 type);

#ifdef __cplusplus
}
#endif

#endif /* LIBRPAGE_H */
