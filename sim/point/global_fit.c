/* global_fit.c — the joint fit of the global parameters and its leave-one-out (global_fit.h). */
#include "sim/point/global_fit.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"

double gfit_rho(double r, double c) { return c > 0 ? c * c * log1p(r * r / (c * c)) : r * r; }

static double robust_residual(double r, double c) { return copysign(sqrt(gfit_rho(r, c)), r); }

/* d robust_residual / d r (1 at r = 0) */
static double robust_slope(double r, double c) {
    if (c <= 0) return 1.0;
    double rr = robust_residual(r, c);
    return fabs(rr) < 1e-12 ? 1.0 : r / ((1.0 + r * r / (c * c)) * rr);
}

static double theta_of(const gfit_problem *pr, int j, double u) {
    return pr->lo[j] + (pr->hi[j] - pr->lo[j]) / (1.0 + exp(-u));
}

/* ---- priors: one extra residual per parameter that has one ---------------------------------------- */

static int has_prior(const gfit_problem *pr, int j) { return pr->prior_log_sd && pr->prior_log_sd[j] > 0; }

static int n_priors(const gfit_problem *pr) {
    int m = 0;
    for (int j = 0; j < pr->p; j++) m += has_prior(pr, j);
    return m;
}

static double prior_weight(const gfit_problem *pr, int j) {
    return (pr->robust_scale > 0 ? pr->robust_scale : 1.0) / pr->prior_log_sd[j];
}

/* the prior residual of parameter j at u, and its derivative in u */
static double prior_residual(const gfit_problem *pr, int j, double u, double *d_du) {
    double th = theta_of(pr, j, u), s = 1.0 / (1.0 + exp(-u)), w = prior_weight(pr, j);
    if (d_du) *d_du = w * (pr->hi[j] - pr->lo[j]) * s * (1.0 - s) / th;
    return w * (log(th) - pr->prior_log_mean[j]);
}

static double u_of(const gfit_problem *pr, int j, double theta) {
    double f = (theta - pr->lo[j]) / (pr->hi[j] - pr->lo[j]);
    f = fmin(fmax(f, 1e-9), 1.0 - 1e-9);
    return log(f / (1.0 - f));
}

void gfit_result_init(gfit_result *r, int n, int p) {
    memset(r, 0, sizeof *r);
    r->theta = moe_xcalloc((size_t)p, sizeof(double));
    r->ci_lo = moe_xcalloc((size_t)p, sizeof(double));
    r->ci_hi = moe_xcalloc((size_t)p, sizeof(double));
    r->cases_of = moe_xcalloc((size_t)p, sizeof(int));
    r->log_pred = moe_xcalloc((size_t)n, sizeof(double));
    r->loo_log_pred = moe_xcalloc((size_t)n, sizeof(double));
    r->loo_theta = moe_xcalloc((size_t)n * (size_t)p, sizeof(double));
    r->jac = moe_xcalloc((size_t)n * (size_t)p, sizeof(double));
}

void gfit_result_free(gfit_result *r) {
    free(r->theta), free(r->ci_lo), free(r->ci_hi), free(r->cases_of), free(r->log_pred);
    free(r->loo_log_pred), free(r->loo_theta), free(r->jac);
    memset(r, 0, sizeof *r);
}

/* ---- evaluations ------------------------------------------------------------------------------------ */

typedef struct {
    const gfit_problem *pr;
    gfit_eval_fn eval;
    void *ctx;
    moe_error *err;
    int failed;
    int evaluations;
    int *all;             /* 0..n-1 */
    double *u_cached;     /* p: where raw_cached was evaluated */
    double *raw_cached;   /* n: raw log residuals there */
    int have_cache;
    double *jac;          /* n x p: raw residual Jacobian at u_cached (filled by jacobian()) */
} fit_state;

