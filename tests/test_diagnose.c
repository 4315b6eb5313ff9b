/* test_diagnose.c — the diagnoser (sim/report/diagnose.h, tools/simdiag) on hand-made traces whose verdicts
 * are worked out by hand (tests/data/traces/make_traces.py writes them; the truths are below).
 *
 * Seed 000 §4.2's mock (32 GPUs, 4 nodes x 8): busy times 2200 + (i % 5) * 15 ms, rank 18 at 3150 ms.
 *   sum = 32 x 2200 + 15 x (6 x (0+1+2+3+4) + 0 + 1) - 45 + 950 = 70400 + 915 + 905 = 72220 ms
 *   mean = 72220 / 32 = 2256.875 ms; population sd = 161.795 ms; mean + 2 sd = 2580.466 ms;
 *   1.25 x mean = 2821.094 ms. Only rank 18 (3150) exceeds either; the next slowest is 2260 ms.
 *   Rank 18 = node 18 / 8 = 2, GPU 18 % 8 = 2; +(3150 - 2256.875) / 2256.875 = +39.574%.
 * Expert hits [950, 1020, 890, 3200, 450, 910, 880, 520]:
 *   total 8820, mean 1102.5; squared deviations sum to 5,326,350; variance / 8 = 665,793.75;
 *   sd = 815.962; CV = 815.962 / 1102.5 = 0.74010 (> 0.4: severe);
 *   max/min = 3200 / (450 + 1e-5) = 7.11111 (> 3: severe);
 *   Gini on the sorted list with weights (2i - 7): 21980 / (8 x 8820) = 0.311508.
 *   Expert 3 is hottest (2.90 x the mean); with 8 experts on ep 8 it lives on EP index 3, i.e. ranks
 *   3, 11, 19, 27 (one per replica; rank = d * 8 + e).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "sim/report/diagnose.h"
#include "tests/cli_run.h"

#define TRACES "tests/data/traces/"

static void load(const char *name, diag_trace *t) {
    char path[512];
    snprintf(path, sizeof path, TRACES "%s", name);
    moe_error err = {0};
    int rc = diag_trace_load(path, t, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void check(const diag_trace *t, double min_excess, diag_report *r) {
    diag_rules rules;
    diag_rules_default(&rules);
    rules.min_excess = min_excess;
    assert_int_equal(diag_check(t, &rules, r), 0);
}

/* ---- seed 000 §4.2 mock ------------------------------------------------------------------------ */

static void test_seed_mock_straggler(void **state) {
    (void)state;
    diag_trace t;
    load("seed-mock-32.json", &t);
    /* the seed's rule exactly (no noise floor) and the default give the same single straggler */
    const double floors[2] = {0.0, DIAG_MIN_EXCESS_DEFAULT};
    for (int k = 0; k < 2; k++) {
        diag_report r;
        check(&t, floors[k], &r);
        assert_string_equal(r.compute.signal, "rank_compute_s");
        assert_int_equal(r.compute.n_stragglers, 1);
        const diag_straggler *g = &r.compute.stragglers[0];
        assert_int_equal(g->where.rank, 18);
        assert_int_equal(g->where.node, 2);
        assert_int_equal(g->where.local_gpu, 2);
        assert_int_equal(g->where.gpu, 18);
        assert_true(g->by_sigma && g->by_ratio);
        assert_true(fabs(g->time_s - 3.15) < 1e-12);
        assert_true(fabs(g->stage_mean_s - 2.256875) < 1e-9);
        assert_true(fabs(g->pct_over_mean - 39.5735) < 1e-3);
        assert_true(fabs(r.compute.stages[0].sd_s - 0.161795) < 1e-6);
        assert_true(fabs(r.compute.stages[0].threshold_s - 2.580466) < 1e-6);
        /* every rank's step ends with the straggler's: step time cannot see it */
        assert_string_equal(r.step.signal, "rank_step_s");
        assert_int_equal(r.step.n_stragglers, 0);
        assert_false(g->holds_hot_expert);   /* rank 18 is EP index 2; the hot expert is on EP index 3 */
        assert_int_equal(r.problems, 2);     /* the straggler and the imbalance */
        diag_report_free(&r);
    }
    diag_trace_free(&t);
}

