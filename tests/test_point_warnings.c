/* test_point_warnings.c — every level of a point carries the warnings a planner would raise (also
 * printed on stderr), and the step's MFU and tokens/s/GPU count only the work actually done.
 *
 * The cases are the small 32-GPU MoE of tests/data/scenarios/small-moe.json (4 blocks, 1 dense, 16
 * experts of 3 x 1024 x 512 parameters, top-2; 128 sequences of 1024 tokens per step) changed one way
 * each, with hand-worked truths:
 *   - 0.1 GiB of HBM (it needs 0.43): it cannot fit; the step level is simulated anyway and says so;
 *   - a 60% hot expert with capacity factor 1.0 and dropping: over 1% of the pairs dropped; tokens/s
 *     x step time x 32 GPUs = 131,072 x (1 - dropped); the model FLOPs per token lose exactly the
 *     routed-expert FLOPs of the dropped pairs: 3 (fwd + bwd) x 2 x 2 (top-2) x 3 x 1024 x 512 x 3 MoE
 *     blocks = 56,623,104 per token at 100% dropped;
 *   - a GPU 30x slower: the step is far above the plan (> 20%);
 *   - GPU MTBF 10 h over 32 GPUs (M = 18.75 min) with a 30 s write: Young's interval sqrt(2 x 0.5 x
 *     18.75) = 4.33 min, under 5 minutes;
 *   - a fixed 2-minute interval with a 3-minute write: checkpoints come faster than they are written;
 *   - 0.46 GiB of HBM: the 0.43 GiB it needs exceed the 0.4232 GiB left by the 8% reserve;
 *   - a stalled GPU under a 60 s watchdog: the step hung, where and who (test_hung_step). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char simrun[4096];
static char tmpdir[] = "/tmp/moesim-warn-XXXXXX";
static char out[1 << 16], err[1 << 16];

/* small-moe with `extra` members added at the top level (they replace the file's own sections) */
static const char *const BASE =
    "\"model\": {\"preset\": null, \"layers\": 4, \"dense_layers\": 1, \"hidden\": 1024, \"heads\": 8, \"head_dim\": 128,"
    " \"kv_heads\": 8, \"v_head_dim\": 128, \"q_lora_rank\": 0, \"kv_lora_rank\": 0, \"rope_head_dim\": 0,"
    " \"ffn_hidden\": 4096, \"ffn_act\": \"swiglu\", \"experts\": 16, \"shared_experts\": 1, \"expert_hidden\": 512,"
    " \"top_k\": 2, \"expert_groups\": 0, \"topk_groups\": 0, \"vocab\": 32000, \"seq_len\": 1024,"
    " \"attention\": \"gqa\", \"tie_embeddings\": false, \"published_active_params\": 0},"
    " \"layout\": {\"tp\": 1, \"pp\": 2, \"ep\": 8, \"dp\": 2, \"micro_batch\": 1, \"global_batch\": 128, \"schedule\": \"1f1b\"},"
    " \"run\": {\"tokens\": 1e10, \"trials\": 20}, \"seed\": 7";

/* Write scenario NAME (the text `json`), run it at `levels`, return the parsed results (caller frees). */
static cJSON *run_text(const char *name, const char *json, const char *levels) {
    char path[4300], dir[4300], res[4400];
    snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    int rc = cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, path, "--levels", levels, "--out", dir,
                             "--jobs", "1", NULL);
    if (rc != 0) fail_msg("%s: exit %d: %s", name, rc, err);
    snprintf(res, sizeof res, "%s/results.json", dir);
    moe_error e = {0};
    char *t = read_file_text(res, NULL, &e);
    assert_non_null(t);
    cJSON *doc = cJSON_Parse(t);
    free(t);
    assert_non_null(doc);
    return doc;
}

/* small-moe with `cluster` members and `extra` sections added */
static cJSON *run_case(const char *name, const char *cluster, const char *extra, const char *levels) {
    char json[8192];
    snprintf(json, sizeof json, "{%s, \"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 4, \"leaf_down_ports\": 2%s}%s%s}\n",
             BASE, cluster, *extra ? ", " : "", extra);
    return run_text(name, json, levels);
}

static const cJSON *level(const cJSON *doc, const char *lvl) {
    return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "points"), 0), lvl);
}

static double num(const cJSON *doc, const char *lvl, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(level(doc, lvl), key);
    assert_non_null(v);
    return v->valuedouble;
}

