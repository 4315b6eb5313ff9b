/* link_loss.h — the goodput of a link that drops packets (faults.links[*].loss_rate), and the one
 * bandwidth factor of a GPU's NIC or NVLink, or of a leaf's uplink to the spine, under faults.links
 * that every executor applies.
 *
 * Why in the scenario layer: the factor is the one rule both the fabric's links (platforms/,
 * sim/simgrid/) and the step program's resolved faults (sim/program/faults.h) are built with, and
 * the scenario layer is the lowest both see.
 *
 * A lossy link keeps goodput_frac of its bandwidth (a fluid average over many packets):
 *
 *   go-back-N   goodput_frac = (1 - p) / (1 + p W)
 *   selective   goodput_frac = 1 - p
 *
 * p: the probability that one packet is lost on the link (CRC error: the receiver drops it).
 * W: the packets the sender puts on the wire during one round trip after a packet, before it can
 *    learn of that packet's loss: W = rate x RTT / MTU, the bandwidth-delay product in packets.
 *
 * Go-back-N: a loss costs the lost packet and the W sent behind it (the receiver drops every packet
 * after a gap and NACKs; the sender resends from the gap), so a delivered packet takes on average
 * 1 + p W / (1 - p) packet times. This is the classical go-back-N throughput efficiency
 * (1 - P) / (1 + (m - 1) P) with m = W + 1 the round trip counted in packet times, including the lost
 * packet's own: Lin, Costello and Miller, "Automatic-repeat-request error-control schemes", IEEE
 * Communications Magazine 22(12), 1984 (written p' / (p' + m (1 - p')) with p' = 1 - P the success
 * probability in later go-back-N analyses). That InfiniBand RC, and RoCE NICs that adopt its transport, recover losses by
 * go-back-N on a NACK: Mittal et al., "Revisiting network support for RDMA", SIGCOMM 2018, section 2.
 * Selective retransmission resends only the lost packet: one packet time per loss, 1 - p. Mittal et
 * al. propose it for RoCE NICs (IRN); whether a given NIC generation does it is not claimed here.
 *
 * What the numbers are, for the fabric's NIC links and its leaf uplinks (cluster_cfg):
 *   rate  the link's rate as the fabric runs it: cluster.nic_gbps x its faults.links factors (in the
 *         simulation the cost model's achieved RDMA rate, costmodel_fabric_cluster); for an uplink
 *         the same: one sender's queue pair crosses one port of the bundle at most at its NIC's rate;
 *   RTT   2 x cluster.latency_us.cross_leaf: a round trip through the spine, the path most of a
 *         large EP group's traffic takes;
 *   MTU   4096 B, the largest path MTU of InfiniBand, which RoCE's transport inherits (InfiniBand
 *         Architecture Specification vol. 1: PMTU 256..4096 bytes); no scenario field sets it.
 * H800 preset: 400 Gb/s, RTT 7.4 us: W = 50e9 x 7.4e-6 / 4096 = 90.3 packets, so one CRC error in
 * 10,000 packets keeps 0.9910 of the bandwidth and one in 100 keeps 0.520 (selective: 0.9999, 0.99).
 *
 * Not modelled: the retransmission timeout (a lost last packet of a message, a lost NACK: no RTO
 * value to cite for these NICs), the pause frames a slowed port sends upstream under PFC, ECN and
 * congestion control reacting to the loss, packet trimming. Losses on NVLink are refused (it retries
 * at the link layer, another mechanism).
 *
 * A leaf uplink (kind "uplink") is the bundle of a leaf's spine-facing ports on one rail, which the
 * fabric models as one link under cluster.path_selection "adaptive" (traffic spread evenly over the
 * bundle: platforms/fabric_geometry.h); under "ecmp" every port of the bundle gets the factor. A fault
 * on one port of it is priced as the whole bundle at that port's rate: with traffic spread evenly,
 * every port carries 1/k of the bundle's bytes and the pattern ends when the slowest port has
 * drained its share, (bytes / k) / (rate x factor x goodput), which is the bundle drained at
 * factor x goodput. Flows hashed onto the healthy ports finish earlier in reality; the makespan is
 * the same. */
