// SPDX-License-Identifier: GPL-2.0
/*
 * Pools and remote reads and writes of /dev/rpage, probed with
 * deliberately bad arguments, and the good paths that one host can show
 * on its own: it reads and writes its own pools through a peer that is
 * this very host, connected over loopback.
 *
 * Needs rpage.ko loaded and root. The tests that move data need the
 * harness to have added an endpoint and a peer for this host, named by
 * RPAGE_TEST_PEER; without it they are skipped.
 *
 * Every test removes what it made: pools have ids from POOL_FIRST to
 * POOL_LAST, and the teardown destroys all of them (and the setup the
 * leftovers of a killed run); user pools go with the files that
 * exported them, which the test process closes when it ends.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rpage_test.h"
#include "rpage_pattern.h"

/* Pool ids no real configuration uses. */
#define POOL_FIRST	0x7e570001ULL
#define POOL_A		(POOL_FIRST + 0)
#define POOL_B		(POOL_FIRST + 1)
#define POOL_C		(POOL_FIRST + 2)
#define POOL_D		(POOL_FIRST + 3)
#define POOL_LAST	0x7e570010ULL
/* Never created. */
#define POOL_NONE	0x7e5700ffULL

/* A peer that never connects: TEST-NET-3 (RFC 5737) answers nobody. */
#define PEER_NC		"rpage-pooltest-nc"
#define UNREACHABLE	"203.0.113.17"

/* A peer id no peer has (ids are handed out from small numbers up). */
#define PEER_ID_NONE	0xffffffU

#define MAX_MAPS	16

static uint64_t page;

FIXTURE(pool) {
	int fd;
	/* RPAGE_TEST_PEER and its id, once NEED_PEER() found it. */
	const char *peer;
	__u32 peer_id;
	/* Mappings the test made, for the teardown to unmap. */
	void *maps[MAX_MAPS];
	size_t map_lens[MAX_MAPS];
	int nr_maps;
};

/* An anonymous mapping of @pages pages, unmapped by the teardown. */
static void *map_pages(FIXTURE_DATA(pool) *self, uint64_t pages, int prot)
{
	void *mem = mmap(NULL, pages * page, prot, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	if (self->nr_maps < MAX_MAPS) {
		self->maps[self->nr_maps] = mem;
		self->map_lens[self->nr_maps++] = pages * page;
	}
	return mem;
}

/* An address range nothing is mapped at (for a moment). */
static void *unmapped_pages(uint64_t pages)
{
	void *mem = mmap(NULL, pages * page, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	munmap(mem, pages * page);
	return mem;
}

static void destroy_test_pools(int fd)
{
	for (__u64 id = POOL_FIRST; id <= POOL_LAST; id++)
		destroy_pool(fd, id);
}

static void del_nc_peer(int fd)
{
	struct rpage_peer_config peer = { 0 };

	memcpy(peer.name, PEER_NC, sizeof(PEER_NC));
	rpage_peer_del(fd, &peer);
}

/* A file of its own, handshake done; -errno on failure. */
static int open_other(void)
{
	return rpage_test_open();
}

FIXTURE_SETUP(pool)
{
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	self->fd = rpage_test_open();
	ASSERT_LE(0, self->fd) {
		TH_LOG("open %s and handshake: %s", RPAGE_DEVICE_PATH,
		       strerror(-self->fd));
	}
	/* Leftovers of a run that was killed. */
	destroy_test_pools(self->fd);
	del_nc_peer(self->fd);
	self->peer = rpage_test_peer_name();
}

FIXTURE_TEARDOWN(pool)
{
	destroy_test_pools(self->fd);
	del_nc_peer(self->fd);
	for (int i = 0; i < self->nr_maps; i++)
		munmap(self->maps[i], self->map_lens[i]);
	close(self->fd);
}

TEST_F(pool, commands_need_the_handshake_first)
{
	struct rpage_iovec iov = { .peer_id = PEER_ID_NONE, .pool_id = POOL_A,
				   .length = page };
	struct rpage_io io = { .iov = (uintptr_t)&iov, .nr_iov = 1 };
	struct rpage_list list = { 0 };
	void *mem = map_pages(self, 1, PROT_READ | PROT_WRITE);
	int fd = rpage_open(0);

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, mem);
	iov.addr = (uintptr_t)mem;
	/* (A pool made by mistake goes with the teardown or the file.) */
	EXPECT_EQ(-EINVAL, create_pool(fd, POOL_A, page, 0));
	EXPECT_EQ(-EINVAL, export_pool(fd, POOL_B, mem, page, 0));
	EXPECT_EQ(-EINVAL, destroy_pool(fd, POOL_A));
	EXPECT_EQ(-EINVAL, rpage_pool_list(fd, &list));
	EXPECT_EQ(-EINVAL, rpage_remote_pool_list(fd, &list));
	EXPECT_EQ(-EINVAL, rpage_read(fd, &io));
	EXPECT_EQ(-EINVAL, rpage_write(fd, &io));
	close(fd);
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));
}

TEST_F(pool, create_list_destroy)
{
	struct rpage_pool_info info;
	int other;

	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 16 * page, RPAGE_POOL_WRITABLE));
	/* The smallest pool: one page. */
	ASSERT_EQ(0, create_pool(self->fd, POOL_B, page, 0));

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(1, find_pool(self->fd, POOL_A, &info));
	EXPECT_EQ(16 * page, info.length);
	EXPECT_EQ(RPAGE_POOL_WRITABLE, info.flags);
	EXPECT_EQ(RPAGE_POOL_KERNEL, info.kind);
	EXPECT_EQ(0, info.owner_pid);
	EXPECT_EQ(0, info.reserved0);
	for (int r = 0; r < 4; r++) {
		EXPECT_EQ(0, info.reserved[r]);
	}
	ASSERT_EQ(1, find_pool(self->fd, POOL_B, &info));
	EXPECT_EQ(page, info.length);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(RPAGE_POOL_KERNEL, info.kind);

	/* A kernel pool belongs to the host: another file may destroy it. */
	other = open_other();
	ASSERT_LE(0, other);
	EXPECT_EQ(0, destroy_pool(other, POOL_A));
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));
	EXPECT_EQ(-ENOENT, destroy_pool(self->fd, POOL_A));

	/* ...and outlives the file that created it. */
	ASSERT_EQ(0, create_pool(other, POOL_C, 2 * page, 0));
	close(other);
	EXPECT_EQ(1, find_pool(self->fd, POOL_C, NULL));

	EXPECT_EQ(0, destroy_pool(self->fd, POOL_B));
	EXPECT_EQ(0, destroy_pool(self->fd, POOL_C));
	EXPECT_EQ(0, find_pool(self->fd, POOL_B, NULL));
	EXPECT_EQ(0, find_pool(self->fd, POOL_C, NULL));

	/* The id is free again. */
	EXPECT_EQ(0, create_pool(self->fd, POOL_A, page, 0));
}

TEST_F(pool, create_rejects_bad_arguments)
{
	const uint64_t max = module_param("max_pool_mb", 1024) << 20;
	const uint64_t bad_lengths[] = {
		0, 8, 512, page / 2, page - 8, page + 8, page + page / 2,
		max + page, max * 2, 1ULL << 63, UINT64_MAX & ~(page - 1),
		UINT64_MAX,
	};
	struct rpage_pool_create arg;

	EXPECT_EQ(-EINVAL, create_pool(self->fd, 0, page, 0));
	for (size_t i = 0; i < ARRAY_LEN(bad_lengths); i++) {
		EXPECT_EQ(-EINVAL, create_pool(self->fd, POOL_A, bad_lengths[i], 0)) {
			TH_LOG("length %#llx", (unsigned long long)bad_lengths[i]);
		}
	}
	for (int bit = 0; bit < 32; bit++) {
		if ((1U << bit) & RPAGE_POOL_FLAGS_ALL)
			continue;
		EXPECT_EQ(-EINVAL, create_pool(self->fd, POOL_A, page, 1U << bit)) {
			TH_LOG("flag bit %d", bit);
		}
	}
	arg = (struct rpage_pool_create) { .id = POOL_A, .length = page,
					   .reserved0 = 1 };
	EXPECT_EQ(-EINVAL, rpage_pool_create(self->fd, &arg));
	for (int r = 0; r < 4; r++) {
		arg = (struct rpage_pool_create) { .id = POOL_A, .length = page };
		arg.reserved[r] = 1ULL << 40;
		EXPECT_EQ(-EINVAL, rpage_pool_create(self->fd, &arg)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));
	EXPECT_EQ(0, find_pool(self->fd, 0, NULL));
}

