/* test_validate.c — the validation table (sim/point/validate.h) and DeepEP's byte counting
 * (sim/simgrid/deepep_bench.h).
 *
 * Truths: hand-made validation documents (which cases moved by more than 1 point, the band of
 * hand-picked errors); the closed-form expectations of DeepEP's test routing (a token's 8 distinct
 * experts among 256 reach a given rank of 32 experts with probability 1 - C(224,8)/C(256,8), and a
 * given node of 128 with 1 - C(128,8)/C(256,8)); bad cases files give exit 2 with path and value. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "sim/base/json_read.h"
#include "sim/point/validate.h"
#include "sim/point/validation_doc.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/deepep_bench.h"

static cJSON *doc_of(const char *json) {
    cJSON *d = cJSON_Parse(json);
    assert_non_null(d);
    return d;
}

static void test_compare_moves(void **state) {
    (void)state;
    cJSON *base = doc_of("{\"cases\":[{\"name\":\"a\",\"kind\":\"step\",\"status\":\"ok\",\"error_pct\":5.0},"
                         "{\"name\":\"b\",\"kind\":\"step\",\"status\":\"not expressible\"},"
                         "{\"name\":\"c\",\"kind\":\"step\",\"status\":\"ok\",\"error_pct\":-3.0}]}");
    /* 0.9 points is within the tolerance, 1.1 is not */
    cJSON *same = doc_of("{\"cases\":[{\"name\":\"a\",\"status\":\"ok\",\"error_pct\":5.9},"
                         "{\"name\":\"b\",\"status\":\"not expressible\"},{\"name\":\"c\",\"status\":\"ok\",\"error_pct\":-3.9}]}");
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(validate_compare(same, base, 1.0, devnull), 0);
    cJSON *moved = doc_of("{\"cases\":[{\"name\":\"a\",\"status\":\"ok\",\"error_pct\":6.1},"
                          "{\"name\":\"b\",\"status\":\"ok\",\"error_pct\":1.0},{\"name\":\"d\",\"status\":\"ok\",\"error_pct\":0}]}");
    /* a moved by 1.1, b changed status, d is new, c is gone */
    assert_int_equal(validate_compare(moved, base, 1.0, devnull), 4);
    fclose(devnull);
    cJSON_Delete(base);
    cJSON_Delete(same);
    cJSON_Delete(moved);
}

static void test_band(void **state) {
    (void)state;
    /* errors +10% and -5% on rates, and a step time 25% long (= a rate 20% low); deepep and
     * not-run cases do not count */
    cJSON *d = doc_of("{\"cases\":[{\"name\":\"a\",\"kind\":\"step\",\"metric\":\"tokens_per_s_per_gpu\",\"status\":\"ok\",\"error_pct\":10},"
                      "{\"name\":\"b\",\"kind\":\"step\",\"metric\":\"tflops_per_gpu\",\"status\":\"ok\",\"error_pct\":-5},"
                      "{\"name\":\"c\",\"kind\":\"step\",\"metric\":\"step_time_s\",\"status\":\"ok\",\"error_pct\":25},"
                      "{\"name\":\"x\",\"kind\":\"deepep\",\"metric\":\"dispatch_rdma_GBps\",\"status\":\"ok\",\"error_pct\":90},"
                      "{\"name\":\"y\",\"kind\":\"step\",\"metric\":\"step_time_s\",\"status\":\"not expressible\"}]}");
    validate_band b;
    assert_int_equal(validate_band_of(d, -1, &b), 0);
    assert_int_equal(b.cases, 3);
    assert_float_equal(b.max_rel_err, 0.10, 1e-12);
    assert_float_equal(b.min_rel_err, -0.20, 1e-12);
    double lo, hi;
    validate_band_apply(&b, 1100.0, &lo, &hi);
    assert_float_equal(lo, 1000.0, 1e-9);
    assert_float_equal(hi, 1375.0, 1e-9);
    cJSON_Delete(d);
    /* MoE and dense cases give their own bands */
    cJSON *k = doc_of("{\"cases\":[{\"name\":\"a\",\"kind\":\"step\",\"metric\":\"tokens_per_s_per_gpu\",\"status\":\"ok\",\"error_pct\":4,\"moe\":false},"
                      "{\"name\":\"b\",\"kind\":\"step\",\"metric\":\"tokens_per_s_per_gpu\",\"status\":\"ok\",\"error_pct\":60,\"moe\":true},"
                      "{\"name\":\"c\",\"kind\":\"step\",\"metric\":\"tokens_per_s_per_gpu\",\"status\":\"ok\",\"error_pct\":-2,\"moe\":false}]}");
    assert_int_equal(validate_band_of(k, 0, &b), 0);
    assert_float_equal(b.min_rel_err, -0.02, 1e-12);
    assert_float_equal(b.max_rel_err, 0.04, 1e-12);
    assert_int_equal(validate_band_of(k, 1, &b), 0);
    assert_float_equal(b.min_rel_err, 0.0, 1e-12);   /* the band holds the prediction itself */
    assert_float_equal(b.max_rel_err, 0.60, 1e-12);
    validate_band_apply_time(&b, 10.0, &lo, &hi);   /* rates up to 60% fast: times up to 1.6 x longer */
    assert_float_equal(lo, 10.0, 1e-12);
    assert_float_equal(hi, 16.0, 1e-12);
    cJSON_Delete(k);
    cJSON *none = doc_of("{\"cases\":[]}");
    assert_int_equal(validate_band_of(none, -1, &b), -1);
    cJSON_Delete(none);
}

