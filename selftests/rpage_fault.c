// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_fault: maps a peer's pool that holds the pattern of
 * rpage_pattern.h (as `rpage_pattern export` or `fill` put it there)
 * and touches it, so that every page comes in by a remote page fault,
 * for the tests that span two hosts.
 *
 *   rpage_fault touch PEER POOL LENGTH [--offset O] [--threads N]
 *               [--order random|seq] [--seed S] [--readahead]
 *               [--expect-faults N]
 *   rpage_fault prefetch PEER POOL LENGTH [--offset O] [--depth D] [--wait]
 *               [--seed S]
 *   rpage_fault evict PEER POOL OFFSET LENGTH { --seed S | --clean }
 *   rpage_fault survive PEER POOL LENGTH --fetched BYTES --ready PATH
 *               --go PATH [--timeout-ms T] [--seed S]
 *
 * touch: N threads (4) touch every page of the mapping once between
 * them, in one shuffled order (random, the default) or in contiguous
 * slices (seq), checking each whole page against the pattern of seed S
 * (0); --readahead maps with RPAGE_MAP_READAHEAD. With --expect-faults,
 * the mapping's faults and the peer's READs must both be N.
 *
 * prefetch: prefetches the whole mapping (in the background, or with
 * --wait before returning; D READs in flight), then touches every page
 * in order: no fault may issue a READ of its own, every one must be a
 * prefetch hit, and the peer must have been read each page once.
 *
 * evict: touches the range, writes the pattern of seed S over it (not
 * with --clean), evicts it and touches it again: every page must have
 * been dropped, the dirty ones written back, and come back by a new
 * fault with seed S's pattern (the pool's, seed 0, with --clean). The
 * range must hold seed 0 to begin with.
 *
 * survive: touches the first BYTES, creates PATH --ready and waits for
 * PATH --go (the test then takes the pool or peer away), then touches
 * every other page once: some must raise SIGBUS, each within T ms
 * (3 * io_timeout_ms + 5000 by default), and the pages fetched first
 * must stay intact.
 *
 * PEER is a peer's name; POOL is the pool's id on that peer; sizes are
 * bytes, multiples of the page size, with an optional K, M or G suffix.
 * Exit status 0 on success with one line of result on standard output
 * (touch, prefetch and evict: the mapping's counters, the peer's READs
 * and the pages that did not match); 1 on failure, with one line on
 * standard error (after the result line where there is one).
 *
 * Built on librpage alone:
 *   cc ... -Iinclude/uapi -Iulib -o rpage_fault selftests/rpage_fault.c \
 *      build/user/librpage.a -pthread
 */
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>

#include "rpage_tool.h"

#define DEFAULT_THREADS	4
#define MAX_THREADS	256

static int usage(void)
{
	fail("usage: rpage_fault { touch PEER POOL LENGTH [--offset O] [--threads N] "
	     "[--order random|seq] [--seed S] [--readahead] [--expect-faults N] | "
	     "prefetch PEER POOL LENGTH [--offset O] [--depth D] [--wait] [--seed S] | "
	     "evict PEER POOL OFFSET LENGTH { --seed S | --clean } | "
	     "survive PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH "
	     "[--timeout-ms T] [--seed S] }");
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
};

/* A subcommand's arguments. */
struct args {
	const char *peer;
	uint64_t pool_id, offset, length;
	unsigned int given;		/* OPT_* */
	uint64_t threads, seed, expect_faults, depth, fetched, timeout_ms;
	bool random_order;
	const char *ready, *go;
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
	{ "--expect-faults", OPT_EXPECT_FAULTS, ARG_NUMBER,
	  offsetof(struct args, expect_faults) },
	{ "--depth", OPT_DEPTH, ARG_NUMBER, offsetof(struct args, depth) },
	{ "--wait", OPT_WAIT, ARG_NONE, 0 },
	{ "--clean", OPT_CLEAN, ARG_NONE, 0 },
	{ "--fetched", OPT_FETCHED, ARG_BYTES, offsetof(struct args, fetched) },
	{ "--ready", OPT_READY, ARG_PATH, offsetof(struct args, ready) },
	{ "--go", OPT_GO, ARG_PATH, offsetof(struct args, go) },
	{ "--timeout-ms", OPT_TIMEOUT, ARG_NUMBER, offsetof(struct args, timeout_ms) },
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
static void touch_page(const struct mapping *m, uint64_t i, uint64_t seed,
		       struct tally *t)
{
	const unsigned char *p = m->addr + i * page;
	uint64_t at;

