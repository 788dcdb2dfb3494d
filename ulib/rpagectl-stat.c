// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: the `stat` object: the counters and latency histograms of
 * reads and writes, by peer and by RDMA device, and of the page faults
 * of remote mappings, by peer and by named mapping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

static void stat_usage(void)
{
	puts("Usage: rpagectl stat [ show ] [ peer [ NAME ] | device [ NAME ] | map [ NAME ] ]\n"
	     "       rpagectl stat prometheus\n"
	     "NAME := a peer's name (rpagectl peer show), an RDMA device's\n"
	     "        (rpagectl device show) or a named mapping's (rpagectl map show);\n"
	     "        peers and devices when none is given;\n"
	     "prometheus: every counter, in Prometheus' text format");
}

/* The percentiles of the latency histogram `stat show` reports. */
static const struct {
	double pct;
	const char *text;	/* in the text output */
	const char *key;	/* in the JSON output */
} stat_percentiles[] = {
	{ 50, "p50", "p50_ns" },
	{ 90, "p90", "p90_ns" },
	{ 99, "p99", "p99_ns" },
	{ 99.9, "p99.9", "p999_ns" },
};

#define NR_STAT_PERCENTILES (sizeof(stat_percentiles) / sizeof(stat_percentiles[0]))

/*
 * Nanoseconds in the largest unit (ns, us, ms or s) that keeps the value
 * at 1 or more once rounded to 3 significant digits: "65.5us", "131us",
 * "2ns". Seconds beyond 999 are printed whole.
 */
static void format_ns(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	size_t u = 0;
	double val;

	while (u + 1 < sizeof(units) / sizeof(units[0]) &&
	       (double)ns >= 999.5 * units[u].scale)
		u++;
	val = (double)ns / units[u].scale;
	if (val >= 999.5)
		snprintf(buf, len, "%.0f%s", val, units[u].unit);
	else
		snprintf(buf, len, "%.3g%s", val, units[u].unit);
}

/* A counter of a stats struct: its name in the output, and where it is. */
struct stat_counter {
	const char *name;
	size_t offset;
};

#define STAT_COUNTER(type, field) { #field, offsetof(type, field) }

/*
 * The __u64 counters @counters[@count] of @st: " name value" each in
 * the text output, or members of the open JSON object.
 */
static void counters_print(struct json_writer *jw, const void *st,
			   const struct stat_counter *counters, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		__u64 val;

		memcpy(&val, (const char *)st + counters[i].offset, sizeof(val));
		if (jw)
			json_uint(jw, counters[i].name, val);
		else
			printf(" %s %" PRIu64, counters[i].name, (uint64_t)val);
	}
}

/*
 * A latency histogram (RPAGE_HIST_BUCKETS log2 buckets of ns): in the
 * text output " latency p50 ... p99.9 ... samples N" ("latency none" when
 * it is empty), in JSON the member "latency", an object with the
 * percentiles, the sample count and the non-empty buckets.
 */
static void latency_print(struct json_writer *jw, const __u64 *hist)
{
	__u64 ns[NR_STAT_PERCENTILES];
	uint64_t samples = 0;
	bool empty = false;
	char text[32];

	for (unsigned int b = 0; b < RPAGE_HIST_BUCKETS; b++)
		samples += hist[b];
	for (size_t i = 0; i < NR_STAT_PERCENTILES; i++)
		if (rpage_hist_percentile(hist, RPAGE_HIST_BUCKETS,
					  stat_percentiles[i].pct, &ns[i]) < 0)
			empty = true;	/* -ENODATA: nothing was counted */

	if (!jw) {
		printf(" latency");
		if (empty)
			printf(" none");
		for (size_t i = 0; !empty && i < NR_STAT_PERCENTILES; i++) {
			format_ns(ns[i], text, sizeof(text));
			printf(" %s %s", stat_percentiles[i].text, text);
		}
		printf(" samples %" PRIu64, samples);
		return;
	}
	json_open_object(jw, "latency");
	for (size_t i = 0; i < NR_STAT_PERCENTILES; i++) {
		if (empty)
			json_null(jw, stat_percentiles[i].key);
		else
			json_uint(jw, stat_percentiles[i].key, ns[i]);
	}
	json_uint(jw, "samples", samples);
	/* Bucket i holds [2^i, 2^(i+1)) ns; the last one has no bound. */
	json_open_array(jw, "histogram");
	for (unsigned int b = 0; b < RPAGE_HIST_BUCKETS; b++) {
		if (!hist[b])
			continue;
		json_open_object(jw, NULL);
		if (b + 1 < RPAGE_HIST_BUCKETS)
			json_uint(jw, "le_ns", 1ULL << (b + 1));
		else
			json_null(jw, "le_ns");
		json_uint(jw, "count", hist[b]);
		json_close_object(jw);
	}
	json_close_array(jw);
	json_close_object(jw);
}

