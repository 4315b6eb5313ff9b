/* results_export.h — a results database written out as results.csv and results.json, and read back
 * as a document (results_export.c, on results_db.h's database). */
#ifndef MOESIM_RESULTS_EXPORT_H
#define MOESIM_RESULTS_EXPORT_H

#include <stdio.h>

#include "sim/base/errors.h"
#include "sim/report/results_db.h"

struct cJSON;

/* Exports. CSV: id, status, reason, then every results column (the resolved scenario stays in the
 * database and results.json). JSON: SCENARIO.md's results.json, each point with its "status" (and
 * "reason") and its whole resolved scenario; byte for byte what cJSON_Print writes of the document. */
int results_db_write_csv(results_db *db, FILE *f, moe_error *err);
int results_db_write_json(results_db *db, FILE *f, moe_error *err);
/* results.csv when `csv` is set and results.json when `json` is set, in `dir`, each atomically.
 * (`jobs` processes format a large CSV in parallel.) */
int results_db_export(results_db *db, const char *dir, int json, int csv, int jobs, moe_error *err);
/* The results document of the points chosen by `where_order` (an SQL tail such as "ORDER BY id",
 * may be NULL) in memory, for the table and the plots. NULL with err set on failure. */
struct cJSON *results_db_document(results_db *db, const char *where_order, long limit, moe_error *err);
/* The SQL expression of a results column ("plan.step_time_s") when the database has it, else NULL;
 * for ranking queries (the quoted column name, in a static buffer). */
const char *results_db_column_sql(results_db *db, const char *name);

#endif
