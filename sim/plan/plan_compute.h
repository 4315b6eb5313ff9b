/* plan_compute.h — THE compute price of one micro-batch on one GPU, kernel by kernel, through the cost
 * model; the plan level sums it per layer, the step level prices its program ops from it.
 *
 * One derivation serves both levels: compute_price_table() prices every kernel kind of the step
 * program (program.h K_*) on its real shapes — the list below — and plan_price_layers() is nothing
 * but sums over that table; step_price_costmodel (step_exec.h) looks every non-expert COMPUTE op up
 * in the same table. Only the routed experts are priced again per rank, on the tokens the routing
 * sample actually sends each rank (costmodel_expert_ffn_fwd_s, the same function the table uses at
 * uniform routing). The cost model is the scenario's calibration JSON, or the built-in roofline of
 * its GPU. Per GPU, per micro-batch of T = micro_batch x seq_len / cp tokens (the rank's context-
 * parallel share of its sequences):
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
 *   attention core     costmodel_attention_core_s by shape (compute_attention_chunk: the rank's
 *                      queries, its TP share of the heads, causal) forward and backward, in BF16.
 *                      Under context parallelism in cp chunks: one in K_ATTN_FWD / K_ATTN_BWD_INPUT
 *                      (the local keys), one per received chunk in K_ATTN_CORE_FWD / _BWD (cp - 1
 *                      ops a block)
 *   routed experts     costmodel_expert_ffn_fwd_s over the rank's local experts at uniform routing
 *                      (R x top_k x ep / experts tokens each, R = T x etp / tp the tokens the rank
 *                      routes, inner dim expert_hidden/etp); backward = 2 x that (input and weight
 *                      gradients: the same matrices, as the step prices them; each carries the
 *                      forward's quantization until both levels price each kernel with its own
 *                      part, costmodel_expert_ffn_part_s)
 *   quantization       a quantized recipe's passes (recipes.h, costmodel_quant_s) around each GEMM in
 *                      precision.compute: its input in the forward (a column-parallel GEMM under
 *                      sequence parallelism quantizes the rank's T / tp rows, before the all-gather),
 *                      its output gradient before the input gradient (a row-parallel GEMM's T / tp
 *                      rows), its weight once per step (1 / n_mb per micro-batch, with the forward;
 *                      the routed experts' on K_ROUTER_FWD, see routed experts) and per use (forward
 *                      and input gradient). BF16 pays none.
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
 * Which program kernel each term belongs to (the ops program.c emits per layer):
 *   K_ATTN_*           the attention block's residual+RMSNorm pass, its projections, latent norms and
 *                      core; _FWD forward, _BWD_INPUT every input gradient (GEMM dgrads, norm and core
 *                      backward), _BWD_WEIGHT the projections' weight gradients
 *   K_DENSE_FFN_*      (dense layers) the FFN's residual+RMSNorm pass, GEMMs and activation, split alike
 *   K_ROUTER_*         (MoE layers) the FFN side's residual+RMSNorm pass and the gating GEMM; the
 *                      program has no B/W split here, so _BWD holds input and weight gradients
 *   K_SHARED_EXPERT_*  the shared experts' FFN (0 without shared experts), split like the dense FFN
 *   K_PERMUTE_*, K_UNPERMUTE_*   the permute / unpermute passes
 *   K_EXPERT_*         routed experts at uniform routing (the plan's figure; the step re-prices them)
 *   K_EMBED_*          the embedding gather / scatter-add
 *   K_HEAD_LOSS_*      final RMSNorm, head GEMM, cross-entropy (_BWD: input and weight gradients)
 *   K_MTP_PROJ_*       an MTP module's embedding gather, three RMSNorms and projection M (2h -> h)
 *
 * Recompute (memory.h's kinds): selective re-runs, per layer, the RMSNorm passes, the MLA up
 * projections (q_b, kv_b forward GEMMs) and the FFN/expert activation functions; full re-runs the
 * whole layer forward. Either is extra work before the backward of that layer: the step program has
 * no recompute op, so the step adds recompute_s[layer kind] to the layer's FIRST backward kernel
 * (compute_recompute_kernel: K_DENSE_FFN_BWD_INPUT of a dense layer, K_UNPERMUTE_BWD of an MoE
 * layer), where it delays the layer's backward exactly as the re-run forward does. */
