// SPDX-License-Identifier: GPL-2.0
/*
 * Endpoints and peers of /dev/rpage: their ioctls probed with
 * deliberately bad arguments, and the add, list and delete behaviour
 * that needs no connectivity (a peer at an unreachable address stays
 * connecting). Needs rpage.ko loaded and root; the endpoint tests listen
 * on 0.0.0.0 port 7471, so nothing else on the host may use it.
 *
 * Every test removes what it added: the fixture remembers each endpoint
 * and peer a test created, and its teardown deletes them and the test
 * peers' names, also when the test failed half-way.
 */
#include <stdint.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rpage_test.h"

/* Peer names no real configuration uses. */
#define PEER_A		"rpage-selftest-a"
#define PEER_B		"rpage-selftest-b"
#define PEER_NONE	"rpage-selftest-none"

/* TEST-NET-3 (RFC 5737): reachable by nobody, owned by no device. */
#define UNREACHABLE_A	"203.0.113.7"
#define UNREACHABLE_B	"203.0.113.8"
#define NOT_LOCAL	"203.0.113.9"

#define MAX_ADDED	8
#define MAX_LISTED	64

FIXTURE(config) {
	int fd;
	/* What the test added, for the teardown to remove. */
	struct rpage_endpoint eps[MAX_ADDED];
	int nr_eps;
	struct rpage_peer_config peers[MAX_ADDED];
	int nr_peers;
};

static struct rpage_addr ipv4(const char *text, __u16 port)
{
	struct rpage_addr addr = { .family = AF_INET, .port = port };

	inet_pton(AF_INET, text, addr.addr);
	return addr;
}

static struct rpage_endpoint endpoint4(const char *text, __u16 port)
{
	struct rpage_endpoint ep = { .addr = ipv4(text, port) };

	return ep;
}

/* Copies @name into a zeroed name field, cut to RPAGE_NAME_MAX - 1. */
static void set_name(char *field, const char *name)
{
	size_t len = strnlen(name, RPAGE_NAME_MAX - 1);

	memcpy(field, name, len);
}

static struct rpage_peer_config peer4(const char *name, const char *text,
				      __u16 port)
{
	struct rpage_peer_config peer = { .addr = ipv4(text, port) };

	set_name(peer.name, name);
	return peer;
}

/* A peer's name alone, as RPAGE_IOC_PEER_DEL wants it. */
static struct rpage_peer_config peer_name(const char *name)
{
	struct rpage_peer_config peer = { 0 };

	set_name(peer.name, name);
	return peer;
}

/* rpage_endpoint_add() that remembers a success for the teardown. */
static int add_endpoint(FIXTURE_DATA(config) *self,
			const struct rpage_endpoint *ep)
{
	int ret = rpage_endpoint_add(self->fd, ep);

	if (!ret && self->nr_eps < MAX_ADDED) {
		self->eps[self->nr_eps] = *ep;
		/* Deleted by address alone. */
		self->eps[self->nr_eps++].transport = 0;
	}
	return ret;
}

/* rpage_peer_add() that remembers a success for the teardown. */
static int add_peer(FIXTURE_DATA(config) *self,
		    const struct rpage_peer_config *peer)
{
	int ret = rpage_peer_add(self->fd, peer);

	if (!ret && self->nr_peers < MAX_ADDED) {
		self->peers[self->nr_peers] = *peer;
		memset(&self->peers[self->nr_peers].addr, 0,
		       sizeof(peer->addr));
		self->peers[self->nr_peers].transport = 0;
		self->nr_peers++;
	}
	return ret;
}

static void del_test_peers(int fd)
{
	static const char *const names[] = { PEER_A, PEER_B };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct rpage_peer_config peer = peer_name(names[i]);

		rpage_peer_del(fd, &peer);
	}
}

FIXTURE_SETUP(config)
{
	self->fd = rpage_test_open();
	ASSERT_LE(0, self->fd) {
		TH_LOG("open %s and handshake: %s", RPAGE_DEVICE_PATH,
		       strerror(-self->fd));
	}
	/* Leftovers of a run that was killed. */
	del_test_peers(self->fd);
}

FIXTURE_TEARDOWN(config)
{
	for (int i = 0; i < self->nr_peers; i++)
		rpage_peer_del(self->fd, &self->peers[i]);
	del_test_peers(self->fd);
	for (int i = 0; i < self->nr_eps; i++)
		rpage_endpoint_del(self->fd, &self->eps[i]);
	close(self->fd);
}

/* The list's count; at most @capacity entries land in @infos. */
static int list_endpoints(int fd, struct rpage_endpoint_info *infos,
			  __u32 capacity)
{
	struct rpage_list list = {
		.entries = (uintptr_t)infos, .capacity = capacity,
	};
	int ret = rpage_endpoint_list(fd, &list);

	return ret < 0 ? ret : (int)list.count;
}

