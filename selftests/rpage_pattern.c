// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_pattern: exports, reads and writes pools filled with the pattern
 * of rpage_pattern.h, for the tests that span two hosts.
 *
 *   rpage_pattern export ID SIZE [--writable] --ready PATH --until PATH
 *                 [--expect SEED OFFSET LENGTH]
 *   rpage_pattern read PEER ID OFFSET LENGTH [--seed S] [--batch PAGES]
 *   rpage_pattern write PEER ID OFFSET LENGTH --seed S [--batch PAGES]
 *   rpage_pattern fill PEER ID LENGTH [--batch PAGES]
 *   rpage_pattern check-file ID PATH [--seed S] [--offset OFFSET]
 *
 * SIZE, OFFSET and LENGTH are bytes, multiples of the page size, with an
 * optional K, M or G suffix; ID and SEED are decimal or 0x-hexadecimal.
 * ID is always the pool's id on the host that has it. Exit status 0 on
 * success with one line of result on standard output; 1 on failure,
 * with one line on standard error.
 *
 * Built on librpage alone:
 *   cc ... -Iinclude/uapi -Iulib -o rpage_pattern selftests/rpage_pattern.c \
 *      build/user/librpage.a
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "librpage.h"
#include "rpage_pattern.h"

/* Pages per RPAGE_IOC_READ or _WRITE by default, one iovec each. */
#define DEFAULT_BATCH	256

/* How often, and how long at most, export waits for --until. */
#define POLL_MS		100
#define WAIT_MAX_S	600

static uint64_t page;

