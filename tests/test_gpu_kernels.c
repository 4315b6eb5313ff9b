/* test_gpu_kernels.c — every CUDA kernel against its CPU reference (kernels/<name>_cpu.c).
 *
 * Runs only when this target links moesim_cuda (MOESIM_HAVE_CUDA) AND a GPU exists; otherwise every
 * test is skipped visibly ("no GPU: skipped" / "built without moesim_cuda: skipped").
 * What must agree, and how closely:
 *   router logits      |gpu - cpu| <= 1e-3 |cpu| + 1e-4      (FP32 sums in another order)
 *   gating             indices and counts exact on the same logits; weights 1e-5 relative;
 *                      prob_sum 1e-4 relative (float atomics)
 *   dispatch layout    exact (every array)          permute, combine   bitwise
 *   live stand-ins and element-wise kernels (token mix, BF16 add/scale, combine backward, fill,
 *                      FLOP burner)   bitwise
 *   expert FFN         |gpu - cpu| <= 2e-2 |cpu| + 2e-2 max|cpu|   (BF16 intermediates: one flipped
 *                      rounding of h1/h3 is 2^-8 relative, then propagated through W2)
 *   all-to-all         bitwise, flat and hierarchical (needs >= 2 GPUs; one host thread per GPU)
 *   end to end (1 GPU) GPU pipeline vs moe_layer_ref_cpu, same tolerance as the FFN.
 *   host-probe kernels tick counter exact after N ticks; spin flag exact, and a spin of C cycles
 *                      lasts at least C / (rated SM clock) (the SM clock never exceeds it)
 *   host probe         runs every section; the device's tick counter equals the count of ticks the
 *                      configuration implies; every "behind a spin" loop found the GPU still busy. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "kernels/moe_kernels.h"

#ifdef MOESIM_HAVE_CUDA

#include <gsl/gsl_rng.h>
#include <pthread.h>

#define G_OK(call) assert_int_equal((call), MOE_OK)

static int need_gpus(int n) {
    int have = moe_gpu_count();
    if (have >= n) return 1;
    if (have == 0)
        print_message("no GPU: skipped\n");
    else
        print_message("needs %d GPUs, found %d: skipped\n", n, have);
    return 0;
}

#define REQUIRE_GPUS(n)                                                                          \
    do {                                                                                         \
        if (!need_gpus(n)) skip();                                                               \
    } while (0)

static void *dup_to_gpu(const void *h, size_t bytes) {
    void *d = NULL;
    G_OK(moe_gpu_malloc(&d, bytes));
    G_OK(moe_gpu_memcpy_h2d(d, h, bytes));
    return d;
}

static void *gpu_alloc(size_t bytes) {
    void *d = NULL;
    G_OK(moe_gpu_malloc(&d, bytes));
    return d;
}

static void fill_bf16(gsl_rng *r, moe_bf16 *v, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) v[i] = moe_f32_to_bf16((float)((gsl_rng_uniform(r) * 2 - 1) * scale));
}

static gsl_rng *rng_new(unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

/* ---- router GEMM --------------------------------------------------------------------------- */
static void test_gpu_router_logits(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    const int T = 96, H = 256, E = 64;
    gsl_rng *r = rng_new(1);
    moe_bf16 *x = malloc((size_t)T * H * 2), *wg = malloc((size_t)H * E * 2);
    fill_bf16(r, x, (size_t)T * H, 1.0);
    fill_bf16(r, wg, (size_t)H * E, 0.1);
    float *ref = malloc((size_t)T * E * 4), *got = malloc((size_t)T * E * 4);
    moe_router_logits_cpu(x, wg, ref, T, H, E);
    void *cb, *dx = dup_to_gpu(x, (size_t)T * H * 2), *dw = dup_to_gpu(wg, (size_t)H * E * 2);
    float *dl = gpu_alloc((size_t)T * E * 4);
    G_OK(moe_cublas_create(&cb));
    G_OK(moe_router_logits_gpu(cb, dx, dw, dl, T, H, E, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dl, (size_t)T * E * 4));
    for (int i = 0; i < T * E; i++)
        if (fabsf(got[i] - ref[i]) > 1e-3f * fabsf(ref[i]) + 1e-4f)
            fail_msg("logit %d: gpu %g cpu %g", i, got[i], ref[i]);
    moe_cublas_destroy(cb);
    moe_gpu_free(dx), moe_gpu_free(dw), moe_gpu_free(dl);
    free(x), free(wg), free(ref), free(got);
    gsl_rng_free(r);
}

