/* fit.c — GSL fits of the cost models (fit.h) and the model JSON they produce. */
#define _POSIX_C_SOURCE 200809L
#include "calibration/fit.h"
#include "sim/base/alloc.h"
#include "sim/base/json_read.h"

#include <cjson/cJSON.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibration/nccl_tests.h"
#include "sim/plan/costmodel.h"

/* ---- the generic term fit ---------------------------------------------------------------------- */

typedef struct {
    int n, m;
    const fit_term_kind *kind;
    const double *x, *y;
} fit_data;

/* Parameters are q_j = log p_j. term_j = p_j (const) or x_ij / p_j (rate). */
static double term_value(fit_term_kind k, double p, double x) { return k == TERM_CONST ? p : x / p; }

static int resid_f(const gsl_vector *q, void *params, gsl_vector *f) {
    const fit_data *d = params;
    for (int i = 0; i < d->n; i++) {
        double t = 0;
        for (int j = 0; j < d->m; j++) t += term_value(d->kind[j], exp(gsl_vector_get(q, j)), d->x[i * d->m + j]);
        gsl_vector_set(f, i, (t - d->y[i]) / d->y[i]);
    }
    return GSL_SUCCESS;
}

/* d/dq_j of term_j: p (const) or -x/p (rate), both divided by y_i (relative residual). */
static int resid_df(const gsl_vector *q, void *params, gsl_matrix *J) {
    const fit_data *d = params;
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < d->m; j++) {
            double p = exp(gsl_vector_get(q, j));
            double v = d->kind[j] == TERM_CONST ? p : -d->x[i * d->m + j] / p;
            gsl_matrix_set(J, i, j, v / d->y[i]);
        }
    return GSL_SUCCESS;
}

double fit_eval(const fit_result *r, const double *x) {
    double t = 0;
    for (int j = 0; j < r->n_terms; j++) t += term_value(r->kind[j], r->p[j], x[j]);
    return t;
}

/* Weighted linear least squares on the coefficients c_j (p_j for a constant, 1/p_j for a rate),
 * weights 1/y^2: the same relative criterion as the nonlinear fit, whose start point it gives.
 * Returns 0 and c[] on success. */
static int linear_coeffs(const fit_data *d, double *c_out) {
    gsl_matrix *X = gsl_matrix_alloc((size_t)d->n, (size_t)d->m);
    gsl_vector *w = gsl_vector_alloc((size_t)d->n), *y = gsl_vector_alloc((size_t)d->n);
    gsl_vector *c = gsl_vector_alloc((size_t)d->m);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)d->m, (size_t)d->m);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)d->n, (size_t)d->m);
    for (int i = 0; i < d->n; i++) {
        for (int j = 0; j < d->m; j++)
            gsl_matrix_set(X, i, j, d->kind[j] == TERM_CONST ? 1.0 : d->x[i * d->m + j]);
        gsl_vector_set(w, i, 1.0 / (d->y[i] * d->y[i]));
        gsl_vector_set(y, i, d->y[i]);
    }
    double chisq;
    int rc = gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) == GSL_SUCCESS ? 0 : -1;
    for (int j = 0; j < d->m; j++) c_out[j] = gsl_vector_get(c, j);
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(cov);
    gsl_matrix_free(X);
    gsl_vector_free(w);
    gsl_vector_free(y);
    gsl_vector_free(c);
    return rc;
}

