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
    const double *y0;     /* a known part of each time (NULL: none): t = y0 + the terms */
} fit_data;

/* Parameters are q_j = log p_j. term_j = p_j (const) or x_ij / p_j (rate). */
static double term_value(fit_term_kind k, double p, double x) { return k == TERM_CONST ? p : x / p; }

static int resid_f(const gsl_vector *q, void *params, gsl_vector *f) {
    const fit_data *d = params;
    for (int i = 0; i < d->n; i++) {
        double t = d->y0 ? d->y0[i] : 0.0;
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
        gsl_vector_set(y, i, d->y[i] - (d->y0 ? d->y0[i] : 0.0));
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

/* Trust-region Levenberg-Marquardt over log-parameters q (m of them, started at q0) for a residual
 * function of n points; standard errors in q from the covariance scaled by chi^2/dof (the noise
 * level is estimated). fdf->df NULL: finite-difference Jacobian. Returns q, se_q and chi^2. */
static int nlinear_solve(const char *what, gsl_multifit_nlinear_fdf *fdf, const double *q0_in, double *q_out,
                         double *se_q, double *chisq_out, int *iters, moe_error *err) {
    size_t n = fdf->n, m = fdf->p;
    gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
    params.trs = gsl_multifit_nlinear_trs_lm;
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, n, m);
    gsl_vector *q0 = gsl_vector_alloc(m);
    for (size_t j = 0; j < m; j++) gsl_vector_set(q0, j, q0_in[j]);
    int info = 0, rc = 0;
    int status = gsl_multifit_nlinear_init(q0, fdf, w);
    if (status == GSL_SUCCESS)
        status = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 1e-12, NULL, NULL, &info, w);
    /* GSL_EMAXITER with a finite residual is still a usable optimum; anything else is not */
    gsl_vector *f = gsl_multifit_nlinear_residual(w);
    double chisq = 0;
    gsl_blas_ddot(f, f, &chisq);
    if ((status != GSL_SUCCESS && status != GSL_EMAXITER) || !isfinite(chisq)) {
        rc = moe_error_set(err, EXIT_RUNTIME, "%s: fit failed (%s)", what, gsl_strerror(status));
    } else {
        gsl_matrix *cov = gsl_matrix_alloc(m, m);
        /* a singular Jacobian (a point held at its ceiling: no parameter moves it) has no covariance:
         * standard errors 0 */
        if (gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov) != GSL_SUCCESS) gsl_matrix_set_zero(cov);
        double s2 = n > m ? chisq / (double)(n - m) : 0.0;
        const gsl_vector *q = gsl_multifit_nlinear_position(w);
        for (size_t j = 0; j < m; j++) {
            q_out[j] = gsl_vector_get(q, j);
            double vq = gsl_matrix_get(cov, j, j) * s2;
            se_q[j] = sqrt(vq > 0 && isfinite(vq) ? vq : 0);
        }
        gsl_matrix_free(cov);
        *iters = (int)gsl_multifit_nlinear_niter(w);
        *chisq_out = chisq;
    }
    gsl_vector_free(q0);
    gsl_multifit_nlinear_free(w);
    return rc;
}

/* The nonlinear (log-parameter) fit of the terms in d, started from positive p0. */
static int nlinear_fit(const char *what, const fit_data *d, const double *p0, double *p, double *se,
                       int *iters, moe_error *err) {
    int m = d->m;
    gsl_multifit_nlinear_fdf fdf = { .f = resid_f, .df = resid_df, .fvv = NULL,
                                     .n = (size_t)d->n, .p = (size_t)m, .params = (void *)d };
    double q0[FIT_MAX_TERMS] = {0}, q[FIT_MAX_TERMS] = {0}, se_q[FIT_MAX_TERMS] = {0}, chisq = 0;
    for (int j = 0; j < m; j++) q0[j] = log(p0[j]);
    int rc = nlinear_solve(what, &fdf, q0, q, se_q, &chisq, iters, err);
    for (int j = 0; !rc && j < m; j++) {
        p[j] = exp(q[j]);
        se[j] = p[j] * se_q[j];   /* delta method: dp = p dq */
    }
    return rc;
}

int fit_terms(const char *what, int n, int m, const fit_term_kind *kind, const double *x,
              const double *y, fit_result *out, moe_error *err) {
    return fit_terms_offset(what, n, m, kind, x, y, NULL, out, err);
}

