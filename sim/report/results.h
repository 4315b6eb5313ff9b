/* results.h — a results document built in memory (simlive's one measured step) written as a
 * folder's results: results.db, results.csv and results.json, exactly as a sweep writes them
 * (results_db.h).
 *
 * A point is a cJSON object {"id", "sweep", "scenario", "calibration", "plan", "step", "run"}; a
 * level that was not computed is absent. */
#ifndef MOESIM_RESULTS_H
#define MOESIM_RESULTS_H

#include <stdio.h>
#include "sim/base/errors.h"
#include "sim/base/fileio.h"

struct cJSON;

/* {"format": "moesim-results/1", "version": ..., "points": points} — takes ownership of points. */
struct cJSON *results_document(struct cJSON *points);
/* results.db (replacing whatever results `dir` held) and its exports, each point stored 'ok' with its
 * scenario as a patch of the first point's. */
int results_write(const char *dir, const struct cJSON *doc, moe_error *err);

#endif
