/* diagnose.h — the seed 000 §4.2 diagnoser (distributed_fault_diagnoser.py) and the §3.1 hang triage,
 * as pure functions over a parsed step trace; `simdiag` (tools/simdiag.c) is the command line.
 *
 * Input: a step trace (sim/exec/trace.h) written by the simulator (`simrun`, "source": "simulated") or by a
 * live run (`simlive`, "source": "live"). The diagnoser reads only "otherData" (per-rank times, expert
 * token counts, the hang record) for `check`, and the complete events of "traceEvents" for `compare`:
 *
 *   otherData = {"format": "moesim-step-trace/1", "source": "simulated" | "live",
 *                "ranks": N, "gpus_per_node": G, "tp", "pp", "ep", "dp"   (tp*pp*ep*dp == N),
 *                "step_time_s" (absent when the step hung),
 *                "rank_gpu": [N], "rank_step_s": [N], "rank_compute_s": [N],   (either time array may
 *                    be absent, not both)
 *                "rank_a2a_s": [N]   (optional: time inside all-to-alls after the last member arrived;
 *                    the slow-link check compares it between the EP groups of a stage)
 *                "expert_tokens": [E]   (absent or empty for a dense model),
 *                "expert_tokens_routed": [E]   (optional: the router's assignments before the capacity
 *                    limit; when present the imbalance is judged on it, because a dropping capacity
 *                    limit caps the hot expert's received count and hides the imbalance),
 *                "hang": null | {"op", "group_kind", "group", "layer", "micro_batch",
 *                                "waiting": [ranks], "missing": [ranks],
 *                                "missing_last_op": [{"rank", "op", "layer", "micro_batch"}],
 *                                "blocked_elsewhere": n},
 *                "collective_timeout": null | {"timeout_s", "rank", "gpu", "node", "op", "group_kind",
 *                                "group", "layer", "micro_batch", "arrived_s", "waited_s" (null:
 *                                forever), "fired_s"}   (optional: NCCL's watchdog fired),
 *                "pfc": {"hot_gpu", "hot_node", "hot_local_gpu", "root_link", "root_drain_s",
 *                        "stalled_gpu", "paused_links_count", "paused_links": [{"link", "drain_s",
 *                        "held_s" (null: forever), ...}], "victim_flows", "max_victim_slowdown"
 *                        (null: forever), "held_gpus", ...}   (optional: a lossless fabric's worst
 *                        incast, sim/exec/step_pfc.h)}
 *
 * Ranks are numbered rank = ((d * pp + s) * ep + e) * tp + t (sim/program/program.h); rank_gpu places them
 * (any permutation: a live job's scheduler decides); node = gpu / G, the GPU's index on its node =
 * gpu % G (the seed's "Node 2 (Rank 18 / GPU 2)"). Expert x lives on EP index x / (E / ep) of every
 * (replica, stage, tp) — contiguous blocks, as the simulator and Megatron place them.
 *
 * The rules (seed 000 §4.2), with two documented refinements:
 *   straggler  t > mean + 2 sd  or  t > 1.25 x mean          (population sd, as the seed)
 *              - computed among the ranks of one pipeline stage: stages carry different layers
 *                (embedding, loss head) and legitimately differ; pooled, a heavier stage is flagged
 *                wholesale (tests/test_simdiag_closed_loop.c: the last of pp 2 computes 2x the first).
 *              - the 2-sigma half also needs t >= (1 + min_excess) x mean (default 5%): on 4096
 *                ranks with Gaussian jitter, 2 sigma alone flags ~2% of healthy ranks (~90 GPUs);
 *                on the simulated seed-4096 step (healthy, routing noise only) it flags 68 ranks,
 *                none more than 0.26% over its stage mean. min_excess = 0 gives the seed's rule.
 *   imbalance  cv > 0.4 or max / (min + 1e-5) > 3 is severe   (sim/program/expert_load.h; Gini reported too)
 *   hang       all ranks but one wait inside a collective; the odd one out is the culprit (§3.1).
 *   timeout    NCCL's watchdog fired (collective_timeout): who waited where, and for how long.
 *   PFC        on a lossless fabric, an incast whose pause holds victim flows (flows that never touch
 *              the hot GPU) at least DIAG_PFC_VICTIM_SLOWDOWN x longer than a lossy fabric would: the
 *              hot GPU and the paused links are named (seed 000 §0.2 incident 1).
 */
