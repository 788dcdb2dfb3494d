/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpagectl: shared declarations of the command-line tool.
 */
#ifndef RPAGECTL_H
#define RPAGECTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A streaming JSON writer: objects and arrays nest, commas and (with
 * pretty printing) indentation are placed by the writer.
 */
struct json_writer {
	FILE *out;
	bool pretty;
	int depth;
	bool need_comma;
};

void json_init(struct json_writer *jw, FILE *out, bool pretty);
void json_open_object(struct json_writer *jw, const char *key);
void json_close_object(struct json_writer *jw);
void json_open_array(struct json_writer *jw, const char *key);
void json_close_array(struct json_writer *jw);
void json_string(struct json_writer *jw, const char *key, const char *val);
void json_uint(struct json_writer *jw, const char *key, uint64_t val);
void json_null(struct json_writer *jw, const char *key);
void json_finish(struct json_writer *jw);

#endif /* RPAGECTL_H */
