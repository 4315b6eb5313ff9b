/* plan.c — the analytic level (plan.h): counts, ledgers, first-order step time, reliability.
 *
 * First-order step time, per pipeline rank and micro-batch; every kernel and transfer is priced by the
 * cost model (sim/plan/costmodel.h) the scenario names, the same functions the step level uses:
 *   compute   each layer's GEMMs on their real shapes, attention core, routed experts at uniform
 *             routing, memory-bound kernels (plan_compute.h); backward = input + weight gradients on
 *             the transposed shapes; recompute adds what memory.h's recompute kind drops.
 *   all-to-all dispatch + combine, forward + backward, per MoE layer, split into NVLink and RDMA bytes
 *             by how many EP ranks share a node; with node-limited routing (DeepEP) one RDMA copy per
 *             destination node; each of the 4 takes the slower of its two link classes
 *             (costmodel_link_s: alpha + bytes / beta).
 *   P2P       one activation (forward) and one gradient (backward) message per stage boundary.
 *   CP        context parallelism: each rank holds 1/cp of every sequence (all compute and activations
 *             scale with its tokens; attention its queries against the whole sequence); ring attention
 *             exposes per block what each key/value step takes beyond the chunk's attention, the
 *             all-gather variant its whole exchange (cp_exchange_s).
 *   ETP       the experts fold the stage as etp x ep x dp (layout.etp): each rank routes T x etp / tp
 *             tokens through its 1/etp slice of each expert (scn_routed_tokens).
 *   TP        with sequence parallelism, an all-gather before and a reduce-scatter after each block
 *             (attention, FFN/MoE), forward and backward: 8 ring collectives per layer, each moving
 *             (tp-1)/tp x T x h x 2 B per rank, over NVLink while the TP group fits in a node.
 *   exposure  1F1B and interleaved expose all communication; DualPipe overlaps it with the compute of
 *             the paired micro-batch and exposes only the excess (seed 003's "100% hidden" holds only
 *             when comm <= compute), at the price of the SMs the communication kernels occupy.
 *   step      m micro-batches on the slowest rank + pipeline bubble + exposed DP synchronization
 *             (ring reduce-scatter of gradients and all-gather of weights, (n-1)/n each, REFERENCE.md §5,
 *             overlapped with one micro-batch's backward/forward) + optimizer (memory-bound over the
 *             shard).
 * Not modelled at this level: routing imbalance and the all-to-alls that full recompute repeats (the
 * step level simulates the former). */
#include "sim/plan/plan.h"
#include "sim/scenario/schedule_rules.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/plan/checkpoint_write.h"
#include "sim/plan/zero_sync.h"
#include "sim/base/alloc.h"
#include "sim/plan/compute_budget.h"
#include "sim/plan/costmodel.h"
#include "sim/plan/host_costs.h"
#include "sim/plan/memory.h"
#include "sim/plan/model.h"
#include "sim/plan/pipeline_forms.h"
#include "sim/plan/plan_compute.h"
#include "sim/plan/plan_costs.h"
#include "sim/plan/rank_numbering.h"
#include "sim/plan/ring_split.h"
#include "sim/plan/reliability.h"

#define GiB 1073741824.0

