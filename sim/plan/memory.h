/* memory.h — the four memory ledgers of one GPU (seed 000 §1.3, REFERENCE.md §2), extended for MoE.
 *
 * Seed form, psi = parameters:  params 2psi/(TP*PP), grads 2psi/(TP*PP), optimizer (ZeRO-1)
 * 12psi/(TP*PP*DP), activations ~ P x (L/PP) x (b s h / TP) x recompute factor. What moesim models:
 *
 *  - Held parameters are counted per stage (the embedding and the head where the pipeline layout puts
 *    them, blocks as it splits them), per TP rank (head-wise matrices, FFNs,
 *    experts and the vocabulary are split; norms, the router and MLA's down projections are
 *    replicated), and per EP rank for routed experts (ceil(experts/ep) experts per GPU, each split
 *    over etp ranks). Activations are those of the rank's context-parallel share of its sequences.
 *  - Replica (ZeRO) groups: a non-expert parameter is replicated over attention-DP = gpus/(tp*pp)
 *    ranks, an expert parameter over expert-DP = dp ranks. ZeRO-1 shards the optimizer over that
 *    group, ZeRO-2 also the gradients, ZeRO-3 also the weights. The step gathers and reduce-scatters
 *    unit by unit (a transformer block, an MTP module, a stage's embedding and head:
 *    memory_block_params and friends below), prefetching one: ZeRO-3 adds two gathered units of
 *    weights, ZeRO-2/3 two units of unsharded gradients (ZERO_UNITS_IN_FLIGHT x the largest unit the
 *    stage holds).
 *  - Bytes per parameter (mem_state_bytes, reported by the plan): weights in the compute precision
 *    (BF16: 2; FP8: 1 — seed 003 stores FP8 weights; DeepSeek-V3's 128x128 block scales add 4 B per
 *    16384 weights and are ignored); gradients 2 B (BF16, seed 000 §1.3); optimizer = master weights
 *    in precision.master + Adam m and v. The moments follow precision.master: FP32 master -> FP32
 *    moments (4 + 8 = 12 B, seed 000 / seed 003); a 16-bit master -> 16-bit moments (2 + 4 = 6 B).
 *    DeepSeek-V3 (report §3.3.3) keeps an FP32 master with BF16 moments (4 + 4 = 8 B) and FP32
 *    gradients (4 B): the scenario has no knob for either yet, so memory_rank_ledgers_with() takes
 *    the bytes explicitly for that what-if.
 *  - DualPipe: rank r holds stages r and p-1-r (two copies of the parameters: report Table 2); the
 *    two holders of each stage together form its ZeRO group, so the optimizer shard per GPU is the
 *    same as 1F1B's while weights and gradients double.
 *  - Activations (memory_activation_profile): counted tensor by tensor — what each backward kernel
 *    needs — for RMSNorm pre-norm blocks, MHA/GQA/MLA and SwiGLU/GeLU FFNs, with flash attention
 *    (no s x s scores: the output and an FP32 logsumexp per head are kept), no dropout, and sequence
 *    parallelism whenever TP > 1 (every tensor divided by TP). For a BF16 GPT block this is
 *    Korthikanti et al. 2022's 34 s b h without the two dropout masks, plus the logsumexp. Byte
 *    widths: BF16 by default; under FP8 compute (DeepSeek-V3 §3.3.2 "Low-Precision Activation")
 *    every cached Linear input is FP8 with one FP32 scale per 1x128 tile (1 + 4/128 B), the inputs of
 *    the MoE SwiGLU (gate and up outputs) likewise, and the input of the Linear after attention (also
 *    flash attention's saved output) E5M6 — counted as 2 B: the report does not say it is packed.
 *    The other compute recipes (fp8-cs, mxfp8, nvfp4) cache their GEMM inputs at their own element
 *    and scale widths and hold weights at their own width (sim/plan/recipes.h).
 *    MoE: the expert tensors of a token live on the rank that computes the expert; under uniform
 *    routing a rank receives as many token copies as it sends, top_k per token, so per token of its
 *    own the rank holds top_k copies of: the dispatched input (FP8 when dispatched in FP8), the
 *    gate/up outputs, the routing weight (FP32) and — without recompute — the activation output. The
 *    expert's down-projection output is NOT kept: the routing weight is applied inside the activation
 *    (token-weighted SwiGLU, Megatron-Core's WeightedSwiGLUFunction, which saves only its input and
 *    the weights), so the gate gradient is <W_down^T dy, swiglu(gate, up)>, from tensors backward has
 *    anyway. The router keeps its FP32 scores over all experts (the sequence-wise balance loss needs
 *    them). The last stage also keeps one micro-batch of FP32 logits.
 *  - Recompute kinds:
 *      none       every tensor above is cached;
 *      selective  DeepSeek-V3's practice (report §3.2.3 "Recomputation of RMSNorm and MLA
 *                 Up-Projection" and §3.3.2 "Inputs of the SwiGLU operator ... recompute its output
 *                 in the backward pass"): RMSNorm outputs, MLA q/k/v up-projection outputs and the
 *                 FFN/expert activation outputs are recomputed; their inputs stay cached. (GQA/MHA
 *                 models keep q, k, v: there is no up-projection to recompute from.)
 *      full       each layer keeps its input only; one layer's full set while it is recomputed.
 *    MTP modules (model.mtp_layers) are counted on the stage the pipeline layout puts them: their
 *    block, projection and norms, a copy of the embedding off the first stage, their inputs' and
 *    their block's activations, and one more set of logits per module on the loss stage. EMA weights
 *    (DeepSeek-V3 keeps them in host memory) are not counted.
 *  - Stages: what each pipeline position holds comes from the pipeline layout
 *    (sim/scenario/pipeline_layout.h, pipeline_census in pipeline_forms.h). */
