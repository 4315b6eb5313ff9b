/* test_report_table.c — the run table (sim/report/report_table.h) from hand-written results documents:
 * what each row prints comes from the keys the document holds, so every expected cell below is read off
 * the document by hand.
 *   - a step that hung (step.timed_out with step.breakdown.hang) prints `hung` for its step time and
 *     `-` for MFU, tokens/s and band, is ranked last whatever its step_time_s, and a line under the
 *     table names the collective, layer, micro-batch and the rank that never arrived (its node and
 *     GPU in the node: global GPU 99 on 8-GPU nodes is node 12, GPU 3) and `simdiag check DIR`;
 *   - a step that timed out without a hang prints `timeout`;
 *   - routing.steps > 1: the step time column is the mean over the steps (`mean_s`), MFU, tokens/s and
 *     the band are step.steps', not step 0's, and a line says so;
 *   - a dense model (model.experts = 0) prints `-` for drop%. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/report/report_table.h"

/* One point: layout tp.pp.ep.dp = 1.4.128.2 (the label), `experts` routed experts, and `step` (JSON). */
static char *point(int id, int experts, const char *step) {
    char *s = malloc(4096);
    snprintf(s, 4096,
             "{\"id\": %d, \"sweep\": {}, \"scenario\": {\"layout\": {\"tp\": 1, \"pp\": 4, \"ep\": %d, \"dp\": %d},"
             " \"model\": {\"experts\": %d}, \"cluster\": {\"gpus_per_node\": 8}, \"output\": {\"trace\": true}},"
             " \"plan\": {\"step_time_s\": 1.5, \"mfu\": 0.3, \"tokens_per_s_per_gpu\": 900, \"fits_memory\": true,"
             " \"memory_GiB\": {\"total\": 45.9}},"
             " \"step\": %s}",
             id, 100 + id, 2 + id, experts, step);
    return s;
}

/* The table of the points (JSON objects, NULL-terminated) printed for folder `dir`. */
static char *table_of(const char *dir, ...) {
    va_list ap;
    va_start(ap, dir);
    size_t cap = 1 << 16, n = 0;
    char *json = malloc(cap);
    n += (size_t)snprintf(json, cap, "{\"points\": [");
    int first = 1;
    for (char *p; (p = va_arg(ap, char *));) {
        n += (size_t)snprintf(json + n, cap - n, "%s%s", first ? "" : ", ", p);
        first = 0;
        free(p);
    }
    va_end(ap);
    snprintf(json + n, cap - n, "]}");
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    free(json);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    print_results_table(f, doc, dir);
    fclose(f);
    cJSON_Delete(doc);
    return out;
}

/* The cells of point `id`'s row from its label on (the label is "1.4.<100 + id>.<2 + id>": cells[0]),
 * and in *rank its rank ("" when the table has one point and no rank column). */
static int row_cells(const char *table, int id, char cells[24][64], char *rank) {
    char label[32];
    snprintf(label, sizeof label, "1.4.%d.%d", 100 + id, 2 + id);
    for (const char *line = table; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char buf[1024], tok[26][64];
        size_t l = strcspn(line, "\n");
        snprintf(buf, sizeof buf, "%.*s", (int)(l < sizeof buf - 1 ? l : sizeof buf - 1), line);
        int n = 0, at = -1;
        char *save = NULL;
        for (char *w = strtok_r(buf, " ", &save); w && n < 26; w = strtok_r(NULL, " ", &save)) {
            if (strcmp(w, label) == 0) at = n;
            snprintf(tok[n++], 64, "%s", w);
        }
        if (at < 1 || atoi(tok[at - 1]) != id) continue;
        snprintf(rank, 16, "%.15s", at == 2 ? tok[0] : "");
        for (int i = at; i < n; i++) snprintf(cells[i - at], 64, "%s", tok[i]);
        return n - at;
    }
    fail_msg("no row for point %d in:\n%s", id, table);
    return 0;
}

static void says(const char *table, const char *needle) {
    if (!strstr(table, needle)) fail_msg("no '%s' in:\n%s", needle, table);
}

static const char *const HEALTHY =
    "{\"step_time_s\": 3.751, \"mfu\": 0.082, \"tokens_per_s_per_gpu\": 546, \"dropped_token_fraction\": 0,"
    " \"tokens_per_s_per_gpu_band\": [256, 546], \"timed_out\": false}";