static void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs("rpage_pattern: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int usage(void)
{
	fail("usage: rpage_pattern { export ID SIZE [--writable] --ready PATH --until PATH "
	     "[--expect SEED OFFSET LENGTH] | read PEER ID OFFSET LENGTH [--seed S] "
	     "[--batch PAGES] | write PEER ID OFFSET LENGTH --seed S [--batch PAGES] | "
	     "fill PEER ID LENGTH [--batch PAGES] | "
	     "check-file ID PATH [--seed S] [--offset OFFSET] }");
	return 1;
}

/*
 * Decimal or 0x-hexadecimal; with @suffixes, K, M or G multiply by 2^10,
 * 2^20 or 2^30. false for bad text or an overflow.
 */
static bool parse_number(const char *text, bool suffixes, uint64_t *out)
{
	unsigned long long val;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	val = strtoull(text, &end, 0);
	if (errno || end == text)
		return false;
	if (suffixes && *end) {
		static const char units[] = "KkMmGg";
		const char *unit = strchr(units, *end);

		if (!unit)
			return false;
		shift = 10 * (unsigned int)(1 + (unit - units) / 2);
		end++;
	}
	if (*end || (shift && val > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)val << shift;
	return true;
}

/* A number that must parse, for the error message @name. */
static bool get_number(const char *name, const char *text, uint64_t *out)
{
	if (parse_number(text, false, out))
		return true;
	fail("%s '%s' is not a number", name, text);
	return false;
}

/* Bytes: a multiple of the page size; 0 only if @zero_ok. */
static bool get_bytes(const char *name, const char *text, bool zero_ok,
		      uint64_t *out)
{
	if (!parse_number(text, true, out)) {
		fail("%s '%s' is not a number of bytes (K, M or G may follow)",
		     name, text);
		return false;
	}
	if ((!zero_ok && !*out) || *out % page) {
		fail("%s '%s' is not a %smultiple of the page size (%" PRIu64 ")",
		     name, text, zero_ok ? "" : "non-zero ", page);
		return false;
	}
	return true;
}

/* An errno value in words and by name: "Connection timed out (ETIMEDOUT)". */
static const char *error_text(int err)
{
	static char buf[128];
	const char *name = NULL;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	name = strerrorname_np(err);
#endif
	if (name)
		snprintf(buf, sizeof(buf), "%s (%s)", strerror(err), name);
	else
		snprintf(buf, sizeof(buf), "%s (errno %d)", strerror(err), err);
	return buf;
}

/* Opens /dev/rpage and completes the handshake; -1 on failure. */
static int open_rpage(void)
{
	struct rpage_api api = { .api = RPAGE_API };
	int fd, ret;

	fd = rpage_open(0);
	if (fd < 0) {
		fail("%s: %s", RPAGE_DEVICE_PATH, strerror(-fd));
		return -1;
	}
	ret = rpage_api(fd, &api);
	if (ret < 0) {
		fail("API handshake: %s", strerror(-ret));
		close(fd);
		return -1;
	}
	return fd;
}

/* The id of the peer called @name; false (reported) if there is none. */
static bool find_peer(int fd, const char *name, __u32 *id)
{
	struct rpage_peer_info *infos = NULL;
	struct rpage_list list;
	bool found = false;
	__u32 capacity = 0;
	int ret;

	for (;;) {
		memset(&list, 0, sizeof(list));
		list.entries = (uintptr_t)infos;
		list.capacity = capacity;
		ret = rpage_peer_list(fd, &list);
		if (ret < 0) {
			fail("peer list: %s", strerror(-ret));
			free(infos);
			return false;
		}
		if (list.count <= capacity)
			break;
		capacity = list.count;
		free(infos);
		infos = calloc(capacity, sizeof(*infos));
		if (!infos) {
			fail("peer list: %s", strerror(ENOMEM));
			return false;
		}
	}
	for (__u32 i = 0; i < list.count; i++) {
		if (!strncmp(infos[i].name, name, sizeof(infos[i].name))) {
			*id = infos[i].id;
			found = true;
			break;
		}
	}
	free(infos);
	if (!found)
		fail("no peer named %s", name);
	return found;
}

/* "mismatch at OFFSET" on stdout, the details on stderr. */
static int report_mismatch(const char *what, const void *buf, uint64_t buf_offset,
			   uint64_t at, uint64_t pool_id, uint64_t seed)
{
	uint64_t got = rpage_pattern_word(buf, at - buf_offset);

	printf("mismatch at %" PRIu64 "\n", at);
	fflush(stdout);
	fail("%s: pool %" PRIu64 " offset %" PRIu64 " (0x%" PRIx64 "): 0x%016" PRIx64
	     ", want 0x%016" PRIx64 " (seed %" PRIu64 ")%s",
	     what, pool_id, at, at, got, rpage_pattern(pool_id, at, seed), seed,
	     got == rpage_pattern(pool_id, at, 0) && seed ? ", the base pattern" :
	     !got ? ", zero" : "");
	return 1;
}

/*
 * export ID SIZE [--writable] --ready PATH --until PATH
 *        [--expect SEED OFFSET LENGTH]
 */
static int cmd_export(int argc, char **argv)
{
	const char *ready = NULL, *until = NULL, *pos[2];
	uint64_t id, size, seed = 0, exp_off = 0, exp_len = 0, at;
	struct rpage_pool_export exp;
	bool expect = false;
	__u32 flags = 0;
	int npos = 0, fd, rfd, ret;
	void *mem;
	long polls;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--writable")) {
			flags |= RPAGE_POOL_WRITABLE;
		} else if (!strcmp(argv[i], "--ready") && i + 1 < argc) {
			ready = argv[++i];
		} else if (!strcmp(argv[i], "--until") && i + 1 < argc) {
			until = argv[++i];
		} else if (!strcmp(argv[i], "--expect") && i + 3 < argc) {
			if (!get_number("seed", argv[i + 1], &seed) ||
			    !get_bytes("offset", argv[i + 2], true, &exp_off) ||
			    !get_bytes("length", argv[i + 3], false, &exp_len))
				return 1;
			expect = true;
			i += 3;
		} else if (argv[i][0] != '-' && npos < 2) {
			pos[npos++] = argv[i];
		} else {
			return usage();
		}
	}
	if (npos != 2 || !ready || !until)
		return usage();
	if (!get_number("pool id", pos[0], &id) ||
	    !get_bytes("size", pos[1], false, &size))
		return 1;
	if (size > SIZE_MAX) {
		fail("size %s is too large", pos[1]);
		return 1;
	}
	if (expect && (exp_off > size || exp_len > size - exp_off)) {
		fail("--expect range is beyond the pool's %" PRIu64 " bytes", size);
		return 1;
	}

	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fail("mmap %" PRIu64 " bytes: %s", size, strerror(errno));
		return 1;
	}
	rpage_pattern_fill(mem, size, id, 0, 0);

	fd = open_rpage();
	if (fd < 0)
		return 1;
	memset(&exp, 0, sizeof(exp));
	exp.id = id;
	exp.addr = (uintptr_t)mem;
	exp.length = size;
	exp.flags = flags;
	ret = rpage_pool_export(fd, &exp);
	if (ret < 0) {
		fail("export pool %" PRIu64 ": %s", id, error_text(-ret));
		return 1;
	}

	rfd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rfd < 0) {
		fail("%s: %s", ready, strerror(errno));
		return 1;
	}
	dprintf(rfd, "%d\n", (int)getpid());
	close(rfd);

	for (polls = 0; access(until, F_OK); polls++) {
		struct timespec ts = { 0, POLL_MS * 1000000L };

		if (polls >= WAIT_MAX_S * 1000L / POLL_MS) {
			fail("export pool %" PRIu64 ": %s did not appear within %d s",
			     id, until, WAIT_MAX_S);
			return 1;
		}
		nanosleep(&ts, NULL);
	}

	if (expect) {
		/* Seed 0 before the range, SEED in it, seed 0 after it. */
		const uint64_t starts[3] = { 0, exp_off, exp_off + exp_len };
		const uint64_t ends[3] = { exp_off, exp_off + exp_len, size };
		const uint64_t seeds[3] = { 0, seed, 0 };

		for (int r = 0; r < 3; r++) {
			at = rpage_pattern_check((char *)mem + starts[r],
						 ends[r] - starts[r], id,
						 starts[r], seeds[r]);
			if (at != UINT64_MAX)
				return report_mismatch("export", mem, 0, at, id,
						       seeds[r]);
		}
		printf("verified\n");
	} else {
		printf("exported %" PRIu64 " bytes\n", size);
	}
	/* Exiting closes the file, and the pool goes with it. */
	close(fd);
	return 0;
}