static void test_seed_mock_expert_load(void **state) {
    (void)state;
    diag_trace t;
    load("seed-mock-32.json", &t);
    diag_report r;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    const diag_expert_report *l = &r.load;
    assert_true(l->present);
    assert_true(fabs(l->experts.mean - 1102.5) < 1e-9);
    assert_true(fabs(l->experts.cv - 0.740101) < 1e-6);
    assert_true(fabs(l->experts.max_min - 7.111111) < 1e-6);
    assert_true(fabs(l->experts.gini - 21980.0 / 70560.0) < 1e-12);
    assert_true(l->experts.severe);
    /* only expert 3 is hot: the runner-up (1020) is 0.93 x the mean */
    assert_int_equal(l->n_hot, 1);
    assert_int_equal(l->hot[0].expert, 3);
    assert_true(fabs(l->hot[0].share - 3200.0 / 8820.0) < 1e-12);
    assert_int_equal(l->hot[0].ep_index, 3);
    assert_int_equal(l->hot[0].n_holders, 4);
    const int holders[4] = {3, 11, 19, 27};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(l->hot[0].holders[i].rank, holders[i]);
        assert_int_equal(l->hot[0].holders[i].gpu, holders[i]);
        assert_int_equal(l->hot[0].holders[i].node, i);
    }
    diag_report_free(&r);
    diag_trace_free(&t);
}

/* ---- healthy ----------------------------------------------------------------------------------- */

static void test_healthy(void **state) {
    (void)state;
    diag_trace t;
    load("healthy-pp8.json", &t);
    diag_report r;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_int_equal(r.problems, 0);
    assert_int_equal(r.compute.n_stragglers, 0);
    assert_int_equal(r.step.n_stragglers, 0);
    assert_int_equal(r.compute.n_stages, 8);
    assert_false(r.load.experts.severe);   /* 1100 / 910 = 1.21; CV 0.053 */
    assert_true(r.load.experts.max_min < 1.21 + 1e-3 && r.load.experts.max_min > 1.2);
    diag_report_free(&r);

    /* Why per-stage peers: pooled over all 32 ranks (read as pp 1), the last stage's 1.3 s is
     * 1.3 / 1.0375 = 1.253 x the mean and its four ranks (28..31) would be flagged wholesale. */
    t.pp = 1;
    t.dp = 8;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_int_equal(r.compute.n_stragglers, 4);
    for (int i = 0; i < 4; i++) assert_true(r.compute.stragglers[i].where.rank >= 28);
    diag_report_free(&r);
    diag_trace_free(&t);
}

/* ---- hang -------------------------------------------------------------------------------------- */

static void test_hang(void **state) {
    (void)state;
    diag_trace t;
    load("hang-ep.json", &t);
    assert_non_null(t.hang);
    assert_false(t.has_step_time);
    diag_report r;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_true(r.hang);
    assert_int_equal(r.problems, 1);
    assert_null(r.compute.signal);   /* skipped on a hang */

    /* rank 5 sits on GPU 15 - 5 = 10 (the trace's reversed placement): node 1, GPU 2 */
    diag_place p;
    diag_locate(&t, t.hang->missing[0], &p);
    assert_int_equal(p.rank, 5);
    assert_int_equal(p.gpu, 10);
    assert_int_equal(p.node, 1);
    assert_int_equal(p.local_gpu, 2);

    diag_rules rules;
    diag_rules_default(&rules);
    cJSON *doc = diag_report_json(&t, &r, &rules);
    const cJSON *h = cJSON_GetObjectItem(doc, "hang");
    assert_int_equal(cJSON_GetObjectItem(h, "culprit_rank")->valueint, 5);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(h, "missing"), 0);
    assert_int_equal(cJSON_GetObjectItem(m, "gpu")->valueint, 10);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "last_op"), "op")->valuestring, "COMPUTE attn_fwd");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(doc, "healthy")));
    cJSON_Delete(doc);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    diag_report_print(f, &t, &r, &rules);
    fclose(f);
    assert_non_null(strstr(text, "7 ranks wait in A2A_DISPATCH of EP group 0 (layer 0, micro-batch 1)"));
    assert_non_null(strstr(text, "missing: rank 5 (node 1, GPU 2; global GPU 10)"));
    assert_non_null(strstr(text, "the odd one out, rank 5, is the culprit"));
    assert_non_null(strstr(text, "last finished op: COMPUTE attn_fwd, layer 0, micro-batch 1"));
    assert_non_null(strstr(text, "never issued the collective"));
    assert_non_null(strstr(text, "py-spy dump"));
    assert_non_null(strstr(text, "XID 43"));
    assert_non_null(strstr(text, "NCCL_P2P_DISABLE=1"));
    assert_non_null(strstr(text, "NCCL_IB_DISABLE=1"));
    free(text);
    diag_report_free(&r);
    diag_trace_free(&t);
}