/* ---- gating --------------------------------------------------------------------------------- */
static void check_gating(const moe_gate_cfg *c, int T, const float *logits, const float *bias) {
    const int E = c->num_experts, K = c->top_k;
    int32_t *ri = malloc((size_t)T * K * 4), *gi = malloc((size_t)T * K * 4);
    float *rw = malloc((size_t)T * K * 4), *gw = malloc((size_t)T * K * 4);
    int32_t rc[MOE_MAX_EXPERTS], gc[MOE_MAX_EXPERTS];
    float rp[MOE_MAX_EXPERTS], gp[MOE_MAX_EXPERTS];
    G_OK(moe_topk_gating_cpu(logits, bias, c, T, ri, rw, rc, rp));
    float *dl = dup_to_gpu(logits, (size_t)T * E * 4);
    float *db = bias ? dup_to_gpu(bias, (size_t)E * 4) : NULL;
    int32_t *di = gpu_alloc((size_t)T * K * 4), *dc = gpu_alloc((size_t)E * 4);
    float *dw = gpu_alloc((size_t)T * K * 4), *dp = gpu_alloc((size_t)E * 4);
    G_OK(moe_topk_gating_gpu(dl, db, c, T, di, dw, dc, dp, NULL));
    G_OK(moe_gpu_memcpy_d2h(gi, di, (size_t)T * K * 4));
    G_OK(moe_gpu_memcpy_d2h(gw, dw, (size_t)T * K * 4));
    G_OK(moe_gpu_memcpy_d2h(gc, dc, (size_t)E * 4));
    G_OK(moe_gpu_memcpy_d2h(gp, dp, (size_t)E * 4));
    assert_memory_equal(gi, ri, (size_t)T * K * 4);
    assert_memory_equal(gc, rc, (size_t)E * 4);
    for (int i = 0; i < T * K; i++)
        if (fabsf(gw[i] - rw[i]) > 1e-5f * fabsf(rw[i]) + 1e-7f)
            fail_msg("weight %d: gpu %g cpu %g", i, gw[i], rw[i]);
    for (int e = 0; e < E; e++)
        if (fabsf(gp[e] - rp[e]) > 1e-4f * fabsf(rp[e]) + 1e-6f)
            fail_msg("prob_sum %d: gpu %g cpu %g", e, gp[e], rp[e]);
    moe_gpu_free(dl), moe_gpu_free(db), moe_gpu_free(di), moe_gpu_free(dc), moe_gpu_free(dw),
        moe_gpu_free(dp);
    free(ri), free(gi), free(rw), free(gw);
}

static void test_gpu_gating_all_modes(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    const int T = 300;
    gsl_rng *r = rng_new(2);
    float *logits = malloc((size_t)T * 256 * 4), bias[256];
    for (int i = 0; i < T * 256; i++) logits[i] = (float)(gsl_rng_uniform(r) * 8 - 4);
    for (int e = 0; e < 256; e++) bias[e] = (float)(gsl_rng_uniform(r) * 0.05);
    moe_gate_cfg c = moe_gate_cfg_default(8, 2); /* Mixtral-like */
    check_gating(&c, T, logits, NULL);
    c = moe_gate_cfg_deepseek_v3(256); /* sigmoid, 8 groups keep 4, top-8, scaling, bias */
    check_gating(&c, T, logits, bias);
    c = moe_gate_cfg_default(64, 6); /* node-limited, softmax */
    c.n_nodes = 8, c.topk_nodes = 3;
    check_gating(&c, T, logits, NULL);
    c = moe_gate_cfg_default(1024, 16); /* the largest configuration */
    c.score = MOE_SCORE_SIGMOID;
    float *big = malloc((size_t)40 * 1024 * 4);
    for (int i = 0; i < 40 * 1024; i++) big[i] = (float)(gsl_rng_uniform(r) * 8 - 4);
    check_gating(&c, 40, big, NULL);
    /* exact ties: lower index wins on the GPU too */
    float flat[2 * 16] = {0};
    c = moe_gate_cfg_default(16, 4);
    c.n_groups = 4, c.topk_groups = 2;
    check_gating(&c, 2, flat, NULL);
    free(logits), free(big);
    gsl_rng_free(r);
}

/* ---- dispatch layout + permute + combine ---------------------------------------------------- */
static void check_layout(int T, int K, int E, int R, int cap, const int32_t *idx) {
    const size_t A = (size_t)T * K;
    size_t n32 = 2 * (size_t)E + 2 * (size_t)R + 2 * A + 2;
    int32_t *h = malloc(n32 * 4), *g = malloc(n32 * 4);
    moe_dispatch_layout hl = {h, h + E, h + 2 * E, h + 2 * E + R, h + 2 * E + 2 * R,
                              h + 2 * E + 2 * R + A, h + 2 * E + 2 * R + 2 * A};
    G_OK(moe_dispatch_layout_cpu(idx, T, K, E, R, cap, &hl));
    int32_t *d = gpu_alloc(n32 * 4), *di = dup_to_gpu(idx, A * 4);
    moe_dispatch_layout dl = {d, d + E, d + 2 * E, d + 2 * E + R, d + 2 * E + 2 * R,
                              d + 2 * E + 2 * R + A, d + 2 * E + 2 * R + 2 * A};
    size_t wb = 0;
    G_OK(moe_dispatch_layout_gpu(di, T, K, E, R, cap, &dl, NULL, &wb, NULL));
    void *work = gpu_alloc(wb);
    G_OK(moe_dispatch_layout_gpu(di, T, K, E, R, cap, &dl, work, &wb, NULL));
    G_OK(moe_gpu_memcpy_d2h(g, d, n32 * 4));
    assert_memory_equal(g, h, n32 * 4);
    moe_gpu_free(d), moe_gpu_free(di), moe_gpu_free(work);
    free(h), free(g);
}

