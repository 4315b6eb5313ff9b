/* backend_cpu.c — one rank's data and CPU kernels for simlive's "mpi" backend (see backend_cpu.h for what
 * is real and what is a stand-in). Buffers are keyed by what the program names: activations and
 * gradients by (micro-batch, chunk), MoE state by (layer, micro-batch). */
#include "sim/live/backend_cpu.h"
#include "sim/base/alloc.h"
#include "sim/base/rng_seed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/moe_kernels.h"
#include "sim/plan/model.h"

/* One MoE layer instance (layer, micro-batch) on this rank. */
typedef struct {
    int live;
    moe_bf16 *x_in, *out;                       /* [T,H] input and MoE output (kept for the check) */
    float *logits, *topk_w;                     /* [T,E], [T,K] */
    int32_t *topk_idx;                          /* [T,K] */
    int32_t *exp_counts, *exp_offsets;          /* [E] */
    int32_t *rank_counts, *rank_offsets;        /* [R] rows to each EP member */
    int32_t *slot, *row_token;                  /* [T*K] */
    int32_t totals[2];
    moe_bf16 *send, *y_send;                    /* [n_rows,H] dispatch rows out, expert outputs back */
    int32_t *seg_recv;                          /* [R*El] rows received per (source, local expert) */
    int32_t *recv_rows, *recv_offsets;          /* [R] */
    int64_t n_recv;
    moe_bf16 *recv, *y_recv;                    /* [n_recv,H] */
    moe_bf16 *g_send, *g_recv, *g_xrecv, *g_back; /* backward rows */
} moe_inst;

enum { BURN_LANES = 256 };   /* lanes of the stand-in FLOP burner (the CPU vectorises them) */

struct live_cpu {
    const program *p;
    const scenario *s;
    int rank, d, stage, e, t;
    int R, E, El, K, H, F, T, L, mbs, n_chunks;
    moe_gate_cfg gate;
    int capacity;
    moe_bf16 **w_gate, **w1, **w3, **w2;        /* [L] (MoE layers only), every expert */
    moe_bf16 *hidden, *grad;                    /* [mbs * n_chunks][T*H] */
    moe_bf16 *final_hidden;                     /* [mbs][T*H] at the head */
    unsigned char *have_final;                  /* [mbs] */
    moe_inst *inst;                             /* [L * mbs] */
    float *ffn_work;
    moe_bf16 *mix_tmp;                          /* [T*H] */
    float *ones;                                /* [T*K] */
    uint16_t *coll_send, *coll_recv;            /* stand-in gradient buffers, grown on demand */
    size_t coll_cap;
    float burn_out[BURN_LANES];                 /* the FLOP burner's lanes' results */
};

/* ---- deterministic data ---------------------------------------------------------------------------- */
static uint64_t key(uint64_t seed, int a, int b, int c, int d) {
    return moe_seed_mix(seed ^ moe_seed_mix((uint64_t)a * 1000003u ^ moe_seed_mix((uint64_t)b * 7919u ^ moe_seed_mix((uint64_t)c * 104729u ^ (uint64_t)(d + 17)))));
}

/* Token rows of (replica, ep index, micro-batch): the embedding stand-in. */
static void embed_tokens(const live_cpu *c, int d, int e, int mb, moe_bf16 *x) {
    uint64_t st = key(c->s->seed, 1, d, e, mb);
    moe_bench_fill_bf16(x, (size_t)c->T * c->H, 1.0, &st);
}

/* The stand-in token mix of attention / dense FFN / their backward (kernels/token_mix_cpu.c), in
 * place. */
static void token_mix(live_cpu *c, moe_bf16 *x) {
    moe_token_mix_cpu(x, c->T, c->H, c->mix_tmp);
    memcpy(x, c->mix_tmp, (size_t)c->T * c->H * sizeof *x);
}

/* The stand-in compute of about `flops` FLOPs (kernels/flop_burn_cpu.c) over BURN_LANES lanes. */
static void burn(live_cpu *c, double flops) {
    moe_flop_burn_cpu(moe_flop_burn_updates(flops, BURN_LANES), BURN_LANES, c->burn_out);
}

