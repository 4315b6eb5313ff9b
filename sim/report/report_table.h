/* report_table.h — the human-readable table simrun prints from a results document. Reads only the
 * results JSON, so a merged or resumed sweep prints the same table as a single run. */
#ifndef MOESIM_REPORT_TABLE_H
#define MOESIM_REPORT_TABLE_H

#include <stdio.h>

struct cJSON;

/* One row per point; when points differ in layout, rows are ranked by step time (the step level's
 * when present, else the plan's), points that do not fit in memory last. */
void print_results_table(FILE *out, const struct cJSON *doc);
/* The same table ranked by tokens/s/GPU, highest first (the step level's when present, else the
 * plan's): work done per second, which a faster step that drops more tokens does not win. */
void print_results_table_by_tokens(FILE *out, const struct cJSON *doc);

/* Every level's warnings of every point ("warning: point 3 (interval_min=5) run: ..."), at most
 * max_lines of them and then how many more; returns the total. */
int print_results_warnings(FILE *out, const struct cJSON *doc, int max_lines);
/* The number of warnings of one point, all levels together. */
int point_warning_count(const struct cJSON *point);

#endif
