/* pfc_spread.c — PFC congestion spreading in closed form (pfc_spread.h). */
#include "sim/exec/pfc_spread.h"
#include "sim/base/alloc.h"
#include "sim/exec/deepep_flows.h"
#include "sim/scenario/link_loss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lossless (PFC) ports, whose queues pause their feeders: a switch egress (or a NIC's send link);
 * the spine and core layers (non-blocking) and NVLink are passed through. */
static int is_port(fabric_link_class k) {
    return k == FL_NIC_UP || k == FL_UPLINK_UP || k == FL_UPLINK_DOWN || k == FL_NIC_DOWN || k == FL_POD_UP ||
           k == FL_POD_DOWN;
}

typedef struct {
    double *drain[FL_NCLASSES];    /* per link: bytes / bandwidth */
    double *held[FL_NCLASSES];     /* per link: held time under PFC */
    double *stop[FL_NCLASSES];     /* per link: how long it cannot send at all (behind a stalled receiver) */
    fabric_hop *cause[FL_NCLASSES];
} link_tables;

static void tables_free(link_tables *t) {
    for (int k = 0; k < FL_NCLASSES; k++) {
        free(t->drain[k]); free(t->held[k]); free(t->stop[k]); free(t->cause[k]);
    }
}

static int tables_init(link_tables *t, const cluster_cfg *c) {
    memset(t, 0, sizeof *t);
    for (int k = 0; k < FL_NCLASSES; k++) {
        size_t n = (size_t)fabric_class_size(c, (fabric_link_class)k);
        t->drain[k] = moe_xcalloc(n, sizeof(double));
        t->held[k] = moe_xcalloc(n, sizeof(double));
        t->stop[k] = moe_xcalloc(n, sizeof(double));
        t->cause[k] = moe_xcalloc(n, sizeof(fabric_hop));
        if (!t->drain[k] || !t->held[k] || !t->stop[k] || !t->cause[k]) return -1;
    }
    return 0;
}

static double *slot(double *const tab[FL_NCLASSES], fabric_hop h) { return &tab[h.cls][h.index]; }

void pfc_result_free(pfc_result *r) {
    free(r->finish_lossy_s); free(r->finish_s); free(r->paused); free(r->pattern_first);
    memset(r, 0, sizeof *r);
}

void pfc_link_name(const cluster_cfg *c, fabric_hop h, char *buf, size_t len) {
    char base[64];
    int dir = fabric_link_name(c, h, base, sizeof base);
    snprintf(buf, len, "%s%s", base, dir == 1 ? "_UP" : dir == 2 ? "_DOWN" : "");
}

/* Route of every flow (FABRIC_MAX_HOPS per flow), computed once. */
typedef struct {
    fabric_hop h[FABRIC_MAX_HOPS];
    int n;
    double lat_s;
} flow_route;

