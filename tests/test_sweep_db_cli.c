/* test_sweep_db_cli.c — sweeps that are never mixed, lost or aborted, as a user runs them: kill -9 at
 * random moments then --resume (byte-identical exports, no process left), folders of another run
 * refused, infeasible points recorded, oversized sweeps refused, shard sets merged. The truth for
 * every interrupted, resumed or merged run is the same sweep run once, uninterrupted. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "tests/cli_run.h"

static char simrun[4096];
static char tmpdir[] = "/tmp/moesim-sweepdb-XXXXXX";
static char layouts_text[8192];   /* scenarios/layout-sweep.json without its closing brace and sweep */

static int run(char *out, size_t out_cap, char *errbuf, size_t err_cap, ...) {
    va_list ap;
    va_start(ap, err_cap);
    int rc = cli_run_va(simrun, tmpdir, out, out_cap, errbuf, err_cap, ap);
    va_end(ap);
    return rc;
}

static char *slurp_in(const char *dir, const char *name) {
    char p[8800];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    moe_error e = {0};
    return read_file_text(p, NULL, &e);
}

static long db_long(const char *dir, const char *sql) {
    char path[8600];
    snprintf(path, sizeof path, "%s/results.db", dir);
    if (access(path, F_OK) != 0) return -2;
    sqlite3 *h;
    long v = -1;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) v = (long)sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(h);
    return v;
}

/* A scenario file in tmpdir: layout-sweep.json with this "sweep" and seed. */
static void scenario_with(const char *name, const char *sweep_json, int seed, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.json", tmpdir, name);
    FILE *f = fopen(path, "w");
    fprintf(f, "%s, \"seed\": %d, \"sweep\": %s}\n", layouts_text, seed, sweep_json);
    fclose(f);
}

static void dir_of(const char *name, char *out, size_t cap) { snprintf(out, cap, "%s/%s", tmpdir, name); }

static void assert_same_file(const char *d1, const char *d2, const char *name) {
    char *a = slurp_in(d1, name), *b = slurp_in(d2, name);
    if (!a || !b) fail_msg("%s missing in %s or %s", name, d1, d2);
    if (strcmp(a, b) != 0) fail_msg("%s/%s and %s/%s differ", d1, name, d2, name);
    free(a);
    free(b);
}

static int setup(void **state) {
    (void)state;
    const char *bin = getenv("MOESIM_BIN");
    snprintf(simrun, sizeof simrun, "%s/simrun", bin ? bin : "build/tools");
    if (!mkdtemp(tmpdir)) return -1;
    moe_error e = {0};
    char *t = read_file_text("scenarios/layout-sweep.json", NULL, &e);
    if (!t) return -1;
    /* drop the file's own sweep and seed: each test gives its own */
    char *sw = strstr(t, "\"sweep\"");
    if (!sw) return -1;
    *sw = '\0';
    char *seed = strstr(t, "\"seed\": 42,");
    if (seed) memmove(seed, seed + strlen("\"seed\": 42,"), strlen(seed + strlen("\"seed\": 42,")) + 1);
    char *end = t + strlen(t);
    while (end > t && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == ',')) *--end = '\0';
    snprintf(layouts_text, sizeof layouts_text, "%s", t);
    free(t);
    return access(simrun, X_OK);
}

