// SPDX-License-Identifier: GPL-2.0
/*
 * rpage-bench: the rpage side of the remote memory benchmark. It runs on
 * host B against pool POOL of peer PEER, which holds the pattern of
 * rpage_pattern.h (`rpage_pattern export` on host A), and measures
 * remote page faults, RPAGE_IOC_READ and prefetch.
 *
 *   rpage-bench PEER POOL [--size BYTES] [--samples-dir DIR]
 *               [--only NAME[,NAME...]] [--iterations N] [--prefix P]
 *
 * --size: the bytes, from the pool's start, every benchmark works on:
 *	64M by default; a multiple of the page size, K, M or G may follow.
 * --samples-dir: also write DIR/NAME.txt for every latency record, each
 *	sample in ns on a line, in the order taken (thread after thread
 *	where several touch at once); DIR is created if missing.
 * --only: run only the benchmarks named; a NAME that is no benchmark's
 *	full name selects all whose names start with it ("fault_t").
 * --iterations: the READs of read_lat_qd1; one per page of --size by
 *	default.
 * --prefix: P goes before the name of every record and samples file
 *	("loop_" for a loop peer's figures: loop_fault_random).
 *
 * The benchmarks, in the order they run; each touch benchmark works on
 * a fresh mapping, so that every first touch is a remote fault:
 *   fault_seq, fault_random: one thread touches every page once, in
 *	order or shuffled, reading one word; each touch timed.
 *   fault_t1, fault_t2, fault_t4: 1, 2 or 4 threads touch disjoint
 *	slices of one shuffled order; also fault_tN_tput, the bytes over
 *	the wall time of the touching.
 *   read_lat_qd1: READs of one page at random offsets, each timed.
 *   read_qd1 ... read_qd64: READs of one iovec of D pages each through
 *	--size, for at least READ_MIN_NS and at least once through.
 *   read_scatter64: READs of 64 iovecs of one page each at random
 *	offsets, as long and as many pages as read_qd*.
 *   prefetch_touch: the clock starts, an asynchronous prefetch of the
 *	whole mapping (PREFETCH_DEPTH READs in flight) is issued and every
 *	page touched in order; prefetch_touch_tput ends at the last touch
 *	and adds the mapping's "faults" (with a READ of their own: 0 is
 *	expected) and "prefetch_hits".
 *   region_touch, huge_touch: the 2 MiB regions of the mapping in a
 *	random order, each timed as one sample: region_touch touches all
 *	512 pages of a region in order on a 4 KiB mapping (512 faults),
 *	huge_touch one word of it on a pagesize 2M one (RPAGE_MAP_HUGE:
 *	one fault that reads the region whole, one READ).
 *   huge_pull: a pagesize 2M mapping prefetched whole with
 *	RPAGE_PREFETCH_WAIT (what `rpagectl map pull ... wait` does), the
 *	time of that call: huge_pull_tput; then every region touched (no
 *	fault may read).
 *
 * Standard output carries one JSON record per line, as the baseline
 * program prints them, so that both go in one table:
 *   {"bench":"NAME","kind":"latency","samples":N,"min_ns":..,"p50_ns":..,
 *    "p90_ns":..,"p99_ns":..,"p999_ns":..,"max_ns":..}
 *   {"bench":"NAME","kind":"throughput","bytes":B,"seconds":S,
 *    "mib_per_s":X,"pages_per_s":Y}
 * Percentiles are the nearest-rank ones of the sorted samples.
 *
 * Checking every byte would take longer than fetching it, so the data
 * is checked on a sample, off the clock of every timed touch or READ:
 * the word each touch reads, and whole one page touched in VERIFY_EVERY
 * and one page of every VERIFY_EVERY-th READ (the read_qd* wall time
 * includes that, one page in VERIFY_EVERY * D at most). A touch
 * benchmark also checks the mapping's counters: no SIGBUS and, without
 * prefetch, one fault with its own READ per page. Exit status 0 when
 * every benchmark ran; 1 at the first failure, with one line on
 * standard error.
 *
 * Built on librpage alone:
 *   gcc -O2 -g -Wall -Wextra -Iinclude/uapi -Iulib \
 *       -o build/user/selftests/rpage-bench selftests/rpage-bench.c \
 *       build/user/librpage.a -pthread -lm
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* strerrorname_np() and dprintf() of rpage_tool.h */
#endif
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>

