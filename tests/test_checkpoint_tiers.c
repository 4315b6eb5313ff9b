/* test_checkpoint_tiers.c — checkpoint tiers (host memory, a peer's host memory, local NVMe, the
 * parallel file system): which copies a failure leaves, which one a restart reads, what each tier
 * costs, on timelines solved by hand; the closed-form jump over steady checkpoint cycles against the
 * event-by-event run; the tier times against their definitions.
 *
 * The cluster: 8 nodes x 8 GPUs, 2 nodes per rack, 36 s steps (1000 tokens each), async checkpoints
 * every 100 steps (1 h), 64 GB of state: 1 GB per GPU, 8 GB per node. Tier times, chosen round:
 *   host  snapshot and read at 1 GB/s per GPU: 1 s
 *   peer  replicate at 0.08 GB/s per node: 100 s, read at 0.8 GB/s: 10 s
 *   nvme  write at 0.04 GB/s: 200 s, read at 0.4 GB/s: 20 s
 *   pfs   write 5 min (write_min), read at 0.16 GB/s for 8 nodes (0.02 GB/s each): 400 s
 * Swap 90 s and full restart 600 s, both without the state load; 2 hot spares.
 * Without failures: steps 100..500 at 3600 s apart plus 1 s per snapshot; the last snapshot (step
 * 500, t = 18004) is written to the file system by 18305 = the wall time. Snapshot 200 is taken at
 * t = 7201 after 7200 s of compute; a failure at 9000 s (8998 s of compute) loses 1798 s. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim/plan/checkpoint_write.h"
#include "sim/run/trainrun.h"
#include "sim/scenario/components.h"
#include "sim/scenario/scenario_defaults.h"
#include "run_fixtures.h"

#define NOFAIL 18305.0
#define LOST_AT_9000 1798.0

/* tests/run_fixtures.h's cluster with async checkpoints and every tier, at the times above. */
static scenario tiers_scenario(const char *log) {
    scenario s = run_fixture(log, 500);
    checkpoint_cfg *ck = &s.reliability.checkpoint;
    ck->mode = CKPT_ASYNC;
    ck->snapshot_GBps = 1;
    ck->tiers = (ckpt_tiers_cfg){.enabled = 1, .host_survives_restart = 1, .peer = 1, .peer_GBps = 0.08,
                                 .peer_read_GBps = 0.8, .peer_step_slowdown = 1, .peer_offset_nodes = 0,
                                 .nvme = 1, .nvme_write_GBps = 0.04, .nvme_read_GBps = 0.4,
                                 .pfs_every = 1, .pfs_read_GBps = 0.16};
    return s;
}


static void assert_near(double got, double want, const char *what) {
    if (fabs(got - want) > 1e-6 * (1 + fabs(want)))
        fail_msg("%s: got %.9g, want %.9g", what, got, want);
}

/* The tier times are their definitions (checkpoint_write.h) with the figures above. */
static void test_tier_times(void **state) {
    (void)state;
    scenario s = tiers_scenario(NULL);
    checkpoint_tier_times t;
    checkpoint_tier_times_resolve(&s, 64e9, &t);
    assert_near(t.snapshot_s, 1, "snapshot");
    assert_near(t.host_read_s, 1, "host read");
    assert_near(t.peer_write_s, 100, "peer write");
    assert_near(t.peer_read_s, 10, "peer read");
    assert_near(t.nvme_write_s, 200, "nvme write");
    assert_near(t.nvme_read_s, 20, "nvme read");
    assert_near(t.pfs_write_s, 300, "pfs write");
    assert_near(t.pfs_read_s, 400, "pfs read");
    assert_int_equal(t.peer_offset_nodes, 2);   /* auto: one rack of 2 nodes over */
    /* "auto": replication at one NIC (50 GB/s) of the node's 8 x 50 GB/s: slowdown 1 / (1 - 1/8) */
    s.reliability.checkpoint.tiers.peer_GBps = -1;
    s.reliability.checkpoint.tiers.peer_step_slowdown = -1;
    checkpoint_tier_times_resolve(&s, 64e9, &t);
    assert_near(t.peer_write_s, 8e9 / 50e9, "peer write, one NIC");
    assert_near(t.peer_step_slowdown, 8.0 / 7.0, "peer slowdown bound");
}

