/* test_scenario.c — the scenario contract: defaults, presets and overrides, sweeps (cartesian, zip,
 * swept presets), round trips through scenario_to_json, relative path resolution.
 *
 * Truths: the published model shapes (DeepSeek-V3 config.json, Mixtral 8x7B, GPT-3, Llama 3 405B),
 * the seed 003 system (SCENARIO.md's example), the Llama 3 paper's interruption counts, and orders
 * and counts of sweep points worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_paths.h"
#include "sim/scenario/sweep.h"

static void parse_ok(const char *text, scenario *s, sweep **sw) {
    moe_error err = {0};
    int rc = scenario_parse("tests/inline.json", text, s, sw, &err);
    if (rc) fail_msg("%s", err.msg);
}

/* scenario_to_json, printed: the canonical form used to compare whole scenarios */
static char *canon(const scenario *s) {
    cJSON *j = scenario_to_json(s);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
}

static void assert_same_scenario(const scenario *a, const scenario *b) {
    char *ta = canon(a), *tb = canon(b);
    if (strcmp(ta, tb) != 0) fail_msg("scenarios differ:\n%s\n----\n%s", ta, tb);
    cJSON_free(ta);
    cJSON_free(tb);
}

static void point(const sweep *sw, const scenario *base, int i, scenario *out, cJSON **values) {
    moe_error err = {0};
    if (sweep_point(sw, base, i, out, values, &err)) fail_msg("point %d: %s", i, err.msg);
}

/* ---- defaults --------------------------------------------------------------------------------------- */

static void test_defaults_are_the_seed_system(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    /* DeepSeek-V3 (technical report, config.json) */
    const model_cfg *m = &s.model;
    assert_string_equal(m->preset, "deepseek-v3");
    assert_int_equal(m->layers, 61);
    assert_int_equal(m->dense_layers, 3);
    assert_int_equal(m->hidden, 7168);
    assert_int_equal(m->heads, 128);
    assert_int_equal(m->experts, 256);
    assert_int_equal(m->shared_experts, 1);
    assert_int_equal(m->expert_hidden, 2048);
    assert_int_equal(m->top_k, 8);
    assert_int_equal(m->vocab, 129280);
    assert_int_equal(m->kv_lora_rank, 512);
    assert_int_equal(m->attention, ATTN_MLA);
    model_cfg preset;
    assert_int_equal(preset_model("deepseek-v3", &preset), 0);
    assert_memory_equal(&preset, m, sizeof preset);
    /* seed 003: 512 x 8 H800, 8 rails of 400 Gb/s */
    assert_string_equal(s.cluster.preset, "h800-8rail");
    assert_int_equal(scn_gpus(&s), 4096);
    assert_int_equal(s.cluster.rails, 8);
    assert_true(s.cluster.nic_gbps == 400 && s.cluster.gpu.bf16_tflops == 989 && s.cluster.gpu.mem_GiB == 80);
    cluster_cfg cp;
    assert_int_equal(preset_cluster("h800-8rail", &cp), 0);
    assert_memory_equal(&cp, &s.cluster, sizeof cp);
    /* TP1 x PP16 x EP64 x DP4, 15360 sequences: 60 micro-batches per pipeline */
    assert_int_equal(s.layout.tp * s.layout.pp * s.layout.ep * s.layout.dp, 4096);
    assert_int_equal(s.layout.pp, 16);
    assert_int_equal(s.layout.ep, 64);
    assert_int_equal(scn_attn_dp(&s), 256);
    assert_int_equal(scn_micro_batches(&s), 60);
    assert_int_equal(s.layout.schedule, SCHED_DUALPIPE);
    assert_int_equal(s.routing.node_limit, 4);
    /* DeepSeek-V3 drops no tokens (report section 2.1.2): dropless, no capacity */
    assert_true(s.routing.capacity_factor == 0 && s.routing.drop == 0);
    assert_true(s.run.tokens == 14.8e12); /* the report's abstract: 14.8 trillion tokens */
    assert_int_equal(s.precision.compute, DT_FP8);
    assert_int_equal(s.precision.combine, DT_BF16);
    /* reliability: 26,000 h per GPU, Daly, async, auto sizes, 2% spares */
    assert_true(s.reliability.gpu_mtbf_h == 26000);
    assert_int_equal(s.reliability.checkpoint.policy, CKPT_DALY);
    assert_true(s.reliability.checkpoint.state_bytes < 0 && s.reliability.checkpoint.write_min < 0);
    assert_true(s.reliability.recovery.hot_spare_fraction == 0.02);
    /* failure mix: Llama 3 Table 5, 419 interruptions: GPU 196 (148+19+17+6+6), HBM 72, software 63 */
    double sum = 0;
    for (int i = 0; i < FAIL_NCLASSES; i++) sum += s.reliability.classes[i].share;
    assert_true(fabs(sum - 1) < 1e-12);
    assert_true(fabs(s.reliability.classes[FAIL_GPU].share - 196.0 / 419) < 1e-12);
    assert_true(fabs(s.reliability.classes[FAIL_HBM].share - 72.0 / 419) < 1e-12);
    assert_true(fabs(s.reliability.classes[FAIL_SOFTWARE].share - 63.0 / 419) < 1e-12);
    assert_int_equal(s.reliability.classes[FAIL_SOFTWARE].needs_node_swap, 0);
    assert_int_equal(s.reliability.classes[FAIL_HBM].needs_node_swap, 1);
    assert_true(s.run.trials == 200 && s.run.assumed_mfu == 0);
    assert_int_equal(s.output.levels, LEVEL_PLAN | LEVEL_STEP | LEVEL_RUN);
    assert_int_equal(s.step.fidelity, FIDELITY_FAST);
    moe_error err;
    assert_int_equal(scenario_validate(&s, &err), 0);
}

