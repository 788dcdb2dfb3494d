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
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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

	if (argc > 0 && !matches(argv[0], "help"))
		return usage_error("version: unexpected argument '%s'", argv[0]);
	if (argc > 0) {
		puts("Usage: rpagectl version");
		return 0;
	}

	fd = open_device(&api);
	if (fd < 0) {
		/* Still tell what this side is. */
		fprintf(stderr, "rpagectl: library %s API %d\n",
			rpage_lib_version(), RPAGE_API);
		return 1;
	}
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
	struct rpage_device_info *infos = NULL;
	struct rpage_device_list list;
	struct json_writer jw;
	uint32_t capacity = 0;
	char guid[32];
	int ret;

	/* The list may grow between the count and the fetch: retry. */
	for (;;) {
		memset(&list, 0, sizeof(list));
		list.capacity = capacity;
		list.devices = (uintptr_t)infos;
		ret = rpage_device_list(fd, &list);
		if (ret < 0) {
			fail("device show: %s", strerror(-ret));
			free(infos);
			return 1;
		}
		if (list.count <= capacity)
			break;
		capacity = list.count;
		free(infos);
		infos = calloc(capacity, sizeof(*infos));
		if (!infos) {
			fail("device show: %s", strerror(ENOMEM));
			return 1;
		}
	}

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (uint32_t i = 0; i < list.count; i++) {
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

static int cmd_help(int argc, char **argv);

struct rpagectl_object {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct rpagectl_object objects[] = {
	{ "device",  cmd_device,  "RDMA devices rpage.ko is attached to" },
	{ "version", cmd_version, "library and module versions" },
	{ "help",    cmd_help,    "this text" },
};

static int cmd_help(int argc, char **argv)
{
	puts("Usage: rpagectl [ OPTIONS ] OBJECT { COMMAND | help }\n"
	     "OPTIONS := { -j[son] | -p[retty] | -V[ersion] | -h[elp] }\n"
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

int main(int argc, char **argv)
{
	const struct rpagectl_object *obj;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *opt = argv[i] + 1 + (argv[i][1] == '-');

		if (matches(opt, "json")) {
			opt_json = true;
		} else if (matches(opt, "pretty")) {
			opt_pretty = true;
		} else if (matches(opt, "Version")) {
			printf("rpagectl %s\n", rpage_lib_version());
			return 0;
		} else if (matches(opt, "help")) {
			return cmd_help(0, NULL);
		} else {
			return usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		return cmd_help(0, NULL), EXIT_USAGE;

	obj = find_object(argv[i]);
	if (!obj)
		return usage_error("unknown or ambiguous object '%s'", argv[i]);
	return obj->run(argc - i - 1, argv + i + 1);
}
