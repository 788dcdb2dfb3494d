// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl stat prometheus: every counter of `stat show` and `stat map`,
 * and each peer's connection state, in Prometheus' text exposition
 * format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper. The metric names are part of rpagectl's interface
 * (rpagectl(8)): they never change meaning; new ones may come.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

/* One series: a label (peer, device or map) and where its values are. */
struct prom_series {
	const char *label;		/* "peer", "device", "map" */
	const char *name;		/* its value */
	const void *base;		/* the struct the offsets are into */
};

/* A counter of a struct at @offset, under the metric @metric. */
struct prom_counter {
	const char *metric;
	const char *help;
	size_t offset;
};

static void prom_header(const char *metric, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
}

static uint64_t prom_u64(const void *base, size_t offset)
{
	uint64_t val;

	memcpy(&val, (const char *)base + offset, sizeof(val));
	return val;
}

/* Each counter of @counters, over every series of @series. */
static void prom_counters(const char *prefix, const struct prom_counter *counters,
			  size_t nr_counters, const struct prom_series *series,
			  size_t nr_series)
{
	char metric[128];

	if (!nr_series)
		return;
	for (size_t c = 0; c < nr_counters; c++) {
		snprintf(metric, sizeof(metric), "%s_%s_total", prefix,
			 counters[c].metric);
		prom_header(metric, "counter", counters[c].help);
		for (size_t s = 0; s < nr_series; s++)
			printf("%s{%s=\"%s\"} %" PRIu64 "\n", metric, series[s].label,
			       series[s].name,
			       prom_u64(series[s].base, counters[c].offset));
	}
}

/*
 * A latency histogram of each series (RPAGE_HIST_BUCKETS log2 buckets
 * of nanoseconds at @offset), as a Prometheus histogram in seconds:
 * cumulative buckets with le = 2^(i+1) ns, +Inf, and the count. The
 * module keeps no sum of latencies: there is no _sum series.
 */
static void prom_histogram(const char *metric, const char *help, size_t offset,
			   const struct prom_series *series, size_t nr_series)
{
	if (!nr_series)
		return;
	prom_header(metric, "histogram", help);
	for (size_t s = 0; s < nr_series; s++) {
		const __u64 *hist = (const void *)((const char *)series[s].base + offset);
		uint64_t total = 0;

		for (unsigned int b = 0; b + 1 < RPAGE_HIST_BUCKETS; b++) {
			total += hist[b];
			printf("%s_bucket{%s=\"%s\",le=\"%.9g\"} %" PRIu64 "\n", metric,
			       series[s].label, series[s].name,
			       (double)(1ULL << (b + 1)) / 1e9, total);
		}
		total += hist[RPAGE_HIST_BUCKETS - 1];
		printf("%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", metric,
		       series[s].label, series[s].name, total);
		printf("%s_count{%s=\"%s\"} %" PRIu64 "\n", metric, series[s].label,
		       series[s].name, total);
	}
}

#define PROM_COUNTER(type, field, help) { #field, help, offsetof(type, field) }

static const struct prom_counter transfer_counters[] = {
	PROM_COUNTER(struct rpage_stats, reads, "Pages read, one RDMA READ or TCP read each."),
	PROM_COUNTER(struct rpage_stats, writes, "Pages written, one RDMA WRITE or TCP write each."),
	PROM_COUNTER(struct rpage_stats, read_bytes, "Bytes read."),
	PROM_COUNTER(struct rpage_stats, write_bytes, "Bytes written."),
	PROM_COUNTER(struct rpage_stats, errors, "Pages whose transfer failed."),
	PROM_COUNTER(struct rpage_stats, connects, "Connections established (for a device: its queue pairs)."),
	PROM_COUNTER(struct rpage_stats, rejects, "Connections refused."),
};

static const struct prom_counter fault_counters[] = {
	PROM_COUNTER(struct rpage_fault_stats, faults, "Page faults that read their page with a transfer of their own."),
	PROM_COUNTER(struct rpage_fault_stats, minor_faults, "Page faults that found their page here."),
	PROM_COUNTER(struct rpage_fault_stats, waits, "Page faults that waited for a transfer of their page already in flight."),
	PROM_COUNTER(struct rpage_fault_stats, prefetched, "Pages read by prefetch, read-ahead or pull."),
	PROM_COUNTER(struct rpage_fault_stats, prefetch_hits, "Prefetched pages a fault mapped."),
	PROM_COUNTER(struct rpage_fault_stats, evicted, "Pages evicted."),
	PROM_COUNTER(struct rpage_fault_stats, written, "Dirty pages written back to the pool."),
	PROM_COUNTER(struct rpage_fault_stats, sigbus, "Page faults answered with SIGBUS."),
	PROM_COUNTER(struct rpage_fault_stats, vma_locked, "Fault handler calls under the per-VMA lock."),
	PROM_COUNTER(struct rpage_fault_stats, mmap_locked, "Fault handler calls under mmap_lock."),
	PROM_COUNTER(struct rpage_fault_stats, refetched, "Pages read again after the kernel dropped them."),
	PROM_COUNTER(struct rpage_fault_stats, huge_faults, "Page faults that read a whole 2 MiB region."),
	PROM_COUNTER(struct rpage_fault_stats, huge_fallbacks, "Page faults of 2 MiB mappings that read 4 KiB instead."),
	PROM_COUNTER(struct rpage_fault_stats, huge_prefetched, "2 MiB regions read whole by prefetch or pull."),
};

