/* results_db.c — the results database: runs, fingerprints, storing points (results_db.h). */
#define _GNU_SOURCE /* hsearch_r (column names), qsort_r, strndup */
#include "sim/report/results_db_internal.h"
#include "sim/base/alloc.h"
#include "sim/base/hash.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/fileio.h"

/* A batch is committed after this many points or this many seconds, whichever comes first: large
 * enough that a commit (an fsync of the WAL) costs nothing per point, small enough that a killed run
 * loses at most a second of work. */
#define DB_BATCH_POINTS 5000
#define DB_BATCH_S 1.0

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void results_fingerprint(const cJSON *definition, char out[17]) {
    char *text = cJSON_PrintUnformatted(definition);
    /* FNV-1a, 64 bits: an identifier for the definition, which is stored beside it and compared in
     * full; collisions would need a deliberate attempt and still be caught by that comparison. */
    uint64_t h = text ? moe_fnv1a64(MOE_FNV1A64_OFFSET, text, strlen(text)) : MOE_FNV1A64_OFFSET;
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    free(text);
}

int db_fail(results_db *db, int rc, const char *what, moe_error *err) {
    const char *msg = db && db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc);
    int full = (rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_IOERR;
    return moe_error_set(err, EXIT_RUNTIME, "%s: %s: %s%s", db ? db->path : "results.db", what, msg,
                         full ? " (the points committed before are kept: free space, then rerun with --resume)" : "");
}

int db_exec(results_db *db, const char *sql, moe_error *err) {
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : db_fail(db, rc, "write", err);
}

char *db_quote_ident(const char *name) {
    size_t n = strlen(name);
    char *q = moe_xmalloc(2 * n + 3), *o = q;
    *o++ = '"';
    for (const char *p = name; *p; p++) {
        if (*p == '"') *o++ = '"';
        *o++ = *p;
    }
    *o++ = '"';
    *o = '\0';
    return q;
}

static const char *kind_name(record_kind k) {
    return k == KIND_NUMBER ? "number" : k == KIND_BOOL ? "bool" : k == KIND_STRING ? "string" : "json";
}

static record_kind kind_parse(const char *s) {
    if (!s) return KIND_JSON;
    if (strcmp(s, "number") == 0) return KIND_NUMBER;
    if (strcmp(s, "bool") == 0) return KIND_BOOL;
    if (strcmp(s, "string") == 0) return KIND_STRING;
    return KIND_JSON;
}

const char *results_db_path(const results_db *db) { return db->path; }
const char *results_db_fingerprint(const results_db *db) { return db->fingerprint; }
long results_db_n_points(const results_db *db) { return db->n_points; }

static int create_db(results_db *db, const cJSON *definition, long n_points, moe_error *err);

/* ---- opening ------------------------------------------------------------------------------------ */

static const char SCHEMA[] =
    "CREATE TABLE run(fingerprint TEXT NOT NULL, version TEXT NOT NULL, scenario TEXT NOT NULL,"
    " sweep TEXT NOT NULL, options TEXT NOT NULL, n_points INTEGER NOT NULL, created_utc TEXT NOT NULL);"
    "CREATE TABLE points(id INTEGER PRIMARY KEY, status TEXT NOT NULL CHECK (status IN ('ok','infeasible','error')),"
    " reason TEXT, scenario_patch TEXT);"
    "CREATE TABLE columns(name TEXT PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL,"
    " first_id INTEGER NOT NULL, pos INTEGER NOT NULL);";

static int set_pragmas(results_db *db, moe_error *err) {
    /* WAL with synchronous=NORMAL: a commit is one append to the log; a killed process never loses a
     * committed batch nor corrupts the database (only a power loss could drop the last batches). */
    sqlite3_busy_timeout(db->h, 5000);
    return db_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;", err);
}

static int add_column_mem(results_db *db, const char *name, const char *path, int path_len, record_kind kind,
                          long first_id, int pos) {
    if (db->n_cols == db->cap_cols) {
        db->cap_cols = db->cap_cols ? 2 * db->cap_cols : 128;
        db->cols = moe_xrealloc(db->cols, sizeof *db->cols * (size_t)db->cap_cols, 1);
        db->vals = moe_xrealloc(db->vals, sizeof *db->vals * (size_t)db->cap_cols, 1);
    }
    db_column *c = &db->cols[db->n_cols];
    c->name = moe_xstrdup(name);
    c->path = moe_xmalloc((size_t)path_len + 1);
    memcpy(c->path, path, (size_t)path_len);
    c->path[path_len] = '\0';
    c->path_len = path_len;
    c->kind = kind;
    c->first_id = first_id;
    c->pos = pos;
    c->dirty = 0;
    memset(&db->vals[db->n_cols], 0, sizeof db->vals[0]);
    ENTRY e = {.key = c->name, .data = (void *)(intptr_t)(db->n_cols + 1)}, *found;
    hsearch_r(e, ENTER, &found, &db->names);
    return db->n_cols++;
}

