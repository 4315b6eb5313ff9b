/* model.c — exact parameter and FLOP counts (conventions in model.h). */
#include "sim/plan/model.h"

#include <string.h>

static int kv_heads_of(const model_cfg *m) {
    if (m->attention == ATTN_MHA || m->kv_heads <= 0) return m->heads;
    return m->kv_heads;
}

static double v_dim_of(const model_cfg *m) {
    return m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
}

/* Per-head dimension of queries and keys: MLA adds the decoupled rope part to the "nope" part. */
static double qk_dim_of(const model_cfg *m) {
    return m->attention == ATTN_MLA ? (double)m->head_dim + m->rope_head_dim : (double)m->head_dim;
}

/* MLA in its training form (DeepSeek-V2 §2.1, DeepSeek-V3 config):
 *   q:  h -> q_lora (q_a_proj), RMSNorm(q_lora), q_lora -> heads*(nope+rope) (q_b_proj);
 *       without q compression (q_lora_rank 0): h -> heads*(nope+rope) directly.
 *   kv: h -> kv_lora + rope (kv_a_proj_with_mqa; the rope key is shared by all heads),
 *       RMSNorm(kv_lora), kv_lora -> heads*(nope + v) (kv_b_proj).
 *   o:  heads*v -> h. */
static void count_mla(const model_cfg *m, double *split, double *replicated, double *norms,
                      double *up) {
    double h = m->hidden, H = m->heads, qk = qk_dim_of(m), v = v_dim_of(m);
    double q_down = 0, q_norm = 0, q_up;
    if (m->q_lora_rank > 0) {
        q_down = h * m->q_lora_rank;
        q_norm = m->q_lora_rank;
        q_up = (double)m->q_lora_rank * H * qk;
    } else {
        q_up = h * H * qk;   /* a plain q projection: split across TP like any head-wise matrix */
    }
    double kv_down = h * ((double)m->kv_lora_rank + m->rope_head_dim);
    double kv_norm = m->kv_lora_rank;
    double kv_up = (double)m->kv_lora_rank * H * ((double)m->head_dim + v);
    double o = H * v * h;
    *split = q_up + kv_up + o;
    *replicated = q_down + q_norm + kv_down + kv_norm;
    *norms = q_norm + kv_norm;
    *up = (m->q_lora_rank > 0 ? q_up : 0.0) + kv_up;
}

/* MHA / GQA: q h -> heads*hd, k and v h -> kv_heads*hd, o heads*v -> h. */
static void count_gqa(const model_cfg *m, double *split, double *replicated) {
    double h = m->hidden, H = m->heads, KV = kv_heads_of(m), hd = m->head_dim, v = v_dim_of(m);
    *split = h * H * hd + h * KV * hd + h * KV * v + H * v * h;
    *replicated = 0;
}

static double ffn_params(const model_cfg *m, double inner) {
    return (m->ffn_act == FFN_SWIGLU ? 3.0 : 2.0) * (double)m->hidden * inner;
}

static double attn_core_keys(const model_cfg *m, double keys) {
    double H = m->heads;
    return 2.0 * keys * H * qk_dim_of(m) + 2.0 * keys * H * v_dim_of(m);
}

double model_attn_core_window_flops(const model_cfg *m, double seq_len, double window) {
    /* each query's keys are min(position, w): on average w - w^2/(2s) for w < s (model.h) */
    if (window <= 0 || window >= seq_len) return model_attn_core_flops(m, seq_len);
    return attn_core_keys(m, window - window * window / (2.0 * seq_len));
}

double model_kv_exchange_bytes(const model_cfg *m, double tp) {
    double v = v_dim_of(m);
    if (m->attention == ATTN_MLA) return m->heads / tp * ((double)m->head_dim + m->rope_head_dim + v) * 2.0;
    double kv = kv_heads_of(m) / tp;
    return (kv < 1 ? 1 : kv) * ((double)m->head_dim + v) * 2.0;
}

int model_layer_windowed(const model_cfg *m, int layer) {
    if (m->sliding_window <= 0) return 0;
    int k = m->global_attention_every;
    return k <= 0 || layer % k != k - 1;
}

layer_kind model_layer_kind(const model_cfg *m, int layer) {
    int k = model_layer_is_moe(m, layer) ? LAYER_MOE : LAYER_DENSE;
    if (layer >= m->layers) return (layer_kind)k;
    return (layer_kind)(model_layer_windowed(m, layer) ? k + LAYER_DENSE_WINDOW : k);
}

double model_attn_core_flops(const model_cfg *m, double seq_len) {
    /* per token: its query meets s/2 keys on average under the causal mask (convention, model.h) */
    return attn_core_keys(m, 0.5 * seq_len);
}