/*
 * The counters of a peer or device: the rest of its text line after its
 * name and id, or the members of its JSON object.
 */
static void stats_print(struct json_writer *jw, const struct rpage_stats *st)
{
	static const struct stat_counter counters[] = {
		STAT_COUNTER(struct rpage_stats, reads),
		STAT_COUNTER(struct rpage_stats, writes),
		STAT_COUNTER(struct rpage_stats, read_bytes),
		STAT_COUNTER(struct rpage_stats, write_bytes),
		STAT_COUNTER(struct rpage_stats, errors),
		STAT_COUNTER(struct rpage_stats, connects),
		STAT_COUNTER(struct rpage_stats, rejects),
	};

	counters_print(jw, st, counters, sizeof(counters) / sizeof(counters[0]));
	latency_print(jw, st->latency);
	if (!jw)
		putchar('\n');
}

/*
 * A peer's fault-path counters: an indented text line of its own after
 * the peer's, starting with "fault", or the JSON object "fault".
 */
static void fault_stats_print(struct json_writer *jw,
			      const struct rpage_fault_stats *st)
{
	static const struct stat_counter counters[] = {
		STAT_COUNTER(struct rpage_fault_stats, faults),
		STAT_COUNTER(struct rpage_fault_stats, minor_faults),
		STAT_COUNTER(struct rpage_fault_stats, waits),
		STAT_COUNTER(struct rpage_fault_stats, prefetched),
		STAT_COUNTER(struct rpage_fault_stats, prefetch_hits),
		STAT_COUNTER(struct rpage_fault_stats, evicted),
		STAT_COUNTER(struct rpage_fault_stats, written),
		STAT_COUNTER(struct rpage_fault_stats, sigbus),
		STAT_COUNTER(struct rpage_fault_stats, vma_locked),
		STAT_COUNTER(struct rpage_fault_stats, mmap_locked),
		STAT_COUNTER(struct rpage_fault_stats, refetched),
		STAT_COUNTER(struct rpage_fault_stats, huge_faults),
		STAT_COUNTER(struct rpage_fault_stats, huge_fallbacks),
		STAT_COUNTER(struct rpage_fault_stats, huge_prefetched),
	};

	if (jw)
		json_open_object(jw, "fault");
	else
		printf("    fault");
	counters_print(jw, st, counters, sizeof(counters) / sizeof(counters[0]));
	latency_print(jw, st->latency);
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

/*
 * A 2 MiB mapping's 4 KiB reads by cause (RPAGE_IOC_MAP_HUGE_STATS): an
 * indented text line of its own, "fallbacks tail N ...", or the JSON
 * object "fallbacks"; a cause this rpagectl has no name for is left out.
 */
static void huge_fallbacks_print(struct json_writer *jw,
				 const struct rpage_map_huge_stats *st)
{
	if (jw)
		json_open_object(jw, "fallbacks");
	else
		printf("    fallbacks");
	for (__u32 c = 0; c < RPAGE_HUGE_FB_MAX; c++) {
		const char *name = rpage_huge_fallback_name(c);

		if (name)
			print_u64(jw, name, name, st->fallbacks[c]);
	}
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

/* @fault: the peer's fault-path counters, or NULL to leave them out. */
static void peer_stats_print(struct json_writer *jw,
			     const struct rpage_peer_stats *ps,
			     const struct rpage_peer_fault_stats *fault)
{
	if (!jw) {
		printf("peer %s id %u", ps->name, ps->peer_id);
		stats_print(NULL, &ps->stats);
		if (fault)
			fault_stats_print(NULL, &fault->stats);
		return;
	}
	json_open_object(jw, NULL);
	json_string(jw, "name", ps->name);
	json_uint(jw, "id", ps->peer_id);
	stats_print(jw, &ps->stats);
	if (fault)
		fault_stats_print(jw, &fault->stats);
	json_close_object(jw);
}

static void device_stats_print(struct json_writer *jw,
			       const struct rpage_device_stats *ds)
{
	if (!jw) {
		printf("device %s index %u", ds->name, ds->index);
		stats_print(NULL, &ds->stats);
		return;
	}
	json_open_object(jw, NULL);
	json_string(jw, "name", ds->name);
	json_uint(jw, "index", ds->index);
	stats_print(jw, &ds->stats);
	json_close_object(jw);
}

enum { STAT_SHOW, STAT_PEER, STAT_DEVICE, STAT_MAP, STAT_PROM, STAT_HELP };

static const char *const stat_words[] = {
	[STAT_SHOW] = "show", [STAT_PEER] = "peer", [STAT_DEVICE] = "device",
	[STAT_MAP] = "map", [STAT_PROM] = "prometheus", [STAT_HELP] = "help",
	NULL,
};

/*
 * stat [ show ] map [ NAME ]: the fault-path counters of each named
 * mapping (a VM's guest RAM), or of the one called @name: a line with
 * its name, id and peer, then its "fault" line, as a peer's, and for a
 * pagesize 2M one its "fallbacks" line (not from a module without
 * RPAGE_IOC_MAP_HUGE_STATS).
 */
static int stat_maps(int fd, const char *name)
{
	struct rpage_map_huge_stats *hsts = NULL;
	struct rpage_map_stats *sts = NULL;
	struct rpage_map_info *maps;
	struct json_writer jw;
	bool found = false;
	void *buf = NULL;
	int count, ret = 0;

	count = rpage_list_all(fd, rpage_map_list, sizeof(*maps), &buf);
	maps = buf;
	if (count < 0)
		return fail_cmd("stat map", name, -count, NULL);
	if (count) {
		sts = calloc((size_t)count, sizeof(*sts));
		hsts = calloc((size_t)count, sizeof(*hsts));
	}
	if (count && (!sts || !hsts)) {
		free(maps);
		free(sts);
		free(hsts);
		return fail_cmd("stat map", name, ENOMEM, NULL);
	}
	/* Every counter is read before anything is printed. */
	for (int i = 0; i < count; i++) {
		struct rpage_map_info *m = &maps[i];

		m->name[sizeof(m->name) - 1] = '\0';
		m->peer[sizeof(m->peer) - 1] = '\0';
		if (name && strcmp(m->name, name))
			continue;
		sts[i].map_id = m->map_id;
		ret = rpage_map_stats(fd, &sts[i]);
		if (!ret && (m->flags & RPAGE_MAP_HUGE)) {
			hsts[i].map_id = m->map_id;
			ret = rpage_map_huge_stats(fd, &hsts[i]);
			/* An older module: the line is left out. */
			if (ret == -ENOTTY) {
				hsts[i].map_id = 0;
				ret = 0;
			}
		}
		if (!ret) {
			found = true;
			continue;
		}
		/* Deleted since the list was read: it has no counters left. */
		sts[i].map_id = 0;
		if (ret != -ENOENT) {
			fail_cmd("stat map", m->name, -ret, NULL);
			goto out;
		}
	}
	ret = 0;
	if (name && !found) {
		fail("stat map: no named mapping %s", name);
		ret = 1;
		goto out;
	}

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_object(&jw, NULL);
		json_open_array(&jw, "maps");
	}
	for (int i = 0; i < count; i++) {
		const struct rpage_map_info *m = &maps[i];

		if (!sts[i].map_id)
			continue;
		if (!opt_json) {
			printf("map %s id %" PRIu64 " peer %s\n", m->name,
			       (uint64_t)m->map_id, m->peer[0] ? m->peer : "(deleted)");
			fault_stats_print(NULL, &sts[i].stats);
			if (hsts[i].map_id)
				huge_fallbacks_print(NULL, &hsts[i]);
			continue;
		}
		json_open_object(&jw, NULL);
		json_string(&jw, "name", m->name);
		json_uint(&jw, "id", m->map_id);
		if (m->peer[0])
			json_string(&jw, "peer", m->peer);
		else
			json_null(&jw, "peer");
		fault_stats_print(&jw, &sts[i].stats);
		if (hsts[i].map_id)
			huge_fallbacks_print(&jw, &hsts[i]);
		json_close_object(&jw);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_close_object(&jw);
		json_finish(&jw);
	}
out:
	free(maps);
	free(sts);
	free(hsts);
	return ret ? 1 : 0;
}

/* fetch_stats() reads the names of these lists' entries from their start. */
_Static_assert(offsetof(struct rpage_peer_stats, name) == 0 &&
	       offsetof(struct rpage_device_stats, name) == 0 &&
	       offsetof(struct rpage_peer_fault_stats, name) == 0,
	       "stats entries start with their name");

/*
 * Reads a whole stats list, of @size-byte entries that start with a
 * char name[RPAGE_NAME_MAX], into a new array, NUL-terminates the
 * names, and sets *@found if one is @name (when @name is not NULL).
 * Returns the number of entries, or a negative errno once reported.
 */
static int fetch_stats(int fd, int (*list_fn)(int, struct rpage_list *),
		       size_t size, const char *name, bool *found,
		       void **entries)
{
	int count;

	*entries = NULL;
	count = rpage_list_all(fd, list_fn, size, entries);
	if (count < 0) {
		fail_cmd("stat show", NULL, -count, NULL);
		return count;
	}
	for (int i = 0; i < count; i++) {
		char *entry_name = (char *)*entries + (size_t)i * size;

		entry_name[RPAGE_NAME_MAX - 1] = '\0';
		*found |= name && !strcmp(entry_name, name);
	}
	return count;
}

/* The fault-path counters of the peer @peer_id among @faults, or NULL. */
static const struct rpage_peer_fault_stats *
find_fault_stats(const struct rpage_peer_fault_stats *faults, int count,
		 __u32 peer_id)
{
	for (int i = 0; i < count; i++)
		if (faults[i].peer_id == peer_id)
			return &faults[i];
	return NULL;
}

/*
 * stat [ show ] [ peer [ NAME ] | device [ NAME ] ]: @which is STAT_PEER,
 * STAT_DEVICE or STAT_SHOW (both); @faults: the module has
 * RPAGE_IOC_PEER_FAULT_STATS, so each peer's fault-path counters are
 * shown too. The lists are read before anything is printed, so that a
 * failure prints one line and nothing else.
 */
static int stat_show(int fd, int which, const char *name, bool faults)
{
	struct rpage_peer_fault_stats *peer_faults = NULL;
	struct rpage_device_stats *devs = NULL;
	struct rpage_peer_stats *peers = NULL;
	int npeers = 0, ndevs = 0, nfaults = 0, status = 1;
	struct json_writer jw;
	bool found = false;
	void *buf;

	if (which != STAT_DEVICE) {
		npeers = fetch_stats(fd, rpage_peer_stats, sizeof(*peers), name,
				     &found, &buf);
		peers = buf;
		if (npeers < 0)
			goto out;
	}
	if (which != STAT_DEVICE && faults) {
		/* Peers are matched by id: a name may be reused in between. */
		nfaults = fetch_stats(fd, rpage_peer_fault_stats,
				      sizeof(*peer_faults), NULL, &found, &buf);
		peer_faults = buf;
		if (nfaults < 0)
			goto out;
	}
	if (which != STAT_PEER) {
		ndevs = fetch_stats(fd, rpage_device_stats, sizeof(*devs), name,
				    &found, &buf);
		devs = buf;
		if (ndevs < 0)
			goto out;
	}
	if (name && !found) {
		fail("stat: no %s named %s", which == STAT_PEER ? "peer" : "device",
		     name);
		goto out;
	}

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_object(&jw, NULL);
	}
	if (which != STAT_DEVICE) {
		if (opt_json)
			json_open_array(&jw, "peers");
		for (int i = 0; i < npeers; i++)
			if (!name || !strcmp(peers[i].name, name))
				peer_stats_print(opt_json ? &jw : NULL, &peers[i],
						 find_fault_stats(peer_faults, nfaults,
								  peers[i].peer_id));
		if (opt_json)
			json_close_array(&jw);
	}
	if (which != STAT_PEER) {
		if (opt_json)
			json_open_array(&jw, "devices");
		for (int i = 0; i < ndevs; i++)
			if (!name || !strcmp(devs[i].name, name))
				device_stats_print(opt_json ? &jw : NULL, &devs[i]);
		if (opt_json)
			json_close_array(&jw);
	}
	if (opt_json) {
		json_close_object(&jw);
		json_finish(&jw);
	}
	status = 0;
out:
	free(peers);
	free(peer_faults);
	free(devs);
	return status;
}

