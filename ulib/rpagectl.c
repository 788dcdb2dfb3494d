// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: configure and inspect rpage.ko.
 *
 *   rpagectl [-j [-p]] [-V] OBJECT { COMMAND | help }
 *   rpagectl [-j [-p]] [-f] -b FILE
 *
 * Objects and commands may be abbreviated to any unique prefix, as with
 * ip(8) and rdma(8). Human output by default, JSON with -j. Exit status
 * 0 on success, 1 on a failed operation, 2 on a usage error; a failure
 * prints one line on standard error. -b runs the commands of FILE, one
 * a line, as ip -batch does: the configuration file of a host's boot
 * (rpage-setup(8)), or what `rpagectl save` printed.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "librpage.h"
#include "rpagectl.h"

#define EXIT_USAGE 2

bool opt_json;
bool opt_pretty;

/*
 * In batch mode, "FILE:LINE" of the command running, which every message
 * of its failure starts with; empty otherwise.
 */
static char batch_where[PATH_MAX + 16];

/* The object of the command running, whose help a usage error points at. */
static const char *help_object;

static void message_start(void)
{
	fputs("rpagectl: ", stderr);
	if (batch_where[0])
		fprintf(stderr, "%s: ", batch_where);
}

void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	message_start();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	message_start();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (help_object)
		fprintf(stderr, " (try 'rpagectl %s help')\n", help_object);
	else
		fputs(" (try 'rpagectl help')\n", stderr);
	return EXIT_USAGE;
}

/* A word the user typed matches @full when it is a prefix of it. */
bool matches(const char *typed, const char *full)
{
	size_t len = strlen(typed);

	return len && !strncmp(typed, full, len);
}

/*
 * Opens /dev/rpage and completes the handshake, reporting failures in
 * words an operator can act on.
 */
int open_device(struct rpage_api *api)
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

/*
 * Reports a failed command in one line and returns the exit status.
 * @what names the command ("peer add"), @subject what it was about
 * ("hostb", or NULL), @words the explanation of @err if the caller has
 * one (or NULL: then a generic one).
 */
int fail_cmd(const char *what, const char *subject, int err,
	     const char *words)
{
	const char *sep = subject ? " " : "";

	if (!subject)
		subject = "";
	if (words)
		fail("%s%s%s: %s", what, sep, subject, words);
	else if (err == EPERM)
		fail("%s: needs CAP_SYS_ADMIN", what);
	else if (err == ENOTTY)
		fail("%s: not supported by the loaded rpage.ko (is it older than rpagectl?)",
		     what);
	else
		fail("%s%s%s: %s", what, sep, subject, strerror(err));
	return 1;
}

/*
 * Other spellings of commands, each taken where its object has no
 * command of that name: the verbs of the other objects (pools are
 * created and destroyed, the rest added and deleted) and ip(8)'s.
 */
static const struct { const char *alias, *cmd; } command_aliases[] = {
	{ "delete", "del" }, { "list", "show" }, { "lst", "show" },
	{ "add", "create" }, { "del", "destroy" }, { "delete", "destroy" },
};

/*
 * The command word of @typed among @cmds (NULL-terminated), or -1: the
 * one spelled so, else an alias's, else the first, in @cmds' order, that
 * @typed begins, as ip(8) resolves them (each object lists show before
 * set: "peer s" is show).
 */
int find_command(const char *typed, const char *const *cmds)
{
	int found = -1;

	for (int i = 0; cmds[i]; i++)
		if (!strcmp(typed, cmds[i]))
			return i;
	for (size_t a = 0; a < sizeof(command_aliases) / sizeof(command_aliases[0]); a++) {
		if (strcmp(typed, command_aliases[a].alias))
			continue;
		for (int i = 0; cmds[i]; i++)
			if (!strcmp(cmds[i], command_aliases[a].cmd))
				return i;
	}
	for (int i = 0; cmds[i] && found < 0; i++)
		if (matches(typed, cmds[i]))
			found = i;
	return found;
}