static void warn(plan_result *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(plan_result *p, const char *fmt, ...) {
    if (p->n_warnings >= PLAN_MAX_WARNINGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->warnings[p->n_warnings++], sizeof p->warnings[0], fmt, ap);
    va_end(ap);
}

static double dmax(double a, double b) { return a > b ? a : b; }

/* ---- everything derived once per evaluation ------------------------------------------------------ */
typedef struct {
    const scenario *s;
    const costmodel *cm;
    const plan_costs *c;
    model_counts mc;
    act_profile ap;
    mem_state_bytes sb;
    plan_layer_costs lc;
    int gpus, m;
    double tokens_mb;          /* tokens of one micro-batch on one attention-DP rank (TP group) */
    double a2a_layer_s;        /* the 4 all-to-alls of one MoE layer, one micro-batch */
    double p2p_msg_s;          /* one stage-boundary message */
    double tp_layer_s;         /* the TP collectives of one dense layer, one micro-batch */
    double moe_tp_layer_s;     /* ... of one MoE layer: the attention's, and the MoE block's when
                                  the experts use the attention's TP (etp = tp, as the step program) */
    double cp_layer_s;         /* context parallelism's exposed key/value exchange of one layer */
    double sm_slow;            /* compute slowdown from SMs given to overlapped communication */
    rank_group_span ep_span, exp_dp_span;   /* where the groups land (rank_numbering.h) */
    rank_group_span attn_dp_span;           /* the dense data-parallel group (attention DP x CP) */
    int attn_dp_one_node;                   /* the dense data-parallel group within one node */
    stage_census *cz;          /* what each pipeline position holds (pipeline_census) */
    double host_fwd[LAYER_NKINDS], host_bwd[LAYER_NKINDS];   /* per block and micro-batch: what the host
                                                               adds to its forward / backward */
} plan_ctx;

/* A transfer of `bytes` per rank in one direction over a link class (0 bytes: free). */
static double link_s(const plan_ctx *x, cm_link_class link, double bytes) {
    return bytes > 0 ? costmodel_link_s(x->cm, link, bytes) : 0.0;
}

/* Probability that a token's k distinct experts, drawn uniformly from E, include one of a given set
 * of `held` experts (a rank's or a node's): 1 - C(E - held, k) / C(E, k). */
static double hit_probability(double E, double held, int k) {
    double miss = 1.0;
    for (int i = 0; i < k; i++) miss *= E - held - i > 0 ? (E - held - i) / (E - i) : 0.0;
    return 1.0 - miss;
}

/* Per GPU, per MoE layer and micro-batch: dispatch and combine, forward and backward. */
static void derive_a2a(plan_ctx *x, plan_result *out) {
    const scenario *s = x->s;
    const model_cfg *m = &s->model;
    double K = m->top_k, h = m->hidden;
    double b_disp = dtype_bytes(s->precision.dispatch), b_comb = dtype_bytes(s->precision.combine);
    /* forward dispatch + backward of combine move dispatch-precision bytes (DeepSeek-V3 §3.3.3
     * quantizes both to FP8); forward combine + backward of dispatch move combine-precision bytes.
     * Reported in seed 000 §2.4's convention: bytes a GPU sends plus receives per token and MoE layer
     * over the 4 all-to-alls (its tiny calculator: "GPU 0 sends 8 bytes and receives 8 bytes"), so
     * 2 x 2 x 2 x K x h x bytes = 8 x 8 x 7168 x 2 B = 917,504 B in BF16. The link time below uses
     * the sent half only (links are full duplex). */
    out->a2a_bytes_per_token_layer = m->experts > 0 ? 4.0 * K * h * (b_disp + b_comb) : 0.0;
    if (m->experts <= 0 || x->mc.moe_layers == 0 || s->layout.ep <= 1) return;

    int ep = s->layout.ep;
    int q = x->ep_span.max_per_node, n = x->ep_span.nodes;
    int dedup = dispatcher_dedups(s->routing.dispatcher);
    /* deepep: a token goes once to each rank holding one of its experts, with probability P_r for a
     * given rank (its E/ep experts among the K distinct picks), and once over RDMA to each other node
     * holding one; the landing GPU forwards it to the other hit ranks of its node, so every GPU sends
     * (q - 1) P_r copies per token of each of the n nodes' senders on its rail over NVLink */
    double P_r = hit_probability(m->experts, (double)m->experts / ep, m->top_k);
    double nvl_copies, rdma_copies = 0;
    if (n <= 1) {
        nvl_copies = dedup ? (ep - 1) * P_r : K * (ep - 1) / ep;
    } else if (dedup && s->routing.node_limit <= 0) {
        rdma_copies = (n - 1) * hit_probability(m->experts, (double)m->experts / n, m->top_k);
        nvl_copies = n * (q - 1) * P_r;
    } else {
        double remote = K * (double)(ep - q) / ep;      /* copies whose expert is on another node */
        if (dedup) {
            /* DeepEP: one RDMA copy per distinct destination node; tokens pick at most M nodes and
             * spread their K experts over them uniformly: E[distinct] = M (1 - (1 - 1/M)^K) */
            double M = s->routing.node_limit < n ? s->routing.node_limit : n;
            double distinct = M * (1.0 - pow(1.0 - 1.0 / M, K));
            rdma_copies = distinct * (n - 1) / n;
        } else {
            rdma_copies = remote;                        /* alltoall: one transfer per remote pair */
        }
        /* NVLink: copies to peers on the own node, and the fan-out at each destination node from
         * the rail-aligned receiving GPU to the GPU that holds the expert */
        nvl_copies = K * (double)(q - 1) / ep + remote * (double)(q - 1) / q;
    }
    /* as the step program: each rank routes its expert-TP group's sequence-parallel tokens through
     * its 1/etp slice of the experts (etp = tp: the whole micro-batch; etp = 1: its own T / tp) */
    double tokens = scn_routed_tokens(s);
    double per_b[2] = {b_disp, b_comb};
    x->a2a_layer_s = 0;
    for (int i = 0; i < 2; i++) {                        /* each precision: one forward, one backward */
        double copy = tokens * h * per_b[i];
        double t = dmax(link_s(x, CM_LINK_RDMA, rdma_copies * copy), link_s(x, CM_LINK_NVLINK, nvl_copies * copy));
        x->a2a_layer_s += 2.0 * t;
    }
}

/* Context parallelism, per block and micro-batch: each rank's key/value chunk (its T tokens' keys and
 * values, its TP share of the KV heads, BF16; MLA exchanges the up-projected keys and values) goes
 * around the CP ring. p2p (ring attention): cp - 1 steps, each sending one chunk (backward: the
 * keys and values again with their gradients, twice the bytes) while the attention of the chunk in
 * hand runs; a step exposes what its transfer takes beyond that compute. all_gather: one ring
 * all-gather of cp - 1 chunks before the attention (backward: all-gather again and a reduce-
 * scatter of the gradients), not overlapped. */
static double cp_exchange_s(const plan_ctx *x, int ring_on_one_node) {
    const scenario *s = x->s;
    const model_cfg *m = &s->model;
    double tp = s->layout.tp, cp = scn_cp(s);
    double chunk = x->tokens_mb * model_kv_exchange_bytes(m, tp);
    cm_link_class link = ring_on_one_node ? CM_LINK_NVLINK : CM_LINK_RDMA;
    if (s->layout.cp_comm == CP_COMM_ALL_GATHER)
        return 3.0 * link_s(x, link, (cp - 1) * chunk);
    cm_attn_shape a = compute_attention_chunk(m, x->tokens_mb, tp, cp, 0, 0);
    double core = costmodel_attention_core_s(x->cm, &a, 0), core_b = costmodel_attention_core_s(x->cm, &a, 1);
    return (cp - 1) * (dmax(0.0, link_s(x, link, chunk) - core) + dmax(0.0, link_s(x, link, 2.0 * chunk) - core_b));
}

/* The host side, first order (host_costs.h, sim/exec/step_host.h): a block's forward or backward takes
 * at least the time its rank's CPU thread needs to issue it. A dropless MoE layer's host sync keeps the
 * thread from running ahead of the GPU by more than a layer, so each pass of each block lasts the longer
 * of the two: its GPU time (compute, and the communication a 1F1B pass exposes, which the host issues
 * during) or its host time; the excess is added to the pass's compute. The step level simulates how
 * much of the host time the GPU's queue really hides. */
static void host_bound_layers(plan_ctx *x, const scenario *s) {
    int local = s->model.experts > 0 ? (s->model.experts + s->routing.redundant_experts) / s->layout.ep : 0;
    host_price_table ht;
    host_price_table_build(s, local, &ht);
    int paired = scn_schedule_run(&s->layout) == SCHED_DUALPIPE || s->layout.moe_a2a_overlap;
    for (int k = 0; k < LAYER_NKINDS; k++) {
        /* TP > 1: an all-gather before and a reduce-scatter after each of the block's halves */
        int tp_colls = s->layout.tp > 1 ? 4 : 0;
        double hf, hb;
        host_layer_issue_s(&ht, (layer_kind)k, scn_cp(s), tp_colls, &hf, &hb);
        double comm = paired ? 0 : 0.5 * (layer_kind_is_moe((layer_kind)k) ? x->a2a_layer_s + x->moe_tp_layer_s
                                                                          : x->tp_layer_s);
        pass_times *pt = &x->lc.layer[k];
        x->host_fwd[k] = dmax(0.0, hf - pt->fwd_s - comm);
        x->host_bwd[k] = dmax(0.0, hb - pt->bwd_s - comm);
        pt->fwd_s += x->host_fwd[k];
        pt->bwd_s += x->host_bwd[k];
    }
}

static void derive(plan_ctx *x, const scenario *s, const costmodel *cm, const plan_costs *c,
                   plan_result *out) {
    const cluster_cfg *cl = &s->cluster;
    const layout_cfg *lay = &s->layout;
    x->s = s;
    x->cm = cm;
    x->c = c;
    model_count(&s->model, &x->mc);
    memory_activation_profile(&s->model, &s->precision, &x->ap);
    memory_state_bytes(&s->precision, &x->sb);
    plan_price_layers(s, &x->mc, cm, &x->lc);
    x->gpus = scn_gpus(s);
    x->m = scn_micro_batches(s);
    x->tokens_mb = scn_rank_tokens(s);

    /* what reaches over NVLink: one NVLink domain (a node, or an NVL72 rack) */
    int gpn = scn_domain_gpus(cl), cp = scn_cp(s);
    /* where the groups land, placed as the step program places them (rank_numbering.h): the EP group,
     * the expert data-parallel group (over replicas), one pipeline's stages; on the attention side
     * the TP group, the CP ring and the dense data-parallel group (attention DP x CP) */
    rank_grid grid = rank_grid_of(s);
    int per_stage = rank_ranks_per_stage(&grid);
    x->ep_span = rank_group_nodes(&grid, RANK_VARY_EP, gpn);
    x->exp_dp_span = rank_group_nodes(&grid, RANK_VARY_REPLICA, gpn);
    rank_group_span pipe = rank_group_nodes(&grid, RANK_VARY_STAGE, gpn);
    int tp_one_node = rank_stage_group_on_one_node(&grid, 1, lay->tp, gpn);
    x->attn_dp_one_node = rank_stage_group_on_one_node(&grid, lay->tp, per_stage / lay->tp, gpn);
    x->attn_dp_span = x->attn_dp_one_node ? (rank_group_span){per_stage / lay->tp, 1, per_stage / lay->tp}
                                          : rank_stage_group_span(&grid, lay->tp, per_stage / lay->tp, gpn);
    x->cp_layer_s = cp > 1 ? cp_exchange_s(x, rank_stage_group_on_one_node(&grid, lay->tp, cp, gpn)) : 0.0;

    x->a2a_layer_s = 0;
    derive_a2a(x, out);

    /* neighbouring stages share a node unless every stage of a pipeline has a node of its own */
    cm_link_class pp_link = pipe.members > 1 && pipe.max_per_node == 1 ? CM_LINK_RDMA : CM_LINK_NVLINK;
    x->p2p_msg_s = link_s(x, pp_link, x->tokens_mb / lay->tp * s->model.hidden * 2.0);

    x->tp_layer_s = x->moe_tp_layer_s = 0;
    if (lay->tp > 1) {
        /* sequence parallelism: an all-gather and a reduce-scatter around each of a layer's two
         * blocks, forward and backward (8 ring passes); an MoE block whose experts fold the TP ranks
         * apart (etp < tp) routes each rank's own tokens and has none */
        cm_link_class tp_link = tp_one_node ? CM_LINK_NVLINK : CM_LINK_RDMA;
        double ring = (lay->tp - 1.0) / lay->tp * x->tokens_mb * s->model.hidden * 2.0;
        x->tp_layer_s = 8.0 * link_s(x, tp_link, ring);
        x->moe_tp_layer_s = (scn_etp(s) == lay->tp ? 8.0 : 4.0) * link_s(x, tp_link, ring);
    }

    x->sm_slow = overlap_compute_slowdown(s, c);
    host_bound_layers(x, s);
}

/* ---- one pipeline stage ---------------------------------------------------------------------------- */
typedef struct { double F, B, W, R, c_mb, comm_mb; } stage_time;

static void add_scaled(stage_time *st, const pass_times *p, double n) {
    st->F += n * p->fwd_s;
    st->B += n * (p->bwd_s + p->recompute_s);
    st->W += n * p->wgrad_s;
    st->R += n * p->recompute_s;
}

static void stage_timing(const plan_ctx *x, int stage, stage_time *st) {
    const layout_cfg *lay = &x->s->layout;
    const stage_census *cz = &x->cz[stage];
    int nd = cz->n_dense, nm = cz->n_moe;
    memset(st, 0, sizeof *st);
    for (int k = 0; k < LAYER_NKINDS; k++) add_scaled(st, &x->lc.layer[k], cz->n_kind[k]);
    if (cz->embed) add_scaled(st, &x->lc.embed, 1);
    /* the loss stage runs the head once for the main loss and once per MTP module */
    if (cz->loss) add_scaled(st, &x->lc.head, 1 + x->s->model.mtp_layers);
    if (cz->mtp > 0) {
        add_scaled(st, &x->lc.layer[x->mc.mtp_moe ? LAYER_MOE : LAYER_DENSE], cz->mtp);
        add_scaled(st, &x->lc.mtp_proj, cz->mtp);
        if (x->mc.mtp_moe) nm += cz->mtp;
        else nd += cz->mtp;
    }
    st->F *= x->sm_slow; st->B *= x->sm_slow; st->W *= x->sm_slow; st->R *= x->sm_slow;
    st->c_mb = st->F + st->B;

    int msgs = (stage > 0) + (stage < lay->pp - 1);
    double v = lay->schedule == SCHED_INTERLEAVED && lay->vpp > 1 ? lay->vpp : 1;
    /* messages sent per micro-batch: activation to the next stage, gradient to the previous one */
    st->comm_mb = nm * (x->a2a_layer_s + x->moe_tp_layer_s) + msgs * v * x->p2p_msg_s +
                  (nd + nm) * x->cp_layer_s + nd * x->tp_layer_s;
}

/* One collective of `bytes` per GPU (ar: 1 reduce-scatter or all-gather, 2 all-reduce) over a group
 * of g ranks that lands as `sp`, as NCCL runs it and its tuning model charges it (ring_split.h, the
 * step's rule too): the ring's steps at the links' rates, NVLink and NICs at once, plus NCCL's latency. */
static double ring_s(const plan_ctx *x, rank_group_span sp, double g, double bytes, double ar) {
    if (g < 2 || bytes <= 0) return 0.0;
    int uniform = sp.members == (double)sp.nodes * sp.max_per_node && sp.members == g;
    double nvl = x->cm->link[CM_LINK_NVLINK].beta_Bps, nic = x->cm->link[CM_LINK_RDMA].beta_Bps;
    ring_split r = ring_split_of((int)g, sp.nodes, uniform ? sp.max_per_node : 0, bytes, ar > 1, nvl, nic,
                                 x->s->cluster.nccl_model);
    double t_nvl = nvl > 0 ? r.nvl_bytes / nvl : 0, t_nic = nic > 0 ? r.nic_bytes / nic : 0;
    double wire = x->cm->link[sp.nodes > 1 ? CM_LINK_RDMA : CM_LINK_NVLINK].alpha_s;
    return ring_split_time_s(&r, r.steps * (t_nvl > t_nic ? t_nvl : t_nic), wire);
}

/* DP synchronization of one GPU holding `ne` non-expert and `ex` expert parameters, replicated over
 * groups of g_ne and g_ex ranks: ring reduce-scatter (or all-reduce) of BF16 gradients and
 * all-gather of weights. */
static void dp_sync_s(const plan_ctx *x, double ne, double ex, double g_ne, double g_ex,
                      double *t_rs, double *t_ag) {
    const scenario *s = x->s;
    double w_b = x->sb.weight, g_b = x->sb.grad;
    double ar = s->layout.zero == 0 ? 2.0 : 1.0;   /* all-reduce = reduce-scatter + all-gather */
    *t_rs = ring_s(x, x->attn_dp_span, g_ne, g_b * ne, ar) + ring_s(x, x->exp_dp_span, g_ex, g_b * ex, ar);
    *t_ag = s->layout.zero == 0 ? 0.0
                                : ring_s(x, x->attn_dp_span, g_ne, w_b * ne, 1.0) + ring_s(x, x->exp_dp_span, g_ex, w_b * ex, 1.0);
}

static int check_input(const scenario *s, moe_error *err) {
    const layout_cfg *l = &s->layout;
    const char *f = s->file;
    char v[64];
    if (l->tp < 1 || l->pp < 1 || l->ep < 1 || l->dp < 1) {
        snprintf(v, sizeof v, "%dx%dx%dx%d", l->tp, l->pp, l->ep, l->dp);
        return moe_error_input(err, f, "layout", v, "tp, pp, ep, dp >= 1");
    }
    long prod = (long)scn_etp(s) * l->pp * l->ep * l->dp;
    if (prod != scn_gpus(s) || (scn_gpus(s) / l->pp) % ((long)l->tp * scn_cp(s)) != 0) {
        snprintf(v, sizeof v, "etp*pp*ep*dp = %ld, tp*cp = %d", prod, l->tp * scn_cp(s));
        return moe_error_input(err, f, "layout", v, "the GPU count %d, and tp*cp dividing the GPUs of a stage",
                               scn_gpus(s));
    }
    if (l->micro_batch < 1 || scn_micro_batches(s) < 1) {
        snprintf(v, sizeof v, "%d", l->global_batch);
        return moe_error_input(err, f, "layout.global_batch", v,
                               "at least micro_batch x attention-DP = %d sequences",
                               l->micro_batch * scn_attn_dp(s));
    }
    const model_cfg *m = &s->model;
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->seq_len < 1 ||
        (m->experts > 0 && (m->top_k < 1 || m->expert_hidden < 1))) {
        return moe_error_input(err, f, "model", NULL, "positive layers, hidden, heads, seq_len "
                               "(and top_k, expert_hidden for MoE)");
    }
    const cluster_cfg *c = &s->cluster;
    if (c->gpu.bf16_tflops <= 0 || c->gpu.fp8_tflops <= 0 || c->gpu.hbm_GBps <= 0 ||
        c->nvlink_GBps <= 0 || c->nic_gbps <= 0 || c->gpus_per_node < 1) {
        return moe_error_input(err, f, "cluster", NULL, "positive peaks, bandwidths and gpus_per_node");
    }
    return 0;
}

