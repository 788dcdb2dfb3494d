// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_pattern: exports, reads and writes pools filled with the pattern
 * of rpage_pattern.h, for the tests that span two hosts.
 *
 *   rpage_pattern export ID SIZE [--writable] --ready PATH --until PATH
 *                 [--expect SEED OFFSET LENGTH]
 *   rpage_pattern read PEER ID OFFSET LENGTH [--seed S] [--batch PAGES]
 *                 [--stride PAGES]
 *   rpage_pattern write PEER ID OFFSET LENGTH --seed S [--batch PAGES]
 *                 [--stride PAGES]
 *   rpage_pattern fill PEER ID LENGTH [--batch PAGES]
 *   rpage_pattern check-file ID PATH [--seed S] [--offset OFFSET] [--length LEN]
 *
 * SIZE, OFFSET and LENGTH are bytes, multiples of the page size, with an
 * optional K, M or G suffix; ID and SEED are decimal or 0x-hexadecimal.
 * ID is always the pool's id on the host that has it. With --stride N,
 * read and write move LENGTH bytes of every Nth page from OFFSET on.
 * Exit status 0 on
 * success with one line of result on standard output; 1 on failure,
 * with one line on standard error.
 *
 * Built on librpage alone:
 *   cc ... -Iinclude/uapi -Iulib -o rpage_pattern selftests/rpage_pattern.c \
 *      build/user/librpage.a
 */
#include <sys/mman.h>

#include "rpage_tool.h"

/* Pages per RPAGE_IOC_READ or _WRITE by default, one iovec each. */
#define DEFAULT_BATCH	256

static int usage(void)
{
	fail("usage: rpage_pattern { export ID SIZE [--writable] --ready PATH --until PATH "
	     "[--expect SEED OFFSET LENGTH] | read PEER ID OFFSET LENGTH [--seed S] "
	     "[--batch PAGES] [--stride PAGES] | write PEER ID OFFSET LENGTH --seed S "
	     "[--batch PAGES] [--stride PAGES] | "
	     "fill PEER ID LENGTH [--batch PAGES] | "
	     "check-file ID PATH [--seed S] [--offset OFFSET] [--length LEN] }");
	return 1;
}

/* "mismatch at OFFSET" on stdout, the details on stderr. */
static int report_mismatch(const char *what, const void *buf, uint64_t buf_offset,
			   uint64_t at, uint64_t pool_id, uint64_t seed)
{
	printf("mismatch at %" PRIu64 "\n", at);
	fflush(stdout);
	fail_mismatch(what, buf, buf_offset, at, pool_id, seed);
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
	int npos = 0, fd, ret;
	void *mem;

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

	mem = map_anon(size);
	if (!mem)
		return 1;
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

	if (!tell_ready(ready) || !wait_for_file("export", until))
		return 1;

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
 * Reads or writes @length bytes of pool @pool_id on peer @peer_name,
 * every @stride-th page from @offset on, @batch pages per call with one
 * iovec per page.
 */
static int transfer(bool is_write, const char *peer_name, uint64_t pool_id,
		    uint64_t offset, uint64_t length, uint64_t seed,
		    uint64_t batch, uint64_t stride)
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
				.offset = offset + (done + i * page) * stride,
				.length = page,
				.addr = (uintptr_t)buf + i * page,
			};
		}
		memset(&io, 0, sizeof(io));
		io.iov = (uintptr_t)iov;
		io.nr_iov = (__u32)pages;
		if (is_write) {
			for (uint64_t i = 0; i < pages; i++)
				rpage_pattern_fill((char *)buf + i * page, page,
						   pool_id, iov[i].offset, seed);
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
		for (uint64_t i = 0; !is_write && i < pages; i++) {
			const char *p = (const char *)buf + i * page;

			at = rpage_pattern_check(p, page, pool_id, iov[i].offset, seed);
			if (at != UINT64_MAX)
				return report_mismatch(what, p, iov[i].offset, at,
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
 * read PEER ID OFFSET LENGTH [--seed S] [--batch PAGES] [--stride PAGES]
 * write PEER ID OFFSET LENGTH --seed S [--batch PAGES] [--stride PAGES]
 * fill PEER ID LENGTH [--batch PAGES]
 */
static int cmd_transfer(const char *cmd, int argc, char **argv)
{
	bool is_fill = !strcmp(cmd, "fill"), is_write = is_fill || !strcmp(cmd, "write");
	int want = is_fill ? 3 : 4, npos = 0;
	uint64_t id, offset = 0, length, seed = 0, batch = DEFAULT_BATCH, stride = 1;
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
		} else if (!strcmp(argv[i], "--stride") && i + 1 < argc && !is_fill) {
			if (!get_number("stride", argv[++i], &stride))
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
	if (!stride || stride > UINT32_MAX) {
		fail("stride must be 1 to %u pages", UINT32_MAX);
		return 1;
	}
	if (length > (UINT64_MAX - offset) / stride) {
		fail("offset plus length is too large");
		return 1;
	}
	if (!batch || batch > RPAGE_IO_MAX_IOV || batch * page > RPAGE_IO_MAX_BYTES) {
		fail("batch must be 1 to %d pages and at most %llu bytes",
		     RPAGE_IO_MAX_IOV, (unsigned long long)RPAGE_IO_MAX_BYTES);
		return 1;
	}
	return transfer(is_write, pos[0], id, offset, length, seed, batch, stride);
}

/*
 * check-file ID PATH [--seed S] [--offset OFFSET] [--length LEN]: the
 * file (or standard input, for -) holds the pattern of pool ID from byte
 * OFFSET of the pool on, as `rpagectl read` wrote it; with --length,
 * exactly LEN bytes of it (a writer that died early fails the check).
 */
static int cmd_check_file(int argc, char **argv)
{
	const size_t chunk = 1 << 20;
	uint64_t id, seed = 0, offset = 0, done = 0, at, length = UINT64_MAX;
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
		} else if (!strcmp(argv[i], "--length") && i + 1 < argc) {
			if (!get_bytes("length", argv[++i], true, &length))
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
	if (length != UINT64_MAX && done != length) {
		fail("%s: %" PRIu64 " bytes, not %" PRIu64, pos[1], done, length);
		return 1;
	}
	printf("ok %" PRIu64 " bytes\n", done);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	tool_init("rpage_pattern");
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
