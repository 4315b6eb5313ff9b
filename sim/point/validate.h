/* validate.h — `simrun validate`: moesim's predictions against published runs.
 *
 * A cases file ("moesim-validation/1", scenarios/validation/cases.json) lists the published
 * measurements moesim must reproduce: per case the metric, the published value, its exact source
 * (document, commit, table, row), the software features the run used ("features") and, optionally,
 * those moesim does not model ("not_modelled"), and either a scenario (step cases: a whole training
 * step, evaluated at plan and step level), a DeepEP benchmark case (deepep cases:
 * sim/simgrid/deepep_bench.h) or, for a step case the scenario format cannot state, "not_expressible":
 * the reason, in place of the scenario. validate_run evaluates every case in a worker process (each
 * builds its own SimGrid platform; results are put back in case order), prints
 *
 *     case | metric | published | predicted | error % | left-out % | plan | plan error % | status
 *
 * (status: ok within VALIDATE_OK_TOL_PCT, miss beyond it, not expressible, failed)
 * and writes DIR/validation.json and DIR/validation.csv. error % = (predicted - published) /
 * published x 100. A case given as not expressible, or whose scenario the loader refuses (a field or
 * preset moesim does not have yet), is listed as "not expressible: <the reason or the loader's
 * message>" and counted in the summary ("not_expressible"), never dropped.
 *
 * Baseline (CI): with a baseline (the committed validation.json), every case must be present in
 * both, with the same status, and its error must not move by more than VALIDATE_BASELINE_TOL_PP
 * percentage points; otherwise validate_run prints what moved and returns EXIT_RUNTIME. A change of
 * the model therefore shows its effect on every case, and lands with the baseline it produces.
 *
 * Global parameters (sim/plan/global_params.h): after the pass at the committed values, the step
 * cases that ran are the problem of one joint fit (sim/point/global_fit.h): --fit refits from the
 * priors and writes calibration/models/global.json, --check-fit refits from the committed values and
 * fails when one moves by more than 1%, and every run (not --no-loo) predicts each step case again
 * from a fit without it: loo_predicted / loo_error_pct, the table's left-out column, summarized in
 * "summary_left_out". The error bands every prediction carries are 80% prediction intervals of those
 * left-out residuals per family, written to the document's "bands" with their coverage
 * (validation_doc.h). */
#ifndef MOESIM_VALIDATE_H
#define MOESIM_VALIDATE_H

#include <stdio.h>

#include "sim/base/errors.h"

struct cJSON;

#define VALIDATE_FORMAT "moesim-validation/1"
#define VALIDATE_BASELINE_TOL_PP 1.0
/* A case's status: "ok" when |error %| <= VALIDATE_OK_TOL_PCT, "miss" beyond it ("not expressible",
 * "failed" when it did not run). 10%: the bound the table's summary has counted from the start
 * ("within 10%", README "Accuracy"): a prediction further off is a miss the README explains (the
 * host-bound MoE cases, +20% to +113%), not a pass. The summary line prints it. */
#define VALIDATE_OK_TOL_PCT 10.0
#define VALIDATE_MAX_SET 8

typedef struct {
    const char *cases_path;     /* the cases file */
    const char *out_dir;        /* validation.json / validation.csv go here */
    const char *baseline_path;  /* NULL: no comparison */
    int jobs;                   /* worker processes */
    int quiet;                  /* no table */
    int fit;                    /* refit the global parameters from their priors and write them to fit_out */
    const char *fit_out;        /* NULL: GLOBAL_FIT_FILE (sim/plan/global_params.h) */
    int check_fit;              /* refit from the committed values; fail when one moves by more than 1% */
    int no_loo;                 /* in-sample only: no leave-one-out column (and no fit) */
    int n_set;                  /* "PATH=VALUE" settings applied to every case's scenario (an ablation: */
    const char *set[VALIDATE_MAX_SET]; /* host.framework=none); VALUE is JSON, else a string */
} validate_opts;

/* 0: every case evaluated (and, with a baseline, none moved); EXIT_RUNTIME: a case failed to run or
 * moved against the baseline; EXIT_BADINPUT: a bad cases or baseline file. */
int validate_run(const validate_opts *o, FILE *out, moe_error *err);

/* The table of a validation document (cases + summary) as validate_run prints it. */
void validate_print(FILE *out, const struct cJSON *doc);

/* Compare a validation document with a baseline document; prints every case that moved to `out`.
 * Returns the number of cases that moved (a missing or new case, a changed status, or an error
 * that moved by more than tol_pp). */
int validate_compare(const struct cJSON *doc, const struct cJSON *baseline, double tol_pp, FILE *out);

#endif
