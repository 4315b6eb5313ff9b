/* diagnose_report.c — the diagnoser's reports (diagnose.h): text with the seed's advice, and JSON.
 *
 * The advice is seed 000's (§3.1 NCCL hang triage tree, §4.2 diagnoser output), translated, with the
 * commands an on-call engineer types. Ranks are always named with their node and GPU, because the
 * person reading the report will log into a node, not into a rank. */
#include "sim/report/diagnose.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#define MAX_HOLDERS_SHOWN 8
#define MAX_WAITING_SHOWN 32
#define MAX_STRAGGLERS_SHOWN 32

static void place_str(const diag_place *p, char *buf, size_t cap) {
    snprintf(buf, cap, "rank %d (node %d, GPU %d; global GPU %d)", p->rank, p->node, p->local_gpu, p->gpu);
}

/* ---- text: stragglers ------------------------------------------------------------------------ */

static void print_rule(FILE *f, const diag_rules *rules, int pp) {
    fprintf(f, "  rule: > mean + 2 sd");
    if (rules->min_excess > 0) fprintf(f, " (and >= %.0f%% over the mean)", rules->min_excess * 100.0);
    fprintf(f, ", or > 1.25 x mean%s\n", pp > 1 ? "; among the ranks of the same pipeline stage" : "");
}

/* Several stragglers on one node point at the node (host CPU, cooling, PCIe switch, NIC), not at
 * one GPU. Stragglers are few, so the quadratic scan is fine. */
static void print_shared_nodes(FILE *f, const diag_trace *t, const diag_straggler_report *s) {
    for (int i = 0; i < s->n_stragglers; i++) {
        int node = s->stragglers[i].where.node, k = 0, first = 1;
        for (int j = 0; j < s->n_stragglers; j++) {
            if (s->stragglers[j].where.node != node) continue;
            first &= j >= i;
            k++;
        }
        if (first && k >= 2)
            fprintf(f, "  node %d: %d of its %d GPUs straggle: suspect the node (host, cooling, PCIe switch), not one GPU\n",
                    node, k, t->gpus_per_node);
    }
}

static void print_stragglers(FILE *f, const diag_trace *t, const diag_straggler_report *s, const char *title,
                             int primary) {
    fprintf(f, "%s (%s)\n", title, s->signal);
    if (!primary && s->n_stragglers == 0 && s->n_stages > 1) {
        /* the secondary signal in one line when it has nothing to say */
        double lo = s->stages[0].min_s, hi = s->stages[0].max_s;
        for (int k = 1; k < s->n_stages; k++) {
            lo = fmin(lo, s->stages[k].min_s);
            hi = fmax(hi, s->stages[k].max_s);
        }
        fprintf(f, "  %d stages, min %.4f s, max %.4f s\n", s->n_stages, lo, hi);
    }
    for (int k = 0; k < s->n_stages && (primary || s->n_stragglers || s->n_stages == 1); k++) {
        const diag_stage_stats *st = &s->stages[k];
        if (t->pp > 1) fprintf(f, "  stage %d: ", st->stage);
        else fprintf(f, "  ");
        fprintf(f, "%d ranks, mean %.4f s, sd %.4f s, min %.4f s, max %.4f s; flags above %.4f s\n", st->n,
                st->mean_s, st->sd_s, st->min_s, st->max_s, st->threshold_s);
    }
    if (s->n_stragglers == 0) {
        fprintf(f, "  [PASS] no straggler: the ranks' %s agree\n", primary ? "busy times" : "step times");
        return;
    }
    for (int i = 0; i < s->n_stragglers && i < MAX_STRAGGLERS_SHOWN; i++) {
        const diag_straggler *g = &s->stragglers[i];
        char where[128];
        place_str(&g->where, where, sizeof where);
        fprintf(f, "  [WARN] straggler: %s: %.4f s, +%.1f%% over the mean (%s%s%s; stage %d, ep %d, replica %d)\n",
                where, g->time_s, g->pct_over_mean, g->by_sigma ? "> mean + 2 sd" : "",
                g->by_sigma && g->by_ratio ? ", " : "", g->by_ratio ? "> 1.25 x mean" : "", g->where.stage,
                g->where.ep_index, g->where.replica);
        if (g->holds_hot_expert)
            fprintf(f, "         it holds a hot expert (below): slow because of routing, not (only) hardware\n");
    }
    if (s->n_stragglers > MAX_STRAGGLERS_SHOWN)
        fprintf(f, "  ... and %d more stragglers (see --json)\n", s->n_stragglers - MAX_STRAGGLERS_SHOWN);
    print_shared_nodes(f, t, s);
    int hardware = 0;
    for (int i = 0; i < s->n_stragglers; i++) hardware |= !s->stragglers[i].holds_hot_expert;
    if (primary && !hardware)
        fprintf(f, "  advice: every straggler holds a hot expert: balance the routing (below) before suspecting hardware\n");
    if (primary && hardware)
        fprintf(f, "  advice: on each named node check the GPU's PCIe link (nvidia-smi -q | grep -A2 'Link Width':\n"
                   "          a downgrade from x16 to x4/x8), NVIDIA XID errors in dmesg, and clock throttling\n"
                   "          (nvidia-smi -q -d PERFORMANCE: thermal / power slowdown); drain the node if it persists\n");
}

