/* memory.c — per-GPU memory ledgers (model, assumptions and sources in memory.h). */
#include "sim/plan/memory.h"
#include "sim/scenario/schedule_rules.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/alloc.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/plan/recipes.h"
#include "sim/plan/recompute.h"

#define FP32_B 4.0

/* Byte widths of cached activations under one precision config (memory.h). */
typedef struct {
    double act;    /* plain activations: residual stream, latents, q/k/v, logits inputs */
    double lin;    /* a cached Linear (GEMM) input */
    double moe_sw; /* the inputs of an MoE expert's activation function (gate and up outputs) */
    double attn_o; /* attention output = input of the Linear after attention */
    double disp;   /* the dispatched expert input, as cached on the expert's rank */
} act_widths;

static act_widths widths_of(const precision_cfg *prec) {
    act_widths w;
    const quant_recipe *q = quant_recipe_of(prec->compute);
    w.act = prec->compute == DT_FP32 ? FP32_B : 2.0;
    w.lin = q ? q->cached_B : w.act;
    w.moe_sw = w.lin;                       /* §3.3.2 (2): SwiGLU inputs in MoE cached in FP8 */
    w.attn_o = w.act;                       /* §3.3.2 (1): E5M6, counted in a 16-bit container */
    /* an FP8 dispatch carries DeepSeek-V3's 1x128 tiles with their FP32 scales (§3.3.2, Fig. 7a) */
    double d = prec->dispatch == DT_FP8 ? quant_recipe_of(DT_FP8)->cached_B : dtype_bytes(prec->dispatch);
    w.disp = d < w.lin ? d : w.lin;         /* the received copy, or its FP8 quantization */
    return w;
}

/* Attention block per token under recompute set `set` (recompute.h). Every term a part drops is
 * written in place as 0, so that the sums keep one order whatever the set. */
static double attn_act(const model_cfg *m, const act_widths *w, unsigned set) {
    double h = m->hidden, H = m->heads;
    double v = m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
    int ln = set & RC_LAYERNORM, core = set & RC_CORE_ATTN;
    double keep = h * w->act                          /* block input: residual stream = RMSNorm input */
                + (core ? 0.0 : H * v * w->attn_o)    /* attention output: o_proj input, flash backward's O */
                + (core ? 0.0 : H * FP32_B);          /* flash-attention logsumexp per head */
    double norm_out = ln ? 0.0 : h * w->lin;          /* q/kv (down) projection input */
    if (m->attention == ATTN_MLA) {
        double qk = (double)m->head_dim + m->rope_head_dim;
        double ql = m->q_lora_rank, kl = m->kv_lora_rank;
        double latents = (ql + kl + m->rope_head_dim) * w->act;  /* q_a, kv_a outputs: inputs of the
                                                                   latent RMSNorms and rope */
        double latent_norm_out = ln ? 0.0 : (ql + kl) * w->lin;  /* q_b, kv_b (up-projection) inputs */
        double qkv = (set & RC_MLA_UP) ? 0.0 : (2.0 * H * qk + H * v) * w->act;   /* flash-attention inputs */
        return keep + norm_out + latents + latent_norm_out + qkv;
    }
    double kv = (m->attention == ATTN_MHA || m->kv_heads <= 0) ? H : m->kv_heads;
    double qkv = (H * m->head_dim + kv * m->head_dim + kv * v) * w->act;
    return keep + norm_out + qkv;
}

/* One FFN of inner size f per token: the activation's inputs (SwiGLU: gate and up; GeLU: fc1's
 * output) at `in_b` bytes, and its output (the down projection's input, a Linear input). `whole`:
 * the FFN is recomputed from its input (nothing kept); `act`: only the activation output is. */
static double ffn_act(const model_cfg *m, double f, double in_b, double lin_b, int whole, int act) {
    double inputs = whole ? 0.0 : (m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0) * f * in_b;
    return inputs + (whole || act ? 0.0 : f * lin_b);
}

