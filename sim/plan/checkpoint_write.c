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