/* A fresh folder `dir` (a mkdtemp template) holding `cases_json` as cases.json (its path in `path`) and
 * the name of an output folder under it in `out`. */
static void cases_folder(char *dir, const char *cases_json, char path[256], char out[300]) {
    assert_non_null(mkdtemp(dir));
    snprintf(path, 256, "%s/cases.json", dir);
    snprintf(out, 300, "%s/out", dir);
    moe_error err = {0};
    assert_int_equal(write_file_atomic(path, cases_json, &err), 0);
}

/* Bad cases files: exit 2 naming the file, the path and the value. */
static void expect_bad(const char *cases_json, const char *needle) {
    char dir[] = "/tmp/moesim-validate-XXXXXX", path[256], out[300];
    cases_folder(dir, cases_json, path, out);
    moe_error err = {0};
    validate_opts o = {.cases_path = path, .out_dir = out, .jobs = 1, .quiet = 1};
    FILE *devnull = fopen("/dev/null", "w");
    int rc = validate_run(&o, devnull, &err);
    fclose(devnull);
    if (rc != EXIT_BADINPUT || !strstr(err.msg, needle) || !strstr(err.msg, "cases.json"))
        fail_msg("rc %d, message \"%s\" (wanted \"%s\")", rc, err.msg, needle);
    unlink(path);
    rmdir(dir);
}

#define CASE_OK "\"name\":\"x\",\"scenario\":\"s.json\",\"published\":1,\"features\":[],\"source\":{\"document\":\"d\",\"table\":\"t\",\"row\":\"r\"}"

static void test_bad_cases_files(void **state) {
    (void)state;
    expect_bad("{\"format\":\"moesim-validation/2\",\"cases\":[]}", "format");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[]}", "cases");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"metric\":\"mfu\"}]}", "cases[0].metric");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"metric\":\"step_time_s\",\"publishd\":2}]}",
               "cases[0].publishd");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"metric\":\"step_time_s\"},{" CASE_OK
               ",\"metric\":\"step_time_s\"}]}", "cases[1]");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{\"name\":\"x\",\"scenario\":\"s.json\",\"published\":1,"
               "\"features\":[],\"metric\":\"step_time_s\",\"source\":{\"document\":\"d\",\"table\":\"t\"}}]}",
               "cases[0].source.row");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"kind\":\"deepep\",\"metric\":\"dispatch_rdma_GBps\","
               "\"deepep\":{\"ep\":16,\"tokens\":4096,\"hidden\":7168,\"topk\":8,\"experts\":256,\"dispatch\":\"fp4\"}}]}",
               "cases[0].deepep.dispatch");
    /* a case is run from its scenario or listed as not expressible, never both; the reason is a string */
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"metric\":\"step_time_s\","
               "\"not_expressible\":\"why\"}]}", "cases[0].not_expressible");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{\"name\":\"x\",\"published\":1,\"features\":[],"
               "\"metric\":\"step_time_s\",\"source\":{\"document\":\"d\",\"table\":\"t\",\"row\":\"r\"},"
               "\"not_expressible\":7}]}", "cases[0].not_expressible");
    expect_bad("{\"format\":\"moesim-validation/1\",\"cases\":[{" CASE_OK ",\"metric\":\"step_time_s\","
               "\"not_modelled\":\"muon\"}]}", "cases[0].not_modelled");
}

/* A run the scenario format cannot state is listed with its reason and counted, not dropped and not
 * run: one such case beside nothing else gives a table of one case, none evaluated, one not expressible,
 * its reason printed and kept with its not-modelled list. */
