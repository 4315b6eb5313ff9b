/* validate.c — published cases vs predictions (validate.h). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "sim/point/validate.h"
#include "sim/base/alloc.h"
#include "sim/base/json_read.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/alloc.h"
#include "sim/base/fileio.h"
#include "sim/plan/global_params.h"
#include "sim/point/global_fit.h"
#include "sim/point/point_eval.h"
#include "sim/point/validation_doc.h"
#include "sim/report/point_pool.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/deepep_bench.h"

#define NAME_MAX_LEN 64

typedef enum { CASE_STEP = 0, CASE_DEEPEP } case_kind;

static const char *const STEP_METRICS[] = {"tokens_per_s_per_gpu", "tflops_per_gpu", "step_time_s", NULL};
static const char *const DEEPEP_METRICS[] = {"dispatch_rdma_GBps", "dispatch_nvl_GBps", "combine_rdma_GBps",
                                             "combine_nvl_GBps", NULL};
static const char *const SOURCE_KEYS[] = {"document", "repository", "commit", "file", "table", "row", NULL};
static const char *const CASE_KEYS[] = {"name", "kind", "scenario", "not_expressible", "metric", "published", "source",
                                        "features", "not_modelled", "calibration_point", "notes", "deepep", NULL};
static const char *const DEEPEP_KEYS[] = {"ep", "tokens", "hidden", "topk", "experts", "topk_groups", "dispatch",
                                          "seed", NULL};

typedef struct {
    char name[NAME_MAX_LEN];
    case_kind kind;
    char scenario[SCN_PATH_MAX * 2];   /* resolved against the cases file's folder ("" when not expressible) */
    char not_expressible[512];         /* why the run cannot be stated as a scenario ("" when it can) */
    char metric[32];
    double published;
    deepep_case dp;
    const cJSON *json;                 /* the case object (source, features, notes are copied out) */
} vcase;

typedef struct {
    const char *file;
    int n;
    vcase *cases;
    cJSON *root;
} case_set;

/* ---- reading the cases file -------------------------------------------------------------------- */

static int one_of(const char *s, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0) return i;
    return -1;
}

static int check_keys(const char *file, const cJSON *obj, const char *path, const char *const *allowed,
                      moe_error *err) {
    for (const cJSON *k = obj->child; k; k = k->next)
        if (one_of(k->string, allowed) < 0) {
            char p[256];
            snprintf(p, sizeof p, "%s.%s", path, k->string);
            const char *near = moe_did_you_mean(k->string, allowed);
            return moe_error_input(err, file, p, NULL, "no such field%s%s", near ? "; did you mean " : "",
                                   near ? near : "");
        }
    return 0;
}

static int get_str(const char *file, const cJSON *obj, const char *path, const char *key, int required,
                   char *dst, size_t cap, moe_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!v && !required) return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= cap) {
        char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
        int rc = moe_error_input(err, file, p, txt ? txt : "nothing", "a non-empty string of < %zu characters", cap);
        free(txt);
        return rc;
    }
    snprintf(dst, cap, "%s", v->valuestring);
    return 0;
}

static int get_num(const char *file, const cJSON *obj, const char *path, const char *key, int required,
                   double lo, double hi, int integer, double *out, moe_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!v && !required) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi ||
        (integer && v->valuedouble != floor(v->valuedouble))) {
        char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
        int rc = moe_error_input(err, file, p, txt ? txt : "nothing", "%s in [%g, %g]",
                                 integer ? "an integer" : "a number", lo, hi);
        free(txt);
        return rc;
    }
    *out = v->valuedouble;
    return 0;
}

/* obj.key: an array of strings (`what` names their meaning in the message) */
static int get_str_list(const char *file, const cJSON *obj, const char *path, const char *key, int required,
                        const char *what, moe_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v && !required) return 0;
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    int ok = cJSON_IsArray(v);
    for (const cJSON *s = ok ? v->child : NULL; s && ok; s = s->next) ok = cJSON_IsString(s);
    if (ok) return 0;
    char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
    char shown[64];
    snprintf(shown, sizeof shown, "%s", txt ? txt : "nothing");
    free(txt);
    return moe_error_input(err, file, p, shown, "an array of strings (%s)", what);
}

static int read_deepep(const char *file, const cJSON *o, const char *path, deepep_case *d, moe_error *err) {
    if (!cJSON_IsObject(o)) return moe_error_input(err, file, path, NULL, "an object (the DeepEP benchmark case)");
    if (check_keys(file, o, path, DEEPEP_KEYS, err)) return EXIT_BADINPUT;
    double ep = 0, tokens = 0, hidden = 0, topk = 0, experts = 0, groups = 0, seed = 1;
    if (get_num(file, o, path, "ep", 1, 8, 4096, 1, &ep, err) ||
        get_num(file, o, path, "tokens", 1, 1, 1 << 20, 1, &tokens, err) ||
        get_num(file, o, path, "hidden", 1, 1, 1 << 20, 1, &hidden, err) ||
        get_num(file, o, path, "topk", 1, 1, 64, 1, &topk, err) ||
        get_num(file, o, path, "experts", 1, 1, 1 << 16, 1, &experts, err) ||
        get_num(file, o, path, "topk_groups", 0, 0, 1024, 1, &groups, err) ||
        get_num(file, o, path, "seed", 0, 0, 4294967295.0, 1, &seed, err))
        return EXIT_BADINPUT;
    char dt[16] = "fp8";
    if (get_str(file, o, path, "dispatch", 0, dt, sizeof dt, err)) return EXIT_BADINPUT;
    char p[256];
    snprintf(p, sizeof p, "%s.dispatch", path);
    if (strcmp(dt, "fp8") && strcmp(dt, "bf16"))
        return moe_error_input(err, file, p, dt, "\"fp8\" (E4M3 with one FP32 scale per 128) or \"bf16\"");
    *d = (deepep_case){.ep = (int)ep, .tokens = (int)tokens, .hidden = (int)hidden, .topk = (int)topk,
                       .experts = (int)experts, .topk_groups = (int)groups,
                       /* DeepEP's fp8_factor (1 + 4/128) / 2 of the BF16 size: one FP32 scale per 128 */
                       .dispatch_elt_B = strcmp(dt, "fp8") == 0 ? 1.0 + 4.0 / 128.0 : 2.0,
                       .combine_elt_B = 2.0, .seed = (uint64_t)seed};
    return 0;
}

