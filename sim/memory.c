/* memory.c — per-GPU memory ledgers (model and assumptions in memory.h). */
#include "sim/memory.h"

#include <math.h>

#include "sim/pipeline_forms.h"

#define ACT_B 2.0      /* BF16 activations */
#define FP32_B 4.0

/* Activation bytes of the attention block per token, per recompute kind (index 0 none, 1 selective).
 * g = bytes of a stored GEMM input. */
static void attn_act(const model_cfg *m, double g, double out[2]) {
    double h = m->hidden, H = m->heads;
    double v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    double common = h * ACT_B            /* norm input (residual stream) */
                  + H * v * g            /* attention output = o_proj input */
                  + H * FP32_B;          /* flash-attention logsumexp per head */
    double norm_out = h * g;             /* q/kv projection input; selective recomputes it */
    if (m->attention == ATTN_MLA) {
        double qk = (double)m->head_dim + m->rope_head_dim;
        double ql = m->q_lora_rank, kl = m->kv_lora_rank;
        double latents = (ql + kl + m->rope_head_dim) * ACT_B;   /* q_a, kv_a outputs (norm inputs) */
        double latent_norm_out = (ql + kl) * g;                  /* q_b, kv_b inputs */
        double qkv = (2.0 * H * qk + H * v) * ACT_B;             /* flash-attention inputs */
        out[0] = common + norm_out + latents + latent_norm_out + qkv;
        /* selective: RMSNorm outputs and the q/kv up-projections are recomputed from the latents */
        out[1] = common + latents;
    } else {
        double kv = (m->attention == ATTN_MHA || m->kv_heads <= 0) ? H : m->kv_heads;
        double qkv = (H * m->head_dim + kv * m->head_dim + kv * v) * ACT_B;
        out[0] = common + norm_out + qkv;
        out[1] = common + qkv;
    }
}

/* One FFN of inner size f per token: SwiGLU keeps gate and up outputs (`in_b` bytes each) and the
 * activation output (the down projection's input, a GEMM input: g bytes); GeLU keeps fc1's output and
 * the activation output. Selective recompute drops the activation output. */
static void ffn_act(const model_cfg *m, double f, double in_b, double g, double out[2]) {
    double inputs = (m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0) * f * in_b;
    out[0] = inputs + f * g;
    out[1] = inputs;
}

void memory_activation_profile(const model_cfg *m, const precision_cfg *prec, act_profile *out) {
    double g = prec->compute == DT_FP8 ? 1.0 : ACT_B;
    double h = m->hidden;
    double attn[2], dense[2], expert[2];
    attn_act(m, g, attn);
    ffn_act(m, m->ffn_hidden, ACT_B, g, dense);
    double ffn_in[2] = {h * ACT_B + h * g, h * ACT_B};   /* FFN norm input + output */

    for (int r = 0; r < 2; r++) out->dense_layer[r] = attn[r] + ffn_in[r] + dense[r];

    if (m->experts > 0) {
        /* DeepSeek-V3 §3.3.2 caches the SwiGLU inputs of MoE experts in FP8 under FP8 training */
        ffn_act(m, m->expert_hidden, g, g, expert);
        double K = m->top_k;
        double router = m->experts * FP32_B;                       /* scores for the gate gradient */
        double disp_b = dtype_bytes(prec->dispatch) < g ? dtype_bytes(prec->dispatch) : g;
        for (int r = 0; r < 2; r++) {
            double routed = K * (h * disp_b        /* dispatched expert input */
                                 + expert[r]       /* gate, up, activation */
                                 + h * ACT_B);     /* expert output, kept for the gate gradient */
            double shared = m->shared_experts * expert[r];
            out->moe_layer[r] = attn[r] + ffn_in[r] + router + routed + shared;
        }
    } else {
        out->moe_layer[0] = out->dense_layer[0];
        out->moe_layer[1] = out->dense_layer[1];
    }
    /* full recompute: only the layer input survives the forward pass */
    out->dense_layer[RECOMPUTE_FULL] = out->moe_layer[RECOMPUTE_FULL] = h * ACT_B;
    out->head = (double)m->vocab * FP32_B;
}

