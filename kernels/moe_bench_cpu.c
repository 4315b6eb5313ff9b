/* moe_bench_cpu.c — the timing API of the CPU references (for `simcal bench` without a GPU) and the
 * analytic work of each kernel (flops, memory bytes, bytes on the wire) used to turn times into
 * fractions of peak. create() allocates every buffer and runs one whole layer on R in-process ranks
 * so that each kernel has realistic inputs; run() then executes one kernel once on those buffers
 * (only the layout's per-expert cursor and the hierarchical a2a's staging are allocated inside, as
 * the kernels themselves need them), so the caller's clock sees essentially only the kernel. */
#include "kernels/moe_kernels.h"
#include "sim/base/rng_seed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- work model ------------------------------------------------------------------------------ */
/* Rows one rank sends (= receives, under uniform routing): T*K, clipped by the capacity. */
static double rows_per_rank(const moe_bench_shape *s) {
    double rows = (double)s->tokens * s->top_k;
    int cap = moe_capacity(s->capacity_factor, s->tokens, s->top_k, s->experts);
    if (cap >= 0 && (double)cap * s->experts < rows) rows = (double)cap * s->experts;
    return rows;
}

static int shape_ok(const moe_bench_shape *s) {
    return s && s->tokens > 0 && s->hidden > 0 && s->ffn_hidden > 0 && s->experts > 0 &&
           s->top_k > 0 && s->top_k <= s->experts && s->top_k <= MOE_MAX_TOP_K &&
           s->experts <= MOE_MAX_EXPERTS && s->ranks > 0 && s->experts % s->ranks == 0 &&
           s->gpus_per_node > 0 && s->ranks % s->gpus_per_node == 0;
}

int moe_kernel_work_of(moe_kernel_id id, const moe_bench_shape *s, moe_kernel_work *w) {
    if (!shape_ok(s) || !w) return MOE_EINVAL;
    const double T = s->tokens, H = s->hidden, F = s->ffn_hidden, E = s->experts, K = s->top_k;
    const double R = s->ranks, EL = E / R, A = rows_per_rank(s), bf = 2.0;
    memset(w, 0, sizeof *w);
    switch (id) {
    case MOE_KERNEL_ROUTER_GEMM:
        w->flops = 2.0 * T * H * E;
        w->bytes = T * H * bf + H * E * bf + T * E * 4;
        break;
    case MOE_KERNEL_GATING: /* logits in; idx, weights, counts, prob sums out */
        w->bytes = T * E * 4 + T * K * 8 + E * 8;
        break;
    case MOE_KERNEL_DISPATCH_LAYOUT: /* idx in; slot and row_token out; counts/offsets */
        w->bytes = T * K * 4 * 3 + (E + R) * 8;
        break;
    case MOE_KERNEL_PERMUTE: /* each sent row is read from x and written to the send buffer */
        w->bytes = 2.0 * A * H * bf + A * 4;
        break;
    case MOE_KERNEL_EXPERT_FFN: /* 3 GEMMs; h1, h3 written and read, a written and read */
        w->flops = 3.0 * 2.0 * A * H * F + 4.0 * A * F;
        w->bytes = 2.0 * A * H * bf + 3.0 * EL * H * F * bf + 6.0 * A * F * bf;
        break;
    case MOE_KERNEL_COMBINE:
        w->flops = 2.0 * A * H;
        w->bytes = A * H * bf + T * K * 8 + T * H * bf;
        break;
    case MOE_KERNEL_A2A:
        w->bytes = 2.0 * A * H * bf;
        w->comm_bytes = A * H * bf * (R - 1) / R;
        break;
    case MOE_KERNEL_A2A_HIER: /* staged once in between */
        w->bytes = 4.0 * A * H * bf;
        w->comm_bytes = A * H * bf * (R - 1) / R;
        break;
    default:
        return MOE_EINVAL;
    }
    return MOE_OK;
}

/* ---- deterministic inputs (splitmix64 of sim/base/rng_seed.h, header-only: this library links only libm) */

void moe_bench_fill_bf16(moe_bf16 *v, size_t n, double scale, uint64_t *st) {
    for (size_t i = 0; i < n; i++) {
        double u = (double)(moe_seed_next(st) >> 11) * 0x1.0p-53; /* [0,1) */
        v[i] = moe_f32_to_bf16((float)((2.0 * u - 1.0) * scale));
    }
}

