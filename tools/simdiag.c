/* simdiag — the seed 000 diagnoser over step traces (simulated by simrun or measured by simlive).
 *
 *   simdiag check TRACE.json|DIR [--out OUT] [--min-excess PCT] [--top K] [--quiet]
 *   simdiag compare PREDICTED MEASURED [--out OUT] [--tolerance PCT] [--quiet]
 *   simdiag steps DIR|results.db [--point N] [--hot-share F] [--out OUT] [--quiet]
 *
 * Exit codes: 0 healthy (compare: within tolerance), 1 runtime failure, 2 bad input or usage,
 * 3 a problem was found (check: straggler, severe expert imbalance or hang; compare: an op class
 * off by more than --tolerance, default DIAG_COMPARE_TOLERANCE_PCT). Links only moesim_core. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

#include "sim/base/alloc.h"
#include "sim/base/cli_args.h"
#include "sim/base/alloc.h"
#include "sim/report/diagnose.h"
#include "sim/report/diagnose_series.h"
#include "sim/report/results_db.h"
#include "sim/report/results.h"

static const char ABOUT[] =
    "Diagnoses training steps (stragglers, expert imbalance, slow links, hangs) from step traces: the\n"
    "trace.json of `simrun` (output.trace, step level) or of `simlive`. A folder stands for the\n"
    "trace.json in it, a sweep's output folder for every traces/trace-ID.json in it (exit 3 when any has\n"
    "a problem).";

static const char EPILOG[] =
    "exit codes: 0 healthy, 1 runtime failure, 2 bad input or usage, 3 problem found\n"
    "\n"
    "examples:\n"
    "  simrun scenarios/slow-gpu.json --levels step --out results/slow && simdiag check results/slow\n"
    "  simdiag check trace.json --out diagnosis.json --quiet || echo \"exit $?: see diagnosis.json\"\n"
    "  simdiag check trace.json --min-excess 0          # the seed's straggler rule, unmodified\n"
    "  simdiag compare results/tiny/trace.json live/trace.json --tolerance 25\n"
    "  simdiag steps results/incident-hot-expert-steps --point 0\n";

static const char CHECK_OPTIONS[] =
    "  -o, --out FILE       also write the report as JSON to FILE, atomically (also --json FILE)\n"
    "      --min-excess PCT the 2-sigma straggler rule also needs PCT% over the mean (default 5; 0 = the\n"
    "                       seed's rule exactly; on thousands of ranks 2 sigma alone flags ~2% of healthy ones)\n"
    "      --top K          name up to K hot experts (default 3)\n"
    "  -j, --jobs N         accepted; the diagnosis runs in one process\n"
    "  -q, --quiet          no report on stdout (the exit code and --out only)\n";

static const char COMPARE_OPTIONS[] =
    "  -o, --out FILE       also write the comparison as JSON to FILE, atomically (also --json FILE)\n"
    "      --tolerance PCT  exit 3 when an op class's |error| exceeds PCT% (default 20)\n"
    "  -j, --jobs N         accepted; the comparison runs in one process\n"
    "  -q, --quiet          no report on stdout\n";

static const char STEPS_OPTIONS[] =
    "  -o, --out FILE       also write the findings as JSON to FILE, atomically (also --json FILE)\n"
    "      --point N        only point N (default: every point with a series)\n"
    "      --hot-share F    an expert is hot above this share of the tokens (default 0.25)\n"
    "  -j, --jobs N         accepted; the diagnosis runs in one process\n"
    "  -q, --quiet          no report on stdout (the exit code and --out only)\n";

typedef struct {
    const char *files[2];
    const char *json;
    double min_excess_pct, tolerance_pct;
    int top, quiet;
} opts;

/* The options of `check` (want_files 1) and `compare` (2); non-zero when the command must stop
 * (help printed or a usage error): it returns p->rc. */