/* ---- setup ---------------------------------------------------------------------------------------------- */
static int is_moe_layer(const live_cpu *c, int l) { return model_layer_is_moe(&c->s->model, l); }

static void *xcalloc(size_t n, size_t sz, int *fail) {
    void *v = moe_xcalloc(n ? n : 1, sz);
    if (!v) *fail = 1;
    return v;
}

int live_cpu_create(const program *p, int rank, live_cpu **out, moe_error *err) {
    *out = NULL;
    const scenario *s = p->scn;
    if (p->tp != 1) {
        char v[16]; snprintf(v, sizeof v, "%d", p->tp);
        return moe_error_input(err, s->file, "layout.tp", v, "1 (live mode runs no tensor-parallel split)");
    }
    if (p->cp > 1 || p->attn_tp != p->tp) {
        char v[16]; snprintf(v, sizeof v, "%d", p->cp > 1 ? p->cp : scn_etp(s));
        return moe_error_input(err, s->file, p->cp > 1 ? "layout.cp" : "layout.etp", v,
                               "1 (live mode runs no context parallelism or expert tensor parallelism; plan and step do)");
    }
    if (s->model.mtp_layers > 0) {
        char v[16]; snprintf(v, sizeof v, "%d", s->model.mtp_layers);
        return moe_error_input(err, s->file, "model.mtp_layers", v,
                               "0 (live mode runs no multi-token-prediction module; plan and step do)");
    }
    if (s->model.experts > 0 && s->model.ffn_act != FFN_SWIGLU)
        return moe_error_input(err, s->file, "model.ffn_act", "gelu", "swiglu (the live expert kernel is SwiGLU)");
    live_cpu *c = moe_xcalloc(1, sizeof *c);
    if (!c) return moe_error_set(err, EXIT_RUNTIME, "live: out of memory");
    c->p = p; c->s = s; c->rank = rank;
    program_coords(p, rank, &c->d, &c->stage, &c->e, &c->t);
    c->R = p->ep; c->E = s->model.experts; c->El = c->E > 0 ? c->E / c->R : 0; c->K = s->model.top_k;
    c->H = s->model.hidden; c->F = s->model.expert_hidden; c->T = p->tokens_per_mb; c->L = s->model.layers;
    c->mbs = p->micro_batches; c->n_chunks = p->n_chunks;
    if (c->E > 0) {
        c->gate = moe_gate_cfg_default(c->E, c->K);
        if (s->model.expert_groups > 1 && s->model.topk_groups > 0 && s->model.topk_groups < s->model.expert_groups) {
            c->gate.n_groups = s->model.expert_groups;
            c->gate.topk_groups = s->model.topk_groups;
        }
        char why[160];
        if (moe_gate_cfg_check(&c->gate, why, sizeof why) != MOE_OK) {
            free(c);
            return moe_error_input(err, s->file, "model.top_k", NULL, "a gating the kernels accept: %s", why);
        }
        c->capacity = s->routing.drop ? moe_capacity(s->routing.capacity_factor, c->T, c->K, c->E) : -1;
    }
    int fail = 0;
    size_t TH = (size_t)c->T * c->H, slots = (size_t)c->mbs * c->n_chunks;
    c->hidden = xcalloc(slots * TH, sizeof(moe_bf16), &fail);
    c->grad = xcalloc(slots * TH, sizeof(moe_bf16), &fail);
    c->final_hidden = xcalloc((size_t)c->mbs * TH, sizeof(moe_bf16), &fail);
    c->have_final = xcalloc((size_t)c->mbs, 1, &fail);
    c->inst = xcalloc((size_t)c->L * c->mbs, sizeof(moe_inst), &fail);
    c->mix_tmp = xcalloc((size_t)c->T * c->H, sizeof(moe_bf16), &fail);
    c->ffn_work = xcalloc(moe_expert_ffn_cpu_work_floats(c->H, c->F > 0 ? c->F : 1), sizeof(float), &fail);
    c->ones = xcalloc((size_t)c->T * (c->K > 0 ? c->K : 1), sizeof(float), &fail);
    if (!fail) moe_fill_f32_cpu(c->ones, 1.0f, (size_t)c->T * (c->K > 0 ? c->K : 1));
    c->w_gate = xcalloc((size_t)c->L, sizeof(void *), &fail);
    c->w1 = xcalloc((size_t)c->L, sizeof(void *), &fail);
    c->w3 = xcalloc((size_t)c->L, sizeof(void *), &fail);
    c->w2 = xcalloc((size_t)c->L, sizeof(void *), &fail);
    /* weights of every expert of every MoE layer (each expert seeded on its own, so the slice a rank
     * computes with is bit-identical to the reference's copy) */
    size_t HF = (size_t)c->H * c->F;
    for (int l = 0; l < c->L && !fail; l++) {
        if (!is_moe_layer(c, l)) continue;
        c->w_gate[l] = xcalloc((size_t)c->H * c->E, sizeof(moe_bf16), &fail);
        c->w1[l] = xcalloc((size_t)c->E * HF, sizeof(moe_bf16), &fail);
        c->w3[l] = xcalloc((size_t)c->E * HF, sizeof(moe_bf16), &fail);
        c->w2[l] = xcalloc((size_t)c->E * HF, sizeof(moe_bf16), &fail);
        if (fail) break;
        uint64_t st = key(s->seed, 2, l, 0, 0);
        moe_bench_fill_bf16(c->w_gate[l], (size_t)c->H * c->E, 1.0 / sqrt(c->H), &st);
        for (int x = 0; x < c->E; x++) {
            st = key(s->seed, 3, l, x, 1); moe_bench_fill_bf16(c->w1[l] + x * HF, HF, 1.0 / sqrt(c->H), &st);
            st = key(s->seed, 3, l, x, 3); moe_bench_fill_bf16(c->w3[l] + x * HF, HF, 1.0 / sqrt(c->H), &st);
            st = key(s->seed, 3, l, x, 2); moe_bench_fill_bf16(c->w2[l] + x * HF, HF, 1.0 / sqrt(c->F), &st);
        }
    }
    if (fail) {
        live_cpu_free(c);
        return moe_error_set(err, EXIT_RUNTIME, "live: out of memory for the tiny model's buffers");
    }
    *out = c;
    return 0;
}