/* ---- text: expert load ----------------------------------------------------------------------- */

static void print_holders(FILE *f, const diag_hot_expert *h) {
    if (h->ep_index < 0) {
        fprintf(f, "         placement unknown (experts not divisible by ep)\n");
        return;
    }
    fprintf(f, "         on EP index %d, held by %d rank%s:", h->ep_index, h->n_holders, h->n_holders == 1 ? "" : "s");
    for (int i = 0; i < h->n_holders && i < MAX_HOLDERS_SHOWN; i++) {
        char where[128];
        place_str(&h->holders[i], where, sizeof where);
        fprintf(f, "%s %s", i ? "," : "", where);
    }
    if (h->n_holders > MAX_HOLDERS_SHOWN) fprintf(f, ", and %d more (see --json)", h->n_holders - MAX_HOLDERS_SHOWN);
    fprintf(f, "\n");
}

static void print_links(FILE *f, const diag_link_report *l) {
    fprintf(f, "Slow links (time in all-to-alls of each EP group vs the other groups of its stage)\n");
    if (!l->present) {
        fprintf(f, "  skipped (no rank_a2a_s in the trace, or one EP group per stage)\n");
        return;
    }
    if (l->n == 0) {
        fprintf(f, "  [PASS] no EP group waits > %.2fx the median of its stage's other groups\n", DIAG_SLOW_GROUP_RATIO);
        return;
    }
    for (int i = 0; i < l->n; i++) {
        const diag_slow_group *g = &l->groups[i];
        fprintf(f, "  [FAIL] stage %d, replica %d, tp %d: EP group of ranks %d..%d (nodes %d-%d) spends %.4f s\n"
                   "         in all-to-alls vs %.4f s in the stage's other groups (%+.1f%%)\n",
                g->stage, g->replica, g->tp_index, g->first_rank, g->last_rank,
                g->node_lo, g->node_hi, g->comm_s, g->others_s,
                100.0 * (g->comm_s - g->others_s) / (g->others_s > 0 ? g->others_s : 1e-12));
    }
    fprintf(f, "  advice: its all-to-alls are slower with the same work and routing: a degraded NIC, optic or\n"
               "          NVLink on those nodes — ibstat / perfquery (LinkFlap, SymbolErrors), nvidia-smi\n"
               "          nvlink -e, NCCL logs 'via P2P/PCIe' where NVLink was expected; bisect with\n"
               "          NCCL_IB_DISABLE=1 / NCCL_P2P_DISABLE=1\n");
}