TEST_F(pool, duplicate_id_is_eexist)
{
	struct rpage_pool_info info;
	void *mem = map_pages(self, 4, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 4 * page, 0));
	EXPECT_EQ(-EEXIST, create_pool(self->fd, POOL_A, 4 * page, 0));
	EXPECT_EQ(-EEXIST, create_pool(self->fd, POOL_A, 8 * page,
				       RPAGE_POOL_WRITABLE));
	EXPECT_EQ(-EEXIST, export_pool(self->fd, POOL_A, mem, 4 * page, 0));

	/* The same the other way round: a user pool's id is taken too. */
	ASSERT_EQ(0, export_pool(self->fd, POOL_B, mem, 4 * page, 0));
	EXPECT_EQ(-EEXIST, export_pool(self->fd, POOL_B, mem, 4 * page, 0));
	EXPECT_EQ(-EEXIST, create_pool(self->fd, POOL_B, page, 0));

	/* The first ones stay as they were. */
	ASSERT_EQ(1, find_pool(self->fd, POOL_A, &info));
	EXPECT_EQ(4 * page, info.length);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(RPAGE_POOL_KERNEL, info.kind);
	ASSERT_EQ(1, find_pool(self->fd, POOL_B, &info));
	EXPECT_EQ(RPAGE_POOL_USER, info.kind);
}

TEST_F(pool, destroy_unknown_or_bad_is_refused)
{
	struct rpage_pool_destroy arg;
	int ret;

	EXPECT_EQ(-ENOENT, destroy_pool(self->fd, POOL_NONE));
	/* No pool has id 0: either answer will do. */
	ret = destroy_pool(self->fd, 0);
	EXPECT_TRUE(ret == -ENOENT || ret == -EINVAL) {
		TH_LOG("destroy id 0: %d (%s)", ret, strerror(-ret));
	}

	ASSERT_EQ(0, create_pool(self->fd, POOL_A, page, 0));
	for (int r = 0; r < 3; r++) {
		arg = (struct rpage_pool_destroy) { .id = POOL_A };
		arg.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_pool_destroy(self->fd, &arg)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	EXPECT_EQ(1, find_pool(self->fd, POOL_A, NULL));
}

/* RPAGE_IOC_POOL_SET_PEERS and _GET_PEERS: every refusal, nothing changed. */
TEST_F(pool, peers_reject_bad_arguments)
{
	__u32 ids[RPAGE_POOL_MAX_PEERS + 1] = { 0 };
	struct rpage_pool_peers arg;

	NEED_PEER();
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, page, RPAGE_POOL_SCOPED));
	ids[0] = self->peer_id;
	ids[1] = self->peer_id;
	arg = (struct rpage_pool_peers) { .id = POOL_A, .peers = (uintptr_t)ids };
	arg.nr_peers = 2;
	EXPECT_EQ(-EINVAL, rpage_pool_set_peers(self->fd, &arg));	/* twice */
	arg.nr_peers = RPAGE_POOL_MAX_PEERS + 1;
	EXPECT_EQ(-EINVAL, rpage_pool_set_peers(self->fd, &arg));
	arg.nr_peers = 1;
	arg.flags = RPAGE_POOL_PEERS_ANY;
	EXPECT_EQ(-EINVAL, rpage_pool_set_peers(self->fd, &arg));	/* ids too */
	arg.flags = RPAGE_POOL_PEERS_FLAGS_ALL + 1;
	EXPECT_EQ(-EINVAL, rpage_pool_set_peers(self->fd, &arg));
	arg.flags = 0;
	arg.reserved[3] = 1;
	EXPECT_EQ(-EINVAL, rpage_pool_set_peers(self->fd, &arg));
	arg.reserved[3] = 0;
	ids[0] = PEER_ID_NONE;
	EXPECT_EQ(-ENOENT, rpage_pool_set_peers(self->fd, &arg));	/* no peer */
	ids[0] = self->peer_id;
	arg.id = POOL_NONE;
	EXPECT_EQ(-ENOENT, rpage_pool_set_peers(self->fd, &arg));
	arg.id = POOL_A;
	arg.peers = 1;		/* not readable */
	EXPECT_EQ(-EFAULT, rpage_pool_set_peers(self->fd, &arg));

	/* Nothing of it changed the scope: none. */
	arg = (struct rpage_pool_peers) { .id = POOL_A, .peers = (uintptr_t)ids,
					  .nr_peers = 4 };
	ASSERT_EQ(0, rpage_pool_get_peers(self->fd, &arg));
	EXPECT_EQ(0, arg.nr_peers);
	arg.flags = 1;
	EXPECT_EQ(-EINVAL, rpage_pool_get_peers(self->fd, &arg));
	arg.flags = 0;
	arg.id = POOL_NONE;
	EXPECT_EQ(-ENOENT, rpage_pool_get_peers(self->fd, &arg));

	/* And a good one, read back. */
	arg = (struct rpage_pool_peers) { .id = POOL_A, .peers = (uintptr_t)ids,
					  .nr_peers = 1 };
	ASSERT_EQ(0, rpage_pool_set_peers(self->fd, &arg));
	ids[0] = 0;
	arg.nr_peers = 4;
	ASSERT_EQ(0, rpage_pool_get_peers(self->fd, &arg));
	EXPECT_EQ(1, arg.nr_peers);
	EXPECT_EQ(self->peer_id, ids[0]);
}

