/* plan_compute.c — the per-kernel compute price table and the plan's per-layer sums over it (shapes,
 * sources and the kernel attribution in plan_compute.h). */
#include "sim/plan/plan_compute.h"

#include <string.h>

#include "sim/plan/recompute.h"

#define BF16_B 2.0

/* Shapes of one micro-batch on one GPU. */
typedef struct {
    const costmodel *cm;
    const model_cfg *m;
    dtype_kind dt;        /* GEMMs of layers and experts */
    double T;             /* tokens of the micro-batch on the rank (the M of head-split GEMMs): its CP share */
    double T_sp;          /* tokens per TP rank under sequence parallelism */
    double tp;
    double etp;           /* expert tensor parallelism */
    double T_route;       /* tokens the rank routes through the all-to-all (scn_routed_tokens) */
    int cp;               /* context parallelism: the attention core comes in cp chunks */
} shapes;

/* What each recompute part (recompute.h) re-runs of one block, in seconds; `sel` is DeepSeek-V3's
 * selective set summed in the order the parts are met (the legacy sum, kept bit for bit). */
typedef struct { double ln, mla_up, core, mlp, mlp_act, moe_act, moe, shared, shared_act, sel; } rc_parts;

/* Where a block's time goes in a table row: its forward, input-gradient and weight-gradient kernels
 * (the same kernel for b and w where the program does not split the backward). */
typedef struct { kernel_kind f, b, w; } roles;

static const roles R_ATTN = {K_ATTN_FWD, K_ATTN_BWD_INPUT, K_ATTN_BWD_WEIGHT};
static const roles R_DENSE = {K_DENSE_FFN_FWD, K_DENSE_FFN_BWD_INPUT, K_DENSE_FFN_BWD_WEIGHT};
static const roles R_SHARED = {K_SHARED_EXPERT_FWD, K_SHARED_EXPERT_BWD_INPUT, K_SHARED_EXPERT_BWD_WEIGHT};
static const roles R_ROUTER = {K_ROUTER_FWD, K_ROUTER_BWD, K_ROUTER_BWD};
static const roles R_PERMUTE = {K_PERMUTE_FWD, K_PERMUTE_BWD, K_PERMUTE_BWD};
static const roles R_UNPERMUTE = {K_UNPERMUTE_FWD, K_UNPERMUTE_BWD, K_UNPERMUTE_BWD};
static const roles R_EMBED = {K_EMBED_FWD, K_EMBED_BWD, K_EMBED_BWD};
static const roles R_HEAD = {K_HEAD_LOSS_FWD, K_HEAD_LOSS_BWD, K_HEAD_LOSS_BWD};
static const roles R_MTP = {K_MTP_PROJ_FWD, K_MTP_PROJ_BWD_INPUT, K_MTP_PROJ_BWD_WEIGHT};

/* C[M x N] = A[M x K] B[K x N]: forward, input gradient dA = dC B^T (M x K, inner N) and weight
 * gradient dB = A^T dC (K x N, inner M). Returns the forward seconds. */
static double gemm(const shapes *x, double *row, roles r, double M, double N, double K, dtype_kind dt) {
    double f = costmodel_gemm_s(x->cm, M, N, K, dt);
    row[r.f] += f;
    row[r.b] += costmodel_gemm_s(x->cm, M, K, N, dt);
    row[r.w] += costmodel_gemm_s(x->cm, K, N, M, dt);
    /* a quantized recipe casts the activation input (forward) and the output gradient (backward) */
    if (dtype_is_quantized(dt)) {
        row[r.f] += costmodel_cast_s(x->cm, M * K, dt);
        row[r.b] += costmodel_cast_s(x->cm, M * N, dt);
    }
    return f;
}

