// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_fault: maps a peer's pool that holds the pattern of
 * rpage_pattern.h (as `rpage_pattern export` or `fill` put it there)
 * and touches it, so that every page comes in by a remote page fault,
 * for the tests that span two hosts.
 *
 *   rpage_fault touch PEER POOL LENGTH [--offset O] [--threads N]
 *               [--order random|seq] [--seed S] [--readahead | --huge]
 *               [--expect-faults N] [--pause-ms P] [--no-check]
 *               [--passes K] [--write-seed S2]
 *               [--ready PATH --go PATH --after BYTES]
 *   rpage_fault prefetch PEER POOL LENGTH [--offset O] [--depth D] [--wait]
 *               [--seed S] [--readahead]
 *               [--no-touch [--ready PATH --go PATH --after BYTES]]
 *   rpage_fault hog SIZE --ready PATH
 *   rpage_fault evict PEER POOL OFFSET LENGTH { --seed S | --clean }
 *               [--ready PATH --go PATH] [--timeout-ms T] [--signal-us U]
 *   rpage_fault survive PEER POOL LENGTH --fetched BYTES --ready PATH
 *               --go PATH [--timeout-ms T] [--seed S]
 *   rpage_fault stall PEER POOL LENGTH --fetched-ready PATH --go PATH
 *               --ready PATH [--seed S]
 *   rpage_fault replaced PEER POOL LENGTH --fetched BYTES --ready PATH
 *               --go PATH --seed-new S2 [--seed S]
 *   rpage_fault del-race PEER POOL LENGTH ROUNDS
 *
 * touch: N threads (4) touch every page of the mapping once between
 * them, in one shuffled order (random, the default) or in contiguous
 * slices (seq), checking each whole page against the pattern of seed S
 * (0), or not at all with --no-check; --readahead maps with
 * RPAGE_MAP_READAHEAD, --huge with RPAGE_MAP_HUGE (2 MiB pages; the
 * result line ends with huge_faults and huge_fallbacks). With --expect-faults,
 * the mapping's faults and the peer's READs must both be N. Each thread
 * sleeps P ms (0) after each page, to stretch the sweep over a longer
 * disruption. With --ready, --go and --after (all three or none), once
 * BYTES (less than LENGTH) have been touched between the threads, every
 * thread stops, PATH --ready is created, and they all go on once PATH
 * --go exists: the test disrupts the network in between, and the faults
 * that follow must ride it out (any SIGBUS ends the run). The result
 * line ends with max_touch_ms, the slowest touch of one page. With
 * --passes, the whole sweep runs K times (1), the same way, so that pages
 * reclaim dropped meanwhile are read again (refetched in the result line).
 * With --write-seed, the first pass writes seed S2's pattern over each
 * page it has checked, the passes after it check for S2 (pages reclaim
 * dropped must have been written back to the pool first), and before
 * the mapping goes, msync(MS_SYNC) writes what is still dirty back.
 *
 * prefetch: prefetches the whole mapping (in the background, or with
 * --wait before returning; D READs in flight), then touches every page
 * in order: no fault may issue a READ of its own, every one must be a
 * prefetch hit, and the peer must have been read each page once. With
 * --no-touch it only waits until the prefetch has read nothing more for
 * 5 s (done, or stopped) and reports the mapping's counters; with --ready
 * PATH --go PATH --after BYTES as well, it then keeps the mapping (its
 * pages in the page cache, where reclaim may take them), tells PATH
 * --ready, waits for PATH --go, touches the first BYTES in order,
 * checking each page against seed S's pattern, and reports again.
 *
 * hog: a bystander that takes SIZE bytes of anonymous memory, touches
 * every page, creates PATH --ready and sleeps until it is killed.
 *
 * evict: touches the range, writes the pattern of seed S over it (not
 * with --clean), evicts it and touches it again: every page must have
 * been dropped, the dirty ones written back, and come back by a new
 * fault with seed S's pattern (the pool's, seed 0, with --clean). The
 * range must hold seed 0 to begin with. With --ready and --go it waits
 * before the evict (the test disturbs the device in between); with
 * --timeout-ms a failed evict is tried again every EVICT_RETRY_MS for up
 * to T ms, and must then find every page still there and still dirty:
 * an evict that fails drops nothing. With --signal-us, a thread sends
 * the evicting thread a signal it handles (SIGUSR1, SA_RESTART) every U
 * microseconds while the evict runs, as a VMM's threads get them. The
 * result line ends with first_error=NAME|none, tries=N and signals=N.
 *
 * survive: touches the first BYTES, creates PATH --ready and waits for
 * PATH --go (the test then takes the pool or peer away), then touches
 * every other page once: some must raise SIGBUS, each within T ms
 * (3 * io_timeout_ms + 5000 by default), and the pages fetched first
 * must stay intact.
 *
 * stall: whether a fault that waits for an unreachable peer holds up
 * the rest of the process. Touches page 0, creates PATH --fetched-ready
 * and waits for PATH --go (the test takes the link down in between),
 * then one thread touches the last page, which must still be waiting 2 s
 * later; meanwhile this thread times, 20 times each, mmap(2) of 1 MiB
 * of anonymous memory, a write to a fresh page of it, munmap(2), and
 * reading /proc/self/cmdline, all of which need the mmap lock the fault
 * must not hold while it waits. It prints "stall mmap_max_ms=...
 * munmap_max_ms=... anon_touch_max_ms=... cmdline_max_ms=...", creates
 * PATH --ready and sleeps until it is killed (the test then times what
 * another process does to it).
 *
 * replaced: touches the first BYTES (seed S's pattern), writes seed
 * S2 + 1's pattern over the first page, creates PATH --ready and waits
 * for PATH --go (the test destroys the pool and creates another with
 * the same id, holding seed S2's pattern). Then the mapping must stay
 * bound to the old pool: the first page never fetched raises SIGBUS,
 * evicting the dirty first page fails (nothing of the old mapping may
 * land in the new pool), so does a write back of it (msync MS_SYNC, as
 * the flusher's own would, which leaves it clean as the only copy), an
 * eviction after that fails too (dropped, the page would be lost), and
 * the pages fetched keep what they held. It prints "replaced
 * sigbus=yes|no evict_errno=NAME|none msync_errno=NAME|none
 * evict_after_msync_errno=NAME|none fetched_intact=yes|no".
 *
 * PEER is a peer's name; POOL is the pool's id on that peer; sizes are
 * bytes, multiples of the page size, with an optional K, M or G suffix.
 * Exit status 0 on success with one line of result on standard output
 * (touch, prefetch and evict: the mapping's counters, the peer's READs
 * and the pages that did not match); 1 on failure, with one line on
 * standard error (after the result line where there is one). stall
 * never exits by itself once it has printed its result.
 *
 * Built on librpage alone:
 *   cc ... -Iinclude/uapi -Iulib -o rpage_fault selftests/rpage_fault.c \
 *      build/user/librpage.a -pthread
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>

#include "rpage_tool.h"

#define DEFAULT_THREADS	4
#define MAX_THREADS	256
/* touch --pause-ms: longer would only be a typo. */
#define MAX_PAUSE_MS	60000
/* stall: how long the last page's touch must go on waiting. */
#define STALL_CHECK_MS	2000
/* stall: how many times each call is timed, and how much is mapped. */
#define STALL_ROUNDS	20
#define STALL_MAP_BYTES	(1UL << 20)
/* evict --timeout-ms: how often a failed evict is tried again. */
#define EVICT_RETRY_MS	100

static int usage(void)
{
	fail("usage: rpage_fault { touch PEER POOL LENGTH [--offset O] [--threads N] "
	     "[--order random|seq] [--seed S] [--readahead | --huge] [--expect-faults N] "
	     "[--pause-ms P] [--no-check] [--passes K] [--write-seed S2] "
	     "[--ready PATH --go PATH --after BYTES] | "
	     "prefetch PEER POOL LENGTH [--offset O] [--depth D] [--wait] [--seed S] [--readahead] "
	     "[--no-touch [--ready PATH --go PATH --after BYTES]] | hog SIZE --ready PATH | "
	     "evict PEER POOL OFFSET LENGTH { --seed S | --clean } "
	     "[--ready PATH --go PATH] [--timeout-ms T] [--signal-us U] | "
	     "survive PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH "
	     "[--timeout-ms T] [--seed S] | "
	     "stall PEER POOL LENGTH --fetched-ready PATH --go PATH --ready PATH "
	     "[--seed S] | "
	     "replaced PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH "
	     "--seed-new S2 [--seed S] | del-race PEER POOL LENGTH ROUNDS }");
	return 1;
}

/* Options, as bits of what a subcommand allows and what was given. */
enum {
	OPT_OFFSET		= 1 << 0,
	OPT_THREADS		= 1 << 1,
	OPT_ORDER		= 1 << 2,
	OPT_SEED		= 1 << 3,
	OPT_READAHEAD		= 1 << 4,
	OPT_EXPECT_FAULTS	= 1 << 5,
	OPT_DEPTH		= 1 << 6,
	OPT_WAIT		= 1 << 7,
	OPT_CLEAN		= 1 << 8,
	OPT_FETCHED		= 1 << 9,
	OPT_READY		= 1 << 10,
	OPT_GO			= 1 << 11,
	OPT_TIMEOUT		= 1 << 12,
	OPT_AFTER		= 1 << 13,
	OPT_PAUSE		= 1 << 14,
	OPT_FETCHED_READY	= 1 << 15,
	OPT_SEED_NEW		= 1 << 16,
	OPT_NO_TOUCH		= 1 << 17,
	OPT_NO_CHECK		= 1 << 18,
	OPT_SIGNAL		= 1 << 19,
	OPT_PASSES		= 1 << 20,
	OPT_WRITE_SEED		= 1 << 21,
	OPT_HUGE		= 1 << 22,
	/* touch's gate: the three options go together. */
	OPT_GATE		= OPT_READY | OPT_GO | OPT_AFTER,
};

/* A subcommand's arguments. */
struct args {
	const char *peer;
	uint64_t pool_id, offset, length;
	unsigned int given;		/* OPT_* */
	uint64_t threads, seed, expect_faults, depth, fetched, timeout_ms;
	uint64_t after, pause_ms, seed_new, signal_us, passes, write_seed;
	bool random_order;
	const char *ready, *go, *fetched_ready;
};

enum arg_kind { ARG_NONE, ARG_NUMBER, ARG_BYTES, ARG_PATH, ARG_ORDER };

static const struct option_def {
	const char *name;
	unsigned int bit;
	enum arg_kind kind;
	size_t field;			/* in struct args, for a value */
} option_defs[] = {
	{ "--offset", OPT_OFFSET, ARG_BYTES, offsetof(struct args, offset) },
	{ "--threads", OPT_THREADS, ARG_NUMBER, offsetof(struct args, threads) },
	{ "--order", OPT_ORDER, ARG_ORDER, 0 },
	{ "--seed", OPT_SEED, ARG_NUMBER, offsetof(struct args, seed) },
	{ "--readahead", OPT_READAHEAD, ARG_NONE, 0 },
	{ "--huge", OPT_HUGE, ARG_NONE, 0 },
	{ "--expect-faults", OPT_EXPECT_FAULTS, ARG_NUMBER,
	  offsetof(struct args, expect_faults) },
	{ "--depth", OPT_DEPTH, ARG_NUMBER, offsetof(struct args, depth) },
	{ "--wait", OPT_WAIT, ARG_NONE, 0 },
	{ "--clean", OPT_CLEAN, ARG_NONE, 0 },
	{ "--fetched", OPT_FETCHED, ARG_BYTES, offsetof(struct args, fetched) },
	{ "--ready", OPT_READY, ARG_PATH, offsetof(struct args, ready) },
	{ "--go", OPT_GO, ARG_PATH, offsetof(struct args, go) },
	{ "--timeout-ms", OPT_TIMEOUT, ARG_NUMBER, offsetof(struct args, timeout_ms) },
	{ "--after", OPT_AFTER, ARG_BYTES, offsetof(struct args, after) },
	{ "--pause-ms", OPT_PAUSE, ARG_NUMBER, offsetof(struct args, pause_ms) },
	{ "--passes", OPT_PASSES, ARG_NUMBER, offsetof(struct args, passes) },
	{ "--fetched-ready", OPT_FETCHED_READY, ARG_PATH,
	  offsetof(struct args, fetched_ready) },
	{ "--seed-new", OPT_SEED_NEW, ARG_NUMBER, offsetof(struct args, seed_new) },
	{ "--no-touch", OPT_NO_TOUCH, ARG_NONE, 0 },
	{ "--no-check", OPT_NO_CHECK, ARG_NONE, 0 },
	{ "--signal-us", OPT_SIGNAL, ARG_NUMBER, offsetof(struct args, signal_us) },
	{ "--write-seed", OPT_WRITE_SEED, ARG_NUMBER,
	  offsetof(struct args, write_seed) },
};

/* One option's value into @a; false (reported) for a bad one. */
static bool set_option(struct args *a, const struct option_def *def,
		       const char *value)
{
	void *field = (char *)a + def->field;

	switch (def->kind) {
	case ARG_NONE:
		return true;
	case ARG_NUMBER:
		return get_number(def->name + 2, value, field);
	case ARG_BYTES:
		return get_bytes(def->name + 2, value, true, field);
	case ARG_PATH:
		*(const char **)field = value;
		return true;
	case ARG_ORDER:
		a->random_order = !strcmp(value, "random");
		if (a->random_order || !strcmp(value, "seq"))
			return true;
		fail("order '%s' is neither random nor seq", value);
		return false;
	}
	return false;
}

/*
 * PEER POOL [OFFSET] LENGTH (OFFSET with @offset_pos) and the options of
 * @allowed, into @a. false, reported, on a usage error or a bad value.
 */
static bool parse_args(int argc, char **argv, bool offset_pos,
		       unsigned int allowed, struct args *a)
{
	const int want = offset_pos ? 4 : 3;
	const char *pos[4];
	int npos = 0;

	*a = (struct args) { .threads = DEFAULT_THREADS, .random_order = true };
	for (int i = 0; i < argc; i++) {
		const struct option_def *def = NULL;

		if (argv[i][0] != '-' && npos < want) {
			pos[npos++] = argv[i];
			continue;
		}
		for (size_t d = 0; d < ARRAY_LEN(option_defs); d++) {
			if (!strcmp(argv[i], option_defs[d].name))
				def = &option_defs[d];
		}
		/* An unknown option, one not allowed, or a positional too many. */
		if (!def || !(def->bit & allowed) ||
		    (def->kind != ARG_NONE && i + 1 == argc)) {
			npos = -1;
			break;
		}
		if (!set_option(a, def, def->kind == ARG_NONE ? NULL : argv[++i]))
			return false;
		a->given |= def->bit;
	}
	if (npos != want) {
		usage();
		return false;
	}
	a->peer = pos[0];
	if (!get_number("pool id", pos[1], &a->pool_id) ||
	    (offset_pos && !get_bytes("offset", pos[2], true, &a->offset)) ||
	    !get_bytes("length", pos[want - 1], false, &a->length))
		return false;
	if (a->offset + a->length < a->offset) {
		fail("offset plus length is too large");
		return false;
	}
	if (a->length > SIZE_MAX) {
		fail("length %" PRIu64 " is too large", a->length);
		return false;
	}
	return true;
}

/* A remote mapping of [offset, offset + length) of a peer's pool. */
struct mapping {
	int fd;
	__u32 peer_id;
	uint64_t pool_id, offset, length, pages;
	struct rpage_map map;
	unsigned char *addr;
	/* The peer's READ counter when the mapping was made. */
	uint64_t reads_at_start;
};

/* For the fatal SIGBUS handler's message. */
static const struct mapping *current_mapping;

/* The peer's READ counter; false (reported) if it cannot be read. */
static bool peer_reads(const struct mapping *m, uint64_t *reads)
{
	struct rpage_stats st;
	int ret = peer_stats(m->fd, m->peer_id, &st);

	if (ret < 0) {
		fail("peer stats: %s", error_text(-ret));
		return false;
	}
	*reads = st.reads;
	return true;
}

/* Opens /dev/rpage and maps the range of @a; false (reported) on failure. */
static bool mapping_open(struct mapping *m, const struct args *a, __u32 flags)
{
	void *addr;
	int ret;

	*m = (struct mapping) {
		.pool_id = a->pool_id, .offset = a->offset, .length = a->length,
		.pages = a->length / page,
	};
	m->fd = open_rpage();
	if (m->fd < 0 || !find_peer(m->fd, a->peer, &m->peer_id) ||
	    !peer_reads(m, &m->reads_at_start))
		return false;
	m->map = (struct rpage_map) {
		.peer_id = m->peer_id, .flags = flags, .pool_id = m->pool_id,
		.offset = m->offset, .length = m->length,
	};
	ret = rpage_map(m->fd, &m->map, &addr);
	if (ret < 0) {
		fail("map %s pool %" PRIu64 " offset %" PRIu64 " length %" PRIu64
		     ": %s", a->peer, m->pool_id, m->offset, m->length,
		     error_text(-ret));
		return false;
	}
	m->addr = addr;
	current_mapping = m;
	return true;
}

/* Unmaps and closes; false (reported) on failure. */
static bool mapping_close(struct mapping *m)
{
	int ret = rpage_unmap(m->fd, &m->map, m->addr);

	current_mapping = NULL;
	close(m->fd);
	if (ret < 0) {
		fail("unmap mapping %llu: %s", (unsigned long long)m->map.map_id,
		     error_text(-ret));
		return false;
	}
	return true;
}

static bool mapping_stats(const struct mapping *m, struct rpage_fault_stats *st)
{
	struct rpage_map_stats arg = { .map_id = m->map.map_id };
	int ret = rpage_map_stats(m->fd, &arg);

	if (ret < 0) {
		fail("stats of mapping %llu: %s", (unsigned long long)arg.map_id,
		     error_text(-ret));
		return false;
	}
	*st = arg.stats;
	return true;
}

/* Pages that did not match, and the first wrong word of them. */
struct tally {
	uint64_t mismatches;
	uint64_t first_at;		/* pool offset; UINT64_MAX if none */
	uint64_t first_word;		/* what was there, as in memory */
	uint64_t first_seed;		/* the seed it was checked against */
	pthread_mutex_t lock;
};

static void tally_init(struct tally *t)
{
	*t = (struct tally) { .first_at = UINT64_MAX };
	pthread_mutex_init(&t->lock, NULL);
}

/*
 * Touches page @i of the mapping (the first byte alone first, so that a
 * fault's address is the page's) and checks all of it against the
 * pattern of @seed, counting a mismatch in @t.
 */
/* touch --no-check: pages are touched, not checked (a pool of zeroes). */
static bool no_check;

static void touch_page(const struct mapping *m, uint64_t i, uint64_t seed,
		       struct tally *t)
{
	const unsigned char *p = m->addr + i * page;
	uint64_t at;

	(void)*(volatile const unsigned char *)p;
	if (no_check)
		return;
	at = rpage_pattern_check(p, page, m->pool_id, m->offset + i * page, seed);
	if (at == UINT64_MAX)
		return;
	pthread_mutex_lock(&t->lock);
	t->mismatches++;
	if (at < t->first_at) {
		t->first_at = at;
		memcpy(&t->first_word, p + (at - m->offset - i * page), 8);
		t->first_seed = seed;
	}
	pthread_mutex_unlock(&t->lock);
}

/* false (reported, the first wrong word) if any page did not match. */
static bool tally_clean(const struct mapping *m, const struct tally *t)
{
	if (!t->mismatches)
		return true;
	fail_mismatch("mapping", &t->first_word, t->first_at, t->first_at,
		      m->pool_id, t->first_seed);
	return false;
}

/*
 * Where touch's threads all stop once @after pages have been touched
 * between them, until the test lets them go: it disrupts the network
 * meanwhile, so that the faults after the gate meet the disruption.
 * The first @after touches are handed out as tickets, so that no page
 * beyond them is touched before the test has had its say; a thread only
 * waits once every ticket is out, so their holders always end them and
 * the gate always moves, however few pages each thread has.
 */
struct gate {
	uint64_t after;			/* pages */
	const char *ready, *go;		/* tell_ready(), wait_for_file() */
	pthread_mutex_t lock;
	pthread_cond_t moved;		/* state left GATE_CLOSED */
	uint64_t claimed, done;		/* tickets handed out, touches ended */
	enum { GATE_CLOSED, GATE_OPEN, GATE_FAILED } state;
};

static void gate_init(struct gate *g, uint64_t after, const char *ready,
		      const char *go)
{
	*g = (struct gate) { .after = after, .ready = ready, .go = go };
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->moved, NULL);
}

/*
 * Before a touch: true to go ahead, at once with one of the first
 * @after tickets, or once the gate has opened; false if it failed.
 */
static bool gate_enter(struct gate *g)
{
	bool pass = true;

	if (!g)
		return true;
	pthread_mutex_lock(&g->lock);
	if (g->claimed < g->after) {
		g->claimed++;
	} else {
		while (g->state == GATE_CLOSED)
			pthread_cond_wait(&g->moved, &g->lock);
		pass = g->state == GATE_OPEN;
	}
	pthread_mutex_unlock(&g->lock);
	return pass;
}

/*
 * After a touch. The one that ends the @after-th touch finds every other
 * thread waiting in gate_enter() (or out of pages): it tells the test
 * and waits for its go on behalf of them all. false if that failed
 * (reported).
 */
static bool gate_leave(struct gate *g)
{
	bool last, ok;

	if (!g)
		return true;
	pthread_mutex_lock(&g->lock);
	last = g->done < g->after && ++g->done == g->after;
	pthread_mutex_unlock(&g->lock);
	if (!last)
		return true;
	ok = tell_ready(g->ready) && wait_for_file("touch", g->go);
	pthread_mutex_lock(&g->lock);
	g->state = ok ? GATE_OPEN : GATE_FAILED;
	pthread_cond_broadcast(&g->moved);
	pthread_mutex_unlock(&g->lock);
	return ok;
}

/* One sweep of touches over a mapping, and how it went. */
struct sweep {
	const struct mapping *m;
	const uint64_t *order;		/* the pages, in the order touched */
	uint64_t count, threads, seed;
	bool write;			/* each page checked is then written */
	uint64_t write_seed;		/* with this seed's pattern */
	unsigned int pause_ms;		/* after each page */
	struct gate *gate;		/* NULL for none */
	struct tally *tally;
	uint64_t max_touch_ms;		/* out: the slowest page */
};

/* One thread's share of a sweep. */
struct toucher {
	pthread_t thread;
	const struct sweep *s;
	const uint64_t *order;
	uint64_t count;
	uint64_t max_ms;
};

static void *toucher_run(void *arg)
{
	struct toucher *w = arg;
	const struct sweep *s = w->s;

	for (uint64_t k = 0; k < w->count && gate_enter(s->gate); k++) {
		uint64_t start = now_ms(), took;

		touch_page(s->m, w->order[k], s->seed, s->tally);
		if (s->write)
			rpage_pattern_fill(s->m->addr + w->order[k] * page, page,
					   s->m->pool_id,
					   s->m->offset + w->order[k] * page,
					   s->write_seed);
		took = now_ms() - start;
		if (took > w->max_ms)
			w->max_ms = took;
		if (!gate_leave(s->gate))
			break;
		if (s->pause_ms)
			sleep_ms(s->pause_ms);
	}
	return NULL;
}

/*
 * Touches the @count pages of @s->order, split into @s->threads
 * contiguous slices touched at once; false (reported) if a thread cannot
 * start or the gate failed.
 */
static bool touch_pages(struct sweep *s)
{
	struct toucher w[MAX_THREADS];
	uint64_t started = 0;
	int ret = 0;

	for (; started < s->threads && !ret; started++) {
		uint64_t from = s->count * started / s->threads;

		w[started] = (struct toucher) {
			.s = s, .order = s->order + from,
			.count = s->count * (started + 1) / s->threads - from,
		};
		ret = pthread_create(&w[started].thread, NULL, toucher_run,
				     &w[started]);
	}
	if (ret)
		started--;
	for (uint64_t k = 0; k < started; k++) {
		pthread_join(w[k].thread, NULL);
		if (w[k].max_ms > s->max_touch_ms)
			s->max_touch_ms = w[k].max_ms;
	}
	if (ret) {
		fail("thread %" PRIu64 ": %s", started, strerror(ret));
		return false;
	}
	return !s->gate || s->gate->state != GATE_FAILED;
}

/*
 * The page numbers 0 to @pages - 1 in order, or shuffled (the same way
 * for the same pool, offset and seed); NULL (reported) without memory.
 */
static uint64_t *page_order(const struct mapping *m, bool shuffle, uint64_t seed)
{
	uint64_t *order = calloc(m->pages, sizeof(*order));
	uint64_t state = m->pool_id ^ m->offset ^ rpage_pattern_mix(seed);

	if (!order) {
		fail("%" PRIu64 " pages: %s", m->pages, strerror(ENOMEM));
		return NULL;
	}
	for (uint64_t i = 0; i < m->pages; i++)
		order[i] = i;
	for (uint64_t i = m->pages; shuffle && i > 1; i--) {
		uint64_t j = rpage_pattern_mix(state++) % i, tmp = order[i - 1];

		order[i - 1] = order[j];
		order[j] = tmp;
	}
	return order;
}

/* Touches the first @count pages of the mapping in order, in this thread. */
static bool touch_first(const struct mapping *m, uint64_t count, uint64_t seed,
			struct tally *t)
{
	uint64_t *order = page_order(m, false, 0);
	struct sweep s = {
		.m = m, .order = order, .count = count, .threads = 1,
		.seed = seed, .tally = t,
	};
	bool ok = order && touch_pages(&s);

	free(order);
	return ok;
}

/* Touches every page of the mapping in order, in this thread. */
static bool touch_all(const struct mapping *m, uint64_t seed, struct tally *t)
{
	return touch_first(m, m->pages, seed, t);
}

/* What a run of touch, prefetch or evict reports. */
struct outcome {
	struct rpage_fault_stats st;
	uint64_t reads;			/* the peer's, since the mapping */
	struct tally tally;
};

/*
 * Reads the mapping's counters and the peer's READs into @out and prints
 * the result line, @extra after the common fields (and, for a 2 MiB
 * mapping, its 2 MiB faults and fallbacks last); false (reported) on
 * failure.
 */
static bool report(const struct mapping *m, struct outcome *out,
		   const char *extra)
{
	__u64 p50 = 0, p99 = 0;

	if (!mapping_stats(m, &out->st) || !peer_reads(m, &out->reads))
		return false;
	out->reads -= m->reads_at_start;
	rpage_hist_percentile(out->st.latency, RPAGE_HIST_BUCKETS, 50, &p50);
	rpage_hist_percentile(out->st.latency, RPAGE_HIST_BUCKETS, 99, &p99);
	printf("pages=%" PRIu64 " faults=%llu minor=%llu waits=%llu prefetch_hits=%llu"
	       " refetched=%llu sigbus=%llu reads=%" PRIu64 " mismatches=%" PRIu64
	       " p50_ns=%llu p99_ns=%llu%s", m->pages,
	       (unsigned long long)out->st.faults,
	       (unsigned long long)out->st.minor_faults,
	       (unsigned long long)out->st.waits,
	       (unsigned long long)out->st.prefetch_hits,
	       (unsigned long long)out->st.refetched,
	       (unsigned long long)out->st.sigbus, out->reads,
	       out->tally.mismatches, (unsigned long long)p50,
	       (unsigned long long)p99, extra);
	if (m->map.flags & RPAGE_MAP_HUGE)
		printf(" huge_faults=%llu huge_fallbacks=%llu",
		       (unsigned long long)out->st.huge_faults,
		       (unsigned long long)out->st.huge_fallbacks);
	putchar('\n');
	fflush(stdout);
	return true;
}

/* false (reported) unless @got is @want. */
static bool expect_eq(const char *what, uint64_t got, uint64_t want)
{
	if (got == want)
		return true;
	fail("%s: %" PRIu64 ", want %" PRIu64, what, got, want);
	return false;
}

/* touch PEER POOL LENGTH [--offset O] [--threads N] ... */
static int cmd_touch(int argc, char **argv)
{
	struct outcome out;
	struct sweep sweep;
	struct gate gate;
	struct mapping m;
	struct args a;
	char extra[48];
	unsigned int gated;
	uint64_t *order;

	if (!parse_args(argc, argv, false, OPT_OFFSET | OPT_THREADS | OPT_ORDER |
			OPT_SEED | OPT_READAHEAD | OPT_EXPECT_FAULTS | OPT_PAUSE |
			OPT_NO_CHECK | OPT_PASSES | OPT_WRITE_SEED | OPT_HUGE |
			OPT_GATE, &a))
		return 1;
	gated = a.given & OPT_GATE;
	if (!(a.given & OPT_PASSES))
		a.passes = 1;
	if (!a.passes || (gated && a.passes > 1)) {
		fail("--passes must be at least 1, and 1 with --ready");
		return 1;
	}
	if (gated && gated != OPT_GATE)
		return usage();
	no_check = a.given & OPT_NO_CHECK;
	if (!a.threads || a.threads > MAX_THREADS) {
		fail("threads must be 1 to %d", MAX_THREADS);
		return 1;
	}
	if (a.pause_ms > MAX_PAUSE_MS) {
		fail("pause-ms must be at most %d", MAX_PAUSE_MS);
		return 1;
	}
	/* With nothing touched first or nothing after, the gate tests nothing. */
	if (gated && (!a.after || a.after >= a.length)) {
		fail("--after %" PRIu64 " must be at least a page and less than "
		     "the length %" PRIu64, a.after, a.length);
		return 1;
	}
	tally_init(&out.tally);
	gate_init(&gate, a.after / page, a.ready, a.go);
	if (!mapping_open(&m, &a, (a.given & OPT_READAHEAD ? RPAGE_MAP_READAHEAD : 0) |
			  (a.given & OPT_HUGE ? RPAGE_MAP_HUGE : 0)))
		return 1;
	order = page_order(&m, a.random_order, a.seed);
	if (!order)
		return 1;
	sweep = (struct sweep) {
		.m = &m, .order = order, .count = m.pages, .threads = a.threads,
		.seed = a.seed, .pause_ms = (unsigned int)a.pause_ms,
		.gate = gated ? &gate : NULL, .tally = &out.tally,
	};
	for (uint64_t pass = 0; pass < a.passes; pass++) {
		/* --write-seed: the first pass writes, the next read it back. */
		sweep.write = pass == 0 && (a.given & OPT_WRITE_SEED);
		sweep.write_seed = a.write_seed;
		if (pass > 0 && (a.given & OPT_WRITE_SEED))
			sweep.seed = a.write_seed;
		if (!touch_pages(&sweep))
			return 1;
	}
	/* What is still dirty goes to the pool too. */
	if ((a.given & OPT_WRITE_SEED) &&
	    msync(m.addr, m.length, MS_SYNC)) {
		fail("msync of %" PRIu64 " bytes: %s", m.length, strerror(errno));
		return 1;
	}
	snprintf(extra, sizeof(extra), " max_touch_ms=%" PRIu64, sweep.max_touch_ms);
	if (!report(&m, &out, extra) || !mapping_close(&m) ||
	    !tally_clean(&m, &out.tally))
		return 1;
	if ((a.given & OPT_EXPECT_FAULTS) &&
	    (!expect_eq("faults", out.st.faults, a.expect_faults) ||
	     !expect_eq("peer reads", out.reads, a.expect_faults)))
		return 1;
	free(order);
	return 0;
}

/* prefetch PEER POOL LENGTH [--offset O] [--depth D] [--wait] [--seed S] */
/*
 * --no-touch: waits until the (background) prefetch has read nothing
 * more for 5 s - it is done, or stopped - and reports; touches nothing.
 * Gated (@a's --ready, --go, --after), it then holds the mapping until
 * told, and touches and checks the first --after bytes.
 */
static int prefetch_settle(struct mapping *m, struct outcome *out,
			   const char *extra, const struct args *a)
{
	uint64_t last = UINT64_MAX, since = now_ms();

	for (;;) {
		if (!mapping_stats(m, &out->st))
			return 1;
		if (out->st.prefetched != last) {
			last = out->st.prefetched;
			since = now_ms();
		} else if (now_ms() - since > 5000) {
			break;
		}
		sleep_ms(TOOL_POLL_MS);
	}
	if (!report(m, out, extra))
		return 1;
	if (a->given & OPT_GATE) {
		if (!tell_ready(a->ready) || !wait_for_file("prefetch", a->go) ||
		    !touch_first(m, a->after / page, a->seed, &out->tally) ||
		    !report(m, out, " again") || !tally_clean(m, &out->tally))
			return 1;
	}
	return mapping_close(m) ? 0 : 1;
}

/*
 * hog SIZE --ready PATH: a bystander; takes SIZE bytes of anonymous
 * memory, touches every page, tells PATH, and sleeps until killed.
 */
static int cmd_hog(int argc, char **argv)
{
	uint64_t size;
	char *mem;

	if (argc != 3 || strcmp(argv[1], "--ready"))
		return usage();
	if (!get_bytes("size", argv[0], false, &size))
		return 1;
	mem = map_anon(size);
	if (!mem)
		return 1;
	for (uint64_t i = 0; i < size; i += page)
		mem[i] = 1;
	if (!tell_ready(argv[2]))
		return 1;
	for (;;)
		pause();
}

static int cmd_prefetch(int argc, char **argv)
{
	struct rpage_prefetch pf;
	struct outcome out;
	struct mapping m;
	struct args a;
	char extra[64];
	int ret;

	if (!parse_args(argc, argv, false, OPT_OFFSET | OPT_DEPTH | OPT_WAIT |
			OPT_SEED | OPT_NO_TOUCH | OPT_READAHEAD | OPT_GATE, &a))
		return 1;
	if ((a.given & OPT_GATE) && ((a.given & OPT_GATE) != OPT_GATE ||
				     !(a.given & OPT_NO_TOUCH)))
		return usage();
	if ((a.given & OPT_GATE) && (!a.after || a.after > a.length)) {
		fail("--after %" PRIu64 " must be at least a page and at most "
		     "the length %" PRIu64, a.after, a.length);
		return 1;
	}
	if (a.depth > UINT32_MAX) {
		fail("depth %" PRIu64 " is too large", a.depth);
		return 1;
	}
	tally_init(&out.tally);
	if (!mapping_open(&m, &a, a.given & OPT_READAHEAD ? RPAGE_MAP_READAHEAD : 0))
		return 1;
	pf = (struct rpage_prefetch) {
		.map_id = m.map.map_id, .depth = (__u32)a.depth,
		.flags = a.given & OPT_WAIT ? RPAGE_PREFETCH_WAIT : 0,
		.length = m.length,
	};
	ret = rpage_map_prefetch(m.fd, &pf);
	if (ret < 0) {
		fail("prefetch %" PRIu64 " bytes: %s", m.length, error_text(-ret));
		return 1;
	}
	snprintf(extra, sizeof(extra), " queued=%llu failed=%llu",
		 (unsigned long long)pf.queued, (unsigned long long)pf.failed);
	if (a.given & OPT_NO_TOUCH)
		return prefetch_settle(&m, &out, extra, &a);
	if (!touch_all(&m, a.seed, &out.tally) || !report(&m, &out, extra) ||
	    !mapping_close(&m) || !tally_clean(&m, &out.tally) ||
	    !expect_eq("faults", out.st.faults, 0) ||
	    !expect_eq("prefetch hits", out.st.prefetch_hits, m.pages) ||
	    !expect_eq("peer reads", out.reads, m.pages))
		return 1;
	return 0;
}

/* CLOCK_MONOTONIC in ns: what stall times can take well under 1 ms. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* evict --signal-us: who is signalled, how often, and how many came. */
struct signaller {
	pthread_t thread;
	pthread_t target;
	uint64_t every_us;
	bool stop;			/* __atomic */
};

static uint64_t signals_taken;		/* __atomic */

static void signal_taken(int sig)
{
	__atomic_fetch_add(&signals_taken, 1, __ATOMIC_RELAXED);
}

static void *signaller_run(void *arg)
{
	struct signaller *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		pthread_kill(s->target, SIGUSR1);
		usleep(s->every_us);
	}
	return NULL;
}

/* Signals the calling thread every @every_us until signaller_stop(). */
static bool signaller_start(struct signaller *s, uint64_t every_us)
{
	struct sigaction sa = { .sa_handler = signal_taken, .sa_flags = SA_RESTART };
	int ret;

	s->target = pthread_self();
	s->every_us = every_us;
	s->stop = false;
	if (sigaction(SIGUSR1, &sa, NULL)) {
		fail("sigaction: %s", strerror(errno));
		return false;
	}
	ret = pthread_create(&s->thread, NULL, signaller_run, s);
	if (ret) {
		fail("signalling thread: %s", strerror(ret));
		return false;
	}
	return true;
}

static void signaller_stop(struct signaller *s)
{
	__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
	pthread_join(s->thread, NULL);
}

/* evict PEER POOL OFFSET LENGTH { --seed S | --clean } [...] */
static int cmd_evict(int argc, char **argv)
{
	struct signaller sig;
	struct rpage_evict ev;
	struct outcome out;
	struct mapping m;
	struct args a;
	uint64_t faults_before, want_written, retry_until;
	unsigned int gated, tries = 0;
	int ret, first_error = 0;
	char extra[160];
	bool clean;

	if (!parse_args(argc, argv, true, OPT_SEED | OPT_CLEAN | OPT_READY |
			OPT_GO | OPT_TIMEOUT | OPT_SIGNAL, &a))
		return 1;
	clean = a.given & OPT_CLEAN;
	if (clean == !!(a.given & OPT_SEED))
		return usage();
	gated = a.given & (OPT_READY | OPT_GO);
	if (gated && gated != (OPT_READY | OPT_GO))
		return usage();
	want_written = clean ? 0 : a.length / page;
	tally_init(&out.tally);
	if (!mapping_open(&m, &a, 0) || !touch_all(&m, 0, &out.tally))
		return 1;
	if (!clean)
		rpage_pattern_fill(m.addr, m.length, m.pool_id, m.offset, a.seed);
	if (!mapping_stats(&m, &out.st))
		return 1;
	faults_before = out.st.faults;
	if (gated && (!tell_ready(a.ready) || !wait_for_file("evict", a.go)))
		return 1;

	if ((a.given & OPT_SIGNAL) && !signaller_start(&sig, a.signal_us))
		return 1;
	/* A failed evict is all or nothing: the next try must find it all. */
	retry_until = now_ns() + a.timeout_ms * 1000000ULL;
	for (;;) {
		ev = (struct rpage_evict) { .map_id = m.map.map_id,
					    .length = m.length };
		ret = rpage_map_evict(m.fd, &ev);
		tries++;
		if (ret < 0 && !first_error)
			first_error = -ret;
		if (ret >= 0 || now_ns() > retry_until)
			break;
		sleep_ms(EVICT_RETRY_MS);
	}
	if (a.given & OPT_SIGNAL)
		signaller_stop(&sig);
	if (ret < 0) {
		fail("evict %" PRIu64 " bytes: %s (%u tries)", m.length,
		     error_text(-ret), tries);
		return 1;
	}
	if (!touch_all(&m, clean ? 0 : a.seed, &out.tally) ||
	    !mapping_stats(&m, &out.st))
		return 1;
	snprintf(extra, sizeof(extra),
		 " evicted=%llu written=%llu refaults=%llu first_error=%s tries=%u"
		 " signals=%llu",
		 (unsigned long long)ev.evicted, (unsigned long long)ev.written,
		 (unsigned long long)(out.st.faults - faults_before),
		 first_error ? errno_name(first_error) : "none", tries,
		 (unsigned long long)__atomic_load_n(&signals_taken, __ATOMIC_RELAXED));
	if (!report(&m, &out, extra) || !mapping_close(&m) ||
	    !tally_clean(&m, &out.tally) ||
	    !expect_eq("evicted", ev.evicted, m.pages) ||
	    !expect_eq("written", ev.written, want_written) ||
	    !expect_eq("faults after the evict", out.st.faults - faults_before,
		       m.pages))
		return 1;
	return 0;
}

/* Any other SIGBUS ends the run, with the one line of error. */
static void sigbus_fatal(int sig, siginfo_t *si, void *ctx)
{
	uintptr_t at = (uintptr_t)si->si_addr;
	char msg[160];
	int len;

	if (current_mapping && at - (uintptr_t)current_mapping->addr < current_mapping->length)
		len = snprintf(msg, sizeof(msg),
			       "%s: SIGBUS at pool offset %" PRIu64 "\n", tool_name,
			       current_mapping->offset + (at - (uintptr_t)current_mapping->addr));
	else
		len = snprintf(msg, sizeof(msg), "%s: SIGBUS at %p\n", tool_name,
			       si->si_addr);
	if (write(STDERR_FILENO, msg, (size_t)len) < 0)
		_exit(1);
	_exit(1);
}

/* Ends the run if one touch takes longer than its limit. */
struct watchdog {
	pthread_t thread;
	uint64_t limit_ms;
	uint64_t started_ms;		/* __atomic; 0 between touches */
	uint64_t page;			/* __atomic; the page being touched */
	bool stop;			/* __atomic */
};

static void *watchdog_run(void *arg)
{
	struct watchdog *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint64_t started = __atomic_load_n(&w->started_ms, __ATOMIC_ACQUIRE);

		if (started && now_ms() - started > w->limit_ms) {
			fail("the touch of page %" PRIu64 " has not ended in %" PRIu64 " ms",
			     __atomic_load_n(&w->page, __ATOMIC_ACQUIRE), w->limit_ms);
			_exit(1);
		}
		sleep_ms(TOOL_POLL_MS);
	}
	return NULL;
}

