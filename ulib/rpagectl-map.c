// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl map: named mappings, the host's remote mappings that a VMM
 * opens by path (/dev/rpage-map/NAME).
 *
 *   rpagectl map add NAME peer PEER pool ID [ offset O ] [ length L ]
 *                    [ owner USER ] [ group GROUP ] [ mode MODE ] [ readahead ]
 *                    [ pagesize { 4K | 2M } ]
 *   rpagectl map del NAME [ force ]
 *   rpagectl map pull NAME [ depth D ] [ wait ]
 *   rpagectl map evict NAME [ offset O ] [ length L ]
 *   rpagectl map [ show [ NAME ] ]
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rpagectl.h"

static void map_usage(void)
{
	puts("Usage: rpagectl map add NAME peer PEER pool ID [ offset OFFSET ] [ length LENGTH ]\n"
	     "                    [ owner USER ] [ group GROUP ] [ mode MODE ] [ readahead ]\n"
	     "                    [ pagesize { 4K | 2M } ]\n"
	     "       rpagectl map del NAME [ force ]\n"
	     "       rpagectl map pull NAME [ depth DEPTH ] [ wait ]\n"
	     "       rpagectl map evict NAME [ offset OFFSET ] [ length LENGTH ]\n"
	     "       rpagectl map [ show [ NAME ] ]\n"
	     "NAME := 1 to 63 of [A-Za-z0-9._-]: the node is /dev/" RPAGE_MAP_NODE_DIR "/NAME\n"
	     "OFFSET, LENGTH := bytes, multiples of the page size; K, M or G may follow\n"
	     "                  (LENGTH: the rest of the pool, or of the mapping, by default)\n"
	     "USER, GROUP := a name or a number (root by default); MODE := octal (0600)\n"
	     "DEPTH := READs in flight, 1 to 256 (32 by default)");
}

/* What the module takes as a name: the node's name under /dev/rpage-map. */
static bool map_name_valid(const char *name)
{
	size_t len = strlen(name);

	return len && len < RPAGE_NAME_MAX &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-") == len &&
	       strcmp(name, ".") && strcmp(name, "..");
}

static int map_name_error(const char *what, const char *name)
{
	return usage_error("%s: NAME '%s' must be 1 to 63 of [A-Za-z0-9._-], not . or ..",
			   what, name);
}

/* A user or group, by name or number, into @id; 0 or a usage error. */
static int parse_owner(const char *subject, const char *what, const char *text,
		       bool group, __u32 *id)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (*text && !*end && !errno && v < UINT32_MAX) {
		*id = v;
		return 0;
	}
	if (group) {
		struct group *gr = getgrnam(text);

		if (gr) {
			*id = gr->gr_gid;
			return 0;
		}
	} else {
		struct passwd *pw = getpwnam(text);

		if (pw) {
			*id = pw->pw_uid;
			return 0;
		}
	}
	return usage_error("%s: %s '%s': no such %s", subject, what, text,
			   group ? "group" : "user");
}

/* The length of @peer's pool @id, as it announced it; 0 if unknown. */
static uint64_t remote_pool_length(int fd, const char *peer, uint64_t id)
{
	struct rpage_remote_pool_info *infos;
	void *buf = NULL;
	uint64_t length = 0;
	int count;

	count = rpage_list_all(fd, rpage_remote_pool_list, sizeof(*infos), &buf);
	infos = buf;
	for (int i = 0; i < count; i++)
		if (!strncmp(infos[i].peer, peer, sizeof(infos[i].peer)) &&
		    infos[i].id == id)
			length = infos[i].length;
	free(buf);
	return length;
}

static const char *map_add_words(int err)
{
	switch (err) {
	case EEXIST:
		return "a named mapping with this name exists";
	case ENOENT:
		return "the peer does not announce this pool (rpagectl pool show remote)";
	case ERANGE:
		return "offset and length go beyond the pool";
	case E2BIG:
		return "longer than a mapping may be";
	case ENOTCONN:
		return "the peer is unreachable (rpagectl peer show)";
	case ENOSPC:
		return "no room for another named mapping";
	case EOPNOTSUPP:
		return "this kernel has no transparent huge pages for pagesize 2M";
	}
	return NULL;
}

