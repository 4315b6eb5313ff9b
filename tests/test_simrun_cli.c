/* test_simrun_cli.c — simrun end to end, as a user runs it: exit codes, files written, the results
 * contract (SCENARIO.md keys), determinism, sharding + merge and resume giving the same results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char simrun[4096];
static char tmpdir[] = "/tmp/moesim-cli-XXXXXX";

/* Run simrun with args (NULL-terminated); capture stdout/stderr. Returns the exit code. */
static int run(char *out, size_t out_cap, char *errbuf, size_t err_cap, ...) {
    va_list ap;
    va_start(ap, err_cap);
    int rc = cli_run_va(simrun, tmpdir, out, out_cap, errbuf, err_cap, ap);
    va_end(ap);
    return rc;
}

/* The whole file, or NULL when it cannot be read. */
static char *slurp(const char *path) {
    moe_error e = {0};
    return read_file_text(path, NULL, &e);
}

static cJSON *load_results(const char *dir) {
    char path[8600];
    snprintf(path, sizeof path, "%s/results.json", dir);
    char *t = slurp(path);
    assert_non_null(t);
    cJSON *doc = cJSON_Parse(t);
    free(t);
    assert_non_null(doc);
    return doc;
}

/* One integer from an SQL query on DIR/results.db (-1 on failure). */
static long db_long(const char *dir, const char *sql) {
    char path[8600];
    snprintf(path, sizeof path, "%s/results.db", dir);
    sqlite3 *h;
    long v = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
            int rc = sqlite3_step(st);
            v = rc == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(h);
    return v;
}

static int setup(void **state) {
    (void)state;
    const char *bin = getenv("MOESIM_BIN");
    snprintf(simrun, sizeof simrun, "%s/simrun", bin ? bin : "build/tools");
    if (!mkdtemp(tmpdir)) return -1;
    return access(simrun, X_OK);
}

static int teardown(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_usage_and_exit_codes(void **state) {
    (void)state;
    char out[8192], err[8192];
    assert_int_equal(run(out, sizeof out, err, sizeof err, "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: simrun"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, NULL), 2);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "/nonexistent/x.json", NULL), 2);
    assert_non_null(strstr(err, "/nonexistent/x.json"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, "scenarios/seed-4096.json", "--levels", "plan,wow", NULL), 2);
    assert_non_null(strstr(err, "wow"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, "scenarios/seed-4096.json", "--bogus", NULL), 2);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "scenarios/seed-4096.json", "--shard", "2/2", NULL), 2);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "scenarios/seed-4096.json", "--jobs", "0", NULL), 2);

    char bad[8400];
    snprintf(bad, sizeof bad, "%s/bad.json", tmpdir);
    FILE *f = fopen(bad, "w");
    fputs("{\n  \"layout\": {\"pp\": 16,\n", f);   /* truncated */
    fclose(f);
    assert_int_equal(run(out, sizeof out, err, sizeof err, bad, NULL), 2);
    assert_non_null(strstr(err, "bad.json"));
}

/* The seed scenario at plan level: the contract's keys, the seed's numbers, nothing half-written. */
static void test_plan_results_contract(void **state) {
    (void)state;
    char dir[4200], out[16384], err[8192];
    snprintf(dir, sizeof dir, "%s/plan", tmpdir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "scenarios/seed-4096.json", "--levels", "plan",
                         "--out", dir, NULL), 0);
    cJSON *doc = load_results(dir);
    assert_string_equal(cJSON_GetObjectItem(doc, "format")->valuestring, "moesim-results/1");
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "points"), 0);
    assert_non_null(cJSON_GetObjectItem(p0, "scenario"));
    assert_non_null(cJSON_GetObjectItem(p0, "calibration"));
    assert_null(cJSON_GetObjectItem(p0, "step"));   /* not computed: absent, not zero */
    assert_null(cJSON_GetObjectItem(p0, "run"));
    cJSON *plan = cJSON_GetObjectItem(p0, "plan");
    const char *keys[] = {"params_total", "params_active", "flops_per_token", "flops_per_token_6n", "total_flops",
                          "pure_compute_days", "memory_GiB", "fits_memory", "warnings", "step_time_s",
                          "bubble_fraction", "mtbf_cluster_h", "young_interval_min", "daly_interval_min", NULL};
    for (const char **k = keys; *k; k++) assert_non_null(cJSON_GetObjectItem(plan, *k));
    /* seed 003: 26,000 h / 4096 = 6.35 h; 18.3 days at 52% MFU */
    assert_true(fabs(cJSON_GetObjectItem(plan, "mtbf_cluster_h")->valuedouble - 26000.0 / 4096) < 1e-9);
    assert_true(fabs(cJSON_GetObjectItem(plan, "pure_compute_days")->valuedouble - 18.3) < 0.05);

    char csv_path[8400];
    snprintf(csv_path, sizeof csv_path, "%s/results.csv", dir);
    char *csv = slurp(csv_path);
    assert_non_null(csv);
    assert_non_null(strstr(csv, "plan.step_time_s"));
    assert_non_null(strstr(csv, "plan.memory_GiB.total"));
    assert_int_equal((int)(strchr(csv, '\n') - csv) > 0, 1);
    free(csv);
    /* no temporary files left behind */
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) assert_null(strstr(e->d_name, ".tmp"));
    closedir(d);
    assert_non_null(strstr(out, "results.json"));
    cJSON_Delete(doc);
}

