/* simrun — evaluate a scenario (and its sweep) at the plan, step and run levels.
 *
 *   simrun SCENARIO [--out DIR] [--levels plan,step,run] [--fidelity fast|full] [--jobs N]
 *                   [--shard I/N] [--resume] [--reproducible] [--quiet]
 *   simrun merge DIR... --out DIR
 *   simrun --dump-platform FILE SCENARIO
 *   simrun --a2a EP [--tokens T] [--hidden H] [--topk K] [--dtype fp8|bf16] [--node-limit M] [SCENARIO]
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input or usage. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platforms/platform_xml.h"
#include "sim/base/cli_args.h"
#include "sim/plan/layout_rank.h"
#include "sim/scenario/layouts.h"
#include "sim/report/plots.h"
#include "sim/report/point_pool.h"
#include "sim/report/report_table.h"
#include "sim/report/results.h"
#include "sim/scenario/scenario.h"
#include "sim/simgrid/a2a_bench.h"
#include "sim/point/point_eval.h"

static const char USAGE[] =
    "usage: simrun SCENARIO.json [options]\n"
    "       simrun --search SCENARIO.json [--top K] [options]\n"
    "       simrun merge DIR... --out DIR\n"
    "       simrun plot DIR\n"
    "       simrun --dump-platform FILE SCENARIO.json\n"
    "       simrun --a2a EP [--tokens T] [--hidden H] [--topk K] [--dtype fp8|bf16] [--node-limit M] [SCENARIO.json]\n"
    "\n"
    "Evaluates every sweep point of SCENARIO at the levels asked for and writes DIR/results.json and\n"
    "DIR/results.csv (SCENARIO.md keys), one file per finished point in DIR/points/, and a Perfetto\n"
    "trace of the simulated step (DIR/trace.json, or DIR/traces/trace-ID.json for sweeps), and, when\n"
    "output.plots is set, gnuplot figures (PNG + SVG) for what the sweep varies.\n"
    "\n"
    "options:\n"
    "  --out DIR            output folder (default: the scenario's output.dir)\n"
    "  --levels LIST        comma-separated subset of plan,step,run (default: output.levels)\n"
    "  --fidelity MODE      fast (memoized SimGrid patterns) or full (every transfer at flow level, <= 256 GPUs)\n"
    "  --jobs N             worker processes (default: the number of cores)\n"
    "  --shard I/N          evaluate only slice I (0-based) of N of the sweep; combine with `simrun merge`\n"
    "  --resume             keep points already in DIR/points and evaluate only the rest\n"
    "  --search             every valid tp*pp*ep*dp layout at plan level, drop what does not fit, simulate\n"
    "                       the best --top K (default 8) at step level, print them ranked\n"
    "  --reproducible       write wall-clock fields (step.sim_wall_s) as 0: reruns are byte-identical\n"
    "  --quiet              no table, no progress\n"
    "  -h, --help           this text\n"
    "\n"
    "examples:\n"
    "  simrun scenarios/seed-4096.json\n"
    "  simrun scenarios/layout-sweep.json --levels plan --out results/layouts\n"
    "  simrun scenarios/layout-sweep.json --shard 0/4 --out results/s0   # ... then: simrun merge results/s? --out results/all\n"
    "  simrun --search scenarios/seed-4096.json --top 5 --out results/search\n"
    "  simrun --a2a 64 --tokens 4096 --hidden 7168 --topk 8 --dtype fp8 --node-limit 4\n"
    "  simrun --dump-platform fabric.xml scenarios/seed-4096.json\n";

/* ---- argument helpers -------------------------------------------------------------------------- */

static int parse_levels(const char *s, int *out) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    *out = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (strcmp(tok, "plan") == 0) *out |= LEVEL_PLAN;
        else if (strcmp(tok, "step") == 0) *out |= LEVEL_STEP;
        else if (strcmp(tok, "run") == 0) *out |= LEVEL_RUN;
        else {
            fprintf(stderr, "simrun: --levels: got '%s'; expected a comma-separated subset of plan,step,run\n", tok);
            return EXIT_BADINPUT;
        }
    }
    if (!*out) return cli_usage_error("simrun", "--levels: got '%s'; expected at least one of plan,step,run", s);
    return 0;
}

/* ---- evaluating points --------------------------------------------------------------------------- */

typedef struct {
    const scenario *base;
    const sweep *sw;
    const layout_cfg *search;   /* --search: point i is the base with layout search[i] */
    int levels;           /* 0 = each point's output.levels */
    int fidelity;         /* -1 = each point's step.fidelity */
    int reproducible;
    int single;           /* one point: trace goes to DIR/trace.json */
    const char *out_dir;
} run_ctx;

