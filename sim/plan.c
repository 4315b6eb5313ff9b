/* plan.c — the analytic level (plan.h): counts, ledgers, first-order step time, reliability.
 *
 * First-order step time, per pipeline rank and micro-batch:
 *   compute   GEMMs at the compute precision's peak x efficiency, flash attention at the BF16 peak x
 *             efficiency, expert GEMMs as a roofline (FLOPs vs HBM bytes) with an efficiency that falls
 *             for skinny per-expert row counts, non-GEMM kernels as HBM traffic; backward = 2 x forward;
 *             full recompute adds a forward, selective the MLA up projections.
 *   all-to-all dispatch + combine, forward + backward, per MoE layer, split into NVLink and RDMA bytes
 *             by how many EP ranks share a node; with node-limited routing (DeepEP) one RDMA copy per
 *             destination node; time = the slower of the two link classes.
 *   P2P       one activation (forward) and one gradient (backward) message per stage boundary.
 *   exposure  1F1B and interleaved expose all communication; DualPipe overlaps it with the compute of
 *             the paired micro-batch and exposes only the excess (seed 003's "100% hidden" holds only
 *             when comm <= compute), at the price of the SMs the communication kernels occupy.
 *   step      m micro-batches on the slowest rank + pipeline bubble + exposed DP synchronization
 *             (ring reduce-scatter of gradients and all-gather of weights, (n-1)/n each, REFERENCE.md §5,
 *             overlapped with one micro-batch's backward/forward) + optimizer (HBM-bound over the shard).
 * All efficiency constants live in plan_costs.c. */
#include "sim/plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim/compute_budget.h"
#include "sim/memory.h"
#include "sim/model.h"
#include "sim/pipeline_forms.h"
#include "sim/plan_costs.h"
#include "sim/reliability.h"

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

/* ---- where a communication group lands ---------------------------------------------------------- */

/* A group of `members` ranks whose consecutive members are `stride` GPUs apart. */
typedef struct { int per_node, nodes; } group_span;

static group_span span_of(int members, int stride, int gpus_per_node) {
    group_span g;
    g.per_node = stride >= gpus_per_node ? 1 : gpus_per_node / stride;
    if (g.per_node > members) g.per_node = members;
    if (g.per_node < 1) g.per_node = 1;
    g.nodes = (members + g.per_node - 1) / g.per_node;
    return g;
}

/* ---- everything derived once per evaluation ------------------------------------------------------ */
typedef struct {
    const scenario *s;
    const plan_costs *c;
    model_counts mc;
    act_profile ap;
    int gpus, m;
    double tokens_mb;          /* tokens of one micro-batch on one attention-DP rank (TP group) */
    double gemm_Fps, attn_Fps, hbm_Bps, nic_Bps, nvl_Bps;
    double expert_fwd_s;       /* routed experts of one MoE layer, one micro-batch, one GPU */
    double a2a_layer_s;        /* the 4 all-to-alls of one MoE layer, one micro-batch */
    double p2p_msg_s;          /* one stage-boundary message */
    double sm_slow;            /* compute slowdown from SMs given to overlapped communication */
    group_span ep_span, attn_dp_span, exp_dp_span;
} plan_ctx;

/* Roofline of one GEMM (M x k) . (k x n) with element size b: the slower of FLOPs at the effective
 * peak and bytes at the effective HBM bandwidth. */
static double gemm_roofline_s(const plan_ctx *x, double M, double k, double n, double b, double eff) {
    double flops = 2.0 * M * k * n;
    double bytes = (M * k + k * n + M * n) * b;
    return dmax(flops / (x->gemm_Fps * eff), bytes / x->hbm_Bps);
}

static void derive_experts(plan_ctx *x) {
    const model_cfg *m = &x->s->model;
    const layout_cfg *lay = &x->s->layout;
    if (m->experts <= 0 || x->mc.moe_layers == 0) return;
    double local = (double)m->experts / lay->ep;                      /* experts per GPU */
    double rows = x->tokens_mb * m->top_k * lay->ep / m->experts;      /* tokens per expert, uniform */
    double inner = (double)m->expert_hidden / lay->tp;                 /* expert TP splits the inner dim */
    double mats = m->ffn_act == FFN_SWIGLU ? 2.0 : 1.0;                /* gate+up fused, or fc1 */
    double b = x->s->precision.compute == DT_FP8 ? 1.0 : 2.0;
    double eff = rows / (rows + x->c->expert_rows_half);               /* of the large-GEMM efficiency */
    double one = gemm_roofline_s(x, rows, m->hidden, mats * inner, b, eff) +
                 gemm_roofline_s(x, rows, inner, m->hidden, b, eff);
    x->expert_fwd_s = (local < 1.0 ? 1.0 : local) * one;
}

