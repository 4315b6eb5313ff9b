/* test_model_scope.c — a scenario's values come from what it writes or names, never from another
 * model.
 *
 * Truths, each from its source rather than from the code under test:
 *   - DeepSeek-V3 report (arXiv:2412.19437): node-limited routing to at most 4 nodes and no token
 *     dropping (section 2.1.2), blockwise FP8 compute with FP8 dispatch and BF16 combine (section 3.3),
 *     14.8T training tokens (abstract);
 *   - the other MoE presets (Mixtral, Qwen3, gpt-oss, Kimi K2) publish no node limit and no capacity:
 *     free, dropless routing in BF16; Qwen3 36T tokens (arXiv:2505.09388), Kimi K2 15.5T
 *     (arXiv:2507.20534), Llama 3 "over 15T" (arXiv:2407.21783), GPT-3 300B (arXiv:2005.14165);
 *   - Mixtral 8x7B's config.json (hidden 4096, 32 layers, 32 heads of 128, 8 KV heads, 8 experts of
 *     14,336, top-2, vocabulary 32,000): written field by field it is the same model as the preset, so
 *     with the same compute recipe it must give the same plan;
 *   - a rail-optimized node has one rail per GPU: 4 GPUs per node, 4 rails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "sim/plan/plan.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/scenario/scenario_origin.h"

static int parse(const char *json, scenario *s, moe_error *err) {
    return scenario_parse("tests/scope.json", json, s, NULL, err);
}

/* a sweep base is not validated as a whole: a "sweep" lets the default layout not fit the model */
static void parse_ok(const char *json, scenario *s) {
    moe_error err = {0};
    sweep *sw = NULL;
    if (scenario_parse("tests/scope.json", json, s, &sw, &err)) fail_msg("%s\n  for %s", err.msg, json);
    sweep_free(sw);
}

/* A dense 13B written field by field (Llama 2 13B's shape) on 64 H100. */
#define DENSE_13B                                                                                         \
    "\"model\": {\"layers\": 40, \"hidden\": 5120, \"heads\": 40, \"head_dim\": 128, \"vocab\": 32000,"    \
    " \"seq_len\": 4096, \"attention\": \"mha\", \"experts\": 0, \"ffn_hidden\": 13824},"                 \
    " \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 8},"                                           \
    " \"layout\": {\"tp\": 8, \"pp\": 1, \"ep\": 1, \"dp\": 8, \"schedule\": \"1f1b\", \"global_batch\": 512}"

/* Mixtral 8x7B written field by field, without its published active count */
#define MIXTRAL_FIELDS                                                                                     \
    "\"layers\": 32, \"dense_layers\": 0, \"hidden\": 4096, \"heads\": 32, \"head_dim\": 128,"             \
    " \"kv_heads\": 8, \"ffn_hidden\": 14336, \"experts\": 8, \"shared_experts\": 0, \"expert_hidden\": 14336," \
    " \"top_k\": 2, \"vocab\": 32000, \"seq_len\": 4096, \"attention\": \"gqa\""
#define MIXTRAL_LAYOUT                                                                                     \
    " \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 8},"                                           \
    " \"layout\": {\"tp\": 1, \"pp\": 4, \"ep\": 8, \"dp\": 2, \"schedule\": \"1f1b\", \"global_batch\": 256}"

/* A model section without "preset" is that model alone: nothing of DeepSeek-V3 survives in it. */
static void test_hand_written_model_inherits_nothing(void **state) {
    (void)state;
    scenario s;
    parse_ok("{" DENSE_13B "}", &s);
    assert_string_equal(s.model.preset, "");
    assert_int_equal(s.model.attention, ATTN_MHA);
    assert_int_equal(s.model.q_lora_rank, 0);
    assert_int_equal(s.model.kv_lora_rank, 0);
    assert_int_equal(s.model.top_k, 0);
    assert_int_equal(s.model.expert_groups, 0);
    assert_true(s.model.published_active_params == 0);
    assert_int_equal(s.model.dense_layers, 40);
    /* neutral recipe: BF16 compute, dispatch and combine, FP32 master; dropless, no node limit */
    assert_int_equal(s.precision.compute, DT_BF16);
    assert_int_equal(s.precision.dispatch, DT_BF16);
    assert_int_equal(s.precision.combine, DT_BF16);
    assert_int_equal(s.precision.master, DT_FP32);
    assert_int_equal(s.routing.node_limit, 0);
    assert_true(s.routing.capacity_factor == 0 && s.routing.drop == 0);
}

