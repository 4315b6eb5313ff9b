/* checkpoint_write.c — checkpoint write and snapshot times (closed form; why it is exact:
 * checkpoint_write.h). */
#include "sim/plan/checkpoint_write.h"

#include <math.h>

#include "sim/plan/reliability.h"

double checkpoint_write_s(const scenario *s, double state_bytes) {
    const checkpoint_cfg *ck = &s->reliability.checkpoint;
    if (ck->write_min >= 0) return ck->write_min * 60.0;
    return storage_write_s(state_bytes, s->cluster.nodes, s->cluster.storage_GBps,
                           storage_node_GBps(&s->cluster));
}

double checkpoint_policy_interval_s(const scenario *s, double write_s, double mtbf_s) {
    const checkpoint_cfg *ck = &s->reliability.checkpoint;
    switch (ck->policy) {
    case CKPT_FIXED: return ck->interval_min * 60.0;
    case CKPT_YOUNG: return young_interval(write_s, mtbf_s);
    case CKPT_DALY: return daly_interval(write_s, mtbf_s);
    case CKPT_NONE: break;
    }
    return INFINITY;
}

double storage_write_s(double total_bytes, int n_writers, double fs_GBps, double node_GBps) {
    if (total_bytes <= 0) return 0;
    if (n_writers < 1 || !(fs_GBps > 0)) return INFINITY;
    /* max-min fair share of one flow: min(own link, bottleneck / n) */
    double share_GBps = fs_GBps / n_writers;
    if (node_GBps > 0 && node_GBps < share_GBps) share_GBps = node_GBps;
    return (total_bytes / n_writers) / (share_GBps * 1e9);
}

double storage_snapshot_s(double bytes_per_gpu, double GBps) {
    if (bytes_per_gpu <= 0) return 0;
    return GBps > 0 ? bytes_per_gpu / (GBps * 1e9) : INFINITY;
}

double storage_node_GBps(const cluster_cfg *c) {
    double nic = c->nic_gbps / 8.0;
    return (c->pcie_GBps > 0 && c->pcie_GBps < nic) ? c->pcie_GBps : nic;
}

void checkpoint_tier_times_resolve(const scenario *s, double state_bytes, checkpoint_tier_times *out) {
    const cluster_cfg *c = &s->cluster;
    const ckpt_tiers_cfg *t = &s->reliability.checkpoint.tiers;
    double shard = c->nodes > 0 ? state_bytes / c->nodes : 0;
    double snap_GBps = s->reliability.checkpoint.snapshot_GBps > 0 ? s->reliability.checkpoint.snapshot_GBps
                                                                    : c->pcie_GBps;
    out->snapshot_s = storage_snapshot_s(state_bytes / scn_gpus(s), snap_GBps);
    out->host_read_s = out->snapshot_s;
    double node_nic_GBps = c->rails * c->nic_gbps / 8.0;
    double peer_GBps = t->peer_GBps > 0 ? t->peer_GBps : c->nic_gbps / 8.0;
    double peer_read_GBps = t->peer_read_GBps > 0 ? t->peer_read_GBps : node_nic_GBps;
    out->peer_write_s = storage_snapshot_s(shard, peer_GBps);
    out->peer_read_s = storage_snapshot_s(shard, peer_read_GBps);
    out->peer_step_slowdown = t->peer_step_slowdown >= 1 ? t->peer_step_slowdown
                              : peer_GBps < node_nic_GBps ? 1.0 / (1.0 - peer_GBps / node_nic_GBps)
                                                          : INFINITY;
    out->nvme_write_s = storage_snapshot_s(shard, t->nvme_write_GBps);
    out->nvme_read_s = storage_snapshot_s(shard, t->nvme_read_GBps);
    out->pfs_write_s = checkpoint_write_s(s, state_bytes);
    double read_GBps = t->pfs_read_GBps > 0 ? t->pfs_read_GBps : c->storage_GBps;
    out->pfs_read_s = storage_write_s(state_bytes, c->nodes, read_GBps, storage_node_GBps(c));
    int off = t->peer_offset_nodes > 0 ? t->peer_offset_nodes : s->reliability.rack_nodes;
    out->peer_offset_nodes = c->nodes > 0 ? off % c->nodes : 0;
}