int pfc_spread(const cluster_cfg *c, const faults_cfg *f, const gpu_flow *v, size_t n, const pfc_opts *o,
               pfc_result *r) {
    memset(r, 0, sizeof *r);
    r->hot_gpu = -1;
    r->worst_victim = -1;
    r->root.cls = FL_NCLASSES;
    const int G = c->nodes * c->gpus_per_node;
    int stalled = o && o->stalled_gpu >= 0 && o->stalled_gpu < G ? o->stalled_gpu : -1;
    link_tables t;
    flow_route *rt = n ? moe_xmalloc(n * sizeof *rt) : NULL;
    double *recv = moe_xcalloc((size_t)G, sizeof *recv);
    unsigned char *held_gpu = moe_xcalloc((size_t)G, 1);
    r->n_flows = n;
    r->finish_lossy_s = n ? moe_xmalloc(n * sizeof(double)) : NULL;
    r->finish_s = n ? moe_xmalloc(n * sizeof(double)) : NULL;
    int rc = -1;
    if (tables_init(&t, c) || (n && (!rt || !r->finish_lossy_s || !r->finish_s)) || !recv || !held_gpu) goto out;

    /* per-link bytes -> drain times; received bytes per GPU */
    for (size_t i = 0; i < n; i++) {
        if (v[i].src_gpu < 0 || v[i].src_gpu >= G || v[i].dst_gpu < 0 || v[i].dst_gpu >= G) goto out;
        rt[i].n = fabric_gpu_route(c, v[i].src_gpu, v[i].dst_gpu, rt[i].h);
        rt[i].lat_s = 0;
        for (int j = 0; j < rt[i].n; j++) {
            fabric_hop h = rt[i].h[j];
            *slot(t.drain, h) += v[i].bytes;
            rt[i].lat_s += fabric_hop_lat_s(c, h);
            if (h.cls == FL_NIC_DOWN || h.cls == FL_NVL_DOWN) recv[h.index] += v[i].bytes;
        }
    }
    for (int k = 0; k < FL_NCLASSES; k++) {
        int m = fabric_class_size(c, (fabric_link_class)k);
        for (int x = 0; x < m; x++) {
            fabric_hop h = {(fabric_link_class)k, x};
            if (t.drain[k][x] > 0) t.drain[k][x] /= fabric_hop_Bps(c, f, h);
            t.held[k][x] = t.drain[k][x];
            t.cause[k][x] = h;
        }
    }
    /* a receiver that stops draining: its port stops for good, or until the switch discards its queue
     * (cluster.stall_discard_ms: InfiniBand's head-of-queue lifetime, a PFC watchdog), after which what
     * was queued behind it moves on and what was bound for it is lost */
    fabric_hop stall_root = {FL_NIC_DOWN, stalled};
    double discard_s = link_stall_discard_s(c);
    if (stalled >= 0 && *slot(t.drain, stall_root) > 0) {
        *slot(t.held, stall_root) = discard_s;
        *slot(t.stop, stall_root) = discard_s;
    } else {
        stalled = -1;
    }

    /* the pause climbs from the receivers: the class order of every route is NIC up < uplink up <
     * pod uplink up < pod uplink down < uplink down < NIC down, so when a class is processed every
     * port downstream of it is final */
    static const fabric_link_class up_order[] = {FL_UPLINK_DOWN, FL_POD_DOWN, FL_POD_UP, FL_UPLINK_UP, FL_NIC_UP};
    for (size_t k = 0; k < sizeof up_order / sizeof *up_order; k++) {
        for (size_t i = 0; i < n; i++)
            for (int j = 0; j < rt[i].n; j++) {
                if (rt[i].h[j].cls != up_order[k]) continue;
                int m = j + 1;
                while (m < rt[i].n && !is_port(rt[i].h[m].cls)) m++;
                if (m == rt[i].n) continue;
                fabric_hop a = rt[i].h[j], b = rt[i].h[m];
                /* with ECN the senders of a congested egress slow down before it pauses: only a
                 * receiver that stops draining still fills the queues up the tree */
                if (c->ecn && !(*slot(t.stop, b) > 0)) continue;
                if (*slot(t.held, b) > *slot(t.held, a)) {
                    *slot(t.held, a) = *slot(t.held, b);
                    t.cause[a.cls][a.index] = t.cause[b.cls][b.index];
                }
                if (*slot(t.stop, b) > *slot(t.stop, a)) *slot(t.stop, a) = *slot(t.stop, b);
            }
        /* a port stopped behind a stalled receiver sends nothing until the discard frees it, then its
         * own bytes: stop + drain (the class is final before the next one up reads it) */
        for (int x = 0, nx = fabric_class_size(c, up_order[k]); x < nx; x++) {
            double st = t.stop[up_order[k]][x], hd = st + t.drain[up_order[k]][x];
            if (st > 0 && hd > t.held[up_order[k]][x]) t.held[up_order[k]][x] = hd;
        }
    }

    /* per flow: lossy and lossless finish; the hot receiver; victims */
    double best = 0;
    for (int g = 0; g < G; g++)
        if (recv[g] > best) { best = recv[g]; r->hot_gpu = g; }
    r->hot_gpu_bytes = best;
    for (size_t i = 0; i < n; i++) {
        double lossy = 0, pfc = 0;
        for (int j = 0; j < rt[i].n; j++) {
            fabric_hop h = rt[i].h[j];
            double d = *slot(t.drain, h), hd = is_port(h.cls) ? *slot(t.held, h) : d;
            if (d > lossy) lossy = d;
            if (hd > pfc) pfc = hd;
            /* a root is a switch egress, where a queue builds and PAUSE frames start (a NIC's own
             * send link has no switch queue behind it) */
            if (is_port(h.cls) && h.cls != FL_NIC_UP && d > r->root_drain_s) { r->root_drain_s = d; r->root = h; }
        }
        r->finish_lossy_s[i] = lossy + rt[i].lat_s;
        r->finish_s[i] = pfc + rt[i].lat_s;
        for (int j = 0; j < rt[i].n && stalled >= 0; j++)   /* bound for the stalled receiver: never delivered */
            if (rt[i].h[j].cls == stall_root.cls && rt[i].h[j].index == stall_root.index) r->finish_s[i] = INFINITY;
        if (r->finish_s[i] > r->finish_lossy_s[i] * (1 + 1e-9)) {
            held_gpu[v[i].src_gpu] = held_gpu[v[i].dst_gpu] = 1;
            if (v[i].src_gpu != r->hot_gpu && v[i].dst_gpu != r->hot_gpu) {
                double slow = r->finish_s[i] / r->finish_lossy_s[i];
                r->n_victims++;
                if (slow > r->max_victim_slowdown) {
                    r->max_victim_slowdown = slow;
                    r->worst_victim = (long)i;
                    r->worst_victim_src = v[i].src_gpu;
                    r->worst_victim_dst = v[i].dst_gpu;
                }
            }
        }
    }
    for (int g = 0; g < G; g++) r->n_held_gpus += held_gpu[g];
    if (stalled >= 0) *slot(t.held, stall_root) = INFINITY;   /* its own traffic never drains */

    /* paused links, by class then index (deterministic order) */
    for (int k = 0; k < FL_NCLASSES; k++) {
        if (!is_port((fabric_link_class)k)) continue;
        int m = fabric_class_size(c, (fabric_link_class)k);
        for (int x = 0; x < m; x++) {
            double d = t.drain[k][x], hd = t.held[k][x];
            if (d <= 0 || !(hd > d * (1 + 1e-9))) continue;
            pfc_link *nv = moe_xrealloc(r->paused, (size_t)r->n_paused + 1, sizeof *nv);
            if (!nv) goto out;
            r->paused = nv;
            r->paused[r->n_paused++] = (pfc_link){{(fabric_link_class)k, x}, d, hd, t.cause[k][x]};
        }
    }
    rc = 0;
out:
    tables_free(&t);
    free(rt); free(recv); free(held_gpu);
    return rc;
}

