/* diagnose.c — the analyses of the diagnoser (diagnose.h): stragglers, expert load, the check, and
 * predicted-vs-measured per op class. Pure functions of a parsed trace; printing is diagnose_report.c.
 *
 * Why busy (compute) time and not step time finds the slow rank. In a synchronous job every rank
 * meets every other rank at collectives (all-to-all inside each MoE layer, the gradient
 * reduce-scatter at the end), and a collective completes only when its last member arrives. So a
 * rank that computes 40% slower holds everyone back and *every* rank's step ends at (nearly) the
 * same time: per-rank step times are equal and the straggler is invisible in them. What differs is
 * how long each rank was busy — the sum of its compute kernels — because the fast ranks spend the
 * difference waiting inside collectives, and waiting is not compute. (Collective durations are the
 * wrong signal too: measured on a live job, a collective's duration includes waiting for the last
 * member, so the *fast* ranks show the long collectives.) Step time stays a secondary signal: it
 * catches what happens outside the synchronous core (a slow optimizer tail, a late last stage).
 */
#include "sim/report/diagnose.h"
#include "sim/base/alloc.h"

#include "sim/plan/rank_numbering.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_statistics_double.h>

void diag_rules_default(diag_rules *r) {
    r->min_excess = DIAG_MIN_EXCESS_DEFAULT;
    r->top_experts = 3;
}

/* The trace's rank numbering (sim/plan/rank_numbering.h). Its GPUs come from otherData.rank_gpu, not
 * from a placement: a live trace may come from any mapping of ranks to GPUs. */
static rank_grid trace_ranks(const diag_trace *t) {
    return (rank_grid){.dp = t->dp, .pp = t->pp, .ep = t->ep, .tp = t->tp, .placement = PLACE_EP_INNER};
}

void diag_locate(const diag_trace *t, int rank, diag_place *out) {
    rank_grid g = trace_ranks(t);
    rank_coords c = rank_coords_of(&g, rank);
    out->rank = rank;
    out->tp_index = c.tp;
    out->ep_index = c.ep;
    out->stage = c.stage;
    out->replica = c.replica;
    out->gpu = t->rank_gpu ? t->rank_gpu[rank] : rank;
    out->node = out->gpu / t->gpus_per_node;
    out->local_gpu = out->gpu % t->gpus_per_node;
}

/* ---- stragglers ------------------------------------------------------------------------------ */

static int cmp_straggler(const void *a, const void *b) {
    const diag_straggler *x = a, *y = b;
    if (x->pct_over_mean != y->pct_over_mean) return x->pct_over_mean < y->pct_over_mean ? 1 : -1;   /* worst first */
    return x->where.rank - y->where.rank;
}

/* The seed's rule within one stage's peers, population sd as the seed (it divides by n). Note that
 * one outlier among n equal peers sits at sqrt(n - 1) sd above the mean, so the 2-sigma half can
 * only fire with n >= 6 peers; below that the 1.25 x mean half does the work. */
static void stage_stats(const double *x, int n, double min_excess, diag_stage_stats *st) {
    st->n = n;
    st->mean_s = gsl_stats_mean(x, 1, (size_t)n);
    st->sd_s = gsl_stats_sd_with_fixed_mean(x, 1, (size_t)n, st->mean_s);
    gsl_stats_minmax(&st->min_s, &st->max_s, x, 1, (size_t)n);
    double sigma = fmax(st->mean_s + DIAG_STRAGGLER_SIGMAS * st->sd_s, (1.0 + min_excess) * st->mean_s);
    st->threshold_s = fmin(sigma, DIAG_STRAGGLER_RATIO * st->mean_s);
}

