/* global_params.c — the registry of jointly fitted parameters and the committed fit (global_params.h). */
#include "sim/plan/global_params.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/base/json_read.h"
#include "sim/plan/recipes.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/scenario/scenario_paths.h"

/* Bounds: sustained below 0.4 or above 1.2 of the burst rate is no clock a datacenter GPU runs at
 * (the H200's measured 0.84: costmodel.h); a framework call below 3 us is below a bare CUDA launch
 * (host_costs.c: 3.7 us measured), above 60 us is five times PyTorch's slowest measured entry point
 * (nn.Linear's module call, 27.3 us). Start values (`prior`): sustained 1 (the published tables are
 * fitted at 1, costmodel.h), call 12.0 us (an autograd-recorded op, host_costs.c), grouped rate 1. */
/* Priors in the fit: sustained log-normal around the H200's measured 0.84 (costmodel.h) with a sd of
 * 0.2 in the log (the fraction a power-capped datacenter GPU keeps is not known per kind to better
 * than about 20%); a framework call around the measured autograd-recorded op, 12.0 us, sd 0.5 in the
 * log (the counted calls mix entry points from 8.9 to 27.3 us); the grouped rate has none (nothing
 * measured). Grouped rate bounds: 0.1 (an expert's GEMMs ten times slower than the dense GEMM of
 * their shape) to 1.5 (a grouped kernel well above the dense tables' fitted ceiling). */
static const global_param PARAMS[] = {
    {.path = "cluster.gpu.sustained", .scope = GP_SCOPE_GPU, .prior = 1.0, .lo = 0.4, .hi = 1.2, .unit = "",
     .prior_median = 0.84, .prior_sd_log = 0.2},
    {.path = "host.call_us", .scope = GP_SCOPE_FRAMEWORK, .prior = 12.0, .lo = 3.0, .hi = 60.0, .unit = "us",
     .prior_median = 12.0, .prior_sd_log = 0.5},
    {.path = "cluster.gpu.grouped_gemm_rate", .scope = GP_SCOPE_TE_GROUPED, .prior = 1.0, .lo = 0.1, .hi = 1.5, .unit = ""},
};
#define N_PARAMS (int)(sizeof PARAMS / sizeof PARAMS[0])

const global_param *global_params(int *n) {
    *n = N_PARAMS;
    return PARAMS;
}

int global_param_scope(const global_param *p, const scenario *s, char *out, size_t cap) {
    if (p->scope == GP_SCOPE_TE_GROUPED) {
        /* DeepSeek's blockwise FP8 on Hopper: DeepGEMM's grouped kernels, the table's own measurements
         * (calibration/traces/published-deepgemm-h800-*.json) */
        gpu_arch a = gpu_arch_of(&s->cluster.gpu);
        if (s->precision.compute == DT_FP8 && a == GPU_HOPPER) return -1;
        /* per architecture: the GEMM tables and cuBLAS's kernels are each architecture's own */
        snprintf(out, cap, "%s", gpu_arch_name(a));
        return 0;
    }
    if (p->scope == GP_SCOPE_FRAMEWORK) {
        if (s->host.framework == HOST_NONE) return -1;
        snprintf(out, cap, "%s", scn_host_framework_names[s->host.framework]);
        return 0;
    }
    /* the H800 is the H100's GH100 SXM5 die at the same clocks and 700 W, with NVLink cut to 400 GB/s
     * (NVIDIA H800 datasheet; the presets give both 989 BF16 TFLOP/s): one kind for the fit */
    snprintf(out, cap, "%s", strcmp(s->cluster.gpu.name, "H800") == 0 ? "H100" : s->cluster.gpu.name);
    return 0;
}

/* ---- the committed fit ------------------------------------------------------------------------------ */

static const global_param *param_named(const char *path) {
    for (int i = 0; i < N_PARAMS; i++)
        if (strcmp(PARAMS[i].path, path) == 0) return &PARAMS[i];
    return NULL;
}

