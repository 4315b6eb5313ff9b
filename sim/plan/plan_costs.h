/* plan_costs.h — what the plan level assumes beyond the cost model (plan_evaluate_with, plan.h,
 * takes them as an input).
 *
 * Achieved speed (GEMM and attention efficiency, HBM and link bandwidths, launch overheads) is a
 * cost-model concern: the plan prices every compute kernel and every transfer through sim/plan/costmodel.h
 * (plan_compute.h says how), with the model the scenario names (costmodel_for_scenario). What stays
 * here is not a property of kernels or links:
 *
 *   comm_sm_fraction  SMs taken by communication kernels that run concurrently with compute under
 *                     DualPipe or layout.moe_a2a_overlap: DeepSeek-V3 report §3.2.2 dedicates 20 of the H800's 132 SMs to
 *                     all-to-all dispatch and combine, so overlapped compute runs on 112/132 of them.
 *   memory_reserve    share of GPU memory the four ledgers cannot use (memory.h: CUDA context, NCCL
 *                     buffers, allocator fragmentation). */
#ifndef MOESIM_PLAN_COSTS_H
#define MOESIM_PLAN_COSTS_H

#include "sim/scenario/scenario.h"

typedef struct {
    double comm_sm_fraction;
    double memory_reserve;
} plan_costs;

void plan_costs_default(plan_costs *c);

/* Compute slowdown from the SMs that overlapped all-to-alls take: 1/(1 - comm_sm_fraction) under
 * DualPipe with MoE layers and EP > 1, else 1. Both the plan and the step executor apply it. */
double overlap_compute_slowdown(const scenario *s, const plan_costs *c);

#endif
