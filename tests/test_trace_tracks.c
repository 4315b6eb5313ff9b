/* test_trace_tracks.c — the Perfetto trace of a simulated step: output.trace_ranks "all", a list and
 * "slowest:K"; events sorted by time; send -> receive arrows between traced ranks; counter tracks
 * of memory in use and bytes in flight per rank.
 *
 * The small 32-GPU MoE (tests/data/scenarios/small-moe.json: PP 2, 1F1B) at step level. Truths: the
 * K slowest ranks are those with the largest rank_compute_s of the trace's own otherData; every
 * arrow starts at a send of its sender and ends no earlier on a traced receiver; a rank's memory
 * starts at its weights + gradients + optimizer, peaks at the plan's most loaded GPU (for the most
 * loaded stage), and is back at the start value once every micro-batch's backward is done; bytes in
 * flight never go negative and end at 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char simrun[4096];
static char tmpdir[] = "/tmp/moesim-tracks-XXXXXX";
static char out[1 << 16], err[8192];

static int setup(void **state) {
    (void)state;
    cli_tool_path("simrun", simrun, sizeof simrun);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

/* Run small-moe at plan and step level with output.trace_ranks = `ranks_json`; returns the parsed
 * results (and the trace in *trace). */
static cJSON *run_traced(const char *name, const char *ranks_json, cJSON **trace) {
    moe_error e = {0};
    char *base = read_file_text("tests/data/scenarios/small-moe.json", NULL, &e);
    assert_non_null(base);
    cJSON *s = cJSON_Parse(base);
    free(base);
    char outj[256];
    snprintf(outj, sizeof outj, "{\"trace\": true, \"plots\": false, \"levels\": [\"plan\", \"step\"], \"trace_ranks\": %s}",
             ranks_json);
    cJSON_ReplaceItemInObject(s, "output", cJSON_Parse(outj));
    char path[4300], dir[4300], p2[4400];
    snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    char *text = cJSON_Print(s);
    cJSON_Delete(s);
    assert_int_equal(write_file_atomic(path, text, &e), 0);
    free(text);
    if (cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, path, "--out", dir, "-q", NULL)) fail_msg("%s", err);
    snprintf(p2, sizeof p2, "%s/trace.json", dir);
    text = read_file_text(p2, NULL, &e);
    assert_non_null(text);
    *trace = cJSON_Parse(text);
    free(text);
    snprintf(p2, sizeof p2, "%s/results.json", dir);
    text = read_file_text(p2, NULL, &e);
    cJSON *res = cJSON_Parse(text);
    free(text);
    assert_non_null(*trace);
    return res;
}

static int traced_pids(const cJSON *trace, int *pids, int cap) {
    int n = 0;
    for (const cJSON *e = cJSON_GetObjectItem(trace, "traceEvents")->child; e; e = e->next) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "M") || strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "process_name"))
            continue;
        if (n < cap) pids[n++] = cJSON_GetObjectItem(e, "pid")->valueint;
    }
    return n;
}

