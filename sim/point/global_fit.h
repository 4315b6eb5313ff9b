/* global_fit.h — one joint fit of the global parameters (sim/plan/global_params.h) over every step
 * case, and its leave-one-out cross-validation. Pure numerics: the caller supplies the predictions
 * (simrun validate runs each case's scenario: sim/point/validate.c; the tests a closed form).
 *
 * Residuals. Case i's residual is r_i = log(predicted rate) - log(published rate) (a time enters
 * as its inverse), so that a case 10% fast weighs what a case 10% slow does, whatever its size. The
 * fit minimizes sum_i rho(r_i) with Cauchy's rho(r) = c^2 log(1 + r^2 / c^2) (c = robust_scale):
 * near zero it is least squares, and a case that misses by far more than c (a mechanism the model
 * does not have, README "Accuracy") pulls its parameters with a force that falls as 1/r instead of
 * growing as r. GSL's nonlinear least squares (gsl_multifit_nlinear, Levenberg-Marquardt) solves it
 * on the residuals sign(r) sqrt(rho(r)), whose squares sum to the loss.
 *
 * Parameters. A parameter stays inside [lo, hi]: the solver moves u, theta = lo + (hi - lo) /
 * (1 + exp(-u)). The Jacobian is by forward differences (step GFIT_DU in u). Parameters of one
 * `group` (one registry row: one value per GPU kind) move disjoint sets of cases, so one evaluation
 * of all cases with every parameter of the group stepped gives all of their columns.
 *
 * Confidence intervals (95%): u* +- t(0.975, n - p) sqrt(s^2 [(J'J)^-1]_jj), s^2 = 2 loss / (n - p),
 * J the Jacobian of the transformed residuals at the optimum, mapped to theta through the (monotone)
 * bound transform.
 *
 * Leave-one-out. For each case k, the parameters are refitted without it and case k is predicted
 * at the refitted values by the caller's evaluator (a simulation, not an extrapolation). The refit
 * minimizes the same loss over the other cases on the residuals linearized at the full fit (r_i +
 * J_i du, J from the full fit; iteratively reweighted least squares for the Cauchy loss), which is
 * exact for residuals linear in u and, for the small moves one case causes, the first-order
 * case-deletion refit. A parameter left with no case returns to its start value (its prior).
 *
 * Priors. A parameter with a prior (prior_log_sd > 0) has one more residual, c (log theta - m) / sd,
 * not robust (Gaussian), in the fit, its Jacobian, its intervals and every leave-one-out refit: the
 * maximum a posteriori estimate under a log-normal prior. It keeps a scope with few cases from being
 * moved by the one that misses most (a GPU kind with four rows, two of them off in opposite
 * directions) and shrinks it toward a measured value, where the cases leave it free. */
#ifndef MOESIM_GLOBAL_FIT_H
#define MOESIM_GLOBAL_FIT_H

#include "sim/base/errors.h"

#define GFIT_DU 0.01

typedef struct {
    int n, p;                      /* cases, parameters */
    const double *y;               /* n: log of each case's published rate */
    const unsigned char *dep;      /* n x p, row-major: 1 when case i's prediction depends on parameter j */
    const int *group;              /* p: the registry row of each parameter */
    const double *lo, *hi, *start; /* p */
    double robust_scale;           /* c of the Cauchy loss; 0: plain least squares */
    /* p, or NULL: a Gaussian prior on log theta_j, mean prior_log_mean[j] and standard deviation
     * prior_log_sd[j] (<= 0: none), added to the loss as the squared residual
     * c (log theta_j - mean) / sd (c = robust_scale, 1 when 0): a deviation of one sd weighs what a
     * case missing by c does near zero (below) */
    const double *prior_log_mean, *prior_log_sd;
} gfit_problem;

/* The log of the predicted rate of cases[k] (k < n_cases) with parameters theta + k * stride (stride 0:
 * one vector for all) into log_pred[k]. 0, or an error code with err set. */
typedef int (*gfit_eval_fn)(void *ctx, int n_cases, const int *cases, const double *theta, int stride,
                            double *log_pred, moe_error *err);

typedef struct {
    double *theta;          /* p: the fitted values */
    double *ci_lo, *ci_hi;  /* p: their 95% interval */
    int *cases_of;          /* p: the cases each parameter moves */
    double *log_pred;       /* n: in-sample predictions */
    double *loo_log_pred;   /* n: each case predicted by the fit without it */
    double *loo_theta;      /* n x p: those refits */
    double *jac;            /* n x p: d r_i / d u_j of the raw log residuals at theta */
    int iterations;         /* Levenberg-Marquardt iterations */
    int evaluations;        /* case predictions asked of the evaluator */
    double loss;            /* sum rho(r_i) at theta */
} gfit_result;

void gfit_result_init(gfit_result *r, int n, int p);
void gfit_result_free(gfit_result *r);

/* Fit from pr->start (at most max_iter iterations). Fills theta, ci_*, cases_of, log_pred, jac, loss. */
int gfit_fit(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, int max_iter, gfit_result *r, moe_error *err);
/* The Jacobian, predictions and intervals at given values r->theta, without moving them (the committed
 * fit, checked). */
int gfit_at(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, gfit_result *r, moe_error *err);
/* Leave-one-out from a fit (gfit_fit or gfit_at): fills loo_theta and loo_log_pred. */
int gfit_loo(const gfit_problem *pr, gfit_eval_fn eval, void *ctx, gfit_result *r, moe_error *err);

/* Cauchy loss of one residual and the residual GSL is given (sign(r) sqrt(rho(r))). */
double gfit_rho(double r, double c);

#endif
