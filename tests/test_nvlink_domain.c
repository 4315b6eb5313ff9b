/* test_nvlink_domain.c — NVLink domains larger than a node (cluster.nvlink_domain_gpus, NVL72) and
 * the Blackwell cluster presets.
 *
 * Truths: routes read off the fabric's definition by hand (fabric_geometry.h), DeepEP's aggregation
 * counted by hand (one RDMA transfer per sender and destination domain), node-limited routing
 * checked token by token, the plan's all-to-all time as an alpha-beta NVLink transfer by hand, the
 * published per-GPU figures of the presets typed from the datasheets, and the Blackwell presets' cost
 * models against the published HybridEP figure they are fitted on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/fabric_geometry.h"
#include "sim/exec/deepep_flows.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/plan.h"
#include "sim/program/routing.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_defaults.h"

/* 8 trays of 4 GPUs, 2 NVLink domains of 16 (4 trays each), 4 rails. */
static cluster_cfg two_domains(void) {
    cluster_cfg c;
    assert_int_equal(preset_cluster("gb200-nvl72", &c), 0);
    c.nodes = 8;
    c.nvlink_domain_gpus = 16;
    return c;
}

/* GPU 0 and GPU 13 share domain 0 (trays 0 and 3): NVLink up and down. GPU 0 and GPU 16 (domain 1,
 * the same rail 0): NIC up, NIC down under one leaf. GPU 1 and GPU 16 (rail 1 -> rail 0): NVLink to
 * GPU 0 of its own tray (PXN), then rail 0. */
static void routes_by_domain(void **state) {
    (void)state;
    cluster_cfg c = two_domains();
    fabric_hop h[FABRIC_MAX_HOPS];
    assert_int_equal(fabric_gpu_route(&c, 0, 13, h), 2);
    assert_true(h[0].cls == FL_NVL_UP && h[0].index == 0 && h[1].cls == FL_NVL_DOWN && h[1].index == 13);
    assert_int_equal(fabric_gpu_route(&c, 0, 16, h), 2);
    assert_true(h[0].cls == FL_NIC_UP && h[1].cls == FL_NIC_DOWN && h[1].index == 16);
    assert_int_equal(fabric_gpu_route(&c, 1, 16, h), 4);
    assert_true(h[0].cls == FL_NVL_UP && h[1].cls == FL_NVL_DOWN && h[1].index == 0 && h[2].cls == FL_NIC_UP);
    assert_int_equal(fabric_landing_gpu(&c, 5, 1), 21);   /* position 5 of domain 1 */
    c.nvlink_domain_gpus = 0;                             /* a domain per tray: 0 -> 13 leaves the tray */
    assert_true(fabric_gpu_route(&c, 0, 13, h) > 2);
}

/* DeepEP aggregation per domain: an all-to-all over the 32 GPUs where every rank sends 1 MB to every
 * other. Domain 16: per sender one RDMA flow to the other domain (32 flows, 16 MB each: its 16
 * receivers there), landing on the GPU at its own position; with a domain per tray (4 GPUs): one to
 * each of the 7 other trays (224 flows, 4 MB each). */
static void deepep_flows_per_domain(void **state) {
    (void)state;
    cluster_cfg c = two_domains();
    int n = 32, gpus[32];
    double *bytes = calloc((size_t)n * n, sizeof *bytes);
    for (int i = 0; i < n; i++) {
        gpus[i] = i;
        for (int j = 0; j < n; j++) bytes[i * n + j] = i == j ? 0 : 1e6;
    }
    for (int d = 0; d < 2; d++) {
        c.nvlink_domain_gpus = d == 0 ? 16 : 0;
        a2a_pattern p = {.n = n, .gpus = gpus, .bytes = bytes, .concurrent_groups = 1};
        gpu_flow_list fl = {0};
        assert_int_equal(a2a_flows_build(&c, &p, &fl), 0);
        int rdma = 0;
        for (size_t f = 0; f < fl.n; f++) {
            if (fl.v[f].kind != FLOW_RDMA) continue;
            rdma++;
            assert_true(fl.v[f].bytes == (d == 0 ? 16e6 : 4e6));
            if (d == 0) assert_int_equal(fl.v[f].dst_gpu % 16, fl.v[f].src_gpu % 16);
        }
        assert_int_equal(rdma, d == 0 ? 32 : 224);
        gpu_flow_list_free(&fl);
    }
    free(bytes);
}

/* Node-limited routing counts domains: EP 32 over 2 domains of 16, node_limit 1: every token's 8
 * experts lie in one domain (4 GPUs x 2 experts x ... = 32 experts there). */