int diag_stragglers(const diag_trace *t, const double *times, const char *signal, const diag_rules *rules,
                    diag_straggler_report *out) {
    memset(out, 0, sizeof *out);
    if (!times) return 0;
    out->signal = signal;
    int per = t->ranks / t->pp;
    double *x = moe_xmalloc((size_t)per * sizeof *x);
    int *who = moe_xmalloc((size_t)per * sizeof *who);
    out->stages = moe_xcalloc((size_t)t->pp, sizeof *out->stages);
    out->stragglers = moe_xcalloc((size_t)t->ranks, sizeof *out->stragglers);
    if (!x || !who || !out->stages || !out->stragglers) {
        free(x);
        free(who);
        diag_straggler_report_free(out);
        return -1;
    }
    out->n_stages = t->pp;
    for (int s = 0; s < t->pp; s++) {
        int n = 0;
        for (int r = 0; r < t->ranks; r++) {
            diag_place p;
            diag_locate(t, r, &p);
            if (p.stage == s) { who[n] = r; x[n++] = times[r]; }
        }
        diag_stage_stats *st = &out->stages[s];
        st->stage = s;
        stage_stats(x, n, rules->min_excess, st);
        if (!(st->mean_s > 0.0)) continue;
        for (int i = 0; i < n; i++) {
            int by_sigma = x[i] > st->mean_s + DIAG_STRAGGLER_SIGMAS * st->sd_s &&
                           x[i] >= (1.0 + rules->min_excess) * st->mean_s;
            int by_ratio = x[i] > DIAG_STRAGGLER_RATIO * st->mean_s;
            if (!by_sigma && !by_ratio) continue;
            diag_straggler *g = &out->stragglers[out->n_stragglers++];
            diag_locate(t, who[i], &g->where);
            g->time_s = x[i];
            g->stage_mean_s = st->mean_s;
            g->pct_over_mean = (x[i] - st->mean_s) / st->mean_s * 100.0;
            g->by_sigma = by_sigma;
            g->by_ratio = by_ratio;
        }
    }
    free(x);
    free(who);
    qsort(out->stragglers, (size_t)out->n_stragglers, sizeof *out->stragglers, cmp_straggler);
    return 0;
}

void diag_straggler_report_free(diag_straggler_report *r) {
    free(r->stages);
    free(r->stragglers);
    memset(r, 0, sizeof *r);
}

/* ---- expert load ----------------------------------------------------------------------------- */

typedef struct { double v; int i; } ranked;

static int cmp_ranked(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? 1 : -1;   /* descending; ties: lower index first */
    return x->i - y->i;
}

int diag_expert_load(const diag_trace *t, const diag_rules *rules, diag_expert_report *out) {
    memset(out, 0, sizeof *out);
    int E = t->n_experts;
    if (E <= 0 || !t->expert_tokens) return 0;
    /* The seed counts router hits: demand. Received counts are the same thing unless a dropping
     * capacity limit capped the hot experts, so prefer the routed counts when the trace has them. */
    const double *counts = t->expert_routed ? t->expert_routed : t->expert_tokens;
    out->signal = t->expert_routed ? "expert_tokens_routed" : "expert_tokens";
    if (expert_load_analyze(counts, (size_t)E, &out->experts)) return -1;
    out->present = 1;
    out->dropped_fraction = NAN;
    if (t->expert_routed && out->experts.total > 0) {
        double received = 0;
        for (int x = 0; x < E; x++) received += t->expert_tokens[x];
        out->dropped_fraction = 1.0 - received / out->experts.total;
    }

    /* Experts sit in contiguous blocks of E/ep on the EP ranks; the load an EP rank receives is
     * what its GEMMs (and its all-to-all receive) are sized by. */
    int per = E % t->ep == 0 ? E / t->ep : 0;
    if (per > 0 && t->ep > 1) {
        double *ep_load = moe_xcalloc((size_t)t->ep, sizeof *ep_load);
        if (!ep_load) return -1;
        for (int x = 0; x < E; x++) ep_load[x / per] += counts[x];
        int rc = expert_load_analyze(ep_load, (size_t)t->ep, &out->ep_ranks);
        free(ep_load);
        if (rc) return -1;
        out->ep_ranks_valid = 1;
    }

    ranked *order = moe_xmalloc((size_t)E * sizeof *order);
    int k = rules->top_experts < E ? rules->top_experts : E;
    out->hot = moe_xcalloc((size_t)(k > 0 ? k : 1), sizeof *out->hot);
    if (!order || !out->hot) {
        free(order);
        diag_expert_report_free(out);
        return -1;
    }
    for (int x = 0; x < E; x++) order[x] = (ranked){counts[x], x};
    qsort(order, (size_t)E, sizeof *order, cmp_ranked);
    for (int j = 0; j < k; j++) {
        double x_mean = out->experts.mean > 0 ? order[j].v / out->experts.mean : 0.0;
        /* the hottest expert always; the next ones only when they are hot themselves */
        if (j > 0 && !(x_mean > DIAG_STRAGGLER_RATIO)) break;
        diag_hot_expert *h = &out->hot[j];
        h->expert = order[j].i;
        h->tokens = order[j].v;
        h->share = out->experts.total > 0 ? h->tokens / out->experts.total : 0.0;
        h->x_mean = x_mean;
        h->ep_index = per > 0 ? h->expert / per : -1;
        out->n_hot++;
        if (h->ep_index < 0) continue;
        h->holders = moe_xcalloc((size_t)(t->ranks / t->ep), sizeof *h->holders);
        if (!h->holders) {
            free(order);
            diag_expert_report_free(out);
            return -1;
        }
        for (int r = 0; r < t->ranks; r++) {
            diag_place p;
            diag_locate(t, r, &p);
            if (p.ep_index == h->ep_index) h->holders[h->n_holders++] = p;
        }
    }
    free(order);
    return 0;
}

