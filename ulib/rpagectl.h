/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rpagectl: shared declarations of the command-line tool.
 */
#ifndef RPAGECTL_H
#define RPAGECTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "librpage.h"

/* The global options -j (--json) and -p (--pretty). */
extern bool opt_json, opt_pretty;

/* The objects' commands: @argv holds the words after the object's name. */
int cmd_device(int argc, char **argv);
int cmd_endpoint(int argc, char **argv);
int cmd_peer(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_map(int argc, char **argv);
int cmd_save(int argc, char **argv);
int cmd_monitor(int argc, char **argv);

/* Helpers the objects share, in rpagectl.c. */
void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...);
int __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...);
bool matches(const char *typed, const char *full);
int open_device(struct rpage_api *api);
int fail_cmd(const char *what, const char *subject, int err,
	     const char *words);
int find_command(const char *typed, const char *const *cmds);
int check_peer_name(const char *what, const char *name);
int find_named_entry(int fd, int (*list_fn)(int, struct rpage_list *),
		     size_t size, const char *name, void *entry);
/* The id of the peer called @name; -ENOENT if there is none. */
int find_peer_id(int fd, const char *name, __u32 *id);
int parse_pool_id(const char *what, const char *text, uint64_t *id);
int parse_bytes(const char *what, const char *name, const char *text,
		bool zero_ok, uint64_t *bytes);
uint64_t page_size(void);
void read_module_param(const char *name, char *buf, size_t len);

/* In rpagectl-prom.c: stat prometheus. */
int stat_prometheus(int fd);

/* In rpagectl-pool.c: the names of the peers pool @id is scoped to. */
int pool_peer_names(int fd, uint64_t id,
		    const struct rpage_peer_info *peers, int nr_peers,
		    char (*names)[RPAGE_NAME_MAX]);

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
void json_bool(struct json_writer *jw, const char *key, bool val);
void json_finish(struct json_writer *jw);

/* One field, as text (@jw NULL) or JSON: see rpagectl-json.c. */
void print_str(struct json_writer *jw, const char *key, const char *label,
	       const char *val);
void print_u64(struct json_writer *jw, const char *key, const char *label,
	       uint64_t val);
void print_ms(struct json_writer *jw, const char *key, const char *label,
	      uint64_t ms);
void print_str_opt(struct json_writer *jw, const char *key, const char *label,
		   const char *val, const char *absent);
void print_u64_opt(struct json_writer *jw, const char *key, const char *label,
		   bool present, uint64_t val, const char *absent);
void print_bool(struct json_writer *jw, const char *key, const char *label,
		bool val, const char *yes, const char *no);
void print_list(struct json_writer *jw, const char *key, const char *label,
		const char *const *items, size_t count, const char *empty);

#endif /* RPAGECTL_H */
