/* trace.c — reading, writing and validating "moesim-trace/1" files (format: calibration/README.md). */
#define _POSIX_C_SOURCE 200809L
#include "calibration/trace.h"
#include "sim/base/alloc.h"
#include "sim/base/fileio.h"
#include "sim/base/hash.h"
#include "sim/base/json_read.h"
#include "sim/plan/costmodel.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef MOESIM_VERSION
#define MOESIM_VERSION "unknown"
#endif

static const char *const kind_names[] = { "gpu", "cpu", "nccl-tests", "published", NULL };

const char *trace_kind_name(trace_kind k) {
    return (k >= TRACE_KIND_GPU && k <= TRACE_KIND_PUBLISHED) ? kind_names[k] : "unknown";
}

dtype_kind calib_dtype_of(const char *d) {
    int named = costmodel_dtype_parse(d);   /* the scenario's names: fp8, bf16, fp8-cs, mxfp8, ... */
    if (named >= 0) return (dtype_kind)named;
    if (!strcmp(d, "fp8") || !strcmp(d, "e4m3") || !strcmp(d, "e5m2")) return DT_FP8;
    if (!strcmp(d, "fp16") || !strcmp(d, "half")) return DT_FP16;
    if (!strcmp(d, "fp32") || !strcmp(d, "float")) return DT_FP32;
    return DT_BF16;
}

void trace_init(trace *t) { memset(t, 0, sizeof *t); }

void trace_free(trace *t) {
    free(t->pts);
    memset(t, 0, sizeof *t);
}

trace_point *trace_add(trace *t, const trace_point *p) {
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        t->pts = moe_xrealloc(t->pts, (size_t)cap, sizeof *t->pts);
        t->cap = cap;
    }
    t->pts[t->n] = *p;
    return &t->pts[t->n++];
}

void trace_point_set_dim(trace_point *p, const char *key, double value) {
    for (int i = 0; i < p->n_dims; i++)
        if (strcmp(p->shape[i].key, key) == 0) {
            p->shape[i].value = value;
            return;
        }
    if (p->n_dims >= TRACE_MAX_DIMS) return;
    snprintf(p->shape[p->n_dims].key, sizeof p->shape[0].key, "%s", key);
    p->shape[p->n_dims++].value = value;
}

double trace_point_dim(const trace_point *p, const char *key, double dflt) {
    for (int i = 0; i < p->n_dims; i++)
        if (strcmp(p->shape[i].key, key) == 0) return p->shape[i].value;
    return dflt;
}

void trace_provenance_defaults(trace_provenance *pv, trace_kind kind) {
    memset(pv, 0, sizeof *pv);
    pv->kind = kind;
    snprintf(pv->device, sizeof pv->device, "n/a");
    snprintf(pv->driver, sizeof pv->driver, "n/a");
    snprintf(pv->cuda, sizeof pv->cuda, "n/a");
    snprintf(pv->cublas, sizeof pv->cublas, "n/a");
    snprintf(pv->nccl, sizeof pv->nccl, "n/a");
    if (gethostname(pv->host, sizeof pv->host - 1) != 0) snprintf(pv->host, sizeof pv->host, "n/a");
    /* Reproducible-builds convention: SOURCE_DATE_EPOCH pins the date (imports, tests). */
    time_t now = time(NULL);
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde) now = (time_t)strtoll(sde, NULL, 10);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(pv->date, sizeof pv->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(pv->git, sizeof pv->git, "%s", MOESIM_VERSION);
}

/* ---- serialisation ------------------------------------------------------------------------------ */