/* A memory-bound kernel moving fwd_bytes forward and bwd_bytes in its backward. */
static void mem(const shapes *x, double *row, roles r, double fwd_bytes, double bwd_bytes) {
    row[r.f] += costmodel_memory_bound_s(x->cm, fwd_bytes);
    row[r.b] += costmodel_memory_bound_s(x->cm, bwd_bytes);
}

/* Residual add + RMSNorm of one block: read the residual and the block output, write the new
 * residual, read it, write the normed copy: 5 h-vectors in BF16 per token; backward twice that. */
static double norm_pass_bytes(const shapes *x) { return x->T_sp * 5.0 * x->m->hidden * BF16_B; }
/* The RMSNorm alone (what selective recompute re-runs): read and write one h-vector. */
static double norm_only_bytes(const shapes *x) { return x->T_sp * 2.0 * x->m->hidden * BF16_B; }

/* The residual+RMSNorm pass in front of a block; the RMSNorm is what recomputing it re-runs. */
static void norm_pass(const shapes *x, double *row, roles r, rc_parts *pt) {
    mem(x, row, r, norm_pass_bytes(x), 2.0 * norm_pass_bytes(x));
    double n = costmodel_memory_bound_s(x->cm, norm_only_bytes(x));
    pt->ln += n;
    pt->sel += n;
}

/* Pointwise activation of an FFN with inner size f_rank (already divided by TP) over `rows` rows:
 * SwiGLU reads gate and up and writes the product (the costmodel's "swiglu" kernel, as
 * costmodel_expert_ffn_fwd_s prices it); backward reads the output gradient and both inputs and
 * writes both input gradients. GeLU: one input. */
static double act_fwd_s(const shapes *x, double rows, double f_rank) {
    if (x->m->ffn_act == FFN_SWIGLU) return costmodel_kernel_s(x->cm, "swiglu", rows * f_rank * 3.0 * BF16_B);
    return costmodel_memory_bound_s(x->cm, rows * f_rank * 2.0 * BF16_B);
}
static double act_bwd_s(const shapes *x, double rows, double f_rank) {
    if (x->m->ffn_act == FFN_SWIGLU) return costmodel_kernel_s(x->cm, "swiglu", rows * f_rank * 5.0 * BF16_B);
    return costmodel_memory_bound_s(x->cm, rows * f_rank * 3.0 * BF16_B);
}

/* A dense FFN (or the fused shared experts) of inner size f over the micro-batch; *act gets the
 * activation's forward time, *whole the FFN's whole forward (what recomputing either re-runs). */
static void ffn(const shapes *x, double *row, roles r, double f, rc_parts *pt, double *act, double *whole) {
    double h = x->m->hidden, fr = f / x->tp, mats = x->m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0;
    double before = row[r.f];
    gemm(x, row, r, x->T, mats * fr, h, x->dt);              /* gate+up (or fc1) */
    double a = act_fwd_s(x, x->T, fr);
    row[r.f] += a;
    row[r.b] += act_bwd_s(x, x->T, fr);
    gemm(x, row, r, x->T, h, fr, x->dt);                     /* down (or fc2) */
    *act += a;
    *whole += row[r.f] - before;
    pt->sel += a;
}

/* Attention block: norm pass, projections, core (sliding window when `window`), and what its
 * recompute parts re-run. */
