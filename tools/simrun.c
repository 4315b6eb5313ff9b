/* simrun — evaluate a scenario (and its sweep) at the plan, step and run levels.
 *
 *   simrun run SCENARIO [--levels plan,step,run] [--fidelity fast|full] [--shard I/N] [--resume]
 *                       [--reproducible] [--out DIR] [--jobs N] [--quiet]   (also: simrun SCENARIO)
 *   simrun search SCENARIO [--top K|all] [run options]               (also: simrun --search SCENARIO)
 *   simrun a2a [SCENARIO] --ep EP [--tokens T] [--hidden H] [--topk K] [--dtype fp8|bf16] [--node-limit M]
 *   simrun merge DIR... --out DIR
 *   simrun plot DIR
 *   simrun dump-platform SCENARIO --out FILE                   (also: simrun --dump-platform FILE SCENARIO)
 *   simrun validate [CASES.json] [--baseline FILE] [--out DIR] [--fit [--fit-out FILE] | --check-fit | --no-loo] [--set PATH=VALUE]
 *   simrun optimize SCENARIO [--spares LIST] [--intervals LIST] [--tiers LIST] [--objective O] [--step]
 *
 * One row per subcommand in COMMANDS (name, handler, help), parsed with getopt_long through
 * sim/base/cli_args.h. Exit codes: 0 ok, 1 runtime failure, 2 bad input or usage. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platforms/platform_xml.h"
#include "sim/report/results_export.h"
#include "sim/base/cli_args.h"
#include "sim/base/fileio.h"
#include "sim/base/json_read.h"
#include "sim/report/plots.h"
#include "sim/report/results_db.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/scenario/scenario_docs.h"
#include "sim/scenario/scenario_fields.h"
#include "sim/scenario/scenario_origin.h"
#include "sim/simgrid/a2a_bench.h"
#include "sim/point/optimize.h"
#include "sim/point/sweep_run.h"
#include "sim/point/validate.h"

static const char ABOUT[] =
    "Evaluates every sweep point of a scenario at the levels asked for into DIR/results.db (SQLite: one\n"
    "row per point with its status, ok / infeasible / error, and every results key), exports\n"
    "DIR/results.csv and, up to 20000 points or with --json, DIR/results.json, writes a Perfetto trace of\n"
    "the simulated step (DIR/trace.json, or DIR/traces/trace-ID.json for sweeps) and, when output.plots\n"
    "is set, gnuplot figures (PNG + SVG, with their data and a re-runnable script) for what the sweep varies.\n"
    "`simrun SCENARIO.json` is `simrun run SCENARIO.json`; `--search`, `--a2a EP` and\n"
    "`--dump-platform FILE` still select those commands.";

static const char EPILOG[] =
    "exit codes: 0 ok, 1 runtime failure, 2 bad input or usage\n"
    "\n"
    "examples:\n"
    "  simrun scenarios/seed-4096.json\n"
    "  simrun run scenarios/layout-sweep.json --levels plan --out results/layouts\n"
    "  simrun run scenarios/layout-sweep.json --shard 0/4 --out results/s0   # ... then: simrun merge results/s? --out results/all\n"
    "  sqlite3 results/layouts/results.db 'SELECT id, \"plan.step_time_s\" FROM points ORDER BY 2 LIMIT 5'\n"
    "  simrun search scenarios/seed-4096.json --top 5 --out results/search\n"
    "  simrun a2a --ep 64 --tokens 4096 --hidden 7168 --topk 8 --dtype fp8 --node-limit 4\n"
    "  simrun dump-platform scenarios/seed-4096.json --out fabric.xml\n";

static const char RUN_OPTIONS[] =
    "  -o, --out DIR        output folder (default: the scenario's output.dir)\n"
    "      --levels LIST    comma-separated subset of plan,step,run (default: output.levels)\n"
    "      --fidelity MODE  fast (memoized SimGrid patterns) or full (every transfer at flow level, <= 256 GPUs)\n"
    "  -j, --jobs N         worker processes (default: the number of cores)\n"
    "      --shard I/N      evaluate only slice I (0-based) of N of the points; combine with `simrun merge`\n"
    "      --resume         keep the points already in DIR/results.db, evaluate the rest (and retry failed\n"
    "                       ones); refused when DIR holds another scenario, sweep, option set or version\n"
    "      --force          replace the results of another run in DIR (a new run into such a folder is refused)\n"
    "      --strict         exit 2 before any work when a point is infeasible (else it is stored with its reason)\n"
    "      --max-points N   refuse more than N points (default 2000000), before anything is written\n"
    "      --json           write results.json at any size (default: up to 20000 points)\n"
    "      --csv            write results.csv at any size (default: up to 250000 points)\n"
    "      --progress-every S  a progress line every S seconds when stderr is not a terminal (default 30)\n"
    "      --commit-every S  commit finished points to results.db every S seconds (default 1; 0: every\n"
    "                       point): a killed run loses at most that much work\n"
    "      --reproducible   write wall-clock fields (step.sim_wall_s) as 0: reruns are byte-identical\n"
    "  -q, --quiet          no table, no progress\n";

static const char SEARCH_OPTIONS[] =
    "      --top K|all      simulate the best K layouts at step level (default 8; all with --levels step);\n"
    "                       all: every layout that fits, the table ranked by step-level tokens/s/GPU\n"
    "  (and every option of `simrun run`; --levels defaults to plan,step)\n"
    "  -o, --out DIR        output folder (default: the scenario's output.dir)\n"
    "  -j, --jobs N         worker processes for the step-level simulations (default: the number of cores)\n"
    "  -q, --quiet          no table, no progress\n";

static const char A2A_OPTIONS[] =
    "  The model, routing (distribution, node limit, capacity), precisions and cluster come from SCENARIO\n"
    "  (default: the built-in DeepSeek-V3 on 512 x 8 H800); the options below override them.\n"
    "      --ep EP          the largest EP size, also --a2a EP: the table walks 8, 16, 32, ... below it that\n"
    "                       divide the experts, then EP itself; EP must divide model.experts and be whole\n"
    "                       nodes once it spans nodes\n"
    "      --tokens T       tokens per rank (default: one micro-batch, layout.micro_batch x model.seq_len / tp)\n"
    "      --hidden H       hidden size (default: model.hidden)\n"
    "      --topk K         experts per token (default: model.top_k)\n"
    "      --dtype D        dispatch precision: fp8 or bf16 (default: precision.dispatch)\n"
    "      --node-limit M   node-limited routing: at most M nodes per token (default: routing.node_limit)\n"
    "      --point N        the sweep point of SCENARIO to take (default 0; numbered as `simrun run` does)\n"
    "  -o, --out FILE       also write the table to FILE (default: stdout only)\n"
    "  -j, --jobs N         accepted; the benchmark runs in one process\n"
    "  -q, --quiet          no table on stdout (with --out: the file only)\n";

static const char MERGE_OPTIONS[] =
    "  -o, --out DIR        the merged folder (required): results.db (and results.csv, results.json)\n"
    "      --partial        merge even when the inputs do not cover the whole sweep (else exit 2)\n"
    "      --json           write results.json at any size (default: up to 20000 points)\n"
    "      --csv            write results.csv at any size (default: up to 250000 points)\n"
    "  -j, --jobs N         accepted; merging runs in one process\n"
    "  -q, --quiet          no table\n";

static const char PLOT_OPTIONS[] =
    "  -o, --out DIR        draw into DIR/plots (default: the results folder itself)\n"
    "  -j, --jobs N         accepted; plotting runs in one process\n"
    "  -q, --quiet          do not list the figures drawn\n";

static const char FIELDS_OPTIONS[] =
    "      --format F       text (default), markdown or json\n"
    "  -o, --out FILE       write to FILE instead of stdout (markdown: the whole reference page,\n"
    "                       --out docs/scenario-fields.md regenerates it)\n"
    "  -j, --jobs N         accepted; nothing runs in parallel\n"
    "  -q, --quiet          no summary line with --out\n";

static const char SHOW_OPTIONS[] =
    "      --point N        the sweep point to resolve (default 0; `simrun run` numbers points the same way)\n"
    "      --format F       text (default) or json\n"
    "  -o, --out FILE       write to FILE instead of stdout\n"
    "  -j, --jobs N         accepted; nothing runs in parallel\n"
    "  -q, --quiet          no header line (text)\n";

static const char OPTIMIZE_OPTIONS[] =
    "      --spares LIST    hot-spare fractions, comma-separated (default 0,0.005,0.01,0.02,0.04)\n"
    "      --intervals LIST checkpoint intervals in minutes (default 5,10,15,20,30,45,60,90,120)\n"
    "      --tiers LIST     checkpoint tiers: pfs (file system only, the scenario's mode), host, peer, nvme,\n"
    "                       peer+nvme (default pfs,host,peer)\n"
    "      --objective O    days (default) or gpu-hours (idle spares included): which best leads\n"
    "      --step           the step time from one step simulation (default: the plan's)\n"
    "      --step-time S    this step time in seconds (a measured one) instead\n"
    "      --point N        the sweep point to optimize (default 0)\n"
    "  -o, --out DIR        optimize.json, optimize.csv, pareto.png/svg (default OUTPUT.DIR/optimize)\n"
    "  -j, --jobs N         accepted; the grid runs in one process\n"
    "  -q, --quiet          print nothing\n";

static const char DUMP_OPTIONS[] =
    "  -o, --out FILE       the SimGrid XML to write (also --dump-platform FILE)\n"
    "  -j, --jobs N         accepted; the dump runs in one process\n"
    "  -q, --quiet          no summary line\n";

static const char VALIDATE_OPTIONS[] =
    "      --baseline FILE  compare with a committed validation.json: exit 1 when a case's error moved by\n"
    "                       more than 1 percentage point (in or out of sample) or its status changed\n"
    "      --fit            refit the global parameters (calibration/models/global.json: the GPU kinds'\n"
    "                       sustained clocks, the framework's host cost per call, Blackwell's grouped\n"
    "                       GEMM rate) jointly over every step case, from their priors, and write them\n"
    "      --fit-out FILE   where --fit writes (default calibration/models/global.json)\n"
    "      --check-fit      refit from the committed values: exit 1 when one moves by more than 1%\n"
    "      --no-loo         in-sample only, at the committed values (no leave-one-out column, no bands)\n"
    "      --set PATH=VALUE set a scenario field in every case (up to 8; an ablation: host.framework=none)\n"
    "  -o, --out DIR        where validation.json and validation.csv go (default results/validation)\n"
    "  -j, --jobs N         worker processes (default: the number of cores)\n"
    "  -q, --quiet          no table\n";

/* ---- argument helpers -------------------------------------------------------------------------- */