int cmd_stat(int argc, char **argv)
{
	struct rpage_api api;
	int which = STAT_SHOW, word, fd, ret;
	const char *name = NULL;
	int i = 0;

	if (argc > 0) {
		word = find_command(argv[0], stat_words);
		if (word < 0)
			return usage_error("stat: unknown command '%s'", argv[0]);
		if (word == STAT_HELP) {
			stat_usage();
			return 0;
		}
		if (word == STAT_PROM) {
			if (argc > 1)
				return usage_error("stat prometheus: unexpected argument '%s'",
						   argv[1]);
			fd = open_device(NULL);
			if (fd < 0)
				return 1;
			ret = stat_prometheus(fd);
			close(fd);
			return ret;
		}
		if (word == STAT_SHOW)
			i++;
	}
	if (i < argc) {
		if (matches(argv[i], "peer"))
			which = STAT_PEER;
		else if (matches(argv[i], "device"))
			which = STAT_DEVICE;
		else if (matches(argv[i], "map"))
			which = STAT_MAP;
		else
			return usage_error("stat show: unexpected argument '%s'", argv[i]);
		i++;
	}
	if (i < argc)
		name = argv[i++];
	if (i < argc)
		return usage_error("stat show %s %s: unexpected argument '%s'",
				   stat_words[which], name, argv[i]);

	fd = open_device(&api);
	if (fd < 0)
		return 1;
	if (which == STAT_MAP) {
		ret = stat_maps(fd, name);
		close(fd);
		return ret;
	}
	ret = stat_show(fd, which, name,
			api.ioctls & (1ULL << _RPAGE_PEER_FAULT_STATS));
	close(fd);
	return ret;
}