struct map_add_args {
	const char *peer;
	const char *pool_text;
	const char *length_text;
	struct rpage_map_add add;
};

/* The words after NAME of `map add`, into @a; 0 or a usage error. */
static int map_add_parse(const char *subject, int argc, char **argv,
			 struct map_add_args *a)
{
	uint64_t v;
	int ret;

	for (int i = 0; i < argc; i++) {
		const char *key = argv[i];

		if (matches(key, "readahead")) {
			a->add.flags |= RPAGE_MAP_READAHEAD;
			continue;
		}
		if (i + 1 >= argc)
			return usage_error("%s: '%s' needs a value", subject, key);
		const char *val = argv[++i];

		if (matches(key, "peer")) {
			ret = check_peer_name(subject, val);
			if (ret)
				return ret;
			a->peer = val;
		} else if (matches(key, "pool")) {
			ret = parse_pool_id(subject, val, &v);
			if (ret)
				return ret;
			a->add.pool_id = v;
			a->pool_text = val;
		} else if (matches(key, "offset")) {
			ret = parse_bytes(subject, "offset", val, true, &v);
			if (ret)
				return ret;
			a->add.offset = v;
		} else if (matches(key, "length")) {
			ret = parse_bytes(subject, "length", val, false, &v);
			if (ret)
				return ret;
			a->add.length = v;
			a->length_text = val;
		} else if (matches(key, "owner")) {
			ret = parse_owner(subject, "owner", val, false, &a->add.uid);
			if (ret)
				return ret;
		} else if (matches(key, "group")) {
			ret = parse_owner(subject, "group", val, true, &a->add.gid);
			if (ret)
				return ret;
		} else if (matches(key, "mode")) {
			char *end;
			unsigned long mode = strtoul(val, &end, 8);

			if (!*val || *end || mode > 0777)
				return usage_error("%s: mode '%s': want octal permission bits, at most 0777",
						   subject, val);
			a->add.mode = mode;
		} else if (matches(key, "pagesize")) {
			if (!strcasecmp(val, "2M"))
				a->add.flags |= RPAGE_MAP_HUGE;
			else if (strcasecmp(val, "4K"))
				return usage_error("%s: pagesize '%s' is neither 4K nor 2M",
						   subject, val);
		} else {
			return usage_error("%s: unexpected argument '%s'", subject, key);
		}
	}
	if (!a->peer)
		return usage_error("%s: missing 'peer PEER'", subject);
	if (!a->pool_text)
		return usage_error("%s: missing 'pool ID'", subject);
	return 0;
}

static int map_add(int argc, char **argv)
{
	const char *what = "map add";
	struct map_add_args a = { .add.mode = 0600 };
	char subject[RPAGE_NAME_MAX + 16];
	struct rpage_api api;
	uint64_t pool_length;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	if (!map_name_valid(argv[0]))
		return map_name_error(what, argv[0]);
	strcpy(a.add.name, argv[0]);
	ret = map_add_parse(subject, argc - 1, argv + 1, &a);
	if (ret)
		return ret;

	fd = open_device(&api);
	if (fd < 0)
		return 1;
	ret = find_peer_id(fd, a.peer, &a.add.peer_id);
	if (ret) {
		close(fd);
		return fail_cmd(what, argv[0], -ret,
				ret == -ENOENT ? "no such peer" : NULL);
	}
	/*
	 * To the pool's end: the kernel looks the length up once the peer
	 * is connected (a peer added a moment ago, as in a configuration
	 * applied at boot, has announced nothing yet). An older module
	 * needs it from the pools announced now.
	 */
	if (!a.length_text && (api.features & RPAGE_FEATURE_MAP_TO_END)) {
		a.add.flags |= RPAGE_MAP_TO_END;
	} else if (!a.length_text) {
		pool_length = remote_pool_length(fd, a.peer, a.add.pool_id);
		if (!pool_length) {
			close(fd);
			return fail_cmd(what, argv[0], ENOENT, map_add_words(ENOENT));
		}
		if (a.add.offset >= pool_length) {
			close(fd);
			return fail_cmd(what, argv[0], ERANGE, map_add_words(ERANGE));
		}
		a.add.length = pool_length - a.add.offset;
	}
	ret = rpage_map_add(fd, &a.add);
	close(fd);
	if (!ret)
		return 0;
	if (ret == -EINVAL && (a.add.flags & RPAGE_MAP_HUGE))
		return fail_cmd(what, argv[0], EINVAL,
				"pagesize 2M needs an offset that is a multiple of 2 MiB, and no readahead");
	return fail_cmd(what, argv[0], -ret, map_add_words(-ret));
}