static int list_peers(int fd, struct rpage_peer_info *infos, __u32 capacity)
{
	struct rpage_list list = {
		.entries = (uintptr_t)infos, .capacity = capacity,
	};
	int ret = rpage_peer_list(fd, &list);

	return ret < 0 ? ret : (int)list.count;
}

static const struct rpage_endpoint_info *
find_endpoint(const struct rpage_endpoint_info *infos, int count,
	      const struct rpage_addr *addr)
{
	for (int i = 0; i < count && i < MAX_LISTED; i++) {
		if (infos[i].addr.family == addr->family &&
		    infos[i].addr.port == addr->port &&
		    !memcmp(infos[i].addr.addr, addr->addr, sizeof(addr->addr)))
			return &infos[i];
	}
	return NULL;
}

static const struct rpage_peer_info *
find_peer(const struct rpage_peer_info *infos, int count, const char *name)
{
	for (int i = 0; i < count && i < MAX_LISTED; i++) {
		if (!strncmp(infos[i].name, name, sizeof(infos[i].name)))
			return &infos[i];
	}
	return NULL;
}

/* How many peers are listed under @name. */
static int count_peers_named(int fd, const char *name)
{
	struct rpage_peer_info infos[MAX_LISTED];
	int count = list_peers(fd, infos, MAX_LISTED);
	int found = 0;

	if (count < 0)
		return count;
	for (int i = 0; i < count && i < MAX_LISTED; i++)
		found += !strncmp(infos[i].name, name, sizeof(infos[i].name));
	return found;
}

/* Family values that are neither AF_INET nor AF_INET6. */
static const __u16 bad_families[] = {
	0, AF_UNIX, AF_INET6 + 1, AF_PACKET, AF_INET + 0x100, 0xffff,
};

TEST_F(config, commands_need_the_handshake_first)
{
	struct rpage_endpoint ep = endpoint4("0.0.0.0", 0);
	struct rpage_peer_config peer = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config del = peer_name(PEER_A);
	struct rpage_list list = { 0 };
	int fd = rpage_open(0);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, rpage_endpoint_list(fd, &list));
	EXPECT_EQ(-EINVAL, rpage_peer_list(fd, &list));
	/* (A peer added by mistake goes with the teardown.) */
	EXPECT_EQ(-EINVAL, rpage_peer_add(fd, &peer));
	EXPECT_EQ(-EINVAL, rpage_peer_del(fd, &del));
	if (rpage_endpoint_add(fd, &ep) == 0) {
		/* Remove it through the fixture's file. */
		rpage_endpoint_del(self->fd, &ep);
		EXPECT_TRUE(false) {
			TH_LOG("endpoint added without a handshake");
		}
	}
	EXPECT_EQ(-EINVAL, rpage_endpoint_del(fd, &ep));
	close(fd);
}

TEST_F(config, known_commands_with_wrong_size_or_direction)
{
	struct rpage_peer_config peer = peer4(PEER_A, UNREACHABLE_A, 0);
	struct { struct rpage_list list; __u64 extra; } big = { 0 };
	struct rpage_list list = { 0 };

	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOR(RPAGE_IOC_MAGIC, _RPAGE_PEER_LIST, struct rpage_list), &list));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOWR(RPAGE_IOC_MAGIC, _RPAGE_ENDPOINT_LIST, big), &big));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOWR(RPAGE_IOC_MAGIC, _RPAGE_PEER_ADD, struct rpage_peer_config), &peer));
	EXPECT_EQ(EINVAL, ioctl_errno(self->fd,
		_IOW(RPAGE_IOC_MAGIC, _RPAGE_PEER_ADD, struct rpage_endpoint), &peer));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_A));
}

TEST_F(config, lists_reject_bad_arguments)
{
	static const struct {
		const char *name;
		int (*fn)(int fd, struct rpage_list *list);
	} lists[] = {
		{ "device", rpage_device_list },
		{ "endpoint", rpage_endpoint_list },
		{ "peer", rpage_peer_list },
	};

	for (size_t i = 0; i < ARRAY_LEN(lists); i++) {
		struct rpage_list list = { .count = 1 };

		EXPECT_EQ(-EINVAL, lists[i].fn(self->fd, &list)) {
			TH_LOG("%s list: count 1 on input", lists[i].name);
		}
		for (int r = 0; r < 2; r++) {
			memset(&list, 0, sizeof(list));
			list.reserved[r] = 1;
			EXPECT_EQ(-EINVAL, lists[i].fn(self->fd, &list)) {
				TH_LOG("%s list: reserved[%d] set", lists[i].name, r);
			}
		}
		memset(&list, 0, sizeof(list));
		list.capacity = 4;
		EXPECT_EQ(-EFAULT, lists[i].fn(self->fd, &list)) {
			TH_LOG("%s list: capacity 4, entries NULL", lists[i].name);
		}
		memset(&list, 0, sizeof(list));
		EXPECT_EQ(0, lists[i].fn(self->fd, &list)) {
			TH_LOG("%s list: count only", lists[i].name);
		}
	}
}

