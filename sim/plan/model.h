/* model.h — exact parameter and FLOP counts of a transformer (dense or MoE) from its model_cfg.
 *
 * Counting conventions (stated once, used everywhere):
 *  - Parameters are weight-matrix and norm-weight elements. No biases and no learned position
 *    embeddings are counted: none of the presets but GPT-3 has them, and for GPT-3 they add 0.03%
 *    (biases ~5M, positions 25M of 175B).
 *  - MLA (DeepSeek-V2/V3) is counted in its training (non-absorbed) form: q down/up projections with
 *    q_lora_rank, the kv down projection to kv_lora_rank + rope_head_dim (the shared rope key), the kv
 *    up projection to heads x (head_dim + v_head_dim), the output projection, and the two RMSNorms of
 *    the low-rank paths.
 *  - FLOPs are matrix-multiply FLOPs (2 per multiply-accumulate); norms, activations, softmax and rope
 *    are not counted (they are memory-bound, < 1% of the FLOPs, and MFU conventionally excludes them).
 *    The embedding lookup is a gather: 0 FLOPs.
 *  - Attention scores (Q K^T) and values (A V) are counted with causal masking as HALF of the full
 *    s x s products: per token, 2 x (s/2) x heads x dim each (the Megatron/DeepSeek MFU convention;
 *    the exact causal average is (s+1)/2 keys per query).
 *  - Forward + backward = 3 x forward (backward = input gradients + weight gradients, 2 x forward).
 *  - Active parameters: everything a token passes through: all dense parameters (attention, dense
 *    FFN, norms, router, embedding and output head) plus shared experts plus top_k routed experts.
 *    This is how Mixtral's 12.9B and DeepSeek-V3's 37B are counted (both include embedding and head).
 *  - Multi-token prediction (model.mtp_layers, DeepSeek-V3 §2.2): each MTP module is one block of
 *    the kind of the model's last block (MoE for DeepSeek-V3), two RMSNorms on its inputs (the
 *    previous depth's hidden state and the next token's embedding), the projection M (2h -> h) and
 *    a final RMSNorm; it shares the embedding and the output head with the main model, whose head
 *    it runs once more (its own loss). Published totals (671B / 37B) exclude it: params_total and
 *    params_active do too, params_mtp holds it. FLOPs per token DO count it (fwd_mtp, in
 *    flops_per_token), as Megatron-LM's num_floating_point_operations does for the published
 *    Megatron throughputs (the MTP block, its projection and one more logit GEMM per module).
 *  - Sliding-window attention (model.sliding_window w, model.global_attention_every): a windowed
 *    block's query meets on average w - w^2/(2s) keys instead of s/2 (the causal convention above
 *    with each query's keys capped at w; equal to s/2 at w = s). */
#ifndef MOESIM_MODEL_H
#define MOESIM_MODEL_H

#include "sim/scenario/scenario.h"

/* The kinds of transformer block, as the price table (plan_compute.h) and the step program see them:
 * dense FFN or MoE, full or sliding-window attention. */
typedef enum { LAYER_DENSE = 0, LAYER_MOE, LAYER_DENSE_WINDOW, LAYER_MOE_WINDOW, LAYER_NKINDS } layer_kind;
static inline int layer_kind_is_moe(layer_kind k) { return k == LAYER_MOE || k == LAYER_MOE_WINDOW; }
static inline int layer_kind_is_window(layer_kind k) { return k >= LAYER_DENSE_WINDOW; }

/* Which blocks are MoE — the one rule, used by the model counts, the plan, the step program, its
 * routing and live mode: with experts, every block from model.dense_layers on (dense_layers <= layers,
 * scenario.c checks); without experts none. An MTP block (layer >= layers) is of the last block's
 * kind. */
static inline int model_first_moe_layer(const model_cfg *m) {
    return m->experts > 0 && m->dense_layers < m->layers ? m->dense_layers : m->layers;
}
static inline int model_moe_layers(const model_cfg *m) { return m->layers - model_first_moe_layer(m); }
static inline int model_layer_is_moe(const model_cfg *m, int layer) {
    return model_moe_layers(m) > 0 && layer >= model_first_moe_layer(m);
}

