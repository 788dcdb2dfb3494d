// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_uffd_baseline: the post-copy fault path a VMM has today, as the
 * baseline rpage is measured against. rpage resolves a fault inside the
 * kernel with one RDMA READ; here the fault travels to userspace through
 * userfaultfd, a handler thread fetches the page (one RDMA READ, or a
 * request over TCP) into a bounce buffer and installs it with UFFDIO_COPY.
 * One handler thread, as QEMU's post-copy has, or several
 * (--handlers N), each with its own connection and bounce buffer, reading
 * the same userfaultfd: the pipelined handler a fair comparison with
 * several faulting threads needs.
 *
 *   rpage_uffd_baseline serve --size BYTES [--addr IP] [--rdma-port P]
 *                       [--tcp-port P] [--until PATH] [--ready PATH]
 *   rpage_uffd_baseline fault --server IP --transport rdma|tcp --size BYTES
 *                       [--port P] [--order seq|random] [--threads N]
 *                       [--handlers N] [--name NAME] [--samples-dir DIR]
 *                       [--seed S]
 *   rpage_uffd_baseline fault --transport local --size BYTES [--order ...]
 *   rpage_uffd_baseline floor --size BYTES [--order seq|random] [--seed S]
 *                       [--samples-dir DIR]
 *
 * serve (host A) fills BYTES with baseline_pattern() and serves them to
 * any number of clients: for RDMA READ over RC connections on the RDMA
 * port (the accept carries struct baseline_hello as private data), and
 * page by page over TCP on the TCP port (an 8-byte little-endian offset
 * in, the 4096 bytes there out). It creates --ready once listening and
 * exits 0 when --until appears or on SIGTERM. Without an RDMA device it
 * warns and serves TCP only.
 *
 * fault (host B) maps BYTES, registers them with userfaultfd, touches
 * every page once from N threads timing each first access, checks every
 * byte against the pattern and prints three JSON lines (see
 * bench_report_latency() and bench_report_throughput()): the touches'
 * latency, their throughput, and NAME_overhead, the handler's own time
 * on each fault beyond its fetch's time on the wire (struct fault).
 * With --transport local there is no server and no wire: the handler
 * installs each page with UFFDIO_COPY straight from a local copy of the
 * pattern, the baseline of rpage's loop transport, and its overhead is
 * its whole time on the fault.
 *
 * floor measures no handler at all: the kernel's own cost of a first
 * touch that brings a new page, the floor under any fault rpage's loop
 * transport takes. floor_memfd_ORDER: the first read of each page of a
 * fresh shared memfd (a page allocated, cleared, added to the page cache
 * and mapped: what a loop fault does, with a copy in place of the
 * clearing); floor_anon_ORDER: the first write of each page of private
 * anonymous memory (allocated, cleared, mapped: the least a fault that
 * brings a page can cost; a read would map the shared zero page). Both
 * 4 KiB pages (MADV_NOHUGEPAGE), one thread, each touch timed as the
 * fault command times its own, every byte checked afterwards.
 *
 * Exit status 0 on success, 1 on failure with one line on stderr.
 *
 * Built by `make selftests` (with -D_GNU_SOURCE), on rdma-core alone:
 *   cc -D_GNU_SOURCE ... selftests/rpage_uffd_baseline.c -lrdmacm -libverbs -pthread
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <infiniband/verbs.h>
#include <linux/userfaultfd.h>
#include <rdma/rdma_cma.h>

#define PROG			"rpage_uffd_baseline"

/* UFFDIO_COPY works in pages: the tool insists on 4 KiB ones. */
#define BASELINE_PAGE		4096UL
#define DEFAULT_ADDR		"0.0.0.0"
#define DEFAULT_RDMA_PORT	7481
#define DEFAULT_TCP_PORT	7482
#define DEFAULT_SEED		1
#define MAX_THREADS		1024
#define MAX_HANDLERS		64
#define MAX_NAME		100
/* How often serve looks for --until. */
#define POLL_MS			100
/* How long fault waits for each step of the RDMA connection. */
#define CM_TIMEOUT_MS		5000
/* RDMA READs in flight per QP that the CM negotiates, at most. */
#define RD_DEPTH		16
/* RC retries before a READ fails: 7 is the most, and "infinite" for RNR. */
#define RC_RETRIES		7

/*
 * serve's accept private data: where the region is and how to read it.
 * Little-endian on the wire; 24 bytes, well inside a REP's 196.
 */
struct baseline_hello {
	uint64_t addr;		/* remote address of byte 0 of the region */
	uint32_t rkey;
	uint32_t reserved;	/* zero */
	uint64_t size;		/* bytes readable from addr */
};

_Static_assert(sizeof(struct baseline_hello) == 24,
	       "struct baseline_hello is 24 bytes on the wire");

/*
 * The value of the 8-byte word at byte @offset of the region, stored
 * little-endian. Distinct for every word, so a page from the wrong offset
 * is caught as surely as a zero page.
 */
static inline uint64_t baseline_pattern(uint64_t offset)
{
	return (0x9e3779b97f4a7c15ULL * (offset / 8 + 1)) ^ 0x5bd1e995;
}

/* ---- Messages: one line on stderr each -------------------------------- */

static void __attribute__((format(printf, 2, 0)))
vmsg(const char *level, const char *fmt, va_list ap)
{
	/* Threads report too: keep each line whole. */
	flockfile(stderr);
	fprintf(stderr, PROG ": %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

static void __attribute__((format(printf, 1, 2))) pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error", fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 1, 2))) pr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning", fmt, ap);
	va_end(ap);
}

/*
 * For the fault handler: a touching thread waits in the kernel for the
 * page it faulted on, and only the end of the process frees it.
 */
static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error", fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * ---- Benchmark report ---------------------------------------------------
 *
 * One JSON object per line on stdout, the format rpage-bench prints too:
 *
 *   {"bench":"NAME","kind":"latency","samples":N,"min_ns":..,"p50_ns":..,
 *    "p90_ns":..,"p99_ns":..,"p999_ns":..,"max_ns":..}
 *   {"bench":"NAME_tput","kind":"throughput","bytes":B,"seconds":S,
 *    "mib_per_s":X,"pages_per_s":Y}
 *
 * Self-contained (libc only, no globals of the program, every name starts
 * with bench_) so that it can move into a shared header as it is.
 */

/* Pages are counted in 4 KiB units, whatever the host's page size. */
#define BENCH_PAGE_BYTES	4096.0

/* @s, then @suffix, as one JSON string. */
static void bench_json_string(FILE *out, const char *s, const char *suffix)
{
	fputc('"', out);
	for (int part = 0; part < 2; part++, s = suffix) {
		for (; *s; s++) {
			unsigned char c = *s;

			if (c == '"' || c == '\\')
				fprintf(out, "\\%c", c);
			else if (c < 0x20)
				fprintf(out, "\\u%04x", c);
			else
				fputc(c, out);
		}
	}
	fputc('"', out);
}

static int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * Nearest rank: the smallest sample that at least @permille thousandths
 * of the samples do not exceed. Exact, no interpolation; @n > 0.
 */
static uint64_t bench_rank(const uint64_t *sorted, size_t n,
			   unsigned int permille)
{
	size_t rank = (n * permille + 999) / 1000;

	return sorted[rank ? rank - 1 : 0];
}

/* DIR/NAME.txt: one sample in ns a line, in the order they were taken. */
static void bench_write_samples(const char *dir, const char *name,
				const uint64_t *ns, size_t n)
{
	char path[PATH_MAX];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s.txt", dir, name) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "bench: %s/%s.txt: path too long\n", dir, name);
		return;
	}
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRIu64 "\n", ns[i]);
	/* A full disk shows only at the flush. */
	if (ferror(f) | fclose(f))
		fprintf(stderr, "bench: writing %s failed\n", path);
}

