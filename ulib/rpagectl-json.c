// SPDX-License-Identifier: GPL-2.0
/*
 * rpagectl: the JSON writer behind `rpagectl -j`.
 */
#include <inttypes.h>
#include <string.h>

#include "rpagectl.h"

void json_init(struct json_writer *jw, FILE *out, bool pretty)
{
	jw->out = out;
	jw->pretty = pretty;
	jw->depth = 0;
	jw->need_comma = false;
}

static void json_newline(struct json_writer *jw)
{
	if (!jw->pretty)
		return;
	fputc('\n', jw->out);
	for (int i = 0; i < jw->depth; i++)
		fputs("  ", jw->out);
}

static void json_quoted(struct json_writer *jw, const char *s)
{
	fputc('"', jw->out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(jw->out, "\\%c", c);
		else if (c < 0x20)
			fprintf(jw->out, "\\u%04x", c);
		else
			fputc(c, jw->out);
	}
	fputc('"', jw->out);
}

/* Starts a value: the comma before it, and its key inside an object. */
static void json_member(struct json_writer *jw, const char *key)
{
	if (jw->need_comma)
		fputc(',', jw->out);
	if (jw->depth)
		json_newline(jw);
	if (key) {
		json_quoted(jw, key);
		fputs(jw->pretty ? ": " : ":", jw->out);
	}
	jw->need_comma = true;
}

static void json_open(struct json_writer *jw, const char *key, char bracket)
{
	json_member(jw, key);
	fputc(bracket, jw->out);
	jw->depth++;
	jw->need_comma = false;
}

static void json_close(struct json_writer *jw, char bracket)
{
	bool empty = !jw->need_comma;

	jw->depth--;
	if (!empty)
		json_newline(jw);
	fputc(bracket, jw->out);
	jw->need_comma = true;
}

void json_open_object(struct json_writer *jw, const char *key)
{
	json_open(jw, key, '{');
}

void json_close_object(struct json_writer *jw)
{
	json_close(jw, '}');
}

void json_open_array(struct json_writer *jw, const char *key)
{
	json_open(jw, key, '[');
}

void json_close_array(struct json_writer *jw)
{
	json_close(jw, ']');
}

void json_string(struct json_writer *jw, const char *key, const char *val)
{
	json_member(jw, key);
	json_quoted(jw, val);
}

void json_uint(struct json_writer *jw, const char *key, uint64_t val)
{
	json_member(jw, key);
	fprintf(jw->out, "%" PRIu64, val);
}

void json_null(struct json_writer *jw, const char *key)
{
	json_member(jw, key);
	fputs("null", jw->out);
}

void json_bool(struct json_writer *jw, const char *key, bool val)
{
	json_member(jw, key);
	fputs(val ? "true" : "false", jw->out);
}

void json_finish(struct json_writer *jw)
{
	fputc('\n', jw->out);
	fflush(jw->out);
}

/*
 * One field of an object, the iproute2 way: one call serves both
 * outputs. As text, " LABEL VALUE" (VALUE alone without a label, quoted
 * if it holds a space); as JSON, a member @key. The same for the
 * print_*() below.
 */
void print_str(struct json_writer *jw, const char *key, const char *label,
	       const char *val)
{
	const char *q = strchr(val, ' ') ? "\"" : "";

	if (jw)
		json_string(jw, key, val);
	else if (label)
		printf(" %s %s%s%s", label, q, val, q);
	else
		printf("%s", val);
}

void print_u64(struct json_writer *jw, const char *key, const char *label,
	       uint64_t val)
{
	if (jw)
		json_uint(jw, key, val);
	else if (label)
		printf(" %s %" PRIu64, label, val);
	else
		printf("%" PRIu64, val);
}

/*
 * A string that may be absent (@val NULL): JSON null, text @absent (such
 * as "-" or "(deleted)").
 */
void print_str_opt(struct json_writer *jw, const char *key, const char *label,
		   const char *val, const char *absent)
{
	if (jw && !val)
		json_null(jw, key);
	else
		print_str(jw, key, label, val ? val : absent);
}

/* A number that may be absent (!@present): JSON null, text @absent. */
void print_u64_opt(struct json_writer *jw, const char *key, const char *label,
		   bool present, uint64_t val, const char *absent)
{
	if (present)
		print_u64(jw, key, label, val);
	else if (jw)
		json_null(jw, key);
	else
		printf(" %s %s", label, absent);
}

/*
 * A list of words: JSON an array of them, text joined by ',' after
 * @label, or @empty when there is none.
 */
void print_list(struct json_writer *jw, const char *key, const char *label,
		const char *const *items, size_t count, const char *empty)
{
	if (jw) {
		json_open_array(jw, key);
		for (size_t i = 0; i < count; i++)
			json_string(jw, NULL, items[i]);
		json_close_array(jw);
		return;
	}
	printf(" %s ", label);
	for (size_t i = 0; i < count; i++)
		printf("%s%s", i ? "," : "", items[i]);
	if (!count)
		printf("%s", empty);
}

/* A yes-or-no: JSON true or false, text @yes or @no ("on", "off"). */
void print_bool(struct json_writer *jw, const char *key, const char *label,
		bool val, const char *yes, const char *no)
{
	if (jw)
		json_bool(jw, key, val);
	else
		printf(" %s %s", label, val ? yes : no);
}

/*
 * A duration: JSON milliseconds under @key; text seconds, to the
 * millisecond ("60s", "1.500s").
 */
void print_ms(struct json_writer *jw, const char *key, const char *label,
	      uint64_t ms)
{
	if (jw)
		json_uint(jw, key, ms);
	else if (ms % 1000)
		printf(" %s %" PRIu64 ".%03" PRIu64 "s", label, ms / 1000, ms % 1000);
	else
		printf(" %s %" PRIu64 "s", label, ms / 1000);
}
