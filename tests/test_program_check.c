/* test_program_check.c — program_check() says whether the step level can run a scenario without building
 * its program, and says it as program_build does. The truths are hand-checked layouts of the seed
 * (DeepSeek-V3: 256 experts, top-8, node_limit 4, on 512 x 8 H800):
 *   - the seed's PP16 EP64 DP4 runs (program_build succeeds);
 *   - PP1 with DualPipe cannot (DualPipe needs two opposite pipelines: an even pp), although
 *     scenario validation accepts one stage;
 *   - TP8 PP2 EP256 DP1 cannot: each node holds one EP rank, i.e. one expert, so 4 nodes hold 4
 *     experts, fewer than top_k = 8;
 * in both refusals with the error program_build gives (same exit code, same message). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sim/program/program.h"
#include "sim/scenario/scenario_load.h"

static void load_seed(scenario *s) {
    moe_error err = {0};
    assert_int_equal(scenario_load("scenarios/seed-4096.json", s, NULL, &err), 0);
}

static void layout(scenario *s, int tp, int pp, int ep, int dp) {
    s->layout.tp = tp;
    s->layout.pp = pp;
    s->layout.ep = ep;
    s->layout.dp = dp;
    moe_error err = {0};
    assert_int_equal(scenario_validate(s, &err), 0);   /* the scenario level accepts all three */
}

/* program_check refuses s exactly as program_build does, and its message names `what`. */
static void refused_like_build(const scenario *s, const char *what) {
    moe_error ce = {0}, be = {0};
    program *p = NULL;
    assert_int_equal(program_check(s, &ce), EXIT_BADINPUT);
    assert_int_equal(program_build(s, &p, &be), EXIT_BADINPUT);
    assert_null(p);
    assert_string_equal(ce.msg, be.msg);
    assert_non_null(strstr(ce.msg, what));
}

static void test_seed_runs(void **state) {
    (void)state;
    scenario s;
    load_seed(&s);
    moe_error err = {0};
    assert_int_equal(program_check(&s, &err), 0);
    program *p = NULL;
    assert_int_equal(program_build(&s, &p, &err), 0);
    program_free(p);
}

/* DualPipe at one stage: no pipeline, the program 1F1B's op for op (schedule_rules.h) */
static void test_dualpipe_one_stage(void **state) {
    (void)state;
    scenario s;
    load_seed(&s);
    s.model.layers = 4;   /* a short program: the schedule, not the model, is under test */
    s.model.dense_layers = 1;
    layout(&s, 4, 1, 64, 16);
    moe_error err = {0};
    assert_int_equal(program_check(&s, &err), 0);
    program *dual = NULL, *plain = NULL;
    assert_int_equal(program_build(&s, &dual, &err), 0);
    s.layout.schedule = SCHED_1F1B;
    assert_int_equal(program_build(&s, &plain, &err), 0);
    assert_int_equal(dual->n_chunks, plain->n_chunks);
    assert_int_equal(dual->stage_n_ops[0], plain->stage_n_ops[0]);
    for (int i = 0; i < dual->stage_n_ops[0]; i++) {
        const program_op *a = &dual->stage_ops[0][i], *b = &plain->stage_ops[0][i];
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->kernel, b->kernel);
        assert_int_equal(a->mb, b->mb);
        assert_int_equal(a->layer, b->layer);
        assert_int_equal(a->phase, b->phase);
    }
    program_free(dual);
    program_free(plain);
    /* two stages and too few micro-batches for DualPipe: refused when the scenario is read */
    load_seed(&s);
    s.layout.global_batch = 256 * 20;   /* PP16: 20 < 32 micro-batches */
    assert_int_equal(scenario_validate(&s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "layout.global_batch"));
    /* and the program layer's own check says the same */
    assert_int_equal(program_check(&s, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "at least 2*pp"));
}

static void test_node_limit_one_expert_per_node(void **state) {
    (void)state;
    scenario s;
    load_seed(&s);
    layout(&s, 8, 2, 256, 1);
    refused_like_build(&s, "routing.node_limit");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_runs),
        cmocka_unit_test(test_dualpipe_one_stage),
        cmocka_unit_test(test_node_limit_one_expert_per_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
