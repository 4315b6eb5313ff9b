/* test_step_sequence_run.c — the run level replaying the step level's series in order
 * (run.step_sequence "cycle", sim/run/step_clock.h), on hand-solved timelines of run_fixtures.h's
 * small cluster (no drawn failures, a 5 min sync write, swap 90 s, full restart 10 min):
 *   - the clock: C(x) of a series and its inverse, and the next timed-out step's end, by hand;
 *   - a series [1, 1, 1, 10] s cycled over 1,000 steps with no checkpoint and no failure takes
 *     250 x 13 = 3,250 s exactly, and with a 300 s checkpoint every 8 steps (and one at the end)
 *     3,250 + 125 x 300 = 40,750 s, in the event loop and in its closed-form jumps alike (async
 *     checkpoints and slow nodes too: the jumps end where the event loop does);
 *   - a failure during a checkpoint's write: the steps redone take their own indexes' times;
 *   - a timed-out step k with checkpoints every 2 steps: the job hangs at the end of step k's time,
 *     rolls back to the checkpoint before it, and redoes step k-1 and step k, which hangs again,
 *     every cycle 1,201.5 s, 72 times in a day (the seed's "then a hang" incident);
 *   - the "mean" rule and no series give the one-step-time run, bit for bit, and the results say
 *     which rule was used and how long the series is;
 *   - a bad series is refused with exit 2 naming its path and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "run_fixtures.h"
#include "sim/run/step_clock.h"

static const double SPIKY[4] = {1, 1, 1, 10};

static void test_clock_by_hand(void **state) {
    (void)state;
    step_clock c;
    int at;
    unsigned char hung[4] = {0, 0, 1, 0};
    assert_int_equal(step_clock_series(&c, SPIKY, hung, 4, &at), 0);
    assert_true(c.step_s == 3.25 && c.cycle_s == 13 && c.min_s == 1);
    assert_true(step_clock_at(&c, 0) == 0);
    assert_true(step_clock_at(&c, 3) == 3);
    assert_true(step_clock_at(&c, 3.5) == 8);            /* half of the 10 s step */
    assert_true(step_clock_at(&c, 4) == 13);
    assert_true(step_clock_at(&c, 9) == 2 * 13 + 1);      /* step 9 is series step 1 */
    assert_true(step_clock_at(&c, 1000) == 3250);
    assert_true(step_clock_span(&c, 2, 4, 0, 2) == 22);   /* 11 s at half speed */
    assert_true(step_clock_after(&c, 0, 8, 0, 1) == 3.5);
    assert_true(step_clock_after(&c, 2, 11, 0, 1) == 4);
    assert_true(step_clock_after(&c, 1, 2 * 13, 0, 1) == 9);
    /* the timed-out step 2 ends at 3, then 7, 11, ... */
    assert_true(step_clock_next_hang(&c, 0) == 3);
    assert_true(step_clock_next_hang(&c, 2.5) == 3);
    assert_true(step_clock_next_hang(&c, 3) == 7);
    assert_true(step_clock_next_hang(&c, 6.99) == 7);
    step_clock_free(&c);
    /* one step time: the plain products */
    step_clock_const(&c, 36);
    assert_true(step_clock_at(&c, 10) == 360 && step_clock_span(&c, 1, 3, 72, 2) == 144);
    assert_true(isinf(step_clock_next_hang(&c, 0)));
    /* refused: a completed step of no time, a negative one, an empty series */
    const double zero[2] = {1, 0}, neg[2] = {1, -1};
    assert_int_equal(step_clock_series(&c, zero, NULL, 2, &at), -1);
    assert_int_equal(at, 1);
    assert_int_equal(step_clock_series(&c, neg, NULL, 2, &at), -1);
    assert_int_equal(at, 1);
    assert_int_equal(step_clock_series(&c, SPIKY, NULL, 0, &at), -1);
    /* a timed-out step may end its time at once: the hang starts with the step */
    unsigned char last[2] = {0, 1};
    assert_int_equal(step_clock_series(&c, zero, last, 2, &at), 0);
    assert_true(step_clock_next_hang(&c, 0) == 2 && step_clock_after(&c, 0, 1, 0, 1) == 2);
    step_clock_free(&c);
}

