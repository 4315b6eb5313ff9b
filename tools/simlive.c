/* simlive — run the step program of a scenario live: real kernels, real communicators, one process
 * per GPU of the scenario, launched by mpirun (or srun).
 *
 *   mpirun -np P simlive SCENARIO.json [--backend mpi|nccl] [--out DIR] [--watchdog-s S] [--steps N]
 *
 * It builds the very program the simulator runs (program_build: same generator, same schedule) and
 * executes this rank's ops with sim/live_exec (the program.h semantics) through a backend: "mpi" =
 * the CPU references of kernels/ + Open MPI (CI runs it), "nccl" = CUDA kernels + NCCL (GPUs only).
 * Outputs: DIR/trace.json (the simulator's trace format, otherData.source = "live"), DIR/results.json
 * + results.csv (the `step` keys of SCENARIO.md, measured, plus a "live" section with the MoE
 * correctness checks), and on a hang DIR/watchdog.json.
 *
 * Exit codes: 0 ok, 1 runtime failure (a hang found by the watchdog, a failed check), 2 bad input or
 * usage (including an MPI world size that differs from the scenario's GPU count). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/base/cli_args.h"
#include "sim/base/alloc.h"
#include "sim/live/live_exec.h"
#include "sim/program/program.h"
#include "sim/report/results.h"
#include "sim/program/schedule.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_load.h"
#include "sim/exec/step_accounting.h"
#include "sim/exec/trace.h"
#include "sim/live/backend_cpu.h"
#include "sim/live/backend_mpi.h"
#ifdef MOESIM_LIVE_NCCL
#include "sim/live/backend_nccl.h"
#endif

static const char OPTIONS[] =
    "      --backend B      mpi (CPU reference kernels + Open MPI; default) or nccl (CUDA kernels + NCCL,\n"
    "                       one GPU per process; only in builds with CUDA)\n"
    "  -o, --out DIR        output folder (default: the scenario's output.dir)\n"
    "      --watchdog-s S   seconds without progress before the watchdog fires (default 60; 0 = off)\n"
    "      --steps N        steps to run; the last one is reported and traced (default 2: one warm-up)\n"
    "      --stall G:L:M    inject a stall (like faults.stalls): GPU G stops before the forward of layer L,\n"
    "                       micro-batch M\n"
    "  -j, --jobs N         accepted; the processes are mpirun's (-np P)\n"
    "  -q, --quiet          no summary on stdout (the files and the exit code only)\n";

static const char EPILOG[] =
    "exit codes: 0 ok, 1 runtime failure (a hang, a failed check), 2 bad input or usage\n"
    "\n"
    "examples:\n"
    "  mpirun -np 4 --oversubscribe simlive tests/data/live/tiny-4.json --out /tmp/live\n"
    "  mpirun -np 4 --oversubscribe simlive tests/data/live/tiny-4-stall.json --watchdog-s 3\n"
    "  mpirun -np 8 simlive my-8gpu.json --backend nccl --out results/live-8\n"
    "  simdiag compare results/sim/trace.json /tmp/live/trace.json\n";

static const cli_command RUN = {
    NULL, NULL, "SCENARIO.json [options]      (under mpirun -np P)",
    "Runs the step program of SCENARIO (the one `simrun` simulates) live, one MPI process per GPU of the\n"
    "scenario (P must equal cluster.nodes x cluster.gpus_per_node), and writes DIR/trace.json (the\n"
    "simulator's trace format, source \"live\": compare with `simdiag compare`), DIR/results.json and\n"
    "DIR/results.csv (measured step keys; the MoE output checked BITWISE against the kernels' single-\n"
    "process reference moe_layer_ref_cpu). A rank that makes no progress for --watchdog-s seconds\n"
    "makes every rank print where it is, writes DIR/watchdog.json naming the culprit, and exits 1.",
    OPTIONS};
static const cli_tool SIMLIVE = {"simlive", NULL, NULL, EPILOG, NULL};

typedef struct {
    const char *file, *out, *backend;
    double watchdog_s;
    int steps, quiet;
    int n_stalls;
    stall_fault stalls[SCN_MAX_FAULTS];
} cli;

/* Parsed on every rank (each needs the values); only rank 0 prints usage errors. Non-zero when
 * simlive must stop: the exit code, or -1 for "help printed, exit 0". */