/* The nonlinear (log-parameter) fit of the terms in d, started from positive p0. */
static int nlinear_fit(const char *what, const fit_data *d, const double *p0, double *p, double *se,
                       int *iters, moe_error *err) {
    int n = d->n, m = d->m;
    gsl_multifit_nlinear_fdf fdf = { .f = resid_f, .df = resid_df, .fvv = NULL,
                                     .n = (size_t)n, .p = (size_t)m, .params = (void *)d };
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    params.trs = gsl_multifit_nlinear_trs_lm;
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, (size_t)n, (size_t)m);
    gsl_vector *q0 = gsl_vector_alloc((size_t)m);
    for (int j = 0; j < m; j++) gsl_vector_set(q0, j, log(p0[j]));
    int info = 0, rc = 0;
    int status = gsl_multifit_nlinear_init(q0, &fdf, w);
    if (status == GSL_SUCCESS)
        status = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 1e-12, NULL, NULL, &info, w);
    /* GSL_EMAXITER with a finite residual is still a usable optimum; anything else is not */
    gsl_vector *f = gsl_multifit_nlinear_residual(w);
    double chisq = 0;
    gsl_blas_ddot(f, f, &chisq);
    if ((status != GSL_SUCCESS && status != GSL_EMAXITER) || !isfinite(chisq)) {
        rc = moe_error_set(err, EXIT_RUNTIME, "%s: fit failed (%s)", what, gsl_strerror(status));
    } else {
        gsl_matrix *cov = gsl_matrix_alloc((size_t)m, (size_t)m);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
        double s2 = chisq / (n - m);   /* residual variance: the noise level is estimated */
        const gsl_vector *q = gsl_multifit_nlinear_position(w);
        for (int j = 0; j < m; j++) {
            p[j] = exp(gsl_vector_get(q, j));
            double vq = gsl_matrix_get(cov, j, j) * s2;
            se[j] = p[j] * sqrt(vq > 0 ? vq : 0);   /* delta method: dp = p dq */
        }
        gsl_matrix_free(cov);
        *iters = (int)gsl_multifit_nlinear_niter(w);
    }
    gsl_vector_free(q0);
    gsl_multifit_nlinear_free(w);
    return rc;
}

int fit_terms(const char *what, int n, int m, const fit_term_kind *kind, const double *x,
              const double *y, fit_result *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    gsl_set_error_handler_off();   /* report through moe_error, never abort() */
    if (m < 1 || m > FIT_MAX_TERMS || n <= m)
        return moe_error_set(err, EXIT_RUNTIME, "%s: %d points for %d parameters; need more points "
                             "than parameters (with different shapes)", what, n, m);
    /* Active set: a term whose best linear coefficient is not positive is one the data cannot
     * resolve (e.g. a launch overhead far below the noise, or an operand term on a CPU where
     * streaming is never the bottleneck). It is dropped -- launch 0, rate infinite -- and the rest
     * refitted, so that no parameter runs off to 0 or infinity in log space. */
    int active[FIT_MAX_TERMS], na = m;
    for (int j = 0; j < m; j++) active[j] = 1;
    double *xa = moe_xcalloc((size_t)n * (size_t)m, sizeof *xa);
    fit_term_kind ka[FIT_MAX_TERMS];
    double c[FIT_MAX_TERMS], pa[FIT_MAX_TERMS], sea[FIT_MAX_TERMS];
    fit_data d;
    for (;;) {
        int k = 0;
        for (int j = 0; j < m; j++) {
            if (!active[j]) continue;
            ka[k] = kind[j];
            for (int i = 0; i < n; i++) xa[i * na + k] = x[i * m + j];
            k++;
        }
        d = (fit_data){ n, na, ka, xa, y };
        if (linear_coeffs(&d, c)) {
            free(xa);
            return moe_error_set(err, EXIT_RUNTIME, "%s: singular linear system", what);
        }
        int drop = -1;
        for (int j = 0, kk = 0; j < m; j++)
            if (active[j] && drop < 0 && !(c[kk++] > 0)) drop = j;
        if (drop < 0) break;
        if (na == 1) {
            free(xa);
            return moe_error_set(err, EXIT_RUNTIME, "%s: no positive solution", what);
        }
        active[drop] = 0;
        na--;
    }
    for (int k = 0; k < na; k++) pa[k] = ka[k] == TERM_CONST ? c[k] : 1.0 / c[k];
    int rc = nlinear_fit(what, &d, pa, pa, sea, &out->iterations, err);
    free(xa);
    if (rc) return rc;
    out->n_terms = m;
    for (int j = 0, k = 0; j < m; j++) {
        out->kind[j] = kind[j];
        out->dropped[j] = !active[j];
        out->p[j] = active[j] ? pa[k] : kind[j] == TERM_CONST ? 0.0 : INFINITY;
        out->se[j] = active[j] ? sea[k] : 0.0;
        k += active[j];
    }
    out->points = n;
    double sum2 = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        double r = fabs((fit_eval(out, x + (size_t)i * m) - y[i]) / y[i]);
        sum2 += r * r;
        if (r > mx) mx = r;
    }
    out->rms_rel_err = sqrt(sum2 / n);
    out->max_rel_err = mx;
    return 0;
}

/* ---- point classes -------------------------------------------------------------------------------- */

