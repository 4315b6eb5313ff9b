/* bench_step.c — wall time and peak RSS of step_simulate() (everything it does in fast mode: the
 * program with sampled routing, sim/program/routing.h; the SimGrid pattern model, sg_comm_create: one
 * flow-level run per distinct pattern, memoized; the cost model; the op-level executor with the replica
 * shortcut) on three cases of 4096 GPUs, each run MOESIM_BENCH_REPS times (default 3), min and median:
 *   seed        scenarios/seed-4096.json (seed 003: deepseek-v3, 4096 H800, PP16 x EP64 x DP4,
 *               DualPipe, 60 micro-batches per pipeline), no trace
 *   seed+trace  the same step writing its trace.json (the default trace ranks) to a temporary file
 *   EP256       the same scenario as PP16 x EP256 x DP1: every GPU of the cluster is simulated (no
 *               healthy replica to mirror), 60 micro-batches per pipeline too
 *   4 steps     the seed with routing.steps 4 and a drifting law: the cost of a step after the first
 *   steps, 1 core  the same law for 2 and for 10 steps with one routing thread and no helper process:
 *               the CPU time of a step after the first on one core (goal 20 ms: 1,000 steps in 20 s)
 * Goals: seed with its trace <= 0.3 s, EP256 <= 2 s; and <= 2 GB peak RSS.
 *
 * The routing draws of a step run in as many threads as the machine has cores (routing_set_threads,
 * as `simrun` gives a lone step; the same bytes as one thread), and with two or more cores the
 * SimGrid patterns in a helper process beside the executor (sg_comm_set_helpers, as `simrun`); the
 * CPU time printed is this process's, not the helper's.
 * Prints wall and CPU time (the CPU time is what the process's threads spend, one core's worth of
 * work; the wall time includes whatever else runs on the machine), peak RSS, the step breakdown, how many distinct communication patterns
 * SimGrid simulated and the memo hit rate, and the hot-expert what-if of scenarios/hot-expert.json.
 * Run from the repository root (make bench does). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/program/routing.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/step_sim.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double num(const cJSON *o, const char *path) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = o;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) cur = cJSON_GetObjectItem(cur, tok);
    return cJSON_IsNumber(cur) ? cur->valuedouble : -1;
}

static void print_result(const scenario *s, const step_result *r) {
    printf("  step: %.3f s  compute %.3f s  exposed comm %.3f s  bubble %.3f s  optimizer %.4f s (means over ranks)\n",
           r->step_time_s, r->compute_s, r->exposed_comm_s, r->bubble_s, r->optimizer_s);
    printf("  %.1f TFLOP/s per GPU, MFU %.3f (BF16 peak %.0f), tokens/s/GPU %.0f\n", r->tflops_per_gpu, r->mfu,
           s->cluster.gpu.bf16_tflops, r->tokens_per_s_per_gpu);
    printf("  routing: %.0f samples, dropped %.4f%% of pairs, expert load CV %.4f max/min %.3f Gini %.4f; slowest rank %d\n",
           num(r->breakdown, "routing.samples"), 100 * r->dropped_token_fraction, r->expert_load_cv,
           r->expert_load_max_min, r->expert_load_gini, r->slowest_rank);
    double q = num(r->breakdown, "comm_patterns.queries"), h = num(r->breakdown, "comm_patterns.memo_hits");
    printf("  SimGrid: %.0f distinct patterns simulated (%.0f flows), %.0f queries, memo hit rate %.1f%%\n",
           num(r->breakdown, "comm_patterns.simulated"), num(r->breakdown, "comm_patterns.flows"), q,
           q > 0 ? 100 * h / q : 0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define MAX_REPS 16

/* Run step_simulate `reps` times; print min/median wall and CPU; keep the last result in *r. */
static int timed(const char *label, const scenario *s, const step_options *opt, int reps, double goal_s,
                 step_result *r) {
    double wall[MAX_REPS], cpu[MAX_REPS];
    moe_error err = {0};
    for (int k = 0; k < reps; k++) {
        if (k) step_result_free(r);
        sg_comm_forget();   /* cold: what a fresh process would have to simulate and draw */
        routing_forget();
        double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (step_simulate(s, opt, r, &err)) { fprintf(stderr, "bench_step (%s): %s\n", label, err.msg); return 1; }
        wall[k] = clock_s(CLOCK_MONOTONIC) - w0;
        cpu[k] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    qsort(wall, (size_t)reps, sizeof *wall, cmp_double);
    qsort(cpu, (size_t)reps, sizeof *cpu, cmp_double);
    printf("%-11s PP%d x EP%d x DP%d: CPU min %.3f s median %.3f s, wall min %.3f s median %.3f s (%d runs)   "
           "goal %.1f s   ratio (wall min) %.2f (CPU min) %.2f   ops executed %.0f\n",
           label, s->layout.pp, s->layout.ep, s->layout.dp, cpu[0], cpu[reps / 2], wall[0], wall[reps / 2], reps,
           goal_s, wall[0] / goal_s, cpu[0] / goal_s, num(r->breakdown, "ops_executed"));
    return 0;
}

int main(void) {
    const char *path = "scenarios/seed-4096.json";
    scenario s;
    moe_error err = {0};
    if (scenario_load(path, &s, NULL, &err)) { fprintf(stderr, "bench_step: %s\n", err.msg); return 1; }
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    routing_set_threads(cores);
    sg_comm_set_helpers(cores > 1);   /* as simrun runs a lone step */
    const char *env = getenv("MOESIM_BENCH_REPS");
    int reps = env ? atoi(env) : 3;
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    printf("bench_step: %s (%s, %d GPUs, %s routing, capacity %.2f %s); routing draws in %d threads\n", path,
           s.model.preset, scn_gpus(&s), s.routing.distribution == ROUTE_UNIFORM ? "uniform" : "non-uniform",
           s.routing.capacity_factor, s.routing.drop ? "drop" : "dropless", routing_threads());

    step_result r;
    if (timed("seed", &s, NULL, reps, 2.0, &r)) return 1;
    print_result(&s, &r);
    double base_step = r.step_time_s;
    step_result_free(&r);

    char trace_path[] = "/tmp/bench_step_trace_XXXXXX";
    int fd = mkstemp(trace_path);
    if (fd < 0) { perror("bench_step: mkstemp"); return 1; }
    close(fd);
    step_options topt = {.trace_path = trace_path};
    int rc = timed("seed+trace", &s, &topt, reps, 0.3, &r);
    unlink(trace_path);
    if (rc) return 1;
    printf("  step %.17g s (without the trace: %.17g s): %s\n", r.step_time_s, base_step,
           r.step_time_s == base_step ? "identical" : "DIFFERENT");
    step_result_free(&r);

    /* warm: the patterns and draws are the process's already (the next layout of a search with the
     * same groups) */
    {
        moe_error err = {0};
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (step_simulate(&s, NULL, &r, &err)) { fprintf(stderr, "bench_step (warm): %s\n", err.msg); return 1; }
        printf("seed, warm  the same step again with its patterns and draws kept in the process: CPU %.3f s, step %s\n",
               clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, r.step_time_s == base_step ? "identical" : "DIFFERENT");
        step_result_free(&r);
    }

    scenario wide = s;
    wide.layout.ep = 256;
    wide.layout.dp = 1;
    if (timed("EP256", &wide, NULL, reps, 2.0, &r)) return 1;
    print_result(&wide, &r);
    step_result_free(&r);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_gb = ru.ru_maxrss / 1048576.0;
    printf("peak RSS (all cases): %.3f GB   goal 2 GB   ratio %.3f\n", rss_gb, rss_gb / 2.0);

    /* the what-if: seed 000's incident, one expert in 60% of the tokens (same process, same SimGrid
     * engine: sg_comm_create allows a second model of the same cluster) */
    scenario hot = s;
    hot.routing.distribution = ROUTE_HOT;
    hot.routing.hot_expert = 3;
    hot.routing.hot_share = 0.6;
    if (timed("hot expert", &hot, NULL, 1, 2.0, &r)) return 1;
    printf("hot expert 3 in 60%% of tokens (same scenario):\n");
    print_result(&hot, &r);
    printf("  step time x%.3f vs uniform; slowest rank %d holds expert 3: %s\n", r.step_time_s / base_step,
           r.slowest_rank, (r.slowest_rank % (s.layout.ep * s.layout.tp)) / s.layout.tp == 3 / (s.model.experts / s.layout.ep)
               ? "yes" : "no");
    double hot_step = r.step_time_s;
    step_result_free(&r);

    /* dropless: nothing is dropped, the holder of the hot expert receives and computes it all */
    hot.routing.drop = 0;
    if (step_simulate(&hot, NULL, &r, &err)) { fprintf(stderr, "bench_step (hot, dropless): %s\n", err.msg); return 1; }
    printf("hot expert, dropless:\n");
    print_result(&hot, &r);
    printf("  step time x%.3f vs uniform, x%.3f vs dropping at capacity %.2f\n", r.step_time_s / base_step,
           r.step_time_s / hot_step, s.routing.capacity_factor);
    step_result_free(&r);

    /* routing.steps: the seed for 4 steps with a drifting law (a walk, a hot expert from step 1,
     * bias balancing): what each step after the first costs (program, cost model and SimGrid platform
     * reused, the routing redrawn), against one fresh step */
    scenario multi = s;
    multi.routing.steps = 4;
    multi.routing.drop = 0;
    multi.routing.hot_expert = 3;
    multi.routing.drift.walk_sigma = 0.02;
    multi.routing.drift.hot_onset_step = 1;
    multi.routing.drift.hot_peak_share = 0.6;
    multi.routing.drift.hot_decay_steps = 10;
    multi.routing.drift.bias_update_speed = 0.05;
    if (timed("4 steps", &multi, NULL, 1, 8.0, &r)) return 1;
    printf("  steps: p50 %.3f s p95 %.3f s max %.3f s; %.3f s wall per step after the first (one fresh step: "
           "see \"seed\" above)\n", r.steps_p50_s, r.steps_p95_s, r.steps_max_s, r.per_step_wall_s);
    step_result_free(&r);

    /* the same law on one core (the draws in one thread, the patterns in this process): CPU time of
     * a step after the first, from 10 steps less 2 (goal: 1,000 steps in 20 s) */
    routing_set_threads(1);
    sg_comm_set_helpers(0);
    double cpu_of[2];
    const int steps_of[2] = {2, 10};
    for (int k = 0; k < 2; k++) {
        multi.routing.steps = steps_of[k];
        sg_comm_forget();
        routing_forget();
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (step_simulate(&multi, NULL, &r, &err)) { fprintf(stderr, "bench_step (one core): %s\n", err.msg); return 1; }
        cpu_of[k] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        step_result_free(&r);
    }
    double per_step = (cpu_of[1] - cpu_of[0]) / (steps_of[1] - steps_of[0]);
    printf("steps, 1 core: CPU %.3f s for 2 steps, %.3f s for 10: %.3f s per step after the first   goal 0.020 s   "
           "ratio %.1f\n", cpu_of[0], cpu_of[1], per_step, per_step / 0.020);
    return 0;
}
