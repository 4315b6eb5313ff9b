/* dispatch_layout_cpu.c — CPU reference of the dispatch plan: per-expert and per-destination-rank
 * counts and offsets, the capacity-factor drop, and the two index maps (slot: assignment -> send
 * row, used by combine; row_token: send row -> token, used by permute).
 * It is a stable counting sort of the T*K assignments by expert id: ranks own contiguous expert
 * ranges, so "by destination rank, then local expert" is "by expert id"; token order is kept. */
#include "kernels/moe_kernels.h"

#include <stdlib.h>
#include <string.h>

int moe_dispatch_layout_cpu(const int32_t *topk_idx, int T, int K, int E, int R, int capacity,
                            const moe_dispatch_layout *out) {
    if (!topk_idx || !out || T < 0 || K < 1 || E < 1 || R < 1 || E % R != 0) return MOE_EINVAL;
    const int64_t n_assign = (int64_t)T * K;
    for (int64_t a = 0; a < n_assign; a++)
        if (topk_idx[a] < 0 || topk_idx[a] >= E) return MOE_EINVAL;

    int32_t *cursor = calloc((size_t)E, sizeof *cursor);
    if (!cursor) return MOE_ENOMEM;

    /* kept rows per expert: the demand, clipped at the capacity */
    int32_t *cnt = out->expert_counts;
    memset(cnt, 0, (size_t)E * sizeof *cnt);
    for (int64_t a = 0; a < n_assign; a++) cnt[topk_idx[a]]++;
    if (capacity >= 0)
        for (int e = 0; e < E; e++)
            if (cnt[e] > capacity) cnt[e] = capacity;
    int64_t n_rows = moe_exclusive_scan_i32(cnt, E, out->expert_offsets);

    const int E_local = E / R;
    for (int r = 0; r < R; r++) {
        int32_t c = 0;
        for (int j = 0; j < E_local; j++) c += cnt[r * E_local + j];
        out->rank_counts[r] = c;
    }
    moe_exclusive_scan_i32(out->rank_counts, R, out->rank_offsets);

    /* place assignments in token order: the first `capacity` tokens of an expert are kept */
    int32_t n_dropped = 0;
    for (int t = 0; t < T; t++) {
        for (int k = 0; k < K; k++) {
            int64_t a = (int64_t)t * K + k;
            int e = topk_idx[a];
            if (cursor[e] < cnt[e]) {
                int32_t row = out->expert_offsets[e] + cursor[e]++;
                out->slot[a] = row;
                out->row_token[row] = t;
            } else {
                out->slot[a] = -1;
                n_dropped++;
            }
        }
    }
    for (int64_t row = n_rows; row < n_assign; row++) out->row_token[row] = -1;
    out->totals[0] = (int32_t)n_rows;
    out->totals[1] = n_dropped;
    free(cursor);
    return MOE_OK;
}
