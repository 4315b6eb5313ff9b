/* expert_load.c — load-imbalance metrics (seed 000 §4.2) on GSL statistics. */
#include "sim/program/expert_load.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort_double.h>
#include <gsl/gsl_statistics_double.h>

double expert_load_cv(const double *counts, size_t n) {
    double mean = gsl_stats_mean(counts, 1, n);
    if (!(mean > 0.0)) return 0.0;   /* the seed: cv = 0 when the mean is 0 */
    /* population sd: GSL's *_with_fixed_mean divides by n, gsl_stats_sd by n-1 */
    return gsl_stats_sd_with_fixed_mean(counts, 1, n, mean) / mean;
}

double expert_load_max_min(const double *counts, size_t n) {
    double mn, mx;
    gsl_stats_minmax(&mn, &mx, counts, 1, n);
    return mx / (mn + EXPERT_LOAD_MIN_EPS);
}

double expert_load_gini(const double *counts, size_t n) {
    double *x = moe_xmalloc(n * sizeof *x);
    if (!x) return NAN;
    memcpy(x, counts, n * sizeof *x);
    gsl_sort(x, 1, n);
    double total = 0.0, weighted = 0.0;
    for (size_t i = 0; i < n; i++) {
        total += x[i];
        weighted += (2.0 * (double)i - (double)n + 1.0) * x[i];
    }
    free(x);
    return total > 0.0 ? weighted / ((double)n * total) : 0.0;
}

int expert_load_is_severe(double cv, double max_min) {
    return cv > EXPERT_LOAD_CV_SEVERE || max_min > EXPERT_LOAD_MAX_MIN_SEVERE;
}

int expert_load_analyze(const double *counts, size_t n, expert_load_stats *out) {
    memset(out, 0, sizeof *out);
    if (n == 0) return -1;
    double gini = expert_load_gini(counts, n);
    if (isnan(gini)) return -1;
    out->n = n;
    out->mean = gsl_stats_mean(counts, 1, n);
    for (size_t i = 0; i < n; i++) out->total += counts[i];
    out->sd = gsl_stats_sd_with_fixed_mean(counts, 1, n, out->mean);
    out->cv = out->mean > 0.0 ? out->sd / out->mean : 0.0;
    gsl_stats_minmax(&out->min, &out->max, counts, 1, n);
    out->argmax = (int)gsl_stats_max_index(counts, 1, n);
    out->max_min = out->max / (out->min + EXPERT_LOAD_MIN_EPS);
    out->gini = gini;
    out->severe = expert_load_is_severe(out->cv, out->max_min);
    return 0;
}