/* A dropping capacity limit caps what the hot expert receives: C x T x K / E = 1.25 x 1102.5 = 1378
 * of its 3200. Judged on received counts, expert 3 looks 1.25 x the mean; with the router's counts
 * (the seed's "hits") the verdict is the seed's, and (3200 - 1378) / 8820 = 20.66% were dropped. */
static void test_routed_counts(void **state) {
    (void)state;
    char *text = NULL;
    FILE *f = fopen(TRACES "seed-mock-32.json", "r");
    assert_non_null(f);
    static char buf[65536];
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    cJSON *doc = cJSON_Parse(buf), *od = cJSON_GetObjectItem(doc, "otherData");
    const double received[8] = {950, 1020, 890, 1378, 450, 910, 880, 520};
    cJSON_AddItemToObject(od, "expert_tokens_routed", cJSON_Duplicate(cJSON_GetObjectItem(od, "expert_tokens"), 1));
    cJSON_ReplaceItemInObject(od, "expert_tokens", cJSON_CreateDoubleArray(received, 8));
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    diag_trace t;
    moe_error err = {0};
    assert_int_equal(diag_trace_parse(text, "routed.json", &t, &err), 0);
    free(text);
    diag_report r;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_string_equal(r.load.signal, "expert_tokens_routed");
    assert_true(fabs(r.load.experts.cv - 0.740101) < 1e-6);
    assert_int_equal(r.load.hot[0].expert, 3);
    assert_true(fabs(r.load.dropped_fraction - (3200.0 - 1378.0) / 8820.0) < 1e-12);
    diag_report_free(&r);
    diag_trace_free(&t);

    /* routed counts must match the experts one to one */
    doc = cJSON_Parse(buf);
    od = cJSON_GetObjectItem(doc, "otherData");
    cJSON_AddItemToObject(od, "expert_tokens_routed", cJSON_CreateDoubleArray(received, 7));
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    assert_int_equal(diag_trace_parse(text, "routed.json", &t, &err), EXIT_BADINPUT);
    free(text);
    assert_non_null(strstr(err.msg, "routed.json: otherData.expert_tokens_routed"));
}

/* Where the missing rank last was: a rank that never started an op is a dead (or never launched)
 * process; otherwise the report names its last finished op, in either label style. */
static void test_hang_last_op_kinds(void **state) {
    (void)state;
    const char *ops[3] = {"(not started)", "A2A_COMBINE", "expert_fwd"};
    const char *says[3] = {"never started an op", "last finished op: A2A_COMBINE, layer 1, micro-batch 0",
                           "last finished op: expert_fwd, layer 1"};
    for (int k = 0; k < 3; k++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "{\"otherData\": {\"format\": \"moesim-step-trace/1\", \"source\": \"live\", \"ranks\": 4,"
                 " \"gpus_per_node\": 2, \"tp\": 1, \"pp\": 1, \"ep\": 4, \"dp\": 1, \"rank_gpu\": [0, 1, 2, 3],"
                 " \"rank_compute_s\": [1, 1, 1, 1], \"hang\": {\"op\": \"A2A_DISPATCH\", \"group_kind\": \"EP\","
                 " \"group\": 0, \"layer\": 2, \"micro_batch\": 0, \"waiting\": [0, 1, 2], \"missing\": [3],"
                 " \"missing_last_op\": [{\"rank\": 3, \"op\": \"%s\", \"layer\": 1, \"micro_batch\": 0}],"
                 " \"blocked_elsewhere\": 0}}}",
                 ops[k]);
        diag_trace t;
        moe_error err = {0};
        assert_int_equal(diag_trace_parse(text, "last.json", &t, &err), 0);
        diag_report r;
        check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
        diag_rules rules;
        diag_rules_default(&rules);
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        diag_report_print(f, &t, &r, &rules);
        fclose(f);
        if (!strstr(out, says[k])) fprintf(stderr, "%s", out);
        assert_non_null(strstr(out, says[k]));
        assert_non_null(strstr(out, "missing: rank 3 (node 1, GPU 1; global GPU 3)"));
        free(out);
        cJSON *doc = diag_report_json(&t, &r, &rules);
        const cJSON *lo = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "hang"), "missing"), 0), "last_op");
        assert_true(k == 0 ? cJSON_IsNull(cJSON_GetObjectItem(lo, "op")) : cJSON_IsString(cJSON_GetObjectItem(lo, "op")));
        cJSON_Delete(doc);
        diag_report_free(&r);
        diag_trace_free(&t);
    }
}

