/* simdiag — the seed 000 diagnoser over step traces (simulated by simrun or measured by simlive).
 *
 *   simdiag check TRACE.json [--json OUT] [--min-excess PCT] [--top K] [--quiet]
 *   simdiag compare PREDICTED.json MEASURED.json [--json OUT] [--tolerance PCT] [--quiet]
 *
 * Exit codes: 0 healthy (compare: within tolerance), 1 runtime failure, 2 bad input or usage,
 * 3 a problem was found (check: straggler, severe expert imbalance or hang; compare: an op class
 * off by more than --tolerance). Links only moesim_core. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/base/cli_args.h"
#include "sim/report/diagnose.h"
#include "sim/report/results.h"

static const char USAGE[] =
    "usage: simdiag check TRACE.json [options]\n"
    "       simdiag compare PREDICTED.json MEASURED.json [options]\n"
    "(a folder stands for the trace.json that simrun or simlive wrote in it)\n"
    "\n"
    "check: the seed 000 diagnoser over one step trace (trace.json of `simrun --levels step` with\n"
    "output.trace, or of `simlive`):\n"
    "  - stragglers: ranks whose busy (compute) time is > mean + 2 sd or > 1.25 x mean among the ranks of\n"
    "    their pipeline stage, named with node and GPU, with the PCIe / XID / throttling advice;\n"
    "  - expert load imbalance: CV, max/min, Gini; severe when CV > 0.4 or max/min > 3; the hottest\n"
    "    experts and the ranks/GPUs that hold them;\n"
    "  - hang: which ranks wait in which collective, who is missing and where it last was, next steps.\n"
    "compare: predicted (simulated) vs measured (live) mean op time per op class, with the error.\n"
    "\n"
    "options:\n"
    "  --json OUT           also write the report as JSON to OUT (atomically)\n"
    "  --min-excess PCT     check: the 2-sigma rule also needs PCT% over the mean (default 5; 0 = the seed's\n"
    "                       rule exactly; on thousands of ranks 2 sigma alone flags ~2% of healthy ones)\n"
    "  --top K              check: name up to K hot experts (default 3)\n"
    "  --tolerance PCT      compare: exit 3 when an op class's |error| exceeds PCT%\n"
    "  --quiet              no report on stdout (the exit code and --json only)\n"
    "  -h, --help           this text\n"
    "\n"
    "exit codes: 0 healthy, 1 runtime failure, 2 bad input or usage, 3 problem found\n"
    "\n"
    "examples:\n"
    "  simrun scenarios/slow-gpu.json --levels step --out results/slow && simdiag check results/slow\n"
    "  simdiag check trace.json --json diagnosis.json --quiet || echo \"exit $?: see diagnosis.json\"\n"
    "  simdiag check trace.json --min-excess 0          # the seed's straggler rule, unmodified\n"
    "  simdiag compare results/tiny/trace.json live/trace.json --tolerance 25\n";

typedef struct {
    const char *files[2];
    int n_files;
    const char *json;
    double min_excess_pct, tolerance_pct, top;
    int quiet;
} opts;

static int parse_opts(int argc, char **argv, int want_files, opts *o) {
    int rc;
    o->min_excess_pct = DIAG_MIN_EXCESS_DEFAULT * 100.0;
    o->tolerance_pct = NAN;
    o->top = 3;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--json") == 0 && v) { o->json = v; i++; }
        else if (strcmp(a, "--min-excess") == 0 && v && want_files == 1) {
            if ((rc = cli_double("simdiag", a, v, 0, 100, &o->min_excess_pct))) return rc;
            i++;
        } else if (strcmp(a, "--top") == 0 && v && want_files == 1) {
            if ((rc = cli_double("simdiag", a, v, 1, 1 << 20, &o->top))) return rc;
            if (o->top != floor(o->top)) return cli_usage_error("simdiag", "--top: got '%s'; expected an integer >= 1", v);
            i++;
        } else if (strcmp(a, "--tolerance") == 0 && v && want_files == 2) {
            if ((rc = cli_double("simdiag", a, v, 0, 1e9, &o->tolerance_pct))) return rc;
            i++;
        } else if (strcmp(a, "--quiet") == 0) o->quiet = 1;
        else if (a[0] == '-' && a[1]) return cli_usage_error("simdiag", "unknown option or missing value: %s", a);
        else if (o->n_files < want_files) o->files[o->n_files++] = a;
        else return cli_usage_error("simdiag", "unexpected argument: %s", a);
    }
    if (o->n_files < want_files)
        return cli_usage_error("simdiag", "%s", want_files == 1 ? "check: no trace file given"
                                                 : "compare: expected PREDICTED.json MEASURED.json");
    return 0;
}

static int write_json(const char *path, cJSON *doc) {
    char *text = cJSON_Print(doc);
    moe_error err = {0};
    int rc = 0;
    if (!text) rc = moe_error_set(&err, EXIT_RUNTIME, "%s: out of memory", path);
    else {
        size_t n = strlen(text);
        char *nl = realloc(text, n + 2);   /* end the file with a newline */
        if (nl) { text = nl; text[n] = '\n'; text[n + 1] = '\0'; }
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

