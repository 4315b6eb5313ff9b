/* test_cli_conventions.c — the command-line conventions every moesim tool follows (getopt_long):
 * `--opt value` and `--opt=value`, --version, the same --out/--jobs/--quiet/--help on every
 * subcommand, subcommands for every mode with the older spellings kept as aliases, usage errors
 * that name the option and suggest the closest one (exit 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char tmpdir[] = "/tmp/moesim-conv-XXXXXX";
static char out[65536], err[16384];

/* Run TOOL with the NULL-terminated arguments; stdout/stderr into out/err. */
static int tool(const char *name, ...) {
    char exe[4200];
    cli_tool_path(name, exe, sizeof exe);
    va_list ap;
    va_start(ap, name);
    int rc = cli_run_va(exe, tmpdir, out, sizeof out, err, sizeof err, ap);
    va_end(ap);
    return rc;
}

static char *slurp(const char *path) {
    moe_error e = {0};
    return read_file_text(path, NULL, &e);
}

/* The "points" of DIR/results.json with each point's "scenario" (it names the output folder) and
 * wall-clock fields removed: what two runs of the same inputs must agree on. */
static cJSON *points_of(const char *dir) {
    char path[4400];
    snprintf(path, sizeof path, "%s/results.json", dir);
    char *t = slurp(path);
    assert_non_null(t);
    cJSON *doc = cJSON_Parse(t);
    free(t);
    assert_non_null(doc);
    cJSON *pts = cJSON_DetachItemFromObject(doc, "points");
    cJSON_Delete(doc);
    for (cJSON *p = pts->child; p; p = p->next) cJSON_DeleteItemFromObject(p, "scenario");
    return pts;
}

static void assert_same_points(const char *a, const char *b) {
    cJSON *pa = points_of(a), *pb = points_of(b);
    assert_true(cJSON_GetArraySize(pa) > 0);
    if (!cJSON_Compare(pa, pb, 1)) fail_msg("%s and %s hold different points", a, b);
    cJSON_Delete(pa);
    cJSON_Delete(pb);
}