static void node_limit_counts_domains(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.cluster = two_domains();
    s.model.experts = 64; s.model.top_k = 8; s.model.expert_groups = 0; s.model.topk_groups = 0;
    s.model.seq_len = 64;
    s.layout.tp = 1; s.layout.ep = 32; s.layout.pp = 1; s.layout.dp = 1; s.layout.micro_batch = 1;
    s.routing.distribution = ROUTE_UNIFORM; s.routing.node_limit = 1; s.routing.capacity_factor = 0;
    int gpus[32];
    for (int i = 0; i < 32; i++) gpus[i] = i;
    moe_error err = {0};
    routing_opts o = {.tokens_per_rank = 64, .keep_choices = 1};
    routing_ctx *ctx = routing_ctx_create_opts(&s, gpus, &o, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_int_equal(routing_ctx_n_nodes(ctx), 2);
    routing_sample r;
    assert_int_equal(routing_sample_init(ctx, &r, &err), 0);
    assert_int_equal(routing_draw(ctx, 0, 0, 0, &r), 0);
    for (int t = 0; t < 32 * 64; t++) {
        int dom = -1;
        for (int k = 0; k < 8; k++) {
            int e = r.choices[(size_t)t * 8 + k], d = e / 32;   /* 2 experts per rank, 16 ranks per domain */
            if (dom < 0) dom = d;
            assert_int_equal(d, dom);
        }
    }
    routing_sample_free(&r);
    routing_ctx_free(ctx);
}

/* One MoE layer, EP 16 inside one domain of 16 (built-in roofline: NVLink 900 GB/s, alpha 3.3 us):
 * with the alltoall dispatcher (a copy per token-expert pair) the plan's all-to-all per micro-batch
 * is the NVLink transfer of K (ep-1)/ep copies of every token for each of dispatch and combine,
 * forward and backward: 2 x 2 x (alpha + 8 x 15/16 x 4096 x 7168 x 2 B / 900 GB/s). DeepEP sends a
 * token once per rank however many of its experts the rank holds: fewer bytes. With a domain per
 * tray the same group crosses NICs and takes longer. */
static void plan_all_to_all_inside_a_domain(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.cluster = two_domains();
    s.cluster.nodes = 4;
    s.calibration[0] = '\0';
    s.model.layers = 2; s.model.dense_layers = 1;
    s.layout.tp = 1; s.layout.pp = 1; s.layout.ep = 16; s.layout.dp = 1; s.layout.schedule = SCHED_1F1B;
    s.layout.global_batch = 16; s.routing.node_limit = 0; s.routing.dispatcher = DISPATCH_ALLTOALL;
    s.precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
    moe_error err = {0};
    if (scenario_validate(&s, &err)) fail_msg("%s", err.msg);
    plan_result p;
    assert_int_equal(plan_evaluate(&s, &p, &err), 0);
    double one = 3.3e-6 + 8.0 * 15 / 16 * 4096 * 7168 * 2 / 900e9;
    assert_float_equal(p.comm_mb_s, 4 * one, 1e-12 * one);
    scenario t = s;
    t.cluster.nvlink_domain_gpus = 0;
    plan_result q;
    assert_int_equal(plan_evaluate(&t, &q, &err), 0);
    assert_true(q.comm_mb_s > 2 * p.comm_mb_s);
    scenario d = s;
    d.routing.dispatcher = DISPATCH_DEEPEP;
    plan_result r;
    assert_int_equal(plan_evaluate(&d, &r, &err), 0);
    assert_true(r.comm_mb_s < p.comm_mb_s);
}

/* The presets against the datasheets (sources in sim/scenario/presets.c): per GPU dense BF16 / FP8 /
 * FP4 TFLOP/s, HBM MiB as the driver reports it (nvidia-smi's memory.total: never the datasheet's
 * "GB" read as decimal gigabytes, which would be 7% less) and GB/s, NVLink per direction, NIC Gb/s,
 * GPUs per NVLink domain. */
static void blackwell_presets_match_datasheets(void **state) {
    (void)state;
    struct { const char *name; double bf16, fp8, fp4, mem_MiB, hbm, nvl, nic; int domain; } P[] = {
        {"b200-8rail", 2250, 4500, 9000, 183359, 8000, 900, 400, 8},
        {"b300-8rail", 2250, 4500, 14000, 275040, 8000, 900, 800, 8},
        {"gb200-nvl72", 2500, 5000, 10000, 189471, 8000, 900, 400, 72},
        {"gb300-nvl72", 2500, 5000, 15000, 284208, 8000, 900, 800, 72},
    };
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        cluster_cfg c;
        assert_int_equal(preset_cluster(P[i].name, &c), 0);
        assert_true(c.gpu.bf16_tflops == P[i].bf16 && c.gpu.fp8_tflops == P[i].fp8 && c.gpu.fp4_tflops == P[i].fp4);
        assert_true(c.gpu.mem_GiB * 1024 == P[i].mem_MiB && c.gpu.hbm_GBps == P[i].hbm);
        assert_true(c.nvlink_GBps == P[i].nvl && c.nic_gbps == P[i].nic);
        assert_int_equal(scn_domain_gpus(&c), P[i].domain);
        assert_int_equal(c.nodes * c.gpus_per_node % P[i].domain, 0);
    }
}