static int parse_args(int argc, char **argv, int rank0, cli *c) {
    enum { O_BACKEND = 256, O_WATCHDOG, O_STEPS, O_STALL };
    static const struct option opts[] = {
        {"backend", required_argument, NULL, O_BACKEND}, {"watchdog-s", required_argument, NULL, O_WATCHDOG},
        {"steps", required_argument, NULL, O_STEPS},     {"stall", required_argument, NULL, O_STALL},
        CLI_COMMON_OPTIONS};
    static const char *const backends[] = {"mpi", "nccl", NULL};
    cli_parser p;
    cli_parser_init(&p, &SIMLIVE, &RUN);
    p.silent = !rank0;
    memset(c, 0, sizeof *c);
    c->backend = "mpi";
    c->watchdog_s = 60;
    c->steps = 2;
    for (int o; (o = cli_next(&p, argc, argv, opts)) != -1;) {
        int bad = 0, b;
        switch (o) {
        case CLI_STOP: return p.rc ? p.rc : -1;
        case O_BACKEND: bad = cli_enum_opt(&p, optarg, backends, &b); c->backend = backends[bad ? 0 : b]; break;
        case O_WATCHDOG: bad = cli_double_opt(&p, optarg, 0, 86400, &c->watchdog_s); break;
        case O_STEPS: bad = cli_int_opt(&p, optarg, 1, 1000, &c->steps); break;
        case O_STALL: {
            stall_fault f;
            char extra;
            if (sscanf(optarg, "%d:%d:%d%c", &f.gpu, &f.layer, &f.micro_batch, &extra) != 3 || f.gpu < 0 ||
                f.layer < 0 || f.micro_batch < 0)
                bad = cli_error(&p, "--stall: got '%s'; expected GPU:LAYER:MICRO_BATCH (non-negative integers)", optarg);
            else if (c->n_stalls == SCN_MAX_FAULTS) bad = cli_error(&p, "--stall: more than %d stalls", SCN_MAX_FAULTS);
            else c->stalls[c->n_stalls++] = f;
            break;
        }
        }
        if (bad) return p.rc ? p.rc : -1;
    }
    if (cli_positionals(&p, argc, argv, 1, 1, "one SCENARIO.json")) return p.rc ? p.rc : -1;
    c->file = argv[optind];
    c->out = p.common.out;
    c->quiet = p.common.quiet;
    return 0;
}

/* The hang as a step trace (trace.h's format, source "live"), so that `simdiag check DIR` reads a live
 * hang as it reads a simulated one: who waits in which collective, who never arrived and where it
 * last was. No per-op timings (the step never finished). */
static void write_hang_trace(const program *p, const live_rank_state *st, const live_hang *h, const char *out_dir) {
    step_exec_result r;
    memset(&r, 0, sizeof r);
    r.n_ranks = p->n_ranks;
    r.hang.found = 1;
    r.hang.culprit = h->culprit;
    r.hang.group = -1;
    if (h->coll_rank >= 0) {
        program_op o;
        program_rank_op(p, h->coll_rank, h->coll_op, &o);
        r.hang.op = (op_kind)o.kind;
        r.hang.group = o.group;
        r.hang.group_kind = p->groups[o.group].kind;
        r.hang.layer = o.layer;
        r.hang.mb = o.mb;
        r.hang.phase = o.phase;
    }
    r.hang.n_waiting = h->n_waiting;
    r.hang.waiting = h->waiting;
    r.hang.n_missing = h->n_missing;
    r.hang.missing = h->missing;
    int *last = moe_xcalloc((size_t)h->n_missing + 1, sizeof *last);
    for (int i = 0; i < h->n_missing; i++) last[i] = st[h->missing[i]].last_op;
    r.hang.missing_last_op = last;
    for (int q = 0; q < p->n_ranks; q++) {
        int counted = 0;
        for (int i = 0; i < h->n_waiting; i++) counted |= h->waiting[i] == q;
        for (int i = 0; i < h->n_missing; i++) counted |= h->missing[i] == q;
        if (!counted && st[q].activity != LIVE_FINISHED) r.hang.blocked_elsewhere++;
    }
    cJSON *doc = step_trace_build(p, &r, "live");
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    char path[4096];
    moe_error err = {0};
    snprintf(path, sizeof path, "%s/trace.json", out_dir);
    if (text && !make_dirs(out_dir, &err) && !write_file_atomic(path, text, &err))
        fprintf(stderr, "simlive: wrote %s (the hang, for simdiag check)\n", path);
    else if (text)
        fprintf(stderr, "simlive: %s\n", err.msg);
    free(text);
    cJSON_Delete(doc);
    free(last);
}