static void inst_release(moe_inst *m) {
    free(m->x_in); free(m->out); free(m->logits); free(m->topk_w); free(m->topk_idx);
    free(m->exp_counts); free(m->exp_offsets); free(m->rank_counts); free(m->rank_offsets);
    free(m->slot); free(m->row_token); free(m->send); free(m->y_send); free(m->seg_recv);
    free(m->recv_rows); free(m->recv_offsets); free(m->recv); free(m->y_recv);
    free(m->g_send); free(m->g_recv); free(m->g_xrecv); free(m->g_back);
    memset(m, 0, sizeof *m);
}

void live_cpu_begin_step(live_cpu *c) {
    for (int i = 0; i < c->L * c->mbs; i++) inst_release(&c->inst[i]);
    memset(c->have_final, 0, (size_t)c->mbs);
}

void live_cpu_free(live_cpu *c) {
    if (!c) return;
    if (c->inst) live_cpu_begin_step(c);
    for (int l = 0; l < c->L && c->w1; l++) { free(c->w_gate[l]); free(c->w1[l]); free(c->w3[l]); free(c->w2[l]); }
    free(c->w_gate); free(c->w1); free(c->w3); free(c->w2);
    free(c->hidden); free(c->grad); free(c->final_hidden); free(c->have_final); free(c->inst);
    free(c->mix_tmp); free(c->ffn_work); free(c->ones); free(c->coll_send); free(c->coll_recv);
    free(c);
}

/* ---- op handlers ------------------------------------------------------------------------------------------ */
static moe_bf16 *act(live_cpu *c, moe_bf16 *base, const program_op *o) {
    return base + ((size_t)o->mb * c->n_chunks + o->chunk) * c->T * c->H;
}
static moe_inst *inst_of(live_cpu *c, const program_op *o) {
    if (o->layer < 0 || o->layer >= c->L || o->mb < 0 || o->mb >= c->mbs) return NULL;
    return &c->inst[(size_t)o->layer * c->mbs + o->mb];
}

