/* comm_analytic.c — hand-computed bottleneck times on the rail fabric (the closed form).
 *
 * A set of flows that start together finishes, to first order, when its most loaded link has drained:
 *     T = max over links (bytes crossing the link / link bandwidth) + the longest route latency.
 * This is exact for one flow (bytes / bottleneck bandwidth + latency), for symmetric patterns, and for
 * patterns whose bottleneck link stays busy until the end (a hot receiver); it is a lower bound
 * otherwise. The flows are the ones the libraries really move (sim/exec/deepep_flows.h: DeepEP
 * aggregation; sim/exec/ring_flows.h: NCCL rings); links and routes come from platforms/fabric_geometry.h, the same definitions the
 * SimGrid platform is built from. Ring collectives: steps x (chunk / bottleneck + latency), i.e.
 * 2(n-1)/n x bytes / bw + 2(n-1) x latency for an all-reduce (REFERENCE.md §5).
 */
#include "sim/exec/comm.h"
#include "sim/base/alloc.h"
#include "sim/exec/deepep_flows.h"
#include "sim/exec/ring_flows.h"
#include "platforms/fabric_geometry.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    cluster_cfg c;
    faults_cfg f;
    uint64_t seed;              /* the scenario's: ecmp's port hash (fabric_ecmp_port) */
    double *load[FL_NCLASSES];  /* bytes per link, kept zero between calls */
    fabric_hop *touched;        /* links with a non-zero load, to reset them cheaply */
    size_t n_touched, cap_touched;
} analytic_ctx;

/* Add `bytes` to every link of a route; returns the route's latency. */
static double load_route(analytic_ctx *x, const fabric_hop *h, int k, double bytes) {
    double lat = 0;
    for (int j = 0; j < k; j++) {
        double *slot = &x->load[h[j].cls][h[j].index];
        if (*slot == 0) {
            if (x->n_touched == x->cap_touched) {
                size_t cap = x->cap_touched ? 2 * x->cap_touched : 1024;
                x->touched = moe_xrealloc(x->touched, cap, sizeof *x->touched);
                x->cap_touched = cap;
            }
            x->touched[x->n_touched++] = h[j];
        }
        *slot += bytes;
        lat += fabric_hop_lat_s(&x->c, h[j]);
    }
    return lat;
}

/* Sum the flows per link; returns the max link drain time, *max_lat the max route latency. Under
 * ecmp every flow is its queue pairs, each with 1/Q of the bytes on its hashed port
 * (fabric_flow_route). */
static double drain_s(analytic_ctx *x, const gpu_flow *v, size_t n, double *max_lat_s) {
    double max_lat = 0, max_t = 0;
    const int ecmp = fabric_ecmp(&x->c), Q = fabric_qps(&x->c);
    for (size_t i = 0; i < n; i++) {
        fabric_hop h[FABRIC_MAX_HOPS];
        double lat = 0;
        if (!ecmp) {
            lat = load_route(x, h, fabric_gpu_route(&x->c, v[i].src_gpu, v[i].dst_gpu, h), v[i].bytes);
        } else {
            for (int q = 0; q < Q; q++)
                lat = load_route(x, h, fabric_flow_route(&x->c, x->seed, v[i].src_gpu, v[i].dst_gpu, q, h),
                                 v[i].bytes / Q);
        }
        if (lat > max_lat) max_lat = lat;
    }
    for (size_t i = 0; i < x->n_touched; i++) {
        fabric_hop h = x->touched[i];
        double t = x->load[h.cls][h.index] / fabric_hop_Bps(&x->c, &x->f, h);
        if (t > max_t) max_t = t;
        x->load[h.cls][h.index] = 0;
    }
    x->n_touched = 0;
    *max_lat_s = max_lat;
    return max_t;
}

/* T = max link drain time + max route latency. */
static double drain_time_s(analytic_ctx *x, const gpu_flow *v, size_t n) {
    double lat, t = drain_s(x, v, n, &lat);
    return n ? t + lat : 0.0;
}

static double analytic_a2a_s(void *ctx, const a2a_pattern *p) {
    analytic_ctx *x = ctx;
    gpu_flow_list fl = {0};
    if (a2a_flows_build(&x->c, p, &fl)) {
        gpu_flow_list_free(&fl);
        return -1;
    }
    double t = drain_time_s(x, fl.v, fl.n);
    gpu_flow_list_free(&fl);
    return t;
}

static double analytic_p2p_s(void *ctx, int src, int dst, double bytes) {
    analytic_ctx *x = ctx;
    gpu_flow f = {src, dst, bytes, 0, FLOW_RDMA};
    return src == dst || bytes <= 0 ? 0.0 : drain_time_s(x, &f, 1);
}

/* A ring step's transfers without their latency (ring_flows.h). */
static double drain_list_bw_s(void *ctx, const gpu_flow_list *fl) {
    double lat;
    return drain_s(ctx, fl->v, fl->n, &lat);
}

static double analytic_collective_s(void *ctx, coll_kind kind, const int *gpus, int n, double bytes, int concurrent) {
    analytic_ctx *x = ctx;
    if (n < 2 || bytes <= 0) return 0.0;
    return ring_collective_s(&x->c, kind, gpus, n, bytes, concurrent, drain_list_bw_s, x);
}

static void analytic_destroy(void *ctx) {
    analytic_ctx *x = ctx;
    if (!x) return;
    for (int k = 0; k < FL_NCLASSES; k++) free(x->load[k]);
    free(x->touched);
    free(x);
}

comm_model comm_analytic_create(const scenario *s) {
    comm_model m = {0};
    analytic_ctx *x = moe_xcalloc(1, sizeof *x);
    if (!x) return m;
    x->c = s->cluster;
    x->f = s->faults;
    x->seed = s->seed;
    for (int k = 0; k < FL_NCLASSES; k++) {
        x->load[k] = moe_xcalloc((size_t)fabric_class_size(&x->c, (fabric_link_class)k), sizeof(double));
        if (!x->load[k]) {
            analytic_destroy(x);
            return m;
        }
    }
    m.ctx = x;
    m.name = "analytic";
    m.a2a_s = analytic_a2a_s;
    m.p2p_s = analytic_p2p_s;
    m.collective_s = analytic_collective_s;
    m.destroy = analytic_destroy;
    return m;
}