#define PEER_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A peer name from the command line; 0 or 2 (usage). */
int check_peer_name(const char *what, const char *name)
{
	size_t len = strlen(name);

	if (!len || len >= RPAGE_NAME_MAX)
		return usage_error("%s: peer name '%s' must have 1 to %d characters",
				   what, name, RPAGE_NAME_MAX - 1);
	if (strspn(name, PEER_NAME_CHARS) != len)
		return usage_error("%s: peer name '%s' may only contain %s",
				   what, name, "letters, digits, '.', '_' and '-'");
	return 0;
}

/*
 * An unsigned number from the command line, decimal or 0x-hexadecimal;
 * with @suffixes, K, M or G (either case) multiply it by 2^10, 2^20 or
 * 2^30. 0 on success, -EINVAL for bad text, -ERANGE when it overflows.
 */
static int parse_number(const char *text, bool suffixes, uint64_t *out)
{
	unsigned long long val;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	val = strtoull(text, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || end == text)
		return -EINVAL;
	if (suffixes && *end) {
		switch (*end) {
		case 'K': case 'k':
			shift = 10;
			break;
		case 'M': case 'm':
			shift = 20;
			break;
		case 'G': case 'g':
			shift = 30;
			break;
		default:
			return -EINVAL;
		}
		end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && val > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)val << shift;
	return 0;
}

/* A pool id from the command line: 1 to 2^64-1; 0 or 2 (usage). */
int parse_pool_id(const char *what, const char *text, uint64_t *id)
{
	if (parse_number(text, false, id) || !*id)
		return usage_error("%s: pool id '%s' is not a number from 1 to 2^64-1",
				   what, text);
	return 0;
}

