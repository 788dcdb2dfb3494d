// SPDX-License-Identifier: GPL-2.0
/*
 * Remote mappings of /dev/rpage: RPAGE_IOC_MAP, _UNMAP, _PREFETCH,
 * _EVICT, _MAP_STATS and _PEER_FAULT_STATS probed with deliberately bad
 * arguments, mmap(2) of them refused where it must be, and the page
 * faults, prefetches and evictions one host can show on its own: it maps
 * kernel pools of its own through a peer that is this very host,
 * connected over loopback.
 *
 * Needs rpage.ko loaded and root. Every test but the handshake one needs
 * the harness to have added an endpoint and a peer for this host, named
 * by RPAGE_TEST_PEER; without it they are skipped.
 *
 * Pools have ids from POOL_FIRST to POOL_LAST, and the teardown destroys
 * all of them (and the setup the leftovers of a killed run); mappings go
 * with the files they were made through, which the test process closes
 * when it ends.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rpage_test.h"
#include "rpage_pattern.h"

/* Pool ids no real configuration (nor rpage_pool_test) uses. */
#define POOL_FIRST	0x7e580001ULL
#define POOL_A		(POOL_FIRST + 0)
#define POOL_B		(POOL_FIRST + 1)
#define POOL_LAST	0x7e580010ULL
/* Never created. */
#define POOL_NONE	0x7e5800ffULL

/* A peer id no peer has (ids are handed out from small numbers up). */
#define PEER_ID_NONE	0xffffffU
/* And a mapping id no mapping has. */
#define MAP_ID_NONE	(UINT64_MAX - 1)

/* The pattern the tests write into their pools, and a second one. */
#define SEED		0x5eed
#define SEED2		0x5eee

static uint64_t page;

FIXTURE(map) {
	int fd;
	/* RPAGE_TEST_PEER and its id, once NEED_PEER() found it. */
	const char *peer;
	__u32 peer_id;
	/* NEED_AREA()'s mapping, its area, and the peer's counters then. */
	struct rpage_map m;
	unsigned char *addr;
	struct rpage_stats before;
};

FIXTURE_SETUP(map)
{
	page = rpage_test_page_size();
	self->fd = rpage_test_open();
	ASSERT_LE(0, self->fd) {
		TH_LOG("open %s and handshake: %s", RPAGE_DEVICE_PATH,
		       strerror(-self->fd));
	}
	/* Leftovers of a run that was killed. */
	for (__u64 id = POOL_FIRST; id <= POOL_LAST; id++)
		destroy_pool(self->fd, id);
	self->peer = rpage_test_peer_name();
}

FIXTURE_TEARDOWN(map)
{
	for (__u64 id = POOL_FIRST; id <= POOL_LAST; id++)
		destroy_pool(self->fd, id);
	close(self->fd);
}

/*
 * Kernel pool @id of @pages pages, seen through the peer; a writable one
 * is filled with the pattern of SEED, a read-only one stays zeroed.
 */
static void make_pool(struct __test_metadata *_metadata,
		      FIXTURE_DATA(map) *self, __u64 id, uint64_t pages,
		      __u32 flags)
{
	unsigned char *buf;

	ASSERT_GE(RPAGE_IO_MAX_BYTES, pages * page);
	ASSERT_EQ(0, create_pool(self->fd, id, pages * page, flags));
	NEED_REMOTE_POOL(id);
	if (!(flags & RPAGE_POOL_WRITABLE))
		return;
	/* Reads and writes want page-aligned buffers. */
	buf = aligned_alloc(page, pages * page);
	ASSERT_NE(NULL, buf);
	rpage_pattern_fill(buf, pages * page, id, 0, SEED);
	ASSERT_EQ(0, io1(self->fd, true, self->peer_id, id, 0, pages * page, buf));
	free(buf);
}

/*
 * Maps bytes [@offset, @offset + @length) of pool @id through @fd and
 * the whole mapping into memory (*@m: the mapping); its address.
 */
static unsigned char *map_area(struct __test_metadata *_metadata,
			       FIXTURE_DATA(map) *self, int fd, __u64 id,
			       uint64_t offset, uint64_t length, __u32 flags,
			       struct rpage_map *m)
{
	void *addr = NULL;
	int ret;

	*m = (struct rpage_map) {
		.peer_id = self->peer_id, .flags = flags, .pool_id = id,
		.offset = offset, .length = length,
	};
	ret = rpage_map(fd, m, &addr);
	ASSERT_EQ(0, ret) {
		TH_LOG("map pool %#llx offset %#llx length %#llx: %s",
		       (unsigned long long)id, (unsigned long long)offset,
		       (unsigned long long)length, strerror(-ret));
	}
	EXPECT_NE(0, m->map_id);
	EXPECT_EQ(0, m->mmap_offset % page);
	return addr;
}

/*
 * What most tests start from: pool POOL_A of @pages pages holding the
 * pattern of SEED, all of it mapped with @flags (*@m) through the
 * fixture's file; the area's address.
 */
static unsigned char *pattern_area(struct __test_metadata *_metadata,
				   FIXTURE_DATA(map) *self, uint64_t pages,
				   __u32 flags, struct rpage_map *m)
{
	make_pool(_metadata, self, POOL_A, pages, RPAGE_POOL_WRITABLE);
	return map_area(_metadata, self, self->fd, POOL_A, 0, pages * page,
			flags, m);
}

/*
 * Touches pages [@first, @first + @n) of the area at @addr that maps
 * pool @id from pool offset @pool_offset, checking every word against
 * the pattern of @seed: the pool offset of the first that differs, or
 * UINT64_MAX.
 */
static uint64_t check_pages(const unsigned char *addr, __u64 id,
			    uint64_t pool_offset, uint64_t first, uint64_t n,
			    uint64_t seed)
{
	return rpage_pattern_check(addr + first * page, n * page, id,
				   pool_offset + first * page, seed);
}

/*
 * Where the first 64 pages at @addr (of pool POOL_A from its start: a
 * mapping, or a copy read from the pool) differ from what the eviction
 * tests leave in it: the pattern of SEED, but pages 8 to 23 that of
 * SEED2. The pool offset of the first difference, or UINT64_MAX.
 */
static uint64_t check_rewritten(const unsigned char *addr)
{
	uint64_t bad = check_pages(addr, POOL_A, 0, 0, 8, SEED);

	if (bad == UINT64_MAX)
		bad = check_pages(addr, POOL_A, 0, 8, 16, SEED2);
	if (bad == UINT64_MAX)
		bad = check_pages(addr, POOL_A, 0, 24, 40, SEED);
	return bad;
}

static struct rpage_fault_stats map_stats(struct __test_metadata *_metadata,
					  int fd, __u64 map_id)
{
	struct rpage_map_stats arg = { .map_id = map_id };

	ASSERT_EQ(0, rpage_map_stats(fd, &arg));
	return arg.stats;
}

/* The counters of the peer that is this host. */
static struct rpage_stats peer_counters(struct __test_metadata *_metadata,
					FIXTURE_DATA(map) *self)
{
	struct rpage_stats st;

	ASSERT_EQ(0, peer_stats(self->fd, self->peer_id, &st));
	return st;
}

/*
 * What most tests start from: the peer, pool POOL_A of @pages pages
 * holding the pattern of SEED, all of it mapped with @flags through the
 * fixture's file (self->m, at self->addr), and the peer's counters from
 * then in self->before.
 */
#define NEED_AREA(pages, flags) do { \
	NEED_PEER(); \
	self->addr = pattern_area(_metadata, self, (pages), (flags), &self->m); \
	self->before = peer_counters(_metadata, self); \
} while (0)

/* The counters of NEED_AREA()'s mapping. */
static struct rpage_fault_stats area_stats(struct __test_metadata *_metadata,
					   FIXTURE_DATA(map) *self)
{
	return map_stats(_metadata, self->fd, self->m.map_id);
}

/* The peer's READs since NEED_AREA(). */
static uint64_t reads_since(struct __test_metadata *_metadata,
			    FIXTURE_DATA(map) *self)
{
	return peer_counters(_metadata, self).reads - self->before.reads;
}

static uint64_t hist_sum(const __u64 *hist)
{
	uint64_t sum = 0;

	for (int i = 0; i < RPAGE_HIST_BUCKETS; i++)
		sum += hist[i];
	return sum;
}

static void *anon(uint64_t pages)
{
	void *mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return mem == MAP_FAILED ? NULL : mem;
}

/* The errno of an mmap(2) of @fd that must fail, 0 if it did not. */
static int mmap_errno(int fd, uint64_t offset, uint64_t length, int flags)
{
	void *mem = mmap(NULL, length, PROT_READ | PROT_WRITE, flags, fd,
			 (off_t)offset);

	if (mem != MAP_FAILED) {
		munmap(mem, length);
		return 0;
	}
	return errno;
}

/* The commands on a range: one struct each, built by range_call(). */
enum op { OP_MAP, OP_PREFETCH, OP_EVICT };

static const char *const op_names[] = { "map", "prefetch", "evict" };

struct range_call {
	enum op op;
	__u32 peer_id;		/* OP_MAP */
	__u64 id;		/* the pool for OP_MAP, else the mapping */
	__u64 offset, length;
	__u32 flags, depth;	/* depth: OP_PREFETCH */
	/* A reserved word to set: reserved[0..3], 4 for reserved0; or -1. */
	int reserved;
};

static int range_call(int fd, const struct range_call *c)
{
	struct rpage_map map = {
		.peer_id = c->peer_id, .flags = c->flags, .pool_id = c->id,
		.offset = c->offset, .length = c->length,
	};
	struct rpage_prefetch pf = {
		.map_id = c->id, .flags = c->flags, .depth = c->depth,
		.offset = c->offset, .length = c->length,
	};
	struct rpage_evict ev = {
		.map_id = c->id, .flags = c->flags, .offset = c->offset,
		.length = c->length,
	};
	__u64 *reserved[] = { map.reserved, pf.reserved, ev.reserved };

	if (c->reserved == 4)
		ev.reserved0 = 1;
	else if (c->reserved >= 0)
		reserved[c->op][c->reserved] = 1ULL << 33;
	switch (c->op) {
	case OP_MAP:
		return rpage_map_create(fd, &map);
	case OP_PREFETCH:
		return rpage_map_prefetch(fd, &pf);
	case OP_EVICT:
		return rpage_map_evict(fd, &ev);
	}
	return -ENOSYS;
}

/*
 * @good with every flag bit @op does not know, and each of its reserved
 * words, set in turn: all EINVAL.
 */