TEST_F(config, endpoint_rejects_reserved_fields)
{
	struct rpage_endpoint ep;

	for (int r = 0; r < 3; r++) {
		ep = endpoint4("0.0.0.0", 0);
		ep.reserved[r] = 1ULL << 40;
		EXPECT_EQ(-EINVAL, add_endpoint(self, &ep)) {
			TH_LOG("add: reserved[%d] set", r);
		}
		EXPECT_EQ(-EINVAL, rpage_endpoint_del(self->fd, &ep)) {
			TH_LOG("del: reserved[%d] set", r);
		}
	}
	ep = endpoint4("0.0.0.0", 0);
	ep.reserved0 = 1;
	EXPECT_EQ(-EINVAL, add_endpoint(self, &ep));
	EXPECT_EQ(-EINVAL, rpage_endpoint_del(self->fd, &ep));
	/* No loop endpoint, nor one past the known transports. */
	ep = endpoint4("0.0.0.0", 0);
	ep.transport = RPAGE_TRANSPORT_LOOP;
	EXPECT_EQ(-EINVAL, add_endpoint(self, &ep));
	ep.transport = RPAGE_TRANSPORT_TCP + 1;
	EXPECT_EQ(-EINVAL, add_endpoint(self, &ep));
	/* Delete goes by address alone. */
	ep.transport = RPAGE_TRANSPORT_TCP;
	EXPECT_EQ(-EINVAL, rpage_endpoint_del(self->fd, &ep));
}

TEST_F(config, endpoint_listens_with_the_transport_asked)
{
	struct rpage_endpoint_info infos[MAX_LISTED];
	struct rpage_endpoint tcp = endpoint4("127.0.0.1", 7491);
	struct rpage_endpoint rdma = endpoint4("0.0.0.0", 7492);
	const struct rpage_endpoint_info *info;
	int count;

	tcp.transport = RPAGE_TRANSPORT_TCP;
	rdma.transport = RPAGE_TRANSPORT_RDMA;
	ASSERT_EQ(0, add_endpoint(self, &tcp));
	ASSERT_EQ(0, add_endpoint(self, &rdma));
	count = list_endpoints(self->fd, infos, MAX_LISTED);
	ASSERT_LE(2, count);
	info = find_endpoint(infos, count, &tcp.addr);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(1U << RPAGE_TRANSPORT_TCP, info->transport);
	info = find_endpoint(infos, count, &rdma.addr);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(1U << RPAGE_TRANSPORT_RDMA, info->transport);
	/* An address and port is one endpoint, whatever it listens with. */
	rdma = endpoint4("127.0.0.1", 7491);
	rdma.transport = RPAGE_TRANSPORT_TCP;
	EXPECT_EQ(-EEXIST, add_endpoint(self, &rdma));
}

TEST_F(config, endpoint_rejects_bad_family)
{
	for (size_t i = 0; i < ARRAY_LEN(bad_families); i++) {
		struct rpage_endpoint ep = { 0 };

		ep.addr.family = bad_families[i];
		EXPECT_EQ(-EINVAL, add_endpoint(self, &ep)) {
			TH_LOG("add: family %u", bad_families[i]);
		}
		EXPECT_EQ(-EINVAL, rpage_endpoint_del(self->fd, &ep)) {
			TH_LOG("del: family %u", bad_families[i]);
		}
	}
}

TEST_F(config, endpoint_rejects_ipv4_with_trailing_bytes)
{
	for (int b = 4; b < 16; b++) {
		struct rpage_endpoint ep = endpoint4("0.0.0.0", 0);

		ep.addr.addr[b] = 1;
		EXPECT_EQ(-EINVAL, add_endpoint(self, &ep)) {
			TH_LOG("add: IPv4 with addr[%d] set", b);
		}
		EXPECT_EQ(-EINVAL, rpage_endpoint_del(self->fd, &ep)) {
			TH_LOG("del: IPv4 with addr[%d] set", b);
		}
	}
}

TEST_F(config, endpoint_del_unknown_is_enoent)
{
	struct rpage_endpoint ep4 = endpoint4("0.0.0.0", 1);
	struct rpage_endpoint ep6 = { .addr = { .family = AF_INET6, .port = 1 } };

	EXPECT_EQ(-ENOENT, rpage_endpoint_del(self->fd, &ep4));
	EXPECT_EQ(-ENOENT, rpage_endpoint_del(self->fd, &ep6));
}

