/* report_table.h — the human-readable table simrun prints from a results document. Reads only the
 * results JSON, so a merged or resumed sweep prints the same table as a single run. */
#ifndef MOESIM_REPORT_TABLE_H
#define MOESIM_REPORT_TABLE_H

#include <stdio.h>

struct cJSON;

/* One row per point; when points differ in layout, rows are ranked by step time (the step level's
 * when present, else the plan's), points that do not fit in memory and steps that hung or timed out
 * last. A step that hung or timed out (step_outcome.h) prints `hung` / `timeout` for its step time
 * and `-` for its MFU, tokens/s and band, and a line under the table says where it stopped and
 * points to `simdiag check DIR` (`dir`: the output folder; NULL prints "DIR"). With routing.steps > 1
 * the step time (then `mean_s`), MFU, tokens/s and band are over all the simulated steps
 * (step.steps.*), with the steps' p50 / p95 / max beside them, and a line under the table says so.
 * drop% is `-` for a dense model (nothing is routed). */
void print_results_table(FILE *out, const struct cJSON *doc, const char *dir);
/* The same table ranked by tokens/s/GPU, highest first (the step level's when present, else the
 * plan's): work done per second, which a faster step that drops more tokens does not win. */
void print_results_table_by_tokens(FILE *out, const struct cJSON *doc, const char *dir);

/* Every level's warnings of every point ("warning: point 3 (interval_min=5) run: ..."), at most
 * max_lines of them and then how many more; returns the total. */
int print_results_warnings(FILE *out, const struct cJSON *doc, int max_lines);
/* The number of warnings of one point, all levels together. */
int point_warning_count(const struct cJSON *point);

#endif