static const struct prom_counter status_counters[] = {
	PROM_COUNTER(struct rpage_peer_status, reconnects, "Times the peer's connections were lost."),
	PROM_COUNTER(struct rpage_peer_status, retried, "Transfers posted again after a transport failure."),
	PROM_COUNTER(struct rpage_peer_status, lost, "Transfers failed because the peer stayed unreachable past its loss timeout."),
	PROM_COUNTER(struct rpage_peer_status, refused_msgs, "Malformed or misdirected control messages (and TCP requests) refused."),
	PROM_COUNTER(struct rpage_peer_status, refused_pools, "Pools the peer announced past this host's limits."),
	PROM_COUNTER(struct rpage_peer_status, refused_qps, "Queue pairs the peer opened past this host's limit."),
	PROM_COUNTER(struct rpage_peer_status, refused_access, "Reads and writes of pools not scoped to the peer, refused."),
};

#define NR(a) (sizeof(a) / sizeof((a)[0]))

int stat_prometheus(int fd)
{
	struct rpage_peer_fault_stats *pfaults = NULL;
	struct rpage_device_stats *devs = NULL;
	struct rpage_peer_status *sts = NULL;
	struct rpage_peer_stats *peers = NULL;
	struct rpage_peer_info *infos = NULL;
	struct rpage_map_info *maps = NULL;
	struct rpage_map_huge_stats *hstats = NULL;
	struct rpage_map_stats *mstats = NULL;
	struct prom_series *series = NULL;
	int npeers, ndevs, nfaults, nsts, ninfos, nmaps, status = 1;
	size_t n, max;
	void *buf;

	/* Everything is read first: a failure prints one line and no metric. */
	npeers = rpage_list_all(fd, rpage_peer_stats, sizeof(*peers), &buf);
	peers = buf;
	ndevs = rpage_list_all(fd, rpage_device_stats, sizeof(*devs), &buf);
	devs = buf;
	nfaults = rpage_list_all(fd, rpage_peer_fault_stats, sizeof(*pfaults), &buf);
	pfaults = buf;
	nsts = rpage_list_all(fd, rpage_peer_status, sizeof(*sts), &buf);
	sts = buf;
	ninfos = rpage_list_all(fd, rpage_peer_list, sizeof(*infos), &buf);
	infos = buf;
	nmaps = rpage_list_all(fd, rpage_map_list, sizeof(*maps), &buf);
	maps = buf;
	if (npeers < 0 || ndevs < 0 || nfaults < 0 || nsts < 0 || ninfos < 0 ||
	    nmaps < 0) {
		int err = npeers < 0 ? npeers : ndevs < 0 ? ndevs : nfaults < 0 ?
			  nfaults : nsts < 0 ? nsts : ninfos < 0 ? ninfos : nmaps;

		fail_cmd("stat prometheus", NULL, -err, NULL);
		goto out;
	}
	if (nmaps) {
		mstats = calloc((size_t)nmaps, sizeof(*mstats));
		hstats = calloc((size_t)nmaps, sizeof(*hstats));
		if (!mstats || !hstats) {
			fail_cmd("stat prometheus", NULL, ENOMEM, NULL);
			goto out;
		}
	}
	for (int i = 0; i < nmaps; i++) {
		maps[i].name[sizeof(maps[i].name) - 1] = '\0';
		mstats[i].map_id = maps[i].map_id;
		/* Deleted since the list: left out (map_id 0). */
		if (rpage_map_stats(fd, &mstats[i]))
			mstats[i].map_id = 0;
		/* A 2 MiB mapping's fallbacks, where the module has them. */
		hstats[i].map_id = maps[i].flags & RPAGE_MAP_HUGE ? maps[i].map_id : 0;
		if (hstats[i].map_id && rpage_map_huge_stats(fd, &hstats[i]))
			hstats[i].map_id = 0;
	}
	max = (size_t)npeers + ndevs + nfaults + nsts + ninfos + nmaps + 1;
	series = calloc(max, sizeof(*series));
	if (!series) {
		fail_cmd("stat prometheus", NULL, ENOMEM, NULL);
		goto out;
	}

	/* Peers: their connection, then their transfers, then their faults. */
	n = 0;
	for (int i = 0; i < ninfos; i++) {
		infos[i].name[sizeof(infos[i].name) - 1] = '\0';
		series[n++] = (struct prom_series){ "peer", infos[i].name, &infos[i] };
	}
	if (n) {
		prom_header("rpage_peer_up", "gauge",
			    "1 while the peer is connected (every queue pair up, pool table received), else 0.");
		for (size_t s = 0; s < n; s++)
			printf("rpage_peer_up{peer=\"%s\"} %d\n", series[s].name,
			       ((const struct rpage_peer_info *)series[s].base)->state ==
			       RPAGE_PEER_CONNECTED);
		prom_header("rpage_peer_state", "gauge",
			    "1 for the peer's state (connecting, connected, reconnecting, failed).");
		for (size_t s = 0; s < n; s++) {
			__u32 state = ((const struct rpage_peer_info *)series[s].base)->state;

			for (__u32 st = RPAGE_PEER_CONNECTING; st <= RPAGE_PEER_FAILED; st++)
				printf("rpage_peer_state{peer=\"%s\",state=\"%s\"} %d\n",
				       series[s].name, rpage_peer_state_name(st),
				       state == st);
		}
	}
	n = 0;
	for (int i = 0; i < nsts; i++)
		for (int j = 0; j < ninfos; j++)
			if (infos[j].id == sts[i].peer_id)
				series[n++] = (struct prom_series){ "peer", infos[j].name, &sts[i] };
	prom_counters("rpage_peer", status_counters, NR(status_counters), series, n);

	n = 0;
	for (int i = 0; i < npeers; i++) {
		peers[i].name[sizeof(peers[i].name) - 1] = '\0';
		series[n++] = (struct prom_series){ "peer", peers[i].name, &peers[i].stats };
	}
	prom_counters("rpage_peer", transfer_counters, NR(transfer_counters), series, n);
	prom_histogram("rpage_peer_transfer_latency_seconds",
		       "Time from posting a page's transfer to its completion.",
		       offsetof(struct rpage_stats, latency), series, n);

	n = 0;
	for (int i = 0; i < nfaults; i++) {
		pfaults[i].name[sizeof(pfaults[i].name) - 1] = '\0';
		series[n++] = (struct prom_series){ "peer", pfaults[i].name, &pfaults[i].stats };
	}
	prom_counters("rpage_peer_fault", fault_counters, NR(fault_counters), series, n);
	prom_histogram("rpage_peer_fault_latency_seconds",
		       "Each page fault's time in rpage, from its start to its page being ready.",
		       offsetof(struct rpage_fault_stats, latency), series, n);

	n = 0;
	for (int i = 0; i < ndevs; i++) {
		devs[i].name[sizeof(devs[i].name) - 1] = '\0';
		series[n++] = (struct prom_series){ "device", devs[i].name, &devs[i].stats };
	}
	prom_counters("rpage_device", transfer_counters, NR(transfer_counters), series, n);
	prom_histogram("rpage_device_transfer_latency_seconds",
		       "Time from posting a page's RDMA READ or WRITE to its completion.",
		       offsetof(struct rpage_stats, latency), series, n);

	n = 0;
	for (int i = 0; i < nmaps; i++)
		if (mstats[i].map_id)
			series[n++] = (struct prom_series){ "map", maps[i].name, &mstats[i].stats };
	prom_counters("rpage_map_fault", fault_counters, NR(fault_counters), series, n);
	prom_histogram("rpage_map_fault_latency_seconds",
		       "Each page fault's time in rpage, from its start to its page being ready.",
		       offsetof(struct rpage_fault_stats, latency), series, n);
	if (nmaps) {
		prom_header("rpage_map_pages_local", "gauge",
			    "Pages of the named mapping fetched and here.");
		for (int i = 0; i < nmaps; i++)
			printf("rpage_map_pages_local{map=\"%s\"} %" PRIu64 "\n",
			       maps[i].name, (uint64_t)maps[i].pages_local);
		prom_header("rpage_map_pages", "gauge", "Pages of the named mapping.");
		for (int i = 0; i < nmaps; i++)
			printf("rpage_map_pages{map=\"%s\"} %" PRIu64 "\n", maps[i].name,
			       (uint64_t)(maps[i].length / page_size()));
	}
	for (int i = 0, first = 1; i < nmaps; i++) {
		if (!hstats[i].map_id)
			continue;
		if (first)
			prom_header("rpage_map_huge_fallbacks_total", "counter",
				    "4 KiB reads of a 2 MiB mapping where a whole region was wanted, by cause.");
		first = 0;
		for (__u32 c = 0; c < RPAGE_HUGE_FB_MAX; c++)
			if (rpage_huge_fallback_name(c))
				printf("rpage_map_huge_fallbacks_total{map=\"%s\",cause=\"%s\"} %" PRIu64 "\n",
				       maps[i].name, rpage_huge_fallback_name(c),
				       (uint64_t)hstats[i].fallbacks[c]);
	}
	status = 0;
out:
	free(peers);
	free(devs);
	free(pfaults);
	free(sts);
	free(infos);
	free(maps);
	free(mstats);
	free(hstats);
	free(series);
	return status;
}
