/* a2a_nccl.cu — the expert-parallel all-to-all on NCCL, one rank's view.
 * Contract: kernels/moe_kernels.h §7 (rows, exclusive-scan offsets, MPI_Alltoallv semantics);
 * CPU reference with identical results: kernels/a2a_cpu.c.
 *
 * Flat: every peer pair is one ncclSend/ncclRecv inside ncclGroupStart/End, so NCCL progresses
 * them concurrently (a loop of blocking pairs would deadlock or serialise). Zero-row pairs are
 * skipped on both sides (each side knows the count). The rank's own rows are a device memcpy.
 *
 * Hierarchical (two NCCL groups on one stream; the second starts after the first completes):
 *   phase 1, NVLink: for every destination (n', l') rank (n, l) sends its chunk to node-mate (n, l');
 *            the mate stores it in staging at [n'][l] (destination node major, source minor);
 *   phase 2, rails:  (n, l') sends staging block [n'] -- all node-mates' rows for (n', l') -- to
 *            (n', l') as ONE message; it lands contiguously at recv_offsets[source n'*G... ] because
 *            sources n*G..n*G+G-1 are consecutive in the packed receive buffer.
 * Inside one NCCL group, several sends to the same peer are matched in issue order; both sides
 * iterate destination nodes in ascending order, so chunks pair up. */
#include <vector>

#include <nccl.h>

#include "kernels/cuda_check.cuh"

#define MOE_NCCL_TRY(call)                                                                    \
    do {                                                                                      \
        ncclResult_t r_ = (call);                                                             \
        if (r_ != ncclSuccess) {                                                              \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                \
                         ncclGetErrorString(r_));                                             \
            return MOE_ENCCL;                                                                 \
        }                                                                                     \
    } while (0)

namespace {

inline const char *at(const void *base, int64_t rows, size_t row_bytes) {
    return static_cast<const char *>(base) + (size_t)rows * row_bytes;
}
inline char *at(void *base, int64_t rows, size_t row_bytes) {
    return static_cast<char *>(base) + (size_t)rows * row_bytes;
}

/* One group of sends/receives; ends the group even when a call inside fails (NCCL requires it). */
struct Group {
    bool open = false;
    ncclResult_t start() {
        ncclResult_t r = ncclGroupStart();
        open = r == ncclSuccess;
        return r;
    }
    ncclResult_t end() {
        open = false;
        return ncclGroupEnd();
    }
    ~Group() {
        if (open) (void)ncclGroupEnd();
    }
};

} // namespace

extern "C" int moe_a2a_nccl(const void *send, const int32_t *send_counts, const int32_t *send_offsets,
                            void *recv, const int32_t *recv_counts, const int32_t *recv_offsets,
                            size_t row_bytes, void *nccl_comm, void *stream) {
    if (!nccl_comm || !send_counts || !send_offsets || !recv_counts || !recv_offsets || row_bytes == 0)
        return MOE_EINVAL;
    ncclComm_t comm = static_cast<ncclComm_t>(nccl_comm);
    cudaStream_t st = moe_stream(stream);
    int R = 0, me = 0;
    MOE_NCCL_TRY(ncclCommCount(comm, &R));
    MOE_NCCL_TRY(ncclCommUserRank(comm, &me));
    for (int p = 0; p < R; p++)
        if (send_counts[p] < 0 || recv_counts[p] < 0) return MOE_EINVAL;
    if (send_counts[me] != recv_counts[me]) return MOE_EINVAL;
    if (send_counts[me] > 0)
        MOE_CUDA_TRY(cudaMemcpyAsync(at(recv, recv_offsets[me], row_bytes),
                                     at(send, send_offsets[me], row_bytes),
                                     (size_t)send_counts[me] * row_bytes, cudaMemcpyDeviceToDevice, st));
    Group g;
    MOE_NCCL_TRY(g.start());
    for (int p = 0; p < R; p++) {
        if (p == me) continue;
        if (send_counts[p] > 0)
            MOE_NCCL_TRY(ncclSend(at(send, send_offsets[p], row_bytes),
                                  (size_t)send_counts[p] * row_bytes, ncclUint8, p, comm, st));
        if (recv_counts[p] > 0)
            MOE_NCCL_TRY(ncclRecv(at(recv, recv_offsets[p], row_bytes),
                                  (size_t)recv_counts[p] * row_bytes, ncclUint8, p, comm, st));
    }
    MOE_NCCL_TRY(g.end());
    return MOE_OK;
}

