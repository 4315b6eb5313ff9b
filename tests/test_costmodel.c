/* test_costmodel.c — sim/costmodel: loading model JSON and the closed-form predictions.
 *
 * Truths: the public H800 figures (989 TFLOP/s BF16, 3.35 TB/s HBM; REFERENCE.md §6) and the spec
 * model's stated choices (eff_max 0.8, 90% of HBM, 3 us launch), typed here by hand, so a change to
 * either the file or the formulas shows up; hand-computed alpha-beta times; hand-made tile/wave and
 * attention models small enough to solve by hand (waves, causal blocks); and the published tables
 * themselves (DeepGEMM, XLA's sm_90 matmuls, FlashAttention-3), which the fitted H800 model must
 * reproduce. */
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
#include <unistd.h>

#include "calibration/fit.h"
#include "calibration/trace.h"
#include "sim/plan/costmodel.h"
#include "sim/scenario/presets.h"

#define H800 "calibration/models/h800-spec.json"
#define H800_FIT "calibration/models/h800-published.json"

static void test_h800_published_gemm_closed_form(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = { 0, "" };
    assert_int_equal(costmodel_load(H800, &cm, &err), 0);
    assert_false(cm.measured);
    assert_string_equal(cm.source, "h800-spec");
    /* 8192^3 BF16: t = 3 us + 2*8192^3 / (989e12 * 0.8) + 2*3*8192^2 / (0.9 * 3.35e12) */
    const double n = 8192, f = 2 * n * n * n, B = 2.0 * 3 * n * n;
    double closed = 3e-6 + f / (989e12 * 0.8) + B / (0.9 * 3350e9);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_BF16), closed, 1e-12 * closed);
    /* "~75-80% of peak for large shapes" (REFERENCE.md §6) */
    double eff = costmodel_gemm_eff(&cm, n, n, n, DT_BF16);
    assert_true(eff > 0.72 && eff < 0.80);
    assert_true(costmodel_gemm_eff(&cm, 16384, 16384, 16384, DT_BF16) > 0.75);
    /* the FLOP term alone is the brief's formula 2*8192^3 / (989e12 * eff_max) */
    double flop_term = f / (989e12 * 0.8);
    assert_float_equal(closed - 3e-6 - B / (0.9 * 3350e9), flop_term, 1e-15);
    /* FP8 doubles the peak: the FLOP part halves, inputs are 1 byte */
    double closed8 = 3e-6 + f / (1979e12 * 0.8) + (1.0 * 2 * n * n + 2.0 * n * n) / (0.9 * 3350e9);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_FP8), closed8, 1e-12 * closed8);
    /* "much lower for skinny expert GEMMs": 128 tokens x (7168 -> 2048) */
    assert_true(costmodel_gemm_eff(&cm, 128, 2048, 7168, DT_BF16) < 0.35);
    assert_float_equal(costmodel_gemm_s(&cm, 0, n, n, DT_BF16), 0.0, 0);
}

static void test_grouped_gemm_and_hot_expert(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = { 0, "" };
    assert_int_equal(costmodel_load(H800, &cm, &err), 0);
    const double H = 7168, F = 2048;
    /* one launch + per-expert bodies; empty experts cost nothing */
    double tok[4] = { 300, 0, 20, 4 };
    double body = 0;
    for (int e = 0; e < 4; e++)
        if (tok[e] > 0) body += 2 * tok[e] * F * H / (989e12 * 0.8) + 2 * (tok[e] * H + H * F + tok[e] * F) / (0.9 * 3350e9);
    assert_float_equal(costmodel_grouped_gemm_s(&cm, tok, 4, F, H, DT_BF16), 3e-6 + body, 1e-12 * body);
    /* a rank whose one expert is hot (60% of 8 x 4096 tokens, seed 000's incident) is slower than a
     * rank with uniform load on the same experts */
    double hot[8], uni[8], total = 8 * 4096;
    for (int e = 0; e < 8; e++) uni[e] = total / 64;   /* 64 experts over 8 ranks, uniform */
    for (int e = 0; e < 8; e++) hot[e] = uni[e];
    hot[0] = 0.6 * total;
    double t_hot = costmodel_expert_ffn_fwd_s(&cm, hot, 8, H, F, DT_BF16);
    double t_uni = costmodel_expert_ffn_fwd_s(&cm, uni, 8, H, F, DT_BF16);
    assert_true(t_hot > 3.5 * t_uni);   /* 5.7x the tokens, the same 8 weight reads: ~4x */
}