static void test_gpu_dispatch_layout_exact(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    gsl_rng *r = rng_new(3);
    const int T = 1000, K = 8, E = 64;
    int32_t *idx = malloc((size_t)T * K * 4);
    for (int t = 0; t < T; t++) /* distinct experts per token, skewed towards low ids */
        for (int k = 0; k < K; k++) {
            int e;
            int dup;
            do {
                double u = gsl_rng_uniform(r);
                e = (int)(u * u * E);
                dup = 0;
                for (int j = 0; j < k; j++) dup |= idx[t * K + j] == e;
            } while (dup);
            idx[t * K + k] = e;
        }
    check_layout(T, K, E, 8, -1, idx);
    check_layout(T, K, E, 8, moe_capacity(1.0, T, K, E), idx); /* hot experts drop */
    check_layout(T, K, E, 1, 0, idx);                           /* everything drops */
    free(idx);
    gsl_rng_free(r);
}

/* Random routing of T tokens (uniform logits, top-K of E, gate weights into w[T*K]) and its dispatch
 * layout over R ranks at capacity 1.0 (drops on hot experts) into *hl; returns the layout's int32
 * buffer (free it). */
static int32_t *random_layout(gsl_rng *r, int T, int K, int E, int R, float *w, moe_dispatch_layout *hl) {
    const size_t A = (size_t)T * K;
    float *logits = malloc((size_t)T * E * 4);
    int32_t *idx = malloc(A * 4);
    for (int i = 0; i < T * E; i++) logits[i] = (float)gsl_rng_uniform(r);
    moe_gate_cfg c = moe_gate_cfg_default(E, K);
    G_OK(moe_topk_gating_cpu(logits, NULL, &c, T, idx, w, NULL, NULL));
    size_t n32 = 2 * (size_t)E + 2 * (size_t)R + 2 * A + 2;
    int32_t *lm = malloc(n32 * 4);
    *hl = (moe_dispatch_layout){lm, lm + E, lm + 2 * E, lm + 2 * E + R, lm + 2 * E + 2 * R,
                                lm + 2 * E + 2 * R + A, lm + 2 * E + 2 * R + 2 * A};
    G_OK(moe_dispatch_layout_cpu(idx, T, K, E, R, moe_capacity(1.0, T, K, E), hl));
    free(logits), free(idx);
    return lm;
}

static void test_gpu_permute_and_combine_bitwise(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    gsl_rng *r = rng_new(4);
    const int T = 513, H = 200, E = 32, K = 4, R = 4; /* H*2 = 400 B: not a multiple of 16 */
    const int Hs[2] = {H, 256};                        /* ... and one that is (vector path) */
    for (int v = 0; v < 2; v++) {
        const int h = Hs[v];
        const size_t A = (size_t)T * K;
        moe_bf16 *x = malloc((size_t)T * h * 2), *y = malloc(A * h * 2);
        float *w = malloc(A * 4);
        fill_bf16(r, x, (size_t)T * h, 3.0);
        fill_bf16(r, y, A * h, 3.0);
        moe_dispatch_layout hl;
        int32_t *lm = random_layout(r, T, K, E, R, w, &hl);
        size_t n32 = 2 * (size_t)E + 2 * (size_t)R + 2 * A + 2;
        int n_rows = hl.totals[0];
        moe_bf16 *send_ref = calloc(A * h, 2), *send_gpu = calloc(A * h, 2);
        moe_bf16 *out_ref = malloc((size_t)T * h * 2), *out_gpu = malloc((size_t)T * h * 2);
        moe_permute_cpu(x, hl.row_token, n_rows, h, send_ref);
        moe_combine_cpu(y, hl.slot, w, T, K, h, out_ref);
        int32_t *dlm = dup_to_gpu(lm, n32 * 4);
        moe_bf16 *dx = dup_to_gpu(x, (size_t)T * h * 2), *dy = dup_to_gpu(y, A * h * 2);
        moe_bf16 *dsend = dup_to_gpu(send_gpu, A * h * 2), *dout = gpu_alloc((size_t)T * h * 2);
        float *dw = dup_to_gpu(w, A * 4);
        const int32_t *d_row_token = dlm + (hl.row_token - lm), *d_slot = dlm + (hl.slot - lm),
                      *d_totals = dlm + (hl.totals - lm);
        G_OK(moe_permute_gpu(dx, d_row_token, d_totals, (int)A, h, dsend, NULL));
        G_OK(moe_combine_gpu(dy, d_slot, dw, T, K, h, dout, NULL));
        G_OK(moe_gpu_memcpy_d2h(send_gpu, dsend, A * h * 2));
        G_OK(moe_gpu_memcpy_d2h(out_gpu, dout, (size_t)T * h * 2));
        assert_memory_equal(send_gpu, send_ref, A * h * 2); /* rows past n_rows untouched (0) */
        assert_memory_equal(out_gpu, out_ref, (size_t)T * h * 2);
        moe_gpu_free(dlm), moe_gpu_free(dx), moe_gpu_free(dy), moe_gpu_free(dsend),
            moe_gpu_free(dout), moe_gpu_free(dw);
        free(x), free(y), free(w), free(lm), free(send_ref), free(send_gpu),
            free(out_ref), free(out_gpu);
    }
    gsl_rng_free(r);
}

