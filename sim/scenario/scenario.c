/* scenario.c — defaults, a field set by its path, cross-field validation and JSON output of a
 * scenario (SCENARIO.md, "moesim-scenario/1"). Per-field work (types, ranges, names) is table-driven
 * in scenario_fields.c, reading a file is scenario_load.c; this file holds what involves several
 * fields at once. */
#include "sim/scenario/scenario.h"
#include "sim/scenario/schedule_rules.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/json_read.h"
#include "sim/scenario/pipeline_layout.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/components.h"
#include "sim/scenario/failure_classes.h"
#include "sim/scenario/scenario_defaults.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/scenario/scenario_origin.h"

/* ---- defaults ----------------------------------------------------------------------------------- */

void scenario_defaults(scenario *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "scenario");
    s->seed = 42;
    preset_cluster("h800-8rail", &s->cluster);
    /* seed 003: PP16 x EP64 x DP4 on 4096 GPUs; 15360 sequences of 4096 tokens = 62.9M tokens/step */
    s->layout = (layout_cfg){.tp = 1, .pp = 16, .ep = 64, .dp = 4, .zero = 1, .micro_batch = 1,
                             .global_batch = 15360, .schedule = SCHED_DUALPIPE, .vpp = 1,
                             .recompute = RECOMPUTE_NONE, .placement = PLACE_EP_INNER, .cp = 1,
                             .overlap_grad_reduce = 1};
    s->routing = (routing_cfg){.distribution = ROUTE_UNIFORM, .zipf_s = 1.2, .hot_expert = 3,
                               .hot_share = 0.6, .steps = 1,
                               .drift = {.hot_decay_steps = 50, .bias_update_speed = 0.001}};
    snprintf(s->calibration, sizeof s->calibration, "%s", preset_cluster_calibration(s->cluster.preset));

    reliability_cfg *r = &s->reliability;
    r->gpu_mtbf_h = 26000; /* seed 003: 26,000 h per GPU -> 6.35 h for 4096 GPUs */
    r->distribution = DIST_EXPONENTIAL;
    r->weibull_shape = 0.8;
    failures_default_classes(r->classes);
    components_default(r->components);
    r->rack_nodes = 2;   /* Llama 3 (Dubey et al. 2024, section 3.3.1): two 8-GPU servers per rack */
    r->correlated = (correlated_cfg){.probability = 0, .delay_s = 60};
    r->checkpoint = (checkpoint_cfg){.policy = CKPT_DALY, .interval_min = 60, .mode = CKPT_ASYNC,
                                     .state_bytes = -1, .snapshot_GBps = 64, .write_min = -1,
                                     .tiers = {.enabled = 0, .host_survives_restart = 1, .peer = 1,
                                               .peer_GBps = -1, .peer_read_GBps = -1,
                                               .peer_step_slowdown = -1, .peer_offset_nodes = 0,
                                               .nvme = 0, .nvme_write_GBps = 10, .nvme_read_GBps = 20,
                                               .pfs_every = 1, .pfs_read_GBps = -1}};
    r->recovery = (recovery_cfg){.hot_spare_fraction = 0.02, .spare_swap_s = 90, .full_restart_min = 30,
                                 .repair_h = 24};
    r->stragglers = (stragglers_cfg){.fraction = 0, .slowdown = 1.4, .detect_min = 10};
    /* the monitor's 5x and 100 steps: seed 000 section 3.2; the other figures: assumptions */
    r->loss_spikes = (loss_spikes_cfg){.per_day = 0, .action = SPIKE_ROLLBACK, .monitor = 1,
                                       .monitor_threshold = 5, .monitor_window_steps = 100,
                                       .norm_ratio_median = 10, .norm_ratio_sigma = 1.5, .clipping = 1,
                                       .clip_fraction = 0.5, .fp16_overflow_fraction = 0.5};

    s->step.fidelity = FIDELITY_FAST;
    s->host = (host_cfg){.framework = HOST_MEGATRON, .cuda_graph_scope = 0, .call_us = -1, .launch_us = -1,
                         .graph_launch_us = -1, .sync_us = -1};
    s->run = (run_cfg){.max_days = 60, .trials = 200, .assumed_mfu = 0};
    snprintf(s->output.dir, sizeof s->output.dir, "results/%s", s->name);
    s->output.trace = 1;
    s->output.plots = 1;
    s->output.levels = LEVEL_PLAN | LEVEL_STEP | LEVEL_RUN;
    /* the default scenario's model, with DeepSeek-V3's own routing, precision and tokens (presets.c) */
    scn_model_preset_apply(s, "deepseek-v3");
}