int db_find_column(results_db *db, const char *name) {
    ENTRY e = {.key = (char *)name}, *found = NULL;
    if (!hsearch_r(e, FIND, &found, &db->names) || !found) return -1;
    return (int)(intptr_t)found->data - 1;
}

static int load_columns(results_db *db, moe_error *err) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT name, path, kind, first_id, pos FROM columns", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "read columns", err);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        cJSON *path = cJSON_Parse((const char *)sqlite3_column_text(st, 1));
        char joined[1024];
        size_t n = 0;
        for (const cJSON *c = path ? path->child : NULL; c && cJSON_IsString(c); c = c->next) {
            size_t l = strlen(c->valuestring);
            if (n + l + 1 >= sizeof joined) break;
            if (n) joined[n++] = RECORD_PATH_SEP;
            memcpy(joined + n, c->valuestring, l);
            n += l;
        }
        cJSON_Delete(path);
        add_column_mem(db, name, joined, (int)n, kind_parse((const char *)sqlite3_column_text(st, 2)),
                       (long)sqlite3_column_int64(st, 3), sqlite3_column_int(st, 4));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(db, rc, "read columns", err);
}

static int read_run(results_db *db, moe_error *err) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT fingerprint, n_points FROM run", -1, &st, NULL);
    if (rc != SQLITE_OK) return moe_error_set(err, EXIT_BADINPUT, "%s: not a moesim results database (%s)", db->path, sqlite3_errmsg(db->h));
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return moe_error_set(err, EXIT_BADINPUT, "%s: no run recorded; expected a moesim results database", db->path);
    }
    snprintf(db->fingerprint, sizeof db->fingerprint, "%s", (const char *)sqlite3_column_text(st, 0));
    db->n_points = (long)sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    return load_columns(db, err);
}

static results_db *db_alloc(const char *path) {
    results_db *db = moe_xcalloc(1, sizeof *db);
    snprintf(db->path, sizeof db->path, "%s", path);
    db->commit_every_s = DB_BATCH_S;
    hcreate_r(4 * DB_MAX_COLUMNS, &db->names);
    return db;
}

static void db_free(results_db *db) {
    if (!db) return;
    sqlite3_finalize(db->ins);
    sqlite3_finalize(db->get);
    db_series_finalize(db);
    if (db->h) sqlite3_close(db->h);
    for (int i = 0; i < db->n_cols; i++) {
        free(db->cols[i].name);
        free(db->cols[i].path);
    }
    db_clear_values(db);
    free(db->cols);
    free(db->vals);
    free(db->entry_col);
    hdestroy_r(&db->names);
    free(db);
}

int db_connect(results_db *db, int flags, moe_error *err) {
    int rc = sqlite3_open_v2(db->path, &db->h, flags, NULL);
    if (rc != SQLITE_OK) {
        int code = (flags & SQLITE_OPEN_CREATE) ? EXIT_RUNTIME : EXIT_BADINPUT;
        return moe_error_set(err, code, "%s: cannot open the results database: %s", db->path,
                             db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
    }
    return set_pragmas(db, err);
}

int results_db_open_existing(const char *path, int writable, results_db **out, moe_error *err) {
    *out = NULL;
    char file[4096];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(file, sizeof file, "%s/results.db", path);
    else snprintf(file, sizeof file, "%s", path);
    if (access(file, R_OK) != 0)
        return moe_error_input(err, file, NULL, NULL, "a moesim results database (results.db, or a folder holding one)");
    results_db *db = db_alloc(file);
    if (db_connect(db, writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READWRITE, err) || read_run(db, err) ||
        (writable && db_series_create(db, err))) {
        db_free(db);
        return err->code;
    }
    *out = db;
    return 0;
}

struct cJSON *results_db_definition(results_db *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT version, scenario, sweep, options FROM run", -1, &st, NULL) != SQLITE_OK)
        return NULL;
    cJSON *d = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) {
        d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "version", (const char *)sqlite3_column_text(st, 0));
        const char *names[3] = {"scenario", "sweep", "options"};
        for (int i = 0; i < 3; i++) {
            cJSON *v = cJSON_Parse((const char *)sqlite3_column_text(st, i + 1));
            cJSON_AddItemToObject(d, names[i], v ? v : cJSON_CreateNull());
        }
    }
    sqlite3_finalize(st);
    return d;
}

/* ---- comparing definitions ---------------------------------------------------------------------- */

static void short_value(const cJSON *v, char *out, size_t cap) {
    if (!v) { snprintf(out, cap, "absent"); return; }
    char *t = cJSON_PrintUnformatted(v);
    if (strlen(t) > 60) snprintf(out, cap, "%.57s...", t);
    else snprintf(out, cap, "%s", t);
    free(t);
}