static void fill_params(const scenario *s, const model_counts *mc, plan_result *out) {
    out->params_total = mc->params_total;
    out->params_active = mc->params_active;
    out->params_embedding = mc->params_embedding;
    out->params_head = mc->params_head;
    out->params_attention = mc->params_attention;
    out->params_dense_ffn = mc->params_dense_ffn;
    out->params_router = mc->params_router;
    out->params_shared_experts = mc->params_shared_experts;
    out->params_routed_experts = mc->params_routed_experts;
    out->params_norms = mc->params_norms;
    out->params_mtp = mc->params_mtp;
    out->flops_per_token = mc->flops_per_token;
    /* the back-of-the-envelope 6N uses the model card's headline active count when the scenario has
     * one (seed 003: 6 x 37e9); the exact per-layer count stays in flops_per_token/params_active */
    out->flops_per_token_6n = s->model.published_active_params > 0 ? 6.0 * s->model.published_active_params
                                                                   : mc->flops_per_token_6n;
}

static void reliability_plan(const scenario *s, const model_counts *mc, const mem_state_bytes *sb,
                             plan_result *out) {
    const reliability_cfg *r = &s->reliability;
    const checkpoint_cfg *ck = &r->checkpoint;
    /* "auto": the whole model's weights, master weights and optimizer moments */
    double full_state_b = sb->weight + sb->master + sb->moments;
    out->checkpoint_state_bytes = ck->state_bytes >= 0 ? ck->state_bytes : mc->params_total * full_state_b;
    out->checkpoint_write_s = checkpoint_write_s(s, out->checkpoint_state_bytes);
    double mtbf_h = reliability_job_mtbf_h(s);
    if (!isfinite(mtbf_h)) return;
    out->mtbf_cluster_h = mtbf_h;
    double M = out->mtbf_cluster_h * 60.0, d = out->checkpoint_write_s / 60.0;   /* minutes */
    out->young_interval_min = young_interval(d, M);
    out->daly_first_order_min = daly_first_order(d, M);
    out->daly_interval_min = daly_interval(d, M);
}