int scenario_set_path(scenario *s, const char *path, const cJSON *value, moe_error *err) {
    const char *p = path ? path : "";
    const scn_field *f = scn_field_find(p);
    if (f && f->type != SF_SWEEP) return scn_field_set(s, f, value, p, err);
    if (!f && *p && scn_path_is_section(p)) {
        if (!cJSON_IsObject(value)) {
            char val[128];
            json_shown(value, val, sizeof val);
            return moe_error_input(err, s->file, p, val, "an object (the \"%s\" section)", p);
        }
        return scn_apply_object(s, p, value, 0, err);
    }
    const char *dym = *p ? scn_path_suggest(p) : NULL;
    char val[160];
    snprintf(val, sizeof val, "unknown field \"%.120s\"", p);
    if (dym) return moe_error_input(err, s->file, p, val, "a dotted field path (did you mean \"%s\"?)", dym);
    return moe_error_input(err, s->file, p, val, "a dotted field path such as \"layout.pp\"");
}

/* ---- cross-field validation -------------------------------------------------------------------------- */

/* A value the scenario did not write says where it came from and which field to set. */
static int bad_int(const scenario *s, moe_error *err, const char *path, long long value, const char *expected) {
    char val[320], note[280];
    scn_origin_note(s, path, note, sizeof note);
    snprintf(val, sizeof val, "%lld%s", value, note);
    return moe_error_input(err, s->file, path, val, "%s%s%s", expected, *note ? "; set " : "", *note ? path : "");
}

static int check_model(const scenario *s, moe_error *err) {
    const model_cfg *m = &s->model;
    char exp[256];
    if (m->dense_layers > m->layers) {
        snprintf(exp, sizeof exp, "at most model.layers = %d", m->layers);
        return bad_int(s, err, "model.dense_layers", m->dense_layers, exp);
    }
    if (m->dense_layers > 0 && m->ffn_hidden < 1)
        return bad_int(s, err, "model.ffn_hidden", m->ffn_hidden, ">= 1 when model.dense_layers > 0");
    if (m->attention == ATTN_MHA && m->kv_heads != m->heads) {
        snprintf(exp, sizeof exp, "equal to model.heads = %d for \"mha\" attention (use \"gqa\" for fewer)",
                 m->heads);
        return bad_int(s, err, "model.kv_heads", m->kv_heads, exp);
    }
    if (m->attention == ATTN_GQA && m->heads % m->kv_heads != 0) {
        snprintf(exp, sizeof exp, "a divisor of model.heads = %d (each key/value head serves a group of query heads)",
                 m->heads);
        return bad_int(s, err, "model.kv_heads", m->kv_heads, exp);
    }
    if (m->attention == ATTN_MLA && m->kv_lora_rank < 1)
        return bad_int(s, err, "model.kv_lora_rank", m->kv_lora_rank, ">= 1 for \"mla\" attention");
    if (m->attention == ATTN_MLA && m->rope_head_dim < 1)
        return bad_int(s, err, "model.rope_head_dim", m->rope_head_dim, ">= 1 for \"mla\" attention");
    if (m->global_attention_every > 0 && m->sliding_window == 0)
        return bad_int(s, err, "model.global_attention_every", m->global_attention_every,
                       "0 unless model.sliding_window > 0 (full-attention blocks between windowed ones)");
    if (m->experts == 0) return 0; /* dense model: the MoE fields are unused */

    if (m->top_k < 1) {
        snprintf(exp, sizeof exp, ">= 1 for an MoE model (model.experts = %d)", m->experts);
        return bad_int(s, err, "model.top_k", m->top_k, exp);
    }
    if (m->top_k > m->experts) {
        snprintf(exp, sizeof exp, "at most model.experts = %d", m->experts);
        return bad_int(s, err, "model.top_k", m->top_k, exp);
    }
    if (m->expert_hidden < 1)
        return bad_int(s, err, "model.expert_hidden", m->expert_hidden, ">= 1 for an MoE model");
    if (m->expert_groups > 0 && m->experts % m->expert_groups != 0) {
        snprintf(exp, sizeof exp, "a divisor of model.experts = %d (or 0: no group-limited routing)", m->experts);
        return bad_int(s, err, "model.expert_groups", m->expert_groups, exp);
    }
    if (m->topk_groups > m->expert_groups) {
        snprintf(exp, sizeof exp, "at most model.expert_groups = %d", m->expert_groups);
        return bad_int(s, err, "model.topk_groups", m->topk_groups, exp);
    }
    if (m->topk_groups > 0 && (long long)m->topk_groups * (m->experts / m->expert_groups) < m->top_k) {
        snprintf(exp, sizeof exp, "enough groups for model.top_k = %d experts (%d experts per group)", m->top_k,
                 m->experts / m->expert_groups);
        return bad_int(s, err, "model.topk_groups", m->topk_groups, exp);
    }
    return 0;
}

