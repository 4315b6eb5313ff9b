/* test_optimize.c — `simrun optimize`: the grid's days, GPU-hours and Pareto front on a hand-solved
 * case, and its command line (bad lists exit 2 naming the option and the value).
 *
 * The hand case (tests/run_fixtures.h): 8 nodes x 8 GPUs, sync checkpoints every hour with a 5 min
 * write, 500 steps of 36 s: 19,500 s without failures. A GPU of node 1 fails at 2:30 (20 min lost):
 * without spares a 10-minute restart (21,300 s), with 2 or 4 spares a 90 s swap (20,790 s).
 * GPU-hours = (8 + spares) x 8 GPUs x wall hours: 378.67, 462.0, 554.4. The 4-spare point is as fast
 * as the 2-spare one and costs more: dominated. The front: no spares (cheapest) and 2 spares
 * (fastest). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "cli_run.h"
#include "run_fixtures.h"
#include "sim/base/fileio.h"
#include "sim/base/json_read.h"
#include "sim/point/optimize.h"

static char tmpdir[] = "/tmp/moesim-optimize-XXXXXX";

static void test_hand_case(void **state) {
    (void)state;
    scenario s = run_fixture("tests/data/failures/gpu_node1_2p5h.csv", 500);
    optimize_opts o;
    optimize_defaults(&o);
    o.n_spares = 3;
    o.spares[0] = 0, o.spares[1] = 0.25, o.spares[2] = 0.5;
    o.n_intervals = 1;
    o.intervals_min[0] = 60;
    o.n_tiers = 1;
    o.tiers[0] = OPT_TIER_PFS;
    o.step_time_s = RUN_FIXTURE_STEP_S;
    o.out_dir = tmpdir;
    o.plots = 0;
    o.quiet = 1;
    moe_error err = {0};
    if (optimize_run(&s, &o, stdout, &err)) fail_msg("%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/optimize.json", tmpdir);
    cJSON *doc = json_load(path, 0, &err);
    if (!doc) fail_msg("%s", err.msg);
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(doc, "points");
    assert_int_equal(cJSON_GetArraySize(pts), 3);
    const double wall[3] = {21300, 20790, 20790};
    const int nodes[3] = {8, 10, 12}, pareto[3] = {1, 1, 0};
    for (int i = 0; i < 3; i++) {
        const cJSON *p = cJSON_GetArrayItem(pts, i);
        double days = cJSON_GetObjectItemCaseSensitive(p, "days_mean")->valuedouble;
        double gh = cJSON_GetObjectItemCaseSensitive(p, "gpu_hours")->valuedouble;
        assert_true(fabs(days * 86400 - wall[i]) < 1e-6);
        assert_true(fabs(gh - nodes[i] * 8 * wall[i] / 3600) < 1e-6);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "pareto")), pareto[i]);
    }
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(doc, "best_days")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(doc, "best_gpu_hours")->valueint, 0);
    cJSON_Delete(doc);
}

static void test_command_line(void **state) {
    (void)state;
    char err[4096];
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/cli", tmpdir);
    char exe[4200];
    cli_tool_path("simrun", exe, sizeof exe);
    int rc = cli_run(exe, tmpdir, NULL, 0, err, sizeof err, "optimize", "scenarios/seed-4096.json", "--spares",
                     "0,1.5", "--out", out_dir, NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--spares"));
    assert_non_null(strstr(err, "1.5"));
    rc = cli_run(exe, tmpdir, NULL, 0, err, sizeof err, "optimize", "scenarios/seed-4096.json", "--tiers",
                 "pfs,ssd", "--out", out_dir, NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "ssd"));
    assert_non_null(strstr(err, "peer+nvme"));
    /* a small grid end to end: the files and the front are written */
    char out[8192];
    rc = cli_run(exe, tmpdir, out, sizeof out, err, sizeof err, "optimize", "scenarios/seed-4096.json", "--spares",
                 "0,0.02", "--intervals", "10,60", "--tiers", "pfs,peer", "--out", out_dir, NULL);
    if (rc) fail_msg("simrun optimize: %s", err);
    assert_non_null(strstr(out, "Pareto front"));
    assert_non_null(strstr(out, "best by days"));
    snprintf(err, sizeof err, "%s/optimize.csv", out_dir);
    size_t len = 0;
    moe_error e = {0};
    char *csv = read_file_text(err, &len, &e);
    if (!csv) fail_msg("%s", e.msg);
    int lines = 0;
    for (char *c = csv; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 1 + 2 * 2 * 2);
    free(csv);
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_case),
        cmocka_unit_test(test_command_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