static void expect_bad_flags_and_reserved(struct __test_metadata *_metadata,
					  int fd, const struct range_call *good)
{
	static const __u32 known[] = {
		[OP_MAP] = RPAGE_MAP_FLAGS_ALL,
		[OP_PREFETCH] = RPAGE_PREFETCH_FLAGS_ALL,
		[OP_EVICT] = 0,
	};
	struct range_call c;

	for (int bit = 0; bit < 32; bit++) {
		if (known[good->op] & (1U << bit))
			continue;
		c = *good;
		c.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, range_call(fd, &c)) {
			TH_LOG("%s: flag bit %d", op_names[good->op], bit);
		}
	}
	for (int r = 0; r <= (good->op == OP_EVICT ? 4 : 3); r++) {
		c = *good;
		c.reserved = r;
		EXPECT_EQ(-EINVAL, range_call(fd, &c)) {
			TH_LOG("%s: reserved word %d set (4: reserved0)",
			       op_names[good->op], r);
		}
	}
}

/*
 * @good on ranges of an object of @size bytes: misaligned or empty ones
 * EINVAL, ones beyond its end (or around 2^64) ERANGE.
 */
static void expect_bad_ranges(struct __test_metadata *_metadata, int fd,
			      const struct range_call *good, uint64_t size)
{
	const uint64_t top = UINT64_MAX & ~(page - 1);
	const struct { uint64_t offset, length; int err; } bad[] = {
		{ 1, page, EINVAL }, { 8, page, EINVAL },
		{ page / 2, page, EINVAL }, { page + 512, page, EINVAL },
		{ 0, 8, EINVAL }, { 0, page / 2, EINVAL },
		{ 0, page + 8, EINVAL }, { 0, 0, EINVAL },
		{ size, page, ERANGE },			/* just past the end */
		{ size - page, 2 * page, ERANGE },	/* across the end */
		{ 0, size + page, ERANGE },		/* longer than it */
		{ 1ULL << 40, page, ERANGE },
		{ top, page, ERANGE },			/* offset + length wraps */
		{ top - page, 2 * page, ERANGE },	/* ends exactly at 2^64 */
	};
	struct range_call c;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		c = *good;
		c.offset = bad[i].offset;
		c.length = bad[i].length;
		EXPECT_EQ(-bad[i].err, range_call(fd, &c)) {
			TH_LOG("%s: offset %#llx length %#llx", op_names[c.op],
			       (unsigned long long)c.offset,
			       (unsigned long long)c.length);
		}
	}
}

TEST_F(map, commands_need_the_handshake_first)
{
	struct rpage_map_stats st = { .map_id = 1 };
	struct rpage_unmap unmap = { .map_id = 1 };
	struct rpage_list list = { 0 };
	struct range_call c = { .peer_id = 1, .id = 1, .length = page,
				.reserved = -1 };
	int fd = rpage_open(0);

	ASSERT_LE(0, fd);
	for (c.op = OP_MAP; c.op <= OP_EVICT; c.op++) {
		EXPECT_EQ(-EINVAL, range_call(fd, &c)) {
			TH_LOG("%s", op_names[c.op]);
		}
	}
	EXPECT_EQ(-EINVAL, rpage_map_destroy(fd, &unmap));
	EXPECT_EQ(-EINVAL, rpage_map_stats(fd, &st));
	EXPECT_EQ(-EINVAL, rpage_peer_fault_stats(fd, &list));
	EXPECT_EQ(EINVAL, mmap_errno(fd, 0, page, MAP_SHARED));
	close(fd);
}

TEST_F_TIMEOUT(map, map_rejects_bad_arguments, 120)
{
	const uint64_t size = 16 * page;
	struct range_call good = { .op = OP_MAP, .id = POOL_A, .length = size,
				   .reserved = -1 }, c;
	struct rpage_map m = { 0 };
	int ret;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 16, RPAGE_POOL_WRITABLE);
	good.peer_id = self->peer_id;

	expect_bad_flags_and_reserved(_metadata, self->fd, &good);
	expect_bad_ranges(_metadata, self->fd, &good, size);

	c = good;
	c.peer_id = PEER_ID_NONE;
	EXPECT_EQ(-ENOENT, range_call(self->fd, &c));
	c.peer_id = UINT32_MAX;
	EXPECT_EQ(-ENOENT, range_call(self->fd, &c));
	c = good;
	c.id = POOL_NONE;
	EXPECT_EQ(-ENOENT, range_call(self->fd, &c));
	/* More than any mapping may cover: too long, or beyond the pool. */
	c = good;
	c.length = RPAGE_MAP_MAX_BYTES + page;
	ret = range_call(self->fd, &c);
	EXPECT_EQ(-E2BIG, ret) {
		TH_LOG("length beyond RPAGE_MAP_MAX_BYTES: %d (%s)", ret,
		       strerror(-ret));
	}

	/* The good one, and its last page alone, are fine. */
	EXPECT_EQ(0, range_call(self->fd, &good));
	m = (struct rpage_map) { .peer_id = self->peer_id, .pool_id = POOL_A,
				 .offset = size - page, .length = page };
	EXPECT_EQ(0, rpage_map_create(self->fd, &m));
	EXPECT_NE(0, m.map_id);
}

/*
 * RPAGE_MAP_TO_END: the mapping runs to the pool's end, its length
 * written back, through RPAGE_IOC_MAP and RPAGE_IOC_MAP_ADD alike; the
 * flag is not the mapping's (map info shows what it is); a length with
 * it, an offset not in the pool, an unknown pool are refused.
 */
TEST_F_TIMEOUT(map, map_to_end_takes_the_pools_length, 120)
{
	struct rpage_map m;
	struct rpage_map_add add;
	struct rpage_map_del del = { 0 };
	struct rpage_map_info *infos = NULL;
	unsigned char *addr;
	bool seen = false;
	int n;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 16, RPAGE_POOL_WRITABLE);
	addr = map_area(_metadata, self, self->fd, POOL_A, 4 * page, 0,
			RPAGE_MAP_TO_END, &m);
	EXPECT_EQ(12 * page, m.length);
	EXPECT_EQ(UINT64_MAX, check_pages(addr, POOL_A, 4 * page, 0, 12, SEED));
	EXPECT_EQ(0, rpage_unmap(self->fd, &m, addr));

	m = (struct rpage_map) { .peer_id = self->peer_id, .pool_id = POOL_A,
				 .flags = RPAGE_MAP_TO_END, .length = page };
	EXPECT_EQ(-EINVAL, rpage_map_create(self->fd, &m));
	m.length = 0;
	m.offset = 1;
	EXPECT_EQ(-EINVAL, rpage_map_create(self->fd, &m));
	m.offset = 16 * page;
	EXPECT_EQ(-ERANGE, rpage_map_create(self->fd, &m));
	m.offset = 0;
	m.pool_id = POOL_NONE;
	EXPECT_EQ(-ENOENT, rpage_map_create(self->fd, &m));

	add = (struct rpage_map_add) { .peer_id = self->peer_id,
				       .flags = RPAGE_MAP_TO_END,
				       .pool_id = POOL_A, .offset = 15 * page,
				       .mode = 0600 };
	strcpy(add.name, "t-to-end");
	strcpy(del.name, "t-to-end");
	rpage_map_del(self->fd, &del);
	ASSERT_EQ(0, rpage_map_add(self->fd, &add));
	EXPECT_EQ(page, add.length);
	EXPECT_NE(0, add.map_id);
	n = rpage_list_all(self->fd, rpage_map_list, sizeof(*infos),
			   (void **)&infos);
	for (int i = 0; i < n; i++) {
		if (strcmp(infos[i].name, "t-to-end"))
			continue;
		seen = true;
		EXPECT_EQ(page, infos[i].length);
		EXPECT_EQ(0, infos[i].flags);
	}
	EXPECT_TRUE(seen);
	free(infos);
	EXPECT_EQ(0, rpage_map_del(self->fd, &del));
}

TEST_F_TIMEOUT(map, mmap_refusals, 120)
{
	struct rpage_map m, m_other;
	unsigned char *part;
	int other;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 16, RPAGE_POOL_WRITABLE);
	other = rpage_test_open();
	ASSERT_LE(0, other);
	map_area(_metadata, self, other, POOL_A, 0, 16 * page, 0, &m_other);

	/* Before this file has a mapping of its own: the other file's. */
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m_other.mmap_offset, page,
				     MAP_SHARED));

	/* Pages 4 to 11 of the pool. */
	m = (struct rpage_map) { .peer_id = self->peer_id, .pool_id = POOL_A,
				 .offset = 4 * page, .length = 8 * page };
	ASSERT_EQ(0, rpage_map_create(self->fd, &m));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset, 8 * page,
				     MAP_PRIVATE));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset, 9 * page,
				     MAP_SHARED));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset + page, 8 * page,
				     MAP_SHARED));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset + 8 * page, page,
				     MAP_SHARED));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset + (1ULL << 40),
				     page, MAP_SHARED));

	/* A part of the mapping may be mapped at its offset in it. */
	part = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED,
		    self->fd, (off_t)(m.mmap_offset + 2 * page));
	ASSERT_NE(MAP_FAILED, part);
	EXPECT_EQ(UINT64_MAX, check_pages(part, POOL_A, 6 * page, 0, 3, SEED));
	EXPECT_EQ(3, map_stats(_metadata, self->fd, m.map_id).faults);
}

/* Inodes in memory (the first figure of /proc/sys/fs/inode-nr). */
static long nr_inodes(struct __test_metadata *_metadata)
{
	FILE *f = fopen("/proc/sys/fs/inode-nr", "r");
	long nr = -1;

	ASSERT_NE(NULL, f);
	EXPECT_EQ(1, fscanf(f, "%ld", &nr));
	fclose(f);
	return nr;
}

/*
 * A writable pool's mapping has an inode on the inode hash (writeback
 * finds only hashed inodes), and it leaves the hash when the mapping
 * goes. It once left still marked hashed (inode_fake_hash()), so the
 * next inode made in its memory, a pipe's here, looked hashed too, and
 * was never freed: inodes in memory grew by about one per mapping made
 * and deleted (kmemleak listed pipe inodes nothing referenced).
 */
TEST_F_TIMEOUT(map, deleted_mappings_leave_no_inode_behind, 120)
{
	const int rounds = 512;
	struct rpage_unmap unmap;
	struct rpage_map m;
	long before, after;
	int p[2];

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 4, RPAGE_POOL_WRITABLE);
	before = nr_inodes(_metadata);
	for (int i = 0; i < rounds; i++) {
		m = (struct rpage_map) { .peer_id = self->peer_id,
					 .pool_id = POOL_A, .length = 4 * page };
		ASSERT_EQ(0, rpage_map_create(self->fd, &m));
		unmap = (struct rpage_unmap) { .map_id = m.map_id };
		ASSERT_EQ(0, rpage_map_destroy(self->fd, &unmap));
		/* Inodes freed a grace period later: pipes take their memory. */
		for (int j = 0; j < 4; j++) {
			ASSERT_EQ(0, pipe(p));
			close(p[0]);
			close(p[1]);
		}
		if (i % 64 == 63)
			usleep(20000);
	}
	after = nr_inodes(_metadata);
	TH_LOG("%d writable mappings made and deleted: inodes in memory %ld -> %ld",
	       rounds, before, after);
	EXPECT_GT(rounds / 16, after - before);
}