static int check_precision(const scenario *s, moe_error *err) {
    dtype_kind c = s->precision.compute;
    if ((c == DT_MXFP8 || c == DT_NVFP4) && !(s->cluster.gpu.fp4_tflops > 0)) {
        char val[160];
        snprintf(val, sizeof val, "\"%s\" on %s (cluster.gpu.fp4_tflops = 0)", scn_compute_names[c],
                 s->cluster.gpu.name);
        return moe_error_input(err, s->file, "precision.compute", val,
                               "a GPU with block-scaled tensor cores (Blackwell: cluster.gpu.fp4_tflops > 0) "
                               "for \"mxfp8\" and \"nvfp4\", or \"fp8\" / \"fp8-cs\" / \"bf16\"");
    }
    return 0;
}

int scenario_check_cluster(const scenario *s, moe_error *err) {
    int d = s->cluster.nvlink_domain_gpus;
    if (d > 0 && (d % s->cluster.gpus_per_node != 0 || scn_gpus(s) % d != 0)) {
        char exp[160];
        snprintf(exp, sizeof exp, "a multiple of cluster.gpus_per_node = %d dividing the %d GPUs (whole nodes, whole "
                 "domains)", s->cluster.gpus_per_node, scn_gpus(s));
        return bad_int(s, err, "cluster.nvlink_domain_gpus", d, exp);
    }
    if (s->cluster.rails != s->cluster.gpus_per_node) {
        char exp[128];
        snprintf(exp, sizeof exp, "cluster.gpus_per_node = %d (one NIC and rail per GPU)", s->cluster.gpus_per_node);
        return bad_int(s, err, "cluster.rails", s->cluster.rails, exp);
    }
    int pod = s->cluster.pod_nodes;
    if (pod > 0 && pod < s->cluster.nodes && (s->cluster.leaf_down_ports < 1 || pod % s->cluster.leaf_down_ports != 0)) {
        char exp[160];
        snprintf(exp, sizeof exp, "a multiple of cluster.leaf_down_ports = %d (a pod holds whole leaves), or \"auto\"",
                 s->cluster.leaf_down_ports);
        return bad_int(s, err, "cluster.pod_nodes", pod, exp);
    }
    if (s->cluster.transport == TRANSPORT_IB && !s->cluster.pfc)
        return moe_error_input(err, s->file, "cluster.pfc", "false",
                               "true, or unset, under cluster.transport \"infiniband\": its credit-based link-level "
                               "flow control never drops a packet for want of buffer (use \"roce\" for a lossy fabric)");
    double ports = scn_uplink_ports(&s->cluster);
    if (s->cluster.path_selection == PATH_ECMP && (ports < 1 || ports != floor(ports))) {
        char val[96];
        snprintf(val, sizeof val, "ecmp with leaf_down_ports / oversubscription = %d / %g = %g uplink ports",
                 s->cluster.leaf_down_ports, s->cluster.oversubscription, ports);
        return moe_error_input(err, s->file, "cluster.path_selection", val,
                               "a whole number of uplink ports at the NIC's line rate for ecmp to hash onto: set "
                               "cluster.oversubscription to a divisor of cluster.leaf_down_ports, or path_selection "
                               "\"adaptive\"");
    }
    return 0;
}

