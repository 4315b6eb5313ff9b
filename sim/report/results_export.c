/* results_export.c — results.csv and results.json from results.db, and results documents in memory
 * for the table and the plots (results_export.h). Every export streams row by row: memory does not grow
 * with the number of points. */
#define _GNU_SOURCE /* qsort_r */
#include "sim/report/results_export.h"
#include "sim/report/results_db_internal.h"
#include "sim/base/alloc.h"
#include "sim/base/text_buf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/fileio.h"

/* The value of column c in result column `col` as JSON. */
static cJSON *column_json(const db_column *c, sqlite3_stmt *st, int col) {
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL) return NULL;
    switch (c->kind) {
    case KIND_NUMBER: return cJSON_CreateNumber(sqlite3_column_double(st, col));
    case KIND_BOOL: return cJSON_CreateBool(sqlite3_column_int(st, col) != 0);
    case KIND_STRING: return cJSON_CreateString((const char *)sqlite3_column_text(st, col));
    case KIND_JSON:
    default: {
        if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) return cJSON_CreateNumber(sqlite3_column_double(st, col));
        const char *t = (const char *)sqlite3_column_text(st, col);
        cJSON *v = cJSON_Parse(t);
        return v ? v : cJSON_CreateString(t);
    }
    }
}

/* Put v at its path (components separated by RECORD_PATH_SEP) under root. */
static void put_at(cJSON *root, const char *path, cJSON *v) {
    cJSON *cur = root;
    const char *s = path;
    char key[1024];
    for (const char *sep; (sep = strchr(s, RECORD_PATH_SEP)); s = sep + 1) {
        size_t n = (size_t)(sep - s) < sizeof key - 1 ? (size_t)(sep - s) : sizeof key - 1;
        memcpy(key, s, n);
        key[n] = '\0';
        cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, key);
        if (!cJSON_IsObject(next)) next = cJSON_AddObjectToObject(cur, key);
        cur = next;
    }
    cJSON_AddItemToObject(cur, s, v);
}

cJSON *db_row_point(const results_db *db, sqlite3_stmt *st, const int *order, int with_scenario) {
    cJSON *pt = cJSON_CreateObject();
    cJSON_AddNumberToObject(pt, "id", (double)sqlite3_column_int64(st, 0));
    cJSON_AddStringToObject(pt, "status", (const char *)sqlite3_column_text(st, 1));
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        cJSON_AddStringToObject(pt, "reason", (const char *)sqlite3_column_text(st, 2));
    cJSON *scenario = NULL;
    if (with_scenario && sqlite3_column_type(st, 3) != SQLITE_NULL)
        scenario = cJSON_Parse((const char *)sqlite3_column_text(st, 3));
    for (int k = 0; k < db->n_cols; k++) {
        const db_column *c = &db->cols[order[k]];
        /* the scenario goes where results.json always had it: after the sweep values */
        if (scenario && strncmp(c->path, "sweep\x1f", 6) != 0 && strcmp(c->path, "sweep") != 0) {
            cJSON_AddItemToObject(pt, "scenario", scenario);
            scenario = NULL;
        }
        cJSON *v = column_json(c, st, 4 + k);
        if (v) put_at(pt, c->path, v);
    }
    if (scenario) cJSON_AddItemToObject(pt, "scenario", scenario);
    return pt;
}

/* ---- CSV ----------------------------------------------------------------------------------------- */

static void tb_cell(text_buf *t, const char *s, size_t n) {
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++) quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == ';';
    if (!quote) { text_put(t, s, n); return; }
    text_put(t, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') text_put(t, "\"", 1);
        text_put(t, s + i, 1);
    }
    text_put(t, "\"", 1);
}

/* A JSON column's cell: arrays of scalars joined with ';' (strings without their quotes), anything
 * else as its JSON text. */
