/* test_capacity_rule.c — the capacity-factor drop rule (kernels/moe_capacity.h) is one rule: a routing
 * sample drawn by the simulator (sim/program/routing.c) keeps and drops exactly what the kernels'
 * dispatch layout (kernels/dispatch_layout_cpu.c, the CPU reference of dispatch_layout.cu and what live
 * mode runs) keeps and drops when every source rank's tokens of that sample are laid out with
 * moe_capacity(). The two are independent implementations (the routing counts pairs as they arrive,
 * interleaved across ranks; the layout counting-sorts one rank's assignments), so a per-expert
 * disagreement in either the capacity or the order of keeping shows here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/moe_capacity.h"
#include "kernels/moe_kernels.h"
#include "sim/program/routing.h"

typedef struct {
    const char *name;
    route_kind dist;
    double capacity_factor;
    int ep, experts, top_k, tokens_per_rank;
} capacity_case;

static scenario case_scenario(const capacity_case *k) {
    scenario s;
    memset(&s, 0, sizeof s);
    snprintf(s.file, sizeof s.file, "test_capacity_rule.json");
    s.seed = 7;
    s.model.experts = k->experts;
    s.model.top_k = k->top_k;
    s.model.hidden = 8;
    s.model.seq_len = k->tokens_per_rank;
    s.model.layers = 2;
    s.cluster.gpus_per_node = 2;
    s.layout.tp = s.layout.pp = s.layout.dp = 1;
    s.layout.ep = k->ep;
    s.layout.micro_batch = 1;
    s.routing.distribution = k->dist;
    s.routing.hot_expert = 1;
    s.routing.hot_share = 0.6;
    s.routing.zipf_s = 1.2;
    s.routing.capacity_factor = k->capacity_factor;
    s.routing.drop = 1;
    s.precision.dispatch = s.precision.combine = DT_BF16;
    return s;
}

/* Draw one sample, lay out each source rank's tokens with the kernels' reference, and compare per
 * expert (kept, dropped) and per assignment (kept or dropped). Returns the sample's dropped pairs. */
static long check_case(const capacity_case *k) {
    scenario s = case_scenario(k);
    int n = k->ep, E = k->experts, K = k->top_k, T = k->tokens_per_rank;
    int *gpus = malloc((size_t)n * sizeof *gpus);
    for (int i = 0; i < n; i++) gpus[i] = i;
    moe_error err = {0};
    routing_opts o = {.keep_choices = 1};
    routing_ctx *ctx = routing_ctx_create_opts(&s, gpus, &o, &err);
    free(gpus);
    if (!ctx) fail_msg("%s: routing_ctx_create: %s", k->name, err.msg);
    routing_sample r;
    if (routing_sample_init(ctx, &r, &err)) fail_msg("%s: routing_sample_init: %s", k->name, err.msg);
    assert_int_equal(routing_draw(ctx, 0, 3, 1, &r), 0);

    int cap = moe_capacity(k->capacity_factor, T, K, E);
    assert_int_equal(r.capacity, cap);
    size_t TK = (size_t)T * K;
    int32_t *idx = malloc(TK * sizeof *idx);
    int32_t *counts = malloc((size_t)E * sizeof *counts), *offsets = malloc((size_t)E * sizeof *offsets);
    int32_t *rank_counts = malloc((size_t)n * sizeof *rank_counts);
    int32_t *rank_offsets = malloc((size_t)n * sizeof *rank_offsets);
    int32_t *slot = malloc(TK * sizeof *slot), *row_token = malloc(TK * sizeof *row_token), totals[2];
    moe_dispatch_layout lay = {counts, offsets, rank_counts, rank_offsets, slot, row_token, totals};
    double *kept = calloc((size_t)E, sizeof *kept), *dropped = calloc((size_t)E, sizeof *dropped);
    double *sim_dropped = calloc((size_t)E, sizeof *sim_dropped);
    long layout_dropped = 0;
    for (int i = 0; i < n; i++) {
        const int32_t *ch = r.choices + (size_t)i * TK;
        for (size_t a = 0; a < TK; a++) {
            assert_true(ch[a] != ROUTING_NONE);
            idx[a] = ch[a] >= 0 ? ch[a] : -1 - ch[a];
            if (ch[a] < 0) sim_dropped[idx[a]] += 1;
        }
        assert_int_equal(moe_dispatch_layout_cpu(idx, T, K, E, n, cap, &lay), MOE_OK);
        for (size_t a = 0; a < TK; a++) {
            /* the same assignment is kept (dropped) on both sides */
            if ((slot[a] < 0) != (ch[a] < 0))
                fail_msg("%s: rank %d token %zu slot %zu: layout %s, routing %s", k->name, i, a / K, a % K,
                         slot[a] < 0 ? "drops" : "keeps", ch[a] < 0 ? "drops" : "keeps");
            if (slot[a] < 0) dropped[idx[a]] += 1;
        }
        for (int e = 0; e < E; e++) kept[e] += counts[e];
        layout_dropped += totals[1];
    }
    long total_dropped = 0;
    for (int e = 0; e < E; e++) {
        if (kept[e] != r.expert_tokens[e] || dropped[e] != sim_dropped[e])
            fail_msg("%s: expert %d: layout keeps %g drops %g, routing keeps %g drops %g", k->name, e, kept[e],
                     dropped[e], r.expert_tokens[e], sim_dropped[e]);
        total_dropped += (long)dropped[e];
    }
    assert_int_equal(total_dropped, r.dropped);
    assert_int_equal(layout_dropped, r.dropped);
    print_message("%-24s capacity %d per (rank, expert): %ld of %ld pairs dropped\n", k->name, cap,
                  (long)r.dropped, (long)r.assignments);
    free(idx); free(counts); free(offsets); free(rank_counts); free(rank_offsets); free(slot); free(row_token);
    free(kept); free(dropped); free(sim_dropped);
    routing_sample_free(&r);
    routing_ctx_free(ctx);
    return (long)total_dropped;
}

static void test_routing_and_dispatch_layout_drop_the_same(void **state) {
    (void)state;
    static const capacity_case cases[] = {
        /* a hot expert (60% of tokens) against capacity 1.25 x K/E: most of its pairs drop */
        {"hot, C = 1.25", ROUTE_HOT, 1.25, 4, 16, 2, 96},
        /* zipf skew, top-4, C = 1.0: several experts over capacity */
        {"zipf 1.2, top-4, C = 1.0", ROUTE_ZIPF, 1.0, 4, 16, 4, 64},
        /* uniform, tight C and a capacity that is not an integer before rounding (1.1 * 50 * 2 / 8) */
        {"uniform, C = 1.1", ROUTE_UNIFORM, 1.1, 8, 8, 2, 50},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        assert_true(check_case(&cases[c]) > 0);   /* every case exercises the drop */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing_and_dispatch_layout_drop_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