/* The first path where a and b differ (depth first, a's key order); 0 when equal. */
static int first_diff(const cJSON *a, const cJSON *b, char *path, size_t cap, const cJSON **da, const cJSON **db) {
    if (a && b && cJSON_IsObject(a) && cJSON_IsObject(b)) {
        size_t n = strlen(path);
        for (const cJSON *x = a->child; x; x = x->next) {
            snprintf(path + n, cap - n, "%s%s", n ? "." : "", x->string);
            if (first_diff(x, cJSON_GetObjectItemCaseSensitive(b, x->string), path, cap, da, db)) return 1;
        }
        for (const cJSON *y = b->child; y; y = y->next) {
            if (cJSON_GetObjectItemCaseSensitive(a, y->string)) continue;
            snprintf(path + n, cap - n, "%s%s", n ? "." : "", y->string);
            *da = NULL;
            *db = y;
            return 1;
        }
        path[n] = '\0';
        return 0;
    }
    if (a && b && cJSON_IsArray(a) && cJSON_IsArray(b) && cJSON_GetArraySize(a) == cJSON_GetArraySize(b)) {
        size_t n = strlen(path);
        int i = 0;
        for (const cJSON *x = a->child, *y = b->child; x && y; x = x->next, y = y->next, i++) {
            snprintf(path + n, cap - n, "[%d]", i);
            if (first_diff(x, y, path, cap, da, db)) return 1;
        }
        path[n] = '\0';
        return 0;
    }
    if (a && b && cJSON_Compare(a, b, 1)) return 0;
    *da = a;
    *db = b;
    return 1;
}

void results_definition_diff(const cJSON *stored, const cJSON *now, char *out, size_t cap) {
    char path[512] = "";
    const cJSON *a = NULL, *b = NULL;
    if (!first_diff(stored, now, path, sizeof path, &a, &b)) {
        snprintf(out, cap, "the same definition");
        return;
    }
    char va[80], vb[80];
    short_value(a, va, sizeof va);
    short_value(b, vb, sizeof vb);
    snprintf(out, cap, "%s is %s there, %s now", path, va, vb);
}

/* ---- a run's database ---------------------------------------------------------------------------- */

static int file_exists(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void unlink_in(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

int results_remove_outputs(const char *dir, moe_error *err) {
    const char *files[] = {"results.db", "results.db-wal", "results.db-shm", "results.json", "results.csv",
                           "trace.json", NULL};
    for (const char **f = files; *f; f++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, *f);
        if (unlink(p) != 0 && errno != ENOENT)
            return moe_error_set(err, EXIT_RUNTIME, "%s: cannot remove: %s", p, strerror(errno));
    }
    /* the per-point files of earlier versions and step traces: only moesim's own names */
    const char *sub[] = {"points", "traces", NULL};
    for (const char **s = sub; *s; s++) {
        char d[4200];
        snprintf(d, sizeof d, "%s/%s", dir, *s);
        DIR *dp = opendir(d);
        if (!dp) continue;
        for (struct dirent *e; (e = readdir(dp));) {
            const char *n = e->d_name;
            size_t l = strlen(n);
            int ours = (strncmp(n, "point-", 6) == 0 && l > 5 && (strcmp(n + l - 5, ".json") == 0 || strcmp(n + l - 4, ".err") == 0)) ||
                       (strncmp(n, "trace-", 6) == 0 && l > 5 && strcmp(n + l - 5, ".json") == 0);
            if (!ours) continue;
            char p[4500];
            snprintf(p, sizeof p, "%s/%s", d, n);
            if (unlink(p) != 0 && errno != ENOENT) {
                closedir(dp);
                return moe_error_set(err, EXIT_RUNTIME, "%s: cannot remove: %s", p, strerror(errno));
            }
        }
        closedir(dp);
        rmdir(d);   /* only when nothing else is in it */
    }
    return 0;
}

int db_create_file(const char *path, const cJSON *definition, long n_points, results_db **out, moe_error *err) {
    results_db *db = db_alloc(path);
    unlink(path);
    if (create_db(db, definition, n_points, err)) {
        db_free(db);
        unlink(path);
        return err->code;
    }
    *out = db;
    return 0;
}

static int fill_new_db(results_db *db, const cJSON *definition, long n_points, moe_error *err);

/* A new database appears whole or not at all: the schema and the run row are written to PATH.new,
 * which is closed (checkpointing its log into the file) and renamed over PATH. A run killed while
 * creating it leaves no results.db that neither --resume nor a new run could open. */
static int create_db(results_db *db, const cJSON *definition, long n_points, moe_error *err) {
    char final[sizeof db->path], side[sizeof db->path + 8];
    snprintf(final, sizeof final, "%s", db->path);
    const char *ext[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        snprintf(side, sizeof side, "%s.new%s", final, ext[i]);
        unlink(side);
    }
    snprintf(db->path, sizeof db->path, "%.*s.new", (int)sizeof db->path - 5, final);
    int rc = fill_new_db(db, definition, n_points, err);
    if (db->h) sqlite3_close(db->h);
    db->h = NULL;
    snprintf(side, sizeof side, "%s", db->path);
    snprintf(db->path, sizeof db->path, "%s", final);
    if (rc) {
        unlink(side);
        return rc;
    }
    if (rename(side, final) != 0) {
        int e = errno;
        unlink(side);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot create the results database: %s", final, strerror(e));
    }
    return db_connect(db, SQLITE_OPEN_READWRITE, err);
}

static int fill_new_db(results_db *db, const cJSON *definition, long n_points, moe_error *err) {
    if (db_connect(db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err) || db_exec(db, SCHEMA, err) ||
        db_series_create(db, err))
        return err->code;
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "INSERT INTO run VALUES(?,?,?,?,?,?,strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "create", err);
    results_fingerprint(definition, db->fingerprint);
    db->n_points = n_points;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(definition, "version");
    char *parts[3];
    const char *names[3] = {"scenario", "sweep", "options"};
    for (int i = 0; i < 3; i++) parts[i] = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(definition, names[i]));
    sqlite3_bind_text(st, 1, db->fingerprint, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, cJSON_IsString(v) ? v->valuestring : "", -1, SQLITE_TRANSIENT);
    for (int i = 0; i < 3; i++) sqlite3_bind_text(st, 3 + i, parts[i] ? parts[i] : "null", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, n_points);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    for (int i = 0; i < 3; i++) free(parts[i]);
    return rc == SQLITE_DONE ? 0 : db_fail(db, rc, "create", err);
}

