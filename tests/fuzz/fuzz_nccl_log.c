/* fuzz_nccl_log.c — an nccl-tests log (simcal import-nccl-tests): parse, convert to trace points. */
#include "tests/fuzz/fuzz_input.h"

#include "calibration/nccl_tests.h"
#include "calibration/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    nt_log log;
    moe_error err = {0};
    if (nccl_tests_parse("fuzz.log", text, &log, &err) == 0) {
        trace t;
        trace_init(&t);
        (void)nccl_tests_append(&log, NULL, &t, &err);
        trace_free(&t);
        nt_log_free(&log);
    }
    free(text);
    return 0;
}
