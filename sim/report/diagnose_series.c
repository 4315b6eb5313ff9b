/* diagnose_series.c — see diagnose_series.h. */
#include "sim/report/diagnose_series.h"

#include <string.h>

#include <cjson/cJSON.h>

int diag_series(const results_step_series *s, long point_id, double hot_share, diag_series_report *out) {
    memset(out, 0, sizeof *out);
    out->point_id = point_id;
    out->hot_share = hot_share;
    out->onset_step = out->onset_expert = out->onset_ep_rank = -1;
    out->peak_step = out->peak_expert = out->peak_ep_rank = -1;
    out->first_timeout_step = -1;
    if (s->n < 1) return -1;
    out->n_steps = s->n;
    for (int t = 0; t < s->n; t++) {
        double share = s->max_expert_share[t];
        if (out->onset_step < 0 && share > hot_share) {
            out->onset_step = t;
            out->onset_expert = s->max_expert[t];
            out->onset_ep_rank = s->busiest_ep_rank[t];
            out->onset_share = share;
        }
        if (out->peak_step < 0 || share > out->peak_share) {
            out->peak_step = t;
            out->peak_share = share;
            out->peak_expert = s->max_expert[t];
            out->peak_ep_rank = s->busiest_ep_rank[t];
            out->peak_rank_load_max_mean = s->rank_load_max_mean[t];
            out->peak_step_time_s = s->step_time_s[t];
            out->peak_timed_out = s->timed_out[t];
        }
        if (s->timed_out[t]) {
            if (out->first_timeout_step < 0) out->first_timeout_step = t;
            out->timed_out_steps++;
        }
    }
    /* the distribution as the simulation reported it (step.steps, sim/exec/step_series.h) */
    out->p50_s = s->p50_s; out->p95_s = s->p95_s; out->p99_s = s->p99_s; out->max_s = s->max_s;
    out->slow_above_s = s->slow_above_s; out->slow_steps = s->slow_steps;
    out->slow_run_steps = s->slow_run_steps; out->slow_run_first = s->slow_run_first;
    return 0;
}

int diag_series_problem(const diag_series_report *r) {
    return r->onset_step >= 0 || r->first_timeout_step >= 0;
}

void diag_series_print(FILE *f, const diag_series_report *r) {
    fprintf(f, "point %ld: %d steps; step time p50 %.4g s, p95 %.4g s, p99 %.4g s, max %.4g s\n", r->point_id,
            r->n_steps, r->p50_s, r->p95_s, r->p99_s, r->max_s);
    if (r->onset_step >= 0)
        fprintf(f, "  hot expert: expert %d passed %.0f%% of the tokens at step %d (%.1f%%; busiest EP rank %d)\n",
                r->onset_expert, r->hot_share * 100, r->onset_step, r->onset_share * 100, r->onset_ep_rank);
    else
        fprintf(f, "  no expert passed %.0f%% of the tokens (the most: %.1f%%, expert %d at step %d)\n", r->hot_share * 100,
                r->peak_share * 100, r->peak_expert, r->peak_step);
    if (r->onset_step >= 0)
        fprintf(f, "  peak: step %d, expert %d with %.1f%% of the tokens, busiest EP rank %d at %.2f x the mean; "
                   "that step %s %.4g s\n",
                r->peak_step, r->peak_expert, r->peak_share * 100, r->peak_ep_rank, r->peak_rank_load_max_mean,
                r->peak_timed_out ? "timed out, the watchdog firing after" : "took", r->peak_step_time_s);
    if (r->slow_steps > 0)
        fprintf(f, "  slow steps (> %.4g s, step.steps.slow_above_s): %d; the longest run %d step%s from step %d\n",
                r->slow_above_s, r->slow_steps, r->slow_run_steps,
                r->slow_run_steps == 1 ? "" : "s", r->slow_run_first);
    if (r->first_timeout_step >= 0)
        fprintf(f, "  timed out: first at step %d (%d step%s in all): the NCCL watchdog (faults.collective_timeout_s) "
                   "failed the job there; the run restarts from its last checkpoint\n",
                r->first_timeout_step, r->timed_out_steps, r->timed_out_steps == 1 ? "" : "s");
    if (r->onset_step >= 0)
        fprintf(f, "  advice: balance the router before the onset (routing.drift.bias_update_speed), replicate the hot "
                   "expert (routing.redundant_experts), or cap its load (routing.capacity_factor with drop)\n");
}

cJSON *diag_series_json(const diag_series_report *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "point", (double)r->point_id);
    cJSON_AddNumberToObject(o, "steps", r->n_steps);
    cJSON_AddNumberToObject(o, "hot_share_threshold", r->hot_share);
    cJSON *on = r->onset_step >= 0 ? cJSON_AddObjectToObject(o, "hot_expert_onset") : (cJSON_AddNullToObject(o, "hot_expert_onset"), NULL);
    if (on) {
        cJSON_AddNumberToObject(on, "step", r->onset_step);
        cJSON_AddNumberToObject(on, "expert", r->onset_expert);
        cJSON_AddNumberToObject(on, "busiest_ep_rank", r->onset_ep_rank);
        cJSON_AddNumberToObject(on, "share", r->onset_share);
    }
    cJSON *pk = cJSON_AddObjectToObject(o, "peak");
    cJSON_AddNumberToObject(pk, "step", r->peak_step);
    cJSON_AddNumberToObject(pk, "expert", r->peak_expert);
    cJSON_AddNumberToObject(pk, "busiest_ep_rank", r->peak_ep_rank);
    cJSON_AddNumberToObject(pk, "share", r->peak_share);
    cJSON_AddNumberToObject(pk, "rank_load_max_mean", r->peak_rank_load_max_mean);
    cJSON_AddNumberToObject(pk, "step_time_s", r->peak_step_time_s);
    cJSON_AddBoolToObject(pk, "timed_out", r->peak_timed_out);
    if (r->first_timeout_step >= 0) cJSON_AddNumberToObject(o, "first_timed_out_step", r->first_timeout_step);
    else cJSON_AddNullToObject(o, "first_timed_out_step");
    cJSON_AddNumberToObject(o, "timed_out_steps", r->timed_out_steps);
    cJSON_AddNumberToObject(o, "step_time_s_p50", r->p50_s);
    cJSON_AddNumberToObject(o, "step_time_s_p95", r->p95_s);
    cJSON_AddNumberToObject(o, "step_time_s_p99", r->p99_s);
    cJSON_AddNumberToObject(o, "step_time_s_max", r->max_s);
    cJSON_AddNumberToObject(o, "slow_above_s", r->slow_above_s);
    cJSON_AddNumberToObject(o, "slow_steps", r->slow_steps);
    cJSON_AddNumberToObject(o, "slow_run_steps", r->slow_run_steps);
    cJSON_AddNumberToObject(o, "slow_run_first_step", r->slow_run_first);
    return o;
}