/* A sweep split into shards and merged equals the single run; --resume recomputes only what is missing. */
static void test_shards_merge_resume(void **state) {
    (void)state;
    char one[4200], s0[4200], s1[4200], merged[4200], out[65536], err[8192];
    snprintf(one, sizeof one, "%s/one", tmpdir);
    snprintf(s0, sizeof s0, "%s/s0", tmpdir);
    snprintf(s1, sizeof s1, "%s/s1", tmpdir);
    snprintf(merged, sizeof merged, "%s/merged", tmpdir);
    const char *sc = "scenarios/layout-sweep.json";
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", one, "--quiet", NULL), 0);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", s0, "--shard", "0/2",
                         "--quiet", NULL), 0);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", s1, "--shard", "1/2",
                         "--quiet", NULL), 0);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s0, s1, "--out", merged, NULL), 0);
    char a[8400], b[8400];
    snprintf(a, sizeof a, "%s/results.json", one);
    snprintf(b, sizeof b, "%s/results.json", merged);
    char *ta = slurp(a), *tb = slurp(b);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_string_equal(ta, tb);
    cJSON *doc = cJSON_Parse(ta);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "points"));
    assert_true(n > 10);
    cJSON_Delete(doc);

    /* resume: remove three points from the database; --resume evaluates them again and only them, says
     * so, and counts its progress over them. The exports a killed writer left (its pid is gone) are
     * removed; a live writer's, and other names, stay. */
    assert_int_equal(db_long(one, "DELETE FROM points WHERE id IN (3, 4, 5)"), 0);
    assert_int_equal(db_long(one, "SELECT count(*) FROM points"), n - 3);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char tmp[5][8600];
    snprintf(tmp[0], sizeof tmp[0], "%s/results.json.tmp.%d.0", one, (int)dead);
    snprintf(tmp[1], sizeof tmp[1], "%s/results.csv.tmp.%d.12", one, (int)dead);
    snprintf(tmp[2], sizeof tmp[2], "%s/results.json.tmp.%d.0", one, (int)getpid());   /* alive */
    snprintf(tmp[3], sizeof tmp[3], "%s/results.json.tmp.%d.0x", one, (int)dead);      /* not our pattern */
    snprintf(tmp[4], sizeof tmp[4], "%s/notes.txt.tmp.%d.0", one, (int)dead);          /* not an export */
    for (int i = 0; i < 5; i++) {
        FILE *f = fopen(tmp[i], "w");
        assert_non_null(f);
        fputs("{\"half\": ", f);
        fclose(f);
    }
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", one, "--resume", NULL), 0);
    char want[4400];
    snprintf(want, sizeof want, "resume: %d of %d points kept from %s/results.db; evaluating the other 3", n - 3, n, one);
    if (!strstr(out, want)) fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "; %d kept from the earlier run, 3 evaluated now)", n - 3);
    if (!strstr(out, want)) fail_msg("no '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "progress: evaluated 3/3 points, ");
    if (!strstr(err, want) || !strstr(err, " kept")) fail_msg("no '%s... kept' in:\n%s", want, err);
    for (int i = 0; i < 5; i++)
        if ((access(tmp[i], F_OK) == 0) != (i >= 2)) fail_msg("%s: %s", tmp[i], i >= 2 ? "removed" : "left behind");
    for (int i = 2; i < 5; i++) unlink(tmp[i]);
    char *tc = slurp(a);
    assert_string_equal(ta, tc);
    free(ta);
    free(tb);
    free(tc);
}

/* Same scenario and seed: byte-identical results (wall-clock fields zeroed by --reproducible): the
 * seed scenario through plan and step (4096 GPUs, SimGrid patterns), a small one through all levels. */
