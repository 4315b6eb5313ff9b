/* test_costmodel.c — sim/costmodel: loading model JSON and the closed-form predictions.
 *
 * Truths: the public H800 figures (989 TFLOP/s BF16, 3.35 TB/s HBM; REFERENCE.md §6) and the spec
 * model's stated choices (eff_max 0.8, 90% of HBM, 3 us launch), typed here by hand, so a change to
 * either the file or the formulas shows up; hand-computed alpha-beta times; hand-made tile/wave and
 * attention models small enough to solve by hand (waves, causal blocks); and the published tables
 * themselves (DeepGEMM, XLA's sm_90 matmuls, cuDNN attention), which the fitted H800 model must
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
#include "sim/base/json_read.h"
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
    /* per-tensor FP8 doubles the peak: the FLOP part halves, inputs are 1 byte */
    double closed8 = 3e-6 + f / (1979e12 * 0.8) + (1.0 * 2 * n * n + 2.0 * n * n) / (0.9 * 3350e9);
    assert_float_equal(costmodel_gemm_s(&cm, n, n, n, DT_FP8_CS), closed8, 1e-12 * closed8);
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
    /* cluster.gpu.grouped_gemm_rate r: the body at r of the tables' rate, the one launch as it was; a
     * dense GEMM does not move */
    double dense = costmodel_gemm_s(&cm, 300, F, H, DT_BF16);
    cm.grouped_rate = 0.5;
    assert_float_equal(costmodel_grouped_gemm_s(&cm, tok, 4, F, H, DT_BF16), 3e-6 + body / 0.5, 1e-12 * body);
    assert_float_equal(costmodel_gemm_s(&cm, 300, F, H, DT_BF16), dense, 0);
    cm.grouped_rate = 0;
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

/* a == b in double to 1e-12 relative (cmocka's assert_float_equal compares floats) */
#define assert_close(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-12 * fmax(fabs((double)(a)), fabs((double)(b))))

/* Quantization passes (sim/plan/recipes.h) by hand on a model whose casts run at 2000 GB/s with a
 * 2 us launch and no amax or stochastic-rounding fit, so those run at their published ratios to a
 * cast: an amax reduction 3.03 / 3.92 TB/s, NVFP4's stochastic rounding 4.5 / 6.4 TB/s (costmodel.h).
 * Per element of a BF16 tensor (2 B read per pass): Hopper fp8-cs zeroes the amax (a launch), reads
 * the tensor for its amax, computes the scale (a launch), then casts it writing the FP8 copy and its
 * transpose (2 B); fp8-ds casts once writing both (no amax pass); DeepSeek's blockwise writes both
 * copies with a 4 B scale per 128; Blackwell fp8-cs writes one copy; mxfp8 writes both copies with an
 * E8M0 scale per 32; nvfp4 gradients: an amax pass, then a stochastic-rounding cast of both copies
 * (0.5 B + a 1 B scale per 16 each). A grouped GEMM over 8 experts launches fp8-cs's kernels per
 * expert (32) and fp8-ds's fused multi-tensor cast once. BF16 pays nothing. */
#define QMODEL "\"memory\":{\"GBps\":3000,\"launch_us\":2},\"attention\":{\"eff\":0.5}," \
    "\"kernels\":{\"quantize\":{\"GBps\":2000,\"launch_us\":2}}}"

