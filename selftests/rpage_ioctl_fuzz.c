// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_ioctl_fuzz: a seeded fuzzer of the ioctls of /dev/rpage, run by
 * the guest of hostile input (selftests/guest/fuzz-single.sh).
 *
 *   rpage_ioctl_fuzz [-s SEED] [-n CALLS] [-j THREADS] [-T MAX_SECONDS]
 *                    [-P PEER] [-v]
 *
 * THREADS threads (4) make CALLS ioctl calls between them (100000), or
 * as many as they can in MAX_SECONDS (600). The peer PEER ("self") must
 * be this host itself, reached over loopback; its address is where the
 * fuzzer's own endpoints go. Each step of a thread is one of:
 *
 *  - a random command number of rpage's type letter (random direction,
 *    number and size) with a random buffer;
 *  - a valid command with random contents, or a valid structure with a
 *    field or two changed (reserved fields, flags, ids, lengths,
 *    offsets, counts, names without their NUL, addresses, the pointers
 *    inside), its argument passed as a valid buffer, NULL, an address
 *    that was mapped and is not any more, a read-only page, a kernel
 *    address or one cut short by a guard page;
 *  - a step of the objects' lives, racing the other threads: pools of
 *    a small set of ids created and destroyed, the thread's own memory
 *    exported, PEER's pools mapped, mmap()ed, touched (a pool destroyed
 *    meanwhile raises SIGBUS, which is caught), zapped (MADV_DONTNEED),
 *    split (munmap of a part), prefetched, evicted and unmapped; named
 *    mappings made, their nodes opened, sized and mmap()ed, and deleted
 *    with or without force; reads and writes, PEER's loss timeout set
 *    (0 to 2 s), peers and endpoints of the fuzzer's own added and
 *    deleted; now and then the thread's file is closed with all that
 *    outstanding and opened again, the file the threads share is
 *    replaced under them, or a child is forked that touches an
 *    inherited mapping, maybe prefetches or evicts it through the
 *    inherited file, and exits.
 *
 * Commands of a newer module (struct rpage_api.ioctls) than the fuzzer
 * knows get random bytes only, and may succeed.
 *
 * Every step draws from a generator seeded by SEED, the thread and the
 * step's number alone, so a thread's choices are the same in every run
 * of a seed (what they meet, the other threads decide). -v prints every
 * call before it is made, to standard error.
 *
 * Errno values are not checked, only that a call the fuzzer knows to be
 * invalid (a non-zero reserved field, unknown flag bits, a bad pointer
 * the call must read, ...) does not succeed: such a success prints
 * "unexpected success: CMD ..." and makes the exit status 1. Traffic
 * stays inside the host: peers of the fuzzer's own (fz-0 ...) are at
 * 192.0.2.100-199, its endpoints there or at PEER's address with ports
 * FZ_PORT and up; PEER itself, the host's other endpoints and pools
 * other than the fuzzer's (ids FZ_POOL_BASE to FZ_POOL_BASE + 7) are
 * never deleted, destroyed or written.
 *
 * At the end it prints one summary line ("summary: seed S threads N
 * calls N ok N EINVAL N ... seconds N unexpected N"), removes every
 * named mapping, pool, peer and endpoint it created (mappings and
 * exports go with its files), puts PEER's loss timeout back, and exits
 * 0, or 1 after an unexpected success or if something of its own was
 * left; 2 when it could not start.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "rpage_tool.h"

/* The fuzzer's pools: ids no test of a pool of its own uses. */
#define FZ_POOL_BASE	0x10000f000ULL
#define FZ_POOLS	8
#define FZ_POOL_MAX	(1ULL << 20)

/*
 * The shared-memory file RPAGE_IOC_POOL_FILE exports from: a memfd of
 * its own (twice FZ_POOL_MAX, so that ranges may run past its end), open
 * for writing and, through a second open, read-only.
 */
#define FZ_FILE_PAGES	(2 * FZ_POOL_MAX / 4096)

/* Its peers (fz-0 ...) and the ports of its endpoints at PEER's address. */
#define FZ_PEERS	8
#define FZ_PORT		17100
#define FZ_PORTS	8

/* Named mappings of the fuzzer's: fz-0 ... */
#define FZ_NAMED	4

/* Remote mappings one thread keeps mmap()ed at once. */
#define FZ_MAPS		6

/* Pages of each thread's buffers (each one followed by a guard page). */
#define FZ_ARG_PAGES	1
#define FZ_NEST_PAGES	12
#define FZ_SCRATCH_PAGES 64
#define FZ_ARENA_PAGES	288
#define FZ_RO_PAGES	16

/* Never mapped by anyone: the "unmapped address" (mapped, then not). */
#define FZ_HOLE		0x10000000ULL
#define FZ_HOLE_SIZE	(1ULL << 20)
/* The kernel's direct map, its text, and the vsyscall page. */
#define FZ_KADDR	0xffff888000000000ULL
#define FZ_KTEXT	0xffffffff81000000ULL
#define FZ_VSYSCALL	0xffffffffff600000ULL
/* At and above this, access_ok() refuses any user access. */
#define FZ_USER_TOP	0x00007ffffffff000ULL

#define FZ_ERRNO_MAX	1024
#define FZ_NR_CMDS	(_RPAGE_MAP_HUGE_STATS + 1)
/* Bucket of the counters for command numbers rpage does not have. */
#define FZ_RANDOM	FZ_NR_CMDS
#define FZ_REPORT_MAX	50

/* Field kinds: how a field is mutated and checked. */
enum fz_kind {
	K_RSV,		/* must be zero */
	K_FLAGS,	/* bits outside .mask are refused */
	K_OUT,		/* written by the call, ignored on input */
	K_POOL,		/* a pool id */
	K_PEER,		/* a peer id */
	K_MAP,		/* a mapping id */
	K_LEN,		/* a non-zero multiple of the page size */
	K_MAPLEN,	/* K_LEN, but 0 (and only 0) with RPAGE_MAP_TO_END */
	K_OFF,		/* a multiple of the page size */
	K_CAP,		/* a list's capacity */
	K_ENTRIES,	/* a list's entries pointer */
	K_IOV,		/* struct rpage_io's iovec pointer */
	K_NRIOV,	/* struct rpage_io's count */
	K_UADDR,	/* an address of the caller's memory */
	K_NAME,		/* a peer name */
	K_SADDR,	/* a struct rpage_addr */
	K_API,		/* struct rpage_api.api */
	K_FEATURES,	/* struct rpage_api.features */
	K_DEPTH,	/* a prefetch depth */
	K_MASK,		/* struct rpage_peer_set.mask */
	K_LOSS,		/* a loss timeout */
	K_MODE,		/* permission bits, at most 0777 */
	K_UGID,		/* a user or group id; (u32)-1 is none */
	K_FD,		/* a file descriptor */
	K_TRANSPORT,	/* a peer's or an endpoint's transport, beside an address */
};

struct fz_field {
	const char *name;
	unsigned short off;
	unsigned short size;
	unsigned char kind;
	unsigned long long mask;
};

#define FLD(type, member, kind, mask) \
	{ #member, offsetof(type, member), sizeof(((type *)0)->member), kind, mask }

static const struct fz_field f_api[] = {
	FLD(struct rpage_api, api, K_API, 0),
	FLD(struct rpage_api, reserved0, K_RSV, 0),
	FLD(struct rpage_api, features, K_FEATURES, 0),
	FLD(struct rpage_api, ioctls, K_OUT, 0),
	FLD(struct rpage_api, reserved, K_RSV, 0),
};

static const struct fz_field f_list[] = {
	FLD(struct rpage_list, entries, K_ENTRIES, 0),
	FLD(struct rpage_list, capacity, K_CAP, 0),
	FLD(struct rpage_list, count, K_RSV, 0),
	FLD(struct rpage_list, reserved, K_RSV, 0),
};

static const struct fz_field f_endpoint_add[] = {
	FLD(struct rpage_endpoint, addr, K_SADDR, 0),
	FLD(struct rpage_endpoint, transport, K_TRANSPORT, 0),
	FLD(struct rpage_endpoint, reserved0, K_RSV, 0),
	FLD(struct rpage_endpoint, reserved, K_RSV, 0),
};

/* Delete goes by address and wants the transport zero. */
static const struct fz_field f_endpoint_del[] = {
	FLD(struct rpage_endpoint, addr, K_SADDR, 0),
	FLD(struct rpage_endpoint, transport, K_RSV, 0),
	FLD(struct rpage_endpoint, reserved0, K_RSV, 0),
	FLD(struct rpage_endpoint, reserved, K_RSV, 0),
};

static const struct fz_field f_peer_add[] = {
	FLD(struct rpage_peer_config, name, K_NAME, 0),
	FLD(struct rpage_peer_config, addr, K_SADDR, 0),
	FLD(struct rpage_peer_config, flags, K_FLAGS, 0),
	FLD(struct rpage_peer_config, transport, K_TRANSPORT, 0),
	FLD(struct rpage_peer_config, reserved, K_RSV, 0),
};

/* Delete goes by name and wants the address zero. */
static const struct fz_field f_peer_del[] = {
	FLD(struct rpage_peer_config, name, K_NAME, 0),
	FLD(struct rpage_peer_config, addr, K_RSV, 0),
	FLD(struct rpage_peer_config, flags, K_FLAGS, 0),
	FLD(struct rpage_peer_config, transport, K_RSV, 0),
	FLD(struct rpage_peer_config, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_create[] = {
	FLD(struct rpage_pool_create, id, K_POOL, 0),
	FLD(struct rpage_pool_create, length, K_LEN, 0),
	FLD(struct rpage_pool_create, flags, K_FLAGS, RPAGE_POOL_FLAGS_ALL),
	FLD(struct rpage_pool_create, reserved0, K_RSV, 0),
	FLD(struct rpage_pool_create, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_export[] = {
	FLD(struct rpage_pool_export, id, K_POOL, 0),
	FLD(struct rpage_pool_export, addr, K_UADDR, 0),
	FLD(struct rpage_pool_export, length, K_LEN, 0),
	FLD(struct rpage_pool_export, flags, K_FLAGS, RPAGE_POOL_FLAGS_ALL),
	FLD(struct rpage_pool_export, reserved0, K_RSV, 0),
	FLD(struct rpage_pool_export, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_destroy[] = {
	FLD(struct rpage_pool_destroy, id, K_POOL, 0),
	FLD(struct rpage_pool_destroy, reserved, K_RSV, 0),
};

static const struct fz_field f_io[] = {
	FLD(struct rpage_io, iov, K_IOV, 0),
	FLD(struct rpage_io, nr_iov, K_NRIOV, 0),
	FLD(struct rpage_io, flags, K_FLAGS, 0),
	FLD(struct rpage_io, reserved, K_RSV, 0),
};

static const struct fz_field f_iovec[] = {
	FLD(struct rpage_iovec, peer_id, K_PEER, 0),
	FLD(struct rpage_iovec, reserved0, K_RSV, 0),
	FLD(struct rpage_iovec, pool_id, K_POOL, 0),
	FLD(struct rpage_iovec, offset, K_OFF, 0),
	FLD(struct rpage_iovec, length, K_LEN, 0),
	FLD(struct rpage_iovec, addr, K_UADDR, 0),
};

static const struct fz_field f_map[] = {
	FLD(struct rpage_map, peer_id, K_PEER, 0),
	FLD(struct rpage_map, flags, K_FLAGS, RPAGE_MAP_FLAGS_ALL),
	FLD(struct rpage_map, pool_id, K_POOL, 0),
	FLD(struct rpage_map, offset, K_OFF, 0),
	FLD(struct rpage_map, length, K_MAPLEN, 0),
	FLD(struct rpage_map, map_id, K_OUT, 0),
	FLD(struct rpage_map, mmap_offset, K_OUT, 0),
	FLD(struct rpage_map, reserved, K_RSV, 0),
};

static const struct fz_field f_unmap[] = {
	FLD(struct rpage_unmap, map_id, K_MAP, 0),
	FLD(struct rpage_unmap, reserved, K_RSV, 0),
};

static const struct fz_field f_prefetch[] = {
	FLD(struct rpage_prefetch, map_id, K_MAP, 0),
	FLD(struct rpage_prefetch, flags, K_FLAGS, RPAGE_PREFETCH_FLAGS_ALL),
	FLD(struct rpage_prefetch, depth, K_DEPTH, 0),
	FLD(struct rpage_prefetch, offset, K_OFF, 0),
	FLD(struct rpage_prefetch, length, K_LEN, 0),
	FLD(struct rpage_prefetch, queued, K_OUT, 0),
	FLD(struct rpage_prefetch, failed, K_OUT, 0),
	FLD(struct rpage_prefetch, reserved, K_RSV, 0),
};

static const struct fz_field f_evict[] = {
	FLD(struct rpage_evict, map_id, K_MAP, 0),
	FLD(struct rpage_evict, flags, K_FLAGS, 0),
	FLD(struct rpage_evict, reserved0, K_RSV, 0),
	FLD(struct rpage_evict, offset, K_OFF, 0),
	FLD(struct rpage_evict, length, K_LEN, 0),
	FLD(struct rpage_evict, evicted, K_OUT, 0),
	FLD(struct rpage_evict, written, K_OUT, 0),
	FLD(struct rpage_evict, reserved, K_RSV, 0),
};

static const struct fz_field f_map_stats[] = {
	FLD(struct rpage_map_stats, map_id, K_MAP, 0),
	FLD(struct rpage_map_stats, reserved, K_RSV, 0),
	FLD(struct rpage_map_stats, stats, K_OUT, 0),
};

static const struct fz_field f_map_huge_stats[] = {
	FLD(struct rpage_map_huge_stats, map_id, K_MAP, 0),
	FLD(struct rpage_map_huge_stats, reserved, K_RSV, 0),
	FLD(struct rpage_map_huge_stats, fallbacks, K_OUT, 0),
};

static const struct fz_field f_peer_set[] = {
	FLD(struct rpage_peer_set, name, K_NAME, 0),
	FLD(struct rpage_peer_set, mask, K_MASK, 0),
	FLD(struct rpage_peer_set, loss_timeout_ms, K_LOSS, 0),
	FLD(struct rpage_peer_set, reserved, K_RSV, 0),
};

static const struct fz_field f_map_add[] = {
	FLD(struct rpage_map_add, name, K_NAME, 0),
	FLD(struct rpage_map_add, peer_id, K_PEER, 0),
	FLD(struct rpage_map_add, flags, K_FLAGS, RPAGE_MAP_FLAGS_ALL),
	FLD(struct rpage_map_add, pool_id, K_POOL, 0),
	FLD(struct rpage_map_add, offset, K_OFF, 0),
	FLD(struct rpage_map_add, length, K_MAPLEN, 0),
	FLD(struct rpage_map_add, uid, K_UGID, 0),
	FLD(struct rpage_map_add, gid, K_UGID, 0),
	FLD(struct rpage_map_add, mode, K_MODE, 0),
	FLD(struct rpage_map_add, reserved0, K_RSV, 0),
	FLD(struct rpage_map_add, map_id, K_OUT, 0),
	FLD(struct rpage_map_add, reserved, K_RSV, 0),
};

static const struct fz_field f_map_del[] = {
	FLD(struct rpage_map_del, name, K_NAME, 0),
	FLD(struct rpage_map_del, flags, K_FLAGS, RPAGE_MAP_DEL_FLAGS_ALL),
	FLD(struct rpage_map_del, reserved0, K_RSV, 0),
	FLD(struct rpage_map_del, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_file[] = {
	FLD(struct rpage_pool_file, id, K_POOL, 0),
	FLD(struct rpage_pool_file, fd, K_FD, 0),
	FLD(struct rpage_pool_file, flags, K_FLAGS, RPAGE_POOL_FLAGS_ALL),
	FLD(struct rpage_pool_file, offset, K_OFF, 0),
	FLD(struct rpage_pool_file, length, K_LEN, 0),
	FLD(struct rpage_pool_file, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_set_peers[] = {
	FLD(struct rpage_pool_peers, id, K_POOL, 0),
	FLD(struct rpage_pool_peers, peers, K_UADDR, 0),
	FLD(struct rpage_pool_peers, nr_peers, K_CAP, 0),
	FLD(struct rpage_pool_peers, flags, K_FLAGS, RPAGE_POOL_PEERS_FLAGS_ALL),
	FLD(struct rpage_pool_peers, reserved, K_RSV, 0),
};

static const struct fz_field f_pool_get_peers[] = {
	FLD(struct rpage_pool_peers, id, K_POOL, 0),
	FLD(struct rpage_pool_peers, peers, K_UADDR, 0),
	FLD(struct rpage_pool_peers, nr_peers, K_CAP, 0),
	FLD(struct rpage_pool_peers, flags, K_FLAGS, 0),
	FLD(struct rpage_pool_peers, reserved, K_RSV, 0),
};

struct fz_cmd {
	const char *name;
	unsigned long cmd;
	const struct fz_field *fields;
	unsigned int nr_fields;
	/* A list command's entry size; 0 for the others. */
	unsigned int entry_size;
};

#define CMD(nr, ioc, tab) \
	[nr] = { #ioc, RPAGE_IOC_##ioc, tab, ARRAY_LEN(tab), 0 }
#define LIST(nr, ioc, entry) \
	[nr] = { #ioc, RPAGE_IOC_##ioc, f_list, ARRAY_LEN(f_list), sizeof(entry) }

static const struct fz_cmd fz_cmds[FZ_NR_CMDS] = {
	CMD(_RPAGE_API, API, f_api),
	LIST(_RPAGE_DEVICE_LIST, DEVICE_LIST, struct rpage_device_info),
	CMD(_RPAGE_ENDPOINT_ADD, ENDPOINT_ADD, f_endpoint_add),
	CMD(_RPAGE_ENDPOINT_DEL, ENDPOINT_DEL, f_endpoint_del),
	LIST(_RPAGE_ENDPOINT_LIST, ENDPOINT_LIST, struct rpage_endpoint_info),
	CMD(_RPAGE_PEER_ADD, PEER_ADD, f_peer_add),
	CMD(_RPAGE_PEER_DEL, PEER_DEL, f_peer_del),
	LIST(_RPAGE_PEER_LIST, PEER_LIST, struct rpage_peer_info),
	CMD(_RPAGE_POOL_CREATE, POOL_CREATE, f_pool_create),
	CMD(_RPAGE_POOL_EXPORT, POOL_EXPORT, f_pool_export),
	CMD(_RPAGE_POOL_DESTROY, POOL_DESTROY, f_pool_destroy),
	LIST(_RPAGE_POOL_LIST, POOL_LIST, struct rpage_pool_info),
	LIST(_RPAGE_REMOTE_POOL_LIST, REMOTE_POOL_LIST, struct rpage_remote_pool_info),
	CMD(_RPAGE_READ, READ, f_io),
	CMD(_RPAGE_WRITE, WRITE, f_io),
	LIST(_RPAGE_PEER_STATS, PEER_STATS, struct rpage_peer_stats),
	LIST(_RPAGE_DEVICE_STATS, DEVICE_STATS, struct rpage_device_stats),
	CMD(_RPAGE_MAP, MAP, f_map),
	CMD(_RPAGE_UNMAP, UNMAP, f_unmap),
	CMD(_RPAGE_PREFETCH, PREFETCH, f_prefetch),
	CMD(_RPAGE_EVICT, EVICT, f_evict),
	CMD(_RPAGE_MAP_STATS, MAP_STATS, f_map_stats),
	LIST(_RPAGE_PEER_FAULT_STATS, PEER_FAULT_STATS, struct rpage_peer_fault_stats),
	CMD(_RPAGE_PEER_SET, PEER_SET, f_peer_set),
	LIST(_RPAGE_PEER_STATUS, PEER_STATUS, struct rpage_peer_status),
	CMD(_RPAGE_MAP_ADD, MAP_ADD, f_map_add),
	CMD(_RPAGE_MAP_DEL, MAP_DEL, f_map_del),
	LIST(_RPAGE_MAP_LIST, MAP_LIST, struct rpage_map_info),
	CMD(_RPAGE_POOL_FILE, POOL_FILE, f_pool_file),
	CMD(_RPAGE_POOL_SET_PEERS, POOL_SET_PEERS, f_pool_set_peers),
	CMD(_RPAGE_POOL_GET_PEERS, POOL_GET_PEERS, f_pool_get_peers),
	CMD(_RPAGE_MAP_HUGE_STATS, MAP_HUGE_STATS, f_map_huge_stats),
};

/* Big enough for any argument structure. */
union fz_arg {
	struct rpage_api api;
	struct rpage_list list;
	struct rpage_endpoint ep;
	struct rpage_peer_config peer;
	struct rpage_pool_create create;
	struct rpage_pool_export export;
	struct rpage_pool_destroy destroy;
	struct rpage_io io;
	struct rpage_map map;
	struct rpage_unmap unmap;
	struct rpage_prefetch prefetch;
	struct rpage_evict evict;
	struct rpage_map_stats map_stats;
	struct rpage_map_huge_stats huge_stats;
	struct rpage_peer_set set;
	struct rpage_map_add add;
	struct rpage_map_del del;
	struct rpage_pool_file file;
	struct rpage_pool_peers peers;
	unsigned char bytes[1024];
};

/* How a call's argument pointer is passed. */
enum fz_ptr {
	P_VALID,	/* the structure, in writable memory */
	P_ODD,		/* the same at an odd address */
	P_RO,		/* the same, through a read-only view */
	P_SHORT,	/* its last bytes cut off by a guard page */
	P_NULL,
	P_HOLE,		/* an address mapped once and unmapped */
	P_KERNEL,
	P_NONCANON,
};

static const char *const fz_ptr_names[] = {
	"valid", "odd", "read-only", "short", "NULL", "unmapped", "kernel",
	"non-canonical",
};

/* Which file of a thread a call goes through. */
enum fz_file {
	F_OWN,		/* the thread's own, opened O_RDWR */
	F_SHARED,	/* the one all threads share */
	F_RDONLY,	/* the thread's, opened O_RDONLY */
	F_NOAPI,	/* the thread's, never handshaken */
};

/* Where an address lies, as far as the fuzzer knows. */
enum fz_where {
	W_BAD,		/* nothing can be mapped there */
	W_SINK,		/* a buffer the kernel may write, a guard page after */
	W_RO,		/* read-only memory, a guard page after */
	W_SELF,		/* the fuzzer's own argument buffers */
	W_UNKNOWN,
};

struct fz_map {
	void *area;		/* mmap()ed, a guard page after; NULL if none */
	size_t area_len;
	__u64 map_id;		/* 0 once unmapped or its file closed */
	__u64 map_len;
	bool shared;		/* made through the shared file */
	bool named;		/* a named mapping, the host's */
	bool gone;		/* its pool was seen destroyed (SIGBUS) */
};

struct fz_thread {
	unsigned int idx;
	pthread_t tid;
	uint64_t seed;
	uint64_t rng;
	uint64_t step;
	uint64_t calls_wanted;
	int fd, fd_rdonly, fd_noapi;
	char *arg_rw, *arg_ro;		/* FZ_ARG_PAGES, one memfd, two views */
	char *nest_rw, *nest_ro;	/* FZ_NEST_PAGES, likewise */
	char *scratch;			/* FZ_SCRATCH_PAGES */
	char *arena;			/* FZ_ARENA_PAGES, what it exports */
	struct fz_map maps[FZ_MAPS];
	__u64 last_map_id;
	__u64 pool_len[FZ_POOLS];	/* as last listed by PEER; 0: unknown */

	uint64_t calls, ok;
	uint64_t err[FZ_ERRNO_MAX];
	uint64_t cmd_calls[FZ_NR_CMDS + 1], cmd_ok[FZ_NR_CMDS + 1];
	uint64_t touches, sigbus, mmaps, forks, reopens, swaps;
	uint64_t unexpected;
};

static struct {
	uint64_t seed;
	unsigned int threads;
	uint64_t calls;
	unsigned int max_seconds;
	const char *peer_name;
	bool verbose;

	__u32 self_id;
	__u8 self_ip[4];
	bool self_ip_ok;		/* PEER is at an address in 192.0.2.0/24 */
	__u32 self_loss_ms;
	/* The commands the module has (struct rpage_api.ioctls). */
	__u64 module_ioctls;
	uint64_t max_pool;
	int shared_fd;
	pthread_mutex_t shared_lock;
	int file_fd, file_ro_fd;	/* FZ_FILE_PAGES of a memfd */
	char *ro_area;
	uint64_t deadline_ms;
	pthread_mutex_t out_lock;
	atomic_uint_fast64_t reported;
} fz = {
	.seed = 0,
	.threads = 4,
	.calls = 100000,
	.max_seconds = 600,
	.peer_name = "self",
	.shared_fd = -1,
	.shared_lock = PTHREAD_MUTEX_INITIALIZER,
	.out_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- random numbers -------------------------------------------------- */

static uint64_t fz_mix(uint64_t x)
{
	return rpage_pattern_mix(x + 0x9E3779B97F4A7C15ULL);
}

static uint64_t rnd(struct fz_thread *t)
{
	t->rng += 0x9E3779B97F4A7C15ULL;
	return rpage_pattern_mix(t->rng);
}

static uint64_t rnd_below(struct fz_thread *t, uint64_t n)
{
	return n ? rnd(t) % n : 0;
}

static bool chance(struct fz_thread *t, unsigned int percent)
{
	return rnd_below(t, 100) < percent;
}

static const uint64_t fz_interesting[] = {
	0, 1, 2, 3, 7, 8, 15, 16, 63, 64, 255, 256, 257, 1023, 1024, 1025,
	4095, 4096, 4097, 8192, 65536, 1ULL << 20, 0x7fffffff, 0x80000000,
	0xffffffff, 0x100000000ULL, 1ULL << 44, (1ULL << 44) + 4096,
	1ULL << 63, ~0ULL, ~0ULL - 4095, ~0ULL - 1, 0x8000000000000000ULL - 4096,
};

/* A value worth trying in a field of any kind. */
static uint64_t rnd_value(struct fz_thread *t)
{
	switch (rnd_below(t, 4)) {
	case 0:
	case 1:
		return fz_interesting[rnd_below(t, ARRAY_LEN(fz_interesting))];
	case 2:
		return rnd_below(t, 1 << 16);
	default:
		return rnd(t);
	}
}

static void rnd_bytes(struct fz_thread *t, void *buf, size_t len)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)rnd(t);
}

/* 1 to 256 pages, mostly few. */
static uint64_t rnd_pages(struct fz_thread *t)
{
	unsigned int r = (unsigned int)rnd_below(t, 100);

	if (r < 70)
		return 1 + rnd_below(t, 4);
	if (r < 95)
		return 1 + rnd_below(t, 64);
	return 1 + rnd_below(t, FZ_POOL_MAX / page);
}

static __u64 fz_pool_id(unsigned int k)
{
	return FZ_POOL_BASE + k % FZ_POOLS;
}

static bool fz_pool_ours(__u64 id)
{
	return id >= FZ_POOL_BASE && id < FZ_POOL_BASE + FZ_POOLS;
}

/* ---- fields ----------------------------------------------------------- */

static uint64_t fld_get(const void *buf, const struct fz_field *f)
{
	const char *p = (const char *)buf + f->off;
	__u16 v16;
	__u32 v32;
	__u64 v64;

	switch (f->size) {
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	case 8:
		memcpy(&v64, p, 8);
		return v64;
	}
	return 0;
}

static void fld_set(void *buf, const struct fz_field *f, uint64_t val)
{
	char *p = (char *)buf + f->off;
	__u16 v16 = (__u16)val;
	__u32 v32 = (__u32)val;

	switch (f->size) {
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	case 8:
		memcpy(p, &val, 8);
		break;
	}
}

static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* What rpage_name_valid() accepts. */
static bool name_valid(const char *name)
{
	size_t len = strnlen(name, RPAGE_NAME_MAX);

	if (!len || len == RPAGE_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char_ok(name[i]))
			return false;
	return true;
}

/* What rpage_addr_to_sockaddr() accepts. */
static bool saddr_valid(const struct rpage_addr *a)
{
	static const __u8 zero[16];

	if (a->family == AF_INET)
		return !a->scope_id && !memcmp(a->addr + 4, zero, 12);
	if (a->family == AF_INET6) {
		static const __u8 mapped[12] = { [10] = 0xff, [11] = 0xff };

		if (!memcmp(a->addr, mapped, 12))
			return false;
		/* A scope only on a link-local address (fe80::/10). */
		if (a->scope_id && !(a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80))
			return false;
		return true;
	}
	return false;
}

/* ---- where an address lies ------------------------------------------ */

static bool in_range(uint64_t addr, const void *start, size_t len)
{
	uint64_t s = (uintptr_t)start;

	return start && addr >= s && addr < s + len;
}

/*
 * Where @addr lies, and in *@end the end of its buffer (where the guard
 * page begins) for W_SINK, W_RO and W_SELF.
 */
static enum fz_where fz_where(const struct fz_thread *t, uint64_t addr,
			      uint64_t *end)
{
	struct { const void *start; size_t len; enum fz_where where; } bufs[] = {
		{ t->scratch, FZ_SCRATCH_PAGES * page, W_SINK },
		{ t->arena, FZ_ARENA_PAGES * page, W_SINK },
		{ fz.ro_area, FZ_RO_PAGES * page, W_RO },
		{ t->arg_ro, FZ_ARG_PAGES * page, W_RO },
		{ t->nest_ro, FZ_NEST_PAGES * page, W_RO },
		{ t->arg_rw, FZ_ARG_PAGES * page, W_SELF },
		{ t->nest_rw, FZ_NEST_PAGES * page, W_SELF },
	};
	uint64_t dummy;

	if (!end)
		end = &dummy;
	*end = 0;
	if (addr < 0x10000 || addr >= FZ_USER_TOP ||
	    (addr >= FZ_HOLE && addr < FZ_HOLE + FZ_HOLE_SIZE))
		return W_BAD;
	for (size_t i = 0; i < ARRAY_LEN(bufs); i++) {
		if (in_range(addr, bufs[i].start, bufs[i].len)) {
			*end = (uintptr_t)bufs[i].start + bufs[i].len;
			return bufs[i].where;
		}
	}
	for (unsigned int i = 0; i < FZ_MAPS; i++) {
		const struct fz_map *m = &t->maps[i];

		if (in_range(addr, m->area, m->area_len)) {
			*end = (uintptr_t)m->area + m->area_len;
			return W_SINK;
		}
	}
	return W_UNKNOWN;
}

/* A pointer of any sort: good, bad, read-only, or ours in the wrong place. */
static uint64_t rnd_pointer(struct fz_thread *t)
{
	switch (rnd_below(t, 11)) {
	case 0:
		return 0;
	case 1:
		return FZ_HOLE + rnd_below(t, FZ_HOLE_SIZE / page) * page;
	case 2:
		return FZ_KADDR + rnd_below(t, 1 << 20) * page;
	case 3:
		return 0x8000000000000000ULL | (rnd(t) & ~(page - 1));
	case 4:
		return (uintptr_t)fz.ro_area + rnd_below(t, FZ_RO_PAGES) * page;
	case 5:
		return (uintptr_t)t->scratch + rnd_below(t, FZ_SCRATCH_PAGES) * page +
		       (chance(t, 20) ? 1 + rnd_below(t, page - 1) : 0);
	case 6: {
		const struct fz_map *m = &t->maps[rnd_below(t, FZ_MAPS)];

		if (m->area)
			return (uintptr_t)m->area +
			       rnd_below(t, m->area_len / page) * page;
		return (uintptr_t)t->arena;
	}
	case 7:
		return (uintptr_t)t->arena + rnd_below(t, FZ_ARENA_PAGES) * page;
	case 8:
		return FZ_VSYSCALL;
	case 9:
		return FZ_KTEXT;
	default:
		return rnd(t);
	}
}

/* ---- calls ------------------------------------------------------------ */

static int fz_fd(const struct fz_thread *t, enum fz_file file)
{
	switch (file) {
	case F_SHARED:
		return fz.shared_fd;
	case F_RDONLY:
		return t->fd_rdonly;
	case F_NOAPI:
		return t->fd_noapi;
	default:
		return t->fd;
	}
}

static const char *fz_cmd_name(unsigned long cmd, char *buf, size_t len)
{
	unsigned int nr = _IOC_NR(cmd);

	if (nr < FZ_NR_CMDS && fz_cmds[nr].cmd == cmd)
		return fz_cmds[nr].name;
	snprintf(buf, len, "0x%08lx (dir %lu nr %#x size %lu)", cmd,
		 (unsigned long)_IOC_DIR(cmd), nr, (unsigned long)_IOC_SIZE(cmd));
	return buf;
}

static void __attribute__((format(printf, 2, 3)))
fz_report(struct fz_thread *t, const char *fmt, ...)
{
	va_list ap;

	t->unexpected++;
	if (atomic_fetch_add(&fz.reported, 1) >= FZ_REPORT_MAX)
		return;
	pthread_mutex_lock(&fz.out_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (thread %u step %" PRIu64 ", seed %" PRIu64 ")\n", t->idx,
	       t->step, fz.seed);
	fflush(stdout);
	pthread_mutex_unlock(&fz.out_lock);
}

/*
 * One ioctl: counted, and reported if it succeeds although @invalid
 * says why it cannot. Returns the errno, 0 on success.
 */
static int fz_ioctl(struct fz_thread *t, enum fz_file file, unsigned long cmd,
		    uint64_t arg, const char *invalid, const char *how)
{
	unsigned int nr = _IOC_NR(cmd);
	unsigned int bucket = nr < FZ_NR_CMDS && fz_cmds[nr].cmd == cmd ?
			      nr : FZ_RANDOM;
	char name[80];
	int ret, err;

	if (fz.verbose) {
		pthread_mutex_lock(&fz.out_lock);
		fprintf(stderr, "[%u.%" PRIu64 "] %s file %d arg %#" PRIx64 " %s%s%s\n",
			t->idx, t->step, fz_cmd_name(cmd, name, sizeof(name)),
			file, arg, how, invalid ? " invalid: " : "",
			invalid ? invalid : "");
		pthread_mutex_unlock(&fz.out_lock);
	}
	ret = ioctl(fz_fd(t, file), cmd, (void *)(uintptr_t)arg);
	err = ret < 0 ? errno : 0;
	t->calls++;
	t->cmd_calls[bucket]++;
	t->err[err < FZ_ERRNO_MAX ? err : FZ_ERRNO_MAX - 1]++;
	if (!err) {
		t->ok++;
		t->cmd_ok[bucket]++;
		if (invalid)
			fz_report(t, "unexpected success: %s %s (argument %s, file %d)",
				  fz_cmd_name(cmd, name, sizeof(name)), invalid,
				  how, file);
	}
	return err;
}

/* ---- valid arguments -------------------------------------------------- */

static __u64 fz_pick_pool(struct fz_thread *t)
{
	unsigned int k = (unsigned int)rnd_below(t, FZ_POOLS);

	/* Rather one PEER has announced. */
	for (unsigned int i = 0; i < FZ_POOLS && chance(t, 70); i++) {
		if (t->pool_len[(k + i) % FZ_POOLS]) {
			k = (k + i) % FZ_POOLS;
			break;
		}
	}
	return fz_pool_id(k);
}

/* A range of @len bytes (0: unknown, a few pages then) as offset, length. */
static void fz_pick_range(struct fz_thread *t, __u64 len, __u64 *offset,
			  __u64 *length)
{
	__u64 pages = len ? len / page : 4;
	__u64 first = rnd_below(t, pages);

	if (!pages) {
		*offset = 0;
		*length = page;
		return;
	}
	if (chance(t, 30))
		first = 0;
	*offset = first * page;
	*length = (1 + rnd_below(t, chance(t, 70) ? 4 : pages - first)) * page;
	if (*offset + *length > pages * page)
		*length = (pages - first) * page;
}

/* A live mapping of the thread's, or a slot without one. */
static struct fz_map *fz_pick_map(struct fz_thread *t, bool with_id, bool with_area)
{
	unsigned int k = (unsigned int)rnd_below(t, FZ_MAPS);

	for (unsigned int i = 0; i < FZ_MAPS; i++) {
		struct fz_map *m = &t->maps[(k + i) % FZ_MAPS];

		if ((!with_id || m->map_id) && (!with_area || m->area))
			return m;
	}
	return with_id || with_area ? NULL : &t->maps[k];
}

/* Where in the thread's buffers @len bytes of a READ may land. */
static uint64_t fz_pick_buffer(struct fz_thread *t, __u64 len)
{
	struct fz_map *m;

	if (chance(t, 10)) {
		m = fz_pick_map(t, false, true);
		if (m && m->area_len >= len)
			return (uintptr_t)m->area +
			       rnd_below(t, (m->area_len - len) / page + 1) * page;
	}
	if (chance(t, 10) && len <= FZ_ARENA_PAGES * page)
		return (uintptr_t)t->arena +
		       rnd_below(t, FZ_ARENA_PAGES - len / page + 1) * page;
	if (len > FZ_SCRATCH_PAGES * page)
		len = FZ_SCRATCH_PAGES * page;
	return (uintptr_t)t->scratch +
	       rnd_below(t, FZ_SCRATCH_PAGES - len / page + 1) * page;
}

static void fz_self_addr(struct rpage_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	memcpy(a->addr, fz.self_ip, 4);
}

/* An address for a fuzzer's peer, 192.0.2.(100 + k). */
static void fz_peer_addr(struct rpage_addr *a, unsigned int k)
{
	static const __u8 net[3] = { 192, 0, 2 };

	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	memcpy(a->addr, net, 3);
	a->addr[3] = (__u8)(100 + k % 100);
}

static void fz_endpoint_addr(struct fz_thread *t, struct rpage_addr *a)
{
	if (fz.self_ip_ok && chance(t, 80)) {
		fz_self_addr(a);
		a->port = (__u16)(FZ_PORT + rnd_below(t, FZ_PORTS));
	} else {
		fz_peer_addr(a, (unsigned int)rnd_below(t, 100));
		a->port = (__u16)(chance(t, 50) ? 0 : 1 + rnd_below(t, 65535));
	}
}

static void fz_build_iovs(struct fz_thread *t, bool write, struct rpage_io *io)
{
	unsigned int n = (unsigned int)(chance(t, 80) ? 1 + rnd_below(t, 4) :
					1 + rnd_below(t, 64));
	size_t bytes = n * sizeof(struct rpage_iovec);
	char *at = t->nest_rw + FZ_NEST_PAGES * page - bytes;
	struct rpage_iovec *iov = (struct rpage_iovec *)at;

	for (unsigned int i = 0; i < n; i++) {
		__u64 id = fz_pick_pool(t);
		__u64 len = t->pool_len[id - FZ_POOL_BASE];

		memset(&iov[i], 0, sizeof(iov[i]));
		iov[i].peer_id = fz.self_id;
		iov[i].pool_id = id;
		fz_pick_range(t, len, &iov[i].offset, &iov[i].length);
		if (iov[i].length > 16 * page)
			iov[i].length = 16 * page;
		iov[i].addr = fz_pick_buffer(t, iov[i].length);
		(void)write;
	}
	io->iov = (uintptr_t)at;
	if (chance(t, 10))
		io->iov = (uintptr_t)t->nest_ro + (at - t->nest_rw);
	io->nr_iov = n;
}

/* Fills @a with a valid argument of command @nr. */
static void fz_build(struct fz_thread *t, unsigned int nr, union fz_arg *a)
{
	const struct fz_cmd *c = &fz_cmds[nr];

	memset(a, 0, sizeof(*a));
	if (c->entry_size) {
		__u32 cap = (__u32)(chance(t, 20) ? 0 : 1 + rnd_below(t, 16));

		a->list.capacity = cap;
		if (cap)
			a->list.entries = (uintptr_t)t->scratch +
				FZ_SCRATCH_PAGES * page - (uint64_t)cap * c->entry_size;
		return;
	}
	switch (nr) {
	case _RPAGE_API:
		a->api.api = RPAGE_API;
		a->api.features = rnd(t) & RPAGE_FEATURES_ALL;
		break;
	case _RPAGE_ENDPOINT_ADD:
	case _RPAGE_ENDPOINT_DEL:
		fz_endpoint_addr(t, &a->ep.addr);
		break;
	case _RPAGE_PEER_ADD: {
		unsigned int k = (unsigned int)rnd_below(t, FZ_PEERS);

		snprintf(a->peer.name, sizeof(a->peer.name), "fz-%u", k);
		fz_peer_addr(&a->peer.addr, k);
		if (chance(t, 30))
			a->peer.addr.port = (__u16)(1 + rnd_below(t, 65535));
		break;
	}
	case _RPAGE_PEER_DEL:
		snprintf(a->peer.name, sizeof(a->peer.name), "fz-%u",
			 (unsigned int)rnd_below(t, FZ_PEERS));
		break;
	case _RPAGE_POOL_CREATE:
		a->create.id = fz_pool_id((unsigned int)rnd(t));
		a->create.length = rnd_pages(t) * page;
		a->create.flags = (__u32)(rnd(t) & RPAGE_POOL_FLAGS_ALL);
		break;
	case _RPAGE_POOL_EXPORT: {
		__u64 pages = rnd_pages(t);
		struct fz_map *m = fz_pick_map(t, false, true);

		a->export.id = fz_pool_id((unsigned int)rnd(t));
		a->export.length = pages * page;
		a->export.flags = (__u32)(rnd(t) & RPAGE_POOL_FLAGS_ALL);
		a->export.addr = (uintptr_t)t->arena +
			rnd_below(t, FZ_ARENA_PAGES - pages + 1) * page;
		if (chance(t, 5) && pages <= FZ_RO_PAGES) {
			a->export.addr = (uintptr_t)fz.ro_area;
			a->export.flags &= ~RPAGE_POOL_WRITABLE;
		} else if (chance(t, 5) && m && m->area_len >= pages * page) {
			a->export.addr = (uintptr_t)m->area;
		}
		break;
	}
	case _RPAGE_POOL_DESTROY:
		a->destroy.id = fz_pool_id((unsigned int)rnd(t));
		break;
	case _RPAGE_READ:
	case _RPAGE_WRITE:
		fz_build_iovs(t, nr == _RPAGE_WRITE, &a->io);
		break;
	case _RPAGE_MAP: {
		__u64 id = fz_pick_pool(t);

		a->map.peer_id = fz.self_id;
		a->map.pool_id = id;
		a->map.flags = (__u32)(rnd(t) & RPAGE_MAP_FLAGS_ALL);
		fz_pick_range(t, t->pool_len[id - FZ_POOL_BASE], &a->map.offset,
			      &a->map.length);
		break;
	}
	case _RPAGE_UNMAP: {
		struct fz_map *m = fz_pick_map(t, true, false);

		a->unmap.map_id = m ? m->map_id : t->last_map_id + rnd_below(t, 3);
		break;
	}
	case _RPAGE_PREFETCH:
	case _RPAGE_EVICT:
	case _RPAGE_MAP_STATS:
	case _RPAGE_MAP_HUGE_STATS: {
		struct fz_map *m = fz_pick_map(t, true, false);
		__u64 id = m ? m->map_id : t->last_map_id, off, len;

		fz_pick_range(t, m ? m->map_len : 0, &off, &len);
		if (nr == _RPAGE_MAP_STATS) {
			a->map_stats.map_id = id;
		} else if (nr == _RPAGE_MAP_HUGE_STATS) {
			a->huge_stats.map_id = id;
		} else if (nr == _RPAGE_PREFETCH) {
			a->prefetch.map_id = id;
			a->prefetch.offset = off;
			a->prefetch.length = len;
			a->prefetch.flags = (__u32)(rnd(t) & RPAGE_PREFETCH_FLAGS_ALL);
			a->prefetch.depth = (__u32)(chance(t, 50) ? 0 :
				rnd_below(t, RPAGE_PREFETCH_DEPTH_MAX + 1));
		} else {
			a->evict.map_id = id;
			a->evict.offset = off;
			a->evict.length = len;
		}
		break;
	}
	case _RPAGE_MAP_ADD: {
		__u64 id = fz_pick_pool(t);

		snprintf(a->add.name, sizeof(a->add.name), "fz-%u",
			 (unsigned int)rnd_below(t, FZ_NAMED));
		a->add.peer_id = fz.self_id;
		a->add.pool_id = id;
		a->add.flags = (__u32)(rnd(t) & RPAGE_MAP_FLAGS_ALL);
		fz_pick_range(t, t->pool_len[id - FZ_POOL_BASE], &a->add.offset,
			      &a->add.length);
		a->add.uid = (__u32)(chance(t, 80) ? 0 : rnd_below(t, 70000));
		a->add.gid = (__u32)(chance(t, 80) ? 0 : rnd_below(t, 70000));
		a->add.mode = (__u32)(chance(t, 50) ? 0600 : rnd_below(t, 01000));
		break;
	}
	case _RPAGE_MAP_DEL:
		snprintf(a->del.name, sizeof(a->del.name), "fz-%u",
			 (unsigned int)rnd_below(t, FZ_NAMED));
		a->del.flags = (__u32)(rnd(t) & RPAGE_MAP_DEL_FLAGS_ALL);
		break;
	case _RPAGE_POOL_SET_PEERS:
	case _RPAGE_POOL_GET_PEERS: {
		/* Ids at the end of the scratch pages: this host, or none. */
		__u32 *ids = (__u32 *)((char *)t->scratch + FZ_SCRATCH_PAGES * page) - 4;

		a->peers.id = fz_pool_id((unsigned int)rnd(t));
		a->peers.peers = (uintptr_t)ids;
		if (nr == _RPAGE_POOL_GET_PEERS) {
			a->peers.nr_peers = 4;
			break;
		}
		ids[0] = fz.self_id;
		ids[1] = (__u32)rnd(t);
		a->peers.nr_peers = (__u32)rnd_below(t, 3);
		if (!a->peers.nr_peers && chance(t, 50))
			a->peers.flags = RPAGE_POOL_PEERS_ANY;
		break;
	}
	case _RPAGE_POOL_FILE:
		a->file.id = fz_pool_id((unsigned int)rnd(t));
		a->file.fd = chance(t, 80) ? fz.file_fd : fz.file_ro_fd;
		a->file.flags = (__u32)(rnd(t) & RPAGE_POOL_FLAGS_ALL);
		a->file.length = rnd_pages(t) * page;
		a->file.offset = rnd_below(t, FZ_FILE_PAGES - a->file.length / page + 1) * page;
		break;
	case _RPAGE_PEER_SET:
		if (chance(t, 70))
			snprintf(a->set.name, sizeof(a->set.name), "%s", fz.peer_name);
		else
			snprintf(a->set.name, sizeof(a->set.name), "fz-%u",
				 (unsigned int)rnd_below(t, FZ_PEERS));
		a->set.mask = RPAGE_PEER_SET_LOSS_TIMEOUT;
		a->set.loss_timeout_ms = (__u32)rnd_below(t, 2001);
		break;
	}
}

/* ---- mutations -------------------------------------------------------- */

static void mutate_name(struct fz_thread *t, char *name)
{
	static const char bad[] = " /%:@\t\n\xff\x80*";
	static const char good[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

	switch (rnd_below(t, 8)) {
	case 0:		/* no NUL at all */
		for (int i = 0; i < RPAGE_NAME_MAX; i++)
			name[i] = good[rnd_below(t, sizeof(good) - 1)];
		break;
	case 1:
		memset(name, 0, RPAGE_NAME_MAX);
		break;
	case 2: {
		size_t len = strnlen(name, RPAGE_NAME_MAX - 1);

		if (!len)
			len = 1;
		name[rnd_below(t, len)] = bad[rnd_below(t, sizeof(bad) - 1)];
		break;
	}
	case 3:
		memset(name, 0, RPAGE_NAME_MAX);
		snprintf(name, RPAGE_NAME_MAX, "%s", chance(t, 50) ? fz.peer_name :
			 chance(t, 50) ? "." : "..");
		break;
	case 4:		/* the longest valid one */
		for (int i = 0; i < RPAGE_NAME_MAX - 1; i++)
			name[i] = good[rnd_below(t, sizeof(good) - 1)];
		name[RPAGE_NAME_MAX - 1] = 0;
		break;
	case 5:
		rnd_bytes(t, name, RPAGE_NAME_MAX);
		break;
	case 6:
		memset(name, 0, RPAGE_NAME_MAX);
		snprintf(name, RPAGE_NAME_MAX, "fz-%u",
			 (unsigned int)rnd_below(t, FZ_PEERS + 2));
		break;
	default:	/* junk after the NUL */
		memset(name, 0, RPAGE_NAME_MAX);
		snprintf(name, RPAGE_NAME_MAX, "fz-%u",
			 (unsigned int)rnd_below(t, FZ_PEERS));
		rnd_bytes(t, name + 8, RPAGE_NAME_MAX - 8);
		break;
	}
}

static void mutate_saddr(struct fz_thread *t, struct rpage_addr *a)
{
	switch (rnd_below(t, 8)) {
	case 0:
		a->family = (__u16)rnd_value(t);
		break;
	case 1:
		a->family = AF_INET6;
		break;
	case 2:
		a->addr[4 + rnd_below(t, 12)] = (__u8)(1 + rnd_below(t, 255));
		break;
	case 3:
		a->scope_id = (__u32)(1 + rnd_below(t, 0xffffffff));
		break;
	case 4:
		a->port = (__u16)rnd(t);
		break;
	case 5:
		rnd_bytes(t, a->addr, 4);
		break;
	case 6:
		a->family = 0;
		break;
	default:
		rnd_bytes(t, a, sizeof(*a));
		break;
	}
}

static void mutate_field(struct fz_thread *t, void *buf, const struct fz_field *f)
{
	char *p = (char *)buf + f->off;
	uint64_t v = fld_get(buf, f);

	switch (f->kind) {
	case K_RSV:
		if (f->size > 8 || f->size % 8 == 0) {
			__u64 word = rnd_value(t) ?: 1;

			memcpy(p + 8 * rnd_below(t, f->size / 8), &word, 8);
		} else {
			fld_set(buf, f, rnd_value(t) ?: 1);
		}
		return;
	case K_FLAGS:
		switch (rnd_below(t, 4)) {
		case 0:
			v |= 1ULL << (unsigned int)rnd_below(t, f->size * 8);
			break;
		case 1:
			v = ~0ULL;
			break;
		case 2:
			v ^= f->mask;
			break;
		default:
			v = rnd(t);
			break;
		}
		fld_set(buf, f, v);
		return;
	case K_OUT:
		if (f->size > 8)
			rnd_bytes(t, p + 8 * rnd_below(t, f->size / 8), 8);
		else
			fld_set(buf, f, rnd(t));
		return;
	case K_POOL: {
		static const __u64 ids[] = { 0, 1, 2, 3, ~0ULL, 1ULL << 63 };

		if (chance(t, 40))
			v = ids[rnd_below(t, ARRAY_LEN(ids))];
		else if (chance(t, 50))
			v = fz_pool_id((unsigned int)rnd(t));
		else
			v = rnd_value(t);
		fld_set(buf, f, v);
		return;
	}
	case K_PEER: {
		const uint64_t vals[] = {
			0, fz.self_id + 1 + rnd_below(t, 16), ~0U, fz.self_id,
			rnd_value(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_MAP: {
		const uint64_t vals[] = {
			0, ~0ULL, t->last_map_id + 1 + rnd_below(t, 3),
			t->last_map_id ? t->last_map_id - rnd_below(t, 8) : 1,
			1ULL << 32, rnd_value(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_LEN:
	case K_MAPLEN:
	case K_OFF: {
		const uint64_t vals[] = {
			0, 1, page - 1, page + 1, page * (1 + rnd_below(t, 512)),
			v + page, v - page, 1ULL << 44, (1ULL << 44) + page,
			~0ULL & ~(page - 1), 1ULL << 63, 64ULL << 20, (64ULL << 20) + page,
			v + 1, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_CAP: {
		const uint64_t vals[] = {
			0, 1, 2, 64, 1024, 0x7fffffff, 0x80000000, 0xffffffff,
			v + 1, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_ENTRIES:
	case K_IOV:
	case K_UADDR:
		v = chance(t, 15) ? v + 1 + rnd_below(t, page - 1) : rnd_pointer(t);
		fld_set(buf, f, v);
		return;
	case K_NRIOV: {
		const uint64_t vals[] = {
			0, 1, 2, RPAGE_IO_MAX_IOV, RPAGE_IO_MAX_IOV + 1, 0xffffffff,
			v + 1, rnd_below(t, RPAGE_IO_MAX_IOV + 1), rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_NAME:
		mutate_name(t, p);
		return;
	case K_SADDR:
		mutate_saddr(t, (struct rpage_addr *)p);
		return;
	case K_API: {
		const uint64_t vals[] = { 0, 2, RPAGE_API + 1, ~0ULL, rnd(t) };

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_FEATURES: {
		const uint64_t vals[] = {
			1ULL << (unsigned int)rnd_below(t, 64), ~0ULL, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_DEPTH: {
		const uint64_t vals[] = {
			0, 1, RPAGE_PREFETCH_DEPTH_MAX, RPAGE_PREFETCH_DEPTH_MAX + 1,
			~0ULL, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_MASK: {
		const uint64_t vals[] = { 0, 2, 3, ~0ULL, 1, rnd(t) };

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_MODE: {
		const uint64_t vals[] = {
			0, 0777, 01000, 04755, 0100644, ~0ULL, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_FD: {
		const uint64_t vals[] = {
			(__u32)-1, 0, 1, 2, (__u32)fz.file_fd, (__u32)fz.file_ro_fd,
			(__u32)fz.shared_fd, 1000000, 0x80000000, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_UGID: {
		const uint64_t vals[] = { 0, 1, 65534, 0xffffffff, 0xfffffffe, rnd(t) };

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_LOSS: {
		const uint64_t vals[] = {
			0, 2000, RPAGE_LOSS_TIMEOUT_MAX_MS,
			RPAGE_LOSS_TIMEOUT_MAX_MS + 1, ~0ULL, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	case K_TRANSPORT: {
		const uint64_t vals[] = {
			RPAGE_TRANSPORT_AUTO, RPAGE_TRANSPORT_RDMA,
			RPAGE_TRANSPORT_LOOP, RPAGE_TRANSPORT_TCP,
			RPAGE_TRANSPORT_TCP + 1, rnd(t),
		};

		fld_set(buf, f, vals[rnd_below(t, ARRAY_LEN(vals))]);
		return;
	}
	}
}

/* The iovecs of a READ or WRITE argument that lie in the nest buffer. */
static struct rpage_iovec *fz_iovs(const struct fz_thread *t,
				   const struct rpage_io *io, unsigned int *nr,
				   bool *short_array)
{
	uint64_t end, rw;
	enum fz_where w = fz_where(t, io->iov, &end);
	size_t room;

	*nr = 0;
	*short_array = false;
	if (w != W_SELF && w != W_RO)
		return NULL;
	if (in_range(io->iov, t->nest_ro, FZ_NEST_PAGES * page))
		rw = io->iov - (uintptr_t)t->nest_ro + (uintptr_t)t->nest_rw;
	else if (in_range(io->iov, t->nest_rw, FZ_NEST_PAGES * page))
		rw = io->iov;
	else
		return NULL;
	room = (size_t)(end - io->iov) / sizeof(struct rpage_iovec);
	*nr = io->nr_iov <= RPAGE_IO_MAX_IOV ? io->nr_iov : 0;
	if (*nr > room) {
		*short_array = true;
		*nr = (unsigned int)room;
	}
	return (struct rpage_iovec *)(uintptr_t)rw;
}

/* Changes one or two fields of a valid argument. */
static void fz_mutate(struct fz_thread *t, unsigned int nr, union fz_arg *a)
{
	const struct fz_cmd *c = &fz_cmds[nr];
	unsigned int n = chance(t, 25) ? 2 : 1;

	for (unsigned int i = 0; i < n; i++) {
		if ((nr == _RPAGE_READ || nr == _RPAGE_WRITE) && chance(t, 40)) {
			unsigned int nr_iov;
			bool short_array;
			struct rpage_iovec *iov = fz_iovs(t, &a->io, &nr_iov,
							  &short_array);

			if (iov && nr_iov) {
				mutate_field(t, &iov[rnd_below(t, nr_iov)],
					     &f_iovec[rnd_below(t, ARRAY_LEN(f_iovec))]);
				continue;
			}
		}
		mutate_field(t, a, &c->fields[rnd_below(t, c->nr_fields)]);
	}
}

/* Random contents: all bytes, or many fields. */
static void fz_randomize(struct fz_thread *t, unsigned int nr, union fz_arg *a)
{
	const struct fz_cmd *c = &fz_cmds[nr];

	if (chance(t, 40)) {
		rnd_bytes(t, a, sizeof(*a));
		return;
	}
	for (unsigned int i = 0; i < c->nr_fields; i++)
		if (chance(t, 40))
			mutate_field(t, a, &c->fields[i]);
}

/* ---- keeping the fuzzer and the host safe ---------------------------- */

/* A pointer the kernel may write through: one of ours, or one it cannot. */
static void safe_sink(const struct fz_thread *t, __u64 *p)
{
	enum fz_where w = fz_where(t, *p, NULL);

	if (w != W_BAD && w != W_SINK && w != W_RO)
		*p = FZ_KADDR;
}

/* Whether @fd is open on a regular file (not on a closed descriptor). */
static bool fz_fd_is_regular(int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode);
}

static void safe_pool(__u64 *id)
{
	if (*id && !fz_pool_ours(*id))
		*id = fz_pool_id((unsigned int)fz_mix(*id));
}

/* Addresses in 192.0.2.100-199, or PEER's with a port of the fuzzer's. */
static void safe_saddr(struct rpage_addr *a, bool endpoint)
{
	if (a->family == AF_INET) {
		bool net = a->addr[0] == 192 && a->addr[1] == 0 && a->addr[2] == 2;
		bool self = fz.self_ip_ok && endpoint && !memcmp(a->addr, fz.self_ip, 4);

		if (!self && !(net && a->addr[3] >= 100 && a->addr[3] <= 199)) {
			if (endpoint && fz.self_ip_ok && a->addr[3] & 1) {
				memcpy(a->addr, fz.self_ip, 4);
				self = true;
			} else {
				__u16 port = a->port;

				fz_peer_addr(a, a->addr[3]);
				a->port = port;
				a->scope_id = a->scope_id ? 1 : 0;
			}
		}
		if (self && (a->port < FZ_PORT || a->port >= FZ_PORT + FZ_PORTS))
			a->port = (__u16)(FZ_PORT + a->port % FZ_PORTS);
	} else if (a->family == AF_INET6) {
		/* No IPv6 traffic: an IPv4-mapped address, refused. */
		memset(a->addr, 0, 10);
		a->addr[10] = a->addr[11] = 0xff;
		a->addr[12] = 192;
		a->addr[13] = 0;
		a->addr[14] = 2;
	}
}

/*
 * A valid name not of the fuzzer's becomes one; but "." and "..", valid
 * for a peer, stay for a named mapping, which must refuse them.
 */
static void safe_name(char *name, bool named)
{
	if (name_valid(name) && strncmp(name, "fz-", 3) &&
	    !(named && (!strcmp(name, ".") || !strcmp(name, "..")))) {
		unsigned int k = (unsigned int)(fz_mix((unsigned char)name[0]) % FZ_PEERS);

		memset(name, 0, RPAGE_NAME_MAX);
		snprintf(name, RPAGE_NAME_MAX, "fz-%u", k);
	}
}

/*
 * Makes the argument harmless, without making an invalid one valid: the
 * kernel writes only into buffers of the fuzzer's made for it (or fails
 * to), pools are the fuzzer's and small, peers and endpoints are the
 * fuzzer's and stay inside the host, a loss timeout stays short.
 */
static void fz_sanitize(struct fz_thread *t, unsigned int nr, union fz_arg *a)
{
	if (fz_cmds[nr].entry_size) {
		safe_sink(t, &a->list.entries);
		return;
	}
	switch (nr) {
	case _RPAGE_ENDPOINT_ADD:
	case _RPAGE_ENDPOINT_DEL:
		safe_saddr(&a->ep.addr, true);
		break;
	case _RPAGE_PEER_ADD: {
		static const struct rpage_addr none;

		safe_name(a->peer.name, false);
		safe_saddr(&a->peer.addr, false);
		/* No loop peer (no address): it would read the fuzzer's pools. */
		if (a->peer.transport == RPAGE_TRANSPORT_LOOP &&
		    !memcmp(&a->peer.addr, &none, sizeof(none)))
			a->peer.addr.port = 1;
		break;
	}
	case _RPAGE_PEER_DEL:
		safe_name(a->peer.name, false);
		break;
	case _RPAGE_POOL_CREATE:
		safe_pool(&a->create.id);
		if (a->create.length > FZ_POOL_MAX && a->create.length <= fz.max_pool &&
		    !(a->create.length % page))
			a->create.length = FZ_POOL_MAX;
		break;
	case _RPAGE_POOL_EXPORT: {
		enum fz_where w = fz_where(t, a->export.addr, NULL);

		safe_pool(&a->export.id);
		if (a->export.length > FZ_POOL_MAX && a->export.length <= fz.max_pool &&
		    !(a->export.length % page))
			a->export.length = FZ_POOL_MAX;
		/* Peers may write what is exported: only memory for that. */
		if (w != W_BAD && w != W_SINK && w != W_RO)
			a->export.addr = FZ_KADDR;
		break;
	}
	case _RPAGE_POOL_DESTROY:
		safe_pool(&a->destroy.id);
		break;
	case _RPAGE_READ:
	case _RPAGE_WRITE: {
		enum fz_where w = fz_where(t, a->io.iov, NULL);
		struct rpage_iovec *iov;
		unsigned int n;
		bool short_array;

		/* The kernel reads iovecs only from the nest buffer. */
		if (w != W_BAD &&
		    !in_range(a->io.iov, t->nest_rw, FZ_NEST_PAGES * page) &&
		    !in_range(a->io.iov, t->nest_ro, FZ_NEST_PAGES * page)) {
			a->io.iov = FZ_KADDR;
			break;
		}
		iov = fz_iovs(t, &a->io, &n, &short_array);
		for (unsigned int i = 0; iov && i < n; i++) {
			safe_pool(&iov[i].pool_id);
			safe_sink(t, &iov[i].addr);
		}
		break;
	}
	case _RPAGE_MAP:
		safe_pool(&a->map.pool_id);
		break;
	case _RPAGE_MAP_ADD:
		safe_name(a->add.name, true);
		safe_pool(&a->add.pool_id);
		break;
	case _RPAGE_MAP_DEL:
		safe_name(a->del.name, true);
		break;
	case _RPAGE_POOL_SET_PEERS:
	case _RPAGE_POOL_GET_PEERS:
		/* The fuzzer's own pools only: the others' scopes stay. */
		safe_pool(&a->peers.id);
		/* GET writes ids there: never into the fuzzer's own state. */
		if (nr == _RPAGE_POOL_GET_PEERS)
			safe_sink(t, &a->peers.peers);
		break;
	case _RPAGE_POOL_FILE:
		safe_pool(&a->file.id);
		if (a->file.length > FZ_POOL_MAX && a->file.length <= fz.max_pool &&
		    !(a->file.length % page))
			a->file.length = FZ_POOL_MAX;
		/*
		 * Peers may write what is exported: no regular file of the
		 * process but the memfd made for it (the argument buffers are
		 * memfds too). Pipes, sockets and /dev/rpage stay.
		 */
		if (a->file.fd != fz.file_fd && a->file.fd != fz.file_ro_fd &&
		    fz_fd_is_regular(a->file.fd))
			a->file.fd = fz.file_ro_fd;
		break;
	case _RPAGE_PEER_SET:
		if (a->set.loss_timeout_ms > 2000 &&
		    a->set.loss_timeout_ms <= RPAGE_LOSS_TIMEOUT_MAX_MS)
			a->set.loss_timeout_ms %= 2001;
		break;
	}
}

/* ---- what must fail ---------------------------------------------------- */

static __thread char fz_why[160];

static const char *__attribute__((format(printf, 1, 2))) why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fz_why, sizeof(fz_why), fmt, ap);
	va_end(ap);
	return fz_why;
}

/* Why the fields of @buf described by @fields make the call fail, or NULL. */
static const char *fields_invalid(const void *buf, const struct fz_field *fields,
				  unsigned int nr_fields, const char *what)
{
	static const char zero[1024];
	/* The flags before a mapping's length say what the length may be. */
	uint64_t flags = 0;

	for (unsigned int i = 0; i < nr_fields; i++) {
		const struct fz_field *f = &fields[i];
		const char *p = (const char *)buf + f->off;
		uint64_t v = f->size <= 8 ? fld_get(buf, f) : 0;

		switch (f->kind) {
		case K_RSV:
			if (memcmp(p, zero, f->size))
				return why("%s%s not zero", what, f->name);
			break;
		case K_FLAGS:
			if (v & ~f->mask)
				return why("%s%s %#" PRIx64 " has unknown bits", what,
					   f->name, v);
			flags = v;
			break;
		case K_MAPLEN:
			if (flags & RPAGE_MAP_TO_END) {
				if (v)
					return why("%s%s %#" PRIx64 " with RPAGE_MAP_TO_END",
						   what, f->name, v);
				break;
			}
			/* fall through */
		case K_LEN:
			if (!v || v % page)
				return why("%s%s %#" PRIx64 " is not a non-zero multiple of the page size",
					   what, f->name, v);
			break;
		case K_OFF:
			if (v % page)
				return why("%s%s %#" PRIx64 " is not page aligned",
					   what, f->name, v);
			break;
		case K_NRIOV:
			if (!v || v > RPAGE_IO_MAX_IOV)
				return why("nr_iov %" PRIu64, v);
			break;
		case K_NAME:
			if (!name_valid(p))
				return why("%s is not a valid name", f->name);
			break;
		case K_SADDR:
			if (!saddr_valid((const struct rpage_addr *)p))
				return why("%s is not a valid address", f->name);
			break;
		case K_API:
			if (v != RPAGE_API)
				return why("api %" PRIu64, v);
			break;
		case K_FEATURES:
			if (v & ~RPAGE_FEATURES_ALL)
				return why("unknown features %#" PRIx64, v);
			break;
		case K_DEPTH:
			if (v > RPAGE_PREFETCH_DEPTH_MAX)
				return why("depth %" PRIu64, v);
			break;
		case K_MASK:
			if (!v || v & ~RPAGE_PEER_SET_ALL)
				return why("mask %#" PRIx64, v);
			break;
		case K_MODE:
			if (v & ~0777ULL)
				return why("mode %#" PRIo64, v);
			break;
		case K_UGID:
			if (v == 0xffffffff)
				return why("%s -1", f->name);
			break;
		case K_FD:
			if ((__s32)v < 0)
				return why("%s %d", f->name, (__s32)v);
			break;
		case K_TRANSPORT:
			/* The loop has no address; these calls have one. */
			if (v != RPAGE_TRANSPORT_AUTO && v != RPAGE_TRANSPORT_RDMA &&
			    v != RPAGE_TRANSPORT_TCP)
				return why("transport %" PRIu64 " with an address", v);
			break;
		default:
			break;
		}
	}
	return NULL;
}

/* Why a READ or WRITE of @a must fail, or NULL. */
static const char *io_invalid(const struct fz_thread *t, bool write,
			      const struct rpage_io *a, enum fz_file file)
{
	struct rpage_iovec *iov;
	unsigned int n;
	bool short_array;
	uint64_t total = 0;
	const char *bad;

	if (write && file == F_RDONLY)
		return "a WRITE through a file opened O_RDONLY";
	bad = fields_invalid(a, f_io, ARRAY_LEN(f_io), "");
	if (bad)
		return bad;
	if (fz_where(t, a->iov, NULL) == W_BAD)
		return why("iov %#llx cannot be read", (unsigned long long)a->iov);
	iov = fz_iovs(t, a, &n, &short_array);
	if (!iov)
		return NULL;
	if (short_array)
		return "the iovec array runs into a guard page";
	/* Checked before any transfer. */
	for (unsigned int i = 0; i < n; i++) {
		bad = fields_invalid(&iov[i], f_iovec, ARRAY_LEN(f_iovec), "iov.");
		if (bad)
			return bad;
		if (iov[i].addr % page)
			return why("iov[%u].addr %#llx is not page aligned", i,
				   (unsigned long long)iov[i].addr);
		total += iov[i].length;
		if (iov[i].length > RPAGE_IO_MAX_BYTES || total > RPAGE_IO_MAX_BYTES)
			return why("more than %llu bytes", RPAGE_IO_MAX_BYTES);
	}
	/* And any failure to pin a buffer fails the call. */
	for (unsigned int i = 0; i < n; i++) {
		uint64_t end;
		enum fz_where w = fz_where(t, iov[i].addr, &end);

		if (w == W_BAD)
			return why("iov[%u].addr %#llx cannot be pinned", i,
				   (unsigned long long)iov[i].addr);
		if (w == W_RO && !write)
			return why("iov[%u].addr %#llx is read-only", i,
				   (unsigned long long)iov[i].addr);
		if (w != W_UNKNOWN && iov[i].length > end - iov[i].addr)
			return why("iov[%u] runs into a guard page", i);
	}
	return NULL;
}

/* Why command @nr with argument @a, passed as @ptr, must fail, or NULL. */
static const char *fz_invalid(const struct fz_thread *t, unsigned int nr,
			      const union fz_arg *a, enum fz_ptr ptr,
			      enum fz_file file)
{
	const struct fz_cmd *c = &fz_cmds[nr];
	const char *bad;

	if (file == F_NOAPI && nr != _RPAGE_API)
		return "no API handshake on this file";
	switch (ptr) {
	case P_NULL:
	case P_HOLE:
	case P_KERNEL:
	case P_NONCANON:
	case P_SHORT:
		return why("argument pointer %s", fz_ptr_names[ptr]);
	case P_RO:
		if (_IOC_DIR(c->cmd) & _IOC_READ)
			return "read-only argument of a command that writes it";
		break;
	default:
		break;
	}
	if (nr == _RPAGE_READ || nr == _RPAGE_WRITE)
		return io_invalid(t, nr == _RPAGE_WRITE, &a->io, file);
	bad = fields_invalid(a, c->fields, c->nr_fields, "");
	if (bad)
		return bad;
	if (c->entry_size) {
		if (a->list.capacity && !a->list.entries)
			return "capacity with NULL entries";
		return NULL;
	}
	switch (nr) {
	case _RPAGE_POOL_CREATE:
		if (!a->create.id)
			return "pool id 0";
		if (a->create.length > fz.max_pool)
			return "longer than max_pool_mb";
		break;
	case _RPAGE_POOL_EXPORT: {
		uint64_t end;
		enum fz_where w = fz_where(t, a->export.addr, &end);

		if (!a->export.id)
			return "pool id 0";
		if (a->export.length > fz.max_pool)
			return "longer than max_pool_mb";
		if (a->export.addr % page)
			return "addr not page aligned";
		if (a->export.addr + a->export.length < a->export.addr)
			return "addr + length wraps";
		if (w == W_BAD)
			return why("addr %#llx cannot be pinned",
				   (unsigned long long)a->export.addr);
		if (w == W_RO && a->export.flags & RPAGE_POOL_WRITABLE)
			return "writable export of read-only memory";
		if (w != W_UNKNOWN && a->export.length > end - a->export.addr)
			return "the range runs into a guard page";
		break;
	}
	case _RPAGE_MAP:
		if (a->map.length > RPAGE_MAP_MAX_BYTES)
			return "longer than RPAGE_MAP_MAX_BYTES";
		break;
	case _RPAGE_UNMAP:
		if (!a->unmap.map_id)
			return "map_id 0";
		break;
	case _RPAGE_PEER_SET:
		if (a->set.mask & RPAGE_PEER_SET_LOSS_TIMEOUT &&
		    a->set.loss_timeout_ms > RPAGE_LOSS_TIMEOUT_MAX_MS)
			return "loss timeout above a day";
		break;
	case _RPAGE_POOL_FILE:
		if (!a->file.id)
			return "pool id 0";
		if (a->file.length > fz.max_pool)
			return "longer than max_pool_mb";
		if (a->file.fd == fz.file_ro_fd && a->file.flags & RPAGE_POOL_WRITABLE)
			return "writable pool of a file open read-only";
		if ((a->file.fd == fz.file_fd || a->file.fd == fz.file_ro_fd) &&
		    (a->file.offset + a->file.length < a->file.offset ||
		     a->file.offset + a->file.length > FZ_FILE_PAGES * page))
			return "beyond the file's end";
		if (a->file.fd >= 0 && a->file.fd != fz.file_fd &&
		    a->file.fd != fz.file_ro_fd && !fz_fd_is_regular(a->file.fd))
			return "not a file of a shared-memory file system";
		break;
	case _RPAGE_POOL_SET_PEERS:
	case _RPAGE_POOL_GET_PEERS:
		if (!a->peers.id)
			return "pool id 0";
		if (nr == _RPAGE_POOL_GET_PEERS)
			break;
		if (a->peers.nr_peers > RPAGE_POOL_MAX_PEERS)
			return "more than RPAGE_POOL_MAX_PEERS peers";
		if (a->peers.flags & RPAGE_POOL_PEERS_ANY && a->peers.nr_peers)
			return "peer ids with RPAGE_POOL_PEERS_ANY";
		break;
	case _RPAGE_MAP_ADD:
	case _RPAGE_MAP_DEL:
		/* The names share their offset. */
		if (!strcmp(a->add.name, ".") || !strcmp(a->add.name, ".."))
			return why("name \"%s\"", a->add.name);
		if (nr == _RPAGE_MAP_ADD && a->add.length > RPAGE_MAP_MAX_BYTES)
			return "longer than RPAGE_MAP_MAX_BYTES";
		break;
	}
	return NULL;
}

/* ---- one call of a command -------------------------------------------- */

enum fz_mode { M_VALID, M_MUTATED, M_RANDOM };

static enum fz_ptr fz_pick_ptr(struct fz_thread *t)
{
	unsigned int r = (unsigned int)rnd_below(t, 100);

	if (r < 55)
		return P_VALID;
	if (r < 60)
		return P_ODD;
	if (r < 72)
		return P_RO;
	if (r < 78)
		return P_SHORT;
	if (r < 84)
		return P_NULL;
	if (r < 90)
		return P_HOLE;
	if (r < 96)
		return P_KERNEL;
	return P_NONCANON;
}

/*
 * Places @len bytes of @src in the argument buffer as @ptr says and
 * returns the pointer to pass.
 */
static uint64_t fz_place(struct fz_thread *t, const void *src, size_t len,
			 enum fz_ptr ptr)
{
	size_t room = FZ_ARG_PAGES * page, off;

	if (len > room)
		len = room;
	switch (ptr) {
	case P_NULL:
		return chance(t, 80) ? 0 : rnd_below(t, 4096);
	case P_HOLE:
		return FZ_HOLE + rnd_below(t, FZ_HOLE_SIZE - len);
	case P_KERNEL:
		return (chance(t, 70) ? FZ_KADDR : FZ_KTEXT) + rnd_below(t, 1 << 20) * 8;
	case P_NONCANON:
		return 0x8000000000000000ULL | rnd(t);
	case P_SHORT: {
		size_t cut = 1 + rnd_below(t, len < 64 ? len : 64);

		if (!len)
			return (uintptr_t)t->arg_rw + room;
		memcpy(t->arg_rw + room - len + cut, src, len - cut);
		return (uintptr_t)t->arg_rw + room - len + cut;
	}
	case P_ODD:
		off = room - len - 1 - rnd_below(t, 7);
		break;
	default:
		off = room - len;
		break;
	}
	memcpy(t->arg_rw + off, src, len);
	return (uintptr_t)(ptr == P_RO ? t->arg_ro : t->arg_rw) + off;
}

/*
 * One call of command @nr: a valid argument, or one @mode changes;
 * @out (if not NULL) gets what the call wrote back. Returns the errno.
 */
static int fz_call(struct fz_thread *t, enum fz_file file, unsigned int nr,
		   enum fz_mode mode, union fz_arg *out)
{
	const struct fz_cmd *c = &fz_cmds[nr];
	size_t size = _IOC_SIZE(c->cmd);
	enum fz_ptr ptr = P_VALID;
	const char *invalid;
	union fz_arg a;
	uint64_t arg;
	int err;

	fz_build(t, nr, &a);
	if (mode == M_MUTATED)
		fz_mutate(t, nr, &a);
	else if (mode == M_RANDOM)
		fz_randomize(t, nr, &a);
	if (mode != M_VALID)
		ptr = fz_pick_ptr(t);
	fz_sanitize(t, nr, &a);
	invalid = fz_invalid(t, nr, &a, ptr, file);
	arg = fz_place(t, &a, size, ptr);
	err = fz_ioctl(t, file, c->cmd, arg, invalid, fz_ptr_names[ptr]);
	if (out) {
		if (!err && (ptr == P_VALID || ptr == P_ODD))
			memcpy(out, (void *)(uintptr_t)arg, size);
		else
			memset(out, 0, sizeof(*out));
	}
	return err;
}

/* A command number of rpage's type that may or may not be one of its. */
static void fz_random_cmd(struct fz_thread *t, enum fz_file file)
{
	unsigned int dir = (unsigned int)rnd_below(t, 4);
	unsigned int nr = (unsigned int)(chance(t, 80) ? rnd_below(t, 0x20) :
					 rnd_below(t, 256));
	unsigned int size;
	unsigned long cmd;
	union fz_arg a;
	uint64_t arg;

	switch (rnd_below(t, 4)) {
	case 0:
		size = (unsigned int)_IOC_SIZE(fz_cmds[rnd_below(t, FZ_NR_CMDS)].cmd);
		break;
	case 1:
		size = nr < FZ_NR_CMDS ? (unsigned int)_IOC_SIZE(fz_cmds[nr].cmd) : 0;
		size += (unsigned int)(rnd_below(t, 3) * 8) - 8;
		break;
	case 2:
		size = (unsigned int)rnd_below(t, 1 << _IOC_SIZEBITS);
		break;
	default:
		size = (unsigned int)rnd_below(t, 1024);
		break;
	}
	size &= (1 << _IOC_SIZEBITS) - 1;
	cmd = _IOC(dir, RPAGE_IOC_MAGIC, nr, size);
	if (nr < FZ_NR_CMDS && fz_cmds[nr].cmd == cmd) {
		/* By chance a command of rpage's: random contents then. */
		if (!(file == F_NOAPI && nr == _RPAGE_API))
			fz_call(t, file, nr, M_RANDOM, NULL);
		return;
	}
	rnd_bytes(t, &a, sizeof(a));
	if (nr >= FZ_NR_CMDS && nr < 64 && fz.module_ioctls & (1ULL << nr)) {
		/*
		 * A command of a newer module's, which the fuzzer does not
		 * know: random bytes only (never a valid argument), or
		 * pointers it cannot follow; and it may well succeed.
		 */
		arg = fz_place(t, &a, size, chance(t, 70) ? P_VALID :
			       chance(t, 50) ? P_RO : P_HOLE);
		fz_ioctl(t, file, cmd, arg, file == F_NOAPI ?
			 "no API handshake on this file" : NULL, "random");
		return;
	}
	if (chance(t, 80))
		arg = fz_place(t, &a, size, chance(t, 80) ? P_VALID : P_RO);
	else
		arg = chance(t, 50) ? rnd_pointer(t) : rnd_value(t);
	fz_ioctl(t, file, cmd, arg, "not a command of rpage's", "random");
}

/* ---- the objects' lives ----------------------------------------------- */

static __thread sigjmp_buf fz_env;
static __thread volatile sig_atomic_t fz_touching;

/*
 * SIGBUS in a touch: the pool is gone, as designed. Anything else, or
 * SIGSEGV, is a bug of the fuzzer's: say where, then die of it.
 */
static void fz_signal(int sig, siginfo_t *si, void *ctx)
{
	char msg[] = "rpage_ioctl_fuzz: fatal signal 00 at 0x0000000000000000\n";
	uint64_t addr = (uintptr_t)si->si_addr;
	char *hex = strchr(msg, 'x') + 1;

	if (sig == SIGBUS && fz_touching)
		siglongjmp(fz_env, 1);
	msg[sizeof("rpage_ioctl_fuzz: fatal signal ") - 1] = (char)('0' + sig / 10);
	msg[sizeof("rpage_ioctl_fuzz: fatal signal ")] = (char)('0' + sig % 10);
	for (int i = 15; i >= 0; i--, addr >>= 4)
		hex[i] = "0123456789abcdef"[addr & 15];
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	signal(sig, SIG_DFL);
}

/* Touches byte @p, reading or writing; false if it raised SIGBUS. */
static bool fz_touch(volatile char *p, bool write_it)
{
	if (sigsetjmp(fz_env, 1)) {
		fz_touching = 0;
		return false;
	}
	fz_touching = 1;
	if (write_it)
		*p = (char)(*p + 1);
	else
		(void)*p;
	fz_touching = 0;
	return true;
}

static void fz_touch_map(struct fz_thread *t, struct fz_map *m, unsigned int n,
			 bool sweep)
{
	uint64_t pages = m->area_len / page;

	for (unsigned int i = 0; i < n; i++) {
		uint64_t at = sweep ? i % pages : rnd_below(t, pages);
		volatile char *p = (char *)m->area + at * page + rnd_below(t, page);

		t->touches++;
		if (!fz_touch(p, chance(t, 40))) {
			t->sigbus++;
			m->gone = true;
			/* A page gone stays gone: no point in all of it. */
			if (sweep)
				break;
		}
	}
}

static void fz_unmap_id(struct fz_thread *t, struct fz_map *m)
{
	union fz_arg a;

	memset(&a, 0, sizeof(a));
	a.unmap.map_id = m->map_id;
	/* A named mapping is the host's: only RPAGE_IOC_MAP_DEL removes it. */
	fz_ioctl(t, m->shared ? F_SHARED : F_OWN, RPAGE_IOC_UNMAP,
		 fz_place(t, &a, sizeof(a.unmap), P_VALID),
		 m->named ? "the id of a named mapping" : NULL, "valid");
	if (!m->named)
		m->map_id = 0;
}

static void fz_drop_map(struct fz_thread *t, struct fz_map *m)
{
	if (m->map_id && chance(t, 50))
		fz_unmap_id(t, m);
	if (m->area)
		munmap(m->area, m->area_len + page);
	memset(m, 0, sizeof(*m));
}

/* A free slot for a mapping, or one made free. */
static struct fz_map *fz_free_slot(struct fz_thread *t)
{
	struct fz_map *m = fz_pick_map(t, false, false);

	for (unsigned int i = 0; i < FZ_MAPS; i++) {
		if (!t->maps[i].area && !t->maps[i].map_id) {
			m = &t->maps[i];
			break;
		}
	}
	if (m->area || m->map_id)
		fz_drop_map(t, m);
	return m;
}

/*
 * What mmap() of @fd must refuse, for mapping @map_id of @length bytes
 * at file offset @off: a private mapping, or one longer than it.
 */
static void fz_mmap_refused(struct fz_thread *t, int fd, __u64 off,
			    __u64 length, __u64 map_id)
{
	size_t len = chance(t, 50) ? page : (size_t)length + page;
	int flags = len == page ? MAP_PRIVATE : MAP_SHARED;
	void *area = mmap(NULL, len, PROT_READ, flags, fd, (off_t)off);

	if (area != MAP_FAILED) {
		fz_report(t, "unexpected success: mmap(%s) of %zu bytes of mapping %llu of %llu",
			  flags == MAP_PRIVATE ? "MAP_PRIVATE" : "MAP_SHARED",
			  len, (unsigned long long)map_id,
			  (unsigned long long)length);
		munmap(area, len);
	}
}

/*
 * mmap() of @len bytes of @fd at @off into slot @m, in front of a guard
 * page. Never mmap(MAP_FIXED) over a reservation instead: when that
 * fails, 6.1 leaves the range unmapped, free for another thread to map
 * before it is cleaned up. false if mmap() failed.
 */
static bool fz_mmap(struct fz_thread *t, struct fz_map *m, int fd, __u64 off,
		    size_t len)
{
	void *area, *resv, *moved;

	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (area == MAP_FAILED)
		return false;
	resv = mmap(NULL, len + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (resv == MAP_FAILED) {
		munmap(area, len);
		return false;
	}
	moved = mremap(area, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, resv);
	if (moved == MAP_FAILED) {
		fz_report(t, "mremap() could not move an area of mapping %llu: %s",
			  (unsigned long long)m->map_id, strerror(errno));
		munmap(area, len);
		munmap((char *)resv + len, page);
		return false;
	}
	t->mmaps++;
	m->area = moved;
	m->area_len = len;
	return true;
}

/* MAP of one of PEER's pools, and mmap() of it (or a part). */
static void fz_life_map(struct fz_thread *t)
{
	enum fz_file file = chance(t, 70) ? F_OWN : F_SHARED;
	struct fz_map *m = fz_free_slot(t);
	union fz_arg out;
	size_t first, len;

	if (fz_call(t, file, _RPAGE_MAP, M_VALID, &out))
		return;
	t->last_map_id = out.map.map_id;
	m->map_id = out.map.map_id;
	m->map_len = out.map.length;
	m->shared = file == F_SHARED;
	if (chance(t, 10))
		fz_mmap_refused(t, fz_fd(t, file), out.map.mmap_offset,
				out.map.length, out.map.map_id);

	first = chance(t, 70) ? 0 : (size_t)rnd_below(t, out.map.length / page);
	len = (size_t)out.map.length - first * page;
	if (chance(t, 30))
		len = (1 + rnd_below(t, len / page)) * page;
	/* It fails if another thread unmapped it first, or replaced the file. */
	if (fz_mmap(t, m, fz_fd(t, file), out.map.mmap_offset + first * page, len) &&
	    chance(t, 10))
		fz_unmap_id(t, m);
}

static bool match_name(const void *entry, const void *name);

/*
 * Whether the name of @add still names the mapping it made. Other threads
 * delete and add the same names: the node opened after the addition may
 * be a later mapping of another length. Map ids are never reused, so if
 * the name has the id now, it had it all along, when the node was opened
 * too.
 */
static bool fz_named_still(struct fz_thread *t, const struct rpage_map_add *add)
{
	struct rpage_map_info info;

	return list_find(fz_fd(t, F_OWN), rpage_map_list, sizeof(info),
			 match_name, add->name, &info) > 0 &&
	       info.map_id == add->map_id;
}

/*
 * A named mapping of one of PEER's pools: its node opened, its size
 * asked, mmap()ed (or a part) and closed; or one deleted, by force or
 * not; or the list.
 */
static void fz_life_named(struct fz_thread *t)
{
	enum fz_file file = chance(t, 75) ? F_OWN : F_SHARED;
	unsigned int r = (unsigned int)rnd_below(t, 10);
	char path[sizeof("/dev/" RPAGE_MAP_NODE_DIR "/") + RPAGE_NAME_MAX];
	union fz_arg out;
	struct fz_map *m;
	off_t size;
	size_t len;
	int fd;

	if (r >= 5) {
		fz_call(t, file, r < 9 ? _RPAGE_MAP_DEL : _RPAGE_MAP_LIST,
			M_VALID, NULL);
		return;
	}
	m = fz_free_slot(t);
	if (fz_call(t, file, _RPAGE_MAP_ADD, M_VALID, &out))
		return;
	m->map_id = out.add.map_id;
	m->map_len = out.add.length;
	m->named = true;
	snprintf(path, sizeof(path), "/dev/%s/%.*s", RPAGE_MAP_NODE_DIR,
		 RPAGE_NAME_MAX, out.add.name);
	/* Deleted by another thread meanwhile, or not there yet. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size != (off_t)out.add.length && fz_named_still(t, &out.add))
		fz_report(t, "lseek(SEEK_END) of %s: %lld, want %llu", path,
			  (long long)size, (unsigned long long)out.add.length);
	if (chance(t, 10) && fz_named_still(t, &out.add))
		fz_mmap_refused(t, fd, 0, out.add.length, out.add.map_id);
	len = (size_t)out.add.length;
	if (chance(t, 30))
		len = (1 + rnd_below(t, len / page)) * page;
	fz_mmap(t, m, fd, 0, len);
	close(fd);
}

/*
 * A child that touches an inherited mapping, maybe prefetches or evicts
 * part of it through the inherited file, and exits.
 */
static void fz_life_fork(struct fz_thread *t)
{
	struct fz_map *m = fz_pick_map(t, false, true);
	unsigned int n = (unsigned int)(1 + rnd_below(t, 4));
	unsigned int what = (unsigned int)rnd_below(t, 3);
	struct rpage_prefetch pf = { 0 };
	struct rpage_evict ev = { 0 };
	uint64_t at[4];
	int status, fd;
	pid_t pid;

	if (!m)
		return;
	for (unsigned int i = 0; i < n; i++)
		at[i] = rnd_below(t, m->area_len);
	fd = fz_fd(t, m->shared ? F_SHARED : F_OWN);
	pf.map_id = m->map_id;
	pf.flags = (__u32)(rnd(t) & RPAGE_PREFETCH_FLAGS_ALL);
	fz_pick_range(t, m->map_len, &pf.offset, &pf.length);
	ev.map_id = m->map_id;
	fz_pick_range(t, m->map_len, &ev.offset, &ev.length);
	t->forks++;
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		/* Async-signal-safe calls only: other threads held locks. */
		alarm(120);
		if (what == 1)
			ioctl(fd, RPAGE_IOC_PREFETCH, &pf);
		for (unsigned int i = 0; i < n; i++)
			fz_touch((char *)m->area + at[i], i & 1);
		if (what == 2)
			ioctl(fd, RPAGE_IOC_EVICT, &ev);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		fz_report(t, "forked child touching mapping %llu killed by signal %d%s",
			  (unsigned long long)m->map_id, WTERMSIG(status),
			  WTERMSIG(status) == SIGALRM ? " (stuck for 120 s)" : "");
}

/*
 * An area that must not grow (mremap), then loses its first page
 * (munmap of a part: the area splits).
 */
static void fz_life_trim(struct fz_thread *t, struct fz_map *m)
{
	void *moved = mremap(m->area, m->area_len, m->area_len + page,
			     MREMAP_MAYMOVE);

	if (moved != MAP_FAILED) {
		fz_report(t, "unexpected success: mremap() grew an area of mapping %llu",
			  (unsigned long long)m->map_id);
		munmap(moved, m->area_len + page);
		munmap((char *)m->area + m->area_len, page);
		memset(m, 0, sizeof(*m));
		return;
	}
	if (m->area_len <= page)
		return;
	/* The page is anyone's to map again: the area starts after it. */
	munmap(m->area, page);
	m->area = (char *)m->area + page;
	m->area_len -= page;
}

/* Closes the thread's file, with everything still outstanding, and reopens. */
static void fz_life_reopen(struct fz_thread *t)
{
	int fd;

	close(t->fd);
	fd = open_rpage();
	if (fd < 0)
		exit(2);
	t->fd = fd;
	t->reopens++;
	for (unsigned int i = 0; i < FZ_MAPS; i++)
		if (!t->maps[i].shared && !t->maps[i].named)
			t->maps[i].map_id = 0;
}

/* Replaces the shared file under the other threads' feet. */
static void fz_life_swap(struct fz_thread *t)
{
	int fd = open_rpage();

	if (fd < 0)
		exit(2);
	pthread_mutex_lock(&fz.shared_lock);
	if (dup2(fd, fz.shared_fd) < 0) {
		fail("dup2: %s", strerror(errno));
		exit(2);
	}
	pthread_mutex_unlock(&fz.shared_lock);
	close(fd);
	t->swaps++;
	for (unsigned int i = 0; i < FZ_MAPS; i++)
		if (t->maps[i].shared && !t->maps[i].named)
			t->maps[i].map_id = 0;
}

/* The lengths of the fuzzer's pools as PEER announces them. */
static void fz_life_remote_list(struct fz_thread *t, enum fz_file file)
{
	const unsigned int cap = 64;
	struct rpage_remote_pool_info *info = (void *)(t->scratch +
		FZ_SCRATCH_PAGES * page - cap * sizeof(*info));
	union fz_arg a;
	uint64_t arg;
	unsigned int n;

	memset(&a, 0, sizeof(a));
	a.list.entries = (uintptr_t)info;
	a.list.capacity = cap;
	arg = fz_place(t, &a, sizeof(a.list), P_VALID);
	if (fz_ioctl(t, file, RPAGE_IOC_REMOTE_POOL_LIST, arg, NULL, "valid"))
		return;
	memcpy(&a, (void *)(uintptr_t)arg, sizeof(a.list));
	memset(t->pool_len, 0, sizeof(t->pool_len));
	n = a.list.count < cap ? a.list.count : cap;
	for (unsigned int i = 0; i < n; i++)
		if (info[i].peer_id == fz.self_id && fz_pool_ours(info[i].id))
			t->pool_len[info[i].id - FZ_POOL_BASE] = info[i].length;
}

static void fz_life(struct fz_thread *t)
{
	enum fz_file file = chance(t, 75) ? F_OWN : F_SHARED;
	unsigned int r = (unsigned int)rnd_below(t, 1000);
	struct fz_map *m;

	if (r < 70) {
		fz_call(t, file, _RPAGE_POOL_CREATE, M_VALID, NULL);
	} else if (r < 140) {
		fz_call(t, file, _RPAGE_POOL_DESTROY, M_VALID, NULL);
	} else if (r < 200) {
		fz_call(t, file, _RPAGE_POOL_EXPORT, M_VALID, NULL);
	} else if (r < 285) {
		fz_life_map(t);
	} else if (r < 320) {
		fz_life_named(t);
	} else if (r < 480) {
		m = fz_pick_map(t, false, true);
		if (!m) {
			fz_life_map(t);
		} else {
			/* Page tables gone, the pages still the mapping's. */
			if (chance(t, 10))
				madvise(m->area, m->area_len, MADV_DONTNEED);
			fz_touch_map(t, m, (unsigned int)(1 + rnd_below(t, 4)), false);
		}
	} else if (r < 500) {
		m = fz_pick_map(t, false, true);
		if (m)
			fz_touch_map(t, m, (unsigned int)(m->area_len / page), true);
	} else if (r < 525) {
		m = fz_pick_map(t, false, true);
		if (m)
			fz_drop_map(t, m);
	} else if (r < 540) {
		m = fz_pick_map(t, false, true);
		if (m)
			fz_life_trim(t, m);
	} else if (r < 580) {
		m = fz_pick_map(t, true, false);
		if (m)
			fz_unmap_id(t, m);
	} else if (r < 650) {
		m = fz_pick_map(t, true, false);
		fz_call(t, m && m->shared ? F_SHARED : F_OWN, _RPAGE_PREFETCH,
			M_VALID, NULL);
	} else if (r < 710) {
		m = fz_pick_map(t, true, false);
		fz_call(t, m && m->shared ? F_SHARED : F_OWN, _RPAGE_EVICT,
			M_VALID, NULL);
	} else if (r < 730) {
		m = fz_pick_map(t, true, false);
		fz_call(t, m && m->shared ? F_SHARED : F_OWN,
			chance(t, 50) ? _RPAGE_MAP_STATS : _RPAGE_MAP_HUGE_STATS,
			M_VALID, NULL);
	} else if (r < 790) {
		fz_call(t, file, _RPAGE_READ, M_VALID, NULL);
	} else if (r < 830) {
		fz_call(t, file, _RPAGE_WRITE, M_VALID, NULL);
	} else if (r < 880) {
		fz_life_remote_list(t, file);
	} else if (r < 930) {
		static const unsigned int lists[] = {
			_RPAGE_DEVICE_LIST, _RPAGE_ENDPOINT_LIST, _RPAGE_PEER_LIST,
			_RPAGE_POOL_LIST, _RPAGE_PEER_STATS, _RPAGE_DEVICE_STATS,
			_RPAGE_PEER_FAULT_STATS, _RPAGE_PEER_STATUS, _RPAGE_MAP_LIST,
		};

		fz_call(t, file, lists[rnd_below(t, ARRAY_LEN(lists))], M_VALID, NULL);
	} else if (r < 945) {
		fz_call(t, file, _RPAGE_PEER_SET, M_VALID, NULL);
	} else if (r < 960) {
		fz_call(t, file, chance(t, 50) ? _RPAGE_PEER_ADD : _RPAGE_PEER_DEL,
			M_VALID, NULL);
	} else if (r < 975) {
		fz_call(t, file, chance(t, 50) ? _RPAGE_ENDPOINT_ADD : _RPAGE_ENDPOINT_DEL,
			M_VALID, NULL);
	} else {
		fz_call(t, file, _RPAGE_API, M_VALID, NULL);
	}
}

/* ---- threads ------------------------------------------------------------ */

/* @pages pages of a memfd, seen writable at *@rw and read-only at *@ro. */
static bool fz_views(size_t pages, char **rw, char **ro)
{
	size_t len = pages * page;
	int fd = memfd_create("rpage_ioctl_fuzz", MFD_CLOEXEC);
	char *views[2];

	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		fail("memfd: %s", strerror(errno));
		return false;
	}
	for (int i = 0; i < 2; i++) {
		void *resv = mmap(NULL, len + page, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (resv == MAP_FAILED ||
		    mmap(resv, len, i ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
			fail("mmap: %s", strerror(errno));
			close(fd);
			return false;
		}
		views[i] = resv;
	}
	close(fd);
	*rw = views[0];
	*ro = views[1];
	return true;
}

/* @pages pages of private anonymous memory, a guard page after. */
static char *fz_guarded(size_t pages)
{
	char *mem = map_anon((pages + 1) * page);

	if (mem && mprotect(mem + pages * page, page, PROT_NONE)) {
		fail("mprotect: %s", strerror(errno));
		return NULL;
	}
	return mem;
}

static bool fz_thread_init(struct fz_thread *t)
{
	struct rpage_api api = { 0 };

	t->fd = open_rpage();
	if (t->fd < 0)
		return false;
	t->fd_rdonly = open(RPAGE_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	t->fd_noapi = open(RPAGE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (t->fd_rdonly < 0 || t->fd_noapi < 0) {
		fail("open %s: %s", RPAGE_DEVICE_PATH, strerror(errno));
		return false;
	}
	api.api = RPAGE_API;
	if (rpage_api(t->fd_rdonly, &api) < 0) {
		fail("handshake on an O_RDONLY file: %s", strerror(errno));
		return false;
	}
	if (!fz_views(FZ_ARG_PAGES, &t->arg_rw, &t->arg_ro) ||
	    !fz_views(FZ_NEST_PAGES, &t->nest_rw, &t->nest_ro))
		return false;
	t->scratch = fz_guarded(FZ_SCRATCH_PAGES);
	t->arena = fz_guarded(FZ_ARENA_PAGES);
	if (!t->scratch || !t->arena)
		return false;
	for (size_t i = 0; i < FZ_ARENA_PAGES * page; i += page)
		t->arena[i] = (char)i;
	return true;
}

static bool fz_done(const struct fz_thread *t)
{
	return t->calls >= t->calls_wanted || now_ms() >= fz.deadline_ms;
}

static void fz_step(struct fz_thread *t)
{
	static const enum fz_file files[] = {
		F_OWN, F_OWN, F_OWN, F_OWN, F_OWN, F_OWN, F_OWN, F_OWN, F_OWN,
		F_OWN, F_OWN, F_OWN, F_OWN, F_SHARED, F_SHARED, F_SHARED,
		F_SHARED, F_SHARED, F_RDONLY, F_NOAPI,
	};
	enum fz_file file = files[rnd_below(t, ARRAY_LEN(files))];
	unsigned int r = (unsigned int)rnd_below(t, 1000);
	unsigned int nr = (unsigned int)rnd_below(t, FZ_NR_CMDS);

	if (r < 2) {
		fz_life_reopen(t);
	} else if (r < 3) {
		fz_life_swap(t);
	} else if (r < 6) {
		fz_life_fork(t);
	} else if (r < 180) {
		fz_random_cmd(t, file);
	} else if (r < 380) {
		if (file == F_NOAPI && nr == _RPAGE_API)
			file = F_OWN;
		fz_call(t, file, nr, M_RANDOM, NULL);
	} else if (r < 730) {
		if (file == F_NOAPI && nr == _RPAGE_API)
			file = F_OWN;
		fz_call(t, file, nr, M_MUTATED, NULL);
	} else {
		fz_life(t);
	}
}

static void *fz_thread_run(void *arg)
{
	struct fz_thread *t = arg;

	for (t->step = 0; !fz_done(t); t->step++) {
		/* The same choices for the same seed, thread and step. */
		t->rng = fz_mix(t->seed ^ fz_mix(t->step));
		fz_step(t);
	}
	for (unsigned int i = 0; i < FZ_MAPS; i++)
		if (t->maps[i].area)
			munmap(t->maps[i].area, t->maps[i].area_len + page);
	close(t->fd);
	close(t->fd_rdonly);
	close(t->fd_noapi);
	return NULL;
}

/* ---- setup, cleanup, summary ------------------------------------------- */

static bool fz_setup_memory(void)
{
	char path[64];
	void *hole;

	/* An address range mapped once, then never again. */
	hole = mmap((void *)(uintptr_t)FZ_HOLE, FZ_HOLE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hole != (void *)(uintptr_t)FZ_HOLE) {
		fail("mmap at %#llx: %s", FZ_HOLE, hole == MAP_FAILED ?
		     strerror(errno) : "elsewhere");
		return false;
	}
	munmap(hole, FZ_HOLE_SIZE);

	/* What RPAGE_IOC_POOL_FILE exports, open twice. */
	fz.file_fd = memfd_create("rpage_ioctl_fuzz_pool", MFD_CLOEXEC);
	if (fz.file_fd < 0 || ftruncate(fz.file_fd, FZ_FILE_PAGES * page)) {
		fail("memfd: %s", strerror(errno));
		return false;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fz.file_fd);
	fz.file_ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fz.file_ro_fd < 0) {
		fail("%s: %s", path, strerror(errno));
		return false;
	}

	/* Read-only pages, whose bytes make no valid structure. */
	fz.ro_area = fz_guarded(FZ_RO_PAGES);
	if (!fz.ro_area)
		return false;
	memset(fz.ro_area, 0xa5, FZ_RO_PAGES * page);
	if (mprotect(fz.ro_area, FZ_RO_PAGES * page, PROT_READ)) {
		fail("mprotect: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool match_name(const void *entry, const void *name)
{
	return !strncmp(entry, name, RPAGE_NAME_MAX);
}

/* PEER: connected, its id, its address and its loss timeout. */
static bool fz_find_peer(int fd)
{
	struct rpage_peer_status st;
	struct rpage_peer_info info;
	int ret;

	ret = wait_peer_connected(fd, fz.peer_name, &fz.self_id);
	if (ret) {
		fail("peer %s: %s", fz.peer_name, ret == -ENOENT ? "none" :
		     error_text(-ret));
		return false;
	}
	ret = list_find(fd, rpage_peer_list, sizeof(info), match_name,
			fz.peer_name, &info);
	if (ret <= 0)
		return false;
	memcpy(fz.self_ip, info.addr.addr, 4);
	fz.self_ip_ok = info.addr.family == AF_INET && fz.self_ip[0] == 192 &&
			fz.self_ip[1] == 0 && fz.self_ip[2] == 2 &&
			(fz.self_ip[3] < 100 || fz.self_ip[3] > 199);
	if (!fz.self_ip_ok)
		printf("# peer %s is not at an address of 192.0.2.0/24 out of .100-.199:"
		       " no endpoint at it\n", fz.peer_name);
	ret = list_find(fd, rpage_peer_status, sizeof(st), match_name,
			fz.peer_name, &st);
	if (ret <= 0) {
		fail("peer status of %s: %s", fz.peer_name,
		     ret ? error_text(-ret) : "none");
		return false;
	}
	fz.self_loss_ms = st.loss_timeout_ms;
	return true;
}

/* An endpoint of the fuzzer's. */
static bool fz_endpoint_ours(const struct rpage_addr *a)
{
	if (a->family != AF_INET || a->addr[0] != 192 || a->addr[1] != 0 ||
	    a->addr[2] != 2)
		return false;
	if (a->addr[3] >= 100 && a->addr[3] <= 199)
		return true;
	return fz.self_ip_ok && !memcmp(a->addr, fz.self_ip, 4) &&
	       a->port >= FZ_PORT && a->port < FZ_PORT + FZ_PORTS;
}

/*
 * Removes what the fuzzer created (or, with @check, counts what is left
 * of it and says what). Returns the number of objects left or removed.
 */
static int fz_cleanup(int fd, bool check)
{
	struct rpage_endpoint_info *eps = NULL;
	struct rpage_peer_info *peers = NULL;
	struct rpage_pool_info *pools = NULL;
	struct rpage_map_info *named = NULL;
	void *buf = NULL;
	int n, found = 0;

	n = list_all(fd, rpage_map_list, sizeof(*named), &buf);
	named = buf;
	for (int i = 0; i < n; i++) {
		struct rpage_map_del del = { .flags = RPAGE_MAP_DEL_FORCE };

		if (strncmp(named[i].name, "fz-", 3))
			continue;
		found++;
		memcpy(del.name, named[i].name, sizeof(del.name));
		if (check)
			printf("left behind: named mapping %.64s (%u users)\n",
			       named[i].name, named[i].users);
		else if (rpage_map_del(fd, &del))
			fail("map del %.64s: %s", named[i].name, strerror(errno));
	}
	free(named);

	buf = NULL;
	n = list_all(fd, rpage_pool_list, sizeof(*pools), &buf);
	pools = buf;
	for (int i = 0; i < n; i++) {
		if (!fz_pool_ours(pools[i].id))
			continue;
		found++;
		if (check)
			printf("left behind: pool %llu (kind %u, owner %u)\n",
			       (unsigned long long)pools[i].id, pools[i].kind,
			       pools[i].owner_pid);
		else if (destroy_pool(fd, pools[i].id))
			fail("pool destroy %llu: %s", (unsigned long long)pools[i].id,
			     strerror(errno));
	}
	free(pools);

	buf = NULL;
	n = list_all(fd, rpage_peer_list, sizeof(*peers), &buf);
	peers = buf;
	for (int i = 0; i < n; i++) {
		struct rpage_peer_config cfg = { 0 };

		if (strncmp(peers[i].name, "fz-", 3))
			continue;
		found++;
		memcpy(cfg.name, peers[i].name, sizeof(cfg.name));
		if (check)
			printf("left behind: peer %.64s\n", peers[i].name);
		else if (rpage_peer_del(fd, &cfg))
			fail("peer del %.64s: %s", peers[i].name, strerror(errno));
	}
	free(peers);

	buf = NULL;
	n = list_all(fd, rpage_endpoint_list, sizeof(*eps), &buf);
	eps = buf;
	for (int i = 0; i < n; i++) {
		struct rpage_endpoint ep = { .addr = eps[i].addr };
		char text[RPAGE_ADDR_STRLEN] = "?";

		if (!fz_endpoint_ours(&eps[i].addr))
			continue;
		found++;
		rpage_addr_format(&eps[i].addr, text, sizeof(text));
		if (check)
			printf("left behind: endpoint %s port %u\n", text,
			       eps[i].addr.port);
		else if (rpage_endpoint_del(fd, &ep))
			fail("endpoint del %s port %u: %s", text, eps[i].addr.port,
			     strerror(errno));
	}
	free(eps);
	return found;
}

static void fz_summary(const struct fz_thread *threads, uint64_t ms)
{
	struct fz_thread sum;

	memset(&sum, 0, sizeof(sum));
	for (unsigned int i = 0; i < fz.threads; i++) {
		const struct fz_thread *t = &threads[i];

		sum.step += t->step;
		sum.calls += t->calls;
		sum.ok += t->ok;
		sum.unexpected += t->unexpected;
		sum.touches += t->touches;
		sum.sigbus += t->sigbus;
		sum.mmaps += t->mmaps;
		sum.forks += t->forks;
		sum.reopens += t->reopens;
		sum.swaps += t->swaps;
		for (unsigned int e = 0; e < FZ_ERRNO_MAX; e++)
			sum.err[e] += t->err[e];
		for (unsigned int c = 0; c <= FZ_NR_CMDS; c++) {
			sum.cmd_calls[c] += t->cmd_calls[c];
			sum.cmd_ok[c] += t->cmd_ok[c];
		}
	}
	printf("# calls/successes by command:");
	for (unsigned int c = 0; c <= FZ_NR_CMDS; c++)
		printf(" %s %" PRIu64 "/%" PRIu64,
		       c < FZ_NR_CMDS ? fz_cmds[c].name : "other",
		       sum.cmd_calls[c], sum.cmd_ok[c]);
	printf("\n# steps %" PRIu64 " mmaps %" PRIu64 " touches %" PRIu64
	       " sigbus %" PRIu64 " forks %" PRIu64 " reopens %" PRIu64
	       " swaps %" PRIu64 "\n", sum.step, sum.mmaps, sum.touches,
	       sum.sigbus, sum.forks, sum.reopens, sum.swaps);
	printf("summary: seed %" PRIu64 " threads %u calls %" PRIu64 " ok %" PRIu64,
	       fz.seed, fz.threads, sum.calls, sum.ok);
	for (unsigned int e = 1; e < FZ_ERRNO_MAX; e++)
		if (sum.err[e])
			printf(" %s %" PRIu64, errno_name((int)e), sum.err[e]);
	printf(" seconds %" PRIu64 " unexpected %" PRIu64 "\n", ms / 1000,
	       sum.unexpected);
}

static int usage(void)
{
	fprintf(stderr, "usage: rpage_ioctl_fuzz [-s SEED] [-n CALLS] [-j THREADS]"
		" [-T MAX_SECONDS] [-P PEER] [-v]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = fz_signal, .sa_flags = SA_SIGINFO };
	struct fz_thread *threads;
	uint64_t val, start;
	bool seeded = false;
	int opt, fd, left, rc = 0;

	tool_init("rpage_ioctl_fuzz");
	while ((opt = getopt(argc, argv, "s:n:j:T:P:v")) != -1) {
		switch (opt) {
		case 's':
			if (!get_number("seed", optarg, &fz.seed))
				return 2;
			seeded = true;
			break;
		case 'n':
			if (!get_number("calls", optarg, &fz.calls))
				return 2;
			break;
		case 'j':
			if (!get_number("threads", optarg, &val) || !val || val > 64)
				return usage();
			fz.threads = (unsigned int)val;
			break;
		case 'T':
			if (!get_number("seconds", optarg, &val) || val > UINT_MAX)
				return usage();
			fz.max_seconds = (unsigned int)val;
			break;
		case 'P':
			fz.peer_name = optarg;
			break;
		case 'v':
			fz.verbose = true;
			break;
		default:
			return usage();
		}
	}
	if (optind != argc)
		return usage();
	if (!seeded)
		fz.seed = now_us() ^ ((uint64_t)getpid() << 32);
	printf("# rpage_ioctl_fuzz: seed %" PRIu64 ", %u threads, %" PRIu64
	       " calls, at most %u s, peer %s\n", fz.seed, fz.threads, fz.calls,
	       fz.max_seconds, fz.peer_name);
	fflush(stdout);

	if (!fz_setup_memory())
		return 2;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) || sigaction(SIGSEGV, &sa, NULL)) {
		fail("sigaction: %s", strerror(errno));
		return 2;
	}
	fd = open_rpage();
	if (fd < 0 || !fz_find_peer(fd))
		return 2;
	{
		struct rpage_api api = { .api = RPAGE_API };

		if (rpage_api(fd, &api) < 0) {
			fail("handshake: %s", strerror(errno));
			return 2;
		}
		fz.module_ioctls = api.ioctls;
		for (unsigned int nr = FZ_NR_CMDS; nr < 64; nr++)
			if (api.ioctls & (1ULL << nr))
				printf("# the module has a command the fuzzer does not know:"
				       " nr %#x, tried with random bytes only\n", nr);
	}
	fz.max_pool = module_param("max_pool_mb", 1024) << 20;
	fz.shared_fd = open_rpage();
	if (fz.shared_fd < 0)
		return 2;

	threads = calloc(fz.threads, sizeof(*threads));
	if (!threads)
		return 2;
	for (unsigned int i = 0; i < fz.threads; i++) {
		struct fz_thread *t = &threads[i];

		t->idx = i;
		t->seed = fz_mix(fz.seed ^ fz_mix(i + 1));
		t->calls_wanted = fz.calls / fz.threads +
				  (i < fz.calls % fz.threads);
		if (!fz_thread_init(t))
			return 2;
	}
	start = now_ms();
	fz.deadline_ms = start + fz.max_seconds * 1000ULL;
	for (unsigned int i = 0; i < fz.threads; i++) {
		int ret = pthread_create(&threads[i].tid, NULL, fz_thread_run,
					 &threads[i]);

		if (ret) {
			fail("pthread_create: %s", strerror(ret));
			return 2;
		}
	}
	for (unsigned int i = 0; i < fz.threads; i++)
		pthread_join(threads[i].tid, NULL);
	val = now_ms() - start;
	close(fz.shared_fd);
	if (now_ms() >= fz.deadline_ms)
		printf("# stopped at the time limit of %u s\n", fz.max_seconds);

	/* Everything of the fuzzer's goes, and PEER's loss timeout comes back. */
	left = fz_cleanup(fd, false);
	printf("# cleanup: removed %d named mappings, pools, peers and endpoints"
	       " of the fuzzer's\n", left);
	{
		struct rpage_peer_set set = { .mask = RPAGE_PEER_SET_LOSS_TIMEOUT,
					      .loss_timeout_ms = fz.self_loss_ms };

		snprintf(set.name, sizeof(set.name), "%s", fz.peer_name);
		if (rpage_peer_set(fd, &set)) {
			fail("peer set %s loss timeout: %s", fz.peer_name,
			     strerror(errno));
			rc = 1;
		}
	}
	if (fz_cleanup(fd, true))
		rc = 1;
	if (peer_lookup(fd, fz.peer_name, NULL, NULL)) {
		printf("peer %s is gone\n", fz.peer_name);
		rc = 1;
	}
	close(fd);

	fz_summary(threads, val);
	for (unsigned int i = 0; i < fz.threads; i++)
		if (threads[i].unexpected)
			rc = 1;
	free(threads);
	return rc;
}
