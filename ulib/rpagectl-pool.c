// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: the `pool` object (the memory this host exports to its
 * peers, and the pools they export to it) and the `read` and `write`
 * commands, which copy pages of a peer's pool to or from a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

static const struct {
	__u32 bit;
	const char *name;
} pool_flag_names[] = {
	{ RPAGE_POOL_WRITABLE, "writable" },
	{ RPAGE_POOL_SCOPED, "scoped" },
};

#define NR_POOL_FLAGS (sizeof(pool_flag_names) / sizeof(pool_flag_names[0]))


/*
 * Pool flags, as text their names joined by ',' ("none" when no bit is
 * set), as JSON an array of the same words; a bit without a name in
 * hexadecimal.
 */
static void print_pool_flags(struct json_writer *jw, __u32 flags)
{
	const char *names[NR_POOL_FLAGS + 1];
	char unknown[16];
	size_t n = 0;

	for (size_t i = 0; i < NR_POOL_FLAGS; i++) {
		if (!(flags & pool_flag_names[i].bit))
			continue;
		flags &= ~pool_flag_names[i].bit;
		names[n++] = pool_flag_names[i].name;
	}
	if (flags) {
		snprintf(unknown, sizeof(unknown), "0x%x", flags);
		names[n++] = unknown;
	}
	print_list(jw, "flags", "flags", names, n, "none");
}

static void pool_usage(void)
{
	puts("Usage: rpagectl pool create ID size SIZE [ writable ] [ peers PEERS ]\n"
	     "       rpagectl pool create ID file PATH [ offset OFFSET ] [ size SIZE ] [ writable ]\n"
	     "                            [ peers PEERS ]\n"
	     "       rpagectl pool destroy ID\n"
	     "       rpagectl pool [ show [ remote ] ]\n"
	     "       rpagectl pool set ID peers PEERS\n"
	     "ID := 1..2^64-1, decimal or 0x-hexadecimal\n"
	     "SIZE := bytes, a multiple of the page size; K, M or G may follow\n"
	     "PATH := a file on tmpfs or hugetlbfs, such as a VMM's guest RAM in /dev/shm;\n"
	     "        SIZE: the rest of it by default\n"
	     "PEERS := NAME[,NAME...] | none | all: the peers the pool is announced to\n"
	     "         and served to (all by default)");
}

/* The pool ID a `pool` command takes first, in *@id; or 2, said. */
static int pool_id_arg(const char *what, int argc, char **argv, uint64_t *id)
{
	if (argc < 1)
		return usage_error("%s: missing ID", what);
	return parse_pool_id(what, argv[0], id);
}

/*
 * The ids of the peers named in @text (NAME[,NAME...], "none" or "all")
 * in @pp: its @peers (malloc'd into *@ids), @nr_peers and @flags.
 * Reports and returns 1 for an unknown name.
 */
static int parse_pool_peers(int fd, const char *subject, const char *text,
			    struct rpage_pool_peers *pp, __u32 **ids)
{
	char *copy, *name, *save = NULL;
	int ret = 0;

