/* report_table.h — the human-readable table simrun prints from a results document. Reads only the
 * results JSON, so a merged or resumed sweep prints the same table as a single run. */
#ifndef MOESIM_REPORT_TABLE_H
#define MOESIM_REPORT_TABLE_H

#include <stdio.h>

struct cJSON;

/* One row per point; when points differ in layout, rows are ranked by step time (the step level's
 * when present, else the plan's), points that do not fit in memory last. */
void print_results_table(FILE *out, const struct cJSON *doc);

#endif
