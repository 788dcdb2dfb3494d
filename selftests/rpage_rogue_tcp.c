// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_rogue_tcp: a hostile reader over TCP, with plain sockets.
 *
 *	rpage_rogue_tcp --from SRC --to DST [--port P] --pool ID
 *
 * Connects to an rpage.ko endpoint from SRC (an address of this host
 * that the exporter has configured as a TCP peer), says a good hello,
 * takes the pool table, then sends requests no rpage.ko would: out of
 * the pool's bounds (an offset wrapping around 2^64 included), of bad
 * lengths and alignments, of another generation, a write to a pool that
 * is not writable, a status in a request, an answer in place of a
 * request, frames of impossible lengths, hellos that are garbage or of
 * another protocol, and no hello at all. Pool ID must be read-only and
 * hold zeros: what the exporter sends back is checked byte for byte, and
 * the write it refused must not have landed.
 *
 * One line per case on stdout, "ok NAME" or "FAIL NAME: why", then
 * "refused N": the requests the exporter should have counted as refused.
 * Exit status 0 if every case went as it should.
 *
 *	rpage_rogue_tcp --from SRC --to DST [--port P] --strangers N
 *			--seconds S
 *
 * N connections to the exporter's port held for S seconds: a third of
 * them silent, a third sending a good hello a byte every 300 ms, a
 * third closed and opened again and again; each one the exporter closes
 * is opened again (at most once a second). From an address that is no
 * peer's, what it costs the exporter; from a peer's, whether a peer can
 * crowd the others out. Prints "strangers opened N closed N longest MS"
 * (the longest a silent or trickling connection stayed open: closed by
 * the exporter, or still open at the end, which an exporter that waits
 * too long for a hello leaves them) and exits 0: the test judges.
 *
 *	rpage_rogue_tcp --from SRC --to DST [--port P] --destroy ID
 *
 * Pools this process exports of its own memory (ids ID to ID + 2, on
 * the host it runs on, DST being that host's endpoint), destroyed while
 * the rogue reader has requests of them under way: a write whose second
 * half is sent after the destroy returned must not land; a process that
 * exits while the rogue holds half a write of its pool must have its
 * pages unpinned; and a read checked before a destroy must not be
 * answered with what the process wrote after it. Lines and exit status
 * as for the requests above.
 *
 *	rpage_rogue_tcp --listen ADDR [--port P] --flood S
 *
 * An exporter that floods its reader: it listens on ADDR (the reader
 * has it as a TCP peer), answers each connection's hello, sends an
 * empty pool table on the first, and then, for S seconds, withdrawals
 * of pools it never announced and heartbeats, as fast as the socket
 * takes them, never reading a byte more of what the reader sends back.
 * A connection the reader drops is taken again when it comes back.
 * Prints "flood sent N messages over M connections" and exits 0.
 *
 *	rpage_rogue_tcp --from SRC --to DST [--port P] --pool ID --forge F
 *
 * A peer a pool is not scoped to: pool F must not be in its table (pool
 * ID, read-only, must), and reads and writes of F under every generation
 * near ID's (pools' generations are handed out in sequence, so one of
 * them is F's if F was created next to ID) must all be refused as if F
 * did not exist (RPAGE_IO_NO_POOL), never a byte read or written. The
 * exporter counts the one read and one write of F's own generation.
 * Lines and exit status as for the requests above.
 *
 *	rpage_rogue_tcp --from SRC --to DST [--port P] --hello
 *
 * One good hello and what the exporter answers: "hello accepted" or
 * "hello refused REASON". SRC and DST may be IPv6, with %INTERFACE.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/rpage.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "rpage_test.h"

#include "../kmod/rpage-proto.h"

#define PAGE		4096
#define TIMEOUT_MS	10000
/* How long a send may wait for room: the exporter never reads again. */
#define SEND_TIMEOUT_S	30
/* No mode of the rogue runs this long past what it was asked to. */
#define RUN_LIMIT_S	600
#define NODE_ID		0x7cb0

/* Where the rogue connects from and to: IPv4, or IPv6 with a scope. */
static struct sockaddr_storage from, to;
static socklen_t addr_len;
static uint64_t pool_id, pool_gen, pool_len;
/* --forge: the pool this peer must not be told of, and whether it was. */
static uint64_t forge_id;
static bool forge_told;
static unsigned int failures, refused;

static void result(const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!fmt) {
		printf("ok %s\n", name);
		return;
	}
	failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/*
 * An answer to a hello that takes half the exporter's connect timeout
 * (5 s by default) waited for something: the hello had arrived long
 * before.
 */
#define ANSWER_MS	2500

static long ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000 +
	       (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Reads exactly @len bytes: 0, -1 at end of file, -2 on error/timeout. */
static int read_all(int fd, void *buf, size_t len)
{
	while (len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, TIMEOUT_MS) != 1)
			return -2;
		n = read(fd, buf, len);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == ECONNRESET ? -1 : -2;
		buf = (char *)buf + n;
		len -= n;
	}
	return 0;
}

/* Reads up to @len bytes, until the end or an error: how many it read. */
static size_t read_upto(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, TIMEOUT_MS) != 1)
			break;
		n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			break;
		got += n;
	}
	return got;
}

static int write_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		buf = (const char *)buf + n;
		len -= n;
	}
	return 0;
}