static void test_empty_file_is_the_defaults(void **state) {
    (void)state;
    scenario s, d;
    parse_ok("{}", &s, NULL);
    scenario_defaults(&d);
    /* only the name (from the file name) and the output folder derived from it differ */
    assert_string_equal(s.name, "inline");
    assert_string_equal(s.output.dir, "results/inline");
    snprintf(d.name, sizeof d.name, "inline");
    snprintf(d.output.dir, sizeof d.output.dir, "results/inline");
    assert_same_scenario(&s, &d);
    assert_string_equal(s.file, "tests/inline.json");
}

static void test_override_keeps_the_rest(void **state) {
    (void)state;
    scenario s, d;
    parse_ok("{\"name\": \"t\", \"layout\": {\"zero\": 2},"
             " \"reliability\": {\"checkpoint\": {\"interval_min\": 30, \"write_min\": 5}}}",
             &s, NULL);
    scenario_defaults(&d);
    snprintf(d.name, sizeof d.name, "t");
    snprintf(d.output.dir, sizeof d.output.dir, "results/t");
    d.layout.zero = 2;
    d.reliability.checkpoint.interval_min = 30;
    d.reliability.checkpoint.write_min = 5;
    assert_same_scenario(&s, &d);
}

static void test_preset_then_overrides_in_any_order(void **state) {
    (void)state;
    /* Mixtral 8x7B: 32 layers, 4096 hidden, 8 experts top-2, 8 KV heads; a 16-layer variant on
     * PP16 x EP8 x DP32 */
    const char *layout = "\"layout\": {\"pp\": 16, \"ep\": 8, \"dp\": 32}";
    char a[512], b[512];
    snprintf(a, sizeof a, "{\"model\": {\"preset\": \"mixtral-8x7b\", \"layers\": 16}, %s}", layout);
    snprintf(b, sizeof b, "{\"model\": {\"layers\": 16, \"preset\": \"mixtral-8x7b\"}, %s}", layout);
    scenario sa, sb;
    parse_ok(a, &sa, NULL);
    parse_ok(b, &sb, NULL);
    assert_same_scenario(&sa, &sb);
    assert_string_equal(sa.model.preset, "mixtral-8x7b");
    assert_int_equal(sa.model.layers, 16);
    assert_int_equal(sa.model.hidden, 4096);
    assert_int_equal(sa.model.experts, 8);
    assert_int_equal(sa.model.top_k, 2);
    assert_int_equal(sa.model.kv_heads, 8);
    assert_int_equal(sa.model.attention, ATTN_GQA);
    /* the cluster keeps its defaults */
    assert_int_equal(scn_gpus(&sa), 4096);

    /* cluster preset + override: H200 memory (143,771 MiB as the driver reports it) and bandwidth, 256 nodes */
    scenario c;
    parse_ok("{\"cluster\": {\"preset\": \"h200-8rail\", \"nodes\": 256}, \"layout\": {\"dp\": 2}}", &c, NULL);
    assert_true(c.cluster.gpu.mem_GiB == 143771 / 1024.0 && c.cluster.gpu.hbm_GBps == 4800);
    assert_int_equal(c.cluster.nodes, 256);
    assert_string_equal(c.cluster.gpu.name, "H200");
}

