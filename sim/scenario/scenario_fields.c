/* scenario_fields.c — the table of scenario fields and the generic code that reads, writes and
 * checks a field through its row. See scenario_fields.h for the contract. */
#include "sim/scenario/scenario_fields.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/json_read.h"

#include "sim/scenario/presets.h"

/* Enums are stored as int-sized values and read/written as int. */
_Static_assert(sizeof(attention_kind) == sizeof(int), "enums are read as int");
_Static_assert(sizeof(dtype_kind) == sizeof(int), "enums are read as int");

/* ---- enum names (index = enum value) ------------------------------------------------------------- */
const char *const scn_attention_names[] = {"mha", "gqa", "mla", NULL};
const char *const scn_ffn_act_names[] = {"swiglu", "gelu", NULL};
const char *const scn_schedule_names[] = {"1f1b", "interleaved", "dualpipe", NULL};
const char *const scn_recompute_names[] = {"none", "selective", "full", NULL};
const char *const scn_placement_names[] = {"ep-inner", "dp-inner", NULL};
const char *const scn_route_names[] = {"uniform", "zipf", "hot", "trace", "balanced", NULL};
const char *const scn_dtype_names[] = {"fp8", "bf16", "fp16", "fp32", NULL};
/* precision.compute: the storage types and the compute recipes (index = dtype_kind) */
const char *const scn_compute_names[] = {"fp8", "bf16", "fp16", "fp32", "fp8-cs", "mxfp8", "nvfp4", NULL};
const char *const scn_failure_dist_names[] = {"exponential", "weibull", NULL};
const char *const scn_ckpt_policy_names[] = {"fixed", "young", "daly", "none", NULL};
const char *const scn_ckpt_mode_names[] = {"sync", "async", NULL};
const char *const scn_spike_action_names[] = {"rollback", "skip", NULL};
const char *const scn_link_kind_names[] = {"nic", "nvlink", NULL};
const char *const scn_fidelity_names[] = {"fast", "full", NULL};
/* bit i of output.levels <-> scn_level_names[i] (LEVEL_PLAN = 1, LEVEL_STEP = 2, LEVEL_RUN = 4) */
const char *const scn_level_names[] = {"plan", "step", "run", NULL};
const char *const scn_failure_class_names[] = {"gpu", "hbm", "nic", "nvlink", "switch", "host",
                                               "software", NULL};

/* ---- row builders --------------------------------------------------------------------------------- */
#define OFF(m) offsetof(scenario, m)
#define SZ(m) sizeof(((scenario *)0)->m)
#define NOMAX ((double)INT_MAX)
#define F_INT(p, m, lo, hi) {.path = p, .type = SF_INT, .offset = OFF(m), .min = (lo), .max = (hi)}
#define F_DBL(p, m, lo, hi, fl) {.path = p, .type = SF_DOUBLE, .offset = OFF(m), .min = (lo), .max = (hi), .flags = (fl)}
#define F_POS(p, m) F_DBL(p, m, 0, INFINITY, SCN_MIN_OPEN)
#define F_NONNEG(p, m) F_DBL(p, m, 0, INFINITY, 0)
#define F_FRAC(p, m) F_DBL(p, m, 0, 1, 0)
#define F_BOOL(p, m) {.path = p, .type = SF_BOOL, .offset = OFF(m)}
#define F_STR(p, m, fl) {.path = p, .type = SF_STRING, .offset = OFF(m), .size = SZ(m), .flags = (fl)}
#define F_NSTR(p, m) {.path = p, .type = SF_NSTRING, .offset = OFF(m), .size = SZ(m)}
#define F_ENUM(p, m, nm) {.path = p, .type = SF_ENUM, .offset = OFF(m), .names = nm}
#define F_AUTO(p, m, lo, fl) {.path = p, .type = SF_AUTO, .offset = OFF(m), .min = (lo), .max = INFINITY, .flags = (fl)}
#define F_PRESET(p, m, nm) {.path = p, .type = SF_PRESET, .offset = OFF(m), .size = SZ(m), .names = nm}
#define F_CLASS(c, C)                                                                              \
    F_FRAC("reliability.classes." c ".share", reliability.classes[C].share),                       \
    F_BOOL("reliability.classes." c ".needs_node_swap", reliability.classes[C].needs_node_swap)