/* raw log residuals of every case at u */
static int residuals_at(fit_state *st, const double *u, double *raw) {
    const gfit_problem *pr = st->pr;
    if (st->have_cache && memcmp(u, st->u_cached, (size_t)pr->p * sizeof(double)) == 0) {
        memcpy(raw, st->raw_cached, (size_t)pr->n * sizeof(double));
        return 0;
    }
    double *theta = moe_xcalloc((size_t)pr->p, sizeof(double));
    for (int j = 0; j < pr->p; j++) theta[j] = theta_of(pr, j, u[j]);
    int rc = st->eval(st->ctx, pr->n, st->all, theta, 0, raw, st->err);
    free(theta);
    if (rc) return rc;
    st->evaluations += pr->n;
    for (int i = 0; i < pr->n; i++) raw[i] -= pr->y[i];
    memcpy(st->u_cached, u, (size_t)pr->p * sizeof(double));
    memcpy(st->raw_cached, raw, (size_t)pr->n * sizeof(double));
    st->have_cache = 1;
    return 0;
}

/* raw residual Jacobian at u into st->jac: one evaluation per parameter group, of the cases it moves */
static int jacobian(fit_state *st, const double *u) {
    const gfit_problem *pr = st->pr;
    int n = pr->n, p = pr->p, rc = 0;
    double *raw = moe_xcalloc((size_t)n, sizeof(double));
    if ((rc = residuals_at(st, u, raw))) { free(raw); return rc; }
    memset(st->jac, 0, (size_t)n * (size_t)p * sizeof(double));
    double *theta = moe_xcalloc((size_t)p, sizeof(double)), *pred = moe_xcalloc((size_t)n, sizeof(double));
    int *cases = moe_xcalloc((size_t)n, sizeof(int)), *col = moe_xcalloc((size_t)n, sizeof(int));
    int max_group = 0;
    for (int j = 0; j < p; j++) max_group = pr->group[j] > max_group ? pr->group[j] : max_group;
    for (int g = 0; g <= max_group && !rc; g++) {
        int m = 0;
        for (int j = 0; j < p; j++) theta[j] = theta_of(pr, j, u[j] + (pr->group[j] == g ? GFIT_DU : 0.0));
        for (int i = 0; i < n; i++) {
            col[i] = -1;
            for (int j = 0; j < p; j++)
                if (pr->group[j] == g && pr->dep[(size_t)i * p + j]) col[i] = j;
            if (col[i] >= 0) cases[m++] = i;
        }
        if (!m) continue;
        if ((rc = st->eval(st->ctx, m, cases, theta, 0, pred, st->err))) break;
        st->evaluations += m;
        for (int k = 0; k < m; k++) {
            int i = cases[k];
            st->jac[(size_t)i * p + col[i]] = (pred[k] - pr->y[i] - raw[i]) / GFIT_DU;
        }
    }
    free(theta), free(pred), free(cases), free(col), free(raw);
    return rc;
}

static int f_cb(const gsl_vector *x, void *vst, gsl_vector *f) {
    fit_state *st = vst;
    const gfit_problem *pr = st->pr;
    double *raw = moe_xcalloc((size_t)pr->n, sizeof(double));
    int rc = residuals_at(st, x->data, raw);
    for (int i = 0; i < pr->n && !rc; i++) gsl_vector_set(f, (size_t)i, robust_residual(raw[i], pr->robust_scale));
    for (int j = 0, row = pr->n; j < pr->p && !rc; j++)
        if (has_prior(pr, j)) gsl_vector_set(f, (size_t)row++, prior_residual(pr, j, x->data[j], NULL));
    free(raw);
    if (rc) st->failed = 1;
    return rc ? GSL_EFAILED : GSL_SUCCESS;
}

/* the Jacobian of the transformed residuals: the raw one scaled by d rho-residual / d r; then the
 * priors' rows (at u) */