/*
 * Connects from @from to @to. A connect that finds the exporter's queue
 * full, and a send that finds no room, give up after @timeout_s.
 */
static int dial_within(int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s };
	int fd = socket(to.ss_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&from, addr_len) ||
	    connect(fd, (struct sockaddr *)&to, addr_len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int dial(void)
{
	return dial_within(SEND_TIMEOUT_S);
}

static struct rpage_msg_tcp_hello hello_frame(uint16_t major)
{
	struct rpage_msg_tcp_hello f;

	memset(&f, 0, sizeof(f));
	f.hdr.type = htole16(RPAGE_MSG_TCP_HELLO);
	f.hdr.length = htole32(sizeof(f));
	f.hello.magic = htole32(RPAGE_PROTO_MAGIC);
	f.hello.major = htole16(major);
	f.hello.minor = htole16(RPAGE_PROTO_MINOR);
	f.hello.node_id = htole64(NODE_ID);
	f.hello.qp_index = htole16(0);
	f.hello.nr_qps = htole16(2);
	return f;
}

/* Reads one frame into @buf (at most @max bytes): its length, or < 0. */
static int read_frame(int fd, void *buf, size_t max)
{
	struct rpage_msg_hdr *hdr = buf;
	uint32_t len;

	if (read_all(fd, hdr, sizeof(*hdr)))
		return -1;
	len = le32toh(hdr->length);
	if (len < sizeof(*hdr) || len > max)
		return -2;
	if (read_all(fd, (char *)buf + sizeof(*hdr), len - sizeof(*hdr)))
		return -1;
	return len;
}

/*
 * Connects with a good hello and takes the pool table: the fd, with
 * the pool's generation and length learnt; -1 on failure.
 */
static int session(const char *name)
{
	struct rpage_msg_tcp_hello f = hello_frame(RPAGE_PROTO_MAJOR);
	static uint8_t buf[RPAGE_MSG_MAX];
	struct timespec t0;
	int fd, len;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = dial();
	if (fd < 0 || write_all(fd, &f, sizeof(f))) {
		result(name, "connecting: %s", strerror(errno));
		goto err;
	}
	len = read_frame(fd, buf, sizeof(buf));
	if (len != sizeof(f) ||
	    le16toh(((struct rpage_msg_hdr *)buf)->type) != RPAGE_MSG_TCP_HELLO) {
		result(name, "no hello back (%d bytes, type %u)", len,
		       le16toh(((struct rpage_msg_hdr *)buf)->type));
		goto err;
	}
	for (;;) {
		const struct rpage_msg_pool_add *add = (const void *)buf;

		len = read_frame(fd, buf, sizeof(buf));
		if (len < 0) {
			result(name, "the pool table did not come (%d)", len);
			goto err;
		}
		switch (le16toh(add->hdr.type)) {
		case RPAGE_MSG_POOL_ADD:
			if (forge_id && le64toh(add->pool_id) == forge_id)
				forge_told = true;
			if (le64toh(add->pool_id) != pool_id)
				break;
			/* No regions over TCP: nothing but the pool itself. */
			if (add->mr_bytes || add->nr_mrs || add->count) {
				result(name, "pool announced with regions");
				goto err;
			}
			pool_gen = le64toh(add->generation);
			pool_len = le64toh(add->length);
			break;
		case RPAGE_MSG_POOL_SYNC:
			if (!pool_gen) {
				result(name, "pool %llu not in the table",
				       (unsigned long long)pool_id);
				goto err;
			}
			if (ms_since(&t0) > ANSWER_MS) {
				result(name, "accepted after %ld ms", ms_since(&t0));
				goto err;
			}
			return fd;
		}
	}
err:
	if (fd >= 0)
		close(fd);
	return -1;
}

static struct rpage_msg_io io_frame(uint16_t type, uint32_t tag, uint64_t id,
				    uint64_t gen, uint64_t offset, uint32_t len)
{
	struct rpage_msg_io io;

	memset(&io, 0, sizeof(io));
	io.hdr.type = htole16(type);
	io.hdr.length = htole32(sizeof(io));
	io.tag = htole32(tag);
	io.pool_id = htole64(id);
	io.generation = htole64(gen);
	io.offset = htole64(offset);
	io.io_length = htole32(len);
	return io;
}

/*
 * Sends @req (and @data, @data_len bytes, after it) and reads the answer:
 * its status, with a read's data in @out (@out_len bytes at most); -1 if
 * the connection ended, -2 if the answer does not fit the request.
 */
static int ask(int fd, struct rpage_msg_io *req, const void *data,
	       uint32_t data_len, void *out, uint32_t out_len)
{
	struct rpage_msg_io a;
	uint32_t status, len;

	req->hdr.length = htole32(sizeof(*req) + data_len);
	if (write_all(fd, req, sizeof(*req)) ||
	    (data_len && write_all(fd, data, data_len)))
		return -1;
	if (read_all(fd, &a, sizeof(a)))
		return -1;
	status = le32toh(a.status);
	len = le32toh(a.hdr.length);
	if (a.tag != req->tag || a.pool_id != req->pool_id ||
	    a.offset != req->offset)
		return -2;
	if (status != RPAGE_IO_OK) {
		/* Refused: never a byte of data with it. */
		return len == sizeof(a) ? (int)status : -2;
	}
	if (le16toh(a.hdr.type) == RPAGE_MSG_WRITE_RESP)
		return len == sizeof(a) ? 0 : -2;
	if (len != sizeof(a) + le32toh(req->io_length) ||
	    le32toh(req->io_length) > out_len)
		return -2;
	return read_all(fd, out, len - sizeof(a)) ? -1 : 0;
}

/*
 * Reads the fixed part of the next read's or write's answer into @a,
 * passing over the control messages before it (a pool's withdrawal goes
 * on the first connection too): 0, -1 if the connection ended, -2 for a
 * frame that cannot be followed.
 */
static int read_answer(int fd, struct rpage_msg_io *a)
{
	static uint8_t skip[RPAGE_MSG_MAX];
	uint32_t len;
	uint16_t type;

	for (;;) {
		if (read_all(fd, &a->hdr, sizeof(a->hdr)))
			return -1;
		type = le16toh(a->hdr.type);
		len = le32toh(a->hdr.length);
		if (type == RPAGE_MSG_READ_RESP || type == RPAGE_MSG_WRITE_RESP)
			return read_all(fd, (char *)a + sizeof(a->hdr),
					sizeof(*a) - sizeof(a->hdr)) ? -1 : 0;
		if (len < sizeof(a->hdr) || len > sizeof(skip))
			return -2;
		if (read_all(fd, skip, len - sizeof(a->hdr)))
			return -1;
	}
}

/* Expects @status for @req; counts a refusal the exporter should count. */
static void expect(int fd, const char *name, struct rpage_msg_io req,
		   int status)
{
	static uint8_t out[RPAGE_MSG_IO_MAX];
	int ret = ask(fd, &req, NULL, 0, out, sizeof(out));

	if (ret != status) {
		result(name, "answered %d, want %d", ret, status);
		return;
	}
	if (status == RPAGE_IO_RANGE || status == RPAGE_IO_MALFORMED ||
	    status == RPAGE_IO_READ_ONLY)
		refused++;
	result(name, NULL);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* The exporter closes the connection after @bytes: true if it does. */
static bool closed_after(int fd, const void *bytes, size_t len)
{
	char c;

	if (write_all(fd, bytes, len))
		return true;
	return read_all(fd, &c, 1) == -1;
}

static void requests(void)
{
	static uint8_t page[PAGE], ff[PAGE];
	struct rpage_msg_io req;
	int fd = session("session"), ret;

	if (fd < 0)
		return;
	result("session", NULL);
	req = io_frame(RPAGE_MSG_READ_REQ, 1, pool_id, pool_gen, 0, PAGE);
	ret = ask(fd, &req, NULL, 0, page, sizeof(page));
	if (ret || !all_zero(page, PAGE))
		result("read_first_page", "status %d, zeros %d", ret,
		       all_zero(page, PAGE));
	else
		result("read_first_page", NULL);

	expect(fd, "read_at_the_end", io_frame(RPAGE_MSG_READ_REQ, 2, pool_id,
		pool_gen, pool_len, PAGE), RPAGE_IO_RANGE);
	expect(fd, "read_across_the_end", io_frame(RPAGE_MSG_READ_REQ, 3,
		pool_id, pool_gen, pool_len - PAGE, 2 * PAGE), RPAGE_IO_RANGE);
	expect(fd, "read_wrapping_around", io_frame(RPAGE_MSG_READ_REQ, 4,
		pool_id, pool_gen, -(uint64_t)PAGE, 2 * PAGE), RPAGE_IO_RANGE);
	expect(fd, "read_unaligned_offset", io_frame(RPAGE_MSG_READ_REQ, 5,
		pool_id, pool_gen, 100, PAGE), RPAGE_IO_MALFORMED);
	expect(fd, "read_of_nothing", io_frame(RPAGE_MSG_READ_REQ, 6, pool_id,
		pool_gen, 0, 0), RPAGE_IO_MALFORMED);
	expect(fd, "read_past_the_largest", io_frame(RPAGE_MSG_READ_REQ, 7,
		pool_id, pool_gen, 0, RPAGE_MSG_IO_MAX + PAGE), RPAGE_IO_MALFORMED);
	expect(fd, "read_unaligned_length", io_frame(RPAGE_MSG_READ_REQ, 8,
		pool_id, pool_gen, 0, 100), RPAGE_IO_MALFORMED);
	expect(fd, "read_of_another_generation", io_frame(RPAGE_MSG_READ_REQ, 9,
		pool_id, pool_gen + 1, 0, PAGE), RPAGE_IO_NO_POOL);
	expect(fd, "read_of_no_such_pool", io_frame(RPAGE_MSG_READ_REQ, 10,
		pool_id + 1000, pool_gen, 0, PAGE), RPAGE_IO_NO_POOL);
	req = io_frame(RPAGE_MSG_READ_REQ, 11, pool_id, pool_gen, 0, PAGE);
	req.status = htole32(1);
	expect(fd, "read_with_a_status", req, RPAGE_IO_MALFORMED);

	/* A write the pool does not take, then what is there. */
	memset(ff, 0xff, sizeof(ff));
	req = io_frame(RPAGE_MSG_WRITE_REQ, 12, pool_id, pool_gen, 0, PAGE);
	ret = ask(fd, &req, ff, PAGE, NULL, 0);
	if (ret != RPAGE_IO_READ_ONLY) {
		result("write_to_a_read_only_pool", "answered %d", ret);
	} else {
		refused++;
		result("write_to_a_read_only_pool", NULL);
	}
	req = io_frame(RPAGE_MSG_READ_REQ, 13, pool_id, pool_gen, 0, PAGE);
	ret = ask(fd, &req, NULL, 0, page, sizeof(page));
	if (ret || !all_zero(page, PAGE))
		result("refused_write_did_not_land", "status %d, zeros %d", ret,
		       all_zero(page, PAGE));
	else
		result("refused_write_did_not_land", NULL);

	/* An answer is not for the exporter to receive: it hangs up. */
	req = io_frame(RPAGE_MSG_READ_RESP, 14, pool_id, pool_gen, 0, PAGE);
	if (closed_after(fd, &req, sizeof(req)))
		result("answer_sent_to_the_exporter", NULL);
	else
		result("answer_sent_to_the_exporter", "connection still open");
	close(fd);
}

/* Frames whose length cannot be followed: the exporter hangs up. */
static void bad_frames(void)
{
	struct rpage_msg_io req;
	struct rpage_msg_hdr hdr;
	int fd;

	fd = session("session_2");
	if (fd >= 0) {
		hdr.type = htole16(RPAGE_MSG_HEARTBEAT);
		hdr.reserved0 = 0;
		hdr.length = htole32(1 << 20);
		result("control_frame_of_1_mib", closed_after(fd, &hdr, sizeof(hdr)) ?
		       NULL : "connection still open");
		close(fd);
	}
	fd = session("session_3");
	if (fd >= 0) {
		/* Says 8 bytes of data, carries 64 KiB: framing lost. */
		req = io_frame(RPAGE_MSG_WRITE_REQ, 1, pool_id, pool_gen, 0,
			       RPAGE_MSG_IO_MAX);
		req.hdr.length = htole32(sizeof(req) + 8);
		result("write_length_contradicting_itself",
		       closed_after(fd, &req, sizeof(req)) ? NULL :
		       "connection still open");
		close(fd);
	}
	fd = session("session_4");
	if (fd >= 0) {
		hdr.type = htole16(RPAGE_MSG_READ_REQ);
		hdr.reserved0 = 0;
		hdr.length = htole32(4);
		result("frame_shorter_than_its_header",
		       closed_after(fd, &hdr, sizeof(hdr)) ? NULL :
		       "connection still open");
		close(fd);
	}
	fd = session("session_5");
	if (fd >= 0) {
		/* Half a header, then gone: nothing to check but the log. */
		write_all(fd, &hdr, 3);
		close(fd);
	}
}

/* What the exporter answers a hello: the reject reason, or < 0. */
static int hello_answer(const void *hello, size_t len)
{
	struct rpage_msg_tcp_reject rej;
	struct timespec t0;
	int fd, ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = dial();
	if (fd < 0)
		return -1;
	if (write_all(fd, hello, len)) {
		close(fd);
		return -1;
	}
	ret = read_frame(fd, &rej, sizeof(rej));
	close(fd);
	if (ms_since(&t0) > ANSWER_MS)
		return -4;
	if (ret != sizeof(rej) || le16toh(rej.hdr.type) != RPAGE_MSG_TCP_REJECT)
		return -1;
	return le16toh(rej.reject.reason);
}

static void hellos(void)
{
	struct rpage_msg_tcp_hello f = hello_frame(RPAGE_PROTO_MAJOR + 1);
	struct rpage_msg_tcp_reject rej;
	struct timespec t0;
	int fd, ret;

	ret = hello_answer(&f, sizeof(f));
	result("hello_of_another_major", ret == RPAGE_REJECT_VERSION ? NULL :
	       "not refused as version");
	f = hello_frame(RPAGE_PROTO_MAJOR);
	f.hello.magic = 0;
	ret = hello_answer(&f, sizeof(f));
	result("hello_without_magic", ret == RPAGE_REJECT_BAD_HELLO ? NULL :
	       "not refused as a bad hello");
	f = hello_frame(RPAGE_PROTO_MAJOR);
	f.hdr.type = htole16(RPAGE_MSG_HEARTBEAT);
	ret = hello_answer(&f, sizeof(f));
	result("heartbeat_for_a_hello", ret == RPAGE_REJECT_BAD_HELLO ? NULL :
	       "not refused as a bad hello");
	f = hello_frame(RPAGE_PROTO_MAJOR);
	f.hello.qp_index = htole16(5);
	ret = hello_answer(&f, sizeof(f));
	result("hello_index_past_its_count", ret == RPAGE_REJECT_BAD_HELLO ? NULL :
	       "not refused as a bad hello");

	/* Silence is refused, or cut off, after the connect timeout. */
	fd = dial();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = fd >= 0 ? read_frame(fd, &rej, sizeof(rej)) : -3;
	if (fd >= 0)
		close(fd);
	if (ret == -1 || (ret == sizeof(rej) &&
			  le16toh(rej.reject.reason) == RPAGE_REJECT_BAD_HELLO))
		result("no_hello_at_all", NULL);
	else
		result("no_hello_at_all", "not refused nor closed (%d) in %ld ms",
		       ret, ms_since(&t0));
}

/* Pages pinned in the whole system now (/proc/vmstat): -1 if unknown. */
static long pinned_pages(void)
{
	long acquired = -1, released = -1, v;
	char name[64];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			acquired = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			released = v;
	}
	fclose(f);
	return acquired < 0 || released < 0 ? -1 : acquired - released;
}

/* Exports @len bytes at @mem, each byte @fill, as writable pool @id. */
static int export_own(int fd, uint64_t id, void *mem, size_t len, int fill)
{
	struct rpage_pool_export ex = {
		.id = id,
		.addr = (uintptr_t)mem,
		.length = len,
		.flags = RPAGE_POOL_WRITABLE,
	};

	memset(mem, fill, len);
	return rpage_pool_export(fd, &ex);
}

static int destroy_own(int fd, uint64_t id)
{
	struct rpage_pool_destroy d = { .id = id };

	return rpage_pool_destroy(fd, &d);
}

/*
 * Exports @len bytes at @mem as pool @id, each byte 0x11, and opens a
 * session that has it in its table: the fd, or -1 (said, and nothing of
 * it left).
 */
static int export_session(int rfd, uint64_t id, void *mem, size_t len,
			  const char *name)
{
	int fd;

	if (!mem || export_own(rfd, id, mem, len, 0x11)) {
		result(name, "exporting pool %llu: %s", (unsigned long long)id,
		       strerror(errno));
		return -1;
	}
	pool_id = id;
	pool_gen = 0;
	fd = session(name);
	if (fd < 0)
		destroy_own(rfd, id);
	return fd;
}

/* How many bytes of @p, @len of them, are not @byte. */
static size_t count_not(const uint8_t *p, size_t len, int byte)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] != (uint8_t)byte;
	return n;
}

