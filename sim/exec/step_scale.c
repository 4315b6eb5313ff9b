/* step_scale.c — the breakdown entries of the step's scale mechanisms (step_scale.h). */
#include "sim/exec/step_scale.h"
#include "sim/base/alloc.h"
#include "sim/exec/ring_flows.h"
#include "sim/exec/step_exec.h"

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

/* The gradient collectives of stage s under the backward: reduce-scatters and all-reduces of a data-
 * parallel group issued in a micro-batch (the tail's have mb -1). */
static int bucket_collectives(const program *p, int s) {
    int n = 0;
    for (int i = 0; i < p->stage_n_ops[s]; i++) {
        const program_op *o = &p->stage_ops[s][i];
        n += (o->kind == OP_REDUCE_SCATTER || o->kind == OP_ALL_REDUCE) && o->stream == STREAM_DP && o->mb >= 0 &&
             (o->group == GROUP_DP_DENSE || o->group == GROUP_DP_EXPERT);
    }
    return n;
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
    stage_tail *tails = moe_xmalloc((size_t)p->pp * sizeof *tails);
    int buckets = 0;
    for (int s = 0; s < p->pp; s++) {
        tails[s] = tail_of(p, s);
        buckets += bucket_collectives(p, s);
    }
    cJSON *g = cJSON_AddObjectToObject(bd, "grad_reduce");
    const layout_cfg *L = &p->scn->layout;
    cJSON_AddBoolToObject(g, "overlap", L->overlap_grad_reduce && L->zero <= 1);
    cJSON_AddNumberToObject(g, "bucket_collectives", buckets);
    cJSON_AddNumberToObject(g, "first_stage_buckets", bucket_collectives(p, 0));
    if (!r->timelines) { free(tails); return; }
    double *ready = moe_xcalloc((size_t)p->dp, sizeof(double));
    double exposed_max = 0, exposed_sum = 0;
    int n_exposed = 0;
    for (int k = 0; k < p->n_ranks; k++) {
        int d, s, e, t;
        program_coords(p, k, &d, &s, &e, &t);
        int sr = r->sim_rank[k];
        if (!r->timelines[sr] || tails[s].before < 0) continue;
        double end = step_exec_time(r, sr, tails[s].before)->end_s;
        if (end > ready[d]) ready[d] = end;
        if (tails[s].opt < 0) continue;
        double start = step_exec_time(r, sr, tails[s].opt)->start_s;
        if (start < 0 || end < 0) continue;
        double w = start - end;
        exposed_sum += w;
        n_exposed++;
        if (w > exposed_max) exposed_max = w;
    }
    cJSON_AddNumberToObject(g, "exposed_s_max", exposed_max);
    cJSON_AddNumberToObject(g, "exposed_s_mean", n_exposed ? exposed_sum / n_exposed : 0);
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

static void dp_collectives(const program *p, const comm_model *comm, const cluster_cfg *fabric, cJSON *bd) {
    cJSON *arr = cJSON_AddArrayToObject(bd, "dp_collectives");
    const group_kind kinds[2] = {GROUP_DP_DENSE, GROUP_DP_EXPERT};
    for (int k = 0; k < 2; k++) {
        const program_op *big = NULL;
        int stage = 0;
        for (int s = 0; s < p->pp; s++)
            for (int i = 0; i < p->stage_n_ops[s]; i++) {
                const program_op *o = &p->stage_ops[s][i];
                if ((o->kind == OP_REDUCE_SCATTER || o->kind == OP_ALL_GATHER || o->kind == OP_ALL_REDUCE) &&
                    o->group == (int)kinds[k] && (!big || o->bytes > big->bytes)) { big = o; stage = s; }
            }
        if (!big) continue;
        int g = program_group_of(p, program_rank(p, 0, stage, 0, 0), kinds[k]), n = p->groups[g].n;
        if (n < 2) continue;
        int *gpus = moe_xmalloc((size_t)n * sizeof(int));
        for (int m = 0; m < n; m++) gpus[m] = program_gpu_of_rank(p, p->groups[g].ranks[m]);
        coll_kind ck = big->kind == OP_REDUCE_SCATTER ? COLL_REDUCE_SCATTER
                     : big->kind == OP_ALL_GATHER     ? COLL_ALL_GATHER
                                                      : COLL_ALL_REDUCE;
        ring_plan rp = ring_plan_make(fabric, ck, gpus, n, big->bytes);
        double t = comm->collective_s(comm->ctx, ck, gpus, n, big->bytes, step_coll_concurrent(p, n));
        free(gpus);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "group", group_kind_name(kinds[k]));
        cJSON_AddStringToObject(o, "op", op_kind_name((op_kind)big->kind));
        cJSON_AddNumberToObject(o, "ranks", n);
        cJSON_AddNumberToObject(o, "nodes", rp.nodes);
        cJSON_AddNumberToObject(o, "bytes", big->bytes);
        cJSON_AddStringToObject(o, "algorithm", rp.tree ? "tree" : "ring");
        cJSON_AddNumberToObject(o, "time_s", t);
        cJSON_AddNumberToObject(o, "nccl_latency_s", rp.tree ? rp.tree_lat_s : rp.ring_lat_s);
        /* nccl-tests' bus bandwidth: the bytes x (n-1)/n a member moves, x 2 for an all-reduce, per second */
        double moved = (ck == COLL_ALL_REDUCE ? 2.0 : 1.0) * big->bytes * (n - 1.0) / n;
        cJSON_AddNumberToObject(o, "busbw_GBps", t > 0 ? moved / t / 1e9 : 0);
        cJSON_AddItemToArray(arr, o);
    }
}

void step_scale_report(const program *p, const step_exec_result *r, const comm_model *comm, const cluster_cfg *fabric,
                       cJSON *bd) {
    replica_routing(p, r, bd);
    gpu_speed(p, r, bd);
    waits(p, r, bd);
    if (comm && fabric) dp_collectives(p, comm, fabric, bd);
}