static int oom(moe_error *err) { return moe_error_set(err, EXIT_RUNTIME, "live: out of memory"); }

static int router_fwd(live_cpu *c, const program_op *o, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m) return moe_error_set(err, EXIT_RUNTIME, "live: router op without a layer/micro-batch");
    inst_release(m);
    int fail = 0, T = c->T, H = c->H, E = c->E, K = c->K, R = c->R;
    m->x_in = xcalloc((size_t)T * H, sizeof(moe_bf16), &fail);
    m->logits = xcalloc((size_t)T * E, sizeof(float), &fail);
    m->topk_w = xcalloc((size_t)T * K, sizeof(float), &fail);
    m->topk_idx = xcalloc((size_t)T * K, sizeof(int32_t), &fail);
    m->exp_counts = xcalloc((size_t)E, sizeof(int32_t), &fail);
    m->exp_offsets = xcalloc((size_t)E, sizeof(int32_t), &fail);
    m->rank_counts = xcalloc((size_t)R, sizeof(int32_t), &fail);
    m->rank_offsets = xcalloc((size_t)R, sizeof(int32_t), &fail);
    m->slot = xcalloc((size_t)T * K, sizeof(int32_t), &fail);
    m->row_token = xcalloc((size_t)T * K, sizeof(int32_t), &fail);
    m->recv_rows = xcalloc((size_t)R, sizeof(int32_t), &fail);
    m->recv_offsets = xcalloc((size_t)R, sizeof(int32_t), &fail);
    m->seg_recv = xcalloc((size_t)R * c->El, sizeof(int32_t), &fail);
    if (fail) return oom(err);
    memcpy(m->x_in, act(c, c->hidden, o), (size_t)T * H * sizeof(moe_bf16));
    moe_router_logits_cpu(m->x_in, c->w_gate[o->layer], m->logits, T, H, E);
    int rc = moe_topk_gating_cpu(m->logits, NULL, &c->gate, T, m->topk_idx, m->topk_w, NULL, NULL);
    if (rc != MOE_OK) return moe_error_set(err, EXIT_RUNTIME, "live: gating failed: %s", moe_status_str(rc));
    m->live = 1;
    return 0;
}

static int permute_fwd(live_cpu *c, const program_op *o, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m || !m->live) return moe_error_set(err, EXIT_RUNTIME, "live: permute before router (layer %d mb %d)", o->layer, o->mb);
    moe_dispatch_layout lay = {m->exp_counts, m->exp_offsets, m->rank_counts, m->rank_offsets, m->slot,
                               m->row_token, m->totals};
    int rc = moe_dispatch_layout_cpu(m->topk_idx, c->T, c->K, c->E, c->R, c->capacity, &lay);
    if (rc != MOE_OK) return moe_error_set(err, EXIT_RUNTIME, "live: dispatch layout failed: %s", moe_status_str(rc));
    int fail = 0;
    m->send = xcalloc((size_t)m->totals[0] * c->H, sizeof(moe_bf16), &fail);
    if (fail) return oom(err);
    moe_permute_cpu(m->x_in, m->row_token, m->totals[0], c->H, m->send);
    return 0;
}

/* grouped FFN over rows laid out [source member][local expert] (the all-to-all's receive order) */
static void ffn_segments(live_cpu *c, const moe_inst *m, int layer, const moe_bf16 *rows, moe_bf16 *y) {
    int n_seg = c->R * c->El;
    int32_t *seg_expert = moe_xmalloc((size_t)n_seg * sizeof(int32_t));
    for (int s = 0; s < n_seg; s++) seg_expert[s] = s % c->El;
    size_t off = (size_t)c->e * c->El * c->H * c->F;   /* this rank's experts: e*El .. e*El+El-1 */
    moe_expert_ffn_cpu(rows, n_seg, m->seg_recv, seg_expert, c->w1[layer] + off, c->w3[layer] + off,
                       c->w2[layer] + off, c->H, c->F, y, c->ffn_work);
    free(seg_expert);
}