TEST_F(pool, lists_reject_bad_arguments)
{
	static const struct {
		const char *name;
		int (*fn)(int fd, struct rpage_list *list);
	} lists[] = {
		{ "pool", rpage_pool_list },
		{ "remote pool", rpage_remote_pool_list },
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

TEST_F(pool, pool_list_capacity_bounds_the_copy)
{
	struct rpage_pool_info two[2];
	struct rpage_list list = {
		.entries = (uintptr_t)two, .capacity = 1,
	};

	ASSERT_EQ(0, create_pool(self->fd, POOL_A, page, 0));
	ASSERT_EQ(0, create_pool(self->fd, POOL_B, page, 0));
	memset(two, 0xa5, sizeof(two));
	ASSERT_EQ(0, rpage_pool_list(self->fd, &list));
	EXPECT_LE(2, list.count);
	EXPECT_NE(0xa5a5a5a5a5a5a5a5ULL, two[0].id);
	EXPECT_EQ(0xa5, ((unsigned char *)&two[1])[0]);
}

TEST_F(pool, export_belongs_to_its_file)
{
	struct rpage_pool_info info;
	void *mem = map_pages(self, 8, PROT_READ | PROT_WRITE);
	int other;

	ASSERT_NE(NULL, mem);
	other = open_other();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, export_pool(other, POOL_A, mem, 8 * page, RPAGE_POOL_WRITABLE));

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(1, find_pool(self->fd, POOL_A, &info));
	EXPECT_EQ(8 * page, info.length);
	EXPECT_EQ(RPAGE_POOL_WRITABLE, info.flags);
	EXPECT_EQ(RPAGE_POOL_USER, info.kind);
	EXPECT_EQ(getpid(), (pid_t)info.owner_pid);
	EXPECT_EQ(0, info.reserved0);
	for (int r = 0; r < 4; r++) {
		EXPECT_EQ(0, info.reserved[r]);
	}

	/* Only the exporting file may destroy it, even for root. */
	EXPECT_EQ(-EPERM, destroy_pool(self->fd, POOL_A));
	EXPECT_EQ(1, find_pool(self->fd, POOL_A, NULL));

	/* Closing that file destroys it. */
	close(other);
	EXPECT_EQ(0, wait_pool_gone(self->fd, POOL_A, 5));

	/* The exporting file destroys its own pool like a kernel pool. */
	ASSERT_EQ(0, export_pool(self->fd, POOL_B, mem, 4 * page, 0));
	EXPECT_EQ(0, destroy_pool(self->fd, POOL_B));
	EXPECT_EQ(0, find_pool(self->fd, POOL_B, NULL));

	/* The same memory may be exported again, and twice at once. */
	EXPECT_EQ(0, export_pool(self->fd, POOL_B, mem, 8 * page, 0));
	EXPECT_EQ(0, export_pool(self->fd, POOL_C, mem, 8 * page, 0));
}

TEST_F(pool, export_rejects_bad_arguments)
{
	const uint64_t max = module_param("max_pool_mb", 1024) << 20;
	const uint64_t bad_lengths[] = {
		0, 8, 512, page / 2, page + 8, max + page, 1ULL << 63,
		UINT64_MAX & ~(page - 1),
	};
	unsigned char *mem = map_pages(self, 4, PROT_READ | PROT_WRITE);
	const unsigned char *bad_addrs[] = {
		mem + 1, mem + 8, mem + 512, mem + page / 2, mem + page - 8,
	};
	struct rpage_pool_export arg;

	ASSERT_NE(NULL, mem);
	EXPECT_EQ(-EINVAL, export_pool(self->fd, 0, mem, page, 0));
	for (size_t i = 0; i < ARRAY_LEN(bad_lengths); i++) {
		EXPECT_EQ(-EINVAL, export_pool(self->fd, POOL_A, mem,
					       bad_lengths[i], 0)) {
			TH_LOG("length %#llx", (unsigned long long)bad_lengths[i]);
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(bad_addrs); i++) {
		EXPECT_EQ(-EINVAL, export_pool(self->fd, POOL_A, bad_addrs[i],
					       page, 0)) {
			TH_LOG("addr page + %zu", (size_t)(bad_addrs[i] - mem));
		}
	}
	for (int bit = 0; bit < 32; bit++) {
		if ((1U << bit) & RPAGE_POOL_FLAGS_ALL)
			continue;
		EXPECT_EQ(-EINVAL, export_pool(self->fd, POOL_A, mem, page, 1U << bit)) {
			TH_LOG("flag bit %d", bit);
		}
	}
	arg = (struct rpage_pool_export) { .id = POOL_A, .addr = (uintptr_t)mem,
					   .length = page, .reserved0 = 1 };
	EXPECT_EQ(-EINVAL, rpage_pool_export(self->fd, &arg));
	for (int r = 0; r < 4; r++) {
		arg = (struct rpage_pool_export) { .id = POOL_A,
			.addr = (uintptr_t)mem, .length = page };
		arg.reserved[r] = 1ULL << 40;
		EXPECT_EQ(-EINVAL, rpage_pool_export(self->fd, &arg)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));
}

/* RPAGE_IOC_POOL_FILE of @fd: @pages pages from page @first. */
static int file_pool(int fd, __u64 id, int file, uint64_t first,
		     uint64_t pages, __u32 flags)
{
	struct rpage_pool_file pf = {
		.id = id, .fd = file, .flags = flags,
		.offset = first * page, .length = pages * page,
	};

	return rpage_pool_file(fd, &pf);
}

TEST_F(pool, file_pool_rejects_bad_arguments)
{
	struct rpage_pool_file pf;
	int mem, ro, disk;
	char path[64];

	/* A 4-page memfd, the same opened read-only, and a file on disk. */
	mem = memfd_create("rpage-file-pool", MFD_CLOEXEC);
	ASSERT_LE(0, mem);
	ASSERT_EQ(0, ftruncate(mem, 4 * page));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mem);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	disk = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, disk);

	EXPECT_EQ(-EINVAL, file_pool(self->fd, 0, mem, 0, 1, 0));
	EXPECT_EQ(-EINVAL, file_pool(self->fd, POOL_A, mem, 0, 0, 0));
	/* The lowest flag the module does not know. */
	EXPECT_EQ(-EINVAL, file_pool(self->fd, POOL_A, mem, 0, 1,
				     (RPAGE_POOL_FLAGS_ALL + 1) & ~RPAGE_POOL_FLAGS_ALL));
	pf = (struct rpage_pool_file) { .id = POOL_A, .fd = mem, .offset = 8,
					.length = page };
	EXPECT_EQ(-EINVAL, rpage_pool_file(self->fd, &pf));
	for (int r = 0; r < 4; r++) {
		pf = (struct rpage_pool_file) { .id = POOL_A, .fd = mem,
						.length = page };
		pf.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_pool_file(self->fd, &pf)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	EXPECT_EQ(-EBADF, file_pool(self->fd, POOL_A, -1, 0, 1, 0));
	EXPECT_EQ(-EBADF, file_pool(self->fd, POOL_A, ro, 0, 1,
				    RPAGE_POOL_WRITABLE));
	EXPECT_EQ(-EOPNOTSUPP, file_pool(self->fd, POOL_A, disk, 0, 1, 0));
	EXPECT_EQ(-ERANGE, file_pool(self->fd, POOL_A, mem, 3, 2, 0));
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));

	/* The good one, read-only through a read-only file; then taken. */
	EXPECT_EQ(0, file_pool(self->fd, POOL_A, ro, 1, 3, 0));
	EXPECT_EQ(-EEXIST, file_pool(self->fd, POOL_A, mem, 0, 1, 0));
	EXPECT_EQ(0, destroy_pool(self->fd, POOL_A));
	close(disk);
	close(ro);
	close(mem);
}

TEST_F(pool, export_needs_mapped_memory)
{
	unsigned char *mem = map_pages(self, 4, PROT_READ | PROT_WRITE);
	unsigned char *none = map_pages(self, 2, PROT_NONE);
	unsigned char *ro = map_pages(self, 2, PROT_READ | PROT_WRITE);
	void *gone = unmapped_pages(4);

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, gone);

	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A, NULL, page, 0));
	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A, gone, 4 * page, 0));
	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A,
				       (void *)0xffff888000000000ULL, page, 0));
	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A, none, 2 * page, 0));

	/* Mapped at the start, not at the end. */
	ASSERT_EQ(0, munmap(mem + 2 * page, 2 * page));
	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A, mem, 4 * page, 0));

	/* Read-only memory may be exported, but not writable. */
	memset(ro, 0x5a, 2 * page);
	ASSERT_EQ(0, mprotect(ro, 2 * page, PROT_READ));
	EXPECT_EQ(-EFAULT, export_pool(self->fd, POOL_A, ro, 2 * page,
				       RPAGE_POOL_WRITABLE));
	EXPECT_EQ(0, find_pool(self->fd, POOL_A, NULL));

	/* Nothing was left half-made: the id is free. */
	EXPECT_EQ(0, export_pool(self->fd, POOL_A, ro, 2 * page, 0));
	EXPECT_EQ(0, export_pool(self->fd, POOL_B, mem, 2 * page,
				 RPAGE_POOL_WRITABLE));
}

/* What the unprivileged child found wrong, as bits of its exit code. */
enum {
	CHILD_PRIVS		= 1 << 0,
	CHILD_CREATE		= 1 << 1,
	CHILD_EXPORT		= 1 << 2,
	CHILD_DESTROY		= 1 << 3,
	CHILD_DESTROY_UNKNOWN	= 1 << 4,
	CHILD_LIST		= 1 << 5,
	CHILD_MMAP		= 1 << 6,
};