static void layout_warnings(const plan_ctx *x, plan_result *out) {
    const scenario *s = x->s;
    const layout_cfg *l = &s->layout;
    if (l->zero >= 3 && l->pp > 1)
        warn(out, "ZeRO-3 with PP=%d: parameter all-gathers repeat for each of the %d micro-batches; "
                  "use ZeRO-1", l->pp, x->m);
    else if (l->zero == 2 && l->pp > 1)
        warn(out, "ZeRO-2 with PP=%d: sharded gradients are reduce-scattered after each of the %d "
                  "micro-batches; use ZeRO-1", l->pp, x->m);
    if (l->tp > scn_domain_gpus(&s->cluster))
        warn(out, "TP=%d spans nodes (%d GPUs per %s): tensor-parallel collectives cross the NICs", l->tp,
             scn_domain_gpus(&s->cluster), s->cluster.nvlink_domain_gpus > 0 ? "NVLink domain" : "node");
    if (s->model.experts > 0 && x->ep_span.nodes > s->cluster.leaf_down_ports)
        warn(out, "EP group spans %d nodes > %d under one leaf switch: its all-to-all crosses the spine",
             x->ep_span.nodes, s->cluster.leaf_down_ports);
}

/* The slowest rank's per-micro-batch figures, kept for the step-time formulas. */
typedef struct { double t, F, B, W, R, c, e, comm; } worst_time;