/*
 * Reads or writes [@offset, @offset + @length) of pool @pool_id on peer
 * @peer_name, @batch pages per call with one iovec per page.
 */
static int transfer(bool is_write, const char *peer_name, uint64_t pool_id,
		    uint64_t offset, uint64_t length, uint64_t seed,
		    uint64_t batch)
{
	const char *what = is_write ? "write" : "read";
	struct rpage_iovec *iov;
	struct rpage_io io;
	uint64_t done, at;
	void *buf = NULL;
	__u32 peer_id;
	int fd, ret;

	fd = open_rpage();
	if (fd < 0)
		return 1;
	if (!find_peer(fd, peer_name, &peer_id))
		return 1;
	iov = calloc(batch, sizeof(*iov));
	ret = posix_memalign(&buf, page, batch * page);
	if (!iov || ret) {
		fail("%s: %s", what, strerror(ENOMEM));
		return 1;
	}

	for (done = 0; done < length; ) {
		uint64_t n = length - done < batch * page ? length - done : batch * page;
		uint64_t pages = n / page;

		for (uint64_t i = 0; i < pages; i++) {
			iov[i] = (struct rpage_iovec) {
				.peer_id = peer_id,
				.pool_id = pool_id,
				.offset = offset + done + i * page,
				.length = page,
				.addr = (uintptr_t)buf + i * page,
			};
		}
		memset(&io, 0, sizeof(io));
		io.iov = (uintptr_t)iov;
		io.nr_iov = (__u32)pages;
		if (is_write) {
			rpage_pattern_fill(buf, n, pool_id, offset + done, seed);
			ret = rpage_write(fd, &io);
		} else {
			memset(buf, 0xa5, n);
			ret = rpage_read(fd, &io);
		}
		if (ret < 0) {
			fail("%s %s pool %" PRIu64 " offset %" PRIu64 " length %" PRIu64
			     " (%" PRIu64 " iovecs): %s", what, peer_name, pool_id,
			     offset + done, n, pages, error_text(-ret));
			return 1;
		}
		if (!is_write) {
			at = rpage_pattern_check(buf, n, pool_id, offset + done, seed);
			if (at != UINT64_MAX)
				return report_mismatch(what, buf, offset + done, at,
						       pool_id, seed);
		}
		done += n;
	}
	printf(is_write ? "wrote %" PRIu64 " bytes\n" : "ok %" PRIu64 " bytes\n",
	       length);
	free(buf);
	free(iov);
	close(fd);
	return 0;
}