static int is_collective(const trace_point *p) { return p->link[0] != '\0'; }
static int is_gemm_like(const trace_point *p) {
    return !is_collective(p) && p->flops > 0 && (strstr(p->kernel, "gemm") || strstr(p->kernel, "ffn"));
}
static int is_memory(const trace_point *p) { return !is_collective(p) && !is_gemm_like(p) && p->bytes > 0; }

/* ---- JSON helpers ----------------------------------------------------------------------------------- */

/* Round to 6 significant digits: the committed model is for humans too, and the check compares
 * with a relative tolerance far above this rounding. */
static double sig6(double v) {
    if (v == 0 || !isfinite(v)) return v;
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    return strtod(buf, NULL);
}

/* Infinite rates (a dropped term) are written as null: "not resolved by the data". */
static void add_num(cJSON *o, const char *k, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, sig6(v));
    else cJSON_AddNullToObject(o, k);
}

static void add_fit_stats(cJSON *o, const fit_result *r, const char *const *names, const double *scale) {
    for (int j = 0; j < r->n_terms; j++)
        if (r->dropped[j]) {
            cJSON *dl = cJSON_GetObjectItem(o, "dropped");
            if (!dl) dl = cJSON_AddArrayToObject(o, "dropped");
            cJSON_AddItemToArray(dl, cJSON_CreateString(names[j]));
        }
    cJSON *se = cJSON_AddObjectToObject(o, "stderr");
    for (int j = 0; j < r->n_terms; j++) add_num(se, names[j], r->se[j] * scale[j]);
    cJSON *f = cJSON_AddObjectToObject(o, "fit");
    cJSON_AddNumberToObject(f, "points", r->points);
    add_num(f, "rms_rel_err", r->rms_rel_err);
    add_num(f, "max_rel_err", r->max_rel_err);
}

/* ---- the model sections ---------------------------------------------------------------------------- */

typedef struct {
    trace *traces;
    int n_traces;
    FILE *log;
} fit_ctx;

/* GEMM section. peaks[dtype_kind]: from the base model, the trace provenance, or (CPU) empirical. */
static int fit_gemm(fit_ctx *c, const double *peaks, cJSON *root, double *eff_out,
                    double *launch_out, moe_error *err) {
    int n = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) n += is_gemm_like(&c->traces[t].pts[i]);
    double *x = moe_xcalloc((size_t)n * 3 + 1, sizeof *x), *y = moe_xcalloc((size_t)n + 1, sizeof *y);
    int k = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (!is_gemm_like(p)) continue;
            double peak = peaks[calib_dtype_of(p->dtype)];
            x[k * 3 + 0] = 0;
            x[k * 3 + 1] = p->flops / peak;
            x[k * 3 + 2] = p->bytes;
            y[k++] = p->time_us * 1e-6;
        }
    fit_term_kind kind[3] = { TERM_CONST, TERM_RATE, TERM_RATE };
    fit_result r;
    int rc = fit_terms("gemm (launch, eff_max, operand bandwidth)", n, 3, kind, x, y, &r, err);
    free(x);
    free(y);
    if (rc) return rc;
    cJSON *g = cJSON_AddObjectToObject(root, "gemm");
    add_num(g, "eff_max", r.p[1]);
    add_num(g, "operand_GBps", r.p[2] / 1e9);
    add_num(g, "launch_us", r.p[0] * 1e6);
    const char *names[3] = { "launch_us", "eff_max", "operand_GBps" };
    const double scale[3] = { 1e6, 1.0, 1e-9 };
    add_fit_stats(g, &r, names, scale);
    *eff_out = r.p[1];
    *launch_out = r.p[0];
    if (c->log)
        fprintf(c->log, "fit gemm: eff_max %.4f +- %.4f, operand %.1f +- %.1f GB/s, launch %.2f +- %.2f us; "
                "%d points, rms rel err %.3f, max %.3f\n", r.p[1], r.se[1], r.p[2] / 1e9, r.se[2] / 1e9,
                r.p[0] * 1e6, r.se[0] * 1e6, r.points, r.rms_rel_err, r.max_rel_err);
    return 0;
}