extern "C" int moe_a2a_hier_nccl(const void *send, const int32_t *send_counts,
                                 const int32_t *send_offsets, void *recv, const int32_t *recv_counts,
                                 const int32_t *recv_offsets, const int32_t *node_send_counts,
                                 int G, void *staging, size_t row_bytes, void *nccl_comm,
                                 void *stream) {
    if (!nccl_comm || !send_counts || !send_offsets || !recv_counts || !recv_offsets ||
        !node_send_counts || G < 1 || row_bytes == 0)
        return MOE_EINVAL;
    ncclComm_t comm = static_cast<ncclComm_t>(nccl_comm);
    cudaStream_t st = moe_stream(stream);
    int R = 0, me = 0;
    MOE_NCCL_TRY(ncclCommCount(comm, &R));
    MOE_NCCL_TRY(ncclCommUserRank(comm, &me));
    if (R % G != 0) return MOE_EINVAL;
    const int N = R / G, n = me / G, l = me % G;
    /* my row in node_send_counts must be my send_counts; the receive buffer must be packed */
    for (int d = 0; d < R; d++)
        if (node_send_counts[(size_t)l * R + d] != send_counts[d]) return MOE_EINVAL;
    int64_t run = 0;
    for (int s = 0; s < R; s++) {
        if (recv_offsets[s] != run) return MOE_EINVAL;
        run += recv_counts[s];
    }
    if (moe_a2a_hier_staging_rows(node_send_counts, R, G, l) > 0 && !staging) return MOE_EINVAL;
    /* staging offsets on me (as the rail-l mate): block [nn][src local] */
    std::vector<int64_t> stage_off((size_t)N * G + 1);
    {
        int64_t r = 0;
        for (int nn = 0; nn < N; nn++)
            for (int src = 0; src < G; src++) {
                stage_off[(size_t)nn * G + src] = r;
                r += node_send_counts[(size_t)src * R + nn * G + l];
            }
        stage_off[(size_t)N * G] = r;
    }
    /* phase 1: inside the node */
    {
        Group g;
        MOE_NCCL_TRY(g.start());
        for (int lp = 0; lp < G; lp++) {
            const int mate = n * G + lp;
            for (int nn = 0; nn < N; nn++) {
                const int dst = nn * G + lp;
                const int32_t out_rows = send_counts[dst];
                const int32_t in_rows = node_send_counts[(size_t)lp * R + nn * G + l];
                if (lp == l) {
                    if (out_rows > 0)
                        MOE_CUDA_TRY(cudaMemcpyAsync(at(staging, stage_off[(size_t)nn * G + l], row_bytes),
                                                     at(send, send_offsets[dst], row_bytes),
                                                     (size_t)out_rows * row_bytes,
                                                     cudaMemcpyDeviceToDevice, st));
                    continue;
                }
                if (out_rows > 0)
                    MOE_NCCL_TRY(ncclSend(at(send, send_offsets[dst], row_bytes),
                                          (size_t)out_rows * row_bytes, ncclUint8, mate, comm, st));
                if (in_rows > 0)
                    MOE_NCCL_TRY(ncclRecv(at(staging, stage_off[(size_t)nn * G + lp], row_bytes),
                                          (size_t)in_rows * row_bytes, ncclUint8, mate, comm, st));
            }
        }
        MOE_NCCL_TRY(g.end());
    }
    /* phase 2: one message per destination node on my rail */
    {
        Group g;
        MOE_NCCL_TRY(g.start());
        for (int nn = 0; nn < N; nn++) {
            const int peer = nn * G + l;
            const int64_t out_rows = stage_off[(size_t)nn * G + G] - stage_off[(size_t)nn * G];
            int64_t in_rows = 0;
            for (int src = 0; src < G; src++) in_rows += recv_counts[nn * G + src];
            if (nn == n) {
                if (out_rows > 0)
                    MOE_CUDA_TRY(cudaMemcpyAsync(at(recv, recv_offsets[n * G], row_bytes),
                                                 at(staging, stage_off[(size_t)nn * G], row_bytes),
                                                 (size_t)out_rows * row_bytes,
                                                 cudaMemcpyDeviceToDevice, st));
                continue;
            }
            if (out_rows > 0)
                MOE_NCCL_TRY(ncclSend(at(staging, stage_off[(size_t)nn * G], row_bytes),
                                      (size_t)out_rows * row_bytes, ncclUint8, peer, comm, st));
            if (in_rows > 0)
                MOE_NCCL_TRY(ncclRecv(at(recv, recv_offsets[nn * G], row_bytes),
                                      (size_t)in_rows * row_bytes, ncclUint8, peer, comm, st));
        }
        MOE_NCCL_TRY(g.end());
    }
    return MOE_OK;
}

extern "C" int moe_nccl_comms_init_all(int ndev, void **comms) {
    if (ndev < 1 || !comms) return MOE_EINVAL;
    std::vector<ncclComm_t> c((size_t)ndev);
    MOE_NCCL_TRY(ncclCommInitAll(c.data(), ndev, nullptr));
    for (int i = 0; i < ndev; i++) comms[i] = c[(size_t)i];
    return MOE_OK;
}

extern "C" int moe_nccl_comm_destroy(void *comm) {
    MOE_NCCL_TRY(ncclCommDestroy(static_cast<ncclComm_t>(comm)));
    return MOE_OK;
}