cJSON *trace_provenance_to_json(cJSON *parent, const trace_provenance *pv) {
    cJSON *p = cJSON_AddObjectToObject(parent, "provenance");
    cJSON_AddStringToObject(p, "kind", trace_kind_name(pv->kind));
    cJSON_AddStringToObject(p, "device", pv->device);
    if (pv->sm_count > 0) cJSON_AddNumberToObject(p, "sm_count", pv->sm_count);
    else cJSON_AddStringToObject(p, "sm_count", "n/a");
    if (pv->clock_mhz > 0) cJSON_AddNumberToObject(p, "clock_mhz", pv->clock_mhz);
    else cJSON_AddStringToObject(p, "clock_mhz", "n/a");
    cJSON_AddStringToObject(p, "driver", pv->driver);
    cJSON_AddStringToObject(p, "cuda", pv->cuda);
    cJSON_AddStringToObject(p, "cublas", pv->cublas);
    cJSON_AddStringToObject(p, "nccl", pv->nccl);
    cJSON_AddStringToObject(p, "host", pv->host);
    cJSON_AddStringToObject(p, "date", pv->date);
    cJSON_AddStringToObject(p, "git", pv->git);
    if (pv->peak_bf16_tflops > 0) cJSON_AddNumberToObject(p, "peak_bf16_tflops", pv->peak_bf16_tflops);
    if (pv->hbm_GBps > 0) cJSON_AddNumberToObject(p, "hbm_GBps", pv->hbm_GBps);
    if (pv->source[0]) cJSON_AddStringToObject(p, "source", pv->source);
    return p;
}

cJSON *trace_to_json(const trace *t) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", TRACE_FORMAT);
    trace_provenance_to_json(root, &t->prov);
    cJSON *arr = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < t->n; i++) {
        const trace_point *q = &t->pts[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "kernel", q->kernel);
        cJSON *s = cJSON_AddObjectToObject(o, "shape");
        for (int d = 0; d < q->n_dims; d++) cJSON_AddNumberToObject(s, q->shape[d].key, q->shape[d].value);
        if (q->dtype[0]) cJSON_AddStringToObject(o, "dtype", q->dtype);
        cJSON_AddNumberToObject(o, "time_us", q->time_us);
        cJSON_AddNumberToObject(o, "bytes", q->bytes);
        cJSON_AddNumberToObject(o, "flops", q->flops);
        cJSON_AddNumberToObject(o, "ranks", q->ranks);
        if (q->link[0]) cJSON_AddStringToObject(o, "link", q->link);
        if (q->busbw_GBps > 0) cJSON_AddNumberToObject(o, "busbw_GBps", q->busbw_GBps);
        if (q->table[0]) cJSON_AddStringToObject(o, "table", q->table);
        if (q->source[0]) cJSON_AddStringToObject(o, "source", q->source);
        cJSON_AddItemToArray(arr, o);
    }
    return root;
}

int json_write_atomic(const char *path, const cJSON *root, moe_error *err) {
    char *txt = cJSON_Print(root);
    if (!txt) return moe_error_set(err, EXIT_RUNTIME, "%s: out of memory serialising JSON", path);
    size_t n = strlen(txt);
    char *line = moe_xrealloc(txt, n + 2, 1);
    memcpy(line + n, "\n", 2);
    int rc = write_file_atomic(path, line, err);
    free(line);
    return rc;
}

int trace_write(const char *path, const trace *t, moe_error *err) {
    cJSON *root = trace_to_json(t);
    int rc = json_write_atomic(path, root, err);
    cJSON_Delete(root);
    return rc;
}

/* ---- reading -------------------------------------------------------------------------------------- */

int calib_file_hash(const char *path, char hex[17], moe_error *err) {
    size_t n = 0;
    char *buf = read_file_text(path, &n, err);
    if (!buf) return err->code;
    /* the offset basis every recorded fnv1a64 of the committed models was made with: one digit short
     * of FNV's 14695981039346656037 (MOE_FNV1A64_OFFSET), kept so that those records still match */
    uint64_t h = moe_fnv1a64(1469598103934665603ULL, buf, n);
    free(buf);
    snprintf(hex, 17, "%016" PRIx64, h);
    return 0;
}

typedef json_reader rd;

static int bad(rd *r, const char *path, const cJSON *v, const char *expected) {
    return json_bad(r, path, v, "%s", expected);
}

/* Provenance string field: required, copied (numbers allowed for versions). */
static int prov_str(rd *r, const cJSON *p, const char *key, char *dst, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "provenance.%s", key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    if (cJSON_IsString(v) && v->valuestring[0]) {
        snprintf(dst, cap, "%s", v->valuestring);
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        snprintf(dst, cap, "%g", v->valuedouble);
        return 0;
    }
    return bad(r, path, v, "a non-empty string (\"n/a\" when not applicable)");
}

