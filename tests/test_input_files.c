/* test_input_files.c — files and paths a user gives the tools, as the tools see them: special files
 * (FIFO, /dev/zero, a folder) and invalid JSON are refused at once with exit 2; a bad file that a
 * scenario names is reported behind the scenario and the field; output paths that cannot be used are
 * exit 2 in every tool; a step too large to draw names the field that sizes it.
 *
 * Truths: POSIX file types (a FIFO with no writer blocks a reader forever; /dev/zero never ends);
 * RFC 8259 (one value per text, unique names); the exit codes of README ("2: bad input"). Each
 * check runs the tool under a 60 s alarm, so a reader that blocks or loops fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char tmpdir[] = "/tmp/moesim-inputs-XXXXXX";
static char out[65536], err[16384];

static int tool(const char *name, ...) {
    va_list ap;
    va_start(ap, name);
    alarm(60); /* a blocked or endless read fails the test instead of hanging it */
    int rc = cli_run_tool_va(name, tmpdir, out, sizeof out, err, sizeof err, ap);
    alarm(0);
    va_end(ap);
    return rc;
}

/* tmpdir/name; a ring of 64 buffers (a test keeps fewer paths than that alive at once) */
static const char *in_tmp(const char *name) {
    static char paths[64][4200];
    static int k;
    char *p = paths[k++ % 64];
    snprintf(p, sizeof paths[0], "%s/%s", tmpdir, name);
    return p;
}

static void put(const char *name, const char *text) {
    moe_error e = {0};
    if (write_file_atomic(in_tmp(name), text, &e)) fail_msg("%s", e.msg);
}