static int read_case(case_set *cs, const cJSON *o, int i, const char *dir, vcase *c, moe_error *err) {
    const char *f = cs->file;
    char path[64];
    snprintf(path, sizeof path, "cases[%d]", i);
    if (!cJSON_IsObject(o)) return moe_error_input(err, f, path, NULL, "an object (one published case)");
    if (check_keys(f, o, path, CASE_KEYS, err)) return EXIT_BADINPUT;
    memset(c, 0, sizeof *c);
    c->json = o;
    if (get_str(f, o, path, "name", 1, c->name, sizeof c->name, err)) return EXIT_BADINPUT;
    for (const char *p = c->name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            return moe_error_input(err, f, path, c->name, "a name of lower-case letters, digits, '-' and '.'");
    for (int j = 0; j < i; j++)
        if (strcmp(cs->cases[j].name, c->name) == 0)
            return moe_error_input(err, f, path, c->name, "a name no other case has");
    char kind[16] = "step";
    if (get_str(f, o, path, "kind", 0, kind, sizeof kind, err)) return EXIT_BADINPUT;
    if (strcmp(kind, "step") == 0) c->kind = CASE_STEP;
    else if (strcmp(kind, "deepep") == 0) c->kind = CASE_DEEPEP;
    else return moe_error_input(err, f, path, kind, "kind \"step\" (a scenario) or \"deepep\" (a DeepEP benchmark case)");
    /* a step case is either a scenario or the reason it cannot be one (kept in the table, not run) */
    const int unexpressible = cJSON_GetObjectItemCaseSensitive(o, "not_expressible") != NULL;
    if (unexpressible) {
        char p[96];
        snprintf(p, sizeof p, "%s.not_expressible", path);
        if (c->kind != CASE_STEP || cJSON_GetObjectItemCaseSensitive(o, "scenario"))
            return moe_error_input(err, f, p, NULL, "a reason in a step case without a \"scenario\" (a case is "
                                   "either run from its scenario or listed as not expressible)");
        if (get_str(f, o, path, "not_expressible", 1, c->not_expressible, sizeof c->not_expressible, err))
            return EXIT_BADINPUT;
    } else {
        char scn[SCN_PATH_MAX];
        if (get_str(f, o, path, "scenario", 1, scn, sizeof scn, err)) return EXIT_BADINPUT;
        snprintf(c->scenario, sizeof c->scenario, "%s%s%s", scn[0] == '/' ? "" : dir, scn[0] == '/' ? "" : "/", scn);
    }
    if (get_str(f, o, path, "metric", 1, c->metric, sizeof c->metric, err)) return EXIT_BADINPUT;
    const char *const *metrics = c->kind == CASE_STEP ? STEP_METRICS : DEEPEP_METRICS;
    if (one_of(c->metric, metrics) < 0) {
        char p[96];
        snprintf(p, sizeof p, "%s.metric", path);
        return moe_error_input(err, f, p, c->metric, "one of the %s metrics (%s, ...)", kind, metrics[0]);
    }
    if (get_num(f, o, path, "published", 1, 1e-12, 1e15, 0, &c->published, err)) return EXIT_BADINPUT;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "source");
    char p[96];
    snprintf(p, sizeof p, "%s.source", path);
    if (!cJSON_IsObject(src)) return moe_error_input(err, f, p, NULL, "an object naming document, table and row");
    if (check_keys(f, src, p, SOURCE_KEYS, err)) return EXIT_BADINPUT;
    char buf[1024];
    if (get_str(f, src, p, "document", 1, buf, sizeof buf, err) || get_str(f, src, p, "table", 1, buf, sizeof buf, err) ||
        get_str(f, src, p, "row", 1, buf, sizeof buf, err))
        return EXIT_BADINPUT;
    if (get_str_list(f, o, path, "features", 1, "the run's software features", err) ||
        get_str_list(f, o, path, "not_modelled", 0, "what the run uses that moesim does not model", err))
        return EXIT_BADINPUT;
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(o, "calibration_point");
    snprintf(p, sizeof p, "%s.calibration_point", path);
    if (cal && !cJSON_IsBool(cal)) return moe_error_input(err, f, p, NULL, "true or false");
    char notes[2048];
    if (get_str(f, o, path, "notes", 0, notes, sizeof notes, err)) return EXIT_BADINPUT;
    const cJSON *dp = cJSON_GetObjectItemCaseSensitive(o, "deepep");
    snprintf(p, sizeof p, "%s.deepep", path);
    if (c->kind == CASE_DEEPEP) return read_deepep(f, dp, p, &c->dp, err);
    if (dp) return moe_error_input(err, f, p, NULL, "no \"deepep\" object in a step case");
    return 0;
}

static void case_set_free(case_set *cs) {
    free(cs->cases);
    cJSON_Delete(cs->root);
    memset(cs, 0, sizeof *cs);
}

static int load_cases(const char *file, case_set *cs, moe_error *err) {
    memset(cs, 0, sizeof *cs);
    cs->file = file;
    cs->root = json_load(file, 0, err);
    if (!cs->root) return err->code;
    if (!cJSON_IsObject(cs->root)) { case_set_free(cs); return moe_error_input(err, file, NULL, NULL, "a JSON object"); }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(cs->root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, VALIDATE_FORMAT) != 0) {
        case_set_free(cs);
        return moe_error_input(err, file, "format", NULL, "\"" VALIDATE_FORMAT "\"");
    }
    static const char *const TOP[] = {"format", "about", "cases", NULL};
    if (check_keys(file, cs->root, "(root)", TOP, err)) { case_set_free(cs); return EXIT_BADINPUT; }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(cs->root, "cases");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1) {
        case_set_free(cs);
        return moe_error_input(err, file, "cases", NULL, "a non-empty array of cases");
    }
    char dir[SCN_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    cs->n = cJSON_GetArraySize(arr);
    cs->cases = moe_xcalloc((size_t)cs->n, sizeof *cs->cases);
    int i = 0;
    for (const cJSON *o = arr->child; o; o = o->next, i++)
        if (read_case(cs, o, i, dir, &cs->cases[i], err)) { case_set_free(cs); return EXIT_BADINPUT; }
    return 0;
}

/* ---- evaluating one case (in a worker process) ------------------------------------------------ */

