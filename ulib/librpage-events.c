// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librpage's events: a generic netlink socket in rpage's event group, and
 * the parse of one event at a time into struct rpage_event. Plain
 * netlink sockets, as the kernel's own generic netlink users in
 * userspace can have them, so that the library needs nothing beyond the
 * C library; the family and group ids come from the generic netlink
 * controller, by name, as `genl ctrl get name rpage` shows them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "librpage.h"

#define RPAGE_EXPORT __attribute__((visibility("default")))

/* One message: an event is far smaller; the controller's answer too. */
#define EV_BUF 8192

/* The attribute after @nla, within [@nla, @end); NULL at the end. */
static const struct nlattr *nla_next_in(const struct nlattr *nla,
					const char *end)
{
	const char *next = (const char *)nla + NLA_ALIGN(nla->nla_len);

	return next + NLA_HDRLEN <= end ? (const struct nlattr *)next : NULL;
}

/* The first attribute in [@start, @end) if it fits; NULL otherwise. */
static const struct nlattr *nla_first_in(const void *start, const char *end)
{
	const struct nlattr *nla = start;

	return (const char *)start + NLA_HDRLEN <= end ? nla : NULL;
}

static int nla_ok_in(const struct nlattr *nla, const char *end)
{
	return nla->nla_len >= NLA_HDRLEN &&
	       (const char *)nla + nla->nla_len <= end;
}

static const void *nla_data_of(const struct nlattr *nla)
{
	return (const char *)nla + NLA_HDRLEN;
}

static int nla_len_of(const struct nlattr *nla)
{
	return nla->nla_len - NLA_HDRLEN;
}

/* A string attribute into @dst (@size bytes), cut and NUL-terminated. */
static void nla_copy_string(char *dst, size_t size, const struct nlattr *nla)
{
	size_t n = (size_t)nla_len_of(nla);

	if (n >= size)
		n = size - 1;
	memcpy(dst, nla_data_of(nla), n);
	dst[n] = '\0';
	/* The attribute's own NUL, if it had one within. */
	dst[strnlen(dst, n)] = '\0';
}

/* Sends the controller's CTRL_CMD_GETFAMILY for rpage on @fd. */
static int ctrl_ask(int fd)
{
	struct {
		struct nlmsghdr nlh;
		struct genlmsghdr genl;
		char attrs[NLA_HDRLEN + NLA_ALIGN(sizeof(RPAGE_GENL_NAME))];
	} req;
	struct nlattr *name = (struct nlattr *)req.attrs;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = GENL_ID_CTRL;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.nlh.nlmsg_seq = 1;
	req.genl.cmd = CTRL_CMD_GETFAMILY;
	req.genl.version = 2;
	name->nla_type = CTRL_ATTR_FAMILY_NAME;
	name->nla_len = NLA_HDRLEN + sizeof(RPAGE_GENL_NAME);
	memcpy(req.attrs + NLA_HDRLEN, RPAGE_GENL_NAME, sizeof(RPAGE_GENL_NAME));
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* The id of the group @want among the controller's CTRL_ATTR_MCAST_GROUPS. */
static int ctrl_group_id(const struct nlattr *groups, const char *want,
			 uint32_t *id)
{
	const char *end = (const char *)groups + groups->nla_len;
	const struct nlattr *grp, *a;

	for (grp = nla_first_in(nla_data_of(groups), end); grp && nla_ok_in(grp, end);
	     grp = nla_next_in(grp, end)) {
		const char *gend = (const char *)grp + grp->nla_len;
		char name[GENL_NAMSIZ] = "";
		uint32_t gid = 0;
		int have_id = 0;

		for (a = nla_first_in(nla_data_of(grp), gend); a && nla_ok_in(a, gend);
		     a = nla_next_in(a, gend)) {
			if (a->nla_type == CTRL_ATTR_MCAST_GRP_NAME)
				nla_copy_string(name, sizeof(name), a);
			else if (a->nla_type == CTRL_ATTR_MCAST_GRP_ID &&
				 nla_len_of(a) == sizeof(uint32_t)) {
				memcpy(&gid, nla_data_of(a), sizeof(gid));
				have_id = 1;
			}
		}
		if (have_id && !strcmp(name, want)) {
			*id = gid;
			return 0;
		}
	}
	return -ENOENT;
}

/* The controller's answer on @fd: the id of rpage's event group. */
static int ctrl_answer(int fd, uint32_t *group)
{
	union {
		struct nlmsghdr nlh;
		char bytes[EV_BUF];
	} buf;
	const struct nlmsghdr *nlh = &buf.nlh;
	const struct nlattr *a;
	const char *end;
	ssize_t n;

	n = recv(fd, &buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(*nlh) || nlh->nlmsg_len > (size_t)n)
		return -EPROTO;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *err = NLMSG_DATA(nlh);

		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
			return -EPROTO;
		/* No such family: the module is not loaded. */
		return err->error ? err->error : -EPROTO;
	}
	if (nlh->nlmsg_type != GENL_ID_CTRL ||
	    nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN))
		return -EPROTO;
	end = (const char *)nlh + nlh->nlmsg_len;
	for (a = nla_first_in((const char *)NLMSG_DATA(nlh) + GENL_HDRLEN, end);
	     a && nla_ok_in(a, end); a = nla_next_in(a, end)) {
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_MCAST_GROUPS)
			return ctrl_group_id(a, RPAGE_GENL_MCGRP_EVENTS, group);
	}
	return -ENOENT;
}

