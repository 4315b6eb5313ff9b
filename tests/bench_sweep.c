/* bench_sweep.c — a 1,000,000-point plan-level sweep as a whole process (`simrun S.json --levels plan`):
 * points per minute, disk used by the output folder, peak memory; and the same at 100,000 points to
 * show that memory does not grow with the number of points.
 *
 * The sweep: scenarios/layout-sweep.json (every valid layout of 4096 GPUs: 169) x 100 global batches
 * x 60 sequence lengths = 1,014,000 points (and x 20 x 30 = 101,400). Goals: >= 1e6
 * points/min on the 2-core machine, <= 1 GB on disk, memory flat.
 * MOESIM_BENCH_SIMRUN=PATH runs another simrun binary (e.g. an older build, for a before/after
 * figure); MOESIM_BENCH_POINTS=small runs only the 101,400-point sweep. */
#define _DEFAULT_SOURCE /* wait4: the resource usage of simrun and the workers it waited for */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/fileio.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The scenario file with `nb` global batches and `ns` sequence lengths. */
static void write_scenario(const char *path, int nb, int ns) {
    moe_error e = {0};
    char *t = read_file_text("scenarios/layout-sweep.json", NULL, &e);
    if (!t) { fprintf(stderr, "%s\n", e.msg); exit(1); }
    char *sw = strstr(t, "\"sweep\"");
    *sw = '\0';
    FILE *f = fopen(path, "w");
    fprintf(f, "%s\"sweep\": {\"layouts\": \"all\", \"layout.global_batch\": [", t);
    for (int i = 0; i < nb; i++) fprintf(f, "%s%d", i ? ", " : "", 15360 * (i + 1));
    fprintf(f, "], \"model.seq_len\": [");
    for (int i = 0; i < ns; i++) fprintf(f, "%s%d", i ? ", " : "", 1024 * (i + 1));
    fprintf(f, "]},\n  \"output\": { \"dir\": \"results/bench-sweep\", \"levels\": [\"plan\"], \"trace\": false, \"plots\": false }\n}\n");
    fclose(f);
    free(t);
}

static double du_bytes(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "du -sb '%s' 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    double b = 0;
    if (p && fscanf(p, "%lf", &b) != 1) b = 0;
    if (p) pclose(p);
    return b;
}

/* One whole-process run; prints its line. */
static int bench(const char *simrun, long points, int nb, int ns) {
    char dir[] = "/tmp/moesim-bench-sweep-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char sc[200], out[200];
    snprintf(sc, sizeof sc, "%s/sweep.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    write_scenario(sc, nb, ns);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        execl(simrun, simrun, sc, "--levels", "plan", "--out", out, "--quiet", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double wall = now_s() - t0;
    double disk = du_bytes(out);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("bench_sweep: %8ld points  %6.1f s  %10.0f points/min  disk %7.1f MB (%.0f B/point)  peak RSS %6.1f MB  "
           "cpu %.1f s%s\n", points, wall, points / wall * 60.0, disk / 1e6, disk / (double)points,
           ru.ru_maxrss / 1024.0   /* simrun and the workers it waited for */, (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6, ok ? "" : "  [FAILED]");
    fflush(stdout);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_sweep: could not remove %s\n", dir);
    return ok ? 0 : 1;
}

int main(void) {
    const char *simrun = getenv("MOESIM_BENCH_SIMRUN");
    if (!simrun) simrun = MOESIM_TOOLS_DIR "/simrun";
    const char *which = getenv("MOESIM_BENCH_POINTS");
    printf("bench_sweep: %s, a plan-level sweep as a whole process (goal: >= 1e6 points/min, <= 1 GB, memory flat)\n",
           simrun);
    int rc = bench(simrun, 169L * 20 * 30, 20, 30);
    if (!(which && strcmp(which, "small") == 0)) rc |= bench(simrun, 169L * 100 * 60, 100, 60);
    return rc;
}
