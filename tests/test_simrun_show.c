/* test_simrun_show.c — `simrun show SCENARIO --point N`: the fully resolved scenario, each value with
 * its origin. The truth is a hand-written scenario whose every origin is known: fields it gives, fields
 * its presets supply (with the values of the published model cards), built-in defaults, a value the
 * file gives and the sweep overrides, and a name derived from the file name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_run.h"

static char simrun[4096];
static char tmpdir[] = "/tmp/moesim-show-XXXXXX";
static char scenario_path[4200];
static char out[1 << 17], err[8192];

static int show(const char *point, const char *format) {
    return cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "show", scenario_path, "--point", point,
                   "--format", format, NULL);
}

static int setup(void **state) {
    (void)state;
    cli_tool_path("simrun", simrun, sizeof simrun);
    if (!mkdtemp(tmpdir)) return -1;
    /* no "name": it comes from the file name */
    snprintf(scenario_path, sizeof scenario_path, "%s/mixtral-32.json", tmpdir);
    FILE *f = fopen(scenario_path, "w");
    if (!f) return -1;
    fputs("{\n"
          "  \"model\": {\"preset\": \"mixtral-8x7b\", \"layers\": 16},\n"
          "  \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 32},\n"
          "  \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 8, \"dp\": 32, \"schedule\": \"1f1b\", \"global_batch\": 1024},\n"
          "  \"reliability\": {\"checkpoint\": {\"policy\": \"fixed\", \"interval_min\": 30}},\n"
          "  \"sweep\": {\"reliability.checkpoint.interval_min\": [15, 30, 60]}\n"
          "}\n", f);
    fclose(f);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

static const cJSON *row(const cJSON *doc, const char *path) {
    for (const cJSON *r = cJSON_GetObjectItem(doc, "fields")->child; r; r = r->next)
        if (strcmp(cJSON_GetObjectItem(r, "path")->valuestring, path) == 0) return r;
    fail_msg("no row %s", path);
    return NULL;
}

static void expect(const cJSON *doc, const char *path, const char *value_json, const char *origin, const char *detail) {
    const cJSON *r = row(doc, path);
    char *v = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "value"));
    if (strcmp(v, value_json) != 0) fail_msg("%s: value %s, want %s", path, v, value_json);
    cJSON_free(v);
    const char *o = cJSON_GetObjectItem(r, "origin")->valuestring;
    if (strcmp(o, origin) != 0) fail_msg("%s: origin %s, want %s", path, o, origin);
    const cJSON *d = cJSON_GetObjectItem(r, "detail");
    if (detail && (!d || strcmp(d->valuestring, detail) != 0))
        fail_msg("%s: detail %s, want %s", path, d ? d->valuestring : "(none)", detail);
}

static void test_origins(void **state) {
    (void)state;
    assert_int_equal(show("2", "json"), 0);
    cJSON *doc = cJSON_Parse(out);
    assert_non_null(doc);
    assert_int_equal(cJSON_GetObjectItem(doc, "point")->valueint, 2);
    expect(doc, "name", "\"mixtral-32\"", "built-in default", "from the file name");
    expect(doc, "model.preset", "\"mixtral-8x7b\"", "scenario", NULL);
    expect(doc, "model.layers", "16", "scenario", NULL);
    /* Mixtral 8x7B's config.json: hidden 4096, 8 KV heads, 8 experts, top-2 */
    expect(doc, "model.hidden", "4096", "preset", "mixtral-8x7b");
    expect(doc, "model.kv_heads", "8", "preset", "mixtral-8x7b");
    expect(doc, "model.top_k", "2", "preset", "mixtral-8x7b");
    /* Mixtral was published as a BF16 run */
    expect(doc, "precision.compute", "\"bf16\"", "preset", "mixtral-8x7b");
    expect(doc, "cluster.nodes", "32", "scenario", NULL);
    expect(doc, "cluster.nvlink_GBps", "450", "preset", "h100-8rail");   /* H100 SXM: 900 GB/s both ways */
    expect(doc, "calibration", "\"calibration/models/h100-published.json\"", "preset", "h100-8rail");
    expect(doc, "layout.zero", "1", "built-in default", NULL);
    expect(doc, "layout.dp", "32", "scenario", NULL);
    /* the file says 30, the sweep's third value is 60 */
    expect(doc, "reliability.checkpoint.interval_min", "60", "sweep", NULL);
    expect(doc, "reliability.checkpoint.policy", "\"fixed\"", "scenario", NULL);
    expect(doc, "reliability.gpu_mtbf_h", "26000", "built-in default", NULL);
    cJSON_Delete(doc);

    /* the text form: one line per field, the label never cut */
    assert_int_equal(show("0", "text"), 0);
    assert_non_null(strstr(out, "point 0 of 3"));
    assert_non_null(strstr(out, "reliability.classes.software.needs_node_swap"));
    const char *line = strstr(out, "\nreliability.checkpoint.interval_min ");
    assert_non_null(line);
    assert_non_null(strstr(line, " 15 "));
    assert_true(strstr(line, "sweep") < strchr(line + 1, '\n'));
}

static void test_bad_point(void **state) {
    (void)state;
    assert_int_equal(show("3", "text"), 2);
    assert_non_null(strstr(err, "--point"));
    assert_non_null(strstr(err, "3 points"));
    assert_int_equal(show("x", "text"), 2);
    /* beyond an int or below 0: the bound said is the sweep's, [0, 3), never the type's */
    static const char *const far[] = {"99999999999", "-1", "2147483648"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(show(far[i], "text"), 2);
        assert_non_null(strstr(err, "a point in [0, 3) (the sweep has 3 points)"));
        assert_null(strstr(err, "2147483647"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origins),
        cmocka_unit_test(test_bad_point),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
