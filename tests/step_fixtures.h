/* step_fixtures.h — small scenarios and pluggable cost models for the step tests (header-only). */
#ifndef MOESIM_TESTS_STEP_FIXTURES_H
#define MOESIM_TESTS_STEP_FIXTURES_H

#include <string.h>
#include "sim/exec/comm.h"
#include "sim/scenario/presets.h"
#include "sim/program/program.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"

/* tests/data/scenarios/small-moe.json (32 GPUs, 16 experts, top-2) for the routing dynamics alone: no
 * bias balancing, and no host side (host.framework), whose time would set this small model's step and
 * hide a hot expert's imbalance behind it. Returns scenario_load's code. */
static inline int fx_small_moe_routing(scenario *s) {
    moe_error err = {0};
    int rc = scenario_load("tests/data/scenarios/small-moe.json", s, NULL, &err);
    s->routing.drift.bias_update_speed = 0;
    s->host.framework = HOST_NONE;
    return rc;
}

/* A dense model with one layer per model stage on pp*ep*dp single-GPU... nodes of `gpn` GPUs. */
static inline void fx_scenario(scenario *s, int layers, int experts, int pp, int ep, int dp, int gpn,
                               schedule_kind sk, int vpp, int micro_batches) {
    memset(s, 0, sizeof *s);
    strcpy(s->name, "fixture");
    s->seed = 7;
    preset_model("deepseek-v3", &s->model);
    preset_cluster("h800-8rail", &s->cluster);
    s->cluster.gpu.speed_cv = 0;   /* identical GPUs: the steps are solved by hand */
    s->model.layers = layers;
    s->model.dense_layers = experts > 0 ? 0 : layers;
    s->model.experts = experts;
    s->model.top_k = experts > 0 ? (experts < 8 ? 2 : 8) : 0;
    s->model.expert_groups = 0;   /* group-limited routing off: the fixtures' expert counts are small */
    s->model.topk_groups = 0;
    s->model.seq_len = 1024;
    s->cluster.gpus_per_node = gpn;
    s->cluster.nodes = pp * ep * dp / gpn;
    s->layout = (layout_cfg){.tp = 1, .pp = pp, .ep = ep, .dp = dp, .zero = 1, .micro_batch = 1,
                             .schedule = sk, .vpp = vpp, .placement = PLACE_EP_INNER};
    s->layout.global_batch = micro_batches * ep * dp;
    s->routing.distribution = ROUTE_UNIFORM;
    s->routing.capacity_factor = 0;
    s->precision = (precision_cfg){DT_BF16, DT_BF16, DT_BF16, DT_FP32, 0};
}

/* ---- a comm model with fixed costs: every all-to-all a2a_s seconds, p2p and collectives as set ---- */
typedef struct { double a2a, p2p, coll; } fx_comm_costs;
static double fx_a2a(void *c, const a2a_pattern *p) { (void)p; return ((fx_comm_costs *)c)->a2a; }
static double fx_p2p(void *c, int a, int b, double bytes) { (void)a; (void)b; (void)bytes; return ((fx_comm_costs *)c)->p2p; }
static double fx_coll(void *c, coll_kind k, const int *g, int n, double b, int conc) { (void)k; (void)g; (void)n; (void)b; (void)conc; return ((fx_comm_costs *)c)->coll; }
static inline comm_model fx_comm(fx_comm_costs *c) {
    return (comm_model){.ctx = c, .name = "fixture", .a2a_s = fx_a2a, .p2p_s = fx_p2p, .collective_s = fx_coll};
}

/* ---- compute: F for one model stage's forward, B for its backward (input + weight), split evenly over
 * the stage's attention kernels; every other kernel free. With one layer per model stage the
 * forward of one micro-batch through one model stage costs exactly F and its backward exactly B. */
typedef struct { double F, B, W, expert; } fx_compute_costs;
static inline double fx_price(void *c, const program *p, int rank, const program_op *o) {
    (void)p; (void)rank;
    const fx_compute_costs *k = c;
    switch (o->kernel) {
    case K_ATTN_FWD: return k->F;
    case K_ATTN_BWD_INPUT: return k->B;
    case K_ATTN_BWD_WEIGHT: return k->W;
    case K_EXPERT_FWD: return k->expert;
    default: return 0;
    }
}

#endif