static void expect_bad(int rc, const char *needle1, const char *needle2) {
    if (rc != 2 || !strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("rc %d (expected 2), stderr lacks [%s]/[%s]:\n%s", rc, needle1, needle2 ? needle2 : "", err);
}

/* A small scenario (64 GPUs) with `extra` members added at the top level. */
static void scenario_with(const char *name, const char *extra) {
    char text[8192];
    snprintf(text, sizeof text,
             "{\"format\": \"moesim-scenario/1\","
             " \"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 8},"
             " \"layout\": {\"tp\": 1, \"pp\": 2, \"ep\": 32, \"dp\": 1, \"global_batch\": 256},"
             " \"run\": {\"trials\": 2}, \"output\": {\"plots\": false, \"trace\": false}%s%s}",
             extra && *extra ? ", " : "", extra ? extra : "");
    put(name, text);
}

static int setup(void **state) {
    (void)state;
    if (!mkdtemp(tmpdir)) return -1;
    return mkfifo(in_tmp("fifo"), 0644);
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

/* A FIFO or device as any input: refused at once, never read. */
static void test_special_files(void **state) {
    (void)state;
    const char *fifo = in_tmp("fifo");
    expect_bad(tool("simrun", "run", fifo, "--out", in_tmp("o1"), NULL), fifo, "FIFO");
    expect_bad(tool("simdiag", "check", fifo, NULL), fifo, "FIFO");
    expect_bad(tool("simdiag", "check", "/dev/zero", NULL), "/dev/zero", "character device");
    expect_bad(tool("simcal", "import-nccl-tests", "/dev/zero", "--out", in_tmp("t.json"), NULL), "/dev/zero",
               "regular file");
    expect_bad(tool("simcal", "import-nccl-tests", fifo, "--out", in_tmp("t.json"), NULL), fifo, "FIFO");
    expect_bad(tool("simcal", "fit", "/dev/zero", "--out", in_tmp("m.json"), NULL), "/dev/zero", "regular file");
    expect_bad(tool("simrun", "run", tmpdir, "--out", in_tmp("o2"), NULL), tmpdir, "a folder");
}

/* Referenced files: the scenario and the field come first, then the file's own message. */
static void test_referenced_files(void **state) {
    (void)state;
    const char *s = in_tmp("ref.json");
    scenario_with("ref.json", "\"reliability\": {\"failure_trace\": \"/dev/zero\"}");
    expect_bad(tool("simrun", "run", s, "--levels", "run", "--out", in_tmp("o3"), NULL),
               "ref.json: reliability.failure_trace: /dev/zero: got a character device", NULL);
    char extra[4400];
    snprintf(extra, sizeof extra, "\"reliability\": {\"failure_trace\": \"%s\"}", in_tmp("fifo"));
    scenario_with("ref.json", extra);
    expect_bad(tool("simrun", "run", s, "--levels", "run", "--out", in_tmp("o4"), NULL),
               "ref.json: reliability.failure_trace: ", "FIFO");
    put("header.csv", "time_h,component,rank\n");   /* only a header: no failures, a valid log */
    scenario_with("ref.json", "\"reliability\": {\"failure_trace\": \"header.csv\"}");
    int rc = tool("simrun", "run", s, "--levels", "run", "--out", in_tmp("o5"), "-q", NULL);
    if (rc != 0) fail_msg("header-only failure log: rc %d\n%s", rc, err);
    put("bad.csv", "time_h,component,rank\n1.0,gpu,99999\n");
    scenario_with("ref.json", "\"reliability\": {\"failure_trace\": \"bad.csv\"}");
    expect_bad(tool("simrun", "run", s, "--levels", "run", "--out", in_tmp("o6"), NULL),
               "ref.json: reliability.failure_trace: ", "line 2, column rank");
    /* a cost model with "gemm" twice (a 100x slower copy first): refused, not priced with either */
    put("model.json", "{\"format\": \"moesim-costmodel/1\", \"source\": \"t\", \"device\": \"d\", \"measured\": false,"
                      " \"peak_tflops\": {\"bf16\": 989}, \"gemm\": {\"eff_max\": 0.0082, \"operand_GBps\": 3000,"
                      " \"launch_us\": 3}, \"gemm\": {\"eff_max\": 0.82, \"operand_GBps\": 3000, \"launch_us\": 3},"
                      " \"memory\": {\"GBps\": 3000, \"launch_us\": 2}, \"attention\": {\"eff\": 0.5}}");
    snprintf(extra, sizeof extra, "\"calibration\": \"%s\"", in_tmp("model.json"));
    scenario_with("ref.json", extra);
    expect_bad(tool("simrun", "run", s, "--levels", "plan", "--out", in_tmp("o7"), NULL),
               "ref.json: calibration: ", "gemm: got \"gemm\" a second time");
    put("load.json", "{\"format\": \"moesim-expert-load/1\", \"layers\": [[1, 2]]} and more");
    scenario_with("ref.json", "\"routing\": {\"distribution\": \"trace\", \"trace\": \"load.json\"}");
    expect_bad(tool("simrun", "run", s, "--levels", "step", "--out", in_tmp("o8"), NULL),
               "ref.json: routing.trace: ", "trailing text");
}

/* Invalid JSON in every JSON input: trailing text, numbers outside the grammar. */
static void test_strict_json_inputs(void **state) {
    (void)state;
    char *trace = NULL;
    moe_error e = {0};
    trace = read_file_text("tests/data/traces/healthy-pp8.json", NULL, &e);
    assert_non_null(trace);
    size_t n = strlen(trace);
    char *bad = malloc(n + 64);
    snprintf(bad, n + 64, "%s verdict: healthy\n", trace);
    put("garbage-trace.json", bad);
    expect_bad(tool("simdiag", "check", in_tmp("garbage-trace.json"), NULL), "garbage-trace.json: line", "trailing");
    free(bad);
    free(trace);
    scenario_with("zero.json", "\"seed\": 00");
    expect_bad(tool("simrun", "run", in_tmp("zero.json"), "--out", in_tmp("o9"), NULL), "zero.json: seed: got 00",
               "JSON number");
    scenario_with("dot.json", "\"reliability\": {\"gpu_mtbf_h\": 25.}");
    expect_bad(tool("simrun", "run", in_tmp("dot.json"), "--out", in_tmp("o10"), NULL),
               "dot.json: reliability.gpu_mtbf_h: got 25.", NULL);
    char *ct = read_file_text("calibration/traces/nccl-samples-h800.json", NULL, &e);
    assert_non_null(ct);
    n = strlen(ct);
    char *ct2 = malloc(n + 32);
    snprintf(ct2, n + 32, "%s\n{}", ct);
    put("calib.json", ct2);
    expect_bad(tool("simcal", "fit", in_tmp("calib.json"), "--out", in_tmp("m2.json"), NULL), "calib.json: line",
               "trailing");
    free(ct);
    free(ct2);
}

/* Output paths: empty, through a file, a missing folder: exit 2 in every tool. */
static void test_output_paths(void **state) {
    (void)state;
    scenario_with("ok.json", NULL);
    const char *s = in_tmp("ok.json");
    expect_bad(tool("simrun", "run", s, "--levels", "plan", "--out", "", NULL), "empty path", NULL);
    expect_bad(tool("simrun", "run", s, "--levels", "plan", "--out", "/dev/null/x", NULL), "/dev/null", "folder");
    put("afile", "x");
    const char *through = in_tmp("afile/sub");
    expect_bad(tool("simrun", "run", s, "--levels", "plan", "--out", through, NULL), "afile", "folder");
    const char *report = in_tmp("no/such/dir/report.json");
    expect_bad(tool("simdiag", "check", "tests/data/traces/healthy-pp8.json", "--json", report, NULL), report,
               "writable");
    expect_bad(tool("simdiag", "check", "tests/data/traces/healthy-pp8.json", "--json", "", NULL), "empty", NULL);
    expect_bad(tool("simcal", "import-nccl-tests", "tests/data/nccl/h800-8gpu-alltoall_perf.log", "--out", report,
                    NULL),
               report, "writable");
}

/* Command-line values read whole; a step too large to draw names the field. */
static void test_limits(void **state) {
    (void)state;
    scenario_with("ok.json", NULL);
    const char *s = in_tmp("ok.json");
    char levels[512] = "";
    for (int i = 0; i < 40; i++) strcat(levels, "plan,");
    strcat(levels, "run"); /* 203 characters: the last word must be read as "run", not cut */
    int rc = tool("simrun", "run", s, "--levels", levels, "--out", in_tmp("o11"), "-q", NULL);
    if (rc != 0) fail_msg("long --levels: rc %d\n%s", rc, err);
    char bad_levels[2 * sizeof levels];
    snprintf(bad_levels, sizeof bad_levels, "%swalk", levels);
    expect_bad(tool("simrun", "run", s, "--levels", bad_levels, "--out", in_tmp("o12"), NULL), "got 'runwalk'", NULL);
    scenario_with("long.json", "\"model\": {\"preset\": \"deepseek-v3\", \"seq_len\": 2147483647}");
    expect_bad(tool("simrun", "run", in_tmp("long.json"), "--levels", "step", "--out", in_tmp("o13"), NULL),
               "long.json: model.seq_len: got 2147483647", "2^28");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_files), cmocka_unit_test(test_referenced_files),
        cmocka_unit_test(test_strict_json_inputs), cmocka_unit_test(test_output_paths),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
