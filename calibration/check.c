/* check.c — `simcal check`: the CI regression of committed cost models against their traces.
 *
 * For each models_dir/ *.json that lists traces:
 *   1. every trace (and the base model, if any) must hash to the value recorded at fit time
 *      (a re-measured or edited trace must come with a refitted model);
 *   2. the traces are refitted with the same options and every fitted number of the committed model
 *      (peak_tflops, gemm, attention, memory, kernels, links, collectives; not stderr/fit stats) must
 *      agree within rel_tol (the fit is deterministic, so this catches hand edits of the model and
 *      changes to the fitting code);
 *   3. the committed model predicts every trace point: a table of measured vs predicted times.
 * Models without traces (published specifications) must still load through sim/plan/costmodel.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibration/fit.h"
#include "sim/base/alloc.h"
#include "sim/base/json_read.h"
#include "sim/plan/global_params.h"
#include "calibration/nccl_tests.h"
#include "sim/plan/costmodel.h"

static const char *const compared_sections[] = { "peak_tflops", "sustained", "gemm", "attention", "memory",
                                                  "kernels", "links", "collectives", NULL };

/* Resolve a stored path: traces_dir/basename, else as stored (cwd), else under MOESIM_SOURCE_DIR. */
static void resolve(const char *stored, const char *dir, char *out, size_t cap) {
    if (dir) {
        const char *b = strrchr(stored, '/');
        snprintf(out, cap, "%s/%s", dir, b ? b + 1 : stored);
        return;
    }
    snprintf(out, cap, "%s", stored);
    if (access(out, R_OK) == 0 || stored[0] == '/') return;
    const char *root = getenv("MOESIM_SOURCE_DIR");
    if (root) {
        char alt[1200];
        snprintf(alt, sizeof alt, "%s/%s", root, stored);
        if (access(alt, R_OK) == 0) snprintf(out, cap, "%s", alt);
    }
}

/* Compare every number of `a` (committed) with `b` (refit) under JSON path `path`. */
static int compare_json(const cJSON *a, const cJSON *b, const char *path, double tol, FILE *log,
                        const char *model) {
    if (cJSON_IsNumber(a)) {
        if (!cJSON_IsNumber(b)) {
            fprintf(log, "DRIFT %s: %s: the refit has no such number\n", model, path);
            return 1;
        }
        double x = a->valuedouble, y = b->valuedouble;
        double den = fmax(fmax(fabs(x), fabs(y)), 1e-300);
        if (fabs(x - y) / den > tol) {
            fprintf(log, "DRIFT %s: %s: committed %.6g, refit %.6g (relative difference %.2e > %.0e)\n",
                    model, path, x, y, fabs(x - y) / den, tol);
            return 1;
        }
        return 0;
    }
    if (cJSON_IsNull(a) != cJSON_IsNull(b) && (cJSON_IsNull(a) || cJSON_IsNumber(b))) {
        fprintf(log, "DRIFT %s: %s: committed %s, refit %s\n", model, path, cJSON_IsNull(a) ? "null" : "a number",
                cJSON_IsNull(b) ? "null" : "a number");
        return 1;
    }
    int bad = 0;
    if (cJSON_IsObject(a)) {
        const cJSON *c;
        cJSON_ArrayForEach(c, a) {
            if (!strcmp(c->string, "stderr") || !strcmp(c->string, "fit") || !strcmp(c->string, "tables")) continue;
            char sub[256];
            snprintf(sub, sizeof sub, "%s.%s", path, c->string);
            bad |= compare_json(c, cJSON_GetObjectItemCaseSensitive(b, c->string), sub, tol, log, model);
        }
        cJSON_ArrayForEach(c, b) {   /* sections the refit has and the committed model lacks */
            if (!cJSON_GetObjectItemCaseSensitive(a, c->string) && strcmp(c->string, "stderr") &&
                strcmp(c->string, "fit")) {
                fprintf(log, "DRIFT %s: %s.%s: the refit has it, the committed model does not\n", model,
                        path, c->string);
                bad = 1;
            }
        }
    } else if (cJSON_IsArray(a)) {
        int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
        if (!cJSON_IsArray(b) || na != nb) {
            fprintf(log, "DRIFT %s: %s: %d entries committed, %d refitted\n", model, path, na, nb);
            return 1;
        }
        for (int i = 0; i < na; i++) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s[%d]", path, i);
            bad |= compare_json(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i), sub, tol, log, model);
        }
    }
    return bad;
}