static int parse_levels(cli_parser *p, const char *s, int *out) {
    *out = 0;
    /* walk the comma-separated words in place: a list of any length is read whole */
    for (const char *tok = s; *tok;) {
        size_t n = strcspn(tok, ",");
        if (n == 4 && strncmp(tok, "plan", 4) == 0) *out |= LEVEL_PLAN;
        else if (n == 4 && strncmp(tok, "step", 4) == 0) *out |= LEVEL_STEP;
        else if (n == 3 && strncmp(tok, "run", 3) == 0) *out |= LEVEL_RUN;
        else if (n > 0)
            return cli_error(p, "--levels: got '%.*s'; expected a comma-separated subset of plan,step,run",
                             n > 80 ? 80 : (int)n, tok);
        tok += n + (tok[n] == ',');
    }
    if (!*out) return cli_error(p, "--levels: got '%.80s'; expected at least one of plan,step,run", s);
    return 0;
}

/* The options of `simrun run` and `simrun search`. */
typedef struct {
    const char *file, *out;
    int levels, fidelity, jobs, resume, quiet, reproducible, shard_i, shard_n, top, top_set;
    int force, strict, json, csv;
    double max_points, progress_every_s, commit_every_s;
    int commit_set;
} run_args;

/* Non-zero when the command must stop (help printed or a usage error): it returns p->rc. */
static int parse_run_args(cli_parser *p, int argc, char **argv, int search, run_args *a) {
    enum { O_LEVELS = 256, O_FIDELITY, O_SHARD, O_RESUME, O_REPRO, O_TOP, O_SEARCH, O_FORCE, O_STRICT, O_JSON,
           O_MAX_POINTS, O_PROGRESS, O_COMMIT, O_CSV };
    static const struct option opts[] = {
        {"levels", required_argument, NULL, O_LEVELS}, {"fidelity", required_argument, NULL, O_FIDELITY},
        {"shard", required_argument, NULL, O_SHARD},   {"resume", no_argument, NULL, O_RESUME},
        {"reproducible", no_argument, NULL, O_REPRO},  {"top", required_argument, NULL, O_TOP},
        {"search", no_argument, NULL, O_SEARCH},       {"force", no_argument, NULL, O_FORCE},
        {"strict", no_argument, NULL, O_STRICT},       {"json", no_argument, NULL, O_JSON},
        {"max-points", required_argument, NULL, O_MAX_POINTS},
        {"progress-every", required_argument, NULL, O_PROGRESS},
        {"commit-every", required_argument, NULL, O_COMMIT}, {"csv", no_argument, NULL, O_CSV}, CLI_COMMON_OPTIONS};
    *a = (run_args){.fidelity = -1, .shard_n = 1, .top = 8};
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        switch (c) {
        case CLI_STOP: return 1;
        case O_LEVELS: if (parse_levels(p, optarg, &a->levels)) return 1; break;
        case O_FIDELITY: if (cli_enum_opt(p, optarg, scn_fidelity_names, &a->fidelity)) return 1; break;
        case O_SHARD: {
            char extra;
            if (sscanf(optarg, "%d/%d%c", &a->shard_i, &a->shard_n, &extra) != 2 || a->shard_n < 1 ||
                a->shard_i < 0 || a->shard_i >= a->shard_n)
                return cli_error(p, "--shard: got '%s'; expected I/N with 0 <= I < N", optarg);
            break;
        }
        case O_RESUME: a->resume = 1; break;
        case O_REPRO: a->reproducible = 1; break;
        case O_FORCE: a->force = 1; break;
        case O_STRICT: a->strict = 1; break;
        case O_JSON: a->json = 1; break;
        case O_CSV: a->csv = 1; break;
        case O_MAX_POINTS: if (cli_double_opt(p, optarg, 1, 2e9, &a->max_points)) return 1; break;
        case O_PROGRESS: if (cli_double_opt(p, optarg, 0.1, 86400, &a->progress_every_s)) return 1; break;
        case O_COMMIT:
            if (cli_double_opt(p, optarg, 0, 3600, &a->commit_every_s)) return 1;
            a->commit_set = 1;
            break;
        case O_TOP:
            if (!search) return cli_error(p, "--top: only with `simrun search` (or --search)");
            if (strcmp(optarg, "all") == 0) a->top = SEARCH_TOP_ALL;
            else if (cli_int_opt(p, optarg, 1, 1000, &a->top)) return 1;
            a->top_set = 1;
            break;
        case O_SEARCH:
            if (!search) return cli_error(p, "--search: use `simrun search SCENARIO.json`");
            break;
        }
    }
    if (cli_positionals(p, argc, argv, 1, 1, "one SCENARIO.json")) return 1;
    if (a->resume && a->force) return cli_error(p, "--resume and --force: expected one of them");
    /* a search asked for at step level and not at plan level ranks every layout that fits at step level
     * (the plan still ranks and prunes what does not fit) */
    if (search && !a->top_set && (a->levels & LEVEL_STEP) && !(a->levels & LEVEL_PLAN)) a->top = SEARCH_TOP_ALL;
    a->file = argv[optind];
    a->out = p->common.out;
    a->jobs = p->common.jobs ? p->common.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    a->quiet = p->common.quiet;
    return 0;
}