/*
 * Prints the latency line of benchmark @name for the @n samples at @ns,
 * which it sorts in place. With @samples_dir, first writes every sample
 * to @samples_dir/@name.txt; a failure there is reported on stderr but
 * does not stop the report (check the directory beforehand).
 */
static void bench_report_latency(const char *name, uint64_t *ns, size_t n,
				 const char *samples_dir)
{
	static const struct {
		const char *key;
		unsigned int permille;
	} ranks[] = {
		{ "p50_ns", 500 }, { "p90_ns", 900 },
		{ "p99_ns", 990 }, { "p999_ns", 999 },
	};

	if (samples_dir)
		bench_write_samples(samples_dir, name, ns, n);
	qsort(ns, n, sizeof(*ns), bench_cmp_u64);

	fputs("{\"bench\":", stdout);
	bench_json_string(stdout, name, "");
	printf(",\"kind\":\"latency\",\"samples\":%zu", n);
	/* No sample, no statistic: null rather than a made-up zero. */
	if (n)
		printf(",\"min_ns\":%" PRIu64, ns[0]);
	else
		fputs(",\"min_ns\":null", stdout);
	for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
		if (n)
			printf(",\"%s\":%" PRIu64, ranks[i].key,
			       bench_rank(ns, n, ranks[i].permille));
		else
			printf(",\"%s\":null", ranks[i].key);
	}
	if (n)
		printf(",\"max_ns\":%" PRIu64 "}\n", ns[n - 1]);
	else
		fputs(",\"max_ns\":null}\n", stdout);
	fflush(stdout);
}

/*
 * Prints the throughput line of benchmark @name, as "@name_tput": @bytes
 * moved in @seconds of wall time.
 */
static void bench_report_throughput(const char *name, uint64_t bytes,
				    double seconds)
{
	fputs("{\"bench\":", stdout);
	bench_json_string(stdout, name, "_tput");
	printf(",\"kind\":\"throughput\",\"bytes\":%" PRIu64 ",\"seconds\":%.6f",
	       bytes, seconds);
	if (seconds > 0)
		printf(",\"mib_per_s\":%.3f,\"pages_per_s\":%.1f}\n",
		       bytes / seconds / (1024.0 * 1024.0),
		       bytes / BENCH_PAGE_BYTES / seconds);
	else
		fputs(",\"mib_per_s\":null,\"pages_per_s\":null}\n", stdout);
	fflush(stdout);
}

/* ---- Helpers ------------------------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * A whole number (decimal or 0x-hex) no larger than @max; with @units, a
 * K, M or G after it multiplies by 2^10, 2^20 or 2^30.
 */
static bool parse_num(const char *text, bool units, uint64_t max,
		      uint64_t *out)
{
	static const char suffixes[] = "KMG";
	const char *unit = NULL;
	unsigned int shift = 0;
	unsigned long long val;
	char *end;

	/* strtoull() would take blanks and a minus sign. */
	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	val = strtoull(text, &end, 0);
	if (errno)
		return false;
	if (units && *end)
		unit = strchr(suffixes, toupper((unsigned char)*end));
	if (unit) {
		shift = 10 * (unsigned int)(unit - suffixes + 1);
		end++;
	}
	if (*end || val > (max >> shift))
		return false;
	*out = (uint64_t)val << shift;
	return true;
}

/* A non-zero multiple of the page, for --size. */
static bool parse_size(const char *text, uint64_t *size)
{
	if (parse_num(text, true, UINT64_MAX, size) && *size &&
	    !(*size % BASELINE_PAGE))
		return true;
	pr_err("--size '%s' is not a non-zero multiple of %lu bytes (K, M or G may follow)",
	       text, BASELINE_PAGE);
	return false;
}

static bool parse_port(const char *opt, const char *text, unsigned int *port)
{
	uint64_t val;

	if (parse_num(text, false, UINT16_MAX, &val) && val) {
		*port = val;
		return true;
	}
	pr_err("%s '%s' is not a port number", opt, text);
	return false;
}

/*
 * @ip (IPv4 or IPv6, numeric: the benchmark hosts are named by address
 * and a resolver must not time a run out) with @port, for TCP and the CM.
 */
static int ip_endpoint(const char *ip, unsigned int port,
		       struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
	} else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
	} else {
		pr_err("'%s' is not an IPv4 or IPv6 address", ip);
		return -1;
	}
	return 0;
}

/* Requests and pages are small: Nagle would hold them back. */
static int set_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Receives exactly @len bytes. 1 when they came, 0 on EOF before the
 * first byte (the peer is done), -1 otherwise with errno set.
 */
static int recv_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (char *)buf + got, len - got, MSG_WAITALL);

		if (n > 0) {
			got += n;
		} else if (!n) {
			if (!got)
				return 0;
			errno = EPROTO;
			return -1;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	return 1;
}