static int check_layout(const scenario *s, moe_error *err) {
    const layout_cfg *L = &s->layout;
    const model_cfg *m = &s->model;
    char val[128], exp[256];
    long long gpus = (long long)s->cluster.nodes * s->cluster.gpus_per_node;
    /* each factor <= 2^20: the product in double is exact whenever it could equal the GPU count */
    int etp = scn_etp(s), cp = scn_cp(s);
    double product = (double)etp * L->pp * L->ep * L->dp;
    if (product != (double)gpus) {
        /* the factors the scenario left at the built-in default scenario's (seed 003) values */
        static const char *const factors[] = {"layout.tp", "layout.pp", "layout.ep", "layout.dp", NULL};
        char unset[128] = "";
        size_t n = 0;
        for (int i = 0; factors[i]; i++)
            if (!scn_path_given(s, factors[i]) && !(i == 0 && L->etp > 0))
                n += (size_t)snprintf(unset + n, sizeof unset - n, "%s%s", n ? ", " : "", factors[i]);
        snprintf(val, sizeof val, "%s*pp*ep*dp = %d*%d*%d*%d = %.0f", L->etp > 0 ? "etp" : "tp", etp, L->pp, L->ep,
                 L->dp, product);
        return moe_error_input(err, s->file, "layout", val,
                               "the GPU count cluster.nodes*cluster.gpus_per_node = %d*%d = %lld%s%s%s", s->cluster.nodes,
                               s->cluster.gpus_per_node, gpus, n ? "; not set by the scenario (the built-in default "
                               "scenario's DeepSeek-V3 layout): " : "", unset, n ? ": set them" : "");
    }
    /* the attention side folds the same stage GPUs as tp x cp x attention DP */
    long long stage_gpus = gpus / L->pp;
    if (stage_gpus % ((long long)L->tp * cp) != 0) {
        snprintf(val, sizeof val, "tp*cp = %d*%d = %lld", L->tp, cp, (long long)L->tp * cp);
        return moe_error_input(err, s->file, L->etp > 0 || cp > 1 ? "layout.cp" : "layout.tp", val,
                               "a divisor of the GPUs of one pipeline stage, GPUs/pp = %lld (attention side: tp x cp "
                               "x attention DP)", stage_gpus);
    }
    if (cp > 1 && m->seq_len % (2 * cp) != 0) {
        snprintf(exp, sizeof exp, "a value with model.seq_len = %d divisible by 2 x cp (each sequence is cut into "
                 "2 x cp chunks, two per CP rank, for causal load balance)", m->seq_len);
        return bad_int(s, err, "layout.cp", cp, exp);
    }
    if (m->experts > 0 && L->etp > 0 && L->etp != L->tp) {
        double routed = scn_routed_tokens(s);
        if (routed != (double)(long long)routed || routed < 1) {
            snprintf(exp, sizeof exp, "a value giving a whole number of routed tokens per rank: micro_batch x seq_len "
                     "/ cp x etp / tp = %g", routed);
            return bad_int(s, err, "layout.etp", L->etp, exp);
        }
        if (m->expert_hidden % L->etp != 0) {
            snprintf(exp, sizeof exp, "a divisor of model.expert_hidden = %d (expert TP splits each expert)",
                     m->expert_hidden);
            return bad_int(s, err, "layout.etp", L->etp, exp);
        }
    }
    if (m->experts == 0 && L->ep != 1)
        return bad_int(s, err, "layout.ep", L->ep, "1 for a dense model (model.experts = 0)");
    if (m->experts > 0 && m->experts % L->ep != 0) {
        snprintf(exp, sizeof exp, "a divisor of model.experts = %d (each EP rank holds the same number of experts)",
                 m->experts);
        return bad_int(s, err, "layout.ep", L->ep, exp);
    }
    int custom = L->pipeline_layout[0] || L->first_stage_layers > 0 || L->last_stage_layers > 0;
    if (L->pp > m->layers && !L->pipeline_layout[0]) {
        snprintf(exp, sizeof exp, "at most model.layers = %d (every pipeline stage holds a layer; a "
                 "layout.pipeline_layout may leave stages empty)", m->layers);
        return bad_int(s, err, "layout.pp", L->pp, exp);
    }
    if (m->heads % L->tp != 0) {
        snprintf(exp, sizeof exp, "a divisor of model.heads = %d (tensor parallelism splits the heads)", m->heads);
        return bad_int(s, err, "layout.tp", L->tp, exp);
    }
    if (L->vpp > 1 && L->schedule != SCHED_INTERLEAVED)
        return bad_int(s, err, "layout.vpp", L->vpp, "1 unless layout.schedule is \"interleaved\"");
    if (L->vpp > 1 && !custom && m->layers % ((long long)L->pp * L->vpp) != 0) {
        snprintf(exp, sizeof exp, "a value with model.layers = %d divisible by layout.pp*layout.vpp = %d*%d "
                 "(or a layout.pipeline_layout)", m->layers, L->pp, L->vpp);
        return bad_int(s, err, "layout.vpp", L->vpp, exp);
    }
    if (L->recompute_modules && L->recompute == RECOMPUTE_FULL)
        return moe_error_input(err, s->file, "layout.recompute_modules", "a module list with layout.recompute \"full\"",
                               "[] with full recompute, or layout.recompute \"selective\" / \"none\" with modules");
    if ((L->recompute_modules & RCM_MLA_UP_PROJ) && m->attention != ATTN_MLA)
        return moe_error_input(err, s->file, "layout.recompute_modules", "\"mla_up_proj\"",
                               "modules of this model: mla_up_proj only with model.attention \"mla\"");
    if ((L->recompute_modules & (RCM_MOE | RCM_MOE_ACT | RCM_SHARED_EXPERTS)) && m->experts == 0)
        return moe_error_input(err, s->file, "layout.recompute_modules", "an MoE module (moe, moe_act, shared_experts)",
                               "modules of this model: a dense model (model.experts = 0) has core_attn, layernorm, mlp");
    if (L->moe_a2a_overlap && (L->schedule == SCHED_DUALPIPE || m->experts == 0))
        return moe_error_input(err, s->file, "layout.moe_a2a_overlap", "true",
                               "false with %s", m->experts == 0 ? "a dense model (no all-to-all)"
                                                                : "DualPipe (it pairs forward and backward by itself)");
    pl_layout pl;
    int prc = pipeline_layout_build(s, &pl, err);
    pipeline_layout_free(&pl);
    if (prc) return prc;
    /* tp*cp*pp divides gpus now, so these products fit */
    long long attn_dp = gpus / ((long long)L->tp * cp * L->pp);
    long long per_round = (long long)L->micro_batch * attn_dp;
    if (L->global_batch % per_round != 0) {
        snprintf(exp, sizeof exp,
                 "a multiple of layout.micro_batch*attention_dp = %d*%lld = %lld (attention_dp = GPUs/(tp*cp*pp))",
                 L->micro_batch, attn_dp, per_round);
        return bad_int(s, err, "layout.global_batch", L->global_batch, exp);
    }
    /* the schedule's shape (schedule_rules.h): the step program's generator and the plan's formulas
     * assume it */
    long long micro_batches = L->global_batch / per_round;
    if (scn_schedule_check(s->file, scn_schedule_run(L), L->pp, micro_batches, L->global_batch, err)) return err->code;
    return 0;
}