int fit_terms_offset(const char *what, int n, int m, const fit_term_kind *kind, const double *x,
                     const double *y, const double *y0, fit_result *out, moe_error *err) {
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
        d = (fit_data){ n, na, ka, xa, y, y0 };
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
        double r = fabs(((y0 ? y0[i] : 0.0) + fit_eval(out, x + (size_t)i * m) - y[i]) / y[i]);
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
static int is_attention(const trace_point *p) { return !strncmp(p->kernel, "attention_", 10); }
static int is_memory(const trace_point *p) {
    return !is_collective(p) && !is_gemm_like(p) && !is_attention(p) && p->bytes > 0;
}
/* quantize kernels (recipes.h classes "quantize", "quantize_amax", "quantize_rht_sr"): fitted per kernel
 * only, never into the generic memory model */
static int is_quantize(const trace_point *p) { return is_memory(p) && !strncmp(p->kernel, "quantize", 8); }

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

/* GEMM section (the additive form over every GEMM-like point). tmpl: the peaks (from the base model,
 * the trace provenance, or (CPU) empirical). */
static int fit_gemm(fit_ctx *c, const costmodel *tmpl, cJSON *root, double *eff_out,
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
            double peak = costmodel_peak_flops(tmpl, calib_dtype_of(p->dtype));
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

/* ---- GEMM: the tile/wave form per precision (costmodel.h), fitted on GPU GEMM tables ------------ */

/* Tile sizes the libraries choose from. DeepGEMM's blockwise FP8 kernels: block_m 64/128 (256 only
 * with block_n <= 128), block_n 16..128 step 8 plus 144 and 160 (deep_gemm/jit_kernels/gemm.py
 * get_best_configs at 327ec92f6977e7fee022cb76a8f273b75483c3d8); cuBLAS-class libraries (BF16, per-tensor
 * FP8, Blackwell MX): 64/128/256 in both dimensions. */
static const int DEEPGEMM_TILE_M[] = {64, 128};
static const int DEEPGEMM_TILE_N[] = {16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 144, 160};
static const int CUBLAS_TILES[] = {64, 128, 256};

static void tile_set_of(dtype_kind dt, cm_gemm_params *g) {
    const int *tm = dt == DT_FP8 ? DEEPGEMM_TILE_M : CUBLAS_TILES, *tn = dt == DT_FP8 ? DEEPGEMM_TILE_N : CUBLAS_TILES;
    g->n_tile_m = dt == DT_FP8 ? 2 : 3;
    g->n_tile_n = dt == DT_FP8 ? (int)(sizeof DEEPGEMM_TILE_N / sizeof DEEPGEMM_TILE_N[0]) : 3;
    for (int i = 0; i < g->n_tile_m; i++) g->tile_m[i] = tm[i];
    for (int i = 0; i < g->n_tile_n; i++) g->tile_n[i] = tn[i];
}

/* a point the shape-based predictors can price: m, n, k given */
static int has_mnk(const trace_point *p) {
    return trace_point_dim(p, "m", 0) > 0 && trace_point_dim(p, "n", 0) > 0 && trace_point_dim(p, "k", 0) > 0;
}

#define GEMM_MAX_GROUPS 1024

/* A GEMM-like point priced by a cost model from its shape (groups x m x n x k). */
static double predict_gemm(const costmodel *cm, const trace_point *p) {
    double tok[GEMM_MAX_GROUPS];
    int g = (int)trace_point_dim(p, "groups", 1);
    if (g < 1) g = 1;
    if (g > GEMM_MAX_GROUPS) g = GEMM_MAX_GROUPS;
    for (int i = 0; i < g; i++) tok[i] = trace_point_dim(p, "m", 0);
    return costmodel_grouped_gemm_s(cm, tok, g, trace_point_dim(p, "n", 0), trace_point_dim(p, "k", 0),
                                    calib_dtype_of(p->dtype));
}

/* An attention point's launch shape; a sliding window of W < seq keys is a causal band of W keys per
 * query (as compute_attention_chunk prices a windowed layer). */
static cm_attn_shape attn_shape_of(const trace_point *p) {
    cm_attn_shape a = {.batch = trace_point_dim(p, "batch", 1), .heads = trace_point_dim(p, "heads", 1),
                       .seq_q = trace_point_dim(p, "seq", 0), .seq_k = trace_point_dim(p, "seq", 0),
                       .d_qk = trace_point_dim(p, "d_qk", 0), .d_v = trace_point_dim(p, "d_v", 0),
                       .causal = trace_point_dim(p, "causal", 0) > 0};
    double w = trace_point_dim(p, "window", 0);
    if (w > 0 && w < a.seq_q) a.seq_k = w, a.causal = 1;
    return a;
}

static int attention_bwd(const trace_point *p) { return !strcmp(p->kernel, "attention_bwd"); }

double fit_predict_compute(const costmodel *model, const trace_point *p) {
    /* published tables are burst rates: the model's sustained clock does not apply to them */
    costmodel burst = *model;
    burst.sustained = 1.0;
    const costmodel *cm = &burst;
    if (is_attention(p)) {
        cm_attn_shape a = attn_shape_of(p);
        return costmodel_attention_core_s(cm, &a, attention_bwd(p));
    }
    if (is_gemm_like(p)) {
        if (has_mnk(p)) return predict_gemm(cm, p);
        /* shape-less GEMM-like points (simcal bench's expert FFN): the additive form on their counts */
        const cm_gemm_params *g = &cm->gemm;
        return g->launch_s + p->flops / (costmodel_peak_flops(cm, calib_dtype_of(p->dtype)) * g->eff_max) +
               p->bytes / g->operand_Bps;
    }
    return costmodel_kernel_s(cm, p->kernel, p->bytes);
}

#define TILE_PARAMS 6   /* log: launch, eff_max, operand bandwidth, tile load rate, tile overhead, q */
static const char *const TILE_NAMES[TILE_PARAMS] = {"launch_us", "eff_max", "operand_GBps", "tile_load_GBps",
                                                     "tile_overhead_us", "overlap_q"};
static const double TILE_SCALE[TILE_PARAMS] = {1e6, 1.0, 1e-9, 1e-9, 1e6, 1.0};

typedef struct {
    int n;
    const trace_point **pts;
    costmodel *cm;       /* peaks and sm_count; gemm_dt[dt] is set from the parameters */
    dtype_kind dt;
    int eff_only;        /* 1: the parameter vector is log eff_max alone (the rest fixed) */
    const double *w;     /* per point: 1 / sqrt(points of its table), every published table weighs alike */
} tile_data;

/* Weights that make every table (trace_point.table, else its trace) count alike in a fit of n points:
 * a 48-point sweep does not drown a table's one published peak rate. */
static double *table_weights(const trace_point *const *pts, int n) {
    double *w = moe_xcalloc((size_t)n + 1, sizeof *w);
    for (int i = 0; i < n; i++) {
        int same = 0;
        for (int j = 0; j < n; j++) same += !strcmp(pts[i]->table, pts[j]->table);
        w[i] = 1.0 / sqrt((double)same);
    }
    return w;
}

/* The fitted coordinates: logarithms of the rates and times, logit(eff_max / 1.5) (eff_max stays in
 * (0, 1.5), the model file's range: it is the tensor-core rate of the tile form, which wave
 * quantization and tile overheads lower to what a GEMM achieves) and log(q - 1) (the smooth max of SM and HBM time stays between their maximum and their sum:
 * q < 1 would make the two overlap less than not at all, and q -> 0 turns the form into a degenerate
 * product, which a table without large shapes, such as XLA's sm_100 one, can otherwise fall into). */
#define EFF_RANGE 1.5
static double logistic(double t) { return EFF_RANGE / (1.0 + exp(-t)); }
static double logit(double e) { return log(e / (EFF_RANGE - e)); }

static void tile_params_set(const gsl_vector *q, int eff_only, cm_gemm_params *g) {
    if (eff_only) {
        g->eff_max = logistic(gsl_vector_get(q, 0));
        return;
    }
    g->launch_s = exp(gsl_vector_get(q, 0));
    g->eff_max = logistic(gsl_vector_get(q, 1));
    g->operand_Bps = exp(gsl_vector_get(q, 2));
    g->tile_load_Bps = exp(gsl_vector_get(q, 3));
    g->tile_overhead_s = exp(gsl_vector_get(q, 4));
    g->overlap_q = 1.0 + exp(gsl_vector_get(q, 5));
}

/* d value / d coordinate of each tile parameter (the standard errors' delta method) */
static double tile_param_slope(int j, double v) {
    if (j == 1) return v * (1.0 - v / EFF_RANGE);   /* eff_max = logistic */
    if (j == 5) return v - 1.0;         /* q = 1 + exp */
    return v;                            /* exp */
}

static int tile_resid(const gsl_vector *q, void *params, gsl_vector *f) {
    tile_data *d = params;
    tile_params_set(q, d->eff_only, &d->cm->gemm_dt[d->dt]);
    for (int i = 0; i < d->n; i++) {
        double y = d->pts[i]->time_us * 1e-6;
        gsl_vector_set(f, i, d->w[i] * (predict_gemm(d->cm, d->pts[i]) - y) / y);
    }
    return GSL_SUCCESS;
}

/* Fit the tile/wave form of precision dt on the shaped GEMM points of that precision; adds
 * by_dtype.<name> with its parameters and fit statistics. With more points than 2 x parameters all
 * six are fitted; with 3 or more and a fitted `sibling` of the same library class (a cuBLAS-class
 * precision beside BF16's fit), only eff_max is, the kernel structure (launch, operand streaming,
 * tile load rate and overhead, overlap) taken from the sibling: a few published points resolve a
 * precision's tensor-core efficiency, not its tiling. */
static int fit_gemm_tiled(fit_ctx *c, const costmodel *tmpl, dtype_kind dt, const cm_gemm_params *sibling,
                          int from_tiles, cJSON *by_dtype, cm_gemm_params *fitted, int *done, moe_error *err) {
    *done = 0;
    int n = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            n += is_gemm_like(p) && has_mnk(p) && calib_dtype_of(p->dtype) == dt;
        }
    /* with a tiles model (--tiles) every precision with a point takes its structure: one point
     * resolves eff_max (a published peak rate), more points average it */
    int eff_only = from_tiles || n <= 2 * TILE_PARAMS;
    if (eff_only && (n < (from_tiles ? 1 : 3) || !sibling)) return 0;
    const trace_point **pts = moe_xcalloc((size_t)n, sizeof *pts);
    int k = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (is_gemm_like(p) && has_mnk(p) && calib_dtype_of(p->dtype) == dt) pts[k++] = p;
        }
    costmodel cm = *tmpl;
    memset(&cm.gemm_dt[dt], 0, sizeof cm.gemm_dt[dt]);
    if (eff_only) cm.gemm_dt[dt] = *sibling;
    tile_set_of(dt, &cm.gemm_dt[dt]);
    cm.gemm_fitted[dt] = 1;
    /* the ceiling: the best fraction of peak among this precision's points (a maximum-achievable
     * rate, MAMF's best shape, bounds every shape the form extrapolates to) */
    double ceil = 0;
    for (int i = 0; i < n; i++) {
        double e = pts[i]->flops / (pts[i]->time_us * 1e-6 * costmodel_peak_flops(&cm, dt));
        if (e > ceil) ceil = e;
    }
    cm.gemm_dt[dt].ceil_eff = ceil < 1.0 ? ceil : 1.0;
    double *w = table_weights(pts, n);
    tile_data d = {n, pts, &cm, dt, eff_only, w};
    gsl_multifit_nlinear_fdf fdf = {.f = tile_resid, .df = NULL, .fvv = NULL, .n = (size_t)n,
                                    .p = eff_only ? 1 : TILE_PARAMS, .params = &d};
    /* starts: typical Hopper figures (3 us launch, 0.5 us per tile, operand streaming at 0.9 x HBM,
     * 20 TB/s on-chip), efficiencies 0.7 and 0.9, overlap exponents 1.5 and 3; the best optimum wins
     * (the min over tiles makes the surface piecewise smooth) */
    double hbm = c->traces[0].prov.hbm_GBps > 0 ? c->traces[0].prov.hbm_GBps * 1e9 : 3.35e12;
    double best_q[TILE_PARAMS], best_se[TILE_PARAMS], best_chisq = INFINITY;
    int iters = 0, rc = 0, ok = 0;
    for (int s = 0; s < (eff_only ? 2 : 4); s++) {
        double q0[TILE_PARAMS] = {log(3e-6), logit(s & 1 ? 0.9 : 0.7), log(0.9 * hbm), log(20e12), log(0.5e-6),
                                  log((s & 2 ? 3.0 : 1.5) - 1.0)};
        if (eff_only) q0[0] = q0[1];
        double q[TILE_PARAMS], se[TILE_PARAMS], chisq;
        moe_error e1 = {0};
        if (nlinear_solve("gemm tile/wave form", &fdf, q0, q, se, &chisq, &iters, &e1)) { rc = e1.code; *err = e1; continue; }
        ok = 1;
        if (chisq < best_chisq) {
            best_chisq = chisq;
            memcpy(best_q, q, sizeof q);
            memcpy(best_se, se, sizeof se);
        }
    }
    if (!ok) { free(pts); free(w); return rc ? rc : moe_error_set(err, EXIT_RUNTIME, "gemm tile/wave form: no fit"); }
    gsl_vector_view qv = gsl_vector_view_array(best_q, eff_only ? 1 : TILE_PARAMS);
    tile_params_set(&qv.vector, eff_only, &cm.gemm_dt[dt]);
    if (eff_only) {   /* the standard error is eff_max's alone */
        best_se[1] = best_se[0];
        for (int j = 0; j < TILE_PARAMS; j++)
            if (j != 1) best_se[j] = 0;
    }
    fit_result r = {.n_terms = TILE_PARAMS, .points = n};
    double sum2 = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        double y = pts[i]->time_us * 1e-6, e = fabs(predict_gemm(&cm, pts[i]) - y) / y;
        sum2 += e * e;
        if (e > mx) mx = e;
    }
    r.rms_rel_err = sqrt(sum2 / n);
    r.max_rel_err = mx;
    const cm_gemm_params *g = &cm.gemm_dt[dt];
    *fitted = *g;
    *done = 1;
    double vals[TILE_PARAMS] = {g->launch_s, g->eff_max, g->operand_Bps, g->tile_load_Bps, g->tile_overhead_s, g->overlap_q};
    cJSON *o = cJSON_AddObjectToObject(by_dtype, costmodel_dtype_name(dt));
    for (int j = 0; j < TILE_PARAMS; j++) add_num(o, TILE_NAMES[j], vals[j] * TILE_SCALE[j]);
    add_num(o, "ceil_eff", g->ceil_eff);
    cJSON *tm = cJSON_AddArrayToObject(o, "tile_m"), *tn = cJSON_AddArrayToObject(o, "tile_n");
    for (int i = 0; i < g->n_tile_m; i++) cJSON_AddItemToArray(tm, cJSON_CreateNumber(g->tile_m[i]));
    for (int i = 0; i < g->n_tile_n; i++) cJSON_AddItemToArray(tn, cJSON_CreateNumber(g->tile_n[i]));
    cJSON *se = cJSON_AddObjectToObject(o, "stderr");
    for (int j = 0; j < TILE_PARAMS; j++)
        add_num(se, TILE_NAMES[j], tile_param_slope(j, vals[j]) * best_se[j] * TILE_SCALE[j]);
    if (eff_only)
        cJSON_AddStringToObject(o, "from", from_tiles ? "eff_max fitted; the tiling parameters from the tiles model"
                                                      : "eff_max fitted; the tiling parameters from bf16's fit");
    cJSON *fs = cJSON_AddObjectToObject(o, "fit");
    cJSON_AddNumberToObject(fs, "points", n);
    add_num(fs, "rms_rel_err", r.rms_rel_err);
    add_num(fs, "max_rel_err", r.max_rel_err);
    if (c->log)
        fprintf(c->log, "fit gemm %s (tile/wave): eff_max %.4f, operand %.0f GB/s, launch %.2f us, tile load %.0f GB/s, "
                "tile overhead %.3f us, q %.2f; %d points, rms rel err %.3f, max %.3f\n", costmodel_dtype_name(dt),
                g->eff_max, g->operand_Bps / 1e9, g->launch_s * 1e6, g->tile_load_Bps / 1e9, g->tile_overhead_s * 1e6,
                g->overlap_q, n, r.rms_rel_err, r.max_rel_err);
    free(pts);
    free(w);
    return 0;
}