/* A peer that went away must not kill us with SIGPIPE. */
static int send_all(int fd, const void *buf, size_t len)
{
	size_t sent = 0;

	while (sent < len) {
		ssize_t n = send(fd, (const char *)buf + sent, len - sent,
				 MSG_NOSIGNAL);

		if (n >= 0)
			sent += n;
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

/*
 * The next event on @ch within @timeout_ms, for the caller to ack; NULL
 * with errno set if none came.
 */
static struct rdma_cm_event *cm_next_event(struct rdma_event_channel *ch,
					   int timeout_ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (!n)
		errno = ETIMEDOUT;
	if (n <= 0 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/*
 * Runs getopt_long over the arguments of role @role, handing each option
 * to @one, which returns false (reported) to stop; no operands allowed.
 * 'h' is --help: @usage on stdout, and exit.
 */
static int parse_options(int argc, char **argv, const char *role,
			 const struct option *longopts,
			 bool (*one)(int c, void *opts), void *opts,
			 void (*usage)(FILE *out))
{
	int c;

	/* Our own one-line message: getopt's would name @role the program. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == '?') {
			pr_err("%s: bad option or missing value: %s", role,
			       argv[optind - 1]);
			return -1;
		}
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (!one(c, opts))
			return -1;
	}
	if (optind < argc) {
		pr_err("%s: unexpected argument '%s'", role, argv[optind]);
		return -1;
	}
	return 0;
}

/*
 * What either side needs on a device: the region (serve) or the bounce
 * buffer (fault) registered, a CQ for its QPs, and the READ depths the
 * device allows, which the CM refuses to exceed.
 */
struct verbs_res {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

static uint8_t rd_depth(int device_max)
{
	return device_max < RD_DEPTH ? device_max : RD_DEPTH;
}

/* -1 (reported) on failure; verbs_res_fini() frees what was made. */
static int verbs_res_init(struct verbs_res *r, struct ibv_context *verbs,
			  void *buf, size_t len, int access)
{
	const char *dev = ibv_get_device_name(verbs->device);
	struct ibv_device_attr attr;
	int err = ibv_query_device(verbs, &attr);

	if (err) {
		pr_err("%s: ibv_query_device: %s", dev, strerror(err));
		return -1;
	}
	r->responder_resources = rd_depth(attr.max_qp_rd_atom);
	r->initiator_depth = rd_depth(attr.max_qp_init_rd_atom);
	/* Each step only after the last worked; the message names the first to fail. */
	r->pd = ibv_alloc_pd(verbs);
	r->cq = r->pd ? ibv_create_cq(verbs, 16, NULL, NULL, 0) : NULL;
	r->mr = r->cq ? ibv_reg_mr(r->pd, buf, len, access) : NULL;
	if (!r->mr) {
		pr_err("%s: %s: %s", dev, !r->pd ? "ibv_alloc_pd" :
		       !r->cq ? "ibv_create_cq" : "ibv_reg_mr", strerror(errno));
		return -1;
	}
	return 0;
}

static void verbs_res_fini(struct verbs_res *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
}

/*
 * An RC QP for @id on @r. One WR each way is plenty: serve posts none
 * (READs are answered without its CPU), fault has one READ in flight.
 */
static int rc_qp_create(struct rdma_cm_id *id, struct verbs_res *r)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.cap.max_send_wr = 1,
		.cap.max_recv_wr = 1,
		.cap.max_send_sge = 1,
		.cap.max_recv_sge = 1,
		.qp_type = IBV_QPT_RC,
	};

	if (!rdma_create_qp(id, r->pd, &attr))
		return 0;
	pr_err("rdma_create_qp: %s", strerror(errno));
	return -1;
}

/* ---- serve: host A ------------------------------------------------------ */

struct serve_opts {
	uint64_t size;
	const char *addr;
	unsigned int rdma_port;
	unsigned int tcp_port;
	const char *until;
	const char *ready;
};

/* The region as one device sees it: each RDMA device gets its own MR. */
struct serve_dev {
	struct serve_dev *next;
	struct ibv_context *verbs;
	struct verbs_res res;
};

struct serve_conn {
	struct serve_conn *next;
	struct rdma_cm_id *id;
};

struct server;

struct tcp_client {
	struct tcp_client *next;
	const struct server *s;
	pthread_t thread;
	int fd;
	atomic_bool done;	/* the thread has finished; join it */
};

struct server {
	struct serve_opts opts;
	uint8_t *mem;
	struct rdma_event_channel *channel;	/* NULL: TCP only */
	struct rdma_cm_id *listen_id;
	struct serve_dev *devs;
	struct serve_conn *conns;
	int tcp_fd;
	struct tcp_client *clients;
	bool ready_told;
};

static volatile sig_atomic_t serve_stop;

static void serve_on_signal(int sig)
{
	(void)sig;
	serve_stop = 1;
}

static void serve_usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " serve --size BYTES [--addr IP] [--rdma-port P] [--tcp-port P]\n"
		"       [--until PATH] [--ready PATH]\n"
		"Serve BYTES of the baseline pattern over RDMA (port %d) and TCP (port %d)\n"
		"on IP (default %s) until PATH appears or SIGTERM.\n",
		DEFAULT_RDMA_PORT, DEFAULT_TCP_PORT, DEFAULT_ADDR);
}

static bool serve_parse_one(int c, void *opts)
{
	struct serve_opts *o = opts;

	switch (c) {
	case 's':
		return parse_size(optarg, &o->size);
	case 'a':
		o->addr = optarg;
		return true;
	case 'r':
		return parse_port("--rdma-port", optarg, &o->rdma_port);
	case 't':
		return parse_port("--tcp-port", optarg, &o->tcp_port);
	case 'u':
		o->until = optarg;
		return true;
	case 'R':
		o->ready = optarg;
		return true;
	}
	return false;
}

static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "addr", required_argument, NULL, 'a' },
		{ "rdma-port", required_argument, NULL, 'r' },
		{ "tcp-port", required_argument, NULL, 't' },
		{ "until", required_argument, NULL, 'u' },
		{ "ready", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};

	if (parse_options(argc, argv, "serve", longopts, serve_parse_one, o,
			  serve_usage))
		return -1;
	if (!o->size) {
		pr_err("serve: --size is required (see serve --help)");
		return -1;
	}
	return 0;
}

/* Registers the region on @verbs; NULL (reported) on failure. */
static struct serve_dev *serve_dev_add(struct server *s,
				       struct ibv_context *verbs)
{
	struct serve_dev *d = calloc(1, sizeof(*d));

	if (!d) {
		pr_err("out of memory");
		return NULL;
	}
	d->verbs = verbs;
	if (verbs_res_init(&d->res, verbs, s->mem, s->opts.size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)) {
		verbs_res_fini(&d->res);
		free(d);
		return NULL;
	}
	d->next = s->devs;
	s->devs = d;
	return d;
}

/* The device a connection came in on, registered when first seen. */
static struct serve_dev *serve_dev_get(struct server *s,
				       struct ibv_context *verbs)
{
	for (struct serve_dev *d = s->devs; d; d = d->next) {
		if (d->verbs == verbs)
			return d;
	}
	return serve_dev_add(s, verbs);
}

/* Tracked from the connect request on, so teardown finds every id. */
static int serve_conn_track(struct server *s, struct rdma_cm_id *id)
{
	struct serve_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		pr_warn("out of memory for a connection");
		return -1;
	}
	c->id = id;
	c->next = s->conns;
	s->conns = c;
	return 0;
}