static int prov_num(rd *r, const cJSON *p, const char *key, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    *out = 0;
    if (!v || (cJSON_IsString(v) && strcmp(v->valuestring, "n/a") == 0)) return 0;
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && isfinite(v->valuedouble)) {
        *out = v->valuedouble;
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "provenance.%s", key);
    return bad(r, path, v, "a non-negative number or \"n/a\"");
}

#define TRACE_MAX_SM_COUNT 100000
static int parse_provenance(rd *r, const cJSON *p, trace_provenance *pv) {
    if (!cJSON_IsObject(p)) return bad(r, "provenance", p, "an object");
    memset(pv, 0, sizeof *pv);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "kind");
    int kind = -1;
    for (int i = 0; kind_names[i] && cJSON_IsString(k); i++)
        if (strcmp(k->valuestring, kind_names[i]) == 0) kind = i;
    if (kind < 0) return bad(r, "provenance.kind", k, "\"gpu\", \"cpu\", \"nccl-tests\" or \"published\"");
    pv->kind = (trace_kind)kind;
    double sm = 0;
    if (prov_str(r, p, "device", pv->device, sizeof pv->device) ||
        prov_str(r, p, "driver", pv->driver, sizeof pv->driver) ||
        prov_str(r, p, "cuda", pv->cuda, sizeof pv->cuda) ||
        prov_str(r, p, "cublas", pv->cublas, sizeof pv->cublas) ||
        prov_str(r, p, "nccl", pv->nccl, sizeof pv->nccl) ||
        prov_str(r, p, "host", pv->host, sizeof pv->host) ||
        prov_str(r, p, "date", pv->date, sizeof pv->date) ||
        prov_str(r, p, "git", pv->git, sizeof pv->git) ||
        prov_num(r, p, "sm_count", &sm) || prov_num(r, p, "clock_mhz", &pv->clock_mhz) ||
        prov_num(r, p, "peak_bf16_tflops", &pv->peak_bf16_tflops) ||
        prov_num(r, p, "hbm_GBps", &pv->hbm_GBps))
        return EXIT_BADINPUT;
    /* a count (H100 SXM: 132, B200: 148); an unbounded double would overflow the int */
    if (sm != floor(sm) || sm > TRACE_MAX_SM_COUNT)
        return bad(r, "provenance.sm_count", cJSON_GetObjectItemCaseSensitive(p, "sm_count"),
                   "a whole number of SMs in 0..100000 or \"n/a\"");
    pv->sm_count = (int)sm;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(p, "source");
    if (cJSON_IsString(src)) snprintf(pv->source, sizeof pv->source, "%s", src->valuestring);
    return 0;
}

static int point_num(rd *r, const cJSON *o, int i, const char *key, int required, int positive,
                     double *out) {
    char path[64];
    snprintf(path, sizeof path, "points[%d].%s", i, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v && !required) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        (positive ? v->valuedouble <= 0 : v->valuedouble < 0))
        return bad(r, path, v, positive ? "a positive number" : "a non-negative number");
    *out = v->valuedouble;
    return 0;
}

static int point_str(rd *r, const cJSON *o, int i, const char *key, int required, char *dst,
                     size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "points[%d].%s", i, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v && !required) return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= cap) {
        char want[64];
        snprintf(want, sizeof want, "a non-empty string of at most %zu characters", cap - 1);
        return bad(r, path, v, want);
    }
    snprintf(dst, cap, "%s", v->valuestring);
    return 0;
}