/* Per GPU, per MoE layer and micro-batch: dispatch and combine, forward and backward. */
static void derive_a2a(plan_ctx *x, plan_result *out) {
    const scenario *s = x->s;
    const model_cfg *m = &s->model;
    double K = m->top_k, h = m->hidden;
    double b_sum = dtype_bytes(s->precision.dispatch) + dtype_bytes(s->precision.combine);
    /* forward dispatch + backward of combine move dispatch-precision bytes (DeepSeek-V3 §3.3.3
     * quantizes both to FP8); forward combine + backward of dispatch move combine-precision bytes.
     * Reported in seed 000 §2.4's convention: bytes a GPU sends plus receives per token and MoE layer
     * over the 4 all-to-alls (its tiny calculator: "GPU 0 sends 8 bytes and receives 8 bytes"), so
     * 2 x 2 x 2 x K x h x bytes = 8 x 8 x 7168 x 2 B = 917,504 B in BF16. The link time below uses
     * the sent half only (links are full duplex). */
    out->a2a_bytes_per_token_layer = m->experts > 0 ? 4.0 * K * h * b_sum : 0.0;
    if (m->experts <= 0 || x->mc.moe_layers == 0 || s->layout.ep <= 1) return;

    int ep = s->layout.ep;
    int q = x->ep_span.per_node, n = x->ep_span.nodes;
    double nvl_copies, rdma_copies = 0;
    if (n <= 1) {
        nvl_copies = K * (ep - 1) / ep;
    } else {
        double remote = K * (double)(ep - q) / ep;      /* copies whose expert is on another node */
        if (s->routing.node_limit > 0) {
            /* DeepEP: one RDMA copy per distinct destination node; tokens pick at most M nodes and
             * spread their K experts over them uniformly: E[distinct] = M (1 - (1 - 1/M)^K) */
            double M = s->routing.node_limit < n ? s->routing.node_limit : n;
            double distinct = M * (1.0 - pow(1.0 - 1.0 / M, K));
            rdma_copies = distinct * (n - 1) / n;
        } else {
            rdma_copies = remote;                        /* one transfer per remote expert */
        }
        /* NVLink: copies to peers on the own node, and the fan-out at each destination node from
         * the rail-aligned receiving GPU to the GPU that holds the expert */
        nvl_copies = K * (double)(q - 1) / ep + remote * (double)(q - 1) / q;
    }
    double tokens = x->tokens_mb / s->layout.tp;         /* sequence parallel: tokens per GPU */
    double per_copy = 2.0 * h * b_sum;                   /* both directions, forward + backward */
    double t_rdma = tokens * rdma_copies * per_copy / x->nic_Bps;
    double t_nvl = tokens * nvl_copies * per_copy / x->nvl_Bps;
    const latency_us_cfg *lat = &s->cluster.latency_us;
    double lat_us = n <= 1 ? lat->nvlink : n <= s->cluster.leaf_down_ports ? lat->same_leaf
                                                                          : lat->cross_leaf;
    x->a2a_layer_s = dmax(t_rdma, t_nvl) + 4.0 * lat_us * 1e-6;
}

static void derive(plan_ctx *x, const scenario *s, const plan_costs *c, plan_result *out) {
    const cluster_cfg *cl = &s->cluster;
    const layout_cfg *lay = &s->layout;
    x->s = s;
    x->c = c;
    model_count(&s->model, &x->mc);
    memory_activation_profile(&s->model, &s->precision, &x->ap);
    x->gpus = scn_gpus(s);
    x->m = scn_micro_batches(s);
    x->tokens_mb = (double)lay->micro_batch * s->model.seq_len;
    double peak = s->precision.compute == DT_FP8 ? cl->gpu.fp8_tflops * c->gemm_eff_fp8
                                                 : cl->gpu.bf16_tflops * c->gemm_eff_bf16;
    x->gemm_Fps = peak * 1e12;
    x->attn_Fps = cl->gpu.bf16_tflops * c->attn_eff * 1e12;
    x->hbm_Bps = cl->gpu.hbm_GBps * 1e9 * c->hbm_eff;
    x->nic_Bps = cl->nic_gbps / 8.0 * 1e9 * c->nic_eff;
    x->nvl_Bps = cl->nvlink_GBps * 1e9 * c->nvlink_eff;

    int gpn = cl->gpus_per_node;
    int ep_inner = lay->placement == PLACE_EP_INNER;
    /* rank order: tp fastest, then ep and dp (ep first for ep-inner), pp slowest */
    x->ep_span = span_of(lay->ep, ep_inner ? lay->tp : lay->tp * lay->dp, gpn);
    x->attn_dp_span = span_of(lay->ep * lay->dp, lay->tp, gpn);
    x->exp_dp_span = span_of(lay->dp, ep_inner ? lay->tp * lay->ep : lay->tp, gpn);

    x->expert_fwd_s = 0;
    x->a2a_layer_s = 0;
    derive_experts(x);
    derive_a2a(x, out);

    int stage_gpus = x->gpus / lay->pp;
    double bw_pp = stage_gpus >= gpn ? x->nic_Bps : x->nvl_Bps;
    double lat_pp = (stage_gpus >= gpn ? cl->latency_us.cross_leaf : cl->latency_us.nvlink) * 1e-6;
    x->p2p_msg_s = x->tokens_mb / lay->tp * s->model.hidden * 2.0 / bw_pp + lat_pp;

    int overlapped = lay->schedule == SCHED_DUALPIPE && x->mc.moe_layers > 0 && lay->ep > 1;
    x->sm_slow = overlapped ? 1.0 / (1.0 - c->comm_sm_fraction) : 1.0;
}