static int check_routing(const scenario *s, moe_error *err) {
    const routing_cfg *r = &s->routing;
    char exp[256];
    if (s->model.experts == 0) return 0; /* nothing is routed in a dense model */
    if (r->distribution == ROUTE_TRACE && r->trace[0] == '\0')
        return moe_error_input(err, s->file, "routing.trace", "null",
                               "a file of per-expert token counts when routing.distribution is \"trace\"");
    if (r->distribution == ROUTE_HOT && r->hot_expert >= s->model.experts) {
        snprintf(exp, sizeof exp, "an expert index below model.experts = %d", s->model.experts);
        return bad_int(s, err, "routing.hot_expert", r->hot_expert, exp);
    }
    /* drifting routing (sim/program/routing_drift.h) walks the popularity of uniform routing or of the
     * "hot" law's other experts; a zipf, trace or forced-balance law has no drift model */
    int drifts = r->steps > 1 || r->drift.hot_peak_share > 0;
    if (drifts && r->distribution != ROUTE_UNIFORM && r->distribution != ROUTE_HOT)
        return moe_error_input(err, s->file, "routing.distribution", scn_route_names[r->distribution],
                               "\"uniform\" or \"hot\" when the routing drifts (routing.steps > 1 or "
                               "routing.drift.hot_peak_share > 0)");
    if (r->drift.hot_peak_share > 0) {
        if (r->distribution != ROUTE_UNIFORM)
            return moe_error_input(err, s->file, "routing.drift.hot_peak_share", "> 0",
                                   "0 with routing.distribution \"hot\" (its hot expert keeps routing.hot_share "
                                   "at every step); an appearing hot expert needs \"uniform\"");
        if (r->hot_expert >= s->model.experts) {
            snprintf(exp, sizeof exp, "an expert index below model.experts = %d (the expert that turns hot)",
                     s->model.experts);
            return bad_int(s, err, "routing.hot_expert", r->hot_expert, exp);
        }
        if (s->model.top_k > s->model.experts - 1)
            return bad_int(s, err, "model.top_k", s->model.top_k,
                           "top_k <= experts - 1 for a hot expert (tokens without it pick among the others)");
    }
    if ((long long)r->redundant_experts > (long long)s->model.experts * (s->layout.ep - 1)) {
        snprintf(exp, sizeof exp, "0 to model.experts x (layout.ep - 1) = %lld extra expert slots (one copy of an "
                 "expert per EP rank at most)", (long long)s->model.experts * (s->layout.ep - 1));
        return bad_int(s, err, "routing.redundant_experts", r->redundant_experts, exp);
    }
    if (r->eplb_interval_steps > 0 && (r->redundant_experts <= 0 || r->redundant_experts % s->layout.ep != 0)) {
        snprintf(exp, sizeof exp, "routing.redundant_experts a positive multiple of layout.ep = %d for "
                 "routing.eplb_interval_steps > 0 (EPLB spreads the physical experts evenly over the GPUs)", s->layout.ep);
        return bad_int(s, err, "routing.redundant_experts", r->redundant_experts, exp);
    }
    int domains = scn_gpus(s) / scn_domain_gpus(&s->cluster);
    if (r->node_limit > domains) {
        if (scn_domain_gpus(&s->cluster) == s->cluster.gpus_per_node)
            snprintf(exp, sizeof exp, "0 (no limit) to cluster.nodes = %d", s->cluster.nodes);
        else
            snprintf(exp, sizeof exp, "0 (no limit) to the %d NVLink domains (the limit counts domains)", domains);
        return bad_int(s, err, "routing.node_limit", r->node_limit, exp);
    }
    return 0;
}

