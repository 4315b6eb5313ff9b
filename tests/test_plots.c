/* test_plots.c — the figures (sim/report/plots.h) on hand-made results documents: the scripts redraw
 * from any directory, titles name the scenario, no bar chart of identical bars, p5-p95 bars where the
 * run level has trials, a top-20 chart for sweeps too large for one bar per point, and a line per
 * figure saying what was drawn (or why nothing was). Needs gnuplot (as simrun does). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/base/fileio.h"
#include "sim/report/plots.h"
#include "tests/cli_run.h"

static char tmpdir[] = "/tmp/moesim-plots-XXXXXX";

static int setup(void **state) {
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return cli_remove_tree(tmpdir);
}

/* A point: its sweep value(s), scenario name and layout, and the plan (and run) figures given. */
static cJSON *point(int id, const char *sweep_json, double step_s, double compute_s, int fits, int with_run,
                    double interval) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"id\": %d, \"sweep\": %s,"
             " \"scenario\": {\"name\": \"plot-case\", \"layout\": {\"tp\": 1, \"pp\": %d, \"ep\": 8, \"dp\": 4},"
             "   \"cluster\": {\"gpus_per_node\": 8}, \"reliability\": {\"checkpoint\": {\"interval_min\": %g}}},"
             " \"plan\": {\"step_time_s\": %g, \"compute_s\": %g, \"exposed_comm_s\": 1, \"bubble_s\": 0.5,"
             "   \"optimizer_s\": 0.1, \"fits_memory\": %s, \"young_interval_min\": 50, \"daly_interval_min\": 48}%s}",
             id, sweep_json, 1 + id % 7, interval, step_s, compute_s, fits ? "true" : "false",
             with_run ? ", \"run\": {\"days_p50\": 20, \"days_p5\": 19, \"days_p95\": 22, \"ettr\": 0.9}" : "");
    cJSON *p = cJSON_Parse(text);
    assert_non_null(p);
    return p;
}

static cJSON *doc_of(cJSON *points) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToObject(d, "points", points);
    return d;
}

static char *slurp(const char *dir, const char *name) {
    char path[4400];
    snprintf(path, sizeof path, "%s/plots/%s", dir, name);
    moe_error e = {0};
    return read_file_text(path, NULL, &e);
}

static int exists(const char *dir, const char *name) {
    char path[4400];
    snprintf(path, sizeof path, "%s/plots/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* A checkpoint-interval sweep at plan and run level: the interval figure with p5-p95 bars; the plan
 * breakdowns are all equal, so no bar chart; the script redraws from another directory. */
static void test_interval_sweep(void **state) {
    (void)state;
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/interval", tmpdir);
    cJSON *pts = cJSON_CreateArray();
    double iv[] = {15, 30, 60, 120};
    for (int i = 0; i < 4; i++) {
        char sw[96];
        snprintf(sw, sizeof sw, "{\"reliability.checkpoint.interval_min\": %g}", iv[i]);
        cJSON_AddItemToArray(pts, point(i, sw, 10, 8, 1, 1, iv[i]));
    }
    cJSON *doc = doc_of(pts);
    char *log = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&log, &len);
    int n = -1;
    moe_error err = {0};
    assert_int_equal(plots_write(dir, doc, f, &n, &err), 0);
    fclose(f);
    assert_int_equal(n, 1);
    assert_non_null(strstr(log, "drew "));
    assert_non_null(strstr(log, "ckpt_interval.png"));
    assert_non_null(strstr(log, "no step breakdown"));   /* identical bars are not drawn */
    assert_false(exists(dir, "step_breakdown.png"));
    char *gp = slurp(dir, "ckpt_interval.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set title 'plot-case: "));   /* the scenario named */
    assert_non_null(strstr(gp, "yerrorlines"));               /* p5-p95 bars */
    assert_null(strstr(gp, "seed 0"));
    free(gp);
    char *dat = slurp(dir, "ckpt_interval.dat");
    assert_non_null(strstr(dat, "15 20 19 22"));   /* x, p50, p5, p95 */
    free(dat);
    /* redraw from another directory: the figure comes back, no temporary file is left */
    char png[4400], cmd[9000];
    snprintf(png, sizeof png, "%s/plots/ckpt_interval.png", dir);
    assert_int_equal(unlink(png), 0);
    snprintf(cmd, sizeof cmd, "cd / && gnuplot '%s/plots/ckpt_interval.gp' 2>/dev/null", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(access(png, F_OK), 0);
    assert_false(exists(dir, "ckpt_interval.png.tmp"));
    /* and from the results folder, by a relative path */
    assert_int_equal(unlink(png), 0);
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots/ckpt_interval.gp 2>/dev/null", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(access(png, F_OK), 0);
    free(log);
    cJSON_Delete(doc);
}

/* 61 layouts: too many for one bar each; the 20 fastest that fit, in order, and no others. */
static void test_top_layouts(void **state) {
    (void)state;
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/layouts", tmpdir);
    cJSON *pts = cJSON_CreateArray();
    for (int i = 0; i < 61; i++) {
        /* step time 100 - i: the last points are the fastest; every third one does not fit */
        char sw[96];
        snprintf(sw, sizeof sw, "{\"layout.pp\": %d, \"layout.dp\": %d}", 1 + i % 7, i);
        cJSON_AddItemToArray(pts, point(i, sw, 100 - i, 90 - i, i % 3 != 0, 0, 60));
    }
    cJSON *doc = doc_of(pts);
    int n = -1;
    moe_error err = {0};
    assert_int_equal(plots_write(dir, doc, NULL, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_false(exists(dir, "step_breakdown.png"));
    assert_true(exists(dir, "top_layouts.png") && exists(dir, "top_layouts.svg"));
    char *dat = slurp(dir, "top_layouts.dat");
    assert_non_null(dat);
    /* fitting ids from the fastest: 59, 58, 56, 55, 53, ... (multiples of 3 do not fit) */
    int rows = 0, expect = 60;
    for (char *line = strtok(dat, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        while (expect % 3 == 0) expect--;
        char want[32];
        snprintf(want, sizeof want, "dp=%d\"", expect);
        if (!strstr(line, want)) fail_msg("row %d: %s, want %s", rows, line, want);
        expect--;
        rows++;
    }
    assert_int_equal(rows, 20);
    free(dat);
    char *gp = slurp(dir, "top_layouts.gp");
    assert_non_null(strstr(gp, "20 fastest of 61 points"));
    free(gp);
    cJSON_Delete(doc);
}

/* One point: nothing drawn, silently (every figure needs two points); two points with the same
 * breakdown and no swept figure axis: nothing drawn, and the log says why. */
static void test_nothing_to_draw(void **state) {
    (void)state;
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/single", tmpdir);
    for (int npts = 1; npts <= 2; npts++) {
        cJSON *pts = cJSON_CreateArray();
        for (int i = 0; i < npts; i++) cJSON_AddItemToArray(pts, point(i, "{\"seed\": 1}", 10, 8, 1, 0, 60));
        cJSON *doc = doc_of(pts);
        char *log = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&log, &len);
        int n = -1;
        moe_error err = {0};
        assert_int_equal(plots_write(dir, doc, f, &n, &err), 0);
        fclose(f);
        assert_int_equal(n, 0);
        if (npts == 1) assert_string_equal(log, "");
        else assert_non_null(strstr(log, "nothing to draw for 2 points"));
        free(log);
        cJSON_Delete(doc);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval_sweep),
        cmocka_unit_test(test_top_layouts),
        cmocka_unit_test(test_nothing_to_draw),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