/* The value of a module parameter, or "?" if it cannot be read. */
void read_module_param(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/sys/module/rpage/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

uint64_t page_size(void)
{
	long size = sysconf(_SC_PAGESIZE);

	return size > 0 ? (uint64_t)size : 4096;
}

/*
 * A byte count from the command line (SIZE, OFFSET, LENGTH): a multiple
 * of the page size, and not 0 unless @zero_ok; 0 or 2 (usage).
 */
int parse_bytes(const char *what, const char *name, const char *text,
		bool zero_ok, uint64_t *bytes)
{
	uint64_t page = page_size();
	int ret = parse_number(text, true, bytes);

	if (ret == -ERANGE)
		return usage_error("%s: %s '%s' is too large", what, name, text);
	if (ret)
		return usage_error("%s: %s '%s' is not a number of bytes (K, M or G may follow)",
				   what, name, text);
	if ((!zero_ok && !*bytes) || *bytes % page)
		return usage_error("%s: %s '%s' is not a %smultiple of the page size (%" PRIu64 ")",
				   what, name, text, zero_ok ? "" : "non-zero ", page);
	return 0;
}

/*
 * The entry called @name of the list @list_fn answers, whose entries of
 * @size bytes each start with their name (char[RPAGE_NAME_MAX]), copied
 * to @entry; 0, or -ENOENT or another -errno.
 */
int find_named_entry(int fd, int (*list_fn)(int, struct rpage_list *),
		     size_t size, const char *name, void *entry)
{
	void *buf = NULL;
	int count, ret = -ENOENT;

	count = rpage_list_all(fd, list_fn, size, &buf);
	if (count < 0)
		return count;
	for (int i = 0; i < count; i++) {
		const char *at = (const char *)buf + (size_t)i * size;

		if (!strncmp(at, name, RPAGE_NAME_MAX)) {
			memcpy(entry, at, size);
			ret = 0;
			break;
		}
	}
	free(buf);
	return ret;
}

int find_peer_id(int fd, const char *name, __u32 *id)
{
	struct rpage_peer_info info;
	int ret;

	ret = rpage_peer_find(fd, name, &info);
	if (!ret)
		*id = info.id;
	return ret;
}

static int cmd_help(int argc, char **argv);

struct rpagectl_object {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct rpagectl_object objects[] = {
	{ "device",   cmd_device,   "RDMA devices rpage.ko is attached to" },
	{ "endpoint", cmd_endpoint, "addresses rpage.ko accepts peers' connections on" },
	{ "peer",     cmd_peer,     "hosts rpage.ko connects to, and their state" },
	{ "pool",     cmd_pool,     "memory this host exports to its peers, and theirs" },
	{ "map",      cmd_map,      "named mappings of peers' pools, opened by path" },
	{ "read",     cmd_read,     "copy pages of a peer's pool to a file" },
	{ "write",    cmd_write,    "copy a file into pages of a peer's pool" },
	{ "stat",     cmd_stat,     "counters and latency of reads, writes and faults" },
	{ "version",  cmd_version,  "library and module versions" },
	{ "save",     cmd_save,     "print the configuration, as commands for -b" },
	{ "monitor",  cmd_monitor,  "events as they happen: peer states, pools, mappings" },
	{ "help",     cmd_help,     "this text" },
};

static int cmd_help(int argc, char **argv)
{
	puts("Usage: rpagectl [ OPTIONS ] OBJECT { COMMAND | help }\n"
	     "       rpagectl [ OPTIONS ] [ -f | --force ] -b FILE\n"
	     "OPTIONS := { -j | --json | -p | --pretty | -V | --version | -h | --help }\n"
	     "-b, --batch FILE: the commands of FILE (- for standard input), one a line;\n"
	     "                  -f goes on past a failed one\n"
	     "OBJECT :=");
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		printf("    %-10s %s\n", objects[i].name, objects[i].summary);
	return 0;
}

/*
 * The object @typed names: the one spelled so, else the first, in the
 * order of `rpagectl help`, that it begins, as ip(8) resolves them (p is
 * peer, s is stat); NULL if none.
 */
static const struct rpagectl_object *find_object(const char *typed)
{
	const struct rpagectl_object *found = NULL;

	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (!strcmp(typed, objects[i].name))
			return &objects[i];
		if (!found && matches(typed, objects[i].name))
			found = &objects[i];
	}
	return found;
}

/* Runs OBJECT COMMAND... (@argv[0] the object); its exit status. */
static int run_command(int argc, char **argv)
{
	const struct rpagectl_object *obj = find_object(argv[0]);

	int ret;

	if (!obj)
		return usage_error("unknown object '%s'", argv[0]);
	if (strcmp(obj->name, "help"))
		help_object = obj->name;
	ret = obj->run(argc - 1, argv + 1);
	help_object = NULL;
	return ret;
}

#define BATCH_MAX_WORDS 64

/*
 * Splits @line into words at blanks, in place: a word in double or
 * single quotes may hold blanks (the quotes go), and a # that starts a
 * word starts a comment to the end of the line. Returns the number of
 * words, or -1 for a quote left open.
 */
static int split_words(char *line, char **words, int max)
{
	char *in = line, *out;
	int n = 0;

	for (;;) {
		while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r')
			in++;
		if (!*in || *in == '#')
			return n;
		if (n == max)
			return max + 1;
		words[n++] = out = in;
		while (*in && *in != ' ' && *in != '\t' && *in != '\n' &&
		       *in != '\r') {
			if (*in == '"' || *in == '\'') {
				char quote = *in++;

				while (*in && *in != quote)
					*out++ = *in++;
				if (!*in)
					return -1;
				in++;
				continue;
			}
			*out++ = *in++;
		}
		if (*in)
			in++;
		*out = '\0';
	}
}

/*
 * rpagectl -b FILE: the commands of FILE ("-": standard input), one a
 * line, each as if given on the command line after the options. Stops
 * at the first that fails, naming its line, unless -f; then goes on and
 * fails at the end if any did. Blank lines and comments are skipped.
 */
static int run_batch(const char *path, bool force)
{
	char *words[BATCH_MAX_WORDS + 1];
	const char *name = strcmp(path, "-") ? path : "(stdin)";
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	unsigned int lineno = 0, failed = 0;
	size_t cap = 0;
	char *line = NULL;
	int status = 0;

	if (!f) {
		fail("%s: %s", path, strerror(errno));
		return 1;
	}
	while (getline(&line, &cap, f) >= 0) {
		int n, ret;

		lineno++;
		snprintf(batch_where, sizeof(batch_where), "%s:%u", name, lineno);
		n = split_words(line, words, BATCH_MAX_WORDS);
		if (n == 0)
			continue;
		if (n < 0)
			ret = usage_error("a quote is not closed");
		else if (n > BATCH_MAX_WORDS)
			ret = usage_error("more than %d words", BATCH_MAX_WORDS);
		else if (words[0][0] == '-')
			ret = usage_error("options ('%s') go on rpagectl's command line, not in a batch",
					  words[0]);
		else
			ret = run_command(n, words);
		/* Each command's output reaches its reader before the next runs. */
		fflush(stdout);
		if (!ret)
			continue;
		failed++;
		if (!status)
			status = ret;
		if (!force)
			break;
	}
	batch_where[0] = '\0';
	if (ferror(f)) {
		fail("%s: %s", path, strerror(errno));
		status = status ? status : 1;
	}
	if (f != stdin)
		fclose(f);
	free(line);
	if (failed && force)
		fail("%s: %u of its commands failed", name, failed);
	return status;
}

/*
 * Global options: short ones may be combined (-jp); long ones are
 * spelled out (--json) or abbreviated (--js); -b and --batch take the
 * next word (-b last among combined letters). Returns the index of the
 * first word after them, or -1 (with *status set) when done already.
 */
static int parse_options(int argc, char **argv, int *status,
			 const char **batch, bool *force)
{
	static const struct { char letter; const char *name; } opts[] = {
		{ 'j', "json" }, { 'p', "pretty" }, { 'V', "version" },
		{ 'h', "help" }, { 'b', "batch" }, { 'f', "force" },
	};
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *arg = argv[i];
		char letters[8] = "";

		if (arg[1] == '-') {
			for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
				if (matches(arg + 2, opts[o].name))
					letters[0] = opts[o].letter;
			if (!letters[0]) {
				*status = usage_error("unknown option '%s'", arg);
				return -1;
			}
		} else {
			snprintf(letters, sizeof(letters), "%s", arg + 1);
		}
		for (const char *l = letters; *l; l++) {
			switch (*l) {
			case 'j':
				opt_json = true;
				break;
			case 'p':
				opt_pretty = true;
				break;
			case 'f':
				*force = true;
				break;
			case 'b':
				if (l[1] || i + 1 >= argc) {
					*status = usage_error("option '%s' needs a FILE after it",
							      arg);
					return -1;
				}
				*batch = argv[++i];
				break;
			case 'V':
				printf("rpagectl %s\n", rpage_lib_version());
				*status = 0;
				return -1;
			case 'h':
				*status = cmd_help(0, NULL);
				return -1;
			default:
				*status = usage_error("unknown option '%s'", arg);
				return -1;
			}
		}
	}
	return i;
}

int main(int argc, char **argv)
{
	const char *batch = NULL;
	bool force = false;
	int i, status;

	i = parse_options(argc, argv, &status, &batch, &force);
	if (i < 0)
		return status;
	if (batch) {
		if (i < argc)
			return usage_error("-b %s: unexpected argument '%s' (the commands are in the file)",
					   batch, argv[i]);
		return run_batch(batch, force);
	}
	if (force)
		return usage_error("-f is for -b: go on past a failed command");
	if (i == argc) {
		cmd_help(0, NULL);
		return EXIT_USAGE;
	}
	return run_command(argc - i, argv + i);
}