/* Pages touched with SIGBUS caught: how they went. */
struct touches {
	uint64_t sigbus, served;
	uint64_t max_bus_ms;		/* the slowest SIGBUS */
	void *bad_addr;			/* a SIGBUS for another address */
	struct tally tally;		/* of the pages served */
};

/*
 * Touches pages [@from, @to) once each, with SIGBUS caught and @dog
 * watching, into @out.
 */
static void touch_catching(const struct mapping *m, uint64_t from, uint64_t to,
			   uint64_t seed, struct watchdog *dog,
			   struct touches *out)
{
	on_sigbus(sigbus_jump);
	for (uint64_t i = from; i < to; i++) {
		uint64_t start = now_ms(), took;
		void *addr;

		__atomic_store_n(&dog->page, i, __ATOMIC_RELEASE);
		__atomic_store_n(&dog->started_ms, start, __ATOMIC_RELEASE);
		if (!touch_sigbus(m->addr + i * page, &addr)) {
			touch_page(m, i, seed, &out->tally);
			out->served++;
			continue;
		}
		took = now_ms() - start;
		out->sigbus++;
		if (took > out->max_bus_ms)
			out->max_bus_ms = took;
		if (addr != m->addr + i * page && !out->bad_addr)
			out->bad_addr = addr;
	}
	__atomic_store_n(&dog->started_ms, 0, __ATOMIC_RELEASE);
	on_sigbus(sigbus_fatal);
}

