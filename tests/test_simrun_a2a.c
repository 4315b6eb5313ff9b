/* test_simrun_a2a.c — `simrun a2a` benchmarks the scenario's MoE layer: its model, routing, node limit
 * and precisions (not built-in shapes), and refuses an EP size it cannot place.
 *
 * Truth: Mixtral 8x7B (8 experts, top-2, hidden 4096, a BF16 run) at EP 8 on one node, uniform routing:
 * a rank holds one expert, so a token reaches it with probability 1 - C(7,2)/C(8,2) = 1/4; one
 * micro-batch of 4096 tokens then sends 8 x 4096 x 1/4 x 4096 x 2 B = 67,108,864 bytes per rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli_run.h"

static char simrun[4096], mixtral[4200], mixtral_hot[4200];
static char tmpdir[] = "/tmp/moesim-a2a-XXXXXX";
static char out[1 << 16], err[8192];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    cli_tool_path("simrun", simrun, sizeof simrun);
    if (!mkdtemp(tmpdir)) return -1;
    snprintf(mixtral, sizeof mixtral, "%s/mixtral.json", tmpdir);
    snprintf(mixtral_hot, sizeof mixtral_hot, "%s/mixtral-hot.json", tmpdir);
    const char *base = "{\"model\": {\"preset\": \"mixtral-8x7b\"}, \"cluster\": {\"preset\": \"h100-8rail\", \"nodes\": 4},"
                       " \"layout\": {\"tp\": 1, \"pp\": 1, \"ep\": 8, \"dp\": 4, \"schedule\": \"1f1b\", \"global_batch\": 256},"
                       " \"routing\": {\"node_limit\": 0%s}}\n";
    char text[1024];
    snprintf(text, sizeof text, base, "");
    write_text(mixtral, text);
    snprintf(text, sizeof text, base, ", \"distribution\": \"hot\", \"hot_expert\": 1, \"hot_share\": 0.5, \"capacity_factor\": 1.0, \"drop\": true");
    write_text(mixtral_hot, text);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

/* The bytes/rank column of the first row of EP size `ep`. */
static double bytes_per_rank(const char *table, int ep, const char *op) {
    for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int e, nodes, tokens;
        char o[16];
        double bytes;
        if (sscanf(l, " %d %d %d %15s %lf", &e, &nodes, &tokens, o, &bytes) == 5 && e == ep && strcmp(o, op) == 0)
            return bytes;
    }
    fail_msg("no %s row for EP %d in:\n%s", op, ep, table);
    return 0;
}

static void test_takes_the_scenario(void **state) {
    (void)state;
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "8", NULL), 0);
    assert_non_null(strstr(out, "hidden 4096, top-2 of 8 experts"));
    assert_non_null(strstr(out, "routing uniform"));
    assert_non_null(strstr(out, "dispatch bf16"));
    assert_true(bytes_per_rank(out, 8, "dispatch") == 67108864.0);
    /* an option overrides the scenario */
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "8", "--dtype",
                             "fp8", "--tokens", "1024", NULL), 0);
    assert_true(bytes_per_rank(out, 8, "dispatch") == 67108864.0 / 2 / 4);
}

/* The header names each link's rate apart: NVLink in GB/s per direction, the NIC in Gb/s (and the
 * GB/s of the RDMA column), each line rate with its achieved rate beside it. h100-8rail: NVLink 450
 * GB/s per direction, NIC 400 Gb/s (sim/scenario/presets.c). The busiest rank's NVLink rate at EP 8
 * (one node: NVLink only) cannot beat the achieved link rate. */
static void test_header_rates(void **state) {
    (void)state;
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "8", NULL), 0);
    const char *nvl = strstr(out, "NVLink 450 GB/s per GPU per direction (achieved ");
    const char *nic = strstr(out, "NIC 400 Gb/s per GPU (achieved ");
    if (!nvl || !nic) fail_msg("the header does not give NVLink and NIC rates apart:\n%s", out);
    double nvl_achieved, nic_gbps, nic_GBps;
    assert_int_equal(sscanf(nvl + strlen("NVLink 450 GB/s per GPU per direction (achieved "), "%lf GB/s)", &nvl_achieved), 1);
    assert_int_equal(sscanf(nic + strlen("NIC 400 Gb/s per GPU (achieved "), "%lf Gb/s = %lf GB/s)", &nic_gbps, &nic_GBps), 2);
    assert_true(nvl_achieved > 0 && nvl_achieved <= 450);
    assert_true(nic_gbps > 0 && nic_gbps <= 400);
    assert_true(fabs(nic_GBps - nic_gbps / 8) <= 0.05 + 1e-9);   /* both printed to 0.1 */
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int e, nodes, tokens;
        char o[16];
        double bytes, us, hand, rdma, nvl_GBps;
        if (sscanf(l, " %d %d %d %15s %lf %lf %lf %lf %lf", &e, &nodes, &tokens, o, &bytes, &us, &hand, &rdma, &nvl_GBps) == 9 &&
            e == 8)
            assert_true(nvl_GBps <= nvl_achieved + 0.05);
    }
}

static void test_routing_of_the_scenario(void **state) {
    (void)state;
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral_hot, "--ep", "8", NULL), 0);
    assert_non_null(strstr(out, "routing hot (expert 1 gets 50% of the pairs)"));
    assert_non_null(strstr(out, "dropped"));
    /* half the pairs want rank 1, capacity 1.0 caps each expert at its even share: fewer bytes move
     * than under uniform routing */
    assert_true(bytes_per_rank(out, 8, "dispatch") < 67108864.0);
}

static void test_refuses_what_it_cannot_place(void **state) {
    (void)state;
    /* DeepSeek-V3's 256 experts do not spread over 48 ranks */
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "--a2a", "48", NULL), 2);
    assert_non_null(strstr(err, "--ep: got 48"));
    assert_non_null(strstr(err, "divides model.experts = 256"));
    /* more than the cluster's 32 GPUs */
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "64", NULL), 2);
    assert_non_null(strstr(err, "[2, 32]"));
    /* 4 divides 8 experts, 12 does not */
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "12", NULL), 2);
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "a2a", mixtral, "--ep", "4", NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_takes_the_scenario),
        cmocka_unit_test(test_header_rates),
        cmocka_unit_test(test_routing_of_the_scenario),
        cmocka_unit_test(test_refuses_what_it_cannot_place),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
