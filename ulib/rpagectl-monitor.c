// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl monitor: rpage's events as they happen, as `ip monitor` and
 * `rdma monitor` print theirs: a line per event, the time first, then
 * what changed in the words of `peer show`, `pool show remote` and `map
 * show`; with -j, a JSON object per line.
 *
 *   rpagectl monitor [ all | peer | pool | map ]...
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpagectl.h"

enum {
	MON_PEER = 1 << 0,
	MON_POOL = 1 << 1,
	MON_MAP = 1 << 2,
	MON_ALL = MON_PEER | MON_POOL | MON_MAP,
};

/* Which of MON_* an event belongs to. */
static unsigned int event_object(__u32 type)
{
	switch (type) {
	case RPAGE_EVENT_PEER_STATE:
		return MON_PEER;
	case RPAGE_EVENT_POOL_ADD:
	case RPAGE_EVENT_POOL_DEL:
		return MON_POOL;
	case RPAGE_EVENT_MAP_ADD:
	case RPAGE_EVENT_MAP_DEL:
	case RPAGE_EVENT_PREFETCH_END:
		return MON_MAP;
	}
	/* A newer module's: shown whatever the filter, by its number. */
	return MON_ALL;
}

static bool has(const struct rpage_event *ev, int attr)
{
	return ev->present & (1ULL << attr);
}

/* The event's time as text: local, to the millisecond. */
static void event_time(const struct rpage_event *ev, char *buf, size_t len)
{
	time_t sec = (time_t)(ev->time_ns / 1000000000ULL);
	struct tm tm;

	localtime_r(&sec, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03u",
		 (unsigned int)(ev->time_ns / 1000000ULL % 1000));
}

static void print_peer(struct json_writer *jw, const struct rpage_event *ev)
{
	print_str(jw, "peer", "peer", ev->peer);
	print_u64(jw, "peer_id", "id", ev->peer_id);
}

static void print_state(struct json_writer *jw, const char *key,
			const char *label, __u32 state)
{
	print_str_opt(jw, key, label, state ? rpage_peer_state_name(state) : NULL,
		      "none");
}

static void print_event(const struct rpage_event *ev)
{
	struct json_writer json, *jw = NULL;
	const char *name = rpage_event_name(ev->type);
	char when[32];

	if (opt_json) {
		jw = &json;
		/* One object a line, whatever -p says: a stream, not a document. */
		json_init(jw, stdout, false);
		json_open_object(jw, NULL);
		json_uint(jw, "time_ns", ev->time_ns);
	} else {
		event_time(ev, when, sizeof(when));
		printf("%s", when);
	}
	if (!jw)
		putchar(' ');
	if (name)
		print_str(jw, "event", NULL, name);
	else
		print_u64(jw, "event", NULL, ev->type);

	switch (ev->type) {
	case RPAGE_EVENT_PEER_STATE:
		print_peer(jw, ev);
		print_state(jw, "old_state", "from", ev->old_state);
		print_state(jw, "state", "to", ev->state);
		print_str(jw, "cause", "cause", ev->cause);
		break;
	case RPAGE_EVENT_POOL_ADD:
	case RPAGE_EVENT_POOL_DEL:
		print_peer(jw, ev);
		print_u64(jw, "pool", "pool", ev->pool_id);
		print_u64(jw, "length", "length", ev->pool_length);
		print_u64(jw, "generation", "generation", ev->pool_generation);
		if (ev->type == RPAGE_EVENT_POOL_DEL)
			print_str(jw, "cause", "cause", ev->cause);
		break;
	case RPAGE_EVENT_MAP_ADD:
		print_str(jw, "map", "map", ev->map);
		print_u64(jw, "map_id", "id", ev->map_id);
		print_str_opt(jw, "peer", "peer",
			      has(ev, RPAGE_EA_PEER_NAME) ? ev->peer : NULL,
			      "(deleted)");
		print_u64(jw, "pool", "pool", ev->pool_id);
		print_u64(jw, "offset", "offset", ev->map_offset);
		print_u64(jw, "length", "length", ev->map_length);
		break;
	case RPAGE_EVENT_MAP_DEL:
		print_str(jw, "map", "map", ev->map);
		print_u64(jw, "map_id", "id", ev->map_id);
		break;
	case RPAGE_EVENT_PREFETCH_END:
		print_u64(jw, "map_id", "map-id", ev->map_id);
		print_u64(jw, "pages", "pages", ev->pages);
		print_u64(jw, "failed", "failed", ev->failed);
		print_u64(jw, "local", "local", ev->local);
		print_u64(jw, "map_pages", "of", ev->map_pages);
		print_str_opt(jw, "stopped", "stopped",
			      has(ev, RPAGE_EA_CAUSE) ? ev->cause : NULL, "no");
		break;
	}
	if (jw) {
		json_close_object(jw);
		json_finish(jw);
	} else {
		putchar('\n');
		fflush(stdout);
	}
}

static unsigned int monitor_parse(int argc, char **argv, int *err)
{
	static const char *const objects[] = { "all", "peer", "pool", "map", NULL };
	static const unsigned int bits[] = { MON_ALL, MON_PEER, MON_POOL, MON_MAP };
	unsigned int want = 0;

	*err = 0;
	for (int i = 0; i < argc; i++) {
		int k = find_command(argv[i], objects);

		if (k < 0) {
			*err = usage_error("monitor: unknown object '%s' (all, peer, pool or map)",
					   argv[i]);
			return 0;
		}
		want |= bits[k];
	}
	return want ? want : MON_ALL;
}

int cmd_monitor(int argc, char **argv)
{
	struct rpage_event ev;
	unsigned int want;
	int fd, ret;

	if (argc > 0 && matches(argv[0], "help")) {
		puts("Usage: rpagectl monitor [ all | peer | pool | map ]...\n"
		     "Prints rpage's events as they happen, a line each (with -j, a JSON\n"
		     "object each): peers changing state and why, pools peers announce and\n"
		     "withdraw, named mappings added and deleted, pulls and prefetches\n"
		     "ending. Needs CAP_NET_ADMIN; ends with Ctrl-C.");
		return 0;
	}
	want = monitor_parse(argc, argv, &ret);
	if (!want)
		return ret;

	fd = rpage_events_open(0);
	if (fd == -ENOENT) {
		fail("monitor: no events: rpage.ko is not loaded, or is older than its events (rpagectl version)");
		return 1;
	}
	if (fd == -EPERM) {
		fail("monitor: listening to rpage's events needs CAP_NET_ADMIN");
		return 1;
	}
	if (fd < 0) {
		fail("monitor: %s", strerror(-fd));
		return 1;
	}
	for (;;) {
		ret = rpage_events_read(fd, &ev);
		if (ret == -EINTR)
			continue;
		if (ret == -ENOBUFS) {
			/* Like ip monitor: say so, and go on. */
			fail("monitor: events were lost (this reader fell behind); rpagectl peer show, pool show remote and map show give the state now");
			continue;
		}
		if (ret == -EPROTO) {
			fail("monitor: a message that is no event, skipped");
			continue;
		}
		if (ret < 0) {
			fail("monitor: %s", strerror(-ret));
			close(fd);
			return 1;
		}
		if (event_object(ev.type) & want)
			print_event(&ev);
	}
}