TEST_F_TIMEOUT(map, unmap_refusals, 120)
{
	struct rpage_unmap unmap;
	struct rpage_map_stats st;
	struct rpage_map m, m_other;
	int other, ret;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 4, RPAGE_POOL_WRITABLE);
	other = rpage_test_open();
	ASSERT_LE(0, other);
	map_area(_metadata, self, other, POOL_A, 0, 4 * page, 0, &m_other);

	/* Another file's mapping is no mapping of this one. */
	unmap = (struct rpage_unmap) { .map_id = m_other.map_id };
	EXPECT_EQ(-ENOENT, rpage_map_destroy(self->fd, &unmap));
	st = (struct rpage_map_stats) { .map_id = m_other.map_id };
	EXPECT_EQ(-ENOENT, rpage_map_stats(self->fd, &st));
	st = (struct rpage_map_stats) { .map_id = m_other.map_id };
	EXPECT_EQ(0, rpage_map_stats(other, &st));

	m = (struct rpage_map) { .peer_id = self->peer_id, .pool_id = POOL_A,
				 .length = 4 * page };
	ASSERT_EQ(0, rpage_map_create(self->fd, &m));
	unmap = (struct rpage_unmap) { .map_id = m.map_id + 1000 };
	EXPECT_EQ(-ENOENT, rpage_map_destroy(self->fd, &unmap));
	unmap = (struct rpage_unmap) { .map_id = UINT64_MAX };
	EXPECT_EQ(-ENOENT, rpage_map_destroy(self->fd, &unmap));
	/* No mapping has id 0: either answer will do. */
	unmap = (struct rpage_unmap) { .map_id = 0 };
	ret = rpage_map_destroy(self->fd, &unmap);
	EXPECT_TRUE(ret == -ENOENT || ret == -EINVAL) {
		TH_LOG("unmap id 0: %d (%s)", ret, strerror(-ret));
	}
	for (int r = 0; r < 3; r++) {
		unmap = (struct rpage_unmap) { .map_id = m.map_id };
		unmap.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_map_destroy(self->fd, &unmap)) {
			TH_LOG("reserved[%d] set", r);
		}
	}

	/* All that left it in place; then it goes, once. */
	st = (struct rpage_map_stats) { .map_id = m.map_id };
	EXPECT_EQ(0, rpage_map_stats(self->fd, &st));
	unmap = (struct rpage_unmap) { .map_id = m.map_id };
	EXPECT_EQ(0, rpage_map_destroy(self->fd, &unmap));
	EXPECT_EQ(-ENOENT, rpage_map_destroy(self->fd, &unmap));
	EXPECT_EQ(-ENOENT, rpage_map_stats(self->fd, &st));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, m.mmap_offset, page, MAP_SHARED));
	/* The other file's is still there. */
	st = (struct rpage_map_stats) { .map_id = m_other.map_id };
	EXPECT_EQ(0, rpage_map_stats(other, &st));
}

TEST_F_TIMEOUT(map, prefetch_and_evict_reject_bad_arguments, 120)
{
	const uint64_t size = 8 * page;
	struct range_call good = { .length = size, .reserved = -1 }, c;
	struct rpage_fault_stats st;
	struct rpage_map m, m_other;
	int other;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 16, RPAGE_POOL_WRITABLE);
	map_area(_metadata, self, self->fd, POOL_A, 4 * page, size, 0, &m);
	other = rpage_test_open();
	ASSERT_LE(0, other);
	m_other = (struct rpage_map) { .peer_id = self->peer_id,
				       .pool_id = POOL_A, .length = size };
	ASSERT_EQ(0, rpage_map_create(other, &m_other));

	for (good.op = OP_PREFETCH; good.op <= OP_EVICT; good.op++) {
		good.id = m.map_id;
		expect_bad_flags_and_reserved(_metadata, self->fd, &good);
		expect_bad_ranges(_metadata, self->fd, &good, size);
		c = good;
		c.id = m.map_id + 1000;
		EXPECT_EQ(-ENOENT, range_call(self->fd, &c));
		c.id = UINT64_MAX;
		EXPECT_EQ(-ENOENT, range_call(self->fd, &c));
		/* Unless the ids of the two files happen to agree. */
		c.id = m_other.map_id;
		if (c.id != m.map_id) {
			EXPECT_EQ(-ENOENT, range_call(self->fd, &c)) {
				TH_LOG("%s: the other file's mapping", op_names[c.op]);
			}
		}
	}
	c = good;
	c.op = OP_PREFETCH;
	c.depth = RPAGE_PREFETCH_DEPTH_MAX + 1;
	EXPECT_EQ(-EINVAL, range_call(self->fd, &c));
	c.depth = UINT32_MAX;
	EXPECT_EQ(-EINVAL, range_call(self->fd, &c));

	/* Nothing was fetched or dropped. */
	st = map_stats(_metadata, self->fd, m.map_id);
	EXPECT_EQ(0, st.prefetched);
	EXPECT_EQ(0, st.evicted);
	EXPECT_EQ(0, st.faults);
	st = map_stats(_metadata, other, m_other.map_id);
	EXPECT_EQ(0, st.prefetched);

	/* The deepest queue, on the last page, is fine. */
	c = good;
	c.op = OP_PREFETCH;
	c.flags = RPAGE_PREFETCH_WAIT;
	c.depth = RPAGE_PREFETCH_DEPTH_MAX;
	c.offset = size - page;
	c.length = page;
	EXPECT_EQ(0, range_call(self->fd, &c));
	EXPECT_EQ(1, map_stats(_metadata, self->fd, m.map_id).prefetched);
}

TEST_F_TIMEOUT(map, whole_pool_reads_like_rpage_read, 120)
{
	const uint64_t pages = 1024;
	unsigned char *buf = anon(pages);

	NEED_AREA(pages, 0);
	ASSERT_NE(NULL, buf);

	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(0, memcmp(buf, self->addr, pages * page));
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(pages, area_stats(_metadata, self).faults);
}

/* The kB of @field in the area of /proc/self/smaps that holds @addr; -1. */
static long smaps_kb(const void *addr, const char *field)
{
	uintptr_t a = (uintptr_t)addr, lo, hi;
	size_t len = strlen(field);
	bool inside = false;
	char line[512];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			inside = lo <= a && a < hi;
		else if (inside && !strncmp(line, field, len) && line[len] == ':')
			kb = strtol(line + len + 1, NULL, 10);
	}
	fclose(f);
	return kb;
}

/*
 * RPAGE_MAP_HUGE through /dev/rpage: the area's address lines up with
 * the 2 MiB regions by itself (get_unmapped_area), one touch in each of
 * four regions reads each whole (one fault each), and the area maps
 * them with PMD entries (FilePmdMapped); every byte is the pool's.
 */
TEST_F_TIMEOUT(map, huge_regions_are_read_whole_and_pmd_mapped, 120)
{
	const uint64_t pages = 2048, region = 2 << 20;
	struct rpage_fault_stats st;

	NEED_AREA(pages, RPAGE_MAP_HUGE);
	EXPECT_EQ(0, (uintptr_t)self->addr % region);
	for (uint64_t r = 0; r < 4; r++)
		(void)*(volatile unsigned char *)(self->addr + r * region + r * page);
	EXPECT_EQ(4 * (long)(region >> 10), smaps_kb(self->addr, "FilePmdMapped"));
	st = area_stats(_metadata, self);
	EXPECT_EQ(4, st.faults);
	EXPECT_EQ(4, st.huge_faults);
	EXPECT_EQ(0, st.huge_fallbacks);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(4, st.faults);
}

/*
 * A prefetch of an RPAGE_MAP_HUGE mapping takes its range out to whole
 * regions and reads each into one 2 MiB folio, which the touches after
 * map with PMD entries without a READ of their own; every byte is the
 * pool's. RPAGE_IOC_MAP_HUGE_STATS has no fallback to report, and
 * refuses reserved bits and unknown ids.
 */
