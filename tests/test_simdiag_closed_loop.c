/* test_simdiag_closed_loop.c — inject a fault into the simulator, let the diagnoser find it.
 *
 * Each case writes a scenario into a temp dir, runs `simrun --levels step` (output.trace true) and
 * `simdiag check --json` on the trace.json it wrote, and asserts that the diagnosis names what was
 * injected — the fault is the independent truth, chosen here, not computed by either tool:
 *   (0) no fault                                  -> exit 0, nothing flagged (no false alarm)
 *   (a) faults.slow_gpus [{gpu g, factor 1.5}]    -> exactly GPU g is the straggler
 *   (b) routing "hot", hot_expert h               -> severe imbalance, expert h hottest, held by the
 *                                                    GPUs of EP index h / (E / ep)
 *   (c) faults.stalls [{gpu g, layer 0, mb 1}]    -> simrun exits 1 but writes the trace; GPU g is
 *                                                    the missing rank and the culprit of the hang
 *
 * The cluster: 4 nodes x 8 GPUs, a 4-layer MoE with 16 experts (top-2), tp 1 x pp 2 x ep 8 x dp 2,
 * placement ep-inner (GPU = rank; rank = ((d * pp + s) * ep + e) * tp + t). One step simulates in
 * well under a second.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli_run.h"

#define EXPERTS 16
#define EP 8

static char simrun[4096], simdiag[4096];
static char tmpdir[] = "/tmp/moesim-diagloop-XXXXXX";

/* Run `bin` with args (NULL-terminated); stdout/stderr go to files in tmpdir (kept for messages). */
static int run(const char *bin, ...) {
    va_list ap;
    va_start(ap, bin);
    int rc = cli_run_va(bin, tmpdir, NULL, 0, NULL, 0, ap);
    va_end(ap);
    return rc;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    b[fread(b, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return b;
}

static void show_output(void) {
    char p[4200];
    const char *names[2] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        char *t = slurp(p);
        if (t) fprintf(stderr, "--- %s ---\n%s\n", names[i], t);
        free(t);
    }
}

/* Write the scenario `name` with the given "faults" and "routing" objects (JSON text) and simulate it.
 * Returns simrun's exit code; `dir` receives the output folder. */
static int simulate(const char *name, const char *faults, const char *routing, char *dir, size_t cap) {
    char path[4200];
    snprintf(dir, cap, "%s/%s", tmpdir, name);
    snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\n"
            "  \"format\": \"moesim-scenario/1\",\n"
            "  \"name\": \"%s\",\n"
            "  \"seed\": 7,\n"
            "  \"model\": { \"preset\": \"deepseek-v3\", \"layers\": 4, \"dense_layers\": 0, \"experts\": %d,\n"
            "             \"top_k\": 2, \"expert_groups\": 0, \"topk_groups\": 0, \"seq_len\": 1024 },\n"
            "  \"cluster\": { \"preset\": \"h800-8rail\", \"nodes\": 4 },\n"
            "  \"layout\": { \"tp\": 1, \"pp\": 2, \"ep\": %d, \"dp\": 2, \"micro_batch\": 1, \"global_batch\": 64,\n"
            "              \"schedule\": \"1f1b\", \"placement\": \"ep-inner\" },\n"
            "  \"routing\": %s,\n"
            "  \"faults\": %s,\n"
            "  \"output\": { \"dir\": \"%s\", \"trace\": true, \"levels\": [\"step\"] }\n"
            "}\n",
            name, EXPERTS, EP, routing, faults, dir);
    fclose(f);
    int rc = run(simrun, path, "--levels", "step", "--out", dir, "--jobs", "1", "--quiet", NULL);
    if (rc != 0) show_output();
    return rc;
}

/* simdiag check DIR/trace.json --json DIR/diag.json; returns the parsed report, *rc its exit code. */
static cJSON *diagnose(const char *dir, int *rc) {
    char trace[4300], json[4300];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    snprintf(json, sizeof json, "%s/diag.json", dir);
    assert_int_equal(access(trace, R_OK), 0);
    *rc = run(simdiag, "check", trace, "--json", json, NULL);
    show_output();   /* the diagnosis in the test log: what a user would read */
    char *t = slurp(json);
    assert_non_null(t);
    cJSON *doc = cJSON_Parse(t);
    free(t);
    assert_non_null(doc);
    return doc;
}

static const cJSON *get(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) fail_msg("missing key %s", k);
    return v;
}

