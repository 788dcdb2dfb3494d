// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: the `stat` object: the counters and latency histograms of
 * reads and writes, by peer and by RDMA device.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

static void stat_usage(void)
{
	puts("Usage: rpagectl stat [ show ] [ peer [ NAME ] | device [ NAME ] ]\n"
	     "NAME := a peer's name (rpagectl peer show) or an RDMA device's\n"
	     "        (rpagectl device show); both kinds when neither is given");
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

/*
 * The counters of a peer or device: the rest of its text line after its
 * name and id, or the members of its JSON object.
 */
static void stats_print(struct json_writer *jw, const struct rpage_stats *st)
{
	static const struct {
		const char *name;
		size_t offset;
	} counters[] = {
		{ "reads", offsetof(struct rpage_stats, reads) },
		{ "writes", offsetof(struct rpage_stats, writes) },
		{ "read_bytes", offsetof(struct rpage_stats, read_bytes) },
		{ "write_bytes", offsetof(struct rpage_stats, write_bytes) },
		{ "errors", offsetof(struct rpage_stats, errors) },
		{ "connects", offsetof(struct rpage_stats, connects) },
		{ "rejects", offsetof(struct rpage_stats, rejects) },
	};
	__u64 ns[NR_STAT_PERCENTILES];
	bool empty = false;
	char text[32];

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		__u64 val;

		memcpy(&val, (const char *)st + counters[i].offset, sizeof(val));
		if (jw)
			json_uint(jw, counters[i].name, val);
		else
			printf(" %s %" PRIu64, counters[i].name, (uint64_t)val);
	}
	for (size_t i = 0; i < NR_STAT_PERCENTILES; i++)
		if (rpage_hist_percentile(st->latency, RPAGE_HIST_BUCKETS,
					  stat_percentiles[i].pct, &ns[i]) < 0)
			empty = true;	/* -ENODATA: no page has completed */

	if (!jw) {
		printf(" latency");
		if (empty)
			printf(" none");
		for (size_t i = 0; !empty && i < NR_STAT_PERCENTILES; i++) {
			format_ns(ns[i], text, sizeof(text));
			printf(" %s %s", stat_percentiles[i].text, text);
		}
		putchar('\n');
		return;
	}
	json_open_object(jw, "latency");
	for (size_t i = 0; i < NR_STAT_PERCENTILES; i++) {
		if (empty)
			json_null(jw, stat_percentiles[i].key);
		else
			json_uint(jw, stat_percentiles[i].key, ns[i]);
	}
	/* Bucket i holds [2^i, 2^(i+1)) ns; the last one has no bound. */
	json_open_array(jw, "histogram");
	for (unsigned int b = 0; b < RPAGE_HIST_BUCKETS; b++) {
		if (!st->latency[b])
			continue;
		json_open_object(jw, NULL);
		if (b + 1 < RPAGE_HIST_BUCKETS)
			json_uint(jw, "le_ns", 1ULL << (b + 1));
		else
			json_null(jw, "le_ns");
		json_uint(jw, "count", st->latency[b]);
		json_close_object(jw);
	}
	json_close_array(jw);
	json_close_object(jw);
}

static void peer_stats_print(struct json_writer *jw,
			     const struct rpage_peer_stats *ps)
{
	if (!jw) {
		printf("peer %s id %u", ps->name, ps->peer_id);
		stats_print(NULL, &ps->stats);
		return;
	}
	json_open_object(jw, NULL);
	json_string(jw, "name", ps->name);
	json_uint(jw, "id", ps->peer_id);
	stats_print(jw, &ps->stats);
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

enum { STAT_SHOW, STAT_PEER, STAT_DEVICE, STAT_HELP };

static const char *const stat_words[] = {
	[STAT_SHOW] = "show", [STAT_PEER] = "peer", [STAT_DEVICE] = "device",
	[STAT_HELP] = "help", NULL,
};

/*
 * stat [ show ] [ peer [ NAME ] | device [ NAME ] ]: @which is STAT_PEER,
 * STAT_DEVICE or STAT_SHOW (both). Both lists are read before anything
 * is printed, so that a failure prints one line and nothing else.
 */
static int stat_show(int fd, int which, const char *name)
{
	struct rpage_device_stats *devs = NULL;
	struct rpage_peer_stats *peers = NULL;
	int npeers = 0, ndevs = 0, status = 1;
	struct json_writer jw;
	bool found = false;
	void *buf;

	if (which != STAT_DEVICE) {
		buf = NULL;
		npeers = fetch_list(fd, rpage_peer_stats, sizeof(*peers), &buf);
		peers = buf;
		if (npeers < 0) {
			fail_cmd("stat show", NULL, -npeers, NULL);
			goto out;
		}
		for (int i = 0; i < npeers; i++) {
			peers[i].name[sizeof(peers[i].name) - 1] = '\0';
			found |= name && !strcmp(peers[i].name, name);
		}
	}
	if (which != STAT_PEER) {
		buf = NULL;
		ndevs = fetch_list(fd, rpage_device_stats, sizeof(*devs), &buf);
		devs = buf;
		if (ndevs < 0) {
			fail_cmd("stat show", NULL, -ndevs, NULL);
			goto out;
		}
		for (int i = 0; i < ndevs; i++) {
			devs[i].name[sizeof(devs[i].name) - 1] = '\0';
			found |= name && !strcmp(devs[i].name, name);
		}
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
				peer_stats_print(opt_json ? &jw : NULL, &peers[i]);
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
	free(devs);
	return status;
}

int cmd_stat(int argc, char **argv)
{
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
		if (word == STAT_SHOW)
			i++;
	}
	if (i < argc) {
		if (matches(argv[i], "peer"))
			which = STAT_PEER;
		else if (matches(argv[i], "device"))
			which = STAT_DEVICE;
		else
			return usage_error("stat show: unexpected argument '%s'", argv[i]);
		i++;
	}
	if (i < argc)
		name = argv[i++];
	if (i < argc)
		return usage_error("stat show %s %s: unexpected argument '%s'",
				   stat_words[which], name, argv[i]);

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = stat_show(fd, which, name);
	close(fd);
	return ret;
}
