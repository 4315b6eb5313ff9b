// backend_nccl.cu — simlive's "nccl" backend (see backend_nccl.h): CUDA kernels of kernels/ + NCCL.
#include "sim/live/backend_nccl.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "kernels/moe_kernels.h"

namespace {

// ---- error helpers ----------------------------------------------------------------------------
int cuda_fail(moe_error *err, cudaError_t e, const char *what) {
    return moe_error_set(err, EXIT_RUNTIME, "live/nccl: %s: %s", what, cudaGetErrorString(e));
}
int nccl_fail(moe_error *err, ncclResult_t r, const char *what) {
    return moe_error_set(err, EXIT_RUNTIME, "live/nccl: %s: %s", what, ncclGetErrorString(r));
}
#define CU(call, what) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return cuda_fail(err, e_, what); } while (0)
#define NC(call, what) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) return nccl_fail(err, r_, what); } while (0)
#define MK(call, what) do { int s_ = (call); if (s_ != MOE_OK) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: %s: %s", what, moe_status_str(s_)); } while (0)

// The stand-in compute runs the FLOP burner (kernels/flop_burn.cu) over about one wave of threads of
// an H100/H200 (132 SMs x 1024 threads).
constexpr int kBurnLanes = 132 * 1024;

template <typename T> T *dalloc(size_t n) {
    void *p = nullptr;
    if (cudaMalloc(&p, (n ? n : 1) * sizeof(T)) != cudaSuccess) return nullptr;
    cudaMemset(p, 0, (n ? n : 1) * sizeof(T));
    return static_cast<T *>(p);
}

// One MoE layer instance on the GPU.
struct Inst {
    bool live = false;
    uint16_t *x_in = nullptr, *out = nullptr, *send = nullptr, *recv = nullptr, *y_recv = nullptr, *y_send = nullptr;
    uint16_t *g_send = nullptr, *g_recv = nullptr, *g_xrecv = nullptr, *g_back = nullptr;
    float *logits = nullptr, *topk_w = nullptr;
    int32_t *topk_idx = nullptr, *exp_counts = nullptr, *exp_offsets = nullptr, *rank_counts = nullptr,
            *rank_offsets = nullptr, *slot = nullptr, *row_token = nullptr, *totals = nullptr;
    int32_t *d_meta_send = nullptr, *d_meta_recv = nullptr;
    std::vector<int32_t> h_exp, h_rank, h_rank_off, h_seg, h_recv, h_recv_off;
    int n_rows = 0;
    long n_recv = 0;
    void release() {
        void *ptrs[] = {x_in, out, send, recv, y_recv, y_send, g_send, g_recv, g_xrecv, g_back, logits, topk_w,
                        topk_idx, exp_counts, exp_offsets, rank_counts, rank_offsets, slot, row_token, totals,
                        d_meta_send, d_meta_recv};
        for (void *p : ptrs) if (p) cudaFree(p);
        *this = Inst();
    }
};

}  // namespace

struct live_nccl {
    const program *p = nullptr;
    int rank = 0, n_ops = 0;
    live_mpi *mpi = nullptr;
    live_cpu *host = nullptr;        // weights, embedding rows and the CPU reference
    int T = 0, H = 0, F = 0, E = 0, K = 0, R = 1, El = 0, capacity = -1, first_expert = 0, L = 0, mbs = 0, n_chunks = 1;
    ncclComm_t world = nullptr, p2p = nullptr, comm[GROUP_NKINDS] = {};
    cudaStream_t stream[STREAM_N] = {};
    std::vector<cudaEvent_t> ev;     // per op
    void *cublas = nullptr;
    std::vector<uint16_t *> w_gate, w1, w3, w2;   // device, per layer (local experts for w1/w3/w2)
    uint16_t *hidden = nullptr, *grad = nullptr, *tmp = nullptr;
    float *ones = nullptr, *sink = nullptr;
    /* collective buffers per stream: ZeRO-2/3's data-parallel collectives run beside the comm stream's */
    uint16_t *coll_send[STREAM_N] = {}, *coll_recv[STREAM_N] = {};
    size_t coll_cap[STREAM_N] = {};
    std::vector<Inst> inst;          // [L * mbs]
    std::vector<int> a2a_phase;      // per op: 1 = counts in flight, 2 = rows in flight
    void *layout_work = nullptr;
    size_t layout_work_bytes = 0;
    void *ffn_work = nullptr;
    size_t ffn_work_bytes = 0;
};