/* Fields of one element of faults.slow_gpus / faults.links (offsets into the element). */
static const scn_field SLOW_GPU_ITEMS[] = {
    {.path = "gpu", .type = SF_INT, .offset = offsetof(slow_gpu_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED},
    /* compute takes `factor` times longer: a slow GPU, never a faster one */
    {.path = "factor", .type = SF_DOUBLE, .offset = offsetof(slow_gpu_fault, factor), .min = 1,
     .max = INFINITY, .flags = SCN_REQUIRED},
};
static const scn_field LINK_ITEMS[] = {
    {.path = "gpu", .type = SF_INT, .offset = offsetof(link_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED},
    {.path = "kind", .type = SF_ENUM, .offset = offsetof(link_fault, kind), .names = scn_link_kind_names,
     .flags = SCN_REQUIRED},
    /* the link keeps `factor` of its bandwidth: 0 < factor <= 1 (a dead link is a failure, not a fault) */
    {.path = "factor", .type = SF_DOUBLE, .offset = offsetof(link_fault, factor), .min = 0, .max = 1,
     .flags = SCN_REQUIRED | SCN_MIN_OPEN},
};

/* faults.stalls: the rank on `gpu` stops before (layer, micro_batch) and never arrives again. */
static const scn_field STALL_ITEMS[] = {
    {.path = "gpu", .type = SF_INT, .offset = offsetof(stall_fault, gpu), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED},
    {.path = "layer", .type = SF_INT, .offset = offsetof(stall_fault, layer), .min = 0, .max = NOMAX,
     .flags = SCN_REQUIRED},
    {.path = "micro_batch", .type = SF_INT, .offset = offsetof(stall_fault, micro_batch), .min = 0,
     .max = NOMAX, .flags = SCN_REQUIRED},
};

/* Upper bounds on counts keep every product the consumers form (gpus, tp*pp, ...) inside int. */
#define MAX_NODES (1 << 20)
#define MAX_GPUS_PER_NODE 1024
#define MAX_PAR (1 << 20)

const scn_field scn_fields[] = {
    {.path = "format", .type = SF_FORMAT},
    F_STR("name", name, SCN_NONEMPTY | SCN_IDENT),
    {.path = "seed", .type = SF_U64, .offset = OFF(seed), .min = 0, .max = 9007199254740992.0 /* 2^53 */},

    F_PRESET("model.preset", model.preset, preset_model_names),
    F_INT("model.layers", model.layers, 1, NOMAX),
    F_INT("model.dense_layers", model.dense_layers, 0, NOMAX),
    F_INT("model.hidden", model.hidden, 1, NOMAX),
    F_INT("model.heads", model.heads, 1, NOMAX),
    F_INT("model.head_dim", model.head_dim, 1, NOMAX),
    F_INT("model.ffn_hidden", model.ffn_hidden, 0, NOMAX),
    F_INT("model.experts", model.experts, 0, NOMAX),
    F_INT("model.shared_experts", model.shared_experts, 0, NOMAX),
    F_INT("model.expert_hidden", model.expert_hidden, 0, NOMAX),
    F_INT("model.top_k", model.top_k, 0, NOMAX),
    F_INT("model.vocab", model.vocab, 1, NOMAX),
    F_INT("model.seq_len", model.seq_len, 1, NOMAX),
    F_ENUM("model.attention", model.attention, scn_attention_names),
    F_INT("model.kv_heads", model.kv_heads, 1, NOMAX),
    F_INT("model.q_lora_rank", model.q_lora_rank, 0, NOMAX),
    F_INT("model.kv_lora_rank", model.kv_lora_rank, 0, NOMAX),
    F_INT("model.rope_head_dim", model.rope_head_dim, 0, NOMAX),
    F_INT("model.v_head_dim", model.v_head_dim, 1, NOMAX),
    F_ENUM("model.ffn_act", model.ffn_act, scn_ffn_act_names),
    F_INT("model.expert_groups", model.expert_groups, 0, NOMAX),
    F_INT("model.topk_groups", model.topk_groups, 0, NOMAX),
    F_BOOL("model.tie_embeddings", model.tie_embeddings),
    /* the headline active-parameter count a model card publishes (0 = none): the 6N estimate of the
     * back-of-the-envelope (seed 003: 6 x 37e9) uses it, the exact per-layer counts do not */
    F_NONNEG("model.published_active_params", model.published_active_params),
    F_INT("model.sliding_window", model.sliding_window, 0, NOMAX),
    F_INT("model.global_attention_every", model.global_attention_every, 0, NOMAX),

    F_PRESET("cluster.preset", cluster.preset, preset_cluster_names),
    F_INT("cluster.nodes", cluster.nodes, 1, MAX_NODES),
    F_INT("cluster.gpus_per_node", cluster.gpus_per_node, 1, MAX_GPUS_PER_NODE),
    F_STR("cluster.gpu.name", cluster.gpu.name, SCN_NONEMPTY),
    F_POS("cluster.gpu.bf16_tflops", cluster.gpu.bf16_tflops),
    F_POS("cluster.gpu.fp8_tflops", cluster.gpu.fp8_tflops),
    F_POS("cluster.gpu.hbm_GBps", cluster.gpu.hbm_GBps),
    F_POS("cluster.gpu.mem_GiB", cluster.gpu.mem_GiB),
    F_NONNEG("cluster.gpu.fp4_tflops", cluster.gpu.fp4_tflops),
    F_POS("cluster.nvlink_GBps", cluster.nvlink_GBps),
    F_POS("cluster.nic_gbps", cluster.nic_gbps),
    F_INT("cluster.rails", cluster.rails, 1, MAX_GPUS_PER_NODE),
    F_INT("cluster.leaf_down_ports", cluster.leaf_down_ports, 1, NOMAX),
    F_POS("cluster.oversubscription", cluster.oversubscription),
    F_NONNEG("cluster.latency_us.nvlink", cluster.latency_us.nvlink),
    F_NONNEG("cluster.latency_us.same_leaf", cluster.latency_us.same_leaf),
    F_NONNEG("cluster.latency_us.cross_leaf", cluster.latency_us.cross_leaf),
    F_POS("cluster.storage_GBps", cluster.storage_GBps),
    F_POS("cluster.host_mem_GiB", cluster.host_mem_GiB),
    F_POS("cluster.pcie_GBps", cluster.pcie_GBps),

    F_INT("layout.tp", layout.tp, 1, MAX_PAR),
    F_INT("layout.pp", layout.pp, 1, MAX_PAR),
    F_INT("layout.ep", layout.ep, 1, MAX_PAR),
    F_INT("layout.dp", layout.dp, 1, MAX_PAR),
    F_INT("layout.zero", layout.zero, 0, 3),
    F_INT("layout.micro_batch", layout.micro_batch, 1, NOMAX),
    F_INT("layout.global_batch", layout.global_batch, 1, NOMAX),
    F_ENUM("layout.schedule", layout.schedule, scn_schedule_names),
    F_INT("layout.vpp", layout.vpp, 1, NOMAX),
    F_ENUM("layout.recompute", layout.recompute, scn_recompute_names),
    F_ENUM("layout.placement", layout.placement, scn_placement_names),

    F_ENUM("routing.distribution", routing.distribution, scn_route_names),
    F_POS("routing.zipf_s", routing.zipf_s),
    F_INT("routing.hot_expert", routing.hot_expert, 0, NOMAX),
    F_DBL("routing.hot_share", routing.hot_share, 0, 1, SCN_MIN_OPEN),
    F_INT("routing.node_limit", routing.node_limit, 0, NOMAX),
    F_NONNEG("routing.capacity_factor", routing.capacity_factor),
    F_BOOL("routing.drop", routing.drop),
    F_NSTR("routing.trace", routing.trace),

    F_ENUM("precision.compute", precision.compute, scn_compute_names),
    F_ENUM("precision.dispatch", precision.dispatch, scn_dtype_names),
    F_ENUM("precision.combine", precision.combine, scn_dtype_names),
    F_ENUM("precision.master", precision.master, scn_dtype_names),

    F_NSTR("calibration", calibration),

    F_POS("reliability.gpu_mtbf_h", reliability.gpu_mtbf_h),
    F_ENUM("reliability.distribution", reliability.distribution, scn_failure_dist_names),
    F_POS("reliability.weibull_shape", reliability.weibull_shape),
    F_NSTR("reliability.failure_trace", reliability.failure_trace),
    F_CLASS("gpu", FAIL_GPU),
    F_CLASS("hbm", FAIL_HBM),
    F_CLASS("nic", FAIL_NIC),
    F_CLASS("nvlink", FAIL_NVLINK),
    F_CLASS("switch", FAIL_SWITCH),
    F_CLASS("host", FAIL_HOST),
    F_CLASS("software", FAIL_SOFTWARE),
    F_ENUM("reliability.checkpoint.policy", reliability.checkpoint.policy, scn_ckpt_policy_names),
    F_POS("reliability.checkpoint.interval_min", reliability.checkpoint.interval_min),
    F_ENUM("reliability.checkpoint.mode", reliability.checkpoint.mode, scn_ckpt_mode_names),
    F_AUTO("reliability.checkpoint.state_bytes", reliability.checkpoint.state_bytes, 0, SCN_MIN_OPEN),
    F_POS("reliability.checkpoint.snapshot_GBps", reliability.checkpoint.snapshot_GBps),
    F_AUTO("reliability.checkpoint.write_min", reliability.checkpoint.write_min, 0, 0),
    F_DBL("reliability.recovery.hot_spare_fraction", reliability.recovery.hot_spare_fraction, 0, 1,
          SCN_MAX_OPEN),
    F_NONNEG("reliability.recovery.spare_swap_s", reliability.recovery.spare_swap_s),
    F_NONNEG("reliability.recovery.full_restart_min", reliability.recovery.full_restart_min),
    F_NONNEG("reliability.recovery.repair_h", reliability.recovery.repair_h),
    F_FRAC("reliability.stragglers.fraction", reliability.stragglers.fraction),
    F_DBL("reliability.stragglers.slowdown", reliability.stragglers.slowdown, 1, INFINITY, 0),
    F_NONNEG("reliability.stragglers.detect_min", reliability.stragglers.detect_min),
    F_NONNEG("reliability.loss_spikes.per_day", reliability.loss_spikes.per_day),
    F_ENUM("reliability.loss_spikes.action", reliability.loss_spikes.action, scn_spike_action_names),

    {.path = "faults.slow_gpus", .type = SF_OBJ_LIST, .offset = OFF(faults.slow_gpus),
     .size = sizeof(slow_gpu_fault), .count_offset = OFF(faults.n_slow_gpus), .max_count = SCN_MAX_FAULTS,
     .items = SLOW_GPU_ITEMS, .n_items = 2},
    {.path = "faults.links", .type = SF_OBJ_LIST, .offset = OFF(faults.links), .size = sizeof(link_fault),
     .count_offset = OFF(faults.n_links), .max_count = SCN_MAX_FAULTS, .items = LINK_ITEMS, .n_items = 3},
    {.path = "faults.stalls", .type = SF_OBJ_LIST, .offset = OFF(faults.stalls), .size = sizeof(stall_fault),
     .count_offset = OFF(faults.n_stalls), .max_count = SCN_MAX_FAULTS, .items = STALL_ITEMS, .n_items = 3},

    F_ENUM("step.fidelity", step.fidelity, scn_fidelity_names),

    F_POS("run.tokens", run.tokens),
    F_POS("run.max_days", run.max_days),
    F_INT("run.trials", run.trials, 1, NOMAX),
    F_FRAC("run.assumed_mfu", run.assumed_mfu),

    {.path = "sweep", .type = SF_SWEEP},

    F_STR("output.dir", output.dir, SCN_NONEMPTY),
    F_BOOL("output.trace", output.trace),
    F_BOOL("output.plots", output.plots),
    {.path = "output.levels", .type = SF_LEVELS, .offset = OFF(output.levels)},
    {.path = "output.trace_ranks", .type = SF_INT_LIST, .offset = OFF(output.trace_ranks),
     .size = sizeof(int), .count_offset = OFF(output.n_trace_ranks), .max_count = SCN_MAX_TRACE_RANKS,
     .min = 0, .max = NOMAX},
};
const int scn_n_fields = (int)(sizeof scn_fields / sizeof scn_fields[0]);

/* ---- lookup and suggestions ----------------------------------------------------------------------- */
const scn_field *scn_field_find(const char *path) {
    for (int i = 0; i < scn_n_fields; i++)
        if (strcmp(scn_fields[i].path, path) == 0) return &scn_fields[i];
    return NULL;
}

int scn_path_is_section(const char *path) {
    size_t n = strlen(path);
    if (n == 0) return 1;
    for (int i = 0; i < scn_n_fields; i++)
        if (strncmp(scn_fields[i].path, path, n) == 0 && scn_fields[i].path[n] == '.') return 1;
    return 0;
}

#define MAX_CANDIDATES 128
#define NAME_LEN 64

/* The distinct child names of section `prefix` ("" = top level), in table order. */
static int section_children(const char *prefix, char names[][NAME_LEN], int cap) {
    size_t n = strlen(prefix);
    int count = 0;
    for (int i = 0; i < scn_n_fields && count < cap; i++) {
        const char *p = scn_fields[i].path;
        if (n > 0) {
            if (strncmp(p, prefix, n) != 0 || p[n] != '.') continue;
            p += n + 1;
        }
        size_t len = strcspn(p, ".");
        if (len >= NAME_LEN) continue;
        int dup = 0;
        for (int j = 0; j < count && !dup; j++) dup = strlen(names[j]) == len && strncmp(names[j], p, len) == 0;
        if (dup) continue;
        memcpy(names[count], p, len);
        names[count][len] = '\0';
        count++;
    }
    return count;
}

/* Length of the common leading part of two dotted paths. */
static size_t common_prefix(const char *a, const char *b) {
    size_t n = 0;
    while (a[n] && a[n] == b[n]) n++;
    return n;
}

const char *scn_field_suggest(const char *prefix, const char *key) {
    static char best[256];
    /* The right name at the wrong depth ({"pp": 16} at the top): the full path of the field with
     * that name, the one nearest to where it was written ({"cluster": {"name": ..}} -> cluster.gpu.name). */
    const char *exact = NULL;
    size_t exact_len = 0;
    for (int i = 0; i < scn_n_fields; i++) {
        const char *dot = strrchr(scn_fields[i].path, '.');
        if (!dot || strcmp(dot + 1, key) != 0) continue;
        size_t len = common_prefix(scn_fields[i].path, prefix);
        if (!exact || len > exact_len) { exact = scn_fields[i].path; exact_len = len; }
    }
    if (exact) {
        snprintf(best, sizeof best, "%s", exact);
        return best;
    }
    char names[MAX_CANDIDATES][NAME_LEN];
    const char *cand[MAX_CANDIDATES + 1];
    int n = section_children(prefix, names, MAX_CANDIDATES);
    for (int i = 0; i < n; i++) cand[i] = names[i];
    cand[n] = NULL;
    const char *hit = moe_did_you_mean(key, cand);
    if (!hit) return NULL;
    snprintf(best, sizeof best, "%s", hit);
    return best;
}

const char *scn_path_suggest(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return scn_field_suggest("", path); /* "pp" -> "layout.pp" */
    const char *cand[sizeof scn_fields / sizeof scn_fields[0] + 1];
    int n = 0;
    for (int i = 0; i < scn_n_fields; i++)
        if (scn_fields[i].type != SF_FORMAT && scn_fields[i].type != SF_SWEEP) cand[n++] = scn_fields[i].path;
    cand[n] = NULL;
    const char *hit = moe_did_you_mean(path, cand);
    return hit ? hit : scn_field_suggest("", dot + 1);
}

/* ---- formatting: json_shown / json_format_number (sim/base/json_read.h) ---------------------------- */

/* What a field accepts, in words, for "expected ..." */
static void range_words(const scn_field *f, int integer, char *buf, size_t cap) {
    int has_lo = f->min > -INFINITY, has_hi = integer ? f->max < NOMAX : f->max < INFINITY;
    int lo_open = f->flags & SCN_MIN_OPEN, hi_open = f->flags & SCN_MAX_OPEN;
    if (integer && has_lo && has_hi) snprintf(buf, cap, "in %.10g..%.10g", f->min, f->max);
    else if (has_lo && has_hi)
        snprintf(buf, cap, "in %c%.10g, %.10g%c", lo_open ? '(' : '[', f->min, f->max, hi_open ? ')' : ']');
    else if (has_lo) snprintf(buf, cap, "%s %.10g", lo_open ? ">" : ">=", f->min);
    else if (has_hi) snprintf(buf, cap, "%s %.10g", hi_open ? "<" : "<=", f->max);
    else buf[0] = '\0';
}

static void names_words(const char *const *names, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\"", i ? ", " : "", names[i]);
}

static void expect_words(const scn_field *f, char *buf, size_t cap) {
    char r[96], nm[256];
    switch (f->type) {
    case SF_INT: range_words(f, 1, r, sizeof r); snprintf(buf, cap, "an integer %s", r); break;
    case SF_U64: snprintf(buf, cap, "an integer in 0..2^53"); break;
    case SF_DOUBLE: range_words(f, 0, r, sizeof r); snprintf(buf, cap, "a finite number %s", r); break;
    case SF_BOOL: snprintf(buf, cap, "true or false"); break;
    case SF_STRING:
        snprintf(buf, cap, "a %sstring of at most %zu characters%s", (f->flags & SCN_NONEMPTY) ? "non-empty " : "",
                 f->size - 1, (f->flags & SCN_IDENT) ? " (letters, digits, '.', '_', '+', '-')" : "");
        break;
    case SF_NSTRING: snprintf(buf, cap, "a string of at most %zu characters, or null", f->size - 1); break;
    case SF_ENUM: names_words(f->names, nm, sizeof nm); snprintf(buf, cap, "one of %s", nm); break;
    case SF_AUTO: range_words(f, 0, r, sizeof r); snprintf(buf, cap, "\"auto\" or a number %s", r); break;
    case SF_LEVELS:
        names_words(scn_level_names, nm, sizeof nm);
        snprintf(buf, cap, "a non-empty list of %s", nm);
        break;
    case SF_INT_LIST:
        range_words(f, 1, r, sizeof r);
        snprintf(buf, cap, "a list of at most %d integers %s", f->max_count, r);
        break;
    case SF_OBJ_LIST: {
        size_t n = 0;
        nm[0] = '\0';
        for (int i = 0; i < f->n_items; i++)
            n += (size_t)snprintf(nm + n, sizeof nm - n, "%s\"%s\": ...", i ? ", " : "", f->items[i].path);
        snprintf(buf, cap, "a list of at most %d objects {%s}", f->max_count, nm);
        break;
    }
    case SF_PRESET: names_words(f->names, nm, sizeof nm); snprintf(buf, cap, "a preset: %s (or null)", nm); break;
    case SF_FORMAT: snprintf(buf, cap, "\"%s\"", SCN_FORMAT); break;
    case SF_SWEEP: snprintf(buf, cap, "an object of \"dotted.path\": [values]"); break;
    }
}

static int bad_json(moe_error *err, const char *file, const char *label, const cJSON *v,
                    const scn_field *f, const char *extra) {
    char val[128], exp[400];
    json_shown(v, val, sizeof val);
    expect_words(f, exp, sizeof exp);
    return moe_error_input(err, file, label, val, "%s%s", exp, extra ? extra : "");
}

/* ---- numeric helpers ------------------------------------------------------------------------------ */
static int in_range(const scn_field *f, double v) {
    if ((f->flags & SCN_MIN_OPEN) ? !(v > f->min) : !(v >= f->min)) return 0;
    if ((f->flags & SCN_MAX_OPEN) ? !(v < f->max) : !(v <= f->max)) return 0;
    return 1;
}

/* A JSON integer in the field's range that fits an int. */
static int json_int(const scn_field *f, const cJSON *v, int *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < INT_MIN || d > INT_MAX || !in_range(f, d)) return -1;
    *out = (int)d;
    return 0;
}

