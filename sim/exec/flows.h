/* flows.h — a communication pattern decomposed into GPU-to-GPU flows, the way the libraries move the
 * bytes (core; no SimGrid). Both communication models start from these flows: the closed form sums
 * them per link (sim/exec/comm_analytic.c), the SimGrid model simulates them
 * (sim/simgrid/comm_simgrid.c). The all-to-all's flows are built by deepep_flows.h, the ring
 * collectives' by ring_flows.h. */
#ifndef MOESIM_FLOWS_H
#define MOESIM_FLOWS_H

#include <stddef.h>

typedef enum { FLOW_NVLINK = 0, FLOW_RDMA } flow_kind;

typedef struct {
    int src_gpu, dst_gpu;
    double bytes;
    int copy;          /* 0: the group itself; c > 0: concurrent copy c */
    flow_kind kind;
} gpu_flow;

typedef struct {
    gpu_flow *v;
    size_t n, cap;
} gpu_flow_list;

void gpu_flow_list_free(gpu_flow_list *l);

/* Appends one flow; 0, or -1 when out of memory. */
int gpu_flow_push(gpu_flow_list *l, int src, int dst, double bytes, int copy, flow_kind kind);

#endif
