/* failures.h — failure arrival processes of the run level: drawn from the scenario's failure model,
 * or replayed from a failure log.
 *
 * A failure has a source (a failure class, or a component kind), a unit of that source, a GPU behind
 * it, and a blast radius: the nodes it takes out of the job (none: the job restarts in place).
 *
 * "classes" model (reliability.failure_model = "classes"): the job's total rate is gpus / gpu_mtbf_h
 * (SCENARIO.md: the seed's 26,000 h per GPU is 6.35 h for 4096 GPUs) and class c gets the share
 * reliability.classes[c].share of it. Each class is one renewal process for the whole job, with mean
 * inter-arrival M_c = M / share_c:
 *   exponential: Exp(M_c) — the superposition is then exactly a Poisson process of rate 1/M;
 *   Weibull(k):  scale M_c / Gamma(1 + 1/k) so the mean stays M_c, every class fresh at t = 0 (the
 *                job-level fits of time between failures in field data, k < 1).
 * The unit is a GPU, uniform over the job; a class that needs a node swap takes the GPU's node out.
 *
 * "components" model (sim/scenario/components.h): every unit of every component kind fails on its
 * own. A kind with Weibull shape 1 is exponential, and its units together are exactly one Poisson
 * process of rate count / mtbf_h with the unit uniform (drawn that way: one draw per failure). Any
 * other shape makes each unit its own renewal process — lifetime Weibull(k) with mean mtbf_h, the
 * unit's replacement starting fresh when it fails — so a cluster of new parts (k < 1: infant
 * mortality) fails early more often than the job-level rate says, and the first failure of n units
 * comes at the minimum of n lifetimes (Weibull with scale n^(-1/k) times a unit's), not at M / n.
 *
 * Correlated failures (reliability.correlated): a failure that takes nodes down brings, with
 * probability p, a second failure — a host in the same rack (a shared power feed, cooling, a
 * top-of-rack cable bundle) — after an exponential delay of mean delay_s. Follow-ons bring none.
 *
 * Replayed failures: a CSV with the header `time_h,component,rank` (columns in any order), one
 * failure per line, '#' comment lines and blank lines ignored, sorted by time on load. component is
 * a class name (classes model) or a component kind (components model); rank is a GPU index in
 * [0, gpus) that locates the unit (its GPU, NIC, host, the leaf of its rail, its rack, ...).
 *
 * Random numbers: a failure_process draws only from the gsl_rng it is given, and in a fixed order
 * (at reset: one inter-arrival per exponential source, the first fresh failure's Exp(1) per Weibull
 * source; per pop: an exponential source's next inter-arrival and its unit, or a Weibull source's
 * fresh unit, the next fresh Exp(1) and the replacement's lifetime, or a replacement's next
 * lifetime; then — only when correlated failures are on — the follow-on's coin, delay and node), so two
 * runs of the same trial with different checkpoint policies see the same failures (common random
 * numbers for the interval search). */
#ifndef MOESIM_FAILURES_H
#define MOESIM_FAILURES_H

#include <gsl/gsl_rng.h>

#include "sim/base/errors.h"
#include "sim/scenario/failure_classes.h"
#include "sim/scenario/scenario.h"

#define FAILURE_MAX_SOURCES 8

typedef struct {
    double time_s;       /* wall-clock time since the start of the run */
    int source;          /* failure class (classes model) or component kind (components model) */
    int unit;            /* the unit of that source that failed */
    int rank;            /* a GPU behind the unit */
    int first_node, n_nodes;   /* nodes taken out of the job; n_nodes = 0: restart in place */
    int correlated;      /* a follow-on of an earlier failure (reliability.correlated) */
} failure_event;

typedef struct {
    int n;
    failure_event *ev;   /* sorted by time_s (ties: by rank, then source) */
} failure_trace;

/* Load and validate a failure log for scenario `s` (its failure model names the sources, its
 * cluster the ranks and units). Errors (EXIT_BADINPUT) name the file, the line, the column and the
 * offending value: missing header or column, a line with a missing field, a time that is not a
 * finite number >= 0, an unknown component, a rank outside [0, gpus). */
int failure_trace_load(const char *path, const scenario *s, failure_trace *out, moe_error *err);
/* The same from text[0, len) read already (`path` labels the messages). */
int failure_trace_parse(const char *path, const char *text, size_t len, const scenario *s,
                        failure_trace *out, moe_error *err);
void failure_trace_free(failure_trace *t);

/* One source's constants, resolved from the scenario. */
typedef struct {
    const char *name;
    int n_units;
    failure_dist_kind dist;
    double shape;        /* Weibull shape (dist = DIST_WEIBULL) */
    int per_unit;        /* each unit its own renewal process (components with shape != 1) */
    double mean_s;       /* per_unit: one unit's mean life; else the mean time between the source's
                            failures (all its units together); INFINITY: never fails */
    double detect_s;     /* failure -> detection */
    double repair_s;     /* repair or RMA of the unit */
} failure_source;

typedef struct { double time_s; int unit; } failure_unit_next;

/* A per-unit source's trial state. Its fresh units' first failures are drawn in time order, lazily:
 * a fresh unit's first failure is H^-1(E) with E ~ Exp(1) and H(t) = (t / scale)^k the Weibull
 * cumulative hazard, and the order statistics of n Exp(1) come as sums of Exp(1) / n, / (n - 1), ...
 * (Renyi's representation), the unit uniform among those still fresh. Replacements of failed
 * units wait in a min-heap. A trial costs O(failures log failures), not O(units). */
typedef struct {
    int *fresh;                      /* units not failed yet: fresh[0, n_fresh) */
    int n_fresh;
    double e_sum;                    /* the order statistic of the next fresh failure */
    double next_fresh_s;
    failure_unit_next *heap;         /* replacements' failure times */
    int n_heap, cap_heap;
} failure_units;

typedef struct {
    /* configuration (failure_process_init) */
    const scenario *s;
    int n_sources;
    failure_source src[FAILURE_MAX_SOURCES];
    double correlated_p, correlated_delay_s;
    const failure_trace *trace;      /* non-NULL: replay it instead of drawing */
    /* per-trial state (failure_process_reset) */
    gsl_rng *rng;
    double next_s[FAILURE_MAX_SOURCES];        /* exponential / class sources: the next failure */
    failure_units units[FAILURE_MAX_SOURCES];     /* per-unit sources */
    failure_event *follow;           /* pending correlated follow-ons, unsorted */
    int n_follow, cap_follow;
    int trace_pos;
} failure_process;

/* Sources from the scenario's failure model; `trace` (kept, not owned) replaces drawing.
 * `s` must outlive the process; failure_process_free releases what init allocated. */
void failure_process_init(failure_process *fp, const scenario *s, const failure_trace *trace);
void failure_process_free(failure_process *fp);
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