TEST_F(config, endpoint_on_wildcard_with_default_port)
{
	struct rpage_endpoint_info infos[MAX_LISTED];
	struct rpage_endpoint ep = endpoint4("0.0.0.0", 0);
	struct rpage_endpoint explicit_port = endpoint4("0.0.0.0", RPAGE_DEFAULT_PORT);
	const struct rpage_endpoint_info *info;
	int ret, count;

	ret = add_endpoint(self, &ep);
	if (ret == -EEXIST || ret == -EADDRINUSE)
		SKIP(return, "0.0.0.0 port %d is taken on this host: %s",
		     RPAGE_DEFAULT_PORT, strerror(-ret));
	ASSERT_EQ(0, ret);

	memset(infos, 0xa5, sizeof(infos));
	count = list_endpoints(self->fd, infos, MAX_LISTED);
	ASSERT_LE(1, count);
	ASSERT_GE(MAX_LISTED, count);
	/* Port 0 means the default port, and is listed as such. */
	info = find_endpoint(infos, count, &explicit_port.addr);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(RPAGE_ENDPOINT_LISTENING, info->state);
	EXPECT_EQ(0, info->addr.scope_id);
	/* Automatic listens over both where an RDMA device has the address. */
	EXPECT_EQ((1U << RPAGE_TRANSPORT_RDMA) | (1U << RPAGE_TRANSPORT_TCP),
		  info->transport);
	for (int r = 0; r < 4; r++) {
		EXPECT_EQ(0, info->reserved[r]);
	}
	if (count < MAX_LISTED) {
		/* Entries past the count stay untouched. */
		EXPECT_EQ(0xa5, ((unsigned char *)&infos[count])[0]);
	}

	/* The same address and port, spelled either way, exists already. */
	EXPECT_EQ(-EEXIST, add_endpoint(self, &ep));
	EXPECT_EQ(-EEXIST, add_endpoint(self, &explicit_port));

	EXPECT_EQ(0, rpage_endpoint_del(self->fd, &ep));
	count = list_endpoints(self->fd, infos, MAX_LISTED);
	ASSERT_LE(0, count);
	EXPECT_EQ(NULL, find_endpoint(infos, count, &explicit_port.addr));
	EXPECT_EQ(-ENOENT, rpage_endpoint_del(self->fd, &explicit_port));
}

TEST_F(config, endpoint_on_an_address_no_device_has)
{
	struct rpage_endpoint ep = endpoint4(NOT_LOCAL, 0);
	int ret = add_endpoint(self, &ep);

	EXPECT_TRUE(ret == -ENODEV || ret == -EADDRNOTAVAIL) {
		TH_LOG("endpoint add %s: %d (%s), want ENODEV or EADDRNOTAVAIL",
		       NOT_LOCAL, ret, strerror(-ret));
	}
}

TEST_F(config, peer_rejects_reserved_fields_and_flags)
{
	struct rpage_peer_config peer;

	for (int bit = 0; bit < 32; bit++) {
		peer = peer4(PEER_A, UNREACHABLE_A, 0);
		peer.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, add_peer(self, &peer)) {
			TH_LOG("add: flag bit %d", bit);
		}
	}
	/* Transports past the known ones. */
	peer = peer4(PEER_A, UNREACHABLE_A, 0);
	peer.transport = RPAGE_TRANSPORT_TCP + 1;
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	peer.transport = 1U << 31;
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	for (int r = 0; r < 4; r++) {
		peer = peer4(PEER_A, UNREACHABLE_A, 0);
		peer.reserved[r] = 1ULL << 40;
		EXPECT_EQ(-EINVAL, add_peer(self, &peer)) {
			TH_LOG("add: reserved[%d] set", r);
		}
	}
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_A));
}

TEST_F(config, peer_rejects_bad_family)
{
	for (size_t i = 0; i < ARRAY_LEN(bad_families); i++) {
		struct rpage_peer_config peer = peer4(PEER_A, UNREACHABLE_A, 0);

		peer.addr.family = bad_families[i];
		EXPECT_EQ(-EINVAL, add_peer(self, &peer)) {
			TH_LOG("add: family %u", bad_families[i]);
		}
	}
}

TEST_F(config, peer_rejects_ipv4_with_trailing_bytes)
{
	for (int b = 4; b < 16; b++) {
		struct rpage_peer_config peer = peer4(PEER_A, UNREACHABLE_A, 0);

		peer.addr.addr[b] = 1;
		EXPECT_EQ(-EINVAL, add_peer(self, &peer)) {
			TH_LOG("add: IPv4 with addr[%d] set", b);
		}
	}
}