/* ---- one pipeline stage ---------------------------------------------------------------------------- */
typedef struct { double F, c_mb, comm_mb; } stage_time;

static void stage_timing(const plan_ctx *x, int stage, stage_time *st) {
    const scenario *s = x->s;
    const layout_cfg *lay = &s->layout;
    const model_counts *mc = &x->mc;
    int nd, nm;
    stage_layers(mc->layers, mc->dense_layers, lay->pp, stage, &nd, &nm);
    double tok = x->tokens_mb / lay->tp;   /* FLOPs and bytes per GPU: TP splits them */
    double gemm_flops = nd * (mc->fwd_attn_proj + mc->fwd_dense_ffn) +
                        nm * (mc->fwd_attn_proj + mc->fwd_shared + mc->fwd_router);
    if (stage == lay->pp - 1) gemm_flops += mc->fwd_head;
    double t = tok * gemm_flops / x->gemm_Fps;
    t += tok * (nd + nm) * mc->fwd_attn_core / x->attn_Fps;
    t += nm * x->expert_fwd_s;
    double act = nd * x->ap.dense_layer[RECOMPUTE_NONE] + nm * x->ap.moe_layer[RECOMPUTE_NONE];
    t += x->c->elementwise_passes / 3.0 * tok * act / x->hbm_Bps;   /* forward's share of 3 F */
    st->F = t * x->sm_slow;
    st->c_mb = 3.0 * st->F;
    if (lay->recompute == RECOMPUTE_FULL) st->c_mb += st->F;
    else if (lay->recompute == RECOMPUTE_SELECTIVE)
        st->c_mb += tok * (nd + nm) * 2.0 * mc->attn_up_proj / x->gemm_Fps * x->sm_slow;

    int msgs = (stage > 0) + (stage < lay->pp - 1);
    double v = lay->schedule == SCHED_INTERLEAVED && lay->vpp > 1 ? lay->vpp : 1;
    st->comm_mb = nm * x->a2a_layer_s + msgs * v * x->p2p_msg_s;
}

/* DP synchronization of one GPU holding `ne` non-expert and `ex` expert parameters, replicated over
 * groups of g_ne and g_ex ranks: ring reduce-scatter (or all-reduce) of BF16 gradients and
 * all-gather of weights. */
static void dp_sync_s(const plan_ctx *x, double ne, double ex, double g_ne, double g_ex,
                      double *t_rs, double *t_ag) {
    const scenario *s = x->s;
    double bw_ne = x->attn_dp_span.nodes > 1 ? x->nic_Bps : x->nvl_Bps;
    double bw_ex = x->exp_dp_span.nodes > 1 ? x->nic_Bps : x->nvl_Bps;
    double f_ne = g_ne > 1 ? (g_ne - 1) / g_ne : 0, f_ex = g_ex > 1 ? (g_ex - 1) / g_ex : 0;
    double w_b = dtype_bytes(s->precision.compute);
    *t_rs = f_ne * 2.0 * ne / bw_ne + f_ex * 2.0 * ex / bw_ex;
    *t_ag = f_ne * w_b * ne / bw_ne + f_ex * w_b * ex / bw_ex;
    if (s->layout.zero == 0) { *t_rs *= 2.0; *t_ag = 0; }   /* all-reduce = reduce-scatter + all-gather */
}