/* Memory-bound fit over the points whose kernel is `only` (NULL = all memory-bound points). */
static int fit_memory(fit_ctx *c, const char *only, cJSON *dst, const char *key, moe_error *err) {
    int n = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            n += is_memory(p) && (!only || strcmp(p->kernel, only) == 0);
        }
    double *x = moe_xcalloc((size_t)n * 2 + 1, sizeof *x), *y = moe_xcalloc((size_t)n + 1, sizeof *y);
    int k = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (!is_memory(p) || (only && strcmp(p->kernel, only) != 0)) continue;
            x[k * 2 + 0] = 0;
            x[k * 2 + 1] = p->bytes;
            y[k++] = p->time_us * 1e-6;
        }
    fit_term_kind kind[2] = { TERM_CONST, TERM_RATE };
    fit_result r;
    char what[96];
    snprintf(what, sizeof what, "memory-bound %s (launch, bandwidth)", only ? only : "kernels");
    int rc = fit_terms(what, n, 2, kind, x, y, &r, err);
    free(x);
    free(y);
    if (rc) return rc;
    cJSON *o = cJSON_AddObjectToObject(dst, key);
    add_num(o, "GBps", r.p[1] / 1e9);
    add_num(o, "launch_us", r.p[0] * 1e6);
    const char *names[2] = { "launch_us", "GBps" };
    const double scale[2] = { 1e6, 1e-9 };
    add_fit_stats(o, &r, names, scale);
    if (c->log)
        fprintf(c->log, "fit %s: %.2f +- %.2f GB/s, launch %.2f +- %.2f us; %d points, rms rel err %.3f, "
                "max %.3f\n", only ? only : "memory", r.p[1] / 1e9, r.se[1] / 1e9, r.p[0] * 1e6,
                r.se[0] * 1e6, r.points, r.rms_rel_err, r.max_rel_err);
    return 0;
}

typedef struct {
    char op[32], link[16];
    int ranks, nodes;
} comm_group;

static void comm_group_of(const trace_point *p, comm_group *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->op, sizeof g->op, "%s", p->kernel);
    snprintf(g->link, sizeof g->link, "%s", p->link);
    g->ranks = p->ranks;
    g->nodes = (int)trace_point_dim(p, "nodes", 1);
}

static int same_group(const comm_group *a, const comm_group *b) {
    return !strcmp(a->op, b->op) && !strcmp(a->link, b->link) && a->ranks == b->ranks && a->nodes == b->nodes;
}

/* Bus bytes of a collective point: nccl-tests size x busbw factor (the bytes one rank moves). An
 * op nccl-tests does not know (e.g. "a2a" from simcal bench) is an all-to-all. */
static double bus_bytes(const trace_point *p) {
    double f = nccl_busbw_factor(p->kernel, p->ranks);
    if (f <= 0) f = (double)(p->ranks - 1) / p->ranks;
    return p->bytes * f;
}

/* Link-class priority of an op: point-to-point is the purest measure of a link, then all-to-all. */
static int op_rank(const char *op) {
    if (!strcmp(op, "sendrecv")) return 0;
    if (strstr(op, "alltoall") || strstr(op, "a2a")) return 1;
    return 2;
}