static int teardown(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Start simrun in its own process group (a shell job); returns its pid (= the group). */
static pid_t start(const char *sc, const char *dir, int resume) {
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        /* commits every 20 ms: the kill lands mid-sweep however fast the machine */
        if (resume)
            execl(simrun, simrun, sc, "--levels", "plan", "--jobs", "2", "--commit-every", "0.02", "--out", dir,
                  "--resume", (char *)NULL);
        else
            execl(simrun, simrun, sc, "--levels", "plan", "--jobs", "2", "--commit-every", "0.02", "--out", dir,
                  (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/* No process of group `pg` is left within 10 s (a loaded CI machine reaps slowly). */
static void assert_group_gone(pid_t pg) {
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 1000; i++) {
        if (kill(-pg, 0) != 0 && errno == ESRCH) return;
        nanosleep(&tick, NULL);
    }
    fail_msg("processes of group %d are still running after their parent was killed", (int)pg);
}

static void sleep_s(double s) {
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* kill -9 of the process group (and once of the parent alone) at random moments, --resume after
 * each: the exports equal an uninterrupted run's byte for byte, and no worker outlives its parent. */
static void test_kill9_resume(void **state) {
    (void)state;
    char sc[8400], dir[8400], full[8400], out[8192], err[8192];
    const char *sweep = "{\"layouts\": \"all\", \"layout.global_batch\": [15360, 30720, 46080, 61440, 76800, 92160, "
                        "107520, 122880, 138240, 153600], \"model.seq_len\": [1024, 2048, 3072, 4096, 5120, 6144, 7168, "
                        "8192, 9216, 10240]}";
    scenario_with("kill9", sweep, 42, sc, sizeof sc);
    dir_of("kill9-out", dir, sizeof dir);
    dir_of("kill9-full", full, sizeof full);
    unsigned seed = (unsigned)time(NULL);
    printf("# kill moments drawn with seed %u\n", seed);
    srand(seed);
    int interrupted = 0, finished = 0;
    for (int round = 0; round < 4 && !finished; round++) {
        pid_t pid = start(sc, dir, round > 0);
        /* the first round waits for the first committed points, then kills within 0.15 s: a sweep of
         * 16,900 plan points takes about a second on two cores, so the kill lands mid-sweep; later
         * rounds kill at any moment, before the database exists too */
        if (round == 0)
            for (int i = 0; i < 6000 && db_long(dir, "SELECT count(*) FROM points") < 1; i++) sleep_s(0.005);
        sleep_s((round == 0 ? 0.15 : 1.2) * rand() / (double)RAND_MAX);
        int parent_only = round == 1;   /* the parent alone: its workers must follow it */
        if (parent_only) kill(pid, SIGKILL);
        else kill(-pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status)) {
            assert_int_equal(WEXITSTATUS(status), 0);
            finished = 1;
        } else {
            assert_int_equal(WTERMSIG(status), SIGKILL);
            interrupted++;
        }
        assert_group_gone(pid);
        /* the database opens (when the kill came before it was created: none, -2) */
        long kept = db_long(dir, "SELECT count(*) FROM points WHERE status = 'ok'");
        assert_true(kept >= 0 || kept == -2);
    }
    assert_true(interrupted >= 1);
    if (!finished)
        assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", dir, "--resume",
                             "--quiet", NULL), 0);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", full, "--quiet", NULL), 0);
    assert_int_equal(db_long(dir, "SELECT count(*) FROM points"), 16900);
    assert_same_file(dir, full, "results.csv");
    assert_same_file(dir, full, "results.json");
}

/* A folder holds one run: another scenario is refused (exit 2, what to do said), --resume after a
 * changed seed names the field, --force replaces the run. */
static void test_never_mixed(void **state) {
    (void)state;
    char a[8400], b[8400], dir[8400], out[8192], err[8192];
    scenario_with("mix-a", "{\"layouts\": \"all\"}", 42, a, sizeof a);
    scenario_with("mix-b", "{\"layouts\": \"all\"}", 43, b, sizeof b);
    dir_of("mixed", dir, sizeof dir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, a, "--levels", "plan", "--out", dir, "--quiet", NULL), 0);
    char *before = slurp_in(dir, "results.csv");
    assert_non_null(before);
    assert_int_equal(run(out, sizeof out, err, sizeof err, b, "--levels", "plan", "--out", dir, "--quiet", NULL), 2);
    assert_non_null(strstr(err, "holds another run"));
    assert_non_null(strstr(err, "--out"));
    assert_non_null(strstr(err, "--force"));
    assert_int_equal(run(out, sizeof out, err, sizeof err, b, "--levels", "plan", "--out", dir, "--resume", "--quiet",
                         NULL), 2);
    assert_non_null(strstr(err, "scenario.seed is 42 there, 43 now"));
    /* other levels are another run too */
    assert_int_equal(run(out, sizeof out, err, sizeof err, a, "--levels", "plan,run", "--out", dir, "--resume", "--quiet",
                         NULL), 2);
    assert_non_null(strstr(err, "options.levels"));
    char *after = slurp_in(dir, "results.csv");   /* refused: nothing touched */
    assert_string_equal(before, after);
    free(after);
    assert_int_equal(run(out, sizeof out, err, sizeof err, b, "--levels", "plan", "--out", dir, "--force", "--quiet",
                         NULL), 0);
    assert_int_equal(db_long(dir, "SELECT json_extract(scenario, '$.seed') FROM run"), 43);
    free(before);
}

/* Infeasible combinations are recorded with their reason and the sweep completes; --strict refuses
 * before any work; too large a sweep is refused up front. */
