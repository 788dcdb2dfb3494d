// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: configure and inspect rpage.ko.
 *
 *   rpagectl [-j [-p]] [-V] OBJECT { COMMAND | help }
 *
 * Objects and commands may be abbreviated to any unique prefix, as with
 * ip(8) and rdma(8). Human output by default, JSON with -j. Exit status
 * 0 on success, 1 on a failed operation, 2 on a usage error; a failure
 * prints one line on standard error.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

#define EXIT_USAGE 2

static bool opt_json;
static bool opt_pretty;

static const char *module_version_path = "/sys/module/rpage/version";

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs("rpagectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("rpagectl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try 'rpagectl help')\n", stderr);
	return EXIT_USAGE;
}

/* A word the user typed matches @full when it is a prefix of it. */
static bool matches(const char *typed, const char *full)
{
	size_t len = strlen(typed);

	return len && !strncmp(typed, full, len);
}

/*
 * Opens /dev/rpage and completes the handshake, reporting failures in
 * words an operator can act on.
 */
static int open_device(struct rpage_api *api)
{
	struct rpage_api local;
	int fd, ret;

	fd = rpage_open(0);
	if (fd < 0) {
		if (fd == -ENOENT)
			fail("%s: no such device (is rpage.ko loaded?)",
			     RPAGE_DEVICE_PATH);
		else
			fail("%s: %s", RPAGE_DEVICE_PATH, strerror(-fd));
		return fd;
	}
	if (!api)
		api = &local;
	memset(api, 0, sizeof(*api));
	api->api = RPAGE_API;
	ret = rpage_api(fd, api);
	if (ret < 0) {
		fail("API handshake: %s (module and rpagectl disagree: version %s speaks API %d)",
		     strerror(-ret), rpage_lib_version(), RPAGE_API);
		close(fd);
		return ret;
	}
	return fd;
}

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

static int cmd_version(int argc, char **argv)
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

	fd = open_device(&api);
	if (fd < 0)
		return 1;
	close(fd);
	read_module_version(modver, sizeof(modver));
	snprintf(features, sizeof(features), "0x%" PRIx64, (uint64_t)api.features);
	snprintf(ioctls, sizeof(ioctls), "0x%" PRIx64, (uint64_t)api.ioctls);

	if (!opt_json) {
		printf("library %s API %d\n", rpage_lib_version(), RPAGE_API);
		printf("module %s API %u features %s ioctls %s\n", modver,
		       api.api, features, ioctls);
		return 0;
	}
	json_init(&jw, stdout, opt_pretty);
	json_open_object(&jw, NULL);
	json_open_object(&jw, "library");
	json_string(&jw, "version", rpage_lib_version());
	json_uint(&jw, "api", RPAGE_API);
	json_close_object(&jw);
	json_open_object(&jw, "module");
	json_string(&jw, "version", modver);
	json_uint(&jw, "api", api.api);
	json_string(&jw, "features", features);
	json_string(&jw, "ioctls", ioctls);
	json_close_object(&jw);
	json_close_object(&jw);
	json_finish(&jw);
	return 0;
}

/*
 * Reads a whole list into a new array of @size-byte entries: the list
 * may grow between the count and the fetch, so retry until it fits.
 * Returns the number of entries (the array may be NULL when there are
 * none; free it either way), or a negative errno.
 */
static int fetch_list(int fd, int (*list_fn)(int, struct rpage_list *),
		      size_t size, void **entries)
{
	struct rpage_list list;
	uint32_t capacity = 0;
	void *buf = NULL;
	int ret;

	for (;;) {
		memset(&list, 0, sizeof(list));
		list.capacity = capacity;
		list.entries = (uintptr_t)buf;
		ret = list_fn(fd, &list);
		if (ret < 0) {
			free(buf);
			return ret;
		}
		if (list.count <= capacity)
			break;
		if (list.count > INT_MAX / 2) {
			free(buf);
			return -EOVERFLOW;
		}
		capacity = list.count;
		free(buf);
		buf = calloc(capacity, size);
		if (!buf)
			return -ENOMEM;
	}
	*entries = buf;
	return (int)list.count;
}

/*
 * Reports a failed command in one line and returns the exit status.
 * @what names the command ("peer add"), @subject what it was about
 * ("hostb", or NULL), @words the explanation of @err if the caller has
 * one (or NULL: then a generic one).
 */
static int fail_cmd(const char *what, const char *subject, int err,
		    const char *words)
{
	const char *sep = subject ? " " : "";

	if (!subject)
		subject = "";
	if (words)
		fail("%s%s%s: %s", what, sep, subject, words);
	else if (err == EPERM)
		fail("%s: needs CAP_SYS_ADMIN", what);
	else if (err == ENOTTY)
		fail("%s: not supported by the loaded rpage.ko (is it older than rpagectl?)",
		     what);
	else
		fail("%s%s%s: %s", what, sep, subject, strerror(err));
	return 1;
}