/* Only after its last event is acked: rdma_destroy_id() waits for that. */
static void serve_conn_destroy(struct server *s, struct rdma_cm_id *id)
{
	for (struct serve_conn **pp = &s->conns; *pp; pp = &(*pp)->next) {
		struct serve_conn *c = *pp;

		if (c->id == id) {
			*pp = c->next;
			free(c);
			break;
		}
	}
	if (id->qp)
		rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

/* The accept hands the client the rkey; its READs need nothing more. */
static int serve_accept(struct server *s, struct rdma_cm_id *id)
{
	struct baseline_hello hello = { 0 };
	struct rdma_conn_param param = {
		.private_data = &hello,
		.private_data_len = sizeof(hello),
	};
	struct serve_dev *d;

	if (serve_conn_track(s, id))
		return -1;
	d = serve_dev_get(s, id->verbs);
	if (!d || rc_qp_create(id, &d->res))
		return -1;
	hello.addr = htole64((uintptr_t)s->mem);
	hello.rkey = htole32(d->res.mr->rkey);
	hello.size = htole64(s->opts.size);
	param.responder_resources = d->res.responder_resources;
	param.initiator_depth = d->res.initiator_depth;
	if (rdma_accept(id, &param)) {
		pr_warn("rdma_accept: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Handles one CM event; -1 when serving cannot go on. */
static int serve_cm_event(struct server *s)
{
	struct rdma_cm_id *doomed = NULL;
	struct rdma_cm_event *ev;
	int ret = 0;

	if (rdma_get_cm_event(s->channel, &ev)) {
		pr_err("rdma_get_cm_event: %s", strerror(errno));
		return -1;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (serve_accept(s, ev->id)) {
			rdma_reject(ev->id, NULL, 0);
			doomed = ev->id;
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		/* The client is gone, or never quite came. */
		if (ev->id != s->listen_id)
			doomed = ev->id;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* Its MRs and QPs are dead: start over with a new serve. */
		pr_err("RDMA device %s removed",
		       ibv_get_device_name(ev->id->verbs->device));
		ret = -1;
		break;
	default:
		/* ESTABLISHED, TIMEWAIT_EXIT, ...: nothing to do. */
		break;
	}
	rdma_ack_cm_event(ev);
	if (doomed)
		serve_conn_destroy(s, doomed);
	return ret;
}

/*
 * rdma_get_devices() lists the contexts librdmacm hands to its ids, so
 * the region is registered on each up front, where an error is still
 * easy to see, and connections only look their device up.
 */
static int serve_rdma_setup(struct server *s)
{
	struct sockaddr_storage ss;
	struct ibv_context **list;
	socklen_t len;
	int n = 0;

	list = rdma_get_devices(&n);
	if (!list || !n) {
		pr_warn("no RDMA device (%s): serving TCP only",
			list ? "none found" : strerror(errno));
		if (list)
			rdma_free_devices(list);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (!serve_dev_add(s, list[i])) {
			rdma_free_devices(list);
			return -1;
		}
	}
	rdma_free_devices(list);

	if (ip_endpoint(s->opts.addr, s->opts.rdma_port, &ss, &len))
		return -1;
	s->channel = rdma_create_event_channel();
	if (!s->channel) {
		pr_err("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	if (rdma_create_id(s->channel, &s->listen_id, NULL, RDMA_PS_TCP)) {
		pr_err("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_bind_addr(s->listen_id, (struct sockaddr *)&ss) ||
	    rdma_listen(s->listen_id, 64)) {
		pr_err("RDMA listen on %s port %u: %s", s->opts.addr,
		       s->opts.rdma_port, strerror(errno));
		return -1;
	}
	return 0;
}

static int serve_tcp_setup(struct server *s)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	if (ip_endpoint(s->opts.addr, s->opts.tcp_port, &ss, &len))
		return -1;
	/* Non-blocking: poll() can wake for a client that then leaves. */
	s->tcp_fd = socket(ss.ss_family,
			   SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->tcp_fd < 0) {
		pr_err("socket: %s", strerror(errno));
		return -1;
	}
	/* A restart must not wait for the last run's TIME_WAIT. */
	setsockopt(s->tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->tcp_fd, (struct sockaddr *)&ss, len) ||
	    listen(s->tcp_fd, 64)) {
		pr_err("TCP listen on %s port %u: %s", s->opts.addr,
		       s->opts.tcp_port, strerror(errno));
		return -1;
	}
	return 0;
}

/* One client: page requests until it hangs up. */
static void *tcp_client_thread(void *arg)
{
	struct tcp_client *c = arg;
	const struct server *s = c->s;

	for (;;) {
		uint64_t wire, off;
		int ret = recv_all(c->fd, &wire, sizeof(wire));

		if (ret <= 0) {
			if (ret < 0)
				pr_warn("TCP client: %s", strerror(errno));
			break;
		}
		off = le64toh(wire);
		if (off % BASELINE_PAGE || off >= s->opts.size) {
			/* Hanging up is the only answer the protocol has. */
			pr_warn("TCP client asked for offset %" PRIu64
				", not a page of the %" PRIu64 "-byte region",
				off, s->opts.size);
			break;
		}
		if (send_all(c->fd, s->mem + off, BASELINE_PAGE)) {
			pr_warn("TCP client: %s", strerror(errno));
			break;
		}
	}
	atomic_store(&c->done, true);
	return NULL;
}

static void serve_tcp_accept(struct server *s)
{
	sigset_t block, old;
	struct tcp_client *c;
	int fd, err;

	fd = accept4(s->tcp_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			pr_warn("accept: %s", strerror(errno));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || set_nodelay(fd)) {
		pr_warn("TCP client: %s", c ? strerror(errno) : "out of memory");
		goto fail;
	}
	c->s = s;
	c->fd = fd;
	/* SIGTERM belongs to the main thread, whose poll() it must wake. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	err = pthread_create(&c->thread, NULL, tcp_client_thread, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pr_warn("pthread_create: %s", strerror(err));
		goto fail;
	}
	c->next = s->clients;
	s->clients = c;
	return;

fail:
	free(c);
	close(fd);
}

/* Joins the client threads that are done, or with @all every one. */
static void serve_tcp_reap(struct server *s, bool all)
{
	struct tcp_client **pp = &s->clients, *c;

	while ((c = *pp)) {
		if (!all && !atomic_load(&c->done)) {
			pp = &c->next;
			continue;
		}
		/* Wakes a thread blocked in recv() with an EOF. */
		if (all)
			shutdown(c->fd, SHUT_RDWR);
		pthread_join(c->thread, NULL);
		close(c->fd);
		*pp = c->next;
		free(c);
	}
}

/* Written under a temporary name, so a script never reads it half done. */
static int serve_tell_ready(const char *path)
{
	char tmp[PATH_MAX];
	int bad;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		pr_err("--ready %s: path too long", path);
		return -1;
	}
	f = fopen(tmp, "w");
	if (!f)
		goto fail;
	/* fclose() in any case; its error, a full disk, counts too. */
	bad = fprintf(f, "%d\n", (int)getpid()) < 0;
	bad |= fclose(f) != 0;
	if (!bad && !rename(tmp, path))
		return 0;
	bad = errno;
	unlink(tmp);
	errno = bad;
fail:
	pr_err("--ready %s: %s", path, strerror(errno));
	return -1;
}

static int serve_setup(struct server *s)
{
	struct sigaction sa = { .sa_handler = serve_on_signal };
	uint64_t *word;

	/* No SA_RESTART: the signal must cut poll() short. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* One left by an earlier run would announce us too early. */
	if (s->opts.ready)
		unlink(s->opts.ready);
	/* First, so that a bad --addr or a busy port costs no fill. */
	if (serve_tcp_setup(s))
		return -1;

	s->mem = mmap(NULL, s->opts.size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->mem == MAP_FAILED) {
		s->mem = NULL;
		pr_err("mmap of %" PRIu64 " bytes: %s", s->opts.size,
		       strerror(errno));
		return -1;
	}
	word = (uint64_t *)s->mem;
	for (uint64_t i = 0; i < s->opts.size / 8; i++)
		word[i] = htole64(baseline_pattern(i * 8));

	if (serve_rdma_setup(s))
		return -1;
	if (s->opts.ready) {
		if (serve_tell_ready(s->opts.ready))
			return -1;
		s->ready_told = true;
	}
	return 0;
}

static int serve_loop(struct server *s)
{
	while (!serve_stop) {
		struct pollfd pfd[2] = {
			{ .fd = s->tcp_fd, .events = POLLIN },
			/* poll() skips a negative fd: TCP only. */
			{ .fd = s->channel ? s->channel->fd : -1,
			  .events = POLLIN },
		};

		if (s->opts.until && !access(s->opts.until, F_OK))
			break;
		if (poll(pfd, 2, POLL_MS) < 0) {
			if (errno == EINTR)
				continue;
			pr_err("poll: %s", strerror(errno));
			return -1;
		}
		if (pfd[0].revents & POLLIN)
			serve_tcp_accept(s);
		if ((pfd[1].revents & POLLIN) && serve_cm_event(s))
			return -1;
		serve_tcp_reap(s, false);
	}
	return 0;
}

static void serve_teardown(struct server *s)
{
	if (s->tcp_fd >= 0)
		close(s->tcp_fd);
	serve_tcp_reap(s, true);
	while (s->conns) {
		/* Tells the client now rather than at its next READ. */
		rdma_disconnect(s->conns->id);
		serve_conn_destroy(s, s->conns->id);
	}
	if (s->listen_id)
		rdma_destroy_id(s->listen_id);
	while (s->devs) {
		struct serve_dev *d = s->devs;

		s->devs = d->next;
		verbs_res_fini(&d->res);
		free(d);
	}
	if (s->channel)
		rdma_destroy_event_channel(s->channel);
	if (s->mem)
		munmap(s->mem, s->opts.size);
	/* We no longer listen: say so to whoever waits for the next run. */
	if (s->ready_told)
		unlink(s->opts.ready);
}

static int cmd_serve(int argc, char **argv)
{
	struct server s = {
		.opts = {
			.addr = DEFAULT_ADDR,
			.rdma_port = DEFAULT_RDMA_PORT,
			.tcp_port = DEFAULT_TCP_PORT,
		},
		.tcp_fd = -1,
	};
	int ret = 1;

	if (serve_parse(argc, argv, &s.opts))
		return 1;
	if (!serve_setup(&s) && !serve_loop(&s))
		ret = 0;
	serve_teardown(&s);
	return ret;
}

/* ---- fault: host B ------------------------------------------------------ */

enum transport {
	TRANSPORT_RDMA,
	TRANSPORT_TCP,
	TRANSPORT_LOCAL,
};

static const char *const transport_names[] = {
	[TRANSPORT_RDMA] = "rdma",
	[TRANSPORT_TCP] = "tcp",
	[TRANSPORT_LOCAL] = "local",
};

struct fault_opts {
	const char *server;
	enum transport transport;
	bool have_transport;
	unsigned int port;	/* 0: the default of the transport */
	uint64_t size;
	bool random;
	unsigned int threads;
	unsigned int handlers;
	const char *name;
	const char *samples_dir;
	uint64_t seed;
};

struct fault;

/* A handler thread: its own connection and bounce buffer. */
struct handler {
	struct fault *f;
	pthread_t thread;
	uint64_t fetch_ns;	/* the last fetch's time on the wire */
	void *bounce;		/* where a page lands before UFFDIO_COPY */
	int tcp_fd;
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
	struct verbs_res res;
	bool connected;
	uint64_t raddr;
	uint32_t rkey;
};

struct fault {
	struct fault_opts opts;
	char name[MAX_NAME + 32];	/* + _tN + _overhead */
	uint8_t *region;
	size_t npages;
	size_t *order;		/* the pages in the order they are touched */
	uint64_t *samples;	/* ns of the touch of order[i] */
	/*
	 * Per page the handler installed: its time on the fault (from the
	 * read of the message, or the end of the fault before it in the same
	 * read, to the end of UFFDIO_COPY) minus its fetch's time on the
	 * wire (post to completion, or request sent to page received): what
	 * the handler itself costs a fault. Only handlers write them, each
	 * to the slot it takes from @handled.
	 */
	uint64_t *overhead;
	size_t handled;
	uint8_t *local;		/* --transport local: the pattern, to copy from */
	int uffd;
	int stop_fd;		/* eventfd: the handlers may stop */
	struct handler *h;	/* opts.handlers of them */
	pthread_barrier_t start;
};

/* A slice of the touch order for one thread. */
struct toucher {
	struct fault *f;
	pthread_t thread;
	size_t first;
	size_t count;
};

static void fault_usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " fault --server IP --transport rdma|tcp --size BYTES [--port P]\n"
		"       [--order seq|random] [--threads N] [--handlers N] [--name NAME]\n"
		"       [--samples-dir DIR] [--seed S]\n"
		"       " PROG " fault --transport local --size BYTES [--order ...]\n"
		"Touch BYTES of userfaultfd-registered memory that handler threads fill\n"
		"from 'serve' on IP (port %d for rdma, %d for tcp), or from a local copy,\n"
		"and print the latency and throughput as JSON lines.\n",
		DEFAULT_RDMA_PORT, DEFAULT_TCP_PORT);
}

static bool fault_parse_choice(const char *opt, const char *text,
			       const char *yes, const char *no, bool *val)
{
	if (!strcmp(text, yes) || !strcmp(text, no)) {
		*val = !strcmp(text, yes);
		return true;
	}
	pr_err("%s '%s' is neither %s nor %s", opt, text, yes, no);
	return false;
}

static bool fault_parse_name(const char *text)
{
	/* It names a file in --samples-dir, too. */
	if (*text && strlen(text) <= MAX_NAME && !strchr(text, '/'))
		return true;
	pr_err("--name '%s' must have 1 to %d characters and no '/'", text,
	       MAX_NAME);
	return false;
}

static bool fault_parse_one(int c, void *opts)
{
	struct fault_opts *o = opts;
	uint64_t val;

	switch (c) {
	case 'S':
		o->server = optarg;
		return true;
	case 'T':
		for (size_t i = 0; i < sizeof(transport_names) / sizeof(transport_names[0]); i++) {
			if (!strcmp(optarg, transport_names[i])) {
				o->transport = i;
				o->have_transport = true;
				return true;
			}
		}
		pr_err("--transport '%s' is not rdma, tcp or local", optarg);
		return false;
	case 'p':
		return parse_port("--port", optarg, &o->port);
	case 's':
		return parse_size(optarg, &o->size);
	case 'o':
		return fault_parse_choice("--order", optarg, "random", "seq",
					  &o->random);
	case 'n':
		if (!parse_num(optarg, false, MAX_THREADS, &val) || !val) {
			pr_err("--threads '%s' is not 1 to %d", optarg,
			       MAX_THREADS);
			return false;
		}
		o->threads = val;
		return true;
	case 'H':
		if (!parse_num(optarg, false, MAX_HANDLERS, &val) || !val) {
			pr_err("--handlers '%s' is not 1 to %d", optarg,
			       MAX_HANDLERS);
			return false;
		}
		o->handlers = val;
		return true;
	case 'N':
		o->name = optarg;
		return fault_parse_name(optarg);
	case 'D':
		o->samples_dir = optarg;
		return true;
	case 'e':
		if (parse_num(optarg, false, UINT64_MAX, &o->seed))
			return true;
		pr_err("--seed '%s' is not a number", optarg);
		return false;
	}
	return false;
}

static int fault_parse(int argc, char **argv, struct fault_opts *o)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 'S' },
		{ "transport", required_argument, NULL, 'T' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "order", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 'n' },
		{ "handlers", required_argument, NULL, 'H' },
		{ "name", required_argument, NULL, 'N' },
		{ "samples-dir", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};

	if (parse_options(argc, argv, "fault", longopts, fault_parse_one, o,
			  fault_usage))
		return -1;
	if (!o->have_transport || !o->size ||
	    !o->server != (o->transport == TRANSPORT_LOCAL)) {
		pr_err("fault: --transport and --size are required, and --server unless local (see fault --help)");
		return -1;
	}
	if (!o->port)
		o->port = o->transport == TRANSPORT_TCP ? DEFAULT_TCP_PORT :
							  DEFAULT_RDMA_PORT;
	return 0;
}

/* Asks serve for the page at @offset over TCP, into the bounce buffer. */
static void tcp_fetch(struct handler *h, uint64_t offset)
{
	uint64_t wire = htole64(offset), start = now_ns();
	int ret;

	if (send_all(h->tcp_fd, &wire, sizeof(wire)))
		die("sending the request for offset %" PRIu64 ": %s", offset,
		    strerror(errno));
	ret = recv_all(h->tcp_fd, h->bounce, BASELINE_PAGE);
	if (!ret)
		die("server hung up on offset %" PRIu64
		    " (is its --size smaller than ours?)", offset);
	if (ret < 0)
		die("receiving the page at offset %" PRIu64 ": %s", offset,
		    strerror(errno));
	h->fetch_ns = now_ns() - start;
}

/*
 * One signaled RDMA READ of the page at @offset into the bounce buffer,
 * then a busy poll: the handler has nothing else to do, and sleeping on
 * a completion channel would add a wakeup to every fault.
 */
static void rdma_fetch(struct handler *h, uint64_t offset)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)h->bounce,
		.length = BASELINE_PAGE,
		.lkey = h->res.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = offset,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {
			.remote_addr = h->raddr + offset,
			.rkey = h->rkey,
		},
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t start = now_ns();
	int n, err;

	err = ibv_post_send(h->id->qp, &wr, &bad);
	if (err)
		die("ibv_post_send: %s", strerror(err));
	do
		n = ibv_poll_cq(h->res.cq, 1, &wc);
	while (!n);
	if (n < 0)
		die("ibv_poll_cq failed");
	if (wc.status != IBV_WC_SUCCESS)
		die("RDMA READ at offset %" PRIu64 ": %s", offset,
		    ibv_wc_status_str(wc.status));
	h->fetch_ns = now_ns() - start;
}

