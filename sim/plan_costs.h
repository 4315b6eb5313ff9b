/* plan_costs.h — the efficiency constants of the plan level's first-order step time, in one place.
 *
 * These are placeholders with a stated source each, not fitted numbers: the calibration issue will
 * replace them with cost models fitted to measured kernels (calibration/). Everything the plan
 * assumes about achieved (as opposed to peak) speed is here, nowhere else. */
#ifndef MOESIM_PLAN_COSTS_H
#define MOESIM_PLAN_COSTS_H

#include "sim/errors.h"
#include "sim/plan.h"
#include "sim/scenario.h"

typedef struct {
    double gemm_eff_bf16;       /* large dense GEMMs, fraction of the BF16 peak (REFERENCE.md §6: 75-80%) */
    double gemm_eff_fp8;        /* large FP8 GEMMs with fine-grained scaling, fraction of the FP8 peak
                                   (DeepGEMM reports ~1200-1550 of 1979 TFLOP/s on H800) */
    double attn_eff;            /* flash attention (kept in BF16, as DeepSeek-V3 does), of the BF16 peak */
    double expert_rows_half;    /* rows per expert at which a grouped expert GEMM reaches half of the
                                   large-GEMM efficiency (skinny shapes: wave quantization, tile waste) */
    double hbm_eff;             /* achievable fraction of HBM bandwidth (streaming kernels) */
    double nic_eff;             /* achievable fraction of NIC line rate (400 Gb/s -> 40 GB/s: §6) */
    double nvlink_eff;          /* of cluster.nvlink_GBps, which is already the achievable figure */
    double elementwise_passes;  /* HBM bytes moved by non-GEMM kernels (norms, rope, activations,
                                   permute) per stored activation byte, forward + backward */
    double comm_sm_fraction;    /* SMs taken by overlapped communication kernels (DeepSeek-V3 §3.2.2:
                                   20 of 132 SMs for DualPipe's all-to-all) */
    double memory_reserve;      /* share of GPU memory not available to the four ledgers (memory.h) */
} plan_costs;

void plan_costs_default(plan_costs *c);

/* plan_evaluate with explicit costs (plan_evaluate uses plan_costs_default). */
int plan_evaluate_with(const scenario *s, const plan_costs *c, plan_result *out, moe_error *err);

#endif
