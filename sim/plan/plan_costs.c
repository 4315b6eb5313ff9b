/* plan_costs.c — the plan's assumptions beyond the cost model (sources in plan_costs.h). */
#include "sim/plan/plan_costs.h"
#include "sim/scenario/schedule_rules.h"

#include "sim/plan/memory.h"

void plan_costs_default(plan_costs *c) {
    c->comm_sm_fraction = 20.0 / 132.0;
    c->memory_reserve = MEMORY_RESERVE_DEFAULT;
}

double overlap_compute_slowdown(const scenario *s, const plan_costs *c) {
    const layout_cfg *lay = &s->layout;
    int moe = model_moe_layers(&s->model) > 0;
    int overlapped = (scn_schedule_run(lay) == SCHED_DUALPIPE || lay->moe_a2a_overlap) && moe && lay->ep > 1;
    return overlapped ? 1.0 / (1.0 - c->comm_sm_fraction) : 1.0;
}