/* rpage_test.h's sigbus_jump() ignores two of its arguments. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "rpage_tool.h"
#pragma GCC diagnostic pop

#define NSEC_PER_SEC		1000000000ULL
#define DEFAULT_SIZE		(64ULL << 20)
/* Shuffles and random offsets repeat from run to run, so runs compare. */
#define BENCH_SEED		0x5EED0F0A11B0DEULL
/* Of the pages touched or read, one in this many is checked whole. */
#define VERIFY_EVERY		64
#define NO_CHECK		UINT64_MAX
/* A READ throughput run lasts this long at least, to average out noise. */
#define READ_MIN_NS		NSEC_PER_SEC
/* READs in flight for the prefetch of prefetch_touch. */
#define PREFETCH_DEPTH		64
/* A region of a pagesize 2M mapping (RPAGE_MAP_HUGE). */
#define REGION			RPAGE_MAP_HUGE_SIZE

/* The run: what the options asked for, and the peer's pool. */
struct ctx {
	const char *peer;
	uint64_t pool_id;
	uint64_t size, pages;		/* used of the pool, from its start */
	uint64_t iterations;		/* of read_lat_qd1 */
	const char *samples_dir;	/* NULL: no sample files */
	const char *prefix;		/* of every record's name */
	uint64_t selected;		/* bit i: benches[i] runs */
	int fd;
	__u32 peer_id;
};