/* ---- attention: per direction, linear in its terms with the launch known (costmodel.h) ---------- */

#define ATTN_LAUNCH_S 3e-6   /* CUDA launch of one kernel in a busy stream (the published models' figure) */

/* The FlashAttention benchmarks hold batch x seq x heads x head dim constant, so a per-call constant
 * and the per-row work cannot be told apart in them; the launch is fixed (ATTN_LAUNCH_S) and the rest
 * is per-row work, which scales with the shapes a training step runs. */
static int fit_attention_dir(fit_ctx *c, int bwd, double peak_bf16, cJSON *dst, moe_error *err) {
    int n = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            n += is_attention(p) && attention_bwd(p) == bwd;
        }
    if (n < 6) return moe_error_set(err, EXIT_RUNTIME, "attention %s: %d points; need 6 or more", bwd ? "bwd" : "fwd", n);
    enum { A_MM = 0, A_PAIR, A_ROW, A_ROW_FIXED, A_CAUSAL, A_N };
    double *x = moe_xcalloc((size_t)n * A_N, sizeof *x), *y = moe_xcalloc((size_t)n, sizeof *y);
    double *y0 = moe_xcalloc((size_t)n, sizeof *y0);
    int k = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (!is_attention(p) || attention_bwd(p) != bwd) continue;
            cm_attn_shape a = attn_shape_of(p);
            double pairs = costmodel_attention_pairs(&a);
            double mm = bwd ? 2.0 * (3.0 * a.d_qk + 2.0 * a.d_v) : 2.0 * (a.d_qk + a.d_v);
            x[k * A_N + A_MM] = pairs * mm / peak_bf16;
            x[k * A_N + A_PAIR] = pairs;
            x[k * A_N + A_ROW] = a.batch * a.heads * a.seq_q * 0.5 * (a.d_qk + a.d_v);
            x[k * A_N + A_ROW_FIXED] = a.batch * a.heads * a.seq_q;
            x[k * A_N + A_CAUSAL] = a.causal ? pairs * mm / peak_bf16 : 0.0;
            y0[k] = ATTN_LAUNCH_S;
            y[k++] = p->time_us * 1e-6;
        }
    fit_term_kind kind[A_N] = {TERM_RATE, TERM_RATE, TERM_RATE, TERM_RATE, TERM_RATE};
    fit_result r;
    char what[64];
    snprintf(what, sizeof what, "attention %s (eff, pair, row, causal)", bwd ? "bwd" : "fwd");
    int rc = fit_terms_offset(what, n, A_N, kind, x, y, y0, &r, err);
    free(x);
    free(y);
    free(y0);
    if (rc) return rc;
    cJSON *o = cJSON_AddObjectToObject(dst, bwd ? "bwd" : "fwd");
    add_num(o, "eff", r.p[A_MM]);
    add_num(o, "pair_ps", isfinite(r.p[A_PAIR]) ? 1e12 / r.p[A_PAIR] : 0.0);
    add_num(o, "row_dim_ps", isfinite(r.p[A_ROW]) ? 1e12 / r.p[A_ROW] : 0.0);
    add_num(o, "row_ps", isfinite(r.p[A_ROW_FIXED]) ? 1e12 / r.p[A_ROW_FIXED] : 0.0);
    add_num(o, "causal_eff", r.p[A_CAUSAL]);
    const char *names[A_N] = {"eff", "pair_ps", "row_dim_ps", "row_ps", "causal_eff"};
    const double scale[A_N] = {1.0, 1.0, 1.0, 1.0, 1.0};
    fit_result se = r;   /* standard errors of the reciprocals by the delta method: d(1/p) = dp / p^2 */
    se.se[A_PAIR] = isfinite(r.p[A_PAIR]) ? 1e12 * r.se[A_PAIR] / (r.p[A_PAIR] * r.p[A_PAIR]) : 0;
    se.se[A_ROW] = isfinite(r.p[A_ROW]) ? 1e12 * r.se[A_ROW] / (r.p[A_ROW] * r.p[A_ROW]) : 0;
    se.se[A_ROW_FIXED] = isfinite(r.p[A_ROW_FIXED]) ? 1e12 * r.se[A_ROW_FIXED] / (r.p[A_ROW_FIXED] * r.p[A_ROW_FIXED]) : 0;
    add_fit_stats(o, &se, names, scale);
    if (c->log)
        fprintf(c->log, "fit attention %s: eff %.4f, pair %.4f ps, row %.4f ps per dim + %.4f ps, causal eff %.4g; "
                "%d points, rms rel err %.3f, max %.3f\n", bwd ? "bwd" : "fwd", r.p[A_MM], 1e12 / r.p[A_PAIR],
                1e12 / r.p[A_ROW], 1e12 / r.p[A_ROW_FIXED], r.p[A_CAUSAL], r.points, r.rms_rel_err, r.max_rel_err);
    return 0;
}

