/* test_scenario_docs.c — the scenario reference (docs/scenario-fields.md, `simrun fields`) is complete
 * and current: every field of the table (and every key of a list's items) is documented, the
 * committed page holds exactly what the table generates, the fields the first users found only in
 * code are there, and the file-format examples of the page are read by the real readers. */
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
#include <unistd.h>

#include "sim/base/fileio.h"
#include "sim/program/routing.h"
#include "sim/run/failures.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_docs.h"
#include "sim/scenario/scenario_fields.h"

#define DOC_PATH "docs/scenario-fields.md"

static char *read_doc(void) {
    moe_error err = {0};
    char *t = read_file_text(DOC_PATH, NULL, &err);
    if (!t) fail_msg("%s", err.msg);
    return t;
}

static void check_documented(const scn_field *f, const char *path) {
    if (!f->doc.meaning || strlen(f->doc.meaning) < 8)
        fail_msg("scenario field %s has no meaning in sim/scenario/scenario_fields.c (add \"unit\", \"meaning\" "
                 "at the end of its row)", path);
    if (!f->doc.unit) fail_msg("scenario field %s has no unit (use \"\" for none)", path);
}

/* Every row and every list item says what it means. */
static void test_every_field_documented(void **state) {
    (void)state;
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        check_documented(f, f->path);
        for (int k = 0; f->type == SF_OBJ_LIST && k < f->n_items; k++) {
            char p[200];
            snprintf(p, sizeof p, "%s[].%s", f->path, f->items[k].path);
            check_documented(&f->items[k], p);
        }
    }
}

/* The committed page is, byte for byte, what `simrun fields --format markdown` writes now: the whole
 * page (its text and every table), so that the command regenerates it and nothing in it is edited by
 * hand. */
static void test_committed_doc_current(void **state) {
    (void)state;
    char *doc = read_doc();
    char *now = scn_fields_describe_text(SCN_DOC_MARKDOWN);
    assert_non_null(now);
    if (strcmp(doc, now) != 0)
        fail_msg("%s is stale: run `build/tools/simrun fields --format markdown --out %s` and commit it", DOC_PATH,
                 DOC_PATH);
    /* the command writes the same, on stdout and with --out */
    char simrun[4096], cmd[8400], path[64];
    const char *bin = getenv("MOESIM_BIN");
    snprintf(simrun, sizeof simrun, "%s/simrun", bin ? bin : "build/tools");
    snprintf(path, sizeof path, "/tmp/moesim-fields-%d.md", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' fields --format markdown", simrun);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = strlen(doc) + 65536, n = 0;
    char *out = malloc(cap);
    for (size_t got; (got = fread(out + n, 1, cap - 1 - n, p)) > 0;) n += got;
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, doc);
    snprintf(cmd, sizeof cmd, "'%s' fields --format markdown --out %s --quiet", simrun, path);
    assert_int_equal(system(cmd), 0);
    moe_error err = {0};
    char *written = read_file_text(path, NULL, &err);
    assert_non_null(written);
    assert_string_equal(written, doc);
    unlink(path);
    free(written);
    free(out);
    free(now);
    free(doc);
}

/* The fields users found only in code, named in the reference with a
 * meaning, and defaults shown with where they come from. */
