/* test_exec_exact.c — the fast executor's shortcuts are exact: on every step-level scenario the project
 * ships (each point of its sweep) and on the small cases of tests/data/exact (hot expert, slow GPU, NIC
 * and NVLink faults, expert TP, context parallelism, dp-inner), the run that simulates one healthy
 * replica and one rank of each TP group (step_exec.h: the replica shortcut and TP twins), advancing
 * the ranks of a replica's stage in lockstep (gangs), gives, bit for bit, what the run of every rank,
 * each on its own, gives: the step time, every rank's split, time inside all-to-alls,
 * last arrivals, every rank's op timeline, the worst all-to-all, the longest collective wait and the
 * first timeout. Both runs price with the scenario's cost model and its host side (step_host.h: the
 * issue times, the host syncs) and time communication on SimGrid
 * (comm_simgrid.h; one process per point: one platform per process).
 *
 * Not a comparison of a computation with itself: the per-rank run (shortcut = 0, per_rank) simulates
 * every rank, one at a time, and every TP index's EP group, ring and send on its own GPUs; the shortcut run simulates a half to
 * a 16th of the ranks and mirrors them. tests/data/exact/small-tp.json holds TP 2-8 layouts (1F1B,
 * DualPipe, interleaved, ZeRO-3 over two replicas, hot expert); the list also holds layouts where the
 * twins must not apply (TP across nodes, a slow GPU, degraded links: the count of simulated ranks
 * shows what ran). The exact comparison runs with identical GPUs (cluster.gpu.speed_cv = 0); with the
 * scenario's speed spread the shortcuts fold the mirrored ranks' factors, and the step is checked
 * against the run of every rank with its own factor within the fold's bound (speed_spread_bound). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exec/step_exec.h"
#include "sim/plan/costmodel.h"
#include "sim/program/program.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/simgrid/comm_simgrid.h"
#include "tests/fabric_fixtures.h"

static const char *const FILES[] = {
    "scenarios/seed-4096.json",           "scenarios/hot-expert.json",
    "scenarios/slow-gpu.json",            "scenarios/deepseek-v3-1024-h100.json",
    "scenarios/deepseek-v3-256-gb200.json", "scenarios/llama31-405b-1024-h100.json",
    "scenarios/qwen3-235b-256-h100.json", "scenarios/zero-stages-405b.json",
    "scenarios/hot-expert-eplb.json",     "scenarios/incident-cascading-hang.json",
    "tests/data/exact/small-variants.json", "tests/data/exact/small-faults.json",
    "tests/data/exact/small-tp.json",
};

static const char *g_file;
static int g_point;

static int same_split(const step_split *a, const step_split *b) {
    return a->compute_s == b->compute_s && a->optimizer_s == b->optimizer_s &&
           a->exposed_comm_s == b->exposed_comm_s && a->bubble_s == b->bubble_s && a->overhead_s == b->overhead_s;
}

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("  %s point %d: ", g_file, g_point);                                      \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            bad++;                                                                           \
        }                                                                                    \
    } while (0)

/* Compare the two runs; returns the number of differences. */
static int compare(const program *p, const step_exec_result *a, const step_exec_result *b) {
    int bad = 0;
    CHECK(a->step_time_s == b->step_time_s, "step %.17g s, per rank %.17g s", a->step_time_s, b->step_time_s);
    CHECK(a->slowest_rank == b->slowest_rank, "slowest rank %d, per rank %d", a->slowest_rank, b->slowest_rank);
    CHECK(a->max_collective_wait_s == b->max_collective_wait_s, "longest wait %.17g, per rank %.17g",
          a->max_collective_wait_s, b->max_collective_wait_s);
    CHECK(a->worst_a2a.group == b->worst_a2a.group && a->worst_a2a.layer == b->worst_a2a.layer &&
              a->worst_a2a.mb == b->worst_a2a.mb && a->worst_a2a.last_rank == b->worst_a2a.last_rank &&
              a->worst_a2a.spread_s == b->worst_a2a.spread_s && a->worst_a2a.start_s == b->worst_a2a.start_s,
          "worst all-to-all group %d layer %d mb %d last %d, per rank group %d layer %d mb %d last %d",
          a->worst_a2a.group, a->worst_a2a.layer, a->worst_a2a.mb, a->worst_a2a.last_rank, b->worst_a2a.group,
          b->worst_a2a.layer, b->worst_a2a.mb, b->worst_a2a.last_rank);
    CHECK(a->timeout.found == b->timeout.found && a->timeout.rank == b->timeout.rank &&
              a->timeout.fired_s == b->timeout.fired_s,
          "timeout %d rank %d at %.17g, per rank %d rank %d at %.17g", a->timeout.found, a->timeout.rank,
          a->timeout.fired_s, b->timeout.found, b->timeout.rank, b->timeout.fired_s);
    int first = -1, n_bad = 0;
    for (int r = 0; r < p->n_ranks; r++) {
        int ok = same_split(&a->split[r], &b->split[r]) && a->a2a_s[r] == b->a2a_s[r] &&
                 a->a2a_last_count[r] == b->a2a_last_count[r];
        for (int i = 0; ok && i < program_n_ops(p, r); i++) {
            const op_time *ta = step_exec_time(a, a->sim_rank[r], i), *tb = step_exec_time(b, b->sim_rank[r], i);
            ok = ta->start_s == tb->start_s && ta->end_s == tb->end_s;
        }
        if (!ok && first < 0) first = r;
        n_bad += !ok;
    }
    CHECK(n_bad == 0, "%d ranks differ, first rank %d", n_bad, first);
    return bad;
}

