/* point_eval.c — one sweep point through the three levels. */
#include "sim/point/point_eval.h"
#include "sim/point/validation_doc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/plan.h"
#include "sim/point/point_warnings.h"
#include "sim/simgrid/step_sim.h"
#include "sim/run/trainrun.h"

/* The results' "calibration" object: where the cost model came from (SCENARIO.md). */
static cJSON *calibration_json(const scenario *s, moe_error *err) {
    const costmodel *cm;   /* plan_evaluate's cached model: a sweep reads the file once */
    if (plan_costmodel(s, &cm, err)) return NULL;
    return costmodel_provenance_json(cm);
}

/* --reproducible: every wall-clock measurement is named *_wall_s (sim_wall_s, simgrid_wall_s, ...);
 * zero them all so that reruns are byte-identical. */
static void zero_wall_clock(cJSON *node) {
    for (cJSON *e = node ? node->child : NULL; e; e = e->next) {
        size_t n = e->string ? strlen(e->string) : 0;
        if (cJSON_IsNumber(e) && n >= 7 && strcmp(e->string + n - 7, "_wall_s") == 0) cJSON_SetNumberValue(e, 0);
        else if (cJSON_IsObject(e) || cJSON_IsArray(e)) zero_wall_clock(e);
    }
}

cJSON *point_evaluate(const scenario *s, int id, cJSON *sweep_values, const point_opts *opt, moe_error *err) {
    cJSON *pt = cJSON_CreateObject();
    double *series_s = NULL;               /* routing.steps > 1: the series the run replays */
    unsigned char *series_timed_out = NULL;
    cJSON_AddNumberToObject(pt, "id", id);
    cJSON_AddItemToObject(pt, "sweep", sweep_values ? sweep_values : cJSON_CreateObject());
    if (!opt->omit_scenario) cJSON_AddItemToObject(pt, "scenario", scenario_to_json(s));
    cJSON *cal = calibration_json(s, err);
    if (!cal) goto fail;
    cJSON_AddItemToObject(pt, "calibration", cal);

    plan_result plan;
    if (plan_evaluate(s, &plan, err)) goto fail;
    if (opt->levels & LEVEL_PLAN) {
        cJSON *po = cJSON_AddObjectToObject(pt, "plan");
        plan_result_to_json(&plan, po);   /* holds the plan's own warnings already */
        point_warn_plan(s, &plan, cJSON_GetObjectItemCaseSensitive(po, "warnings"));
    }

    /* every step and run result carries the error band of the validation table's step cases */
    validate_band band;
    int have_band = validate_band_for(s, &band) == 0;
    if (have_band && (opt->levels & LEVEL_PLAN)) {
        cJSON *po = cJSON_GetObjectItemCaseSensitive(pt, "plan");
        validate_band_add(po, "tokens_per_s_per_gpu", 0, &band);
        validate_band_add(po, "step_time_s", 1, &band);
    }
    /* the step times the run replays: the plan's, else the step level's (and its series) */
    trainrun_steps run_steps = {.step_time_s = plan.step_time_s};
    if (opt->levels & LEVEL_STEP) {
        step_result st;
        memset(&st, 0, sizeof st);
        step_options so = {.trace_path = opt->trace_path, .progress = opt->progress, .progress_ctx = opt->progress_ctx};
        if (step_simulate(s, &so, &st, err)) goto fail;
        cJSON *step = cJSON_AddObjectToObject(pt, "step");
        step_result_to_json(&st, step);
        point_warn_step(s, &plan, &st, cJSON_AddArrayToObject(step, "warnings"));
        if (have_band) {
            validate_band_add(step, "tokens_per_s_per_gpu", 0, &band);
            validate_band_add(step, "tflops_per_gpu", 0, &band);
            validate_band_add(step, "step_time_s", 1, &band);
            /* routing.steps > 1: the figures over all the steps carry it too */
            cJSON *steps = cJSON_GetObjectItemCaseSensitive(step, "steps");
            validate_band_add(steps, "tokens_per_s_per_gpu", 0, &band);
            validate_band_add(steps, "tflops_per_gpu", 0, &band);
            validate_band_add(steps, "step_time_s_mean", 1, &band);
        }
        run_steps.step_time_s = step_result_run_step_s(&st, s, &run_steps.timeout_fraction);
        run_steps.timeout_detect_s = step_result_detect_s(&st, s);
        if (st.n_steps > 1) {
            series_s = moe_xmalloc((size_t)st.n_steps * sizeof *series_s);
            series_timed_out = moe_xmalloc((size_t)st.n_steps);
            for (int t = 0; t < st.n_steps; t++) series_s[t] = step_result_series_run_s(&st, s, t);
            memcpy(series_timed_out, st.series_timed_out, (size_t)st.n_steps);
            run_steps.series_n = st.n_steps;
            run_steps.series_s = series_s;
            run_steps.series_timed_out = series_timed_out;
        }
        step_result_free(&st);
    }
    if (opt->levels & LEVEL_RUN) {
        trainrun_result tr;
        if (trainrun_simulate_steps(s, &plan, &run_steps, &tr, err)) goto fail;
        cJSON *run = cJSON_AddObjectToObject(pt, "run");
        trainrun_result_to_json(&tr, run);
        point_warn_run(s, &plan, &tr, cJSON_AddArrayToObject(run, "warnings"));
        /* the days scale with the step time the run replays */
        if (have_band) {
            validate_band_add(run, "days_p50", 1, &band);
            validate_band_add(run, "days_p95", 1, &band);
        }
    }
    if (opt->reproducible) zero_wall_clock(pt);
    free(series_s);
    free(series_timed_out);
    return pt;
fail:
    free(series_s);
    free(series_timed_out);
    cJSON_Delete(pt);
    return NULL;
}
