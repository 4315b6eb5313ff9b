/* bench_routing.c — time of one routing draw at the seed-4096 shape (sim/program/routing.c).
 *
 * One EP group of the seed layout: 64 ranks on 8 consecutive nodes, 4096 tokens per rank per
 * micro-batch, DeepSeek-V3 routing (256 experts, top-8, 8 groups / 4 selected), node_limit 4,
 * capacity factor 1.25 with drop. Prints ms per draw, assignments/s, and what the draw produced
 * (dropped fraction, expert-load CV, bytes per token against the seed's undeduplicated K*h*b), for
 * uniform, zipf and the seed's hot-expert incident. The step simulator's pool cost is
 * (distinct samples) x (ms per draw).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/program/expert_load.h"
#include "sim/scenario/presets.h"
#include "sim/program/routing.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static scenario seed_shape(route_kind dist) {
    scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.file, sizeof s.file, "bench_routing");
    s.seed = 42;
    preset_model("deepseek-v3", &s.model);
    preset_cluster("h800-8rail", &s.cluster);
    s.layout = (layout_cfg){.tp = 1, .pp = 16, .ep = 64, .dp = 4, .zero = 1, .micro_batch = 1,
                            .global_batch = 15360, .schedule = SCHED_DUALPIPE, .vpp = 1};
    s.routing = (routing_cfg){.distribution = dist, .zipf_s = 1.2, .hot_expert = 3, .hot_share = 0.6,
                              .node_limit = 4, .capacity_factor = 1.25, .drop = 1};
    s.precision = (precision_cfg){.compute = DT_FP8, .dispatch = DT_FP8, .combine = DT_BF16,
                                  .master = DT_FP32};
    return s;
}

/* ep: the group's ranks (64: the seed's; 256: the seed's GPUs as PP16 x EP256 x DP1, 32 nodes) */
static int bench(const char *label, route_kind dist, int node_limit, int groups_on, int ep) {
    scenario s = seed_shape(dist);
    s.routing.node_limit = node_limit;
    if (!groups_on) s.model.topk_groups = 0;
    s.layout.ep = ep;
    s.layout.dp = 256 / ep;
    int gpus[256];
    for (int i = 0; i < ep; i++) gpus[i] = i;   /* ep-inner: GPUs 0..ep-1 = nodes 0..ep/8-1 */
    moe_error err;
    routing_ctx *c = routing_ctx_create(&s, gpus, &err);
    if (!c) { fprintf(stderr, "bench_routing: %s\n", err.msg); return 1; }
    routing_sample r;
    if (routing_sample_init(c, &r, &err)) { fprintf(stderr, "bench_routing: %s\n", err.msg); return 1; }
    routing_draw(c, 0, 0, 0, &r);   /* warm-up */
    const int draws = 10;
    /* CPU time is the figure (the wall time of a shared 2-core machine is noisy); both printed */
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int d = 0; d < draws; d++) routing_draw(c, d % 58, d, d % 4, &r);
    double per_draw_s = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / draws;
    double wall_draw_s = (clock_s(CLOCK_MONOTONIC) - w0) / draws;

    int n = r.n_ranks, nn = r.n_nodes;
    double tokens = (double)n * r.tokens_per_rank, disp = 0.0, rdma = 0.0, remote_pairs = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j) { disp += r.dispatch_bytes[i * n + j]; remote_pairs += r.dispatch_tokens[i * n + j]; }
    for (int a = 0; a < n * nn; a++) rdma += r.dispatch_node_bytes[a];
    expert_load_stats ex, rk;
    expert_load_analyze(r.expert_tokens, (size_t)r.n_experts, &ex);
    expert_load_analyze(r.rank_tokens, (size_t)n, &rk);
    double naive = (double)r.top_k * s.model.hidden * 1.0;   /* K * h * 1 B (FP8), no dedup */
    printf("%-28s %7.2f ms/draw (wall %6.2f)  %5.1f M assignments/s  dropped %.4f  expert CV %.3f  rank max/mean %.2f"
           "  dispatch %.0f B/token (%.2f of K*h*b)  RDMA %.0f B/token  remote ranks/token %.2f\n",
           label, per_draw_s * 1e3, wall_draw_s * 1e3, (double)r.assignments / per_draw_s / 1e6, r.dropped_fraction, ex.cv,
           rk.max / rk.mean, disp / tokens, disp / tokens / naive, rdma / tokens, remote_pairs / tokens);
    routing_sample_free(&r);
    routing_ctx_free(c);
    return 0;
}

/* What the step simulator pays: every (layer, micro-batch, group) of one stage slice fetched from a
 * pool (58 MoE layers x 60 micro-batches x 4 EP groups = 13,920 gets). */
static int bench_pool(const char *label, route_kind dist, int samples_per_layer, int max_laws) {
    scenario s = seed_shape(dist);
    int gpus[64];
    for (int i = 0; i < 64; i++) gpus[i] = i;
    moe_error err;
    routing_ctx *c = routing_ctx_create(&s, gpus, &err);
    routing_pool *p = c ? routing_pool_create(c, samples_per_layer, max_laws, &err) : NULL;
    if (!p) { fprintf(stderr, "bench_routing: %s\n", err.msg); routing_ctx_free(c); return 1; }
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double dropped = 0.0;
    for (int l = 0; l < 58; l++)
        for (int mb = 0; mb < 60; mb++)
            for (int g = 0; g < 4; g++) dropped += routing_pool_get(p, l, mb, g)->dropped_fraction;
    double cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("pool %-34s %3d draws  %7.3f s CPU for 13,920 gets  mean dropped %.4f\n", label,
           routing_pool_draws(p), cpu_s, dropped / 13920.0);
    routing_pool_free(p);
    routing_ctx_free(c);
    return 0;
}

int main(void) {
    printf("bench_routing: one EP group of seed-4096: 64 ranks x 4096 tokens, 256 experts, top-8 "
           "(2,097,152 assignments per draw), FP8 dispatch, capacity 1.25 + drop\n");
    int rc = 0;
    rc |= bench("uniform, groups 8/4, M=4", ROUTE_UNIFORM, 4, 1, 64);
    rc |= bench("hot 0.6, groups 8/4, M=4", ROUTE_HOT, 4, 1, 64);
    rc |= bench("zipf 1.2, groups 8/4, M=4", ROUTE_ZIPF, 4, 1, 64);
    rc |= bench("uniform, unconstrained", ROUTE_UNIFORM, 0, 0, 64);
    rc |= bench("hot 0.6, unconstrained", ROUTE_HOT, 0, 0, 64);
    rc |= bench("uniform, M=4, EP256 (32 nodes)", ROUTE_UNIFORM, 4, 1, 256);
    rc |= bench_pool("uniform, 4 samples", ROUTE_UNIFORM, 4, 0);
    rc |= bench_pool("hot 0.6, 4 samples", ROUTE_HOT, 4, 0);
    rc |= bench_pool("zipf 1.2, 8 laws x 1 sample", ROUTE_ZIPF, 1, 8);
    return rc;
}