/* (0) healthy: no false alarm on a clean simulated step. */
static void test_no_fault(void **state) {
    (void)state;
    char dir[4200];
    assert_int_equal(simulate("clean", "{}", "{ \"distribution\": \"uniform\" }", dir, sizeof dir), 0);
    int rc;
    cJSON *d = diagnose(dir, &rc);
    assert_int_equal(rc, 0);
    assert_true(cJSON_IsTrue(get(d, "healthy")));
    assert_int_equal(cJSON_GetArraySize(get(get(d, "stragglers"), "stragglers")), 0);
    assert_false(cJSON_IsTrue(get(get(d, "expert_load"), "severe")));
    assert_true(cJSON_IsNull(get(d, "hang")));
    cJSON_Delete(d);
}

/* (a) a slow GPU, once in each pipeline stage: GPU 13 = rank 13 = (d 0, s 1, e 5) and
 * GPU 18 = rank 18 = (d 1, s 0, e 2). */
static void test_slow_gpu(void **state) {
    (void)state;
    const int gpus[2] = {13, 18};
    for (int k = 0; k < 2; k++) {
        char name[64], faults[256], dir[4200];
        snprintf(name, sizeof name, "slow-%d", gpus[k]);
        snprintf(faults, sizeof faults, "{ \"slow_gpus\": [ { \"gpu\": %d, \"factor\": 1.5 } ] }", gpus[k]);
        assert_int_equal(simulate(name, faults, "{ \"distribution\": \"uniform\" }", dir, sizeof dir), 0);
        int rc;
        cJSON *d = diagnose(dir, &rc);
        assert_int_equal(rc, 3);
        const cJSON *s = get(get(d, "stragglers"), "stragglers");
        assert_int_equal(cJSON_GetArraySize(s), 1);   /* exactly that GPU */
        const cJSON *g = cJSON_GetArrayItem(s, 0);
        assert_int_equal(get(g, "gpu")->valueint, gpus[k]);
        assert_int_equal(get(g, "node")->valueint, gpus[k] / 8);
        assert_int_equal(get(g, "local_gpu")->valueint, gpus[k] % 8);
        /* 1.5 x its 15 peers; the stage mean includes it: (1.5 - 16.5 / 16) / (16.5 / 16) = +45.5% */
        double pct = get(g, "pct_over_mean")->valuedouble;
        assert_true(pct > 35.0 && pct < 50.0);
        assert_false(cJSON_IsTrue(get(get(d, "expert_load"), "severe")));
        assert_true(cJSON_IsNull(get(d, "hang")));
        /* its EP group waits for it in the all-to-alls: that is the straggler, not a link */
        assert_int_equal(cJSON_GetArraySize(get(d, "slow_links")), 0);
        cJSON_Delete(d);
    }
}

/* (d) a slow link: GPU 10's NVLink at a quarter of its bandwidth. GPU 10 = rank 10 = (d 0, s 1, e 2);
 * its EP group is ranks 8..15 on node 1 (ep 8 = one node, ep-inner). Its busy time does not change,
 * so no straggler; the group's all-to-alls take longer than the other group's of stage 1. */
static void test_slow_link(void **state) {
    (void)state;
    char dir[4200];
    assert_int_equal(simulate("slow-link", "{ \"links\": [ { \"gpu\": 10, \"kind\": \"nvlink\", \"factor\": 0.25 } ] }",
                              "{ \"distribution\": \"uniform\" }", dir, sizeof dir), 0);
    int rc;
    cJSON *d = diagnose(dir, &rc);
    assert_int_equal(rc, 3);
    assert_int_equal(cJSON_GetArraySize(get(get(d, "stragglers"), "stragglers")), 0);
    const cJSON *sl = get(d, "slow_links");
    assert_int_equal(cJSON_GetArraySize(sl), 1);
    const cJSON *g = cJSON_GetArrayItem(sl, 0);
    assert_int_equal(get(g, "stage")->valueint, 1);
    assert_int_equal(get(g, "replica")->valueint, 0);
    assert_int_equal(get(g, "first_rank")->valueint, 8);
    assert_int_equal(get(g, "node_lo")->valueint, 1);
    assert_int_equal(get(g, "node_hi")->valueint, 1);
    assert_true(get(g, "comm_s")->valuedouble > 1.25 * get(g, "others_s")->valuedouble);
    cJSON_Delete(d);
}