/* Starts @dog, which ends the run past @limit_ms; false (reported) if not. */
static bool watchdog_start(struct watchdog *dog, uint64_t limit_ms)
{
	int ret;

	*dog = (struct watchdog) { .limit_ms = limit_ms };
	ret = pthread_create(&dog->thread, NULL, watchdog_run, dog);
	if (ret)
		fail("watchdog thread: %s", strerror(ret));
	return !ret;
}

static void watchdog_stop(struct watchdog *dog)
{
	__atomic_store_n(&dog->stop, true, __ATOMIC_RELEASE);
	pthread_join(dog->thread, NULL);
}

/* How long a page that cannot be read may take to raise SIGBUS. */
static uint64_t sigbus_limit_ms(void)
{
	return 3 * (uint64_t)rpage_test_io_timeout_ms() + 5000;
}

/*
 * Past the SIGBUS limit a touch fails anyway: the watchdog is for one
 * that hangs, and leaves the slow ones to be reported as such.
 */
static uint64_t watchdog_limit_ms(uint64_t sigbus_ms)
{
	return 2 * sigbus_ms + 10000;
}

/*
 * --fetched of @a in pages: within the length, and with @some_left at
 * least one page and not all of them. false (reported) otherwise.
 */
static bool fetched_pages(const struct args *a, bool some_left,
			  uint64_t *pages)
{
	if (some_left && (!a->fetched || a->fetched >= a->length)) {
		fail("--fetched %" PRIu64 " must be at least a page and less than "
		     "the length %" PRIu64, a->fetched, a->length);
		return false;
	}
	if (a->fetched > a->length) {
		fail("--fetched %" PRIu64 " is beyond the length %" PRIu64,
		     a->fetched, a->length);
		return false;
	}
	*pages = a->fetched / page;
	return true;
}