/* A row of the table; the fields a benchmark does not use are 0. */
struct bench {
	const char *name;
	bool (*run)(const struct ctx *c, const struct bench *b);
	unsigned int threads;		/* touch: threads touching at once */
	bool shuffle;			/* touch: in a random order */
	bool tput;			/* touch: a NAME_tput record too */
	unsigned int depth;		/* pages in flight (READ, prefetch) */
	bool huge;			/* region: a pagesize 2M mapping */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, and random enough to pick pages. */
static uint64_t rng_next(uint64_t *state)
{
	*state += 0x9E3779B97F4A7C15ULL;
	return rpage_pattern_mix(*state);
}

/*
 * @n items of @size bytes, page aligned and zeroed: written now, so that
 * no page fault of our own lands inside a timed region later. NULL
 * (reported) without memory.
 */
static void *mem_alloc(uint64_t n, size_t size)
{
	void *mem = NULL;

	if (n > SIZE_MAX / size || posix_memalign(&mem, page, n * size)) {
		fail("%" PRIu64 " x %zu bytes: %s", n, size, strerror(ENOMEM));
		return NULL;
	}
	memset(mem, 0, n * size);
	return mem;
}

/* The page numbers 0 to @n - 1, in order or shuffled (Fisher-Yates). */
static uint64_t *page_order(uint64_t n, bool shuffle)
{
	uint64_t *order = mem_alloc(n, sizeof(*order));
	uint64_t state = BENCH_SEED;

	if (!order)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n - 1; shuffle && i > 0; i--) {
		uint64_t j = rng_next(&state) % (i + 1), tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
	return order;
}

/* Records */

static const struct {
	const char *key;
	unsigned int permille;
} percentiles[] = {
	{ "p50_ns", 500 }, { "p90_ns", 900 }, { "p99_ns", 990 }, { "p999_ns", 999 },
};

/*
 * The nearest-rank percentile of @n (> 0) sorted samples: the smallest
 * sample with at least @permille / 1000 of them at or below it. Integer
 * arithmetic, so that 99.9 is exactly 99.9.
 */
static uint64_t percentile(const uint64_t *sorted, uint64_t n,
			   unsigned int permille)
{
	uint64_t rank = (n * permille + 999) / 1000;

	return sorted[rank ? rank - 1 : 0];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* DIR/@name.txt: the @n samples, one a line; false (reported) on failure. */
static bool samples_write(const char *dir, const char *name,
			  const uint64_t *ns, uint64_t n)
{
	char path[PATH_MAX];
	bool bad;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s.txt", dir, name) >= (int)sizeof(path)) {
		fail("%s/%s.txt: %s", dir, name, strerror(ENAMETOOLONG));
		return false;
	}
	f = fopen(path, "w");
	if (!f) {
		fail("%s: %s", path, strerror(errno));
		return false;
	}
	errno = 0;
	for (uint64_t i = 0; i < n; i++)
		fprintf(f, "%" PRIu64 "\n", ns[i]);
	bad = ferror(f);
	if (fclose(f) || bad) {
		fail("%s: %s", path, strerror(errno ? errno : EIO));
		return false;
	}
	return true;
}

/*
 * The latency record @name of the @n (> 0) samples at @ns, which are
 * written to the samples file first (in the order taken) and then
 * sorted in place. false (reported) if the file cannot be written.
 */
static bool lat_report(const struct ctx *c, const char *name, uint64_t *ns,
		       uint64_t n)
{
	char full[128];

	snprintf(full, sizeof(full), "%s%s", c->prefix, name);
	if (c->samples_dir && !samples_write(c->samples_dir, full, ns, n))
		return false;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	printf("{\"bench\":\"%s\",\"kind\":\"latency\",\"samples\":%" PRIu64
	       ",\"min_ns\":%" PRIu64, full, n, ns[0]);
	for (size_t i = 0; i < ARRAY_LEN(percentiles); i++)
		printf(",\"%s\":%" PRIu64, percentiles[i].key,
		       percentile(ns, n, percentiles[i].permille));
	printf(",\"max_ns\":%" PRIu64 "}\n", ns[n - 1]);
	fflush(stdout);
	return true;
}

/*
 * The throughput record @name@suffix of @bytes in @wall_ns; @extra, more
 * fields (",\"key\":value..."), goes at its end.
 */
static void tput_report(const struct ctx *c, const char *name,
			const char *suffix, uint64_t bytes, uint64_t wall_ns,
			const char *extra)
{
	double s = (double)(wall_ns ? wall_ns : 1) / NSEC_PER_SEC;

	printf("{\"bench\":\"%s%s%s\",\"kind\":\"throughput\",\"bytes\":%" PRIu64
	       ",\"seconds\":%.6f,\"mib_per_s\":%.3f,\"pages_per_s\":%.1f%s}\n",
	       c->prefix, name, suffix, bytes, s, (double)bytes / (1 << 20) / s,
	       (double)bytes / (double)page / s, extra);
	fflush(stdout);
}

/* Checking data */

/*
 * The page at @p, which should hold the pool's page at byte @offset;
 * false (reported, for @name) if a word of it is not the pattern.
 */
static bool page_check(const struct ctx *c, const char *name, const void *p,
		       uint64_t offset)
{
	uint64_t at = rpage_pattern_check(p, page, c->pool_id, offset, 0);

	if (at == UINT64_MAX)
		return true;
	fail_mismatch(name, p, offset, at, c->pool_id, 0);
	return false;
}

/*
 * Which page of the @pages of the @k-th transfer to check whole: one
 * transfer in VERIFY_EVERY, a different page each time; NO_CHECK for
 * the others.
 */
static uint64_t check_pick(uint64_t k, uint64_t pages)
{
	return k % VERIFY_EVERY ? NO_CHECK : k / VERIFY_EVERY % pages;
}

/* Mappings */

/* A fresh remote mapping of the first --size bytes of the pool. */
struct mapping {
	struct rpage_map map;
	unsigned char *addr;
};

/*
 * What is mapped now, for the SIGBUS handler to name the page; set
 * before the touching threads start and cleared after they end.
 */
static const struct mapping *live_mapping;

/* @flags: RPAGE_MAP_*. */
static bool map_open(const struct ctx *c, struct mapping *m, __u32 flags)
{
	void *addr;
	int ret;

	m->map = (struct rpage_map) {
		.peer_id = c->peer_id, .pool_id = c->pool_id, .length = c->size,
		.flags = flags,
	};
	ret = rpage_map(c->fd, &m->map, &addr);
	if (ret < 0) {
		fail("map %" PRIu64 " bytes of pool %" PRIu64 " of %s: %s",
		     c->size, c->pool_id, c->peer, error_text(-ret));
		return false;
	}
	m->addr = addr;
	live_mapping = m;
	return true;
}

static bool map_close(const struct ctx *c, struct mapping *m)
{
	int ret;

	live_mapping = NULL;
	ret = rpage_unmap(c->fd, &m->map, m->addr);
	if (ret < 0) {
		fail("unmap mapping %llu: %s", (unsigned long long)m->map.map_id,
		     error_text(-ret));
		return false;
	}
	return true;
}

/*
 * The mapping's counters after a touch benchmark, into *@st: no fault
 * answered with SIGBUS and, unless a prefetch went first, one fault with
 * a READ of its own per page. false (reported) if not, or unreadable.
 */
static bool stats_check(const struct ctx *c, const struct bench *b,
			const struct mapping *m, struct rpage_fault_stats *st)
{
	struct rpage_map_stats arg = { .map_id = m->map.map_id };
	int ret = rpage_map_stats(c->fd, &arg);

	*st = arg.stats;
	if (ret < 0)
		fail("%s: stats of mapping %llu: %s", b->name,
		     (unsigned long long)arg.map_id, error_text(-ret));
	else if (st->sigbus)
		fail("%s: %llu faults answered with SIGBUS", b->name,
		     (unsigned long long)st->sigbus);
	else if (!b->depth && st->faults != c->pages)
		fail("%s: %llu faults for %" PRIu64 " pages touched", b->name,
		     (unsigned long long)st->faults, c->pages);
	else
		return true;
	return false;
}

/* One page in VERIFY_EVERY of the mapping, and its last, checked whole. */
static bool mapping_check(const struct ctx *c, const char *name,
			  const struct mapping *m)
{
	for (uint64_t i = 0; i < c->pages; i++) {
		if ((i % VERIFY_EVERY && i != c->pages - 1) ||
		    page_check(c, name, m->addr + i * page, i * page))
			continue;
		return false;
	}
	return true;
}

/* Touching */

/* One touching thread: its slice of the order, and what it found. */
struct toucher {
	pthread_t thread;
	pthread_rwlock_t *gate;
	const struct ctx *c;
	const unsigned char *addr;	/* the mapping */
	const uint64_t *order;		/* the pages to touch, in turn */
	uint64_t *ns;			/* the time of each touch */
	uint64_t count;
	uint64_t bad_page;		/* its word was wrong; UINT64_MAX: none */
};

/*
 * Touches the slice's pages, each by a read of its first word timed on
 * its own; the word is checked off the clock.
 */
static void touch_slice(struct toucher *w)
{
	for (uint64_t k = 0; k < w->count; k++) {
		uint64_t i = w->order[k], t0, word;

		t0 = now_ns();
		word = *(const volatile uint64_t *)(w->addr + i * page);
		w->ns[k] = now_ns() - t0;
		if (le64toh(word) != rpage_pattern(w->c->pool_id, i * page, 0))
			w->bad_page = i;
	}
}

static void *toucher_run(void *arg)
{
	struct toucher *w = arg;

	/* The starter holds the gate for writing until all may go. */
	pthread_rwlock_rdlock(w->gate);
	pthread_rwlock_unlock(w->gate);
	touch_slice(w);
	return NULL;
}

/* The threads of one touch benchmark, waiting at their gate. */
struct touchers {
	pthread_rwlock_t gate;
	struct toucher *w;
	unsigned int started;
};

/*
 * Starts @threads threads, each to touch one contiguous slice of the
 * pages of @order (their times to the same places of @ns) once the gate
 * opens. A read-write lock is the gate, rather than a barrier, because
 * it still opens if not every thread could start. false (reported) if
 * one could not; touchers_finish() must follow either way.
 */
static bool touchers_start(struct touchers *t, const struct ctx *c,
			   const struct mapping *m, unsigned int threads,
			   const uint64_t *order, uint64_t *ns)
{
	int ret = 0;

	t->started = 0;
	pthread_rwlock_init(&t->gate, NULL);
	pthread_rwlock_wrlock(&t->gate);
	t->w = calloc(threads, sizeof(*t->w));
	if (!t->w) {
		fail("%u threads: %s", threads, strerror(ENOMEM));
		return false;
	}
	for (; t->started < threads && !ret; t->started++) {
		struct toucher *w = &t->w[t->started];
		uint64_t from = c->pages * t->started / threads;

		*w = (struct toucher) {
			.gate = &t->gate, .c = c, .addr = m->addr,
			.order = order + from, .ns = ns + from,
			.count = c->pages * (t->started + 1) / threads - from,
			.bad_page = UINT64_MAX,
		};
		ret = pthread_create(&w->thread, NULL, toucher_run, w);
	}
	if (!ret)
		return true;
	t->started--;
	fail("thread %u: %s", t->started, strerror(ret));
	return false;
}

/*
 * Opens the gate and waits for the threads; false (reported, for
 * @name) if a word a thread read was not the pattern.
 */
static bool touchers_finish(struct touchers *t, const struct ctx *c,
			    const struct mapping *m, const char *name)
{
	uint64_t bad = UINT64_MAX;

	pthread_rwlock_unlock(&t->gate);
	for (unsigned int i = 0; i < t->started; i++) {
		pthread_join(t->w[i].thread, NULL);
		if (t->w[i].bad_page < bad)
			bad = t->w[i].bad_page;
	}
	free(t->w);
	pthread_rwlock_destroy(&t->gate);
	if (bad == UINT64_MAX)
		return true;
	/* The whole page names the word; the line below, if it is right now. */
	if (page_check(c, name, m->addr + bad * page, bad * page))
		fail("%s: the first word of pool offset %" PRIu64
		     " was wrong when first touched", name, bad * page);
	return false;
}

/* prefetch_touch's head start: the whole mapping, in the background. */
static bool prefetch_all(const struct ctx *c, const struct bench *b,
			 const struct mapping *m)
{
	struct rpage_prefetch pf = {
		.map_id = m->map.map_id, .depth = b->depth, .length = c->size,
	};
	int ret = rpage_map_prefetch(c->fd, &pf);

	if (ret < 0) {
		fail("%s: prefetch %" PRIu64 " bytes: %s", b->name, c->size,
		     error_text(-ret));
		return false;
	}
	return true;
}

/*
 * Touches every page of a fresh mapping (the fault_* benchmarks and
 * prefetch_touch). The clock of the throughput record runs from just
 * before the prefetch, if any, while the threads wait at the gate, to
 * the last of them ending.
 */
static bool touch_run(const struct ctx *c, const struct bench *b,
		      const struct mapping *m, const uint64_t *order,
		      uint64_t *ns, uint64_t *wall_ns,
		      struct rpage_fault_stats *st)
{
	struct touchers t;
	uint64_t t0;
	bool ok;