/* `simrun run` and `simrun search`: the sweep (or the searched layouts) evaluated point by point
 * (sim/point/sweep_run.h). */
static int run_or_search(cli_parser *p, int argc, char **argv, int search) {
    run_args a;
    if (parse_run_args(p, argc, argv, search, &a)) return p->rc;
    sweep_run_opts o = {.scenario_file = a.file, .out_dir = a.out, .levels = a.levels, .fidelity = a.fidelity,
                        .reproducible = a.reproducible, .jobs = a.jobs, .shard_i = a.shard_i, .shard_n = a.shard_n,
                        .resume = a.resume, .force = a.force, .strict = a.strict, .max_points = (long)a.max_points,
                        .search = search, .top = a.top, .json = a.json, .csv = a.csv, .quiet = a.quiet,
                        .progress_every_s = a.progress_every_s, .commit_every_s = a.commit_every_s,
                        .commit_set = a.commit_set};
    moe_error err = {0};
    int rc = sweep_run(&o, stdout, &err);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
}

static int cmd_run(cli_parser *p, int argc, char **argv) { return run_or_search(p, argc, argv, 0); }
static int cmd_search(cli_parser *p, int argc, char **argv) { return run_or_search(p, argc, argv, 1); }

/* simrun merge DIR... --out DIR: the databases of several shards as one. */
static int cmd_merge(cli_parser *p, int argc, char **argv) {
    enum { O_PARTIAL = 256, O_JSON, O_CSV };
    static const struct option opts[] = {{"partial", no_argument, NULL, O_PARTIAL}, {"json", no_argument, NULL, O_JSON},
                                         {"csv", no_argument, NULL, O_CSV}, CLI_COMMON_OPTIONS};
    int partial = 0, json = 0, csv = 0;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_PARTIAL) partial = 1;
        if (c == O_JSON) json = 1;
        if (c == O_CSV) csv = 1;
    }
    if (cli_positionals(p, argc, argv, 1, -1, "DIR... --out DIR")) return p->rc;
    const char *out = p->common.out;
    if (!out) return cli_error(p, "--out DIR is required (the merged folder)");
    moe_error err = {0};
    int rc = results_merge((const char *const *)argv + optind, argc - optind, out, partial, json, csv,
                           p->common.quiet ? NULL : stdout, &err);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
}