static int expert(live_cpu *c, const program_op *o, double *measured, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m || !m->live) return moe_error_set(err, EXIT_RUNTIME, "live: expert op without routing (layer %d mb %d)", o->layer, o->mb);
    int fail = 0;
    size_t n = (size_t)m->n_recv * c->H;
    if (o->kernel == K_EXPERT_FWD) {
        if (!m->recv) return moe_error_set(err, EXIT_RUNTIME, "live: expert_fwd before its dispatch (layer %d mb %d)", o->layer, o->mb);
        free(m->y_recv);
        m->y_recv = xcalloc(n, sizeof(moe_bf16), &fail);
        if (fail) return oom(err);
        ffn_segments(c, m, o->layer, m->recv, m->y_recv);
    } else if (o->kernel == K_EXPERT_BWD_INPUT) {
        if (!m->g_recv) return moe_error_set(err, EXIT_RUNTIME, "live: expert_bwd_input before its dispatch (layer %d mb %d)", o->layer, o->mb);
        free(m->g_xrecv);
        m->g_xrecv = xcalloc(n, sizeof(moe_bf16), &fail);
        if (fail) return oom(err);
        ffn_segments(c, m, o->layer, m->g_recv, m->g_xrecv);   /* stand-in: forward kernel, same FLOPs */
    } else {   /* K_EXPERT_BWD_WEIGHT: stand-in with the same shapes, result discarded */
        moe_bf16 *tmp = xcalloc(n, sizeof(moe_bf16), &fail);
        if (fail) return oom(err);
        if (m->g_recv) ffn_segments(c, m, o->layer, m->g_recv, tmp);
        free(tmp);
    }
    *measured = (double)m->n_recv;
    return 0;
}

static int unpermute_fwd(live_cpu *c, const program_op *o, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m || !m->y_send) return moe_error_set(err, EXIT_RUNTIME, "live: unpermute before its combine (layer %d mb %d)", o->layer, o->mb);
    int fail = 0;
    m->out = xcalloc((size_t)c->T * c->H, sizeof(moe_bf16), &fail);
    if (fail) return oom(err);
    moe_combine_cpu(m->y_send, m->slot, m->topk_w, c->T, c->K, c->H, m->out);
    moe_bf16 *h = act(c, c->hidden, o);           /* residual: h = x + MoE(x) */
    memcpy(h, m->x_in, (size_t)c->T * c->H * sizeof(moe_bf16));
    moe_bf16_add_cpu(h, m->out, (size_t)c->T * c->H, h);
    return 0;
}

static int unpermute_bwd(live_cpu *c, const program_op *o, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m || !m->live) return moe_error_set(err, EXIT_RUNTIME, "live: unpermute_bwd without a forward (layer %d mb %d)", o->layer, o->mb);
    int fail = 0, H = c->H;
    free(m->g_send);
    m->g_send = xcalloc((size_t)m->totals[0] * H, sizeof(moe_bf16), &fail);
    if (fail) return oom(err);
    /* d out / d y[slot(t,k)] = w[t,k] * g[t] */
    moe_unpermute_bwd_cpu(act(c, c->grad, o), m->slot, m->topk_w, c->T, c->K, H, m->g_send);
    return 0;
}

static int permute_bwd(live_cpu *c, const program_op *o, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    if (!m || !m->g_back) return moe_error_set(err, EXIT_RUNTIME, "live: permute_bwd before its combine (layer %d mb %d)", o->layer, o->mb);
    int fail = 0;
    moe_bf16 *gx = xcalloc((size_t)c->T * c->H, sizeof(moe_bf16), &fail);
    if (fail) return oom(err);
    moe_combine_cpu(m->g_back, m->slot, c->ones, c->T, c->K, c->H, gx);   /* scatter-add back per token */
    moe_bf16_add_cpu(act(c, c->grad, o), gx, (size_t)c->T * c->H, act(c, c->grad, o));
    free(gx);
    return 0;
}