cJSON *global_fit_load(const char *path, moe_error *err) {
    cJSON *doc = json_load(path, 0, err);
    if (!doc) return NULL;
    json_reader r = {path, err};
    static const char *const TOP[] = {"format", "about", "command", "loss", "params", "cases", "summary", NULL};
    static const char *const ROW[] = {"path", "scope", "value", "ci95", "cases", "prior", "lo", "hi", "unit", NULL};
    const cJSON *fmt = json_member(doc, "format"), *params = NULL;
    int rc = 0;
    if (!cJSON_IsObject(doc)) rc = json_bad(&r, "(root)", doc, "a JSON object");
    else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, GLOBAL_FIT_FORMAT) != 0)
        rc = json_bad(&r, "format", fmt, "\"" GLOBAL_FIT_FORMAT "\"");
    if (!rc) rc = json_check_keys(&r, doc, "", TOP);
    if (!rc) rc = json_get_array(&r, doc, "", "params", JSON_REQUIRED, &params);
    int i = 0;
    for (const cJSON *row = params ? params->child : NULL; row && !rc; row = row->next, i++) {
        char at[48], p[128], scope[SCN_NAME_MAX];
        snprintf(at, sizeof at, "params[%d]", i);
        double v = 0;
        if (!cJSON_IsObject(row)) { rc = json_bad(&r, at, row, "an object (one fitted parameter)"); break; }
        rc = json_check_keys(&r, row, at, ROW);
        if (!rc) rc = json_get_string(&r, row, at, "path", JSON_REQUIRED | JSON_NONEMPTY, p, sizeof p);
        if (!rc) rc = json_get_string(&r, row, at, "scope", JSON_REQUIRED | JSON_NONEMPTY, scope, sizeof scope);
        const global_param *g = rc ? NULL : param_named(p);
        if (!rc && !g) {
            char key[64];
            snprintf(key, sizeof key, "%s.path", at);
            rc = json_bad(&r, key, json_member(row, "path"), "a parameter of the registry (sim/plan/global_params.c: "
                          "cluster.gpu.sustained, host.call_us, cluster.gpu.grouped_gemm_rate)");
        }
        if (!rc) rc = json_get_number(&r, row, at, "value", JSON_REQUIRED, g->lo, g->hi, &v);
    }
    if (rc) { cJSON_Delete(doc); return NULL; }
    return doc;
}

static struct {
    int loaded;          /* 0: not tried, 1: read, -1: none */
    cJSON *doc;
    char file[SCN_PATH_MAX * 2];
} fit;

void global_params_reload(void) {
    cJSON_Delete(fit.doc);
    memset(&fit, 0, sizeof fit);
}

int global_param_value(const scenario *s, const char *path, double *out, const char **src) {
    const global_param *g = param_named(path);
    char scope[SCN_NAME_MAX];
    if (!g || global_param_scope(g, s, scope, sizeof scope)) return -1;
    if (!fit.loaded) {
        moe_error err = {0};
        fit.loaded = -1;
        if (scenario_resolve_path(s, GLOBAL_FIT_FILE, fit.file, sizeof fit.file) == 0) {
            /* a committed fit that does not read is an error of the repository, not of the scenario: it is
             * reported once and the built-in values are used */
            fit.doc = global_fit_load(fit.file, &err);
            if (fit.doc) fit.loaded = 1;
            else fprintf(stderr, "moesim: %s; the fitted parameters are not used\n", err.msg);
        }
    }
    if (fit.loaded < 0) return -1;
    for (const cJSON *row = json_member(fit.doc, "params")->child; row; row = row->next) {
        const cJSON *p = json_member(row, "path"), *sc = json_member(row, "scope"), *v = json_member(row, "value");
        if (strcmp(p->valuestring, path) == 0 && strcmp(sc->valuestring, scope) == 0) {
            *out = v->valuedouble;
            if (src) *src = fit.file;
            return 0;
        }
    }
    return -1;
}