static void test_no_failures(void **state) {
    (void)state;
    scenario s = tiers_scenario(NULL);
    trainrun_result r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL, "wall");
    assert_near(r.checkpoint_hours_mean, (5 + 300) / 3600.0, "pauses and the wait for the last write");
    /* replication at half speed: the 100 s after each of the 4 inner snapshots do 50 s of steps */
    s.reliability.checkpoint.tiers.peer_step_slowdown = 2;
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + 4 * 50, "wall with the replication slowing training");
    assert_near(r.replicate_slow_hours_mean, 4 * 50 / 3600.0, "replication cost");
}

/* A GPU of node 1 fails at 2:30: node 1's host memory and NVMe go with it; its replica lives on
 * node 3 (one rack over), which holds step 200 as the file system does: the peer is read (10 s),
 * not the file system (400 s). */
static void test_node_loss_reads_peer(void **state) {
    (void)state;
    scenario s = tiers_scenario("tests/data/failures/gpu_node1_2p5h.csv");
    trainrun_result r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 90 + 10, "wall");
    assert_near(r.restores_by_tier_mean[TIER_PEER], 1, "peer restores");
    assert_near(r.lost_hours_by_tier_mean[TIER_PEER], LOST_AT_9000 / 3600, "lost by peer restores");
    assert_near(r.restore_hours_by_tier_mean[TIER_PEER], 10 / 3600.0, "peer read time");
    assert_near(r.restores_by_tier_mean[TIER_PFS] + r.restores_by_tier_mean[TIER_HOST], 0, "others");
    /* without the peer tier: the file system, same step, 400 s */
    s.reliability.checkpoint.tiers.peer = 0;
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 90 + 400, "wall, no peer");
    assert_near(r.restores_by_tier_mean[TIER_PFS], 1, "pfs restores");
}

/* A rack (nodes 0 and 1) fails at 2:30. Replicas one rack over (auto) survive; replicas on the
 * neighbour node (offset 1: node 0's on node 1) do not, so the restart reads the file system. */
static void test_rack_loss_and_peer_placement(void **state) {
    (void)state;
    scenario s = tiers_scenario("tests/data/failures/rack_2p5h.csv");
    trainrun_result r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 90 + 10, "wall, replicas a rack away");
    s.reliability.checkpoint.tiers.peer_offset_nodes = 1;
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 90 + 400, "wall, replicas in the same rack");
    assert_near(r.restores_by_tier_mean[TIER_PFS], 1, "pfs restore");
    /* the file system every 3rd checkpoint: at 2:30 it holds only the initial state (step 0) */
    s.reliability.checkpoint.tiers.pfs_every = 3;
    r = run_fixture_simulate(&s);
    assert_near(r.lost_hours_by_tier_mean[TIER_PFS], 8998 / 3600.0, "lost back to step 0");
}

/* Software fails at 2:30 and the job restarts in place (600 s): the snapshot held outside the
 * process is read from host memory (1 s); if the restart loses it, from the NVMe (20 s), and
 * without NVMe from the peer (10 s). */
static void test_restart_in_place(void **state) {
    (void)state;
    scenario s = tiers_scenario("tests/data/failures/software_2p5h.csv");
    trainrun_result r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 600 + 1, "host");
    assert_near(r.restores_by_tier_mean[TIER_HOST], 1, "host restore");
    s.reliability.checkpoint.tiers.host_survives_restart = 0;
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 600 + 10, "peer is faster than nvme");
    s.reliability.checkpoint.tiers.peer = 0;
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + LOST_AT_9000 + 600 + 20, "nvme");
    assert_near(r.restores_by_tier_mean[TIER_NVME], 1, "nvme restore");
}

