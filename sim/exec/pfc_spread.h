/* pfc_spread.h — congestion spreading on a lossless fabric (PFC on RoCE, credits on InfiniBand), in
 * closed form (core; no SimGrid). The companion of the bottleneck model (comm_analytic.c): the same
 * flows (sim/exec/flows.h), the same links and routes (platforms/fabric_geometry.h).
 *
 * What it models. A RoCE fabric run lossless (cluster.pfc) never drops a packet: when the egress
 * queue of a switch port fills, the switch sends PFC PAUSE frames to the ingress ports that feed it,
 * and their senders stop transmitting on that priority. An incast at one receiver (a hot expert's
 * GPU) thus pauses the ports upstream of it, and every flow queued behind the paused traffic on those
 * ports waits too, whatever its destination: head-of-line blocking. The pause then climbs the tree:
 * a paused uplink fills the queues of the leaf ports that feed it, which pause their NICs.
 *
 * The fluid form computed here, for flows that start together:
 *   drain(l)  = bytes crossing link l / its bandwidth        (the bottleneck model's per-link time)
 *   lossy     flow f ends at max over its links of drain(l)  (+ its route latency): every link serves
 *             its flows FIFO-mixed at line rate; congestion control paces what a full egress drops
 *   lossless  held(l) = max(drain(l), held(m) for every link m directly downstream of l on any flow
 *             through l), and flow f ends at max over its links of held(l) (+ latency).
 * "Directly downstream" follows the lossless hops of a route: NIC up -> leaf uplink up -> (the spine
 * layer, non-blocking, is passed through) -> [across pods: pod uplink up -> (the core, passed
 * through) -> pod uplink down ->] leaf uplink down -> NIC down. The rule is what FIFO ports
 * give: a port that carries bytes for a paused egress forwards them at the rate that egress grants,
 * and everything mixed with them in its queue at the same pace, so the port drains when the paused
 * egress does. Routes follow the link classes in a fixed order, so one pass per class from the
 * receivers up computes the fixed point exactly.
 *
 * ECN (cluster.ecn: DCQCN on RoCE, congestion control on InfiniBand): a switch egress marks packets
 * once its queue passes a threshold below the pause threshold, the receivers echo the marks and the
 * senders of the marked flows cut their rate, so the congested egress is fed at the rate it drains
 * and never pauses its feeders: held(l) = drain(l) for every link, the lossy finish for every flow
 * (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015). The fluid limit:
 * the rate control's convergence (its transient queue and pauses) is not modelled. A receiver that
 * stops draining is different: marking cannot slow its senders to zero before the queues fill, and
 * its pause climbs as without ECN.
 *
 * Assumptions and limits (say them when quoting a result):
 *   - one lossless priority for all traffic (what RoCE training fabrics run), FIFO per ingress port,
 *     switch buffers small against the transfers (a pause reaches upstream at once); PFC XON/XOFF
 *     hysteresis, pause-frame latency and headroom are not modelled (they only add to the stalls);
 *   - every link serves its flows mixed in proportion to their bytes; a real port may favour some
 *     (parking-lot unfairness) and let a victim finish earlier or later than the paused egress;
 *   - NVLink hops (intra-node, and the PXN / DeepEP forwarding hop) are not PFC ports: they neither
 *     pause nor are paused (NVLink is credit-based and private to a node);
 *   - work conservation: the pause never lengthens the most loaded link, so the makespan of one set
 *     of flows is unchanged; what spreads is who finishes late. In a synchronous step every group
 *     waits for its hot receiver anyway, so the step time moves only through traffic that shares the
 *     paused ports and does not wait for it (other groups, other jobs), and through a receiver that
 *     stops draining altogether (stalled_gpu below: the pause storm of the cascading hang);
 *   - no PFC deadlock (cyclic buffer dependencies): routes on the rail fabric are up-down, acyclic;
 *   - an InfiniBand fabric (cluster.transport "infiniband", which sets cluster.pfc) gives the same
 *     spreading: its link-level flow control is credit-based per virtual lane, and a receive buffer out
 *     of credits stops the sender on that lane for every packet queued behind (NVIDIA/Mellanox, "HowTo
 *     Prevent InfiniBand Credit Loops", community.mellanox.com DOC-2774: lanes do not interfere, traffic
 *     within one does), while NCCL puts all its traffic on one service level (NCCL User Guide,
 *     Environment Variables: NCCL_IB_SL, default 0), hence one lane: the one lossless class modelled
 *     here. What differs, PAUSE frames' reach to other priorities against per-lane credits, is outside
 *     one class.
 *
 * A stalled receiver's queue discarded (cluster.stall_discard_ms = T > 0: InfiniBand's head-of-queue
 * lifetime, on by default there; a RoCE switch's PFC watchdog with its drop action): the stalled NIC's
 * port stops for T, then the switch drops what it holds and what arrives for it. Every port upstream
 * of it sends nothing for T (stop(l) = T along the tree), then its own bytes: held(l) = max(held(l),
 * T + drain(l)), folded in class by class so that the next class up reads it final. The flows bound
 * for the stalled receiver are lost (finish INFINITY); the rest of its tree is released at T, not held
 * forever. ECN does not shorten it (a receiver that stopped cannot be paced). Without the discard, T is
 * infinite: the tree is held forever, as before the field.
 */