/* A point of the memory fit over `only` (NULL: every memory-bound point but the quantize kernels). */
static int memory_point_of(const trace_point *p, const char *only) {
    return is_memory(p) && (only ? strcmp(p->kernel, only) == 0 : !is_quantize(p));
}

/* t_i = alpha0 + b_i / beta with alpha0 known: beta by relative least squares (x[i * 2 + 1] = b_i);
 * the constant is reported as not fitted (dropped). */
static int fit_alpha_beta_fixed(const char *what, int n, const double *x, const double *y, double alpha0,
                                fit_result *r, moe_error *err) {
    memset(r, 0, sizeof *r);
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double u = x[i * 2 + 1] / y[i];
        num += u * (y[i] - alpha0) / y[i];
        den += u * u;
    }
    if (!(num > 0 && den > 0)) return moe_error_set(err, EXIT_RUNTIME, "%s: no positive bandwidth", what);
    r->n_terms = 2;
    r->kind[0] = TERM_CONST;
    r->kind[1] = TERM_RATE;
    r->p[0] = alpha0;
    r->p[1] = den / num;
    r->dropped[0] = 1;   /* not fitted: known */
    r->points = n;
    double s2 = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs((alpha0 + x[i * 2 + 1] / r->p[1] - y[i]) / y[i]);
        s2 += e * e;
        if (e > mx) mx = e;
    }
    r->rms_rel_err = sqrt(s2 / n);
    r->max_rel_err = mx;
    return 0;
}

