/* validation_doc.c — reading a validation document and the error band of its cases (validation_doc.h). */
#include "sim/point/validation_doc.h"

#include <cjson/cJSON.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/base/json_read.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_paths.h"

double validation_number(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int validation_case_ran(const cJSON *c) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");
    return cJSON_IsString(s) && (strcmp(s->valuestring, "ok") == 0 || strcmp(s->valuestring, "miss") == 0);
}

const char *validation_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

cJSON *validation_doc_load(const char *path, moe_error *err) {
    cJSON *doc = json_load(path, 0, err);
    if (!doc) return NULL;
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "cases"))) {
        cJSON_Delete(doc);
        moe_error_input(err, path, "cases", NULL, "a validation document (validation.json written by simrun validate)");
        return NULL;
    }
    return doc;
}

/* a step case's log residual (a time's inverted), from its `key` error in percent */
static int case_log_residual(const cJSON *c, int moe, const char *key, double *l) {
    double e = validation_number(c, key);
    if (!validation_case_ran(c) || strcmp(validation_str(c, "kind"), "step") != 0 || !isfinite(e) || e <= -100) return 0;
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(c, "moe");
    if (moe >= 0 && cJSON_IsBool(cm) && cJSON_IsTrue(cm) != moe) return 0;
    *l = log1p(e / 100.0);
    if (strcmp(validation_str(c, "metric"), "step_time_s") == 0) *l = -*l;
    return 1;
}

static cJSON *band_json(const cJSON *cases, int moe, const char *family) {
    int n = 0;
    double sum = 0, sq = 0, l;
    for (const cJSON *c = cases->child; c; c = c->next)
        if (case_log_residual(c, moe, "loo_error_pct", &l)) n++, sum += l;
    if (n < VALIDATE_BAND_MIN_CASES) return NULL;
    double m = sum / n;
    for (const cJSON *c = cases->child; c; c = c->next)
        if (case_log_residual(c, moe, "loo_error_pct", &l)) sq += (l - m) * (l - m);
    double sd = sqrt(sq / (n - 1)), half = gsl_cdf_tdist_Pinv(0.5 + 0.5 * VALIDATE_BAND_COVERAGE, n - 1) * sd * sqrt(1.0 + 1.0 / n);
    int inside = 0;
    for (const cJSON *c = cases->child; c; c = c->next)
        if (case_log_residual(c, moe, "loo_error_pct", &l)) inside += fabs(l - m) <= half;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "family", family);
    cJSON_AddNumberToObject(o, "cases", n);
    cJSON_AddNumberToObject(o, "stated_coverage", VALIDATE_BAND_COVERAGE);
    cJSON_AddNumberToObject(o, "coverage", (double)inside / n);
    cJSON_AddNumberToObject(o, "min_rel_err", expm1(m - half));
    cJSON_AddNumberToObject(o, "max_rel_err", expm1(m + half));
    cJSON_AddNumberToObject(o, "width_pct", 100.0 * (expm1(m + half) - expm1(m - half)));
    return o;
}

cJSON *validate_bands_json(const cJSON *cases) {
    cJSON *arr = cJSON_CreateArray();
    const char *fam[3] = {"dense", "moe", "all"};
    const int moe[3] = {0, 1, -1};
    for (int k = 0; k < 3; k++) {
        cJSON *b = band_json(cases, moe[k], fam[k]);
        if (b) cJSON_AddItemToArray(arr, b);
    }
    if (cJSON_GetArraySize(arr) == 0) { cJSON_Delete(arr); return NULL; }
    return arr;
}

int validate_band_of(const cJSON *doc, int moe, validate_band *out) {
    memset(out, 0, sizeof *out);
    const cJSON *bands = cJSON_GetObjectItemCaseSensitive(doc, "bands");
    if (cJSON_IsArray(bands)) {
        const char *want = moe < 0 ? "all" : moe ? "moe" : "dense";
        for (const cJSON *b = bands->child; b; b = b->next)
            if (strcmp(validation_str(b, "family"), want) == 0) {
                out->min_rel_err = validation_number(b, "min_rel_err");
                out->max_rel_err = validation_number(b, "max_rel_err");
                out->cases = (int)validation_number(b, "cases");
                out->coverage = validation_number(b, "coverage");
                out->left_out = 1;
                return isfinite(out->min_rel_err) && isfinite(out->max_rel_err) ? 0 : -1;
            }
        return -1;
    }
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases");
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        double e = validation_number(c, "error_pct");
        if (!validation_case_ran(c) || strcmp(validation_str(c, "kind"), "step") != 0 || !isfinite(e)) continue;
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(c, "moe");
        if (moe >= 0 && cJSON_IsBool(cm) && cJSON_IsTrue(cm) != moe) continue;
        /* relative error of a rate (tokens/s, TFLOP/s); a time's error enters inverted */
        double rel = e / 100.0;
        if (strcmp(validation_str(c, "metric"), "step_time_s") == 0) rel = 1.0 / (1.0 + rel) - 1.0;
        /* the band always holds the prediction itself (0): a few cases bound the error, they do not
         * prove it has one sign */
        if (rel < out->min_rel_err) out->min_rel_err = rel;
        if (rel > out->max_rel_err) out->max_rel_err = rel;
        out->cases++;
    }
    return out->cases > 0 ? 0 : -1;
}

void validate_band_apply(const validate_band *b, double x, double *lo, double *hi) {
    *lo = x / (1.0 + b->max_rel_err);
    *hi = x / (1.0 + b->min_rel_err);
}

void validate_band_apply_time(const validate_band *b, double x, double *lo, double *hi) {
    /* a rate predicted (1 + e) x too high is a time (1 + e) x too short */
    *lo = x * (1.0 + b->min_rel_err);
    *hi = x * (1.0 + b->max_rel_err);
}

int validate_band_for(const scenario *s, validate_band *out) {
    static int loaded;           /* 0: not tried, 1: read, -1: none */
    static validate_band band[2], all;
    static int have[2];
    if (!loaded) {
        char path[SCN_PATH_MAX * 2];
        moe_error err = {0};
        cJSON *doc = NULL;
        if (scenario_resolve_path(s, VALIDATE_BASELINE, path, sizeof path) == 0) doc = validation_doc_load(path, &err);
        loaded = doc && validate_band_of(doc, -1, &all) == 0 ? 1 : -1;
        for (int k = 0; k < 2 && doc; k++) have[k] = validate_band_of(doc, k, &band[k]) == 0;
        cJSON_Delete(doc);
    }
    if (loaded < 0) return -1;
    /* the cases of the same kind (MoE or dense: their residuals differ), else all of them */
    int k = s->model.experts > 0;
    *out = have[k] ? band[k] : all;
    return 0;
}

void validate_band_add(cJSON *obj, const char *key, int time, const validate_band *b) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!b || !cJSON_IsNumber(v)) return;
    double lo, hi;
    if (time) validate_band_apply_time(b, v->valuedouble, &lo, &hi);
    else validate_band_apply(b, v->valuedouble, &lo, &hi);
    char name[96];
    snprintf(name, sizeof name, "%s_band", key);
    cJSON *arr = cJSON_AddArrayToObject(obj, name);
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(hi));
}