/* ---- the noise floor of the 2-sigma rule ---------------------------------------------------------- */

/* A pp 1 trace of n ranks (GPU = rank) with the given busy times and no expert counts. */
static char *mini_trace(int n, int gpn, const double *busy) {
    cJSON *doc = cJSON_CreateObject(), *od = cJSON_AddObjectToObject(doc, "otherData");
    cJSON_AddStringToObject(od, "format", DIAG_TRACE_FORMAT);
    cJSON_AddNumberToObject(od, "ranks", n);
    cJSON_AddNumberToObject(od, "gpus_per_node", gpn);
    cJSON_AddNumberToObject(od, "tp", 1);
    cJSON_AddNumberToObject(od, "pp", 1);
    cJSON_AddNumberToObject(od, "ep", 1);
    cJSON_AddNumberToObject(od, "dp", n);
    cJSON *g = cJSON_AddArrayToObject(od, "rank_gpu");
    for (int r = 0; r < n; r++) cJSON_AddItemToArray(g, cJSON_CreateNumber(r));
    cJSON_AddItemToObject(od, "rank_compute_s", cJSON_CreateDoubleArray(busy, n));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return text;
}

/* 64 ranks alternating 1.000 / 1.004 s, one at 1.02 s: 2 sd is ~0.6% here, so the seed's rule flags
 * a rank that is 1.8% slow; with the 5% floor only the 1.25 x half could flag it, and it does not. */
static void test_noise_floor(void **state) {
    (void)state;
    double busy[64];
    for (int r = 0; r < 64; r++) busy[r] = r == 40 ? 1.02 : r % 2 ? 1.004 : 1.0;
    char *text = mini_trace(64, 8, busy);
    diag_trace t;
    moe_error err = {0};
    assert_int_equal(diag_trace_parse(text, "noise.json", &t, &err), 0);
    free(text);
    diag_report r;
    check(&t, 0.0, &r);
    assert_int_equal(r.compute.n_stragglers, 1);
    assert_int_equal(r.compute.stragglers[0].where.rank, 40);
    assert_true(r.compute.stragglers[0].by_sigma && !r.compute.stragglers[0].by_ratio);
    assert_null(r.step.signal);   /* no rank_step_s in this trace */
    diag_report_free(&r);
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_int_equal(r.compute.n_stragglers, 0);
    assert_false(r.load.present);   /* no expert_tokens: a dense model */
    diag_report_free(&r);
    diag_trace_free(&t);
}

/* Two slow GPUs on one node (ranks 9 and 12, both on node 1): mean = (14 + 1.4 + 1.6) / 16 = 1.0625 s,
 * so 1.6 s is +50.6% and 1.4 s is +31.8%, both > 1.25 x mean; the worse first, and the report points
 * at the node. */
static void test_node_level(void **state) {
    (void)state;
    double busy[16];
    for (int r = 0; r < 16; r++) busy[r] = r == 9 ? 1.4 : r == 12 ? 1.6 : 1.0;
    char *text = mini_trace(16, 8, busy);
    diag_trace t;
    moe_error err = {0};
    assert_int_equal(diag_trace_parse(text, "node.json", &t, &err), 0);
    free(text);
    diag_report r;
    check(&t, DIAG_MIN_EXCESS_DEFAULT, &r);
    assert_int_equal(r.compute.n_stragglers, 2);
    assert_int_equal(r.compute.stragglers[0].where.rank, 12);
    assert_true(fabs(r.compute.stragglers[0].pct_over_mean - (1.6 / 1.0625 - 1) * 100) < 1e-9);
    assert_int_equal(r.compute.stragglers[1].where.rank, 9);
    diag_rules rules;
    diag_rules_default(&rules);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    diag_report_print(f, &t, &r, &rules);
    fclose(f);
    assert_non_null(strstr(out, "node 1: 2 of its 8 GPUs straggle"));
    free(out);
    diag_report_free(&r);
    diag_trace_free(&t);
}

/* ---- bad traces -------------------------------------------------------------------------------- */