#ifndef MOESIM_PFC_SPREAD_H
#define MOESIM_PFC_SPREAD_H

#include <stddef.h>

#include "sim/exec/comm.h"
#include "sim/exec/flows.h"
#include "platforms/fabric_geometry.h"

typedef struct {
    fabric_hop link;
    double drain_s;            /* its own bytes / bandwidth */
    double held_s;             /* how long it is busy under PFC (> drain_s: paused); INFINITY: never
                                  drains (behind a stalled receiver) */
    fabric_hop cause;          /* the congested link whose pause reaches it (the root of its tree) */
} pfc_link;

typedef struct {
    int stalled_gpu;           /* >= 0: this GPU's NIC stops draining (a receiver that does not
                                  consume: the pause storm); -1: none */
} pfc_opts;

typedef struct {
    size_t n_flows;
    double *finish_lossy_s;    /* per flow: without PFC */
    double *finish_s;          /* per flow: with PFC (INFINITY: held forever by a stalled receiver) */
    int hot_gpu;               /* the GPU that receives the most bytes (NIC + NVLink down); -1: none */
    double hot_gpu_bytes;
    fabric_hop root;           /* the lossless link with the largest drain time (the incast) */
    double root_drain_s;
    int n_paused;              /* lossless links held longer than their own drain, by class, index */
    pfc_link *paused;
    size_t n_victims;          /* flows that neither start nor end at hot_gpu and finish later with
                                  PFC than without */
    double max_victim_slowdown;/* finish_s / finish_lossy_s of the worst victim (INFINITY: held) */
    long worst_victim;         /* its flow index; -1: no victim */
    int worst_victim_src, worst_victim_dst;   /* its GPUs (the last hop's: a landing GPU for DeepEP RDMA) */
    int n_held_gpus;           /* GPUs with a flow (sent or received) that PFC delays; with a stalled
                                  receiver: that never completes */
    int n_patterns;            /* pfc_spread_a2a_set: all-to-all i's flows are [pattern_first[i],
                                  pattern_first[i + 1]); 0 and NULL from pfc_spread */
    size_t *pattern_first;
} pfc_result;

/* Analyse flows v[0, n) on the fabric of c (faults f applied to link bandwidths). 0, or -1 when out
 * of memory or a flow names a GPU outside the cluster. Free r with pfc_result_free in every case. */
int pfc_spread(const cluster_cfg *c, const faults_cfg *f, const gpu_flow *v, size_t n, const pfc_opts *o,
               pfc_result *r);
/* The same for one all-to-all (its DeepEP flows and its concurrent copies: deepep_flows.h). */
int pfc_spread_a2a(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *p, const pfc_opts *o,
                   pfc_result *r);
/* Several all-to-alls that run at the same time and share the fabric (the EP groups of one stage,
 * each with its own routing sample): the union of their flows (each pattern's own concurrent copies
 * included: give concurrent_groups = 1 when every group is listed). reversed[i] != 0 (reversed may be
 * NULL): pattern i is a combine given as its mirror image (program.h "Routing"), and its flows are
 * turned back into their real direction, because a pause is not direction-symmetric: the combine's
 * hot GPU sends, and a sender's own link is never paused. r->pattern_first says which flows are
 * whose. */
int pfc_spread_a2a_set(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *ps,
                       const unsigned char *reversed, int n, const pfc_opts *o, pfc_result *r);
/* When all-to-all i of a set (pfc_spread_a2a_set) completes: its last flow's end without PFC
 * (*lossy_s) and with it (*pfc_s); 0 for a pattern without flows. */
void pfc_pattern_finish(const pfc_result *r, int i, double *lossy_s, double *pfc_s);
/* The feed into the step (step_exec.h "Lossless fabric"): what PFC adds to all-to-all i of a set,
 * pause_s[i] = its end with PFC less its end without, both with the whole set on the fabric (one
 * model on both sides: the pause is PFC's doing alone, not the other groups' share of a port, which
 * a lossy fabric would see too, nor the distance between this closed form and the caller's comm
 * model). The caller adds it to the all-to-all's own time: with the closed form (comm_analytic.c) and
 * nothing else on the shared ports, own + pause is the flows' end under PFC. 0, or -1 as
 * pfc_spread_a2a_set (pauses then 0). */
int pfc_a2a_pauses(const cluster_cfg *c, const faults_cfg *f, const a2a_pattern *ps, const unsigned char *reversed,
                   int n, double *pause_s);
void pfc_result_free(pfc_result *r);

/* A link's name as the SimGrid platform spells it (rail_fabric.h: "nic-G_UP", "up-rR-lL_DOWN", ...). */
void pfc_link_name(const cluster_cfg *c, fabric_hop h, char *buf, size_t len);

#endif
