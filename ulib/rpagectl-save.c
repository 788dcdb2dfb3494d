// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl save: the host's configuration (endpoints, peers, the pools
 * the module allocated, named mappings) as the rpagectl commands that
 * make it again, one a line, for `rpagectl -b` on the next boot
 * (rpage-setup(8) applies /etc/rpage/rpage.conf). What belongs to a
 * process or to a running VM rather than to the host (pools a process
 * exported, pools of a VMM's file) is listed as comments: it is made
 * again by whoever made it.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

/* @bytes with the largest of G, M and K that divides it, as SIZE takes. */
static void format_size(uint64_t bytes, char *buf, size_t len)
{
	static const struct { unsigned int shift; char suffix; } units[] = {
		{ 30, 'G' }, { 20, 'M' }, { 10, 'K' },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (bytes && !(bytes & ((1ULL << units[i].shift) - 1))) {
			snprintf(buf, len, "%" PRIu64 "%c", bytes >> units[i].shift,
				 units[i].suffix);
			return;
		}
	}
	snprintf(buf, len, "%" PRIu64, bytes);
}

/* Milliseconds as the seconds loss-timeout takes: 60, 2.5, 0.001. */
static void format_seconds(uint32_t ms, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%u.%03u", ms / 1000, ms % 1000);

	/* Trailing zeros of the fraction go, and its point with them. */
	while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && (size_t)n < len && buf[n - 1] == '.')
		buf[--n] = '\0';
}

static int save_endpoints(int fd)
{
	struct rpage_endpoint_info *eps;
	void *buf = NULL;
	char addr[RPAGE_ADDR_STRLEN];
	int count;

	count = rpage_list_all(fd, rpage_endpoint_list, sizeof(*eps), &buf);
	eps = buf;
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		__u32 bits = eps[i].transport;
		bool rdma = bits & (1U << RPAGE_TRANSPORT_RDMA);
		bool tcp = bits & (1U << RPAGE_TRANSPORT_TCP);

		if (rpage_addr_format(&eps[i].addr, addr, sizeof(addr)) < 0)
			continue;
		/*
		 * What it listens with now: both (or a module that does not
		 * say, which had RDMA alone) is what auto gives where the
		 * address has an RDMA device.
		 */
		printf("endpoint add %s port %u transport %s\n", addr,
		       eps[i].addr.port,
		       rdma && !tcp ? "rdma" : tcp && !rdma ? "tcp" : "auto");
	}
	free(eps);
	return 0;
}

static int save_peers(int fd, struct rpage_peer_info **peers_out)
{
	struct rpage_peer_status *sts = NULL;
	struct rpage_peer_info *peers;
	void *buf = NULL;
	char addr[RPAGE_ADDR_STRLEN], secs[32], param[32];
	unsigned long default_ms;
	int count, nr_st;

	count = rpage_list_all(fd, rpage_peer_list, sizeof(*peers), &buf);
	peers = buf;
	if (count < 0)
		return count;
	buf = NULL;
	nr_st = rpage_list_all(fd, rpage_peer_status, sizeof(*sts), &buf);
	sts = buf;
	if (nr_st < 0)
		nr_st = 0;	/* a module without loss timeouts per peer */
	read_module_param("loss_timeout_ms", param, sizeof(param));
	default_ms = strtoul(param, NULL, 10);

	for (int i = 0; i < count; i++) {
		const struct rpage_peer_info *p = &peers[i];

		printf("peer add %.*s", RPAGE_NAME_MAX - 1, p->name);
		if (p->transport == RPAGE_TRANSPORT_LOOP) {
			printf(" transport loop");
		} else {
			if (rpage_addr_format(&p->addr, addr, sizeof(addr)) < 0)
				snprintf(addr, sizeof(addr), "?");
			printf(" addr %s port %u transport %s", addr,
			       p->addr.port, rpage_transport_name(p->transport) ?: "auto");
		}
		/* Only where it is not the module's default. */
		for (int j = 0; j < nr_st; j++) {
			if (sts[j].peer_id != p->id ||
			    sts[j].loss_timeout_ms == default_ms)
				continue;
			format_seconds(sts[j].loss_timeout_ms, secs, sizeof(secs));
			printf(" loss-timeout %s", secs);
		}
		putchar('\n');
	}
	free(sts);
	*peers_out = peers;
	return count;
}