typedef struct {
    int layers, dense_layers, moe_layers;

    /* ---- parameters of one layer ---- */
    double attn_split;       /* attention matrices split across TP ranks (MHA/GQA: all four; MLA: up
                                projections and output projection) */
    double attn_replicated;  /* MLA q/kv down projections and their RMSNorms: replicated across TP
                                (Megatron-Core's MLA keeps the small down projections whole) */
    double attn_up_proj;     /* MLA q and kv up projections (recomputed by selective recompute); 0 else */
    double layer_norms;      /* the two pre-norms (attention, FFN) */
    double dense_ffn;        /* one dense FFN (SwiGLU: 3 h f, GeLU: 2 h f) */
    double expert;           /* one routed expert (same activation as the dense FFN) */
    double shared;           /* all shared experts of one MoE layer */
    double router;           /* h x experts */
    /* ---- parameters outside the layers ---- */
    double embedding, head, final_norm;   /* head = 0 when tied to the embedding */

    /* ---- totals and breakdown (counts) ---- */
    double params_total, params_active;
    double params_embedding, params_head, params_attention, params_dense_ffn;
    double params_router, params_shared_experts, params_routed_experts, params_norms;

    /* ---- forward FLOPs per token ---- */
    double fwd_attn_proj;    /* projections of one layer: 2 x attention params */
    double fwd_attn_core;    /* Q K^T + A V of one layer at seq_len, causal = half */
    double fwd_dense_ffn;    /* one dense FFN */
    double fwd_shared;       /* shared experts of one MoE layer */
    double fwd_routed;       /* top_k routed experts of one MoE layer */
    double fwd_router;       /* router of one MoE layer */
    double fwd_head;         /* output head (also when tied: the matmul is done either way) */
    double fwd_dense_layer, fwd_moe_layer;   /* whole layers */
    double fwd_attn_core_window; /* Q K^T + A V of one windowed layer (= fwd_attn_core without windows) */
    int window_layers;       /* blocks with sliding-window attention */
    double fwd_total;        /* per token, whole model incl. MTP */
    /* ---- multi-token prediction (per module; mtp_layers of them) ---- */
    int mtp_layers;
    int mtp_moe;             /* the MTP block is an MoE block */
    double mtp_proj;         /* the projection M: 2h x h */
    double mtp_norms;        /* enorm, hnorm, final norm: 3h */
    double params_mtp;       /* all modules: block + projection + norms (embedding and head shared) */
    double params_mtp_active;
    double fwd_mtp;          /* one module per token: block (full attention) + projection + its head GEMM */
    double flops_per_token;  /* fwd + bwd = 3 x fwd_total */
    double flops_per_token_6n; /* 6 x params_active: the seed's estimate */
} model_counts;

/* Fill `out` from `m`. Never fails for positive sizes; a dense model is `experts == 0` (then every
 * layer is dense whatever dense_layers says). */
void model_count(const model_cfg *m, model_counts *out);

/* Model FLOPs per token of the work actually done when a share `dropped_pair_fraction` of the
 * token-expert pairs is dropped by the capacity rule: a dropped pair skips its routed expert's forward
 * and backward, everything else is computed. MFU counts these (model.h's exact count otherwise). */
double model_flops_per_token_processed(const model_counts *mc, double dropped_pair_fraction);

/* The seq_len-independent part of a layer's forward FLOPs per token is 2 x params; this returns the
 * attention score+value FLOPs per token of one layer for sequence length s (causal = half). */
double model_attn_core_flops(const model_cfg *m, double seq_len);
/* The same for a block with sliding window w (w <= 0 or w >= seq_len: the full causal count). */
double model_attn_core_window_flops(const model_cfg *m, double seq_len, double window);
/* Bytes per token of the keys and values context parallelism exchanges (BF16), on one TP rank of
 * `tp`: MHA/GQA its share of the KV heads (at least one: heads fewer than TP ranks are replicated)
 * x (head_dim + v_head_dim); MLA the up-projected keys and values, heads / tp x (head_dim +
 * rope_head_dim + v_head_dim) (Megatron's MLA exchanges them, not the latent). */
double model_kv_exchange_bytes(const model_cfg *m, double tp);
/* Does block `layer` (0-based) use the sliding window? */
int model_layer_windowed(const model_cfg *m, int layer);
/* The kind of block `layer`: MoE as model_layer_is_moe says; windowed as model_layer_windowed says.
 * An MTP block (layer >= layers) has the kind of the last block, with full attention. */
layer_kind model_layer_kind(const model_cfg *m, int layer);

#endif
