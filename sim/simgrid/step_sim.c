#define _POSIX_C_SOURCE 200809L
/* step_sim.c — step_simulate(): one training step at op level (the `step` level of SCENARIO.md).
 *
 * Builds the step program (program.h, with the routing samples of sim/program/routing.h), picks the
 * executor — step.fidelity "fast": the fast executor (step_exec.h, with the replica shortcut) whose
 * all-to-alls and collectives are priced by the SimGrid pattern model (comm_simgrid.h: one flow-level run
 * per distinct pattern, memoized); "full": the SimGrid executor (exec_full.h) that runs every op
 * of every rank with every transfer as flows, for <= 256 GPUs — prices compute with the scenario's
 * cost model (costmodel.h), and fills step_result (with
 * breakdown.routing and breakdown.comm_patterns: SimGrid patterns simulated, memo hits); writes
 * trace.json (trace.h) when asked. A stalled rank (faults.stalls) makes the step hang: EXIT_RUNTIME
 * with the culprit named in err, and trace.json still written with otherData.hang. */
#include "sim/simgrid/step_sim.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "platforms/fabric_geometry.h"
#include "sim/exec/comm.h"
#include "sim/plan/costmodel.h"
#include "sim/scenario/link_loss.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/plan/model.h"
#include "sim/program/program.h"
#include "sim/program/routing_drift.h"
#include "sim/exec/step_series.h"
#include "sim/exec/eplb_series.h"
#include "sim/simgrid/comm_simgrid.h"
#include "sim/simgrid/exec_full.h"
#include "sim/exec/step_accounting.h"
#include "sim/exec/step_exec.h"
#include "sim/exec/step_pfc.h"
#include "sim/exec/step_scale.h"
#include "sim/exec/trace.h"

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static cJSON *rank_entry(const program *p, const step_exec_result *x, int r) {
    int d, s, e, t, gpu = program_gpu_of_rank(p, r);
    program_coords(p, r, &d, &s, &e, &t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", r);
    cJSON_AddNumberToObject(o, "gpu", gpu);
    cJSON_AddNumberToObject(o, "node", gpu / p->scn->cluster.gpus_per_node);
    cJSON_AddNumberToObject(o, "stage", s);
    cJSON_AddNumberToObject(o, "ep_index", e);
    cJSON_AddNumberToObject(o, "replica", d);
    cJSON_AddNumberToObject(o, "compute_s", x->split[r].compute_s);
    cJSON_AddNumberToObject(o, "optimizer_s", x->split[r].optimizer_s);
    cJSON_AddNumberToObject(o, "exposed_comm_s", x->split[r].exposed_comm_s);
    cJSON_AddNumberToObject(o, "bubble_s", x->split[r].bubble_s);
    return o;
}

#define TOP_N 8
static cJSON *slowest_ranks(const program *p, const step_exec_result *x) {
    int top[TOP_N], n = step_trace_slowest_ranks(x, p->n_ranks, TOP_N, top);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, rank_entry(p, x, top[i]));
    return arr;
}

/* Who waits for whom: per simulated EP group, the member that most often arrived last at its
 * all-to-alls; and the all-to-all with the largest arrival spread. */
static cJSON *a2a_waits(const program *p, const step_exec_result *x) {
    cJSON *o = cJSON_CreateObject();
    cJSON *groups = cJSON_AddArrayToObject(o, "last_arrival_per_ep_group");
    for (int g = 0; g < p->n_groups; g++) {
        const program_group *G = &p->groups[g];
        if (G->kind != GROUP_EP || G->n < 2 || x->sim_rank[G->ranks[0]] != G->ranks[0]) continue;
        int best = G->ranks[0];
        long total = 0;
        for (int m = 0; m < G->n; m++) {
            total += x->a2a_last_count[G->ranks[m]];
            if (x->a2a_last_count[G->ranks[m]] > x->a2a_last_count[best]) best = G->ranks[m];
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "group", g);
        cJSON_AddNumberToObject(e, "last_rank", best);
        cJSON_AddNumberToObject(e, "last_count", x->a2a_last_count[best]);
        cJSON_AddNumberToObject(e, "a2a_count", (double)total);
        cJSON_AddItemToArray(groups, e);
    }
    if (x->worst_a2a.group >= 0) {
        cJSON *w = cJSON_AddObjectToObject(o, "slowest_a2a");
        cJSON_AddNumberToObject(w, "group", x->worst_a2a.group);
        cJSON_AddNumberToObject(w, "layer", x->worst_a2a.layer);
        cJSON_AddNumberToObject(w, "mb", x->worst_a2a.mb);
        cJSON_AddNumberToObject(w, "last_rank", x->worst_a2a.last_rank);
        cJSON_AddNumberToObject(w, "wait_spread_s", x->worst_a2a.spread_s);
        cJSON_AddNumberToObject(w, "start_s", x->worst_a2a.start_s);
    }
    return o;
}

