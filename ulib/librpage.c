// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librpage: one function per ioctl of /dev/rpage, the address helpers
 * that fill and print struct rpage_addr, and the pair that creates and
 * mmaps a remote mapping, and unmaps and destroys it, in one call.
 */
/* A mapping's mmap offset may not fit a 32-bit off_t. */
#define _FILE_OFFSET_BITS 64

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "librpage.h"

#define RPAGE_EXPORT __attribute__((visibility("default")))

static int rpage_ioctl(int fd, unsigned long cmd, void *arg)
{
	if (ioctl(fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

/* The helpers without a system call of their own set errno too. */
static int rpage_error(int err)
{
	errno = err;
	return -err;
}

RPAGE_EXPORT const char *rpage_lib_version(void)
{
	return RPAGE_LIB_VERSION;
}

RPAGE_EXPORT int rpage_open(int flags)
{
	int fd = open(RPAGE_DEVICE_PATH, O_RDWR | O_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

RPAGE_EXPORT int rpage_api(int fd, struct rpage_api *api)
{
	return rpage_ioctl(fd, RPAGE_IOC_API, api);
}

RPAGE_EXPORT int rpage_device_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_DEVICE_LIST, list);
}

RPAGE_EXPORT int rpage_endpoint_add(int fd, const struct rpage_endpoint *ep)
{
	return rpage_ioctl(fd, RPAGE_IOC_ENDPOINT_ADD, (void *)ep);
}

RPAGE_EXPORT int rpage_endpoint_del(int fd, const struct rpage_endpoint *ep)
{
	return rpage_ioctl(fd, RPAGE_IOC_ENDPOINT_DEL, (void *)ep);
}

RPAGE_EXPORT int rpage_endpoint_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_ENDPOINT_LIST, list);
}

RPAGE_EXPORT int rpage_peer_add(int fd, const struct rpage_peer_config *peer)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_ADD, (void *)peer);
}

RPAGE_EXPORT int rpage_peer_del(int fd, const struct rpage_peer_config *peer)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_DEL, (void *)peer);
}

RPAGE_EXPORT int rpage_peer_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_LIST, list);
}

RPAGE_EXPORT int rpage_pool_create(int fd, const struct rpage_pool_create *pool)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_CREATE, (void *)pool);
}

RPAGE_EXPORT int rpage_pool_export(int fd, const struct rpage_pool_export *pool)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_EXPORT, (void *)pool);
}

RPAGE_EXPORT int rpage_pool_destroy(int fd, const struct rpage_pool_destroy *pool)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_DESTROY, (void *)pool);
}

RPAGE_EXPORT int rpage_pool_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_LIST, list);
}

RPAGE_EXPORT int rpage_remote_pool_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_REMOTE_POOL_LIST, list);
}

RPAGE_EXPORT int rpage_read(int fd, const struct rpage_io *io)
{
	return rpage_ioctl(fd, RPAGE_IOC_READ, (void *)io);
}

RPAGE_EXPORT int rpage_write(int fd, const struct rpage_io *io)
{
	return rpage_ioctl(fd, RPAGE_IOC_WRITE, (void *)io);
}

RPAGE_EXPORT int rpage_peer_stats(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_STATS, list);
}

RPAGE_EXPORT int rpage_device_stats(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_DEVICE_STATS, list);
}

RPAGE_EXPORT int rpage_map_create(int fd, struct rpage_map *map)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP, map);
}

RPAGE_EXPORT int rpage_map_destroy(int fd, const struct rpage_unmap *unmap)
{
	return rpage_ioctl(fd, RPAGE_IOC_UNMAP, (void *)unmap);
}

RPAGE_EXPORT int rpage_map_prefetch(int fd, struct rpage_prefetch *pf)
{
	return rpage_ioctl(fd, RPAGE_IOC_PREFETCH, pf);
}

RPAGE_EXPORT int rpage_map_evict(int fd, struct rpage_evict *ev)
{
	return rpage_ioctl(fd, RPAGE_IOC_EVICT, ev);
}

RPAGE_EXPORT int rpage_map_stats(int fd, struct rpage_map_stats *st)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP_STATS, st);
}

RPAGE_EXPORT int rpage_map_huge_stats(int fd, struct rpage_map_huge_stats *st)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP_HUGE_STATS, st);
}

RPAGE_EXPORT int rpage_peer_fault_stats(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_FAULT_STATS, list);
}

RPAGE_EXPORT int rpage_peer_set(int fd, const struct rpage_peer_set *set)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_SET, (void *)set);
}

