/* a2a_cpu.c — CPU reference of the expert-parallel all-to-all among R in-process "ranks" (memcpy).
 * Same counts/offsets contract as MPI_Alltoallv (in rows) and as kernels/a2a_nccl.cu; see
 * kernels/moe_kernels.h §7. Two variants with identical results:
 *   flat          one message per (src, dst) pair;
 *   hierarchical  NVLink phase to the destination's rail GPU, then one inter-node message per
 *                 (rail, destination node) -- the aggregation DeepEP/PXN use so that inter-node
 *                 traffic is one transfer per node, not one per GPU. */
#include "kernels/moe_kernels.h"

#include <stdlib.h>
#include <string.h>

static void count_msg(moe_a2a_stats *st, int src, int dst, int G, int64_t bytes) {
    if (!st || src == dst || bytes == 0) return;
    if (src / G == dst / G) {
        st->intra_node_msgs++;
        st->intra_node_bytes += bytes;
    } else {
        st->inter_node_msgs++;
        st->inter_node_bytes += bytes;
    }
}

/* Counts must be non-negative and the receive side must expect exactly what is sent. */
static int check_counts(int R, const int32_t *send_counts, const int32_t *recv_counts) {
    for (int s = 0; s < R; s++)
        for (int d = 0; d < R; d++)
            if (send_counts[s * R + d] < 0 || recv_counts[d * R + s] != send_counts[s * R + d])
                return MOE_EINVAL;
    return MOE_OK;
}

int moe_a2a_cpu(int R, int gpus_per_node, const void *const *send, const int32_t *send_counts,
                const int32_t *send_offsets, void *const *recv, const int32_t *recv_counts,
                const int32_t *recv_offsets, size_t row_bytes, moe_a2a_stats *stats) {
    if (R < 1 || gpus_per_node < 1 || !send || !recv) return MOE_EINVAL;
    if (check_counts(R, send_counts, recv_counts) != MOE_OK) return MOE_EINVAL;
    if (stats) memset(stats, 0, sizeof *stats);
    for (int s = 0; s < R; s++) {
        for (int d = 0; d < R; d++) {
            size_t bytes = (size_t)send_counts[s * R + d] * row_bytes;
            if (bytes == 0) continue;
            memcpy((char *)recv[d] + (size_t)recv_offsets[d * R + s] * row_bytes,
                   (const char *)send[s] + (size_t)send_offsets[s * R + d] * row_bytes, bytes);
            count_msg(stats, s, d, gpus_per_node, (int64_t)bytes);
        }
    }
    return MOE_OK;
}

int64_t moe_a2a_hier_staging_rows(const int32_t *node_send_counts, int R, int G, int local_rank) {
    int64_t rows = 0;
    for (int l = 0; l < G; l++)
        for (int dst = local_rank; dst < R; dst += G) rows += node_send_counts[(size_t)l * R + dst];
    return rows;
}

/* Staging layout on rank (n, lp): [destination node][source local] blocks, so that phase 2 sends
 * one contiguous range per destination node and it lands contiguously at the receiver (sources
 * n*G .. n*G+G-1 are consecutive in its packed receive buffer). stage_off[nn*G + l] is the row of
 * block (nn, l). */
static void staging_offsets(const int32_t *send_counts, int R, int G, int n, int lp,
                            int32_t *stage_off) {
    int N = R / G;
    int32_t run = 0;
    for (int nn = 0; nn < N; nn++)
        for (int l = 0; l < G; l++) {
            stage_off[nn * G + l] = run;
            run += send_counts[(size_t)(n * G + l) * R + (nn * G + lp)];
        }
}

int moe_a2a_hier_cpu(int R, int G, const void *const *send, const int32_t *send_counts,
                     const int32_t *send_offsets, void *const *recv, const int32_t *recv_counts,
                     const int32_t *recv_offsets, size_t row_bytes, moe_a2a_stats *stats) {
    if (R < 1 || G < 1 || R % G != 0 || !send || !recv) return MOE_EINVAL;
    if (check_counts(R, send_counts, recv_counts) != MOE_OK) return MOE_EINVAL;
    /* phase 2 writes a whole node's block at once: receive buffers must be packed */
    for (int d = 0; d < R; d++) {
        int32_t run = 0;
        for (int s = 0; s < R; s++) {
            if (recv_offsets[d * R + s] != run) return MOE_EINVAL;
            run += recv_counts[d * R + s];
        }
    }
    if (stats) memset(stats, 0, sizeof *stats);
    const int N = R / G;
    char **staging = calloc((size_t)R, sizeof *staging);
    int32_t *stage_off = malloc((size_t)R * R * sizeof *stage_off); /* [rank][N*G] */
    int rc = (staging && stage_off) ? MOE_OK : MOE_ENOMEM;
    for (int r = 0; r < R && rc == MOE_OK; r++) {
        int n = r / G, lp = r % G;
        int64_t rows = moe_a2a_hier_staging_rows(send_counts + (size_t)n * G * R, R, G, lp);
        staging[r] = malloc(rows > 0 ? (size_t)rows * row_bytes : 1);
        if (!staging[r]) rc = MOE_ENOMEM;
        staging_offsets(send_counts, R, G, n, lp, stage_off + (size_t)r * R);
    }
    /* phase 1 (inside each node): (n,l) -> (n,lp) all rows for destinations (nn,lp) */
    for (int src = 0; src < R && rc == MOE_OK; src++) {
        int n = src / G, l = src % G;
        for (int lp = 0; lp < G; lp++) {
            int mate = n * G + lp;
            for (int nn = 0; nn < N; nn++) {
                int dst = nn * G + lp;
                size_t bytes = (size_t)send_counts[(size_t)src * R + dst] * row_bytes;
                if (bytes == 0) continue;
                memcpy(staging[mate] + (size_t)stage_off[(size_t)mate * R + nn * G + l] * row_bytes,
                       (const char *)send[src] + (size_t)send_offsets[(size_t)src * R + dst] * row_bytes,
                       bytes);
                count_msg(stats, src, mate, G, (int64_t)bytes);
            }
        }
    }
    /* phase 2 (across nodes, on rail lp): (n,lp) -> (nn,lp) one message per destination node */
    for (int mate = 0; mate < R && rc == MOE_OK; mate++) {
        int n = mate / G, lp = mate % G;
        for (int nn = 0; nn < N; nn++) {
            int dst = nn * G + lp;
            int64_t rows = 0;
            for (int l = 0; l < G; l++) rows += send_counts[(size_t)(n * G + l) * R + dst];
            if (rows == 0) continue;
            size_t bytes = (size_t)rows * row_bytes;
            memcpy((char *)recv[dst] + (size_t)recv_offsets[(size_t)dst * R + n * G] * row_bytes,
                   staging[mate] + (size_t)stage_off[(size_t)mate * R + nn * G] * row_bytes, bytes);
            count_msg(stats, mate, dst, G, (int64_t)bytes);
        }
    }
    if (staging)
        for (int r = 0; r < R; r++) free(staging[r]);
    free(staging);
    free(stage_off);
    return rc;
}