/* run_fixtures' cluster, `steps` steps, no failures; `k` steps per checkpoint at the series' mean
 * (0: no checkpoints) */
static scenario series_scenario(double steps, double mean_s, int k) {
    scenario s = run_fixture(NULL, steps);
    if (k > 0) s.reliability.checkpoint.interval_min = k * mean_s / 60.0;
    else s.reliability.checkpoint.policy = CKPT_NONE;
    return s;
}

/* The first events into `log`, and the last one's time (the trial's end). */
typedef struct {
    run_fixture_events *log;
    trainrun_event last;
} trial_end;

static void keep_end(const trainrun_event *ev, void *user) {
    trial_end *e = user;
    run_fixture_keep(ev, e->log);
    e->last = *ev;
}

static double done_time(const scenario *s, const trainrun_steps *in, run_fixture_events *log) {
    trainrun_result r;
    moe_error err = {0};
    memset(log, 0, sizeof *log);
    trial_end end = {.log = log};
    if (trainrun_trial_events_steps(s, NULL, in, 0, keep_end, &end, &r, &err)) fail_msg("%s", err.msg);
    assert_true(log->n > 0);
    assert_int_equal(end.last.kind, TR_EV_DONE);
    return end.last.time_s;
}

static void test_cycled_series_by_hand(void **state) {
    (void)state;
    trainrun_steps in = {.step_time_s = 99, .series_n = 4, .series_s = SPIKY};
    run_fixture_events log;
    /* no checkpoints: 250 cycles of 13 s */
    scenario s = series_scenario(1000, 3.25, 0);
    assert_true(done_time(&s, &in, &log) == 3250);
    trainrun_result r;
    moe_error err = {0};
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &r, &err), 0);
    assert_true(fabs(r.days_mean * 86400 - 3250) < 1e-9 && fabs(r.days_p95 - r.days_p5) * 86400 < 1e-9);
    assert_true(r.ettr == 1);   /* the work kept is the series' own time */
    assert_string_equal(r.step_sequence, "cycle");
    assert_int_equal(r.series_steps, 4);
    assert_true(r.series_mean_s == 3.25);
    /* a 300 s sync write every 8 steps (26 s of series) and at the end: 125 writes */
    s = series_scenario(1000, 3.25, 8);
    assert_true(done_time(&s, &in, &log) == 3250 + 125 * 300);
    int starts = 0;
    for (int i = 0; i < log.n; i++) {
        if (log.ev[i].kind != TR_EV_CHECKPOINT_START) continue;
        starts++;
        /* boundary j at 8 j steps: j cycles of 26 s and j - 1 writes before it */
        assert_true(log.ev[i].time_s == starts * 26.0 + (starts - 1) * 300.0);
    }
    assert_int_equal(starts, 125);
    /* the closed-form jumps over whole checkpoint cycles give the same */
    assert_int_equal(trainrun_simulate_no_search(&s, NULL, 3.25, &r, &err), 0);   /* the mean rule's run */
    double mean_days = r.days_mean;
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &r, &err), 0);
    assert_true(fabs(r.days_mean * 86400 - 40750) < 1e-9);
    /* 8 steps of the series are 26 s, as 8 steps at its mean: here the two rules agree */
    assert_true(fabs(mean_days * 86400 - 40750) < 1e-6);
    /* async, a checkpoint every 400 steps (100 cycles, 1,300 s): training pauses for the snapshot
     * only, the 300 s write hides behind the next 400 steps (400 x the 1 s shortest step >= 300 s, so
     * the closed form jumps too), and the last write drains: 3,250 s + 3 snapshots + 300 s */
    s.reliability.checkpoint.mode = CKPT_ASYNC;
    s.reliability.checkpoint.interval_min = 400 * 3.25 / 60.0;
    double t_async = done_time(&s, &in, &log);
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &r, &err), 0);
    assert_true(r.checkpoint_pause_s > 0 && r.checkpoint_pause_s < 300);
    assert_true(fabs(t_async - (3250 + 3 * r.checkpoint_pause_s + 300)) < 1e-9);
    assert_true(fabs(r.days_mean * 86400 - t_async) < 1e-9);
    /* two slow nodes (2x) for 10 min each, taken out by a spare swap: the closed-form jumps run the
     * slow stretches at the same pace as the event loop, step by step */
    s = series_scenario(20000, 3.25, 8);
    s.reliability.stragglers = (stragglers_cfg){.fraction = 0.25, .slowdown = 2, .detect_min = 10};
    s.run.trials = 1;
    t_async = done_time(&s, &in, &log);
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &r, &err), 0);
    assert_true(r.stragglers_mean == 2);
    assert_true(fabs(r.days_mean * 86400 - t_async) < 1e-6);
    assert_true(t_async > 20 * 3250 + 2500 * 300 + 2 * 90);   /* slower than without them */
}

