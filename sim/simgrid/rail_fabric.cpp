/* rail_fabric.cpp — the rail-optimized fabric as a SimGrid netzone with arithmetic routing.
 *
 * SimGrid's stock zones either store routes (Full: N^2, Floyd: N^2 memory and N^3 time) or compose
 * them hierarchically through one gateway per zone pair, which cannot express "GPU k of every node on
 * rail k" together with a per-node NVLink domain for the same host. So the fabric is one netzone that
 * derives every route from the two host ids (NetZoneImpl::get_local_route), exactly as a rail switch
 * forwards: same node -> NVLink; same rail -> NIC, leaf, (uplink, spine, uplink), NIC; other rail ->
 * NVLink to the GPU of the destination's rail, then that rail (PXN). Host ids are creation order:
 * GPUs 0..G-1, node hosts G..G+N-1, the file system G+N, and under ecmp with Q > 1 queue pairs per
 * connection the senders of queue pairs 1..Q-1 of every GPU, G+N+1 + (q-1) G + g ("gpu-G-qpQ": the
 * route from one of them is its GPU's, on the port queue pair q hashes onto; queue pair 0 is the GPU).
 * Under ecmp the uplink bundles are U ports each, "up-rR-lL-pP" (fabric_geometry.h).
 */
#include "sim/simgrid/rail_fabric.h"
#include "platforms/fabric_geometry.h"

#include <simgrid/engine.h>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;
namespace kr = simgrid::kernel::routing;
using LinkImplP = simgrid::kernel::resource::StandardLinkImpl *;

namespace {

/* One direction of a link, with its latency cached (the impl type is opaque outside SimGrid). */
struct Hop {
    LinkImplP impl = nullptr;
    double lat_s = 0;
};
struct Duplex {
    Hop up, down;
};

class RailZone : public kr::NetZoneImpl {
  public:
    RailZone(const std::string &name, const cluster_cfg &c, uint64_t seed)
        : kr::NetZoneImpl(name), c_(c), seed_(seed) {}

    void build(const faults_cfg &faults);
    sg4::Host *gpu(int g) const { return gpus_[(size_t)g]; }
    sg4::Host *node_host(int n) const { return node_hosts_[(size_t)n]; }
    sg4::Host *pfs() const { return pfs_host_; }
    /* The sender of queue pair q of a GPU host (the host itself for q = 0 or another host). */
    sg4::Host *qp_host(sg4::Host *h, int q) const {
        const long id = (long)h->get_netpoint()->id();
        if (q <= 0 || id >= n_gpus_ || qp_hosts_.empty()) return h;
        return qp_hosts_[(size_t)(q - 1) * (size_t)n_gpus_ + (size_t)id];
    }

  protected:
    void get_local_route(const kr::NetPoint *src, const kr::NetPoint *dst, kr::Route *route,
                         double *latency) override;

  private:
    cluster_cfg c_;
    uint64_t seed_;
    int n_gpus_ = 0;
    std::vector<sg4::Host *> gpus_, node_hosts_, qp_hosts_;
    sg4::Host *pfs_host_ = nullptr;
    std::vector<Duplex> nvl_, nic_, pcie_, snic_, uplink_; /* uplink_[rail * leaves + leaf] */
    std::vector<Duplex> port_;                              /* ecmp: port_[uplink index * U + port] */
    std::vector<Hop> spine_;                                /* spine_[rail * pods + pod] */
    std::vector<Duplex> pod_;                               /* a pod's core uplink: pod_[rail * pods + pod] */
    std::vector<Hop> core_;                                 /* per rail (pods > 1 only) */
    Hop pfs_;

