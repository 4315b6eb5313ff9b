/* permute_cpu.c — CPU reference of the permute (pack) step: gather token rows into the send buffer
 * in the order the dispatch layout fixed (send[row] = x[row_token[row]]). A token routed to K
 * experts is copied K times; the all-to-all then moves contiguous per-rank ranges. */
#include "kernels/moe_kernels.h"

#include <string.h>

void moe_permute_cpu(const moe_bf16 *x, const int32_t *row_token, int n_rows, int H, moe_bf16 *send) {
    for (int row = 0; row < n_rows; row++)
        memcpy(send + (size_t)row * H, x + (size_t)row_token[row] * H, (size_t)H * sizeof *x);
}
