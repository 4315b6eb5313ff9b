/* step_pfc.h — the step's all-to-alls on a lossless fabric (cluster.pfc): where the congestion of
 * the worst incast spreads (sim/exec/pfc_spread.h), for results and for simdiag.
 *
 * Which all-to-all: every dispatch-direction pattern (the forward dispatch and the backward
 * gradient of the combine: the directions in which the hot expert's GPU receives) on every simulated
 * EP group, with its concurrent copies; the one whose most loaded lossless link drains last is
 * reported. The combine directions send from the hot GPU: its NIC up is then the bottleneck, a
 * sender's own link, which PFC does not pause. On a hung step (faults.stalls) the all-to-all the
 * stalled rank never arrived at is analysed instead, with its GPU as a receiver that stops
 * draining: the pause storm, and its reach.
 *
 * The report (JSON object, or NULL when the step has no all-to-all):
 *   {"ep_group", "pattern", "kind": "dispatch_f" | "dispatch_b",
 *    "hot_gpu", "hot_node", "hot_local_gpu", "hot_received_bytes",
 *    "root_link", "root_drain_s", "stalled_gpu" (-1: none),
 *    "paused_links_count", "paused_links": [{"link", "drain_s", "held_s" (null: forever), "cause"}]
 *                                          (the 32 held longest beyond their own drain),
 *    "victim_flows", "max_victim_slowdown" (null: held forever),
 *    "worst_victim": null | {"src_gpu", "dst_gpu", "lossy_s", "pfc_s" (null: forever)},
 *    "held_gpus", "makespan_lossy_s", "makespan_pfc_s" (null: forever)}
 */
#ifndef MOESIM_STEP_PFC_H
#define MOESIM_STEP_PFC_H

#include "sim/exec/step_exec.h"

struct cJSON;

struct cJSON *step_pfc_report(const program *p, const step_exec_result *r);

#endif
