/* fuzz_failure_csv.c — a failure log (reliability.failure_trace): time_h,component,rank lines. */
#include "tests/fuzz/fuzz_input.h"

#include "sim/run/failures.h"
#include "sim/scenario/scenario_defaults.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static scenario s; /* the built-in defaults: 4096 GPUs, the failure classes */
    static int ready;
    if (!ready) { scenario_defaults(&s); ready = 1; }
    failure_trace t;
    moe_error err = {0};
    if (failure_trace_parse("fuzz.csv", (const char *)data, size, &s, &t, &err) == 0) failure_trace_free(&t);
    return 0;
}