/* ---- live stand-ins and element-wise kernels (moe_kernels.h section 9): bitwise ---------------- */
static void test_gpu_live_kernels_bitwise(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    gsl_rng *r = rng_new(9);
    const int T = 97, H = 200, K = 4;
    const size_t TH = (size_t)T * H, A = (size_t)T * K;
    moe_bf16 *x = malloc(TH * 2), *b = malloc(TH * 2), *ref = malloc(A * H * 2), *got = malloc(A * H * 2);
    fill_bf16(r, x, TH, 3.0);
    fill_bf16(r, b, TH, 3.0);
    moe_bf16 *dx = dup_to_gpu(x, TH * 2), *db = dup_to_gpu(b, TH * 2), *dy = gpu_alloc(A * H * 2);

    moe_token_mix_cpu(x, T, H, ref);
    G_OK(moe_token_mix_gpu(dx, T, H, dy, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dy, TH * 2));
    assert_memory_equal(got, ref, TH * 2);

    moe_bf16_add_cpu(x, b, TH, ref);
    G_OK(moe_bf16_add_gpu(dx, db, TH, dy, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dy, TH * 2));
    assert_memory_equal(got, ref, TH * 2);

    moe_bf16_scale_cpu(x, 1.0f / 97.0f, TH, ref);
    G_OK(moe_bf16_scale_gpu(dx, 1.0f / 97.0f, TH, dy, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dy, TH * 2));
    assert_memory_equal(got, ref, TH * 2);

    /* the combine's backward over a real layout with drops (capacity 1.0) */
    float *w = malloc(A * 4);
    moe_dispatch_layout hl;
    int32_t *lm = random_layout(r, T, K, 16, 4, w, &hl);
    memset(ref, 0, A * H * 2);
    moe_unpermute_bwd_cpu(x, hl.slot, w, T, K, H, ref);
    int32_t *dslot = dup_to_gpu(hl.slot, A * 4);
    float *dw = dup_to_gpu(w, A * 4);
    G_OK(moe_gpu_memset(dy, 0, A * H * 2));
    G_OK(moe_unpermute_bwd_gpu(dx, dslot, dw, T, K, H, dy, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dy, A * H * 2));
    assert_memory_equal(got, ref, A * H * 2);

    enum { L = 1000 };
    float fref[L], fgot[L];
    float *df = gpu_alloc(L * 4);
    moe_fill_f32_cpu(fref, 1.0f, L);
    G_OK(moe_fill_f32_gpu(df, 1.0f, L, NULL));
    G_OK(moe_gpu_memcpy_d2h(fgot, df, L * 4));
    assert_memory_equal(fgot, fref, L * 4);
    moe_flop_burn_cpu(777, L, fref);
    G_OK(moe_flop_burn_gpu(777, L, df, NULL));
    G_OK(moe_gpu_memcpy_d2h(fgot, df, L * 4));
    assert_memory_equal(fgot, fref, L * 4);

    moe_gpu_free(dx), moe_gpu_free(db), moe_gpu_free(dy), moe_gpu_free(dslot), moe_gpu_free(dw), moe_gpu_free(df);
    free(x), free(b), free(ref), free(got), free(w), free(lm);
    gsl_rng_free(r);
}

/* ---- expert FFN ---------------------------------------------------------------------------- */
static void compare_bf16(const moe_bf16 *got, const moe_bf16 *ref, size_t n, const char *what) {
    double maxref = 0;
    for (size_t i = 0; i < n; i++) maxref = fmax(maxref, fabs(moe_bf16_to_f32(ref[i])));
    for (size_t i = 0; i < n; i++) {
        double a = moe_bf16_to_f32(got[i]), b = moe_bf16_to_f32(ref[i]);
        if (!(fabs(a - b) <= 2e-2 * fabs(b) + 2e-2 * maxref))
            fail_msg("%s elem %zu: gpu %g cpu %g (max|cpu| %g)", what, i, a, b, maxref);
    }
}

