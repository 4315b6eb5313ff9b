/* comm_simgrid.h — the SimGrid communication model (comm.h implemented by flow-level simulation).
 *
 * Every distinct pattern is decomposed into the flows the libraries really move (DeepEP two-level
 * aggregation: sim/exec/deepep_flows.h; NCCL rings: sim/exec/ring_flows.h), simulated max-min on the rail fabric
 * (sim/simgrid/rail_fabric.h) with the concurrent groups that share leaf uplinks and spines, and its
 * duration memoized by a signature: the byte matrix (exactly), the group's shape and its placement
 * relative to its leaf (absolute when a link fault can reach it). A pattern is simulated at its
 * signature's placement (shifted to the first leaf or NVLink domain; with link faults, where it is:
 * on healthy links when no fault can reach it), and every run starts in the same binade of
 * SimGrid's clock (rail_flows.h), so a duration is a function of the signature alone: it does not
 * depend on what the process simulated before, nor on the order of the queries. The memo is
 * therefore the process's, shared by every model made here: a second step, the next step of
 * routing.steps or the next layout of a search reuse it and get, bit for bit, what a fresh process
 * would.
 *
 * SimGrid keeps one engine and one platform per process: sg_comm_create() may be called again only
 * for the same cluster and faults. Not thread-safe.
 *
 * Helpers (sg_comm_set_helpers): what the executor announces ahead (comm.h announce: the step's
 * all-to-alls and ring collectives) is simulated by a fork of the process beside the executor, which
 * then waits only for what it needs and does not have yet. The fork starts from this process's memo
 * and engine; since a duration is a function of its signature alone, its answers are the ones this
 * process would compute, and the statistics count as without it. No helper is forked when the
 * process knows the first announced query already (the same step again, the next layout of a search
 * over the same groups). A model ends its helper when it is destroyed (what the helper sent stays
 * in the memo), and a helper ends with its process.
 */
#ifndef MOESIM_SG_COMM_H
#define MOESIM_SG_COMM_H

#include "sim/exec/comm.h"

/* On failure returns a model with ctx == NULL and fills err. The fabric runs every link at the achieved
 * rate of the scenario's cost model (sg_fabric_scenario). */
comm_model sg_comm_create(const scenario *s, moe_error *err);
/* `s` with its cluster's NVLink and NIC at the achieved rates of its cost model
 * (costmodel_fabric_cluster): the platform every SimGrid run and its closed form are built from. */
int sg_fabric_scenario(const scenario *s, scenario *fab, moe_error *err);

/* A pattern with more flows than this (a leaf-crossing EP group with all its concurrent copies, e.g.
 * EP256 x TP2 on 4096 GPUs: ~250K flows, minutes of SimGrid; SimGrid's max-min solver costs ~0.1 ms
 * per flow and a step has hundreds of distinct patterns) is priced in closed form instead, unless
 * raised with sg_comm_set_max_flows (benchmarks and tests that hold SimGrid to the closed form). */
#define SG_MAX_PATTERN_FLOWS 8000

/* Counted per model, as if its process were fresh (the process memo does not change them). */
typedef struct {
    long queries;          /* a2a + p2p + collective calls */
    long hits;             /* signatures this model was asked for before */
    long simulated;        /* distinct patterns this model needed (simulated here or earlier) */
    long flows;            /* their flows */
    long closed_form;      /* distinct patterns too large for a flow-level run (> SG_MAX_PATTERN_FLOWS
                              flows): priced by the closed form, which matches SimGrid within 1% on
                              bottleneck-limited patterns (tests/test_comm.c) */
    double sim_wall_s;     /* wall time spent inside SimGrid runs (only what this model simulated) */
    long from_helper;      /* distinct patterns the helper worked out for this model (of `simulated`
                              and `closed_form`; how many depends on timing: statistics only) */
} sg_comm_stats;

/* Forget every duration the process memoized: benchmarks that time a cold step, tests that simulate
 * a pattern again at a later clock. */
void sg_comm_forget(void);

/* Flow-level runs for patterns of up to `max_flows` flows (default SG_MAX_PATTERN_FLOWS). */
void sg_comm_set_max_flows(comm_model *m, long max_flows);

/* 1: the models made from now on work announced queries out in a helper process (for a process with
 * a core to spare: a lone step, not one of a sweep's workers); 0 (the default): when asked, and they
 * take no announcements (comm_model.announce NULL). */
void sg_comm_set_helpers(int on);

/* Wait until the helper of model `m` (if it has one) has sent all it will: what a test or a benchmark
 * calls to know what the helper did. */
void sg_comm_helper_finish(comm_model *m);

/* Statistics of a model made by sg_comm_create (zeros for another model). */
sg_comm_stats sg_comm_get_stats(const comm_model *m);

#endif