void memory_stage_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                         int stage, stage_params *out) {
    double tp = lay->tp;
    int nd, nm;
    stage_layers(mc->layers, mc->dense_layers, lay->pp, stage, &nd, &nm);
    double attn = mc->attn_split / tp + mc->attn_replicated + mc->layer_norms;
    double ne = nd * (attn + mc->dense_ffn / tp) + nm * (attn + mc->shared / tp + mc->router);
    double ex = 0;
    if (m->experts > 0 && nm > 0)
        ex = nm * ceil((double)m->experts / lay->ep) * mc->expert / tp;
    if (stage == 0) ne += mc->embedding / tp;   /* vocabulary-parallel embedding */
    if (stage == lay->pp - 1) {
        ne += mc->final_norm;
        /* untied: the head; tied with pp > 1: the last stage keeps its own copy of the embedding */
        if (mc->head > 0) ne += mc->head / tp;
        else if (lay->pp > 1) ne += mc->embedding / tp;
    }
    out->nonexpert = ne;
    out->expert = ex;
}

/* Per-micro-batch activation bytes of one GPU of stage `stage` (before the in-flight multiplier),
 * the working set of the layer being recomputed (full recompute) and the last stage's logits. */
static void stage_act(const scenario *s, const model_counts *mc, const act_profile *ap, int stage,
                      double *per_mb, double *work, double *logits) {
    const layout_cfg *lay = &s->layout;
    int nd, nm, rc = lay->recompute;
    stage_layers(mc->layers, mc->dense_layers, lay->pp, stage, &nd, &nm);
    double tokens = (double)lay->micro_batch * s->model.seq_len / lay->tp;   /* sequence parallel */
    *per_mb = tokens * (nd * ap->dense_layer[rc] + nm * ap->moe_layer[rc]);
    *work = 0;
    if (rc == RECOMPUTE_FULL && nd + nm > 0) {
        double widest = nm > 0 ? ap->moe_layer[RECOMPUTE_NONE] : ap->dense_layer[RECOMPUTE_NONE];
        *work = tokens * widest;
    }
    *logits = stage == lay->pp - 1 ? tokens * ap->head : 0.0;
}

void memory_rank_ledgers(const scenario *s, const model_counts *mc, const act_profile *ap,
                         int micro_batches, int rank, mem_ledgers *out) {
    const layout_cfg *lay = &s->layout;
    int dual = lay->schedule == SCHED_DUALPIPE && lay->pp > 1;
    int other = lay->pp - 1 - rank;
    stage_params sp;
    memory_stage_params(mc, &s->model, lay, rank, &sp);
    double per_mb, work, logits;
    stage_act(s, mc, ap, rank, &per_mb, &work, &logits);
    double copies = 1.0;
    if (dual && other != rank) {
        stage_params sp2;
        double per_mb2, work2, logits2;
        memory_stage_params(mc, &s->model, lay, other, &sp2);
        stage_act(s, mc, ap, other, &per_mb2, &work2, &logits2);
        sp.nonexpert += sp2.nonexpert;
        sp.expert += sp2.expert;
        per_mb = 0.5 * (per_mb + per_mb2);   /* in-flight unit: one micro-batch through one stage */
        if (work2 > work) work = work2;   /* one layer is recomputed at a time */
        logits += logits2;
        copies = 2.0;                         /* each stage has twice the holders */
    }
    double g_ne = (double)scn_gpus(s) / ((double)lay->tp * lay->pp) * copies;   /* attention DP */
    double g_ex = (double)lay->dp * copies;                                      /* expert DP */
    double held = sp.nonexpert + sp.expert;
    double sharded = sp.nonexpert / g_ne + sp.expert / g_ex;

    double w_b = dtype_bytes(s->precision.compute);
    double grad_b = 2.0;
    double opt_b = dtype_bytes(s->precision.master) + 8.0;   /* master + Adam m, v in FP32 */

    out->params = w_b * (lay->zero >= 3 ? sharded : held);
    out->grads = grad_b * (lay->zero >= 2 ? sharded : held);
    out->optimizer = opt_b * (lay->zero >= 1 ? sharded : held);
    double inflight = inflight_microbatches(lay->schedule, lay->pp, micro_batches, lay->vpp, rank);
    out->activations = inflight * per_mb + work + logits;
    out->total = out->params + out->grads + out->optimizer + out->activations;
}

int memory_fits(const mem_ledgers *l, double mem_GiB, double reserve, const char **overflow) {
    double cap = mem_GiB * 1073741824.0 * (1.0 - reserve);
    *overflow = "";
    if (l->total <= cap) return 1;
    const char *name = "params";
    double big = l->params;
    if (l->grads > big) { big = l->grads; name = "grads"; }
    if (l->optimizer > big) { big = l->optimizer; name = "optimizer"; }
    if (l->activations > big) { name = "activations"; }
    *overflow = name;
    return 0;
}