/* (b) a hot expert (the seed's incident: one expert gets 60% of the tokens), dropless so that the
 * received counts are the routed ones. */
static void test_hot_expert(void **state) {
    (void)state;
    const int hot = 11, ep_index = hot / (EXPERTS / EP);   /* = 5: ranks 5, 13, 21, 29 */
    char routing[256], dir[4200];
    snprintf(routing, sizeof routing,
             "{ \"distribution\": \"hot\", \"hot_expert\": %d, \"hot_share\": 0.6, \"drop\": false }", hot);
    assert_int_equal(simulate("hot", "{}", routing, dir, sizeof dir), 0);
    int rc;
    cJSON *d = diagnose(dir, &rc);
    assert_int_equal(rc, 3);
    const cJSON *l = get(d, "expert_load");
    assert_true(cJSON_IsTrue(get(l, "severe")));
    const cJSON *h0 = cJSON_GetArrayItem(get(l, "hottest"), 0);
    assert_int_equal(get(h0, "expert")->valueint, hot);
    assert_int_equal(get(h0, "ep_index")->valueint, ep_index);
    const cJSON *holders = get(h0, "holders");
    assert_int_equal(cJSON_GetArraySize(holders), 4);   /* one per (replica, stage) */
    for (int i = 0; i < 4; i++) {
        int d_ = i / 2, s = i % 2, rank = (d_ * 2 + s) * EP + ep_index;
        assert_int_equal(get(cJSON_GetArrayItem(holders, i), "gpu")->valueint, rank);   /* ep-inner: GPU = rank */
    }
    /* any straggler the hot expert causes sits on its holders and is attributed to routing */
    const cJSON *s = get(get(d, "stragglers"), "stragglers");
    for (int i = 0; i < cJSON_GetArraySize(s); i++) {
        assert_int_equal(get(cJSON_GetArrayItem(s, i), "ep_index")->valueint, ep_index);
        assert_true(cJSON_IsTrue(get(cJSON_GetArrayItem(s, i), "holds_hot_expert")));
    }
    cJSON_Delete(d);
}

/* (c) a stalled rank: GPU 21 = rank 21 = (d 1, s 0, e 5) stops before layer 0 of micro-batch 1. */
static void test_stall(void **state) {
    (void)state;
    const int gpu = 21;
    char faults[256], dir[4200];
    snprintf(faults, sizeof faults, "{ \"stalls\": [ { \"gpu\": %d, \"layer\": 0, \"micro_batch\": 1 } ] }", gpu);
    assert_int_equal(simulate("stall", faults, "{ \"distribution\": \"uniform\" }", dir, sizeof dir), 1);
    int rc;
    cJSON *d = diagnose(dir, &rc);
    assert_int_equal(rc, 3);
    assert_false(cJSON_IsTrue(get(d, "healthy")));
    const cJSON *h = get(d, "hang");
    assert_true(cJSON_IsObject(h));
    assert_int_equal(get(h, "culprit_rank")->valueint, gpu);   /* ep-inner: rank = GPU */
    const cJSON *m = get(h, "missing");
    assert_int_equal(cJSON_GetArraySize(m), 1);
    assert_int_equal(get(cJSON_GetArrayItem(m, 0), "gpu")->valueint, gpu);
    assert_int_equal(get(cJSON_GetArrayItem(m, 0), "node")->valueint, gpu / 8);
    /* the rest of its EP group (d 1, s 0: ranks 16..23 but 21) waits in the all-to-all */
    const cJSON *w = get(h, "waiting");
    assert_true(cJSON_GetArraySize(w) >= 1);
    for (int i = 0; i < cJSON_GetArraySize(w); i++) {
        int r = cJSON_GetArrayItem(w, i)->valueint;
        assert_true(r >= 16 && r < 24 && r != gpu);
    }
    cJSON_Delete(d);
}

static int setup(void **state) {
    (void)state;
    const char *bin = getenv("MOESIM_BIN");
    snprintf(simrun, sizeof simrun, "%s/simrun", bin ? bin : "build/tools");
    snprintf(simdiag, sizeof simdiag, "%s/simdiag", bin ? bin : "build/tools");
    if (!mkdtemp(tmpdir)) return -1;
    return access(simrun, X_OK) || access(simdiag, X_OK);
}

static int teardown(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_fault),
        cmocka_unit_test(test_slow_gpu),
        cmocka_unit_test(test_hot_expert),
        cmocka_unit_test(test_slow_link),
        cmocka_unit_test(test_stall),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