static void print_point_table(const costmodel *cm, const cJSON *model, const trace *t, const char *name,
                              FILE *log) {
    fprintf(log, "# %s: predictions of the committed model\n", name);
    fprintf(log, "# %-14s %-44s %12s %12s %8s\n", "kernel", "shape", "measured_us", "model_us", "err_%");
    double worst = 0, sum2 = 0;
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        const trace_point *p = &t->pts[i];
        double s = fit_predict_point(cm, model, p);
        char shape[128] = "";
        size_t len = 0;
        for (int d = 0; d < p->n_dims && len < sizeof shape - 1; d++)
            len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%s=%.0f", d ? "," : "", p->shape[d].key,
                                    p->shape[d].value);
        if (s < 0) {
            fprintf(log, "  %-14s %-44.44s %12.2f %12s %8s\n", p->kernel, shape, p->time_us, "-", "-");
            continue;
        }
        double e = (s * 1e6 - p->time_us) / p->time_us;
        worst = fmax(worst, fabs(e));
        sum2 += e * e;
        n++;
        fprintf(log, "  %-14s %-44.44s %12.2f %12.2f %+8.1f\n", p->kernel, shape, p->time_us, s * 1e6, 100 * e);
    }
    if (n) fprintf(log, "# %d points: rms relative error %.1f%%, max %.1f%%\n", n, 100 * sqrt(sum2 / n), 100 * worst);
}

/* the joint fit of the global parameters (sim/plan/global_params.h) is not a cost model: it must read
 * as a fit (format, known parameters, values inside their bounds); simrun validate --check-fit is its
 * refit check */
static int is_global_fit(const char *model_path) {
    moe_error e = {0};
    cJSON *d = json_load(model_path, 0, &e);
    const cJSON *f = d ? cJSON_GetObjectItemCaseSensitive(d, "format") : NULL;
    int yes = cJSON_IsString(f) && strcmp(f->valuestring, GLOBAL_FIT_FORMAT) == 0;
    cJSON_Delete(d);
    return yes;
}