#ifndef MOESIM_LINK_LOSS_H
#define MOESIM_LINK_LOSS_H

#include "sim/scenario/scenario_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LINK_MTU_B 4096.0   /* InfiniBand's largest path MTU (see above) */

/* The fraction of its bandwidth a link that loses loss_p of its packets delivers, with window_pkts
 * packets sent per round trip: 1 exactly when loss_p is 0. */
double link_goodput_frac(double loss_p, double window_pkts, retx_kind scheme);

/* Packets in flight during one round trip: rate_Bps x rtt_s / mtu_B. */
double link_window_pkts(double rate_Bps, double rtt_s, double mtu_B);

/* The round trip a NIC link's window covers: 2 x cluster.latency_us.cross_leaf (seconds). */
double link_rtt_s(const cluster_cfg *c);

/* How long a reliable-connection queue pair keeps resending a packet that is never acknowledged
 * before it fails ("transport retry counter exceeded", which NCCL reports as an error that aborts the
 * job): the first send and nccl_ib_retry_cnt resends, each waiting out the local ACK timeout
 * 4.096 us x 2^nccl_ib_timeout (InfiniBand Architecture Specification Vol. 1, the QP's Local ACK
 * Timeout and Retry Count; NCCL sets both from NCCL_IB_TIMEOUT and NCCL_IB_RETRY_CNT): NCCL's
 * defaults 20 and 7 give 8 x 4.295 s = 34.36 s. Seconds. */
double link_qp_retry_exhausted_s(const cluster_cfg *c);
/* One of those ACK timeouts: 4.096 us x 2^nccl_ib_timeout. Seconds. */
double link_qp_ack_timeout_s(const cluster_cfg *c);
/* When a lossless fabric discards a stalled receiver's queue (cluster.stall_discard_ms), in seconds;
 * INFINITY: never. */
double link_stall_discard_s(const cluster_cfg *c);

/* What one GPU's link runs at under faults.links, for a report. */
typedef struct {
    double factor;        /* product of its faults' bandwidth factors */
    double loss_rate;     /* 1 - the product of its faults' (1 - loss_rate): independent losses */
    double window_pkts;   /* at the degraded rate */
    double goodput_frac;  /* 1 without loss */
} link_state;

link_state faults_link_state(const cluster_cfg *c, const faults_cfg *f, int gpu, link_kind kind);

/* Bandwidth factor of GPU `gpu`'s NIC or NVLink under faults.links: 1 when healthy, the product of
 * the factors of every fault on that link, times the goodput of its losses. The one rule for both
 * the fabric's links (platforms/fabric_geometry.h) and the step program (sim/program/faults.h). */
double faults_link_factor(const cluster_cfg *c, const faults_cfg *f, int gpu, link_kind kind);

/* The same for the uplink of leaf `leaf` of rail `rail` to its spine layer (the fabric's link
 * up-rR-lL, both directions: platforms/fabric_geometry.h): faults.links entries of kind "uplink".
 * The window is counted at the NIC's line rate x the factor, as for a NIC (link_loss.c: one sender's
 * queue pair, whose packets a lossy port drops). */
link_state faults_uplink_state(const cluster_cfg *c, const faults_cfg *f, int rail, int leaf);
double faults_uplink_factor(const cluster_cfg *c, const faults_cfg *f, int rail, int leaf);

/* 1 when some faults.links entry sits on a leaf uplink (kind "uplink"). */
int faults_any_uplink(const faults_cfg *f);

/* 1 when some faults.links entry has a loss_rate above 0. */
int faults_any_lossy(const faults_cfg *f);

#ifdef __cplusplus
}
#endif
#endif