int live_cpu_compute(live_cpu *c, const program_op *o, double *measured, moe_error *err) {
    size_t TH = (size_t)c->T * c->H;
    switch (o->kernel) {
    case K_EMBED_FWD: embed_tokens(c, c->d, c->e, o->mb, act(c, c->hidden, o)); break;
    case K_ATTN_FWD: case K_DENSE_FFN_FWD: token_mix(c, act(c, c->hidden, o)); break;
    case K_ATTN_BWD_INPUT: case K_DENSE_FFN_BWD_INPUT: token_mix(c, act(c, c->grad, o)); break;
    case K_ROUTER_FWD: return router_fwd(c, o, err);
    case K_PERMUTE_FWD: return permute_fwd(c, o, err);
    case K_EXPERT_FWD: case K_EXPERT_BWD_INPUT: case K_EXPERT_BWD_WEIGHT: return expert(c, o, measured, err);
    case K_UNPERMUTE_FWD: return unpermute_fwd(c, o, err);
    case K_UNPERMUTE_BWD: return unpermute_bwd(c, o, err);
    case K_PERMUTE_BWD: return permute_bwd(c, o, err);
    case K_HEAD_LOSS_FWD:
        if (o->mb >= 0 && o->mb < c->mbs) {
            memcpy(c->final_hidden + (size_t)o->mb * TH, act(c, c->hidden, o), TH * sizeof(moe_bf16));
            c->have_final[o->mb] = 1;
        }
        break;
    case K_HEAD_LOSS_BWD:       /* stand-in loss gradient: g = h x (1/T) */
        moe_bf16_scale_cpu(act(c, c->hidden, o), 1.0f / (float)c->T, TH, act(c, c->grad, o));
        break;
    default: break;   /* router_bwd, shared expert, weight gradients, embed_bwd, optimizer: FLOPs only */
    }
    /* the real MoE kernels above return early; everything reaching here is a stand-in of op.flops */
    burn(c, o->flops);
    return 0;
}

/* ---- all-to-all payloads ------------------------------------------------------------------------------------ */
static int scan_recv(live_cpu *c, moe_inst *m) {
    for (int s = 0; s < c->R; s++) {
        int32_t n = 0;
        for (int l = 0; l < c->El; l++) n += m->seg_recv[s * c->El + l];
        m->recv_rows[s] = n;
    }
    m->n_recv = moe_exclusive_scan_i32(m->recv_rows, c->R, m->recv_offsets);
    return 0;
}

int live_cpu_a2a_begin(live_cpu *c, const program_op *o, live_a2a_buf *b, moe_error *err) {
    memset(b, 0, sizeof *b);
    moe_inst *m = inst_of(c, o);
    if (!m || !m->live || !m->send)
        return moe_error_set(err, EXIT_RUNTIME, "live: %s (layer %d mb %d) before its layer's routing",
                             op_kind_name((op_kind)o->kind), o->layer, o->mb);
    int fail = 0, H = c->H;
    size_t rows_out = (size_t)m->totals[0];
    b->n = c->R;
    b->row_bytes = (size_t)H * sizeof(moe_bf16);
    int fwd = o->phase == PHASE_F;
    if (o->kind == OP_A2A_DISPATCH && fwd) {
        b->send = m->send; b->send_rows = m->rank_counts; b->send_offsets = m->rank_offsets;
        b->meta_ints = c->El; b->meta_send = m->exp_counts; b->meta_recv = m->seg_recv;
        return 0;                       /* receive side sized by live_cpu_a2a_sized */
    }
    if (o->kind == OP_A2A_COMBINE && fwd) {       /* expert outputs back to the tokens' ranks */
        free(m->y_send);
        m->y_send = xcalloc(rows_out * H, sizeof(moe_bf16), &fail);
        b->send = m->y_recv; b->send_rows = m->recv_rows; b->send_offsets = m->recv_offsets;
        b->recv = m->y_send; b->recv_rows = m->rank_counts; b->recv_offsets = m->rank_offsets;
        if (!m->y_recv) return moe_error_set(err, EXIT_RUNTIME, "live: combine before expert_fwd (layer %d mb %d)", o->layer, o->mb);
    } else if (o->kind == OP_A2A_DISPATCH) {      /* backward: output gradients to the experts */
        free(m->g_recv);
        m->g_recv = xcalloc((size_t)m->n_recv * H, sizeof(moe_bf16), &fail);
        b->send = m->g_send; b->send_rows = m->rank_counts; b->send_offsets = m->rank_offsets;
        b->recv = m->g_recv; b->recv_rows = m->recv_rows; b->recv_offsets = m->recv_offsets;
        if (!m->g_send) return moe_error_set(err, EXIT_RUNTIME, "live: backward dispatch before unpermute_bwd (layer %d mb %d)", o->layer, o->mb);
    } else {                                       /* backward combine: input gradients back */
        free(m->g_back);
        m->g_back = xcalloc(rows_out * H, sizeof(moe_bf16), &fail);
        b->send = m->g_xrecv; b->send_rows = m->recv_rows; b->send_offsets = m->recv_offsets;
        b->recv = m->g_back; b->recv_rows = m->rank_counts; b->recv_offsets = m->rank_offsets;
        if (!m->g_xrecv) return moe_error_set(err, EXIT_RUNTIME, "live: backward combine before expert_bwd_input (layer %d mb %d)", o->layer, o->mb);
    }
    return fail ? oom(err) : 0;
}

