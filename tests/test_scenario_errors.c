/* test_scenario_errors.c — bad scenarios are rejected with exit code 2 and a message naming the
 * file, the JSON path, the bad value and what was expected; nothing crashes (run it under ASan).
 *
 * Truth: each file in tests/data/bad/ is wrong in exactly one way that a person can see by reading
 * it (SCENARIO.md's rules, the published model shapes); the table below says where and why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"

#define BAD_DIR "tests/data/bad/"

typedef struct {
    const char *file;     /* in tests/data/bad/ */
    const char *path;     /* JSON path (or location) the message must name; "" for the top level */
    const char *value;    /* the bad value as the message shows it */
    const char *expect;   /* a word of the expectation */
    int point;            /* -1: loading fails; else: loading succeeds and this sweep point fails */
} bad_case;

static const bad_case CASES[] = {
    {"unknown_top_level", "layuot", "layuot", "did you mean \"layout\"", -1},
    {"unknown_nested", "layout.ppp", "ppp", "did you mean \"pp\"", -1},
    {"unknown_deep", "cluster.gpu.mem_gib", "mem_gib", "mem_GiB", -1},
    {"field_at_wrong_depth", "pp", "unknown field \"pp\"", "did you mean \"layout.pp\"", -1},
    {"gpu_name_in_cluster", "cluster.name", "unknown field \"name\"", "did you mean \"cluster.gpu.name\"", -1},
    {"dotted_key_outside_sweep", "layout.pp", "layout.pp", "nested", -1},
    {"wrong_type_string", "layout.pp", "got \"16\"", "integer", -1},
    {"fractional_int", "layout.pp", "got 16.5", "integer", -1},
    {"int_too_large", "layout.pp", "got 30000000000", "integer", -1},
    {"zero_size", "model.hidden", "got 0", "an integer in 1..2147483647", -1},
    {"negative_size", "cluster.nodes", "got -4", "integer in 1..", -1},
    {"layout_product", "layout", "tp*pp*ep*dp = 1*16*64*8 = 8192", "512*8 = 4096", -1},
    {"ep_not_dividing_experts", "layout.ep", "got 64", "divisor of model.experts = 96", -1},
    {"top_k_above_experts", "model.top_k", "got 300", "at most model.experts = 256", -1},
    {"top_k_zero_moe", "model.top_k", "got 0", ">= 1", -1},
    {"batch_not_divisible", "layout.global_batch", "got 1000", "multiple of", -1},
    {"layers_above_bound", "model.layers", "got 14091629", "1..1024", -1},
    {"pp_above_layers", "layout.pp", "got 16", "model.layers = 8", -1},
    {"vpp_without_interleaved", "layout.vpp", "got 2", "interleaved", -1},
    {"vpp_layers_indivisible", "layout.vpp", "got 2", "divisible", -1},
    {"heads_not_divisible_by_tp", "layout.tp", "got 8", "divisor of model.heads = 100", -1},
    {"kv_heads_not_dividing", "model.kv_heads", "got 7", "divisor of model.heads = 128", -1},
    {"hot_expert_out_of_range", "routing.hot_expert", "got 256", "below model.experts", -1},
    {"hot_share_above_one", "routing.hot_share", "got 1.5", "(0, 1]", -1},
    {"node_limit_above_nodes", "routing.node_limit", "got 600", "cluster.nodes = 512", -1},
    {"node_limit_negative", "routing.node_limit", "got -1", "an integer in 0..2147483647", -1},
    {"capacity_factor_negative", "routing.capacity_factor", "got -0.5", ">= 0", -1},
    {"cuda_graphs_layer_dropless", "host.cuda_graph_scope", "\"layer\"", "drop-and-pad", -1},
    {"host_call_negative", "host.call_us", "got -3", "auto", -1},
    {"expert_groups_not_dividing", "model.expert_groups", "got 7", "divisor", -1},
    {"topk_groups_above_groups", "model.topk_groups", "got 9", "at most model.expert_groups = 8", -1},
    {"dense_layers_above_layers", "model.dense_layers", "got 70", "at most model.layers = 61", -1},
    {"zero_stage_4", "layout.zero", "got 4", "0..3", -1},
    {"rails_mismatch", "cluster.rails", "got 4", "gpus_per_node = 8", -1},
    {"fault_gpu_out_of_range", "faults.slow_gpus[0].gpu", "got 4096", "0..4095", -1},
    {"fault_link_kind", "faults.links[0].kind", "got \"pcie\"", "\"nvlink\"", -1},
    {"fault_missing_factor", "faults.slow_gpus[0]", "{\"gpu\":3}", "\"factor\"", -1},
    {"fault_unknown_key", "faults.slow_gpus[0].factr", "unknown key", "did you mean \"factor\"", -1},
    {"link_factor_zero", "faults.links[0].factor", "got 0", "(0, 1]", -1},
    {"link_loss_one", "faults.links[0].loss_rate", "got 1", "[0, 1)", -1},
    {"link_loss_nvlink", "faults.links[0].loss_rate", "got 0.01 on an nvlink link", "NIC links only", -1},
    {"trace_rank_out_of_range", "output.trace_ranks[1]", "got 5000", "0..4095", -1},
    {"class_shares_not_one", "reliability.classes", "summing to 1.43", "(+-1e-6)", -1},
    {"unknown_model_preset", "model.preset", "got \"deepseek-v4\"", "did you mean \"deepseek-v3\"", -1},
    {"unknown_cluster_preset", "cluster.preset", "got \"h900-8rail\"", "did you mean \"h800-8rail\"", -1},
    {"trace_without_file", "routing.trace", "got null", "routing.distribution is \"trace\"", -1},
    {"trials_zero", "run.trials", "got 0", "an integer in 1..2147483647", -1},
    /* above what an int holds: the bound is said (an integer >= 1 would be true of the value) */
    {"trials_over_int", "run.trials", "got 3000000000", "an integer in 1..2147483647", -1},
    {"seed_negative", "seed", "got -1", "0..2^53", -1},
    {"format_wrong", "format", "\"moesim-scenario/2\"", "\"moesim-scenario/1\"", -1},
    {"enum_unknown", "layout.schedule", "got \"gpipe\"", "\"1f1b\", \"interleaved\", \"dualpipe\"", -1},
    {"bool_as_string", "routing.drop", "got \"yes\"", "true or false", -1},
    {"section_not_object", "layout", "got 16", "an object", -1},
    {"malformed_missing_comma", "line 4, column 3", "'\"layout\": {\"pp\": 16}'", "valid JSON", -1},
    {"top_level_array", "", "got [1,2,3]", "JSON object", -1},
    {"empty", "", "an empty file", "JSON object", -1},
    {"truncated", "line 2, column 1", "the end of the file", "valid JSON", -1},
    {"trailing_garbage", "line 1, column 13", "'x'", "valid JSON", -1},
    {"nan_string", "run.tokens", "got \"NaN\"", "finite number", -1},
    {"infinite_number", "run.tokens", "got 1e999", "finite number", -1},
    {"duplicate_key", "layout.pp", "\"pp\" a second time", "at most once", -1},
    {"seed_leading_zero", "seed", "got 00", "JSON number", -1},
    {"number_trailing_dot", "run.tokens", "got 25.", "JSON number", -1},
    {"level_unknown", "output.levels[1]", "got \"walk\"", "\"plan\", \"step\", \"run\"", -1},
    {"levels_empty", "output.levels", "got []", "non-empty list", -1},
    {"sweep_unknown_key", "sweep.layout.ppp", "unknown field \"layout.ppp\"", "did you mean \"layout.pp\"", -1},
    {"sweep_empty_list", "sweep.layout.pp", "got []", "non-empty list", -1},
    {"sweep_zip_unequal", "sweep.zip.layout.dp", "a list of 3 values", "same length", -1},
    {"sweep_bad_value", "sweep.layout.pp[1]", "got 16.5", "integer", -1},
    {"sweep_not_object", "sweep", "got [1,2]", "zip", -1},
    {"sweep_invalid_point", "layout", "1*8*32*4 = 1024", "layout.pp=8, layout.ep=32", 0},
    {"deeply_nested_value", "model.layers", "got {\"a\":", "integer", -1},
    {"dense_model_with_ep", "layout.ep", "got 64", "dense model", -1},
    {"dualpipe_odd_stages", "layout.pp", "got 3", "even", -1},
    {"dualpipe_odd_microbatches", "layout.global_batch", "15 micro-batches", "even number of micro-batches", -1},
    {"dualpipe_few_microbatches", "layout.global_batch", "20 micro-batches per pipeline, pp = 16", "at least 2*pp", -1},
    {"interleaved_microbatches_not_pp_multiple", "layout.global_batch", "20 micro-batches per pipeline, pp = 16",
     "divisible by layout.pp", -1},
    {"name_with_slash", "name", "got \"runs/a\"", "letters", -1},
    {"null_for_int", "layout.pp", "got null", "integer", -1},
    {"weibull_shape_zero", "reliability.weibull_shape", "got 0", "> 0", -1},
    {"state_bytes_word", "reliability.checkpoint.state_bytes", "got \"big\"", "\"auto\"", -1},
    {"assumed_mfu_percent", "run.assumed_mfu", "got 52", "[0, 1]", -1},
    {"custom_model_missing_fields", "model", "missing \"layers\", \"heads\", \"head_dim\", \"vocab\", "
     "\"seq_len\", \"attention\", \"ffn_hidden\"", "every field a model without a preset states (or \"preset\": a "
     "built-in model to start from: deepseek-v3, mixtral-8x7b, gpt3-175b", -1},
    {"precision_unknown_recipe", "precision.compute", "got \"fp6\"", "\"fp8-cs\", \"mxfp8\", \"nvfp4\"", -1},
    {"mxfp8_on_hopper", "precision.compute", "\"mxfp8\" on H800", "Blackwell", -1},
    {"dispatch_compute_recipe", "precision.dispatch", "got \"nvfp4\"", "\"fp8\", \"bf16\", \"fp16\", \"fp32\"", -1},
    {"full_attention_every_without_window", "model.global_attention_every", "got 2", "model.sliding_window > 0", -1},
    {"fp4_negative", "cluster.gpu.fp4_tflops", "got -1", ">= 0", -1},
    {"routing_unknown_law", "routing.distribution", "got \"even\"", "\"balanced\"", -1},
    {"component_count_fraction", "reliability.components.leaf_switch.count", "got 12.5", "whole number", -1},
    {"failure_model_unknown", "reliability.failure_model", "got \"parts\"", "components", -1},
    {"correlated_probability", "reliability.correlated.probability", "got 1.5", "[0, 1]", -1},
    {"component_shape_zero", "reliability.components.gpu.weibull_shape", "got 0", "> 0", -1},
    {"layout_stage_count", "layout.pipeline_layout", "(31 stages)", "pp x vpp = 8 x 4 = 32", -1},
    {"layout_missing_block", "layout.pipeline_layout", "(60 t, 1 m)", "model.layers = 61 t's", -1},
    {"layout_embedding_late", "layout.pipeline_layout", "\"tE|(tt|)*30mL\"", "start of the first stage", -1},
    {"layout_loss_not_last", "layout.pipeline_layout", "\"EtL|(tt|)*30m\"", "in the last stage", -1},
    {"layout_block_after_mtp", "layout.pipeline_layout", "|mttL", "every t before the first m", -1},
    {"layout_bad_symbol", "layout.pipeline_layout", "(at character 2)", "symbols E (embedding)", -1},
    {"layout_unbalanced", "layout.pipeline_layout", "(at character 13)", "a ')' closing the group", -1},
    {"layout_star_without_count", "layout.pipeline_layout", "(at character 10)", "repetition count after '*'", -1},
    {"layout_and_first_stage_layers", "layout.pipeline_layout", "Et|(tt|)*30mL", "not both", -1},
    {"first_stage_layers_not_vpp_multiple", "layout.first_stage_layers", "got 6", "multiple of layout.vpp = 4", -1},
    {"first_last_leave_uneven", "layout.first_stage_layers", "got 6", "(here 50 blocks) divisible by their 6 x vpp = 6 chunks", -1},
    {"mtp_layers_negative", "model.mtp_layers", "got -1", "0..64", -1},
    {"tiers_sync", "reliability.checkpoint.tiers.enabled", "got true", "\"async\"", -1},
    {"tiers_peer_offset", "reliability.checkpoint.tiers.peer.offset_nodes", "got 512", "cluster.nodes - 1 = 511", -1},
    {"etp_product", "layout", "etp*pp*ep*dp = 2*16*64*4 = 8192", "512*8 = 4096", -1},
    {"cp_not_dividing_stage", "layout.cp", "tp*cp = 1*3 = 3", "GPUs/pp = 256", -1},
    {"cp_sequence_indivisible", "layout.cp", "got 4", "model.seq_len = 4098 divisible by 2 x cp", -1},
    {"cp_comm_unknown", "layout.cp_comm", "got \"a2a\"", "\"p2p\", \"all_gather\"", -1},
    {"etp_negative", "layout.etp", "got -1", "\"auto\" or an integer in 1..", -1},
    {"recompute_module_unknown", "layout.recompute_modules[1]", "got \"attn\"", "\"core_attn\", \"mla_up_proj\"", -1},
    {"recompute_module_twice", "layout.recompute_modules[1]", "got \"mlp\"", "twice", -1},
    {"recompute_modules_with_full", "layout.recompute_modules", "with layout.recompute \"full\"", "[] with full recompute", -1},
    {"recompute_mla_on_gqa", "layout.recompute_modules", "\"mla_up_proj\"", "model.attention \"mla\"", -1},
    {"a2a_overlap_with_dualpipe", "layout.moe_a2a_overlap", "got true", "DualPipe", -1},
    {"recompute_modules_not_list", "layout.recompute_modules", "got \"mlp\"", "a list of distinct names", -1},
    {"nvlink_domain_not_whole_nodes", "cluster.nvlink_domain_gpus", "got 12", "multiple of cluster.gpus_per_node = 8", -1},
    {"nvlink_domain_not_dividing", "cluster.nvlink_domain_gpus", "got 24", "dividing the 4096 GPUs", -1},
    {"nvlink_domain_negative", "cluster.nvlink_domain_gpus", "got -8", "\"auto\" or an integer", -1},
    {"node_limit_above_domains", "routing.node_limit", "got 4", "the 2 NVLink domains", -1},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

static void check_message(const bad_case *c, const char *label, const moe_error *err) {
    const char *needles[] = {label, c->path, c->value, c->expect};
    for (int i = 0; i < 4; i++)
        if (*needles[i] && !strstr(err->msg, needles[i]))
            fail_msg("%s: message lacks [%s]:\n  %s", c->file, needles[i], err->msg);
}

static void test_bad_files(void **state) {
    (void)state;
    for (int i = 0; i < N_CASES; i++) {
        const bad_case *c = &CASES[i];
        char label[256];
        snprintf(label, sizeof label, BAD_DIR "%s.json", c->file);
        scenario s;
        sweep *sw = (sweep *)0x1;
        moe_error err = {0};
        int rc = scenario_load(label, &s, &sw, &err);
        if (c->point < 0) {
            if (rc != EXIT_BADINPUT) fail_msg("%s: loaded (rc %d), expected exit code 2", c->file, rc);
            assert_int_equal(err.code, EXIT_BADINPUT);
            assert_null(sw);
        } else {
            if (rc != 0) fail_msg("%s: %s", c->file, err.msg);
            scenario pt;
            rc = sweep_point(sw, &s, c->point, &pt, NULL, &err);
            sweep_free(sw);
            assert_int_equal(rc, EXIT_BADINPUT);
            assert_int_equal(err.code, EXIT_BADINPUT);
        }
        check_message(c, label, &err);
        assert_null(strchr(err.msg, '\n')); /* one line */
    }
}

/* Every file in the folder is a case, and there are at least 30 distinct ones. */
static void test_every_bad_file_is_a_case(void **state) {
    (void)state;
    DIR *d = opendir(BAD_DIR);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        files++;
        int found = 0;
        for (int i = 0; i < N_CASES && !found; i++)
            found = strlen(CASES[i].file) == n - 5 && strncmp(CASES[i].file, e->d_name, n - 5) == 0;
        if (!found) fail_msg("%s has no entry in CASES", e->d_name);
    }
    closedir(d);
    assert_int_equal(files, N_CASES);
    assert_true(N_CASES >= 30);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int parse_text(const char *text, moe_error *err) {
    scenario s;
    sweep *sw = NULL;
    int rc = scenario_parse("mem.json", text, &s, &sw, err);
    sweep_free(sw);
    if (rc != 0) {
        assert_int_equal(rc, EXIT_BADINPUT);
        assert_int_equal(err->code, EXIT_BADINPUT);
        assert_non_null(strstr(err->msg, "mem.json"));
    }
    return rc;
}

/* Every truncation of a valid scenario is an error (until the closing brace), never a crash. */
static void test_truncations(void **state) {
    (void)state;
    char *text = read_text("scenarios/seed-4096.json");
    size_t len = strlen(text);
    size_t last_brace = (size_t)(strrchr(text, '}') - text);
    moe_error err;
    for (size_t n = 0; n < len; n++) {
        char saved = text[n];
        text[n] = '\0';
        int rc = parse_text(text, &err);
        if (n <= last_brace) assert_int_equal(rc, EXIT_BADINPUT);
        text[n] = saved;
    }
    assert_int_equal(parse_text(text, &err), 0);
    free(text);
}

/* Random byte edits of a valid scenario: each result parses or is a clean exit-2 error. */
static void test_mutations(void **state) {
    (void)state;
    char *text = read_text("scenarios/seed-4096.json");
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    static const char alphabet[] = "{}[]\":,.-+eE0123456789 \ntfnulax\\/";
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2);
    int rejected = 0;
    moe_error err;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, text, len + 1);
        int edits = 1 + (int)gsl_rng_uniform_int(rng, 3);
        for (int e = 0; e < edits; e++)
            copy[gsl_rng_uniform_int(rng, len)] = alphabet[gsl_rng_uniform_int(rng, sizeof alphabet - 1)];
        rejected += parse_text(copy, &err) != 0;
    }
    print_message("mutations: %d of 3000 rejected, the rest parsed\n", rejected);
    assert_true(rejected > 1000); /* most edits break something; the rest must still parse cleanly */
    gsl_rng_free(rng);
    free(copy);
    free(text);
}