/* simrun plot DIR: redraw the figures from DIR/results.db. */
static int cmd_plot(cli_parser *p, int argc, char **argv) {
    static const struct option opts[] = {CLI_COMMON_OPTIONS};
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;)
        if (c == CLI_STOP) return p->rc;
    if (cli_positionals(p, argc, argv, 1, 1, "DIR (a folder holding results.db)")) return p->rc;
    const char *dir = argv[optind], *out = p->common.out ? p->common.out : dir;
    moe_error err = {0};
    results_db *db;
    if (results_db_open_existing(dir, 0, &db, &err)) { fprintf(stderr, "simrun: %s\n", err.msg); return err.code; }
    cJSON *doc = results_db_document(db, "WHERE status = 'ok' ORDER BY id", 0, &err);
    results_db_abandon(db);
    int rc = doc ? make_dirs(out, &err) : err.code, n = 0;
    if (!rc) rc = plots_write(out, doc, p->common.quiet ? NULL : stdout, &n, &err);
    if (!rc && !p->common.quiet && n == 0 && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "points")) == 1)
        printf("plots: nothing to draw for a single point: every figure needs a sweep of two points or more, but the "
               "step series, which needs routing.steps > 1\n");
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    cJSON_Delete(doc);
    return rc;
}

static int cmd_dump_platform(cli_parser *p, int argc, char **argv) {
    static const struct option opts[] = {{"dump-platform", required_argument, NULL, 256}, CLI_COMMON_OPTIONS};
    const char *file = NULL;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        file = optarg;
    }
    if (cli_positionals(p, argc, argv, 1, 1, "one SCENARIO.json")) return p->rc;
    if (p->common.out) file = p->common.out;
    if (!file) return cli_error(p, "--out FILE is required (the SimGrid XML to write)");
    moe_error err = {0};
    scenario s;
    if (scenario_load(argv[optind], &s, NULL, &err) || rail_fabric_write_xml(&s, file, &err)) {
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    if (!p->common.quiet)
        printf("wrote %s (%d nodes x %d GPUs, %d rails)\n", file, s.cluster.nodes, s.cluster.gpus_per_node,
               s.cluster.rails);
    return 0;
}