/* Every shipped model preset validates with a layout that fits it. */
static void test_every_preset_validates(void **state) {
    (void)state;
    const char *texts[] = {
        "{\"model\": {\"preset\": \"deepseek-v3\"}}",
        "{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"layout\": {\"pp\": 16, \"ep\": 8, \"dp\": 32}}",
        "{\"model\": {\"preset\": \"gpt3-175b\"}, \"layout\": {\"tp\": 8, \"pp\": 16, \"ep\": 1, \"dp\": 32}}",
        "{\"model\": {\"preset\": \"llama3-405b\"}, \"layout\": {\"tp\": 8, \"pp\": 16, \"ep\": 1, \"dp\": 32}}",
        "{\"cluster\": {\"preset\": \"h100-8rail\"}}",
        "{\"cluster\": {\"preset\": \"h200-8rail\"}}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        scenario s;
        parse_ok(texts[i], &s, NULL);
    }
    for (int i = 0; preset_model_names[i]; i++) {
        model_cfg m;
        assert_int_equal(preset_model(preset_model_names[i], &m), 0);
    }
}

static void test_seed_scenario_file(void **state) {
    (void)state;
    scenario s;
    sweep *sw = NULL;
    moe_error err;
    if (scenario_load("scenarios/seed-4096.json", &s, &sw, &err)) fail_msg("%s", err.msg);
    assert_int_equal(sweep_count(sw), 1);
    sweep_free(sw);
    assert_string_equal(s.name, "seed-4096");
    assert_string_equal(s.output.dir, "results/seed-4096");
    assert_int_equal(s.layout.tp, 1);
    assert_int_equal(s.layout.pp, 16);
    assert_int_equal(s.layout.ep, 64);
    assert_int_equal(s.layout.dp, 4);
    assert_true(s.run.assumed_mfu == 0.52);
    assert_true(s.reliability.checkpoint.write_min == 5);
    assert_true(s.reliability.checkpoint.state_bytes < 0);
    assert_int_equal(s.output.levels, LEVEL_PLAN | LEVEL_STEP | LEVEL_RUN);
    /* the seed's back-of-the-envelope from these fields: 4096 x 989e12 x 0.52 = 2.106 EFLOPS, and
     * 26,000 h / 4096 GPUs = 6.35 h cluster MTBF */
    double eflops = scn_gpus(&s) * s.cluster.gpu.bf16_tflops * 1e12 * s.run.assumed_mfu / 1e18;
    assert_true(fabs(eflops - 2.106) < 0.001);
    assert_true(fabs(s.reliability.gpu_mtbf_h / scn_gpus(&s) - 6.35) < 0.01);
}

/* ---- sweeps ----------------------------------------------------------------------------------------- */