/*
 * read PEER ID OFFSET LENGTH [--seed S] [--batch PAGES]
 * write PEER ID OFFSET LENGTH --seed S [--batch PAGES]
 * fill PEER ID LENGTH [--batch PAGES]
 */
static int cmd_transfer(const char *cmd, int argc, char **argv)
{
	bool is_fill = !strcmp(cmd, "fill"), is_write = is_fill || !strcmp(cmd, "write");
	int want = is_fill ? 3 : 4, npos = 0;
	uint64_t id, offset = 0, length, seed = 0, batch = DEFAULT_BATCH;
	bool have_seed = false;
	const char *pos[4];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc && !is_fill) {
			if (!get_number("seed", argv[++i], &seed))
				return 1;
			have_seed = true;
		} else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
			if (!get_number("batch", argv[++i], &batch))
				return 1;
		} else if (argv[i][0] != '-' && npos < want) {
			pos[npos++] = argv[i];
		} else {
			return usage();
		}
	}
	if (npos != want || (is_write && !is_fill && !have_seed))
		return usage();
	if (!get_number("pool id", pos[1], &id))
		return 1;
	if (!is_fill && !get_bytes("offset", pos[2], true, &offset))
		return 1;
	if (!get_bytes("length", pos[want - 1], false, &length))
		return 1;
	if (offset + length < offset) {
		fail("offset plus length is too large");
		return 1;
	}
	if (!batch || batch > RPAGE_IO_MAX_IOV || batch * page > RPAGE_IO_MAX_BYTES) {
		fail("batch must be 1 to %d pages and at most %llu bytes",
		     RPAGE_IO_MAX_IOV, (unsigned long long)RPAGE_IO_MAX_BYTES);
		return 1;
	}
	return transfer(is_write, pos[0], id, offset, length, seed, batch);
}

/*
 * check-file ID PATH [--seed S] [--offset OFFSET]: the file (or standard
 * input, for -) holds the pattern of pool ID from byte OFFSET of the
 * pool on, as `rpagectl read` wrote it.
 */
static int cmd_check_file(int argc, char **argv)
{
	const size_t chunk = 1 << 20;
	uint64_t id, seed = 0, offset = 0, done = 0, at;
	const char *pos[2];
	int npos = 0, fd;
	char *buf;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			if (!get_number("seed", argv[++i], &seed))
				return 1;
		} else if (!strcmp(argv[i], "--offset") && i + 1 < argc) {
			if (!get_bytes("offset", argv[++i], true, &offset))
				return 1;
		} else if ((argv[i][0] != '-' || !strcmp(argv[i], "-")) && npos < 2) {
			pos[npos++] = argv[i];
		} else {
			return usage();
		}
	}
	if (npos != 2)
		return usage();
	if (!get_number("pool id", pos[0], &id))
		return 1;
	fd = strcmp(pos[1], "-") ? open(pos[1], O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		fail("%s: %s", pos[1], strerror(errno));
		return 1;
	}
	buf = malloc(chunk);
	if (!buf) {
		fail("check-file: %s", strerror(ENOMEM));
		return 1;
	}
	for (;;) {
		size_t got = 0;
		ssize_t n;

		/* Whole chunks but the last, so that words never straddle. */
		while (got < chunk) {
			n = read(fd, buf + got, chunk - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				fail("%s: %s", pos[1], strerror(errno));
				return 1;
			}
			if (!n)
				break;
			got += (size_t)n;
		}
		if (got % 8) {
			fail("%s: %" PRIu64 " bytes, not a whole number of 8-byte words",
			     pos[1], done + got);
			return 1;
		}
		at = rpage_pattern_check(buf, got, id, offset + done, seed);
		if (at != UINT64_MAX)
			return report_mismatch("check-file", buf, offset + done, at,
					       id, seed);
		done += got;
		if (got < chunk)
			break;
	}
	printf("ok %" PRIu64 " bytes\n", done);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	long size = sysconf(_SC_PAGESIZE);

	page = size > 0 ? (uint64_t)size : 4096;
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 2, argv + 2);
	if (!strcmp(argv[1], "read") || !strcmp(argv[1], "write") ||
	    !strcmp(argv[1], "fill"))
		return cmd_transfer(argv[1], argc - 2, argv + 2);
	if (!strcmp(argv[1], "check-file"))
		return cmd_check_file(argc - 2, argv + 2);
	return usage();
}
