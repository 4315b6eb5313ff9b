/* components.c — component kinds, counts, locations and blast radii (components.h). */
#include "sim/scenario/components.h"

#include <math.h>
#include <stddef.h>
#include <strings.h>

const char *const COMPONENT_KIND_NAMES[COMP_NKINDS + 1] = {
    "gpu", "nic", "host", "leaf_switch", "spine_switch", "rack", "software", NULL};

const char *component_kind_name(component_kind k) {
    return (k >= 0 && k < COMP_NKINDS) ? COMPONENT_KIND_NAMES[k] : "?";
}

int component_kind_parse(const char *name, component_kind *out) {
    for (int k = 0; k < COMP_NKINDS; k++)
        if (strcasecmp(name, COMPONENT_KIND_NAMES[k]) == 0) { *out = (component_kind)k; return 0; }
    return -1;
}

/* Llama 3 405B, 54 days on 16,384 H100 GPUs in 2,048 servers (Dubey et al., "The Llama 3 Herd of
 * Models", 2024): section 3.3.4, Table 5, 419 unexpected interruptions by root cause; section 3.3.1
 * for the fabric: one top-of-rack switch per rack of two 8-GPU servers (1,024 ToRs). Per-unit MTBF =
 * units x 1296 h / interruptions, with Table 5's rows grouped as:
 *   gpu       faulty GPU 148, HBM3 72, SRAM 19, GPU system processor 17, silent data corruption 6,
 *             thermal interface + sensor 6 = 268 over 16,384 GPUs  -> 79,232 h
 *             (Table 5's percentage column gives 30.1% for the 148 faulty GPUs, which is 126 of 419,
 *             and sums the GPU rows to 58.7%; the counts, which add up to 419, give 268 = 64.0%)
 *   nic       7 over 16,384 NICs                                       -> 3,033,000 h
 *   host      host maintenance 32, SSD 3, power supply 3, chassis 2, IO expansion board 2, CPU 2,
 *             system memory 2 = 46 over 2,048 hosts                     -> 57,700 h
 *   leaf      network switch/cable 35, all charged to the 1,024 ToRs (the table does not split
 *             switches from cables, nor ToRs from cluster and aggregation switches) -> 37,917 h
 *   software  software bugs 54, dependencies 2, NCCL watchdog timeouts 7 = 63, per host's stack
 *             over 2,048 hosts                                          -> 42,130 h
 *   spine, rack: no row of their own (0 = never; a scenario can give them a rate).
 * Sum: 268 + 7 + 46 + 35 + 63 = 419. */
#define LLAMA3_HOURS (54.0 * 24.0)
static const struct {
    component_kind kind;
    double units, interruptions;
} LLAMA3_COMPONENTS[] = {
    {COMP_GPU, 16384, 148 + 72 + 19 + 17 + 6 + 6},
    {COMP_NIC, 16384, 7},
    {COMP_HOST, 2048, 32 + 3 + 3 + 2 + 2 + 2 + 2},
    {COMP_LEAF_SWITCH, 1024, 35},
    {COMP_SOFTWARE, 2048, 54 + 2 + 7},
};

void components_default(component_cfg comps[COMP_NKINDS]) {
    for (int k = 0; k < COMP_NKINDS; k++)
        comps[k] = (component_cfg){.count = -1, .mtbf_h = 0, .weibull_shape = 1, .detect_s = 0,
                                   .repair_h = -1};
    for (size_t i = 0; i < sizeof LLAMA3_COMPONENTS / sizeof LLAMA3_COMPONENTS[0]; i++)
        comps[LLAMA3_COMPONENTS[i].kind].mtbf_h =
            LLAMA3_COMPONENTS[i].units * LLAMA3_HOURS / LLAMA3_COMPONENTS[i].interruptions;
}

static int racks(const scenario *s) {
    int per = s->reliability.rack_nodes > 0 ? s->reliability.rack_nodes : 1;
    return (s->cluster.nodes + per - 1) / per;
}