static int parse_point(rd *r, const cJSON *o, int i, int published, trace_point *q) {
    char path[64];
    snprintf(path, sizeof path, "points[%d]", i);
    if (!cJSON_IsObject(o)) return bad(r, path, o, "an object");
    memset(q, 0, sizeof *q);
    if (point_str(r, o, i, "kernel", 1, q->kernel, sizeof q->kernel)) return EXIT_BADINPUT;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "shape");
    snprintf(path, sizeof path, "points[%d].shape", i);
    if (!cJSON_IsObject(s)) return bad(r, path, s, "an object of numbers");
    const cJSON *d;
    cJSON_ArrayForEach(d, s) {
        snprintf(path, sizeof path, "points[%d].shape.%.24s", i, d->string);
        if (!cJSON_IsNumber(d) || !isfinite(d->valuedouble)) return bad(r, path, d, "a number");
        if (q->n_dims >= TRACE_MAX_DIMS || strlen(d->string) >= sizeof q->shape[0].key)
            return bad(r, path, d, "at most 10 shape keys of at most 23 characters");
        trace_point_set_dim(q, d->string, d->valuedouble);
    }
    double ranks = 1;
    if (point_str(r, o, i, "dtype", 0, q->dtype, sizeof q->dtype) ||
        point_num(r, o, i, "time_us", 1, 1, &q->time_us) ||
        point_num(r, o, i, "bytes", 1, 0, &q->bytes) ||
        point_num(r, o, i, "flops", 1, 0, &q->flops) ||
        point_num(r, o, i, "ranks", 0, 1, &ranks) ||
        point_str(r, o, i, "link", 0, q->link, sizeof q->link) ||
        point_num(r, o, i, "busbw_GBps", 0, 0, &q->busbw_GBps) ||
        point_str(r, o, i, "table", 0, q->table, sizeof q->table) ||
        point_str(r, o, i, "source", published, q->source, sizeof q->source))
        return EXIT_BADINPUT;
    if (ranks != floor(ranks) || ranks > 1e6) {
        snprintf(path, sizeof path, "points[%d].ranks", i);
        return bad(r, path, cJSON_GetObjectItemCaseSensitive(o, "ranks"), "a positive integer");
    }
    q->ranks = (int)ranks;
    if (q->link[0] && q->ranks < 2) {
        snprintf(path, sizeof path, "points[%d].ranks", i);
        return bad(r, path, cJSON_GetObjectItemCaseSensitive(o, "ranks"),
                   "at least 2 for a collective (a point with a \"link\")");
    }
    if (q->bytes <= 0 && q->flops <= 0) {
        snprintf(path, sizeof path, "points[%d].bytes", i);
        return bad(r, path, cJSON_GetObjectItemCaseSensitive(o, "bytes"),
                   "bytes > 0 or flops > 0 (a point must say how much work it timed)");
    }
    return 0;
}

static int trace_from_json(rd *r, const cJSON *root, trace *t) {
    const cJSON *fmt = json_member(root, "format");
    if (!cJSON_IsObject(root)) return bad(r, "(root)", root, "a JSON object");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, TRACE_FORMAT) != 0)
        return bad(r, "format", fmt, "\"" TRACE_FORMAT "\"");
    int rc = parse_provenance(r, json_member(root, "provenance"), &t->prov);
    if (rc) return rc;
    const cJSON *pts = json_member(root, "points");
    if (!cJSON_IsArray(pts) || cJSON_GetArraySize(pts) == 0)
        return bad(r, "points", pts, "a non-empty array of points");
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, pts) {
        trace_point q;
        if ((rc = parse_point(r, o, i++, t->prov.kind == TRACE_KIND_PUBLISHED, &q))) return rc;
        trace_add(t, &q);
    }
    return 0;
}

static int trace_from_doc(const char *file, cJSON *root, trace *t, moe_error *err) {
    if (!root) return err->code;
    rd r = { file, err };
    int rc = trace_from_json(&r, root, t);
    cJSON_Delete(root);
    if (rc) trace_free(t);
    return rc;
}

int trace_parse(const char *file_label, const char *text, trace *t, moe_error *err) {
    trace_init(t);
    const char *file = file_label ? file_label : "(trace)";
    return trace_from_doc(file, json_parse_strict(file, text, text ? strlen(text) : 0, err), t, err);
}

int trace_read(const char *path, trace *t, moe_error *err) {
    trace_init(t);
    return trace_from_doc(path, json_load(path, 0, err), t, err);
}