static void *mem_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A write of 64 KiB, its first half sent, then the pool destroyed, then
 * the second half: none of the second half may land.
 */
static void destroy_mid_write(int rfd, uint64_t id)
{
	const char *name = "write_cut_short_by_a_destroy";
	size_t half = RPAGE_MSG_IO_MAX / 2;
	static uint8_t data[RPAGE_MSG_IO_MAX];
	size_t len = 1 << 20, landed;
	struct rpage_msg_io req, a;
	uint8_t *mem = mem_alloc(len);
	int fd, ret;

	fd = export_session(rfd, id, mem, len, name);
	if (fd < 0)
		return;
	memset(data, 0xee, sizeof(data));
	req = io_frame(RPAGE_MSG_WRITE_REQ, 1, id, pool_gen, 0, sizeof(data));
	req.hdr.length = htole32(sizeof(req) + sizeof(data));
	if (write_all(fd, &req, sizeof(req)) || write_all(fd, data, half)) {
		result(name, "sending the first half");
		goto out;
	}
	/* The exporter takes the first half in. */
	usleep(500 * 1000);
	if (destroy_own(rfd, id)) {
		result(name, "destroying the pool: %s", strerror(errno));
		goto out;
	}
	/* The destroy has returned: nothing more may land. */
	if (write_all(fd, data + half, sizeof(data) - half)) {
		result(name, "sending the second half: %s (the exporter reads no more)",
		       strerror(errno));
		goto out;
	}
	/* Dropped, and the write answered: the connection is still served. */
	ret = read_answer(fd, &a);
	landed = count_not(mem + half, len - half, 0x11);
	printf("# first half landed %zu of %zu bytes, after the destroy %zu; ",
	       half - count_not(mem, half, 0xee), half, landed);
	if (ret)
		printf("no answer\n");
	else
		printf("answered with status %u\n", le32toh(a.status));
	if (landed)
		result(name, "%zu bytes landed after the destroy returned", landed);
	else if (ret || le32toh(a.status) != RPAGE_IO_NO_POOL)
		result(name, "the write was not answered that its pool is gone");
	else
		result(name, NULL);
out:
	close(fd);
	munmap(mem, len);
}