/*
 * Runs without CAP_SYS_ADMIN on a file root opened and shook hands on:
 * no pool may be made or destroyed through it, but it lists them.
 */
static int unprivileged_child(int fd)
{
	int result = 0;
	void *mem;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return CHILD_PRIVS;
	mem = mmap(NULL, page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return CHILD_MMAP;
	memset(mem, 1, page);

	if (create_pool(fd, POOL_B, page, 0) != -EPERM)
		result |= CHILD_CREATE;
	if (export_pool(fd, POOL_C, mem, page, 0) != -EPERM)
		result |= CHILD_EXPORT;
	if (destroy_pool(fd, POOL_A) != -EPERM)
		result |= CHILD_DESTROY;
	if (destroy_pool(fd, POOL_NONE) != -EPERM)
		result |= CHILD_DESTROY_UNKNOWN;
	if (find_pool(fd, POOL_A, NULL) != 1)
		result |= CHILD_LIST;
	return result;
}

TEST_F(pool, pool_commands_need_cap_sys_admin)
{
	int status, result;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "needs root to drop privileges");
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, page, 0));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(unprivileged_child(self->fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	result = WEXITSTATUS(status);

	EXPECT_EQ(0, result & (CHILD_PRIVS | CHILD_MMAP));
	EXPECT_EQ(0, result & CHILD_CREATE) {
		TH_LOG("pool create without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_EXPORT) {
		TH_LOG("pool export without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_DESTROY) {
		TH_LOG("pool destroy without CAP_SYS_ADMIN did not fail with EPERM");
	}
	EXPECT_EQ(0, result & CHILD_DESTROY_UNKNOWN) {
		TH_LOG("pool destroy of an unknown id without CAP_SYS_ADMIN: not EPERM");
	}
	EXPECT_EQ(0, result & CHILD_LIST) {
		TH_LOG("pool list without CAP_SYS_ADMIN failed or missed pool A");
	}
	/* The child changed nothing. */
	EXPECT_EQ(1, find_pool(self->fd, POOL_A, NULL));
	EXPECT_EQ(0, find_pool(self->fd, POOL_B, NULL));
	EXPECT_EQ(0, find_pool(self->fd, POOL_C, NULL));
}

TEST_F_TIMEOUT(pool, remote_pool_list_shows_our_pools, 180)
{
	struct rpage_remote_pool_info info;
	void *mem = map_pages(self, 4, PROT_READ | PROT_WRITE);
	int other;

	NEED_PEER();
	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 16 * page, RPAGE_POOL_WRITABLE));
	ASSERT_EQ(0, create_pool(self->fd, POOL_B, 8 * page, 0));
	other = open_other();
	ASSERT_LE(0, other);
	ASSERT_EQ(0, export_pool(other, POOL_C, mem, 4 * page, RPAGE_POOL_WRITABLE));

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_A, true, &info));
	EXPECT_STREQ(self->peer, info.peer);
	EXPECT_EQ(self->peer_id, info.peer_id);
	EXPECT_EQ(16 * page, info.length);
	EXPECT_EQ(RPAGE_POOL_WRITABLE, info.flags);
	for (int r = 0; r < 4; r++) {
		EXPECT_EQ(0, info.reserved[r]);
	}
	ASSERT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_B, true, &info));
	EXPECT_EQ(8 * page, info.length);
	EXPECT_EQ(0, info.flags);
	ASSERT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_C, true, &info));
	EXPECT_EQ(4 * page, info.length);
	EXPECT_EQ(RPAGE_POOL_WRITABLE, info.flags);

	/* Destroyed and closed pools leave the peer's list. */
	EXPECT_EQ(0, destroy_pool(self->fd, POOL_A));
	EXPECT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_A, false, NULL));
	close(other);
	EXPECT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_C, false, NULL));
	EXPECT_EQ(1, find_remote_pool(self->fd, self->peer_id, POOL_B, NULL));
}

TEST_F_TIMEOUT(pool, read_of_a_new_kernel_pool_is_zeroes, 120)
{
	unsigned char *buf = map_pages(self, 32, PROT_READ | PROT_WRITE);

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 32 * page, 0));
	NEED_REMOTE_POOL(POOL_A);

	memset(buf, 0xa5, 32 * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, 32 * page, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, 32 * page));

	memset(buf, 0xa5, 32 * page);
	ASSERT_EQ(0, io_pages(self->fd, false, self->peer_id, POOL_A, 0, 32, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, 32 * page));

	/* The last page alone. */
	memset(buf, 0xa5, page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 31 * page, page, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, page));
}

TEST_F_TIMEOUT(pool, write_then_read_back, 120)
{
	const uint64_t pages = 32;
	unsigned char *src = map_pages(self, pages, PROT_READ | PROT_WRITE);
	unsigned char *buf = map_pages(self, pages, PROT_READ | PROT_WRITE);
	struct rpage_iovec iov[32];
	struct rpage_io io = { .iov = (uintptr_t)iov, .nr_iov = pages };
	uint64_t at;

	NEED_PEER();
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, pages * page, RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);

	/* Pages 4 to 11 with seed 1, a vector of one page each. */
	rpage_pattern_fill(src, 8 * page, POOL_A, 4 * page, 1);
	ASSERT_EQ(0, io_pages(self->fd, true, self->peer_id, POOL_A, 4 * page, 8, src));
	/* Pages 20 to 23 with seed 2, one range. */
	rpage_pattern_fill(src, 4 * page, POOL_A, 20 * page, 2);
	ASSERT_EQ(0, io1(self->fd, true, self->peer_id, POOL_A, 20 * page,
			 4 * page, src));

	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, 4 * page));
	at = rpage_pattern_check(buf + 4 * page, 8 * page, POOL_A, 4 * page, 1);
	EXPECT_EQ(UINT64_MAX, at);
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf + 12 * page, 8 * page));
	at = rpage_pattern_check(buf + 20 * page, 4 * page, POOL_A, 20 * page, 2);
	EXPECT_EQ(UINT64_MAX, at);
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf + 24 * page, 8 * page));

	/* The whole pool with seed 3, then read back in reverse page order. */
	rpage_pattern_fill(src, pages * page, POOL_A, 0, 3);
	ASSERT_EQ(0, io1(self->fd, true, self->peer_id, POOL_A, 0, pages * page, src));
	for (uint64_t i = 0; i < pages; i++) {
		iov[i] = (struct rpage_iovec) {
			.peer_id = self->peer_id, .pool_id = POOL_A,
			.offset = (pages - 1 - i) * page, .length = page,
			.addr = (uintptr_t)buf + i * page,
		};
	}
	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, rpage_read(self->fd, &io));
	for (uint64_t i = 0; i < pages; i++) {
		at = rpage_pattern_check(buf + i * page, page, POOL_A,
					 (pages - 1 - i) * page, 3);
		EXPECT_EQ(UINT64_MAX, at) {
			TH_LOG("buffer page %llu", (unsigned long long)i);
		}
	}
}

