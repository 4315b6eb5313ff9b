/* results_merge.c — `simrun merge`: the databases of one run's shards as one (results_db.h). */
#define _GNU_SOURCE /* hsearch_r in the store's header */
#include "sim/report/results_export.h"
#include "sim/report/results_db_internal.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/fileio.h"

/* Every point of `src` into `dst` (merge semantics of results_db_put). Returns the rows read or -1. */
static long merge_one(results_db *dst, results_db *src, const char *label, moe_error *err) {
    int *order = db_column_order(src);
    char *sql = db_select_sql(src, order, 0, "ORDER BY id");
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(src->h, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        free(order);
        db_fail(src, rc, "read", err);
        return -1;
    }
    record_buf rec = {0};
    long n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long id = (long)sqlite3_column_int64(st, 0);
        cJSON *pt = db_row_point(src, st, order, 0);
        const char *status = (const char *)sqlite3_column_text(st, 1);
        record_status s = strcmp(status, "ok") == 0 ? RECORD_OK : strcmp(status, "infeasible") == 0 ? RECORD_INFEASIBLE : RECORD_ERROR;
        rec.len = 0;
        record_encode(&rec, s, (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3), pt);
        cJSON_Delete(pt);
        if (results_db_put(dst, id, rec.data, rec.len, 1, err)) {
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l, " (merging %s into the inputs before it)", label);
            n = -1;
            break;
        }
        n++;
    }
    if (n >= 0 && rc != SQLITE_DONE) n = (db_fail(src, rc, "read", err), -1);
    sqlite3_finalize(st);
    record_buf_free(&rec);
    free(order);
    return n;
}

static int same_run(results_db *a, const char *la, results_db *b, const char *lb, moe_error *err) {
    if (strcmp(a->fingerprint, b->fingerprint) == 0) return 0;
    cJSON *da = results_db_definition(a), *dbb = results_db_definition(b);
    char diff[400];
    results_definition_diff(da, dbb, diff, sizeof diff);
    cJSON_Delete(da);
    cJSON_Delete(dbb);
    return moe_error_set(err, EXIT_BADINPUT, "%s and %s hold different runs (fingerprints %s and %s): %s; "
                         "only shards of one run merge", la, lb, a->fingerprint, b->fingerprint, diff);
}

int results_merge(const char *const *inputs, int n_inputs, const char *dir, int partial, int json, int csv,
                  FILE *report, moe_error *err) {
    if (n_inputs < 1) return moe_error_set(err, EXIT_BADINPUT, "merge: expected at least one input folder");
    if (make_dirs(dir, err)) return err->code;
    results_db **in = moe_xcalloc((size_t)n_inputs + 1, sizeof *in);
    const char **labels = moe_xcalloc((size_t)n_inputs + 1, sizeof *labels);
    int n_in = 0, rc = 0;
    char out_path[4200], tmp_path[4300];
    snprintf(out_path, sizeof out_path, "%s/results.db", dir);
    snprintf(tmp_path, sizeof tmp_path, "%s/.results.db.merging", dir);
    /* an output that already holds this run takes part: merging into it adds the new points */
    if (access(out_path, F_OK) == 0) {
        if ((rc = results_db_open_existing(out_path, 0, &in[n_in], err))) goto done;
        labels[n_in++] = out_path;
    }
    for (int i = 0; i < n_inputs; i++) {
        if ((rc = results_db_open_existing(inputs[i], 0, &in[n_in], err))) goto done;
        labels[n_in++] = inputs[i];
    }
    for (int i = 1; i < n_in; i++)
        if ((rc = same_run(in[0], labels[0], in[i], labels[i], err))) {
            if (in[0] && labels[0] == out_path)
                snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                         " (%s exists: merge into a new --out)", out_path);
            goto done;
        }

    cJSON *def = results_db_definition(in[0]);
    results_db *dst = NULL;
    char wal[4400];
    snprintf(wal, sizeof wal, "%s-wal", tmp_path);
    unlink(wal);
    rc = db_create_file(tmp_path, def, in[0]->n_points, &dst, err);
    cJSON_Delete(def);
    if (rc) goto done;
    long rows = 0;
    for (int i = 0; i < n_in && !rc; i++) {
        long r = merge_one(dst, in[i], labels[i], err);
        if (r < 0) rc = err->code;
        else rows += r;
    }
    char missing[600] = "";
    long n_missing = 0;
    if (!rc && (rc = results_db_commit(dst, err)) == 0) {
        n_missing = results_db_missing(dst, missing, sizeof missing, err);
        if (n_missing < 0) rc = err->code;
    }
    if (!rc && n_missing > 0 && !partial)
        rc = moe_error_set(err, EXIT_BADINPUT,
                           "merge: points %s missing or failed (%ld of %ld): the inputs do not cover the sweep; merge "
                           "the missing shards too (or rerun them with --resume), or add --partial to merge anyway",
                           missing, n_missing, dst->n_points);
    long stored = rc ? 0 : results_db_count_all(dst);
    if (rc) {
        results_db_abandon(dst);
        unlink(tmp_path);
        unlink(wal);
        goto done;
    }
    if ((rc = results_db_close(dst, err))) {
        unlink(tmp_path);
        goto done;
    }
    /* the merged database replaces the output's only now, whole */
    for (int i = 0; i < n_in; i++) results_db_abandon(in[i]);
    n_in = 0;
    const char *stale[] = {"results.db-wal", "results.db-shm", "results.json", "results.csv", NULL};
    for (const char **s = stale; *s; s++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, *s);
        unlink(p);
    }
    if (rename(tmp_path, out_path) != 0) {
        rc = moe_error_set(err, EXIT_RUNTIME, "%s: %s", out_path, strerror(errno));
        goto done;
    }
    results_db *db;
    if ((rc = results_db_open_existing(out_path, 1, &db, err))) goto done;
    rc = results_db_export(db, dir, json || stored <= RESULTS_JSON_MAX_POINTS, csv || stored <= RESULTS_CSV_MAX_POINTS,
                           (int)sysconf(_SC_NPROCESSORS_ONLN), err);
    if (!rc && report) {
        fprintf(report, "merged %d database%s: %ld points read, %ld stored (%ld duplicates kept once)", n_inputs,
                n_inputs == 1 ? "" : "s", rows, stored, rows - stored);
        if (n_missing) fprintf(report, "; partial: points %s missing (%ld of %ld)", missing, n_missing, db->n_points);
        fputc('\n', report);
    }
    moe_error cerr = {0};
    if (results_db_close(db, &cerr) && !rc) {
        *err = cerr;
        rc = cerr.code;
    }
done:
    for (int i = 0; i < n_in; i++) results_db_abandon(in[i]);
    free(in);
    free(labels);
    return rc;
}