/*
 * A child process exports a pool and exits while the rogue holds half a
 * write of it: its pages must be unpinned all the same, within the
 * exporter's wait for its readers (io_timeout_ms).
 */
static void exit_mid_write(uint64_t id, unsigned int wait_s)
{
	const char *name = "exiting_exporter_unpinned_under_a_held_write";
	static uint8_t data[RPAGE_MSG_IO_MAX];
	size_t len = 2 << 20;
	long base = pinned_pages(), now = -1;
	struct rpage_msg_io req;
	int ready[2], go[2], fd = -1, status;
	unsigned int waited;
	pid_t child;
	char c = 0;

	if (base < 0 || pipe(ready) || pipe(go)) {
		result(name, "no pin counters in /proc/vmstat, or no pipe");
		return;
	}
	child = fork();
	if (child == 0) {
		int cfd = rpage_test_open();
		uint8_t *mem = mem_alloc(len);

		close(ready[0]);
		close(go[1]);
		if (cfd < 0 || !mem || export_own(cfd, id, mem, len, 0x22))
			_exit(1);
		c = 1;
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		/* Exits with its pool exported: the file's close destroys it. */
		_exit(0);
	}
	/* Each end with one side only: a child gone is an end of file. */
	close(ready[1]);
	close(go[0]);
	if (child < 0 || read(ready[0], &c, 1) != 1 || c != 1) {
		result(name, "the child did not export its pool");
		goto out;
	}
	pool_id = id;
	pool_gen = 0;
	fd = session(name);
	if (fd < 0)
		goto out;
	req = io_frame(RPAGE_MSG_WRITE_REQ, 1, id, pool_gen, 0, sizeof(data));
	req.hdr.length = htole32(sizeof(req) + sizeof(data));
	if (write_all(fd, &req, sizeof(req)) ||
	    write_all(fd, data, sizeof(data) / 2)) {
		result(name, "sending half a write");
		goto out;
	}
	usleep(500 * 1000);
	printf("# pinned before the export %ld, with it %ld\n", base,
	       pinned_pages());
	if (write(go[1], &c, 1) != 1 || waitpid(child, &status, 0) != child) {
		result(name, "the child did not exit");
		goto out;
	}
	child = 0;
	for (waited = 0; waited < wait_s * 10; waited++) {
		now = pinned_pages();
		if (now <= base)
			break;
		usleep(100 * 1000);
	}
	printf("# pinned %ld ms after the exit: %ld\n", waited * 100L, now);
	result(name, now > base ? "%ld pages still pinned after %u s" : NULL,
	       now - base, wait_s);
out:
	if (child > 0) {
		c = 0;
		if (write(go[1], &c, 1) < 0)
			kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	if (fd >= 0)
		close(fd);
	close(ready[0]);
	close(go[1]);
}

/*
 * Reads asked for and left unread, so that the exporter's answers wait
 * in the sockets; the pool destroyed, then its memory written over: no
 * answer may carry what was written after the destroy.
 */
static void read_across_a_destroy(int rfd, uint64_t id)
{
	const char *name = "read_answers_hold_what_was_there_before_the_destroy";
	static uint8_t out[RPAGE_MSG_IO_MAX];
	size_t len = 1 << 20, bad = 0, got = 0, n;
	unsigned int i, nr = 512, answered = 0;
	uint8_t *mem = mem_alloc(len);
	int fd;
	struct rpage_msg_io req, a;

	fd = export_session(rfd, id, mem, len, name);
	if (fd < 0)
		return;
	/* More than the sockets hold: the exporter waits to send the rest. */
	for (i = 0; i < nr; i++) {
		req = io_frame(RPAGE_MSG_READ_REQ, i % 64, id, pool_gen,
			       (uint64_t)(i % 16) * RPAGE_MSG_IO_MAX,
			       RPAGE_MSG_IO_MAX);
		if (write_all(fd, &req, sizeof(req)))
			break;
	}
	usleep(500 * 1000);
	if (destroy_own(rfd, id)) {
		result(name, "destroying the pool: %s", strerror(errno));
		goto out;
	}
	/* The process's memory is its own again: it writes what it likes. */
	memset(mem, 0xaa, len);
	/*
	 * One answer per read, then nothing but the exporter's control
	 * messages, which come often enough to keep a wait for more alive.
	 */
	for (i = 0; i < nr; i++) {
		if (read_answer(fd, &a))
			break;
		if (le32toh(a.status) != RPAGE_IO_OK)
			continue;
		/* The last may be cut short by the exporter giving up on us. */
		n = read_upto(fd, out, sizeof(out));
		got += n;
		answered += n == sizeof(out);
		bad += n - count_not(out, n, 0xaa);
		if (n < sizeof(out))
			break;
	}
	printf("# %u reads answered with data after the destroy began (%zu bytes), %zu bytes written after it\n",
	       answered, got, bad);
	if (!got)
		result(name, "no read was answered with data");
	else
		result(name, bad ? "%zu bytes were written after the destroy" :
		       NULL, bad);
out:
	close(fd);
	munmap(mem, len);
}

static int destroys(uint64_t id)
{
	int rfd = rpage_test_open();

	if (rfd < 0) {
		fprintf(stderr, "opening /dev/rpage: %s\n", strerror(errno));
		return 2;
	}
	destroy_mid_write(rfd, id);
	exit_mid_write(id + 1, 30);
	read_across_a_destroy(rfd, id + 2);
	close(rfd);
	return failures ? 1 : 0;
}

/* Takes the hello of a reader's connection @fd and answers it: its index. */
static int flood_hello(int fd)
{
	struct rpage_msg_tcp_hello f, reply;
	struct rpage_msg_pool_sync sync;

	if (read_frame(fd, &f, sizeof(f)) != sizeof(f) ||
	    le16toh(f.hdr.type) != RPAGE_MSG_TCP_HELLO)
		return -1;
	reply = hello_frame(RPAGE_PROTO_MAJOR);
	reply.hello.qp_index = f.hello.qp_index;
	reply.hello.nr_qps = f.hello.nr_qps;
	if (write_all(fd, &reply, sizeof(reply)))
		return -1;
	if (f.hello.qp_index)
		return le16toh(f.hello.qp_index);
	memset(&sync, 0, sizeof(sync));
	sync.hdr.type = htole16(RPAGE_MSG_POOL_SYNC);
	sync.hdr.length = htole32(sizeof(sync));
	return write_all(fd, &sync, sizeof(sync)) ? -1 : 0;
}

static int flood(const char *addr, int port, unsigned int seconds)
{
	/* A batch of withdrawals, then a heartbeat, over and over. */
	struct {
		struct rpage_msg_pool_del del[63];
		struct rpage_msg_heartbeat hb;
	} batch;
	int lfd, cfd = -1, one = 1, small = 4096, fd;
	unsigned long sent = 0, conns = 0, next = 1;
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct timespec t0;
	unsigned int i;

	la.sin_port = htons(port);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || inet_pton(AF_INET, addr, &la.sin_addr) != 1)
		return 2;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Accepted connections take it: what we never read fills quickly. */
	setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(lfd, (struct sockaddr *)&la, sizeof(la)) || listen(lfd, 16)) {
		fprintf(stderr, "listening on %s:%d: %s\n", addr, port,
			strerror(errno));
		return 2;
	}
	memset(&batch, 0, sizeof(batch));
	batch.hb.hdr.type = htole16(RPAGE_MSG_HEARTBEAT);
	batch.hb.hdr.length = htole32(sizeof(batch.hb));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < seconds * 1000L) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, cfd < 0 ? 100 : 0) == 1) {
			fd = accept(lfd, NULL, NULL);
			if (fd >= 0 && flood_hello(fd) == 0) {
				if (cfd >= 0)
					close(cfd);
				cfd = fd;
				conns++;
			} else if (fd >= 0) {
				/* The other connections: kept open, never read. */
				conns++;
			}
		}
		if (cfd < 0)
			continue;
		for (i = 0; i < 63; i++) {
			batch.del[i].hdr.type = htole16(RPAGE_MSG_POOL_DEL);
			batch.del[i].hdr.length = htole32(sizeof(batch.del[i]));
			batch.del[i].pool_id = htole64(1000000 + next);
			batch.del[i].generation = htole64(next++);
		}
		batch.hb.seq = htole64(next);
		if (send(cfd, &batch, sizeof(batch), MSG_NOSIGNAL | MSG_DONTWAIT) ==
		    (ssize_t)sizeof(batch)) {
			sent += 64;
			continue;
		}
		/* Partial or full: a frame may be cut, so this one is done. */
		if (errno != EAGAIN) {
			close(cfd);
			cfd = -1;
			continue;
		}
		usleep(1000);
	}
	printf("flood sent %lu messages over %lu connections\n", sent, conns);
	return 0;
}

