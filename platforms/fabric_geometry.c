/* fabric_geometry.c — the clusters the rail-optimized fabric describes (see fabric_geometry.h). */
#include "platforms/fabric_geometry.h"

#include <stdio.h>

int fabric_link_name(const cluster_cfg *c, fabric_hop h, char *buf, size_t len) {
    const int L = fabric_leaves_per_rail(c), P = fabric_pods(c);
    const int dir = h.cls == FL_NVL_UP || h.cls == FL_NIC_UP || h.cls == FL_UPLINK_UP || h.cls == FL_PORT_UP ||
                            h.cls == FL_POD_UP
                        ? 1
                        : h.cls == FL_NVL_DOWN || h.cls == FL_NIC_DOWN || h.cls == FL_UPLINK_DOWN ||
                                  h.cls == FL_PORT_DOWN || h.cls == FL_POD_DOWN
                              ? 2
                              : 0;
    switch (h.cls) {
    case FL_NVL_UP: case FL_NVL_DOWN: snprintf(buf, len, "nvl-%d", h.index); break;
    case FL_NIC_UP: case FL_NIC_DOWN: snprintf(buf, len, "nic-%d", h.index); break;
    case FL_UPLINK_UP: case FL_UPLINK_DOWN: snprintf(buf, len, "up-r%d-l%d", h.index / L, h.index % L); break;
    case FL_PORT_UP: case FL_PORT_DOWN: {
        int U = fabric_uplink_ports(c), b = h.index / U;
        snprintf(buf, len, "up-r%d-l%d-p%d", b / L, b % L, h.index % U);
        break;
    }
    case FL_SPINE:
        if (P > 1) snprintf(buf, len, "spine-r%d-p%d", h.index / P, h.index % P);
        else snprintf(buf, len, "spine-r%d", h.index);
        break;
    case FL_POD_UP: case FL_POD_DOWN: snprintf(buf, len, "pod-r%d-p%d", h.index / P, h.index % P); break;
    case FL_CORE: snprintf(buf, len, "core-r%d", h.index); break;
    default: snprintf(buf, len, "?"); return 0;
    }
    return dir;
}

int fabric_check_cluster(const scenario *s, moe_error *err) {
    const cluster_cfg *c = &s->cluster;
    const char *f = s->file;
    char v[64];
#define BAD(path, val, ...) (snprintf(v, sizeof v, "%g", (double)(val)), moe_error_input(err, f, path, v, __VA_ARGS__))
    if (c->nodes < 1) return BAD("cluster.nodes", c->nodes, "at least 1 node");
    if (c->gpus_per_node < 1) return BAD("cluster.gpus_per_node", c->gpus_per_node, "at least 1 GPU per node");
    if (scenario_check_cluster(s, err)) return err->code;   /* one NIC and rail per GPU; NVLink domains */
    if (!(c->nvlink_GBps > 0)) return BAD("cluster.nvlink_GBps", c->nvlink_GBps, "a positive bandwidth");
    if (!(c->nic_gbps > 0)) return BAD("cluster.nic_gbps", c->nic_gbps, "a positive line rate");
    if (c->leaf_down_ports < 1) return BAD("cluster.leaf_down_ports", c->leaf_down_ports, "at least 1 port");
    if (!(c->oversubscription >= 1.0))
        return BAD("cluster.oversubscription", c->oversubscription, "a ratio >= 1.0 (1.0 = non-blocking)");
    if (!(c->storage_GBps > 0)) return BAD("cluster.storage_GBps", c->storage_GBps, "a positive bandwidth");
    if (!(c->pcie_GBps > 0)) return BAD("cluster.pcie_GBps", c->pcie_GBps, "a positive bandwidth");
    if (c->latency_us.nvlink < 0 || c->latency_us.same_leaf < 0 || c->latency_us.cross_leaf < 0)
        return BAD("cluster.latency_us", -1, "non-negative latencies");
    for (int i = 0; i < s->faults.n_links; i++) {
        const link_fault *lf = &s->faults.links[i];
        char path[64];
        if (lf->kind == LINK_UPLINK) {
            snprintf(path, sizeof path, "faults.links[%d].rail", i);
            if (lf->rail < 0 || lf->rail >= c->rails) return BAD(path, lf->rail, "a rail in [0, %d)", c->rails);
            snprintf(path, sizeof path, "faults.links[%d].leaf", i);
            if (lf->leaf < 0 || lf->leaf >= fabric_leaves_per_rail(c))
                return BAD(path, lf->leaf, "a leaf in [0, %d)", fabric_leaves_per_rail(c));
        } else {
            snprintf(path, sizeof path, "faults.links[%d].gpu", i);
            if (lf->gpu < 0 || lf->gpu >= c->nodes * c->gpus_per_node)
                return BAD(path, lf->gpu, "a GPU id in [0, %d)", c->nodes * c->gpus_per_node);
        }
        snprintf(path, sizeof path, "faults.links[%d].factor", i);
        if (!(lf->factor > 0 && lf->factor <= 1)) return BAD(path, lf->factor, "a bandwidth factor in (0, 1]");
        snprintf(path, sizeof path, "faults.links[%d].loss_rate", i);
        if (!(lf->loss_rate >= 0 && lf->loss_rate < 1)) return BAD(path, lf->loss_rate, "a loss probability in [0, 1)");
    }
#undef BAD
    return 0;
}