/* Progress of the executor: a line for the caller every STEP_PROGRESS_OPS ops. */
static void exec_progress(void *ctx, long executed) {
    const step_options *opt = ctx;
    char text[120];
    snprintf(text, sizeof text, "%.2fM ops simulated", executed / 1e6);
    opt->progress(opt->progress_ctx, text);
}

static void say(const step_options *opt, const char *text) {
    if (opt && opt->progress) opt->progress(opt->progress_ctx, text);
}

/* The host side of the step (step_host.h), priced by the scenario's host.* (host_costs.h): on unless
 * host.framework is "none". hp must outlive the run. */
static void host_side(step_exec_opts *eo, step_host_pricing *hp, const program *p) {
    if (!step_host_pricing_init(hp, p)) return;
    eo->host = step_host_costmodel;
    eo->host_ctx = hp;
    eo->host_sync_s = hp->tab.par.sync_s;
}

/* breakdown.host: the host side of the step (step_host.h) and what it cost: the mean time a rank's
 * compute stream waited for the host; per rank and micro-batch the host's issue time and syncs. */
/* What a lossy link's retransmissions cost, at the rates the fabric runs (`fab`); full_gbps is the
 * link's healthy rate. */
static void add_loss_cost(cJSON *o, const cluster_cfg *fab, link_state st, double full_gbps) {
    cJSON_AddNumberToObject(o, "loss_rate", st.loss_rate);
    cJSON_AddStringToObject(o, "retransmission", scn_retx_names[fab->retransmission]);
    cJSON_AddNumberToObject(o, "rtt_us", link_rtt_s(fab) * 1e6);
    cJSON_AddNumberToObject(o, "mtu_B", LINK_MTU_B);
    cJSON_AddNumberToObject(o, "window_pkts", st.window_pkts);
    cJSON_AddNumberToObject(o, "goodput_frac", st.goodput_frac);
    cJSON_AddNumberToObject(o, "factor", st.factor);
    cJSON_AddNumberToObject(o, "bandwidth_frac", st.factor * st.goodput_frac);
    cJSON_AddNumberToObject(o, "rate_gbps", full_gbps * st.factor * st.goodput_frac);
}

/* Lossy leaf uplinks, named by their SimGrid link (up-rR-lL, rail_fabric.cpp) with the rail, the leaf
 * and the nodes under it. */
static void add_lossy_uplinks(cJSON *a, const scenario *s, const cluster_cfg *fab) {
    int L = scn_leaves_per_rail(&s->cluster);
    int per = s->cluster.leaf_down_ports > 0 ? s->cluster.leaf_down_ports : s->cluster.nodes;   /* scn_leaf_of_node */
    for (int r = 0; r < s->cluster.rails; r++)
        for (int l = 0; l < L; l++) {
            link_state st = faults_uplink_state(fab, &s->faults, r, l);
            if (!(st.loss_rate > 0)) continue;
            char name[32];
            snprintf(name, sizeof name, "up-r%d-l%d", r, l);
            int last = (l + 1) * per - 1 < s->cluster.nodes - 1 ? (l + 1) * per - 1 : s->cluster.nodes - 1;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "link", name);
            cJSON_AddStringToObject(o, "kind", "uplink");
            cJSON_AddNumberToObject(o, "rail", r);
            cJSON_AddNumberToObject(o, "leaf", l);
            cJSON_AddNumberToObject(o, "first_node", l * per);
            cJSON_AddNumberToObject(o, "last_node", last);
            add_loss_cost(o, fab, st, fabric_uplink_Bps(fab) * 8 / 1e9);
            cJSON_AddItemToArray(a, o);
        }
}

/* step.breakdown.lossy_links: every NIC link and leaf uplink that drops packets
 * (faults.links[].loss_rate), at the rates the fabric runs (`fab`, the comm model's cluster) and what
 * its retransmissions cost; NULL when no link is lossy, so that a healthy step's results do not
 * change. */
static cJSON *lossy_links_json(const scenario *s, const cluster_cfg *fab) {
    if (!faults_any_lossy(&s->faults)) return NULL;
    cJSON *a = cJSON_CreateArray();
    int G = s->cluster.nodes * s->cluster.gpus_per_node;
    for (int g = 0; g < G; g++) {
        link_state st = faults_link_state(fab, &s->faults, g, LINK_NIC);
        if (!(st.loss_rate > 0)) continue;
        char name[32];
        snprintf(name, sizeof name, "nic-%d", g);   /* the SimGrid link (rail_fabric.h) */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "link", name);
        cJSON_AddNumberToObject(o, "gpu", g);
        cJSON_AddNumberToObject(o, "node", g / s->cluster.gpus_per_node);
        cJSON_AddNumberToObject(o, "local_gpu", g % s->cluster.gpus_per_node);
        add_loss_cost(o, fab, st, fab->nic_gbps);
        cJSON_AddItemToArray(a, o);
    }
    add_lossy_uplinks(a, s, fab);
    return a;
}

