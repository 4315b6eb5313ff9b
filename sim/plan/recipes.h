/* recipes.h — the quantized compute recipes of precision.compute: what each stores, which GEMM kernel
 * it runs and how fast relative to the cost model's fits, and which quantization passes it runs over
 * each tensor a GEMM reads (priced by costmodel_quant_s, costmodel.h).
 *
 * One table (recipes.c) serves the cost model (GEMM rates, quantization passes) and the memory ledgers
 * (cached activation and weight widths: memory.h). What runs is what Megatron-Core with
 * TransformerEngine 2.14.1 runs (the stack of the Megatron-Bridge 26.04.01 container; TE commit
 * 366798ef), except the reference "fp8", DeepSeek-V3's own blockwise recipe (DeepSeek-V3 report §3.3):
 *
 *   recipe  elements / scales                          GEMM kernel (TE 2.14.1)                 rate
 *   fp8     E4M3; FP32 per 1x128 (activations,         DeepSeek: DeepGEMM (the published         H: 1/1.16
 *           gradients), per 128x128 (weights)          FP8 fits); TE: cuBLASLt block scaling     B: 0.951
 *                                                      on Hopper, emulated through MXFP8 on
 *                                                      Blackwell (convert_block_scaling_to_
 *                                                      mxfp8_tensor, gemm.cpp l.291)
 *   fp8-cs  E4M3 fwd / E5M2 bwd; one FP32 scale per    cuBLASLt per-tensor FP8                    1
 *           tensor from its amax now (current scaling)
 *   fp8-ds  as fp8-cs, the scale from an amax history  cuBLASLt per-tensor FP8                    1
 *           (delayed scaling)
 *   mxfp8   E4M3; E8M0 per 32 elements (row- and       cuBLASLt MXFP8 (Blackwell)                 B: 0.951
 *           column-wise copies)
 *   nvfp4   E2M1; E4M3 per 16 + FP32 per tensor        cuBLASLt NVFP4 (Blackwell), at the FP4     B: 0.582
 *                                                      peak
 *
 * GEMM rate: a recipe without a GEMM fit of its own in the cost model runs the per-tensor FP8 (fp8-cs)
 * fit at its base peak times the rate (H: Hopper, B: Blackwell = block-scaled tensor cores, cost model
 * with an FP4 peak). Sources: 1.16 = per-tensor / blockwise cuBLAS FP8 on H200, median over 30 shapes
 * with M, N, K >= 4096 (range 1.06-1.23; moesim research note kernels-scale.md §2.1, measured with
 * torch._scaled_mm and torch.nn.functional.scaled_mm BlockWise1x128 x BlockWise128x128 on one H200;
 * DeepGEMM's own blockwise kernels are faster than cuBLAS's, which is why the reference fp8 keeps its
 * DeepGEMM fit where the model has one). 0.951 = 6.812 / 7.161 ms, TransformerEngine's per-layer GEMM
 * time of FP8 current scaling vs MXFP8, pre-quantized, on B300 (TE docs/examples/gemm_profiling/
 * gemm_profiling.rst at d0067d0d, hidden 4096, 15,872 tokens, 12 GEMMs). 0.582 = NVFP4's speed-up over
 * FP8 current scaling in the same table (6.812 / 3.764 = 1.810) over B300's FP4 : FP8 peak ratio
 * (14,000 / 4,500 TFLOP/s dense, NVIDIA's aiconfigurator b300_sxm.yaml): NVFP4 GEMMs reach 58% of the
 * per-tensor FP8 efficiency at those shapes.
 *
 * Quantization passes. Each GEMM C = A B reads three tensors in low precision, each in two usages
 * (TE docs/features/low_precision_training/performance_considerations.rst Table 2): the input A
 * (fprop row-wise, wgrad column-wise), the weight B (fprop row-wise, dgrad column-wise) and the output
 * gradient dC (dgrad row-wise, wgrad column-wise). A role's quantization makes both usages:
 *   QR_INPUT       the input, once per micro-batch in the forward (the column-wise copy is kept for wgrad)
 *   QR_GRAD        the output gradient, once per micro-batch in the backward (before dgrad)
 *   QR_WEIGHT      the weight, once per step (Megatron quantizes weights on the first micro-batch and
 *                  caches them; with fp8_param_gather, which every Megatron-Bridge FP8 recipe sets, the
 *                  row-wise cast moves into the optimizer step: still once per step)
 *   QR_WEIGHT_USE  per GEMM call that reads a weight, each usage: MXFP8's scale swizzle of FP8
 *                  parameters (gemm.cpp l.544-547), blockwise-on-Blackwell's conversion to MXFP8
 * Each pass is one kernel reading read_B and writing write_B bytes per element of the tensor (the
 * high-precision source is BF16, 2 B), at the cost model's rate for its kernel class:
 *   QK_CAST     a streaming cast, cast-transpose or cast to row- and column-wise copies ("quantize")
 *   QK_AMAX     a reduction to the tensor's absolute maximum ("quantize_amax"); a pass of 0 bytes is a
 *               launch-only kernel (resetting the amax, computing the scale from it)
 *   QK_RHT_SR   NVFP4's cast with stochastic rounding and the random Hadamard transform on the
 *               column-wise copy ("quantize_rht_sr")
 * per recipe (TE docs/features/low_precision_training/ rst pages at d0067d0d; kernel counts from TE 2.14.1
 * pytorch/csrc/quantizer.cpp, common/recipe/ kernels, research note host-side.md §1.1):
 *   fp8-ds  one cast-transpose (amax by atomics in the same kernel): read 2, write 1 + 1 (the transposed
 *           copy: Hopper FP8 GEMMs take only the TN layout); on Blackwell one copy serves both usages
 *           (write 1). The amax-history update (one batched kernel per autocast region) is not priced.
 *   fp8-cs  four kernels: zero the amax, the amax pass (read 2), the scale, the cast(-transpose) as
 *           fp8-ds: two reads of the source ("reduces tensor reads per quantization from two to one" is
 *           delayed scaling's advantage, fp8_current_scaling.rst).
 *   fp8     one kernel writing the row-wise and the transposed column-wise copies with their 1x128
 *           (or 128x128) scales: read 2, write 2 (1 + 4/128). On Blackwell each copy is then converted to
 *           MXFP8 (read 1 + 4/128, write 1 + 1/32 per copy), the weight's per GEMM call.
 *   mxfp8   one kernel writing both copies with E8M0 scales, already swizzled for the GEMM: read 2,
 *           write 2 (1 + 1/32); FP8 weights swizzle their scales per GEMM call (read and write 1/32).
 *   nvfp4   an amax pass (read 2; the post-Hadamard amax in the same pass) and one cast of both copies
 *           (write 2 (0.5 + 1/16)): round-to-nearest for inputs and weights (weights 16x16 blocks, no
 *           Hadamard transform), stochastic rounding and the Hadamard transform for gradients (QK_RHT_SR).
 * BF16, FP16 and FP32 run none. A grouped GEMM (the routed experts, TE GroupedLinear) quantizes its
 * per-expert chunks with split_quantize: one launch per expert for fp8-cs (4 per expert: the per-tensor
 * loop), fp8 and mxfp8, one fused multi-tensor launch for fp8-ds (nvte_multi_cast_transpose) and nvfp4
 * (group kernels): per_expert below.
 *
 * Cached activation widths (memory.h): the GEMM inputs kept for the backward, in the recipe's element
 * and scale bytes. Weights: the FP8 recipes keep FP8 weights (fp8_param_gather); NVFP4 keeps BF16
 * weights (its Megatron-Bridge B200 recipe sets fp4_param_gather = False) and casts them per step. */