/* A block's cached activations per token under recompute set `set`. */
static double block_act(const model_cfg *m, const act_widths *w, unsigned set, int moe) {
    double h = m->hidden;
    if (set & RC_FULL) return h * w->act;             /* only the layer input survives the forward */
    double attn = attn_act(m, w, set);
    /* FFN block input (residual stream = RMSNorm input) and the norm output */
    double ffn_in = h * w->act + ((set & RC_LAYERNORM) ? 0.0 : h * w->lin);
    if (!moe || m->experts == 0)
        return attn + ffn_in + ffn_act(m, m->ffn_hidden, w->act, w->lin, set & RC_MLP, set & RC_MLP_ACT);
    if (set & RC_MOE) return attn + ffn_in;           /* the MoE block re-runs from its input */
    double expert = ffn_act(m, m->expert_hidden, w->moe_sw, w->lin, 0, set & RC_MOE_ACT);
    double K = m->top_k;
    double router = m->experts * FP32_B;           /* scores, for the gate and balance-loss grads */
    /* per token copy on the expert's rank: dispatched input, activation inputs (and output), the FP32
     * routing weight applied inside the activation; no expert output (memory.h) */
    double copy = h * w->disp + expert + FP32_B;
    double shared = m->shared_experts *
                    ffn_act(m, m->expert_hidden, w->moe_sw, w->lin, set & RC_SHARED, set & RC_SHARED_ACT);
    return attn + ffn_in + router + shared + K * copy;
}

double memory_block_activation(const model_cfg *m, const precision_cfg *prec, unsigned set, int moe) {
    act_widths w = widths_of(prec);
    return block_act(m, &w, set, moe);
}

void memory_activation_profile(const model_cfg *m, const precision_cfg *prec, act_profile *out) {
    act_widths w = widths_of(prec);
    double h = m->hidden;
    for (int r = 0; r < 3; r++) {
        unsigned set = recompute_kind_set((recompute_kind)r);
        out->dense_layer[r] = block_act(m, &w, set, 0);
        out->moe_layer[r] = block_act(m, &w, set, 1);
    }
    out->head = (double)m->vocab * FP32_B;
    /* an MTP module's own inputs: the two RMSNorm inputs (the previous depth's hidden state and the
     * next token's embedding) and the projection's cached input, 2h each */
    out->mtp_proj = 2.0 * h * w.act + 2.0 * h * w.lin;
}

void memory_state_bytes(const precision_cfg *prec, mem_state_bytes *out) {
    const quant_recipe *q = quant_recipe_of(prec->compute);
    out->weight = q ? q->weight_B : dtype_bytes(prec->compute);
    out->grad = 2.0;                                       /* BF16 gradients: seed 000 §1.3 */
    out->master = dtype_bytes(prec->master);
    out->moments = 2.0 * (prec->master == DT_FP32 ? FP32_B : 2.0);   /* Adam m and v */
}

void memory_block_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay, int moe,
                         stage_params *out) {
    double tp = lay->tp, etp = lay->etp > 0 ? lay->etp : lay->tp;
    out->nonexpert = mc->attn_split / tp + mc->attn_replicated + mc->layer_norms +
                     (moe ? mc->shared / tp + mc->router : mc->dense_ffn / tp);
    out->expert = moe && m->experts > 0 ? ceil((double)m->experts / lay->ep) * mc->expert / etp : 0;
}

void memory_mtp_module_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                              stage_params *out) {
    memory_block_params(mc, m, lay, mc->mtp_moe, out);
    out->nonexpert += mc->mtp_proj / lay->tp + mc->mtp_norms;
}

double memory_stage_extra_params(const model_counts *mc, const layout_cfg *lay, int embed, int loss, int mtp) {
    double tp = lay->tp, ne = 0;
    /* a stage with MTP modules but not the embedding keeps its own copy for the next tokens */
    if (embed || mtp > 0) ne += mc->embedding / tp;   /* vocabulary-parallel embedding */
    if (loss) {
        ne += mc->final_norm;
        /* untied: the head; tied with pp > 1: the last stage keeps its own copy of the embedding */
        if (mc->head > 0) ne += mc->head / tp;
        else if (lay->pp > 1) ne += mc->embedding / tp;
    }
    return ne;
}

