/* step_clock.h — the run level's clock of training steps: the wall time the job takes to go from
 * progress a to progress b (in steps; fractional inside a step), for one step time, or for a series
 * of step times replayed in order (the step level's routing.steps, run.step_sequence "cycle").
 *
 * ---- Model ---------------------------------------------------------------------------------------
 * Progress x covers step floor(x), the step index of the run (0 = its first). With one step time s,
 *   C(x) = x s.
 * With a series d_0 .. d_{n-1} (n >= 1, every d_i >= 0, S = sum d_i > 0) the run's step i takes
 * d_(i mod n): the series is cycled, so that a run longer than the series repeats it from its first
 * step, and a step redone after a rollback takes the time of its own index again:
 *   C(x) = floor(x / n) S + P(r) + (r - floor(r)) d_floor(r),  r = x - n floor(x / n),
 *   P(i) = d_0 + .. + d_(i-1)
 * (inside a step, time runs linearly). A span from a to b at pace factor f (stragglers, replication)
 * is (C(b) - C(a)) f; its inverse, the progress reached after dt from a, is C^-1(C(a) + dt / f). The
 * steps of the series that timed out ("hangs") end their time d_i in the collective's hang: the run
 * level fails the job when progress reaches the end of such a step (step_clock_next_hang).
 *
 * Ownership: step_clock_series copies the series; step_clock_free releases it. */
#ifndef MOESIM_STEP_CLOCK_H
#define MOESIM_STEP_CLOCK_H

typedef struct {
    double step_s;      /* one step's time, or the series' mean S / n */
    int n;              /* series length; 0: one step time */
    double *dur_s;      /* [n] d_i */
    double *prefix_s;   /* [n + 1] P(i) */
    double cycle_s;     /* S */
    double min_s;       /* the shortest d_i */
    int n_hangs;
    int *hang_at;       /* [n_hangs] the indexes of the steps that timed out, ascending */
} step_clock;

/* One step time (n = 0): every function below reduces to the products of s it replaces. */
void step_clock_const(step_clock *c, double step_s);
/* A series of n >= 1 step times, hung[i] != 0 when step i timed out (NULL: none). Returns -1 (and
 * *bad_index the first bad entry, or -1 when the sum is not > 0) for an entry that is negative or not
 * finite, a step that completed in no time, or an empty series; else 0. */
int step_clock_series(step_clock *c, const double *dur_s, const unsigned char *hung, int n, int *bad_index);
void step_clock_free(step_clock *c);

/* C(x): the time of the run's first x steps at pace 1. */
double step_clock_at(const step_clock *c, double x);
/* The time from progress a to b >= a: (b - a) d with one step time (d: the step time at the current
 * pace), (C(b) - C(a)) f with a series (f: the pace factor). INFINITY when b is. */
double step_clock_span(const step_clock *c, double a, double b, double d, double f);
/* The progress reached after dt from a (the inverse of step_clock_span). */
double step_clock_after(const step_clock *c, double a, double dt, double d, double f);
/* The end of the next step that timed out, j + 1 > x (j over every cycle), or INFINITY when none. */
double step_clock_next_hang(const step_clock *c, double x);

#endif