/* ---- the watchdog's end game ----------------------------------------------------------------------- */
static void watchdog_fired(const program *p, live_mpi *m, const live_rank_state *mine, int rank,
                           double watchdog_s, const char *out_dir) {
    int n = p->n_ranks;
    live_rank_state *all = moe_xcalloc((size_t)n, sizeof *all);
    if (!all) live_mpi_abort(EXIT_RUNTIME);
    double grace = watchdog_s < 1 ? 1 : watchdog_s > 10 ? 10 : watchdog_s;
    live_mpi_watchdog(m, mine, all, grace);
    char line[1024];
    live_rank_where(p, all, rank, line, sizeof line);
    fprintf(stderr, "simlive[%d]: watchdog: %s\n", rank, line);
    fflush(stderr);
    int reporter = -1;
    for (int r = 0; r < n && reporter < 0; r++) if (all[r].activity != LIVE_NO_ANSWER) reporter = r;
    if (rank == reporter) {
        live_hang h;
        if (live_hang_analyze(p, all, &h) == 0) {
            char *rep = live_hang_report(p, all, &h, watchdog_s);
            if (rep) { fprintf(stderr, "%s", rep); free(rep); }
            cJSON *j = live_hang_json(p, all, &h, watchdog_s);
            char *text = cJSON_Print(j);
            char path[4096];
            moe_error err = {0};
            snprintf(path, sizeof path, "%s/watchdog.json", out_dir);
            if (text && (make_dirs(out_dir, &err) || write_file_atomic(path, text, &err)))
                fprintf(stderr, "simlive: %s\n", err.msg);
            else if (text)
                fprintf(stderr, "simlive: wrote %s\n", path);
            free(text);
            cJSON_Delete(j);
            write_hang_trace(p, all, &h, out_dir);
            live_hang_free(&h);
        }
        live_mpi_abort(EXIT_RUNTIME);
    }
    /* not the reporter: it aborts everyone once it has written watchdog.json and the hang trace; wait
     * long enough for that on a loaded machine (a sanitized build took over 8 s), and abort only if
     * the reporter itself never gets there */
    struct timespec ts = {(time_t)grace + 60, 0};
    nanosleep(&ts, NULL);
    live_mpi_abort(EXIT_RUNTIME);
}

/* ---- outputs ------------------------------------------------------------------------------------------ */
static cJSON *check_json(const live_moe_check *k, const char *truth) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "result", k->instances == 0 ? "nothing to check" :
                            k->mismatches == 0 ? "bitwise equal" : "MISMATCH");
    cJSON_AddStringToObject(j, "truth", truth);
    cJSON_AddNumberToObject(j, "instances", (double)k->instances);
    cJSON_AddNumberToObject(j, "values", (double)k->values);
    cJSON_AddNumberToObject(j, "mismatches", (double)k->mismatches);
    cJSON_AddNumberToObject(j, "max_abs_diff", k->max_abs_diff);
    return j;
}

