/* checkpoint_write.h — how long a checkpoint takes: the write of the training state to the parallel
 * file system (the delta of Young's and Daly's intervals) and the GPU-to-host snapshot that pauses
 * training in async mode. One model for the plan (its Daly interval) and the run level (its
 * checkpoint policy and timeline), so results carry one write time and one Daly interval.
 *
 * Model: every node writes its shard of the state at the same time. The shards share the file
 * system's aggregate write bandwidth, and each node is further limited by its own storage NIC.
 * This is a closed form, not a SimGrid run, and it is exact for what it models: n equal flows that
 * start together and cross one shared bottleneck of capacity C, each behind a private link of
 * capacity c. Max-min fairness (what SimGrid's flow models compute, and what a parallel file system
 * approximates) gives every flow min(c, C/n); equal flows keep equal rates to the end, so all finish
 * together at (B/n) / min(c, C/n) = max(B/(n c), B/C) for B bytes in total. A flow-level simulator
 * would reproduce this number and add nothing but run time; the run level needs it once per trial
 * set. (It stops being exact if shards differ in size or other traffic shares the links: neither is
 * modelled here — the storage network is separate from the training rails in the seed's design.) */
#ifndef MOESIM_CHECKPOINT_WRITE_H
#define MOESIM_CHECKPOINT_WRITE_H

#include "sim/scenario/scenario.h"

/* The scenario's checkpoint write time in seconds for state_bytes of training state:
 * reliability.checkpoint.write_min when it is set (>= 0), else the storage model below with every
 * node of the cluster writing (cluster.nodes writers sharing cluster.storage_GBps, each behind
 * storage_node_GBps). INFINITY when the bytes cannot be written (storage_GBps <= 0). */
double checkpoint_write_s(const scenario *s, double state_bytes);

/* The interval (seconds) the scenario's checkpoint policy asks for, given the write time and the
 * cluster MTBF (seconds): fixed = interval_min, young = sqrt(2 delta M), daly = Daly's higher-order
 * estimate; INFINITY for "none". (The run level then rounds it to whole steps.) */
double checkpoint_policy_interval_s(const scenario *s, double write_s, double mtbf_s);

/* Seconds for n_writers nodes to write total_bytes together (each total_bytes / n_writers), sharing
 * fs_GBps, each limited by node_GBps (<= 0: no per-node limit). */
double storage_write_s(double total_bytes, int n_writers, double fs_GBps, double node_GBps);

/* Seconds to copy bytes_per_gpu from GPU to host memory at GBps (all GPUs in parallel, each over its
 * own PCIe link): the training pause of an async checkpoint. */
double storage_snapshot_s(double bytes_per_gpu, double GBps);

/* A node's storage-network bandwidth in the scenario: one NIC of the cluster's kind (nic_gbps / 8
 * bytes), capped by the host's PCIe bandwidth. */
double storage_node_GBps(const cluster_cfg *c);

/* ---- checkpoint tiers (reliability.checkpoint.tiers) ----------------------------------------------
 * Where one checkpoint's copies go and how long each copy takes to write and to read back, every
 * node (every GPU for PCIe) moving its own shard at the same time:
 *   host  GPU -> host memory over PCIe: the snapshot, the training pause (state / GPUs per GPU at
 *         checkpoint.snapshot_GBps, else cluster.pcie_GBps); read back the same way.
 *   peer  host -> a peer node's host memory over the training rails: the shard (state / nodes) at
 *         peer.GBps; read back at peer.read_GBps (training is stopped then). While it runs it takes
 *         peer.GBps of the node's NIC bandwidth B = rails x nic_gbps / 8 from training; "auto"
 *         step_slowdown is the bound for a step limited by its NICs, 1 / (1 - peer.GBps / B).
 *   nvme  host -> the node's NVMe: the shard at nvme.write_GBps, read at nvme.read_GBps.
 *   pfs   the parallel file system: checkpoint_write_s (the one write time); read with the same
 *         max-min share as the write at pfs.read_GBps.
 * All writes start when the snapshot ends and run side by side on separate paths (PCIe to the NVMe,
 * the rails to the peer, the storage NIC to the file system). */
typedef struct {
    double snapshot_s, host_read_s;
    double peer_write_s, peer_read_s, peer_step_slowdown;
    double nvme_write_s, nvme_read_s;
    double pfs_write_s, pfs_read_s;
    int peer_offset_nodes;   /* node n's replica lives on node (n + offset) mod nodes */
} checkpoint_tier_times;

void checkpoint_tier_times_resolve(const scenario *s, double state_bytes, checkpoint_tier_times *out);

#endif
