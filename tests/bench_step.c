/* bench_step.c — wall time and peak RSS to simulate one step of the seed layout (seed 003:
 * deepseek-v3, 4096 H800, PP16 x EP64 x DP4, DualPipe, global batch 15360 x 4096 tokens -> 60
 * micro-batches per pipeline). Goal (issue 3): <= 2 s and <= 2 GB on one core.
 * Uses scenarios/seed-4096.json when scenario_load can read it, else builds the same scenario from the
 * presets. Times the fast executor with the analytic comm model (program build + op-level DES) and
 * prints the step breakdown. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/comm.h"
#include "sim/costmodel.h"
#include "sim/presets.h"
#include "sim/program.h"
#include "sim/step_exec.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void seed_scenario(scenario *s) {
    memset(s, 0, sizeof *s);
    strcpy(s->name, "seed-4096");
    s->seed = 42;
    preset_model("deepseek-v3", &s->model);
    preset_cluster("h800-8rail", &s->cluster);
    s->layout = (layout_cfg){.tp = 1, .pp = 16, .ep = 64, .dp = 4, .zero = 1, .micro_batch = 1,
                             .global_batch = 15360, .schedule = SCHED_DUALPIPE, .vpp = 1,
                             .placement = PLACE_EP_INNER};
    s->routing = (routing_cfg){.distribution = ROUTE_UNIFORM, .zipf_s = 1.2, .hot_expert = 3,
                               .hot_share = 0.6, .node_limit = 4, .capacity_factor = 1.25, .drop = 1};
    s->precision = (precision_cfg){DT_FP8, DT_FP8, DT_BF16, DT_FP32};
}

int main(void) {
    scenario s;
    seed_scenario(&s);
    moe_error err = {0};
    double t0 = now();
    program *p = NULL;
    if (program_build(&s, &p, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    double t1 = now();
    costmodel cm = costmodel_from_cluster(&s.cluster);
    comm_model comm = comm_analytic_create(&s);
    step_exec_opts o = {.comm = &comm, .price_ctx = &cm, .shortcut = 1};
    step_exec_result r;
    if (step_exec_run(p, &o, &r, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    double t2 = now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_gb = ru.ru_maxrss / 1048576.0;
    double c = 0, e = 0, b = 0, op = 0;
    for (int i = 0; i < r.n_ranks; i++) { c += r.compute_s[i]; e += r.exposed_comm_s[i]; b += r.bubble_s[i]; op += r.optimizer_s[i]; }
    int G = r.n_ranks;
    double tflops = p->model_flops_per_step / r.step_time_s / G / 1e12;
    long ops = 0;
    for (int st = 0; st < p->pp; st++) ops += p->stage_n_ops[st];
    printf("bench_step: seed-4096 (deepseek-v3, %d GPUs, PP%d x EP%d x DP%d, %s, %d micro-batches)\n",
           G, p->pp, p->ep, p->dp, "dualpipe", p->micro_batches);
    printf("  program: %ld ops per pipeline (%.0f per stage), %d ranks (%d simulated, %d replica(s)), %ld ops executed\n",
           ops, (double)ops / p->pp, G, r.n_simulated_ranks, r.n_simulated_replicas, r.n_ops_executed);
    printf("  wall: build %.3f s + execute %.3f s = %.3f s   goal 2 s   ratio %.2f\n", t1 - t0, t2 - t1, t2 - t0, (t2 - t0) / 2.0);
    printf("  peak RSS: %.3f GB   goal 2 GB   ratio %.2f\n", rss_gb, rss_gb / 2.0);
    printf("  step: %.3f s  compute %.3f s  exposed comm %.3f s  bubble %.3f s  optimizer %.4f s (means over ranks)\n",
           r.step_time_s, c / G, e / G, b / G, op / G);
    printf("  %.1f TFLOP/s per GPU, MFU %.3f (BF16 peak %.0f), tokens/s/GPU %.0f, comm model %s\n",
           tflops, tflops / s.cluster.gpu.bf16_tflops, s.cluster.gpu.bf16_tflops,
           (double)s.layout.global_batch * s.model.seq_len / r.step_time_s / G, comm.name);
    step_exec_result_free(&r);
    if (comm.destroy) comm.destroy(comm.ctx);
    program_free(p);
    return 0;
}