static void test_memory_attention_links(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = { 0, "" };
    assert_int_equal(costmodel_load(H800, &cm, &err), 0);
    assert_float_equal(costmodel_memory_bound_s(&cm, 1e9), 2e-6 + 1e9 / 3015e9, 1e-15);
    assert_float_equal(costmodel_kernel_s(&cm, "permute", 1e9), 2e-6 + 1e9 / 3015e9, 1e-15);
    /* a legacy attention model: 2 x 62500^2 x (64 + 64) = 1e12 FLOPs non-causal at 50% of peak */
    const cm_attn_shape a = {.batch = 1, .heads = 1, .seq_q = 62500, .seq_k = 62500, .d_qk = 64, .d_v = 64, .causal = 0};
    assert_float_equal(costmodel_attention_core_s(&cm, &a, 0), 3e-6 + 1e12 / (989e12 * 0.5), 1e-15);
    assert_float_equal(costmodel_attention_core_s(&cm, &a, 1), 3e-6 + 2e12 / (989e12 * 0.5), 1e-15);
    assert_float_equal(costmodel_link_s(&cm, CM_LINK_NVLINK, 64e6), 3e-6 + 64e6 / 200e9, 1e-15);
    assert_float_equal(costmodel_link_s(&cm, CM_LINK_RDMA, 64e6), 10e-6 + 64e6 / 50e9, 1e-15);
    assert_float_equal(costmodel_link_s(&cm, CM_LINK_PCIE, 0), 0, 0);
    assert_int_equal(cm_link_class_parse("roce"), CM_LINK_RDMA);
    assert_int_equal(cm_link_class_parse("ethernet"), -1);
    cJSON *p = costmodel_provenance_json(&cm);
    assert_string_equal(cJSON_GetObjectItem(p, "source")->valuestring, "h800-spec");
    assert_string_equal(cJSON_GetObjectItem(p, "device")->valuestring, "NVIDIA H800 SXM5");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(p, "measured")));
    assert_string_equal(cJSON_GetObjectItem(p, "basis")->valuestring, "spec");
    cJSON_Delete(p);
}

/* The nccl-tests-fitted model: the RDMA link's beta near the logs' ~45 GB/s large-message busbw. */
static void test_fitted_comm_model_loads(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = { 0, "" };
    assert_int_equal(costmodel_load("calibration/models/h800-nccl-samples.json", &cm, &err), 0);
    assert_true(cm.link[CM_LINK_RDMA].present);
    assert_true(fabs(cm.link[CM_LINK_RDMA].beta_Bps - 45.5e9) < 0.1 * 45.5e9);
    assert_true(fabs(cm.link[CM_LINK_NVLINK].beta_Bps - 150e9) < 0.1 * 150e9);   /* from sendrecv */
    assert_false(cm.link[CM_LINK_PCIE].present == 0);                             /* from the base */
    /* the CPU model loads too (operand term unresolved -> null) */
    assert_int_equal(costmodel_load("calibration/models/cpu-measured.json", &cm, &err), 0);
    assert_true(cm.measured);
    assert_true(costmodel_gemm_s(&cm, 64, 64, 64, DT_BF16) > 0);
}