TEST_F_TIMEOUT(map, huge_prefetch_reads_regions_whole, 120)
{
	const uint64_t pages = 2048, region = 2 << 20;
	struct rpage_map_huge_stats hs;
	struct rpage_fault_stats st;
	struct rpage_prefetch pf;

	NEED_AREA(pages, RPAGE_MAP_HUGE);
	/* One page asked for, waited for: its whole region comes. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id, .offset = page,
				       .length = page, .flags = RPAGE_PREFETCH_WAIT };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(region / page, pf.queued);
	EXPECT_EQ(0, pf.failed);
	st = area_stats(_metadata, self);
	EXPECT_EQ(1, st.huge_prefetched);
	EXPECT_EQ(region / page, st.prefetched);
	/* The rest in the background: the touches wait for it. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id, .offset = region,
				       .length = 3 * region };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(3 * region / page, pf.queued);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(4 * (long)(region >> 10), smaps_kb(self->addr, "FilePmdMapped"));
	st = area_stats(_metadata, self);
	EXPECT_EQ(0, st.faults);
	EXPECT_EQ(4, st.huge_prefetched);
	EXPECT_EQ(pages, st.prefetched);
	EXPECT_EQ(0, st.huge_fallbacks);
	EXPECT_EQ(pages, reads_since(_metadata, self));

	hs = (struct rpage_map_huge_stats) { .map_id = self->m.map_id };
	ASSERT_EQ(0, rpage_map_huge_stats(self->fd, &hs));
	for (unsigned int c = 0; c < RPAGE_HUGE_FB_MAX; c++)
		EXPECT_EQ(0, hs.fallbacks[c]);
	hs.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, rpage_map_huge_stats(self->fd, &hs));
	hs = (struct rpage_map_huge_stats) { .map_id = self->m.map_id + 1000 };
	EXPECT_EQ(-ENOENT, rpage_map_huge_stats(self->fd, &hs));
}

TEST_F_TIMEOUT(map, each_page_faults_once, 120)
{
	const uint64_t pages = 256;
	struct rpage_fault_stats st;

	NEED_AREA(pages, 0);
	st = area_stats(_metadata, self);
	EXPECT_EQ(0, st.faults + st.minor_faults + st.waits);

	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(pages, st.faults);
	EXPECT_EQ(0, st.minor_faults);
	EXPECT_EQ(0, st.waits);
	EXPECT_EQ(0, st.prefetched);
	EXPECT_EQ(0, st.prefetch_hits);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(st.faults + st.minor_faults + st.waits, hist_sum(st.latency));
	EXPECT_EQ(pages, reads_since(_metadata, self));

	/* While mapped, the pages stay: a second touch faults no more. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(pages, st.faults);
	EXPECT_EQ(0, st.minor_faults);
	EXPECT_EQ(0, st.waits);
	EXPECT_EQ(pages, reads_since(_metadata, self));
}

TEST_F_TIMEOUT(map, prefetch_then_touch_does_not_fault, 120)
{
	const uint64_t pages = 256;
	struct rpage_prefetch pf;
	struct rpage_fault_stats st;
	unsigned char *addr2;
	struct rpage_map m2;

	NEED_AREA(pages, 0);

	/* In the background: the touches wait for it, or find it done. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id, .length = pages * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(pages, pf.queued);
	EXPECT_EQ(0, pf.failed);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(0, st.faults);
	EXPECT_EQ(pages, st.prefetched);
	EXPECT_EQ(pages, st.prefetch_hits);
	EXPECT_EQ(pages, reads_since(_metadata, self));
	/* Everything is here: nothing to queue. */
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(0, pf.queued);

	/* Waiting for it, half of a second mapping: the rest faults. */
	addr2 = map_area(_metadata, self, self->fd, POOL_A, 0, pages * page, 0, &m2);
	pf = (struct rpage_prefetch) { .map_id = m2.map_id,
				       .flags = RPAGE_PREFETCH_WAIT,
				       .length = pages / 2 * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(pages / 2, pf.queued);
	EXPECT_EQ(0, pf.failed);
	EXPECT_EQ(pages / 2, map_stats(_metadata, self->fd, m2.map_id).prefetched);
	EXPECT_EQ(UINT64_MAX, check_pages(addr2, POOL_A, 0, 0, pages, SEED));
	st = map_stats(_metadata, self->fd, m2.map_id);
	EXPECT_EQ(pages / 2, st.faults);
	EXPECT_EQ(0, st.waits);
	EXPECT_EQ(pages / 2, st.prefetch_hits);
	EXPECT_EQ(pages / 2, st.prefetched);
}

/* The median of 9 values (sorts them). */
static uint64_t median9(uint64_t *v)
{
	for (int i = 0; i < 9; i++)
		for (int j = i + 1; j < 9; j++)
			if (v[j] < v[i]) {
				uint64_t tmp = v[i];

				v[i] = v[j];
				v[j] = tmp;
			}
	return v[4];
}

/*
 * A fault far ahead of a background prefetch does not wait for every
 * page before its own: touching the last page of a 256 MiB mapping
 * right after its prefetch (of depth 1, as the defect was measured)
 * started takes at most 5 times a cold fault taken meanwhile, on another
 * mapping, under the same load. (The prefetch claims its pages a chunk
 * at a time; main at 52721f3 claimed all of them at once and read them
 * in order, so the last page waited for the whole prefetch.)
 */
TEST_F_TIMEOUT(map, fault_far_ahead_of_a_prefetch_waits_not_for_it, 300)
{
	const uint64_t pages = (256ULL << 20) / page;
	struct rpage_prefetch pf;
	struct rpage_fault_stats st;
	struct rpage_map m, mc;
	unsigned char *addr, *cold;
	uint64_t cold_us, t0, last_us, prefetched, cold_v[9], last_v[9];

	NEED_PEER();
	ASSERT_EQ(0, create_pool(self->fd, POOL_B, pages * page, 0));
	NEED_REMOTE_POOL(POOL_B);
	cold = map_area(_metadata, self, self->fd, POOL_B, 0, 64 * page, 0, &mc);
	addr = map_area(_metadata, self, self->fd, POOL_B, 0, pages * page, 0, &m);
	pf = (struct rpage_prefetch) { .map_id = m.map_id, .depth = 1,
				       .length = pages * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(pages, pf.queued);
	/*
	 * Faults on the last pages, each beside a cold fault of the other
	 * mapping, under the same load: the medians of each.
	 */
	for (uint64_t k = 0; k < 9; k++) {
		t0 = now_us();
		(void)*(volatile const unsigned char *)(cold + 4 * k * page);
		cold_v[k] = now_us() - t0;
		t0 = now_us();
		(void)*(volatile const unsigned char *)(addr + (pages - 1 - 64 * k) * page);
		last_v[k] = now_us() - t0;
	}
	cold_us = median9(cold_v);
	last_us = median9(last_v);
	st = map_stats(_metadata, self->fd, m.map_id);
	TH_LOG("cold fault %llu us, a last page behind a 256 MiB prefetch %llu us (medians of 9), %llu pages prefetched by then",
	       (unsigned long long)cold_us, (unsigned long long)last_us,
	       (unsigned long long)st.prefetched);
	EXPECT_GE(5 * cold_us, last_us);
	/* They read their pages themselves, and the prefetch goes on. */
	EXPECT_EQ(9, st.faults + st.waits);
	EXPECT_GT(pages / 2, st.prefetched);

	/*
	 * The pool going away ends the prefetch, soon: its READs in flight
	 * fail or finish, and no more are sent. Seen still after two looks
	 * 100 ms apart; within a READ's timeout at most.
	 */
	ASSERT_EQ(0, destroy_pool(self->fd, POOL_B));
	for (t0 = now_ms(), prefetched = UINT64_MAX;
	     now_ms() - t0 < (uint64_t)rpage_test_io_timeout_ms(); sleep_ms(100)) {
		st = map_stats(_metadata, self->fd, m.map_id);
		if (st.prefetched == prefetched)
			break;
		prefetched = st.prefetched;
	}
	TH_LOG("the prefetch stopped %llu ms after the destroy, at %llu pages",
	       (unsigned long long)(now_ms() - t0),
	       (unsigned long long)st.prefetched);
	EXPECT_EQ(prefetched, st.prefetched);
	munmap(addr, pages * page);
	rpage_map_destroy(self->fd, &(struct rpage_unmap){ .map_id = m.map_id });
	munmap(cold, 64 * page);
	rpage_map_destroy(self->fd, &(struct rpage_unmap){ .map_id = mc.map_id });
}

TEST_F_TIMEOUT(map, readahead_reads_ahead_of_sequential_faults, 120)
{
	const uint64_t pages = 256;
	struct rpage_fault_stats st;

	NEED_AREA(pages, RPAGE_MAP_READAHEAD);
	for (uint64_t i = 0; i < pages; i++) {
		ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, i, 1, SEED));
	}
	st = area_stats(_metadata, self);
	EXPECT_LT(0, st.prefetched);
	EXPECT_GT(pages, st.faults);
	/* Every page came once: by its own fault or ahead of it. */
	EXPECT_EQ(pages, st.faults + st.prefetch_hits);
	EXPECT_EQ(pages, reads_since(_metadata, self));
}

/* Threads that touch the same pages at once. */
struct crowd {
	pthread_barrier_t start;
	const unsigned char *addr;
	uint64_t pages;
	bool bad;		/* __atomic */
};

static void *crowd_run(void *arg)
{
	struct crowd *c = arg;

	pthread_barrier_wait(&c->start);
	if (check_pages(c->addr, POOL_A, 0, 0, c->pages, SEED) != UINT64_MAX)
		__atomic_store_n(&c->bad, true, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(map, concurrent_faults_read_each_page_once, 120)
{
	const uint64_t pages = 64;
	struct crowd c = { .pages = pages };
	struct rpage_fault_stats st;
	pthread_t threads[8];

	NEED_AREA(pages, 0);
	c.addr = self->addr;
	ASSERT_EQ(0, pthread_barrier_init(&c.start, NULL, ARRAY_LEN(threads)));
	for (size_t i = 0; i < ARRAY_LEN(threads); i++) {
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, crowd_run, &c));
	}
	for (size_t i = 0; i < ARRAY_LEN(threads); i++)
		pthread_join(threads[i], NULL);
	EXPECT_FALSE(c.bad);
	st = area_stats(_metadata, self);
	EXPECT_EQ(pages, st.faults);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(pages, reads_since(_metadata, self));
}

/* One of many threads that each touch their own pages of a mapping. */
struct waiter {
	pthread_barrier_t *start;
	const unsigned char *addr;
	uint64_t first, stride, pages;
	long switches;		/* voluntary context switches while touching */
	bool bad;
};

static void *waiter_run(void *arg)
{
	struct waiter *w = arg;
	struct rusage before, after;

	pthread_barrier_wait(w->start);
	getrusage(RUSAGE_THREAD, &before);
	for (uint64_t i = w->first; i < w->pages; i += w->stride) {
		if (check_pages(w->addr, POOL_A, 0, i, 1, SEED) != UINT64_MAX)
			w->bad = true;
	}
	getrusage(RUSAGE_THREAD, &after);
	w->switches = after.ru_nvcsw - before.ru_nvcsw;
	return NULL;
}

/*
 * 64 threads each wait for their own pages of a prefetch in flight: the
 * arrival of a page wakes the faults on that page, not every fault on the
 * mapping (which would cost each waiting thread a wake-up, and a sleep,
 * per page that arrives: O(threads^2) in all). A thread sleeps at most
 * once per page it touches, and may sleep once more for mmap_lock when
 * it retries the fault. Over every transport: a fault that reads its page
 * itself sleeps until its own answer or completion, not in naps.
 */
TEST_F_TIMEOUT(map, sixty_four_threads_wake_only_for_their_pages, 180)
{
	const uint64_t nthreads = 64, pages = 64 * 16;
	struct waiter w[64];
	pthread_t threads[64];
	pthread_barrier_t start;
	struct rpage_fault_stats st;
	struct rpage_prefetch pf;
	long switches = 0;

	NEED_AREA(pages, 0);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, nthreads + 1));
	for (uint64_t t = 0; t < nthreads; t++) {
		w[t] = (struct waiter) { .start = &start, .addr = self->addr,
					 .first = t, .stride = nthreads,
					 .pages = pages };
		ASSERT_EQ(0, pthread_create(&threads[t], NULL, waiter_run, &w[t]));
	}
	/* One READ at a time, so that the threads find their pages on the way. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id, .depth = 1,
				       .length = pages * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	pthread_barrier_wait(&start);
	for (uint64_t t = 0; t < nthreads; t++) {
		pthread_join(threads[t], NULL);
		EXPECT_FALSE(w[t].bad);
		switches += w[t].switches;
	}
	st = area_stats(_metadata, self);
	TH_LOG("%llu pages: %llu read by the prefetch, %llu by faults, %llu waits; "
	       "%ld voluntary context switches of the touching threads",
	       (unsigned long long)pages, (unsigned long long)st.prefetched,
	       (unsigned long long)st.faults, (unsigned long long)st.waits,
	       switches);
	EXPECT_EQ(pages, st.prefetched + st.faults);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(pages, reads_since(_metadata, self));
	EXPECT_GE((long)(2 * pages), switches);
}

TEST_F_TIMEOUT(map, evict_writes_back_and_drops, 120)
{
	const uint64_t pages = 64;
	unsigned char *buf = anon(pages);
	struct rpage_fault_stats st;
	struct rpage_stats after;
	struct rpage_evict ev;

	NEED_AREA(pages, 0);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));

	/* Pages 8 to 23 get the second pattern. */
	rpage_pattern_fill(self->addr + 8 * page, 16 * page, POOL_A, 8 * page, SEED2);
	ev = (struct rpage_evict) { .map_id = self->m.map_id, .length = pages * page };
	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	EXPECT_EQ(pages, ev.evicted);
	EXPECT_EQ(16, ev.written);
	after = peer_counters(_metadata, self);
	EXPECT_EQ(16, after.writes - self->before.writes);
	st = area_stats(_metadata, self);
	EXPECT_EQ(pages, st.evicted);
	EXPECT_EQ(16, st.written);

	/* The pool has them... */
	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(UINT64_MAX, check_rewritten(buf));

	/* ...and every page faults in again, from the pool. */
	EXPECT_EQ(UINT64_MAX, check_rewritten(self->addr));
	st = area_stats(_metadata, self);
	EXPECT_EQ(2 * pages, st.faults);
	/* The check of the pool above read each page once, the refaults once. */
	EXPECT_EQ(2 * pages, peer_counters(_metadata, self).reads - after.reads);
}

