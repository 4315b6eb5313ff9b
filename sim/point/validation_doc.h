/* validation_doc.h — a validation document (validation.json, format "moesim-validation/1", written by
 * simrun validate: sim/point/validate.h) read back: its cases, and the error band of their residuals
 * that every prediction carries beside its figure (point_eval.c). */
#ifndef MOESIM_VALIDATION_DOC_H
#define MOESIM_VALIDATION_DOC_H

#include "sim/base/errors.h"

struct cJSON;
struct scenario;

/* The document at `path` (it must hold a "cases" list); NULL with err set otherwise. */
struct cJSON *validation_doc_load(const char *path, moe_error *err);
/* A case's member `key` as a number (NAN when absent) or a string ("" when absent); whether the case
 * ran (its status is its verdict, "ok" or "miss": validate.h VALIDATE_OK_TOL_PCT; not "not
 * expressible" or "failed"). */
double validation_number(const struct cJSON *obj, const char *key);
const char *validation_str(const struct cJSON *obj, const char *key);
int validation_case_ran(const struct cJSON *c);

/* Error band of the step cases of a validation document (moe 1: MoE models only, 0: dense only, -1:
 * all), as predicted / published - 1. With left-out errors (simrun validate's loo_error_pct: each
 * case predicted by the global fit without it, sim/point/global_fit.h) the band is an 80% prediction
 * interval of the log left-out residuals l_i = log(predicted_i / published_i) of the family:
 * mean(l) +- t(0.90, n - 1) sd(l) sqrt(1 + 1/n) (a new case's residual, if the family's residuals
 * are a normal sample), and `coverage` is the share of the family's left-out cases inside it, which
 * validate prints beside its width. Without them (an older document, --no-loo) it is min and max of
 * the in-sample errors, widened to hold 0. 0 on success, -1 when the document has no such case. A
 * prediction takes the band of the cases of its own kind (MoE or dense), or of all cases when that
 * kind has fewer than VALIDATE_BAND_MIN_CASES. */
#define VALIDATE_BAND_COVERAGE 0.80
#define VALIDATE_BAND_MIN_CASES 3
typedef struct {
    double min_rel_err, max_rel_err;   /* predicted / published - 1 */
    int cases;
    int left_out;                      /* 1: from left-out errors */
    double coverage;                   /* share of the cases inside (left-out bands) */
} validate_band;
/* The bands of a list of case results with left-out errors, as the document's "bands" array
 * (family "dense", "moe", "all"); NULL when no case has a left-out error. */
struct cJSON *validate_bands_json(const struct cJSON *cases);
int validate_band_of(const struct cJSON *doc, int moe, validate_band *out);
/* [lo, hi] of the true value for a prediction `x` under the band: a rate (tokens/s, TFLOP/s), or a
 * time (time = 1: step time, days). */
void validate_band_apply(const validate_band *b, double x, double *lo, double *hi);
void validate_band_apply_time(const validate_band *b, double x, double *lo, double *hi);
/* The band of the committed validation table (VALIDATE_BASELINE, found as a scenario's relative
 * paths are: scenario_paths.h), read once per process. -1 when there is none. */
#define VALIDATE_BASELINE "scenarios/validation/baseline.json"
int validate_band_for(const struct scenario *s, validate_band *out);
/* Adds "<key>_band": [lo, hi] beside a rate or time `key` of obj (nothing without a band). */
void validate_band_add(struct cJSON *obj, const char *key, int time, const validate_band *b);

#endif