int component_auto_count(const scenario *s, component_kind k) {
    const cluster_cfg *c = &s->cluster;
    switch (k) {
    case COMP_GPU:
    case COMP_NIC: return scn_gpus(s);
    case COMP_HOST:
    case COMP_SOFTWARE: return c->nodes;
    case COMP_LEAF_SWITCH: return c->gpus_per_node * scn_leaves_per_rail(c);
    case COMP_SPINE_SWITCH: return c->gpus_per_node;
    case COMP_RACK: return racks(s);
    default: return 0;
    }
}

int component_count(const scenario *s, component_kind k) {
    if ((unsigned)k >= COMP_NKINDS) return 0;
    double n = s->reliability.components[k].count;
    return n >= 0 ? (int)n : component_auto_count(s, k);
}

/* A scenario's unit index -> the cluster's unit index (identity for automatic counts). */
static int cluster_unit(const scenario *s, component_kind k, int unit) {
    int n = component_count(s, k), a = component_auto_count(s, k);
    if (n == a || n <= 0) return unit;
    return (int)((long long)unit * a / n);
}

int component_rank_of_unit(const scenario *s, component_kind k, int unit) {
    const cluster_cfg *c = &s->cluster;
    int u = cluster_unit(s, k, unit), gpn = c->gpus_per_node;
    switch (k) {
    case COMP_GPU:
    case COMP_NIC: return u;
    case COMP_HOST:
    case COMP_SOFTWARE: return u * gpn;
    case COMP_LEAF_SWITCH: {
        int lpr = scn_leaves_per_rail(c), rail = u / lpr, leaf = u % lpr;
        return leaf * c->leaf_down_ports * gpn + rail;
    }
    case COMP_SPINE_SWITCH: return u;
    case COMP_RACK: return u * s->reliability.rack_nodes * gpn;
    default: return 0;
    }
}

void component_blast(const scenario *s, component_kind k, int unit, int *first_node, int *n_nodes) {
    const cluster_cfg *c = &s->cluster;
    int u = cluster_unit(s, k, unit), span = 1, first = 0;
    switch (k) {
    case COMP_GPU:
    case COMP_NIC: first = u / c->gpus_per_node; break;
    case COMP_HOST: first = u; break;
    case COMP_LEAF_SWITCH:
        first = (u % scn_leaves_per_rail(c)) * c->leaf_down_ports;
        span = c->leaf_down_ports;
        break;
    case COMP_RACK:
        first = u * s->reliability.rack_nodes;
        span = s->reliability.rack_nodes;
        break;
    default: span = 0; break;   /* spine, software: restart in place */
    }
    if (first + span > c->nodes) span = c->nodes - first;
    *first_node = first;
    *n_nodes = span > 0 ? span : 0;
}

int component_unit_of_rank(const scenario *s, component_kind k, int rank) {
    const cluster_cfg *c = &s->cluster;
    int node = rank / c->gpus_per_node, rail = rank % c->gpus_per_node, u;
    switch (k) {
    case COMP_GPU:
    case COMP_NIC: u = rank; break;
    case COMP_HOST:
    case COMP_SOFTWARE: u = node; break;
    case COMP_LEAF_SWITCH: u = rail * scn_leaves_per_rail(c) + scn_leaf_of_node(c, node); break;
    case COMP_SPINE_SWITCH: u = rail; break;
    case COMP_RACK: u = node / (s->reliability.rack_nodes > 0 ? s->reliability.rack_nodes : 1); break;
    default: u = 0; break;
    }
    int n = component_count(s, k), a = component_auto_count(s, k);
    if (n != a && a > 0) u = (int)((long long)u * n / a);
    return u < n ? u : n - 1;
}

double components_failures_per_h(const scenario *s) {
    double rate = 0;
    for (int k = 0; k < COMP_NKINDS; k++) {
        const component_cfg *cc = &s->reliability.components[k];
        if (cc->mtbf_h > 0 && isfinite(cc->mtbf_h)) rate += component_count(s, (component_kind)k) / cc->mtbf_h;
    }
    return rate;
}