static void robust_jacobian(const fit_state *st, const double *raw, const double *u, gsl_matrix *J) {
    const gfit_problem *pr = st->pr;
    for (int i = 0; i < pr->n; i++) {
        double s = robust_slope(raw[i], pr->robust_scale);
        for (int j = 0; j < pr->p; j++) gsl_matrix_set(J, (size_t)i, (size_t)j, s * st->jac[(size_t)i * pr->p + j]);
    }
    for (int j = 0, row = pr->n; j < pr->p; j++) {
        if (!has_prior(pr, j)) continue;
        for (int a = 0; a < pr->p; a++) gsl_matrix_set(J, (size_t)row, (size_t)a, 0.0);
        double d;
        prior_residual(pr, j, u[j], &d);
        gsl_matrix_set(J, (size_t)row++, (size_t)j, d);
    }
}

static int df_cb(const gsl_vector *x, void *vst, gsl_matrix *J) {
    fit_state *st = vst;
    const gfit_problem *pr = st->pr;
    double *raw = moe_xcalloc((size_t)pr->n, sizeof(double));
    int rc = jacobian(st, x->data);
    if (!rc) rc = residuals_at(st, x->data, raw);
    if (!rc) robust_jacobian(st, raw, x->data, J);
    free(raw);
    if (rc) st->failed = 1;
    return rc ? GSL_EFAILED : GSL_SUCCESS;
}

static void state_init(fit_state *st, const gfit_problem *pr, gfit_eval_fn eval, void *ctx, double *jac, moe_error *err) {
    memset(st, 0, sizeof *st);
    st->pr = pr, st->eval = eval, st->ctx = ctx, st->err = err, st->jac = jac;
    st->all = moe_xcalloc((size_t)pr->n, sizeof(int));
    for (int i = 0; i < pr->n; i++) st->all[i] = i;
    st->u_cached = moe_xcalloc((size_t)pr->p, sizeof(double));
    st->raw_cached = moe_xcalloc((size_t)pr->n, sizeof(double));
}

static void state_free(fit_state *st) { free(st->all), free(st->u_cached), free(st->raw_cached); }

/* intervals, predictions and loss at u (st->jac holds the raw Jacobian there) */
static int finish_at(fit_state *st, const double *u, gfit_result *r) {
    const gfit_problem *pr = st->pr;
    int n = pr->n, p = pr->p;
    double *raw = moe_xcalloc((size_t)n, sizeof(double));
    int rc = residuals_at(st, u, raw);
    if (rc) { free(raw); return rc; }
    r->loss = 0;
    for (int i = 0; i < n; i++) {
        r->log_pred[i] = raw[i] + pr->y[i];
        r->loss += gfit_rho(raw[i], pr->robust_scale);
    }
    for (int j = 0; j < p; j++)
        if (has_prior(pr, j)) { double e = prior_residual(pr, j, u[j], NULL); r->loss += e * e; }
    const int rows = n + n_priors(pr);
    for (int j = 0; j < p; j++) {
        r->theta[j] = theta_of(pr, j, u[j]);
        r->cases_of[j] = 0;
        for (int i = 0; i < n; i++) r->cases_of[j] += pr->dep[(size_t)i * p + j];
    }
    gsl_matrix *J = gsl_matrix_alloc((size_t)rows, (size_t)p), *C = gsl_matrix_alloc((size_t)p, (size_t)p);
    robust_jacobian(st, raw, u, J);
    gsl_multifit_nlinear_covar(J, 0.0, C);
    /* s2: the residual variance, the sum of the squared transformed residuals (the loss) / (n - p) */
    double dof = n > p ? n - p : 1, s2 = r->loss / dof, t = gsl_cdf_tdist_Pinv(0.975, dof);
    for (int j = 0; j < p; j++) {
        double sd = sqrt(fmax(0.0, s2 * gsl_matrix_get(C, (size_t)j, (size_t)j)));
        /* a column of zeros (a parameter no case moves) has no interval: its bounds */
        if (!isfinite(sd) || r->cases_of[j] == 0) { r->ci_lo[j] = pr->lo[j], r->ci_hi[j] = pr->hi[j]; continue; }
        r->ci_lo[j] = theta_of(pr, j, u[j] - t * sd);
        r->ci_hi[j] = theta_of(pr, j, u[j] + t * sd);
    }
    memcpy(r->jac, st->jac, (size_t)n * (size_t)p * sizeof(double));
    gsl_matrix_free(J), gsl_matrix_free(C), free(raw);
    return 0;
}