static int cmd_check(int argc, char **argv) {
    opts o = {0};
    int rc = parse_opts(argc, argv, 1, &o);
    if (rc) return rc;
    diag_rules rules;
    diag_rules_default(&rules);
    rules.min_excess = o.min_excess_pct / 100.0;
    rules.top_experts = (int)o.top;
    moe_error err = {0};
    diag_trace t;
    char path[4096];
    o.files[0] = trace_path(o.files[0], path, sizeof path);
    if (diag_trace_load(o.files[0], &t, &err)) {
        fprintf(stderr, "simdiag: %s\n", err.msg);
        return err.code;
    }
    diag_report r;
    if (diag_check(&t, &rules, &r)) {
        fprintf(stderr, "simdiag: %s: out of memory\n", o.files[0]);
        diag_trace_free(&t);
        return EXIT_RUNTIME;
    }
    if (!o.quiet) diag_report_print(stdout, &t, &r, &rules);
    if (o.json) {
        cJSON *doc = diag_report_json(&t, &r, &rules);
        rc = write_json(o.json, doc);
        cJSON_Delete(doc);
    }
    int problems = r.problems;
    diag_report_free(&r);
    diag_trace_free(&t);
    return rc ? rc : problems ? DIAG_EXIT_PROBLEM : EXIT_OK;
}

static int cmd_compare(int argc, char **argv) {
    opts o = {0};
    int rc = parse_opts(argc, argv, 2, &o);
    if (rc) return rc;
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
        if (!rc && isfinite(o.tolerance_pct) && isfinite(r.max_abs_error_pct) && r.max_abs_error_pct > o.tolerance_pct) {
            if (!o.quiet) printf("max |error| %.1f%% > tolerance %.1f%%\n", r.max_abs_error_pct, o.tolerance_pct);
            rc = DIAG_EXIT_PROBLEM;
        }
        diag_compare_free(&r);
    }
    diag_trace_free(&p);
    diag_trace_free(&m);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("simdiag", "%s", "no command given (check or compare)");
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(USAGE, stdout);
            return EXIT_OK;
        }
    if (strcmp(argv[1], "check") == 0) return cmd_check(argc, argv);
    if (strcmp(argv[1], "compare") == 0) return cmd_compare(argc, argv);
    static const char *const cmds[] = {"check", "compare", NULL};
    const char *dym = moe_did_you_mean(argv[1], cmds);
    fprintf(stderr, "simdiag: unknown command '%s'; expected check or compare%s%s%s\n(see simdiag --help)\n", argv[1],
            dym ? " (did you mean '" : "", dym ? dym : "", dym ? "'?)" : "");
    return EXIT_BADINPUT;
}