static void test_quantization_passes_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_parse("q.json", HEAD PEAK GEMM QMODEL, &cm, &err), 0);
    const double E = 1e6, cast = 2000e9, amax = cast * 3.03 / 3.92, sr = cast * 4.5 / 6.4, L = 2e-6;
    assert_int_equal(costmodel_arch(&cm), GPU_HOPPER);
    assert_close(costmodel_quant_s(&cm, DT_FP8_CS, QR_INPUT, E, 1), 4 * L + 2 * E / amax + 4 * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_FP8_CS, QR_GRAD, E, 8), 32 * L + 2 * E / amax + 4 * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_FP8_DS, QR_INPUT, E, 8), L + 4 * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_FP8, QR_INPUT, E, 1), L + (2 + 2 * (1 + 4.0 / 128)) * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_FP8_CS, QR_WEIGHT_USE, E, 1), 0.0);
    assert_close(costmodel_quant_s(&cm, DT_BF16, QR_INPUT, E, 1), 0.0);
    assert_close(costmodel_quant_s(&cm, DT_FP8_CS, QR_INPUT, 0, 1), 0.0);
    cm.peak_fp4_flops = 9000e12;   /* block-scaled tensor cores: Blackwell's passes */
    assert_int_equal(costmodel_arch(&cm), GPU_BLACKWELL);
    assert_close(costmodel_quant_s(&cm, DT_FP8_CS, QR_INPUT, E, 1), 4 * L + 2 * E / amax + 3 * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_MXFP8, QR_GRAD, E, 1), L + (2 + 2 * (1 + 1.0 / 32)) * E / cast);
    assert_close(costmodel_quant_s(&cm, DT_NVFP4, QR_GRAD, E, 1),
                       2 * L + 2 * E / amax + (2 + 2 * (0.5 + 1.0 / 16)) * E / sr);
    assert_close(costmodel_quant_s(&cm, DT_NVFP4, QR_INPUT, E, 1),
                       2 * L + 2 * E / amax + (2 + 2 * (0.5 + 1.0 / 16)) * E / cast);
    /* MXFP8's FP8 weights swizzle their scales per use: read and write 1/32 B per element */
    assert_close(costmodel_quant_s(&cm, DT_MXFP8, QR_WEIGHT_USE, E, 1), L + E / 16.0 / cast);
    /* a model without a quantize kernel casts at its memory model's rate */
    costmodel plain;
    assert_int_equal(costmodel_parse("m.json", HEAD PEAK GEMM MEM "}", &plain, &err), 0);
    assert_close(costmodel_quant_s(&plain, DT_FP8_DS, QR_INPUT, E, 1), L + 4 * E / 3000e9);
}

/* Routed experts (costmodel_expert_ffn_part_s): the forward quantizes both GEMM inputs (tokens x hidden,
 * tokens x ffn), the input-gradient kernel both output gradients (tokens x hidden, tokens x 2 ffn),
 * the weight-gradient kernel nothing; the GEMMs and SwiGLU are the same in all three; 2 experts with
 * tokens of 3 (one empty) launch fp8-cs's per-expert passes twice. */
static void test_expert_parts_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_parse("q.json", HEAD PEAK GEMM QMODEL, &cm, &err), 0);
    const double tok[3] = {128, 0, 256}, h = 1024, f = 512, T = 384;
    double q[3], t[3];
    for (int p = 0; p < 3; p++) t[p] = costmodel_expert_ffn_part_s(&cm, tok, 3, h, f, DT_FP8_CS, (expert_part)p, &q[p]);
    /* per tensor: 4 kernels per non-empty expert (8 launches), an amax read and a cast-transpose */
    const double amax = 2000e9 * 3.03 / 3.92, cast = 2000e9;
    double qf = 16 * 2e-6 + (T * h + T * f) * (2 / amax + 4 / cast), qbi = 16 * 2e-6 + (T * h + T * 2 * f) * (2 / amax + 4 / cast);
    assert_close(q[EXPERT_FWD], qf);
    assert_close(q[EXPERT_BWD_INPUT], qbi);
    assert_close(q[EXPERT_BWD_WEIGHT], 0.0);
    assert_close(t[EXPERT_FWD] - q[EXPERT_FWD], t[EXPERT_BWD_WEIGHT]);
    assert_close(t[EXPERT_BWD_INPUT] - q[EXPERT_BWD_INPUT], t[EXPERT_BWD_WEIGHT]);
    assert_close(costmodel_expert_ffn_fwd_s(&cm, tok, 3, h, f, DT_FP8_CS), t[EXPERT_FWD]);
    assert_close(costmodel_expert_ffn_quant_s(&cm, tok, 3, h, f, DT_FP8_CS, EXPERT_BWD_INPUT), q[EXPERT_BWD_INPUT]);
    double qb;
    costmodel_expert_ffn_part_s(&cm, tok, 3, h, f, DT_BF16, EXPERT_FWD, &qb);
    assert_close(qb, 0.0);
}

