/* results_record.h — one evaluated sweep point as a flat record: what a worker process sends to the
 * parent, and what the parent stores as one row of results.db (results_db.h).
 *
 * A point object {"id", "sweep", "calibration", "plan", "step", "run"} (SCENARIO.md "Results", the
 * resolved scenario left out: it travels as a patch) is flattened into entries, one per leaf: a
 * number, a bool, a string, or a JSON value (arrays and anything else that is not a scalar). Objects
 * nest: plan.memory_GiB.total is the entry ("plan", "memory_GiB", "total"). Entries keep the point's
 * key order, which fixes the column order of the exports.
 *
 * Layout (native byte order: records never leave the machine that wrote them):
 *   u8 status ('o' ok, 'i' infeasible, 'e' error) | u32 n + reason | u32 n + scenario patch (JSON)
 *   | u16 entries | per entry: u16 n + path (components joined by RECORD_PATH_SEP) | u8 kind | value
 *   value: number f64 | bool u8 | string / json u32 n + bytes. */
#ifndef MOESIM_RESULTS_RECORD_H
#define MOESIM_RESULTS_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* Separates the components of an entry's path: JSON keys may hold dots (sweep keys do), not 0x1f. */
#define RECORD_PATH_SEP '\x1f'

/* An error is stored as status 'error' either way; RECORD_ERROR_INPUT says that the point failed on bad
 * input (a file it names, a value out of range: exit 2 at the end of the run), RECORD_ERROR at run
 * time (exit 1). */
typedef enum { RECORD_OK = 'o', RECORD_INFEASIBLE = 'i', RECORD_ERROR = 'e', RECORD_ERROR_INPUT = 'E' } record_status;
typedef enum { KIND_NUMBER = 'n', KIND_BOOL = 'b', KIND_STRING = 's', KIND_JSON = 'j' } record_kind;

/* A growing byte buffer. */
typedef struct {
    char *data;
    size_t len, cap;
} record_buf;

void record_buf_put(record_buf *b, const void *bytes, size_t n);
void record_buf_free(record_buf *b);

/* Append one record. `point` may be NULL (an infeasible or failed point without results); its "id"
 * and "scenario" members are not stored (the id travels beside the record). `reason` and
 * `scenario_patch` may be NULL. */
void record_encode(record_buf *out, record_status status, const char *reason, const char *scenario_patch,
                   const struct cJSON *point);

/* Reading a record back, entry by entry. Strings point into the record (not NUL-terminated). */
typedef struct {
    const char *path;   /* components joined by RECORD_PATH_SEP */
    uint16_t path_len;
    record_kind kind;
    double number;      /* KIND_NUMBER; KIND_BOOL: 0 or 1 */
    const char *text;   /* KIND_STRING, KIND_JSON */
    uint32_t text_len;
} record_entry;

typedef struct {
    record_status status;
    const char *reason, *patch;   /* NULL when absent */
    uint32_t reason_len, patch_len;
    int n_entries;
    /* private */
    const char *p, *end;
    int next;
} record_reader;

/* 0 on success, -1 when the bytes are not a whole record. */
int record_open(record_reader *r, const void *rec, size_t len);
/* The next entry: 1, or 0 at the end, -1 on a malformed record. */
int record_next(record_reader *r, record_entry *e);

/* The scalar of a JSON value as an entry (strings and numbers and bools; anything else KIND_JSON with
 * its unformatted text in *json_text, caller frees). */
record_kind record_kind_of(const struct cJSON *v);

#endif