/* Memory-bound fit over the points whose kernel is `only` (NULL = all memory-bound points but the
 * quantize kernels). launch_s >= 0: the launch is that known value and the bandwidth alone is fitted
 * (a quantize kernel published as a rate at one or two sizes: the relative least-squares solution of
 * launch + bytes / bw = t). */
static int fit_memory(fit_ctx *c, const char *only, cJSON *dst, const char *key, double launch_s, moe_error *err) {
    int n = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) n += memory_point_of(&c->traces[t].pts[i], only);
    double *x = moe_xcalloc((size_t)n * 2 + 1, sizeof *x), *y = moe_xcalloc((size_t)n + 1, sizeof *y);
    int k = 0;
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            if (!memory_point_of(p, only)) continue;
            x[k * 2 + 0] = 0;
            x[k * 2 + 1] = p->bytes;
            y[k++] = p->time_us * 1e-6;
        }
    fit_term_kind kind[2] = { TERM_CONST, TERM_RATE };
    fit_result r;
    char what[96];
    snprintf(what, sizeof what, "memory-bound %s (launch, bandwidth)", only ? only : "kernels");
    int rc = launch_s >= 0 ? fit_alpha_beta_fixed(what, n, x, y, launch_s, &r, err)
                           : fit_terms(what, n, 2, kind, x, y, &r, err);
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

/* alpha-beta of one group. With fewer than 3 points (published tables often give one large-message
 * busbw) only beta is fitted, alpha taken from `alpha0` (the base model's link): the relative
 * least-squares solution of alpha0 + b_i / beta = t_i. */
static int fit_alpha_beta(const char *what, int n, const double *x, const double *y, double alpha0, fit_result *r,
                          moe_error *err) {
    fit_term_kind kind[2] = { TERM_CONST, TERM_RATE };
    if (n >= 3) return fit_terms(what, n, 2, kind, x, y, r, err);
    return fit_alpha_beta_fixed(what, n, x, y, alpha0, r, err);   /* alpha from the base */
}

