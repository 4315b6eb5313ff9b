/* a2a_bench.h — the collective benchmark mode: `simrun --a2a EP --tokens T --hidden H --topk K
 * --dtype fp8|bf16 [--node-limit M]`.
 *
 * For EP sizes 8, 16, ... up to `ep` (powers of two; one EP group on consecutive GPUs from GPU 0),
 * uniform routing of T tokens per rank over the scenario's experts with top-K (node-limited to M
 * nodes when M > 0), it simulates one dispatch (in `dt`) and one combine (in BF16, as DeepEP does)
 * on the scenario's fabric with DeepEP aggregation, and prints a table like nccl-tests / DeepEP:
 * time, the achieved bandwidth at the bottleneck per link class (RDMA: NIC bytes per rank / time;
 * NVLink: NVLink bytes per rank / time), algbw = bytes per rank / time and busbw = algbw (n-1)/n,
 * plus the closed-form bottleneck time for comparison. Builds the SimGrid platform: once per process.
 */
#ifndef MOESIM_SG_A2A_BENCH_H
#define MOESIM_SG_A2A_BENCH_H

#include <stdio.h>
#include "sim/scenario/scenario.h"

int a2a_bench_run(const scenario *s, int ep, int tokens, int hidden, int topk, dtype_kind dt, int node_limit,
                  FILE *out, moe_error *err);

#endif