/* survive PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH ... */
static int cmd_survive(int argc, char **argv)
{
	struct touches rest = { 0 }, again = { 0 };
	struct watchdog dog;
	struct tally fetched;
	uint64_t limit_ms, nr_fetched;
	struct mapping m;
	struct args a;
	bool intact;

	if (!parse_args(argc, argv, false, OPT_FETCHED | OPT_READY | OPT_GO |
			OPT_TIMEOUT | OPT_SEED, &a))
		return 1;
	if (~a.given & (OPT_FETCHED | OPT_READY | OPT_GO))
		return usage();
	if (!fetched_pages(&a, false, &nr_fetched))
		return 1;
	limit_ms = a.given & OPT_TIMEOUT ? a.timeout_ms : sigbus_limit_ms();
	tally_init(&fetched);
	tally_init(&rest.tally);
	tally_init(&again.tally);
	if (!mapping_open(&m, &a, 0) ||
	    !touch_first(&m, nr_fetched, a.seed, &fetched) ||
	    !tally_clean(&m, &fetched) || !tell_ready(a.ready) ||
	    !wait_for_file("survive", a.go))
		return 1;

	if (!watchdog_start(&dog, watchdog_limit_ms(limit_ms)))
		return 1;
	touch_catching(&m, nr_fetched, m.pages, a.seed, &dog, &rest);
	/* The pages fetched before must all still be here, unchanged. */
	touch_catching(&m, 0, nr_fetched, a.seed, &dog, &again);
	watchdog_stop(&dog);

	intact = !again.sigbus && !again.tally.mismatches;
	printf("sigbus=%" PRIu64 " served=%" PRIu64 " intact=%s max_sigbus_ms=%" PRIu64 "\n",
	       rest.sigbus, rest.served, intact ? "yes" : "no", rest.max_bus_ms);
	fflush(stdout);
	if (again.sigbus) {
		fail("%" PRIu64 " of the %" PRIu64 " pages fetched first raised SIGBUS",
		     again.sigbus, nr_fetched);
		return 1;
	}
	if (!tally_clean(&m, &again.tally) || !tally_clean(&m, &rest.tally) ||
	    !mapping_close(&m))
		return 1;
	if (rest.bad_addr) {
		fail("a SIGBUS came for %p, not for the page touched", rest.bad_addr);
		return 1;
	}
	if (!rest.sigbus) {
		fail("no SIGBUS: all %" PRIu64 " pages after the first %" PRIu64
		     " were served", rest.served, nr_fetched);
		return 1;
	}
	if (rest.max_bus_ms > limit_ms) {
		fail("a SIGBUS took %" PRIu64 " ms, more than %" PRIu64 " ms",
		     rest.max_bus_ms, limit_ms);
		return 1;
	}
	return 0;
}