/*
 * A writable pool's dirty pages are written back by writeback, not only
 * by eviction: msync(MS_SYNC) writes the dirty ones of its range to the
 * pool and waits, leaving every page mapped. Writeback write-protects
 * what it wrote, so a store after it dirties its page again and the
 * next msync writes that page alone.
 */
TEST_F_TIMEOUT(map, msync_writes_dirty_pages_back, 120)
{
	const uint64_t pages = 64;
	unsigned char *buf = anon(pages);
	struct rpage_fault_stats st;
	struct rpage_stats after;

	NEED_AREA(pages, 0);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));

	/* Pages 8 to 23 get the second pattern. */
	rpage_pattern_fill(self->addr + 8 * page, 16 * page, POOL_A, 8 * page, SEED2);
	ASSERT_EQ(0, msync(self->addr, pages * page, MS_SYNC));
	st = area_stats(_metadata, self);
	EXPECT_EQ(16, st.written);
	EXPECT_EQ(0, st.evicted);
	after = peer_counters(_metadata, self);
	EXPECT_LE(1, after.writes - self->before.writes);
	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(UINT64_MAX, check_rewritten(buf));
	/* Nothing was dropped: no page faulted again. */
	EXPECT_EQ(UINT64_MAX, check_rewritten(self->addr));
	EXPECT_EQ(pages, area_stats(_metadata, self).faults);

	/* Clean now: nothing more to write. */
	ASSERT_EQ(0, msync(self->addr, pages * page, MS_SYNC));
	EXPECT_EQ(16, area_stats(_metadata, self).written);

	/* A store after the writeback: that page alone, written again. */
	rpage_pattern_fill(self->addr + 8 * page, page, POOL_A, 8 * page, SEED);
	ASSERT_EQ(0, msync(self->addr, pages * page, MS_SYNC));
	EXPECT_EQ(17, area_stats(_metadata, self).written);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 8 * page, page, buf));
	EXPECT_EQ(UINT64_MAX, check_pages(buf, POOL_A, 8 * page, 0, 1, SEED));
}

/*
 * A read-only pool's mapping has no writeback: msync() succeeds, writes
 * nothing, and the written page stays the mapping's own.
 */
TEST_F_TIMEOUT(map, msync_of_a_read_only_pool_writes_nothing, 120)
{
	const uint64_t pages = 16;
	struct rpage_fault_stats st;
	unsigned char *addr;
	struct rpage_stats before;
	struct rpage_map m;

	NEED_PEER();
	make_pool(_metadata, self, POOL_B, pages, 0);
	addr = map_area(_metadata, self, self->fd, POOL_B, 0, pages * page, 0, &m);
	before = peer_counters(_metadata, self);
	memset(addr + 3 * page, 0x5a, page);
	ASSERT_EQ(0, msync(addr, pages * page, MS_SYNC));
	st = map_stats(_metadata, self->fd, m.map_id);
	EXPECT_EQ(0, st.written);
	EXPECT_EQ(0, peer_counters(_metadata, self).writes - before.writes);
	EXPECT_EQ(0x5a, addr[3 * page]);
	EXPECT_EQ(UINT64_MAX, first_nonzero(addr, 3 * page));
}

/*
 * Evicts page 0 of a mapping over and over, until told to stop; counts
 * the evictions that dropped it and the calls that failed.
 */
struct evictor {
	int fd;
	__u64 map_id;
	bool stop;		/* __atomic */
	unsigned long evicted, failed;
	int first_err;
};

static void *evictor_run(void *arg)
{
	struct evictor *e = arg;

	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		struct rpage_evict ev = { .map_id = e->map_id, .length = page };
		int ret = rpage_map_evict(e->fd, &ev);

		if (ret) {
			e->failed++;
			if (!e->first_err)
				e->first_err = ret;
		} else {
			e->evicted += ev.evicted;
		}
	}
	return NULL;
}

/*
 * An eviction racing a fault on the same page loses no write: this
 * thread drops its page table entry (MADV_DONTNEED), so that every read
 * faults, and increments a counter in the page, again and again, while
 * another thread evicts the page. A fault that returned its page just
 * before the eviction dropped it would map a page no longer in the
 * mapping: the writes to it are never written back, and the next fault
 * reads the old value. Every increment must be there at the end, in the
 * mapping and in the pool.
 */
TEST_F_TIMEOUT(map, evict_racing_faults_loses_no_write, 180)
{
	const uint64_t rounds = 3000, max_ms = 60000;
	struct evictor e = { .fd = self->fd };
	volatile uint64_t *counter;
	uint64_t i, start, *buf;
	pthread_t thread;

	NEED_AREA(1, 0);
	counter = (volatile uint64_t *)self->addr;
	*counter = 0;
	e.map_id = self->m.map_id;
	ASSERT_EQ(0, pthread_create(&thread, NULL, evictor_run, &e));
	start = now_ms();
	for (i = 0; i < rounds && now_ms() - start < max_ms; i++) {
		ASSERT_EQ(0, madvise(self->addr, page, MADV_DONTNEED));
		*counter = *counter + 1;
	}
	__atomic_store_n(&e.stop, true, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	TH_LOG("%llu increments, %lu evictions, %lu failed (first %d)",
	       (unsigned long long)i, e.evicted, e.failed, e.first_err);
	EXPECT_EQ(0, e.failed);
	/* Some evictions must have raced the faults for this to mean much. */
	EXPECT_LT(10, e.evicted);
	EXPECT_EQ(i, *counter);

	/* And the pool has them once the page is written back. */
	struct rpage_evict ev = { .map_id = self->m.map_id, .length = page };

	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	buf = aligned_alloc(page, page);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, page, buf));
	EXPECT_EQ(i, buf[0]);
	free(buf);
}

/* Unmaps the id a MAP that is failing to answer is about to get. */
struct unmapper {
	int fd;
	__u64 first_id;
	uint64_t next;		/* __atomic: the MAP call under way */
	bool stop;		/* __atomic */
	unsigned long hits;
};

static void *unmapper_run(void *arg)
{
	struct unmapper *u = arg;

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		struct rpage_unmap un = {
			.map_id = u->first_id + __atomic_load_n(&u->next,
							      __ATOMIC_ACQUIRE),
		};

		if (!rpage_map_destroy(u->fd, &un))
			u->hits++;
	}
	return NULL;
}

/*
 * A MAP whose answer cannot be written back (EFAULT) takes its mapping
 * out of the table again - while an UNMAP of the same id, which a
 * caller can guess, may have done it already: the mapping must be
 * freed once, not twice (a double put is a use-after-free, and the
 * kernel log's "refcount_t: underflow" fails the run).
 */
TEST_F_TIMEOUT(map, map_failing_to_answer_races_unmap, 180)
{
	/*
	 * 20000 rounds, or as many as 60 s allow and at least 1000: a debug
	 * kernel (KASAN, lockdep) takes over 180 s for 20000.
	 */
	const uint64_t rounds = 20000, min_rounds = 1000;
	struct unmapper u = { .fd = self->fd };
	struct rpage_map probe, *ro;
	pthread_t thread;
	uint64_t i, efault = 0, t0;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 4, RPAGE_POOL_WRITABLE);
	/* The argument on a read-only page: read in, never written back. */
	ro = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	*ro = (struct rpage_map) {
		.peer_id = self->peer_id, .pool_id = POOL_A, .length = page,
	};
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	/* Ids are handed out in turn: learn where they are. */
	probe = *ro;
	ASSERT_EQ(0, rpage_map_create(self->fd, &probe));
	ASSERT_EQ(0, rpage_map_destroy(self->fd,
				       &(struct rpage_unmap){ .map_id = probe.map_id }));
	u.first_id = probe.map_id + 1;
	ASSERT_EQ(0, pthread_create(&thread, NULL, unmapper_run, &u));
	t0 = now_ms();
	for (i = 0; i < rounds && (i < min_rounds || now_ms() - t0 < 60000); i++) {
		__atomic_store_n(&u.next, i, __ATOMIC_RELEASE);
		if (ioctl(self->fd, RPAGE_IOC_MAP, ro) < 0 && errno == EFAULT)
			efault++;
	}
	__atomic_store_n(&u.stop, true, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	TH_LOG("%llu of %llu MAPs failed with EFAULT, %lu UNMAPs took their id first",
	       (unsigned long long)efault, (unsigned long long)i, u.hits);
	EXPECT_EQ(i, efault);
	munmap(ro, page);
}

/* Pages 1-3, 5, 9-30, 40 and 505-520 (across the first 2 MiB region). */
static bool scattered_dirty(uint64_t i)
{
	return (i >= 1 && i <= 3) || i == 5 || (i >= 9 && i <= 30) || i == 40 ||
	       (i >= 505 && i <= 520);
}

/*
 * Prefetch and eviction put runs of adjacent pages in one READ or WRITE
 * (up to 16 pages, within a registered region of the pool): runs with
 * gaps between them, runs longer than one request carries and runs
 * across a region's end must each land where they belong.
 */
