/* link_loss.c — goodput of a lossy link and the bandwidth factor of faults.links (link_loss.h). */
#include "sim/scenario/link_loss.h"

#include <math.h>

double link_goodput_frac(double loss_p, double window_pkts, retx_kind scheme) {
    if (loss_p == 0.0) return 1.0;   /* exactly: a healthy link's results must not move by a bit */
    if (scheme == RETX_SELECTIVE) return 1.0 - loss_p;
    return (1.0 - loss_p) / (1.0 + loss_p * window_pkts);
}

double link_window_pkts(double rate_Bps, double rtt_s, double mtu_B) { return rate_Bps * rtt_s / mtu_B; }

double link_rtt_s(const cluster_cfg *c) { return 2.0 * c->latency_us.cross_leaf * 1e-6; }

/* The line rate the window is counted at: cluster.nic_gbps in bytes/s (fabric_nic_Bps's rule; the
 * platforms layer is above this one). NVLink never carries a loss (scenario_validate refuses it). */
static double nic_Bps(const cluster_cfg *c) { return c->nic_gbps * 1e9 / 8.0; }

/* Does fault `lf` sit on the link (kind, gpu) or, for an uplink, (kind, rail, leaf)? */
static int fault_on(const link_fault *lf, link_kind kind, int gpu, int rail, int leaf) {
    if (lf->kind != kind) return 0;
    return kind == LINK_UPLINK ? lf->rail == rail && lf->leaf == leaf : lf->gpu == gpu;
}

/* The faults of one link composed. The window is one sender's: a queue pair runs at most at its NIC's
 * line rate, and go-back-N resends what that sender put on the wire behind a lost packet, so a spine-
 * facing uplink port counts its window at the NIC rate x the port's factor, like a NIC (the uplink
 * ports of the fabric run at the NIC's line rate: fabric_uplink_Bps is leaf_down_ports / oversubscription
 * of them). */
static link_state state_of(const cluster_cfg *c, const faults_cfg *f, link_kind kind, int gpu, int rail, int leaf) {
    link_state st = {.factor = 1.0, .loss_rate = 0.0, .window_pkts = 0.0, .goodput_frac = 1.0};
    for (int i = 0; i < f->n_links && i < SCN_MAX_FAULTS; i++) {
        const link_fault *lf = &f->links[i];
        if (!fault_on(lf, kind, gpu, rail, leaf)) continue;
        st.factor *= lf->factor;
        /* independent losses: P(lost) = 1 - prod(1 - p_i), summed as a union so that one fault's
         * loss_rate is kept exactly */
        st.loss_rate += lf->loss_rate - st.loss_rate * lf->loss_rate;
    }
    if (st.loss_rate == 0.0) return st;
    st.window_pkts = link_window_pkts(st.factor * nic_Bps(c), link_rtt_s(c), LINK_MTU_B);
    st.goodput_frac = link_goodput_frac(st.loss_rate, st.window_pkts, c->retransmission);
    return st;
}

static double factor_of(link_state st) { return st.goodput_frac == 1.0 ? st.factor : st.factor * st.goodput_frac; }

link_state faults_link_state(const cluster_cfg *c, const faults_cfg *f, int gpu, link_kind kind) {
    return state_of(c, f, kind, gpu, -1, -1);
}

double faults_link_factor(const cluster_cfg *c, const faults_cfg *f, int gpu, link_kind kind) {
    if (f->n_links == 0) return 1.0;
    return factor_of(state_of(c, f, kind, gpu, -1, -1));
}

link_state faults_uplink_state(const cluster_cfg *c, const faults_cfg *f, int rail, int leaf) {
    return state_of(c, f, LINK_UPLINK, -1, rail, leaf);
}

double faults_uplink_factor(const cluster_cfg *c, const faults_cfg *f, int rail, int leaf) {
    if (f->n_links == 0) return 1.0;
    return factor_of(state_of(c, f, LINK_UPLINK, -1, rail, leaf));
}

int faults_any_uplink(const faults_cfg *f) {
    for (int i = 0; i < f->n_links && i < SCN_MAX_FAULTS; i++)
        if (f->links[i].kind == LINK_UPLINK) return 1;
    return 0;
}

int faults_any_lossy(const faults_cfg *f) {
    for (int i = 0; i < f->n_links && i < SCN_MAX_FAULTS; i++)
        if (f->links[i].loss_rate > 0) return 1;
    return 0;
}

double link_qp_ack_timeout_s(const cluster_cfg *c) { return 4.096e-6 * ldexp(1.0, c->nccl_ib_timeout); }

double link_qp_retry_exhausted_s(const cluster_cfg *c) { return (c->nccl_ib_retry_cnt + 1) * link_qp_ack_timeout_s(c); }

double link_stall_discard_s(const cluster_cfg *c) { return c->stall_discard_ms > 0 ? c->stall_discard_ms * 1e-3 : INFINITY; }
