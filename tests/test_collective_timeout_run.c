/* test_collective_timeout_run.c — the run level's collective timeouts (faults.collective_timeout_s and
 * the step level's share of steps that time out), on the hand-solved timeline of run_fixtures.h:
 * 36 s steps, a 10 min full restart, no failures, sync checkpoints every 100 steps.
 *
 * A step that always times out (fraction 1): the job trains until the first timeout, hangs there for
 * the 600 s timeout (the detection delay), restarts in place for 600 s and rolls back to the start;
 * it never reaches the first checkpoint, so every cycle is 1200 s of recovery plus the steps before
 * the next timeout (Exp(1) steps of 36 s: 36 s on average). Over one day that is between
 * 86400 / (1200 + 360) = 55 cycles (were every cycle to run 10 steps) and 86400 / 1200 = 72. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tests/run_fixtures.h"

static void test_always_times_out(void **state) {
    (void)state;
    scenario s = run_fixture(NULL, 1000);
    s.run.max_days = 1;
    s.faults.collective_timeout_s = 600;
    run_fixture_events log = {0};
    trainrun_result r;
    moe_error err = {0};
    assert_int_equal(trainrun_trial_events_timeouts(&s, NULL, RUN_FIXTURE_STEP_S, 1.0, 0, run_fixture_keep, &log, &r, &err), 0);
    /* the first events: the timeout, the rollback to the start, the recovery (600 s hang + 600 s
     * restart), the resume */
    assert_true(log.n >= 4);
    assert_int_equal(log.ev[0].kind, TR_EV_COLLECTIVE_TIMEOUT);
    assert_true(log.ev[0].value == 600);
    assert_int_equal(log.ev[1].kind, TR_EV_ROLLBACK);
    assert_int_equal(log.ev[2].kind, TR_EV_RECOVERY_START);
    assert_true(log.ev[2].time_s == log.ev[0].time_s);
    assert_int_equal(log.ev[2].recovery_kind, 3);   /* full restart in place */
    assert_true(fabs(log.ev[2].value - 1200) < 1e-9);
    assert_int_equal(log.ev[3].kind, TR_EV_RESUME);
    assert_true(fabs(log.ev[3].time_s - log.ev[0].time_s - 1200) < 1e-6);
    /* it never completes: every cycle rolls back to the start */
    assert_int_equal(r.completed_fraction_pct, 0);
    assert_true(r.collective_timeouts_mean >= 55 && r.collective_timeouts_mean <= 72);
    assert_true(r.failures_mean == 0);
    /* detection: one timeout per cycle, all but possibly the last hang fully inside the day */
    assert_true(fabs(r.detect_hours_mean * 3600 - 600 * r.collective_timeouts_mean) <= 600 + 1e-6);
}

/* No timeouts (fraction 0, or no timeout set): the run is exactly the one without them. */
static void test_no_timeouts_unchanged(void **state) {
    (void)state;
    scenario s = run_fixture(NULL, 1000);
    s.faults.collective_timeout_s = 600;
    trainrun_result a = run_fixture_simulate(&s), b;
    moe_error err = {0};
    assert_int_equal(trainrun_simulate_timeouts(&s, NULL, RUN_FIXTURE_STEP_S, 0, &b, &err), 0);
    assert_true(a.days_mean == b.days_mean && a.ettr == b.ettr);
    assert_true(b.collective_timeouts_mean == 0);
    s.faults.collective_timeout_s = 0;
    assert_int_equal(trainrun_simulate_timeouts(&s, NULL, RUN_FIXTURE_STEP_S, 0.5, &b, &err), 0);
    assert_true(a.days_mean == b.days_mean && b.collective_timeouts_mean == 0);
    /* a fraction outside [0, 1] is bad input */
    s.faults.collective_timeout_s = 600;
    assert_int_equal(trainrun_simulate_timeouts(&s, NULL, RUN_FIXTURE_STEP_S, 1.5, &b, &err), EXIT_BADINPUT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_always_times_out),
        cmocka_unit_test(test_no_timeouts_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
