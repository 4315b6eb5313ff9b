/* global_params.h — the parameters no measurement gives directly, one value per mechanism and scope,
 * fitted jointly over every validation case (simrun validate --fit: sim/point/global_fit.h) and
 * committed as calibration/models/global.json.
 *
 * Each row of the registry is a scenario field of type "auto" whose auto value is the fitted one:
 *   cluster.gpu.sustained  per GPU kind (the chip: an H800 is an H100 die with less NVLink, so it
 *                          takes the H100's value); unitless, the fraction of the burst tensor-core
 *                          rate that SM-clocked kernels sustain over a step.
 *   host.call_us           per framework (host.framework); microseconds per framework call.
 *   cluster.gpu.grouped_gemm_rate  per architecture (Hopper, Blackwell: a GPU with FP4 tensor cores),
 *                          for the grouped GEMMs TransformerEngine runs (one cuBLAS GEMM per local
 *                          expert on its GEMM streams); unitless, the rate of the routed experts'
 *                          grouped GEMMs against the cost model's GEMM tables, which hold dense GEMMs.
 *                          DeepSeek's blockwise FP8 on Hopper (precision.compute "fp8") runs DeepGEMM's
 *                          grouped kernels, which its table is fitted to: out of scope, 1.
 * A scenario that sets the field itself keeps its value. A scope the fit has no case for (an H200,
 * a GPU named in no published row) keeps the value its own cost model or the built-in measurement
 * gives: the registry's `prior`, never a value borrowed from another kind.
 *
 * What the fitted values are: the fit moves each one until the step cases of its scope agree with
 * their published figures as a whole. Whatever the step program does not model on that GPU kind or
 * framework lands in it; the README's Accuracy section lists how far each value is from the physical
 * quantity its name gives, and why. */
#ifndef MOESIM_GLOBAL_PARAMS_H
#define MOESIM_GLOBAL_PARAMS_H

#include <stddef.h>

#include "sim/base/errors.h"
#include "sim/scenario/scenario_types.h"

#define GLOBAL_FIT_FORMAT "moesim-global-fit/1"
/* the committed fit, resolved as a scenario's relative paths are (scenario_paths.h) */
#define GLOBAL_FIT_FILE "calibration/models/global.json"

typedef enum { GP_SCOPE_GPU = 0, GP_SCOPE_FRAMEWORK, GP_SCOPE_TE_GROUPED } gp_scope;

typedef struct {
    const char *path;   /* the scenario field (an "auto" field) */
    gp_scope scope;
    double prior;       /* the fit's start; also the value of a scope with no fitted value */
    double lo, hi;      /* the fit keeps the value inside [lo, hi] */
    const char *unit;
    /* a log-normal prior in the fit (global_fit.h "Priors"): the median and the sd of the log; sd 0:
     * none */
    double prior_median, prior_sd_log;
} global_param;

/* The registry (n rows). */
const global_param *global_params(int *n);
/* The scope key of row `p` for scenario `s` ("H100", "megatron-core") into out; -1 when the row does
 * not apply to s (host.framework none: no host side to price). */
int global_param_scope(const global_param *p, const scenario *s, char *out, size_t cap);
/* The value field `path` takes in `s` when the scenario leaves it auto: the committed fit's value for
 * s's scope, when the fit has one. 0 and *out set; -1 when there is none (the caller keeps its own
 * default). *src (may be NULL) names where it came from, for the results' provenance. */
int global_param_value(const scenario *s, const char *path, double *out, const char **src);
/* Drop the fit read once per process (after simrun validate --fit wrote a new one). */
void global_params_reload(void);
/* Read a fit file and check it (format, known paths, values inside their bounds). Caller frees. */
struct cJSON *global_fit_load(const char *path, moe_error *err);

#endif