/* GEMM rates per recipe (recipes.h) on the H800 spec model (no fit of its own for any precision, so
 * every recipe runs the default parameters: eff_max 0.8, operand 3015 GB/s, 3 us) at its base peak
 * times its rate: fp8-cs and fp8-ds at the FP8 peak, DeepSeek's blockwise fp8 on Hopper at 1/1.16 of
 * it (cuBLAS per-tensor / blockwise FP8, H200 median); with an FP4 peak (Blackwell) blockwise and
 * mxfp8 at 6.812 / 7.161 of it (TE's B300 FP8-CS and MXFP8 per-layer GEMM times) and nvfp4 at its FP4
 * peak times (6.812 / 3.764) / (14000 / 4500) (the same table's NVFP4 speed-up over B300's FP4:FP8
 * peak ratio). */
static void test_recipe_gemm_rates_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_load(H800, &cm, &err), 0);
    const double n = 4096, f = 2 * n * n * n, op = 3015e9, in8 = (1.0 * 2 * n * n + 2.0 * n * n) / op;
    double tcs = 3e-6 + f / (1979e12 * 0.8) + in8;
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_FP8_CS), tcs);
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_FP8_DS), tcs);
    double tblk = 3e-6 + f / (1979e12 * 0.8 / 1.16) + in8;
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_FP8), tblk);
    cm.peak_fp4_flops = 9000e12;
    double tmx = 3e-6 + f / (1979e12 * 0.8 * 6.812 / 7.161) + in8;
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_MXFP8), tmx);
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_FP8), tmx);
    double t4 = 3e-6 + f / (9000e12 * 0.8 * (6.812 / 3.764) / (14000.0 / 4500.0)) + (0.5 * 2 * n * n + 2.0 * n * n) / op;
    assert_close(costmodel_gemm_s(&cm, n, n, n, DT_NVFP4), t4);
}

/* Quantization as a share of GEMM time at TransformerEngine's example layer (hidden 4096, ffn 16384,
 * 15,872 tokens: QKV, attention-out, up and down projections, forward, input and weight gradients),
 * against TE's own measurement (docs/examples/gemm_profiling/gemm_profiling.rst at d0067d0d, 1 -
 * pre-quantized / autocast per-layer time): FP8 current scaling 17% on H200 NVL; on B300 MXFP8 20%,
 * FP8 current scaling 26%, NVFP4 42%. An independent figure, reported and not fitted: TE's benchmark
 * quantizes each operand of each of the 12 GEMMs on its own (6 quantizations per layer GEMM, one
 * usage each, with a Python call each), the model a training step's 3 per GEMM (input, weight, output
 * gradient, both usages each): the model's share must be below TE's and above 40% of it. The models:
 * h200-published (sustained clocks) and gb300-published (B300's GEMM and quantize figures). */
static double te_layer_quant_share(const costmodel *cm, dtype_kind dt) {
    const double M = 15872, g[4][2] = {{4096, 12288}, {4096, 4096}, {4096, 16384}, {16384, 4096}};
    double gemm = 0, q = 0;
    for (int i = 0; i < 4; i++) {
        double K = g[i][0], N = g[i][1];
        gemm += costmodel_gemm_s(cm, M, N, K, dt) + costmodel_gemm_s(cm, M, K, N, dt) + costmodel_gemm_s(cm, K, N, M, dt);
        q += costmodel_quant_s(cm, dt, QR_INPUT, M * K, 1) + costmodel_quant_s(cm, dt, QR_WEIGHT, K * N, 1) +
             costmodel_quant_s(cm, dt, QR_GRAD, M * N, 1) + 2 * costmodel_quant_s(cm, dt, QR_WEIGHT_USE, K * N, 1);
    }
    return q / (gemm + q);
}