static int json_double(const scn_field *f, const cJSON *v, double *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !in_range(f, v->valuedouble)) return -1;
    *out = v->valuedouble;
    return 0;
}

static int enum_index(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

static int ident_ok(const char *s) {
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '+' || *s == '-'))
            return 0;
    return 1;
}

/* ---- set ------------------------------------------------------------------------------------------- */
static int set_value(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                     moe_error *err);

static int set_string(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                      moe_error *err) {
    if (f->type == SF_NSTRING && cJSON_IsNull(v)) { dst[0] = '\0'; return 0; }
    if (!cJSON_IsString(v)) return bad_json(err, file, label, v, f, NULL);
    const char *str = v->valuestring;
    size_t len = strlen(str);
    if (len >= f->size || ((f->flags & SCN_NONEMPTY) && len == 0) || ((f->flags & SCN_IDENT) && !ident_ok(str)))
        return bad_json(err, file, label, v, f, NULL);
    memcpy(dst, str, len + 1);
    return 0;
}

static int set_enum(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                    moe_error *err) {
    int idx = cJSON_IsString(v) ? enum_index(f->names, v->valuestring) : -1;
    if (idx < 0) {
        char hint[96] = "";
        const char *dym = cJSON_IsString(v) ? moe_did_you_mean(v->valuestring, f->names) : NULL;
        if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
        return bad_json(err, file, label, v, f, hint);
    }
    memcpy(dst, &idx, sizeof idx);
    return 0;
}

