/* plan_compute.c — compute time of one layer through the cost model (shapes and sources in
 * plan_compute.h). */
#include "sim/plan_compute.h"

#include <string.h>

#define BF16_B 2.0

/* Shapes of one micro-batch on one GPU. */
typedef struct {
    const costmodel *cm;
    const model_cfg *m;
    dtype_kind dt;        /* GEMMs of layers and experts */
    double T;             /* tokens of the micro-batch (the M of head-split GEMMs) */
    double T_sp;          /* tokens per TP rank under sequence parallelism */
    double tp;
} shapes;

/* C[M x N] = A[M x K] B[K x N]: forward, input gradient dA = dC B^T (M x K, inner N) and weight
 * gradient dB = A^T dC (K x N, inner M). */
static void gemm(const shapes *x, double M, double N, double K, dtype_kind dt, pass_times *t) {
    double w = costmodel_gemm_s(x->cm, K, N, M, dt);
    t->fwd_s += costmodel_gemm_s(x->cm, M, N, K, dt);
    t->bwd_s += costmodel_gemm_s(x->cm, M, K, N, dt) + w;
    t->wgrad_s += w;
}

/* A memory-bound kernel moving fwd_bytes forward and bwd_bytes in its backward. */
static void mem(const shapes *x, double fwd_bytes, double bwd_bytes, pass_times *t) {
    t->fwd_s += costmodel_memory_bound_s(x->cm, fwd_bytes);
    t->bwd_s += costmodel_memory_bound_s(x->cm, bwd_bytes);
}

/* Residual add + RMSNorm of one block: read the residual and the block output, write the new
 * residual, read it, write the normed copy: 5 h-vectors in BF16 per token; backward twice that. */
static double norm_pass_bytes(const shapes *x) { return x->T_sp * 5.0 * x->m->hidden * BF16_B; }
/* The RMSNorm alone (what selective recompute re-runs): read and write one h-vector. */
static double norm_only_bytes(const shapes *x) { return x->T_sp * 2.0 * x->m->hidden * BF16_B; }

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

/* A dense FFN (or the fused shared experts) of inner size f over the micro-batch; *act_s gets the
 * activation's forward time (what selective recompute re-runs). */
static void ffn(const shapes *x, double f, pass_times *t, double *act_s) {
    double h = x->m->hidden, fr = f / x->tp, mats = x->m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0;
    gemm(x, x->T, mats * fr, h, x->dt, t);                 /* gate+up (or fc1) */
    double a = act_fwd_s(x, x->T, fr);
    t->fwd_s += a;
    t->bwd_s += act_bwd_s(x, x->T, fr);
    gemm(x, x->T, h, fr, x->dt, t);                        /* down (or fc2) */
    *act_s += a;
}

/* Attention block: norm pass, projections, core. *sel_s gets what selective recompute re-runs. */
static void attention(const shapes *x, pass_times *t, double *sel_s) {
    const model_cfg *m = x->m;
    double h = m->hidden, H = m->heads, tp = x->tp;
    double v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    mem(x, norm_pass_bytes(x), 2.0 * norm_pass_bytes(x), t);
    *sel_s += costmodel_memory_bound_s(x->cm, norm_only_bytes(x));
    if (m->attention == ATTN_MLA) {
        double qk = (double)m->head_dim + m->rope_head_dim;
        double ql = m->q_lora_rank, kl = m->kv_lora_rank;
        pass_times up = {0};
        if (ql > 0) {
            gemm(x, x->T_sp, ql, h, x->dt, t);                       /* q_a (replicated) */
            gemm(x, x->T, H * qk / tp, ql, x->dt, &up);              /* q_b */
        } else {
            gemm(x, x->T, H * qk / tp, h, x->dt, t);                 /* q */
        }
        gemm(x, x->T_sp, kl + m->rope_head_dim, h, x->dt, t);        /* kv_a (replicated) */
        gemm(x, x->T, H * ((double)m->head_dim + v) / tp, kl, x->dt, &up);   /* kv_b */
        t->fwd_s += up.fwd_s; t->bwd_s += up.bwd_s; t->wgrad_s += up.wgrad_s;
        double lat_bytes = x->T_sp * (ql + kl) * 2.0 * BF16_B;       /* latent RMSNorms */
        mem(x, lat_bytes, 2.0 * lat_bytes, t);
        *sel_s += up.fwd_s + costmodel_memory_bound_s(x->cm, lat_bytes);
    } else {
        double kv = (m->attention == ATTN_MHA || m->kv_heads <= 0) ? H : m->kv_heads;
        gemm(x, x->T, (H * m->head_dim + kv * m->head_dim + kv * v) / tp, h, x->dt, t);
    }
    double core = x->T * model_attn_core_flops(m, m->seq_len) / tp;
    t->fwd_s += costmodel_attention_s(x->cm, core, DT_BF16);
    t->bwd_s += costmodel_attention_s(x->cm, 2.0 * core, DT_BF16);
    gemm(x, x->T, h, H * v / tp, x->dt, t);                          /* o */
}

