/* fuzz_calib_trace.c — a calibration trace ("moesim-trace/1", simcal fit's input): parse, write back. */
#include "tests/fuzz/fuzz_input.h"

#include <cjson/cJSON.h>

#include "calibration/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    trace t;
    moe_error err = {0};
    if (trace_parse("fuzz.json", text, &t, &err) == 0) {
        cJSON_Delete(trace_to_json(&t));
        trace_free(&t);
    }
    free(text);
    return 0;
}