static cJSON *eval_point(int id, void *vctx, moe_error *err) {
    run_ctx *c = vctx;
    scenario s;
    cJSON *values = NULL;
    if (c->search) {
        s = *c->base;
        s.layout = c->search[id];
        values = cJSON_CreateObject();
        cJSON_AddNumberToObject(values, "layout.tp", s.layout.tp);
        cJSON_AddNumberToObject(values, "layout.pp", s.layout.pp);
        cJSON_AddNumberToObject(values, "layout.ep", s.layout.ep);
        cJSON_AddNumberToObject(values, "layout.dp", s.layout.dp);
    } else if (sweep_point(c->sw, c->base, id, &s, &values, err)) {
        return NULL;
    }
    if (c->fidelity >= 0) s.step.fidelity = (fidelity_kind)c->fidelity;
    char trace[4096];
    point_opts po = {.levels = c->levels ? c->levels : s.output.levels, .reproducible = c->reproducible};
    if (s.output.trace && (po.levels & LEVEL_STEP)) {
        if (c->single) {
            snprintf(trace, sizeof trace, "%s/trace.json", c->out_dir);
        } else {
            snprintf(trace, sizeof trace, "%s/traces", c->out_dir);
            if (make_dirs(trace, err)) { cJSON_Delete(values); return NULL; }
            snprintf(trace, sizeof trace, "%s/traces/trace-%06d.json", c->out_dir, id);
        }
        po.trace_path = trace;
    }
    return point_evaluate(&s, id, values, &po, err);
}

static int draw_plots(const char *out_dir, const cJSON *doc, int quiet, moe_error *err) {
    int n = 0;
    int rc = plots_write(out_dir, doc, &n, err);
    if (!rc && !quiet && n) printf("drew %d figure%s (PNG + SVG) in %s\n", n, n == 1 ? "" : "s", out_dir);
    return rc;
}

static int finish(const char *out_dir, int plots, int quiet, moe_error *err) {
    char points_dir[4096];
    snprintf(points_dir, sizeof points_dir, "%s/points", out_dir);
    const char *dirs[1] = {points_dir};
    cJSON *points = collect_points(dirs, 1, err);
    if (!points) return err->code;
    cJSON *doc = results_document(points);
    int rc = results_write(out_dir, doc, err);
    if (!rc && !quiet) {
        print_results_table(stdout, doc);
        printf("wrote %s/results.json and %s/results.csv (%d points)\n", out_dir, out_dir,
               cJSON_GetArraySize(points));
    }
    if (!rc && plots) rc = draw_plots(out_dir, doc, quiet, err);
    cJSON_Delete(doc);
    return rc;
}