static double deepep_metric(const deepep_result *r, const char *metric) {
    if (strcmp(metric, "dispatch_rdma_GBps") == 0) return r->dispatch_rdma_GBps;
    if (strcmp(metric, "dispatch_nvl_GBps") == 0) return r->dispatch_nvl_GBps;
    if (strcmp(metric, "combine_rdma_GBps") == 0) return r->combine_rdma_GBps;
    return r->combine_nvl_GBps;
}

/* The case's result object: the case as given (name, kind, metric, published, source, features,
 * calibration_point, notes) plus predicted / error_pct (and the plan's for step cases), status and
 * detail. */
static cJSON *result_object(const vcase *c, int id) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "kind", c->kind == CASE_STEP ? "step" : "deepep");
    cJSON_AddStringToObject(o, "metric", c->metric);
    cJSON_AddNumberToObject(o, "published", c->published);
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(c->json, "calibration_point");
    cJSON_AddBoolToObject(o, "calibration_point", cJSON_IsTrue(cal));
    cJSON_AddItemToObject(o, "source", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c->json, "source"), 1));
    cJSON_AddItemToObject(o, "features", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c->json, "features"), 1));
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c->json, "not_modelled");
    if (nm) cJSON_AddItemToObject(o, "not_modelled", cJSON_Duplicate(nm, 1));
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(c->json, "notes");
    if (notes) cJSON_AddItemToObject(o, "notes", cJSON_Duplicate(notes, 1));
    return o;
}

static void set_prediction(cJSON *o, const char *key, const char *err_key, double v, double published) {
    if (!isfinite(v)) return;
    cJSON_AddNumberToObject(o, key, v);
    cJSON_AddNumberToObject(o, err_key, 100.0 * (v - published) / published);
}

static void set_status(cJSON *o, const char *status, const char *detail) {
    cJSON_AddStringToObject(o, "status", status);
    if (detail) cJSON_AddStringToObject(o, "detail", detail);
}

/* An evaluated case's status: "ok" within VALIDATE_OK_TOL_PCT of the published value, else "miss"
 * (also when the metric could not be predicted: no error to hold it to). */
static const char *verdict(const cJSON *o) {
    double e = validation_number(o, "error_pct");
    return isfinite(e) && fabs(e) <= VALIDATE_OK_TOL_PCT ? "ok" : "miss";
}

/* A pass over the cases: the case set, and the values the global parameters take in it (the fit's
 * trial values): over_val[id * n_over + j] is field over_path[j] of case id, NAN to leave it auto. */
typedef struct {
    const case_set *cs;
    int n_over;
    const char *const *over_path;
    const double *over_val;
    int n_set;                         /* --set PATH=VALUE, applied first */
    char set_path[VALIDATE_MAX_SET][128];
    cJSON *set_val[VALIDATE_MAX_SET];
} eval_ctx;

static int apply_overrides(const eval_ctx *x, int id, scenario *s, moe_error *e) {
    for (int j = 0; j < x->n_set; j++)
        if (scenario_set_path(s, x->set_path[j], x->set_val[j], e)) return e->code;
    for (int j = 0; j < x->n_over && x->over_val; j++) {
        double v = x->over_val[(size_t)id * x->n_over + j];
        if (isnan(v)) continue;
        cJSON *num = cJSON_CreateNumber(v);
        int rc = scenario_set_path(s, x->over_path[j], num, e);
        cJSON_Delete(num);
        if (rc) return rc;
    }
    return 0;
}

static cJSON *eval_case(int id, void *vctx, moe_error *err) {
    const eval_ctx *x = vctx;
    const vcase *c = &x->cs->cases[id];
    cJSON *o = result_object(c, id);
    if (c->not_expressible[0]) {
        set_status(o, "not expressible", c->not_expressible);
        return o;
    }
    scenario s;
    moe_error e = {0};
    if (scenario_load(c->scenario, &s, NULL, &e)) {
        if (e.code == EXIT_BADINPUT) set_status(o, "not expressible", e.msg);
        else set_status(o, "failed", e.msg);
        return o;
    }
    if (apply_overrides(x, id, &s, &e)) {
        set_status(o, "failed", e.msg);
        return o;
    }
    if (c->kind == CASE_DEEPEP) {
        deepep_result r;
        if (deepep_bench_run(&s, &c->dp, &r, &e)) {
            set_status(o, "failed", e.msg);
            return o;
        }
        set_prediction(o, "predicted", "error_pct", deepep_metric(&r, c->metric), c->published);
        set_status(o, verdict(o), NULL);
        return o;
    }
    cJSON_AddBoolToObject(o, "moe", s.model.experts > 0);
    point_opts po = {.levels = LEVEL_PLAN | LEVEL_STEP, .reproducible = 1};
    cJSON *pt = point_evaluate(&s, 0, NULL, &po, &e);
    if (!pt) {
        set_status(o, e.code == EXIT_BADINPUT ? "not expressible" : "failed", e.msg);
        return o;
    }
    set_prediction(o, "predicted", "error_pct", validation_number(cJSON_GetObjectItemCaseSensitive(pt, "step"), c->metric),
                   c->published);
    set_prediction(o, "plan_predicted", "plan_error_pct",
                   validation_number(cJSON_GetObjectItemCaseSensitive(pt, "plan"), c->metric), c->published);
    cJSON_Delete(pt);
    set_status(o, verdict(o), NULL);
    (void)err;
    return o;
}

/* ---- the document ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* counts and |error| statistics of error `key` over the cases that ran (all, or only out-of-sample ones) */
static cJSON *summary_of(const cJSON *cases, int out_of_sample_only, const char *key) {
    int n = 0, ok = 0, within = 0, unexpressible = 0;
    double *abs_e = moe_xcalloc((size_t)cJSON_GetArraySize(cases) + 1, sizeof(double)), mx = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        if (out_of_sample_only && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "calibration_point"))) continue;
        n++;
        unexpressible += strcmp(validation_str(c, "status"), "not expressible") == 0;
        double e = validation_number(c, key);
        if (!validation_case_ran(c) || !isfinite(e)) continue;
        abs_e[ok++] = fabs(e);
        within += fabs(e) <= VALIDATE_OK_TOL_PCT;
        if (fabs(e) > mx) mx = fabs(e);
    }
    qsort(abs_e, (size_t)ok, sizeof(double), cmp_double);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "cases", n);
    cJSON_AddNumberToObject(s, "evaluated", ok);
    cJSON_AddNumberToObject(s, "not_expressible", unexpressible);
    cJSON_AddNumberToObject(s, "tolerance_pct", VALIDATE_OK_TOL_PCT);
    cJSON_AddNumberToObject(s, "ok", within);
    cJSON_AddNumberToObject(s, "miss", ok - within);
    if (ok) {
        double med = ok % 2 ? abs_e[ok / 2] : 0.5 * (abs_e[ok / 2 - 1] + abs_e[ok / 2]);
        cJSON_AddNumberToObject(s, "median_abs_error_pct", med);
        cJSON_AddNumberToObject(s, "max_abs_error_pct", mx);
    }
    free(abs_e);
    return s;
}

