/* bench_search.c — `simrun search scenarios/seed-4096.json --top all --jobs 2` as a whole process: every
 * valid layout of DeepSeek-V3 on 4096 H800 ranked at plan level (151), every one that fits (107)
 * simulated at step level, ranked by step-level tokens/s/GPU. Wall and CPU seconds (simrun and the
 * workers it waited for), peak RSS of the largest process, the load average before and after (the
 * machine is shared: the wall time is only comparable at the same load; the CPU time less so), the
 * layouts simulated, and the ratio to the goal (at most 60 s on 2 cores).
 *
 * The scenario's step traces are off (output.trace false: a trace per layout would be 2.3 GB; the
 * ranking does not read them); MOESIM_BENCH_TRACE=1 keeps them. MOESIM_BENCH_SIMRUN=PATH runs another
 * simrun binary (an older build, for a before/after figure). Run from the repository root. */
#define _DEFAULT_SOURCE /* wait4, getloadavg */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/base/fileio.h"

#define GOAL_S 60.0

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* scenarios/seed-4096.json with its output block replaced: into `dir`, levels plan and step, the
 * trace on or off, no plots. */
static int write_scenario(const char *path, const char *dir, int trace) {
    moe_error e = {0};
    char *t = read_file_text("scenarios/seed-4096.json", NULL, &e);
    if (!t) { fprintf(stderr, "bench_search: %s\n", e.msg); return 1; }
    char *o = strstr(t, "\"output\"");
    if (!o) { fprintf(stderr, "bench_search: scenarios/seed-4096.json has no output block\n"); free(t); return 1; }
    *o = '\0';
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); free(t); return 1; }
    fprintf(f, "%s\"output\": { \"dir\": \"%s/unused\", \"trace\": %s, \"plots\": false, \"levels\": [\"plan\", \"step\"] }\n}\n",
            t, dir, trace ? "true" : "false");
    fclose(f);
    free(t);
    return 0;
}

int main(void) {
    const char *simrun = getenv("MOESIM_BENCH_SIMRUN");
    if (!simrun) simrun = MOESIM_TOOLS_DIR "/simrun";
    const char *tr = getenv("MOESIM_BENCH_TRACE");
    int trace = tr && strcmp(tr, "1") == 0;
    char dir[] = "/tmp/moesim-bench-search-XXXXXX";
    if (!mkdtemp(dir)) { perror("bench_search: mkdtemp"); return 1; }
    char sc[200], out[200], log[200];
    snprintf(sc, sizeof sc, "%s/seed.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(log, sizeof log, "%s/search.txt", dir);
    if (write_scenario(sc, dir, trace)) return 1;
    double load0[3] = {0}, load1[3] = {0};
    getloadavg(load0, 3);
    printf("bench_search: %s search seed-4096 --top all --jobs 2 (traces %s); load average %.2f %.2f %.2f\n", simrun,
           trace ? "on" : "off", load0[0], load0[1], load0[2]);
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stdout)) _exit(127);
        execl(simrun, simrun, "search", sc, "--top", "all", "--jobs", "2", "--out", out, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double wall = now_s() - t0;
    getloadavg(load1, 3);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec * 1e-6;
    /* the summary line: "wrote ... (151 points: 95 ok, 56 infeasible, 0 errors)" */
    long n = 0, ok = 0, inf = 0, bad = 0;
    FILE *f = fopen(log, "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        const char *w = strstr(line, " points: ");
        if (strncmp(line, "wrote ", 6) == 0 && w) {
            const char *p = w;
            while (p > line && p[-1] != '(') p--;
            sscanf(p, "%ld points: %ld ok, %ld infeasible, %ld errors", &n, &ok, &inf, &bad);
        }
    }
    if (f) fclose(f);
    int good = WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok > 0;
    printf("bench_search: %ld layouts, %ld simulated at step level, %ld infeasible, %ld errors: wall %.1f s, cpu %.1f s "
           "(%.2f s per simulated layout), peak RSS %.2f GB; load average after %.2f %.2f %.2f   goal %.0f s   ratio (wall) "
           "%.2f%s\n",
           n, ok, inf, bad, wall, cpu, ok ? cpu / ok : 0.0, ru.ru_maxrss / 1048576.0, load1[0], load1[1], load1[2], GOAL_S,
           wall / GOAL_S, good ? "" : "  [FAILED]");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_search: could not remove %s\n", dir);
    return good ? 0 : 1;
}
