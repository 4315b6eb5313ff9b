/* results.h — results.json / results.csv (SCENARIO.md "Results"), written atomically.
 *
 * A point is a cJSON object {"id", "sweep", "scenario", "calibration", "plan", "step", "run"}; a
 * level that was not computed is absent. The CSV has one row per point with every scalar key
 * flattened with dots ("step.step_time_s"); arrays of scalars are joined with ';', arrays of
 * objects (per-rank breakdowns) are left to the JSON. */
#ifndef MOESIM_RESULTS_H
#define MOESIM_RESULTS_H

#include <stdio.h>
#include "sim/base/errors.h"
#include "sim/base/fileio.h"

struct cJSON;

/* {"format": "moesim-results/1", "version": ..., "points": points} — takes ownership of points. */
struct cJSON *results_document(struct cJSON *points);
/* results.json and results.csv in `dir` (created if missing). */
int results_write(const char *dir, const struct cJSON *doc, moe_error *err);
/* The CSV text of a results document (caller frees). */
char *results_csv(const struct cJSON *doc);

#endif