TEST_F_TIMEOUT(map, gathered_runs_keep_every_page_in_place, 120)
{
	static const uint64_t touched[] = { 0, 2, 3, 7, 40, 510, 599 };
	const uint64_t pages = 600;
	unsigned char *buf = anon(pages);
	struct rpage_prefetch pf;
	struct rpage_evict ev;
	uint64_t i, dirty = 0;

	NEED_AREA(pages, 0);
	ASSERT_NE(NULL, buf);
	/* Some pages first: the prefetch reads the runs between them. */
	for (i = 0; i < ARRAY_LEN(touched); i++)
		ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, touched[i],
						  1, SEED));
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id,
				       .flags = RPAGE_PREFETCH_WAIT,
				       .length = pages * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(pages - ARRAY_LEN(touched), pf.queued);
	EXPECT_EQ(0, pf.failed);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(ARRAY_LEN(touched), area_stats(_metadata, self).faults);
	EXPECT_EQ(pages, reads_since(_metadata, self));

	for (i = 0; i < pages; i++) {
		if (!scattered_dirty(i))
			continue;
		rpage_pattern_fill(self->addr + i * page, page, POOL_A, i * page,
				   SEED2);
		dirty++;
	}
	ev = (struct rpage_evict) { .map_id = self->m.map_id,
				    .length = pages * page };
	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	EXPECT_EQ(pages, ev.evicted);
	EXPECT_EQ(dirty, ev.written);

	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page,
			 buf));
	for (i = 0; i < pages; i++) {
		EXPECT_EQ(UINT64_MAX,
			  rpage_pattern_check(buf + i * page, page, POOL_A,
					      i * page, scattered_dirty(i) ?
					      SEED2 : SEED)) {
			TH_LOG("page %llu", (unsigned long long)i);
		}
	}
	munmap(buf, pages * page);
}

TEST_F_TIMEOUT(map, evict_of_a_clean_range_writes_nothing, 120)
{
	const uint64_t pages = 32;
	struct rpage_evict ev;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));

	ev = (struct rpage_evict) { .map_id = self->m.map_id, .length = pages * page };
	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	EXPECT_EQ(pages, ev.evicted);
	EXPECT_EQ(0, ev.written);
	EXPECT_EQ(0, peer_counters(_metadata, self).writes - self->before.writes);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(2 * pages, area_stats(_metadata, self).faults);

	/* A part: pages 8 to 15 alone come again. */
	ev = (struct rpage_evict) { .map_id = self->m.map_id, .offset = 8 * page,
				    .length = 8 * page };
	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	EXPECT_EQ(8, ev.evicted);
	EXPECT_EQ(0, ev.written);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(2 * pages + 8, area_stats(_metadata, self).faults);
}

TEST_F_TIMEOUT(map, evict_of_a_read_only_pool_is_erofs, 120)
{
	const uint64_t pages = 16;
	struct rpage_fault_stats st;
	struct rpage_evict ev;
	unsigned char *addr;
	struct rpage_map m;

	NEED_PEER();
	make_pool(_metadata, self, POOL_B, pages, 0);
	addr = map_area(_metadata, self, self->fd, POOL_B, 0, pages * page, 0, &m);
	ASSERT_EQ(UINT64_MAX, first_nonzero(addr, pages * page));
	/* The mapping is writable even so: the pool is not. */
	memset(addr + 3 * page, 0x5a, page);

	ev = (struct rpage_evict) { .map_id = m.map_id, .length = pages * page };
	EXPECT_EQ(-EROFS, rpage_map_evict(self->fd, &ev));
	/* Nothing was dropped: no page faults again, ours is ours. */
	EXPECT_EQ(UINT64_MAX, first_nonzero(addr, 3 * page));
	EXPECT_EQ(0x5a, addr[3 * page]);
	EXPECT_EQ(0x5a, addr[4 * page - 1]);
	EXPECT_EQ(UINT64_MAX, first_nonzero(addr + 4 * page, (pages - 4) * page));
	st = map_stats(_metadata, self->fd, m.map_id);
	EXPECT_EQ(pages, st.faults);
	EXPECT_EQ(0, st.evicted);
	EXPECT_EQ(0, st.written);

	/* A range without the dirty page is fine. */
	ev = (struct rpage_evict) { .map_id = m.map_id, .offset = 4 * page,
				    .length = 4 * page };
	EXPECT_EQ(0, rpage_map_evict(self->fd, &ev));
	EXPECT_EQ(4, ev.evicted);
	EXPECT_EQ(0, ev.written);
	EXPECT_EQ(0x5a, addr[3 * page]);
}

/* What the forked child found wrong, as bits of its exit code. */
enum {
	CHILD_FETCHED	= 1 << 0,	/* the page the parent had */
	CHILD_NEW	= 1 << 1,	/* the page it fetched itself */
};

TEST_F_TIMEOUT(map, fork_child_shares_the_pages, 120)
{
	const uint64_t pages = 8;
	struct rpage_fault_stats st;
	int status;
	pid_t pid;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, 1, SEED));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int result = 0;

		if (check_pages(self->addr, POOL_A, 0, 0, 1, SEED) != UINT64_MAX)
			result |= CHILD_FETCHED;
		if (check_pages(self->addr, POOL_A, 0, 1, 1, SEED) != UINT64_MAX)
			result |= CHILD_NEW;
		/* The parent is to see this: the pages are shared. */
		rpage_pattern_fill(self->addr + page, page, POOL_A, page, SEED2);
		_exit(result);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status) & CHILD_FETCHED);
	EXPECT_EQ(0, WEXITSTATUS(status) & CHILD_NEW);
	EXPECT_EQ(2, area_stats(_metadata, self).faults);

	/* The child's page, with the child's write, without a READ. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 1, 1, SEED2));
	st = area_stats(_metadata, self);
	EXPECT_EQ(2, st.faults);
	EXPECT_LE(1, st.minor_faults + st.waits);
}

/* The running kernel's version as MAJOR * 1000 + MINOR. */
static int kernel_version(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 1000 + minor;
}

/*
 * How many pages fault-around maps at most: the kernel's
 * fault_around_bytes (debugfs), 64 KiB unless changed.
 */
static uint64_t fault_around_pages(void)
{
	FILE *f = fopen("/sys/kernel/debug/fault_around_bytes", "r");
	unsigned long bytes = 65536;

	if (f) {
		if (fscanf(f, "%lu", &bytes) != 1)
			bytes = 65536;
		fclose(f);
	}
	return bytes / page ?: 1;
}

/*
 * A second view of NEED_AREA()'s mapping, of its first @pages pages, at
 * an address aligned to 2 MiB: fault-around works on page-table-aligned
 * windows, so what one fault maps does not depend on where mmap put it.
 */
static unsigned char *aligned_view(struct __test_metadata *_metadata,
				   FIXTURE_DATA(map) *self, uint64_t pages)
{
	const uintptr_t align = 2UL << 20;
	unsigned char *resv, *addr, *view;

	resv = mmap(NULL, pages * page + align, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, resv);
	addr = (unsigned char *)(((uintptr_t)resv + align - 1) & ~(align - 1));
	view = mmap(addr, pages * page, PROT_READ, MAP_SHARED | MAP_FIXED,
		    self->fd, self->m.mmap_offset);
	ASSERT_EQ(addr, view);
	return view;
}

/*
 * A read fault maps the pages around its own that are here already
 * (fault-around): touching a prefetched range takes one fault per window,
 * not one per page, and every one of them still counts as a prefetch hit.
 * The pages that are not here fault and are read one by one.
 */