int plan_evaluate_with(const scenario *s, const costmodel *cm, const plan_costs *c, plan_result *out,
                       moe_error *err) {
    memset(out, 0, sizeof *out);
    if (check_input(s, err)) return err->code;
    plan_ctx x;
    x.cz = moe_xmalloc((size_t)s->layout.pp * sizeof *x.cz);
    if (pipeline_census(s, x.cz, err)) {
        free(x.cz);
        return err->code;
    }
    derive(&x, s, cm, c, out);
    fill_params(s, &x.mc, out);
    snprintf(out->costmodel_source, sizeof out->costmodel_source, "%s", cm->source);
    const layout_cfg *lay = &s->layout;
    schedule_kind run = scn_schedule_run(lay);
    int pp = lay->pp, dual = run == SCHED_DUALPIPE;

    /* ---- compute budget (seed 003 step 1) ---- */
    out->total_flops = budget_total_flops(s->run.tokens, out->flops_per_token_6n);

    /* ---- per pipeline rank: memory and time; keep the worst ---- */
    mem_ledgers worst = {0};
    worst_time wt = {.t = -1};
    double dp_exposed = 0, opt_s = 0;
    double copies = dual ? 2.0 : 1.0;
    /* non-expert gradients are reduced over attention DP x CP: every GPU of the stage with the
     * same TP rank */
    double g_ne = (double)x.gpus / ((double)lay->tp * pp) * copies, g_ex = (double)lay->dp * copies;
    int last = dual ? (pp - 1) / 2 : pp - 1;   /* DualPipe ranks r and pp-1-r are mirror images */
    for (int r = 0; r <= last; r++) {
        mem_ledgers ml;
        memory_rank_ledgers_cz(s, &x.mc, &x.ap, &x.sb, x.m, x.cz, r, &ml);
        if (ml.total > worst.total) { worst = ml; out->memory_rank = r; }

        stage_time st;
        stage_timing(&x, r, &st);
        stage_params sp;
        memory_stage_params(&x.mc, &s->model, lay, &x.cz[r], &sp);
        if (dual && pp - 1 - r != r) {
            /* the rank runs both of its stages in turn: per micro-batch, the mean of the two */
            stage_time st2;
            stage_params sp2;
            stage_timing(&x, pp - 1 - r, &st2);
            memory_stage_params(&x.mc, &s->model, lay, &x.cz[pp - 1 - r], &sp2);
            st.F = 0.5 * (st.F + st2.F);
            st.B = 0.5 * (st.B + st2.B);
            st.W = 0.5 * (st.W + st2.W);
            st.R = 0.5 * (st.R + st2.R);
            st.c_mb = 0.5 * (st.c_mb + st2.c_mb);
            st.comm_mb = 0.5 * (st.comm_mb + st2.comm_mb);
            sp.nonexpert += sp2.nonexpert;
            sp.expert += sp2.expert;
        }
        /* DualPipe and the paired 1F1B of moe_a2a_overlap hide communication under compute */
        int paired = dual || lay->moe_a2a_overlap;
        double exposed = paired ? dmax(0.0, st.comm_mb - st.c_mb) : st.comm_mb;
        if (st.c_mb + exposed > wt.t)
            wt = (worst_time){st.c_mb + exposed, st.F, st.B, st.W, st.R, st.c_mb, exposed, st.comm_mb};
        /* DP sync after the last backward (overlapped with it), weight all-gather before the first
         * forward (overlapped with it); ZeRO-2/3 repeat part of it per micro-batch */
        double t_rs, t_ag;
        dp_sync_s(&x, sp.nonexpert, sp.expert, g_ne, g_ex, &t_rs, &t_ag);
        double dp;
        if (lay->zero >= 3)   /* per micro-batch: gathers under the forward, gathers and reductions under
                                 the backward (one data-parallel stream) */
            dp = x.m * (dmax(0.0, t_ag - st.F) + dmax(0.0, t_ag + t_rs - st.B));
        else if (lay->zero == 2)
            dp = x.m * dmax(0.0, t_rs - st.B) + dmax(0.0, t_ag - st.F);
        else
            dp = dmax(0.0, t_rs - st.B) + dmax(0.0, t_ag - st.F);
        if (dp > dp_exposed) dp_exposed = dp;
        /* the volumes behind those times (zero_sync.h) */
        zero_passes zp = zero_passes_of(lay->zero, x.m);
        double held = sp.nonexpert + sp.expert;
        if (zp.param_gathers * x.sb.weight * held > out->dp_param_gather_bytes)
            out->dp_param_gather_bytes = zp.param_gathers * x.sb.weight * held;
        if (zp.grad_reductions * x.sb.grad * held > out->dp_grad_reduce_bytes)
            out->dp_grad_reduce_bytes = zp.grad_reductions * x.sb.grad * held;
        /* optimizer on the shard: read the gradient, read+write master, m and v, write the weight */
        double shard = sp.nonexpert / g_ne + sp.expert / g_ex;
        double upd_b = x.sb.grad + 2.0 * (x.sb.master + x.sb.moments) + x.sb.weight;
        double o = costmodel_memory_bound_s(cm, shard * upd_b);
        if (o > opt_s) opt_s = o;
    }

    /* ---- memory ---- */
    out->memory_GiB.params = worst.params / GiB;
    out->memory_GiB.grads = worst.grads / GiB;
    out->memory_GiB.optimizer = worst.optimizer / GiB;
    out->memory_GiB.activations = worst.activations / GiB;
    out->memory_GiB.total = worst.total / GiB;
    const char *overflow;
    out->fits_memory = memory_fits(&worst, s->cluster.gpu.mem_GiB, c->memory_reserve, &overflow);
    out->memory_GiB.usable = memory_usable_GiB(s->cluster.gpu.mem_GiB, c->memory_reserve);
    snprintf(out->overflow, sizeof out->overflow, "%s", overflow);
    out->weight_bytes_per_param = x.sb.weight;
    out->grad_bytes_per_param = x.sb.grad;
    out->optimizer_bytes_per_param = x.sb.master + x.sb.moments;
    int rc = lay->recompute;
    out->act_bytes_per_token_layer = x.mc.moe_layers > 0 ? x.ap.moe_layer[rc] : x.ap.dense_layer[rc];
    out->inflight_microbatches = inflight_microbatches_of(lay, x.m, out->memory_rank);

    /* ---- step time ---- */
    int m = x.m;
    out->fwd_mb_s = wt.F;
    out->bwd_mb_s = wt.B;
    out->wgrad_mb_s = wt.W;
    out->recompute_mb_s = wt.R;
    out->comm_mb_s = wt.comm;
    out->compute_s = m * wt.c;
    double pipe_exposed = m * wt.e;
    switch (run) {
    case SCHED_DUALPIPE:
        /* B full backward chunk, W its weight-gradient part, F&B the overlapped pair (F + B plus
         * what communication it could not hide) */
        out->bubble_s = bubble_dualpipe_s(pp, wt.B, wt.W, wt.c + wt.e);
        break;
    case SCHED_INTERLEAVED:
        out->bubble_s = (pp - 1) * (wt.c + wt.e) / (lay->vpp > 1 ? lay->vpp : 1);
        break;
    case SCHED_1F1B:
    default:
        out->bubble_s = (pp - 1) * (wt.c + wt.e);
        break;
    }
    double pipeline_s = out->compute_s + pipe_exposed + out->bubble_s;
    out->bubble_fraction = pipeline_s > 0 ? out->bubble_s / pipeline_s : 0;
    out->exposed_comm_s = pipe_exposed + dp_exposed;
    out->optimizer_s = opt_s;
    out->step_time_s = pipeline_s + dp_exposed + opt_s;

    double tokens_step = (double)lay->global_batch * s->model.seq_len;
    out->tokens_per_s_per_gpu = tokens_step / out->step_time_s / x.gpus;
    out->tflops_per_gpu = out->tokens_per_s_per_gpu * out->flops_per_token / 1e12;
    out->mfu = out->tflops_per_gpu / s->cluster.gpu.bf16_tflops;

    double mfu = s->run.assumed_mfu > 0 ? s->run.assumed_mfu : out->mfu;
    out->pure_compute_days =
        budget_days(out->total_flops, budget_cluster_flops_per_s(x.gpus, s->cluster.gpu.bf16_tflops, mfu));

    reliability_plan(s, &x.mc, &x.sb, out);

    /* ---- warnings ---- */
    layout_warnings(&x, out);
    if (out->bubble_fraction > 0.20)
        warn(out, "pipeline bubble %.0f%% > 20%%: more micro-batches (m=%d) or a smaller PP",
             100.0 * out->bubble_fraction, m);
    if (dual && wt.e > 0)
        warn(out, "all-to-all + P2P exceed compute per micro-batch by %.0f%%: DualPipe hides only up to "
                  "the compute time", 100.0 * wt.e / wt.c);
    free(x.cz);
    return 0;
}