/* Copies count once written. At 3650 s step 100's snapshot is only in node 1's host memory (lost)
 * and its replica is still being written (until 3701): back to step 0 on the file system, 3649 s of
 * compute lost, and the snapshot pause of 3600 s wasted too. At 3750 s the replica is complete but
 * the file system's copy (until 3901) is not: the peer's step 100, 149 s lost. */
static void test_copies_count_once_written(void **state) {
    (void)state;
    scenario s = tiers_scenario("tests/data/failures/gpu_node1_3650s.csv");
    trainrun_result r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + 3649 + 1 + 90 + 400, "back to the start");
    assert_near(r.lost_hours_by_tier_mean[TIER_PFS], 3649 / 3600.0, "lost");
    s = tiers_scenario("tests/data/failures/gpu_node1_3750s.csv");
    r = run_fixture_simulate(&s);
    assert_near(run_fixture_wall_s(&r), NOFAIL + 149 + 90 + 10, "back to the peer's step 100");
}

/* A loss spike rolls back in place: the host snapshot, 1 s (before the first snapshot exists: the
 * initial state on the file system, 400 s). */
static void test_spike_reads_host(void **state) {
    (void)state;
    scenario s = tiers_scenario(NULL);
    s.reliability.loss_spikes = (loss_spikes_cfg){.per_day = 20, .action = SPIKE_ROLLBACK};
    s.run.trials = 50;
    trainrun_result r = run_fixture_simulate(&s);
    assert_true(r.loss_spikes_mean > 1);
    double host = r.restores_by_tier_mean[TIER_HOST], pfs = r.restores_by_tier_mean[TIER_PFS];
    assert_true(host > pfs);
    assert_near(host + pfs, r.loss_spikes_mean, "every spike reads host memory or the initial state");
    assert_near(r.restore_hours_by_tier_mean[TIER_HOST], host / 3600.0, "1 s each");
    assert_near(r.restore_hours_by_tier_mean[TIER_PFS], pfs * 400 / 3600.0, "400 s each");
}

/* The closed-form jump over steady cycles (fast_forward) against the event-by-event run (event
 * reporting switches the jump off): drawn failures of every kind incl. racks, the file system every
 * 3rd checkpoint, replication slowing training, 10 trials, 2000 steps. Same wall time per trial. */
static int n_events;
static void count_event(const trainrun_event *ev, void *user) {
    (void)ev;
    (void)user;
    n_events++;
}

static void test_jump_equals_event_run(void **state) {
    (void)state;
    scenario s = tiers_scenario(NULL);
    components_default(s.reliability.components);
    for (int k = 0; k < COMP_NKINDS; k++) s.reliability.components[k].mtbf_h /= 400;   /* ~6 h MTBF */
    s.reliability.components[COMP_RACK].mtbf_h = 2000;
    s.reliability.checkpoint.interval_min = 20;
    s.reliability.checkpoint.tiers.pfs_every = 3;
    s.reliability.checkpoint.tiers.peer_step_slowdown = 1.3;
    s.run.tokens = 2000 * 1000.0;
    s.run.trials = 10;
    trainrun_result all = run_fixture_simulate(&s);
    double sum = 0;
    for (int i = 0; i < 10; i++) {
        trainrun_result one;
        moe_error err = {0};
        if (trainrun_trial_events(&s, NULL, RUN_FIXTURE_STEP_S, i, count_event, NULL, &one, &err)) fail_msg("%s", err.msg);
        sum += one.days_mean;
    }
    print_message("jump %.9f days, events %.9f days (%d events); %.2f failures per trial\n",
                  all.days_mean, sum / 10, n_events, all.failures_mean);
    assert_true(all.failures_mean > 3);
    assert_true(fabs(all.days_mean - sum / 10) < 1e-9 * all.days_mean);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier_times),
        cmocka_unit_test(test_no_failures),
        cmocka_unit_test(test_node_loss_reads_peer),
        cmocka_unit_test(test_rack_loss_and_peer_placement),
        cmocka_unit_test(test_restart_in_place),
        cmocka_unit_test(test_copies_count_once_written),
        cmocka_unit_test(test_spike_reads_host),
        cmocka_unit_test(test_jump_equals_event_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