TEST_F(config, peer_rejects_bad_names)
{
	static const char *const bad[] = {
		"", "host b", "host/b", "host:b", "host\tb", "host\nb", "host*",
		"host@b", "h\xc3\xbcst", "\x7f",
		/* Letters in Latin-1, which the kernel's isalpha() accepts. */
		"h\xe9st", "\xc0", "\xff",
	};
	struct rpage_peer_config peer;
	char longest[RPAGE_NAME_MAX];

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		peer = peer4(bad[i], UNREACHABLE_A, 0);
		EXPECT_EQ(-EINVAL, add_peer(self, &peer)) {
			TH_LOG("add: name '%s'", bad[i]);
		}
		peer = peer_name(bad[i]);
		EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &peer)) {
			TH_LOG("del: name '%s'", bad[i]);
		}
	}

	/* RPAGE_NAME_MAX bytes and no NUL. */
	peer = peer4(PEER_A, UNREACHABLE_A, 0);
	memset(peer.name, 'a', sizeof(peer.name));
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	peer = peer_name(PEER_A);
	memset(peer.name, 'a', sizeof(peer.name));
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &peer));

	/* The longest name that fits, of every allowed character. */
	for (int i = 0; i < RPAGE_NAME_MAX - 1; i++) {
		static const char allowed[] =
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

		longest[i] = allowed[i % (sizeof(allowed) - 1)];
	}
	longest[RPAGE_NAME_MAX - 1] = '\0';
	peer = peer4(longest, UNREACHABLE_A, 0);
	ASSERT_EQ(0, add_peer(self, &peer));
	EXPECT_EQ(1, count_peers_named(self->fd, longest));
	peer = peer_name(longest);
	EXPECT_EQ(0, rpage_peer_del(self->fd, &peer));
	EXPECT_EQ(0, count_peers_named(self->fd, longest));
}

TEST_F(config, peer_duplicate_name_is_eexist)
{
	struct rpage_peer_info infos[MAX_LISTED];
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config again = peer4(PEER_A, UNREACHABLE_B, 0);
	struct rpage_addr want = ipv4(UNREACHABLE_A, RPAGE_DEFAULT_PORT);
	const struct rpage_peer_info *info;
	int count;

	ASSERT_EQ(0, add_peer(self, &a));
	EXPECT_EQ(-EEXIST, add_peer(self, &a));
	EXPECT_EQ(-EEXIST, add_peer(self, &again));

	count = list_peers(self->fd, infos, MAX_LISTED);
	ASSERT_LE(1, count);
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_A));
	info = find_peer(infos, count, PEER_A);
	ASSERT_NE(NULL, info);
	/* The first one stays as it was. */
	EXPECT_EQ(0, memcmp(&want, &info->addr, sizeof(want)));
}

TEST_F(config, peer_duplicate_address_is_eexist)
{
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config b = peer4(PEER_B, UNREACHABLE_A, 0);
	struct rpage_peer_config b_explicit =
		peer4(PEER_B, UNREACHABLE_A, RPAGE_DEFAULT_PORT);
	struct rpage_peer_config b_other_port =
		peer4(PEER_B, UNREACHABLE_A, RPAGE_DEFAULT_PORT + 1);

	ASSERT_EQ(0, add_peer(self, &a));
	EXPECT_EQ(-EEXIST, add_peer(self, &b));
	EXPECT_EQ(-EEXIST, add_peer(self, &b_explicit));
	/*
	 * An incoming connection is recognised by its source address alone
	 * (its port is the initiator's own), so two peers on one address
	 * could not be told apart, whatever their ports.
	 */
	EXPECT_EQ(-EEXIST, add_peer(self, &b_other_port));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_B));
}

TEST_F(config, peer_del_unknown_is_enoent)
{
	struct rpage_peer_config peer = peer_name(PEER_NONE);

	EXPECT_EQ(-ENOENT, rpage_peer_del(self->fd, &peer));
}

TEST_F(config, peer_del_rejects_address_flags_and_reserved)
{
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config del;

	ASSERT_EQ(0, add_peer(self, &a));

	/* Delete goes by name; even the peer's own address is refused. */
	del = a;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_A);
	del.addr.port = RPAGE_DEFAULT_PORT;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_A);
	del.addr.family = AF_INET;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_A);
	del.addr.addr[15] = 1;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_A);
	del.flags = 1;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_A);
	del.transport = RPAGE_TRANSPORT_RDMA;
	EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del));
	for (int r = 0; r < 4; r++) {
		del = peer_name(PEER_A);
		del.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_peer_del(self->fd, &del)) {
			TH_LOG("del: reserved[%d] set", r);
		}
	}

	/* None of those removed it. */
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_A));
	del = peer_name(PEER_A);
	EXPECT_EQ(0, rpage_peer_del(self->fd, &del));
}