static void same_bytes_twice(const char *scenario_path, const char *levels, const char *tag) {
    char d1[4200], d2[4200], out[16384], err[8192];
    snprintf(d1, sizeof d1, "%s/%s-1", tmpdir, tag);
    snprintf(d2, sizeof d2, "%s/%s-2", tmpdir, tag);
    assert_int_equal(run(out, sizeof out, err, sizeof err, scenario_path, "--levels", levels, "--reproducible",
                         "--out", d1, "--quiet", NULL), 0);
    assert_int_equal(run(out, sizeof out, err, sizeof err, scenario_path, "--levels", levels, "--reproducible",
                         "--out", d2, "--quiet", NULL), 0);
    char a[8400], b[8400];
    snprintf(a, sizeof a, "%s/results.json", d1);
    snprintf(b, sizeof b, "%s/results.json", d2);
    char *ta = slurp(a), *tb = slurp(b);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_string_equal(ta, tb);
    cJSON *doc = cJSON_Parse(ta);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "points"), 0);
    assert_non_null(cJSON_GetObjectItem(p0, "step"));
    cJSON_Delete(doc);
    free(ta);
    free(tb);
}

static void test_deterministic(void **state) {
    (void)state;
    same_bytes_twice("scenarios/seed-4096.json", "plan,step", "seed");
    same_bytes_twice("tests/data/scenarios/small-moe.json", "plan,step,run", "small");
}

/* --search: every valid layout of the small cluster at plan level, the best K that fit simulated at
 * step level and ranked. The truth: the plan-level sweep over the same layouts ("layouts": "all"),
 * whose fitting points ranked by plan step time must start with the searched layouts, in order. */
static void test_search(void **state) {
    (void)state;
    char dir[4200], out[16384], err[8192];
    snprintf(dir, sizeof dir, "%s/search", tmpdir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "--search", "tests/data/scenarios/small-moe.json", "--top",
                         "3", "--out", dir, NULL), 0);
    assert_non_null(strstr(out, "valid layouts"));
    cJSON *doc = load_results(dir);
    cJSON *pts = cJSON_GetObjectItem(doc, "points");
    /* the whole plan-level ranking is stored: every valid layout, the best 3 simulated */
    int n_ranked = cJSON_GetArraySize(pts);
    assert_true(n_ranked > 3);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 3), "step"));
    double last = 0;
    for (int i = 0; i < 3; i++) {
        cJSON *p = cJSON_GetArrayItem(pts, i);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "plan"), "fits_memory")));
        assert_non_null(cJSON_GetObjectItem(p, "step"));
        double t = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "plan"), "step_time_s")->valuedouble;
        assert_true(t >= last);   /* point ids follow the plan ranking */
        last = t;
    }

    /* the independent ranking: a plan-level sweep over "layouts": "all" of the same scenario */
    char *text = slurp("tests/data/scenarios/small-moe.json");
    assert_non_null(text);
    char *end = strrchr(text, '}');
    assert_non_null(end);
    *end = '\0';
    char sweep_path[8400], sweep_dir[8400];
    snprintf(sweep_path, sizeof sweep_path, "%s/small-layouts.json", tmpdir);
    snprintf(sweep_dir, sizeof sweep_dir, "%s/small-layouts", tmpdir);
    FILE *f = fopen(sweep_path, "w");
    fprintf(f, "%s, \"sweep\": {\"layouts\": \"all\"}}\n", text);
    fclose(f);
    free(text);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sweep_path, "--levels", "plan", "--out", sweep_dir,
                         "--quiet", NULL), 0);
    cJSON *all = load_results(sweep_dir);
    /* best three fitting layouts by plan step time, by selection */
    const cJSON *chosen[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        double best = INFINITY;
        for (cJSON *p = cJSON_GetObjectItem(all, "points")->child; p; p = p->next) {
            cJSON *plan = cJSON_GetObjectItem(p, "plan");
            double t = cJSON_GetObjectItem(plan, "step_time_s")->valuedouble;
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= chosen[j] == p;
            if (!taken && cJSON_IsTrue(cJSON_GetObjectItem(plan, "fits_memory")) && t < best) {
                best = t;
                chosen[k] = p;
            }
        }
        assert_non_null(chosen[k]);
        assert_true(cJSON_Compare(cJSON_GetObjectItem(chosen[k], "sweep"),
                                  cJSON_GetObjectItem(cJSON_GetArrayItem(pts, k), "sweep"), 1));
    }
    /* every valid layout ranked: as many as the layouts sweep has, those that do not fit infeasible */
    int n_all = cJSON_GetArraySize(cJSON_GetObjectItem(all, "points")), n_fit = 0;
    for (cJSON *p = cJSON_GetObjectItem(all, "points")->child; p; p = p->next)
        n_fit += cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "plan"), "fits_memory"));
    assert_int_equal(n_ranked, n_all);
    assert_int_equal(db_long(dir, "SELECT count(*) FROM points WHERE status = 'infeasible'"), n_all - n_fit);
    cJSON_Delete(all);
    cJSON_Delete(doc);
    /* --levels step without --top: every layout that fits simulated at step level (the plan still
     * ranks them and keeps out what does not fit) */
    char every[4300];
    snprintf(every, sizeof every, "%s/search-step", tmpdir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "search", "tests/data/scenarios/small-moe.json", "--levels",
                         "step", "--out", every, "--quiet", NULL), 0);
    assert_int_equal(db_long(every, "SELECT count(*) FROM points WHERE \"step.step_time_s\" IS NOT NULL"), n_fit);
    assert_true(n_fit > 8);   /* more than the default --top */
    /* a scenario that already sweeps cannot be searched */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "--search", "scenarios/checkpoint-sweep.json", NULL), 2);
}

