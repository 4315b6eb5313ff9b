/* fuzz_expert_load.c — an expert-load trace (routing.trace, "moesim-expert-load/1") for a
 * DeepSeek-V3-shaped router: 256 experts, top-8. */
#include "tests/fuzz/fuzz_input.h"

#include <cjson/cJSON.h>

#include "sim/base/json_read.h"
#include "sim/program/routing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    moe_error err = {0};
    cJSON *root = json_parse_strict("fuzz.json", (const char *)data, size, &err);
    if (!root) return 0;
    double *w = NULL;
    int n_laws = 0;
    if (routing_trace_from_json("fuzz.json", root, 256, 8, &w, &n_laws, &err) == 0) free(w);
    cJSON_Delete(root);
    return 0;
}
