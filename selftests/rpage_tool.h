/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the command-line test tools (rpage_pattern, rpage_fault) share:
 * one line of error on standard error, numbers and sizes as arguments,
 * opening /dev/rpage, peers by name, and the files through which a
 * test script and a tool tell each other they are ready.
 *
 * For programs of one source file: the header keeps the program's name
 * and page size. Call tool_init() first thing in main().
 */
#ifndef RPAGE_TOOL_H
#define RPAGE_TOOL_H

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>

#include "rpage_test.h"
#include "rpage_pattern.h"

/* How often, and how long at most, a tool waits for a file to appear. */
#define TOOL_POLL_MS	100
#define TOOL_WAIT_MAX_S	600

static const char *tool_name = "rpage";
static uint64_t page;

static inline void tool_init(const char *name)
{
	tool_name = name;
	page = rpage_test_page_size();
}

static inline void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Decimal or 0x-hexadecimal; with @suffixes, K, M or G multiply by 2^10,
 * 2^20 or 2^30. false for bad text or an overflow.
 */
static inline bool parse_number(const char *text, bool suffixes, uint64_t *out)
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
static inline bool get_number(const char *name, const char *text, uint64_t *out)
{
	if (parse_number(text, false, out))
		return true;
	fail("%s '%s' is not a number", name, text);
	return false;
}

/* Bytes: a multiple of the page size; 0 only if @zero_ok. */
static inline bool get_bytes(const char *name, const char *text, bool zero_ok,
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

/*
 * An errno value by name, one word for a result line: "ETIMEDOUT", or
 * "errno110" where the C library cannot name it.
 */
static inline const char *errno_name(int err)
{
	static char buf[32];
	const char *name = NULL;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	name = strerrorname_np(err);
#endif
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "errno%d", err);
	return buf;
}

/* An errno value in words and by name: "Connection timed out (ETIMEDOUT)". */
static inline const char *error_text(int err)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s (%s)", strerror(err), errno_name(err));
	return buf;
}

/* @size bytes of private anonymous memory; NULL (reported) on failure. */
static inline void *map_anon(uint64_t size)
{
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		fail("mmap %" PRIu64 " bytes: %s", size, strerror(errno));
		return NULL;
	}
	return mem;
}

/* Opens /dev/rpage and completes the handshake; -1 (reported) on failure. */
static inline int open_rpage(void)
{
	int fd = rpage_test_open();

	if (fd < 0) {
		fail("open %s and handshake: %s", RPAGE_DEVICE_PATH,
		     error_text(-fd));
		return -1;
	}
	return fd;
}

/* The id of the peer called @name; false (reported) if there is none. */
static inline bool find_peer(int fd, const char *name, __u32 *id)
{
	int ret = peer_lookup(fd, name, id, NULL);

	if (ret == -ENOENT)
		fail("no peer named %s", name);
	else if (ret < 0)
		fail("peer list: %s", error_text(-ret));
	return !ret;
}

/*
 * The details of a word at pool offset @at that is not the pattern,
 * read from @buf, which holds the pool from byte @buf_offset on.
 */
static inline void fail_mismatch(const char *what, const void *buf,
				 uint64_t buf_offset, uint64_t at,
				 uint64_t pool_id, uint64_t seed)
{
	uint64_t got = rpage_pattern_word(buf, at - buf_offset);

	fail("%s: pool %" PRIu64 " offset %" PRIu64 " (0x%" PRIx64 "): 0x%016" PRIx64
	     ", want 0x%016" PRIx64 " (seed %" PRIu64 ")%s",
	     what, pool_id, at, at, got, rpage_pattern(pool_id, at, seed), seed,
	     got == rpage_pattern(pool_id, at, 0) && seed ? ", the base pattern" :
	     !got ? ", zero" : "");
}

/* Creates file @path holding our pid; false (reported) on failure. */
static inline bool tell_ready(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0) {
		fail("%s: %s", path, strerror(errno));
		return false;
	}
	dprintf(fd, "%d\n", (int)getpid());
	close(fd);
	return true;
}

/*
 * Waits for file @path to exist, polling every TOOL_POLL_MS; false
 * (reported, for @what) if it has not within TOOL_WAIT_MAX_S.
 */
static inline bool wait_for_file(const char *what, const char *path)
{
	for (long polls = 0; access(path, F_OK); polls++) {
		if (polls >= TOOL_WAIT_MAX_S * 1000L / TOOL_POLL_MS) {
			fail("%s: %s did not appear within %d s", what, path,
			     TOOL_WAIT_MAX_S);
			return false;
		}
		sleep_ms(TOOL_POLL_MS);
	}
	return true;
}

#endif /* RPAGE_TOOL_H */