TEST_F_TIMEOUT(pool, user_pool_read_and_write, 120)
{
	const uint64_t pages = 16;
	unsigned char *mem = map_pages(self, pages, PROT_READ | PROT_WRITE);
	unsigned char *buf = map_pages(self, pages, PROT_READ | PROT_WRITE);
	uint64_t at;

	NEED_PEER();
	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	rpage_pattern_fill(mem, pages * page, POOL_C, 0, 0);
	ASSERT_EQ(0, export_pool(self->fd, POOL_C, mem, pages * page,
				 RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_C);

	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io_pages(self->fd, false, self->peer_id, POOL_C, 0, pages, buf));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(buf, pages * page, POOL_C, 0, 0));

	/* Writing to our own pool through the peer changes our memory. */
	rpage_pattern_fill(buf, 4 * page, POOL_C, 2 * page, 7);
	ASSERT_EQ(0, io1(self->fd, true, self->peer_id, POOL_C, 2 * page,
			 4 * page, buf));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(mem, 2 * page, POOL_C, 0, 0));
	at = rpage_pattern_check(mem + 2 * page, 4 * page, POOL_C, 2 * page, 7);
	EXPECT_EQ(UINT64_MAX, at);
	at = rpage_pattern_check(mem + 6 * page, (pages - 6) * page, POOL_C,
				 6 * page, 0);
	EXPECT_EQ(UINT64_MAX, at);

	/* And a change of our memory is what the next read sees. */
	rpage_pattern_fill(mem + 10 * page, page, POOL_C, 10 * page, 8);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_C, 10 * page, page, buf));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(buf, page, POOL_C, 10 * page, 8));
}

TEST_F_TIMEOUT(pool, export_survives_munmap, 120)
{
	unsigned char *mem, *buf = map_pages(self, 8, PROT_READ | PROT_WRITE);

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	mem = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	rpage_pattern_fill(mem, 8 * page, POOL_D, 0, 0);
	ASSERT_EQ(0, export_pool(self->fd, POOL_D, mem, 8 * page, RPAGE_POOL_WRITABLE));
	/* The pages stay pinned for the pool; the mapping may go. */
	ASSERT_EQ(0, munmap(mem, 8 * page));
	NEED_REMOTE_POOL(POOL_D);

	memset(buf, 0xa5, 8 * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_D, 0, 8 * page, buf));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(buf, 8 * page, POOL_D, 0, 0));
	rpage_pattern_fill(buf, page, POOL_D, 0, 1);
	EXPECT_EQ(0, io1(self->fd, true, self->peer_id, POOL_D, 0, page, buf));
	EXPECT_EQ(0, destroy_pool(self->fd, POOL_D));
}

TEST_F_TIMEOUT(pool, write_to_a_read_only_pool_is_eperm, 120)
{
	unsigned char *mem = map_pages(self, 4, PROT_READ | PROT_WRITE);
	unsigned char *buf = map_pages(self, 4, PROT_READ | PROT_WRITE);

	NEED_PEER();
	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, create_pool(self->fd, POOL_B, 4 * page, 0));
	rpage_pattern_fill(mem, 4 * page, POOL_C, 0, 0);
	ASSERT_EQ(0, export_pool(self->fd, POOL_C, mem, 4 * page, 0));
	NEED_REMOTE_POOL(POOL_B);
	NEED_REMOTE_POOL(POOL_C);

	memset(buf, 0x5a, 4 * page);
	EXPECT_EQ(-EPERM, io1(self->fd, true, self->peer_id, POOL_B, 0, 4 * page, buf));
	EXPECT_EQ(-EPERM, io_pages(self->fd, true, self->peer_id, POOL_B, page, 2, buf));
	EXPECT_EQ(-EPERM, io1(self->fd, true, self->peer_id, POOL_C, 0, page, buf));

	/* Nothing was written. */
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_B, 0, 4 * page, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, 4 * page));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(mem, 4 * page, POOL_C, 0, 0));
}

TEST_F_TIMEOUT(pool, io_beyond_the_pool_is_erange, 120)
{
	const uint64_t top = UINT64_MAX & ~(page - 1);
	const struct { uint64_t offset, length; } bad[] = {
		{ 16 * page, page },		/* just past the end */
		{ 15 * page, 2 * page },	/* across the end */
		{ 0, 17 * page },		/* longer than the pool */
		{ 1ULL << 40, page },
		{ 1ULL << 62, page },
		{ top, page },			/* offset + length wraps */
		{ top - page, 2 * page },	/* ends exactly at 2^64 */
	};
	unsigned char *buf = map_pages(self, 17, PROT_READ | PROT_WRITE);

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 16 * page, RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		for (int w = 0; w < 2; w++) {
			EXPECT_EQ(-ERANGE, io1(self->fd, w, self->peer_id, POOL_A,
					       bad[i].offset, bad[i].length, buf)) {
				TH_LOG("%s offset %#llx length %#llx",
				       w ? "write" : "read",
				       (unsigned long long)bad[i].offset,
				       (unsigned long long)bad[i].length);
			}
		}
	}
	/* A good range first does not make a bad second one pass. */
	EXPECT_EQ(-ERANGE, io_pages(self->fd, false, self->peer_id, POOL_A,
				    14 * page, 3, buf));
	/* The last page is fine. */
	EXPECT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 15 * page, page, buf));
}

TEST_F_TIMEOUT(pool, io_rejects_misalignment, 120)
{
	unsigned char *buf = map_pages(self, 4, PROT_READ | PROT_WRITE);
	const struct { uint64_t offset, length, addr_off; } bad[] = {
		{ 1, page, 0 }, { 8, page, 0 }, { page / 2, page, 0 },
		{ page + 512, page, 0 },
		{ 0, 8, 0 }, { 0, 512, 0 }, { 0, page / 2, 0 },
		{ 0, page + 512, 0 }, { 0, 0, 0 },
		{ 0, page, 1 }, { 0, page, 8 }, { 0, page, page / 2 },
	};
	struct rpage_iovec iov[2];
	struct rpage_io io = { .iov = (uintptr_t)iov, .nr_iov = 2 };

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 4 * page, RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		for (int w = 0; w < 2; w++) {
			EXPECT_EQ(-EINVAL, io1(self->fd, w, self->peer_id, POOL_A,
					       bad[i].offset, bad[i].length,
					       buf + bad[i].addr_off)) {
				TH_LOG("%s offset %#llx length %#llx addr +%#llx",
				       w ? "write" : "read",
				       (unsigned long long)bad[i].offset,
				       (unsigned long long)bad[i].length,
				       (unsigned long long)bad[i].addr_off);
			}
		}
		/* The same as the second range of two. */
		iov[0] = (struct rpage_iovec) {
			.peer_id = self->peer_id, .pool_id = POOL_A,
			.offset = 2 * page, .length = page, .addr = (uintptr_t)buf,
		};
		iov[1] = (struct rpage_iovec) {
			.peer_id = self->peer_id, .pool_id = POOL_A,
			.offset = bad[i].offset, .length = bad[i].length,
			.addr = (uintptr_t)buf + page + bad[i].addr_off,
		};
		EXPECT_EQ(-EINVAL, rpage_read(self->fd, &io)) {
			TH_LOG("second range: offset %#llx length %#llx addr +%#llx",
			       (unsigned long long)bad[i].offset,
			       (unsigned long long)bad[i].length,
			       (unsigned long long)bad[i].addr_off);
		}
	}
}

/* struct rpage_io itself, checked before any range is looked at. */
TEST_F(pool, io_rejects_bad_io_arguments)
{
	unsigned char *buf = map_pages(self, 1, PROT_READ | PROT_WRITE);
	struct rpage_iovec *iov = calloc(RPAGE_IO_MAX_IOV + 1, sizeof(*iov));
	struct rpage_io io;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, iov);
	for (int i = 0; i <= RPAGE_IO_MAX_IOV; i++) {
		iov[i] = (struct rpage_iovec) {
			.peer_id = PEER_ID_NONE, .pool_id = POOL_NONE,
			.length = page, .addr = (uintptr_t)buf,
		};
	}
	for (int w = 0; w < 2; w++) {
		int (*fn)(int, const struct rpage_io *) = w ? rpage_write : rpage_read;

		io = (struct rpage_io) { .iov = (uintptr_t)iov, .nr_iov = 0 };
		EXPECT_EQ(-EINVAL, fn(self->fd, &io));
		io.nr_iov = RPAGE_IO_MAX_IOV + 1;
		EXPECT_EQ(-E2BIG, fn(self->fd, &io));
		io.nr_iov = UINT32_MAX;
		EXPECT_EQ(-E2BIG, fn(self->fd, &io));
		for (int bit = 0; bit < 32; bit++) {
			io = (struct rpage_io) { .iov = (uintptr_t)iov, .nr_iov = 1,
						 .flags = 1U << bit };
			EXPECT_EQ(-EINVAL, fn(self->fd, &io)) {
				TH_LOG("%s: flag bit %d", w ? "write" : "read", bit);
			}
		}
		for (int r = 0; r < 2; r++) {
			io = (struct rpage_io) { .iov = (uintptr_t)iov, .nr_iov = 1 };
			io.reserved[r] = 1;
			EXPECT_EQ(-EINVAL, fn(self->fd, &io)) {
				TH_LOG("%s: reserved[%d] set", w ? "write" : "read", r);
			}
		}
	}
	free(iov);
}

