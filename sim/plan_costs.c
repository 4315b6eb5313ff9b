/* plan_costs.c — the plan's assumptions beyond the cost model (sources in plan_costs.h). */
#include "sim/plan_costs.h"

#include "sim/memory.h"

void plan_costs_default(plan_costs *c) {
    c->comm_sm_fraction = 20.0 / 132.0;
    c->memory_reserve = MEMORY_RESERVE_DEFAULT;
}