/* Every missing field at once, and the presets to start from. */
static void test_hand_written_model_lists_every_missing_field(void **state) {
    (void)state;
    scenario s;
    moe_error err = {0};
    assert_int_equal(parse("{\"model\": {\"layers\": 4, \"experts\": 8, \"attention\": \"mla\"}}", &s, &err),
                     EXIT_BADINPUT);
    static const char *const missing[] = {"\"hidden\"", "\"heads\"", "\"head_dim\"", "\"vocab\"", "\"seq_len\"",
                                          "\"top_k\"", "\"expert_hidden\"", "\"shared_experts\"", "\"dense_layers\"",
                                          "\"q_lora_rank\"", "\"kv_lora_rank\"", "\"rope_head_dim\"", NULL};
    for (int i = 0; missing[i]; i++)
        if (!strstr(err.msg, missing[i])) fail_msg("no %s in: %s", missing[i], err.msg);
    assert_null(strstr(err.msg, "\"layers\""));
    assert_non_null(strstr(err.msg, "\"preset\""));
    assert_non_null(strstr(err.msg, "qwen3-30b-a3b"));
    assert_non_null(strstr(err.msg, "mixtral-8x22b"));
    /* an empty model section is a model without a preset too */
    assert_int_equal(parse("{\"model\": {}}", &s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "\"layers\""));
}