static void attention(const shapes *x, double *row, rc_parts *pt, int window) {
    const model_cfg *m = x->m;
    double h = m->hidden, H = m->heads, tp = x->tp;
    double v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    norm_pass(x, row, R_ATTN, pt);
    if (m->attention == ATTN_MLA) {
        double qk = (double)m->head_dim + m->rope_head_dim;
        double ql = m->q_lora_rank, kl = m->kv_lora_rank, up_fwd = 0;
        if (ql > 0) {
            gemm(x, row, R_ATTN, x->T_sp, ql, h, x->dt);                       /* q_a (replicated) */
            up_fwd += gemm(x, row, R_ATTN, x->T, H * qk / tp, ql, x->dt);      /* q_b */
        } else {
            gemm(x, row, R_ATTN, x->T, H * qk / tp, h, x->dt);                 /* q */
        }
        gemm(x, row, R_ATTN, x->T_sp, kl + m->rope_head_dim, h, x->dt);        /* kv_a (replicated) */
        up_fwd += gemm(x, row, R_ATTN, x->T, H * ((double)m->head_dim + v) / tp, kl, x->dt);   /* kv_b */
        double lat_bytes = x->T_sp * (ql + kl) * 2.0 * BF16_B;                 /* latent RMSNorms */
        mem(x, row, R_ATTN, lat_bytes, 2.0 * lat_bytes);
        double lat_norm = costmodel_memory_bound_s(x->cm, lat_bytes);
        pt->mla_up += up_fwd;
        pt->ln += lat_norm;
        pt->sel += up_fwd + lat_norm;
    } else {
        double kv = (m->attention == ATTN_MHA || m->kv_heads <= 0) ? H : m->kv_heads;
        gemm(x, row, R_ATTN, x->T, (H * m->head_dim + kv * m->head_dim + kv * v) / tp, h, x->dt);
    }
    /* the core: this rank's queries (its CP share) of the micro-batch's sequences against the keys,
     * this TP rank's heads; under CP in cp chunks, the local one here and each received one in
     * K_ATTN_CORE_* (compute_attention_chunk) */
    cm_attn_shape local = compute_attention_chunk(x->m, x->T, x->tp, x->cp, window, 1);
    row[K_ATTN_FWD] += costmodel_attention_core_s(x->cm, &local, 0);
    row[K_ATTN_BWD_INPUT] += costmodel_attention_core_s(x->cm, &local, 1);
    pt->core += costmodel_attention_core_s(x->cm, &local, 0);   /* what core_attn recompute re-runs */
    if (x->cp > 1) {
        cm_attn_shape recv = compute_attention_chunk(x->m, x->T, x->tp, x->cp, window, 0);
        row[K_ATTN_CORE_FWD] += costmodel_attention_core_s(x->cm, &recv, 0);
        row[K_ATTN_CORE_BWD] += costmodel_attention_core_s(x->cm, &recv, 1);
        pt->core += (x->cp - 1) * costmodel_attention_core_s(x->cm, &recv, 0);
    }
    gemm(x, row, R_ATTN, x->T, h, H * v / tp, x->dt);                          /* o */
}

cm_attn_shape compute_attention_chunk(const model_cfg *m, double T, double tp, double cp, int window, int local) {
    double S = m->seq_len, q = S / cp;
    cm_attn_shape a = {.batch = T / q, .heads = m->heads / tp, .seq_q = q, .seq_k = q,
                       .d_qk = m->attention == ATTN_MLA ? (double)m->head_dim + m->rope_head_dim : m->head_dim,
                       .d_v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim, .causal = local};
    if (local && window && m->sliding_window < q) a.seq_k = m->sliding_window;   /* a band of the window */
    /* a received chunk of the load-balanced causal split: on average half of its keys are visible */
    if (!local) a.seq_k = q / 2.0;
    return a;
}

/* Routed experts of one MoE layer on one GPU at uniform routing: the rank receives T x top_k token
 * copies spread over its local experts. Input and weight gradients each run the forward's matrices. */
static void routed_experts(const shapes *x, const layout_cfg *lay, double *row, rc_parts *pt) {
    const model_cfg *m = x->m;
    int local = m->experts / lay->ep;
    if (local < 1) local = 1;
    double copies = x->T_route * m->top_k, f_rank = m->expert_hidden / x->etp;
    /* uniform routing: every local expert gets the same rows; ranks holding more than 1024 experts
     * (unrealistic) are priced in groups of 1024, one launch each */
    double tok[1024], e_s = 0;
    for (int e = 0; e < 1024; e++) tok[e] = copies / local;
    for (int done = 0; done < local; done += 1024) {
        int n = local - done < 1024 ? local - done : 1024;
        e_s += costmodel_expert_ffn_fwd_s(x->cm, tok, n, m->hidden, f_rank, x->dt);
    }
    row[K_EXPERT_FWD] += e_s;
    row[K_EXPERT_BWD_INPUT] += e_s;
    row[K_EXPERT_BWD_WEIGHT] += e_s;
    double a = costmodel_kernel_s(x->cm, "swiglu", copies * f_rank * 3.0 * BF16_B);
    pt->moe_act += a;
    pt->sel += a;
}