#ifndef MOESIM_PLAN_COMPUTE_H
#define MOESIM_PLAN_COMPUTE_H

#include "sim/plan/costmodel.h"
#include "sim/plan/model.h"
#include "sim/plan/kernels.h"
#include "sim/scenario/scenario.h"

/* Seconds of each program kernel for one micro-batch of T tokens on one GPU, by the kind of layer it
 * runs in (layer_kind, model.h: attention is the same in the dense and MoE rows, the windowed rows
 * differ from them only in the attention core; K_DENSE_FFN_* is 0 in the MoE rows, the MoE kernels 0
 * in the dense rows). Embedding and head kernels stand in every row. Without MoE layers the MoE rows
 * are the dense rows, without windowed layers the windowed rows the full ones. Kernels the table
 * does not price (K_NONE, K_OPTIMIZER) are 0. GEMMs in a quantized recipe (recipes.h) carry its
 * quantization passes (see "quantization" above).
 *
 * quant_s is the quantization part of s (quant_s[l][k] <= s[l][k], 0 for BF16), recompute_quant_s
 * that of recompute_s. Contract for the step executor's breakdown: an op priced from the table at
 * table.s[l][k] (scaled by op.tokens / T, plus recompute_s on compute_recompute_kernel) carries
 * quant_s[l][k] (scaled alike, plus recompute_quant_s) of quantization: the `quantize_s` entry of the
 * step's breakdown is their sum over the executed ops, plus costmodel_expert_ffn_quant_s of each
 * routed-expert op with its part (costmodel.h), so that quantize_s is inside, never beside, the
 * compute time. */
typedef struct {
    double T;                                   /* tokens of the micro-batch priced */
    double s[LAYER_NKINDS][K_NKINDS];
    double quant_s[LAYER_NKINDS][K_NKINDS];     /* of which quantization */
    double recompute_s[LAYER_NKINDS];           /* recompute per layer (layout.recompute) */
    double recompute_quant_s[LAYER_NKINDS];     /* of which quantization */
} kernel_price_table;

/* One attention-core launch of a rank holding T tokens (its 1/cp share of mb sequences) with tp-way
 * split heads: the local chunk (local = 1: its queries against its own keys, causal; a band of the
 * window on windowed layers) or one received chunk of ring attention (local = 0: the load-balanced
 * causal split shows each query half of a chunk's keys on average, so every chunk is the same work
 * as the local one). cp = 1: the whole causal sequence. */
cm_attn_shape compute_attention_chunk(const model_cfg *m, double T, double tp, double cp, int window, int local);

/* Price every kernel of `s` (layout, precision, recompute) for a micro-batch of T tokens with `cm`.
 * Pure; no allocation. */
void compute_price_table(const scenario *s, const model_counts *mc, const costmodel *cm, double T,
                         kernel_price_table *out);

/* The kernel a layer's recompute is attached to in the step (the first one of its backward). */
kernel_kind compute_recompute_kernel(layer_kind lk);

/* The phase a kernel's time counts in: PHASE_F, PHASE_B (input gradients; the router's and head's
 * whole backward) or PHASE_W (deferrable weight gradients); PHASE_OPT for kernels outside the table. */
op_phase compute_kernel_phase(kernel_kind k);

/* Seconds of one micro-batch on one GPU. bwd_s includes wgrad_s (the weight-gradient share, which
 * DualPipe's W chunk defers); recompute_s is extra forward work inside the backward. */
typedef struct { double fwd_s, bwd_s, wgrad_s, recompute_s; } pass_times;

typedef struct {
    /* per layer kind: attention + dense FFN, or attention + router + shared + routed experts +
     * permute/unpermute; full or windowed attention */
    pass_times layer[LAYER_NKINDS];
    pass_times embed;         /* first stage */
    pass_times head;          /* last stage: final norm, head GEMM, cross-entropy */
    pass_times mtp_proj;      /* one MTP module before its block (its block: layer[] of its kind) */
} plan_layer_costs;

/* Price the layers of `s` (layout, precision, recompute) with `cm`: sums over compute_price_table at
 * T = micro_batch x seq_len / cp. wgrad_s is the *_BWD_WEIGHT kernels (what the program lets a schedule
 * defer). Pure; no allocation. */
void plan_price_layers(const scenario *s, const model_counts *mc, const costmodel *cm,
                       plan_layer_costs *out);

#endif