static int fit_collectives(fit_ctx *c, cJSON *root, cJSON *links, moe_error *err) {
    comm_group groups[64];
    int ng = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (!is_collective(p)) continue;
            comm_group g;
            comm_group_of(p, &g);
            int found = 0;
            for (int k = 0; k < ng && !found; k++) found = same_group(&groups[k], &g);
            if (!found && ng < 64) groups[ng++] = g;
        }
    if (ng == 0) return 0;
    cJSON *arr = cJSON_AddArrayToObject(root, "collectives");
    int best_for_class[CM_LINK_N];
    double best_beta[CM_LINK_N], best_alpha[CM_LINK_N];
    char best_from[CM_LINK_N][96];
    for (int l = 0; l < CM_LINK_N; l++) best_for_class[l] = 99;
    for (int k = 0; k < ng; k++) {
        int n = 0;
        for (int t = 0; t < c->n_traces; t++)
            for (int i = 0; i < c->traces[t].n; i++) {
                comm_group g;
                if (!is_collective(&c->traces[t].pts[i])) continue;
                comm_group_of(&c->traces[t].pts[i], &g);
                n += same_group(&g, &groups[k]);
            }
        double *x = moe_xcalloc((size_t)n * 2 + 1, sizeof *x), *y = moe_xcalloc((size_t)n + 1, sizeof *y);
        int m = 0;
        for (int t = 0; t < c->n_traces; t++)
            for (int i = 0; i < c->traces[t].n; i++) {
                const trace_point *p = &c->traces[t].pts[i];
                comm_group g;
                if (!is_collective(p)) continue;
                comm_group_of(p, &g);
                if (!same_group(&g, &groups[k])) continue;
                x[m * 2 + 0] = 0;
                x[m * 2 + 1] = bus_bytes(p);
                y[m++] = p->time_us * 1e-6;
            }
        fit_term_kind kind[2] = { TERM_CONST, TERM_RATE };
        fit_result r;
        char what[128];
        snprintf(what, sizeof what, "collective %.31s over %.15s, %d ranks (alpha, beta)", groups[k].op,
                 groups[k].link, groups[k].ranks);
        int rc = fit_terms(what, n, 2, kind, x, y, &r, err);
        free(x);
        free(y);
        if (rc) return rc;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", groups[k].op);
        cJSON_AddStringToObject(o, "link", groups[k].link);
        cJSON_AddNumberToObject(o, "ranks", groups[k].ranks);
        cJSON_AddNumberToObject(o, "nodes", groups[k].nodes);
        add_num(o, "alpha_us", r.p[0] * 1e6);
        add_num(o, "GBps", r.p[1] / 1e9);
        const char *names[2] = { "alpha_us", "GBps" };
        const double scale[2] = { 1e6, 1e-9 };
        add_fit_stats(o, &r, names, scale);
        cJSON_AddItemToArray(arr, o);
        if (c->log)
            fprintf(c->log, "fit %s %s %d ranks: alpha %.2f +- %.2f us, beta %.2f +- %.2f GB/s (bus); "
                    "%d points, rms rel err %.3f, max %.3f\n", groups[k].op, groups[k].link,
                    groups[k].ranks, r.p[0] * 1e6, r.se[0] * 1e6, r.p[1] / 1e9, r.se[1] / 1e9,
                    r.points, r.rms_rel_err, r.max_rel_err);
        int cls = cm_link_class_parse(groups[k].link);
        if (cls >= 0 && op_rank(groups[k].op) < best_for_class[cls]) {
            best_for_class[cls] = op_rank(groups[k].op);
            best_alpha[cls] = r.p[0];
            best_beta[cls] = r.p[1];
            snprintf(best_from[cls], sizeof best_from[cls], "%.31s, %d ranks", groups[k].op, groups[k].ranks);
        }
    }
    for (int l = 0; l < CM_LINK_N; l++) {
        if (best_for_class[l] == 99) continue;
        cJSON *old = cJSON_GetObjectItemCaseSensitive(links, cm_link_class_name(l));
        if (old) cJSON_DeleteItemFromObjectCaseSensitive(links, cm_link_class_name(l));
        cJSON *o = cJSON_AddObjectToObject(links, cm_link_class_name(l));
        add_num(o, "alpha_us", best_alpha[l] * 1e6);
        add_num(o, "GBps", best_beta[l] / 1e9);
        cJSON_AddStringToObject(o, "from", best_from[l]);
    }
    return 0;
}

/* ---- the whole model ----------------------------------------------------------------------------- */