/* A valid 4-rank trace; each case replaces one otherData key (NULL value: deletes it). */
static const char BASE[] =
    "{\"traceEvents\": [{\"name\": \"attn_fwd\", \"ph\": \"X\", \"ts\": 0, \"dur\": 5, \"pid\": 0}],"
    " \"otherData\": {\"format\": \"moesim-step-trace/1\", \"source\": \"simulated\", \"ranks\": 4,"
    " \"gpus_per_node\": 8, \"tp\": 1, \"pp\": 1, \"ep\": 4, \"dp\": 1, \"step_time_s\": 1.0,"
    " \"rank_gpu\": [0, 1, 2, 3], \"rank_step_s\": [1, 1, 1, 1], \"rank_compute_s\": [0.5, 0.5, 0.5, 0.5],"
    " \"expert_tokens\": [10, 10, 10, 10], \"hang\": null}}";

static void expect_bad(const char *key, const char *value, const char *path_in_msg) {
    cJSON *doc = cJSON_Parse(BASE);
    cJSON *od = cJSON_GetObjectItem(doc, "otherData");
    if (strcmp(key, "traceEvents") == 0) cJSON_ReplaceItemInObject(doc, key, cJSON_Parse(value));
    else if (!value) cJSON_DeleteItemFromObject(od, key);
    else if (!cJSON_GetObjectItem(od, key)) cJSON_AddItemToObject(od, key, cJSON_Parse(value));   /* optional keys */
    else cJSON_ReplaceItemInObject(od, key, cJSON_Parse(value));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    diag_trace t;
    moe_error err = {0};
    int rc = diag_trace_parse(text, "inline.json", &t, &err);
    free(text);
    if (rc != EXIT_BADINPUT || !strstr(err.msg, "inline.json") || !strstr(err.msg, path_in_msg))
        fprintf(stderr, "case %s=%s: rc %d, message: %s\n", key, value ? value : "(deleted)", rc, err.msg);
    assert_int_equal(rc, EXIT_BADINPUT);
    assert_int_equal(err.code, EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "inline.json"));
    assert_non_null(strstr(err.msg, path_in_msg));
    assert_non_null(strstr(err.msg, "expected"));
}

static void test_bad_traces(void **state) {
    (void)state;
    /* the base itself is valid: the cases below fail for their one change only */
    diag_trace t;
    moe_error err = {0};
    assert_int_equal(diag_trace_parse(BASE, "inline.json", &t, &err), 0);
    diag_trace_free(&t);

    expect_bad("format", NULL, "otherData.format");
    expect_bad("format", "\"moesim-step-trace/2\"", "otherData.format");
    expect_bad("source", "\"measured\"", "otherData.source");
    expect_bad("ranks", "0", "otherData.ranks");
    expect_bad("ep", "2", "tp*pp*ep*dp == ranks");
    expect_bad("tp", "1.5", "otherData.tp");
    expect_bad("rank_gpu", "[0, 1, 2]", "otherData.rank_gpu");
    expect_bad("rank_compute_s", "[0.5, -1, 0.5, 0.5]", "otherData.rank_compute_s[1]");
    expect_bad("rank_step_s", "[1, 1]", "otherData.rank_step_s");
    expect_bad("step_time_s", "\"fast\"", "otherData.step_time_s");
    expect_bad("expert_tokens", "[1, \"x\"]", "otherData.expert_tokens[1]");
    expect_bad("hang", "[]", "otherData.hang");
    expect_bad("hang", "{\"op\": \"a2a_dispatch\", \"group_kind\": \"ep\", \"group\": 0, \"layer\": 0,"
                       " \"micro_batch\": 0, \"waiting\": [0, 1, 2], \"missing\": [4]}",
               "otherData.hang.missing[0]");
    expect_bad("hang", "{\"op\": \"a2a_dispatch\", \"group_kind\": \"ep\", \"group\": 0, \"layer\": 0,"
                       " \"micro_batch\": 0, \"waiting\": [0, 1, 2], \"missing\": [3],"
                       " \"missing_last_op\": [{\"op\": \"attn_fwd\"}]}",
               "otherData.hang.missing_last_op[0].rank");
    expect_bad("traceEvents", "[{\"name\": \"attn_fwd\", \"ph\": \"X\", \"dur\": 1}, {\"name\": \"x\", \"ph\": \"X\", \"dur\": -3}]",
               "traceEvents[1].dur");
    expect_bad("traceEvents", "{}", "traceEvents");

    /* no per-rank times at all */
    cJSON *doc = cJSON_Parse(BASE), *od = cJSON_GetObjectItem(doc, "otherData");
    cJSON_DeleteItemFromObject(od, "rank_compute_s");
    cJSON_DeleteItemFromObject(od, "rank_step_s");
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    assert_int_equal(diag_trace_parse(text, "inline.json", &t, &err), EXIT_BADINPUT);
    free(text);
    assert_non_null(strstr(err.msg, "otherData.rank_compute_s"));

    assert_int_equal(diag_trace_parse("{\"traceEvents\": []}", "inline.json", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "otherData"));

    /* strict JSON: a valid trace followed by text is not a trace ("verdict: healthy" used to pass) */
    moe_error ferr = {0};
    char *good = read_file_text(TRACES "healthy-pp8.json", NULL, &ferr);
    assert_non_null(good);
    size_t gl = strlen(good);
    char *tail = malloc(gl + 32);
    snprintf(tail, gl + 32, "%s verdict: healthy", good);
    assert_int_equal(diag_trace_parse(tail, "inline.json", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "inline.json: line"));
    assert_non_null(strstr(err.msg, "trailing"));
    free(tail);
    free(good);
    assert_int_equal(diag_trace_load("/dev/zero", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "/dev/zero: got a character device"));

    /* files: the name and the line / path */
    assert_int_equal(diag_trace_load(TRACES "bad-truncated.json", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "bad-truncated.json"));
    assert_non_null(strstr(err.msg, "valid JSON"));
    assert_int_equal(diag_trace_load(TRACES "bad-rank-gpu.json", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "bad-rank-gpu.json: otherData.rank_gpu[2]: got -2"));
    assert_int_equal(diag_trace_load(TRACES "no-such-trace.json", &t, &err), EXIT_BADINPUT);
    assert_non_null(strstr(err.msg, "no-such-trace.json"));
}