#ifndef MOESIM_MEMORY_H
#define MOESIM_MEMORY_H

#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/scenario/scenario.h"

/* Default share of GPU memory not available to the four ledgers: CUDA context and NCCL buffers
 * (~1-3 GiB on 80 GiB parts), allocator fragmentation (PyTorch's caching allocator commonly loses
 * 5-10%). */
#define MEMORY_RESERVE_DEFAULT 0.08

typedef struct { double params, grads, optimizer, activations, total; } mem_ledgers;   /* bytes */

/* Bytes per parameter of the model state. optimizer = master + moments (m and v together). */
typedef struct { double weight, grad, master, moments; } mem_state_bytes;

/* The scenario's state bytes (rules above). */
void memory_state_bytes(const precision_cfg *prec, mem_state_bytes *out);

/* Stored activation bytes per token per layer, before the TP split, per recompute kind. */
typedef struct {
    double dense_layer[3];   /* index: recompute_kind */
    double moe_layer[3];
    double head;             /* last stage, per token: FP32 logits */
    double mtp_proj;         /* an MTP module's inputs besides its block, per token */
} act_profile;

void memory_activation_profile(const model_cfg *m, const precision_cfg *prec, act_profile *out);
/* One block's cached activation bytes per token under a recompute set (sim/plan/recompute.h),
 * before the TP split; moe: an MoE block. */
double memory_block_activation(const model_cfg *m, const precision_cfg *prec, unsigned set, int moe);

/* Parameter counts one GPU of a pipeline position holds (its census: pipeline_forms.h). */
typedef struct { double nonexpert, expert; } stage_params;
/* One transformer block's share on one GPU (moe: an MoE block): attention over TP, norms, the dense
 * FFN over TP or the router, the shared experts over TP and the rank's routed experts over ETP. */
void memory_block_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay, int moe,
                         stage_params *out);
/* One MTP module's share: its block, the projection M over TP and its norms. */
void memory_mtp_module_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                              stage_params *out);
/* A stage's non-block parameters (all non-expert): the embedding where it is (or an MTP module's copy of
 * it), the final norm and head on the loss stage. */
double memory_stage_extra_params(const model_counts *mc, const layout_cfg *lay, int embed, int loss, int mtp);
/* ZeRO's units in flight on one GPU: the one being used and the one prefetched (or reduced). */
#define ZERO_UNITS_IN_FLIGHT 2
/* The largest unit (block, MTP module, or the stage's extra parameters) a pipeline position holds. */
double memory_zero_unit_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                               const stage_census *cz);
void memory_stage_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                         const stage_census *cz, stage_params *out);

/* One routed-expert slot on one GPU of pipeline rank `rank`: one expert's weights, gradients and
 * optimizer state in every MoE block and MoE MTP module the rank holds (both stages under DualPipe),
 * by the ledger's rules: ZeRO-1 / 2 / 3 shard the optimizer / gradients / weights over the expert DP.
 * Each redundant expert slot (routing.redundant_experts: ceil((E + R) / ep) - ceil(E / ep) more per
 * rank) adds one to the rank's ledgers; an EPLB move carries its params and optimizer. */
void memory_expert_slot_bytes(const scenario *s, const model_counts *mc, const mem_state_bytes *sb,
                              const stage_census *cz, int rank, mem_ledgers *out);
/* The parameters behind it (one expert in every MoE block of the rank), and the expert DP group the
 * ledger shards over (*expert_dp, NULL: not wanted). */
double memory_expert_slot_params(const scenario *s, const model_counts *mc, const stage_census *cz, int rank,
                                 double *expert_dp);

/* Ledgers of one GPU of pipeline rank `rank` (0..pp-1) with `micro_batches` micro-batches per step.
 * For DualPipe the rank holds stages rank and pp-1-rank. State bytes from memory_state_bytes(). */
void memory_rank_ledgers(const scenario *s, const model_counts *mc, const act_profile *ap,
                         int micro_batches, int rank, mem_ledgers *out);
/* The same with explicit state bytes (what-ifs the scenario cannot express yet). */
void memory_rank_ledgers_with(const scenario *s, const model_counts *mc, const act_profile *ap,
                              const mem_state_bytes *sb, int micro_batches, int rank,
                              mem_ledgers *out);
/* The same with the census of every pipeline position (pipeline_census) already made. */
void memory_rank_ledgers_cz(const scenario *s, const model_counts *mc, const act_profile *ap,
                            const mem_state_bytes *sb, int micro_batches, const stage_census *cz, int rank,
                            mem_ledgers *out);

/* The GiB of a mem_GiB GPU the four ledgers may use: mem_GiB x (1 - reserve). */
double memory_usable_GiB(double mem_GiB, double reserve);
/* Does `l` fit in memory_usable_GiB(mem_GiB, reserve)? When it does not, *overflow names the largest ledger
 * ("params", "grads", "optimizer" or "activations"); else "". */
int memory_fits(const mem_ledgers *l, double mem_GiB, double reserve, const char **overflow);

#endif