TEST_F(config, peer_add_list_del)
{
	struct rpage_peer_info infos[MAX_LISTED];
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config b = peer4(PEER_B, UNREACHABLE_B, 7000);
	struct rpage_addr want_a = ipv4(UNREACHABLE_A, RPAGE_DEFAULT_PORT);
	struct rpage_addr want_b = ipv4(UNREACHABLE_B, 7000);
	const struct rpage_peer_info *info;
	struct rpage_peer_config del;
	__u32 id_a;
	int count;

	ASSERT_EQ(0, add_peer(self, &a));
	ASSERT_EQ(0, add_peer(self, &b));

	memset(infos, 0xa5, sizeof(infos));
	count = list_peers(self->fd, infos, MAX_LISTED);
	ASSERT_LE(2, count);
	ASSERT_GE(MAX_LISTED, count);

	info = find_peer(infos, count, PEER_A);
	ASSERT_NE(NULL, info);
	/* Port 0 means the default port, and is listed as such. */
	EXPECT_EQ(0, memcmp(&want_a, &info->addr, sizeof(want_a)));
	EXPECT_TRUE(info->state == RPAGE_PEER_CONNECTING ||
		    info->state == RPAGE_PEER_RECONNECTING) {
		TH_LOG("state %u", info->state);
	}
	EXPECT_LE(1, info->qps);
	/* Nobody answers at this address. */
	EXPECT_EQ(0, info->qps_connected);
	EXPECT_EQ(0, info->qps_inbound);
	EXPECT_EQ(0, info->connects);
	EXPECT_EQ(0, info->remote_node_id);
	/* Automatic is RDMA, and says so. */
	EXPECT_EQ(RPAGE_TRANSPORT_RDMA, info->transport);
	EXPECT_EQ(0, info->reserved0);
	for (int r = 0; r < 3; r++) {
		EXPECT_EQ(0, info->reserved[r]);
	}
	id_a = info->id;

	info = find_peer(infos, count, PEER_B);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(0, memcmp(&want_b, &info->addr, sizeof(want_b)));
	/* Each peer has its own id. */
	EXPECT_NE(id_a, info->id);
	if (count < MAX_LISTED) {
		/* Entries past the count stay untouched. */
		EXPECT_EQ(0xa5, ((unsigned char *)&infos[count])[0]);
	}

	del = peer_name(PEER_A);
	EXPECT_EQ(0, rpage_peer_del(self->fd, &del));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_A));
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_B));
	EXPECT_EQ(-ENOENT, rpage_peer_del(self->fd, &del));
	del = peer_name(PEER_B);
	EXPECT_EQ(0, rpage_peer_del(self->fd, &del));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_B));
}

TEST_F(config, tcp_peer_listed_as_such)
{
	struct rpage_peer_info infos[MAX_LISTED];
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	const struct rpage_peer_info *info;
	int count;

	a.transport = RPAGE_TRANSPORT_TCP;
	ASSERT_EQ(0, add_peer(self, &a));
	count = list_peers(self->fd, infos, MAX_LISTED);
	ASSERT_LE(1, count);
	info = find_peer(infos, count, PEER_A);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(RPAGE_TRANSPORT_TCP, info->transport);
	/* A control connection and at least one for data; none up. */
	EXPECT_LE(2, info->qps);
	EXPECT_EQ(0, info->qps_connected);
	/* Its address is still its own: not a second peer of it. */
	a = peer4(PEER_B, UNREACHABLE_A, 0);
	EXPECT_EQ(-EEXIST, add_peer(self, &a));
}

/* A loop peer: this host, no address, one per host. */
static struct rpage_peer_config peer_loop(const char *name)
{
	struct rpage_peer_config peer = peer_name(name);

	peer.transport = RPAGE_TRANSPORT_LOOP;
	return peer;
}

TEST_F(config, loop_peer_refusals)
{
	struct rpage_peer_config peer;

	/* It has no address, not even a port. */
	peer = peer4(PEER_A, UNREACHABLE_A, 0);
	peer.transport = RPAGE_TRANSPORT_LOOP;
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	peer = peer_loop(PEER_A);
	peer.addr.port = RPAGE_DEFAULT_PORT;
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	peer = peer_loop(PEER_A);
	peer.addr.addr[15] = 1;
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	/* Without a transport, no address is no address. */
	peer = peer_name(PEER_A);
	EXPECT_EQ(-EINVAL, add_peer(self, &peer));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_A));

	/* One per host, whatever its name; a name is still a name. */
	peer = peer_loop(PEER_A);
	ASSERT_EQ(0, add_peer(self, &peer));
	peer = peer_loop(PEER_B);
	EXPECT_EQ(-EEXIST, add_peer(self, &peer));
	peer = peer4(PEER_A, UNREACHABLE_A, 0);
	EXPECT_EQ(-EEXIST, add_peer(self, &peer));
	/* An RDMA peer beside it is fine. */
	peer = peer4(PEER_B, UNREACHABLE_B, 0);
	EXPECT_EQ(0, add_peer(self, &peer));
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_A));
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_B));
}

TEST_F(config, loop_peer_connects_and_is_listed_as_such)
{
	struct rpage_peer_info infos[MAX_LISTED];
	struct rpage_peer_config a = peer_loop(PEER_A);
	const struct rpage_peer_info *info;
	struct rpage_peer_config del;
	__u32 id;
	int count;

	ASSERT_EQ(0, add_peer(self, &a));
	/* Nothing to wait for but its own pool table. */
	ASSERT_EQ(0, wait_peer_connected(self->fd, PEER_A, &id));
	count = list_peers(self->fd, infos, MAX_LISTED);
	ASSERT_LE(1, count);
	info = find_peer(infos, count, PEER_A);
	ASSERT_NE(NULL, info);
	EXPECT_EQ(id, info->id);
	EXPECT_EQ(RPAGE_TRANSPORT_LOOP, info->transport);
	EXPECT_EQ(RPAGE_PEER_CONNECTED, info->state);
	EXPECT_EQ(0, info->addr.family);
	EXPECT_EQ(0, info->addr.port);
	/* No queue pair; one channel to this host's pools. */
	EXPECT_EQ(0, info->qps);
	EXPECT_EQ(0, info->qps_connected);
	EXPECT_EQ(1, info->qps_inbound);
	EXPECT_EQ(1, info->connects);
	/* The node it reads is this one. */
	EXPECT_EQ(module_param("node_id", 0), info->remote_node_id);
	EXPECT_NE(0, info->remote_node_id);
	EXPECT_EQ(0, info->reserved0);

	del = peer_name(PEER_A);
	EXPECT_EQ(0, rpage_peer_del(self->fd, &del));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_A));
	/* And another may come. */
	ASSERT_EQ(0, add_peer(self, &a));
	ASSERT_EQ(0, wait_peer_connected(self->fd, PEER_A, &id));
}