/*
 * Writing a peer's memory takes a file open for writing: a process
 * given /dev/rpage read-only may read pools, not change them.
 */
TEST_F(pool, write_through_a_read_only_file_is_ebadf)
{
	struct rpage_api api = { .api = RPAGE_API };
	unsigned char *buf = map_pages(self, 1, PROT_READ | PROT_WRITE);
	int ro;

	ASSERT_NE(NULL, buf);
	ro = open(RPAGE_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, rpage_api(ro, &api));
	/* Refused before the peer or pool is even looked up. */
	EXPECT_EQ(-EBADF, io1(ro, true, PEER_ID_NONE, POOL_A, 0, page, buf));
	EXPECT_EQ(-ENOENT, io1(ro, false, PEER_ID_NONE, POOL_A, 0, page, buf));
	close(ro);
}

TEST_F(pool, io_bad_iov_pointer_is_efault)
{
	/* Two pages: the second one is unmapped again below. */
	unsigned char *mem = map_pages(self, 2, PROT_READ | PROT_WRITE);
	struct rpage_iovec *last;
	void *gone = unmapped_pages(1);
	const uint64_t bad[] = {
		0, 1, (uintptr_t)gone, 0xffff888000000000ULL, 0xffffffffff600000ULL,
	};
	struct rpage_io io;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, gone);
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		for (int w = 0; w < 2; w++) {
			io = (struct rpage_io) { .iov = bad[i], .nr_iov = 1 };
			EXPECT_EQ(-EFAULT, w ? rpage_write(self->fd, &io) :
				  rpage_read(self->fd, &io)) {
				TH_LOG("%s: iov %#llx", w ? "write" : "read",
				       (unsigned long long)bad[i]);
			}
		}
	}
	/* An array that runs off the end of the mapping. */
	ASSERT_EQ(0, munmap(mem + page, page));
	last = (struct rpage_iovec *)(mem + page) - 1;
	*last = (struct rpage_iovec) {
		.peer_id = PEER_ID_NONE, .pool_id = POOL_NONE, .length = page,
		.addr = (uintptr_t)mem,
	};
	io = (struct rpage_io) { .iov = (uintptr_t)last, .nr_iov = 2 };
	EXPECT_EQ(-EFAULT, rpage_read(self->fd, &io));
	/* (The mapping's teardown munmap of both pages is harmless.) */
}

TEST_F_TIMEOUT(pool, io_rejects_bad_vectors, 120)
{
	const uint64_t pool_pages = 17;
	unsigned char *buf = map_pages(self, pool_pages, PROT_READ | PROT_WRITE);
	struct rpage_iovec *iov = calloc(RPAGE_IO_MAX_IOV, sizeof(*iov));
	struct rpage_io io = { .iov = (uintptr_t)iov };

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, iov);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, pool_pages * page,
				 RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);

	/* A range with its reserved field set. */
	iov[0] = (struct rpage_iovec) {
		.peer_id = self->peer_id, .reserved0 = 1, .pool_id = POOL_A,
		.length = page, .addr = (uintptr_t)buf,
	};
	io.nr_iov = 1;
	EXPECT_EQ(-EINVAL, rpage_read(self->fd, &io));
	EXPECT_EQ(-EINVAL, rpage_write(self->fd, &io));

	/*
	 * More than RPAGE_IO_MAX_BYTES in all, every range good on its own:
	 * RPAGE_IO_MAX_IOV times the whole 17-page pool (into one buffer:
	 * the call must fail before it moves anything).
	 */
	for (int i = 0; i < RPAGE_IO_MAX_IOV; i++) {
		iov[i] = (struct rpage_iovec) {
			.peer_id = self->peer_id, .pool_id = POOL_A,
			.length = pool_pages * page, .addr = (uintptr_t)buf,
		};
	}
	io.nr_iov = RPAGE_IO_MAX_IOV;
	if ((uint64_t)RPAGE_IO_MAX_IOV * pool_pages * page > RPAGE_IO_MAX_BYTES) {
		EXPECT_EQ(-E2BIG, rpage_read(self->fd, &io));
		EXPECT_EQ(-E2BIG, rpage_write(self->fd, &io));
	}

	/* One range longer than RPAGE_IO_MAX_BYTES. */
	iov[0].length = RPAGE_IO_MAX_BYTES + page;
	io.nr_iov = 1;
	EXPECT_EQ(-E2BIG, rpage_read(self->fd, &io));

	/* Two ranges whose lengths add up to 2^64, that is 0 in 64 bits. */
	iov[0].length = 1ULL << 63;
	iov[1].length = 1ULL << 63;
	io.nr_iov = 2;
	EXPECT_EQ(-E2BIG, rpage_read(self->fd, &io));
	EXPECT_EQ(-E2BIG, rpage_write(self->fd, &io));
}

TEST_F_TIMEOUT(pool, io_of_max_iov_ranges, 120)
{
	const uint64_t pool_pages = 16;
	unsigned char *buf = map_pages(self, RPAGE_IO_MAX_IOV, PROT_READ | PROT_WRITE);
	unsigned char *src = map_pages(self, pool_pages, PROT_READ | PROT_WRITE);
	struct rpage_iovec *iov = calloc(RPAGE_IO_MAX_IOV, sizeof(*iov));
	struct rpage_io io = { .iov = (uintptr_t)iov, .nr_iov = RPAGE_IO_MAX_IOV };

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, iov);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, pool_pages * page,
				 RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);
	rpage_pattern_fill(src, pool_pages * page, POOL_A, 0, 5);
	ASSERT_EQ(0, io1(self->fd, true, self->peer_id, POOL_A, 0,
			 pool_pages * page, src));

	/* RPAGE_IO_MAX_IOV one-page ranges, each pool page many times. */
	for (int i = 0; i < RPAGE_IO_MAX_IOV; i++) {
		iov[i] = (struct rpage_iovec) {
			.peer_id = self->peer_id, .pool_id = POOL_A,
			.offset = (uint64_t)(i * 7 % pool_pages) * page,
			.length = page, .addr = (uintptr_t)buf + (uint64_t)i * page,
		};
	}
	memset(buf, 0xa5, (uint64_t)RPAGE_IO_MAX_IOV * page);
	ASSERT_EQ(0, rpage_read(self->fd, &io));
	for (int i = 0; i < RPAGE_IO_MAX_IOV; i++) {
		uint64_t at = rpage_pattern_check(buf + (uint64_t)i * page, page,
						  POOL_A, iov[i].offset, 5);

		ASSERT_EQ(UINT64_MAX, at) {
			TH_LOG("range %d (pool offset %#llx)", i,
			       (unsigned long long)iov[i].offset);
		}
	}
}

