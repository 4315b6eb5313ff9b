/* test_results_db.c — the results database on hand-made points: records, exports, column order, kinds,
 * fingerprints and merge. The truths are written by hand (the expected CSV text) or come from cJSON's
 * own printer (results.json must be what cJSON_Print writes of the document). The step_series table holds
 * a hand-made point's series row by row (read back by SQL and by results_db_step_series), a replaced
 * point's rows are replaced, and simdiag's series findings (diagnose_series.h) on that hand-made
 * series are the steps picked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/report/diagnose_series.h"
#include "sim/report/results_export.h"
#include "sim/base/fileio.h"
#include "sim/report/results_db.h"
#include "sim/report/results_record.h"

static char tmpdir[] = "/tmp/moesim-db-XXXXXX";

static int setup(void **state) {
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static cJSON *definition(int seed) {
    char text[300];
    snprintf(text, sizeof text,
             "{\"version\":\"test\",\"scenario\":{\"seed\":%d,\"layout\":{\"tp\":1,\"pp\":2},\"name\":\"t\"},"
             "\"sweep\":{\"dims\":[{\"layout.pp\":[2,4,8]}]},\"options\":{\"levels\":[\"plan\"]}}", seed);
    return cJSON_Parse(text);
}

/* Store a point given as JSON text (with its status and reason), with a scenario patch. */
static void put(results_db *db, long id, record_status st, const char *reason, const char *patch, const char *point_json,
                int merge, int expect_rc) {
    cJSON *pt = point_json ? cJSON_Parse(point_json) : NULL;
    record_buf b = {0};
    record_encode(&b, st, reason, patch, pt);
    moe_error err = {0};
    int rc = results_db_put(db, id, b.data, b.len, merge, &err);
    if (rc != expect_rc) fail_msg("put %ld: rc %d (%s), expected %d", id, rc, err.msg, expect_rc);
    record_buf_free(&b);
    cJSON_Delete(pt);
}

static char *slurp(const char *dir, const char *name) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    moe_error e = {0};
    return read_file_text(p, NULL, &e);
}

static results_db *open_run(const char *sub, int seed, long n, results_db_mode mode, int expect_rc, char *msg) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    cJSON *d = definition(seed);
    results_db *db = NULL;
    moe_error err = {0};
    int rc = results_db_open_run(dir, d, n, mode, &db, &err);
    cJSON_Delete(d);
    if (rc != expect_rc) fail_msg("open %s: rc %d (%s), expected %d", sub, rc, err.msg, expect_rc);
    if (msg) strcpy(msg, err.msg);
    return db;
}

static void close_export(results_db *db, const char *sub) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    moe_error err = {0};
    if (results_db_export(db, dir, 1, 1, 2, &err)) fail_msg("export: %s", err.msg);
    assert_int_equal(results_db_close(db, &err), 0);
}

/* A record carries every leaf with its path and kind, in the point's order; id/scenario stay out. */
static void test_record_round_trip(void **state) {
    (void)state;
    cJSON *pt = cJSON_Parse("{\"id\":7,\"sweep\":{\"layout.pp\":4},\"scenario\":{\"x\":1},"
                            "\"plan\":{\"t_s\":0.1,\"fits\":true,\"mem\":{\"total\":80.5},\"w\":[\"a\",\"b\"],\"src\":\"h800\"}}");
    record_buf b = {0};
    record_encode(&b, RECORD_OK, NULL, "{\"layout\":{\"pp\":4}}", pt);
    record_reader r;
    assert_int_equal(record_open(&r, b.data, b.len), 0);
    assert_int_equal(r.status, RECORD_OK);
    assert_null(r.reason);
    assert_int_equal(r.patch_len, strlen("{\"layout\":{\"pp\":4}}"));
    assert_int_equal(r.n_entries, 6);
    const char *paths[6] = {"sweep\x1flayout.pp", "plan\x1ft_s", "plan\x1f" "fits", "plan\x1fmem\x1ftotal", "plan\x1fw", "plan\x1fsrc"};
    const record_kind kinds[6] = {KIND_NUMBER, KIND_NUMBER, KIND_BOOL, KIND_NUMBER, KIND_JSON, KIND_STRING};
    record_entry e;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(record_next(&r, &e), 1);
        assert_int_equal(e.path_len, strlen(paths[i]));
        assert_memory_equal(e.path, paths[i], e.path_len);
        assert_int_equal(e.kind, kinds[i]);
    }
    assert_int_equal(record_next(&r, &e), 0);
    /* a truncated record is refused, not read past its end */
    assert_int_equal(record_open(&r, b.data, 3), -1);
    record_buf_free(&b);
    cJSON_Delete(pt);
}