static cJSON *host_json(const scenario *s, const program *p, const step_host_pricing *hp, const step_split *mean) {
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "framework", scn_host_framework_names[s->host.framework]);
    cJSON *scope = cJSON_AddArrayToObject(h, "cuda_graph_scope");
    for (int i = 0; scn_cuda_graph_scope_names[i]; i++)
        if (s->host.cuda_graph_scope & (1 << i)) cJSON_AddItemToArray(scope, cJSON_CreateString(scn_cuda_graph_scope_names[i]));
    cJSON_AddNumberToObject(h, "wait_s", mean->overhead_s);
    if (!hp) return h;
    cJSON_AddNumberToObject(h, "call_us", hp->tab.par.call_s * 1e6);
    cJSON_AddNumberToObject(h, "launch_us", hp->tab.par.launch_s * 1e6);
    cJSON_AddNumberToObject(h, "graph_launch_us", hp->tab.par.graph_launch_s * 1e6);
    cJSON_AddNumberToObject(h, "sync_us", hp->tab.par.sync_s * 1e6);
    /* pipeline stage 0's whole list: issue time and syncs of its ops */
    double issue = 0;
    int syncs = 0;
    for (int i = 0; i < p->stage_n_ops[0]; i++) {
        host_op o = step_host_costmodel((void *)hp, p, 0, i, &p->stage_ops[0][i]);
        issue += o.issue_s;
        syncs += o.sync != HOST_SYNC_NONE;
    }
    cJSON_AddNumberToObject(h, "stage0_issue_s", issue);
    cJSON_AddNumberToObject(h, "stage0_syncs", syncs);
    return h;
}

/* step.fidelity picks the executor: "fast" = the op-level DES with SimGrid-memoized patterns
 * (step_exec.h), "full" = every transfer of every rank as SimGrid flows (exec_full.h, <= 256 GPUs). */
/* The time PFC pauses added to the all-to-alls (step_exec.h "Lossless fabric"): per rank on
 * average and on the rank with the most, seconds (0 when nothing was fed). */
static void pfc_pause_json(const program *p, const step_exec_result *xr, cJSON *bd) {
    double sum = 0, most = 0;
    for (int r = 0; xr->pfc_pause_s && r < p->n_ranks; r++) {
        sum += xr->pfc_pause_s[r];
        if (xr->pfc_pause_s[r] > most) most = xr->pfc_pause_s[r];
    }
    cJSON_AddNumberToObject(bd, "pfc_pause_s", p->n_ranks > 0 ? sum / p->n_ranks : 0);
    cJSON_AddNumberToObject(bd, "pfc_pause_max_s", most);
}

static int run_executor(const scenario *s, const program *p, const step_exec_opts *eo, step_exec_result *xr,
                        moe_error *err) {
    if (s->step.fidelity == FIDELITY_FULL) return sg_exec_full_run(p, eo, xr, err);
    return step_exec_run(p, eo, xr, err);
}

/* routing.steps > 1: steps 1..N-1 after step 0 (already in `out`), each with the routing law drifted
 * by the step before's loads (routing_drift.h). The program, its groups and op lists, the cost model
 * and the SimGrid platform and pattern memo are reused: only the routing is redrawn, and a pattern
 * whose bytes did not change is a memo hit. Fills the series and their distribution. */