static void test_gpu_expert_ffn_grouped(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    gsl_rng *r = rng_new(5);
    const int H = 256, F = 128, EL = 4, n_seg = 12;
    const int32_t seg_rows[12] = {5, 0, 17, 1, 64, 3, 0, 9, 33, 2, 128, 7}; /* empty ones too */
    int32_t seg_expert[12];
    int64_t rows = 0;
    for (int s = 0; s < n_seg; s++) seg_expert[s] = s % EL, rows += seg_rows[s];
    moe_bf16 *x = malloc((size_t)rows * H * 2), *yr = malloc((size_t)rows * H * 2),
             *yg = malloc((size_t)rows * H * 2);
    moe_bf16 *w1 = malloc((size_t)EL * H * F * 2), *w3 = malloc((size_t)EL * H * F * 2),
             *w2 = malloc((size_t)EL * F * H * 2);
    fill_bf16(r, x, (size_t)rows * H, 1.0);
    fill_bf16(r, w1, (size_t)EL * H * F, 1.0 / 16);
    fill_bf16(r, w3, (size_t)EL * H * F, 1.0 / 16);
    fill_bf16(r, w2, (size_t)EL * F * H, 1.0 / 11);
    float *work = malloc(moe_expert_ffn_cpu_work_floats(H, F) * 4);
    moe_expert_ffn_cpu(x, n_seg, seg_rows, seg_expert, w1, w3, w2, H, F, yr, work);
    void *cb;
    G_OK(moe_cublas_create(&cb));
    moe_bf16 *dx = dup_to_gpu(x, (size_t)rows * H * 2), *dy = gpu_alloc((size_t)rows * H * 2);
    moe_bf16 *d1 = dup_to_gpu(w1, (size_t)EL * H * F * 2), *d3 = dup_to_gpu(w3, (size_t)EL * H * F * 2),
             *d2 = dup_to_gpu(w2, (size_t)EL * F * H * 2);
    void *dwork = gpu_alloc(moe_expert_ffn_gpu_work_bytes(rows, n_seg, F));
    G_OK(moe_expert_ffn_gpu(cb, dx, n_seg, seg_rows, seg_expert, d1, d3, d2, H, F, dy, dwork, NULL));
    G_OK(moe_gpu_memcpy_d2h(yg, dy, (size_t)rows * H * 2));
    compare_bf16(yg, yr, (size_t)rows * H, "ffn");
    moe_cublas_destroy(cb);
    moe_gpu_free(dx), moe_gpu_free(dy), moe_gpu_free(d1), moe_gpu_free(d3), moe_gpu_free(d2),
        moe_gpu_free(dwork);
    free(x), free(yr), free(yg), free(w1), free(w3), free(w2), free(work);
    gsl_rng_free(r);
}

/* ---- all-to-all: one thread per GPU ---------------------------------------------------------- */
typedef struct {
    int rank, R, G, hier;
    void *comm, *send, *recv, *staging;
    const int32_t *sc, *so, *rc, *ro, *node_sc; /* this rank's rows; node block */
    size_t row_bytes;
    int status;
} a2a_job;

static void *a2a_thread(void *p) {
    a2a_job *j = p;
    j->status = moe_gpu_set_device(j->rank);
    if (j->status == MOE_OK)
        j->status = j->hier ? moe_a2a_hier_nccl(j->send, j->sc, j->so, j->recv, j->rc, j->ro,
                                                j->node_sc, j->G, j->staging, j->row_bytes, j->comm, NULL)
                            : moe_a2a_nccl(j->send, j->sc, j->so, j->recv, j->rc, j->ro, j->row_bytes,
                                           j->comm, NULL);
    if (j->status == MOE_OK) j->status = moe_gpu_stream_sync(NULL);
    return NULL;
}