	ok = touchers_start(&t, c, m, b->threads, order, ns);
	t0 = now_ns();
	if (ok && b->depth)
		ok = prefetch_all(c, b, m);
	ok = touchers_finish(&t, c, m, b->name) && ok;
	*wall_ns = now_ns() - t0;
	return ok && stats_check(c, b, m, st) &&
	       mapping_check(c, b->name, m);
}

static bool bench_touch(const struct ctx *c, const struct bench *b)
{
	uint64_t *order = page_order(c->pages, b->shuffle);
	uint64_t *ns = mem_alloc(c->pages, sizeof(*ns));
	struct rpage_fault_stats st;
	char extra[96] = "";
	struct mapping m;
	uint64_t wall;
	bool ok = false;

	if (!order || !ns || !map_open(c, &m, 0))
		goto out;
	ok = touch_run(c, b, &m, order, ns, &wall, &st);
	ok = map_close(c, &m) && ok;
	if (!ok || !lat_report(c, b->name, ns, c->pages)) {
		ok = false;
		goto out;
	}
	if (b->depth)
		snprintf(extra, sizeof(extra), ",\"faults\":%llu,\"prefetch_hits\":%llu",
			 (unsigned long long)st.faults,
			 (unsigned long long)st.prefetch_hits);
	if (b->tput)
		tput_report(c, b->name, "_tput", c->size, wall, extra);
out:
	free(ns);
	free(order);
	return ok;
}

/* 2 MiB regions */

/*
 * The mapping's counters after a region benchmark: no SIGBUS, and every
 * region read by one fault of its own (huge_touch), by 512 (region_touch)
 * or by the pull (huge_pull, no fault reading). false (reported) if not.
 */
static bool region_stats_check(const struct ctx *c, const struct bench *b,
			       const struct mapping *m, uint64_t regions)
{
	struct rpage_map_stats arg = { .map_id = m->map.map_id };
	const struct rpage_fault_stats *st = &arg.stats;
	uint64_t faults = b->depth ? 0 : b->huge ? regions : c->pages;
	int ret = rpage_map_stats(c->fd, &arg);

	if (ret < 0)
		fail("%s: stats of mapping %llu: %s", b->name,
		     (unsigned long long)arg.map_id, error_text(-ret));
	else if (st->sigbus || st->faults != faults || st->huge_fallbacks ||
		 (b->huge && st->huge_faults + st->huge_prefetched != regions))
		fail("%s: %llu faults (%llu of 2 MiB), %llu regions prefetched, "
		     "%llu fallbacks, %llu SIGBUS for %" PRIu64 " regions", b->name,
		     (unsigned long long)st->faults,
		     (unsigned long long)st->huge_faults,
		     (unsigned long long)st->huge_prefetched,
		     (unsigned long long)st->huge_fallbacks,
		     (unsigned long long)st->sigbus, regions);
	else
		return true;
	return false;
}

/*
 * region_touch, huge_touch, huge_pull: see the top of the file. Every
 * word a touch reads is checked, and one page in VERIFY_EVERY whole, off
 * the clock.
 */
static bool bench_region(const struct ctx *c, const struct bench *b)
{
	uint64_t regions = c->size / REGION, per = REGION / page, wall = 0;
	uint64_t *order = NULL, *ns = NULL;
	struct mapping m;
	bool ok = false;

	if (!regions) {
		fail("%s: --size %" PRIu64 " holds no 2 MiB region", b->name, c->size);
		return false;
	}
	order = page_order(regions, true);
	ns = mem_alloc(regions, sizeof(*ns));
	if (!order || !ns || !map_open(c, &m, b->huge ? RPAGE_MAP_HUGE : 0))
		goto out;
	ok = !b->huge || !((uintptr_t)m.addr % REGION);
	if (!ok)
		fail("%s: the mapping is at %p, not 2 MiB aligned", b->name,
		     (void *)m.addr);
	if (ok && b->depth) {
		struct rpage_prefetch pf = {
			.map_id = m.map.map_id, .flags = RPAGE_PREFETCH_WAIT,
			.depth = b->depth, .length = c->size,
		};
		uint64_t t0 = now_ns();
		int ret = rpage_map_prefetch(c->fd, &pf);

		wall = now_ns() - t0;
		ok = ret >= 0 && !pf.failed;
		if (!ok)
			fail("%s: prefetch %" PRIu64 " bytes: %s, %llu pages failed",
			     b->name, c->size, ret < 0 ? error_text(-ret) : "done",
			     (unsigned long long)pf.failed);
	}
	for (uint64_t k = 0; ok && k < regions; k++) {
		const unsigned char *r = m.addr + order[k] * REGION;
		uint64_t t0 = now_ns(), word = 0;

		for (uint64_t i = 0; i < (b->huge ? 1 : per); i++)
			word = *(const volatile uint64_t *)(r + i * page);
		ns[k] = now_ns() - t0;
		if (le64toh(word) != rpage_pattern(c->pool_id, order[k] * REGION +
						   (b->huge ? 0 : REGION - page), 0)) {
			fail("%s: the word of region %" PRIu64 " was wrong", b->name,
			     order[k]);
			ok = false;
		}
	}
	ok = ok && region_stats_check(c, b, &m, regions) &&
	     mapping_check(c, b->name, &m);
	ok = map_close(c, &m) && ok;
	if (ok && b->depth)
		tput_report(c, b->name, "_tput", regions * REGION, wall, "");
	else if (ok)
		ok = lat_report(c, b->name, ns, regions);
out:
	free(ns);
	free(order);
	return ok;
}

/* Reading */

/*
 * One RPAGE_IOC_READ of @len bytes of the pool from @offset into @buf,
 * its time to *@ns; page @check of it (unless NO_CHECK) is poisoned
 * before and checked after, off the clock. false (reported) on failure.
 */
static bool read_timed(const struct ctx *c, const char *name, uint64_t offset,
		       unsigned char *buf, uint64_t len, uint64_t check,
		       uint64_t *ns)
{
	uint64_t t0;
	int ret;

	/* So that a READ that wrote nothing cannot pass for one that did. */
	if (check != NO_CHECK)
		memset(buf + check * page, 0xa5, page);
	t0 = now_ns();
	ret = io1(c->fd, false, c->peer_id, c->pool_id, offset, len, buf);
	*ns = now_ns() - t0;
	if (ret < 0) {
		fail("%s: read %" PRIu64 " bytes at pool offset %" PRIu64 ": %s",
		     name, len, offset, error_text(-ret));
		return false;
	}
	return check == NO_CHECK ||
	       page_check(c, name, buf + check * page, offset + check * page);
}

/* read_lat_qd1: one page a READ, at random offsets, each timed. */
static bool bench_read_lat(const struct ctx *c, const struct bench *b)
{
	uint64_t *ns = mem_alloc(c->iterations, sizeof(*ns));
	unsigned char *buf = mem_alloc(1, page);
	uint64_t state = BENCH_SEED;
	bool ok = ns && buf;

	for (uint64_t k = 0; ok && k < c->iterations; k++) {
		uint64_t offset = rng_next(&state) % c->pages * page;

		ok = read_timed(c, b->name, offset, buf, page, check_pick(k, 1),
				&ns[k]);
	}
	ok = ok && lat_report(c, b->name, ns, c->iterations);
	free(buf);
	free(ns);
	return ok;
}

/*
 * read_qdD: READs of one iovec of D pages each, through --size and
 * around again, until both READ_MIN_NS have passed and --size has been
 * read once. The last READ of a pass is shorter if D pages do not
 * divide --size.
 */
static bool bench_read_tput(const struct ctx *c, const struct bench *b)
{
	const uint64_t chunk = (uint64_t)b->depth * page;
	unsigned char *buf = mem_alloc(b->depth, page);
	uint64_t done = 0, offset = 0, wall = 0, t0, ns;
	bool ok = buf;

	t0 = now_ns();
	for (uint64_t k = 0; ok && (done < c->size || wall < READ_MIN_NS); k++) {
		uint64_t len = c->size - offset < chunk ? c->size - offset : chunk;

		ok = read_timed(c, b->name, offset, buf, len,
				check_pick(k, len / page), &ns);
		done += len;
		offset = (offset + len) % c->size;
		wall = now_ns() - t0;
	}
	if (ok)
		tput_report(c, b->name, "", done, wall, "");
	free(buf);
	return ok;
}

/*
 * read_scatterD: READs of D iovecs of one page each, at random offsets
 * of --size, for at least READ_MIN_NS and as many pages as --size holds:
 * what a VMM pulling a list of scattered pages issues, and the same size
 * of READ as ib_read_bw -s 4096.
 */
static bool bench_read_scatter(const struct ctx *c, const struct bench *b)
{
	struct rpage_iovec *iov = mem_alloc(b->depth, sizeof(*iov));
	unsigned char *buf = mem_alloc(b->depth, page);
	struct rpage_io io = { .iov = (uintptr_t)iov, .nr_iov = b->depth };
	uint64_t done = 0, wall = 0, state = BENCH_SEED, t0;
	bool ok = iov && buf;

	t0 = now_ns();
	for (uint64_t k = 0; ok && (done < c->size || wall < READ_MIN_NS); k++) {
		uint64_t check = check_pick(k, b->depth);
		int ret;

		for (unsigned int i = 0; i < b->depth; i++)
			iov[i] = (struct rpage_iovec) {
				.peer_id = c->peer_id, .pool_id = c->pool_id,
				.offset = rng_next(&state) % c->pages * page,
				.length = page, .addr = (uintptr_t)(buf + i * page),
			};
		if (check != NO_CHECK)
			memset(buf + check * page, 0xa5, page);
		ret = rpage_read(c->fd, &io);
		if (ret < 0) {
			fail("%s: read of %u scattered pages: %s", b->name,
			     b->depth, error_text(-ret));
			ok = false;
			break;
		}
		ok = check == NO_CHECK ||
		     page_check(c, b->name, buf + check * page, iov[check].offset);
		done += (uint64_t)b->depth * page;
		wall = now_ns() - t0;
	}
	if (ok)
		tput_report(c, b->name, "", done, wall, "");
	free(buf);
	free(iov);
	return ok;
}

/* READ throughput at @d pages in flight. */
#define READ_QD(d)	{ .name = "read_qd" #d, .run = bench_read_tput, .depth = d }

static const struct bench benches[] = {
	{ .name = "fault_seq", .run = bench_touch, .threads = 1 },
	{ .name = "fault_random", .run = bench_touch, .threads = 1, .shuffle = true },
	{ .name = "fault_t1", .run = bench_touch, .threads = 1, .shuffle = true,
	  .tput = true },
	{ .name = "fault_t2", .run = bench_touch, .threads = 2, .shuffle = true,
	  .tput = true },
	{ .name = "fault_t4", .run = bench_touch, .threads = 4, .shuffle = true,
	  .tput = true },
	{ .name = "read_lat_qd1", .run = bench_read_lat },
	READ_QD(1), READ_QD(2), READ_QD(4), READ_QD(8), READ_QD(16), READ_QD(32),
	READ_QD(64),
	{ .name = "read_scatter64", .run = bench_read_scatter, .depth = 64 },
	{ .name = "prefetch_touch", .run = bench_touch, .threads = 1, .tput = true,
	  .depth = PREFETCH_DEPTH },
	{ .name = "region_touch", .run = bench_region },
	{ .name = "huge_touch", .run = bench_region, .huge = true },
	{ .name = "huge_pull", .run = bench_region, .huge = true,
	  .depth = RPAGE_PREFETCH_DEPTH_DEFAULT },
};

_Static_assert(ARRAY_LEN(benches) <= 64, "struct ctx.selected is 64 bits");

/* Options */

static int usage(void)
{
	fail("usage: rpage-bench PEER POOL [--size BYTES] [--samples-dir DIR] "
	     "[--only NAME[,NAME...]] [--iterations N] [--prefix P]");
	return 1;
}

/*
 * The benchmarks the @len bytes at @token select: the one of that name,
 * or else every one whose name starts with them.
 */
static uint64_t only_mask(const char *token, size_t len)
{
	uint64_t mask = 0;

	for (size_t i = 0; i < ARRAY_LEN(benches); i++) {
		if (strncmp(benches[i].name, token, len))
			continue;
		if (!benches[i].name[len])
			return 1ULL << i;
		mask |= 1ULL << i;
	}
	return mask;
}

/* --only NAME[,NAME...]; false (reported) for a NAME that selects none. */
static bool parse_only(const char *list, uint64_t *selected)
{
	*selected = 0;
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		uint64_t mask = len ? only_mask(p, len) : 0;

		if (!mask) {
			fail("--only: no benchmark is called, or starts with, '%.*s'",
			     (int)len, p);
			return false;
		}
		*selected |= mask;
		p += len;
		if (!*p)
			return true;
	}
}