/* --point N: any integer; its real bound is the sweep's point count, which load_point checks once the
 * scenario is read. */
static int point_opt(cli_parser *p, const char *arg, long long *out) {
    char *end;
    long long v = strtoll(arg ? arg : "", &end, 10);
    if (!arg || *end || end == arg)
        return cli_error(p, "%s: got '%s'; expected a point number (an integer from 0; `simrun run` numbers the "
                            "sweep's points the same way)", p->opt, arg ? arg : "");
    *out = v;
    return 0;
}

/* Point `point` of scenario `file` (its sweep's values in *values when not NULL; the point count in
 * *n_points): an exit-2 error naming --point and the sweep's point count when it is not one of them. */
static int load_point(const char *file, long long point, scenario *out, cJSON **values, int *n_points, moe_error *err) {
    scenario base;
    sweep *sw = NULL;
    if (values) *values = NULL;
    int rc = scenario_load(file, &base, &sw, err);
    int n = rc ? 0 : sweep_count(sw);
    if (n_points) *n_points = n;
    if (!rc && (point < 0 || point >= n)) {
        char v[32];
        snprintf(v, sizeof v, "%lld", point);
        rc = moe_error_input(err, file, "--point", v, "a point in [0, %d) (the sweep has %d point%s)", n, n, n == 1 ? "" : "s");
    }
    if (!rc) rc = sweep_point(sw, &base, (int)point, out, values, err);
    sweep_free(sw);
    return rc;
}

static int cmd_a2a(cli_parser *p, int argc, char **argv) {
    enum { O_EP = 256, O_TOKENS, O_HIDDEN, O_TOPK, O_DTYPE, O_NODE_LIMIT, O_POINT };
    static const struct option opts[] = {
        {"ep", required_argument, NULL, O_EP},         {"a2a", required_argument, NULL, O_EP},
        {"point", required_argument, NULL, O_POINT},
        {"tokens", required_argument, NULL, O_TOKENS}, {"hidden", required_argument, NULL, O_HIDDEN},
        {"topk", required_argument, NULL, O_TOPK},     {"dtype", required_argument, NULL, O_DTYPE},
        {"node-limit", required_argument, NULL, O_NODE_LIMIT}, CLI_COMMON_OPTIONS};
    static const char *const dtypes[] = {"fp8", "bf16", NULL};
    /* -1: not given, the scenario's value applies */
    int ep = 0, tokens = -1, hidden = -1, topk = -1, node_limit = -1, dti = -1, bad = 0;
    long long point = 0;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1 && !bad;) {
        switch (c) {
        case CLI_STOP: return p->rc;
        case O_EP: bad = cli_int_opt(p, optarg, 2, 1 << 20, &ep); break;
        case O_TOKENS: bad = cli_int_opt(p, optarg, 1, 1 << 24, &tokens); break;
        case O_HIDDEN: bad = cli_int_opt(p, optarg, 1, 1 << 20, &hidden); break;
        case O_TOPK: bad = cli_int_opt(p, optarg, 1, 1024, &topk); break;
        case O_NODE_LIMIT: bad = cli_int_opt(p, optarg, 0, 1 << 20, &node_limit); break;
        case O_DTYPE: bad = cli_enum_opt(p, optarg, dtypes, &dti); break;
        case O_POINT: bad = point_opt(p, optarg, &point); break;
        }
    }
    if (bad) return p->rc;
    if (cli_positionals(p, argc, argv, 0, 1, "at most one SCENARIO.json")) return p->rc;
    if (!ep) return cli_error(p, "--ep EP is required (the largest EP size to benchmark)");
    const char *file = optind < argc ? argv[optind] : NULL;
    moe_error err = {0};
    scenario s;
    /* without a scenario: the built-in defaults (deepseek-v3 on h800-8rail); the options override */
    int bad_in = file ? load_point(file, point, &s, NULL, NULL, &err)
                      : scenario_parse("(built-in defaults)", "{\"name\": \"built-in-defaults\"}", &s, NULL, &err);
    if (bad_in) {
        fprintf(stderr, "simrun: %s\n", err.msg);
        return err.code;
    }
    if (hidden > 0) s.model.hidden = hidden;
    if (topk > 0) s.model.top_k = topk;
    if (node_limit >= 0) s.routing.node_limit = node_limit;
    if (dti >= 0) s.precision.dispatch = dti == 0 ? DT_FP8 : DT_BF16;
    /* tokens per rank: one micro-batch of the scenario (split over TP), unless given */
    if (tokens < 0) tokens = s.layout.micro_batch * s.model.seq_len / (s.layout.tp > 0 ? s.layout.tp : 1);
    /* the table goes to memory first: stdout unless --quiet, and --out FILE written atomically */
    char *table = NULL;
    size_t table_len = 0;
    FILE *mem = open_memstream(&table, &table_len);
    if (!mem) { fprintf(stderr, "simrun: out of memory\n"); return EXIT_RUNTIME; }
    int rc = a2a_bench_run(&s, ep, tokens, "--ep", mem, &err);
    fclose(mem);
    if (!rc && !p->common.quiet) fputs(table, stdout);
    if (!rc && p->common.out) rc = write_file_atomic(p->common.out, table, &err);
    free(table);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
}