static cJSON *document_of(cJSON *cases) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", VALIDATE_FORMAT "-results");
    for (cJSON *c = cases->child; c; c = c->next) cJSON_DeleteItemFromObjectCaseSensitive(c, "id");
    cJSON_AddItemToObject(doc, "summary", summary_of(cases, 0, "error_pct"));
    cJSON_AddItemToObject(doc, "summary_out_of_sample", summary_of(cases, 1, "error_pct"));
    cJSON *bands = validate_bands_json(cases);
    if (bands) {
        /* the left-out errors of the step cases (the DeepEP cases have no global parameter to refit) */
        cJSON *loo = summary_of(cases, 0, "loo_error_pct");
        cJSON_AddItemToObject(doc, "summary_left_out", loo);
        cJSON_AddItemToObject(doc, "bands", bands);
    }
    cJSON_AddItemToObject(doc, "cases", cases);
    return doc;
}

/* `text` cut to cap - 1 characters, "..." marking a cut */
static void json_clip(const char *text, char *buf, size_t cap) {
    size_t n = strlen(text);
    if (n < cap) { memcpy(buf, text, n + 1); return; }
    memcpy(buf, text, cap - 4);
    memcpy(buf + cap - 4, "...", 4);
}

static void fmt_num(char *buf, size_t cap, double v) {
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else if (fabs(v) >= 100) snprintf(buf, cap, "%.0f", v);
    else snprintf(buf, cap, "%.3g", v);
}

static void fmt_pct(char *buf, size_t cap, double v) {
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%+.1f", v);
}

void validate_print(FILE *out, const cJSON *doc) {
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases");
    fprintf(out, "%-32s %-22s %10s %10s %8s %9s %10s %8s  %s\n", "case", "metric", "published", "predicted", "error%",
            "left-out%", "plan", "plan%", "status");
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        char pub[32], pred[32], e[32], pl[32], pe[32], lo[32];
        fmt_pct(lo, sizeof lo, validation_number(c, "loo_error_pct"));
        fmt_num(pub, sizeof pub, validation_number(c, "published"));
        fmt_num(pred, sizeof pred, validation_number(c, "predicted"));
        fmt_pct(e, sizeof e, validation_number(c, "error_pct"));
        fmt_num(pl, sizeof pl, validation_number(c, "plan_predicted"));
        fmt_pct(pe, sizeof pe, validation_number(c, "plan_error_pct"));
        const char *st = validation_str(c, "status"), *det = validation_str(c, "detail");
        int cal = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "calibration_point"));
        /* the loader's message names the missing field first; the JSON keeps all of it */
        const char *sep = strstr(det, ".json: ");
        if (sep) det = sep + 7;   /* the scenario's file name: the case's name says which */
        char shown[112];
        json_clip(det, shown, sizeof shown);
        fprintf(out, "%-32s %-22s %10s %10s %8s %9s %10s %8s  %s%s%s%s\n", validation_str(c, "name"), validation_str(c, "metric"), pub,
                pred, e, lo, pl, pe, st, *det ? ": " : "", shown, cal ? " [calibration point]" : "");
    }
    const char *labels[3] = {"summary", "summary_out_of_sample", "summary_left_out"};
    const char *titles[3] = {"all cases", "out of sample", "left out (each case predicted by the global fit without it)"};
    for (int i = 0; i < 3; i++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, labels[i]);
        if (!s) continue;
        fprintf(out, "%s: %d cases", titles[i], (int)validation_number(s, "cases"));
        if (validation_number(s, "not_expressible") > 0)
            fprintf(out, ", %d not expressible", (int)validation_number(s, "not_expressible"));
        fprintf(out, ", %d evaluated: %d ok (|error| <= %g%%), %d miss", (int)validation_number(s, "evaluated"),
                (int)validation_number(s, "ok"), validation_number(s, "tolerance_pct"), (int)validation_number(s, "miss"));
        if (isfinite(validation_number(s, "median_abs_error_pct")))
            fprintf(out, ", median |error| %.1f%%, max |error| %.1f%%", validation_number(s, "median_abs_error_pct"),
                    validation_number(s, "max_abs_error_pct"));
        fputc('\n', out);
    }
    /* the error bands every result carries (validate_band_for): the residuals of each kind */
    const char *kinds[2] = {"dense", "MoE"};
    for (int k = 0; k < 2; k++) {
        validate_band b;
        if (validate_band_of(doc, k, &b) != 0) continue;
        if (b.left_out)
            fprintf(out, "error band, %s models (%d step cases, left out): predicted / published - 1 in [%+.1f%%, %+.1f%%], "
                    "width %.1f points; stated coverage %.0f%%, holds %.0f%% of the left-out cases%s\n", kinds[k], b.cases,
                    100.0 * b.min_rel_err, 100.0 * b.max_rel_err, 100.0 * (b.max_rel_err - b.min_rel_err),
                    100.0 * VALIDATE_BAND_COVERAGE, 100.0 * b.coverage,
                    b.coverage + 1e-9 < VALIDATE_BAND_COVERAGE ? " (BELOW the stated coverage)" : "");
        else
            fprintf(out, "error band, %s models (%d step case%s, in sample): predicted / published - 1 in [%+.1f%%, %+.1f%%]\n",
                    kinds[k], b.cases, b.cases == 1 ? "" : "s", 100.0 * b.min_rel_err, 100.0 * b.max_rel_err);
    }
}