    Duplex duplex(const std::string &name, double Bps, double lat_s);
    static void push(kr::Route *r, double *lat, const Hop &h) {
        r->link_list_.push_back(h.impl);
        if (lat) *lat += h.lat_s;
    }
    void route_gpu_to_gpu(int src, int dst, int qp, kr::Route *r, double *lat) const;
};

Duplex RailZone::duplex(const std::string &name, double Bps, double lat_s) {
    sg4::SplitDuplexLink *l = get_iface()->create_split_duplex_link(name, Bps);
    l->set_latency(lat_s);
    l->seal();
    Duplex d;
    d.up = {l->get_link_up()->get_impl(), lat_s};
    d.down = {l->get_link_down()->get_impl(), lat_s};
    return d;
}

void RailZone::build(const faults_cfg &faults) {
    const int G = c_.nodes * c_.gpus_per_node, L = fabric_leaves_per_rail(&c_);
    n_gpus_ = G;
    sg4::NetZone *z = get_iface();
    const double gpu_flops = c_.gpu.bf16_tflops * 1e12;
    for (int g = 0; g < G; g++) gpus_.push_back(z->create_host("gpu-" + std::to_string(g), gpu_flops)->seal());
    for (int n = 0; n < c_.nodes; n++)
        node_hosts_.push_back(z->create_host("host-" + std::to_string(n), 1e11)->seal());
    pfs_host_ = z->create_host("pfs", 1e11)->seal();
    for (int q = 1; q < fabric_qps(&c_); q++)
        for (int g = 0; g < G; g++)
            qp_hosts_.push_back(z->create_host("gpu-" + std::to_string(g) + "-qp" + std::to_string(q), gpu_flops)->seal());

    for (int g = 0; g < G; g++) {
        nvl_.push_back(duplex("nvl-" + std::to_string(g),
                              fabric_nvlink_Bps(&c_) * faults_link_factor(&c_, &faults, g, LINK_NVLINK),
                              fabric_nvl_lat_s(&c_)));
        nic_.push_back(duplex("nic-" + std::to_string(g),
                              fabric_nic_Bps(&c_) * faults_link_factor(&c_, &faults, g, LINK_NIC),
                              fabric_nic_lat_s(&c_)));
        pcie_.push_back(duplex("pcie-" + std::to_string(g), fabric_pcie_Bps(&c_), 0.0));
    }
    const int U = fabric_uplink_ports(&c_);
    for (int r = 0; r < c_.rails; r++) {
        for (int l = 0; l < L; l++) {
            const std::string name = "up-r" + std::to_string(r) + "-l" + std::to_string(l);
            if (!fabric_ecmp(&c_)) {
                uplink_.push_back(duplex(name, fabric_uplink_Bps_faulty(&c_, &faults, r * L + l), fabric_uplink_lat_s(&c_)));
                continue;
            }
            for (int p = 0; p < U; p++)
                port_.push_back(duplex(name + "-p" + std::to_string(p), fabric_port_Bps_faulty(&c_, &faults, r * L + l),
                                       fabric_uplink_lat_s(&c_)));
        }
        /* one pod: "spine-rR" as the two-tier fabric; pods: "spine-rR-pP", "pod-rR-pP", "core-rR" */
        const int P = fabric_pods(&c_);
        for (int pod = 0; pod < P; pod++) {
            const std::string sfx = "-r" + std::to_string(r) + (P > 1 ? "-p" + std::to_string(pod) : "");
            sg4::Link *sp = z->create_link("spine" + sfx, fabric_spine_Bps(&c_))
                                ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                                ->seal();
            spine_.push_back({sp->get_impl(), 0.0});
            if (P > 1) pod_.push_back(duplex("pod" + sfx, fabric_pod_uplink_Bps(&c_), fabric_pod_lat_s(&c_)));
        }
        if (P > 1) {
            sg4::Link *co = z->create_link("core-r" + std::to_string(r), fabric_core_Bps(&c_))
                                ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                                ->seal();
            core_.push_back({co->get_impl(), 0.0});
        }
    }
    for (int n = 0; n < c_.nodes; n++)
        snic_.push_back(duplex("snic-" + std::to_string(n), fabric_storage_nic_Bps(&c_), fabric_nic_lat_s(&c_)));
    /* The file system is one shared resource: every writer divides its aggregate bandwidth. */
    pfs_ = {z->create_link("pfs", fabric_storage_Bps(&c_))->seal()->get_impl(), 0.0};
}

/* GPU to GPU: the route of fabric_flow_route() (fabric_geometry.h), mapped onto this zone's links. */
void RailZone::route_gpu_to_gpu(int src, int dst, int qp, kr::Route *r, double *lat) const {
    fabric_hop h[FABRIC_MAX_HOPS];
    const int n = fabric_flow_route(&c_, seed_, src, dst, qp, h);
    for (int i = 0; i < n; i++) {
        const size_t k = (size_t)h[i].index;
        switch (h[i].cls) {
        case FL_NVL_UP: push(r, lat, nvl_[k].up); break;
        case FL_NVL_DOWN: push(r, lat, nvl_[k].down); break;
        case FL_NIC_UP: push(r, lat, nic_[k].up); break;
        case FL_NIC_DOWN: push(r, lat, nic_[k].down); break;
        case FL_UPLINK_UP: push(r, lat, uplink_[k].up); break;
        case FL_UPLINK_DOWN: push(r, lat, uplink_[k].down); break;
        case FL_SPINE: push(r, lat, spine_[k]); break;
        case FL_PORT_UP: push(r, lat, port_[k].up); break;
        case FL_PORT_DOWN: push(r, lat, port_[k].down); break;
        case FL_POD_UP: push(r, lat, pod_[k].up); break;
        case FL_POD_DOWN: push(r, lat, pod_[k].down); break;
        case FL_CORE: push(r, lat, core_[k]); break;
        default: break;
        }
    }
}

void RailZone::get_local_route(const kr::NetPoint *src_p, const kr::NetPoint *dst_p, kr::Route *r,
                               double *lat) {
    const long G = n_gpus_, N = c_.nodes, PFS = G + N;
    long s = (long)src_p->id(), d = (long)dst_p->id();
    int qp = 0;
    if (s > PFS) { /* the sender of a GPU's queue pair qp >= 1 */
        qp = (int)((s - PFS - 1) / G) + 1;
        s = (s - PFS - 1) % G;
    }
    if (d > PFS) d = (d - PFS - 1) % G;
    if (s == d) return;
    const bool s_gpu = s < G, d_gpu = d < G;
    if (s_gpu && d_gpu) {
        route_gpu_to_gpu((int)s, (int)d, qp, r, lat);
        return;
    }
    /* Storage side: GPU -> PCIe -> host/storage NIC -> (storage network) -> file system. */
    const long s_node = s_gpu ? fabric_node_of(&c_, (int)s) : (s < PFS ? s - G : -1);
    const long d_node = d_gpu ? fabric_node_of(&c_, (int)d) : (d < PFS ? d - G : -1);
    if (s_gpu) push(r, lat, pcie_[(size_t)s].up);
    if (s_node >= 0 && d_node >= 0 && s_node == d_node) { /* GPU <-> its own host memory */
        if (d_gpu) push(r, lat, pcie_[(size_t)d].down);
        return;
    }
    if (s_node >= 0) push(r, lat, snic_[(size_t)s_node].up);
    if (s == PFS || d == PFS) push(r, lat, pfs_);
    if (d_node >= 0) push(r, lat, snic_[(size_t)d_node].down);
    if (d_gpu) push(r, lat, pcie_[(size_t)d].down);
}

RailZone *g_zone = nullptr;
cluster_cfg g_cluster;
faults_cfg g_faults;
uint64_t g_seed;   /* routes depend on it under ecmp only */

} // namespace