/* What one of the strangers' connections does. */
enum stranger_kind { STRANGER_SILENT, STRANGER_GARBAGE, STRANGER_REOPEN };

struct stranger {
	int fd;
	enum stranger_kind kind;
	struct timespec opened;
	struct timespec spoke;
	unsigned int sent;
};

static int strangers(unsigned int n, unsigned int seconds)
{
	struct rpage_msg_tcp_hello hello = hello_frame(RPAGE_PROTO_MAJOR);
	struct stranger *st = calloc(n, sizeof(*st));
	unsigned long opened = 0, closed = 0;
	long longest = 0;
	struct timespec t0;
	unsigned int i;

	if (!st)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		st[i].fd = -1;
		st[i].kind = i % 3;
	}
	while (ms_since(&t0) < seconds * 1000L) {
		for (i = 0; i < n; i++) {
			struct stranger *s = &st[i];
			char c = ((const char *)&hello)[s->sent % sizeof(hello)];

			if (s->fd < 0) {
				/* Closed by the exporter: again, once a second. */
				if (ms_since(&s->opened) < 1000)
					continue;
				clock_gettime(CLOCK_MONOTONIC, &s->opened);
				s->spoke = s->opened;
				s->sent = 0;
				s->fd = dial_within(1);
				if (s->fd >= 0)
					opened++;
				continue;
			}
			if (s->kind == STRANGER_REOPEN &&
			    ms_since(&s->opened) >= 1000) {
				close(s->fd);
				s->fd = -1;
				/* Opened again right away. */
				s->opened.tv_sec -= 1;
				continue;
			}
			if (s->kind == STRANGER_GARBAGE &&
			    ms_since(&s->spoke) >= 300) {
				clock_gettime(CLOCK_MONOTONIC, &s->spoke);
				if (send(s->fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
					s->sent++;
			}
			/* Whatever the exporter says; the end, if it closed. */
			for (;;) {
				char buf[256];
				ssize_t r = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);

				if (r > 0)
					continue;
				if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
					if (ms_since(&s->opened) > longest)
						longest = ms_since(&s->opened);
					close(s->fd);
					s->fd = -1;
					closed++;
				}
				break;
			}
		}
		usleep(20000);
	}
	for (i = 0; i < n; i++) {
		struct stranger *s = &st[i];

		if (s->fd < 0)
			continue;
		/*
		 * Still awaited: its age counts as a wait too, or an exporter
		 * whose hello deadline outlasts the run would never show it.
		 */
		if (s->kind != STRANGER_REOPEN && ms_since(&s->opened) > longest)
			longest = ms_since(&s->opened);
		close(s->fd);
	}
	free(st);
	printf("strangers opened %lu closed %lu longest %ld\n", opened, closed,
	       longest);
	return 0;
}