op_phase compute_kernel_phase(kernel_kind k) {
    switch (k) {
    case K_EMBED_FWD: case K_ATTN_FWD: case K_DENSE_FFN_FWD: case K_ROUTER_FWD: case K_PERMUTE_FWD:
    case K_EXPERT_FWD: case K_UNPERMUTE_FWD: case K_SHARED_EXPERT_FWD: case K_HEAD_LOSS_FWD:
    case K_MTP_PROJ_FWD: case K_ATTN_CORE_FWD:
        return PHASE_F;
    case K_EMBED_BWD: case K_ATTN_BWD_INPUT: case K_DENSE_FFN_BWD_INPUT: case K_ROUTER_BWD:
    case K_PERMUTE_BWD: case K_EXPERT_BWD_INPUT: case K_UNPERMUTE_BWD: case K_SHARED_EXPERT_BWD_INPUT:
    case K_HEAD_LOSS_BWD: case K_MTP_PROJ_BWD_INPUT: case K_ATTN_CORE_BWD:
        return PHASE_B;
    case K_ATTN_BWD_WEIGHT: case K_DENSE_FFN_BWD_WEIGHT: case K_EXPERT_BWD_WEIGHT:
    case K_SHARED_EXPERT_BWD_WEIGHT: case K_MTP_PROJ_BWD_WEIGHT:
        return PHASE_W;
    default:
        return PHASE_OPT;
    }
}

kernel_kind compute_recompute_kernel(layer_kind lk) {
    return layer_kind_is_moe(lk) ? K_UNPERMUTE_BWD : K_DENSE_FFN_BWD_INPUT;
}

static int is_layer_kernel(kernel_kind k) {
    return k != K_EMBED_FWD && k != K_EMBED_BWD && k != K_HEAD_LOSS_FWD && k != K_HEAD_LOSS_BWD &&
           k != K_MTP_PROJ_FWD && k != K_MTP_PROJ_BWD_INPUT && k != K_MTP_PROJ_BWD_WEIGHT;
}

/* The layer's forward (what full recompute re-runs): its forward kernels in the row. */
/* How many ops of kernel k a block runs: the received key/value chunks of context parallelism are
 * cp - 1 ops of K_ATTN_CORE_*, every other kernel one. */
static double kernel_ops(kernel_kind k, int cp) {
    return k == K_ATTN_CORE_FWD || k == K_ATTN_CORE_BWD ? cp - 1.0 : 1.0;
}

static double layer_fwd_s(const double *row, int cp) {
    double f = 0;
    for (int k = 0; k < K_NKINDS; k++)
        if (is_layer_kernel((kernel_kind)k) && compute_kernel_phase((kernel_kind)k) == PHASE_F)
            f += kernel_ops((kernel_kind)k, cp) * row[k];
    return f;
}

/* What recompute set `set` (recompute.h) re-runs of a block with row `row` and parts `pt`. */
static double recompute_s(unsigned set, const double *row, const rc_parts *pt, int cp) {
    if (set & RC_FULL) return layer_fwd_s(row, cp);
    if (set == RC_SELECTIVE) return pt->sel;
    double t = 0;
    if (set & RC_LAYERNORM) t += pt->ln;
    if (set & RC_MLA_UP) t += pt->mla_up;
    if (set & RC_CORE_ATTN) t += pt->core;
    if (set & RC_MLP) t += pt->mlp;
    else if (set & RC_MLP_ACT) t += pt->mlp_act;
    if (set & RC_MOE) t += pt->moe;
    else {
        if (set & RC_MOE_ACT) t += pt->moe_act;
        if (set & RC_SHARED) t += pt->shared;
        else if (set & RC_SHARED_ACT) t += pt->shared_act;
    }
    return t;
}