static int cmd_run(int argc, char **argv) {
    const char *file = NULL, *out = NULL;
    int levels = 0, fidelity = -1, jobs = (int)sysconf(_SC_NPROCESSORS_ONLN), resume = 0, quiet = 0;
    int reproducible = 0, shard_i = 0, shard_n = 1, search = 0, top = 8, rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--out") == 0 && v) { out = v; i++; }
        else if (strcmp(a, "--levels") == 0 && v) { if ((rc = parse_levels(v, &levels))) return rc; i++; }
        else if (strcmp(a, "--fidelity") == 0 && v) {
            if (strcmp(v, "fast") == 0) fidelity = FIDELITY_FAST;
            else if (strcmp(v, "full") == 0) fidelity = FIDELITY_FULL;
            else return cli_usage_error("simrun", "--fidelity: got '%s'; expected fast or full", v);
            i++;
        } else if (strcmp(a, "--jobs") == 0 && v) { if ((rc = cli_int("simrun", a, v, 1, 4096, &jobs))) return rc; i++; }
        else if (strcmp(a, "--shard") == 0 && v) {
            char extra;
            if (sscanf(v, "%d/%d%c", &shard_i, &shard_n, &extra) != 2 || shard_n < 1 || shard_i < 0 ||
                shard_i >= shard_n)
                return cli_usage_error("simrun", "--shard: got '%s'; expected I/N with 0 <= I < N", v);
            i++;
        } else if (strcmp(a, "--resume") == 0) resume = 1;
        else if (strcmp(a, "--search") == 0) search = 1;
        else if (strcmp(a, "--top") == 0 && v) { if ((rc = cli_int("simrun", a, v, 1, 1000, &top))) return rc; i++; }
        else if (strcmp(a, "--reproducible") == 0) reproducible = 1;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (a[0] == '-') return cli_usage_error("simrun", "unknown option or missing value: %s", a);
        else if (!file) file = a;
        else return cli_usage_error("simrun", "unexpected argument: %s", a);
    }
    if (!file) return cli_usage_error("simrun", "%s", "no scenario file given");

    moe_error err = {0};
    scenario base;
    sweep *sw = NULL;
    if (scenario_load(file, &base, &sw, &err)) {
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    if (!out) out = base.output.dir;
    int n = sweep_count(sw);
    layout_cfg *best = NULL;
    if (search) {
        /* every valid layout at plan level, drop what does not fit, simulate the best `top` */
        if (n > 1) {
            sweep_free(sw);
            fprintf(stderr, "simrun: %s: sweep: got a sweep of %d points; expected none with --search "
                            "(the search varies the layout itself)\n", file, n);
            return EXIT_BADINPUT;
        }
        best = malloc(sizeof *best * (size_t)top);
        int n_valid, n_fit;
        n = layouts_search(&base, top, best, &n_valid, &n_fit, &err);
        if (n < 0) { free(best); sweep_free(sw); fprintf(stderr, "simrun: %s\n", err.msg); return err.code; }
        if (!quiet)
            printf("search: %d valid layouts of %d GPUs, %d fit in memory; simulating the best %d (by plan step time)%s\n",
                   n_valid, scn_gpus(&base), n_fit, n, (levels ? levels : base.output.levels) & LEVEL_STEP ? "" : " [plan only]");
        if (n == 0) {
            free(best);
            sweep_free(sw);
            fprintf(stderr, "simrun: %s: no valid layout fits in memory (cluster.gpu.mem_GiB = %g)\n", file,
                    base.cluster.gpu.mem_GiB);
            return EXIT_RUNTIME;
        }
        if (!levels) levels = LEVEL_PLAN | LEVEL_STEP;
    }
    /* shard I of N: a contiguous slice of the point ids */
    int lo = (int)((long)n * shard_i / shard_n), hi = (int)((long)n * (shard_i + 1) / shard_n);
    int *ids = malloc(sizeof(int) * (size_t)(hi - lo + 1));
    for (int id = lo; id < hi; id++) ids[id - lo] = id;

    char points_dir[4096];
    snprintf(points_dir, sizeof points_dir, "%s/points", out);
    if (!resume) {
        /* a fresh run must not mix with stale point files of an earlier, different run */
        char old[4096];
        for (int id = lo; id < hi; id++) {
            point_file_path(points_dir, id, old, sizeof old);
            unlink(old);
        }
    }
    run_ctx ctx = {.base = &base, .sw = sw, .search = best, .levels = levels, .fidelity = fidelity,
                   .reproducible = reproducible, .single = n == 1, .out_dir = out};
    if (make_dirs(out, &err)) goto fail;
    /* Points that build a SimGrid platform (step level) each need their own process; plan- and
     * run-level points are cheap, so each worker takes a slice of them (4 slices per worker keep the
     * load balanced). */
    int eff_levels = levels ? levels : base.output.levels, n_mine = hi - lo;
    int chunk = (eff_levels & LEVEL_STEP) ? 1 : (n_mine + 4 * jobs - 1) / (4 * jobs);
    point_run_opts po = {.points_dir = points_dir, .jobs = jobs, .resume = resume,
                         .progress = !quiet && isatty(2) && n_mine > 1, .chunk = chunk};
    rc = run_points(ids, hi - lo, eval_point, &ctx, &po, &err);
    free(ids);
    ids = NULL;
    if (rc) goto fail;
    rc = finish(out, base.output.plots, quiet, &err);
    sweep_free(sw);
    free(best);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
fail:
    free(ids);
    free(best);
    sweep_free(sw);
    fprintf(stderr, "simrun: %s\n", err.msg);
    return err.code ? err.code : EXIT_RUNTIME;
}

/* simrun merge DIR... --out DIR: the points of several shards as one results.json/csv. */
static int cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    const char **dirs = calloc((size_t)argc, sizeof *dirs);
    char (*paths)[4096] = calloc((size_t)argc, sizeof *paths);
    int nd = 0, rc = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] == '-') { rc = cli_usage_error("simrun", "merge: unknown option: %s", argv[i]); goto done; }
        else {
            snprintf(paths[nd], 4096, "%s/points", argv[i]);
            dirs[nd] = paths[nd];
            nd++;
        }
    }
    if (!out || nd == 0) { rc = cli_usage_error("simrun", "%s", "merge: expected DIR... --out DIR"); goto done; }
    moe_error err = {0};
    cJSON *points = collect_points(dirs, nd, &err);
    if (!points) { fprintf(stderr, "simrun: %s\n", err.msg); rc = err.code; goto done; }
    /* keep the merged points too, so a merged folder can itself be merged or resumed */
    char pdir[4096];
    snprintf(pdir, sizeof pdir, "%s/points", out);
    if ((rc = make_dirs(pdir, &err))) { fprintf(stderr, "simrun: %s\n", err.msg); cJSON_Delete(points); goto done; }
    for (const cJSON *p = points->child; p; p = p->next) {
        char path[4096];
        point_file_path(pdir, cJSON_GetObjectItemCaseSensitive(p, "id")->valueint, path, sizeof path);
        char *text = cJSON_Print(p);
        rc = write_file_atomic(path, text, &err);
        free(text);
        if (rc) { fprintf(stderr, "simrun: %s\n", err.msg); cJSON_Delete(points); goto done; }
    }
    cJSON *doc = results_document(points);
    rc = results_write(out, doc, &err);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    else print_results_table(stdout, doc);
    cJSON_Delete(doc);