TEST_F_TIMEOUT(pool, io_bad_buffer_is_efault, 120)
{
	unsigned char *ro = map_pages(self, 2, PROT_READ | PROT_WRITE);
	unsigned char *none = map_pages(self, 2, PROT_NONE);
	unsigned char *half = map_pages(self, 2, PROT_READ | PROT_WRITE);
	void *gone = unmapped_pages(2);

	NEED_PEER();
	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, half);
	ASSERT_NE(NULL, gone);
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, 4 * page, RPAGE_POOL_WRITABLE));
	NEED_REMOTE_POOL(POOL_A);
	ASSERT_EQ(0, munmap(half + page, page));
	rpage_pattern_fill(ro, 2 * page, POOL_A, 0, 4);
	ASSERT_EQ(0, mprotect(ro, 2 * page, PROT_READ));

	for (int w = 0; w < 2; w++) {
		const char *what = w ? "write" : "read";

		EXPECT_EQ(-EFAULT, io1(self->fd, w, self->peer_id, POOL_A, 0,
				       page, NULL)) {
			TH_LOG("%s: NULL buffer", what);
		}
		EXPECT_EQ(-EFAULT, io1(self->fd, w, self->peer_id, POOL_A, 0,
				       2 * page, gone)) {
			TH_LOG("%s: unmapped buffer", what);
		}
		EXPECT_EQ(-EFAULT, io1(self->fd, w, self->peer_id, POOL_A, 0,
				       2 * page, half)) {
			TH_LOG("%s: buffer unmapped half-way", what);
		}
		EXPECT_EQ(-EFAULT, io1(self->fd, w, self->peer_id, POOL_A, 0,
				       2 * page, none)) {
			TH_LOG("%s: PROT_NONE buffer", what);
		}
		EXPECT_EQ(-EFAULT, io1(self->fd, w, self->peer_id, POOL_A, 0,
				       page, (void *)0xffff888000000000ULL)) {
			TH_LOG("%s: kernel address", what);
		}
	}
	/* A read lands in the buffer: it must be writable... */
	EXPECT_EQ(-EFAULT, io1(self->fd, false, self->peer_id, POOL_A, 0, 2 * page, ro));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(ro, 2 * page, POOL_A, 0, 4));
	/* ...a write only reads it. */
	EXPECT_EQ(0, io1(self->fd, true, self->peer_id, POOL_A, 0, 2 * page, ro));
	EXPECT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, page, half));
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(half, page, POOL_A, 0, 4));
}

TEST_F_TIMEOUT(pool, io_to_unknown_peer_or_pool_is_enoent, 120)
{
	unsigned char *buf = map_pages(self, 1, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, buf);
	for (int w = 0; w < 2; w++) {
		EXPECT_EQ(-ENOENT, io1(self->fd, w, PEER_ID_NONE, POOL_A, 0, page, buf));
		EXPECT_EQ(-ENOENT, io1(self->fd, w, UINT32_MAX, POOL_A, 0, page, buf));
	}

	/* (Not SKIP: that would turn a failure above into a pass.) */
	if (!self->peer) {
		TH_LOG("RPAGE_TEST_PEER is not set: unknown pools not tried");
		return;
	}
	NEED_PEER();
	for (int w = 0; w < 2; w++) {
		EXPECT_EQ(-ENOENT, io1(self->fd, w, self->peer_id, POOL_NONE, 0,
				       page, buf));
		EXPECT_EQ(-ENOENT, io1(self->fd, w, self->peer_id, 0, 0, page, buf));
	}
}

/* Sets the loss timeout of peer @name. */
static void set_loss_timeout(int fd, const char *name, __u32 ms)
{
	struct rpage_peer_set set = {
		.mask = RPAGE_PEER_SET_LOSS_TIMEOUT,
		.loss_timeout_ms = ms,
	};

	strncpy(set.name, name, sizeof(set.name) - 1);
	if (rpage_peer_set(fd, &set))
		fprintf(stderr, "# peer set %s loss-timeout %u failed\n", name, ms);
}

/* The transfers to peer @id lost after its loss timeout; 0 if unknown. */
static __u64 peer_lost(int fd, __u32 id)
{
	struct rpage_peer_status st[16];
	struct rpage_list list = {
		.entries = (uintptr_t)st, .capacity = 16,
	};

	if (rpage_peer_status(fd, &list))
		return 0;
	for (__u32 i = 0; i < list.count && i < 16; i++)
		if (st[i].peer_id == id)
			return st[i].lost;
	return 0;
}

TEST_F_TIMEOUT(pool, io_to_a_peer_not_connected_is_enotconn, 60)
{
	struct rpage_peer_config peer = { .addr = { .family = AF_INET } };
	unsigned char *buf = map_pages(self, 1, PROT_READ | PROT_WRITE);
	__u32 id, id_again, state, self_id;
	uint64_t added = now_ms(), took;

	ASSERT_NE(NULL, buf);
	memcpy(peer.name, PEER_NC, sizeof(PEER_NC));
	inet_pton(AF_INET, UNREACHABLE, peer.addr.addr);
	ASSERT_EQ(0, rpage_peer_add(self->fd, &peer));
	ASSERT_EQ(0, peer_lookup(self->fd, PEER_NC, &id, &state));
	ASSERT_NE(RPAGE_PEER_CONNECTED, state);
	if (self->peer && !peer_lookup(self->fd, self->peer, &self_id, &state)) {
		EXPECT_NE(self_id, id);
	}

	/* With a loss timeout of 0, at once. */
	set_loss_timeout(self->fd, PEER_NC, 0);
	EXPECT_EQ(-ENOTCONN, io1(self->fd, false, id, POOL_A, 0, page, buf));
	EXPECT_EQ(-ENOTCONN, io1(self->fd, true, id, POOL_A, 0, page, buf));

	/* Otherwise once the peer has been unreachable for that long. */
	set_loss_timeout(self->fd, PEER_NC, 3000);
	EXPECT_EQ(-ENOTCONN, io1(self->fd, false, id, POOL_A, 0, page, buf));
	took = now_ms() - added;
	EXPECT_GE(took, 2000);
	EXPECT_LE(took, 10000);
	/* Counted as transfers lost. */
	EXPECT_LE(1, peer_lost(self->fd, id));

	/* A peer's id dies with it and is not given to the next one. */
	del_nc_peer(self->fd);
	EXPECT_EQ(-ENOENT, io1(self->fd, false, id, POOL_A, 0, page, buf));
	ASSERT_EQ(0, rpage_peer_add(self->fd, &peer));
	ASSERT_EQ(0, peer_lookup(self->fd, PEER_NC, &id_again, &state));
	EXPECT_NE(id, id_again);
	EXPECT_EQ(-ENOENT, io1(self->fd, false, id, POOL_A, 0, page, buf));
}

/*
 * A thread that reads a whole pool over and over, until told to stop or
 * until its first failure: the pool is gone then, and a failed transfer
 * (EIO) may have the module rebuild the connection, which later reads
 * would see as ENOTCONN.
 */
struct racer {
	int fd;
	__u32 peer_id;
	__u64 pool_id;
	__u64 pages;
	/* The pattern a successful read must return (pool id and seed). */
	__u64 pattern_id, seed;
	void *buf;
	bool stop;		/* __atomic */
	/* Out. */
	int reads, failed_ret, bad_ret;
	long timeout_ms;
	bool bad_data;
	uint64_t slowest_ms;
};

static void *racer_run(void *arg)
{
	struct racer *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		uint64_t start = now_ms(), took;
		int ret;

		memset(r->buf, 0xa5, r->pages * page);
		ret = io_pages(r->fd, false, r->peer_id, r->pool_id, 0, r->pages,
			       r->buf);
		took = now_ms() - start;
		if (took > r->slowest_ms)
			r->slowest_ms = took;
		if (!ret) {
			r->reads++;
			if (rpage_pattern_check(r->buf, r->pages * page,
						r->pattern_id, 0, r->seed) != UINT64_MAX)
				r->bad_data = true;
		} else if (ret == -EIO || ret == -ENOENT ||
			   (ret == -ETIMEDOUT && took <= r->timeout_ms)) {
			/*
			 * A read caught by the invalidation may also end by
			 * the io timeout (rxe drops a READ whose region goes
			 * away mid-flight): bounded, and the pages are safe.
			 */
			__atomic_store_n(&r->failed_ret, ret, __ATOMIC_RELEASE);
			break;
		} else {
			__atomic_store_n(&r->bad_ret, ret, __ATOMIC_RELEASE);
			break;
		}
	}
	return NULL;
}