static void test_te_quantization_split(void **state) {
    (void)state;
    const struct { const char *model; dtype_kind dt; double te; } cases[] = {
        {"calibration/models/h200-published.json", DT_FP8_CS, 0.17},
        {"calibration/models/gb300-published.json", DT_MXFP8, 0.20},
        {"calibration/models/gb300-published.json", DT_FP8_CS, 0.26},
        {"calibration/models/gb300-published.json", DT_NVFP4, 0.42},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        costmodel cm;
        moe_error err = {0, ""};
        assert_int_equal(costmodel_load(cases[i].model, &cm, &err), 0);
        double share = te_layer_quant_share(&cm, cases[i].dt);
        printf("  %s %s: quantization %.1f%% of GEMM time (TE's benchmark: %.0f%%)\n", cases[i].model,
               costmodel_dtype_name(cases[i].dt), 100 * share, 100 * cases[i].te);
        assert_true(share < cases[i].te && share > 0.4 * cases[i].te);
    }
}

/* Sustained clocks by hand: the tile/wave model below at sustained 0.5 doubles the tensor-core time of
 * a tile and leaves HBM streaming alone (q = 1: the sum); the additive form's FLOP term doubles and
 * its operand term does not; a fitted attention kernel's matmul and per-row terms double, its per-row
 * memory term does not. cluster.gpu.sustained replaces the model's value unless "auto". */
#define SUSTAINED_MODEL HEAD PEAK "\"sustained\":0.5," \
    "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":3,\"sm_count\":4,\"by_dtype\":{\"bf16\":" \
    "{\"eff_max\":0.5,\"operand_GBps\":1000,\"launch_us\":1,\"tile_load_GBps\":1e7,\"tile_overhead_us\":0,\"overlap_q\":1," \
    "\"tile_m\":[128],\"tile_n\":[128]}}}," \
    "\"memory\":{\"GBps\":3000,\"launch_us\":2},\"attention\":{\"eff\":0.5,\"launch_us\":3," \
    "\"fwd\":{\"eff\":0.5,\"pair_ps\":0,\"row_dim_ps\":2,\"row_ps\":100,\"causal_eff\":null}," \
    "\"bwd\":{\"eff\":0.25,\"pair_ps\":0,\"row_dim_ps\":0,\"causal_eff\":null}}}"

static void test_sustained_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_parse("s.json", SUSTAINED_MODEL, &cm, &err), 0);
    assert_close(cm.sustained, 0.5);
    const double k = 1024, tile = 2.0 * 128 * 128 * k / (989e12 * 0.5 / 4);
    double bytes = 2.0 * (512 * k + k * 128 + 512 * 128);
    assert_close(costmodel_gemm_s(&cm, 512, 128, k, DT_BF16), 1e-6 + 2 * tile + bytes / 1000e9);
    double f8 = 2.0 * 512 * 128 * k;
    double t8 = 3e-6 + 2 * f8 / (1978e12 * 0.8) + (512 * k + k * 128 + 2.0 * 512 * 128) / 3000e9;
    assert_close(costmodel_gemm_s(&cm, 512, 128, k, DT_FP8_CS), t8);
    cm_attn_shape a = {.batch = 1, .heads = 2, .seq_q = 256, .seq_k = 256, .d_qk = 64, .d_v = 64, .causal = 0};
    double pairs = 2 * 256.0 * 256.0, rows = 2 * 256.0;
    double ta = 3e-6 + 2 * (pairs * 2 * 128 / (989e12 * 0.5) + rows * 100e-12) + rows * 64 * 2e-12;
    assert_close(costmodel_attention_core_s(&cm, &a, 0), ta);
    /* the scenario's field */
    const char *path = "/tmp/moesim-test-sustained.json";
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(SUSTAINED_MODEL, fp);
    fclose(fp);
    scenario s;
    memset(&s, 0, sizeof s);
    assert_int_equal(preset_cluster("h100-8rail", &s.cluster), 0);
    snprintf(s.calibration, sizeof s.calibration, "%s", path);
    assert_true(s.cluster.gpu.sustained < 0);   /* the presets say "auto" */
    /* auto on a GPU kind the joint fit has (calibration/models/global.json, read here on its own): the
     * fitted value; on one it has not: the model's own */
    cJSON *fit = json_load("calibration/models/global.json", 0, &err);
    assert_non_null(fit);
    double h100 = -1;
    for (const cJSON *r = cJSON_GetObjectItemCaseSensitive(fit, "params")->child; r; r = r->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(r, "path")->valuestring, "cluster.gpu.sustained") &&
            !strcmp(cJSON_GetObjectItemCaseSensitive(r, "scope")->valuestring, "H100"))
            h100 = cJSON_GetObjectItemCaseSensitive(r, "value")->valuedouble;
    cJSON_Delete(fit);
    assert_true(h100 > 0 && fabs(h100 - 0.5) > 0.01);
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_close(cm.sustained, h100);
    assert_string_equal(cm.sustained_from, "global fit");
    snprintf(s.cluster.gpu.name, sizeof s.cluster.gpu.name, "H200");
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_close(cm.sustained, 0.5);
    snprintf(s.cluster.gpu.name, sizeof s.cluster.gpu.name, "H100");
    s.cluster.gpu.sustained = 0.9;
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_close(cm.sustained, 0.9);
    s.calibration[0] = '\0';   /* the built-in roofline takes it too */
    assert_int_equal(costmodel_for_scenario(&s, &cm, &err), 0);
    assert_close(cm.sustained, 0.9);
    unlink(path);
    expect_bad(HEAD PEAK GEMM "\"sustained\":1.2," MEM "}", "sustained", "(0, 1]");
}