static char *csv_of(const cJSON *doc) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "case,kind,metric,published,predicted,error_pct,plan_predicted,plan_error_pct,loo_predicted,loo_error_pct,status,"
            "calibration_point\n");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases");
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        double v[7] = {validation_number(c, "published"), validation_number(c, "predicted"), validation_number(c, "error_pct"),
                       validation_number(c, "plan_predicted"), validation_number(c, "plan_error_pct"),
                       validation_number(c, "loo_predicted"), validation_number(c, "loo_error_pct")};
        fprintf(f, "%s,%s,%s", validation_str(c, "name"), validation_str(c, "kind"), validation_str(c, "metric"));
        for (int i = 0; i < 7; i++) {
            if (isfinite(v[i])) fprintf(f, ",%.6g", v[i]);
            else fputs(",", f);
        }
        fprintf(f, ",%s,%s\n", validation_str(c, "status"),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "calibration_point")) ? "true" : "false");
    }
    fclose(f);
    return buf;
}

static int write_outputs(const char *dir, const cJSON *doc, moe_error *err) {
    if (make_dirs(dir, err)) return err->code;
    char path[SCN_PATH_MAX * 2];
    char *json = cJSON_Print(doc), *csv = csv_of(doc);
    int rc = (!json || !csv) ? moe_error_set(err, EXIT_RUNTIME, "out of memory writing the validation table") : 0;
    snprintf(path, sizeof path, "%s/validation.json", dir);
    if (!rc) {
        size_t n = strlen(json);
        char *j2 = moe_xmalloc(n + 2);
        if (!j2) rc = moe_error_set(err, EXIT_RUNTIME, "out of memory");
        else {
            memcpy(j2, json, n);
            j2[n] = '\n';
            j2[n + 1] = '\0';
            rc = write_file_atomic(path, j2, err);
            free(j2);
        }
    }
    snprintf(path, sizeof path, "%s/validation.csv", dir);
    if (!rc) rc = write_file_atomic(path, csv, err);
    free(json);
    free(csv);
    return rc;
}

int validate_compare(const cJSON *doc, const cJSON *baseline, double tol_pp, FILE *out) {
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(doc, "cases");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(baseline, "cases");
    int moved = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
        const char *name = validation_str(c, "name");
        const cJSON *b = NULL;
        for (const cJSON *x = base ? base->child : NULL; x && !b; x = x->next)
            if (strcmp(validation_str(x, "name"), name) == 0) b = x;
        if (!b) { fprintf(out, "  %s: not in the baseline\n", name); moved++; continue; }
        if (strcmp(validation_str(c, "status"), validation_str(b, "status")) != 0) {
            fprintf(out, "  %s: status %s, baseline %s\n", name, validation_str(c, "status"), validation_str(b, "status"));
            moved++;
            continue;
        }
        /* a document without left-out errors (--no-loo) is compared in sample only */
        const char *keys[3] = {"error_pct", "plan_error_pct", "loo_error_pct"};
        const int n_keys = cJSON_GetObjectItemCaseSensitive(doc, "summary_left_out") ? 3 : 2;
        for (int k = 0; k < n_keys; k++) {
            double e = validation_number(c, keys[k]), eb = validation_number(b, keys[k]);
            if (isfinite(e) != isfinite(eb) || (isfinite(e) && fabs(e - eb) > tol_pp)) {
                fprintf(out, "  %s: %s %+.2f, baseline %+.2f (moved by more than %.1f points)\n", name, keys[k], e, eb,
                        tol_pp);
                moved++;
            }
        }
    }
    for (const cJSON *b = base ? base->child : NULL; b; b = b->next) {
        int found = 0;
        for (const cJSON *c = cases ? cases->child : NULL; c && !found; c = c->next)
            found = strcmp(validation_str(c, "name"), validation_str(b, "name")) == 0;
        if (!found) { fprintf(out, "  %s: in the baseline but not among the cases\n", validation_str(b, "name")); moved++; }
    }
    return moved;
}

/* The pool's side of a case: its result object as JSON text (the record the worker sends). */
typedef struct {
    const case_set *cs;
    cJSON **results;   /* by case id */
} collected;

typedef struct {
    eval_ctx *x;
    collected *got;
    const int *ids;   /* point k is case ids[k] (NULL: case k) */
} collect_ctx;

static void eval_case_record(long k, void *vctx, record_buf *out) {
    collect_ctx *cc = vctx;
    moe_error e = {0};
    int id = cc->ids ? cc->ids[k] : (int)k;
    cJSON *o = eval_case(id, cc->x, &e);
    char *text = cJSON_PrintUnformatted(o);
    record_buf_put(out, text, strlen(text));
    free(text);
    cJSON_Delete(o);
}

static int collect_case(long k, const void *rec, size_t len, const char *lost, void *vctx, moe_error *err) {
    (void)err;
    collect_ctx *cc = vctx;
    long id = cc->ids ? cc->ids[k] : k;
    cJSON *o;
    if (rec) {
        char *text = moe_xmalloc(len + 1);
        memcpy(text, rec, len);
        text[len] = '\0';
        o = cJSON_Parse(text);
        free(text);
    } else {
        o = result_object(&cc->got->cs->cases[id], (int)id);
        set_status(o, "failed", lost);
    }
    cJSON_Delete(cc->got->results[id]);
    cc->got->results[id] = o;
    return 0;
}

/* --set PATH=VALUE: each setting parsed (VALUE as JSON, else as a string) and tried on the first case's
 * scenario, so that a bad path or value is refused before anything runs */
static int parse_sets(const validate_opts *o, const case_set *cs, eval_ctx *x, moe_error *err) {
    const vcase *first = NULL;
    for (int i = 0; i < cs->n && !first; i++)
        if (cs->cases[i].scenario[0]) first = &cs->cases[i];
    scenario s;
    if (o->n_set && first && scenario_load(first->scenario, &s, NULL, err)) return err->code;
    for (int j = 0; j < o->n_set; j++) {
        const char *eq = strchr(o->set[j], '=');
        size_t len = eq ? (size_t)(eq - o->set[j]) : 0;
        if (!eq || len == 0 || len >= sizeof x->set_path[0])
            return moe_error_input(err, NULL, "--set", o->set[j], "PATH=VALUE, a scenario field and its value "
                                   "(host.framework=none, cluster.gpu.speed_cv=0)");
        memcpy(x->set_path[j], o->set[j], len);
        x->set_path[j][len] = '\0';
        moe_error ignore = {0};
        cJSON *v = json_parse_strict("--set", eq + 1, strlen(eq + 1), &ignore);
        x->set_val[x->n_set++] = v ? v : cJSON_CreateString(eq + 1);
        if (first && scenario_set_path(&s, x->set_path[j], x->set_val[j], err)) {
            err->code = EXIT_BADINPUT;
            return moe_error_context(err, NULL, "--set");
        }
    }
    return 0;
}