/*
 * Fetches and installs the page that @address is in; the handler's work
 * on it began at @start (see struct fault's overhead).
 */
static void resolve_fault(struct handler *h, uint64_t address, uint64_t start)
{
	struct fault *f = h->f;
	uint64_t page = address & ~(uint64_t)(BASELINE_PAGE - 1);
	uint64_t offset = page - (uintptr_t)f->region;
	struct uffdio_copy copy = {
		.dst = page,
		.src = (uintptr_t)h->bounce,
		.len = BASELINE_PAGE,
	};
	size_t slot;

	if (f->opts.transport == TRANSPORT_TCP)
		tcp_fetch(h, offset);
	else if (f->opts.transport == TRANSPORT_RDMA)
		rdma_fetch(h, offset);
	else
		copy.src = (uintptr_t)f->local + offset;

	while (ioctl(f->uffd, UFFDIO_COPY, &copy)) {
		/* A second message for a page already in: nothing to do. */
		if (errno == EEXIST)
			return;
		/* The mm changed under the copy: the kernel asks to retry. */
		if (errno != EAGAIN)
			die("UFFDIO_COPY at offset %" PRIu64 ": %s", offset,
			    strerror(errno));
		copy.copy = 0;
	}
	slot = __atomic_fetch_add(&f->handled, 1, __ATOMIC_RELAXED);
	if (slot < f->npages)
		f->overhead[slot] = now_ns() - start - h->fetch_ns;
}