int results_db_open_run(const char *dir, const cJSON *definition, long n_points, results_db_mode mode,
                        results_db **out, moe_error *err) {
    *out = NULL;
    if (make_dirs(dir, err)) return err->code;
    /* the half-written exports of a run killed while writing them */
    atomic_file_remove_dead_temps(dir, "results.json");
    atomic_file_remove_dead_temps(dir, "results.csv");
    char path[4200];
    snprintf(path, sizeof path, "%s/results.db", dir);
    int have_db = access(path, F_OK) == 0;
    if (mode == DB_FORCE) {
        if (results_remove_outputs(dir, err)) return err->code;
        have_db = 0;
    } else if (!have_db && (file_exists(dir, "points") || file_exists(dir, "results.json") ||
                            file_exists(dir, "results.csv"))) {
        return moe_error_set(err, EXIT_BADINPUT,
                             "%s: holds results without results.db (an earlier moesim version or another run); "
                             "write to a new --out, or add --force to replace them", dir);
    }
    if (have_db) {
        results_db *old;
        if (results_db_open_existing(path, 1, &old, err)) {
            if (err->code == EXIT_BADINPUT)
                snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                         "; write to a new --out, or add --force to replace it");
            return err->code;
        }
        char fp[17];
        results_fingerprint(definition, fp);
        if (strcmp(fp, old->fingerprint) != 0) {
            cJSON *stored = results_db_definition(old);
            char diff[400];
            results_definition_diff(stored, definition, diff, sizeof diff);
            cJSON_Delete(stored);
            moe_error_set(err, EXIT_BADINPUT,
                          "%s holds another run (fingerprint %s, this one %s): %s. %s", path, old->fingerprint, fp,
                          diff, mode == DB_RESUME ? "--resume continues only the same run: write to a new --out, or add "
                                                    "--force to replace it"
                                                  : "Write to a new --out, or add --force to replace it");
            db_free(old);
            return EXIT_BADINPUT;
        }
        if (mode == DB_RESUME) {
            unlink_in(dir, "results.json");
            unlink_in(dir, "results.csv");
            *out = old;
            return 0;
        }
        db_free(old);
        if (results_remove_outputs(dir, err)) return err->code;
    }
    unlink_in(dir, "results.json");
    unlink_in(dir, "results.csv");
    results_db *db = db_alloc(path);
    if (create_db(db, definition, n_points, err)) {
        db_free(db);
        unlink(path);
        return err->code;
    }
    *out = db;
    return 0;
}

/* ---- storing ---------------------------------------------------------------------------------- */

void results_db_set_commit_every(results_db *db, double seconds) {
    if (seconds >= 0) db->commit_every_s = seconds;
}

static int begin(results_db *db, moe_error *err) {
    if (db->in_txn) return 0;
    if (db_exec(db, "BEGIN", err)) return err->code;
    db->in_txn = 1;
    db->pending = 0;
    db->txn_t0 = mono_s();
    return 0;
}