static int check_reliability(const scenario *s, moe_error *err) {
    char path[96], val[48];
    for (int k = 0; k < COMP_NKINDS; k++) {
        double n = s->reliability.components[k].count;
        if (n >= 0 && (n != floor(n) || n > INT_MAX)) {
            snprintf(path, sizeof path, "reliability.components.%s.count", component_kind_name((component_kind)k));
            snprintf(val, sizeof val, "%g", n);
            return moe_error_input(err, s->file, path, val, "\"auto\" or a whole number of units");
        }
    }
    const checkpoint_cfg *ck = &s->reliability.checkpoint;
    if (ck->tiers.enabled && ck->mode != CKPT_ASYNC)
        return moe_error_input(err, s->file, "reliability.checkpoint.tiers.enabled", "true",
                               "reliability.checkpoint.mode \"async\" (tiers hold copies of the host snapshot)");
    if (ck->tiers.peer_offset_nodes >= s->cluster.nodes) {
        snprintf(val, sizeof val, "%d", ck->tiers.peer_offset_nodes);
        return moe_error_input(err, s->file, "reliability.checkpoint.tiers.peer.offset_nodes", val,
                               "0 (auto) or 1 to cluster.nodes - 1 = %d", s->cluster.nodes - 1);
    }
    double sum = 0;
    for (int i = 0; i < FAIL_NCLASSES; i++) sum += s->reliability.classes[i].share;
    if (fabs(sum - 1.0) > 1e-6) {
        char val[96];
        snprintf(val, sizeof val, "shares summing to %.9g", sum);
        return moe_error_input(err, s->file, "reliability.classes", val,
                               "class shares (gpu, hbm, nic, nvlink, switch, host, software) summing to 1 "
                               "(+-1e-6)");
    }
    return 0;
}