static int map_del(int argc, char **argv)
{
	const char *what = "map del";
	struct rpage_map_del del;
	const char *words = NULL;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	memset(&del, 0, sizeof(del));
	if (!map_name_valid(argv[0]))
		return map_name_error(what, argv[0]);
	strcpy(del.name, argv[0]);
	for (int i = 1; i < argc; i++) {
		if (!matches(argv[i], "force"))
			return usage_error("%s %s: unexpected argument '%s'", what,
					   argv[0], argv[i]);
		del.flags |= RPAGE_MAP_DEL_FORCE;
	}
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_map_del(fd, &del);
	close(fd);
	if (!ret)
		return 0;
	if (ret == -ENOENT)
		words = "no such named mapping";
	else if (ret == -EBUSY)
		words = "in use: a process has it open or mapped ('force' makes its further accesses SIGBUS)";
	return fail_cmd(what, argv[0], -ret, words);
}

/*
 * Opens /dev/rpage and finds the named mapping @name into @info: the
 * open file, or -1 once the failure is said.
 */
static int map_open_named(const char *what, const char *name,
			  struct rpage_map_info *info)
{
	int fd, ret;

	fd = open_device(NULL);
	if (fd < 0)
		return -1;
	ret = find_named_entry(fd, rpage_map_list, sizeof(*info), name, info);
	if (ret) {
		close(fd);
		fail_cmd(what, name, -ret,
			 ret == -ENOENT ? "no such named mapping" : NULL);
		return -1;
	}
	info->peer[sizeof(info->peer) - 1] = '\0';
	return fd;
}

/* A pull waited for, run by a thread of its own: see pull_wait(). */
struct pull_call {
	int fd;
	struct rpage_prefetch pf;
	int ret;
	bool done;	/* a hint for the progress loop: the join is what counts */
};