int results_db_commit(results_db *db, moe_error *err) {
    if (!db->in_txn) return 0;
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_OK;
    for (int i = 0; i < db->n_cols && rc == SQLITE_OK; i++) {
        db_column *c = &db->cols[i];
        if (!c->dirty) continue;
        if (!st) rc = sqlite3_prepare_v2(db->h, "UPDATE columns SET kind=?, first_id=?, pos=? WHERE name=?", -1, &st, NULL);
        if (rc != SQLITE_OK) break;
        sqlite3_bind_text(st, 1, kind_name(c->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, c->first_id);
        sqlite3_bind_int(st, 3, c->pos);
        sqlite3_bind_text(st, 4, c->name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
        sqlite3_reset(st);
        c->dirty = 0;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int e = db_fail(db, rc, "commit", err);
        if (!sqlite3_get_autocommit(db->h)) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        db->in_txn = 0;
        return e;
    }
    db->in_txn = 0;
    return 0;
}

void db_clear_values(results_db *db) {
    for (int i = 0; i < db->n_cols; i++) {
        free(db->vals[i].owned);
        db->vals[i] = (db_value){0};
    }
}

/* The JSON text of a value (for a json-kind column); set in v->owned when converted. */
static void to_json_value(db_value *v) {
    if (v->kind == KIND_JSON) return;
    char *t;
    if (v->kind == KIND_NUMBER) {
        char buf[64];
        db_format_number(v->number, buf, sizeof buf);
        t = moe_xstrdup(buf);
    } else if (v->kind == KIND_BOOL) {
        t = moe_xstrdup(v->number != 0 ? "true" : "false");
    } else {
        char *s = moe_xmalloc((size_t)v->text_len + 1);
        memcpy(s, v->text, (size_t)v->text_len);
        s[v->text_len] = '\0';
        cJSON *js = cJSON_CreateString(s);
        t = cJSON_PrintUnformatted(js);
        cJSON_Delete(js);
        free(s);
    }
    free(v->owned);
    v->owned = t;
    v->text = t;
    v->text_len = (int)strlen(t);
    v->kind = KIND_JSON;
}

/* A column whose values are of more than one kind holds JSON text from then on. */
static int widen_to_json(results_db *db, int ci, moe_error *err) {
    db_column *c = &db->cols[ci];
    char *q = db_quote_ident(c->name), sql[8600];
    if (c->kind == KIND_BOOL)
        snprintf(sql, sizeof sql, "UPDATE points SET %s = CASE %s WHEN 1 THEN 'true' ELSE 'false' END WHERE %s IS NOT NULL", q, q, q);
    else if (c->kind == KIND_STRING)
        snprintf(sql, sizeof sql, "UPDATE points SET %s = json_quote(%s) WHERE %s IS NOT NULL", q, q, q);
    else
        sql[0] = '\0';   /* numbers read back as numbers from a json column */
    free(q);
    if (sql[0] && db_exec(db, sql, err)) return err->code;
    c->kind = KIND_JSON;
    c->dirty = 1;
    if (db->vals[ci].set) to_json_value(&db->vals[ci]);
    return 0;
}

static int create_column(results_db *db, const char *name, const record_entry *e, long id, int pos, moe_error *err) {
    if (db->n_cols >= DB_MAX_COLUMNS)
        return moe_error_set(err, EXIT_RUNTIME, "%s: point %ld: more than %d results keys", db->path, id, DB_MAX_COLUMNS);
    char *q = db_quote_ident(name), sql[4400];
    /* NUMERIC: integral values are stored and shown as integers (layout.tp 4, not 4.0), the others as
     * REAL; both read back as the same double */
    const char *type = e->kind == KIND_NUMBER ? "NUMERIC" : e->kind == KIND_BOOL ? "INTEGER" : "TEXT";
    snprintf(sql, sizeof sql, "ALTER TABLE points ADD COLUMN %s %s", q, type);
    free(q);
    if (db_exec(db, sql, err)) return -1;
    /* the path as a JSON array of keys, for readers of the columns table */
    cJSON *arr = cJSON_CreateArray();
    const char *s = e->path, *end = e->path + e->path_len;
    while (s <= end) {
        const char *sep = memchr(s, RECORD_PATH_SEP, (size_t)(end - s));
        if (!sep) sep = end;
        char *k = strndup(s, (size_t)(sep - s));
        cJSON_AddItemToArray(arr, cJSON_CreateString(k));
        free(k);
        s = sep + 1;
    }
    char *pj = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "INSERT INTO columns VALUES(?,?,?,?,?)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, pj, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, kind_name(e->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, id);
        sqlite3_bind_int(st, 5, pos);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    free(pj);
    if (rc != SQLITE_DONE) return db_fail(db, rc, "add a column", err), -1;
    /* the schema changed: statements are prepared again over the new column set */
    sqlite3_finalize(db->ins);
    sqlite3_finalize(db->get);
    db->ins = db->get = NULL;
    return add_column_mem(db, name, e->path, e->path_len, e->kind, id, pos);
}

int db_load_record(results_db *db, long id, const record_reader *rr, record_entry *e, moe_error *err) {
    record_reader r = *rr;
    db_clear_values(db);
    if (db->n_entry_col < r.n_entries) {
        db->entry_col = moe_xrealloc(db->entry_col, sizeof(int) * (size_t)r.n_entries, 1);
        for (int i = db->n_entry_col; i < r.n_entries; i++) db->entry_col[i] = -1;
        db->n_entry_col = r.n_entries;
    }
    int rc;
    for (int pos = 0; (rc = record_next(&r, e)) == 1; pos++) {
        /* fast path: the column this position held in the previous record */
        int ci = db->entry_col[pos];
        if (ci < 0 || ci >= db->n_cols || db->cols[ci].path_len != e->path_len ||
            memcmp(db->cols[ci].path, e->path, e->path_len) != 0) {
            char name[1100];
            memcpy(name, e->path, e->path_len);
            name[e->path_len] = '\0';
            for (char *p = name; *p; p++)
                if (*p == RECORD_PATH_SEP) *p = '.';
            ci = db_find_column(db, name);
            if (ci >= 0 && (db->cols[ci].path_len != e->path_len || memcmp(db->cols[ci].path, e->path, e->path_len)))
                return moe_error_set(err, EXIT_RUNTIME, "point %ld: two results keys are both named %s", id, name);
            if (ci < 0 && (ci = create_column(db, name, e, id, pos, err)) < 0) return err->code;
            db->entry_col[pos] = ci;
        }
        db_column *c = &db->cols[ci];
        db_value *v = &db->vals[ci];
        *v = (db_value){.set = 1, .kind = e->kind, .number = e->number, .text = e->text, .text_len = (int)e->text_len};
        if (e->kind != c->kind) {
            if (c->kind != KIND_JSON && widen_to_json(db, ci, err)) return err->code;
            to_json_value(v);
        }
        if (id < c->first_id) {
            c->first_id = id;
            c->pos = pos;
            c->dirty = 1;
        }
    }
    return rc < 0 ? moe_error_set(err, EXIT_RUNTIME, "point %ld: a malformed record", id) : 0;
}

static int prepare_insert(results_db *db, moe_error *err) {
    if (db->ins && db->ins_cols == db->n_cols) return 0;
    sqlite3_finalize(db->ins);
    db->ins = NULL;
    size_t cap = 256 + (size_t)db->n_cols * 80, n = 0;
    char *sql = moe_xmalloc(cap);
    n += (size_t)snprintf(sql + n, cap - n, "INSERT OR REPLACE INTO points(id, status, reason, scenario_patch");
    for (int i = 0; i < db->n_cols; i++) {
        char *q = db_quote_ident(db->cols[i].name);
        if (n + strlen(q) + 8 > cap) sql = moe_xrealloc(sql, cap = 2 * cap + strlen(q), 1);
        n += (size_t)snprintf(sql + n, cap - n, ", %s", q);
        free(q);
    }
    if (n + 16 + 2 * (size_t)db->n_cols > cap) sql = moe_xrealloc(sql, cap = n + 32 + 2 * (size_t)db->n_cols, 1);
    n += (size_t)snprintf(sql + n, cap - n, ") VALUES(?,?,?,?");
    for (int i = 0; i < db->n_cols; i++) sql[n++] = ',', sql[n++] = '?';
    sql[n++] = ')';
    sql[n] = '\0';
    int rc = sqlite3_prepare_v2(db->h, sql, -1, &db->ins, NULL);
    free(sql);
    if (rc != SQLITE_OK) return db_fail(db, rc, "prepare", err);
    db->ins_cols = db->n_cols;
    return 0;
}

static const char *status_text(record_status s) {
    return s == RECORD_OK ? "ok" : s == RECORD_INFEASIBLE ? "infeasible" : "error";
}

static int bind_text_n(sqlite3_stmt *st, int i, const char *s, uint32_t n) {
    return s ? sqlite3_bind_text(st, i, s, (int)n, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

static int insert_row(results_db *db, long id, const record_reader *r, moe_error *err) {
    if (prepare_insert(db, err)) return err->code;
    sqlite3_stmt *st = db->ins;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, status_text(r->status), -1, SQLITE_STATIC);
    bind_text_n(st, 3, r->reason, r->reason_len);
    bind_text_n(st, 4, r->patch, r->patch_len);
    for (int i = 0; i < db->n_cols; i++) {
        const db_value *v = &db->vals[i];
        int k = 5 + i;
        if (!v->set) sqlite3_bind_null(st, k);
        else if (v->kind == KIND_NUMBER) sqlite3_bind_double(st, k, v->number);
        else if (v->kind == KIND_BOOL) sqlite3_bind_int(st, k, v->number != 0);
        else sqlite3_bind_text(st, k, v->text, v->text_len, SQLITE_STATIC);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return db_fail(db, rc, "store a point", err);
    return 0;
}

/* merge: the stored row of `id` against the loaded values. 1 = store the new one, 0 = keep the stored
 * one, < 0 = a conflict (err set). */
static int merge_decide(results_db *db, long id, const record_reader *r, moe_error *err) {
    if (!db->get || db->get_cols != db->n_cols) {
        sqlite3_finalize(db->get);
        db->get = NULL;
        char *sql = db_select_sql(db, NULL, 0, "WHERE id = ?");
        int rc = sqlite3_prepare_v2(db->h, sql, -1, &db->get, NULL);
        free(sql);
        if (rc != SQLITE_OK) return db_fail(db, rc, "prepare", err), -1;
        db->get_cols = db->n_cols;
    }
    sqlite3_stmt *st = db->get;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st), decision = 1;
    if (rc == SQLITE_ROW) {
        const char *stored = (const char *)sqlite3_column_text(st, 1);
        int stored_error = strcmp(stored, "error") == 0;
        if (r->status == RECORD_ERROR || r->status == RECORD_ERROR_INPUT) decision = 0;   /* never replaces a result */
        else if (stored_error) decision = 1;                 /* a retried point replaces its failure */
        else {
            const char *what = NULL;
            char colname[1100];
            if (strcmp(stored, status_text(r->status)) != 0) what = "status";
            for (int f = 0; !what && f < 2; f++) {
                const char *s = (const char *)sqlite3_column_text(st, 2 + f);
                const char *t = f ? r->patch : r->reason;
                uint32_t tn = f ? r->patch_len : r->reason_len;
                if ((!s) != (!t) || (s && (strlen(s) != tn || memcmp(s, t, tn) != 0))) what = f ? "scenario_patch" : "reason";
            }
            for (int i = 0; !what && i < db->n_cols; i++) {
                const db_value *v = &db->vals[i];
                int col = 4 + i, type = sqlite3_column_type(st, col);
                int same;
                if (!v->set || type == SQLITE_NULL) same = !v->set && type == SQLITE_NULL;
                else if (v->kind == KIND_NUMBER) same = type != SQLITE_TEXT && sqlite3_column_double(st, col) == v->number;
                else if (v->kind == KIND_BOOL) same = sqlite3_column_int(st, col) == (v->number != 0);
                else if (db->cols[i].kind == KIND_JSON && type != SQLITE_TEXT) {
                    char buf[64];
                    db_format_number(sqlite3_column_double(st, col), buf, sizeof buf);
                    same = (int)strlen(buf) == v->text_len && memcmp(buf, v->text, (size_t)v->text_len) == 0;
                } else {
                    const char *s = (const char *)sqlite3_column_text(st, col);
                    same = s && (int)strlen(s) == v->text_len && memcmp(s, v->text, (size_t)v->text_len) == 0;
                }
                if (!same) {
                    snprintf(colname, sizeof colname, "%s", db->cols[i].name);
                    what = colname;
                }
            }
            if (what) {
                moe_error_set(err, EXIT_BADINPUT, "point %ld appears twice with different results (%s differs)", id, what);
                decision = -1;
            } else {
                decision = 0;
            }
        }
    } else if (rc != SQLITE_DONE) {
        db_fail(db, rc, "read a point", err);
        decision = -1;
    }
    sqlite3_reset(st);
    return decision;
}

int results_db_put(results_db *db, long id, const void *rec, size_t len, int merge, moe_error *err) {
    record_reader r;
    record_entry e;
    if (record_open(&r, rec, len)) return moe_error_set(err, EXIT_RUNTIME, "point %ld: a malformed record", id);
    if (begin(db, err) || db_load_record(db, id, &r, &e, err)) return err->code;
    if (merge) {
        int d = merge_decide(db, id, &r, err);
        if (d < 0) return err->code;
        if (d == 0) return 0;
    }
    if (insert_row(db, id, &r, err) || db_series_store(db, id, err)) return err->code;
    if (++db->pending >= DB_BATCH_POINTS || mono_s() - db->txn_t0 >= db->commit_every_s) return results_db_commit(db, err);
    return 0;
}

int results_db_close(results_db *db, moe_error *err) {
    if (!db) return 0;
    int rc = results_db_commit(db, err);
    db_free(db);
    return rc;
}

void results_db_abandon(results_db *db) {
    if (!db) return;
    if (db->in_txn && db->h) sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    db_free(db);
}

/* ---- reading ------------------------------------------------------------------------------------- */

long results_db_done(results_db *db, long lo, long hi, uint8_t *done, moe_error *err) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT id FROM points WHERE id >= ? AND id < ? AND status != 'error'", -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "read", err), -1;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    long n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long i = (long)sqlite3_column_int64(st, 0) - lo;
        done[i >> 3] |= (uint8_t)(1u << (i & 7));
        n++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? n : (db_fail(db, rc, "read", err), -1);
}

int results_db_counts(results_db *db, long lo, long hi, long *ok, long *infeasible, long *error, moe_error *err) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT status, count(*) FROM points WHERE id >= ? AND id < ? GROUP BY status",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "read", err);
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    *ok = *infeasible = *error = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(st, 0);
        long n = (long)sqlite3_column_int64(st, 1);
        if (strcmp(s, "ok") == 0) *ok = n;
        else if (strcmp(s, "infeasible") == 0) *infeasible = n;
        else *error = n;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(db, rc, "read", err);
}

long results_db_count_all(results_db *db) {
    sqlite3_stmt *st;
    long n = -1;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM points", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void add_range(char *desc, size_t cap, size_t *len, int *shown, long a, long b) {
    if (*shown >= 8) {
        if (*shown == 8 && *len + 6 < cap) *len += (size_t)snprintf(desc + *len, cap - *len, ", ...");
        ++*shown;
        return;
    }
    if (*len >= cap) return;
    if (a == b) *len += (size_t)snprintf(desc + *len, cap - *len, "%s%ld", *shown ? ", " : "", a);
    else *len += (size_t)snprintf(desc + *len, cap - *len, "%s%ld-%ld", *shown ? ", " : "", a, b);
    ++*shown;
}

long results_db_missing(results_db *db, char *desc, size_t cap, moe_error *err) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db->h, "SELECT id FROM points WHERE status != 'error' AND id >= 0 AND id < ? ORDER BY id",
                                -1, &st, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "read", err), -1;
    sqlite3_bind_int64(st, 1, db->n_points);
    long next = 0, missing = 0;
    size_t len = 0;
    int shown = 0;
    desc[0] = '\0';
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long id = (long)sqlite3_column_int64(st, 0);
        if (id > next) {
            add_range(desc, cap, &len, &shown, next, id - 1);
            missing += id - next;
        }
        next = id + 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_fail(db, rc, "read", err), -1;
    if (db->n_points > next) {
        add_range(desc, cap, &len, &shown, next, db->n_points - 1);
        missing += db->n_points - next;
    }
    return missing;
}

