/* step_clock.c — see step_clock.h. */
#include "sim/run/step_clock.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void step_clock_const(step_clock *c, double step_s) {
    memset(c, 0, sizeof *c);
    c->step_s = step_s;
    c->cycle_s = step_s;
    c->min_s = step_s;
}

int step_clock_series(step_clock *c, const double *dur_s, const unsigned char *hung, int n, int *bad_index) {
    memset(c, 0, sizeof *c);
    *bad_index = -1;
    if (n < 1) return -1;
    for (int i = 0; i < n; i++) {
        int done = !(hung && hung[i]);
        if (!isfinite(dur_s[i]) || dur_s[i] < 0 || (done && !(dur_s[i] > 0))) { *bad_index = i; return -1; }
    }
    c->n = n;
    c->dur_s = moe_xmalloc((size_t)n * sizeof *c->dur_s);
    c->prefix_s = moe_xmalloc((size_t)(n + 1) * sizeof *c->prefix_s);
    c->hang_at = moe_xmalloc((size_t)n * sizeof *c->hang_at);
    memcpy(c->dur_s, dur_s, (size_t)n * sizeof *c->dur_s);
    c->prefix_s[0] = 0;
    c->min_s = dur_s[0];
    for (int i = 0; i < n; i++) {
        c->prefix_s[i + 1] = c->prefix_s[i] + dur_s[i];
        if (dur_s[i] < c->min_s) c->min_s = dur_s[i];
        if (hung && hung[i]) c->hang_at[c->n_hangs++] = i;
    }
    c->cycle_s = c->prefix_s[n];
    if (!(c->cycle_s > 0)) { step_clock_free(c); return -1; }
    c->step_s = c->cycle_s / n;
    return 0;
}

void step_clock_free(step_clock *c) {
    free(c->dur_s);
    free(c->prefix_s);
    free(c->hang_at);
    memset(c, 0, sizeof *c);
}

double step_clock_at(const step_clock *c, double x) {
    if (c->n == 0) return x * c->step_s;
    double cycles = floor(x / c->n), r = x - cycles * c->n;
    int i = (int)floor(r);
    if (i >= c->n) i = c->n - 1;   /* rounding only */
    if (i < 0) i = 0;
    return cycles * c->cycle_s + c->prefix_s[i] + (r - i) * c->dur_s[i];
}

double step_clock_span(const step_clock *c, double a, double b, double d, double f) {
    if (!isfinite(b)) return INFINITY;
    if (c->n == 0) return (b - a) * d;
    return (step_clock_at(c, b) - step_clock_at(c, a)) * f;
}

double step_clock_after(const step_clock *c, double a, double dt, double d, double f) {
    if (c->n == 0) return a + dt / d;
    double target = step_clock_at(c, a) + dt / f;
    double cycles = floor(target / c->cycle_s), rem = target - cycles * c->cycle_s;
    if (rem < 0) rem = 0;
    /* the last step i whose start P(i) <= rem (steps of no time are passed over) */
    int lo = 0, hi = c->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (c->prefix_s[mid] <= rem) lo = mid;
        else hi = mid - 1;
    }
    double frac = c->dur_s[lo] > 0 ? (rem - c->prefix_s[lo]) / c->dur_s[lo] : 0;
    if (frac > 1) frac = 1;
    double x = cycles * c->n + lo + frac;
    return x > a ? x : a;
}

double step_clock_next_hang(const step_clock *c, double x) {
    if (c->n == 0 || c->n_hangs == 0) return INFINITY;
    double cycles = floor(x / c->n), r = x - cycles * c->n;
    /* the first hang j of this cycle whose end j + 1 lies past r */
    int lo = 0, hi = c->n_hangs;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (c->hang_at[mid] + 1.0 > r) hi = mid;
        else lo = mid + 1;
    }
    if (lo < c->n_hangs) return cycles * c->n + c->hang_at[lo] + 1.0;
    return (cycles + 1) * c->n + c->hang_at[0] + 1.0;
}