/* Does level `lvl` hold a warning containing `needle`? */
static int warns(const cJSON *doc, const char *lvl, const char *needle) {
    const cJSON *w = cJSON_GetObjectItem(level(doc, lvl), "warnings");
    if (!cJSON_IsArray(w)) fail_msg("%s has no warnings list", lvl);
    for (const cJSON *e = w->child; e; e = e->next)
        if (strstr(e->valuestring, needle)) return 1;
    return 0;
}

static int setup(void **state) {
    (void)state;
    cli_tool_path("simrun", simrun, sizeof simrun);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

static void test_memory(void **state) {
    (void)state;
    cJSON *ok = run_case("fits", "", "\"routing\": {\"drop\": false}", "plan,step");
    assert_false(warns(ok, "plan", "memory"));
    assert_false(warns(ok, "step", "memory"));
    assert_false(warns(ok, "step", "dropped"));
    cJSON_Delete(ok);
    cJSON *big = run_case("no-fit", ", \"gpu\": {\"mem_GiB\": 0.1}", "\"routing\": {\"drop\": false}", "plan,step");
    assert_true(warns(big, "plan", "does not fit in memory"));
    assert_true(warns(big, "step", "simulated anyway"));
    assert_non_null(strstr(err, "warning: point 0"));   /* on stderr too */
    assert_non_null(strstr(err, "simulated anyway"));
    cJSON_Delete(big);
    /* 0.46 GiB holds the 0.43 it needs, but not once the 8% reserve is taken: 0.46 x 0.92 = 0.4232 GiB
     * usable, which the warning says (with the reserve) and plan.memory_GiB.usable holds */
    cJSON *tight = run_case("reserve", ", \"gpu\": {\"mem_GiB\": 0.46}", "\"routing\": {\"drop\": false}", "plan");
    const cJSON *mem = cJSON_GetObjectItem(level(tight, "plan"), "memory_GiB");
    const cJSON *need = cJSON_GetObjectItem(mem, "total"), *usable = cJSON_GetObjectItem(mem, "usable");
    assert_non_null(need);
    assert_true(need->valuedouble > 0.4232 && need->valuedouble < 0.46);
    if (!cJSON_IsNumber(usable)) fail_msg("no plan.memory_GiB.usable");
    assert_true(fabs(usable->valuedouble - 0.4232) < 1e-12);
    if (!warns(tight, "plan", "of 0.4232 GiB usable (0.46 GiB less the 8% reserve)"))
        fail_msg("the memory warning hides the reserve: %s", err);
    cJSON_Delete(tight);
}

/* A GPU that stops (faults.stalls) under NCCL's watchdog: GPU 13 (node 1, GPU 5 of 8) holds pipeline
 * stage 1 (layers 2-3) and stops before layer 3 of micro-batch 2, so its 7 EP peers wait in that
 * dispatch and the other 24 ranks (32 - 8) are blocked elsewhere; the step fails 60 s after the first
 * waiter arrived. The step's warning says so and where, points to simdiag, and no plan-vs-step warning
 * compares the plan with a step that never ended; the table prints `hung`. */
static void test_hung_step(void **state) {
    (void)state;
    cJSON *hung = run_case("hung", "",
                           "\"routing\": {\"drop\": false}, \"faults\": {\"collective_timeout_s\": 60,"
                           " \"stalls\": [{\"gpu\": 13, \"layer\": 3, \"micro_batch\": 2}]}",
                           "plan,step");
    const cJSON *bd = cJSON_GetObjectItem(level(hung, "step"), "breakdown");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(level(hung, "step"), "timed_out")));
    double fired = cJSON_GetObjectItem(cJSON_GetObjectItem(bd, "collective_timeout"), "fired_s")->valuedouble;
    assert_true(fired > 60 && fired < 61);
    const char *want[] = {"the step hung: rank 13 (node 1, GPU 5) never arrived at A2A_DISPATCH of EP group",
                          "(layer 3, micro-batch 2), where 7 ranks waited (24 more blocked elsewhere)",
                          "faults.collective_timeout_s = 60 s", "simdiag check DIR", "no step time, MFU or tokens/s"};
    for (int i = 0; i < 5; i++)
        if (!warns(hung, "step", want[i])) fail_msg("the step's warnings lack '%s'", want[i]);
    assert_false(warns(hung, "step", "differ by"));
    assert_non_null(strstr(out, " hung "));
    assert_non_null(strstr(out, "point 0: the step hung: rank 13 (node 1, GPU 5)"));
    cJSON_Delete(hung);
}