static void test_gpu_a2a_flat_and_hierarchical(void **state) {
    (void)state;
    REQUIRE_GPUS(2);
    int R = moe_gpu_count() > 8 ? 8 : moe_gpu_count();
    int G = R % 2 == 0 && R > 2 ? R / 2 : 1; /* two "nodes" when possible */
    const size_t rb = 6;                     /* odd row size on purpose */
    int32_t *sc = malloc((size_t)R * R * 4), *so = malloc((size_t)R * R * 4),
            *rc = malloc((size_t)R * R * 4), *ro = malloc((size_t)R * R * 4);
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++) sc[s * R + d] = (s * 7 + d * 3) % 5 * 100; /* some zeros */
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++) rc[d * R + s] = sc[s * R + d];
    void **send = calloc((size_t)R, sizeof(void *)), **recv_ref = calloc((size_t)R, sizeof(void *));
    int64_t *in_rows = calloc((size_t)R, sizeof(int64_t));
    void **comms = calloc((size_t)R, sizeof(void *));
    G_OK(moe_nccl_comms_init_all(R, comms));
    for (int hier = 0; hier < 2; hier++) {
        a2a_job *jobs = calloc((size_t)R, sizeof *jobs);
        for (int r = 0; r < R; r++) {
            int64_t out = moe_exclusive_scan_i32(sc + r * R, R, so + r * R);
            in_rows[r] = moe_exclusive_scan_i32(rc + r * R, R, ro + r * R);
            if (!send[r]) {
                send[r] = malloc((size_t)out * rb + 1);
                for (size_t i = 0; i < (size_t)out * rb; i++) ((uint8_t *)send[r])[i] = (uint8_t)(r * 31 + i * 7);
                recv_ref[r] = calloc((size_t)in_rows[r] * rb + 1, 1);
            }
            G_OK(moe_gpu_set_device(r));
            jobs[r] = (a2a_job){r, R, G, hier, comms[r], dup_to_gpu(send[r], (size_t)out * rb + 1),
                                gpu_alloc((size_t)in_rows[r] * rb + 1), NULL, sc + r * R, so + r * R,
                                rc + r * R, ro + r * R, sc + (size_t)(r / G) * G * R, rb, -1};
            int64_t st = moe_a2a_hier_staging_rows(jobs[r].node_sc, R, G, r % G);
            jobs[r].staging = gpu_alloc((size_t)st * rb + 1);
        }
        G_OK(moe_a2a_cpu(R, G, (const void *const *)send, sc, so, recv_ref, rc, ro, rb, NULL));
        pthread_t *th = calloc((size_t)R, sizeof *th);
        for (int r = 0; r < R; r++) pthread_create(&th[r], NULL, a2a_thread, &jobs[r]);
        for (int r = 0; r < R; r++) pthread_join(th[r], NULL);
        for (int r = 0; r < R; r++) {
            assert_int_equal(jobs[r].status, MOE_OK);
            uint8_t *got = malloc((size_t)in_rows[r] * rb + 1);
            G_OK(moe_gpu_set_device(r));
            G_OK(moe_gpu_memcpy_d2h(got, jobs[r].recv, (size_t)in_rows[r] * rb));
            assert_memory_equal(got, recv_ref[r], (size_t)in_rows[r] * rb);
            free(got);
            moe_gpu_free(jobs[r].send), moe_gpu_free(jobs[r].recv), moe_gpu_free(jobs[r].staging);
        }
        free(th), free(jobs);
    }
    for (int r = 0; r < R; r++) {
        moe_gpu_set_device(r);
        moe_nccl_comm_destroy(comms[r]);
        free(send[r]), free(recv_ref[r]);
    }
    moe_gpu_set_device(0);
    free(sc), free(so), free(rc), free(ro), free(send), free(recv_ref), free(in_rows), free(comms);
}

/* ---- end to end on one GPU: the whole layer vs the dense reference ------------------------------ */
static void test_gpu_layer_equals_dense_reference(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    gsl_rng *r = rng_new(6);
    const int T = 200, H = 128, F = 64, E = 16, K = 4;
    const size_t A = (size_t)T * K;
    moe_bf16 *x = malloc((size_t)T * H * 2), *wg = malloc((size_t)H * E * 2),
             *w1 = malloc((size_t)E * H * F * 2), *w3 = malloc((size_t)E * H * F * 2),
             *w2 = malloc((size_t)E * F * H * 2), *ref = malloc((size_t)T * H * 2),
             *got = malloc((size_t)T * H * 2);
    fill_bf16(r, x, (size_t)T * H, 1.0);
    fill_bf16(r, wg, (size_t)H * E, 0.3);
    fill_bf16(r, w1, (size_t)E * H * F, 1.0 / 11);
    fill_bf16(r, w3, (size_t)E * H * F, 1.0 / 11);
    fill_bf16(r, w2, (size_t)E * F * H, 1.0 / 8);
    moe_gate_cfg c = moe_gate_cfg_default(E, K);
    c.score = MOE_SCORE_SIGMOID, c.n_groups = 4, c.topk_groups = 2;
    int cap = moe_capacity(1.5, T, K, E);
    G_OK(moe_layer_ref_cpu(x, T, H, F, wg, &c, NULL, cap, w1, w3, w2, ref));

    void *cb;
    G_OK(moe_cublas_create(&cb));
    moe_bf16 *dx = dup_to_gpu(x, (size_t)T * H * 2), *dwg = dup_to_gpu(wg, (size_t)H * E * 2),
             *d1 = dup_to_gpu(w1, (size_t)E * H * F * 2), *d3 = dup_to_gpu(w3, (size_t)E * H * F * 2),
             *d2 = dup_to_gpu(w2, (size_t)E * F * H * 2);
    float *dl = gpu_alloc((size_t)T * E * 4), *dw = gpu_alloc(A * 4);
    int32_t *di = gpu_alloc(A * 4), *lm = gpu_alloc((2 * (size_t)E + 2 + 2 * A + 2) * 4);
    moe_dispatch_layout lay = {lm, lm + E, lm + 2 * E, lm + 2 * E + 1, lm + 2 * E + 2,
                               lm + 2 * E + 2 + A, lm + 2 * E + 2 + 2 * A};
    moe_bf16 *dsend = gpu_alloc(A * H * 2), *dy = gpu_alloc(A * H * 2), *dout = gpu_alloc((size_t)T * H * 2);
    size_t wb = 0;
    G_OK(moe_dispatch_layout_gpu(di, T, K, E, 1, cap, &lay, NULL, &wb, NULL));
    void *lwork = gpu_alloc(wb);
    G_OK(moe_router_logits_gpu(cb, dx, dwg, dl, T, H, E, NULL));
    G_OK(moe_topk_gating_gpu(dl, NULL, &c, T, di, dw, NULL, NULL, NULL));
    G_OK(moe_dispatch_layout_gpu(di, T, K, E, 1, cap, &lay, lwork, &wb, NULL));
    G_OK(moe_permute_gpu(dx, lay.row_token, lay.totals, (int)A, H, dsend, NULL));
    int32_t counts[16], seg_expert[16];
    G_OK(moe_gpu_memcpy_d2h(counts, lay.expert_counts, sizeof counts));
    for (int e = 0; e < E; e++) seg_expert[e] = e;
    int64_t rows = 0;
    for (int e = 0; e < E; e++) rows += counts[e];
    void *fwork = gpu_alloc(moe_expert_ffn_gpu_work_bytes(rows, E, F));
    G_OK(moe_expert_ffn_gpu(cb, dsend, E, counts, seg_expert, d1, d3, d2, H, F, dy, fwork, NULL));
    G_OK(moe_combine_gpu(dy, lay.slot, dw, T, K, H, dout, NULL));
    G_OK(moe_gpu_memcpy_d2h(got, dout, (size_t)T * H * 2));
    compare_bf16(got, ref, (size_t)T * H, "layer");
    moe_cublas_destroy(cb);
    void *bufs[] = {dx, dwg, d1, d3, d2, dl, dw, di, lm, dsend, dy, dout, lwork, fwork};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) moe_gpu_free(bufs[i]);
    free(x), free(wg), free(w1), free(w3), free(w2), free(ref), free(got);
    gsl_rng_free(r);
}

