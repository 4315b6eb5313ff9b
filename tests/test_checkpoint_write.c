/* test_checkpoint_write.c — one checkpoint write time (sim/plan/checkpoint_write.h) for the plan and
 * the run level: on hand-solved cases both report the same write time and the same Daly interval.
 *
 * The seed cluster: 512 nodes, each behind one 400 Gb/s = 50 GB/s storage NIC (PCIe 64 GB/s does not
 * cap it). GPU MTBF 26,000 h over 4096 GPUs: M = 6.34765625 h = 22,851.5625 s. Daly's higher-order
 * interval (Daly 2006; sim/plan/reliability.h): tau = sqrt(2 d M) (1 + sqrt(x)/3 + x/9) - d,
 * x = d / 2M. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "sim/plan/checkpoint_write.h"
#include "sim/plan/plan.h"
#include "sim/run/trainrun.h"
#include "sim/scenario/scenario_defaults.h"

static void assert_rel(double got, double want, double tol, const char *what) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s: got %.12g, want %.12g (tolerance %.1g)", what, got, want, tol);
}

/* Plan, then the run level on that plan (one trial, the policy alone): both carry the write time
 * and the Daly interval; they must equal the hand values. */
static void check_plan_and_run(scenario *s, double write_s, double daly_min) {
    s->reliability.checkpoint.policy = CKPT_DALY;
    s->run.trials = 1;
    s->run.tokens = 1e12;   /* ~4000 steps: the run's inputs, not its Monte Carlo, are under test */
    moe_error err = {0};
    plan_result p;
    if (plan_evaluate(s, &p, &err)) fail_msg("plan_evaluate: %s", err.msg);
    trainrun_result r;
    if (trainrun_simulate_no_search(s, &p, p.step_time_s, &r, &err)) fail_msg("trainrun: %s", err.msg);
    print_message("write %.3f s (plan) %.3f s (run); Daly %.4f min (plan) %.4f min (run)\n",
                  p.checkpoint_write_s, r.checkpoint_write_s, p.daly_interval_min, r.daly_interval_min);
    assert_rel(p.checkpoint_write_s, write_s, 1e-12, "plan write time");
    assert_rel(r.checkpoint_write_s, write_s, 1e-12, "run write time");
    assert_rel(p.daly_interval_min, daly_min, 1e-9, "plan Daly interval");
    assert_rel(r.daly_interval_min, daly_min, 1e-9, "run Daly interval");
}

/* NIC-bound: the file system (51,200 GB/s) would give each of the 512 writers 100 GB/s, more than
 * its 50 GB/s NIC, so the write takes B / (512 x 50 GB/s) = 1.536e15 / 25.6e12 = 60 s (the file
 * system alone would say 30 s). d = 60 s: x = 0.00131282, sqrt(2 d M) = 1655.955 s, tau = 1616.197 s
 * = 26.9366 min. */
static void test_nic_bound_write(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.cluster.storage_GBps = 51200;
    s.reliability.checkpoint.state_bytes = 1.536e15;
    s.reliability.checkpoint.write_min = -1;
    assert_rel(storage_node_GBps(&s.cluster), 50.0, 0, "node storage bandwidth");
    check_plan_and_run(&s, 60.0, 1616.196714870422 / 60.0);
}

/* File-system-bound: 2000 GB/s shared by 512 nodes is 3.9 GB/s each, under the NIC: B / 2000 GB/s =
 * 1.536e15 / 2e12 = 768 s. d = 768 s: x = 0.016804, sqrt(2 d M) = 5924.53 s, tau = 5924.53 x
 * (1 + 0.043210 + 0.0018671) - 768 = 5423.59 s = 90.39 min. */
static void test_file_system_bound_write(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.cluster.storage_GBps = 2000;   /* set here: the case is hand-solved for 2000 GB/s */
    s.reliability.checkpoint.state_bytes = 1.536e15;
    s.reliability.checkpoint.write_min = -1;
    double M = 22851.5625, d = 768.0, x = d / (2 * M);
    double tau = sqrt(2 * d * M) * (1 + sqrt(x) / 3 + x / 9) - d;
    assert_rel(tau, 5423.59, 1e-6, "hand Daly interval");
    check_plan_and_run(&s, 768.0, tau / 60.0);
}

/* A given write time (reliability.checkpoint.write_min) overrides the storage model in both. */
static void test_given_write_time(void **state) {
    (void)state;
    scenario s;
    scenario_defaults(&s);
    s.reliability.checkpoint.write_min = 1.0;   /* the NIC-bound case's 60 s, given */
    check_plan_and_run(&s, 60.0, 1616.196714870422 / 60.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nic_bound_write),
        cmocka_unit_test(test_file_system_bound_write),
        cmocka_unit_test(test_given_write_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