static void print_load(FILE *f, const diag_expert_report *l) {
    if (!l->present) {
        fprintf(f, "Expert load: no per-expert token counts in the trace (dense model?)\n");
        return;
    }
    const expert_load_stats *e = &l->experts;
    fprintf(f, "Expert load (%s: %zu experts, %.0f token-expert pairs)\n", l->signal, e->n, e->total);
    if (isfinite(l->dropped_fraction) && l->dropped_fraction > 0)
        fprintf(f, "  %.1f%% of the routed tokens were dropped by the capacity limit\n", l->dropped_fraction * 100.0);
    fprintf(f, "  CV %.3f, max/min %.2f, Gini %.3f; busiest %.0f, idlest %.0f tokens\n", e->cv, e->max_min, e->gini,
            e->max, e->min);
    if (l->ep_ranks_valid)
        fprintf(f, "  per EP rank: CV %.3f, max/min %.2f, Gini %.3f\n", l->ep_ranks.cv, l->ep_ranks.max_min,
                l->ep_ranks.gini);
    if (!e->severe) {
        fprintf(f, "  [PASS] balanced: CV <= 0.4 and max/min <= 3\n");
        return;
    }
    fprintf(f, "  [WARN] severe imbalance: %s%s%s\n", e->cv > EXPERT_LOAD_CV_SEVERE ? "CV > 0.4" : "",
            e->cv > EXPERT_LOAD_CV_SEVERE && e->max_min > EXPERT_LOAD_MAX_MIN_SEVERE ? ", " : "",
            e->max_min > EXPERT_LOAD_MAX_MIN_SEVERE ? "max/min > 3" : "");
    for (int j = 0; j < l->n_hot; j++) {
        const diag_hot_expert *h = &l->hot[j];
        fprintf(f, "  hot expert %d: %.0f tokens, %.1f%% of all, %.2f x the mean\n", h->expert, h->tokens,
                h->share * 100.0, h->x_mean);
        print_holders(f, h);
    }
    fprintf(f, "  advice: raise the router's auxiliary balance-loss coefficient (aux_loss_coeff, 0.01-0.05);\n"
               "          set the capacity factor to 1.25 so that the hot expert does not drop tokens\n");
}

/* ---- text: hang ------------------------------------------------------------------------------ */

/* Last-op labels come as op-class names ("attn_fwd", "a2a_combine") or as the simulator's labels
 * ("COMPUTE attn_fwd", "A2A_COMBINE", "(not started)"; sim/exec/trace.h); both are understood. The op is
 * the rank's last *finished* op: the rank hangs in whatever it does after it. */
static int op_not_started(const char *op) { return !op[0] || strncmp(op, "(not started", 12) == 0; }

static void print_last_op(FILE *f, const diag_hang *h, int rank) {
    const diag_last_op *l = NULL;
    for (int i = 0; i < h->n_last; i++)
        if (h->last[i].rank == rank) l = &h->last[i];
    if (!l) return;
    if (op_not_started(l->op)) {
        fprintf(f, "         it never started an op: the process died or never launched (NCCL init, data loader)\n");
        return;
    }
    fprintf(f, "         last finished op: %s", l->op);
    if (l->layer >= 0) fprintf(f, ", layer %d", l->layer);
    if (l->micro_batch >= 0) fprintf(f, ", micro-batch %d", l->micro_batch);
    fprintf(f, "\n         it stopped after that op and never issued the collective: a hung kernel (GEMM /\n"
               "         FlashAttention), a dead GPU, or a stuck host thread (data loader, Python)\n");
}

