/* recipes.h — the quantized compute recipes of precision.compute: what each stores, how fast its
 * GEMMs run relative to the FP8 figures of a cost model, and what its casts cost.
 *
 * One table (recipes.c) serves the cost model (GEMM rate, cast time: costmodel.h) and the memory
 * ledgers (cached activation and weight widths: memory.h). DeepSeek-V3's blockwise FP8 ("fp8") is
 * the reference: the FP8 GEMM figures of the published and fitted cost models are its rates, and
 * its casts are not priced separately (they are not in the published models either: a limit). The
 * other recipes are priced relative to it:
 *
 *   recipe  elements                          GEMM rate                    extra cast bytes / element
 *   fp8     E4M3, FP32 scale per 1x128 tile   1 (reference)                0
 *           (activations), 128x128 (weights)
 *   fp8-cs  E4M3, one FP32 scale per tensor   1.06 x the FP8 rate          +4: an amax pass over the BF16
 *           (current scaling)                                              input (read 2 B) before the
 *                                                                          cast, and a transposed FP8 copy
 *                                                                          for the weight gradient (read 1
 *                                                                          + write 1 B: Hopper FP8 GEMMs
 *                                                                          take only the TN layout)
 *   mxfp8   E4M3, E8M0 scale per 32           1.06 x the FP8 rate          0: one cast writes the row- and
 *           elements (Blackwell)                                           column-wise copies, as the
 *                                                                          blockwise reference does
 *   nvfp4   E2M1, E4M3 scale per 16 elements  1 x the FP4 peak rate (the   +5.0625: amax pass (2 B), a
 *           + FP32 per-tensor scale           cost model's FP8 efficiency  16x16 random Hadamard transform
 *           (Blackwell)                       at the FP4 peak)             of the weight-gradient inputs
 *                                                                          (read 2 + write 2 B), and 2 x
 *                                                                          (0.5 + 1/16) B written instead of
 *                                                                          2 x (1 + 4/128) B
 * The cast is counted on each GEMM's activation input (forward) and on its output gradient
 * (backward), as a memory-bound pass.
 *
 * Sources. GEMM rate: per-tensor FP8 GEMMs through cuBLASLt reach 1,599-1,630 TFLOP/s on one H100 SXM
 * at 8192^3 (a published cross-check report, test_gpu_scripts/reports_cublaslt_fp8_crosscheck_20260524.md);
 * DeepGEMM's blockwise kernels reach at best 1,520 TFLOP/s on H800 (DeepGEMM README, April 2025,
 * 4096 x 7168 x 16384): 1610 / 1520 = 1.06. MXFP8 applies its block scales inside Blackwell's
 * block-scaled tensor-core MMA (no CUDA-core promotion as in DeepSeek-V3 §3.3.2), so it runs at the
 * per-tensor rate. NVFP4: "Pretraining Large Language Models with NVFP4" (NVIDIA, arXiv:2509.25149):
 * 16-element blocks with E4M3 scales and an FP32 tensor scale, random Hadamard transforms on the
 * weight-gradient GEMM inputs. Cached activation widths: the GEMM inputs kept for the backward, in
 * the recipe's element and scale bytes. Weights: the FP8 recipes keep FP8 weights (Megatron-Bridge's
 * fp8 recipes set fp8_param_gather); NVFP4 keeps BF16 weights (its B200 recipe sets
 * fp4_param_gather = False) and casts them per GEMM. */
#ifndef MOESIM_RECIPES_H
#define MOESIM_RECIPES_H

#include "sim/scenario/scenario.h"

typedef struct {
    dtype_kind dt;
    double gemm_rate;        /* x the base peak's GEMM rate (base: FP8, or FP4 for nvfp4) */
    int fp4_base;            /* the base peak is the FP4 peak */
    double cast_extra_B;     /* extra bytes per element cast, beyond the reference recipe */
    double cached_B;         /* bytes per element of a cached GEMM input (element + scales) */
    double weight_B;         /* bytes per weight element held */
    int needs_blackwell;     /* block-scaled tensor cores (cluster.gpu.fp4_tflops > 0) */
} quant_recipe;

/* The recipe of a quantized compute type, NULL for BF16/FP16/FP32. */
const quant_recipe *quant_recipe_of(dtype_kind dt);

#endif
