/* trace.h — the step trace: Chrome/Perfetto trace.json of one step, simulated (this file writes it)
 * or live (the live executor writes the same format). `simdiag` reads it.
 *
 * Document: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}; ui.perfetto.dev
 * and chrome://tracing open it. Written atomically (temporary name, then rename). Times in
 * microseconds from the step start.
 *
 * ---- traceEvents --------------------------------------------------------------------------------
 * One process per traced rank (pid = global rank; process_name "rank R (stage S, ep E, replica D) GPU
 * G node N"), one thread per stream (tid = stream_kind: 0 "compute", 1 "comm", 2 "p2p"), and per op
 * one complete event {"ph": "X", "name", "cat": phase ("F", "B", "W", "OPT"), "ts", "dur", "pid",
 * "tid", "args": {"mb", "layer", "chunk", and "flops" + "tokens" (compute) or "bytes" + "peer"
 * (send/recv) or "bytes" + "group" (collectives)}}. A RECV is drawn on the p2p track from the start
 * of its matching SEND to the arrival; when both ranks are traced, a flow arrow joins them: {"ph": "s",
 * "id": "p2p-SENDER-TAG", "cat": "p2p"} at the send's start and {"ph": "f", "bp": "e"} at the arrival.
 * With a host side (step_host.h), one more thread per rank, tid 8 "host": "issue" slices (cat "host")
 * while the rank's CPU thread issues ops back to back (args: first_op, last_op) and "sync_wait" slices
 * while it waits at a host sync for the GPU to drain.
 * Two counter tracks per rank ({"ph": "C"}): "memory in use (GiB)" (the plan's ledgers of its
 * pipeline rank: weights, gradients and optimizer all along, activations in proportion to the
 * micro-batches in flight, peaking at the ledger's activations) and "bytes in flight (MB)" (the
 * payload of its sends and collectives between their start and end). Events are sorted by time,
 * the metadata ("ph": "M") first.
 * Event names are stable op-class names, so that `simdiag compare` can put simulated and live times
 * side by side by name (STEP_TRACE_EVENT_NAMES below):
 *   compute:        embed_fwd embed_bwd attn_fwd attn_bwd_input attn_bwd_weight dense_ffn_fwd
 *                   dense_ffn_bwd_input dense_ffn_bwd_weight router_fwd router_bwd permute_fwd
 *                   permute_bwd expert_fwd expert_bwd_input expert_bwd_weight unpermute_fwd
 *                   unpermute_bwd shared_expert_fwd shared_expert_bwd_input
 *                   shared_expert_bwd_weight head_loss_fwd head_loss_bwd optimizer
 *   communication:  a2a_dispatch a2a_combine send recv reduce_scatter all_gather all_reduce
 * (a2a_dispatch / a2a_combine occur in the forward and, for the gradients, in the backward: "cat"
 * tells which.) When the step hangs, a rank blocked inside a collective gets an instant event
 * {"ph": "i", "s": "t", "name": <that op's name>, "cat": "hang", "ts": its arrival, "args":
 * {"state": "waiting", "group", "layer", "mb"}}, and the culprit one {"name": "stalled", "cat":
 * "hang", "ts": the end of its last op, "args": {"state": "never arrived", ...}}.
 *
 * ---- otherData (the contract simdiag reads) --------------------------------------------------------
 *   "format": "moesim-step-trace/1",
 *   "source": "simulated" | "live",
 *   "generator": "moesim step", "scenario": name,
 *   "ranks": N, "gpus_per_node": G, "tp", "pp", "ep", "dp": the layout,
 *   "step_time_s": T                         absent when the step hung,
 *   "rank_gpu":       [N]  global GPU of rank r (node = gpu / gpus_per_node),  ALL ranks
 *   "rank_step_s":    [N]  time from the step start to the end of rank r's last op,  ALL ranks
 *   "rank_compute_s": [N]  busy time of rank r's compute stream (kernels + optimizer),  ALL ranks
 *   "rank_a2a_s":     [N]  time rank r spent inside all-to-alls after their last member arrived (the
 *                          transfers themselves: a slow link lengthens them),  ALL ranks
 *   "rank_pfc_pause_s": [N]  the part of rank_a2a_s that PFC pauses added (cluster.pfc, the fast
 *                          executor: step_exec.h "Lossless fabric"); absent unless it ran with cluster.pfc
 *                          and several routing sample streams
 *   "expert_tokens":  [E]  token-expert pairs each expert id 0..E-1 received, summed over every MoE
 *                          layer of the model and every micro-batch of the step, for one replica
 *                          (the EP groups of replica 0, tp index 0; [] for a dense model). Every EP
 *                          group routes a (layer, micro-batch) with the same sample (program.h
 *                          "Routing"), so this is also each EP group's load, summed over layers.
 *                          (step.expert_load_cv is the mean of the per-layer, per-micro-batch CVs;
 *                          the CV of this sum is lower when the hot experts differ between layers.)
 *   "expert_tokens_routed": [E]  the same sum of what the router assigned to each expert before the
 *                          capacity limit (equal to expert_tokens unless routing drops; with drops the
 *                          limit caps the hot expert's received count and hides the imbalance)
 *   "hang": null, or
 *     {"op": "A2A_DISPATCH" (op_kind_label), "group_kind": "EP" | "TP" | "DP_DENSE" | "DP_EXPERT",
 *      "group": id, "layer": L, "micro_batch": M,
 *      "waiting": [ranks blocked inside that collective instance],
 *      "missing": [ranks of the group that never arrived (the culprit among them)],
 *      "missing_last_op": [{"rank": r, "op": "COMPUTE attn_fwd" | "A2A_COMBINE" | ... | "(not started)",
 *                           "layer": l, "micro_batch": m}]   (the op of r that ended last),
 *      "blocked_elsewhere": number of the other unfinished ranks (blocked on other ops)}
 * With the replica shortcut (step_exec.h) the ranks of mirrored replicas carry their representative's
 * numbers, which is exact: they ran the identical program with identical timing.
 */