static void tb_json_cell(text_buf *t, const char *json) {
    if (strcmp(json, "[]") == 0 || strcmp(json, "{}") == 0) return;
    cJSON *v = cJSON_Parse(json);
    if (cJSON_IsString(v)) {   /* a string among values of other kinds: the string itself */
        tb_cell(t, v->valuestring, strlen(v->valuestring));
        cJSON_Delete(v);
        return;
    }
    int scalars = cJSON_IsArray(v);
    for (const cJSON *e = scalars ? v->child : NULL; e; e = e->next) scalars &= !cJSON_IsArray(e) && !cJSON_IsObject(e);
    if (!scalars) {
        tb_cell(t, json, strlen(json));
        cJSON_Delete(v);
        return;
    }
    text_buf j = {0};
    for (const cJSON *e = v->child; e; e = e->next) {
        if (e != v->child) text_put(&j, ";", 1);
        char *p = cJSON_IsString(e) ? moe_xstrdup(e->valuestring) : cJSON_PrintUnformatted(e);
        text_put(&j, p, strlen(p));
        free(p);
    }
    tb_cell(t, j.s ? j.s : "", j.n);
    free(j.s);
    cJSON_Delete(v);
}

static void tb_value(text_buf *t, const db_column *c, sqlite3_stmt *st, int col) {
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL) return;
    char num[64];
    if (c->kind == KIND_NUMBER || (c->kind == KIND_JSON && (type == SQLITE_INTEGER || type == SQLITE_FLOAT))) {
        int n = db_format_number(sqlite3_column_double(st, col), num, sizeof num);
        text_put(t, num, (size_t)n);
    } else if (c->kind == KIND_BOOL) {
        if (sqlite3_column_int(st, col)) text_put(t, "true", 4);
        else text_put(t, "false", 5);
    } else if (c->kind == KIND_STRING) {
        tb_cell(t, (const char *)sqlite3_column_text(st, col), (size_t)sqlite3_column_bytes(st, col));
    } else {
        tb_json_cell(t, (const char *)sqlite3_column_text(st, col));
    }
}

static int write_out(FILE *f, text_buf *t, results_db *db, moe_error *err) {
    if (t->n && fwrite(t->s, 1, t->n, f) != t->n)
        return moe_error_set(err, EXIT_RUNTIME, "%s: writing an export: %s", db->path, strerror(errno));
    t->n = 0;
    return 0;
}

static void csv_header(const results_db *db, const int *order, text_buf *t) {
    text_put(t, "id,status,reason", 16);
    for (int k = 0; k < db->n_cols; k++) {
        text_put(t, ",", 1);
        const char *name = db->cols[order[k]].name;
        tb_cell(t, name, strlen(name));
    }
    text_put(t, "\n", 1);
}

/* The rows of points lo <= id < hi, in id order. */
static int csv_rows(results_db *db, const int *order, long lo, long hi, FILE *f, text_buf *t, moe_error *err) {
    char tail[100];
    snprintf(tail, sizeof tail, "WHERE id >= %ld AND id < %ld ORDER BY id", lo, hi);
    char *sql = db_select_sql(db, order, 0, tail);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) return db_fail(db, rc, "export", err);
    int bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        char num[32];
        int n = snprintf(num, sizeof num, "%lld,", (long long)sqlite3_column_int64(st, 0));
        text_put(t, num, (size_t)n);
        const char *status = (const char *)sqlite3_column_text(st, 1);
        text_put(t, status, strlen(status));
        text_put(t, ",", 1);
        if (sqlite3_column_type(st, 2) != SQLITE_NULL)
            tb_cell(t, (const char *)sqlite3_column_text(st, 2), (size_t)sqlite3_column_bytes(st, 2));
        for (int k = 0; k < db->n_cols; k++) {
            text_put(t, ",", 1);
            tb_value(t, &db->cols[order[k]], st, 4 + k);
        }
        text_put(t, "\n", 1);
        if (t->n > (1 << 20)) bad = write_out(f, t, db, err);
    }
    if (!bad && rc != SQLITE_ROW && rc != SQLITE_DONE) bad = db_fail(db, rc, "export", err);
    if (!bad) bad = write_out(f, t, db, err);
    sqlite3_finalize(st);
    return bad;
}