static int run(const program *p, const comm_model *comm, const costmodel *cm, int shortcut, step_exec_result *r) {
    step_pricing pr;
    step_pricing_init(&pr, p, cm);
    /* the reference: every rank simulated, each advancing on its own (no gangs, step_exec.h) */
    step_exec_opts o = {.comm = comm, .price = step_price_costmodel, .price_ctx = &pr, .shortcut = shortcut,
                        .per_rank = !shortcut, .keep_timelines = 1};
    /* the scenario's host side (step_host.h), as simrun runs it */
    step_host_pricing hp;
    if (step_host_pricing_init(&hp, p)) {
        o.host = step_host_costmodel;
        o.host_ctx = &hp;
        o.host_sync_s = hp.tab.par.sync_s;
    }
    moe_error err = {0};
    int rc = step_exec_run(p, &o, r, &err);
    step_pricing_free(&pr);
    /* a timed-out step is a result (incident-cascading-hang): both runs must time out alike */
    if (rc && !r->timeout.found) printf("  %s point %d: %s\n", g_file, g_point, err.msg);
    return rc && !r->timeout.found;
}

/* With the GPUs' speed spread, a simulated rank runs at the slowest factor of the ranks mirrored onto
 * it (step_exec.h "Speed spread"): the step is at least the run of every rank with its own factor and,
 * the step being monotone and positively homogeneous in the compute durations, at most that times the
 * slowest over the fastest factor. */
static int speed_spread_bound(const scenario *s, const comm_model *comm, const costmodel *cm) {
    moe_error err = {0};
    program *p = NULL;
    if (program_build(s, &p, &err)) { printf("  %s point %d: %s\n", g_file, g_point, err.msg); return 1; }
    step_exec_result a, b;
    int bad = run(p, comm, cm, 1, &a) + run(p, comm, cm, 0, &b);
    double bound = p->faults.speed_max / p->faults.speed_min;
    if (!bad && !(a.step_time_s >= b.step_time_s && a.step_time_s <= b.step_time_s * bound)) {
        printf("  %s point %d: speed spread folded %.9f s, every rank its own %.9f s, outside [1, %.6f]\n", g_file,
               g_point, a.step_time_s, b.step_time_s, bound);
        bad = 1;
    }
    if (!bad)
        printf("  %-40s point %d: speed cv %.4f folded onto %d ranks: step %+.4f%% of every rank's own (bound %+.2f%%)\n",
               g_file, g_point, s->cluster.gpu.speed_cv, a.n_simulated_ranks, 100 * (a.step_time_s / b.step_time_s - 1),
               100 * (bound - 1));
    step_exec_result_free(&a);
    step_exec_result_free(&b);
    program_free(p);
    return bad;
}

