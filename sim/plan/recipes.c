/* recipes.c — the table of quantized compute recipes (sources and meaning in recipes.h). */
#include "sim/plan/recipes.h"

#include <stddef.h>

#define FP32_B 4.0

static const quant_recipe RECIPES[] = {
    {.dt = DT_FP8, .gemm_rate = 1.0, .cast_extra_B = 0.0, .cached_B = 1.0 + FP32_B / 128.0, .weight_B = 1.0},
    {.dt = DT_FP8_CS, .gemm_rate = 1610.0 / 1520.0, .cast_extra_B = 2.0 + 1.0 + 1.0, .cached_B = 1.0,
     .weight_B = 1.0},
    {.dt = DT_MXFP8, .gemm_rate = 1610.0 / 1520.0, .cast_extra_B = 0.0, .cached_B = 1.0 + 1.0 / 32.0,
     .weight_B = 1.0, .needs_blackwell = 1},
    {.dt = DT_NVFP4, .gemm_rate = 1.0, .fp4_base = 1,
     .cast_extra_B = 2.0 + 2.0 + 2.0 + 2.0 * (0.5 + 1.0 / 16.0) - 2.0 * (1.0 + FP32_B / 128.0),
     .cached_B = 0.5 + 1.0 / 16.0, .weight_B = 2.0, .needs_blackwell = 1},
};

const quant_recipe *quant_recipe_of(dtype_kind dt) {
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        if (RECIPES[i].dt == dt) return &RECIPES[i];
    return NULL;
}