RPAGE_EXPORT int rpage_events_open(int flags)
{
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	uint32_t group;
	int fd, ret;

	if (flags & ~SOCK_NONBLOCK) {
		errno = EINVAL;
		return -EINVAL;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&local, sizeof(local)) < 0) {
		ret = -errno;
		goto err;
	}
	ret = ctrl_ask(fd);
	if (!ret)
		ret = ctrl_answer(fd, &group);
	if (ret)
		goto err;
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group,
		       sizeof(group)) < 0) {
		ret = -errno;
		goto err;
	}
	/* Blocking for the controller's answer; the caller's choice now. */
	if ((flags & SOCK_NONBLOCK) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	return fd;
err:
	close(fd);
	errno = -ret;
	return ret;
}

/* An attribute of @size bytes into @dst; -EPROTO if it has another size. */
static int nla_copy_fixed(void *dst, size_t size, const struct nlattr *nla)
{
	if ((size_t)nla_len_of(nla) != size)
		return -EPROTO;
	memcpy(dst, nla_data_of(nla), size);
	return 0;
}

/* Attribute @nla of an event into @ev; unknown ones are skipped. */
static int event_attr(struct rpage_event *ev, const struct nlattr *nla)
{
	unsigned int type = nla->nla_type & NLA_TYPE_MASK;
	__u64 *u64_field = NULL;
	__u32 *u32_field = NULL;
	int ret = 0;

	switch (type) {
	case RPAGE_EA_TIME_NS: u64_field = &ev->time_ns; break;
	case RPAGE_EA_POOL_ID: u64_field = &ev->pool_id; break;
	case RPAGE_EA_POOL_LENGTH: u64_field = &ev->pool_length; break;
	case RPAGE_EA_POOL_GENERATION: u64_field = &ev->pool_generation; break;
	case RPAGE_EA_MAP_ID: u64_field = &ev->map_id; break;
	case RPAGE_EA_MAP_OFFSET: u64_field = &ev->map_offset; break;
	case RPAGE_EA_MAP_LENGTH: u64_field = &ev->map_length; break;
	case RPAGE_EA_PAGES: u64_field = &ev->pages; break;
	case RPAGE_EA_FAILED: u64_field = &ev->failed; break;
	case RPAGE_EA_LOCAL: u64_field = &ev->local; break;
	case RPAGE_EA_MAP_PAGES: u64_field = &ev->map_pages; break;
	case RPAGE_EA_PEER_ID: u32_field = &ev->peer_id; break;
	case RPAGE_EA_OLD_STATE: u32_field = &ev->old_state; break;
	case RPAGE_EA_STATE: u32_field = &ev->state; break;
	case RPAGE_EA_PEER_NAME:
		nla_copy_string(ev->peer, sizeof(ev->peer), nla);
		break;
	case RPAGE_EA_MAP_NAME:
		nla_copy_string(ev->map, sizeof(ev->map), nla);
		break;
	case RPAGE_EA_CAUSE:
		nla_copy_string(ev->cause, sizeof(ev->cause), nla);
		break;
	default:
		/* A newer module's, or the padding: not this library's. */
		return 0;
	}
	if (u64_field)
		ret = nla_copy_fixed(u64_field, sizeof(*u64_field), nla);
	else if (u32_field)
		ret = nla_copy_fixed(u32_field, sizeof(*u32_field), nla);
	if (!ret && type < 64)
		ev->present |= 1ULL << type;
	return ret;
}

RPAGE_EXPORT int rpage_events_read(int fd, struct rpage_event *ev)
{
	union {
		struct nlmsghdr nlh;
		char bytes[EV_BUF];
	} buf;
	const struct nlmsghdr *nlh = &buf.nlh;
	const struct genlmsghdr *genl;
	const struct nlattr *a;
	const char *end;
	ssize_t n;
	int ret;

	if (!ev) {
		errno = EINVAL;
		return -EINVAL;
	}
	n = recv(fd, &buf, sizeof(buf), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < NLMSG_LENGTH(GENL_HDRLEN) || nlh->nlmsg_len > (size_t)n ||
	    nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) ||
	    nlh->nlmsg_type < NLMSG_MIN_TYPE) {
		errno = EPROTO;
		return -EPROTO;
	}
	genl = NLMSG_DATA(nlh);
	memset(ev, 0, sizeof(*ev));
	ev->type = genl->cmd;
	end = (const char *)nlh + nlh->nlmsg_len;
	for (a = nla_first_in((const char *)genl + GENL_HDRLEN, end);
	     a && nla_ok_in(a, end); a = nla_next_in(a, end)) {
		ret = event_attr(ev, a);
		if (ret) {
			errno = -ret;
			return ret;
		}
	}
	return 0;
}