TEST_F(config, peer_list_capacity_bounds_the_copy)
{
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_peer_config b = peer4(PEER_B, UNREACHABLE_B, 0);
	struct rpage_peer_info two[2];

	ASSERT_EQ(0, add_peer(self, &a));
	ASSERT_EQ(0, add_peer(self, &b));

	memset(two, 0xa5, sizeof(two));
	EXPECT_LE(2, list_peers(self->fd, two, 1));
	EXPECT_NE(NULL, memchr(two[0].name, '\0', sizeof(two[0].name)));
	EXPECT_EQ(0xa5, ((unsigned char *)&two[1])[0]);
}

/* What the unprivileged child found wrong, as bits of its exit code. */
enum {
	CHILD_PRIVS		= 1 << 0,
	CHILD_PEER_ADD		= 1 << 1,
	CHILD_PEER_DEL		= 1 << 2,
	CHILD_ENDPOINT_ADD	= 1 << 3,
	CHILD_ENDPOINT_ADDED	= 1 << 4,
	CHILD_ENDPOINT_DEL	= 1 << 5,
	CHILD_PEER_LIST		= 1 << 6,
	CHILD_ENDPOINT_LIST	= 1 << 7,
};

/*
 * Runs without CAP_SYS_ADMIN on a file root opened and shook hands on:
 * the file still works, but only to look.
 */
static int unprivileged_child(int fd)
{
	struct rpage_peer_config b = peer4(PEER_B, UNREACHABLE_B, 0);
	struct rpage_peer_config a = peer_name(PEER_A);
	struct rpage_endpoint ep = endpoint4("0.0.0.0", 0);
	struct rpage_endpoint_info eps[MAX_LISTED];
	struct rpage_peer_info peers[MAX_LISTED];
	int result = 0, ret, count;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return CHILD_PRIVS;

	if (rpage_peer_add(fd, &b) != -EPERM)
		result |= CHILD_PEER_ADD;
	if (rpage_peer_del(fd, &a) != -EPERM)
		result |= CHILD_PEER_DEL;
	ret = rpage_endpoint_add(fd, &ep);
	if (ret != -EPERM)
		result |= CHILD_ENDPOINT_ADD;
	if (!ret)
		result |= CHILD_ENDPOINT_ADDED;
	ep.addr.port = 1;
	if (rpage_endpoint_del(fd, &ep) != -EPERM)
		result |= CHILD_ENDPOINT_DEL;

	count = list_peers(fd, peers, MAX_LISTED);
	if (count < 1 || !find_peer(peers, count, PEER_A))
		result |= CHILD_PEER_LIST;
	if (list_endpoints(fd, eps, MAX_LISTED) < 0)
		result |= CHILD_ENDPOINT_LIST;
	return result;
}