	*ids = NULL;
	pp->nr_peers = 0;
	pp->flags = 0;
	if (!strcmp(text, "all")) {
		pp->flags = RPAGE_POOL_PEERS_ANY;
		return 0;
	}
	if (!strcmp(text, "none"))
		return 0;
	copy = strdup(text);
	*ids = calloc(RPAGE_POOL_MAX_PEERS, sizeof(**ids));
	if (!copy || !*ids) {
		fail("%s: %s", subject, strerror(ENOMEM));
		ret = 1;
		goto out;
	}
	for (name = strtok_r(copy, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		if (pp->nr_peers == RPAGE_POOL_MAX_PEERS) {
			ret = usage_error("%s: more than %d peers", subject,
					  RPAGE_POOL_MAX_PEERS);
			goto out;
		}
		ret = find_peer_id(fd, name, &(*ids)[pp->nr_peers]);
		if (ret) {
			ret = fail_cmd(subject, name, -ret,
				       ret == -ENOENT ? "no such peer" : NULL);
			goto out;
		}
		pp->nr_peers++;
	}
	pp->peers = (uintptr_t)*ids;
out:
	free(copy);
	if (ret) {
		free(*ids);
		*ids = NULL;
	}
	return ret;
}

/*
 * Why the caller may not change or destroy pool @id: a user pool belongs
 * to the process that exported it; otherwise the capability is missing.
 */
static void explain_pool_eperm(int fd, uint64_t id, char *buf, size_t len)
{
	struct rpage_pool_info *infos;
	void *entries = NULL;
	int count;

	snprintf(buf, len, "needs CAP_SYS_ADMIN");
	count = rpage_list_all(fd, rpage_pool_list, sizeof(*infos), &entries);
	infos = entries;
	for (int i = 0; i < count; i++) {
		if (infos[i].id == id && infos[i].kind == RPAGE_POOL_USER) {
			snprintf(buf, len,
				 "exported by process %u: only that process can change or destroy it",
				 infos[i].owner_pid);
			break;
		}
	}
	free(infos);
}

/* Scopes pool @id to the peers of @text, through @fd; 0 or 1 (reported). */
static int pool_set_peers_text(int fd, const char *what, const char *id_text,
			       uint64_t id, const char *text)
{
	struct rpage_pool_peers pp;
	const char *words = NULL;
	char buf[128];
	__u32 *ids;
	int ret;

	memset(&pp, 0, sizeof(pp));
	pp.id = id;
	if (parse_pool_peers(fd, what, text, &pp, &ids))
		return 1;
	ret = rpage_pool_set_peers(fd, &pp);
	free(ids);
	if (!ret)
		return 0;
	switch (-ret) {
	case ENOENT:
		words = "no such pool, or a peer was deleted meanwhile";
		break;
	case EPERM:
		explain_pool_eperm(fd, id, buf, sizeof(buf));
		words = buf;
		break;
	case EINVAL:
		words = "a peer named twice, or a module without pool scopes (see 'rpagectl version')";
		break;
	}
	return fail_cmd(what, id_text, -ret, words);
}

/*
 * A pool just created scoped to none (RPAGE_POOL_SCOPED) gets its peers;
 * if that fails, it is destroyed again: no peer ever heard of it.
 */
static int pool_scope_new(const char *id_text, uint64_t id, const char *text)
{
	struct rpage_pool_destroy d;
	int fd, ret;

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = pool_set_peers_text(fd, "pool create", id_text, id, text);
	if (ret) {
		memset(&d, 0, sizeof(d));
		d.id = id;
		rpage_pool_destroy(fd, &d);
	}
	close(fd);
	return ret;
}

/* pool set ID peers PEERS */
static int pool_set(int argc, char **argv)
{
	const char *what = "pool set";
	const char *peers = NULL;
	uint64_t id;
	int fd, ret;

	ret = pool_id_arg(what, argc, argv, &id);
	if (ret)
		return ret;
	for (int i = 1; i < argc; i++) {
		if (matches(argv[i], "peers") && i + 1 < argc && !peers)
			peers = argv[++i];
		else
			return usage_error("%s %s: unexpected argument '%s'",
					   what, argv[0], argv[i]);
	}
	if (!peers)
		return usage_error("%s %s: nothing to set: 'peers PEERS'", what,
				   argv[0]);
	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = pool_set_peers_text(fd, what, argv[0], id, peers);
	close(fd);
	return ret;
}

/*
 * The names of the peers scoped pool @id is announced to, in @names
 * (up to RPAGE_POOL_MAX_PEERS of @peers' entries; an id no peer has
 * any more as "#ID"); how many, or -errno.
 */
int pool_peer_names(int fd, uint64_t id,
			   const struct rpage_peer_info *peers, int nr_peers,
			   char (*names)[RPAGE_NAME_MAX])
{
	__u32 ids[RPAGE_POOL_MAX_PEERS];
	struct rpage_pool_peers pp;
	int ret;

	memset(&pp, 0, sizeof(pp));
	pp.id = id;
	pp.peers = (uintptr_t)ids;
	pp.nr_peers = RPAGE_POOL_MAX_PEERS;
	ret = rpage_pool_get_peers(fd, &pp);
	if (ret)
		return ret;
	if (pp.nr_peers > RPAGE_POOL_MAX_PEERS)
		pp.nr_peers = RPAGE_POOL_MAX_PEERS;
	for (__u32 i = 0; i < pp.nr_peers; i++) {
		snprintf(names[i], RPAGE_NAME_MAX, "#%u", ids[i]);
		for (int j = 0; j < nr_peers; j++)
			if (peers[j].id == ids[i])
				snprintf(names[i], RPAGE_NAME_MAX, "%.*s",
					 RPAGE_NAME_MAX - 1, peers[j].name);
	}
	return (int)pp.nr_peers;
}

/*
 * One of this host's pools: a line "ID length L flags F kind K owner PID
 * [peers P]", or its JSON object. Only a scoped pool has peers: the
 * others go to every peer.
 */
static void print_pool(struct json_writer *jw, const struct rpage_pool_info *info,
		       const char *kind, char (*names)[RPAGE_NAME_MAX], int nr_names)
{
	const char *peers[RPAGE_POOL_MAX_PEERS];

	if (jw)
		json_open_object(jw, NULL);
	print_u64(jw, "id", NULL, info->id);
	print_u64(jw, "length", "length", info->length);
	print_pool_flags(jw, info->flags);
	print_str(jw, "kind", "kind", kind);
	print_u64(jw, "owner", "owner", info->owner_pid);
	if (info->flags & RPAGE_POOL_SCOPED) {
		for (int j = 0; j < nr_names; j++)
			peers[j] = names[j];
		print_list(jw, "peers", "peers", peers, (size_t)nr_names, "none");
	}
	if (jw)
		json_close_object(jw);
	else
		putchar('\n');
}

/* pool [ show ]: this host's pools. */
static int pool_show(int fd)
{
	static char names[RPAGE_POOL_MAX_PEERS][RPAGE_NAME_MAX];
	struct rpage_peer_info *peers = NULL;
	struct rpage_pool_info *infos;
	struct json_writer jw;
	void *buf = NULL, *pbuf = NULL;
	const char *kind;
	int count, nr_peers, nr_names;

	count = rpage_list_all(fd, rpage_pool_list, sizeof(*infos), &buf);
	infos = buf;
	if (count < 0)
		return fail_cmd("pool show", NULL, -count, NULL);
	nr_peers = rpage_list_all(fd, rpage_peer_list, sizeof(*peers), &pbuf);
	peers = pbuf;
	if (nr_peers < 0) {
		free(infos);
		return fail_cmd("pool show", NULL, -nr_peers, NULL);
	}

	if (opt_json) {
		json_init(&jw, stdout, opt_pretty);
		json_open_array(&jw, NULL);
	}
	for (int i = 0; i < count; i++) {
		const struct rpage_pool_info *info = &infos[i];

		kind = rpage_pool_kind_name(info->kind) ?: "unknown";
		nr_names = 0;
		if (info->flags & RPAGE_POOL_SCOPED) {
			nr_names = pool_peer_names(fd, info->id, peers, nr_peers,
						   names);
			/* Destroyed since the list was taken: not shown. */
			if (nr_names == -ENOENT)
				continue;
			if (nr_names < 0) {
				free(infos);
				free(peers);
				return fail_cmd("pool show", NULL, -nr_names, NULL);
			}
		}
		print_pool(opt_json ? &jw : NULL, info, kind, names, nr_names);
	}
	if (opt_json) {
		json_close_array(&jw);
		json_finish(&jw);
	}
	free(infos);
	free(peers);
	return 0;
}

/* pool show remote: the pools connected peers export to this host. */
static int remote_pool_show(int fd)
{
	struct rpage_remote_pool_info *infos;
	struct json_writer jw, *jwp;
	void *buf = NULL;
	int count;

	count = rpage_list_all(fd, rpage_remote_pool_list, sizeof(*infos), &buf);
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
		jwp = opt_json ? &jw : NULL;
		if (jwp)
			json_open_object(jwp, NULL);
		print_str(jwp, "peer", NULL, info->peer);
		/* The peer's id is for programs: the text has its name. */
		if (jwp)
			json_uint(jwp, "peer_id", info->peer_id);
		else
			putchar(' ');
		print_u64(jwp, "id", NULL, info->id);
		print_u64(jwp, "length", "length", info->length);
		print_pool_flags(jwp, info->flags);
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

/* pool create ID size SIZE [ writable ] */
/*
 * pool create ID file PATH [offset O] [size S] [writable]: the pages of a
 * shared-memory file, such as a VMM's guest RAM, as a pool.
 */
static int pool_create_file(const char *subject, const char *id_text,
			    uint64_t id, const char *path, uint64_t offset,
			    uint64_t size, __u32 flags)
{
	static const char not_shm[] = "not a file on tmpfs, hugetlbfs or in shared memory: a file on disk could have its pages written back and dropped from under the pool";
	struct rpage_pool_file pf;
	const char *words = NULL;
	struct statfs sfs;
	struct stat st;
	int fd, file, ret, seals;

	file = open(path, (flags & RPAGE_POOL_WRITABLE ? O_RDWR : O_RDONLY) |
		    O_CLOEXEC);
	if (file < 0) {
		fail("%s: %s: %s", subject, path, strerror(errno));
		return 1;
	}
	/* The module checks it too; here it is said before any size is. */
	if (fstatfs(file, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC &&
	    sfs.f_type != HUGETLBFS_MAGIC) {
		fail("%s: %s: %s", subject, path, not_shm);
		close(file);
		return 1;
	}
	if (fstat(file, &st) < 0 || (uint64_t)st.st_size <= offset) {
		fail("%s: %s: offset %" PRIu64 " is past its end", subject, path,
		     offset);
		close(file);
		return 1;
	}
	if (!size)
		size = ((uint64_t)st.st_size - offset) & ~(page_size() - 1);
	memset(&pf, 0, sizeof(pf));
	pf.id = id;
	pf.fd = file;
	pf.flags = flags;
	pf.offset = offset;
	pf.length = size;
	fd = open_device(NULL);
	if (fd < 0) {
		close(file);
		return 1;
	}
	ret = rpage_pool_file(fd, &pf);
	close(fd);
	/* Why a writable export was refused, if it was the file's seals. */
	seals = (flags & RPAGE_POOL_WRITABLE) ? fcntl(file, F_GET_SEALS) : 0;
	close(file);
	if (!ret)
		return 0;
	switch (-ret) {
	case EOPNOTSUPP:
		words = not_shm;
		break;
	case ERANGE:
		words = "offset and size go past the end of the file";
		break;
	case ENXIO:
		words = "part of the range has no pages yet (hugetlbfs allocates them at first touch): preallocate them (QEMU's prealloc=on, or fallocate -l SIZE PATH)";
		break;
	case EPERM:
		if (seals > 0 && (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
			words = "the file is sealed against writes (F_SEAL_WRITE or F_SEAL_FUTURE_WRITE): it can only be exported read-only";
		break;
	case EEXIST:
		words = "a pool with this id exists";
		break;
	case EBUSY:
		words = "the file was truncated or had a hole punched in the range while it was being exported: the pool was withdrawn";
		break;
	case EINVAL:
		words = "the module refused this size (max_pool_mb) or alignment";
		break;
	}
	return fail_cmd("pool create", id_text, -ret, words);
}

static int pool_create(int argc, char **argv)
{
	const char *what = "pool create";
	const char *size_text = NULL, *path = NULL;
	uint64_t offset = 0;
	struct rpage_pool_create pool;
	char subject[96], max_mb[32], buf[128];
	const char *words = NULL;
	uint64_t id, size = 0;
	const char *peers = NULL;
	__u32 flags = 0;
	int fd, ret;

	ret = pool_id_arg(what, argc, argv, &id);
	if (ret)
		return ret;
	snprintf(subject, sizeof(subject), "%s %s", what, argv[0]);
	for (int i = 1; i < argc; i++) {
		/* length, as map add and map evict spell it, is size too. */
		if (matches(argv[i], "size") || matches(argv[i], "length")) {
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
		} else if (matches(argv[i], "file") && i + 1 < argc && !path) {
			path = argv[++i];
		} else if (matches(argv[i], "offset") && i + 1 < argc) {
			ret = parse_bytes(subject, "offset", argv[++i], true, &offset);
			if (ret)
				return ret;
		} else if (matches(argv[i], "peers") && i + 1 < argc && !peers) {
			peers = argv[++i];
		} else {
			return usage_error("%s: unexpected argument '%s'", subject,
					   argv[i]);
		}
	}
	/* Announced to no peer until it has its own. */
	if (peers && strcmp(peers, "all"))
		flags |= RPAGE_POOL_SCOPED;
	if (path) {
		ret = pool_create_file(subject, argv[0], id, path, offset, size,
				       flags);
		if (!ret && (flags & RPAGE_POOL_SCOPED))
			ret = pool_scope_new(argv[0], id, peers);
		return ret;
	}
	if (offset)
		return usage_error("%s: 'offset' goes with 'file PATH'", subject);
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
	if (!ret && (flags & RPAGE_POOL_SCOPED))
		return pool_scope_new(argv[0], id, peers);
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

/* pool destroy ID */
static int pool_destroy(int argc, char **argv)
{
	const char *what = "pool destroy";
	struct rpage_pool_destroy pool;
	const char *words = NULL;
	char buf[128];
	uint64_t id;
	int fd, ret;

	if (argc > 1)
		return usage_error("%s %s: unexpected argument '%s'", what,
				   argv[0], argv[1]);
	ret = pool_id_arg(what, argc, argv, &id);
	if (ret)
		return ret;
	memset(&pool, 0, sizeof(pool));
	pool.id = id;

	fd = open_device(NULL);
	if (fd < 0)
		return 1;
	ret = rpage_pool_destroy(fd, &pool);
	if (ret == -EPERM) {
		explain_pool_eperm(fd, id, buf, sizeof(buf));
		words = buf;
	}
	close(fd);
	if (!ret)
		return 0;
	if (ret == -ENOENT)
		words = "no such pool";
	return fail_cmd(what, argv[0], -ret, words);
}

enum { POOL_CREATE, POOL_DESTROY, POOL_SHOW, POOL_SET, POOL_HELP };

static const char *const pool_commands[] = {
	[POOL_CREATE] = "create", [POOL_DESTROY] = "destroy",
	[POOL_SHOW] = "show", [POOL_SET] = "set", [POOL_HELP] = "help",
	NULL,
};

int cmd_pool(int argc, char **argv)
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
	case POOL_SET:
		return pool_set(argc - 1, argv + 1);
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
		return fail_cmd(what, peer, err,
				"the peer stayed unreachable past its loss timeout (see 'rpagectl peer show')");
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
	case EBADF:
		words = "/dev/rpage is not open for writing";
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

int cmd_read(int argc, char **argv)
{
	return transfer(false, argc, argv);
}

int cmd_write(int argc, char **argv)
{
	return transfer(true, argc, argv);
}