/* Creates --samples-dir unless it is there, before anything is measured. */
static bool samples_dir_ready(const char *dir)
{
	struct stat sb;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fail("%s: %s", dir, strerror(errno));
		return false;
	}
	if (stat(dir, &sb)) {
		fail("%s: %s", dir, strerror(errno));
		return false;
	}
	if (!S_ISDIR(sb.st_mode)) {
		fail("%s: %s", dir, strerror(ENOTDIR));
		return false;
	}
	return true;
}

/* One option with its value into @c; false (reported) for a bad one. */
static bool set_option(struct ctx *c, const char *opt, const char *val)
{
	if (!strcmp(opt, "--size"))
		return get_bytes("size", val, false, &c->size);
	if (!strcmp(opt, "--only"))
		return parse_only(val, &c->selected);
	if (!strcmp(opt, "--samples-dir")) {
		c->samples_dir = val;
		return true;
	}
	if (!strcmp(opt, "--prefix")) {
		/* It names files in --samples-dir too. */
		if (strlen(val) < 64 && !strchr(val, '/')) {
			c->prefix = val;
			return true;
		}
		fail("--prefix '%s': at most 63 characters, no '/'", val);
		return false;
	}
	if (!strcmp(opt, "--iterations")) {
		if (!get_number("iterations", val, &c->iterations))
			return false;
		if (c->iterations)
			return true;
		fail("iterations must be at least 1");
		return false;
	}
	usage();
	return false;
}