static void test_pathological_inputs(void **state) {
    (void)state;
    moe_error err;
    /* nesting deeper than cJSON's limit, as arrays and as objects */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 16);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    assert_int_equal(parse_text(deep, &err), EXIT_BADINPUT);
    size_t n = 0;
    for (int i = 0; i < 3000; i++) n += (size_t)sprintf(deep + n, "{\"a\":");
    deep[n] = '\0';
    assert_int_equal(parse_text(deep, &err), EXIT_BADINPUT);
    free(deep);
    /* a 10,000-character key: the message stays bounded and names it */
    char *key = malloc(10100);
    n = (size_t)sprintf(key, "{\"layout\": {\"");
    memset(key + n, 'q', 10000);
    sprintf(key + n + 10000, "\": 1}}");
    assert_int_equal(parse_text(key, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "layout.qqq"));
    free(key);
    /* scalars and odd tops */
    const char *odd[] = {"null", "3", "\"scenario\"", "true", "{\"model\": []}", "{\"\": 1}",
                         "{\"layout\": {\"pp\": -0.0000001}}", "{\"layout\": {\"pp\": 1e308}}",
                         "{\"run\": {\"tokens\": -1e999}}", "{\"seed\": 1e20}", "{\"name\": \"\"}",
                         "{\"output\": {\"trace_ranks\": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,"
                         "19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,"
                         "45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64]}}",
                         "{\"sweep\": {\"zip\": {}}}", "{\"sweep\": {\"sweep\": [1]}}",
                         "{\"sweep\": {\"layout.pp\": [8], \"layout.pp\": [16]}}", "\xff\xfe{}"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        if (parse_text(odd[i], &err) != EXIT_BADINPUT) fail_msg("accepted: %s", odd[i]);
}