extern "C" int rail_fabric_init(const scenario *s, moe_error *err) {
    if (g_zone) {
        /* the platform is the cluster and its degraded links (slow GPUs and stalls are the executors';
         * cluster.pfc too: SimGrid's max-min sharing has no pause, the fast executor models it) */
        cluster_cfg want;
        memcpy(&want, &s->cluster, sizeof want);   /* padding too: compared bytewise */
        want.pfc = g_cluster.pfc;
        if (memcmp(&g_cluster, &want, sizeof g_cluster) == 0 && g_faults.n_links == s->faults.n_links &&
            memcmp(g_faults.links, s->faults.links, sizeof g_faults.links[0] * (size_t)s->faults.n_links) == 0 &&
            (!fabric_ecmp(&g_cluster) || g_seed == s->seed))
            return 0;
        return moe_error_set(err, EXIT_RUNTIME,
                             "SimGrid keeps one platform per process: a fabric is already built here; "
                             "simulate a different cluster in its own worker process");
    }
    if (fabric_check_cluster(s, err)) return err->code;
    if (sg4::Engine::is_initialized()) /* someone else's platform: cannot coexist */
        return moe_error_set(err, EXIT_RUNTIME, "a SimGrid engine already exists in this process");

    /* Why these settings (DESIGN.md "SimGrid facts"): CM02 is plain max-min sharing (LV08 scales
     * latency x13 and bandwidth x0.97 to fit TCP on Ethernet; RoCE/NVLink are calibrated through the
     * scenario's bandwidths instead); TCP-gamma 0 removes the window/RTT rate cap; cross-traffic off
     * avoids "Cannot saturate more a constraint" with large aggregated links. Under ecmp the sharing
     * is solved in full at every event (network/optim:Full) instead of CM02's lazy updates: with
     * flows hashed onto single ports, the lazy solver let a DeepEP dispatch push 54 MB through one
     * 50 GB/s port in 997.7 us (test_ecmp.c, the dispatch case), 8% faster than the port allows;
     * the full solver gives the port's drain time. Adaptive keeps the lazy solver (its results). */
    static char arg0[] = "moesim", a1[] = "--cfg=network/model:CM02", a2[] = "--cfg=network/TCP-gamma:0",
                a3[] = "--cfg=network/crosstraffic:0", a4[] = "--log=root.thres:warning",
                a5[] = "--cfg=network/optim:Full";
    static char *argv[] = {arg0, a1, a2, a3, a4, nullptr, nullptr};
    int argc = 5;
    if (fabric_ecmp(&s->cluster)) argv[argc++] = a5;
    simgrid_init(&argc, argv);

    g_zone = new RailZone("rail-fabric", s->cluster, s->seed);
    g_zone->build(s->faults);
    g_zone->get_iface()->seal();
    sg4::Engine::get_instance()->seal_platform();
    g_cluster = s->cluster;
    g_faults = s->faults;
    g_seed = s->seed;
    return 0;
}