/* A database appears whole: the leftovers of a creation that was killed (results.db.new and its log)
 * are replaced, nothing but results.db stays, and the new database resumes. */
static void test_created_whole(void **state) {
    (void)state;
    char dir[300], p[400];
    snprintf(dir, sizeof dir, "%s/whole", tmpdir);
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/results.db.new", dir);
    FILE *f = fopen(p, "w");
    fputs("half a database", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/results.db.new-wal", dir);
    f = fopen(p, "w");
    fputs("a stale log", f);
    fclose(f);
    results_db *db = open_run("whole", 1, 4, DB_FRESH, 0, NULL);
    moe_error err = {0};
    assert_int_equal(results_db_close(db, &err), 0);
    const char *gone[] = {"results.db.new", "results.db.new-wal", "results.db.new-shm", "results.db-wal"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, gone[i]);
        if (access(p, F_OK) == 0) fail_msg("%s is left beside results.db", gone[i]);
    }
    db = open_run("whole", 1, 4, DB_RESUME, 0, NULL);
    assert_int_equal(results_db_n_points(db), 4);
    assert_int_equal(results_db_close(db, &err), 0);
}

/* results.json is what cJSON_Print writes of the document; results.csv is the hand-written text. */
static void test_exports(void **state) {
    (void)state;
    results_db *db = open_run("exports", 1, 3, DB_FRESH, 0, NULL);
    put(db, 0, RECORD_OK, NULL, "{\"layout\":{\"pp\":2}}",
        "{\"sweep\":{\"layout.pp\":2},\"plan\":{\"t_s\":0.1,\"fits\":true,\"w\":[],\"src\":\"a,b\"}}", 0, 0);
    put(db, 2, RECORD_INFEASIBLE, "pp=8 does not divide", NULL, "{\"sweep\":{\"layout.pp\":8}}", 0, 0);
    put(db, 1, RECORD_OK, NULL, "{\"layout\":{\"pp\":4}}",
        "{\"sweep\":{\"layout.pp\":4},\"plan\":{\"t_s\":0.30000000000000004,\"fits\":false,\"w\":[\"x\",\"y\"],\"src\":\"c\"}}", 0, 0);
    close_export(db, "exports");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/exports", tmpdir);
    char *csv = slurp(dir, "results.csv");
    assert_non_null(csv);
    assert_string_equal(csv,
                        "id,status,reason,sweep.layout.pp,plan.t_s,plan.fits,plan.w,plan.src\n"
                        "0,ok,,2,0.1,true,,\"a,b\"\n"
                        "1,ok,,4,0.3,false,\"x;y\",c\n"   /* as cJSON prints it: 15 digits read back within its tolerance */
                        "2,infeasible,pp=8 does not divide,8,,,,\n");
    free(csv);
    cJSON *doc = cJSON_Parse(
        "{\"format\":\"moesim-results/1\",\"version\":\"test\",\"points\":["
        "{\"id\":0,\"status\":\"ok\",\"sweep\":{\"layout.pp\":2},\"scenario\":{\"seed\":1,\"layout\":{\"tp\":1,\"pp\":2},\"name\":\"t\"},"
        "\"plan\":{\"t_s\":0.1,\"fits\":true,\"w\":[],\"src\":\"a,b\"}},"
        "{\"id\":1,\"status\":\"ok\",\"sweep\":{\"layout.pp\":4},\"scenario\":{\"seed\":1,\"layout\":{\"tp\":1,\"pp\":4},\"name\":\"t\"},"
        "\"plan\":{\"t_s\":0.30000000000000004,\"fits\":false,\"w\":[\"x\",\"y\"],\"src\":\"c\"}},"
        "{\"id\":2,\"status\":\"infeasible\",\"reason\":\"pp=8 does not divide\",\"sweep\":{\"layout.pp\":8}}]}");
    char *want = cJSON_Print(doc);
    char *json = slurp(dir, "results.json");
    assert_non_null(json);
    size_t wl = strlen(want);
    assert_int_equal(strlen(json), wl + 1);
    assert_memory_equal(json, want, wl);
    free(want);
    free(json);
    cJSON_Delete(doc);
}