static void test_dropped_tokens_and_processed_work(void **state) {
    (void)state;
    const double tokens = 128.0 * 1024, G = 32, routed = 56623104.0;
    /* dropless: every pair processed, the model's full FLOPs per token */
    cJSON *all = run_case("hot-dropless", "",
                          "\"routing\": {\"distribution\": \"hot\", \"hot_expert\": 3, \"hot_share\": 0.6, \"drop\": false}",
                          "plan,step");
    assert_true(num(all, "step", "dropped_token_fraction") == 0);
    double t0 = num(all, "step", "step_time_s");
    double F = num(all, "step", "tflops_per_gpu") * 1e12 * t0 * G / tokens;
    assert_true(fabs(num(all, "step", "tokens_per_s_per_gpu") * t0 * G / tokens - 1) < 1e-9);
    assert_false(warns(all, "step", "dropped"));
    cJSON_Delete(all);

    cJSON *drop = run_case("hot-drop", "",
                           "\"routing\": {\"distribution\": \"hot\", \"hot_expert\": 3, \"hot_share\": 0.6, "
                           "\"capacity_factor\": 1.0, \"drop\": true}",
                           "plan,step");
    double d = num(drop, "step", "dropped_token_fraction"), t = num(drop, "step", "step_time_s");
    print_message("dropped %.4f of the pairs\n", d);
    assert_true(d > 0.01);
    assert_true(warns(drop, "step", "dropped"));
    /* tokens/s/GPU: the processed share only */
    assert_true(fabs(num(drop, "step", "tokens_per_s_per_gpu") * t * G / tokens - (1 - d)) < 1e-9);
    /* MFU: the full count less the routed-expert FLOPs of the dropped pairs */
    double Fp = num(drop, "step", "tflops_per_gpu") * 1e12 * t * G / tokens;
    assert_true(fabs((F - Fp) / d - routed) < 1e-6 * routed);
    assert_true(fabs(num(drop, "step", "mfu") * 989e12 - num(drop, "step", "tflops_per_gpu") * 1e12) < 1e3);
    cJSON_Delete(drop);
}

static void test_plan_step_disagree(void **state) {
    (void)state;
    /* no host model: the small model's host-bound passes would lift the plan towards the slow GPU */
    cJSON *slow = run_case("slow-gpu", "",
                           "\"routing\": {\"drop\": false}, \"host\": {\"framework\": \"none\"}, "
                           "\"faults\": {\"slow_gpus\": [{\"gpu\": 5, \"factor\": 30}]}",
                           "plan,step");
    double plan = num(slow, "plan", "step_time_s"), step = num(slow, "step", "step_time_s");
    assert_true(fabs(step - plan) > 0.2 * step);   /* the case is what the warning is about */
    assert_true(warns(slow, "step", "differ by"));
    cJSON_Delete(slow);
}

static void test_checkpoint(void **state) {
    (void)state;
    cJSON *fast = run_case("short-interval", "",
                           "\"reliability\": {\"gpu_mtbf_h\": 10, \"checkpoint\": {\"policy\": \"young\", \"write_min\": 0.5}}",
                           "plan,run");
    assert_true(fabs(num(fast, "plan", "young_interval_min") - sqrt(2 * 0.5 * 18.75)) < 1e-9);
    assert_true(warns(fast, "plan", "under 5 minutes"));
    assert_true(warns(fast, "run", "under 5 minutes"));
    assert_false(warns(fast, "plan", "writes would queue"));
    cJSON_Delete(fast);
    cJSON *queue = run_case("write-queue", "",
                            "\"reliability\": {\"checkpoint\": {\"policy\": \"fixed\", \"interval_min\": 2, \"write_min\": 3}}",
                            "plan,run");
    assert_true(warns(queue, "plan", "writes would queue"));
    assert_true(warns(queue, "run", "writes would queue"));
    cJSON_Delete(queue);
    cJSON *fine = run_case("hourly", "", "\"reliability\": {\"checkpoint\": {\"policy\": \"fixed\", \"interval_min\": 60, \"write_min\": 3}}",
                           "plan,run");
    assert_false(warns(fine, "plan", "checkpoint"));
    assert_false(warns(fine, "run", "checkpoint"));
    cJSON_Delete(fine);
}

