/* plan_compute.c — the per-kernel compute price table and the plan's per-layer sums over it (shapes,
 * sources and the kernel attribution in plan_compute.h). */
#include "sim/plan/plan_compute.h"

#include <string.h>

#include "sim/plan/recompute.h"

#define BF16_B 2.0

/* Shapes of one micro-batch on one GPU. */
typedef struct {
    const costmodel *cm;
    double n_mb;          /* micro-batches per step: a once-per-step cost is 1 / n_mb of it per micro-batch */
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

/* A table row being priced: the kernels' seconds and, beside them, the quantization part of those
 * seconds (kernel_price_table.quant_s); the recompute parts alike. */
typedef struct {
    double *s, *q;
    rc_parts *pt, *ptq;
    double w_step;        /* the weights' per-step quantization shares in the forward kernels (all of it
                             quantization): not part of a recomputed forward */
    double w_moe;         /* of which the routed experts' (on K_ROUTER_FWD) */
} row_acc;

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
 * gradient dB = A^T dC (K x N, inner M), and a quantized recipe's passes (recipes.h): the input as
 * quantized (in_rows x K: a column-parallel GEMM under sequence parallelism quantizes its rank's
 * T / tp rows before the all-gather, Megatron/TE's FP8 all-gather) in the forward, the output
 * gradient (grad_rows x N: a row-parallel GEMM's gradient is all-gathered from T / tp rows) before
 * the input gradient, the weight once per step (1 / n_mb of it per micro-batch, with the forward) and
 * per use (forward and input gradient). Returns the forward seconds without the weight's per-step
 * share (what re-running the forward costs); its quantization part in *fwd_q. */
static double gemm_q(const shapes *x, row_acc *a, roles r, double M, double N, double K, dtype_kind dt,
                     double in_rows, double grad_rows, double *fwd_q) {
    double f = costmodel_gemm_s(x->cm, M, N, K, dt);
    double q_in = costmodel_quant_s(x->cm, dt, QR_INPUT, in_rows * K, 1);
    double q_use = costmodel_quant_s(x->cm, dt, QR_WEIGHT_USE, K * N, 1);
    double q_w = costmodel_quant_s(x->cm, dt, QR_WEIGHT, K * N, 1) / x->n_mb;
    double q_grad = costmodel_quant_s(x->cm, dt, QR_GRAD, grad_rows * N, 1);
    a->s[r.f] += f + q_in + q_use + q_w;
    a->q[r.f] += q_in + q_use + q_w;
    a->w_step += q_w;
    a->s[r.b] += costmodel_gemm_s(x->cm, M, K, N, dt) + q_grad + q_use;
    a->q[r.b] += q_grad + q_use;
    a->s[r.w] += costmodel_gemm_s(x->cm, K, N, M, dt);
    if (fwd_q) *fwd_q = q_in + q_use;
    return f + q_in + q_use;
}

/* A GEMM whose input and output gradient are quantized on all M rows (no all-gather). */
static double gemm(const shapes *x, row_acc *a, roles r, double M, double N, double K, dtype_kind dt) {
    return gemm_q(x, a, r, M, N, K, dt, M, M, NULL);
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
static void norm_pass(const shapes *x, row_acc *a, roles r) {
    mem(x, a->s, r, norm_pass_bytes(x), 2.0 * norm_pass_bytes(x));
    double n = costmodel_memory_bound_s(x->cm, norm_only_bytes(x));
    a->pt->ln += n;
    a->pt->sel += n;
}

/* Pointwise activation of an FFN with inner size f_rank (already divided by TP) over `rows` rows:
 * SwiGLU reads gate and up and writes the product (the costmodel's "swiglu" kernel, as
 * costmodel_expert_ffn_part_s prices it); backward reads the output gradient and both inputs and
 * writes both input gradients. GeLU: one input. */
static double act_fwd_s(const shapes *x, double rows, double f_rank) {
    if (x->m->ffn_act == FFN_SWIGLU) return costmodel_kernel_s(x->cm, "swiglu", rows * f_rank * 3.0 * BF16_B);
    return costmodel_memory_bound_s(x->cm, rows * f_rank * 2.0 * BF16_B);
}
static double act_bwd_s(const shapes *x, double rows, double f_rank) {
    if (x->m->ffn_act == FFN_SWIGLU) return costmodel_kernel_s(x->cm, "swiglu", rows * f_rank * 5.0 * BF16_B);
    return costmodel_memory_bound_s(x->cm, rows * f_rank * 3.0 * BF16_B);
}

/* A dense FFN (or the fused shared experts) of inner size f over the micro-batch: gate+up (fc1)
 * column-parallel, down (fc2) row-parallel; *act / *act_q get the activation's forward time (no
 * quantization), *whole / *whole_q the FFN's whole forward and its quantization part (what
 * recomputing either re-runs). */
static void ffn(const shapes *x, row_acc *a, roles r, double f, double *act, double *whole, double *whole_q) {
    double h = x->m->hidden, fr = f / x->tp, mats = x->m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0, q1, q2;
    double before = a->s[r.f], w_before = a->w_step;
    gemm_q(x, a, r, x->T, mats * fr, h, x->dt, x->T_sp, x->T, &q1);   /* gate+up (or fc1) */
    double act_s = act_fwd_s(x, x->T, fr);
    a->s[r.f] += act_s;
    a->s[r.b] += act_bwd_s(x, x->T, fr);
    gemm_q(x, a, r, x->T, h, fr, x->dt, x->T, x->T_sp, &q2);          /* down (or fc2) */
    *act += act_s;
    *whole += a->s[r.f] - before - (a->w_step - w_before);
    *whole_q += q1 + q2;
    a->pt->sel += act_s;
}

/* Attention block: norm pass, projections, core (sliding window when `window`), and what its
 * recompute parts re-run. Column-parallel projections (q, q_b, kv_b, qkv) take their input from the
 * sequence-parallel all-gather, the replicated down-projections (q_a, kv_a) run on the rank's T / tp
 * tokens, the output projection is row-parallel. */
static void attention(const shapes *x, row_acc *a, int window) {
    const model_cfg *m = x->m;
    double h = m->hidden, H = m->heads, tp = x->tp;
    double v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    double *row = a->s;
    norm_pass(x, a, R_ATTN);
    if (m->attention == ATTN_MLA) {
        double qk = (double)m->head_dim + m->rope_head_dim;
        double ql = m->q_lora_rank, kl = m->kv_lora_rank, up_fwd = 0, up_q = 0, q;
        if (ql > 0) {
            gemm(x, a, R_ATTN, x->T_sp, ql, h, x->dt);                                           /* q_a (replicated) */
            up_fwd += gemm_q(x, a, R_ATTN, x->T, H * qk / tp, ql, x->dt, x->T_sp, x->T, &q);     /* q_b */
            up_q += q;
        } else {
            gemm_q(x, a, R_ATTN, x->T, H * qk / tp, h, x->dt, x->T_sp, x->T, NULL);             /* q */
        }
        gemm(x, a, R_ATTN, x->T_sp, kl + m->rope_head_dim, h, x->dt);                            /* kv_a (replicated) */
        up_fwd += gemm_q(x, a, R_ATTN, x->T, H * ((double)m->head_dim + v) / tp, kl, x->dt, x->T_sp, x->T, &q);  /* kv_b */
        up_q += q;
        double lat_bytes = x->T_sp * (ql + kl) * 2.0 * BF16_B;                                   /* latent RMSNorms */
        mem(x, row, R_ATTN, lat_bytes, 2.0 * lat_bytes);
        double lat_norm = costmodel_memory_bound_s(x->cm, lat_bytes);
        a->pt->mla_up += up_fwd;
        a->ptq->mla_up += up_q;
        a->pt->ln += lat_norm;
        a->pt->sel += up_fwd + lat_norm;
        a->ptq->sel += up_q;
    } else {
        double kv = (m->attention == ATTN_MHA || m->kv_heads <= 0) ? H : m->kv_heads;
        gemm_q(x, a, R_ATTN, x->T, (H * m->head_dim + kv * m->head_dim + kv * v) / tp, h, x->dt, x->T_sp, x->T, NULL);
    }
    /* the core: this rank's queries (its CP share) of the micro-batch's sequences against the keys,
     * this TP rank's heads; under CP in cp chunks, the local one here and each received one in
     * K_ATTN_CORE_* (compute_attention_chunk) */
    cm_attn_shape local = compute_attention_chunk(x->m, x->T, x->tp, x->cp, window, 1);
    row[K_ATTN_FWD] += costmodel_attention_core_s(x->cm, &local, 0);
    row[K_ATTN_BWD_INPUT] += costmodel_attention_core_s(x->cm, &local, 1);
    a->pt->core += costmodel_attention_core_s(x->cm, &local, 0);   /* what core_attn recompute re-runs */
    if (x->cp > 1) {
        cm_attn_shape recv = compute_attention_chunk(x->m, x->T, x->tp, x->cp, window, 0);
        row[K_ATTN_CORE_FWD] += costmodel_attention_core_s(x->cm, &recv, 0);
        row[K_ATTN_CORE_BWD] += costmodel_attention_core_s(x->cm, &recv, 1);
        a->pt->core += (x->cp - 1) * costmodel_attention_core_s(x->cm, &recv, 0);
    }
    gemm_q(x, a, R_ATTN, x->T, h, H * v / tp, x->dt, x->T, x->T_sp, NULL);                      /* o */
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
 * copies spread over its local experts. Each of the three program kernels is priced as the step
 * executor prices it (step_price_costmodel: costmodel_expert_ffn_fwd_s for all three), so that plan
 * and step agree; costmodel_expert_ffn_part_s has each kernel's own quantization (the backward
 * kernels quantize the output gradients, the weight gradients nothing), which both levels take by
 * switching EXPERT_PRICED_AS below and the executor's call together. Their weights' quantization, once
 * per step, goes to K_ROUTER_FWD (1 / n_mb of it per micro-batch): the table kernel just before the
 * experts, since the step prices the experts per routing draw. */
static const expert_part EXPERT_PRICED_AS[3] = {EXPERT_FWD, EXPERT_FWD, EXPERT_FWD};
static void routed_experts(const shapes *x, const layout_cfg *lay, row_acc *a) {
    const model_cfg *m = x->m;
    int local = m->experts / lay->ep;
    if (local < 1) local = 1;
    double copies = x->T_route * m->top_k, f_rank = m->expert_hidden / x->etp;
    /* uniform routing: every local expert gets the same rows; ranks holding more than 1024 experts
     * (unrealistic) are priced in groups of 1024, one launch each */
    static const kernel_kind parts[3] = {K_EXPERT_FWD, K_EXPERT_BWD_INPUT, K_EXPERT_BWD_WEIGHT};
    double tok[1024];
    for (int e = 0; e < 1024; e++) tok[e] = copies / local;
    for (int done = 0; done < local; done += 1024) {
        int n = local - done < 1024 ? local - done : 1024;
        for (int p = 0; p < 3; p++) {
            double q;
            a->s[parts[p]] += costmodel_expert_ffn_part_s(x->cm, tok, n, m->hidden, f_rank, x->dt, EXPERT_PRICED_AS[p], &q);
            a->q[parts[p]] += q;
        }
    }
    double qw = costmodel_quant_s(x->cm, x->dt, QR_WEIGHT, local * 3.0 * m->hidden * f_rank, local) / x->n_mb;
    a->s[K_ROUTER_FWD] += qw;
    a->q[K_ROUTER_FWD] += qw;
    a->w_step += qw;
    a->w_moe += qw;
    double act = costmodel_kernel_s(x->cm, "swiglu", copies * f_rank * 3.0 * BF16_B);
    a->pt->moe_act += act;
    a->pt->sel += act;
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

/* What recompute set `set` (recompute.h) re-runs of a block with row `row` and parts `pt`; `w_step`:
 * the row's per-step weight shares, which a recomputed forward does not repeat. Called once on the
 * seconds and once on their quantization parts. */
static double recompute_s(unsigned set, const double *row, const rc_parts *pt, double w_step, int cp) {
    if (set & RC_FULL) return layer_fwd_s(row, cp) - w_step;
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
 * permute, experts, unpermute; a->pt / a->ptq get what each recompute part re-runs and its
 * quantization part. */
static void layer_row(const shapes *x, const scenario *s, int moe, int window, row_acc *a) {
    const model_cfg *m = &s->model;
    double h = m->hidden, *row = a->s, *q = a->q;
    memset(a->pt, 0, sizeof *a->pt);
    memset(a->ptq, 0, sizeof *a->ptq);
    attention(x, a, window);
    if (!moe) {
        norm_pass(x, a, R_DENSE);
        ffn(x, a, R_DENSE, m->ffn_hidden, &a->pt->mlp_act, &a->pt->mlp, &a->ptq->mlp);
        return;
    }
    norm_pass(x, a, R_ROUTER);
    double gate_before = row[K_ROUTER_FWD], gate_before_q = q[K_ROUTER_FWD];
    gemm(x, a, R_ROUTER, x->T_sp, m->experts, h, DT_BF16);                    /* gating in BF16 */
    double w_before = a->w_step;
    if (m->shared_experts > 0)
        ffn(x, a, R_SHARED, (double)m->shared_experts * m->expert_hidden, &a->pt->shared_act, &a->pt->shared,
            &a->ptq->shared);
    double w_shared = a->w_step - w_before;
    double pairs_h = x->T_route * m->top_k * h;                                /* as the program counts */
    mem(x, row, R_PERMUTE, 2.0 * pairs_h * dtype_bytes(s->precision.dispatch), 2.0 * pairs_h * BF16_B);
    routed_experts(x, &s->layout, a);
    mem(x, row, R_UNPERMUTE, 2.0 * pairs_h * dtype_bytes(s->precision.combine), 2.0 * pairs_h * BF16_B);
    /* the whole MoE block from its input: gating, shared experts, permute, experts, unpermute (the
     * shared experts' recompute part without their per-step weight share, as ffn() gives it) */
    a->pt->moe = row[K_ROUTER_FWD] - gate_before - a->w_moe + row[K_SHARED_EXPERT_FWD] - w_shared +
                 row[K_PERMUTE_FWD] + row[K_EXPERT_FWD] + row[K_UNPERMUTE_FWD];
    a->ptq->moe = q[K_ROUTER_FWD] - gate_before_q - a->w_moe + a->ptq->shared + q[K_EXPERT_FWD];
}

void compute_price_table(const scenario *s, const model_counts *mc, const costmodel *cm, double T,
                         kernel_price_table *out) {
    memset(out, 0, sizeof *out);
    const model_cfg *m = &s->model;
    const layout_cfg *lay = &s->layout;
    int n_mb = scn_micro_batches(s);
    shapes x = {.cm = cm, .n_mb = n_mb > 0 ? n_mb : 1, .m = m, .dt = s->precision.compute, .tp = lay->tp, .T = T,
                .T_sp = T / lay->tp, .etp = scn_etp(s), .T_route = T * scn_etp(s) / lay->tp, .cp = scn_cp(s)};
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
            memcpy(out->quant_s[k], out->quant_s[same], sizeof out->quant_s[k]);
            out->recompute_s[k] = out->recompute_s[same];
            out->recompute_quant_s[k] = out->recompute_quant_s[same];
            continue;
        }
        rc_parts pt, ptq;
        row_acc a = {.s = out->s[k], .q = out->quant_s[k], .pt = &pt, .ptq = &ptq};
        layer_row(&x, s, moe, window, &a);
        out->recompute_s[k] = recompute_s(recompute_set(lay), out->s[k], &pt, a.w_step, x.cp);
        out->recompute_quant_s[k] = recompute_s(recompute_set(lay), out->quant_s[k], &ptq, a.w_step, x.cp);
    }

    /* embedding gather (read the rows, write the activations) and its scatter-add backward; final
     * RMSNorm, head GEMM in BF16, cross-entropy: read BF16 logits and keep them in FP32 forward, read
     * them and write the BF16 logit gradient backward. Every row carries them. */
    double end[K_NKINDS] = {0}, end_q[K_NKINDS] = {0};
    rc_parts unused, unused_q;
    row_acc e = {.s = end, .q = end_q, .pt = &unused, .ptq = &unused_q};
    mem(&x, end, R_EMBED, 4.0 * x.T * h, 4.0 * x.T * h);
    mem(&x, end, R_HEAD, norm_only_bytes(&x), 2.0 * norm_only_bytes(&x));
    gemm(&x, &e, R_HEAD, x.T, m->vocab / x.tp, h, DT_BF16);
    double logits = x.T * m->vocab / x.tp;
    mem(&x, end, R_HEAD, logits * (BF16_B + 4.0), logits * (4.0 + BF16_B));
    /* an MTP module before its block (model.h): the next tokens' embedding gather, the RMSNorms of
     * both inputs, the projection M (2h -> h, column-parallel) in the compute precision, and its
     * final RMSNorm; its loss is one more head pass on the loss stage */
    if (m->mtp_layers > 0) {
        mem(&x, end, R_MTP, 4.0 * x.T * h, 4.0 * x.T * h);
        mem(&x, end, R_MTP, 3.0 * norm_only_bytes(&x), 6.0 * norm_only_bytes(&x));
        gemm_q(&x, &e, R_MTP, x.T, h / x.tp, 2.0 * h, x.dt, x.T_sp, x.T, NULL);
    }
    for (int l = 0; l < LAYER_NKINDS; l++)
        for (int k = 0; k < K_NKINDS; k++)
            if (!is_layer_kernel((kernel_kind)k)) out->s[l][k] = end[k], out->quant_s[l][k] = end_q[k];
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