void diag_expert_report_free(diag_expert_report *r) {
    for (int j = 0; j < r->n_hot; j++) free(r->hot[j].holders);
    free(r->hot);
    memset(r, 0, sizeof *r);
}

/* ---- the check ------------------------------------------------------------------------------- */

/* A straggler on the EP index of a hot expert of a severe imbalance is most likely slow because of
 * routing (it computes the hot expert's tokens), not because of its hardware. */
static void mark_hot_holders(diag_straggler_report *s, const diag_expert_report *load) {
    if (!load->present || !load->experts.severe) return;
    for (int i = 0; i < s->n_stragglers; i++)
        for (int j = 0; j < load->n_hot; j++)
            if (load->hot[j].ep_index >= 0 && load->hot[j].x_mean > DIAG_STRAGGLER_RATIO &&
                s->stragglers[i].where.ep_index == load->hot[j].ep_index)
                s->stragglers[i].holds_hot_expert = 1;
}

/* ---- slow links: EP groups whose collectives are slower than their stage's other groups ------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_slow_group(const void *a, const void *b) {
    const diag_slow_group *x = a, *y = b;
    double rx = x->comm_s / (x->others_s > 0 ? x->others_s : 1e-12);
    double ry = y->comm_s / (y->others_s > 0 ? y->others_s : 1e-12);
    if (rx != ry) return rx > ry ? -1 : 1;
    return x->first_rank - y->first_rank;
}

int diag_slow_links(const diag_trace *t, diag_link_report *out) {
    memset(out, 0, sizeof *out);
    const int per_stage = t->dp * t->tp;   /* EP groups per pipeline stage */
    if (!t->rank_a2a_s || per_stage < 2 || t->ep < 1) return 0;
    out->present = 1;
    double *mean = moe_xmalloc(sizeof(double) * (size_t)per_stage), *others = moe_xmalloc(sizeof(double) * (size_t)per_stage);
    out->groups = moe_xmalloc(sizeof *out->groups * (size_t)(per_stage * t->pp));
    if (!mean || !others || !out->groups) {
        free(mean);
        free(others);
        return -1;
    }
    rank_grid rg = trace_ranks(t);
    for (int s = 0; s < t->pp; s++) {
        for (int g = 0; g < per_stage; g++) {   /* g = d * tp + tidx */
            int d = g / t->tp, tidx = g % t->tp;
            double sum = 0;
            for (int e = 0; e < t->ep; e++) sum += t->rank_a2a_s[rank_of(&rg, (rank_coords){d, s, e, tidx})];
            mean[g] = sum / t->ep;
        }
        for (int g = 0; g < per_stage; g++) {
            int n = 0;
            for (int o = 0; o < per_stage; o++)
                if (o != g) others[n++] = mean[o];
            qsort(others, (size_t)n, sizeof(double), cmp_double);
            double med = gsl_stats_median_from_sorted_data(others, 1, (size_t)n);
            /* > 1.25 x the median of the others, and by more than a microsecond (exact ties when the
             * replicas are identical: the simulator mirrors healthy replicas) */
            if (!(mean[g] > DIAG_SLOW_GROUP_RATIO * med && mean[g] - med > 1e-6)) continue;
            int d = g / t->tp, tidx = g % t->tp;
            diag_slow_group *x = &out->groups[out->n++];
            *x = (diag_slow_group){.replica = d, .stage = s, .tp_index = tidx,
                                   .first_rank = rank_of(&rg, (rank_coords){d, s, 0, tidx}),
                                   .last_rank = rank_of(&rg, (rank_coords){d, s, t->ep - 1, tidx}),
                                   .n_ranks = t->ep, .comm_s = mean[g], .others_s = med,
                                   .node_lo = INT32_MAX, .node_hi = -1};
            for (int e = 0; e < t->ep; e++) {
                int node = t->rank_gpu[rank_of(&rg, (rank_coords){d, s, e, tidx})] / t->gpus_per_node;
                if (node < x->node_lo) x->node_lo = node;
                if (node > x->node_hi) x->node_hi = node;
            }
        }
    }
    qsort(out->groups, (size_t)out->n, sizeof *out->groups, cmp_slow_group);
    free(mean);
    free(others);
    return 0;
}

void diag_link_report_free(diag_link_report *r) {
    free(r->groups);
    memset(r, 0, sizeof *r);
}