int pfc_spread_a2a(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *p, const pfc_opts *o,
                   pfc_result *r) {
    return pfc_spread_a2a_set(c, f, p, NULL, 1, o, r);
}

int pfc_spread_a2a_set(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *ps,
                       const unsigned char *reversed, int n, const pfc_opts *o, pfc_result *r) {
    gpu_flow_list fl = {0};
    memset(r, 0, sizeof *r);
    size_t *first = moe_xmalloc((size_t)(n > 0 ? n + 1 : 1) * sizeof *first);
    int rc = -1;
    if (!first) goto out;
    for (int i = 0; i < n; i++) {
        first[i] = fl.n;
        if (a2a_flows_build(c, &ps[i], &fl)) goto out;
        if (reversed && reversed[i])
            for (size_t k = first[i]; k < fl.n; k++) {
                int s = fl.v[k].src_gpu;
                fl.v[k].src_gpu = fl.v[k].dst_gpu;
                fl.v[k].dst_gpu = s;
            }
    }
    first[n > 0 ? n : 0] = fl.n;
    rc = pfc_spread(c, f, fl.v, fl.n, o, r);
    r->n_patterns = n > 0 ? n : 0;
    r->pattern_first = first;
    first = NULL;
out:
    free(first);
    gpu_flow_list_free(&fl);
    return rc;
}

void pfc_pattern_finish(const pfc_result *r, int i, double *lossy_s, double *pfc_s) {
    double l = 0, p = 0;
    for (size_t k = r->pattern_first[i]; k < r->pattern_first[i + 1]; k++) {
        if (r->finish_lossy_s[k] > l) l = r->finish_lossy_s[k];
        if (r->finish_s[k] > p) p = r->finish_s[k];
    }
    *lossy_s = l;
    *pfc_s = p;
}

int pfc_a2a_pauses(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *ps, const unsigned char *reversed,
                   int n, double *pause_s) {
    pfc_result r;
    int rc = pfc_spread_a2a_set(c, f, ps, reversed, n, NULL, &r);
    for (int i = 0; i < n; i++) {
        double lossy = 0, pfc = 0;
        if (rc == 0) pfc_pattern_finish(&r, i, &lossy, &pfc);
        pause_s[i] = pfc > lossy ? pfc - lossy : 0.0;
    }
    pfc_result_free(&r);
    return rc;
}