static void test_sweep_cartesian_order(void **state) {
    (void)state;
    scenario base, p;
    sweep *sw = NULL;
    parse_ok("{\"sweep\": {\"layout.zero\": [0, 1, 2],"
             " \"reliability.checkpoint.interval_min\": [15, 30],"
             " \"routing.capacity_factor\": [1.0, 1.25]}}",
             &base, &sw);
    assert_int_equal(sweep_count(sw), 12);
    assert_int_equal(sweep_n_keys(sw), 3);
    assert_string_equal(sweep_key(sw, 1), "reliability.checkpoint.interval_min");
    const double interval[] = {15, 30}, cf[] = {1.0, 1.25};
    for (int i = 0; i < 12; i++) {
        cJSON *v = NULL;
        point(sw, &base, i, &p, &v);
        /* first key slowest: i = zero*4 + interval*2 + cf */
        assert_int_equal(p.layout.zero, i / 4);
        assert_true(p.reliability.checkpoint.interval_min == interval[(i / 2) % 2]);
        assert_true(p.routing.capacity_factor == cf[i % 2]);
        assert_int_equal(cJSON_GetArraySize(v), 3);
        assert_string_equal(v->child->string, "layout.zero");
        assert_true(v->child->valuedouble == i / 4);
        cJSON_Delete(v);
        /* everything not swept is the base */
        p.layout.zero = base.layout.zero;
        p.reliability.checkpoint.interval_min = base.reliability.checkpoint.interval_min;
        p.routing.capacity_factor = base.routing.capacity_factor;
        assert_same_scenario(&p, &base);
    }
    sweep_free(sw);
}

/* SCENARIO.md's pp x ep sweep with dp fixed at 4: only 16 x 64 multiplies out to 4096 GPUs. */
static void test_sweep_invalid_points_name_their_values(void **state) {
    (void)state;
    scenario base, p;
    sweep *sw = NULL;
    parse_ok("{\"sweep\": {\"layout.pp\": [8, 16], \"layout.ep\": [32, 64]}}", &base, &sw);
    assert_int_equal(sweep_count(sw), 4);
    moe_error err;
    const char *products[] = {"1*8*32*4 = 1024", "1*8*64*4 = 2048", "1*16*32*4 = 2048"};
    const char *names[] = {"layout.pp=8, layout.ep=32", "layout.pp=8, layout.ep=64", "layout.pp=16, layout.ep=32"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sweep_point(sw, &base, i, &p, NULL, &err), EXIT_BADINPUT);
        assert_non_null(strstr(err.msg, products[i]));
        assert_non_null(strstr(err.msg, names[i]));
    }
    point(sw, &base, 3, &p, NULL);
    assert_int_equal(p.layout.pp, 16);
    sweep_free(sw);
}

static void test_sweep_zip(void **state) {
    (void)state;
    scenario base, p;
    sweep *sw = NULL;
    /* a plain key before a zip group: 2 x 3 points, the plain key slowest */
    parse_ok("{\"sweep\": {\"routing.capacity_factor\": [1.0, 2.0],"
             " \"zip\": {\"layout.pp\": [8, 16, 32], \"layout.dp\": [8, 4, 2]}}}",
             &base, &sw);
    assert_int_equal(sweep_count(sw), 6);
    const int pp[] = {8, 16, 32}, dp[] = {8, 4, 2};
    for (int i = 0; i < 6; i++) {
        point(sw, &base, i, &p, NULL);
        assert_true(p.routing.capacity_factor == (i < 3 ? 1.0 : 2.0));
        assert_int_equal(p.layout.pp, pp[i % 3]);
        assert_int_equal(p.layout.dp, dp[i % 3]);
        assert_int_equal(p.layout.pp * p.layout.ep * p.layout.dp, 4096); /* lockstep keeps it valid */
    }
    sweep_free(sw);
}

/* Sweeping cluster.preset over H800/H200 while the file overrides nodes and GPU memory: each point
 * is the preset plus the file's explicit fields; a swept value still beats an explicit one. */
