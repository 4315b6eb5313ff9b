/* json_read.h — the one JSON reader of moesim: every JSON input (scenarios, cost models, calibration
 * traces, step traces, expert-load traces, results read back) is parsed and read through it.
 *
 * Parsing is strict RFC 8259 on top of cJSON (which builds the tree). Refused, each with an exit-2
 * error naming the file and where:
 *   - anything but one JSON value, optionally surrounded by whitespace (trailing text included);
 *   - NUL bytes, raw control characters (inside or outside strings), malformed UTF-8;
 *   - numbers outside the JSON grammar: "01", "00", "1.", ".5", "-.5", "+1", "1.e5";
 *   - numbers beyond the range of a double ("1e999": they would read as infinity);
 *   - a key twice in one object (cJSON keeps both; readers would disagree on which wins).
 * The message names the JSON path ("layout.pp", "points[3].shape.m") for the last three.
 *
 * Reading values: the getters below take a reader (file label + error), an object, the path of that
 * object ("" at the top) and a key; on a bad value they fill the error as
 *     FILE: PATH.KEY: got VALUE; expected WHAT
 * with VALUE as the file wrote it (json_shown) and return EXIT_BADINPUT. A missing key is an error
 * only with JSON_REQUIRED (else the output is left untouched and 0 returned); with JSON_NULL_OK a
 * null value counts as missing. */
#ifndef MOESIM_JSON_READ_H
#define MOESIM_JSON_READ_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "sim/base/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parse text[0, len) (no NUL needed after it; NUL bytes inside are refused). NULL with err set. */
cJSON *json_parse_strict(const char *file, const char *text, size_t len, moe_error *err);
/* Read `path` (read_file_bounded with max_bytes; 0: the default cap) and parse it strictly. */
cJSON *json_load(const char *path, size_t max_bytes, moe_error *err);

/* A value as the file wrote it, for "got ...": compact JSON on one line, truncated with "...";
 * numbers in shortest round-trip form; containers of more than 32 members as "a list of N values";
 * NULL as "nothing (missing)". */
void json_shown(const cJSON *v, char *buf, size_t cap);
/* A number as json_shown writes it ("nan", "inf", "-inf" for non-finite ones). */
void json_format_number(double d, char *buf, size_t cap);
/* Copy `text` into buf[cap], truncated with "..." and control characters shown as '?'. */
void json_truncate_into(const char *text, char *buf, size_t cap);

/* "prefix.key" (or "key" at the top) and "prefix[i]" into buf; returns buf. */
const char *json_path_key(char *buf, size_t cap, const char *prefix, const char *key);
const char *json_path_index(char *buf, size_t cap, const char *prefix, int i);

typedef struct {
    const char *file; /* the label in messages */
    moe_error *err;
} json_reader;

enum {
    JSON_REQUIRED = 1 << 0, /* a missing key is an error */
    JSON_NULL_OK = 1 << 1,  /* null reads as missing */
    JSON_LO_OPEN = 1 << 2,  /* numbers: lo itself is refused */
    JSON_HI_OPEN = 1 << 3,  /* numbers: hi itself is refused */
    JSON_NONEMPTY = 1 << 4, /* strings: "" is refused */
};

/* "FILE: PATH: got <v shown>; expected <fmt...>"; returns EXIT_BADINPUT. */
int json_bad(const json_reader *r, const char *path, const cJSON *v, const char *expected_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The member `key` of obj (NULL when obj is not an object or lacks it). */
const cJSON *json_member(const cJSON *obj, const char *key);

/* A finite number in [lo, hi] (ends open per flags; +-INFINITY for no bound). */
int json_get_number(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, double lo, double hi, double *out);
/* An integer (no fraction) in [lo, hi]. */
int json_get_int(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                 unsigned flags, long lo, long hi, int *out);
/* A string shorter than cap (non-empty with JSON_NONEMPTY), copied into dst. */
int json_get_string(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, char *dst, size_t cap);
int json_get_bool(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                  unsigned flags, int *out);
/* An object / array member: *out = the member (NULL when missing and allowed). */
int json_get_object(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                    unsigned flags, const cJSON **out);
int json_get_array(const json_reader *r, const cJSON *obj, const char *prefix, const char *key,
                   unsigned flags, const cJSON **out);

/* The same checks on a value itself (an array element, a member already found); `path` is its
 * full path. NULL v: missing (an error only with JSON_REQUIRED). */
int json_number_value(const json_reader *r, const cJSON *v, const char *path, unsigned flags, double lo,
                      double hi, double *out);
int json_int_value(const json_reader *r, const cJSON *v, const char *path, unsigned flags, long lo, long hi,
                   int *out);

/* Every key of obj is one of `allowed` (NULL-terminated); otherwise an error naming the unknown key
 * at PREFIX.KEY, the keys allowed and the closest one ("did you mean"). */
int json_check_keys(const json_reader *r, const cJSON *obj, const char *prefix, const char *const *allowed);

#ifdef __cplusplus
}
#endif

#endif