static void test_builtin_roofline(void **state) {
    (void)state;
    cluster_cfg c;
    assert_int_equal(preset_cluster(preset_cluster_names[0], &c), 0);
    costmodel cm = costmodel_from_cluster(&c);
    assert_false(cm.measured);
    assert_string_equal(cm.source, "built-in roofline");
    assert_float_equal(cm.peak_flops[DT_BF16], c.gpu.bf16_tflops * 1e12, 1);
    assert_float_equal(cm.link[CM_LINK_RDMA].beta_Bps, c.nic_gbps / 8 * 0.9 * 1e9, 1);
    /* gpu_cfg alone: H800-class link defaults */
    costmodel g = costmodel_from_gpu(&c.gpu);
    assert_float_equal(g.link[CM_LINK_NVLINK].beta_Bps, 160e9, 1);
    scenario s;
    memset(&s, 0, sizeof s);
    s.cluster = c;
    moe_error err = { 0, "" };
    costmodel out;
    assert_int_equal(costmodel_for_scenario(&s, &out, &err), 0);
    assert_string_equal(out.source, "built-in roofline");
    snprintf(s.calibration, sizeof s.calibration, "calibration/models/nope.json");
    snprintf(s.file, sizeof s.file, "x.json");
    assert_int_equal(costmodel_for_scenario(&s, &out, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "calibration"));
    snprintf(s.calibration, sizeof s.calibration, H800);
    assert_int_equal(costmodel_for_scenario(&s, &out, &err), 0);
    assert_string_equal(out.source, "h800-spec");
}

static void expect_bad(const char *text, const char *path, const char *what) {
    costmodel cm;
    moe_error err = { 0, "" };
    int rc = costmodel_parse("m.json", text, &cm, &err);
    if (rc != EXIT_BADINPUT || !strstr(err.msg, path) || !strstr(err.msg, what))
        fprintf(stderr, "unexpected: rc %d: %s\n", rc, err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "m.json"));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, what));
}

#define HEAD "{\"format\":\"moesim-costmodel/1\",\"source\":\"s\",\"device\":\"d\",\"measured\":false,"
#define PEAK "\"peak_tflops\":{\"bf16\":989},"
#define GEMM "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":3},"
#define MEM "\"memory\":{\"GBps\":3000,\"launch_us\":2},\"attention\":{\"eff\":0.5}"

static void test_bad_models(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = { 0, "" };
    assert_int_equal(costmodel_parse("m.json", HEAD PEAK GEMM MEM "}", &cm, &err), 0);   /* control */
    assert_float_equal(cm.peak_flops[DT_FP8], 1978e12, 1);   /* default 2x BF16 */
    assert_int_equal(cm.link[CM_LINK_NVLINK].present, 0);
    assert_true(isinf(costmodel_link_s(&cm, CM_LINK_NVLINK, 1e6)));
    expect_bad("{\"format\":\"moesim-costmodel/9\"}", "format", "moesim-costmodel/1");
    expect_bad(HEAD PEAK "\"gemm\":{\"eff_max\":1.5,\"operand_GBps\":3000,\"launch_us\":3}," MEM "}",
               "gemm.eff_max", "(0, 1]");
    expect_bad(HEAD PEAK "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":3,\"by_dtype\":{\"bf17\":{}}}," MEM "}",
               "gemm.by_dtype.bf17", "a precision name");
    expect_bad(HEAD PEAK GEMM MEM ",\"links\":{\"rdma\":{\"alpha_us\":1,\"GBps\":60,\"line_GBps\":50}}}",
               "links.rdma.GBps", "line rate");
    expect_bad(HEAD "\"basis\":\"guessed\"," PEAK GEMM MEM "}", "basis", "\"published\"");
    expect_bad(HEAD PEAK "\"gemm\":{\"operand_GBps\":3000,\"launch_us\":3}," MEM "}", "gemm.eff_max", "required");
    expect_bad(HEAD GEMM MEM "}", "peak_tflops", "an object");
    expect_bad(HEAD PEAK GEMM MEM ",\"links\":{\"ethernet\":{\"alpha_us\":1,\"GBps\":10}}}", "links",
               "nvlink, rdma or pcie");
    expect_bad(HEAD PEAK GEMM MEM ",\"links\":{\"rdma\":{\"alpha_us\":1,\"GBps\":\"fast\"}}}", "links.rdma.GBps",
               "a number");
    expect_bad(HEAD PEAK GEMM "\"memory\":{\"GBps\":3000,\"launch_us\":2}}", "attention", "an object");
    expect_bad("{\n\"format\": ,}", "line 2", "valid JSON");
    /* strict JSON: a section twice (a 100x slower GEMM first) is refused, not resolved either way */
    expect_bad(HEAD PEAK "\"gemm\":{\"eff_max\":0.008,\"operand_GBps\":3000,\"launch_us\":3}," GEMM MEM "}", "gemm",
               "a second time");
    expect_bad(HEAD PEAK GEMM MEM "} trailing", "line 1", "trailing");
    expect_bad(HEAD PEAK "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":03}," MEM "}",
               "gemm.launch_us", "JSON number");
    expect_bad(HEAD PEAK GEMM MEM ",\"gemm_typo\":{}}", "gemm_typo", "unknown key");
    assert_int_equal(costmodel_load("/nonexistent/model.json", &cm, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "/nonexistent/model.json"));
}