static int run_steps(const scenario *s, program *p, const comm_model *comm, const costmodel *cm, drift_state *d,
                     eplb_series *eplb, const step_options *opt, step_result *out, moe_error *err) {
    int N = s->routing.steps;
    out->n_steps = N;
    if (eplb) {
        out->series_eplb_rebalance_s = moe_xcalloc((size_t)N, sizeof(double));
        out->series_eplb_grad_sync_s = moe_xcalloc((size_t)N, sizeof(double));
        eplb_series_grad_sync(eplb, comm);   /* step 0's placement */
        out->steps_eplb_move_bytes = eplb->move_bytes;
        out->steps_eplb_hierarchical = eplb->hierarchical;
    }
    out->series_step_time_s = moe_xcalloc((size_t)N, sizeof(double));
    out->series_max_expert_share = moe_xcalloc((size_t)N, sizeof(double));
    out->series_rank_load_max_mean = moe_xcalloc((size_t)N, sizeof(double));
    out->series_max_expert = moe_xcalloc((size_t)N, sizeof(int));
    out->series_busiest_ep_rank = moe_xcalloc((size_t)N, sizeof(int));
    out->series_max_collective_wait_s = moe_xcalloc((size_t)N, sizeof(double));
    out->series_hot_share = moe_xcalloc((size_t)N, sizeof(double));
    out->series_timed_out = moe_xcalloc((size_t)N, 1);
    double tokens = (double)s->layout.global_batch * s->model.seq_len;
    double done_tokens = 0, done_flops = 0, total_s = 0;
    model_counts mc;
    model_count(&s->model, &mc);
    double *completed_s = moe_xcalloc((size_t)N, sizeof(double));
    int completed = 0;
    double t_begin = wall_now();
    for (int t = 0; t < N; t++) {
        double step_s, wait_s;
        int timed;
        if (t == 0) {
            step_s = out->step_time_s;
            timed = out->timed_out;
            wait_s = out->max_collective_wait_s;
        } else {
            /* EPLB as deployed: the step before's loads measured, a rebalance at every K-th step */
            double pause_s = 0;
            if (eplb) {
                eplb_series_observe(eplb, p->step_expert_routed);
                if (eplb_series_due(eplb, t)) pause_s = eplb_series_rebalance(eplb, comm);
                out->series_eplb_rebalance_s[t] = pause_s;
                out->steps_eplb_rebalances += eplb_series_due(eplb, t);
                out->steps_eplb_moved_experts += eplb_series_due(eplb, t) ? eplb->last_moved : 0;
            }
            drift_advance(d, p->step_expert_routed);
            routing_law law = *drift_law_of(d);
            if (eplb) law.placement = eplb->phys;
            if (program_redraw(p, &law, err)) { free(completed_s); return err->code; }
            step_pricing pricing;
            step_pricing_init(&pricing, p, cm);
            step_exec_opts eo = {.comm = comm, .price = step_price_costmodel, .price_ctx = &pricing, .shortcut = 1};
            step_host_pricing hp;
            host_side(&eo, &hp, p);
            step_exec_result xr;
            int rc = run_executor(s, p, &eo, &xr, err);
            timed = rc == EXIT_RUNTIME && xr.timeout.found;
            step_s = (timed ? xr.timeout.fired_s : xr.step_time_s) + pause_s;
            if (timed && !(out->timeout_detect_s > 0)) out->timeout_detect_s = xr.timeout.detect_s;
            wait_s = xr.max_collective_wait_s;
            step_exec_result_free(&xr);
            step_pricing_free(&pricing);
            if (rc && !timed) { free(completed_s); return rc; }
            if (timed) memset(err, 0, sizeof *err);
            if (opt && opt->progress) {
                char text[64];
                snprintf(text, sizeof text, "step %d of %d simulated", t + 1, N);
                say(opt, text);
            }
        }
        if (eplb) {   /* every step: the replicas' gradient sum of its placement (eplb_series.h) */
            out->series_eplb_grad_sync_s[t] = eplb->grad_sync_s;
            step_s += eplb->grad_sync_s;
        }
        out->series_step_time_s[t] = step_s;
        out->series_max_expert_share[t] = p->max_expert_share;
        out->series_rank_load_max_mean[t] = p->rank_load_max_mean;
        out->series_max_expert[t] = p->max_expert;
        out->series_busiest_ep_rank[t] = p->busiest_ep_rank;
        out->series_max_collective_wait_s[t] = wait_s;
        out->series_hot_share[t] = d->law.hot_share;
        out->series_timed_out[t] = (unsigned char)timed;
        total_s += step_s;
        if (timed) { out->steps_timed_out++; continue; }
        completed_s[completed++] = step_s;
        done_tokens += tokens * (1.0 - p->dropped_token_fraction);
        done_flops += model_flops_per_token_processed(&mc, p->dropped_token_fraction) * tokens;
    }
    out->per_step_wall_s = N > 1 ? (wall_now() - t_begin) / (N - 1) : 0;
    step_series_stats st;
    step_series_summarize(out->series_step_time_s, out->series_timed_out, N, &st);
    out->steps_mean_s = st.mean_s; out->steps_p50_s = st.p50_s; out->steps_p95_s = st.p95_s;
    out->steps_p99_s = st.p99_s; out->steps_min_s = st.min_s; out->steps_max_s = st.max_s;
    out->steps_slow_above_s = st.slow_above_s; out->steps_slow = st.slow_steps;
    out->steps_slow_run = st.slow_run_steps; out->steps_slow_run_first = st.slow_run_first;
    /* the steps that completed: their mean is the run level's step time */
    if (completed && step_series_summarize(completed_s, NULL, completed, &st) == 0) out->steps_completed_mean_s = st.mean_s;
    free(completed_s);
    out->steps_tokens_per_s_per_gpu = total_s > 0 ? done_tokens / total_s / p->n_ranks : 0;
    /* the same work as model FLOPs (step 0's rule: the routed-expert FLOPs of dropped pairs left out) */
    out->steps_tflops_per_gpu = total_s > 0 ? done_flops / total_s / p->n_ranks / 1e12 : 0;
    out->steps_mfu = out->steps_tflops_per_gpu / s->cluster.gpu.bf16_tflops;
    out->timeout_fraction = (double)out->steps_timed_out / N;
    return 0;
}