TEST_F_TIMEOUT(map, fault_around_maps_the_pages_already_here, 120)
{
	const uint64_t pages = 64, prefetched = 32;
	uint64_t around = fault_around_pages(), windows;
	struct rpage_fault_stats st;
	struct rpage_prefetch pf;
	unsigned char *view;

	NEED_AREA(pages, 0);
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id,
				       .flags = RPAGE_PREFETCH_WAIT,
				       .length = prefetched * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	ASSERT_EQ(prefetched, pf.queued);
	ASSERT_EQ(0, pf.failed);
	view = aligned_view(_metadata, self, pages);

	/* The first touch maps a whole window, of the prefetched pages. */
	EXPECT_EQ(UINT64_MAX, check_pages(view, POOL_A, 0, 0, 1, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(1, st.minor_faults);
	EXPECT_EQ(around < prefetched ? around : prefetched, st.prefetch_hits);
	windows = (prefetched + around - 1) / around;
	EXPECT_EQ(UINT64_MAX, check_pages(view, POOL_A, 0, 0, prefetched, SEED));
	st = area_stats(_metadata, self);
	TH_LOG("fault-around: %llu pages; %llu minor faults for %llu pages here",
	       (unsigned long long)around, (unsigned long long)st.minor_faults,
	       (unsigned long long)prefetched);
	EXPECT_EQ(windows, st.minor_faults);
	EXPECT_EQ(prefetched, st.prefetch_hits);
	EXPECT_EQ(0, st.faults);

	/* The rest is not here: a fault, and a READ, each. */
	EXPECT_EQ(UINT64_MAX, check_pages(view, POOL_A, 0, prefetched,
					  pages - prefetched, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(pages - prefetched, st.faults);
	EXPECT_EQ(windows, st.minor_faults);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(pages, reads_since(_metadata, self));
	EXPECT_EQ(st.faults + st.minor_faults + st.waits, hist_sum(st.latency));
	/* The first view faults the pages in, read once. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(pages, reads_since(_metadata, self));
	EXPECT_EQ(0, munmap(view, pages * page));
}

/*
 * Where the kernel has per-VMA locks for file mappings (6.12 here), a
 * process's faults on a mapping come with the VMA's lock, not mmap_lock
 * (rpage has fault-around, which the kernel asks of a file mapping for
 * that); a fault retried after waiting without its lock, and faults
 * taken for get_user_pages() (/proc/PID/mem here; KVM), come with
 * mmap_lock. On 6.1 every fault does.
 */
TEST_F_TIMEOUT(map, faults_come_with_the_vma_lock_where_the_kernel_has_it, 120)
{
	const uint64_t pages = 64;
	int kver = kernel_version(), mem;
	struct rpage_fault_stats st;
	unsigned char *buf;

	NEED_AREA(pages, 0);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages - 1, SEED));
	st = area_stats(_metadata, self);
	TH_LOG("kernel %d.%d: %llu faults, %llu with the VMA lock, %llu with mmap_lock",
	       kver / 1000, kver % 1000, (unsigned long long)st.faults,
	       (unsigned long long)st.vma_locked,
	       (unsigned long long)st.mmap_locked);
	EXPECT_EQ(pages - 1, st.faults);
	if (kver >= 6012) {
		/* All but a fault that met a writer of the map (none here). */
		EXPECT_LE((pages - 1) * 9 / 10, st.vma_locked);
		/* Only retries, after a READ slower than the polling. */
		EXPECT_GE(st.faults, st.mmap_locked);
	} else if (kver < 6004) {
		EXPECT_EQ(0, st.vma_locked);
		EXPECT_LE(pages - 1, st.mmap_locked);
	}

	/* The last page, read the way a debugger or KVM reads it. */
	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	buf = malloc(page);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ((ssize_t)page, pread(mem, buf, page,
				       (off_t)(uintptr_t)(self->addr + (pages - 1) * page)));
	close(mem);
	EXPECT_EQ(UINT64_MAX, rpage_pattern_check(buf, page, POOL_A,
						  (pages - 1) * page, SEED));
	free(buf);
	{
		struct rpage_fault_stats after = area_stats(_metadata, self);

		EXPECT_EQ(pages, after.faults);
		EXPECT_EQ(st.vma_locked, after.vma_locked);
		EXPECT_LE(st.mmap_locked + 1, after.mmap_locked);
	}
}

/* How many of the @pages pages at @addr are in memory (mincore(2)). */
static uint64_t resident(struct __test_metadata *_metadata,
			 const unsigned char *addr, uint64_t pages)
{
	unsigned char vec[256];
	uint64_t n = 0;

	ASSERT_GE(ARRAY_LEN(vec), pages);
	ASSERT_EQ(0, mincore((void *)addr, pages * page, vec));
	for (uint64_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * A mapping's pages are a cache of the pool: the kernel may drop clean
 * ones (MADV_PAGEOUT here; memory pressure in the pair's tests), and a
 * touch reads them again, counted as refetched. A dirty page stays, its
 * data with it. A prefetch with RPAGE_PREFETCH_KEEP (map pull) makes
 * every page stay.
 */
TEST_F_TIMEOUT(map, reclaim_drops_clean_pages_and_a_touch_reads_them_again, 120)
{
	const uint64_t pages = 64;
	struct rpage_fault_stats st;
	struct rpage_prefetch pf;

	cpu_set_t one;

	/*
	 * On one CPU: a new page waits in that CPU's batch before it goes on
	 * the LRU, and MADV_PAGEOUT drains its own CPU's batch only.
	 */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	NEED_AREA(pages, 0);
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	/* Page 5 dirty, with the same bytes. */
	self->addr[5 * page] ^= 1;
	self->addr[5 * page] ^= 1;
	EXPECT_EQ(pages, resident(_metadata, self->addr, pages));

	ASSERT_EQ(0, madvise(self->addr, pages * page, MADV_PAGEOUT));
	EXPECT_EQ(1, resident(_metadata, self->addr, pages));
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(2 * pages - 1, st.faults);
	EXPECT_EQ(pages - 1, st.refetched);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(2 * pages - 1, reads_since(_metadata, self));

	/* Kept: nothing to read, and reclaim drops nothing from now on. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id,
				       .flags = RPAGE_PREFETCH_WAIT | RPAGE_PREFETCH_KEEP,
				       .length = pages * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(0, pf.queued);
	ASSERT_EQ(0, madvise(self->addr, pages * page, MADV_PAGEOUT));
	EXPECT_EQ(pages, resident(_metadata, self->addr, pages));
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	st = area_stats(_metadata, self);
	EXPECT_EQ(2 * pages - 1, st.faults);
	EXPECT_EQ(pages - 1, st.refetched);
	EXPECT_EQ(2 * pages - 1, reads_since(_metadata, self));
}

TEST_F_TIMEOUT(map, partial_munmap_leaves_the_rest, 120)
{
	const uint64_t pages = 16;
	unsigned char *hole;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 5, 1, SEED));
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 7, 1, SEED));

	/* Pages 6 to 9 go, 7 of them fetched. */
	ASSERT_EQ(0, munmap(self->addr + 6 * page, 4 * page));
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, 6, SEED));
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 10, 6, SEED));
	EXPECT_EQ(pages - 3, area_stats(_metadata, self).faults);

	/* Mapped again, page 7 is still here; 6, 8 and 9 fault. */
	hole = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		    (off_t)(self->m.mmap_offset + 6 * page));
	ASSERT_NE(MAP_FAILED, hole);
	EXPECT_EQ(UINT64_MAX, check_pages(hole, POOL_A, 6 * page, 0, 4, SEED));
	EXPECT_EQ(pages, area_stats(_metadata, self).faults);
}

TEST_F_TIMEOUT(map, mremap_may_move_but_not_grow, 120)
{
	const uint64_t pages = 8;
	unsigned char *moved, *target;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages / 2, SEED));

	EXPECT_EQ(MAP_FAILED, mremap(self->addr, pages * page, (pages + 1) * page, 0));
	EXPECT_EQ(MAP_FAILED, mremap(self->addr, pages * page, (pages + 1) * page,
				     MREMAP_MAYMOVE));

	/* Somewhere to move to: an address range of its own. */
	target = mmap(NULL, pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	ASSERT_NE(MAP_FAILED, target);
	moved = mremap(self->addr, pages * page, pages * page,
		       MREMAP_MAYMOVE | MREMAP_FIXED, target);
	ASSERT_EQ(target, moved);
	EXPECT_EQ(UINT64_MAX, check_pages(moved, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(pages, area_stats(_metadata, self).faults);
	ASSERT_EQ(0, munmap(moved, pages * page));
}

TEST_F_TIMEOUT(map, areas_outlive_unmap_and_close, 120)
{
	const uint64_t pages = 8;
	struct rpage_map_stats st;
	struct rpage_unmap unmap;
	struct rpage_prefetch pf;
	unsigned char *addr2;
	struct rpage_map m2;
	int other;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, 1, SEED));

	unmap = (struct rpage_unmap) { .map_id = self->m.map_id };
	ASSERT_EQ(0, rpage_map_destroy(self->fd, &unmap));
	/* The area keeps the mapping: fetched and new pages alike. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	/* But the id names nothing. */
	st = (struct rpage_map_stats) { .map_id = self->m.map_id };
	EXPECT_EQ(-ENOENT, rpage_map_stats(self->fd, &st));
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id, .length = page };
	EXPECT_EQ(-ENOENT, rpage_map_prefetch(self->fd, &pf));
	EXPECT_EQ(EINVAL, mmap_errno(self->fd, self->m.mmap_offset, page, MAP_SHARED));
	EXPECT_EQ(0, munmap(self->addr, pages * page));

	/* The same when the file closes. */
	other = rpage_test_open();
	ASSERT_LE(0, other);
	addr2 = map_area(_metadata, self, other, POOL_A, 0, pages * page, 0, &m2);
	ASSERT_EQ(UINT64_MAX, check_pages(addr2, POOL_A, 0, 0, 1, SEED));
	close(other);
	EXPECT_EQ(UINT64_MAX, check_pages(addr2, POOL_A, 0, 0, pages, SEED));
	EXPECT_EQ(0, munmap(addr2, pages * page));
}

TEST_F_TIMEOUT(map, destroyed_pool_raises_sigbus, 300)
{
	const uint64_t pages = 16;
	/*
	 * The reader knows before the destroy returns (it acknowledged the
	 * withdrawal): no READ is sent or waited for, a fifth of a READ's
	 * timeout is plenty (1 s; the debug tier's io_timeout_ms is longer).
	 */
	const uint64_t bound_ms = (uint64_t)rpage_test_io_timeout_ms() / 5;

	NEED_AREA(pages, 0);
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages / 2, SEED));
	ASSERT_EQ(0, destroy_pool(self->fd, POOL_A));

	on_sigbus(sigbus_jump);
	for (uint64_t i = pages / 2; i < pages / 2 + 2; i++) {
		uint64_t start = now_ms(), took;
		void *at = NULL;
		bool bus = touch_sigbus(self->addr + i * page, &at);

		took = now_ms() - start;
		TH_LOG("page %llu of the destroyed pool: %s after %llu ms",
		       (unsigned long long)i, bus ? "SIGBUS" : "served",
		       (unsigned long long)took);
		EXPECT_TRUE(bus) {
			TH_LOG("page %llu of a destroyed pool was served",
			       (unsigned long long)i);
		}
		EXPECT_EQ(self->addr + i * page, at);
		EXPECT_GE(bound_ms, took) {
			TH_LOG("page %llu: SIGBUS after %llu ms",
			       (unsigned long long)i, (unsigned long long)took);
		}
	}
	on_sigbus(NULL);
	/* What was fetched stays. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages / 2, SEED));
	EXPECT_LE(2, area_stats(_metadata, self).sigbus);
}

static bool match_peer_fault_stats(const void *entry, const void *peer_id)
{
	return ((const struct rpage_peer_fault_stats *)entry)->peer_id ==
		*(const __u32 *)peer_id;
}

/* The entry of the peer that is this host in RPAGE_IOC_PEER_FAULT_STATS. */
static struct rpage_peer_fault_stats
peer_fault_counters(struct __test_metadata *_metadata, FIXTURE_DATA(map) *self)
{
	struct rpage_peer_fault_stats entry;

	ASSERT_EQ(1, list_find(self->fd, rpage_peer_fault_stats, sizeof(entry),
			       match_peer_fault_stats, &self->peer_id, &entry));
	return entry;
}

TEST_F(map, fault_stats_reject_bad_arguments)
{
	struct rpage_map_stats st;
	struct rpage_list list;

	st = (struct rpage_map_stats) { .map_id = MAP_ID_NONE };
	EXPECT_EQ(-ENOENT, rpage_map_stats(self->fd, &st));
	for (int r = 0; r < 3; r++) {
		st = (struct rpage_map_stats) { .map_id = MAP_ID_NONE };
		st.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_map_stats(self->fd, &st)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	list = (struct rpage_list) { .count = 1 };
	EXPECT_EQ(-EINVAL, rpage_peer_fault_stats(self->fd, &list));
	for (int r = 0; r < 2; r++) {
		list = (struct rpage_list) { 0 };
		list.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_peer_fault_stats(self->fd, &list)) {
			TH_LOG("reserved[%d] set", r);
		}
	}
	list = (struct rpage_list) { .capacity = 4 };
	EXPECT_EQ(-EFAULT, rpage_peer_fault_stats(self->fd, &list));
	list = (struct rpage_list) { 0 };
	EXPECT_EQ(0, rpage_peer_fault_stats(self->fd, &list));
}