static int setup(void **state) {
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

/* Every subcommand of every tool: --help exits 0 and documents --out, --jobs and --quiet. */
static void test_every_command_has_the_common_options(void **state) {
    (void)state;
    static const char *const cmds[][2] = {
        {"simrun", "run"}, {"simrun", "search"}, {"simrun", "a2a"}, {"simrun", "merge"}, {"simrun", "plot"},
        {"simrun", "show"}, {"simrun", "fields"}, {"simrun", "dump-platform"}, {"simrun", "optimize"},
        {"simdiag", "check"}, {"simdiag", "compare"},
        {"simcal", "bench"}, {"simcal", "probe-host"}, {"simcal", "import-nccl-tests"}, {"simcal", "fit"},
        {"simcal", "check"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        assert_int_equal(tool(cmds[i][0], cmds[i][1], "--help", NULL), 0);
        char want[128];
        snprintf(want, sizeof want, "usage: %s %s", cmds[i][0], cmds[i][1]);
        if (!strstr(out, want)) fail_msg("%s %s --help: no '%s' in:\n%s", cmds[i][0], cmds[i][1], want, out);
        for (const char *const *o = (const char *const[]){"--out", "--jobs", "--quiet", "--help", NULL}; *o; o++)
            if (!strstr(out, *o)) fail_msg("%s %s --help does not document %s", cmds[i][0], cmds[i][1], *o);
    }
    /* simlive: --help needs no MPI world */
    assert_int_equal(tool("simlive", "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: simlive"));
    assert_non_null(strstr(out, "--quiet"));
}

/* --version: the git description the build was configured from, the same for every tool. */
static void test_version(void **state) {
    (void)state;
    const char *tools[] = {"simrun", "simdiag", "simcal", "simlive"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tool(tools[i], "--version", NULL), 0);
        char want[256];
        snprintf(want, sizeof want, "%s (moesim) %s\n", tools[i], MOESIM_VERSION);
        assert_string_equal(out, want);
    }
    /* also after a command */
    assert_int_equal(tool("simrun", "merge", "--version", NULL), 0);
    assert_non_null(strstr(out, MOESIM_VERSION));
}

/* `--opt value`, `--opt=value` and -o give the same run. */
static void test_equals_form(void **state) {
    (void)state;
    char a[4300], b[4300], c[4300], oa[4400];
    snprintf(a, sizeof a, "%s/space", tmpdir);
    snprintf(b, sizeof b, "%s/equals", tmpdir);
    snprintf(c, sizeof c, "%s/short", tmpdir);
    snprintf(oa, sizeof oa, "--out=%s", b);
    assert_int_equal(tool("simrun", "run", "scenarios/seed-4096.json", "--levels", "plan", "--out", a, "--quiet", NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(tool("simrun", "run", "scenarios/seed-4096.json", "--levels=plan", oa, "--quiet", NULL), 0);
    assert_int_equal(tool("simrun", "scenarios/seed-4096.json", "--levels=plan", "-o", c, "-q", "-j", "1", NULL), 0);
    assert_same_points(a, b);
    assert_same_points(a, c);
}

/* Usage errors: the option named, the closest one suggested, exit 2; a missing value is named. */
static void test_usage_errors(void **state) {
    (void)state;
    assert_int_equal(tool("simrun", "merge", "a", "--quite", NULL), 2);
    assert_non_null(strstr(err, "'--quite'"));
    assert_non_null(strstr(err, "did you mean '--quiet'"));
    assert_non_null(strstr(err, "simrun merge --help"));
    assert_int_equal(tool("simrun", "run", "scenarios/seed-4096.json", "--out", NULL), 2);
    assert_non_null(strstr(err, "--out needs a value"));
    assert_int_equal(tool("simrun", "run", "scenarios/seed-4096.json", "--jobs=0", NULL), 2);
    assert_non_null(strstr(err, "--jobs: got '0'"));
    assert_int_equal(tool("simrun", "run", "scenarios/seed-4096.json", "--quiet=yes", NULL), 2);
    assert_non_null(strstr(err, "takes no value"));
    assert_int_equal(tool("simrun", "serach", "scenarios/seed-4096.json", NULL), 2);
    assert_non_null(strstr(err, "did you mean 'search'"));
    assert_int_equal(tool("simrun", "a2a", "--ep", "16", "--dtype", "bf17", NULL), 2);
    assert_non_null(strstr(err, "did you mean 'bf16'"));
    assert_int_equal(tool("simdiag", "compare", "a.json", NULL), 2);
    assert_int_equal(tool("simcal", "fit", "x.json", NULL), 2);
    assert_non_null(strstr(err, "--out MODEL is required"));
    assert_int_equal(tool("simcal", "check", "--tol", "2", NULL), 2);
    assert_int_equal(tool("simcal", "probe-host", "extra", NULL), 2);
    assert_int_equal(tool("simcal", "probe-host", "--gemm-out", NULL), 2);
    assert_non_null(strstr(err, "--gemm-out needs a value"));
}

/* simcal probe-host on a machine without an NVIDIA driver: it says so and writes nothing (exit 1). */
static void test_probe_host_without_gpu(void **state) {
    (void)state;
    if (access("/dev/nvidiactl", F_OK) == 0) {
        print_message("an NVIDIA driver is present: the no-GPU path is not tested here\n");
        skip();
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/probe.json", tmpdir);
    assert_int_equal(tool("simcal", "probe-host", "--out", path, NULL), 1);
    assert_non_null(strstr(err, "no GPU"));
    assert_int_equal(access(path, F_OK), -1);
}

/* `simrun merge --quiet` (refused before the common options): nothing on stdout, the files written. */
static void test_merge_quiet(void **state) {
    (void)state;
    char s0[4300], s1[4300], m[4300], path[4400];
    snprintf(s0, sizeof s0, "%s/m0", tmpdir);
    snprintf(s1, sizeof s1, "%s/m1", tmpdir);
    snprintf(m, sizeof m, "%s/merged", tmpdir);
    const char *sc = "scenarios/checkpoint-sweep.json";
    assert_int_equal(tool("simrun", sc, "--levels", "plan", "--shard", "0/2", "--out", s0, "--quiet", NULL), 0);
    assert_int_equal(tool("simrun", sc, "--levels", "plan", "--shard=1/2", "--out", s1, "--quiet", NULL), 0);
    assert_int_equal(tool("simrun", "merge", s0, s1, "--out", m, "--quiet", "--jobs", "2", NULL), 0);
    assert_string_equal(out, "");
    snprintf(path, sizeof path, "%s/results.json", m);
    assert_int_equal(access(path, R_OK), 0);
    /* without --quiet the table is printed */
    assert_int_equal(tool("simrun", "merge", s0, s1, "--out", m, NULL), 0);
    assert_non_null(strstr(out, "point"));
}

/* The older spellings are aliases of the subcommands: the same results. */
static void test_aliases(void **state) {
    (void)state;
    char a[4300], b[4300];
    snprintf(a, sizeof a, "%s/search-flag", tmpdir);
    snprintf(b, sizeof b, "%s/search-cmd", tmpdir);
    const char *sc = "tests/data/scenarios/small-moe.json";
    assert_int_equal(tool("simrun", "--search", sc, "--top", "2", "--levels", "plan", "--reproducible", "--out", a,
                          "--quiet", NULL), 0);
    assert_int_equal(tool("simrun", "search", sc, "--top=2", "--levels=plan", "--reproducible", "--out", b, "--quiet",
                          NULL), 0);
    assert_same_points(a, b);

    char x[4300];
    snprintf(x, sizeof x, "%s/fabric.xml", tmpdir);
    assert_int_equal(tool("simrun", "--dump-platform", x, sc, NULL), 0);
    assert_int_equal(access(x, R_OK), 0);
    unlink(x);
    assert_int_equal(tool("simrun", "dump-platform", sc, "--out", x, "--quiet", NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(access(x, R_OK), 0);
}

/* `simrun search --shard I/N`: each shard runs the same (deterministic) plan-level search and
 * simulates its slice of the best K; merged, the shards equal the unsharded search. */
static void test_search_sharded(void **state) {
    (void)state;
    char all[4300], s0[4300], s1[4300], m[4300];
    snprintf(all, sizeof all, "%s/search-all", tmpdir);
    snprintf(s0, sizeof s0, "%s/search-s0", tmpdir);
    snprintf(s1, sizeof s1, "%s/search-s1", tmpdir);
    snprintf(m, sizeof m, "%s/search-merged", tmpdir);
    const char *sc = "tests/data/scenarios/small-moe.json";
    assert_int_equal(tool("simrun", "search", sc, "--top", "3", "--levels", "plan", "--reproducible", "--out", all, "-q", NULL), 0);
    assert_int_equal(tool("simrun", "search", sc, "--top", "3", "--levels", "plan", "--reproducible", "--shard", "0/2",
                          "--out", s0, "-q", NULL), 0);
    assert_int_equal(tool("simrun", "search", sc, "--top", "3", "--levels", "plan", "--reproducible", "--shard", "1/2",
                          "--out", s1, "-q", NULL), 0);
    assert_int_equal(tool("simrun", "merge", s0, s1, "--out", m, "-q", NULL), 0);
    assert_same_points(all, m);
}

/* The results table never cuts a label: a swept value of 100 is printed as 100, a long label whole. */
static void test_table_labels_whole(void **state) {
    (void)state;
    char path[4300], dir[4300];
    snprintf(path, sizeof path, "%s/labels.json", tmpdir);
    snprintf(dir, sizeof dir, "%s/labels", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"sweep\": {\"cluster.storage_GBps\": [10, 100], \"reliability.checkpoint.snapshot_GBps\": [12.5, 64]},"
          " \"output\": {\"levels\": [\"plan\"], \"plots\": false}}", f);
    fclose(f);
    assert_int_equal(tool("simrun", path, "--out", dir, NULL), 0);
    assert_non_null(strstr(out, "storage_GBps=100 snapshot_GBps=12.5 "));
    assert_non_null(strstr(out, "storage_GBps=100 snapshot_GBps=64 "));
    assert_non_null(strstr(out, "storage_GBps=10 snapshot_GBps=64 "));
}

/* --quiet is honoured by the commands that print tables. */
static void test_quiet_everywhere(void **state) {
    (void)state;
    assert_int_equal(tool("simdiag", "check", "tests/data/traces/healthy-pp8.json", "--quiet", "--jobs", "2", NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(tool("simcal", "check", "--quiet", NULL), 0);
    assert_string_equal(out, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_command_has_the_common_options),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_equals_form),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_probe_host_without_gpu),
        cmocka_unit_test(test_merge_quiet),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_search_sharded),
        cmocka_unit_test(test_table_labels_whole),
        cmocka_unit_test(test_quiet_everywhere),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
