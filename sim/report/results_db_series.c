/* results_db_series.c — the step_series table of results.db (results_db.h): one row per point per
 * simulated step, written from the point's step.steps.series arrays in the same transaction as the
 * point's row, and read back for simdiag (results_db_step_series). */
#define _GNU_SOURCE /* struct hsearch_data in results_db_internal.h */
#include "sim/report/results_db_internal.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The series arrays (step_sim.h) and the step_series column each one fills, in table order after
 * (point_id, step). */
typedef struct {
    const char *key;        /* under step.steps.series */
    const char *sql_type;
} series_column;

static const series_column SERIES[] = {
    {"step_time_s", "REAL NOT NULL"},
    {"timed_out", "INTEGER"},
    {"max_expert_share", "REAL"},
    {"max_expert", "INTEGER"},
    {"rank_load_max_mean", "REAL"},
    {"busiest_ep_rank", "INTEGER"},
    {"hot_share", "REAL"},
    {"max_collective_wait_s", "REAL"},
};
enum { N_SERIES = sizeof SERIES / sizeof SERIES[0] };

/* The DDL, also run on an older database opened for writing (IF NOT EXISTS). The primary key is the
 * (point_id, step) index: a point's series in step order, and the rows a replaced point drops. */
static char *series_ddl(void) {
    char *sql = moe_xmalloc(1024);
    size_t n = (size_t)snprintf(sql, 1024, "CREATE TABLE IF NOT EXISTS step_series(point_id INTEGER NOT NULL, "
                                           "step INTEGER NOT NULL");
    for (int i = 0; i < N_SERIES; i++) n += (size_t)snprintf(sql + n, 1024 - n, ", %s %s", SERIES[i].key, SERIES[i].sql_type);
    snprintf(sql + n, 1024 - n, ", PRIMARY KEY(point_id, step)) WITHOUT ROWID;");
    return sql;
}

int db_series_create(results_db *db, moe_error *err) {
    char *ddl = series_ddl();
    int rc = db_exec(db, ddl, err);
    free(ddl);
    if (rc) return rc;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT EXISTS(SELECT 1 FROM step_series)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        db->series_rows = sqlite3_column_int(st, 0);
    else
        db->series_rows = 1;   /* unknown: replace rows as if there were some */
    sqlite3_finalize(st);
    char v[64];
    snprintf(v, sizeof v, "PRAGMA user_version = %d;", RESULTS_DB_SCHEMA_VERSION);
    return db_exec(db, v, err);
}

static int prepare(results_db *db, moe_error *err) {
    if (db->series_ins) return 0;
    char sql[512];
    size_t n = (size_t)snprintf(sql, sizeof sql, "INSERT INTO step_series(point_id, step");
    for (int i = 0; i < N_SERIES; i++) n += (size_t)snprintf(sql + n, sizeof sql - n, ", %s", SERIES[i].key);
    n += (size_t)snprintf(sql + n, sizeof sql - n, ") VALUES(?, ?");
    for (int i = 0; i < N_SERIES; i++) n += (size_t)snprintf(sql + n, sizeof sql - n, ", ?");
    snprintf(sql + n, sizeof sql - n, ")");
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &db->series_ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->h, "DELETE FROM step_series WHERE point_id = ?", -1, &db->series_del, NULL);
    return rc == SQLITE_OK ? 0 : db_fail(db, rc, "prepare the step series", err);
}

/* The loaded value of column step.steps.series.KEY parsed as an array (NULL: absent or not one). */
static cJSON *series_array(results_db *db, const char *key) {
    char name[128];
    snprintf(name, sizeof name, "step.steps.series.%s", key);
    int ci = db_find_column(db, name);
    if (ci < 0 || !db->vals[ci].set || db->vals[ci].kind != KIND_JSON) return NULL;
    cJSON *a = cJSON_ParseWithLength(db->vals[ci].text, (size_t)db->vals[ci].text_len);
    if (!cJSON_IsArray(a)) { cJSON_Delete(a); return NULL; }
    return a;
}

int db_series_store(results_db *db, long id, moe_error *err) {
    /* most sweeps have no steps: nothing to remove, nothing to write (a point costs one lookup) */
    cJSON *col[N_SERIES] = {series_array(db, SERIES[0].key)};
    if (!col[0] && !db->series_rows) return 0;
    if (prepare(db, err)) { cJSON_Delete(col[0]); return err->code; }
    int rc = SQLITE_DONE;
    if (db->series_rows) {
        sqlite3_bind_int64(db->series_del, 1, id);
        rc = sqlite3_step(db->series_del);
        sqlite3_reset(db->series_del);
    }
    if (rc != SQLITE_DONE) { cJSON_Delete(col[0]); return db_fail(db, rc, "store a point's step series", err); }
    for (int i = 1; i < N_SERIES; i++) col[i] = col[0] ? series_array(db, SERIES[i].key) : NULL;
    if (col[0]) db->series_rows = 1;
    const cJSON *cell[N_SERIES];
    for (int i = 0; i < N_SERIES; i++) cell[i] = col[i] ? col[i]->child : NULL;
    /* one row per step of the step-time series; a shorter array (none today) leaves NULLs */
    for (int t = 0; cell[0] && rc == SQLITE_DONE; t++) {
        sqlite3_stmt *st = db->series_ins;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int(st, 2, t);
        for (int i = 0; i < N_SERIES; i++) {
            const cJSON *c = cell[i];
            if (!c) sqlite3_bind_null(st, 3 + i);
            else if (cJSON_IsBool(c)) sqlite3_bind_int(st, 3 + i, cJSON_IsTrue(c));
            else if (cJSON_IsNumber(c) && strstr(SERIES[i].sql_type, "INTEGER")) sqlite3_bind_int64(st, 3 + i, (sqlite3_int64)c->valuedouble);
            else if (cJSON_IsNumber(c)) sqlite3_bind_double(st, 3 + i, c->valuedouble);
            else sqlite3_bind_null(st, 3 + i);
            cell[i] = c ? c->next : NULL;
        }
        rc = sqlite3_step(st);
        sqlite3_reset(st);
    }
    for (int i = 0; i < N_SERIES; i++) cJSON_Delete(col[i]);
    return rc == SQLITE_DONE ? 0 : db_fail(db, rc, "store a point's step series", err);
}

