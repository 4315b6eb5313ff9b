/* platform_xml.c — write the rail fabric as SimGrid XML (see platform_xml.h). */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include "platforms/platform_xml.h"
#include "platforms/fabric_geometry.h"
#include "sim/base/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void link_xml(FILE *f, const char *id, double Bps, double lat_s, int duplex) {
    fprintf(f, "    <link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"%s/>\n", id, Bps, lat_s,
            duplex ? " sharing_policy=\"SPLITDUPLEX\"" : "");
}

/* One hop of a route (fabric_link_name): split-duplex members are NAME with direction UP/DOWN. */
static void hop_xml(FILE *f, const cluster_cfg *c, fabric_hop h) {
    char name[64];
    int dir = fabric_link_name(c, h, name, sizeof name);
    if (dir) fprintf(f, "<link_ctn id=\"%s\" direction=\"%s\"/>", name, dir == 1 ? "UP" : "DOWN");
    else fprintf(f, "<link_ctn id=\"%s\"/>", name);
}

static int write_body(FILE *f, const scenario *s) {
    const cluster_cfg *c = &s->cluster;
    const faults_cfg *fl = &s->faults;
    const int G = c->nodes * c->gpus_per_node, L = fabric_leaves_per_rail(c);
    char id[64];
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    fprintf(f, "<!-- moesim rail-optimized fabric: %d nodes x %d GPUs, %d rails, %d leaves per rail,\n"
               "     NVLink %g GB/s, NIC %g Gb/s, leaf uplinks %g GB/s (oversubscription %g), storage %g GB/s.\n"
               "     Same routes as the simulator's arithmetic-routing zone (sim/simgrid/rail_fabric.cpp). -->\n",
            c->nodes, c->gpus_per_node, c->rails, L, c->nvlink_GBps, c->nic_gbps, fabric_uplink_Bps(c) / 1e9,
            c->oversubscription, c->storage_GBps);
    fprintf(f, "<platform version=\"4.1\">\n  <zone id=\"rail-fabric\" routing=\"Full\">\n");
    for (int g = 0; g < G; g++) fprintf(f, "    <host id=\"gpu-%d\" speed=\"%.17gf\"/>\n", g, c->gpu.bf16_tflops * 1e12);
    for (int n = 0; n < c->nodes; n++) fprintf(f, "    <host id=\"host-%d\" speed=\"1e11f\"/>\n", n);
    fprintf(f, "    <host id=\"pfs\" speed=\"1e11f\"/>\n");
    for (int g = 0; g < G; g++) {
        snprintf(id, sizeof id, "nvl-%d", g);
        link_xml(f, id, fabric_nvlink_Bps(c) * faults_link_factor(c, fl, g, LINK_NVLINK), fabric_nvl_lat_s(c), 1);
        snprintf(id, sizeof id, "nic-%d", g);
        link_xml(f, id, fabric_nic_Bps(c) * faults_link_factor(c, fl, g, LINK_NIC), fabric_nic_lat_s(c), 1);
        snprintf(id, sizeof id, "pcie-%d", g);
        link_xml(f, id, fabric_pcie_Bps(c), 0.0, 1);
    }
    for (int r = 0; r < c->rails; r++) {
        for (int l = 0; l < L; l++) {
            snprintf(id, sizeof id, "up-r%d-l%d", r, l);
            link_xml(f, id, fabric_uplink_Bps_faulty(c, fl, r * L + l), fabric_uplink_lat_s(c), 1);
        }
        const int P = fabric_pods(c);
        for (int pod = 0; pod < P; pod++) {
            if (P > 1) snprintf(id, sizeof id, "spine-r%d-p%d", r, pod);
            else snprintf(id, sizeof id, "spine-r%d", r);
            link_xml(f, id, fabric_spine_Bps(c), 0.0, 0);
            if (P == 1) continue;
            snprintf(id, sizeof id, "pod-r%d-p%d", r, pod);
            link_xml(f, id, fabric_pod_uplink_Bps(c), fabric_pod_lat_s(c), 1);
        }
        if (P > 1) {
            snprintf(id, sizeof id, "core-r%d", r);
            link_xml(f, id, fabric_core_Bps(c), 0.0, 0);
        }
    }
    for (int n = 0; n < c->nodes; n++) {
        snprintf(id, sizeof id, "snic-%d", n);
        link_xml(f, id, fabric_storage_nic_Bps(c), fabric_nic_lat_s(c), 1);
    }
    link_xml(f, "pfs", fabric_storage_Bps(c), 0.0, 0);

    /* GPU pairs: written in both directions (PXN routes are not mirror images of each other). */
    for (int a = 0; a < G; a++)
        for (int b = 0; b < G; b++) {
            if (a == b) continue;
            fabric_hop h[FABRIC_MAX_HOPS];
            int k = fabric_gpu_route(c, a, b, h);
            fprintf(f, "    <route src=\"gpu-%d\" dst=\"gpu-%d\" symmetrical=\"NO\">", a, b);
            for (int i = 0; i < k; i++) hop_xml(f, c, h[i]);
            fprintf(f, "</route>\n");
        }
    /* Storage side (symmetrical: the reverse route mirrors the directions). */
    for (int g = 0; g < G; g++) {
        int n = fabric_node_of(c, g);
        fprintf(f, "    <route src=\"gpu-%d\" dst=\"host-%d\"><link_ctn id=\"pcie-%d\" direction=\"UP\"/></route>\n", g,
                n, g);
        fprintf(f,
                "    <route src=\"gpu-%d\" dst=\"pfs\"><link_ctn id=\"pcie-%d\" direction=\"UP\"/>"
                "<link_ctn id=\"snic-%d\" direction=\"UP\"/><link_ctn id=\"pfs\"/></route>\n",
                g, g, n);
    }
    for (int n = 0; n < c->nodes; n++)
        fprintf(f, "    <route src=\"host-%d\" dst=\"pfs\"><link_ctn id=\"snic-%d\" direction=\"UP\"/><link_ctn id=\"pfs\"/></route>\n",
                n, n);
    fprintf(f, "  </zone>\n</platform>\n");
    return ferror(f) ? -1 : 0;
}

int rail_fabric_write_xml(const scenario *s, const char *path, moe_error *err) {
    const cluster_cfg *c = &s->cluster;
    char v[64];
    int G = c->nodes * c->gpus_per_node;
    if (fabric_check_cluster(s, err)) return err->code;
    if (fabric_ecmp(c))   /* a host pair has one route there; ecmp routes each queue pair on its own port */
        return moe_error_input(err, s->file, "cluster.path_selection", "ecmp",
                               "\"adaptive\" for the XML dump (it writes the uplink bundles as one link each); the "
                               "ecmp fabric is built in the process (sim/simgrid/rail_fabric.cpp)");
    if (G > RAIL_XML_MAX_GPUS) {
        snprintf(v, sizeof v, "%d GPUs", G);
        return moe_error_input(err, s->file, "cluster.nodes", v,
                               "at most %d GPUs for the XML dump (it lists every route: N^2); dump a smaller "
                               "cluster of the same fabric, e.g. cluster.nodes = %d",
                               RAIL_XML_MAX_GPUS, RAIL_XML_MAX_GPUS / c->gpus_per_node);
    }
    atomic_file af;
    int rc = atomic_file_open(&af, path, err);
    if (rc) return rc;
    if (write_body(af.f, s) != 0) {
        atomic_file_abort(&af);
        return moe_error_set(err, EXIT_RUNTIME, "%s: cannot write the platform: %s", path, strerror(errno));
    }
    return atomic_file_commit(&af, err);
}
