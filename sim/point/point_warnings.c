/* point_warnings.c — a planner's warnings per level of one point (point_warnings.h). */
#include "sim/point/point_warnings.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "sim/plan/checkpoint_write.h"
#include "sim/plan/reliability.h"
#include "sim/report/step_outcome.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario_fields.h"

__attribute__((format(printf, 2, 3))) static void add(cJSON *warnings, const char *fmt, ...) {
    char buf[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(warnings, cJSON_CreateString(buf));
}

void point_memory_capacity_words(double usable_GiB, double mem_GiB, char *buf, size_t cap) {
    snprintf(buf, cap, "%.4g GiB usable (%g GiB less the %.3g%% reserve)", usable_GiB, mem_GiB,
             mem_GiB > 0 ? 100.0 * (1.0 - usable_GiB / mem_GiB) : 0.0);
}

static void memory_warning(const scenario *s, const plan_result *plan, int simulated, cJSON *w) {
    if (plan->fits_memory) return;
    char capacity[96];
    point_memory_capacity_words(plan->memory_GiB.usable, s->cluster.gpu.mem_GiB, capacity, sizeof capacity);
    add(w, "does not fit in memory%s: the most loaded GPU needs %.4g GiB (%s the largest part) of %s",
        simulated ? " but was simulated anyway" : "", plan->memory_GiB.total,
        plan->overflow[0] ? plan->overflow : "activations", capacity);
}

/* The interval in use (seconds) against the 5-minute floor and the storage path. */
static void checkpoint_warnings(const scenario *s, double interval_s, double write_s, double state_bytes,
                                const char *which, cJSON *w) {
    if (s->reliability.checkpoint.policy == CKPT_NONE || !isfinite(interval_s) || !(interval_s > 0)) return;
    if (interval_s < WARN_CHECKPOINT_MIN_INTERVAL_MIN * 60.0)
        add(w, "%s checkpoint interval is %.1f min, under %.0f minutes: check the failure rate "
               "(reliability.gpu_mtbf_h) and the write time (%.1f s)",
            which, interval_s / 60.0, WARN_CHECKPOINT_MIN_INTERVAL_MIN, write_s);
    if (write_s > interval_s && state_bytes > 0)
        add(w, "checkpoints every %.1f min need %.0f GB/s of writes, above the %.0f GB/s the storage path "
               "sustains (one write takes %.1f min): writes would queue",
            interval_s / 60.0, state_bytes / interval_s / 1e9, state_bytes / write_s / 1e9, write_s / 60.0);
}

/* A job over several pods (cluster.pod_nodes): where it was placed and what crosses the core. */
static void pods_warning(const scenario *s, cJSON *w) {
    const cluster_cfg *c = &s->cluster;
    if (scn_pods(c) < 2) return;
    double over = c->pod_oversubscription > 1 ? c->pod_oversubscription : 1;
    add(w, "the job's %d nodes fill %d pods of %d nodes in node order (contiguous placement from node 0): the "
           "traffic of the groups and replicas that span two pods crosses the core, %g:1 oversubscribed "
           "(cluster.pod_oversubscription)",
        c->nodes, scn_pods(c), scn_pod_nodes(c), over);
}

void point_warn_plan(const scenario *s, const plan_result *plan, cJSON *w) {
    memory_warning(s, plan, 0, w);
    pods_warning(s, w);
    double mtbf_s = plan->mtbf_cluster_h > 0 ? plan->mtbf_cluster_h * 3600.0 : INFINITY;
    double tau = checkpoint_policy_interval_s(s, plan->checkpoint_write_s, mtbf_s);
    checkpoint_warnings(s, tau, plan->checkpoint_write_s, plan->checkpoint_state_bytes, "the policy's", w);
}

/* A step the watchdog failed: what happened, where, and how to triage it. */
static void failed_step_warning(const scenario *s, const step_result *st, cJSON *w) {
    const cJSON *bd = st->breakdown;
    char what[400];
    step_outcome_text(cJSON_GetObjectItemCaseSensitive(bd, "collective_timeout"), cJSON_GetObjectItemCaseSensitive(bd, "hang"),
                      s->cluster.gpus_per_node, what, sizeof what);
    char steps[96] = "";
    if (st->n_steps > 1)
        snprintf(steps, sizeof steps, "step 0 of %d (%d of them timed out): ", st->n_steps, st->steps_timed_out);
    add(w, "%s%s. The step has no step time, MFU or tokens/s (step_time_s is when the watchdog fired); %s", steps,
        what[0] ? what : "the step timed out",
        s->output.trace ? "`simdiag check DIR` on the output folder triages it from the step's trace"
                        : "set output.trace: true and run `simdiag check DIR` on the output folder to triage it");
}

/* Where a lossy link sits: a GPU's NIC by its node and GPU, a leaf's uplink as the switch port it is. */
static void lossy_link_where(const cJSON *o, char *buf, size_t cap) {
#define NUM(key) ((int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key)))
    if (cJSON_GetObjectItemCaseSensitive(o, "rail"))
        snprintf(buf, cap, "the spine-facing uplink of rail %d leaf %d, nodes %d-%d", NUM("rail"), NUM("leaf"),
                 NUM("first_node"), NUM("last_node"));
    else snprintf(buf, cap, "node %d GPU %d", NUM("node"), NUM("local_gpu"));
#undef NUM
}

/* Links that drop packets (step.breakdown.lossy_links): name each and what its retransmissions cost. */
static void lossy_links_warning(const step_result *st, cJSON *w) {
    const cJSON *ll = st->breakdown ? cJSON_GetObjectItemCaseSensitive(st->breakdown, "lossy_links") : NULL;
    if (!cJSON_IsArray(ll) || cJSON_GetArraySize(ll) == 0) return;
    char buf[600] = "";
    size_t n = 0;
    int k = 0, shown = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, ll) {
        if (++k > 4) continue;   /* the first few: the warning is a line, the breakdown has them all */
        const char *retx = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "retransmission"));
        char where[96];
        lossy_link_where(o, where, sizeof where);
        int r = snprintf(buf + n, sizeof buf - n, "%s%s (%s) loses %.3g of its packets: %s keeps %.4g of "
                         "its bandwidth (window %.0f packets)", shown ? "; " : "",
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "link")), where,
                         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "loss_rate")), retx ? retx : "?",
                         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "goodput_frac")),
                         cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "window_pkts")));
        if (r < 0 || (size_t)r >= sizeof buf - n) break;
        n += (size_t)r;
        shown++;
    }
    add(w, "lossy link%s: %s%s; every collective through %s runs at that rate (step.breakdown.lossy_links)",
        k > 1 ? "s" : "", buf, k > shown ? " and more" : "", k > 1 ? "them" : "it");
}