int results_db_write_csv(results_db *db, FILE *f, moe_error *err) {
    int *order = db_column_order(db);
    text_buf t = {0};
    csv_header(db, order, &t);
    int rc = csv_rows(db, order, LONG_MIN, LONG_MAX, f, &t, err);
    free(order);
    free(t.s);
    return rc;
}

/* The CSV of a large database, its id range split over `jobs` processes: each reads through its own
 * connection (one opened before fork() must not be used after it, so the parent's is closed
 * meanwhile) and writes its rows to a part file, which the parent appends in order. Formatting
 * numbers is most of an export's time, and it parallelizes perfectly. */
static int write_csv_parallel(results_db *db, FILE *f, const char *dir, int jobs, moe_error *err) {
    long lo = 0, hi = 0, n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT min(id), max(id) + 1, count(*) FROM points", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        lo = (long)sqlite3_column_int64(st, 0);
        hi = (long)sqlite3_column_int64(st, 1);
        n = (long)sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (jobs <= 1 || n < 10000) return results_db_write_csv(db, f, err);
    int *order = db_column_order(db);
    text_buf t = {0};
    csv_header(db, order, &t);
    int rc = write_out(f, &t, db, err);
    sqlite3_finalize(db->ins);
    sqlite3_finalize(db->get);
    db->ins = db->get = NULL;
    sqlite3_close(db->h);
    db->h = NULL;
    pid_t *pids = moe_xcalloc((size_t)jobs, sizeof *pids);
    char part[4400];
    fflush(f);
    for (int k = 0; k < jobs && !rc; k++) {
        long a = lo + (hi - lo) * k / jobs, b = lo + (hi - lo) * (k + 1) / jobs;
        snprintf(part, sizeof part, "%s/.results.csv.part-%d", dir, k);
        pids[k] = fork();
        if (pids[k] < 0) {
            rc = moe_error_set(err, EXIT_RUNTIME, "fork failed: %s", strerror(errno));
            break;
        }
        if (pids[k] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            moe_error e = {0};
            FILE *pf = fopen(part, "w");
            text_buf pt = {0};
            int bad = !pf || db_connect(db, SQLITE_OPEN_READWRITE, &e) || csv_rows(db, order, a, b, pf, &pt, &e);
            if (pf && fclose(pf) != 0) bad = 1;
            _exit(bad ? EXIT_RUNTIME : 0);
        }
    }
    for (int k = 0; k < jobs; k++) {
        int status = 0;
        if (pids[k] > 0) {
            while (waitpid(pids[k], &status, 0) < 0 && errno == EINTR) {}
            if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                rc = moe_error_set(err, EXIT_RUNTIME, "%s/results.csv: an export process failed (a full disk?)", dir);
        }
    }
    for (int k = 0; k < jobs; k++) {
        snprintf(part, sizeof part, "%s/.results.csv.part-%d", dir, k);
        FILE *pf = rc ? NULL : fopen(part, "r");
        char buf[1 << 16];
        for (size_t got; pf && !rc && (got = fread(buf, 1, sizeof buf, pf)) > 0;)
            if (fwrite(buf, 1, got, f) != got) rc = moe_error_set(err, EXIT_RUNTIME, "%s/results.csv: %s", dir, strerror(errno));
        if (pf) fclose(pf);
        unlink(part);
    }
    free(pids);
    free(order);
    free(t.s);
    moe_error e = {0};
    if (db_connect(db, SQLITE_OPEN_READWRITE, &e) && !rc) {
        *err = e;
        rc = e.code;
    }
    return rc;
}

/* ---- JSON ---------------------------------------------------------------------------------------- */

static char *stored_version(results_db *db) {
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT version FROM run", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = moe_xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v ? v : moe_xstrdup("");
}

/* The document's head and tail as cJSON_Print writes them around the points array's items. */
static void json_frame(results_db *db, char **head, char **tail) {
    char *version = stored_version(db);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", "moesim-results/1");
    cJSON_AddStringToObject(doc, "version", version);
    cJSON_AddArrayToObject(doc, "points");
    char *text = cJSON_Print(doc);   /* ... "points":\t[]\n} */
    char *brackets = strstr(text, "[]");
    *tail = moe_xstrdup(brackets + 1);
    brackets[1] = '\0';
    *head = text;
    cJSON_Delete(doc);
    free(version);
}