int plan_evaluate_with_costmodel(const scenario *s, const costmodel *cm, plan_result *out,
                                 moe_error *err) {
    plan_costs c;
    plan_costs_default(&c);
    return plan_evaluate_with(s, cm, &c, out, err);
}

/* ---- the cost model of plan_evaluate, cached ----------------------------------------------------
 * Loading a model JSON costs a file read and a parse; a sweep evaluates millions of layouts with the
 * same one. The cache holds the last model, keyed by everything costmodel_for_scenario and the link
 * fill-in below read: the calibration path, the cluster's GPU and link figures, cluster.gpu.sustained
 * and precision.quantization_free. One entry, static:
 * plan_evaluate is not thread-safe (simrun runs sweep points in worker processes, not threads). A
 * file changed on disk between two calls with the same path is not reloaded. */
typedef struct {
    char calibration[SCN_PATH_MAX];
    char gpu_name[SCN_NAME_MAX];
    double bf16_tflops, fp8_tflops, fp4_tflops, hbm_GBps, nvlink_GBps, nic_gbps, pcie_GBps, lat_nvlink, lat_leaf;
    double sustained, grouped_gemm_rate;
    int quantization_free;
    int compute;   /* precision.compute: the grouped GEMM rate's scope (global_params.h) reads it */
} costmodel_key;

