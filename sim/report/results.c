/* results.c — a results document in memory written as a folder's results: results.db and its
 * exports (results_db.h), as a sweep writes them. */
#include "sim/report/results.h"
#include "sim/base/alloc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/report/results_db.h"
#include "sim/report/results_export.h"
#include "sim/report/results_record.h"

cJSON *results_document(cJSON *points) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", "moesim-results/1");
    cJSON_AddStringToObject(doc, "version", MOESIM_VERSION);
    cJSON_AddItemToObject(doc, "points", points);
    return doc;
}

/* The RFC 7396 patch that turns `from` into `to` (both objects). */
static cJSON *merge_diff(const cJSON *from, const cJSON *to) {
    cJSON *p = cJSON_CreateObject();
    for (const cJSON *x = to->child; x; x = x->next) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(from, x->string);
        if (y && cJSON_IsObject(x) && cJSON_IsObject(y)) {
            cJSON *sub = merge_diff(y, x);
            if (sub->child) cJSON_AddItemToObject(p, x->string, sub);
            else cJSON_Delete(sub);
        } else if (!y || !cJSON_Compare(x, y, 1)) {
            cJSON_AddItemToObject(p, x->string, cJSON_Duplicate(x, 1));
        }
    }
    for (const cJSON *y = from->child; y; y = y->next)
        if (!cJSON_GetObjectItemCaseSensitive(to, y->string)) cJSON_AddNullToObject(p, y->string);
    return p;
}

int results_write(const char *dir, const cJSON *doc, moe_error *err) {
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
    const cJSON *first = cJSON_GetArrayItem(points, 0);
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(first, "scenario");
    cJSON *def = cJSON_CreateObject();
    cJSON_AddStringToObject(def, "version", MOESIM_VERSION);
    cJSON_AddItemToObject(def, "scenario", cJSON_IsObject(base) ? cJSON_Duplicate(base, 1) : cJSON_CreateObject());
    cJSON_AddNullToObject(def, "sweep");
    cJSON_AddNullToObject(def, "options");
    /* this document replaces the folder's results (not its other files: simlive's trace.json) */
    const char *old[] = {"results.db", "results.db-wal", "results.db-shm", "results.json", "results.csv", NULL};
    for (const char **o = old; *o; o++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, *o);
        unlink(path);
    }
    results_db *db;
    int rc = results_db_open_run(dir, def, cJSON_GetArraySize(points), DB_FRESH, &db, err);
    cJSON_Delete(def);
    if (rc) return rc;
    record_buf rec = {0};
    long i = 0;
    for (const cJSON *p = points ? points->child : NULL; p && !rc; p = p->next, i++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "scenario"), *id = cJSON_GetObjectItemCaseSensitive(p, "id");
        char *patch = NULL;
        if (cJSON_IsObject(s)) {
            cJSON *d = merge_diff(cJSON_IsObject(base) ? base : s, s);
            patch = cJSON_PrintUnformatted(d);
            cJSON_Delete(d);
        }
        rec.len = 0;
        record_encode(&rec, RECORD_OK, NULL, patch, p);
        free(patch);
        rc = results_db_put(db, cJSON_IsNumber(id) ? (long)id->valuedouble : i, rec.data, rec.len, 0, err);
    }
    record_buf_free(&rec);
    if (!rc) rc = results_db_export(db, dir, 1, 1, 1, err);
    if (rc) {
        results_db_abandon(db);
        return rc;
    }
    return results_db_close(db, err);
}