static int parse_opts(cli_parser *p, int argc, char **argv, int want_files, opts *o) {
    enum { O_JSON = 256, O_MIN_EXCESS, O_TOP, O_TOLERANCE };
    static const struct option check_opts[] = {
        {"json", required_argument, NULL, O_JSON}, {"min-excess", required_argument, NULL, O_MIN_EXCESS},
        {"top", required_argument, NULL, O_TOP}, CLI_COMMON_OPTIONS};
    static const struct option compare_opts[] = {
        {"json", required_argument, NULL, O_JSON}, {"tolerance", required_argument, NULL, O_TOLERANCE},
        CLI_COMMON_OPTIONS};
    o->min_excess_pct = DIAG_MIN_EXCESS_DEFAULT * 100.0;
    o->tolerance_pct = DIAG_COMPARE_TOLERANCE_PCT;
    o->top = 3;
    for (int c; (c = cli_next(p, argc, argv, want_files == 1 ? check_opts : compare_opts)) != -1;) {
        int bad = 0;
        switch (c) {
        case CLI_STOP: return 1;
        case O_JSON: o->json = optarg; break;
        case O_MIN_EXCESS: bad = cli_double_opt(p, optarg, 0, 100, &o->min_excess_pct); break;
        case O_TOP: bad = cli_int_opt(p, optarg, 1, 1 << 20, &o->top); break;
        case O_TOLERANCE: bad = cli_double_opt(p, optarg, 0, 1e9, &o->tolerance_pct); break;
        }
        if (bad) return 1;
    }
    if (cli_positionals(p, argc, argv, want_files, want_files,
                        want_files == 1 ? "one TRACE.json or folder" : "PREDICTED.json MEASURED.json"))
        return 1;
    for (int i = 0; i < want_files; i++) o->files[i] = argv[optind + i];
    if (p->common.out) o->json = p->common.out;
    o->quiet = p->common.quiet;
    return 0;
}

static int write_json(const char *path, cJSON *doc) {
    char *text = cJSON_Print(doc);
    moe_error err = {0};
    int rc = 0;
    if (!text) rc = moe_error_set(&err, EXIT_RUNTIME, "%s: out of memory", path);
    else {
        size_t n = strlen(text);
        text = moe_xrealloc(text, n + 2, 1);   /* end the file with a newline */
        text[n] = '\n';
        text[n + 1] = '\0';
        rc = write_file_atomic(path, text, &err);
    }
    free(text);
    if (rc) fprintf(stderr, "simdiag: %s\n", err.msg);
    return rc;
}

/* `simdiag check results/slow` means the trace simrun wrote there. */
static const char *trace_path(const char *arg, char *buf, size_t cap) {
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) return arg;
    snprintf(buf, cap, "%s/trace.json", arg);
    return buf;
}

static int is_point_trace(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return strncmp(e->d_name, "trace-", 6) == 0 && n > 11 && strcmp(e->d_name + n - 5, ".json") == 0;
}

/* The traces `arg` stands for: a file; a folder's trace.json; a sweep's folder: every
 * traces/trace-ID.json in it, in point order. Returns the count (paths in *out, caller frees). */
static int trace_list(const char *arg, char ***out) {
    char one[4096];
    const char *single = trace_path(arg, one, sizeof one);
    struct stat st;
    struct dirent **names = NULL;
    int n = 0;
    if (single != arg && stat(single, &st) != 0) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/traces", arg);
        n = scandir(dir, &names, is_point_trace, alphasort);
        if (n < 0) n = 0;
    }
    if (n == 0) {
        *out = moe_xcalloc(1, sizeof **out);
        (*out)[0] = moe_xstrdup(single);
        free(names);
        return 1;
    }
    *out = moe_xcalloc((size_t)n, sizeof **out);
    for (int i = 0; i < n; i++) {
        char path[8300];
        snprintf(path, sizeof path, "%s/traces/%s", arg, names[i]->d_name);
        (*out)[i] = moe_xstrdup(path);
        free(names[i]);
    }
    free(names);
    return n;
}

/* One trace: its report on stdout (unless quiet), its JSON into `reports` (when not NULL). Returns
 * 0 healthy, DIAG_EXIT_PROBLEM, or an error code. */
