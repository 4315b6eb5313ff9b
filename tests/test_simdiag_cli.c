/* test_simdiag_cli.c — simdiag on what simrun writes for a sweep, and compare's default tolerance.
 *
 * A two-point sweep of the small 32-GPU MoE (tests/data/scenarios/small-moe.json) at step level with
 * traces: point 0 healthy, point 1 with GPU 5 computing 2x slower. `simdiag check DIR` reads both
 * traces/trace-ID.json, names GPU 5 in point 1 only and exits 3. compare: the stored predicted and
 * measured traces differ by 50% in one op class (test_diagnose.c), above the default 20%. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/fileio.h"
#include "sim/report/diagnose.h"
#include "tests/cli_run.h"

#define TRACES "tests/data/traces/"

static char simrun[4096], simdiag[4096], sweep_dir[4200];
static char tmpdir[] = "/tmp/moesim-diagcli-XXXXXX";
static char out[1 << 17], err[8192];

static int setup(void **state) {
    (void)state;
    cli_tool_path("simrun", simrun, sizeof simrun);
    cli_tool_path("simdiag", simdiag, sizeof simdiag);
    if (!mkdtemp(tmpdir)) return -1;
    moe_error e = {0};
    char *base = read_file_text("tests/data/scenarios/small-moe.json", NULL, &e);
    if (!base) return -1;
    cJSON *s = cJSON_Parse(base);
    free(base);
    cJSON_ReplaceItemInObject(s, "name", cJSON_CreateString("small-slow-sweep"));
    cJSON_ReplaceItemInObject(s, "output", cJSON_Parse("{\"trace\": true, \"plots\": false, \"levels\": [\"plan\", \"step\"]}"));
    cJSON_AddItemToObject(s, "sweep", cJSON_Parse("{\"faults.slow_gpus\": [[], [{\"gpu\": 5, \"factor\": 2}]]}"));
    char path[4300], *text = cJSON_Print(s);
    cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/sweep.json", tmpdir);
    snprintf(sweep_dir, sizeof sweep_dir, "%s/sweep", tmpdir);
    int rc = write_file_atomic(path, text, &e);
    free(text);
    if (rc) return -1;
    return cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, path, "--out", sweep_dir, "--jobs", "1", "-q", NULL);
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

static void test_check_sweep_folder(void **state) {
    (void)state;
    char json[4400];
    snprintf(json, sizeof json, "%s/diag.json", tmpdir);
    assert_int_equal(cli_run(simdiag, tmpdir, out, sizeof out, err, sizeof err, "check", sweep_dir, "--out", json, NULL),
                     DIAG_EXIT_PROBLEM);
    assert_non_null(strstr(out, "traces/trace-000000.json"));
    const char *second = strstr(out, "traces/trace-000001.json");
    assert_non_null(second);
    const char *gpu5 = strstr(out, "straggler: rank 5");
    assert_non_null(gpu5);
    assert_true(gpu5 > second);   /* only in the slow point */
    assert_non_null(strstr(out, "2 traces checked, 1 with a problem"));
    moe_error e = {0};
    char *t = read_file_text(json, NULL, &e);
    assert_non_null(t);
    cJSON *doc = cJSON_Parse(t);
    free(t);
    assert_string_equal(cJSON_GetObjectItem(doc, "format")->valuestring, "moesim-diagnosis-set/1");
    const cJSON *reports = cJSON_GetObjectItem(doc, "traces");
    assert_int_equal(cJSON_GetArraySize(reports), 2);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(reports, 0), "healthy")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(reports, 1), "healthy")));
    cJSON_Delete(doc);
    /* one trace of the sweep on its own: healthy */
    char one[4400];
    snprintf(one, sizeof one, "%s/traces/trace-000000.json", sweep_dir);
    assert_int_equal(cli_run(simdiag, tmpdir, out, sizeof out, err, sizeof err, "check", one, "-q", NULL), 0);
}

static void test_compare_default_tolerance(void **state) {
    (void)state;
    assert_int_equal(cli_run(simdiag, tmpdir, out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                             TRACES "compare-measured.json", NULL), DIAG_EXIT_PROBLEM);
    assert_non_null(strstr(out, "tolerance 20.0%"));
    assert_int_equal(cli_run(simdiag, tmpdir, out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                             TRACES "compare-measured.json", "--tolerance=60", NULL), 0);
    /* a trace against itself is within any tolerance */
    assert_int_equal(cli_run(simdiag, tmpdir, out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                             TRACES "compare-predicted.json", "--tolerance", "0", NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_sweep_folder),
        cmocka_unit_test(test_compare_default_tolerance),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