/* Column order depends on the points stored, not on the order they arrived in; a key whose values
 * are of two kinds keeps both exactly. */
static void test_order_and_kinds(void **state) {
    (void)state;
    const char *pts[3] = {"{\"plan\":{\"a\":1,\"c\":true}}", "{\"plan\":{\"a\":2,\"b\":\"x\",\"c\":\"auto\"}}",
                          "{\"plan\":{\"b\":\"y\",\"a\":3,\"c\":false}}"};
    int orders[2][3] = {{0, 1, 2}, {2, 1, 0}};
    char *csv[2], *json[2];
    for (int k = 0; k < 2; k++) {
        char sub[32];
        snprintf(sub, sizeof sub, "order%d", k);
        results_db *db = open_run(sub, 1, 3, DB_FRESH, 0, NULL);
        for (int i = 0; i < 3; i++) put(db, orders[k][i], RECORD_OK, NULL, "{}", pts[orders[k][i]], 0, 0);
        close_export(db, sub);
        char dir[300];
        snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
        csv[k] = slurp(dir, "results.csv");
        json[k] = slurp(dir, "results.json");
    }
    assert_string_equal(csv[0], csv[1]);
    assert_string_equal(json[0], json[1]);
    assert_string_equal(csv[0], "id,status,reason,plan.a,plan.c,plan.b\n"
                                "0,ok,,1,true,\n1,ok,,2,auto,x\n2,ok,,3,false,y\n");
    cJSON *doc = cJSON_Parse(json[0]);
    cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "points"), 1);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "points"), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(p1, "plan"), "c")->valuestring, "auto");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(p0, "plan"), "c")));
    cJSON_Delete(doc);
    for (int k = 0; k < 2; k++) {
        free(csv[k]);
        free(json[k]);
    }
}

/* A folder holds one run: another definition is refused (naming the first differing field) unless
 * --force, which replaces it; --resume keeps the points of the same one. */
static void test_never_mixed(void **state) {
    (void)state;
    results_db *db = open_run("mixed", 1, 3, DB_FRESH, 0, NULL);
    put(db, 0, RECORD_OK, NULL, "{}", "{\"plan\":{\"a\":1}}", 0, 0);
    put(db, 1, RECORD_ERROR, "boom", NULL, NULL, 0, 0);
    close_export(db, "mixed");
    char msg[1100];
    assert_null(open_run("mixed", 2, 3, DB_RESUME, EXIT_BADINPUT, msg));
    assert_non_null(strstr(msg, "scenario.seed is 1 there, 2 now"));
    assert_non_null(strstr(msg, "--force"));
    assert_null(open_run("mixed", 2, 3, DB_FRESH, EXIT_BADINPUT, msg));
    /* the exports of the refused folder are untouched */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/mixed", tmpdir);
    char *csv = slurp(dir, "results.csv");
    assert_non_null(csv);
    free(csv);
    /* resume: the ok point is done, the failed one is not */
    db = open_run("mixed", 1, 3, DB_RESUME, 0, NULL);
    uint8_t done[1] = {0};
    moe_error err = {0};
    assert_int_equal(results_db_done(db, 0, 3, done, &err), 1);
    assert_int_equal(done[0], 1);
    assert_null(slurp(dir, "results.csv"));   /* stale once new points come: removed */
    assert_int_equal(results_db_close(db, &err), 0);
    db = open_run("mixed", 2, 3, DB_FORCE, 0, NULL);
    assert_int_equal(results_db_count_all(db), 0);
    assert_int_equal(results_db_close(db, &err), 0);
}