void model_count(const model_cfg *m, model_counts *out) {
    memset(out, 0, sizeof *out);
    double h = m->hidden;
    int moe = m->experts > 0;
    out->layers = m->layers;
    out->dense_layers = model_first_moe_layer(m);
    out->moe_layers = model_moe_layers(m);

    double attn_norms = 0;   /* MLA low-rank RMSNorms: parameters, but no matmul FLOPs */
    if (m->attention == ATTN_MLA) count_mla(m, &out->attn_split, &out->attn_replicated, &attn_norms,
                                            &out->attn_up_proj);
    else count_gqa(m, &out->attn_split, &out->attn_replicated);
    out->layer_norms = 2.0 * h;
    out->dense_ffn = ffn_params(m, m->ffn_hidden);
    if (moe) {
        out->expert = ffn_params(m, m->expert_hidden);
        out->shared = m->shared_experts * out->expert;
        out->router = h * m->experts;
    }
    out->embedding = (double)m->vocab * h;
    out->head = m->tie_embeddings ? 0.0 : (double)m->vocab * h;
    out->final_norm = h;

    /* ---- totals ---- */
    double L = m->layers, Ld = out->dense_layers, Lm = out->moe_layers;
    double attn = out->attn_split + out->attn_replicated;
    out->params_embedding = out->embedding;
    out->params_head = out->head;
    out->params_attention = L * attn;
    out->params_dense_ffn = Ld * out->dense_ffn;
    out->params_router = Lm * out->router;
    out->params_shared_experts = Lm * out->shared;
    out->params_routed_experts = Lm * m->experts * out->expert;
    out->params_norms = L * out->layer_norms + out->final_norm;
    double dense_part = out->params_embedding + out->params_head + out->params_attention +
                        out->params_dense_ffn + out->params_router + out->params_shared_experts +
                        out->params_norms;
    out->params_total = dense_part + out->params_routed_experts;
    out->params_active = dense_part + (moe ? Lm * m->top_k * out->expert : 0.0);

    /* ---- forward FLOPs per token ---- */
    out->fwd_attn_proj = 2.0 * (attn - attn_norms);
    out->fwd_attn_core = model_attn_core_flops(m, m->seq_len);
    out->fwd_dense_ffn = 2.0 * out->dense_ffn;
    out->fwd_shared = 2.0 * out->shared;
    out->fwd_routed = moe ? 2.0 * m->top_k * out->expert : 0.0;
    out->fwd_router = 2.0 * out->router;
    out->fwd_head = 2.0 * (double)m->vocab * h;
    double attn_layer = out->fwd_attn_proj + out->fwd_attn_core;
    out->fwd_dense_layer = attn_layer + out->fwd_dense_ffn;
    out->fwd_moe_layer = attn_layer + out->fwd_shared + out->fwd_routed + out->fwd_router;
    out->fwd_attn_core_window = model_attn_core_window_flops(m, m->seq_len, m->sliding_window);
    for (int l = 0; l < m->layers; l++) out->window_layers += model_layer_windowed(m, l);
    out->fwd_total = Ld * out->fwd_dense_layer + Lm * out->fwd_moe_layer + out->fwd_head -
                     out->window_layers * (out->fwd_attn_core - out->fwd_attn_core_window);

    /* ---- multi-token prediction (model.h): a block of the last block's kind, 2 norms on the
     * inputs, the projection M (2h -> h), a final norm; the embedding and head are shared ---- */
    out->mtp_layers = m->mtp_layers;
    out->mtp_moe = model_layer_is_moe(m, m->layers);   /* the last block's kind */
    out->mtp_proj = 2.0 * h * h;
    out->mtp_norms = 3.0 * h;
    double block = attn + out->layer_norms + (out->mtp_moe ? out->router + out->shared : out->dense_ffn);
    double mtp_own = out->mtp_proj + out->mtp_norms;
    out->params_mtp = m->mtp_layers * (block + mtp_own + (out->mtp_moe ? m->experts * out->expert : 0.0));
    out->params_mtp_active = m->mtp_layers * (block + mtp_own + (out->mtp_moe ? m->top_k * out->expert : 0.0));
    out->fwd_mtp = (out->mtp_moe ? out->fwd_moe_layer : out->fwd_dense_layer) + 2.0 * out->mtp_proj + out->fwd_head;
    out->fwd_total += m->mtp_layers * out->fwd_mtp;
    out->flops_per_token = 3.0 * out->fwd_total;
    out->flops_per_token_6n = 6.0 * out->params_active;
}

double model_flops_per_token_processed(const model_counts *mc, double dropped_pair_fraction) {
    double routed_blocks = mc->moe_layers + (mc->mtp_moe ? mc->mtp_layers : 0);
    return mc->flops_per_token - dropped_pair_fraction * 3.0 * mc->fwd_routed * routed_blocks;
}
