// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: the objects that configure rpage.ko and report its state:
 * `device` (the RDMA devices it is attached to), `endpoint` (the
 * addresses it listens on), `peer` (the hosts it connects to) and
 * `version` (the library's and the module's).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

static const char *module_version_path = "/sys/module/rpage/version";

static void read_module_version(char *buf, size_t len)
{
	FILE *f = fopen(module_version_path, "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

int cmd_version(int argc, char **argv)
{
	struct json_writer jw;
	struct rpage_api api;
	char modver[64];
	char features[32], ioctls[32];
	int fd;

	if (argc > 0 && matches(argv[0], "help")) {
		puts("Usage: rpagectl version [ show ]");
		return 0;
	}
	if (argc > 0 && !matches(argv[0], "show"))
		return usage_error("version: unknown command '%s'", argv[0]);
	if (argc > 1)
		return usage_error("version show: unexpected argument '%s'", argv[1]);

	/*
	 * Without the module (or with one that refuses the handshake) the
	 * library's version is still printed, as the first thing an
	 * operator checks; the module is then null, and the status 1.
	 */
	fd = open_device(&api);
	if (fd >= 0) {
		close(fd);
		read_module_version(modver, sizeof(modver));
		snprintf(features, sizeof(features), "0x%" PRIx64,
			 (uint64_t)api.features);
		snprintf(ioctls, sizeof(ioctls), "0x%" PRIx64, (uint64_t)api.ioctls);
	}

	if (!opt_json) {
		printf("library %s API %d\n", rpage_lib_version(), RPAGE_API);
		if (fd >= 0)
			printf("module %s API %u features %s ioctls %s\n", modver,
			       api.api, features, ioctls);
		return fd < 0;
	}
	json_init(&jw, stdout, opt_pretty);
	json_open_object(&jw, NULL);
	json_open_object(&jw, "library");
	json_string(&jw, "version", rpage_lib_version());
	json_uint(&jw, "api", RPAGE_API);
	json_close_object(&jw);
	if (fd >= 0) {
		json_open_object(&jw, "module");
		json_string(&jw, "version", modver);
		json_uint(&jw, "api", api.api);
		json_string(&jw, "features", features);
		json_string(&jw, "ioctls", ioctls);
		json_close_object(&jw);
	} else {
		json_null(&jw, "module");
	}
	json_close_object(&jw);
	json_finish(&jw);
	return fd < 0;
}

/* A port number from the command line: 1..65535; 0 or 2 (usage). */
static int parse_port(const char *what, const char *text, __u16 *port)
{
	unsigned long val;
	char *end;

	errno = 0;
	val = strtoul(text, &end, 10);
	if (!isdigit((unsigned char)text[0]) || errno || *end || !val ||
	    val > 65535)
		return usage_error("%s: port '%s' is not a number from 1 to 65535",
				   what, text);
	*port = (__u16)val;
	return 0;
}

/* An address from the command line; 0 or 2 (usage). */
static int parse_addr(const char *what, const char *text, __u16 port,
		      struct rpage_addr *addr)
{
	int ret = rpage_addr_parse(text, port, addr);

	if (ret == -ENODEV)
		return usage_error("%s: '%s': no network interface with that name",
				   what, text);
	if (ret < 0 && strchr(text, '%')) {
		char host[RPAGE_ADDR_STRLEN];
		struct rpage_addr unscoped;

		snprintf(host, sizeof(host), "%.*s", (int)strcspn(text, "%"), text);
		if (!rpage_addr_parse(host, port, &unscoped) &&
		    (unscoped.family != AF_INET6 ||
		     !(IN6_IS_ADDR_LINKLOCAL(unscoped.addr) ||
		       IN6_IS_ADDR_MC_LINKLOCAL(unscoped.addr))))
			return usage_error("%s: '%s': only a link-local IPv6 address %s",
					   what, text, "takes a %INTERFACE");
		if (!rpage_addr_parse(host, port, &unscoped))
			return usage_error("%s: '%s': bad interface name or index after '%%'",
					   what, text);
	}
	if (ret < 0)
		return usage_error("%s: '%s' is not an IPv4 or IPv6 address",
				   what, text);
	return 0;
}

static void format_addr(const struct rpage_addr *addr, char *buf, size_t len)
{
	/* A loop peer has none. */
	if (!addr->family)
		snprintf(buf, len, "-");
	else if (rpage_addr_format(addr, buf, len) < 0)
		snprintf(buf, len, "family-%u", addr->family);
}

/* An errno value as its name ("ETIMEDOUT"), or its number. */
static void format_errno(__u32 raw, char *buf, size_t len)
{
	int err = (int)raw;

	/* The value is positive; take a negative one as meant the same. */
	if (err < 0 && err != INT_MIN)
		err = -err;
	snprintf(buf, len, "%d", err);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	if (err > 0) {
		const char *name = strerrorname_np(err);

		if (name)
			snprintf(buf, len, "%s", name);
	}
#endif
}

/* A name of the library's, or "unknown" for a value it does not know. */
static const char *known(const char *name)
{
	return name ? name : "unknown";
}

/* A module without RPAGE_FEATURE_TRANSPORT reports 0: it has only RDMA. */
static const char *peer_transport(__u32 transport)
{
	return transport == RPAGE_TRANSPORT_AUTO ? "rdma" :
	       known(rpage_transport_name(transport));
}

static void format_guid(char *buf, size_t len, uint64_t guid)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48) & 0xffff,
		 (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
}

static int device_show(int fd)
{
	struct rpage_device_info *infos;
	struct json_writer jw, *jwp;
	void *buf = NULL;
	char guid[32];
	int count;

	count = rpage_list_all(fd, rpage_device_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("device show", NULL, -count, NULL);

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		struct rpage_device_info *info = &infos[i];

		info->name[sizeof(info->name) - 1] = '\0';
		format_guid(guid, sizeof(guid), info->node_guid);
		jwp = opt_json ? &jw : NULL;
		/* "INDEX: NAME ...", as rdma(8) and ip(8) start a line. */
		if (jwp)
			json_open_object(jwp, NULL);
		print_u64(jwp, "index", NULL, info->index);
		if (!jwp)
			printf(": ");
		print_str(jwp, "name", NULL, info->name);
		print_str(jwp, "node_guid", "node_guid", guid);
		print_u64(jwp, "ports", "ports", info->port_count);
		if (jwp)
			json_close_object(jwp);
		else
			putchar('\n');
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

int cmd_device(int argc, char **argv)
{
	int fd, ret;

	if (argc > 0 && matches(argv[0], "help")) {
		puts("Usage: rpagectl device [ show ]");
		return 0;
	}
	if (argc > 0 && !matches(argv[0], "show"))
		return usage_error("device: unknown command '%s'", argv[0]);
	if (argc > 1)
		return usage_error("device show: unexpected argument '%s'", argv[1]);

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = device_show(fd);
	close(fd);
	return ret;
}

enum { CMD_ADD, CMD_DEL, CMD_SHOW, CMD_HELP };

static const char *const config_commands[] = {
	[CMD_ADD] = "add", [CMD_DEL] = "del", [CMD_SHOW] = "show",
	[CMD_HELP] = "help", NULL,
};

static void endpoint_usage(void)
{
	puts("Usage: rpagectl endpoint add ADDR [ port PORT ] [ transport { auto | rdma | tcp } ]\n"
	     "       rpagectl endpoint del ADDR [ port PORT ]\n"
	     "       rpagectl endpoint [ show ]\n"
	     "ADDR := { IPV4-ADDRESS | IPV6-ADDRESS[%INTERFACE] }\n"
	     "        (0.0.0.0 or :: listens on every RDMA device and interface)\n"
	     "PORT := 1..65535 (default 7471)\n"
	     "transport: auto (the default) listens over TCP, and over RDMA too if\n"
	     "           the address has an RDMA device; rdma or tcp: only that one");
}

/*
 * What an endpoint listens with, from its bits (1 << RPAGE_TRANSPORT_*):
 * "rdma", "tcp" or "rdma,tcp". A module without RPAGE_FEATURE_TCP
 * reports none: it listens over RDMA only.
 */
static const char *endpoint_transports(__u32 bits)
{
	bool rdma = bits & (1U << RPAGE_TRANSPORT_RDMA);
	bool tcp = bits & (1U << RPAGE_TRANSPORT_TCP);

	if (rdma && tcp)
		return "rdma,tcp";
	if (tcp)
		return "tcp";
	if (rdma || !bits)
		return "rdma";
	return "unknown";
}

static void endpoint_print(struct json_writer *jw,
			   const struct rpage_endpoint_info *info)
{
	char addr[RPAGE_ADDR_STRLEN];

	format_addr(&info->addr, addr, sizeof(addr));
	if (jw)
		json_open_object(jw, NULL);
	print_str(jw, "addr", NULL, addr);
	print_u64(jw, "port", "port", info->addr.port);
	print_str(jw, "state", "state", known(rpage_endpoint_state_name(info->state)));
	print_str(jw, "transport", "transport",
		  endpoint_transports(info->transport));
	print_u64(jw, "accepted", "accepted", info->accepted);
	print_u64(jw, "rejected_unknown", "rejected-unknown",
		  info->rejected_unknown);
	print_u64(jw, "rejected_version", "rejected-version",
		  info->rejected_version);
	print_u64(jw, "rejected_other", "rejected-other", info->rejected_other);
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

static int endpoint_show(int fd)
{
	struct rpage_endpoint_info *infos;
	void *buf = NULL;
	struct json_writer jw;
	int count;

	count = rpage_list_all(fd, rpage_endpoint_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("endpoint show", NULL, -count, NULL);

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++)
		endpoint_print(opt_json ? &jw : NULL, &infos[i]);
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

static int parse_transport(const char *subject, const char *text, __u32 *out);

/* endpoint add ADDR [ port PORT ] [ transport T ]; endpoint del ADDR [ port PORT ] */
static int endpoint_change(int cmd, int argc, char **argv)
{
	const char *what = cmd == CMD_ADD ? "endpoint add" : "endpoint del";
	const char *port_text = NULL, *transport_text = NULL;
	__u32 transport = RPAGE_TRANSPORT_AUTO;
	struct rpage_endpoint ep;
	__u16 port = RPAGE_DEFAULT_PORT;
	struct rpage_api api;
	char subject[128];
	const char *words = NULL;
	char buf[96];
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing ADDR", what);
	for (int i = 1; i < argc; i += 2) {
		const char **slot;

		if (matches(argv[i], "port"))
			slot = &port_text;
		else if (cmd == CMD_ADD && matches(argv[i], "transport"))
			slot = &transport_text;
		else
			return usage_error("%s: unexpected argument '%s'", what, argv[i]);
		if (*slot)
			return usage_error("%s: '%s' given twice", what, argv[i]);
		if (i + 1 >= argc)
			return usage_error("%s: '%s' needs a value", what, argv[i]);
		*slot = argv[i + 1];
	}
	if (port_text) {
		ret = parse_port(what, port_text, &port);
		if (ret)
			return ret;
	}
	if (transport_text) {
		ret = parse_transport(what, transport_text, &transport);
		if (ret)
			return ret;
		if (transport == RPAGE_TRANSPORT_LOOP)
			return usage_error("%s: an endpoint listens over rdma or tcp, not loop",
					   what);
	}
	memset(&ep, 0, sizeof(ep));
	ep.transport = transport;
	ret = parse_addr(what, argv[0], port, &ep.addr);
	if (ret)
		return ret;
	if (port_text)
		snprintf(subject, sizeof(subject), "%s port %u", argv[0], port);
	else
		snprintf(subject, sizeof(subject), "%s", argv[0]);

	fd = open_device(&api);
	if (fd < 0)
		return 1;
	if (transport != RPAGE_TRANSPORT_AUTO && !(api.features & RPAGE_FEATURE_TCP)) {
		close(fd);
		return fail_cmd(what, subject, EOPNOTSUPP,
				"this rpage.ko has no choice of transport for endpoints");
	}
	ret = cmd == CMD_ADD ? rpage_endpoint_add(fd, &ep) : rpage_endpoint_del(fd, &ep);
	close(fd);
	if (!ret)
		return 0;

	switch (-ret) {
	case EEXIST:
		words = "an endpoint on this address and port already exists";
		break;
	case ENOENT:
		words = "no such endpoint";
		break;
	case ENODEV:
	case EADDRNOTAVAIL:
		words = transport == RPAGE_TRANSPORT_RDMA ?
			"no RDMA device has this address" :
			"this host has no such address";
		break;
	case EADDRINUSE:
		snprintf(buf, sizeof(buf), "port %u is already in use", port);
		words = buf;
		break;
	case EINVAL:
		words = "the module refused this address";
		break;
	}
	return fail_cmd(what, subject, -ret, words);
}

int cmd_endpoint(int argc, char **argv)
{
	int cmd = argc > 0 ? find_command(argv[0], config_commands) : CMD_SHOW;
	int fd, ret;

	if (cmd < 0)
		return usage_error("endpoint: unknown command '%s'", argv[0]);
	switch (cmd) {
	case CMD_HELP:
		endpoint_usage();
		return 0;
	case CMD_ADD:
	case CMD_DEL:
		return endpoint_change(cmd, argc - 1, argv + 1);
	}
	if (argc > 1)
		return usage_error("endpoint show: unexpected argument '%s'", argv[1]);
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = endpoint_show(fd);
	close(fd);
	return ret;
}

static void peer_usage(void)
{
	puts("Usage: rpagectl peer add NAME addr ADDR [ port PORT ] [ transport { auto | rdma | tcp } ]\n"
	     "                         [ loss-timeout SECONDS ]\n"
	     "       rpagectl peer add NAME transport loop [ loss-timeout SECONDS ]\n"
	     "       rpagectl peer del NAME\n"
	     "       rpagectl peer [ show [ NAME ] ]\n"
	     "       rpagectl peer set NAME loss-timeout SECONDS\n"
	     "NAME := 1 to 63 of A-Z a-z 0-9 . _ -\n"
	     "ADDR := { IPV4-ADDRESS | IPV6-ADDRESS[%INTERFACE] }\n"
	     "PORT := 1..65535 (default 7471)\n"
	     "transport: auto (the default) is rdma if the route to ADDR has an RDMA\n"
	     "           device, else tcp (kernel TCP sockets, no RDMA device needed);\n"
	     "           loop is this host itself, no network: its own pools, read by\n"
	     "           copying (one loop peer per host)\n"
	     "SECONDS := 0 to 86400, to the millisecond: how long transfers wait for the\n"
	     "           peer to come back before they fail (0: at once; default: the\n"
	     "           module parameter loss_timeout_ms)");
}

/*
 * One peer: what RPAGE_IOC_PEER_LIST says of it, and how its connection
 * fares (@st, NULL from a module without RPAGE_IOC_PEER_STATUS).
 */
static void peer_print(struct json_writer *jw, const struct rpage_peer_info *info,
		       const struct rpage_peer_status *st)
{
	char addr[RPAGE_ADDR_STRLEN], node[32], proto[32], error[32];
	char qps[32];

	format_addr(&info->addr, addr, sizeof(addr));
	snprintf(node, sizeof(node), "0x%" PRIx64, (uint64_t)info->remote_node_id);
	snprintf(proto, sizeof(proto), "%u.%u", info->remote_proto >> 16,
		 info->remote_proto & 0xffff);
	format_errno(info->last_error, error, sizeof(error));
	snprintf(qps, sizeof(qps), "%u/%u", info->qps_connected, info->qps);

	if (jw)
		json_open_object(jw, NULL);
	print_str(jw, "name", NULL, info->name);
	print_u64(jw, "id", "id", info->id);
	/* A loop peer has no address: "-" and port 0 as text, null in JSON. */
	print_str_opt(jw, "addr", "addr", info->addr.family ? addr : NULL, "-");
	print_u64_opt(jw, "port", "port", info->addr.family, info->addr.port, "0");
	print_str(jw, "state", "state", known(rpage_peer_state_name(info->state)));
	print_str(jw, "transport", "transport",
		  peer_transport(info->transport));
	if (jw) {
		json_uint(jw, "qps", info->qps);
		json_uint(jw, "qps_connected", info->qps_connected);
	} else {
		printf(" qps %s", qps);
	}
	print_u64(jw, "qps_inbound", "inbound", info->qps_inbound);
	print_str(jw, "node_id", "node", node);
	print_str(jw, "proto", "proto", proto);
	print_u64(jw, "connects", "connects", info->connects);
	print_u64(jw, "rejects", "rejects", info->rejects);
	print_str(jw, "last_reject", "last-reject",
		  known(rpage_reject_name(info->last_reject)));
	print_str_opt(jw, "last_error", "last-error", info->last_error ? error : NULL,
		      "0");
	if (st) {
		if (!jw)
			printf("\n   ");
		print_ms(jw, "loss_timeout_ms", "loss-timeout", st->loss_timeout_ms);
		print_ms(jw, "state_ms", "in-state", st->state_ms);
		print_u64(jw, "reconnects", "reconnects", st->reconnects);
		print_u64(jw, "retried", "retried", st->retried);
		print_u64(jw, "lost", "lost", st->lost);
		print_u64(jw, "refused_msgs", "refused-msgs", st->refused_msgs);
		print_u64(jw, "refused_pools", "refused-pools", st->refused_pools);
		print_u64(jw, "refused_qps", "refused-qps", st->refused_qps);
		print_u64(jw, "refused_access", "refused-access", st->refused_access);
		print_str(jw, "cause", "cause", st->cause);
	}
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

/* peer [ show [ NAME ] ]: all peers, or the one named @name. */
static int peer_show(int fd, const char *name)
{
	struct rpage_peer_status *sts = NULL;
	struct rpage_peer_info *infos;
	struct json_writer jw;
	bool found = false;
	void *buf = NULL;
	int count, nr_st;

	count = rpage_list_all(fd, rpage_peer_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("peer show", name, -count, NULL);
	buf = NULL;
	nr_st = rpage_list_all(fd, rpage_peer_status, sizeof(*sts), &buf);
	sts = buf;
	if (nr_st == -ENOTTY) {
		nr_st = 0;	/* an older module: no status to show */
	} else if (nr_st < 0) {
		free(infos);
		return fail_cmd("peer show", name, -nr_st, NULL);
	}

	for (int i = 0; i < count; i++)
		infos[i].name[sizeof(infos[i].name) - 1] = '\0';
	for (int i = 0; i < nr_st; i++)
		sts[i].cause[sizeof(sts[i].cause) - 1] = '\0';
	if (name) {
		for (int i = 0; i < count; i++)
			found |= !strcmp(infos[i].name, name);
		if (!found) {
			free(infos);
			free(sts);
			fail("peer show: no peer named %s", name);
			return 1;
		}
	}
	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		const struct rpage_peer_status *st = NULL;

		if (name && strcmp(infos[i].name, name))
			continue;
		for (int j = 0; j < nr_st; j++)
			if (sts[j].peer_id == infos[i].id)
				st = &sts[j];
		peer_print(opt_json ? &jw : NULL, &infos[i], st);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	free(sts);
	return 0;
}

/* SECONDS of a loss timeout, to the millisecond, into @ms; 0 or 2. */
static int parse_loss_timeout(const char *subject, const char *text, __u32 *ms)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(text, &end);
	if (errno || end == text || *end || !(s >= 0) ||
	    s * 1000 > RPAGE_LOSS_TIMEOUT_MAX_MS)
		return usage_error("%s: loss-timeout '%s' is not a number of seconds from 0 to %u",
				   subject, text, RPAGE_LOSS_TIMEOUT_MAX_MS / 1000);
	*ms = (__u32)(s * 1000 + 0.5);
	return 0;
}

/* RPAGE_IOC_PEER_SET of @set on a new file; 0 or -errno. */
static int peer_set_on_device(const struct rpage_peer_set *set)
{
	int fd, ret;

	fd = open_device(NULL);
	if (fd < 0)
		return -EBADF;
	ret = rpage_peer_set(fd, set);
	close(fd);
	return ret;
}

/* The transport called @text: 0, or an error with its message. */
static int parse_transport(const char *subject, const char *text, __u32 *out)
{
	if (!strcmp(text, "auto"))
		*out = RPAGE_TRANSPORT_AUTO;
	else if (!strcmp(text, "rdma"))
		*out = RPAGE_TRANSPORT_RDMA;
	else if (!strcmp(text, "tcp"))
		*out = RPAGE_TRANSPORT_TCP;
	else if (!strcmp(text, "loop"))
		*out = RPAGE_TRANSPORT_LOOP;
	else
		return usage_error("%s: unknown transport '%s' (auto, rdma, tcp or loop)",
				   subject, text);
	return 0;
}

/*
 * peer add NAME addr ADDR [ port PORT ] [ transport auto|rdma|tcp ]
 *	[ loss-timeout SECONDS ]
 * peer add NAME transport loop [ loss-timeout SECONDS ]
 */
static int peer_add(int argc, char **argv)
{
	const char *addr_text = NULL, *port_text = NULL, *loss_text = NULL;
	const char *transport_text = NULL;
	static const char *const keys[] = { "addr", "port", "loss-timeout",
					    "transport" };
	const char *what = "peer add";
	struct rpage_peer_config peer;
	struct rpage_peer_set set;
	struct rpage_api api;
	__u32 transport = RPAGE_TRANSPORT_AUTO;
	char subject[96];
	__u16 port = RPAGE_DEFAULT_PORT;
	const char *words = NULL;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	ret = check_peer_name(what, argv[0]);
	if (ret)
		return ret;
	for (int i = 1; i < argc; i += 2) {
		const char **slots[] = { &addr_text, &port_text, &loss_text,
					 &transport_text };
		int k = -1;

		for (int j = 0; j < 4; j++)
			if (matches(argv[i], keys[j]))
				k = j;
		if (k < 0)
			return usage_error("%s %s: unexpected argument '%s'",
					   what, argv[0], argv[i]);
		if (*slots[k])
			return usage_error("%s %s: '%s' given twice", what,
					   argv[0], keys[k]);
		if (i + 1 >= argc)
			return usage_error("%s %s: '%s' needs a value", what,
					   argv[0], keys[k]);
		*slots[k] = argv[i + 1];
	}
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	if (transport_text) {
		ret = parse_transport(subject, transport_text, &transport);
		if (ret)
			return ret;
	}
	if (transport == RPAGE_TRANSPORT_LOOP && (addr_text || port_text))
		return usage_error("%s: a loop peer is this host: it takes no 'addr' or 'port'",
				   subject);
	if (transport != RPAGE_TRANSPORT_LOOP && !addr_text)
		return usage_error("%s %s: missing 'addr ADDR'", what, argv[0]);
	if (port_text) {
		ret = parse_port(subject, port_text, &port);
		if (ret)
			return ret;
	}
	memset(&set, 0, sizeof(set));
	if (loss_text) {
		ret = parse_loss_timeout(subject, loss_text, &set.loss_timeout_ms);
		if (ret)
			return ret;
		set.mask = RPAGE_PEER_SET_LOSS_TIMEOUT;
	}
	memset(&peer, 0, sizeof(peer));
	if (addr_text) {
		ret = parse_addr(subject, addr_text, port, &peer.addr);
		if (ret)
			return ret;
	}
	peer.transport = transport;
	memcpy(peer.name, argv[0], strlen(argv[0]));
	memcpy(set.name, argv[0], strlen(argv[0]));

	fd = open_device(&api);
	if (fd < 0)
		return 1;
	if (transport != RPAGE_TRANSPORT_AUTO &&
	    !(api.features & RPAGE_FEATURE_TRANSPORT)) {
		close(fd);
		return fail_cmd(what, argv[0], EOPNOTSUPP,
				"this rpage.ko has no choice of transport");
	}
	if (transport == RPAGE_TRANSPORT_TCP && !(api.features & RPAGE_FEATURE_TCP)) {
		close(fd);
		return fail_cmd(what, argv[0], EOPNOTSUPP,
				"this rpage.ko has no TCP transport");
	}
	ret = rpage_peer_add(fd, &peer);
	/*
	 * The peer has the default loss timeout for the moment in between:
	 * it has no pool to read before it connects anyway.
	 */
	if (!ret && set.mask) {
		ret = rpage_peer_set(fd, &set);
		if (ret) {
			rpage_peer_del(fd, &peer);
			close(fd);
			return fail_cmd(what, argv[0], -ret,
					ret == -ENOTTY ?
					"this rpage.ko has no loss-timeout setting" :
					NULL);
		}
	}
	close(fd);
	if (!ret)
		return 0;

	switch (-ret) {
	case EEXIST:
		words = transport == RPAGE_TRANSPORT_LOOP ?
			"a peer with that name, or a loop peer, already exists" :
			"a peer with that name or address already exists";
		break;
	case EINVAL:
		words = "the module refused this name or address";
		break;
	}
	return fail_cmd(what, argv[0], -ret, words);
}

/* peer set NAME loss-timeout SECONDS */
static int peer_set(int argc, char **argv)
{
	const char *what = "peer set";
	struct rpage_peer_set set;
	char subject[96];
	int ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	ret = check_peer_name(what, argv[0]);
	if (ret)
		return ret;
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	memset(&set, 0, sizeof(set));
	memcpy(set.name, argv[0], strlen(argv[0]));
	for (int i = 1; i < argc; i += 2) {
		if (!matches(argv[i], "loss-timeout"))
			return usage_error("%s: unexpected argument '%s'", subject,
					   argv[i]);
		if (set.mask & RPAGE_PEER_SET_LOSS_TIMEOUT)
			return usage_error("%s: 'loss-timeout' given twice", subject);
		if (i + 1 >= argc)
			return usage_error("%s: 'loss-timeout' needs a value", subject);
		ret = parse_loss_timeout(subject, argv[i + 1], &set.loss_timeout_ms);
		if (ret)
			return ret;
		set.mask |= RPAGE_PEER_SET_LOSS_TIMEOUT;
	}
	if (!set.mask)
		return usage_error("%s: nothing to set (loss-timeout SECONDS)", subject);
	ret = peer_set_on_device(&set);
	if (ret == -EBADF)
		return 1;
	if (!ret)
		return 0;
	return fail_cmd(what, argv[0], -ret, ret == -ENOENT ? "no such peer" : NULL);
}

/* peer del NAME */
static int peer_del(int argc, char **argv)
{
	const char *what = "peer del";
	struct rpage_peer_config peer;
	const char *words = NULL;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	if (argc > 1)
		return usage_error("%s %s: unexpected argument '%s'", what,
				   argv[0], argv[1]);
	ret = check_peer_name(what, argv[0]);
	if (ret)
		return ret;
	memset(&peer, 0, sizeof(peer));
	memcpy(peer.name, argv[0], strlen(argv[0]));

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_peer_del(fd, &peer);
	close(fd);
	if (!ret)
		return 0;
	if (ret == -ENOENT)
		words = "no such peer";
	return fail_cmd(what, argv[0], -ret, words);
}

/* show before set: an abbreviation takes the first that it begins. */
enum { PEER_ADD, PEER_DEL, PEER_SHOW, PEER_SET, PEER_HELP };

static const char *const peer_commands[] = {
	[PEER_ADD] = "add", [PEER_DEL] = "del", [PEER_SHOW] = "show",
	[PEER_SET] = "set", [PEER_HELP] = "help", NULL,
};

int cmd_peer(int argc, char **argv)
{
	int cmd = argc > 0 ? find_command(argv[0], peer_commands) : PEER_SHOW;
	int fd, ret;

	if (cmd < 0)
		return usage_error("peer: unknown command '%s'", argv[0]);
	switch (cmd) {
	case PEER_HELP:
		peer_usage();
		return 0;
	case PEER_ADD:
		return peer_add(argc - 1, argv + 1);
	case PEER_SET:
		return peer_set(argc - 1, argv + 1);
	case PEER_DEL:
		return peer_del(argc - 1, argv + 1);
	}
	if (argc > 2)
		return usage_error("peer show: unexpected argument '%s'", argv[2]);
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = peer_show(fd, argc > 1 ? argv[1] : NULL);
	close(fd);
	return ret;
}