static const char *basename_of(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int fit_build_model(const fit_options *opt, cJSON **model, FILE *log, moe_error *err) {
    *model = NULL;
    if (opt->n_traces < 1) return moe_error_input(err, NULL, NULL, NULL, "at least one trace to fit");
    fit_ctx c = { moe_xcalloc((size_t)opt->n_traces, sizeof(trace)), opt->n_traces, log };
    cJSON *base = NULL, *root = NULL;
    int rc = 0;
    costmodel base_cm;
    if (opt->base_path) {
        if ((rc = costmodel_load(opt->base_path, &base_cm, err))) goto done;
        if (!(base = json_load(opt->base_path, 0, err))) { rc = EXIT_BADINPUT; goto done; }
    }
    for (int t = 0; t < opt->n_traces && !rc; t++) rc = trace_read(opt->trace_paths[t], &c.traces[t], err);
    if (rc) goto done;

    int n_gemm = 0, n_mem = 0, n_comm = 0;
    for (int t = 0; t < c.n_traces; t++)
        for (int i = 0; i < c.traces[t].n; i++) {
            n_gemm += is_gemm_like(&c.traces[t].pts[i]);
            n_mem += is_memory(&c.traces[t].pts[i]);
            n_comm += is_collective(&c.traces[t].pts[i]);
        }
    const trace_provenance *pv = &c.traces[0].prov;
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moesim-costmodel/1");
    char label[CM_NAME_MAX];
    snprintf(label, sizeof label, "%s", opt->source ? opt->source : "fitted");
    cJSON_AddStringToObject(root, "source", label);
    cJSON_AddStringToObject(root, "device", opt->device ? opt->device
                            : (base && !n_gemm) ? base_cm.device : pv->device);
    cJSON_AddBoolToObject(root, "measured", base == NULL);
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    cJSON *pj = cJSON_AddObjectToObject(root, "provenance");
    cJSON_AddStringToObject(pj, "kind", trace_kind_name(pv->kind));
    cJSON_AddStringToObject(pj, "device", pv->device);
    cJSON_AddStringToObject(pj, "host", pv->host);
    cJSON_AddStringToObject(pj, "date", pv->date);
    cJSON_AddStringToObject(pj, "cuda", pv->cuda);
    cJSON_AddStringToObject(pj, "nccl", pv->nccl);
    cJSON *tr = cJSON_AddArrayToObject(root, "traces");
    for (int t = 0; t < opt->n_traces; t++) {
        char hex[17];
        if ((rc = calib_file_hash(opt->trace_paths[t], hex, err))) goto done;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", opt->trace_paths[t]);
        cJSON_AddStringToObject(o, "fnv1a64", hex);
        cJSON_AddNumberToObject(o, "points", c.traces[t].n);
        cJSON_AddItemToArray(tr, o);
    }
    if (base) {
        cJSON *b = cJSON_AddObjectToObject(root, "base");
        char hex[17];
        if ((rc = calib_file_hash(opt->base_path, hex, err))) goto done;
        cJSON_AddStringToObject(b, "path", opt->base_path);
        cJSON_AddStringToObject(b, "fnv1a64", hex);
        cJSON_AddItemToArray(notes, cJSON_CreateString(
            "sections not fitted from the traces are copied from the base model; \"measured\" is "
            "false because part of the model is not a measurement"));
    }

    /* peaks: base model > trace provenance > empirical (the best rate measured: CPU traces) */
    double peak_bf16 = 0, peaks[4];
    cJSON *pk = cJSON_AddObjectToObject(root, "peak_tflops");
    if (base) {
        peak_bf16 = base_cm.peak_flops[DT_BF16];
        add_num(pk, "fp8", base_cm.peak_flops[DT_FP8] / 1e12);
        add_num(pk, "bf16", base_cm.peak_flops[DT_BF16] / 1e12);
        add_num(pk, "fp16", base_cm.peak_flops[DT_FP16] / 1e12);
        add_num(pk, "fp32", base_cm.peak_flops[DT_FP32] / 1e12);
        for (int k = 0; k < 4; k++) peaks[k] = base_cm.peak_flops[k];
    } else if (pv->peak_bf16_tflops > 0) {
        peak_bf16 = pv->peak_bf16_tflops * 1e12;
        add_num(pk, "fp8", 2 * pv->peak_bf16_tflops);
        add_num(pk, "bf16", pv->peak_bf16_tflops);
        add_num(pk, "fp16", pv->peak_bf16_tflops);
        add_num(pk, "fp32", pv->peak_bf16_tflops / 14.7);
        peaks[DT_FP8] = 2 * peak_bf16;
        peaks[DT_BF16] = peaks[DT_FP16] = peak_bf16;
        peaks[DT_FP32] = sig6(pv->peak_bf16_tflops / 14.7) * 1e12;
    } else {
        for (int t = 0; t < c.n_traces; t++)
            for (int i = 0; i < c.traces[t].n; i++) {
                const trace_point *p = &c.traces[t].pts[i];
                if (is_gemm_like(p) && p->flops / (p->time_us * 1e-6) > peak_bf16)
                    peak_bf16 = p->flops / (p->time_us * 1e-6);
            }
        if (peak_bf16 <= 0) peak_bf16 = 1e9;
        peak_bf16 = sig6(peak_bf16 / 1e12) * 1e12;
        const char *k4[4] = { "fp8", "bf16", "fp16", "fp32" };
        for (int k = 0; k < 4; k++) add_num(pk, k4[k], peak_bf16 / 1e12);
        for (int k = 0; k < 4; k++) peaks[k] = peak_bf16;
        cJSON_AddItemToArray(notes, cJSON_CreateString(
            "peak_tflops is empirical (the best GEMM rate in the traces, every dtype): the device has "
            "no published peak in the trace provenance (CPU references compute in FP32 throughout)"));
    }

    double eff = 0, launch = 0;
    if (n_gemm > 0) {
        if ((rc = fit_gemm(&c, peaks, root, &eff, &launch, err))) goto done;
    } else if (base) {
        cJSON_AddItemToObject(root, "gemm", cJSON_Duplicate(cJSON_GetObjectItem(base, "gemm"), 1));
    } else {
        rc = moe_error_input(err, opt->trace_paths[0], "points", NULL,
                             "GEMM points (kernel names with \"gemm\"/\"ffn\", flops > 0), or --base "
                             "MODEL to take the GEMM model from");
        goto done;
    }
    if (base) {
        cJSON_AddItemToObject(root, "attention", cJSON_Duplicate(cJSON_GetObjectItem(base, "attention"), 1));
    } else {
        cJSON *a = cJSON_AddObjectToObject(root, "attention");
        add_num(a, "eff", eff);
        add_num(a, "launch_us", launch * 1e6);
        cJSON_AddItemToArray(notes, cJSON_CreateString(
            "attention: no attention kernel in the traces; its efficiency is assumed equal to the "
            "fitted GEMM eff_max"));
    }
    if (n_mem > 0) {
        if ((rc = fit_memory(&c, NULL, root, "memory", err))) goto done;
        cJSON *ks = cJSON_AddObjectToObject(root, "kernels");
        /* one fit per memory-bound kernel with enough distinct sizes */
        for (int t = 0; t < c.n_traces; t++)
            for (int i = 0; i < c.traces[t].n; i++) {
                const trace_point *p = &c.traces[t].pts[i];
                if (!is_memory(p) || cJSON_GetObjectItemCaseSensitive(ks, p->kernel)) continue;
                int n = 0;
                for (int u = 0; u < c.n_traces; u++)
                    for (int j = 0; j < c.traces[u].n; j++)
                        n += is_memory(&c.traces[u].pts[j]) && !strcmp(c.traces[u].pts[j].kernel, p->kernel);
                if (n < 4) continue;
                moe_error e2;
                if (fit_memory(&c, p->kernel, ks, p->kernel, &e2) && log)
                    fprintf(log, "note: %s\n", e2.msg);
            }
    } else if (base) {
        cJSON_AddItemToObject(root, "memory", cJSON_Duplicate(cJSON_GetObjectItem(base, "memory"), 1));
        cJSON *bk = cJSON_GetObjectItem(base, "kernels");
        if (bk) cJSON_AddItemToObject(root, "kernels", cJSON_Duplicate(bk, 1));
    } else {
        rc = moe_error_input(err, opt->trace_paths[0], "points", NULL,
                             "memory-bound kernel points (bytes > 0, no link), or --base MODEL");
        goto done;
    }
    cJSON *links = base && cJSON_GetObjectItem(base, "links")
                   ? cJSON_Duplicate(cJSON_GetObjectItem(base, "links"), 1) : cJSON_CreateObject();
    cJSON_AddItemToObject(root, "links", links);
    if (n_comm > 0 && (rc = fit_collectives(&c, root, links, err))) goto done;

done:
    for (int t = 0; t < c.n_traces; t++) trace_free(&c.traces[t]);
    free(c.traces);
    cJSON_Delete(base);
    if (rc) cJSON_Delete(root);
    else *model = root;
    return rc;
}

int fit_write_model(const fit_options *opt, const char *out_path, FILE *log, moe_error *err) {
    cJSON *m = NULL;
    fit_options o = *opt;
    char label[CM_NAME_MAX];
    if (!o.source) {  /* default label: the output file's name without .json */
        snprintf(label, sizeof label, "%s", basename_of(out_path));
        char *dot = strstr(label, ".json");
        if (dot) *dot = '\0';
        o.source = label;
    }
    int rc = fit_build_model(&o, &m, log, err);
    if (rc) return rc;
    /* sanity: what we write must load through the simulator's reader */
    char *txt = cJSON_Print(m);
    costmodel cm;
    rc = costmodel_parse(out_path, txt, &cm, err);
    free(txt);
    if (!rc) rc = json_write_atomic(out_path, m, err);
    cJSON_Delete(m);
    return rc;
}
