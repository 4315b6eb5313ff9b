/* plan_costs.c — default efficiency constants of the plan level (sources in plan_costs.h). */
#include "sim/plan_costs.h"

#include "sim/memory.h"

void plan_costs_default(plan_costs *c) {
    c->gemm_eff_bf16 = 0.75;
    c->gemm_eff_fp8 = 0.60;
    c->attn_eff = 0.60;
    c->expert_rows_half = 64.0;
    c->hbm_eff = 0.80;
    c->nic_eff = 0.80;
    c->nvlink_eff = 1.00;
    c->elementwise_passes = 3.0;
    c->comm_sm_fraction = 20.0 / 132.0;
    c->memory_reserve = MEMORY_RESERVE_DEFAULT;
}