/* One layer row: attention, then norm pass + dense FFN, or norm pass + router, shared experts,
 * permute, experts, unpermute; *pt gets what each recompute part re-runs. */
static void layer_row(const shapes *x, const scenario *s, int moe, int window, double *row, rc_parts *pt) {
    const model_cfg *m = &s->model;
    double h = m->hidden;
    memset(pt, 0, sizeof *pt);
    attention(x, row, pt, window);
    if (!moe) {
        norm_pass(x, row, R_DENSE, pt);
        ffn(x, row, R_DENSE, m->ffn_hidden, pt, &pt->mlp_act, &pt->mlp);
        return;
    }
    norm_pass(x, row, R_ROUTER, pt);
    double gate_before = row[K_ROUTER_FWD];
    gemm(x, row, R_ROUTER, x->T_sp, m->experts, h, DT_BF16);                  /* gating in BF16 */
    if (m->shared_experts > 0)
        ffn(x, row, R_SHARED, (double)m->shared_experts * m->expert_hidden, pt, &pt->shared_act, &pt->shared);
    double pairs_h = x->T_route * m->top_k * h;                                /* as the program counts */
    mem(x, row, R_PERMUTE, 2.0 * pairs_h * dtype_bytes(s->precision.dispatch), 2.0 * pairs_h * BF16_B);
    routed_experts(x, &s->layout, row, pt);
    mem(x, row, R_UNPERMUTE, 2.0 * pairs_h * dtype_bytes(s->precision.combine), 2.0 * pairs_h * BF16_B);
    /* the whole MoE block from its input: gating, shared experts, permute, experts, unpermute */
    pt->moe = row[K_ROUTER_FWD] - gate_before + row[K_SHARED_EXPERT_FWD] + row[K_PERMUTE_FWD] +
              row[K_EXPERT_FWD] + row[K_UNPERMUTE_FWD];
}

void compute_price_table(const scenario *s, const model_counts *mc, const costmodel *cm, double T,
                         kernel_price_table *out) {
    memset(out, 0, sizeof *out);
    const model_cfg *m = &s->model;
    const layout_cfg *lay = &s->layout;
    shapes x = {.cm = cm, .m = m, .dt = s->precision.compute, .tp = lay->tp, .T = T, .T_sp = T / lay->tp,
                .etp = scn_etp(s), .T_route = T * scn_etp(s) / lay->tp, .cp = scn_cp(s)};
    double h = m->hidden;
    out->T = T;

    /* the rows of the kinds the model has; a missing kind is its nearest one (MoE -> dense,
     * windowed -> full), so that every row is defined */
    int has_moe = m->experts > 0 && mc->moe_layers > 0, has_window = mc->window_layers > 0;
    for (int k = 0; k < LAYER_NKINDS; k++) {
        int moe = layer_kind_is_moe((layer_kind)k) && has_moe;
        int window = layer_kind_is_window((layer_kind)k) && has_window;
        int same = (moe ? LAYER_MOE : LAYER_DENSE) + (window ? LAYER_DENSE_WINDOW : 0);
        if (same != k) {
            memcpy(out->s[k], out->s[same], sizeof out->s[k]);
            out->recompute_s[k] = out->recompute_s[same];
            continue;
        }
        rc_parts pt;
        layer_row(&x, s, moe, window, out->s[k], &pt);
        out->recompute_s[k] = recompute_s(recompute_set(lay), out->s[k], &pt, x.cp);
    }

    /* embedding gather (read the rows, write the activations) and its scatter-add backward; final
     * RMSNorm, head GEMM in BF16, cross-entropy: read BF16 logits and keep them in FP32 forward, read
     * them and write the BF16 logit gradient backward. Every row carries them. */
    double end[K_NKINDS] = {0};
    mem(&x, end, R_EMBED, 4.0 * x.T * h, 4.0 * x.T * h);
    mem(&x, end, R_HEAD, norm_only_bytes(&x), 2.0 * norm_only_bytes(&x));
    gemm(&x, end, R_HEAD, x.T, m->vocab / x.tp, h, DT_BF16);
    double logits = x.T * m->vocab / x.tp;
    mem(&x, end, R_HEAD, logits * (BF16_B + 4.0), logits * (4.0 + BF16_B));
    /* an MTP module before its block (model.h): the next tokens' embedding gather, the RMSNorms of
     * both inputs, the projection M (2h -> h, column-parallel) in the compute precision, and its
     * final RMSNorm; its loss is one more head pass on the loss stage */
    if (m->mtp_layers > 0) {
        mem(&x, end, R_MTP, 4.0 * x.T * h, 4.0 * x.T * h);
        mem(&x, end, R_MTP, 3.0 * norm_only_bytes(&x), 6.0 * norm_only_bytes(&x));
        gemm(&x, end, R_MTP, x.T, h / x.tp, 2.0 * h, x.dt);
    }
    for (int l = 0; l < LAYER_NKINDS; l++)
        for (int k = 0; k < K_NKINDS; k++)
            if (!is_layer_kernel((kernel_kind)k)) out->s[l][k] = end[k];
}

