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

/* One page moved (or not) in @ns nanoseconds. */
void rpage_counters_io(struct rpage_counters *c, bool write, u32 bytes,
		       u64 ns, bool failed)
{
	struct rpage_counters_pcpu *p;

	p = get_cpu_ptr(c->pcpu);
	if (failed) {
		p->errors++;
	} else if (write) {
		p->writes++;
		p->write_bytes += bytes;
	} else {
		p->reads++;
		p->read_bytes += bytes;
	}
	p->latency[rpage_hist_bucket(ns)]++;
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