static int check_gpu_id(const scenario *s, moe_error *err, const char *label, int gpu) {
    int gpus = scn_gpus(s);
    if (gpu >= 0 && gpu < gpus) return 0;
    char exp[96];
    snprintf(exp, sizeof exp, "a GPU id in 0..%d (cluster.nodes*cluster.gpus_per_node - 1)", gpus - 1);
    return bad_int(s, err, label, gpu, exp);
}

/* A key of faults.links[i] that its kind does not take (rail on a NIC, gpu on an uplink): refused
 * rather than ignored, since the writer meant some other link. */
static int link_key_refused(const scenario *s, moe_error *err, int i, const char *key, int value, const char *kind) {
    char label[64], val[64];
    snprintf(label, sizeof label, "faults.links[%d].%s", i, key);
    snprintf(val, sizeof val, "%d on a kind \"%s\" link", value, kind);
    return moe_error_input(err, s->file, label, val,
                           "no \"%s\" key: a nic or nvlink link is named by \"gpu\", an uplink by \"rail\" and \"leaf\"", key);
}

/* An index of faults.links[i]'s address: present and in 0 .. n - 1. */
static int check_link_index(const scenario *s, moe_error *err, int i, const char *key, int value, int n,
                            const char *what) {
    char label[64], exp[160], val[32];
    snprintf(label, sizeof label, "faults.links[%d]%s%s", i, value < 0 ? "" : ".", value < 0 ? "" : key);
    if (value < 0) {
        snprintf(val, sizeof val, "no \"%s\" key", key);
        return moe_error_input(err, s->file, label, val, "a \"%s\" key: %s in 0..%d", key, what, n - 1);
    }
    if (value < n) return 0;
    snprintf(exp, sizeof exp, "%s in 0..%d", what, n - 1);
    return bad_int(s, err, label, value, exp);
}

/* faults.links[i] names one link of the fabric: a GPU's NIC or NVLink by `gpu`, a leaf's uplink by
 * `rail` and `leaf` (platforms/fabric_geometry.h: up-rR-lL). */
static int check_link_address(const scenario *s, int i, moe_error *err) {
    const link_fault *lf = &s->faults.links[i];
    const char *kind = scn_link_kind_names[lf->kind];
    if (lf->kind != LINK_UPLINK) {
        if (lf->rail >= 0) return link_key_refused(s, err, i, "rail", lf->rail, kind);
        if (lf->leaf >= 0) return link_key_refused(s, err, i, "leaf", lf->leaf, kind);
        char label[64];
        snprintf(label, sizeof label, "faults.links[%d].gpu", i);
        if (lf->gpu < 0) return check_link_index(s, err, i, "gpu", lf->gpu, scn_gpus(s), "a GPU id");
        return check_gpu_id(s, err, label, lf->gpu);
    }
    if (lf->gpu >= 0) return link_key_refused(s, err, i, "gpu", lf->gpu, kind);
    return check_link_index(s, err, i, "rail", lf->rail, s->cluster.rails, "a rail (cluster.rails)") ||
           check_link_index(s, err, i, "leaf", lf->leaf, scn_leaves_per_rail(&s->cluster),
                            "a leaf of the rail (cluster.nodes / cluster.leaf_down_ports, rounded up)");
}