static void print_hang(FILE *f, const diag_trace *t, const diag_hang *h) {
    fprintf(f, "Hang\n");
    if (h->group >= 0)
        fprintf(f, "  [FAIL] the step did not finish: %d rank%s wait in %s of %s group %d (layer %d, micro-batch %d)\n",
                h->n_waiting, h->n_waiting == 1 ? "" : "s", h->op, h->group_kind, h->group, h->layer, h->micro_batch);
    else
        fprintf(f, "  [FAIL] the step did not finish; no rank is inside a collective (blocked on pipeline receives)\n");
    if (h->n_waiting) {
        fprintf(f, "         waiting:");
        for (int i = 0; i < h->n_waiting && i < MAX_WAITING_SHOWN; i++) fprintf(f, " %d", h->waiting[i]);
        if (h->n_waiting > MAX_WAITING_SHOWN) fprintf(f, " ... and %d more (see --json)", h->n_waiting - MAX_WAITING_SHOWN);
        fprintf(f, "\n");
    }
    if (h->blocked_elsewhere)
        fprintf(f, "         %d more rank%s blocked elsewhere behind them\n", h->blocked_elsewhere,
                h->blocked_elsewhere == 1 ? " is" : "s are");
    if (h->n_missing == 0) {
        fprintf(f, "  nobody is missing from the collective: a true deadlock (ranks wait in different collectives);\n"
                   "  check that every rank issues its collectives in the same order\n");
    }
    int same_node = 1;
    for (int i = 0; i < h->n_missing; i++) {
        diag_place p, p0;
        diag_locate(t, h->missing[i], &p);
        diag_locate(t, h->missing[0], &p0);
        same_node &= p.node == p0.node;
        char where[128];
        place_str(&p, where, sizeof where);
        fprintf(f, "  missing: %s; stage %d, ep %d, replica %d\n", where, p.stage, p.ep_index, p.replica);
        print_last_op(f, h, h->missing[i]);
    }
    if (h->n_missing == 1)
        fprintf(f, "  culprit: all ranks but one wait inside the collective; the odd one out, rank %d, is the culprit\n",
                h->missing[0]);
    else if (h->n_missing > 1 && same_node)
        fprintf(f, "  culprit: the missing ranks share one node: suspect that node\n");
    if (h->n_missing > 0) {
        diag_place p;
        diag_locate(t, h->missing[0], &p);
        fprintf(f, "  next steps:\n"
                   "    1. rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL TORCH_DISTRIBUTED_DEBUG=DETAIL\n"
                   "       NCCL_ASYNC_ERROR_HANDLING=1 so that a hang is reported, not silent\n"
                   "    2. on node %d: py-spy dump --pid <pid of rank %d> (or pstack): the culprit sits in a compute\n"
                   "       kernel (GEMM / FlashAttention) or never issued the collective; the others sit in\n"
                   "       ncclKernel_AllToAll / AllReduce\n"
                   "    3. on node %d: dmesg | grep -i xid — XID 43 (GPU stopped processing), 45 (preemptive\n"
                   "       cleanup), 79 (GPU fallen off the bus); ibstat / perfquery for link flaps and symbol errors;\n"
                   "       NCCL log lines 'via P2P/PCIe' where NVLink was expected (NVLink downgraded)\n"
                   "    4. bisect: NCCL_P2P_DISABLE=1 — if the hang goes away, intra-node NVLink / NVSwitch;\n"
                   "       NCCL_IB_DISABLE=1 — if it goes away, the inter-node fabric (optics, switch, subnet manager)\n",
                p.node, p.rank, p.node);
    }
}

static void print_seconds(FILE *f, double s) {
    if (isfinite(s)) fprintf(f, "%.4f s", s);
    else fprintf(f, "forever");
}

/* NCCL's watchdog (seed 000 §3.1: NCCL_ASYNC_ERROR_HANDLING makes a hang an error). */
static void print_timeout(FILE *f, const diag_timeout *x) {
    if (x->by_qp_retry) {
        fprintf(f, "transport retry counter exceeded: rank %d (node %d GPU %d) sent into a stalled receiver's queue, "
                   "which the fabric discarded, in %s (layer %d, micro-batch %d) of %s group %d; its queue pair failed "
                   "%.3f s after it arrived, before the %.0f s watchdog: the job fails at t = %.3f s\n"
                   "  and restarts from its last checkpoint (the run level counts it with that detection delay)\n",
                x->rank, x->node, x->gpu, x->op, x->layer, x->micro_batch, x->group_kind, x->group, x->detect_s,
                x->timeout_s, x->fired_s);
        return;
    }
    fprintf(f, "NCCL timeout: rank %d (node %d GPU %d) waited ", x->rank, x->node, x->gpu);
    print_seconds(f, x->waited_s);
    fprintf(f, " in %s (layer %d, micro-batch %d) of %s group %d, past the %.0f s timeout: the job fails at t = %.3f s\n"
               "  and restarts from its last checkpoint (the run level counts it with the timeout as detection delay)\n",
            x->op, x->layer, x->micro_batch, x->group_kind, x->group, x->timeout_s, x->fired_s);
}