void db_series_finalize(results_db *db) {
    sqlite3_finalize(db->series_ins);
    sqlite3_finalize(db->series_del);
    db->series_ins = db->series_del = NULL;
}

/* ---- reading ------------------------------------------------------------------------------------- */

void results_step_series_free(results_step_series *s) {
    free(s->step_time_s); free(s->timed_out); free(s->max_expert_share); free(s->max_expert);
    free(s->rank_load_max_mean); free(s->busiest_ep_rank); free(s->hot_share); free(s->max_collective_wait_s);
    memset(s, 0, sizeof *s);
}

/* The point's step.steps.KEY column as a number (NAN when absent or not a number). */
static double point_stat(results_db *db, long point_id, const char *key) {
    char name[128];
    snprintf(name, sizeof name, "step.steps.%s", key);
    if (db_find_column(db, name) < 0) return NAN;
    char *q = db_quote_ident(name), sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM points WHERE id = ?", q);
    free(q);
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, point_id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

static int as_int(double v) { return v == v ? (int)v : -1; }

int results_db_step_series(results_db *db, long point_id, results_step_series *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'step_series'",
                                -1, &st, NULL);
    int have = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    if (!have)
        return moe_error_set(err, EXIT_BADINPUT, "%s: no step_series table (a results.db of schema before %d, written by an "
                             "older moesim): rerun the scenario to a new --out", db->path, RESULTS_DB_SCHEMA_VERSION);
    rc = sqlite3_prepare_v2(db->h, "SELECT step, step_time_s, timed_out, max_expert_share, max_expert, rank_load_max_mean, "
                                   "busiest_ep_rank, hot_share, max_collective_wait_s FROM step_series "
                                   "WHERE point_id = ? ORDER BY step", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "read the step series", err);
    sqlite3_bind_int64(st, 1, point_id);
    int cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            out->step_time_s = moe_xrealloc(out->step_time_s, (size_t)cap * sizeof(double), 1);
            out->timed_out = moe_xrealloc(out->timed_out, (size_t)cap * sizeof(int), 1);
            out->max_expert_share = moe_xrealloc(out->max_expert_share, (size_t)cap * sizeof(double), 1);
            out->max_expert = moe_xrealloc(out->max_expert, (size_t)cap * sizeof(int), 1);
            out->rank_load_max_mean = moe_xrealloc(out->rank_load_max_mean, (size_t)cap * sizeof(double), 1);
            out->busiest_ep_rank = moe_xrealloc(out->busiest_ep_rank, (size_t)cap * sizeof(int), 1);
            out->hot_share = moe_xrealloc(out->hot_share, (size_t)cap * sizeof(double), 1);
            out->max_collective_wait_s = moe_xrealloc(out->max_collective_wait_s, (size_t)cap * sizeof(double), 1);
        }
        int t = out->n;
        if (sqlite3_column_int(st, 0) != t) {   /* the primary key orders them; a gap is a damaged table */
            sqlite3_finalize(st);
            results_step_series_free(out);
            return moe_error_set(err, EXIT_BADINPUT, "%s: step_series of point %ld skips step %d", db->path, point_id, t);
        }
        out->step_time_s[t] = sqlite3_column_double(st, 1);
        out->timed_out[t] = sqlite3_column_int(st, 2);
        out->max_expert_share[t] = sqlite3_column_double(st, 3);
        out->max_expert[t] = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 4);
        out->rank_load_max_mean[t] = sqlite3_column_double(st, 5);
        out->busiest_ep_rank[t] = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 6);
        out->hot_share[t] = sqlite3_column_double(st, 7);
        out->max_collective_wait_s[t] = sqlite3_column_double(st, 8);
        out->n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        results_step_series_free(out);
        return db_fail(db, rc, "read the step series", err);
    }
    out->p50_s = point_stat(db, point_id, "step_time_s_p50");
    out->p95_s = point_stat(db, point_id, "step_time_s_p95");
    out->p99_s = point_stat(db, point_id, "step_time_s_p99");
    out->max_s = point_stat(db, point_id, "step_time_s_max");
    out->slow_above_s = point_stat(db, point_id, "slow_above_s");
    out->slow_steps = as_int(point_stat(db, point_id, "slow_steps"));
    out->slow_run_steps = as_int(point_stat(db, point_id, "slow_run_steps"));
    out->slow_run_first = as_int(point_stat(db, point_id, "slow_run_first_step"));
    return 0;
}

long *results_db_series_points(results_db *db, int *n, moe_error *err) {
    *n = 0;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT DISTINCT point_id FROM step_series ORDER BY point_id", -1, &st, NULL);
    if (rc != SQLITE_OK) { db_fail(db, rc, "read the step series", err); return NULL; }
    long *ids = NULL;
    int cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) ids = moe_xrealloc(ids, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *ids, 1);
        ids[(*n)++] = (long)sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) { free(ids); *n = 0; db_fail(db, rc, "read the step series", err); return NULL; }
    return ids;
}