/* simrun fields: every scenario field from the field table (sim/scenario/scenario_docs.h). */
static int cmd_fields(cli_parser *p, int argc, char **argv) {
    static const struct option opts[] = {{"format", required_argument, NULL, 256}, CLI_COMMON_OPTIONS};
    int fmt = SCN_DOC_TEXT;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (cli_enum_opt(p, optarg, scn_doc_format_names, &fmt)) return p->rc;
    }
    if (cli_positionals(p, argc, argv, 0, 0, "no arguments besides options")) return p->rc;
    char *text = scn_fields_describe_text((scn_doc_format)fmt);
    if (!text) { fprintf(stderr, "simrun: out of memory\n"); return EXIT_RUNTIME; }
    int rc = 0;
    moe_error err = {0};
    if (!p->common.out) {
        fputs(text, stdout);
    } else {
        rc = write_file_atomic(p->common.out, text, &err);
        if (!rc && !p->common.quiet) printf("wrote %s\n", p->common.out);
        if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    }
    free(text);
    return rc;
}

/* The rows of a `simrun show` document as an aligned table: field, value, origin (detail). Nothing is
 * cut: a long value widens its own line only. */
static void print_show_table(FILE *out, const cJSON *doc) {
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(doc, "fields");
    int wp = 5, wv = 5;
    for (const cJSON *r = fields->child; r; r = r->next) {
        char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r, "value"));
        int np = (int)strlen(cJSON_GetObjectItemCaseSensitive(r, "path")->valuestring), nv = v ? (int)strlen(v) : 0;
        if (np > wp) wp = np;
        if (nv > wv && nv <= 48) wv = nv;
        cJSON_free(v);
    }
    fprintf(out, "%-*s  %-*s  %s\n", wp, "field", wv, "value", "origin");
    for (const cJSON *r = fields->child; r; r = r->next) {
        char *v = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(r, "value"));
        const cJSON *detail = cJSON_GetObjectItemCaseSensitive(r, "detail");
        const cJSON *other = cJSON_GetObjectItemCaseSensitive(r, "other_model");
        fprintf(out, "%-*s  %-*s  %s%s%s%s%s%s%s\n", wp, cJSON_GetObjectItemCaseSensitive(r, "path")->valuestring, wv,
                v ? v : "?", cJSON_GetObjectItemCaseSensitive(r, "origin")->valuestring, detail ? " (" : "",
                detail ? detail->valuestring : "", detail ? ")" : "",
                other ? "  <- " : "", other ? other->valuestring : "", other ? "'s value, not the named model's" : "");
        cJSON_free(v);
    }
}

/* simrun show SCENARIO [--point N]: the fully resolved scenario, each value with its origin. */
static int cmd_show(cli_parser *p, int argc, char **argv) {
    enum { O_POINT = 256, O_FORMAT };
    static const struct option opts[] = {{"point", required_argument, NULL, O_POINT},
                                         {"format", required_argument, NULL, O_FORMAT}, CLI_COMMON_OPTIONS};
    static const char *const formats[] = {"text", "json", NULL};
    int fmt = 0;
    long long point = 0;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_POINT && point_opt(p, optarg, &point)) return p->rc;
        if (c == O_FORMAT && cli_enum_opt(p, optarg, formats, &fmt)) return p->rc;
    }
    if (cli_positionals(p, argc, argv, 1, 1, "one SCENARIO.json")) return p->rc;
    const char *file = argv[optind];
    moe_error err = {0};
    scenario s;
    cJSON *values = NULL, *doc = NULL;
    int n = 0;
    int rc = load_point(file, point, &s, &values, &n, &err);
    if (!rc && !(doc = scenario_show_json(&s, values, (int)point))) rc = moe_error_set(&err, EXIT_RUNTIME, "out of memory");
    if (!rc) {
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (!mem) rc = moe_error_set(&err, EXIT_RUNTIME, "out of memory");
        else {
            if (fmt == 1) {
                char *j = cJSON_Print(doc);
                fprintf(mem, "%s\n", j ? j : "");
                cJSON_free(j);
            } else {
                if (!p->common.quiet)
                    fprintf(mem, "# %s (%s), point %lld of %d: every value and where it came from; model: %s\n", s.name,
                            file, point, n, cJSON_GetObjectItemCaseSensitive(doc, "model")->valuestring);
                print_show_table(mem, doc);
            }
            fclose(mem);
            if (p->common.out) rc = write_file_atomic(p->common.out, text, &err);
            else fputs(text, stdout);
            free(text);
        }
    }
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    cJSON_Delete(doc);
    cJSON_Delete(values);
    return rc;
}