/* The Blackwell presets' default cost models (calibration/models/b200-published.json,
 * b300-published.json, gb200-published.json, gb300-published.json): NVLink 5 at HybridEP's published
 * rate, each model's own FP4 peak (B300's 14,000 TFLOP/s, not B200's 9,000), compute fitted
 * on the kind's published measurements, the NIC the built-in roofline's. Truths: the figure's two
 * cells (GB200 NVL36, 32 CUDA blocks: dispatch 714.66, combine 657.72 GB/s algorithm bandwidth,
 * NVIDIA/Megatron-LM deepseek-v3-gb200-optimization.md at eb0783b6) bound the fitted port rate at
 * 35/36 of each (EP36: 1/36 of the payload stays on the rank); MAMF's maximum achievable BF16 matmul
 * rate of each kind (stas00/ml-engineering compute/accelerator/README.md at 744d01e1: B200 SXM
 * 1745.0, GB200 1822.0, B300 SXM 1769.0 TFLOP/s) bounds every BF16 GEMM from above and a large one
 * reaches it (within 2%); cuDNN's GB200 attention at 8192 causal d128 (1.397 ms forward, 2 x 64 heads,
 * cudnn-frontend's llama3.1 GB200 CSV) within 15% on the GB200 model. */
static void blackwell_models_fitted_and_nvlink_at_hybridep_rate(void **state) {
    (void)state;
    const char *names[] = {"b200-8rail", "b300-8rail", "gb200-nvl72", "gb300-nvl72"};
    const double mamf_bf16[] = {1745.0e12, 1769.0e12, 1822.0e12, 1769.0e12};
    const double fp4_peak[] = {9000e12, 14000e12, 10000e12, 15000e12};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        scenario s;
        scenario_defaults(&s);
        assert_int_equal(preset_cluster(names[i], &s.cluster), 0);
        snprintf(s.calibration, sizeof s.calibration, "%s", preset_cluster_calibration(names[i]));
        assert_true(strstr(s.calibration, "-published.json") != NULL);
        /* the published tables at the clock they were measured at (auto would take the joint fit's) */
        s.cluster.gpu.sustained = 1.0;
        costmodel cm, roof = costmodel_from_cluster(&s.cluster);
        moe_error err = {0};
        if (costmodel_for_scenario(&s, &cm, &err)) fail_msg("%s", err.msg);
        assert_string_equal(cm.basis, "published");
        double nvl = cm.link[CM_LINK_NVLINK].beta_Bps / 1e9;
        assert_true(nvl > 657.72 * 35 / 36 && nvl < 714.66 * 35 / 36);
        assert_true(cm.link[CM_LINK_NVLINK].line_Bps == 900e9);
        assert_true(cm.link[CM_LINK_RDMA].beta_Bps == roof.link[CM_LINK_RDMA].beta_Bps);
        assert_true(cm.gemm_fitted[DT_BF16] && cm.gemm_fitted[DT_FP8_CS] && cm.attention_fitted);
        assert_true(cm.peak_fp4_flops == fp4_peak[i]);
        const double shapes[][3] = {{16384, 16384, 16384}, {4096, 7168, 2048}, {16, 4096, 7168}, {8192, 8192, 8192}};
        for (size_t k = 0; k < 4; k++) {
            double f = 2 * shapes[k][0] * shapes[k][1] * shapes[k][2];
            double rate = f / costmodel_gemm_s(&cm, shapes[k][0], shapes[k][1], shapes[k][2], DT_BF16);
            assert_true(rate <= mamf_bf16[i] * 1.0001);
            if (k == 0) assert_true(rate > 0.98 * mamf_bf16[i]);
        }
        if (i == 2) {
            cm_attn_shape a = {.batch = 2, .heads = 64, .seq_q = 8192, .seq_k = 8192, .d_qk = 128, .d_v = 128, .causal = 1};
            double t = costmodel_attention_core_s(&cm, &a, 0);
            assert_true(fabs(t - 1.397e-3) < 0.15 * 1.397e-3);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(routes_by_domain),
        cmocka_unit_test(deepep_flows_per_domain),
        cmocka_unit_test(node_limit_counts_domains),
        cmocka_unit_test(plan_all_to_all_inside_a_domain),
        cmocka_unit_test(blackwell_presets_match_datasheets),
        cmocka_unit_test(blackwell_models_fitted_and_nvlink_at_hybridep_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