static int fit_collectives(fit_ctx *c, cJSON *root, cJSON *links, const costmodel *base, moe_error *err) {
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
    double best_beta[CM_LINK_N], best_alpha[CM_LINK_N], best_line[CM_LINK_N];
    char best_from[CM_LINK_N][96];
    for (int l = 0; l < CM_LINK_N; l++) best_for_class[l] = 99;
    for (int k = 0; k < ng; k++) {
        int n = 0;
        double line = 0;
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
                if (trace_point_dim(p, "line_GBps", 0) > 0) line = trace_point_dim(p, "line_GBps", 0) * 1e9;
            }
        int cls = cm_link_class_parse(groups[k].link);
        double alpha0 = base && cls >= 0 && base->link[cls].present ? base->link[cls].alpha_s : 0.0;
        fit_result r;
        char what[128];
        snprintf(what, sizeof what, "collective %.31s over %.15s, %d ranks (alpha, beta)", groups[k].op,
                 groups[k].link, groups[k].ranks);
        int rc = fit_alpha_beta(what, n, x, y, alpha0, &r, err);
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
            fprintf(c->log, "fit %s %s %d ranks: alpha %.2f us%s, beta %.2f +- %.2f GB/s (bus); "
                    "%d points, rms rel err %.3f, max %.3f\n", groups[k].op, groups[k].link,
                    groups[k].ranks, r.p[0] * 1e6, r.dropped[0] ? " (base)" : "", r.p[1] / 1e9, r.se[1] / 1e9,
                    r.points, r.rms_rel_err, r.max_rel_err);
        if (cls >= 0 && op_rank(groups[k].op) < best_for_class[cls]) {
            best_for_class[cls] = op_rank(groups[k].op);
            best_alpha[cls] = r.p[0];
            best_beta[cls] = r.p[1];
            best_line[cls] = line;
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
        if (best_line[l] > 0) add_num(o, "line_GBps", best_line[l] / 1e9);
        cJSON_AddStringToObject(o, "from", best_from[l]);
    }
    return 0;
}

double fit_predict_point(const costmodel *cm, const cJSON *model, const trace_point *p) {
    if (!is_collective(p)) return fit_predict_compute(cm, p);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(model, "collectives")) {
        const cJSON *op = json_member(c, "op"), *ln = json_member(c, "link");
        const cJSON *rk = json_member(c, "ranks"), *nd = json_member(c, "nodes");
        const cJSON *alpha = json_member(c, "alpha_us"), *gbps = json_member(c, "GBps");
        if (!cJSON_IsString(op) || strcmp(op->valuestring, p->kernel) || !cJSON_IsString(ln) ||
            strcmp(ln->valuestring, p->link) || !cJSON_IsNumber(rk) || rk->valuedouble != p->ranks ||
            (cJSON_IsNumber(nd) && nd->valuedouble != trace_point_dim(p, "nodes", 1)) ||
            !cJSON_IsNumber(alpha) || !cJSON_IsNumber(gbps) || !(gbps->valuedouble > 0))
            continue;
        return alpha->valuedouble * 1e-6 + bus_bytes(p) / (gbps->valuedouble * 1e9);
    }
    return -1;
}

/* Residuals of the fitted model per published table (or per trace when points name no table):
 * points, rms and max relative error of the predicted time; into root.residuals and the log. */
static int add_residuals(const fit_ctx *c, const char *const *paths, cJSON *root, FILE *log, moe_error *err) {
    char *txt = cJSON_PrintUnformatted(root);
    costmodel cm;
    int rc = costmodel_parse("(fitted model)", txt, &cm, err);
    free(txt);
    if (rc) return rc;
    cJSON *res = cJSON_AddObjectToObject(root, "residuals");
    for (int t = 0; t < c->n_traces; t++)
        for (int i = 0; i < c->traces[t].n; i++) {
            const trace_point *p = &c->traces[t].pts[i];
            const char *name = p->table[0] ? p->table : paths[t];
            if (cJSON_GetObjectItemCaseSensitive(res, name)) continue;
            int n = 0;
            double s2 = 0, mx = 0, sum = 0;
            for (int u = 0; u < c->n_traces; u++)
                for (int j = 0; j < c->traces[u].n; j++) {
                    const trace_point *q = &c->traces[u].pts[j];
                    if (strcmp(q->table[0] ? q->table : paths[u], name) != 0) continue;
                    double s = fit_predict_point(&cm, root, q);
                    if (s < 0) continue;
                    double e = (s * 1e6 - q->time_us) / q->time_us;
                    s2 += e * e;
                    sum += e;
                    if (fabs(e) > mx) mx = fabs(e);
                    n++;
                }
            if (!n) continue;
            cJSON *o = cJSON_AddObjectToObject(res, name);
            cJSON_AddNumberToObject(o, "points", n);
            add_num(o, "mean_rel_err", sum / n);
            add_num(o, "rms_rel_err", sqrt(s2 / n));
            add_num(o, "max_rel_err", mx);
            if (log)
                fprintf(log, "residuals %-28s %3d points: mean %+6.1f%%, rms %5.1f%%, max %5.1f%% (predicted - measured time)\n",
                        name, n, 100 * sum / n, 100 * sqrt(s2 / n), 100 * mx);
        }
    return 0;
}

/* ---- the whole model ----------------------------------------------------------------------------- */

/* root.<key> = {"path", "fnv1a64"} of a model the fit was made over (simcal check verifies the hash),
 * and its note. */
static int add_model_ref(cJSON *root, cJSON *notes, const char *key, const char *path, const char *note,
                         moe_error *err) {
    char hex[17];
    int rc = calib_file_hash(path, hex, err);
    if (rc) return rc;
    cJSON *b = cJSON_AddObjectToObject(root, key);
    cJSON_AddStringToObject(b, "path", path);
    cJSON_AddStringToObject(b, "fnv1a64", hex);
    cJSON_AddItemToArray(notes, cJSON_CreateString(note));
    return 0;
}