/* stall's touch of the last page, in a thread of its own. */
struct stall_touch {
	pthread_t thread;
	const unsigned char *addr;
	bool started, ended, sigbus;	/* __atomic */
};

static void *stall_touch_run(void *arg)
{
	struct stall_touch *st = arg;
	void *addr;
	bool bus;

	__atomic_store_n(&st->started, true, __ATOMIC_RELEASE);
	/* SIGBUS once the peer stays away too long: not stall's business. */
	bus = touch_sigbus(st->addr, &addr);
	__atomic_store_n(&st->sigbus, bus, __ATOMIC_RELEASE);
	__atomic_store_n(&st->ended, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Raises *@max to the time since @start, if that is longer. */
static void note_max(uint64_t *max, uint64_t start)
{
	uint64_t took = now_ns() - start;

	if (took > *max)
		*max = took;
}

/* The slowest of STALL_ROUNDS of each call, in ns. */
struct stall_times {
	uint64_t mmap, munmap, anon_touch, cmdline;
};

/*
 * Times the calls that take this process's mmap lock: mmap(2) and
 * munmap(2) for writing, a read of /proc/self/cmdline (as ps does) for
 * reading, and a fault on anonymous memory (for reading, or where the
 * kernel has them, its VMA's lock first). Behind a fault that held the
 * lock while it waits for the peer, each would wait as long. false
 * (reported) if a call fails.
 */
static bool stall_measure(struct stall_times *t)
{
	char buf[4096];
	ssize_t got;
	int fd, ret;

	*t = (struct stall_times) { 0 };
	for (int round = 0; round < STALL_ROUNDS; round++) {
		uint64_t start = now_ns();
		unsigned char *p = mmap(NULL, STALL_MAP_BYTES, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			fail("mmap of %lu bytes: %s", STALL_MAP_BYTES, strerror(errno));
			return false;
		}
		note_max(&t->mmap, start);
		/* The mapping is new: so is the page, and the fault a real one. */
		start = now_ns();
		*(volatile unsigned char *)p = 1;
		note_max(&t->anon_touch, start);
		start = now_ns();
		ret = munmap(p, STALL_MAP_BYTES);
		if (ret) {
			fail("munmap: %s", strerror(errno));
			return false;
		}
		note_max(&t->munmap, start);
	}
	for (int round = 0; round < STALL_ROUNDS; round++) {
		uint64_t start = now_ns();

		fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fail("/proc/self/cmdline: %s", strerror(errno));
			return false;
		}
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			;
		if (got < 0) {
			fail("read /proc/self/cmdline: %s", strerror(errno));
			close(fd);
			return false;
		}
		close(fd);
		note_max(&t->cmdline, start);
	}
	return true;
}

/* stall PEER POOL LENGTH --fetched-ready PATH --go PATH --ready PATH ... */
static int cmd_stall(int argc, char **argv)
{
	struct stall_touch st = { 0 };
	struct stall_times t;
	struct tally first;
	struct mapping m;
	struct args a;
	int ret;

	if (!parse_args(argc, argv, false, OPT_FETCHED_READY | OPT_GO | OPT_READY |
			OPT_SEED, &a))
		return 1;
	if (~a.given & (OPT_FETCHED_READY | OPT_GO | OPT_READY))
		return usage();
	/* Page 0 is fetched while the peer is there: the last must be another. */
	if (a.length < 2 * page) {
		fail("length %" PRIu64 " must be at least two pages", a.length);
		return 1;
	}
	tally_init(&first);
	if (!mapping_open(&m, &a, 0) || !touch_first(&m, 1, a.seed, &first) ||
	    !tally_clean(&m, &first) || !tell_ready(a.fetched_ready) ||
	    !wait_for_file("stall", a.go))
		return 1;

	on_sigbus(sigbus_jump);
	st.addr = m.addr + (m.pages - 1) * page;
	ret = pthread_create(&st.thread, NULL, stall_touch_run, &st);
	if (ret) {
		fail("toucher thread: %s", strerror(ret));
		return 1;
	}
	sleep_ms(STALL_CHECK_MS);
	if (!__atomic_load_n(&st.started, __ATOMIC_ACQUIRE)) {
		fail("the toucher thread did not start within %d ms", STALL_CHECK_MS);
		return 1;
	}
	if (__atomic_load_n(&st.ended, __ATOMIC_ACQUIRE)) {
		fail("the touch did not stall: the last page %s within %d ms",
		     __atomic_load_n(&st.sigbus, __ATOMIC_ACQUIRE) ?
		     "raised SIGBUS" : "was served", STALL_CHECK_MS);
		return 1;
	}
	if (!stall_measure(&t))
		return 1;
	printf("stall mmap_max_ms=%.3f munmap_max_ms=%.3f anon_touch_max_ms=%.3f"
	       " cmdline_max_ms=%.3f\n", t.mmap / 1e6, t.munmap / 1e6,
	       t.anon_touch / 1e6, t.cmdline / 1e6);
	fflush(stdout);
	if (!tell_ready(a.ready))
		return 1;
	/* The test times what another process does to us, then kills us. */
	for (;;)
		pause();
}

/*
 * What page @i of the mapping holds, for a message: the pattern of
 * @seed_new (the new pool's), of @seed (the old pool's), zeroes or none.
 */
static const char *page_holds(const struct mapping *m, uint64_t i,
			      uint64_t seed, uint64_t seed_new)
{
	const unsigned char *p = m->addr + i * page;
	uint64_t at = m->offset + i * page;

	if (rpage_pattern_check(p, page, m->pool_id, at, seed_new) == UINT64_MAX)
		return "read the new pool's bytes through the old mapping";
	if (rpage_pattern_check(p, page, m->pool_id, at, seed) == UINT64_MAX)
		return "read the old pool's pattern, though it was never fetched";
	if (first_nonzero(p, page) == UINT64_MAX)
		return "read zeroes";
	return "read neither pool's pattern";
}

/* replaced PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH ... */
static int cmd_replaced(int argc, char **argv)
{
	struct touches next = { 0 }, dirty = { 0 }, clean = { 0 };
	struct watchdog dog;
	struct rpage_evict ev;
	struct tally fetched;
	uint64_t nr_fetched, dirty_seed;
	const char *evict_errno, *msync_errno, *evict2_errno;
	struct rpage_evict ev2;
	int ret2;
	struct mapping m;
	struct args a;
	bool intact;
	int ret;

	if (!parse_args(argc, argv, false, OPT_FETCHED | OPT_READY | OPT_GO |
			OPT_SEED_NEW | OPT_SEED, &a))
		return 1;
	if (~a.given & (OPT_FETCHED | OPT_READY | OPT_GO | OPT_SEED_NEW))
		return usage();
	if (!fetched_pages(&a, true, &nr_fetched))
		return 1;
	/* Neither pool's: a write-back of it would show wherever it landed. */
	dirty_seed = a.seed_new + 1;
	tally_init(&fetched);
	tally_init(&next.tally);
	tally_init(&dirty.tally);
	tally_init(&clean.tally);
	if (!mapping_open(&m, &a, 0) ||
	    !touch_first(&m, nr_fetched, a.seed, &fetched) ||
	    !tally_clean(&m, &fetched))
		return 1;
	rpage_pattern_fill(m.addr, page, m.pool_id, m.offset, dirty_seed);
	if (!tell_ready(a.ready) || !wait_for_file("replaced", a.go) ||
	    !watchdog_start(&dog, watchdog_limit_ms(sigbus_limit_ms())))
		return 1;

	/* Checked against the new pool's pattern: a match is the failure. */
	touch_catching(&m, nr_fetched, nr_fetched + 1, a.seed_new, &dog, &next);
	ev = (struct rpage_evict) { .map_id = m.map.map_id, .length = page };
	ret = rpage_map_evict(m.fd, &ev);
	evict_errno = ret < 0 ? errno_name(-ret) : "none";
	/* A write back finds the pool replaced: the page stays, clean. */
	msync_errno = msync(m.addr, page, MS_SYNC) ? errno_name(errno) : "none";
	ev2 = (struct rpage_evict) { .map_id = m.map.map_id, .length = page };
	ret2 = rpage_map_evict(m.fd, &ev2);
	evict2_errno = ret2 < 0 ? errno_name(-ret2) : "none";
	touch_catching(&m, 0, 1, dirty_seed, &dog, &dirty);
	touch_catching(&m, 1, nr_fetched, a.seed, &dog, &clean);
	watchdog_stop(&dog);

	intact = !dirty.sigbus && !clean.sigbus && !dirty.tally.mismatches &&
		!clean.tally.mismatches;
	printf("replaced sigbus=%s evict_errno=%s msync_errno=%s evict_after_msync_errno=%s fetched_intact=%s\n",
	       next.sigbus ? "yes" : "no", evict_errno, msync_errno,
	       evict2_errno, intact ? "yes" : "no");
	fflush(stdout);
	if (next.bad_addr) {
		fail("a SIGBUS came for %p, not for the page touched", next.bad_addr);
		return 1;
	}
	if (!next.sigbus) {
		fail("no SIGBUS at pool offset %" PRIu64 ", never fetched: it %s",
		     m.offset + a.fetched,
		     page_holds(&m, nr_fetched, a.seed, a.seed_new));
		return 1;
	}
	if (!ret) {
		fail("evicting the dirty first page succeeded (%llu evicted, %llu "
		     "written): a mapping of the old pool may not write to the new",
		     (unsigned long long)ev.evicted, (unsigned long long)ev.written);
		return 1;
	}
	if (!ret2) {
		fail("evicting the first page after a write back found the pool "
		     "replaced succeeded (%llu evicted, %llu written): it was the "
		     "page's only copy", (unsigned long long)ev2.evicted,
		     (unsigned long long)ev2.written);
		return 1;
	}
	if (dirty.sigbus || clean.sigbus) {
		fail("%" PRIu64 " of the %" PRIu64 " pages fetched raised SIGBUS",
		     dirty.sigbus + clean.sigbus, nr_fetched);
		return 1;
	}
	if (!tally_clean(&m, &dirty.tally) || !tally_clean(&m, &clean.tally) ||
	    !mapping_close(&m))
		return 1;
	return 0;
}

/*
 * del-race: ROUNDS times, a named mapping of LENGTH bytes of POOL is
 * added, mapped, and touched by a thread at random pages while this one
 * deletes it by force (RPAGE_MAP_DEL_FORCE) a random moment later. Once
 * the thread sees that the delete has returned, every page it touched
 * before, mapped or being mapped then, must raise SIGBUS. Prints
 * "del-race rounds N touched N after_delete N" and fails if any page
 * could still be read after a delete.
 */
#define DEL_RACE_NAME	"rpage-del-race"
#define DEL_RACE_MAX	4096

struct del_race {
	volatile unsigned char *area;
	uint64_t pages;
	unsigned int seed;
	atomic_int deleted;
	uint64_t touched[DEL_RACE_MAX];
	unsigned int nr;
	uint64_t after;
};

static void *del_race_toucher(void *arg)
{
	struct del_race *r = arg;
	void *addr;
	unsigned int i;

	while (!atomic_load(&r->deleted)) {
		uint64_t p = rand_r(&r->seed) % r->pages;

		if (touch_sigbus((const void *)(r->area + p * page), &addr))
			continue;
		if (r->nr < DEL_RACE_MAX)
			r->touched[r->nr++] = p;
	}
	/* The delete has returned: nothing of the mapping may be read now. */
	for (i = 0; i < r->nr; i++)
		if (!touch_sigbus((const void *)(r->area + r->touched[i] * page),
				  &addr))
			r->after++;
	return NULL;
}

static int cmd_del_race(int argc, char **argv)
{
	uint64_t pool, length, rounds, touched = 0, after = 0, round;
	struct rpage_map_add add;
	struct rpage_map_del del;
	char node[96];
	__u32 peer_id;
	int fd, nfd;

	if (argc != 4 || !get_number("POOL", argv[1], &pool) ||
	    !get_bytes("LENGTH", argv[2], false, &length) ||
	    !get_number("ROUNDS", argv[3], &rounds))
		return usage();
	fd = open_rpage();
	if (fd < 0 || !find_peer(fd, argv[0], &peer_id))
		return 1;
	on_sigbus(sigbus_jump);
	snprintf(node, sizeof(node), "/dev/%s/%s", RPAGE_MAP_NODE_DIR,
		 DEL_RACE_NAME);
	memset(&del, 0, sizeof(del));
	strcpy(del.name, DEL_RACE_NAME);
	del.flags = RPAGE_MAP_DEL_FORCE;
	for (round = 0; round < rounds; round++) {
		static struct del_race r;
		pthread_t t;
		int ret;

		memset(&r, 0, sizeof(r));
		r.pages = length / page;
		r.seed = round;

		memset(&add, 0, sizeof(add));
		strcpy(add.name, DEL_RACE_NAME);
		add.peer_id = peer_id;
		add.pool_id = pool;
		add.length = length;
		add.mode = 0600;
		ret = rpage_map_add(fd, &add);
		if (ret) {
			fail("map add: %s", error_text(-ret));
			return 1;
		}
		nfd = open(node, O_RDWR | O_CLOEXEC);
		r.area = nfd < 0 ? MAP_FAILED :
			 mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED,
			      nfd, 0);
		if (r.area == MAP_FAILED) {
			fail("%s: %s", node, strerror(errno));
			return 1;
		}
		if (pthread_create(&t, NULL, del_race_toucher, &r)) {
			fail("pthread_create");
			return 1;
		}
		usleep(rand_r(&r.seed) % 3000);
		ret = rpage_map_del(fd, &del);
		atomic_store(&r.deleted, 1);
		pthread_join(t, NULL);
		munmap((void *)r.area, length);
		close(nfd);
		if (ret) {
			fail("map del by force: %s", error_text(-ret));
			return 1;
		}
		touched += r.nr;
		after += r.after;
	}
	printf("del-race rounds %" PRIu64 " touched %" PRIu64
	       " after_delete %" PRIu64 "\n", rounds, touched, after);
	if (after) {
		fail("%" PRIu64 " touches succeeded after a delete had returned",
		     after);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} commands[] = {
		{ "touch", cmd_touch },
		{ "prefetch", cmd_prefetch },
		{ "hog", cmd_hog },
		{ "evict", cmd_evict },
		{ "survive", cmd_survive },
		{ "stall", cmd_stall },
		{ "replaced", cmd_replaced },
		{ "del-race", cmd_del_race },
	};

	tool_init("rpage_fault");
	on_sigbus(sigbus_fatal);
	for (size_t i = 0; argc >= 2 && i < ARRAY_LEN(commands); i++) {
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 2, argv + 2);
	}
	return usage();
}