/* ---- compare ----------------------------------------------------------------------------------- */

static const diag_compare_row *row(const diag_compare_report *r, const char *name) {
    for (int i = 0; i < r->n_rows; i++)
        if (strcmp(r->rows[i].name, name) == 0) return &r->rows[i];
    fail_msg("no row %s", name);
    return NULL;
}

static void test_compare(void **state) {
    (void)state;
    diag_trace p, m;
    load("compare-predicted.json", &p);
    load("compare-measured.json", &m);
    diag_compare_report r;
    assert_int_equal(diag_compare(&p, &m, &r), 0);
    assert_int_equal(r.n_rows, 4);   /* a2a_dispatch, attn_fwd, expert_fwd, optimizer; "M" events skipped */
    const diag_compare_row *a = row(&r, "attn_fwd");
    assert_int_equal(a->pred_count, 3);
    assert_int_equal(a->meas_count, 3);
    assert_true(fabs(a->pred_mean_us - 100.0) < 1e-12);
    assert_true(fabs(a->meas_mean_us - 120.0) < 1e-12);
    assert_true(fabs(a->error_pct - (100.0 - 120.0) / 120.0 * 100.0) < 1e-9);   /* -16.67% */
    const diag_compare_row *d = row(&r, "a2a_dispatch");
    assert_true(fabs(d->error_pct - 50.0) < 1e-9);   /* mean 60 vs 40 */
    const diag_compare_row *e = row(&r, "expert_fwd");
    assert_int_equal(e->meas_count, 0);
    assert_true(isnan(e->error_pct));
    assert_true(isnan(row(&r, "optimizer")->pred_mean_us));
    assert_true(fabs(r.step_error_pct - (-20.0)) < 1e-9);   /* 1.0 s vs 1.25 s */
    assert_true(fabs(r.max_abs_error_pct - 50.0) < 1e-9);
    cJSON *doc = diag_compare_json(&p, &m, &r);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "classes"), 2), "error_pct")));
    cJSON_Delete(doc);
    diag_compare_free(&r);
    diag_trace_free(&p);
    diag_trace_free(&m);
}

/* ---- the command line -------------------------------------------------------------------------- */

static char simdiag[4096];
static char tmpdir[] = "/tmp/moesim-diag-XXXXXX";

static int run(char *out, size_t out_cap, char *errbuf, size_t err_cap, ...) {
    va_list ap;
    va_start(ap, err_cap);
    int rc = cli_run_va(simdiag, tmpdir, out, out_cap, errbuf, err_cap, ap);
    va_end(ap);
    return rc;
}