static void test_file_level_errors(void **state) {
    (void)state;
    scenario s;
    moe_error err;
    assert_int_equal(scenario_load("tests/data/does-not-exist.json", &s, NULL, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "does-not-exist.json"));
    assert_int_equal(scenario_load("tests", &s, NULL, &err), EXIT_BADINPUT); /* a directory */
    /* a NUL byte inside the file */
    char path[] = "/tmp/moesim-nul-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "{\"seed\": 1}\0{}", 14), 14);
    close(fd);
    assert_int_equal(scenario_load(path, &s, NULL, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "NUL byte at offset 11"));
    unlink(path);
    /* a sweep where none is allowed */
    assert_int_equal(scenario_load(BAD_DIR "sweep_invalid_point.json", &s, NULL, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "sweep"));
    /* sweep_point out of range is a runtime error, not bad input */
    sweep *sw = NULL;
    assert_int_equal(scenario_parse("x.json", "{}", &s, &sw, &err), 0);
    scenario pt;
    assert_int_equal(sweep_point(sw, &s, 1, &pt, NULL, &err), EXIT_RUNTIME);
    sweep_free(sw);
}

/* scenario_set_path: unknown paths, wrong types, sections */
static void test_set_path_errors(void **state) {
    (void)state;
    scenario s;
    moe_error err;
    assert_int_equal(scenario_parse("x.json", "{}", &s, NULL, &err), 0);
    cJSON *v = cJSON_CreateNumber(8);
    assert_int_equal(scenario_set_path(&s, "layout.ppp", v, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "did you mean \"layout.pp\""));
    assert_int_equal(scenario_set_path(&s, "layout", v, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "an object"));
    assert_int_equal(scenario_set_path(&s, "sweep", v, &err), EXIT_BADINPUT);
    assert_int_equal(scenario_set_path(&s, "layout.pp", NULL, &err), EXIT_BADINPUT);
    cJSON_Delete(v);
    /* a struct edited in code into nonsense is caught by validation */
    s.layout.pp = 0;
    assert_int_equal(scenario_validate(&s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "layout.pp"));
    assert_int_equal(scenario_parse("x.json", "{}", &s, NULL, &err), 0);
    s.routing.distribution = (route_kind)9;
    assert_int_equal(scenario_validate(&s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "routing.distribution"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_every_bad_file_is_a_case),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_pathological_inputs),
        cmocka_unit_test(test_file_level_errors),
        cmocka_unit_test(test_set_path_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