static void test_not_expressible_listed(void **state) {
    (void)state;
    char dir[] = "/tmp/moesim-validate-XXXXXX", path[256], out[300], json[400];
    cases_folder(dir,
                 "{\"format\":\"moesim-validation/1\",\"cases\":[{\"name\":\"hybrid-8\",\"metric\":\"tokens_per_s_per_gpu\","
                 "\"published\":37888,\"source\":{\"document\":\"d\",\"table\":\"t\",\"row\":\"r\"},\"features\":[\"f\"],"
                 "\"not_modelled\":[\"Mamba-2 layers\"],\"not_expressible\":\"Mamba-2 hybrid layers: no such block\"}]}",
                 path, out);
    moe_error err = {0};
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    validate_opts o = {.cases_path = path, .out_dir = out, .jobs = 1};
    assert_int_equal(validate_run(&o, mem, &err), 0);
    fclose(mem);
    assert_non_null(strstr(text, "not expressible: Mamba-2 hybrid layers: no such block"));
    assert_non_null(strstr(text, "all cases: 1 cases, 1 not expressible, 0 evaluated: 0 ok"));
    snprintf(json, sizeof json, "%s/validation.json", out);
    cJSON *doc = json_load(json, 0, &err);
    assert_non_null(doc);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "cases"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "status")->valuestring, "not expressible");
    assert_string_equal(cJSON_GetObjectItem(c, "detail")->valuestring, "Mamba-2 hybrid layers: no such block");
    assert_null(cJSON_GetObjectItem(c, "predicted"));
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "not_modelled"), 0)->valuestring, "Mamba-2 layers");
    const cJSON *sum = cJSON_GetObjectItem(doc, "summary");
    assert_int_equal((int)cJSON_GetObjectItem(sum, "cases")->valuedouble, 1);
    assert_int_equal((int)cJSON_GetObjectItem(sum, "evaluated")->valuedouble, 0);
    assert_int_equal((int)cJSON_GetObjectItem(sum, "not_expressible")->valuedouble, 1);
    cJSON_Delete(doc);
    free(text);
    char csv[400];
    snprintf(csv, sizeof csv, "%s/validation.csv", out);
    unlink(json);
    unlink(csv);
    rmdir(out);
    unlink(path);
    rmdir(dir);
}

/* P(a token's k distinct experts out of `pool` hit a set of `hit`) */
static double p_hit(double pool, double hit, int k) {
    return 1.0 - exp(gsl_sf_lnchoose((unsigned)(pool - hit), (unsigned)k) - gsl_sf_lnchoose((unsigned)pool, (unsigned)k));
}

/* DeepEP's counting on 2 nodes (EP16, both node groups kept: top-8 of all 256): rank 0 sends each
 * token to E[distinct nodes] = 2 p(128 of 256) nodes (its own included) and receives from the 16 x
 * 4096 tokens those that hit its 16 experts. Time: rank-0 rates equal counted bytes / time. */
static void test_deepep_counting(void **state) {
    (void)state;
    scenario s;
    moe_error err = {0};
    assert_int_equal(scenario_load("scenarios/validation/deepep-h800.json", &s, NULL, &err), 0);
    deepep_case c = {.ep = 16, .tokens = 4096, .hidden = 7168, .topk = 8, .experts = 256, .dispatch_elt_B = 1.03125,
                     .combine_elt_B = 2.0, .seed = 1};
    deepep_result r;
    assert_int_equal(deepep_bench_run(&s, &c, &r, &err), 0);
    assert_int_equal(r.nodes, 2);
    double rdma = 4096 * 2 * p_hit(256, 128, 8), nvl = 16 * 4096 * p_hit(256, 16, 8);
    /* sampling: 4096 tokens, relative sd ~ 1/sqrt(4096 * distinct) */
    assert_float_equal(r.rdma_tokens, rdma, 0.01 * rdma);
    assert_float_equal(r.nvl_tokens, nvl, 0.01 * nvl);
    assert_float_equal(r.dispatch_rdma_GBps, r.rdma_tokens * 7168 * 1.03125 / 1e9 / r.dispatch_s, 1e-9);
    assert_float_equal(r.combine_nvl_GBps, r.nvl_tokens * 7168 * 2.0 / 1e9 / r.combine_s, 1e-9);
    /* node-limited: on 8 nodes a token keeps 4 node groups, so it reaches at most 4 nodes */
    deepep_case c8 = c;
    c8.ep = 64;
    deepep_result r8;
    assert_int_equal(deepep_bench_run(&s, &c8, &r8, &err), 0);
    assert_true(r8.rdma_tokens <= 4.0 * 4096 && r8.rdma_tokens > 3.0 * 4096);
    /* bad EP sizes are bad input */
    deepep_case bad = c;
    bad.ep = 12;
    assert_int_equal(deepep_bench_run(&s, &bad, &r, &err), EXIT_BADINPUT);
}

/* A case is `ok` within VALIDATE_OK_TOL_PCT (10%) of its published value and a `miss` beyond, whatever
 * the sign; the summary counts both and prints the tolerance. The prediction x of one DeepEP cell is
 * taken from a first run; the cases then publish x / 1.05 and x / 0.95 (errors +5%, -5%: ok), x / 1.2
 * and x / 0.8 (+20%, -20%: miss). */
