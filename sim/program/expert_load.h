/* expert_load.h — load-imbalance metrics of per-expert (or per-rank) token counts.
 *
 * The metrics of seed 000 §4.2 (`analyze_moe_load_balance` of distributed_fault_diagnoser.py):
 *   cv        = population standard deviation / mean   (the seed divides the variance by n)
 *   max_min   = max / (min + 1e-5)                      (the seed's guard against an idle expert)
 *   severe    = cv > 0.4 or max_min > 3.0                (the seed's thresholds)
 * plus the Gini coefficient (REFERENCE.md §3): 0 for perfectly even load, (n-1)/n when one expert
 * takes everything.
 *
 * A small API over a plain double array so that the routing model (sim/program/routing.c), the step results
 * (expert_load_cv) and the diagnoser all compute the same numbers. No state, no allocation
 * except the sorted copy Gini needs.
 */
#ifndef MOESIM_EXPERT_LOAD_H
#define MOESIM_EXPERT_LOAD_H

#include <stddef.h>

#define EXPERT_LOAD_CV_SEVERE 0.4       /* seed 000 §4.2 */
#define EXPERT_LOAD_MAX_MIN_SEVERE 3.0  /* seed 000 §4.2 */
#define EXPERT_LOAD_MIN_EPS 1e-5        /* the seed's max / (min + 1e-5) */

typedef struct {
    size_t n;
    double total, mean;
    double sd;         /* population standard deviation (divides by n) */
    double cv;         /* sd / mean; 0 when mean == 0 (the seed's convention) */
    double max, min;
    int argmax;        /* index of the (first) largest count: the hot expert or rank */
    double max_min;    /* max / (min + 1e-5) */
    double gini;       /* 0 = even ... (n-1)/n = one takes all; 0 when total == 0 */
    int severe;        /* bool: cv > 0.4 || max_min > 3 */
} expert_load_stats;

/* Coefficient of variation with the population sd (gsl_stats_sd_with_fixed_mean). n >= 1. */
double expert_load_cv(const double *counts, size_t n);
/* max / (min + 1e-5), as the seed. n >= 1. */
double expert_load_max_min(const double *counts, size_t n);
/* Gini coefficient G = sum_i sum_j |x_i - x_j| / (2 n^2 mean), computed on a sorted copy as
 * sum_i (2i - n + 1) x_(i) / (n sum x) with i = 0..n-1. Returns NAN if the copy cannot be allocated. */
double expert_load_gini(const double *counts, size_t n);
/* The seed's verdict. */
int expert_load_is_severe(double cv, double max_min);
/* All of the above in one pass. Counts must be non-negative. Returns 0, or -1 when n == 0 or the Gini
 * copy cannot be allocated (out is then zeroed). */
int expert_load_analyze(const double *counts, size_t n, expert_load_stats *out);

#endif