/* Reduce a check over all ranks (sums; max of the max diff). */
static void reduce_check(live_moe_check *k) {
    k->instances = live_mpi_sum_long(k->instances);
    k->values = live_mpi_sum_long(k->values);
    k->mismatches = live_mpi_sum_long(k->mismatches);
    k->dropped = live_mpi_sum_long(k->dropped);
    k->rows_sent = live_mpi_sum_long(k->rows_sent);
    k->max_abs_diff = live_mpi_max(k->max_abs_diff);
}

static cJSON *step_json(const program *p, const step_split *splits, double step_time_s, double wall_s,
                        const live_moe_check *moe) {
    const scenario *s = p->scn;
    int n = p->n_ranks;
    step_split mean;
    step_split_mean(splits, n, &mean);
    double tokens = (double)s->layout.global_batch * s->model.seq_len;
    double tflops = step_time_s > 0 ? p->model_flops_per_step / step_time_s / n / 1e12 : 0;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "source", "live");
    cJSON_AddNumberToObject(j, "step_time_s", step_time_s);
    cJSON_AddNumberToObject(j, "tokens_per_s_per_gpu", step_time_s > 0 ? tokens / step_time_s / n : 0);
    cJSON_AddNumberToObject(j, "mfu", s->cluster.gpu.bf16_tflops > 0 ? tflops / s->cluster.gpu.bf16_tflops : 0);
    cJSON_AddNumberToObject(j, "tflops_per_gpu", tflops);
    cJSON_AddNumberToObject(j, "compute_s", mean.compute_s);
    cJSON_AddNumberToObject(j, "exposed_comm_s", mean.exposed_comm_s);
    cJSON_AddNumberToObject(j, "bubble_s", mean.bubble_s);
    cJSON_AddNumberToObject(j, "optimizer_s", mean.optimizer_s);
    cJSON_AddNumberToObject(j, "overhead_s", mean.overhead_s);
    double assigned = (double)moe->rows_sent + (double)moe->dropped;
    cJSON_AddNumberToObject(j, "dropped_token_fraction", assigned > 0 ? moe->dropped / assigned : 0);
    cJSON_AddNumberToObject(j, "slowest_rank", step_split_slowest_rank(splits, n));
    cJSON_AddNumberToObject(j, "sim_wall_s", wall_s);
    cJSON *bd = cJSON_AddObjectToObject(j, "breakdown");
    cJSON_AddItemToObject(bd, "stages", step_split_stages_json(p, splits));
    return j;
}

