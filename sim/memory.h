/* memory.h — the four memory ledgers of one GPU (seed 000 §1.3, REFERENCE.md §2), extended for MoE.
 *
 * Seed form, psi = parameters:  params 2psi/(TP*PP), grads 2psi/(TP*PP), optimizer (ZeRO-1)
 * 12psi/(TP*PP*DP), activations ~ P x (L/PP) x (b s h / TP) x recompute factor. What moesim models:
 *
 *  - Held parameters are counted per stage (the embedding sits on the first stage, the head and final
 *    norm on the last, layers split as pipeline_forms.h says), per TP rank (head-wise matrices, FFNs,
 *    experts and the vocabulary are split; norms, the router and MLA's down projections are
 *    replicated), and per EP rank for routed experts (ceil(experts/ep) experts per GPU).
 *  - Replica (ZeRO) groups: a non-expert parameter is replicated over attention-DP = gpus/(tp*pp)
 *    ranks, an expert parameter over expert-DP = dp ranks. ZeRO-1 shards the optimizer over that
 *    group, ZeRO-2 also the gradients, ZeRO-3 also the weights (its per-layer gather buffer is not
 *    counted).
 *  - Bytes per parameter: weights in the compute precision (BF16: 2; FP8: 1 — seed 003 stores FP8
 *    weights; with DeepSeek-V3's 128x128 block scaling (report §3.3.1) one FP8 copy serves both the
 *    forward and the input-gradient GEMM, the scales add 4 B per 16384 weights and are ignored);
 *    gradients 2 B (BF16 accumulation, seed 000 §1.3; DeepSeek-V3 keeps them in FP32, which a
 *    precision.master-like knob could add later); optimizer = master (precision.master: FP32 4 B)
 *    + Adam m and v in FP32 (8 B) = 12 B per parameter.
 *  - DualPipe: rank r holds stages r and p-1-r (two copies of the parameters: report Table 2); the
 *    two holders of each stage together form its ZeRO group, so the optimizer shard per GPU is the
 *    same as 1F1B's while weights and gradients double.
 *  - Activations: a Korthikanti-style count (Korthikanti et al. 2022, "Reducing Activation
 *    Recomputation in Large Transformer Models": 34 s b h + 5 a s^2 b per layer for GPT without
 *    sequence parallelism) rebuilt tensor by tensor for RMSNorm pre-norm blocks, MHA/GQA/MLA and
 *    SwiGLU/GeLU, under these assumptions: flash attention (the 5 a s^2 b term vanishes; only the
 *    output and a per-head FP32 logsumexp are kept), no dropout (modern pre-training: the masks
 *    vanish), sequence parallelism whenever TP > 1 (every tensor divided by TP), activations in BF16
 *    except GEMM inputs in FP8 when precision.compute is FP8 (DeepSeek-V3 §3.3.2 caches Linear
 *    inputs in FP8; §3.3.2 also caches the SwiGLU inputs of MoE experts in FP8). MoE layers keep,
 *    per token, top_k copies of the expert input, gate, up, activation and output (the output is
 *    needed for the gate-weight gradient; uniform routing: a GPU receives as many token copies as it
 *    sends) and the router's FP32 scores. The last stage also keeps one micro-batch of FP32 logits.
 *  - Recompute: none; selective = recompute RMSNorm outputs, the FFN/expert activation function and
 *    (MLA) the q/kv up-projections (DeepSeek-V3 §3.2.3) — keeps the inputs of those ops only;
 *    full = keep each layer's input only, plus one layer's full set while it is recomputed. */
#ifndef MOESIM_MEMORY_H
#define MOESIM_MEMORY_H

#include "sim/model.h"
#include "sim/scenario.h"

/* Default share of GPU memory not available to the four ledgers: CUDA context and NCCL buffers
 * (~1-3 GiB on 80 GiB parts), allocator fragmentation (PyTorch's caching allocator commonly loses
 * 5-10%). */
#define MEMORY_RESERVE_DEFAULT 0.08

typedef struct { double params, grads, optimizer, activations, total; } mem_ledgers;   /* bytes */

/* Stored activation bytes per token per layer, before the TP split, per recompute kind. */
typedef struct {
    double dense_layer[3];   /* index: recompute_kind */
    double moe_layer[3];
    double head;             /* last stage, per token: FP32 logits */
} act_profile;

void memory_activation_profile(const model_cfg *m, const precision_cfg *prec, act_profile *out);

/* Parameter counts one GPU of pipeline stage `stage` holds. */
typedef struct { double nonexpert, expert; } stage_params;
void memory_stage_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                         int stage, stage_params *out);

/* Ledgers of one GPU of pipeline rank `rank` (0..pp-1) with `micro_batches` micro-batches per step.
 * For DualPipe the rank holds stages rank and pp-1-rank. */
void memory_rank_ledgers(const scenario *s, const model_counts *mc, const act_profile *ap,
                         int micro_batches, int rank, mem_ledgers *out);

/* Does `l` fit in mem_GiB x (1 - reserve)? When it does not, *overflow names the largest ledger
 * ("params", "grads", "optimizer" or "activations"); else "". */
int memory_fits(const mem_ledgers *l, double mem_GiB, double reserve, const char **overflow);

#endif