#ifndef MOESIM_DIAGNOSE_H
#define MOESIM_DIAGNOSE_H

#include <stdio.h>

#include "sim/base/errors.h"
#include "sim/program/expert_load.h"

/* `simdiag check` found a problem (straggler, severe imbalance, hang). Distinct from EXIT_RUNTIME (1)
 * and EXIT_BADINPUT (2) so that a script can tell "the job is sick" from "the tool failed". */
enum { DIAG_EXIT_PROBLEM = 3 };

#define DIAG_TRACE_FORMAT "moesim-step-trace/1"
#define DIAG_STRAGGLER_SIGMAS 2.0     /* seed 000 §4.2: mean + 2 sd */
#define DIAG_STRAGGLER_RATIO 1.25     /* seed 000 §4.2: > 1.25 x mean */
#define DIAG_MIN_EXCESS_DEFAULT 0.05  /* noise floor of the 2-sigma half (see above) */
/* `simdiag compare` fails (exit 3) when an op class's predicted mean is off the measured one by
 * more than this (percent), unless --tolerance says otherwise. */
#define DIAG_COMPARE_TOLERANCE_PCT 20.0
#define DIAG_NAME_MAX 64
/* A lossless fabric's congestion spreading is a finding when a victim flow is held this many times
 * longer than on a lossy fabric (the straggler rule's 1.25x, applied to a flow) */
#define DIAG_PFC_VICTIM_SLOWDOWN 1.25
#define DIAG_PFC_LINKS_MAX 32

/* ---- the parsed trace ------------------------------------------------------------------------ */

typedef struct {
    int rank;
    char op[DIAG_NAME_MAX];      /* "" when the rank had not started any op */
    int layer, micro_batch;
} diag_last_op;

typedef struct {
    char op[DIAG_NAME_MAX];          /* the collective the waiting ranks are inside */
    char group_kind[DIAG_NAME_MAX];  /* "ep", "tp", "dp_dense", "dp_expert", "pp" ... as written */
    int group, layer, micro_batch;
    int n_waiting, n_missing, n_last;
    int *waiting, *missing;          /* ranks */
    diag_last_op *last;              /* where each missing rank last was */
    int blocked_elsewhere;           /* ranks stuck behind the hang in other ops */
} diag_hang;

typedef struct {
    double timeout_s, arrived_s, waited_s, fired_s;   /* waited_s INFINITY: the step hung */
    double detect_s;                 /* fired_s - arrived_s: the watchdog's timeout or the QP's retries */
    int by_qp_retry;                 /* bool: detected_by "qp_retry_exhausted" (else "watchdog"; traces
                                        that do not say are the watchdog's) */
    int rank, gpu, node, group, layer, micro_batch;
    char op[DIAG_NAME_MAX], group_kind[DIAG_NAME_MAX];
} diag_timeout;

typedef struct {
    char link[DIAG_NAME_MAX];
    double drain_s, held_s;          /* held_s INFINITY: forever (behind a stalled receiver) */
} diag_paused_link;

typedef struct {
    int hot_gpu, hot_node, hot_local_gpu, stalled_gpu, held_gpus;
    char root_link[DIAG_NAME_MAX];
    double root_drain_s, victim_flows, max_victim_slowdown;   /* INFINITY: held forever */
    double stall_discard_s;          /* when the fabric discards a stalled receiver's queue; INFINITY: never */
    int credits;                     /* bool: InfiniBand credits hold the ports, not PFC pauses */
    int paused_links_count, n_links;
    diag_paused_link links[DIAG_PFC_LINKS_MAX];
} diag_pfc;