static int write_outputs(const program *p, const cli *c, const char *out_dir, const char *backend,
                         const step_split *splits, double step_time_s, const double *step_times,
                         op_time **times, double **measured, const live_moe_check *moe,
                         const live_moe_check *model, double wall_s, moe_error *err) {
    const scenario *s = p->scn;
    int n = p->n_ranks;
    if (make_dirs(out_dir, err)) return err->code;
    /* trace: the scenario's trace ranks, else every rank (live clusters are small) */
    int nt = s->output.n_trace_ranks > 0 ? s->output.n_trace_ranks : n;
    int *tr = moe_xmalloc((size_t)nt * sizeof(int));
    op_time **tt = moe_xmalloc((size_t)nt * sizeof *tt);
    double **tm = moe_xmalloc((size_t)nt * sizeof *tm);
    for (int k = 0; k < nt; k++) {
        tr[k] = s->output.n_trace_ranks > 0 ? s->output.trace_ranks[k] : k;
        tt[k] = times[tr[k]]; tm[k] = measured[tr[k]];
    }
    cJSON *trace = live_trace_build(p, backend, nt, tr, tt, tm, step_time_s, splits);
    char path[4096];
    snprintf(path, sizeof path, "%s/trace.json", out_dir);
    char *text = trace ? cJSON_PrintUnformatted(trace) : NULL;
    int rc = text ? write_file_atomic(path, text, err) : moe_error_set(err, EXIT_RUNTIME, "live: cannot build the trace");
    free(text);
    cJSON_Delete(trace);
    free(tt); free(tm);

    if (!rc) {
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddNumberToObject(pt, "id", 0);
        cJSON_AddItemToObject(pt, "scenario", scenario_to_json(s));
        cJSON_AddItemToObject(pt, "step", step_json(p, splits, step_time_s, wall_s, moe));
        cJSON *live = cJSON_AddObjectToObject(pt, "live");
        cJSON_AddStringToObject(live, "backend", backend);
        cJSON_AddNumberToObject(live, "ranks", n);
        cJSON_AddNumberToObject(live, "steps", c->steps);
        cJSON_AddItemToObject(live, "step_times_s", cJSON_CreateDoubleArray(step_times, c->steps));
        cJSON_AddItemToObject(live, "moe_check", check_json(moe, "moe_layer_ref_cpu (kernels/, dense single-process reference)"));
        cJSON_AddItemToObject(live, "model_check", check_json(model, "single-process forward through every layer"));
        cJSON_AddItemToObject(live, "op_classes", live_op_class_times(p, nt, tr, times));
        cJSON *rk = cJSON_AddArrayToObject(live, "ranks_breakdown");
        for (int r = 0; r < n; r++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "rank", r);
            cJSON_AddNumberToObject(o, "end_s", splits[r].end_s);
            cJSON_AddNumberToObject(o, "compute_s", splits[r].compute_s);
            cJSON_AddNumberToObject(o, "optimizer_s", splits[r].optimizer_s);
            cJSON_AddNumberToObject(o, "exposed_comm_s", splits[r].exposed_comm_s);
            cJSON_AddNumberToObject(o, "bubble_s", splits[r].bubble_s);
            cJSON_AddNumberToObject(o, "overhead_s", splits[r].overhead_s);
            cJSON_AddItemToArray(rk, o);
        }
        cJSON *points = cJSON_CreateArray();
        cJSON_AddItemToArray(points, pt);
        cJSON *doc = results_document(points);
        rc = results_write(out_dir, doc, err);
        cJSON_Delete(doc);
    }
    free(tr);
    return rc;
}

/* ---- main -------------------------------------------------------------------------------------------- */
static int fail_all(int rank, int code, const moe_error *err) {
    if (rank == 0 && err) fprintf(stderr, "simlive: %s\n", err->msg);
    live_mpi_finalize();
    return code;
}