static int save_pools(int fd, const struct rpage_peer_info *peers,
		      int nr_peers)
{
	static char names[RPAGE_POOL_MAX_PEERS][RPAGE_NAME_MAX];
	struct rpage_pool_info *pools;
	void *buf = NULL;
	char size[32];
	int count;

	count = rpage_list_all(fd, rpage_pool_list, sizeof(*pools), &buf);
	pools = buf;
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		const struct rpage_pool_info *p = &pools[i];
		const char *writable = p->flags & RPAGE_POOL_WRITABLE ?
				       " writable" : "";
		int nr = 0, shown = 0;

		format_size(p->length, size, sizeof(size));
		if (p->kind == RPAGE_POOL_USER) {
			printf("# pool %" PRIu64 ": memory of process %u, exported through the library; it exports it again\n",
			       (uint64_t)p->id, p->owner_pid);
			continue;
		}
		if (p->kind == RPAGE_POOL_FILE) {
			printf("# pool %" PRIu64 ": %s of a file whose path rpage does not keep:\n"
			       "# pool create %" PRIu64 " file PATH offset OFFSET size %s%s\n",
			       (uint64_t)p->id, size, (uint64_t)p->id, size,
			       writable);
			continue;
		}
		if (p->kind != RPAGE_POOL_KERNEL) {
			printf("# pool %" PRIu64 ": of a kind this rpagectl does not know (%u)\n",
			       (uint64_t)p->id, p->kind);
			continue;
		}
		if (p->flags & RPAGE_POOL_SCOPED) {
			nr = pool_peer_names(fd, p->id, peers, nr_peers, names);
			if (nr == -ENOENT)
				continue;	/* destroyed since the list */
			if (nr < 0) {
				free(pools);
				return nr;
			}
		}
		printf("pool create %" PRIu64 " size %s%s", (uint64_t)p->id, size,
		       writable);
		if (p->flags & RPAGE_POOL_SCOPED) {
			printf(" peers ");
			/* "#ID": a peer deleted since, which no name can name. */
			for (int j = 0; j < nr; j++)
				if (names[j][0] != '#')
					printf("%s%s", shown++ ? "," : "", names[j]);
			if (!shown)
				printf("none");
		}
		putchar('\n');
	}
	free(pools);
	return 0;
}

static void print_owner(const char *key, __u32 id, bool group)
{
	const char *name = NULL;

	if (group) {
		struct group *gr = getgrgid(id);

		if (gr)
			name = gr->gr_name;
	} else {
		struct passwd *pw = getpwuid(id);

		if (pw)
			name = pw->pw_name;
	}
	if (name && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	    strlen(name))
		printf(" %s %s", key, name);
	else
		printf(" %s %u", key, id);
}

static int save_maps(int fd)
{
	struct rpage_map_info *maps;
	void *buf = NULL;
	char offset[32], length[32];
	int count;

	count = rpage_list_all(fd, rpage_map_list, sizeof(*maps), &buf);
	maps = buf;
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		const struct rpage_map_info *m = &maps[i];

		format_size(m->offset, offset, sizeof(offset));
		format_size(m->length, length, sizeof(length));
		if (!m->peer[0]) {
			printf("# map %.*s: its peer was deleted; it holds only the pages it has\n",
			       RPAGE_NAME_MAX - 1, m->name);
			continue;
		}
		if (m->flags & ~RPAGE_MAP_FLAGS_ALL)
			printf("# map %.*s: flags 0x%x this rpagectl does not know, left out\n",
			       RPAGE_NAME_MAX - 1, m->name,
			       m->flags & ~RPAGE_MAP_FLAGS_ALL);
		printf("map add %.*s peer %.*s pool %" PRIu64 " offset %s length %s",
		       RPAGE_NAME_MAX - 1, m->name, RPAGE_NAME_MAX - 1, m->peer,
		       (uint64_t)m->pool_id, offset, length);
		print_owner("owner", m->uid, false);
		print_owner("group", m->gid, true);
		printf(" mode %04o%s%s\n", m->mode,
		       m->flags & RPAGE_MAP_READAHEAD ? " readahead" : "",
		       m->flags & RPAGE_MAP_HUGE ? " pagesize 2M" : "");
	}
	free(maps);
	return 0;
}

int cmd_save(int argc, char **argv)
{
	struct rpage_peer_info *peers = NULL;
	int fd, nr_peers, ret;

	if (argc > 0 && matches(argv[0], "help")) {
		puts("Usage: rpagectl save\n"
		     "Prints the endpoints, peers, pools and named mappings as the commands\n"
		     "that make them, for rpagectl -b FILE (such as /etc/rpage/rpage.conf)");
		return 0;
	}
	if (argc > 0)
		return usage_error("save: unexpected argument '%s'", argv[0]);
	if (opt_json)
		return usage_error("save: prints commands, not JSON (leave out -j)");

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	printf("# rpage configuration (rpagectl save); apply with rpagectl -b FILE\n");
	ret = save_endpoints(fd);
	if (!ret) {
		nr_peers = save_peers(fd, &peers);
		ret = nr_peers < 0 ? nr_peers : 0;
	}
	if (!ret)
		ret = save_pools(fd, peers, nr_peers);
	if (!ret)
		ret = save_maps(fd);
	free(peers);
	close(fd);
	if (ret)
		return fail_cmd("save", NULL, -ret, NULL);
	return 0;
}
