/* sg_point.c — one sweep point through the three levels. */
#include "sim/sg_point.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "sim/costmodel.h"
#include "sim/plan.h"
#include "sim/step.h"
#include "sim/trainrun.h"

/* The results' "calibration" object: where the cost model came from (SCENARIO.md). */
static cJSON *calibration_json(const scenario *s, moe_error *err) {
    costmodel cm;
    if (costmodel_for_scenario(s, &cm, err)) return NULL;
    return costmodel_provenance_json(&cm);
}

cJSON *point_evaluate(const scenario *s, int id, cJSON *sweep_values, const point_opts *opt, moe_error *err) {
    cJSON *pt = cJSON_CreateObject();
    cJSON_AddNumberToObject(pt, "id", id);
    cJSON_AddItemToObject(pt, "sweep", sweep_values ? sweep_values : cJSON_CreateObject());
    cJSON_AddItemToObject(pt, "scenario", scenario_to_json(s));
    cJSON *cal = calibration_json(s, err);
    if (!cal) goto fail;
    cJSON_AddItemToObject(pt, "calibration", cal);

    plan_result plan;
    if (plan_evaluate(s, &plan, err)) goto fail;
    if (opt->levels & LEVEL_PLAN) plan_result_to_json(&plan, cJSON_AddObjectToObject(pt, "plan"));

    double step_time_s = plan.step_time_s;
    if (opt->levels & LEVEL_STEP) {
        step_result st;
        memset(&st, 0, sizeof st);
        step_options so = {.trace_path = opt->trace_path};
        if (step_simulate(s, &so, &st, err)) goto fail;
        if (opt->reproducible) st.sim_wall_s = 0;
        step_result_to_json(&st, cJSON_AddObjectToObject(pt, "step"));
        step_time_s = st.step_time_s;
        step_result_free(&st);
    }
    if (opt->levels & LEVEL_RUN) {
        trainrun_result tr;
        if (trainrun_simulate(s, &plan, step_time_s, &tr, err)) goto fail;
        trainrun_result_to_json(&tr, cJSON_AddObjectToObject(pt, "run"));
    }
    return pt;
fail:
    cJSON_Delete(pt);
    return NULL;
}