#ifndef MOESIM_TRACE_H
#define MOESIM_TRACE_H

#include "sim/program/program.h"
#include "sim/exec/step_exec.h"

#define STEP_TRACE_FORMAT "moesim-step-trace/1"
/* The host thread's track (step_host.h), beside the streams' tids (stream_kind) */
#define STEP_TRACE_HOST_TID 8

/* The stable event names (see above), NULL-terminated. */
extern const char *const STEP_TRACE_EVENT_NAMES[];

/* The name of a resolved op's event: kernel_name() for compute, op_kind_name() otherwise. */
const char *step_trace_event_name(const program_op *o);

/* The default subset (scenario output.trace_ranks empty): first and last rank of stage 0 and of the
 * last stage (replica 0), the slowest rank, the holder of the hot expert when routing is "hot", and
 * on a hang the culprit, the first waiting rank and the first other missing rank. Writes up to `max`
 * distinct ranks into `out`, ascending; returns the count. */
int step_trace_default_ranks(const program *p, const step_exec_result *r, int *out, int max);

/* The k ranks with the most busy time (compute + optimizer: step_split_slowest_rank's measure),
 * slowest first (ties: lower rank first); returns min(k, n_ranks). */
int step_trace_slowest_ranks(const step_exec_result *r, int n_ranks, int k, int *out);

/* The collective-timeout record of otherData ("collective_timeout": null when none; SCENARIO.md). */
struct cJSON *step_timeout_json(const program *p, const step_timeout *t);
/* A hang in brief, for the step's results ("step.breakdown.hang": null when the step did not hang):
 * the collective instance the culprit never arrived at (op, group_kind, group, layer, micro_batch),
 * the culprit (rank, gpu, node: as in the timeout record) and how many ranks wait there, never arrived
 * and are blocked elsewhere. otherData.hang (the trace) lists the ranks themselves. */
struct cJSON *step_hang_summary_json(const program *p, const step_hang *h);

/* Build the trace document (caller frees with cJSON_Delete). `source` is "simulated" or "live".
 * It is the parse of the text step_trace_write writes (each event written straight as text, which
 * costs a fraction of printing cJSON items). */
struct cJSON *step_trace_build(const program *p, const step_exec_result *r, const char *source);
/* Build ("simulated") and write it to `path` atomically; the members of `other_extra` (an object, may
 * be NULL: e.g. the lossless fabric's report, step_pfc.h, as "pfc") are copied into otherData. */
int step_trace_write(const char *path, const program *p, const step_exec_result *r, const struct cJSON *other_extra,
                     moe_error *err);

#endif
