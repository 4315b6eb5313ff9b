/* fuzz_costmodel.c — a cost model ("moesim-costmodel/1"): parse and price a few kernels with it. */
#include "tests/fuzz/fuzz_input.h"

#include <cjson/cJSON.h>

#include "sim/plan/costmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    costmodel cm;
    moe_error err = {0};
    if (costmodel_parse("fuzz.json", text, &cm, &err) == 0) {
        volatile double sink = costmodel_kernel_s(&cm, "permute", 1e6) + costmodel_kernel_s(&cm, "gating", 0);
        (void)sink;
        cJSON_Delete(costmodel_provenance_json(&cm));
    }
    free(text);
    return 0;
}
