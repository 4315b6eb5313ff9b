/* a2a_bench.h — the collective benchmark mode: `simrun a2a [SCENARIO] --ep EP [--tokens T]`.
 *
 * For EP sizes 8, 16, 32, ... below `ep` that divide the model's experts, and `ep` itself (one EP
 * group on consecutive GPUs from GPU 0), it simulates one MoE dispatch and one combine on the
 * scenario's fabric with DeepEP aggregation and prints a table like nccl-tests / DeepEP: time, the
 * achieved bandwidth at the bottleneck per link class (RDMA: NIC bytes of the busiest rank / time;
 * NVLink: NVLink bytes it receives / time), algbw = bytes per rank / time and busbw = algbw (n-1)/n,
 * plus the closed-form bottleneck time for comparison.
 *
 * Everything but the token count comes from the scenario: model.hidden, model.experts, model.top_k,
 * routing (distribution, node_limit, capacity_factor, drop) and precision.dispatch / combine. Uniform
 * routing uses its expectation (exact, no sampling); any other distribution one routing draw (the
 * scenario's seed) through sim/program/routing.h, the same the step level draws. An EP size it cannot
 * place (more than the GPUs, not dividing the experts, not whole nodes once it spans nodes) is an
 * exit-2 error. Builds the SimGrid platform: once per process. */
#ifndef MOESIM_SG_A2A_BENCH_H
#define MOESIM_SG_A2A_BENCH_H

#include <stdio.h>
#include "sim/scenario/scenario.h"

/* `ep_label` names the option in errors ("--ep"); `tokens` per rank (> 0). */
int a2a_bench_run(const scenario *s, int ep, int tokens, const char *ep_label, FILE *out, moe_error *err);

#endif