void memory_stage_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                         const stage_census *cz, stage_params *out) {
    stage_params d, e, t;
    memory_block_params(mc, m, lay, 0, &d);
    memory_block_params(mc, m, lay, 1, &e);
    memory_mtp_module_params(mc, m, lay, &t);
    out->nonexpert = cz->n_dense * d.nonexpert + cz->n_moe * e.nonexpert + cz->mtp * t.nonexpert +
                     memory_stage_extra_params(mc, lay, cz->embed, cz->loss, cz->mtp);
    out->expert = cz->n_moe * e.expert + cz->mtp * t.expert;
}

double memory_zero_unit_params(const model_counts *mc, const model_cfg *m, const layout_cfg *lay,
                               const stage_census *cz) {
    stage_params d, e, t;
    memory_block_params(mc, m, lay, 0, &d);
    memory_block_params(mc, m, lay, 1, &e);
    memory_mtp_module_params(mc, m, lay, &t);
    double big = memory_stage_extra_params(mc, lay, cz->embed, cz->loss, cz->mtp);
    if (cz->n_dense > 0 && d.nonexpert + d.expert > big) big = d.nonexpert + d.expert;
    if (cz->n_moe > 0 && e.nonexpert + e.expert > big) big = e.nonexpert + e.expert;
    if (cz->mtp > 0 && t.nonexpert + t.expert > big) big = t.nonexpert + t.expert;
    return big;
}

/* Per-micro-batch activation bytes of one GPU of pipeline position `cz` (before the in-flight
 * multiplier), the working set of the layer being recomputed (full recompute) and the loss stage's
 * logits (one set per loss: the main one and each MTP module's). */
static void stage_act(const scenario *s, const model_counts *mc, const act_profile *ap, const stage_census *cz,
                      double *per_mb, double *work, double *logits) {
    const layout_cfg *lay = &s->layout;
    int nd = cz->n_dense, nm = cz->n_moe, rc = lay->recompute;
    double tokens = scn_rank_tokens(s) / lay->tp;   /* the rank's CP share, sequence parallel */
    double dense = ap->dense_layer[rc], moe = ap->moe_layer[rc];
    if (lay->recompute_modules) {                    /* Megatron's modules instead of the kind */
        unsigned set = recompute_set(lay);
        dense = memory_block_activation(&s->model, &s->precision, set, 0);
        moe = memory_block_activation(&s->model, &s->precision, set, 1);
    }
    *per_mb = tokens * (nd * dense + nm * moe);
    if (cz->mtp > 0) *per_mb += tokens * cz->mtp * ((mc->mtp_moe ? moe : dense) + ap->mtp_proj);
    *work = 0;
    if (rc == RECOMPUTE_FULL && !lay->recompute_modules && nd + nm > 0) {
        double widest = nm > 0 ? ap->moe_layer[RECOMPUTE_NONE] : ap->dense_layer[RECOMPUTE_NONE];
        *work = tokens * widest;
    }
    *logits = cz->loss ? tokens * ap->head * (1 + s->model.mtp_layers) : 0.0;
}

double memory_expert_slot_params(const scenario *s, const model_counts *mc, const stage_census *cz, int rank,
                                 double *expert_dp) {
    const layout_cfg *lay = &s->layout;
    if (expert_dp) *expert_dp = lay->dp;
    if (s->model.experts <= 0 || lay->ep <= 0) return 0;
    int dual = scn_schedule_run(lay) == SCHED_DUALPIPE, other = lay->pp - 1 - rank;
    double per_rank = ceil((double)s->model.experts / lay->ep);   /* memory_block_params' experts per rank */
    stage_params sp;
    memory_stage_params(mc, &s->model, lay, &cz[rank], &sp);
    double slot = sp.expert / per_rank;
    if (dual && other != rank) {
        memory_stage_params(mc, &s->model, lay, &cz[other], &sp);
        slot += sp.expert / per_rank;
        if (expert_dp) *expert_dp = 2.0 * lay->dp;   /* each stage has twice the holders */
    }
    return slot;
}

void memory_expert_slot_bytes(const scenario *s, const model_counts *mc, const mem_state_bytes *sb,
                              const stage_census *cz, int rank, mem_ledgers *out) {
    const layout_cfg *lay = &s->layout;
    double g_ex;   /* expert DP, as the ledger shards over it */
    double slot = memory_expert_slot_params(s, mc, cz, rank, &g_ex);
    memset(out, 0, sizeof *out);
    out->params = sb->weight * slot / (lay->zero >= 3 ? g_ex : 1.0);
    out->grads = sb->grad * slot / (lay->zero >= 2 ? g_ex : 1.0);
    out->optimizer = (sb->master + sb->moments) * slot / (lay->zero >= 1 ? g_ex : 1.0);
    out->total = out->params + out->grads + out->optimizer;
}

