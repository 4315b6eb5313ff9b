/* test_routing.c — MoE routing (sim/program/routing.c) and load-imbalance metrics (sim/program/expert_load.c).
 *
 * Truths used: hand-solved small routings (seed 000 §2.4 tiny calculator, a §4.1-shaped top-2 case,
 * a capacity case solved by hand), the seed's diagnoser numbers (§4.2) recomputed by hand, the
 * sampling law (chi-square with GSL's CDF, binomial z-bounds, Zipf shares r^-s / H(E,s)), and
 * constraints checked token by token on the recorded choices (an independent recount of the byte
 * matrices from them).
 */
#define _POSIX_C_SOURCE 200809L   /* mkstemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "sim/program/expert_load.h"
#include "sim/program/routing.h"
#include "sim/exec/routing_pattern.h"

/* ---- helpers ------------------------------------------------------------------------------------ */
static scenario make_scn(int ep, int gpus_per_node, int experts, int top_k, int tokens_per_rank) {
    scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.file, sizeof s.file, "test_routing.json");
    s.seed = 42;
    s.model.experts = experts;
    s.model.top_k = top_k;
    s.model.hidden = 4;
    s.model.seq_len = tokens_per_rank;
    s.model.layers = 4;
    s.model.dense_layers = 0;
    s.cluster.gpus_per_node = gpus_per_node;
    s.layout.tp = s.layout.pp = s.layout.dp = 1;
    s.layout.ep = ep;
    s.layout.micro_batch = 1;
    s.routing.distribution = ROUTE_UNIFORM;
    s.routing.capacity_factor = 0.0;
    s.routing.drop = 1;
    s.precision.dispatch = DT_BF16;
    s.precision.combine = DT_BF16;
    return s;
}

static int *iota(int n) {
    int *g = malloc((size_t)n * sizeof *g);
    for (int i = 0; i < n; i++) g[i] = i;
    return g;
}

static routing_ctx *ctx_or_fail(const scenario *s, int keep_choices) {
    int *g = iota(s->layout.ep);
    moe_error err = {0};
    routing_opts o = {.tokens_per_rank = 0, .keep_choices = keep_choices};
    routing_ctx *c = routing_ctx_create_opts(s, g, &o, &err);
    free(g);
    if (!c) fail_msg("routing_ctx_create: %s", err.msg);
    return c;
}

static void sample_or_fail(const routing_ctx *c, routing_sample *out) {
    moe_error err = {0};
    if (routing_sample_init(c, out, &err)) fail_msg("routing_sample_init: %s", err.msg);
}

/* ---- expert_load: the seed's diagnoser (§4.2) ------------------------------------------------------ */
static void test_expert_load_seed_numbers(void **state) {
    (void)state;
    /* The seed's mock: Expert 3 is the hot one.
     * sum = 8820, mean = 1102.5; deviations -152.5 -82.5 -212.5 2097.5 -652.5 -192.5 -222.5 -582.5;
     * sum of squares = 5,326,350; the seed divides by n: variance = 665,793.75, sd = 815.96186,
     * CV = 815.96186 / 1102.5 = 0.740101 (the n-1 sample sd would give 0.7912: the test tells them
     * apart). max/min = 3200 / (450 + 1e-5) = 7.111111. Both over the thresholds -> severe.
     * Gini = sum_ij |xi - xj| / (2 n^2 mean) = 43,960 / (2 * 64 * 1102.5) = 43960/141120 = 0.311508. */
    const double hits[8] = {950, 1020, 890, 3200, 450, 910, 880, 520};
    assert_float_equal(expert_load_cv(hits, 8), 0.740101456, 1e-8);
    assert_float_equal(expert_load_max_min(hits, 8), 3200.0 / (450.0 + 1e-5), 1e-9);
    assert_float_equal(expert_load_gini(hits, 8), 43960.0 / 141120.0, 1e-12);
    expert_load_stats st;
    assert_int_equal(expert_load_analyze(hits, 8, &st), 0);
    assert_float_equal(st.mean, 1102.5, 1e-12);
    assert_float_equal(st.total, 8820.0, 1e-9);
    assert_float_equal(st.sd, 815.9618557, 1e-6);
    assert_int_equal(st.argmax, 3);
    assert_float_equal(st.max, 3200.0, 0.0);
    assert_float_equal(st.min, 450.0, 0.0);
    assert_true(st.severe);
}

static void test_expert_load_hand_cases(void **state) {
    (void)state;
    /* Gini of [1,2,3,4]: ordered-pair |diffs| sum to 2*(1+2+3+1+2+1) = 20; 2 n^2 mean = 2*16*2.5 = 80
     * -> 0.25. One expert takes all of 4: pairs sum 2*3*4 = 24, 2*16*1 = 32 -> 0.75 = (n-1)/n. */
    const double a[4] = {4, 1, 3, 2}, b[4] = {0, 0, 4, 0}, even[4] = {5, 5, 5, 5};
    assert_float_equal(expert_load_gini(a, 4), 0.25, 1e-12);
    assert_float_equal(expert_load_gini(b, 4), 0.75, 1e-12);
    assert_float_equal(expert_load_gini(even, 4), 0.0, 1e-12);
    /* CV of [1,2,3,4]: mean 2.5, population variance (2.25+0.25+0.25+2.25)/4 = 1.25 -> sqrt(1.25)/2.5 */
    assert_float_equal(expert_load_cv(a, 4), sqrt(1.25) / 2.5, 1e-12);
    /* thresholds: cv 0.4 and max/min 3 are not severe, just above them are */
    assert_false(expert_load_is_severe(0.4, 3.0));
    assert_true(expert_load_is_severe(0.41, 1.0));
    assert_true(expert_load_is_severe(0.1, 3.01));
    expert_load_stats st;
    assert_int_equal(expert_load_analyze(even, 4, &st), 0);
    assert_false(st.severe);
    assert_float_equal(st.cv, 0.0, 0.0);
}

