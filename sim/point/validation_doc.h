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

/* Error band of the step cases of a validation document: min and max of predicted/published - 1
 * over the cases that ran (moe 1: MoE models only, 0: dense only, -1: all). 0 on success, -1 when
 * the document has no such case. A prediction takes the band of the cases of its own kind (MoE or
 * dense), or of all cases when that kind has none. */
typedef struct {
    double min_rel_err, max_rel_err;   /* predicted / published - 1 */
    int cases;
} validate_band;
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
