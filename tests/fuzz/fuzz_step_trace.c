/* fuzz_step_trace.c — a step trace (simdiag check): parse, then the diagnoser's rules on it. */
#include "tests/fuzz/fuzz_input.h"

#include <cjson/cJSON.h>

#include "sim/report/diagnose.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    diag_trace t;
    moe_error err = {0};
    if (diag_trace_parse(text, "fuzz.json", &t, &err) == 0) {
        diag_rules rules;
        diag_rules_default(&rules);
        diag_report r;
        if (diag_check(&t, &rules, &r) == 0) {
            cJSON_Delete(diag_report_json(&t, &r, &rules));
            diag_report_free(&r);
        }
        diag_compare_report c;
        if (diag_compare(&t, &t, &c) == 0) diag_compare_free(&c);
        diag_trace_free(&t);
    }
    free(text);
    return 0;
}