/* The lossless fabric's worst incast (sim/exec/step_pfc.h). */
static void print_pfc(FILE *f, const diag_pfc *x) {
    fprintf(f, "Lossless fabric (%s): the hottest receiver is node %d GPU %d (global GPU %d); its incast at %s drains in %.3f ms\n",
            x->credits ? "InfiniBand credits" : "PFC", x->hot_node, x->hot_local_gpu, x->hot_gpu, x->root_link,
            x->root_drain_s * 1e3);
    if (x->stalled_gpu >= 0 && isfinite(x->stall_discard_s))
        fprintf(f, "  GPU %d stopped draining (it never arrived): the switch discards its queue after %.3f ms (%s), which\n"
                   "  frees the ports behind it; what was bound for it is lost\n", x->stalled_gpu, x->stall_discard_s * 1e3,
                x->credits ? "head-of-queue lifetime" : "PFC watchdog");
    else if (x->stalled_gpu >= 0)
        fprintf(f, "  GPU %d stopped draining (it never arrived): its pause never clears (a %s storm)\n", x->stalled_gpu,
                x->credits ? "credit" : "PFC");
    fprintf(f, "  %d links paused by its back-pressure (longest held first):\n", x->paused_links_count);
    for (int i = 0; i < x->n_links && i < 8; i++) {
        fprintf(f, "    %-16s own drain %.3f ms, held ", x->links[i].link, x->links[i].drain_s * 1e3);
        if (isfinite(x->links[i].held_s)) fprintf(f, "%.3f ms\n", x->links[i].held_s * 1e3);
        else fprintf(f, "forever\n");
    }
    if (x->paused_links_count > 8) fprintf(f, "    ... and %d more\n", x->paused_links_count - 8);
    fprintf(f, "  %.0f flows that never touch the hot GPU are held up (head-of-line blocking), the worst ", x->victim_flows);
    if (isfinite(x->max_victim_slowdown)) fprintf(f, "%.2fx", x->max_victim_slowdown);
    else fprintf(f, "forever");
    fprintf(f, "; %d GPUs have traffic behind the pause\n", x->held_gpus);
    if (x->max_victim_slowdown >= DIAG_PFC_VICTIM_SLOWDOWN)
        fprintf(f, "  advice (seed 000 §0.2): balance the router (auxiliary loss or DeepSeek-V3's bias), cap the hot expert\n"
                   "         (capacity factor), or move the all-to-all to DeepEP (one RDMA copy per node); ECN/DCQCN\n"
                   "         congestion control keeps PFC as the last resort\n");
}

void diag_report_print(FILE *f, const diag_trace *t, const diag_report *r, const diag_rules *rules) {
    fprintf(f, "simdiag: %s (%s; %d ranks = tp %d x pp %d x ep %d x dp %d, %d GPUs/node", t->file, t->source,
            t->ranks, t->tp, t->pp, t->ep, t->dp, t->gpus_per_node);
    if (t->has_step_time) fprintf(f, "; step %.4f s", t->step_time_s);
    fprintf(f, ")\n\n");
    if (r->hang) {
        print_hang(f, t, t->hang);
        fprintf(f, "\nStragglers: skipped (the step did not finish; per-rank times stop at the hang)\n");
    } else {
        if (r->compute.signal) {
            print_stragglers(f, t, &r->compute, "Stragglers by busy time", 1);
            print_rule(f, rules, t->pp);
        }
        if (r->step.signal) {
            fprintf(f, "\n");
            print_stragglers(f, t, &r->step, r->compute.signal ? "Step time per rank (secondary)" : "Stragglers by step time", !r->compute.signal);
            if (r->compute.signal && r->compute.n_stragglers && !r->step.n_stragglers)
                fprintf(f, "  note: a synchronous job waits for its slowest rank at every collective, so step times\n"
                           "        agree even when one rank is slow; busy time is what tells it apart\n");
            if (!r->compute.signal) print_rule(f, rules, t->pp);
        }
    }
    if (t->timeout) {
        fprintf(f, "\n");
        print_timeout(f, t->timeout);
    }
    if (t->pfc) {
        fprintf(f, "\n");
        print_pfc(f, t->pfc);
    }
    fprintf(f, "\n");
    print_load(f, &r->load);
    if (!r->hang && !(r->load.present && r->load.experts.severe)) {
        fprintf(f, "\n");
        print_links(f, &r->links);
    }
    fprintf(f, "\n");
    if (r->problems) fprintf(f, "verdict: %d problem%s found\n", r->problems, r->problems == 1 ? "" : "s");
    else fprintf(f, "verdict: healthy\n");
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static cJSON *place_json(const diag_place *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", p->rank);
    cJSON_AddNumberToObject(o, "node", p->node);
    cJSON_AddNumberToObject(o, "local_gpu", p->local_gpu);
    cJSON_AddNumberToObject(o, "gpu", p->gpu);
    cJSON_AddNumberToObject(o, "stage", p->stage);
    cJSON_AddNumberToObject(o, "ep_index", p->ep_index);
    cJSON_AddNumberToObject(o, "replica", p->replica);
    return o;
}

static cJSON *stragglers_json(const diag_straggler_report *s) {
    if (!s->signal) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "signal", s->signal);
    cJSON *st = cJSON_AddArrayToObject(o, "stages");
    for (int k = 0; k < s->n_stages; k++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "stage", s->stages[k].stage);
        cJSON_AddNumberToObject(x, "ranks", s->stages[k].n);
        cJSON_AddNumberToObject(x, "mean_s", s->stages[k].mean_s);
        cJSON_AddNumberToObject(x, "sd_s", s->stages[k].sd_s);
        cJSON_AddNumberToObject(x, "min_s", s->stages[k].min_s);
        cJSON_AddNumberToObject(x, "max_s", s->stages[k].max_s);
        cJSON_AddNumberToObject(x, "threshold_s", s->stages[k].threshold_s);
        cJSON_AddItemToArray(st, x);
    }
    cJSON *g = cJSON_AddArrayToObject(o, "stragglers");
    for (int i = 0; i < s->n_stragglers; i++) {
        const diag_straggler *d = &s->stragglers[i];
        cJSON *x = place_json(&d->where);
        cJSON_AddNumberToObject(x, "time_s", d->time_s);
        cJSON_AddNumberToObject(x, "stage_mean_s", d->stage_mean_s);
        cJSON_AddNumberToObject(x, "pct_over_mean", d->pct_over_mean);
        cJSON_AddBoolToObject(x, "by_sigma", d->by_sigma);
        cJSON_AddBoolToObject(x, "by_ratio", d->by_ratio);
        cJSON_AddBoolToObject(x, "holds_hot_expert", d->holds_hot_expert);
        cJSON_AddItemToArray(g, x);
    }
    return o;
}

