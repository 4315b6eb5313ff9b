/* step_scale.c — the breakdown entries of the step's scale mechanisms (step_scale.h). */
#include "sim/exec/step_scale.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_randist.h>

/* ---- E[max of n standard normals] ----------------------------------------------------------------- */
static double max_density_x(double x, void *params) {
    double n = *(const double *)params;
    /* n phi(x) Phi(x)^(n-1), the density of the maximum, times x; Phi^(n-1) through its logarithm */
    double log_cdf = log(gsl_cdf_ugaussian_P(x));
    return x * n * gsl_ran_ugaussian_pdf(x) * exp((n - 1) * log_cdf);
}

double expected_max_std_normal(int n) {
    if (n <= 1) return 0.0;
    double nn = n, result = 0, abserr = 0;
    gsl_function f = {.function = max_density_x, .params = &nn};
    gsl_integration_workspace *w = gsl_integration_workspace_alloc(200);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    gsl_integration_qagi(&f, 0, 1e-10, 200, w, &result, &abserr);
    gsl_set_error_handler(old);
    gsl_integration_workspace_free(w);
    return result;
}

/* ---- per stage: the optimizer and the compute op before it ------------------------------------------ */
typedef struct { int opt, before; } stage_tail;

static stage_tail tail_of(const program *p, int s) {
    stage_tail t = {-1, -1};
    const program_op *ops = p->stage_ops[s];
    for (int i = 0; i < p->stage_n_ops[s]; i++) {
        if (ops[i].kind != OP_COMPUTE) continue;
        if (ops[i].kernel == K_OPTIMIZER) { t.opt = i; break; }
        t.before = i;
    }
    return t;
}

static void replica_routing(const program *p, const step_exec_result *r, cJSON *bd) {
    cJSON *o = cJSON_AddObjectToObject(bd, "replica_routing");
    cJSON_AddStringToObject(o, "group_samples",
                            p->scn->routing.group_samples == GROUP_SAMPLES_SHARED ? "shared" : "independent");
    cJSON_AddNumberToObject(o, "sample_streams", p->n_sample_groups);
    if (!r->a2a_s || p->n_patterns == 0) return;
    int best_s = -1, best_d = 0;
    double best_spread = -1, best_a2a = 0, best_mean = 0;
    for (int s = 0; s < p->pp; s++) {
        double sum = 0, top = -1;
        int top_d = 0;
        for (int d = 0; d < p->dp; d++) {
            double a = r->a2a_s[program_rank(p, d, s, 0, 0)];
            sum += a;
            if (a > top) { top = a; top_d = d; }
        }
        double mean = sum / p->dp;
        if (top - mean > best_spread) { best_spread = top - mean; best_s = s; best_d = top_d; best_a2a = top; best_mean = mean; }
    }
    cJSON *g = cJSON_AddObjectToObject(o, "slowest_ep_group");
    cJSON_AddNumberToObject(g, "stage", best_s);
    cJSON_AddNumberToObject(g, "replica", best_d);
    cJSON_AddNumberToObject(g, "a2a_s", best_a2a);
    cJSON_AddNumberToObject(g, "mean_a2a_s", best_mean);
}

static void gpu_speed(const program *p, const step_exec_result *r, cJSON *bd) {
    double cv = p->scn->cluster.gpu.speed_cv;
    cJSON *o = cJSON_AddObjectToObject(bd, "gpu_speed");
    cJSON_AddNumberToObject(o, "cv", cv);
    cJSON_AddNumberToObject(o, "gpus", p->n_ranks);
    cJSON_AddNumberToObject(o, "fastest_factor", p->faults.speed_min);
    cJSON_AddNumberToObject(o, "slowest_factor", p->faults.speed_max);
    cJSON_AddNumberToObject(o, "expected_slowest_factor", exp(sqrt(log1p(cv * cv)) * expected_max_std_normal(p->n_ranks)));
    int folded = 0;
    if (r->sim_rank)
        for (int k = 0; k < p->n_ranks; k++)
            folded += r->sim_rank[k] != k && p->faults.speed_factor[k] != p->faults.speed_factor[r->sim_rank[k]];
    cJSON_AddNumberToObject(o, "folded_ranks", folded);
}

static void waits(const program *p, const step_exec_result *r, cJSON *bd) {
    if (!r->timelines) return;
    stage_tail *tails = moe_xmalloc((size_t)p->pp * sizeof *tails);
    for (int s = 0; s < p->pp; s++) tails[s] = tail_of(p, s);
    double *ready = moe_xcalloc((size_t)p->dp, sizeof(double));
    for (int k = 0; k < p->n_ranks; k++) {
        int d, s, e, t;
        program_coords(p, k, &d, &s, &e, &t);
        int sr = r->sim_rank[k];
        if (!r->timelines[sr] || tails[s].before < 0) continue;
        double end = step_exec_time(r, sr, tails[s].before)->end_s;
        if (end > ready[d]) ready[d] = end;
    }
    cJSON *w = cJSON_AddObjectToObject(bd, "replica_wait");
    double top = 0, sum = 0;
    int slowest = 0;
    for (int d = 0; d < p->dp; d++) {
        sum += ready[d];
        if (ready[d] > top) { top = ready[d]; slowest = d; }
    }
    cJSON_AddNumberToObject(w, "ready_s_max", top);
    cJSON_AddNumberToObject(w, "ready_s_mean", sum / p->dp);
    cJSON_AddNumberToObject(w, "slowest_replica", slowest);
    cJSON_AddNumberToObject(w, "simulated_replicas", r->n_simulated_replicas);
    free(ready);
    free(tails);
}

void step_scale_report(const program *p, const step_exec_result *r, cJSON *bd) {
    replica_routing(p, r, bd);
    gpu_speed(p, r, bd);
    waits(p, r, bd);
}