/* The compute recipes (sim/plan/recipes.h), by hand on the H800 spec model (no fit of its own for any
 * recipe, so the recipe rates apply) with FP4 added:
 * a 4096 x 4096 x 4096 GEMM takes launch + 2 n^3 / (peak x eff_max x rate) + operand bytes /
 * operand bandwidth, with fp8-cs and mxfp8 at 1610/1520 x the FP8 rate, nvfp4 at the FP4 peak with
 * half-byte operands; the cast passes move elements x 4 B (fp8-cs), 0 (fp8, mxfp8), 5.0625 B
 * (nvfp4) at the memory bandwidth; an expert forward adds the cast of its two GEMM inputs. */
static void test_compute_recipes(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_load(H800, &cm, &err), 0);
    cm.peak_fp4_flops = 4000e12;
    const double n = 4096, f = 2 * n * n * n, op = 3015e9, mem = 3015e9;
    double t8 = 3e-6 + f / (1979e12 * 0.8) + (1.0 * 2 * n * n + 2.0 * n * n) / op;
    double tcs = 3e-6 + f / (1979e12 * 0.8 * (1610.0 / 1520.0)) + (1.0 * 2 * n * n + 2.0 * n * n) / op;
    double t4 = 3e-6 + f / (4000e12 * 0.8) + (0.5 * 2 * n * n + 2.0 * n * n) / op;
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_FP8), t8, 1e-12 * t8);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_FP8_CS), tcs, 1e-12 * tcs);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_MXFP8), tcs, 1e-12 * tcs);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_NVFP4), t4, 1e-12 * t4);
    double el = 1e6;
    assert_true(costmodel_cast_s(&cm, el, DT_FP8) == 0.0);
    assert_true(costmodel_cast_s(&cm, el, DT_MXFP8) == 0.0);
    assert_true(costmodel_cast_s(&cm, el, DT_BF16) == 0.0);
    assert_float_equal(costmodel_cast_s(&cm, el, DT_FP8_CS), 2e-6 + el * 4.0 / mem, 1e-15);
    assert_float_equal(costmodel_cast_s(&cm, el, DT_NVFP4), 2e-6 + el * 5.0625 / mem, 1e-15);
    double tok[2] = {128, 256};
    double e8 = costmodel_expert_ffn_fwd_s(&cm, tok, 2, 1024, 512, DT_FP8);
    double ecs_gemms = costmodel_grouped_gemm_s(&cm, tok, 2, 1024, 1024, DT_FP8_CS) +
                       costmodel_grouped_gemm_s(&cm, tok, 2, 1024, 512, DT_FP8_CS);
    double swiglu = e8 - costmodel_grouped_gemm_s(&cm, tok, 2, 1024, 1024, DT_FP8) -
                    costmodel_grouped_gemm_s(&cm, tok, 2, 1024, 512, DT_FP8);
    double ecs = costmodel_expert_ffn_fwd_s(&cm, tok, 2, 1024, 512, DT_FP8_CS);
    assert_float_equal(ecs, ecs_gemms + swiglu + 2e-6 + 384.0 * (1024 + 512) * 4.0 / mem, 1e-12);
}


/* A tile/wave model small enough to solve by hand: 4 SMs, one 128 x 128 tile, tensor cores at 50% of
 * 989 TFLOP/s, operand and on-chip streaming fast enough not to matter, q = 1 (the sum). A GEMM of 4
 * tiles is one wave; 5 tiles take two. */
