/* plan_compute.h — the plan level's compute time of one layer, priced through the cost model.
 *
 * Every term is a costmodel.h call on the kernel's real shape — the same functions the step level
 * prices its ops with — so that the plan and the step share one notion of achieved speed (the
 * scenario's calibration JSON, or the built-in roofline of its GPU). Per GPU, per micro-batch of
 * T = micro_batch x seq_len tokens:
 *
 *   GEMM C[M x N] = A[M x K] B[K x N]     forward costmodel_gemm_s(M, N, K); backward = input gradient
 *                                          (M, K, N) + weight gradient (K, N, M), both through
 *                                          costmodel_gemm_s: the same three matrices, other roles.
 *     attention (MLA)  q_a (T/tp, q_lora, h), kv_a (T/tp, kv_lora + rope, h)  [replicated across TP;
 *                      with sequence parallelism each rank projects its own T/tp tokens]
 *                      q_b (T, H qk/tp, q_lora), kv_b (T, H (nope + v)/tp, kv_lora), o (T, h, H v/tp)
 *     attention (GQA)  qkv (T, (H hd + KV hd + KV v)/tp, h), o (T, h, H v/tp)
 *     dense FFN        SwiGLU: gate+up (T, 2f/tp, h), down (T, h, f/tp); GeLU: fc1 (T, f/tp, h), fc2
 *     shared experts   as the dense FFN with f = shared_experts x expert_hidden
 *     router           (T/tp, experts, h) in BF16
 *     head             (T, vocab/tp, h) in BF16
 *   attention core     costmodel_attention_s(T x fwd_attn_core / tp) in BF16; backward 2x the FLOPs
 *   routed experts     costmodel_expert_ffn_fwd_s over the rank's local experts at uniform routing
 *                      (T x top_k x ep / experts tokens each, inner dim expert_hidden/tp); backward =
 *                      2 x that (input and weight gradients: the same matrices, as the step prices)
 *   memory-bound       costmodel_memory_bound_s per kernel: per block (attention, FFN) one RMSNorm +
 *                      residual add pass (read x and the residual, write both: 5 h x 2 B per token;
 *                      backward reads/writes twice that); SwiGLU/GeLU pointwise (fwd read 2f write f,
 *                      bwd read 3f write 2f, BF16); permute / unpermute around the all-to-all
 *                      (2 T top_k h bytes at the dispatch / combine precision forward, BF16 backward);
 *                      embedding gather (4 T h); final RMSNorm; cross-entropy (read BF16 logits,
 *                      keep FP32: 6 T vocab/tp B; backward the same bytes the other way).
 *
 * Precision (DeepSeek-V3 report §3.3, "the embedding module, the output head, MoE gating modules,
 * normalization operators, and attention operators" stay in BF16/FP32): GEMMs of the layers and the
 * experts in precision.compute; attention core, router and head in BF16.
 *
 * Recompute (memory.h's kinds): selective re-runs, per layer, the RMSNorm passes, the MLA up
 * projections (q_b, kv_b forward GEMMs) and the FFN/expert activation functions; full re-runs the
 * whole layer forward. Either is extra work before the backward of that layer. */
#ifndef MOESIM_PLAN_COMPUTE_H
#define MOESIM_PLAN_COMPUTE_H

#include "sim/costmodel.h"
#include "sim/model.h"
#include "sim/scenario.h"

/* Seconds of one micro-batch on one GPU. bwd_s includes wgrad_s (the weight-gradient share, which
 * DualPipe's W chunk defers); recompute_s is extra forward work inside the backward. */
typedef struct { double fwd_s, bwd_s, wgrad_s, recompute_s; } pass_times;

typedef struct {
    pass_times dense_layer;   /* attention + dense FFN */
    pass_times moe_layer;     /* attention + router + shared + routed experts + permute/unpermute */
    pass_times embed;         /* first stage */
    pass_times head;          /* last stage: final norm, head GEMM, cross-entropy */
} plan_layer_costs;

/* Price the layers of `s` (layout, precision, recompute) with `cm`. Pure; no allocation. */
void plan_price_layers(const scenario *s, const model_counts *mc, const costmodel *cm,
                       plan_layer_costs *out);

#endif