/* Interrupted and resumed: a sweep killed with SIGINT (as Ctrl-C does, to the whole process group)
 * keeps every point it committed; --resume evaluates only the rest (the kept points are not
 * evaluated again: their wall-clock field is unchanged) and the results equal an uninterrupted run's. */
static void test_interrupt_and_resume(void **state) {
    (void)state;
    char sc[8400], dir[8400], full[8400], out[16384], err[8192];
    char *text = slurp("tests/data/scenarios/small-moe.json");
    assert_non_null(text);
    *strrchr(text, '}') = '\0';
    snprintf(sc, sizeof sc, "%s/interrupt.json", tmpdir);
    FILE *f = fopen(sc, "w");
    fprintf(f, "%s, \"sweep\": {\"routing.capacity_factor\": [1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, "
               "1.4, 1.45, 1.5, 1.55, 1.6, 1.65, 1.7, 1.75]}}\n", text);
    fclose(f);
    free(text);
    snprintf(dir, sizeof dir, "%s/interrupted", tmpdir);
    snprintf(full, sizeof full, "%s/uninterrupted", tmpdir);

    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);   /* its own process group, like a shell job: Ctrl-C reaches every worker */
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        /* every point committed as it finishes: the kill lands between points on any machine speed */
        execl(simrun, simrun, sc, "--levels", "plan,step", "--jobs", "1", "--commit-every", "0", "--out", dir,
              (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    struct timespec tick = {0, 5 * 1000 * 1000};
    const char *count = "SELECT count(*) FROM points";
    for (int i = 0; i < 12000 && db_long(dir, count) < 3; i++) nanosleep(&tick, NULL);
    kill(-pid, SIGINT);
    int status;
    waitpid(pid, &status, 0);
    long kept = db_long(dir, count);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) skip();   /* finished before the signal */
    assert_true(kept >= 3 && kept < 16);
    double before[16];
    for (int i = 0; i < kept; i++) {
        char q[200];
        snprintf(q, sizeof q, "SELECT CAST(\"step.sim_wall_s\" * 1e9 AS INTEGER) FROM points WHERE id = %d", i);
        before[i] = (double)db_long(dir, q);   /* the finished points are the first ones */
        assert_true(before[i] > 0);
    }
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan,step", "--jobs", "1", "--out",
                         dir, "--resume", "--quiet", NULL), 0);
    for (int i = 0; i < kept; i++) {
        char q[200];
        snprintf(q, sizeof q, "SELECT CAST(\"step.sim_wall_s\" * 1e9 AS INTEGER) FROM points WHERE id = %d", i);
        assert_true((double)db_long(dir, q) == before[i]);   /* not evaluated again */
    }
    assert_int_equal(db_long(dir, count), 16);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan,step", "--out", full,
                         "--reproducible", "--quiet", NULL), 0);
    /* same points: compare without the wall-clock fields (the interrupted run was not --reproducible) */
    cJSON *a = load_results(dir), *b = load_results(full);
    cJSON *pa = cJSON_GetObjectItem(a, "points"), *pb = cJSON_GetObjectItem(b, "points");
    assert_int_equal(cJSON_GetArraySize(pa), 16);
    for (int i = 0; i < 16; i++) {
        cJSON *x = cJSON_GetObjectItem(cJSON_GetArrayItem(pa, i), "step");
        cJSON *y = cJSON_GetObjectItem(cJSON_GetArrayItem(pb, i), "step");
        cJSON_DeleteItemFromObject(x, "sim_wall_s");
        cJSON_DeleteItemFromObject(y, "sim_wall_s");
    }
    assert_true(cJSON_Compare(pa, pb, 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_dump_platform(void **state) {
    (void)state;
    char path[8400], out[8192], err[8192];
    snprintf(path, sizeof path, "%s/fabric.xml", tmpdir);
    /* the XML lists routes, so it is for clusters of up to 256 GPUs: dump the fabric of a small one */
    assert_int_equal(run(out, sizeof out, err, sizeof err, "--dump-platform", path, "tests/data/scenarios/small-moe.json", NULL), 0);
    char *x = slurp(path);
    assert_non_null(x);
    assert_non_null(strstr(x, "<platform"));
    free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_and_exit_codes),
        cmocka_unit_test(test_plan_results_contract),
        cmocka_unit_test(test_shards_merge_resume),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_interrupt_and_resume),
        cmocka_unit_test(test_dump_platform),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
