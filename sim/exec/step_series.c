/* step_series.c — see step_series.h. */
#include "sim/exec/step_series.h"
#include "sim/base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

int step_series_longest_run_above(const double *x, const unsigned char *timed_out, int n, double above, int *first) {
    int best = 0, run = 0;
    *first = -1;
    for (int i = 0; i < n; i++) {
        run = x[i] > above || (timed_out && timed_out[i]) ? run + 1 : 0;
        if (run > best) {
            best = run;
            *first = i - run + 1;
        }
    }
    return best;
}

int step_series_summarize(const double *x, const unsigned char *timed_out, int n, step_series_stats *out) {
    memset(out, 0, sizeof *out);
    out->slow_run_first = -1;
    if (n < 1) return -1;
    double *sorted = moe_xmalloc((size_t)n * sizeof *sorted);
    memcpy(sorted, x, (size_t)n * sizeof *sorted);
    gsl_sort(sorted, 1, (size_t)n);
    out->mean_s = gsl_stats_mean(sorted, 1, (size_t)n);
    out->p50_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.50);
    out->p95_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.95);
    out->p99_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.99);
    out->min_s = sorted[0];
    out->max_s = sorted[n - 1];
    free(sorted);
    out->slow_above_s = STEP_SERIES_SLOW_FACTOR * out->p50_s;
    for (int i = 0; i < n; i++) out->slow_steps += x[i] > out->slow_above_s || (timed_out && timed_out[i]);
    out->slow_run_steps = step_series_longest_run_above(x, timed_out, n, out->slow_above_s, &out->slow_run_first);
    return 0;
}