	(void)*(volatile const unsigned char *)p;
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

/* One thread's share of the pages. */
struct toucher {
	pthread_t thread;
	const struct mapping *m;
	const uint64_t *order;
	uint64_t count, seed;
	struct tally *tally;
};

static void *toucher_run(void *arg)
{
	const struct toucher *w = arg;

	for (uint64_t k = 0; k < w->count; k++)
		touch_page(w->m, w->order[k], w->seed, w->tally);
	return NULL;
}

/*
 * Touches the @count pages of @order, split into @threads contiguous
 * slices touched at once; false (reported) if a thread cannot start.
 */
static bool touch_pages(const struct mapping *m, const uint64_t *order,
			uint64_t count, uint64_t threads, uint64_t seed,
			struct tally *t)
{
	struct toucher w[MAX_THREADS];
	uint64_t started = 0;
	int ret = 0;

	for (; started < threads && !ret; started++) {
		uint64_t from = count * started / threads;

		w[started] = (struct toucher) {
			.m = m, .order = order + from, .seed = seed, .tally = t,
			.count = count * (started + 1) / threads - from,
		};
		ret = pthread_create(&w[started].thread, NULL, toucher_run,
				     &w[started]);
	}
	if (ret)
		started--;
	for (uint64_t k = 0; k < started; k++)
		pthread_join(w[k].thread, NULL);
	if (ret)
		fail("thread %" PRIu64 ": %s", started, strerror(ret));
	return !ret;
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

/* Touches every page of the mapping in order, in this thread. */
static bool touch_all(const struct mapping *m, uint64_t seed, struct tally *t)
{
	uint64_t *order = page_order(m, false, 0);
	bool ok = order && touch_pages(m, order, m->pages, 1, seed, t);

	free(order);
	return ok;
}

/* What a run of touch, prefetch or evict reports. */
struct outcome {
	struct rpage_fault_stats st;
	uint64_t reads;			/* the peer's, since the mapping */
	struct tally tally;
};

/*
 * Reads the mapping's counters and the peer's READs into @out and prints
 * the result line, @extra at its end; false (reported) on failure.
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
	       " sigbus=%llu reads=%" PRIu64 " mismatches=%" PRIu64
	       " p50_ns=%llu p99_ns=%llu%s\n", m->pages,
	       (unsigned long long)out->st.faults,
	       (unsigned long long)out->st.minor_faults,
	       (unsigned long long)out->st.waits,
	       (unsigned long long)out->st.prefetch_hits,
	       (unsigned long long)out->st.sigbus, out->reads,
	       out->tally.mismatches, (unsigned long long)p50,
	       (unsigned long long)p99, extra);
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
	struct mapping m;
	struct args a;
	uint64_t *order;

	if (!parse_args(argc, argv, false, OPT_OFFSET | OPT_THREADS | OPT_ORDER |
			OPT_SEED | OPT_READAHEAD | OPT_EXPECT_FAULTS, &a))
		return 1;
	if (!a.threads || a.threads > MAX_THREADS) {
		fail("threads must be 1 to %d", MAX_THREADS);
		return 1;
	}
	tally_init(&out.tally);
	if (!mapping_open(&m, &a, a.given & OPT_READAHEAD ? RPAGE_MAP_READAHEAD : 0))
		return 1;
	order = page_order(&m, a.random_order, a.seed);
	if (!order || !touch_pages(&m, order, m.pages, a.threads, a.seed, &out.tally) ||
	    !report(&m, &out, "") || !mapping_close(&m) ||
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
static int cmd_prefetch(int argc, char **argv)
{
	struct rpage_prefetch pf;
	struct outcome out;
	struct mapping m;
	struct args a;
	char extra[64];
	int ret;

	if (!parse_args(argc, argv, false, OPT_OFFSET | OPT_DEPTH | OPT_WAIT |
			OPT_SEED, &a))
		return 1;
	if (a.depth > UINT32_MAX) {
		fail("depth %" PRIu64 " is too large", a.depth);
		return 1;
	}
	tally_init(&out.tally);
	if (!mapping_open(&m, &a, 0))
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
	if (!touch_all(&m, a.seed, &out.tally) || !report(&m, &out, extra) ||
	    !mapping_close(&m) || !tally_clean(&m, &out.tally) ||
	    !expect_eq("faults", out.st.faults, 0) ||
	    !expect_eq("prefetch hits", out.st.prefetch_hits, m.pages) ||
	    !expect_eq("peer reads", out.reads, m.pages))
		return 1;
	return 0;
}

/* evict PEER POOL OFFSET LENGTH { --seed S | --clean } */
static int cmd_evict(int argc, char **argv)
{
	struct rpage_evict ev;
	struct outcome out;
	struct mapping m;
	struct args a;
	uint64_t faults_before, want_written;
	char extra[96];
	bool clean;
	int ret;

	if (!parse_args(argc, argv, true, OPT_SEED | OPT_CLEAN, &a))
		return 1;
	clean = a.given & OPT_CLEAN;
	if (clean == !!(a.given & OPT_SEED))
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

	ev = (struct rpage_evict) { .map_id = m.map.map_id, .length = m.length };
	ret = rpage_map_evict(m.fd, &ev);
	if (ret < 0) {
		fail("evict %" PRIu64 " bytes: %s", m.length, error_text(-ret));
		return 1;
	}
	if (!touch_all(&m, clean ? 0 : a.seed, &out.tally) ||
	    !mapping_stats(&m, &out.st))
		return 1;
	snprintf(extra, sizeof(extra), " evicted=%llu written=%llu refaults=%llu",
		 (unsigned long long)ev.evicted, (unsigned long long)ev.written,
		 (unsigned long long)(out.st.faults - faults_before));
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

/* survive PEER POOL LENGTH --fetched BYTES --ready PATH --go PATH ... */
static int cmd_survive(int argc, char **argv)
{
	struct touches rest = { 0 }, again = { 0 };
	struct watchdog dog = { 0 };
	struct tally fetched;
	uint64_t limit_ms, nr_fetched;
	struct mapping m;
	struct args a;
	bool intact;
	int ret;

	if (!parse_args(argc, argv, false, OPT_FETCHED | OPT_READY | OPT_GO |
			OPT_TIMEOUT | OPT_SEED, &a))
		return 1;
	if (~a.given & (OPT_FETCHED | OPT_READY | OPT_GO))
		return usage();
	if (a.fetched > a.length) {
		fail("--fetched %" PRIu64 " is beyond the length %" PRIu64,
		     a.fetched, a.length);
		return 1;
	}
	limit_ms = a.given & OPT_TIMEOUT ? a.timeout_ms :
		3 * (uint64_t)rpage_test_io_timeout_ms() + 5000;
	nr_fetched = a.fetched / page;
	tally_init(&fetched);
	tally_init(&rest.tally);
	tally_init(&again.tally);
	if (!mapping_open(&m, &a, 0))
		return 1;
	for (uint64_t i = 0; i < nr_fetched; i++)
		touch_page(&m, i, a.seed, &fetched);
	if (!tally_clean(&m, &fetched) || !tell_ready(a.ready) ||
	    !wait_for_file("survive", a.go))
		return 1;

	/* Past the limit a touch fails anyway: this is for one that hangs. */
	dog.limit_ms = 2 * limit_ms + 10000;
	ret = pthread_create(&dog.thread, NULL, watchdog_run, &dog);
	if (ret) {
		fail("watchdog thread: %s", strerror(ret));
		return 1;
	}
	touch_catching(&m, nr_fetched, m.pages, a.seed, &dog, &rest);
	/* The pages fetched before must all still be here, unchanged. */
	touch_catching(&m, 0, nr_fetched, a.seed, &dog, &again);
	__atomic_store_n(&dog.stop, true, __ATOMIC_RELEASE);
	pthread_join(dog.thread, NULL);

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

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} commands[] = {
		{ "touch", cmd_touch },
		{ "prefetch", cmd_prefetch },
		{ "evict", cmd_evict },
		{ "survive", cmd_survive },
	};

	tool_init("rpage_fault");
	on_sigbus(sigbus_fatal);
	for (size_t i = 0; argc >= 2 && i < ARRAY_LEN(commands); i++) {
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 2, argv + 2);
	}
	return usage();
}