static void *pull_thread(void *arg)
{
	struct pull_call *call = arg;

	call->ret = rpage_map_prefetch(call->fd, &call->pf);
	__atomic_store_n(&call->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The pages of the named mapping @name that are here, or -1. */
static int64_t pages_local(int fd, const char *name)
{
	struct rpage_map_info info;

	if (find_named_entry(fd, rpage_map_list, sizeof(info), name, &info))
		return -1;
	return (int64_t)info.pages_local;
}

/*
 * RPAGE_IOC_MAP_PREFETCH of @call, waiting for the pull to end; on a
 * terminal, a line on standard error meanwhile says how far it got, how
 * fast and how long it has left, read from the mapping's pages here
 * twice a second.
 */
static void pull_wait(struct pull_call *call, const char *name, uint64_t pages)
{
	bool progress = !opt_json && isatty(STDERR_FILENO);
	double t0 = now_s(), shown = 0, rate;
	int64_t first = -1, local;
	pthread_t thread;

	call->done = false;
	if (!progress || pthread_create(&thread, NULL, pull_thread, call)) {
		pull_thread(call);
		return;
	}
	while (!__atomic_load_n(&call->done, __ATOMIC_ACQUIRE)) {
		usleep(20000);
		if (now_s() - shown < 0.5)
			continue;
		shown = now_s();
		local = pages_local(call->fd, name);
		if (local < 0)
			continue;
		if (first < 0)
			first = local;
		rate = (double)(local - first) / (shown - t0);

		fprintf(stderr, "\r%s: %" PRId64 "/%" PRIu64 " pages (%.0f%%), %.1f MiB/s",
			name, local, pages, pages ? 100.0 * (double)local / (double)pages : 100.0,
			rate * (double)page_size() / (1 << 20));
		if (rate > 0)
			fprintf(stderr, ", %.0fs left",
				(double)(pages - (uint64_t)local) / rate);
		fprintf(stderr, "\033[K");
	}
	pthread_join(thread, NULL);
	if (shown)
		fprintf(stderr, "\r\033[K");
}

/*
 * map pull NAME [depth D] [wait]: fetches every page not here yet, in
 * the background (demand faults first), or waiting with 'wait', and
 * keeps every page from then on (reclaim drops none); once all are here
 * the mapping needs its peer no more. With 'wait', a summary at the end
 * (and progress meanwhile, on a terminal).
 */
static int map_pull(int argc, char **argv)
{
	const char *what = "map pull";
	struct rpage_map_info info, after;
	struct pull_call call;
	struct rpage_prefetch *pf = &call.pf;
	char subject[RPAGE_NAME_MAX + 16];
	uint64_t depth = 0, pages;
	struct json_writer jw;
	bool wait = false;
	double t0, secs;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	for (int i = 1; i < argc; i++) {
		if (matches(argv[i], "wait")) {
			wait = true;
		} else if (matches(argv[i], "depth") && i + 1 < argc) {
			char *end;

			depth = strtoull(argv[++i], &end, 10);
			if (!*argv[i] || *end || !depth || depth > RPAGE_PREFETCH_DEPTH_MAX)
				return usage_error("%s: depth '%s': want 1 to %d", subject,
						   argv[i], RPAGE_PREFETCH_DEPTH_MAX);
		} else {
			return usage_error("%s: unexpected argument '%s'", subject, argv[i]);
		}
	}
	fd = map_open_named(what, argv[0], &info);
	if (fd < 0)
		return 1;
	pages = info.length / page_size();
	memset(&call, 0, sizeof(call));
	call.fd = fd;
	pf->map_id = info.map_id;
	pf->depth = depth;
	pf->length = info.length;
	/* Pulled pages stay: reclaim would have to read them from the peer. */
	pf->flags = RPAGE_PREFETCH_KEEP | (wait ? RPAGE_PREFETCH_WAIT : 0);
	t0 = now_s();
	pull_wait(&call, info.name, pages);
	ret = call.ret;
	if (ret == -EINVAL) {
		/* A module without RPAGE_FEATURE_RECLAIM keeps every page. */
		pf->flags &= ~RPAGE_PREFETCH_KEEP;
		pull_wait(&call, info.name, pages);
		ret = call.ret;
	}
	secs = now_s() - t0;
	if (ret) {
		close(fd);
		return fail_cmd(what, argv[0], -ret, ret == -ENOTCONN && !info.peer[0] ?
				"its peer was deleted: the pages not here are lost" : NULL);
	}
	if (!wait) {
		close(fd);
		return 0;
	}
	/* What is here now, for the summary. */
	if (find_named_entry(fd, rpage_map_list, sizeof(after), argv[0], &after))
		after.pages_local = 0;
	close(fd);
	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_object(&jw, NULL);
		json_string(&jw, "name", info.name);
		json_uint(&jw, "queued", pf->queued);
		json_uint(&jw, "failed", pf->failed);
		json_uint(&jw, "pages_local", after.pages_local);
		json_uint(&jw, "pages", pages);
		json_uint(&jw, "ms", (uint64_t)(secs * 1000 + 0.5));
		json_close_object(&jw);
		json_finish(&jw);
	} else {
		printf("%s queued %" PRIu64 " failed %" PRIu64 " local %" PRIu64 "/%" PRIu64
		       " time %.3fs rate %.1fMiB/s\n", info.name, (uint64_t)pf->queued,
		       (uint64_t)pf->failed, (uint64_t)after.pages_local, pages, secs,
		       secs > 0 ? (double)(pf->queued - pf->failed) * (double)page_size() /
				  (1 << 20) / secs : 0.0);
	}
	if (pf->failed) {
		fail("%s: %" PRIu64 " of %" PRIu64 " pages could not be read",
		     subject, (uint64_t)pf->failed, (uint64_t)pf->queued);
		return 1;
	}
	return 0;
}

static const char *map_evict_words(int err, const struct rpage_map_info *info)
{
	switch (err) {
	case ENOTCONN:
		/* No page it dropped could ever be read again. */
		if (!info->peer[0])
			return "its peer was deleted: its pages stay, since nobody could serve them again";
		return "the peer is unreachable (rpagectl peer show)";
	case ERANGE:
		return "offset and length go beyond the mapping";
	case EROFS:
		return "its pool is read-only";
	case ESTALE:
		return "the peer replaced its pool: nothing was written to the new one";
	case ENOENT:
		return "its pool is gone";
	}
	return NULL;
}

/*
 * map evict NAME [offset O] [length L]: writes the dirty pages of the
 * range back to the pool and drops every page of it from every process,
 * so that the next touch reads it again; all or nothing.
 */
static int map_evict(int argc, char **argv)
{
	const char *what = "map evict";
	struct rpage_map_info info;
	struct rpage_evict ev;
	char subject[RPAGE_NAME_MAX + 16];
	bool have_length = false;
	struct json_writer jw;
	uint64_t v;
	int fd, ret;

	if (argc < 1)
		return usage_error("%s: missing NAME", what);
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	memset(&ev, 0, sizeof(ev));
	for (int i = 1; i < argc; i++) {
		const char *key = argv[i];

		if (i + 1 >= argc)
			return usage_error("%s: '%s' needs a value", subject, key);
		if (matches(key, "offset")) {
			ret = parse_bytes(subject, "offset", argv[++i], true, &v);
			if (ret)
				return ret;
			ev.offset = v;
		} else if (matches(key, "length")) {
			ret = parse_bytes(subject, "length", argv[++i], false, &v);
			if (ret)
				return ret;
			ev.length = v;
			have_length = true;
		} else {
			return usage_error("%s: unexpected argument '%s'", subject, key);
		}
	}
	fd = map_open_named(what, argv[0], &info);
	if (fd < 0)
		return 1;
	ev.map_id = info.map_id;
	if (!have_length) {
		if (ev.offset >= info.length) {
			close(fd);
			return fail_cmd(what, argv[0], ERANGE, map_evict_words(ERANGE, &info));
		}
		ev.length = info.length - ev.offset;
	}
	ret = rpage_map_evict(fd, &ev);
	close(fd);
	if (ret)
		return fail_cmd(what, argv[0], -ret, map_evict_words(-ret, &info));
	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_object(&jw, NULL);
	}
	print_str(opt_json ? &jw : NULL, "name", NULL, info.name);
	print_u64(opt_json ? &jw : NULL, "evicted", "evicted", ev.evicted);
	print_u64(opt_json ? &jw : NULL, "written", "written", ev.written);
	if (opt_json) {
		json_close_object(&jw);
		json_finish(&jw);
	} else {
		putchar('\n');
	}
	return 0;
}