static int check_one(const char *path, const diag_rules *rules, int quiet, int heading, cJSON *reports) {
    moe_error err = {0};
    diag_trace t;
    if (diag_trace_load(path, &t, &err)) {
        fprintf(stderr, "simdiag: %s\n", err.msg);
        return err.code;
    }
    diag_report r;
    if (diag_check(&t, rules, &r)) {
        fprintf(stderr, "simdiag: %s: out of memory\n", path);
        diag_trace_free(&t);
        return EXIT_RUNTIME;
    }
    if (!quiet) {
        if (heading) printf("== %s\n", path);
        diag_report_print(stdout, &t, &r, rules);
    }
    if (reports) {
        cJSON *doc = diag_report_json(&t, &r, rules);
        cJSON_AddStringToObject(doc, "trace", path);
        cJSON_AddItemToArray(reports, doc);
    }
    int problems = r.problems;
    diag_report_free(&r);
    diag_trace_free(&t);
    return problems ? DIAG_EXIT_PROBLEM : EXIT_OK;
}

static int cmd_check(cli_parser *p, int argc, char **argv) {
    opts o = {0};
    if (parse_opts(p, argc, argv, 1, &o)) return p->rc;
    diag_rules rules;
    diag_rules_default(&rules);
    rules.min_excess = o.min_excess_pct / 100.0;
    rules.top_experts = o.top;
    char **paths = NULL;
    int n = trace_list(o.files[0], &paths), rc = EXIT_OK, found = 0;
    cJSON *reports = o.json ? cJSON_CreateArray() : NULL;
    for (int i = 0; i < n && rc == EXIT_OK; i++) {
        int r = check_one(paths[i], &rules, o.quiet, n > 1, reports);
        if (r == DIAG_EXIT_PROBLEM) found++;
        else rc = r;
    }
    if (rc == EXIT_OK && !o.quiet && n > 1)
        printf("%d trace%s checked, %d with a problem\n", n, n == 1 ? "" : "s", found);
    if (rc == EXIT_OK && o.json) {
        /* one trace: its report; a sweep's folder: {"format", "traces": [reports]} */
        cJSON *doc = reports;
        if (n == 1) doc = cJSON_DetachItemFromArray(reports, 0);
        else {
            doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "format", "moesim-diagnosis-set/1");
            cJSON_AddItemToObject(doc, "traces", reports);
        }
        rc = write_json(o.json, doc);
        if (doc != reports) cJSON_Delete(doc);
        if (n == 1) cJSON_Delete(reports);
        reports = NULL;
    }
    cJSON_Delete(reports);
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    return rc ? rc : found ? DIAG_EXIT_PROBLEM : EXIT_OK;
}

static int cmd_compare(cli_parser *cli, int argc, char **argv) {
    opts o = {0};
    if (parse_opts(cli, argc, argv, 2, &o)) return cli->rc;
    int rc = 0;
    moe_error err = {0};
    diag_trace p, m;
    char path0[4096], path1[4096];
    o.files[0] = trace_path(o.files[0], path0, sizeof path0);
    o.files[1] = trace_path(o.files[1], path1, sizeof path1);
    if (diag_trace_load(o.files[0], &p, &err)) {
        fprintf(stderr, "simdiag: %s\n", err.msg);
        return err.code;
    }
    if (diag_trace_load(o.files[1], &m, &err)) {
        fprintf(stderr, "simdiag: %s\n", err.msg);
        diag_trace_free(&p);
        return err.code;
    }
    diag_compare_report r;
    if (diag_compare(&p, &m, &r)) {
        fprintf(stderr, "simdiag: out of memory\n");
        rc = EXIT_RUNTIME;
    } else {
        if (!o.quiet) diag_compare_print(stdout, &p, &m, &r);
        if (o.json) {
            cJSON *doc = diag_compare_json(&p, &m, &r);
            rc = write_json(o.json, doc);
            cJSON_Delete(doc);
        }
        if (!rc && isfinite(r.max_abs_error_pct) && r.max_abs_error_pct > o.tolerance_pct) {
            if (!o.quiet) printf("max |error| %.1f%% > tolerance %.1f%%\n", r.max_abs_error_pct, o.tolerance_pct);
            rc = DIAG_EXIT_PROBLEM;
        }
        diag_compare_free(&r);
    }
    diag_trace_free(&p);
    diag_trace_free(&m);
    return rc;
}