/* ---- the bench ------------------------------------------------------------------------------- */
typedef struct {
    moe_bf16 *x, *send, *recv, *y_recv, *out;
    float *logits, *w;
    int32_t *idx, *expert_counts, *expert_offsets, *rank_counts, *rank_offsets, *slot, *row_token;
    int32_t totals[2];
    int32_t gate_counts[MOE_MAX_EXPERTS];
    float prob_sum[MOE_MAX_EXPERTS];
    moe_dispatch_layout lay;
} bench_rank;

struct moe_bench_cpu {
    moe_bench_shape s;
    moe_gate_cfg cfg;
    int capacity, EL;
    moe_bf16 *w_gate, *w1, *w3, *w2; /* experts of rank 0 */
    float *ffn_work;
    bench_rank *rk;
    int32_t *sc, *so, *rc, *ro;   /* [R][R] token exchange */
    int32_t *seg_rows, *seg_expert; /* rank 0's received segments [R*EL] */
    const void **sp;
    void **rp;
};

void moe_bench_cpu_destroy(moe_bench_cpu *b) {
    if (!b) return;
    if (b->rk)
        for (int r = 0; r < b->s.ranks; r++) {
            bench_rank *k = &b->rk[r];
            free(k->x), free(k->send), free(k->recv), free(k->y_recv), free(k->out);
            free(k->logits), free(k->w), free(k->idx), free(k->expert_counts);
            free(k->expert_offsets), free(k->rank_counts), free(k->rank_offsets);
            free(k->slot), free(k->row_token);
        }
    free(b->rk), free(b->w_gate), free(b->w1), free(b->w3), free(b->w2), free(b->ffn_work);
    free(b->sc), free(b->so), free(b->rc), free(b->ro), free(b->seg_rows), free(b->seg_expert);
    free(b->sp), free(b->rp);
    free(b);
}

#define ALLOC(p, n) (((p) = calloc((size_t)(n) > 0 ? (size_t)(n) : 1, sizeof *(p))) != NULL)

int moe_bench_cpu_create(const moe_bench_shape *s, moe_bench_cpu **out) {
    if (!shape_ok(s) || !out) return MOE_EINVAL;
    moe_bench_cpu *b = calloc(1, sizeof *b);
    if (!b) return MOE_ENOMEM;
    b->s = *s;
    const int T = s->tokens, H = s->hidden, F = s->ffn_hidden, E = s->experts, K = s->top_k,
              R = s->ranks;
    b->EL = E / R;
    b->cfg = moe_gate_cfg_default(E, K);
    b->cfg.score = s->score;
    b->capacity = moe_capacity(s->capacity_factor, T, K, E);
    uint64_t st = s->seed;
    const size_t A = (size_t)T * K;
    int ok = ALLOC(b->rk, R) && ALLOC(b->w_gate, (size_t)H * E) &&
             ALLOC(b->w1, (size_t)b->EL * H * F) && ALLOC(b->w3, (size_t)b->EL * H * F) &&
             ALLOC(b->w2, (size_t)b->EL * F * H) &&
             ALLOC(b->ffn_work, moe_expert_ffn_cpu_work_floats(H, F)) &&
             ALLOC(b->sc, R * R) && ALLOC(b->so, R * R) && ALLOC(b->rc, R * R) && ALLOC(b->ro, R * R) &&
             ALLOC(b->seg_rows, R * b->EL) && ALLOC(b->seg_expert, R * b->EL) && ALLOC(b->sp, R) &&
             ALLOC(b->rp, R);
    for (int r = 0; ok && r < R; r++) {
        bench_rank *k = &b->rk[r];
        ok = ALLOC(k->x, (size_t)T * H) && ALLOC(k->send, A * H) && ALLOC(k->out, (size_t)T * H) &&
             ALLOC(k->logits, (size_t)T * E) && ALLOC(k->w, A) && ALLOC(k->idx, A) &&
             ALLOC(k->expert_counts, E) && ALLOC(k->expert_offsets, E) && ALLOC(k->rank_counts, R) &&
             ALLOC(k->rank_offsets, R) && ALLOC(k->slot, A) && ALLOC(k->row_token, A);
        if (ok)
            k->lay = (moe_dispatch_layout){k->expert_counts, k->expert_offsets, k->rank_counts,
                                           k->rank_offsets, k->slot, k->row_token, k->totals};
    }
    if (!ok) {
        moe_bench_cpu_destroy(b);
        return MOE_ENOMEM;
    }
    moe_bench_fill_bf16(b->w_gate, (size_t)H * E, 1.0 / sqrt(H), &st);
    moe_bench_fill_bf16(b->w1, (size_t)b->EL * H * F, 1.0 / sqrt(H), &st);
    moe_bench_fill_bf16(b->w3, (size_t)b->EL * H * F, 1.0 / sqrt(H), &st);
    moe_bench_fill_bf16(b->w2, (size_t)b->EL * F * H, 1.0 / sqrt(F), &st);
    /* one layer's worth of routing on every rank, then the receive side */
    for (int r = 0; r < R; r++) {
        bench_rank *k = &b->rk[r];
        moe_bench_fill_bf16(k->x, (size_t)T * H, 1.0, &st);
        moe_router_logits_cpu(k->x, b->w_gate, k->logits, T, H, E);
        int rc = moe_topk_gating_cpu(k->logits, NULL, &b->cfg, T, k->idx, k->w, k->gate_counts, k->prob_sum);
        if (rc == MOE_OK) rc = moe_dispatch_layout_cpu(k->idx, T, K, E, R, b->capacity, &k->lay);
        if (rc != MOE_OK) {
            moe_bench_cpu_destroy(b);
            return rc;
        }
        moe_permute_cpu(k->x, k->row_token, k->totals[0], H, k->send);
        for (int d = 0; d < R; d++) {
            b->sc[r * R + d] = k->rank_counts[d];
            b->so[r * R + d] = k->rank_offsets[d];
        }
    }
    for (int d = 0; d < R; d++) {
        for (int src = 0; src < R; src++) b->rc[d * R + src] = b->sc[src * R + d];
        int64_t rows = moe_exclusive_scan_i32(b->rc + d * R, R, b->ro + d * R);
        bench_rank *k = &b->rk[d];
        if (!ALLOC(k->recv, (size_t)rows * H) || !ALLOC(k->y_recv, (size_t)rows * H)) {
            moe_bench_cpu_destroy(b);
            return MOE_ENOMEM;
        }
    }
    for (int src = 0; src < R; src++)
        for (int j = 0; j < b->EL; j++) {
            b->seg_rows[src * b->EL + j] = b->rk[src].expert_counts[j]; /* rank 0's experts */
            b->seg_expert[src * b->EL + j] = j;
        }
    for (int r = 0; r < R; r++) b->sp[r] = b->rk[r].send, b->rp[r] = b->rk[r].recv;
    int rc = moe_a2a_cpu(R, s->gpus_per_node, b->sp, b->sc, b->so, b->rp, b->rc, b->ro,
                         (size_t)H * sizeof(moe_bf16), NULL);
    if (rc != MOE_OK) {
        moe_bench_cpu_destroy(b);
        return rc;
    }
    *out = b;
    return MOE_OK;
}