/*
 * Starts a racer on pool @id, lets it read for @delay_ms, calls @kill
 * (destroy or close), lets the racer run into the gone pool and joins
 * it, within the io timeout and some.
 */
static int race(struct racer *r, unsigned int delay_ms, uint64_t bound_ms,
		void (*kill)(void *), void *kill_arg)
{
	struct timespec deadline;
	pthread_t thread;
	uint64_t until;
	int ret;

	r->stop = false;
	r->reads = 0;
	r->failed_ret = 0;
	r->bad_ret = 0;
	/* The module's io_timeout_ms, with room for a loaded guest. */
	r->timeout_ms = 2 * rpage_test_io_timeout_ms();
	r->bad_data = false;
	r->slowest_ms = 0;
	if (pthread_create(&thread, NULL, racer_run, r))
		return -EAGAIN;
	sleep_ms(delay_ms);
	kill(kill_arg);
	/* Until the racer sees the pool gone, or a while. */
	until = now_ms() + 2000;
	while (!__atomic_load_n(&r->failed_ret, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&r->bad_ret, __ATOMIC_ACQUIRE) && now_ms() < until)
		sleep_ms(10);
	__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += (time_t)(bound_ms / 1000) + 1;
	ret = pthread_timedjoin_np(thread, NULL, &deadline);
	return ret ? -ret : 0;
}

struct destroy_arg {
	int fd;
	__u64 id;
	int ret;
};

static void kill_by_destroy(void *arg)
{
	struct destroy_arg *d = arg;

	d->ret = destroy_pool(d->fd, d->id);
}

static void kill_by_close(void *arg)
{
	struct destroy_arg *d = arg;

	d->ret = close(d->fd) ? -errno : 0;
}

TEST_F_TIMEOUT(pool, read_racing_with_destroy, 600)
{
	const uint64_t pages = 1024;
	const uint64_t bound_ms = module_param("io_timeout_ms", 10000) + 10000;
	static const unsigned int delays_ms[] = { 0, 1, 5, 20, 100 };
	unsigned char *src = map_pages(self, pages, PROT_READ | PROT_WRITE);
	unsigned char *buf = map_pages(self, pages, PROT_READ | PROT_WRITE);
	struct racer r = {
		.fd = self->fd, .pool_id = POOL_A, .pages = pages,
		.pattern_id = POOL_A, .buf = buf,
	};
	struct destroy_arg d = { .fd = self->fd, .id = POOL_A };

	NEED_PEER();
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, buf);
	r.peer_id = self->peer_id;

	for (size_t round = 0; round < ARRAY_LEN(delays_ms); round++) {
		/*
		 * A fresh pool each round, with data of its own: a read that
		 * succeeds after the destroy but returns anything else came
		 * from memory that was freed.
		 */
		r.seed = round + 1;
		ASSERT_EQ(0, create_pool(self->fd, POOL_A, pages * page,
					 RPAGE_POOL_WRITABLE));
		NEED_REMOTE_POOL(POOL_A);
		rpage_pattern_fill(src, pages * page, POOL_A, 0, r.seed);
		ASSERT_EQ(0, io1(self->fd, true, self->peer_id, POOL_A, 0,
				 pages * page, src));

		ASSERT_EQ(0, race(&r, delays_ms[round], bound_ms, kill_by_destroy, &d)) {
			TH_LOG("round %zu: the reader did not return within %llu ms",
			       round, (unsigned long long)bound_ms);
		}
		EXPECT_EQ(0, d.ret);
		EXPECT_EQ(0, r.bad_ret) {
			TH_LOG("round %zu: a read failed with %d (%s), want EIO, ENOENT or a bounded ETIMEDOUT",
			       round, r.bad_ret, strerror(-r.bad_ret));
		}
		EXPECT_FALSE(r.bad_data) {
			TH_LOG("round %zu: a read returned wrong data", round);
		}
		EXPECT_GE(bound_ms, r.slowest_ms);
		TH_LOG("round %zu (%u ms): %d reads, then %s, slowest %llu ms",
		       round, delays_ms[round], r.reads,
		       r.failed_ret ? strerror(-r.failed_ret) : "no failure",
		       (unsigned long long)r.slowest_ms);
		/* After an EIO the connection may be rebuilt: wait for it. */
		ASSERT_EQ(0, wait_peer_connected(self->fd, self->peer, &self->peer_id));

		/* The pool is gone for the peer, within a while. */
		EXPECT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_A,
					      false, NULL));
		EXPECT_EQ(-ENOENT, io1(self->fd, false, self->peer_id, POOL_A,
				       0, page, buf));
	}

	/* The id made again is a new, zeroed pool. */
	ASSERT_EQ(0, create_pool(self->fd, POOL_A, pages * page, 0));
	NEED_REMOTE_POOL(POOL_A);
	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(UINT64_MAX, first_nonzero(buf, pages * page));
}

TEST_F_TIMEOUT(pool, read_racing_with_close_of_the_exporter, 400)
{
	const uint64_t pages = 1024;
	const uint64_t bound_ms = module_param("io_timeout_ms", 10000) + 10000;
	static const unsigned int delays_ms[] = { 0, 5, 50 };
	unsigned char *mem = map_pages(self, pages, PROT_READ | PROT_WRITE);
	unsigned char *buf = map_pages(self, pages, PROT_READ | PROT_WRITE);
	struct racer r = {
		.fd = self->fd, .pool_id = POOL_C, .pages = pages,
		.pattern_id = POOL_C, .buf = buf,
	};
	struct destroy_arg d = { .id = POOL_C };

	NEED_PEER();
	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	r.peer_id = self->peer_id;
	rpage_pattern_fill(mem, pages * page, POOL_C, 0, 0);

	for (size_t round = 0; round < ARRAY_LEN(delays_ms); round++) {
		d.fd = open_other();
		ASSERT_LE(0, d.fd);
		ASSERT_EQ(0, export_pool(d.fd, POOL_C, mem, pages * page, 0));
		NEED_REMOTE_POOL(POOL_C);

		ASSERT_EQ(0, race(&r, delays_ms[round], bound_ms, kill_by_close, &d)) {
			TH_LOG("round %zu: the reader did not return within %llu ms",
			       round, (unsigned long long)bound_ms);
		}
		EXPECT_EQ(0, d.ret);
		EXPECT_EQ(0, r.bad_ret) {
			TH_LOG("round %zu: a read failed with %d (%s), want EIO, ENOENT or a bounded ETIMEDOUT",
			       round, r.bad_ret, strerror(-r.bad_ret));
		}
		EXPECT_FALSE(r.bad_data);
		EXPECT_GE(bound_ms, r.slowest_ms);
		TH_LOG("round %zu (%u ms): %d reads, then %s, slowest %llu ms",
		       round, delays_ms[round], r.reads,
		       r.failed_ret ? strerror(-r.failed_ret) : "no failure",
		       (unsigned long long)r.slowest_ms);
		/* After an EIO the connection may be rebuilt: wait for it. */
		ASSERT_EQ(0, wait_peer_connected(self->fd, self->peer, &self->peer_id));
		EXPECT_EQ(0, wait_pool_gone(self->fd, POOL_C, 5));
		EXPECT_EQ(0, wait_remote_pool(self->fd, self->peer_id, POOL_C,
					      false, NULL));
	}
	/* Our memory is ours again, untouched. */
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(mem, pages * page, POOL_C, 0, 0));
}

TEST_HARNESS_MAIN