static void test_sweep_preset_keeps_explicit_fields(void **state) {
    (void)state;
    scenario base, p;
    sweep *sw = NULL;
    parse_ok("{\"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 256, \"gpu\": {\"mem_GiB\": 96}},"
             " \"layout\": {\"dp\": 2},"
             " \"sweep\": {\"cluster.preset\": [\"h800-8rail\", \"h200-8rail\"], \"cluster.nvlink_GBps\": [300]}}",
             &base, &sw);
    assert_int_equal(sweep_count(sw), 2);
    point(sw, &base, 0, &p, NULL);
    assert_string_equal(p.cluster.preset, "h800-8rail");
    assert_string_equal(p.cluster.gpu.name, "H800");
    assert_int_equal(p.cluster.nodes, 256);
    assert_true(p.cluster.gpu.mem_GiB == 96 && p.cluster.gpu.hbm_GBps == 3350 && p.cluster.nvlink_GBps == 300);
    point(sw, &base, 1, &p, NULL);
    assert_string_equal(p.cluster.preset, "h200-8rail");
    assert_string_equal(p.cluster.gpu.name, "H200");
    assert_int_equal(p.cluster.nodes, 256);
    assert_true(p.cluster.gpu.mem_GiB == 96 && p.cluster.gpu.hbm_GBps == 4800 && p.cluster.nvlink_GBps == 300);
    sweep_free(sw);

    /* model.preset likewise: a 16-layer override survives a sweep over two MoE presets */
    parse_ok("{\"model\": {\"preset\": \"deepseek-v3\", \"layers\": 16}, \"layout\": {\"pp\": 16, \"ep\": 8, \"dp\": 32},"
             " \"sweep\": {\"model.preset\": [\"deepseek-v3\", \"mixtral-8x7b\"]}}",
             &base, &sw);
    point(sw, &base, 0, &p, NULL);
    assert_int_equal(p.model.layers, 16);
    assert_int_equal(p.model.experts, 256);
    point(sw, &base, 1, &p, NULL);
    assert_int_equal(p.model.layers, 16);
    assert_int_equal(p.model.experts, 8);
    assert_int_equal(p.model.hidden, 4096);
    sweep_free(sw);
}

/* ---- round trip ------------------------------------------------------------------------------------- */

static void roundtrip(const scenario *s) {
    char *text = canon(s);
    scenario back;
    moe_error err;
    if (scenario_parse("roundtrip.json", text, &back, NULL, &err)) fail_msg("%s\n%s", err.msg, text);
    assert_same_scenario(s, &back);
    cJSON_free(text);
}

