/* step_series.h — the distribution of a series of step times (routing.steps > 1): mean, median,
 * 95th percentile, extremes, by GSL's statistics (gsl_stats_quantile_from_sorted_data: linear
 * interpolation between order statistics, the value at (n - 1) f of the sorted series). */
#ifndef MOESIM_STEP_SERIES_H
#define MOESIM_STEP_SERIES_H

typedef struct {
    double mean_s, p50_s, p95_s, min_s, max_s;
} step_series_stats;

/* Summarise x[0..n-1] (n >= 1; x is not modified). Returns 0, or -1 when n < 1. */
int step_series_summarize(const double *x, int n, step_series_stats *out);

#endif