int live_cpu_a2a_sized(live_cpu *c, const program_op *o, live_a2a_buf *b, moe_error *err) {
    moe_inst *m = inst_of(c, o);
    scan_recv(c, m);
    int fail = 0;
    free(m->recv);
    m->recv = xcalloc((size_t)m->n_recv * c->H, sizeof(moe_bf16), &fail);
    if (fail) return oom(err);
    b->recv = m->recv; b->recv_rows = m->recv_rows; b->recv_offsets = m->recv_offsets;
    return 0;
}

double live_a2a_bytes_out(const live_a2a_buf *b, int me) {
    double rows = 0;
    for (int j = 0; j < b->n; j++) if (j != me) rows += b->send_rows[j];
    return rows * (double)b->row_bytes;
}

/* ---- pipeline and collective buffers -------------------------------------------------------------------- */
void *live_cpu_p2p_buffer(live_cpu *c, const program_op *o, size_t *bytes, moe_error *err) {
    *bytes = (size_t)c->T * c->H * sizeof(moe_bf16);
    if (o->mb < 0 || o->mb >= c->mbs || o->chunk >= c->n_chunks) {
        moe_error_set(err, EXIT_RUNTIME, "live: %s op with micro-batch %d chunk %d out of range",
                      op_kind_name((op_kind)o->kind), o->mb, o->chunk);
        return NULL;
    }
    if (fabs((double)o->bytes - (double)*bytes) > 0.5 + 1e-6 * (double)*bytes) {
        moe_error_set(err, EXIT_RUNTIME, "live: %s of micro-batch %d carries %.0f bytes in the program but the "
                      "activation is %zu bytes (T=%d x H=%d BF16)", op_kind_name((op_kind)o->kind), o->mb,
                      (double)o->bytes, *bytes, c->T, c->H);
        return NULL;
    }
    return act(c, o->phase == PHASE_F ? c->hidden : c->grad, o);
}

int live_cpu_coll_buffers(live_cpu *c, const program_op *o, int n, uint16_t **send, uint16_t **recv,
                          size_t *count, moe_error *err) {
    size_t elems = (size_t)(o->bytes / 2.0);
    size_t per = elems / (size_t)n;
    if (per == 0) per = 1;
    size_t total = per * (size_t)n;
    if (total > c->coll_cap) {
        free(c->coll_send); free(c->coll_recv);
        c->coll_send = moe_xmalloc(total * sizeof(uint16_t));
        c->coll_recv = moe_xmalloc(total * sizeof(uint16_t));
        c->coll_cap = total;
        if (!c->coll_send || !c->coll_recv) { c->coll_cap = 0; return oom(err); }
    }
    /* stand-in gradients: small deterministic values (their sum stays exact in BF16) */
    for (size_t i = 0; i < total; i++)
        c->coll_send[i] = moe_f32_to_bf16((float)((i + (size_t)c->rank) % 8) * 0.125f);
    *send = c->coll_send; *recv = c->coll_recv; *count = per;
    return 0;
}