static void test_to_json_round_trips(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    roundtrip(&s);
    parse_ok("{\"name\": \"custom_1.5\", \"seed\": 123456789012,"
             " \"model\": {\"preset\": \"llama3-405b\", \"seq_len\": 16384, \"tie_embeddings\": true},"
             " \"cluster\": {\"preset\": \"h100-8rail\", \"oversubscription\": 2.5,"
             "   \"latency_us\": {\"cross_leaf\": 4.25}},"
             " \"layout\": {\"tp\": 8, \"pp\": 2, \"ep\": 1, \"dp\": 256, \"zero\": 3,"
             "   \"schedule\": \"interleaved\", \"vpp\": 7, \"recompute\": \"selective\", \"placement\": \"dp-inner\"},"
             " \"routing\": {\"distribution\": \"trace\", \"trace\": \"traces/x.csv\", \"drop\": false,"
             "   \"zipf_s\": 0.1},"
             " \"precision\": {\"compute\": \"bf16\", \"master\": \"fp16\"},"
             " \"calibration\": null,"
             " \"reliability\": {\"distribution\": \"weibull\", \"failure_trace\": \"logs/f.csv\","
             "   \"classes\": {\"gpu\": {\"share\": 0.5}, \"hbm\": {\"share\": 0.25}, \"nic\": {\"share\": 0.125},"
             "     \"nvlink\": {\"share\": 0.125, \"needs_node_swap\": false}, \"switch\": {\"share\": 0},"
             "     \"host\": {\"share\": 0}, \"software\": {\"share\": 0}},"
             "   \"checkpoint\": {\"policy\": \"fixed\", \"interval_min\": 17.3, \"mode\": \"sync\","
             "     \"state_bytes\": 1.2e13, \"write_min\": 0},"
             "   \"stragglers\": {\"fraction\": 0.01, \"slowdown\": 2, \"detect_min\": 3},"
             "   \"loss_spikes\": {\"per_day\": 0.3, \"action\": \"skip\"}},"
             " \"faults\": {\"slow_gpus\": [{\"gpu\": 7, \"factor\": 1.5}, {\"gpu\": 4095, \"factor\": 3}],"
             "   \"links\": [{\"gpu\": 12, \"kind\": \"nvlink\", \"factor\": 0.25}]},"
             " \"step\": {\"fidelity\": \"full\"},"
             " \"run\": {\"tokens\": 1e12, \"max_days\": 9.5, \"trials\": 3, \"assumed_mfu\": 0.4},"
             " \"output\": {\"dir\": \"/tmp/out\", \"trace\": false, \"plots\": false, \"levels\": [\"run\", \"plan\"],"
             "   \"trace_ranks\": [0, 5, 4095]}}",
             &s, NULL);
    /* spot checks that the file's values are what round-trips */
    assert_int_equal(s.layout.vpp, 7);
    assert_true(s.seed == 123456789012ULL);
    assert_int_equal(s.faults.n_slow_gpus, 2);
    assert_int_equal(s.faults.links[0].kind, LINK_NVLINK);
    assert_int_equal(s.output.levels, LEVEL_PLAN | LEVEL_RUN);
    assert_int_equal(s.output.n_trace_ranks, 3);
    assert_string_equal(s.calibration, "");
    assert_true(s.reliability.checkpoint.state_bytes == 1.2e13 && s.reliability.checkpoint.write_min == 0);
    assert_int_equal(s.reliability.classes[FAIL_NVLINK].needs_node_swap, 0);
    roundtrip(&s);
    /* a model that is no preset ("preset": null) inherits nothing: it gives every required field,
     * the optional ones take neutral values, and it round-trips */
    parse_ok("{\"model\": {\"preset\": null, \"layers\": 4, \"hidden\": 4096, \"heads\": 32, \"head_dim\": 128,"
             " \"vocab\": 32000, \"seq_len\": 2048, \"attention\": \"mha\", \"experts\": 64, \"top_k\": 2,"
             " \"expert_hidden\": 1024, \"shared_experts\": 0, \"dense_layers\": 0},"
             " \"layout\": {\"tp\": 1, \"pp\": 4, \"ep\": 64, \"dp\": 16, \"schedule\": \"1f1b\"}}", &s, NULL);
    assert_string_equal(s.model.preset, "");
    assert_int_equal(s.model.hidden, 4096);
    assert_int_equal(s.model.kv_heads, 32);          /* MHA: follows the heads */
    assert_int_equal(s.model.v_head_dim, 128);       /* follows head_dim */
    assert_int_equal(s.model.q_lora_rank, 0);        /* nothing of DeepSeek-V3 is left */
    assert_int_equal(s.model.expert_groups, 0);
    roundtrip(&s);
    /* the JSON says "auto" and null where the struct holds "unset" */
    scenario_defaults(&s);
    cJSON *j = scenario_to_json(&s);
    cJSON *ck = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "reliability"), "checkpoint");
    assert_string_equal(cJSON_GetObjectItem(ck, "state_bytes")->valuestring, "auto");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "reliability"), "failure_trace")));
    assert_string_equal(cJSON_GetObjectItem(j, "format")->valuestring, "moesim-scenario/1");
    assert_null(cJSON_GetObjectItem(j, "sweep"));
    cJSON_Delete(j);
}

/* A model preset brings its training precision: DeepSeek-V3 FP8 (blockwise compute and dispatch,
 * BF16 combine), the dense and the other MoE presets BF16; a precision field the scenario gives is
 * kept whatever the order of the sections, and through a sweep over model.preset. */