/* simrun validate [CASES.json]: the published cases against the model (sim/point/validate.h). */
static int cmd_validate(cli_parser *p, int argc, char **argv) {
    enum { O_BASELINE = 256, O_FIT, O_FIT_OUT, O_CHECK_FIT, O_NO_LOO, O_SET };
    static const struct option opts[] = {{"baseline", required_argument, NULL, O_BASELINE},
                                         {"fit", no_argument, NULL, O_FIT},
                                         {"fit-out", required_argument, NULL, O_FIT_OUT},
                                         {"check-fit", no_argument, NULL, O_CHECK_FIT},
                                         {"no-loo", no_argument, NULL, O_NO_LOO},
                                         {"set", required_argument, NULL, O_SET},
                                         CLI_COMMON_OPTIONS};
    validate_opts vo = {.cases_path = "scenarios/validation/cases.json", .out_dir = "results/validation"};
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_BASELINE) vo.baseline_path = optarg;
        if (c == O_FIT) vo.fit = 1;
        if (c == O_FIT_OUT) vo.fit_out = optarg;
        if (c == O_CHECK_FIT) vo.check_fit = 1;
        if (c == O_NO_LOO) vo.no_loo = 1;
        if (c == O_SET) {
            if (vo.n_set == VALIDATE_MAX_SET) return cli_error(p, "--set: at most %d settings", VALIDATE_MAX_SET);
            vo.set[vo.n_set++] = optarg;
        }
    }
    if (vo.fit + vo.check_fit + vo.no_loo > 1) return cli_error(p, "--fit, --check-fit and --no-loo exclude each other");
    if (vo.fit_out && !vo.fit) return cli_error(p, "--fit-out names where --fit writes: give --fit too");
    if (cli_positionals(p, argc, argv, 0, 1, "at most one CASES.json")) return p->rc;
    if (optind < argc) vo.cases_path = argv[optind];
    if (p->common.out) vo.out_dir = p->common.out;
    vo.jobs = p->common.jobs ? p->common.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    vo.quiet = p->common.quiet;
    moe_error err = {0};
    int rc = validate_run(&vo, stdout, &err);
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
}

/* A comma-separated list of numbers in [lo, hi] (at most OPT_MAX_VALUES): each item as --opt ITEM. */
static int number_list(cli_parser *p, const char *arg, double lo, double hi, double *out, int *n) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", arg);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == OPT_MAX_VALUES) return cli_error(p, "%s: at most %d values", p->opt, OPT_MAX_VALUES);
        if (cli_double_opt(p, tok, lo, hi, &out[(*n)++])) return p->rc;
    }
    if (*n == 0) return cli_error(p, "%s: got \"%s\"; expected a comma-separated list", p->opt, arg);
    return 0;
}

/* simrun optimize: hot spares x checkpoint interval x tiers (sim/point/optimize.h). */
static int cmd_optimize(cli_parser *p, int argc, char **argv) {
    enum { O_SPARES = 256, O_INTERVALS, O_TIERS, O_OBJECTIVE, O_STEP, O_STEP_TIME, O_POINT };
    static const struct option opts[] = {
        {"spares", required_argument, NULL, O_SPARES},       {"intervals", required_argument, NULL, O_INTERVALS},
        {"tiers", required_argument, NULL, O_TIERS},         {"objective", required_argument, NULL, O_OBJECTIVE},
        {"step", no_argument, NULL, O_STEP},                 {"step-time", required_argument, NULL, O_STEP_TIME},
        {"point", required_argument, NULL, O_POINT},         CLI_COMMON_OPTIONS};
    optimize_opts o;
    optimize_defaults(&o);
    int obj = 0;
    long long point = 0;
    for (int c; (c = cli_next(p, argc, argv, opts)) != -1;) {
        if (c == CLI_STOP) return p->rc;
        if (c == O_SPARES && number_list(p, optarg, 0, 0.999, o.spares, &o.n_spares)) return p->rc;
        if (c == O_INTERVALS && number_list(p, optarg, 0.01, 1e6, o.intervals_min, &o.n_intervals)) return p->rc;
        if (c == O_TIERS) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            o.n_tiers = 0;
            char *save = NULL;
            for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int t;
                if (o.n_tiers == OPT_N_TIER_CHOICES) return cli_error(p, "%s: at most %d choices", p->opt, OPT_N_TIER_CHOICES);
                if (cli_enum_opt(p, tok, OPTIMIZE_TIER_NAMES, &t)) return p->rc;
                o.tiers[o.n_tiers++] = (optimize_tier_choice)t;
            }
            if (o.n_tiers == 0) return cli_error(p, "%s: got \"%s\"; expected a comma-separated list", p->opt, optarg);
        }
        if (c == O_OBJECTIVE) {
            if (cli_enum_opt(p, optarg, OPTIMIZE_OBJECTIVE_NAMES, &obj)) return p->rc;
            o.objective = (optimize_objective)obj;
        }
        if (c == O_STEP) o.step_level = 1;
        if (c == O_STEP_TIME && cli_double_opt(p, optarg, 1e-6, 1e9, &o.step_time_s)) return p->rc;
        if (c == O_POINT && point_opt(p, optarg, &point)) return p->rc;
    }
    if (cli_positionals(p, argc, argv, 1, 1, "one SCENARIO.json")) return p->rc;
    moe_error err = {0};
    scenario s;
    int rc = load_point(argv[optind], point, &s, NULL, NULL, &err);
    char out_dir[SCN_PATH_MAX + 16];
    if (!rc) {
        snprintf(out_dir, sizeof out_dir, "%s/optimize", s.output.dir);
        o.out_dir = p->common.out ? p->common.out : out_dir;
        o.plots = s.output.plots;
        o.quiet = p->common.quiet;
        rc = optimize_run(&s, &o, stdout, &err);
    }
    if (rc) fprintf(stderr, "simrun: %s\n", err.msg);
    return rc;
}