namespace {

uint16_t *act(live_nccl *g, uint16_t *base, const program_op *o) {
    return base + ((size_t)o->mb * g->n_chunks + o->chunk) * g->T * g->H;
}
Inst *inst_of(live_nccl *g, const program_op *o) {
    if (o->layer < 0 || o->layer >= g->L || o->mb < 0 || o->mb >= g->mbs) return nullptr;
    return &g->inst[(size_t)o->layer * g->mbs + o->mb];
}
ncclComm_t group_comm(live_nccl *g, const program_op *o) { return g->comm[g->p->groups[o->group].kind]; }

int ensure_ffn_work(live_nccl *g, long rows, moe_error *err) {
    size_t need = moe_expert_ffn_gpu_work_bytes(rows, g->R * g->El, g->F);
    if (need <= g->ffn_work_bytes) return 0;
    if (g->ffn_work) cudaFree(g->ffn_work);
    CU(cudaMalloc(&g->ffn_work, need), "cudaMalloc (FFN work)");
    g->ffn_work_bytes = need;
    return 0;
}

int ffn(live_nccl *g, Inst *m, int layer, const uint16_t *rows, uint16_t *y, moe_error *err) {
    if (ensure_ffn_work(g, m->n_recv, err)) return EXIT_RUNTIME;
    std::vector<int32_t> seg_expert((size_t)g->R * g->El);
    for (size_t s = 0; s < seg_expert.size(); s++) seg_expert[s] = (int32_t)(s % g->El);
    MK(moe_expert_ffn_gpu(g->cublas, rows, g->R * g->El, m->h_seg.data(), seg_expert.data(), g->w1[layer],
                          g->w3[layer], g->w2[layer], g->H, g->F, y, g->ffn_work, g->stream[STREAM_COMPUTE]),
       "expert FFN");
    return 0;
}

int router_permute(live_nccl *g, const program_op *o, moe_error *err) {
    Inst *m = inst_of(g, o);
    cudaStream_t s = g->stream[STREAM_COMPUTE];
    int T = g->T, H = g->H, E = g->E, K = g->K;
    if (o->kernel == K_ROUTER_FWD) {
        m->release();
        m->x_in = dalloc<uint16_t>((size_t)T * H); m->logits = dalloc<float>((size_t)T * E);
        m->topk_w = dalloc<float>((size_t)T * K); m->topk_idx = dalloc<int32_t>((size_t)T * K);
        m->exp_counts = dalloc<int32_t>(E); m->exp_offsets = dalloc<int32_t>(E);
        m->rank_counts = dalloc<int32_t>(g->R); m->rank_offsets = dalloc<int32_t>(g->R);
        m->slot = dalloc<int32_t>((size_t)T * K); m->row_token = dalloc<int32_t>((size_t)T * K);
        m->totals = dalloc<int32_t>(2);
        m->send = dalloc<uint16_t>((size_t)T * K * H);
        if (!m->x_in || !m->send) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: out of device memory");
        CU(cudaMemcpyAsync(m->x_in, act(g, g->hidden, o), (size_t)T * H * 2, cudaMemcpyDeviceToDevice, s), "copy x");
        MK(moe_router_logits_gpu(g->cublas, m->x_in, g->w_gate[o->layer], m->logits, T, H, E, s), "router GEMM");
        MK(moe_topk_gating_gpu(m->logits, nullptr, (const moe_gate_cfg *)live_cpu_gate_cfg(g->host), T, m->topk_idx,
                               m->topk_w, nullptr, nullptr, s), "gating");
        m->live = true;
        return 0;
    }
    // K_PERMUTE_FWD: layout on the device, counts to the host (the all-to-all needs them there)
    moe_dispatch_layout lay = {m->exp_counts, m->exp_offsets, m->rank_counts, m->rank_offsets, m->slot, m->row_token, m->totals};
    size_t need = 0;
    MK(moe_dispatch_layout_gpu(m->topk_idx, T, K, E, g->R, g->capacity, &lay, nullptr, &need, s), "layout size");
    if (need > g->layout_work_bytes) {
        if (g->layout_work) cudaFree(g->layout_work);
        CU(cudaMalloc(&g->layout_work, need), "cudaMalloc (layout work)");
        g->layout_work_bytes = need;
    }
    MK(moe_dispatch_layout_gpu(m->topk_idx, T, K, E, g->R, g->capacity, &lay, g->layout_work, &need, s), "layout");
    MK(moe_permute_gpu(m->x_in, m->row_token, m->totals, T * K, H, m->send, s), "permute");
    m->h_exp.resize(E); m->h_rank.resize(g->R); m->h_rank_off.resize(g->R);
    int32_t tot[2];
    CU(cudaMemcpyAsync(m->h_exp.data(), m->exp_counts, E * 4, cudaMemcpyDeviceToHost, s), "counts");
    CU(cudaMemcpyAsync(m->h_rank.data(), m->rank_counts, g->R * 4, cudaMemcpyDeviceToHost, s), "counts");
    CU(cudaMemcpyAsync(m->h_rank_off.data(), m->rank_offsets, g->R * 4, cudaMemcpyDeviceToHost, s), "offsets");
    CU(cudaMemcpyAsync(tot, m->totals, 8, cudaMemcpyDeviceToHost, s), "totals");
    CU(cudaStreamSynchronize(s), "sync");
    m->n_rows = tot[0];
    return 0;
}

// ---- backend functions -------------------------------------------------------------------------------
double nccl_now(void *ctx) { return live_mpi_now_s(static_cast<live_nccl *>(ctx)->mpi); }
int nccl_barrier(void *ctx, moe_error *err) {
    live_nccl *g = static_cast<live_nccl *>(ctx);
    for (int s = 0; s < STREAM_N; s++) CU(cudaStreamSynchronize(g->stream[s]), "sync before barrier");
    return live_mpi_barrier(g->mpi, err);
}
int nccl_idle(void *ctx) { return live_mpi_idle(static_cast<live_nccl *>(ctx)->mpi); }

int nccl_compute(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    (void)i;
    live_nccl *g = static_cast<live_nccl *>(ctx);
    cudaStream_t s = g->stream[STREAM_COMPUTE];
    long TH = (long)g->T * g->H;
    Inst *m = inst_of(g, o);
    bool real = false;
    switch (o->kernel) {
    case K_EMBED_FWD: {
        std::vector<uint16_t> x((size_t)TH);
        live_cpu_embed(g->host, o->mb, x.data());
        CU(cudaMemcpyAsync(act(g, g->hidden, o), x.data(), TH * 2, cudaMemcpyHostToDevice, s), "embed");
        CU(cudaStreamSynchronize(s), "embed sync");
        break;
    }
    case K_ATTN_FWD: case K_DENSE_FFN_FWD: case K_ATTN_BWD_INPUT: case K_DENSE_FFN_BWD_INPUT: {
        uint16_t *x = act(g, o->phase == PHASE_F ? g->hidden : g->grad, o);
        MK(moe_token_mix_gpu(x, g->T, g->H, g->tmp, s), "token mix");
        CU(cudaMemcpyAsync(x, g->tmp, TH * 2, cudaMemcpyDeviceToDevice, s), "mix");
        break;
    }
    case K_ROUTER_FWD: case K_PERMUTE_FWD:
        if (router_permute(g, o, err)) return EXIT_RUNTIME;
        real = true;
        break;
    case K_EXPERT_FWD: case K_EXPERT_BWD_INPUT: case K_EXPERT_BWD_WEIGHT: {
        if (!m || !m->live) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: expert op without routing");
        if (o->kernel == K_EXPERT_FWD) {
            m->y_recv = dalloc<uint16_t>((size_t)m->n_recv * g->H);
            if (ffn(g, m, o->layer, m->recv, m->y_recv, err)) return EXIT_RUNTIME;
        } else if (o->kernel == K_EXPERT_BWD_INPUT) {
            m->g_xrecv = dalloc<uint16_t>((size_t)m->n_recv * g->H);
            if (ffn(g, m, o->layer, m->g_recv, m->g_xrecv, err)) return EXIT_RUNTIME;
        } else {
            uint16_t *t = dalloc<uint16_t>((size_t)m->n_recv * g->H);
            if (m->g_recv && ffn(g, m, o->layer, m->g_recv, t, err)) { cudaFree(t); return EXIT_RUNTIME; }
            CU(cudaStreamSynchronize(s), "sync");
            cudaFree(t);
        }
        *measured = (double)m->n_recv;
        real = true;
        break;
    }
    case K_UNPERMUTE_FWD:
        m->out = dalloc<uint16_t>((size_t)TH);
        MK(moe_combine_gpu(m->y_send, m->slot, m->topk_w, g->T, g->K, g->H, m->out, s), "combine");
        MK(moe_bf16_add_gpu(m->x_in, m->out, TH, act(g, g->hidden, o), s), "residual");
        real = true;
        break;
    case K_UNPERMUTE_BWD:
        m->g_send = dalloc<uint16_t>((size_t)(m->n_rows > 0 ? m->n_rows : 1) * g->H);
        MK(moe_unpermute_bwd_gpu(act(g, g->grad, o), m->slot, m->topk_w, g->T, g->K, g->H, m->g_send, s),
           "unpermute backward");
        real = true;
        break;
    case K_PERMUTE_BWD:
        MK(moe_combine_gpu(m->g_back, m->slot, g->ones, g->T, g->K, g->H, g->tmp, s), "permute bwd");
        MK(moe_bf16_add_gpu(act(g, g->grad, o), g->tmp, TH, act(g, g->grad, o), s), "permute bwd sum");
        real = true;
        break;
    case K_HEAD_LOSS_BWD:       // stand-in loss gradient: g = h x (1/T)
        MK(moe_bf16_scale_gpu(act(g, g->hidden, o), 1.0f / (float)g->T, TH, act(g, g->grad, o), s), "loss gradient");
        break;
    default: break;
    }
    if (!real && o->flops > 0)
        MK(moe_flop_burn_gpu(moe_flop_burn_updates(o->flops, kBurnLanes), kBurnLanes, g->sink, s), "FLOP burner");
    CU(cudaGetLastError(), "kernel launch");
    CU(cudaStreamSynchronize(s), "compute sync");
    return 0;
}

int record(live_nccl *g, int i, int stream, moe_error *err) {
    CU(cudaEventRecord(g->ev[i], g->stream[stream]), "cudaEventRecord");
    return 0;
}

int post_rows(live_nccl *g, int i, const program_op *o, moe_error *err) {
    Inst *m = inst_of(g, o);
    cudaStream_t s = g->stream[STREAM_COMM];
    size_t rb = (size_t)g->H * 2;
    bool fwd = o->phase == PHASE_F;
    const void *send; void *recv;
    const int32_t *sc, *so, *rc, *ro;
    if (o->kind == OP_A2A_DISPATCH) {
        if (fwd) { send = m->send; recv = m->recv; }
        else { m->g_recv = dalloc<uint16_t>((size_t)m->n_recv * g->H); send = m->g_send; recv = m->g_recv; }
        sc = m->h_rank.data(); so = m->h_rank_off.data(); rc = m->h_recv.data(); ro = m->h_recv_off.data();
    } else {
        if (fwd) { m->y_send = dalloc<uint16_t>((size_t)(m->n_rows ? m->n_rows : 1) * g->H); send = m->y_recv; recv = m->y_send; }
        else { m->g_back = dalloc<uint16_t>((size_t)(m->n_rows ? m->n_rows : 1) * g->H); send = m->g_xrecv; recv = m->g_back; }
        sc = m->h_recv.data(); so = m->h_recv_off.data(); rc = m->h_rank.data(); ro = m->h_rank_off.data();
    }
    MK(moe_a2a_nccl(send, sc, so, recv, rc, ro, rb, group_comm(g, o), s), "all-to-all");
    g->a2a_phase[i] = 2;
    return record(g, i, STREAM_COMM, err);
}

int nccl_a2a(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_nccl *g = static_cast<live_nccl *>(ctx);
    Inst *m = inst_of(g, o);
    if (!m || !m->live) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: all-to-all before routing");
    int me = 0;
    NC(ncclCommUserRank(group_comm(g, o), &me), "ncclCommUserRank");
    double rows = 0;
    const std::vector<int32_t> &out = (o->kind == OP_A2A_DISPATCH) ? m->h_rank : m->h_recv;
    for (int j = 0; j < (int)out.size(); j++) if (j != me) rows += out[j];
    if (o->kind == OP_A2A_DISPATCH && o->phase == PHASE_F) {
        // counts first: one "row" of El int32 per peer (DeepEP's notify_dispatch)
        std::vector<int32_t> ones(g->R, 1), offs(g->R);
        for (int r = 0; r < g->R; r++) offs[r] = r;
        m->d_meta_send = dalloc<int32_t>((size_t)g->R * g->El);
        m->d_meta_recv = dalloc<int32_t>((size_t)g->R * g->El);
        CU(cudaMemcpyAsync(m->d_meta_send, m->exp_counts, (size_t)g->R * g->El * 4, cudaMemcpyDeviceToDevice,
                           g->stream[STREAM_COMM]), "counts");
        MK(moe_a2a_nccl(m->d_meta_send, ones.data(), offs.data(), m->d_meta_recv, ones.data(), offs.data(),
                        (size_t)g->El * 4, group_comm(g, o), g->stream[STREAM_COMM]), "count exchange");
        g->a2a_phase[i] = 1;
        *measured = rows * g->H * 2;
        return record(g, i, STREAM_COMM, err);
    }
    *measured = rows * g->H * 2;
    return post_rows(g, i, o, err);
}

int nccl_p2p(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_nccl *g = static_cast<live_nccl *>(ctx);
    size_t bytes = (size_t)g->T * g->H * 2;
    uint16_t *buf = act(g, o->phase == PHASE_F ? g->hidden : g->grad, o);
    if (o->kind == OP_SEND) {
        NC(ncclSend(buf, bytes, ncclUint8, o->peer, g->p2p, g->stream[STREAM_P2P]), "ncclSend");
        *measured = (double)bytes;
    } else {
        NC(ncclRecv(buf, bytes, ncclUint8, o->peer, g->p2p, g->stream[STREAM_P2P]), "ncclRecv");
    }
    return record(g, i, STREAM_P2P, err);
}

int nccl_collective(void *ctx, int i, const program_op *o, double *measured, moe_error *err) {
    live_nccl *g = static_cast<live_nccl *>(ctx);
    ncclComm_t c = group_comm(g, o);
    int n = 1;
    NC(ncclCommCount(c, &n), "ncclCommCount");
    size_t per = (size_t)(o->bytes / 2.0) / (size_t)n;
    if (per == 0) per = 1;
    int st = o->stream == STREAM_DP ? STREAM_DP : STREAM_COMM;
    if (per * n > g->coll_cap[st]) {
        /* cudaFree waits for the device: the stream's previous collective has finished (live_exec
         * starts an op only when its stream is free) */
        if (g->coll_send[st]) cudaFree(g->coll_send[st]);
        if (g->coll_recv[st]) cudaFree(g->coll_recv[st]);
        g->coll_send[st] = dalloc<uint16_t>(per * n); g->coll_recv[st] = dalloc<uint16_t>(per * n);
        g->coll_cap[st] = per * n;
    }
    cudaStream_t s = g->stream[st];
    uint16_t *snd = g->coll_send[st], *rcv = g->coll_recv[st];
    if (o->kind == OP_REDUCE_SCATTER)
        NC(ncclReduceScatter(snd, rcv, per, ncclBfloat16, ncclSum, c, s), "ncclReduceScatter");
    else if (o->kind == OP_ALL_GATHER)
        NC(ncclAllGather(snd, rcv, per, ncclBfloat16, c, s), "ncclAllGather");
    else
        NC(ncclAllReduce(snd, rcv, per * n, ncclBfloat16, ncclSum, c, s), "ncclAllReduce");
    *measured = 2.0 * per * (n - 1) * (o->kind == OP_ALL_REDUCE ? 2 : 1);
    return record(g, i, st, err);
}

int nccl_test(void *ctx, int i, const program_op *o, moe_error *err) {
    live_nccl *g = static_cast<live_nccl *>(ctx);
    cudaError_t e = cudaEventQuery(g->ev[i]);
    if (e == cudaErrorNotReady) return 0;
    if (e != cudaSuccess) { cuda_fail(err, e, "cudaEventQuery"); return -1; }
    if (g->a2a_phase[i] == 1) {   // counts arrived: size the receive side, post the rows
        Inst *m = inst_of(g, o);
        m->h_seg.resize((size_t)g->R * g->El);
        if (cudaMemcpy(m->h_seg.data(), m->d_meta_recv, m->h_seg.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
            moe_error_set(err, EXIT_RUNTIME, "live/nccl: copying received counts");
            return -1;
        }
        m->h_recv.assign(g->R, 0); m->h_recv_off.assign(g->R, 0);
        for (int s = 0; s < g->R; s++) for (int l = 0; l < g->El; l++) m->h_recv[s] += m->h_seg[(size_t)s * g->El + l];
        m->n_recv = moe_exclusive_scan_i32(m->h_recv.data(), g->R, m->h_recv_off.data());
        m->recv = dalloc<uint16_t>((size_t)(m->n_recv ? m->n_recv : 1) * g->H);
        if (post_rows(g, i, o, err)) return -1;
        return 0;
    }
    g->a2a_phase[i] = 0;
    return 1;
}

}  // namespace

extern "C" {

int live_nccl_create(const program *p, int rank, live_mpi *mpi, int n_ops, live_nccl **out, moe_error *err) {
    *out = nullptr;
    int ngpu = moe_gpu_count();
    if (ngpu < 1) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: no GPU visible to rank %d", rank);
    live_nccl *g = new live_nccl();
    g->p = p; g->rank = rank; g->n_ops = n_ops; g->mpi = mpi;
    if (live_cpu_create(p, rank, &g->host, err)) { delete g; return err->code; }
    live_cpu_shape(g->host, &g->T, &g->H, &g->F, &g->E, &g->K, &g->capacity, &g->first_expert);
    g->R = p->ep; g->El = g->E > 0 ? g->E / g->R : 0; g->L = p->scn->model.layers;
    g->mbs = p->micro_batches; g->n_chunks = p->n_chunks;
    *out = g;   // from here on live_nccl_free releases what exists
    CU(cudaSetDevice(rank % ngpu), "cudaSetDevice");
    ncclUniqueId id;
    if (rank == 0) NC(ncclGetUniqueId(&id), "ncclGetUniqueId");
    live_mpi_bcast_bytes(&id, (int)sizeof id, 0);
    NC(ncclCommInitRank(&g->world, p->n_ranks, id, rank), "ncclCommInitRank");
    for (int k = 0; k < GROUP_NKINDS; k++)
        NC(ncclCommSplit(g->world, program_group_of(p, rank, (group_kind)k), rank, &g->comm[k], nullptr), "ncclCommSplit");
    NC(ncclCommSplit(g->world, 0, rank, &g->p2p, nullptr), "ncclCommSplit (p2p)");
    for (int s = 0; s < STREAM_N; s++) CU(cudaStreamCreateWithFlags(&g->stream[s], cudaStreamNonBlocking), "stream");
    g->ev.resize(n_ops > 0 ? n_ops : 1);
    for (auto &e : g->ev) CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
    g->a2a_phase.assign(n_ops > 0 ? n_ops : 1, 0);
    MK(moe_cublas_create(&g->cublas), "cuBLAS");
    size_t slots = (size_t)g->mbs * g->n_chunks * g->T * g->H;
    g->hidden = dalloc<uint16_t>(slots); g->grad = dalloc<uint16_t>(slots);
    g->tmp = dalloc<uint16_t>((size_t)g->T * g->H);
    g->ones = dalloc<float>((size_t)g->T * (g->K > 0 ? g->K : 1));
    g->sink = dalloc<float>(kBurnLanes);
    if (!g->hidden || !g->grad || !g->tmp || !g->ones || !g->sink) return moe_error_set(err, EXIT_RUNTIME, "live/nccl: out of device memory");
    MK(moe_fill_f32_gpu(g->ones, 1.0f, (size_t)g->T * (g->K > 0 ? g->K : 1), nullptr), "fill");
    g->inst.resize((size_t)g->L * g->mbs);
    g->w_gate.assign(g->L, nullptr); g->w1.assign(g->L, nullptr); g->w3.assign(g->L, nullptr); g->w2.assign(g->L, nullptr);
    size_t HF = (size_t)g->H * g->F;
    for (int l = 0; l < g->L; l++) {
        const uint16_t *wg, *a, *b, *c;
        if (!live_cpu_weights(g->host, l, &wg, &a, &b, &c)) continue;
        g->w_gate[l] = dalloc<uint16_t>((size_t)g->H * g->E);
        g->w1[l] = dalloc<uint16_t>(g->El * HF); g->w3[l] = dalloc<uint16_t>(g->El * HF); g->w2[l] = dalloc<uint16_t>(g->El * HF);
        size_t off = (size_t)g->first_expert * HF;   // this rank's experts only
        CU(cudaMemcpy(g->w_gate[l], wg, (size_t)g->H * g->E * 2, cudaMemcpyHostToDevice), "weights");
        CU(cudaMemcpy(g->w1[l], a + off, g->El * HF * 2, cudaMemcpyHostToDevice), "weights");
        CU(cudaMemcpy(g->w3[l], b + off, g->El * HF * 2, cudaMemcpyHostToDevice), "weights");
        CU(cudaMemcpy(g->w2[l], c + off, g->El * HF * 2, cudaMemcpyHostToDevice), "weights");
    }
    CU(cudaDeviceSynchronize(), "setup");
    return 0;
}

void live_nccl_backend(live_nccl *g, live_backend *b) {
    std::memset(b, 0, sizeof *b);
    b->name = "nccl";
    b->ctx = g;
    b->prepost_recv = 0;   // NCCL p2p is a rendezvous: RECVs go in program order on the p2p stream
    b->now_s = nccl_now;
    b->barrier = nccl_barrier;
    b->compute = nccl_compute;
    b->a2a = nccl_a2a;
    b->send = nccl_p2p;
    b->recv = nccl_p2p;
    b->collective = nccl_collective;
    b->test = nccl_test;
    b->idle = nccl_idle;
}

int live_nccl_check_moe(live_nccl *g, live_moe_check *k, live_moe_check *model) {
    std::memset(k, 0, sizeof *k);
    std::memset(model, 0, sizeof *model);   // the whole-model check runs on the CPU backend only
    k->first_layer = k->first_mb = -1;
    model->first_layer = model->first_mb = -1;
    size_t TH = (size_t)g->T * g->H;
    std::vector<uint16_t> x(TH), got(TH), ref(TH);
    for (int l = 0; l < g->L; l++)
        for (int mb = 0; mb < g->mbs; mb++) {
            Inst &m = g->inst[(size_t)l * g->mbs + mb];
            if (!m.live || !m.out) continue;
            if (cudaMemcpy(x.data(), m.x_in, TH * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
                cudaMemcpy(got.data(), m.out, TH * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
                live_cpu_moe_reference(g->host, l, x.data(), ref.data()))
                return -1;
            long bad = 0;
            for (size_t i = 0; i < TH; i++) {
                float a = moe_bf16_to_f32(got[i]), r = moe_bf16_to_f32(ref[i]);
                double d = std::fabs((double)a - r);
                if (d > k->max_abs_diff) k->max_abs_diff = d;
                if (!(d <= 0.02 + 0.02 * std::fabs(r))) bad++;   // the stated GPU tolerance
            }
            if (bad && k->first_layer < 0) { k->first_layer = l; k->first_mb = mb; }
            k->mismatches += bad; k->values += (long)TH; k->instances++;
            k->rows_sent += m.n_rows;
        }
    return 0;
}

void live_nccl_free(live_nccl *g) {
    if (!g) return;
    for (auto &m : g->inst) m.release();
    for (int l = 0; l < (int)g->w1.size(); l++) {
        if (g->w_gate[l]) cudaFree(g->w_gate[l]);
        if (g->w1[l]) cudaFree(g->w1[l]);
        if (g->w3[l]) cudaFree(g->w3[l]);
        if (g->w2[l]) cudaFree(g->w2[l]);
    }
    void *bufs[] = {g->hidden, g->grad, g->tmp, g->ones, g->sink, g->layout_work, g->ffn_work};
    for (void *p : bufs) if (p) cudaFree(p);
    for (int s = 0; s < STREAM_N; s++) {
        if (g->coll_send[s]) cudaFree(g->coll_send[s]);
        if (g->coll_recv[s]) cudaFree(g->coll_recv[s]);
    }
    for (auto &e : g->ev) if (e) cudaEventDestroy(e);
    for (int s = 0; s < STREAM_N; s++) if (g->stream[s]) cudaStreamDestroy(g->stream[s]);
    if (g->cublas) moe_cublas_destroy(g->cublas);
    for (int k = 0; k < GROUP_NKINDS; k++) if (g->comm[k]) ncclCommDestroy(g->comm[k]);
    if (g->p2p) ncclCommDestroy(g->p2p);
    if (g->world) ncclCommDestroy(g->world);
    live_cpu_free(g->host);
    delete g;
}

}  // extern "C"