int step_simulate(const scenario *s, const step_options *opt, step_result *out, moe_error *err) {
    memset(out, 0, sizeof *out);
    double t_start = wall_now();
    program *p = NULL;
    say(opt, "building the step program");
    /* drifting routing (routing.steps > 1 or an appearing hot expert): step 0 routes with the drift's
     * law of step 0, which without drift is exactly the scenario's */
    drift_state drift;
    int first_step = opt ? opt->first_step : 0;
    /* EPLB as deployed (routing.eplb_interval_steps, eplb_series.h): its placement rides on the law */
    int measured = s->routing.eplb_interval_steps > 0 && s->model.experts > 0 && model_moe_layers(&s->model) > 0;
    int drifting = drift_enabled(s) || first_step > 0 || measured;
    eplb_series eplb;
    if (measured && eplb_series_init(&eplb, s, err)) return err->code;
    if (drifting) {
        drift_params dp;
        drift_params_of(s, &dp);
        if (drift_init(&drift, &dp, s->seed, err)) { if (measured) eplb_series_free(&eplb); return err->code; }
        drift.step = first_step;
    }
    routing_law law0 = {0};
    if (drifting) law0 = *drift_law_of(&drift);
    if (measured) law0.placement = eplb.phys;
#define STEP_SIM_FREE_LAW() do { if (drifting) drift_free(&drift); if (measured) eplb_series_free(&eplb); } while (0)
    if (program_build_law(s, drifting ? &law0 : NULL, &p, err)) {
        STEP_SIM_FREE_LAW();
        return err->code;
    }
    costmodel cm;
    if (costmodel_for_scenario(s, &cm, err)) { program_free(p); STEP_SIM_FREE_LAW(); return err->code; }
    comm_model comm = sg_comm_create(s, err);
    if (!comm.a2a_s) { program_free(p); STEP_SIM_FREE_LAW(); return err->code ? err->code : EXIT_RUNTIME; }

    /* output.trace_ranks: a list, "all", "slowest:K" or the default subset (chosen after a first run) */
    int *trace_ranks = moe_xmalloc((size_t)(p->n_ranks + SCN_MAX_TRACE_RANKS + 8) * sizeof *trace_ranks), n_trace = 0;
    if (opt && opt->trace_path) {
        for (int i = 0; i < s->output.n_trace_ranks; i++) trace_ranks[n_trace++] = s->output.trace_ranks[i];
        if (s->output.n_trace_ranks == SCN_TRACE_ALL)
            for (int r = 0; r < p->n_ranks; r++) trace_ranks[n_trace++] = r;
    }
    /* one price table per program (plan_compute.h: the same one the plan level sums) */
    step_pricing pricing;
    step_pricing_init(&pricing, p, &cm);
    step_exec_opts eo = {.comm = &comm, .price = step_price_costmodel, .price_ctx = &pricing, .shortcut = 1};
    step_host_pricing host;
    host_side(&eo, &host, p);
    if (opt && opt->progress) {
        eo.progress = exec_progress;
        eo.progress_ctx = (void *)opt;
        say(opt, "executing the step program");
    }
    step_exec_result xr;
    /* One run; it keeps every simulated rank's timeline, so that the trace ranks can be picked from
     * what it found (the slowest ranks, the hang) and copied from it. A hang
     * (a stalled rank) returns EXIT_RUNTIME naming the culprit, and its trace is still written so
     * that simdiag can read it. */
    eo.keep_timelines = 1;   /* the trace ranks, and the scale entries of the breakdown (step_scale.h) */
    int rc = run_executor(s, p, &eo, &xr, err);
    /* a lossless fabric: where the worst incast's pause spreads (and, on a hang, the storm's reach) */
    cJSON *pfc = s->cluster.pfc && (rc == 0 || xr.hang.found || xr.timeout.found) ? step_pfc_report(p, &xr) : NULL;
    cJSON *trace_extra = cJSON_CreateObject();
    int trace_failed = 0;
    if (pfc) cJSON_AddItemToObject(trace_extra, "pfc", cJSON_Duplicate(pfc, 1));
    if ((rc == 0 || xr.hang.found || xr.timeout.found) && opt && opt->trace_path) {
        if (s->output.n_trace_ranks == SCN_TRACE_SLOWEST)
            n_trace = step_trace_slowest_ranks(&xr, p->n_ranks, s->output.trace_ranks[0], trace_ranks);
        if (n_trace == 0) n_trace = step_trace_default_ranks(p, &xr, trace_ranks, SCN_MAX_TRACE_RANKS);
        step_exec_trace(p, &xr, n_trace, trace_ranks);
        moe_error werr = {0};
        if (step_trace_write(opt->trace_path, p, &xr, trace_extra, &werr)) { *err = werr; rc = werr.code; trace_failed = 1; }
    }
    cJSON_Delete(trace_extra);
    /* a timed-out step is a result, not an error: the step failed after the timeout, which the run
     * level turns into a failure with that detection delay */
    if (!trace_failed && rc == EXIT_RUNTIME && xr.timeout.found) {
        out->timed_out = 1;
        out->timeout_fraction = 1.0;
        out->timeout_detect_s = xr.timeout.detect_s;
        rc = 0;
    }
    if (rc == 0) {
        int G = p->n_ranks;
        step_split mean;
        step_split_mean(xr.split, G, &mean);
        out->step_time_s = out->timed_out ? xr.timeout.fired_s : xr.step_time_s;
        out->max_collective_wait_s = xr.max_collective_wait_s;
        out->compute_s = mean.compute_s; out->exposed_comm_s = mean.exposed_comm_s;
        out->bubble_s = mean.bubble_s; out->optimizer_s = mean.optimizer_s;
        out->host_s = mean.overhead_s;
        double tokens = (double)s->layout.global_batch * s->model.seq_len;
        /* Only the work actually done counts: tokens/s/GPU the processed share of the tokens (dropped
         * token-expert pairs are reported beside it), MFU the model's FLOPs (model.h's exact per-token
         * count) less the routed-expert FLOPs of the dropped pairs, not the work the ranks executed:
         * replicated TP work and recomputation are real time but not model FLOPs */
        double dropped = p->dropped_token_fraction;
        if (out->timed_out) tokens = 0;   /* the failed step's work is lost */
        out->tokens_per_s_per_gpu = tokens * (1.0 - dropped) / out->step_time_s / G;
        model_counts mc;
        model_count(&s->model, &mc);
        out->tflops_per_gpu = model_flops_per_token_processed(&mc, dropped) * tokens / out->step_time_s / G / 1e12;
        out->mfu = out->tflops_per_gpu / s->cluster.gpu.bf16_tflops;
        out->dropped_token_fraction = dropped;
        out->expert_load_cv = p->expert_load_cv;
        out->expert_load_max_min = p->expert_load_max_min;
        out->expert_load_gini = p->expert_load_gini;
        out->slowest_rank = xr.slowest_rank;
        cJSON *bd = cJSON_CreateObject();
        cJSON_AddStringToObject(bd, "comm_model", comm.name ? comm.name : "?");
        cJSON_AddStringToObject(bd, "fidelity", s->step.fidelity == FIDELITY_FULL ? "full" : "fast");
        cJSON_AddNumberToObject(bd, "simulated_replicas", xr.n_simulated_replicas);
        cJSON_AddNumberToObject(bd, "simulated_ranks", xr.n_simulated_ranks);
        cJSON_AddNumberToObject(bd, "ops_executed", (double)xr.n_ops_executed);
        cJSON_AddNumberToObject(bd, "model_flops_per_step", p->model_flops_per_step);
        cJSON_AddItemToObject(bd, "stages", step_split_stages_json(p, xr.split));
        cJSON_AddItemToObject(bd, "slowest_ranks", slowest_ranks(p, &xr));
        cJSON_AddItemToObject(bd, "a2a_waits", a2a_waits(p, &xr));
        cJSON *rt = cJSON_AddObjectToObject(bd, "routing");
        cJSON_AddNumberToObject(rt, "samples", p->n_draws);
        cJSON_AddNumberToObject(rt, "routed_pairs", (double)p->routed_pairs);
        cJSON_AddNumberToObject(rt, "dropped_pairs", (double)p->dropped_pairs);
        if (p->expert_copies) {   /* routing.redundant_experts: which experts EPLB replicated */
            cJSON *rep = cJSON_AddObjectToObject(rt, "redundant_experts");
            cJSON_AddNumberToObject(rep, "slots", s->routing.redundant_experts);
            cJSON_AddNumberToObject(rep, "rank_load_max_mean", p->rank_load_max_mean);
            cJSON *cp = cJSON_AddArrayToObject(rep, "copies");
            for (int e = 0; e < s->model.experts; e++) {
                if (p->expert_copies[e] < 2) continue;
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "expert", e);
                cJSON_AddNumberToObject(o, "copies", p->expert_copies[e]);
                cJSON_AddItemToArray(cp, o);
            }
        }
        sg_comm_stats cs = sg_comm_get_stats(&comm);
        /* counts only (deterministic): wall times would break byte-identical results.json */
        cJSON *ct = cJSON_AddObjectToObject(bd, "comm_patterns");
        cJSON_AddNumberToObject(ct, "queries", (double)cs.queries);
        cJSON_AddNumberToObject(ct, "memo_hits", (double)cs.hits);
        cJSON_AddNumberToObject(ct, "simulated", (double)cs.simulated);
        cJSON_AddNumberToObject(ct, "closed_form", (double)cs.closed_form);
        cJSON_AddNumberToObject(ct, "flows", (double)cs.flows);
        scenario fab;   /* the fabric the comm model runs: its links' achieved rates */
        moe_error ferr = {0};
        step_scale_report(p, &xr, &comm, sg_fabric_scenario(s, &fab, &ferr) == 0 ? &fab.cluster : NULL, bd);
        cJSON_AddItemToObject(bd, "collective_timeout", step_timeout_json(p, &xr.timeout));
        cJSON_AddItemToObject(bd, "hang", step_hang_summary_json(p, &xr.hang));
        cJSON_AddItemToObject(bd, "host", host_json(s, p, eo.host ? &host : NULL, &mean));
        if (pfc) { cJSON_AddItemToObject(bd, "pfc", pfc); pfc = NULL; }
        if (s->cluster.pfc && s->step.fidelity != FIDELITY_FULL) pfc_pause_json(p, &xr, bd);
        cJSON *lossy = lossy_links_json(s, ferr.code == 0 ? &fab.cluster : &s->cluster);
        if (lossy) cJSON_AddItemToObject(bd, "lossy_links", lossy);
        out->breakdown = bd;
    }
    cJSON_Delete(pfc);
    step_exec_result_free(&xr);
    free(trace_ranks);
    step_pricing_free(&pricing);
    if (rc == 0 && drifting && s->routing.steps > 1)
        rc = run_steps(s, p, &comm, &cm, &drift, measured ? &eplb : NULL, opt, out, err);
    STEP_SIM_FREE_LAW();