static void test_all_sorted_arrows_counters(void **state) {
    (void)state;
    cJSON *trace, *res = run_traced("all", "\"all\"", &trace);
    int pids[64];
    assert_int_equal(traced_pids(trace, pids, 64), 32);
    /* sorted by time after the metadata */
    double last = -INFINITY;
    int meta_done = 0, arrows = 0, ends = 0;
    const cJSON *events = cJSON_GetObjectItem(trace, "traceEvents");
    for (const cJSON *e = events->child; e; e = e->next) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (ph[0] == 'M') { assert_false(meta_done); continue; }
        meta_done = 1;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        assert_true(ts >= last);
        last = ts;
        if (ph[0] == 's') arrows++;
        if (ph[0] == 'f') ends++;
    }
    /* every arrow has both ends: the start at a send of the sender named in its id, the end later */
    assert_true(arrows > 0);
    assert_int_equal(arrows, ends);
    for (const cJSON *e = events->child; e; e = e->next) {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "s")) continue;
        const char *id = cJSON_GetObjectItem(e, "id")->valuestring;
        int sender, tag;
        assert_int_equal(sscanf(id, "p2p-%d-%d", &sender, &tag), 2);
        assert_int_equal(cJSON_GetObjectItem(e, "pid")->valueint, sender);
        int found = 0;
        for (const cJSON *f = events->child; f && !found; f = f->next)
            if (!strcmp(cJSON_GetObjectItem(f, "ph")->valuestring, "f") && !strcmp(cJSON_GetObjectItem(f, "id")->valuestring, id)) {
                found = 1;
                assert_true(cJSON_GetObjectItem(f, "ts")->valuedouble >= cJSON_GetObjectItem(e, "ts")->valuedouble);
                assert_int_not_equal(cJSON_GetObjectItem(f, "pid")->valueint, sender);
            }
        assert_true(found);
    }
    /* counters: per rank, memory back to its start at the end, bytes in flight >= 0 and back to 0 */
    double plan_GiB = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
                          cJSON_GetObjectItem(res, "points"), 0), "plan"), "memory_GiB"), "total")->valuedouble;
    double peak_all = 0;
    for (int k = 0; k < 32; k++) {
        double mem0 = NAN, memlast = NAN, peak = 0, bytes_last = NAN;
        for (const cJSON *e = events->child; e; e = e->next) {
            if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "C") || cJSON_GetObjectItem(e, "pid")->valueint != pids[k])
                continue;
            const cJSON *a = cJSON_GetObjectItem(e, "args");
            if (cJSON_GetObjectItem(a, "GiB")) {
                double v = cJSON_GetObjectItem(a, "GiB")->valuedouble;
                if (isnan(mem0)) mem0 = v;
                memlast = v;
                if (v > peak) peak = v;
            } else {
                double v = cJSON_GetObjectItem(a, "MB")->valuedouble;
                assert_true(v >= -1e-9);
                bytes_last = v;
            }
        }
        assert_true(peak > mem0);   /* activations come and go */
        assert_true(fabs(memlast - mem0) < 1e-9 * mem0);
        assert_true(fabs(bytes_last) < 1e-9);
        if (peak > peak_all) peak_all = peak;
    }
    assert_true(fabs(peak_all - plan_GiB) < 1e-6 * plan_GiB);
    cJSON_Delete(trace);
    cJSON_Delete(res);
}

static void test_slowest_and_list(void **state) {
    (void)state;
    cJSON *trace, *res = run_traced("slowest", "\"slowest:3\"", &trace);
    int pids[64], n = traced_pids(trace, pids, 64);
    assert_int_equal(n, 3);
    /* the three largest rank_compute_s of the trace's own per-rank figures */
    const cJSON *cs = cJSON_GetObjectItem(cJSON_GetObjectItem(trace, "otherData"), "rank_compute_s");
    int R = cJSON_GetArraySize(cs);
    for (int i = 0; i < n; i++) {
        double mine = cJSON_GetArrayItem(cs, pids[i])->valuedouble;
        int above = 0;
        for (int r = 0; r < R; r++) above += cJSON_GetArrayItem(cs, r)->valuedouble > mine;
        assert_true(above < 3);
    }
    /* the results say which selection was used */
    const cJSON *sel = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
        cJSON_GetObjectItem(res, "points"), 0), "scenario"), "output"), "trace_ranks");
    assert_string_equal(sel->valuestring, "slowest:3");
    cJSON_Delete(trace);
    cJSON_Delete(res);
    res = run_traced("list", "[0, 31]", &trace);
    assert_int_equal(traced_pids(trace, pids, 64), 2);
    cJSON_Delete(trace);
    cJSON_Delete(res);
}

static void test_bad_selection(void **state) {
    (void)state;
    char path[4300];
    snprintf(path, sizeof path, "%s/bad.json", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("{\"output\": {\"trace_ranks\": \"slowest:0\"}}", f);
    fclose(f);
    assert_int_equal(cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, "show", path, NULL), 2);
    assert_non_null(strstr(err, "output.trace_ranks"));
    assert_non_null(strstr(err, "slowest:K"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_sorted_arrows_counters),
        cmocka_unit_test(test_slowest_and_list),
        cmocka_unit_test(test_bad_selection),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