static int check_ids(const scenario *s, moe_error *err) {
    char label[96];
    for (int i = 0; i < s->faults.n_slow_gpus; i++) {
        snprintf(label, sizeof label, "faults.slow_gpus[%d].gpu", i);
        if (check_gpu_id(s, err, label, s->faults.slow_gpus[i].gpu)) return EXIT_BADINPUT;
    }
    for (int i = 0; i < s->faults.n_links; i++) {
        if (check_link_address(s, i, err)) return EXIT_BADINPUT;
        if (s->faults.links[i].loss_rate > 0 && s->faults.links[i].kind == LINK_NVLINK) {
            /* NVLink retries a bad flit at the link layer: the transport's go-back-N model is not its */
            char val[32];
            snprintf(label, sizeof label, "faults.links[%d].loss_rate", i);
            snprintf(val, sizeof val, "%g on an nvlink link", s->faults.links[i].loss_rate);
            return moe_error_input(err, s->file, label, val, "0: packet loss is modelled on NIC links only (kind \"nic\")");
        }
    }
    for (int i = 0; i < s->faults.n_stalls; i++) {
        const stall_fault *st = &s->faults.stalls[i];
        snprintf(label, sizeof label, "faults.stalls[%d].gpu", i);
        if (check_gpu_id(s, err, label, st->gpu)) return EXIT_BADINPUT;
        char val[32];
        if (st->layer >= s->model.layers) {
            snprintf(label, sizeof label, "faults.stalls[%d].layer", i);
            snprintf(val, sizeof val, "%d", st->layer);
            return moe_error_input(err, s->file, label, val, "a block index below model.layers = %d",
                                   s->model.layers);
        }
        if (st->micro_batch >= scn_micro_batches(s)) {
            snprintf(label, sizeof label, "faults.stalls[%d].micro_batch", i);
            snprintf(val, sizeof val, "%d", st->micro_batch);
            return moe_error_input(err, s->file, label, val, "a micro-batch index below %d (micro-batches per step)",
                                   scn_micro_batches(s));
        }
    }
    for (int i = 0; i < s->output.n_trace_ranks; i++) {
        snprintf(label, sizeof label, "output.trace_ranks[%d]", i);
        if (check_gpu_id(s, err, label, s->output.trace_ranks[i])) return EXIT_BADINPUT;
    }
    return 0;
}

/* A graph of the MoE MLP or the whole layer needs static shapes: a dropless MoE layer's host sync (the tokens per
 * expert sizing its buffers) cannot be captured (Megatron-Core 0.17.1 transformer_config.py l.2009-2013:
 * "moe cuda graph is only supported with drop-padding MoE"). */
static int check_host(const scenario *s, moe_error *err) {
    const routing_cfg *r = &s->routing;
    int whole = s->host.cuda_graph_scope & (CG_MOE | CG_LAYER);
    if (whole && s->model.experts > 0 && s->model.dense_layers < s->model.layers && !(r->drop && r->capacity_factor > 0))
        return moe_error_input(err, s->file, "host.cuda_graph_scope", whole & CG_MOE ? "\"moe\"" : "\"layer\"",
                               "scopes without \"moe\" and \"layer\" for a dropless MoE model (a graph cannot "
                               "capture the host sync that sizes the experts' tokens; drop-and-pad, routing.drop with "
                               "a routing.capacity_factor, has none): attn, mlp, moe_router, moe_preprocess");
    return 0;
}

int scenario_validate(const scenario *s, moe_error *err) {
    /* every field in its own range first (structs edited in code included), so that the cross-field
     * rules below can rely on positive sizes and bounded counts */
    for (int i = 0; i < scn_n_fields; i++)
        if (scn_field_check(s, &scn_fields[i], err)) return EXIT_BADINPUT;
    if (check_model(s, err) || scenario_check_cluster(s, err) || check_precision(s, err) || check_layout(s, err) ||
        check_routing(s, err) || check_host(s, err) ||
        check_reliability(s, err) || check_ids(s, err))
        return EXIT_BADINPUT;
    return 0;
}

/* ---- output ------------------------------------------------------------------------------------------ */

static void put_path(cJSON *root, const char *path, cJSON *v) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    cJSON *cur = root;
    char *p = buf;
    for (char *dot; (dot = strchr(p, '.')); p = dot + 1) {
        *dot = '\0';
        cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, p);
        if (!next) next = cJSON_AddObjectToObject(cur, p);
        cur = next;
    }
    cJSON_AddItemToObject(cur, p, v);
}

cJSON *scenario_to_json(const scenario *s) {
    cJSON *root = cJSON_CreateObject();
    for (int i = 0; i < scn_n_fields; i++) {
        cJSON *v = scn_field_get(s, &scn_fields[i]);
        if (v) put_path(root, scn_fields[i].path, v);
    }
    return root;
}

cJSON *scenario_patch_json(const scenario *from, const scenario *to) {
    cJSON *patch = cJSON_CreateObject();
    for (int i = 0; i < scn_n_fields; i++) {
        const scn_field *f = &scn_fields[i];
        if (scn_field_same(from, to, f)) continue;
        cJSON *a = scn_field_get(from, f), *b = scn_field_get(to, f);
        if (b && !cJSON_Compare(a, b, 1)) put_path(patch, f->path, b);
        else cJSON_Delete(b);
        cJSON_Delete(a);
    }
    return patch;
}