/* The tile form's ceiling by hand: a tile model whose tiles run at 50% of peak, with ceil_eff 0.25: a
 * long GEMM takes f / (peak x 0.25) in all (launch included); a small one is far from the ceiling and
 * keeps the tile form's time. */
static void test_gemm_ceiling_by_hand(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    const char *text = HEAD PEAK
        "\"gemm\":{\"eff_max\":0.8,\"operand_GBps\":3000,\"launch_us\":3,\"sm_count\":4,\"by_dtype\":{\"bf16\":"
        "{\"eff_max\":0.5,\"operand_GBps\":1e6,\"launch_us\":1,\"tile_load_GBps\":1e7,\"tile_overhead_us\":0,\"overlap_q\":1,"
        "\"ceil_eff\":0.25,\"tile_m\":[128],\"tile_n\":[128]}}}," MEM "}";
    assert_int_equal(costmodel_parse("c.json", text, &cm, &err), 0);
    const double k = 65536, f = 2.0 * 512 * 128 * k;
    assert_close(costmodel_gemm_s(&cm, 512, 128, k, DT_BF16), f / (989e12 * 0.25));
    double ftile = 2.0 * 128 * 128 * 128;
    assert_close(costmodel_gemm_s(&cm, 128, 128, 128, DT_BF16), 1e-6 + ftile / (989e12 * 0.5 / 4) + 2.0 * 3 * 128 * 128 / 1e15);
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
    /* FP16 takes BF16's fit; per-tensor FP8 (no fit of its own) the default additive form */
    assert_float_equal(costmodel_gemm_s(&cm, 512, 128, k, DT_FP16), one, 1e-15);
    double f8 = 3e-6 + 2.0 * 512 * 128 * k / (1978e12 * 0.8) + (512 * k + k * 128 + 2.0 * 512 * 128) / 3000e9;
    assert_float_equal(costmodel_gemm_s(&cm, 512, 128, k, DT_FP8_CS), f8, 1e-12 * f8);
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

/* A sliding window is per-row work (costmodel.h): a model with a per-row term of 200 ps and tensor
 * cores at 150% of 989 TFLOP/s prices a window of 128 keys over 2 x 8192 queries of d 64 as the
 * causal band (the diagonal block and one before it per query block: 64 x 2 blocks of 128 x 128) plus
 * 16,384 rows x 200 ps; doubling the sequence doubles it (a full causal sequence would quadruple).
 * Published truth: cuDNN on GB200 runs that shape (2 x 128 heads) in 0.414 ms forward, ~7% of peak
 * (cudnn-frontend gpt_oss GB200 CSV): the fitted GB200 model within 10%, and every cuDNN table it was
 * fitted on (Llama 3.1 GQA d128, DeepSeek-V3 MLA 192/128, GPT-OSS window 128) within 12% rms. */
static void test_attention_window_per_row(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_parse("w.json", HEAD PEAK GEMM "\"memory\":{\"GBps\":3000,\"launch_us\":2},"
                                     "\"attention\":{\"eff\":0.5,\"launch_us\":3,"
                                     "\"fwd\":{\"eff\":1.5,\"pair_ps\":0,\"row_dim_ps\":0,\"row_ps\":200,\"causal_eff\":null},"
                                     "\"bwd\":{\"eff\":1.5,\"pair_ps\":0,\"row_dim_ps\":0,\"causal_eff\":null}}}",
                                     &cm, &err), 0);
    cm_attn_shape w = {.batch = 2, .heads = 1, .seq_q = 8192, .seq_k = 128, .d_qk = 64, .d_v = 64, .causal = 1};
    double pairs = 2 * 64 * 2 * 128.0 * 128.0, rows = 2 * 8192.0;
    double t = 3e-6 + pairs * 2 * 128 / (989e12 * 1.5) + rows * 200e-12;
    assert_close(costmodel_attention_core_s(&cm, &w, 0), t);
    cm_attn_shape w2 = w;
    w2.seq_q = 16384;
    assert_close(costmodel_attention_core_s(&cm, &w2, 0) - 3e-6, 2 * (t - 3e-6));
    assert_int_equal(costmodel_load("calibration/models/gb200-published.json", &cm, &err), 0);
    cm_attn_shape g = {.batch = 2, .heads = 128, .seq_q = 8192, .seq_k = 128, .d_qk = 64, .d_v = 64, .causal = 1};
    double tg = costmodel_attention_core_s(&cm, &g, 0);
    printf("  GB200 window 128, 2 x 128 heads x 8192: %.3f ms (cuDNN 0.414 ms)\n", tg * 1e3);
    assert_true(fabs(tg - 0.414e-3) < 0.10 * 0.414e-3);
    trace tr;
    assert_int_equal(trace_read("calibration/traces/published-attention-cudnn-gb200.json", &tr, &err), 0);
    const char *tables[] = {"cudnn-gb200-llama3.1", "cudnn-gb200-dsv3", "cudnn-gb200-gpt_oss"};
    for (int k = 0; k < 3; k++) {
        double s2 = 0;
        int n = 0;
        for (int i = 0; i < tr.n; i++) {
            if (strcmp(tr.pts[i].table, tables[k])) continue;
            double e = (fit_predict_compute(&cm, &tr.pts[i]) * 1e6 - tr.pts[i].time_us) / tr.pts[i].time_us;
            s2 += e * e;
            n++;
        }
        printf("  %s: %d points, rms %.1f%%\n", tables[k], n, 100 * sqrt(s2 / n));
        assert_true(n >= 10 && sqrt(s2 / n) < 0.12);
    }
    trace_free(&tr);
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
 * cuDNN's fused attention on H200, forward and backward: what TransformerEngine runs on Hopper). */
static void test_published_tables_reproduced(void **state) {
    (void)state;
    costmodel cm;
    moe_error err = {0, ""};
    assert_int_equal(costmodel_load(H800_FIT, &cm, &err), 0);
    assert_string_equal(cm.basis, "published");
    assert_true(cm.gemm_fitted[DT_FP8] && cm.gemm_fitted[DT_BF16] && cm.attention_fitted);
    const char *traces[] = {"calibration/traces/published-deepgemm-h800-2025-04.json",
                            "calibration/traces/published-gemm-bf16-h100.json",
                            "calibration/traces/published-attention-cudnn-h200.json"};
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
        cmocka_unit_test(test_quantization_passes_by_hand),
        cmocka_unit_test(test_expert_parts_by_hand),
        cmocka_unit_test(test_recipe_gemm_rates_by_hand),
        cmocka_unit_test(test_te_quantization_split),
        cmocka_unit_test(test_sustained_by_hand),
        cmocka_unit_test(test_gemm_ceiling_by_hand),
        cmocka_unit_test(test_tile_wave_form_by_hand),
        cmocka_unit_test(test_attention_fitted_by_hand),
        cmocka_unit_test(test_attention_window_per_row),
        cmocka_unit_test(test_links_scale_to_the_cluster),
        cmocka_unit_test(test_published_tables_reproduced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