/* A GPU fails at 16.2 s, during the first checkpoint's write (steps 0 and 1 took 2 s, the write runs
 * from 2 s to 302 s): the write is lost, the job rolls back to the start (2 s of compute lost), swaps
 * in a spare (90 s) and resumes at 106.2 s; then every 2 steps a write: steps (0, 1) take 2 s, (2, 3)
 * 11 s, 12 steps are 3 x 13 s and 6 writes. */
static void test_failure_redoes_steps_at_their_index(void **state) {
    (void)state;
    char path[] = "/tmp/moesim-seqfail-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "time_h,component,rank\n0.0045,gpu,9\n");
    fclose(f);
    scenario s = run_fixture(path, 12);
    s.reliability.checkpoint.interval_min = 2 * 3.25 / 60.0;
    trainrun_steps in = {.step_time_s = 99, .series_n = 4, .series_s = SPIKY};
    run_fixture_events log;
    double t = done_time(&s, &in, &log);
    unlink(path);
    double fail_s = 0.0045 * 3600;
    assert_true(fabs(t - (fail_s + 90 + 3 * 13 + 6 * 300)) < 1e-9);
    int seen = 0;
    for (int i = 0; i < log.n; i++) {
        if (log.ev[i].kind == TR_EV_ROLLBACK) { assert_true(log.ev[i].value == 2); seen++; }
        if (log.ev[i].kind == TR_EV_CHECKPOINT_START && seen && log.ev[i].value == 4)   /* after steps 2, 3 */
            assert_true(fabs(log.ev[i].time_s - (fail_s + 90 + 2 + 300 + 11)) < 1e-9);
    }
    assert_int_equal(seen, 1);
}

/* Series [1, 1, 1, 0.5 then a hang]: step 3 timed out. Checkpoints every 2 steps (a 300 s write),
 * NCCL's timeout 600 s, a full restart 600 s, one day. Steps 0, 1 end at 2 s; the write to 302 s;
 * step 2 to 303 s; step 3 runs 0.5 s and hangs: at 303.5 s the timeout (its 600 s hang is the
 * detection), the rollback of 1.5 s of compute to the checkpoint at step 2, 1,200 s of recovery, the
 * resume at 1,503.5 s; step 2 again 1 s, step 3 again 0.5 s and its hang at 1,505 s: a cycle of
 * 1,201.5 s. Timeouts at 303.5 + 1,201.5 j <= 86,400: j = 0..71, 72 of them; the run never ends. */