static void test_named_fields_present(void **state) {
    (void)state;
    static const char *const paths[] = {
        "model.kv_heads", "model.v_head_dim", "model.q_lora_rank", "model.kv_lora_rank", "model.rope_head_dim",
        "model.expert_groups", "model.topk_groups", "model.published_active_params",
        "reliability.checkpoint.write_min", "run.assumed_mfu", "faults.slow_gpus", "faults.slow_gpus[].factor",
        "faults.links[].kind", "faults.stalls[].micro_batch", "reliability.classes.gpu.share",
        "reliability.classes.software.needs_node_swap", "output.trace_ranks", "step.fidelity", "routing.trace",
        "reliability.stragglers.detect_min", "reliability.failure_trace", NULL};
    char *json = scn_fields_describe_text(SCN_DOC_JSON);
    cJSON *doc = cJSON_Parse(json);
    assert_non_null(doc);
    const cJSON *fields = cJSON_GetObjectItem(doc, "fields");
    for (const char *const *p = paths; *p; p++) {
        const cJSON *hit = NULL;
        for (const cJSON *f = fields->child; f && !hit; f = f->next)
            if (strcmp(cJSON_GetObjectItem(f, "path")->valuestring, *p) == 0) hit = f;
        if (!hit) fail_msg("%s missing from `simrun fields`", *p);
        assert_true(strlen(cJSON_GetObjectItem(hit, "meaning")->valuestring) > 8);
    }
    /* a preset default names its preset; a built-in one says so; the storage figure has its source */
    for (const cJSON *f = fields->child; f; f = f->next) {
        const char *path = cJSON_GetObjectItem(f, "path")->valuestring;
        const cJSON *from = cJSON_GetObjectItem(f, "default_from");
        if (strcmp(path, "model.layers") == 0) {
            assert_string_equal(from->valuestring, "model preset deepseek-v3");
            assert_int_equal(cJSON_GetObjectItem(f, "default")->valueint, 61);   /* DeepSeek-V3 config.json */
        }
        if (strcmp(path, "reliability.gpu_mtbf_h") == 0) {
            assert_string_equal(from->valuestring, "built in");
            assert_non_null(strstr(cJSON_GetObjectItem(f, "source")->valuestring, "419"));
        }
        if (strcmp(path, "cluster.storage_GBps") == 0) {
            assert_true(cJSON_GetObjectItem(f, "default")->valuedouble == 500);
            assert_non_null(strstr(cJSON_GetObjectItem(f, "source")->valuestring, "Llama 3"));
        }
    }
    cJSON_Delete(doc);
    free(json);
}

/* The fenced block that follows `heading` in the page. */
static char *example_after(const char *doc, const char *heading) {
    const char *h = strstr(doc, heading);
    assert_non_null(h);
    const char *open = strstr(h, "```");
    assert_non_null(open);
    open = strchr(open, '\n') + 1;
    const char *close = strstr(open, "```");
    assert_non_null(close);
    return strndup(open, (size_t)(close - open));
}

static void write_tmp(char *path, const char *text) {
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

/* The page's examples of the two file formats are accepted by the readers the simulator uses. */
static void test_format_examples_read(void **state) {
    (void)state;
    char *doc = read_doc();
    char *csv = example_after(doc, "### Failure trace");
    char csv_path[] = "/tmp/moesim-doc-trace-XXXXXX";
    write_tmp(csv_path, csv);
    failure_trace t;
    moe_error err = {0};
    scenario s4096;
    scenario_defaults(&s4096);   /* 4096 GPUs */
    if (failure_trace_load(csv_path, &s4096, &t, &err)) fail_msg("the documented failure trace: %s", err.msg);
    assert_int_equal(t.n, 3);
    assert_true(t.ev[0].time_s == 2.5 * 3600 && t.ev[0].rank == 17 && t.ev[0].source == FAIL_GPU);
    assert_true(t.ev[2].source == FAIL_SOFTWARE);
    failure_trace_free(&t);
    unlink(csv_path);

    char *json = example_after(doc, "### Expert load");
    char json_path[] = "/tmp/moesim-doc-load-XXXXXX";
    write_tmp(json_path, json);
    scenario s;
    scenario_defaults(&s);
    assert_int_equal(preset_model("mixtral-8x7b", &s.model), 0);   /* 8 experts, top-2 */
    s.layout.ep = 8;
    s.routing.distribution = ROUTE_TRACE;
    snprintf(s.routing.trace, sizeof s.routing.trace, "%s", json_path);
    int gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    routing_ctx *c = routing_ctx_create(&s, gpus, &err);
    if (!c) fail_msg("the documented expert load: %s", err.msg);
    assert_int_equal(routing_ctx_layer_laws(c), 2);   /* two rows */
    routing_ctx_free(c);
    unlink(json_path);
    free(json);
    free(csv);
    free(doc);
}

/* The README points users at the reference. */
static void test_readme_links_reference(void **state) {
    (void)state;
    moe_error err = {0};
    char *readme = read_file_text("README.md", NULL, &err);
    assert_non_null(readme);
    assert_non_null(strstr(readme, "docs/scenario-fields.md"));
    free(readme);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_documented),
        cmocka_unit_test(test_committed_doc_current),
        cmocka_unit_test(test_named_fields_present),
        cmocka_unit_test(test_format_examples_read),
        cmocka_unit_test(test_readme_links_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
