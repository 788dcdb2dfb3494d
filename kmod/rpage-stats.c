// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: counters and latency histograms of peers and RDMA devices.
 *
 * The data path counts on the CPU it runs on (per-CPU counters, no
 * shared cache line); readers sum over every CPU.
 */
#include "rpage-pri.h"

#include <linux/log2.h>
#include <linux/percpu.h>
#include <linux/slab.h>

int rpage_counters_init(struct rpage_counters *c)
{
	c->pcpu = alloc_percpu(struct rpage_counters_pcpu);
	if (!c->pcpu)
		return -ENOMEM;
	atomic64_set(&c->connects, 0);
	atomic64_set(&c->rejects, 0);
	return 0;
}

void rpage_counters_free(struct rpage_counters *c)
{
	free_percpu(c->pcpu);
	c->pcpu = NULL;
}

static unsigned int rpage_hist_bucket(u64 ns)
{
	unsigned int b = ns < 2 ? 0 : ilog2(ns);

	return min_t(unsigned int, b, RPAGE_HIST_BUCKETS - 1);
}

/*
 * @pages pages moved (or not) by one work request in @ns nanoseconds:
 * each page is counted, and takes the time of the request that carried it.
 */
void rpage_counters_io(struct rpage_counters *c, bool write,
		       unsigned int pages, u64 ns, bool failed)
{
	struct rpage_counters_pcpu *p;

	p = get_cpu_ptr(c->pcpu);
	if (failed) {
		p->errors += pages;
	} else if (write) {
		p->writes += pages;
		p->write_bytes += (u64)pages << PAGE_SHIFT;
	} else {
		p->reads += pages;
		p->read_bytes += (u64)pages << PAGE_SHIFT;
	}
	p->latency[rpage_hist_bucket(ns)] += pages;
	put_cpu_ptr(c->pcpu);
}

void rpage_counters_sum(const struct rpage_counters *c, struct rpage_stats *out)
{
	unsigned int cpu, b;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		const struct rpage_counters_pcpu *p = per_cpu_ptr(c->pcpu, cpu);

		out->reads += p->reads;
		out->writes += p->writes;
		out->read_bytes += p->read_bytes;
		out->write_bytes += p->write_bytes;
		out->errors += p->errors;
		for (b = 0; b < RPAGE_HIST_BUCKETS; b++)
			out->latency[b] += p->latency[b];
	}
	out->connects = atomic64_read(&c->connects);
	out->rejects = atomic64_read(&c->rejects);
}

int rpage_fault_counters_init(struct rpage_fault_counters_pcpu __percpu **c)
{
	*c = alloc_percpu(struct rpage_fault_counters_pcpu);
	return *c ? 0 : -ENOMEM;
}

void rpage_fault_counters_free(struct rpage_fault_counters_pcpu __percpu **c)
{
	free_percpu(*c);
	*c = NULL;
}

/*
 * Counts @n of @what for @map and for its peer, if it still has one (a
 * deleted peer's counters stay readable until a grace period is over).
 */
void rpage_fault_count(struct rpage_mapping *map, enum rpage_fault_count what,
		       u64 n)
{
	struct rpage_peer *peer;

	this_cpu_add(map->counters->count[what], n);
	rcu_read_lock();
	peer = rcu_dereference(map->peer);
	if (peer)
		this_cpu_add(peer->fault_counters->count[what], n);
	rcu_read_unlock();
}

/* One fault of @map took @ns nanoseconds in rpage. */
void rpage_fault_count_latency(struct rpage_mapping *map, u64 ns)
{
	unsigned int b = rpage_hist_bucket(ns);
	struct rpage_peer *peer;

	this_cpu_inc(map->counters->latency[b]);
	rcu_read_lock();
	peer = rcu_dereference(map->peer);
	if (peer)
		this_cpu_inc(peer->fault_counters->latency[b]);
	rcu_read_unlock();
}

