/* step_series.h — the distribution of a series of step times (routing.steps > 1): mean, median,
 * 95th and 99th percentiles, extremes, by GSL's statistics (gsl_stats_quantile_from_sorted_data:
 * linear interpolation between order statistics, the value at (n - 1) f of the sorted series), and
 * the longest run of slow steps.
 *
 * Slow step: a step whose time exceeds STEP_SERIES_SLOW_FACTOR x the series' median (p50_s). The
 * factor is this project's choice, not a published figure: a step half again as long as the typical
 * one is what an operator's step-time panel shows as a spike (seed 000 §0.2: 2.8 s steps spiking to
 * 35 s), well above the fresh draws' jitter (0.4% on tests/data/scenarios/small-moe.json, README
 * "Step level: many steps"). The median, not the mean, so that the spike does not raise its own bar.
 * A step that timed out counts as slow whatever its recorded time (the time until the watchdog fired:
 * the step never completed), so that a spike the watchdog cut short stays one run. */
#ifndef MOESIM_STEP_SERIES_H
#define MOESIM_STEP_SERIES_H

#define STEP_SERIES_SLOW_FACTOR 1.5

typedef struct {
    double mean_s, p50_s, p95_s, p99_s, min_s, max_s;
    double slow_above_s;       /* STEP_SERIES_SLOW_FACTOR x p50_s */
    int slow_steps;            /* steps above it */
    int slow_run_steps;        /* the longest run of consecutive steps above it (0: none) */
    int slow_run_first;        /* its first step (the earliest such run); -1 when none */
} step_series_stats;

/* Summarise x[0..n-1] (n >= 1; x is not modified); timed_out[i] != 0 marks a step that timed out
 * (NULL: none). Returns 0, or -1 when n < 1. */
int step_series_summarize(const double *x, const unsigned char *timed_out, int n, step_series_stats *out);

/* The longest run of consecutive steps with x[i] > above or timed_out[i] (NULL: none), the earliest of
 * equal runs: its length, and its first index in *first (-1 when there is none). */
int step_series_longest_run_above(const double *x, const unsigned char *timed_out, int n, double above, int *first);

#endif