static void test_precision_follows_model_preset(void **state) {
    (void)state;
    scenario s;
    const char *layout = "\"layout\": {\"tp\": 8, \"pp\": 16, \"ep\": 1, \"dp\": 32}";
    char text[512];
    snprintf(text, sizeof text, "{\"model\": {\"preset\": \"llama3-70b\"}, %s}", layout);
    parse_ok(text, &s, NULL);
    assert_int_equal(s.precision.compute, DT_BF16);
    assert_int_equal(s.precision.dispatch, DT_BF16);
    assert_int_equal(s.precision.master, DT_FP32);
    snprintf(text, sizeof text, "{\"precision\": {\"compute\": \"fp8-cs\"}, \"model\": {\"preset\": \"llama3-70b\"}, %s}",
             layout);
    parse_ok(text, &s, NULL);
    assert_int_equal(s.precision.compute, DT_FP8_CS);
    assert_int_equal(s.precision.combine, DT_BF16);
    parse_ok("{}", &s, NULL);                                  /* the default model: DeepSeek-V3 */
    assert_int_equal(s.precision.compute, DT_FP8);
    assert_int_equal(s.precision.dispatch, DT_FP8);
    assert_int_equal(s.precision.combine, DT_BF16);
    sweep *sw = NULL;
    parse_ok("{\"precision\": {\"combine\": \"fp32\"}, \"layout\": {\"schedule\": \"1f1b\"},"
             " \"sweep\": {\"model.preset\": [\"deepseek-v3\", \"qwen3-235b-a22b\"]}}", &s, &sw);
    scenario a, b;
    point(sw, &s, 0, &a, NULL);
    point(sw, &s, 1, &b, NULL);
    assert_int_equal(a.precision.compute, DT_FP8);
    assert_int_equal(b.precision.compute, DT_BF16);
    assert_int_equal(a.precision.combine, DT_FP32);
    assert_int_equal(b.precision.combine, DT_FP32);
    sweep_free(sw);
}

static void test_set_path(void **state) {
    (void)state;
    scenario s;
    moe_error err;
    scenario_defaults(&s);
    cJSON *v = cJSON_CreateNumber(8);
    assert_int_equal(scenario_set_path(&s, "layout.pp", v, &err), 0);
    assert_int_equal(s.layout.pp, 8);
    cJSON_Delete(v);
    s.cluster.nodes = 7;
    v = cJSON_CreateString("h200-8rail");
    assert_int_equal(scenario_set_path(&s, "cluster.preset", v, &err), 0); /* resets the section */
    assert_int_equal(s.cluster.nodes, 512);
    assert_true(s.cluster.gpu.mem_GiB == 143771 / 1024.0);
    cJSON_Delete(v);
    v = cJSON_Parse("{\"mem_GiB\": 192, \"name\": \"B200\"}");
    assert_int_equal(scenario_set_path(&s, "cluster.gpu", v, &err), 0);
    assert_true(s.cluster.gpu.mem_GiB == 192);
    assert_string_equal(s.cluster.gpu.name, "B200");
    cJSON_Delete(v);
}

/* ---- relative paths ---------------------------------------------------------------------------------- */

static void test_resolve_path(void **state) {
    (void)state;
    char dir[] = "/tmp/moesim-scn-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char file[256], trace[256], out[256];
    snprintf(file, sizeof file, "%s/s.json", dir);
    snprintf(trace, sizeof trace, "%s/only-here.csv", dir);
    FILE *f = fopen(trace, "w");
    assert_non_null(f);
    fclose(f);
    scenario s;
    scenario_defaults(&s);
    snprintf(s.file, sizeof s.file, "%s", file);
    /* not in the current directory (the repository root): found beside the scenario */
    assert_int_equal(scenario_resolve_path(&s, "only-here.csv", out, sizeof out), 0);
    assert_string_equal(out, trace);
    /* in the current directory: the current directory wins */
    assert_int_equal(scenario_resolve_path(&s, "CMakeLists.txt", out, sizeof out), 0);
    assert_string_equal(out, "CMakeLists.txt");
    /* absolute: as is */
    assert_int_equal(scenario_resolve_path(&s, trace, out, sizeof out), 0);
    assert_string_equal(out, trace);
    /* nowhere: -1 and the path as written */
    assert_int_equal(scenario_resolve_path(&s, "missing.csv", out, sizeof out), -1);
    assert_string_equal(out, "missing.csv");
    /* too small a buffer */
    char tiny[8];
    assert_int_equal(scenario_resolve_path(&s, "only-here.csv", tiny, sizeof tiny), -2);
    /* the struct keeps the path as written */
    moe_error err;
    char text[128];
    snprintf(text, sizeof text, "{\"reliability\": {\"failure_trace\": \"only-here.csv\"}}");
    assert_int_equal(scenario_parse(file, text, &s, NULL, &err), 0);
    assert_string_equal(s.reliability.failure_trace, "only-here.csv");
    unlink(trace);
    rmdir(dir);
}