/* A numeric address, IPv6 with an optional %INTERFACE, and @port. */
/* Generations either side of the known pool's that --forge tries. */
#define FORGE_SPAN	8

/*
 * One forged request of pool --forge's @gen: a read, or a write of
 * @page. False (said) if it was answered other than as a pool that does
 * not exist; *@broken if the connection can no longer be followed.
 */
static bool forge_one(int fd, bool write, uint64_t gen, const uint8_t *page,
		      bool *broken)
{
	static uint8_t out[PAGE];
	struct rpage_msg_io req;
	int ret;

	req = io_frame(write ? RPAGE_MSG_WRITE_REQ : RPAGE_MSG_READ_REQ,
		       write ? 2 : 1, forge_id, gen, 0, PAGE);
	ret = write ? ask(fd, &req, page, PAGE, NULL, 0) :
		      ask(fd, &req, NULL, 0, out, sizeof(out));
	if (ret == RPAGE_IO_NO_POOL)
		return true;
	printf("# %s of pool %llu generation %llu answered %d\n",
	       write ? "write" : "read", (unsigned long long)forge_id,
	       (unsigned long long)gen, ret);
	*broken = ret < 0;
	return false;
}

/* --forge: see the top of the file. */
static int forge(void)
{
	static uint8_t page[PAGE];
	int fd, bad_reads = 0, bad_writes = 0;
	bool broken = false;
	uint64_t gen;

	fd = session("forge: table");
	if (fd < 0)
		return 1;
	if (forge_told)
		result("forge: table", "pool %llu was announced to this peer",
		       (unsigned long long)forge_id);
	else
		result("forge: table", NULL);
	memset(page, 0xa5, sizeof(page));
	for (gen = pool_gen - FORGE_SPAN;
	     gen != pool_gen + FORGE_SPAN + 1 && !broken; gen++) {
		if (!forge_one(fd, false, gen, page, &broken))
			bad_reads++;
		if (!broken && !forge_one(fd, true, gen, page, &broken))
			bad_writes++;
	}
	close(fd);
	result("forge: reads refused", bad_reads ? "%d answered" : NULL,
	       bad_reads);
	result("forge: writes refused", bad_writes ? "%d answered" : NULL,
	       bad_writes);
	return failures ? 1 : 0;
}

