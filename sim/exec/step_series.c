/* step_series.c — see step_series.h. */
#include "sim/exec/step_series.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

int step_series_summarize(const double *x, int n, step_series_stats *out) {
    memset(out, 0, sizeof *out);
    if (n < 1) return -1;
    double *sorted = moe_xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, x, (size_t)n * sizeof *sorted);
    gsl_sort(sorted, 1, (size_t)n);
    out->mean_s = gsl_stats_mean(sorted, 1, (size_t)n);
    out->p50_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.50);
    out->p95_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.95);
    out->min_s = sorted[0];
    out->max_s = sorted[n - 1];
    free(sorted);
    return 0;
}