static costmodel_key key_of(const scenario *s) {
    costmodel_key k;
    memset(&k, 0, sizeof k);   /* padding and string tails too: keys are compared with memcmp */
    snprintf(k.calibration, sizeof k.calibration, "%s", s->calibration);
    snprintf(k.gpu_name, sizeof k.gpu_name, "%s", s->cluster.gpu.name);
    k.bf16_tflops = s->cluster.gpu.bf16_tflops;
    k.fp8_tflops = s->cluster.gpu.fp8_tflops;
    k.fp4_tflops = s->cluster.gpu.fp4_tflops;
    k.hbm_GBps = s->cluster.gpu.hbm_GBps;
    k.nvlink_GBps = s->cluster.nvlink_GBps;
    k.nic_gbps = s->cluster.nic_gbps;
    k.pcie_GBps = s->cluster.pcie_GBps;
    k.lat_nvlink = s->cluster.latency_us.nvlink;
    k.lat_leaf = s->cluster.latency_us.same_leaf;
    k.sustained = s->cluster.gpu.sustained;
    k.grouped_gemm_rate = s->cluster.gpu.grouped_gemm_rate;
    k.quantization_free = s->precision.quantization_free;
    k.compute = (int)s->precision.compute;
    return k;
}

int plan_costmodel(const scenario *s, const costmodel **out, moe_error *err) {
    static struct { int valid; costmodel_key key; costmodel cm; } cache;
    costmodel_key k = key_of(s);
    if (!cache.valid || memcmp(&k, &cache.key, sizeof k) != 0) {
        cache.valid = 0;
        if (costmodel_for_scenario(s, &cache.cm, err)) return err->code;
        /* a calibration without some link class (e.g. a single-node fit) keeps the plan finite: the
         * missing classes come from the scenario's cluster, as the built-in roofline takes them */
        costmodel from_cluster = costmodel_from_cluster(&s->cluster);
        for (int l = 0; l < CM_LINK_N; l++)
            if (!cache.cm.link[l].present) cache.cm.link[l] = from_cluster.link[l];
        cache.key = k;
        cache.valid = 1;
    }
    *out = &cache.cm;
    return 0;
}

int plan_evaluate(const scenario *s, plan_result *out, moe_error *err) {
    const costmodel *cm;
    if (plan_costmodel(s, &cm, err)) {
        memset(out, 0, sizeof *out);
        return err->code;
    }
    return plan_evaluate_with_costmodel(s, cm, out, err);
}