RPAGE_EXPORT int rpage_peer_status(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_PEER_STATUS, list);
}

RPAGE_EXPORT int rpage_map_add(int fd, struct rpage_map_add *add)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP_ADD, add);
}

RPAGE_EXPORT int rpage_map_del(int fd, const struct rpage_map_del *del)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP_DEL, (void *)del);
}

RPAGE_EXPORT int rpage_map_list(int fd, struct rpage_list *list)
{
	return rpage_ioctl(fd, RPAGE_IOC_MAP_LIST, list);
}

RPAGE_EXPORT int rpage_pool_file(int fd, const struct rpage_pool_file *pf)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_FILE, (void *)pf);
}

RPAGE_EXPORT int rpage_pool_set_peers(int fd, const struct rpage_pool_peers *pp)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_SET_PEERS, (void *)pp);
}

RPAGE_EXPORT int rpage_pool_get_peers(int fd, struct rpage_pool_peers *pp)
{
	return rpage_ioctl(fd, RPAGE_IOC_POOL_GET_PEERS, pp);
}

/* RPAGE_IOC_UNMAP of @map_id: 0 or -errno. */
static int map_id_destroy(int fd, __u64 map_id)
{
	struct rpage_unmap unmap = { .map_id = map_id };

	return rpage_ioctl(fd, RPAGE_IOC_UNMAP, &unmap);
}

RPAGE_EXPORT int rpage_map(int fd, struct rpage_map *map, void **addr)
{
	void *area = MAP_FAILED;
	int ret, err = ENOMEM;

	if (!map || !addr)
		return rpage_error(EINVAL);
	ret = rpage_ioctl(fd, RPAGE_IOC_MAP, map);
	if (ret < 0)
		return ret;
	/* A 32-bit process cannot map more than size_t bytes: ENOMEM. */
	if ((size_t)map->length == map->length) {
		area = mmap(NULL, (size_t)map->length, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, (off_t)map->mmap_offset);
		if (area == MAP_FAILED)
			err = errno;
	}
	if (area == MAP_FAILED) {
		/* Leave no mapping behind that the caller never got. */
		map_id_destroy(fd, map->map_id);
		return rpage_error(err);
	}
	*addr = area;
	return 0;
}

RPAGE_EXPORT int rpage_unmap(int fd, const struct rpage_map *map, void *addr)
{
	int ret = 0, err;

	if (!map)
		return rpage_error(EINVAL);
	if (munmap(addr, (size_t)map->length) < 0)
		ret = -errno;
	err = map_id_destroy(fd, map->map_id);
	/* The first failure wins, in errno too. */
	if (ret < 0)
		return rpage_error(-ret);
	return err;
}

/* Bucket bounds must fit in a __u64: 2^63 is the largest. */
#define RPAGE_HIST_MAX_BUCKETS 64

RPAGE_EXPORT int rpage_hist_percentile(const __u64 *hist, unsigned int buckets,
				       double pct, __u64 *ns)
{
	long double need;
	__u64 total = 0, seen = 0;
	unsigned int i;

	/* Written this way, a NaN fails too. */
	if (!hist || !ns || !buckets || buckets > RPAGE_HIST_MAX_BUCKETS ||
	    !(pct > 0 && pct <= 100))
		return rpage_error(EINVAL);
	for (i = 0; i < buckets; i++) {
		if (hist[i] > UINT64_MAX - total)
			return rpage_error(EOVERFLOW);
		total += hist[i];
	}
	if (!total)
		return rpage_error(ENODATA);

	/*
	 * The percentile lies in the first bucket where the running count
	 * reaches pct% of the total (the nearest-rank method). A relative
	 * slack of 1e-12 keeps a pct such as 99.9, which a double holds
	 * only approximately, from moving the answer one count up.
	 */
	need = (long double)pct / 100.0L * (long double)total;
	need -= need * 1e-12L;
	for (i = 0; i < buckets - 1; i++) {
		seen += hist[i];
		if ((long double)seen >= need)
			break;
	}
	*ns = i < buckets - 1 ? 1ULL << (i + 1) : 1ULL << i;
	return 0;
}