void memory_rank_ledgers_cz(const scenario *s, const model_counts *mc, const act_profile *ap,
                            const mem_state_bytes *sb, int micro_batches, const stage_census *cz, int rank,
                            mem_ledgers *out) {
    const layout_cfg *lay = &s->layout;
    int dual = scn_schedule_run(lay) == SCHED_DUALPIPE;
    int other = lay->pp - 1 - rank;
    stage_params sp;
    memory_stage_params(mc, &s->model, lay, &cz[rank], &sp);
    double per_mb, work, logits;
    stage_act(s, mc, ap, &cz[rank], &per_mb, &work, &logits);
    double copies = 1.0;
    if (dual && other != rank) {
        stage_params sp2;
        double per_mb2, work2, logits2;
        memory_stage_params(mc, &s->model, lay, &cz[other], &sp2);
        stage_act(s, mc, ap, &cz[other], &per_mb2, &work2, &logits2);
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

    /* ZeRO-3 gathers one unit (a block, an MTP module, the embedding and head) at a time while it
     * prefetches the next; ZeRO-2/3 hold a unit's full gradient until its reduce-scatter, the next
     * one's while it is computed: two units of the largest kind in either case (the step program's
     * prefetch depth, sim/program/program.c) */
    double unit = memory_zero_unit_params(mc, &s->model, lay, &cz[rank]);
    if (dual && other != rank) {
        double u2 = memory_zero_unit_params(mc, &s->model, lay, &cz[other]);
        if (u2 > unit) unit = u2;
    }
    out->params = sb->weight * (lay->zero >= 3 ? sharded + ZERO_UNITS_IN_FLIGHT * unit : held);
    out->grads = sb->grad * (lay->zero >= 2 ? sharded + ZERO_UNITS_IN_FLIGHT * unit : held);
    out->optimizer = (sb->master + sb->moments) * (lay->zero >= 1 ? sharded : held);
    /* routing.redundant_experts: the rank's extra expert slots, each one expert's whole state */
    int E = s->model.experts, R = s->routing.redundant_experts;
    double extra_slots = E > 0 && R > 0 ? ceil((double)(E + R) / lay->ep) - ceil((double)E / lay->ep) : 0;
    if (extra_slots > 0) {
        mem_ledgers slot;
        memory_expert_slot_bytes(s, mc, sb, cz, rank, &slot);
        out->params += extra_slots * slot.params;
        out->grads += extra_slots * slot.grads;
        out->optimizer += extra_slots * slot.optimizer;
    }
    double inflight = inflight_microbatches_of(lay, micro_batches, rank);
    out->activations = inflight * per_mb + work + logits;
    out->total = out->params + out->grads + out->optimizer + out->activations;
}

void memory_rank_ledgers_with(const scenario *s, const model_counts *mc, const act_profile *ap,
                              const mem_state_bytes *sb, int micro_batches, int rank,
                              mem_ledgers *out) {
    stage_census *cz = moe_xmalloc((size_t)s->layout.pp * sizeof *cz);
    moe_error err;
    memset(out, 0, sizeof *out);
    if (pipeline_census(s, cz, &err) == 0)
        memory_rank_ledgers_cz(s, mc, ap, sb, micro_batches, cz, rank, out);
    free(cz);
}

void memory_rank_ledgers(const scenario *s, const model_counts *mc, const act_profile *ap,
                         int micro_batches, int rank, mem_ledgers *out) {
    mem_state_bytes sb;
    memory_state_bytes(&s->precision, &sb);
    memory_rank_ledgers_with(s, mc, ap, &sb, micro_batches, rank, out);
}

double memory_usable_GiB(double mem_GiB, double reserve) { return mem_GiB * (1.0 - reserve); }

int memory_fits(const mem_ledgers *l, double mem_GiB, double reserve, const char **overflow) {
    double cap = memory_usable_GiB(mem_GiB, reserve) * 1073741824.0;
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