static int parse_addr(const char *text, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *ai;
	char service[16];

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(text, service, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

/*
 * One good hello, and what the exporter answers it: "hello accepted",
 * or "hello refused REASON"; exit status 0 either way, 1 if no answer.
 */
static int hello_once(void)
{
	struct rpage_msg_tcp_hello f = hello_frame(RPAGE_PROTO_MAJOR);
	union {
		struct rpage_msg_hdr hdr;
		struct rpage_msg_tcp_hello hello;
		struct rpage_msg_tcp_reject reject;
	} a;
	int fd = dial(), len;

	if (fd < 0 || write_all(fd, &f, sizeof(f))) {
		printf("hello not sent: %s\n", strerror(errno));
		return 1;
	}
	len = read_frame(fd, &a, sizeof(a));
	close(fd);
	if (len == sizeof(a.hello) &&
	    le16toh(a.hdr.type) == RPAGE_MSG_TCP_HELLO) {
		printf("hello accepted\n");
		return 0;
	}
	if (len == sizeof(a.reject) &&
	    le16toh(a.hdr.type) == RPAGE_MSG_TCP_REJECT) {
		printf("hello refused %u\n", le16toh(a.reject.reject.reason));
		return 0;
	}
	printf("hello not answered (%d)\n", len);
	return 1;
}

int main(int argc, char **argv)
{
	const char *src = NULL, *dst = NULL;
	int port = RPAGE_DEFAULT_PORT;
	unsigned int nr_strangers = 0, seconds = 0;
	uint64_t destroy_id = 0;
	const char *listen_addr = NULL;
	unsigned int flood_s = 0;
	bool hello_only = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hello"))
			hello_only = true;
	}
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--hello")) {
			i--;
			continue;
		}
		if (!strcmp(argv[i], "--from"))
			src = argv[i + 1];
		else if (!strcmp(argv[i], "--to"))
			dst = argv[i + 1];
		else if (!strcmp(argv[i], "--port"))
			port = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pool"))
			pool_id = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--strangers"))
			nr_strangers = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--destroy"))
			destroy_id = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--listen"))
			listen_addr = argv[i + 1];
		else if (!strcmp(argv[i], "--flood"))
			flood_s = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--forge"))
			forge_id = strtoull(argv[i + 1], NULL, 0);
	}
	/* A run the alarm ends still shows the cases it went through. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Whatever the exporter does, the rogue ends: its test then fails. */
	alarm(RUN_LIMIT_S + flood_s + seconds);
	if (listen_addr && flood_s)
		return flood(listen_addr, port, flood_s);
	if (!src || !dst ||
	    (!pool_id && !nr_strangers && !destroy_id && !hello_only)) {
		fprintf(stderr, "usage: %s --from SRC --to DST [--port P] { --pool ID [--forge F] | --strangers N --seconds S | --destroy ID | --hello }\n"
			"       %s --listen ADDR [--port P] --flood S\n",
			argv[0], argv[0]);
		return 2;
	}
	if (parse_addr(src, 0, &from) || parse_addr(dst, port, &to) ||
	    from.ss_family != to.ss_family) {
		fprintf(stderr, "%s: two addresses of one family, please\n",
			argv[0]);
		return 2;
	}
	addr_len = to.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);
	if (hello_only)
		return hello_once();
	if (nr_strangers)
		return strangers(nr_strangers, seconds);
	if (destroy_id)
		return destroys(destroy_id);
	if (forge_id)
		return forge();
	requests();
	bad_frames();
	hellos();
	printf("refused %u\n", refused);
	return failures ? 1 : 0;
}
