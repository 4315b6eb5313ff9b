/* deepep_bench.h — DeepEP's normal-kernel benchmark (tests/test_internode.py, test_intranode.py)
 * reproduced on the simulated fabric, counting bytes and time exactly as the test does.
 *
 * The test (deepseek-ai/DeepEP at 567632dd59810d77b3cc05553df953cc0f779799, tests/test_internode.py):
 *   routing  every rank holds `tokens` tokens; scores are i.i.d. (|N(0,1)| + 1) per expert; experts
 *            form one group per node (experts / nodes consecutive ones); a token keeps the
 *            topk_groups groups with the largest best score (default min(nodes, 4)), then its top-k
 *            experts inside them (lines 40-44). Intranode (one node): top-k of all experts.
 *            Only the ranking of i.i.d. scores matters, so a uniformly random ranking has the same
 *            law: walk a random permutation, the first topk_groups groups to appear are selected,
 *            and the first top-k experts of selected groups are the token's.
 *   bytes    RDMA: per (token, distinct destination NODE), the sender's own node included (lines
 *            57-61, 222), x hidden x 2 B x fp8_factor for FP8 ((1 + 4/128) / 2: one FP32 scale per
 *            128 channels); NVL: per (token, distinct destination RANK) received, own rank included
 *            (recv_x rows, line 223); combine counts the same tokens in BF16 (lines 224-225).
 *   time     the main kernel alone (bench_kineto over 'dispatch' / 'combine'; the notify kernel is
 *            printed apart, lines 246-262); GB/s = bytes / 1e9 / t per rank, printed by local rank 0.
 * The simulation: one pattern of the whole EP group on consecutive GPUs from GPU 0 (the routing
 * sample's distinct-token matrix and per-node RDMA payloads, DeepEP aggregation: one RDMA copy per
 * destination node on the sender's rail, then NVLink fan-out) timed by the SimGrid comm model;
 * the combine is its mirror image. Rates are rank 0's counted bytes over the pattern's time. */
#ifndef MOESIM_SG_DEEPEP_BENCH_H
#define MOESIM_SG_DEEPEP_BENCH_H

#include "sim/scenario/scenario.h"

typedef struct {
    int ep;                 /* ranks (8 per node, consecutive GPUs from GPU 0) */
    int tokens;             /* per rank */
    int hidden;
    int topk;
    int experts;
    int topk_groups;        /* 0: min(nodes, 4), the test's default */
    double dispatch_elt_B;  /* bytes per element dispatched: FP8 with its scales 1 + 4/128, BF16 2 */
    double combine_elt_B;   /* BF16: 2 */
    uint64_t seed;
} deepep_case;

typedef struct {
    int nodes;
    double dispatch_s, combine_s;      /* simulated main-kernel times */
    double rdma_tokens, nvl_tokens;    /* rank 0's counted (token, node) and (token, rank) pairs */
    double dispatch_rdma_GBps, dispatch_nvl_GBps, combine_rdma_GBps, combine_nvl_GBps;
} deepep_result;

/* Builds the SimGrid platform of `s` (once per process). Bad case -> EXIT_BADINPUT. */
int deepep_bench_run(const scenario *s, const deepep_case *c, deepep_result *r, moe_error *err);

#endif
