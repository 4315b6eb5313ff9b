/* comm.h — the communication cost interface the step executor uses.
 *
 * The executor asks for the duration of a *pattern*: one all-to-all of an EP group under a byte
 * matrix, one P2P transfer between pipeline stages, one ring collective of a DP group, one checkpoint
 * write. Implementations:
 *   - sim/exec/comm_analytic.c (core): hand-computed bottleneck times (link bytes / link bandwidth + hop
 *     latencies), the closed form the SimGrid runs are tested against;
 *   - sim/simgrid/comm_simgrid.c (SimGrid): a flow-level run of the pattern on the rail-optimized platform, with
 *     DeepEP-style aggregation and the concurrent traffic that shares its links, memoized by pattern.
 * A pattern is described by global GPU ids (placement already applied), so an implementation can map
 * every byte to NVLink, NIC, leaf and spine links itself.
 */
#ifndef MOESIM_COMM_H
#define MOESIM_COMM_H

#include <stddef.h>

#include "sim/scenario/scenario.h"

typedef enum { COLL_ALL_REDUCE = 0, COLL_REDUCE_SCATTER, COLL_ALL_GATHER } coll_kind;

typedef struct {
    int n;                     /* ranks in the EP group */
    const int *gpus;           /* n global GPU ids */
    const double *bytes;       /* n*n row-major: payload bytes rank i -> rank j (diagonal ignored) */
    /* DeepEP node-limited aggregation: inter-node payload rank i -> node-local rank of node k is sent
     * once per destination *node* on the sender's rail, then fanned out over NVLink. When non-NULL,
     * node_bytes[i*n_nodes + k] is that deduplicated RDMA payload (bytes() still gives the per-rank
     * payload used for the NVLink fan-out); when NULL, every inter-node byte crosses the NIC once. */
    const double *node_bytes;  /* always sender rank -> destination node: a combine is passed as its
                                  mirror image (the dispatch-shaped transpose), which every link of
                                  the split-duplex fabric times identically */
    int n_nodes;               /* distinct nodes spanned by the group (node_bytes' second dim) */
    const int *nodes;          /* n_nodes node ids, ascending */
    int concurrent_groups;     /* how many identical groups run this pattern at the same time on
                                  disjoint GPUs (the other EP groups of the stage / the other DP
                                  replicas): they share leaf uplinks and spines */
    int pairwise;              /* NCCL all_to_all instead of DeepEP: one flow per rank pair, cross-rail
                                  ones over PXN (fabric_gpu_route); node_bytes is ignored */
} a2a_pattern;

/* One question for a model, described ahead of being asked (comm_model.announce): an all-to-all
 * (is_a2a) or a ring collective over n GPUs of `bytes` per GPU. */
typedef struct {
    int is_a2a;
    a2a_pattern a2a;
    coll_kind kind;
    const int *gpus;
    int n;
    double bytes;
    int concurrent;   /* a collective's concurrent groups (collective_s) */
} comm_query;

/* The announcer's description of its k-th query: fills *q, whose arrays stay valid until the
 * matching release(qctx, k, q). It reads the announcer's memory only, so it may be called in a
 * process forked from the announcer's. */
typedef struct {
    size_t n;
    size_t n_first;   /* queries 0 .. n_first - 1 are needed at about the same time, first; the rest
                         later, in their order */
    void (*query)(void *qctx, size_t k, comm_query *q);
    void (*release)(void *qctx, size_t k, comm_query *q);
    void *qctx;
} comm_announcement;

typedef struct comm_model {
    void *ctx;
    const char *name;          /* "analytic", "simgrid" */
    /* Completion time (s) of the slowest rank of the all-to-all, all ranks starting together. */
    double (*a2a_s)(void *ctx, const a2a_pattern *p);
    /* One point-to-point transfer (s), e.g. a pipeline activation send. */
    double (*p2p_s)(void *ctx, int src_gpu, int dst_gpu, double bytes);
    /* Ring collective over `n` GPUs, `bytes` = full buffer size per GPU (NCCL convention).
     * `concurrent`: how many groups of its kind run it at the same time on disjoint GPUs (the other
     * groups of its kind in its pipeline stage); a ring that crosses pods (cluster.pod_nodes), or
     * leaves whose uplinks are oversubscribed or hashed, shares them with their copies
     * (ring_flows.h ring_concurrent_copies); 1 = alone. */
    double (*collective_s)(void *ctx, coll_kind kind, const int *gpus, int n, double bytes, int concurrent);
    void (*destroy)(void *ctx);
    /* Optional (NULL: none). The all-to-alls and collectives the caller is about to ask for, in about
     * the order it will, so that the model may work them out ahead, beside the caller. The answers
     * and the model's statistics are what they are without it; whatever it did not work out ahead is
     * worked out when asked. The announcement is read during the call only (in the model's helper,
     * from its copy of the caller's memory). */
    void (*announce)(void *ctx, const comm_announcement *a);
    /* 1: a pattern and its image under a rotation of the GPUs of every node (GPU k -> k - m, so rail
     * k -> rail k - m) take exactly the same time, bit for bit, while no link is degraded: the rails
     * are identical planes. The executor's TP-twin shortcut relies on it (step_exec.h). */
    int rail_symmetric;
} comm_model;

/* Hand-computed bottleneck model of the same fabric (core; no SimGrid). */
comm_model comm_analytic_create(const scenario *s);

#endif