/* ---- the command table ------------------------------------------------------------------------ */

/* One row per subcommand: name, handler, synopsis, one-line summary, options. */
static const cli_command COMMANDS[] = {
    {"run", cmd_run, "SCENARIO.json [options]",
     "Evaluate the scenario and every point of its sweep at the plan, step and run levels.", RUN_OPTIONS},
    {"search", cmd_search, "SCENARIO.json [--top K|all] [options]",
     "Every valid tp*pp*ep*dp layout at plan level; drop what does not fit; simulate the best K at step level.",
     SEARCH_OPTIONS},
    {"a2a", cmd_a2a, "[SCENARIO.json [--point N]] --ep EP [options]",
     "nccl-tests/DeepEP-style table of MoE dispatch and combine over EP sizes on the scenario's fabric.",
     A2A_OPTIONS},
    {"merge", cmd_merge, "DIR... --out DIR",
     "Combine the databases of several shards (--shard) into one results.db and its exports.", MERGE_OPTIONS},
    {"plot", cmd_plot, "DIR [--out DIR]", "Redraw the figures from DIR/results.db.", PLOT_OPTIONS},
    {"show", cmd_show, "SCENARIO.json [--point N] [--format text|json]",
     "The fully resolved scenario (a sweep point) with where each value came from: preset, built-in default, scenario, sweep.",
     SHOW_OPTIONS},
    {"fields", cmd_fields, "[--format text|markdown|json] [--out FILE]",
     "Every scenario field: type, unit, default and where it comes from, allowed values, meaning, source.",
     FIELDS_OPTIONS},
    {"dump-platform", cmd_dump_platform, "SCENARIO.json --out FILE",
     "Write the scenario's fabric as SimGrid XML (up to 256 GPUs).", DUMP_OPTIONS},
    {"validate", cmd_validate, "[CASES.json] [--baseline FILE] [--out DIR] [--fit [--fit-out FILE] | --check-fit | --no-loo] [--set PATH=VALUE]",
     "Predict every published case (default scenarios/validation/cases.json) and print the error table.",
     VALIDATE_OPTIONS},
    {"optimize", cmd_optimize, "SCENARIO.json [--spares LIST] [--intervals LIST] [--tiers LIST] [options]",
     "Hot-spare fraction x checkpoint interval x checkpoint tiers: days and GPU-hours, the Pareto front, its plot.",
     OPTIMIZE_OPTIONS},
    {NULL, NULL, NULL, NULL, NULL},
};

static const cli_command *command_named(const char *name) {
    for (const cli_command *c = COMMANDS; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

/* The spellings from before the subcommands: `simrun X.json [--search]`, `simrun --a2a EP`,
 * `simrun --dump-platform FILE X.json`. A bare word that is no file is an unknown command. */
static const cli_command *implicit_command(const cli_tool *t, int argc, char **argv) {
    (void)t;
    static const char *const aliases[][2] = {{"--search", "search"}, {"--a2a", "a2a"}, {"--dump-platform", "dump-platform"}};
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++) {
            size_t n = strlen(aliases[k][0]);
            if (strncmp(argv[i], aliases[k][0], n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '='))
                return command_named(aliases[k][1]);
        }
    if (argv[1][0] != '-' && !strchr(argv[1], '.') && !strchr(argv[1], '/') && access(argv[1], F_OK) != 0)
        return NULL;
    return command_named("run");
}

static const cli_tool SIMRUN = {"simrun", ABOUT, COMMANDS, EPILOG, implicit_command};

int main(int argc, char **argv) { return cli_main(&SIMRUN, argc, argv); }