static int check_one(const char *model_path, const char *traces_dir, double tol, FILE *log, moe_error *err) {
    if (is_global_fit(model_path)) {
        cJSON *fit = global_fit_load(model_path, err);
        if (!fit) return err->code;
        cJSON_Delete(fit);
        fprintf(log, "ok    %s: the joint fit of the global parameters reads (simrun validate --check-fit refits it)\n",
                model_path);
        return 0;
    }
    costmodel cm;
    int rc = costmodel_load(model_path, &cm, err);
    if (rc) return rc;
    cJSON *model = json_load(model_path, 0, err);
    if (!model) return err->code;
    const cJSON *traces = cJSON_GetObjectItemCaseSensitive(model, "traces");
    int nt = cJSON_IsArray(traces) ? cJSON_GetArraySize(traces) : 0;
    if (nt == 0) {
        fprintf(log, "ok    %s: no traces (%s, measured %s): loads; nothing to refit\n", model_path,
                cm.source, cm.measured ? "true" : "false");
        cJSON_Delete(model);
        return 0;
    }
    char **paths = moe_xcalloc((size_t)nt, sizeof *paths);
    int drift = 0;
    for (int i = 0; i < nt && !rc; i++) {
        const cJSON *e = cJSON_GetArrayItem(traces, i);
        const cJSON *p = json_member(e, "path"), *h = json_member(e, "fnv1a64");
        char where[64];
        snprintf(where, sizeof where, "traces[%d]", i);
        if (!cJSON_IsString(p) || !cJSON_IsString(h)) {
            rc = moe_error_input(err, model_path, where, NULL, "{\"path\": ..., \"fnv1a64\": ...}");
            break;
        }
        paths[i] = moe_xmalloc(1200);
        resolve(p->valuestring, traces_dir, paths[i], 1200);
        char hex[17];
        if ((rc = calib_file_hash(paths[i], hex, err))) break;
        if (strcmp(hex, h->valuestring) != 0) {
            fprintf(log, "DRIFT %s: trace %s changed since the fit (fnv1a64 %s, recorded %s): refit with "
                    "`simcal fit` and commit the model\n", model_path, paths[i], hex, h->valuestring);
            drift = 1;
        }
    }
    /* the models it was fitted over: the base, and the tiles model (simcal fit --tiles) */
    char base_path[1200] = "", tiles_path[1200] = "";
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(model, "base");
    const cJSON *tiles = cJSON_GetObjectItemCaseSensitive(model, "tiles");
    const cJSON *over[2] = {base, tiles};
    char *over_path[2] = {base_path, tiles_path};
    const char *over_key[2] = {"base", "tiles"};
    for (int k = 0; k < 2 && !rc; k++) {
        if (!over[k]) continue;
        const cJSON *p = json_member(over[k], "path"), *h = json_member(over[k], "fnv1a64");
        if (!cJSON_IsString(p) || !cJSON_IsString(h)) {
            rc = moe_error_input(err, model_path, over_key[k], NULL, "{\"path\": ..., \"fnv1a64\": ...}");
        } else {
            resolve(p->valuestring, NULL, over_path[k], sizeof base_path);
            char hex[17];
            if (!(rc = calib_file_hash(over_path[k], hex, err)) && strcmp(hex, h->valuestring) != 0) {
                fprintf(log, "DRIFT %s: %s model %s changed since the fit\n", model_path, over_key[k], over_path[k]);
                drift = 1;
            }
        }
    }
    cJSON *refit = NULL;
    if (!rc) {
        fit_options o = { (const char *const *)paths, nt, base ? base_path : NULL, cm.source, cm.device,
                          tiles ? tiles_path : NULL };
        rc = fit_build_model(&o, &refit, NULL, err);
    }
    if (!rc) {
        for (const char *const *s = compared_sections; *s; s++) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(model, *s);
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(refit, *s);
            if (!a && !b) continue;
            if (!a || !b) {
                fprintf(log, "DRIFT %s: section %s is %s\n", model_path, *s,
                        a ? "missing from the refit" : "missing from the committed model");
                drift = 1;
                continue;
            }
            drift |= compare_json(a, b, *s, tol, log, model_path);
        }
        for (int i = 0; i < nt; i++) {
            trace t;
            if (trace_read(paths[i], &t, err) == 0) {
                print_point_table(&cm, model, &t, paths[i], log);
                trace_free(&t);
            }
        }
        fprintf(log, "%s %s: %d trace(s) refitted, parameters %s (relative tolerance %.0e)\n",
                drift ? "FAIL " : "ok   ", model_path, nt, drift ? "DRIFTED" : "agree", tol);
    }
    for (int i = 0; i < nt; i++) free(paths[i]);
    free(paths);
    cJSON_Delete(refit);
    cJSON_Delete(model);
    if (rc) return rc;
    return drift ? EXIT_RUNTIME : 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int fit_check_models(const char *models_dir, const char *traces_dir, double tol, FILE *log, moe_error *err) {
    DIR *d = opendir(models_dir);
    if (!d) return moe_error_input(err, models_dir, NULL, NULL, "a readable directory of model JSON files");
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json")) names[n++] = moe_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);   /* deterministic order */
    int worst = 0;
    for (int i = 0; i < n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", models_dir, names[i]);
        moe_error e1 = { 0, "" };
        int rc = check_one(path, traces_dir, tol, log, &e1);
        if (rc == EXIT_BADINPUT) {
            fprintf(log, "ERROR %s\n", e1.msg);
            if (worst != EXIT_BADINPUT) *err = e1;
            worst = EXIT_BADINPUT;
        } else if (rc && !worst) {
            worst = rc;
            if (e1.msg[0]) fprintf(log, "ERROR %s\n", e1.msg);
            moe_error_set(err, rc, "%s: drift (see above)", path);
        }
        free(names[i]);
    }
    if (n == 0) return moe_error_input(err, models_dir, NULL, NULL, "at least one *.json model");
    return worst;
}