int results_db_write_json(results_db *db, FILE *f, moe_error *err) {
    int *order = db_column_order(db);
    char *sql = db_select_sql(db, order, 1, "ORDER BY id"), *head, *tail;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        free(order);
        return db_fail(db, rc, "export", err);
    }
    json_frame(db, &head, &tail);
    text_buf t = {0};
    text_put(&t, head, strlen(head));
    int bad = 0, first = 1;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *pt = db_row_point(db, st, order, 1);
        char *p = cJSON_Print(pt);
        cJSON_Delete(pt);
        if (!first) text_put(&t, ", ", 2);
        first = 0;
        /* an item of the points array is one level deeper than a document of its own */
        for (const char *s = p; *s; s++) {
            text_put(&t, s, 1);
            if (*s == '\n') text_put(&t, "\t\t", 2);
        }
        free(p);
        if (t.n > (1 << 20)) bad = write_out(f, &t, db, err);
    }
    if (!bad && rc != SQLITE_ROW && rc != SQLITE_DONE) bad = db_fail(db, rc, "export", err);
    text_put(&t, tail, strlen(tail));
    text_put(&t, "\n", 1);
    if (!bad) bad = write_out(f, &t, db, err);
    sqlite3_finalize(st);
    free(order);
    free(head);
    free(tail);
    free(t.s);
    return bad;
}

cJSON *results_db_document(results_db *db, const char *where_order, long limit, moe_error *err) {
    int *order = db_column_order(db);
    char tail[1200];
    snprintf(tail, sizeof tail, "%s LIMIT %ld", where_order ? where_order : "ORDER BY id", limit > 0 ? limit : -1L);
    char *sql = db_select_sql(db, order, 1, tail);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        free(order);
        db_fail(db, rc, "read", err);
        return NULL;
    }
    char *version = stored_version(db);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", "moesim-results/1");
    cJSON_AddStringToObject(doc, "version", version);
    free(version);
    cJSON *pts = cJSON_AddArrayToObject(doc, "points");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) cJSON_AddItemToArray(pts, db_row_point(db, st, order, 1));
    sqlite3_finalize(st);
    free(order);
    if (rc != SQLITE_DONE) {
        cJSON_Delete(doc);
        db_fail(db, rc, "read", err);
        return NULL;
    }
    return doc;
}

const char *results_db_column_sql(results_db *db, const char *name) {
    static char buf[1200];
    for (int i = 0; i < db->n_cols; i++)
        if (strcmp(db->cols[i].name, name) == 0) {
            char *q = db_quote_ident(name);
            snprintf(buf, sizeof buf, "%s", q);
            free(q);
            return buf;
        }
    return NULL;
}

/* ---- the files ----------------------------------------------------------------------------------- */

typedef int (*export_fn)(results_db *db, FILE *f, moe_error *err);

/* Write one export atomically (fileio.h): on any failure `name` is left as it was. */
static int export_file(results_db *db, const char *dir, const char *name, export_fn fn, moe_error *err) {
    atomic_file af;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (atomic_file_open(&af, path, err)) return err->code;
    if (fn(db, af.f, err)) {
        atomic_file_abort(&af);
        return err->code;
    }
    return atomic_file_commit(&af, err);
}

int results_db_export(results_db *db, const char *dir, int json, int csv, int jobs, moe_error *err) {
    if (results_db_commit(db, err)) return err->code;
    if (csv) {
        atomic_file af;
        char path[4200];
        snprintf(path, sizeof path, "%s/results.csv", dir);
        if (atomic_file_open(&af, path, err)) return err->code;
        if (write_csv_parallel(db, af.f, dir, jobs, err)) {
            atomic_file_abort(&af);
            return err->code;
        }
        if (atomic_file_commit(&af, err)) return err->code;
    }
    if (json && export_file(db, dir, "results.json", results_db_write_json, err)) return err->code;
    return 0;
}