static cJSON *stats_json(const expert_load_stats *e) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)e->n);
    cJSON_AddNumberToObject(o, "total", e->total);
    cJSON_AddNumberToObject(o, "mean", e->mean);
    cJSON_AddNumberToObject(o, "cv", e->cv);
    cJSON_AddNumberToObject(o, "max_min", e->max_min);
    cJSON_AddNumberToObject(o, "gini", e->gini);
    cJSON_AddNumberToObject(o, "max", e->max);
    cJSON_AddNumberToObject(o, "min", e->min);
    cJSON_AddBoolToObject(o, "severe", e->severe);
    return o;
}

static cJSON *load_json(const diag_expert_report *l) {
    if (!l->present) return cJSON_CreateNull();
    cJSON *o = stats_json(&l->experts);
    cJSON_AddStringToObject(o, "signal", l->signal);
    if (isfinite(l->dropped_fraction)) cJSON_AddNumberToObject(o, "dropped_fraction", l->dropped_fraction);
    else cJSON_AddNullToObject(o, "dropped_fraction");
    if (l->ep_ranks_valid) cJSON_AddItemToObject(o, "per_ep_rank", stats_json(&l->ep_ranks));
    cJSON *hot = cJSON_AddArrayToObject(o, "hottest");
    for (int j = 0; j < l->n_hot; j++) {
        const diag_hot_expert *h = &l->hot[j];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "expert", h->expert);
        cJSON_AddNumberToObject(x, "tokens", h->tokens);
        cJSON_AddNumberToObject(x, "share", h->share);
        cJSON_AddNumberToObject(x, "x_mean", h->x_mean);
        cJSON_AddNumberToObject(x, "ep_index", h->ep_index);
        cJSON *hs = cJSON_AddArrayToObject(x, "holders");
        for (int i = 0; i < h->n_holders; i++) cJSON_AddItemToArray(hs, place_json(&h->holders[i]));
        cJSON_AddItemToArray(hot, x);
    }
    return o;
}

static cJSON *hang_json(const diag_trace *t) {
    const diag_hang *h = t->hang;
    if (!h) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", h->op);
    cJSON_AddStringToObject(o, "group_kind", h->group_kind);
    cJSON_AddNumberToObject(o, "group", h->group);
    cJSON_AddNumberToObject(o, "layer", h->layer);
    cJSON_AddNumberToObject(o, "micro_batch", h->micro_batch);
    cJSON_AddItemToObject(o, "waiting", cJSON_CreateIntArray(h->waiting, h->n_waiting));
    cJSON_AddNumberToObject(o, "blocked_elsewhere", h->blocked_elsewhere);
    cJSON *m = cJSON_AddArrayToObject(o, "missing");
    for (int i = 0; i < h->n_missing; i++) {
        diag_place p;
        diag_locate(t, h->missing[i], &p);
        cJSON *x = place_json(&p);
        for (int k = 0; k < h->n_last; k++) {
            if (h->last[k].rank != p.rank) continue;
            cJSON *l = cJSON_AddObjectToObject(x, "last_op");
            if (!op_not_started(h->last[k].op)) cJSON_AddStringToObject(l, "op", h->last[k].op);
            else cJSON_AddNullToObject(l, "op");
            cJSON_AddNumberToObject(l, "layer", h->last[k].layer);
            cJSON_AddNumberToObject(l, "micro_batch", h->last[k].micro_batch);
        }
        cJSON_AddItemToArray(m, x);
    }
    if (h->n_missing == 1) cJSON_AddNumberToObject(o, "culprit_rank", h->missing[0]);
    else cJSON_AddNullToObject(o, "culprit_rank");
    return o;
}