int main(int argc, char **argv) {
    /* help and version before MPI_Init: they need no MPI world (and print once under mpirun) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "--version")) {
            const char *r = getenv("OMPI_COMM_WORLD_RANK");
            if (r && strcmp(r, "0")) return 0;
            if (argv[i][2] == 'v') printf("simlive (moesim) %s\n", MOESIM_VERSION);
            else cli_print_command_help(&SIMLIVE, &RUN);
            return 0;
        }
    int rank = 0, size = 1;
    if (live_mpi_init(&argc, &argv, &rank, &size)) { fprintf(stderr, "simlive: MPI_Init failed\n"); return EXIT_RUNTIME; }
    double wall0 = live_mpi_now_s(NULL);
    cli c;
    int rc = parse_args(argc, argv, rank == 0, &c);
    if (rc) { live_mpi_finalize(); return rc < 0 ? EXIT_OK : rc; }

    /* every rank loads and checks the same scenario, so every rank reaches the same verdict */
    moe_error err = {0};
    static scenario s;
    if (scenario_load(c.file, &s, NULL, &err)) return fail_all(rank, err.code, &err);
    for (int k = 0; k < c.n_stalls && s.faults.n_stalls < SCN_MAX_FAULTS; k++)
        s.faults.stalls[s.faults.n_stalls++] = c.stalls[k];
    for (int k = 0; k < s.faults.n_stalls; k++)
        if (s.faults.stalls[k].gpu >= scn_gpus(&s)) {
            char v[16]; snprintf(v, sizeof v, "%d", s.faults.stalls[k].gpu);
            moe_error_input(&err, s.file, "faults.stalls[].gpu", v, "a GPU id in [0, %d)", scn_gpus(&s));
            return fail_all(rank, EXIT_BADINPUT, &err);
        }
    if (size != scn_gpus(&s)) {
        char v[96];
        snprintf(v, sizeof v, "%d GPUs (nodes %d x gpus_per_node %d)", scn_gpus(&s), s.cluster.nodes, s.cluster.gpus_per_node);
        moe_error_input(&err, s.file, "cluster", v, "as many GPUs as MPI processes: this run has %d (mpirun -np %d)", size, size);
        return fail_all(rank, EXIT_BADINPUT, &err);
    }
    /* the program resolves the step-level faults (sim/program/faults.h) for every rank alike, so
     * every rank reaches the same verdict */
    program *p = NULL;
    if (program_build(&s, &p, &err)) return fail_all(rank, err.code, &err);
    if (live_check_faults(p, &err)) {
        program_free(p);
        return fail_all(rank, err.code, &err);
    }
    program_op *ops = NULL;
    int n_ops = program_materialize(p, rank, &ops);
    const char *out_dir = c.out ? c.out : s.output.dir;

    /* backend */
    live_cpu *cpu = NULL;
    live_mpi *m = NULL;
    live_backend b;
    int use_nccl = strcmp(c.backend, "nccl") == 0;
#ifdef MOESIM_LIVE_NCCL
    live_nccl *g = NULL;
#endif
    if (use_nccl) {
#ifdef MOESIM_LIVE_NCCL
        rc = live_mpi_create(p, rank, NULL, n_ops, &m, &err);
        if (!rc) rc = live_nccl_create(p, rank, m, n_ops, &g, &err);
        if (!rc) live_nccl_backend(g, &b);
#else
        rc = moe_error_input(&err, NULL, "--backend", "nccl", "mpi: this simlive was built without CUDA/NCCL");
#endif
    } else {
        rc = live_cpu_create(p, rank, &cpu, &err);
        if (!rc) rc = live_mpi_create(p, rank, cpu, n_ops, &m, &err);
        if (!rc) live_mpi_backend(m, &b);
    }
    if (live_mpi_all_ok(rc == 0)) {
        if (rc && (rank == 0 || err.code != EXIT_BADINPUT)) fprintf(stderr, "simlive[%d]: %s\n", rank, err.msg);
        int code = live_mpi_max(rc ? err.code : 0) >= EXIT_BADINPUT ? EXIT_BADINPUT : EXIT_RUNTIME;
#ifdef MOESIM_LIVE_NCCL
        live_nccl_free(g);
#endif
        live_mpi_free(m); live_cpu_free(cpu); free(ops); program_free(p);
        live_mpi_finalize();
        return code;
    }
    if (rank == 0 && !c.quiet)
        printf("simlive: %s: %d ranks (tp %d pp %d ep %d dp %d, %s, %d micro-batches), backend %s, %d step%s\n",
               s.name, size, p->tp, p->pp, p->ep, p->dp, schedule_name(s.layout.schedule), p->micro_batches,
               b.name, c.steps, c.steps > 1 ? "s" : "");

    live_rank_run run;
    live_rank_run_init(&run, n_ops);
    double *step_times = moe_xcalloc((size_t)c.steps, sizeof(double));
    live_exec_opts eo = {.watchdog_s = c.watchdog_s,
                         .hard_stall = getenv("MOESIM_LIVE_HARD_STALL") != NULL};
    for (int step = 0; step < c.steps; step++) {
        if (cpu) live_cpu_begin_step(cpu);
        eo.step = step;
        if ((rc = b.barrier(b.ctx, &err)) == LIVE_HUNG) {
            run.state.activity = LIVE_FINISHED;
            watchdog_fired(p, m, &run.state, rank, c.watchdog_s, out_dir);
        }
        double t0 = b.now_s(b.ctx);
        rc = live_exec_step(p, rank, ops, n_ops, &b, &eo, &run, &err);
        if (rc == LIVE_HUNG) watchdog_fired(p, m, &run.state, rank, c.watchdog_s, out_dir);
        if (rc) {
            fprintf(stderr, "simlive[%d]: step %d: %s\n", rank, step, err.msg);
            live_mpi_abort(EXIT_RUNTIME);
        }
        if ((rc = b.barrier(b.ctx, &err)) == LIVE_HUNG) watchdog_fired(p, m, &run.state, rank, c.watchdog_s, out_dir);
        for (int i = 0; i < n_ops; i++) {
            if (run.times[i].start_s >= 0) run.times[i].start_s -= t0;
            if (run.times[i].end_s >= 0) run.times[i].end_s -= t0;
        }
        run.end_s -= t0;
        step_times[step] = live_mpi_max(run.end_s);
    }
    double step_time_s = step_times[c.steps - 1];

    /* correctness, outside the timed region */
    live_moe_check moe, model;
    memset(&moe, 0, sizeof moe); memset(&model, 0, sizeof model);
    int check_rc = 0;
    if (cpu) {
        check_rc |= live_cpu_check_moe(cpu, &moe);
        check_rc |= live_cpu_check_model(cpu, &model);
    }
#ifdef MOESIM_LIVE_NCCL
    if (g) check_rc |= live_nccl_check_moe(g, &moe, &model);
#endif
    reduce_check(&moe);
    reduce_check(&model);

    /* every rank's timings to rank 0, which accounts them (step_accounting.h) */
    op_time **times = NULL;
    double **measured = NULL;
    live_mpi_gather_run(m, &run, &times, &measured);
    double wall_s = live_mpi_now_s(NULL) - wall0;

    int exit_code = EXIT_OK;
    step_split *splits = NULL;
    if (rank == 0) {
        splits = moe_xcalloc((size_t)size, sizeof *splits);
        for (int r = 0; r < size; r++) step_split_program_rank(p, r, times[r], NULL, step_time_s, &splits[r]);
        rc = write_outputs(p, &c, out_dir, b.name, splits, step_time_s, step_times, times, measured, &moe, &model, wall_s, &err);
        if (rc) { fprintf(stderr, "simlive: %s\n", err.msg); exit_code = rc; }
        step_split mean;
        step_split_mean(splits, size, &mean);
        if (!c.quiet) {
            printf("step %d: step_time_s %.6f  compute_s %.6f  exposed_comm_s %.6f  bubble_s %.6f (means over ranks)\n",
                   c.steps - 1, step_time_s, mean.compute_s, mean.exposed_comm_s, mean.bubble_s);
            printf("MoE output check: %s (%ld layer x micro-batch instances, %ld values, %ld mismatches, max |diff| %g) "
                   "vs moe_layer_ref_cpu\n",
                   moe.instances == 0 ? "nothing to check" : moe.mismatches ? "MISMATCH" : "bitwise equal",
                   moe.instances, moe.values, moe.mismatches, moe.max_abs_diff);
            printf("model forward check: %s (%ld micro-batches through %d layers, %ld mismatches) vs a single-process forward\n",
                   model.instances == 0 ? "nothing to check" : model.mismatches ? "MISMATCH" : "bitwise equal",
                   model.instances, s.model.layers, model.mismatches);
            if (!rc) printf("wrote %s/trace.json, %s/results.json, %s/results.csv\n", out_dir, out_dir, out_dir);
        }
        for (int r = 0; r < size; r++) { free(times[r]); free(measured[r]); }
        free(times); free(measured);
    }
    if (check_rc || moe.mismatches || model.mismatches) {
        if (rank == 0) fprintf(stderr, "simlive: the live MoE output differs from the reference (see above)\n");
        exit_code = EXIT_RUNTIME;
    }
    exit_code = (int)live_mpi_max(exit_code);
    free(splits); free(step_times);
    live_rank_run_free(&run);
#ifdef MOESIM_LIVE_NCCL
    live_nccl_free(g);
#endif
    live_mpi_free(m);
    live_cpu_free(cpu);
    free(ops);
    program_free(p);
    live_mpi_finalize();
    return exit_code;
}