static void make_shard(const char *sub, int seed, long n, const long *ids, int k, const char *t_s) {
    results_db *db = open_run(sub, seed, n, DB_FRESH, 0, NULL);
    for (int i = 0; i < k; i++) {
        char pt[200];
        snprintf(pt, sizeof pt, "{\"sweep\":{\"layout.pp\":%ld},\"plan\":{\"t_s\":%s}}", ids[i], t_s ? t_s : "0.5");
        put(db, ids[i], RECORD_OK, NULL, "{}", pt, 0, 0);
    }
    close_export(db, sub);
}

static int merge(const char *out, int partial, char *msg, int n, ...) {
    const char *in[8];
    char paths[8][300];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", tmpdir, va_arg(ap, const char *));
        in[i] = paths[i];
    }
    va_end(ap);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, out);
    moe_error err = {0};
    int rc = results_merge(in, n, dir, partial, 1, 1, NULL, &err);
    if (msg) strcpy(msg, err.msg);
    return rc;
}

static void test_merge(void **state) {
    (void)state;
    long all[4] = {0, 1, 2, 3}, a[2] = {0, 1}, b[3] = {1, 2, 3}, c[1] = {2};
    make_shard("whole", 1, 4, all, 4, NULL);
    make_shard("a", 1, 4, a, 2, NULL);
    make_shard("b", 1, 4, b, 3, NULL);
    make_shard("c", 1, 4, c, 1, "0.75");   /* point 2 with another result */
    make_shard("other", 2, 4, all, 4, NULL);
    char msg[1100], d1[300], d2[300];
    /* overlapping shards: identical points once, the same exports as the whole run */
    assert_int_equal(merge("ab", 0, msg, 2, "a", "b"), 0);
    snprintf(d1, sizeof d1, "%s/whole", tmpdir);
    snprintf(d2, sizeof d2, "%s/ab", tmpdir);
    char *x = slurp(d1, "results.json"), *y = slurp(d2, "results.json");
    assert_string_equal(x, y);
    free(x);
    free(y);
    /* the same folder twice */
    assert_int_equal(merge("aa", 1, msg, 2, "whole", "whole"), 0);
    /* a conflict names the point and the column, and leaves no output */
    assert_int_equal(merge("abc", 0, msg, 3, "a", "b", "c"), EXIT_BADINPUT);
    assert_non_null(strstr(msg, "point 2"));
    assert_non_null(strstr(msg, "plan.t_s"));
    char d3[300];
    snprintf(d3, sizeof d3, "%s/abc", tmpdir);
    assert_null(slurp(d3, "results.db"));
    /* different runs */
    assert_int_equal(merge("ao", 0, msg, 2, "a", "other"), EXIT_BADINPUT);
    assert_non_null(strstr(msg, "scenario.seed"));
    /* an incomplete set: the missing range named, unless partial */
    assert_int_equal(merge("ac", 0, msg, 2, "a", "c"), EXIT_BADINPUT);
    assert_non_null(strstr(msg, "points 3 missing"));
    assert_int_equal(merge("ac", 1, msg, 2, "a", "c"), 0);
    char dac[300];
    snprintf(dac, sizeof dac, "%s/ac", tmpdir);
    char *csv = slurp(dac, "results.csv");
    assert_string_equal(csv, "id,status,reason,sweep.layout.pp,plan.t_s\n0,ok,,0,0.5\n1,ok,,1,0.5\n2,ok,,2,0.75\n");
    free(csv);
}