/* ---- the timing API runs every kernel --------------------------------------------------------- */
static void test_gpu_bench_api(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    moe_bench_shape s = {.tokens = 256, .hidden = 512, .ffn_hidden = 256, .experts = 16, .top_k = 4,
                         .ranks = 1, .gpus_per_node = 1, .capacity_factor = 0.0,
                         .score = MOE_SCORE_SOFTMAX, .seed = 9};
    moe_bench_gpu *b = NULL;
    G_OK(moe_bench_gpu_create(&s, 0, &b));
    for (int id = 0; id < MOE_KERNEL_COUNT; id++) {
        float ms = -1;
        G_OK(moe_bench_gpu_time(b, (moe_kernel_id)id, 1, 3, &ms));
        assert_true(ms > 0.0f);
    }
    moe_bench_gpu_destroy(b);
    moe_gpu_info info;
    G_OK(moe_gpu_get_info(0, &info));
    assert_true(info.sm_count > 0);
    print_message("GPU: %s, %d SMs, CUDA runtime %d, cuBLAS %d, NCCL %d\n", info.name, info.sm_count,
                  info.runtime_version, info.cublas_version, info.nccl_version);
}

/* ---- the host-overhead probe's kernels and the probe itself ----------------------------------- */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_gpu_tick_and_spin(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    int32_t *dc = gpu_alloc(4), *df = gpu_alloc(4);
    G_OK(moe_gpu_memset(dc, 0, 4));
    G_OK(moe_gpu_memset(df, 0, 4));
    int32_t ref = 0, got = -1;
    for (int i = 0; i < 1000; i++) {
        G_OK(moe_tick_gpu(dc, NULL));
        moe_tick_cpu(&ref);
    }
    G_OK(moe_gpu_memcpy_d2h(&got, dc, 4));
    assert_int_equal(got, ref);

    moe_gpu_info info;
    G_OK(moe_gpu_get_info(0, &info));
    assert_true(info.sm_clock_khz > 0);
    G_OK(moe_spin_gpu(1000, df, 1, NULL)); /* load the kernel before timing it */
    G_OK(moe_gpu_stream_sync(NULL));
    const long long cycles = 20000000; /* about 10 ms at 2 GHz */
    int32_t fref = 0, fgot = 0;
    double t0 = now_s();
    G_OK(moe_spin_gpu(cycles, df, 0x5eed, NULL));
    G_OK(moe_gpu_stream_sync(NULL));
    double dt = now_s() - t0;
    moe_spin_cpu(cycles, &fref, 0x5eed);
    G_OK(moe_gpu_memcpy_d2h(&fgot, df, 4));
    assert_int_equal(fgot, fref);
    double floor_s = (double)cycles / (info.sm_clock_khz * 1e3);
    if (dt < 0.95 * floor_s)
        fail_msg("a spin of %lld cycles took %.3f ms, under %.3f ms at the rated %d kHz", cycles, 1e3 * dt,
                 1e3 * floor_s, info.sm_clock_khz);
    assert_int_equal(moe_spin_gpu(-1, df, 0, NULL), MOE_EINVAL);
    assert_int_equal(moe_spin_gpu(MOE_SPIN_MAX_CYCLES + 1, df, 0, NULL), MOE_EINVAL);
    moe_gpu_free(dc), moe_gpu_free(df);
}