static int set_preset(scenario *s, char *dst, const scn_field *f, const cJSON *v, const char *label,
                      moe_error *err) {
    if (cJSON_IsNull(v)) {
        /* a model without a preset starts from nothing: the section must give every required field
         * (checked once the section is applied, preset_custom_model_check); a cluster keeps its
         * values and forgets where they came from */
        if (f->offset == offsetof(scenario, model.preset)) preset_custom_model(&s->model);
        dst[0] = '\0';
        return 0;
    }
    int rc = -1;
    if (cJSON_IsString(v)) {
        if (f->offset == offsetof(scenario, model.preset)) {
            rc = preset_model(v->valuestring, &s->model);
            /* the model's own training precision, where the scenario does not set it */
            if (rc == 0) preset_model_precision(v->valuestring, s->precision_given, &s->precision);
        } else {
            /* the cost model follows the cluster's GPU while it is the previous preset's default
             * (an H100 cluster is priced with the H100 model unless the scenario names another) */
            const char *old_default = preset_cluster_calibration(s->cluster.preset);
            rc = preset_cluster(v->valuestring, &s->cluster);
            const char *new_default = preset_cluster_calibration(v->valuestring);
            if (rc == 0 && old_default && new_default && strcmp(s->calibration, old_default) == 0)
                snprintf(s->calibration, sizeof s->calibration, "%s", new_default);
        }
    }
    if (rc != 0) {
        char hint[96] = "";
        const char *dym = cJSON_IsString(v) ? moe_did_you_mean(v->valuestring, f->names) : NULL;
        if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
        return bad_json(err, s->file, label, v, f, hint);
    }
    return 0;
}