TEST_F_TIMEOUT(map, stats_report_the_counters, 120)
{
	const uint64_t pages = 32;
	struct rpage_peer_fault_stats before, after;
	struct rpage_fault_stats st;
	struct rpage_prefetch pf;
	struct rpage_evict ev;
	struct rpage_unmap unmap;

	NEED_AREA(pages, 0);
	before = peer_fault_counters(_metadata, self);

	/* 8 pages prefetched, 24 faulted, 16 evicted of which 1 dirty. */
	pf = (struct rpage_prefetch) { .map_id = self->m.map_id,
				       .flags = RPAGE_PREFETCH_WAIT,
				       .length = 8 * page };
	ASSERT_EQ(0, rpage_map_prefetch(self->fd, &pf));
	ASSERT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 0, pages, SEED));
	self->addr[20 * page] ^= 1;
	ev = (struct rpage_evict) { .map_id = self->m.map_id, .offset = 16 * page,
				    .length = 16 * page };
	ASSERT_EQ(0, rpage_map_evict(self->fd, &ev));
	/* And one more fault. */
	EXPECT_EQ(UINT64_MAX, check_pages(self->addr, POOL_A, 0, 16, 1, SEED));

	st = area_stats(_metadata, self);
	EXPECT_EQ(25, st.faults);
	/* Fault-around maps some of the 8 prefetched pages with one fault. */
	EXPECT_LE(1, st.minor_faults + st.waits);
	EXPECT_GE(8, st.minor_faults + st.waits);
	EXPECT_EQ(8, st.prefetched);
	EXPECT_EQ(8, st.prefetch_hits);
	EXPECT_EQ(16, st.evicted);
	EXPECT_EQ(1, st.written);
	EXPECT_EQ(0, st.sigbus);
	EXPECT_EQ(st.faults + st.minor_faults + st.waits, hist_sum(st.latency));
	/* Each fault came with one lock or the other (a retry, again). */
	EXPECT_LE(st.faults + st.minor_faults + st.waits,
		  st.vma_locked + st.mmap_locked);
	/* A 4 KiB mapping: no 2 MiB fault, no fallback. */
	EXPECT_EQ(0, st.huge_faults);
	EXPECT_EQ(0, st.huge_fallbacks);
	for (size_t r = 0; r < sizeof(st.reserved) / sizeof(st.reserved[0]); r++) {
		EXPECT_EQ(0, st.reserved[r]);
	}

	/* The peer's counters keep what its mappings did, gone or not. */
	unmap = (struct rpage_unmap) { .map_id = self->m.map_id };
	ASSERT_EQ(0, munmap(self->addr, pages * page));
	ASSERT_EQ(0, rpage_map_destroy(self->fd, &unmap));
	after = peer_fault_counters(_metadata, self);
	EXPECT_STREQ(self->peer, after.name);
	EXPECT_EQ(0, after.reserved0);
	EXPECT_EQ(25, after.stats.faults - before.stats.faults);
	EXPECT_EQ(8, after.stats.prefetched - before.stats.prefetched);
	EXPECT_EQ(8, after.stats.prefetch_hits - before.stats.prefetch_hits);
	EXPECT_EQ(16, after.stats.evicted - before.stats.evicted);
	EXPECT_EQ(1, after.stats.written - before.stats.written);
	EXPECT_EQ(0, after.stats.sigbus - before.stats.sigbus);
	EXPECT_EQ(st.faults + st.minor_faults + st.waits,
		  hist_sum(after.stats.latency) - hist_sum(before.stats.latency));
}

/* A named mapping of all of @pool, called @name, root's, mode 0600. */
static struct rpage_map_add named_add(FIXTURE_DATA(map) *self, const char *name,
				      __u64 pool, uint64_t length)
{
	struct rpage_map_add add = {
		.peer_id = self->peer_id, .pool_id = pool, .length = length,
		.mode = 0600,
	};

	snprintf(add.name, sizeof(add.name), "%s", name);
	return add;
}

static int named_del(int fd, const char *name, __u32 flags)
{
	struct rpage_map_del del = { .flags = flags };

	snprintf(del.name, sizeof(del.name), "%s", name);
	return rpage_map_del(fd, &del);
}

TEST_F_TIMEOUT(map, named_map_rejects_bad_arguments, 120)
{
	const uint64_t size = 16 * page;
	struct rpage_map_add add;
	struct rpage_map_del del;
	static const char *const bad_names[] = {
		"", ".", "..", "a/b", "a b", "caf\xc3\xa9", "x\n",
	};
	pid_t pid;
	int status;

	NEED_PEER();
	make_pool(_metadata, self, POOL_A, 16, RPAGE_POOL_WRITABLE);
	named_del(self->fd, "t-named", RPAGE_MAP_DEL_FORCE);

	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		add = named_add(self, bad_names[i], POOL_A, size);
		EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add)) {
			TH_LOG("name '%s' taken", bad_names[i]);
		}
	}
	/* A name of RPAGE_NAME_MAX bytes has no room for its NUL. */
	add = named_add(self, "x", POOL_A, size);
	memset(add.name, 'x', sizeof(add.name));
	EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_A, size);
	add.mode = 01777;
	EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_A, size);
	add.reserved0 = 1;
	EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	for (int r = 0; r < 4; r++) {
		add = named_add(self, "t-named", POOL_A, size);
		add.reserved[r] = 1;
		EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	}
	add = named_add(self, "t-named", POOL_A, size);
	add.flags = ~RPAGE_MAP_FLAGS_ALL;
	EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_A, size - 1);
	EXPECT_EQ(-EINVAL, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_A, size + page);
	EXPECT_EQ(-ERANGE, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_NONE, size);
	EXPECT_EQ(-ENOENT, rpage_map_add(self->fd, &add));
	add = named_add(self, "t-named", POOL_A, size);
	add.peer_id = PEER_ID_NONE;
	EXPECT_EQ(-ENOENT, rpage_map_add(self->fd, &add));
	EXPECT_EQ(-EFAULT, ioctl(self->fd, RPAGE_IOC_MAP_ADD, NULL) ? -errno : 0);

	/* The good one; then the name is taken. */
	add = named_add(self, "t-named", POOL_A, size);
	ASSERT_EQ(0, rpage_map_add(self->fd, &add));
	EXPECT_NE(0, add.map_id);

	/* Its id serves the stats; UNMAP through a file never takes it. */
	struct rpage_map_stats st = { .map_id = add.map_id };
	struct rpage_unmap unmap = { .map_id = add.map_id };

	add = named_add(self, "t-named", POOL_A, size);
	EXPECT_EQ(-EEXIST, rpage_map_add(self->fd, &add));

	EXPECT_EQ(0, rpage_map_stats(self->fd, &st));
	EXPECT_EQ(-ENOENT, rpage_map_destroy(self->fd, &unmap));

	/* Deleting: bad input first, then the good one, then it is gone. */
	EXPECT_EQ(-EINVAL, named_del(self->fd, "t-named", 0x2));
	del = (struct rpage_map_del) { .reserved0 = 1 };
	strcpy(del.name, "t-named");
	EXPECT_EQ(-EINVAL, rpage_map_del(self->fd, &del));
	del = (struct rpage_map_del) { .reserved = { 1 } };
	strcpy(del.name, "t-named");
	EXPECT_EQ(-EINVAL, rpage_map_del(self->fd, &del));
	EXPECT_EQ(-ENOENT, named_del(self->fd, "t-none", 0));

	/* Without CAP_SYS_ADMIN: EPERM, on a file root opened. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rpage_map_add a = named_add(self, "t-other", POOL_A, size);

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(rpage_map_add(self->fd, &a) == -EPERM &&
		      named_del(self->fd, "t-named", RPAGE_MAP_DEL_FORCE) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	EXPECT_EQ(0, named_del(self->fd, "t-named", 0));
	EXPECT_EQ(-ENOENT, named_del(self->fd, "t-named", 0));
	EXPECT_EQ(-ENOENT, rpage_map_stats(self->fd, &st));
}

/*
 * A named mapping's pages are prefetched and evicted through its id from
 * a /dev/rpage file other than the one that made it, as an operator's
 * tool would while a VMM maps the node: the eviction writes back what
 * the VMM wrote, drops the pages from every process that maps the node
 * (a child here), and each refaults with the bytes last written.
 */
TEST_F_TIMEOUT(map, named_mapping_prefetch_and_evict_through_its_id, 120)
{
	const uint64_t pages = 64;
	unsigned char *buf = anon(pages), *addr;
	struct rpage_map_add add;
	struct rpage_prefetch pf;
	struct rpage_fault_stats st;
	struct rpage_evict ev;
	char path[64];
	int other, node, status, go[2], done[2];
	pid_t pid;
	char c;

	NEED_PEER();
	ASSERT_NE(NULL, buf);
	make_pool(_metadata, self, POOL_A, pages, RPAGE_POOL_WRITABLE);
	named_del(self->fd, "t-evict", RPAGE_MAP_DEL_FORCE);
	add = named_add(self, "t-evict", POOL_A, pages * page);
	ASSERT_EQ(0, rpage_map_add(self->fd, &add));
	snprintf(path, sizeof(path), "/dev/%s/t-evict", RPAGE_MAP_NODE_DIR);
	node = open(path, O_RDWR);
	ASSERT_LE(0, node) TH_LOG("open %s: %s", path, strerror(errno));
	addr = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_SHARED,
		    node, 0);
	ASSERT_NE(MAP_FAILED, addr);
	close(node);
	other = rpage_test_open();
	ASSERT_LE(0, other);

	/* Pages 0 to 31 prefetched through the other file: no fault reads them. */
	pf = (struct rpage_prefetch) {
		.map_id = add.map_id, .flags = RPAGE_PREFETCH_WAIT,
		.length = 32 * page,
	};
	ASSERT_EQ(0, rpage_map_prefetch(other, &pf));
	EXPECT_EQ(32, pf.queued);
	EXPECT_EQ(0, pf.failed);
	EXPECT_EQ(UINT64_MAX, check_pages(addr, POOL_A, 0, 0, pages, SEED));
	st = map_stats(_metadata, other, add.map_id);
	EXPECT_EQ(32, st.prefetched);
	EXPECT_EQ(32, st.prefetch_hits);
	EXPECT_EQ(32, st.faults);

	/*
	 * A child maps the node too and reads every page (the same pages: no
	 * READ); pages 8 to 23 then get the second pattern here.
	 */
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char *m;
		int fd = open(path, O_RDWR);

		m = fd < 0 ? MAP_FAILED : mmap(NULL, pages * page, PROT_READ,
					       MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			_exit(2);
		if (check_pages(m, POOL_A, 0, 0, pages, SEED) != UINT64_MAX)
			_exit(3);
		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		/* After the eviction: each page refaults, with the last write. */
		_exit(check_rewritten(m) == UINT64_MAX ? 0 : 5);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	st = map_stats(_metadata, other, add.map_id);
	EXPECT_EQ(32, st.faults);
	rpage_pattern_fill(addr + 8 * page, 16 * page, POOL_A, 8 * page, SEED2);

	ev = (struct rpage_evict) { .map_id = add.map_id, .length = pages * page };
	ASSERT_EQ(0, rpage_map_evict(other, &ev));
	EXPECT_EQ(pages, ev.evicted);
	EXPECT_EQ(16, ev.written);

	/* The pool has the write... */
	memset(buf, 0xa5, pages * page);
	ASSERT_EQ(0, io1(self->fd, false, self->peer_id, POOL_A, 0, pages * page, buf));
	EXPECT_EQ(UINT64_MAX, check_rewritten(buf));

	/* ...and the child, then this process, read every page again. */
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("child: status %#x", status);
	}
	EXPECT_EQ(UINT64_MAX, check_rewritten(addr));
	st = map_stats(_metadata, self->fd, add.map_id);
	EXPECT_EQ(pages, st.evicted);
	EXPECT_EQ(16, st.written);
	/* 32 before, then one READ per page after the eviction, whoever faults. */
	EXPECT_EQ(32 + pages, st.faults);
	EXPECT_EQ(0, st.sigbus);

	munmap(addr, pages * page);
	close(other);
	EXPECT_EQ(0, named_del(self->fd, "t-evict", 0));
	munmap(buf, pages * page);
}

TEST_HARNESS_MAIN
