/* bench_comm.c — cost of the SimGrid communication model at the seed-4096 scale.
 *
 * Prints absolute wall times per distinct all-to-all pattern (seed 003: EP64 on 8 consecutive nodes,
 * 4096 tokens/rank x 7168 hidden in FP8, DeepEP node_bytes for node-limited routing M = 4), for
 *   (a) a leaf-aligned group (its traffic stays under one leaf per rail: copies cannot interact),
 *   (b) a group straddling two leaves with all 64 EP groups of the job running concurrently
 *       (28k RDMA flows through shared leaf uplinks),
 * and the memoization hit rate of a step-like query stream: 58 MoE layers x 16 micro-batches x the 4
 * EP groups of a stage, routing drawn from a pool of 8 samples (as sim/program/routing.h's pool does).
 */
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/exec/comm.h"
#include "sim/scenario/presets.h"
#include "sim/simgrid/comm_simgrid.h"

#define EP 64
#define NODES 8

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    int gpus[EP], nodes[NODES];
    double bytes[EP * EP], node_bytes[EP * NODES];
    a2a_pattern p;
} pattern_buf;

/* Uniform routing in expectation, with multiplicative noise `jitter` per entry (a routing draw). */
static void fill(pattern_buf *b, int first_node, int concurrent, gsl_rng *r, double jitter) {
    const double tok_B = 7168.0, tokens = 4096;
    const double p_rank = 0.1244, p_node = 4.0 / NODES; /* top-8 of 256 over 64 ranks; M = 4 of 8 nodes */
    for (int i = 0; i < EP; i++) b->gpus[i] = first_node * 8 + i;
    for (int k = 0; k < NODES; k++) b->nodes[k] = first_node + k;
    for (int i = 0; i < EP; i++) {
        for (int j = 0; j < EP; j++)
            b->bytes[i * EP + j] = tokens * p_rank * tok_B * (r ? 1 + jitter * gsl_ran_flat(r, -1, 1) : 1);
        for (int k = 0; k < NODES; k++)
            b->node_bytes[i * NODES + k] = k == i / 8 ? 0 : tokens * p_node * tok_B * (r ? 1 + jitter * gsl_ran_flat(r, -1, 1) : 1);
    }
    b->p = (a2a_pattern){.n = EP, .gpus = b->gpus, .bytes = b->bytes, .node_bytes = b->node_bytes,
                         .n_nodes = NODES, .nodes = b->nodes, .concurrent_groups = concurrent};
}

int main(void) {
    scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.file, sizeof s.file, "bench_comm");
    preset_cluster("h800-8rail", &s.cluster); /* 512 nodes x 8, 32 nodes per leaf */
    moe_error err;
    comm_model sg = sg_comm_create(&s, &err);
    sg_comm_set_max_flows(&sg, 1L << 30);   /* time SimGrid itself, whatever the pattern size */
    if (!sg.ctx) {
        fprintf(stderr, "bench_comm: %s\n", err.msg);
        return 1;
    }
    comm_model an = comm_analytic_create(&s);
    pattern_buf *b = malloc(sizeof *b);

    printf("bench_comm: seed-4096 fabric (512 x 8 H800, 8 rails, 32 nodes/leaf), EP64 all-to-all, DeepEP M=4\n");
    struct { const char *what; int first_node, concurrent; } cases[] = {
        {"leaf-aligned, alone", 0, 1},
        {"leaf-aligned, 64 concurrent groups", 0, 64},
        {"straddling leaves 0/1, 64 concurrent groups", 28, 64},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fill(b, cases[c].first_node, cases[c].concurrent, NULL, 0);
        sg_comm_stats s0 = sg_comm_get_stats(&sg);
        double t0 = now_s(), t = sg.a2a_s(sg.ctx, &b->p), wall = now_s() - t0;
        sg_comm_stats s1 = sg_comm_get_stats(&sg);
        double th = an.a2a_s(an.ctx, &b->p);
        printf("  %-46s %6ld flows  simgrid %8.1f us  closed form %8.1f us  wall %.3f s\n", cases[c].what,
               s1.flows - s0.flows, t * 1e6, th * 1e6, wall);
    }

    /* Step-like query stream. */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 42);
    enum { POOL = 8 };
    static pattern_buf pool[POOL];
    for (int k = 0; k < POOL; k++) fill(&pool[k], 0, 4, r, 0.05);
    sg_comm_stats s0 = sg_comm_get_stats(&sg);
    double t0 = now_s();
    long queries = 0;
    for (int layer = 0; layer < 58; layer++)
        for (int mb = 0; mb < 16; mb++)
            for (int g = 0; g < 4; g++) {
                pattern_buf *pb = &pool[(unsigned)(layer * 131 + mb * 17 + g * 7) % POOL];
                for (int i = 0; i < EP; i++) pb->gpus[i] = g * EP + i; /* the stage's 4 groups, 8 nodes each */
                for (int k = 0; k < NODES; k++) pb->nodes[k] = g * NODES + k;
                sg.a2a_s(sg.ctx, &pb->p);
                queries++;
            }
    double wall = now_s() - t0;
    sg_comm_stats s1 = sg_comm_get_stats(&sg);
    long hits = s1.hits - s0.hits, sims = s1.simulated - s0.simulated;
    printf("  step-like stream: %ld queries, %ld simulated, %ld memo hits (hit rate %.4f), wall %.3f s "
           "(%.2f ms per distinct pattern)\n",
           queries, sims, hits, (double)hits / queries, wall, sims ? 1e3 * (s1.sim_wall_s - s0.sim_wall_s) / sims : 0);
    gsl_rng_free(r);
    free(b);
    an.destroy(an.ctx);
    return 0;
}