static char *validate_cases(const char *dir, const char *cases, char *doc_text_out, size_t cap) {
    char path[400], out[300];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    moe_error err = {0};
    assert_int_equal(write_file_atomic(path, cases, &err), 0);
    validate_opts o = {.cases_path = path, .out_dir = out, .jobs = 1};
    char *printed = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&printed, &len);
    assert_int_equal(validate_run(&o, f, &err), 0);
    fclose(f);
    snprintf(path, sizeof path, "%s/validation.json", out);
    char *text = read_file_text(path, NULL, &err);
    assert_non_null(text);
    snprintf(doc_text_out, cap, "%s", text);
    free(text);
    return printed;
}

#define DEEPEP_CASE(name, published)                                                                         \
    "{\"name\":\"" name "\",\"kind\":\"deepep\",\"scenario\":\"%s/scenarios/validation/deepep-h800.json\"," \
    "\"metric\":\"dispatch_nvl_GBps\",\"published\":" published ",\"features\":[],"                          \
    "\"source\":{\"document\":\"d\",\"table\":\"t\",\"row\":\"r\"},"                                        \
    "\"deepep\":{\"ep\":8,\"tokens\":4096,\"hidden\":7168,\"topk\":8,\"experts\":256,\"dispatch\":\"fp8\",\"seed\":1}}"

static void test_status_tolerance(void **state) {
    (void)state;
    char dir[] = "/tmp/moesim-validate-XXXXXX", cwd[1024], cases[16384], *doc_text = malloc(1 << 20);
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(cases, sizeof cases, "{\"format\":\"moesim-validation/1\",\"cases\":[" DEEPEP_CASE("x", "153") "]}", cwd);
    free(validate_cases(dir, cases, doc_text, 1 << 20));
    cJSON *d = doc_of(doc_text);
    double x = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "cases"), 0), "predicted")->valuedouble;
    cJSON_Delete(d);
    char pub[4][32];
    const double by[4] = {1.05, 0.95, 1.2, 0.8};
    for (int i = 0; i < 4; i++) snprintf(pub[i], sizeof pub[i], "%.17g", x / by[i]);
    snprintf(cases, sizeof cases,
             "{\"format\":\"moesim-validation/1\",\"cases\":[" DEEPEP_CASE("a", "%s") "," DEEPEP_CASE("b", "%s") ","
             DEEPEP_CASE("c", "%s") "," DEEPEP_CASE("d", "%s") "]}",
             cwd, pub[0], cwd, pub[1], cwd, pub[2], cwd, pub[3]);
    char *printed = validate_cases(dir, cases, doc_text, 1 << 20);
    d = doc_of(doc_text);
    const char *want[4] = {"ok", "ok", "miss", "miss"};
    int i = 0;
    for (const cJSON *c = cJSON_GetObjectItem(d, "cases")->child; c; c = c->next, i++) {
        double e = cJSON_GetObjectItem(c, "error_pct")->valuedouble;
        assert_float_equal(e, 100.0 * (by[i] - 1.0), 1e-9);   /* (x - x/b) / (x/b) = b - 1 */
        assert_string_equal(cJSON_GetObjectItem(c, "status")->valuestring, want[i]);
    }
    const cJSON *s = cJSON_GetObjectItem(d, "summary");
    assert_int_equal(cJSON_GetObjectItem(s, "ok")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(s, "miss")->valueint, 2);
    assert_float_equal(cJSON_GetObjectItem(s, "tolerance_pct")->valuedouble, 10.0, 0);
    if (!strstr(printed, "4 cases, 4 evaluated: 2 ok (|error| <= 10%), 2 miss")) fail_msg("summary:\n%s", printed);
    /* the printed status column: the last word of each case's row */
    for (i = 0; i < 4; i++) {
        char head[8];
        snprintf(head, sizeof head, "\n%c ", 'a' + i);
        const char *row = strstr(printed, head);
        assert_non_null(row);
        const char *end = strchr(row + 1, '\n');
        size_t n = strlen(want[i]);
        if ((size_t)(end - row) < n + 2 || strncmp(end - n - 2, "  ", 2) != 0 || strncmp(end - n, want[i], n) != 0)
            fail_msg("case %c is not printed as %s:\n%s", 'a' + i, want[i], printed);
    }
    cJSON_Delete(d);
    free(printed);
    free(doc_text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_moves),
        cmocka_unit_test(test_band),
        cmocka_unit_test(test_bad_cases_files),
        cmocka_unit_test(test_not_expressible_listed),
        cmocka_unit_test(test_deepep_counting),
        cmocka_unit_test(test_status_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