void point_warn_step(const scenario *s, const plan_result *plan, const step_result *st, cJSON *w) {
    memory_warning(s, plan, 1, w);
    if (st->timed_out) failed_step_warning(s, st, w);
    lossy_links_warning(st, w);
    if (st->n_steps > 1 && st->steps_timed_out > 0 && !st->timed_out)
        add(w, "%d of the %d simulated steps timed out (faults.collective_timeout_s = %g s): the mean step time "
               "counts each until its watchdog fired, and tokens/s none of its tokens",
            st->steps_timed_out, st->n_steps, s->faults.collective_timeout_s);
    if (!st->timed_out && st->step_time_s > 0 && fabs(st->step_time_s - plan->step_time_s) > WARN_PLAN_STEP_DISAGREE * st->step_time_s)
        add(w, "the plan's step (%.3f s) and the simulated step (%.3f s) differ by %.1f%%, more than %.0f%%: "
               "an assumption of the closed form (balanced load, no contention, no faults) does not hold here",
            plan->step_time_s, st->step_time_s, 100.0 * fabs(st->step_time_s - plan->step_time_s) / st->step_time_s,
            100.0 * WARN_PLAN_STEP_DISAGREE);
    if (st->dropped_token_fraction > WARN_DROPPED_PAIRS)
        add(w, "%.1f%% of the token-expert pairs were dropped (over %.0f%%): MFU and tokens/s/GPU count only the "
               "processed ones; raise routing.capacity_factor or balance the load",
            100.0 * st->dropped_token_fraction, 100.0 * WARN_DROPPED_PAIRS);
}

void point_warn_run(const scenario *s, const plan_result *plan, const trainrun_result *tr, cJSON *w) {
    model_recipe r;
    if (!scn_path_given(s, "run.tokens") && preset_model_recipe(s->model.preset, &r) == 0 && !(r.training_tokens > 0))
        add(w, "run.tokens is not set and %s%s%s publishes no training-token count: the run level assumed %.3g tokens "
            "(the reference design's DeepSeek-V3 run); set run.tokens", *s->model.preset ? "the model preset \"" : "",
            *s->model.preset ? s->model.preset : "a model without a preset", *s->model.preset ? "\"" : "", s->run.tokens);
    memory_warning(s, plan, 1, w);
    checkpoint_warnings(s, tr->checkpoint_interval_min * 60.0, tr->checkpoint_write_s, plan->checkpoint_state_bytes,
                        "the run's", w);
    if (isfinite(tr->best_interval_min) && tr->best_interval_min < WARN_CHECKPOINT_MIN_INTERVAL_MIN)
        add(w, "the best checkpoint interval found is %.1f min, under %.0f minutes",
            tr->best_interval_min, WARN_CHECKPOINT_MIN_INTERVAL_MIN);
}
