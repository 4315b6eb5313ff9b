/* recipes.c — the table of quantized compute recipes (sources and meaning in recipes.h). */
#include "sim/plan/recipes.h"

#include <stddef.h>

#define FP32_B 4.0
#define BF16_B 2.0
/* element + scale bytes of one copy */
#define FP8_1x128 (1.0 + FP32_B / 128.0)
#define FP8_128x128 (1.0 + FP32_B / (128.0 * 128.0))
#define MX8 (1.0 + 1.0 / 32.0)
#define NV4 (0.5 + 1.0 / 16.0)

/* GEMM rates (recipes.h): per-tensor / blockwise cuBLAS FP8 on H200, median; FP8-CS / MXFP8 and
 * FP8-CS / NVFP4 per-layer GEMM times on B300 over its FP4 : FP8 peak ratio */
#define BLOCKWISE_HOPPER (1.0 / 1.16)
#define MXFP8_RATE (6.812 / 7.161)
#define NVFP4_RATE ((6.812 / 3.764) / (14000.0 / 4500.0))

#define PASS(kind, r, w, e) {.k = (kind), .read_B = (r), .write_B = (w), .per_expert = (e)}
#define ONE(x) {.n = 1, .p = {x}}
#define TWO(a, b) {.n = 2, .p = {a, b}}
#define NONE {.n = 0}

/* current scaling: zero the amax, the amax pass, the scale, the cast; per expert in a grouped GEMM */
#define CS(cast_w) {.n = 4, .p = {PASS(QK_AMAX, 0, 0, 1), PASS(QK_AMAX, BF16_B, 0, 1), PASS(QK_AMAX, 0, 0, 1), \
                                  PASS(QK_CAST, BF16_B, (cast_w), 1)}}
/* the same passes for input, gradient and weight; none per weight use */
#define SAME3(x) {x, x, x, NONE}

static const quant_recipe RECIPES[] = {
    {.dt = DT_FP8, .rate = {BLOCKWISE_HOPPER, MXFP8_RATE}, .cached_B = FP8_1x128, .weight_B = 1.0,
     .pass = {[GPU_HOPPER] = {ONE(PASS(QK_CAST, BF16_B, 2 * FP8_1x128, 1)), ONE(PASS(QK_CAST, BF16_B, 2 * FP8_1x128, 1)),
                              ONE(PASS(QK_CAST, BF16_B, 2 * FP8_128x128, 1)), NONE},
              [GPU_BLACKWELL] = {TWO(PASS(QK_CAST, BF16_B, 2 * FP8_1x128, 1), PASS(QK_CAST, 2 * FP8_1x128, 2 * MX8, 1)),
                                 TWO(PASS(QK_CAST, BF16_B, 2 * FP8_1x128, 1), PASS(QK_CAST, 2 * FP8_1x128, 2 * MX8, 1)),
                                 ONE(PASS(QK_CAST, BF16_B, 2 * FP8_128x128, 1)), ONE(PASS(QK_CAST, FP8_128x128, MX8, 1))}}},
    {.dt = DT_FP8_CS, .rate = {1.0, 1.0}, .cached_B = 1.0, .weight_B = 1.0,
     .pass = {[GPU_HOPPER] = SAME3(CS(2.0)), [GPU_BLACKWELL] = SAME3(CS(1.0))}},
    {.dt = DT_FP8_DS, .rate = {1.0, 1.0}, .cached_B = 1.0, .weight_B = 1.0,
     .pass = {[GPU_HOPPER] = SAME3(ONE(PASS(QK_CAST, BF16_B, 2.0, 0))),
              [GPU_BLACKWELL] = SAME3(ONE(PASS(QK_CAST, BF16_B, 1.0, 0)))}},
    {.dt = DT_MXFP8, .rate = {0, MXFP8_RATE}, .cached_B = MX8, .weight_B = 1.0, .needs_blackwell = 1,
     .pass = {[GPU_BLACKWELL] = {ONE(PASS(QK_CAST, BF16_B, 2 * MX8, 1)), ONE(PASS(QK_CAST, BF16_B, 2 * MX8, 1)),
                                 ONE(PASS(QK_CAST, BF16_B, 2 * MX8, 1)), ONE(PASS(QK_CAST, 1.0 / 32, 1.0 / 32, 0))}}},
    {.dt = DT_NVFP4, .rate = {0, NVFP4_RATE}, .fp4_base = 1, .cached_B = NV4, .weight_B = BF16_B, .needs_blackwell = 1,
     .pass = {[GPU_BLACKWELL] = {TWO(PASS(QK_AMAX, BF16_B, 0, 0), PASS(QK_CAST, BF16_B, 2 * NV4, 0)),
                                 TWO(PASS(QK_AMAX, BF16_B, 0, 0), PASS(QK_RHT_SR, BF16_B, 2 * NV4, 0)),
                                 TWO(PASS(QK_AMAX, BF16_B, 0, 0), PASS(QK_CAST, BF16_B, 2 * NV4, 0)), NONE}}},
};

const quant_recipe *quant_recipe_of(dtype_kind dt) {
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        if (RECIPES[i].dt == dt) return &RECIPES[i];
    return NULL;
}

const char *quant_kernel_name(quant_kernel k) {
    static const char *const names[QK_NKINDS] = {"quantize", "quantize_amax", "quantize_rht_sr"};
    return k >= 0 && k < QK_NKINDS ? names[k] : "quantize";
}