void results_db_reasons(results_db *db, const char *status, int max, FILE *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db->h, "SELECT id, reason FROM points WHERE status = ? ORDER BY id LIMIT ?", -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, max);
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(out, "  point %lld: %s\n", (long long)sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
}

/* ---- reading the points table back (the exports and merges use these) ------------------------ */
int db_format_number(double d, char *buf, size_t cap) {
    /* cJSON's print_number, so that CSV cells, JSON columns and results.json agree: integers in int
     * range as integers, else 15 significant digits when they read back as the same double (within
     * cJSON's tolerance), else 17. Integers below 1e15 print the same through "%1.15g": they take a
     * shortcut, being most of a sweep's values. */
    if (isnan(d) || isinf(d)) return snprintf(buf, cap, "null");
    if (d == floor(d) && fabs(d) < 1e15) return snprintf(buf, cap, "%lld", (long long)d);
    int n = snprintf(buf, cap, "%1.15g", d);
    double back = strtod(buf, NULL);
    double big = fabs(back) > fabs(d) ? fabs(back) : fabs(d);
    if (!(fabs(back - d) <= big * DBL_EPSILON)) n = snprintf(buf, cap, "%1.17g", d);
    return n;
}

static int by_first_seen(const void *a, const void *b, void *vdb) {
    const results_db *db = vdb;
    const db_column *x = &db->cols[*(const int *)a], *y = &db->cols[*(const int *)b];
    if (x->first_id != y->first_id) return x->first_id < y->first_id ? -1 : 1;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return strcmp(x->name, y->name);
}