static int set_levels(char *dst, const scn_field *f, const cJSON *v, const char *file, const char *label,
                      moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0) return bad_json(err, file, label, v, f, NULL);
    int mask = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        int idx = cJSON_IsString(it) ? enum_index(scn_level_names, it->valuestring) : -1;
        if (idx < 0) {
            char item_label[300];
            snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
            return bad_json(err, file, item_label, it, f, NULL);
        }
        mask |= 1 << idx;
        i++;
    }
    memcpy(dst, &mask, sizeof mask);
    return 0;
}

static int set_int_list(char *base, const scn_field *f, const cJSON *v, const char *file, const char *label,
                        moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > f->max_count) return bad_json(err, file, label, v, f, NULL);
    int n = 0, x;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (json_int(f, it, &x)) {
            char item_label[300];
            snprintf(item_label, sizeof item_label, "%s[%d]", label, n);
            return bad_json(err, file, item_label, it, f, NULL);
        }
        memcpy(base + f->offset + (size_t)n * f->size, &x, sizeof x);
        n++;
    }
    memcpy(base + f->count_offset, &n, sizeof n);
    return 0;
}

/* One element of an object list: every key known, every required key present. */
static int set_item(scenario *s, char *elem, const scn_field *f, const cJSON *obj, const char *label,
                    moe_error *err) {
    char key_label[360];
    if (!cJSON_IsObject(obj)) return bad_json(err, s->file, label, obj, f, NULL);
    const cJSON *m;
    cJSON_ArrayForEach(m, obj) {
        const scn_field *item = NULL;
        for (int k = 0; k < f->n_items && !item; k++)
            if (m->string && strcmp(m->string, f->items[k].path) == 0) item = &f->items[k];
        snprintf(key_label, sizeof key_label, "%s.%s", label, m->string ? m->string : "");
        if (!item) {
            const char *cand[8];
            for (int k = 0; k < f->n_items; k++) cand[k] = f->items[k].path;
            cand[f->n_items] = NULL;
            const char *dym = moe_did_you_mean(m->string ? m->string : "", cand);
            char keys[128], val[96], hint[64] = "";
            names_words(cand, keys, sizeof keys);
            snprintf(val, sizeof val, "unknown key \"%.60s\"", m->string ? m->string : "");
            if (dym) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", dym);
            return moe_error_input(err, s->file, key_label, val, "one of %s%s", keys, hint);
        }
        if (set_value(s, elem, item, m, key_label, err)) return EXIT_BADINPUT;
    }
    for (int k = 0; k < f->n_items; k++)
        if ((f->items[k].flags & SCN_REQUIRED) && !cJSON_GetObjectItemCaseSensitive(obj, f->items[k].path)) {
            char exp[400];
            expect_words(&f->items[k], exp, sizeof exp);
            char val[128];
            json_shown(obj, val, sizeof val);
            return moe_error_input(err, s->file, label, val, "a \"%s\" key: %s", f->items[k].path, exp);
        }
    return 0;
}