/* The scope after '%': an interface index or name. */
static int parse_scope(const char *scope, __u32 *scope_id)
{
	unsigned int idx;

	if (!*scope)
		return -EINVAL;
	if (strspn(scope, "0123456789") == strlen(scope)) {
		unsigned long val;
		char *end;

		errno = 0;
		val = strtoul(scope, &end, 10);
		if (errno || *end || !val || val > UINT32_MAX)
			return -EINVAL;
		*scope_id = (__u32)val;
		return 0;
	}
	if (strlen(scope) >= IF_NAMESIZE)
		return -ENODEV;
	idx = if_nametoindex(scope);
	if (!idx)
		return errno && errno != ENXIO ? -errno : -ENODEV;
	*scope_id = idx;
	return 0;
}

RPAGE_EXPORT int rpage_addr_parse(const char *text, __u16 port,
				  struct rpage_addr *out)
{
	struct rpage_addr a = { .port = port };
	char host[INET6_ADDRSTRLEN];
	struct in6_addr in6;
	const char *pct;
	size_t len;
	int ret;

	if (!text || !out)
		return rpage_error(EINVAL);
	if (inet_pton(AF_INET, text, a.addr) == 1) {
		a.family = AF_INET;
		*out = a;
		return 0;
	}
	pct = strchr(text, '%');
	len = pct ? (size_t)(pct - text) : strlen(text);
	if (!len || len >= sizeof(host))
		return rpage_error(EINVAL);
	memcpy(host, text, len);
	host[len] = '\0';
	if (inet_pton(AF_INET6, host, &in6) != 1)
		return rpage_error(EINVAL);
	a.family = AF_INET6;
	memcpy(a.addr, &in6, sizeof(a.addr));
	if (pct) {
		/* A scope only makes sense on a link-local address. */
		if (!IN6_IS_ADDR_LINKLOCAL(&in6) && !IN6_IS_ADDR_MC_LINKLOCAL(&in6))
			return rpage_error(EINVAL);
		ret = parse_scope(pct + 1, &a.scope_id);
		if (ret < 0)
			return rpage_error(-ret);
	}
	*out = a;
	return 0;
}

RPAGE_EXPORT int rpage_addr_format(const struct rpage_addr *a, char *buf,
				   size_t len)
{
	char text[RPAGE_ADDR_STRLEN];
	char ifname[IF_NAMESIZE];
	size_t n;

	if (!a || (!buf && len))
		return rpage_error(EINVAL);
	switch (a->family) {
	case AF_INET:
		if (!inet_ntop(AF_INET, a->addr, text, sizeof(text)))
			return rpage_error(EINVAL);
		break;
	case AF_INET6:
		if (!inet_ntop(AF_INET6, a->addr, text, INET6_ADDRSTRLEN))
			return rpage_error(EINVAL);
		if (!a->scope_id)
			break;
		n = strlen(text);
		if (if_indextoname(a->scope_id, ifname))
			snprintf(text + n, sizeof(text) - n, "%%%s", ifname);
		else
			snprintf(text + n, sizeof(text) - n, "%%%u", a->scope_id);
		break;
	default:
		return rpage_error(EINVAL);
	}
	n = strlen(text);
	if (n >= len)
		return rpage_error(ENOSPC);
	memcpy(buf, text, n + 1);
	return 0;
}

RPAGE_EXPORT int rpage_list_all(int fd, int (*list_fn)(int, struct rpage_list *),
				size_t entry_size, void **entries)
{
	struct rpage_list list;
	__u32 capacity = 0;
	void *buf = NULL, *bigger;
	int ret;

	if (!entries)
		return rpage_error(EINVAL);
	*entries = NULL;
	if (!list_fn || !entry_size)
		return rpage_error(EINVAL);
	/* The list may grow between the count and the fetch: again then. */
	for (;;) {
		memset(&list, 0, sizeof(list));
		list.capacity = capacity;
		list.entries = (__u64)(uintptr_t)buf;
		ret = list_fn(fd, &list);
		if (ret < 0) {
			free(buf);
			return ret;
		}
		if (list.count <= capacity)
			break;
		if (list.count > INT_MAX || list.count > SIZE_MAX / entry_size) {
			free(buf);
			return rpage_error(EOVERFLOW);
		}
		capacity = list.count;
		bigger = realloc(buf, (size_t)capacity * entry_size);
		if (!bigger) {
			free(buf);
			return rpage_error(ENOMEM);
		}
		buf = bigger;
	}
	if (!list.count) {
		free(buf);
		buf = NULL;
	}
	*entries = buf;
	return (int)list.count;
}

RPAGE_EXPORT int rpage_peer_find(int fd, const char *name,
				 struct rpage_peer_info *info)
{
	struct rpage_peer_info *peers;
	void *buf;
	int count, i, ret = -ENOENT;