static const char *basename_of(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int fit_build_model(const fit_options *opt, cJSON **model, FILE *log, moe_error *err) {
    *model = NULL;
    if (opt->n_traces < 1) return moe_error_input(err, NULL, NULL, NULL, "at least one trace to fit");
    gsl_set_error_handler_off();   /* report through moe_error, never abort() */
    fit_ctx c = { moe_xcalloc((size_t)opt->n_traces, sizeof(trace)), opt->n_traces, log };
    cJSON *base = NULL, *root = NULL, *tiles = NULL;
    int rc = 0;
    costmodel base_cm, tiles_cm;
    if (opt->base_path) {
        if ((rc = costmodel_load(opt->base_path, &base_cm, err))) goto done;
        if (!(base = json_load(opt->base_path, 0, err))) { rc = EXIT_BADINPUT; goto done; }
    }
    if (opt->tiles_path) {
        if ((rc = costmodel_load(opt->tiles_path, &tiles_cm, err))) goto done;
        if (!tiles_cm.gemm_fitted[DT_BF16]) {
            rc = moe_error_input(err, opt->tiles_path, "gemm.by_dtype.bf16", NULL,
                                 "a tile/wave GEMM fit (the --tiles model gives the GEMM kernel structure)");
            goto done;
        }
        if (!(tiles = json_load(opt->tiles_path, 0, err))) { rc = EXIT_BADINPUT; goto done; }
    }
    for (int t = 0; t < opt->n_traces && !rc; t++) rc = trace_read(opt->trace_paths[t], &c.traces[t], err);
    if (rc) goto done;

    int n_gemm = 0, n_comm = 0;
    for (int t = 0; t < c.n_traces; t++)
        for (int i = 0; i < c.traces[t].n; i++) {
            n_gemm += is_gemm_like(&c.traces[t].pts[i]);
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
    /* basis: moesim's own GPU measurements are "measured"; fits of others' published measurements
     * are "published"; anything with sections from a base model takes the weaker of the two */
    int all_published = 1, any_published = 0;
    for (int t = 0; t < c.n_traces; t++) {
        all_published &= c.traces[t].prov.kind == TRACE_KIND_PUBLISHED;
        any_published |= c.traces[t].prov.kind == TRACE_KIND_PUBLISHED;
    }
    cJSON_AddBoolToObject(root, "measured", base == NULL && !any_published);
    cJSON_AddStringToObject(root, "basis", all_published || (any_published && !base) ? "published"
                                           : base ? base_cm.basis : "measured");
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
    if (base && (rc = add_model_ref(root, notes, "base", opt->base_path,
                                    "sections not fitted from the traces are copied from the base model; \"measured\" is "
                                    "false because part of the model is not a measurement", err)))
        goto done;
    if (tiles && (rc = add_model_ref(root, notes, "tiles", opt->tiles_path,
                                     "gemm.by_dtype: the tile/wave structure (launch, operand and tile-load rates, tile "
                                     "overhead, overlap) of each precision is the tiles model's (same GPU architecture); "
                                     "eff_max is fitted on this GPU kind's points", err)))
        goto done;

    /* peaks: base model > trace provenance > empirical (the best rate measured: CPU traces) */
    double peak_bf16 = 0, peaks[4];
    costmodel tmpl;   /* the peaks and SM count the compute fits price against */
    memset(&tmpl, 0, sizeof tmpl);
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

    for (int k = 0; k < 4; k++) tmpl.peak_flops[k] = peaks[k];
    tmpl.peak_fp4_flops = base ? base_cm.peak_fp4_flops : 0;
    if (base && base_cm.peak_fp4_flops > 0) add_num(pk, "fp4", base_cm.peak_fp4_flops / 1e12);
    /* the sustained clock is the base model's (a measurement of its own, never fitted on the
     * published burst tables) */
    if (base && cJSON_GetObjectItem(base, "sustained"))
        cJSON_AddItemToObject(root, "sustained", cJSON_Duplicate(cJSON_GetObjectItem(base, "sustained"), 1));
    /* the SM count of GPU traces (the tile/wave GEMM form); CPU traces have none */
    for (int t = 0; t < c.n_traces; t++)
        if (c.traces[t].prov.sm_count > 0 && c.traces[t].prov.kind != TRACE_KIND_CPU) tmpl.sm_count = c.traces[t].prov.sm_count;

    double eff = 0, launch = 0;
    /* the additive default (gemm) needs more points than its 3 parameters; a --tiles fit (a few
     * published rates per precision) keeps the tiles model's default, a fit of 3 points or fewer the
     * base model's */
    const cJSON *gemm_from = tiles ? cJSON_GetObjectItem(tiles, "gemm") : base ? cJSON_GetObjectItem(base, "gemm") : NULL;
    if (n_gemm > 0 && ((n_gemm > 3 && !tiles) || !gemm_from)) {
        if ((rc = fit_gemm(&c, &tmpl, root, &eff, &launch, err))) goto done;
    } else if (n_gemm > 0) {
        cJSON *g = cJSON_Duplicate(gemm_from, 1);
        const char *drop[] = {"by_dtype", "sm_count", NULL};
        for (const char **d = drop; *d; d++) cJSON_DeleteItemFromObject(g, *d);
        cJSON_AddItemToObject(root, "gemm", g);
        eff = cJSON_GetObjectItem(g, "eff_max")->valuedouble;
        launch = cJSON_GetObjectItem(g, "launch_us")->valuedouble * 1e-6;
    }
    if (n_gemm > 0) {
        if (tmpl.sm_count > 0) {
            cJSON *g = cJSON_GetObjectItem(root, "gemm");
            cJSON_AddNumberToObject(g, "sm_count", tmpl.sm_count);
            cJSON *bd = cJSON_AddObjectToObject(g, "by_dtype");
            /* BF16 first: the cuBLAS-class precisions with few points take its tiling; with a tiles
             * model every precision takes that model's fit of it (its BF16 fit when it has none) */
            cm_gemm_params bf16, other;
            int have_bf16 = 0, done_dt;
            if ((rc = fit_gemm_tiled(&c, &tmpl, DT_BF16, tiles ? &tiles_cm.gemm_dt[DT_BF16] : NULL, tiles != NULL, bd,
                                     &bf16, &have_bf16, err)))
                goto done;
            for (int dt = 0; dt < DT_NKINDS && !rc; dt++) {
                if (dt == DT_BF16) continue;
                const cm_gemm_params *sib = have_bf16 && dt != DT_FP8 ? &bf16 : NULL;
                if (tiles) sib = tiles_cm.gemm_fitted[dt] ? &tiles_cm.gemm_dt[dt] : &tiles_cm.gemm_dt[DT_BF16];
                rc = fit_gemm_tiled(&c, &tmpl, (dtype_kind)dt, sib, tiles != NULL, bd, &other, &done_dt, err);
            }
            if (rc) goto done;
            if (!bd->child) cJSON_DeleteItemFromObject(g, "by_dtype");
        }
    } else if (base) {
        cJSON_AddItemToObject(root, "gemm", cJSON_Duplicate(cJSON_GetObjectItem(base, "gemm"), 1));
    } else {
        rc = moe_error_input(err, opt->trace_paths[0], "points", NULL,
                             "GEMM points (kernel names with \"gemm\"/\"ffn\", flops > 0), or --base "
                             "MODEL to take the GEMM model from");
        goto done;
    }
    int n_attn = 0;
    for (int t = 0; t < c.n_traces; t++)
        for (int i = 0; i < c.traces[t].n; i++) n_attn += is_attention(&c.traces[t].pts[i]);
    if (n_attn > 0) {
        cJSON *a = cJSON_AddObjectToObject(root, "attention");
        const cJSON *ba = base ? cJSON_GetObjectItem(base, "attention") : NULL;
        add_num(a, "eff", ba && cJSON_IsNumber(cJSON_GetObjectItem(ba, "eff")) ? cJSON_GetObjectItem(ba, "eff")->valuedouble : eff);
        add_num(a, "launch_us", ATTN_LAUNCH_S * 1e6);
        if ((rc = fit_attention_dir(&c, 0, peaks[DT_BF16], a, err)) || (rc = fit_attention_dir(&c, 1, peaks[DT_BF16], a, err)))
            goto done;
    } else if (base) {
        cJSON_AddItemToObject(root, "attention", cJSON_Duplicate(cJSON_GetObjectItem(base, "attention"), 1));
    } else {
        cJSON *a = cJSON_AddObjectToObject(root, "attention");
        add_num(a, "eff", eff);
        add_num(a, "launch_us", launch * 1e6);
        cJSON_AddItemToArray(notes, cJSON_CreateString(
            "attention: no attention kernel in the traces; its efficiency is assumed equal to the "
            "fitted GEMM eff_max"));
    }
    int n_generic = 0;   /* memory-bound points of the generic memory model (not quantize kernels) */
    for (int t = 0; t < c.n_traces; t++)
        for (int i = 0; i < c.traces[t].n; i++) n_generic += memory_point_of(&c.traces[t].pts[i], NULL);
    if (n_generic > 0) {
        if ((rc = fit_memory(&c, NULL, root, "memory", -1, err))) goto done;
    } else if (base) {
        cJSON_AddItemToObject(root, "memory", cJSON_Duplicate(cJSON_GetObjectItem(base, "memory"), 1));
    } else {
        rc = moe_error_input(err, opt->trace_paths[0], "points", NULL,
                             "memory-bound kernel points (bytes > 0, no link), or --base MODEL");
        goto done;
    }
    /* per-kernel models: the base model's, replaced by a fit for every memory-bound kernel with enough
     * distinct sizes; a quantize kernel's bandwidth alone, at the memory model's launch: published
     * quantize timings bracket one host call each (CUDA events around a Python wrapper: TransformerEngine
     * pull request #2634 finds small shapes "launch-bound at roughly 8-10 us"), so their intercept is the
     * host's launch latency, which the host side prices, not the GPU's per-kernel cost */
    /* (a generic memory fit replaces the base's memory-bound kernels; its quantize kernels stay unless
     * the traces have points of them) */
    const cJSON *bks = base ? cJSON_GetObjectItem(base, "kernels") : NULL;
    cJSON *ks = cJSON_AddObjectToObject(root, "kernels");
    for (const cJSON *k = bks ? bks->child : NULL; k; k = k->next)
        if (n_generic == 0 || !strncmp(k->string, "quantize", 8)) cJSON_AddItemToObject(ks, k->string, cJSON_Duplicate(k, 1));
    const cJSON *mj = cJSON_GetObjectItem(root, "memory");
    double mem_launch = cJSON_IsNumber(cJSON_GetObjectItem(mj, "launch_us")) ? cJSON_GetObjectItem(mj, "launch_us")->valuedouble * 1e-6 : 0;
    char fitted_kernels[CM_MAX_KERNELS][CM_NAME_MAX];
    int n_fitted = 0;
    for (int t = 0; t < c.n_traces; t++)
        for (int i = 0; i < c.traces[t].n; i++) {
            const trace_point *p = &c.traces[t].pts[i];
            if (!is_memory(p)) continue;
            int seen = 0;
            for (int f = 0; f < n_fitted && !seen; f++) seen = !strcmp(fitted_kernels[f], p->kernel);
            if (seen || n_fitted >= CM_MAX_KERNELS) continue;
            snprintf(fitted_kernels[n_fitted++], CM_NAME_MAX, "%s", p->kernel);
            int n = 0;
            for (int u = 0; u < c.n_traces; u++)
                for (int j = 0; j < c.traces[u].n; j++)
                    n += is_memory(&c.traces[u].pts[j]) && !strcmp(c.traces[u].pts[j].kernel, p->kernel);
            if (n < 4 && !is_quantize(p)) continue;
            cJSON_DeleteItemFromObject(ks, p->kernel);
            moe_error e2;
            if (fit_memory(&c, p->kernel, ks, p->kernel, is_quantize(p) ? mem_launch : -1, &e2) && log)
                fprintf(log, "note: %s\n", e2.msg);
        }
    if (!ks->child) cJSON_DeleteItemFromObject(root, "kernels");
    cJSON *links = base && cJSON_GetObjectItem(base, "links")
                   ? cJSON_Duplicate(cJSON_GetObjectItem(base, "links"), 1) : cJSON_CreateObject();
    cJSON_AddItemToObject(root, "links", links);
    if (n_comm > 0 && (rc = fit_collectives(&c, root, links, base ? &base_cm : NULL, err))) goto done;
    rc = add_residuals(&c, opt->trace_paths, root, log, err);

done:
    for (int t = 0; t < c.n_traces; t++) trace_free(&c.traces[t]);
    free(c.traces);
    cJSON_Delete(base);
    cJSON_Delete(tiles);
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