/* Pass times of a row: its layer kernels (layer_kernels = 1) or its embedding/head kernels (0). */
static pass_times sum_row(const double *row, int layer_kernels, double recompute, int cp) {
    pass_times t = {0};
    for (int k = 0; k < K_NKINDS; k++) {
        if (is_layer_kernel((kernel_kind)k) != layer_kernels) continue;
        double v = kernel_ops((kernel_kind)k, cp) * row[k];
        switch (compute_kernel_phase((kernel_kind)k)) {
        case PHASE_F: t.fwd_s += v; break;
        case PHASE_B: t.bwd_s += v; break;
        case PHASE_W: t.bwd_s += v; t.wgrad_s += v; break;
        default: break;
        }
    }
    t.recompute_s = recompute;
    return t;
}

void plan_price_layers(const scenario *s, const model_counts *mc, const costmodel *cm,
                       plan_layer_costs *out) {
    memset(out, 0, sizeof *out);
    kernel_price_table tab;
    compute_price_table(s, mc, cm, scn_rank_tokens(s), &tab);
    int cp = scn_cp(s);
    for (int k = 0; k < LAYER_NKINDS; k++) out->layer[k] = sum_row(tab.s[k], 1, tab.recompute_s[k], cp);
    /* embedding and head share one row; split them by kernel */
    double emb[K_NKINDS] = {0}, head[K_NKINDS] = {0}, mtp[K_NKINDS] = {0};
    emb[K_EMBED_FWD] = tab.s[LAYER_DENSE][K_EMBED_FWD];
    emb[K_EMBED_BWD] = tab.s[LAYER_DENSE][K_EMBED_BWD];
    head[K_HEAD_LOSS_FWD] = tab.s[LAYER_DENSE][K_HEAD_LOSS_FWD];
    head[K_HEAD_LOSS_BWD] = tab.s[LAYER_DENSE][K_HEAD_LOSS_BWD];
    for (int k = K_MTP_PROJ_FWD; k <= K_MTP_PROJ_BWD_WEIGHT; k++) mtp[k] = tab.s[LAYER_DENSE][k];
    out->embed = sum_row(emb, 0, 0, cp);
    out->head = sum_row(head, 0, 0, cp);
    out->mtp_proj = sum_row(mtp, 0, 0, cp);
}