extern "C" int rail_fabric_ready(void) { return g_zone != nullptr; }
extern "C" const cluster_cfg *rail_fabric_cluster(void) { return g_zone ? &g_cluster : nullptr; }
extern "C" sg_host_t rail_fabric_gpu_host(int gpu) { return g_zone ? g_zone->gpu(gpu) : nullptr; }
extern "C" sg_host_t rail_fabric_node_host(int node) { return g_zone ? g_zone->node_host(node) : nullptr; }
extern "C" sg_host_t rail_fabric_storage_host(void) { return g_zone ? g_zone->pfs() : nullptr; }
extern "C" int rail_fabric_qps(void) { return g_zone ? fabric_qps(&g_cluster) : 1; }
extern "C" sg_host_t rail_fabric_qp_host(sg_host_t host, int qp) { return g_zone ? g_zone->qp_host(host, qp) : host; }

extern "C" int rail_fabric_route(sg_host_t src, sg_host_t dst, char (*names)[64], int max, double *latency_s) {
    if (!g_zone) return -1;
    std::vector<sg4::Link *> links;
    double lat = 0;
    src->route_to(dst, links, &lat);
    if (latency_s) *latency_s = lat;
    int n = 0;
    for (sg4::Link *l : links) {
        if (n < max) snprintf(names[n], 64, "%s", l->get_cname());
        n++;
    }
    return n;
}

extern "C" double rail_fabric_link_bandwidth(const char *name) {
    if (!g_zone) return -1;
    sg4::Link *l = sg4::Link::by_name_or_null(name);
    return l ? l->get_bandwidth() : -1;
}
