/* fit.h — fitting cost models to traces with GSL (gsl_multifit_nlinear, trust region), writing the
 * model JSON ("moesim-costmodel/1", read by sim/plan/costmodel.c), and the `simcal check` regression.
 *
 * Every model here is a sum of terms, each either `p` (a constant such as a launch overhead or a
 * latency) or `x / p` (work over a rate: FLOPs over peak x eff_max, bytes over a bandwidth):
 *     GEMM-like    t = launch + (f / peak) / eff_max + B / operand_bw
 *     memory-bound t = launch + B / bw                     (one "memory" fit + one per kernel)
 *     collective   t = alpha + busbytes / beta             (per op, link, ranks; busbytes = size x
 *                                                           nccl-tests busbw factor)
 * Residuals are relative, (t_model - t)/t, because times span five decades and a 10 us launch
 * matters as much to a small kernel as 10 ms to a big one. Parameters are fitted as logarithms so
 * they stay positive; the start point is the weighted linear least-squares solution
 * (gsl_multifit_wlinear on the reciprocal coefficients) when it is positive. Standard errors come
 * from gsl_multifit_nlinear_covar scaled by chi^2/dof (the noise level is estimated, not known).
 */
#ifndef MOESIM_CALIB_FIT_H
#define MOESIM_CALIB_FIT_H

#include <stdio.h>

#include "calibration/trace.h"
#include "sim/base/errors.h"

struct cJSON;

#define FIT_MAX_TERMS 5

typedef enum { TERM_CONST = 0, TERM_RATE } fit_term_kind;   /* t += p   |   t += x / p */

typedef struct {
    int n_terms;
    fit_term_kind kind[FIT_MAX_TERMS];
    double p[FIT_MAX_TERMS];        /* fitted values (SI) */
    double se[FIT_MAX_TERMS];       /* standard errors (SI) */
    int dropped[FIT_MAX_TERMS];     /* 1: the data could not resolve the term (p = 0 or infinity) */
    int points;
    double rms_rel_err, max_rel_err;
    int iterations;
} fit_result;

/* Least-squares fit of y_i ~ sum_j term_j(x_ij) with relative residuals. x is n x n_terms
 * row-major (ignored for TERM_CONST terms). Needs n > n_terms. 0 on success, else EXIT_RUNTIME
 * (singular or failed fit) with a message naming `what`. */
int fit_terms(const char *what, int n, int n_terms, const fit_term_kind *kind, const double *x,
              const double *y, fit_result *out, moe_error *err);
/* The same with a known part y0[i] of every time (t_i = y0_i + the terms). */
int fit_terms_offset(const char *what, int n, int n_terms, const fit_term_kind *kind, const double *x,
                     const double *y, const double *y0, fit_result *out, moe_error *err);
/* Model value for row x under a result. */
double fit_eval(const fit_result *r, const double *x);

typedef struct {
    const char *const *trace_paths;  /* as given on the command line: stored in the model */
    int n_traces;
    const char *base_path;           /* model whose sections fill what the traces do not cover */
    const char *source;              /* model "source" label (default: from the output file name) */
    const char *device;              /* override of the device name */
    const char *tiles_path;          /* model of the same GPU architecture whose GEMM tile/wave fits give
                                        the kernel structure: only eff_max is fitted per precision */
} fit_options;

/* Read the traces, fit every model they support, and build the model JSON (caller frees). */
int fit_build_model(const fit_options *opt, struct cJSON **model, FILE *log, moe_error *err);
/* fit_build_model + json_write_atomic. */
int fit_write_model(const fit_options *opt, const char *out_path, FILE *log, moe_error *err);

/* A trace point predicted by a cost model (seconds; < 0 when it has nothing for the point): GEMMs by
 * shape (tile/wave or additive form), attention by shape, memory-bound kernels by bytes, collectives
 * by the model JSON's fitted "collectives" (model). The one predictor of fit residuals and check. */
struct costmodel;
double fit_predict_point(const struct costmodel *cm, const struct cJSON *model, const trace_point *p);
double fit_predict_compute(const struct costmodel *cm, const trace_point *p);

/* `simcal check`: for every *.json model in models_dir that lists traces, verify the traces'
 * hashes, refit them (traces looked up under traces_dir when given, else the stored path), compare
 * every fitted parameter with rel_tol, and print a per-point prediction-error table to `log`.
 * Returns 0 when everything agrees, EXIT_RUNTIME (1) on drift, EXIT_BADINPUT on unreadable input. */
int fit_check_models(const char *models_dir, const char *traces_dir, double rel_tol, FILE *log,
                     moe_error *err);

/* The relative tolerance `simcal check` uses by default (see calibration/README.md). */
#define FIT_CHECK_REL_TOL 1e-4

#endif
