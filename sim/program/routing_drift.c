/* routing_drift.c — the routing law of each step of a drifting run (see routing_drift.h). */
#include "sim/program/routing_drift.h"
#include "sim/base/alloc.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

int drift_enabled(const scenario *s) {
    return s->model.experts > 0 && (s->routing.steps > 1 || s->routing.drift.hot_peak_share > 0);
}

void drift_params_of(const scenario *s, drift_params *out) {
    const routing_drift_cfg *d = &s->routing.drift;
    *out = (drift_params){
        .experts = s->model.experts, .top_k = s->model.top_k,
        .hot_expert = s->routing.hot_expert,
        .hot_constant = s->routing.distribution == ROUTE_HOT, .hot_share = s->routing.hot_share,
        .hot_onset_step = d->hot_onset_step, .hot_peak_share = d->hot_peak_share,
        .hot_decay_steps = d->hot_decay_steps, .hot_rise_steps = d->hot_rise_steps,
        .walk_sigma = d->walk_sigma, .walk_reversion = d->walk_reversion,
        .bias_gamma = d->bias_update_speed,
    };
}

double drift_hot_share(const drift_params *p, int step) {
    if (p->hot_constant) return p->hot_share;
    if (!(p->hot_peak_share > 0) || step < p->hot_onset_step) return 0.0;
    int since = step - p->hot_onset_step, R = p->hot_rise_steps;
    if (since < R) return p->hot_peak_share * (since + 1) / (R + 1.0);
    return p->hot_peak_share * exp(-(double)(since - R) / p->hot_decay_steps);
}

double drift_biased_share(double h, double b_hot, double s0, double sb) {
    if (!(h > 0)) return 0.0;
    if (!(h < 1)) return 1.0;
    if (b_hot == 0 && s0 == sb) return h;   /* no bias yet: exactly the unbiased share */
    double odds = h / (1.0 - h) * exp(b_hot) * s0 / sb;
    return odds / (1.0 + odds);
}

void drift_bias_update(double *bias, const double *load, int E, double gamma) {
    double mean = 0;
    for (int e = 0; e < E; e++) mean += load[e];
    mean /= E;
    for (int e = 0; e < E; e++) {
        if (load[e] < mean) bias[e] += gamma;
        else if (load[e] > mean) bias[e] -= gamma;
    }
}

int drift_init(drift_state *d, const drift_params *p, uint64_t seed, moe_error *err) {
    memset(d, 0, sizeof *d);
    d->prm = *p;
    size_t E = (size_t)(p->experts > 0 ? p->experts : 1);
    d->log_pop = moe_xcalloc(E, sizeof *d->log_pop);
    d->bias = moe_xcalloc(E, sizeof *d->bias);
    d->weights = moe_xcalloc(E, sizeof *d->weights);
    d->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!d->log_pop || !d->bias || !d->weights || !d->rng) {
        drift_free(d);
        return moe_error_set(err, EXIT_RUNTIME, "routing drift: out of memory");
    }
    gsl_rng_set(d->rng, routing_seed(seed, ROUTING_TAG_DRIFT, 0, 0, 0));
    return 0;
}

const routing_law *drift_law_of(drift_state *d) {
    const drift_params *p = &d->prm;
    int E = p->experts, hot = p->hot_expert;
    double h = drift_hot_share(p, d->step);
    double s0 = 0, sb = 0;
    int all_equal = 1;
    double first = NAN;
    for (int e = 0; e < E; e++) {
        if (h > 0 && e == hot) { d->weights[e] = 0; continue; }
        d->weights[e] = exp(d->log_pop[e] + d->bias[e]);
        s0 += exp(d->log_pop[e]);
        sb += d->weights[e];
        if (first != first) first = d->weights[e];
        else if (d->weights[e] != first) all_equal = 0;
    }
    d->law.hot_expert = hot;
    d->law.hot_share = h > 0 ? drift_biased_share(h, d->bias[hot], s0, sb) : 0.0;
    d->law.weights = all_equal ? NULL : d->weights;
    d->law.draw_step = d->step;
    return &d->law;
}

void drift_advance(drift_state *d, const double *load) {
    const drift_params *p = &d->prm;
    if (p->bias_gamma > 0) drift_bias_update(d->bias, load, p->experts, p->bias_gamma);
    if (p->walk_sigma > 0 || p->walk_reversion > 0)
        for (int e = 0; e < p->experts; e++)
            d->log_pop[e] = (1.0 - p->walk_reversion) * d->log_pop[e] + gsl_ran_gaussian(d->rng, p->walk_sigma);
    d->step++;
}

void drift_free(drift_state *d) {
    if (!d) return;
    free(d->log_pop);
    free(d->bias);
    free(d->weights);
    if (d->rng) gsl_rng_free(d->rng);
    memset(d, 0, sizeof *d);
}