TEST_F(config, configuration_needs_cap_sys_admin)
{
	struct rpage_peer_config a = peer4(PEER_A, UNREACHABLE_A, 0);
	struct rpage_endpoint ep = endpoint4("0.0.0.0", 0);
	int status, result;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root to drop privileges");
	ASSERT_EQ(0, add_peer(self, &a));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(unprivileged_child(self->fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	result = WEXITSTATUS(status);
	if (result & CHILD_ENDPOINT_ADDED)
		rpage_endpoint_del(self->fd, &ep);

	EXPECT_EQ(0, result & CHILD_PRIVS);
	EXPECT_EQ(0, result & CHILD_PEER_ADD) {
		TH_LOG("peer add without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_PEER_DEL) {
		TH_LOG("peer del without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_ENDPOINT_ADD) {
		TH_LOG("endpoint add without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_ENDPOINT_DEL) {
		TH_LOG("endpoint del without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_PEER_LIST) {
		TH_LOG("peer list without CAP_SYS_ADMIN failed or missed %s", PEER_A);
	}
	EXPECT_EQ(0, result & CHILD_ENDPOINT_LIST) {
		TH_LOG("endpoint list without CAP_SYS_ADMIN failed");
	}
	/* The child changed nothing. */
	EXPECT_EQ(1, count_peers_named(self->fd, PEER_A));
	EXPECT_EQ(0, count_peers_named(self->fd, PEER_B));
}

/* The address helpers of librpage: no device needed. */
TEST(addr_parse)
{
	static const char *const bad[] = {
		"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4 ", " 1.2.3.4",
		"192.0.2.1:7471", "0x7f.1", "::g", "[::1]", "2001:db8::1::2",
		"2001:db8::1%lo", "1.2.3.4%lo", "fe80::1%", "fe80::1%0", "%lo",
		"fe80::1%99999999999",
	};
	struct rpage_addr addr, untouched;
	unsigned int lo = if_nametoindex("lo");

	ASSERT_EQ(0, rpage_addr_parse("192.0.2.1", 7, &addr));
	EXPECT_EQ(AF_INET, addr.family);
	EXPECT_EQ(7, addr.port);
	EXPECT_EQ(0, addr.scope_id);
	EXPECT_EQ(0, memcmp(addr.addr, "\xc0\x00\x02\x01\0\0\0\0\0\0\0\0\0\0\0\0", 16));

	ASSERT_EQ(0, rpage_addr_parse("2001:db8::1", 0, &addr));
	EXPECT_EQ(AF_INET6, addr.family);
	EXPECT_EQ(0, addr.port);
	EXPECT_EQ(0, addr.scope_id);
	EXPECT_EQ(0, memcmp(addr.addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16));

	ASSERT_EQ(0, rpage_addr_parse("fe80::1%3", RPAGE_DEFAULT_PORT, &addr));
	EXPECT_EQ(AF_INET6, addr.family);
	EXPECT_EQ(RPAGE_DEFAULT_PORT, addr.port);
	EXPECT_EQ(3, addr.scope_id);

	if (lo) {
		ASSERT_EQ(0, rpage_addr_parse("fe80::1%lo", 0, &addr));
		EXPECT_EQ(lo, addr.scope_id);
	}

	memset(&untouched, 0x5a, sizeof(untouched));
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		addr = untouched;
		EXPECT_EQ(-EINVAL, rpage_addr_parse(bad[i], 0, &addr)) {
			TH_LOG("'%s' parsed", bad[i]);
		}
		EXPECT_EQ(0, memcmp(&addr, &untouched, sizeof(addr))) {
			TH_LOG("'%s' changed the output", bad[i]);
		}
	}
	EXPECT_EQ(-ENODEV, rpage_addr_parse("fe80::1%rpagenosuchif", 0, &addr));
	EXPECT_EQ(-EINVAL, rpage_addr_parse(NULL, 0, &addr));
	EXPECT_EQ(-EINVAL, rpage_addr_parse("192.0.2.1", 0, NULL));
}

TEST(addr_format)
{
	static const char *const round_trip[] = {
		"192.0.2.1", "0.0.0.0", "255.255.255.255", "2001:db8::1", "::",
		"::ffff:192.0.2.1", "fe80::1%3",
	};
	char buf[RPAGE_ADDR_STRLEN], lo_name[IF_NAMESIZE];
	struct rpage_addr addr = { 0 };

	for (size_t i = 0; i < ARRAY_LEN(round_trip); i++) {
		ASSERT_EQ(0, rpage_addr_parse(round_trip[i], 0, &addr));
		/* Index 3 may be a real interface, printed by its name. */
		if (addr.scope_id)
			addr.scope_id = 4000000000U;
		ASSERT_EQ(0, rpage_addr_format(&addr, buf, sizeof(buf)));
		if (addr.scope_id) {
			EXPECT_STREQ("fe80::1%4000000000", buf);
		} else {
			EXPECT_STREQ(round_trip[i], buf);
		}
	}

	if (if_indextoname(1, lo_name)) {
		char want[RPAGE_ADDR_STRLEN];

		ASSERT_EQ(0, rpage_addr_parse("fe80::1%1", 0, &addr));
		ASSERT_EQ(0, rpage_addr_format(&addr, buf, sizeof(buf)));
		snprintf(want, sizeof(want), "fe80::1%%%s", lo_name);
		EXPECT_STREQ(want, buf);
	}

	ASSERT_EQ(0, rpage_addr_parse("192.0.2.1", 0, &addr));
	EXPECT_EQ(-ENOSPC, rpage_addr_format(&addr, buf, strlen("192.0.2.1")));
	EXPECT_EQ(0, rpage_addr_format(&addr, buf, strlen("192.0.2.1") + 1));
	EXPECT_STREQ("192.0.2.1", buf);
	EXPECT_EQ(-ENOSPC, rpage_addr_format(&addr, NULL, 0));

	for (size_t i = 0; i < ARRAY_LEN(bad_families); i++) {
		addr.family = bad_families[i];
		EXPECT_EQ(-EINVAL, rpage_addr_format(&addr, buf, sizeof(buf))) {
			TH_LOG("family %u formatted", bad_families[i]);
		}
	}
}

TEST_HARNESS_MAIN
