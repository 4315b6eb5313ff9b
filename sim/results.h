/* results.h — results.json / results.csv (SCENARIO.md "Results"), written atomically.
 *
 * A point is a cJSON object {"id", "sweep", "scenario", "calibration", "plan", "step", "run"}; a
 * level that was not computed is absent. The CSV has one row per point with every scalar key
 * flattened with dots ("step.step_time_s"); arrays of scalars are joined with ';', arrays of
 * objects (per-rank breakdowns) are left to the JSON. */
#ifndef MOESIM_RESULTS_H
#define MOESIM_RESULTS_H

#include <stdio.h>
#include "sim/errors.h"

struct cJSON;

/* Write `text` to `path` atomically: a temporary name in the same folder, fsync, then rename().
 * A reader never sees a half-written file. */
int write_file_atomic(const char *path, const char *text, moe_error *err);
/* Read a whole file (NUL-terminated; caller frees). NULL and err set on failure. */
char *read_file_text(const char *path, moe_error *err);
/* mkdir -p */
int make_dirs(const char *path, moe_error *err);

/* {"format": "moesim-results/1", "version": ..., "points": points} — takes ownership of points. */
struct cJSON *results_document(struct cJSON *points);
/* results.json and results.csv in `dir` (created if missing). */
int results_write(const char *dir, const struct cJSON *doc, moe_error *err);
/* The CSV text of a results document (caller frees). */
char *results_csv(const struct cJSON *doc);

#endif