int gfit_fit(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, int max_iter, gfit_result *r, moe_error *err) {
    if (pr->n < pr->p)
        return moe_error_set(err, EXIT_BADINPUT, "%d step cases cannot fit %d global parameters", pr->n, pr->p);
    fit_state st;
    double *jac = moe_xcalloc((size_t)pr->n * (size_t)pr->p, sizeof(double));
    state_init(&st, pr, eval, ctx, jac, err);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    const size_t rows = (size_t)(pr->n + n_priors(pr));
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, rows, (size_t)pr->p);
    gsl_multifit_nlinear_fdf fdf = {.f = f_cb, .df = df_cb, .fvv = NULL, .n = rows, .p = (size_t)pr->p, .params = &st};
    gsl_vector *x = gsl_vector_alloc((size_t)pr->p);
    for (int j = 0; j < pr->p; j++) gsl_vector_set(x, (size_t)j, u_of(pr, j, pr->start[j]));
    int status = gsl_multifit_nlinear_init(x, &fdf, w), it = 0;
    while (status == GSL_SUCCESS && !st.failed && it < max_iter) {
        status = gsl_multifit_nlinear_iterate(w);
        it++;
        int info = 0;
        /* converged: no parameter moves by more than 1e-3 in u (0.1% of its range near the middle),
         * or the gradient vanishes */
        if (status == GSL_SUCCESS && gsl_multifit_nlinear_test(1e-3, 1e-6, 0.0, &info, w) == GSL_SUCCESS) break;
        if (status == GSL_ENOPROG) status = GSL_SUCCESS; /* no step reduced the loss: x is the optimum found */
    }
    int rc = st.failed ? (err->code ? err->code : EXIT_RUNTIME) : 0;
    double *u = moe_xcalloc((size_t)pr->p, sizeof(double));
    memcpy(u, gsl_multifit_nlinear_position(w)->data, (size_t)pr->p * sizeof(double));
    r->iterations = it;
    /* the Jacobian at the optimum itself (the solver's is at its last accepted step's start) */
    if (!rc) rc = jacobian(&st, u);
    if (!rc) rc = finish_at(&st, u, r);
    r->evaluations += st.evaluations;
    free(u);
    gsl_vector_free(x);
    gsl_multifit_nlinear_free(w);
    gsl_set_error_handler(old);
    state_free(&st);
    free(jac);
    return rc;
}

int gfit_at(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, gfit_result *r, moe_error *err) {
    fit_state st;
    double *jac = moe_xcalloc((size_t)pr->n * (size_t)pr->p, sizeof(double));
    double *u = moe_xcalloc((size_t)pr->p, sizeof(double));
    state_init(&st, pr, eval, ctx, jac, err);
    for (int j = 0; j < pr->p; j++) u[j] = u_of(pr, j, r->theta[j]);
    int rc = jacobian(&st, u);
    if (!rc) rc = finish_at(&st, u, r);
    r->evaluations += st.evaluations;
    state_free(&st);
    free(jac), free(u);
    return rc;
}

/* ---- leave-one-out ------------------------------------------------------------------------------------ */

/* du minimizing sum_{i != k} rho(r_i + J_i du): iteratively reweighted least squares (weights
 * 1 / (1 + e_i^2 / c^2), Cauchy's) on the linearized residuals; parameters no remaining case moves
 * return to their start */
