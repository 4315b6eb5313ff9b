/* fuzz_scenario.c — a scenario file: parse, validate, the first sweep point, its plan (the path of
 * `simrun run X.json --levels plan`). Errors are the expected outcome; crashes, sanitizer reports and
 * slow inputs are the findings. */
#include "tests/fuzz/fuzz_input.h"

#include <cjson/cJSON.h>

#include "sim/plan/plan.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    scenario s, pt;
    sweep *sw = NULL;
    moe_error err = {0};
    if (scenario_parse("fuzz.json", text, &s, &sw, &err) == 0) {
        const scenario *first = &s;
        int ok = 1;
        if (sw && sweep_count(sw) > 0) {
            cJSON *values = NULL;
            ok = sweep_point(sw, &s, 0, &pt, &values, &err) == 0;
            cJSON_Delete(values);
            first = &pt;
        }
        plan_result plan;
        if (ok && scenario_validate(first, &err) == 0) (void)plan_evaluate(first, &plan, &err);
        cJSON_Delete(scenario_to_json(first));
    }
    sweep_free(sw);
    free(text);
    return 0;
}