/* One op class (trace event name) aggregated over the complete ("ph": "X") events of a trace. */
typedef struct {
    char name[DIAG_NAME_MAX];
    long count;
    double total_us;
} diag_op_class;

typedef struct {
    char file[1024];           /* for messages */
    char source[16];           /* "simulated", "live" */
    int ranks, gpus_per_node, tp, pp, ep, dp;
    int has_step_time;
    double step_time_s;
    int *rank_gpu;             /* [ranks] */
    double *rank_step_s;       /* [ranks] or NULL */
    double *rank_compute_s;    /* [ranks] or NULL */
    double *rank_a2a_s;       /* [ranks] or NULL: time inside all-to-alls after the last arrival */
    int n_experts;
    double *expert_tokens;     /* [n_experts] or NULL: tokens the experts received */
    double *expert_routed;     /* [n_experts] or NULL: tokens the router assigned (before capacity) */
    diag_hang *hang;           /* NULL: the step completed */
    diag_timeout *timeout;     /* NULL: no collective timed out */
    diag_pfc *pfc;             /* NULL: no lossless-fabric report */
    int n_classes;
    diag_op_class *classes;    /* sorted by name */
} diag_trace;

/* Parse `text` (the contents of `file`, named in messages). Errors: EXIT_BADINPUT with the file, the
 * JSON path ("otherData.rank_gpu[3]"), the value and what was expected. */
int diag_trace_parse(const char *text, const char *file, diag_trace *t, moe_error *err);
int diag_trace_load(const char *path, diag_trace *t, moe_error *err);
void diag_trace_free(diag_trace *t);

/* ---- where a rank is ------------------------------------------------------------------------- */

typedef struct {
    int rank, gpu, node, local_gpu;   /* gpu: global index; local_gpu: index on its node */
    int replica, stage, ep_index, tp_index;
} diag_place;

void diag_locate(const diag_trace *t, int rank, diag_place *out);

/* ---- stragglers ------------------------------------------------------------------------------ */

typedef struct {
    double min_excess;         /* fraction; DIAG_MIN_EXCESS_DEFAULT */
    int top_experts;           /* hottest experts to name; 3 */
} diag_rules;

void diag_rules_default(diag_rules *r);

typedef struct {
    int stage, n;
    double mean_s, sd_s, min_s, max_s;
    double threshold_s;        /* the lowest time the rule flags in this stage */
} diag_stage_stats;

typedef struct {
    diag_place where;
    double time_s, stage_mean_s, pct_over_mean;
    int by_sigma, by_ratio;    /* which half of the rule fired */
    int holds_hot_expert;      /* the rank holds one of the named hottest experts of a severe imbalance */
} diag_straggler;

typedef struct {
    const char *signal;        /* "rank_compute_s" or "rank_step_s"; NULL when the trace lacks it */
    int n_stages;
    diag_stage_stats *stages;  /* [pp] */
    int n_stragglers;
    diag_straggler *stragglers;   /* worst first (by % over the stage mean) */
} diag_straggler_report;

/* The rule over `times` (one per rank, NULL -> empty report with signal NULL). Returns 0, -1 on OOM. */
int diag_stragglers(const diag_trace *t, const double *times, const char *signal, const diag_rules *rules,
                    diag_straggler_report *out);
void diag_straggler_report_free(diag_straggler_report *r);

/* ---- expert load ----------------------------------------------------------------------------- */

typedef struct {
    int expert;
    double tokens, share, x_mean;   /* share of all tokens; multiple of the mean */
    int ep_index;                   /* -1 when experts % ep != 0 (placement unknown) */
    int n_holders;
    diag_place *holders;            /* every rank holding the expert, ascending */
} diag_hot_expert;