void plan_result_to_json(const plan_result *p, cJSON *obj) {
    cJSON_AddNumberToObject(obj, "params_total", p->params_total);
    cJSON_AddNumberToObject(obj, "params_active", p->params_active);
    cJSON_AddNumberToObject(obj, "flops_per_token", p->flops_per_token);
    cJSON_AddNumberToObject(obj, "flops_per_token_6n", p->flops_per_token_6n);
    cJSON_AddNumberToObject(obj, "total_flops", p->total_flops);
    cJSON_AddNumberToObject(obj, "pure_compute_days", p->pure_compute_days);
    cJSON *mem = cJSON_AddObjectToObject(obj, "memory_GiB");
    cJSON_AddNumberToObject(mem, "params", p->memory_GiB.params);
    cJSON_AddNumberToObject(mem, "grads", p->memory_GiB.grads);
    cJSON_AddNumberToObject(mem, "optimizer", p->memory_GiB.optimizer);
    cJSON_AddNumberToObject(mem, "activations", p->memory_GiB.activations);
    cJSON_AddNumberToObject(mem, "total", p->memory_GiB.total);
    cJSON_AddNumberToObject(mem, "usable", p->memory_GiB.usable);
    cJSON_AddBoolToObject(obj, "fits_memory", p->fits_memory);
    cJSON *w = cJSON_AddArrayToObject(obj, "warnings");
    for (int i = 0; i < p->n_warnings; i++) cJSON_AddItemToArray(w, cJSON_CreateString(p->warnings[i]));
    cJSON_AddNumberToObject(obj, "step_time_s", p->step_time_s);
    cJSON_AddNumberToObject(obj, "bubble_fraction", p->bubble_fraction);
    cJSON_AddNumberToObject(obj, "mtbf_cluster_h", p->mtbf_cluster_h);
    cJSON_AddNumberToObject(obj, "young_interval_min", p->young_interval_min);
    cJSON_AddNumberToObject(obj, "daly_interval_min", p->daly_interval_min);
    /* beyond the SCENARIO.md contract */
    cJSON_AddNumberToObject(obj, "daly_first_order_min", p->daly_first_order_min);
    cJSON_AddNumberToObject(obj, "checkpoint_write_s", p->checkpoint_write_s);
    cJSON_AddNumberToObject(obj, "checkpoint_state_bytes", p->checkpoint_state_bytes);
    cJSON_AddNumberToObject(obj, "a2a_bytes_per_token_layer", p->a2a_bytes_per_token_layer);
    cJSON_AddNumberToObject(obj, "mfu", p->mfu);
    cJSON_AddNumberToObject(obj, "tokens_per_s_per_gpu", p->tokens_per_s_per_gpu);
    cJSON_AddNumberToObject(obj, "tflops_per_gpu", p->tflops_per_gpu);
    cJSON_AddNumberToObject(obj, "compute_s", p->compute_s);
    cJSON_AddNumberToObject(obj, "exposed_comm_s", p->exposed_comm_s);
    cJSON_AddNumberToObject(obj, "bubble_s", p->bubble_s);
    cJSON_AddNumberToObject(obj, "optimizer_s", p->optimizer_s);
    cJSON_AddStringToObject(obj, "overflow", p->overflow);
    cJSON_AddStringToObject(obj, "costmodel_source", p->costmodel_source);
    cJSON *mb = cJSON_AddObjectToObject(obj, "micro_batch_s");
    cJSON_AddNumberToObject(mb, "forward", p->fwd_mb_s);
    cJSON_AddNumberToObject(mb, "backward", p->bwd_mb_s);
    cJSON_AddNumberToObject(mb, "weight_grad", p->wgrad_mb_s);
    cJSON_AddNumberToObject(mb, "recompute", p->recompute_mb_s);
    cJSON_AddNumberToObject(mb, "comm", p->comm_mb_s);
    cJSON *sb = cJSON_AddObjectToObject(obj, "state_bytes_per_param");
    cJSON_AddNumberToObject(sb, "weights", p->weight_bytes_per_param);
    cJSON_AddNumberToObject(sb, "grads", p->grad_bytes_per_param);
    cJSON_AddNumberToObject(sb, "optimizer", p->optimizer_bytes_per_param);
    cJSON_AddNumberToObject(obj, "act_bytes_per_token_layer", p->act_bytes_per_token_layer);
    cJSON_AddNumberToObject(obj, "inflight_microbatches", p->inflight_microbatches);
    cJSON_AddNumberToObject(obj, "memory_rank", p->memory_rank);
    cJSON_AddNumberToObject(obj, "dp_param_gather_bytes", p->dp_param_gather_bytes);
    cJSON_AddNumberToObject(obj, "dp_grad_reduce_bytes", p->dp_grad_reduce_bytes);
    cJSON *b = cJSON_AddObjectToObject(obj, "params_breakdown");
    cJSON_AddNumberToObject(b, "embedding", p->params_embedding);
    cJSON_AddNumberToObject(b, "head", p->params_head);
    cJSON_AddNumberToObject(b, "attention", p->params_attention);
    cJSON_AddNumberToObject(b, "dense_ffn", p->params_dense_ffn);
    cJSON_AddNumberToObject(b, "router", p->params_router);
    cJSON_AddNumberToObject(b, "shared_experts", p->params_shared_experts);
    cJSON_AddNumberToObject(b, "routed_experts", p->params_routed_experts);
    cJSON_AddNumberToObject(b, "norms", p->params_norms);
    cJSON_AddNumberToObject(b, "mtp", p->params_mtp);
}