static int set_obj_list(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                        moe_error *err) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > f->max_count) return bad_json(err, s->file, label, v, f, NULL);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char item_label[300];
        snprintf(item_label, sizeof item_label, "%s[%d]", label, n);
        char *elem = base + f->offset + (size_t)n * f->size;
        memset(elem, 0, f->size);
        if (set_item(s, elem, f, it, item_label, err)) return EXIT_BADINPUT;
        n++;
    }
    memcpy(base + f->count_offset, &n, sizeof n);
    return 0;
}

static int set_value(scenario *s, char *base, const scn_field *f, const cJSON *v, const char *label,
                     moe_error *err) {
    char *dst = base + f->offset;
    const char *file = s->file;
    switch (f->type) {
    case SF_INT: {
        int x;
        if (json_int(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_U64: {
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
            !in_range(f, v->valuedouble))
            return bad_json(err, file, label, v, f, NULL);
        uint64_t x = (uint64_t)v->valuedouble;
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_DOUBLE: {
        double x;
        if (json_double(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_AUTO: {
        double x = -1;
        int is_auto = cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0;
        if (!is_auto && json_double(f, v, &x)) return bad_json(err, file, label, v, f, NULL);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_BOOL: {
        if (!cJSON_IsBool(v)) return bad_json(err, file, label, v, f, NULL);
        int x = cJSON_IsTrue(v);
        memcpy(dst, &x, sizeof x);
        return 0;
    }
    case SF_STRING:
    case SF_NSTRING: return set_string(dst, f, v, file, label, err);
    case SF_ENUM: return set_enum(dst, f, v, file, label, err);
    case SF_LEVELS: return set_levels(dst, f, v, file, label, err);
    case SF_INT_LIST: return set_int_list(base, f, v, file, label, err);
    case SF_OBJ_LIST: return set_obj_list(s, base, f, v, label, err);
    case SF_PRESET: return set_preset(s, dst, f, v, label, err);
    case SF_FORMAT:
        if (!cJSON_IsString(v) || strcmp(v->valuestring, SCN_FORMAT) != 0)
            return bad_json(err, file, label, v, f, " (the only version this moesim reads)");
        return 0;
    case SF_SWEEP: return moe_error_input(err, file, label, NULL, "a sweep only at the top of a scenario file");
    }
    return moe_error_input(err, file, label, NULL, "a known field type");
}

int scn_field_set(scenario *s, const scn_field *f, const cJSON *v, const char *label, moe_error *err) {
    int rc = set_value(s, (char *)s, f, v, label ? label : f->path, err);
    /* a precision field the scenario sets is its own: a model preset no longer changes it */
    size_t at = offsetof(scenario, precision);
    if (rc == 0 && f->offset >= at && f->offset < at + sizeof s->precision)
        s->precision_given |= 1u << ((f->offset - at) / sizeof(dtype_kind));
    return rc;
}

/* ---- check a stored value ------------------------------------------------------------------------- */
/* The expectation is worded only on failure: validation runs once per sweep point. */
static int check_fail(const scn_field *f, const char *file, const char *label, const char *val, moe_error *err) {
    char exp[400];
    expect_words(f, exp, sizeof exp);
    return moe_error_input(err, file, label, val, "%s", exp);
}

static int check_value(const char *base, const scn_field *f, const char *file, const char *label,
                       moe_error *err) {
    const char *src = base + f->offset;
    char val[128];
    switch (f->type) {
    case SF_INT: {
        int x;
        memcpy(&x, src, sizeof x);
        if (in_range(f, x)) return 0;
        snprintf(val, sizeof val, "%d", x);
        break;
    }
    case SF_U64: {
        uint64_t x;
        memcpy(&x, src, sizeof x);
        if ((double)x <= f->max) return 0;
        snprintf(val, sizeof val, "%llu", (unsigned long long)x);
        break;
    }
    case SF_DOUBLE:
    case SF_AUTO: {
        double x;
        memcpy(&x, src, sizeof x);
        if (f->type == SF_AUTO && x < 0) return 0;
        if (isfinite(x) && in_range(f, x)) return 0;
        json_format_number(x, val, sizeof val);
        break;
    }
    case SF_BOOL: {
        int x;
        memcpy(&x, src, sizeof x);
        if (x == 0 || x == 1) return 0;
        snprintf(val, sizeof val, "%d", x);
        break;
    }
    case SF_STRING:
    case SF_NSTRING:
    case SF_PRESET: {
        const char *end = memchr(src, '\0', f->size);
        if (!end) return check_fail(f, file, label, "an unterminated string", err);
        int ok = 1;
        if (f->type == SF_STRING)
            ok = !((f->flags & SCN_NONEMPTY) && end == src) && !((f->flags & SCN_IDENT) && !ident_ok(src));
        if (f->type == SF_PRESET && *src) ok = enum_index(f->names, src) >= 0;
        if (ok) return 0;
        snprintf(val, sizeof val, "\"%.100s\"", src);
        break;
    }
    case SF_ENUM: {
        int x, n = 0;
        memcpy(&x, src, sizeof x);
        while (f->names[n]) n++;
        if (x >= 0 && x < n) return 0;
        snprintf(val, sizeof val, "enum value %d", x);
        break;
    }
    case SF_LEVELS: {
        int x;
        memcpy(&x, src, sizeof x);
        if (x > 0 && (x & ~(LEVEL_PLAN | LEVEL_STEP | LEVEL_RUN)) == 0) return 0;
        snprintf(val, sizeof val, "bitmask %d", x);
        break;
    }
    case SF_INT_LIST:
    case SF_OBJ_LIST: {
        int n;
        memcpy(&n, base + f->count_offset, sizeof n);
        if (n < 0 || n > f->max_count) {
            snprintf(val, sizeof val, "%d entries", n);
            break;
        }
        for (int i = 0; i < n; i++) {
            char item_label[300];
            const char *elem = src + (size_t)i * f->size;
            if (f->type == SF_INT_LIST) {
                int x;
                memcpy(&x, elem, sizeof x);
                if (in_range(f, x)) continue;
                snprintf(item_label, sizeof item_label, "%s[%d]", label, i);
                snprintf(val, sizeof val, "%d", x);
                return check_fail(f, file, item_label, val, err);
            }
            for (int k = 0; k < f->n_items; k++) {
                snprintf(item_label, sizeof item_label, "%s[%d].%s", label, i, f->items[k].path);
                if (check_value(elem, &f->items[k], file, item_label, err)) return EXIT_BADINPUT;
            }
        }
        return 0;
    }
    case SF_FORMAT:
    case SF_SWEEP: return 0;
    }
    return check_fail(f, file, label, val, err);
}

int scn_field_check(const scenario *s, const scn_field *f, moe_error *err) {
    return check_value((const char *)s, f, s->file, f->path, err);
}

/* ---- get ------------------------------------------------------------------------------------------- */
static cJSON *get_value(const char *base, const scn_field *f) {
    const char *src = base + f->offset;
    int i;
    double d;
    switch (f->type) {
    case SF_INT: memcpy(&i, src, sizeof i); return cJSON_CreateNumber(i);
    case SF_U64: {
        uint64_t x;
        memcpy(&x, src, sizeof x);
        return cJSON_CreateNumber((double)x);
    }
    case SF_DOUBLE: memcpy(&d, src, sizeof d); return cJSON_CreateNumber(d);
    case SF_AUTO: memcpy(&d, src, sizeof d); return d < 0 ? cJSON_CreateString("auto") : cJSON_CreateNumber(d);
    case SF_BOOL: memcpy(&i, src, sizeof i); return cJSON_CreateBool(i);
    case SF_STRING: return cJSON_CreateString(src);
    case SF_NSTRING:
    case SF_PRESET: return *src ? cJSON_CreateString(src) : cJSON_CreateNull();
    case SF_ENUM: {
        int n = 0;
        memcpy(&i, src, sizeof i);
        while (f->names[n]) n++;
        return (i >= 0 && i < n) ? cJSON_CreateString(f->names[i]) : cJSON_CreateNull();
    }
    case SF_LEVELS: {
        cJSON *a = cJSON_CreateArray();
        memcpy(&i, src, sizeof i);
        for (int b = 0; scn_level_names[b]; b++)
            if (i & (1 << b)) cJSON_AddItemToArray(a, cJSON_CreateString(scn_level_names[b]));
        return a;
    }
    case SF_INT_LIST:
    case SF_OBJ_LIST: {
        int n;
        cJSON *a = cJSON_CreateArray();
        memcpy(&n, base + f->count_offset, sizeof n);
        for (int k = 0; k < n && k < f->max_count; k++) {
            const char *elem = src + (size_t)k * f->size;
            if (f->type == SF_INT_LIST) {
                memcpy(&i, elem, sizeof i);
                cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
                continue;
            }
            cJSON *o = cJSON_CreateObject();
            for (int m = 0; m < f->n_items; m++)
                cJSON_AddItemToObject(o, f->items[m].path, get_value(elem, &f->items[m]));
            cJSON_AddItemToArray(a, o);
        }
        return a;
    }
    case SF_FORMAT: return cJSON_CreateString(SCN_FORMAT);
    case SF_SWEEP: return NULL;
    }
    return NULL;
}

cJSON *scn_field_get(const scenario *s, const scn_field *f) { return get_value((const char *)s, f); }

/* ---- apply a JSON object ---------------------------------------------------------------------------- */
static int join_path(const char *prefix, const char *key, char *out, size_t cap) {
    int n = *prefix ? snprintf(out, cap, "%s.%s", prefix, key) : snprintf(out, cap, "%s", key);
    return n >= 0 && (size_t)n < cap;
}

static int unknown_field(const scenario *s, const char *prefix, const char *key, const char *path,
                         moe_error *err) {
    char val[96], label[160];
    char quoted[80];
    json_truncate_into(key, quoted, sizeof quoted);
    snprintf(val, sizeof val, "unknown field \"%s\"", quoted);
    json_truncate_into(path, label, sizeof label);
    const char *where = *prefix ? prefix : "the top level";
    if (strchr(key, '.') && (scn_field_find(path) || scn_path_is_section(path)))
        return moe_error_input(err, s->file, label, val,
                               "nested objects ({\"a\": {\"b\": ...}} for \"a.b\"); dotted keys are "
                               "only for \"sweep\"");
    const char *dym = *key ? scn_field_suggest(prefix, key) : NULL;
    if (dym) return moe_error_input(err, s->file, label, val, "a field of %s (did you mean \"%s\"?)", where, dym);
    char names[MAX_CANDIDATES][NAME_LEN], list[600];
    int n = section_children(prefix, names, MAX_CANDIDATES);
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    return moe_error_input(err, s->file, label, val, "a field of %s: %s", where, list);
}

int scn_apply_object(scenario *s, const char *prefix, const cJSON *obj, int skip_preset, moe_error *err) {
    char path[256];
    /* duplicate keys: refused by the parser (json_parse_strict) */
    /* Pass 0 applies the section's preset, pass 1 everything else: a preset never undoes a field
     * given beside it, whatever the order of the keys in the file. A model section with
     * "preset": null must then have given every field a model needs. */
    for (int pass = 0; pass < 2; pass++) {
        for (const cJSON *m = obj->child; m; m = m->next) {
            const char *key = m->string ? m->string : "";
            int plain = *key && !strchr(key, '.') && join_path(prefix, key, path, sizeof path);
            const scn_field *f = plain ? scn_field_find(path) : NULL;
            int is_preset = f && f->type == SF_PRESET;
            if (pass == 0) {
                if (is_preset && !skip_preset && scn_field_set(s, f, m, path, err)) return EXIT_BADINPUT;
                continue;
            }
            if (is_preset || (f && f->type == SF_SWEEP)) continue; /* done in pass 0 / by sweep.c */
            if (f) {
                if (scn_field_set(s, f, m, path, err)) return EXIT_BADINPUT;
            } else if (plain && scn_path_is_section(path)) {
                if (!cJSON_IsObject(m)) {
                    char val[128];
                    json_shown(m, val, sizeof val);
                    return moe_error_input(err, s->file, path, val, "an object (the \"%s\" section)", path);
                }
                if (scn_apply_object(s, path, m, 0, err)) return EXIT_BADINPUT;
            } else {
                /* the label is truncated in the message; a 10,000-character key is still named */
                char shown[160];
                json_truncate_into(key, shown, sizeof shown);
                snprintf(path, sizeof path, "%.80s%s%s", prefix, *prefix ? "." : "", shown);
                return unknown_field(s, prefix, key, path, err);
            }
        }
    }
    /* (a sweep that sets model.preset to null re-applies the file's model section with skip_preset) */
    if (strcmp(prefix, "model") == 0 && s->model.preset[0] == '\0' &&
        (skip_preset || cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "preset"))))
        return preset_custom_model_check(&s->model, obj, s->file, err);
    return 0;
}