#ifndef MOESIM_RECIPES_H
#define MOESIM_RECIPES_H

#include "sim/scenario/scenario_types.h"

typedef enum { GPU_HOPPER = 0, GPU_BLACKWELL, GPU_NARCH } gpu_arch;
/* A GPU's architecture as the recipes and the fitted parameters' scopes tell them apart: block-scaled
 * (FP4) tensor cores make it Blackwell. */
static inline gpu_arch gpu_arch_of(const gpu_cfg *g) { return g->fp4_tflops > 0 ? GPU_BLACKWELL : GPU_HOPPER; }
static inline const char *gpu_arch_name(gpu_arch a) { return a == GPU_BLACKWELL ? "Blackwell" : "Hopper"; }
typedef enum { QK_CAST = 0, QK_AMAX, QK_RHT_SR, QK_NKINDS } quant_kernel;
typedef enum { QR_INPUT = 0, QR_GRAD, QR_WEIGHT, QR_WEIGHT_USE, QR_NROLES } quant_role;

#define QUANT_MAX_PASSES 4

typedef struct {
    quant_kernel k;
    double read_B, write_B;  /* per element of the tensor; both 0: a launch-only kernel */
    int per_expert;          /* in a grouped GEMM: one launch per expert chunk (else one for the group) */
} quant_pass;

typedef struct {
    int n;
    quant_pass p[QUANT_MAX_PASSES];
} quant_passes;

typedef struct {
    dtype_kind dt;
    double rate[GPU_NARCH];  /* GEMM rate x the per-tensor FP8 fit's, at the base peak; 0: not on that arch */
    int fp4_base;            /* the base peak is the FP4 peak */
    double cached_B;         /* bytes per element of a cached GEMM input (element + scales) */
    double weight_B;         /* bytes per weight element held */
    int needs_blackwell;     /* block-scaled tensor cores (cluster.gpu.fp4_tflops > 0) */
    quant_passes pass[GPU_NARCH][QR_NROLES];
} quant_recipe;

/* The recipe of a quantized compute type, NULL for BF16/FP16/FP32. */
const quant_recipe *quant_recipe_of(dtype_kind dt);

/* The cost model's kernel name of a quantize kernel class: "quantize", "quantize_amax",
 * "quantize_rht_sr". */
const char *quant_kernel_name(quant_kernel k);

#endif