/* Each model preset carries its own routing constraints, precision and published tokens. */
static void test_presets_carry_their_own_training(void **state) {
    (void)state;
    static const struct {
        const char *preset;
        int node_limit;
        dtype_kind compute, dispatch;
        double tokens;
    } cases[] = {
        {"deepseek-v3", 4, DT_FP8, DT_FP8, 14.8e12},
        {"mixtral-8x7b", 0, DT_BF16, DT_BF16, SCN_ASSUMED_RUN_TOKENS},
        {"mixtral-8x22b", 0, DT_BF16, DT_BF16, SCN_ASSUMED_RUN_TOKENS},
        {"qwen3-30b-a3b", 0, DT_BF16, DT_BF16, 36e12},
        {"qwen3-235b-a22b", 0, DT_BF16, DT_BF16, 36e12},
        {"gpt-oss-120b", 0, DT_BF16, DT_BF16, SCN_ASSUMED_RUN_TOKENS},
        {"kimi-k2", 0, DT_BF16, DT_BF16, 15.5e12},
        {"llama3-405b", 0, DT_BF16, DT_BF16, 15e12},
        {"gpt3-175b", 0, DT_BF16, DT_BF16, 300e9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scenario s;
        char json[256];
        snprintf(json, sizeof json, "{\"model\": {\"preset\": \"%s\"}, \"sweep\": {\"seed\": [1]}}", cases[i].preset);
        parse_ok(json, &s);
        if (s.routing.node_limit != cases[i].node_limit) fail_msg("%s: node_limit %d", cases[i].preset, s.routing.node_limit);
        if (s.routing.capacity_factor != 0 || s.routing.drop) fail_msg("%s: not dropless", cases[i].preset);
        if (s.precision.compute != cases[i].compute || s.precision.dispatch != cases[i].dispatch)
            fail_msg("%s: precision %d/%d", cases[i].preset, s.precision.compute, s.precision.dispatch);
        assert_int_equal(s.precision.combine, DT_BF16);
        if (s.run.tokens != cases[i].tokens) fail_msg("%s: run.tokens %g", cases[i].preset, s.run.tokens);
    }
    /* what the scenario sets wins, before or after the model section */
    scenario s;
    parse_ok("{\"routing\": {\"node_limit\": 2, \"capacity_factor\": 1.25, \"drop\": true}, \"run\": {\"tokens\": 1e12},"
             " \"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"sweep\": {\"seed\": [1]}}", &s);
    assert_int_equal(s.routing.node_limit, 2);
    assert_true(s.routing.capacity_factor == 1.25 && s.routing.drop == 1);
    assert_true(s.run.tokens == 1e12);
}

/* precision.dispatch follows precision.compute unless set; the hand-written Mixtral is the preset. */
static void test_dispatch_follows_compute(void **state) {
    (void)state;
    static const struct { const char *compute; dtype_kind dispatch; } cases[] = {
        {"bf16", DT_BF16}, {"fp16", DT_BF16}, {"fp32", DT_BF16}, {"fp8", DT_FP8},
        {"fp8-cs", DT_BF16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scenario s;
        char json[256];
        snprintf(json, sizeof json, "{\"model\": {\"preset\": \"deepseek-v3\"}, \"precision\": {\"compute\": \"%s\"}}",
                 cases[i].compute);
        parse_ok(json, &s);
        if (s.precision.dispatch != cases[i].dispatch) fail_msg("compute %s: dispatch %d", cases[i].compute, s.precision.dispatch);
    }
    scenario s;
    parse_ok("{\"precision\": {\"compute\": \"bf16\", \"dispatch\": \"fp8\"}}", &s);
    assert_int_equal(s.precision.dispatch, DT_FP8);

    scenario preset, hand;
    parse_ok("{\"model\": {\"preset\": \"mixtral-8x7b\", \"published_active_params\": 0}, \"precision\": {\"compute\": \"bf16\"}," MIXTRAL_LAYOUT "}",
             &preset);
    parse_ok("{\"model\": {" MIXTRAL_FIELDS "}, \"precision\": {\"compute\": \"bf16\"}," MIXTRAL_LAYOUT "}", &hand);
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        if (strcmp(f->path, "model.preset") == 0) continue;
        if (!scn_field_same(&preset, &hand, f)) fail_msg("%s differs between the preset and the hand-written Mixtral", f->path);
    }
    plan_result a, b;
    moe_error err = {0};
    assert_int_equal(plan_evaluate(&preset, &a, &err), 0);
    assert_int_equal(plan_evaluate(&hand, &b, &err), 0);
    assert_true(a.step_time_s == b.step_time_s);
}

/* cluster.rails follows cluster.gpus_per_node unless set; an error about a value the scenario did
 * not write says where it came from and which field to set. */
static void test_rails_follow_gpus_per_node(void **state) {
    (void)state;
    scenario s;
    parse_ok("{\"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 1024, \"gpus_per_node\": 4}}", &s);
    assert_int_equal(s.cluster.rails, 4);
    moe_error err = {0};
    assert_int_equal(parse("{\"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 1024, \"gpus_per_node\": 4, \"rails\": 8}}",
                           &s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "cluster.rails: got 8;"));
    /* a struct edited in code: the preset's rails, named as such */
    scenario_defaults(&s);
    s.cluster.gpus_per_node = 4;
    s.cluster.nodes = 1024;
    assert_int_equal(scenario_validate(&s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "cluster.rails: got 8 (from the preset \"h800-8rail\")"));
    assert_non_null(strstr(err.msg, "set cluster.rails"));
    /* the dense model's EP left at the default scenario's 64 */
    assert_int_equal(parse("{\"model\": {\"preset\": \"llama3-8b\"}, \"cluster\": {\"nodes\": 512}}", &s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "layout.ep: got 64 (the built-in default"));
    assert_non_null(strstr(err.msg, "set layout.ep"));
}

static const cJSON *show_row(const cJSON *doc, const char *path) {
    for (const cJSON *r = cJSON_GetObjectItem(doc, "fields")->child; r; r = r->next)
        if (strcmp(cJSON_GetObjectItem(r, "path")->valuestring, path) == 0) return r;
    fail_msg("no row %s", path);
    return NULL;
}

static const char *other_model(const cJSON *doc, const char *path) {
    const cJSON *o = cJSON_GetObjectItem(show_row(doc, path), "other_model");
    return o ? o->valuestring : "";
}

/* simrun show flags a value of a model other than the one named. */
static void test_show_flags_another_models_values(void **state) {
    (void)state;
    scenario s;
    parse_ok("{}", &s);
    cJSON *doc = scenario_show_json(&s, NULL, 0);
    assert_non_null(strstr(cJSON_GetObjectItem(doc, "model")->valuestring, "built-in default scenario"));
    assert_string_equal(other_model(doc, "model.preset"), "deepseek-v3");
    assert_string_equal(other_model(doc, "model.top_k"), "deepseek-v3");
    assert_string_equal(other_model(doc, "precision.compute"), "deepseek-v3");
    assert_string_equal(other_model(doc, "routing.node_limit"), "deepseek-v3");
    cJSON_Delete(doc);

    parse_ok("{\"model\": {\"preset\": \"qwen3-30b-a3b\"}, \"sweep\": {\"seed\": [1]}}", &s);
    doc = scenario_show_json(&s, NULL, 0);
    assert_string_equal(other_model(doc, "model.top_k"), "");
    assert_string_equal(other_model(doc, "routing.node_limit"), "");
    assert_string_equal(other_model(doc, "run.tokens"), "");
    assert_string_equal(other_model(doc, "layout.pp"), "deepseek-v3");   /* seed 003's PP16 */
    assert_string_equal(other_model(doc, "layout.global_batch"), "deepseek-v3");
    assert_string_equal(cJSON_GetObjectItem(show_row(doc, "routing.node_limit"), "origin")->valuestring, "preset");
    cJSON_Delete(doc);

    parse_ok("{" DENSE_13B "}", &s);
    doc = scenario_show_json(&s, NULL, 0);
    assert_string_equal(other_model(doc, "run.tokens"), "deepseek-v3");  /* nothing published: assumed */
    assert_string_equal(other_model(doc, "precision.compute"), "");
    assert_string_equal(other_model(doc, "layout.tp"), "");               /* the scenario set it */
    assert_string_equal(cJSON_GetObjectItem(show_row(doc, "precision.dispatch"), "origin")->valuestring, "follows");
    cJSON_Delete(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_written_model_inherits_nothing),
        cmocka_unit_test(test_hand_written_model_lists_every_missing_field),
        cmocka_unit_test(test_presets_carry_their_own_training),
        cmocka_unit_test(test_dispatch_follows_compute),
        cmocka_unit_test(test_rails_follow_gpus_per_node),
        cmocka_unit_test(test_show_flags_another_models_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