/*
 * Reads and resolves every fault queued on the (non-blocking) uffd. With
 * several handlers, each read takes messages no other handler gets; two
 * messages for one page (two threads touching it) are resolved once
 * (UFFDIO_COPY says EEXIST to the second).
 */
static void handle_faults(struct handler *h)
{
	struct fault *f = h->f;
	/* One at a time with several handlers: a batch would queue behind one. */
	struct uffd_msg msgs[16];
	size_t batch = f->opts.handlers > 1 ? sizeof(msgs[0]) : sizeof(msgs);

	for (;;) {
		uint64_t start = now_ns();
		ssize_t n = read(f->uffd, msgs, batch);

		if (n < 0) {
			if (errno == EAGAIN)
				return;
			if (errno == EINTR)
				continue;
			die("reading the userfaultfd: %s", strerror(errno));
		}
		for (size_t i = 0; i < n / sizeof(msgs[0]); i++) {
			if (msgs[i].event != UFFD_EVENT_PAGEFAULT)
				die("unexpected userfaultfd event %u",
				    msgs[i].event);
			resolve_fault(h, msgs[i].arg.pagefault.address, start);
			start = now_ns();
		}
	}
}

/* A handler thread: one, as in QEMU's post-copy, or one of several. */
static void *handler_thread(void *arg)
{
	struct handler *h = arg;
	struct fault *f = h->f;
	struct pollfd pfd[2] = {
		{ .fd = f->uffd, .events = POLLIN },
		{ .fd = f->stop_fd, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (pfd[0].revents & (POLLERR | POLLHUP))
			die("userfaultfd poll error");
		if (pfd[0].revents & POLLIN)
			handle_faults(h);
		else if (pfd[1].revents)
			return NULL;
	}
}

/* Touches each page of its slice once, timing the first access. */
static void *touch_thread(void *arg)
{
	struct toucher *t = arg;
	struct fault *f = t->f;

	pthread_barrier_wait(&f->start);
	for (size_t i = t->first; i < t->first + t->count; i++) {
		uint64_t *word = (uint64_t *)(f->region +
					      f->order[i] * BASELINE_PAGE);
		uint64_t start = now_ns();

		/* A load the compiler may neither drop nor move out of the timing. */
		__atomic_load_n(word, __ATOMIC_SEQ_CST);
		f->samples[i] = now_ns() - start;
	}
	return NULL;
}

/* xorshift64*: reproducible from --seed, and plenty for a shuffle. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Fisher-Yates; the modulo's bias is nil next to 2^64 for any region. */
static void shuffle(size_t *order, size_t n, uint64_t seed)
{
	uint64_t state = seed + 0x853c49e6748fea9bULL;

	/* xorshift never leaves 0. */
	if (!state)
		state = 1;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = rng_next(&state) % (i + 1);
		size_t tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
}

static int fault_tcp_connect(struct handler *h)
{
	const struct fault_opts *o = &h->f->opts;
	struct sockaddr_storage ss;
	socklen_t len;

	if (ip_endpoint(o->server, o->port, &ss, &len))
		return -1;
	h->tcp_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->tcp_fd < 0 || set_nodelay(h->tcp_fd) ||
	    connect(h->tcp_fd, (struct sockaddr *)&ss, len)) {
		pr_err("TCP connect to %s port %u: %s", o->server, o->port,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* Waits for event @expected; NULL (reported and acked) for another. */
static struct rdma_cm_event *fault_cm_expect(struct handler *h,
					     enum rdma_cm_event_type expected,
					     const char *what)
{
	const struct fault_opts *o = &h->f->opts;
	struct rdma_cm_event *ev = cm_next_event(h->channel, CM_TIMEOUT_MS);

	if (!ev) {
		pr_err("%s %s: %s", what, o->server, strerror(errno));
		return NULL;
	}
	if (ev->event == expected)
		return ev;
	pr_err("%s %s port %u: %s (status %d)", what, o->server, o->port,
	       rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	return NULL;
}

/*
 * One step of the connection: @err is what the call that starts it
 * (named @call) returned, then comes event @expected or a failure.
 */
static int fault_cm_step(struct handler *h, int err, const char *call,
			 enum rdma_cm_event_type expected)
{
	struct rdma_cm_event *ev;

	if (err) {
		pr_err("%s: %s", call, strerror(errno));
		return -1;
	}
	ev = fault_cm_expect(h, expected, call);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

/* Address and route: afterwards the id knows its device. */
static int fault_rdma_resolve(struct handler *h)
{
	const struct fault_opts *o = &h->f->opts;
	struct sockaddr_storage ss;
	socklen_t len;

	if (ip_endpoint(o->server, o->port, &ss, &len))
		return -1;
	h->channel = rdma_create_event_channel();
	if (!h->channel) {
		pr_err("no RDMA device (rdma_create_event_channel: %s)",
		       strerror(errno));
		return -1;
	}
	if (rdma_create_id(h->channel, &h->id, NULL, RDMA_PS_TCP)) {
		pr_err("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (fault_cm_step(h, rdma_resolve_addr(h->id, NULL,
					       (struct sockaddr *)&ss,
					       CM_TIMEOUT_MS),
			  "rdma_resolve_addr", RDMA_CM_EVENT_ADDR_RESOLVED))
		return -1;
	return fault_cm_step(h, rdma_resolve_route(h->id, CM_TIMEOUT_MS),
			     "rdma_resolve_route", RDMA_CM_EVENT_ROUTE_RESOLVED);
}

/* Takes the region's address and rkey from the accept. */
static int fault_rdma_hello(struct handler *h, const struct rdma_cm_event *ev)
{
	const struct fault_opts *o = &h->f->opts;
	const struct rdma_conn_param *conn = &ev->param.conn;
	struct baseline_hello hello;
	uint64_t size;

	/* IB pads private data: the length is only a floor. */
	if (!conn->private_data || conn->private_data_len < sizeof(hello)) {
		pr_err("%s accepted without the %zu-byte hello: not a serve?",
		       o->server, sizeof(hello));
		return -1;
	}
	memcpy(&hello, conn->private_data, sizeof(hello));
	size = le64toh(hello.size);
	if (size < o->size) {
		pr_err("%s serves %" PRIu64 " bytes, fewer than --size %" PRIu64,
		       o->server, size, o->size);
		return -1;
	}
	h->raddr = le64toh(hello.addr);
	h->rkey = le32toh(hello.rkey);
	return 0;
}

static int fault_rdma_connect(struct handler *h)
{
	struct rdma_conn_param param = {
		.retry_count = RC_RETRIES,
		.rnr_retry_count = RC_RETRIES,
	};
	struct rdma_cm_event *ev;
	int ret;

	if (fault_rdma_resolve(h) ||
	    verbs_res_init(&h->res, h->id->verbs, h->bounce, BASELINE_PAGE,
			   IBV_ACCESS_LOCAL_WRITE) ||
	    rc_qp_create(h->id, &h->res))
		return -1;
	param.initiator_depth = h->res.initiator_depth;
	param.responder_resources = h->res.responder_resources;
	if (rdma_connect(h->id, &param)) {
		pr_err("rdma_connect: %s", strerror(errno));
		return -1;
	}
	ev = fault_cm_expect(h, RDMA_CM_EVENT_ESTABLISHED, "connecting to");
	if (!ev)
		return -1;
	h->connected = true;
	/* The private data lives in the event: read it before the ack. */
	ret = fault_rdma_hello(h, ev);
	rdma_ack_cm_event(ev);
	return ret;
}

/*
 * Without CAP_SYS_PTRACE and with vm.unprivileged_userfaultfd at 0 only a
 * user-mode-only uffd is allowed, which is all the touches need.
 */
static int uffd_open(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	int fd = syscall(SYS_userfaultfd, flags);

#ifdef UFFD_USER_MODE_ONLY
	if (fd < 0 && errno == EPERM)
		fd = syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
#endif
	return fd;
}

static int fault_uffd_setup(struct fault *f)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = {
			.start = (uintptr_t)f->region,
			.len = f->opts.size,
		},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	f->uffd = uffd_open();
	if (f->uffd < 0) {
		pr_err("userfaultfd: %s", strerror(errno));
		return -1;
	}
	if (ioctl(f->uffd, UFFDIO_API, &api)) {
		pr_err("UFFDIO_API: %s", strerror(errno));
		return -1;
	}
	if (ioctl(f->uffd, UFFDIO_REGISTER, &reg)) {
		pr_err("UFFDIO_REGISTER: %s", strerror(errno));
		return -1;
	}
	if (!(reg.ioctls & (1ULL << _UFFDIO_COPY))) {
		pr_err("UFFDIO_COPY is not available on the region");
		return -1;
	}
	return 0;
}

/* The pages in touch order: in place, or one shuffle of them all. */
static int fault_plan(struct fault *f)
{
	f->npages = f->opts.size / BASELINE_PAGE;
	f->order = calloc(f->npages, sizeof(*f->order));
	f->samples = calloc(f->npages, sizeof(*f->samples));
	f->overhead = calloc(f->npages, sizeof(*f->overhead));
	if (!f->order || !f->samples || !f->overhead) {
		pr_err("out of memory for %zu pages of samples", f->npages);
		return -1;
	}
	for (size_t i = 0; i < f->npages; i++)
		f->order[i] = i;
	if (f->opts.random)
		shuffle(f->order, f->npages, f->opts.seed);
	return 0;
}

static int fault_setup(struct fault *f)
{
	/* Made and checked now, not found wanting after the whole run. */
	if (f->opts.samples_dir && ((mkdir(f->opts.samples_dir, 0755) &&
				     errno != EEXIST) ||
				    access(f->opts.samples_dir, W_OK))) {
		pr_err("--samples-dir %s: %s", f->opts.samples_dir,
		       strerror(errno));
		return -1;
	}
	if (sysconf(_SC_PAGESIZE) != BASELINE_PAGE) {
		pr_err("the page size is %ld, not %lu", sysconf(_SC_PAGESIZE),
		       BASELINE_PAGE);
		return -1;
	}
	if (fault_plan(f))
		return -1;
	f->h = calloc(f->opts.handlers, sizeof(*f->h));
	if (!f->h) {
		pr_err("out of memory for %u handlers", f->opts.handlers);
		return -1;
	}
	for (unsigned int i = 0; i < f->opts.handlers; i++) {
		struct handler *h = &f->h[i];

		h->f = f;
		h->tcp_fd = -1;
		h->bounce = aligned_alloc(BASELINE_PAGE, BASELINE_PAGE);
		if (!h->bounce) {
			pr_err("out of memory for the bounce buffers");
			return -1;
		}
		if (f->opts.transport == TRANSPORT_LOCAL)
			continue;
		if (f->opts.transport == TRANSPORT_TCP ? fault_tcp_connect(h) :
							 fault_rdma_connect(h))
			return -1;
	}
	if (f->opts.transport == TRANSPORT_LOCAL) {
		f->local = mmap(NULL, f->opts.size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (f->local == MAP_FAILED) {
			f->local = NULL;
			pr_err("mmap of %" PRIu64 " bytes for the local copy: %s",
			       f->opts.size, strerror(errno));
			return -1;
		}
		for (uint64_t i = 0; i < f->opts.size / 8; i++)
			((uint64_t *)f->local)[i] = htole64(baseline_pattern(i * 8));
	}

	f->region = mmap(NULL, f->opts.size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (f->region == MAP_FAILED) {
		f->region = NULL;
		pr_err("mmap of %" PRIu64 " bytes: %s", f->opts.size,
		       strerror(errno));
		return -1;
	}
	f->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (f->stop_fd < 0) {
		pr_err("eventfd: %s", strerror(errno));
		return -1;
	}
	return fault_uffd_setup(f);
}

/*
 * The touch phase: N threads start together at a barrier, and its wall
 * time is the throughput's. Thread failures end the process (die()):
 * a toucher left waiting in a fault has no other way out.
 */
static double fault_touch(struct fault *f)
{
	unsigned int n = f->opts.threads;
	struct toucher *t = calloc(n, sizeof(*t));
	unsigned int started = 0;
	uint64_t start, end;
	int err;

	if (!t)
		die("out of memory for %u threads", n);
	err = pthread_barrier_init(&f->start, NULL, n + 1);
	for (; started < f->opts.handlers && !err; started++)
		err = pthread_create(&f->h[started].thread, NULL, handler_thread,
				     &f->h[started]);
	for (unsigned int i = 0; i < n && !err; i++) {
		t[i].f = f;
		t[i].first = f->npages * i / n;
		t[i].count = f->npages * (i + 1) / n - t[i].first;
		err = pthread_create(&t[i].thread, NULL, touch_thread, &t[i]);
	}
	if (err)
		die("starting threads: %s", strerror(err));

	pthread_barrier_wait(&f->start);
	start = now_ns();
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i].thread, NULL);
	end = now_ns();

	/* Every handler sees it: nobody reads it. */
	if (eventfd_write(f->stop_fd, 1))
		die("eventfd_write: %s", strerror(errno));
	for (unsigned int i = 0; i < started; i++)
		pthread_join(f->h[i].thread, NULL);
	pthread_barrier_destroy(&f->start);
	free(t);
	return (end - start) / 1e9;
}

/*
 * Every byte against the pattern. The uffd is unregistered first, so a
 * page the handler never installed reads as zeroes instead of hanging.
 */
static int fault_verify(struct fault *f)
{
	struct uffdio_range range = {
		.start = (uintptr_t)f->region,
		.len = f->opts.size,
	};
	const uint64_t *word = (const uint64_t *)f->region;

	if (ioctl(f->uffd, UFFDIO_UNREGISTER, &range)) {
		pr_err("UFFDIO_UNREGISTER: %s", strerror(errno));
		return -1;
	}
	for (uint64_t i = 0; i < f->opts.size / 8; i++) {
		uint64_t got = le64toh(word[i]);
		uint64_t want = baseline_pattern(i * 8);

		if (got != want) {
			pr_err("mismatch at offset %" PRIu64 " (page %" PRIu64
			       "): 0x%016" PRIx64 ", want 0x%016" PRIx64,
			       i * 8, i * 8 / BASELINE_PAGE, got, want);
			return -1;
		}
	}
	return 0;
}

static void fault_teardown(struct fault *f)
{
	if (f->uffd >= 0)
		close(f->uffd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	if (f->region)
		munmap(f->region, f->opts.size);
	if (f->local)
		munmap(f->local, f->opts.size);
	for (unsigned int i = 0; f->h && i < f->opts.handlers; i++) {
		struct handler *h = &f->h[i];

		if (h->tcp_fd >= 0)
			close(h->tcp_fd);
		/* Lets serve drop the connection now instead of at a timeout. */
		if (h->connected)
			rdma_disconnect(h->id);
		if (h->id && h->id->qp)
			rdma_destroy_qp(h->id);
		verbs_res_fini(&h->res);
		if (h->id)
			rdma_destroy_id(h->id);
		if (h->channel)
			rdma_destroy_event_channel(h->channel);
		free(h->bounce);
	}
	free(f->h);
	free(f->order);
	free(f->samples);
	free(f->overhead);
}

/*
 * uffd_<transport>_<order>, then _t<N> when N touching threads are > 1
 * and _h<M> when M handler threads are.
 */
static void fault_default_name(struct fault *f)
{
	int len = snprintf(f->name, sizeof(f->name), "uffd_%s_%s",
			   transport_names[f->opts.transport],
			   f->opts.random ? "random" : "seq");

	if (f->opts.threads > 1)
		len += snprintf(f->name + len, sizeof(f->name) - len, "_t%u",
				f->opts.threads);
	if (f->opts.handlers > 1)
		snprintf(f->name + len, sizeof(f->name) - len, "_h%u",
			 f->opts.handlers);
}

static int cmd_fault(int argc, char **argv)
{
	struct fault f = {
		.opts = { .threads = 1, .handlers = 1, .seed = DEFAULT_SEED },
		.uffd = -1,
		.stop_fd = -1,
	};
	double seconds;
	int ret = 1;

	if (fault_parse(argc, argv, &f.opts))
		return 1;
	if (f.opts.name)
		snprintf(f.name, sizeof(f.name), "%s", f.opts.name);
	else
		fault_default_name(&f);

	if (!fault_setup(&f)) {
		seconds = fault_touch(&f);
		if (!fault_verify(&f)) {
			bench_report_latency(f.name, f.samples, f.npages,
					     f.opts.samples_dir);
			bench_report_throughput(f.name, f.opts.size, seconds);
			/* uffd_rdma_random_overhead: the handler's own cost. */
			strcat(f.name, "_overhead");
			bench_report_latency(f.name, f.overhead, f.handled,
					     f.opts.samples_dir);
			ret = 0;
		}
	}
	fault_teardown(&f);
	return ret;
}

/* floor */

static void floor_usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " floor --size BYTES [--order seq|random] [--seed S]\n"
		"       [--samples-dir DIR]\n"
		"Time the first touch of every page of a fresh shared memfd (a read)\n"
		"and of private anonymous memory (a write), without userfaultfd, and\n"
		"print their latencies as JSON lines (floor_memfd_ORDER, floor_anon_ORDER).\n");
}

/*
 * Maps @size bytes, a shared memfd or private anonymous memory, with
 * 4 KiB pages; NULL (reported) on failure.
 */
static uint8_t *floor_map(uint64_t size, bool memfd)
{
	int fd = -1, flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *p;

	if (memfd) {
		fd = memfd_create("rpage_floor", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, size)) {
			pr_err("memfd of %" PRIu64 " bytes: %s", size,
			       strerror(errno));
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		flags = MAP_SHARED;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (fd >= 0)
		close(fd);
	if (p == MAP_FAILED) {
		pr_err("mmap of %" PRIu64 " bytes: %s", size, strerror(errno));
		return NULL;
	}
	/* A 2 MiB page would make one touch in 512 a fault: 4 KiB ones. */
	if (madvise(p, size, MADV_NOHUGEPAGE)) {
		pr_err("MADV_NOHUGEPAGE: %s", strerror(errno));
		munmap(p, size);
		return NULL;
	}
	return p;
}

/*
 * Touches every page of a fresh mapping in @order, each touch timed into
 * @ns: a read of a memfd's, a write of anonymous memory's (the page's
 * index + 1, in its first word). Then checks every byte: zeros but that
 * word. 0, or -1 (reported).
 */
static int floor_touch(const char *name, bool memfd, uint64_t size,
		       const size_t *order, uint64_t *ns)
{
	size_t npages = size / BASELINE_PAGE;
	uint8_t *region = floor_map(size, memfd);
	int ret = 0;

	if (!region)
		return -1;
	for (size_t i = 0; i < npages; i++) {
		uint64_t *word = (uint64_t *)(region + order[i] * BASELINE_PAGE);
		uint64_t start = now_ns();

		if (memfd)
			__atomic_load_n(word, __ATOMIC_SEQ_CST);
		else
			__atomic_store_n(word, order[i] + 1, __ATOMIC_SEQ_CST);
		ns[i] = now_ns() - start;
	}
	for (uint64_t i = 0; i < size / 8 && !ret; i++) {
		uint64_t got = ((const uint64_t *)region)[i];
		uint64_t want = 0;

		if (!memfd && !(i * 8 % BASELINE_PAGE))
			want = i * 8 / BASELINE_PAGE + 1;
		if (got != want) {
			pr_err("%s: offset %" PRIu64 " holds 0x%016" PRIx64
			       ", want 0x%016" PRIx64, name, i * 8, got, want);
			ret = -1;
		}
	}
	munmap(region, size);
	return ret;
}

static int cmd_floor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "order", required_argument, NULL, 'o' },
		{ "samples-dir", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	/* fault's options, of which floor takes four. */
	struct fault_opts o = { .seed = DEFAULT_SEED };
	size_t npages, *order = NULL;
	uint64_t *ns = NULL;
	char name[64];
	int ret = -1;

	if (parse_options(argc, argv, "floor", longopts, fault_parse_one, &o,
			  floor_usage))
		return 1;
	if (!o.size || o.size % BASELINE_PAGE) {
		pr_err("floor: --size must be a multiple of %lu (see floor --help)",
		       BASELINE_PAGE);
		return 1;
	}
	if (sysconf(_SC_PAGESIZE) != BASELINE_PAGE) {
		pr_err("the page size is %ld, not %lu", sysconf(_SC_PAGESIZE),
		       BASELINE_PAGE);
		return 1;
	}
	if (o.samples_dir && mkdir(o.samples_dir, 0755) && errno != EEXIST) {
		pr_err("--samples-dir %s: %s", o.samples_dir, strerror(errno));
		return 1;
	}
	npages = o.size / BASELINE_PAGE;
	order = calloc(npages, sizeof(*order));
	ns = calloc(npages, sizeof(*ns));
	if (!order || !ns) {
		pr_err("out of memory for %zu pages", npages);
		goto out;
	}
	for (size_t i = 0; i < npages; i++)
		order[i] = i;
	if (o.random)
		shuffle(order, npages, o.seed);
	for (int memfd = 1; memfd >= 0; memfd--) {
		snprintf(name, sizeof(name), "floor_%s_%s",
			 memfd ? "memfd" : "anon", o.random ? "random" : "seq");
		if (floor_touch(name, memfd, o.size, order, ns))
			goto out;
		bench_report_latency(name, ns, npages, o.samples_dir);
	}
	ret = 0;
out:
	free(order);
	free(ns);
	return ret ? 1 : 0;
}

static void usage(FILE *out)
{
	serve_usage(out);
	fputc('\n', out);
	fault_usage(out);
	fputc('\n', out);
	floor_usage(out);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "fault"))
		return cmd_fault(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "floor"))
		return cmd_floor(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	pr_err("the first argument must be serve, fault or floor (see --help)");
	return 1;
}
