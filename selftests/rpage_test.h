/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the rpage selftests (built on the kernel's
 * kselftest_harness.h) and test tools (built on librpage alone; the
 * NEED_*() macros are for harness tests only).
 */
#ifndef RPAGE_TEST_H
#define RPAGE_TEST_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "librpage.h"

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/* Remote pools show up a moment after they are made: wait this long. */
#define REMOTE_WAIT_S	30
/* And a peer (re)connects within this. */
#define PEER_WAIT_S	60

/* ioctl(2) that returns the errno it failed with, 0 on success. */
static inline int ioctl_errno(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

/* Opens /dev/rpage and completes the handshake; -errno on failure. */
static inline int rpage_test_open(void)
{
	struct rpage_api api = { .api = RPAGE_API };
	int fd, ret;

	fd = rpage_open(0);
	if (fd < 0)
		return fd;
	ret = rpage_api(fd, &api);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

static inline uint64_t rpage_test_page_size(void)
{
	long size = sysconf(_SC_PAGESIZE);

	return size > 0 ? (uint64_t)size : 4096;
}

/*
 * The peer that is this host itself, as the harness names it in
 * RPAGE_TEST_PEER; NULL when there is none.
 */
static inline const char *rpage_test_peer_name(void)
{
	const char *name = getenv("RPAGE_TEST_PEER");

	return name && *name ? name : NULL;
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A module parameter as a number, or @fallback. */
static inline uint64_t module_param(const char *name, uint64_t fallback)
{
	char path[128];
	unsigned long long val;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/rpage/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return fallback;
	if (fscanf(f, "%llu", &val) != 1)
		val = fallback;
	fclose(f);
	return val;
}

/* The loaded module's io_timeout_ms parameter (10 s if unreadable). */
static inline long rpage_test_io_timeout_ms(void)
{
	return (long)module_param("io_timeout_ms", 10000);
}

static inline int create_pool(int fd, __u64 id, __u64 length, __u32 flags)
{
	struct rpage_pool_create arg = {
		.id = id, .length = length, .flags = flags,
	};

	return rpage_pool_create(fd, &arg);
}

static inline int export_pool(int fd, __u64 id, const void *addr,
			      __u64 length, __u32 flags)
{
	struct rpage_pool_export arg = {
		.id = id, .addr = (uintptr_t)addr, .length = length,
		.flags = flags,
	};

	return rpage_pool_export(fd, &arg);
}

static inline int destroy_pool(int fd, __u64 id)
{
	struct rpage_pool_destroy arg = { .id = id };

	return rpage_pool_destroy(fd, &arg);
}

/*
 * Reads a whole list into a new array (free it). Returns the number of
 * entries or a negative errno.
 */
static inline int list_all(int fd, int (*fn)(int, struct rpage_list *),
			   size_t size, void **entries)
{
	struct rpage_list list;
	__u32 capacity = 0;
	void *buf = NULL;
	int ret;

	for (;;) {
		memset(&list, 0, sizeof(list));
		list.entries = (uintptr_t)buf;
		list.capacity = capacity;
		ret = fn(fd, &list);
		if (ret < 0) {
			free(buf);
			return ret;
		}
		if (list.count <= capacity)
			break;
		capacity = list.count;
		free(buf);
		buf = calloc(capacity, size);
		if (!buf)
			return -ENOMEM;
	}
	*entries = buf;
	return (int)list.count;
}

/*
 * Looks for the first entry of list @fn (entries of @size bytes) that
 * @match finds equal to @key: 1 and the entry in *@out (unless NULL), 0
 * if there is none, or -errno (*@out zeroed then).
 */
static inline int list_find(int fd, int (*fn)(int, struct rpage_list *),
			    size_t size,
			    bool (*match)(const void *entry, const void *key),
			    const void *key, void *out)
{
	void *buf = NULL;
	int count, found = 0;

	if (out)
		memset(out, 0, size);
	count = list_all(fd, fn, size, &buf);
	if (count < 0)
		return count;
	for (int i = 0; i < count && !found; i++) {
		const void *entry = (const char *)buf + (size_t)i * size;

		found = match(entry, key);
		if (found && out)
			memcpy(out, entry, size);
	}
	free(buf);
	return found;
}

static inline bool match_pool(const void *entry, const void *id)
{
	return ((const struct rpage_pool_info *)entry)->id == *(const __u64 *)id;
}

/* 1 and *@out if pool @id of this host is listed, 0 if not, or -errno. */
static inline int find_pool(int fd, __u64 id, struct rpage_pool_info *out)
{
	return list_find(fd, rpage_pool_list, sizeof(*out), match_pool, &id, out);
}

static inline bool match_remote_pool(const void *entry, const void *key)
{
	const struct rpage_remote_pool_info *info = entry, *want = key;

	return info->peer_id == want->peer_id && info->id == want->id;
}

/* The same for pool @id of peer @peer_id in the remote pool list. */
static inline int find_remote_pool(int fd, __u32 peer_id, __u64 id,
				   struct rpage_remote_pool_info *out)
{
	struct rpage_remote_pool_info key = { .peer_id = peer_id, .id = id };

	return list_find(fd, rpage_remote_pool_list, sizeof(*out),
			 match_remote_pool, &key, out);
}

/*
 * Waits up to REMOTE_WAIT_S for pool @id of peer @peer_id to be listed
 * (@present) or gone (!@present). 0 once it is, -ETIMEDOUT or -errno.
 */
static inline int wait_remote_pool(int fd, __u32 peer_id, __u64 id,
				   bool present,
				   struct rpage_remote_pool_info *out)
{
	uint64_t deadline = now_ms() + REMOTE_WAIT_S * 1000;
	int found;

	for (;;) {
		found = find_remote_pool(fd, peer_id, id, out);
		if (found < 0)
			return found;
		if (found == present)
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		sleep_ms(100);
	}
}

/* The same for a pool of this host leaving the local list. */
static inline int wait_pool_gone(int fd, __u64 id, unsigned int seconds)
{
	uint64_t deadline = now_ms() + seconds * 1000ULL;
	int found;

	while ((found = find_pool(fd, id, NULL)) == 1) {
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		sleep_ms(50);
	}
	return found;
}

static inline bool match_peer_name(const void *entry, const void *name)
{
	return !strncmp(((const struct rpage_peer_info *)entry)->name, name,
			RPAGE_NAME_MAX);
}

/*
 * The id and state (either may be NULL) of the peer called @name: 0,
 * -ENOENT if there is no such peer, or -errno.
 */
static inline int peer_lookup(int fd, const char *name, __u32 *id,
			      __u32 *state)
{
	struct rpage_peer_info info;
	int found = list_find(fd, rpage_peer_list, sizeof(info),
			      match_peer_name, name, &info);

	if (found <= 0)
		return found ? found : -ENOENT;
	if (id)
		*id = info.id;
	if (state)
		*state = info.state;
	return 0;
}

/*
 * The id of the peer called @name, once it is connected: waits up to
 * PEER_WAIT_S. 0, -ENOENT (no such peer), -ENOTCONN or -errno.
 */
static inline int wait_peer_connected(int fd, const char *name, __u32 *id)
{
	uint64_t deadline = now_ms() + PEER_WAIT_S * 1000;
	__u32 state;
	int ret;

	for (;;) {
		ret = peer_lookup(fd, name, id, &state);
		if (!ret && state != RPAGE_PEER_CONNECTED)
			ret = -ENOTCONN;
		if (ret != -ENOTCONN || now_ms() > deadline)
			return ret;
		sleep_ms(100);
	}
}

static inline bool match_peer_stats(const void *entry, const void *peer_id)
{
	return ((const struct rpage_peer_stats *)entry)->peer_id ==
		*(const __u32 *)peer_id;
}

/* The counters of peer @peer_id: 0, -ENOENT or -errno. */
static inline int peer_stats(int fd, __u32 peer_id, struct rpage_stats *out)
{
	struct rpage_peer_stats entry;
	int found = list_find(fd, rpage_peer_stats, sizeof(entry),
			      match_peer_stats, &peer_id, &entry);

	if (found <= 0)
		return found ? found : -ENOENT;
	*out = entry.stats;
	return 0;
}

/* One range, one RPAGE_IOC_READ or _WRITE. */
static inline int io1(int fd, bool write, __u32 peer_id, __u64 pool_id,
		      __u64 offset, __u64 length, const void *addr)
{
	struct rpage_iovec iov = {
		.peer_id = peer_id, .pool_id = pool_id, .offset = offset,
		.length = length, .addr = (uintptr_t)addr,
	};
	struct rpage_io io = { .iov = (uintptr_t)&iov, .nr_iov = 1 };

	return write ? rpage_write(fd, &io) : rpage_read(fd, &io);
}

/*
 * @pages pages from @offset, one iovec per page, up to RPAGE_IO_MAX_IOV
 * per call.
 */
static inline int io_pages(int fd, bool write, __u32 peer_id, __u64 pool_id,
			   __u64 offset, __u64 pages, void *buf)
{
	struct rpage_iovec *iov = calloc(RPAGE_IO_MAX_IOV, sizeof(*iov));
	struct rpage_io io = { .iov = (uintptr_t)iov };
	const uint64_t psize = rpage_test_page_size();
	int ret = 0;

	if (!iov)
		return -ENOMEM;
	for (__u64 done = 0; done < pages && !ret; done += io.nr_iov) {
		io.nr_iov = pages - done < RPAGE_IO_MAX_IOV ?
			(__u32)(pages - done) : RPAGE_IO_MAX_IOV;
		for (__u32 i = 0; i < io.nr_iov; i++) {
			iov[i] = (struct rpage_iovec) {
				.peer_id = peer_id, .pool_id = pool_id,
				.offset = offset + (done + i) * psize,
				.length = psize,
				.addr = (uintptr_t)buf + (done + i) * psize,
			};
		}
		ret = write ? rpage_write(fd, &io) : rpage_read(fd, &io);
	}
	free(iov);
	return ret;
}

/* First non-zero byte offset in @len bytes, or UINT64_MAX. */
static inline uint64_t first_nonzero(const void *buf, uint64_t len)
{
	const unsigned char *p = buf;

	for (uint64_t i = 0; i < len; i++)
		if (p[i])
			return i;
	return UINT64_MAX;
}

/* Where touch_sigbus() returns to on SIGBUS, and the address it came for. */
static sigjmp_buf sigbus_env __attribute__((unused));
static void *volatile sigbus_addr __attribute__((unused));

static inline void sigbus_jump(int sig, siginfo_t *si, void *ctx)
{
	sigbus_addr = si->si_addr;
	siglongjmp(sigbus_env, 1);
}

/*
 * Sends SIGBUS to @handler, with SA_SIGINFO (sigbus_jump for
 * touch_sigbus()), or back to its default action for NULL.
 */
static inline void on_sigbus(void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction sa = {
		.sa_sigaction = handler, .sa_flags = SA_SIGINFO,
	};

	if (!handler)
		sa = (struct sigaction) { .sa_handler = SIG_DFL };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/*
 * Reads the byte at @p, with SIGBUS sent to sigbus_jump: false, or
 * true if the read raised SIGBUS, with its si_addr in *@addr.
 */
static inline bool touch_sigbus(const void *p, void **addr)
{
	if (sigsetjmp(sigbus_env, 1)) {
		*addr = sigbus_addr;
		return true;
	}
	(void)*(const volatile unsigned char *)p;
	return false;
}

/*
 * For harness tests whose fixture has int fd, const char *peer (from
 * rpage_test_peer_name()) and __u32 peer_id.
 *
 * NEED_PEER() skips the test when the harness configured no peer for
 * this host; otherwise fails it unless that peer is connected.
 */
#define NEED_PEER() do { \
	int __ret; \
	if (!self->peer) \
		SKIP(return, "RPAGE_TEST_PEER is not set: no peer is this host"); \
	__ret = wait_peer_connected(self->fd, self->peer, &self->peer_id); \
	ASSERT_EQ(0, __ret) { \
		TH_LOG("peer %s: %s", self->peer, strerror(-__ret)); \
	} \
} while (0)

/* Waits for this host's pool @id to show up through the peer. */
#define NEED_REMOTE_POOL(id) do { \
	int __ret = wait_remote_pool(self->fd, self->peer_id, (id), true, NULL); \
	ASSERT_EQ(0, __ret) { \
		TH_LOG("pool %#llx not in the remote pool list of %s: %s", \
		       (unsigned long long)(id), self->peer, strerror(-__ret)); \
	} \
} while (0)

#endif /* RPAGE_TEST_H */