/* Routed experts of one MoE layer on one GPU at uniform routing: the rank receives T x top_k token
 * copies spread over its local experts. */
static void routed_experts(const shapes *x, const layout_cfg *lay, pass_times *t, double *sel_s) {
    const model_cfg *m = x->m;
    int local = m->experts / lay->ep;
    if (local < 1) local = 1;
    double copies = x->T * m->top_k, f_rank = m->expert_hidden / x->tp;
    /* uniform routing: every local expert gets the same rows; ranks holding more than 1024 experts
     * (unrealistic) are priced in groups of 1024, one launch each */
    double tok[1024], e_s = 0;
    for (int e = 0; e < 1024; e++) tok[e] = copies / local;
    for (int done = 0; done < local; done += 1024) {
        int n = local - done < 1024 ? local - done : 1024;
        e_s += costmodel_expert_ffn_fwd_s(x->cm, tok, n, m->hidden, f_rank, x->dt);
    }
    t->fwd_s += e_s;
    t->bwd_s += 2.0 * e_s;        /* input and weight gradients: the forward's matrices each */
    t->wgrad_s += e_s;
    *sel_s += costmodel_kernel_s(x->cm, "swiglu", copies * f_rank * 3.0 * BF16_B);
}

static void finish(pass_times *t, recompute_kind rc, double sel_s) {
    if (rc == RECOMPUTE_FULL) t->recompute_s = t->fwd_s;
    else if (rc == RECOMPUTE_SELECTIVE) t->recompute_s = sel_s;
    else t->recompute_s = 0;
}

void plan_price_layers(const scenario *s, const model_counts *mc, const costmodel *cm,
                       plan_layer_costs *out) {
    memset(out, 0, sizeof *out);
    const model_cfg *m = &s->model;
    const layout_cfg *lay = &s->layout;
    shapes x = {.cm = cm, .m = m, .dt = s->precision.compute, .tp = lay->tp};
    x.T = (double)lay->micro_batch * m->seq_len;
    x.T_sp = x.T / lay->tp;
    double h = m->hidden;
    recompute_kind rc = lay->recompute;

    /* dense layer: attention + norm pass + FFN */
    double sel = 0;
    pass_times *d = &out->dense_layer;
    attention(&x, d, &sel);
    mem(&x, norm_pass_bytes(&x), 2.0 * norm_pass_bytes(&x), d);
    sel += costmodel_memory_bound_s(cm, norm_only_bytes(&x));
    ffn(&x, m->ffn_hidden, d, &sel);
    finish(d, rc, sel);

    /* MoE layer: attention + norm pass + router + shared experts + permute, experts, unpermute */
    if (m->experts > 0 && mc->moe_layers > 0) {
        sel = 0;
        pass_times *e = &out->moe_layer;
        attention(&x, e, &sel);
        mem(&x, norm_pass_bytes(&x), 2.0 * norm_pass_bytes(&x), e);
        sel += costmodel_memory_bound_s(cm, norm_only_bytes(&x));
        gemm(&x, x.T_sp, m->experts, h, DT_BF16, e);                  /* router (gating in BF16) */
        if (m->shared_experts > 0) ffn(&x, (double)m->shared_experts * m->expert_hidden, e, &sel);
        double pairs_h = x.T * m->top_k * h;                          /* as the step program counts */
        mem(&x, 2.0 * pairs_h * dtype_bytes(s->precision.dispatch), 2.0 * pairs_h * BF16_B, e);   /* permute */
        routed_experts(&x, lay, e, &sel);
        mem(&x, 2.0 * pairs_h * dtype_bytes(s->precision.combine), 2.0 * pairs_h * BF16_B, e);    /* unpermute */
        finish(e, rc, sel);
    } else {
        out->moe_layer = out->dense_layer;
    }

    /* embedding gather (read the rows, write the activations) and its scatter-add backward */
    mem(&x, 4.0 * x.T * h, 4.0 * x.T * h, &out->embed);
    /* final RMSNorm, head GEMM in BF16, cross-entropy: read BF16 logits and keep them in FP32
     * forward; read them and write the BF16 logit gradient backward */
    pass_times *hd = &out->head;
    mem(&x, norm_only_bytes(&x), 2.0 * norm_only_bytes(&x), hd);
    gemm(&x, x.T, m->vocab / x.tp, h, DT_BF16, hd);
    double logits = x.T * m->vocab / x.tp;
    mem(&x, logits * (BF16_B + 4.0), logits * (4.0 + BF16_B), hd);
}