int *db_column_order(const results_db *db) {
    int *o = moe_xmalloc(sizeof(int) * (size_t)(db->n_cols + 1));
    for (int i = 0; i < db->n_cols; i++) o[i] = i;
    qsort_r(o, (size_t)db->n_cols, sizeof *o, by_first_seen, (void *)db);
    return o;
}

char *db_select_sql(const results_db *db, const int *order, int with_scenario, const char *tail) {
    size_t cap = 512 + (size_t)db->n_cols * 80 + (tail ? strlen(tail) : 0), n = 0;
    char *sql = moe_xmalloc(cap);
    n += (size_t)snprintf(sql + n, cap - n, "SELECT id, status, reason, %s",
                          with_scenario ? "CASE WHEN scenario_patch IS NULL THEN NULL ELSE "
                                          "json_patch((SELECT scenario FROM run), scenario_patch) END"
                                        : "scenario_patch");
    for (int k = 0; k < db->n_cols; k++) {
        char *q = db_quote_ident(db->cols[order ? order[k] : k].name);
        if (n + strlen(q) + 64 > cap) sql = moe_xrealloc(sql, cap = 2 * cap + strlen(q), 1);
        n += (size_t)snprintf(sql + n, cap - n, ", %s", q);
        free(q);
    }
    if (n + 64 + (tail ? strlen(tail) : 0) > cap) sql = moe_xrealloc(sql, cap = n + 64 + (tail ? strlen(tail) : 0), 1);
    snprintf(sql + n, cap - n, " FROM points %s", tail ? tail : "");
    return sql;
}