typedef struct {
    int present;                    /* 0: dense model or no counts in the trace */
    const char *signal;             /* "expert_tokens_routed" when the trace has it, else "expert_tokens" */
    double dropped_fraction;        /* 1 - received / routed; NAN without routed counts */
    expert_load_stats experts;      /* over experts (sim/program/expert_load.h) */
    int ep_ranks_valid;
    expert_load_stats ep_ranks;     /* over EP indices: the load each EP rank receives */
    int n_hot;
    diag_hot_expert *hot;           /* the hottest expert, then up to top_experts - 1 more that
                                       carry > 1.25 x the mean load; descending */
} diag_expert_report;

int diag_expert_load(const diag_trace *t, const diag_rules *rules, diag_expert_report *out);
void diag_expert_report_free(diag_expert_report *r);

/* ---- slow links ------------------------------------------------------------------------------ */
/* A slow NIC or NVLink does not lengthen its GPU's busy time: it lengthens the collectives it takes
 * part in. The signal is the EP group's mean time inside its all-to-alls after the last member arrived
 * (otherData.rank_a2a_s: the transfers themselves, free of waiting for late members or pipeline
 * neighbours) against the other EP groups of the same pipeline stage (other replicas and TP indices
 * carry the same work and routing): > 1.25 x their median. */
#define DIAG_SLOW_GROUP_RATIO 1.25

typedef struct {
    int replica, stage, tp_index;   /* the EP group */
    int first_rank, last_rank, n_ranks;   /* its ranks: ep index 0 .. ep-1 (first_rank + e * tp) */
    int node_lo, node_hi;           /* nodes its GPUs sit on */
    double comm_s, others_s;        /* its mean time in all-to-alls; median of the stage's others */
} diag_slow_group;

typedef struct {
    int present;                    /* the trace has rank_a2a_s and >= 2 groups per stage */
    int n;
    diag_slow_group *groups;        /* worst first */
} diag_link_report;

int diag_slow_links(const diag_trace *t, diag_link_report *out);
void diag_link_report_free(diag_link_report *r);

/* ---- the whole check ------------------------------------------------------------------------- */

typedef struct {
    diag_straggler_report compute;  /* primary: busy time (see diagnose.c for why) */
    diag_straggler_report step;     /* secondary: per-rank step time */
    diag_expert_report load;
    diag_link_report links;
    int hang;                       /* bool: t->hang != NULL */
    int timeout;                    /* bool: t->timeout != NULL */
    int pfc_spread;                 /* bool: t->pfc holds a victim >= DIAG_PFC_VICTIM_SLOWDOWN x */
    int problems;                   /* findings: stragglers + slow EP groups + severe imbalance + hang +
                                       timeout + PFC spreading */
} diag_report;

int diag_check(const diag_trace *t, const diag_rules *rules, diag_report *out);
void diag_report_free(diag_report *r);
/* Human-readable report with the seed's advice. */
void diag_report_print(FILE *f, const diag_trace *t, const diag_report *r, const diag_rules *rules);
/* {"format": "moesim-diagnosis/1", ...}; caller frees with cJSON_Delete. */
struct cJSON *diag_report_json(const diag_trace *t, const diag_report *r, const diag_rules *rules);

/* ---- predicted vs measured ------------------------------------------------------------------- */

typedef struct {
    char name[DIAG_NAME_MAX];
    long pred_count, meas_count;
    double pred_mean_us, meas_mean_us;   /* NAN when the class is absent on that side */
    double error_pct;                    /* (predicted - measured) / measured x 100; NAN if undefined */
} diag_compare_row;

typedef struct {
    int n_rows;
    diag_compare_row *rows;              /* union of both traces' classes, by name */
    double pred_step_s, meas_step_s, step_error_pct;   /* NAN where a trace has no step time */
    double max_abs_error_pct;            /* over classes present on both sides; NAN if none */
} diag_compare_report;

int diag_compare(const diag_trace *pred, const diag_trace *meas, diag_compare_report *out);
void diag_compare_free(diag_compare_report *r);
void diag_compare_print(FILE *f, const diag_trace *pred, const diag_trace *meas, const diag_compare_report *r);
struct cJSON *diag_compare_json(const diag_trace *pred, const diag_trace *meas, const diag_compare_report *r);

#endif
