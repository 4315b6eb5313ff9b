/* results_db_internal.h — what the store (results_db.c), its exports (results_export.c) and merge
 * (results_merge.c) share; not part of the contract (results_db.h). */
#ifndef MOESIM_RESULTS_DB_INTERNAL_H
#define MOESIM_RESULTS_DB_INTERNAL_H

#include <stddef.h>
#include <search.h>
#include <sqlite3.h>
#include "sim/report/results_db.h"
#include "sim/report/results_record.h"

/* SQLite's default column limit (SQLITE_MAX_COLUMN) less the fixed columns. */
#define DB_MAX_COLUMNS 1990

typedef struct {
    char *name;        /* "plan.memory_GiB.total" (the SQL column name) */
    char *path;        /* components joined by RECORD_PATH_SEP */
    int path_len;
    record_kind kind;
    long first_id;     /* the smallest point id that has it ... */
    int pos;           /* ... and its index among that point's entries */
    int dirty;         /* columns row to be written at the next commit */
} db_column;

/* One value of the row being stored. */
typedef struct {
    int set;
    record_kind kind;
    double number;
    const char *text;
    int text_len;
    char *owned;       /* text converted to JSON (freed after the row) */
} db_value;

struct results_db {
    sqlite3 *h;
    char path[4400];
    char fingerprint[17];
    long n_points;
    db_column *cols;
    int n_cols, cap_cols;
    struct hsearch_data names;   /* column name -> index + 1 */
    int *entry_col;              /* entry position -> column of the previous record (a fast path) */
    int n_entry_col;
    db_value *vals;
    sqlite3_stmt *ins;           /* INSERT OR REPLACE over the first ins_cols columns */
    int ins_cols;
    sqlite3_stmt *get;           /* SELECT of one point, for merge */
    sqlite3_stmt *series_ins, *series_del;   /* step_series rows (results_db_series.c) */
    int series_rows;             /* step_series may hold rows (an existing table with some, or written since) */
    int get_cols;
    int in_txn;
    long pending;
    double txn_t0;
    double commit_every_s;   /* a batch is committed after this long (DB_BATCH_S unless set) */
};

/* The column named `name` (its index), or -1. */
int db_find_column(results_db *db, const char *name);
/* The step_series table (IF NOT EXISTS) and user_version RESULTS_DB_SCHEMA_VERSION. */
int db_series_create(results_db *db, moe_error *err);
/* Replace point `id`'s step_series rows by the step.steps.series arrays of the loaded values (none:
 * only removed), in the open transaction. */
int db_series_store(results_db *db, long id, moe_error *err);
void db_series_finalize(results_db *db);
/* Open db->path on db->h with the store's pragmas. */
int db_connect(results_db *db, int flags, moe_error *err);
/* A new database at `path` (an existing file there is replaced). */
int db_create_file(const char *path, const struct cJSON *definition, long n_points, results_db **out, moe_error *err);
/* "\"name\"" with quotes doubled, in a malloc'd string. */
char *db_quote_ident(const char *name);
/* Columns in export order (by first_id, then pos): a malloc'd array of indices. */
int *db_column_order(const results_db *db);
/* Load a record's values into db->vals (columns created or widened as needed). */
int db_load_record(results_db *db, long id, const record_reader *r, record_entry *scratch, moe_error *err);
void db_clear_values(results_db *db);
int db_exec(results_db *db, const char *sql, moe_error *err);
int db_fail(results_db *db, int rc, const char *what, moe_error *err);
/* A number as cJSON prints it (the exports and JSON columns agree with results.json). */
int db_format_number(double d, char *buf, size_t cap);
/* The point object of the current row of `st` (SELECT id, status, reason, scenario, <columns in
 * `order`>), with its resolved scenario when `with_scenario`. */
struct cJSON *db_row_point(const results_db *db, sqlite3_stmt *st, const int *order, int with_scenario);
/* "SELECT id, status, reason, <scenario>, cols... FROM points <tail>" (caller frees). */
char *db_select_sql(const results_db *db, const int *order, int with_scenario, const char *tail);

#endif