/* The command word of @typed among @cmds (NULL-terminated), or -1. */
static int find_command(const char *typed, const char *const *cmds)
{
	int found = -1;

	for (int i = 0; cmds[i]; i++) {
		if (!matches(typed, cmds[i]))
			continue;
		if (!strcmp(typed, cmds[i]))
			return i;
		if (found >= 0)
			return -1;	/* ambiguous */
		found = i;
	}
	/* "delete" is spelled out as well as "del". */
	if (found < 0 && !strcmp(typed, "delete")) {
		for (int i = 0; cmds[i]; i++)
			if (!strcmp(cmds[i], "del"))
				return i;
	}
	return found;
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

#define PEER_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A peer name from the command line; 0 or 2 (usage). */
static int check_peer_name(const char *what, const char *name)
{
	size_t len = strlen(name);

	if (!len || len >= RPAGE_NAME_MAX)
		return usage_error("%s: peer name '%s' must have 1 to %d characters",
				   what, name, RPAGE_NAME_MAX - 1);
	if (strspn(name, PEER_NAME_CHARS) != len)
		return usage_error("%s: peer name '%s' may only contain %s",
				   what, name, "letters, digits, '.', '_' and '-'");
	return 0;
}

static void format_addr(const struct rpage_addr *addr, char *buf, size_t len)
{
	if (rpage_addr_format(addr, buf, len) < 0)
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

static const char *name_of(const char *const *names, size_t count, __u32 val)
{
	return val < count && names[val] ? names[val] : "unknown";
}

#define NAME_OF(names, val) name_of(names, sizeof(names) / sizeof(names[0]), val)

static const char *const endpoint_states[] = {
	[RPAGE_ENDPOINT_LISTENING] = "listening",
	[RPAGE_ENDPOINT_DOWN] = "down",
};

static const char *const peer_states[] = {
	[RPAGE_PEER_CONNECTING] = "connecting",
	[RPAGE_PEER_CONNECTED] = "connected",
	[RPAGE_PEER_RECONNECTING] = "reconnecting",
	[RPAGE_PEER_FAILED] = "failed",
};

static const char *const reject_reasons[] = {
	[RPAGE_REJECT_NONE] = "none",
	[RPAGE_REJECT_UNKNOWN_PEER] = "unknown-peer",
	[RPAGE_REJECT_VERSION] = "version",
	[RPAGE_REJECT_BAD_HELLO] = "bad-hello",
	[RPAGE_REJECT_NO_RESOURCES] = "no-resources",
	[RPAGE_REJECT_UNSPECIFIED] = "unspecified",
};

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
	struct json_writer jw;
	void *buf = NULL;
	char guid[32];
	int count;

	count = fetch_list(fd, rpage_device_list, sizeof(*infos), &buf);
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
		if (!opt_json) {
			printf("%u: %s node_guid %s ports %u\n", info->index,
			       info->name, guid, info->port_count);
			continue;
		}
		json_open_object(&jw, NULL);
		json_uint(&jw, "index", info->index);
		json_string(&jw, "name", info->name);
		json_string(&jw, "node_guid", guid);
		json_uint(&jw, "ports", info->port_count);
		json_close_object(&jw);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

static int cmd_device(int argc, char **argv)
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
	puts("Usage: rpagectl endpoint add ADDR [ port PORT ]\n"
	     "       rpagectl endpoint del ADDR [ port PORT ]\n"
	     "       rpagectl endpoint [ show ]\n"
	     "ADDR := { IPV4-ADDRESS | IPV6-ADDRESS[%INTERFACE] }\n"
	     "        (0.0.0.0 or :: listens on every RDMA device)\n"
	     "PORT := 1..65535 (default 7471)");
}

static int endpoint_show(int fd)
{
	struct rpage_endpoint_info *infos;
	char addr[RPAGE_ADDR_STRLEN];
	void *buf = NULL;
	struct json_writer jw;
	const char *state;
	int count;

	count = fetch_list(fd, rpage_endpoint_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("endpoint show", NULL, -count, NULL);

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		struct rpage_endpoint_info *info = &infos[i];

		format_addr(&info->addr, addr, sizeof(addr));
		state = NAME_OF(endpoint_states, info->state);
		if (!opt_json) {
			printf("%s port %u state %s accepted %" PRIu64
			       " rejected-unknown %" PRIu64
			       " rejected-version %" PRIu64
			       " rejected-other %" PRIu64 "\n",
			       addr, info->addr.port, state,
			       (uint64_t)info->accepted,
			       (uint64_t)info->rejected_unknown,
			       (uint64_t)info->rejected_version,
			       (uint64_t)info->rejected_other);
			continue;
		}
		json_open_object(&jw, NULL);
		json_string(&jw, "addr", addr);
		json_uint(&jw, "port", info->addr.port);
		json_string(&jw, "state", state);
		json_uint(&jw, "accepted", info->accepted);
		json_uint(&jw, "rejected_unknown", info->rejected_unknown);
		json_uint(&jw, "rejected_version", info->rejected_version);
		json_uint(&jw, "rejected_other", info->rejected_other);
		json_close_object(&jw);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

/* endpoint { add | del } ADDR [ port PORT ] */
static int endpoint_change(int cmd, int argc, char **argv)
{
	const char *what = cmd == CMD_ADD ? "endpoint add" : "endpoint del";
	const char *port_text = NULL;
	struct rpage_endpoint ep;
	__u16 port = RPAGE_DEFAULT_PORT;
	char subject[128];
	const char *words = NULL;
	char buf[96];
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing ADDR", what);
	for (int i = 1; i < argc; i += 2) {
		if (!matches(argv[i], "port"))
			return usage_error("%s: unexpected argument '%s'", what, argv[i]);
		if (port_text)
			return usage_error("%s: 'port' given twice", what);
		if (i + 1 >= argc)
			return usage_error("%s: 'port' needs a value", what);
		port_text = argv[i + 1];
		ret = parse_port(what, port_text, &port);
		if (ret)
			return ret;
	}
	memset(&ep, 0, sizeof(ep));
	ret = parse_addr(what, argv[0], port, &ep.addr);
	if (ret)
		return ret;
	if (port_text)
		snprintf(subject, sizeof(subject), "%s port %u", argv[0], port);
	else
		snprintf(subject, sizeof(subject), "%s", argv[0]);

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
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
		words = "no RDMA device has this address";
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

static int cmd_endpoint(int argc, char **argv)
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
	puts("Usage: rpagectl peer add NAME addr ADDR [ port PORT ]\n"
	     "       rpagectl peer del NAME\n"
	     "       rpagectl peer [ show [ NAME ] ]\n"
	     "NAME := 1 to 63 of A-Z a-z 0-9 . _ -\n"
	     "ADDR := { IPV4-ADDRESS | IPV6-ADDRESS[%INTERFACE] }\n"
	     "PORT := 1..65535 (default 7471)");
}

static void peer_print(struct json_writer *jw, const struct rpage_peer_info *info)
{
	char addr[RPAGE_ADDR_STRLEN], node[32], proto[32], error[32];
	const char *state = NAME_OF(peer_states, info->state);
	const char *reject = NAME_OF(reject_reasons, info->last_reject);

	format_addr(&info->addr, addr, sizeof(addr));
	snprintf(node, sizeof(node), "0x%" PRIx64, (uint64_t)info->remote_node_id);
	snprintf(proto, sizeof(proto), "%u.%u", info->remote_proto >> 16,
		 info->remote_proto & 0xffff);
	format_errno(info->last_error, error, sizeof(error));

	if (!jw) {
		printf("%s id %u addr %s port %u state %s qps %u/%u inbound %u node %s proto %s"
		       " connects %" PRIu64 " rejects %" PRIu64
		       " last-reject %s last-error %s\n",
		       info->name, info->id, addr, info->addr.port, state,
		       info->qps_connected, info->qps, info->qps_inbound, node,
		       proto, (uint64_t)info->connects, (uint64_t)info->rejects,
		       reject, error);
		return;
	}
	json_open_object(jw, NULL);
	json_string(jw, "name", info->name);
	json_uint(jw, "id", info->id);
	json_string(jw, "addr", addr);
	json_uint(jw, "port", info->addr.port);
	json_string(jw, "state", state);
	json_uint(jw, "qps", info->qps);
	json_uint(jw, "qps_connected", info->qps_connected);
	json_uint(jw, "qps_inbound", info->qps_inbound);
	json_string(jw, "node_id", node);
	json_string(jw, "proto", proto);
	json_uint(jw, "connects", info->connects);
	json_uint(jw, "rejects", info->rejects);
	json_string(jw, "last_reject", reject);
	json_string(jw, "last_error", error);
	json_close_object(jw);
}

/* peer [ show [ NAME ] ]: all peers, or the one named @name. */
static int peer_show(int fd, const char *name)
{
	struct rpage_peer_info *infos;
	struct json_writer jw;
	bool found = false;
	void *buf = NULL;
	int count;

	count = fetch_list(fd, rpage_peer_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("peer show", name, -count, NULL);

	for (int i = 0; i < count; i++)
		infos[i].name[sizeof(infos[i].name) - 1] = '\0';
	if (name) {
		for (int i = 0; i < count; i++)
			found |= !strcmp(infos[i].name, name);
		if (!found) {
			free(infos);
			fail("peer show: no peer named %s", name);
			return 1;
		}
	}
	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		if (name && strcmp(infos[i].name, name))
			continue;
		peer_print(opt_json ? &jw : NULL, &infos[i]);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

/* peer add NAME addr ADDR [ port PORT ] */
static int peer_add(int argc, char **argv)
{
	const char *addr_text = NULL, *port_text = NULL;
	const char *what = "peer add";
	struct rpage_peer_config peer;
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
		const char **slot;

		if (matches(argv[i], "addr"))
			slot = &addr_text;
		else if (matches(argv[i], "port"))
			slot = &port_text;
		else
			return usage_error("%s %s: unexpected argument '%s'",
					   what, argv[0], argv[i]);
		if (*slot)
			return usage_error("%s %s: '%s' given twice", what,
					   argv[0], slot == &addr_text ? "addr" : "port");
		if (i + 1 >= argc)
			return usage_error("%s %s: '%s' needs a value", what,
					   argv[0], slot == &addr_text ? "addr" : "port");
		*slot = argv[i + 1];
	}
	if (!addr_text)
		return usage_error("%s %s: missing 'addr ADDR'", what, argv[0]);
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	if (port_text) {
		ret = parse_port(subject, port_text, &port);
		if (ret)
			return ret;
	}
	memset(&peer, 0, sizeof(peer));
	ret = parse_addr(subject, addr_text, port, &peer.addr);
	if (ret)
		return ret;
	memcpy(peer.name, argv[0], strlen(argv[0]));

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_peer_add(fd, &peer);
	close(fd);
	if (!ret)
		return 0;

	switch (-ret) {
	case EEXIST:
		words = "a peer with that name or address already exists";
		break;
	case EINVAL:
		words = "the module refused this name or address";
		break;
	}
	return fail_cmd(what, argv[0], -ret, words);
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

static int cmd_peer(int argc, char **argv)
{
	int cmd = argc > 0 ? find_command(argv[0], config_commands) : CMD_SHOW;
	int fd, ret;

	if (cmd < 0)
		return usage_error("peer: unknown command '%s'", argv[0]);
	switch (cmd) {
	case CMD_HELP:
		peer_usage();
		return 0;
	case CMD_ADD:
		return peer_add(argc - 1, argv + 1);
	case CMD_DEL:
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

/*
 * An unsigned number from the command line, decimal or 0x-hexadecimal;
 * with @suffixes, K, M or G (either case) multiply it by 2^10, 2^20 or
 * 2^30. 0 on success, -EINVAL for bad text, -ERANGE when it overflows.
 */
static int parse_number(const char *text, bool suffixes, uint64_t *out)
{
	unsigned long long val;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	val = strtoull(text, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || end == text)
		return -EINVAL;
	if (suffixes && *end) {
		switch (*end) {
		case 'K': case 'k':
			shift = 10;
			break;
		case 'M': case 'm':
			shift = 20;
			break;
		case 'G': case 'g':
			shift = 30;
			break;
		default:
			return -EINVAL;
		}
		end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && val > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)val << shift;
	return 0;
}

/* A pool id from the command line: 1 to 2^64-1; 0 or 2 (usage). */
static int parse_pool_id(const char *what, const char *text, uint64_t *id)
{
	if (parse_number(text, false, id) || !*id)
		return usage_error("%s: pool id '%s' is not a number from 1 to 2^64-1",
				   what, text);
	return 0;
}

static uint64_t page_size(void)
{
	long size = sysconf(_SC_PAGESIZE);

	return size > 0 ? (uint64_t)size : 4096;
}

/*
 * A byte count from the command line (SIZE, OFFSET, LENGTH): a multiple
 * of the page size, and not 0 unless @zero_ok; 0 or 2 (usage).
 */
static int parse_bytes(const char *what, const char *name, const char *text,
		       bool zero_ok, uint64_t *bytes)
{
	uint64_t page = page_size();
	int ret = parse_number(text, true, bytes);

	if (ret == -ERANGE)
		return usage_error("%s: %s '%s' is too large", what, name, text);
	if (ret)
		return usage_error("%s: %s '%s' is not a number of bytes (K, M or G may follow)",
				   what, name, text);
	if ((!zero_ok && !*bytes) || *bytes % page)
		return usage_error("%s: %s '%s' is not a %smultiple of the page size (%" PRIu64 ")",
				   what, name, text, zero_ok ? "" : "non-zero ", page);
	return 0;
}

/* The value of a module parameter, or "?" if it cannot be read. */
static void read_module_param(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/sys/module/rpage/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static const struct {
	__u32 bit;
	const char *name;
} pool_flag_names[] = {
	{ RPAGE_POOL_WRITABLE, "writable" },
};

#define NR_POOL_FLAGS (sizeof(pool_flag_names) / sizeof(pool_flag_names[0]))

static const char *const pool_kinds[] = {
	[RPAGE_POOL_KERNEL] = "kernel",
	[RPAGE_POOL_USER] = "user",
};

/*
 * Pool flags as text: their names joined by ',', bits without a name in
 * hexadecimal, "none" when no bit is set.
 */
static void format_pool_flags(__u32 flags, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_POOL_FLAGS; i++) {
		if (!(flags & pool_flag_names[i].bit))
			continue;
		flags &= ~pool_flag_names[i].bit;
		n += snprintf(buf + n, n < len ? len - n : 0, "%s%s",
			      n ? "," : "", pool_flag_names[i].name);
	}
	if (flags)
		n += snprintf(buf + n, n < len ? len - n : 0, "%s0x%x",
			      n ? "," : "", flags);
	if (!n)
		snprintf(buf, len, "none");
}

/* Pool flags as a JSON array of the same words; [] when none is set. */
static void json_pool_flags(struct json_writer *jw, __u32 flags)
{
	char unknown[16];

	json_open_array(jw, "flags");
	for (size_t i = 0; i < NR_POOL_FLAGS; i++) {
		if (!(flags & pool_flag_names[i].bit))
			continue;
		flags &= ~pool_flag_names[i].bit;
		json_string(jw, NULL, pool_flag_names[i].name);
	}
	if (flags) {
		snprintf(unknown, sizeof(unknown), "0x%x", flags);
		json_string(jw, NULL, unknown);
	}
	json_close_array(jw);
}

static void pool_usage(void)
{
	puts("Usage: rpagectl pool create ID size SIZE [ writable ]\n"
	     "       rpagectl pool destroy ID\n"
	     "       rpagectl pool [ show [ remote ] ]\n"
	     "ID := 1..2^64-1, decimal or 0x-hexadecimal\n"
	     "SIZE := bytes, a multiple of the page size; K, M or G may follow");
}

/* pool [ show ]: this host's pools. */
static int pool_show(int fd)
{
	struct rpage_pool_info *infos;
	struct json_writer jw;
	void *buf = NULL;
	char flags[64];
	const char *kind;
	int count;

	count = fetch_list(fd, rpage_pool_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("pool show", NULL, -count, NULL);

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		const struct rpage_pool_info *info = &infos[i];

		kind = NAME_OF(pool_kinds, info->kind);
		if (!opt_json) {
			format_pool_flags(info->flags, flags, sizeof(flags));
			printf("%" PRIu64 " length %" PRIu64 " flags %s kind %s owner %u\n",
			       (uint64_t)info->id, (uint64_t)info->length, flags,
			       kind, info->owner_pid);
			continue;
		}
		json_open_object(&jw, NULL);
		json_uint(&jw, "id", info->id);
		json_uint(&jw, "length", info->length);
		json_pool_flags(&jw, info->flags);
		json_string(&jw, "kind", kind);
		json_uint(&jw, "owner_pid", info->owner_pid);
		json_close_object(&jw);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

/* pool show remote: the pools connected peers export to this host. */
static int remote_pool_show(int fd)
{
	struct rpage_remote_pool_info *infos;
	struct json_writer jw;
	void *buf = NULL;
	char flags[64];
	int count;

	count = fetch_list(fd, rpage_remote_pool_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("pool show remote", NULL, -count, NULL);

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		struct rpage_remote_pool_info *info = &infos[i];

		info->peer[sizeof(info->peer) - 1] = '\0';
		if (!opt_json) {
			format_pool_flags(info->flags, flags, sizeof(flags));
			printf("%s %" PRIu64 " length %" PRIu64 " flags %s\n",
			       info->peer, (uint64_t)info->id,
			       (uint64_t)info->length, flags);
			continue;
		}
		json_open_object(&jw, NULL);
		json_string(&jw, "peer", info->peer);
		json_uint(&jw, "peer_id", info->peer_id);
		json_uint(&jw, "id", info->id);
		json_uint(&jw, "length", info->length);
		json_pool_flags(&jw, info->flags);
		json_close_object(&jw);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

/* pool create ID size SIZE [ writable ] */
static int pool_create(int argc, char **argv)
{
	const char *what = "pool create";
	const char *size_text = NULL;
	struct rpage_pool_create pool;
	char subject[96], max_mb[32], buf[128];
	const char *words = NULL;
	uint64_t id, size = 0;
	__u32 flags = 0;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing ID", what);
	ret = parse_pool_id(what, argv[0], &id);
	if (ret)
		return ret;
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	for (int i = 1; i < argc; i++) {
		if (matches(argv[i], "size")) {
			if (size_text)
				return usage_error("%s: 'size' given twice", subject);
			if (i + 1 >= argc)
				return usage_error("%s: 'size' needs a value", subject);
			size_text = argv[++i];
			ret = parse_bytes(subject, "size", size_text, false, &size);
			if (ret)
				return ret;
		} else if (matches(argv[i], "writable")) {
			flags |= RPAGE_POOL_WRITABLE;
		} else {
			return usage_error("%s: unexpected argument '%s'", subject,
					   argv[i]);
		}
	}
	if (!size_text)
		return usage_error("%s: missing 'size SIZE'", subject);

	memset(&pool, 0, sizeof(pool));
	pool.id = id;
	pool.length = size;
	pool.flags = flags;
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_pool_create(fd, &pool);
	close(fd);
	if (!ret)
		return 0;

	switch (-ret) {
	case EEXIST:
		words = "a pool with this id exists";
		break;
	case EINVAL:
		/* The id, flags and alignment were checked here: the size it is. */
		read_module_param("max_pool_mb", max_mb, sizeof(max_mb));
		if (strcmp(max_mb, "?"))
			snprintf(buf, sizeof(buf),
				 "size is more than the module allows (max_pool_mb %s MiB)",
				 max_mb);
		else
			snprintf(buf, sizeof(buf), "the module refused this size");
		words = buf;
		break;
	case ENOMEM:
		words = "not enough memory for a pool of this size";
		break;
	}
	return fail_cmd(what, argv[0], -ret, words);
}

/*
 * Why the caller may not destroy pool @id: a user pool belongs to the
 * process that exported it; otherwise the capability is missing.
 */
static void explain_destroy_eperm(int fd, uint64_t id, char *buf, size_t len)
{
	struct rpage_pool_info *infos;
	void *entries = NULL;
	int count;

	snprintf(buf, len, "needs CAP_SYS_ADMIN");
	count = fetch_list(fd, rpage_pool_list, sizeof(*infos), &entries);
	infos = entries;
	for (int i = 0; i < count; i++) {
		if (infos[i].id == id && infos[i].kind == RPAGE_POOL_USER) {
			snprintf(buf, len,
				 "exported by process %u: only that process can destroy it",
				 infos[i].owner_pid);
			break;
		}
	}
	free(infos);
}

/* pool destroy ID */
static int pool_destroy(int argc, char **argv)
{
	const char *what = "pool destroy";
	struct rpage_pool_destroy pool;
	const char *words = NULL;
	char buf[128];
	uint64_t id;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing ID", what);
	if (argc > 1)
		return usage_error("%s %s: unexpected argument '%s'", what,
				   argv[0], argv[1]);
	ret = parse_pool_id(what, argv[0], &id);
	if (ret)
		return ret;
	memset(&pool, 0, sizeof(pool));
	pool.id = id;

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_pool_destroy(fd, &pool);
	if (ret == -EPERM) {
		explain_destroy_eperm(fd, id, buf, sizeof(buf));
		words = buf;
	}
	close(fd);
	if (!ret)
		return 0;
	if (ret == -ENOENT)
		words = "no such pool";
	return fail_cmd(what, argv[0], -ret, words);
}

enum { POOL_CREATE, POOL_DESTROY, POOL_SHOW, POOL_HELP };

static const char *const pool_commands[] = {
	[POOL_CREATE] = "create", [POOL_DESTROY] = "destroy",
	[POOL_SHOW] = "show", [POOL_HELP] = "help", NULL,
};

static int cmd_pool(int argc, char **argv)
{
	int cmd = argc > 0 ? find_command(argv[0], pool_commands) : POOL_SHOW;
	bool remote = false;
	int fd, ret;

	if (cmd < 0)
		return usage_error("pool: unknown command '%s'", argv[0]);
	switch (cmd) {
	case POOL_HELP:
		pool_usage();
		return 0;
	case POOL_CREATE:
		return pool_create(argc - 1, argv + 1);
	case POOL_DESTROY:
		return pool_destroy(argc - 1, argv + 1);
	}
	if (argc > 1) {
		if (!matches(argv[1], "remote"))
			return usage_error("pool show: unexpected argument '%s'", argv[1]);
		remote = true;
	}
	if (argc > 2)
		return usage_error("pool show remote: unexpected argument '%s'", argv[2]);
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = remote ? remote_pool_show(fd) : pool_show(fd);
	close(fd);
	return ret;
}

static void transfer_usage(void)
{
	puts("Usage: rpagectl read PEER POOL OFFSET LENGTH [ file PATH ]\n"
	     "       rpagectl write PEER POOL OFFSET LENGTH file PATH\n"
	     "PEER := the peer's name (rpagectl peer show)\n"
	     "POOL := the pool's id on that peer (rpagectl pool show remote)\n"
	     "OFFSET, LENGTH := bytes, multiples of the page size; K, M or G may follow\n"
	     "PATH := a file, or - for standard output (read) or input (write)");
}

/* The id of the peer called @name; -ENOENT if there is none. */
static int find_peer_id(int fd, const char *name, __u32 *id)
{
	struct rpage_peer_info *infos;
	void *buf = NULL;
	int count, ret = -ENOENT;

	count = fetch_list(fd, rpage_peer_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		if (!strncmp(infos[i].name, name, sizeof(infos[i].name))) {
			*id = infos[i].id;
			ret = 0;
			break;
		}
	}
	free(infos);
	return ret;
}

/* Reads up to @len bytes, fewer only at the end of the file. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/*
 * A failed RPAGE_IOC_READ or _WRITE in an operator's words. Failures of
 * the peer as a whole name only the peer, the others the peer and pool.
 */
static int fail_transfer(bool is_write, int fd, const char *peer,
			 const char *pool, int err)
{
	const char *what = is_write ? "write" : "read";
	const char *words = NULL;
	char subject[128];
	__u32 id;

	snprintf(subject, sizeof(subject), "%s %s", peer, pool);
	switch (err) {
	case ENOENT:
		if (find_peer_id(fd, peer, &id) == -ENOENT)
			return fail_cmd(what, peer, err, "no such peer");
		words = "no such pool on this peer (see 'rpagectl pool show remote')";
		break;
	case ENOTCONN:
		return fail_cmd(what, peer, err, "peer not connected");
	case ETIMEDOUT:
		return fail_cmd(what, peer, err,
				"the peer did not answer in time (module parameter io_timeout_ms)");
	case ERANGE:
		words = "range beyond the end of the pool";
		break;
	case EPERM:
		words = is_write ? "pool is read-only" : "permission denied by the module";
		break;
	case EIO:
		words = "the transfer failed (see the kernel log)";
		break;
	case EINVAL:
		words = "the module refused this offset or length";
		break;
	}
	return fail_cmd(what, subject, err, words);
}

/*
 * read PEER POOL OFFSET LENGTH [ file PATH ]
 * write PEER POOL OFFSET LENGTH file PATH
 *
 * One RPAGE_IOC_READ or _WRITE per RPAGE_IO_MAX_BYTES, through a
 * page-aligned buffer of at most that size.
 */
static int transfer(bool is_write, int argc, char **argv)
{
	static const char *const names[] = { "PEER", "POOL", "OFFSET", "LENGTH" };
	const char *what = is_write ? "write" : "read";
	const char *path = NULL, *path_name;
	struct rpage_iovec iov;
	struct rpage_io io;
	uint64_t pool, offset, length, chunk, done;
	char subject[128];
	void *buf = NULL;
	int fd, file = -1, ret, status = 1;
	__u32 peer_id;

	if (argc == 1 && !strcmp(argv[0], "help")) {
		transfer_usage();
		return 0;
	}
	if (argc < 4)
		return usage_error("%s: missing %s", what, names[argc]);
	ret = check_peer_name(what, argv[0]);
	if (ret)
		return ret;
	snprintf(subject, sizeof(subject), "%s %s %s", what, argv[0], argv[1]);
	ret = parse_pool_id(subject, argv[1], &pool);
	if (!ret)
		ret = parse_bytes(subject, "offset", argv[2], true, &offset);
	if (!ret)
		ret = parse_bytes(subject, "length", argv[3], false, &length);
	if (ret)
		return ret;
	if (offset + length < offset)
		return usage_error("%s: offset plus length is too large", subject);
	for (int i = 4; i < argc; i += 2) {
		if (!matches(argv[i], "file"))
			return usage_error("%s: unexpected argument '%s'", subject, argv[i]);
		if (path)
			return usage_error("%s: 'file' given twice", subject);
		if (i + 1 >= argc)
			return usage_error("%s: 'file' needs a value", subject);
		path = argv[i + 1];
	}
	if (is_write && !path)
		return usage_error("%s: missing 'file PATH'", subject);
	if (!path || !strcmp(path, "-")) {
		path_name = is_write ? "standard input" : "standard output";
		file = is_write ? STDIN_FILENO : STDOUT_FILENO;
		if (!is_write && isatty(file))
			return usage_error("%s: standard output is a terminal: give 'file PATH'",
					   subject);
	}

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = find_peer_id(fd, argv[0], &peer_id);
	if (ret == -ENOENT) {
		fail_cmd(what, argv[0], -ret, "no such peer");
		goto out;
	}
	if (ret < 0) {
		fail_cmd(what, argv[0], -ret, NULL);
		goto out;
	}
	if (file < 0) {
		path_name = path;
		file = is_write ? open(path, O_RDONLY | O_CLOEXEC) :
			open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (file < 0) {
			fail("%s: %s: %s", subject, path, strerror(errno));
			goto out;
		}
	}
	chunk = length < RPAGE_IO_MAX_BYTES ? length : RPAGE_IO_MAX_BYTES;
	ret = posix_memalign(&buf, page_size(), chunk);
	if (ret) {
		buf = NULL;
		fail("%s: %s", subject, strerror(ret));
		goto out;
	}

	for (done = 0; done < length; done += chunk) {
		if (chunk > length - done)
			chunk = length - done;
		if (is_write) {
			ssize_t n = read_full(file, buf, chunk);

			if (n < 0) {
				fail("%s: %s: %s", subject, path_name, strerror(errno));
				goto out;
			}
			if ((uint64_t)n < chunk) {
				fail("%s: %s: has %" PRIu64 " bytes, %" PRIu64 " wanted",
				     subject, path_name, done + (uint64_t)n, length);
				goto out;
			}
		}
		memset(&iov, 0, sizeof(iov));
		iov.peer_id = peer_id;
		iov.pool_id = pool;
		iov.offset = offset + done;
		iov.length = chunk;
		iov.addr = (uintptr_t)buf;
		memset(&io, 0, sizeof(io));
		io.iov = (uintptr_t)&iov;
		io.nr_iov = 1;
		ret = is_write ? rpage_write(fd, &io) : rpage_read(fd, &io);
		if (ret < 0) {
			fail_transfer(is_write, fd, argv[0], argv[1], -ret);
			goto out;
		}
		if (!is_write && write_full(file, buf, chunk) < 0) {
			fail("%s: %s: %s", subject, path_name, strerror(errno));
			goto out;
		}
	}
	status = 0;
out:
	if (file >= 0 && path && strcmp(path, "-")) {
		if (close(file) < 0 && !status) {
			fail("%s: %s: %s", subject, path, strerror(errno));
			status = 1;
		}
	}
	free(buf);
	close(fd);
	return status;
}

static int cmd_read(int argc, char **argv)
{
	return transfer(false, argc, argv);
}

static int cmd_write(int argc, char **argv)
{
	return transfer(true, argc, argv);
}

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

static int cmd_stat(int argc, char **argv)
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

static int cmd_help(int argc, char **argv);

struct rpagectl_object {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct rpagectl_object objects[] = {
	{ "device",   cmd_device,   "RDMA devices rpage.ko is attached to" },
	{ "endpoint", cmd_endpoint, "addresses rpage.ko accepts peers' connections on" },
	{ "peer",     cmd_peer,     "hosts rpage.ko connects to, and their state" },
	{ "pool",     cmd_pool,     "memory this host exports to its peers, and theirs" },
	{ "read",     cmd_read,     "copy pages of a peer's pool to a file" },
	{ "write",    cmd_write,    "copy a file into pages of a peer's pool" },
	{ "stat",     cmd_stat,     "counters and latency of reads and writes, by peer and device" },
	{ "version",  cmd_version,  "library and module versions" },
	{ "help",     cmd_help,     "this text" },
};

static int cmd_help(int argc, char **argv)
{
	puts("Usage: rpagectl [ OPTIONS ] OBJECT { COMMAND | help }\n"
	     "OPTIONS := { -j | --json | -p | --pretty | -V | --version | -h | --help }\n"
	     "OBJECT :=");
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		printf("    %-10s %s\n", objects[i].name, objects[i].summary);
	return 0;
}

static const struct rpagectl_object *find_object(const char *typed)
{
	const struct rpagectl_object *found = NULL;

	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (!matches(typed, objects[i].name))
			continue;
		if (!strcmp(typed, objects[i].name))
			return &objects[i];
		if (found)
			return NULL;	/* ambiguous */
		found = &objects[i];
	}
	return found;
}

/*
 * Global options: short ones may be combined (-jp); long ones are
 * spelled out (--json) or abbreviated (--js). Returns the index of the
 * first word after them, or -1 (with *status set) when done already.
 */
static int parse_options(int argc, char **argv, int *status)
{
	static const struct { char letter; const char *name; } opts[] = {
		{ 'j', "json" }, { 'p', "pretty" }, { 'V', "version" },
		{ 'h', "help" },
	};
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *arg = argv[i];
		char letters[8] = "";

		if (arg[1] == '-') {
			for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
				if (matches(arg + 2, opts[o].name))
					letters[0] = opts[o].letter;
			if (!letters[0]) {
				*status = usage_error("unknown option '%s'", arg);
				return -1;
			}
		} else {
			snprintf(letters, sizeof(letters), "%s", arg + 1);
		}
		for (const char *l = letters; *l; l++) {
			switch (*l) {
			case 'j':
				opt_json = true;
				break;
			case 'p':
				opt_pretty = true;
				break;
			case 'V':
				printf("rpagectl %s\n", rpage_lib_version());
				*status = 0;
				return -1;
			case 'h':
				*status = cmd_help(0, NULL);
				return -1;
			default:
				*status = usage_error("unknown option '%s'", arg);
				return -1;
			}
		}
	}
	return i;
}

int main(int argc, char **argv)
{
	const struct rpagectl_object *obj;
	int i, status;

	i = parse_options(argc, argv, &status);
	if (i < 0)
		return status;
	if (i == argc) {
		cmd_help(0, NULL);
		return EXIT_USAGE;
	}
	obj = find_object(argv[i]);
	if (!obj)
		return usage_error("unknown or ambiguous object '%s'", argv[i]);
	return obj->run(argc - i - 1, argv + i + 1);
}