/* `simdiag steps`: the step_series table of a run's results.db (routing.steps > 1). */
static int cmd_steps(cli_parser *p, int argc, char **argv) {
    enum { O_JSON = 256, O_POINT, O_HOT_SHARE };
    static const struct option steps_opts[] = {
        {"json", required_argument, NULL, O_JSON}, {"point", required_argument, NULL, O_POINT},
        {"hot-share", required_argument, NULL, O_HOT_SHARE}, CLI_COMMON_OPTIONS};
    const char *json = NULL;
    int point = -1;
    double hot_share = DIAG_SERIES_HOT_SHARE;
    for (int c; (c = cli_next(p, argc, argv, steps_opts)) != -1;) {
        int bad = 0;
        switch (c) {
        case CLI_STOP: return p->rc;
        case O_JSON: json = optarg; break;
        case O_POINT: bad = cli_int_opt(p, optarg, 0, 1 << 30, &point); break;
        case O_HOT_SHARE: bad = cli_double_opt(p, optarg, 0, 1, &hot_share); break;
        }
        if (bad) return p->rc;
    }
    if (cli_positionals(p, argc, argv, 1, 1, "one output folder or results.db")) return p->rc;
    if (p->common.out) json = p->common.out;
    const char *path = argv[optind];
    moe_error err = {0};
    results_db *db;
    if (results_db_open_existing(path, 0, &db, &err)) {
        fprintf(stderr, "simdiag: %s\n", err.msg);
        return err.code;
    }
    int n = 0, rc = EXIT_OK, found = 0;
    long one = point, *ids = point >= 0 ? &one : results_db_series_points(db, &n, &err);
    if (point >= 0) n = 1;
    if (point < 0 && !ids && err.code) rc = err.code;
    else if (n == 0) rc = moe_error_set(&err, EXIT_BADINPUT, "%s: no point has a step series (routing.steps > 1)", path);
    cJSON *doc = json ? cJSON_CreateObject() : NULL, *arr = NULL;
    if (doc) {
        cJSON_AddStringToObject(doc, "format", "moesim-series-diagnosis/1");
        arr = cJSON_AddArrayToObject(doc, "points");
    }
    for (int i = 0; i < n && rc == EXIT_OK; i++) {
        results_step_series s;
        if ((rc = results_db_step_series(db, ids[i], &s, &err))) break;
        diag_series_report r;
        if (diag_series(&s, ids[i], hot_share, &r)) {
            rc = moe_error_set(&err, EXIT_BADINPUT, "%s: point %ld has no step series (routing.steps > 1)", path, ids[i]);
        } else {
            if (!p->common.quiet) diag_series_print(stdout, &r);
            if (arr) cJSON_AddItemToArray(arr, diag_series_json(&r));
            found += diag_series_problem(&r);
        }
        results_step_series_free(&s);
    }
    if (rc) fprintf(stderr, "simdiag: %s\n", err.msg);
    if (rc == EXIT_OK && doc) rc = write_json(json, doc);
    cJSON_Delete(doc);
    if (ids != &one) free(ids);
    results_db_close(db, &err);
    return rc ? rc : found ? DIAG_EXIT_PROBLEM : EXIT_OK;
}

static const cli_command COMMANDS[] = {
    {"check", cmd_check, "TRACE.json|DIR [options]",
     "Stragglers, expert load imbalance, slow links and hangs in one step trace.", CHECK_OPTIONS},
    {"compare", cmd_compare, "PREDICTED.json MEASURED.json [options]",
     "Predicted (simulated) vs measured (live) mean op time per op class, with the error.", COMPARE_OPTIONS},
    {"steps", cmd_steps, "DIR|results.db [options]",
     "When and where a hot expert appeared in a multi-step run (routing.steps > 1): the first step over the "
     "hot share, its expert and EP rank, the peak, slow steps and the first timed-out step.", STEPS_OPTIONS},
    {NULL, NULL, NULL, NULL, NULL},
};

static const cli_tool SIMDIAG = {"simdiag", ABOUT, COMMANDS, EPILOG, NULL};

int main(int argc, char **argv) { return cli_main(&SIMDIAG, argc, argv); }