	if (!name || !info)
		return rpage_error(EINVAL);
	count = rpage_list_all(fd, rpage_peer_list, sizeof(*peers), &buf);
	if (count < 0)
		return count;
	peers = buf;
	for (i = 0; i < count; i++) {
		if (!strncmp(peers[i].name, name, sizeof(peers[i].name))) {
			*info = peers[i];
			ret = 0;
			break;
		}
	}
	free(buf);
	return ret ? rpage_error(-ret) : 0;
}

/* The name of @val in @names (@count of them, NULL for gaps), or NULL. */
static const char *rpage_name_of(const char *const *names, size_t count,
				 __u32 val)
{
	return val < count ? names[val] : NULL;
}

#define RPAGE_NAME_OF(names, val) \
	rpage_name_of(names, sizeof(names) / sizeof(names[0]), val)

RPAGE_EXPORT const char *rpage_peer_state_name(__u32 state)
{
	static const char *const names[] = {
		[RPAGE_PEER_CONNECTING] = "connecting",
		[RPAGE_PEER_CONNECTED] = "connected",
		[RPAGE_PEER_RECONNECTING] = "reconnecting",
		[RPAGE_PEER_FAILED] = "failed",
		[RPAGE_PEER_DELETED] = "deleted",
	};

	return RPAGE_NAME_OF(names, state);
}

RPAGE_EXPORT const char *rpage_transport_name(__u32 transport)
{
	static const char *const names[] = {
		[RPAGE_TRANSPORT_AUTO] = "auto",
		[RPAGE_TRANSPORT_RDMA] = "rdma",
		[RPAGE_TRANSPORT_LOOP] = "loop",
		[RPAGE_TRANSPORT_TCP] = "tcp",
	};

	return RPAGE_NAME_OF(names, transport);
}

RPAGE_EXPORT const char *rpage_reject_name(__u32 reason)
{
	static const char *const names[] = {
		[RPAGE_REJECT_NONE] = "none",
		[RPAGE_REJECT_UNKNOWN_PEER] = "unknown-peer",
		[RPAGE_REJECT_VERSION] = "version",
		[RPAGE_REJECT_BAD_HELLO] = "bad-hello",
		[RPAGE_REJECT_NO_RESOURCES] = "no-resources",
		[RPAGE_REJECT_UNSPECIFIED] = "unspecified",
		[RPAGE_REJECT_TRANSPORT] = "transport",
	};

	return RPAGE_NAME_OF(names, reason);
}

RPAGE_EXPORT const char *rpage_endpoint_state_name(__u32 state)
{
	static const char *const names[] = {
		[RPAGE_ENDPOINT_LISTENING] = "listening",
		[RPAGE_ENDPOINT_DOWN] = "down",
	};

	return RPAGE_NAME_OF(names, state);
}

RPAGE_EXPORT const char *rpage_huge_fallback_name(__u32 cause)
{
	static const char *const names[] = {
		[RPAGE_HUGE_FB_TAIL] = "tail",
		[RPAGE_HUGE_FB_DISABLED] = "disabled",
		[RPAGE_HUGE_FB_UNALIGNED] = "unaligned",
		[RPAGE_HUGE_FB_PTE_TABLE] = "pte_table",
		[RPAGE_HUGE_FB_SMALL_CACHED] = "small_cached",
		[RPAGE_HUGE_FB_NOMEM] = "nomem",
	};

	return RPAGE_NAME_OF(names, cause);
}

RPAGE_EXPORT const char *rpage_pool_kind_name(__u32 kind)
{
	static const char *const names[] = {
		[RPAGE_POOL_KERNEL] = "kernel",
		[RPAGE_POOL_USER] = "user",
		[RPAGE_POOL_FILE] = "file",
	};

	return RPAGE_NAME_OF(names, kind);
}

RPAGE_EXPORT const char *rpage_event_name(__u32 type)
{
	static const char *const names[] = {
		[RPAGE_EVENT_PEER_STATE] = "peer_state",
		[RPAGE_EVENT_POOL_ADD] = "pool_add",
		[RPAGE_EVENT_POOL_DEL] = "pool_del",
		[RPAGE_EVENT_MAP_ADD] = "map_add",
		[RPAGE_EVENT_MAP_DEL] = "map_del",
		[RPAGE_EVENT_PREFETCH_END] = "prefetch_end",
	};

	return RPAGE_NAME_OF(names, type);
}