#define TILED_BF16 "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":3,\"sm_count\":4,\"by_dtype\":{\"bf16\":" \
    "{\"eff_max\":0.5,\"operand_GBps\":1e6,\"launch_us\":1,\"tile_load_GBps\":1e7,\"tile_overhead_us\":0,\"overlap_q\":1," \
    "\"tile_m\":[128],\"tile_n\":[128]}}},"

static void test_tile_wave_form_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_parse("t.json", HEAD PEAK TILED_BF16 MEM "}", &cm, &err), 0);
    const double k = 1024, tile = 2.0 * 128 * 128 * k / (989e12 * 0.5 / 4);   /* one tile on one SM */
    double one = costmodel_gemm_s(&cm, 512, 128, k, DT_BF16), two = costmodel_gemm_s(&cm, 640, 128, k, DT_BF16);
    double bytes1 = 2.0 * (512 * k + k * 128 + 512 * 128), bytes2 = 2.0 * (640 * k + k * 128 + 640 * 128);
    assert_float_equal(one, 1e-6 + tile + bytes1 / 1e15, 1e-12);
    assert_float_equal(two, 1e-6 + 2 * tile + bytes2 / 1e15, 1e-12);
    /* a grouped GEMM shares the waves: two groups of 2 tiles = one wave; an empty group costs nothing */
    double tok[3] = {256, 0, 256};
    double g = costmodel_grouped_gemm_s(&cm, tok, 3, 128, k, DT_BF16);
    assert_float_equal(g, 1e-6 + tile + 2.0 * (2 * 256 * k + 2 * k * 128 + 2 * 256 * 128) / 1e15, 1e-12);
    /* FP16 takes BF16's fit; FP8 (no fit of its own) the default additive form */
    assert_float_equal(costmodel_gemm_s(&cm, 512, 128, k, DT_FP16), one, 1e-15);
    double f8 = 3e-6 + 2.0 * 512 * 128 * k / (1978e12 * 0.8) + (512 * k + k * 128 + 2.0 * 512 * 128) / 3000e9;
    assert_float_equal(costmodel_gemm_s(&cm, 512, 128, k, DT_FP8), f8, 1e-12 * f8);
}

/* A fitted attention model by hand: forward eff 0.5, no softmax or row term, no causal extra. A
 * causal sequence of 256 is 2 x 2 blocks of 128, of which the 3 on and below the diagonal run. */
static void test_attention_fitted_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    const char *attn = "\"memory\":{\"GBps\":3000,\"launch_us\":2},\"attention\":{\"eff\":0.5,\"launch_us\":3,"
                       "\"fwd\":{\"eff\":0.5,\"pair_ps\":0,\"row_dim_ps\":0,\"causal_eff\":null},"
                       "\"bwd\":{\"eff\":0.25,\"pair_ps\":1,\"row_dim_ps\":0,\"causal_eff\":null}}}";
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s%s", HEAD, PEAK, GEMM, attn);
    assert_int_equal(costmodel_parse("a.json", text, &cm, &err), 0);
    cm_attn_shape a = {.batch = 2, .heads = 4, .seq_q = 256, .seq_k = 256, .d_qk = 192, .d_v = 128, .causal = 1};
    double pairs = 2 * 4 * 3 * 128.0 * 128.0;
    assert_float_equal(costmodel_attention_pairs(&a), pairs, 0);
    assert_float_equal(costmodel_attention_core_s(&cm, &a, 0), 3e-6 + pairs * 2 * (192 + 128) / (989e12 * 0.5), 1e-15);
    /* backward: 2 (3 d_qk + 2 d_v) FLOPs per pair at 25%, plus 1 ps per pair */
    assert_float_equal(costmodel_attention_core_s(&cm, &a, 1),
                       3e-6 + pairs * (2.0 * (3 * 192 + 2 * 128) / (989e12 * 0.25) + 1e-12), 1e-15);
    /* a window of 128 keys on a sequence of 512: the diagonal block and one before it, per query block */
    cm_attn_shape w = {.batch = 1, .heads = 1, .seq_q = 512, .seq_k = 128, .d_qk = 64, .d_v = 64, .causal = 1};
    assert_float_equal(costmodel_attention_pairs(&w), 4 * 2 * 128.0 * 128.0, 0);
}

