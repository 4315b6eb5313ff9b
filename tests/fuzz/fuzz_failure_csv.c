/* fuzz_failure_csv.c — a failure log (reliability.failure_trace): time_h,component,rank lines. */
#include "tests/fuzz/fuzz_input.h"

#include "sim/run/failures.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    failure_trace t;
    moe_error err = {0};
    if (failure_trace_parse("fuzz.csv", (const char *)data, size, 4096, &t, &err) == 0) failure_trace_free(&t);
    return 0;
}