static void map_print(struct json_writer *jw, const struct rpage_map_info *m)
{
	char node[RPAGE_NAME_MAX + 32], local[64], mode[16];

	snprintf(node, sizeof(node), "/dev/" RPAGE_MAP_NODE_DIR "/%s", m->name);
	snprintf(local, sizeof(local), "%" PRIu64 "/%" PRIu64,
		 (uint64_t)m->pages_local, (uint64_t)m->length / page_size());
	snprintf(mode, sizeof(mode), "0%o", m->mode);

	if (jw)
		json_open_object(jw, NULL);
	print_str(jw, "name", NULL, m->name);
	print_u64(jw, "id", "id", m->map_id);
	/* Its pages not here are lost: nobody can serve them any more. */
	print_str_opt(jw, "peer", "peer", m->peer[0] ? m->peer : NULL, "(deleted)");
	print_u64(jw, "pool", "pool", m->pool_id);
	print_u64(jw, "offset", "offset", m->offset);
	print_u64(jw, "length", "length", m->length);
	if (jw) {
		json_uint(jw, "pages_local", m->pages_local);
		json_uint(jw, "pages", m->length / page_size());
	} else {
		printf(" local %s", local);
	}
	print_u64(jw, "users", "users", m->users);
	/* Once every page is here, the peer and its pool may go. */
	print_bool(jw, "depends", "depends",
		   m->pages_local < m->length / page_size(), "yes", "no");
	print_bool(jw, "readahead", "readahead", m->flags & RPAGE_MAP_READAHEAD,
		   "on", "off");
	print_str(jw, "pagesize", "pagesize", m->flags & RPAGE_MAP_HUGE ? "2M" : "4K");
	if (!jw)
		printf("\n   ");
	print_str(jw, "node", "node", node);
	print_u64(jw, "uid", "uid", m->uid);
	print_u64(jw, "gid", "gid", m->gid);
	print_str(jw, "mode", "mode", mode);
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

static int map_show(const char *name)
{
	struct rpage_map_info *infos;
	struct json_writer jw;
	bool found = false;
	void *buf = NULL;
	int fd, count;

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	count = rpage_list_all(fd, rpage_map_list, sizeof(*infos), &buf);
	close(fd);
	infos = buf;
	if (count < 0)
		return fail_cmd("map show", name, -count, NULL);
	for (int i = 0; i < count; i++) {
		infos[i].name[sizeof(infos[i].name) - 1] = '\0';
		infos[i].peer[sizeof(infos[i].peer) - 1] = '\0';
		found |= name && !strcmp(infos[i].name, name);
	}
	/* An unknown NAME prints nothing but its failure (no empty list). */
	if (name && !found) {
		free(infos);
		return fail_cmd("map show", name, ENOENT, "no such named mapping");
	}
	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		if (name && strcmp(infos[i].name, name))
			continue;
		map_print(opt_json ? &jw : NULL, &infos[i]);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	return 0;
}

enum { MAP_ADD, MAP_DEL, MAP_PULL, MAP_EVICT, MAP_SHOW, MAP_HELP };

static const char *const map_commands[] = {
	[MAP_ADD] = "add", [MAP_DEL] = "del", [MAP_PULL] = "pull",
	[MAP_EVICT] = "evict", [MAP_SHOW] = "show", [MAP_HELP] = "help", NULL,
};

int cmd_map(int argc, char **argv)
{
	int cmd = argc > 0 ? find_command(argv[0], map_commands) : MAP_SHOW;

	if (cmd < 0)
		return usage_error("map: unknown command '%s'", argv[0]);
	switch (cmd) {
	case MAP_HELP:
		map_usage();
		return 0;
	case MAP_ADD:
		return map_add(argc - 1, argv + 1);
	case MAP_DEL:
		return map_del(argc - 1, argv + 1);
	case MAP_PULL:
		return map_pull(argc - 1, argv + 1);
	case MAP_EVICT:
		return map_evict(argc - 1, argv + 1);
	}
	if (argc > 2)
		return usage_error("map show %s: unexpected argument '%s'", argv[1],
				   argv[2]);
	return map_show(argc > 1 ? argv[1] : NULL);
}
