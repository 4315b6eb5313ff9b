/* failures.h — failure arrival processes of the run level: drawn per component class, or replayed
 * from a failure log.
 *
 * Drawn failures: the scenario's total rate is gpus / gpu_mtbf_h (SCENARIO.md: the seed's 26,000 h per
 * GPU is 6.35 h for 4096 GPUs) and class c gets the share reliability.classes[c].share of it. Each
 * class is its own renewal process with mean inter-arrival M_c = M / share_c:
 *   exponential: Exp(M_c) — the superposition is then exactly a Poisson process of rate 1/M;
 *   Weibull(k):  scale M_c / Gamma(1 + 1/k) so the mean stays M_c; every class starts fresh at t = 0
 *                (k < 1, the usual fit to field data, front-loads failures: infant mortality).
 * The rank of a drawn failure is uniform over the GPUs in the job.
 *
 * Replayed failures: a CSV with the header `time_h,component,rank` (columns in any order), one
 * failure per line, '#' comment lines and blank lines ignored, sorted by time on load.
 * component is a class name (failure_class_name); rank is a GPU index in [0, gpus).
 *
 * Random numbers: a failure_process draws only from the gsl_rng it is given, and in a fixed order
 * (one inter-arrival per class at reset, then per pop: the class's next inter-arrival, then the
 * rank), so two runs of the same trial with different checkpoint policies see the same failures
 * (common random numbers for the interval search). */
#ifndef MOESIM_FAILURES_H
#define MOESIM_FAILURES_H

#include <gsl/gsl_rng.h>

#include "sim/base/errors.h"
#include "sim/scenario/failure_classes.h"
#include "sim/scenario/scenario.h"

typedef struct {
    double time_s;       /* wall-clock time since the start of the run */
    failure_class cls;
    int rank;            /* GPU index */
} failure_event;

typedef struct {
    int n;
    failure_event *ev;   /* sorted by time_s (ties keep file order) */
} failure_trace;


/* Load and validate a failure log. Errors (EXIT_BADINPUT) name the file, the line, the column and
 * the offending value: missing header or column, a line with a missing field, a time that is not a
 * finite number >= 0, an unknown component, a rank outside [0, n_gpus). */
int failure_trace_load(const char *path, int n_gpus, failure_trace *out, moe_error *err);
/* The same from text[0, len) read already (`path` labels the messages). */
int failure_trace_parse(const char *path, const char *text, size_t len, int n_gpus, failure_trace *out,
                        moe_error *err);
void failure_trace_free(failure_trace *t);

typedef struct {
    /* configuration (failure_process_init) */
    failure_dist_kind dist;
    double weibull_shape;
    double mean_s[FAIL_NCLASSES];    /* per-class mean inter-arrival; INFINITY: class never fails */
    int n_gpus;
    const failure_trace *trace;      /* non-NULL: replay it instead of drawing */
    /* per-trial state (failure_process_reset) */
    gsl_rng *rng;
    double next_s[FAIL_NCLASSES];
    int trace_pos;
} failure_process;

/* mtbf_cluster_s: mean time between failures of the whole job (all classes); INFINITY or <= 0
 * disables drawn failures. shares: per-class fractions (normalized here; a zero share never fails). */
void failure_process_init(failure_process *fp, failure_dist_kind dist, double weibull_shape,
                          double mtbf_cluster_s, const failure_class_cfg classes[FAIL_NCLASSES],
                          int n_gpus, const failure_trace *trace);
/* Start a trial at t = 0, drawing from `rng` (kept; not owned). */
void failure_process_reset(failure_process *fp, gsl_rng *rng);
/* Time of the next failure (INFINITY when none is left). */
double failure_process_peek(const failure_process *fp);
/* Take the next failure and schedule the one after it. */
failure_event failure_process_pop(failure_process *fp);

/* One inter-arrival time with the given mean: Exp(mean), or Weibull(shape) scaled to that mean. */
double failure_draw_interarrival(failure_dist_kind dist, double weibull_shape, double mean_s,
                                 gsl_rng *rng);

#endif