#undef STEP_SIM_FREE_LAW
    if (comm.destroy) comm.destroy(comm.ctx);
    program_free(p);
    out->sim_wall_s = wall_now() - t_start;
    return rc;
}

void step_result_to_json(const step_result *r, cJSON *obj) {
    cJSON_AddNumberToObject(obj, "step_time_s", r->step_time_s);
    cJSON_AddNumberToObject(obj, "tokens_per_s_per_gpu", r->tokens_per_s_per_gpu);
    cJSON_AddNumberToObject(obj, "mfu", r->mfu);
    cJSON_AddNumberToObject(obj, "tflops_per_gpu", r->tflops_per_gpu);
    cJSON_AddNumberToObject(obj, "compute_s", r->compute_s);
    cJSON_AddNumberToObject(obj, "exposed_comm_s", r->exposed_comm_s);
    cJSON_AddNumberToObject(obj, "bubble_s", r->bubble_s);
    cJSON_AddNumberToObject(obj, "optimizer_s", r->optimizer_s);
    cJSON_AddNumberToObject(obj, "host_s", r->host_s);
    cJSON_AddNumberToObject(obj, "dropped_token_fraction", r->dropped_token_fraction);
    cJSON_AddNumberToObject(obj, "expert_load_cv", r->expert_load_cv);
    cJSON_AddNumberToObject(obj, "expert_load_max_min", r->expert_load_max_min);
    cJSON_AddNumberToObject(obj, "expert_load_gini", r->expert_load_gini);
    cJSON_AddNumberToObject(obj, "slowest_rank", r->slowest_rank);
    cJSON_AddBoolToObject(obj, "timed_out", r->timed_out);
    cJSON_AddNumberToObject(obj, "timeout_fraction", r->timeout_fraction);
    cJSON_AddNumberToObject(obj, "max_collective_wait_s", r->max_collective_wait_s);
    cJSON_AddNumberToObject(obj, "sim_wall_s", r->sim_wall_s);
    if (r->n_steps > 1) {
        cJSON *st = cJSON_AddObjectToObject(obj, "steps");
        cJSON_AddNumberToObject(st, "count", r->n_steps);
        cJSON_AddNumberToObject(st, "step_time_s_mean", r->steps_mean_s);
        cJSON_AddNumberToObject(st, "step_time_s_p50", r->steps_p50_s);
        cJSON_AddNumberToObject(st, "step_time_s_p95", r->steps_p95_s);
        cJSON_AddNumberToObject(st, "step_time_s_p99", r->steps_p99_s);
        cJSON_AddNumberToObject(st, "step_time_s_min", r->steps_min_s);
        cJSON_AddNumberToObject(st, "step_time_s_max", r->steps_max_s);
        cJSON_AddNumberToObject(st, "timed_out", r->steps_timed_out);
        /* slow: above STEP_SERIES_SLOW_FACTOR x the median (step_series.h) */
        cJSON_AddNumberToObject(st, "slow_above_s", r->steps_slow_above_s);
        cJSON_AddNumberToObject(st, "slow_steps", r->steps_slow);
        cJSON_AddNumberToObject(st, "slow_run_steps", r->steps_slow_run);
        cJSON_AddNumberToObject(st, "slow_run_first_step", r->steps_slow_run_first);
        cJSON_AddNumberToObject(st, "tokens_per_s_per_gpu", r->steps_tokens_per_s_per_gpu);
        cJSON_AddNumberToObject(st, "tflops_per_gpu", r->steps_tflops_per_gpu);
        cJSON_AddNumberToObject(st, "mfu", r->steps_mfu);
        cJSON_AddNumberToObject(st, "per_step_wall_s", r->per_step_wall_s);
        cJSON *se = cJSON_AddObjectToObject(st, "series");
        cJSON *idx = cJSON_AddArrayToObject(se, "step");
        for (int t = 0; t < r->n_steps; t++) cJSON_AddItemToArray(idx, cJSON_CreateNumber(t));
        cJSON_AddItemToObject(se, "step_time_s", cJSON_CreateDoubleArray(r->series_step_time_s, r->n_steps));
        cJSON_AddItemToObject(se, "max_expert_share", cJSON_CreateDoubleArray(r->series_max_expert_share, r->n_steps));
        cJSON_AddItemToObject(se, "max_expert", cJSON_CreateIntArray(r->series_max_expert, r->n_steps));
        cJSON_AddItemToObject(se, "rank_load_max_mean", cJSON_CreateDoubleArray(r->series_rank_load_max_mean, r->n_steps));
        cJSON_AddItemToObject(se, "busiest_ep_rank", cJSON_CreateIntArray(r->series_busiest_ep_rank, r->n_steps));
        cJSON_AddItemToObject(se, "max_collective_wait_s",
                              cJSON_CreateDoubleArray(r->series_max_collective_wait_s, r->n_steps));
        cJSON_AddItemToObject(se, "hot_share", cJSON_CreateDoubleArray(r->series_hot_share, r->n_steps));
        if (r->series_eplb_rebalance_s) {   /* routing.eplb_interval_steps > 0 */
            cJSON_AddItemToObject(se, "eplb_rebalance_s", cJSON_CreateDoubleArray(r->series_eplb_rebalance_s, r->n_steps));
            cJSON_AddItemToObject(se, "eplb_grad_sync_s", cJSON_CreateDoubleArray(r->series_eplb_grad_sync_s, r->n_steps));
            cJSON_AddNumberToObject(st, "eplb_rebalances", r->steps_eplb_rebalances);
            cJSON_AddNumberToObject(st, "eplb_moved_experts", r->steps_eplb_moved_experts);
            cJSON_AddNumberToObject(st, "eplb_expert_move_bytes", r->steps_eplb_move_bytes);
            cJSON_AddStringToObject(st, "eplb_policy", r->steps_eplb_hierarchical ? "hierarchical" : "global");
            double sum = 0;
            for (int t = 0; t < r->n_steps; t++) sum += r->series_eplb_rebalance_s[t];
            cJSON_AddNumberToObject(st, "eplb_rebalance_s_total", sum);
        }
        cJSON *to = cJSON_AddArrayToObject(se, "timed_out");
        for (int t = 0; t < r->n_steps; t++) cJSON_AddItemToArray(to, cJSON_CreateBool(r->series_timed_out[t]));
    }
    if (r->breakdown) cJSON_AddItemToObject(obj, "breakdown", cJSON_Duplicate(r->breakdown, 1));
}