int moe_bench_cpu_run(moe_bench_cpu *b, moe_kernel_id id) {
    if (!b) return MOE_EINVAL;
    const moe_bench_shape *s = &b->s;
    const int T = s->tokens, H = s->hidden, E = s->experts, K = s->top_k, R = s->ranks;
    bench_rank *k = &b->rk[0];
    switch (id) {
    case MOE_KERNEL_ROUTER_GEMM:
        moe_router_logits_cpu(k->x, b->w_gate, k->logits, T, H, E);
        return MOE_OK;
    case MOE_KERNEL_GATING:
        return moe_topk_gating_cpu(k->logits, NULL, &b->cfg, T, k->idx, k->w, k->gate_counts,
                                   k->prob_sum);
    case MOE_KERNEL_DISPATCH_LAYOUT:
        return moe_dispatch_layout_cpu(k->idx, T, K, E, R, b->capacity, &k->lay);
    case MOE_KERNEL_PERMUTE:
        moe_permute_cpu(k->x, k->row_token, k->totals[0], H, k->send);
        return MOE_OK;
    case MOE_KERNEL_EXPERT_FFN:
        moe_expert_ffn_cpu(k->recv, R * b->EL, b->seg_rows, b->seg_expert, b->w1, b->w3, b->w2, H,
                           s->ffn_hidden, k->y_recv, b->ffn_work);
        return MOE_OK;
    case MOE_KERNEL_COMBINE: /* the send buffer stands in for the returned expert outputs */
        moe_combine_cpu(k->send, k->slot, k->w, T, K, H, k->out);
        return MOE_OK;
    case MOE_KERNEL_A2A:
        return moe_a2a_cpu(R, s->gpus_per_node, b->sp, b->sc, b->so, b->rp, b->rc, b->ro,
                           (size_t)H * sizeof(moe_bf16), NULL);
    case MOE_KERNEL_A2A_HIER:
        return moe_a2a_hier_cpu(R, s->gpus_per_node, b->sp, b->sc, b->so, b->rp, b->rc, b->ro,
                                (size_t)H * sizeof(moe_bf16), NULL);
    default:
        return MOE_EINVAL;
    }
}