/* One pass over cases ids[0..m) (all cases when ids is NULL: m = cs->n) into results[id]. */
static int run_pass(eval_ctx *x, const int *ids, int m, int jobs, cJSON **results, moe_error *err) {
    collected got = {.cs = x->cs, .results = results};
    point_run_opts po = {.jobs = jobs > 0 ? jobs : 1, .chunk = 1, .exact = 1};
    collect_ctx cc = {x, &got, ids};
    return run_points(0, m, eval_case_record, collect_case, &cc, &po, err);
}

/* ---- the global parameters: one joint fit, its leave-one-out (global_fit.h) ------------------------ */

#define FIT_ROBUST_SCALE 0.10   /* Cauchy scale of the log residual: a case off by far more than 10% is a
                                   mechanism the model lacks, not evidence about a GPU's clock */
#define FIT_MAX_ITER 40
#define CHECK_FIT_REL 0.01      /* --check-fit: the refit may move a value by 1% of it */

typedef struct {
    eval_ctx *x;
    int jobs;
    int n, p, n_rows;
    const global_param *rows;
    int *case_id;              /* n: problem case -> case id */
    int *sign;                 /* n: +1 a rate, -1 a time (its log enters negated) */
    double *y;                 /* n */
    unsigned char *dep;        /* n x p */
    int *group;                /* p: registry row */
    char (*scope)[SCN_NAME_MAX];
    double *lo, *hi, *prior, *committed;  /* p */
    double *prior_log_mean, *prior_log_sd; /* p: the registry's log-normal prior (sd 0: none) */
    double *over_val;          /* cases x n_rows */
    cJSON **results;           /* by case id: the document's results (at the committed or fitted values) */
    cJSON **trial;             /* by case id: the latest trial pass's (Jacobian steps, left-out refits) */
} fit_ctx;

static void fit_ctx_free(fit_ctx *f) {
    free(f->case_id), free(f->sign), free(f->y), free(f->dep), free(f->group), free(f->scope);
    free(f->lo), free(f->hi), free(f->prior), free(f->committed), free(f->over_val);
    free(f->prior_log_mean), free(f->prior_log_sd);
    for (int id = 0; f->trial && id < f->x->cs->n; id++) cJSON_Delete(f->trial[id]);
    free(f->trial);
}

/* the problem cases[0..m) evaluated with parameters theta + k * stride, their results into out (by case id) */
static int pass_at(fit_ctx *f, int m, const int *cases, const double *theta, int stride, cJSON **out, moe_error *err) {
    const case_set *cs = f->x->cs;
    for (size_t i = 0; i < (size_t)cs->n * (size_t)f->n_rows; i++) f->over_val[i] = NAN;
    int *ids = moe_xcalloc((size_t)m + 1, sizeof(int));
    for (int k = 0; k < m; k++) {
        int i = cases[k];
        ids[k] = f->case_id[i];
        for (int j = 0; j < f->p; j++)
            if (f->dep[(size_t)i * f->p + j])
                f->over_val[(size_t)ids[k] * f->n_rows + f->group[j]] = theta[(size_t)k * stride + j];
    }
    int rc = run_pass(f->x, ids, m, f->jobs, out, err);
    free(ids);
    return rc;
}

static int fit_eval(void *vctx, int m, const int *cases, const double *theta, int stride, double *log_pred,
                    moe_error *err) {
    fit_ctx *f = vctx;
    int rc = pass_at(f, m, cases, theta, stride, f->trial, err);
    for (int k = 0; k < m && !rc; k++) {
        const cJSON *o = f->trial[f->case_id[cases[k]]];
        double v = validation_number(o, "predicted");
        if (!(v > 0) || !isfinite(v))
            rc = moe_error_set(err, EXIT_RUNTIME, "case %s gave no prediction at the fit's trial values (%s%s%s)",
                               validation_str(o, "name"), validation_str(o, "status"), *validation_str(o, "detail") ? ": " : "",
                               validation_str(o, "detail"));
        else log_pred[k] = f->sign[cases[k]] * log(v);
    }
    return rc;
}

static int set_fixes(const eval_ctx *x, const char *path) {
    for (int j = 0; j < x->n_set; j++)
        if (strcmp(x->set_path[j], path) == 0) return 1;
    return 0;
}

/* The fit's cases (every step case that ran) and parameters (each registry row's scopes among them). */
static int fit_problem(fit_ctx *f, cJSON **results, moe_error *err) {
    const case_set *cs = f->x->cs;
    f->rows = global_params(&f->n_rows);
    int cap = f->n_rows * cs->n + 1;
    f->case_id = moe_xcalloc((size_t)cs->n + 1, sizeof(int));
    f->sign = moe_xcalloc((size_t)cs->n + 1, sizeof(int));
    f->y = moe_xcalloc((size_t)cs->n + 1, sizeof(double));
    f->dep = moe_xcalloc((size_t)(cs->n + 1) * (size_t)cap, 1);
    f->group = moe_xcalloc((size_t)cap, sizeof(int));
    f->scope = moe_xcalloc((size_t)cap, sizeof *f->scope);
    f->lo = moe_xcalloc((size_t)cap, sizeof(double)), f->hi = moe_xcalloc((size_t)cap, sizeof(double));
    f->prior = moe_xcalloc((size_t)cap, sizeof(double)), f->committed = moe_xcalloc((size_t)cap, sizeof(double));
    f->prior_log_mean = moe_xcalloc((size_t)cap, sizeof(double)), f->prior_log_sd = moe_xcalloc((size_t)cap, sizeof(double));
    f->over_val = moe_xcalloc((size_t)cs->n * (size_t)f->n_rows + 1, sizeof(double));
    f->results = results;
    f->trial = moe_xcalloc((size_t)cs->n + 1, sizeof(cJSON *));
    int *col = moe_xcalloc((size_t)(cs->n + 1) * (size_t)f->n_rows, sizeof(int));
    for (int id = 0; id < cs->n; id++) {
        const vcase *c = &cs->cases[id];
        const cJSON *o = results[id];
        double v = validation_number(o, "predicted");
        if (c->kind != CASE_STEP || !validation_case_ran(o) || !(v > 0)) continue;
        scenario s;
        if (scenario_load(c->scenario, &s, NULL, err)) { free(col); return err->code; }
        int i = f->n++, sg = strcmp(c->metric, "step_time_s") == 0 ? -1 : 1;
        f->case_id[i] = id, f->sign[i] = sg, f->y[i] = sg * log(c->published);
        for (int r = 0; r < f->n_rows; r++) {
            char key[SCN_NAME_MAX];
            col[(size_t)i * f->n_rows + r] = -1;
            /* a parameter --set fixes is held there, not fitted (the fit would overwrite the setting) */
            if (set_fixes(f->x, f->rows[r].path) || global_param_scope(&f->rows[r], &s, key, sizeof key)) continue;
            int j = 0;
            while (j < f->p && !(f->group[j] == r && strcmp(f->scope[j], key) == 0)) j++;
            if (j == f->p) {
                f->p++;
                f->group[j] = r;
                snprintf(f->scope[j], sizeof f->scope[j], "%s", key);
                f->lo[j] = f->rows[r].lo, f->hi[j] = f->rows[r].hi, f->prior[j] = f->rows[r].prior;
                f->prior_log_sd[j] = f->rows[r].prior_sd_log;
                f->prior_log_mean[j] = f->rows[r].prior_median > 0 ? log(f->rows[r].prior_median) : 0;
                double cv;
                f->committed[j] = global_param_value(&s, f->rows[r].path, &cv, NULL) == 0 ? cv : f->prior[j];
            }
            col[(size_t)i * f->n_rows + r] = j;
        }
    }
    /* dep is n x p: laid out once p is known */
    for (int i = 0; i < f->n; i++)
        for (int r = 0; r < f->n_rows; r++)
            if (col[(size_t)i * f->n_rows + r] >= 0) f->dep[(size_t)i * f->p + col[(size_t)i * f->n_rows + r]] = 1;
    free(col);
    return 0;
}