static void test_hung_step(void **state) {
    (void)state;
    const char *hung =
        "{\"step_time_s\": 0.5, \"mfu\": 0, \"tokens_per_s_per_gpu\": 0, \"dropped_token_fraction\": 0,"
        " \"tokens_per_s_per_gpu_band\": [0, 0], \"timed_out\": true, \"breakdown\": {"
        " \"collective_timeout\": {\"timeout_s\": 600, \"rank\": 0, \"gpu\": 0, \"node\": 0, \"op\": \"A2A_DISPATCH\","
        "   \"group_kind\": \"EP\", \"group\": 0, \"layer\": 10, \"micro_batch\": 1, \"arrived_s\": 4.144,"
        "   \"waited_s\": null, \"fired_s\": 604.144},"
        " \"hang\": {\"op\": \"A2A_DISPATCH\", \"group_kind\": \"EP\", \"group\": 0, \"layer\": 10, \"micro_batch\": 1,"
        "   \"rank\": 99, \"gpu\": 99, \"node\": 12, \"waiting\": 127, \"missing\": 1, \"blocked_elsewhere\": 896}}}";
    char *t = table_of("results/incident", point(0, 128, HEALTHY), point(1, 128, hung), NULL);
    char c[24][64], rank[16];
    int n = row_cells(t, 1, c, rank);
    assert_int_equal(n, 12);
    assert_string_equal(rank, "2");        /* ranked last: 0.5 s is when nothing ran, not a step */
    assert_string_equal(c[3], "hung");
    assert_string_equal(c[4], "-");        /* mfu */
    assert_string_equal(c[5], "-");        /* tok/s/gpu */
    assert_string_equal(c[7], "-");        /* band */
    row_cells(t, 0, c, rank);
    assert_string_equal(rank, "1");
    assert_string_equal(c[3], "3.751");
    assert_string_equal(c[7], "256-546");
    says(t, "point 1: the step hung: rank 99 (node 12, GPU 3) never arrived at A2A_DISPATCH of EP group 0 "
            "(layer 10, micro-batch 1), where 127 ranks waited (896 more blocked elsewhere)");
    says(t, "failed it at t = 604.144 s");
    says(t, "simdiag check results/incident");
    assert_null(strstr(t, "point 0:"));
    free(t);
}

static void test_timed_out_step(void **state) {
    (void)state;
    const char *slow =
        "{\"step_time_s\": 61.2, \"mfu\": 0, \"tokens_per_s_per_gpu\": 0, \"dropped_token_fraction\": 0,"
        " \"timed_out\": true, \"breakdown\": {\"hang\": null,"
        " \"collective_timeout\": {\"timeout_s\": 60, \"rank\": 13, \"gpu\": 13, \"node\": 1, \"op\": \"ALLREDUCE\","
        "   \"group_kind\": \"DP\", \"group\": 5, \"layer\": -1, \"micro_batch\": -1, \"arrived_s\": 1.2,"
        "   \"waited_s\": 75.5, \"fired_s\": 61.2}}}";
    char *t = table_of(NULL, point(0, 8, slow), NULL);
    char c[24][64], rank[16];
    row_cells(t, 0, c, rank);
    assert_string_equal(rank, "");         /* one point: no rank column */
    assert_string_equal(c[3], "timeout");
    assert_string_equal(c[4], "-");
    says(t, "point 0: the step timed out: rank 13 (node 1, GPU 5) waited 75.500 s in ALLREDUCE of DP group 5; "
            "NCCL's watchdog (faults.collective_timeout_s = 60 s) failed it at t = 61.200 s");
    says(t, "simdiag check DIR");
    free(t);
}

static void test_many_steps(void **state) {
    (void)state;
    const char *steps =
        "{\"step_time_s\": 10, \"mfu\": 0.25, \"tokens_per_s_per_gpu\": 1000, \"dropped_token_fraction\": 0,"
        " \"tokens_per_s_per_gpu_band\": [500, 1000], \"timed_out\": false,"
        " \"steps\": {\"count\": 30, \"step_time_s_mean\": 12.5, \"step_time_s_p50\": 11, \"step_time_s_p95\": 20,"
        "   \"step_time_s_max\": 21, \"timed_out\": 0, \"tokens_per_s_per_gpu\": 800, \"mfu\": 0.2,"
        "   \"tokens_per_s_per_gpu_band\": [400, 800]}}";
    char *t = table_of(NULL, point(0, 256, steps), NULL);
    char c[24][64], rank[16];
    int n = row_cells(t, 0, c, rank);
    assert_int_equal(n, 15);
    assert_string_equal(c[3], "12.500");   /* the mean, not step 0's 10 */
    assert_string_equal(c[4], "11.000");
    assert_string_equal(c[5], "20.000");
    assert_string_equal(c[6], "21.000");
    assert_string_equal(c[7], "0.200");    /* step.steps.mfu, not step 0's 0.25 */
    assert_string_equal(c[8], "800");
    assert_string_equal(c[10], "400-800");
    says(t, "mean_s");
    says(t, "over all the simulated steps of a point (routing.steps, up to 30 here)");
    free(t);
}

static void test_dense_drop(void **state) {
    (void)state;
    char *t = table_of(NULL, point(0, 0, HEALTHY), point(1, 16, HEALTHY), NULL);
    char c[24][64], rank[16];
    row_cells(t, 0, c, rank);
    assert_string_equal(c[6], "-");        /* dense: nothing routed, nothing to drop */
    row_cells(t, 1, c, rank);
    assert_string_equal(c[6], "0.0");
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hung_step),
        cmocka_unit_test(test_timed_out_step),
        cmocka_unit_test(test_many_steps),
        cmocka_unit_test(test_dense_drop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