/* A failed point gives way to a result of the same point; a failure never replaces a result. */
static void test_merge_error_points(void **state) {
    (void)state;
    results_db *db = open_run("err", 1, 2, DB_FRESH, 0, NULL);
    put(db, 0, RECORD_OK, NULL, "{}", "{\"plan\":{\"a\":1}}", 0, 0);
    put(db, 1, RECORD_ERROR, "lost", NULL, NULL, 1, 0);
    put(db, 1, RECORD_OK, NULL, "{}", "{\"plan\":{\"a\":2}}", 1, 0);
    put(db, 0, RECORD_ERROR, "lost", NULL, NULL, 1, 0);
    put(db, 0, RECORD_OK, NULL, "{}", "{\"plan\":{\"a\":1}}", 1, 0);
    put(db, 0, RECORD_OK, NULL, "{}", "{\"plan\":{\"a\":5}}", 1, EXIT_BADINPUT);
    long ok, inf, bad;
    moe_error err = {0};
    assert_int_equal(results_db_counts(db, 0, 2, &ok, &inf, &bad, &err), 0);
    assert_int_equal(ok, 2);
    assert_int_equal(bad, 0);
    results_db_abandon(db);
}

/* A large CSV is formatted by several processes: the same bytes as one process writes. */
static void test_parallel_csv(void **state) {
    (void)state;
    char *csv[2];
    for (int k = 0; k < 2; k++) {
        char sub[32];
        snprintf(sub, sizeof sub, "par%d", k);
        results_db *db = open_run(sub, 1, 12000, DB_FRESH, 0, NULL);
        for (long i = 0; i < 12000; i++) {
            char pt[200];
            snprintf(pt, sizeof pt, "{\"sweep\":{\"layout.pp\":%ld},\"plan\":{\"t_s\":%.17g,\"ok\":%s}}", i, 1.0 / (double)(i + 3),
                     i % 3 ? "true" : "false");
            put(db, i, i % 7 ? RECORD_OK : RECORD_INFEASIBLE, i % 7 ? NULL : "odd", "{}", pt, 0, 0);
        }
        char dir[300];
        snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
        moe_error err = {0};
        if (results_db_export(db, dir, 0, 1, k ? 3 : 1, &err)) fail_msg("export: %s", err.msg);
        assert_int_equal(results_db_count_all(db), 12000);   /* the connection is usable after it */
        assert_int_equal(results_db_close(db, &err), 0);
        csv[k] = slurp(dir, "results.csv");
        assert_non_null(csv[k]);
    }
    assert_true(strlen(csv[0]) > 12000 * 20);
    assert_string_equal(csv[0], csv[1]);
    free(csv[0]);
    free(csv[1]);
}

/* a point with a 6-step series: quiet steps, expert 5 passing 25% at step 2 (EP rank 1), its peak at
 * step 4 (timed out), a slow run of steps 2-4 by hand (median 1.25 s: slow above 1.875 s) */
static const char SERIES_POINT[] =
    "{\"step\":{\"step_time_s\":1,\"steps\":{\"count\":6,\"step_time_s_p50\":1.25,\"step_time_s_p95\":3.75,"
    "\"step_time_s_p99\":3.95,\"step_time_s_max\":4,\"slow_above_s\":1.875,\"slow_steps\":3,\"slow_run_steps\":3,"
    "\"slow_run_first_step\":2,\"series\":{\"step\":[0,1,2,3,4,5],\"step_time_s\":[1,1,2,3,4,1.5],"
    "\"max_expert_share\":[0.13,0.2,0.3,0.6,0.9,0.25],\"max_expert\":[7,2,5,5,5,5],"
    "\"rank_load_max_mean\":[1.01,1.1,1.6,2.9,4.1,1.5],\"busiest_ep_rank\":[3,1,1,1,1,1],"
    "\"hot_share\":[0,0,0.3,0.6,0.9,0.25],\"max_collective_wait_s\":[0.01,0.01,0.02,0.05,0.2,0.02],"
    "\"timed_out\":[false,false,false,false,true,false]}}}}";