static void refit_without(const gfit_problem *pr, const double *raw, const double *jac, const double *u0, int k,
                          double *du) {
    int n = pr->n, p = pr->p;
    int *free_col = moe_xcalloc((size_t)p, sizeof(int)), *fixed = moe_xcalloc((size_t)p, sizeof(int)), q = 0;
    for (int j = 0; j < p; j++) {
        du[j] = 0;
        int m = 0;
        for (int i = 0; i < n; i++) m += i != k && pr->dep[(size_t)i * p + j];
        if (m) free_col[q++] = j;
        else fixed[j] = 1, du[j] = u_of(pr, j, pr->start[j]) - u0[j];
    }
    /* the free columns' priors: one linearized row each */
    int np = 0;
    for (int a = 0; a < q; a++) np += has_prior(pr, free_col[a]);
    const size_t rows = (size_t)(n - 1 + np);
    if (q == 0 || (int)rows < q) { free(free_col), free(fixed); return; }
    gsl_matrix *X = gsl_matrix_alloc(rows, (size_t)q), *cov = gsl_matrix_alloc((size_t)q, (size_t)q);
    gsl_vector *yv = gsl_vector_alloc(rows), *w = gsl_vector_alloc(rows), *c = gsl_vector_alloc((size_t)q);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(rows, (size_t)q);
    for (int iter = 0; iter < 50; iter++) {
        size_t row = 0;
        double moved = 0;
        for (int i = 0; i < n; i++) {
            if (i == k) continue;
            /* the residual at the current du, from the fixed columns too */
            double e = raw[i];
            for (int j = 0; j < p; j++) e += jac[(size_t)i * p + j] * du[j];
            double wt = pr->robust_scale > 0 ? 1.0 / (1.0 + e * e / (pr->robust_scale * pr->robust_scale)) : 1.0;
            gsl_vector_set(w, row, wt);
            /* the free columns' du solves J_free du = -(raw + J_fixed du_fixed) */
            double yi = -raw[i];
            for (int a = 0; a < q; a++) gsl_matrix_set(X, row, (size_t)a, jac[(size_t)i * p + free_col[a]]);
            for (int j = 0; j < p; j++)
                if (fixed[j]) yi -= jac[(size_t)i * p + j] * du[j];
            gsl_vector_set(yv, row, yi);
            row++;
        }
        for (int a = 0; a < q; a++) {   /* prior row: e0 + g du_j, weight 1 */
            int j = free_col[a];
            if (!has_prior(pr, j)) continue;
            double g, e0 = prior_residual(pr, j, u0[j], &g);
            for (int b = 0; b < q; b++) gsl_matrix_set(X, row, (size_t)b, b == a ? g : 0.0);
            gsl_vector_set(yv, row, -e0);
            gsl_vector_set(w, row, 1.0);
            row++;
        }
        double chisq;
        gsl_multifit_wlinear(X, w, yv, c, cov, &chisq, ws);
        for (int a = 0; a < q; a++) {
            double v = gsl_vector_get(c, (size_t)a);
            moved = fmax(moved, fabs(v - du[free_col[a]]));
            du[free_col[a]] = v;
        }
        if (moved < 1e-9) break;
    }
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(X), gsl_matrix_free(cov);
    gsl_vector_free(yv), gsl_vector_free(w), gsl_vector_free(c);
    free(free_col), free(fixed);
}

int gfit_loo(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, gfit_result *r, moe_error *err) {
    int n = pr->n, p = pr->p;
    double *raw = moe_xcalloc((size_t)n, sizeof(double)), *u0 = moe_xcalloc((size_t)p, sizeof(double));
    double *du = moe_xcalloc((size_t)p, sizeof(double));
    int *all = moe_xcalloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) raw[i] = r->log_pred[i] - pr->y[i], all[i] = i;
    for (int j = 0; j < p; j++) u0[j] = u_of(pr, j, r->theta[j]);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    for (int k = 0; k < n; k++) {
        refit_without(pr, raw, r->jac, u0, k, du);
        for (int j = 0; j < p; j++) r->loo_theta[(size_t)k * p + j] = theta_of(pr, j, u0[j] + du[j]);
    }
    gsl_set_error_handler(old);
    int rc = eval(ctx, n, all, r->loo_theta, p, r->loo_log_pred, err);
    if (!rc) r->evaluations += n;
    free(raw), free(u0), free(du), free(all);
    return rc;
}