static void test_infeasible_and_limits(void **state) {
    (void)state;
    char sc[8400], dir[8400], out[65536], err[8192];
    scenario_with("infeasible", "{\"layouts\": \"all\", \"layout.global_batch\": [15360, 15361]}", 42, sc, sizeof sc);
    dir_of("infeasible-out", dir, sizeof dir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", dir, NULL), 0);
    long n = db_long(dir, "SELECT count(*) FROM points"), inf = db_long(dir, "SELECT count(*) FROM points WHERE status = 'infeasible'");
    /* 15361 is odd and every attention-DP size 4096/(tp*pp) a power of two >= 2 (pp <= 61 layers, tp <= 8):
     * each of the 169 layouts cannot split it, and splits 15360 = 2^10 * 15 */
    assert_int_equal(n, 2 * 169);
    assert_int_equal(inf, 169);
    assert_int_equal(db_long(dir, "SELECT count(*) FROM points WHERE status = 'infeasible' AND \"sweep.layout.global_batch\" != 15361"), 0);
    assert_int_equal(db_long(dir, "SELECT count(*) FROM points WHERE status = 'infeasible' AND reason NOT LIKE '%global_batch%'"), 0);
    assert_non_null(strstr(out, "infeasible"));
    char *csv = slurp_in(dir, "results.csv");
    assert_non_null(strstr(csv, ",infeasible,"));
    free(csv);

    char strict_dir[8400];
    dir_of("strict-out", strict_dir, sizeof strict_dir);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", strict_dir, "--strict", NULL), 2);
    assert_non_null(strstr(err, "infeasible"));
    assert_int_equal(db_long(strict_dir, "SELECT 1"), -2);   /* no database: no work was done */

    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", strict_dir, "--max-points",
                         "100", NULL), 2);
    assert_non_null(strstr(err, "338 points"));
    assert_non_null(strstr(err, "GB"));
    assert_non_null(strstr(err, "--max-points"));
    assert_int_equal(db_long(strict_dir, "SELECT 1"), -2);
}

/* Shards merged: complete, duplicated and overlapping sets give the single run's exports; an
 * incomplete set is refused with the missing range unless --partial; another run is refused. */
static void test_merge_shards(void **state) {
    (void)state;
    char sc[8400], other[8400], one[8400], out[65536], err[8192], s[5][8400], m[8400];
    scenario_with("shards", "{\"layouts\": \"all\"}", 42, sc, sizeof sc);
    scenario_with("shards-other", "{\"layouts\": \"all\"}", 7, other, sizeof other);
    dir_of("shards-one", one, sizeof one);
    assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--out", one, "--quiet", NULL), 0);
    const char *shard[5] = {"0/3", "1/3", "2/3", "0/2", "1/2"};
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "shard-%d", i);
        dir_of(name, s[i], sizeof s[i]);
        assert_int_equal(run(out, sizeof out, err, sizeof err, sc, "--levels", "plan", "--shard", shard[i], "--out", s[i],
                             "--quiet", NULL), 0);
    }
    dir_of("merged-all", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], s[1], s[2], "--out", m, NULL), 0);
    assert_same_file(one, m, "results.json");
    assert_same_file(one, m, "results.csv");
    dir_of("merged-dup", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], s[0], s[1], s[2], s[2], "--out", m, NULL), 0);
    assert_same_file(one, m, "results.json");
    dir_of("merged-overlap", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], s[4], s[1], s[3], "--out", m, NULL), 0);
    assert_same_file(one, m, "results.json");
    /* the same folder twice, and a folder with itself as output */
    dir_of("merged-self", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", one, one, "--out", m, NULL), 0);
    assert_same_file(one, m, "results.json");
    /* incomplete: shards 0 and 2 of 3 */
    dir_of("merged-partial", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], s[2], "--out", m, NULL), 2);
    assert_non_null(strstr(err, "56-111"));
    assert_non_null(strstr(err, "--partial"));
    assert_int_equal(db_long(m, "SELECT 1"), -2);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], s[2], "--out", m, "--partial", NULL), 0);
    assert_int_equal(db_long(m, "SELECT count(*) FROM points"), 169 - 56);
    /* another run */
    char o[8400];
    dir_of("other-run", o, sizeof o);
    assert_int_equal(run(out, sizeof out, err, sizeof err, other, "--levels", "plan", "--shard", "1/3", "--out", o,
                         "--quiet", NULL), 0);
    dir_of("merged-other", m, sizeof m);
    assert_int_equal(run(out, sizeof out, err, sizeof err, "merge", s[0], o, s[2], "--out", m, NULL), 2);
    assert_non_null(strstr(err, "scenario.seed"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_resume),
        cmocka_unit_test(test_never_mixed),
        cmocka_unit_test(test_infeasible_and_limits),
        cmocka_unit_test(test_merge_shards),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