/* A run level without run.tokens for a model that publishes none warns, on stderr too, with the
 * value it assumed; a target no trial reaches prints in the table as the run.max_days cap with the
 * share of trials that reached it. 1e15 tokens at 131,072 tokens per step need over 7.6e9 steps:
 * no trial of 60 days gets there. */
static void test_run_tokens(void **state) {
    (void)state;
    char json[8192], base[4096];
    snprintf(base, sizeof base, "%s", BASE);
    char *run = strstr(base, " \"run\": {\"tokens\": 1e10, \"trials\": 20},");
    assert_non_null(run);
    memmove(run, run + strlen(" \"run\": {\"tokens\": 1e10, \"trials\": 20},"),
            strlen(run + strlen(" \"run\": {\"tokens\": 1e10, \"trials\": 20},")) + 1);
    static const char *const cluster = "\"cluster\": {\"preset\": \"h800-8rail\", \"nodes\": 4, \"leaf_down_ports\": 2}";
    snprintf(json, sizeof json, "{%s, %s, \"run\": {\"trials\": 20}}\n", base, cluster);
    cJSON *assumed = run_text("tokens-assumed", json, "plan,run");
    assert_true(warns(assumed, "run", "run.tokens is not set"));
    assert_true(warns(assumed, "run", "1.5e+13"));
    assert_non_null(strstr(err, "set run.tokens"));
    cJSON_Delete(assumed);
    snprintf(json, sizeof json, "{%s, %s, \"run\": {\"trials\": 20, \"tokens\": 1e15}}\n", base, cluster);
    cJSON *far = run_text("tokens-far", json, "plan,run");
    assert_false(warns(far, "run", "run.tokens"));
    assert_true(num(far, "run", "reached_fraction") == 0);
    assert_true(num(far, "run", "days_p50") == 60 && num(far, "run", "max_days") == 60);
    assert_non_null(strstr(out, " >60 0% "));
    cJSON_Delete(far);
    cJSON *near = run_case("tokens-near", "", "", "plan,run");   /* 1e10 tokens: every trial arrives */
    assert_true(num(near, "run", "reached_fraction") == 1);
    assert_null(strstr(out, ">60"));
    cJSON_Delete(near);
}

/* Every shipped scenario fits in memory (layout-sweep.json sweeps every factorization on purpose:
 * the ones that do not fit are part of its answer), so none is simulated beyond what a GPU holds. */
static void test_shipped_scenarios_fit(void **state) {
    (void)state;
    DIR *d = opendir("scenarios");
    assert_non_null(d);
    int checked = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0 || strcmp(e->d_name, "layout-sweep.json") == 0) continue;
        char path[600], dir[4400], res[4500];
        snprintf(path, sizeof path, "scenarios/%s", e->d_name);
        snprintf(dir, sizeof dir, "%s/shipped-%.*s", tmpdir, (int)(n - 5), e->d_name);
        if (cli_run(simrun, tmpdir, out, sizeof out, err, sizeof err, path, "--levels", "plan", "--out", dir, "-q", NULL))
            fail_msg("%s: %s", path, err);
        snprintf(res, sizeof res, "%s/results.json", dir);
        moe_error me = {0};
        char *t = read_file_text(res, NULL, &me);
        cJSON *doc = cJSON_Parse(t);
        free(t);
        for (const cJSON *p = cJSON_GetObjectItem(doc, "points")->child; p; p = p->next) {
            const cJSON *plan = cJSON_GetObjectItem(p, "plan");
            if (!cJSON_IsTrue(cJSON_GetObjectItem(plan, "fits_memory")))
                fail_msg("%s point %d does not fit: %.1f GiB", path, cJSON_GetObjectItem(p, "id")->valueint,
                         cJSON_GetObjectItem(cJSON_GetObjectItem(plan, "memory_GiB"), "total")->valuedouble);
        }
        cJSON_Delete(doc);
        checked++;
    }
    closedir(d);
    assert_true(checked >= 6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_dropped_tokens_and_processed_work),
        cmocka_unit_test(test_plan_step_disagree),
        cmocka_unit_test(test_hung_step),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_run_tokens),
        cmocka_unit_test(test_shipped_scenarios_fit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