int diag_check(const diag_trace *t, const diag_rules *rules, diag_report *out) {
    memset(out, 0, sizeof *out);
    out->hang = t->hang != NULL;
    /* A hung step has no step time and its per-rank times are cut off at the hang: comparing them
     * says who stopped first, which the hang record says exactly. Stragglers are skipped. */
    if (!out->hang && (diag_stragglers(t, t->rank_compute_s, "rank_compute_s", rules, &out->compute) ||
                       diag_stragglers(t, t->rank_step_s, "rank_step_s", rules, &out->step))) {
        diag_report_free(out);
        return -1;
    }
    if (diag_expert_load(t, rules, &out->load)) {
        diag_report_free(out);
        return -1;
    }
    mark_hot_holders(&out->compute, &out->load);
    mark_hot_holders(&out->step, &out->load);
    /* a hot expert also makes its EP group's collectives wait: only blame links on balanced load */
    if (!out->hang && !(out->load.present && out->load.experts.severe) && diag_slow_links(t, &out->links)) {
        diag_report_free(out);
        return -1;
    }
    /* ... and a group that holds a compute straggler waits for that GPU, not for a link */
    int kept = 0;
    for (int i = 0; i < out->links.n; i++) {
        const diag_slow_group *g = &out->links.groups[i];
        int has_straggler = 0;
        for (int j = 0; j < out->compute.n_stragglers; j++) {
            const diag_place *w = &out->compute.stragglers[j].where;
            has_straggler |= w->replica == g->replica && w->stage == g->stage && w->tp_index == g->tp_index;
        }
        if (!has_straggler) out->links.groups[kept++] = *g;
    }
    out->links.n = kept;
    out->timeout = t->timeout != NULL;
    out->pfc_spread = t->pfc && t->pfc->max_victim_slowdown >= DIAG_PFC_VICTIM_SLOWDOWN;
    out->problems = out->compute.n_stragglers + out->hang + (out->load.present && out->load.experts.severe) +
                    out->links.n + out->timeout + out->pfc_spread;
    /* a step-time straggler that is not already a compute straggler is a separate finding */
    for (int i = 0; i < out->step.n_stragglers; i++) {
        int dup = 0;
        for (int j = 0; j < out->compute.n_stragglers; j++)
            dup |= out->compute.stragglers[j].where.rank == out->step.stragglers[i].where.rank;
        out->problems += !dup;
    }
    return 0;
}

void diag_report_free(diag_report *r) {
    diag_link_report_free(&r->links);
    diag_straggler_report_free(&r->compute);
    diag_straggler_report_free(&r->step);
    diag_expert_report_free(&r->load);
    memset(r, 0, sizeof *r);
}

/* ---- predicted vs measured ------------------------------------------------------------------- */

static void side(const diag_op_class *c, long *count, double *mean_us) {
    *count = c ? c->count : 0;
    *mean_us = c && c->count > 0 ? c->total_us / (double)c->count : NAN;
}

static double error_pct(double predicted, double measured) {
    return isfinite(predicted) && isfinite(measured) && measured > 0 ? (predicted - measured) / measured * 100.0 : NAN;
}

int diag_compare(const diag_trace *pred, const diag_trace *meas, diag_compare_report *out) {
    memset(out, 0, sizeof *out);
    out->rows = moe_xcalloc((size_t)(pred->n_classes + meas->n_classes + 1), sizeof *out->rows);
    if (!out->rows) return -1;
    out->max_abs_error_pct = NAN;
    /* both class lists are sorted by name: merge them */
    int i = 0, j = 0;
    while (i < pred->n_classes || j < meas->n_classes) {
        const diag_op_class *p = i < pred->n_classes ? &pred->classes[i] : NULL;
        const diag_op_class *m = j < meas->n_classes ? &meas->classes[j] : NULL;
        int c = !p ? 1 : !m ? -1 : strcmp(p->name, m->name);
        if (c > 0) p = NULL;
        if (c < 0) m = NULL;
        diag_compare_row *row = &out->rows[out->n_rows++];
        snprintf(row->name, sizeof row->name, "%s", p ? p->name : m->name);
        side(p, &row->pred_count, &row->pred_mean_us);
        side(m, &row->meas_count, &row->meas_mean_us);
        row->error_pct = error_pct(row->pred_mean_us, row->meas_mean_us);
        if (isfinite(row->error_pct) && !(fabs(row->error_pct) <= out->max_abs_error_pct))
            out->max_abs_error_pct = fabs(row->error_pct);
        i += p != NULL;
        j += m != NULL;
    }
    out->pred_step_s = pred->has_step_time ? pred->step_time_s : NAN;
    out->meas_step_s = meas->has_step_time ? meas->step_time_s : NAN;
    out->step_error_pct = error_pct(out->pred_step_s, out->meas_step_s);
    return 0;
}

void diag_compare_free(diag_compare_report *r) {
    free(r->rows);
    memset(r, 0, sizeof *r);
}