/* ---- checks ----------------------------------------------------------------------------------------------- */
static void compare(const moe_bf16 *got, const moe_bf16 *want, size_t n, live_moe_check *k, int layer, int mb) {
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i]) continue;
        bad++;
        double dlt = fabs((double)moe_bf16_to_f32(got[i]) - (double)moe_bf16_to_f32(want[i]));
        if (dlt > k->max_abs_diff || isnan(dlt)) k->max_abs_diff = isnan(dlt) ? INFINITY : dlt;
    }
    if (bad && k->first_layer < 0) { k->first_layer = layer; k->first_mb = mb; }
    k->mismatches += bad;
    k->values += (long)n;
    k->instances++;
}

static void check_init(live_moe_check *k) {
    memset(k, 0, sizeof *k);
    k->first_layer = k->first_mb = -1;
}

static int moe_ref(live_cpu *c, int l, const moe_bf16 *x, moe_bf16 *out) {
    return moe_layer_ref_cpu(x, c->T, c->H, c->F, c->w_gate[l], &c->gate, NULL, c->capacity, c->w1[l],
                             c->w3[l], c->w2[l], out);
}

int live_cpu_check_moe(live_cpu *c, live_moe_check *k) {
    check_init(k);
    moe_bf16 *ref = moe_xmalloc((size_t)c->T * c->H * sizeof(moe_bf16));
    if (!ref) return -1;
    for (int l = 0; l < c->L; l++)
        for (int mb = 0; mb < c->mbs; mb++) {
            moe_inst *m = &c->inst[(size_t)l * c->mbs + mb];
            if (!m->live || !m->out) continue;
            if (moe_ref(c, l, m->x_in, ref) != MOE_OK) { free(ref); return -1; }
            compare(m->out, ref, (size_t)c->T * c->H, k, l, mb);
            k->dropped += m->totals[1];
            k->rows_sent += m->totals[0];
        }
    free(ref);
    return 0;
}

int live_cpu_check_model(live_cpu *c, live_moe_check *k) {
    check_init(k);
    size_t TH = (size_t)c->T * c->H;
    moe_bf16 *x = moe_xmalloc(TH * sizeof(moe_bf16)), *out = moe_xmalloc(TH * sizeof(moe_bf16));
    if (!x || !out) { free(x); free(out); return -1; }
    for (int mb = 0; mb < c->mbs; mb++) {
        if (!c->have_final[mb]) continue;
        embed_tokens(c, c->d, c->e, mb, x);   /* the token rows of this (replica, ep index) */
        for (int l = 0; l < c->L; l++) {
            token_mix(c, x);                     /* attention stand-in */
            if (!is_moe_layer(c, l)) { token_mix(c, x); continue; }   /* dense FFN stand-in */
            if (moe_ref(c, l, x, out) != MOE_OK) { free(x); free(out); return -1; }
            moe_bf16_add_cpu(x, out, TH, x);
        }
        compare(c->final_hidden + (size_t)mb * TH, x, TH, k, -1, mb);
    }
    free(x); free(out);
    return 0;
}

/* ---- host-side data for other backends --------------------------------------------------------------------- */
int live_cpu_weights(const live_cpu *c, int layer, const uint16_t **w_gate, const uint16_t **w1,
                     const uint16_t **w3, const uint16_t **w2) {
    if (layer < 0 || layer >= c->L || !c->w1[layer]) return 0;
    *w_gate = c->w_gate[layer]; *w1 = c->w1[layer]; *w3 = c->w3[layer]; *w2 = c->w2[layer];
    return 1;
}
void live_cpu_shape(const live_cpu *c, int *T, int *H, int *F, int *E, int *K, int *capacity, int *first_expert) {
    *T = c->T; *H = c->H; *F = c->F; *E = c->E; *K = c->K; *capacity = c->capacity; *first_expert = c->e * c->El;
}
void live_cpu_embed(live_cpu *c, int mb, uint16_t *x) { embed_tokens(c, c->d, c->e, mb, x); }
int live_cpu_moe_reference(live_cpu *c, int layer, const uint16_t *x, uint16_t *out) {
    return moe_ref(c, layer, x, out) == MOE_OK ? 0 : -1;
}
const void *live_cpu_gate_cfg(const live_cpu *c) { return &c->gate; }