static int cli_setup(void **state) {
    (void)state;
    const char *bin = getenv("MOESIM_BIN");
    snprintf(simdiag, sizeof simdiag, "%s/simdiag", bin ? bin : "build/tools");
    if (!mkdtemp(tmpdir)) return -1;
    return access(simdiag, X_OK);
}

static int cli_teardown(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_cli(void **state) {
    (void)state;
    static char out[32768], err[8192];
    assert_int_equal(run(out, sizeof out, err, sizeof err, "--help", NULL), EXIT_OK);
    assert_non_null(strstr(out, "usage: simdiag check"));
    assert_non_null(strstr(out, "examples:"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, NULL), EXIT_BADINPUT);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "chek", TRACES "healthy-pp8.json", NULL), EXIT_BADINPUT);
    assert_non_null(strstr(err, "did you mean 'check'"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "healthy-pp8.json", "--bogus", NULL), EXIT_BADINPUT);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "healthy-pp8.json", "--min-excess", "x", NULL),
                     EXIT_BADINPUT);

    /* healthy: exit 0, nothing flagged */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "healthy-pp8.json", NULL), EXIT_OK);
    assert_null(strstr(out, "[WARN]"));
    assert_non_null(strstr(out, "verdict: healthy"));

    /* the seed's mock: exit 3, rank 18 on node 2 GPU 2, expert 3 hot; and the JSON report */
    char json[4300];
    snprintf(json, sizeof json, "%s/diag.json", tmpdir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "seed-mock-32.json", "--json", json, NULL),
                     DIAG_EXIT_PROBLEM);
    assert_non_null(strstr(out, "straggler: rank 18 (node 2, GPU 2; global GPU 18): 3.1500 s, +39.6%"));
    assert_non_null(strstr(out, "hot expert 3: 3200 tokens"));
    assert_non_null(strstr(out, "aux_loss_coeff"));
    assert_non_null(strstr(out, "capacity factor to 1.25"));
    assert_non_null(strstr(out, "PCIe"));
    FILE *f = fopen(json, "r");
    assert_non_null(f);
    static char buf[65536];
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "format")->valuestring, "moesim-diagnosis/1");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "healthy")));
    const cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "stragglers"), "stragglers"), 0);
    assert_int_equal(cJSON_GetObjectItem(s0, "gpu")->valueint, 18);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "expert_load"), "severe")));
    cJSON_Delete(doc);

    /* the hang: exit 3, the culprit named */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "hang-ep.json", "--quiet", NULL),
                     DIAG_EXIT_PROBLEM);
    assert_string_equal(out, "");
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "hang-ep.json", NULL), DIAG_EXIT_PROBLEM);
    assert_non_null(strstr(out, "missing: rank 5 (node 1, GPU 2; global GPU 10)"));

    /* bad input: exit 2 with the file and the JSON path */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", TRACES "bad-rank-gpu.json", NULL), EXIT_BADINPUT);
    assert_non_null(strstr(err, "bad-rank-gpu.json: otherData.rank_gpu[2]"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", "/nonexistent/t.json", NULL), EXIT_BADINPUT);
    assert_non_null(strstr(err, "/nonexistent/t.json"));
    /* a folder stands for its trace.json (here: none) */
    char expect[4300];
    snprintf(expect, sizeof expect, "%s/trace.json", tmpdir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "check", tmpdir, NULL), EXIT_BADINPUT);
    assert_non_null(strstr(err, expect));

    /* compare: 50% is the largest class error */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                         TRACES "compare-measured.json", "--tolerance", "60", NULL), EXIT_OK);
    assert_non_null(strstr(out, "-16.7%"));
    assert_non_null(strstr(out, "+50.0%"));
    assert_non_null(strstr(out, "-20.0%"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                         TRACES "compare-measured.json", "--tolerance", "40", NULL), DIAG_EXIT_PROBLEM);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json", NULL), EXIT_BADINPUT);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "compare", TRACES "compare-predicted.json",
                         TRACES "bad-truncated.json", NULL), EXIT_BADINPUT);
    assert_non_null(strstr(err, "bad-truncated.json"));
}


/* A lossless fabric's report and a watchdog record (sim/exec/step_pfc.h, trace.h): simdiag names the
 * hot GPU, its root link and the paused links, and the timeout; a victim held 6.6x is a finding, one
 * held 1.02x (the noise of a uniform draw) is not. */