cJSON *diag_report_json(const diag_trace *t, const diag_report *r, const diag_rules *rules) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "moesim-diagnosis/1");
    cJSON_AddStringToObject(o, "trace", t->file);
    cJSON_AddStringToObject(o, "source", t->source);
    cJSON_AddNumberToObject(o, "ranks", t->ranks);
    cJSON_AddBoolToObject(o, "healthy", r->problems == 0);
    cJSON_AddNumberToObject(o, "problems", r->problems);
    cJSON *ru = cJSON_AddObjectToObject(o, "rules");
    cJSON_AddNumberToObject(ru, "straggler_sigmas", DIAG_STRAGGLER_SIGMAS);
    cJSON_AddNumberToObject(ru, "straggler_ratio", DIAG_STRAGGLER_RATIO);
    cJSON_AddNumberToObject(ru, "min_excess", rules->min_excess);
    cJSON_AddNumberToObject(ru, "cv_severe", EXPERT_LOAD_CV_SEVERE);
    cJSON_AddNumberToObject(ru, "max_min_severe", EXPERT_LOAD_MAX_MIN_SEVERE);
    cJSON_AddItemToObject(o, "stragglers", stragglers_json(&r->compute));
    cJSON_AddItemToObject(o, "step_time", stragglers_json(&r->step));
    cJSON_AddItemToObject(o, "expert_load", load_json(&r->load));
    cJSON *sl = cJSON_AddArrayToObject(o, "slow_links");
    for (int i = 0; i < r->links.n; i++) {
        const diag_slow_group *g = &r->links.groups[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "stage", g->stage);
        cJSON_AddNumberToObject(x, "replica", g->replica);
        cJSON_AddNumberToObject(x, "tp_index", g->tp_index);
        cJSON_AddNumberToObject(x, "first_rank", g->first_rank);
        cJSON_AddNumberToObject(x, "ranks", g->n_ranks);
        cJSON_AddNumberToObject(x, "node_lo", g->node_lo);
        cJSON_AddNumberToObject(x, "node_hi", g->node_hi);
        cJSON_AddNumberToObject(x, "comm_s", g->comm_s);
        cJSON_AddNumberToObject(x, "others_s", g->others_s);
        cJSON_AddItemToArray(sl, x);
    }
    cJSON_AddItemToObject(o, "hang", hang_json(t));
    if (t->timeout) {
        const diag_timeout *x = t->timeout;
        cJSON *to = cJSON_AddObjectToObject(o, "collective_timeout");
        cJSON_AddNumberToObject(to, "rank", x->rank);
        cJSON_AddNumberToObject(to, "node", x->node);
        cJSON_AddNumberToObject(to, "gpu", x->gpu);
        cJSON_AddStringToObject(to, "op", x->op);
        cJSON_AddNumberToObject(to, "layer", x->layer);
        cJSON_AddNumberToObject(to, "micro_batch", x->micro_batch);
        if (isfinite(x->waited_s)) cJSON_AddNumberToObject(to, "waited_s", x->waited_s);
        else cJSON_AddNullToObject(to, "waited_s");
        cJSON_AddNumberToObject(to, "fired_s", x->fired_s);
        cJSON_AddNumberToObject(to, "detect_s", x->detect_s);
        cJSON_AddStringToObject(to, "detected_by", x->by_qp_retry ? "qp_retry_exhausted" : "watchdog");
    } else {
        cJSON_AddNullToObject(o, "collective_timeout");
    }
    if (t->pfc) {
        const diag_pfc *x = t->pfc;
        cJSON *pf = cJSON_AddObjectToObject(o, "pfc");
        cJSON_AddBoolToObject(pf, "finding", r->pfc_spread);
        cJSON_AddNumberToObject(pf, "hot_gpu", x->hot_gpu);
        cJSON_AddNumberToObject(pf, "hot_node", x->hot_node);
        cJSON_AddNumberToObject(pf, "hot_local_gpu", x->hot_local_gpu);
        cJSON_AddStringToObject(pf, "root_link", x->root_link);
        cJSON_AddNumberToObject(pf, "paused_links_count", x->paused_links_count);
        cJSON *pl = cJSON_AddArrayToObject(pf, "paused_links");
        for (int i = 0; i < x->n_links; i++) cJSON_AddItemToArray(pl, cJSON_CreateString(x->links[i].link));
        cJSON_AddNumberToObject(pf, "victim_flows", x->victim_flows);
        if (isfinite(x->max_victim_slowdown)) cJSON_AddNumberToObject(pf, "max_victim_slowdown", x->max_victim_slowdown);
        else cJSON_AddNullToObject(pf, "max_victim_slowdown");
    } else {
        cJSON_AddNullToObject(o, "pfc");
    }
    return o;
}