static gfit_problem problem_of(const fit_ctx *f, const double *start) {
    return (gfit_problem){.n = f->n, .p = f->p, .y = f->y, .dep = f->dep, .group = f->group, .lo = f->lo, .hi = f->hi,
                          .start = start, .robust_scale = FIT_ROBUST_SCALE, .prior_log_mean = f->prior_log_mean,
                          .prior_log_sd = f->prior_log_sd};
}

static double pct_of(const fit_ctx *f, int i, double log_pred) {
    double pred = exp(f->sign[i] * log_pred), pub = exp(f->sign[i] * f->y[i]);
    return 100.0 * (pred - pub) / pub;
}

/* the committed fit's document: parameters with intervals, every case's residual in and out of sample */
static cJSON *fit_document(const fit_ctx *f, const gfit_result *r) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "format", GLOBAL_FIT_FORMAT);
    cJSON_AddStringToObject(d, "about", "The global parameters (sim/plan/global_params.h), fitted jointly over every step case of "
                            "scenarios/validation/cases.json by sim/point/global_fit.h; loo_error_pct: each case predicted by the "
                            "fit without it.");
    cJSON_AddStringToObject(d, "command", "simrun validate --fit");
    cJSON *loss = cJSON_AddObjectToObject(d, "loss");
    cJSON_AddStringToObject(loss, "residual", "log(predicted rate / published rate)");
    cJSON_AddStringToObject(loss, "rho", "cauchy");
    cJSON_AddNumberToObject(loss, "scale", FIT_ROBUST_SCALE);
    cJSON_AddNumberToObject(loss, "value", r->loss);
    cJSON_AddNumberToObject(loss, "iterations", r->iterations);
    cJSON *params = cJSON_AddArrayToObject(d, "params");
    for (int j = 0; j < f->p; j++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", f->rows[f->group[j]].path);
        cJSON_AddStringToObject(o, "scope", f->scope[j]);
        cJSON_AddNumberToObject(o, "value", r->theta[j]);
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->ci_lo[j]));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->ci_hi[j]));
        cJSON_AddNumberToObject(o, "cases", r->cases_of[j]);
        cJSON_AddNumberToObject(o, "prior", f->prior[j]);
        cJSON_AddNumberToObject(o, "lo", f->lo[j]);
        cJSON_AddNumberToObject(o, "hi", f->hi[j]);
        cJSON_AddStringToObject(o, "unit", f->rows[f->group[j]].unit);
        cJSON_AddItemToArray(params, o);
    }
    cJSON *cases = cJSON_AddArrayToObject(d, "cases");
    for (int i = 0; i < f->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", f->x->cs->cases[f->case_id[i]].name);
        cJSON_AddNumberToObject(o, "error_pct", pct_of(f, i, r->log_pred[i]));
        cJSON_AddNumberToObject(o, "loo_error_pct", pct_of(f, i, r->loo_log_pred[i]));
        cJSON_AddItemToArray(cases, o);
    }
    return d;
}

static int write_fit(const char *path, const cJSON *d, moe_error *err) {
    char *text = cJSON_Print(d);
    size_t n = strlen(text);
    char *t2 = moe_xmalloc(n + 2);
    memcpy(t2, text, n);
    t2[n] = '\n', t2[n + 1] = '\0';
    int rc = write_file_atomic(path, t2, err);
    free(text), free(t2);
    return rc;
}

/* --check-fit: the committed values are the optimum of the model as it is now */
static int check_fit(const fit_ctx *f, const gfit_result *r, FILE *out, moe_error *err) {
    int moved = 0;
    for (int j = 0; j < f->p; j++) {
        double c = f->committed[j], v = r->theta[j];
        int bad = fabs(v - c) > CHECK_FIT_REL * fabs(c);
        fprintf(out, "  %s [%s]: committed %.4g, refitted %.4g%s\n", f->rows[f->group[j]].path, f->scope[j], c, v,
                bad ? "  MOVED" : "");
        moved += bad;
    }
    if (moved)
        return moe_error_set(err, EXIT_RUNTIME, "%d global parameter%s moved by more than %.0f%% on a refit: the committed "
                             "%s is not the fit of the model as it is; run simrun validate --fit and commit it with the "
                             "baseline", moved, moved == 1 ? "" : "s", 100 * CHECK_FIT_REL, GLOBAL_FIT_FILE);
    return 0;
}

/* The fit (--fit, --check-fit) or the committed values, then leave-one-out; the results of the fit's
 * cases are those at the fitted values, each with loo_predicted / loo_error_pct. */