/* A link efficiency applies to the scenario's own line rate: a model whose RDMA reaches 45 of 50 GB/s
 * prices a 200 Gb/s NIC at 22.5 GB/s, and the fabric runs that NIC at 180 Gb/s. */
static void test_links_scale_to_the_cluster(void **state) {
    (void)state;
    const char *path = "/tmp/moesim-test-links.json";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, HEAD PEAK GEMM MEM ",\"links\":{\"rdma\":{\"alpha_us\":4,\"GBps\":45,\"line_GBps\":50}}}");
    fclose(f);
    scenario s;
    memset(&s, 0, sizeof s);
    assert_int_equal(preset_cluster("h100-8rail", &s.cluster), 0);
    s.cluster.nic_gbps = 200;
    snprintf(s.calibration, sizeof s.calibration, "%s", path);
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_float_equal(cm.link[CM_LINK_RDMA].beta_Bps, 22.5e9, 1);
    /* NVLink, absent from the model, comes from the cluster as the built-in roofline takes it */
    assert_float_equal(cm.link[CM_LINK_NVLINK].beta_Bps, s.cluster.nvlink_GBps * 1e9, 1);
    cluster_cfg fab;
    assert_int_equal(costmodel_fabric_cluster(&s, &fab, &err), 0);
    assert_float_equal(fab.nic_gbps, 180, 1e-9);
    assert_float_equal(fab.nvlink_GBps, s.cluster.nvlink_GBps, 1e-9);
    unlink(path);
}

/* The fitted H800 model reproduces the published tables it was fitted on: per table, the rms of the
 * relative time error under 10% and every point within 20% (DeepGEMM April 2025, XLA sm_90 BF16,
 * FlashAttention-3 forward and backward). */
static void test_published_tables_reproduced(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_load(H800_FIT, &cm, &err), 0);
    assert_string_equal(cm.basis, "published");
    assert_true(cm.gemm_fitted[DT_FP8] && cm.gemm_fitted[DT_BF16] && cm.attention_fitted);
    const char *traces[] = {"calibration/traces/published-deepgemm-h800-2025-04.json",
                            "calibration/traces/published-gemm-bf16-h100.json",
                            "calibration/traces/published-attention-h100.json"};
    for (int t = 0; t < 3; t++) {
        trace tr;
        assert_int_equal(trace_read(traces[t], &tr, &err), 0);
        assert_int_equal(tr.prov.kind, TRACE_KIND_PUBLISHED);
        double s2 = 0, mx = 0;
        for (int i = 0; i < tr.n; i++) {
            assert_true(tr.pts[i].source[0] != '\0');   /* every published point cites its source */
            double e = fabs(fit_predict_compute(&cm, &tr.pts[i]) * 1e6 - tr.pts[i].time_us) / tr.pts[i].time_us;
            s2 += e * e;
            if (e > mx) mx = e;
        }
        printf("  %s: %d points, rms %.1f%%, max %.1f%%\n", traces[t], tr.n, 100 * sqrt(s2 / tr.n), 100 * mx);
        assert_true(sqrt(s2 / tr.n) < 0.10);
        assert_true(mx < 0.20);
        trace_free(&tr);
    }
    /* the April 2025 DeepGEMM peak case: 4096 x 7168 x 16384 at 1520 TFLOP/s published */
    double t = costmodel_gemm_s(&cm, 4096, 7168, 16384, DT_FP8), tf = 2.0 * 4096 * 7168 * 16384 / t / 1e12;
    assert_true(tf > 1520 * 0.8 && tf < 1520 * 1.2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h800_published_gemm_closed_form),
        cmocka_unit_test(test_grouped_gemm_and_hot_expert),
        cmocka_unit_test(test_memory_attention_links),
        cmocka_unit_test(test_fitted_comm_model_loads),
        cmocka_unit_test(test_builtin_roofline),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_compute_recipes),
        cmocka_unit_test(test_tile_wave_form_by_hand),
        cmocka_unit_test(test_attention_fitted_by_hand),
        cmocka_unit_test(test_links_scale_to_the_cluster),
        cmocka_unit_test(test_published_tables_reproduced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