/* ---- compare --------------------------------------------------------------------------------- */

static void cell(FILE *f, double v, const char *fmt, int width) {
    if (isfinite(v)) fprintf(f, fmt, width, v);
    else fprintf(f, "%*s", width, "-");
}

void diag_compare_print(FILE *f, const diag_trace *pred, const diag_trace *meas, const diag_compare_report *r) {
    fprintf(f, "predicted: %s (%s)\nmeasured:  %s (%s)\n\n", pred->file, pred->source, meas->file, meas->source);
    fprintf(f, "%-26s %8s %14s %8s %14s %9s\n", "op class", "pred n", "pred mean us", "meas n", "meas mean us", "error");
    for (int i = 0; i < r->n_rows; i++) {
        const diag_compare_row *w = &r->rows[i];
        fprintf(f, "%-26s %8ld ", w->name, w->pred_count);
        cell(f, w->pred_mean_us, "%*.1f", 14);
        fprintf(f, " %8ld ", w->meas_count);
        cell(f, w->meas_mean_us, "%*.1f", 14);
        fprintf(f, " ");
        cell(f, w->error_pct, "%+*.1f", 8);
        fprintf(f, "%s\n", isfinite(w->error_pct) ? "%" : " ");
    }
    fprintf(f, "%-26s %8s ", "step time (s)", "");
    cell(f, r->pred_step_s, "%*.4f", 14);
    fprintf(f, " %8s ", "");
    cell(f, r->meas_step_s, "%*.4f", 14);
    fprintf(f, " ");
    cell(f, r->step_error_pct, "%+*.1f", 8);
    fprintf(f, "%s\n", isfinite(r->step_error_pct) ? "%" : " ");
    fprintf(f, "\nerror = (predicted - measured) / measured: positive means the simulator is pessimistic.\n"
               "Means are over the ranks each trace recorded. A collective's duration includes waiting for its\n"
               "last member where the trace measures from each rank's own arrival (live NCCL does).\n");
}

static void add_num_or_null(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

cJSON *diag_compare_json(const diag_trace *pred, const diag_trace *meas, const diag_compare_report *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "moesim-compare/1");
    cJSON_AddStringToObject(o, "predicted", pred->file);
    cJSON_AddStringToObject(o, "measured", meas->file);
    cJSON *rows = cJSON_AddArrayToObject(o, "classes");
    for (int i = 0; i < r->n_rows; i++) {
        const diag_compare_row *w = &r->rows[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "op", w->name);
        cJSON_AddNumberToObject(x, "predicted_count", (double)w->pred_count);
        add_num_or_null(x, "predicted_mean_us", w->pred_mean_us);
        cJSON_AddNumberToObject(x, "measured_count", (double)w->meas_count);
        add_num_or_null(x, "measured_mean_us", w->meas_mean_us);
        add_num_or_null(x, "error_pct", w->error_pct);
        cJSON_AddItemToArray(rows, x);
    }
    cJSON *st = cJSON_AddObjectToObject(o, "step_time_s");
    add_num_or_null(st, "predicted", r->pred_step_s);
    add_num_or_null(st, "measured", r->meas_step_s);
    add_num_or_null(st, "error_pct", r->step_error_pct);
    add_num_or_null(o, "max_abs_error_pct", r->max_abs_error_pct);
    return o;
}