static void test_step_series_table(void **state) {
    (void)state;
    results_db *db = open_run("series", 1, 3, DB_FRESH, 0, NULL);
    put(db, 0, RECORD_OK, NULL, NULL, SERIES_POINT, 0, 0);
    put(db, 1, RECORD_OK, NULL, NULL, "{\"step\":{\"step_time_s\":1}}", 0, 0);   /* one step: no rows */
    /* point 2 stored with the series, then replaced by a point without steps: its rows go */
    put(db, 2, RECORD_OK, NULL, NULL, SERIES_POINT, 0, 0);
    put(db, 2, RECORD_OK, NULL, NULL, "{\"step\":{\"step_time_s\":2}}", 0, 0);
    moe_error err = {0};
    assert_int_equal(results_db_close(db, &err), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/series/results.db", tmpdir);
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT point_id, step, step_time_s, timed_out, max_expert, busiest_ep_rank, "
                                           "hot_share, max_collective_wait_s FROM step_series ORDER BY point_id, step",
                                        -1, &st, NULL), SQLITE_OK);
    static const double t_s[6] = {1, 1, 2, 3, 4, 1.5}, wait_s[6] = {0.01, 0.01, 0.02, 0.05, 0.2, 0.02};
    static const int expert[6] = {7, 2, 5, 5, 5, 5}, ep[6] = {3, 1, 1, 1, 1, 1};
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int t = rows++;
        assert_int_equal(sqlite3_column_int(st, 0), 0);
        assert_int_equal(sqlite3_column_int(st, 1), t);
        assert_true(sqlite3_column_double(st, 2) == t_s[t]);
        assert_int_equal(sqlite3_column_int(st, 3), t == 4);
        assert_int_equal(sqlite3_column_type(st, 4), SQLITE_INTEGER);
        assert_int_equal(sqlite3_column_int(st, 4), expert[t]);
        assert_int_equal(sqlite3_column_int(st, 5), ep[t]);
        assert_true(sqlite3_column_double(st, 7) == wait_s[t]);
    }
    sqlite3_finalize(st);
    assert_int_equal(rows, 6);
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), RESULTS_DB_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* read back, and simdiag's findings on it */
    assert_int_equal(results_db_open_existing(path, 0, &db, &err), 0);
    int n = 0;
    long *ids = results_db_series_points(db, &n, &err);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);
    free(ids);
    results_step_series s;
    assert_int_equal(results_db_step_series(db, 1, &s, &err), 0);
    assert_int_equal(s.n, 0);
    results_step_series_free(&s);
    assert_int_equal(results_db_step_series(db, 0, &s, &err), 0);
    assert_int_equal(s.n, 6);
    assert_true(s.p50_s == 1.25 && s.slow_run_steps == 3 && s.slow_run_first == 2);
    diag_series_report r;
    assert_int_equal(diag_series(&s, 0, DIAG_SERIES_HOT_SHARE, &r), 0);
    assert_int_equal(r.onset_step, 2);          /* 0.3 > 0.25; step 1's 0.2 and step 5's 0.25 are not */
    assert_int_equal(r.onset_expert, 5);
    assert_int_equal(r.onset_ep_rank, 1);
    assert_int_equal(r.peak_step, 4);
    assert_true(r.peak_share == 0.9 && r.peak_step_time_s == 4 && r.peak_timed_out);
    assert_int_equal(r.first_timeout_step, 4);
    assert_int_equal(r.timed_out_steps, 1);
    assert_true(diag_series_problem(&r));
    assert_int_equal(diag_series(&s, 0, 0.95, &r), 0);   /* nothing passes 95%: only the timeout remains */
    assert_int_equal(r.onset_step, -1);
    assert_true(diag_series_problem(&r));
    results_step_series_free(&s);
    assert_int_equal(results_db_close(db, &err), 0);

    /* a database without the table (an older schema): the reader says so */
    assert_int_equal(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "DROP TABLE step_series; PRAGMA user_version = 0;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(results_db_open_existing(path, 0, &db, &err), 0);
    assert_int_equal(results_db_step_series(db, 0, &s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "no step_series table"));
    assert_int_equal(results_db_close(db, &err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_round_trip), cmocka_unit_test(test_exports),
        cmocka_unit_test(test_order_and_kinds),   cmocka_unit_test(test_never_mixed),
        cmocka_unit_test(test_merge),             cmocka_unit_test(test_merge_error_points),
        cmocka_unit_test(test_parallel_csv),      cmocka_unit_test(test_created_whole),
        cmocka_unit_test(test_step_series_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