/* The cost model follows the cluster preset's GPU unless the scenario names one: an H100 cluster is
 * priced with the H100 model (its NVLink is 450 GB/s, the H800's 160), also across a preset sweep. */
static void test_calibration_follows_cluster_preset(void **state) {
    (void)state;
    scenario s;
    parse_ok("{}", &s, NULL);
    assert_string_equal(s.calibration, "calibration/models/h800-published.json");
    parse_ok("{\"cluster\": {\"preset\": \"h100-8rail\"}}", &s, NULL);
    assert_string_equal(s.calibration, "calibration/models/h100-published.json");
    parse_ok("{\"cluster\": {\"preset\": \"h200-8rail\"}, \"calibration\": \"calibration/models/cpu-measured.json\"}",
             &s, NULL);
    assert_string_equal(s.calibration, "calibration/models/cpu-measured.json");
    parse_ok("{\"calibration\": \"calibration/models/cpu-measured.json\", \"cluster\": {\"preset\": \"h200-8rail\"}}",
             &s, NULL);
    assert_string_equal(s.calibration, "calibration/models/cpu-measured.json");
    sweep *sw = NULL;
    scenario base, pt;
    parse_ok("{\"sweep\": {\"cluster.preset\": [\"h800-8rail\", \"h200-8rail\"]}}", &base, &sw);
    point(sw, &base, 0, &pt, NULL);
    assert_string_equal(pt.calibration, "calibration/models/h800-published.json");
    point(sw, &base, 1, &pt, NULL);
    assert_string_equal(pt.calibration, "calibration/models/h200-published.json");
    sweep_free(sw);
}

/* cluster.gpu.sustained: "auto" (every preset: the cost model's value) or a fraction in (0, 1.2];
 * 0 and 1.5 are refused with the field's path and range (exit 2); precision.compute takes fp8-ds. */
static void test_sustained_field(void **state) {
    (void)state;
    scenario s;
    parse_ok("{\"cluster\": {\"preset\": \"h200-8rail\"}}", &s, NULL);
    assert_true(s.cluster.gpu.sustained < 0);
    parse_ok("{\"cluster\": {\"preset\": \"h200-8rail\", \"gpu\": {\"sustained\": 0.9}}, "
             "\"precision\": {\"compute\": \"fp8-ds\"}}", &s, NULL);
    assert_true(s.cluster.gpu.sustained == 0.9);
    assert_int_equal(s.precision.compute, DT_FP8_DS);
    parse_ok("{\"cluster\": {\"gpu\": {\"sustained\": \"auto\"}}}", &s, NULL);
    assert_true(s.cluster.gpu.sustained < 0);
    const char *bad[] = {"{\"cluster\": {\"gpu\": {\"sustained\": 1.5}}}", "{\"cluster\": {\"gpu\": {\"sustained\": 0}}}",
                         "{\"cluster\": {\"gpu\": {\"sustained\": \"fast\"}}}"};
    for (int i = 0; i < 3; i++) {
        moe_error err = {0};
        assert_int_equal(scenario_parse("tests/inline.json", bad[i], &s, NULL, &err), EXIT_BADINPUT);
        assert_non_null(strstr(err.msg, "cluster.gpu.sustained"));
        assert_non_null(strstr(err.msg, "(0, 1.2]"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_the_seed_system),
        cmocka_unit_test(test_empty_file_is_the_defaults),
        cmocka_unit_test(test_override_keeps_the_rest),
        cmocka_unit_test(test_preset_then_overrides_in_any_order),
        cmocka_unit_test(test_every_preset_validates),
        cmocka_unit_test(test_seed_scenario_file),
        cmocka_unit_test(test_sweep_cartesian_order),
        cmocka_unit_test(test_sweep_invalid_points_name_their_values),
        cmocka_unit_test(test_sweep_zip),
        cmocka_unit_test(test_sweep_preset_keeps_explicit_fields),
        cmocka_unit_test(test_to_json_round_trips),
        cmocka_unit_test(test_set_path),
        cmocka_unit_test(test_precision_follows_model_preset),
        cmocka_unit_test(test_resolve_path),
        cmocka_unit_test(test_calibration_follows_cluster_preset),
        cmocka_unit_test(test_sustained_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