/* Sums @c's counters over every CPU into @count, and its histogram into @latency. */
static void rpage_fault_counts_sum(struct rpage_fault_counters_pcpu __percpu *c,
				   u64 count[RPAGE_FC_NR], u64 *latency)
{
	unsigned int cpu, i;

	for_each_possible_cpu(cpu) {
		const struct rpage_fault_counters_pcpu *p = per_cpu_ptr(c, cpu);

		for (i = 0; i < RPAGE_FC_NR; i++)
			count[i] += p->count[i];
		for (i = 0; latency && i < RPAGE_HIST_BUCKETS; i++)
			latency[i] += p->latency[i];
	}
}

void rpage_fault_counters_sum(struct rpage_fault_counters_pcpu __percpu *c,
			      struct rpage_fault_stats *out)
{
	u64 count[RPAGE_FC_NR] = {};

	memset(out, 0, sizeof(*out));
	rpage_fault_counts_sum(c, count, out->latency);
	out->faults = count[RPAGE_FC_FAULTS];
	out->minor_faults = count[RPAGE_FC_MINOR];
	out->waits = count[RPAGE_FC_WAITS];
	out->prefetched = count[RPAGE_FC_PREFETCHED];
	out->prefetch_hits = count[RPAGE_FC_PREFETCH_HITS];
	out->evicted = count[RPAGE_FC_EVICTED];
	out->written = count[RPAGE_FC_WRITTEN];
	out->sigbus = count[RPAGE_FC_SIGBUS];
	out->vma_locked = count[RPAGE_FC_VMA_LOCKED];
	out->mmap_locked = count[RPAGE_FC_MMAP_LOCKED];
	out->refetched = count[RPAGE_FC_REFETCHED];
	out->huge_faults = count[RPAGE_FC_HUGE_FAULTS];
	out->huge_fallbacks = count[RPAGE_FC_HUGE_FALLBACKS];
	out->huge_prefetched = count[RPAGE_FC_HUGE_PREFETCHED];
}

/* @c's 4 KiB reads in 2 MiB mappings by cause, into @fallbacks. */
void rpage_fault_counters_sum_huge(struct rpage_fault_counters_pcpu __percpu *c,
				   u64 fallbacks[RPAGE_HUGE_FB_MAX])
{
	u64 count[RPAGE_FC_NR] = {};

	BUILD_BUG_ON(RPAGE_HUGE_FB_NR > RPAGE_HUGE_FB_MAX);
	rpage_fault_counts_sum(c, count, NULL);
	memset(fallbacks, 0, RPAGE_HUGE_FB_MAX * sizeof(*fallbacks));
	memcpy(fallbacks, &count[RPAGE_FC_HUGE_FB],
	       RPAGE_HUGE_FB_NR * sizeof(*fallbacks));
}

static void rpage_peer_stats_entry(struct rpage_peer *peer, void *entry)
{
	struct rpage_peer_stats *stats = entry;

	strscpy(stats->name, peer->name, sizeof(stats->name));
	stats->peer_id = peer->id;
	rpage_counters_sum(&peer->counters, &stats->stats);
}

long rpage_ioctl_peer_stats(struct rpage_file *rfile, void __user *argp)
{
	return rpage_peers_list_answer(argp, sizeof(struct rpage_peer_stats),
				       rpage_peer_stats_entry);
}

static void rpage_peer_fault_stats_entry(struct rpage_peer *peer, void *entry)
{
	struct rpage_peer_fault_stats *stats = entry;

	strscpy(stats->name, peer->name, sizeof(stats->name));
	stats->peer_id = peer->id;
	rpage_fault_counters_sum(peer->fault_counters, &stats->stats);
}

long rpage_ioctl_peer_fault_stats(struct rpage_file *rfile, void __user *argp)
{
	return rpage_peers_list_answer(argp, sizeof(struct rpage_peer_fault_stats),
				       rpage_peer_fault_stats_entry);
}