static int check_input(const scenario *s, moe_error *err) {
    const layout_cfg *l = &s->layout;
    const char *f = s->file;
    char v[64];
    if (l->tp < 1 || l->pp < 1 || l->ep < 1 || l->dp < 1) {
        snprintf(v, sizeof v, "%dx%dx%dx%d", l->tp, l->pp, l->ep, l->dp);
        return moe_error_input(err, f, "layout", v, "tp, pp, ep, dp >= 1");
    }
    long prod = (long)l->tp * l->pp * l->ep * l->dp;
    if (prod != scn_gpus(s)) {
        snprintf(v, sizeof v, "tp*pp*ep*dp = %ld", prod);
        return moe_error_input(err, f, "layout", v, "the GPU count %d", scn_gpus(s));
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

static void fill_params(const model_counts *mc, plan_result *out) {
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
    out->flops_per_token = mc->flops_per_token;
    out->flops_per_token_6n = mc->flops_per_token_6n;
}

static void reliability_plan(const scenario *s, const model_counts *mc, plan_result *out) {
    const reliability_cfg *r = &s->reliability;
    const checkpoint_cfg *ck = &r->checkpoint;
    double full_state_b = dtype_bytes(s->precision.compute) + dtype_bytes(s->precision.master) + 8.0;
    out->checkpoint_state_bytes = ck->state_bytes >= 0 ? ck->state_bytes : mc->params_total * full_state_b;
    out->checkpoint_write_s = ck->write_min >= 0 ? ck->write_min * 60.0
                            : out->checkpoint_state_bytes / (s->cluster.storage_GBps * 1e9);
    if (r->gpu_mtbf_h <= 0) return;
    out->mtbf_cluster_h = mtbf_system(r->gpu_mtbf_h, scn_gpus(s));
    double M = out->mtbf_cluster_h * 60.0, d = out->checkpoint_write_s / 60.0;   /* minutes */
    out->young_interval_min = young_interval(d, M);
    out->daly_first_order_min = daly_first_order(d, M);
    out->daly_interval_min = daly_interval(d, M);
}

static void layout_warnings(const plan_ctx *x, plan_result *out) {
    const scenario *s = x->s;
    const layout_cfg *l = &s->layout;
    if (l->zero >= 3 && l->pp > 1)
        warn(out, "ZeRO-3 with PP=%d: parameter all-gathers repeat for each of the %d micro-batches "
                  "(seed 000 §1.2); use ZeRO-1", l->pp, x->m);
    else if (l->zero == 2 && l->pp > 1)
        warn(out, "ZeRO-2 with PP=%d: sharded gradients are reduce-scattered after each of the %d "
                  "micro-batches; use ZeRO-1", l->pp, x->m);
    if (l->tp > s->cluster.gpus_per_node)
        warn(out, "TP=%d spans nodes (%d GPUs per node): tensor-parallel collectives cross the NICs",
             l->tp, s->cluster.gpus_per_node);
    if (s->model.experts > 0 && x->ep_span.nodes > s->cluster.leaf_down_ports)
        warn(out, "EP group spans %d nodes > %d under one leaf switch: its all-to-all crosses the spine",
             x->ep_span.nodes, s->cluster.leaf_down_ports);
    if (l->pp > s->model.layers)
        warn(out, "PP=%d exceeds the %d layers: some stages hold no layer", l->pp, s->model.layers);
    if (l->schedule == SCHED_DUALPIPE && (l->pp % 2 != 0 || x->m < 2 * l->pp))
        warn(out, "DualPipe needs an even PP and at least 2*PP micro-batches (PP=%d, m=%d)", l->pp, x->m);
}

int plan_evaluate_with(const scenario *s, const plan_costs *c, plan_result *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    if (check_input(s, err)) return err->code;
    plan_ctx x;
    derive(&x, s, c, out);
    fill_params(&x.mc, out);
    const layout_cfg *lay = &s->layout;
    int pp = lay->pp, dual = lay->schedule == SCHED_DUALPIPE && pp > 1;

    /* ---- compute budget (seed 003 step 1) ---- */
    out->total_flops = budget_total_flops(s->run.tokens, out->flops_per_token_6n);

    /* ---- per pipeline rank: memory and time; keep the worst ---- */
    mem_ledgers worst = {0};
    double worst_t = -1, F_b = 0, c_b = 0, e_b = 0, dp_exposed = 0, opt_s = 0;
    double copies = dual ? 2.0 : 1.0;
    double g_ne = (double)scn_attn_dp(s) * copies, g_ex = (double)lay->dp * copies;
    int last = dual ? (pp - 1) / 2 : pp - 1;   /* DualPipe ranks r and pp-1-r are mirror images */
    for (int r = 0; r <= last; r++) {
        mem_ledgers ml;
        memory_rank_ledgers(s, &x.mc, &x.ap, x.m, r, &ml);
        if (ml.total > worst.total) worst = ml;

        stage_time st;
        stage_timing(&x, r, &st);
        stage_params sp;
        memory_stage_params(&x.mc, &s->model, lay, r, &sp);
        if (dual && pp - 1 - r != r) {
            stage_time st2;
            stage_params sp2;
            stage_timing(&x, pp - 1 - r, &st2);
            memory_stage_params(&x.mc, &s->model, lay, pp - 1 - r, &sp2);
            st.F = 0.5 * (st.F + st2.F);
            st.c_mb = 0.5 * (st.c_mb + st2.c_mb);
            st.comm_mb = 0.5 * (st.comm_mb + st2.comm_mb);
            sp.nonexpert += sp2.nonexpert;
            sp.expert += sp2.expert;
        }
        double exposed = dual ? dmax(0.0, st.comm_mb - st.c_mb) : st.comm_mb;
        if (st.c_mb + exposed > worst_t) {
            worst_t = st.c_mb + exposed;
            F_b = st.F; c_b = st.c_mb; e_b = exposed;
        }
        /* DP sync after the last backward; ZeRO-2/3 repeat part of it per micro-batch */
        double t_rs, t_ag;
        dp_sync_s(&x, sp.nonexpert, sp.expert, g_ne, g_ex, &t_rs, &t_ag);
        double dp = dmax(0.0, t_rs - 2.0 * st.F) + dmax(0.0, t_ag - st.F);
        if (lay->zero == 2 && pp > 1) dp += (x.m - 1) * dmax(0.0, t_rs - 2.0 * st.F);
        if (lay->zero >= 3) dp += 2.0 * x.m * dmax(0.0, t_ag - st.F);
        if (dp > dp_exposed) dp_exposed = dp;
        /* optimizer: read the BF16 gradient, read+write master, m and v, write the weight */
        double shard = sp.nonexpert / g_ne + sp.expert / g_ex;
        double upd_b = 2.0 + 2.0 * (dtype_bytes(s->precision.master) + 8.0) + dtype_bytes(s->precision.compute);
        double o = shard * upd_b / x.hbm_Bps;
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
    snprintf(out->overflow, sizeof out->overflow, "%s", overflow);

    /* ---- step time ---- */
    int m = x.m;
    out->compute_s = m * c_b;
    double pipe_exposed = m * e_b;
    switch (dual ? SCHED_DUALPIPE : lay->schedule) {
    case SCHED_DUALPIPE:
        /* F forward chunk, B full backward chunk (2F), W weight-gradient chunk (F), F&B the
         * overlapped pair (F + B plus what communication it could not hide) */
        out->bubble_s = bubble_dualpipe_s(pp, 2.0 * F_b, F_b, c_b + e_b);
        break;
    case SCHED_INTERLEAVED:
        out->bubble_s = (pp - 1) * (c_b + e_b) / (lay->vpp > 1 ? lay->vpp : 1);
        break;
    case SCHED_1F1B:
    default:
        out->bubble_s = (pp - 1) * (c_b + e_b);
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

    reliability_plan(s, &x.mc, out);

    /* ---- warnings ---- */
    layout_warnings(&x, out);
    if (out->bubble_fraction > 0.20)
        warn(out, "pipeline bubble %.0f%% > 20%%: more micro-batches (m=%d) or a smaller PP",
             100.0 * out->bubble_fraction, m);
    if (dual && e_b > 0)
        warn(out, "all-to-all + P2P exceed compute per micro-batch by %.0f%%: DualPipe hides only up to "
                  "the compute time", 100.0 * e_b / c_b);
    return 0;
}

int plan_evaluate(const scenario *s, plan_result *out, moe_error *err) {
    plan_costs c;
    plan_costs_default(&c);
    return plan_evaluate_with(s, &c, out, err);
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
    cJSON *b = cJSON_AddObjectToObject(obj, "params_breakdown");
    cJSON_AddNumberToObject(b, "embedding", p->params_embedding);
    cJSON_AddNumberToObject(b, "head", p->params_head);
    cJSON_AddNumberToObject(b, "attention", p->params_attention);
    cJSON_AddNumberToObject(b, "dense_ffn", p->params_dense_ffn);
    cJSON_AddNumberToObject(b, "router", p->params_router);
    cJSON_AddNumberToObject(b, "shared_experts", p->params_shared_experts);
    cJSON_AddNumberToObject(b, "routed_experts", p->params_routed_experts);
    cJSON_AddNumberToObject(b, "norms", p->params_norms);
}