static void test_timed_out_step_hangs_where_it_happened(void **state) {
    (void)state;
    const double series[4] = {1, 1, 1, 0.5};
    const unsigned char hung[4] = {0, 0, 0, 1};
    trainrun_steps in = {.step_time_s = 99, .series_n = 4, .series_s = series, .series_timed_out = hung};
    scenario s = series_scenario(1000, 3.5 / 4, 2);
    s.faults.collective_timeout_s = 600;
    s.run.max_days = 1;
    run_fixture_events log = {0};
    trainrun_result r;
    moe_error err = {0};
    assert_int_equal(trainrun_trial_events_steps(&s, NULL, &in, 0, run_fixture_keep, &log, &r, &err), 0);
    const struct { trainrun_event_kind kind; double t, value; } want[] = {
        {TR_EV_CHECKPOINT_START, 2, 2}, {TR_EV_CHECKPOINT_DONE, 302, 2},
        {TR_EV_COLLECTIVE_TIMEOUT, 303.5, 600}, {TR_EV_ROLLBACK, 303.5, 1.5},
        {TR_EV_RECOVERY_START, 303.5, 1200}, {TR_EV_RESUME, 1503.5, 0},
        {TR_EV_COLLECTIVE_TIMEOUT, 1505, 600},
    };
    assert_true(log.n >= 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(log.ev[i].kind, want[i].kind);
        assert_true(fabs(log.ev[i].time_s - want[i].t) < 1e-9);
        assert_true(fabs(log.ev[i].value - want[i].value) < 1e-9);
    }
    assert_int_equal(log.ev[4].recovery_kind, 3);   /* a full restart in place */
    assert_true(r.collective_timeouts_mean == 72);
    assert_int_equal(r.completed_fraction_pct, 0);
    assert_int_equal(r.series_timed_out_steps, 1);
    /* a run of 3 steps never reaches the timed-out step: steps 0..2 and two writes */
    s = series_scenario(3, 3.5 / 4, 2);
    s.faults.collective_timeout_s = 600;
    run_fixture_events l2;
    assert_true(done_time(&s, &in, &l2) == 3 + 2 * 300);
}

/* "mean" and no series: the one-step-time run, bit for bit; the results name the rule */
static void test_mean_rule_and_no_series(void **state) {
    (void)state;
    scenario s = run_fixture(NULL, 1000);
    s.faults.collective_timeout_s = 600;
    s.run.trials = 4;
    trainrun_result a, b, c;
    moe_error err = {0};
    assert_int_equal(trainrun_simulate_timeouts(&s, NULL, 40, 0.001, &a, &err), 0);
    const unsigned char hung[4] = {0, 0, 0, 1};
    trainrun_steps in = {.step_time_s = 40, .timeout_fraction = 0.001, .series_n = 4, .series_s = SPIKY,
                         .series_timed_out = hung};
    s.run.step_sequence = RUN_STEPS_MEAN;
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &b, &err), 0);
    assert_true(a.days_mean == b.days_mean && a.days_p95 == b.days_p95 && a.ettr == b.ettr &&
                a.collective_timeouts_mean == b.collective_timeouts_mean);
    assert_null(a.step_sequence);
    assert_string_equal(b.step_sequence, "mean");
    assert_int_equal(b.series_steps, 4);
    cJSON *ja = cJSON_CreateObject(), *jb = cJSON_CreateObject();
    trainrun_result_to_json(&a, ja);
    trainrun_result_to_json(&b, jb);
    assert_null(cJSON_GetObjectItemCaseSensitive(ja, "step_sequence"));   /* no series: today's keys */
    const cJSON *sq = cJSON_GetObjectItemCaseSensitive(jb, "step_sequence");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(sq, "rule")->valuestring, "mean");
    assert_true(cJSON_GetObjectItemCaseSensitive(sq, "series_steps")->valuedouble == 4);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    /* a one-entry "series" is no series */
    s.run.step_sequence = RUN_STEPS_CYCLE;
    in.series_n = 1;
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &c, &err), 0);
    assert_true(a.days_mean == c.days_mean && a.ettr == c.ettr);
    assert_null(c.step_sequence);
}

static void test_bad_series(void **state) {
    (void)state;
    scenario s = series_scenario(100, 1, 0);
    snprintf(s.file, sizeof s.file, "replay.json");
    const double bad[3] = {1, -2, 1};
    trainrun_steps in = {.step_time_s = 1, .series_n = 3, .series_s = bad};
    trainrun_result r;
    moe_error err = {0};
    assert_int_equal(trainrun_simulate_steps(&s, NULL, &in, &r, &err), EXIT_BADINPUT);
    if (!strstr(err.msg, "replay.json") || !strstr(err.msg, "step.steps.series.step_time_s") || !strstr(err.msg, "-2"))
        fail_msg("error lacks file/path/value: %s", err.msg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock_by_hand),
        cmocka_unit_test(test_cycled_series_by_hand),
        cmocka_unit_test(test_failure_redoes_steps_at_their_index),
        cmocka_unit_test(test_timed_out_step_hangs_where_it_happened),
        cmocka_unit_test(test_mean_rule_and_no_series),
        cmocka_unit_test(test_bad_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