static bool parse_args(int argc, char **argv, struct ctx *c)
{
	const char *pos[2];
	int npos = 0;

	*c = (struct ctx) {
		.size = DEFAULT_SIZE, .fd = -1, .prefix = "",
		.selected = ~0ULL >> (64 - ARRAY_LEN(benches)),
	};
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-' && npos < 2) {
			pos[npos++] = argv[i];
			continue;
		}
		/* A positional too many, or an option without its value. */
		if (argv[i][0] != '-' || i + 1 == argc) {
			npos = -1;
			break;
		}
		if (!set_option(c, argv[i], argv[i + 1]))
			return false;
		i++;
	}
	if (npos != 2) {
		usage();
		return false;
	}
	c->peer = pos[0];
	if (!get_number("pool id", pos[1], &c->pool_id))
		return false;
	if (c->size > RPAGE_MAP_MAX_BYTES || c->size > SIZE_MAX) {
		fail("size %" PRIu64 " is too large", c->size);
		return false;
	}
	c->pages = c->size / page;
	if (!c->iterations)
		c->iterations = c->pages;
	return !c->samples_dir || samples_dir_ready(c->samples_dir);
}

/* Setup */

/*
 * Opens /dev/rpage, waits for the peer to be connected and the pool to
 * be announced, and checks that --size fits in the pool. false
 * (reported) otherwise.
 */
