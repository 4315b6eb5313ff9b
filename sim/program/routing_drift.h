/* routing_drift.h — how the routing law evolves over consecutive steps (routing.steps > 1): pure
 * functions of the scenario, the step index and the loads of the steps before.
 *
 * ---- Model -------------------------------------------------------------------------------------
 * Step t routes with a law of two parts (routing.h's `routing_law`):
 *   popularity  every expert e has a log-popularity x_e(t), a seeded Gaussian random walk (GSL
 *               gsl_ran_gaussian on one mt19937 stream seeded by routing_seed(seed, TAG_DRIFT)):
 *                 x_e(0) = 0,  x_e(t+1) = (1 - rho) x_e(t) + sigma N(0, 1)
 *               sigma = routing.drift.walk_sigma (logit per step), rho = routing.drift.walk_reversion
 *               (per step; 0 is a pure random walk, > 0 an AR(1) walk that forgets its start).
 *               A token picks its experts by Plackett-Luce over the weights w_e = exp(x_e + b_e)
 *               (routing.h: what a Gumbel-top-k router with logits x_e + b_e picks).
 *   hot expert  expert routing.hot_expert heads a token's ranking with probability h(t) (routing.h's
 *               "hot" law: h is its share of the TOKENS). Unbiased,
 *                 h(t) = 0                                   for t < t0
 *                 h(t) = h_peak (t - t0 + 1) / (R + 1)       for t0 <= t < t0 + R   (the rise)
 *                 h(t) = h_peak exp(-(t - t0 - R) / tau)     for t >= t0 + R
 *               t0 = routing.drift.hot_onset_step, h_peak = routing.drift.hot_peak_share, tau =
 *               routing.drift.hot_decay_steps (steps), R = routing.drift.hot_rise_steps (0: the peak
 *               at the onset, the rise left out); with routing.distribution "hot", h(t) =
 *               routing.hot_share at every step instead (a hot expert that does not go away by itself).
 *   bias        DeepSeek-V3's auxiliary-loss-free balancing (arXiv:2412.19437, section 2.1.2): every
 *               expert has a bias b_i added to its affinity for the top-k selection only; after each
 *               step b_i += gamma when expert i was underloaded (its load below the mean over experts),
 *               b_i -= gamma when overloaded, unchanged when exactly at the mean; gamma =
 *               routing.drift.bias_update_speed ("bias update speed": 0.001 for the first 14.3T tokens
 *               of DeepSeek-V3's training, 0 for the last 500B; section 4.2). The load counted is the
 *               router's token-expert pairs of the whole step, before any capacity drop.
 *               The hot expert's bias enters its share through the odds of a one-slot softmax: with
 *               natural weight W = h / (1 - h) S0 against the others' S0 = sum_o exp(x_o), its
 *               biased share is W e^{b_hot} / (W e^{b_hot} + Sb), Sb = sum_o exp(x_o + b_o), i.e.
 *                 odds(h_biased) = odds(h) e^{b_hot} S0 / Sb                (drift_biased_share)
 *               exact for top-1 routing, the documented approximation for top-k > 1.
 * Units: the bias and the walk are in the router's logit units (nepers of selection odds). DeepSeek-V3's
 * affinities are sigmoid scores, not logits, so its 0.001 is a rate in different units: the default
 * keeps DeepSeek's figure, and a scenario that wants the bias to act within tens of steps sets a larger
 * one (scenarios/hot-expert-steps.json: 0.05).
 * One law per step for every MoE layer and EP group (one bias vector, where DeepSeek keeps one per
 * layer): the step's uniform / hot law is already shared by every layer (routing.h). Every step also
 * routes fresh tokens: the token-level draws of step t are keyed by (scenario seed, t, layer,
 * micro-batch, group) (the law's draw_step = t: routing.h's routing_step_seed), step 0's being exactly
 * a one-step run's. So two steps under the same law still differ by their draws (a law that leaves
 * nothing to chance, e.g. top_k = experts, routes every step alike), and step t of a sequence is a
 * one-step simulation of step t's law and draws (step_options.first_step: without walk or bias,
 * step t's law depends on t alone).
 *
 * Ownership: drift_state owns its arrays and RNG (drift_free); drift_law_of writes into the state's
 * own law buffer, valid until the next drift_advance.
 */
#ifndef MOESIM_ROUTING_DRIFT_H
#define MOESIM_ROUTING_DRIFT_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "sim/base/errors.h"
#include "sim/program/routing.h"
#include "sim/scenario/scenario.h"

typedef struct {
    int experts, top_k;
    int hot_expert;            /* the expert that may turn hot */
    int hot_constant;          /* routing.distribution "hot": h(t) = hot_share at every step */
    double hot_share;          /* that constant share */
    int hot_onset_step;        /* t0 */
    double hot_peak_share;     /* h_peak (0: no hot expert appears) */
    double hot_decay_steps;    /* tau, steps */
    int hot_rise_steps;        /* R, steps */
    double walk_sigma;         /* logit per step */
    double walk_reversion;     /* per step, 0..1 */
    double bias_gamma;         /* logit per step */
} drift_params;

typedef struct {
    drift_params prm;
    int step;                  /* the step whose law drift_law_of gives */
    double *log_pop;           /* [E] x_e(step) */
    double *bias;              /* [E] b_e(step) */
    double *weights;           /* [E] the law's buffer */
    gsl_rng *rng;              /* the walk's stream */
    routing_law law;
} drift_state;

/* Whether the scenario's routing drifts (more than one step, or a hot expert that appears): the
 * step level then routes with drift laws; otherwise exactly as one step always did. */
int drift_enabled(const scenario *s);
void drift_params_of(const scenario *s, drift_params *out);

/* h(t): the hot expert's unbiased share of tokens at step t (formula above). */
double drift_hot_share(const drift_params *p, int step);
/* The hot expert's share after its bias: odds(h) e^{b_hot} S0 / Sb, as a share (0 stays 0, 1 stays 1). */
double drift_biased_share(double h, double b_hot, double s0, double sb);
/* DeepSeek-V3's update: bias[e] += gamma if load[e] < mean(load), -= gamma if above, over E experts. */
void drift_bias_update(double *bias, const double *load, int E, double gamma);

/* The walk's stream is seeded by routing_seed(seed, ROUTING_TAG_DRIFT, 0, 0, 0). */
int drift_init(drift_state *d, const drift_params *p, uint64_t seed, moe_error *err);
/* The law of step d->step, its draws step d->step's (law.draw_step). law.weights is NULL when every
 * expert other than the hot one is equally popular (then the draws are exactly the undrifted
 * "uniform" / "hot" law's of that step). d->step may be set before the first call to start at a
 * later step (its walk and bias are then still step 0's). */
const routing_law *drift_law_of(drift_state *d);
/* After step d->step with the router's per-expert loads `load` [E]: bias update, one walk step,
 * step + 1. */
void drift_advance(drift_state *d, const double *load);
void drift_free(drift_state *d);

#endif