static const char PFC_OBJ[] =
    "{\"hot_gpu\": 99, \"hot_node\": 12, \"hot_local_gpu\": 3, \"root_link\": \"nic-99_DOWN\","
    " \"root_drain_s\": 0.048, \"stalled_gpu\": -1, \"paused_links_count\": 2,"
    " \"paused_links\": [{\"link\": \"up-r3-l0_UP\", \"drain_s\": 0.005, \"held_s\": 0.048},"
    " {\"link\": \"nic-83_UP\", \"drain_s\": 0.007, \"held_s\": null}],"
    " \"victim_flows\": 14224, \"max_victim_slowdown\": 6.6, \"held_gpus\": 128}";
static const char TIMEOUT_OBJ[] =
    "{\"timeout_s\": 600, \"rank\": 0, \"gpu\": 0, \"node\": 0, \"op\": \"A2A_DISPATCH\", \"group_kind\": \"EP\","
    " \"group\": 0, \"layer\": 10, \"micro_batch\": 1, \"arrived_s\": 4.15, \"waited_s\": null, \"fired_s\": 604.15}";

static char *with_members(const char *pfc, const char *timeout) {
    cJSON *doc = cJSON_Parse(BASE), *od = cJSON_GetObjectItem(doc, "otherData");
    if (pfc) cJSON_AddItemToObject(od, "pfc", cJSON_Parse(pfc));
    if (timeout) cJSON_AddItemToObject(od, "collective_timeout", cJSON_Parse(timeout));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return text;
}

static void test_pfc_and_timeout(void **state) {
    (void)state;
    char *text = with_members(PFC_OBJ, TIMEOUT_OBJ);
    diag_trace t;
    moe_error err = {0};
    assert_int_equal(diag_trace_parse(text, "pfc.json", &t, &err), 0);
    free(text);
    assert_non_null(t.pfc);
    assert_non_null(t.timeout);
    assert_true(isinf(t.pfc->links[1].held_s));
    assert_true(isinf(t.timeout->waited_s));
    diag_rules rules;
    diag_rules_default(&rules);
    diag_report r;
    assert_int_equal(diag_check(&t, &rules, &r), 0);
    assert_true(r.timeout && r.pfc_spread);
    assert_true(r.problems >= 2);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    diag_report_print(f, &t, &r, &rules);
    fclose(f);
    assert_non_null(strstr(out, "node 12 GPU 3 (global GPU 99)"));
    assert_non_null(strstr(out, "nic-99_DOWN"));
    assert_non_null(strstr(out, "up-r3-l0_UP"));
    assert_non_null(strstr(out, "6.60x"));
    assert_non_null(strstr(out, "NCCL timeout: rank 0 (node 0 GPU 0) waited forever in A2A_DISPATCH"));
    free(out);
    diag_report_free(&r);
    diag_trace_free(&t);

    /* a victim at 1.02x: reported, not a finding */
    cJSON *pf = cJSON_Parse(PFC_OBJ);
    cJSON_ReplaceItemInObject(pf, "max_victim_slowdown", cJSON_CreateNumber(1.02));
    char *mild = cJSON_PrintUnformatted(pf);
    cJSON_Delete(pf);
    text = with_members(mild, NULL);
    free(mild);
    assert_int_equal(diag_trace_parse(text, "pfc.json", &t, &err), 0);
    free(text);
    assert_int_equal(diag_check(&t, &rules, &r), 0);
    assert_false(r.pfc_spread);
    assert_false(r.timeout);
    diag_report_free(&r);
    diag_trace_free(&t);

    expect_bad("pfc", "[]", "otherData.pfc");
    expect_bad("pfc", "{\"hot_gpu\": 99, \"hot_node\": 12, \"hot_local_gpu\": 3, \"stalled_gpu\": -1, \"held_gpus\": 1}",
               "otherData.pfc.root_link");
    expect_bad("collective_timeout", "{\"timeout_s\": 600, \"rank\": 4}", "otherData.collective_timeout.rank");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pfc_and_timeout),
        cmocka_unit_test(test_seed_mock_straggler),
        cmocka_unit_test(test_seed_mock_expert_load),
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_hang),
        cmocka_unit_test(test_routed_counts),
        cmocka_unit_test(test_hang_last_op_kinds),
        cmocka_unit_test(test_noise_floor),
        cmocka_unit_test(test_node_level),
        cmocka_unit_test(test_bad_traces),
        cmocka_unit_test(test_compare),
        cmocka_unit_test_setup_teardown(test_cli, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