done:
    free(dirs);
    free(paths);
    return rc;
}

/* simrun plot DIR: redraw the figures from DIR/results.json. */
static int cmd_plot(int argc, char **argv) {
    if (argc != 3) return cli_usage_error("simrun", "%s", "plot: expected DIR (a folder holding results.json)");
    moe_error err = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/results.json", argv[2]);
    char *text = read_file_text(path, NULL, &err);
    if (!text) { fprintf(stderr, "simrun: %s\n", err.msg); return err.code; }
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "points"))) {
        cJSON_Delete(doc);
        moe_error_input(&err, path, "points", NULL, "a moesim results document");
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    int rc = draw_plots(argv[2], doc, 0, &err);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    cJSON_Delete(doc);
    return rc;
}

static int cmd_dump_platform(int argc, char **argv) {
    if (argc != 4) return cli_usage_error("simrun", "%s", "--dump-platform: expected FILE SCENARIO.json");
    moe_error err = {0};
    scenario s;
    if (scenario_load(argv[3], &s, NULL, &err) || rail_fabric_write_xml(&s, argv[2], &err)) {
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    printf("wrote %s (%d nodes x %d GPUs, %d rails)\n", argv[2], s.cluster.nodes, s.cluster.gpus_per_node,
           s.cluster.rails);
    return 0;
}

static int cmd_a2a(int argc, char **argv) {
    int ep = 0, tokens = 4096, hidden = 7168, topk = 8, node_limit = 0, rc;
    dtype_kind dt = DT_FP8;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--a2a") == 0 && v) { if ((rc = cli_int("simrun", a, v, 2, 1 << 20, &ep))) return rc; i++; }
        else if (strcmp(a, "--tokens") == 0 && v) { if ((rc = cli_int("simrun", a, v, 1, 1 << 24, &tokens))) return rc; i++; }
        else if (strcmp(a, "--hidden") == 0 && v) { if ((rc = cli_int("simrun", a, v, 1, 1 << 20, &hidden))) return rc; i++; }
        else if (strcmp(a, "--topk") == 0 && v) { if ((rc = cli_int("simrun", a, v, 1, 1024, &topk))) return rc; i++; }
        else if (strcmp(a, "--node-limit") == 0 && v) { if ((rc = cli_int("simrun", a, v, 0, 1 << 20, &node_limit))) return rc; i++; }
        else if (strcmp(a, "--dtype") == 0 && v) {
            if (strcmp(v, "fp8") == 0) dt = DT_FP8;
            else if (strcmp(v, "bf16") == 0) dt = DT_BF16;
            else return cli_usage_error("simrun", "--dtype: got '%s'; expected fp8 or bf16", v);
            i++;
        } else if (a[0] == '-') return cli_usage_error("simrun", "unknown option or missing value: %s", a);
        else if (!file) file = a;
        else return cli_usage_error("simrun", "unexpected argument: %s", a);
    }
    moe_error err = {0};
    scenario s;
    /* without a scenario: the built-in defaults (deepseek-v3 on h800-8rail) */
    int bad = file ? scenario_load(file, &s, NULL, &err) : scenario_parse("(defaults)", "{}", &s, NULL, &err);
    if (bad || a2a_bench_run(&s, ep, tokens, hidden, topk, dt, node_limit, stdout, &err)) {
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("simrun", "%s", "no scenario file given");
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
    if (strcmp(argv[1], "merge") == 0) return cmd_merge(argc, argv);
    if (strcmp(argv[1], "plot") == 0) return cmd_plot(argc, argv);
    if (strcmp(argv[1], "--dump-platform") == 0) return cmd_dump_platform(argc, argv);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--a2a") == 0) return cmd_a2a(argc, argv);
    return cmd_run(argc, argv);
}