static int fit_and_loo(const validate_opts *o, eval_ctx *x, cJSON **results, FILE *out, moe_error *err) {
    fit_ctx f = {.x = x, .jobs = o->jobs};
    int rc = fit_problem(&f, results, err);
    if (rc || f.n < f.p || f.p == 0) { fit_ctx_free(&f); return rc; }
    const char **paths = moe_xcalloc((size_t)f.n_rows, sizeof(char *));
    for (int r = 0; r < f.n_rows; r++) paths[r] = f.rows[r].path;
    x->n_over = f.n_rows, x->over_path = paths, x->over_val = f.over_val;
    gfit_result r;
    gfit_result_init(&r, f.n, f.p);
    gfit_problem pr = problem_of(&f, o->fit ? f.prior : f.committed);
    if (o->fit || o->check_fit) {
        if (!o->quiet) fprintf(out, "fitting %d global parameters over %d step cases...\n", f.p, f.n);
        rc = gfit_fit(&pr, fit_eval, &f, FIT_MAX_ITER, &r, err);
        if (!rc && o->check_fit) rc = check_fit(&f, &r, out, err);
    } else {
        memcpy(r.theta, f.committed, (size_t)f.p * sizeof(double));
        rc = gfit_at(&pr, fit_eval, &f, &r, err);
    }
    if (!rc) rc = gfit_loo(&pr, fit_eval, &f, &r, err);
    /* the results at refitted values; at the committed ones they are the first pass's (auto = committed) */
    int *all = moe_xcalloc((size_t)f.n, sizeof(int));
    for (int i = 0; i < f.n; i++) all[i] = i;
    if (!rc && (o->fit || o->check_fit)) rc = pass_at(&f, f.n, all, r.theta, 0, results, err);
    for (int i = 0; i < f.n && !rc; i++) {
        cJSON *c = results[f.case_id[i]];
        cJSON_DeleteItemFromObjectCaseSensitive(c, "status");
        double pub = validation_number(c, "published"), pred = exp(f.sign[i] * r.loo_log_pred[i]);
        cJSON_AddNumberToObject(c, "loo_predicted", pred);
        cJSON_AddNumberToObject(c, "loo_error_pct", 100.0 * (pred - pub) / pub);
        set_status(c, verdict(c), NULL);
    }
    if (!rc && o->fit) {
        cJSON *d = fit_document(&f, &r);
        rc = write_fit(o->fit_out ? o->fit_out : GLOBAL_FIT_FILE, d, err);
        cJSON_Delete(d);
        global_params_reload();
    }
    if (!rc && !o->quiet) {
        if (o->fit || o->check_fit)
            fprintf(out, "global parameters, refitted (%d iterations, %d case evaluations, Cauchy loss %.4f):\n",
                     r.iterations, r.evaluations, r.loss);
        else
            fprintf(out, "global parameters, committed (%s; the left-out column took %d case evaluations, Cauchy "
                    "loss %.4f):\n", GLOBAL_FIT_FILE, r.evaluations, r.loss);
        for (int j = 0; j < f.p; j++)
            fprintf(out, "  %-22s %-14s %8.4g %s [%.4g, %.4g] 95%%, %d cases\n", f.rows[f.group[j]].path, f.scope[j],
                    r.theta[j], f.rows[f.group[j]].unit, r.ci_lo[j], r.ci_hi[j], r.cases_of[j]);
    }
    free(all), free(paths);
    x->n_over = 0, x->over_path = NULL, x->over_val = NULL;
    gfit_result_free(&r);
    fit_ctx_free(&f);
    return rc;
}

int validate_run(const validate_opts *o, FILE *out, moe_error *err) {
    case_set cs;
    if (load_cases(o->cases_path, &cs, err)) return err->code;
    cJSON *baseline = NULL;
    if (o->baseline_path && !(baseline = validation_doc_load(o->baseline_path, err))) { case_set_free(&cs); return err->code; }
    int rc = make_dirs(o->out_dir, err);
    /* each case in a worker process (SimGrid: one platform per process); results come back through
     * the pool's pipes, in any order, and are put in case order */
    eval_ctx x = {.cs = &cs};
    if (!rc) rc = parse_sets(o, &cs, &x, err);
    cJSON **results = moe_xcalloc((size_t)cs.n + 1, sizeof(cJSON *));
    if (!rc) rc = run_pass(&x, NULL, cs.n, o->jobs, results, err);
    if (!rc && !o->no_loo) rc = fit_and_loo(o, &x, results, out, err);
    cJSON *doc = NULL;
    if (!rc) {
        cJSON *cases = cJSON_CreateArray();
        for (int i = 0; i < cs.n; i++) {
            cJSON_AddItemToArray(cases, results[i]);
            results[i] = NULL;
        }
        doc = document_of(cases);
    }
    for (int i = 0; i < cs.n; i++) cJSON_Delete(results[i]);
    free(results);
    if (!rc) rc = write_outputs(o->out_dir, doc, err);
    if (!rc && !o->quiet) {
        validate_print(out, doc);
        fprintf(out, "wrote %s/validation.json and %s/validation.csv\n", o->out_dir, o->out_dir);
    }
    if (!rc && baseline) {
        int moved = validate_compare(doc, baseline, VALIDATE_BASELINE_TOL_PP, out);
        if (moved)
            rc = moe_error_set(err, EXIT_RUNTIME, "%d case%s moved against the baseline %s (by more than %.1f points "
                               "or in status); update the baseline in the same commit if the change is intended",
                               moved, moved == 1 ? "" : "s", o->baseline_path, VALIDATE_BASELINE_TOL_PP);
        else if (!o->quiet)
            fprintf(out, "baseline %s: no case moved by more than %.1f points\n", o->baseline_path,
                    VALIDATE_BASELINE_TOL_PP);
    }
    if (!rc) {
        for (const cJSON *c = cJSON_GetObjectItemCaseSensitive(doc, "cases")->child; c && !rc; c = c->next)
            if (strcmp(validation_str(c, "status"), "failed") == 0)
                rc = moe_error_set(err, EXIT_RUNTIME, "case %s failed: %s", validation_str(c, "name"), validation_str(c, "detail"));
    }
    cJSON_Delete(doc);
    cJSON_Delete(baseline);
    for (int j = 0; j < x.n_set; j++) cJSON_Delete(x.set_val[j]);
    case_set_free(&cs);
    return rc;
}