void step_result_free(step_result *r) {
    free(r->series_step_time_s); free(r->series_max_expert_share);
    free(r->series_rank_load_max_mean); free(r->series_hot_share); free(r->series_timed_out);
    free(r->series_eplb_rebalance_s); free(r->series_eplb_grad_sync_s);
    r->series_eplb_rebalance_s = r->series_eplb_grad_sync_s = NULL;
    r->series_step_time_s = r->series_max_expert_share = r->series_rank_load_max_mean = r->series_hot_share = NULL;
    r->series_timed_out = NULL;
    free(r->series_max_expert); free(r->series_busiest_ep_rank); free(r->series_max_collective_wait_s);
    r->series_max_expert = r->series_busiest_ep_rank = NULL;
    r->series_max_collective_wait_s = NULL;
    if (r->breakdown) cJSON_Delete(r->breakdown);
    r->breakdown = NULL;
}

/* A step's time as the run level takes it: a timed-out step's until its hang began (the watchdog's
 * timeout is the run level's detection delay). */
static double run_time_of(const step_result *r, double step_s, int timed_out, const scenario *s) {
    return timed_out ? step_s - step_result_detect_s(r, s) : step_s;
}

double step_result_detect_s(const step_result *r, const scenario *s) {
    return r->timeout_detect_s > 0 ? r->timeout_detect_s : s->faults.collective_timeout_s;
}

double step_result_run_step_s(const step_result *r, const scenario *s, double *timeout_fraction) {
    if (timeout_fraction) *timeout_fraction = r->timeout_fraction;
    if (r->n_steps > 1 && r->steps_completed_mean_s > 0) return r->steps_completed_mean_s;
    return run_time_of(r, r->step_time_s, r->timed_out, s);
}

double step_result_series_run_s(const step_result *r, const scenario *s, int t) {
    return run_time_of(r, r->series_step_time_s[t], r->series_timed_out[t], s);
}