/* ---- hand-solved routings ---------------------------------------------------------------------------- */
/* Seed 000 §2.4 tiny calculator: 2 GPUs, 2 tokens each, h = 4 BF16, top-1, one token stays and one
 * goes to the other GPU: each GPU sends 8 bytes in the dispatch and 8 back in the combine. */
static void test_seed_tiny_calculator(void **state) {
    (void)state;
    scenario s = make_scn(2, 1, 4, 1, 2);   /* one GPU per node: the remote token crosses the NIC */
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    /* rank 0: t0 -> E0 (own), t1 -> E2 (rank 1); rank 1: t0 -> E3 (own), t1 -> E1 (rank 0) */
    const int32_t ex[4] = {0, 2, 3, 1};
    assert_int_equal(routing_assign(c, ex, &r), 0);
    assert_float_equal(r.dispatch_bytes[0 * 2 + 1], 8.0, 0.0);
    assert_float_equal(r.dispatch_bytes[1 * 2 + 0], 8.0, 0.0);
    assert_float_equal(r.combine_bytes[0 * 2 + 1], 8.0, 0.0);
    assert_float_equal(r.combine_bytes[1 * 2 + 0], 8.0, 0.0);
    assert_float_equal(r.dispatch_tokens[0], 1.0, 0.0);   /* the local token: diagonal, no transfer */
    assert_int_equal(r.n_nodes, 2);
    assert_float_equal(r.dispatch_node_bytes[0 * 2 + 1], 8.0, 0.0);
    assert_float_equal(r.dispatch_node_bytes[0 * 2 + 0], 0.0, 0.0);   /* own node */
    assert_float_equal(r.dropped_fraction, 0.0, 0.0);
    routing_sample_free(&r);
    routing_ctx_free(c);

    /* the same two GPUs inside one node: no inter-node traffic at all */
    s = make_scn(2, 8, 4, 1, 2);
    c = ctx_or_fail(&s, 0);
    sample_or_fail(c, &r);
    assert_int_equal(routing_assign(c, ex, &r), 0);
    assert_int_equal(r.n_nodes, 1);
    assert_float_equal(r.node_tokens[0] + r.node_tokens[1], 0.0, 0.0);
    assert_float_equal(r.dispatch_bytes[1], 8.0, 0.0);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* Seed 000 §4.1 shape: 2 ranks x 3 tokens, 4 experts (E0,E1 on rank 0; E2,E3 on rank 1), top-2,
 * h = 4 BF16 (8 bytes per token copy). A token going to two experts of one rank is sent once. */
static void test_seed_top2_dedup(void **state) {
    (void)state;
    scenario s = make_scn(2, 1, 4, 2, 3);
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    const int32_t ex[2 * 3 * 2] = {
        0, 1,  2, 3,  1, 2,    /* rank 0: t0 both local; t1 both on rank 1 (sent once); t2 split */
        2, 3,  0, 1,  3, 0,    /* rank 1: t0 both local; t1 both on rank 0 (once); t2 split */
    };
    assert_int_equal(routing_assign(c, ex, &r), 0);
    /* distinct (token, dest) pairs: 0->0: t0,t2; 0->1: t1,t2; 1->1: t0,t2; 1->0: t1,t2 */
    for (int a = 0; a < 4; a++) assert_float_equal(r.dispatch_tokens[a], 2.0, 0.0);
    /* 2 tokens x 8 B = 16 B each way (per-pair counting would give 3 copies = 24 B) */
    assert_float_equal(r.dispatch_bytes[1], 16.0, 0.0);
    assert_float_equal(r.dispatch_bytes[2], 16.0, 0.0);
    assert_float_equal(r.node_tokens[0 * 2 + 1], 2.0, 0.0);
    /* what each rank computes (the seed prints len(dispatch_packets[r]) = 6 and 6) */
    assert_float_equal(r.rank_tokens[0], 6.0, 0.0);
    assert_float_equal(r.rank_tokens[1], 6.0, 0.0);
    for (int e = 0; e < 4; e++) assert_float_equal(r.expert_tokens[e], 3.0, 0.0);
    assert_int_equal(r.assignments, 12);
    /* a duplicate expert within a token is refused */
    int32_t dup[12];
    memcpy(dup, ex, sizeof dup);
    dup[1] = 0;
    assert_int_equal(routing_assign(c, dup, &r), -1);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* The same tokens through Megatron's alltoall dispatcher: every token-expert pair is a copy of its
 * own. 0->0: t0 twice, t2 once = 3; 0->1: t1 twice, t2 once = 3; likewise for rank 1. Two ranks on
 * two nodes (1 GPU per node): the RDMA copies are the remote pairs, 3 each way. */
static void test_alltoall_no_dedup(void **state) {
    (void)state;
    scenario s = make_scn(2, 1, 4, 2, 3);
    s.routing.dispatcher = DISPATCH_ALLTOALL;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    const int32_t ex[2 * 3 * 2] = {0, 1, 2, 3, 1, 2, 2, 3, 0, 1, 3, 0};
    assert_int_equal(routing_assign(c, ex, &r), 0);
    for (int a = 0; a < 4; a++) assert_float_equal(r.dispatch_tokens[a], 3.0, 0.0);
    assert_float_equal(r.dispatch_bytes[1], 24.0, 0.0);   /* 3 pairs x 4 hidden x 2 B */
    assert_float_equal(r.node_tokens[0 * 2 + 1], 3.0, 0.0);
    assert_float_equal(r.node_tokens[1 * 2 + 0], 3.0, 0.0);
    /* what the experts compute does not depend on the dispatcher */
    assert_float_equal(r.rank_tokens[0], 6.0, 0.0);
    for (int e = 0; e < 4; e++) assert_float_equal(r.expert_tokens[e], 3.0, 0.0);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* Capacity factor 1.5 with drop: 4 experts (2 per rank), 2 ranks x 4 tokens, top-1. Each source rank
 * applies the capacity to its own tokens: ceil(1.5 * 4 * 1 / 4) = 2 pairs per (rank, expert).
 *   rank 0 routes 0 0 0 1: expert 0 keeps t0 t1 and drops t2;   rank 1 routes 1 2 3 2: nothing over 2.
 * One drop of 8 pairs. (A group-wide ceil(1.5 * 8 / 4) = 3 would drop nothing; floor(1.5) = 1 per rank
 * would drop three: r0 t1, r0 t2, r1 t3.) */
static void test_capacity_drop_by_hand(void **state) {
    (void)state;
    scenario s = make_scn(2, 1, 4, 1, 4);
    s.routing.capacity_factor = 1.5;
    s.routing.drop = 1;
    routing_ctx *c = ctx_or_fail(&s, 1);
    routing_sample r;
    sample_or_fail(c, &r);
    const int32_t ex[8] = {0, 0, 0, 1,   /* rank 0 */
                           1, 2, 3, 2};  /* rank 1 */
    assert_int_equal(routing_assign(c, ex, &r), 0);
    assert_int_equal(r.capacity, 2);
    assert_int_equal(r.dropped, 1);
    assert_float_equal(r.dropped_fraction, 1.0 / 8.0, 1e-15);
    const double kept[4] = {2, 2, 2, 1};   /* E1: r0 t3 + r1 t0; E2: r1 t1 t3 */
    for (int e = 0; e < 4; e++) assert_float_equal(r.expert_tokens[e], kept[e], 0.0);
    assert_float_equal(r.rank_tokens[0], 4.0, 0.0);                /* E0 + E1 */
    assert_float_equal(r.rank_tokens[1], 3.0, 0.0);                /* E2 + E3 */
    assert_float_equal(r.dispatch_tokens[0 * 2 + 0], 3.0, 0.0);   /* r0: t0 t1 t3 stay, t2 dropped */
    assert_float_equal(r.dispatch_tokens[0 * 2 + 1], 0.0, 0.0);
    assert_float_equal(r.dispatch_tokens[1 * 2 + 0], 1.0, 0.0);   /* r1 t0 -> E1 on rank 0 */
    assert_float_equal(r.dispatch_tokens[1 * 2 + 1], 3.0, 0.0);
    for (int a = 0; a < 8; a++)
        assert_int_equal(r.choices[a], a == 2 ? ROUTING_DROPPED(0) : ex[a]);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* The same through the drawing path, with the routing forced: hot_share 1.0, top-1 sends all 8 tokens
 * to expert 0; capacity ceil(1.0 * 4 / 4) = 1 per source rank keeps 2 and drops 6 (0.75). Dropless
 * keeps all 8 on rank 0. */
static void test_capacity_forced_draw_and_dropless(void **state) {
    (void)state;
    scenario s = make_scn(2, 1, 4, 1, 4);
    s.routing.distribution = ROUTE_HOT;
    s.routing.hot_expert = 0;
    s.routing.hot_share = 1.0;
    s.routing.capacity_factor = 1.0;
    s.routing.drop = 1;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    assert_int_equal(r.dropped, 6);
    assert_float_equal(r.dropped_fraction, 0.75, 0.0);
    assert_float_equal(r.expert_tokens[0], 2.0, 0.0);
    routing_sample_free(&r);
    routing_ctx_free(c);

    s.routing.drop = 0;   /* dropless */
    c = ctx_or_fail(&s, 0);
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    assert_int_equal(r.dropped, 0);
    assert_float_equal(r.dropped_fraction, 0.0, 0.0);
    assert_int_equal(r.over_capacity, 6);
    assert_float_equal(r.expert_tokens[0], 8.0, 0.0);
    assert_float_equal(r.rank_tokens[0], 8.0, 0.0);
    assert_float_equal(r.rank_tokens[1], 0.0, 0.0);
    assert_float_equal(r.dispatch_tokens[1 * 2 + 0], 4.0, 0.0);   /* all of rank 1's tokens come over */
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* ---- sampling laws ------------------------------------------------------------------------------------- */
/* Uniform top-K without replacement: per token the indicator vector has covariance
 * c (I - J/E) with c = K(E-K)/(E(E-1)), so sum_e (O_e - mu)^2 / mu * (E-1)/(E-K) ~ chi2(E-1) over
 * independent tokens (mu = T K / E). Both tails are checked: too-even routing fails as well. */
static void test_uniform_chi_square(void **state) {
    (void)state;
    const int E = 16, K = 4, draws = 20;
    scenario s = make_scn(4, 8, E, K, 256);
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    double O[16] = {0};
    double T = 0;
    for (int d = 0; d < draws; d++) {
        assert_int_equal(routing_draw(c, d % 3, d, 0, &r), 0);
        for (int e = 0; e < E; e++) O[e] += r.expert_tokens[e];
        T += 4.0 * 256;
        assert_int_equal(r.assignments, 4 * 256 * K);
    }
    double mu = T * K / E, x2 = 0.0;
    for (int e = 0; e < E; e++) x2 += (O[e] - mu) * (O[e] - mu) / mu;
    x2 *= (double)(E - 1) / (E - K);
    double p = gsl_cdf_chisq_Q(x2, E - 1);
    print_message("uniform: chi2 = %.2f on %d dof, p = %.3f\n", x2, E - 1, p);
    assert_true(p > 1e-4 && p < 1.0 - 1e-4);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* The seed's incident: expert `hot` in 60% of the tokens. Its count is Binomial(T, 0.6); the other
 * experts share the remaining T*K - hot assignments evenly; its rank receives the most pairs. */
static void test_hot_expert(void **state) {
    (void)state;
    const int E = 32, K = 4, ep = 8, tpr = 512, hot = 13;
    scenario s = make_scn(ep, 8, E, K, tpr);
    s.routing.distribution = ROUTE_HOT;
    s.routing.hot_expert = hot;
    s.routing.hot_share = 0.6;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    double T = (double)ep * tpr;
    double sd = sqrt(T * 0.6 * 0.4);
    print_message("hot: expert %d got %.0f of %.0f tokens (expected %.0f +- %.1f)\n", hot,
                  r.expert_tokens[hot], T, 0.6 * T, sd);
    assert_true(fabs(r.expert_tokens[hot] - 0.6 * T) < 5.0 * sd);
    expert_load_stats st;
    assert_int_equal(expert_load_analyze(r.rank_tokens, (size_t)ep, &st), 0);
    assert_int_equal(st.argmax, hot / (E / ep));
    assert_int_equal(expert_load_analyze(r.expert_tokens, (size_t)E, &st), 0);
    assert_int_equal(st.argmax, hot);
    assert_true(st.severe);
    /* each other expert: per token probability (K - 1{hot}) / (E - 1), z-bound */
    double p_other = (0.6 * (K - 1) + 0.4 * K) / (E - 1);
    for (int e = 0; e < E; e++) {
        if (e == hot) continue;
        assert_true(fabs(r.expert_tokens[e] - T * p_other) < 5.0 * sqrt(T * p_other * (1 - p_other)));
    }
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* Zipf with K = 1: expert of popularity rank r receives the share r^-s / H(E, s) exactly in law.
 * The layer's permutation hides which expert that is: sort the counts. Layers differ. */
static void test_zipf_shares_and_layers(void **state) {
    (void)state;
    const int E = 16, ep = 4, tpr = 8192;
    const double zs = 1.2;
    scenario s = make_scn(ep, 8, E, 1, tpr);
    s.routing.distribution = ROUTE_ZIPF;
    s.routing.zipf_s = zs;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    double H = 0.0;
    for (int k = 1; k <= E; k++) H += pow(k, -zs);
    double T = (double)ep * tpr;
    int top[2];
    for (int layer = 0; layer < 2; layer++) {
        assert_int_equal(routing_draw(c, layer, 0, 0, &r), 0);
        double sorted[16];
        memcpy(sorted, r.expert_tokens, sizeof sorted);
        for (int i = 0; i < E; i++)   /* descending insertion sort */
            for (int j = i; j > 0 && sorted[j] > sorted[j - 1]; j--) {
                double t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t;
            }
        for (int k = 0; k < 3; k++) {
            double p = pow(k + 1, -zs) / H;
            assert_true(fabs(sorted[k] - T * p) < 5.0 * sqrt(T * p * (1 - p)));
        }
        top[layer] = 0;
        for (int e = 1; e < E; e++)
            if (r.expert_tokens[e] > r.expert_tokens[top[layer]]) top[layer] = e;
    }
    assert_int_not_equal(top[0], top[1]);   /* the per-layer permutation moved the hot expert */
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* ---- node- and group-limited routing --------------------------------------------------------------- */
static int count_distinct(const int *v, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= v[j] == v[i];
        d += !seen;
    }
    return d;
}

/* Walk every token's recorded experts: count nodes and groups, and recount the dispatch and node
 * matrices independently. Returns the maximum nodes any token spans. */
static int check_tokens(const routing_ctx *c, const routing_sample *r, int experts_per_rank, int group_size,
                        int max_groups) {
    int n = r->n_ranks, T = r->tokens_per_rank, K = r->top_k, nn = r->n_nodes;
    const int *rank_node = routing_ctx_rank_node(c);
    double *disp = calloc((size_t)n * n, sizeof *disp), *node = calloc((size_t)n * nn, sizeof *node);
    int max_nodes = 0;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < T; t++) {
            const int32_t *ch = r->choices + ((size_t)i * T + t) * K;
            int ranks[64], nodes[64], groups[64], m = 0;
            for (int k = 0; k < K; k++) {
                assert_true(ch[k] >= 0);   /* no drops, no empty slots here */
                ranks[m] = ch[k] / experts_per_rank;
                nodes[m] = rank_node[ranks[m]];
                groups[m] = ch[k] / group_size;
                m++;
            }
            int dn = count_distinct(nodes, m);
            if (dn > max_nodes) max_nodes = dn;
            if (max_groups) assert_true(count_distinct(groups, m) <= max_groups);
            for (int a = 0; a < m; a++) {
                int first_rank = 1, first_node = 1;
                for (int b = 0; b < a; b++) {
                    first_rank &= ranks[b] != ranks[a];
                    first_node &= nodes[b] != nodes[a];
                }
                if (first_rank) disp[i * n + ranks[a]] += 1;
                if (first_node && nodes[a] != rank_node[i]) node[i * nn + nodes[a]] += 1;
            }
        }
    for (int a = 0; a < n * n; a++) assert_float_equal(r->dispatch_tokens[a], disp[a], 0.0);
    for (int a = 0; a < n * nn; a++) assert_float_equal(r->node_tokens[a], node[a], 0.0);
    /* node copies never exceed the per-rank copies they replace */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nn; k++) {
            double per_rank = 0.0;
            for (int j = 0; j < n; j++)
                if (rank_node[j] == k) per_rank += r->dispatch_bytes[i * n + j];
            assert_true(r->dispatch_node_bytes[i * nn + k] <= per_rank);
            if (k == rank_node[i]) assert_float_equal(r->node_tokens[i * nn + k], 0.0, 0.0);
        }
    free(disp);
    free(node);
    return max_nodes;
}

static void test_node_and_group_limited(void **state) {
    (void)state;
    /* 32 ranks on 4 nodes, 64 experts (2 per rank, 16 per node), top-8 */
    const int ep = 32, E = 64, K = 8, tpr = 64;
    scenario s = make_scn(ep, 8, E, K, tpr);
    routing_ctx *c = ctx_or_fail(&s, 1);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    int unlimited = check_tokens(c, &r, E / ep, E, 0);
    assert_true(unlimited > 2);   /* without the limit tokens do span more than 2 nodes */
    routing_sample_free(&r);
    routing_ctx_free(c);

    s.routing.node_limit = 2;
    c = ctx_or_fail(&s, 1);
    sample_or_fail(c, &r);
    for (int mb = 0; mb < 3; mb++) {
        assert_int_equal(routing_draw(c, 0, mb, 0, &r), 0);
        assert_true(check_tokens(c, &r, E / ep, E, 0) <= 2);
    }
    routing_sample_free(&r);
    routing_ctx_free(c);

    /* groups of 8 experts (4 ranks: half a node), 3 selected, plus node_limit 2 */
    s.model.expert_groups = 8;
    s.model.topk_groups = 3;
    c = ctx_or_fail(&s, 1);
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 1, 0, 2, &r), 0);
    assert_true(check_tokens(c, &r, E / ep, E / 8, 3) <= 2);
    assert_int_equal(r.empty_slots, 0);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* The constrained draw is the documented walk of each token's ranking (routing.h "Constrained
 * routing"), replayed here from the same generator: mt19937 seeded by routing_seed, tokens in arrival
 * order (token t of every source rank, then t + 1), an expert drawn uniformly and rejected when seen;
 * a new group is selected while fewer than topk_groups are (else the expert is out); then a new node
 * while fewer than node_limit are (its group's selection stands). Three placements: groups inside
 * nodes, groups that are the nodes (the draw skips their check: routing.c groups_are_nodes) and
 * groups of two nodes; none takes the few-experts shortcut (direct_when_full) or the scan after many
 * rejections. The recorded choices must be these, expert for expert. */
static void test_constrained_draws_follow_the_walk(void **state) {
    (void)state;
    const int ep = 32, E = 64, K = 8, tpr = 32, per_node = 16;
    const struct { int groups, topk, node_limit; } cases[] = {{8, 3, 2}, {4, 2, 2}, {2, 1, 3}};
    for (size_t c_i = 0; c_i < sizeof cases / sizeof cases[0]; c_i++) {
        scenario s = make_scn(ep, 8, E, K, tpr);   /* 4 nodes of 8 ranks, 16 experts each */
        s.model.expert_groups = cases[c_i].groups;
        s.model.topk_groups = cases[c_i].topk;
        s.routing.node_limit = cases[c_i].node_limit;
        routing_ctx *c = ctx_or_fail(&s, 1);
        routing_sample r;
        sample_or_fail(c, &r);
        const int layer = 1, mb = 2, group = 0, group_size = E / cases[c_i].groups;
        assert_int_equal(routing_draw(c, layer, mb, group, &r), 0);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(rng, routing_seed(s.seed, ROUTING_TAG_DRAW, layer, mb, group));
        int mismatches = 0;
        for (int t = 0; t < tpr; t++)
            for (int i = 0; i < ep; i++) {
                int seen[64] = {0}, group_on[64] = {0}, node_on[8] = {0}, got = 0, groups = 0, nodes = 0, out[8];
                for (int draws = 0; got < K; draws++) {
                    assert_true(draws < 64 + 8 * K);   /* the scan after many rejections is not what this checks */
                    int e = (int)gsl_rng_uniform_int(rng, (unsigned long)E);
                    if (seen[e]) continue;
                    seen[e] = 1;
                    int g = e / group_size, nd = e / per_node;
                    if (!group_on[g]) {
                        if (groups == cases[c_i].topk) continue;
                        group_on[g] = 1;
                        groups++;
                    }
                    if (!node_on[nd]) {
                        if (nodes == cases[c_i].node_limit) continue;
                        node_on[nd] = 1;
                        nodes++;
                    }
                    out[got++] = e;
                }
                const int32_t *ch = r.choices + ((size_t)i * tpr + t) * K;
                for (int k = 0; k < K; k++) mismatches += ch[k] != out[k];
            }
        if (mismatches) printf("  groups %d (top %d), node_limit %d: %d choices differ\n", cases[c_i].groups,
                               cases[c_i].topk, cases[c_i].node_limit, mismatches);
        assert_int_equal(mismatches, 0);
        gsl_rng_free(rng);
        routing_sample_free(&r);
        routing_ctx_free(c);
    }
}

/* Under a node limit, uniform popularity stays uniform per expert (every node is alike): a binomial
 * z-bound per expert, each token picks expert e with probability K/E. */
static void test_node_limited_uniform_marginals(void **state) {
    (void)state;
    const int ep = 16, E = 64, K = 8, tpr = 1024;
    scenario s = make_scn(ep, 4, E, K, tpr);   /* 4 nodes */
    s.routing.node_limit = 2;
    s.model.expert_groups = 8;
    s.model.topk_groups = 4;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    double T = (double)ep * tpr, p = (double)K / E;
    for (int e = 0; e < E; e++) assert_true(fabs(r.expert_tokens[e] - T * p) < 5.0 * sqrt(T * p * (1 - p)));
    routing_sample_free(&r);
    routing_ctx_free(c);
}

/* Forced balance (routing.distribution "balanced"): 32 ranks on 4 nodes x 64 tokens = 2048 tokens,
 * 64 experts, top-8: every expert gets exactly 2048 x 8 / 64 = 256 pairs (CV 0), every source rank
 * sends it exactly 64 x 8 / 64 = 8, so nothing is over a per-rank capacity of exactly 1.0 x the
 * share (moe_capacity.h: ceil(1.0 x 64 x 8 / 64) = 8), without limits, under node_limit 2 and 4-of-8 group
 * limits (check_tokens checks every token's experts and recounts the byte matrices); two draws
 * differ (the balance is exact, the assignment random). */
static int same_sample(const routing_sample *a, const routing_sample *b);
static void test_balanced_exact_shares(void **state) {
    (void)state;
    const int ep = 32, E = 64, K = 8, tpr = 64;
    for (int c_i = 0; c_i < 3; c_i++) {
        scenario s = make_scn(ep, 8, E, K, tpr);
        s.routing.distribution = ROUTE_BALANCED;
        s.routing.capacity_factor = 1.0;
        int group = E, topk_groups = 0, limit = 4;
        if (c_i == 1) { s.routing.node_limit = 2; limit = 2; }
        if (c_i == 2) { s.model.expert_groups = 8; s.model.topk_groups = 4; group = 8; topk_groups = 4; }
        routing_ctx *c = ctx_or_fail(&s, 1);
        routing_sample a, b;
        sample_or_fail(c, &a);
        sample_or_fail(c, &b);
        assert_int_equal(routing_draw(c, 0, 0, 0, &a), 0);
        assert_int_equal(routing_draw(c, 0, 1, 0, &b), 0);
        for (int e = 0; e < E; e++) assert_true(a.expert_tokens[e] == 256.0);
        assert_int_equal(a.dropped, 0);
        assert_int_equal(a.over_capacity, 0);
        expert_load_stats st;
        assert_int_equal(expert_load_analyze(a.expert_tokens, E, &st), 0);
        assert_true(st.cv == 0.0);
        assert_true(check_tokens(c, &a, E / ep, group, topk_groups) <= limit);
        assert_false(same_sample(&a, &b));
        routing_sample_free(&a);
        routing_sample_free(&b);
        routing_ctx_free(c);
    }
}

/* ---- determinism and the pool ---------------------------------------------------------------------- */
static int same_sample(const routing_sample *a, const routing_sample *b) {
    size_t n = (size_t)a->n_ranks;
    return memcmp(a->expert_tokens, b->expert_tokens, (size_t)a->n_experts * sizeof(double)) == 0 &&
           memcmp(a->dispatch_bytes, b->dispatch_bytes, n * n * sizeof(double)) == 0 &&
           memcmp(a->dispatch_node_bytes, b->dispatch_node_bytes, n * (size_t)a->n_nodes * sizeof(double)) == 0;
}

static void test_determinism_and_pool(void **state) {
    (void)state;
    scenario s = make_scn(16, 4, 64, 8, 128);
    s.routing.distribution = ROUTE_ZIPF;
    s.routing.zipf_s = 1.0;
    s.routing.node_limit = 2;
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample a, b;
    sample_or_fail(c, &a);
    sample_or_fail(c, &b);
    assert_int_equal(routing_draw(c, 2, 5, 1, &a), 0);
    assert_int_equal(routing_draw(c, 0, 0, 0, &b), 0);   /* another draw in between: no hidden state */
    assert_int_equal(routing_draw(c, 2, 5, 1, &b), 0);
    assert_true(same_sample(&a, &b));
    assert_int_equal(routing_draw(c, 2, 6, 1, &b), 0);
    assert_false(same_sample(&a, &b));                    /* next micro-batch */
    assert_int_equal(routing_draw(c, 2, 5, 2, &b), 0);
    assert_false(same_sample(&a, &b));                    /* another group */
    /* another context from the same scenario draws the same */
    routing_ctx *c2 = ctx_or_fail(&s, 0);
    assert_int_equal(routing_draw(c2, 2, 5, 1, &b), 0);
    assert_true(same_sample(&a, &b));
    routing_ctx_free(c2);
    /* a different scenario seed changes it */
    s.seed = 43;
    c2 = ctx_or_fail(&s, 0);
    assert_int_equal(routing_draw(c2, 2, 5, 1, &b), 0);
    assert_false(same_sample(&a, &b));
    routing_ctx_free(c2);

    /* pool: 2 samples per layer law, zipf has one law per MoE layer (4 here) */
    assert_int_equal(routing_ctx_layer_laws(c), 4);
    moe_error err;
    routing_pool *p = routing_pool_create(c, 2, 0, &err);
    assert_non_null(p);
    const routing_sample *first = NULL;
    for (int mb = 0; mb < 20; mb++)
        for (int g = 0; g < 4; g++) {
            const routing_sample *x = routing_pool_get(p, 1, mb, g);
            assert_non_null(x);
            if (!first) first = x;
            assert_int_equal(x->layer, 1);
        }
    assert_int_equal(routing_pool_draws(p), 2);   /* 80 uses of layer 1, 2 distinct samples */
    assert_ptr_equal(routing_pool_get(p, 1, 0, 0), first);
    /* the pool slot equals a direct draw of (law, slot, 0) */
    assert_int_equal(routing_draw(c, 1, first->micro_batch, 0, &b), 0);
    assert_true(same_sample(first, &b));
    routing_pool_free(p);
    routing_sample_free(&a);
    routing_sample_free(&b);
    routing_ctx_free(c);

    /* uniform: one law shared by all layers */
    s.routing.distribution = ROUTE_UNIFORM;
    c = ctx_or_fail(&s, 0);
    assert_int_equal(routing_ctx_layer_laws(c), 1);
    p = routing_pool_create(c, 3, 0, &err);
    for (int l = 0; l < 4; l++)
        for (int mb = 0; mb < 10; mb++) assert_non_null(routing_pool_get(p, l, mb, 0));
    assert_int_equal(routing_pool_draws(p), 3);
    routing_pool_free(p);
    routing_ctx_free(c);

    /* zipf capped to 2 laws: layers 0 and 2 share law 0, 1 and 3 law 1; 1 sample each */
    s.routing.distribution = ROUTE_ZIPF;
    c = ctx_or_fail(&s, 0);
    p = routing_pool_create(c, 1, 2, &err);
    assert_ptr_equal(routing_pool_get(p, 0, 0, 0), routing_pool_get(p, 2, 7, 3));
    assert_ptr_equal(routing_pool_get(p, 1, 0, 0), routing_pool_get(p, 3, 1, 1));
    assert_ptr_not_equal(routing_pool_get(p, 0, 0, 0), routing_pool_get(p, 1, 0, 0));
    assert_int_equal(routing_pool_get(p, 3, 0, 0)->layer, 1);
    assert_int_equal(routing_pool_draws(p), 2);
    assert_null(routing_pool_create(c, 0, 0, &err));
    routing_pool_free(p);
    routing_ctx_free(c);
}

/* routing_pool_fill in threads: every slot the keys map to drawn once, each the same bytes as a direct
 * draw of (law, slot, 0) in the caller's thread, the gets afterwards drawing nothing */
static void test_pool_fill_threads(void **state) {
    (void)state;
    scenario s = make_scn(16, 4, 64, 8, 128);
    s.seed = 77;
    s.routing.distribution = ROUTE_ZIPF;
    s.routing.zipf_s = 1.0;
    s.routing.node_limit = 2;
    routing_forget();   /* no draw kept from an earlier pool: the fill draws them all */
    routing_ctx *c = ctx_or_fail(&s, 0);
    moe_error err;
    routing_pool *p = routing_pool_create(c, 2, 0, &err);
    assert_non_null(p);
    int layers[80], mbs[80];   /* the keys the fill covers: 4 layers x 20 micro-batches */
    for (int i = 0; i < 80; i++) { layers[i] = i % 4; mbs[i] = i / 4; }
    routing_set_threads(3);
    assert_int_equal(routing_threads(), 3);
    assert_int_equal(routing_pool_fill(p, 4, 20, 0, &err), 0);
    routing_set_threads(1);
    assert_int_equal(routing_pool_draws(p), 8);   /* 4 zipf laws x 2 samples */
    routing_sample b;
    sample_or_fail(c, &b);
    for (int i = 0; i < 80; i++) {
        const routing_sample *x = routing_pool_get(p, layers[i], mbs[i], 0);
        assert_non_null(x);
        assert_int_equal(routing_draw(c, x->layer, x->micro_batch, 0, &b), 0);
        assert_true(same_sample(x, &b));
    }
    assert_int_equal(routing_pool_draws(p), 8);
    assert_int_equal(routing_pool_fill(p, 4, 20, 0, &err), 0);   /* nothing left to draw */
    assert_int_equal(routing_pool_draws(p), 8);
    routing_sample_free(&b);
    routing_pool_free(p);
    routing_ctx_free(c);
    routing_set_threads(1000);
    assert_int_equal(routing_threads(), ROUTING_MAX_THREADS);
    routing_set_threads(0);
    assert_int_equal(routing_threads(), 1);
}

/* ---- trace files and validation --------------------------------------------------------------------- */
static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void expect_error(const scenario *s, const char *needle1, const char *needle2) {
    int *g = iota(s->layout.ep);
    moe_error err = {0};
    routing_ctx *c = routing_ctx_create(s, g, &err);
    free(g);
    if (c) { routing_ctx_free(c); fail_msg("expected an error mentioning %s", needle1); }
    assert_int_equal(err.code, EXIT_BADINPUT);
    if (!strstr(err.msg, needle1) || (needle2 && !strstr(err.msg, needle2)))
        fail_msg("error \"%s\" lacks \"%s\"/\"%s\"", err.msg, needle1, needle2 ? needle2 : "");
}

static void test_trace_distribution(void **state) {
    (void)state;
    char path[] = "/tmp/moesim_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    /* K = 1: expert shares are the normalised counts exactly; layer 1 reverses layer 0 */
    write_file(path, "{\"format\": \"moesim-expert-load/1\", \"experts\": 4,"
                     " \"layers\": [[600, 200, 200, 0], [0, 200, 200, 600]]}");
    scenario s = make_scn(2, 8, 4, 1, 2048);
    s.routing.distribution = ROUTE_TRACE;
    snprintf(s.routing.trace, sizeof s.routing.trace, "%s", path);
    routing_ctx *c = ctx_or_fail(&s, 0);
    assert_int_equal(routing_ctx_layer_laws(c), 2);
    routing_sample r;
    sample_or_fail(c, &r);
    double T = 4096;
    for (int layer = 0; layer < 3; layer++) {   /* layer 2 wraps to trace layer 0 */
        assert_int_equal(routing_draw(c, layer, 0, 0, &r), 0);
        int hot = (layer % 2) ? 3 : 0, cold = (layer % 2) ? 0 : 3;
        assert_true(fabs(r.expert_tokens[hot] - 0.6 * T) < 5.0 * sqrt(T * 0.24));
        assert_float_equal(r.expert_tokens[cold], 0.0, 0.0);
    }
    routing_sample_free(&r);
    routing_ctx_free(c);

    write_file(path, "{\"format\": \"moesim-expert-load/2\", \"layers\": [[1,1,1,1]]}");
    expect_error(&s, "moesim-expert-load/2", "format");
    write_file(path, "{\"format\": \"moesim-expert-load/1\", \"layers\": [[1,1,1,1], [1,2,3]]}");
    expect_error(&s, "layers[1]", "3 entries");
    write_file(path, "{\"format\": \"moesim-expert-load/1\", \"layers\": [[1,1,-4,1]]}");
    expect_error(&s, "layers[0][2]", "-4");
    write_file(path, "{\"format\": \"moesim-expert-load/1\", \"layer\": [[1,1,1,1]]}");
    expect_error(&s, "did you mean \"layers\"", NULL);
    write_file(path, "{\"format\": \"moesim-expert-load/1\", \"layers\": [[0,0,0,0]]}");
    expect_error(&s, "layers[0]", "0 non-zero");
    write_file(path, "{\"format\": ");
    expect_error(&s, path, "valid JSON");
    unlink(path);
    expect_error(&s, "routing.trace", path);   /* missing file */
}

/* Node-limited routing when the token's nodes hold few experts (routing.c pick_from_nodes: drawn from
 * those experts, not rejected from all). Hand-solvable: 16 experts on 16 ranks, 4 ranks per node (4
 * nodes of 4 experts), top-2, node_limit 1. The token's node is the node of its first expert f in the
 * Plackett-Luce ranking (probability w_f / W), its second expert one of the node's other three in
 * proportion to popularity: expert e of node k is picked with probability
 *   P(e) = w_e / W + sum over f != e on node k of (w_f / W) * w_e / (W_k - w_f).
 * With trace counts 1..16 each expert's pairs are within a binomial z-bound of T P(e), and since both
 * experts of a token lie on its node, node k's experts receive 2 T W_k / W pairs together. */
static void test_node_limited_few_experts(void **state) {
    (void)state;
    char path[] = "/tmp/moesim_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char text[512] = "{\"format\": \"moesim-expert-load/1\", \"layers\": [[";
    for (int e = 0; e < 16; e++) snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", e ? ", " : "", e + 1);
    snprintf(text + strlen(text), sizeof text - strlen(text), "]]}");
    write_file(path, text);
    const int ep = 16, E = 16, tpr = 2048;
    scenario s = make_scn(ep, 4, E, 2, tpr);
    s.routing.distribution = ROUTE_TRACE;
    s.routing.node_limit = 1;
    snprintf(s.routing.trace, sizeof s.routing.trace, "%s", path);
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    double T = (double)ep * tpr, W = 16 * 17 / 2.0;
    for (int k = 0; k < 4; k++) {
        double Wk = 0, pairs = 0;
        for (int e = 4 * k; e < 4 * k + 4; e++) Wk += e + 1;
        for (int e = 4 * k; e < 4 * k + 4; e++) {
            double p = (e + 1) / W;
            for (int f = 4 * k; f < 4 * k + 4; f++)
                if (f != e) p += (f + 1) / W * (e + 1) / (Wk - (f + 1));
            assert_true(fabs(r.expert_tokens[e] - T * p) < 5.0 * sqrt(T * p * (1 - p)));
            pairs += r.expert_tokens[e];
        }
        assert_true(fabs(pairs - 2 * T * Wk / W) < 5.0 * 2 * sqrt(T * Wk / W * (1 - Wk / W)));
    }
    assert_int_equal(r.empty_slots, 0);
    /* the uniform law: every expert in 2 of 16 slots */
    s.routing.distribution = ROUTE_UNIFORM;
    routing_ctx *u = ctx_or_fail(&s, 0);
    assert_int_equal(routing_draw(u, 0, 0, 0, &r), 0);
    for (int e = 0; e < E; e++) assert_true(fabs(r.expert_tokens[e] - T / 8) < 5.0 * sqrt(T / 8 * 7 / 8));
    routing_sample_free(&r);
    routing_ctx_free(u);
    routing_ctx_free(c);
    unlink(path);
}

static void test_validation_errors(void **state) {
    (void)state;
    scenario s = make_scn(4, 8, 16, 4, 16);
    s.routing.distribution = ROUTE_HOT;
    s.routing.hot_expert = 16;
    expect_error(&s, "routing.hot_expert", "16");
    s.routing.hot_expert = 1;
    s.routing.hot_share = 1.5;
    expect_error(&s, "routing.hot_share", "1.5");
    s = make_scn(3, 8, 16, 4, 16);
    expect_error(&s, "layout.ep", "divisor");
    s = make_scn(16, 4, 16, 4, 16);   /* 1 expert per rank, 4 per node: 1 node cannot hold top-4 + */
    s.model.top_k = 5;
    s.routing.node_limit = 1;
    expect_error(&s, "routing.node_limit", "1");
    s = make_scn(4, 8, 16, 8, 16);
    s.model.expert_groups = 4;
    s.model.topk_groups = 1;           /* one group of 4 experts cannot hold top-8 */
    expect_error(&s, "model.topk_groups", NULL);
}

static void test_a2a_pattern(void **state) {
    (void)state;
    scenario s = make_scn(16, 8, 32, 4, 8);
    routing_ctx *c = ctx_or_fail(&s, 0);
    routing_sample r;
    sample_or_fail(c, &r);
    assert_int_equal(routing_draw(c, 0, 0, 0, &r), 0);
    a2a_pattern p;
    routing_sample_pattern(c, &r, 0, &p);
    assert_int_equal(p.n, 16);
    assert_int_equal(p.n_nodes, 2);
    assert_ptr_equal(p.bytes, r.dispatch_bytes);
    assert_ptr_equal(p.node_bytes, r.dispatch_node_bytes);
    assert_int_equal(p.nodes[1], 1);
    routing_sample_pattern(c, &r, 1, &p);
    assert_ptr_equal(p.bytes, r.combine_bytes);
    /* combine is the transpose of dispatch (both BF16 here) */
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) assert_float_equal(r.combine_bytes[j * 16 + i], r.dispatch_bytes[i * 16 + j], 0.0);
    routing_sample_free(&r);
    routing_ctx_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expert_load_seed_numbers),
        cmocka_unit_test(test_expert_load_hand_cases),
        cmocka_unit_test(test_seed_tiny_calculator),
        cmocka_unit_test(test_seed_top2_dedup),
        cmocka_unit_test(test_alltoall_no_dedup),
        cmocka_unit_test(test_capacity_drop_by_hand),
        cmocka_unit_test(test_capacity_forced_draw_and_dropless),
        cmocka_unit_test(test_uniform_chi_square),
        cmocka_unit_test(test_hot_expert),
        cmocka_unit_test(test_zipf_shares_and_layers),
        cmocka_unit_test(test_node_and_group_limited),
        cmocka_unit_test(test_constrained_draws_follow_the_walk),
        cmocka_unit_test(test_node_limited_uniform_marginals),
        cmocka_unit_test(test_node_limited_few_experts),
        cmocka_unit_test(test_balanced_exact_shares),
        cmocka_unit_test(test_determinism_and_pool),
        cmocka_unit_test(test_pool_fill_threads),
        cmocka_unit_test(test_trace_distribution),
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_a2a_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