static int child_point(void) {
    moe_error err = {0};
    scenario base, s;
    sweep *sw = NULL;
    if (scenario_load(g_file, &base, &sw, &err)) { printf("  %s\n", err.msg); return 1; }
    int rc = sweep_point(sw, &base, g_point, &s, NULL, &err);
    sweep_free(sw);
    if (rc) { printf("  %s point %d: %s\n", g_file, g_point, err.msg); return 1; }
    program *p = NULL;
    /* the GPUs' speed spread is folded by the shortcuts, a bound (speed_spread_bound below): the exact
     * comparison runs with identical GPUs */
    double cv = s.cluster.gpu.speed_cv;
    s.cluster.gpu.speed_cv = 0;
    if (program_check(&s, &err) || program_build(&s, &p, &err)) {
        printf("  %s point %d: not at step level (%s)\n", g_file, g_point, err.msg);
        return 0;
    }
    costmodel cm;
    if (costmodel_for_scenario(&s, &cm, &err)) { printf("  %s\n", err.msg); return 1; }
    /* first with the SimGrid helper (comm_simgrid.h) working out the announced patterns beside the
     * run, from a cold memo; then without it, from a cold memo again: the same run and statistics */
    sg_comm_set_helpers(1);
    comm_model helped = sg_comm_create(&s, &err);
    if (!helped.ctx) { printf("  %s\n", err.msg); return 1; }
    step_exec_result h;
    int bad = run(p, &helped, &cm, 1, &h);
    sg_comm_stats hs = sg_comm_get_stats(&helped);
    helped.destroy(helped.ctx);
    sg_comm_set_helpers(0);
    sg_comm_forget();
    comm_model comm = sg_comm_create(&s, &err);
    if (!comm.ctx) { printf("  %s\n", err.msg); return 1; }
    step_exec_result a, b;
    bad += run(p, &comm, &cm, 1, &a);
    sg_comm_stats as = sg_comm_get_stats(&comm);
    bad += run(p, &comm, &cm, 0, &b);
    if (!bad) bad = compare(p, &a, &b);
    if (!bad) bad = compare(p, &h, &a);
    if (hs.queries != as.queries || hs.hits != as.hits || hs.simulated != as.simulated || hs.flows != as.flows ||
        hs.closed_form != as.closed_form) {
        printf("  %s point %d: with the helper %ld queries %ld simulated, without %ld %ld\n", g_file, g_point,
               hs.queries, hs.simulated, as.queries, as.simulated);
        bad++;
    }
    int per_replica = p->n_ranks / p->dp, twins = a.n_simulated_ranks < a.n_simulated_replicas * per_replica;
    printf("  %-40s point %d: %5d ranks, %5d simulated with the shortcuts (tp %d, dp %d%s), step %.6f s, "
           "%ld of %ld patterns from the helper: %s\n",
           g_file, g_point, p->n_ranks, a.n_simulated_ranks, p->tp, p->dp, twins ? ", TP twins" : "", a.step_time_s,
           hs.from_helper, hs.simulated + hs.closed_form, bad ? "DIFFERENT" : "identical");
    int folds = a.n_simulated_ranks < p->n_ranks;   /* some rank stands for others */
    step_exec_result_free(&h);
    step_exec_result_free(&a);
    step_exec_result_free(&b);
    if (!bad && cv > 0 && folds) {
        s.cluster.gpu.speed_cv = cv;
        bad = speed_spread_bound(&s, &comm, &cm);
    }
    comm.destroy(comm.ctx);
    program_free(p);
    return bad ? 1 : twins ? 2 : 0;
}

static void test_every_shipped_case(void **state) {
    (void)state;
    int failed = 0, twins_ran = 0;   /* points where the TP twins applied */
    for (size_t f = 0; f < sizeof FILES / sizeof FILES[0]; f++) {
        moe_error err = {0};
        scenario base;
        sweep *sw = NULL;
        if (scenario_load(FILES[f], &base, &sw, &err)) fail_msg("%s", err.msg);
        int n = sweep_count(sw);
        sweep_free(sw);
        for (int i = 0; i < n; i++) {
            g_file = FILES[f];
            g_point = i;
            int rc = fx_run_in_child(child_point);
            failed += rc != 0 && rc != 2;
            twins_ran += rc == 2;
        }
    }
    assert_int_equal(failed, 0);
    assert_true(twins_ran >= 4);   /* the list keeps layouts where the TP twins apply */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_shipped_case)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
