/* test_loss_spikes.c — loss spikes and their defences (seed 000 section 3.2) at the run level:
 * which defence stops a spike, against the closed forms of the defence chain; what each costs.
 *
 * A spiking batch's activation norm over the healthy mean is lognormal (median m, sigma s); the
 * monitor skips it when that ratio exceeds the threshold T, so with the monitor armed
 * P(skip) = 1 - Phi((ln T - ln m) / s) (GSL's gsl_cdf_ugaussian_P gives Phi). Under FP16 compute a
 * share f overflows (an Inf norm: always skipped by an armed monitor, never tamed by clipping);
 * clipping tames a share c of the finite spikes it sees. So, with the monitor on,
 *   skipped = f + (1 - f) q,  clipped = (1 - f)(1 - q) c,  rolled back = the rest   (q = P(skip))
 * and with it off q = 0 and f counts with the rolled back. Counts over many spikes are binomial:
 * bounds of 5 standard errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>

#include "run_fixtures.h"

/* No failures, sync checkpoints every 100 steps with a 5 min write, 20,000 steps of 36 s (200 h),
 * 40 spikes a day: ~330 per trial. */
static scenario spike_scenario(dtype_kind compute) {
    scenario s = run_fixture(NULL, 20000);
    s.precision.compute = compute;
    s.reliability.loss_spikes = (loss_spikes_cfg){.per_day = 40, .action = SPIKE_DEFEND, .monitor = 1,
                                                  .monitor_threshold = 5, .monitor_window_steps = 0,
                                                  .norm_ratio_median = 10, .norm_ratio_sigma = 1.5,
                                                  .clipping = 1, .clip_fraction = 0.5,
                                                  .fp16_overflow_fraction = 0.5};
    s.run.trials = 20;
    return s;
}

static void assert_share(double got, double n, double p, const char *what) {
    double se = sqrt(p * (1 - p) / n);
    print_message("%s: %.4f (closed form %.4f, se %.4f)\n", what, got / n, p, se);
    if (fabs(got / n - p) > 5 * se + 1e-12) fail_msg("%s: %.4f vs %.4f", what, got / n, p);
}

static void check_chain(const scenario *s, double f, double q, double c) {
    trainrun_result r = run_fixture_simulate(s);
    double n = r.loss_spikes_mean * r.trials;
    assert_true(n > 1000);
    assert_share(r.spikes_skipped_mean * r.trials, n, f + (1 - f) * q, "skipped");
    assert_share(r.spikes_clipped_mean * r.trials, n, (1 - f) * (1 - q) * c, "clipped");
    assert_true(fabs(r.spikes_skipped_mean + r.spikes_clipped_mean + r.spikes_rolled_back_mean -
                     r.loss_spikes_mean) < 1e-9);
}

static void test_defence_chain(void **state) {
    (void)state;
    double q = 1 - gsl_cdf_ugaussian_P((log(5) - log(10)) / 1.5);   /* 0.678 */
    scenario s = spike_scenario(DT_BF16);
    check_chain(&s, 0, q, 0.5);                        /* BF16: no overflow */
    s = spike_scenario(DT_FP16);
    check_chain(&s, 0.5, q, 0.5);                      /* FP16: half overflow, all of those skipped */
    s.reliability.loss_spikes.monitor = 0;
    trainrun_result r = run_fixture_simulate(&s);      /* no monitor: overflows all roll back */
    double n = r.loss_spikes_mean * r.trials;
    assert_true(r.spikes_skipped_mean == 0);
    assert_share(r.spikes_rolled_back_mean * r.trials, n, 0.5 + 0.5 * 0.5, "rolled back, FP16 unmonitored");
    s = spike_scenario(DT_BF16);
    s.reliability.loss_spikes.monitor = 0;
    s.reliability.loss_spikes.clipping = 0;
    r = run_fixture_simulate(&s);                      /* no defence: every spike rolls back */
    assert_true(r.spikes_rolled_back_mean == r.loss_spikes_mean);
}

/* The monitor watches only once its window has filled: a window longer than the run skips nothing. */
static void test_monitor_window(void **state) {
    (void)state;
    scenario s = spike_scenario(DT_BF16);
    s.reliability.loss_spikes.monitor_window_steps = 20000;
    trainrun_result r = run_fixture_simulate(&s);
    assert_true(r.loss_spikes_mean > 100 && r.spikes_skipped_mean == 0);
}

/* What each costs, with no failures. A skipped spike discards the part of its step done so far:
 * uniform over the step, 18 s on average. Clipping costs nothing. A rolled-back spike loses the
 * compute since the last checkpoint and reloads it (sync: the write read back, 300 s). Rollbacks
 * are a Poisson process of rate mu = rho x lambda per processed step (rho the rolled-back share,
 * lambda the spike rate), and every segment restarts at a checkpoint boundary (k steps) or at a
 * rollback, so the compute lost is the first arrival of that process in a segment given that it
 * comes before k: E[Y | Y < k] = 1/mu - k / (e^(mu k) - 1) steps. Checkpoints every 10 steps. */
static void test_costs(void **state) {
    (void)state;
    scenario s = spike_scenario(DT_BF16);
    s.reliability.checkpoint.interval_min = 6;   /* 10 steps */
    trainrun_result r = run_fixture_simulate(&s);
    double skipped = r.spikes_skipped_mean * r.trials, rolled = r.spikes_rolled_back_mean * r.trials;
    double skip_s = r.spike_skip_hours_mean * 3600 * r.trials / skipped;
    double roll_s = r.spike_rollback_hours_mean * 3600 * r.trials / rolled;
    const double step = RUN_FIXTURE_STEP_S, k = 10;
    double lambda = 40 / (86400 / step), mu = lambda * r.spikes_rolled_back_mean / r.loss_spikes_mean;
    double lost = (1 / mu - k / expm1(mu * k)) * step;
    print_message("skip %.2f s each (18 s), rollback %.1f s each (%.1f + 300 s)\n", skip_s, roll_s, lost);
    assert_true(fabs(skip_s - 18) < 5 * (step / sqrt(12)) / sqrt(skipped));
    assert_true(fabs(roll_s - (lost + 300)) < 5 * (k * step / sqrt(12)) / sqrt(rolled));
    /* everything the spikes cost is in the run's lost and restart hours */
    assert_true(r.spike_skip_hours_mean + r.spike_rollback_hours_mean <=
                r.lost_hours_mean + r.restart_hours_mean + 1e-9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defence_chain),
        cmocka_unit_test(test_monitor_window),
        cmocka_unit_test(test_costs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