static bool pool_connect(struct ctx *c)
{
	struct rpage_remote_pool_info info;
	int ret;

	c->fd = open_rpage();
	if (c->fd < 0)
		return false;
	ret = wait_peer_connected(c->fd, c->peer, &c->peer_id);
	if (ret < 0) {
		fail("peer %s: %s", c->peer,
		     ret == -ENOENT ? "no such peer" : error_text(-ret));
		return false;
	}
	ret = wait_remote_pool(c->fd, c->peer_id, c->pool_id, true, &info);
	if (ret < 0) {
		fail("pool %" PRIu64 " of %s: %s", c->pool_id, c->peer,
		     ret == -ETIMEDOUT ? "not announced" : error_text(-ret));
		return false;
	}
	if (c->size > info.length) {
		fail("size %" PRIu64 " is beyond the %llu bytes of pool %" PRIu64,
		     c->size, (unsigned long long)info.length, c->pool_id);
		return false;
	}
	return true;
}

/* A SIGBUS is a remote fault that failed: one line, and the run fails. */
static void sigbus_exit(int sig, siginfo_t *si, void *uctx)
{
	const struct mapping *m = live_mapping;
	uintptr_t off = (uintptr_t)si->si_addr - (m ? (uintptr_t)m->addr : 0);
	char msg[128];
	int len;

	(void)sig;
	(void)uctx;
	if (m && off < m->map.length)
		len = snprintf(msg, sizeof(msg), "%s: SIGBUS at pool offset %" PRIuPTR "\n",
			       tool_name, off);
	else
		len = snprintf(msg, sizeof(msg), "%s: SIGBUS at %p\n", tool_name,
			       si->si_addr);
	if (len > 0 && write(STDERR_FILENO, msg, (size_t)len) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	struct ctx c;

	tool_init("rpage-bench");
	if (!parse_args(argc, argv, &c) || !pool_connect(&c))
		return 1;
	on_sigbus(sigbus_exit);
	for (size_t i = 0; i < ARRAY_LEN(benches); i++) {
		if ((c.selected >> i & 1) && !benches[i].run(&c, &benches[i]))
			return 1;
	}
	close(c.fd);
	return 0;
}