static void check_stat(const char *name, const moe_probe_stat *s, int reps) {
    if (s->reps != reps || !(s->min_us > 0) || !(s->min_us <= s->median_us) || !(s->median_us < 1e5))
        fail_msg("%s: reps %d (want %d), min %g us, median %g us", name, s->reps, reps, s->min_us, s->median_us);
}

static void test_gpu_host_probe(void **state) {
    (void)state;
    REQUIRE_GPUS(1);
    static const moe_gemm_shape shapes[] = {{256, 256, 256}, {1024, 2048, 512}};
    moe_host_probe_cfg c = {.launches = 32, .reps = 3, .sync_reps = 5, .spin_ms = 10, .cublas_calls = 8,
                            .cublas_size = 128, .gemm_shapes = shapes, .n_gemm_shapes = 2, .gemm_warmup = 1,
                            .gemm_iters = 3, .gemm_budget_s = 30};
    moe_host_probe *r = calloc(1, sizeof *r);
    assert_non_null(r);
    moe_host_probe_cfg bad = c;
    bad.launches = 0;
    assert_int_equal(moe_host_probe_run(0, &bad, r), MOE_EINVAL);
    int rc = moe_host_probe_run(0, &c, r);
    for (int i = 0; i < MOE_PROBE_SECTIONS; i++)
        if (r->status[i] != MOE_OK) print_message("section %d: %s\n", i, moe_status_str(r->status[i]));
    assert_int_equal(rc, MOE_OK);
    check_stat("launch_cpu_us", &r->launch_cpu_us, 3);
    check_stat("gpu_kernel_us", &r->gpu_kernel_us, 3);
    check_stat("graph_launch_cpu_us", &r->graph_launch_cpu_us, 3);
    check_stat("graph_gpu_per_node_us", &r->graph_gpu_per_node_us, 3);
    check_stat("sync_idle_us", &r->sync_idle_us, 5);
    check_stat("sync_after_tick_us", &r->sync_after_tick_us, 5);
    check_stat("cublas_gemm_cpu_us", &r->cublas_gemm_cpu_us, 3);
    /* ticks: 1 at setup, reps x N in the launch loops, (1 + reps) x N graph nodes, sync_reps */
    assert_int_equal(r->ticks_expected, 1 + 3 * 32 + 4 * 32 + 5);
    assert_int_equal(r->ticks_counted, r->ticks_expected);
    assert_int_equal(r->busy_loops, 3 * 3); /* launch, graph, cuBLAS loops */
    assert_int_equal(r->busy_loops_still_busy, r->busy_loops);
    assert_true(r->spin_event_ms >= 0.95 * c.spin_ms);
    assert_int_equal(r->n_gemm, 2);
    assert_false(r->gemm_truncated);
    for (int i = 0; i < 2; i++) {
        double tflops = 2.0 * shapes[i].m * shapes[i].n * shapes[i].k / (r->gemm[i].time_us * 1e6);
        if (!(r->gemm[i].time_us > 0) || !(tflops < 5000))
            fail_msg("GEMM %d: %g us (%g TFLOP/s)", i, r->gemm[i].time_us, tflops);
    }
    print_message("probe: launch %.2f us (GPU %.2f us/kernel), graph %.1f us (GPU %.2f us/node), sync %.1f / %.1f us, "
                  "cublasGemmEx %.2f us\n",
                  r->launch_cpu_us.median_us, r->gpu_kernel_us.median_us, r->graph_launch_cpu_us.median_us,
                  r->graph_gpu_per_node_us.median_us, r->sync_idle_us.median_us, r->sync_after_tick_us.median_us,
                  r->cublas_gemm_cpu_us.median_us);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_router_logits),
        cmocka_unit_test(test_gpu_gating_all_modes),
        cmocka_unit_test(test_gpu_dispatch_layout_exact),
        cmocka_unit_test(test_gpu_permute_and_combine_bitwise),
        cmocka_unit_test(test_gpu_live_kernels_bitwise),
        cmocka_unit_test(test_gpu_expert_ffn_grouped),
        cmocka_unit_test(test_gpu_a2a_flat_and_hierarchical),
        cmocka_unit_test(test_gpu_layer_equals_dense_reference),
        cmocka_unit_test(test_gpu_bench_api),
        cmocka_unit_test(test_gpu_tick_and_spin),
        cmocka_unit_test(test_gpu_host_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* built without moesim_cuda: say so, visibly */

static void test_gpu_kernels_not_built(void **state) {
    (void)state;
    print_message("built without moesim_cuda (MOESIM_HAVE_CUDA undefined): GPU tests skipped\n");
    skip();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpu_kernels_not_built)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
